//! The harvest driven through every path with the seed's values.

use super::*;
use crate::event::Event;
use crate::hal::Delay;
use crate::nq::{Engine, ErrorEntry, Subtype, TsCal};
use crate::testutil::{CountingDelay, FakeDevice, INTC_OVERFLOW};
use core::ops::ControlFlow;

const RING: u32 = 1024; // 64 entries

struct Rig {
    dev: Box<FakeDevice>,
    nq: Notifications,
    req: ExecRequest,
}

impl Rig {
    fn new(cores: u8, timeout_s: u32) -> Rig {
        Rig::with_arch(Arch::Sunda, cores, timeout_s)
    }

    fn with_arch(arch: Arch, cores: u8, timeout_s: u32) -> Rig {
        Rig {
            dev: Box::new(FakeDevice::new(arch, RING)),
            nq: FakeDevice::notifications(RING),
            req: ExecRequest::new(ExecConfig::new(arch, cores, timeout_s)),
        }
    }

    fn step(&mut self) -> (Step, NrtStatus) {
        let mut out = NrtStatus::Other(0xDEAD);
        let s = self.req.progress_one_step(&mut *self.dev, &mut self.nq, &mut out);
        (s, out)
    }

    /// INIT and the barrier transition: two steps, landing in WAIT_CORE.
    fn enter_wait_core(&mut self) {
        assert_eq!(self.step().0, Step::InFlight);
        assert_eq!(self.req.state(), ExecState::WaitBarrierProxy);
        assert_eq!(self.step().0, Step::InFlight);
        assert_eq!(self.req.state(), ExecState::WaitCore);
    }

    fn finish(&mut self) -> (Step, NrtStatus) {
        for _ in 0..64 {
            let r = self.step();
            if r.0 != Step::InFlight {
                return r;
            }
        }
        panic!("did not finish in 64 steps");
    }
}

#[test]
fn request_state_fits_libnrt_size() {
    assert!(core::mem::size_of::<ExecRequest>() <= 472, "{}", core::mem::size_of::<ExecRequest>());
}

#[test]
fn init_arms_the_barrier_wait() {
    let mut r = Rig::new(1, 5);
    assert_eq!(r.req.state(), ExecState::Init);
    let (s, _) = r.step();
    assert_eq!(s, Step::InFlight);
    assert_eq!(s.code(), 1);
    assert_eq!(r.req.state(), ExecState::WaitBarrierProxy);
    assert_eq!(r.req.barrier_threshold_s(), 120);
}

#[test]
fn transition_resets_engines_and_derives_timeout_ms() {
    let mut r = Rig::new(2, 7);
    r.enter_wait_core();
    assert_eq!(r.req.timeout_ms(), 7000);
    for c in 0..2 {
        for e in 0..5 {
            assert_eq!(r.req.substate(c, e), Some(TpbEngState::StartPending));
        }
    }
}

#[test]
fn timeout_ms_does_not_overflow() {
    let mut r = Rig::new(1, u32::MAX);
    r.enter_wait_core();
    assert_eq!(r.req.timeout_ms(), 1000 * u64::from(u32::MAX));
}

#[test]
fn healthy_one_and_two_cores_finish_in_three_steps_without_reading_the_intc() {
    for cores in [1u8, 2] {
        let mut r = Rig::new(cores, 5);
        r.dev.run_all(cores, 10_000, 20_000);
        r.enter_wait_core();
        let (s, st) = r.step();
        assert_eq!((s, st), (Step::Done, NrtStatus::Success), "cores={cores}");
        assert_eq!(s.code(), 0);
        assert_eq!(r.req.state(), ExecState::Done);
        for c in 0..cores as usize {
            for e in 0..5 {
                assert_eq!(r.req.substate(c, e), Some(TpbEngState::Complete));
            }
        }
        assert_eq!(r.dev.intc_reads, 0, "the INTC is never read on the happy path");
        assert_eq!(r.dev.count("core_timeout"), 0);
    }
}

#[test]
fn an_engine_completing_in_the_last_sweep_is_not_timed_out() {
    let mut r = Rig::new(1, 1);
    r.enter_wait_core();
    r.dev.advance_ms(5_000);
    r.dev.run_all(1, 1, 2);
    assert_eq!(r.step(), (Step::Done, NrtStatus::Success));
}

