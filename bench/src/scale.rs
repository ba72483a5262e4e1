//! `nrt-bench scale`: a host's worth of logical cores (16 devices x 4 by
//! default) completing inferences at a steady rate, harvested three ways in
//! the same run (issue 13):
//!
//! 1. `libnrt-threads`: one thread per in-flight request, the sync driver with
//!    `usleep(1)` between steps (libnrt's shape);
//! 2. `adaptive-threads`: one thread per request, the sync driver with the
//!    adaptive delay (spin, yield, sleep);
//! 3. `poll-group xP`: P poller threads (1, 2, 4), each a core `PollGroup` over a
//!    contiguous block of devices, with the poller's spin / yield / sleep
//!    policy (`nrt_linux::poller::PollerConfig`), re-submitting each lane's
//!    next request as soon as one completes; and one poller that never spins
//!    (`usleep(1)` between passes).
//!
//! The device is one thread. Lane `l`'s inference `k` ends at `t0 + phase_l +
//! k * work` (phases spread evenly over one `work`): it writes START and END on
//! every ring of the lane's 2 cores x 5 engines, recording the instant of the
//! last END write first. The notice latency is that instant to the instant
//! the harvest sees the status (the thread's return for the thread shapes; the
//! poller's completion for the groups, where a spinning waiter adds one cache
//! line transfer and a sleeping one an eventfd wake-up). The harvest CPU is the
//! harvesting threads' CPU time over the wall time (cores busy); the device
//! thread's own CPU is not counted.
//!
//! Ring memory is plain memory shared between the threads (16-byte slots, the
//! first 8-byte word published last with Release, read first with Acquire, as
//! G-LINUX-ORDER); HEAD is an atomic store (a mapped NOTIFIC block).

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nrt_core::arch::{Arch, ENGINES_PER_CORE};
use nrt_core::event::Event;
use nrt_core::exec::driver::SYNC_POLL_DELAY_US;
use nrt_core::exec::{ExecConfig, ExecRequest, Lanes, PollGroup, Step};
use nrt_core::hal::Delay as _;
use nrt_core::hal::{self, ErrorKind, ErrorType};
use nrt_core::nq::ring::NqProducer;
use nrt_core::nq::{Notifications, RawEntry, Subtype, INFER_STATUS_NQS};
use nrt_core::NrtStatus;
use nrt_linux::poller::PollerConfig;
use nrt_linux::sys::{pin_current_thread, thread_cpu_ns};
use nrt_linux::time::{AnyDelay, DelayKind};
use serde_json::json;

use crate::{write_json, Pct};

const CORES: usize = 2;
const RINGS: usize = CORES * ENGINES_PER_CORE;
const RING: u32 = 4096;
const SLOTS: usize = RING as usize / 16;
/// The model timeout of the bench's requests, seconds.
const BENCH_TIMEOUT_S: u32 = 120;
/// How long the harvest threads may take to finish their last request.
const STOP_GRACE: Duration = Duration::from_secs(5);
/// End instants kept per lane (a ring of them, indexed by inference number).
const ENDS: usize = 1024;

/// One lane's memory: 10 rings, their HEAD registers, the END instants.
struct LaneMem {
    words: Vec<AtomicU64>,
    heads: Vec<AtomicU32>,
    end_ns: Vec<AtomicU64>,
}

impl LaneMem {
    fn new() -> LaneMem {
        LaneMem {
            words: (0..RINGS * SLOTS * 2).map(|_| AtomicU64::new(0)).collect(),
            heads: (0..RINGS).map(|_| AtomicU32::new(0)).collect(),
            end_ns: (0..ENDS).map(|_| AtomicU64::new(0)).collect(),
        }
    }
}

fn ring_index(core: u8, nq: u8) -> Option<usize> {
    let eng = INFER_STATUS_NQS.iter().position(|&id| id == nq)?;
    (usize::from(core) < CORES).then_some(usize::from(core) * ENGINES_PER_CORE + eng)
}

/// The harvest's view of one lane.
struct LaneDev {
    mem: Arc<LaneMem>,
    origin: Instant,
}

