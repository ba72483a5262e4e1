//! The per-core pieces of a step, proved on their own, so that the step proofs
//! (`step.rs`) can replace them by what is proved of them: assume-guarantee
//! by stubbing.
//!
//! The layers, each proved with the layer below as its stub: an engine's
//! batch, [`ExecRequest::consume_engine`]; a core's sweep,
//! [`ExecRequest::consume_core`]; a core's rescale and error sweep; FINALIZE
//! over the cores; the step over the cores. One solver run over all of them
//! gave no verdict. Each piece is proved for any core of any request its
//! callers can pass, against any device, [`HavocDev`]: it writes only its own
//! core's part of the request, its frame, moves no substate backwards, and
//! returns what the step relies on.
//!
//! Each `*_stub` is that guarantee and nothing more: `*_stub_from` applies one
//! *choice* of every value the stub draws, or refuses one the guarantee does
//! not allow, and the stub asserts its proof's precondition and draws any
//! allowed choice. Kani ties each stub to its proved predicate; `cargo test`
//! ties it to the real function, reading each real outcome back as a choice
//! the stub must allow and reproduce exactly. Why `kani::stub` and not
//! function contracts, and how the ties work: `docs/kani.md`, "How the layers
//! are linked".
//!
//! What the stubs do not do, and why that hides nothing:
//!
//! - they do not call the device: the proofs show each piece leaves
//!   [`HavocDev`]'s clock where it was, and its other answers are fresh draws,
//!   so the rest of the step sees the same device either way. The events and
//!   counter updates the real pieces hand over, no later call or step property
//!   reads;
//! - they do not change `nq`: the proofs show each piece changes only its own
//!   rings, and nothing later in the same step reads those: each engine is
//!   swept once per step, FINALIZE reads each core's error ring once, and
//!   nothing after FINALIZE reads `nq`. The rings across steps are
//!   `nq::ring::proofs`' to prove.

#[cfg(kani)]
use super::step::any_substate;
use super::step::{any_request, bound_notifications, eq, ring_size, same, HavocDev};
use crate::arch::{ENGINES_PER_CORE, MAX_CORES};
use crate::exec::finalize::consume_error_block;
use crate::exec::{fatal, ts_slot, ExecRequest, ExecState, Settle, Step, TimeoutCause, TpbEngState};
use crate::nq::entry::ENTRY_SIZE;
use crate::nq::{
    Engine, ErrorClass, ErrorEntry, Notifications, NqRing, TsCal, ERROR_NQ, INFER_STATUS_NQS, NQ_PER_CORE,
};
use crate::proofs::{cover, Any};
use crate::status::{NrtError, NrtStatus};

/// What the frame proofs compare of a [`Notifications`]: every ring, the
/// calibrations and sync points, the INFER_STATUS ids and the subscriber
/// queue's counts. Read through the accessors: a `clone()` of the queue is a
/// loop the solver bounds only by the unwind limit.
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

/// `a` and `b` agree on everything outside `(core, ids)`, and on the
/// subscriber queue unless `errors`, the error sweep's case.
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
/// leaves the fatal flags as they were; an `Err` never carries `NRT_SUCCESS`.
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

/// Where the step from WAIT_CORE calls `consume_core`, and so what its proof
/// assumes: a WAIT_CORE request, a core of it, that core's INFER_STATUS rings
/// freshly bound. The fields it reads, its proof draws freely; the others it
/// leaves as they were, whatever they are.
#[allow(clippy::needless_range_loop)] // index loops: constant bounds for the solver
fn consume_core_pre(r: &ExecRequest, nq: &Notifications, core: usize) -> bool {
    let mut bound = nq.infer_status_nqs().len() == ENGINES_PER_CORE;
    for i in 0..ENGINES_PER_CORE {
        let id = INFER_STATUS_NQS[i];
        bound &= nq.infer_status_nqs().get(i) == Some(&id)
            && nq.ring(core as u8, id).is_some_and(|ring| {
                // Freshly bound, cursor at 0, 2 entries under kani.
                NqRing::new(ring.size_bytes()).ok() == Some(*ring) && (!cfg!(kani) || ring.size_bytes() == 32)
            });
    }
    r.state == ExecState::WaitCore && core < r.tpb_count() && bound
}

/// `consume_core` keeps its frame, [`consume_core_post`], changes in `nq` only
/// `core`'s INFER_STATUS rings, and never reads the clock: for any core of any
/// WAIT_CORE request, with any values of the fields it reads, against any
/// device. The rings are the step proofs', `step::step_once` says why.
pub(crate) fn consume_core_keeps_its_frame<A: Any>(mut any: A, core: usize) {
    let mut req = any_request(&mut any, ExecState::WaitCore, (core > 0).then_some(2));
    let n = req.tpb_count();
    // Under kani `any_request` leaves the timestamps 0, so they are drawn here:
    // the sweep compares against them.
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
    assert!(consume_core_stub_gives(&before, &req, core, r), "a sweep the stub of consume_core cannot give");
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
    // As in the engine's property: outcomes the tie to the stub needs reached.
    #[cfg(test)]
    {
        let mut start_to_complete = false;
        for e in 0..ENGINES_PER_CORE {
            start_to_complete |= before.tpb_exec_state[core][e] == TpbEngState::StartPending
                && req.tpb_exec_state[core][e] == TpbEngState::Complete;
        }
        crate::proofs::hit(start_to_complete, "consume: an engine from START_PENDING to COMPLETE in one sweep");
        crate::proofs::hit(
            !eq(&before.slot_engine[core], &req.slot_engine[core]),
            "consume: a CC or tensor record moved a slot engine",
        );
    }
}

