//! A poller thread per poll group: one thread harvests every
//! in-flight request of its lanes (the logical cores of one device, or of
//! several), instead of one thread per request.
//!
//! [`Poller::spawn`] moves the lanes (each a device and its [`Notifications`])
//! onto a new thread, pinned to a CPU when [`PollerConfig::cpu`] asks. The
//! thread holds a core [`PollGroup`](nrt_core::exec::PollGroup) and
//!
//! Every pass is a due-first pass of the group ([`PollGroup::poll_due`](nrt_core::exec::PollGroup::poll_due)):
//! it steps only the requests that are due by their lane's learnt
//! kickoff-to-END time, and every request at least once per
//! [`PollerConfig::sweep_bound`] (1 ms by default), so an early record, an
//! error, a timeout or an overflow is seen within that bound plus one pass.
//! Between passes the thread waits by its [`WaitPolicy`]
//! ([`PollerConfig::policy`], G-POLLER-IDLE):
//!
//! - [`WaitPolicy::Hybrid`] (the default; for a poller without a core of its
//!   own): it sleeps until [`PollerConfig::hybrid_lead`] before the group's
//!   earliest due time ([`PollGroup::earliest_due_ns`](nrt_core::exec::PollGroup::earliest_due_ns)), with the thread's
//!   timer slack set to 1 ns (`prctl(PR_SET_TIMERSLACK)`: a requested sleep
//!   then overshoots by the scheduler's wake-up, ~5-10 us on a VM, not by the
//!   default 50 us slack), looks at the wait again on waking (a sleep may
//!   end early or late), spins through what is left of the lead (the lead
//!   absorbs the overshoot) and passes at the pass's time
//!   ([`hybrid_wait_for_pass`]). The next pass is set one slice after the
//!   last ([`PollerConfig::hybrid_slice_ns`]: the [`PollerConfig::notice_bound`],
//!   50 us by default, less the lead: 40 us), so passes are at least one
//!   slice apart (more only when a sleep overshoots past the lead; less when
//!   a submission arrives, which ends the wait so the loop can start it, and
//!   the pass that follows comes at once), and with
//!   many lanes whose due windows overlap (something is nearly always due)
//!   it sleeps in slices between passes over the due lanes instead of
//!   spinning: a completion waits at most about one slice plus a pass, within
//!   the bound. It spins only through the lead before a pass; a poller with
//!   nothing due within its lead never spins.
//!   A due request still in flight is stepped again every
//!   [`PollerConfig::recheck`] (so a late one costs one wake-up per recheck,
//!   not a spin). A submission wakes the sleeping thread (its eventfd).
//! - [`WaitPolicy::Spin`] (for a core the poller owns, e.g. pinned with
//!   [`PollerConfig::cpu`]): each pass steps every due request (no recheck
//!   interval), and it **spins** between passes while work is in
//!   flight, for [`PollerConfig::spin_for`] after the last submission or
//!   completion; then **yields** until [`PollerConfig::yield_for`]; then
//!   **sleeps** [`PollerConfig::sleep_us`] between passes. A request whose
//!   device has gone quiet for that long is a hang heading for its timeout;
//!   the thread's CPU then drops to almost nothing.
//! - [`WaitPolicy::Sleep`]: it sleeps [`PollerConfig::sleep_us`] between
//!   passes (default timer slack: libnrt's `usleep(1)` with one thread).
//! - with nothing in flight, a spinning poller spins and yields the same way
//!   waiting for a submission, then blocks on an eventfd that a submitter
//!   writes only when the poller is blocked (a submission to a spinning poller
//!   is one lock and one atomic, no syscall); a hybrid or sleeping one blocks
//!   at once.
//!
//! Each completion is handed to its waiter through a [`Ticket`]: the poller
//! publishes the status and a `done` flag; a waiter that is spinning on the
//! flag sees it with no syscall. A waiter that stopped spinning registered an
//! eventfd (created on first need) and a `sleeper` flag first; the poller
//! writes that eventfd only then. Both sides use sequentially consistent
//! stores and loads of `done` and `sleeper`, so either the poller sees the
//! sleeper or the sleeper sees `done` before it blocks: no lost wake-up.
//!
//! [`PollerSet`] runs the pollers of a host: one per device by default, or one
//! per contiguous block of devices, and routes each request by device.
//!
//! Shutdown ([`Poller::shutdown`], or drop) lets the requests in flight finish
//! (each ends at the latest at its timeout; one whose device clock stalls is
//! answered `NRT_CLOSED` once the longest timeout in flight plus
//! [`SHUTDOWN_GRACE`] has passed on this process's clock, G-POLLER-CLOSE),
//! answers every request not yet started with `NRT_CLOSED` (14, G-LINUX-CLOSE),
//! and refuses new ones.
//!
//! Two kinds of call are refused at once rather than hang or abort:
//! in a child forked after the poller was made, where its thread is not,
//! every call on it or its tickets ([`SubmitError::Forked`],
//! [`WaitRefused::Forked`]; its drop forgets it: [`crate::fork`], G-FORK);
//! and a wait on the poller's own thread (a lane's callback), which would
//! wait on itself ([`WaitRefused::OnPollerThread`], G-POLLER-REENTRY). A
//! poller dropped on its own thread does not join itself: it stops taking
//! submissions and its thread ends by itself once the callback returns and
//! the requests in flight are done.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nrt_core::exec::{ExecConfig, ExecDevice, Lanes};
use nrt_core::nq::Notifications;

