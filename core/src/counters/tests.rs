//! The status -> counter map, driven through the harvest with the seed's
//! statuses, and the block's arithmetic.

use super::id::*;
use super::*;
use crate::arch::Arch;
use crate::exec::{ExecConfig, ExecRequest, Step};
use crate::nq::{ErrorEntry, Notifications};
use crate::status::NrtError;
use crate::testutil::{FakeDevice, INTC_OVERFLOW};

const RING: u32 = 1024;

fn upd(status: NrtStatus) -> NcUpdate {
    NcUpdate { harvested: true, ..NcUpdate::unharvested(status) }
}

/// The ids an update increments, sorted.
fn bumped(u: &NcUpdate) -> Vec<usize> {
    let mut b = NcCounterBlock::new();
    b.apply(u, 0);
    let mut v: Vec<usize> = (0..EXT_LAST).filter(|&i| b.get(i) != 0).collect();
    v.sort_unstable();
    v
}

#[test]
fn every_status_increments_its_documented_counters() {
    let cases: &[(NrtStatus, &[usize])] = &[
        (NrtStatus::Success, &[INFER_COMPLETED, INFERENCE_COUNT]),
        (NrtStatus::ExecCompletedWithNumErr, &[INFER_COMPLETED_WITH_NUM_ERR, ERR_NUMERICAL]),
        (NrtStatus::ExecCompletedWithErr, &[INFER_COMPLETED_WITH_ERR, ERR_TRANSIENT]),
        (NrtStatus::Timeout, &[INFER_TIMED_OUT]),
        (NrtStatus::ExecSwNqOverflow, &[INFER_TIMED_OUT, ERR_RT, ERR_SW_NQ_OVERFLOW]),
        (NrtStatus::ExecHwErrCollectives, &[INFER_COMPLETED_WITH_ERR, ERR_HW, HW_ERR_COLLECTIVES]),
        (NrtStatus::ExecHwErrHbmUe, &[INFER_COMPLETED_WITH_ERR, ERR_HW, HW_ERR_HBM_UE]),
        (NrtStatus::ExecHwErrNcUe, &[INFER_COMPLETED_WITH_ERR, ERR_HW, HW_ERR_NC_UE]),
        (NrtStatus::ExecHwErrDmaAbort, &[INFER_COMPLETED_WITH_ERR, ERR_HW, HW_ERR_DMA_ABORT]),
        (NrtStatus::ExecHwErrRepairableHbmUe, &[INFER_COMPLETED_WITH_ERR, ERR_HW, HW_ERR_REPAIRABLE_HBM_UE]),
        (NrtStatus::HwError, &[INFER_COMPLETED_WITH_ERR, ERR_HW]),
        (NrtStatus::ExecOob, &[INFER_COMPLETED_WITH_ERR, ERR_GENERIC, OOB]),
        (NrtStatus::NetworkProxyFailure, &[INFER_COMPLETED_WITH_ERR, ERR_RT]),
        (NrtStatus::ExecBadInput, &[INFER_INCORRECT_INPUT]),
        (NrtStatus::QueueFull, &[INFER_FAILED_TO_QUEUE]),
        (NrtStatus::ExecUnitUnrecoverable, &[ERR_RT, GENERIC_FAIL]),
        (NrtStatus::Invalid, &[GENERIC_FAIL, ERR_INVALID]),
        (NrtStatus::Resource, &[GENERIC_FAIL, ERR_RESOURCE]),
        (NrtStatus::UnsupportedNeffVersion, &[GENERIC_FAIL, ERR_UNSUPPORTED_NEFF_VERSION]),
        (NrtStatus::Failure, &[ERR_GENERIC, GENERIC_FAIL]),
        (NrtStatus::Other(4242), &[ERR_GENERIC, GENERIC_FAIL]),
    ];
    for (status, want) in cases {
        let mut want = want.to_vec();
        want.sort_unstable();
        assert_eq!(bumped(&upd(*status)), want, "{status:?}");
    }
    let seq = NcUpdate { sequencer_error: true, ..upd(NrtStatus::ExecCompletedWithErr) };
    assert_eq!(bumped(&seq), vec![INFER_COMPLETED_WITH_ERR, ERR_GENERIC]);
    let ecc = NcUpdate { correctable_ecc: true, ..upd(NrtStatus::Success) };
    assert_eq!(bumped(&ecc), vec![INFER_COMPLETED, ERR_TRANSIENT, INFERENCE_COUNT]);
    // The flags mean nothing for another status.
    let odd = NcUpdate { correctable_ecc: true, sequencer_error: true, ..upd(NrtStatus::Timeout) };
    assert_eq!(bumped(&odd), vec![INFER_TIMED_OUT]);
}

