//! Harvesting inferences from a device that `nrt-sim serve --shm PATH` plays in
//! another process, for `nrtctl harvest`.
//!
//! The file's layout is `nrt_abi::shm`'s. This side maps it as it maps a device,
//! so that HEAD writes, the top-SP trigger and the INTC cause reads go through
//! `hal::Registers` at the real BAR offsets; the kickoff semaphore is an atomic
//! add on its INCR-alias word.
//!
//! A server that dies (G-SHM-GONE): the barrier wait is never fatal, seed §1, so
//! the device checks the server every [`LIVENESS_EVERY`] calls. A gone server
//! fails the barrier proxy and every ring read, so the harvest ends through its
//! own fault paths within [`DEAD_DEVICE_BOUND`].

use std::path::Path;
use std::sync::atomic::{fence, Ordering};
use std::sync::Arc;
use std::time::Duration;

use nrt_abi::os::monotonic_ns;
use nrt_abi::report::{core_reports, Note, ReportConfig, RunReport};
use nrt_abi::shm::{Line, ShmError, ShmFile, State, STALE_NS};
use nrt_abi::sim::{self as layout, FIRST_VAR_ID, MAX_OUTPUTS};
use nrt_core::arch::{Arch, ENGINES_PER_CORE, MAX_CORES};
use nrt_core::dma::doorbell::{kickoff_infer, set_host_trigger};
use nrt_core::dma::DmaError;
use nrt_core::event::Event;
use nrt_core::exec::TensorWaker;
use nrt_core::exec::{exec_wait_round_robin, ExecConfig, ExecRequest, TensorCompletions};
use nrt_core::hal::{self, Clock, ErrorKind, ErrorType, Registers};
use nrt_core::nq::{Notifications, SyncPoint, NQ_PER_CORE};
use nrt_core::{NrtError, NrtStatus};

use crate::bar::MappedBar;
use crate::error::LinuxError;
use crate::rings::{MappedRings, RingWindow};
use crate::sys::Mapping;
use crate::time::{AnyDelay, DelayKind, MonotonicClock};

/// Why a harvest could not be done; an NRT status is a result, not this.
#[derive(Debug)]
pub enum HarvestError {
    /// The file is missing, not ready, stale or corrupt.
    Shm(ShmError),
    /// Mapping the rings or the BAR failed.
    Linux(LinuxError),
    /// A kickoff doorbell failed.
    Kickoff(DmaError),
    /// The file's configuration is not one this host can harvest.
    Config(String),
    /// The server stopped playing the device during the harvest, which was abandoned.
    DeviceGone(String),
}

impl core::fmt::Display for HarvestError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            HarvestError::Shm(e) => write!(f, "{e}"),
            HarvestError::Linux(e) => write!(f, "{e}"),
            HarvestError::Kickoff(e) => write!(f, "kickoff failed: {e}"),
            HarvestError::Config(m) => f.write_str(m),
            HarvestError::DeviceGone(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for HarvestError {}

/// Bytes of one NQ entry.
const NQ_ENTRY_BYTES: u32 = 16;

/// `exec_fatal_status[core][5]`: the barrier proxy failed (seed §1).
const BARRIER_PROXY_FLAG: usize = 5;

/// Device calls between two liveness checks of the server; a check is a clock read and two loads.
pub const LIVENESS_EVERY: u32 = 64;

/// A harvest over a server that died ends within this long of its last
/// heartbeat: [`STALE_NS`] plus the checks' spacing, with room for a loaded machine.
pub const DEAD_DEVICE_BOUND: Duration = Duration::from_millis(2_500);

/// Why the server behind `file` no longer plays the device, or `None` while it does.
pub fn server_gone(file: &ShmFile) -> Option<String> {
    let (pid, path) = (file.pid(), file.path().display());
    match file.state() {
        Some(State::Ready) => {}
        Some(State::Exited) => return Some(format!("the device at {path} is gone: the server (pid {pid}) exited")),
        Some(State::Initialising) => {
            return Some(format!("the device at {path} is gone: its state went back to initialising (pid {pid})"))
        }
        None => {
            return Some(format!(
                "the device at {path} is gone: its state word holds {}, not 0, 1 or 2 (pid {pid})",
                file.state_word()
            ))
        }
    }
    let age = file.heartbeat_age_ns();
    (age >= STALE_NS).then(|| {
        format!(
            "the device at {path} is gone: the server (pid {pid}) has not stamped its heartbeat for {:.1} s \
             (the limit is {:.1} s): killed, or stopped?",
            age as f64 / 1e9,
            STALE_NS as f64 / 1e9
        )
    })
}

/// Tensor wake-ups one inference's log keeps; later ones are counted, not kept.
pub const WAKE_LOG_CAP: usize = 256;

/// The waiters of streamed outputs, for one inference: each wake-up in order,
/// at most [`WAKE_LOG_CAP`] of them, and how many more there were.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WakeLog {
    /// Each output and its count, in order.
    pub wakes: Vec<(u16, u32)>,
    /// Wake-ups past the cap.
    pub dropped: u64,
}

