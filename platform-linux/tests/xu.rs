//! Execution units on real threads and eventfds: many concurrent submitters,
//! every request completes exactly once with its own status.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use nrt_core::arch::Arch;
use nrt_core::event::Event;
use nrt_core::exec::{ExecConfig, XuHealth};
use nrt_core::hal::{self, ErrorKind, ErrorType};
use nrt_core::nq::{ErrorEntry, Notifications};
use nrt_core::testutil::FakeDevice;
use nrt_core::{NrtError, NrtStatus};
use nrt_linux::time::DelayKind;
use nrt_linux::xu::{SubmitError, XuPool};

const RING: u32 = 1024;

#[derive(Clone, Copy, Debug)]
enum Program {
    Healthy,
    Nan,
    Hang,
}

impl Program {
    fn expect(self) -> NrtStatus {
        match self {
            Program::Healthy => NrtStatus::Success,
            Program::Nan => NrtStatus::ExecCompletedWithNumErr,
            Program::Hang => NrtStatus::Timeout,
        }
    }
}

/// A fake device that plays the next queued program when a request passes its barrier.
struct ScriptDevice {
    dev: Box<FakeDevice>,
    clock: nrt_linux::time::MonotonicClock,
    programs: Arc<Mutex<VecDeque<Program>>>,
}

impl ErrorType for ScriptDevice {
    type Error = ErrorKind;
}
impl hal::NqRings for ScriptDevice {
    fn read_slot(&mut self, c: u8, n: u8, off: u32, out: &mut [u8; 16]) -> Result<(), ErrorKind> {
        self.dev.read_slot(c, n, off, out)
    }
    fn write_head(&mut self, c: u8, n: u8, head: u32) -> Result<(), ErrorKind> {
        self.dev.write_head(c, n, head)
    }
}
impl hal::IntcCause for ScriptDevice {
    fn read_cause(&mut self, c: u8, b: u32, l: u32) -> Result<u32, ErrorKind> {
        self.dev.read_cause(c, b, l)
    }
}
impl hal::Clock for ScriptDevice {
    fn now_ns(&self) -> u64 {
        // Real time, so timeouts happen.
        self.clock.now_ns()
    }
}
impl hal::CollectivesProxy for ScriptDevice {
    fn barrier_status(&mut self, core: u8) -> Result<bool, NrtError> {
        if core == 0 {
            let p = self.programs.lock().unwrap().pop_front().expect("a program per request");
            let t = self.dev.now.get() + self.clock.now_ns();
            match p {
                Program::Healthy => self.dev.run_all(1, t, t + 10),
                Program::Nan => {
                    self.dev.run_all(1, t, t + 10);
                    self.dev.error(0, ErrorEntry::new(1, 0, 0, t));
                }
                Program::Hang => {}
            }
            self.dev.advance_ns(1_000);
        }
        Ok(true)
    }
    fn network_status(&mut self, _: u8) -> Result<bool, NrtError> {
        Ok(true)
    }
}
impl hal::FaultProbe for ScriptDevice {}
impl<E: Copy + Into<Event>> hal::EventSink<E> for ScriptDevice {
    fn event(&mut self, e: &E) {
        self.dev.event(e)
    }
}
impl nrt_core::counters::CounterSink for ScriptDevice {}

impl hal::TensorNotify for ScriptDevice {
    fn tensor_completed(&mut self, c: u8, v: u16) -> Option<(u16, u32)> {
        self.dev.tensor_completed(c, v)
    }
}

use hal::Clock as _;

fn pool(units: usize) -> (XuPool, Vec<Arc<Mutex<VecDeque<Program>>>>) {
    let mut devs = Vec::new();
    let mut scripts = Vec::new();
    for _ in 0..units {
        let programs = Arc::new(Mutex::new(VecDeque::new()));
        scripts.push(Arc::clone(&programs));
        let nq: Notifications = FakeDevice::notifications(RING);
        devs.push((
            ScriptDevice {
                dev: Box::new(FakeDevice::new(Arch::Sunda, RING)),
                clock: nrt_linux::time::MonotonicClock::new(),
                programs,
            },
            nq,
        ));
    }
    (XuPool::start(devs, DelayKind::Adaptive).unwrap(), scripts)
}