#[test]
fn the_ids_are_the_driver_headers() {
    // share/neuron_driver_shared.h: the enums' values.
    assert_eq!((TIME_IN_USE, INFER_COMPLETED, INFER_FAILED_TO_QUEUE, ERR_GENERIC, ERR_RT), (0, 1, 6, 7, 12));
    assert_eq!(
        (LATENCY_DEVICE, LATENCY_TOTAL, NC_TIME, GENERIC_FAIL, ERR_UNSUPPORTED_NEFF_VERSION),
        (13, 14, 15, 16, 20)
    );
    assert_eq!(
        (CC_TIME, MODEL_LOAD_COUNT, INFERENCE_COUNT, MAC_COUNT, OOB, NC_COUNTER_COUNT),
        (21, 27, 28, 29, 30, 31)
    );
    assert_eq!(
        (HW_ERR_COLLECTIVES, HW_ERR_HBM_UE, HW_ERR_NC_UE, HW_ERR_DMA_ABORT, ERR_SW_NQ_OVERFLOW),
        (31, 32, 33, 34, 35)
    );
    assert_eq!((ERR_SW_SEQUENCER_FATAL, HW_ERR_REPAIRABLE_HBM_UE, EXT_LAST), (39, 40, 41));
    assert_eq!((EXT_NC_COUNTER_COUNT, TOTAL_NC_COUNTER_COUNT), (64, 95));
    assert_eq!((LATENCY_SAMPLES_WRITTEN, LATENCY_DEVICE_SAMPLES, LATENCY_TOTAL_SAMPLES, EXECUTIONS), (41, 42, 65, 88));
    assert_eq!((EXEC_COMPLETED, EXEC_FAILED_TO_QUEUE, EXEC_OTHER, WRITTEN_END), (88, 93, 94, 95));
}

#[test]
fn latencies_sum_and_the_window_keeps_the_last_23_in_order() {
    let mut b = NcCounterBlock::new();
    let (mut d, mut t) = ([0u64; LATENCY_WINDOW], [0u64; LATENCY_WINDOW]);
    assert_eq!(b.latency_samples(&mut d, &mut t), 0);
    for i in 1..=30u64 {
        b.apply(
            &NcUpdate { device_latency_us: i, started_ns: 1_000, ..upd(NrtStatus::Success) },
            1_000 + (100 + i) * 1_000,
        );
    }
    assert_eq!(b.get(LATENCY_DEVICE), (1..=30).sum::<u64>());
    assert_eq!(b.get(LATENCY_TOTAL), (101..=130).sum::<u64>());
    assert_eq!(b.get(LATENCY_SAMPLES_WRITTEN), 30);
    assert_eq!(b.get(INFER_COMPLETED), 30);
    assert_eq!(b.latency_samples(&mut d, &mut t), LATENCY_WINDOW);
    assert_eq!(d.to_vec(), (8..=30).collect::<Vec<u64>>());
    assert_eq!(t.to_vec(), (108..=130).collect::<Vec<u64>>());
    // Fewer than the window: just those, oldest first.
    let mut b = NcCounterBlock::new();
    b.apply(&NcUpdate { device_latency_us: 5, ..upd(NrtStatus::Timeout) }, 9_000);
    b.apply(&NcUpdate { device_latency_us: 6, started_ns: 2_000, ..upd(NrtStatus::Timeout) }, 10_999);
    assert_eq!(b.latency_samples(&mut d, &mut t), 2);
    assert_eq!((&d[..2], &t[..2]), (&[5u64, 6][..], &[9u64, 8][..]));
}

