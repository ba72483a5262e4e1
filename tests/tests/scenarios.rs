//! Every named scenario through the library API: status, return code, events.

use nrt_core::event::Event;
use nrt_core::exec::TpbEngState;
use nrt_core::exec::{ExecEvent, ProbeReason};
use nrt_core::nq::{Engine, ErrorClass};
use nrt_sim::{Fault, SimConfig, SCENARIOS};
use nrt_tests::{kinds, outcome, run_cfg, run_named};

#[test]
fn every_scenario_ends_as_expected() {
    assert!(SCENARIOS.len() >= 22);
    for s in SCENARIOS {
        let r = run_named(s.name);
        assert_eq!(outcome(&r), (s.expected.code(), s.expected_rc), "{}: {:?}", s.name, kinds(&r));
        s.evaluate(&r).unwrap_or_else(|why| panic!("{}: {why}", s.name));
        assert!(r.staging.as_ref().is_some_and(|st| st.copy_verified), "{}: staging copy", s.name);
    }
}

#[test]
fn the_issue_list_is_covered_with_the_seed_statuses() {
    let want: &[(&str, u32, u8)] = &[
        ("healthy-1core", 0, 0),
        ("healthy-2core", 0, 0),
        ("hang", 5, 2),
        ("drop-end-overflow", 1204, 2),
        ("ring-overflow", 1204, 2),
        ("dup-start", 1, 2),
        ("nan", 1003, 0),
        ("transient", 1004, 0),
        ("seq-error", 1004, 0),
        ("ecc-ue", 1202, 0),
        ("ecc-ce", 0, 0),
        ("core1-nan", 1003, 0),
        ("barrier-300s", 0, 0),
        ("unexpected-subtype", 1, 2),
        ("tensor-streaming", 0, 0),
        ("cayman-fixup", 0, 0),
        ("corrupt", 1, 2),
        ("hbm-ue", 1201, 2),
        ("hbm-repairable", 1205, 2),
        ("barrier-fail", 1200, 2),
        ("netproxy-fail", 1206, 2),
        ("drop-end", 5, 2),
    ];
    for (name, status, rc) in want {
        let s = nrt_tests::scenario(name);
        assert_eq!((s.expected.code(), s.expected_rc), (*status, *rc), "{name}");
    }
}

#[test]
fn healthy_runs_have_every_engine_complete_with_rescaled_times() {
    for (name, cores) in [("healthy-1core", 1usize), ("healthy-2core", 2)] {
        let r = run_named(name);
        assert_eq!(r.cores.len(), cores);
        assert!(r.events.is_empty(), "{name}: {:?}", kinds(&r));
        for c in &r.cores {
            assert!(c.fatal.is_empty());
            for e in &c.engines {
                assert_eq!(e.state, TpbEngState::Complete);
                let (s, t) = (e.start_us.unwrap(), e.end_us.unwrap());
                // The device clock runs 1.25x fast; rescaled, START is 2..20 us after
                // kickoff and every engine runs 60..400 us of CPU time.
                assert!(s > r.kickoff_us && s <= r.kickoff_us + 20, "{name} {:?} start {s}", e.engine);
                assert!((59..=400).contains(&(t - s)), "{name} {:?} ran {} us", e.engine, t - s);
            }
            let first = c.engines.iter().filter_map(|e| e.start_us).min().unwrap();
            let last = c.engines.iter().filter_map(|e| e.end_us).max().unwrap();
            assert_eq!(c.duration_us, last - first);
        }
        assert_eq!(r.device.records_dropped, 0);
        assert_eq!(r.device.dma_descriptors, 5);
    }
}

