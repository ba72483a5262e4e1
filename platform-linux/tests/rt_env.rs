//! The runtime's environment variables as `nrtctl run`, `nrtctl harvest` and
//! the C ABI (`nrt_session_open`, `nrt_poller_new` / `nrt_poller_submit`, C
//! programs linking the static library) honour them (`nrt_linux::config`),
//! each run as a child process with `Command::env`: a bad value is refused at
//! start naming the variable, the value and what is accepted; each has its
//! effect (under `nrt-sim driver` for the sessions: the timeout budget and its
//! source, the cores claimed, the log lines), and a flag or an explicit C
//! argument beats its variable. `nrtctl run --trace` writes trace-event JSON
//! whose spans are the report's engine times.
//!
//! Where the kernel offers no seccomp user notification, the driver tests say
//! SKIPPED with the reason and check nothing else.
#![cfg(feature = "sim")]

use std::process::{Command, Output};

mod common;

/// `program` with none of the runtime's variables from this process.
fn clean(program: &std::path::Path) -> Command {
    common::without_rt_env(Command::new(program))
}

/// The core variables, which only the surfaces that claim cores read.
const CORE_VARS: [&str; 2] = ["NEURON_RT_VISIBLE_CORES", "NEURON_RT_NUM_CORES"];

/// A bad value of each variable, with a piece of what it accepts: every
/// surface that reads the variable refuses it.
const BAD: [(&str, &str, &str); 5] = [
    ("NEURON_RT_EXEC_TIMEOUT", "5s", "from 0 to 2147483647"),
    ("NEURON_RT_VISIBLE_CORES", "1-0", "inclusive range"),
    ("NEURON_RT_NUM_CORES", "many", "from 1 to 64, or 0"),
    ("NEURON_RT_LOG_LEVEL", "LOUD", "ERROR, WARNING, INFO, DEBUG, TRACE, QUIET"),
    ("NEURON_RT_LOG_LEVEL_TDRV", "7", "ERROR, WARNING"),
];

/// A C program of `tests/c` built against the static library.
/// A C test program, compiled for one test to a path of its own and removed
/// when the test drops it: a test that recompiled a shared path while another
/// was starting it would make that exec fail with ETXTBSY (the compiler holds
/// the file open for writing).
struct CProg(std::path::PathBuf);

fn c_program(source: &str) -> CProg {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let lib =
        common::cargo_build(&["-p", "nrt-linux", "--lib", "--no-default-features"], "c-abi").join("libnrt_linux.a");
    let out =
        std::env::temp_dir().join(format!("nrt-c-env-{}-{}-{n}", source.trim_end_matches(".c"), std::process::id()));
    common::compile_c(source, &lib, &out);
    CProg(out)
}

