//! FINALIZE: status priority across the cores, the timeout's classification by
//! the fault probes, and FINALIZE's parts run on their own.

use super::*;

#[test]
fn priority_reconciles_the_cores() {
    let mut r = Rig::new(2, 5);
    r.dev.run_all(2, 1, 2);
    r.dev.error(1, ErrorEntry::new(1, 0, 0, 5));
    r.enter_wait_core();
    assert_eq!(r.step(), Step::Done(NrtStatus::ExecCompletedWithNumErr));
    assert_eq!(r.req.out_info().exec_rets, [NrtStatus::Success, NrtStatus::ExecCompletedWithNumErr]);

    // Core 0 hangs (5, high), core 1 has an uncorrectable ECC (1202, critical).
    let mut r = Rig::new(2, 5);
    for e in 0..ENGINES_PER_CORE {
        r.dev.start(1, e, 1);
        r.dev.end(1, e, 2);
    }
    r.dev.error(1, ErrorEntry::new(4, 0, 0, 5));
    r.enter_wait_core();
    r.dev.advance_ms(5_000);
    assert_eq!(r.step(), Step::failed(NrtStatus::ExecHwErrNcUe));
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
        assert_eq!(r.step(), Step::failed(want), "{ctx:?}");
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
    assert_eq!(r.step(), Step::Done(NrtStatus::Success));
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
    assert_eq!(r.step(), Step::failed(NrtStatus::ExecSwNqOverflow));
    assert!(r.dev.fault_probes.is_empty(), "{:?}", r.dev.fault_probes);
    assert_eq!(r.req.out_info().timeout_cause, [None, None]);
    assert_eq!(r.dev.count("hw_fault") + r.dev.count("hang_on_compute"), 0);

    // An out-of-order record found as an overflow: not consulted either.
    let mut r = Rig::new(1, 5);
    r.dev.hbm[0] = Some(NrtStatus::ExecHwErrHbmUe);
    r.dev.intc_cause[0] = INTC_OVERFLOW;
    r.dev.end(0, 0, 1);
    r.enter_wait_core();
    assert_eq!(r.step(), Step::failed(NrtStatus::ExecSwNqOverflow));
    assert!(r.dev.fault_probes.is_empty());
}

#[test]
fn both_cores_pending_at_the_timeout_are_both_probed_and_classified() {
    // Both cores hang; core 1's probe finds a repairable HBM UE (1205, critical).
    let mut r = Rig::new(2, 5);
    r.dev.hbm[1] = Some(NrtStatus::ExecHwErrRepairableHbmUe);
    r.enter_wait_core();
    r.dev.advance_ms(5_000);
    assert_eq!(r.step(), Step::failed(NrtStatus::ExecHwErrRepairableHbmUe));
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
    assert_eq!(r.step(), Step::failed(NrtStatus::Timeout));
    assert_eq!(r.req.out_info().exec_rets, [NrtStatus::Timeout, NrtStatus::ExecSwNqOverflow]);
    // And the other way round.
    let mut r = Rig::new(2, 5);
    r.dev.intc_cause[0] = INTC_OVERFLOW;
    r.enter_wait_core();
    r.dev.advance_ms(5_000);
    assert_eq!(r.step(), Step::failed(NrtStatus::ExecSwNqOverflow));
    assert_eq!(r.req.out_info().exec_rets, [NrtStatus::ExecSwNqOverflow, NrtStatus::Timeout]);
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
    let mut lent = &mut *r.dev;
    assert_eq!(r.req.progress_one_step(&mut lent, &mut r.nq), Step::failed(NrtStatus::ExecHwErrCollectives));
    assert_eq!(r.req.out_info().timeout_cause, [Some(TimeoutCause::HangOnCompute), Some(TimeoutCause::Collectives)]);
}

#[test]
fn finalize_parts_run_finalizes_pieces_on_a_copy() {
    let mut r = Rig::new(2, 5);
    r.nq.set_sync_point(0, crate::nq::SyncPoint { dev_us: 0, cpu_us: 5_000_000 });
    r.dev.run_all(2, 4_000, 9_000);
    r.enter_wait_core();
    assert_eq!(r.step(), Step::Done(NrtStatus::Success));
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
