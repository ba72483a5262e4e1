//! The `nrtctl` command line at its limits: numbers out of range, a reader that
//! goes away, a full disk. No device or server is needed: each case fails (or
//! prints) before one would be.

use std::process::{Command, Output, Stdio};

mod common;

fn nrtctl() -> Command {
    common::without_rt_env(Command::new(env!("CARGO_BIN_EXE_nrtctl")))
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn numbers_out_of_range_are_usage_errors_naming_the_flag_and_the_value() {
    let shm = "/nonexistent/nrtctl-cli-test";
    let cases: &[(&[&str], &str, &str)] = &[
        (&["harvest", "--shm", shm, "--wait-s", "nan"], "--wait-s", "'nan'"),
        (&["harvest", "--shm", shm, "--wait-s", "NaN"], "--wait-s", "'NaN'"),
        (&["harvest", "--shm", shm, "--wait-s", "inf"], "--wait-s", "'inf'"),
        (&["harvest", "--shm", shm, "--wait-s", "-1"], "--wait-s", "'-1'"),
        (&["harvest", "--shm", shm, "--wait-s=-0.5"], "--wait-s", "'-0.5'"),
        (&["harvest", "--shm", shm, "--wait-s", "1e300"], "--wait-s", "'1e300'"),
        (&["harvest", "--shm", shm, "--wait-s", "86401"], "--wait-s", "'86401'"),
        (&["harvest", "--shm", shm, "--timeout-s", "-1"], "--timeout-s", "'-1'"),
        (&["harvest", "--shm", shm, "--timeout-s", "4294967296"], "--timeout-s", "'4294967296'"),
        (&["harvest", "--shm", shm, "--inferences", "nan"], "--inferences", "'nan'"),
        (&["sem", "read", "--nc", "-1", "--index", "0"], "--nc", "'-1'"),
        (&["event", "set", "--nc", "0", "--index", "0", "--value", "-7"], "--value", "'-7'"),
        (&["stats", "--pid", "1", "--watch", "0"], "--watch", "'0'"),
        (&["stats", "--pid", "1", "--watch", "0.0"], "--watch", "'0.0'"),
        (&["stats", "--pid", "1", "--watch", "1e-12"], "--watch", "'1e-12'"),
        (&["stats", "--pid", "1", "--watch", "-1"], "--watch", "'-1'"),
        (&["stats", "--pid", "1", "--watch=-0.5"], "--watch", "'-0.5'"),
        (&["stats", "--pid", "1", "--watch", "3601"], "--watch", "'3601'"),
        (&["stats", "--pid", "1", "--watch", "1", "--count", "0"], "--count", "'0'"),
        (&["run", "--linger-s", "-1"], "--linger-s", "'-1'"),
    ];
    for (args, flag, value) in cases {
        let o = nrtctl().args(*args).output().unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(flag) && err.contains(value), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    // In range: accepted, and the wait is the one asked for (no file: exit 1).
    let o = nrtctl().args(["harvest", "--shm", shm, "--wait-s", "0"]).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("not ready after 0.0 s"), "{}", stderr(&o));
}

#[test]
fn version_prints_the_name_and_the_crate_version() {
    let o = nrtctl().arg("--version").output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), format!("nrtctl {}", env!("CARGO_PKG_VERSION")));
}

#[test]
fn a_reader_that_goes_away_ends_the_output_quietly() {
    // `| head -0`: the pipe's read end is closed before the first write.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let o = nrtctl().arg("devices").stdout(writer).stderr(Stdio::piped()).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stderr(&o), "");
}

#[test]
fn a_full_disk_is_reported_once_at_exit() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        eprintln!("no /dev/full here: nothing to check");
        return;
    };
    let o = nrtctl().arg("devices").stdout(full).output().unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("nrtctl: writing standard output failed: No space left on device"), "{err}");
}

/// `nrtctl run` without a device: each failure names the call, the path and
/// the errno, exits 1 without a panic; usage errors exit 2.
#[test]
fn run_without_a_device_names_the_call_the_path_and_the_errno() {
    // Not under the driver (or its model): ENOTTY on the first driver call.
    let o = nrtctl().args(["run", "--device", "/dev/null"]).output().unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("NEURON_IOCTL_DRIVER_INFO_GET on /dev/null failed: ENOTTY"), "{err}");
    assert!(err.contains("nrt-sim driver"), "the hint names the way to run it: {err}");
    // No node.
    let o = nrtctl().args(["run", "--device", "/nonexistent/neuron0", "--json"]).output().unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("open on /nonexistent/neuron0 failed: ENOENT"), "{err}");
    assert!(o.stdout.is_empty(), "no report without an inference");
    // Usage errors.
    for (args, what) in [
        (&["run", "--scenario", "no-such"][..], "unknown scenario 'no-such'"),
        (&["run", "--scenario", "all"][..], "--scenario all is the supervisor's"),
        (&["run", "--cores", "3"][..], "--cores"),
        (&["run", "--ring-entries", "48"][..], "'48' is not a power of two"),
        (&["run", "--inject", "nonsense"][..], "--inject 'nonsense'"),
    ] {
        let o = nrtctl().args(args).output().unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(what), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

/// Each `NEURON_RT_*` variable set that the binding does not honour is named
/// once on standard error as having no effect; honoured ones are not, and
/// `NEURON_RT_LOG_LEVEL=QUIET` silences the warnings.
#[test]
fn unhonoured_runtime_variables_are_each_warned_of_once() {
    let unhonoured = [
        ("NEURON_RT_LOG_LOCATION", "syslog"),
        ("NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS", "3"),
        ("NEURON_RT_VALIDATE_HASH", "true"),
        ("NEURON_RT_NOT_A_THING", "1"),
    ];
    let run = |quiet: bool| {
        let mut c = nrtctl();
        c.args(["run", "--device", "/nonexistent/neuron0"]).envs(unhonoured).env("NEURON_RT_EXEC_TIMEOUT", "5");
        if quiet {
            c.env("NEURON_RT_LOG_LEVEL", "QUIET");
        }
        let o = c.output().unwrap();
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        stderr(&o)
    };
    let err = run(false);
    for (name, _) in unhonoured {
        let lines: Vec<&str> = err.lines().filter(|l| l.contains(name)).collect();
        assert_eq!(lines.len(), 1, "{name}: {err}");
        assert!(lines[0].starts_with(&format!("nrt: warning: {name} is set but has no effect here (")), "{err}");
    }
    assert!(err.contains("NEURON_RT_VALIDATE_HASH is set but has no effect here (libnrt's NEFF checksum"), "{err}");
    assert!(!err.contains("NEURON_RT_EXEC_TIMEOUT is set"), "honoured: {err}");
    assert!(!run(true).contains("nrt: warning"), "QUIET");
}
