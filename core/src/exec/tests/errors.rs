//! FINALIZE: the error sweep, its classes, timestamps and subscriber ring.

use super::*;

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
        assert_eq!(r.step(), Step::Done(want), "subtype {sub}");
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
    assert_eq!(r.step(), Step::Done(NrtStatus::ExecCompletedWithErr), "1004 is critical, 1003 medium");
    assert_eq!(r.dev.count("error_record"), 2);
    assert_eq!(r.nq.errors_len(), 5);
    assert_eq!(r.req.out_info().err[0], Some(ErrorClass::Numerical));
}

#[test]
fn unusually_large_error_count_warns() {
    let es: Vec<ErrorEntry> = (0..40).map(|i| ErrorEntry::new(3, 0, 0, i)).collect();
    let mut r = with_error(&es, true);
    assert_eq!(r.step(), Step::Done(NrtStatus::Success));
    assert!(r.dev.events.iter().any(|e| matches!(e, Event::Exec(ExecEvent::ErrorCountLarge { count: 40, .. }))));
    let mut r = with_error(&es[..32], true);
    r.step();
    assert_eq!(r.dev.count("error_count_large"), 0);
}

#[test]
fn errors_are_swept_on_the_fault_path_too() {
    let mut r = with_error(&[ErrorEntry::new(4, 0, 0, 1)], false);
    r.dev.advance_ms(5_000);
    assert_eq!(r.step(), Step::failed(NrtStatus::ExecHwErrNcUe), "1202 critical beats 5 high");
    assert!(r.req.fatal_flag(0, fatal::TIMEOUT));
}

#[test]
fn error_record_timestamps_are_device_ns_over_1000_on_the_sync_point() {
    let mut r = Rig::new(1, 5);
    r.nq.set_sync_point(0, crate::nq::SyncPoint { dev_us: 1_000, cpu_us: 7_000_000 });
    // PE's calibration is not applied to error records, G-ERR-TS.
    r.nq.set_cal(0, 0, TsCal { init_timestamp: 500, actual_timestamp_inc: 3, expected_timestamp_inc: 2 });
    assert!(r.dev.error(0, ErrorEntry::new(1, 0, 0, 5_000_000)));
    r.dev.run_all(1, 1, 2);
    r.enter_wait_core();
    assert_eq!(r.step(), Step::Done(NrtStatus::ExecCompletedWithNumErr));
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
    assert_eq!(r.step(), Step::Done(NrtStatus::Success));
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
fn a_full_error_ring_is_swept_one_lap_less_one() {
    // 64 records fill the 64-entry error ring: a batch never consumes a whole lap,
    // G-HEAD, so the sweep at FINALIZE takes 63 and counts 63.
    let es: Vec<ErrorEntry> = (0..64).map(|i| ErrorEntry::new(3, 0, 0, i)).collect();
    let mut r = with_error(&es, true);
    assert_eq!(r.step(), Step::Done(NrtStatus::Success));
    assert!(
        r.dev.events.contains(&Event::Exec(ExecEvent::ErrorCountLarge { core: 0, count: 63 })),
        "{:?}",
        r.dev.events
    );
    assert_eq!(r.nq.errors_len(), 63);
    assert_eq!(r.nq.ring(0, crate::nq::ERROR_NQ).unwrap().cursor(), 63 * 16);
}

#[test]
fn the_error_sweep_hands_its_records_back() {
    let mut r = with_error(&[ErrorEntry::new(3, 0, 0, 1), ErrorEntry::new(3, 0, 0, 2)], true);
    assert_eq!(r.step(), Step::Done(NrtStatus::Success));
    assert_eq!(r.dev.head_writes, ENGINES_PER_CORE as u64 + 1, "every engine ring and the error ring");
    assert_eq!(r.nq.ring(0, crate::nq::ERROR_NQ).unwrap().unacked(), 0, "the device knows both were read");
}
