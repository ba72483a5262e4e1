//! Executions of a runtime's own work: an [`Exec`] (copies, then the kickoff
//! of the session's cores) run at once ([`Session::execute`]) or submitted to
//! a [`Stream`], which runs them in order on its worker thread and completes
//! each through a waitable [`Pending`], an eventfd for `poll`/`epoll`, and a
//! callback.
//!
//! Invariants: `submit` never blocks (a full stream answers
//! [`Error::QueueFull`] at once); executions complete in submission order; the
//! memory an execution copies lives until it is done, whoever else drops it;
//! a callback runs on the worker with no lock held, so it may submit or wait.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use crate::api_error::Error;
use crate::mem::Mem;
use crate::session::{Inference, Session};
use crate::sys::EventFd;

/// Executions a stream holds at once, queued or running (G-EXEC-DEPTH).
pub const STREAM_DEPTH: usize = 16;

/// One copy of an execution: `len` bytes from `src` at `src_off` to `dst` at `dst_off`.
#[derive(Clone, Debug)]
pub struct CopyOp {
    /// The destination.
    pub dst: Mem,
    /// Byte offset in the destination.
    pub dst_off: u64,
    /// The source.
    pub src: Mem,
    /// Byte offset in the source.
    pub src_off: u64,
    /// Bytes.
    pub len: u64,
}

/// The work of one execution: its copies, in order, then the kickoff.
#[derive(Clone, Debug, Default)]
pub struct Exec {
    copies: Vec<CopyOp>,
}

impl Exec {
    /// An execution of no copies (the kickoff alone).
    pub fn new() -> Exec {
        Exec::default()
    }

    /// Add a copy (checked when the execution runs).
    pub fn copy(&mut self, dst: &Mem, dst_off: u64, src: &Mem, src_off: u64, len: u64) -> &mut Exec {
        self.copies.push(CopyOp { dst: dst.clone(), dst_off, src: src.clone(), src_off, len });
        self
    }

    /// The copies, in order.
    pub fn copies(&self) -> &[CopyOp] {
        &self.copies
    }
}

/// What a finished execution gives: its outcome, or why it could not run.
pub type ExecResult = Result<Inference, Error>;

/// Called once on the worker when the execution is done.
pub type Callback = Box<dyn FnOnce(&ExecResult) + Send>;

/// One submitted execution's completion: its result once done, the eventfd.
struct Slot {
    result: Mutex<Option<Arc<ExecResult>>>,
    done: Condvar,
    fd: EventFd,
}

/// A submitted execution: wait on it, poll it, or watch its descriptor.
#[derive(Clone)]
pub struct Pending(Arc<Slot>);

impl Pending {
    /// Whether it is done.
    pub fn is_done(&self) -> bool {
        self.lock().is_some()
    }

