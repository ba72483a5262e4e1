//! The bring-up path: own cores of a Neuron device through the driver's ioctls
//! and run inferences on them (`nrtctl run`, the C ABI's `nrt_session_*`).
//!
//! [`Session::open`] does steps 1-8 of `docs/driver-model.md` against
//! `/dev/neuronN`, [`Session::run_inference`] step 9, and dropping the session
//! (or [`Session::close`]) step 10:
//!
//! 1. `open(O_RDWR | O_CLOEXEC)`;
//! 2. `DRIVER_INFO_GET` (architecture), `COMPATIBLE_VERSION`: a driver whose
//!    range does not hold this binding's runtime version ([`runtime_version`])
//!    is refused, both named;
//! 3. `DEVICE_INFO`: BAR0's address and size (the BAR ioctls' base,
//!    `driver-abi.md` point 7; nothing is assumed);
//! 4. `CRWL_READER_ENTER` for each core;
//! 5. `NC_RESET` of those cores, `NC_RESET_READY` (result 0);
//! 6. `MEM_ALLOC_V2MT` of the staging queue's TX ring, RX ring and the copy's
//!    buffer (host memory), `MEM_GET_EXTENDED_INFO`, `mmap` at its offset;
//! 7. `DMA_QUEUE_INIT` of the staging queue (engine 0 queue 0);
//! 8. `NOTIFICATIONS_INIT_V2` of runtime rings 2 (ERROR) and 4..=8 (NOTIFY)
//!    of each core with `engine_index` = the runtime NQ index, `mmap`: HEAD is
//!    written at the slot the driver programmed, that `engine_index` (points 5
//!    and 6). [`Session::set_ring_entries`] re-initialises them with a new size
//!    through `NOTIFICATIONS_INIT_WITH_REALLOC_V2`, `force_alloc_mem` 1 (point 8);
//! 9. the inference: a 4 KiB copy and its completion marker built with core's
//!    `append_descs`, lowered into the mapped rings (`create_prings`, the
//!    `SwDmaQueue` cursors), rung with core's `ring_tail_inc` (S2M, then M2S)
//!    through [`IoctlDoorbell`]: one `DMA_QUEUE_COPY_START` with TX and RX
//!    (never `rx == 0`, never before step 7: points 1 and 2); the completion
//!    marker polled in the mapped buffer; the top-SP host trigger (`BAR_WRITE`);
//!    the kickoff `SEMAPHORE_INCREMENT` per core; the harvest: core's
//!    `exec_wait_round_robin` over a device whose rings are the mappings and whose
//!    registers (HEAD, INTC cause, the probes of `nrt_abi::sim::status_window`)
//!    go through `BAR_WRITE` / `BAR_READ` at `bar_address[0] + offset`;
//! 10. teardown, also after an error (RAII): `munmap` of every mapping,
//!     `DMA_QUEUE_RELEASE`, `MEM_FREE`, `CRWL_READER_EXIT`, `close`, each in
//!     reverse order of acquisition.
//!
//! Every error is a [`LinuxError`] naming the call, the device and the errno (or,
//! for a call this binding refuses, why).

use std::io;
use std::sync::atomic::{fence, Ordering};
use std::sync::Arc;

use nrt_abi::sim::{self as simabi, Line};
use nrt_core::arch::{Arch, ENGINES_PER_CORE, MAX_CORES};
use nrt_core::dma::build::{append_descs, Transfer, OP_COPY};
use nrt_core::dma::doorbell::{kickoff_infer, ring_tail_inc, set_host_trigger};
use nrt_core::dma::pring::RingBacking;
use nrt_core::dma::queue::reserve_descriptors;
use nrt_core::dma::{
    Bd, CompletionHandle, DeviceHead, Direction, DmaError, DmaEvent, PlatformType, SwDmaQueue, UdmaCopyWriter,
    UdmaLayout, VRing,
};
use nrt_core::event::Event;
use nrt_core::exec::{exec_wait_round_robin, ExecConfig, ExecRequest, Step, TensorCompletions, TensorWaker};
use nrt_core::hal::{self, Clock, ErrorType, Registers};
use nrt_core::nq::{Notifications, SyncPoint, ERROR_NQ, INFER_STATUS_NQS, NQ_PER_CORE};
use nrt_core::NrtStatus;

use crate::device::{IoctlBar, NeuronDevice};
use crate::doorbell::{IoctlDoorbell, UdmaEngine};
use crate::error::LinuxError;
use crate::ioctl::{
    self, mem_type, nq_dev_type, nq_type, CompatibleVersion, DeviceInfo, DmaQueueInit, DriverInfo, MemAllocV2Mt,
    MemGetExtendedInfo, NotificationsInitV2,
};
use crate::rings::{map_ring, MappedRings, RingInit};
use crate::sys::{self, Mapping};
use crate::time::{AnyDelay, DelayKind, MonotonicClock};

/// The runtime version this binding speaks to a driver of `arch`
/// (`COMPATIBLE_VERSION` must hold it): the newest the public driver at
/// fca19f7 serves for the arch (`V2_RT_MAX_COMPATIBLE_VERSION` 7,
/// `V3_RT_MAX_COMPATIBLE_VERSION` 11; v4 shares v3's).
pub const fn runtime_version(arch: Arch) -> u32 {
    match arch {
        Arch::Sunda => 7,
        Arch::Cayman | Arch::Mariana => 11,
    }
}

/// The DMA engine of the staging queue (engine 0 of NC0, as the simulator's).
pub const STAGING_ENGINE: u32 = 0;
/// The staging queue in its engine.
pub const STAGING_QUEUE: u32 = 0;
/// Descriptors per staging ring: 256 of 16 bytes, one page (the driver maps a
/// chunk only whole).
pub const STAGING_RING_DEPTH: u32 = 256;
/// Bytes the staging copy moves.
pub const COPY_BYTES: usize = 4096;
/// Bytes of the copy's buffer: source, destination, and a page for the
/// completion marker and its done word.
pub const COPY_BUFFER_BYTES: u64 = 3 * 4096;
/// The done word the marker copies over the completion handle.
pub const DONE_WORD: u32 = 1;
/// Default cores of a session (one two-core logical core).
pub const DEFAULT_CORES: u8 = 2;
/// Default NQ ring entries.
pub const DEFAULT_RING_ENTRIES: u32 = 64;
/// The largest NQ ring entries accepted (1 MiB rings).
pub const MAX_RING_ENTRIES: u32 = 1 << 16;
/// Bytes of one NQ entry.
const ENTRY_BYTES: u32 = 16;
/// VRing page of the staging build.
const PAGE_BDS: usize = 8;

/// BAR0 offset of UDMA engine `engine` of NC0 (driver §5), defined in
/// `nrt_abi::sim` (the simulator's driver model serves the same table).
pub use nrt_abi::sim::udma_base;

/// What a session is asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionConfig {
    /// Physical cores (1 or 2); `None`: what the model says
    /// (`nrt_abi::sim::STATUS_MODEL_CORES`), else [`DEFAULT_CORES`].
    pub cores: Option<u8>,
    /// NQ ring entries (a power of two, 2..=65536); `None`: what the model says,
    /// else [`DEFAULT_RING_ENTRIES`].
    pub ring_entries: Option<u32>,
    /// The cores when neither the caller nor the model says ([`DEFAULT_CORES`]).
    pub fallback_cores: u8,
    /// The ring entries when neither says ([`DEFAULT_RING_ENTRIES`]).
    pub fallback_ring_entries: u32,
    /// The model's timeout, seconds.
    pub timeout_s: u32,
    /// The poll delay of the harvest.
    pub delay: DelayKind,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            cores: None,
            ring_entries: None,
            fallback_cores: DEFAULT_CORES,
            fallback_ring_entries: DEFAULT_RING_ENTRIES,
            timeout_s: 5,
            delay: DelayKind::Adaptive,
        }
    }
}

/// Check the cores and ring entries of a session on `arch`.
pub fn validate(arch: Arch, cores: u8, ring_entries: u32) -> Result<(), String> {
    let max = (MAX_CORES as u8).min(arch.nc_per_device());
    if !(1..=max).contains(&cores) {
        return Err(format!("cores must be 1 to {max}, got {cores}"));
    }
    if !ring_entries.is_power_of_two() || !(2..=MAX_RING_ENTRIES).contains(&ring_entries) {
        return Err(format!("ring entries must be a power of two from 2 to {MAX_RING_ENTRIES}, got {ring_entries}"));
    }
    Ok(())
}

/// Whether the driver's `COMPATIBLE_VERSION` range holds this binding's
/// runtime version for `arch`; the refusal names both.
pub fn check_compatible(arch: Arch, v: CompatibleVersion) -> Result<u32, String> {
    let ours = runtime_version(arch);
    if v.min <= ours && ours <= v.max {
        Ok(ours)
    } else {
        Err(format!(
            "incompatible driver: it serves runtime versions {} to {} on arch {} ({}), this binding speaks version {ours}",
            v.min,
            v.max,
            arch.arch_type(),
            arch.name()
        ))
    }
}

