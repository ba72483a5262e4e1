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
//! The device is one thread, which sleeps to each due write (an absolute
//! deadline, 1 ns timer slack: a real device takes no host CPU between its
//! writes; `--device spin` spins instead, the earlier shape, labelled so).
//! A lane's inference starts when the harvest kicks
//! it off and lasts a time drawn around `--work-us U`: uniform within
//! `--jitter-pct J` percent of U, and one inference in [`OUTLIER_EVERY`] lasts
//! [`OUTLIER_FACTOR`] x U (so a poller must learn the lane's time and its spread,
//! not read a period). The first inference of lane `l` is delayed by `l / lanes`
//! of U, spreading the lanes' phases. At the end the device writes START and
//! END on every ring of the lane's 2 cores x 5 engines, stamping the instant
//! of the last END write just before that store (published with it: the
//! device's own lateness lengthens the inference, never the notice). The
//! notice latency is that instant to the
//! instant the harvest sees the status (the thread's return for the thread
//! shapes; the poller's completion for the groups, where a spinning waiter
//! adds one cache line transfer and a sleeping one an eventfd wake-up). The
//! harvest CPU is the harvesting threads' CPU time over the wall time (cores
//! busy); the device thread's own CPU is not counted.
//!
//! In the 1 ms run (or the only one), with the same device thread, the
//! floors: a bare spinning reader over the same lanes (one look per lane at
//! the slot of its next END) and a bare sleeping reader at each slice of
//! [`SLICES_US`] and the default; and the hybrid x1 poller at each of those
//! slices, beside its bare reader. The goals are printed as `verdict:`
//! lines, each a ratio within the run; [`choose_slice`] is the rule for the
//! default slice.
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

use crate::clock::{self, Deadlines, DeviceKind};
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
/// drawn time later (the first also delayed by the lane's phase). `Sleep`:
/// between writes it sleeps to the earliest due write, or to its next look
/// for kickoffs ([`clock::device_wake_ns`]); `Spin`: it spins. The instant
/// of each inference's last END store is stamped just before that store
/// (published with it), so a late wake-up of the device lengthens the
/// inference, never the notice. Returns the inferences written and the
/// thread's CPU time, ns.
fn device(
    lanes: Vec<Arc<LaneMem>>,
    origin: Instant,
    work: Duration,
    jitter_pct: u64,
    stop: Arc<AtomicBool>,
    kind: DeviceKind,
) -> (u64, u64, Vec<f64>) {
    let c0 = thread_cpu_ns();
    let mut late = Vec::new();
    let n = lanes.len();
    let work_ns = work.as_nanos() as u64;
    let deadlines = (kind == DeviceKind::Sleep).then(|| {
        clock::pin_device_thread();
        Deadlines::new(origin)
    });
    let look = clock::look_ns(work_ns, jitter_pct);
    let mut prods: Vec<Vec<NqProducer>> =
        (0..n).map(|_| (0..RINGS).map(|_| NqProducer::new(RING).expect("ring")).collect()).collect();
    let mut rng: Vec<u64> = (0..n).map(|l| 0x9E37_79B9_7F4A_7C15 ^ ((l as u64 + 1) * 0x2545_F491_4F6C_DD1D)).collect();
    // When the inference running on each lane ends (None: not kicked off yet).
    let mut end_at: Vec<Option<u64>> = vec![None; n];
    let mut k = vec![0u64; n];
    let mut written = 0u64;
    while !stop.load(Ordering::Acquire) {
        let now = origin.elapsed().as_nanos() as u64;
        let (mut earliest, mut blocked) = (None::<u64>, false);
        for l in 0..n {
            let mem = &lanes[l];
            if end_at[l].is_none() && mem.kicks.load(Ordering::Acquire) > k[l] {
                let phase = if k[l] == 0 { work_ns * l as u64 / n as u64 } else { 0 };
                let d = duration_ns(&mut rng[l], work_ns, jitter_pct);
                end_at[l] = Some(mem.kick_ns.load(Ordering::Relaxed) + phase + d);
            }
            let Some(at) = end_at[l] else { continue };
            if now < at {
                earliest = Some(earliest.map_or(at, |e| e.min(at)));
                continue;
            }
            let p = &mut prods[l];
            // Room for one START and one END on every ring, or try again later.
            for (r, pr) in p.iter_mut().enumerate() {
                pr.on_head_write(mem.heads[r].load(Ordering::Acquire));
            }
            if p.iter().any(|pr| pr.free() < 2) {
                blocked = true;
                continue;
            }
            for sub in [Subtype::START, Subtype::END] {
                for (r, pr) in p.iter_mut().enumerate() {
                    let id = INFER_STATUS_NQS[r % ENGINES_PER_CORE];
                    // The inference number rides in the timestamp: (k + 1) us.
                    let mut e = RawEntry::new(sub, id, 0, 0, (k[l] + 1) * 1000).to_array();
                    let off = pr.push(&mut e).expect("room checked") as usize / 16;
                    let i = (r * SLOTS + off) * 2;
                    mem.words[i + 1].store(u64::from_le_bytes(e[8..].try_into().expect("8")), Ordering::Relaxed);
                    if sub == Subtype::END && r == RINGS - 1 {
                        // The last record: its write instant, published with it.
                        let t_end = origin.elapsed().as_nanos() as u64;
                        mem.end_ns[(k[l] as usize) % ENDS].store(t_end + 1, Ordering::Relaxed);
                        late.push(t_end.saturating_sub(at) as f64);
                    }
                    mem.words[i].store(u64::from_le_bytes(e[..8].try_into().expect("8")), Ordering::Release);
                }
            }
            written += 1;
            k[l] += 1;
            end_at[l] = None;
        }
        match &deadlines {
            None => std::hint::spin_loop(),
            Some(d) => {
                let now = origin.elapsed().as_nanos() as u64;
                d.sleep_until(clock::device_wake_ns(earliest, blocked, now, look, DEVICE_RETRY_NS));
            }
        }
    }
    (written, thread_cpu_ns() - c0, late)
}

