//! The per-core pieces of a step, proved on their own, so that the step proofs
//! (`step.rs`) can replace them by what is proved of them (compositional
//! reasoning: assume-guarantee by stubbing).
//!
//! A step from WAIT_CORE over two cores runs, per core, the ring sweep
//! ([`ExecRequest::consume_core`]), and in FINALIZE, per core, the timestamp
//! rescale ([`ExecRequest::postprocess_core`]) and the error-ring sweep
//! ([`consume_error_block`]). One solver run over all of them for two cores gave
//! no verdict in 10 minutes. Here each piece is proved for ANY core of ANY
//! request its callers can pass it, against any device ([`HavocDev`]): it
//! writes only its own core's part of the request (its frame), it moves no
//! engine's substate backwards, and what it returns is what the step relies on.
//! The `*_stub` functions are those guarantees and nothing more: each asserts
//! the precondition its proof assumed (so a caller outside the proved domain
//! fails the step proof), then sets its frame to ANY value the guarantee allows
//! (`kani::any` under `kani::assume` of the same predicate the proof asserts).
//! A step proof with the stubs in place therefore covers every behaviour of the
//! real pieces, and more.
//!
//! What the stubs do not do, and why that hides nothing:
//!
//! - they do not call the device: the proofs show each piece leaves
//!   [`HavocDev`]'s clock where it was, and its other answers are fresh draws
//!   independent of earlier calls, so the rest of the step sees the same device
//!   either way (but for the count of events, which no property reads);
//! - they do not change `nq`: the proofs show each piece changes in `nq` only its
//!   own core's rings (the INFER_STATUS rings for the sweep, the error ring and
//!   the subscriber queue for the error sweep; nothing for the rescale), and
//!   nothing later in the same step reads those: each core is swept once per
//!   step, the other core reads its own rings, FINALIZE reads the sync points,
//!   the calibrations and each core's error ring once. The step proofs do not
//!   carry `nq` from one step to the next (the ring cursor's own proofs,
//!   `nq::ring::proofs`, cover the rings across calls).

#[cfg(kani)]
use super::step::any_substate;
use super::step::{any_request, bound_notifications, eq, ring_size, same, HavocDev};
use crate::arch::{ENGINES_PER_CORE, MAX_CORES};
use crate::exec::finalize::consume_error_block;
use crate::exec::{ts_slot, ExecRequest, ExecState, TpbEngState};
#[cfg(kani)]
use crate::nq::ErrorClass;
use crate::nq::{Notifications, NqRing, TsCal, ERROR_NQ, INFER_STATUS_NQS, NQ_PER_CORE};
use crate::proofs::{cover, Any};
use crate::status::NrtStatus;

/// `a` and `b` agree on everything outside `(core, ids)`: every other ring, the
/// calibrations and sync points, the INFER_STATUS ids; and, unless `errors` (the
/// error sweep keeps records for subscribers), the subscriber queue.
fn nq_frame(a: &Notifications, b: &Notifications, core: u8, ids: &[u8], errors: bool) -> bool {
    let mut same = a.infer_status_nqs().len() == b.infer_status_nqs().len();
    for c in 0..MAX_CORES as u8 {
        for id in 0..NQ_PER_CORE as u8 {
            let mut mine = false;
            for i in ids {
                mine |= c == core && *i == id;
            }
            same &= mine || a.ring(c, id) == b.ring(c, id);
        }
        for e in 0..ENGINES_PER_CORE {
            same &= a.cal(c, e) == b.cal(c, e);
        }
        same &= a.sync_point(c) == b.sync_point(c);
    }
    same && (errors || (a.errors_len() == b.errors_len() && a.errors_dropped() == b.errors_dropped()))
}