#[test]
fn barrier_warns_at_120_240_480_seconds_and_never_fails() {
    let mut r = Rig::new(1, 5);
    r.dev.barrier_done_at_ns = [u64::MAX; 2];
    r.step(); // INIT at t0
    let t0 = r.dev.now.get();
    let at = |r: &mut Rig, s: u64| {
        r.dev.now.set(t0 + s * 1_000_000_000);
        assert_eq!(r.step().0, Step::InFlight);
        r.dev.count("barrier_wait")
    };
    assert_eq!(at(&mut r, 119), 0);
    assert_eq!(at(&mut r, 120), 1);
    assert_eq!(r.req.barrier_threshold_s(), 240);
    assert_eq!(at(&mut r, 200), 1);
    assert_eq!(at(&mut r, 239), 1);
    assert_eq!(at(&mut r, 240), 2);
    assert_eq!(at(&mut r, 479), 2);
    assert_eq!(at(&mut r, 480), 3);
    assert_eq!(at(&mut r, 10_000), 4, "one warning per poll past the threshold, then it doubles again");
    assert_eq!(r.req.barrier_threshold_s(), 1920);
    let thresholds: Vec<u32> = r
        .dev
        .events_of("barrier_wait")
        .map(|e| match e {
            Event::Exec(ExecEvent::BarrierWait { threshold_s, .. }) => *threshold_s,
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(thresholds, [120, 240, 480, 960]);
    assert_eq!(r.req.state(), ExecState::WaitBarrierProxy);
    // The barrier clears; the core budget starts only now.
    r.dev.barrier_done_at_ns = [0; 2];
    assert_eq!(r.step().0, Step::InFlight);
    assert_eq!(r.req.state(), ExecState::WaitCore);
    r.dev.run_all(1, 1, 2);
    assert_eq!(r.step(), (Step::Done, NrtStatus::Success));
}

#[test]
fn barrier_of_300_s_gives_two_warnings_and_success() {
    let mut r = Rig::new(2, 5);
    r.dev.barrier_done_at_ns = [0, r.dev.now.get() + 300 * 1_000_000_000];
    r.dev.run_all(2, 5, 6);
    r.step();
    for _ in 0..31 {
        r.dev.advance_ms(10_000);
        r.step();
    }
    let (s, st) = r.finish();
    assert_eq!((s, st), (Step::Done, NrtStatus::Success));
    assert_eq!(r.dev.count("barrier_wait"), 2);
}

#[test]
fn barrier_and_network_proxy_failures_finalize_with_their_status() {
    let mut r = Rig::new(2, 5);
    r.dev.barrier_fail[1] = Some(NrtStatus::ExecHwErrCollectives);
    r.step();
    assert_eq!(r.step(), (Step::Error, NrtStatus::ExecHwErrCollectives));
    assert!(r.req.fatal_flag(1, fatal::BARRIER_PROXY));
    assert_eq!(r.dev.count("barrier_proxy_failed"), 1);

    let mut r = Rig::new(2, 5);
    r.dev.network_fail[0] = Some(NrtStatus::NetworkProxyFailure);
    r.enter_wait_core();
    assert_eq!(r.step(), (Step::Error, NrtStatus::NetworkProxyFailure));
    assert!(r.req.fatal_flag(0, fatal::NETWORK_PROXY));
    assert_eq!(r.req.out_info().exec_rets[0], NrtStatus::NetworkProxyFailure);

    // A proxy that fails with "success" is still a failure.
    let mut r = Rig::new(1, 5);
    r.dev.barrier_fail[0] = Some(NrtStatus::Success);
    r.step();
    assert_eq!(r.step(), (Step::Error, NrtStatus::Failure));
}

#[test]
fn timeout_fires_exactly_at_the_boundary() {
    let mut r = Rig::new(1, 5);
    r.enter_wait_core();
    r.dev.advance_ms(4_999);
    assert_eq!(r.step().0, Step::InFlight);
    assert_eq!(r.dev.intc_reads, 0);
    r.dev.advance_ms(1);
    let (s, st) = r.step();
    assert_eq!((s, st), (Step::Error, NrtStatus::Timeout));
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
    assert_eq!(r.step(), (Step::Error, NrtStatus::ExecSwNqOverflow));
    assert!(r.req.fatal_flag(0, fatal::OVERFLOW));
    // Other bits do not count.
    let mut r = Rig::new(1, 5);
    r.dev.intc_cause[0] = !INTC_OVERFLOW;
    r.enter_wait_core();
    r.dev.advance_ms(5_000);
    assert_eq!(r.step(), (Step::Error, NrtStatus::Timeout));
}

#[test]
fn a_real_ring_overflow_is_reported_as_1204() {
    // A 2-entry ring: the device can write one START and one CC record, then drops.
    let mut dev = Box::new(FakeDevice::new(Arch::Sunda, 32));
    let mut nq = FakeDevice::notifications(32);
    let mut req = ExecRequest::new(ExecConfig::new(Arch::Sunda, 1, 5));
    for e in 0..5 {
        dev.start(0, e, 1);
        dev.record(0, e, Subtype::CC_START, 2);
        assert!(!dev.end(0, e, 3), "no room: dropped");
    }
    assert_eq!(dev.intc_cause[0] & INTC_OVERFLOW, INTC_OVERFLOW);
    let mut out = NrtStatus::Success;
    let mut s = Step::InFlight;
    for _ in 0..8 {
        s = req.progress_one_step(&mut *dev, &mut nq, &mut out);
    }
    assert_eq!(s, Step::InFlight);
    dev.advance_ms(5_000);
    assert_eq!(req.progress_one_step(&mut *dev, &mut nq, &mut out), Step::Error);
    assert_eq!(out, NrtStatus::ExecSwNqOverflow);
}

#[test]
fn out_of_order_start_probes_the_intc() {
    for (bit, want) in [(0, NrtStatus::Failure), (INTC_OVERFLOW, NrtStatus::ExecSwNqOverflow)] {
        let mut r = Rig::new(1, 5);
        r.dev.intc_cause[0] = bit;
        r.dev.start(0, 1, 10);
        r.dev.start(0, 1, 11);
        r.enter_wait_core();
        assert_eq!(r.step(), (Step::Error, want));
        assert_eq!(r.dev.intc_reads, 1);
        assert_eq!(r.req.fatal_flag(0, fatal::OVERFLOW), bit != 0);
        let probe = r.dev.events_of("overflow_probe").next().copied();
        assert!(matches!(
            probe,
            Some(Event::Exec(ExecEvent::OverflowProbe { reason: ProbeReason::OutOfOrderStart, .. }))
        ));
    }
}

#[test]
fn end_without_start_probes_the_intc() {
    for (bit, want) in [(0, NrtStatus::Failure), (INTC_OVERFLOW, NrtStatus::ExecSwNqOverflow)] {
        let mut r = Rig::new(1, 5);
        r.dev.intc_cause[0] = bit;
        r.dev.end(0, 3, 10);
        r.enter_wait_core();
        assert_eq!(r.step(), (Step::Error, want));
        assert_eq!(r.req.fatal_flag(0, fatal::END_OVERFLOW), bit != 0);
    }
}

#[test]
fn unexpected_subtypes_fail_with_generic_status() {
    for sub in [0u16, 1, 4, 5, 9, 17, 0xFFFF] {
        let mut r = Rig::new(1, 5);
        r.dev.record(0, 2, sub, 1);
        r.enter_wait_core();
        assert_eq!(r.step(), (Step::Error, NrtStatus::Failure), "subtype {sub}");
        let ev = r.dev.events_of("unexpected_notification").next().copied();
        assert!(
            matches!(ev, Some(Event::Exec(ExecEvent::UnexpectedNotification { engine: Engine::Pool, subtype, .. })) if subtype == sub)
        );
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
    assert_eq!(r.step().0, Step::InFlight);
    assert_eq!(r.nq.ring(0, 4).unwrap().cursor(), 16 * 16, "16 records read from PE");
    assert_eq!(r.nq.ring(0, 5).unwrap().cursor(), 2 * 16, "ACT: START and END");
    assert_eq!(r.req.substate(0, 0), Some(TpbEngState::StartPending));
    assert_eq!(r.step(), (Step::Done, NrtStatus::Success));
    assert_eq!(r.nq.ring(0, 4).unwrap().cursor(), 22 * 16);
}

#[test]
fn reading_stops_at_complete_leaving_later_records() {
    let mut r = Rig::new(1, 5);
    r.dev.run_all(1, 1, 2);
    r.dev.record(0, 0, Subtype::CC_END, 3);
    r.enter_wait_core();
    assert_eq!(r.step(), (Step::Done, NrtStatus::Success));
    assert_eq!(r.nq.ring(0, 4).unwrap().cursor(), 2 * 16);
}

#[test]
fn timestamps_keep_earliest_start_and_latest_end() {
    let mut r = Rig::new(1, 5);
    r.dev.record(0, 0, Subtype::CC_START, 50);
    r.dev.record(0, 0, Subtype::CC_START, 40);
    r.dev.record(0, 0, Subtype::CC_START, 45);
    r.dev.record(0, 0, Subtype::CC_END, 70);
    r.dev.record(0, 0, Subtype::CC_END, 90);
    r.dev.record(0, 0, Subtype::CC_END, 80);
    r.enter_wait_core();
    r.step();
    assert_eq!(r.req.notif_ts(0, ts_slot::CC_START), Some(40));
    assert_eq!(r.req.notif_ts(0, ts_slot::CC_END), Some(90));
}

#[test]
fn timestamps_are_rescaled_on_known_numbers() {
    let mut r = Rig::new(1, 5);
    // PE's device clock runs 1.5x fast.
    r.nq.set_cal(0, 0, TsCal { init_timestamp: 1_000, actual_timestamp_inc: 3, expected_timestamp_inc: 2 });
    r.nq.set_sync_point(0, crate::nq::SyncPoint { dev_us: 0, cpu_us: 5_000_000 });
    r.dev.start(0, 0, 4_000); // 3000 units -> 2000 ns -> 2 us
    r.dev.end(0, 0, 1_501_000); // 1_500_000 units -> 1_000_000 ns -> 1000 us
    for e in 1..5 {
        r.dev.start(0, e, 1_000_000);
        r.dev.end(0, e, 1_200_000);
    }
    r.enter_wait_core();
    assert_eq!(r.step().0, Step::Done);
    assert!(r.req.timestamps_are_cpu_us());
    assert_eq!(r.req.engine_times_us(0, 0), (Some(5_000_002), Some(5_001_000)));
    // identity calibration on ACT: 1_000_000 ns -> 1000 us
    assert_eq!(r.req.engine_times_us(0, 1), (Some(5_001_000), Some(5_001_200)));
    assert_eq!(
        r.req.out_info().tpb_duration_us[0],
        5_001_200 - 5_000_002,
        "latest END (ACT..SP) minus earliest START (PE)"
    );
}

#[test]
fn a_record_that_rescales_to_0_is_still_recorded() {
    let mut r = Rig::new(1, 5);
    // The sync point puts the device's early records before the CPU clock's 0.
    r.nq.set_sync_point(0, crate::nq::SyncPoint { dev_us: 1_000, cpu_us: 0 });
    r.dev.record(0, 0, Subtype::CC_START, 5_000); // 5 us on the device: before the sync point
    r.dev.run_all(1, 2_000_000, 3_000_000);
    assert!(!r.req.ts_recorded(0, ts_slot::CC_START), "nothing kept before a step");
    r.enter_wait_core();
    assert_eq!(r.step().0, Step::Done);
    assert!(r.req.timestamps_are_cpu_us());
    assert_eq!(r.req.notif_ts(0, ts_slot::CC_START), Some(0), "rescaled (and clamped) to 0 us");
    assert!(r.req.ts_recorded(0, ts_slot::CC_START), "a record at 0 us is a record");
    assert_eq!(r.req.notif_ts(0, ts_slot::CC_END), Some(0));
    assert!(!r.req.ts_recorded(0, ts_slot::CC_END), "never recorded");
    assert!(r.req.ts_recorded(0, 0) && r.req.ts_recorded(0, 1), "PE's START and END");
    assert!(!r.req.ts_recorded(0, ts_slot::COUNT) && !r.req.ts_recorded(2, 0), "out of range: none");
}

#[test]
fn zero_actual_increment_is_reported_not_divided() {
    let mut r = Rig::new(1, 5);
    r.nq.set_cal(0, 2, TsCal { init_timestamp: 0, actual_timestamp_inc: 0, expected_timestamp_inc: 1 });
    r.dev.run_all(1, 5_000, 9_000);
    r.enter_wait_core();
    assert_eq!(r.step().0, Step::Done);
    assert_eq!(r.dev.count("timestamp_cal_invalid"), 1);
    assert_eq!(r.req.engine_times_us(0, 2), (Some(5), Some(9)));
}

#[test]
fn custom_records_tensor_completion_and_diagnostics() {
    let mut r = Rig::new(1, 5);
    r.dev.custom(0, 1, 7, 101, 2);
    r.dev.custom(0, 1, 7, 100, 3);
    r.dev.custom(0, 1, 7, 101, 4);
    r.dev.custom(0, 1, 7, 555, 5); // no such output
    r.dev.custom(0, 1, 3, 9, 6); // a diagnostic
    r.dev.run_all(1, 10, 20);
    r.enter_wait_core();
    let (s, st) = r.finish();
    assert_eq!((s, st), (Step::Done, NrtStatus::Success));
    assert_eq!(&r.dev.wakes[..], &[(1, 1), (0, 1), (1, 2)], "waiters woken in order");
    assert_eq!(r.dev.tensors.count(1), 2);
    assert_eq!(r.dev.count("tensor_completed"), 3);
    assert_eq!(r.dev.count("unknown_tensor"), 1);
    assert_eq!(r.dev.count("custom_notification"), 1);
}

#[test]
fn invalid_custom_sub_id_fails() {
    let mut r = Rig::new(1, 5);
    r.dev.custom(0, 0, 11, 0, 1);
    r.enter_wait_core();
    assert_eq!(r.step(), (Step::Error, NrtStatus::Failure));
    assert_eq!(r.dev.count("bad_custom_sub_id"), 1);
}

#[test]
fn cayman_custom_fixup_rewrites_the_tag_on_engine_index_2_only() {
    let tag_of = |arch, eng| {
        let mut r = Rig::with_arch(arch, 1, 5);
        r.dev.custom(0, eng, 3, 0, 1);
        r.enter_wait_core();
        r.step();
        let tag = match r.dev.events_of("custom_notification").next() {
            Some(Event::Exec(ExecEvent::CustomNotification { tag, .. })) => *tag,
            other => panic!("{other:?}"),
        };
        tag
    };
    assert_eq!(tag_of(Arch::Cayman, 2), 0xE);
    assert_eq!(tag_of(Arch::Mariana, 2), 0xE);
    assert_eq!(tag_of(Arch::Sunda, 2), 6, "sunda trusts the field");
    assert_eq!(tag_of(Arch::Cayman, 3), 7, "DVE's index 3 is left alone");
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
    assert_eq!(r.finish(), (Step::Done, NrtStatus::Success));
    assert_eq!(r.nq.ring(0, 8).unwrap().cursor(), 3 * 16, "the mismatched record was read");
    let got: Vec<&Event> = r.dev.events_of("nq_tag_mismatch").collect();
    assert_eq!(got, [&Event::Exec(ExecEvent::NqTagMismatch { core: 0, engine: Engine::Sp, tag: 31, expected: 8 })]);
    // Acted on as the ring's record all the same: its CC start was kept.
    assert_ne!(r.req.notif_ts(0, ts_slot::CC_START), Some(0));
    // START and END carry the ring's own tag: no more reports.
    assert_eq!(r.dev.count("nq_tag_mismatch"), 1);
}

fn with_error(entries: &[ErrorEntry], healthy: bool) -> Rig {
    let mut r = Rig::new(1, 5);
    for e in entries {
        assert!(r.dev.error(0, *e));
    }
    if healthy {
        r.dev.run_all(1, 1, 2);
    }
    r.enter_wait_core();
    r
}

#[test]
fn error_classes_map_to_the_seed_statuses() {
    let cases: &[(u16, NrtStatus, &str)] = &[
        (1, NrtStatus::ExecCompletedWithNumErr, ""),
        (2, NrtStatus::ExecCompletedWithErr, ""),
        (8, NrtStatus::ExecCompletedWithErr, "sequencer_error"),
        (4, NrtStatus::ExecHwErrNcUe, "uncorrectable_ecc"),
        (3, NrtStatus::Success, "correctable_ecc"),
        (6, NrtStatus::ExecHwErrRepairableHbmUe, ""),
        (0, NrtStatus::ExecCompletedWithErr, ""),
        (300, NrtStatus::ExecCompletedWithErr, ""),
    ];
    for &(sub, want, ev) in cases {
        let mut r = with_error(&[ErrorEntry::new(sub, 0, 77, 1000)], true);
        // Clean completion: return 0 even with an error status (seed FINALIZE).
        assert_eq!(r.step(), (Step::Done, want), "subtype {sub}");
        assert_eq!(r.dev.count("error_record"), 1);
        if !ev.is_empty() {
            assert_eq!(r.dev.count(ev), 1, "{ev}");
        }
        assert_eq!(r.nq.errors_len(), 1, "kept for subscribers");
    }
    let r = {
        let mut r = with_error(&[ErrorEntry::new(8, 0, 1234, 1)], true);
        r.step();
        r
    };
    assert!(r.dev.events.iter().any(|e| matches!(e, Event::Exec(ExecEvent::SequencerError { code: 1234, .. }))));
}

#[test]
fn error_sweep_dedups_per_subtype_but_keeps_every_record() {
    let nan = ErrorEntry::new(1, 0, 0, 1);
    let mut r = with_error(&[nan, nan, nan, ErrorEntry::new(2, 0, 0, 2), nan], true);
    assert_eq!(r.step(), (Step::Done, NrtStatus::ExecCompletedWithErr), "1004 is critical, 1003 medium");
    assert_eq!(r.dev.count("error_record"), 2);
    assert_eq!(r.nq.errors_len(), 5);
    assert_eq!(r.req.out_info().err[0], Some(ErrorClass::Numerical));
}

#[test]
fn unusually_large_error_count_warns() {
    let es: Vec<ErrorEntry> = (0..40).map(|i| ErrorEntry::new(3, 0, 0, i)).collect();
    let mut r = with_error(&es, true);
    assert_eq!(r.step(), (Step::Done, NrtStatus::Success));
    assert!(r.dev.events.iter().any(|e| matches!(e, Event::Exec(ExecEvent::ErrorCountLarge { count: 40, .. }))));
    let mut r = with_error(&es[..32], true);
    r.step();
    assert_eq!(r.dev.count("error_count_large"), 0);
}

#[test]
fn errors_are_swept_on_the_fault_path_too() {
    let mut r = with_error(&[ErrorEntry::new(4, 0, 0, 1)], false);
    r.dev.advance_ms(5_000);
    assert_eq!(r.step(), (Step::Error, NrtStatus::ExecHwErrNcUe), "1202 critical beats 5 high");
    assert!(r.req.fatal_flag(0, fatal::TIMEOUT));
}

#[test]
fn priority_reconciles_the_cores() {
    let mut r = Rig::new(2, 5);
    r.dev.run_all(2, 1, 2);
    r.dev.error(1, ErrorEntry::new(1, 0, 0, 5));
    r.enter_wait_core();
    assert_eq!(r.step(), (Step::Done, NrtStatus::ExecCompletedWithNumErr));
    assert_eq!(r.req.out_info().exec_rets, [NrtStatus::Success, NrtStatus::ExecCompletedWithNumErr]);

    // Core 0 hangs (5, high), core 1 has an uncorrectable ECC (1202, critical).
    let mut r = Rig::new(2, 5);
    for e in 0..5 {
        r.dev.start(1, e, 1);
        r.dev.end(1, e, 2);
    }
    r.dev.error(1, ErrorEntry::new(4, 0, 0, 5));
    r.enter_wait_core();
    r.dev.advance_ms(5_000);
    assert_eq!(r.step(), (Step::Error, NrtStatus::ExecHwErrNcUe));
    assert_eq!(r.req.out_info().exec_rets, [NrtStatus::Timeout, NrtStatus::ExecHwErrNcUe]);
}

#[test]
fn timeout_is_classified_hbm_then_dma_then_collectives_then_hang_on_compute() {
    use NrtStatus as S;
    let all: &[&str] = &["hbm", "dma", "cc"];
    #[allow(clippy::type_complexity)]
    let cases: &[(Option<NrtStatus>, bool, bool, NrtStatus, TimeoutCause, &[&str])] = &[
        (Some(S::ExecHwErrHbmUe), true, true, S::ExecHwErrHbmUe, TimeoutCause::HbmUe(S::ExecHwErrHbmUe), &["hbm"]),
        // COMPLETE-1: a repairable HBM UE at the timeout is propagated as 1205.
        (
            Some(S::ExecHwErrRepairableHbmUe),
            false,
            false,
            S::ExecHwErrRepairableHbmUe,
            TimeoutCause::HbmUe(S::ExecHwErrRepairableHbmUe),
            &["hbm"],
        ),
        (None, true, true, S::ExecHwErrDmaAbort, TimeoutCause::DmaAbort, &["hbm", "dma"]),
        (None, false, true, S::ExecHwErrCollectives, TimeoutCause::Collectives, all),
        (None, false, false, S::Timeout, TimeoutCause::HangOnCompute, all),
        // A probe answering with a milder status cannot erase the timeout and
        // counts as no answer: the later probes are still asked.
        (Some(S::Success), false, false, S::Timeout, TimeoutCause::HangOnCompute, all),
        (Some(S::Failure), false, true, S::ExecHwErrCollectives, TimeoutCause::Collectives, all),
        (Some(S::Timeout), true, false, S::ExecHwErrDmaAbort, TimeoutCause::DmaAbort, &["hbm", "dma"]),
    ];
    for &(hbm, abort, cc, want, cause, asked) in cases {
        let mut r = Rig::new(1, 5);
        r.dev.hbm[0] = hbm;
        r.dev.dma_abort[0] = abort;
        r.dev.collectives_stuck[0] = cc;
        r.enter_wait_core();
        r.dev.advance_ms(5_000);
        let ctx = (hbm, abort, cc);
        assert_eq!(r.step(), (Step::Error, want), "{ctx:?}");
        assert_eq!(r.req.out_info().exec_rets[0], want, "{ctx:?}");
        assert_eq!(r.req.out_info().timeout_cause, [Some(cause), None], "{ctx:?}");
        let probes: Vec<&str> = r
            .dev
            .fault_probes
            .iter()
            .map(|(p, c)| {
                assert_eq!(*c, 0);
                *p
            })
            .collect();
        assert_eq!(probes, asked, "{ctx:?}: asked in the seed's order, stopping at the first answer");
        let hang = cause == TimeoutCause::HangOnCompute;
        assert_eq!(r.dev.count("hang_on_compute"), usize::from(hang), "{ctx:?}");
        assert_eq!(r.dev.count("hw_fault"), usize::from(!hang), "{ctx:?}");
        if !hang {
            assert!(r.dev.events.contains(&Event::Exec(ExecEvent::HwFault { core: 0, status: want })), "{ctx:?}");
        }
        assert_eq!(cause.status(), want);
    }
}

#[test]
fn fault_probes_are_not_asked_on_a_clean_run_or_an_overflow() {
    // A clean run.
    let mut r = Rig::new(1, 5);
    r.dev.hbm[0] = Some(NrtStatus::ExecHwErrHbmUe);
    r.dev.dma_abort[0] = true;
    r.dev.collectives_stuck[0] = true;
    r.dev.run_all(1, 1, 2);
    r.enter_wait_core();
    assert_eq!(r.step(), (Step::Done, NrtStatus::Success));
    assert!(r.dev.fault_probes.is_empty());
    assert_eq!(r.req.out_info().timeout_cause, [None, None]);

    // An overflow at the timeout (1204, high): an HBM UE (1201, critical) would
    // outrank it if HBM were consulted; the seed consults it on the timeout only.
    let mut r = Rig::new(1, 5);
    r.dev.hbm[0] = Some(NrtStatus::ExecHwErrHbmUe);
    r.dev.dma_abort[0] = true;
    r.dev.collectives_stuck[0] = true;
    r.dev.intc_cause[0] = INTC_OVERFLOW;
    r.enter_wait_core();
    r.dev.advance_ms(5_000);
    assert_eq!(r.step(), (Step::Error, NrtStatus::ExecSwNqOverflow));
    assert!(r.dev.fault_probes.is_empty(), "{:?}", r.dev.fault_probes);
    assert_eq!(r.req.out_info().timeout_cause, [None, None]);
    assert_eq!(r.dev.count("hw_fault") + r.dev.count("hang_on_compute"), 0);

    // An out-of-order record found as an overflow: not consulted either.
    let mut r = Rig::new(1, 5);
    r.dev.hbm[0] = Some(NrtStatus::ExecHwErrHbmUe);
    r.dev.intc_cause[0] = INTC_OVERFLOW;
    r.dev.end(0, 0, 1);
    r.enter_wait_core();
    assert_eq!(r.step(), (Step::Error, NrtStatus::ExecSwNqOverflow));
    assert!(r.dev.fault_probes.is_empty());
}

#[test]
fn a_custom_sub_id_is_the_u16_at_4_so_byte_5_counts() {
    // data[4] = 7 (tensor completion) but data[5] = 1: the u16 @4 is 0x107, outside
    // the 11-entry table, so the record is refused, not taken as a tensor
    // completion (G-SUBID-WIDTH).
    let mut r = Rig::new(1, 5);
    let mut e = crate::nq::RawEntry::new(Subtype::CUSTOM, 4, 0, 0x0107, 1);
    e.set_isa_line_lo(100);
    let bytes = e.to_array();
    assert_eq!((bytes[4], bytes[5]), (7, 1));
    r.dev.push_raw(0, 4, bytes);
    r.enter_wait_core();
    assert_eq!(r.step(), (Step::Error, NrtStatus::Failure));
    assert!(r.dev.events.contains(&Event::Exec(ExecEvent::BadCustomSubId {
        core: 0,
        engine: Engine::Pe,
        sub_id: 0x107
    })));
    assert_eq!(r.dev.count("tensor_completed"), 0);
    assert!(r.dev.wakes.is_empty());
}

#[test]
fn done_is_terminal() {
    let mut r = Rig::new(1, 5);
    r.dev.start(0, 0, 1);
    r.dev.start(0, 0, 1);
    r.enter_wait_core();
    let first = r.step();
    assert_eq!(first, (Step::Error, NrtStatus::Failure));
    let reads = r.dev.slot_reads;
    let events = r.dev.events.len();
    r.dev.run_all(1, 1, 2);
    for _ in 0..3 {
        assert_eq!(r.step(), first);
    }
    assert_eq!(r.dev.slot_reads, reads);
    assert_eq!(r.dev.events.len(), events);
    assert_eq!(r.req.result(), Some(first));
}

#[test]
fn ring_table_problems_fail_cleanly() {
    let mut r = Rig::new(1, 5);
    r.nq.set_infer_status_nqs(&[4, 5, 6, 7]).unwrap();
    r.step();
    assert_eq!(r.step(), (Step::Error, NrtStatus::Failure));
    assert_eq!(r.dev.count("nq_count_mismatch"), 1);

    let mut r = Rig::new(2, 5);
    r.nq = Notifications::new();
    r.nq.bind_core(0, RING).unwrap();
    r.step();
    assert_eq!(r.step(), (Step::Error, NrtStatus::Failure));
    assert_eq!(r.dev.count("bad_ring"), 1);

    let mut r = Rig::new(1, 5);
    r.dev.fail_ring = Some((0, 6));
    r.enter_wait_core();
    assert_eq!(r.step(), (Step::Error, NrtStatus::Failure));
    assert_eq!(r.dev.count("ring_read_failed"), 1);
}

#[test]
fn intc_read_failure_counts_as_no_overflow() {
    let mut r = Rig::new(1, 5);
    r.dev.intc_fail = true;
    r.dev.intc_cause[0] = INTC_OVERFLOW;
    r.enter_wait_core();
    r.dev.advance_ms(5_000);
    assert_eq!(r.step(), (Step::Error, NrtStatus::Timeout));
    assert_eq!(r.dev.count("intc_read_failed"), 1);
}

#[test]
fn head_is_written_back_after_each_batch() {
    let mut r = Rig::new(1, 5);
    r.dev.run_all(1, 1, 2);
    r.enter_wait_core();
    r.step();
    assert_eq!(r.dev.head_writes, 5, "one per engine ring (the error ring was empty)");
}

/// Under batching (G-HEAD-BATCH) HEAD waits for half a ring, but a batch that
/// ends in error hands back what it read at once, from the one step itself:
/// a caller driving `progress_one_step` directly has no completion hook.
#[test]
fn a_batch_that_fails_hands_its_reads_back_at_once_under_batching() {
    let mut r = Rig::new(1, 5);
    r.nq.set_head_batching(true);
    // PE starts twice: the matcher fails on the second START.
    r.dev.start(0, 0, 1);
    r.dev.start(0, 0, 2);
    r.enter_wait_core();
    let before = r.dev.head_writes;
    assert_eq!(r.step(), (Step::Error, NrtStatus::Failure));
    assert_eq!(r.dev.head_writes - before, 1, "the failed ring's HEAD, written in the step");
}

#[test]
fn sync_driver_polls_until_done() {
    let mut r = Rig::new(2, 5);
    r.dev.auto_advance_ns = 1_000_000; // a broken harvest ends at the timeout, not never
    r.dev.run_all(2, 1, 2);
    let mut delay = r.dev.now.get();
    let mut d = |_us: u32| delay += 1;
    struct F<'a>(&'a mut dyn FnMut(u32));
    impl Delay for F<'_> {
        fn delay_us(&mut self, us: u32) {
            (self.0)(us)
        }
    }
    let w = exec_wait_round_robin(&mut r.req, &mut *r.dev, &mut r.nq, &mut F(&mut d));
    assert_eq!(w, SyncWait { status: NrtStatus::Success, step: Step::Done, steps: 3 });
}

#[test]
fn sync_driver_ends_at_the_timeout_on_a_hang() {
    let mut r = Rig::new(1, 1);
    // Each clock read is 1 ms later: the 1 s budget is reached after hundreds of
    // polls. Under Miri 20 ms: the same ending after tens of polls (each poll
    // is the same sweep, and Miri interprets each one).
    let (ms, fewest, most) = if cfg!(miri) { (20, 5, 100) } else { (1, 100, 2_000) };
    r.dev.auto_advance_ns = ms * 1_000_000;
    // Counts the polls, and fails the test (rather than hang it) should the
    // harvest never reach its timeout.
    let w = exec_wait_round_robin(&mut r.req, &mut *r.dev, &mut r.nq, &mut CountingDelay::new(100_000));
    assert_eq!((w.status, w.step), (NrtStatus::Timeout, Step::Error));
    assert!(w.steps > fewest && w.steps < most, "{}", w.steps);
}

/// Reads not yet handed back in any of `nq`'s rings.
fn unacked(nq: &Notifications) -> u32 {
    (0..MAX_CORES as u8)
        .flat_map(|c| (0..8u8).map(move |q| (c, q)))
        .filter_map(|(c, q)| nq.ring(c, q))
        .map(|r| r.unacked())
        .sum()
}

/// A request that times out with one engine started and none ended: under
/// batching its START read is held back by every step (the engine is not
/// COMPLETE and its ring did not fail).
fn timed_out_with_a_held_read(cores: u8) -> Rig {
    let mut r = Rig::new(cores, 1);
    r.nq.set_head_batching(true);
    r.dev.auto_advance_ns = 50_000_000;
    r.dev.start(0, 0, 1);
    r
}

#[test]
fn the_loop_writes_the_batched_heads_back_once_the_request_is_done() {
    let mut r = timed_out_with_a_held_read(1);
    let w = exec_wait_with(&mut r.req, &mut *r.dev, &mut r.nq, &mut count_delays(), &mut NoHooks);
    assert_eq!((w.status, w.step), (NrtStatus::Timeout, Step::Error));
    assert_eq!(unacked(&r.nq), 0, "every read handed back at the end");
    // The same harvest by hand keeps the read (the loop's write-back is what
    // hands it back).
    let mut m = timed_out_with_a_held_read(1);
    let mut end = (Step::InFlight, NrtStatus::Success);
    for _ in 0..1_000 {
        end = m.step();
        if end.0 != Step::InFlight {
            break;
        }
    }
    assert_eq!(end, (Step::Error, NrtStatus::Timeout));
    assert_eq!(unacked(&m.nq), 1, "a step alone keeps the batch");
    assert_eq!(r.dev.head_writes, m.dev.head_writes + 1);
}

/// Hooks that log what the loop calls, and abandon or skip as told.
#[derive(Default)]
struct LogHooks {
    before: u32,
    after: std::vec::Vec<Step>,
    delays: u32,
    looks: u32,
    /// Abandon at this `before_delay` call (1-based).
    abandon_at: Option<u32>,
    /// Step only at every this many looks.
    step_every: u32,
}

impl<D: ?Sized, W: ?Sized> WaitHooks<D, W> for LogHooks {
    fn before_step(&mut self, _: &ExecRequest, _: &mut D, _: &Notifications) {
        self.before += 1;
    }
    fn after_step(&mut self, _: &ExecRequest, _: &mut D, _: &Notifications, step: Step) {
        self.after.push(step);
    }
    fn before_delay(&mut self, _: &ExecRequest, _: &mut D, _: &Notifications, _: &mut W) -> ControlFlow<NrtStatus> {
        self.delays += 1;
        if self.abandon_at == Some(self.delays) {
            return ControlFlow::Break(NrtStatus::Invalid);
        }
        ControlFlow::Continue(())
    }
    fn step_now(&mut self, _: &ExecRequest, _: &mut D, _: &Notifications) -> bool {
        self.looks += 1;
        self.looks.is_multiple_of(self.step_every.max(1))
    }
}

#[test]
fn the_loop_calls_each_hook_around_each_step_and_delay() {
    let mut r = Rig::new(2, 5);
    r.dev.run_all(2, 1, 2);
    let mut d = count_delays();
    let mut h = LogHooks { step_every: 3, ..LogHooks::default() };
    let w = exec_wait_with(&mut r.req, &mut *r.dev, &mut r.nq, &mut d, &mut h);
    assert_eq!(w, SyncWait { status: NrtStatus::Success, step: Step::Done, steps: 3 });
    assert_eq!(h.before, 3, "one pass hook per step");
    assert_eq!(h.after, [Step::InFlight, Step::InFlight, Step::Done]);
    // Two waits between the three steps, each three delays long: the hook said
    // "not yet" twice, then "step".
    assert_eq!((d.calls, h.delays, h.looks), (6, 6, 6));
}

#[test]
fn a_hook_abandons_the_wait_with_its_status_and_the_request_goes_on_after() {
    let mut r = Rig::new(1, 5);
    r.nq.set_head_batching(true);
    let mut d = count_delays();
    let mut h = LogHooks { abandon_at: Some(4), ..LogHooks::default() };
    let w = exec_wait_with(&mut r.req, &mut *r.dev, &mut r.nq, &mut d, &mut h);
    assert_eq!(w, SyncWait { status: NrtStatus::Invalid, step: Step::InFlight, steps: 4 });
    assert_eq!(d.calls, 3, "no delay after the abandoning look");
    assert_eq!(r.req.state(), ExecState::WaitCore, "left in flight");
    let writes = r.dev.head_writes;
    r.dev.run_all(1, 1, 2);
    let w = exec_wait_round_robin(&mut r.req, &mut *r.dev, &mut r.nq, &mut d);
    assert_eq!((w.status, w.step), (NrtStatus::Success, Step::Done));
    assert!(r.dev.head_writes > writes);
    assert_eq!(unacked(&r.nq), 0);
}

#[test]
fn the_loop_ends_at_the_requests_timeout_with_hooks_that_never_abandon() {
    let mut r = Rig::new(1, 1);
    let ms = if cfg!(miri) { 20 } else { 1 };
    r.dev.auto_advance_ns = ms * 1_000_000;
    let mut h = LogHooks::default();
    let w = exec_wait_with(&mut r.req, &mut *r.dev, &mut r.nq, &mut CountingDelay::new(100_000), &mut h);
    assert_eq!((w.status, w.step), (NrtStatus::Timeout, Step::Error));
    assert_eq!(u64::from(h.before), w.steps);
    assert_eq!(u64::from(h.delays), w.steps - 1);
}

/// A work queue that logs what the worker does.
#[derive(Default)]
struct Q {
    pending: std::collections::VecDeque<XuWork>,
    has_work: u64,
    log: Vec<String>,
    fail_pop: bool,
}

impl XuQueue for Q {
    fn peek_current(&mut self) -> Option<XuWork> {
        self.pending.front().copied()
    }
    fn consume_has_work(&mut self) -> Result<(), XuSignalError> {
        self.log.push("has_work".into());
        if self.has_work == 0 {
            return Err(XuSignalError::Underflow);
        }
        self.has_work -= 1;
        Ok(())
    }
    fn pop_current(&mut self, seq_id: u64, status: NrtStatus) -> Result<(), XuSignalError> {
        self.log.push(format!("mark_comp {seq_id} {}", status.code()));
        self.pending.pop_front();
        if self.fail_pop {
            return Err(XuSignalError::Signal);
        }
        Ok(())
    }
}

impl Q {
    fn submit(&mut self, seq_id: u64, config: ExecConfig) {
        self.pending.push_back(XuWork { seq_id, config });
        self.has_work += 1;
    }
}

#[test]
fn xu_step_completes_and_pairs_has_work_with_mark_complete() {
    let mut dev = Box::new(FakeDevice::new(Arch::Sunda, RING));
    let mut nq = FakeDevice::notifications(RING);
    let mut xu = ExecUnit::new();
    let mut q = Q::default();
    assert_eq!(xu.step(&mut *dev, &mut nq, &mut q), XuStep::Idle);
    q.submit(7, ExecConfig::new(Arch::Sunda, 2, 5));
    dev.run_all(2, 1, 2);
    assert_eq!(xu.step(&mut *dev, &mut nq, &mut q), XuStep::InFlight);
    assert_eq!(xu.step(&mut *dev, &mut nq, &mut q), XuStep::InFlight);
    assert_eq!(xu.step(&mut *dev, &mut nq, &mut q), XuStep::Completed { seq_id: 7, status: NrtStatus::Success });
    assert_eq!(q.log, ["has_work", "mark_comp 7 0"]);
    assert_eq!(q.has_work, 0);
    assert_eq!(xu.health(), XuHealth::Healthy);
    // The next request starts from INIT.
    q.submit(8, ExecConfig::new(Arch::Sunda, 1, 5));
    dev.run_all(1, 3, 4);
    assert_eq!(xu.step(&mut *dev, &mut nq, &mut q), XuStep::InFlight);
    assert_eq!(xu.current().state(), ExecState::WaitBarrierProxy);
}

#[test]
fn xu_degrades_after_a_2_and_answers_101() {
    let mut dev = Box::new(FakeDevice::new(Arch::Sunda, RING));
    let mut nq = FakeDevice::notifications(RING);
    let mut xu = ExecUnit::new();
    let mut q = Q::default();
    q.submit(1, ExecConfig::new(Arch::Sunda, 1, 0)); // 0 s budget, nothing arrives
    q.submit(2, ExecConfig::new(Arch::Sunda, 1, 5));
    q.submit(3, ExecConfig::new(Arch::Sunda, 1, 5));
    let mut done = vec![];
    for _ in 0..10 {
        if let XuStep::Completed { seq_id, status } = xu.step(&mut *dev, &mut nq, &mut q) {
            done.push((seq_id, status));
        }
    }
    assert_eq!(
        done,
        [(1, NrtStatus::Timeout), (2, NrtStatus::ExecUnitUnrecoverable), (3, NrtStatus::ExecUnitUnrecoverable)]
    );
    assert_eq!(xu.health(), XuHealth::FatalShutdown);
    assert_eq!(q.has_work, 0, "every has-work consumed exactly once");
    assert_eq!(q.log.iter().filter(|l| *l == "has_work").count(), 3);
}

#[test]
fn xu_has_work_underflow_is_reported_and_still_completes() {
    let mut dev = Box::new(FakeDevice::new(Arch::Sunda, RING));
    let mut nq = FakeDevice::notifications(RING);
    let mut xu = ExecUnit::new();
    let mut q = Q::default();
    q.pending.push_back(XuWork { seq_id: 9, config: ExecConfig::new(Arch::Sunda, 1, 5) }); // no has-work posted
    dev.run_all(1, 1, 2);
    let mut last = XuStep::Idle;
    for _ in 0..3 {
        last = xu.step(&mut *dev, &mut nq, &mut q);
    }
    assert_eq!(last, XuStep::Completed { seq_id: 9, status: NrtStatus::Success });
    assert_eq!(q.log, ["has_work", "mark_comp 9 0"], "the submitter is never left blocked");
    assert_eq!(xu.health(), XuHealth::FatalShutdown);
    assert_eq!(dev.count("xu_has_work_underflow"), 1);

    let mut xu = ExecUnit::new();
    let mut q = Q { fail_pop: true, ..Q::default() };
    q.submit(10, ExecConfig::new(Arch::Sunda, 1, 5));
    dev.run_all(1, 1, 2);
    for _ in 0..3 {
        xu.step(&mut *dev, &mut nq, &mut q);
    }
    assert_eq!(xu.health(), XuHealth::FatalShutdown);
    assert_eq!(dev.count("xu_complete_failed"), 1);
}

mod props {
    use super::*;
    use proptest::prelude::*;

    #[derive(Clone, Debug)]
    enum Op {
        /// The device writes these bytes into (core, ring index 0..6).
        Write(u8, u8, [u8; 16]),
        /// The device writes a well-formed record.
        Rec(u8, u8, u16),
        Step,
        AdvanceMs(u16),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0u8..2, 0u8..6, any::<[u8; 16]>()).prop_map(|(c, q, b)| Op::Write(c, q, b)),
            (0u8..2, 0u8..5, prop_oneof![Just(2u16), Just(3), Just(6), Just(7), Just(8), any::<u16>()])
                .prop_map(|(c, e, s)| Op::Rec(c, e, s)),
            Just(Op::Step),
            (0u16..3000).prop_map(Op::AdvanceMs),
        ]
    }

    type Done = Option<(Step, NrtStatus)>;

    /// One step with the invariants checked.
    fn check(
        req: &mut ExecRequest,
        dev: &mut FakeDevice,
        nq: &mut Notifications,
        done: &mut Done,
        prev: &mut [[TpbEngState; 5]; 2],
    ) -> Result<(), TestCaseError> {
        let mut out = NrtStatus::Success;
        let was = req.state();
        let s = req.progress_one_step(dev, nq, &mut out);
        prop_assert!(matches!(s.code(), 0..=2));
        if let Some(d) = done {
            prop_assert_eq!((s, out), *d);
        }
        if s != Step::InFlight {
            prop_assert_eq!(req.state(), ExecState::Done);
            prop_assert!(s == Step::Done || !out.is_success());
            *done = Some((s, out));
        }
        if was == ExecState::WaitCore || req.state() == ExecState::WaitCore {
            for (c, row) in prev.iter_mut().enumerate() {
                for (e, p) in row.iter_mut().enumerate() {
                    let now = req.substate(c, e).unwrap();
                    if was == ExecState::WaitCore {
                        prop_assert!(now >= *p, "substate regressed");
                    }
                    *p = now;
                }
            }
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 4 } else { 256 }))]

        /// Arbitrary device input: no panic, 0/1/2 only, substates never regress,
        /// DONE is terminal, and the request ends by the timeout at the latest.
        #[test]
        fn arbitrary_entry_streams(cores in 1u8..=2, timeout_s in 0u32..4, ring_pow in 1u32..6,
                                   ops in proptest::collection::vec(op(), 0..if cfg!(miri) { 40 } else { 120 })) {
            let ring = 16u32 << ring_pow;
            let mut dev = Box::new(FakeDevice::new(Arch::Cayman, ring));
            let mut nq = FakeDevice::notifications(ring);
            let mut req = ExecRequest::new(ExecConfig::new(Arch::Cayman, cores, timeout_s));
            let mut done: Done = None;
            let mut prev = [[TpbEngState::StartPending; 5]; 2];
            for op in ops {
                match op {
                    Op::Write(c, q, b) => { let nq_id = [2u8, 4, 5, 6, 7, 8][q as usize]; dev.push_raw(c, nq_id, b); }
                    Op::Rec(c, e, s) => { dev.record(c, e as usize, s, 1); }
                    Op::Step => check(&mut req, &mut dev, &mut nq, &mut done, &mut prev)?,
                    Op::AdvanceMs(ms) => dev.advance_ms(u64::from(ms)),
                }
            }
            // Two steps reach WAIT_CORE; past the budget the next sweep ends it.
            for _ in 0..3 { check(&mut req, &mut dev, &mut nq, &mut done, &mut prev)?; }
            dev.advance_ms(u64::from(timeout_s) * 1000 + 1);
            check(&mut req, &mut dev, &mut nq, &mut done, &mut prev)?;
            prop_assert!(done.is_some(), "not done after the timeout");
        }
    }
}