/// The NQ rings a core's harvest reads and the `NQ_TYPE` of each: ERROR for
/// runtime ring 2, NOTIFY for the INFER_STATUS rings 4..=8.
pub fn harvest_rings() -> [(u8, u32); 1 + ENGINES_PER_CORE] {
    let mut out = [(ERROR_NQ, nq_type::ERROR); 1 + ENGINES_PER_CORE];
    for (slot, nq) in out.iter_mut().skip(1).zip(INFER_STATUS_NQS) {
        *slot = (nq, nq_type::NOTIFY);
    }
    out
}

/// The `NOTIFICATIONS_INIT_V2` of runtime ring `nq` of `core`: the HEAD slot is
/// the `engine_index` passed, the runtime NQ index (G-NQ-SLOT).
pub fn ring_request(core: u8, nq: u8, kind: u32, ring_entries: u32) -> NotificationsInitV2 {
    NotificationsInitV2 {
        nq_dev_id: u32::from(core),
        nq_dev_type: nq_dev_type::NEURON_CORE,
        nq_type: kind,
        engine_index: u32::from(nq),
        size: ring_entries * ENTRY_BYTES,
        on_host_memory: 1,
        ..NotificationsInitV2::default()
    }
}

/// A core DMA error of staging step `step`, as a [`LinuxError`] naming the device.
fn staging_err<'a>(dev: &'a NeuronDevice, step: &'static str) -> impl Fn(DmaError) -> LinuxError + 'a {
    move |e| {
        let kind = match e {
            DmaError::Timeout => io::ErrorKind::TimedOut,
            _ => io::ErrorKind::InvalidInput,
        };
        LinuxError::new("DMA staging", dev.path().display().to_string(), io::Error::new(kind, format!("{step}: {e}")))
    }
}

fn refused(dev: &NeuronDevice, call: &'static str, why: String) -> LinuxError {
    LinuxError::new(call, dev.path().display().to_string(), io::Error::new(io::ErrorKind::InvalidInput, why))
}

/// BAR0 through the driver's BAR ioctls, owned (the device shared).
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

    /// The 64-bit value of two 32-bit registers, low word first.
    fn read64(&mut self, offset: u64) -> Result<u64, LinuxError> {
        let lo = self.read32(offset)?;
        let hi = self.read32(offset + 4)?;
        Ok(u64::from(lo) | (u64::from(hi) << 32))
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

/// One chunk of host memory the driver allocated, and its mapping.
#[derive(Debug)]
struct Chunk {
    handle: u64,
    info: MemGetExtendedInfo,
    map: Option<Mapping>,
}

/// The chunks as device memory (the driver's physical addresses) and as ring
/// backing: the TX ring, the RX ring, the copy's buffer.
struct ChunkMemory<'a> {
    dev: &'a NeuronDevice,
    chunks: &'a [Chunk],
}

impl ChunkMemory<'_> {
    fn at(&self, addr: u64, len: usize) -> Result<(&Mapping, u64), LinuxError> {
        let end = addr.checked_add(len as u64);
        self.chunks
            .iter()
            .find(|c| addr >= c.info.pa && end.is_some_and(|e| e <= c.info.pa + c.info.size))
            .and_then(|c| c.map.as_ref().map(|m| (m, addr - c.info.pa)))
            .ok_or_else(|| {
                refused(self.dev, "device memory", format!("0x{addr:x}+{len} is in no mapped chunk of this session"))
            })
    }
}

impl ErrorType for ChunkMemory<'_> {
    type Error = LinuxError;
}

impl hal::DeviceMemory for ChunkMemory<'_> {
    fn copy_in(&mut self, addr: u64, data: &[u8]) -> Result<(), LinuxError> {
        let (map, off) = self.at(addr, data.len())?;
        if !data.len().is_multiple_of(4) {
            return Err(refused(
                self.dev,
                "device memory",
                format!("a copy of {} bytes (whole words only)", data.len()),
            ));
        }
        fence(Ordering::Release);
        for (i, w) in data.chunks_exact(4).enumerate() {
            let v = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
            map.store32(off + 4 * i as u64, v, Ordering::Relaxed)
                .map_err(|e| LinuxError::new("copy in", self.dev.path().display().to_string(), e))?;
        }
        Ok(())
    }

    fn copy_out(&mut self, addr: u64, out: &mut [u8]) -> Result<(), LinuxError> {
        let (map, off) = self.at(addr, out.len())?;
        if !out.len().is_multiple_of(4) {
            return Err(refused(
                self.dev,
                "device memory",
                format!("a copy of {} bytes (whole words only)", out.len()),
            ));
        }
        for (i, w) in out.chunks_exact_mut(4).enumerate() {
            let v = map
                .load32(off + 4 * i as u64, Ordering::Acquire)
                .map_err(|e| LinuxError::new("copy out", self.dev.path().display().to_string(), e))?;
            w.copy_from_slice(&v.to_le_bytes());
        }
        Ok(())
    }
}

impl RingBacking for ChunkMemory<'_> {
    fn alloc_ring(&mut self, dir: Direction, depth: u32) -> Result<u64, LinuxError> {
        let c = match dir {
            Direction::Tx => self.chunks.first(),
            Direction::Rx => self.chunks.get(1),
        };
        match c {
            Some(c) if u64::from(depth) * 16 <= c.info.size => Ok(c.info.pa),
            _ => Err(refused(self.dev, "ring backing", format!("no {dir:?} ring chunk for {depth} descriptors"))),
        }
    }
}

struct Collect<'a>(&'a mut Vec<Event>);

impl hal::EventSink for Collect<'_> {
    fn event(&mut self, e: &Event) {
        self.0.push(*e);
    }
}

struct Fence;
impl hal::Fence for Fence {}

/// The kickoff semaphore: `NEURON_IOCTL_SEMAPHORE_INCREMENT`.
struct Sema<'a>(&'a NeuronDevice);

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
    /// (output, count), in order.
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

fn tensor_table() -> Option<TensorCompletions<{ simabi::MAX_OUTPUTS }, Wakes>> {
    let vars: Vec<u16> = (0..simabi::MAX_OUTPUTS as u16).map(|i| simabi::FIRST_VAR_ID + i).collect();
    TensorCompletions::with_waker(&vars, Wakes::default())
}

/// The device the harvest sees: the mapped rings, HEAD / INTC / probes through
/// the BAR ioctls, `CLOCK_MONOTONIC`.
pub struct DriverDevice {
    rings: MappedRings<DriverBar>,
    arch: Arch,
    clock: MonotonicClock,
    /// Events the core delivered, in order.
    pub events: Vec<Event>,
    tensors: TensorCompletions<{ simabi::MAX_OUTPUTS }, Wakes>,
    /// The first failed probe read (the harvest goes on: a probe is advisory).
    pub probe_error: Option<LinuxError>,
}

impl core::fmt::Debug for DriverDevice {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("DriverDevice").field("arch", &self.arch).field("events", &self.events.len()).finish()
    }
}

impl DriverDevice {
    fn status(&mut self, line: Line, core: u8) -> Result<Option<NrtStatus>, LinuxError> {
        let off = simabi::status_window(self.arch) + simabi::status_line_offset(line, core);
        let v = self.rings.regs().read32(off)?;
        Ok((v != 0).then(|| NrtStatus::from_code(v)))
    }

    fn probe(&mut self, line: Line, core: u8) -> Option<NrtStatus> {
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
        self.rings.read_slot(core, nq, offset, out)
    }
    fn write_head(&mut self, core: u8, nq: u8, head: u32) -> Result<(), LinuxError> {
        self.rings.write_head(core, nq, head)
    }
}

impl hal::IntcCause for DriverDevice {
    fn read_cause(&mut self, core: u8, block: u32, line: u32) -> Result<u32, LinuxError> {
        let off = simabi::intc_cause_offset(self.arch, core, block, line).ok_or_else(|| {
            let e = io::Error::new(io::ErrorKind::InvalidInput, "no INTC cause register");
            LinuxError::new("INTC read", format!("core {core} block {block} line {line}"), e)
        })?;
        self.rings.regs().read32(off)
    }
}

impl hal::Clock for DriverDevice {
    fn now_ns(&self) -> u64 {
        self.clock.now_ns()
    }
}

impl hal::CollectivesProxy for DriverDevice {
    fn barrier_status(&mut self, core: u8) -> Result<bool, NrtStatus> {
        // The barrier wait is never fatal by itself: a device that stopped
        // answering ends it.
        match self.status(Line::BarrierFail, core) {
            Ok(Some(s)) => return Err(s),
            Ok(None) => {}
            Err(e) => {
                self.probe_error.get_or_insert(e);
                return Err(NrtStatus::HwError);
            }
        }
        let off = simabi::status_window(self.arch) + simabi::status_line_offset(Line::BarrierDone, core);
        match self.rings.regs().read32(off) {
            Ok(v) => Ok(v != 0),
            Err(e) => {
                self.probe_error.get_or_insert(e);
                Err(NrtStatus::HwError)
            }
        }
    }
    fn network_status(&mut self, core: u8) -> Result<bool, NrtStatus> {
        self.probe(Line::NetproxyFail, core).map_or(Ok(true), Err)
    }
}

