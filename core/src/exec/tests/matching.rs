//! WAIT_CORE: START/END matching, reading the rings, and the overflow/timeout
//! distinction (the INTC probe).

use super::*;

#[test]
fn an_engine_completing_in_the_last_sweep_is_not_timed_out() {
    let mut r = Rig::new(1, 1);
    r.enter_wait_core();
    r.dev.advance_ms(5_000);
    r.dev.run_all(1, 1, 2);
    assert_eq!(r.step(), Step::Done(NrtStatus::Success));
}

#[test]
fn timeout_fires_exactly_at_the_boundary() {
    let mut r = Rig::new(1, 5);
    r.enter_wait_core();
    r.dev.advance_ms(4_999);
    assert_eq!(r.step(), Step::InFlight);
    assert_eq!(r.dev.intc_reads, 0);
    r.dev.advance_ms(1);
    let s = r.step();
    assert_eq!(s, Step::failed(NrtStatus::Timeout));
    assert_eq!(s.code(), 2);
    assert!(r.req.fatal_flag(0, fatal::TIMEOUT));
    assert!(!r.req.fatal_flag(0, fatal::OVERFLOW));
    assert_eq!(r.dev.intc_reads, 1, "one probe, at the boundary");
    assert_eq!(r.dev.count("core_timeout"), 1);
}

#[test]
fn timeout_with_intc_bit_29_is_an_overflow() {
    let mut r = Rig::new(1, 5);
    r.dev.start(0, 0, 10); // the END was eaten
    r.dev.intc_cause[0] = INTC_OVERFLOW;
    r.enter_wait_core();
    r.step();
    assert_eq!(r.req.substate(0, 0), Some(TpbEngState::EndPending));
    r.dev.advance_ms(5_000);
    assert_eq!(r.step(), Step::failed(NrtStatus::ExecSwNqOverflow));
    assert!(r.req.fatal_flag(0, fatal::OVERFLOW));
    // Other bits do not count.
    let mut r = Rig::new(1, 5);
    r.dev.intc_cause[0] = !INTC_OVERFLOW;
    r.enter_wait_core();
    r.dev.advance_ms(5_000);
    assert_eq!(r.step(), Step::failed(NrtStatus::Timeout));
}

#[test]
fn a_real_ring_overflow_is_reported_as_1204() {
    // A 2-entry ring: the device can write one START and one CC record, then drops.
    let mut dev = Box::new(FakeDevice::new(Arch::Sunda, 32));
    let mut nq = FakeDevice::notifications(32);
    let mut req = ExecRequest::new(ExecConfig::new(Arch::Sunda, 1, 5));
    for e in 0..ENGINES_PER_CORE {
        dev.start(0, e, 1);
        dev.record(0, e, Subtype::CC_START, 2);
        assert!(!dev.end(0, e, 3), "no room: dropped");
    }
    assert_eq!(dev.intc_cause[0] & INTC_OVERFLOW, INTC_OVERFLOW);
    let mut s = Step::InFlight;
    for _ in 0..8 {
        s = req.progress_one_step(&mut *dev, &mut nq);
    }
    assert_eq!(s, Step::InFlight);
    dev.advance_ms(5_000);
    assert_eq!(req.progress_one_step(&mut *dev, &mut nq), Step::failed(NrtStatus::ExecSwNqOverflow));
}

#[test]
fn out_of_order_start_probes_the_intc() {
    for (bit, want) in [(0, NrtStatus::Failure), (INTC_OVERFLOW, NrtStatus::ExecSwNqOverflow)] {
        let mut r = Rig::new(1, 5);
        r.dev.intc_cause[0] = bit;
        r.dev.start(0, 1, 10);
        r.dev.start(0, 1, 11);
        r.enter_wait_core();
        assert_eq!(r.step(), Step::failed(want));
        assert_eq!(r.dev.intc_reads, 1);
        assert_eq!(r.req.fatal_flag(0, fatal::OVERFLOW), bit != 0);
        let probe = r.dev.events_of("overflow_probe").next().copied();
        assert!(matches!(
            probe,
            Some(Event::Exec(ExecEvent::OverflowProbe { reason: ProbeReason::OutOfOrderStart, .. }))
        ));
        let probe = probe.and_then(|e| e.exec().copied()).unwrap();
        assert_eq!(probe.engines(), EngineSet::from(Engine::Act), "the engine whose START came twice");
        assert!(probe.to_string().starts_with("core 0: Expected state to be start pending (ACT); "), "{probe}");
    }
}

#[test]
fn end_without_start_probes_the_intc() {
    for (bit, want) in [(0, NrtStatus::Failure), (INTC_OVERFLOW, NrtStatus::ExecSwNqOverflow)] {
        let mut r = Rig::new(1, 5);
        r.dev.intc_cause[0] = bit;
        r.dev.end(0, 3, 10);
        r.enter_wait_core();
        assert_eq!(r.step(), Step::failed(want));
        assert_eq!(r.req.fatal_flag(0, fatal::END_OVERFLOW), bit != 0);
        let probe = r.dev.events_of("overflow_probe").next().and_then(|e| e.exec().copied()).unwrap();
        assert_eq!(probe.engines(), EngineSet::from(Engine::Dve), "the engine whose END came first");
    }
}

