//! One inference, end to end, through the real core: stage the descriptors, kick
//! off, harvest, decode errors.
//!
//! [`run`] is the library form of `nrt-sim run`:
//!
//! 1. **Staging** (descriptor-handoff seed §1-§5), core's `dma::submit`: build
//!    a 4 KiB copy and the completion-marker copy, lower them into rings backed
//!    by device DRAM, program the UDMA queue banks as the driver would (the
//!    simulator's `SubmitTarget::device_heads`), reserve, set and stage the
//!    per-inference descriptors through the `SwDmaQueue` cursors, ring the
//!    tail-increment doorbells (S2M then M2S), and wait on the completion
//!    handle; then check the copy.
//! 2. **Kickoff**: the top-SP host trigger (doorbell B), then one kickoff
//!    semaphore per core (doorbell C); the device starts the engines' programs.
//! 3. **Harvest**: core's harvest loop (`exec_wait_with`) over an `ExecRequest`, with the rings
//!    bound and each engine's timestamp calibration and sync point set.
//!
//! [`devices`] is `nrt-sim run --devices N`: many devices harvested through poll groups.

pub mod devices;

use std::ops::ControlFlow;
use std::sync::Arc;

use nrt_core::arch::{Arch, ENGINES_PER_CORE, MAX_CORES};
use nrt_core::dma::build::{Transfer, OP_COPY};
use nrt_core::dma::doorbell::{kickoff_infer, set_host_trigger};
use nrt_core::dma::UdmaLayout;
use nrt_core::dma::{
    submit, CompletionHandle, DeviceHead, Direction, DmaError, DmaEvent, PRing, PlatformType, Submission,
    SubmitBuffers, SubmitError, SubmitStep, SubmitTarget, SwDmaQueue,
};
use nrt_core::event::Event;
use nrt_core::exec::{exec_wait_with, ExecConfig, ExecRequest, ExecState, SyncWait, TpbEngState, WaitHooks};
use nrt_core::hal::{Clock, Delay, DeviceMemory, EventSink, Registers};
use nrt_core::nq::Notifications;
use nrt_core::NrtStatus;

use crate::device::{Device, DeviceStats};

use crate::fault::Fault;
use crate::host::{HostClock, HostDelay, RealDelay, SimHost, VirtualDelay};
use crate::layout::{self, udma};
use crate::program::{self, Extra, ProgramSpec};
use crate::rng::Rng;
use crate::shared::Shared;
/// The report of a run and its parts, defined in [`nrt_abi::report`] (where
/// `nrtctl` prints the same report without the simulator).
pub use nrt_abi::report::{core_reports, CoreReport, EngineReport, ReportConfig, RunReport, StagingReport};

/// Bytes the staging copy moves.
pub const COPY_BYTES: usize = 4096;
/// Descriptors per vring page in the staging build.
const PAGE_BDS: usize = 8;
/// Depth of the staging rings.
pub const STAGING_RING_DEPTH: usize = 16;
/// The largest `ring_entries` the simulator accepts (1 MiB per ring).
pub const MAX_RING_ENTRIES: u32 = 1 << 16;

/// How to run one inference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimConfig {
    /// Generation.
    pub arch: Arch,
    /// Physical cores of the logical core (1 or 2).
    pub cores: u8,
    /// The model's timeout, seconds.
    pub timeout_s: u32,
    /// Seed of every random choice.
    pub seed: u64,
    /// Entries per NQ ring (a power of two, 2..=65536).
    pub ring_entries: u32,
    /// Device on its own thread with the real clock.
    pub threaded: bool,
    /// Faults to inject.
    pub faults: Vec<Fault>,
    /// Scenario extras (tensor streams, diagnostics).
    pub extras: Vec<Extra>,
}