impl TensorWaker for WakeLog {
    fn wake(&mut self, output: u16, count: u32) {
        if self.wakes.len() < WAKE_LOG_CAP {
            self.wakes.push((output, count));
        } else {
            self.dropped = self.dropped.saturating_add(1);
        }
    }
}

/// A fresh count table and an empty wake log, one per inference.
fn tensor_table() -> Result<TensorCompletions<MAX_OUTPUTS, WakeLog>, HarvestError> {
    let vars: Vec<u16> = (0..MAX_OUTPUTS as u16).map(|i| FIRST_VAR_ID + i).collect();
    TensorCompletions::with_waker(&vars, WakeLog::default())
        .ok_or_else(|| HarvestError::Config(format!("a tensor table of {} outputs", vars.len())))
}

/// The host's view of the served device: every trait the harvest needs.
pub struct ShmDevice {
    rings: MappedRings<MappedBar>,
    file: Arc<ShmFile>,
    clock: MonotonicClock,
    /// Events the core delivered, in order.
    pub events: Vec<Event>,
    tensors: TensorCompletions<MAX_OUTPUTS, WakeLog>,
    /// Device calls since the last liveness check.
    calls: u32,
    /// Why the server is gone, once it is.
    gone: Option<String>,
}

impl core::fmt::Debug for ShmDevice {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ShmDevice").field("file", &self.file.path()).field("events", &self.events.len()).finish()
    }
}

impl ErrorType for ShmDevice {
    type Error = LinuxError;
}

impl hal::NqRings for ShmDevice {
    fn read_slot(&mut self, core: u8, nq: u8, offset: u32, out: &mut [u8; 16]) -> Result<(), LinuxError> {
        if !self.alive() {
            let why = self.gone.clone().unwrap_or_default();
            let e = std::io::Error::new(std::io::ErrorKind::NotConnected, why);
            return Err(LinuxError::new("read ring", format!("core {core} nq {nq}"), e));
        }
        self.rings.read_slot(core, nq, offset, out)
    }
    fn write_head(&mut self, core: u8, nq: u8, head: u32) -> Result<(), LinuxError> {
        self.rings.write_head(core, nq, head)
    }
}

impl hal::IntcCause for ShmDevice {
    fn read_cause(&mut self, core: u8, block: u32, line: u32) -> Result<u32, LinuxError> {
        let arch = self.file.layout().arch;
        let off = layout::intc_cause_offset(arch, core, block, line).ok_or_else(|| {
            let e = std::io::Error::new(std::io::ErrorKind::InvalidInput, "no INTC cause register");
            LinuxError::new("INTC read", format!("core {core} block {block} line {line}"), e)
        })?;
        self.rings.regs().read32(off)
    }
}

impl hal::Clock for ShmDevice {
    fn now_ns(&self) -> u64 {
        self.clock.now_ns()
    }
}

impl ShmDevice {
    /// Whether the server still plays the device, checked from the first call
    /// every [`LIVENESS_EVERY`]; once gone, gone until the next [`kickoff`](Self::kickoff).
    fn alive(&mut self) -> bool {
        if self.gone.is_some() {
            return false;
        }
        let n = self.calls;
        self.calls = (n + 1) % LIVENESS_EVERY;
        if n == 0 {
            self.gone = server_gone(&self.file);
        }
        self.gone.is_none()
    }

    /// Why the server stopped playing the device, if it did.
    pub fn gone(&self) -> Option<&str> {
        self.gone.as_deref()
    }

    /// The served file.
    pub fn file(&self) -> &ShmFile {
        &self.file
    }

    /// The current inference's tensor wake-ups.
    pub fn wake_log(&self) -> &WakeLog {
        self.tensors.waker()
    }

    /// The current inference's completion count of output `output`.
    pub fn tensor_count(&self, output: u16) -> u32 {
        self.tensors.count(output)
    }