/// The guarantee of `consume_core(core)`: only `core`'s substates, timestamps,
/// slot engines and fatal flags change; no substate moves backwards; an `Ok`
/// leaves the fatal flags as they were (a flag is only set on the way to an
/// error); an `Err` never carries `NRT_SUCCESS`.
pub(super) fn consume_core_post(
    before: &ExecRequest,
    after: &ExecRequest,
    core: usize,
    result: Result<(), NrtStatus>,
) -> bool {
    let mut framed = before.clone();
    framed.tpb_exec_state[core] = after.tpb_exec_state[core];
    framed.vcore_notif_ts[core] = after.vcore_notif_ts[core];
    framed.slot_engine[core] = after.slot_engine[core];
    framed.exec_fatal_status[core] = after.exec_fatal_status[core];
    let mut monotone = true;
    for e in 0..ENGINES_PER_CORE {
        monotone &= after.tpb_exec_state[core][e] >= before.tpb_exec_state[core][e];
    }
    let flags = match result {
        Ok(()) => eq(&after.exec_fatal_status[core], &before.exec_fatal_status[core]),
        Err(st) => !st.is_success(),
    };
    same(&framed, after) && monotone && flags
}

/// Where `consume_core` is called (the step from WAIT_CORE), and so what its
/// proof assumes: a WAIT_CORE request satisfying the step invariant, a core of
/// it, that core's five INFER_STATUS rings bound.
fn consume_core_pre(r: &ExecRequest, nq: &Notifications, core: usize) -> bool {
    let mut bound = nq.infer_status_nqs().len() == ENGINES_PER_CORE;
    for (i, id) in INFER_STATUS_NQS.iter().enumerate() {
        bound &= nq.infer_status_nqs().get(i) == Some(id)
            && nq.ring(core as u8, *id).is_some_and(|ring| {
                // Freshly bound (cursor at 0), 2 entries under kani.
                NqRing::new(ring.size_bytes()).ok() == Some(*ring) && (!cfg!(kani) || ring.size_bytes() == 32)
            });
    }
    r.state == ExecState::WaitCore && core < r.tpb_count() && super::step::reachable(r) && bound
}

/// `consume_core` keeps its frame (see [`consume_core_post`]), changes in `nq`
/// only `core`'s INFER_STATUS rings, and never reads the clock; for any core of
/// any WAIT_CORE request, with any substates and any earlier timestamps and slot
/// engines (the fields it reads), against any device. The rings are those of the
/// step proofs (bound, cursors at 0, 2 entries under kani: one read per engine,
/// see `step::step_once` for why that bound hides nothing).
pub(crate) fn consume_core_keeps_its_frame<A: Any>(mut any: A, core: usize) {
    let mut req = any_request(&mut any, ExecState::WaitCore, (core > 0).then_some(2));
    let n = req.tpb_count();
    // `any_request` draws the substates and slot engines, and in the tests the
    // timestamps; under kani it leaves the timestamps 0 (for the step proofs'
    // sake), so they are drawn here: the sweep's `keep_earliest`/`keep_latest`
    // compare against them.
    if cfg!(kani) {
        for c in 0..n {
            for slot in 0..ts_slot::COUNT {
                req.vcore_notif_ts[c][slot] = any.u64();
            }
        }
    }
    let ring_size = ring_size(&mut any);
    let mut nq = bound_notifications(&mut any, ring_size);
    assert!(consume_core_pre(&req, &nq, core));
    let (before, nq_before) = (req.clone(), nq.clone());
    let now = any.u64();
    let mut dev = HavocDev::new(any, now, ring_size);
    let r = req.consume_core(&mut dev, &mut nq, core);
    assert!(consume_core_post(&before, &req, core, r), "consume_core left its frame");
    assert!(nq_frame(&nq_before, &nq, core as u8, &INFER_STATUS_NQS, false), "consume_core changed another ring");
    assert_eq!(dev.now.get(), now, "consume_core read the clock");
    let moved = (0..ENGINES_PER_CORE).any(|e| req.tpb_exec_state[core][e] != before.tpb_exec_state[core][e]);
    cover!(r.is_ok() && moved, "consume: an engine moved on");
    let completes = (0..ENGINES_PER_CORE).any(|e| {
        req.tpb_exec_state[core][e] == TpbEngState::Complete && before.tpb_exec_state[core][e] != TpbEngState::Complete
    });
    cover!(r.is_ok() && completes, "consume: an engine completes");
    cover!(r == Err(NrtStatus::ExecSwNqOverflow), "consume: an out-of-order record on an overflowed queue (1204)");
    cover!(r == Err(NrtStatus::Failure), "consume: a failed read or a bad record (1)");
    cover!(core == 1, "consume: the second core");
}

