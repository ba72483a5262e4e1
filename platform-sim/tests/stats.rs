//! `nrt-sim run` ends with the counters' `execution_stats` summary (the shape
//! `nrtctl stats` prints of a process's datastore): one run's, and a
//! 16-device host run's, matching their reports.

use std::process::Command;

use serde_json::Value;

/// Nearest-rank percentile `p` of `v` (sorted, non-empty), seconds.
fn rank(v: &[u64], p: usize) -> f64 {
    let r = (p * v.len()).div_ceil(100).max(1);
    v[r - 1] as f64 / 1e6
}

/// A summary's `latency_stats` entry holds the percentiles of `want` (sorted),
/// each to the microsecond.
fn check_percentiles(got: &Value, want: &[u64], what: &str) {
    for (k, p) in [("p0", 0), ("p1", 1), ("p25", 25), ("p50", 50), ("p75", 75), ("p99", 99), ("p100", 100)] {
        let g = got[k].as_f64().unwrap_or_else(|| panic!("{what}: {k} missing in {got}"));
        assert!((g - rank(want, p)).abs() < 1e-9, "{what}: {k} {g}, the samples {want:?} give {}", rank(want, p));
    }
}

fn nrt_sim(args: &[&str]) -> Value {
    let o = Command::new(env!("CARGO_BIN_EXE_nrt-sim")).args(args).output().expect("nrt-sim runs");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{args:?}: {out}\n{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}: {out}"))
}

#[test]
fn one_runs_summary_counts_the_execution_once_each_cores_outcome_and_its_duration() {
    for (scenario, field, error) in [
        ("healthy-2core", "completed", None),
        ("nan", "completed_with_num_err", Some("numerical")),
        ("hang", "timed_out", None),
        ("ecc-ue", "completed_with_err", Some("hardware")),
    ] {
        let v = nrt_sim(&["run", "--scenario", scenario, "--json", "--timeout-s", "1"]);
        let es = &v["execution_stats"];
        let cores = v["cores"].as_array().unwrap();
        // The one execution in its status's field only; per NC, the cores with
        // the request's status in its field, the clean ones as completed.
        let with = cores.iter().filter(|c| c["exec_ret"] == v["status"]).count() as u64;
        let clean = cores.iter().filter(|c| c["exec_ret"] == 0).count() as u64;
        assert!(with >= 1, "{scenario}: {v}");
        let summary = es["execution_summary"].as_object().unwrap();
        let counted: Vec<(&String, u64)> =
            summary.iter().map(|(k, n)| (k, n.as_u64().unwrap())).filter(|(_, n)| *n != 0).collect();
        assert_eq!(counted, [(&field.to_string(), 1)], "{scenario}: one execution, in one outcome: {es}");
        assert_eq!(es["nc_execution_summary"][field].as_u64(), Some(with), "{scenario}: {es}");
        if field != "completed" {
            assert_eq!(es["nc_execution_summary"]["completed"].as_u64(), Some(clean), "{scenario}: {es}");
        }
        if let Some(e) = error {
            assert_eq!(es["error_summary"][e].as_u64(), Some(with), "{scenario}: {es}");
        }
        let mut d: Vec<u64> = cores.iter().map(|c| c["duration_us"].as_u64().unwrap()).collect();
        d.sort_unstable();
        let lat = &es["latency_stats"]["device_latency"];
        assert_eq!(lat["p0"].as_f64(), Some(d[0] as f64 / 1e6), "{scenario}");
        assert_eq!(lat["p100"].as_f64(), Some(d[d.len() - 1] as f64 / 1e6), "{scenario}");
        // Each core's total latency, as the report says it was counted: the
        // summary's percentiles are those of these values, each the harvest
        // the report times to the microsecond (the virtual clock stands still
        // within a step: the first step and the counter update are the
        // harvest's ends).
        let mut t: Vec<u64> = cores
            .iter()
            .map(|c| c["total_latency_us"].as_u64().unwrap_or_else(|| panic!("{scenario}: a counted total: {c}")))
            .collect();
        t.sort_unstable();
        check_percentiles(&es["latency_stats"]["total_latency"], &t, scenario);
        let elapsed_us = v["elapsed_ms"].as_f64().unwrap() * 1e3;
        assert!(
            t.iter().all(|&x| x as f64 <= elapsed_us + 1e-6 && x as f64 > elapsed_us - 1.0),
            "{scenario}: totals {t:?}, the harvest {elapsed_us} us"
        );
    }
    let text = Command::new(env!("CARGO_BIN_EXE_nrt-sim")).args(["run", "--scenario", "nan"]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("execution_stats") && text.contains("completed_with_num_err"), "{text}");
}