#[test]
fn cc_and_tensor_slots_use_the_calibration_of_the_ring_that_carried_them() {
    let mut r = Rig::new(1, 5);
    // SP's clock runs 2x fast; PE's is the identity.
    r.nq.set_cal(0, 4, TsCal { init_timestamp: 0, actual_timestamp_inc: 2, expected_timestamp_inc: 1 });
    r.dev.record(0, 4, Subtype::CC_START, 4_000_000); // on SP: 2_000_000 ns -> 2000 us
    r.dev.record(0, 0, Subtype::CC_END, 3_000_000); // on PE: 3000 us
    r.dev.custom(0, 4, 7, 100, 6_000_000); // tensor on SP: 3000 us
    r.dev.run_all(1, 1_000, 2_000);
    r.enter_wait_core();
    assert_eq!(r.finish().0, Step::Done);
    assert_eq!(r.req.notif_ts(0, ts_slot::CC_START), Some(2000));
    assert_eq!(r.req.notif_ts(0, ts_slot::CC_END), Some(3000));
    assert_eq!(r.req.notif_ts(0, ts_slot::TENSOR), Some(3000));
}

#[test]
fn the_core_budget_starts_when_the_barrier_clears_not_at_init() {
    // The barrier takes 300 s; the model's budget is 5 s; PE stays pending.
    let mut r = Rig::new(1, 5);
    let t0 = r.dev.now.get();
    r.dev.barrier_done_at_ns = [t0 + 300_000_000_000; 2];
    assert_eq!(r.step().0, Step::InFlight); // INIT at t0
    r.dev.now.set(t0 + 300_000_000_000);
    assert_eq!(r.step().0, Step::InFlight);
    assert_eq!(r.req.state(), ExecState::WaitCore);
    // Right after the barrier: 300 s since INIT, 0 s of the core budget.
    assert_eq!(r.step(), (Step::InFlight, NrtStatus::Other(0xDEAD)));
    r.dev.advance_ms(4_999);
    assert_eq!(r.step().0, Step::InFlight, "4.999 s of the 5 s budget");
    assert_eq!(r.dev.count("core_timeout"), 0);
    r.dev.advance_ms(1);
    assert_eq!(r.step(), (Step::Error, NrtStatus::Timeout));
    assert!(r
        .dev
        .events
        .iter()
        .any(|e| matches!(e, Event::Exec(ExecEvent::CoreTimeout { elapsed_ms: 5_000, timeout_ms: 5_000, .. }))));
}

