//! The bring-up path: own cores of a Neuron device through the driver's ioctls
//! and run inferences on them, for `nrtctl run` and the C ABI's `nrt_session_*`.
//!
//! [`Session::open`] runs steps 1-10 of the bring-up sequence in
//! `docs/driver-model.md` against `/dev/neuronN`, [`Session::run_inference`]
//! step 11, and dropping the session or [`Session::close`] step 12.
//!
//! Invariants: what is acquired is released in reverse order, also after an
//! error; every ioctl's return is checked, a positive one being an error that
//! names the call and the value; every error is a [`LinuxError`] naming the
//! call, the device and its [`Cause`].
//!
//! One job per file: `bringup` opens and tears down, `device` is the hal
//! device the harvest runs on, `staging` copies through core's submit
//! sequence, `work` holds memory, copies and executions, `lifecycle` runs
//! inferences and ring-size changes, `report` prints what `nrt-sim run` prints.

mod bringup;
mod device;
#[cfg(test)]
mod fake_driver;
mod lifecycle;
#[cfg(feature = "sim")]
mod report;
mod staging;
#[cfg(test)]
mod tests;
mod work;

use std::sync::atomic::{fence, Ordering};
use std::sync::Arc;

use nrt_abi::sim::{self as simabi, Line};
use nrt_core::arch::{Arch, ENGINES_PER_CORE, MAX_CORES};
use nrt_core::dma::build::{Transfer, OP_COPY};
use nrt_core::dma::doorbell::kickoff_infer;
use nrt_core::dma::pring::RingBacking;
use nrt_core::dma::{CompletionHandle, Direction, DmaEvent, PlatformType, SubmitError, SubmitStep, SwDmaQueue};
use nrt_core::event::Event;
use nrt_core::exec::{exec_wait_round_robin, ExecConfig, ExecRequest, Step, TensorCompletions, TensorWaker};
use nrt_core::hal::{self, Clock, ErrorType, Registers};
use nrt_core::nq::{Notifications, SyncPoint, ERROR_NQ, INFER_STATUS_NQS, NQ_PER_CORE};
use nrt_core::{NrtError, NrtStatus};

use crate::device::{IoctlBar, NeuronDevice};
use crate::doorbell::{IoctlDoorbell, UdmaEngine};
use crate::error::{Cause, IncompatibleDriver, LinuxError, ShapeError, Subject};
use crate::ioctl::{
    self, mem_type, nq_dev_type, nq_type, CompatibleVersion, DeviceInfo, DmaQueueInit, DriverInfo, MemAllocV2Mt,
    MemGetExtendedInfo, NotificationsInitV2,
};
use crate::rings::{map_ring, MappedRings, RingInit};
use crate::sys::Mapping;
use crate::time::{AnyDelay, DelayKind, MonotonicClock};
use nrt_abi::sim::SimHints;

use device::{tensor_table, Collect, Fence, Sema};
pub use device::{DriverBar, DriverDevice, Wakes, WAKE_LOG_CAP};
pub use lifecycle::Inference;
#[cfg(feature = "sim")]
pub use report::run_report;
use staging::Chunk;
pub use staging::Staging;
#[cfg(test)]
use staging::{submit_piece, ChunkMemory};

/// How this session holds a core's CRWL lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Crwl {
    /// `CRWL_WRITER_ENTER` made, not yet downgraded: switching the model in.
    Writer,
    /// `CRWL_WRITER_DOWNGRADE` made: the core's reader.
    Reader,
}

/// A uuid for the model this session switches in: non-zero, since a fresh
/// core's uuid is 0, and unique per session from the pid, clock and a counter.
fn session_uuid() -> [u8; 32] {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let mut u = [0u8; 32];
    u[..4].copy_from_slice(b"nrtL");
    u[4..8].copy_from_slice(&std::process::id().to_le_bytes());
    u[8..16].copy_from_slice(&nrt_abi::os::monotonic_ns().to_le_bytes());
    u[16..24].copy_from_slice(&NEXT.fetch_add(1, Ordering::Relaxed).to_le_bytes());
    u
}

/// The runtime version this binding speaks to a driver of `arch`, which
/// `COMPATIBLE_VERSION` must hold: the top of [`nrt_abi::rules::compatible_version`].
pub const fn runtime_version(arch: Arch) -> u32 {
    nrt_abi::rules::compatible_version(arch).max
}

