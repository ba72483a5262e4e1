//! The `nrt-sim` command line at its limits: numbers out of range, a reader that
//! goes away, a full disk, the longest budget.

use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn nrt_sim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_nrt-sim"))
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Wait for `child`, killing it after `guard`: a hang guard only, never a speed
/// bound (the test fails when it fires).
fn wait_guarded(mut child: Child, guard: Duration, what: &str) -> Output {
    let t = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t.elapsed() > guard {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} still running after {guard:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn numbers_out_of_range_are_usage_errors_naming_the_flag_and_the_value() {
    let cases: &[(&[&str], &str, &str)] = &[
        (&["run", "--timeout-s", "nan"], "--timeout-s", "'nan'"),
        (&["run", "--timeout-s", "-1"], "--timeout-s", "'-1'"),
        (&["run", "--timeout-s", "4294967296"], "--timeout-s", "'4294967296'"),
        (&["run", "--seed", "-5"], "--seed", "'-5'"),
        (&["run", "--seed", "18446744073709551616"], "--seed", "'18446744073709551616'"),
        (&["run", "--ring-entries", "-4"], "--ring-entries", "'-4'"),
        (&["run", "--ring-entries", "inf"], "--ring-entries", "'inf'"),
        (&["run", "--cores", "-1"], "--cores", "'-1'"),
        (&["serve", "--shm", "/nonexistent/x", "--idle-timeout-s", "-1"], "--idle-timeout-s", "'-1'"),
        (&["serve", "--shm", "/nonexistent/x", "--inferences", "nan"], "--inferences", "'nan'"),
        (&["run", "--inject", "barrier-delay:secs=nan"], "--inject", "secs 'nan'"),
        (&["run", "--inject", "barrier-delay:secs=-1"], "--inject", "secs '-1'"),
        (&["driver", "--limit-s", "0", "--", "true"], "--limit-s", "'0'"),
        (&["driver", "--limit-s", "-1", "--", "true"], "--limit-s", "'-1'"),
        (&["driver", "--fault-copy-data", "0", "--", "true"], "--fault-copy-data", "'0'"),
        (&["driver", "--fault-copy-marker", "-1", "--", "true"], "--fault-copy-marker", "'-1'"),
        (
            &["driver", "--fault-copy-data", "1", "--fault-copy-marker", "1", "--", "true"],
            "--fault-copy-data",
            "cannot be used with",
        ),
    ];
    for (args, flag, value) in cases {
        let o = nrt_sim().args(*args).output().unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(flag) && err.contains(value), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn a_reader_that_goes_away_ends_the_output_quietly() {
    let commands: &[&[&str]] = &[
        &["run", "--scenario", "all"],
        &["run", "--scenario", "nan"],
        &["run", "--scenario", "hang", "--json"],
        &["scenarios"],
        &["decode", "0700001c07000600e803000000000000"],
    ];
    for args in commands {
        // `| head -0`: the pipe's read end is closed before the first write.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let child = nrt_sim().args(*args).stdout(writer).stderr(Stdio::piped()).spawn().unwrap();
        let o = wait_guarded(child, Duration::from_secs(120), "nrt-sim");
        // An exit status (not a signal), the command's own, and nothing on stderr.
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        assert_eq!(stderr(&o), "", "{args:?}");
    }
}

#[test]
fn a_reader_that_takes_one_line_gets_it() {
    // `| head -1`: read the first line, then close.
    let mut child = nrt_sim().args(["run", "--scenario", "all"]).stdout(Stdio::piped()).spawn().unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    std::io::BufRead::read_line(&mut out, &mut first).unwrap();
    drop(out);
    let o = wait_guarded(child, Duration::from_secs(120), "nrt-sim");
    assert!(first.starts_with("scenario"), "{first}");
    assert_eq!(o.status.code(), Some(0));
}

#[test]
fn a_full_disk_is_reported_once_at_exit() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        eprintln!("no /dev/full here: nothing to check");
        return;
    };
    let o = nrt_sim().arg("scenarios").stdout(full).output().unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("nrt-sim: writing standard output failed: No space left on device"), "{err}");
}

#[test]
fn the_longest_budget_on_a_hang_finishes_in_a_few_polls() {
    // 4294967295 s of virtual time: the clock skips to the budget instead of
    // polling it a millisecond at a time (about 4 * 10^12 polls).
    let child = nrt_sim()
        .args(["run", "--timeout-s", "4294967295", "--inject", "hang:core=0,engine=DVE", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let o = wait_guarded(child, Duration::from_secs(120), "nrt-sim run --timeout-s 4294967295");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["status"], 5);
    assert_eq!(v["timeout_ms"], 4_294_967_295_000u64);
    let steps = v["steps"].as_u64().unwrap();
    assert!(steps < 200, "{steps} polls");
    let elapsed = v["elapsed_ms"].as_f64().unwrap();
    assert!((4_294_967_295_000.0..4_294_967_295_001.0).contains(&elapsed), "{elapsed}");
    let timeout =
        v["events"].as_array().unwrap().iter().find(|e| e["kind"] == "core_timeout").expect("a timeout event");
    assert!(timeout["message"].as_str().unwrap().contains("4294967295000 ms"), "{timeout}");
}
