//! The operating-system floor the Linux binding stands on: the cost of one
//! ioctl round trip, a Neuron request on a file that is not a device, which
//! fails with ENOTTY after the full syscall path; of libnrt's `usleep(1)`; and
//! of the hybrid poller's wake-up: a 20 us sleep with the timer slack at 1 ns,
//! its overshoot, its own CPU time, and what it takes from a neighbour. The
//! neighbour is a thread counting on the same CPU, alone and then beside the
//! sleeper; the counts it loses per wake-up, at its own rate, are the
//! wake-up's real cost, whatever the thread's CPU clock says.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use nrt_linux::device::NeuronDevice;
use nrt_linux::poller::{set_timer_slack_1ns, PollerConfig};
use nrt_linux::sys::pin_current_thread;
use serde_json::json;

use crate::{thread_cpu_ns, write_json, Pct};

pub fn run() {
    let p = std::env::temp_dir().join(format!("nrt-bench-sys-{}", std::process::id()));
    std::fs::write(&p, b"").expect("temp file");
    // The file is only a target for the ioctl: removed once the open is
    // tried, so a failed open or a panic in the loop leaves nothing behind.
    let dev = NeuronDevice::open(&p);
    let _ = std::fs::remove_file(&p);
    let dev = dev.expect("open the ioctl file");
    let mut ioctl = Vec::with_capacity(20_000);
    for _ in 0..20_000 {
        let t = Instant::now();
        let _ = dev.bar_write(0, 0x10C, 0);
        ioctl.push(t.elapsed().as_nanos() as f64);
    }
    let ioctl = Pct::of(&mut ioctl);
    let mut wall = Vec::with_capacity(2000);
    let mut cpu = Vec::with_capacity(2000);
    for _ in 0..2000 {
        let (t, c) = (Instant::now(), thread_cpu_ns());
        std::thread::sleep(Duration::from_micros(1));
        wall.push(t.elapsed().as_nanos() as f64);
        cpu.push((thread_cpu_ns() - c) as f64);
    }
    let (wall, cpu) = (Pct::of(&mut wall), Pct::of(&mut cpu));
    println!("OS floor: ioctl round trip (ENOTTY) p50 {:.0} ns p99 {:.0} ns; usleep(1) lasts p50 {:.1} us (p99 {:.1} us) and costs {:.1} us of CPU (p50)",
        ioctl.p50, ioctl.p99, wall.p50 / 1e3, wall.p99 / 1e3, cpu.p50 / 1e3);
    let hybrid_sleep = hybrid_sleep();
    let w = wake_cost(hybrid_sleep);
    let slice_ns = PollerConfig::default().hybrid_slice_ns();
    println!(
        "OS floor: a {} us sleep at 1 ns timer slack (the hybrid poller's) overshoots p50 {:.1} us (p99 {:.1} us), \
         costs its thread {:.1} us of CPU (p50), and takes {:.1} us from a thread counting on the same CPU \
         ({} wake-ups; that thread kept {:.0} % of its count): a hybrid poller waking once per {} us slice pays {:.2} \
         core for its wake-ups alone (spinning: 1.00)",
        hybrid_sleep.as_micros(),
        w.overshoot.p50 / 1e3,
        w.overshoot.p99 / 1e3,
        w.cpu.p50 / 1e3,
        w.neighbour_loss_ns / 1e3,
        w.wakes,
        w.neighbour_kept * 100.0,
        slice_ns / 1000,
        w.neighbour_loss_ns / slice_ns as f64,
    );
    write_json(
        "sys",
        &json!({ "ioctl": ioctl.json(), "usleep1_wall": wall.json(), "usleep1_cpu": cpu.json(),
                 "hybrid_sleep_us": hybrid_sleep.as_micros() as u64, "hybrid_sleep_overshoot": w.overshoot.json(),
                 "hybrid_sleep_cpu": w.cpu.json(), "hybrid_wake_neighbour_loss_ns": w.neighbour_loss_ns,
                 "hybrid_wakes": w.wakes }),
    );
}