/// Every value the stub of `consume_core` draws.
#[derive(Clone, Copy, Debug)]
pub(super) struct CoreChoice {
    substates: [TpbEngState; ENGINES_PER_CORE],
    ts: [u64; ts_slot::COUNT],
    slot_engine: [u8; ts_slot::SHARED],
    fatal: [bool; fatal::COUNT],
    ok: bool,
    code: u32,
}

/// The stub of `consume_core` for one choice: writes it into `core`'s frame and
/// returns its result, or `None`, `this` part-written, for an outcome
/// [`consume_core_post`] does not allow.
pub(super) fn consume_core_stub_from(
    this: &mut ExecRequest,
    core: usize,
    c: &CoreChoice,
) -> Option<Result<(), NrtError>> {
    let before = this.clone();
    this.tpb_exec_state[core] = c.substates;
    this.vcore_notif_ts[core] = c.ts;
    this.slot_engine[core] = c.slot_engine;
    this.exec_fatal_status[core] = c.fatal;
    let r = if c.ok { Ok(()) } else { Err(NrtError::failed(NrtStatus::from_code(c.code))) };
    consume_core_post(&before, this, core, r).then_some(r)
}

/// The stub of `consume_core` gives the outcome `(after, r)` from `before`:
/// the choice read off it, applied to a copy of `before`, gives `after` in
/// every field and `r`. Run on every real sweep by the tests.
#[cfg(test)]
pub(super) fn consume_core_stub_gives(
    before: &ExecRequest,
    after: &ExecRequest,
    core: usize,
    r: Result<(), NrtError>,
) -> bool {
    let c = CoreChoice {
        substates: after.tpb_exec_state[core],
        ts: after.vcore_notif_ts[core],
        slot_engine: after.slot_engine[core],
        fatal: after.exec_fatal_status[core],
        ok: r.is_ok(),
        code: r.err().map_or(0, NrtError::code),
    };
    let mut stubbed = before.clone();
    consume_core_stub_from(&mut stubbed, core, &c) == Some(r) && same(&stubbed, after)
}

/// What the step proofs run instead of `consume_core`: its precondition
/// checked, then ANY choice [`consume_core_stub_from`] allows; `dev` and `nq`
/// untouched.
#[cfg(kani)]
#[allow(dead_code)] // named only by the step harnesses' `kani::stub` attributes
#[allow(clippy::needless_range_loop)] // an index loop: a constant bound for the solver
pub(crate) fn consume_core_stub<D: crate::exec::ExecDevice + ?Sized>(
    this: &mut ExecRequest,
    _dev: &mut D,
    nq: &mut Notifications,
    core: usize,
) -> Result<(), NrtError> {
    assert!(consume_core_pre(this, nq, core), "consume_core called outside its proved domain");
    let mut substates = [TpbEngState::StartPending; ENGINES_PER_CORE];
    for e in 0..ENGINES_PER_CORE {
        substates[e] = any_substate(&mut crate::proofs::KaniAny);
    }
    let c = CoreChoice {
        substates,
        ts: kani::any(),
        slot_engine: kani::any(),
        fatal: kani::any(),
        ok: kani::any(),
        code: kani::any(),
    };
    let r = consume_core_stub_from(this, core, &c);
    kani::assume(r.is_some());
    r.unwrap_or(Err(NrtError::FAILURE))
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

/// `consume_engine` keeps its frame, [`consume_engine_post`], changes in `nq`
/// only its engine's ring, and never reads the clock: for any engine not
/// COMPLETE of any core of any WAIT_CORE request, against any device.
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
    // The stub the proof of `consume_core` runs instead gives this batch.
    #[cfg(test)]
    assert!(consume_engine_stub_gives(&before, &req, core, eng, r), "a batch its stub cannot give");
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
    // Outcomes the tie to the stub needs the tests' inputs to reach; the
    // proofs' stubs draw every slot engine, so they need no such cover.
    #[cfg(test)]
    {
        let was = before.tpb_exec_state[core][eng];
        crate::proofs::hit(
            was == TpbEngState::StartPending && after == TpbEngState::Complete,
            "engine: START and END in one batch",
        );
        crate::proofs::hit(
            !eq(&before.slot_engine[core], &req.slot_engine[core]),
            "engine: a CC or tensor record moved a slot engine",
        );
    }
}

/// Every value the stub of `consume_engine` draws.
#[derive(Clone, Copy, Debug)]
pub(super) struct EngineChoice {
    substate: TpbEngState,
    ts: [u64; ts_slot::COUNT],
    slot_engine: [u8; ts_slot::SHARED],
    ok: bool,
    fatal: [bool; fatal::COUNT],
    code: u32,
}

/// The stub of `consume_engine` for one choice, satisfying
/// [`consume_engine_post`] by construction, with no copy for the solver: only
/// the frame is written, the substate never moves back, and the fatal flags
/// change only with an error. `None`, nothing written, for a move back.
pub(super) fn consume_engine_stub_from(
    this: &mut ExecRequest,
    core: usize,
    eng: usize,
    c: &EngineChoice,
) -> Option<Result<(), NrtError>> {
    let forward = match this.tpb_exec_state[core][eng] {
        TpbEngState::StartPending => true,
        TpbEngState::EndPending => c.substate != TpbEngState::StartPending,
        TpbEngState::Complete => c.substate == TpbEngState::Complete,
    };
    if !forward {
        return None;
    }
    this.tpb_exec_state[core][eng] = c.substate;
    this.vcore_notif_ts[core] = c.ts;
    this.slot_engine[core] = c.slot_engine;
    if c.ok {
        return Some(Ok(()));
    }
    this.exec_fatal_status[core] = c.fatal;
    Some(Err(NrtError::failed(NrtStatus::from_code(c.code))))
}