impl ErrorType for LaneDev {
    type Error = ErrorKind;
}
impl hal::NqRings for LaneDev {
    #[inline]
    fn read_slot(&mut self, core: u8, nq: u8, offset: u32, out: &mut [u8; 16]) -> Result<(), ErrorKind> {
        let r = ring_index(core, nq).ok_or(ErrorKind::OutOfRange)?;
        let i = (r * SLOTS + offset as usize / 16) * 2;
        let lo = self.mem.words.get(i).ok_or(ErrorKind::OutOfRange)?.load(Ordering::Acquire);
        let hi = self.mem.words.get(i + 1).ok_or(ErrorKind::OutOfRange)?.load(Ordering::Relaxed);
        out[..8].copy_from_slice(&lo.to_le_bytes());
        out[8..].copy_from_slice(&hi.to_le_bytes());
        Ok(())
    }
    #[inline]
    fn write_head(&mut self, core: u8, nq: u8, head: u32) -> Result<(), ErrorKind> {
        let r = ring_index(core, nq).ok_or(ErrorKind::OutOfRange)?;
        self.mem.heads.get(r).ok_or(ErrorKind::OutOfRange)?.store(head, Ordering::Release);
        Ok(())
    }
}
impl hal::IntcCause for LaneDev {
    fn read_cause(&mut self, _: u8, _: u32, _: u32) -> Result<u32, ErrorKind> {
        Ok(0)
    }
}
impl hal::Clock for LaneDev {
    #[inline]
    fn now_ns(&self) -> u64 {
        self.origin.elapsed().as_nanos() as u64
    }
}
impl hal::CollectivesProxy for LaneDev {
    fn barrier_status(&mut self, _: u8) -> Result<bool, NrtStatus> {
        Ok(true)
    }
    fn network_status(&mut self, _: u8) -> Result<bool, NrtStatus> {
        Ok(true)
    }
}
impl hal::FaultProbe for LaneDev {
    fn hbm_uncorrectable(&mut self, _: u8) -> Option<NrtStatus> {
        None
    }
    fn dma_aborted(&mut self, _: u8) -> bool {
        false
    }
}
impl hal::EventSink for LaneDev {
    fn event(&mut self, _: &Event) {}
}
impl hal::TensorNotify for LaneDev {
    fn tensor_completed(&mut self, _: u8, _: u16) -> Option<(u16, u32)> {
        None
    }
}

fn notifications(head_batching: bool) -> Notifications {
    let mut nq = Notifications::new();
    for c in 0..CORES as u8 {
        for &id in &INFER_STATUS_NQS {
            nq.bind(c, id, RING).expect("bind");
        }
    }
    nq.set_head_batching(head_batching);
    nq
}

/// The device thread: lane `l`'s inference `k` ends at `phase_l + k * work`.
fn device(lanes: Vec<Arc<LaneMem>>, origin: Instant, work: Duration, stop: Arc<AtomicBool>) -> u64 {
    let n = lanes.len();
    let work_ns = work.as_nanos() as u64;
    let mut prods: Vec<Vec<NqProducer>> =
        (0..n).map(|_| (0..RINGS).map(|_| NqProducer::new(RING).expect("ring")).collect()).collect();
    let start = origin.elapsed().as_nanos() as u64 + 1_000_000;
    let mut next: Vec<u64> = (0..n).map(|l| start + work_ns * l as u64 / n as u64).collect();
    let mut k = vec![0u64; n];
    let mut written = 0u64;
    while !stop.load(Ordering::Acquire) {
        let now = origin.elapsed().as_nanos() as u64;
        for l in 0..n {
            if now < next[l] {
                continue;
            }
            let mem = &lanes[l];
            let p = &mut prods[l];
            // Room for one START and one END on every ring, or try again later.
            for (r, pr) in p.iter_mut().enumerate() {
                pr.on_head_write(mem.heads[r].load(Ordering::Acquire));
            }
            if p.iter().any(|pr| pr.free() < 2) {
                continue;
            }
            let t_end = origin.elapsed().as_nanos() as u64;
            mem.end_ns[(k[l] as usize) % ENDS].store(t_end + 1, Ordering::Release);
            for sub in [Subtype::START, Subtype::END] {
                for (r, pr) in p.iter_mut().enumerate() {
                    let id = INFER_STATUS_NQS[r % ENGINES_PER_CORE];
                    // The inference number rides in the timestamp: (k + 1) us.
                    let mut e = RawEntry::new(sub, id, 0, 0, (k[l] + 1) * 1000).to_array();
                    let off = pr.push(&mut e).expect("room checked") as usize / 16;
                    let i = (r * SLOTS + off) * 2;
                    mem.words[i + 1].store(u64::from_le_bytes(e[8..].try_into().expect("8")), Ordering::Relaxed);
                    mem.words[i].store(u64::from_le_bytes(e[..8].try_into().expect("8")), Ordering::Release);
                }
            }
            written += 1;
            k[l] += 1;
            next[l] += work_ns;
        }
        std::hint::spin_loop();
    }
    written
}

