//! `nrt-sim run --devices N`: a host's worth of inferences through poll groups,
//! faults on some devices, the others completing normally.

use std::process::{Command, Output};

use nrt_core::NrtStatus;
use nrt_sim::run::devices::{run_host, HostConfig};
use nrt_sim::{run, Fault, SimConfig};

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
fn sixteen_devices_four_pollers_faults_on_two_devices() {
    let o = nrt_sim(&[
        "run",
        "--devices",
        "16",
        "--cores",
        "4",
        "--inferences",
        "2",
        "--pollers",
        "4",
        "--inject",
        "hang:core=0,engine=DVE",
        "--fault-devices",
        "3,12",
        "--timeout-s",
        "1",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let per_device = v["per_device"].as_array().unwrap();
    assert_eq!(per_device.len(), 16);
    for d in per_device {
        let id = d["device"].as_u64().unwrap();
        let st = d["statuses"].as_array().unwrap();
        assert_eq!(st.len(), 1, "device {id}: {st:?}");
        let (status, rc) = if id == 3 || id == 12 { (5, 2) } else { (0, 0) };
        assert_eq!(
            (st[0]["status"].as_u64(), st[0]["rc"].as_u64(), st[0]["count"].as_u64()),
            (Some(status), Some(rc), Some(8)),
            "device {id}: 4 lanes x 2 inferences"
        );
    }
    let groups = v["poll_groups"].as_array().unwrap();
    assert_eq!(groups.len(), 4);
    for g in groups {
        assert_eq!(g["lanes"].as_u64(), Some(16));
        assert_eq!(g["ring_full_drops"].as_u64(), Some(0));
    }
    let totals: Vec<(u64, u64)> = v["totals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["status"].as_u64().unwrap(), t["count"].as_u64().unwrap()))
        .collect();
    assert_eq!(totals, [(0, 112), (5, 16)]);
    assert_eq!(v["lanes"].as_array().unwrap().len(), 64);
}

#[test]
fn text_output_names_every_device_poller_and_the_totals() {
    let o = nrt_sim(&["run", "--devices", "4", "--cores", "2", "--pollers", "2", "--inject", "nan:core=1"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.starts_with("host: 4 devices x 2 logical cores (2 physical each) = 8 lanes"), "{out}");
    assert!(out.contains("faults on every device: nan"), "{out}");
    assert!(out.contains("device  3: 2 x 1003 NRT_EXEC_COMPLETED_WITH_NUM_ERR (rc 0)"), "{out}");
    assert!(out.contains("poller 1: devices 2-3, 4 lanes"), "{out}");
    assert!(out.lines().last().unwrap().starts_with("total: 8 inferences: 8 x 1003"), "{out}");
}

/// Without `--pollers`, each device gets its own poller (the default).
#[test]
fn by_default_each_device_has_its_own_poller() {
    let o = nrt_sim(&["run", "--devices", "3", "--cores", "1"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    for d in 0..3 {
        assert!(out.contains(&format!("poller {d}: devices {d}-{d}, 1 lanes")), "{out}");
    }
    assert!(!out.contains("poller 3:"), "{out}");
}

/// Every device of a host run ends as the single run of the same device does:
/// the faulted one with the fault's status, the clean one with success.
#[test]
fn each_device_ends_as_its_single_run_does() {
    let faults = [
        "hang:core=1,engine=PE",
        "nan:core=0",
        "overflow:core=0,engine=ACT",
        "barrier-fail:core=1",
        "netproxy-fail:core=0",
        "dup-start:core=0,engine=POOL",
        "ecc-ue:core=1",
        "hbm-ue:core=0",
    ];
    for spec in faults {
        let fault = Fault::parse(spec).unwrap();
        let sim = SimConfig { timeout_s: 1, faults: vec![fault], ..SimConfig::default() };
        let single = run(&sim).unwrap();
        let clean = run(&SimConfig { faults: Vec::new(), ..sim.clone() }).unwrap();
        for batching in [true, false] {
            let host = HostConfig {
                sim: sim.clone(),
                devices: 3,
                cores: 1,
                lnc: 2,
                inferences: 1,
                pollers: 1,
                fault_devices: vec![1],
                head_batching: batching,
            };
            let r = run_host(&host).unwrap();
            let got: Vec<_> = r.lanes.iter().map(|l| l.results[0]).collect();
            let want = [(clean.step, clean.status), (single.step, single.status), (clean.step, clean.status)];
            assert_eq!(got, want, "{spec}, batching {batching}");
        }
        assert_ne!(single.status, NrtStatus::Success, "{spec} is a fault");
    }
}

#[test]
fn host_mode_usage_errors_name_the_flag() {
    for (args, part) in [
        (&["run", "--devices", "0"][..], "--devices"),
        (&["run", "--devices", "65"], "--devices"),
        (&["run", "--devices", "4", "--cores", "5"], "--cores (logical cores per device) must be from 1 to 4"),
        (&["run", "--devices", "4", "--lnc", "1", "--cores", "9"], "--cores"),
        (&["run", "--devices", "4", "--pollers", "5"], "--pollers must be from 1 to the 4 devices"),
        (&["run", "--devices", "4", "--fault-devices", "4", "--inject", "nan:core=0"], "names device 4"),
        (&["run", "--devices", "2", "--threaded"], "--threaded does not combine with --devices"),
        (&["run", "--devices", "2", "--scenario", "healthy"], "--scenario does not combine"),
        (&["run", "--devices", "2", "--inferences", "0"], "--inferences"),
        (&["run", "--devices", "2", "--timeout-s", "4000"], "--timeout-s must be at most 600"),
        (&["run", "--devices", "2", "--inject", "nan:core=1", "--lnc", "1"], "is on core 1"),
        (&["run", "--inferences", "3"], "need --devices N"),
        (&["run", "--pollers", "2"], "need --devices N"),
        (&["run", "--cores", "3"], "cores must be 1 or 2"),
        (&["run", "--devices", "64", "--cores", "4", "--pollers", "1"], "use more --pollers"),
    ] {
        let o = nrt_sim(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stdout(&o));
        assert!(stderr(&o).contains(part), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn batched_and_per_sweep_heads_give_the_same_host() {
    let base = ["run", "--devices", "4", "--cores", "4", "--inferences", "3", "--ring-entries", "4", "--json"];
    let a = nrt_sim(&base);
    let mut every = base.to_vec();
    every.push("--head-every-sweep");
    let b = nrt_sim(&every);
    assert_eq!((a.status.code(), b.status.code()), (Some(0), Some(0)), "{}{}", stderr(&a), stderr(&b));
    let (va, vb): (serde_json::Value, serde_json::Value) =
        (serde_json::from_str(&stdout(&a)).unwrap(), serde_json::from_str(&stdout(&b)).unwrap());
    assert_eq!(va["head_batching"], true);
    assert_eq!(vb["head_batching"], false);
    assert_eq!(va["lanes"], vb["lanes"]);
    assert_eq!(va["totals"][0]["count"], 48);
    assert_eq!(va["totals"][0]["status"], 0);
}