    /// Block until it is done (each execution is bounded by its copies'
    /// marker budgets and the session's timeout), then look at the result.
    pub fn wait(&self) -> Arc<ExecResult> {
        let mut g = self.lock();
        loop {
            if let Some(r) = g.as_ref() {
                return Arc::clone(r);
            }
            g = self.0.done.wait(g).unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    /// The result if done (`None`: still running or queued).
    pub fn try_result(&self) -> Option<Arc<ExecResult>> {
        self.lock().clone()
    }

    /// A descriptor readable (`POLLIN`) once the execution is done; it stays
    /// readable, and is this handle's (closed with its last clone).
    pub fn fd(&self) -> std::os::fd::RawFd {
        self.0.fd.raw_fd()
    }

    fn lock(&self) -> MutexGuard<'_, Option<Arc<ExecResult>>> {
        self.0.result.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The queue between `submit` and the worker.
#[derive(Default)]
struct Queue {
    waiting: VecDeque<(Exec, Arc<Slot>, Option<Callback>)>,
    /// Queued or running.
    held: usize,
    stop: bool,
}

struct Shared {
    session: Mutex<Session>,
    queue: Mutex<Queue>,
    work: Condvar,
    site: String,
}

/// A session whose executions run in order on a worker thread of their own.
pub struct Stream {
    shared: Arc<Shared>,
    /// Started by the first submit; behind a lock so `submit` takes `&self`
    /// (a C caller submits from any thread, a callback included).
    worker: Mutex<Option<JoinHandle<()>>>,
    owner: crate::fork::Owner,
}

impl Stream {
    /// A stream over `session` (its worker starts at the first submit).
    pub fn new(session: Session) -> Stream {
        let site = session.site_name();
        Stream {
            shared: Arc::new(Shared {
                session: Mutex::new(session),
                queue: Mutex::new(Queue::default()),
                work: Condvar::new(),
                site,
            }),
            worker: Mutex::new(None),
            owner: crate::fork::Owner::here(),
        }
    }

    /// The session, for its synchronous calls (allocations, copies): waits
    /// for the execution running, if any.
    pub fn session(&self) -> MutexGuard<'_, Session> {
        self.shared.session.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Executions queued or running.
    pub fn in_flight(&self) -> usize {
        self.queue().held
    }

    /// Queue `exec`; `on_done` runs on the worker once it is done. Returns at
    /// once: [`Error::QueueFull`] when [`STREAM_DEPTH`] are held.
    pub fn submit(&self, exec: Exec, on_done: Option<Callback>) -> Result<Pending, Error> {
        const CALL: &str = "nrt_exec_submit";
        self.owner.check("stream").map_err(|source| Error::Forked { call: CALL, source })?;
        let fd = EventFd::new(false)
            .map_err(|e| Error::Os(crate::LinuxError::new("eventfd", self.shared.site.clone(), e)))?;
        let slot = Arc::new(Slot { result: Mutex::new(None), done: Condvar::new(), fd });
        {
            let mut q = self.queue();
            if q.held >= STREAM_DEPTH {
                return Err(Error::QueueFull { site: self.shared.site.clone(), in_flight: q.held });
            }
            q.held += 1;
            q.waiting.push_back((exec, Arc::clone(&slot), on_done));
        }
        let mut worker = self.worker.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if worker.is_none() {
            let shared = Arc::clone(&self.shared);
            let spawned = std::thread::Builder::new().name("nrt-stream".into()).spawn(move || work(&shared));
            match spawned {
                Ok(h) => *worker = Some(h),
                Err(e) => {
                    let mut q = self.queue();
                    q.waiting.pop_back();
                    q.held -= 1;
                    return Err(Error::Os(crate::LinuxError::new("thread spawn", self.shared.site.clone(), e)));
                }
            }
        }
        drop(worker);
        self.shared.work.notify_one();
        Ok(Pending(slot))
    }

    /// Finish the executions held, stop the worker and close the session
    /// (every release that failed is returned).
    pub fn close(mut self) -> Result<(), Vec<crate::LinuxError>> {
        self.stop();
        let shared = Arc::clone(&self.shared);
        drop(self);
        match Arc::into_inner(shared) {
            Some(s) => s.session.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner).close(),
            // Not reached: the worker, the only other holder, was joined.
            None => Ok(()),
        }
    }

    fn stop(&mut self) {
        let worker = self.worker.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        if self.owner.inherited() {
            // The parent's worker: this child has no such thread (G-FORK).
            std::mem::forget(worker);
            return;
        }
        self.queue().stop = true;
        self.shared.work.notify_all();
        if let Some(h) = worker {
            let _ = h.join();
        }
    }

    fn queue(&self) -> MutexGuard<'_, Queue> {
        self.shared.queue.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The worker: the executions, in order, until stopped with none held.
fn work(shared: &Shared) {
    loop {
        let next = {
            let mut q = shared.queue.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            loop {
                if let Some(n) = q.waiting.pop_front() {
                    break Some(n);
                }
                if q.stop {
                    break None;
                }
                q = shared.work.wait(q).unwrap_or_else(std::sync::PoisonError::into_inner);
            }
        };
        let Some((exec, slot, on_done)) = next else { return };
        let result = {
            let mut s = shared.session.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            s.execute(&exec)
        };
        drop(exec);
        let result = Arc::new(result);
        *slot.result.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Arc::clone(&result));
        slot.done.notify_all();
        if let Err(e) = slot.fd.write(1) {
            log::warn!("nrt: {}: signalling an execution's descriptor: {e}", shared.site);
        }
        shared.queue.lock().unwrap_or_else(std::sync::PoisonError::into_inner).held -= 1;
        if let Some(cb) = on_done {
            cb(&result);
        }
    }
}
