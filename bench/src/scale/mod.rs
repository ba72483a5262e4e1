//! `nrt-bench scale`: a host's worth of logical cores, 16 devices x 4 by
//! default, each running one inference after another, harvested in turn by
//! every shape in the same run:
//!
//! 1. `libnrt-threads`: libnrt's shape, one thread per in-flight request, the
//!    sync driver with `usleep(1)` between steps;
//! 2. `adaptive-threads`: one thread per request, the sync driver with the
//!    adaptive delay that spins, yields, then sleeps;
//! 3. `poll-group xP <policy>`: P poller threads, 1, 2 or 4, each a core
//!    `PollGroup` over a contiguous block of devices making due-first passes
//!    with `PollGroup::poll_due`. Between passes each waits by its
//!    `nrt_linux::poller::WaitPolicy`, spin, hybrid or sleep, as
//!    `nrt_linux::poller` does, and kicks off a lane's next request as soon as
//!    one completes.
//!
//! The device is one thread that sleeps to each due write on an absolute
//! deadline with 1 ns timer slack, as a real device takes no host CPU between
//! its writes; `--device spin` makes it spin, labelled so. A lane's inference
//! starts when the harvest kicks it off and lasts a time drawn around
//! `--work-us U`: uniform within `--jitter-pct J` percent of U, and one
//! inference in [`OUTLIER_EVERY`] lasts [`OUTLIER_FACTOR`] x U, so a poller
//! must learn the lane's time and its spread, not read a period. The first
//! inference of lane `l` is delayed by `l / lanes` of U, spreading the lanes'
//! phases. At the end the device writes START and END on every ring of the
//! lane's 2 cores x 5 engines. It stamps the instant of the last END write
//! just before that store and publishes the stamp with it, so the device's
//! own lateness lengthens the inference, never the notice. The notice latency
//! runs from that instant to the one the harvest sees the status: a thread
//! shape's return, or a group's completion, where a spinning waiter adds one
//! cache line transfer and a sleeping one an eventfd wake-up. The harvest CPU
//! is the harvesting threads' CPU time over the wall time, in cores busy; the
//! device thread's own CPU is not counted.
//!
//! The 1 ms run, or the only one, also measures the floors on the same device
//! thread: a bare spinning reader over the same lanes, one look per lane at
//! the slot of its next END, and a bare sleeping reader at each slice of
//! [`SLICES_US`] and the default. Beside each bare sleeping reader runs the
//! hybrid x1 poller at that slice. The goals are printed as `verdict:` lines,
//! each a ratio within the run; [`choose_slice`] is the rule for the default
//! slice.
//!
//! `--sweep` runs every shape at U = 100 us, 1 ms and 10 ms; the last line is
//! the U = 1 ms run's best hybrid group, best spinning group and libnrt's shape.
//!
//! `NRT_BENCH_ONLY=<text>` measures only the shapes whose name contains it,
//! and libnrt's as the baseline; `NRT_BENCH_DEBUG=1` prints each poller's
//! first lanes' estimates at its end.
//!
//! Ring memory is plain memory shared between the threads: 16-byte slots, the
//! first 8-byte word published last with Release and read first with Acquire,
//! as G-LINUX-ORDER. HEAD is an atomic store, as into a mapped NOTIFIC block.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nrt_core::arch::{Arch, ENGINES_PER_CORE};
use nrt_core::event::Event;
use nrt_core::exec::driver::SYNC_POLL_DELAY_US;
use nrt_core::exec::{exec_wait_with, ExecConfig, ExecRequest, Lanes, PollGroup, Step, SyncWait, WaitHooks};
use nrt_core::hal::{self, ErrorKind, ErrorType};
use nrt_core::nq::ring::NqProducer;
use nrt_core::nq::{Notifications, RawEntry, Subtype, INFER_STATUS_NQS};
use nrt_core::NrtStatus;
use nrt_linux::poller::{hybrid_wait_for_pass, set_timer_slack_1ns, HybridWaiter, PollerConfig, WaitPolicy};
use nrt_linux::sys::{pin_current_thread, thread_cpu_ns};
use nrt_linux::time::{AnyDelay, DelayKind};
use serde_json::json;

