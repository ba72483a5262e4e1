//! Execution units on worker threads, with the has-work and mark-complete
//! handoff on real eventfds (completion-engine seed §6).
//!
//! Each unit owns a work queue, a semaphore-mode `has_work` eventfd and a
//! worker that drives core's `ExecUnit::step` over the unit's device. The
//! worker, on completion, consumes one has-work and then signals the request's
//! mark-complete, so the counts stay paired: every request is answered once.
//!
//! A unit that went FATAL_SHUTDOWN answers `NRT_EXEC_UNIT_UNRECOVERABLE` to
//! every request queued. Shutdown lets the request in flight finish, answers
//! the rest `NRT_CLOSED` and refuses new ones. A device that can die must
//! report it through its traits, so that shutdown never waits on a dead one (G-SHM-GONE).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

use nrt_core::exec::ExecDevice;
use nrt_core::exec::{ExecConfig, ExecUnit, XuHealth, XuQueue, XuSignalError, XuStep, XuWork};
use nrt_core::hal::Delay;
use nrt_core::nq::Notifications;
use nrt_core::NrtStatus;

use crate::sys::EventFd;
use crate::time::{AnyDelay, DelayKind};

/// How long an idle worker waits for has-work before it checks for shutdown.
const IDLE_POLL_MS: i32 = 50;

/// How long an idle worker and a waiting submitter spin before they block on
/// their eventfd: a blocked thread takes tens of microseconds to wake, a spin
/// hands back-to-back requests over in a few hundred nanoseconds.
const SPIN_BEFORE_BLOCK: std::time::Duration = std::time::Duration::from_micros(20);

/// Spin until `ready()` or `SPIN_BEFORE_BLOCK` passes; returns whether it became
/// ready. It yields between looks, so that spinners do not starve threads with work.
fn spin_until(ready: impl Fn() -> bool) -> bool {
    let t = std::time::Instant::now();
    while !ready() {
        if t.elapsed() >= SPIN_BEFORE_BLOCK {
            return false;
        }
        std::thread::yield_now();
    }
    true
}

/// One request's completion: its mark-complete eventfd and its status.
#[derive(Debug)]
struct Completion {
    mark_comp: EventFd,
    status: AtomicU32,
    done: AtomicBool,
}

/// A submitted request; [`wait`](Ticket::wait) blocks until it completes.
#[derive(Debug)]
pub struct Ticket {
    seq_id: u64,
    completion: Arc<Completion>,
}

impl Ticket {
    /// The request's sequence id.
    pub fn seq_id(&self) -> u64 {
        self.seq_id
    }

    /// Block on the request's mark-complete, after a short spin, and return its status.
    pub fn wait(self) -> NrtStatus {
        spin_until(|| self.completion.done.load(Ordering::Acquire));
        match self.completion.mark_comp.read_blocking() {
            Ok(_) => NrtStatus::from_code(self.completion.status.load(Ordering::Acquire)),
            // An eventfd read cannot fail on a valid fd; if it does, say so.
            Err(_) => NrtStatus::Failure,
        }
    }

    /// `true` once the request completed; never blocks.
    pub fn is_done(&self) -> bool {
        self.completion.done.load(Ordering::Acquire)
    }
}

struct Slot {
    work: XuWork,
    completion: Arc<Completion>,
}

struct Shared {
    queue: Mutex<VecDeque<Slot>>,
    /// Requests queued, for an idle worker's spin; the queue is the truth.
    queued: AtomicU32,
    has_work: EventFd,
    closing: AtomicBool,
    /// Has-work counts consumed and mark-completes signalled, which must pair.
    consumed: AtomicU32,
    signalled: AtomicU32,
}

impl Shared {
    fn queue(&self) -> MutexGuard<'_, VecDeque<Slot>> {
        // A worker that panicked while holding the lock leaves the queue as it
        // was: keep serving it.
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn answer(&self, slot: &Slot, status: NrtStatus) -> Result<(), XuSignalError> {
        slot.completion.status.store(status.code(), Ordering::Release);
        slot.completion.done.store(true, Ordering::Release);
        self.signalled.fetch_add(1, Ordering::AcqRel);
        slot.completion.mark_comp.write(1).map_err(|_| XuSignalError::Signal)
    }
}

/// Core's view of the unit's queue.
struct QueueView<'a>(&'a Shared);

impl XuQueue for QueueView<'_> {
    fn peek_current(&mut self) -> Option<XuWork> {
        self.0.queue().front().map(|s| s.work)
    }
    fn consume_has_work(&mut self) -> Result<(), XuSignalError> {
        match self.0.has_work.try_read() {
            Ok(Some(_)) => {
                self.0.consumed.fetch_add(1, Ordering::AcqRel);
                Ok(())
            }
            Ok(None) => Err(XuSignalError::Underflow),
            Err(_) => Err(XuSignalError::Signal),
        }
    }
    fn pop_current(&mut self, seq_id: u64, status: NrtStatus) -> Result<(), XuSignalError> {
        let slot = self.0.queue().pop_front();
        match slot {
            Some(s) if s.work.seq_id == seq_id => {
                self.0.queued.fetch_sub(1, Ordering::AcqRel);
                self.0.answer(&s, status)
            }
            Some(s) => {
                self.0.queued.fetch_sub(1, Ordering::AcqRel);
                // Not the request that completed: answer it anyway, never drop it.
                let _ = self.0.answer(&s, NrtStatus::Failure);
                Err(XuSignalError::Signal)
            }
            None => Err(XuSignalError::Signal),
        }
    }
}