#[test]
fn both_cores_pending_at_the_timeout_are_both_probed_and_classified() {
    // Both cores hang; core 1's probe finds a repairable HBM UE (1205, critical).
    let mut r = Rig::new(2, 5);
    r.dev.hbm[1] = Some(NrtStatus::ExecHwErrRepairableHbmUe);
    r.enter_wait_core();
    r.dev.advance_ms(5_000);
    assert_eq!(r.step(), (Step::Error, NrtStatus::ExecHwErrRepairableHbmUe));
    assert_eq!(r.req.out_info().exec_rets, [NrtStatus::Timeout, NrtStatus::ExecHwErrRepairableHbmUe]);
    assert!(r.req.fatal_flag(0, fatal::TIMEOUT) && r.req.fatal_flag(1, fatal::TIMEOUT));
    assert_eq!(r.dev.count("core_timeout"), 2);
    assert_eq!(r.dev.intc_reads, 2, "one INTC probe per pending core");
    assert_eq!(
        r.req.out_info().timeout_cause,
        [Some(TimeoutCause::HangOnCompute), Some(TimeoutCause::HbmUe(NrtStatus::ExecHwErrRepairableHbmUe))]
    );
}

#[test]
fn cross_core_ties_keep_core_0s_status() {
    // 5 (core 0, no overflow bit) and 1204 (core 1, overflow bit) are both HIGH:
    // the reconciliation walks the cores in order and keeps the first on a tie.
    let mut r = Rig::new(2, 5);
    r.dev.intc_cause[1] = INTC_OVERFLOW;
    r.enter_wait_core();
    r.dev.advance_ms(5_000);
    assert_eq!(r.step(), (Step::Error, NrtStatus::Timeout));
    assert_eq!(r.req.out_info().exec_rets, [NrtStatus::Timeout, NrtStatus::ExecSwNqOverflow]);
    // And the other way round.
    let mut r = Rig::new(2, 5);
    r.dev.intc_cause[0] = INTC_OVERFLOW;
    r.enter_wait_core();
    r.dev.advance_ms(5_000);
    assert_eq!(r.step(), (Step::Error, NrtStatus::ExecSwNqOverflow));
    assert_eq!(r.req.out_info().exec_rets, [NrtStatus::ExecSwNqOverflow, NrtStatus::Timeout]);
}