impl Default for SimConfig {
    /// `nrt-sim run`'s defaults, which a report's configuration starts from too
    /// ([`ReportConfig::default`]), with no faults and no extras.
    fn default() -> Self {
        let ReportConfig { arch, cores, timeout_s, seed, ring_entries, threaded, faults: _, place: _ } =
            ReportConfig::default();
        SimConfig { arch, cores, timeout_s, seed, ring_entries, threaded, faults: Vec::new(), extras: Vec::new() }
    }
}

/// Why a run could not be done.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SimError {
    /// The configuration is invalid (the message says how).
    Config(String),
    /// A staging step failed.
    Staging {
        /// Which step.
        step: &'static str,
        /// The core's error.
        error: DmaError,
    },
}

impl core::fmt::Display for SimError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            SimError::Config(m) => f.write_str(m),
            SimError::Staging { step, error } => {
                write!(f, "staging failed at {step}: {error} ({})", error.status().name())
            }
        }
    }
}

impl std::error::Error for SimError {}

impl SimConfig {
    /// The configuration as a report prints it (faults as canonical specs;
    /// extras are the scenario's, named by its label).
    pub fn report_config(&self) -> ReportConfig {
        ReportConfig {
            arch: self.arch,
            cores: self.cores,
            timeout_s: self.timeout_s,
            seed: self.seed,
            ring_entries: self.ring_entries,
            threaded: self.threaded,
            faults: self.faults.iter().map(|f| f.to_string()).collect(),
            place: None,
        }
    }

    /// What the device builds its programs from: arch, ring entries, seed,
    /// faults and extras (a host of several devices varies the seed and the
    /// faults per device).
    pub fn program_spec(&self) -> ProgramSpec {
        ProgramSpec {
            arch: self.arch,
            ring_entries: self.ring_entries,
            seed: self.seed,
            faults: self.faults.clone(),
            extras: self.extras.clone(),
        }
    }

    /// Check the configuration.
    pub fn validate(&self) -> Result<(), SimError> {
        if !(1..=MAX_CORES as u8).contains(&self.cores) {
            return Err(SimError::Config(format!("cores must be 1 or 2, got {}", self.cores)));
        }
        if !self.ring_entries.is_power_of_two() || !(2..=MAX_RING_ENTRIES).contains(&self.ring_entries) {
            return Err(SimError::Config(format!(
                "ring entries must be a power of two from 2 to {MAX_RING_ENTRIES}, got {}",
                self.ring_entries
            )));
        }
        for f in &self.faults {
            if let Some(c) = f.core() {
                if c >= self.cores {
                    return Err(SimError::Config(format!(
                        "fault '{f}' is on core {c}, but the run has {} core{}",
                        self.cores,
                        if self.cores == 1 { "" } else { "s" }
                    )));
                }
            }
        }
        Ok(())
    }
}

struct Collect<'a>(&'a mut Vec<Event>);

impl<E: Copy + Into<Event>> EventSink<E> for Collect<'_> {
    fn event(&mut self, e: &E) {
        self.0.push((*e).into());
    }
}

fn staging_err(step: &'static str) -> impl Fn(DmaError) -> SimError {
    move |error| SimError::Staging { step, error }
}

/// Run one inference.
pub fn run(cfg: &SimConfig) -> Result<RunReport, SimError> {
    run_counted(cfg).map(|(r, _)| r)
}

/// The per-core counters of a run (the host's, as FINALIZE updated them).
pub type RunCounters = nrt_core::counters::NcCounters<{ nrt_core::arch::MAX_CORES }>;

