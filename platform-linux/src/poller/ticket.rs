//! A request's handoff from the poller thread to its waiter.
//!
//! The poller publishes the status and then `done`; a spinning waiter sees it
//! with no syscall. A waiter that stops spinning sets `sleeper` first, and the
//! poller writes its eventfd only then. Both sides load and store `done` and
//! `sleeper` with `SeqCst`, so either the poller sees the sleeper or the sleeper
//! sees `done`: no wake-up is lost.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use nrt_core::exec::Step;
use nrt_core::NrtStatus;

use super::IDLE_BLOCK_MS;
use crate::fork::{ForkedChild, Owner};
use crate::sys::EventFd;

/// One request's handoff from the poller to its waiter.
#[derive(Debug, Default)]
pub(super) struct Handoff {
    pub(super) done: AtomicBool,
    pub(super) status: AtomicU32,
    pub(super) step: AtomicU8,
    /// The poller's clock when it saw the completion, ns since its origin.
    pub(super) noticed_ns: AtomicU64,
    pub(super) sleeper: AtomicBool,
    pub(super) efd: OnceLock<Option<EventFd>>,
}

/// Whether the poller thread is still there to answer; cleared however it ends.
#[derive(Debug)]
pub(super) struct Alive(pub(super) AtomicBool);

/// A submitted request; wait for it with [`Ticket::wait`].
#[derive(Debug, Clone)]
pub struct Ticket {
    pub(super) handoff: Arc<Handoff>,
    pub(super) spin_for: Duration,
    pub(super) alive: Arc<Alive>,
    /// The process that submitted it.
    pub(super) owner: Owner,
}

/// Why a wait on a [`Ticket`] is refused at once (G-POLLER-REENTRY).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitRefused {
    /// In a child forked after the submission: the poller thread is not in it.
    Forked(ForkedChild),
    /// On the poller's own thread, in a lane's callback: it would wait on itself.
    OnPollerThread,
}

impl WaitRefused {
    /// The status [`Ticket::wait`] answers with: `NRT_INVALID_HANDLE` in a
    /// forked child, `NRT_FAILURE` on the poller's thread.
    pub fn status(self) -> NrtStatus {
        match self {
            WaitRefused::Forked(_) => NrtStatus::InvalidHandle,
            WaitRefused::OnPollerThread => NrtStatus::Failure,
        }
    }
}

impl std::fmt::Display for WaitRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WaitRefused::Forked(e) => e.fmt(f),
            WaitRefused::OnPollerThread => f.write_str(
                "the ticket's poller thread is the calling thread (a lane's callback): the wait would wait on \
                 itself; poll it instead, or wait from another thread",
            ),
        }
    }
}

impl std::error::Error for WaitRefused {}

impl Ticket {
    /// `Err` when this thread may not wait for the ticket.
    pub fn waitable(&self) -> Result<(), WaitRefused> {
        self.owner.check("ticket").map_err(WaitRefused::Forked)?;
        if on_poller_thread(&self.alive) {
            return Err(WaitRefused::OnPollerThread);
        }
        Ok(())
    }

    /// The result, once the request completed.
    pub fn try_result(&self) -> Option<Step> {
        if !self.handoff.done.load(Ordering::SeqCst) {
            return None;
        }
        let status = NrtStatus::from_code(self.handoff.status.load(Ordering::Acquire));
        Some(match self.handoff.step.load(Ordering::Acquire) {
            0 => Step::Done(status),
            _ => Step::failed(status),
        })
    }

    /// When the poller saw the completion, ns since [`Poller::origin`](super::Poller::origin).
    pub fn noticed_ns(&self) -> Option<u64> {
        self.try_result().map(|_| self.handoff.noticed_ns.load(Ordering::Acquire))
    }

    /// Look without waiting: the result, `NRT_EXEC_UNIT_UNRECOVERABLE` when the
    /// poller thread died, or `None` while in flight. In a forked child it
    /// answers `NRT_INVALID_HANDLE` at once.
    pub fn poll(&self) -> Option<Step> {
        if let Err(f) = self.owner.check("ticket") {
            return Some(Step::failed(WaitRefused::Forked(f).status()));
        }
        self.look()
    }

    /// [`poll`](Self::poll) without the fork check, for the wait's spin.
    fn look(&self) -> Option<Step> {
        if let Some(r) = self.try_result() {
            return Some(r);
        }
        if !self.alive.0.load(Ordering::SeqCst) {
            // It may have answered just before it ended.
            return Some(self.try_result().unwrap_or(Step::failed(NrtStatus::ExecUnitUnrecoverable)));
        }
        None
    }

    /// Wait for the result: spin for the configured time, then sleep on an
    /// eventfd. `NRT_EXEC_UNIT_UNRECOVERABLE` if the poller thread died; where
    /// [`Ticket::waitable`] refuses, the refusal's status at once, logged.
    pub fn wait(&self) -> Step {
        if let Err(e) = self.waitable() {
            log::error!("poller ticket wait refused: {e}");
            return Step::failed(e.status());
        }
        let t0 = Instant::now();
        loop {
            if let Some(r) = self.look() {
                return r;
            }
            if t0.elapsed() >= self.spin_for {
                break;
            }
            std::hint::spin_loop();
        }
        let efd = self.handoff.efd.get_or_init(|| EventFd::new(false).ok());
        self.handoff.sleeper.store(true, Ordering::SeqCst);
        loop {
            if let Some(r) = self.look() {
                return r;
            }
            match efd {
                // The timeout is a backstop only: the poller writes the eventfd.
                Some(e) => {
                    let _ = e.wait_readable(IDLE_BLOCK_MS);
                    let _ = e.try_read();
                }
                // No eventfd to be had: sleep and look again.
                None => std::thread::sleep(Duration::from_micros(50)),
            }
        }
    }
}

thread_local! {
    /// On a poller thread, the address of its poller's [`Alive`], else 0. Its
    /// tickets keep that address alive, so it is never another poller's.
    static POLLER_OF_THREAD: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Whether the calling thread is the thread of the poller whose [`Alive`] is `alive`.
pub(super) fn on_poller_thread(alive: &Arc<Alive>) -> bool {
    POLLER_OF_THREAD.try_with(|p| p.get() == Arc::as_ptr(alive) as usize).unwrap_or(false)
}

/// Marks the calling thread as the thread of the poller whose [`Alive`] is `alive`.
pub(super) fn mark_poller_thread(alive: &Arc<Alive>) {
    let _ = POLLER_OF_THREAD.try_with(|p| p.set(Arc::as_ptr(alive) as usize));
}

/// Marks the poller dead when the thread ends, however it ends.
pub(super) struct AliveGuard(pub(super) Arc<Alive>);

impl Drop for AliveGuard {
    fn drop(&mut self) {
        self.0 .0.store(false, Ordering::SeqCst);
    }
}