/// What one harvest shape measured.
struct Shape {
    name: String,
    latency: Pct,
    cpu_cores: f64,
    requests_per_s: f64,
    completed: u64,
    failed: u64,
}

/// The END instant of the inference `req` harvested (its number rides in the
/// END timestamp, which FINALIZE turns into microseconds: `k + 1`), or `None`
/// when the request saw no END (it failed).
fn end_of(mem: &LaneMem, req: &ExecRequest) -> Option<u64> {
    let k = req.engine_times_us(0, 0).1?.checked_sub(1)?;
    // Stored before the records were published.
    let v = mem.end_ns.get((k as usize) % ENDS)?.load(Ordering::Acquire);
    v.checked_sub(1)
}

enum Harvest {
    Threads(DelayKind),
    Groups { pollers: usize, cfg: PollerConfig },
}

fn measure(devices: usize, cores_per_device: usize, secs: f64, work: Duration, how: &Harvest) -> Shape {
    let n = devices * cores_per_device;
    let origin = Instant::now();
    let mems: Vec<Arc<LaneMem>> = (0..n).map(|_| Arc::new(LaneMem::new())).collect();
    let stop_dev = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let abort = Arc::new(AtomicBool::new(false));
    let dev = {
        let (m, s) = (mems.clone(), Arc::clone(&stop_dev));
        std::thread::spawn(move || device(m, origin, work, s))
    };
    // A budget no inference reaches even on a starved machine: a timeout would
    // leave a lane's requests one inference out of step with its records.
    let cfg = ExecConfig::new(Arch::Sunda, CORES as u8, BENCH_TIMEOUT_S);
    type Out = (Vec<f64>, u64, u64, u64); // latencies, cpu ns, completed, failed
    let t0 = Instant::now();
    let handles: Vec<std::thread::JoinHandle<Out>> = match how {
        Harvest::Threads(kind) => mems
            .iter()
            .map(|m| {
                let (m, stop, abort, kind) = (Arc::clone(m), Arc::clone(&stop), Arc::clone(&abort), *kind);
                std::thread::spawn(move || {
                    let c0 = thread_cpu_ns();
                    let mut dev = LaneDev { mem: Arc::clone(&m), origin };
                    // libnrt's shape drains HEAD after every sweep (G-DRAIN).
                    let mut nq = notifications(kind != DelayKind::Libnrt);
                    let (mut lat, mut ok, mut bad) = (Vec::new(), 0u64, 0u64);
                    while !stop.load(Ordering::Acquire) {
                        let mut req = ExecRequest::new(cfg);
                        let mut delay = AnyDelay::new(kind);
                        // `exec_wait_round_robin`'s loop, which the bench can abandon
                        // when the device has stopped.
                        let mut status = NrtStatus::Success;
                        let mut step = req.progress_one_step(&mut dev, &mut nq, &mut status);
                        while step == Step::InFlight && !abort.load(Ordering::Relaxed) {
                            delay.delay_us(SYNC_POLL_DELAY_US);
                            step = req.progress_one_step(&mut dev, &mut nq, &mut status);
                        }
                        if step == Step::InFlight {
                            break;
                        }
                        let seen = origin.elapsed().as_nanos() as u64;
                        if let Some(end) = end_of(&m, &req) {
                            lat.push(seen.saturating_sub(end) as f64);
                        }
                        if (step, status) == (Step::Done, NrtStatus::Success) {
                            ok += 1;
                        } else {
                            bad += 1;
                        }
                    }
                    (lat, thread_cpu_ns() - c0, ok, bad)
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
    let mut lat = Vec::new();
    let (mut cpu, mut ok, mut bad) = (0u64, 0u64, 0u64);
    for h in handles {
        let (l, c, o, b) = h.join().expect("harvest thread");
        lat.extend(l);
        cpu += c;
        ok += o;
        bad += b;
    }
    // CPU over the whole run (the drain included), requests over the window.
    let wall = t0.elapsed().as_secs_f64();
    stop_dev.store(true, Ordering::Release);
    dev.join().expect("device thread");
    let name = match how {
        Harvest::Threads(DelayKind::Libnrt) => "libnrt-threads".to_string(),
        Harvest::Threads(DelayKind::Adaptive) => "adaptive-threads".to_string(),
        Harvest::Groups { pollers, cfg } if cfg.spin_for.is_zero() => format!("poll-group x{pollers} usleep"),
        Harvest::Groups { pollers, .. } => format!("poll-group x{pollers}"),
    };
    Shape {
        name,
        latency: Pct::of(&mut lat),
        cpu_cores: cpu as f64 / 1e9 / wall,
        requests_per_s: (ok + bad) as f64 / window,
        completed: ok,
        failed: bad,
    }
}

/// One poller: a core `PollGroup` over `block`, each lane re-submitted as soon
/// as its request completes, waiting between passes as `nrt_linux::poller` does.
fn poller(
    block: Vec<Arc<LaneMem>>,
    origin: Instant,
    cfg: ExecConfig,
    pcfg: PollerConfig,
    stop: &AtomicBool,
) -> (Vec<f64>, u64, u64, u64) {
    if let Some(cpu) = pcfg.cpu {
        let _ = pin_current_thread(cpu);
    }
    let c0 = thread_cpu_ns();
    struct Block(Vec<(LaneDev, Notifications)>);
    impl Lanes for Block {
        type Dev = LaneDev;
        fn lane(&mut self, lane: u16) -> Option<(&mut LaneDev, &mut Notifications)> {
            self.0.get_mut(usize::from(lane)).map(|(d, n)| (d, n))
        }
    }
    let mut lanes =
        Block(block.iter().map(|m| (LaneDev { mem: Arc::clone(m), origin }, notifications(true))).collect());
    let mut group: Box<PollGroup<128>> = Box::new(PollGroup::new());
    for l in 0..block.len() {
        group.insert(l as u16, cfg, 0).expect("room in the group");
    }
    let mut k = vec![0u64; block.len()];
    let mut reqs: Vec<ExecRequest> = vec![ExecRequest::new(cfg); block.len()];
    let (mut lat, mut ok, mut bad) = (Vec::new(), 0u64, 0u64);
    let mut done: Vec<(u16, Step, NrtStatus)> = Vec::with_capacity(128);
    let mut last_event = Instant::now();
    while !stop.load(Ordering::Acquire) {
        done.clear();
        group.poll(&mut lanes, |c, r| {
            done.push((c.lane, c.step, c.status));
            if let Some(slot) = reqs.get_mut(usize::from(c.lane)) {
                *slot = r.clone();
            }
        });
        if !done.is_empty() {
            let seen = origin.elapsed().as_nanos() as u64;
            for &(lane, step, status) in &done {
                let l = usize::from(lane);
                if let Some(end) = reqs.get(l).and_then(|r| end_of(&block[l], r)) {
                    lat.push(seen.saturating_sub(end) as f64);
                }
                k[l] += 1;
                if (step, status) == (Step::Done, NrtStatus::Success) {
                    ok += 1;
                } else {
                    bad += 1;
                }
                let _ = group.insert(lane, cfg, k[l]);
            }
            last_event = Instant::now();
        }
        let quiet = last_event.elapsed();
        if quiet < pcfg.spin_for {
            for _ in 0..4 {
                std::hint::spin_loop();
            }
        } else if quiet < pcfg.yield_for {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(u64::from(pcfg.sleep_us.max(1))));
        }
    }
    (lat, thread_cpu_ns() - c0, ok, bad)
}

/// `nrt-bench scale`.
pub fn run(devices: usize, cores_per_device: usize, secs: f64, work_us: u64, cpu: Option<usize>) {
    let work = Duration::from_micros(work_us);
    let n = devices * cores_per_device;
    let ncpu = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    println!(
        "scale: {devices} devices x {cores_per_device} logical cores = {n} in flight, each inference {work_us} us, \
         {:.0} inferences/s offered; {secs} s per shape on {ncpu} CPUs",
        n as f64 * 1e6 / work_us as f64
    );
    let mut hows = vec![Harvest::Threads(DelayKind::Libnrt), Harvest::Threads(DelayKind::Adaptive)];
    for pollers in [1usize, 2, 4] {
        if pollers <= devices && (devices * cores_per_device).div_ceil(pollers) <= 128 {
            hows.push(Harvest::Groups { pollers, cfg: PollerConfig { cpu, ..PollerConfig::default() } });
        }
    }
    // One poller that never spins: `usleep(1)` between passes, libnrt's wait
    // with one thread instead of one per request (what a shared, overloaded
    // machine favours: the scheduler wakes sleepers first).
    let sleeping = PollerConfig {
        cpu,
        spin_for: Duration::ZERO,
        yield_for: Duration::ZERO,
        sleep_us: SYNC_POLL_DELAY_US,
        ..PollerConfig::default()
    };
    if devices * cores_per_device <= 128 {
        hows.push(Harvest::Groups { pollers: 1, cfg: sleeping });
    }
    let mut shapes = Vec::new();
    for how in &hows {
        let s = measure(devices, cores_per_device, secs, work, how);
        println!(
            "  {:<22} notice p50 {:>9.0} ns  p99 {:>10.0} ns  max {:>11.0} ns | harvest CPU {:>5.2} cores | {:>8.0} req/s ({} ok, {} failed)",
            s.name, s.latency.p50, s.latency.p99, s.latency.max, s.cpu_cores, s.requests_per_s, s.completed, s.failed
        );
        shapes.push(s);
    }
    let libnrt = &shapes[0];
    let best = shapes
        .iter()
        .filter(|s| s.name.starts_with("poll-group"))
        .min_by(|a, b| a.latency.p99.total_cmp(&b.latency.p99))
        .expect("at least one poll-group shape");
    println!(
        "  best poll group ({}): p99 {:.1}x lower, CPU {:.1}x less than libnrt's shape",
        best.name,
        libnrt.latency.p99 / best.latency.p99,
        libnrt.cpu_cores / best.cpu_cores
    );
    let js = |s: &Shape| json!({ "name": s.name, "notice": s.latency.json(), "cpu_cores": s.cpu_cores, "requests_per_s": s.requests_per_s, "completed": s.completed, "failed": s.failed });
    write_json(
        "scale",
        &json!({
            "devices": devices, "cores_per_device": cores_per_device, "work_us": work_us, "secs_per_shape": secs,
            "cpus": ncpu, "shapes": shapes.iter().map(js).collect::<Vec<_>>(), "best_poll_group": best.name,
        }),
    );
    println!(
        "scale: poll-group p50 {:.0} p99 {:.0} cpu {:.2}; libnrt-threads p50 {:.0} p99 {:.0} cpu {:.2}",
        best.latency.p50, best.latency.p99, best.cpu_cores, libnrt.latency.p50, libnrt.latency.p99, libnrt.cpu_cores
    );
}
