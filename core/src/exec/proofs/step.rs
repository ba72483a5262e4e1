//! The one-step contract by induction: completion-engine seed §1, "returns 1
//! ... 0 ... or 2", and DESIGN.md's "a DONE request is terminal".
//!
//! A proof that unrolls `progress_one_step` for k calls is bounded by k and
//! grows with it. This one is unbounded: [`reachable`] is an invariant that
//! holds for a new request, and [`step_once`] with the per-state properties
//! (`step_from_*_keeps_the_contract`) shows that ONE call from ANY request
//! satisfying it, against a device whose every answer is
//! arbitrary ([`HavocDev`]), returns 0, 1 or 2 with the right state and status and
//! leaves a request that still satisfies it. By induction the contract holds for
//! every call of every harvest, however long. One harness per state keeps each
//! solver run small.
//!
//! What the device may do, per call: any 16 bytes in any slot it is asked
//! for, a failed read or HEAD write, any INTC cause or a failed INTC read, any
//! proxy, fault-probe or tensor-waiter answer, and a clock that jumps forward
//! by any amount. The rings are 2 entries under kani and 2 or 4 in the tests:
//! `step_once` says why that bound covers every sequence of records, and
//! `nq::ring::proofs` covers every ring size and position.

use core::cell::{Cell, RefCell};

use crate::arch::{Arch, ENGINES_PER_CORE, MAX_CORES};
use crate::exec::ExecEvent;
use crate::exec::{fatal, ts_slot, ExecConfig, ExecRequest, ExecState, Settle, Step, TpbEngState, MS_PER_TIMEOUT_S};
use crate::hal::{self, ErrorKind, ErrorType};
use crate::nq::{Notifications, SyncPoint, TsCal, ERROR_NQ, INFER_STATUS_NQS};
use crate::proofs::{cover, Any};
use crate::status::{NrtError, NrtStatus};

/// A device whose every answer is drawn from an [`Any`].
pub(crate) struct HavocDev<A: Any> {
    any: RefCell<A>,
    pub(super) now: Cell<u64>,
    ring_size: u32,
    pub(crate) events: u32,
}

impl<A: Any> HavocDev<A> {
    pub(crate) fn new(any: A, now: u64, ring_size: u32) -> HavocDev<A> {
        HavocDev { any: RefCell::new(any), now: Cell::new(now), ring_size, events: 0 }
    }

    fn fails(&self) -> bool {
        // One draw in 64 fails; under kani any draw may.
        self.any.borrow_mut().u8() >= 0xFC
    }
}

impl<A: Any> ErrorType for HavocDev<A> {
    type Error = ErrorKind;
}

impl<A: Any> hal::NqRings for HavocDev<A> {
    fn read_slot(&mut self, core: u8, nq: u8, offset: u32, out: &mut [u8; 16]) -> Result<(), ErrorKind> {
        assert!(offset < self.ring_size && offset.is_multiple_of(16), "a read outside the ring");
        assert!(usize::from(core) < MAX_CORES && usize::from(nq) < crate::nq::NQ_PER_CORE, "no such ring");
        if self.fails() {
            return Err(ErrorKind::Io);
        }
        *out = self.any.borrow_mut().bytes16();
        Ok(())
    }
    fn write_head(&mut self, _: u8, _: u8, head: u32) -> Result<(), ErrorKind> {
        assert!(head < self.ring_size && head.is_multiple_of(16), "HEAD outside the ring");
        if self.fails() {
            return Err(ErrorKind::Io);
        }
        Ok(())
    }
}

impl<A: Any> hal::IntcCause for HavocDev<A> {
    fn read_cause(&mut self, _: u8, _: u32, line: u32) -> Result<u32, ErrorKind> {
        assert_eq!(line, crate::exec::INTC_SW_NQ_OVERFLOW_LINE, "the probe reads INTC line 61");
        if self.fails() {
            return Err(ErrorKind::Io);
        }
        Ok(self.any.borrow_mut().u32())
    }
}

impl<A: Any> hal::Clock for HavocDev<A> {
    fn now_ns(&self) -> u64 {
        let t = self.now.get().saturating_add(self.any.borrow_mut().u64());
        self.now.set(t);
        t
    }
}