#[test]
fn many_concurrent_submitters_each_request_completes_once_with_its_status() {
    const UNITS: usize = 4;
    const THREADS: usize = 8;
    const PER_THREAD: usize = 40;
    let (pool, scripts) = pool(UNITS);
    let pool = Arc::new(pool);
    let locks: Arc<Vec<Mutex<()>>> = Arc::new((0..UNITS).map(|_| Mutex::new(())).collect());
    let mut handles = Vec::new();
    for t in 0..THREADS {
        let (pool, scripts, locks) = (Arc::clone(&pool), scripts.clone(), Arc::clone(&locks));
        handles.push(std::thread::spawn(move || {
            let mut seen = Vec::new();
            for i in 0..PER_THREAD {
                let unit = (t + i) % UNITS;
                let program = if (t * 7 + i) % 3 == 0 { Program::Nan } else { Program::Healthy };
                let ticket = {
                    // Program and request enter the unit's FIFO together.
                    let _g = locks[unit].lock().unwrap();
                    scripts[unit].lock().unwrap().push_back(program);
                    pool.submit(unit, ExecConfig::new(Arch::Sunda, 1, 5)).unwrap()
                };
                seen.push((ticket.seq_id(), program.expect(), ticket));
            }
            seen.into_iter().map(|(seq, want, tk)| (seq, want, tk.wait())).collect::<Vec<_>>()
        }));
    }
    let mut seqs = Vec::new();
    for h in handles {
        for (seq, want, got) in h.join().unwrap() {
            assert_eq!(got, want, "request {seq}");
            seqs.push(seq);
        }
    }
    seqs.sort_unstable();
    seqs.dedup();
    assert_eq!(seqs.len(), THREADS * PER_THREAD, "no request lost or delivered twice");
    let mut total = 0;
    for u in 0..UNITS {
        let (consumed, signalled) = pool.counts(u).unwrap();
        assert_eq!(consumed, signalled, "has-work and mark-complete stay paired on unit {u}");
        total += signalled;
    }
    assert_eq!(total as usize, THREADS * PER_THREAD);
    let pool = Arc::into_inner(pool).unwrap();
    assert_eq!(pool.shutdown(), vec![XuHealth::Healthy; UNITS]);
}

#[test]
fn a_fatal_unit_answers_101_and_shutdown_leaves_nobody_blocked() {
    let (pool, scripts) = pool(1);
    // A hang with a 0 s budget: the request fails with 5 (one-step 2) and the unit degrades.
    scripts[0].lock().unwrap().push_back(Program::Hang);
    let first = pool.submit(0, ExecConfig::new(Arch::Sunda, 1, 0)).unwrap();
    assert_eq!(first.wait(), NrtStatus::Timeout);
    let later: Vec<_> = (0..5).map(|_| pool.submit(0, ExecConfig::new(Arch::Sunda, 1, 5)).unwrap()).collect();
    for t in later {
        assert_eq!(t.wait(), NrtStatus::ExecUnitUnrecoverable);
    }
    assert_eq!(pool.shutdown(), vec![XuHealth::FatalShutdown]);
}

#[test]
fn shutdown_finishes_the_request_in_flight_and_closes_the_rest() {
    let (pool, scripts) = pool(1);
    // The first request hangs for its 1 s budget; the others wait behind it.
    scripts[0].lock().unwrap().extend([Program::Hang, Program::Healthy, Program::Healthy]);
    let tickets: Vec<_> = (0..3).map(|_| pool.submit(0, ExecConfig::new(Arch::Sunda, 1, 1)).unwrap()).collect();
    std::thread::sleep(std::time::Duration::from_millis(100));
    let health = std::thread::spawn(move || pool.shutdown());
    let got: Vec<NrtStatus> = tickets.into_iter().map(|t| t.wait()).collect();
    assert_eq!(got[0], NrtStatus::Timeout, "in flight: finished");
    assert_eq!(&got[1..], &[NrtStatus::Closed, NrtStatus::Closed], "queued: answered NRT_CLOSED");
    assert_eq!(health.join().unwrap(), vec![XuHealth::FatalShutdown]);
}

#[test]
fn submit_after_close_and_to_a_missing_unit_is_refused() {
    let (pool, _) = pool(1);
    assert_eq!(pool.submit(3, ExecConfig::new(Arch::Sunda, 1, 5)).unwrap_err(), SubmitError::NoSuchUnit(3));
    drop(pool);
}