/// Run one inference, and return the host's per-core counters with its report
/// (`nrt-sim run` prints their `execution_stats` summary at the end).
pub fn run_counted(cfg: &SimConfig) -> Result<(RunReport, RunCounters), SimError> {
    cfg.validate()?;
    let shared = Arc::new(Shared::new(cfg.arch, cfg.ring_entries * layout::ENTRY_BYTES));
    let device = Device::new(Arc::clone(&shared), cfg.program_spec(), cfg.cores);
    if cfg.threaded {
        let origin = std::time::Instant::now();
        let thread = std::thread::spawn(move || device.run_threaded(origin));
        let mut host = SimHost::new(Arc::clone(&shared), HostClock::Real(origin));
        let result = drive(cfg, &mut host, &mut RealDelay);
        shared.stop.store(true, std::sync::atomic::Ordering::Release);
        let device = thread.join().map_err(|_| SimError::Config("the device thread panicked".into()))?;
        result.map(|r| (finish(r, &host, &device), host.counters))
    } else {
        let mut host = SimHost::new(Arc::clone(&shared), HostClock::Virtual);
        let mut delay = VirtualDelay::new(device);
        let result = drive(cfg, &mut host, &mut delay);
        result.map(|r| (finish(r, &host, &delay.device), host.counters))
    }
}

fn finish(mut r: RunReport, host: &SimHost, device: &Device) -> RunReport {
    for c in &mut r.cores {
        c.total_latency_us = host.totals_us.get(usize::from(c.core)).copied().flatten();
    }
    r.events = host.events.clone();
    r.wakes = host.wakes().to_vec();
    r.notes = device.notes().to_vec();
    r.device = device.stats().clone();
    r.passes_us = host.passes_us.clone();
    r.head_writes_us = host.head_writes_us.clone();
    r
}

fn drive<W: HostDelay>(cfg: &SimConfig, host: &mut SimHost, delay: &mut W) -> Result<RunReport, SimError> {
    let mut staging_events = Vec::new();
    let staging = stage(cfg, host, delay, &mut staging_events)?;
    let cores = cfg.cores;
    let mut nq = Notifications::new();
    for c in 0..cores {
        nq.bind_core(c, cfg.ring_entries * layout::ENTRY_BYTES)
            .map_err(|e| SimError::Config(format!("ring binding refused: {e:?}")))?;
        for eng in 0..ENGINES_PER_CORE {
            nq.set_cal(c, eng, program::calibration(c, eng));
        }
        nq.set_sync_point(c, program::sync_point(c));
    }

    // Doorbell B arms the sequencers; doorbell C releases each core's streams.
    let mut fence = host.fence();
    set_host_trigger(host, &mut fence, layout::xt_local_reg(cfg.arch)).map_err(staging_err("host trigger"))?;
    let kickoff_us = host.now_ns() / 1_000;
    for c in 0..cores {
        kickoff_infer(host, u32::from(c), u32::from(c)).map_err(staging_err("kickoff"))?;
    }

    host.events.clear();
    host.head_writes_us.clear();
    host.passes_us.clear();
    host.totals_us = Default::default();
    let mut req = ExecRequest::new(ExecConfig::new(cfg.arch, cores, cfg.timeout_s));
    let t0 = host.now_ns();
    let w = wait_round_robin(&mut req, host, &mut nq, delay);
    let elapsed_ns = host.now_ns().saturating_sub(t0);
    Ok(RunReport {
        config: cfg.report_config(),
        status: w.status,
        step: w.step,
        steps: w.steps,
        elapsed_ns,
        timeout_ms: req.timeout_ms(),
        kickoff_us,
        staging: Some(staging),
        remote: None,
        cores: core_reports(&req, cores),
        events: Vec::new(),
        staging_events,
        wakes: Vec::new(),
        notes: Vec::new(),
        device: DeviceStats::default(),
        passes_us: Vec::new(),
        head_writes_us: Vec::new(),
    })
}