fn proxy<A: Any>(dev: &HavocDev<A>) -> Result<bool, NrtError> {
    let mut any = dev.any.borrow_mut();
    match any.u8() {
        0x00..=0xDF => Ok(any.bool()),
        _ => Err(NrtError::failed(NrtStatus::from_code(any.u32()))),
    }
}

impl<A: Any> hal::CollectivesProxy for HavocDev<A> {
    fn barrier_status(&mut self, _: u8) -> Result<bool, NrtError> {
        proxy(self)
    }
    fn network_status(&mut self, _: u8) -> Result<bool, NrtError> {
        proxy(self)
    }
}

impl<A: Any> hal::FaultProbe for HavocDev<A> {
    fn hbm_uncorrectable(&mut self, _: u8) -> Option<NrtStatus> {
        let mut any = self.any.borrow_mut();
        any.bool().then(|| NrtStatus::from_code(any.u32()))
    }
    fn dma_aborted(&mut self, _: u8) -> bool {
        self.any.borrow_mut().bool()
    }
    fn collectives_stuck(&mut self, _: u8) -> bool {
        self.any.borrow_mut().bool()
    }
}

impl<A: Any> hal::EventSink<ExecEvent> for HavocDev<A> {
    fn event(&mut self, _: &ExecEvent) {
        self.events = self.events.saturating_add(1);
    }
}

impl<A: Any> crate::counters::CounterSink for HavocDev<A> {}

impl<A: Any> hal::TensorNotify for HavocDev<A> {
    fn tensor_completed(&mut self, _: u8, _: u16) -> Option<(u16, u32)> {
        let mut any = self.any.borrow_mut();
        any.bool().then(|| (any.u16(), any.u32()))
    }
}

/// Any substate.
pub(super) fn any_substate<A: Any>(any: &mut A) -> TpbEngState {
    match any.u8() % 3 {
        0 => TpbEngState::StartPending,
        1 => TpbEngState::EndPending,
        _ => TpbEngState::Complete,
    }
}

/// The induction hypothesis: what every request that `ExecRequest::new` made and
/// `progress_one_step` moved looks like, per state.
///
/// - always: 1 or 2 cores;
/// - before WAIT_CORE: every substate START_PENDING, no timestamp, no fatal
///   flag, every core's status `NRT_SUCCESS`, no budget, no result; in INIT no
///   barrier reported done;
/// - in WAIT_CORE: the same but for substates and timestamps, which may be
///   anything, every barrier cleared and the budget `1000 * timeout_s`;
/// - in DONE: timestamps in CPU time, or device time with the settle due, and
///   the cached result 0 or 2, with 2 never carrying `NRT_SUCCESS`.
#[allow(clippy::needless_range_loop)] // index loops, see below
pub(crate) fn reachable(r: &ExecRequest) -> bool {
    let n = r.tpb_count();
    let cores_ok = (1..=MAX_CORES).contains(&n);
    // Index loops over constant bounds, not `iter().all()`: the solver bounds a
    // slice iterator's loop only by the unwind limit, an index loop by its constant.
    let mut quiet = r.result == Step::InFlight && !r.ts_is_cpu && !r.settle_due;
    let mut fresh = true;
    let mut none_done = true;
    let mut harvested_done = true;
    let mut past_n_untouched = true;
    for c in 0..MAX_CORES {
        for f in 0..fatal::COUNT {
            quiet &= !r.exec_fatal_status[c][f];
        }
        quiet &= r.out_info.exec_rets[c].is_success();
        for e in 0..ENGINES_PER_CORE {
            let start = r.tpb_exec_state[c][e] == TpbEngState::StartPending;
            fresh &= start;
            // Cores past the request's are never touched.
            past_n_untouched &= c < n || start;
        }
        for t in 0..ts_slot::COUNT {
            fresh &= r.vcore_notif_ts[c][t] == 0;
        }
        none_done &= !r.proxy_done[c];
        harvested_done &= c >= n || r.proxy_done[c];
    }
    let state_ok = match r.state {
        ExecState::Init => quiet && fresh && r.timeout_ms == 0 && none_done,
        ExecState::WaitBarrierProxy => quiet && fresh && r.timeout_ms == 0,
        ExecState::WaitCore => {
            quiet && harvested_done && r.timeout_ms == MS_PER_TIMEOUT_S * u64::from(r.cfg.timeout_s) && past_n_untouched
        }
        ExecState::Done => {
            // In CPU time, or still device time with the settle due, G-SETTLE.
            let settled = r.ts_is_cpu && !r.settle_due;
            let due = !r.ts_is_cpu && r.settle_due && r.cfg.settle == Settle::AfterNotice;
            (settled || due)
                && match r.result {
                    Step::InFlight => false,
                    Step::Done(_) => true,
                    Step::Error(e) => !e.status().is_success(),
                }
        }
    };
    cores_ok && state_ok
}