use crate::clock::{self, Deadlines, DeviceKind};
use crate::{write_json, Pct};

mod lanes;
mod readers;
mod verdict;

use lanes::*;
use readers::*;
pub use verdict::*;

/// What one harvest shape measured.
struct Shape {
    name: String,
    latency: Pct,
    cpu_cores: f64,
    /// The device thread's own CPU over the same wall time, not the harvest's.
    device_cpu_cores: f64,
    /// Where the harvest's time went, per second of wall time over its threads.
    passes_per_s: f64,
    /// Requests stepped, or lanes looked at, per pass.
    looks_per_pass: f64,
    sleeps_per_s: f64,
    /// Involuntary context switches, preemptions, of the harvest threads.
    preempted_per_s: f64,
    /// Share of the wall time the harvest threads spent in passes and asleep.
    in_passes: f64,
    asleep: f64,
    /// From the start of the pass that saw a completion to its notice; the
    /// rest of the notice is the wait before that pass.
    in_pass: Pct,
    /// How late each of the harvest's sleeps ended past what it asked, ns: the
    /// timer, then the wait for a CPU.
    overshoot: Pct,
    /// How late the device wrote each inference's last END past its due time, ns.
    device_late: Pct,
    requests_per_s: f64,
    completed: u64,
    failed: u64,
}

enum Harvest {
    Threads(DelayKind),
    Groups {
        pollers: usize,
        cfg: PollerConfig,
    },
    /// One bare reader over every lane: spinning on `None`, else sleeping
    /// this long from one sweep to the next.
    Bare(Option<Duration>),
}

impl Harvest {
    fn name(&self) -> String {
        match self {
            Harvest::Threads(DelayKind::Libnrt) => "libnrt-threads".to_string(),
            Harvest::Threads(DelayKind::Adaptive) => "adaptive-threads".to_string(),
            Harvest::Groups { pollers, cfg } => match cfg.hybrid_slice {
                Some(sl) if cfg.policy == WaitPolicy::Hybrid => {
                    format!("poll-group x{pollers} hybrid {} us", sl.as_micros())
                }
                _ => format!("poll-group x{pollers} {}", policy_name(cfg.policy)),
            },
            Harvest::Bare(None) => "bare reader spin".to_string(),
            Harvest::Bare(Some(sl)) => format!("bare reader sleep {} us", sl.as_micros()),
        }
    }
}

fn policy_name(p: WaitPolicy) -> &'static str {
    match p {
        WaitPolicy::Spin => "spin",
        WaitPolicy::Hybrid => "hybrid",
        WaitPolicy::Sleep => "sleep",
    }
}

/// How the run is set up: the host's lanes, the time per shape, the device.
#[derive(Clone, Copy)]
pub struct Setup {
    pub devices: usize,
    pub cores_per_device: usize,
    /// Seconds per shape.
    pub secs: f64,
    /// Each inference within this percent of U.
    pub jitter: u64,
    pub device: DeviceKind,
}

