//! The poll group: one poller for many in-flight requests.
//!
//! [`progress_one_step`] never blocks, so one thread can hold many requests
//! and step each in turn. A [`PollGroup`] has a fixed capacity `N`, allocates
//! nothing, and keeps the one-step contract per request: each pass steps
//! every in-flight request once (its first pass twice, see below), a
//! request that reaches DONE is reported once and leaves, and its slot is reused.
//!
//! The group owns the requests' harvest state; the platform owns the devices.
//! A request names its *lane*, one logical core's device and
//! [`Notifications`], lent to each pass through [`Lanes`]. A lane harvests
//! one request at a time, so a second is refused, G-GROUP-LANE.
//!
//! # Due-first passes
//!
//! [`poll_due`](PollGroup::poll_due) steps only the requests that are *due*
//! at the caller's monotonic clock. Per lane the group keeps an [`Estimate`]
//! of the kickoff-to-END time, an integer moving mean and deviation with
//! outliers capped; only [`Step::Done`] teaches, with the midpoint between the
//! request's last step in flight and the step that found it done. A request is
//! due from `kickoff + mean - 3 * deviation`, then every
//! [`Schedule::recheck_ns`]; with no estimate, always. The first pass steps a
//! request twice, INIT and its first barrier check, so that once the barrier
//! is clear its next step looks at its rings. Whatever the estimate, every
//! request is stepped at least once per [`Schedule::sweep_bound_ns`], so a
//! fault or timeout is seen within that bound plus one pass.
//!
//! A due-first pass changes only *when* a request is stepped, never what a
//! step does: each request ends exactly as the same request driven alone.
//! [`earliest_due_ns`](PollGroup::earliest_due_ns) tells a poller how long it may sleep.
//!
//! [`progress_one_step`]: ExecRequest::progress_one_step

use super::{ExecConfig, ExecDevice, ExecEvent, ExecRequest, Step};
use crate::hal::Error as _;
use crate::nq::Notifications;
use crate::status::NrtStatus;
use crate::trace::emit;

/// The lanes a group harvests, lent to one pass: lane `i` is one logical
/// core's device and notification state.
///
/// # For platform authors
///
/// Return the same state for a lane on every pass while a request on it is in
/// flight; `None` for a lane that does not exist, which fails its request.
pub trait Lanes {
    /// The device type of every lane.
    type Dev: ExecDevice + ?Sized;
    /// Lane `lane`, or `None` when there is no such lane.
    fn lane(&mut self, lane: u16) -> Option<(&mut Self::Dev, &mut Notifications)>;
}

impl<D: ExecDevice> Lanes for [(D, Notifications)] {
    type Dev = D;
    fn lane(&mut self, lane: u16) -> Option<(&mut D, &mut Notifications)> {
        self.get_mut(usize::from(lane)).map(|(d, n)| (d, n))
    }
}

impl<L: Lanes + ?Sized> Lanes for &mut L {
    type Dev = L::Dev;
    fn lane(&mut self, lane: u16) -> Option<(&mut L::Dev, &mut Notifications)> {
        L::lane(self, lane)
    }
}

/// What a poll group holds: a request with the one-step contract.
///
/// [`ExecRequest`] is the default. The group's bookkeeping never looks inside
/// a request, so kani proves it over a small scripted one in `exec/proofs/group.rs`.
///
/// # For implementers
///
/// `step` is `progress_one_step`: non-blocking, and terminal once it returns
/// [`Step::Done`] or [`Step::Error`]: every later call returns the same.
pub trait Harvest {
    /// What [`PollGroup::insert`] builds a request from.
    type Config;
    /// A request in INIT, `exec_request_init_state`.
    fn start(cfg: Self::Config) -> Self;
    /// One non-blocking step on its lane. Under batched HEAD write-back the
    /// finishing step also hands the rings back, unless [`Harvest::settle`] is due.
    fn step<D: ExecDevice + ?Sized>(&mut self, dev: &mut D, nq: &mut Notifications) -> Step;

    /// Whether the next step only starts the request, so that a pass takes
    /// the step after it at once. Default: never.
    fn unstarted(&self) -> bool {
        false
    }

    /// Whether the finished request left work for [`Harvest::settle`]. Default: never.
    fn settle_due(&self) -> bool {
        false
    }

    /// The work left for after the group reported the finished request, on
    /// its lane; called only when [`Harvest::settle_due`]. Default: nothing.
    fn settle<D: ExecDevice + ?Sized>(&mut self, _dev: &mut D, _nq: &mut Notifications) {}
}

