//! Sequential processes under one `nrt-sim driver`: each `nrtctl run` resets
//! its cores (`NC_RESET`), and the driver model has the simulated device
//! reset them (docs/driver-conformance.md RESET-8), so the next process gets
//! a fresh, correct inference with real engine times, whatever the one
//! before it left: a clean run, a run that timed out with the device still
//! playing, a process killed with `kill -9` in the middle of its inferences.
//!
//! Where the kernel offers no seccomp user notification, each test says
//! SKIPPED with the reason and checks nothing else.
#![cfg(feature = "sim")]

use std::path::PathBuf;
use std::process::{Command, Output};

mod common;

fn nrtctl() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_nrtctl"))
}

fn text(o: &Output) -> (String, String) {
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

/// `nrt-sim driver --scenario healthy-2core -- sh -c SCRIPT`, with `$CTL` the
/// nrtctl binary; the script's last command prints the JSON report checked.
fn under_one_driver(script: &str) -> Output {
    under_one_driver_playing(&["--scenario", "healthy-2core"], script)
}

/// [`under_one_driver`] with the device `device` (nrt-sim driver's flags).
fn under_one_driver_playing(device: &[&str], script: &str) -> Output {
    Command::new(common::nrt_sim())
        .arg("driver")
        .args(device)
        .args(["--limit-s", "60", "--", "sh", "-c", script])
        .env("CTL", nrtctl())
        .output()
        .expect("nrt-sim runs")
}

/// The JSON report's status and each engine's `(start_us, end_us)`.
fn report(out: &str) -> (u64, Vec<(u64, u64)>) {
    let v: serde_json::Value =
        serde_json::from_str(out).unwrap_or_else(|e| panic!("the output is not one JSON report ({e}):\n{out}"));
    let status = v["status"].as_u64().expect("a status");
    let mut times = Vec::new();
    for core in v["cores"].as_array().expect("cores") {
        for e in core["engines"].as_array().expect("engines") {
            times.push((e["start_us"].as_u64().unwrap_or(0), e["end_us"].as_u64().unwrap_or(0)));
        }
    }
    (status, times)
}

/// Check the output of a run whose standard output is only the second
/// process's JSON report.
fn check_fresh(what: &str, o: &Output) {
    let (out, err) = text(o);
    assert_eq!(o.status.code(), Some(0), "{what}:\n{out}\n{err}");
    let (status, times) = report(&out);
    assert_eq!(status, 0, "{what}: the second process's status:\n{out}\n{err}");
    let engines = 2 * nrt_core::arch::ENGINES_PER_CORE;
    assert_eq!(times.len(), engines, "{what}: 2 cores x {} engines:\n{out}", engines / 2);
    assert!(times.iter().all(|&(s, e)| s > 0 && e > s), "{what}: real engine times {times:?}:\n{out}\n{err}");
    assert!(err.contains("0 kernel BUG(s), 0 warning(s)"), "{what}:\n{err}");
}

#[test]
fn a_second_process_after_a_clean_run_gets_a_fresh_inference() {
    if let Err(why) = common::user_notif() {
        common::skip(&format!("nrt-sim driver cannot run here: {why}"));
        return;
    }
    let o = under_one_driver(r#""$CTL" run --timeout-s 5 >/dev/null && "$CTL" run --timeout-s 5 --json"#);
    check_fresh("after a clean run", &o);
}

#[test]
fn a_second_process_after_a_timed_out_run_gets_a_fresh_inference() {
    if let Err(why) = common::user_notif() {
        common::skip(&format!("nrt-sim driver cannot run here: {why}"));
        return;
    }
    // The device hangs an engine for each core's first kickoff only
    // (--fault-kickoffs 1): the first process times out whatever the timing,
    // with the device left mid-inference; the second, after its reset, gets
    // the healthy device. The first's timeout line is on standard error (the
    // second's report says 0: the line is the first's).
    let o = under_one_driver_playing(
        &["--scenario", "hang", "--fault-kickoffs", "1"],
        r#""$CTL" run --timeout-s 0 >/dev/null; "$CTL" run --timeout-s 5 --json"#,
    );
    let err = text(&o).1;
    assert!(err.contains("harvest ended at its execution timeout 0 s (from flag --timeout-s)"), "{err}");
    check_fresh("after a timeout", &o);
}

#[test]
fn a_second_process_after_a_kill_9_gets_a_fresh_inference() {
    if let Err(why) = common::user_notif() {
        common::skip(&format!("nrt-sim driver cannot run here: {why}"));
        return;
    }
    // The first is killed in the middle of its inferences (bounded: 20000 at most).
    let o = under_one_driver(
        r#""$CTL" run --timeout-s 5 --inferences 20000 >/dev/null & sleep 0.5; kill -9 $!; wait; "$CTL" run --timeout-s 5 --json"#,
    );
    check_fresh("after kill -9", &o);
}
