//! The counters a monitor reads: under one `nrt-sim driver`, `nrtctl run
//! --inferences 5 --linger-s S` in the background and `nrtctl stats --pid <it>
//! --json` from a second process (as neuron-monitor reads a datastore), for a
//! scenario of every status the scenarios produce; the stats must match the
//! five reports: each execution counted once in neuron-monitor's field of its
//! status, each core's outcome in the per-NC summary, the
//! device latencies the reports' core durations, and the total latencies the
//! totals the reports say were counted, each inside its report's harvest.
//! Also: a C runtime's poller and `nrt_wait` count in its session's datastore,
//! and `--linger-s S` keeps the run, and its datastore, after its report,
//! then ends it by itself.
//!
//! Where the kernel offers no seccomp user notification the test prints
//! SKIPPED with the reason and checks nothing else.
#![cfg(feature = "sim")]

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

mod common;

/// The background run, a bounded wait for its fifth report (60 s; the report
/// file made first, so that the wait never reads a file the background job
/// has not opened yet), the monitor, then the run ended (its linger cut
/// short; its exit releases the datastore).
const SCRIPT: &str = r#"
ctl="$1"; dir="$2"
: >"$dir/run.json"
"$ctl" run --device /dev/neuron0 --timeout-s 1 --inferences 5 --linger-s 120 --json >"$dir/run.json" 2>"$dir/run.err" &
pid=$!
i=0
while [ "$(grep -c '^  "return_code"' "$dir/run.json")" -lt 5 ] && [ $i -lt 600 ] && kill -0 $pid 2>/dev/null; do
  sleep 0.1; i=$((i+1))
done
"$ctl" stats --device /dev/neuron0 --pid $pid --json >"$dir/stats.json" 2>"$dir/stats.err"
echo "exit $?" >>"$dir/stats.err"
"$ctl" stats --device /dev/neuron0 --pid $pid --json --watch 0.1 --count 2 >"$dir/count.json" 2>&1
( "$ctl" stats --device /dev/neuron0 --pid $pid --watch 0.1; echo "exit $?" >"$dir/watch.rc" ) 2>"$dir/watch.err" | head -n 1 >"$dir/watch.txt"
kill $pid 2>/dev/null
wait $pid
"$ctl" stats --device /dev/neuron0 --pid $pid --json >"$dir/after.json" 2>"$dir/after.err"
echo "exit $?" >>"$dir/after.err"
exit 0
"#;

/// neuron-monitor's `execution_summary` field and `error_summary` field (if
/// any) a core's status counts in (`nrt_core::counters::counters_for`'s
/// table, G-NDS-MAP), restated here from the documentation.
fn fields(status: u64, class: Option<&str>) -> (&'static str, Option<&'static str>) {
    match status {
        0 if class == Some("ECC_CORRECTABLE") => ("completed", Some("transient")),
        0 => ("completed", None),
        1003 => ("completed_with_num_err", Some("numerical")),
        1004 if class == Some("SW_SEQUENCER") => ("completed_with_err", Some("generic")),
        1004 => ("completed_with_err", Some("transient")),
        5 => ("timed_out", None),
        1204 => ("timed_out", Some("runtime")),
        1200..=1203 | 1205 | 6 => ("completed_with_err", Some("hardware")),
        1206 => ("completed_with_err", Some("runtime")),
        1006 => ("completed_with_err", Some("generic")),
        1002 => ("incorrect_input", None),
        7 => ("failed_to_queue", None),
        // GENERIC_FAIL has no execution_summary field; ERR_GENERIC (or RT/INVALID/...).
        101 => ("", Some("runtime")),
        2 | 4 | 10 => ("", None),
        _ => ("", Some("generic")),
    }
}

/// Nearest-rank percentile `p` of `v` (sorted), seconds.
fn rank(v: &[u64], p: usize) -> f64 {
    let r = (p * v.len()).div_ceil(100).max(1);
    v[r - 1] as f64 / 1e6
}