#[test]
fn error_record_timestamps_are_device_ns_over_1000_on_the_sync_point() {
    let mut r = Rig::new(1, 5);
    r.nq.set_sync_point(0, crate::nq::SyncPoint { dev_us: 1_000, cpu_us: 7_000_000 });
    // PE's calibration is not applied to error records (G-ERR-TS).
    r.nq.set_cal(0, 0, TsCal { init_timestamp: 500, actual_timestamp_inc: 3, expected_timestamp_inc: 2 });
    assert!(r.dev.error(0, ErrorEntry::new(1, 0, 0, 5_000_000)));
    r.dev.run_all(1, 1, 2);
    r.enter_wait_core();
    assert_eq!(r.step(), (Step::Done, NrtStatus::ExecCompletedWithNumErr));
    // 5_000_000 / 1000 = 5000 us device; minus the sync point's 1000, plus 7 s.
    let want = 7_000_000 + 5_000 - 1_000;
    assert!(
        r.dev
            .events
            .iter()
            .any(|e| matches!(e, Event::Exec(ExecEvent::ErrorRecord { ts_cpu_us, .. }) if *ts_cpu_us == want)),
        "{:?}",
        r.dev.events
    );
    assert_eq!(r.nq.pop_error().map(|e| e.ts_cpu_us), Some(want));
}