use crate::fork::{ForkedChild, Owner};
use crate::sys::{self, EventFd};

mod config;
mod policy;
mod set;
mod thread;
mod ticket;

pub use config::PollerConfig;
pub use policy::{
    hybrid_wait, hybrid_wait_for_pass, next_pass_ns, next_sliced_pass_ns, HybridWait, HybridWaitEnd, HybridWaiter,
    WaitPolicy, HYBRID_MAX_SLEEPS,
};
pub use set::PollerSet;
pub use thread::set_timer_slack_1ns;
pub use ticket::{Ticket, WaitRefused};

use thread::{answer_queued_closed, run};
use ticket::{mark_poller_thread, on_poller_thread, Alive, AliveGuard, Handoff};

/// Requests one poller holds at once (a 16-device trn2 host has 64 logical
/// cores; two of them fit one poller).
pub const POLLER_CAPACITY: usize = 128;

/// How long a blocked idle poller waits on its eventfd before it looks at the
/// shutdown flag again.
const IDLE_BLOCK_MS: i32 = 50;

/// At shutdown, how long past the longest timeout of the requests in flight
/// they may still finish before they are answered `NRT_CLOSED` (G-POLLER-CLOSE).
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(1);

/// Lanes in a vector: lane `i` is `self.0[i]`.
#[derive(Debug)]
pub struct VecLanes<D>(pub Vec<(D, Notifications)>);

impl<D: ExecDevice> Lanes for VecLanes<D> {
    type Dev = D;
    fn lane(&mut self, lane: u16) -> Option<(&mut D, &mut Notifications)> {
        self.0.get_mut(usize::from(lane)).map(|(d, n)| (d, n))
    }
}

/// Counters of a poller.
#[derive(Debug, Default)]
struct Counters {
    passes: AtomicU64,
    steps: AtomicU64,
    completions: AtomicU64,
    eventfd_wakes: AtomicU64,
    spin_handoffs: AtomicU64,
    refused_busy_lane: AtomicU64,
    skipped: AtomicU64,
    sleeps: AtomicU64,
}

/// What a poller did, read at any time ([`Poller::stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PollerStats {
    /// Passes over the group.
    pub passes: u64,
    /// Request steps over all passes.
    pub steps: u64,
    /// Requests completed.
    pub completions: u64,
    /// Completions handed to a sleeping waiter through its eventfd.
    pub eventfd_wakes: u64,
    /// Completions handed over with no syscall (the waiter was spinning, or not waiting yet).
    pub spin_handoffs: u64,
    /// Requests in flight that passes left alone (not due).
    pub skipped: u64,
    /// Sleeps between passes (hybrid or sleep policy).
    pub sleeps: u64,
}

struct Pending {
    lane: u16,
    cfg: ExecConfig,
    handoff: Arc<Handoff>,
    /// The request's execution timeout with its source, put in effect while
    /// it is stepped (`config::BudgetScope`); `None`: none said.
    budget: Option<crate::config::Budget>,
}

struct Shared {
    queue: Mutex<VecDeque<Pending>>,
    queued: AtomicU32,
    sleeping: AtomicBool,
    wake: EventFd,
    closing: AtomicBool,
    counters: Counters,
    origin: Instant,
    alive: Arc<Alive>,
}

