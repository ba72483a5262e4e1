//! One poller thread per poll group: it harvests every in-flight request of
//! its lanes, hands each completion to its waiter through a [`Ticket`], and
//! waits between passes by its [`WaitPolicy`].
//!
//! Submitted requests queue until their lane is free; at shutdown the requests
//! in flight finish, within [`SHUTDOWN_GRACE`] past their longest timeout, and
//! the rest are answered `NRT_CLOSED`. Every submission is answered once. In a
//! forked child or on the poller's own thread a call that would hang is refused.
//! The design and its figures are in `docs/scaling.md`.

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

/// Requests one poller holds at once: two 16-device trn2 hosts' logical cores.
pub const POLLER_CAPACITY: usize = 128;

/// How long a blocked idle poller waits on its eventfd between looks at shutdown.
const IDLE_BLOCK_MS: i32 = 50;

/// At shutdown, how long past their longest timeout the requests in flight may
/// still finish before they are answered `NRT_CLOSED` (G-POLLER-CLOSE).
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
    /// Requests stepped over all passes; a new request's first pass, which
    /// steps it twice, counts once.
    pub steps: u64,
    /// Requests completed.
    pub completions: u64,
    /// Completions handed to a sleeping waiter through its eventfd.
    pub eventfd_wakes: u64,
    /// Completions handed over with no syscall: the waiter spun, or was not waiting yet.
    pub spin_handoffs: u64,
    /// Requests in flight that passes left alone because they were not due.
    pub skipped: u64,
    /// Sleeps between passes of the hybrid or sleep policy.
    pub sleeps: u64,
}

struct Pending {
    lane: u16,
    cfg: ExecConfig,
    handoff: Arc<Handoff>,
    /// The request's execution timeout, in effect while it is stepped.
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

/// Why a poller, or a set of pollers, could not start; the text names the call and the errno.
#[derive(Debug)]
pub enum PollerError {
    /// The wake eventfd could not be made.
    Eventfd(std::io::Error),
    /// The poller thread could not be started.
    Thread(std::io::Error),
    /// The poller thread could not be pinned to `cpu`.
    Pin {
        /// The CPU asked for.
        cpu: usize,
        /// What `sched_setaffinity` answered.
        source: std::io::Error,
    },
    /// The poller thread ended before it said it had started.
    ThreadEnded,
    /// A [`PollerSet`] of this shape is refused, for this reason.
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
    /// Start a poller thread over `lanes`.
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
                // A poller dropped on this thread is not joined: answer here what raced its shutdown.
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

    /// Submit a request for `cfg` on `lane`; it waits, in order, until the lane is free.
    /// Allowed from a lane's callback; refused in a forked child.
    pub fn submit(&self, lane: u16, cfg: ExecConfig) -> Result<Ticket, SubmitError> {
        self.submit_with(lane, cfg, None)
    }

    /// [`submit`](Self::submit) with `budget` as the request's timeout; the
    /// timeout line its harvest logs names the budget and its source.
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
            // Checked under the queue's lock, as shutdown sets the flag and
            // later drains the queue: no submission is left unanswered.
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
            // A forked child: the thread is the parent's. Forget it all, touching nothing of the parent's.
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
            // On its own thread a poller cannot join itself. Detached, the
            // thread ends once the callback returns and the requests in flight are done.
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

    /// Stop: the requests in flight finish, queued ones are answered `NRT_CLOSED`.
    /// Returns the lanes and the thread's CPU time in ns; nothing in a forked
    /// child or on the poller's own thread.
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
