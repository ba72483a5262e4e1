//! The poll group (`exec::group`): one poller stepping many requests.
//!
//! What is proved here is the group's own bookkeeping, over any sequence of
//! inserts, passes and removals: a slot is handed out again only once the
//! request in it was reported done (or removed); the group never holds more
//! than its capacity, and refuses exactly when full or when the lane is busy;
//! every pass steps every request in flight, once or, in its first pass,
//! twice; and a request ends in the group exactly as the same request driven
//! alone on the same lane: after the same number of steps, with the same step
//! code, status and final request.
//!
//! The group is generic over what it holds ([`Harvest`]) and never looks inside
//! a request, so its bookkeeping is proved over a small request of its own,
//! [`Scripted`]: deterministic in its lane's device, whose clock tells it when
//! to finish and with which status, and which keeps every clock answer it read.
//! A request stepped on the wrong lane, twice in a pass, or after it finished
//! therefore ends differently than alone. The real `progress_one_step` is
//! proved on its own (`step.rs`, every call of every harvest); under `cargo
//! test` the same bodies run again with the real [`ExecRequest`] on the same
//! lane devices.

// Index loops over constant ranges, not iterator adaptors: kani unwinds them
// by their bound.
#![allow(clippy::needless_range_loop)]

use core::cell::Cell;

use crate::arch::{Arch, MAX_CORES};
use crate::exec::group::{write_back_heads, Completion, GroupError, Harvest, Lanes, PollGroup};
use crate::exec::ExecEvent;
use crate::exec::{ExecConfig, ExecDevice, ExecRequest, Step};
use crate::hal::{self, ErrorKind, ErrorType};
use crate::nq::{Notifications, INFER_STATUS_NQS};
use crate::proofs::{cover, Any};
use crate::status::NrtStatus;

use super::step::same;

/// Slots of the groups proved here, and their lanes (one more lane than slots,
/// so that a group can be full with a free lane).
const N: usize = 2;
const LANES: usize = 3;

/// Steps the script lets a request run before it finishes (its lane's clock
/// sets the finish bit from the `done_at`-th read on): 0 to 2, so a request
/// ends on the first, second or third pass.
const MAX_DONE_AT: u8 = 2;

/// The statuses a lane's request ends with: success, a NaN, a timeout and a
/// status this project does not name. The group never looks at a status;
/// these four, each ending clean (`Done`) or faulted (`Error`), tell one
/// request's end from another's.
const STATUSES: [NrtStatus; 4] =
    [NrtStatus::Success, NrtStatus::ExecCompletedWithNumErr, NrtStatus::Timeout, NrtStatus::Other(0x7FFF_0001)];

/// One lane's device: its clock answers `done bit | status | lane | clean bit |
/// reads`, so every answer names the lane and how many times it was read; its rings are
/// empty (every slot stale), its proxies healthy, its probes quiet.
#[derive(Clone)]
pub(crate) struct LaneDev {
    lane: u16,
    reads: Cell<u64>,
    done_at: u8,
    /// Index of its status in [`STATUSES`].
    code: u8,
    clean: bool,
}

impl LaneDev {
    fn new<A: Any>(any: &mut A, lane: u16) -> LaneDev {
        let done_at = any.u8() % (MAX_DONE_AT + 1);
        let code = any.u8() % STATUSES.len() as u8;
        LaneDev { lane, reads: Cell::new(0), done_at, code, clean: any.bool() }
    }
}

impl ErrorType for LaneDev {
    type Error = ErrorKind;
}

impl hal::NqRings for LaneDev {
    fn read_slot(&mut self, _: u8, _: u8, _: u32, out: &mut [u8; 16]) -> Result<(), ErrorKind> {
        *out = [0; 16];
        Ok(())
    }
    fn write_head(&mut self, _: u8, _: u8, _: u32) -> Result<(), ErrorKind> {
        Ok(())
    }
}

impl hal::IntcCause for LaneDev {
    fn read_cause(&mut self, _: u8, _: u32, _: u32) -> Result<u32, ErrorKind> {
        Ok(0)
    }
}