#[test]
fn sync_driver_sleeps_1_us_between_steps() {
    let mut r = Rig::new(1, 5);
    r.dev.auto_advance_ns = 1_000_000; // a broken harvest ends at the timeout, not never
    r.dev.run_all(1, 1, 2);
    struct Log(Vec<u32>);
    impl Delay for Log {
        fn delay_us(&mut self, us: u32) {
            self.0.push(us);
        }
    }
    let mut log = Log(Vec::new());
    let w = exec_wait_round_robin(&mut r.req, &mut *r.dev, &mut r.nq, &mut log);
    assert_eq!((w.status, w.step, w.steps), (NrtStatus::Success, Step::Done, 3));
    assert_eq!(log.0, [1, 1], "usleep(1) between steps, none after the last (seed §1)");
}

#[test]
fn timeout_cause_names_and_statuses() {
    use NrtStatus as S;
    let all = [
        (TimeoutCause::HbmUe(S::ExecHwErrHbmUe), "HBM_UE", S::ExecHwErrHbmUe),
        (TimeoutCause::HbmUe(S::ExecHwErrRepairableHbmUe), "HBM_UE", S::ExecHwErrRepairableHbmUe),
        (TimeoutCause::DmaAbort, "DMA_ABORT", S::ExecHwErrDmaAbort),
        (TimeoutCause::Collectives, "COLLECTIVES", S::ExecHwErrCollectives),
        (TimeoutCause::HangOnCompute, "HANG_ON_COMPUTE", S::Timeout),
    ];
    for (c, name, status) in all {
        assert_eq!((c.name(), c.status()), (name, status));
    }
    assert_eq!(S::ExecHwErrCollectives.code(), 1200);
    assert_eq!(
        format!("{}", Event::Exec(ExecEvent::HangOnCompute { core: 1 })),
        "core 1: timed out with no HBM, DMA or collectives fault: hang on compute (HANG_ON_COMPUTE)"
    );
    assert_eq!(Event::Exec(ExecEvent::HangOnCompute { core: 1 }).kind(), "hang_on_compute");
    assert_eq!(Event::Exec(ExecEvent::HangOnCompute { core: 1 }).level(), crate::trace::Level::Error);
}