/// What the step proofs run instead of `consume_core`: its precondition checked,
/// then ANY result and ANY new value of its frame that [`consume_core_post`]
/// allows; `dev` and `nq` untouched (see the module docs).
#[cfg(kani)]
#[allow(dead_code)] // named only by the step harnesses' `kani::stub` attributes
pub(crate) fn consume_core_stub<D: crate::hal::ExecDevice + ?Sized>(
    this: &mut ExecRequest,
    _dev: &mut D,
    nq: &mut Notifications,
    core: usize,
) -> Result<(), NrtStatus> {
    assert!(consume_core_pre(this, nq, core), "consume_core called outside its proved domain");
    let before = this.clone();
    let mut any = crate::proofs::KaniAny;
    for e in 0..ENGINES_PER_CORE {
        this.tpb_exec_state[core][e] = any_substate(&mut any);
    }
    this.vcore_notif_ts[core] = kani::any();
    this.slot_engine[core] = kani::any();
    this.exec_fatal_status[core] = kani::any();
    let r = if kani::any() { Ok(()) } else { Err(NrtStatus::from_code(kani::any())) };
    kani::assume(consume_core_post(&before, this, core, r));
    r
}

/// The guarantee of `postprocess_core(core)`: only `core`'s timestamp slots and
/// duration change (to anything: no step property reads their values).
fn postprocess_core_post(before: &ExecRequest, after: &ExecRequest, core: usize) -> bool {
    let mut framed = before.clone();
    framed.vcore_notif_ts[core] = after.vcore_notif_ts[core];
    framed.out_info.tpb_duration_us[core] = after.out_info.tpb_duration_us[core];
    same(&framed, after)
}

/// `postprocess_core` keeps its frame and never panics, for any core of any
/// request its caller (FINALIZE, before the timestamps are in CPU time) can pass:
/// any timestamps in any of the 13 slots, any slot engines, any calibration per
/// engine and any sync point (the fields it reads), against any device; it
/// changes nothing in `nq` (it takes it shared) and never reads the clock.
pub(crate) fn postprocess_core_keeps_its_frame<A: Any>(mut any: A, core: usize) {
    let mut req = any_request(&mut any, ExecState::WaitCore, (core > 0).then_some(2));
    let mut nonzero = 0u32;
    for slot in 0..ts_slot::COUNT {
        let v = if any.bool() { any.u64() } else { 0 };
        nonzero += u32::from(v != 0);
        req.vcore_notif_ts[core][slot] = v;
    }
    let mut nq = Notifications::new();
    let mut uncalibrated = false;
    for eng in 0..ENGINES_PER_CORE {
        let cal =
            TsCal { init_timestamp: any.u64(), actual_timestamp_inc: any.u32(), expected_timestamp_inc: any.u32() };
        uncalibrated |= cal.actual_timestamp_inc == 0;
        nq.set_cal(core as u8, eng, cal);
    }
    nq.set_sync_point(core as u8, crate::nq::SyncPoint { dev_us: any.u64(), cpu_us: any.u64() });
    let before = req.clone();
    let now = any.u64();
    let mut dev = HavocDev::new(any, now, 32);
    req.postprocess_core(&mut dev, &nq, core);
    assert!(postprocess_core_post(&before, &req, core), "postprocess_core left its frame");
    assert_eq!(dev.now.get(), now, "postprocess_core read the clock");
    cover!(nonzero >= 2 && req.out_info.tpb_duration_us[core] > 0, "postprocess: a core with a duration");
    cover!(nonzero > 0 && uncalibrated && dev.events > 0, "postprocess: a slot without calibration, reported");
    cover!(core == 1, "postprocess: the second core");
}