/// `progress_one_step`; under batched HEAD write-back the finishing step
/// hands the rings back before the group reports it, G-HEAD-BATCH.
impl Harvest for ExecRequest {
    type Config = ExecConfig;
    fn start(cfg: ExecConfig) -> ExecRequest {
        ExecRequest::new(cfg)
    }
    fn step<D: ExecDevice + ?Sized>(&mut self, dev: &mut D, nq: &mut Notifications) -> Step {
        let step = self.progress_one_step(dev, nq);
        // Settled after the notice, the settle hands the rings back, G-SETTLE.
        if step != Step::InFlight && nq.head_batching() && !self.settle_due() {
            write_back_heads(dev, nq, self.tpb_count());
        }
        step
    }
    fn unstarted(&self) -> bool {
        self.state() == super::ExecState::Init
    }
    fn settle_due(&self) -> bool {
        ExecRequest::settle_due(self)
    }
    fn settle<D: ExecDevice + ?Sized>(&mut self, dev: &mut D, nq: &mut Notifications) {
        ExecRequest::settle(self, dev, nq);
    }
}

/// Why [`PollGroup::insert`] refused a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum GroupError {
    /// Every slot holds an in-flight request.
    Full,
    /// The lane already has a request in flight, G-GROUP-LANE.
    LaneBusy,
}

impl GroupError {
    /// A short reason, for messages.
    pub const fn reason(self) -> &'static str {
        match self {
            GroupError::Full => "every slot of the poll group holds an in-flight request",
            GroupError::LaneBusy => "the lane already has a request in flight",
        }
    }
}

/// `PollGroup::insert: <reason>`: the call that refused and why.
impl core::fmt::Display for GroupError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "PollGroup::insert: {}", self.reason())
    }
}

impl core::error::Error for GroupError {}

/// A request that finished during a pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    /// The slot it held, free again once the pass returns.
    pub slot: usize,
    /// The lane it harvested.
    pub lane: u16,
    /// The caller's token given at [`PollGroup::insert`].
    pub token: u64,
    /// How it ended, with its status.
    pub step: Step,
}

impl Completion {
    /// The request's status.
    pub const fn status(&self) -> NrtStatus {
        match self.step.status() {
            Some(s) => s,
            // A completion is never in flight.
            None => NrtStatus::Success,
        }
    }
}

/// What one pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pass {
    /// Requests stepped, each once, or twice when just started.
    pub stepped: usize,
    /// Of those, requests that finished and left the group.
    pub completed: usize,
    /// Requests in flight a due-first pass left alone as not yet due.
    pub skipped: usize,
}

/// Every request in flight is stepped at least this often by due-first passes, ns.
pub const DEFAULT_SWEEP_BOUND_NS: u64 = 1_000_000;

/// Once due, a request still in flight is stepped again this often, ns.
pub const DEFAULT_RECHECK_NS: u64 = 20_000;

/// A request is due this many spreads before its lane's mean: two would be
/// the earliest end of a uniform spread exactly, so the estimate's own noise
/// would make early ends wait for it.
pub const DUE_SPREADS: u64 = 3;

/// Once due, a request's recheck widens to its lane's spread / this when that
/// is longer than [`Schedule::recheck_ns`]: only a jitter well past the notice
/// it costs widens it.
pub const RECHECK_SHARE: u64 = 32;

/// A sample moves a lane's estimate as if it lay at most this many deviations
/// from the mean.
pub const OUTLIER_SPREADS: u64 = 4;

/// The least spread the outlier cap allows, ns: a lane of equal samples still
/// learns a new duration.
pub const MIN_SPREAD_NS: u64 = 1_000;

/// When due-first passes step a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Schedule {
    /// Every request in flight is stepped at least this often, ns.
    pub sweep_bound_ns: u64,
    /// A due request in flight is stepped again after this long, ns, or its
    /// lane's deviation over [`RECHECK_SHARE`] when longer; 0 steps it every pass.
    pub recheck_ns: u64,
    /// A pass also steps the requests due within this long after its clock, ns,
    /// so a poller that wakes a little early still takes them.
    pub ahead_ns: u64,
}

impl Default for Schedule {
    fn default() -> Self {
        Schedule { sweep_bound_ns: DEFAULT_SWEEP_BOUND_NS, recheck_ns: DEFAULT_RECHECK_NS, ahead_ns: 0 }
    }
}