/// Any request in state `state` that satisfies [`reachable`]: every field the
/// invariant leaves free is drawn from `any`.
pub(crate) fn any_request<A: Any>(any: &mut A, state: ExecState, cores: Option<u8>) -> ExecRequest {
    let arch = [Arch::Sunda, Arch::Cayman, Arch::Mariana][usize::from(any.u8() % 3)];
    let tpb_count = match cores {
        Some(n) => n,
        None => any.u8(),
    };
    let mut cfg = ExecConfig::new(arch, tpb_count, any.u32());
    cfg.tpb_idx = [any.u8(), any.u8()];
    // Under kani the seed's order only: the settle's mode changes FINALIZE's
    // frame, not the steps', and each mode doubles the solver's work in every
    // harness; the tests draw both, G-SETTLE.
    if !cfg!(kani) && any.bool() {
        cfg.settle = Settle::AfterNotice;
    }
    let mut r = ExecRequest::new(cfg);
    let n = r.tpb_count();
    r.state = state;
    match state {
        ExecState::Init => {}
        ExecState::WaitBarrierProxy => {
            r.barrier_start_ns = any.u64();
            r.barrier_thresh_s = any.u32();
            r.proxy_done = [any.bool(), any.bool()];
        }
        ExecState::WaitCore => {
            r.barrier_start_ns = any.u64();
            r.barrier_thresh_s = any.u32();
            r.proxy_done = [true, n == MAX_CORES];
            r.network_proxy_done = [any.bool(), any.bool()];
            r.core_start_ns = any.u64();
            r.timeout_ms = MS_PER_TIMEOUT_S * u64::from(r.cfg.timeout_s);
            // Over both cores with a guard inside, not `0..n` or an adaptor: a
            // bound the solver knows only as 1 or 2 would be unwound to the
            // harness's limit, with the nested loops below.
            for core in 0..MAX_CORES {
                if core >= n {
                    continue;
                }
                for eng in 0..ENGINES_PER_CORE {
                    r.tpb_exec_state[core][eng] = any_substate(any);
                }
                // Under kani the earlier timestamps are 0; the tests draw them.
                // No part of the one-step contract reads a timestamp, while each
                // nonzero slot costs FINALIZE a 64-bit division in the solver.
                for slot in 0..ts_slot::COUNT {
                    r.vcore_notif_ts[core][slot] = if cfg!(kani) { 0 } else { any.u64() };
                }
                r.slot_engine[core] = [any.u8(), any.u8(), any.u8()];
            }
        }
        ExecState::Done => {
            for core in 0..MAX_CORES {
                for eng in 0..ENGINES_PER_CORE {
                    r.tpb_exec_state[core][eng] = any_substate(any);
                }
                for f in 0..fatal::COUNT {
                    r.exec_fatal_status[core][f] = any.bool();
                }
                r.out_info.exec_rets[core] = NrtStatus::from_code(any.u32());
                r.vcore_notif_ts[core][0] = any.u64();
            }
            // Settled, or with its settle still due.
            r.settle_due = r.cfg.settle == Settle::AfterNotice && any.bool();
            r.ts_is_cpu = !r.settle_due;
            let status = NrtStatus::from_code(any.u32());
            r.result = if status.is_success() || any.bool() {
                Step::Done(status)
            } else {
                Step::Error(NrtError::failed(status))
            };
        }
    }
    r
}

/// The size of the rings, bytes: 2 entries under kani, 2 or 4 in the tests;
/// [`step_once`] says why 2 entries hide nothing.
pub(super) fn ring_size<A: Any>(any: &mut A) -> u32 {
    if cfg!(kani) {
        32
    } else {
        32u32 << (any.u8() % 2)
    }
}