/// A sleeping device with a write blocked by a full ring looks again this
/// soon, ns.
const DEVICE_RETRY_NS: u64 = 5_000;

/// What one harvest shape measured.
struct Shape {
    name: String,
    latency: Pct,
    cpu_cores: f64,
    /// The device thread's own CPU over the same wall time (not harvest).
    device_cpu_cores: f64,
    /// Where the harvest's time went, per second of wall time over its threads.
    passes_per_s: f64,
    sleeps_per_s: f64,
    /// Involuntary context switches of the harvest threads (preemptions).
    preempted_per_s: f64,
    /// Share of the wall time the harvest threads spent in passes and asleep.
    in_passes: f64,
    asleep: f64,
    /// From the start of the pass that saw a completion to its notice (the
    /// rest of the notice is the wait before that pass).
    in_pass: Pct,
    /// How late each of the harvest's sleeps ended past what it asked (the
    /// timer, then the wait for a CPU), ns.
    overshoot: Pct,
    /// How late the device wrote each inference's last END past its due time, ns.
    device_late: Pct,
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
    Groups {
        pollers: usize,
        cfg: PollerConfig,
    },
    /// One bare reader over every lane: spinning (`None`) or sleeping this
    /// long from one sweep to the next.
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
        all.sleeps += o.sleeps;
        all.preempted += o.preempted;
        all.pass_ns += o.pass_ns;
        all.sleep_ns += o.sleep_ns;
    }
    let Out { mut lat, mut in_pass, mut overshoot, cpu_ns: cpu, ok, bad, .. } = all;
    // CPU over the whole run (the drain included), requests over the window.
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