impl hal::Clock for LaneDev {
    fn now_ns(&self) -> u64 {
        let k = self.reads.get();
        self.reads.set(k.wrapping_add(1));
        let done = u64::from(k >= u64::from(self.done_at)) << 63;
        done | u64::from(self.code) << 32 | u64::from(self.lane) << 16 | u64::from(self.clean) << 15 | (k & 0x7FFF)
    }
}

impl hal::CollectivesProxy for LaneDev {}

impl hal::FaultProbe for LaneDev {}

impl hal::EventSink<ExecEvent> for LaneDev {
    fn event(&mut self, _: &ExecEvent) {}
}

impl crate::counters::CounterSink for LaneDev {}

impl hal::TensorNotify for LaneDev {}

/// A request of the group proofs: what the group is proved over.
pub(crate) trait Proved: Harvest<Config: Clone> + Clone {
    /// The configuration of every request here.
    fn cfg() -> Self::Config;
    /// Any configuration of a request here.
    fn cfg_any<A: Any>(_: &mut A) -> Self::Config {
        Self::cfg()
    }
    /// `true` when a request of `cfg` has a first step that only starts it,
    /// stated here apart from [`Harvest::unstarted`].
    fn starts(cfg: &Self::Config) -> bool;
    /// `true` when two requests are in the same state.
    fn same_as(&self, other: &Self) -> bool;
}

/// The real request, one core (the group does not look inside a request).
impl Proved for ExecRequest {
    fn cfg() -> ExecConfig {
        ExecConfig::new(Arch::Sunda, 1, 1)
    }
    /// INIT only starts it.
    fn starts(_: &ExecConfig) -> bool {
        true
    }
    fn same_as(&self, other: &Self) -> bool {
        same(self, other)
    }
}

/// The scripted request: each step reads its lane's clock once and folds the
/// answer (which names the lane and how often it was read) into `seen`; from
/// the first answer with the finish bit set it is DONE with the clock's status
/// (`Done` when the clean bit is set, else `Error`), and then returns that
/// result and changes nothing (the one-step contract). Its state is a few words, so the solver carries two of them
/// through a pass where it could not carry two whole [`ExecRequest`]s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Scripted {
    seen: u64,
    steps: u32,
    result: Option<Step>,
    /// A first step that only starts it is still to come.
    start: bool,
}

/// Its configuration: whether its first step only starts it, as INIT does.
impl Harvest for Scripted {
    type Config = bool;
    fn start(start: bool) -> Scripted {
        Scripted { seen: 0, steps: 0, result: None, start }
    }
    fn unstarted(&self) -> bool {
        self.start
    }
    fn step<D: ExecDevice + ?Sized>(&mut self, dev: &mut D, _nq: &mut Notifications) -> Step {
        if let Some(done) = self.result {
            return done;
        }
        if self.start {
            self.start = false;
            self.steps = self.steps.wrapping_add(1);
            return Step::InFlight;
        }
        let t = dev.now_ns();
        self.seen = self.seen.rotate_left(17) ^ t;
        self.steps = self.steps.wrapping_add(1);
        if t >> 63 == 0 {
            return Step::InFlight;
        }
        let status = STATUSES[(t >> 32) as usize % STATUSES.len()];
        let clean = t & 1 << 15 != 0;
        let step = if clean { Step::Done(status) } else { Step::failed(status) };
        self.result = Some(step);
        step
    }
}

impl Proved for Scripted {
    fn cfg() -> bool {
        false
    }
    fn cfg_any<A: Any>(any: &mut A) -> bool {
        any.bool()
    }
    fn starts(cfg: &bool) -> bool {
        *cfg
    }
    fn same_as(&self, other: &Self) -> bool {
        self == other
    }
}

/// The lanes of the group proofs: a device each, and one notification state
/// lent with every lane. The devices' rings are empty (every slot stale), so no
/// request ever consumes a record and a lane's notification state is only
/// read; one for all keeps the solver's lanes a few words each. `scratch` is
/// the notification state of a request driven alone.
pub(crate) struct ProofLanes<const K: usize> {
    devs: [LaneDev; K],
    nq: Notifications,
    scratch: Notifications,
}