/// A lane's moving estimate of its requests' kickoff-to-END time, in ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Estimate {
    /// The weighted mean.
    pub mean_ns: u64,
    /// The weighted mean absolute deviation from it.
    pub spread_ns: u64,
    /// Samples learnt, saturating.
    pub samples: u32,
}

impl Estimate {
    /// Learn one kickoff-to-END time: the first sets the mean and an eighth of
    /// it as the spread; each later one moves both by an eighth of its
    /// distance from the mean, capped at [`OUTLIER_SPREADS`] spreads.
    pub fn learn(&mut self, sample_ns: u64) {
        if self.samples == 0 {
            self.mean_ns = sample_ns;
            self.spread_ns = sample_ns / 8;
        } else {
            let cap = self.spread_ns.saturating_mul(OUTLIER_SPREADS).max(MIN_SPREAD_NS);
            let dist = sample_ns.abs_diff(self.mean_ns).min(cap);
            if sample_ns >= self.mean_ns {
                self.mean_ns = self.mean_ns.saturating_add(dist / 8);
            } else {
                self.mean_ns -= dist / 8;
            }
            self.spread_ns = self.spread_ns - self.spread_ns / 8 + dist / 8;
        }
        self.samples = self.samples.saturating_add(1);
    }

    /// How long after its kickoff a request of this lane becomes due: the
    /// mean less [`DUE_SPREADS`] spreads.
    pub const fn due_after_ns(&self) -> u64 {
        self.mean_ns.saturating_sub(self.spread_ns.saturating_mul(DUE_SPREADS))
    }
}

/// A lane's estimate, kept with the slot that last held the lane.
#[derive(Clone, Copy, Debug, Default)]
struct History {
    lane: Option<u16>,
    est: Estimate,
}

#[derive(Clone, Debug)]
struct Slot<R> {
    req: R,
    lane: u16,
    token: u64,
    /// The clock of the first due-first pass that saw the request.
    kick_ns: Option<u64>,
    /// The clock of the latest due-first step that found it in flight; a
    /// plain pass leaves it.
    seen_ns: u64,
    /// When a due-first pass next steps it; 0 the next pass.
    next_ns: u64,
}

/// Up to `N` in-flight requests, stepped in turn by one poller.
#[derive(Clone, Debug)]
pub struct PollGroup<const N: usize, R: Harvest = ExecRequest> {
    slots: [Option<Slot<R>>; N],
    /// `hist[i]`: the estimate of the lane slot `i` last held.
    hist: [History; N],
    schedule: Schedule,
    /// Indices of the occupied slots, in `live[..in_flight]`.
    live: [usize; N],
    in_flight: usize,
}

impl<const N: usize, R: Harvest> Default for PollGroup<N, R> {
    fn default() -> Self {
        PollGroup::new()
    }
}

impl<const N: usize, R: Harvest> PollGroup<N, R> {
    /// An empty group.
    pub fn new() -> PollGroup<N, R> {
        PollGroup {
            slots: [const { None }; N],
            hist: [History::default(); N],
            schedule: Schedule::default(),
            live: [0; N],
            in_flight: 0,
        }
    }

    /// When due-first passes step a request.
    pub const fn schedule(&self) -> Schedule {
        self.schedule
    }

    /// Set when due-first passes step a request.
    pub fn set_schedule(&mut self, schedule: Schedule) {
        self.schedule = schedule;
    }

    /// The estimate of `lane`, if the group has learnt one and keeps it.
    pub fn estimate(&self, lane: u16) -> Option<Estimate> {
        for i in 0..N {
            if let Some(h) = self.hist.get(i).filter(|h| h.lane == Some(lane) && h.est.samples > 0) {
                return Some(h.est);
            }
        }
        None
    }

    /// Slots in all.
    pub const fn capacity(&self) -> usize {
        N
    }

    /// Requests in flight.
    pub const fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// `true` when nothing is in flight.
    pub const fn is_empty(&self) -> bool {
        self.in_flight == 0
    }

    /// `true` when `lane` has a request in flight.
    pub fn lane_busy(&self, lane: u16) -> bool {
        for i in 0..N {
            if self.live_slot(i).is_some_and(|s| s.lane == lane) {
                return true;
            }
        }
        false
    }

    /// The in-flight request in `slot`, if any.
    pub fn request(&self, slot: usize) -> Option<&R> {
        self.slots.get(slot)?.as_ref().map(|s| &s.req)
    }

    /// The slot `live[i]` names, for `i < in_flight`. The group's loops run
    /// over `0..N` and ask this: kani unwinds a constant bound.
    fn live_slot(&self, i: usize) -> Option<&Slot<R>> {
        if i >= self.in_flight {
            return None;
        }
        self.live.get(i).and_then(|&idx| self.slots.get(idx)).and_then(|s| s.as_ref())
    }

