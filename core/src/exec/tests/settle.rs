//! G-SETTLE: FINALIZE's out-info work (timestamp post-processing, counters)
//! after the notice, under `Settle::AfterNotice`.

use super::*;

/// Two cores; PE of core 0 on a 1.5x-fast clock and ACT of core 1 with an
/// invalid calibration (an event at post-processing); a NaN and a correctable
/// ECC on core 0's error ring (error events, 1003); every engine run.
fn rig(settle: Settle) -> Rig {
    let mut r = Rig::new(2, 5);
    r.req = ExecRequest::new(ExecConfig::new(Arch::Sunda, 2, 5).with_settle(settle));
    r.nq.set_cal(0, 0, TsCal { init_timestamp: 1_000, actual_timestamp_inc: 3, expected_timestamp_inc: 2 });
    r.nq.set_cal(1, 1, TsCal { init_timestamp: 0, actual_timestamp_inc: 0, expected_timestamp_inc: 1 });
    r.nq.set_sync_point(0, crate::nq::SyncPoint { dev_us: 0, cpu_us: 5_000_000 });
    r.nq.set_sync_point(1, crate::nq::SyncPoint { dev_us: 0, cpu_us: 7_000_000 });
    assert!(r.dev.error(0, ErrorEntry::new(1, 0, 0, 3_000)));
    assert!(r.dev.error(0, ErrorEntry::new(3, 0, 0, 4_000)));
    r.dev.run_all(2, 2_000_000, 5_000_000);
    r.enter_wait_core();
    r
}

fn kinds(dev: &FakeDevice) -> Vec<&'static str> {
    dev.events.iter().map(|e| e.kind()).collect()
}

#[test]
fn after_the_notice_the_status_first_then_the_same_request_as_the_seeds_order() {
    let mut seed = rig(Settle::InFinalize);
    let seed_step = seed.finish();
    assert!(!seed.req.settle_due() && seed.req.timestamps_are_cpu_us());
    assert_eq!(seed.dev.counter_updates.len(), 2, "the seed's order counts in FINALIZE");

    let mut late = rig(Settle::AfterNotice);
    let step = late.finish();
    // The notice: the same status, decided before any out-info work.
    assert_eq!(step, seed_step);
    assert_eq!(step, Step::Done(NrtStatus::ExecCompletedWithNumErr), "the NaN's 1003, returned 0");
    assert_eq!(late.req.result(), Some(step));
    assert_eq!(late.req.out_info().exec_rets, seed.req.out_info().exec_rets);
    assert_eq!(late.req.out_info().err, seed.req.out_info().err);
    assert!(late.req.settle_due(), "DONE with the settle due");
    assert!(!late.req.timestamps_are_cpu_us(), "timestamps still device units");
    assert_eq!(late.req.engine_times_us(0, 0), (None, None), "no CPU times before the settle");
    assert_eq!(late.req.out_info().tpb_duration_us, [0, 0], "no durations before the settle");
    assert_eq!(late.req.notif_ts(0, ts_slot::start(0)), Some(2_000_000), "the raw START");
    assert!(late.dev.counter_updates.is_empty(), "not counted before the settle");
    assert_eq!(late.dev.count("timestamp_cal_invalid"), 0, "post-processing not run");
    assert_eq!(late.step(), step, "DONE stays terminal and does not settle");
    assert!(late.req.settle_due());

    // The settle: everything the seed's FINALIZE gave, once.
    assert!(late.req.settle(&mut *late.dev, &mut late.nq), "the settle ran");
    assert!(!late.req.settle_due());
    assert!(late.req.timestamps_are_cpu_us());
    assert_eq!(late.req.out_info(), seed.req.out_info());
    for core in 0..2 {
        for slot in 0..ts_slot::COUNT {
            assert_eq!(late.req.notif_ts(core, slot), seed.req.notif_ts(core, slot), "core {core} slot {slot}");
            assert_eq!(late.req.ts_recorded(core, slot), seed.req.ts_recorded(core, slot));
        }
        for eng in 0..ENGINES_PER_CORE {
            assert_eq!(late.req.engine_times_us(core, eng), seed.req.engine_times_us(core, eng));
        }
    }
    assert_eq!(
        late.req.engine_times_us(0, 0),
        (Some(5_001_332), Some(5_003_332)),
        "PE rescaled: (ts - 1000) * 2 / 3 ns"
    );
    assert_eq!(late.dev.counter_updates, seed.dev.counter_updates, "the same counts, per core");
    // The same events; only the invalid calibration's moves after the error sweep's.
    let (mut a, mut b) = (kinds(&seed.dev), kinds(&late.dev));
    assert_eq!(a.first(), Some(&"timestamp_cal_invalid"), "the seed's order: post-processing first");
    assert_eq!(b.last(), Some(&"timestamp_cal_invalid"), "after the notice: post-processing last");
    a.sort_unstable();
    b.sort_unstable();
    assert_eq!(a, b);

    // Once: a second settle changes nothing.
    let (events, counts, before) = (late.dev.events.len(), late.dev.counter_updates.len(), late.req.clone());
    assert!(!late.req.settle(&mut *late.dev, &mut late.nq), "nothing due");
    assert_eq!((late.dev.events.len(), late.dev.counter_updates.len()), (events, counts));
    assert_eq!(late.req.out_info(), before.out_info());
    assert_eq!(late.req.notif_ts(0, 0), before.notif_ts(0, 0));
}