#[test]
fn an_unharvested_answer_counts_its_status_and_no_latency() {
    let mut b = NcCounterBlock::new();
    b.apply(&NcUpdate::unharvested(NrtStatus::ExecUnitUnrecoverable), 5_000_000);
    assert_eq!((b.get(GENERIC_FAIL), b.get(ERR_RT)), (1, 1));
    assert_eq!((b.get(LATENCY_TOTAL), b.get(LATENCY_SAMPLES_WRITTEN)), (0, 0));
}

#[test]
fn sums_wrap_never_panic_and_bad_ids_and_cores_are_ignored() {
    let mut b = NcCounterBlock::new();
    b.set(LATENCY_DEVICE, u64::MAX);
    b.set(LATENCY_SAMPLES_WRITTEN, u64::MAX);
    b.apply(&NcUpdate { device_latency_us: 2, started_ns: 5, ..upd(NrtStatus::Success) }, 0);
    assert_eq!(b.get(LATENCY_TOTAL), 0, "a clock behind the start is 0, not a wrap");
    assert_eq!(b.get(LATENCY_DEVICE), 1);
    assert_eq!(b.get(LATENCY_SAMPLES_WRITTEN), 0);
    assert_eq!(b.get(TOTAL_NC_COUNTER_COUNT), 0);
    assert_eq!(b.get(usize::MAX), 0);
    let mut c = NcCounters::<2>::new();
    assert!(c.apply(1, &upd(NrtStatus::Success), 0));
    assert!(!c.apply(2, &upd(NrtStatus::Success), 0));
    assert_eq!(c.core(1).map(|b| b.get(INFER_COMPLETED)), Some(1));
    assert_eq!(c.core(0).map(|b| b.get(INFER_COMPLETED)), Some(0));
    assert!(c.core(2).is_none());
}

// ---- Through the harvest: FINALIZE's hook with the seed's statuses ----

struct Rig {
    dev: Box<FakeDevice>,
    nq: Notifications,
    req: ExecRequest,
}

impl Rig {
    fn new(cores: u8) -> Rig {
        Rig {
            dev: Box::new(FakeDevice::new(Arch::Sunda, RING)),
            nq: FakeDevice::notifications(RING),
            req: ExecRequest::new(ExecConfig::new(Arch::Sunda, cores, 5)),
        }
    }
    fn step(&mut self) -> Step {
        self.req.progress_one_step(&mut *self.dev, &mut self.nq)
    }
    /// Step to DONE, advancing the clock 1 ms per step and, after `time_out_at`
    /// steps, past the budget.
    fn finish(&mut self, time_out_at: u32) -> Step {
        for i in 0..64 {
            if i == time_out_at {
                self.dev.advance_ms(5_000);
            }
            self.dev.advance_ms(1);
            let r = self.step();
            if r != Step::InFlight {
                return r;
            }
        }
        panic!("did not finish in 64 steps");
    }
    fn counted(&self, core: u8, id: usize) -> u64 {
        self.dev.counters.core(core).map_or(0, |b| b.get(id))
    }
}