/// The stub of `consume_engine` gives the outcome `(after, r)` from `before`,
/// as [`consume_core_stub_gives`].
#[cfg(test)]
pub(super) fn consume_engine_stub_gives(
    before: &ExecRequest,
    after: &ExecRequest,
    core: usize,
    eng: usize,
    r: Result<(), NrtError>,
) -> bool {
    let c = EngineChoice {
        substate: after.tpb_exec_state[core][eng],
        ts: after.vcore_notif_ts[core],
        slot_engine: after.slot_engine[core],
        ok: r.is_ok(),
        fatal: after.exec_fatal_status[core],
        code: r.err().map_or(0, NrtError::code),
    };
    let mut stubbed = before.clone();
    consume_engine_stub_from(&mut stubbed, core, eng, &c) == Some(r) && same(&stubbed, after)
}

/// What the proof of `consume_core` runs instead of `consume_engine`: its
/// precondition checked, then ANY choice [`consume_engine_stub_from`] allows;
/// `dev` and `nq` untouched.
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
    let c = EngineChoice {
        substate: any_substate(&mut crate::proofs::KaniAny),
        ts: kani::any(),
        slot_engine: kani::any(),
        ok: kani::any(),
        fatal: kani::any(),
        code: kani::any(),
    };
    let r = consume_engine_stub_from(this, core, eng, &c);
    kani::assume(r.is_some());
    r.unwrap_or(Err(NrtError::FAILURE))
}

/// The guarantee of `postprocess_core(core)`: only `core`'s timestamp slots and
/// duration change, to anything.
fn postprocess_core_post(before: &ExecRequest, after: &ExecRequest, core: usize) -> bool {
    let mut framed = before.clone();
    framed.vcore_notif_ts[core] = after.vcore_notif_ts[core];
    framed.out_info.tpb_duration_us[core] = after.out_info.tpb_duration_us[core];
    same(&framed, after)
}

/// `postprocess_core` keeps its frame and never panics, for any core of any
/// request FINALIZE can pass it, with any values of the fields it reads,
/// against any device; it never reads the clock.
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
    #[cfg(test)]
    assert!(postprocess_core_stub_gives(&before, &req, core), "a rescale the stub of postprocess_core cannot give");
    assert_eq!(dev.now.get(), now, "postprocess_core read the clock");
    cover!(nonzero >= 2 && req.out_info.tpb_duration_us[core] > 0, "postprocess: a core with a duration");
    cover!(nonzero > 0 && uncalibrated && dev.events > 0, "postprocess: a slot without calibration, reported");
    cover!(core == 1, "postprocess: the second core");
}

/// Every value the stub of `postprocess_core` draws.
#[derive(Clone, Copy, Debug)]
pub(super) struct RescaleChoice {
    ts: [u64; ts_slot::COUNT],
    duration: u64,
}

/// The stub of `postprocess_core` for one choice: writes it into `core`'s
/// frame. Every choice satisfies [`postprocess_core_post`].
pub(super) fn postprocess_core_stub_from(this: &mut ExecRequest, core: usize, c: &RescaleChoice) {
    this.vcore_notif_ts[core] = c.ts;
    this.out_info.tpb_duration_us[core] = c.duration;
}

/// The stub of `postprocess_core` gives `after` from `before`, as
/// [`consume_core_stub_gives`].
#[cfg(test)]
pub(super) fn postprocess_core_stub_gives(before: &ExecRequest, after: &ExecRequest, core: usize) -> bool {
    let c = RescaleChoice { ts: after.vcore_notif_ts[core], duration: after.out_info.tpb_duration_us[core] };
    let mut stubbed = before.clone();
    postprocess_core_stub_from(&mut stubbed, core, &c);
    same(&stubbed, after)
}

/// What the step proofs run instead of `postprocess_core`: its precondition
/// checked, then ANY choice [`postprocess_core_stub_from`] allows; `dev` untouched.
#[cfg(kani)]
#[allow(dead_code)] // named only by the step harnesses' `kani::stub` attributes
pub(crate) fn postprocess_core_stub<D: crate::exec::ExecDevice + ?Sized>(
    this: &mut ExecRequest,
    _dev: &mut D,
    _nq: &Notifications,
    core: usize,
) {
    assert!(core < MAX_CORES, "postprocess_core called outside its proved domain");
    postprocess_core_stub_from(this, core, &RescaleChoice { ts: kani::any(), duration: kani::any() });
}

/// Where FINALIZE calls `consume_error_block`, and so what its proof assumes:
/// a core, its error ring unbound or freshly bound.
fn consume_error_block_pre(nq: &Notifications, core: u8) -> bool {
    usize::from(core) < MAX_CORES
        && nq.ring(core, ERROR_NQ).is_some_and(|ring| {
            *ring == NqRing::UNBOUND
                || (NqRing::new(ring.size_bytes()).ok() == Some(*ring) && (!cfg!(kani) || ring.size_bytes() == 32))
        })
}

/// `consume_error_block`, one core's error-ring sweep, changes in `nq` only
/// that core's error ring and the subscriber queue, and never reads the clock,
/// against any device. It may return anything: the step's properties hold for
/// any status and first class.
pub(crate) fn consume_error_block_keeps_its_frame<A: Any>(mut any: A, core: u8) {
    let ring_size = ring_size(&mut any);
    let mut nq = bound_notifications(&mut any, ring_size);
    let unbound = any.u8() >= 0xF0;
    let nq_before = view(&nq);
    let now = any.u64();
    let mut dev = HavocDev::new(any, now, ring_size);
    // The call in each branch, so the ring's size is a constant in each:
    // `step::step_once` says why.
    let (st, class) = if unbound {
        if let Some(r) = nq.ring_mut(core, ERROR_NQ) {
            *r = NqRing::UNBOUND;
        }
        assert!(consume_error_block_pre(&nq, core));
        consume_error_block(&mut dev, &mut nq, core)
    } else {
        assert!(consume_error_block_pre(&nq, core));
        consume_error_block(&mut dev, &mut nq, core)
    };
    assert!(nq_frame(&nq_before, &view(&nq), core, &[ERROR_NQ], true), "the error sweep changed another ring");
    #[cfg(test)]
    assert!(consume_error_block_stub_gives(st, class), "a sweep result the stub of the error sweep cannot give");
    assert_eq!(dev.now.get(), now, "the error sweep read the clock");
    cover!(unbound && st.is_success() && class.is_none(), "errors: an unbound ring is skipped");
    cover!(!unbound && class.is_some() && !st.is_success(), "errors: a record with a status");
    cover!(st == NrtStatus::Failure && class.is_none(), "errors: a failed read");
    cover!(core == 1, "errors: the second core");
}