/// One poller: a core `PollGroup` over `block`, each lane kicked off again as
/// soon as its request completes, making due-first passes and waiting between
/// them as `nrt_linux::poller` does for `pcfg.policy`.
fn poller(block: Vec<Arc<LaneMem>>, origin: Instant, cfg: ExecConfig, pcfg: PollerConfig, stop: &AtomicBool) -> Out {
    if let Some(cpu) = pcfg.cpu {
        let _ = pin_current_thread(cpu);
    }
    if pcfg.policy == WaitPolicy::Hybrid {
        set_timer_slack_1ns();
    }
    let (c0, v0) = (thread_cpu_ns(), preemptions());
    let mut out = Out::default();
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
    // Each completion with its instant: the poller thread answers its waiter
    // in this callback (`nrt_linux::poller`), so that is the notice.
    let mut done: Vec<(u16, Step, u64)> = Vec::with_capacity(128);
    let mut last_event = Instant::now();
    while !stop.load(Ordering::Acquire) {
        done.clear();
        let pass_ns = now();
        group.poll_due(&mut lanes, pass_ns, |c, r| {
            done.push((c.lane, c.step, now()));
            if let Some(slot) = reqs.get_mut(usize::from(c.lane)) {
                *slot = r.clone();
            }
        });
        let pass_end = now();
        out.passes += 1;
        out.pass_ns += pass_end - pass_ns;
        if !done.is_empty() {
            for &(lane, step, seen) in &done {
                let l = usize::from(lane);
                if let Some(end) = reqs.get(l).and_then(|r| end_of(&block[l], r)) {
                    lat.push(seen.saturating_sub(end) as f64);
                    out.in_pass.push((seen - pass_ns) as f64);
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
                    let t = now();
                    std::thread::sleep(Duration::from_micros(u64::from(pcfg.sleep_us.max(1))));
                    out.sleeps += 1;
                    out.sleep_ns += now() - t;
                }
            }
            WaitPolicy::Sleep => {
                let t = now();
                std::thread::sleep(Duration::from_micros(u64::from(pcfg.sleep_us.max(1))));
                let slept = now() - t;
                out.sleeps += 1;
                out.sleep_ns += slept;
                out.overshoot.push(slept.saturating_sub(u64::from(pcfg.sleep_us.max(1)) * 1000) as f64);
            }
            WaitPolicy::Hybrid => {
                let mut w = BenchWaiter { origin, stop, sleeps: 0, sleep_ns: 0, overshoot: Vec::new() };
                let _ = hybrid_wait_for_pass(&pcfg, group.earliest_due_ns(), pass_ns, &mut w);
                out.sleeps += w.sleeps;
                out.sleep_ns += w.sleep_ns;
                out.overshoot.append(&mut w.overshoot);
            }
        }
    }
    if std::env::var_os("NRT_BENCH_DEBUG").is_some() {
        eprintln!("estimates: {:?}", (0..block.len().min(4)).map(|l| group.estimate(l as u16)).collect::<Vec<_>>());
    }
    Out { lat, cpu_ns: thread_cpu_ns() - c0, ok, bad, preempted: preemptions() - v0, ..out }
}

/// What one harvest thread measured.
#[derive(Default)]
struct Out {
    /// Notice latencies, ns.
    lat: Vec<f64>,
    /// From the start of the pass that saw each completion to its notice, ns.
    in_pass: Vec<f64>,
    cpu_ns: u64,
    ok: u64,
    bad: u64,
    passes: u64,
    sleeps: u64,
    /// Involuntary context switches.
    preempted: u64,
    /// Wall time in passes and asleep, ns.
    pass_ns: u64,
    sleep_ns: u64,
    /// Each sleep's overshoot, ns.
    overshoot: Vec<f64>,
}

/// The calling thread's involuntary context switches so far (the scheduler
/// took its CPU away).
#[allow(unsafe_code)]
fn preemptions() -> u64 {
    // SAFETY: an all-zero rusage is a valid value to be overwritten.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid out-pointer to a local rusage.
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } != 0 {
        return 0;
    }
    ru.ru_nivcsw as u64
}

/// A bare reader over every lane, the floor a poller is measured against:
/// per lane it looks at the one slot where the next END of the lane's last
/// ring lands (two loads against the record it expects, from a shadow of
/// the device's producer), and on seeing it takes the notice, hands every
/// ring's HEAD back and kicks the lane off again. Nothing else: no request,
/// no group, no estimate. `slice`: it sleeps to one slice after each sweep's
/// start (absolute deadline, 1 ns timer slack) instead of spinning.
fn bare_reader(lanes: Vec<Arc<LaneMem>>, origin: Instant, slice: Option<Duration>, stop: &AtomicBool) -> Out {
    let (c0, v0) = (thread_cpu_ns(), preemptions());
    let mut out = Out::default();
    let deadlines = slice.map(|_| Deadlines::new(origin));
    let slice_ns = slice.map_or(0, |s| s.as_nanos() as u64);
    let n = lanes.len();
    let mut shadow: Vec<NqProducer> = (0..n).map(|_| NqProducer::new(RING).expect("ring")).collect();
    let mut k = vec![0u64; n];
    let mut expect: Vec<(usize, u64, u64)> = shadow.iter_mut().map(|p| next_end(p, 0)).collect();
    for m in &lanes {
        m.kick(origin);
    }
    let (mut lat, mut ok) = (Vec::new(), 0u64);
    while !stop.load(Ordering::Acquire) {
        let sweep_ns = origin.elapsed().as_nanos() as u64;
        for l in 0..n {
            let (i, lo, hi) = expect[l];
            let mem = &lanes[l];
            if mem.words[i].load(Ordering::Acquire) != lo || mem.words[i + 1].load(Ordering::Relaxed) != hi {
                continue;
            }
            let seen = origin.elapsed().as_nanos() as u64;
            // Stored before the record was published.
            if let Some(end) = mem.end_ns[(k[l] as usize) % ENDS].load(Ordering::Acquire).checked_sub(1) {
                lat.push(seen.saturating_sub(end) as f64);
                out.in_pass.push((seen - sweep_ns) as f64);
            }
            ok += 1;
            k[l] += 1;
            // Every ring moved by one START and one END.
            let head = ((2 * k[l] * 16) % u64::from(RING)) as u32;
            for h in &mem.heads {
                h.store(head, Ordering::Release);
            }
            shadow[l].on_head_write(head);
            expect[l] = next_end(&mut shadow[l], k[l]);
            mem.kick(origin);
        }
        let t = origin.elapsed().as_nanos() as u64;
        out.passes += 1;
        out.pass_ns += t - sweep_ns;
        match &deadlines {
            None => std::hint::spin_loop(),
            Some(d) => {
                d.sleep_until(sweep_ns + slice_ns);
                let woke = origin.elapsed().as_nanos() as u64;
                out.sleeps += 1;
                out.sleep_ns += woke - t;
                out.overshoot.push(woke.saturating_sub(sweep_ns + slice_ns) as f64);
            }
        }
    }
    Out { lat, cpu_ns: thread_cpu_ns() - c0, ok, bad: 0, preempted: preemptions() - v0, ..out }
}

