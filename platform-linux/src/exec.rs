//! Executions of a runtime's own work: an [`Exec`], copies then the kickoff,
//! run at once with [`Session::execute`] or submitted to a [`Stream`], which
//! runs them in order on its worker thread and completes each through a
//! waitable [`Pending`], a descriptor for `poll`, and a callback.
//!
//! Invariants: `submit` never blocks, a full stream answering
//! [`Error::QueueFull`] at once; executions complete in submission order; the
//! memory an execution copies lives until it is done, whoever else drops it;
//! one execution runs at a time, on the worker or on a thread whose wait found
//! the stream idle; a callback runs on that thread with no lock held, after
//! its execution's result is in, so it may submit or wait; a panic in an
//! execution or a callback is caught and never stops the stream.

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::api_error::Error;
use crate::fork::Owner;
use crate::mem::Mem;
use crate::session::{Inference, Session};
use crate::sys::EventFd;

/// Executions a stream holds at once, queued or running: G-EXEC-DEPTH.
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
    /// An execution of no copies: the kickoff alone.
    pub fn new() -> Exec {
        Exec::default()
    }

    /// Add a copy, checked when the execution runs.
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

/// Called once when the execution is done, on the thread that ran it: the
/// worker, or a thread whose wait ran it.
pub type Callback = Box<dyn FnOnce(&ExecResult) + Send>;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A submitted execution's completion, and its descriptor once asked for.
#[derive(Default)]
struct SlotState {
    result: Option<Arc<ExecResult>>,
    fd: Option<EventFd>,
}

struct Slot {
    state: Mutex<SlotState>,
    done: Condvar,
    /// The stream, for a wait that runs queued executions itself.
    stream: Weak<Shared>,
    site: String,
    owner: Owner,
}

impl Slot {
    /// Set the result; signal the waiters and the descriptor.
    fn finish(&self, result: Arc<ExecResult>) {
        let mut s = lock(&self.state);
        s.result = Some(result);
        if let Some(fd) = &s.fd {
            if let Err(e) = fd.write(1) {
                log::warn!("nrt: {}: signalling an execution's descriptor: {e}", self.site);
            }
        }
        drop(s);
        self.done.notify_all();
    }
}

/// A submitted execution: wait on it, poll it, or watch its descriptor.
#[derive(Clone)]
pub struct Pending(Arc<Slot>);

impl Pending {
    /// Whether its result is in; its callback may still be running.
    pub fn is_done(&self) -> bool {
        lock(&self.0.state).result.is_some()
    }

    /// Block until it is done; each execution is bounded by its copies'
    /// marker budgets and the session's timeout. While the stream runs
    /// nothing, the waiting thread runs the executions queued ahead of it and
    /// its own itself, their callbacks too. Refused at once in a forked child.
    pub fn wait(&self) -> Arc<ExecResult> {
        self.wait_until(None).unwrap_or_else(|| Arc::new(Err(Error::handle("wait", &self.0.site, "no result"))))
    }

    /// [`wait`](Self::wait) for at most `limit`; `None` when it is not done by then.
    pub fn wait_timeout(&self, limit: Duration) -> Option<Arc<ExecResult>> {
        self.wait_until(Some(Instant::now() + limit))
    }

    fn wait_until(&self, deadline: Option<Instant>) -> Option<Arc<ExecResult>> {
        const CALL: &str = "nrt_exec_wait";
        if let Err(source) = self.0.owner.check("execution") {
            return Some(Arc::new(Err(Error::Forked { call: CALL, source })));
        }
        loop {
            if let Some(r) = &lock(&self.0.state).result {
                return Some(Arc::clone(r));
            }
            // Run what is first in line while nothing runs, this one included.
            let Some(shared) = self.0.stream.upgrade() else { break };
            let Some(item) = take_next(&shared) else { break };
            run(&shared, item);
        }
        let mut s = lock(&self.0.state);
        loop {
            if let Some(r) = &s.result {
                return Some(Arc::clone(r));
            }
            s = match deadline {
                None => self.0.done.wait(s).unwrap_or_else(PoisonError::into_inner),
                Some(d) => {
                    let left = d.checked_duration_since(Instant::now())?;
                    self.0.done.wait_timeout(s, left).unwrap_or_else(PoisonError::into_inner).0
                }
            };
        }
    }

    /// The result if done.
    pub fn try_result(&self) -> Option<Arc<ExecResult>> {
        lock(&self.0.state).result.clone()
    }