/// Every value the stub of `consume_error_block` draws.
#[derive(Clone, Copy, Debug)]
pub(super) struct ErrorSweepChoice {
    code: u32,
    record: Option<[u8; ENTRY_SIZE]>,
}

/// The stub of `consume_error_block` for one choice: the status of the code,
/// and the decoder's class of the record. Every choice is allowed.
pub(super) fn consume_error_block_stub_from(c: &ErrorSweepChoice) -> (NrtStatus, Option<ErrorClass>) {
    (NrtStatus::from_code(c.code), c.record.as_ref().map(|raw| ErrorEntry::from_array(raw).class()))
}

/// An error record of class `class`, or of another class when none gives it,
/// which fails the tie that asks for it.
#[cfg(test)]
fn record_of_class(class: ErrorClass) -> [u8; ENTRY_SIZE] {
    let mut raw = [0; ENTRY_SIZE];
    for subtype in 0..=crate::nq::error::ERROR_SUBTYPE_COUNT as u16 {
        raw = ErrorEntry::new(subtype, 0, 0, 0).to_array();
        if ErrorEntry::from_array(&raw).class() == class {
            break;
        }
    }
    raw
}

/// The stub of `consume_error_block` gives the sweep's status and first class.
#[cfg(test)]
pub(super) fn consume_error_block_stub_gives(st: NrtStatus, class: Option<ErrorClass>) -> bool {
    let c = ErrorSweepChoice { code: st.code(), record: class.map(record_of_class) };
    consume_error_block_stub_from(&c) == (st, class)
}

/// What the step proofs run instead of `consume_error_block`: its precondition
/// checked, then ANY choice [`consume_error_block_stub_from`] allows; `dev`
/// and `nq` untouched.
#[cfg(kani)]
#[allow(dead_code)] // named only by the step harnesses' `kani::stub` attributes
pub(crate) fn consume_error_block_stub<D: crate::exec::ExecDevice + ?Sized>(
    _dev: &mut D,
    nq: &mut Notifications,
    c: u8,
) -> (NrtStatus, Option<ErrorClass>) {
    assert!(consume_error_block_pre(nq, c), "consume_error_block called outside its proved domain");
    let record = if kani::any() { Some(kani::any()) } else { None };
    consume_error_block_stub_from(&ErrorSweepChoice { code: kani::any(), record })
}

/// The guarantee of `finalize(fault)`: the request is DONE with its timestamps
/// in CPU time, or under `Settle::AfterNotice` untouched and its settle due;
/// the return is 0 exactly without a `fault`, else 2, and is the cached
/// result; a 2 never carries `NRT_SUCCESS`. Only the state, the timestamps,
/// `out_info`, the settle flag and the cached result change.
pub(super) fn finalize_post(before: &ExecRequest, after: &ExecRequest, fault: Option<NrtError>, step: Step) -> bool {
    let mut framed = before.clone();
    framed.state = after.state;
    framed.ts_is_cpu = after.ts_is_cpu;
    framed.settle_due = after.settle_due;
    framed.out_info = after.out_info;
    framed.result = after.result;
    let deferred = before.cfg.settle == Settle::AfterNotice;
    if !deferred {
        framed.ts_recorded = after.ts_recorded;
        framed.vcore_notif_ts = after.vcore_notif_ts;
    } else {
        framed.out_info.tpb_duration_us = before.out_info.tpb_duration_us;
    }
    let want = matches!((fault, step), (None, Step::Done(_)) | (Some(_), Step::Error(_)));
    let error_not_success = match step {
        Step::Error(e) => !e.status().is_success(),
        _ => true,
    };
    same(&framed, after)
        && after.state == ExecState::Done
        && after.ts_is_cpu != deferred
        && after.settle_due == deferred
        && want
        && after.result == step
        && error_not_success
}

/// Where the steps from WAIT_BARRIER_PROXY and WAIT_CORE call FINALIZE, and so
/// what its proof assumes: one or two cores, the timestamps still device
/// timestamps. The fields it reads, its proof draws freely.
fn finalize_pre(r: &ExecRequest) -> bool {
    (1..=MAX_CORES).contains(&r.tpb_count())
        && !r.ts_is_cpu
        && !r.settle_due
        && matches!(r.state, ExecState::WaitBarrierProxy | ExecState::WaitCore)
}