/// What the step proofs run instead of `postprocess_core`: ANY new value of its
/// frame; `dev` untouched (see the module docs).
#[cfg(kani)]
#[allow(dead_code)] // named only by the step harnesses' `kani::stub` attributes
pub(crate) fn postprocess_core_stub<D: crate::hal::ExecDevice + ?Sized>(
    this: &mut ExecRequest,
    _dev: &mut D,
    _nq: &Notifications,
    core: usize,
) {
    assert!(core < MAX_CORES, "postprocess_core called outside its proved domain");
    this.vcore_notif_ts[core] = kani::any();
    this.out_info.tpb_duration_us[core] = kani::any();
}

/// `consume_error_block` (the error-ring sweep of one core) changes in `nq` only
/// that core's error ring and the subscriber queue, and never reads the clock;
/// for either core, its error ring bound (cursor at 0, 2 entries under kani) or
/// unbound as in the step proofs, against any device. What it returns is
/// anything: the step's properties hold for any status and any first class.
pub(crate) fn consume_error_block_keeps_its_frame<A: Any>(mut any: A, core: u8) {
    let ring_size = ring_size(&mut any);
    let mut nq = bound_notifications(&mut any, ring_size);
    let unbound = any.u8() >= 0xF0;
    if unbound {
        if let Some(r) = nq.ring_mut(core, ERROR_NQ) {
            *r = NqRing::UNBOUND;
        }
    }
    let nq_before = nq.clone();
    let now = any.u64();
    let mut dev = HavocDev::new(any, now, ring_size);
    let (st, class) = consume_error_block(&mut dev, &mut nq, core);
    assert!(nq_frame(&nq_before, &nq, core, &[ERROR_NQ], true), "the error sweep changed another ring");
    assert_eq!(dev.now.get(), now, "the error sweep read the clock");
    cover!(unbound && st.is_success() && class.is_none(), "errors: an unbound ring is skipped");
    cover!(!unbound && class.is_some() && !st.is_success(), "errors: a record with a status");
    cover!(st == NrtStatus::Failure && class.is_none(), "errors: a failed read");
    cover!(core == 1, "errors: the second core");
}

/// What the step proofs run instead of `consume_error_block`: ANY status, and no
/// first class or ANY class the error-record decoder gives; `dev` and `nq`
/// untouched (see the module docs).
#[cfg(kani)]
#[allow(dead_code)] // named only by the step harnesses' `kani::stub` attributes
pub(crate) fn consume_error_block_stub<D: crate::hal::ExecDevice + ?Sized>(
    _dev: &mut D,
    _nq: &mut Notifications,
    c: u8,
) -> (NrtStatus, Option<ErrorClass>) {
    assert!(usize::from(c) < MAX_CORES, "consume_error_block called outside its proved domain");
    let class = if kani::any() {
        let raw: [u8; crate::nq::entry::ENTRY_SIZE] = kani::any();
        Some(crate::nq::ErrorEntry::from_array(&raw).class())
    } else {
        None
    };
    (NrtStatus::from_code(kani::any()), class)
}

// The harnesses. Unwind 14: the longest loop is over the 13 timestamp slots of a
// core (13 iterations + the exit test); the others are over 9 rings, 5 engines,
// 2 cores, one read per engine or error ring (2-entry rings: the lap bound).
// kani's unwinding assertions fail the proof if any loop needed more. Each core
// is its own branch with the whole property inside it, so that the core index is
// a constant there (an index into the request's and the rings' arrays that the
// solver would otherwise have to case-split at every access).