impl<const K: usize> ProofLanes<K> {
    fn new<A: Any>(any: &mut A) -> ProofLanes<K> {
        let devs = core::array::from_fn(|lane| LaneDev::new(any, lane as u16));
        ProofLanes { devs, nq: Notifications::new(), scratch: Notifications::new() }
    }

    /// The same request driven alone on a copy of lane `lane`: the steps it
    /// took, its step code and status, and the final request; `None` when it
    /// did not finish within [`ALONE_STEPS`] or there is no such lane.
    fn alone<R: Proved>(&mut self, lane: u16, cfg: R::Config) -> Option<(u32, Step, NrtStatus, R)> {
        let mut dev = self.devs.get(usize::from(lane))?.clone();
        // Under kani the scripted request never reads it: no copy of the
        // 64-record subscriber queue (a loop bounded only by the unwind limit).
        if !cfg!(kani) {
            self.scratch = self.nq.clone();
        }
        let mut req = R::start(cfg);
        for k in 0..ALONE_STEPS {
            let step = req.step(&mut dev, &mut self.scratch);
            if let Some(status) = step.status() {
                return Some((k as u32 + 1, step, status, req));
            }
        }
        None
    }
}

impl<const K: usize> Lanes for ProofLanes<K> {
    type Dev = LaneDev;
    fn lane(&mut self, lane: u16) -> Option<(&mut LaneDev, &mut Notifications)> {
        // Each device by a constant index, so the solver knows which object a
        // lane's device is; a plain `get_mut(lane)` made the solver about twice
        // as slow.
        for i in 0..K {
            if usize::from(lane) == i {
                return self.devs.get_mut(i).map(|d| (d, &mut self.nq));
            }
        }
        None
    }
}

/// Most steps a request is driven alone (the script finishes within
/// `MAX_DONE_AT + 2`, its start step included; the real step under test may take longer, and is then
/// compared only while it has not finished).
const ALONE_STEPS: usize = if cfg!(kani) { MAX_DONE_AT as usize + 2 } else { 16 };

/// A slot of the model: the request's lane and token, how many steps the
/// group made on it, whether its first step only starts it, and how it ends alone.
#[derive(Clone)]
struct Held<R> {
    lane: u16,
    token: u64,
    stepped: u32,
    starts: bool,
    alone: Option<(u32, Step, NrtStatus, R)>,
}

/// `true` when the model holds a request on `lane`.
fn holds_lane<R>(held: &[Option<Held<R>>; N], lane: u16) -> bool {
    let mut any = false;
    for s in 0..N {
        any |= held[s].as_ref().is_some_and(|h| h.lane == lane);
    }
    any
}

/// The group and the model agree on what is held: the count, each slot, each lane.
fn agrees<R: Proved>(group: &PollGroup<N, R>, held: &[Option<Held<R>>; N]) -> bool {
    let mut count = 0;
    let mut ok = true;
    for s in 0..N {
        count += usize::from(held[s].is_some());
        ok &= group.request(s).is_some() == held[s].is_some();
    }
    for lane in 0..LANES as u16 {
        ok &= group.lane_busy(lane) == holds_lane(held, lane);
    }
    ok && group.in_flight() == count && count <= N && group.capacity() == N
}