impl hal::FaultProbe for DriverDevice {
    fn hbm_uncorrectable(&mut self, core: u8) -> Option<NrtStatus> {
        self.probe(Line::Hbm, core)
    }
    fn dma_aborted(&mut self, core: u8) -> bool {
        self.probe(Line::DmaAbort, core).is_some()
    }
}

impl hal::EventSink for DriverDevice {
    fn event(&mut self, e: &Event) {
        self.events.push(*e);
    }
}

impl hal::TensorNotify for DriverDevice {
    fn tensor_completed(&mut self, core: u8, var_id: u16) -> Option<(u16, u32)> {
        self.tensors.tensor_completed(core, var_id)
    }
}

/// What staging did (the fields of `nrt-sim run`'s staging report).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Staging {
    /// Descriptors built, lowered and rung in each direction (data + marker).
    pub descriptors: u32,
    /// Depth of each ring.
    pub ring_depth: u32,
    /// Device (physical) addresses of the TX and RX rings.
    pub rings: (u64, u64),
    /// BAR0 offsets of the M2S and S2M tail-increment registers rung (through
    /// `DMA_QUEUE_COPY_START`).
    pub doorbells: (u64, u64),
    /// Device address of the completion handle.
    pub handle: u64,
    /// Polls that read the sentinel before the marker arrived (`None`: it did
    /// not arrive within core's budget).
    pub handle_polls: Option<u64>,
    /// Bytes copied.
    pub copy_bytes: usize,
    /// The destination matched the source.
    pub copy_verified: bool,
    /// BAR0 offset of the host trigger written.
    pub host_trigger: u64,
    /// The staging chain's events.
    pub events: Vec<Event>,
}

/// One inference's outcome.
#[derive(Debug)]
pub struct Inference {
    /// The request's status.
    pub status: NrtStatus,
    /// The one-step return code it ended with.
    pub step: Step,
    /// Calls of `progress_one_step`.
    pub steps: u64,
    /// Harvest time, ns.
    pub elapsed_ns: u64,
    /// The kickoff time on the session's clock, us.
    pub kickoff_us: u64,
    /// The harvested request (per-core results, engine times).
    pub request: ExecRequest,
    /// The harvest's events.
    pub events: Vec<Event>,
    /// Tensor wake-ups, in order, and how many past the cap.
    pub wakes: Wakes,
    /// What staging did.
    pub staging: Staging,
    /// The first probe read that failed, if any.
    pub probe_error: Option<String>,
}

/// The staging copy of step 9 into the mapped chunks: fill the buffer (source,
/// cleared destination, done word), arm the completion handle, build the copy
/// and its marker with core's `append_descs`, lower them into the rings
/// (`create_prings` over the TX and RX chunks), reserve, set and stage them at
/// the queue cursors. Returns the descriptors per direction, the rings'
/// addresses and their depth.
fn lower_staging(
    mem: &mut ChunkMemory<'_>,
    arch: Arch,
    buf: u64,
    src: &[u8],
    (txq, rxq): (&mut SwDmaQueue, &mut SwDmaQueue),
    events: &mut Vec<Event>,
) -> Result<(u32, (u64, u64), u32), LinuxError> {
    let dev = mem.dev;
    let (src_addr, dst_addr) = (buf, buf + COPY_BYTES as u64);
    let (handle_addr, done_addr) = (buf + 2 * COPY_BYTES as u64, buf + 2 * COPY_BYTES as u64 + 0x100);
    let mut tx_img = vec![Bd::ZERO; STAGING_RING_DEPTH as usize];
    let mut rx_img = vec![Bd::ZERO; STAGING_RING_DEPTH as usize];
    let mut txp = [[Bd::ZERO; PAGE_BDS]; 2];
    let mut rxp = [[Bd::ZERO; PAGE_BDS]; 2];
    hal::DeviceMemory::copy_in(mem, src_addr, src)?;
    hal::DeviceMemory::copy_in(mem, dst_addr, &vec![0; src.len()])?;
    hal::DeviceMemory::copy_in(mem, done_addr, &DONE_WORD.to_le_bytes())?;
    CompletionHandle::new(handle_addr).arm(mem).map_err(staging_err(dev, "arm completion handle"))?;
    let mut vring: VRing<'_, PAGE_BDS> = VRing::new(&mut txp, &mut rxp);
    // 1024 elements of 4 bytes in 256-element BDs: four 1 KiB descriptors.
    let data = Transfer {
        op: OP_COPY,
        elem_count: (src.len() / 4) as u32,
        granule: 256,
        elem_bytes: 4,
        src: src_addr,
        dst: dst_addr,
    };
    let a = append_descs(&mut vring, arch, &data, &mut UdmaCopyWriter).map_err(staging_err(dev, "append data"))?;
    let marker = Transfer { op: OP_COPY, elem_count: 1, granule: 1, elem_bytes: 4, src: done_addr, dst: handle_addr };
    let b = append_descs(&mut vring, arch, &marker, &mut UdmaCopyWriter).map_err(staging_err(dev, "append marker"))?;
    let n = a.tx.ndesc + b.tx.ndesc;
    vring.create_prings(mem, &mut Collect(events), &mut tx_img, &mut rx_img).map_err(staging_err(dev, "lower"))?;
    let (tx, rx) = vring.rings_mut().map_err(staging_err(dev, "rings"))?;
    let (th, rh) = (DeviceHead::caught_up(txq), DeviceHead::caught_up(rxq));
    let (rt, rr) = reserve_descriptors(txq, rxq, th, rh, n).map_err(staging_err(dev, "reserve"))?;
    let tx_bds: Vec<Bd> = tx.image().iter().take(n as usize).copied().collect();
    let rx_bds: Vec<Bd> = rx.image().iter().take(n as usize).copied().collect();
    tx.set_descriptors(&rt, &tx_bds).map_err(staging_err(dev, "set tx"))?;
    rx.set_descriptors(&rr, &rx_bds).map_err(staging_err(dev, "set rx"))?;
    tx.stage(mem, &rt).map_err(staging_err(dev, "stage tx"))?;
    rx.stage(mem, &rr).map_err(staging_err(dev, "stage rx"))?;
    Ok((n, (tx.dev_addr(), rx.dev_addr()), tx.depth()))
}

/// Cores of a Neuron device owned through the driver, with their rings and
/// the staging queue, released on drop.
pub struct Session {
    dev: Arc<NeuronDevice>,
    arch: Arch,
    driver: DriverInfo,
    compat: CompatibleVersion,
    info: DeviceInfo,
    cores: u8,
    ring_entries: u32,
    timeout_s: u32,
    delay: DelayKind,
    /// Cores entered (CRWL_READER_ENTER), in order.
    readers: Vec<u32>,
    /// TX ring, RX ring, copy buffer, in order of allocation.
    chunks: Vec<Chunk>,
    /// Queues initialised, in order.
    queues: Vec<(u32, u32)>,
    /// The harvest's device (it holds the NQ ring mappings) and ring state.
    device: Option<DriverDevice>,
    nq: Notifications,
    /// The staging queue's cursors.
    txq: Option<SwDmaQueue>,
    rxq: Option<SwDmaQueue>,
    /// Size each ring was initialised with, for a size change (point 8).
    ring_sizes: [[Option<u32>; NQ_PER_CORE]; MAX_CORES],
    last_status: Option<NrtStatus>,
    closed: bool,
}

impl core::fmt::Debug for Session {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Session")
            .field("device", &self.dev.path())
            .field("arch", &self.arch)
            .field("cores", &self.cores)
            .field("ring_entries", &self.ring_entries)
            .finish()
    }
}

