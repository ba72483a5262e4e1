//! The `nrt-sim` command line: its contract (options, exit statuses, JSON) and
//! its errors on bad input.

use std::io::Write as _;
use std::process::{Command, Output, Stdio};

fn nrt_sim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nrt-sim")).args(args).output().expect("spawn nrt-sim")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn scenario_all_passes_and_lists_every_scenario() {
    let o = nrt_sim(&["run", "--scenario", "all"]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    for s in nrt_sim::SCENARIOS {
        let row = out.lines().find(|l| l.split_whitespace().next() == Some(s.name)).expect(s.name);
        assert!(row.ends_with("PASS"), "{row}");
        assert!(row.contains(&format!("{} {}", s.expected.code(), s.expected.name())), "{row}");
    }
    assert!(out.contains("0 failed"));
    let listed = stdout(&nrt_sim(&["scenarios"]));
    assert_eq!(listed.lines().count(), nrt_sim::SCENARIOS.len());
    assert!(listed.contains("cayman-fixup") && listed.contains("POOL"));
}

#[test]
fn scenario_all_json_is_one_object() {
    let o = nrt_sim(&["run", "--scenario", "all", "--json"]);
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["failed"], 0);
    assert_eq!(v["scenarios"].as_array().unwrap().len(), nrt_sim::SCENARIOS.len());
}

#[test]
fn run_json_has_the_contract_fields() {
    let o = nrt_sim(&["run", "--scenario", "nan", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["status"], 1003);
    assert_eq!(v["status_name"], "NRT_EXEC_COMPLETED_WITH_NUM_ERR");
    assert_eq!(v["return_code"], 0);
    assert!(v["steps"].is_u64() && v["elapsed_ms"].is_number());
    assert_eq!(v["cores"][0]["engines"][2]["name"], "POOL");
    assert!(v["cores"][1]["fatal"]["timeout"].is_boolean());
    assert_eq!(v["events"][0]["kind"], "error_record");
    assert!(v["events"][0]["message"].as_str().unwrap().contains("NUMERICAL"));
    assert_eq!(v["scenario_pass"], true);
}

#[test]
fn text_run_shows_status_engines_events_and_timeline() {
    let o = nrt_sim(&["run", "--inject", "hang:core=0,engine=dve", "--timeout-s", "1", "--cores", "1"]);
    assert_eq!(o.status.code(), Some(0));
    let out = stdout(&o);
    assert!(out.contains("status: 5 NRT_TIMEOUT"), "{out}");
    assert!(out.contains("one-step return: 2"), "{out}");
    assert!(out.contains("DVE     END_PENDING"), "{out}");
    assert!(out.contains("core_timeout"), "{out}");
    assert!(out.contains("timeline"), "{out}");
    assert!(out.lines().any(|l| l.contains("core 0 DVE") && l.trim_end().ends_with(">|")), "{out}");
}

#[test]
fn same_seed_same_bytes() {
    for args in [&["run", "--scenario", "corrupt", "--seed", "9"][..], &["run", "--json", "--seed", "4"][..]] {
        let a = nrt_sim(args);
        let b = nrt_sim(args);
        assert_eq!(a.stdout, b.stdout, "{args:?}");
    }
}

#[test]
fn bad_inject_specs_are_usage_errors_naming_the_bad_part() {
    for (spec, part) in [
        ("bogus", "unknown fault 'bogus'"),
        ("hang:core=3,engine=PE", "bad core '3'"),
        ("hang:core=0,engine=NPU", "bad engine 'NPU'"),
        ("drop:core=0,engine=PE", "missing 'record="),
        ("drop:core=0,engine=PE,record=end,loud", "unknown parameter 'loud'"),
        ("corrupt:core=0,engine=PE,count=-1", "bad count '-1'"),
    ] {
        let o = nrt_sim(&["run", "--inject", spec]);
        assert_eq!(o.status.code(), Some(2), "{spec}");
        assert!(stderr(&o).contains(part), "{spec}: {}", stderr(&o));
    }
    let o = nrt_sim(&["run", "--inject", "nan:core=1", "--cores", "1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("is on core 1, but the run has 1 core"));
    for bad in [&["run", "--scenario", "nope"][..], &["run", "--ring-entries", "6"], &["run", "--cores", "3"]] {
        assert_eq!(nrt_sim(bad).status.code(), Some(2), "{bad:?}");
    }
}

#[test]
fn decode_fields_and_errors() {
    let o = nrt_sim(&["decode", "00000084 00000200 1027000000000000", "0700001c07000600e803000000000000"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("subtype 2 START, NQ-id tag 4 (INFER_STATUS PE), phase 1, debug hint 0"), "{out}");
    assert!(out.contains("device timestamp 10000"), "{out}");
    assert!(out.contains("custom: tensor completion of var id 7"), "{out}");

    let o = nrt_sim(&["decode", "--ring", "error", "--json", "00000082 0000 0100 0000000000000000"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v[0]["error_class"], "NUMERICAL");
    assert_eq!(v[0]["status"], 1003);

    let mut child = Command::new(env!("CARGO_BIN_EXE_nrt-sim"))
        .args(["decode", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"00000084000003000100000000000000\n").unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(stdout(&o).contains("subtype 3 END"));

    for (hex, msg) in [("0011", "4 hex digits"), ("00000084 0000020x 1027000000000000", "'x' at character")] {
        let o = nrt_sim(&["decode", hex]);
        assert_eq!(o.status.code(), Some(2), "{hex}");
        assert!(stderr(&o).contains(msg), "{hex}: {}", stderr(&o));
    }
}