/// Any sequence of `ops` inserts (on any lane), passes and removals (of any
/// slot) on a group of 2 slots over 3 lanes: an insert is refused with
/// `LaneBusy` exactly when its lane has a request in flight, else with `Full`
/// exactly when every slot is held, and otherwise gets a slot that was free
/// (its last request reported done, or removed); a pass steps every request
/// in flight once and reports each that finished once, from its own slot, with
/// its own lane and token, and frees that slot; a removal gives back exactly
/// what the slot held; in-flight count, slots and busy lanes always agree with
/// the model, within capacity.
pub(crate) fn group_reuses_a_slot_only_after_its_request_is_done<R: Proved, A: Any>(mut any: A, ops: usize) {
    let mut lanes = ProofLanes::<LANES>::new(&mut any);
    let mut group = PollGroup::<N, R>::new();
    let mut held: [Option<Held<R>>; N] = [None, None];
    let (mut reused, mut full, mut busy, mut removed) = (false, false, false, false);
    let mut ever: [bool; N] = [false; N];
    for op in 0..ops {
        match any.u8() % 3 {
            0 => {
                let lane = (any.u8() % LANES as u8) as u16;
                let lane_busy = holds_lane(&held, lane);
                let all_held = held[0].is_some() && held[1].is_some();
                match group.insert(lane, R::cfg(), op as u64) {
                    Err(GroupError::LaneBusy) => {
                        assert!(lane_busy, "LaneBusy for a free lane");
                        busy = true;
                    }
                    Err(GroupError::Full) => {
                        assert!(!lane_busy && all_held, "Full with a free slot");
                        full = true;
                    }
                    Ok(s) => {
                        assert!(!lane_busy && !all_held, "a request past the lane rule or the capacity");
                        assert!(s < N && held[s].is_none(), "a slot handed out while its request is in flight");
                        reused |= ever[s];
                        ever[s] = true;
                        held[s] = Some(Held { lane, token: op as u64, stepped: 0, starts: false, alone: None });
                    }
                }
            }
            1 => {
                let in_flight = group.in_flight();
                let mut done: [Option<Completion>; N] = [None; N];
                let mut reports = 0usize;
                let pass = group.poll(&mut lanes, |c, _| {
                    if let Some(d) = done.get_mut(reports) {
                        *d = Some(*c);
                    }
                    reports += 1;
                });
                assert_eq!(pass.stepped, in_flight, "a pass steps every request in flight once");
                assert_eq!(pass.completed, reports, "each finished request is reported once");
                for d in 0..N {
                    let Some(c) = &done[d] else { continue };
                    let h = held.get(c.slot).and_then(|h| h.as_ref());
                    assert!(h.is_some_and(|h| h.lane == c.lane && h.token == c.token), "reported from another slot");
                    assert!(matches!(c.step, Step::Done(_) | Step::Error(_)), "reported while in flight");
                    held[c.slot] = None;
                }
            }
            _ => {
                let s = usize::from(any.u8()) % N;
                let want = held[s].as_ref().map(|h| (h.lane, h.token));
                assert_eq!(group.remove(s), want, "a removal gives back what the slot held");
                removed |= want.is_some();
                held[s] = None;
            }
        }
        assert!(agrees(&group, &held), "the group and its model disagree");
    }
    cover!(reused, "group: a slot reused after its request finished or left");
    cover!(full, "group: a full group refuses");
    cover!(busy, "group: a busy lane refuses");
    cover!(removed, "group: a request removed in flight");
}

