//! The device the harvest sees through the driver: BAR0 through the BAR
//! ioctls, the mapped NQ rings, the probes, the kickoff semaphore.

use super::*;
use nrt_core::counters::{NcCounters, NcUpdate};

/// BAR0 through the driver's BAR ioctls, owned, the device shared.
#[derive(Clone, Debug)]
pub struct DriverBar {
    dev: Arc<NeuronDevice>,
    base: u64,
    size: u64,
}

impl DriverBar {
    /// BAR0 of `dev` as `info` reports it.
    pub fn new(dev: Arc<NeuronDevice>, info: &DeviceInfo) -> Result<DriverBar, LinuxError> {
        let b = IoctlBar::with_info(&dev, info, 0)?;
        let (base, size) = (b.base(), b.size());
        Ok(DriverBar { dev, base, size })
    }

    fn bar(&self) -> IoctlBar<'_> {
        IoctlBar::new(&self.dev, 0, self.base, self.size)
    }
}

impl ErrorType for DriverBar {
    type Error = LinuxError;
}

impl Registers for DriverBar {
    fn read32(&mut self, offset: u64) -> Result<u32, LinuxError> {
        self.bar().read32(offset)
    }
    fn write32(&mut self, offset: u64, value: u32) -> Result<(), LinuxError> {
        self.bar().write32(offset, value)
    }
}

pub(super) struct Collect<'a>(pub(super) &'a mut Vec<Event>);

impl<E: Copy + Into<Event>> hal::EventSink<E> for Collect<'_> {
    fn event(&mut self, e: &E) {
        self.0.push((*e).into());
    }
}

pub(super) struct Fence;
impl hal::Fence for Fence {}

/// The kickoff semaphore: `NEURON_IOCTL_SEMAPHORE_INCREMENT`.
pub(super) struct Sema<'a>(pub(super) &'a NeuronDevice);

impl ErrorType for Sema<'_> {
    type Error = LinuxError;
}

impl hal::Semaphore for Sema<'_> {
    fn increment(&mut self, nc: u32, index: u32, value: u32) -> Result<(), LinuxError> {
        self.0.semaphore_increment(nc, index, value)
    }
}

/// Tensor wake-ups one inference keeps; later ones are counted.
pub const WAKE_LOG_CAP: usize = 256;

/// The waiters of streamed outputs, for one inference.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Wakes {
    /// Each output and its count, in order.
    pub wakes: Vec<(u16, u32)>,
    /// Wake-ups past the cap.
    pub dropped: u64,
}

impl TensorWaker for Wakes {
    fn wake(&mut self, output: u16, count: u32) {
        if self.wakes.len() < WAKE_LOG_CAP {
            self.wakes.push((output, count));
        } else {
            self.dropped = self.dropped.saturating_add(1);
        }
    }
}

pub(super) fn tensor_table() -> Option<TensorCompletions<{ simabi::MAX_OUTPUTS }, Wakes>> {
    let vars: Vec<u16> = (0..simabi::MAX_OUTPUTS as u16).map(|i| simabi::FIRST_VAR_ID + i).collect();
    TensorCompletions::with_waker(&vars, Wakes::default())
}

/// Consecutive failed calls of the device file after which the harvest's
/// device is taken for gone, G-DRV-GONE: a driver that refuses one call
/// answers the next, a killed supervisor or a removed device does not.
pub const GONE_AFTER_FAILURES: u32 = 8;

/// Ring reads between two liveness calls of the device file while the
/// harvest waits, since ring reads are of mapped memory and never fail. The
/// liveness call is the hint query on the simulator, else `DRIVER_INFO_GET`.
pub const LIVENESS_EVERY: u32 = 1024;

/// Most poll passes and HEAD write-backs one harvest keeps the times of.
pub const MAX_OBSERVED: usize = 1 << 20;