impl Shared {
    fn queue(&self) -> MutexGuard<'_, VecDeque<Pending>> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Why a poller, or a set of pollers, could not start. The text names the
/// call and the reason (an OS error with its errno name); [`source`] is the
/// OS error where there is one.
///
/// [`source`]: std::error::Error::source
#[derive(Debug)]
pub enum PollerError {
    /// The wake eventfd could not be made.
    Eventfd(std::io::Error),
    /// The poller thread could not be started.
    Thread(std::io::Error),
    /// The poller thread could not be pinned to `cpu`.
    Pin {
        /// The CPU asked for ([`PollerConfig::cpu`]).
        cpu: usize,
        /// What `sched_setaffinity` answered.
        source: std::io::Error,
    },
    /// The poller thread ended before it said it had started.
    ThreadEnded,
    /// A [`PollerSet`] of this shape is refused (the reason).
    Shape(String),
}

impl std::fmt::Display for PollerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PollerError::Eventfd(e) => write!(f, "poller: eventfd: {e}{}", errno_suffix(e)),
            PollerError::Thread(e) => write!(f, "poller: spawn: {e}{}", errno_suffix(e)),
            PollerError::Pin { cpu, source } => write!(f, "poller: pin to CPU {cpu}: {source}{}", errno_suffix(source)),
            PollerError::ThreadEnded => f.write_str("poller: the thread ended before it started"),
            PollerError::Shape(why) => write!(f, "poller set: {why}"),
        }
    }
}

impl std::error::Error for PollerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PollerError::Eventfd(e) | PollerError::Thread(e) | PollerError::Pin { source: e, .. } => Some(e),
            PollerError::ThreadEnded | PollerError::Shape(_) => None,
        }
    }
}

/// Why a submission was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubmitError {
    /// The poller is shutting down (`NRT_CLOSED`).
    Closed,
    /// A child forked after the poller was made: its thread is not here.
    Forked(ForkedChild),
}

/// A poller thread and its group.
pub struct Poller<L: Lanes + Send + 'static> {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<(L, u64)>>,
    waiter_spin_for: Duration,
    cpu_ns: u64,
    lanes: Option<L>,
    /// The process that made it (G-FORK).
    owner: Owner,
}

impl<L: Lanes + Send + 'static> std::fmt::Debug for Poller<L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Poller").field("stats", &self.stats()).finish()
    }
}