/// Any sequence of `ops` inserts (on any lane) and passes on a group of 2 slots
/// over 3 lanes, each lane's device finishing its request after any number of
/// steps with any status: a request ends in the group exactly as the same
/// request driven alone from the same lane state: after as many steps (one per
/// pass, two in the first pass of an unstarted request), with the same step
/// code and status, and the same final request; and while it has not finished
/// alone it is not reported in the group.
pub(crate) fn group_ends_each_request_as_alone<R: Proved, A: Any>(mut any: A, ops: usize) {
    let mut lanes = ProofLanes::<LANES>::new(&mut any);
    let mut group = PollGroup::<N, R>::new();
    let mut held: [Option<Held<R>>; N] = [None, None];
    let (mut ended, mut two, mut failed, mut started) = (false, false, false, false);
    for op in 0..ops {
        if any.bool() {
            let lane = any.u8() % LANES as u8;
            let cfg = R::cfg_any(&mut any);
            let starts = R::starts(&cfg);
            let expect = lanes.alone::<R>(u16::from(lane), cfg.clone());
            if let Ok(s) = group.insert(u16::from(lane), cfg, op as u64) {
                held[s] = Some(Held { lane: u16::from(lane), token: op as u64, stepped: 0, starts, alone: expect });
            }
            continue;
        }
        let mut got: [Option<(Completion, R)>; N] = [None, None];
        let mut reports = 0usize;
        group.poll(&mut lanes, |c, r| {
            if let Some(g) = got.get_mut(reports) {
                *g = Some((*c, r.clone()));
            }
            reports += 1;
        });
        for s in 0..N {
            if let Some(h) = &mut held[s] {
                // A first step that only starts a request never ends it: its
                // first pass steps it twice.
                let first = h.starts && h.stepped == 0;
                started |= first;
                h.stepped += if first { 2 } else { 1 };
            }
        }
        two |= reports == 2;
        for g in 0..N {
            let Some((c, r)) = &got[g] else { continue };
            let Some(h) = held[c.slot].take() else { panic!("a completion from a free slot") };
            if let Some((steps, step, status, req)) = &h.alone {
                assert_eq!(h.stepped, *steps, "a request ended after another number of steps than alone");
                assert!(c.step == *step && c.status() == *status, "a request ended otherwise than alone");
                assert!(r.same_as(req), "a request's final state differs from alone");
                ended = true;
                failed |= matches!(c.step, Step::Error(_));
            }
        }
        for s in 0..N {
            if let Some(Held { alone: Some((steps, ..)), stepped, .. }) = &held[s] {
                assert!(*stepped < *steps, "a request finished alone by now is still in the group");
            }
        }
    }
    cover!(ended, "alone: a request ends as it does alone");
    cover!(failed, "alone: one ends with an error status");
    cover!(two, "alone: two requests end in one pass");
    cover!(started, "alone: a first pass steps a request twice");
}

/// A lane's notification state with some INFER_STATUS rings read and not
/// handed back, for [`write_back_heads_hands_back_exactly_the_reads`]: the
/// device of that proof answers every read with a fresh record.
struct FreshDev<A: Any> {
    any: A,
    heads: [[Option<u32>; crate::nq::NQ_PER_CORE]; MAX_CORES],
    failed: [[bool; crate::nq::NQ_PER_CORE]; MAX_CORES],
    reported: [[bool; crate::nq::NQ_PER_CORE]; MAX_CORES],
}

impl<A: Any> ErrorType for FreshDev<A> {
    type Error = ErrorKind;
}

impl<A: Any> hal::NqRings for FreshDev<A> {
    fn read_slot(&mut self, _: u8, _: u8, _: u32, out: &mut [u8; 16]) -> Result<(), ErrorKind> {
        // Lap 0's phase: fresh.
        *out = [0; 16];
        out[crate::nq::entry::field::TAG] = crate::nq::entry::field::PHASE_BIT;
        Ok(())
    }
    fn write_head(&mut self, core: u8, nq: u8, head: u32) -> Result<(), ErrorKind> {
        let (c, q) = (usize::from(core), usize::from(nq));
        assert!(c < MAX_CORES && q < crate::nq::NQ_PER_CORE, "HEAD of a ring that does not exist");
        assert!(self.heads[c][q].is_none(), "HEAD written twice");
        self.heads[c][q] = Some(head);
        if self.any.u8() >= 0xC0 {
            self.failed[c][q] = true;
            return Err(ErrorKind::Io);
        }
        Ok(())
    }
}

impl<A: Any> hal::IntcCause for FreshDev<A> {
    fn read_cause(&mut self, _: u8, _: u32, _: u32) -> Result<u32, ErrorKind> {
        Ok(0)
    }
}

impl<A: Any> hal::Clock for FreshDev<A> {
    fn now_ns(&self) -> u64 {
        0
    }
}

impl<A: Any> hal::CollectivesProxy for FreshDev<A> {}

impl<A: Any> hal::FaultProbe for FreshDev<A> {}

impl<A: Any> hal::EventSink<ExecEvent> for FreshDev<A> {
    fn event(&mut self, e: &ExecEvent) {
        if let ExecEvent::HeadWriteFailed { core, nq, .. } = e {
            self.reported[usize::from(*core) % MAX_CORES][usize::from(*nq) % crate::nq::NQ_PER_CORE] = true;
        }
    }
}

impl<A: Any> crate::counters::CounterSink for FreshDev<A> {}

impl<A: Any> hal::TensorNotify for FreshDev<A> {}