impl Session {
    /// Bring up `cfg.cores` cores of the device at `path` (steps 1-8). On any
    /// failure, what was acquired is released before the error returns.
    pub fn open(path: impl AsRef<std::path::Path>, cfg: SessionConfig) -> Result<Session, LinuxError> {
        let dev = Arc::new(NeuronDevice::open(path)?);
        let driver = dev.driver_info()?;
        let arch = u8::try_from(driver.architecture).ok().and_then(Arch::from_arch_type).ok_or_else(|| {
            refused(
                &dev,
                ioctl::DRIVER_INFO_GET.name(),
                format!("unknown architecture {} (this binding knows 2, 3 and 4)", driver.architecture),
            )
        })?;
        let compat = dev.compatible_version()?;
        check_compatible(arch, compat).map_err(|why| refused(&dev, ioctl::COMPATIBLE_VERSION.name(), why))?;
        let info = dev.device_info()?;
        if info.architecture != driver.architecture {
            return Err(refused(
                &dev,
                ioctl::DEVICE_INFO.name(),
                format!("architecture {} where the driver said {}", info.architecture, driver.architecture),
            ));
        }
        let mut bar = DriverBar::new(Arc::clone(&dev), &info)?;
        // What the model says (0, a value out of range or a failed read:
        // nothing, so a real device's unrelated register there is ignored);
        // the caller's choice first.
        let mut hint = |off: u64| bar.read32(simabi::status_window(arch) + off).ok().filter(|v| *v != 0);
        let cores = match cfg.cores {
            Some(c) => c,
            None => hint(simabi::STATUS_MODEL_CORES)
                .and_then(|v| u8::try_from(v).ok())
                .filter(|c| validate(arch, *c, DEFAULT_RING_ENTRIES).is_ok())
                .unwrap_or(cfg.fallback_cores),
        };
        let ring_entries = match cfg.ring_entries {
            Some(n) => n,
            None => hint(simabi::STATUS_MODEL_RING_ENTRIES)
                .filter(|n| validate(arch, 1, *n).is_ok())
                .unwrap_or(cfg.fallback_ring_entries),
        };
        validate(arch, cores, ring_entries).map_err(|why| refused(&dev, "session", why))?;
        let mut s = Session {
            dev,
            arch,
            driver,
            compat,
            info,
            cores,
            ring_entries,
            timeout_s: cfg.timeout_s,
            delay: cfg.delay,
            readers: Vec::new(),
            chunks: Vec::new(),
            queues: Vec::new(),
            device: None,
            nq: Notifications::new(),
            txq: None,
            rxq: None,
            ring_sizes: [[None; NQ_PER_CORE]; MAX_CORES],
            last_status: None,
            closed: false,
        };
        s.own_cores()?;
        s.alloc_chunks()?;
        s.init_queue()?;
        s.init_rings(bar)?;
        Ok(s)
    }

    /// Steps 4 and 5.
    fn own_cores(&mut self) -> Result<(), LinuxError> {
        for nc in 0..u32::from(self.cores) {
            self.dev.crwl_reader_enter(nc)?;
            self.readers.push(nc);
        }
        let map = (1u32 << self.cores) - 1;
        let id = self.dev.nc_reset(map)?;
        match self.dev.nc_reset_ready(id)? {
            0 => Ok(()),
            r => Err(refused(
                &self.dev,
                ioctl::NC_RESET_READY.name(),
                format!("the reset of cores 0x{map:x} (request {id}) failed with result {r}"),
            )),
        }
    }

    /// Step 6.
    fn alloc_chunks(&mut self) -> Result<(), LinuxError> {
        let ring = u64::from(STAGING_RING_DEPTH) * 16;
        for (size, kind) in [
            (ring, mem_type::DMA_RINGS_HOST),
            (ring, mem_type::DMA_RINGS_HOST),
            (COPY_BUFFER_BYTES, mem_type::DMA_RINGS_HOST),
        ] {
            let a = MemAllocV2Mt { size, align: 4096, host_memory: 1, mem_type: kind, ..MemAllocV2Mt::default() };
            let handle = self.dev.mem_alloc_v2mt(a)?;
            self.chunks.push(Chunk { handle, info: MemGetExtendedInfo::default(), map: None });
            let info = self.dev.mem_get_extended_info(handle)?;
            if info.size < size {
                return Err(refused(
                    &self.dev,
                    ioctl::MEM_GET_EXTENDED_INFO.name(),
                    format!("chunk {handle:#x} has {} bytes, {size} were asked", info.size),
                ));
            }
            let len = usize::try_from(info.size).map_err(|_| {
                refused(&self.dev, "mmap", format!("a chunk of {} bytes does not fit this address space", info.size))
            })?;
            let map = Mapping::map(self.dev.file(), info.mmap_offset, len)
                .map_err(|e| LinuxError::new("mmap", self.dev.path().display().to_string(), e))?;
            if let Some(c) = self.chunks.last_mut() {
                c.info = info;
                c.map = Some(map);
            }
        }
        Ok(())
    }

    /// Step 7.
    fn init_queue(&mut self) -> Result<(), LinuxError> {
        let (tx, rx) = match (self.chunks.first(), self.chunks.get(1)) {
            (Some(t), Some(r)) => (t.handle, r.handle),
            _ => return Err(refused(&self.dev, ioctl::DMA_QUEUE_INIT.name(), "no ring memory".into())),
        };
        self.dev.dma_queue_init(DmaQueueInit {
            eng_id: STAGING_ENGINE,
            qid: STAGING_QUEUE,
            tx_desc_count: STAGING_RING_DEPTH,
            rx_desc_count: STAGING_RING_DEPTH,
            tx_handle: tx,
            rx_handle: rx,
            rxc_handle: 0,
            axi_port: 0,
            _pad: 0,
        })?;
        self.queues.push((STAGING_ENGINE, STAGING_QUEUE));
        self.txq = Some(SwDmaQueue::new(STAGING_RING_DEPTH).map_err(|e| self.dma_error("queue", e))?);
        self.rxq = Some(SwDmaQueue::new(STAGING_RING_DEPTH).map_err(|e| self.dma_error("queue", e))?);
        Ok(())
    }

    /// Step 8, and the clock and calibration of each core.
    fn init_rings(&mut self, mut bar: DriverBar) -> Result<(), LinuxError> {
        let origin = bar.read64(simabi::status_window(self.arch) + simabi::STATUS_CLOCK_ORIGIN).unwrap_or(0);
        let rings = MappedRings::new(self.arch, bar);
        let clock = MonotonicClock::new();
        let tensors = tensor_table().ok_or_else(|| {
            refused(&self.dev, "session", format!("a tensor table of {} outputs", simabi::MAX_OUTPUTS))
        })?;
        self.device =
            Some(DriverDevice { rings, arch: self.arch, clock, events: Vec::new(), tensors, probe_error: None });
        // Device time (us since the model's origin) at host time 0.
        let dev_us = if origin == 0 { 0 } else { sys::monotonic_ns().saturating_sub(origin) / 1_000 };
        for core in 0..self.cores {
            for eng in 0..ENGINES_PER_CORE {
                self.nq.set_cal(core, eng, simabi::calibration(core, eng));
            }
            self.nq.set_sync_point(core, SyncPoint { dev_us, cpu_us: 0 });
        }
        self.bind_rings(self.ring_entries)
    }

    fn bind_rings(&mut self, ring_entries: u32) -> Result<(), LinuxError> {
        for core in 0..self.cores {
            for (nq, kind) in harvest_rings() {
                let arg = ring_request(core, nq, kind, ring_entries);
                let prev =
                    self.ring_sizes.get(usize::from(core)).and_then(|r| r.get(usize::from(nq))).copied().flatten();
                let (window, _) = map_ring(&self.dev, RingInit::for_size(arg, prev))?;
                if let Some(s) = self.ring_sizes.get_mut(usize::from(core)).and_then(|r| r.get_mut(usize::from(nq))) {
                    *s = Some(arg.size);
                }
                // HEAD at the slot the driver programmed: the engine_index passed.
                match self.device.as_mut() {
                    Some(d) => d.rings.bind_initialised(core, nq, window, &arg)?,
                    None => return Err(refused(&self.dev, "bind ring", "the session is closed".into())),
                }
            }
            self.nq.bind_core(core, ring_entries * ENTRY_BYTES).map_err(|e| {
                refused(&self.dev, "bind ring", format!("core {core}: the ring state refused the binding: {e:?}"))
            })?;
        }
        self.ring_entries = ring_entries;
        Ok(())
    }

    /// Re-initialise every ring with `ring_entries` entries: a size change goes
    /// through `NOTIFICATIONS_INIT_WITH_REALLOC_V2` with `force_alloc_mem` 1
    /// (`driver-abi.md` point 8), and the new chunks are mapped.
    pub fn set_ring_entries(&mut self, ring_entries: u32) -> Result<(), LinuxError> {
        validate(self.arch, self.cores, ring_entries).map_err(|why| refused(&self.dev, "session", why))?;
        self.nq = {
            let mut nq = Notifications::new();
            for core in 0..self.cores {
                for eng in 0..ENGINES_PER_CORE {
                    nq.set_cal(core, eng, self.nq.cal(core, eng));
                }
                nq.set_sync_point(core, self.nq.sync_point(core));
            }
            nq
        };
        self.bind_rings(ring_entries)
    }

    fn dma_error(&self, step: &str, e: DmaError) -> LinuxError {
        let kind = match e {
            DmaError::Timeout => io::ErrorKind::TimedOut,
            _ => io::ErrorKind::InvalidInput,
        };
        LinuxError::new(
            "DMA staging",
            self.dev.path().display().to_string(),
            io::Error::new(kind, format!("{step}: {e}")),
        )
    }

    /// The device node.
    pub fn path(&self) -> &std::path::Path {
        self.dev.path()
    }
    /// The device's generation (`DRIVER_INFO_GET`).
    pub fn arch(&self) -> Arch {
        self.arch
    }
    /// The driver's info.
    pub fn driver_info(&self) -> DriverInfo {
        self.driver
    }
    /// The runtime versions the driver serves.
    pub fn compatible_version(&self) -> CompatibleVersion {
        self.compat
    }
    /// The device's info (BAR addresses and sizes).
    pub fn device_info(&self) -> DeviceInfo {
        self.info
    }
    /// Physical cores owned.
    pub fn cores(&self) -> u8 {
        self.cores
    }
    /// NQ ring entries.
    pub fn ring_entries(&self) -> u32 {
        self.ring_entries
    }
    /// The model's timeout, seconds.
    pub fn timeout_s(&self) -> u32 {
        self.timeout_s
    }
    /// The status of the latest inference (`None` before the first).
    pub fn last_status(&self) -> Option<NrtStatus> {
        self.last_status
    }