/// Every ring of both cores bound with `ring_size` bytes, any sync point per
/// core and any calibration, the same for every engine.
pub(super) fn bound_notifications<A: Any>(any: &mut A, ring_size: u32) -> Notifications {
    let mut nq = Notifications::new();
    for core in 0..MAX_CORES as u8 {
        assert!(nq.bind_core(core, ring_size).is_ok());
        nq.set_sync_point(core, SyncPoint { dev_us: any.u64(), cpu_us: any.u64() });
    }
    let cal = TsCal { init_timestamp: any.u64(), actual_timestamp_inc: any.u32(), expected_timestamp_inc: any.u32() };
    for core in 0..MAX_CORES as u8 {
        for eng in 0..ENGINES_PER_CORE {
            nq.set_cal(core, eng, cal);
        }
    }
    nq
}

/// Two arrays are equal, compared element by element: `==` is a `memcmp`
/// whose byte loop would need an unwind bound of its size.
#[allow(clippy::needless_range_loop)] // the index loop is the point: no memcmp
pub(super) fn eq<T: PartialEq, const N: usize>(a: &[T; N], b: &[T; N]) -> bool {
    let mut same = true;
    for i in 0..N {
        same &= a[i] == b[i];
    }
    same
}

/// Two requests are the same in every field.
pub(super) fn same(a: &ExecRequest, b: &ExecRequest) -> bool {
    let mut per_core = true;
    for c in 0..MAX_CORES {
        per_core &= eq(&a.tpb_exec_state[c], &b.tpb_exec_state[c])
            && eq(&a.vcore_notif_ts[c], &b.vcore_notif_ts[c])
            && eq(&a.slot_engine[c], &b.slot_engine[c])
            && eq(&a.exec_fatal_status[c], &b.exec_fatal_status[c]);
    }
    per_core
        && a.state == b.state
        && a.cfg.arch == b.cfg.arch
        && a.cfg.tpb_count == b.cfg.tpb_count
        && a.cfg.timeout_s == b.cfg.timeout_s
        && eq(&a.cfg.tpb_idx, &b.cfg.tpb_idx)
        && a.barrier_start_ns == b.barrier_start_ns
        && a.barrier_thresh_s == b.barrier_thresh_s
        && eq(&a.proxy_done, &b.proxy_done)
        && a.core_start_ns == b.core_start_ns
        && a.timeout_ms == b.timeout_ms
        && eq(&a.network_proxy_done, &b.network_proxy_done)
        && a.ts_is_cpu == b.ts_is_cpu
        && a.settle_due == b.settle_due
        && a.cfg.settle == b.cfg.settle
        && eq(&a.ts_recorded, &b.ts_recorded)
        && eq(&a.out_info.exec_rets, &b.out_info.exec_rets)
        && eq(&a.out_info.tpb_duration_us, &b.out_info.tpb_duration_us)
        && eq(&a.out_info.err, &b.out_info.err)
        && eq(&a.out_info.timeout_cause, &b.out_info.timeout_cause)
        && a.result == b.result
}

/// What one call did: the request before and after, the return and its
/// status, `Other(0xDEAD)` in flight.
pub(crate) struct Stepped {
    before: ExecRequest,
    after: ExecRequest,
    step: Step,
    out: NrtStatus,
}