    /// Start one inference: check the server, then the top-SP host trigger and
    /// each of `cores` cores' kickoff semaphore. Returns the kickoff time, host clock, us.
    pub fn kickoff(&mut self, cores: u8) -> Result<u64, HarvestError> {
        self.events.clear();
        self.tensors = tensor_table()?;
        self.calls = 0;
        self.gone = server_gone(&self.file);
        if let Some(why) = &self.gone {
            return Err(HarvestError::DeviceGone(why.clone()));
        }
        let arch = self.file.layout().arch;
        set_host_trigger(self.rings.regs(), &mut Fence, layout::xt_local_reg(arch)).map_err(HarvestError::Kickoff)?;
        let kickoff_us = self.now_ns() / 1_000;
        for c in 0..cores {
            kickoff_infer(&mut ShmSemaphore(&self.file), u32::from(c), u32::from(c)).map_err(HarvestError::Kickoff)?;
        }
        Ok(kickoff_us)
    }

    fn status(&self, line: Line, core: u8) -> Option<NrtError> {
        NrtError::new(NrtStatus::from_code(self.file.line(line, core).map_or(0, |w| w.load(Ordering::Acquire))))
    }
}

impl hal::CollectivesProxy for ShmDevice {
    fn barrier_status(&mut self, core: u8) -> Result<bool, NrtError> {
        // The one wait never fatal by itself, seed §1: a gone server ends it.
        if !self.alive() {
            return Err(NrtError::failed(NrtStatus::HwError));
        }
        if let Some(s) = self.status(Line::BarrierFail, core) {
            return Err(s);
        }
        Ok(self.file.line(Line::BarrierDone, core).is_some_and(|w| w.load(Ordering::Acquire) != 0))
    }
    fn network_status(&mut self, core: u8) -> Result<bool, NrtError> {
        if !self.alive() {
            return Err(NrtError::failed(NrtStatus::HwError));
        }
        self.status(Line::NetproxyFail, core).map_or(Ok(true), Err)
    }
}

impl hal::FaultProbe for ShmDevice {
    fn hbm_uncorrectable(&mut self, core: u8) -> Option<NrtStatus> {
        self.status(Line::Hbm, core).map(NrtError::status)
    }
    fn dma_aborted(&mut self, core: u8) -> bool {
        self.status(Line::DmaAbort, core).is_some()
    }
}

impl<E: Copy + Into<Event>> hal::EventSink<E> for ShmDevice {
    fn event(&mut self, e: &E) {
        self.events.push((*e).into());
    }
}

/// No counters: no driver is behind the file, so there is no datastore (G-NDS-PROCESS).
impl nrt_core::counters::CounterSink for ShmDevice {}

impl hal::TensorNotify for ShmDevice {
    fn tensor_completed(&mut self, core: u8, var_id: u16) -> Option<(u16, u32)> {
        self.tensors.tensor_completed(core, var_id)
    }
}

/// The kickoff semaphore over the file: an atomic add on the INCR-alias word,
/// in place of `NEURON_IOCTL_SEMAPHORE_INCREMENT`.
struct ShmSemaphore<'a>(&'a ShmFile);

impl ErrorType for ShmSemaphore<'_> {
    type Error = ErrorKind;
}

impl hal::Semaphore for ShmSemaphore<'_> {
    fn increment(&mut self, nc: u32, index: u32, value: u32) -> Result<(), ErrorKind> {
        let word = self.0.sema_incr(nc, index).ok_or(ErrorKind::OutOfRange)?;
        fence(Ordering::Release);
        word.fetch_add(value, Ordering::AcqRel);
        Ok(())
    }
}

struct Fence;
impl hal::Fence for Fence {}

/// A host attached to a served device.
#[derive(Debug)]
pub struct Harvester {
    dev: ShmDevice,
    nq: Notifications,
    arch: Arch,
    cores: u8,
    ring_entries: u32,
}