/// The poll delay of a harvest that keeps the time of each pass after it;
/// the first pass, before any delay, is the caller's.
pub(super) struct ObservedDelay {
    pub(super) inner: AnyDelay,
    pub(super) clock: MonotonicClock,
    pub(super) passes_us: Vec<u64>,
    /// Keep the times at all; else the delay is `inner` alone, with no clock read.
    pub(super) observe: bool,
}

impl hal::Delay for ObservedDelay {
    fn delay_us(&mut self, us: u32) {
        self.inner.delay_us(us);
        if self.observe && self.passes_us.len() < MAX_OBSERVED {
            self.passes_us.push(self.clock.now_ns() / 1_000);
        }
    }
}

/// The device the harvest sees: the mapped rings, HEAD and INTC through the
/// BAR ioctls, the simulator's probes, `CLOCK_MONOTONIC`. A device file whose
/// calls keep failing is gone, G-DRV-GONE.
///
/// The harvest speaks of logical cores `0..n`; here they become the device's.
/// Logical core `c` is the device's core `first + c` for the HEAD and INTC
/// registers, the simulator's status lines and the datastore's NC blocks; the
/// rings and the RAM counters stay under the logical index.
pub struct DriverDevice {
    pub(super) dev: Arc<NeuronDevice>,
    pub(super) rings: MappedRings<DriverBar>,
    pub(super) arch: Arch,
    /// The hint query answered at bring-up: the probes are the simulator's.
    pub(super) sim: bool,
    pub(super) clock: MonotonicClock,
    /// Events the core delivered, in order.
    pub events: Vec<Event>,
    pub(super) tensors: TensorCompletions<{ simabi::MAX_OUTPUTS }, Wakes>,
    /// The first failed probe read; the harvest goes on, a probe being advisory.
    pub probe_error: Option<LinuxError>,
    /// Consecutive failed calls of the device file.
    failures: u32,
    /// Ring reads since the last liveness call.
    reads: u32,
    /// Why the device is gone, once it is.
    gone: Option<String>,
    /// This process's counters on the device at the NCs of the session's
    /// cores, when acquired: each finished request is counted there.
    pub(super) datastore: Option<crate::datastore::CounterTarget>,
    /// The time in us of each HEAD write-back of the harvest in progress, at
    /// most `MAX_OBSERVED`, kept only when `observe`.
    pub head_writes_us: Vec<u64>,
    /// Keep the times of the harvest's poll passes and HEAD write-backs, for a trace.
    pub(super) observe: bool,
    /// The counters of the session's cores in RAM, also without a datastore.
    pub counters: NcCounters<MAX_CORES>,
    /// The total latency in us counted for each logical core's request of
    /// the harvest in progress, once counted.
    pub(super) totals_us: [Option<u64>; MAX_CORES],
    /// The first failed datastore write; the harvest goes on.
    pub datastore_error: Option<LinuxError>,
}

impl core::fmt::Debug for DriverDevice {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("DriverDevice").field("arch", &self.arch).field("events", &self.events.len()).finish()
    }
}

impl DriverDevice {
    /// The harvest's device over `rings` of `dev`; `sim` when the simulator's
    /// hint query answered, and only then are probes read.
    pub(super) fn new(
        dev: Arc<NeuronDevice>,
        rings: MappedRings<DriverBar>,
        arch: Arch,
        sim: bool,
        clock: MonotonicClock,
        tensors: TensorCompletions<{ simabi::MAX_OUTPUTS }, Wakes>,
    ) -> DriverDevice {
        DriverDevice {
            dev,
            rings,
            arch,
            sim,
            clock,
            head_writes_us: Vec::new(),
            observe: false,
            events: Vec::new(),
            tensors,
            probe_error: None,
            failures: 0,
            reads: 0,
            gone: None,
            datastore: None,
            counters: NcCounters::new(),
            totals_us: [None; MAX_CORES],
            datastore_error: None,
        }
    }