impl<L: Lanes + Send + 'static> Poller<L> {
    /// Start a poller thread over `lanes`. Fails when the eventfd or the thread
    /// cannot be made, or the CPU cannot be pinned (the message names which).
    pub fn spawn(lanes: L, cfg: PollerConfig) -> Result<Poller<L>, PollerError> {
        let wake = EventFd::new(false).map_err(PollerError::Eventfd)?;
        let shared = Arc::new(Shared {
            queue: Mutex::new(VecDeque::new()),
            queued: AtomicU32::new(0),
            sleeping: AtomicBool::new(false),
            wake,
            closing: AtomicBool::new(false),
            counters: Counters::default(),
            origin: Instant::now(),
            alive: Arc::new(Alive(AtomicBool::new(true))),
        });
        let (tx, rx) = std::sync::mpsc::channel::<Result<(), PollerError>>();
        let sh = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("nrt-poller".into())
            .spawn(move || {
                let _alive = AliveGuard(Arc::clone(&sh.alive));
                mark_poller_thread(&sh.alive);
                let pinned = match cfg.cpu {
                    Some(cpu) => sys::pin_current_thread(cpu).map_err(|source| PollerError::Pin { cpu, source }),
                    None => Ok(()),
                };
                if cfg.policy == WaitPolicy::Hybrid {
                    set_timer_slack_1ns();
                }
                let ok = pinned.is_ok();
                let _ = tx.send(pinned);
                let mut lanes = lanes;
                if ok {
                    run(&sh, &mut lanes, &cfg);
                }
                // A poller dropped on this thread is not joined: what raced
                // its shutdown is answered here.
                answer_queued_closed(&sh);
                (lanes, sys::thread_cpu_ns())
            })
            .map_err(PollerError::Thread)?;
        let mut p = Poller {
            shared,
            thread: Some(thread),
            waiter_spin_for: cfg.waiter_spin_for,
            cpu_ns: 0,
            lanes: None,
            owner: Owner::here(),
        };
        match rx.recv() {
            Ok(Ok(())) => Ok(p),
            Ok(Err(e)) => {
                p.join();
                Err(e)
            }
            Err(_) => {
                p.join();
                Err(PollerError::ThreadEnded)
            }
        }
    }

    /// The instant [`Ticket::noticed_ns`] counts from.
    pub fn origin(&self) -> Instant {
        self.shared.origin
    }

    /// Submit a request for `cfg` on `lane`. A lane harvests one request at a
    /// time: a request for a busy lane waits, in order, until the lane is free.
    /// Refused in a child forked after the poller was made; allowed from a
    /// lane's callback (the poller takes it at its next pass).
    pub fn submit(&self, lane: u16, cfg: ExecConfig) -> Result<Ticket, SubmitError> {
        self.submit_with(lane, cfg, None)
    }

    /// [`submit`](Self::submit) a request whose execution timeout is
    /// `budget` ([`PollerConfig::budget`]): its seconds are the request's
    /// timeout (they replace `cfg`'s `timeout_s`, so the two cannot differ),
    /// and while the poller steps it, the budget is in effect on the poller
    /// thread, so the timeout line its harvest logs names the budget and its
    /// source (`config::BudgetScope`).
    pub fn submit_budgeted(
        &self,
        lane: u16,
        cfg: ExecConfig,
        budget: crate::config::Budget,
    ) -> Result<Ticket, SubmitError> {
        self.submit_with(lane, ExecConfig { timeout_s: budget.seconds, ..cfg }, Some(budget))
    }

    fn submit_with(
        &self,
        lane: u16,
        cfg: ExecConfig,
        budget: Option<crate::config::Budget>,
    ) -> Result<Ticket, SubmitError> {
        self.owner.check("poller").map_err(SubmitError::Forked)?;
        let handoff = Arc::new(Handoff::default());
        {
            // Checked under the queue's lock: shutdown sets the flag, then
            // (after the thread ended) answers whatever the queue still holds
            // under the same lock, so no submission is left unanswered.
            let mut q = self.shared.queue();
            if self.shared.closing.load(Ordering::SeqCst) {
                return Err(SubmitError::Closed);
            }
            q.push_back(Pending { lane, cfg, handoff: Arc::clone(&handoff), budget });
            self.shared.queued.fetch_add(1, Ordering::SeqCst);
        }
        if self.shared.sleeping.load(Ordering::SeqCst) {
            let _ = self.shared.wake.write(1);
        }
        Ok(Ticket { handoff, spin_for: self.waiter_spin_for, alive: Arc::clone(&self.shared.alive), owner: self.owner })
    }

    /// The counters so far.
    pub fn stats(&self) -> PollerStats {
        let c = &self.shared.counters;
        PollerStats {
            passes: c.passes.load(Ordering::Relaxed),
            steps: c.steps.load(Ordering::Relaxed),
            completions: c.completions.load(Ordering::Relaxed),
            eventfd_wakes: c.eventfd_wakes.load(Ordering::Relaxed),
            spin_handoffs: c.spin_handoffs.load(Ordering::Relaxed),
            skipped: c.skipped.load(Ordering::Relaxed),
            sleeps: c.sleeps.load(Ordering::Relaxed),
        }
    }

    fn join(&mut self) {
        if self.owner.inherited() {
            // A forked child: the thread is the parent's. Forget it all: no
            // join, no lock, no eventfd write the parent's thread would see.
            std::mem::forget(self.thread.take());
            std::mem::forget(Arc::clone(&self.shared));
            return;
        }
        {
            let _q = self.shared.queue();
            self.shared.closing.store(true, Ordering::SeqCst);
        }
        let _ = self.shared.wake.write(1);
        if on_poller_thread(&self.shared.alive) {
            // On the poller's own thread (a lane's callback): it cannot join
            // itself. Detached, it ends by itself once the callback returns and
            // the requests in flight are done, and answers what is left.
            drop(self.thread.take());
            return;
        }
        if let Some(t) = self.thread.take() {
            if let Ok((lanes, cpu)) = t.join() {
                self.lanes = Some(lanes);
                self.cpu_ns = cpu;
            }
        }
        // The thread died before its own last look at the queue.
        answer_queued_closed(&self.shared);
    }

    /// Stop: the requests in flight finish, queued ones are answered
    /// `NRT_CLOSED`. Returns the lanes, and the poller thread's CPU time in ns;
    /// no lanes and 0 in a forked child (forgotten) or on the poller's own
    /// thread (it ends by itself after the callback).
    pub fn shutdown(mut self) -> (Option<L>, u64) {
        self.join();
        (self.lanes.take(), self.cpu_ns)
    }
}

impl<L: Lanes + Send + 'static> Drop for Poller<L> {
    fn drop(&mut self) {
        self.join();
    }
}

/// " (ENAME)" for an OS error, nothing for another.
fn errno_suffix(e: &std::io::Error) -> String {
    sys::errno_name(e).map(|n| format!(" ({n})")).unwrap_or_default()
}
