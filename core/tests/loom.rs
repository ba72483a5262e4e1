//! loom models of the two cross-thread handoffs of the completion engine
//! (completion-engine seed §6, §3.1):
//!
//! - the execution-unit handoff: a submitter posts has-work and blocks on the
//!   request's mark-complete; a worker thread spins `ExecUnit::step` (the real
//!   `tpb_xu_step`) over an `XuQueue` built from loom's mutex and condvars. Every
//!   request completes exactly once with its status, has-work and mark-complete
//!   stay paired, and no wake-up is lost (a lost one is a deadlock, which loom
//!   reports); a request that fails with a 2 degrades the unit and the next is
//!   answered 101.
//! - the tensor-completion counters with waiters: threads blocked until an output
//!   has `k` completions, the harvest side calling `TensorCompletions::record`
//!   whose waker notifies them. Every waiter wakes, no completion is counted twice.
//!
//! Run: `RUSTFLAGS="--cfg loom" cargo test --release -p nrt-core --features test-utils --test loom`
//! (`cargo xtask loom`).
#![cfg(loom)]

use std::collections::VecDeque;

use loom::sync::atomic::{AtomicU32, Ordering};
use loom::sync::{Arc, Condvar, Mutex};
use loom::thread;

use nrt_core::arch::Arch;
use nrt_core::exec::{ExecConfig, ExecUnit, TensorCompletions, XuHealth, XuQueue, XuSignalError, XuStep, XuWork};
use nrt_core::nq::Notifications;
use nrt_core::testutil::FakeDevice;
use nrt_core::NrtStatus;

const RING: u32 = 1024;

/// The XU work queue: the SPSC slots, the has-work count and each request's
/// mark-complete slot.
#[derive(Default)]
struct QState {
    pending: VecDeque<XuWork>,
    has_work: u64,
    /// Per request: the status its mark-complete published.
    done: [Option<NrtStatus>; 2],
    /// mark-complete signals so far.
    completions: u32,
    shutdown: bool,
}

#[derive(Default)]
struct Shared {
    st: Mutex<QState>,
    /// has-work posted (Linux: `has_work_efd`).
    work: Condvar,
    /// a mark-complete written (Linux: the slot's `mark_comp_efd`).
    done: Condvar,
}

/// The worker's side of the queue.
struct WorkerQueue(Arc<Shared>);

impl XuQueue for WorkerQueue {
    fn peek_current(&mut self) -> Option<XuWork> {
        self.0.st.lock().unwrap().pending.front().copied()
    }
    fn consume_has_work(&mut self) -> Result<(), XuSignalError> {
        let mut g = self.0.st.lock().unwrap();
        if g.has_work == 0 {
            return Err(XuSignalError::Underflow);
        }
        g.has_work -= 1;
        Ok(())
    }
    fn pop_current(&mut self, seq_id: u64, status: NrtStatus) -> Result<(), XuSignalError> {
        let mut g = self.0.st.lock().unwrap();
        let popped = g.pending.pop_front().expect("pop with nothing queued");
        assert_eq!(popped.seq_id, seq_id, "completed a request that is not the current one");
        let slot = &mut g.done[seq_id as usize];
        assert!(slot.is_none(), "request {seq_id} completed twice");
        *slot = Some(status);
        g.completions += 1;
        self.0.done.notify_all();
        Ok(())
    }
}

/// The submit path: queue the request, post has-work.
fn submit(sh: &Shared, seq_id: u64, config: ExecConfig) {
    let mut g = sh.st.lock().unwrap();
    g.pending.push_back(XuWork { seq_id, config });
    g.has_work += 1;
    sh.work.notify_one();
}

/// The submitter's blocking wait on the request's mark-complete.
fn wait(sh: &Shared, seq_id: u64) -> NrtStatus {
    let mut g = sh.st.lock().unwrap();
    loop {
        if let Some(s) = g.done[seq_id as usize] {
            return s;
        }
        g = sh.done.wait(g).unwrap();
    }
}

/// The worker thread: sleep until has-work, then step the unit until the request
/// completes; exit on shutdown once nothing is left. `healthy_requests` requests'
/// worth of START/END records are on the device's rings from the start.
fn worker(sh: Arc<Shared>, healthy_requests: u64) -> XuHealth {
    let mut dev = Box::new(FakeDevice::new(Arch::Sunda, RING));
    for i in 0..healthy_requests {
        dev.run_all(1, 10 + 20 * i, 20 + 20 * i);
    }
    let mut nq: Notifications = FakeDevice::notifications(RING);
    let mut xu = ExecUnit::new();
    let mut q = WorkerQueue(sh.clone());
    loop {
        {
            let mut g = sh.st.lock().unwrap();
            while g.has_work == 0 && !g.shutdown {
                g = sh.work.wait(g).unwrap();
            }
            if g.has_work == 0 {
                return xu.health();
            }
        }
        loop {
            match xu.step(&mut *dev, &mut nq, &mut q) {
                XuStep::Completed { .. } => break,
                XuStep::InFlight => {}
                XuStep::Idle => panic!("has-work posted but the queue is empty"),
            }
        }
    }
}