#[test]
fn a_16_device_host_runs_summary_counts_every_lanes_executions_and_cores() {
    let v = nrt_sim(&["run", "--devices", "16", "--inferences", "2", "--json"]);
    let lanes = v["lanes"].as_array().unwrap();
    let lnc = v["lnc"].as_u64().unwrap();
    let ok = lanes.iter().flat_map(|l| l["results"].as_array().unwrap()).filter(|r| r["status"] == 0).count() as u64;
    let per_device = v["cores_per_device"].as_u64().unwrap();
    assert_eq!(ok, 16 * per_device * 2, "16 devices x their logical cores x 2 inferences");
    let es = &v["execution_stats"];
    assert_eq!(es["execution_summary"]["completed"].as_u64(), Some(ok), "each execution once: {es}");
    assert_eq!(es["nc_execution_summary"]["completed"].as_u64(), Some(ok * lnc), "each physical core's: {es}");
    assert!(es["latency_stats"]["device_latency"]["p50"].as_f64().unwrap() > 0.0);
}

/// Every lane of a 16-device host run counts what its own harvests measured:
/// each physical core's device latency samples are its inferences' core
/// durations (`tpb_duration`) in order, its total latency samples the totals
/// the lane's reports carry, each inside the lane's harvest of it; and the
/// command line's summary of the same run is those samples' percentiles.
#[test]
fn a_16_device_host_runs_latencies_are_each_lanes_own() {
    use nrt_core::counters::id::LATENCY_WINDOW;
    use nrt_sim::run::devices::{run_host_traced, HostConfig};
    let cfg = HostConfig { inferences: 2, ..HostConfig::default() };
    let r = run_host_traced(&cfg).expect("the host run");
    let (mut all_device, mut all_total) = (Vec::new(), Vec::new());
    for l in &r.lanes {
        let at = format!("device {} core {}", l.device, l.core);
        assert_eq!(l.counters.len(), usize::from(cfg.lnc), "{at}");
        for (k, block) in l.counters.iter().enumerate() {
            let (mut d, mut t) = ([0u64; LATENCY_WINDOW], [0u64; LATENCY_WINDOW]);
            let n = block.latency_samples(&mut d, &mut t);
            let durations: Vec<u64> = l.times.iter().map(|i| i.cores[k].duration_us).collect();
            let totals: Vec<u64> = l
                .times
                .iter()
                .map(|i| i.cores[k].total_latency_us.unwrap_or_else(|| panic!("{at} pcore {k}: no total counted")))
                .collect();
            assert_eq!(&d[..n], durations.as_slice(), "{at} pcore {k}: device latencies");
            assert_eq!(&t[..n], totals.as_slice(), "{at} pcore {k}: total latencies");
            for (i, inf) in l.times.iter().enumerate() {
                assert!(
                    totals[i] <= inf.harvest_us,
                    "{at} pcore {k} inference {i}: {} us past {}",
                    totals[i],
                    inf.harvest_us
                );
            }
            assert!(durations.iter().all(|&x| x > 0), "{at} pcore {k}: {durations:?}");
            all_device.extend(durations);
            all_total.extend(totals);
        }
    }
    assert_eq!(all_device.len(), 16 * 4 * 2 * 2, "16 devices x 4 lanes x 2 physical cores x 2 inferences");
    all_device.sort_unstable();
    all_total.sort_unstable();
    let v = nrt_sim(&["run", "--devices", "16", "--inferences", "2", "--json"]);
    let lat = &v["execution_stats"]["latency_stats"];
    check_percentiles(&lat["device_latency"], &all_device, "the command line's device latency");
    check_percentiles(&lat["total_latency"], &all_total, "the command line's total latency");
}