/// Core's harvest loop ([`exec_wait_with`]) with the simulator's hooks
/// ([`SimHooks`]): each pass's time kept for the trace, and the wait told
/// before each delay when the host next acts on its own ([`host_deadline`]), so
/// that the virtual clock skips idle time up to it (a 4294967295 s timeout is a
/// few dozen steps, not 4 * 10^12 quanta) while every observation of the
/// harvest stays where it was.
fn wait_round_robin<W: HostDelay>(
    req: &mut ExecRequest,
    host: &mut SimHost,
    nq: &mut Notifications,
    delay: &mut W,
) -> SyncWait {
    let mut hooks = SimHooks { clocks: StateClocks::default(), mark: Progress::of(req, nq, host) };
    let w = exec_wait_with(req, host, nq, delay, &mut hooks);
    delay.set_host_deadline(None);
    w
}

/// The simulator's additions to core's harvest loop.
struct SimHooks {
    clocks: StateClocks,
    /// What the last look before a delay saw.
    mark: Progress,
}

impl<W: HostDelay> WaitHooks<SimHost, W> for SimHooks {
    fn before_step(&mut self, _: &ExecRequest, host: &mut SimHost, _: &Notifications) {
        observe_pass(host);
    }

    fn before_delay(
        &mut self,
        req: &ExecRequest,
        host: &mut SimHost,
        nq: &Notifications,
        delay: &mut W,
    ) -> ControlFlow<NrtStatus> {
        self.clocks.observe(req.state(), host.now_ns());
        // Only a step that changed nothing lets the clock skip to the deadline:
        // after a state change or a consumed record, the next step has work.
        let now_mark = Progress::of(req, nq, host);
        let idle = now_mark == self.mark;
        self.mark = now_mark;
        delay.set_host_deadline(host_deadline(req, &self.clocks).filter(|_| idle));
        ControlFlow::Continue(())
    }
}

/// Keep the time of the harvest step about to be made (the trace's poll-pass counter).
fn observe_pass(host: &mut SimHost) {
    if host.passes_us.len() < crate::host::MAX_OBSERVED {
        let t = host.now_ns() / 1_000;
        host.passes_us.push(t);
    }
}

/// Everything a harvest step can change that the next step depends on: the
/// state, the barrier threshold, each engine's substate, every ring's cursor and
/// HEAD, the error records kept, the events emitted.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Progress {
    state: ExecState,
    barrier_threshold_s: u32,
    substates: Vec<Option<TpbEngState>>,
    rings: Vec<(u32, u32)>,
    errors: usize,
    events: usize,
}

impl Progress {
    fn of(req: &ExecRequest, nq: &Notifications, host: &SimHost) -> Progress {
        let cores = 0..MAX_CORES;
        Progress {
            state: req.state(),
            barrier_threshold_s: req.barrier_threshold_s(),
            substates: cores.clone().flat_map(|c| (0..ENGINES_PER_CORE).map(move |e| req.substate(c, e))).collect(),
            rings: cores
                .flat_map(|c| (0..layout::NQ_PER_CORE).map(move |q| (c as u8, q as u8)))
                .filter_map(|(c, q)| nq.ring(c, q).map(|r| (r.cursor(), r.head())))
                .collect(),
            errors: nq.errors_len(),
            events: host.events.len(),
        }
    }
}

/// When the request entered its barrier wait and its core wait, on the host's
/// clock: the instants its own `barrier_start` and `core_start` were read (the
/// virtual clock does not move during a step).
#[derive(Clone, Copy, Debug, Default)]
struct StateClocks {
    last: Option<ExecState>,
    barrier_start_ns: u64,
    core_start_ns: u64,
}

impl StateClocks {
    fn observe(&mut self, state: ExecState, now: u64) {
        if self.last != Some(state) {
            match state {
                ExecState::WaitBarrierProxy => self.barrier_start_ns = now,
                ExecState::WaitCore => self.core_start_ns = now,
                ExecState::Init | ExecState::Done => {}
            }
            self.last = Some(state);
        }
    }
}