#[cfg(kani)]
#[kani::proof]
#[kani::unwind(14)]
fn prove_consume_core_keeps_its_frame() {
    if kani::any() {
        consume_core_keeps_its_frame(crate::proofs::KaniAny, 0);
    } else {
        consume_core_keeps_its_frame(crate::proofs::KaniAny, 1);
    }
}

// `rescale_ns` is replaced by its verified contract (`None` exactly without an
// actual increment, `exec::proofs::prove_rescale_ns_contract`): the frame does
// not depend on its value, and its 128-bit division is what kept FINALIZE's
// proofs from the solver.
#[cfg(kani)]
#[kani::proof]
#[kani::unwind(14)]
#[kani::stub_verified(crate::exec::finalize::rescale_ns)]
fn prove_postprocess_core_keeps_its_frame() {
    if kani::any() {
        postprocess_core_keeps_its_frame(crate::proofs::KaniAny, 0);
    } else {
        postprocess_core_keeps_its_frame(crate::proofs::KaniAny, 1);
    }
}

#[cfg(kani)]
#[kani::proof]
#[kani::unwind(14)]
fn prove_consume_error_block_keeps_its_frame() {
    if kani::any() {
        consume_error_block_keeps_its_frame(crate::proofs::KaniAny, 0);
    } else {
        consume_error_block_keeps_its_frame(crate::proofs::KaniAny, 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proofs::{assert_covered, cases, reset_covers, Bytes};
    use proptest::prelude::*;

    fn each(property: impl Fn(Bytes<'_>), min_covers: usize) {
        reset_covers();
        property(Bytes::new(&[]));
        proptest!(ProptestConfig::with_cases(cases(4096)),
        |(bytes in proptest::collection::vec(any::<u8>(), 0..1200))| {
            property(Bytes::new(&bytes));
        });
        // Mostly one byte (every engine END_PENDING, say, with END records).
        proptest!(ProptestConfig::with_cases(cases(4096)),
        |(fill in any::<u8>(), sparse in proptest::collection::vec((0usize..800, any::<u8>()), 0..12))| {
            let mut bytes = vec![fill; 800];
            for (at, v) in sparse {
                bytes[at] = v;
            }
            property(Bytes::new(&bytes));
        });
        // A repeated read answer: "no failure" then a record with the phase bit
        // set and subtype START or END (the rest drawn), at any alignment to the
        // request's own draws, which come from the same pattern: records that
        // match, and the rarer outcomes (an engine or a core completing).
        proptest!(ProptestConfig::with_cases(cases(4096)),
        |(record in any::<[u8; 16]>(), end in any::<bool>(), prefix in proptest::collection::vec(any::<u8>(), 0..17))| {
            let mut unit = [0u8; 17];
            unit[1..].copy_from_slice(&record);
            unit[1 + 3] |= 0x80;
            unit[1 + 6] = if end { 3 } else { 2 };
            unit[1 + 7] = 0;
            let mut bytes = prefix;
            while bytes.len() < 1200 {
                bytes.extend_from_slice(&unit);
            }
            property(Bytes::new(&bytes));
        });
        assert_covered(min_covers);
    }

    #[test]
    fn consume_core_keeps_its_frame_tests() {
        each(|b| [0, 1].into_iter().for_each(|core| consume_core_keeps_its_frame(b.clone(), core)), 5);
    }

    #[test]
    fn postprocess_core_keeps_its_frame_tests() {
        each(|b| [0, 1].into_iter().for_each(|core| postprocess_core_keeps_its_frame(b.clone(), core)), 3);
    }

    #[test]
    fn consume_error_block_keeps_its_frame_tests() {
        each(|b| [0, 1].into_iter().for_each(|core| consume_error_block_keeps_its_frame(b.clone(), core)), 4);
    }
}
