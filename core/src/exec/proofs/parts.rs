//! The per-core pieces of a step, proved on their own, so that the step proofs
//! (`step.rs`) can replace them by what is proved of them (compositional
//! reasoning: assume-guarantee by stubbing).
//!
//! A step from WAIT_CORE over two cores runs, per core, the ring sweep
//! ([`ExecRequest::consume_core`], one batch per engine,
//! [`ExecRequest::consume_engine`]), and FINALIZE ([`ExecRequest::finalize`]),
//! which runs per core the timestamp rescale ([`ExecRequest::postprocess_core`])
//! and the error-ring sweep ([`consume_error_block`]). One solver run over all of
//! them for two cores gave no verdict in 10 minutes. The layers, each proved
//! with the layer below as its stub: an engine's batch; a core's sweep; the
//! rescale and the error sweep of a core; FINALIZE over the cores; the step
//! (`step.rs`) over the cores. Here each piece is proved for ANY core of ANY
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
//! Why these are `kani::stub`s and not function contracts (`requires`,
//! `ensures`, `modifies` proved by `proof_for_contract` and used through
//! `stub_verified`): every piece takes the device as `&mut D` for a generic
//! `D: ExecDevice`, and a contract's `modifies` can name only the whole `*dev`
//! (no field of a generic type), which `stub_verified` then havocs: the proof
//! devices' `RefCell` borrow flag (so the next draw panics), their clock (so
//! "never reads the clock" can no longer be shown) and their ring size (so the
//! in-ring read check fails); and the frame predicates compare the whole
//! request before and after, an `old()` copy of the whole request per call
//! that kani would carry through every layer. So the stubs stay, and what ties
//! each to its proof is checked twice: the proof asserts the very predicate the
//! stub assumes (`consume_core_post`, `finalize_post`, `postprocess_core_post`),
//! or, for the stubs built to satisfy it by construction, `cargo test` checks
//! the real piece against the stub's own range on generated inputs
//! ([`consume_engine_stub_allows`], asserted in the body of the engine's proof
//! whenever it runs as a test); and every status and timeout cause the real
//! pieces return is one the stubs' draws can give ([`stub_can_give`],
//! [`stub_can_give_cause`], asserted likewise). The function contracts of the
//! project are on the leaves, where the arguments are plain values
//! (`finalize::rescale_ns`, the NQ producer's `push` and `on_head_write`).
//!
//! What the stubs do not do, and why that hides nothing:
//!
//! - they do not call the device: the proofs show each piece leaves
//!   [`HavocDev`]'s clock where it was, and its other answers are fresh draws
//!   independent of earlier calls, so the rest of the step sees the same device
//!   either way (but for the count of events, which no property reads);
//! - they do not change `nq`: the proofs show each piece changes in `nq` only its
//!   own rings (an engine's batch its INFER_STATUS ring, the error sweep its
//!   core's error ring and the subscriber queue, the rescale nothing), and
//!   nothing later in the same step reads those: each engine of each core is
//!   swept once per step from its own ring, FINALIZE reads the sync points, the
//!   calibrations and each core's error ring once, and nothing after FINALIZE
//!   reads `nq`. The step proofs do not
//!   carry `nq` from one step to the next (the ring cursor's own proofs,
//!   `nq::ring::proofs`, cover the rings across calls).

#[cfg(kani)]
use super::step::any_substate;
use super::step::{any_request, bound_notifications, eq, ring_size, same, HavocDev};
use crate::arch::{ENGINES_PER_CORE, MAX_CORES};
use crate::exec::finalize::consume_error_block;
use crate::exec::{ts_slot, ExecRequest, ExecState, Step, TpbEngState};
#[cfg(kani)]
use crate::nq::ErrorClass;
use crate::nq::{Engine, Notifications, NqRing, TsCal, ERROR_NQ, INFER_STATUS_NQS, NQ_PER_CORE};
use crate::proofs::{cover, Any};
use crate::status::{NrtError, NrtStatus};

/// What the frame proofs compare of a [`Notifications`]: every ring, the
/// calibrations and sync points, the INFER_STATUS ids and the subscriber queue's
/// counts. (Read through the accessors, not `clone()`: cloning the 64-record
/// subscriber queue is a loop the solver cannot bound but by the unwind limit.)
struct NqView {
    rings: [[NqRing; NQ_PER_CORE]; MAX_CORES],
    cal: [[TsCal; ENGINES_PER_CORE]; MAX_CORES],
    sync: [crate::nq::SyncPoint; MAX_CORES],
    ids: usize,
    errors: usize,
    dropped: u32,
}