/// One request per seed status: the status the harvest returns and the
/// counters its core's update increments.
#[test]
fn finalize_counts_each_seed_status_once() {
    type Setup = fn(&mut FakeDevice);
    let healthy: Setup = |d| d.run_all(1, 1_000_000, 4_000_000);
    let cases: &[(&str, Setup, u32, NrtStatus, &[usize])] = &[
        ("clean", healthy, 99, NrtStatus::Success, &[INFER_COMPLETED, INFERENCE_COUNT]),
        ("timeout", |_| {}, 2, NrtStatus::Timeout, &[INFER_TIMED_OUT]),
        (
            "overflow",
            |d| d.intc_cause[0] = INTC_OVERFLOW,
            2,
            NrtStatus::ExecSwNqOverflow,
            &[INFER_TIMED_OUT, ERR_RT, ERR_SW_NQ_OVERFLOW],
        ),
        (
            "nan",
            |d| {
                d.error(0, ErrorEntry::new(1, 0, 0, 1000));
                d.run_all(1, 1_000_000, 4_000_000);
            },
            99,
            NrtStatus::ExecCompletedWithNumErr,
            &[INFER_COMPLETED_WITH_NUM_ERR, ERR_NUMERICAL],
        ),
        (
            "transient",
            |d| {
                d.error(0, ErrorEntry::new(2, 0, 0, 1000));
                d.run_all(1, 1_000_000, 4_000_000);
            },
            99,
            NrtStatus::ExecCompletedWithErr,
            &[INFER_COMPLETED_WITH_ERR, ERR_TRANSIENT],
        ),
        (
            "sequencer",
            |d| {
                d.error(0, ErrorEntry::new(8, 0, 7, 1000));
                d.run_all(1, 1_000_000, 4_000_000);
            },
            99,
            NrtStatus::ExecCompletedWithErr,
            &[INFER_COMPLETED_WITH_ERR, ERR_GENERIC],
        ),
        (
            "uncorrectable ecc",
            |d| {
                d.error(0, ErrorEntry::new(4, 0, 0, 1000));
                d.run_all(1, 1_000_000, 4_000_000);
            },
            99,
            NrtStatus::ExecHwErrNcUe,
            &[INFER_COMPLETED_WITH_ERR, ERR_HW, HW_ERR_NC_UE],
        ),
        (
            "correctable ecc",
            |d| {
                d.error(0, ErrorEntry::new(3, 0, 0, 1000));
                d.run_all(1, 1_000_000, 4_000_000);
            },
            99,
            NrtStatus::Success,
            &[INFER_COMPLETED, INFERENCE_COUNT, ERR_TRANSIENT],
        ),
        (
            "hbm ue at the timeout",
            |d| d.hbm[0] = Some(NrtStatus::ExecHwErrHbmUe),
            2,
            NrtStatus::ExecHwErrHbmUe,
            &[INFER_COMPLETED_WITH_ERR, ERR_HW, HW_ERR_HBM_UE],
        ),
        (
            "repairable hbm ue at the timeout",
            |d| d.hbm[0] = Some(NrtStatus::ExecHwErrRepairableHbmUe),
            2,
            NrtStatus::ExecHwErrRepairableHbmUe,
            &[INFER_COMPLETED_WITH_ERR, ERR_HW, HW_ERR_REPAIRABLE_HBM_UE],
        ),
        (
            "dma abort at the timeout",
            |d| d.dma_abort[0] = true,
            2,
            NrtStatus::ExecHwErrDmaAbort,
            &[INFER_COMPLETED_WITH_ERR, ERR_HW, HW_ERR_DMA_ABORT],
        ),
        (
            "collectives at the timeout",
            |d| d.collectives_stuck[0] = true,
            2,
            NrtStatus::ExecHwErrCollectives,
            &[INFER_COMPLETED_WITH_ERR, ERR_HW, HW_ERR_COLLECTIVES],
        ),
        (
            "network proxy",
            |d| d.network_fail[0] = NrtError::new(NrtStatus::NetworkProxyFailure),
            99,
            NrtStatus::NetworkProxyFailure,
            &[INFER_COMPLETED_WITH_ERR, ERR_RT],
        ),
    ];
    for (name, setup, time_out_at, status, want) in cases {
        let mut r = Rig::new(1);
        setup(&mut r.dev);
        let got = r.finish(*time_out_at).status();
        assert_eq!(got, Some(*status), "{name}");
        assert_eq!(r.dev.counter_updates.len(), 1, "{name}: one update per core");
        let (core, u) = r.dev.counter_updates[0];
        assert_eq!((core, u.status), (0, *status), "{name}");
        let mut want = want.to_vec();
        want.sort_unstable();
        let got: Vec<usize> =
            (0..EXT_LAST).filter(|&i| i != LATENCY_DEVICE && i != LATENCY_TOTAL && r.counted(0, i) != 0).collect();
        assert_eq!(r.counted(0, LATENCY_TOTAL), u.total_latency_us(r.dev.now.get()), "{name}");
        assert_eq!(got, want, "{name}");
        for &i in &want {
            assert_eq!(r.counted(0, i), 1, "{name}: counter {i} once");
        }
        // DONE is terminal: stepping again counts nothing more.
        r.step();
        r.step();
        assert_eq!(r.dev.counter_updates.len(), 1, "{name}: counted once");
    }
}