/// The host's next time-driven observation (seed §1, §5): the barrier warning
/// threshold while the barrier is pending, the core budget while the engines are.
fn host_deadline(req: &ExecRequest, clocks: &StateClocks) -> Option<u64> {
    match req.state() {
        ExecState::WaitBarrierProxy => Some(
            clocks.barrier_start_ns.saturating_add(u64::from(req.barrier_threshold_s()).saturating_mul(1_000_000_000)),
        ),
        ExecState::WaitCore => Some(clocks.core_start_ns.saturating_add(req.timeout_ms().saturating_mul(1_000_000))),
        ExecState::Init | ExecState::Done => None,
    }
}

/// BAR0 offset of the staging queue's bank in direction `dir`.
fn queue_bank(arch: Arch, dir: Direction) -> Result<u64, SubmitError> {
    let map = UdmaLayout::of(arch);
    Ok(layout::sim_udma_base(arch)
        + map.block_offset(dir)
        + map
            .queue_offset(layout::SIM_UDMA_QUEUE)
            .map_err(|e| SubmitError::at(SubmitStep::Platform("queue bank"), e))?)
}

/// Where the device is in the staging queue's ring of direction `dir`: its head
/// pointer register (G-DMA-AVAIL).
fn device_head(host: &mut SimHost, arch: Arch, dir: Direction) -> Result<DeviceHead, SubmitError> {
    let reg = host
        .read32(queue_bank(arch, dir)? + udma::HEAD_PTR)
        .map_err(|e| SubmitError::at(SubmitStep::Platform("head pointer"), DmaError::Platform(e)))?;
    Ok(DeviceHead::from_head_ptr(reg))
}

/// Program a UDMA queue bank's ring base and length (the driver's `DMA_QUEUE_INIT`).
fn program_queue(host: &mut SimHost, arch: Arch, dir: Direction, ring: u64, depth: u32) -> Result<(), SubmitError> {
    let bank = queue_bank(arch, dir)?;
    let regs = [(udma::RING_BASE_LO, ring as u32), (udma::RING_BASE_HI, (ring >> 32) as u32), (udma::RING_LEN, depth)];
    for (reg, v) in regs {
        host.write32(bank + reg, v)
            .map_err(|e| SubmitError::at(SubmitStep::Platform("queue init"), DmaError::Platform(e)))?;
    }
    Ok(())
}

/// The simulator programs the staging queue's banks once the rings are
/// lowered (the driver's `DMA_QUEUE_INIT`), and reads where the device is from
/// their head pointers.
impl SubmitTarget for SimHost {
    fn device_heads(
        &mut self,
        plan: &Submission,
        tx: &PRing<'_>,
        rx: &PRing<'_>,
        _: &SwDmaQueue,
        _: &SwDmaQueue,
    ) -> Result<(DeviceHead, DeviceHead), SubmitError> {
        program_queue(self, plan.arch, Direction::Tx, tx.dev_addr(), tx.depth())?;
        program_queue(self, plan.arch, Direction::Rx, rx.dev_addr(), rx.depth())?;
        Ok((device_head(self, plan.arch, Direction::Tx)?, device_head(self, plan.arch, Direction::Rx)?))
    }
}

impl From<SubmitError> for SimError {
    fn from(e: SubmitError) -> SimError {
        SimError::Staging { step: e.step.name(), error: e.error }
    }
}