    /// A descriptor readable once the execution is done, made at the first
    /// call and closed with the handle's last clone; draining it takes the signal.
    pub fn fd(&self) -> Result<std::os::fd::RawFd, Error> {
        const CALL: &str = "nrt_exec_fd";
        self.0.owner.check("execution").map_err(|source| Error::Forked { call: CALL, source })?;
        let mut s = lock(&self.0.state);
        if s.fd.is_none() {
            let fd = EventFd::new(false).map_err(|e| Error::Os(crate::LinuxError::new("eventfd", &*self.0.site, e)))?;
            if s.result.is_some() {
                fd.write(1).map_err(|e| Error::Os(crate::LinuxError::new("eventfd write", &*self.0.site, e)))?;
            }
            s.fd = Some(fd);
        }
        Ok(s.fd.as_ref().map_or(-1, EventFd::raw_fd))
    }
}

/// The queue between `submit` and the worker.
#[derive(Default)]
struct Queue {
    waiting: VecDeque<Item>,
    /// Queued or running.
    held: usize,
    /// One execution is running, on the worker or a waiting thread.
    running: bool,
    stop: bool,
}

/// A queued execution, its completion and its callback.
type Item = (Exec, Arc<Slot>, Option<Callback>);

struct Shared {
    session: Mutex<Session>,
    /// Allocations, made without waiting for the execution running.
    allocator: crate::mem::Allocator,
    /// Why the session can run no more work; a submit is then refused at once.
    unusable: Mutex<Option<String>>,
    queue: Mutex<Queue>,
    work: Condvar,
    site: String,
}

/// A session whose executions run in order on a worker thread of their own.
/// Shareable in an `Arc`: every call takes `&self`.
pub struct Stream {
    shared: Arc<Shared>,
    worker: Mutex<Option<JoinHandle<()>>>,
    owner: Owner,
}

impl Stream {
    /// A stream over `session`; its worker starts at the first submit.
    pub fn new(session: Session) -> Stream {
        let site = session.site_name();
        let allocator = session.allocator();
        Stream {
            shared: Arc::new(Shared {
                allocator,
                unusable: Mutex::new(session.unusable().map(str::to_string)),
                session: Mutex::new(session),
                queue: Mutex::new(Queue::default()),
                work: Condvar::new(),
                site,
            }),
            worker: Mutex::new(None),
            owner: Owner::here(),
        }
    }

