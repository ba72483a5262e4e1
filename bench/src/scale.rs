//! `nrt-bench scale`: a host's worth of logical cores (16 devices x 4 by
//! default) each running one inference after another, harvested in turn by
//! every shape, in the same run:
//!
//! 1. `libnrt-threads`: one thread per in-flight request, the sync driver with
//!    `usleep(1)` between steps (libnrt's shape);
//! 2. `adaptive-threads`: one thread per request, the sync driver with the
//!    adaptive delay (spin, yield, sleep);
//! 3. `poll-group xP <policy>`: P poller threads (1, 2, 4), each a core
//!    `PollGroup` over a contiguous block of devices making due-first passes
//!    (`PollGroup::poll_due`), waiting between passes by the policy
//!    (`nrt_linux::poller::WaitPolicy`: spin, hybrid, sleep) exactly as
//!    `nrt_linux::poller` does, and kicking off each lane's next request as soon
//!    as one completes.
//!
//! The device is one thread. A lane's inference starts when the harvest kicks
//! it off and lasts a time drawn around `--work-us U`: uniform within
//! `--jitter-pct J` percent of U, and one inference in [`OUTLIER_EVERY`] lasts
//! [`OUTLIER_FACTOR`] x U (so a poller must learn the lane's time and its spread,
//! not read a period). The first inference of lane `l` is delayed by `l / lanes`
//! of U, spreading the lanes' phases. At the end the device writes START and
//! END on every ring of the lane's 2 cores x 5 engines, recording the instant
//! of the last END write first. The notice latency is that instant to the
//! instant the harvest sees the status (the thread's return for the thread
//! shapes; the poller's completion for the groups, where a spinning waiter
//! adds one cache line transfer and a sleeping one an eventfd wake-up). The
//! harvest CPU is the harvesting threads' CPU time over the wall time (cores
//! busy); the device thread's own CPU is not counted.
//!
//! `--sweep` runs every shape at U = 100 us, 1 ms and 10 ms; the last line is
//! the U = 1 ms run's best hybrid group, best spinning group and libnrt's shape.
//!
//! `NRT_BENCH_ONLY=<text>` measures only the shapes whose name contains it
//! (and libnrt's, the baseline); `NRT_BENCH_DEBUG=1` prints each poller's first
//! lanes' estimates at its end.
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
use nrt_core::exec::{exec_wait_with, ExecConfig, ExecRequest, Lanes, PollGroup, Step, SyncWait, WaitHooks};
use nrt_core::hal::{self, ErrorKind, ErrorType};
use nrt_core::nq::ring::NqProducer;
use nrt_core::nq::{Notifications, RawEntry, Subtype, INFER_STATUS_NQS};
use nrt_core::NrtStatus;
use nrt_linux::poller::{hybrid_wait_for_pass, set_timer_slack_1ns, HybridWaiter, PollerConfig, WaitPolicy};
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
/// One inference in this many is a long outlier.
pub const OUTLIER_EVERY: u64 = 200;
/// A long outlier lasts this many times the work.
pub const OUTLIER_FACTOR: u64 = 4;

/// One lane's memory: 10 rings, their HEAD registers, the END instants, and
/// the harvest's kickoffs (how many, and when the latest was).
struct LaneMem {
    words: Vec<AtomicU64>,
    heads: Vec<AtomicU32>,
    end_ns: Vec<AtomicU64>,
    kicks: AtomicU64,
    kick_ns: AtomicU64,
}

impl LaneMem {
    /// The harvest kicks off the lane's next inference.
    fn kick(&self, origin: Instant) {
        self.kick_ns.store(origin.elapsed().as_nanos() as u64, Ordering::Relaxed);
        self.kicks.fetch_add(1, Ordering::Release);
    }
}