fn stage<W: Delay>(
    cfg: &SimConfig,
    host: &mut SimHost,
    delay: &mut W,
    events: &mut Vec<Event>,
) -> Result<StagingReport, SimError> {
    let arch = cfg.arch;
    let platform = |step| move |e| SimError::Staging { step, error: DmaError::Platform(e) };
    let mut rng = Rng::stream(cfg.seed, 0x57A6_E000);
    let src: Vec<u8> = (0..COPY_BYTES).map(|_| (rng.next_u64() & 0xFF) as u8).collect();
    host.copy_in(layout::COPY_SRC_ADDR, &src).map_err(platform("source fill"))?;
    host.copy_in(layout::DONE_WORD_ADDR, &layout::DONE_WORD.to_le_bytes()).map_err(platform("marker word"))?;
    let mut txq = SwDmaQueue::new(STAGING_RING_DEPTH as u32).map_err(staging_err("tx queue"))?;
    let mut rxq = SwDmaQueue::new(STAGING_RING_DEPTH as u32).map_err(staging_err("rx queue"))?;
    let handle = CompletionHandle::new(layout::COMPLETION_HANDLE_ADDR);
    let plan = Submission {
        arch,
        // 1024 elements of 4 bytes in 256-element BDs: four 1 KiB descriptors.
        data: Transfer {
            op: OP_COPY,
            elem_count: (COPY_BYTES / 4) as u32,
            granule: 256,
            elem_bytes: 4,
            src: layout::COPY_SRC_ADDR,
            dst: layout::COPY_DST_ADDR,
        },
        handle,
        done_word: layout::DONE_WORD_ADDR,
        engine_base: layout::sim_udma_base(arch),
        queue: layout::SIM_UDMA_QUEUE,
        write_barrier: false,
        platform: PlatformType::HARDWARE,
    };
    let mut bufs = StagingBuffers::new();
    let mut fence = host.fence();
    // Doorbell A: S2M first, then M2S (the driver's M2M copy,
    // udma/udma_m2m.c `udma_m2m_copy_start`, adds RX before TX).
    let done = submit(host, &mut fence, delay, &mut Collect(events), &plan, (&mut txq, &mut rxq), &mut bufs)?;
    let handle_polls = events.iter().rev().find_map(|e| match e {
        Event::Dma(DmaEvent::Completed { polls, .. }) => Some(*polls),
        _ => None,
    });
    let mut dst = vec![0u8; COPY_BYTES];
    host.copy_out(layout::COPY_DST_ADDR, &mut dst).map_err(platform("copy check"))?;
    Ok(StagingReport {
        descriptors: done.descriptors,
        ring_depth: done.ring_depth,
        rings: done.rings,
        doorbells: done.doorbells,
        handle: handle.addr(),
        handle_polls,
        copy_bytes: COPY_BYTES,
        copy_verified: dst == src,
        host_trigger: layout::xt_local_reg(arch) + nrt_core::dma::HOST_TRIGGER_OFFSET,
    })
}