/// The inductive step common to every state, seed §1, the one-step contract:
/// from any request in state `from` satisfying [`reachable`], against any device
/// behaviour, one call of `progress_one_step` returns 1 and leaves the request
/// before DONE, or returns 0 or 2 with the request DONE, the return the cached
/// result and 2 never with `NRT_SUCCESS`; never moves the machine backwards; and
/// leaves a request that satisfies [`reachable`] again. The per-state
/// properties below add what is particular to each state, and their own covers.
///
/// `rings`: the states that read the rings get bound rings with arbitrary
/// calibration and sync points, or before the transition a wrong ring table.
fn step_once<A: Any>(mut any: A, from: ExecState, rings: bool, cores: Option<u8>) -> Stepped {
    let mut req = any_request(&mut any, from, cores);
    assert!(reachable(&req), "the generator made an unreachable request");
    // Under kani the rings hold 2 entries, so a batch reads at most one slot
    // per engine per call; the tests also use 4-entry rings. That hides no
    // behaviour: a batch of k reads is the matcher applied to k records in
    // turn, as k calls of one read each are, and between those calls the
    // end-of-sweep check reads only the substates and a clock HavocDev may
    // leave anywhere. The loop's own bounds, `nq::ring::proofs` covers.
    let ring_size = ring_size(&mut any);
    let mut nq = if rings { bound_notifications(&mut any, ring_size) } else { Notifications::new() };
    let before = req.clone();
    let mut dev = HavocDev::new(any, before.core_start_ns.max(before.barrier_start_ns), ring_size);
    // The ring table: as bound, or before the transition one INFER_STATUS ring
    // too few or a ring of the last core left unbound. Each table is its own
    // branch with the step inside, so every ring's size is a constant there
    // and bounds the batch and error-sweep loops.
    let table = if rings && from == ExecState::WaitBarrierProxy { dev.any.borrow_mut().u8() } else { 0 };
    let last = (req.tpb_count() - 1) as u8;
    let mut step_with = |nq: &mut Notifications| req.progress_one_step(&mut dev, nq);
    let step = match table {
        0xF0..=0xF7 => {
            assert!(nq.set_infer_status_nqs(&INFER_STATUS_NQS[..INFER_STATUS_NQS.len() - 1]).is_ok());
            step_with(&mut nq)
        }
        0xF8..=0xFB => {
            if let Some(r) = nq.ring_mut(last, INFER_STATUS_NQS[2]) {
                *r = crate::nq::NqRing::UNBOUND;
            }
            step_with(&mut nq)
        }
        0xFC..=0xFF => {
            if let Some(r) = nq.ring_mut(last, ERROR_NQ) {
                *r = crate::nq::NqRing::UNBOUND;
            }
            step_with(&mut nq)
        }
        _ => step_with(&mut nq),
    };
    let out = step.status().unwrap_or(NrtStatus::Other(0xDEAD));
    assert!(step.code() <= 2);
    assert!(req.state as u8 >= from as u8, "the machine moved backwards");
    match step {
        Step::InFlight => assert_ne!(req.state, ExecState::Done, "1 from a DONE request"),
        Step::Done(_) | Step::Error(_) => {
            assert_eq!(req.state, ExecState::Done, "0 or 2 before DONE");
            assert_eq!(req.result(), Some(step), "the return is not the cached result");
            assert!(matches!(step, Step::Done(_)) || !out.is_success(), "2 with NRT_SUCCESS");
        }
    }
    assert!(reachable(&req), "one step left a request the invariant does not hold for");
    Stepped { before, after: req, step, out }
}

/// INIT: one call always returns 1 and moves to WAIT_BARRIER_PROXY.
pub(crate) fn step_from_init_keeps_the_contract<A: Any>(any: A) {
    let r = step_once(any, ExecState::Init, false, None);
    assert_eq!((r.step, r.after.state), (Step::InFlight, ExecState::WaitBarrierProxy));
    assert_eq!(r.after.barrier_thresh_s, crate::exec::BARRIER_WARN_INITIAL_S);
    cover!(r.after.cfg.tpb_count == 2, "init: a two-core request on to WAIT_BARRIER_PROXY");
}

/// WAIT_BARRIER_PROXY: the barrier is never fatal by itself, seed §1 QUIRK: a
/// call returns 1 unless a proxy fails or the ring table is wrong, and then 2.
///
/// `cores`: a request of that many cores, or any for `None`; each harness
/// takes one count, to keep each solver run small.
pub(crate) fn step_from_wait_barrier_keeps_the_contract<A: Any>(any: A, cores: Option<u8>) {
    let r = step_once(any, ExecState::WaitBarrierProxy, true, cores);
    assert!(!matches!(r.step, Step::Done(_)), "the barrier wait finished a request with 0");
    cover!(r.after.state == ExecState::WaitBarrierProxy, "barrier: still waiting");
    cover!(r.after.state == ExecState::WaitCore, "barrier: cleared, on to WAIT_CORE");
    cover!(matches!(r.step, Step::Error(_)), "barrier: a proxy failure or a bad ring table ends it with 2");
}