    /// Step 9's staging: the copy and its marker into the mapped rings, one copy
    /// start, the marker polled.
    fn stage(&mut self) -> Result<Staging, LinuxError> {
        let arch = self.arch;
        let buf =
            self.chunks.get(2).map(|c| c.info.pa).ok_or_else(|| refused(&self.dev, "staging", "no buffer".into()))?;
        let dst_addr = buf + COPY_BYTES as u64;
        let handle_addr = buf + 2 * COPY_BYTES as u64;
        let src: Vec<u8> = (0..COPY_BYTES).map(|i| (i.wrapping_mul(131) % 251) as u8).collect();
        let mut events = Vec::new();
        let (mut txq, mut rxq) = match (self.txq, self.rxq) {
            (Some(t), Some(r)) => (t, r),
            _ => return Err(refused(&self.dev, "staging", "the queue was not initialised".into())),
        };
        let handle = CompletionHandle::new(handle_addr);
        let (n, rings, depth) = {
            let mut mem = ChunkMemory { dev: &self.dev, chunks: &self.chunks };
            lower_staging(&mut mem, arch, buf, &src, (&mut txq, &mut rxq), &mut events)?
        };
        self.txq = Some(txq);
        self.rxq = Some(rxq);
        // The doorbells: S2M, then M2S, through one DMA_QUEUE_COPY_START.
        let base = udma_base(arch, STAGING_ENGINE);
        let map = UdmaLayout::of(arch);
        let doorbells = (
            map.tail_inc_offset(base, STAGING_QUEUE, Direction::Tx)
                .map_err(staging_err(&self.dev, "doorbell offset"))?,
            map.tail_inc_offset(base, STAGING_QUEUE, Direction::Rx)
                .map_err(staging_err(&self.dev, "doorbell offset"))?,
        );
        {
            let mut db = IoctlDoorbell::new(&self.dev, arch, vec![UdmaEngine { eng_id: STAGING_ENGINE, base }]);
            for dir in [Direction::Rx, Direction::Tx] {
                ring_tail_inc(&mut db, &mut Fence, arch, base, STAGING_QUEUE, dir, n)
                    .map_err(|e| self.dma_error("doorbell", e))?;
            }
        }
        let mut mem = ChunkMemory { dev: &self.dev, chunks: &self.chunks };
        let mut delay = AnyDelay::new(DelayKind::Libnrt);
        // The marker within core's budget; a device that did not copy is reported, not fatal.
        let _ = handle.wait(&mut mem, &mut delay, &mut Collect(&mut events), n, PlatformType::HARDWARE);
        let handle_polls = events.iter().rev().find_map(|e| match e {
            Event::Dma(DmaEvent::Completed { polls, .. }) => Some(*polls),
            _ => None,
        });
        let mut dst = vec![0u8; COPY_BYTES];
        hal::DeviceMemory::copy_out(&mut mem, dst_addr, &mut dst)?;
        Ok(Staging {
            descriptors: n,
            ring_depth: depth,
            rings,
            doorbells,
            handle: handle.addr(),
            handle_polls,
            copy_bytes: COPY_BYTES,
            copy_verified: dst == src,
            host_trigger: simabi::xt_local_reg(arch) + nrt_core::dma::HOST_TRIGGER_OFFSET,
            events,
        })
    }

    /// Step 9: stage, kick off (the top-SP host trigger, the kickoff semaphore
    /// of each core), harvest. A status is a result, not an error: `Err` is a
    /// failed call.
    pub fn run_inference(&mut self) -> Result<Inference, LinuxError> {
        if self.closed {
            return Err(refused(&self.dev, "inference", "the session is closed".into()));
        }
        let staging = self.stage()?;
        let arch = self.arch;
        let cores = self.cores;
        let tensors = tensor_table().ok_or_else(|| {
            refused(&self.dev, "session", format!("a tensor table of {} outputs", simabi::MAX_OUTPUTS))
        })?;
        let dev = Arc::clone(&self.dev);
        let d = self.device.as_mut().ok_or_else(|| refused(&dev, "inference", "the session is closed".into()))?;
        d.events.clear();
        d.tensors = tensors;
        d.probe_error = None;
        set_host_trigger(d.rings.regs(), &mut Fence, simabi::xt_local_reg(arch)).map_err(|e| {
            LinuxError::new("host trigger", dev.path().display().to_string(), io::Error::other(e.to_string()))
        })?;
        let kickoff_us = d.now_ns() / 1_000;
        for c in 0..cores {
            kickoff_infer(&mut Sema(&dev), u32::from(c), u32::from(c)).map_err(|e| {
                LinuxError::new(
                    ioctl::SEMAPHORE_INCREMENT.name(),
                    dev.path().display().to_string(),
                    io::Error::other(format!("core {c}: {e}")),
                )
            })?;
        }
        let mut req = ExecRequest::new(ExecConfig::new(arch, cores, self.timeout_s));
        let t0 = d.now_ns();
        let w = exec_wait_round_robin(&mut req, d, &mut self.nq, &mut AnyDelay::new(self.delay));
        let elapsed_ns = d.now_ns().saturating_sub(t0);
        self.last_status = Some(w.status);
        Ok(Inference {
            status: w.status,
            step: w.step,
            steps: w.steps,
            elapsed_ns,
            kickoff_us,
            request: req,
            events: std::mem::take(&mut d.events),
            wakes: d.tensors.waker().clone(),
            staging,
            probe_error: d.probe_error.take().map(|e| e.to_string()),
        })
    }

    /// Step 10: release everything in reverse order (mappings, queues, chunks,
    /// cores) and close the device; every failed release is returned (the others
    /// are still made).
    pub fn close(mut self) -> Result<(), Vec<LinuxError>> {
        let errors = self.teardown();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }

    fn teardown(&mut self) -> Vec<LinuxError> {
        if self.closed {
            return Vec::new();
        }
        self.closed = true;
        let mut errors = Vec::new();
        // munmap: the NQ rings (held by the harvest's device), then the chunks.
        self.device = None;
        for c in self.chunks.iter_mut().rev() {
            c.map = None;
        }
        for (eng, q) in self.queues.drain(..).rev() {
            if let Err(e) = self.dev.dma_queue_release(eng, q) {
                errors.push(e);
            }
        }
        for c in self.chunks.drain(..).rev() {
            if let Err(e) = self.dev.mem_free(c.handle) {
                errors.push(e);
            }
        }
        for nc in self.readers.drain(..).rev() {
            if let Err(e) = self.dev.crwl_reader_exit(nc) {
                errors.push(e);
            }
        }
        for e in &errors {
            log::warn!("session teardown: {e}");
        }
        errors
        // The device closes when the last reference (this session's) drops.
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.teardown();
    }
}