    /// Start an inference: events, tensor counts and the failure count from nothing.
    pub(super) fn restart(&mut self, tensors: TensorCompletions<{ simabi::MAX_OUTPUTS }, Wakes>) {
        self.events.clear();
        self.tensors = tensors;
        self.probe_error = None;
        self.failures = 0;
        self.reads = 0;
        self.gone = None;
        self.totals_us = [None; MAX_CORES];
    }

    /// Why the device file stopped answering, if it did.
    pub fn gone(&self) -> Option<&str> {
        self.gone.as_deref()
    }

    /// Count the outcome of one call of the device file.
    fn seen<T>(&mut self, r: Result<T, LinuxError>) -> Result<T, LinuxError> {
        match &r {
            Ok(_) => self.failures = 0,
            Err(e) if self.gone.is_none() => {
                self.failures += 1;
                if self.failures >= GONE_AFTER_FAILURES {
                    self.gone = Some(format!(
                        "the device at {} is gone: {} calls of the device file failed in a row, the last {e}",
                        self.dev.path().display(),
                        self.failures
                    ));
                }
            }
            Err(_) => {}
        }
        r
    }

    /// The device's core that is logical core `core`.
    fn physical(&self, core: u8) -> u8 {
        self.rings.first_core().saturating_add(core)
    }

    /// Status line `line` of the device's core `nc` from the hint query's answer.
    fn line_of(h: Option<SimHints>, nc: u8, line: Line) -> u32 {
        h.and_then(|h| h.lines.get(usize::from(nc)).and_then(|l| l.get(line as usize)).copied()).unwrap_or(0)
    }

    /// Whether the simulated device plays the device's core `nc`.
    pub(crate) fn plays(h: &SimHints, nc: u8) -> bool {
        u32::from(nc) < h.device_cores && h.lines.get(usize::from(nc)).is_some()
    }

    fn gone_error(&self, what: &'static str, core: u8) -> LinuxError {
        let why = self.gone.clone().unwrap_or_default();
        LinuxError::new(what, format!("core {core}"), Cause::Gone(why))
    }

    /// The simulator's status line `line` of logical core `core`; `None` on a
    /// real driver, where the probe is absent, G-DRV-REAL.
    fn status(&mut self, line: Line, core: u8) -> Result<Option<NrtError>, LinuxError> {
        if !self.sim {
            return Ok(None);
        }
        let r = self.dev.sim_hints_call();
        let h = self.seen(r)?;
        let v = Self::line_of(h, self.physical(core), line);
        Ok(NrtError::new(NrtStatus::from_code(v)))
    }

    fn probe(&mut self, line: Line, core: u8) -> Option<NrtError> {
        match self.status(line, core) {
            Ok(s) => s,
            Err(e) => {
                self.probe_error.get_or_insert(e);
                None
            }
        }
    }
}

impl ErrorType for DriverDevice {
    type Error = LinuxError;
}

impl hal::NqRings for DriverDevice {
    fn read_slot(&mut self, core: u8, nq: u8, offset: u32, out: &mut [u8; 16]) -> Result<(), LinuxError> {
        if self.gone.is_none() {
            self.reads += 1;
            if self.reads >= LIVENESS_EVERY {
                self.reads = 0;
                let r =
                    if self.sim { self.dev.sim_hints_call().map(|_| ()) } else { self.dev.driver_info().map(|_| ()) };
                let _ = self.seen(r);
            }
        }
        if self.gone.is_some() {
            return Err(self.gone_error("read ring", core));
        }
        self.rings.read_slot(core, nq, offset, out)
    }
    fn write_head(&mut self, core: u8, nq: u8, head: u32) -> Result<(), LinuxError> {
        if self.observe && self.head_writes_us.len() < MAX_OBSERVED {
            let t = self.clock.now_ns() / 1_000;
            self.head_writes_us.push(t);
        }
        let r = self.rings.write_head(core, nq, head);
        self.seen(r)
    }
}