fn view(nq: &Notifications) -> NqView {
    let mut v = NqView {
        rings: [[NqRing::UNBOUND; NQ_PER_CORE]; MAX_CORES],
        cal: [[TsCal::IDENTITY; ENGINES_PER_CORE]; MAX_CORES],
        sync: [crate::nq::SyncPoint::default(); MAX_CORES],
        ids: nq.infer_status_nqs().len(),
        errors: nq.errors_len(),
        dropped: nq.errors_dropped(),
    };
    for c in 0..MAX_CORES {
        for id in 0..NQ_PER_CORE {
            v.rings[c][id] = nq.ring(c as u8, id as u8).copied().unwrap_or(NqRing::UNBOUND);
        }
        for e in 0..ENGINES_PER_CORE {
            v.cal[c][e] = nq.cal(c as u8, e);
        }
        v.sync[c] = nq.sync_point(c as u8);
    }
    v
}

/// `a` and `b` agree on everything outside `(core, ids)`: every other ring, the
/// calibrations and sync points, the INFER_STATUS ids; and, unless `errors` (the
/// error sweep keeps records for subscribers), the subscriber queue.
#[allow(clippy::needless_range_loop)] // index loops: constant bounds for the solver
fn nq_frame(a: &NqView, b: &NqView, core: u8, ids: &[u8], errors: bool) -> bool {
    let mut same = a.ids == b.ids;
    for c in 0..MAX_CORES {
        for id in 0..NQ_PER_CORE {
            let mut mine = false;
            for k in 0..ids.len() {
                mine |= c == usize::from(core) && usize::from(ids[k]) == id;
            }
            same &= mine || a.rings[c][id] == b.rings[c][id];
        }
        for e in 0..ENGINES_PER_CORE {
            same &= a.cal[c][e] == b.cal[c][e];
        }
        same &= a.sync[c] == b.sync[c];
    }
    same && (errors || (a.errors == b.errors && a.dropped == b.dropped))
}

/// The guarantee of `consume_core(core)`: only `core`'s substates, timestamps,
/// slot engines and fatal flags change; no substate moves backwards; an `Ok`
/// leaves the fatal flags as they were (a flag is only set on the way to an
/// error); an `Err` never carries `NRT_SUCCESS`.
pub(super) fn consume_core_post(
    before: &ExecRequest,
    after: &ExecRequest,
    core: usize,
    result: Result<(), NrtError>,
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
        Err(st) => !st.status().is_success(),
    };
    same(&framed, after) && monotone && flags
}

/// Where `consume_core` is called (the step from WAIT_CORE), and so what its
/// proof assumes: a WAIT_CORE request, a core of it, that core's five
/// INFER_STATUS rings freshly bound (as the step proofs bind them). Of the
/// request, `consume_core` reads only the core's substates, timestamps and slot
/// engines, the arch and the TPB indices, which its proof draws freely; the
/// fields it does not read it leaves as they were (its frame), whatever they are.
#[allow(clippy::needless_range_loop)] // index loops: constant bounds for the solver
fn consume_core_pre(r: &ExecRequest, nq: &Notifications, core: usize) -> bool {
    let mut bound = nq.infer_status_nqs().len() == ENGINES_PER_CORE;
    for i in 0..ENGINES_PER_CORE {
        let id = INFER_STATUS_NQS[i];
        bound &= nq.infer_status_nqs().get(i) == Some(&id)
            && nq.ring(core as u8, id).is_some_and(|ring| {
                // Freshly bound (cursor at 0), 2 entries under kani.
                NqRing::new(ring.size_bytes()).ok() == Some(*ring) && (!cfg!(kani) || ring.size_bytes() == 32)
            });
    }
    r.state == ExecState::WaitCore && core < r.tpb_count() && bound
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
        for c in 0..MAX_CORES {
            for slot in 0..ts_slot::COUNT {
                if c < n {
                    req.vcore_notif_ts[c][slot] = any.u64();
                }
            }
        }
    }
    let ring_size = ring_size(&mut any);
    let mut nq = bound_notifications(&mut any, ring_size);
    assert!(consume_core_pre(&req, &nq, core));
    let (before, nq_before) = (req.clone(), view(&nq));
    let now = any.u64();
    let mut dev = HavocDev::new(any, now, ring_size);
    let r = req.consume_core(&mut dev, &mut nq, core);
    assert!(consume_core_post(&before, &req, core, r), "consume_core left its frame");
    #[cfg(test)]
    assert!(r.err().is_none_or(|e| stub_can_give(e.status())), "a status the stub of consume_core cannot give");
    assert!(
        nq_frame(&nq_before, &view(&nq), core as u8, &INFER_STATUS_NQS, false),
        "consume_core changed another ring"
    );
    assert_eq!(dev.now.get(), now, "consume_core read the clock");
    // Index loops, not `any()`: see `step::any_request` on iterator adaptors.
    let (mut moved, mut completes) = (false, false);
    for e in 0..ENGINES_PER_CORE {
        let (was, now) = (before.tpb_exec_state[core][e], req.tpb_exec_state[core][e]);
        moved |= now != was;
        completes |= now == TpbEngState::Complete && was != TpbEngState::Complete;
    }
    cover!(r.is_ok() && moved, "consume: an engine moved on");
    cover!(r.is_ok() && completes, "consume: an engine completes");
    let r = r.map_err(NrtError::status);
    cover!(r == Err(NrtStatus::ExecSwNqOverflow), "consume: an out-of-order record on an overflowed queue (1204)");
    cover!(r == Err(NrtStatus::Failure), "consume: a failed read or a bad record (1)");
    cover!(core == 1, "consume: the second core");
}