/// The staging submission's storage: two vring pages of [`PAGE_BDS`] per
/// direction, rings of [`STAGING_RING_DEPTH`].
type StagingBuffers = SubmitBuffers<PAGE_BDS, 2, STAGING_RING_DEPTH>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::Handoff;
    use crate::shm::Line;
    use nrt_core::dma::build::append_descs;
    use nrt_core::dma::doorbell::ring_tail_inc;
    use nrt_core::dma::{Bd, UdmaCopyWriter, VRing};
    use nrt_core::nq::Engine;

    /// The wait before the skip to the host's deadline: every idle step moves the
    /// virtual clock by the quantum at most (the device's own skip only).
    struct Polling(VirtualDelay);

    impl Delay for Polling {
        fn delay_us(&mut self, us: u32) {
            self.0.device.advance_virtual(us);
        }
    }

    impl HostDelay for Polling {}

    fn run_polling(cfg: &SimConfig) -> RunReport {
        let shared = Arc::new(Shared::new(cfg.arch, cfg.ring_entries * layout::ENTRY_BYTES));
        let device = Device::new(Arc::clone(&shared), cfg.program_spec(), cfg.cores);
        let mut host = SimHost::new(Arc::clone(&shared), HostClock::Virtual);
        let mut delay = Polling(VirtualDelay::new(device));
        let r = drive(cfg, &mut host, &mut delay).unwrap();
        finish(r, &host, &delay.0.device)
    }

    #[test]
    fn skipping_to_the_host_deadline_changes_no_observation_of_any_scenario() {
        let mut skipped = 0;
        for s in crate::scenario::SCENARIOS {
            let cfg = s.config();
            let (fast, slow) = (run(&cfg).unwrap(), run_polling(&cfg));
            let name = s.name;
            assert_eq!((fast.status, fast.step), (slow.status, slow.step), "{name}");
            assert_eq!(fast.events, slow.events, "{name}");
            // The cores alike but for the total latency counted, which ends
            // with the harvest: as the elapsed time below, no later, and
            // within a quantum.
            let untimed = |r: &RunReport| -> Vec<CoreReport> {
                r.cores.iter().map(|c| CoreReport { total_latency_us: None, ..c.clone() }).collect()
            };
            assert_eq!(untimed(&fast), untimed(&slow), "{name}");
            for (f, s) in fast.cores.iter().zip(&slow.cores) {
                let (Some(f), Some(s)) = (f.total_latency_us, s.total_latency_us) else {
                    panic!("{name}: core {}: a total latency not counted", f.core)
                };
                assert!(f <= s && (s - f) * 1_000 < crate::device::QUANTUM_NS, "{name}: totals {f} and {s} us");
            }
            assert_eq!(fast.wakes, slow.wakes, "{name}");
            assert_eq!(fast.notes, slow.notes, "{name}");
            assert_eq!(fast.device, slow.device, "{name}");
            assert_eq!(fast.staging, slow.staging, "{name}");
            // The same harvest, found no later and in no more polls (the quantum
            // poll lands up to one quantum past the budget).
            assert!(fast.elapsed_ns <= slow.elapsed_ns, "{name}: {} > {}", fast.elapsed_ns, slow.elapsed_ns);
            assert!(slow.elapsed_ns - fast.elapsed_ns < crate::device::QUANTUM_NS, "{name}");
            assert!(fast.steps <= slow.steps, "{name}");
            if fast.steps < slow.steps {
                skipped += 1;
            }
        }
        // The timeouts and the 300 s barrier did skip.
        assert!(skipped >= 5, "{skipped}");
    }

    #[test]
    fn the_longest_budget_and_barrier_are_a_few_polls() {
        let cfg = SimConfig {
            timeout_s: u32::MAX,
            faults: vec![Fault::Hang { core: 0, engine: Engine::Dve }, Fault::BarrierDelay { secs: 1_000_000 }],
            ..SimConfig::default()
        };
        let r = run(&cfg).unwrap();
        assert_eq!(r.status, NrtStatus::Timeout);
        assert!(r.steps < 200, "{} steps", r.steps);
        assert_eq!(r.events_of("barrier_wait").count(), 14, "120 s doubling up to 983040 s");
        // The budget is measured from the barrier's clear (1e6 s) and fires on it.
        assert_eq!(r.elapsed_ns / 1_000_000, 1_000_000_000 + u64::from(u32::MAX) * 1000);
    }

    fn rig(cfg: &SimConfig) -> (Arc<Shared>, SimHost, VirtualDelay) {
        let shared = Arc::new(Shared::new(cfg.arch, cfg.ring_entries * layout::ENTRY_BYTES));
        let device = Device::new(Arc::clone(&shared), cfg.program_spec(), cfg.cores);
        let host = SimHost::new(Arc::clone(&shared), HostClock::Virtual);
        (shared, host, VirtualDelay::new(device))
    }

    /// The staging's doorbell order (S2M first, then M2S: driver §5, M2M copy)
    /// and each doorbell's Release fence, both seen in the host's one handoff log.
    #[test]
    fn staging_rings_s2m_then_m2s_each_right_after_a_fence() {
        for arch in [Arch::Sunda, Arch::Cayman] {
            let cfg = SimConfig { arch, cores: 1, ..SimConfig::default() };
            let (_, mut host, mut delay) = rig(&cfg);
            let st = stage(&cfg, &mut host, &mut delay, &mut Vec::new()).unwrap();
            assert!(st.copy_verified);
            let (log, dropped) = host.handoff();
            assert_eq!(dropped, 0);
            let (m2s, s2m) = st.doorbells;
            let at = |off: u64| log.iter().position(|h| matches!(h, Handoff::Write { offset, .. } if *offset == off));
            let (Some(i_s2m), Some(i_m2s)) = (at(s2m), at(m2s)) else { panic!("both doorbells rung: {log:?}") };
            assert!(i_s2m < i_m2s, "S2M before M2S: {log:?}");
            for i in [i_s2m, i_m2s] {
                assert_eq!(log[i - 1], Handoff::Fence, "a fence right before each doorbell: {log:?}");
            }
            assert_eq!(log[i_s2m], Handoff::Write { offset: s2m, value: st.descriptors });
            assert_eq!(log[i_m2s], Handoff::Write { offset: m2s, value: st.descriptors });
            // Exactly one write to each doorbell.
            let writes =
                |off: u64| log.iter().filter(|h| matches!(h, Handoff::Write { offset, .. } if *offset == off)).count();
            assert_eq!((writes(s2m), writes(m2s)), (1, 1));
        }
    }

    /// G-DMA-LOWER-RINGID end to end: a static ring fetched by the device exactly
    /// as lowered (no per-inference `set_descriptors` restamping it) is taken;
    /// with the ring id 0 a BD writer leaves, the engine would abort.
    #[test]
    fn the_device_takes_a_lowered_static_ring_as_is() {
        let cfg = SimConfig { cores: 1, ..SimConfig::default() };
        let (shared, mut host, mut delay) = rig(&cfg);
        let src: Vec<u8> = (0..1024u32).map(|i| (i % 251) as u8).collect();
        host.copy_in(layout::COPY_SRC_ADDR, &src).unwrap();
        let mut txp = [[Bd::ZERO; PAGE_BDS]; 1];
        let mut rxp = [[Bd::ZERO; PAGE_BDS]; 1];
        let mut vring: VRing<'_, PAGE_BDS> = VRing::new(&mut txp, &mut rxp);
        let t = Transfer {
            op: OP_COPY,
            elem_count: 256,
            granule: 64,
            elem_bytes: 4,
            src: layout::COPY_SRC_ADDR,
            dst: layout::COPY_DST_ADDR,
        };
        let n = append_descs(&mut vring, cfg.arch, &t, &mut UdmaCopyWriter).unwrap().tx.ndesc;
        let (mut ti, mut ri) = ([Bd::ZERO; 8], [Bd::ZERO; 8]);
        vring.create_prings(&mut host, &mut Collect(&mut Vec::new()), &mut ti, &mut ri).unwrap();
        let (tx, rx) = vring.rings_mut().unwrap();
        program_queue(&mut host, cfg.arch, Direction::Tx, tx.dev_addr(), tx.depth()).unwrap();
        program_queue(&mut host, cfg.arch, Direction::Rx, rx.dev_addr(), rx.depth()).unwrap();
        let base = layout::sim_udma_base(cfg.arch);
        let mut fence = host.fence();
        for dir in [Direction::Rx, Direction::Tx] {
            ring_tail_inc(&mut host, &mut fence, cfg.arch, base, layout::SIM_UDMA_QUEUE, dir, n).unwrap();
        }
        delay.delay_us(100);
        assert_eq!(shared.get_line(Line::DmaAbort, 0), 0, "{:?}", delay.device.notes());
        assert_eq!(delay.device.stats().dma_descriptors, u64::from(n));
        let mut dst = vec![0u8; 1024];
        host.copy_out(layout::COPY_DST_ADDR, &mut dst).unwrap();
        assert_eq!(dst, src);
        // The head pointer: n slots in, still on lap 1.
        let head = device_head(&mut host, cfg.arch, Direction::Tx).unwrap();
        assert_eq!(head, DeviceHead { idx: n, ring_id: 1 });
    }
}