fn measure(setup: Setup, work: Duration, how: &Harvest) -> Shape {
    let Setup { devices, cores_per_device, secs, jitter, device: dev_kind } = setup;
    let n = devices * cores_per_device;
    let origin = Instant::now();
    let mems: Vec<Arc<LaneMem>> = (0..n).map(|_| Arc::new(LaneMem::new())).collect();
    let stop_dev = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let abort = Arc::new(AtomicBool::new(false));
    let dev = {
        let (m, s) = (mems.clone(), Arc::clone(&stop_dev));
        std::thread::spawn(move || device(m, origin, work, jitter, s, dev_kind))
    };
    // A budget no inference reaches even on a starved machine: a timeout would
    // leave a lane's requests one inference out of step with its records.
    let cfg = ExecConfig::new(Arch::Sunda, CORES as u8, BENCH_TIMEOUT_S);
    let t0 = Instant::now();
    let handles: Vec<std::thread::JoinHandle<Out>> = match how {
        Harvest::Threads(kind) => mems
            .iter()
            .map(|m| {
                let (m, stop, abort, kind) = (Arc::clone(m), Arc::clone(&stop), Arc::clone(&abort), *kind);
                std::thread::spawn(move || {
                    let (c0, v0) = (thread_cpu_ns(), preemptions());
                    let mut dev = LaneDev { mem: Arc::clone(&m), origin };
                    // libnrt's shape drains HEAD after every sweep (G-DRAIN).
                    let mut nq = notifications(kind != DelayKind::Libnrt);
                    let (mut lat, mut ok, mut bad) = (Vec::new(), 0u64, 0u64);
                    while !stop.load(Ordering::Acquire) {
                        let mut req = ExecRequest::new(cfg);
                        m.kick(origin);
                        let mut delay = AnyDelay::new(kind);
                        // Core's harvest loop, which the bench abandons when the
                        // device has stopped.
                        let SyncWait { step, .. } =
                            exec_wait_with(&mut req, &mut dev, &mut nq, &mut delay, &mut Abort(&abort));
                        if step == Step::InFlight {
                            break;
                        }
                        let seen = origin.elapsed().as_nanos() as u64;
                        if let Some(end) = end_of(&m, &req) {
                            lat.push(seen.saturating_sub(end) as f64);
                        }
                        if step == Step::Done(NrtStatus::Success) {
                            ok += 1;
                        } else {
                            bad += 1;
                        }
                    }
                    Out { lat, cpu_ns: thread_cpu_ns() - c0, ok, bad, preempted: preemptions() - v0, ..Out::default() }
                })
            })
            .collect(),
        Harvest::Groups { pollers, cfg: pcfg } => (0..*pollers)
            .map(|p| {
                // Contiguous blocks of devices.
                let first = devices * p / pollers * cores_per_device;
                let end = devices * (p + 1) / pollers * cores_per_device;
                let block: Vec<Arc<LaneMem>> = mems[first..end].to_vec();
                let ncpu = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
                let pcfg = PollerConfig { cpu: pcfg.cpu.map(|c| (c + p) % ncpu), ..*pcfg };
                let stop = Arc::clone(&stop);
                std::thread::spawn(move || poller(block, origin, cfg, pcfg, &stop))
            })
            .collect(),
        Harvest::Bare(slice) => {
            let (m, stop, slice) = (mems.clone(), Arc::clone(&stop), *slice);
            vec![std::thread::spawn(move || bare_reader(m, origin, slice, &stop))]
        }
    };
    std::thread::sleep(Duration::from_secs_f64(secs));
    stop.store(true, Ordering::Release);
    let window = t0.elapsed().as_secs_f64();
    // The requests in flight finish as the device plays on; on a starved
    // machine, give up on them after a grace.
    let t_stop = Instant::now();
    while handles.iter().any(|h| !h.is_finished()) && t_stop.elapsed() < STOP_GRACE {
        std::thread::sleep(Duration::from_millis(10));
    }
    abort.store(true, Ordering::Release);
    let mut all = Out::default();
    for h in handles {
        let o = h.join().expect("harvest thread");
        all.lat.extend(o.lat);
        all.in_pass.extend(o.in_pass);
        all.overshoot.extend(o.overshoot);
        all.cpu_ns += o.cpu_ns;
        all.ok += o.ok;
        all.bad += o.bad;
        all.passes += o.passes;
        all.looks += o.looks;
        all.sleeps += o.sleeps;
        all.preempted += o.preempted;
        all.pass_ns += o.pass_ns;
        all.sleep_ns += o.sleep_ns;
    }
    let Out { mut lat, mut in_pass, mut overshoot, cpu_ns: cpu, ok, bad, .. } = all;
    // CPU over the whole run with the drain, requests over the window.
    let wall = t0.elapsed().as_secs_f64();
    stop_dev.store(true, Ordering::Release);
    let (_, dev_cpu, mut dev_late) = dev.join().expect("device thread");
    let dev_wall = t0.elapsed().as_secs_f64();
    Shape {
        name: how.name(),
        latency: Pct::of(&mut lat),
        cpu_cores: cpu as f64 / 1e9 / wall,
        device_cpu_cores: dev_cpu as f64 / 1e9 / dev_wall,
        passes_per_s: all.passes as f64 / wall,
        looks_per_pass: all.looks as f64 / all.passes.max(1) as f64,
        sleeps_per_s: all.sleeps as f64 / wall,
        preempted_per_s: all.preempted as f64 / wall,
        in_passes: all.pass_ns as f64 / 1e9 / wall,
        asleep: all.sleep_ns as f64 / 1e9 / wall,
        in_pass: Pct::of(&mut in_pass),
        overshoot: Pct::of(&mut overshoot),
        device_late: Pct::of(&mut dev_late),
        requests_per_s: (ok + bad) as f64 / window,
        completed: ok,
        failed: bad,
    }
}