/// WAIT_CORE: no engine's substate moves backwards, seed §2, and every outcome
/// is reachable.
///
/// `cores`: as for WAIT_BARRIER_PROXY.
pub(crate) fn step_from_wait_core_keeps_the_contract<A: Any>(any: A, cores: Option<u8>) {
    let r = step_once(any, ExecState::WaitCore, true, cores);
    for c in 0..MAX_CORES {
        for e in 0..ENGINES_PER_CORE {
            assert!(r.after.tpb_exec_state[c][e] >= r.before.tpb_exec_state[c][e], "a substate regressed");
        }
    }
    cover!(r.step == Step::InFlight, "core: still in flight");
    cover!(matches!(r.step, Step::Done(_)) && r.out.is_success(), "core: DONE with 0 and success");
    cover!(matches!(r.step, Step::Done(_)) && !r.out.is_success(), "core: 0 with a status the error sweep set");
    cover!(matches!(r.step, Step::Error(_)), "core: DONE with 2");
    cover!(r.out == NrtStatus::Timeout, "core: timeout (5)");
    cover!(r.out == NrtStatus::ExecSwNqOverflow, "core: overflow (1204)");
}

/// DONE is terminal, DESIGN.md: a call returns the cached result and changes nothing.
pub(crate) fn step_from_done_keeps_the_contract<A: Any>(any: A) {
    let r = step_once(any, ExecState::Done, false, None);
    assert_eq!(r.step, r.before.result, "DONE is not terminal");
    assert!(same(&r.after, &r.before), "a DONE request changed");
    cover!(matches!(r.step, Step::Done(_)), "done: the cached 0 again");
    cover!(matches!(r.step, Step::Error(_)), "done: the cached 2 again");
}

/// The base case: a new request, whatever its configuration, satisfies
/// [`reachable`].
pub(crate) fn new_request_is_reachable(arch: u8, tpb_count: u8, timeout_s: u32, tpb_idx: [u8; 2]) {
    let arch = [Arch::Sunda, Arch::Cayman, Arch::Mariana][usize::from(arch % 3)];
    let mut cfg = ExecConfig::new(arch, tpb_count, timeout_s);
    cfg.tpb_idx = tpb_idx;
    let r = ExecRequest::new(cfg);
    assert_eq!(r.state(), ExecState::Init);
    assert!(reachable(&r));
    cover!(tpb_count == 0 || usize::from(tpb_count) > MAX_CORES, "new: a core count clamped");
}

// The harnesses. Unwind 14 is `ts_slot::COUNT + 1`: the longest loop a step
// runs is over a core's timestamp slots, plus the exit test; every other loop
// is shorter by construction. kani's unwinding assertions fail the proof if
// any loop needed more, so the bound cannot silently cut a path. The step
// harnesses replace FINALIZE, whose u128 rescale is more than the solver can
// take, by its proved guarantee.

#[cfg(kani)]
#[kani::proof]
#[kani::unwind(14)]
fn prove_new_request_is_reachable() {
    new_request_is_reachable(kani::any(), kani::any(), kani::any(), kani::any());
}

#[cfg(kani)]
#[kani::proof]
#[kani::unwind(14)]
fn prove_step_from_init_keeps_the_contract() {
    step_from_init_keeps_the_contract(crate::proofs::KaniAny);
}

// The steps from WAIT_BARRIER_PROXY and WAIT_CORE, one core and two, run the
// pieces proved in `parts`, `consume_core` and FINALIZE, as their proved
// guarantees; `parts`'s module docs say why that hides nothing. What is proved
// here is the machine itself: the proxies, the sweep's order and early exits,
// the end-of-sweep completeness, budget and overflow probe, the ring-table
// checks, and the return, state and invariant after the step. One solver run
// over a whole two-core step gave no verdict.

#[cfg(kani)]
#[kani::proof]
#[kani::unwind(14)]
#[kani::stub(crate::exec::ExecRequest::finalize, super::parts::finalize_stub)]
fn prove_step_from_wait_barrier_one_core_keeps_the_contract() {
    step_from_wait_barrier_keeps_the_contract(crate::proofs::KaniAny, Some(1));
}

#[cfg(kani)]
#[kani::proof]
#[kani::unwind(14)]
#[kani::stub(crate::exec::ExecRequest::finalize, super::parts::finalize_stub)]
fn prove_step_from_wait_barrier_two_cores_keeps_the_contract() {
    step_from_wait_barrier_keeps_the_contract(crate::proofs::KaniAny, Some(2));
}