impl hal::IntcCause for DriverDevice {
    fn read_cause(&mut self, core: u8, block: u32, line: u32) -> Result<u32, LinuxError> {
        if !self.sim {
            // No public source gives the register, so nothing is read and core
            // takes the seed's fallback, no overflow: G-DRV-REAL.
            let e = Cause::Unknown(nrt_abi::devmap::Unknown::IntcCause);
            return Err(LinuxError::new("INTC read", format!("core {core} block {block} line {line}"), e));
        }
        let off = simabi::intc_cause_offset(self.arch, self.physical(core), block, line).ok_or_else(|| {
            LinuxError::refused("INTC read", format!("core {core} block {block} line {line}"), "no INTC cause register")
        })?;
        let r = self.rings.regs().read32(off);
        self.seen(r)
    }
}

impl hal::Clock for DriverDevice {
    fn now_ns(&self) -> u64 {
        self.clock.now_ns()
    }
}

impl hal::CollectivesProxy for DriverDevice {
    fn barrier_status(&mut self, core: u8) -> Result<bool, NrtError> {
        // The barrier wait is never fatal by itself: a device that is gone ends it.
        if self.gone.is_some() {
            return Err(NrtError::failed(NrtStatus::HwError));
        }
        if !self.sim {
            // No collectives hook on this path: nothing to wait for.
            return Ok(true);
        }
        let r = self.dev.sim_hints_call();
        let nc = self.physical(core);
        match self.seen(r) {
            // A core the simulated device does not play has no collectives
            // proxy either: nothing to wait for, as on a real driver.
            Ok(Some(h)) if !Self::plays(&h, nc) => Ok(true),
            Ok(h) => {
                let line = |l: Line| Self::line_of(h, nc, l);
                match line(Line::BarrierFail) {
                    0 => Ok(line(Line::BarrierDone) != 0),
                    s => Err(NrtError::failed(NrtStatus::from_code(s))),
                }
            }
            Err(e) => {
                self.probe_error.get_or_insert(e);
                if self.gone.is_some() {
                    Err(NrtError::failed(NrtStatus::HwError))
                } else {
                    Ok(false)
                }
            }
        }
    }
    fn network_status(&mut self, core: u8) -> Result<bool, NrtError> {
        if self.gone.is_some() {
            return Err(NrtError::failed(NrtStatus::HwError));
        }
        self.probe(Line::NetproxyFail, core).map_or(Ok(true), Err)
    }
}

impl hal::FaultProbe for DriverDevice {
    fn hbm_uncorrectable(&mut self, core: u8) -> Option<NrtStatus> {
        self.probe(Line::Hbm, core).map(NrtError::status)
    }
    fn dma_aborted(&mut self, core: u8) -> bool {
        self.probe(Line::DmaAbort, core).is_some()
    }
}

impl<E: Copy + Into<Event>> hal::EventSink<E> for DriverDevice {
    fn event(&mut self, e: &E) {
        self.events.push((*e).into());
    }
}

impl nrt_core::counters::CounterSink for DriverDevice {
    /// FINALIZE's counters: into the session's RAM block of the logical core,
    /// and into the process's counters of the device's core `first + core`,
    /// the NC a monitor reads, at the driver's datastore offsets.
    fn nc_counters(&mut self, core: u8, update: &NcUpdate) {
        let now = self.clock.now_ns();
        if !self.counters.apply(core, update, now) {
            return;
        }
        if let (true, Some(slot)) = (update.harvested, self.totals_us.get_mut(usize::from(core))) {
            *slot = Some(update.total_latency_us(now));
        }
        if let Some(t) = &self.datastore {
            if let Err(e) = t.count(core, update, now) {
                self.datastore_error.get_or_insert(e);
            }
        }
    }
}

impl hal::TensorNotify for DriverDevice {
    fn tensor_completed(&mut self, core: u8, var_id: u16) -> Option<(u16, u32)> {
        self.tensors.tensor_completed(core, var_id)
    }
}