    /// The first free slot whose history `pick` accepts.
    fn free_slot(&self, pick: impl Fn(&History) -> bool) -> Option<usize> {
        for i in 0..N {
            let free = self.slots.get(i).is_some_and(|s| s.is_none());
            if free && self.hist.get(i).is_some_and(&pick) {
                return Some(i);
            }
        }
        None
    }

    /// Start harvesting a request for `cfg` on `lane`; `token` comes back in
    /// its [`Completion`]. Returns the slot.
    pub fn insert(&mut self, lane: u16, cfg: R::Config, token: u64) -> Result<usize, GroupError> {
        if self.lane_busy(lane) {
            return Err(GroupError::LaneBusy);
        }
        // A free slot that holds the lane's estimate; else a free one with no
        // estimate; else the first free one (its estimate is forgotten).
        let of_lane = self.free_slot(|h| h.lane == Some(lane));
        let blank = || self.free_slot(|h| h.lane.is_none());
        let Some(free) = of_lane.or_else(blank).or_else(|| self.free_slot(|_| true)) else {
            return Err(GroupError::Full);
        };
        let (Some(slot), Some(live), Some(hist)) =
            (self.slots.get_mut(free), self.live.get_mut(self.in_flight), self.hist.get_mut(free))
        else {
            return Err(GroupError::Full);
        };
        if hist.lane != Some(lane) {
            *hist = History { lane: Some(lane), est: Estimate::default() };
        }
        *slot = Some(Slot { req: R::start(cfg), lane, token, kick_ns: None, seen_ns: 0, next_ns: 0 });
        *live = free;
        self.in_flight += 1;
        Ok(free)
    }

    /// One pass: step every in-flight request once (a new one twice, INIT and
    /// its first barrier check), report each that finished to `done`, and free its slot.
    ///
    /// A request whose lane does not exist finishes with `NRT_INVALID_HANDLE`,
    /// G-GROUP-LANE. One under [`Settle::AfterNotice`](super::Settle::AfterNotice)
    /// is settled right after `done` returns, G-SETTLE: `done` sees its status,
    /// not yet its CPU-time timestamps.
    pub fn poll<L, F>(&mut self, lanes: &mut L, done: F) -> Pass
    where
        L: Lanes + ?Sized,
        F: FnMut(&Completion, &R),
    {
        self.pass(lanes, None, done)
    }

    /// A due-first pass at `now_ns`: step each due request as [`poll`](Self::poll)
    /// does, leave the others, and report the finished ones.
    pub fn poll_due<L, F>(&mut self, lanes: &mut L, now_ns: u64, done: F) -> Pass
    where
        L: Lanes + ?Sized,
        F: FnMut(&Completion, &R),
    {
        self.pass(lanes, Some(now_ns), done)
    }

    /// The clock at which the next due-first pass has something to step, 0
    /// for at once; `None` when nothing is in flight. Never later than
    /// [`Schedule::sweep_bound_ns`] after each request's last step.
    pub fn earliest_due_ns(&self) -> Option<u64> {
        let mut earliest: Option<u64> = None;
        for i in 0..N {
            if let Some(s) = self.live_slot(i) {
                earliest = Some(earliest.map_or(s.next_ns, |e| e.min(s.next_ns)));
            }
        }
        earliest
    }