impl LaneMem {
    fn new() -> LaneMem {
        LaneMem {
            words: (0..RINGS * SLOTS * 2).map(|_| AtomicU64::new(0)).collect(),
            heads: (0..RINGS).map(|_| AtomicU32::new(0)).collect(),
            end_ns: (0..ENDS).map(|_| AtomicU64::new(0)).collect(),
            kicks: AtomicU64::new(0),
            kick_ns: AtomicU64::new(0),
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
impl hal::CollectivesProxy for LaneDev {}
impl hal::FaultProbe for LaneDev {}
impl<E: Copy + Into<Event>> hal::EventSink<E> for LaneDev {
    fn event(&mut self, _: &E) {}
}
impl nrt_core::counters::CounterSink for LaneDev {}

impl hal::TensorNotify for LaneDev {}

/// The hook that abandons a lane's wait once the bench raises the flag (the
/// device has stopped: the request would never complete).
struct Abort<'a>(&'a AtomicBool);

impl<D: ?Sized, W: ?Sized> WaitHooks<D, W> for Abort<'_> {
    fn before_delay(
        &mut self,
        _: &ExecRequest,
        _: &mut D,
        _: &Notifications,
        _: &mut W,
    ) -> std::ops::ControlFlow<NrtStatus> {
        if self.0.load(Ordering::Relaxed) {
            std::ops::ControlFlow::Break(NrtStatus::Invalid)
        } else {
            std::ops::ControlFlow::Continue(())
        }
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

/// How long inference `k` of a lane lasts, ns: around `work_ns`, uniform
/// within `jitter_pct` percent, one in [`OUTLIER_EVERY`] [`OUTLIER_FACTOR`]
/// times as long (a xorshift stream per lane, the same every run).
fn duration_ns(rng: &mut u64, work_ns: u64, jitter_pct: u64) -> u64 {
    *rng ^= *rng << 13;
    *rng ^= *rng >> 7;
    *rng ^= *rng << 17;
    if (*rng).is_multiple_of(OUTLIER_EVERY) {
        return work_ns * OUTLIER_FACTOR;
    }
    let span = work_ns * jitter_pct.min(100) / 100;
    let r = (*rng >> 16) % (2 * span + 1);
    (work_ns + r).saturating_sub(span).max(1)
}

/// The device thread: each lane's inference starts at its kickoff and ends a
/// drawn time later (the first also delayed by the lane's phase).
fn device(lanes: Vec<Arc<LaneMem>>, origin: Instant, work: Duration, jitter_pct: u64, stop: Arc<AtomicBool>) -> u64 {
    let n = lanes.len();
    let work_ns = work.as_nanos() as u64;
    let mut prods: Vec<Vec<NqProducer>> =
        (0..n).map(|_| (0..RINGS).map(|_| NqProducer::new(RING).expect("ring")).collect()).collect();
    let mut rng: Vec<u64> = (0..n).map(|l| 0x9E37_79B9_7F4A_7C15 ^ ((l as u64 + 1) * 0x2545_F491_4F6C_DD1D)).collect();
    // When the inference running on each lane ends (None: not kicked off yet).
    let mut end_at: Vec<Option<u64>> = vec![None; n];
    let mut k = vec![0u64; n];
    let mut written = 0u64;
    while !stop.load(Ordering::Acquire) {
        let now = origin.elapsed().as_nanos() as u64;
        for l in 0..n {
            let mem = &lanes[l];
            let Some(at) = end_at[l] else {
                if mem.kicks.load(Ordering::Acquire) > k[l] {
                    let phase = if k[l] == 0 { work_ns * l as u64 / n as u64 } else { 0 };
                    let d = duration_ns(&mut rng[l], work_ns, jitter_pct);
                    end_at[l] = Some(mem.kick_ns.load(Ordering::Relaxed) + phase + d);
                }
                continue;
            };
            if now < at {
                continue;
            }
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
            end_at[l] = None;
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

fn policy_name(p: WaitPolicy) -> &'static str {
    match p {
        WaitPolicy::Spin => "spin",
        WaitPolicy::Hybrid => "hybrid",
        WaitPolicy::Sleep => "sleep",
    }
}

fn measure(devices: usize, cores_per_device: usize, secs: f64, work: Duration, jitter: u64, how: &Harvest) -> Shape {
    let n = devices * cores_per_device;
    let origin = Instant::now();
    let mems: Vec<Arc<LaneMem>> = (0..n).map(|_| Arc::new(LaneMem::new())).collect();
    let stop_dev = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let abort = Arc::new(AtomicBool::new(false));
    let dev = {
        let (m, s) = (mems.clone(), Arc::clone(&stop_dev));
        std::thread::spawn(move || device(m, origin, work, jitter, s))
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
        Harvest::Groups { pollers, cfg } => format!("poll-group x{pollers} {}", policy_name(cfg.policy)),
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

/// One poller: a core `PollGroup` over `block`, each lane kicked off again as
/// soon as its request completes, making due-first passes and waiting between
/// them as `nrt_linux::poller` does for `pcfg.policy`.
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
    if pcfg.policy == WaitPolicy::Hybrid {
        set_timer_slack_1ns();
    }
    let c0 = thread_cpu_ns();
    struct Block(Vec<(LaneDev, Notifications)>);
    impl Lanes for Block {
        type Dev = LaneDev;
        fn lane(&mut self, lane: u16) -> Option<(&mut LaneDev, &mut Notifications)> {
            self.0.get_mut(usize::from(lane)).map(|(d, n)| (d, n))
        }
    }
    let now = || origin.elapsed().as_nanos() as u64;
    let mut lanes =
        Block(block.iter().map(|m| (LaneDev { mem: Arc::clone(m), origin }, notifications(true))).collect());
    let mut group: Box<PollGroup<128>> = Box::new(PollGroup::new());
    group.set_schedule(pcfg.schedule());
    for (l, m) in block.iter().enumerate() {
        group.insert(l as u16, cfg, 0).expect("room in the group");
        m.kick(origin);
    }
    let mut k = vec![0u64; block.len()];
    let mut reqs: Vec<ExecRequest> = vec![ExecRequest::new(cfg); block.len()];
    let (mut lat, mut ok, mut bad) = (Vec::new(), 0u64, 0u64);
    let mut done: Vec<(u16, Step)> = Vec::with_capacity(128);
    let mut last_event = Instant::now();
    while !stop.load(Ordering::Acquire) {
        done.clear();
        let pass_ns = now();
        group.poll_due(&mut lanes, pass_ns, |c, r| {
            done.push((c.lane, c.step));
            if let Some(slot) = reqs.get_mut(usize::from(c.lane)) {
                *slot = r.clone();
            }
        });
        if !done.is_empty() {
            let seen = now();
            for &(lane, step) in &done {
                let l = usize::from(lane);
                if let Some(end) = reqs.get(l).and_then(|r| end_of(&block[l], r)) {
                    lat.push(seen.saturating_sub(end) as f64);
                }
                k[l] += 1;
                if step == Step::Done(NrtStatus::Success) {
                    ok += 1;
                } else {
                    bad += 1;
                }
                let _ = group.insert(lane, cfg, k[l]);
                block[l].kick(origin);
            }
            last_event = Instant::now();
            continue;
        }
        match pcfg.policy {
            WaitPolicy::Spin => {
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
            WaitPolicy::Sleep => std::thread::sleep(Duration::from_micros(u64::from(pcfg.sleep_us.max(1)))),
            WaitPolicy::Hybrid => {
                let _ =
                    hybrid_wait_for_pass(&pcfg, group.earliest_due_ns(), pass_ns, &mut BenchWaiter { origin, stop });
            }
        }
    }
    if std::env::var_os("NRT_BENCH_DEBUG").is_some() {
        eprintln!("estimates: {:?}", (0..block.len().min(4)).map(|l| group.estimate(l as u16)).collect::<Vec<_>>());
    }
    (lat, thread_cpu_ns() - c0, ok, bad)
}

/// The bench poller's [`HybridWaiter`]: the same waits as the poller
/// thread's (its clock, `thread::sleep`), ended early only by the run's end.
struct BenchWaiter<'a> {
    origin: Instant,
    stop: &'a AtomicBool,
}

impl HybridWaiter for BenchWaiter<'_> {
    fn now_ns(&mut self) -> u64 {
        self.origin.elapsed().as_nanos() as u64
    }
    fn sleep_ns(&mut self, ns: u64) {
        std::thread::sleep(Duration::from_nanos(ns));
    }
    fn spin(&mut self) {
        std::hint::spin_loop();
    }
    fn interrupted(&mut self) -> bool {
        self.stop.load(Ordering::Acquire)
    }
}

/// The shapes of one run, each measured in turn at `work_us`.
fn run_one(
    devices: usize,
    cores_per_device: usize,
    secs: f64,
    work_us: u64,
    jitter: u64,
    base: PollerConfig,
) -> Vec<Shape> {
    let work = Duration::from_micros(work_us);
    let n = devices * cores_per_device;
    let ncpu = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    println!(
        "scale: {devices} devices x {cores_per_device} logical cores = {n} in flight, each inference {work_us} us \
         +/- {jitter} % (1 in {OUTLIER_EVERY} {OUTLIER_FACTOR}x), {:.0} inferences/s offered; {secs} s per shape on {ncpu} CPUs",
        n as f64 * 1e6 / work_us as f64
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
    let mut shapes = Vec::new();
    for how in &hows {
        let name = match how {
            Harvest::Threads(DelayKind::Libnrt) => "libnrt-threads".to_string(),
            Harvest::Threads(DelayKind::Adaptive) => "adaptive-threads".to_string(),
            Harvest::Groups { pollers, cfg } => format!("poll-group x{pollers} {}", policy_name(cfg.policy)),
        };
        if !name.contains(only.as_str()) && !name.starts_with("libnrt") {
            continue;
        }
        let s = measure(devices, cores_per_device, secs, work, jitter, how);
        println!(
            "  {:<22} notice p50 {:>9.0} ns  p99 {:>10.0} ns  max {:>11.0} ns | harvest CPU {:>5.2} cores | {:>8.0} req/s ({} ok, {} failed)",
            s.name, s.latency.p50, s.latency.p99, s.latency.max, s.cpu_cores, s.requests_per_s, s.completed, s.failed
        );
        shapes.push(s);
    }
    shapes
}

fn best<'a>(shapes: &'a [Shape], suffix: &str) -> Option<&'a Shape> {
    shapes
        .iter()
        .filter(|s| s.name.starts_with("poll-group") && s.name.ends_with(suffix))
        .min_by(|a, b| a.latency.p99.total_cmp(&b.latency.p99))
}

/// `nrt-bench scale`: one run at `work_us`, or with `sweep` one at each of
/// 100 us, 1 ms and 10 ms (the last line then from the 1 ms run).
pub fn run(
    devices: usize,
    cores_per_device: usize,
    secs: f64,
    work_us: u64,
    jitter: u64,
    sweep: bool,
    base: PollerConfig,
) {
    let ncpu = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let works: Vec<u64> = if sweep { vec![100, 1000, 10_000] } else { vec![work_us] };
    let js = |s: &Shape| json!({ "name": s.name, "notice": s.latency.json(), "cpu_cores": s.cpu_cores, "requests_per_s": s.requests_per_s, "completed": s.completed, "failed": s.failed });
    let mut runs = Vec::new();
    let mut last = None;
    for &u in &works {
        let shapes = run_one(devices, cores_per_device, secs, u, jitter, base);
        let libnrt = &shapes[0];
        let groups_below = shapes
            .iter()
            .filter(|s| s.name.starts_with("poll-group"))
            .filter(|s| s.latency.p99 < libnrt.latency.p99 && s.cpu_cores < libnrt.cpu_cores)
            .count();
        println!("  U = {u} us: {groups_below} of 9 poll-group shapes below libnrt's shape on both p99 and CPU");
        runs.push(json!({
            "work_us": u, "jitter_pct": jitter,
            "shapes": shapes.iter().map(js).collect::<Vec<_>>(),
            "best_hybrid": best(&shapes, "hybrid").map(|s| s.name.clone()),
            "best_spin": best(&shapes, "spin").map(|s| s.name.clone()),
        }));
        if u == 1000 || last.is_none() {
            last = Some(shapes);
        }
    }
    write_json(
        "scale",
        &json!({
            "devices": devices, "cores_per_device": cores_per_device, "secs_per_shape": secs, "cpus": ncpu,
            "jitter_pct": jitter, "outlier_every": OUTLIER_EVERY, "outlier_factor": OUTLIER_FACTOR, "runs": runs,
        }),
    );
    let Some(shapes) = last else { return };
    let line = |s: Option<&Shape>| match s {
        Some(s) => format!("p50 {:.0} p99 {:.0} cpu {:.2}", s.latency.p50, s.latency.p99, s.cpu_cores),
        None => "p50 - p99 - cpu -".to_string(),
    };
    println!(
        "scale: hybrid {}; spinning {}; libnrt-threads {}",
        line(best(&shapes, "hybrid")),
        line(best(&shapes, "spin")),
        line(shapes.first())
    );
}