impl std::ops::Deref for CProg {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for CProg {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn nrtctl() -> Command {
    common::without_rt_env(Command::new(env!("CARGO_BIN_EXE_nrtctl")))
}

fn text(o: &Output) -> (String, String) {
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

macro_rules! need_user_notif {
    () => {
        if let Err(why) = common::user_notif() {
            common::skip(&format!("nrt-sim driver needs seccomp user notification: {why}"));
            return;
        }
    };
}

/// `nrt-sim driver --scenario <scenario> -- nrtctl run --device /dev/neuron0 <args>` with `env`.
fn under_driver(sim: &std::path::Path, scenario: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    driven(sim, &["--scenario", scenario], args, env)
}

/// `nrt-sim driver <driver> -- nrtctl run --device /dev/neuron0 <args>` with `env`.
fn driven(sim: &std::path::Path, driver: &[&str], args: &[&str], env: &[(&str, &str)]) -> Output {
    let ctl = nrtctl();
    let mut c = clean(sim);
    c.arg("driver").args(driver).arg("--").arg(ctl.get_program()).args(["run", "--device", "/dev/neuron0"]);
    c.args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("nrt-sim driver runs")
}

#[test]
fn a_bad_value_of_each_variable_is_refused_at_start_naming_it_the_value_and_what_is_accepted() {
    for (var, value, accepted) in [
        ("NEURON_RT_EXEC_TIMEOUT", "5s", "from 0 to 2147483647"),
        ("NEURON_RT_EXEC_TIMEOUT", "-1", "from 0 to 2147483647"),
        ("NEURON_RT_VISIBLE_CORES", "1-0", "inclusive range"),
        ("NEURON_RT_VISIBLE_CORES", "0,2", "one run of consecutive NeuronCores"),
        ("NEURON_RT_NUM_CORES", "many", "from 1 to 64, or 0"),
        ("NEURON_RT_LOG_LEVEL", "LOUD", "ERROR, WARNING, INFO, DEBUG, TRACE, QUIET"),
        ("NEURON_RT_LOG_LEVEL_TDRV", "7", "ERROR, WARNING"),
    ] {
        // The device does not exist: the refusal comes before any open.
        let o = nrtctl().args(["run", "--device", "/nonexistent/neuron0"]).env(var, value).output().unwrap();
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{var}={value}: {out}{err}");
        assert!(err.contains(&format!("{var}=\"{value}\"")) && err.contains(accepted), "{var}={value}: {err}");
        assert!(!err.contains("/nonexistent"), "refused before the device is opened: {err}");
    }
}

#[test]
fn run_help_lists_the_variables() {
    let o = nrtctl().args(["run", "--help"]).output().unwrap();
    let (out, _) = text(&o);
    for v in [
        "NEURON_RT_EXEC_TIMEOUT",
        "NEURON_RT_VISIBLE_CORES",
        "NEURON_RT_NUM_CORES",
        "NEURON_RT_LOG_LEVEL",
        "NEURON_RT_LOG_LEVEL_<C>",
    ] {
        assert!(out.contains(v), "{v} missing from:\n{out}");
    }
    // The host-wide numbering and the device it chooses.
    for rule in
        ["index i is core i % C of /dev/neuron<i / C>", "without --device that device is opened", "over two devices"]
    {
        assert!(out.contains(rule), "{rule} missing from:\n{out}");
    }
}

/// A line of the binding's logger without its stamp, and the stamp's pid:
/// `TIME pid PID ` first, `TIME` RFC 3339 UTC with microseconds
/// (`2026-12-05T00:54:56.123456Z`); `None` for a line without it.
fn unstamped(line: &str) -> Option<(u32, &str)> {
    let (time, rest) = line.split_once(" pid ")?;
    let b = time.as_bytes();
    let digits = |r: std::ops::Range<usize>| r.into_iter().all(|i| b.get(i).is_some_and(u8::is_ascii_digit));
    let shape = b.len() == 27
        && [(4, b'-'), (7, b'-'), (10, b'T'), (13, b':'), (16, b':'), (19, b'.'), (26, b'Z')]
            .iter()
            .all(|(i, c)| b[*i] == *c)
        && [0..4, 5..7, 8..10, 11..13, 14..16, 17..19, 20..26].into_iter().all(digits);
    let (pid, rest) = rest.split_once(' ')?;
    shape.then_some(())?;
    Some((pid.parse().ok()?, rest))
}

/// Whether `err` has the harvest's timeout line, stamped: `head`, then the
/// time the engines were pending, in ms, at least `budget_ms` (how far past
/// the budget the wall clock had run when the step looked is the machine's
/// speed, not a verdict: a CI run read 1001 ms), then ` ms ` and a rest that
/// starts with `tail`.
fn pending_line(err: &str, head: &str, budget_ms: u64, tail: &str) -> bool {
    err.lines().any(|l| {
        let Some((_, l)) = unstamped(l) else { return false };
        let Some(rest) = l.strip_prefix(head) else { return false };
        let Some((ms, after)) = rest.split_once(" ms ") else { return false };
        ms.parse::<u64>().is_ok_and(|ms| ms >= budget_ms) && after.starts_with(tail)
    })
}

#[test]
fn exec_timeout_sets_the_budget_a_flag_beats_it_and_every_timeout_message_names_both() {
    need_user_notif!();
    let sim = common::nrt_sim();
    let o = under_driver(&sim, "hang", &[], &[("NEURON_RT_EXEC_TIMEOUT", "1")]);
    let (out, err) = text(&o);
    assert!(out.contains("status: 5 NRT_TIMEOUT"), "{out}{err}");
    assert!(out.contains("timeout 1 s"), "the report's configuration: {out}");
    assert!(out.contains("budget 1000 ms"), "the core's timeout event: {out}");
    assert!(out.contains("budget: execution timeout 1 s (from variable NEURON_RT_EXEC_TIMEOUT)"), "{out}");
    assert!(
        err.contains("the harvest ended at its execution timeout 1 s (from variable NEURON_RT_EXEC_TIMEOUT)"),
        "{err}"
    );
    // The harvest engine's own timeout line (TDRV) names the budget's source too.
    assert!(
        pending_line(
            &err,
            "nrtctl: ERROR TDRV: nd0 nc0 DVE: engines still pending after ",
            1000,
            "(budget 1000 ms): NRT_TIMEOUT (5); started, never wrote END: DVE; budget in effect: execution timeout 1 s \
             (from variable NEURON_RT_EXEC_TIMEOUT); to check next: "
        ),
        "{err}"
    );
    // The flag beats the variable.
    let o = under_driver(&sim, "hang", &["--timeout-s", "2"], &[("NEURON_RT_EXEC_TIMEOUT", "1")]);
    let (out, err) = text(&o);
    assert!(out.contains("status: 5 NRT_TIMEOUT") && out.contains("budget 2000 ms"), "{out}{err}");
    assert!(err.contains("execution timeout 2 s (from flag --timeout-s)"), "{err}");
    assert!(
        err.contains(
            "(budget 2000 ms): NRT_TIMEOUT (5); started, never wrote END: DVE; budget in effect: execution timeout 2 s \
             (from flag --timeout-s); to check next: "
        ),
        "{err}"
    );
    // Neither: the generation's documented default (a healthy run does not wait for it).
    let o = under_driver(&sim, "healthy-2core", &[], &[]);
    let (out, err) = text(&o);
    assert!(out.contains("status: 0 NRT_SUCCESS"), "{out}{err}");
    assert!(out.contains("budget: execution timeout 600 s (from the documented default for sunda)"), "{out}");
}

#[test]
fn visible_cores_and_num_cores_choose_the_cores_claimed_and_a_flag_beats_them() {
    need_user_notif!();
    let sim = common::nrt_sim();
    let cores = |args: &[&str], env: &[(&str, &str)]| {
        let o = under_driver(&sim, "healthy-2core", args, env);
        let (out, err) = text(&o);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
        assert_eq!(v["status"], 0, "{args:?} {env:?}: {out}{err}");
        v["cores_count"].as_u64().expect("cores_count")
    };
    assert_eq!(cores(&["--json"], &[]), 2, "the scenario's two cores when nothing is asked");
    assert_eq!(cores(&["--json"], &[("NEURON_RT_NUM_CORES", "1")]), 1);
    assert_eq!(cores(&["--json"], &[("NEURON_RT_NUM_CORES", "0")]), 2, "0 is all");
    assert_eq!(cores(&["--json"], &[("NEURON_RT_VISIBLE_CORES", "0")]), 1);
    assert_eq!(cores(&["--json"], &[("NEURON_RT_VISIBLE_CORES", "0-1")]), 2);
    // VISIBLE_CORES takes precedence over NUM_CORES; --cores over both.
    assert_eq!(cores(&["--json"], &[("NEURON_RT_VISIBLE_CORES", "0"), ("NEURON_RT_NUM_CORES", "2")]), 1);
    assert_eq!(cores(&["--json", "--cores", "2"], &[("NEURON_RT_VISIBLE_CORES", "0")]), 2);
    // More than the session takes: the session's refusal, naming the variable.
    let o = under_driver(&sim, "healthy-2core", &[], &[("NEURON_RT_NUM_CORES", "3")]);
    let (out, err) = text(&o);
    assert!(
        err.contains("cores must be 1 to 2") && err.contains("(cores from variable NEURON_RT_NUM_CORES=\"3\")"),
        "{out}{err}"
    );
}

#[test]
fn only_an_error_about_the_cores_names_where_the_cores_came_from() {
    // A device that is not there (its path says "cores"): the error is the open's, not the cores'.
    let dev = "/nonexistent/cores/neuron0";
    let o = nrtctl().args(["run", "--device", dev]).env("NEURON_RT_NUM_CORES", "1").output().unwrap();
    let (out, err) = text(&o);
    assert!(!o.status.success() && err.contains(dev) && err.contains("ENOENT"), "{out}{err}");
    assert!(!err.contains("(cores from"), "{err}");
    let prog = c_program("session.c");
    let o = clean(&prog).args([dev, "0", "0", "env"]).env("NEURON_RT_NUM_CORES", "1").output().unwrap();
    let (out, err) = text(&o);
    assert!(err.contains(dev) && err.contains("ENOENT"), "{out}{err}");
    assert!(!err.contains("(cores from"), "{err}");
}

#[test]
fn log_level_and_its_component_forms_govern_the_log_lines_on_standard_error() {
    need_user_notif!();
    let sim = common::nrt_sim();
    let err_of = |env: &[(&str, &str)]| {
        let o = under_driver(&sim, "nan", &[], env);
        let (out, err) = text(&o);
        assert!(out.contains("status: 1003"), "{env:?}: {out}{err}");
        err
    };
    let line = "nrtctl: ERROR TDRV: nd0 nc0: error notification subtype 1 (NUMERICAL)";
    assert!(err_of(&[]).contains(line), "ERROR is the default");
    assert!(!err_of(&[("NEURON_RT_LOG_LEVEL", "QUIET")]).contains("nrtctl: ERROR"));
    assert!(!err_of(&[("NEURON_RT_LOG_LEVEL_TDRV", "QUIET")]).contains(line), "the component's form");
    let e = err_of(&[("NEURON_RT_LOG_LEVEL", "QUIET"), ("NEURON_RT_LOG_LEVEL_TDRV", "error")]);
    assert!(e.contains(line), "the component's form beats the global one: {e}");
    assert!(err_of(&[("NEURON_RT_LOG_LEVEL_NRT", "QUIET")]).contains(line), "another component's level");
}

#[test]
fn nrtctl_run_trace_spans_are_the_reports_engine_times() {
    need_user_notif!();
    let sim = common::nrt_sim();
    let dir = std::env::temp_dir().join(format!("nrtctl-trace-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (json, svg) = (dir.join("t.json"), dir.join("t.svg"));
    let o = under_driver(
        &sim,
        "nan",
        &["--json", "--trace", json.to_str().unwrap(), "--timeline-svg", svg.to_str().unwrap()],
        &[],
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    let report: serde_json::Value = serde_json::from_str(&out).expect("the report");
    let trace: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).expect("the trace");
    let spans: Vec<&serde_json::Value> =
        trace["traceEvents"].as_array().unwrap().iter().filter(|e| e["ph"] == "X" && e["cat"] == "engine").collect();
    let mut n = 0;
    for (c, core) in report["cores"].as_array().unwrap().iter().enumerate() {
        for (i, e) in core["engines"].as_array().unwrap().iter().enumerate() {
            let (Some(s), Some(end)) = (e["start_us"].as_u64(), e["end_us"].as_u64()) else { continue };
            n += 1;
            let tid = 1 + c as u64 * 6 + i as u64;
            let hit: Vec<&&serde_json::Value> = spans.iter().filter(|x| x["tid"] == tid).collect();
            assert_eq!(hit.len(), 1, "core {c} engine {i}");
            assert_eq!((hit[0]["ts"].as_u64(), hit[0]["dur"].as_u64()), (Some(s), Some(end - s)));
        }
    }
    assert_eq!((n, spans.len()), (10, 10));
    // Each core's CC span is the report's CC_START -> CC_END, on its CC track.
    let cc: Vec<&serde_json::Value> =
        trace["traceEvents"].as_array().unwrap().iter().filter(|e| e["ph"] == "X" && e["cat"] == "cc").collect();
    let cores = report["cores"].as_array().unwrap();
    for (c, core) in cores.iter().enumerate() {
        let (s, end) = (core["cc_start_us"].as_u64().expect("CC_START"), core["cc_end_us"].as_u64().expect("CC_END"));
        let hit: Vec<_> = cc.iter().filter(|x| x["tid"] == (1u64 << 16) + c as u64).collect();
        assert_eq!(hit.len(), 1, "core {c}");
        assert_eq!((hit[0]["ts"].as_u64(), hit[0]["dur"].as_u64()), (Some(s), Some(end - s)), "core {c}");
    }
    assert_eq!(cc.len(), cores.len());
    // The poll passes and HEAD write-backs as counters: one pass per harvest step.
    let last = |name: &str| {
        trace["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "C" && e["name"] == name)
            .filter_map(|e| e["args"]["count"].as_u64())
            .max()
    };
    assert_eq!(last("poll passes"), report["steps"].as_u64(), "{report}");
    assert!(last("HEAD write-backs").is_some_and(|n| n >= 1), "the harvest consumed records");
    // Each sample at a time of the harvest: from the kickoff to its end (the same clock, us).
    let k = report["kickoff_us"].as_u64().expect("kickoff_us");
    let end = k + (report["elapsed_ms"].as_f64().expect("elapsed_ms") * 1_000.0) as u64 + 1_000;
    for e in trace["traceEvents"].as_array().unwrap().iter().filter(|e| e["ph"] == "C") {
        let ts = e["ts"].as_u64().expect("ts");
        assert!((k..=end).contains(&ts), "{} at {ts} us, the harvest ran {k}..{end} us", e["name"]);
    }
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));
    // A file that cannot be written: named, with the reason.
    let o = under_driver(&sim, "nan", &["--trace", "/nonexistent-nrtctl/t.json"], &[]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("/nonexistent-nrtctl/t.json") && err.contains("ENOENT"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `nrt-sim driver --scenario <scenario> -- <program> <args>` with `env`.
fn program_under_driver(
    sim: &std::path::Path,
    scenario: &str,
    program: &std::path::Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> Output {
    let mut c = clean(sim);
    c.args(["driver", "--scenario", scenario, "--"]).arg(program).args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("nrt-sim driver runs")
}

#[test]
fn the_c_session_refuses_a_bad_variable_before_opening_the_device() {
    let prog = c_program("session.c");
    for (var, value, accepted) in BAD {
        let o = clean(&prog).args(["/nonexistent/neuron0", "0", "0", "env"]).env(var, value).output().unwrap();
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(1), "{var}={value}: {out}{err}");
        assert!(
            err.contains(&format!("session: nrt_session_open: {var}=\"{value}\" is refused")) && err.contains(accepted),
            "{var}={value}: {err}"
        );
        assert!(!err.contains("/nonexistent"), "refused before the device is opened: {err}");
    }
    // A visible set the session cannot claim (a gap), refused the same way.
    let o = clean(&prog).args(["/nonexistent/neuron0"]).env("NEURON_RT_VISIBLE_CORES", "0,2").output().unwrap();
    let (_, err) = text(&o);
    assert!(
        err.contains("NEURON_RT_VISIBLE_CORES=\"0,2\" is refused") && err.contains("one run of consecutive"),
        "{err}"
    );
    // Without variables the same call reaches the device (and names it).
    let o = clean(&prog).args(["/nonexistent/neuron0", "0", "0", "env"]).output().unwrap();
    let (_, err) = text(&o);
    assert!(err.contains("/nonexistent/neuron0") && err.contains("ENOENT"), "{err}");
}

/// `nrt_session_open(NULL, ...)` opens the device of `NEURON_RT_VISIBLE_CORES`'s
/// cores (`=1`: `/dev/neuron0`'s core 1; `=2`: `/dev/neuron1`, which the driver
/// model does not serve); with a device given, a set on another is refused,
/// naming the variable, its value, the device and what the set means.
#[test]
fn the_c_session_without_a_device_opens_the_visible_cores_device() {
    need_user_notif!();
    let sim = common::nrt_sim();
    let prog = c_program("session.c");
    let run = |device: &str, set: &str| {
        let o = program_under_driver(
            &sim,
            "healthy-2core",
            &prog,
            &[device, "0", "0", "env"],
            &[("NEURON_RT_VISIBLE_CORES", set)],
        );
        let (out, err) = text(&o);
        (o.status.code(), out, err)
    };
    let (code, out, err) = run("-", "1");
    assert!(out.contains("cores: 1") && out.contains("status: 0 NRT_SUCCESS"), "{out}{err}");
    assert_eq!(code, Some(0), "{out}{err}");
    let (code, out, err) = run("-", "2");
    assert!(
        err.contains("nrt_session_open (device chosen): open on /dev/neuron1, /dev/neuron0 failed")
            && err.contains("open on /dev/neuron1 failed: ENOENT")
            && err.contains("so core 2 is on /dev/neuron1"),
        "{out}{err}"
    );
    assert_eq!(code, Some(1), "{out}{err}");
    let (code, out, err) = run("/dev/neuron0", "2");
    assert!(
        err.contains("nrt_session_open /dev/neuron0:")
            && err.contains("core 2 (device 1's core 0) asked")
            && err.contains("that is /dev/neuron1, and this is device 0")
            && err.contains("(cores from variable NEURON_RT_VISIBLE_CORES=\"2\")"),
        "{out}{err}"
    );
    assert_eq!(code, Some(1), "{out}{err}");
}

#[test]
fn the_c_session_takes_the_timeout_the_cores_and_the_log_level_from_the_variables() {
    need_user_notif!();
    let sim = common::nrt_sim();
    let prog = c_program("session.c");
    let run = |scenario: &str, args: &[&str], env: &[(&str, &str)]| {
        let mut all = vec!["/dev/neuron0"];
        all.extend_from_slice(args);
        text(&program_under_driver(&sim, scenario, &prog, &all, env))
    };
    // NEURON_RT_EXEC_TIMEOUT: the budget of NRT_TIMEOUT_FROM_ENV, named when the harvest ends at it.
    let (out, err) = run("hang", &["0", "0", "env"], &[("NEURON_RT_EXEC_TIMEOUT", "1")]);
    assert!(out.contains("timeout: 1 s") && out.contains("status: 5 NRT_TIMEOUT"), "{out}{err}");
    assert!(
        err.contains("nrt: ERROR TDRV: nrt_session_run: nd0 nc0-1: the harvest ended at its execution timeout 1 s (from variable NEURON_RT_EXEC_TIMEOUT): status 5 NRT_TIMEOUT; nd0 nc0: started, never wrote END: DVE"),
        "{err}"
    );
    assert!(
        pending_line(
            &err,
            "nrt: ERROR TDRV: nd0 nc0 DVE: engines still pending after ",
            1000,
            "(budget 1000 ms): NRT_TIMEOUT (5); started, never wrote END: DVE; budget in effect: execution timeout 1 s \
             (from variable NEURON_RT_EXEC_TIMEOUT); to check next: "
        ),
        "the harvest's own timeout line: {err}"
    );
    // An explicit timeout_s beats it.
    let (out, err) = run("hang", &["0", "0", "2"], &[("NEURON_RT_EXEC_TIMEOUT", "1")]);
    assert!(out.contains("timeout: 2 s") && out.contains("status: 5 NRT_TIMEOUT"), "{out}{err}");
    assert!(err.contains("execution timeout 2 s (from argument timeout_s of nrt_session_open)"), "{err}");
    // Neither: the generation's documented default.
    let (out, err) = run("healthy-2core", &["0", "0", "env"], &[]);
    assert!(out.contains("timeout: 600 s") && out.contains("status: 0 NRT_SUCCESS"), "{out}{err}");
    // The cores: cores 0 takes VISIBLE_CORES, else NUM_CORES, else the model's; an explicit count beats both.
    let cores = |args: &[&str], env: &[(&str, &str)]| {
        let (out, err) = run("healthy-2core", args, env);
        assert!(out.contains("status: 0 NRT_SUCCESS"), "{args:?} {env:?}: {out}{err}");
        out.lines().find_map(|l| l.strip_prefix("cores: ")?.split(',').next()?.parse::<u32>().ok()).expect("cores")
    };
    assert_eq!(cores(&["0"], &[]), 2, "the scenario's two cores when nothing is asked");
    assert_eq!(cores(&["0"], &[("NEURON_RT_NUM_CORES", "1")]), 1);
    assert_eq!(cores(&["0"], &[("NEURON_RT_NUM_CORES", "0")]), 2, "0 is all");
    assert_eq!(cores(&["0"], &[("NEURON_RT_VISIBLE_CORES", "0")]), 1);
    assert_eq!(cores(&["0"], &[("NEURON_RT_VISIBLE_CORES", "0"), ("NEURON_RT_NUM_CORES", "2")]), 1);
    assert_eq!(cores(&["2"], &[("NEURON_RT_VISIBLE_CORES", "0")]), 2, "the argument beats the variable");
    let (out, err) = run("healthy-2core", &["0"], &[("NEURON_RT_NUM_CORES", "3")]);
    assert!(
        err.contains("nrt_session_open /dev/neuron0")
            && err.contains("(cores from variable NEURON_RT_NUM_CORES=\"3\")"),
        "{out}{err}"
    );
    // NEURON_RT_LOG_LEVEL[_TDRV]: the library's lines on standard error.
    let line = "nrt: ERROR TDRV: nd0 nc0: error notification subtype 1 (NUMERICAL)";
    let err_of = |env: &[(&str, &str)]| {
        let (out, err) = run("nan", &[], env);
        assert!(out.contains("status: 1003"), "{env:?}: {out}{err}");
        err
    };
    assert!(err_of(&[]).contains(line), "ERROR is the default");
    assert!(!err_of(&[("NEURON_RT_LOG_LEVEL", "QUIET")]).contains("nrt: ERROR"));
    assert!(!err_of(&[("NEURON_RT_LOG_LEVEL_TDRV", "QUIET")]).contains(line), "the component's form");
    let e = err_of(&[("NEURON_RT_LOG_LEVEL", "QUIET"), ("NEURON_RT_LOG_LEVEL_TDRV", "error")]);
    assert!(e.contains(line), "the component's form beats the global one: {e}");
}

/// The played clock (ms) at which the hanging request of `poller_env.c` ended, with its output.
fn poller_env(prog: &std::path::Path, arg: &str, env: &[(&str, &str)]) -> (Option<u64>, String, String) {
    let mut c = clean(prog);
    c.arg(arg);
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c.output().unwrap();
    let (out, err) = text(&o);
    let ms = out
        .lines()
        .find(|l| l.starts_with("status: 5 NRT_TIMEOUT"))
        .and_then(|l| l.split("at the end: ").nth(1)?.trim_end_matches(" ms").parse().ok());
    (ms, out, err)
}

#[test]
fn the_c_poller_takes_the_timeout_and_the_log_level_from_the_variables_and_refuses_bad_values() {
    let prog = c_program("poller_env.c");
    // The played clock runs 1 ms per read, so the request ends just after its budget.
    let (ms, out, err) = poller_env(&prog, "env", &[("NEURON_RT_EXEC_TIMEOUT", "2"), ("NEURON_RT_LOG_LEVEL", "INFO")]);
    let ms = ms.unwrap_or_else(|| panic!("{out}{err}"));
    assert!((2_000..2_500).contains(&ms), "a 2 s budget ended at {ms} ms: {out}");
    assert!(
        err.contains(
            "nrt: INFO TDRV: nrt_poller_submit: lane 0: execution timeout 2 s (from variable NEURON_RT_EXEC_TIMEOUT)"
        ),
        "{err}"
    );
    assert!(
        err.contains("nrt: ERROR TDRV: nrt_ticket_wait: lane 0: the harvest ended at its execution timeout 2 s (from variable NEURON_RT_EXEC_TIMEOUT): status 5 NRT_TIMEOUT"),
        "the timeout message names the budget and its source: {err}"
    );
    // The harvest's own line, logged on the poller thread, names the request's.
    assert!(
        err.contains("nrt: ERROR TDRV: lane 0 core 0 PE,ACT,POOL,DVE,SP: engines still pending after ")
            && err.contains("(budget 2000 ms): NRT_TIMEOUT (5); started, never wrote END: PE,ACT,POOL,DVE,SP; budget in effect: execution timeout 2 s (from variable NEURON_RT_EXEC_TIMEOUT)"),
        "{err}"
    );
    // An explicit timeout_s beats the variable.
    let (ms, out, err) = poller_env(&prog, "1", &[("NEURON_RT_EXEC_TIMEOUT", "2")]);
    let ms = ms.unwrap_or_else(|| panic!("{out}{err}"));
    assert!((1_000..1_500).contains(&ms), "a 1 s budget ended at {ms} ms: {out}");
    assert!(err.contains("execution timeout 1 s (from argument timeout_s of nrt_poller_submit)"), "{err}");
    // At the default level (ERROR) the INFO line is not written; QUIET writes nothing.
    let (_, _, err) = poller_env(&prog, "env", &[("NEURON_RT_EXEC_TIMEOUT", "1")]);
    assert!(!err.contains("nrt_poller_submit") && err.contains("nrt_ticket_wait"), "{err}");
    let (ms, _, err) = poller_env(&prog, "env", &[("NEURON_RT_EXEC_TIMEOUT", "1"), ("NEURON_RT_LOG_LEVEL", "QUIET")]);
    assert!(ms.is_some() && !err.contains("nrt:"), "{err}");
    // nrt_ticket_poll logs the same line, once per ticket (the wait after it does not repeat it).
    let mut c = clean(&prog);
    let o = c.args(["env", "poll"]).env("NEURON_RT_EXEC_TIMEOUT", "1").output().unwrap();
    let (out, err) = text(&o);
    assert!(o.status.success() && out.contains("status: 5 NRT_TIMEOUT"), "{out}{err}");
    let line = "nrt: ERROR TDRV: nrt_ticket_poll: lane 0: the harvest ended at its execution timeout 1 s (from variable NEURON_RT_EXEC_TIMEOUT): status 5 NRT_TIMEOUT";
    assert_eq!(err.matches(line).count(), 1, "{err}");
    assert_eq!(err.matches("the harvest ended").count(), 1, "told once: {err}");
    // A bad value of a variable the poller reads: nrt_poller_new refuses, through nrt_poller_last_error.
    for (var, value, accepted) in BAD {
        let mut c = clean(&prog);
        let o = c.arg("env").env(var, value).output().unwrap();
        let (out, err) = text(&o);
        if CORE_VARS.contains(&var) {
            // The lanes fix the cores: the core variables are not read.
            assert!(o.status.success() && out.contains("status: 5 NRT_TIMEOUT"), "{var}={value}: {out}{err}");
            continue;
        }
        assert_eq!(o.status.code(), Some(3), "{var}={value}: {out}{err}");
        assert!(
            out.contains(&format!("refused: nrt_poller_new: {var}=\"{value}\" is refused")) && out.contains(accepted),
            "{var}={value}: {out}"
        );
    }
}

/// This library's own `NEURON_RT_POLL_SLICE_US`: a poller takes a slice of
/// 20 to 1000 us and refuses another value, naming the variable.
#[test]
fn the_c_poller_takes_its_slice_from_the_variable_and_refuses_a_bad_one_by_name() {
    let prog = c_program("poller_env.c");
    let (ms, out, err) = poller_env(&prog, "1", &[("NEURON_RT_POLL_SLICE_US", "200")]);
    assert!(ms.is_some(), "a 200 us slice is taken: {out}{err}");
    assert!(!err.contains("NEURON_RT_POLL_SLICE_US"), "not warned of as unhonoured: {err}");
    for bad in ["5", "1001", "fast", "-200"] {
        let mut c = clean(&prog);
        let o = c.arg("1").env("NEURON_RT_POLL_SLICE_US", bad).output().unwrap();
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(3), "{bad}: {out}{err}");
        assert!(
            out.contains(&format!("refused: nrt_poller_new: NEURON_RT_POLL_SLICE_US=\"{bad}\" is refused"))
                && out.contains("from 20 to 1000"),
            "{bad}: {out}"
        );
    }
}

#[test]
fn nrtctl_harvest_takes_the_timeout_from_the_variable_refuses_bad_values_and_lists_them() {
    for (var, value, accepted) in BAD {
        let o =
            nrtctl().args(["harvest", "--shm", "/nonexistent/shm", "--wait-s", "0"]).env(var, value).output().unwrap();
        let (out, err) = text(&o);
        if CORE_VARS.contains(&var) {
            // The server's file fixes the cores: the core variables are not read, the file is.
            assert_eq!(o.status.code(), Some(1), "{var}={value}: {out}{err}");
            assert!(err.contains("/nonexistent/shm") && !err.contains(var), "{var}={value}: {err}");
            continue;
        }
        assert_eq!(o.status.code(), Some(2), "{var}={value}: {out}{err}");
        assert!(err.contains(&format!("nrtctl harvest: {var}=\"{value}\"")) && err.contains(accepted), "{err}");
        assert!(!err.contains("/nonexistent"), "refused before the file is opened: {err}");
    }
    let (help, _) = text(&nrtctl().args(["harvest", "--help"]).output().unwrap());
    for v in ["NEURON_RT_EXEC_TIMEOUT", "NEURON_RT_LOG_LEVEL", "NEURON_RT_LOG_LEVEL_<C>"] {
        assert!(help.contains(v), "{v} missing from:\n{help}");
    }
    for v in CORE_VARS {
        assert!(help.contains(&format!("{v} is not read")), "{v} not said to be ignored in:\n{help}");
    }
    let sim = common::nrt_sim();
    let timeout_of = |args: &[&str], env: &[(&str, &str)]| {
        let path = std::env::temp_dir().join(format!("nrt-env-harvest-{}-{}", std::process::id(), args.len()));
        let mut server = common::spawn_server(&sim, &path, 1);
        let mut c = nrtctl();
        c.args(["harvest", "--json", "--wait-s", "20", "--shm"]).arg(&path).args(args);
        for (k, v) in env {
            c.env(k, v);
        }
        let o = c.output().unwrap();
        if !o.status.success() {
            let _ = server.kill();
        }
        let _ = server.wait();
        let _ = std::fs::remove_file(&path);
        let (out, err) = text(&o);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
        assert_eq!(v["status"], 0, "{out}{err}");
        v["config"]["timeout_s"].as_u64().or(v["timeout_s"].as_u64()).unwrap_or_else(|| panic!("timeout_s: {out}"))
    };
    assert_eq!(timeout_of(&[], &[("NEURON_RT_EXEC_TIMEOUT", "7")]), 7);
    assert_eq!(timeout_of(&["--timeout-s", "3"], &[("NEURON_RT_EXEC_TIMEOUT", "7")]), 3, "the flag beats it");
    assert_eq!(timeout_of(&["--delay", "adaptive"], &[]), 600, "the documented default");
}

#[test]
fn nrtctl_run_trace_keeps_every_inference_each_with_its_harvest_and_engine_spans() {
    need_user_notif!();
    let sim = common::nrt_sim();
    let json = std::env::temp_dir().join(format!("nrtctl-trace-k-{}.json", std::process::id()));
    let o = under_driver(&sim, "nan", &["--json", "--inferences", "3", "--trace", json.to_str().unwrap()], &[]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    // One JSON object per inference, in order.
    let reports: Vec<serde_json::Value> =
        serde_json::Deserializer::from_str(&out).into_iter().collect::<Result<_, _>>().expect("the reports");
    assert_eq!(reports.len(), 3, "{out}");
    let trace: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).expect("the trace");
    let _ = std::fs::remove_file(&json);
    let events = trace["traceEvents"].as_array().unwrap();
    let of = |n: usize, cat: &str| -> Vec<&serde_json::Value> {
        events
            .iter()
            .filter(|e| {
                e["ph"] == "X" && e["cat"] == cat && e["args"]["inference"].as_str() == Some(n.to_string().as_str())
            })
            .collect()
    };
    for (k, report) in reports.iter().enumerate() {
        let n = k + 1;
        let harvest = of(n, "host");
        assert_eq!(harvest.len(), 1, "one harvest span for inference {n}");
        assert_eq!(harvest[0]["name"], "harvest");
        assert_eq!(harvest[0]["ts"].as_u64(), report["kickoff_us"].as_u64(), "inference {n}: {report}");
        let spans = of(n, "engine");
        let mut matched = 0;
        for (c, core) in report["cores"].as_array().unwrap().iter().enumerate() {
            for (i, e) in core["engines"].as_array().unwrap().iter().enumerate() {
                let (Some(s), Some(end)) = (e["start_us"].as_u64(), e["end_us"].as_u64()) else { continue };
                let tid = 1 + c as u64 * 6 + i as u64;
                let hit: Vec<_> = spans.iter().filter(|x| x["tid"] == tid).collect();
                assert_eq!(hit.len(), 1, "inference {n} core {c} engine {i}");
                assert_eq!((hit[0]["ts"].as_u64(), hit[0]["dur"].as_u64()), (Some(s), Some(end - s)));
                matched += 1;
            }
        }
        assert_eq!((matched, spans.len()), (10, 10), "inference {n}");
    }
    let harvests = events.iter().filter(|e| e["ph"] == "X" && e["name"] == "harvest").count();
    assert_eq!(harvests, 3, "no span without its inference");
}

#[test]
fn nrt_request_new_takes_the_timeout_from_the_variable_and_refuses_bad_values() {
    let prog = c_program("request_env.c");
    let run = |arg: &str, env: &[(&str, &str)]| {
        let mut c = clean(&prog);
        c.arg(arg);
        for (k, v) in env {
            c.env(k, v);
        }
        let o = c.output().unwrap();
        let (out, err) = text(&o);
        (o.status.code(), out, err)
    };
    let info = ("NEURON_RT_LOG_LEVEL", "INFO");
    let (code, out, err) = run("env", &[("NEURON_RT_EXEC_TIMEOUT", "7"), info]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        err.contains("nrt: INFO TDRV: nrt_request_new: execution timeout 7 s (from variable NEURON_RT_EXEC_TIMEOUT)"),
        "{err}"
    );
    let (_, _, err) = run("3", &[("NEURON_RT_EXEC_TIMEOUT", "7"), info]);
    assert!(err.contains("execution timeout 3 s (from argument timeout_s of nrt_request_new)"), "{err}");
    // Harvested by nrt_wait on a device that hangs: the harvest's own timeout
    // line names the request's budget and its source.
    let mut c = clean(&prog);
    let o = c.args(["env", "wait"]).env("NEURON_RT_EXEC_TIMEOUT", "1").output().unwrap();
    let (out, err) = text(&o);
    assert!(o.status.success() && out.contains("status: 5 NRT_TIMEOUT"), "{out}{err}");
    assert!(
        err.contains("nrt: ERROR TDRV: core 0 PE,ACT,POOL,DVE,SP: engines still pending after")
            && err.contains("(budget 1000 ms): NRT_TIMEOUT (5); started, never wrote END: PE,ACT,POOL,DVE,SP; budget in effect: execution timeout 1 s (from variable NEURON_RT_EXEC_TIMEOUT)"),
        "{err}"
    );
    let (_, _, err) = run("env", &[info]);
    assert!(err.contains("execution timeout 600 s (from the documented default for sunda)"), "{err}");
    // An explicit timeout does not read the variable: a malformed one is not refused.
    let (code, out, err) = run("3", &[("NEURON_RT_EXEC_TIMEOUT", "soon"), info]);
    assert_eq!(code, Some(0), "an unused malformed timeout variable refused the request: {out}{err}");
    assert!(err.contains("execution timeout 3 s (from argument timeout_s of nrt_request_new)"), "{err}");
    for (var, value, accepted) in BAD {
        let (code, out, err) = run("env", &[(var, value)]);
        if CORE_VARS.contains(&var) {
            assert_eq!(code, Some(0), "{var}={value}: the core variables are not read: {out}{err}");
            continue;
        }
        assert_eq!(code, Some(3), "{var}={value}: {out}{err}");
        assert!(
            out.contains(&format!("refused: nrt_request_new: {var}=\"{value}\" is refused")) && out.contains(accepted),
            "{var}={value}: {out}"
        );
    }
}

/// Under one `nrt-sim driver` (sunda, two cores): a session on
/// `NEURON_RT_VISIBLE_CORES=1` runs an inference on the device's core 1 and
/// lingers; while it holds core 1, a second process asking for core 1 is
/// refused by the driver model's range mark (`EBUSY`, naming the holder's
/// pid), and a third asking for core 0 runs on it (so the first marked core 1
/// only); a monitor reads the first process's counters (one completion).
const TWO_SESSIONS: &str = r#"
ctl="$1"; dir="$2"
NEURON_RT_VISIBLE_CORES=1 "$ctl" run --device /dev/neuron0 --json --linger-s 120 >"$dir/a.json" 2>"$dir/a.err" &
pid=$!
echo "$pid" >"$dir/a.pid"
i=0
while ! grep -q '"return_code"' "$dir/a.json" && [ $i -lt 600 ] && kill -0 $pid 2>/dev/null; do
  sleep 0.1; i=$((i+1))
done
NEURON_RT_VISIBLE_CORES=1 "$ctl" run --device /dev/neuron0 --json >"$dir/b.json" 2>"$dir/b.err"
echo "exit $?" >>"$dir/b.err"
NEURON_RT_VISIBLE_CORES=0 "$ctl" run --device /dev/neuron0 --json >"$dir/c.json" 2>"$dir/c.err"
echo "exit $?" >>"$dir/c.err"
"$ctl" stats --device /dev/neuron0 --pid $pid --json >"$dir/stats.json" 2>"$dir/stats.err"
kill $pid 2>/dev/null
wait $pid
exit 0
"#;

#[test]
fn visible_cores_1_runs_on_the_devices_core_1_and_marks_only_it() {
    need_user_notif!();
    let sim = common::nrt_sim();
    let dir = std::env::temp_dir().join(format!("nrt-env-core1-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ctl = nrtctl();
    let o = clean(&sim)
        .args(["driver", "--scenario", "healthy-2core", "--", "sh", "-c", TWO_SESSIONS, "sh"])
        .arg(ctl.get_program())
        .arg(&dir)
        .output()
        .expect("nrt-sim driver runs");
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_default();
    let (a, a_err, b_err, c, c_err, stats) =
        (read("a.json"), read("a.err"), read("b.err"), read("c.json"), read("c.err"), read("stats.json"));
    let pid = read("a.pid").trim().to_string();
    let _ = std::fs::remove_dir_all(&dir);
    let ctx = format!(
        "--- driver\n{}\n--- a\n{a}{a_err}\n--- b\n{b_err}\n--- c\n{c}{c_err}\n--- stats\n{stats}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_str(&a).unwrap_or_else(|e| panic!("{e}: {ctx}"));
    assert_eq!(
        (v["status"].as_u64(), v["cores_count"].as_u64(), v["first_core"].as_u64()),
        (Some(0), Some(1), Some(1)),
        "{ctx}"
    );
    assert!(
        b_err.contains("NEURON_IOCTL_CRWL_NC_RANGE_MARK")
            && b_err.contains("EBUSY")
            && b_err.contains(&format!("core 1 is held by pid {pid}"))
            && b_err.contains("exit 1"),
        "{ctx}"
    );
    let v: serde_json::Value = serde_json::from_str(&c).unwrap_or_else(|e| panic!("{e}: {ctx}"));
    assert_eq!((v["status"].as_u64(), v["first_core"].as_u64()), (Some(0), Some(0)), "core 0 was free: {ctx}");
    let v: serde_json::Value = serde_json::from_str(&stats).unwrap_or_else(|e| panic!("{e}: {ctx}"));
    assert_eq!(v["execution_stats"]["execution_summary"]["completed"].as_u64(), Some(1), "{ctx}");
}

/// `nrtctl run` without `--device` opens the device of the set's cores:
/// `=1` is `/dev/neuron0`'s core 1 (the driver model's device), `=0-1` its
/// two cores, `=2` `/dev/neuron1`'s core 0, which the model does not serve
/// (`ENOENT`); `=1-2` is over two devices and refused; a bad value is
/// refused before any device is opened. Without the variable, `/dev/neuron0`.
#[test]
fn without_a_device_the_visible_cores_choose_it() {
    need_user_notif!();
    let sim = common::nrt_sim();
    let run = |env: &[(&str, &str)]| {
        let ctl = nrtctl();
        let mut c = clean(&sim);
        c.args(["driver", "--scenario", "healthy-2core", "--"]).arg(ctl.get_program()).args(["run", "--json"]);
        for (k, v) in env {
            c.env(k, v);
        }
        let o = c.output().expect("nrt-sim driver runs");
        let (out, err) = text(&o);
        (o.status.code(), out, err)
    };
    for (set, first, n) in [(Some("1"), 1, 1), (Some("0-1"), 0, 2), (None, 0, 2)] {
        let env: Vec<(&str, &str)> = set.map(|v| ("NEURON_RT_VISIBLE_CORES", v)).into_iter().collect();
        let (code, out, err) = run(&env);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{set:?}: {e}: {out}{err}"));
        assert_eq!(
            (v["status"].as_u64(), v["first_core"].as_u64(), v["cores_count"].as_u64(), code),
            (Some(0), Some(first), Some(n), Some(0)),
            "{set:?}: {out}{err}"
        );
    }
    let (code, out, err) = run(&[("NEURON_RT_VISIBLE_CORES", "2")]);
    assert!(err.contains("open on /dev/neuron1 failed: ENOENT"), "the set's device, device 1: {out}{err}");
    assert!(
        err.contains("/dev/neuron0 is sunda (2 cores a device), so core 2 is on /dev/neuron1")
            && err.contains("NEURON_RT_VISIBLE_CORES=\"2\""),
        "the variable that chose the device is named: {out}{err}"
    );
    assert_eq!(code, Some(1), "{out}{err}");
    // Only the chosen device's node is needed (a container has no other):
    // neither reading of core 63 opens, and both nodes and the variable are named.
    let (code, out, err) = run(&[("NEURON_RT_VISIBLE_CORES", "63")]);
    assert!(
        err.contains("core 63 is on /dev/neuron31 or /dev/neuron7") && err.contains("NEURON_RT_VISIBLE_CORES=\"63\""),
        "{out}{err}"
    );
    assert!(err.contains("nrt-sim driver: 0 open(s)"), "no other node opened: {err}");
    assert_eq!(code, Some(1), "{out}{err}");
    let (code, out, err) = run(&[("NEURON_RT_VISIBLE_CORES", "1-2")]);
    assert!(
        err.contains("cores 1-2 are on devices 0 to 1") && err.contains("NEURON_RT_VISIBLE_CORES=\"1-2\""),
        "{out}{err}"
    );
    assert_eq!(code, Some(1), "{out}{err}");
    let (code, out, err) = run(&[("NEURON_RT_VISIBLE_CORES", "2-")]);
    assert!(err.contains("NEURON_RT_VISIBLE_CORES=\"2-\"") && err.contains("inclusive range"), "{out}{err}");
    assert!(err.contains("nrt-sim driver: 0 open(s)"), "refused before any open: {err}");
    assert_eq!(code, Some(2), "{out}{err}");
}

/// On cayman the host-wide indices go through the driver's logical-to-physical
/// map (v3/neuron_dhal_v3.c `nc_mapping_v0_seng_swap`): device 0's logical
/// cores 6-7 are its cores 0-1, the ones the simulated device plays, and run;
/// logical 0 is its core 4, which the simulator does not play: refused at
/// open, naming the core and the indices it plays; logical 3-4 are its cores
/// 7 and 2, not one run: refused, naming the map and the variable. On sunda
/// the driver has no map: index i is core i.
#[test]
fn on_cayman_the_visible_cores_go_through_the_drivers_core_map() {
    need_user_notif!();
    let sim = common::nrt_sim();
    let run = |arch: &str, set: &str| {
        let ctl = nrtctl();
        let mut c = clean(&sim);
        c.args(["driver", "--arch", arch, "--scenario", "healthy-2core", "--"]).arg(ctl.get_program());
        c.args(["run", "--json", "--timeout-s", "1"]).env("NEURON_RT_VISIBLE_CORES", set);
        let o = c.output().expect("nrt-sim driver runs");
        let (out, err) = text(&o);
        let v: Option<serde_json::Value> = serde_json::from_str(&out).ok();
        let got = v.map(|v| (v["status"].as_u64(), v["first_core"].as_u64(), v["cores_count"].as_u64()));
        (got, format!("{arch} {set}: {out}{err}"))
    };
    let (got, ctx) = run("cayman", "6-7");
    assert_eq!(got, Some((Some(0), Some(0), Some(2))), "logical 6-7 are device 0's cores 0-1: {ctx}");
    let (got, ctx) = run("cayman", "0");
    assert_eq!(got, None, "{ctx}");
    assert!(
        ctx.contains("the device's core(s) 4 asked: the simulated cayman device plays its cores 0-1 only")
            && ctx.contains("NEURON_RT_VISIBLE_CORES 6, 7 of this device")
            && ctx.contains("NEURON_RT_VISIBLE_CORES=\"0\""),
        "logical 0 is device 0's core 4, not played: {ctx}"
    );
    let (got, ctx) = run("cayman", "3-4");
    assert_eq!(got, None, "{ctx}");
    assert!(
        ctx.contains("cores 3-4 (device 0's cores 7, 2) asked (the driver's logical-to-physical map, cayman)")
            && ctx.contains("not one ascending run")
            && ctx.contains("NEURON_RT_VISIBLE_CORES=\"3-4\""),
        "{ctx}"
    );
    let (got, ctx) = run("sunda", "1");
    assert_eq!(got, Some((Some(0), Some(1), Some(1))), "no map on sunda: index 1 is core 1: {ctx}");
}

/// A session on one core of the two-core simulated device (`=1`, and `=0`)
/// gets every one of its inferences played: the device re-arms that core
/// after each, though the other core is never kicked off.
#[test]
fn visible_cores_1_or_0_runs_every_inference_of_the_session() {
    need_user_notif!();
    let sim = common::nrt_sim();
    for core in ["1", "0"] {
        let args = ["--json", "--inferences", "3", "--timeout-s", "5"];
        let o = under_driver(&sim, "healthy-2core", &args, &[("NEURON_RT_VISIBLE_CORES", core)]);
        let (out, err) = text(&o);
        let reports: Vec<serde_json::Value> =
            serde_json::Deserializer::from_str(&out).into_iter().collect::<Result<_, _>>().unwrap_or_default();
        assert_eq!(reports.len(), 3, "core {core}: {out}{err}");
        for (i, v) in reports.iter().enumerate() {
            assert_eq!(
                (v["status"].as_u64(), v["cores_count"].as_u64(), v["first_core"].as_u64()),
                (Some(0), Some(1), core.parse().ok()),
                "core {core}, inference {}: {out}{err}",
                i + 1
            );
        }
        assert!(err.contains("3 inference(s) played"), "core {core}: {err}");
        assert_eq!(o.status.code(), Some(0), "core {core}: {out}{err}");
    }
}

#[test]
fn visible_cores_off_the_device_is_refused_at_open_naming_the_variable_and_the_value() {
    need_user_notif!();
    let sim = common::nrt_sim();
    // Cores 1-2 of a sunda host (two cores a device): device 0's core 1 and
    // device 1's core 0, two devices.
    let o = under_driver(&sim, "healthy-2core", &[], &[("NEURON_RT_VISIBLE_CORES", "1-2")]);
    let (out, err) = text(&o);
    assert!(
        err.contains("/dev/neuron0")
            && err.contains("cores 1-2 are on devices 0 to 1")
            && err.contains("a session is one device")
            && err.contains("(cores from variable NEURON_RT_VISIBLE_CORES=\"1-2\")"),
        "{out}{err}"
    );
    // Core 2 is device 1's core 0: refused on the --device /dev/neuron0, naming
    // the variable, its value, the device and what the set means.
    let o = under_driver(&sim, "healthy-2core", &[], &[("NEURON_RT_VISIBLE_CORES", "2")]);
    let (out, err) = text(&o);
    assert!(
        err.contains("/dev/neuron0")
            && err.contains("core 2 (device 1's core 0) asked, host-wide on sunda")
            && err.contains("that is /dev/neuron1, and this is device 0")
            && err.contains("(cores from variable NEURON_RT_VISIBLE_CORES=\"2\")")
            && !err.contains("CRWL_NC_RANGE_MARK"),
        "refused before any mark: {out}{err}"
    );
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    let o = under_driver(&sim, "healthy-2core", &["--json"], &[("NEURON_RT_VISIBLE_CORES", "1")]);
    let (out, err) = text(&o);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    assert_eq!((v["status"].as_u64(), v["first_core"].as_u64()), (Some(0), Some(1)), "{out}{err}");
}

/// The lines of `err` that the binding's logger or `nrtctl run` wrote about
/// a harvest, each unstamped with its pid; every such line is stamped.
fn harvest_lines(err: &str) -> Vec<(u32, &str)> {
    let lines: Vec<&str> =
        err.lines().filter(|l| l.contains("nrtctl: ") || l.contains("nrtctl run: inference")).collect();
    lines.iter().map(|l| unstamped(l).unwrap_or_else(|| panic!("not stamped: {l}\n{err}"))).collect()
}

#[test]
fn a_timeout_on_the_devices_core_1_names_nd0_nc1_the_engine_the_pid_the_time_and_what_to_check_next() {
    need_user_notif!();
    let sim = common::nrt_sim();
    // The session's one core is the device's core 1, whose DVE hangs.
    let env = [("NEURON_RT_VISIBLE_CORES", "1"), ("NEURON_RT_EXEC_TIMEOUT", "1")];
    let o = driven(&sim, &["--inject", "hang:core=1,engine=DVE"], &[], &env);
    let (out, err) = text(&o);
    assert!(out.contains("status: 5 NRT_TIMEOUT"), "{out}{err}");
    let lines = harvest_lines(&err);
    let pid = lines.first().unwrap_or_else(|| panic!("no harvest line: {err}")).0;
    assert!(lines.iter().all(|(p, _)| *p == pid), "one process: {err}");
    assert!(
        pending_line(
            &err,
            "nrtctl: ERROR TDRV: nd0 nc1 DVE: engines still pending after ",
            1000,
            "(budget 1000 ms): NRT_TIMEOUT (5); started, never wrote END: DVE; budget in effect: execution timeout 1 s \
             (from variable NEURON_RT_EXEC_TIMEOUT); to check next: each engine's span (`nrtctl run --trace FILE`), \
             the core's counts (`nrtctl stats --device /dev/neuron0 --pid "
        ),
        "{err}"
    );
    let timeout = lines.iter().find(|(_, l)| l.contains("engines still pending")).unwrap().1;
    assert!(
        timeout.ends_with(&format!("--pid {pid}`); raise NEURON_RT_EXEC_TIMEOUT only if the work needs longer")),
        "the next step names this process and the budget's source: {timeout}"
    );
    assert!(
        lines.iter().any(|(_, l)| *l
            == "nrtctl: ERROR TDRV: nd0 nc1: timed out with no HBM, DMA or collectives fault: \
             hang on compute (HANG_ON_COMPUTE)"),
        "{err}"
    );
    assert!(
        lines.iter().any(|(_, l)| *l
            == "nrtctl run: inference 1: nd0 nc1: the harvest ended at its execution timeout 1 s (from variable \
                NEURON_RT_EXEC_TIMEOUT): status 5 NRT_TIMEOUT; nd0 nc1: started, never wrote END: DVE"),
        "{err}"
    );
    assert!(!err.contains("core 0"), "no line names the session's index as a core: {err}");
    // The report names the device's core beside the session's index, in the
    // core's line and in each event of the core.
    assert!(out.contains("core 0 (nd0 nc1): exec_ret 5 NRT_TIMEOUT, timed out after 1000 ms"), "{out}");
    assert!(
        out.lines().any(|l| l.contains("core_timeout")
            && l.contains("nd0 nc1 (core 0): engines still pending after")
            && l.contains("never wrote END: DVE")),
        "{out}"
    );
}

#[test]
fn an_unexpected_notification_is_stamped_and_names_the_device_core_and_engine() {
    need_user_notif!();
    let sim = common::nrt_sim();
    let o = under_driver(&sim, "unexpected-subtype", &[], &[]);
    let (out, err) = text(&o);
    assert!(out.contains("status: 1 NRT_FAILURE"), "{out}{err}");
    let lines = harvest_lines(&err);
    assert!(
        lines.iter().any(|(_, l)| l.starts_with(
            "nrtctl: ERROR TDRV: nd0 nc0 SP: Received unexpected notification on engine SP. Debug Hint: "
        )),
        "{err}"
    );
}

/// The `cores` of `nrtctl run --json`'s report.
fn json_cores(o: &Output) -> Vec<serde_json::Value> {
    let (out, err) = text(o);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    v["cores"].as_array().cloned().unwrap_or_default()
}

#[test]
fn a_core_line_says_whether_the_core_was_harvested_timed_out_or_took_its_time() {
    need_user_notif!();
    let sim = common::nrt_sim();
    // Core 1's barrier proxy fails: finalized at once, core 0 never harvested.
    let o = under_driver(&sim, "barrier-fail", &[], &[]);
    let (out, err) = text(&o);
    assert!(
        out.lines().any(|l| {
            l
            == "core 0 (nd0 nc0): not harvested: the harvest ended before this core's engines did (never wrote START: \
                PE,ACT,POOL,DVE,SP); no exec_ret or duration, fatal flags: none"
        }),
        "{out}{err}"
    );
    assert!(
        out.lines()
            .any(|l| l
                .starts_with("core 1 (nd0 nc1): exec_ret 1200 NRT_EXEC_HW_ERR_COLLECTIVES, stopped at its fault: ")),
        "{out}{err}"
    );
    let cores = json_cores(&under_driver(&sim, "barrier-fail", &["--json"], &[]));
    assert_eq!(cores[0]["harvest"], "not_harvested", "{cores:?}");
    assert_eq!(cores[0]["never_wrote_start"], serde_json::json!(["PE", "ACT", "POOL", "DVE", "SP"]));
    assert_eq!((&cores[0]["exec_ret"], &cores[0]["duration_us"]), (&0.into(), &0.into()), "fields kept");
    assert_eq!(cores[1]["harvest"], "faulted", "{cores:?}");
    // A timed-out core: its budget, not a duration.
    let env = [("NEURON_RT_EXEC_TIMEOUT", "1")];
    let o = under_driver(&sim, "hang", &[], &env);
    let (out, err) = text(&o);
    assert!(
        out.lines().any(|l| l
            == "core 0 (nd0 nc0): exec_ret 5 NRT_TIMEOUT, timed out after 1000 ms (its budget): started, never wrote END: DVE, \
                fatal flags: timeout"),
        "{out}{err}"
    );
    let core1 = out.lines().find(|l| l.starts_with("core 1 (nd0 nc1): ")).unwrap_or_default();
    assert!(
        core1.starts_with("core 1 (nd0 nc1): exec_ret 0 NRT_SUCCESS, duration ") && !core1.contains("duration 0 us"),
        "{out}"
    );
    let cores = json_cores(&under_driver(&sim, "hang", &["--json"], &env));
    assert_eq!((&cores[0]["harvest"], &cores[0]["timed_out_after_ms"]), (&"timed_out".into(), &1000.into()));
    assert_eq!(cores[0]["never_wrote_end"], serde_json::json!(["DVE"]));
    assert_eq!((&cores[1]["harvest"], &cores[1]["timed_out_after_ms"]), (&"complete".into(), &serde_json::Value::Null));
    // drop-start: core 0 faults at the out-of-order END; no core reads as a
    // success that took no time.
    let o = under_driver(&sim, "drop-start", &[], &[("NEURON_RT_LOG_LEVEL", "WARNING")]);
    let (out, err) = text(&o);
    assert!(
        out.lines().any(|l| l.starts_with("core 0 (nd0 nc0): exec_ret 1 NRT_FAILURE, stopped at its fault: ")),
        "{out}{err}"
    );
    // The fault's one line (a warning) names the engine whose END came first.
    assert!(
        harvest_lines(&err).iter().any(|(_, l)| l.starts_with(
            "nrtctl: WARN TDRV: nd0 nc0 SP: Expected state to be end pending (SP); aws_hal_intc_read_cause = 0x"
        )),
        "{err}"
    );
    assert!(!out.contains("duration 0 us"), "{out}");
    for c in json_cores(&under_driver(&sim, "drop-start", &["--json"], &[])) {
        let complete = c["harvest"] == "complete";
        assert!(!complete || c["duration_us"] != 0, "{c}");
        assert_eq!(
            complete,
            c["never_wrote_start"] == serde_json::json!([]) && c["never_wrote_end"] == serde_json::json!([]),
            "{c}"
        );
    }
}