/// The report `nrt-sim run` prints, of inference `r` run on the device at
/// `device` with the labels of `config` (its scenario's and `--inject`'s
/// faults; arch, cores, ring entries and timeout are replaced by the
/// session's). The device's own log and counters stay with the driver.
#[cfg(feature = "sim")]
pub fn run_report(
    session: &Session,
    r: &Inference,
    mut config: nrt_abi::report::ReportConfig,
) -> nrt_abi::report::RunReport {
    use nrt_abi::report::{core_reports, Note, RunReport, StagingReport};
    config.arch = session.arch;
    config.cores = session.cores;
    config.ring_entries = session.ring_entries;
    config.timeout_s = session.timeout_s;
    config.threaded = true;
    let s = &r.staging;
    let mut notes = Vec::new();
    if r.wakes.dropped > 0 {
        notes.push(Note {
            t_ns: r.elapsed_ns,
            text: format!("{} more tensor wake-ups not kept (the log keeps {WAKE_LOG_CAP})", r.wakes.dropped),
        });
    }
    RunReport {
        config,
        status: r.status,
        step: r.step,
        steps: r.steps,
        elapsed_ns: r.elapsed_ns,
        timeout_ms: r.request.timeout_ms(),
        kickoff_us: r.kickoff_us,
        staging: Some(StagingReport {
            descriptors: s.descriptors,
            ring_depth: s.ring_depth,
            rings: s.rings,
            doorbells: s.doorbells,
            handle: s.handle,
            handle_polls: s.handle_polls,
            copy_bytes: s.copy_bytes,
            copy_verified: s.copy_verified,
            host_trigger: s.host_trigger,
        }),
        remote: Some(format!("the Neuron driver behind {}", session.path().display())),
        cores: core_reports(&r.request, session.cores),
        events: r.events.clone(),
        staging_events: s.events.clone(),
        wakes: r.wakes.wakes.clone(),
        notes,
        device: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_runtime_version_is_checked_against_both_ends_and_named() {
        assert_eq!(check_compatible(Arch::Sunda, CompatibleVersion { max: 7, min: 5 }), Ok(7));
        assert_eq!(check_compatible(Arch::Cayman, CompatibleVersion { max: 11, min: 10 }), Ok(11));
        let e = check_compatible(Arch::Cayman, CompatibleVersion { max: 7, min: 5 }).unwrap_err();
        assert!(e.contains("runtime versions 5 to 7") && e.contains("speaks version 11"), "{e}");
        let e = check_compatible(Arch::Sunda, CompatibleVersion { max: 11, min: 10 }).unwrap_err();
        assert!(e.contains("10 to 11") && e.contains("version 7"), "{e}");
    }

    #[test]
    fn the_harvest_rings_and_their_requests_follow_the_contract() {
        let r = harvest_rings();
        assert_eq!(r, [(2, nq_type::ERROR), (4, 1), (5, 1), (6, 1), (7, 1), (8, 1)]);
        let a = ring_request(1, 6, nq_type::NOTIFY, 64);
        assert_eq!((a.nq_dev_id, a.nq_dev_type, a.nq_type, a.engine_index), (1, 0, 1, 6));
        assert_eq!((a.size, a.on_host_memory), (1024, 1));
    }

    #[test]
    fn cores_and_ring_entries_are_validated() {
        assert!(validate(Arch::Sunda, 2, 64).is_ok());
        assert!(validate(Arch::Cayman, 1, 2).is_ok());
        assert!(validate(Arch::Sunda, 0, 64).unwrap_err().contains("cores must be 1 to 2"));
        assert!(validate(Arch::Cayman, 3, 64).is_err(), "the harvest state holds one logical core");
        assert!(validate(Arch::Sunda, 1, 48).unwrap_err().contains("power of two"));
        assert!(validate(Arch::Sunda, 1, 1 << 17).is_err());
    }

    #[test]
    fn udma_bases_are_the_drivers() {
        assert_eq!(udma_base(Arch::Sunda, 0), 0x3000_0000);
        assert_eq!(udma_base(Arch::Sunda, 1), 0x3004_0000);
        assert_eq!(udma_base(Arch::Cayman, 0), 0x8200_0000);
    }

    /// Not a device: the first driver call fails, named, with ENOTTY, and
    /// nothing else is attempted.
    #[test]
    fn a_non_device_fails_at_driver_info_with_enotty() {
        let e = Session::open("/dev/null", SessionConfig::default()).unwrap_err();
        assert_eq!(e.call, "NEURON_IOCTL_DRIVER_INFO_GET");
        assert_eq!(e.errno(), Some(libc::ENOTTY));
        assert!(e.to_string().starts_with("NEURON_IOCTL_DRIVER_INFO_GET on /dev/null failed: ENOTTY"), "{e}");
        let e = Session::open("/nonexistent/neuron0", SessionConfig::default()).unwrap_err();
        assert_eq!((e.call, e.errno()), ("open", Some(libc::ENOENT)));
        assert!(e.to_string().contains("/nonexistent/neuron0"), "{e}");
    }

    fn chunk(name: &str, pa: u64, size: u64) -> Chunk {
        let p = std::env::temp_dir().join(format!("nrt-linux-session-{}-{name}", std::process::id()));
        let f = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&p).unwrap();
        f.set_len(size).unwrap();
        let map = Mapping::map(&f, 0, size as usize).unwrap();
        std::fs::remove_file(p).unwrap();
        Chunk { handle: pa >> 12, info: MemGetExtendedInfo { pa, size, ..Default::default() }, map: Some(map) }
    }

    fn bd_at(map: &Mapping, slot: u64) -> Bd {
        let w = |i: u64| map.load32(16 * slot + 4 * i, Ordering::Acquire).unwrap();
        let addr = u64::from(w(2)) | (u64::from(w(3)) << 32);
        Bd::new(nrt_core::dma::LenCtrl::from_bits(w(0)), w(1), addr)
    }

    /// The staging of step 9 lands in the mapped chunks: the buffer filled and
    /// the handle armed, five copy descriptors per ring at the chunks' physical
    /// addresses (four 1 KiB data BDs, then the 4-byte marker), at the queue
    /// cursors, which advance for the next inference.
    #[test]
    fn staging_lowers_the_copy_and_its_marker_into_the_mapped_rings() {
        let dev = NeuronDevice::open("/dev/null").unwrap();
        let ring = u64::from(STAGING_RING_DEPTH) * 16;
        let chunks =
            [chunk("tx", 0x10_0000, ring), chunk("rx", 0x20_0000, ring), chunk("buf", 0x30_0000, COPY_BUFFER_BYTES)];
        let mut mem = ChunkMemory { dev: &dev, chunks: &chunks };
        let src: Vec<u8> = (0..COPY_BYTES).map(|i| i as u8).collect();
        let (mut txq, mut rxq) =
            (SwDmaQueue::new(STAGING_RING_DEPTH).unwrap(), SwDmaQueue::new(STAGING_RING_DEPTH).unwrap());
        let mut events = Vec::new();
        let (n, rings, depth) =
            lower_staging(&mut mem, Arch::Sunda, 0x30_0000, &src, (&mut txq, &mut rxq), &mut events).unwrap();
        assert_eq!((n, rings, depth), (5, (0x10_0000, 0x20_0000), STAGING_RING_DEPTH));
        let (tx, rx, buf) =
            (chunks[0].map.as_ref().unwrap(), chunks[1].map.as_ref().unwrap(), chunks[2].map.as_ref().unwrap());
        for i in 0..4u64 {
            assert_eq!(bd_at(tx, i).addr(), 0x30_0000 + 1024 * i, "tx {i}");
            assert_eq!(bd_at(rx, i).addr(), 0x30_1000 + 1024 * i, "rx {i}");
            assert_eq!(bd_at(tx, i).ctrl().len_bytes(), 1024);
        }
        assert_eq!(bd_at(tx, 4).addr(), 0x30_2100, "the marker reads the done word");
        assert_eq!(bd_at(rx, 4).addr(), 0x30_2000, "and writes the handle");
        assert!(bd_at(tx, 4).ctrl().last() && bd_at(tx, 3).ctrl().last() && !bd_at(tx, 2).ctrl().last());
        assert_eq!(bd_at(tx, 5), Bd::ZERO);
        assert_eq!(buf.load32(0, Ordering::Relaxed).unwrap(), u32::from_le_bytes([0, 1, 2, 3]));
        assert_eq!(buf.load32(0x1000, Ordering::Relaxed).unwrap(), 0);
        assert_eq!(buf.load32(0x2000, Ordering::Relaxed).unwrap(), nrt_core::dma::COMPLETION_SENTINEL);
        assert_eq!(buf.load32(0x2100, Ordering::Relaxed).unwrap(), DONE_WORD);
        assert_eq!((txq.next_desc_idx(), rxq.next_desc_idx()), (5, 5));
        // A second inference goes to the next slots.
        lower_staging(&mut mem, Arch::Sunda, 0x30_0000, &src, (&mut txq, &mut rxq), &mut events).unwrap();
        assert_eq!(bd_at(tx, 9).addr(), 0x30_2100);
        assert_eq!(txq.next_desc_idx(), 10);
        // Memory outside every chunk is refused, naming it.
        let e = hal::DeviceMemory::copy_in(&mut mem, 0x40_0000, &[0; 4]).unwrap_err();
        assert!(e.to_string().contains("0x400000+4 is in no mapped chunk"), "{e}");
    }

    /// A driver in this process (`sys::fake`): host-memory chunks in a temp
    /// file standing for the device node, rings, BAR registers, the staging
    /// copy executed on copy start, START/END of every engine on the kickoff.
    mod fake_driver {
        use std::cell::RefCell;
        use std::collections::HashMap;
        use std::rc::Rc;

        use nrt_core::dma::LenCtrl;
        use nrt_core::nq::ring::NqProducer;
        use nrt_core::nq::{RawEntry, Subtype};

        use super::*;
        use crate::ioctl::{self as io_, request_name};
        use crate::sys::fake::{self, Driver};

        pub const BAR0: u64 = 0x40_0000_0000;
        const FILE_LEN: u64 = 1 << 20;

        fn g32(a: &[u8], o: usize) -> u32 {
            u32::from_le_bytes(a[o..o + 4].try_into().unwrap())
        }
        fn g64(a: &[u8], o: usize) -> u64 {
            u64::from_le_bytes(a[o..o + 8].try_into().unwrap())
        }
        fn p32(a: &mut [u8], o: usize, v: u32) {
            a[o..o + 4].copy_from_slice(&v.to_le_bytes());
        }
        fn p64(a: &mut [u8], o: usize, v: u64) {
            a[o..o + 8].copy_from_slice(&v.to_le_bytes());
        }

        #[derive(Default)]
        pub struct State {
            pub map: Option<Mapping>,
            /// Every call, by name (with the handle or core of frees and exits).
            pub calls: Vec<String>,
            next: u64,
            chunks: HashMap<u64, (u64, u64)>,
            queues: HashMap<(u32, u32), (u64, u64, u32, u32)>,
            rings: HashMap<(u32, u32), (u64, NqProducer)>,
            pub heads: Vec<(u64, u32)>,
            pub compat: (u32, u32),
            pub model_cores: u32,
            /// Fail the n-th call (1-based) of this request with this errno.
            pub fail: Option<(u32, usize, i32)>,
            pub realloc_forced: usize,
            pub bugs: Vec<String>,
        }

        impl State {
            fn alloc(&mut self, size: u64) -> u64 {
                let off = self.next.max(4096);
                self.next = (off + size).next_multiple_of(4096);
                off
            }
            fn w32(&self, off: u64, v: u32) {
                self.map.as_ref().unwrap().store32(off, v, Ordering::Release).unwrap();
            }
            fn r32(&self, off: u64) -> u32 {
                self.map.as_ref().unwrap().load32(off, Ordering::Acquire).unwrap()
            }
            fn r64(&self, off: u64) -> u64 {
                u64::from(self.r32(off)) | (u64::from(self.r32(off + 4)) << 32)
            }
            fn play_core(&mut self, nc: u32) {
                for (eng, nq) in INFER_STATUS_NQS.iter().enumerate() {
                    for (k, sub) in [Subtype::START, Subtype::END].into_iter().enumerate() {
                        let Some((off, p)) = self.rings.get_mut(&(nc, u32::from(*nq))) else {
                            self.bugs.push(format!("no ring for core {nc} nq {nq}"));
                            return;
                        };
                        let mut e = RawEntry::new(sub, *nq, 0, 0, 1_000 + 10 * eng as u64 + k as u64).to_array();
                        let at = *off + u64::from(p.push(&mut e).expect("room"));
                        let m = self.map.as_ref().unwrap();
                        m.store64(at + 8, u64::from_le_bytes(e[8..].try_into().unwrap()), Ordering::Relaxed).unwrap();
                        m.store64(at, u64::from_le_bytes(e[..8].try_into().unwrap()), Ordering::Release).unwrap();
                    }
                }
            }
            fn copy_start(&mut self, eng: u32, q: u32, tx: u32, rx: u32) -> Result<i32, i32> {
                if rx == 0 {
                    self.bugs.push("kernel BUG: copy start with rx 0".into());
                    return Err(libc::EINVAL);
                }
                let Some(&(txr, rxr, depth, cursor)) = self.queues.get(&(eng, q)) else {
                    return Err(libc::EINVAL);
                };
                for i in 0..tx.min(rx) {
                    let slot = u64::from((cursor + i) % depth) * 16;
                    let len = LenCtrl::from_bits(self.r32(txr + slot)).len_bytes();
                    let (src, dst) = (self.r64(txr + slot + 8), self.r64(rxr + slot + 8));
                    for w in 0..u64::from(len / 4) {
                        self.w32(dst + 4 * w, self.r32(src + 4 * w));
                    }
                }
                self.queues.insert((eng, q), (txr, rxr, depth, cursor + tx));
                Ok(0)
            }
        }

        pub struct Fake(pub Rc<RefCell<State>>);

        impl Driver for Fake {
            fn ioctl(&mut self, code: u32, a: &mut [u8]) -> Result<i32, i32> {
                let mut s = self.0.borrow_mut();
                let name = request_name(code).unwrap_or("?");
                let n = s.calls.iter().filter(|c| c.split(' ').next() == Some(name)).count() + 1;
                let detail = match code {
                    c if c == io_::MEM_FREE.code() => format!(" {}", g64(a, 0)),
                    c if c == io_::CRWL_READER_EXIT.code() || c == io_::CRWL_READER_ENTER.code() => {
                        format!(" {}", g32(a, 0))
                    }
                    _ => String::new(),
                };
                s.calls.push(format!("{name}{detail}"));
                if let Some((c, nth, errno)) = s.fail {
                    if c == code && nth == n {
                        return Err(errno);
                    }
                }
                match code {
                    c if c == io_::DRIVER_INFO_GET.code() => p32(a, 0, 2),
                    c if c == io_::COMPATIBLE_VERSION.code() => {
                        let (max, min) = s.compat;
                        p32(a, 0, max);
                        p32(a, 4, min);
                    }
                    c if c == io_::DEVICE_INFO.code() => {
                        p32(a, 0, 2);
                        p64(a, 48, BAR0);
                        p64(a, 64, 0x1_0000_0000);
                    }
                    c if c == io_::NC_RESET.code() => p32(a, 4, 7),
                    c if c == io_::NC_RESET_READY.code() => p32(a, 4, 0),
                    c if c == io_::MEM_GET_EXTENDED_INFO.code() => {
                        let (off, size) = *s.chunks.get(&g64(a, 0)).ok_or(libc::EINVAL)?;
                        p32(a, 12, 1);
                        p64(a, 16, off);
                        p64(a, 24, off);
                        p64(a, 40, size);
                    }
                    c if c == io_::MEM_FREE.code() => {
                        s.chunks.remove(&g64(a, 0)).ok_or(libc::EINVAL)?;
                    }
                    c if c == io_::DMA_QUEUE_INIT.code() => {
                        let (tx, rx) = (s.chunks.get(&g64(a, 16)).copied(), s.chunks.get(&g64(a, 24)).copied());
                        let ((txo, _), (rxo, _)) = (tx.ok_or(libc::EINVAL)?, rx.ok_or(libc::EINVAL)?);
                        s.queues.insert((g32(a, 0), g32(a, 4)), (txo, rxo, g32(a, 8), 0));
                    }
                    c if c == io_::DMA_QUEUE_RELEASE.code() => {
                        s.queues.remove(&(g32(a, 0), g32(a, 4)));
                    }
                    c if c == io_::DMA_QUEUE_COPY_START.code() => {
                        return s.copy_start(g32(a, 0), g32(a, 4), g32(a, 8), g32(a, 12));
                    }
                    c if c == io_::NOTIFICATIONS_INIT_V2.code()
                        || c == io_::NOTIFICATIONS_INIT_WITH_REALLOC_V2.code() =>
                    {
                        let realloc = c == io_::NOTIFICATIONS_INIT_WITH_REALLOC_V2.code();
                        let (key, size) = ((g32(a, 0), g32(a, 12)), g32(a, 16));
                        if realloc && g32(a, 32) == 1 {
                            s.realloc_forced += 1;
                        }
                        // Without force_alloc_mem the driver keeps the old chunk.
                        let force = realloc && g32(a, 32) == 1;
                        let old = s.rings.get(&key).map(|(off, p)| (*off, p.size_bytes()));
                        let off = match old {
                            Some((off, old_size)) if !force => {
                                if old_size != size {
                                    s.bugs
                                        .push(format!("ring {key:?} re-initialised to {size} bytes in its old chunk"));
                                }
                                off
                            }
                            _ => s.alloc(u64::from(size)),
                        };
                        s.rings.insert(key, (off, NqProducer::new(size).map_err(|_| libc::EINVAL)?));
                        p64(a, if realloc { 40 } else { 32 }, off);
                    }
                    c if c == io_::SEMAPHORE_INCREMENT.code() => s.play_core(g32(a, 0)),
                    _ => {}
                }
                Ok(0)
            }

            fn bar_rw(&mut self, code: u32, _bar: u32, addresses: &[u64], data: &mut [u32]) -> Result<i32, i32> {
                let mut s = self.0.borrow_mut();
                let read = code == io_::BAR_READ.code();
                s.calls.push(request_name(code).unwrap_or("?").to_string());
                for (a, d) in addresses.iter().zip(data.iter_mut()) {
                    let off = a.checked_sub(BAR0).ok_or(libc::EINVAL)?;
                    let window = simabi::status_window(Arch::Sunda);
                    if read {
                        *d = if off == window + simabi::STATUS_MODEL_CORES {
                            s.model_cores
                        } else if (window..window + 8).contains(&off) {
                            1 // BarrierDone of cores 0 and 1
                        } else {
                            0
                        };
                    } else {
                        s.heads.push((off, *d));
                        let ring = s.rings.iter_mut().find(|((c, slot), _)| {
                            nrt_core::arch::nq_head_register(Arch::Sunda, *c as u8, *slot as u8) == Some(off)
                        });
                        if let Some((_, (_, p))) = ring {
                            p.on_head_write(*d);
                        }
                    }
                }
                Ok(0)
            }

            fn mem_alloc(&mut self, arg: &MemAllocV2Mt) -> Result<u64, i32> {
                let mut s = self.0.borrow_mut();
                s.calls.push("NEURON_IOCTL_MEM_ALLOC_V2MT".into());
                let off = s.alloc(arg.size);
                let handle = (1..).find(|h| !s.chunks.contains_key(h)).unwrap_or(u64::MAX);
                s.chunks.insert(handle, (off, arg.size));
                Ok(handle)
            }
        }

        /// A device node (a temp file) served by a fresh fake on this thread.
        pub fn install(name: &str) -> (std::path::PathBuf, Rc<RefCell<State>>) {
            let p = std::env::temp_dir().join(format!("nrt-fake-neuron-{}-{name}", std::process::id()));
            let f = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&p).unwrap();
            f.set_len(FILE_LEN).unwrap();
            let state = Rc::new(RefCell::new(State {
                map: Some(Mapping::map(&f, 0, FILE_LEN as usize).unwrap()),
                compat: (7, 5),
                ..State::default()
            }));
            fake::install(p.clone(), Box::new(Fake(Rc::clone(&state))));
            (p, state)
        }

        pub fn uninstall(p: &std::path::Path) {
            fake::uninstall();
            let _ = std::fs::remove_file(p);
        }
    }

    fn cfg(cores: Option<u8>) -> SessionConfig {
        SessionConfig { cores, ring_entries: Some(64), timeout_s: 2, ..SessionConfig::default() }
    }

    fn bring_up_calls(calls: &[String]) -> Vec<&str> {
        calls.iter().map(String::as_str).filter(|c| !c.starts_with("NEURON_IOCTL_BAR_")).collect()
    }

    /// Steps 1-10 against a driver: the requests in the contract's order, the
    /// staged copy executed, an inference harvested to NRT_SUCCESS with HEAD at
    /// the engine_index slots, everything released in reverse.
    #[test]
    fn the_bring_up_runs_the_contracts_sequence_and_an_inference() {
        let (p, st) = fake_driver::install("seq");
        let mut s = Session::open(&p, cfg(Some(2))).unwrap();
        assert_eq!((s.arch(), s.cores(), s.ring_entries()), (Arch::Sunda, 2, 64));
        let r = s.run_inference().unwrap();
        assert_eq!((r.status, r.step), (NrtStatus::Success, Step::Done), "{:?}", r.events);
        assert!(r.staging.copy_verified, "the copy ran through the mapped rings");
        assert!(r.staging.handle_polls.is_some(), "the marker arrived");
        assert_eq!(r.staging.descriptors, 5);
        assert_eq!(s.last_status(), Some(NrtStatus::Success));
        s.close().unwrap();
        fake_driver::uninstall(&p);
        let st = st.borrow();
        assert!(st.bugs.is_empty(), "{:?}", st.bugs);
        let mut want: Vec<String> = [
            "NEURON_IOCTL_DRIVER_INFO_GET",
            "NEURON_IOCTL_COMPATIBLE_VERSION",
            "NEURON_IOCTL_DEVICE_INFO",
            "NEURON_IOCTL_CRWL_READER_ENTER 0",
            "NEURON_IOCTL_CRWL_READER_ENTER 1",
            "NEURON_IOCTL_NC_RESET",
            "NEURON_IOCTL_NC_RESET_READY",
        ]
        .map(String::from)
        .to_vec();
        for _ in 0..3 {
            want.push("NEURON_IOCTL_MEM_ALLOC_V2MT".into());
            want.push("NEURON_IOCTL_MEM_GET_EXTENDED_INFO".into());
        }
        want.push("NEURON_IOCTL_DMA_QUEUE_INIT".into());
        want.extend((0..12).map(|_| "NEURON_IOCTL_NOTIFICATIONS_INIT_V2".to_string()));
        want.push("NEURON_IOCTL_DMA_QUEUE_COPY_START".into());
        want.extend((0..2).map(|_| "NEURON_IOCTL_SEMAPHORE_INCREMENT".to_string()));
        want.push("NEURON_IOCTL_DMA_QUEUE_RELEASE".into());
        want.extend(["3", "2", "1"].map(|h| format!("NEURON_IOCTL_MEM_FREE {h}")));
        want.extend(["1", "0"].map(|c| format!("NEURON_IOCTL_CRWL_READER_EXIT {c}")));
        assert_eq!(bring_up_calls(&st.calls), want.iter().map(String::as_str).collect::<Vec<_>>());
        // The host trigger, then HEAD of every INFER_STATUS ring at slot = engine_index.
        let trigger = simabi::xt_local_reg(Arch::Sunda) + nrt_core::dma::HOST_TRIGGER_OFFSET;
        assert_eq!(st.heads.first(), Some(&(trigger, 1)));
        for core in 0..2u8 {
            for nq in INFER_STATUS_NQS {
                let reg = nrt_core::arch::nq_head_register(Arch::Sunda, core, nq).unwrap();
                assert_eq!(
                    st.heads.iter().rev().find(|(o, _)| *o == reg).map(|h| h.1),
                    Some(32),
                    "core {core} nq {nq}"
                );
            }
        }
    }

    /// Teardown after an error: a failed ring creation releases the queue, the
    /// chunks and the cores, in reverse order, and names the failed call.
    #[test]
    fn a_failed_step_releases_what_was_acquired_in_reverse() {
        let (p, st) = fake_driver::install("fail");
        st.borrow_mut().fail = Some((ioctl::NOTIFICATIONS_INIT_V2.code(), 8, libc::ENOMEM));
        let e = Session::open(&p, cfg(Some(2))).unwrap_err();
        fake_driver::uninstall(&p);
        assert_eq!((e.call, e.errno()), ("NEURON_IOCTL_NOTIFICATIONS_INIT_V2", Some(libc::ENOMEM)), "{e}");
        assert!(e.to_string().contains(&p.display().to_string()), "{e}");
        let st = st.borrow();
        let calls = bring_up_calls(&st.calls);
        let at = calls.iter().rposition(|c| *c == "NEURON_IOCTL_NOTIFICATIONS_INIT_V2").unwrap();
        assert_eq!(
            &calls[at + 1..],
            [
                "NEURON_IOCTL_DMA_QUEUE_RELEASE",
                "NEURON_IOCTL_MEM_FREE 3",
                "NEURON_IOCTL_MEM_FREE 2",
                "NEURON_IOCTL_MEM_FREE 1",
                "NEURON_IOCTL_CRWL_READER_EXIT 1",
                "NEURON_IOCTL_CRWL_READER_EXIT 0",
            ]
        );
    }

    /// An incompatible driver is refused at COMPATIBLE_VERSION, both versions
    /// named, before any core is taken.
    #[test]
    fn an_incompatible_driver_is_refused_before_any_core_is_taken() {
        let (p, st) = fake_driver::install("compat");
        st.borrow_mut().compat = (11, 10);
        let e = Session::open(&p, cfg(Some(1))).unwrap_err();
        fake_driver::uninstall(&p);
        assert_eq!(e.call, "NEURON_IOCTL_COMPATIBLE_VERSION");
        assert!(e.to_string().contains("runtime versions 10 to 11") && e.to_string().contains("version 7"), "{e}");
        assert!(!st.borrow().calls.iter().any(|c| c.contains("CRWL")), "{:?}", st.borrow().calls);
    }

    /// The model's core count is taken when the caller gives none; a new ring
    /// size goes through WITH_REALLOC_V2 with force_alloc_mem 1 (point 8), and
    /// the next inference runs on the new rings.
    #[test]
    fn the_models_cores_and_a_ring_size_change() {
        let (p, st) = fake_driver::install("realloc");
        st.borrow_mut().model_cores = 1;
        let mut s = Session::open(&p, cfg(None)).unwrap();
        assert_eq!(s.cores(), 1);
        s.set_ring_entries(128).unwrap();
        assert_eq!(s.ring_entries(), 128);
        let r = s.run_inference().unwrap();
        drop(s);
        fake_driver::uninstall(&p);
        assert_eq!(r.status, NrtStatus::Success, "{:?}", r.events);
        let st = st.borrow();
        assert_eq!(st.realloc_forced, 6, "the six rings of one core");
        assert!(st.bugs.is_empty(), "{:?}", st.bugs);
        assert!(st.calls.iter().any(|c| c == "NEURON_IOCTL_CRWL_READER_EXIT 0"), "dropped: released");
    }

    /// The report is `nrt-sim run`'s: the status line in the text, the same
    /// JSON fields, the staging line with the copy verified.
    #[cfg(feature = "sim")]
    #[test]
    fn the_report_is_nrt_sim_runs() {
        let (p, _st) = fake_driver::install("report");
        let mut s = Session::open(&p, cfg(Some(2))).unwrap();
        let r = s.run_inference().unwrap();
        let report = run_report(&s, &r, nrt_abi::report::ReportConfig::default());
        drop(s);
        fake_driver::uninstall(&p);
        let text = nrt_abi::report::text_with_heading(&report, "nrtctl run");
        assert!(text.contains("\nstatus: 0 NRT_SUCCESS ("), "{text}");
        assert!(text.contains("staging: 5 descriptors each way lowered into 256-deep rings"), "{text}");
        assert!(text.contains("4096 B copy verified"), "{text}");
        assert!(text.contains("arch sunda, 2 cores"), "{text}");
        let json = nrt_abi::report::json(&report, None);
        assert_eq!(json["status"], 0);
        assert_eq!(json["status_name"], "NRT_SUCCESS");
        assert_eq!(json["return_code"], 0);
        assert_eq!(json["cores"].as_array().map(Vec::len), Some(2));
    }
}
