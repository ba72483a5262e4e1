//! The runtime's environment variables as `nrtctl run` honours them
//! (`nrt_linux::config`), each run as a child process with `Command::env`:
//! a bad value is refused at start naming the variable, the value and what is
//! accepted; under `nrt-sim driver` each has its effect (the timeout budget
//! and its source, the cores claimed, the log lines), and a flag beats its
//! variable. `nrtctl run --trace` writes trace-event JSON whose spans are the
//! report's engine times.
//!
//! Where the kernel offers no seccomp user notification, the driver tests say
//! SKIPPED with the reason and check nothing else.
#![cfg(feature = "sim")]

use std::process::{Command, Output};

mod common;

fn nrtctl() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_nrtctl"));
    for v in ["NEURON_RT_EXEC_TIMEOUT", "NEURON_RT_VISIBLE_CORES", "NEURON_RT_NUM_CORES", "NEURON_RT_LOG_LEVEL"] {
        c.env_remove(v);
    }
    for comp in ["TDRV", "NMGR", "KMGR", "NRT"] {
        c.env_remove(format!("NEURON_RT_LOG_LEVEL_{comp}"));
    }
    c
}

fn text(o: &Output) -> (String, String) {
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

macro_rules! need_user_notif {
    () => {
        if let Err(why) = common::user_notif() {
            eprintln!("\n!!! SKIPPED: nrt-sim driver needs seccomp user notification: {why}\n");
            return;
        }
    };
}

/// `nrt-sim driver --scenario <scenario> -- nrtctl run --device /dev/neuron0 <args>` with `env`.
fn under_driver(sim: &std::path::Path, scenario: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    let ctl = nrtctl();
    let mut c = Command::new(sim);
    c.args(["driver", "--scenario", scenario, "--"]).arg(ctl.get_program()).args(["run", "--device", "/dev/neuron0"]);
    c.args(args);
    for v in ["NEURON_RT_EXEC_TIMEOUT", "NEURON_RT_VISIBLE_CORES", "NEURON_RT_NUM_CORES", "NEURON_RT_LOG_LEVEL"] {
        c.env_remove(v);
    }
    for comp in ["TDRV", "NMGR", "KMGR", "NRT"] {
        c.env_remove(format!("NEURON_RT_LOG_LEVEL_{comp}"));
    }
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
        ("NEURON_RT_VISIBLE_CORES", "2-3", "cores 0..n"),
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
    // The flag beats the variable.
    let o = under_driver(&sim, "hang", &["--timeout-s", "2"], &[("NEURON_RT_EXEC_TIMEOUT", "1")]);
    let (out, err) = text(&o);
    assert!(out.contains("status: 5 NRT_TIMEOUT") && out.contains("budget 2000 ms"), "{out}{err}");
    assert!(err.contains("execution timeout 2 s (from flag --timeout-s)"), "{err}");
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
    assert!(err.contains("cores") && err.contains("NEURON_RT_NUM_CORES"), "{out}{err}");
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
    let line = "nrtctl: ERROR TDRV: core 0: error notification subtype 1 (NUMERICAL)";
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
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));
    // A file that cannot be written: named, with the reason.
    let o = under_driver(&sim, "nan", &["--trace", "/nonexistent-nrtctl/t.json"], &[]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("/nonexistent-nrtctl/t.json") && err.contains("ENOENT"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