/// `write_back_heads` (batched HEAD write-back at a request's completion,
/// G-HEAD-BATCH, G-HEAD-FAIL): for any core count (0 to 3) and any INFER_STATUS
/// rings of either core read or not (one read each, 2-entry rings), it writes
/// HEAD exactly once for each ring of the cores asked for with reads not handed
/// back, at the ring's read pointer, and for no other ring; a ring whose write
/// succeeded then has nothing unreported, one whose write failed keeps its reads
/// for the next batch and is reported (`HeadWriteFailed` with its core and ring).
pub(crate) fn write_back_heads_hands_back_exactly_the_reads<A: Any>(mut any: A) {
    let mut nq = Notifications::new();
    let cores = usize::from(any.u8() % 4);
    let mut dev = FreshDev {
        any,
        heads: [[None; crate::nq::NQ_PER_CORE]; MAX_CORES],
        failed: [[false; crate::nq::NQ_PER_CORE]; MAX_CORES],
        reported: [[false; crate::nq::NQ_PER_CORE]; MAX_CORES],
    };
    let mut read = [[false; crate::nq::NQ_PER_CORE]; MAX_CORES];
    for c in 0..MAX_CORES {
        assert!(nq.bind_core(c as u8, 32).is_ok());
        for k in 0..INFER_STATUS_NQS.len() {
            let id = INFER_STATUS_NQS[k];
            if dev.any.bool() {
                let mut buf = [0u8; 16];
                let ring = nq.ring_mut(c as u8, id);
                let fresh = ring.is_some_and(|r| matches!(r.poll(&mut dev, c as u8, id, &mut buf), Ok(true)));
                assert!(fresh, "a fresh slot of a bound ring is read");
                read[c][usize::from(id)] = true;
            }
        }
    }
    write_back_heads(&mut dev, &mut nq, cores);
    let (mut wrote, mut failed) = (false, false);
    for c in 0..MAX_CORES {
        for id in 0..crate::nq::NQ_PER_CORE {
            let due = c < cores && read[c][id];
            let head = dev.heads[c][id];
            assert_eq!(head.is_some(), due, "HEAD written for a ring with nothing to hand back, or not for one with");
            let unacked = nq.ring(c as u8, id as u8).map(|r| r.unacked()).unwrap_or(0);
            if due {
                assert_eq!(head, Some(16), "HEAD is the ring's read pointer");
                let f = dev.failed[c][id];
                assert_eq!(unacked, u32::from(f), "a written HEAD leaves nothing unreported, a failed one keeps it");
                assert_eq!(dev.reported[c][id], f, "a failed HEAD write is reported, and only then");
                wrote |= !f;
                failed |= f;
            } else {
                assert_eq!(unacked, u32::from(read[c][id]), "a ring not asked for keeps its reads");
                assert!(!dev.reported[c][id]);
            }
        }
    }
    cover!(wrote && cores == 2, "heads: both cores handed back");
    cover!(failed, "heads: a failed HEAD write kept for the next batch");
    cover!(cores < 2 && read[1].iter().any(|r| *r), "heads: a core not asked for keeps its reads");
}

/// A request whose lane does not exist finishes on its first pass with
/// `Step::Error` and `NRT_INVALID_HANDLE`, G-GROUP-LANE, and the others in the
/// same pass are stepped as usual.
pub(crate) fn group_missing_lane_fails_the_request<R: Proved, A: Any>(mut any: A) {
    let mut lanes = ProofLanes::<1>::new(&mut any);
    let mut group = PollGroup::<N, R>::new();
    let missing = 1 + u16::from(any.u8());
    let first = any.bool();
    let (a, b) = if first { (missing, 0) } else { (0, missing) };
    assert!(group.insert(a, R::cfg(), 1).is_ok() && group.insert(b, R::cfg(), 2).is_ok());
    let mut got: Option<Completion> = None;
    let mut others = 0;
    let pass = group.poll(&mut lanes, |c, _| {
        if c.lane == missing {
            got = Some(*c);
        } else {
            others += 1;
        }
    });
    assert_eq!(pass.stepped, 2, "both requests stepped");
    let c = got.expect("the request on a missing lane finishes at once");
    let invalid = NrtStatus::InvalidHandle;
    assert!(c.step == Step::failed(invalid) && c.status() == invalid, "it fails with NRT_INVALID_HANDLE");
    assert_eq!(pass.completed, 1 + others);
    assert!(!group.lane_busy(missing) && group.in_flight() == 1 - others);
    cover!(first, "lane: the missing lane first in the group");
    cover!(!first, "lane: the missing lane second");
}

