//! The poll group: one poller for many in-flight requests (issue 13).
//!
//! libnrt harvests each request on its own thread (the sync driver's
//! `usleep(1)` loop, or one execution unit's worker). [`progress_one_step`]
//! never blocks, so one thread can hold many requests and step each in turn:
//! a [`PollGroup`] is that holder. It has a fixed capacity `N` (a const
//! generic), allocates nothing, and keeps the one-step contract per request:
//! each pass steps every in-flight request exactly once, a request that
//! reaches DONE is reported once with its step code and status and leaves the
//! group, and its slot is reused by the next [`insert`](PollGroup::insert).
//!
//! The group owns the requests' harvest state; the platform owns the devices
//! and their ring cursors. A request names the *lane* it harvests: one logical
//! core, i.e. one device object and the [`Notifications`] of that core
//! (`tpb->notification`). The caller lends the lanes to each pass through
//! [`Lanes`], so a group can span the cores of one device or of many devices
//! without holding references between passes (no unsafe, no allocation). A
//! lane harvests one request at a time (its ring cursors are one consumer):
//! a second request on a busy lane is refused ([`GroupError::LaneBusy`],
//! G-GROUP-LANE).
//!
//! An empty pass (nothing in flight) touches nothing but a counter; a pass over
//! requests with nothing new costs their empty sweeps plus a lane lookup each.
//!
//! [`progress_one_step`]: ExecRequest::progress_one_step

use super::{ExecConfig, ExecRequest, Step};
use crate::event::{emit, Event};
use crate::hal::{Error as _, ExecDevice};
use crate::nq::Notifications;
use crate::status::NrtStatus;

/// The lanes a group harvests, lent to one pass: lane `i` is a device object
/// and the notification state of one logical core.
///
/// # For platform authors
///
/// Return the same device and notification state for the same lane on every
/// pass while a request on it is in flight; `None` for a lane that does not
/// exist (the request on it fails, see [`PollGroup::poll`]).
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

/// Why [`PollGroup::insert`] refused a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum GroupError {
    /// Every slot holds an in-flight request.
    Full,
    /// The lane already has a request in flight (G-GROUP-LANE).
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

/// A request that finished during a pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    /// The slot it held (free again once the pass returns).
    pub slot: usize,
    /// The lane it harvested.
    pub lane: u16,
    /// The caller's token given at [`PollGroup::insert`].
    pub token: u64,
    /// The final one-step code: [`Step::Done`] or [`Step::Error`].
    pub step: Step,
    /// The request's status (`*out`).
    pub status: NrtStatus,
}

/// What one pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pass {
    /// Requests stepped (each once).
    pub stepped: usize,
    /// Of those, requests that finished and left the group.
    pub completed: usize,
}

#[derive(Clone, Debug)]
struct Slot {
    req: ExecRequest,
    lane: u16,
    token: u64,
}

/// Up to `N` in-flight requests, stepped in turn by one poller.
#[derive(Clone, Debug)]
pub struct PollGroup<const N: usize> {
    slots: [Option<Slot>; N],
    /// Indices of the occupied slots, in `live[..in_flight]`: a pass walks this
    /// short list, not every slot.
    live: [usize; N],
    in_flight: usize,
}

impl<const N: usize> Default for PollGroup<N> {
    fn default() -> Self {
        PollGroup::new()
    }
}

impl<const N: usize> PollGroup<N> {
    /// An empty group.
    pub fn new() -> PollGroup<N> {
        PollGroup { slots: core::array::from_fn(|_| None), live: [0; N], in_flight: 0 }
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
        self.live_slots().any(|s| s.lane == lane)
    }

    /// The in-flight request in `slot`, if any.
    pub fn request(&self, slot: usize) -> Option<&ExecRequest> {
        self.slots.get(slot)?.as_ref().map(|s| &s.req)
    }