#[test]
fn device_latency_is_the_cores_duration_and_total_runs_from_init() {
    let mut r = Rig::new(2);
    r.dev.run_all(2, 1_000_000, 4_000_000);
    let t_init = r.dev.now.get() + 1_000_000; // finish() advances 1 ms before the INIT step
    let reads_before = r.dev.now.get();
    let s = r.finish(99);
    assert!(r.dev.now.get() > reads_before);
    assert_eq!(s, Step::Done(NrtStatus::Success));
    let t_end = r.dev.now.get();
    assert_eq!(r.dev.counter_updates.len(), 2);
    for (core, u) in r.dev.counter_updates.iter() {
        let dur = r.req.out_info().tpb_duration_us[usize::from(*core)];
        assert!(dur > 0, "the engines' START..END span is not empty");
        assert_eq!(u.device_latency_us, dur);
        assert_eq!(u.started_ns, t_init);
        assert_eq!(r.counted(*core, LATENCY_TOTAL), (t_end - t_init) / 1_000);
        assert_eq!(r.counted(*core, LATENCY_DEVICE), dur);
        assert_eq!(r.counted(*core, INFER_COMPLETED), 1);
        assert_eq!(r.counted(*core, EXEC_COMPLETED), u64::from(*core == 0), "the execution once, at core 0");
    }
}

#[test]
fn a_core_that_finished_cleanly_beside_one_that_timed_out_counts_completed() {
    let mut r = Rig::new(2);
    for e in 0..crate::arch::ENGINES_PER_CORE {
        r.dev.start(1, e, 1_000_000);
        r.dev.end(1, e, 2_000_000);
    }
    let st = r.finish(2).status();
    assert_eq!(st, Some(NrtStatus::Timeout));
    assert_eq!((r.counted(0, INFER_TIMED_OUT), r.counted(0, INFER_COMPLETED)), (1, 0));
    assert_eq!((r.counted(1, INFER_TIMED_OUT), r.counted(1, INFER_COMPLETED)), (0, 1));
    assert_eq!((r.counted(0, EXEC_TIMED_OUT), r.counted(0, EXEC_COMPLETED), r.counted(1, EXEC_COMPLETED)), (1, 0, 0));
}

#[test]
fn a_core_cut_short_by_another_cores_failure_counts_the_requests_status() {
    // An unbound INFER_STATUS ring on core 0 (a BadRing at the barrier
    // transition) fails core 0 with NRT_FAILURE; core 1 has no status of its
    // own but never ran: it counts the request's failure, not a completion.
    let mut r = Rig::new(2);
    r.nq = Notifications::new();
    let s = r.finish(99);
    assert_eq!(s, Step::failed(NrtStatus::Failure));
    assert_eq!((r.counted(0, GENERIC_FAIL), r.counted(0, ERR_GENERIC)), (1, 1));
    assert_eq!((r.counted(1, GENERIC_FAIL), r.counted(1, INFER_COMPLETED)), (1, 0));
    assert_eq!(r.dev.counter_updates[1].1.status, NrtStatus::Failure);
    assert_eq!(r.dev.counter_updates.len(), 2);
}