#[test]
fn the_collectives_probe_defaults_to_no_fault_and_forwards_through_mut_refs() {
    use crate::hal::FaultProbe;
    struct NoCollectives;
    impl FaultProbe for NoCollectives {}
    assert!(!NoCollectives.collectives_stuck(0));
    assert!(!<&mut NoCollectives as FaultProbe>::collectives_stuck(&mut &mut NoCollectives, 1));
    // A platform lent out as `&mut` keeps its own answer.
    let mut dev = FakeDevice::new(Arch::Sunda, RING);
    dev.collectives_stuck = [false, true];
    let mut lent = &mut dev;
    assert!(!<&mut FakeDevice as FaultProbe>::collectives_stuck(&mut lent, 0));
    assert!(<&mut FakeDevice as FaultProbe>::collectives_stuck(&mut lent, 1));

    // And the harvest through such a reference classifies a stuck collective.
    let mut r = Rig::new(2, 5);
    r.dev.collectives_stuck[1] = true;
    r.enter_wait_core();
    r.dev.advance_ms(5_000);
    let mut out = NrtStatus::Success;
    let mut lent = &mut *r.dev;
    assert_eq!(r.req.progress_one_step(&mut lent, &mut r.nq, &mut out), Step::Error);
    assert_eq!(out, NrtStatus::ExecHwErrCollectives);
    assert_eq!(r.req.out_info().timeout_cause, [Some(TimeoutCause::HangOnCompute), Some(TimeoutCause::Collectives)]);
}

#[test]
fn names_of_states_and_engines() {
    let states = [ExecState::Init, ExecState::WaitBarrierProxy, ExecState::WaitCore, ExecState::Done];
    let names: Vec<&str> = states.iter().map(|s| s.name()).collect();
    assert_eq!(names, ["INIT", "WAIT_BARRIER_PROXY", "WAIT_CORE", "DONE"]);
    let subs = [TpbEngState::StartPending, TpbEngState::EndPending, TpbEngState::Complete];
    let names: Vec<&str> = subs.iter().map(|s| s.name()).collect();
    assert_eq!(names, ["START_PENDING", "END_PENDING", "COMPLETE"]);
    for (i, (e, name)) in Engine::ALL.iter().zip(["PE", "ACT", "POOL", "DVE", "SP"]).enumerate() {
        assert_eq!((e.index(), e.name()), (i, name));
        assert_eq!(Engine::from_index(i), Some(*e));
        assert_eq!(Engine::parse(name), Some(*e));
        assert_eq!(Engine::parse(&name.to_ascii_lowercase()), Some(*e), "case-insensitive");
        assert_eq!(Engine::parse(&i.to_string()), Some(*e));
    }
    assert_eq!(Engine::from_index(5), None);
    assert_eq!(Engine::parse("5"), None);
    assert_eq!(Engine::parse("GPU"), None);
}

#[test]
fn engine_times_are_given_only_once_finalized_and_only_for_what_was_seen() {
    let mut r = Rig::new(1, 5);
    r.dev.start(0, 0, 3_000_000);
    r.dev.end(0, 0, 4_000_000);
    r.dev.start(0, 1, 3_000_000); // ACT never ends
    r.enter_wait_core();
    assert_eq!(r.step().0, Step::InFlight);
    assert!(!r.req.timestamps_are_cpu_us());
    assert_eq!(r.req.engine_times_us(0, 0), (None, None), "raw device units are not given as times");
    r.dev.advance_ms(5_000);
    assert_eq!(r.step(), (Step::Error, NrtStatus::Timeout));
    assert!(r.req.timestamps_are_cpu_us());
    assert_eq!(r.req.engine_times_us(0, 0), (Some(3_000), Some(4_000)));
    assert_eq!(r.req.engine_times_us(0, 1), (Some(3_000), None), "started, never ended");
    assert_eq!(r.req.engine_times_us(0, 2), (None, None), "never started");
    assert_eq!(r.req.engine_times_us(0, 5), (None, None));
    assert_eq!(r.req.engine_times_us(2, 0), (None, None));
    assert_eq!(r.req.config().tpb_count, 1);
    assert_eq!(r.req.config().timeout_s, 5);
}

#[test]
fn barrier_wait_event_reports_whole_seconds_waited() {
    let mut r = Rig::new(1, 5);
    r.dev.barrier_done_at_ns = [u64::MAX; 2];
    r.step();
    r.dev.advance_ns(125_700_000_000);
    assert_eq!(r.step().0, Step::InFlight);
    assert_eq!(
        r.dev.events_of("barrier_wait").collect::<Vec<_>>(),
        [&Event::Exec(ExecEvent::BarrierWait { waited_s: 125, threshold_s: 120 })]
    );
}

#[test]
fn a_slot_keeps_the_calibration_of_its_kept_record_not_of_a_later_or_tied_one() {
    let mut r = Rig::new(1, 5);
    // SP's clock runs 2x fast; PE's is the identity. PE's ring is read first.
    r.nq.set_cal(0, 4, TsCal { init_timestamp: 0, actual_timestamp_inc: 2, expected_timestamp_inc: 1 });
    r.dev.record(0, 0, Subtype::CC_START, 1_000_000); // kept: the earliest
    r.dev.record(0, 4, Subtype::CC_START, 4_000_000); // later: not kept
    r.dev.record(0, 0, Subtype::CC_END, 3_000_000); // kept
    r.dev.record(0, 4, Subtype::CC_END, 3_000_000); // a tie: the first stays
    r.dev.custom(0, 0, 7, 100, 6_000_000); // kept
    r.dev.custom(0, 4, 7, 100, 6_000_000); // a tie
    r.dev.record(0, 4, Subtype::CC_END, 2_000_000); // earlier: not kept
    r.dev.run_all(1, 1_000, 2_000);
    r.enter_wait_core();
    assert_eq!(r.finish().0, Step::Done);
    assert_eq!(r.req.notif_ts(0, ts_slot::CC_START), Some(1000), "PE's value on PE's clock");
    assert_eq!(r.req.notif_ts(0, ts_slot::CC_END), Some(3000));
    assert_eq!(r.req.notif_ts(0, ts_slot::TENSOR), Some(6000));
}