/// Where inference `k`'s END lands on a lane's last ring and its two words
/// (lo, hi), from the shadow of that ring's producer (its START, then its END).
fn next_end(shadow: &mut NqProducer, k: u64) -> (usize, u64, u64) {
    let id = INFER_STATUS_NQS[(RINGS - 1) % ENGINES_PER_CORE];
    let mut start = RawEntry::new(Subtype::START, id, 0, 0, (k + 1) * 1000).to_array();
    let _ = shadow.push(&mut start);
    let mut e = RawEntry::new(Subtype::END, id, 0, 0, (k + 1) * 1000).to_array();
    let off = shadow.push(&mut e).expect("the reader hands every slot back") as usize / 16;
    let w = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("8"));
    (((RINGS - 1) * SLOTS + off) * 2, w(&e[..8]), w(&e[8..]))
}

/// The bench poller's [`HybridWaiter`]: the same waits as the poller
/// thread's (its clock, `thread::sleep`), ended early only by the run's end.
struct BenchWaiter<'a> {
    origin: Instant,
    stop: &'a AtomicBool,
    /// Sleeps made, their wall time and each one's overshoot, ns.
    sleeps: u64,
    sleep_ns: u64,
    overshoot: Vec<f64>,
}

impl HybridWaiter for BenchWaiter<'_> {
    fn now_ns(&mut self) -> u64 {
        self.origin.elapsed().as_nanos() as u64
    }
    fn sleep_ns(&mut self, ns: u64) {
        let t = Instant::now();
        std::thread::sleep(Duration::from_nanos(ns));
        let slept = t.elapsed().as_nanos() as u64;
        self.sleeps += 1;
        self.sleep_ns += slept;
        self.overshoot.push(slept.saturating_sub(ns) as f64);
    }
    fn spin(&mut self) {
        std::hint::spin_loop();
    }
    fn interrupted(&mut self) -> bool {
        self.stop.load(Ordering::Acquire)
    }
}

/// The hybrid slices of the sweep, us (the default slice is added when not among them).
pub const SLICES_US: [u64; 5] = [25, 50, 100, 200, 400];

/// One U's measurements: every shape, and (with `extras`) the floors and
/// the hybrid slice sweep.
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
        "  {:<26}   where: preempted {:.0}/s; {:.0} passes/s ({:.2} of the wall in them), {:.0} sleeps/s ({:.2} asleep, \
         overshoot p50 {:.0} ns p99 {:.0} ns); pass start -> notice p50 {:.0} ns p99 {:.0} ns; device late p50 {:.0} ns p99 {:.0} ns",
        "",
        s.preempted_per_s,
        s.passes_per_s,
        s.in_passes,
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

/// The shapes of one run, each measured in turn at `work_us`; with `extras`
/// also the floors (a bare spinning reader; a bare sleeping reader at each
/// of `slices_us`) and the hybrid x1 poller at each of `slices_us`, each
/// slice's poller beside its bare reader.
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