/// One U's measurements: every shape and, with `extras`, the floors and the
/// hybrid slice sweep.
struct Run {
    work_us: u64,
    shapes: Vec<Shape>,
    /// The bare spinning reader, then the bare sleeping reader at each slice.
    floors: Vec<(Option<u64>, Shape)>,
    /// The hybrid x1 poller at each slice.
    slices: Vec<(u64, Shape)>,
}

fn print_shape(s: &Shape) {
    println!(
        "  {:<26} notice p50 {:>9.0} ns  p99 {:>10.0} ns  max {:>11.0} ns | harvest CPU {:>5.2} cores (device {:.2}) | {:>8.0} req/s ({} ok, {} failed)",
        s.name, s.latency.p50, s.latency.p99, s.latency.max, s.cpu_cores, s.device_cpu_cores, s.requests_per_s, s.completed, s.failed
    );
    println!(
        "  {:<26}   where: preempted {:.0}/s; {:.0} passes/s ({:.2} of the wall in them, {:.1} requests each), \
         {:.0} sleeps/s ({:.2} asleep, \
         overshoot p50 {:.0} ns p99 {:.0} ns); pass start -> notice p50 {:.0} ns p99 {:.0} ns; device late p50 {:.0} ns p99 {:.0} ns",
        "",
        s.preempted_per_s,
        s.passes_per_s,
        s.in_passes,
        s.looks_per_pass,
        s.sleeps_per_s,
        s.asleep,
        s.overshoot.p50,
        s.overshoot.p99,
        s.in_pass.p50,
        s.in_pass.p99,
        s.device_late.p50,
        s.device_late.p99
    );
}