/// The staging queue in the session's own engine, `nrt_abi::devmap::host_engine`.
pub const STAGING_QUEUE: u32 = 0;
/// Descriptors per staging ring: 256 of 16 bytes, one page, since the driver maps a chunk only whole.
pub const STAGING_RING_DEPTH: u32 = 256;
/// Bytes the self-test copy of an inference moves.
pub const COPY_BYTES: usize = 4096;
/// Bytes of the copy buffer: the completion handle every copy's marker lands
/// on, and its done word 0x100 past it.
pub const COPY_BUFFER_BYTES: u64 = 4096;
/// The done word the marker copies over the completion handle.
pub const DONE_WORD: u32 = 1;
/// Default cores of a session: one two-core logical core.
pub const DEFAULT_CORES: u8 = 2;
/// Default NQ ring entries.
pub const DEFAULT_RING_ENTRIES: u32 = 64;
/// The largest NQ ring entries accepted: 1 MiB rings.
pub const MAX_RING_ENTRIES: u32 = 1 << 16;
/// Bytes of one NQ entry.
const ENTRY_BYTES: u32 = 16;
/// VRing page of the staging build.
const PAGE_BDS: usize = 8;

/// What a session is asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionConfig {
    /// The device's core that is the session's logical core 0; its cores are
    /// `first_core..first_core + cores`. With [`host_wide`](Self::host_wide),
    /// a host-wide index instead.
    pub first_core: u8,
    /// `first_core` is a host-wide index `i`, core `i % nc_per_device` of
    /// device `i / nc_per_device`; a run on another device or over two is
    /// refused at open.
    pub host_wide: bool,
    /// Physical cores, 1 or 2; `None`: the simulator's hint, else
    /// [`fallback_cores`](Self::fallback_cores).
    pub cores: Option<u8>,
    /// NQ ring entries, a power of two up to [`MAX_RING_ENTRIES`]; `None`: the
    /// hint, else [`fallback_ring_entries`](Self::fallback_ring_entries).
    pub ring_entries: Option<u32>,
    /// The cores when neither the caller nor the model says.
    pub fallback_cores: u8,
    /// The ring entries when neither says.
    pub fallback_ring_entries: u32,
    /// The model's timeout, seconds.
    pub timeout_s: u32,
    /// The poll delay of the harvest.
    pub delay: DelayKind,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            first_core: 0,
            host_wide: false,
            cores: None,
            ring_entries: None,
            fallback_cores: DEFAULT_CORES,
            fallback_ring_entries: DEFAULT_RING_ENTRIES,
            timeout_s: 5,
            delay: DelayKind::Adaptive,
        }
    }
}

impl SessionConfig {
    /// The default configuration with the runtime's variables, as
    /// `nrt_session_open(device, 0, 0, NRT_TIMEOUT_FROM_ENV)` reads them: the
    /// cores from `NEURON_RT_VISIBLE_CORES`, else `NEURON_RT_NUM_CORES`, the
    /// timeout from `NEURON_RT_EXEC_TIMEOUT`, the standard-error logger from
    /// `NEURON_RT_LOG_LEVEL`. A bad value is refused, naming the variable.
    pub fn from_env() -> Result<SessionConfig, crate::config::EnvError> {
        let env = crate::config::RtEnv::from_process(crate::config::Uses::ALL)?;
        crate::config::init_stderr_log("nrt", &env.log);
        SessionConfig::from_rt_env(&env)
    }

    /// The default configuration with `env`'s cores and timeout.
    pub fn from_rt_env(env: &crate::config::RtEnv) -> Result<SessionConfig, crate::config::EnvError> {
        let cores = crate::config::resolve_cores(None, "cores", env)?;
        // The documented default is the same on every generation, as a test
        // pins, so it needs no arch before the device opens.
        let default = crate::config::default_exec_timeout_s(Arch::Sunda);
        Ok(SessionConfig {
            first_core: cores.first,
            host_wide: cores.host_wide(),
            cores: cores.count,
            timeout_s: env.exec_timeout_s.unwrap_or(default),
            ..SessionConfig::default()
        })
    }
}

/// Check the cores of a session on `arch`: 1 to the harvest state's cores,
/// within the device; else [`ShapeError::Cores`].
pub fn validate_cores(arch: Arch, cores: u8) -> Result<(), ShapeError> {
    let max = (MAX_CORES as u8).min(arch.nc_per_device());
    if !(1..=max).contains(&cores) {
        return Err(ShapeError::Cores { max, got: cores });
    }
    Ok(())
}

/// Check that the run of `cores` cores from the device's core `first` is on
/// the device; else [`ShapeError::OffDevice`]. The driver's range mark would
/// take indices past it as the next device's cores: neuron_cdev.c
/// `ncdev_crwl_nc_range_mark` adds `nc_per_device * device_index` and checks
/// no upper bound.
pub fn validate_placement(arch: Arch, first: u8, cores: u8) -> Result<(), ShapeError> {
    let end = u32::from(first) + u32::from(cores);
    if end > u32::from(arch.nc_per_device()) {
        return Err(ShapeError::OffDevice { arch, first, cores });
    }
    Ok(())
}