/// What the step proofs run instead of `consume_core`: its precondition checked,
/// then ANY result and ANY new value of its frame that [`consume_core_post`]
/// allows; `dev` and `nq` untouched (see the module docs).
#[cfg(kani)]
#[allow(dead_code)] // named only by the step harnesses' `kani::stub` attributes
pub(crate) fn consume_core_stub<D: crate::exec::ExecDevice + ?Sized>(
    this: &mut ExecRequest,
    _dev: &mut D,
    nq: &mut Notifications,
    core: usize,
) -> Result<(), NrtError> {
    assert!(consume_core_pre(this, nq, core), "consume_core called outside its proved domain");
    let before = this.clone();
    let mut any = crate::proofs::KaniAny;
    for e in 0..ENGINES_PER_CORE {
        this.tpb_exec_state[core][e] = any_substate(&mut any);
    }
    this.vcore_notif_ts[core] = kani::any();
    this.slot_engine[core] = kani::any();
    this.exec_fatal_status[core] = kani::any();
    let r = if kani::any() { Ok(()) } else { Err(NrtError::failed(NrtStatus::from_code(kani::any()))) };
    kani::assume(consume_core_post(&before, this, core, r));
    r
}

/// The guarantee of `consume_engine(core, eng)`: as [`consume_core_post`], and
/// of the core's substates only engine `eng`'s changes.
pub(super) fn consume_engine_post(
    before: &ExecRequest,
    after: &ExecRequest,
    core: usize,
    eng: usize,
    result: Result<(), NrtError>,
) -> bool {
    let mut others = true;
    for e in 0..ENGINES_PER_CORE {
        others &= e == eng || after.tpb_exec_state[core][e] == before.tpb_exec_state[core][e];
    }
    others && consume_core_post(before, after, core, result)
}

/// Where `consume_core` calls `consume_engine`: a core of a WAIT_CORE request as
/// in [`consume_core_pre`], an engine of it that is not COMPLETE.
fn consume_engine_pre(r: &ExecRequest, nq: &Notifications, core: usize, eng: usize, engine: Engine) -> bool {
    eng < ENGINES_PER_CORE
        && engine.index() == eng
        && r.tpb_exec_state[core][eng] != TpbEngState::Complete
        && consume_core_pre(r, nq, core)
}

/// What [`consume_engine_stub`] can produce, exactly (it is built to satisfy
/// [`consume_engine_post`] by construction, so this mirrors its body): only
/// the frame changes; the engine's substate from START_PENDING to any, from
/// END_PENDING to END_PENDING or COMPLETE, COMPLETE stays; an `Ok` keeps the
/// fatal flags; an `Err` carries a status other than `NRT_SUCCESS` that the
/// stub's draw can give, with any fatal flags. `cargo test` checks every real
/// batch against it (in [`consume_engine_keeps_its_frame`]).
#[cfg_attr(not(test), allow(dead_code))] // checked by `cargo test` (see above)
pub(super) fn consume_engine_stub_allows(
    before: &ExecRequest,
    after: &ExecRequest,
    core: usize,
    eng: usize,
    result: Result<(), NrtError>,
) -> bool {
    let mut framed = before.clone();
    framed.tpb_exec_state[core][eng] = after.tpb_exec_state[core][eng];
    framed.vcore_notif_ts[core] = after.vcore_notif_ts[core];
    framed.slot_engine[core] = after.slot_engine[core];
    framed.exec_fatal_status[core] = after.exec_fatal_status[core];
    let was = before.tpb_exec_state[core][eng];
    let now = after.tpb_exec_state[core][eng];
    let substate = match was {
        TpbEngState::StartPending => true,
        TpbEngState::EndPending => now != TpbEngState::StartPending,
        TpbEngState::Complete => now == TpbEngState::Complete,
    };
    let result = match result {
        Ok(()) => eq(&after.exec_fatal_status[core], &before.exec_fatal_status[core]),
        Err(st) => !st.status().is_success() && stub_can_give(st.status()),
    };
    same(&framed, after) && substate && result
}