    fn live_slots(&self) -> impl Iterator<Item = &Slot> + '_ {
        self.live.iter().take(self.in_flight).filter_map(|&i| self.slots.get(i).and_then(|s| s.as_ref()))
    }

    /// Start harvesting a request for `cfg` on `lane` (`exec_request_init_state`);
    /// `token` comes back in its [`Completion`]. Returns the slot.
    pub fn insert(&mut self, lane: u16, cfg: ExecConfig, token: u64) -> Result<usize, GroupError> {
        if self.lane_busy(lane) {
            return Err(GroupError::LaneBusy);
        }
        let Some(free) = self.slots.iter().position(|s| s.is_none()) else {
            return Err(GroupError::Full);
        };
        let (Some(slot), Some(live)) = (self.slots.get_mut(free), self.live.get_mut(self.in_flight)) else {
            return Err(GroupError::Full);
        };
        *slot = Some(Slot { req: ExecRequest::new(cfg), lane, token });
        *live = free;
        self.in_flight += 1;
        Ok(free)
    }

    /// One pass: step every in-flight request once (non-blocking), report each
    /// that finished to `done` with its final state, and free its slot.
    ///
    /// When the lane's notifications batch HEAD write-backs, the rings the
    /// finished request read are handed back before it is reported
    /// (G-HEAD-BATCH). A request whose lane does not exist finishes with
    /// [`Step::Error`] and `NRT_INVALID_HANDLE` (G-GROUP-LANE).
    pub fn poll<L, F>(&mut self, lanes: &mut L, mut done: F) -> Pass
    where
        L: Lanes + ?Sized,
        F: FnMut(&Completion, &ExecRequest),
    {
        let mut pass = Pass::default();
        let mut i = 0;
        // Each iteration either advances `i` or shrinks `in_flight`: at most
        // `2 * N` iterations.
        while i < self.in_flight {
            let Some(&idx) = self.live.get(i) else { break };
            let Some(Some(slot)) = self.slots.get_mut(idx) else {
                self.unlink(i);
                continue;
            };
            pass.stepped += 1;
            let mut status = NrtStatus::Success;
            let step = match lanes.lane(slot.lane) {
                Some((dev, nq)) => {
                    let step = slot.req.progress_one_step(dev, nq, &mut status);
                    if step != Step::InFlight && nq.head_batching() {
                        write_back_heads(dev, nq, slot.req.tpb_count());
                    }
                    step
                }
                None => {
                    status = NrtStatus::InvalidHandle;
                    Step::Error
                }
            };
            if step == Step::InFlight {
                i += 1;
                continue;
            }
            let c = Completion { slot: idx, lane: slot.lane, token: slot.token, step, status };
            done(&c, &slot.req);
            pass.completed += 1;
            if let Some(s) = self.slots.get_mut(idx) {
                *s = None;
            }
            self.unlink(i);
        }
        pass
    }

    /// Take the request in `slot` out of the group without finishing it (a
    /// platform giving up on it, e.g. at shutdown); `None` when the slot is free.
    /// Its rings are not handed back: the next request on the lane reads on
    /// from where this one stopped.
    pub fn remove(&mut self, slot: usize) -> Option<(u16, u64)> {
        let i = self.live.iter().take(self.in_flight).position(|&s| s == slot)?;
        let taken = self.slots.get_mut(slot)?.take()?;
        self.unlink(i);
        Some((taken.lane, taken.token))
    }

    /// Remove `live[i]`; the last entry takes its place (and is stepped next,
    /// since it has not been stepped in this pass).
    fn unlink(&mut self, i: usize) {
        let last = self.in_flight.saturating_sub(1);
        let moved = self.live.get(last).copied().unwrap_or(0);
        if let Some(l) = self.live.get_mut(i) {
            *l = moved;
        }
        self.in_flight = last;
    }
}

/// Hand every INFER_STATUS ring of cores `0..cores` back to the device: write
/// HEAD where reads are not yet reported (G-HEAD-BATCH, at request
/// completion). A failed write is reported and left to the next batch
/// (G-HEAD-FAIL).
pub fn write_back_heads<D: ExecDevice + ?Sized>(dev: &mut D, nq: &mut Notifications, cores: usize) {
    for core in 0..cores.min(crate::arch::MAX_CORES) {
        let c = core as u8;
        for k in 0..nq.infer_status_nqs().len() {
            let Some(&id) = nq.infer_status_nqs().get(k) else { break };
            let Some(ring) = nq.ring_mut(c, id) else { continue };
            if ring.unacked() == 0 {
                continue;
            }
            if let Err(e) = ring.write_head(dev, c, id) {
                emit(dev, Event::HeadWriteFailed { core: c, nq: id, kind: e.kind() });
            }
        }
    }
}

#[cfg(test)]
mod tests;