/// The execution unit counts every completion (seed §6: the DONE path's
/// `kmetric_update_nds_*`), the 101 answers of a degraded unit included.
#[test]
fn the_execution_unit_counts_every_completion_once() {
    use crate::exec::{ExecUnit, XuQueue, XuSignalError, XuStep, XuWork};
    #[derive(Default)]
    struct Q(std::collections::VecDeque<XuWork>, u32);
    impl XuQueue for Q {
        fn peek_current(&mut self) -> Option<XuWork> {
            self.0.front().copied()
        }
        fn consume_has_work(&mut self) -> Result<(), XuSignalError> {
            self.1 = self.1.checked_sub(1).ok_or(XuSignalError::Underflow)?;
            Ok(())
        }
        fn pop_current(&mut self, _seq_id: u64, _status: NrtStatus) -> Result<(), XuSignalError> {
            self.0.pop_front();
            Ok(())
        }
    }
    let mut dev = Box::new(FakeDevice::new(Arch::Sunda, RING));
    let mut nq = FakeDevice::notifications(RING);
    let mut xu = ExecUnit::new();
    let mut q = Q::default();
    for seq_id in 1..=2 {
        q.0.push_back(XuWork { seq_id, config: ExecConfig::new(Arch::Sunda, 1, 0) }); // nothing arrives: 5
        q.1 += 1;
    }
    let mut done = Vec::new();
    for _ in 0..16 {
        if let XuStep::Completed { status, .. } = xu.step(&mut *dev, &mut nq, &mut q) {
            done.push(status);
        }
        if done.len() == 2 {
            break;
        }
    }
    assert_eq!(done, [NrtStatus::Timeout, NrtStatus::ExecUnitUnrecoverable]);
    let b = dev.counters.core(0).unwrap();
    assert_eq!((b.get(INFER_TIMED_OUT), b.get(GENERIC_FAIL), b.get(ERR_RT)), (1, 1, 1));
    assert_eq!(dev.counter_updates.len(), 2, "once each");
    assert_eq!(b.get(LATENCY_SAMPLES_WRITTEN), 1, "the unharvested one has no latency");
    // Each carries its request's status as the execution (one core each); a
    // 101 has no execution-summary field: it counts as another.
    let executions: Vec<_> = dev.counter_updates.iter().map(|(_, u)| u.execution).collect();
    assert_eq!(executions, [Some(NrtStatus::Timeout), Some(NrtStatus::ExecUnitUnrecoverable)]);
    assert_eq!((b.get(EXEC_TIMED_OUT), b.get(EXEC_OTHER)), (1, 1));
    assert_eq!((EXECUTIONS..WRITTEN_END).map(|i| b.get(i)).sum::<u64>(), 2, "each execution in one");
}

/// A degraded unit's 101 over two cores: each core counts it, the execution
/// only at the first.
#[test]
fn a_degraded_units_answer_over_two_cores_is_one_execution() {
    struct Q(Option<crate::exec::XuWork>);
    impl crate::exec::XuQueue for Q {
        fn peek_current(&mut self) -> Option<crate::exec::XuWork> {
            self.0
        }
        fn consume_has_work(&mut self) -> Result<(), crate::exec::XuSignalError> {
            Ok(())
        }
        fn pop_current(&mut self, _: u64, _: NrtStatus) -> Result<(), crate::exec::XuSignalError> {
            self.0 = None;
            Ok(())
        }
    }
    let mut dev = Box::new(FakeDevice::new(Arch::Sunda, RING));
    let mut nq = FakeDevice::notifications(RING);
    let mut xu = crate::exec::ExecUnit::new();
    // A first request that times out puts the unit in FATAL_SHUTDOWN.
    let mut q = Q(Some(crate::exec::XuWork { seq_id: 1, config: ExecConfig::new(Arch::Sunda, 1, 0) }));
    for _ in 0..16 {
        if q.0.is_none() {
            break;
        }
        xu.step(&mut *dev, &mut nq, &mut q);
    }
    dev.counter_updates.clear();
    q.0 = Some(crate::exec::XuWork { seq_id: 2, config: ExecConfig::new(Arch::Sunda, 2, 0) });
    xu.step(&mut *dev, &mut nq, &mut q);
    let got: Vec<_> = dev.counter_updates.iter().map(|(c, u)| (*c, u.status, u.execution)).collect();
    let s = NrtStatus::ExecUnitUnrecoverable;
    assert_eq!(got, [(0, s, Some(s)), (1, s, None)]);
}