#[test]
fn a_full_error_subscriber_ring_drops_the_oldest_and_says_so() {
    let mut r = Rig::new(1, 5);
    for i in 0..60 {
        assert!(!r.nq.push_error(crate::nq::ErrorRecord { core: 1, raw: [0; 16], ts_cpu_us: i }));
    }
    for i in 0..10 {
        assert!(r.dev.error(0, ErrorEntry::new(3, 0, 0, 1_000 * (100 + i))));
    }
    r.dev.run_all(1, 1, 2);
    r.enter_wait_core();
    assert_eq!(r.step(), (Step::Done, NrtStatus::Success));
    let dropped: Vec<u32> = r
        .dev
        .events_of("error_subscriber_overrun")
        .map(|e| match e {
            Event::Exec(ExecEvent::ErrorSubscriberOverrun { dropped }) => *dropped,
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(dropped, [1, 2, 3, 4, 5, 6], "one event per record dropped, with the running count");
    assert_eq!((r.nq.errors_len(), r.nq.errors_dropped()), (64, 6));
    assert_eq!(r.nq.pop_error().map(|e| e.ts_cpu_us), Some(6), "the oldest six went");
}

#[test]
fn the_overflow_probe_reads_the_error_trigger_block_of_the_cores_tpb() {
    let mut r = Rig::new(2, 5);
    r.req = ExecRequest::new(ExecConfig { tpb_idx: [3, 7], ..ExecConfig::new(Arch::Sunda, 2, 5) });
    r.enter_wait_core();
    r.dev.advance_ms(5_000);
    assert_eq!(r.step(), (Step::Error, NrtStatus::Timeout));
    assert_eq!(&r.dev.intc_blocks[..], &[(0, 3), (1, 7)], "block = the device TPB index (G-ERRTRIG)");
    assert_eq!((errtrig_block_of_tpb(0), errtrig_block_of_tpb(9)), (0, 9));
}

#[test]
fn nothing_read_nothing_handed_back_and_no_result_in_flight() {
    let mut r = Rig::new(2, 5);
    r.enter_wait_core();
    assert_eq!(r.step().0, Step::InFlight);
    assert_eq!(r.dev.head_writes, 0, "no HEAD write for a ring nothing was read from");
    assert_eq!(r.req.result(), None);
    r.dev.start(1, 3, 1);
    assert_eq!(r.step().0, Step::InFlight);
    assert_eq!(r.dev.head_writes, 1, "only core 1 DVE's ring");
    assert_eq!(r.req.result(), None);
}

#[test]
fn the_duration_spans_only_engines_with_both_start_and_end() {
    let mut r = Rig::new(1, 5);
    r.dev.start(0, 1, 1_000_000); // ACT starts first and never ends
    r.dev.start(0, 0, 3_000_000);
    r.dev.end(0, 0, 4_000_000);
    r.dev.end(0, 2, 9_000_000); // POOL ends without a START: out of order
    r.enter_wait_core();
    r.dev.advance_ms(5_000);
    assert_eq!(r.step().0, Step::Error);
    assert_eq!(r.req.out_info().tpb_duration_us[0], 1_000, "PE's 3000..4000 us only");
}

#[test]
fn a_full_error_ring_is_swept_one_lap_less_one() {
    // 64 records fill the 64-entry error ring: a batch never consumes a whole lap
    // (G-HEAD), so the sweep at FINALIZE takes 63 and counts 63.
    let es: Vec<ErrorEntry> = (0..64).map(|i| ErrorEntry::new(3, 0, 0, i)).collect();
    let mut r = with_error(&es, true);
    assert_eq!(r.step(), (Step::Done, NrtStatus::Success));
    assert!(
        r.dev.events.contains(&Event::Exec(ExecEvent::ErrorCountLarge { core: 0, count: 63 })),
        "{:?}",
        r.dev.events
    );
    assert_eq!(r.nq.errors_len(), 63);
    assert_eq!(r.nq.ring(0, crate::nq::ERROR_NQ).unwrap().cursor(), 63 * 16);
}

#[test]
fn every_engines_start_and_end_use_that_engines_calibration() {
    let mut r = Rig::new(1, 5);
    // Engine e's clock runs (e + 1) times fast: START at (e + 1) ms and END at
    // 2 (e + 1) ms of device time are 1000 and 2000 us on every engine.
    for e in 0..5u32 {
        r.nq.set_cal(
            0,
            e as usize,
            TsCal { init_timestamp: 0, actual_timestamp_inc: e + 1, expected_timestamp_inc: 1 },
        );
        r.dev.start(0, e as usize, u64::from(e + 1) * 1_000_000);
        r.dev.end(0, e as usize, u64::from(e + 1) * 2_000_000);
    }
    r.enter_wait_core();
    assert_eq!(r.step(), (Step::Done, NrtStatus::Success));
    for e in 0..5 {
        assert_eq!(r.req.engine_times_us(0, e), (Some(1000), Some(2000)), "engine {e}");
    }
}

#[test]
fn the_error_sweep_hands_its_records_back() {
    let mut r = with_error(&[ErrorEntry::new(3, 0, 0, 1), ErrorEntry::new(3, 0, 0, 2)], true);
    assert_eq!(r.step(), (Step::Done, NrtStatus::Success));
    assert_eq!(r.dev.head_writes, 6, "five engine rings and the error ring");
    assert_eq!(r.nq.ring(0, crate::nq::ERROR_NQ).unwrap().unacked(), 0, "the device knows both were read");
}

#[test]
fn an_engine_that_started_in_one_sweep_ends_in_a_later_one() {
    let mut r = Rig::new(1, 5);
    for e in 0..5 {
        r.dev.start(0, e, 10);
    }
    r.enter_wait_core();
    assert_eq!(r.step().0, Step::InFlight);
    for e in 0..5 {
        assert_eq!(r.req.substate(0, e), Some(TpbEngState::EndPending));
        r.dev.end(0, e, 20);
    }
    assert_eq!(r.step(), (Step::Done, NrtStatus::Success));
}

#[test]
fn finalize_parts_run_finalizes_pieces_on_a_copy() {
    let mut r = Rig::new(2, 5);
    r.nq.set_sync_point(0, crate::nq::SyncPoint { dev_us: 0, cpu_us: 5_000_000 });
    r.dev.run_all(2, 4_000, 9_000);
    r.enter_wait_core();
    assert_eq!(r.step(), (Step::Done, NrtStatus::Success));
    assert_eq!(r.req.engine_times_us(0, 0), (Some(5_000_004), Some(5_000_009)));
    assert_eq!(r.req.engine_times_us(1, 0), (Some(4), Some(9)));
    assert_eq!(r.dev.counter_updates.len(), 2, "FINALIZE counted both cores");

    // The post-processing again: the slots, already CPU us, are rescaled once more.
    let mut copy = r.req.clone();
    crate::exec::finalize_parts::postprocess(&mut copy, &mut *r.dev, &r.nq);
    assert!(copy.timestamps_are_cpu_us());
    assert_eq!(copy.engine_times_us(0, 0), (Some(5_000_000 + 5_000), Some(5_000_000 + 5_000)));
    assert_eq!(copy.engine_times_us(1, 0), (Some(0), Some(0)), "core 1, no sync point: 4 and 9 us read as ns");

    // The error sweep again: it finds a record written since.
    assert!(r.dev.error(1, ErrorEntry::new(1, 0, 0, 5)));
    let mut copy = r.req.clone();
    crate::exec::finalize_parts::process_errors(&mut copy, &mut *r.dev, &mut r.nq);
    assert_eq!(copy.out_info().exec_rets, [NrtStatus::Success, NrtStatus::ExecCompletedWithNumErr]);
    assert_eq!(r.req.out_info().exec_rets, [NrtStatus::Success; 2], "the request itself is untouched");

    // The counter update again: one per core, with the cached status.
    crate::exec::finalize_parts::count(&r.req, &mut *r.dev);
    assert_eq!(r.dev.counter_updates.len(), 4);
    assert!(r.dev.counter_updates.iter().all(|(_, u)| u.status == NrtStatus::Success));
}

#[test]
fn may_progress_says_whether_a_step_could_read_anything_and_changes_nothing() {
    let mut r = Rig::new(2, 5);
    assert!(r.req.may_progress(&mut *r.dev, &r.nq), "before WAIT_CORE: always step");
    r.enter_wait_core();
    let reads = r.dev.slot_reads;
    assert!(!r.req.may_progress(&mut *r.dev, &r.nq), "nothing written");
    assert_eq!(r.dev.slot_reads - reads, 10, "one slot per pending engine");
    // One START, on the last engine: a step has something to read.
    r.dev.start(1, ENGINES_PER_CORE - 1, 1);
    let (heads, reads) = (r.dev.head_writes, r.dev.slot_reads);
    assert!(r.req.may_progress(&mut *r.dev, &r.nq));
    assert_eq!(r.dev.slot_reads - reads, 10, "stops at the fresh one");
    assert!(r.req.may_progress(&mut *r.dev, &r.nq), "it consumed nothing");
    assert_eq!(r.dev.head_writes, heads, "it wrote no HEAD");
    assert_eq!(r.step(), (Step::InFlight, NrtStatus::Other(0xDEAD)), "the step takes the START");
    assert_eq!(r.req.substate(1, ENGINES_PER_CORE - 1), Some(TpbEngState::EndPending));
    assert!(!r.req.may_progress(&mut *r.dev, &r.nq), "the START is consumed");
    // Every engine started and the last one ended: COMPLETE engines are
    // not looked at.
    for core in 0..2u8 {
        for eng in 0..ENGINES_PER_CORE - usize::from(core) {
            r.dev.start(core, eng, 1);
        }
    }
    r.dev.end(1, ENGINES_PER_CORE - 1, 2);
    assert_eq!(r.step().0, Step::InFlight);
    assert_eq!(r.req.substate(1, ENGINES_PER_CORE - 1), Some(TpbEngState::Complete));
    let reads = r.dev.slot_reads;
    assert!(!r.req.may_progress(&mut *r.dev, &r.nq));
    assert_eq!(r.dev.slot_reads - reads, 9, "the COMPLETE engine's ring is not read");
    r.dev.end(0, 0, 2);
    assert!(r.req.may_progress(&mut *r.dev, &r.nq), "a fresh END on the first engine");
    for core in 0..2u8 {
        for eng in 0..ENGINES_PER_CORE - usize::from(core) {
            if (core, eng) != (0, 0) {
                r.dev.end(core, eng, 2);
            }
        }
    }
    assert_eq!(r.step(), (Step::Done, NrtStatus::Success));
    assert!(r.req.may_progress(&mut *r.dev, &r.nq), "DONE: a step answers at once");
    // A ring it cannot read: let the step report it.
    let mut r = Rig::new(1, 5);
    r.enter_wait_core();
    r.dev.fail_ring = Some((0, crate::nq::INFER_STATUS_NQS[0]));
    assert!(r.req.may_progress(&mut *r.dev, &r.nq));
    assert_eq!(r.step(), (Step::Error, NrtStatus::Failure));
}

/// Counts the delays; fails the test (rather than hang it) past a bound.
const fn count_delays() -> CountingDelay {
    CountingDelay::new(100_000)
}

#[test]
fn the_watching_driver_ends_as_the_sync_driver_does() {
    // Records already there: every look says step, the same three steps.
    let mut a = Rig::new(2, 5);
    a.dev.run_all(2, 1, 2);
    let mut b = Rig::new(2, 5);
    b.dev.run_all(2, 1, 2);
    let wa = exec_wait_round_robin(&mut a.req, &mut *a.dev, &mut a.nq, &mut count_delays());
    let mut d = count_delays();
    let wb = exec_wait_watching(&mut b.req, &mut *b.dev, &mut b.nq, &mut d);
    assert_eq!(wa, SyncWait { status: NrtStatus::Success, step: Step::Done, steps: 3 });
    assert_eq!(wb, wa);
    assert_eq!(d.calls, 2, "a delay between steps, none after the last");
    assert_eq!(a.req.out_info(), b.req.out_info());
}

#[test]
fn the_watching_driver_steps_at_a_bounded_interval_and_ends_at_the_timeout() {
    let mut r = Rig::new(1, 1);
    let (ms, fewest) = if cfg!(miri) { (20, 5) } else { (1, 100) };
    r.dev.auto_advance_ns = ms * 1_000_000;
    let mut d = count_delays();
    let w = exec_wait_watching(&mut r.req, &mut *r.dev, &mut r.nq, &mut d);
    assert_eq!((w.status, w.step), (NrtStatus::Timeout, Step::Error));
    assert!(w.steps > fewest, "{}", w.steps);
    // Init and the barrier step at once (no look skips them); then one step
    // per WATCH_STEP_EVERY delays, exactly.
    assert_eq!(
        u64::from(d.calls),
        (w.steps - 2) * u64::from(driver::WATCH_STEP_EVERY) + 1,
        "{} delays, {} steps",
        d.calls,
        w.steps
    );
}