/// FINALIZE over `cores` cores keeps [`finalize_post`], for any request its
/// callers can pass and any `fault`, against any device; it never reads the
/// clock. Under kani its per-core pieces are their stubs, so this proves the
/// part over the cores: the timeout classification and the reconciliation.
pub(crate) fn finalize_keeps_its_contract<A: Any>(mut any: A, cores: u8) {
    let mut req = any_request(&mut any, ExecState::WaitCore, Some(cores));
    for c in 0..MAX_CORES {
        // A status already set on the way here: none, one of the step's own,
        // or anything a proxy answered.
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
    // Called from the barrier wait or the core wait; it reads neither state.
    if any.bool() {
        req.state = ExecState::WaitBarrierProxy;
    }
    let ring_size = ring_size(&mut any);
    let mut nq = bound_notifications(&mut any, ring_size);
    assert!(finalize_pre(&req));
    let before = req.clone();
    let now = any.u64();
    let mut dev = HavocDev::new(any, now, ring_size);
    let step = req.finalize(&mut dev, &mut nq, fault);
    let out = step.status().unwrap_or(NrtStatus::Other(0xDEAD));
    assert!(finalize_post(&before, &req, fault, step), "FINALIZE broke its contract");
    #[cfg(test)]
    assert!(finalize_stub_gives(&before, &req, fault, step), "a FINALIZE its stub cannot give");
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
    // Each timeout cause, which the tie to the stub needs the tests to reach.
    #[cfg(test)]
    for c in 0..MAX_CORES {
        let cause = req.out_info.timeout_cause[c];
        crate::proofs::hit(matches!(cause, Some(TimeoutCause::HbmUe(_))), "finalize: a timeout on an HBM UE");
        crate::proofs::hit(cause == Some(TimeoutCause::DmaAbort), "finalize: a timeout on a DMA abort");
        crate::proofs::hit(cause == Some(TimeoutCause::Collectives), "finalize: a timeout in collectives");
        crate::proofs::hit(cause == Some(TimeoutCause::HangOnCompute), "finalize: a timeout, a hang on compute");
    }
}

/// Every value the stub of FINALIZE draws. The timeout cause: 0 none, 1 an HBM
/// UE with the code `hbm`, 2 a DMA abort, 3 collectives, else a hang.
#[derive(Clone, Copy, Debug)]
pub(super) struct FinalizeChoice {
    ts_recorded: [u16; MAX_CORES],
    ts: [[u64; ts_slot::COUNT]; MAX_CORES],
    rets: [u32; MAX_CORES],
    durations: [u64; MAX_CORES],
    records: [Option<[u8; ENTRY_SIZE]>; MAX_CORES],
    causes: [u8; MAX_CORES],
    hbm: [u32; MAX_CORES],
    best: u32,
    done: bool,
}

/// The stub of FINALIZE for one choice: the request DONE with the choice's
/// timestamps and `out_info` and its return cached; `None`, `this`
/// part-written, for an outcome [`finalize_post`] does not allow.
#[allow(clippy::needless_range_loop)] // an index loop: a constant bound for the solver
pub(super) fn finalize_stub_from(this: &mut ExecRequest, fault: Option<NrtError>, c: &FinalizeChoice) -> Option<Step> {
    let before = this.clone();
    let deferred = this.cfg.settle == Settle::AfterNotice;
    this.state = ExecState::Done;
    this.ts_is_cpu = !deferred;
    this.settle_due = deferred;
    if !deferred {
        this.ts_recorded = c.ts_recorded;
        this.vcore_notif_ts = c.ts;
    }
    for core in 0..MAX_CORES {
        this.out_info.exec_rets[core] = NrtStatus::from_code(c.rets[core]);
        if !deferred {
            this.out_info.tpb_duration_us[core] = c.durations[core];
        }
        this.out_info.err[core] = c.records[core].as_ref().map(|raw| ErrorEntry::from_array(raw).class());
        this.out_info.timeout_cause[core] = match c.causes[core] {
            0 => None,
            1 => Some(TimeoutCause::HbmUe(NrtStatus::from_code(c.hbm[core]))),
            2 => Some(TimeoutCause::DmaAbort),
            3 => Some(TimeoutCause::Collectives),
            _ => Some(TimeoutCause::HangOnCompute),
        };
    }
    let best = NrtStatus::from_code(c.best);
    let step = if c.done { Step::Done(best) } else { Step::Error(NrtError::failed(best)) };
    this.result = step;
    finalize_post(&before, this, fault, step).then_some(step)
}

/// The stub of FINALIZE gives the outcome `(after, step)` from `before`, as
/// [`consume_core_stub_gives`]. The causes are read by an exhaustive match: a
/// new cause does not compile here until the stub gives it too.
#[cfg(test)]
pub(super) fn finalize_stub_gives(
    before: &ExecRequest,
    after: &ExecRequest,
    fault: Option<NrtError>,
    step: Step,
) -> bool {
    let mut c = FinalizeChoice {
        ts_recorded: after.ts_recorded,
        ts: after.vcore_notif_ts,
        rets: [0; MAX_CORES],
        durations: after.out_info.tpb_duration_us,
        records: [None; MAX_CORES],
        causes: [0; MAX_CORES],
        hbm: [0; MAX_CORES],
        best: step.status().map_or(0, NrtStatus::code),
        done: matches!(step, Step::Done(_)),
    };
    for core in 0..MAX_CORES {
        c.rets[core] = after.out_info.exec_rets[core].code();
        c.records[core] = after.out_info.err[core].map(record_of_class);
        (c.causes[core], c.hbm[core]) = match after.out_info.timeout_cause[core] {
            None => (0, 0),
            Some(TimeoutCause::HbmUe(st)) => (1, st.code()),
            Some(TimeoutCause::DmaAbort) => (2, 0),
            Some(TimeoutCause::Collectives) => (3, 0),
            Some(TimeoutCause::HangOnCompute) => (4, 0),
        };
    }
    let mut stubbed = before.clone();
    finalize_stub_from(&mut stubbed, fault, &c) == Some(step) && same(&stubbed, after)
}

/// What the step proofs run instead of `finalize`: its precondition checked,
/// then ANY choice [`finalize_stub_from`] allows; `dev` and `nq` untouched.
#[cfg(kani)]
#[allow(dead_code)] // named only by the step harnesses' `kani::stub` attributes
#[allow(clippy::needless_range_loop)] // an index loop: a constant bound for the solver
pub(crate) fn finalize_stub<D: crate::exec::ExecDevice + ?Sized>(
    this: &mut ExecRequest,
    _dev: &mut D,
    _nq: &mut Notifications,
    fault: Option<NrtError>,
) -> Step {
    assert!(finalize_pre(this), "finalize called outside its proved domain");
    let mut records = [None; MAX_CORES];
    for core in 0..MAX_CORES {
        records[core] = if kani::any() { Some(kani::any()) } else { None };
    }
    let c = FinalizeChoice {
        ts_recorded: kani::any(),
        ts: kani::any(),
        rets: kani::any(),
        durations: kani::any(),
        records,
        causes: kani::any(),
        hbm: kani::any(),
        best: kani::any(),
        done: kani::any(),
    };
    let step = finalize_stub_from(this, fault, &c);
    kani::assume(step.is_some());
    step.unwrap_or(Step::InFlight)
}

// The harnesses. Unwind 14 is `ts_slot::COUNT + 1`: the longest loop is over a
// core's timestamp slots, plus the exit test; the others are shorter. kani's
// unwinding assertions fail the proof if any loop needed more. Each core is
// its own branch, so the core index is a constant there for the solver.

// The sweep of a core, its engines' batches as their proved guarantee: what is
// proved here is the walk over the engines and the early exit on an error.
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

// `rescale_ns` is replaced by its verified contract,
// `exec::proofs::prove_rescale_ns_contract`: the frame does not depend on its
// value, and its 128-bit division is more than the solver can take.
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

// An engine's batch, one harness per engine, each core its own branch: a
// constant engine index makes its ring and slots constants, where a symbolic
// one gave no verdict.
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

// FINALIZE over both cores, its per-core pieces as their proved guarantees.
// Each core count is its own branch, for constant array bounds.
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
        // A repeated sequence of read answers, each "no failure" then a record
        // with the phase bit set and subtype START, END, CUSTOM, CC_START or
        // CC_END (the rest drawn), at any alignment: several records in one
        // batch (START then END: an engine from START_PENDING to COMPLETE in
        // one call) and the CC and tensor records that move a slot engine,
        // outcomes the stubs must give and the patterns above almost never
        // reach.
        proptest!(ProptestConfig::with_cases(cases(2048)),
        |(records in proptest::collection::vec((0usize..5, any::<[u8; 16]>()), 1..6),
          prefix in proptest::collection::vec(any::<u8>(), 0..17))| {
            let mut bytes = prefix;
            while bytes.len() < 1200 {
                for (kind, record) in &records {
                    let mut unit = [0u8; 17];
                    unit[1..].copy_from_slice(record);
                    unit[1 + 3] |= 0x80;
                    unit[1 + 6] = [2, 3, 6, 7, 8][*kind];
                    unit[1 + 7] = 0;
                    bytes.extend_from_slice(&unit);
                }
            }
            property(Bytes::new(&bytes));
        });
        // A repeated sequence of "a byte, then a named status code" (a fault
        // probe's "found" and its status, a proxy's failure), at any alignment:
        // the statuses a random u32 almost never is (an HBM UE outranking a
        // timeout, say).
        proptest!(ProptestConfig::with_cases(cases(2048)),
        |(units in proptest::collection::vec((any::<u8>(), 0..NrtStatus::ALL.len()), 1..6),
          prefix in proptest::collection::vec(any::<u8>(), 0..5))| {
            let mut bytes = prefix;
            while bytes.len() < 1200 {
                for (flag, status) in &units {
                    bytes.push(*flag);
                    bytes.extend_from_slice(&NrtStatus::ALL[*status].code().to_le_bytes());
                }
            }
            property(Bytes::new(&bytes));
        });
        // Fixed inputs: START then END records at every alignment to the
        // request's draws. Generated inputs reach an engine's START and END in
        // one batch only now and then; these reach it every time, so the cover
        // is a fact about the code, never about the seed.
        for prefix in 0..17usize {
            for fill in [0x00u8, 0x11, 0x5A, 0xFF] {
                let mut bytes = vec![fill; prefix];
                while bytes.len() < 1200 {
                    for subtype in [2u8, 3] {
                        let mut unit = [fill; 17];
                        unit[0] = 0;
                        unit[1 + 3] |= 0x80;
                        unit[1 + 6] = subtype;
                        unit[1 + 7] = 0;
                        bytes.extend_from_slice(&unit);
                    }
                }
                property(Bytes::new(&bytes));
            }
        }
        assert_covered(min_covers);
    }

    /// `request` with the substate of `(core, eng)` changed to a different one.
    fn other_substate(request: &ExecRequest, core: usize, eng: usize) -> ExecRequest {
        let mut r = request.clone();
        r.tpb_exec_state[core][eng] = match r.tpb_exec_state[core][eng] {
            TpbEngState::Complete => TpbEngState::EndPending,
            _ => TpbEngState::Complete,
        };
        r
    }

    /// A status whose code names another status: no draw of a status code
    /// gives it.
    const NOT_A_DRAW: NrtStatus = NrtStatus::Other(1);

    /// The tie of the engine's stub to the real batch can fail: it holds of a
    /// real batch (a failed read), and rejects every outcome the stub cannot
    /// give; the stub rejects a choice that moves the substate back, and
    /// writes nothing then.
    #[test]
    fn consume_engine_tie_rejects_what_the_stub_cannot_give() {
        let (core, eng) = (1, 3);
        let bytes = [0xFF; 600];
        let mut any = Bytes::new(&bytes);
        let mut before = any_request(&mut any, ExecState::WaitCore, Some(2));
        before.tpb_exec_state[core][eng] = TpbEngState::StartPending;
        let mut nq = bound_notifications(&mut any, 32);
        let mut after = before.clone();
        let mut dev = HavocDev::new(any, 0, 32);
        let r = after.consume_engine(&mut dev, &mut nq, core, eng, Engine::Dve);
        assert_eq!(r, Err(NrtError::FAILURE), "every read fails on this device");
        assert!(consume_engine_stub_gives(&before, &after, core, eng, r), "the real batch");

        let mut flagged = before.clone();
        flagged.exec_fatal_status[core][0] = !flagged.exec_fatal_status[core][0];
        assert!(consume_engine_stub_gives(&before, &flagged, core, eng, Err(NrtError::FAILURE)));
        assert!(!consume_engine_stub_gives(&before, &flagged, core, eng, Ok(())), "flags changed on Ok");
        assert!(!consume_engine_stub_gives(&before, &after, core, eng, Err(NrtError::failed(NOT_A_DRAW))), "a status");
        let mut other_core = before.clone();
        other_core.vcore_notif_ts[0][0] ^= 1;
        assert!(!consume_engine_stub_gives(&before, &other_core, core, eng, Ok(())), "another core");
        let other_engine = other_substate(&before, core, eng - 1);
        assert!(!consume_engine_stub_gives(&before, &other_engine, core, eng, Ok(())), "another engine");
        let mut state = before.clone();
        state.state = ExecState::Done;
        assert!(!consume_engine_stub_gives(&before, &state, core, eng, Ok(())), "outside the frame");
        for (was, now, allowed) in [
            (TpbEngState::StartPending, TpbEngState::Complete, true),
            (TpbEngState::EndPending, TpbEngState::Complete, true),
            (TpbEngState::EndPending, TpbEngState::StartPending, false),
            (TpbEngState::Complete, TpbEngState::EndPending, false),
        ] {
            let (mut b, mut a) = (before.clone(), before.clone());
            b.tpb_exec_state[core][eng] = was;
            a.tpb_exec_state[core][eng] = now;
            assert_eq!(consume_engine_stub_gives(&b, &a, core, eng, Ok(())), allowed, "{was:?} -> {now:?}");
        }

        let mut b = before.clone();
        b.tpb_exec_state[core][eng] = TpbEngState::EndPending;
        let back = EngineChoice {
            substate: TpbEngState::StartPending,
            ts: [1; ts_slot::COUNT],
            slot_engine: [1; 3],
            ok: true,
            fatal: [true; fatal::COUNT],
            code: 5,
        };
        let mut stubbed = b.clone();
        assert_eq!(consume_engine_stub_from(&mut stubbed, core, eng, &back), None, "a substate moved back");
        assert!(same(&stubbed, &b), "a rejected choice wrote the request");
    }

    /// The tie of the sweep's stub to the real sweep can fail: it holds of a
    /// real sweep (its first batch fails), and rejects every outcome the stub
    /// cannot give.
    #[test]
    fn consume_core_tie_rejects_what_the_stub_cannot_give() {
        let core = 1;
        let bytes = [0xFF; 600];
        let mut any = Bytes::new(&bytes);
        let before = any_request(&mut any, ExecState::WaitCore, Some(2));
        let mut nq = bound_notifications(&mut any, 32);
        let mut after = before.clone();
        let mut dev = HavocDev::new(any, 0, 32);
        let r = after.consume_core(&mut dev, &mut nq, core);
        assert_eq!(r, Err(NrtError::FAILURE), "every read fails on this device");
        assert!(consume_core_stub_gives(&before, &after, core, r), "the real sweep");

        let mut forward = before.clone();
        forward.tpb_exec_state[core] = [TpbEngState::Complete; ENGINES_PER_CORE];
        forward.exec_fatal_status[core][1] = !forward.exec_fatal_status[core][1];
        assert!(consume_core_stub_gives(&before, &forward, core, Err(NrtError::FAILURE)));
        assert!(!consume_core_stub_gives(&before, &forward, core, Ok(())), "flags changed on Ok");
        assert!(!consume_core_stub_gives(&before, &after, core, Err(NrtError::failed(NOT_A_DRAW))), "a status");
        let mut back = before.clone();
        back.tpb_exec_state[core][2] = TpbEngState::Complete;
        let back_after = {
            let mut a = back.clone();
            a.tpb_exec_state[core][2] = TpbEngState::StartPending;
            a
        };
        assert!(!consume_core_stub_gives(&back, &back_after, core, Ok(())), "a substate moved back");
        let other_core = other_substate(&before, 0, 0);
        assert!(!consume_core_stub_gives(&before, &other_core, core, Ok(())), "another core");
        let mut clock = before.clone();
        clock.core_start_ns ^= 1;
        assert!(!consume_core_stub_gives(&before, &clock, core, Ok(())), "outside the frame");
    }

    /// The tie of the rescale's stub to the real rescale can fail: it holds of
    /// a real rescale, and rejects a write outside the core's timestamps and
    /// duration.
    #[test]
    fn postprocess_core_tie_rejects_what_the_stub_cannot_give() {
        let core = 0;
        let mut any = Bytes::new(&[]);
        let mut before = any_request(&mut any, ExecState::WaitCore, Some(2));
        before.vcore_notif_ts[core] = [3_000_000; ts_slot::COUNT];
        before.vcore_notif_ts[core][ts_slot::end(0)] = 9_000_000;
        let nq = Notifications::new();
        let mut after = before.clone();
        let mut dev = HavocDev::new(any, 0, 32);
        after.postprocess_core(&mut dev, &nq, core);
        assert_eq!(after.out_info.tpb_duration_us[core], 6_000, "a real rescale: 3 ms to 9 ms");
        assert!(postprocess_core_stub_gives(&before, &after, core), "the real rescale");

        let mut other_core = after.clone();
        other_core.vcore_notif_ts[1][0] ^= 1;
        assert!(!postprocess_core_stub_gives(&before, &other_core, core), "another core's timestamps");
        let mut other_duration = after.clone();
        other_duration.out_info.tpb_duration_us[1] ^= 1;
        assert!(!postprocess_core_stub_gives(&before, &other_duration, core), "another core's duration");
        let mut recorded = after.clone();
        recorded.ts_recorded[core] ^= 1;
        assert!(!postprocess_core_stub_gives(&before, &recorded, core), "outside the frame");
    }

    /// The tie of the error sweep's stub to the real sweep can fail: it holds
    /// of a real sweep (a record of each class in turn), and rejects a status
    /// no draw gives; every class is the class of some record.
    #[test]
    fn consume_error_block_tie_rejects_what_the_stub_cannot_give() {
        for subtype in 0..=crate::nq::error::ERROR_SUBTYPE_COUNT as u16 {
            let mut nq = bound_notifications(&mut Bytes::new(&[]), 32);
            let mut record = ErrorEntry::new(subtype, 0, 0, 0).to_array();
            record[crate::nq::entry::field::TAG] |= crate::nq::entry::field::PHASE_BIT;
            // Every read succeeds and answers the record.
            let mut bytes = Vec::new();
            for _ in 0..4 {
                bytes.push(0u8);
                bytes.extend_from_slice(&record);
            }
            let mut dev = HavocDev::new(Bytes::new(&bytes), 0, 32);
            let (st, class) = consume_error_block(&mut dev, &mut nq, 0);
            let want = ErrorEntry::from_array(&record).class();
            assert_eq!(class, Some(want), "subtype {subtype}: the sweep read its record");
            assert!(consume_error_block_stub_gives(st, class), "subtype {subtype}: the real sweep");
            assert!(ErrorEntry::from_array(&record_of_class(want)).class() == want);
        }
        assert!(consume_error_block_stub_gives(NrtStatus::Success, None));
        assert!(!consume_error_block_stub_gives(NOT_A_DRAW, None), "a status");
        assert!(!consume_error_block_stub_gives(NOT_A_DRAW, Some(ErrorClass::Oob)), "a status, with a class");
    }

    /// The tie of FINALIZE's stub to the real FINALIZE can fail: it holds of a
    /// real FINALIZE, and rejects every outcome the stub cannot give; the
    /// precondition its stub asserts rejects a request outside the proved
    /// domain.
    #[test]
    fn finalize_tie_rejects_what_the_stub_cannot_give() {
        let mut any = Bytes::new(&[]);
        let mut before = any_request(&mut any, ExecState::WaitCore, Some(2));
        before.out_info.exec_rets[1] = NrtStatus::Timeout;
        let mut nq = bound_notifications(&mut any, 32);
        assert!(finalize_pre(&before));
        let mut after = before.clone();
        let mut dev = HavocDev::new(any, 0, 32);
        let fault = Some(NrtError::failed(NrtStatus::Timeout));
        let step = after.finalize(&mut dev, &mut nq, fault);
        assert_eq!(after.out_info.timeout_cause[1], Some(TimeoutCause::HangOnCompute), "a quiet device: a hang");
        assert!(finalize_stub_gives(&before, &after, fault, step), "the real FINALIZE");

        assert!(!finalize_stub_gives(&before, &after, None, step), "2 without a fault");
        assert!(!finalize_stub_gives(&before, &after, fault, Step::InFlight), "1 from FINALIZE");
        let substates = other_substate(&after, 0, 0);
        assert!(!finalize_stub_gives(&before, &substates, fault, step), "outside the frame");
        let mut hbm = after.clone();
        hbm.out_info.timeout_cause[1] = Some(TimeoutCause::HbmUe(NrtStatus::ExecHwErrHbmUe));
        assert!(finalize_stub_gives(&before, &hbm, fault, step), "another cause");
        hbm.out_info.timeout_cause[1] = Some(TimeoutCause::HbmUe(NOT_A_DRAW));
        assert!(!finalize_stub_gives(&before, &hbm, fault, step), "a cause's status");
        let mut rets = after.clone();
        rets.out_info.exec_rets[0] = NOT_A_DRAW;
        assert!(!finalize_stub_gives(&before, &rets, fault, step), "a core's status");
        let mut device_time = after.clone();
        device_time.ts_is_cpu = false;
        assert!(!finalize_stub_gives(&before, &device_time, fault, step), "timestamps left in device time");

        let mut done = before.clone();
        done.state = ExecState::Done;
        assert!(!finalize_pre(&done), "a DONE request");
        let mut cpu = before.clone();
        cpu.ts_is_cpu = true;
        assert!(!finalize_pre(&cpu), "timestamps already in CPU time");
        let mut due = before.clone();
        due.settle_due = true;
        assert!(!finalize_pre(&due), "a settle already due");

        // Settled after the notice, G-SETTLE: FINALIZE leaves the timestamps
        // and durations as they were, and the settle due.
        before.cfg.settle = Settle::AfterNotice;
        before.vcore_notif_ts[0][0] = 7;
        before.out_info.tpb_duration_us[0] = 3;
        let mut after = before.clone();
        let step = after.finalize(&mut dev, &mut nq, fault);
        assert!(after.settle_due && !after.ts_is_cpu, "deferred: DONE, settle due");
        assert_eq!((after.vcore_notif_ts[0][0], after.out_info.tpb_duration_us[0]), (7, 3), "deferred: untouched");
        assert!(finalize_stub_gives(&before, &after, fault, step), "the real deferred FINALIZE");
        let mut rescaled = after.clone();
        rescaled.vcore_notif_ts[0][0] = 8;
        assert!(!finalize_stub_gives(&before, &rescaled, fault, step), "deferred, a timestamp rescaled");
        let mut duration = after.clone();
        duration.out_info.tpb_duration_us[0] = 4;
        assert!(!finalize_stub_gives(&before, &duration, fault, step), "deferred, a duration set");
        let mut settled = after.clone();
        settled.settle_due = false;
        assert!(!finalize_stub_gives(&before, &settled, fault, step), "deferred, the settle not due");
        let mut cpu_time = after.clone();
        cpu_time.ts_is_cpu = true;
        assert!(!finalize_stub_gives(&before, &cpu_time, fault, step), "deferred, timestamps in CPU time");
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