fn best<'a>(shapes: &'a [Shape], suffix: &str) -> Option<&'a Shape> {
    shapes
        .iter()
        .filter(|s| s.name.starts_with("poll-group") && s.name.ends_with(suffix))
        .min_by(|a, b| a.latency.p99.total_cmp(&b.latency.p99))
}

/// One point of the hybrid slice sweep: slice (us), notice p99 (ns), harvest CPU (cores).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SlicePoint {
    pub slice_us: u64,
    pub p99_ns: f64,
    pub cpu_cores: f64,
}

/// Why [`choose_slice`] chose its slice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SliceReason {
    /// The shortest slice with p99 and CPU each at most `1/ratio` of libnrt's.
    BothGoals,
    /// None met both: the shortest slice with CPU at most `1/ratio` of libnrt's.
    CpuGoal,
    /// None met the CPU goal: the cheapest slice.
    Cheapest,
}

/// The rule for a hybrid poller's default slice (G-POLL-SLICE), from a sweep measured
/// beside libnrt's shape in the same run: the shortest slice whose p99 and
/// harvest CPU are each at most `1/ratio` of libnrt's (the hybrid goal);
/// when none, the shortest whose CPU is (a poller's first duty on a shared
/// host is to leave the CPU to the work); when none, the cheapest. `None`
/// for an empty sweep.
pub fn choose_slice(
    points: &[SlicePoint],
    libnrt_p99_ns: f64,
    libnrt_cpu: f64,
    ratio: f64,
) -> Option<(u64, SliceReason)> {
    let mut by_slice: Vec<SlicePoint> = points.to_vec();
    by_slice.sort_by_key(|p| p.slice_us);
    let cpu_ok = |p: &SlicePoint| p.cpu_cores * ratio <= libnrt_cpu;
    let p99_ok = |p: &SlicePoint| p.p99_ns * ratio <= libnrt_p99_ns;
    if let Some(p) = by_slice.iter().find(|p| cpu_ok(p) && p99_ok(p)) {
        return Some((p.slice_us, SliceReason::BothGoals));
    }
    if let Some(p) = by_slice.iter().find(|p| cpu_ok(p)) {
        return Some((p.slice_us, SliceReason::CpuGoal));
    }
    by_slice.iter().min_by(|a, b| a.cpu_cores.total_cmp(&b.cpu_cores)).map(|p| (p.slice_us, SliceReason::Cheapest))
}

/// `met` or `MISSED`.
fn verdict(ok: bool) -> &'static str {
    if ok {
        "met"
    } else {
        "MISSED"
    }
}