#[test]
fn settle_is_nothing_where_nothing_is_due() {
    // In flight (the settle waits for DONE), and settled in FINALIZE.
    for settle in [Settle::AfterNotice, Settle::InFinalize] {
        let mut r = Rig::new(1, 5);
        r.req = ExecRequest::new(ExecConfig::new(Arch::Sunda, 1, 5).with_settle(settle));
        r.dev.run_all(1, 2_000_000, 3_000_000);
        assert!(!r.req.settle(&mut *r.dev, &mut r.nq), "INIT: nothing due");
        r.enter_wait_core();
        assert!(!r.req.settle(&mut *r.dev, &mut r.nq), "WAIT_CORE: nothing due");
        let counted = r.dev.counter_updates.len();
        assert!(matches!(r.finish(), Step::Done(NrtStatus::Success)));
        let due = settle == Settle::AfterNotice;
        assert_eq!(r.req.settle_due(), due, "{settle:?}");
        assert_eq!(r.dev.counter_updates.len(), counted + usize::from(!due));
        assert_eq!(r.req.settle(&mut *r.dev, &mut r.nq), due, "{settle:?}");
        assert_eq!(r.dev.counter_updates.len(), counted + 1, "{settle:?}: counted once");
        assert!(r.req.timestamps_are_cpu_us());
    }
}

#[test]
fn a_faulted_request_settles_with_the_requests_status() {
    // A timeout: FINALIZE's fault path, deferred; the counters then carry the
    // timeout for the core that never completed, as in the seed's order.
    let mut counts = Vec::new();
    for settle in [Settle::InFinalize, Settle::AfterNotice] {
        let mut r = Rig::new(1, 1);
        r.req = ExecRequest::new(ExecConfig::new(Arch::Sunda, 1, 1).with_settle(settle));
        r.enter_wait_core();
        r.dev.advance_ms(1_001);
        let step = r.finish();
        assert_eq!(step, Step::failed(NrtStatus::Timeout), "{settle:?}");
        r.req.settle(&mut *r.dev, &mut r.nq);
        counts.push(r.dev.counter_updates.clone());
    }
    assert_eq!(counts[0], counts[1]);
    assert_eq!(counts[0].len(), 1);
    assert_eq!(counts[0][0].1.status, NrtStatus::Timeout);
}

#[test]
fn after_the_notice_the_completed_engines_rings_go_back_at_the_settle() {
    use crate::nq::INFER_STATUS_NQS;
    for batching in [false, true] {
        let mut writes = Vec::new();
        for settle in [Settle::InFinalize, Settle::AfterNotice] {
            let mut r = Rig::new(1, 5);
            r.req = ExecRequest::new(ExecConfig::new(Arch::Sunda, 1, 5).with_settle(settle));
            r.nq.set_head_batching(batching);
            r.dev.run_all(1, 2_000_000, 3_000_000);
            r.enter_wait_core();
            let w0 = r.dev.head_writes;
            // One step reads each engine's START and END and completes it.
            assert_eq!(r.step(), Step::Done(NrtStatus::Success));
            let unacked =
                |r: &Rig| INFER_STATUS_NQS.iter().map(|&id| r.nq.ring(0, id).unwrap().unacked()).collect::<Vec<_>>();
            let at_notice = (r.dev.head_writes - w0, unacked(&r));
            r.req.settle(&mut *r.dev, &mut r.nq);
            assert_eq!(
                unacked(&r),
                [0; ENGINES_PER_CORE],
                "batching {batching}, {settle:?}: every read handed back once settled"
            );
            writes.push((at_notice, r.dev.head_writes - w0));
        }
        assert_eq!(
            writes[0],
            ((ENGINES_PER_CORE as u64, vec![0; ENGINES_PER_CORE]), ENGINES_PER_CORE as u64),
            "batching {batching}: the seed's order writes HEAD in the final step"
        );
        assert_eq!(
            writes[1],
            ((0, vec![2; ENGINES_PER_CORE]), ENGINES_PER_CORE as u64),
            "batching {batching}: after the notice, at the settle"
        );
    }
}
