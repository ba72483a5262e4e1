//! The async path: submit-to-complete round trip of one request through an
//! execution unit, a worker thread with eventfd has-work and mark-complete, and
//! requests per second with 1, 4 and 16 units on the machine's cores.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nrt_core::arch::Arch;
use nrt_core::event::Event;
use nrt_core::exec::ExecConfig;
use nrt_core::hal::{self, ErrorKind, ErrorType};
use nrt_core::nq::Notifications;
use nrt_core::testutil::FakeDevice;
use nrt_core::{NrtError, NrtStatus};
use nrt_linux::time::DelayKind;
use nrt_linux::xu::XuPool;
use serde_json::json;

use crate::{write_json, Pct};

const RING: u32 = 4096;

/// A device whose engines finish as soon as a request passes its barrier.
struct Instant1(Box<FakeDevice>);

impl ErrorType for Instant1 {
    type Error = ErrorKind;
}
impl hal::NqRings for Instant1 {
    fn read_slot(&mut self, c: u8, n: u8, off: u32, out: &mut [u8; 16]) -> Result<(), ErrorKind> {
        hal::NqRings::read_slot(&mut *self.0, c, n, off, out)
    }
    fn write_head(&mut self, c: u8, n: u8, head: u32) -> Result<(), ErrorKind> {
        hal::NqRings::write_head(&mut *self.0, c, n, head)
    }
}
impl hal::IntcCause for Instant1 {
    fn read_cause(&mut self, c: u8, b: u32, l: u32) -> Result<u32, ErrorKind> {
        hal::IntcCause::read_cause(&mut *self.0, c, b, l)
    }
}
impl hal::Clock for Instant1 {
    fn now_ns(&self) -> u64 {
        hal::Clock::now_ns(&*self.0)
    }
}
impl hal::CollectivesProxy for Instant1 {
    fn barrier_status(&mut self, core: u8) -> Result<bool, NrtError> {
        let t = self.0.now.get();
        for eng in 0..5 {
            self.0.start(core, eng, t);
            self.0.end(core, eng, t + 1);
        }
        self.0.advance_ns(10);
        Ok(true)
    }
    fn network_status(&mut self, _: u8) -> Result<bool, NrtError> {
        Ok(true)
    }
}
impl hal::FaultProbe for Instant1 {}
impl<E: Copy + Into<Event>> hal::EventSink<E> for Instant1 {
    fn event(&mut self, _: &E) {}
}
impl nrt_core::counters::CounterSink for Instant1 {}

impl hal::TensorNotify for Instant1 {}

fn pool(units: usize) -> XuPool {
    let devs: Vec<(Instant1, Notifications)> = (0..units)
        .map(|_| (Instant1(Box::new(FakeDevice::new(Arch::Sunda, RING))), FakeDevice::notifications(RING)))
        .collect();
    XuPool::start(devs, DelayKind::Adaptive).expect("start the pool")
}

fn round_trip(n: usize) -> Pct {
    let p = pool(1);
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let st = p.submit(0, ExecConfig::new(Arch::Sunda, 1, 5)).expect("submit").wait();
        v.push(t.elapsed().as_nanos() as f64);
        assert_eq!(st, NrtStatus::Success);
    }
    Pct::of(&mut v)
}

/// Closed loop: one submitter thread per unit, each waiting for its request
/// before the next, for `secs`.
fn throughput(units: usize, secs: f64) -> f64 {
    let p = Arc::new(pool(units));
    let stop = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicU64::new(0));
    let threads: Vec<_> = (0..units)
        .map(|u| {
            let (p, stop, count) = (Arc::clone(&p), Arc::clone(&stop), Arc::clone(&count));
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let st = p.submit(u, ExecConfig::new(Arch::Sunda, 1, 5)).expect("submit").wait();
                    assert_eq!(st, NrtStatus::Success);
                    count.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let t = Instant::now();
    std::thread::sleep(Duration::from_secs_f64(secs));
    stop.store(true, Ordering::Relaxed);
    for th in threads {
        th.join().expect("submitter");
    }
    count.load(Ordering::Relaxed) as f64 / t.elapsed().as_secs_f64()
}

pub fn run(secs: f64) {
    println!("XU: submit -> worker step -> mark-complete, devices whose engines finish at once");
    let rt = round_trip(10_000);
    println!(
        "  round trip (1 unit, sequential, 10000 requests): p50 {:.1} us  p99 {:.1} us  max {:.1} us",
        rt.p50 / 1e3,
        rt.p99 / 1e3,
        rt.max / 1e3
    );
    let mut rates = serde_json::Map::new();
    for units in [1usize, 4, 16] {
        let r = throughput(units, secs);
        println!("  {units:>2} unit(s), one closed-loop submitter each: {:.0} requests/s", r);
        rates.insert(units.to_string(), json!(r));
    }
    write_json(
        "xu",
        &json!({ "round_trip": rt.json(), "requests_per_s": rates, "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1) }),
    );
}