/// The stubs draw statuses as `NrtStatus::from_code(any u32)`: `st` is one of
/// those (every named status, and `Other` of a code that names none).
#[cfg_attr(not(test), allow(dead_code))] // checked by `cargo test` (see above)
pub(super) fn stub_can_give(st: NrtStatus) -> bool {
    NrtStatus::from_code(st.code()) == st
}

/// The timeout causes [`finalize_stub`] draws, by an exhaustive match with no
/// wildcard: a new cause does not compile here until the stub draws it too.
#[cfg_attr(not(test), allow(dead_code))] // checked by `cargo test` (see above)
pub(super) fn stub_can_give_cause(c: &Option<crate::exec::TimeoutCause>) -> bool {
    use crate::exec::TimeoutCause;
    match c {
        None => true,
        Some(TimeoutCause::HbmUe(st)) => stub_can_give(*st),
        Some(TimeoutCause::DmaAbort | TimeoutCause::Collectives | TimeoutCause::HangOnCompute) => true,
    }
}

/// `consume_engine` keeps its frame (see [`consume_engine_post`]), changes in
/// `nq` only its engine's ring, and never reads the clock; for any engine not
/// COMPLETE of any core of any WAIT_CORE request, with any substates and any
/// earlier timestamps and slot engines, against any device (the rings as in
/// [`consume_core_keeps_its_frame`]).
pub(crate) fn consume_engine_keeps_its_frame<A: Any>(mut any: A, core: usize, eng: usize) {
    let mut req = any_request(&mut any, ExecState::WaitCore, (core > 0).then_some(2));
    let Some(engine) = Engine::from_index(eng) else { return };
    if req.tpb_exec_state[core][eng] == TpbEngState::Complete {
        // The caller skips a COMPLETE engine: draw again, START or END pending.
        req.tpb_exec_state[core][eng] = if any.bool() { TpbEngState::StartPending } else { TpbEngState::EndPending };
    }
    if cfg!(kani) {
        for slot in 0..ts_slot::COUNT {
            req.vcore_notif_ts[core][slot] = any.u64();
        }
    }
    let ring_size = ring_size(&mut any);
    let mut nq = bound_notifications(&mut any, ring_size);
    assert!(consume_engine_pre(&req, &nq, core, eng, engine));
    let (before, nq_before) = (req.clone(), view(&nq));
    let now = any.u64();
    let mut dev = HavocDev::new(any, now, ring_size);
    let r = req.consume_engine(&mut dev, &mut nq, core, eng, engine);
    assert!(consume_engine_post(&before, &req, core, eng, r), "consume_engine left its frame");
    // The stub the proof of `consume_core` runs instead covers this batch.
    #[cfg(test)]
    assert!(consume_engine_stub_allows(&before, &req, core, eng, r), "a batch its stub cannot produce");
    assert!(nq_frame(&nq_before, &view(&nq), core as u8, &[INFER_STATUS_NQS[eng]], false), "another ring changed");
    assert_eq!(dev.now.get(), now, "consume_engine read the clock");
    let after = req.tpb_exec_state[core][eng];
    cover!(
        r.is_ok() && after == TpbEngState::EndPending && before.tpb_exec_state[core][eng] == TpbEngState::StartPending,
        "engine: START matched"
    );
    cover!(r.is_ok() && after == TpbEngState::Complete, "engine: END matched, the engine completes");
    let r = r.map_err(NrtError::status);
    cover!(r == Err(NrtStatus::ExecSwNqOverflow), "engine: an out-of-order record on an overflowed queue (1204)");
    cover!(r == Err(NrtStatus::Failure), "engine: a failed read or a bad record (1)");
    cover!(r.is_ok() && after == before.tpb_exec_state[core][eng], "engine: nothing new");
}