/// The shapes of one run, each measured in turn at `work_us`. With `extras`
/// also the floors, a bare spinning reader and a bare sleeping reader at each
/// of `slices_us`, and beside each sleeping one the hybrid x1 poller at its slice.
fn run_one(setup: Setup, work_us: u64, base: PollerConfig, extras: bool, slices_us: &[u64]) -> Run {
    let Setup { devices, cores_per_device, secs, jitter, device: dev_kind } = setup;
    let work = Duration::from_micros(work_us);
    let n = devices * cores_per_device;
    let ncpu = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    println!(
        "scale: {devices} devices x {cores_per_device} logical cores = {n} in flight, each inference {work_us} us \
         +/- {jitter} % (1 in {OUTLIER_EVERY} {OUTLIER_FACTOR}x), {:.0} inferences/s offered; {secs} s per shape on {ncpu} CPUs; \
         {} device thread{}",
        n as f64 * 1e6 / work_us as f64,
        dev_kind.name(),
        match (dev_kind, clock::device_cpu()) {
            (DeviceKind::Sleep, Some(c)) => format!(" pinned to CPU {c}"),
            _ => String::new(),
        }
    );
    let mut hows = vec![Harvest::Threads(DelayKind::Libnrt), Harvest::Threads(DelayKind::Adaptive)];
    // The sleeping policy: `usleep(1)` between passes, libnrt's wait with one
    // thread instead of one per request.
    for policy in [WaitPolicy::Spin, WaitPolicy::Hybrid, WaitPolicy::Sleep] {
        for pollers in [1usize, 2, 4] {
            if pollers <= devices && n.div_ceil(pollers) <= 128 {
                let cfg = PollerConfig { policy, sleep_us: SYNC_POLL_DELAY_US, ..base };
                hows.push(Harvest::Groups { pollers, cfg });
            }
        }
    }
    let only = std::env::var("NRT_BENCH_ONLY").unwrap_or_default();
    let wanted = |name: &str| name.contains(only.as_str()) || name.starts_with("libnrt");
    let mut shapes = Vec::new();
    for how in &hows {
        if !wanted(&how.name()) {
            continue;
        }
        let s = measure(setup, work, how);
        print_shape(&s);
        shapes.push(s);
    }
    let (mut floors, mut slices) = (Vec::new(), Vec::new());
    if extras {
        let spin = Harvest::Bare(None);
        if wanted(&spin.name()) {
            let s = measure(setup, work, &spin);
            print_shape(&s);
            floors.push((None, s));
        }
        for &us in slices_us {
            let d = Duration::from_micros(us);
            let cfg = PollerConfig { policy: WaitPolicy::Hybrid, hybrid_slice: Some(d), ..base };
            for how in [Harvest::Groups { pollers: 1, cfg }, Harvest::Bare(Some(d))] {
                if !wanted(&how.name()) {
                    continue;
                }
                let s = measure(setup, work, &how);
                print_shape(&s);
                match how {
                    Harvest::Bare(_) => floors.push((Some(us), s)),
                    _ => slices.push((us, s)),
                }
            }
        }
    }
    Run { work_us, shapes, floors, slices }
}