    /// The session, for its synchronous calls; waits for the execution running, if any.
    pub fn session(&self) -> MutexGuard<'_, Session> {
        lock(&self.shared.session)
    }

    /// Allocate memory for the session's copies without waiting for the execution running.
    pub fn alloc(&self, kind: crate::mem::MemKind, size: u64) -> Result<Mem, Error> {
        self.owner.check("stream").map_err(|source| Error::Forked { call: "nrt_mem_alloc", source })?;
        if lock(&self.shared.queue).stop {
            return Err(Error::handle("nrt_mem_alloc", &self.shared.site, "the session is closing"));
        }
        self.shared.allocator.alloc(kind, size)
    }

    /// Executions queued or running.
    pub fn in_flight(&self) -> usize {
        lock(&self.shared.queue).held
    }

    /// Queue `exec`; `on_done` runs once it is done. Returns at once:
    /// [`Error::QueueFull`] when [`STREAM_DEPTH`] are held.
    pub fn submit(&self, exec: Exec, on_done: Option<Callback>) -> Result<Pending, Error> {
        const CALL: &str = "nrt_exec_submit";
        self.owner.check("stream").map_err(|source| Error::Forked { call: CALL, source })?;
        let slot = Arc::new(Slot {
            state: Mutex::default(),
            done: Condvar::new(),
            stream: Arc::downgrade(&self.shared),
            site: self.shared.site.clone(),
            owner: self.owner,
        });
        if let Some(why) = lock(&self.shared.unusable).clone() {
            return Err(Error::Unusable { call: CALL, site: self.shared.site.clone(), why });
        }
        {
            let mut q = lock(&self.shared.queue);
            if q.stop {
                return Err(Error::handle(CALL, &self.shared.site, "the stream is closing"));
            }
            if q.held >= STREAM_DEPTH {
                return Err(Error::QueueFull { site: self.shared.site.clone(), in_flight: q.held });
            }
            q.held += 1;
            q.waiting.push_back((exec, Arc::clone(&slot), on_done));
        }
        let mut worker = lock(&self.worker);
        if worker.is_none() {
            let shared = Arc::clone(&self.shared);
            match std::thread::Builder::new().name("nrt-stream".into()).spawn(move || work(&shared)) {
                Ok(h) => *worker = Some(h),
                Err(e) => {
                    let mut q = lock(&self.shared.queue);
                    q.waiting.pop_back();
                    q.held -= 1;
                    return Err(Error::Os(crate::LinuxError::new("thread spawn", &*self.shared.site, e)));
                }
            }
        }
        drop(worker);
        self.shared.work.notify_one();
        Ok(Pending(slot))
    }

    /// Finish the execution running, end the queued ones unrun with
    /// [`Error::Closed`], stop the worker and close the session, returning
    /// every release that failed. From the stream's own callback, the worker
    /// closes the session when it has finished.
    pub fn close(self) -> Result<(), Vec<crate::LinuxError>> {
        if let Err(f) = self.owner.check("session") {
            // The parent's stream and session: forgotten here, nothing released, G-FORK.
            let site = self.shared.site.clone();
            std::mem::forget(self);
            return Err(vec![f.into_linux("close", site)]);
        }
        self.stop();
        let shared = Arc::clone(&self.shared);
        drop(self);
        match Arc::into_inner(shared) {
            Some(s) => s.session.into_inner().unwrap_or_else(PoisonError::into_inner).close(),
            None => Ok(()),
        }
    }

    fn stop(&self) {
        let handle = lock(&self.worker).take();
        if self.owner.inherited() {
            // The parent's worker: this child has no such thread, G-FORK.
            std::mem::forget(handle);
            return;
        }
        let unrun: Vec<Item> = {
            let mut q = lock(&self.shared.queue);
            q.stop = true;
            let unrun: Vec<Item> = q.waiting.drain(..).collect();
            q.held -= unrun.len();
            unrun
        };
        self.shared.work.notify_all();
        for (exec, slot, on_done) in unrun {
            drop(exec);
            let result = Arc::new(Err(Error::Closed { site: self.shared.site.clone() }));
            slot.finish(Arc::clone(&result));
            if let Some(cb) = on_done {
                if catch_unwind(AssertUnwindSafe(|| cb(&result))).is_err() {
                    log::error!("nrt: {}: an execution's callback panicked; the stream goes on", self.shared.site);
                }
            }
        }
        match handle {
            // From the worker itself, a callback having dropped its stream: it ends on its own.
            Some(h) if h.thread().id() == std::thread::current().id() => drop(h),
            Some(h) => {
                let _ = h.join();
            }
            None => {}
        }
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The first execution in line, taken, when none runs.
fn take_next(shared: &Shared) -> Option<Item> {
    let mut q = lock(&shared.queue);
    if q.running {
        return None;
    }
    let item = q.waiting.pop_front()?;
    q.running = true;
    Some(item)
}

/// Run a taken execution: its result, its place freed, its waiters woken,
/// then its callback.
fn run(shared: &Shared, (exec, slot, on_done): Item) {
    let ran = catch_unwind(AssertUnwindSafe(|| {
        let mut session = lock(&shared.session);
        let r = session.execute(&exec);
        if let Some(why) = session.unusable() {
            *lock(&shared.unusable) = Some(why.to_string());
        }
        r
    }));
    let result = Arc::new(ran.unwrap_or_else(|_| {
        Err(Error::handle("nrt_exec_submit", &shared.site, "the execution panicked (a bug: please report it)"))
    }));
    drop(exec);
    // Its place is free before its waiters wake: a waiter may submit at once.
    {
        let mut q = lock(&shared.queue);
        q.held -= 1;
        q.running = false;
    }
    shared.work.notify_all();
    slot.finish(Arc::clone(&result));
    if let Some(cb) = on_done {
        if catch_unwind(AssertUnwindSafe(|| cb(&result))).is_err() {
            log::error!("nrt: {}: an execution's callback panicked; the stream goes on", shared.site);
        }
    }
}

/// The worker: the executions, in order, until stopped with none held.
fn work(shared: &Shared) {
    loop {
        let next = {
            let mut q = lock(&shared.queue);
            loop {
                if !q.running {
                    if let Some(n) = q.waiting.pop_front() {
                        q.running = true;
                        break Some(n);
                    }
                    if q.stop {
                        break None;
                    }
                }
                q = shared.work.wait(q).unwrap_or_else(PoisonError::into_inner);
            }
        };
        let Some(item) = next else { return };
        run(shared, item);
    }
}