#[test]
fn unexpected_subtypes_fail_with_generic_status() {
    for sub in [0u16, 1, 4, 5, 9, 17, 0xFFFF] {
        let mut r = Rig::new(1, 5);
        r.dev.record(0, 2, sub, 1);
        r.enter_wait_core();
        assert_eq!(r.step(), Step::failed(NrtStatus::Failure), "subtype {sub}");
        let ev = r.dev.events_of("unexpected_notification").next().copied();
        assert!(
            matches!(ev, Some(Event::Exec(ExecEvent::UnexpectedNotification { engine: Engine::Pool, subtype, .. })) if subtype == sub)
        );
        // The seed's text, spelt right, G-SEED-TYPO.
        let text = ev.map(|e| e.to_string()).unwrap_or_default();
        assert!(text.contains("core 0: Received unexpected notification on engine POOL"), "{text}");
        assert!(text.contains(&format!("Notification Type: {sub}")), "{text}");
        assert_eq!(r.dev.intc_reads, 0, "unexpected subtypes are not overflow evidence");
    }
}

#[test]
fn sixteen_entries_per_engine_per_sweep() {
    let mut r = Rig::new(1, 5);
    for i in 0..20 {
        r.dev.record(0, 0, Subtype::CC_START, 100 + i);
    }
    r.dev.run_all(1, 1000, 2000);
    r.enter_wait_core();
    assert_eq!(r.step(), Step::InFlight);
    assert_eq!(r.nq.ring(0, 4).unwrap().cursor(), 16 * 16, "16 records read from PE");
    assert_eq!(r.nq.ring(0, 5).unwrap().cursor(), 2 * 16, "ACT: START and END");
    assert_eq!(r.req.substate(0, 0), Some(TpbEngState::StartPending));
    assert_eq!(r.step(), Step::Done(NrtStatus::Success));
    assert_eq!(r.nq.ring(0, 4).unwrap().cursor(), 22 * 16);
}

#[test]
fn reading_stops_at_complete_leaving_later_records() {
    let mut r = Rig::new(1, 5);
    r.dev.run_all(1, 1, 2);
    r.dev.record(0, 0, Subtype::CC_END, 3);
    r.enter_wait_core();
    assert_eq!(r.step(), Step::Done(NrtStatus::Success));
    assert_eq!(r.nq.ring(0, 4).unwrap().cursor(), 2 * 16);
}

#[test]
fn nq_tag_mismatch_is_reported_only() {
    let mut r = Rig::new(1, 5);
    // A CC start on SP's ring (NQ 8) whose tag says 31: it comes before SP's START,
    // so the sweep reads it (the phase is stamped by the fake device).
    let e = crate::nq::RawEntry::new(Subtype::CC_START, 31, 0, 0, 5_000_000);
    assert!(r.dev.push_raw(0, 8, e.to_array()));
    r.dev.run_all(1, 1, 2);
    r.enter_wait_core();
    assert_eq!(r.finish(), Step::Done(NrtStatus::Success));
    assert_eq!(r.nq.ring(0, 8).unwrap().cursor(), 3 * 16, "the mismatched record was read");
    let got: Vec<&Event> = r.dev.events_of("nq_tag_mismatch").collect();
    assert_eq!(got, [&Event::Exec(ExecEvent::NqTagMismatch { core: 0, engine: Engine::Sp, tag: 31, expected: 8 })]);
    // Acted on as the ring's record all the same: its CC start was kept.
    assert_ne!(r.req.notif_ts(0, ts_slot::CC_START), Some(0));
    // START and END carry the ring's own tag: no more reports.
    assert_eq!(r.dev.count("nq_tag_mismatch"), 1);
}

#[test]
fn intc_read_failure_counts_as_no_overflow() {
    let mut r = Rig::new(1, 5);
    r.dev.intc_fail = true;
    r.dev.intc_cause[0] = INTC_OVERFLOW;
    r.enter_wait_core();
    r.dev.advance_ms(5_000);
    assert_eq!(r.step(), Step::failed(NrtStatus::Timeout));
    assert_eq!(r.dev.count("intc_read_failed"), 1);
}

#[test]
fn the_overflow_probe_reads_the_error_trigger_block_of_the_cores_tpb() {
    let mut r = Rig::new(2, 5);
    r.req = ExecRequest::new(ExecConfig { tpb_idx: [3, 7], ..ExecConfig::new(Arch::Sunda, 2, 5) });
    r.enter_wait_core();
    r.dev.advance_ms(5_000);
    assert_eq!(r.step(), Step::failed(NrtStatus::Timeout));
    assert_eq!(&r.dev.intc_blocks[..], &[(0, 3), (1, 7)], "block = the device TPB index (G-ERRTRIG)");
    assert_eq!((errtrig_block_of_tpb(0), errtrig_block_of_tpb(9)), (0, 9));
}