impl Harvester {
    /// Wait up to `wait` for the file at `path` to be ready, map it, and bind the
    /// rings of every core it serves.
    pub fn attach(path: &Path, wait: Duration) -> Result<Harvester, HarvestError> {
        let file = Arc::new(ShmFile::wait_ready(path, wait).map_err(HarvestError::Shm)?);
        let l = *file.layout();
        let name = path.display().to_string();
        let len = |v: u64| usize::try_from(v).map_err(|_| HarvestError::Config(format!("region of {v} bytes")));
        let ring_map = Arc::new(
            Mapping::map(file.file(), l.rings_offset, len(l.rings_len)?)
                .map_err(|e| HarvestError::Linux(LinuxError::new("mmap rings", name.clone(), e)))?,
        );
        let bar =
            MappedBar::from_file(file.file(), &name, l.bar_offset, len(l.bar_len)?).map_err(HarvestError::Linux)?;
        let mut rings = MappedRings::new(l.arch, bar);
        let mut nq = Notifications::new();
        let clock = MonotonicClock::new();
        // The sync point: device time, us since the server's origin, at host time 0.
        let dev_us = monotonic_ns().saturating_sub(file.origin_ns()) / 1_000;
        for core in 0..l.cores {
            for id in 0..NQ_PER_CORE as u8 {
                let at = l.ring_offset(core, id).ok_or_else(|| HarvestError::Config("no such ring".into()))?;
                let w = RingWindow { map: Arc::clone(&ring_map), offset: at - l.rings_offset, size: l.ring_bytes };
                rings.bind(core, id, w, id).map_err(HarvestError::Linux)?;
            }
            nq.bind_core(core, l.ring_bytes)
                .map_err(|e| HarvestError::Config(format!("ring binding refused: {e:?}")))?;
            for eng in 0..ENGINES_PER_CORE {
                nq.set_cal(core, eng, layout::calibration(core, eng));
            }
            nq.set_sync_point(core, SyncPoint { dev_us, cpu_us: 0 });
        }
        let tensors = tensor_table()?;
        let dev = ShmDevice { rings, file, clock, events: Vec::new(), tensors, calls: 0, gone: None };
        let ring_entries = l.ring_bytes / NQ_ENTRY_BYTES;
        debug_assert!(usize::from(l.cores) <= MAX_CORES);
        Ok(Harvester { dev, nq, arch: l.arch, cores: l.cores, ring_entries })
    }

    /// The served file.
    pub fn file(&self) -> &ShmFile {
        &self.dev.file
    }

    /// The device and its ring state, for an [`XuPool`](crate::xu::XuPool) unit to harvest.
    pub fn into_unit(self) -> (ShmDevice, Notifications) {
        (self.dev, self.nq)
    }

    /// One inference: the kickoff, then `exec_wait_round_robin` with a fresh
    /// `delay` and the model's `timeout_s`. The report is `nrt-sim run`'s,
    /// less the staging and the device log, which stay with the server.
    pub fn harvest(&mut self, timeout_s: u32, delay: DelayKind) -> Result<RunReport, HarvestError> {
        let arch = self.arch;
        let kickoff_us = self.dev.kickoff(self.cores)?;
        let mut req = ExecRequest::new(ExecConfig::new(arch, self.cores, timeout_s));
        let t0 = self.dev.now_ns();
        let w = exec_wait_round_robin(&mut req, &mut self.dev, &mut self.nq, &mut AnyDelay::new(delay));
        let elapsed_ns = self.dev.now_ns().saturating_sub(t0);
        if let Some(why) = self.dev.gone() {
            return Err(HarvestError::DeviceGone(format!(
                "{why}; the harvest was abandoned {} after {:.1} s",
                if (0..usize::from(self.cores)).any(|c| req.fatal_flag(c, BARRIER_PROXY_FLAG)) {
                    "in the collectives barrier wait"
                } else {
                    "while waiting for the engines"
                },
                elapsed_ns as f64 / 1e9,
            )));
        }
        self.dev.file.add_harvested();
        let f = &self.dev.file;
        let config = ReportConfig {
            arch,
            cores: self.cores,
            timeout_s,
            seed: f.seed(),
            ring_entries: self.ring_entries,
            threaded: true,
            // The server writes its faults as canonical specs, a label here.
            faults: f.faults_text().split_whitespace().map(str::to_string).collect(),
            place: None,
        };
        Ok(RunReport {
            config,
            status: w.status,
            step: w.step,
            steps: w.steps,
            elapsed_ns,
            timeout_ms: req.timeout_ms(),
            kickoff_us,
            staging: None,
            remote: Some(format!("nrt-sim serve pid {} over {}", f.pid(), f.path().display())),
            cores: core_reports(&req, self.cores),
            events: self.dev.events.clone(),
            staging_events: Vec::new(),
            wakes: self.dev.wake_log().wakes.clone(),
            notes: match self.dev.wake_log().dropped {
                0 => Vec::new(),
                n => vec![Note {
                    t_ns: elapsed_ns,
                    text: format!("{n} more tensor wake-ups not kept (the log keeps {WAKE_LOG_CAP} per inference)"),
                }],
            },
            device: Default::default(),
            passes_us: Vec::new(),
            head_writes_us: Vec::new(),
        })
    }

    /// The generation the server's file plays.
    pub fn arch(&self) -> Arch {
        self.arch
    }

    /// Ask the server to stop.
    pub fn shutdown_server(&self) {
        self.dev.file.request_shutdown();
    }
}