fn check(sim: &PathBuf, scenario: &str) -> Result<(), String> {
    let dir = std::env::temp_dir().join(format!("nrt-stats-{}-{scenario}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ctl = env!("CARGO_BIN_EXE_nrtctl");
    let o = Command::new(sim)
        .args(["driver", "--scenario", scenario, "--", "sh", "-c", SCRIPT, "sh", ctl])
        .arg(&dir)
        .output()
        .expect("nrt-sim runs");
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_default();
    let (run, run_err, stats, stats_err) = (read("run.json"), read("run.err"), read("stats.json"), read("stats.err"));
    let (after, after_err) = (read("after.json"), read("after.err"));
    let (count, watch_rc, watch, watch_err) =
        (read("count.json"), read("watch.rc"), read("watch.txt"), read("watch.err"));
    let _ = std::fs::remove_dir_all(&dir);
    let ctx = format!(
        "{scenario}:\n--- driver\n{}\n--- run stderr\n{run_err}\n--- stats\n{stats}\n{stats_err}",
        String::from_utf8_lossy(&o.stderr)
    );
    let reports: Vec<Value> = serde_json::Deserializer::from_str(&run)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{e}: {ctx}"))?;
    if reports.len() != 5 {
        return Err(format!("{} reports, not 5: {ctx}", reports.len()));
    }
    if !stats_err.contains("exit 0") {
        return Err(format!("nrtctl stats failed: {ctx}"));
    }
    let v: Value = serde_json::from_str(&stats).map_err(|e| format!("{e}: {ctx}"))?;
    let es = &v["execution_stats"];
    // What the five reports say: each execution once, in its request's
    // status; each core's own outcome (the per-NC words) core by core.
    let mut executions = std::collections::BTreeMap::<&str, u64>::new();
    let mut summary = std::collections::BTreeMap::<&str, u64>::new();
    let mut errors = std::collections::BTreeMap::<&str, u64>::new();
    let mut device = Vec::new();
    let mut total = Vec::new();
    for r in &reports {
        let rc = r["return_code"].as_u64().unwrap();
        let status = r["status"].as_u64().unwrap();
        let elapsed_us = r["elapsed_ms"].as_f64().unwrap() * 1e3;
        let cores = r["cores"].as_array().unwrap();
        let (field, _) = fields(status, None);
        if !field.is_empty() {
            *executions.entry(field).or_default() += 1;
        }
        for c in cores {
            // The total latency this core's counters took, inside the harvest
            // the report times (kickoff to its last HEAD write-back).
            let t = c["total_latency_us"].as_u64().ok_or_else(|| format!("no total_latency_us in {c}: {ctx}"))?;
            if t as f64 > elapsed_us + 1e-6 {
                return Err(format!("a total latency of {t} us in a harvest of {elapsed_us} us: {ctx}"));
            }
            total.push(t);
            let own = c["exec_ret"].as_u64().unwrap();
            // A core without a status of its own in a failed request counts the
            // request's, unless its engines all completed.
            let complete = c["engines"].as_array().unwrap().iter().all(|e| e["state"] == "COMPLETE");
            let s = if own == 0 && rc == 2 && !complete { status } else { own };
            let (sum, err) = fields(s, c["error_class"].as_str());
            if !sum.is_empty() {
                *summary.entry(sum).or_default() += 1;
            }
            if let Some(e) = err {
                *errors.entry(e).or_default() += 1;
            }
            device.push(c["duration_us"].as_u64().unwrap());
        }
    }
    for f in
        ["completed", "completed_with_err", "completed_with_num_err", "timed_out", "incorrect_input", "failed_to_queue"]
    {
        let got = es["execution_summary"][f].as_u64();
        let want = executions.get(f).copied().unwrap_or(0);
        if got != Some(want) {
            return Err(format!("execution_summary.{f}: {got:?}, the reports' statuses say {want}: {ctx}"));
        }
        let got = es["nc_execution_summary"][f].as_u64();
        let want = summary.get(f).copied().unwrap_or(0);
        if got != Some(want) {
            return Err(format!("nc_execution_summary.{f}: {got:?}, the reports' cores say {want}: {ctx}"));
        }
    }
    if es["execution_summary_source"] != "executions" {
        return Err(format!("execution_summary_source: {}: {ctx}", es["execution_summary_source"]));
    }
    for f in ["generic", "numerical", "transient", "model", "runtime", "hardware"] {
        let got = es["error_summary"][f].as_u64();
        let want = errors.get(f).copied().unwrap_or(0);
        if got != Some(want) {
            return Err(format!("error_summary.{f}: {got:?}, the reports say {want}: {ctx}"));
        }
    }
    device.sort_unstable();
    let d = &es["latency_stats"]["device_latency"];
    for (k, p) in [("p0", 0), ("p1", 1), ("p25", 25), ("p50", 50), ("p75", 75), ("p99", 99), ("p100", 100)] {
        let got = d[k].as_f64().ok_or_else(|| format!("device_latency.{k} missing: {ctx}"))?;
        if (got - rank(&device, p)).abs() > 1e-9 {
            return Err(format!("device_latency.{k} {got}, the reports' durations give {}: {ctx}", rank(&device, p)));
        }
    }
    // The total latencies the monitor reads are those the five reports say
    // were counted, core by core (their percentiles, to the microsecond).
    total.sort_unstable();
    let t = &es["latency_stats"]["total_latency"];
    for (k, p) in [("p0", 0), ("p1", 1), ("p25", 25), ("p50", 50), ("p75", 75), ("p99", 99), ("p100", 100)] {
        let got = t[k].as_f64().ok_or_else(|| format!("total_latency.{k} missing: {ctx}"))?;
        if (got - rank(&total, p)).abs() > 1e-9 {
            return Err(format!(
                "total_latency.{k} {got}, the reports' totals {total:?} give {}: {ctx}",
                rank(&total, p)
            ));
        }
    }
    // --watch --count 2: the totals (the stats read before: no period), then
    // two periods, nothing new in them (the run lingers).
    let printed: Vec<Value> = serde_json::Deserializer::from_str(&count)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()
        .map_err(|e| format!("--count: {e}: {count}: {ctx}"))?;
    let totals_first = printed.first().is_some_and(|t| {
        t["execution_stats"].get("period").is_none()
            && t["execution_stats"]["execution_summary"] == es["execution_summary"]
    });
    if printed.len() != 3
        || !totals_first
        || printed[1..].iter().any(|p| {
            p["execution_stats"]["period"].as_f64().is_none_or(|t| t <= 0.0)
                || p["execution_stats"]["execution_summary"]["completed"] != 0
        })
    {
        return Err(format!("--watch 0.1 --count 2 printed: {count}: {ctx}"));
    }
    // A reader that goes away (`| head -n 1`): the watch ends quietly, exit 0.
    if watch_rc.trim() != "exit 0" || !watch.starts_with("nrtctl stats --pid") || watch_err.contains("panicked") {
        return Err(format!("--watch | head: rc {watch_rc:?}, out {watch:?}, err {watch_err:?}: {ctx}"));
    }
    // The run gone: its datastore with it (ENOENT).
    if after_err.contains("exit 0") || !after_err.contains("ENOENT") {
        return Err(format!("after the run's exit: {after}{after_err}: {ctx}"));
    }
    Ok(())
}

#[test]
fn a_monitor_reads_the_counters_of_every_status_from_another_process() {
    if let Err(why) = common::user_notif() {
        common::skip(&format!("nrt-sim driver cannot run here: {why}"));
        return;
    }
    let sim = common::nrt_sim();
    // One scenario of each status the scenarios produce, and the error classes
    // that change the error summary (a sequencer error, a corrected ECC error).
    let table = Command::new(&sim).args(["run", "--scenario", "all"]).output().unwrap();
    let out = String::from_utf8_lossy(&table.stdout).into_owned();
    let mut seen = std::collections::BTreeSet::new();
    let mut scenarios = vec!["seq-error".to_string(), "ecc-ce".to_string(), "core1-nan".to_string()];
    for l in out.lines() {
        let w: Vec<&str> = l.split_whitespace().collect();
        if w.len() == 7 && w[6] == "PASS" && w[0] != "barrier-300s" && seen.insert(w[3].to_string()) {
            scenarios.push(w[0].to_string());
        }
    }
    assert!(seen.len() >= 8, "the scenario table: {out}");
    let mut failures = Vec::new();
    for s in &scenarios {
        if let Err(e) = check(&sim, s) {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{} of {} scenarios:\n{}", failures.len(), scenarios.len(), failures.join("\n\n"));
}

/// A C runtime's lanes count where its session's inferences do: under one
/// `nrt-sim driver`, `tests/c/poller_counters.c` opens a session on core 0
/// and points two lanes' rings at it (`nrt_rings_count_into`); a request
/// harvested by a poller thread (NRT_SUCCESS) and one by `nrt_wait` (a NaN,
/// 1003) are then in the process's datastore as `nrtctl stats`, a second
/// process, reads it: while the session is open, and after it closed (the
/// rings still hold the datastore); once the rings are freed it is released.
#[test]
fn a_c_pollers_and_nrt_waits_requests_count_in_the_sessions_datastore() {
    if let Err(why) = common::user_notif() {
        common::skip(&format!("nrt-sim driver cannot run here: {why}"));
        return;
    }
    let sim = common::nrt_sim();
    let lib =
        common::cargo_build(&["-p", "nrt-linux", "--lib", "--no-default-features"], "c-abi").join("libnrt_linux.a");
    let dir = std::env::temp_dir().join(format!("nrt-stats-c-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let prog = dir.join("poller_counters");
    common::compile_c("poller_counters.c", &lib, &prog);
    let (open, closed, freed) = (dir.join("open.json"), dir.join("closed.json"), dir.join("freed.txt"));
    let o = common::without_rt_env(Command::new(&sim))
        .args(["driver", "--scenario", "healthy-2core", "--"])
        .arg(&prog)
        .arg(env!("CARGO_BIN_EXE_nrtctl"))
        .args([&open, &closed, &freed])
        .output()
        .expect("nrt-sim runs");
    let read = |p: &PathBuf| std::fs::read_to_string(p).unwrap_or_default();
    let (open, closed, freed) = (read(&open), read(&closed), read(&freed));
    let _ = std::fs::remove_dir_all(&dir);
    let ctx = format!(
        "--- program\n{}\n--- driver\n{}\n--- open\n{open}\n--- closed\n{closed}\n--- freed\n{freed}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.status.success(), "{ctx}");
    for (when, text) in [("with the session open", &open), ("after the session closed", &closed)] {
        let v: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{when}: {e}: {ctx}"));
        let es = &v["execution_stats"];
        let summary = &es["execution_summary"];
        assert_eq!(summary["completed"], 1, "{when}: the poller's request: {ctx}");
        assert_eq!(summary["completed_with_num_err"], 1, "{when}: nrt_wait's request: {ctx}");
        assert_eq!(es["error_summary"]["numerical"], 1, "{when}: {ctx}");
        let d = &es["latency_stats"]["device_latency"];
        let (d0, d100) = (d["p0"].as_f64(), d["p100"].as_f64());
        assert!(d0.is_some_and(|p| p > 0.0) && d0 == d100, "{when}: the two requests' identical records: {ctx}");
        let t = &es["latency_stats"]["total_latency"];
        assert!(t["p0"].as_f64().is_some_and(|p| p > 0.0), "{when}: two total latencies: {ctx}");
    }
    assert!(freed.contains("ENOENT"), "the datastore released with the rings: {ctx}");
}

/// `nrtctl run --linger-s S` in the background (its report waited for, at
/// most 60 s), a monitor's read of its datastore once the report is there,
/// a look that it is still running after that read, then its own end waited
/// for (its exit status).
const LINGER_SCRIPT: &str = r#"
ctl="$1"; dir="$2"; linger="$3"
: >"$dir/run.json"
"$ctl" run --device /dev/neuron0 --timeout-s 5 --json --linger-s "$linger" >"$dir/run.json" 2>"$dir/run.err" &
pid=$!
i=0
while ! grep -q '^  "return_code"' "$dir/run.json" && [ $i -lt 600 ] && kill -0 $pid 2>/dev/null; do
  sleep 0.1; i=$((i+1))
done
"$ctl" stats --device /dev/neuron0 --pid $pid --json >"$dir/stats.json" 2>"$dir/stats.err"
echo "stats exit $?" >"$dir/seen.txt"
if kill -0 $pid 2>/dev/null; then echo "running after the stats" >>"$dir/seen.txt"; fi
wait $pid
echo "run exit $?" >>"$dir/seen.txt"
"#;

/// `nrtctl run --linger-s S` keeps its process, and its datastore, after its
/// report, then ends by itself: under `nrt-sim driver`, once the run's one
/// report is there, `nrtctl stats --pid` (a second process) reads the run's
/// inference from its datastore and the run is still running after that
/// read; the run then exits 0 on its own (the driver's `--limit-s 60` would
/// kill it, failing the test; this test's own look ends at 90 s, killing
/// the driver's process group). S is 20 s: the monitor's read (milliseconds
/// on a quiet machine) must come within it, so S is a backstop wide enough
/// for a busy machine, not a measure of its speed. When the run ends past S
/// is not checked.
#[test]
fn nrtctl_run_linger_s_keeps_the_datastore_after_the_report_then_ends_by_itself() {
    use std::io::Read;
    use std::os::unix::process::CommandExt;
    use std::time::{Duration, Instant};
    if let Err(why) = common::user_notif() {
        common::skip(&format!("nrt-sim driver cannot run here: {why}"));
        return;
    }
    let sim = common::nrt_sim();
    let dir = std::env::temp_dir().join(format!("nrt-stats-linger-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut child = common::without_rt_env(Command::new(&sim))
        .args(["driver", "--limit-s", "60", "--scenario", "healthy-2core", "--", "sh", "-c", LINGER_SCRIPT, "sh"])
        .arg(env!("CARGO_BIN_EXE_nrtctl"))
        .arg(&dir)
        .arg("20")
        .process_group(0)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("nrt-sim runs");
    // Both pipes drained as they fill, so the driver never blocks on them.
    let drain = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut v);
            }
            String::from_utf8_lossy(&v).into_owned()
        })
    };
    let out = drain(child.stdout.take().map(|r| Box::new(r) as Box<dyn Read + Send>));
    let err = drain(child.stderr.take().map(|r| Box::new(r) as Box<dyn Read + Send>));
    let started = Instant::now();
    let mut status = None;
    while started.elapsed() < Duration::from_secs(90) {
        match child.try_wait() {
            Ok(Some(s)) => {
                status = Some(s);
                break;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(_) => break,
        }
    }
    if status.is_none() {
        // The driver's whole process group (its pid): the driver and what it runs.
        let _ = Command::new("kill").args(["-KILL", "--", &format!("-{}", child.id())]).status();
    }
    let _ = child.wait();
    let (out, err) = (out.join().unwrap_or_default(), err.join().unwrap_or_default());
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_default();
    let (run, run_err, stats, stats_err, seen) =
        (read("run.json"), read("run.err"), read("stats.json"), read("stats.err"), read("seen.txt"));
    let _ = std::fs::remove_dir_all(&dir);
    let ctx = format!(
        "--- driver stdout\n{out}\n--- driver stderr\n{err}\n--- run\n{run}\n{run_err}\n--- stats\n{stats}\n{stats_err}\n\
         --- seen\n{seen}"
    );
    let status = status.unwrap_or_else(|| panic!("still running after 90 s (killed): {ctx}"));
    assert!(status.success(), "nrt-sim driver exit {:?}: {ctx}", status.code());
    assert!(run.contains("  \"return_code\""), "the run's report: {ctx}");
    let seen: Vec<&str> = seen.lines().collect();
    assert_eq!(
        seen,
        ["stats exit 0", "running after the stats", "run exit 0"],
        "the monitor read the datastore after the report, the run was still there, then it ended by itself: {ctx}"
    );
    let report: Value = serde_json::from_str(&run).unwrap_or_else(|e| panic!("the run's JSON: {e}: {ctx}"));
    let cores = report["cores"].as_array().map_or(0, Vec::len);
    assert!(cores > 0 && report["status"] == 0, "one inference, NRT_SUCCESS on each core: {ctx}");
    let v: Value = serde_json::from_str(&stats).unwrap_or_else(|e| panic!("the monitor's JSON: {e}: {ctx}"));
    let es = &v["execution_stats"];
    assert_eq!(es["execution_summary"]["completed"], 1, "the run's one execution, read after its report: {ctx}");
    assert_eq!(es["nc_execution_summary"]["completed"], cores, "each core's outcome of it: {ctx}");
}