#[test]
fn an_execution_counts_once_in_its_requests_outcome() {
    let cases = [
        (NrtStatus::Success, EXEC_COMPLETED),
        (NrtStatus::ExecCompletedWithNumErr, EXEC_COMPLETED_WITH_NUM_ERR),
        (NrtStatus::ExecCompletedWithErr, EXEC_COMPLETED_WITH_ERR),
        (NrtStatus::ExecHwErrHbmUe, EXEC_COMPLETED_WITH_ERR),
        (NrtStatus::Timeout, EXEC_TIMED_OUT),
        (NrtStatus::ExecSwNqOverflow, EXEC_TIMED_OUT),
        (NrtStatus::ExecBadInput, EXEC_INCORRECT_INPUT),
        (NrtStatus::QueueFull, EXEC_FAILED_TO_QUEUE),
        (NrtStatus::ExecUnitUnrecoverable, EXEC_OTHER),
        (NrtStatus::Failure, EXEC_OTHER),
        (NrtStatus::Other(4242), EXEC_OTHER),
    ];
    for (status, want) in cases {
        assert_eq!(execution_counter(status), want, "{status:?}");
        let mut b = NcCounterBlock::new();
        b.apply(&NcUpdate { execution: Some(status), ..upd(NrtStatus::Success) }, 0);
        let got: Vec<usize> = (EXECUTIONS..WRITTEN_END).filter(|&i| b.get(i) != 0).collect();
        assert_eq!(got, [want], "{status:?}");
        assert_eq!(b.get(want), 1, "{status:?}: once");
        // The core's own words are its own outcome's, whatever the execution's.
        assert_eq!((b.get(INFER_COMPLETED), b.get(INFERENCE_COUNT)), (1, 1), "{status:?}");
    }
    let mut b = NcCounterBlock::new();
    b.apply(&upd(NrtStatus::Success), 0);
    assert!((EXECUTIONS..WRITTEN_END).all(|i| b.get(i) == 0), "a core that is not the first counts no execution");
    assert_eq!((EXECUTIONS, EXEC_OTHER, WRITTEN_END), (88, 94, 95), "in the driver's reserved ids, below 95");
}

#[test]
fn two_cores_count_their_own_status() {
    let mut r = Rig::new(2);
    r.dev.error(1, ErrorEntry::new(1, 0, 0, 1000));
    r.dev.run_all(2, 1_000_000, 4_000_000);
    let st = r.finish(99).status();
    assert_eq!(st, Some(NrtStatus::ExecCompletedWithNumErr), "the worst of the cores");
    assert_eq!(r.counted(0, INFER_COMPLETED), 1);
    assert_eq!(r.counted(0, INFER_COMPLETED_WITH_NUM_ERR), 0);
    assert_eq!(r.counted(1, INFER_COMPLETED_WITH_NUM_ERR), 1);
    assert_eq!(r.counted(1, INFER_COMPLETED), 0); // One execution, at core 0, in the request's outcome only.
    let executions: Vec<u64> =
        (0..2).flat_map(|c| (EXECUTIONS..WRITTEN_END).map(move |i| (c, i))).map(|(c, i)| r.counted(c, i)).collect();
    assert_eq!(executions.iter().sum::<u64>(), 1);
    assert_eq!(r.counted(0, EXEC_COMPLETED_WITH_NUM_ERR), 1);
}

/// The counters no outcome ever increments are exactly those G-NDS-UNWRITTEN
/// lists (and the runtime's memory-usage ids 22..=26, not execution
/// counters): every status, with and without the error-class flags, harvested
/// or not. A status newly mapped to one of them fails here until the gap and
/// the constants' comments say so.
#[test]
fn the_counters_never_written_are_the_documented_ones() {
    let mut touched = [false; EXT_LAST];
    let statuses = NrtStatus::ALL.iter().copied().chain([NrtStatus::Other(4242), NrtStatus::Other(u32::MAX)]);
    for status in statuses {
        for (sequencer_error, correctable_ecc, harvested) in
            [(false, false, true), (true, false, true), (false, true, true), (false, false, false)]
        {
            let u = NcUpdate { sequencer_error, correctable_ecc, harvested, device_latency_us: 7, ..upd(status) };
            let mut b = NcCounterBlock::new();
            b.apply(&u, 1_000_000);
            for (i, t) in touched.iter_mut().enumerate() {
                *t |= b.get(i) != 0;
            }
        }
    }
    let never: Vec<usize> = (0..EXT_LAST).filter(|&i| !touched[i]).collect();
    let mut want = vec![
        TIME_IN_USE,
        ERR_MODEL,
        NC_TIME,
        ERR_RESOURCE_NC,
        CC_TIME,
        MODEL_LOAD_COUNT,
        MAC_COUNT,
        ERR_SW_SEMAPHORE_ERROR,
        ERR_SW_EVENT_ERROR,
        ERR_SW_PSUM_COLLISION,
        ERR_SW_SEQUENCER_FATAL,
    ];
    want.extend(22..=26);
    want.sort_unstable();
    assert_eq!(never, want);
}