/// What the proof of `consume_core` runs instead of `consume_engine`: its
/// precondition checked, then ANY result and ANY new value of its frame that
/// [`consume_engine_post`] allows (exactly [`consume_engine_stub_allows`]: keep
/// the two in step); `dev` and `nq` untouched (see the module
/// docs: an engine's batch changes only its own ring, which no other engine
/// reads).
#[cfg(kani)]
#[allow(dead_code)] // named only by a harness's `kani::stub` attribute
pub(crate) fn consume_engine_stub<D: crate::exec::ExecDevice + ?Sized>(
    this: &mut ExecRequest,
    _dev: &mut D,
    nq: &mut Notifications,
    core: usize,
    eng: usize,
    engine: Engine,
) -> Result<(), NrtError> {
    assert!(consume_engine_pre(this, nq, core, eng, engine), "consume_engine called outside its proved domain");
    // Built to satisfy `consume_engine_post` by construction (no copy of the
    // request and no comparison for the solver): only the frame is written; the
    // engine's substate stays or moves forward, to any later one; the fatal
    // flags change only with an error, which never carries `NRT_SUCCESS`.
    this.tpb_exec_state[core][eng] = match this.tpb_exec_state[core][eng] {
        TpbEngState::StartPending => any_substate(&mut crate::proofs::KaniAny),
        TpbEngState::EndPending => {
            if kani::any() {
                TpbEngState::EndPending
            } else {
                TpbEngState::Complete
            }
        }
        TpbEngState::Complete => TpbEngState::Complete,
    };
    this.vcore_notif_ts[core] = kani::any();
    this.slot_engine[core] = kani::any();
    if kani::any() {
        return Ok(());
    }
    this.exec_fatal_status[core] = kani::any();
    Err(NrtError::failed(NrtStatus::from_code(kani::any())))
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
pub(crate) fn postprocess_core_stub<D: crate::exec::ExecDevice + ?Sized>(
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
    let nq_before = view(&nq);
    let now = any.u64();
    let mut dev = HavocDev::new(any, now, ring_size);
    // The ring unbound, or not, and the call, in each branch: the ring's size is
    // then a constant in each (a size merged from the two would bound the
    // sweep's loops only by the unwind limit; see `step::step_once`).
    let (st, class) = if unbound {
        if let Some(r) = nq.ring_mut(core, ERROR_NQ) {
            *r = NqRing::UNBOUND;
        }
        consume_error_block(&mut dev, &mut nq, core)
    } else {
        consume_error_block(&mut dev, &mut nq, core)
    };
    assert!(nq_frame(&nq_before, &view(&nq), core, &[ERROR_NQ], true), "the error sweep changed another ring");
    #[cfg(test)]
    assert!(stub_can_give(st), "a status the stub of the error sweep cannot give");
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
pub(crate) fn consume_error_block_stub<D: crate::exec::ExecDevice + ?Sized>(
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

/// The guarantee of `finalize(fault)`: the request is DONE with its timestamps
/// in CPU time, the return is 0 exactly when there is no `fault` (else 2), the
/// return is the cached result, a 2 never carries `NRT_SUCCESS`; and only the
/// state, the timestamps (and which slots held a record), `out_info` and the
/// cached result change (substates,
/// fatal flags, configuration, the barrier and core clocks stay).
pub(super) fn finalize_post(before: &ExecRequest, after: &ExecRequest, fault: Option<NrtError>, step: Step) -> bool {
    let mut framed = before.clone();
    framed.state = after.state;
    framed.ts_is_cpu = after.ts_is_cpu;
    framed.ts_recorded = after.ts_recorded;
    framed.vcore_notif_ts = after.vcore_notif_ts;
    framed.out_info = after.out_info;
    framed.result = after.result;
    let want = matches!((fault, step), (None, Step::Done(_)) | (Some(_), Step::Error(_)));
    let error_not_success = match step {
        Step::Error(e) => !e.status().is_success(),
        _ => true,
    };
    same(&framed, after)
        && after.state == ExecState::Done
        && after.ts_is_cpu
        && want
        && after.result == step
        && error_not_success
}

/// FINALIZE over one or two cores (`cores`) keeps [`finalize_post`], for any
/// request its callers can pass: the WAIT_BARRIER_PROXY and WAIT_CORE steps call
/// it before the timestamps are in CPU time, with any substates and timestamps,
/// any statuses and fatal flags already set on any core, and any `fault`; it
/// reads of the request only the core count, the statuses and (through its
/// per-core pieces) the timestamps, which are drawn freely here. Against any
/// device; it never reads the clock. Under kani its per-core pieces are their
/// stubs (proved above), so what this proves is the part over the cores: the
/// timeout classification, and the reconciliation of the cores' statuses.
pub(crate) fn finalize_keeps_its_contract<A: Any>(mut any: A, cores: u8) {
    let mut req = any_request(&mut any, ExecState::WaitCore, Some(cores));
    for c in 0..MAX_CORES {
        // A status already set on the way here: none, one of the step's own
        // (a timeout, an overflow, a failure), or anything (a proxy's answer).
        req.out_info.exec_rets[c] = match any.u8() % 4 {
            0 => NrtStatus::Success,
            1 => NrtStatus::Timeout,
            2 => NrtStatus::ExecSwNqOverflow,
            _ => NrtStatus::from_code(any.u32()),
        };
        for f in 0..crate::exec::fatal::COUNT {
            req.exec_fatal_status[c][f] = any.bool();
        }
    }
    let fault = if any.bool() { None } else { NrtError::new(NrtStatus::from_code(any.u32())) };
    let ring_size = ring_size(&mut any);
    let mut nq = bound_notifications(&mut any, ring_size);
    let before = req.clone();
    let now = any.u64();
    let mut dev = HavocDev::new(any, now, ring_size);
    let step = req.finalize(&mut dev, &mut nq, fault);
    let out = step.status().unwrap_or(NrtStatus::Other(0xDEAD));
    assert!(finalize_post(&before, &req, fault, step), "FINALIZE broke its contract");
    #[cfg(test)]
    for c in 0..MAX_CORES {
        // Every value the stub of FINALIZE draws anew is one it can draw.
        assert!(stub_can_give(out) && stub_can_give(req.out_info.exec_rets[c]), "a status the stub cannot give");
        assert!(stub_can_give_cause(&req.out_info.timeout_cause[c]), "a timeout cause the stub cannot give");
    }
    assert_eq!(dev.now.get(), now, "FINALIZE read the clock");
    let mut timed_out = false;
    for c in 0..MAX_CORES {
        timed_out |= c < usize::from(cores) && before.out_info.exec_rets[c] == NrtStatus::Timeout;
    }
    let done = matches!(step, Step::Done(_));
    cover!(done && out.is_success(), "finalize: a clean 0");
    cover!(done && !out.is_success(), "finalize: 0 with a status the error sweep set");
    cover!(matches!(step, Step::Error(_)) && out == NrtStatus::Failure, "finalize: 2, failed but no status: 1");
    cover!(timed_out && out != NrtStatus::Timeout, "finalize: a timeout classified as a hardware fault");
    cover!(cores == 2 && timed_out && out == NrtStatus::Timeout, "finalize: two cores, the hang wins");
}

/// What the step proofs run instead of `finalize`: ANY new timestamps and
/// `out_info`, and the DONE state, return and cached status that
/// [`finalize_post`] allows; `dev` and `nq` untouched (nothing in the step reads
/// them after FINALIZE; see the module docs).
#[cfg(kani)]
#[allow(dead_code)] // named only by the step harnesses' `kani::stub` attributes
pub(crate) fn finalize_stub<D: crate::exec::ExecDevice + ?Sized>(
    this: &mut ExecRequest,
    _dev: &mut D,
    _nq: &mut Notifications,
    fault: Option<NrtError>,
) -> Step {
    let before = this.clone();
    this.state = ExecState::Done;
    this.ts_is_cpu = true;
    this.ts_recorded = kani::any();
    this.vcore_notif_ts = kani::any();
    for c in 0..MAX_CORES {
        this.out_info.exec_rets[c] = NrtStatus::from_code(kani::any());
        this.out_info.tpb_duration_us[c] = kani::any();
        this.out_info.err[c] = if kani::any() {
            let raw: [u8; crate::nq::entry::ENTRY_SIZE] = kani::any();
            Some(crate::nq::ErrorEntry::from_array(&raw).class())
        } else {
            None
        };
        this.out_info.timeout_cause[c] = match kani::any::<u8>() {
            0 => None,
            1 => Some(crate::exec::TimeoutCause::HbmUe(NrtStatus::from_code(kani::any()))),
            2 => Some(crate::exec::TimeoutCause::DmaAbort),
            3 => Some(crate::exec::TimeoutCause::Collectives),
            _ => Some(crate::exec::TimeoutCause::HangOnCompute),
        };
    }
    let best = NrtStatus::from_code(kani::any());
    let step = if kani::any() { Step::Done(best) } else { Step::Error(NrtError::failed(best)) };
    this.result = step;
    kani::assume(finalize_post(&before, this, fault, step));
    step
}

// The harnesses. Unwind 14: the longest loop is over the 13 timestamp slots of a
// core (13 iterations + the exit test); the others are over 9 rings, 5 engines,
// 2 cores, one read per engine or error ring (2-entry rings: the lap bound).
// kani's unwinding assertions fail the proof if any loop needed more. Each core
// is its own branch with the whole property inside it, so that the core index is
// a constant there (an index into the request's and the rings' arrays that the
// solver would otherwise have to case-split at every access).

// The sweep of a core, its engines' batches as their proved guarantee (the
// proof below): what is proved here is the walk over the five engines, the
// skipping of COMPLETE ones and the early exit on an error.
#[cfg(kani)]
#[kani::proof]
#[kani::unwind(14)]
#[kani::stub(crate::exec::ExecRequest::consume_engine, consume_engine_stub)]
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

// An engine's batch, one harness per engine (a constant engine index: the
// ring, substate and timestamp slots it selects are then constants, where a
// symbolic index gave no verdict in 5 minutes), each core its own branch.
#[cfg(kani)]
#[kani::proof]
#[kani::unwind(14)]
fn prove_consume_engine_0_keeps_its_frame() {
    if kani::any() {
        consume_engine_keeps_its_frame(crate::proofs::KaniAny, 0, 0);
    } else {
        consume_engine_keeps_its_frame(crate::proofs::KaniAny, 1, 0);
    }
}

#[cfg(kani)]
#[kani::proof]
#[kani::unwind(14)]
fn prove_consume_engine_1_keeps_its_frame() {
    if kani::any() {
        consume_engine_keeps_its_frame(crate::proofs::KaniAny, 0, 1);
    } else {
        consume_engine_keeps_its_frame(crate::proofs::KaniAny, 1, 1);
    }
}

#[cfg(kani)]
#[kani::proof]
#[kani::unwind(14)]
fn prove_consume_engine_2_keeps_its_frame() {
    if kani::any() {
        consume_engine_keeps_its_frame(crate::proofs::KaniAny, 0, 2);
    } else {
        consume_engine_keeps_its_frame(crate::proofs::KaniAny, 1, 2);
    }
}

#[cfg(kani)]
#[kani::proof]
#[kani::unwind(14)]
fn prove_consume_engine_3_keeps_its_frame() {
    if kani::any() {
        consume_engine_keeps_its_frame(crate::proofs::KaniAny, 0, 3);
    } else {
        consume_engine_keeps_its_frame(crate::proofs::KaniAny, 1, 3);
    }
}

#[cfg(kani)]
#[kani::proof]
#[kani::unwind(14)]
fn prove_consume_engine_4_keeps_its_frame() {
    if kani::any() {
        consume_engine_keeps_its_frame(crate::proofs::KaniAny, 0, 4);
    } else {
        consume_engine_keeps_its_frame(crate::proofs::KaniAny, 1, 4);
    }
}

// FINALIZE over both cores, its per-core pieces as their proved guarantees
// (the stubs above, each of which asserts its precondition). Each core count is
// its own branch (constant array bounds inside).
#[cfg(kani)]
#[kani::proof]
#[kani::unwind(14)]
#[kani::stub(crate::exec::ExecRequest::postprocess_core, postprocess_core_stub)]
#[kani::stub(crate::exec::finalize::consume_error_block, consume_error_block_stub)]
fn prove_finalize_keeps_its_contract() {
    if kani::any() {
        finalize_keeps_its_contract(crate::proofs::KaniAny, 1);
    } else {
        finalize_keeps_its_contract(crate::proofs::KaniAny, 2);
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

    /// The tie between the engine's stub and the real batch can fail: the
    /// stub's range rejects every outcome the stub cannot produce.
    #[test]
    fn consume_engine_stub_allows_only_what_the_stub_produces() {
        let mut any = Bytes::new(&[]);
        let before = any_request(&mut any, ExecState::WaitCore, Some(2));
        let (core, eng) = (1, 3);
        let mut ok = before.clone();
        ok.vcore_notif_ts[core][0] = 7;
        assert!(consume_engine_stub_allows(&before, &ok, core, eng, Ok(())));
        let mut flagged = before.clone();
        flagged.exec_fatal_status[core][0] = !flagged.exec_fatal_status[core][0];
        assert!(consume_engine_stub_allows(&before, &flagged, core, eng, Err(NrtError::FAILURE)));
        assert!(!consume_engine_stub_allows(&before, &flagged, core, eng, Ok(())), "flags changed on Ok");
        let other = Err(NrtError::failed(NrtStatus::Other(1)));
        assert!(!consume_engine_stub_allows(&before, &ok, core, eng, other), "not a draw");
        let mut other_core = before.clone();
        other_core.vcore_notif_ts[0][0] ^= 1;
        assert!(!consume_engine_stub_allows(&before, &other_core, core, eng, Ok(())), "another core");
        let mut other_engine = before.clone();
        other_engine.tpb_exec_state[core][eng - 1] = if before.tpb_exec_state[core][eng - 1] == TpbEngState::Complete {
            TpbEngState::EndPending
        } else {
            TpbEngState::Complete
        };
        assert!(!consume_engine_stub_allows(&before, &other_engine, core, eng, Ok(())), "another engine");
        for (was, now, allowed) in [
            (TpbEngState::StartPending, TpbEngState::Complete, true),
            (TpbEngState::EndPending, TpbEngState::Complete, true),
            (TpbEngState::EndPending, TpbEngState::StartPending, false),
            (TpbEngState::Complete, TpbEngState::EndPending, false),
        ] {
            let (mut b, mut a) = (before.clone(), before.clone());
            b.tpb_exec_state[core][eng] = was;
            a.tpb_exec_state[core][eng] = now;
            assert_eq!(consume_engine_stub_allows(&b, &a, core, eng, Ok(())), allowed, "{was:?} -> {now:?}");
        }
        let mut state = before.clone();
        state.state = ExecState::Done;
        assert!(!consume_engine_stub_allows(&before, &state, core, eng, Ok(())), "outside the frame");
        assert!(stub_can_give(NrtStatus::Other(0xDEAD)) && !stub_can_give(NrtStatus::Other(0)));
    }

    #[test]
    #[cfg_attr(miri, ignore = "safe code, checked natively; under Miri engine 0 stands for it")]
    fn consume_core_keeps_its_frame_tests() {
        each(|b| [0, 1].into_iter().for_each(|core| consume_core_keeps_its_frame(b.clone(), core)), 5);
    }

    #[test]
    fn consume_engine_0_keeps_its_frame_tests() {
        each(|b| [0, 1].into_iter().for_each(|core| consume_engine_keeps_its_frame(b.clone(), core, 0)), 5);
    }

    #[test]
    #[cfg_attr(miri, ignore = "safe code, checked natively; under Miri engine 0 stands for it")]
    fn consume_engine_1_keeps_its_frame_tests() {
        each(|b| [0, 1].into_iter().for_each(|core| consume_engine_keeps_its_frame(b.clone(), core, 1)), 5);
    }

    #[test]
    #[cfg_attr(miri, ignore = "safe code, checked natively; under Miri engine 0 stands for it")]
    fn consume_engine_2_keeps_its_frame_tests() {
        each(|b| [0, 1].into_iter().for_each(|core| consume_engine_keeps_its_frame(b.clone(), core, 2)), 5);
    }

    #[test]
    #[cfg_attr(miri, ignore = "safe code, checked natively; under Miri engine 0 stands for it")]
    fn consume_engine_3_keeps_its_frame_tests() {
        each(|b| [0, 1].into_iter().for_each(|core| consume_engine_keeps_its_frame(b.clone(), core, 3)), 5);
    }

    #[test]
    #[cfg_attr(miri, ignore = "safe code, checked natively; under Miri engine 0 stands for it")]
    fn consume_engine_4_keeps_its_frame_tests() {
        each(|b| [0, 1].into_iter().for_each(|core| consume_engine_keeps_its_frame(b.clone(), core, 4)), 5);
    }

    #[test]
    fn postprocess_core_keeps_its_frame_tests() {
        each(|b| [0, 1].into_iter().for_each(|core| postprocess_core_keeps_its_frame(b.clone(), core)), 3);
    }

    #[test]
    fn finalize_keeps_its_contract_tests() {
        each(|b| [1, 2].into_iter().for_each(|cores| finalize_keeps_its_contract(b.clone(), cores)), 5);
    }

    #[test]
    fn consume_error_block_keeps_its_frame_tests() {
        each(|b| [0, 1].into_iter().for_each(|core| consume_error_block_keeps_its_frame(b.clone(), core)), 4);
    }
}
