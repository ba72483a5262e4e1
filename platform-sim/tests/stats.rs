//! `nrt-sim run` ends with the counters' `execution_stats` summary (the shape
//! `nrtctl stats` prints of a process's datastore): one run's, and a
//! 16-device host run's, matching their reports.

use std::process::Command;

use serde_json::Value;

fn nrt_sim(args: &[&str]) -> Value {
    let o = Command::new(env!("CARGO_BIN_EXE_nrt-sim")).args(args).output().expect("nrt-sim runs");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{args:?}: {out}\n{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}: {out}"))
}

#[test]
fn one_runs_summary_counts_each_cores_outcome_and_its_duration() {
    for (scenario, field, error) in [
        ("healthy-2core", "completed", None),
        ("nan", "completed_with_num_err", Some("numerical")),
        ("hang", "timed_out", None),
        ("ecc-ue", "completed_with_err", Some("hardware")),
    ] {
        let v = nrt_sim(&["run", "--scenario", scenario, "--json", "--timeout-s", "1"]);
        let es = &v["execution_stats"];
        let cores = v["cores"].as_array().unwrap();
        // The cores with the request's status count in its field, the clean ones as completed.
        let with = cores.iter().filter(|c| c["exec_ret"] == v["status"]).count() as u64;
        let clean = cores.iter().filter(|c| c["exec_ret"] == 0).count() as u64;
        assert!(with >= 1, "{scenario}: {v}");
        assert_eq!(es["execution_summary"][field].as_u64(), Some(with), "{scenario}: {es}");
        if field != "completed" {
            assert_eq!(es["execution_summary"]["completed"].as_u64(), Some(clean), "{scenario}: {es}");
        }
        if let Some(e) = error {
            assert_eq!(es["error_summary"][e].as_u64(), Some(with), "{scenario}: {es}");
        }
        let mut d: Vec<u64> = cores.iter().map(|c| c["duration_us"].as_u64().unwrap()).collect();
        d.sort_unstable();
        let lat = &es["latency_stats"]["device_latency"];
        assert_eq!(lat["p0"].as_f64(), Some(d[0] as f64 / 1e6), "{scenario}");
        assert_eq!(lat["p100"].as_f64(), Some(d[d.len() - 1] as f64 / 1e6), "{scenario}");
    }
    let text = Command::new(env!("CARGO_BIN_EXE_nrt-sim")).args(["run", "--scenario", "nan"]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("execution_stats") && text.contains("completed_with_num_err"), "{text}");
}

#[test]
fn a_16_device_host_runs_summary_counts_every_lanes_cores() {
    let v = nrt_sim(&["run", "--devices", "16", "--inferences", "2", "--json"]);
    let lanes = v["lanes"].as_array().unwrap();
    let lnc = v["lnc"].as_u64().unwrap();
    let ok = lanes.iter().flat_map(|l| l["results"].as_array().unwrap()).filter(|r| r["status"] == 0).count() as u64;
    let per_device = v["cores_per_device"].as_u64().unwrap();
    assert_eq!(ok, 16 * per_device * 2, "16 devices x their logical cores x 2 inferences");
    let es = &v["execution_stats"];
    assert_eq!(es["execution_summary"]["completed"].as_u64(), Some(ok * lnc), "each physical core counts: {es}");
    assert!(es["latency_stats"]["device_latency"]["p50"].as_f64().unwrap() > 0.0);
}