#[test]
fn an_engine_that_started_in_one_sweep_ends_in_a_later_one() {
    let mut r = Rig::new(1, 5);
    for e in 0..ENGINES_PER_CORE {
        r.dev.start(0, e, 10);
    }
    r.enter_wait_core();
    assert_eq!(r.step(), Step::InFlight);
    for e in 0..ENGINES_PER_CORE {
        assert_eq!(r.req.substate(0, e), Some(TpbEngState::EndPending));
        r.dev.end(0, e, 20);
    }
    assert_eq!(r.step(), Step::Done(NrtStatus::Success));
}

#[test]
fn a_timeout_names_the_engines_that_never_wrote_start_or_end_and_marks_the_core() {
    let mut r = Rig::new(2, 1);
    // Core 0: PE and ACT complete, DVE started without END, POOL and SP never started.
    r.dev.start(0, 0, 10);
    r.dev.end(0, 0, 20);
    r.dev.start(0, 1, 10);
    r.dev.end(0, 1, 20);
    r.dev.start(0, 3, 10);
    // Core 1: every engine done.
    for e in 0..ENGINES_PER_CORE {
        r.dev.start(1, e, 10);
        r.dev.end(1, e, 20);
    }
    r.enter_wait_core();
    assert_eq!(r.step(), Step::InFlight);
    r.dev.advance_ms(1_000);
    assert_eq!(r.step(), Step::failed(NrtStatus::Timeout));
    let no_end = EngineSet::from(Engine::Dve);
    let no_start = Engine::ALL[Engine::Sp.index()..].iter().fold(EngineSet::from(Engine::Pool), |s, e| s.with(*e));
    assert_eq!(r.req.engines_in(0, TpbEngState::EndPending), no_end);
    assert_eq!(r.req.engines_in(0, TpbEngState::StartPending), no_start);
    assert_eq!(r.req.engines_in(0, TpbEngState::Complete), EngineSet::from(Engine::Pe).with(Engine::Act));
    assert_eq!(r.req.engines_in(2, TpbEngState::Complete), EngineSet::EMPTY);
    assert!(r.req.timed_out(0));
    assert!(!r.req.timed_out(1), "core 1 completed");
    assert!(!r.req.timed_out(2) && !r.req.timed_out(8) && !r.req.timed_out(usize::MAX), "no such core");
    let e = r
        .dev
        .events
        .iter()
        .find_map(|e| match e {
            Event::Exec(x @ ExecEvent::CoreTimeout { .. }) => Some(*x),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        e,
        ExecEvent::CoreTimeout {
            core: 0,
            elapsed_ms: 1_000,
            timeout_ms: 1_000,
            status: NrtStatus::Timeout,
            no_start,
            no_end
        }
    );
    assert_eq!((e.core(), e.engines()), (Some(0), no_start.union(no_end)));
    let probe = r.dev.events_of("overflow_probe").next().and_then(|e| e.exec().copied()).unwrap();
    assert_eq!(probe.engines(), no_start.union(no_end), "the probe at the timeout names the pending engines");
    assert!(probe.to_string().starts_with("core 0: Engine still pending at the timeout (POOL,DVE,SP); "), "{probe}");
    let text = "engines still pending after 1000 ms (budget 1000 ms): NRT_TIMEOUT (5); started, never wrote END: DVE; \
                never wrote START: POOL,SP";
    assert_eq!(e.message().to_string(), text);
    assert_eq!(e.to_string(), format!("core 0: {text}"));
}

#[test]
fn only_the_core_that_timed_out_is_marked() {
    let mut r = Rig::new(2, 1);
    r.dev.run_all(1, 1, 2);
    r.dev.start(1, 4, 1); // core 1 SP starts and never ends
    r.enter_wait_core();
    assert_eq!(r.step(), Step::InFlight);
    r.dev.advance_ms(1_000);
    assert_eq!(r.step(), Step::failed(NrtStatus::Timeout));
    assert!(r.req.timed_out(1) && !r.req.timed_out(0), "core 1 timed out, core 0 completed");
    assert_eq!(r.req.engines_in(1, TpbEngState::EndPending), EngineSet::from(Engine::Sp));
}

#[test]
fn a_request_that_did_not_time_out_marks_no_core() {
    let mut r = Rig::new(2, 1);
    r.dev.run_all(2, 1, 2);
    r.enter_wait_core();
    assert_eq!(r.finish(), Step::Done(NrtStatus::Success));
    assert!(!r.req.timed_out(0) && !r.req.timed_out(1));
    assert_eq!(r.req.engines_in(1, TpbEngState::Complete).bits(), (1 << ENGINES_PER_CORE) - 1);
}