#[test]
fn hang_times_out_exactly_at_the_budget_without_the_overflow_bit() {
    let r = run_named("hang");
    // No HBM, DMA or collectives fault: the timeout is classified HANG_ON_COMPUTE.
    assert_eq!(kinds(&r), ["overflow_probe", "core_timeout", "hang_on_compute"]);
    assert!(matches!(
        r.events[0],
        Event::Exec(ExecEvent::OverflowProbe { core: 0, reason: ProbeReason::Timeout, cause: 0, overflow: false, .. })
    ));
    assert!(matches!(
        r.events[1],
        Event::Exec(ExecEvent::CoreTimeout { core: 0, elapsed_ms: 5000, timeout_ms: 5000, .. })
    ));
    assert_eq!(r.events[2], Event::Exec(ExecEvent::HangOnCompute { core: 0 }));
    assert_eq!(r.timeout_ms, 5000);
    assert!(r.elapsed_ns >= 5_000_000_000 && r.elapsed_ns < 5_002_000_000, "{}", r.elapsed_ns);
    assert_eq!(r.cores[0].fatal, ["timeout"]);
    assert_eq!(r.cores[0].engines[Engine::Dve.index()].state, TpbEngState::EndPending);
    assert_eq!(r.cores[1].exec_ret.code(), 0);
}

#[test]
fn overflow_paths_read_intc_bit_29() {
    for name in ["drop-end-overflow", "ring-overflow"] {
        let r = run_named(name);
        let probe = r.events_of("overflow_probe").next().copied();
        assert!(
            matches!(probe, Some(Event::Exec(ExecEvent::OverflowProbe { overflow: true, cause, .. })) if cause & (1 << 29) != 0),
            "{name}: {probe:?}"
        );
        assert!(r.cores[0].fatal.contains(&"overflow"), "{name}");
    }
    let r = run_named("ring-overflow");
    assert!(r.device.ring_full_drops >= 6, "{:?}", r.device);
    assert_eq!(r.config.ring_entries, 4);
}

#[test]
fn matcher_faults_fail_at_once() {
    let r = run_named("dup-start");
    assert!(r.elapsed_ns < 1_000_000, "failed at the second START, not at the timeout");
    assert_eq!(kinds(&r), ["overflow_probe"]);
    let r = run_named("dup-start-overflow");
    assert_eq!(r.cores[0].fatal, ["overflow"]);
    let r = run_named("unexpected-subtype");
    assert!(r.events.iter().any(|e| matches!(
        e,
        Event::Exec(ExecEvent::UnexpectedNotification { core: 0, engine: Engine::Sp, subtype: 9, .. })
    )));
    assert!(r.events_of("overflow_probe").next().is_none(), "unexpected subtypes are not overflow evidence");
    let r = run_named("drop-start");
    assert!(r
        .events
        .iter()
        .any(|e| matches!(e, Event::Exec(ExecEvent::OverflowProbe { reason: ProbeReason::OutOfOrderEnd, .. }))));
}

#[test]
fn error_ring_records_decode_to_their_classes() {
    for (name, class, extra) in [
        ("nan", ErrorClass::Numerical, None),
        ("transient", ErrorClass::Transient, None),
        ("seq-error", ErrorClass::SwSequencer, Some("sequencer_error")),
        ("ecc-ue", ErrorClass::EccUncorrectable, Some("uncorrectable_ecc")),
        ("ecc-ce", ErrorClass::EccCorrectable, Some("correctable_ecc")),
    ] {
        let r = run_named(name);
        assert!(
            r.events.iter().any(|e| matches!(e, Event::Exec(ExecEvent::ErrorRecord { class: c, .. }) if *c == class)),
            "{name}"
        );
        if let Some(k) = extra {
            assert_eq!(r.events_of(k).count(), 1, "{name}: {k}");
        }
        let core = if name == "seq-error" { 1 } else { 0 };
        assert_eq!(r.cores[core].err, Some(class), "{name}");
        assert!(r.cores.iter().all(|c| c.engines.iter().all(|e| e.state == TpbEngState::Complete)));
    }
    let r = run_named("core1-nan");
    assert_eq!(r.cores.iter().map(|c| c.exec_ret.code()).collect::<Vec<_>>(), [0, 1003]);
}