/// One unit: its shared queue and its worker.
struct Unit {
    shared: Arc<Shared>,
    worker: Option<JoinHandle<XuHealth>>,
}

/// A pool of execution units, one worker thread each.
pub struct XuPool {
    units: Vec<Unit>,
    next_seq: std::sync::atomic::AtomicU64,
}

/// Why a submit was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum SubmitError {
    /// No such unit.
    NoSuchUnit(usize),
    /// The pool is shutting down.
    Closed,
    /// The has-work eventfd could not be written.
    Signal,
}

impl XuPool {
    /// Start `devices.len()` units; unit `i` harvests through `devices[i]` with
    /// ring state `rings[i]`, waiting between steps with `delay`.
    pub fn start<D>(devices: Vec<(D, Notifications)>, delay: DelayKind) -> std::io::Result<XuPool>
    where
        D: ExecDevice + Send + 'static,
    {
        let mut units = Vec::with_capacity(devices.len());
        for (i, (dev, nq)) in devices.into_iter().enumerate() {
            let shared = Arc::new(Shared {
                queue: Mutex::new(VecDeque::new()),
                queued: AtomicU32::new(0),
                has_work: EventFd::new(true)?,
                closing: AtomicBool::new(false),
                consumed: AtomicU32::new(0),
                signalled: AtomicU32::new(0),
            });
            let s = Arc::clone(&shared);
            let worker = std::thread::Builder::new()
                .name(format!("nrt-xu-{i}"))
                .spawn(move || worker_loop(&s, dev, nq, AnyDelay::new(delay)))?;
            units.push(Unit { shared, worker: Some(worker) });
        }
        Ok(XuPool { units, next_seq: std::sync::atomic::AtomicU64::new(1) })
    }

    /// Number of units.
    pub fn len(&self) -> usize {
        self.units.len()
    }

    /// `true` when the pool has no units.
    pub fn is_empty(&self) -> bool {
        self.units.is_empty()
    }

    /// Queue a request on unit `unit` and post has-work.
    pub fn submit(&self, unit: usize, config: ExecConfig) -> Result<Ticket, SubmitError> {
        let u = self.units.get(unit).ok_or(SubmitError::NoSuchUnit(unit))?;
        let mark_comp = EventFd::new(false).map_err(|_| SubmitError::Signal)?;
        let completion = Arc::new(Completion { mark_comp, status: AtomicU32::new(0), done: AtomicBool::new(false) });
        let seq_id = self.next_seq.fetch_add(1, Ordering::Relaxed);
        {
            let mut q = u.shared.queue();
            if u.shared.closing.load(Ordering::Acquire) {
                return Err(SubmitError::Closed);
            }
            q.push_back(Slot { work: XuWork { seq_id, config }, completion: Arc::clone(&completion) });
            u.shared.queued.fetch_add(1, Ordering::AcqRel);
            // Posted under the lock, so a closing worker sees the slot and its count together.
            if u.shared.has_work.write(1).is_err() {
                q.pop_back();
                u.shared.queued.fetch_sub(1, Ordering::AcqRel);
                return Err(SubmitError::Signal);
            }
        }
        Ok(Ticket { seq_id, completion })
    }

    /// Has-work counts consumed and mark-completes signalled by unit `unit`.
    pub fn counts(&self, unit: usize) -> Option<(u32, u32)> {
        self.units
            .get(unit)
            .map(|u| (u.shared.consumed.load(Ordering::Acquire), u.shared.signalled.load(Ordering::Acquire)))
    }

    /// Stop: the request in flight on each unit finishes; the rest are answered
    /// `NRT_CLOSED`. Returns each unit's final health.
    pub fn shutdown(mut self) -> Vec<XuHealth> {
        self.stop()
    }

    fn stop(&mut self) -> Vec<XuHealth> {
        for u in &self.units {
            u.shared.closing.store(true, Ordering::Release);
        }
        self.units
            .iter_mut()
            .map(|u| u.worker.take().and_then(|w| w.join().ok()).unwrap_or(XuHealth::FatalShutdown))
            .collect()
    }
}

impl Drop for XuPool {
    fn drop(&mut self) {
        self.stop();
    }
}

fn worker_loop<D: ExecDevice>(shared: &Shared, mut dev: D, mut nq: Notifications, mut delay: AnyDelay) -> XuHealth {
    let mut xu = ExecUnit::new();
    let mut in_flight = false;
    loop {
        if shared.closing.load(Ordering::Acquire) && !in_flight {
            // Fail what was never started; nobody is left blocked.
            let rest: Vec<Slot> = shared.queue().drain(..).collect();
            for s in rest {
                let _ = shared.has_work.try_read();
                let _ = shared.answer(&s, NrtStatus::Closed);
            }
            return xu.health();
        }
        match xu.step(&mut dev, &mut nq, &mut QueueView(shared)) {
            XuStep::Idle => {
                in_flight = false;
                if !spin_until(|| shared.queued.load(Ordering::Acquire) > 0 || shared.closing.load(Ordering::Acquire)) {
                    let _ = shared.has_work.wait_readable(IDLE_POLL_MS);
                }
            }
            XuStep::InFlight => {
                in_flight = true;
                delay.delay_us(1);
            }
            XuStep::Completed { .. } => {
                in_flight = false;
                if let AnyDelay::Adaptive(d) = &mut delay {
                    d.reset();
                }
            }
        }
    }
}