/// Check the cores and ring entries of a session on `arch`: the cores as
/// [`validate_cores`], then [`ShapeError::RingEntries`].
pub fn validate(arch: Arch, cores: u8, ring_entries: u32) -> Result<(), ShapeError> {
    validate_cores(arch, cores)?;
    if !ring_entries.is_power_of_two() || !(2..=MAX_RING_ENTRIES).contains(&ring_entries) {
        return Err(ShapeError::RingEntries { max: MAX_RING_ENTRIES, got: ring_entries });
    }
    Ok(())
}

/// The runtime version for `arch` if the driver's `COMPATIBLE_VERSION` range holds it.
pub fn check_compatible(arch: Arch, v: CompatibleVersion) -> Result<u32, IncompatibleDriver> {
    let ours = runtime_version(arch);
    if v.min <= ours && ours <= v.max {
        Ok(ours)
    } else {
        Err(IncompatibleDriver { arch, driver: v, ours })
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

/// A failed step of core's submit sequence or of the staging queue's set-up,
/// naming the device: [`Cause::Submit`].
fn staging_err(dev: &NeuronDevice, e: SubmitError) -> LinuxError {
    LinuxError::new("DMA staging", dev.path().display().to_string(), e)
}

/// `call` refused by the session before the driver saw it.
fn refused(dev: &NeuronDevice, call: &'static str, why: String) -> LinuxError {
    LinuxError::refused(call, dev.path().display().to_string(), why)
}

/// `call` refused for a typed reason, kept as the error's [`Cause`].
fn refused_as(dev: &NeuronDevice, call: &'static str, why: impl Into<Cause>) -> LinuxError {
    LinuxError::new(call, dev.path().display().to_string(), why)
}

/// Cores of a Neuron device owned through the driver, with their rings and
/// the staging queue, released on drop.
pub struct Session {
    dev: Arc<NeuronDevice>,
    arch: Arch,
    driver: DriverInfo,
    compat: CompatibleVersion,
    info: DeviceInfo,
    /// The device's core that is logical core 0: logical core `c` is the
    /// device's core `first + c` in every call, register, ring and counter.
    first: u8,
    cores: u8,
    ring_entries: u32,
    timeout_s: u32,
    delay: DelayKind,
    /// Keep each harvest's poll-pass and HEAD write-back times for a trace.
    observe: bool,
    /// The uuid this session switches its model in with.
    uuid: [u8; 32],
    /// The bitmap of cores claimed with `CRWL_NC_RANGE_MARK`.
    marked: u64,
    /// The cores whose CRWL lock this session holds, in order, and how.
    owned: Vec<(u32, Crwl)>,
    /// The simulator's hints; `None` on a real driver, and then no probe is read.
    hints: Option<SimHints>,
    /// Why the session can no longer run inferences; every later call fails with it.
    unusable: Option<String>,
    /// TX ring, RX ring, copy buffer, in order of allocation.
    chunks: Vec<Chunk>,
    /// The self-test copy's source and destination, made at the first inference.
    selftest: Option<(crate::mem::Mem, crate::mem::Mem)>,
    /// Queues initialised, in order.
    queues: Vec<(u32, u32)>,
    /// The DMA engine the session stages on, its first core's host engine.
    staging_engine: u32,
    /// The harvest's device, holding the NQ ring mappings, and ring state.
    device: Option<DriverDevice>,
    nq: Notifications,
    /// The staging queue's cursors.
    txq: Option<SwDmaQueue>,
    rxq: Option<SwDmaQueue>,
    /// Size each ring was initialised with, for a size change.
    ring_sizes: [[Option<u32>; NQ_PER_CORE]; MAX_CORES],
    last_status: Option<NrtStatus>,
    /// Why this process's datastore could not be acquired or mapped, if so.
    datastore_error: Option<LinuxError>,
    closed: bool,
    /// The process that opened it: a forked child's calls are refused, G-FORK.
    owner: crate::fork::Owner,
}

impl Session {
    /// The device's core that is the session's logical core `core`.
    pub(super) fn physical(&self, core: u8) -> u8 {
        self.first.saturating_add(core)
    }
}

impl core::fmt::Debug for Session {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Session")
            .field("device", &self.dev.path())
            .field("arch", &self.arch)
            .field("first_core", &self.first)
            .field("cores", &self.cores)
            .field("ring_entries", &self.ring_entries)
            .finish()
    }
}