#[test]
fn a_300_s_barrier_warns_twice_and_succeeds() {
    let r = run_named("barrier-300s");
    let warnings: Vec<(u64, u32)> = r
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Exec(ExecEvent::BarrierWait { waited_s, threshold_s }) => Some((*waited_s, *threshold_s)),
            _ => None,
        })
        .collect();
    assert_eq!(warnings, [(120, 120), (240, 240)]);
    assert!(r.elapsed_ns >= 300_000_000_000, "the harvest waited out the barrier");
}

#[test]
fn tensor_streaming_wakes_waiters_in_order() {
    let r = run_named("tensor-streaming");
    assert_eq!(r.wakes, [(0, 1), (1, 1), (0, 2), (2, 1)]);
    let seen: Vec<(u16, u16, u32)> = r
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Exec(ExecEvent::TensorCompleted { var_id, output, count, .. }) => Some((*var_id, *output, *count)),
            _ => None,
        })
        .collect();
    assert_eq!(seen, [(100, 0, 1), (101, 1, 1), (100, 0, 2), (102, 2, 1)]);
}

#[test]
fn cayman_fixup_rewrites_the_tag_on_engine_index_2_only() {
    let r = run_named("cayman-fixup");
    let tags: Vec<(Engine, u8)> = r
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Exec(ExecEvent::CustomNotification { engine, tag, .. }) => Some((*engine, *tag)),
            _ => None,
        })
        .collect();
    assert_eq!(tags, [(Engine::Pool, 0xE)]);
    // On sunda the stale tag would be kept: the device stamps the ring's id there.
    let mut cfg = nrt_tests::scenario("cayman-fixup").config();
    cfg.arch = nrt_core::arch::Arch::Sunda;
    let r = run_cfg(&cfg);
    assert!(r
        .events
        .iter()
        .any(|e| matches!(e, Event::Exec(ExecEvent::CustomNotification { engine: Engine::Pool, tag: 6, .. }))));
}

#[test]
fn hbm_faults_reclassify_the_timeout() {
    for (name, core, code) in [("hbm-ue", 0usize, 1201u32), ("hbm-repairable", 1, 1205)] {
        let r = run_named(name);
        assert!(r
            .events
            .iter()
            .any(|e| matches!(e, Event::Exec(ExecEvent::HwFault { status, .. }) if status.code() == code)));
        assert_eq!(r.cores[core].exec_ret.code(), code);
        assert!(r.cores[core].fatal.contains(&"timeout"));
    }
}

#[test]
fn proxy_failures_finalize_with_their_status() {
    let r = run_named("barrier-fail");
    assert_eq!(r.cores[1].fatal, ["barrier_proxy"]);
    assert_eq!(kinds(&r), ["barrier_proxy_failed"]);
    let r = run_named("netproxy-fail");
    assert_eq!(r.cores[0].fatal, ["network_proxy"]);
    assert_eq!(kinds(&r), ["network_proxy_failed"]);
}

#[test]
fn faults_compose() {
    let cfg = SimConfig {
        faults: vec![
            Fault::parse("nan:core=0").unwrap(),
            Fault::parse("ecc-ue:core=1").unwrap(),
            Fault::EccCe { core: 0 },
        ],
        ..SimConfig::default()
    };
    let r = run_cfg(&cfg);
    // 1202 is critical, 1003 medium: the worst wins across cores.
    assert_eq!(outcome(&r), (1202, 0));
    assert_eq!(r.cores.iter().map(|c| c.exec_ret.code()).collect::<Vec<_>>(), [1003, 1202]);
    assert_eq!(r.events_of("correctable_ecc").count(), 1);

    let cfg = SimConfig {
        faults: vec![Fault::parse("hang:core=1,engine=PE").unwrap(), Fault::parse("ecc-ue:core=0").unwrap()],
        timeout_s: 1,
        ..SimConfig::default()
    };
    let r = run_cfg(&cfg);
    assert_eq!(outcome(&r), (1202, 2), "a hang on one core, an ECC UE on the other: critical beats high");
}