/// `nrt-bench scale`: one run at `work_us`, or with `sweep` one at each of
/// 100 us, 1 ms and 10 ms, the last line then from the 1 ms run. The floors
/// and the hybrid slice sweep come from the 1 ms run, or the only one.
pub fn run(setup: Setup, work_us: u64, sweep: bool, base: PollerConfig) {
    let Setup { devices, cores_per_device, secs, jitter, device } = setup;
    let ncpu = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let works: Vec<u64> = if sweep { vec![100, 1000, 10_000] } else { vec![work_us] };
    let default_slice_us = base.hybrid_slice_ns() / 1000;
    let mut slices_us: Vec<u64> = SLICES_US.to_vec();
    if !slices_us.contains(&default_slice_us) {
        slices_us.push(default_slice_us);
        slices_us.sort_unstable();
    }
    let js = |s: &Shape| {
        json!({ "name": s.name, "notice": s.latency.json(), "cpu_cores": s.cpu_cores, "device_cpu_cores": s.device_cpu_cores,
                "requests_per_s": s.requests_per_s, "completed": s.completed, "failed": s.failed,
                "preempted_per_s": s.preempted_per_s, "passes_per_s": s.passes_per_s, "looks_per_pass": s.looks_per_pass, "sleeps_per_s": s.sleeps_per_s,
                "in_passes": s.in_passes, "asleep": s.asleep, "pass_start_to_notice": s.in_pass.json(),
                "sleep_overshoot": s.overshoot.json(), "device_late": s.device_late.json() })
    };
    let mut runs = Vec::new();
    for &u in &works {
        let extras = u == 1000 || works.len() == 1;
        let r = run_one(setup, u, base, extras, &slices_us);
        let libnrt = &r.shapes[0];
        let groups = r.shapes.iter().filter(|s| s.name.starts_with("poll-group"));
        let n_groups = groups.clone().count();
        let groups_below =
            groups.filter(|s| s.latency.p99 < libnrt.latency.p99 && s.cpu_cores < libnrt.cpu_cores).count();
        println!(
            "  U = {u} us: {groups_below} of {n_groups} poll-group shapes below libnrt's shape on both p99 and CPU"
        );
        runs.push(r);
    }
    let lines = verdicts(&runs, default_slice_us);
    for l in &lines {
        println!("{l}");
    }
    let runs_json: Vec<_> = runs
        .iter()
        .map(|r| {
            json!({
                "work_us": r.work_us, "jitter_pct": jitter,
                "shapes": r.shapes.iter().map(js).collect::<Vec<_>>(),
                "floors": r.floors.iter().map(|(sl, s)| json!({ "slice_us": sl, "shape": js(s) })).collect::<Vec<_>>(),
                "hybrid_slices": r.slices.iter().map(|(sl, s)| json!({ "slice_us": sl, "shape": js(s) })).collect::<Vec<_>>(),
                "best_hybrid": best(&r.shapes, "hybrid").map(|s| s.name.clone()),
                "best_spin": best(&r.shapes, "spin").map(|s| s.name.clone()),
            })
        })
        .collect();
    write_json(
        "scale",
        &json!({
            "devices": devices, "cores_per_device": cores_per_device, "secs_per_shape": secs, "cpus": ncpu,
            "jitter_pct": jitter, "outlier_every": OUTLIER_EVERY, "outlier_factor": OUTLIER_FACTOR,
            "device": device.name(), "default_slice_us": default_slice_us, "verdicts": lines, "runs": runs_json,
        }),
    );
    let Some(r) = runs.iter().find(|r| r.work_us == 1000).or(runs.first()) else { return };
    let shapes = &r.shapes;
    let line = |s: Option<&Shape>| match s {
        Some(s) => format!("p50 {:.0} p99 {:.0} cpu {:.2}", s.latency.p50, s.latency.p99, s.cpu_cores),
        None => "p50 - p99 - cpu -".to_string(),
    };
    println!(
        "scale: hybrid {}; spinning {}; libnrt-threads {}",
        line(best(shapes, "hybrid")),
        line(best(shapes, "spin")),
        line(shapes.first())
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pt(slice_us: u64, p99_us: f64, cpu: f64) -> SlicePoint {
        SlicePoint { slice_us, p99_ns: p99_us * 1000.0, cpu_cores: cpu }
    }

    #[test]
    fn the_slice_rule_takes_the_shortest_slice_meeting_both_goals_else_the_closest_on_both() {
        // libnrt: p99 3 ms, 1.8 cores; the goal 1/10 of each: 300 us, 0.18 core.
        let (lp, lc) = (3_000_000.0, 1.8);
        let sweep = [pt(400, 450.0, 0.10), pt(25, 90.0, 0.60), pt(100, 160.0, 0.25), pt(200, 280.0, 0.17)];
        assert_eq!(choose_slice(&sweep, lp, lc, 10.0), Some((200, SliceReason::BothGoals)));
        // None meets both. Lower ratios: 25 us 3.0x (CPU), 200 us 4.3x (p99), 400 us 3.75x (p99).
        let tails = [pt(25, 900.0, 0.60), pt(200, 700.0, 0.17), pt(400, 800.0, 0.10)];
        assert_eq!(choose_slice(&tails, lp, lc, 10.0), Some((200, SliceReason::Closest)));
        // A measured day (2-vCPU VM, libnrt 209 us, 1.34 cores): 50 us, its worse ratio 3.0x.
        let day =
            [pt(25, 46.0, 0.67), pt(40, 59.0, 0.48), pt(50, 70.0, 0.40), pt(100, 120.0, 0.27), pt(400, 432.0, 0.12)];
        assert_eq!(choose_slice(&day, 209_000.0, 1.34, 10.0), Some((50, SliceReason::Closest)));
        // A tie: the shorter slice.
        let tie = [pt(100, 600.0, 0.3), pt(50, 600.0, 0.3)];
        assert_eq!(choose_slice(&tie, lp, lc, 10.0), Some((50, SliceReason::Closest)));
        assert_eq!(choose_slice(&[], lp, lc, 10.0), None);
        // A slice with no notices (p99 NaN) is not ranked on its CPU alone.
        let blank = [pt(400, f64::NAN, 0.01), pt(50, 600.0, 0.3)];
        assert_eq!(choose_slice(&blank, lp, lc, 10.0), Some((50, SliceReason::Closest)));
        assert_eq!(choose_slice(&[pt(400, f64::NAN, 0.01)], lp, lc, 10.0), Some((400, SliceReason::Closest)));
        // libnrt's figures missing: no pick.
        assert_eq!(choose_slice(&sweep, f64::NAN, lc, 10.0), None);
        assert_eq!(choose_slice(&sweep, lp, 0.0, 10.0), None);
        // At the bound exactly: met.
        assert_eq!(choose_slice(&[pt(50, 300.0, 0.18)], lp, lc, 10.0), Some((50, SliceReason::BothGoals)));
    }

    /// A measured shape with only its notice p50, p99 and CPU.
    fn shape(name: &str, p50_us: f64, p99_us: f64, cpu: f64) -> Shape {
        let pct = |p50: f64, p99: f64| Pct { p50: p50 * 1e3, p99: p99 * 1e3, max: p99 * 1e3, mean: p50 * 1e3 };
        let none = Pct { p50: f64::NAN, p99: f64::NAN, max: f64::NAN, mean: f64::NAN };
        Shape {
            name: name.to_string(),
            latency: pct(p50_us, p99_us),
            cpu_cores: cpu,
            device_cpu_cores: 0.1,
            passes_per_s: 0.0,
            looks_per_pass: 0.0,
            sleeps_per_s: 0.0,
            preempted_per_s: 0.0,
            in_passes: 0.0,
            asleep: 0.0,
            in_pass: none,
            overshoot: none,
            device_late: none,
            requests_per_s: 0.0,
            completed: 0,
            failed: 0,
        }
    }

    #[test]
    fn the_verdicts_are_ratios_within_the_run_and_name_what_misses() {
        let run = |bare25: (f64, f64)| Run {
            work_us: 1000,
            shapes: vec![
                shape("libnrt-threads", 60.0, 200.0, 1.3),
                shape("poll-group x1 spin", 1.5, 3.0, 1.0),
                shape("poll-group x2 spin", 9.0, 150.0, 1.7),
                shape("poll-group x1 hybrid", 30.0, 70.0, 0.4),
            ],
            floors: vec![
                (None, shape("bare reader spin", 0.3, 1.0, 1.0)),
                (Some(25), shape("bare reader sleep 25 us", 25.0, bare25.0, bare25.1)),
                (Some(50), shape("bare reader sleep 50 us", 40.0, 80.0, 0.1)),
            ],
            slices: vec![
                (25, shape("poll-group x1 hybrid 25 us", 20.0, 19.0, 0.6)),
                (50, shape("poll-group x1 hybrid 50 us", 32.0, 70.0, 0.4)),
            ],
        };
        let lines = verdicts(&[run((50.0, 0.45))], 50);
        let find = |lines: &[String], what: &str| lines.iter().find(|l| l.contains(what)).cloned().expect(what);
        let hyb = find(&lines, "verdict: hybrid x1, U = 1000 us");
        assert!(hyb.contains("25 us: p99 10.5x lower, CPU 2.2x lower; 50 us: p99 2.9x lower, CPU 3.2x lower"), "{hyb}");
        assert!(hyb.contains("at one slice): MISSED;"), "{hyb}");
        assert!(
            hyb.contains("25 us: 4.0x, 2.9x; 50 us: 2.5x, 13.0x (both at no slice: the machine's wake-up)"),
            "{hyb}"
        );
        // A bare sleeper that meets both, and a hybrid slice that does.
        let mut r = run((20.0, 0.13));
        r.slices[0].1.cpu_cores = 0.13;
        let met = verdicts(&[r], 50);
        let hyb = find(&met, "verdict: hybrid x1");
        assert!(
            hyb.contains("(goal: both >= 10x at one slice): met at 25 us;") && hyb.contains("(both at 25 us)"),
            "{hyb}"
        );
        let spin = find(&lines, "against the bare spinning reader");
        assert!(
            spin.contains("p50 1500 / 300 ns = 5.0x (goal <= 5x), p99 3000 / 1000 ns = 3.0x (goal <= 3x): met"),
            "{spin}"
        );
        let dflt = find(&lines, "at its default slice 50 us");
        assert!(dflt.contains("p99 70000 / 80000 ns = 0.9x (goal <= 3x): met; CPU 0.40 against 0.10"), "{dflt}");
        let below = find(&lines, "verdict: U = 1000 us:");
        assert!(
            below.contains("2 of 3 poll-group shapes") && below.contains("not: poll-group x2 spin (CPU 1.70): MISSED"),
            "{below}"
        );
        // No bare sleeper measured: said so, not blamed on the machine.
        let mut r = run((50.0, 0.45));
        r.floors.truncate(1);
        let hyb = find(&verdicts(&[r], 50), "verdict: hybrid x1");
        assert!(hyb.ends_with("lower: (not measured)"), "{hyb}");
        assert!(verdicts(&[], 50).is_empty());
    }

    #[test]
    fn a_shape_is_below_libnrt_only_on_both_and_says_what_it_is_not_below_on() {
        assert_eq!(not_below(100_000.0, 0.5, 200_000.0, 1.3), None);
        assert_eq!(not_below(250_000.0, 0.5, 200_000.0, 1.3).as_deref(), Some("p99 250 us"));
        assert_eq!(not_below(100_000.0, 1.3, 200_000.0, 1.3).as_deref(), Some("CPU 1.30"), "equal is not below");
        assert_eq!(not_below(200_000.0, 1.9, 200_000.0, 1.3).as_deref(), Some("p99 200 us, CPU 1.90"));
        assert_eq!(not_below(f64::NAN, 0.5, 200_000.0, 1.3).as_deref(), Some("p99 NaN us"), "no notice is not below");
    }

    #[test]
    fn the_bare_reader_expects_each_end_where_the_device_writes_it() {
        let mut dev = NqProducer::new(RING).expect("ring");
        let mut shadow = NqProducer::new(RING).expect("ring");
        let id = INFER_STATUS_NQS[(RINGS - 1) % ENGINES_PER_CORE];
        // Three laps of the ring, the host handing every slot back after each inference.
        for k in 0..(3 * SLOTS as u64) {
            let exp = next_end(&mut shadow, k);
            let _ = dev.push(&mut RawEntry::new(Subtype::START, id, 0, 0, (k + 1) * 1000).to_array());
            let mut e = RawEntry::new(Subtype::END, id, 0, 0, (k + 1) * 1000).to_array();
            let off = dev.push(&mut e).expect("room") as usize / 16;
            let w = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap());
            assert_eq!(exp, (((RINGS - 1) * SLOTS + off) * 2, w(&e[..8]), w(&e[8..])), "inference {k}");
            let head = ((2 * (k + 1) * 16) % u64::from(RING)) as u32;
            dev.on_head_write(head);
            shadow.on_head_write(head);
        }
    }
}