/// Spawn the worker on a stack that holds the fake device while it is built.
fn spawn_worker(sh: &Arc<Shared>, healthy_requests: u64) -> thread::JoinHandle<XuHealth> {
    let sh = sh.clone();
    thread::Builder::new().stack_size(1 << 20).spawn(move || worker(sh, healthy_requests)).unwrap()
}

fn shut_down(sh: &Shared) {
    let mut g = sh.st.lock().unwrap();
    g.shutdown = true;
    sh.work.notify_one();
}

/// A loom model with a preemption bound of 5 unless `LOOM_MAX_PREEMPTIONS` says
/// otherwise (5 explores every interleaving with up to five forced switches: a few
/// seconds here; the models' state space grows quickly past it).
fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(5);
    }
    b.check(f);
}

/// Two healthy requests, submitted one after the other while the worker runs:
/// each completes once with 0; has-work and mark-complete stay paired.
#[test]
fn xu_handoff_completes_each_request_once() {
    model(|| {
        let sh = Arc::new(Shared::default());
        let w = spawn_worker(&sh, 2);
        submit(&sh, 0, ExecConfig::new(Arch::Sunda, 1, 5));
        submit(&sh, 1, ExecConfig::new(Arch::Sunda, 1, 5));
        assert_eq!(wait(&sh, 0), NrtStatus::Success);
        assert_eq!(wait(&sh, 1), NrtStatus::Success);
        shut_down(&sh);
        assert_eq!(w.join().unwrap(), XuHealth::Healthy);
        let g = sh.st.lock().unwrap();
        assert_eq!(g.has_work, 0, "has-work and mark-complete paired");
        assert_eq!(g.completions, 2);
        assert!(g.pending.is_empty());
    });
}

/// A request that times out (a 2) degrades the unit; the one queued behind it is
/// answered 101, and both submitters are woken.
#[test]
fn xu_handoff_degrades_after_a_2_and_answers_101() {
    model(|| {
        let sh = Arc::new(Shared::default());
        let w = spawn_worker(&sh, 0); // nothing ever arrives
        submit(&sh, 0, ExecConfig::new(Arch::Sunda, 1, 0)); // a 0 s budget
        submit(&sh, 1, ExecConfig::new(Arch::Sunda, 1, 5));
        assert_eq!(wait(&sh, 1), NrtStatus::ExecUnitUnrecoverable);
        assert_eq!(wait(&sh, 0), NrtStatus::Timeout);
        shut_down(&sh);
        assert_eq!(w.join().unwrap(), XuHealth::FatalShutdown);
        let g = sh.st.lock().unwrap();
        assert_eq!((g.has_work, g.completions), (0, 2));
    });
}

/// Waiters blocked until an output has `k` completions (Linux: `nrt_get_tensor`
/// on a condvar) while the harvest records the device's tensor-completion records
/// and the waker notifies: nobody is left asleep, nothing is counted twice, and
/// the waker runs once per record.
#[test]
fn tensor_completion_waiters_are_woken() {
    model(|| {
        let cv = Arc::new(Condvar::new());
        let wakes = Arc::new(AtomicU32::new(0));
        let waker = {
            let (cv, wakes) = (cv.clone(), wakes.clone());
            move |_output: u16, _count: u32| {
                wakes.fetch_add(1, Ordering::Relaxed);
                cv.notify_all();
            }
        };
        let table = TensorCompletions::<2, _>::with_waker(&[70, 71], waker).unwrap();
        let table = Arc::new(Mutex::new(table));
        let waiter = |output: u16, k: u32| {
            let (table, cv) = (table.clone(), cv.clone());
            thread::spawn(move || {
                let mut g = table.lock().unwrap();
                while g.count(output) < k {
                    g = cv.wait(g).unwrap();
                }
                g.count(output)
            })
        };
        let a = waiter(0, 2);
        let b = waiter(1, 1);
        // The harvest side: three tensor-completion records.
        for var in [70u16, 71, 70] {
            let mut g = table.lock().unwrap();
            assert!(g.record(var).is_some());
        }
        assert_eq!(a.join().unwrap(), 2);
        assert_eq!(b.join().unwrap(), 1);
        let g = table.lock().unwrap();
        assert_eq!((g.count(0), g.count(1)), (2, 1), "no completion counted twice");
        assert_eq!(wakes.load(Ordering::Relaxed), 3);
    });
}