#[cfg(kani)]
#[kani::proof]
#[kani::unwind(14)]
#[kani::stub(crate::exec::ExecRequest::consume_core, super::parts::consume_core_stub)]
#[kani::stub(crate::exec::ExecRequest::finalize, super::parts::finalize_stub)]
fn prove_step_from_wait_core_one_core_keeps_the_contract() {
    step_from_wait_core_keeps_the_contract(crate::proofs::KaniAny, Some(1));
}

#[cfg(kani)]
#[kani::proof]
#[kani::unwind(14)]
#[kani::stub(crate::exec::ExecRequest::consume_core, super::parts::consume_core_stub)]
#[kani::stub(crate::exec::ExecRequest::finalize, super::parts::finalize_stub)]
fn prove_step_from_wait_core_two_cores_keeps_the_contract() {
    step_from_wait_core_keeps_the_contract(crate::proofs::KaniAny, Some(2));
}

#[cfg(kani)]
#[kani::proof]
#[kani::unwind(14)]
fn prove_step_from_done_keeps_the_contract() {
    step_from_done_keeps_the_contract(crate::proofs::KaniAny);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proofs::{assert_covered, cases, reset_covers, Bytes};
    use proptest::prelude::*;

    fn each(property: impl Fn(Bytes<'_>), min_covers: usize) {
        reset_covers();
        // The quiet device (every draw 0), then arbitrary devices and requests.
        property(Bytes::new(&[]));
        if cfg!(miri) {
            for bytes in crate::proofs::miri_inputs() {
                property(Bytes::new(&bytes));
            }
            return;
        }
        proptest!(ProptestConfig::with_cases(cases(4096)),
        |(bytes in proptest::collection::vec(any::<u8>(), 0..1200))| {
            property(Bytes::new(&bytes));
        });
        // Every answer the same byte but for a few: the rare answers, a clean
        // finish or a swept status, stay reachable.
        proptest!(ProptestConfig::with_cases(cases(4096)),
        |(fill in any::<u8>(), sparse in proptest::collection::vec((0usize..600, any::<u8>()), 0..12))| {
            let mut bytes = vec![fill; 600];
            for (at, v) in sparse {
                bytes[at] = v;
            }
            property(Bytes::new(&bytes));
        });
        assert_covered(min_covers);
    }

    #[test]
    fn new_request_is_reachable_tests() {
        reset_covers();
        for arch in 0..3 {
            for n in [0, 1, 2, 3, 255] {
                for t in [0, 5, u32::MAX] {
                    new_request_is_reachable(arch, n, t, [0, 1]);
                }
            }
        }
        assert_covered(1);
    }

    #[test]
    fn step_from_init_keeps_the_contract_tests() {
        each(|b| step_from_init_keeps_the_contract(b), 1);
    }

    #[test]
    fn step_from_wait_barrier_one_core_keeps_the_contract_tests() {
        each(|b| step_from_wait_barrier_keeps_the_contract(b, Some(1)), 3);
    }

    #[test]
    fn step_from_wait_barrier_two_cores_keeps_the_contract_tests() {
        each(|b| step_from_wait_barrier_keeps_the_contract(b, Some(2)), 3);
    }

    #[test]
    fn step_from_wait_barrier_any_cores_keeps_the_contract() {
        each(|b| step_from_wait_barrier_keeps_the_contract(b, None), 3);
    }

    #[test]
    fn step_from_wait_core_one_core_keeps_the_contract_tests() {
        each(|b| step_from_wait_core_keeps_the_contract(b, Some(1)), 6);
    }

    #[test]
    fn step_from_wait_core_two_cores_keeps_the_contract_tests() {
        each(|b| step_from_wait_core_keeps_the_contract(b, Some(2)), 6);
    }

    #[test]
    fn step_from_wait_core_any_cores_keeps_the_contract() {
        each(|b| step_from_wait_core_keeps_the_contract(b, None), 6);
    }

    #[test]
    fn step_from_done_keeps_the_contract_tests() {
        each(|b| step_from_done_keeps_the_contract(b), 2);
    }
}