    fn pass<L, F>(&mut self, lanes: &mut L, now: Option<u64>, mut done: F) -> Pass
    where
        L: Lanes + ?Sized,
        F: FnMut(&Completion, &R),
    {
        let mut pass = Pass::default();
        let sched = self.schedule;
        let mut i = 0;
        // Each iteration either advances `i` or shrinks `in_flight`: at most
        // `2 * N` iterations.
        while i < self.in_flight {
            let Some(&idx) = self.live.get(i) else { break };
            let Some(Some(slot)) = self.slots.get_mut(idx) else {
                self.unlink(i);
                continue;
            };
            if let Some(now) = now {
                if slot.next_ns > now.saturating_add(sched.ahead_ns) {
                    pass.skipped += 1;
                    i += 1;
                    continue;
                }
            }
            pass.stepped += 1;
            // INIT only starts the request: the next step, in the same pass,
            // checks the barrier, so a request past it looks at its rings next.
            let step = match lanes.lane(slot.lane) {
                Some((dev, nq)) => {
                    let unstarted = slot.req.unstarted();
                    match slot.req.step(dev, nq) {
                        Step::InFlight if unstarted => slot.req.step(dev, nq),
                        step => step,
                    }
                }
                None => Step::failed(NrtStatus::InvalidHandle),
            };
            let hist = self.hist.get_mut(idx);
            if step == Step::InFlight {
                if let Some(now) = now {
                    let kick = *slot.kick_ns.get_or_insert(now);
                    slot.seen_ns = now;
                    let est = hist.map(|h| h.est).unwrap_or_default();
                    slot.next_ns = next_step_ns(&sched, &est, kick, now);
                }
                i += 1;
                continue;
            }
            // It ended between its last step in flight and this one: learn the
            // midpoint, so a late pass does not teach the lane to be late.
            if let (Some(now), Some(kick), Some(h), Step::Done(_)) = (now, slot.kick_ns, hist, step) {
                let ended = slot.seen_ns + now.saturating_sub(slot.seen_ns) / 2;
                h.est.learn(ended.saturating_sub(kick));
            }
            let c = Completion { slot: idx, lane: slot.lane, token: slot.token, step };
            done(&c, &slot.req);
            // What the request left for after its notice, G-SETTLE; the lane
            // is looked up again only then.
            if slot.req.settle_due() {
                if let Some((dev, nq)) = lanes.lane(slot.lane) {
                    slot.req.settle(dev, nq);
                }
            }
            pass.completed += 1;
            if let Some(s) = self.slots.get_mut(idx) {
                *s = None;
            }
            self.unlink(i);
        }
        pass
    }

    /// Take the request in `slot` out unfinished, as at shutdown; `None` for a
    /// free slot. Its rings are not handed back: the lane's next request reads
    /// on from where this one stopped.
    pub fn remove(&mut self, slot: usize) -> Option<(u16, u64)> {
        let mut at = None;
        for i in 0..N {
            if i < self.in_flight && self.live.get(i) == Some(&slot) {
                at = Some(i);
                break;
            }
        }
        let i = at?;
        let taken = self.slots.get_mut(slot)?.take()?;
        self.unlink(i);
        Some((taken.lane, taken.token))
    }

    /// Remove `live[i]`; the last entry takes its place and is stepped next.
    fn unlink(&mut self, i: usize) {
        let last = self.in_flight.saturating_sub(1);
        let moved = self.live.get(last).copied().unwrap_or(0);
        if let Some(l) = self.live.get_mut(i) {
            *l = moved;
        }
        self.in_flight = last;
    }
}

/// When a request kicked off at `kick` and stepped at `now` is next stepped:
/// at once without an estimate, else at its due time, else a recheck later;
/// never more than the sweep bound later.
fn next_step_ns(sched: &Schedule, est: &Estimate, kick: u64, now: u64) -> u64 {
    let bound = now.saturating_add(sched.sweep_bound_ns);
    if est.samples == 0 {
        return 0;
    }
    let due = kick.saturating_add(est.due_after_ns());
    // A pass takes what is due within `ahead_ns` of it: such a request is
    // past its due time for this purpose.
    // Past it, the recheck widens with the lane's spread; 0 is every pass.
    let recheck = if sched.recheck_ns == 0 { 0 } else { sched.recheck_ns.max(est.spread_ns / RECHECK_SHARE) };
    let next = if now.saturating_add(sched.ahead_ns) < due { due } else { now.saturating_add(recheck) };
    next.min(bound)
}

/// Hand every INFER_STATUS ring of cores `0..cores` back to the device at
/// request completion, G-HEAD-BATCH. A failed write is reported and left to
/// the next batch, G-HEAD-FAIL.
pub fn write_back_heads<D: ExecDevice + ?Sized>(dev: &mut D, nq: &mut Notifications, cores: usize) {
    // Loops over constant bounds, left early: kani unwinds them by the bound,
    // not by its unwind limit.
    for core in 0..crate::arch::MAX_CORES {
        if core >= cores {
            break;
        }
        let c = core as u8;
        for k in 0..crate::nq::MAX_INFER_STATUS_NQS {
            let Some(&id) = nq.infer_status_nqs().get(k) else { break };
            let Some(ring) = nq.ring_mut(c, id) else { continue };
            if ring.unacked() == 0 {
                continue;
            }
            if let Err(e) = ring.write_head(dev, c, id) {
                emit(dev, ExecEvent::HeadWriteFailed { core: c, nq: id, kind: e.kind() });
            }
        }
    }
}

#[cfg(test)]
mod tests;