/// The goals as ratios within one run, one line each.
fn verdicts(runs: &[Run], default_slice_us: u64) -> Vec<String> {
    let mut out = Vec::new();
    let Some(r) = runs.iter().find(|r| r.work_us == 1000).or(runs.first()) else { return out };
    let Some(libnrt) = r.shapes.first() else { return out };
    let (lp99, lcpu) = (libnrt.latency.p99, libnrt.cpu_cores);
    let u = r.work_us;
    // Hybrid: p99 and CPU each <= 1/10 of libnrt's at one slice of the sweep.
    let pts: Vec<SlicePoint> = r
        .slices
        .iter()
        .map(|(us, s)| SlicePoint { slice_us: *us, p99_ns: s.latency.p99, cpu_cores: s.cpu_cores })
        .collect();
    if !pts.is_empty() {
        let each = pts
            .iter()
            .map(|p| {
                format!("{} us: p99 {:.1}x lower, CPU {:.1}x lower", p.slice_us, lp99 / p.p99_ns, lcpu / p.cpu_cores)
            })
            .collect::<Vec<_>>()
            .join("; ");
        let met = pts.iter().find(|p| p.p99_ns * 10.0 <= lp99 && p.cpu_cores * 10.0 <= lcpu);
        out.push(format!(
            "verdict: hybrid x1, U = {u} us, against libnrt's shape (p99 {:.0} ns, CPU {:.2}): {each} \
             (goal: both >= 10x at one slice): {}",
            lp99,
            lcpu,
            match met {
                Some(p) => format!("met at {} us", p.slice_us),
                None => "MISSED".to_string(),
            }
        ));
        if let Some((sl, why)) = choose_slice(&pts, lp99, lcpu, 10.0) {
            out.push(format!("verdict: the slice rule picks {sl} us ({why:?}; the default is {default_slice_us} us)"));
        }
    }
    // The spinning poller over all the lanes against the bare spinning reader over them.
    let floor = r.floors.iter().find(|(s, _)| s.is_none()).map(|(_, s)| s);
    if let (Some(f), Some(sp)) = (floor, r.shapes.iter().find(|s| s.name == "poll-group x1 spin")) {
        let (a, b) = (sp.latency.p50 / f.latency.p50, sp.latency.p99 / f.latency.p99);
        out.push(format!(
            "verdict: {} against the bare spinning reader: p50 {:.0} / {:.0} ns = {a:.1}x (goal <= 5x), \
             p99 {:.0} / {:.0} ns = {b:.1}x (goal <= 3x): {}",
            sp.name,
            sp.latency.p50,
            f.latency.p50,
            sp.latency.p99,
            f.latency.p99,
            verdict(a <= 5.0 && b <= 3.0)
        ));
    }
    // Hybrid at the default slice against the bare sleeping reader at it.
    let hyb = r.slices.iter().find(|(us, _)| *us == default_slice_us).map(|(_, s)| s);
    let bare = r.floors.iter().find(|(us, _)| *us == Some(default_slice_us)).map(|(_, s)| s);
    if let (Some(h), Some(b)) = (hyb, bare) {
        let x = h.latency.p99 / b.latency.p99;
        out.push(format!(
            "verdict: hybrid x1 at its default slice {default_slice_us} us against the bare sleeping reader at it: \
             p99 {:.0} / {:.0} ns = {x:.1}x (goal <= 3x): {}; CPU {:.2} against {:.2}",
            h.latency.p99,
            b.latency.p99,
            verdict(x <= 3.0),
            h.cpu_cores,
            b.cpu_cores
        ));
    }
    // Every poll-group shape below libnrt's on both, at every U.
    for r in runs {
        let Some(l) = r.shapes.first() else { continue };
        let groups: Vec<&Shape> = r.shapes.iter().filter(|s| s.name.starts_with("poll-group")).collect();
        if groups.is_empty() {
            continue;
        }
        let below = groups.iter().filter(|s| s.latency.p99 < l.latency.p99 && s.cpu_cores < l.cpu_cores).count();
        let not: Vec<&str> = groups
            .iter()
            .filter(|s| !(s.latency.p99 < l.latency.p99 && s.cpu_cores < l.cpu_cores))
            .map(|s| s.name.as_str())
            .collect();
        out.push(format!(
            "verdict: U = {} us: {below} of {} poll-group shapes below libnrt's on both p99 and CPU (goal: all){}: {}",
            r.work_us,
            groups.len(),
            if not.is_empty() { format!(", not: {}", not.join(", ")) } else { String::new() },
            verdict(below == groups.len())
        ));
    }
    out
}

/// `nrt-bench scale`: one run at `work_us`, or with `sweep` one at each of
/// 100 us, 1 ms and 10 ms (the last line then from the 1 ms run); the floors
/// and the hybrid slice sweep in the 1 ms run (or the only one).
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
                "preempted_per_s": s.preempted_per_s, "passes_per_s": s.passes_per_s, "sleeps_per_s": s.sleeps_per_s,
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
    fn the_slice_rule_takes_the_shortest_slice_meeting_both_goals_then_cpu_then_the_cheapest() {
        // libnrt: p99 3 ms, 1.8 cores; the goal 1/10 of each: 300 us, 0.18 core.
        let (lp, lc) = (3_000_000.0, 1.8);
        let sweep = [pt(400, 450.0, 0.10), pt(25, 90.0, 0.60), pt(100, 160.0, 0.25), pt(200, 280.0, 0.17)];
        assert_eq!(choose_slice(&sweep, lp, lc, 10.0), Some((200, SliceReason::BothGoals)));
        let tails = [pt(25, 900.0, 0.60), pt(200, 700.0, 0.17), pt(400, 800.0, 0.10)];
        assert_eq!(choose_slice(&tails, lp, lc, 10.0), Some((200, SliceReason::CpuGoal)));
        let dear = [pt(25, 90.0, 0.60), pt(400, 450.0, 0.30), pt(200, 280.0, 0.35)];
        assert_eq!(choose_slice(&dear, lp, lc, 10.0), Some((400, SliceReason::Cheapest)));
        assert_eq!(choose_slice(&[], lp, lc, 10.0), None);
        // At the bound exactly: met.
        assert_eq!(choose_slice(&[pt(50, 300.0, 0.18)], lp, lc, 10.0), Some((50, SliceReason::BothGoals)));
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