/// The hybrid poller's typical sleep between passes: its default slice,
/// The hybrid poller's typical sleep: its default slice less its lead and a pass.
fn hybrid_sleep() -> Duration {
    let d = PollerConfig::default();
    Duration::from_nanos(d.hybrid_slice_ns()).saturating_sub(d.hybrid_lead).saturating_sub(PASS_ALLOWANCE)
}

/// What [`hybrid_sleep`] leaves for the pass itself.
const PASS_ALLOWANCE: Duration = Duration::from_micros(10);

/// How long each half of the neighbour measurement runs.
const NEIGHBOUR_RUN: Duration = Duration::from_millis(500);

/// What a short sleep costs.
struct WakeCost {
    overshoot: Pct,
    cpu: Pct,
    /// The neighbour's lost time per wake-up, ns: its lost count over its
    /// rate alone.
    neighbour_loss_ns: f64,
    /// The share of its count the neighbour kept beside the sleeper.
    neighbour_kept: f64,
    wakes: u64,
}

/// Counts on `cpu` for `run` on a thread of its own, returning the count;
/// `started` is set when the count begins. The caller's affinity stays as it
/// was, since `nrt-bench all` spawns the scale shapes from it next.
fn count_on(cpu: usize, run: Duration, started: &AtomicBool) -> u64 {
    std::thread::scope(|s| {
        s.spawn(|| {
            let _ = pin_current_thread(cpu);
            started.store(true, Ordering::Release);
            let t = Instant::now();
            let mut n = 0u64;
            while t.elapsed() < run {
                for _ in 0..1000 {
                    n = std::hint::black_box(n + 1);
                }
            }
            n
        })
        .join()
        .unwrap_or(0)
    })
}

/// Sleeps of `sleep` with 1 ns timer slack, alone for their overshoot and
/// CPU, then beside a counting thread on the same CPU for what they take from it.
fn wake_cost(sleep: Duration) -> WakeCost {
    let cpu_id = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1) - 1;
    let (mut over, mut cpu) = (Vec::with_capacity(4000), Vec::with_capacity(4000));
    std::thread::scope(|s| {
        s.spawn(|| {
            let _ = pin_current_thread(cpu_id);
            set_timer_slack_1ns();
            for _ in 0..4000 {
                let (t, c) = (Instant::now(), thread_cpu_ns());
                std::thread::sleep(sleep);
                over.push(t.elapsed().saturating_sub(sleep).as_nanos() as f64);
                cpu.push((thread_cpu_ns() - c) as f64);
            }
        });
    });
    let alone = count_on(cpu_id, NEIGHBOUR_RUN, &AtomicBool::new(false));
    let (stop, wakes, started) = (AtomicBool::new(false), AtomicU64::new(0), AtomicBool::new(false));
    let beside = std::thread::scope(|s| {
        s.spawn(|| {
            let _ = pin_current_thread(cpu_id);
            set_timer_slack_1ns();
            // Bounded: the counter's run ends by its own clock, then `stop`.
            let t = Instant::now();
            while !started.load(Ordering::Acquire) && t.elapsed() < Duration::from_secs(5) {
                std::thread::sleep(sleep);
            }
            while !stop.load(Ordering::Acquire) {
                std::thread::sleep(sleep);
                wakes.fetch_add(1, Ordering::Relaxed);
            }
        });
        let n = count_on(cpu_id, NEIGHBOUR_RUN, &started);
        stop.store(true, Ordering::Release);
        n
    });
    let wakes = wakes.load(Ordering::Relaxed).max(1);
    let rate_per_ns = alone as f64 / NEIGHBOUR_RUN.as_nanos() as f64;
    let lost = alone.saturating_sub(beside) as f64;
    WakeCost {
        overshoot: Pct::of(&mut over),
        cpu: Pct::of(&mut cpu),
        neighbour_loss_ns: lost / rate_per_ns / wakes as f64,
        neighbour_kept: beside as f64 / alone.max(1) as f64,
        wakes,
    }
}
