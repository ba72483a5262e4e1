//! FINALIZE: the kept timestamps, their rescaling to CPU us on each ring's
//! calibration, and the duration.

use super::*;

#[test]
fn five_engines_give_the_seeds_thirteen_slots() {
    assert_eq!(ENGINES_PER_CORE, 5);
    let slots =
        [ts_slot::end(ENGINES_PER_CORE - 1), ts_slot::CC_START, ts_slot::CC_END, ts_slot::TENSOR, ts_slot::COUNT];
    assert_eq!(slots, [9, 10, 11, 12, 13], "vcore_notif_ts[core][13], seed §7");
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
    for e in 1..ENGINES_PER_CORE {
        r.dev.start(0, e, 1_000_000);
        r.dev.end(0, e, 1_200_000);
    }
    r.enter_wait_core();
    assert!(matches!(r.step(), Step::Done(_)));
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
    assert!(matches!(r.step(), Step::Done(_)));
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
    assert!(matches!(r.step(), Step::Done(_)));
    assert_eq!(r.dev.count("timestamp_cal_invalid"), 1);
    assert_eq!(r.req.engine_times_us(0, 2), (Some(5), Some(9)));
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
    assert!(matches!(r.finish(), Step::Done(_)));
    assert_eq!(r.req.notif_ts(0, ts_slot::CC_START), Some(2000));
    assert_eq!(r.req.notif_ts(0, ts_slot::CC_END), Some(3000));
    assert_eq!(r.req.notif_ts(0, ts_slot::TENSOR), Some(3000));
}

#[test]
fn engine_times_are_given_only_once_finalized_and_only_for_what_was_seen() {
    let mut r = Rig::new(1, 5);
    r.dev.start(0, 0, 3_000_000);
    r.dev.end(0, 0, 4_000_000);
    r.dev.start(0, 1, 3_000_000); // ACT never ends
    r.enter_wait_core();
    assert_eq!(r.step(), Step::InFlight);
    assert!(!r.req.timestamps_are_cpu_us());
    assert_eq!(r.req.engine_times_us(0, 0), (None, None), "raw device units are not given as times");
    r.dev.advance_ms(5_000);
    assert_eq!(r.step(), Step::failed(NrtStatus::Timeout));
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
    assert!(matches!(r.finish(), Step::Done(_)));
    assert_eq!(r.req.notif_ts(0, ts_slot::CC_START), Some(1000), "PE's value on PE's clock");
    assert_eq!(r.req.notif_ts(0, ts_slot::CC_END), Some(3000));
    assert_eq!(r.req.notif_ts(0, ts_slot::TENSOR), Some(6000));
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
    assert!(matches!(r.step(), Step::Error(_)));
    assert_eq!(r.req.out_info().tpb_duration_us[0], 1_000, "PE's 3000..4000 us only");
}

#[test]
fn every_engines_start_and_end_use_that_engines_calibration() {
    let mut r = Rig::new(1, 5);
    // Engine e's clock runs (e + 1) times fast: START at (e + 1) ms and END at
    // 2 (e + 1) ms of device time are 1000 and 2000 us on every engine.
    for e in 0..ENGINES_PER_CORE as u32 {
        r.nq.set_cal(
            0,
            e as usize,
            TsCal { init_timestamp: 0, actual_timestamp_inc: e + 1, expected_timestamp_inc: 1 },
        );
        r.dev.start(0, e as usize, u64::from(e + 1) * 1_000_000);
        r.dev.end(0, e as usize, u64::from(e + 1) * 2_000_000);
    }
    r.enter_wait_core();
    assert_eq!(r.step(), Step::Done(NrtStatus::Success));
    for e in 0..ENGINES_PER_CORE {
        assert_eq!(r.req.engine_times_us(0, e), (Some(1000), Some(2000)), "engine {e}");
    }
}