// The unwind bounds, each the longest loop of its harness plus one; kani's
// unwinding assertions fail a proof whose loop needed more. The slot and lane
// loops run over constant ranges, which kani unwinds by their bound; a pass's
// loop runs at most 2 * N = 4 times; a request driven alone at most
// `ALONE_STEPS` = 3. So 5 covers every loop of the group harnesses. Each makes
// 3 operations, the fewest that reach every cover; a fourth put the kani stage
// over its time goal. Longer sequences, on the real request too, run as the
// tests below.

#[cfg(kani)]
#[kani::proof]
#[kani::unwind(10)]
fn prove_write_back_heads_hands_back_exactly_the_reads() {
    write_back_heads_hands_back_exactly_the_reads(crate::proofs::KaniAny);
}

#[cfg(kani)]
#[kani::proof]
#[kani::unwind(5)]
fn prove_group_reuses_a_slot_only_after_its_request_is_done() {
    group_reuses_a_slot_only_after_its_request_is_done::<Scripted, _>(crate::proofs::KaniAny, 3);
}

#[cfg(kani)]
#[kani::proof]
#[kani::unwind(5)]
fn prove_group_ends_each_request_as_alone() {
    group_ends_each_request_as_alone::<Scripted, _>(crate::proofs::KaniAny, 3);
}

#[cfg(kani)]
#[kani::proof]
#[kani::unwind(5)]
fn prove_group_missing_lane_fails_the_request() {
    group_missing_lane_fails_the_request::<Scripted, _>(crate::proofs::KaniAny);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proofs::{assert_covered, cases, reset_covers, Bytes};
    use proptest::prelude::*;

    #[test]
    fn group_reuses_a_slot_only_after_its_request_is_done_tests() {
        reset_covers();
        proptest!(ProptestConfig::with_cases(cases(1024)),
        |(bytes in proptest::collection::vec(any::<u8>(), 0..64), ops in 0usize..12)| {
            group_reuses_a_slot_only_after_its_request_is_done::<ExecRequest, _>(Bytes::new(&bytes), ops);
            group_reuses_a_slot_only_after_its_request_is_done::<Scripted, _>(Bytes::new(&bytes), ops);
        });
        assert_covered(4);
    }

    #[test]
    fn group_ends_each_request_as_alone_tests() {
        reset_covers();
        proptest!(ProptestConfig::with_cases(cases(512)),
        |(bytes in proptest::collection::vec(any::<u8>(), 0..64), ops in 0usize..12)| {
            group_ends_each_request_as_alone::<ExecRequest, _>(Bytes::new(&bytes), ops);
            group_ends_each_request_as_alone::<Scripted, _>(Bytes::new(&bytes), ops);
        });
        assert_covered(4);
    }

    #[test]
    fn write_back_heads_hands_back_exactly_the_reads_tests() {
        reset_covers();
        proptest!(ProptestConfig::with_cases(cases(1024)),
        |(bytes in proptest::collection::vec(any::<u8>(), 0..32))| {
            write_back_heads_hands_back_exactly_the_reads(Bytes::new(&bytes));
        });
        assert_covered(3);
    }

    #[test]
    fn group_missing_lane_fails_the_request_tests() {
        reset_covers();
        proptest!(ProptestConfig::with_cases(cases(256)),
        |(bytes in proptest::collection::vec(any::<u8>(), 0..16))| {
            group_missing_lane_fails_the_request::<ExecRequest, _>(Bytes::new(&bytes));
            group_missing_lane_fails_the_request::<Scripted, _>(Bytes::new(&bytes));
        });
        assert_covered(2);
    }
}
