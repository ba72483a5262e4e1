//! The bring-up path: own cores of a Neuron device through the driver's ioctls
//! and run inferences on them (`nrtctl run`, the C ABI's `nrt_session_*`).
//!
//! [`Session::open`] does steps 1-10 of `docs/driver-model.md` against
//! `/dev/neuronN`, [`Session::run_inference`] step 11, and dropping the session
//! (or [`Session::close`]) step 12:
//!
//! 1. `open(O_RDWR | O_CLOEXEC)` (never duplicated: see [`NeuronDevice`]);
//! 2. `DRIVER_INFO_GET` (architecture), `COMPATIBLE_VERSION`: a driver whose
//!    range does not hold this binding's runtime version ([`runtime_version`])
//!    is refused, both named; `DEVICE_INFO`: BAR0's address and size (added to
//!    every BAR_READ/BAR_WRITE offset; nothing is assumed);
//! 3. the simulator-only hint query (`nrt_abi::sim::SIM_HINTS`): the core
//!    count, ring entries and clock origin of the simulated device, for what
//!    the caller does not configure; a real driver refuses it, and then no
//!    probe is read at all (absent, not read from BAR space);
//! 4. `CRWL_NC_RANGE_MARK` of the device's cores `first..first + cores`
//!    (`SessionConfig::first_core`: the session's logical cores `0..cores`
//!    are those, in every later call, register, ring and counter of the
//!    device; the harvest keeps the logical ones), through the process's one
//!    write-only descriptor of the node (opened `O_WRONLY | O_CLOEXEC` at its
//!    first mark, shared by its sessions, closed after the last one's unmark:
//!    its close frees the process's marks, a killed process's included,
//!    neuron_cdev.c `ncdev_misc_flush`): `EBUSY` when another process
//!    holds them, and the error names its pid and command
//!    (`DEVICE_GET_ALL_APPS_INFO`, `/proc/<pid>/comm`);
//! 5. `NC_RESET` of the cores claimed (only those: a reset destroys every NQ
//!    of its cores, of every process), `NC_RESET_READY` (result 0);
//! 6. `CRWL_WRITER_ENTER {nc, uuid}` of each core: this session's model is
//!    switched in under the writer lock (`EALREADY` leaves the lock set: the
//!    core is recorded as held and downgraded all the same);
//! 7. `MEM_ALLOC_V2MT` (host memory, `align` 0) of the staging queue's TX
//!    ring, RX ring and the copy buffer (the completion handle), `MEM_GET_EXTENDED_INFO` (the handle
//!    kept from the allocation: the info struct's is a kernel pointer), `mmap`
//!    at its offset;
//! 8. `DMA_QUEUE_INIT` of the staging queue (queue 0 of the session's own
//!    host engine, `nrt_abi::devmap::host_engine`);
//! 9. `NOTIFICATIONS_INIT_V2` of runtime rings 2 (ERROR) and 4..=8 (NOTIFY)
//!    of each core with `engine_index` = the runtime NQ index, `mmap`: HEAD is
//!    written at the slot the driver programmed, that `engine_index` (points 5
//!    and 6). [`Session::set_ring_entries`] re-initialises them with a new size
//!    (unmapped first) through `NOTIFICATIONS_INIT_WITH_REALLOC_V2`,
//!    `force_alloc_mem` 1 (point 8);
//! 10. `CRWL_WRITER_DOWNGRADE {nc, uuid}` of each core: the session is the
//!     core's reader;
//!
//!     Then the process's datastore (`ACQUIRE_NEURON_DS {pid 0}`, mapped
//!     whole, the header written: [`crate::datastore`]; once per process and
//!     device, [`crate::datastore::ProcessCounters`]); after each request
//!     FINALIZE's per-core counters are written there at `nrt_abi::nds`'s
//!     offsets (a failed acquire is a warning, [`Session::datastore_error`]:
//!     the counters stay in RAM); its mapping goes and `RELEASE_NEURON_DS`
//!     clears it first at teardown, when the session is its last holder
//!     ([`Session::counter_target`] hands it to pollers, XU units and C rings);
//! 11. the inference: the self-test execution (`work`): a 4 KiB copy between
//!     two host objects made at the first, and its completion marker, submitted
//!     through core's one sequence, `dma::submit` (built with `append_descs`,
//!     the write barrier, meta_ctrl bit 26, on the last data descriptor,
//!     lowered into the mapped rings, reserved at the `SwDmaQueue` cursors,
//!     rung S2M, then M2S)
//!     through [`IoctlDoorbell`]: one `DMA_QUEUE_COPY_START` with TX and RX
//!     (never `rx == 0`, never before step 8: points 1 and 2); the completion
//!     marker polled in the mapped buffer (a copy that failed ends the
//!     inference before its kickoff, G-STAGING-FAIL); the top-SP host trigger
//!     (`BAR_WRITE` where the hint query says; not written on a real driver,
//!     G-DRV-TRIGGER); the kickoff `SEMAPHORE_INCREMENT` per core; the harvest:
//!     core's `exec_wait_round_robin` over a device whose rings are the
//!     mappings and whose HEAD registers go through `BAR_WRITE` at
//!     `bar_address[0] + offset`, the INTC cause and the probes through the
//!     simulator only (G-DRV-REAL); repeated failures of the device file end it
//!     with a device-gone error (G-DRV-GONE);
//! 12. teardown, also after an error (RAII): `munmap` of every mapping,
//!     `MEM_FREE` of the self-test memory, `DMA_QUEUE_RELEASE`, `MEM_FREE`
//!     of the copy buffer (the ring chunks
//!     are left to `close`: the driver keeps the queue programmed on them
//!     until then), `CRWL_READER_EXIT` of each core (a writer not yet
//!     downgraded is downgraded first), `CRWL_NC_RANGE_UNMARK`, `close`, each
//!     in reverse order of acquisition.
//!
//! Every ioctl's return is checked: a positive one (NC_RESET's +1, the memory
//! calls' +8 / +22, BAR_READ's leftover count) is an error naming the call and
//! the value (`device::positive_return`).
//!
//! Every error is a [`LinuxError`] naming the call, the device and the errno (or,
//! for a call this binding refuses, why).
//!
//! The module is split by job: `bringup` (steps 1-10 and the teardown of step
//! 12), `device` (the hal implementation the harvest runs on: BAR0 through the
//! BAR ioctls, the mapped rings, the probes), `staging` (one copy through
//! core's submit sequence), `work` (memory, copies, executions),
//! `lifecycle` (inferences, a ring-size change, the accessors) and `report`
//! (the report `nrt-sim run` prints).

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

/// A uuid for the model this session switches in: non-zero (a fresh core's
/// uuid is 0), unique per session of this process (pid, clock, a counter).
fn session_uuid() -> [u8; 32] {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let mut u = [0u8; 32];
    u[..4].copy_from_slice(b"nrtL");
    u[4..8].copy_from_slice(&std::process::id().to_le_bytes());
    u[8..16].copy_from_slice(&nrt_abi::os::monotonic_ns().to_le_bytes());
    u[16..24].copy_from_slice(&NEXT.fetch_add(1, Ordering::Relaxed).to_le_bytes());
    u
}

/// The runtime version this binding speaks to a driver of `arch`
/// (`COMPATIBLE_VERSION` must hold it): the newest the public driver at
/// fca19f7 serves for the arch (the top of [`nrt_abi::rules::compatible_version`]:
/// v2 7, v3 and v4 11).
pub const fn runtime_version(arch: Arch) -> u32 {
    nrt_abi::rules::compatible_version(arch).max
}

/// The staging queue in its engine: the engine is the session's own, the first
/// of its first core's that reaches host memory (`nrt_abi::devmap::host_engine`).
pub const STAGING_QUEUE: u32 = 0;
/// Descriptors per staging ring: 256 of 16 bytes, one page (the driver maps a
/// chunk only whole).
pub const STAGING_RING_DEPTH: u32 = 256;
/// Bytes the self-test copy of an inference moves.
pub const COPY_BYTES: usize = 4096;
/// Bytes of the copy buffer: the completion handle every copy's marker lands
/// on, and its done word 0x100 past it.
pub const COPY_BUFFER_BYTES: u64 = 4096;
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

/// What a session is asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionConfig {
    /// The device's core the session's logical core 0 is (its cores are
    /// `first_core..first_core + cores`, claimed with one range mark); 0 by
    /// default. A run past the device's cores is refused at open. With
    /// [`host_wide`](Self::host_wide), a host-wide index instead.
    pub first_core: u8,
    /// `first_core` is a host-wide NeuronCore index (the lowest of
    /// `NEURON_RT_VISIBLE_CORES`, from the environment): index `i` is core
    /// `i % nc_per_device` of device `i / nc_per_device`. At open the session
    /// takes that device's own core, and refuses a device that is another
    /// (the `N` of `/dev/neuronN`), or a run over two devices;
    /// [`Session::open_chosen`] opens the run's device. False by default.
    pub host_wide: bool,
    /// Physical cores (1 or 2); `None`: what the simulator's hint query says
    /// (`nrt_abi::sim::SIM_HINTS`; a real driver refuses it), else
    /// [`fallback_cores`](Self::fallback_cores).
    pub cores: Option<u8>,
    /// NQ ring entries (a power of two, 2..=65536); `None`: what the hint
    /// query says, else [`fallback_ring_entries`](Self::fallback_ring_entries).
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
    /// `nrt_session_open(device, 0, 0, NRT_TIMEOUT_FROM_ENV)` reads them:
    /// the cores from `NEURON_RT_VISIBLE_CORES` (one run of consecutive cores,
    /// host-wide indices of one device's cores: `1`, `2-3`), else
    /// `NEURON_RT_NUM_CORES` (unset or 0: the session's default), the timeout from
    /// `NEURON_RT_EXEC_TIMEOUT`, else the documented default, and
    /// `NEURON_RT_LOG_LEVEL[_<component>]` for the standard-error logger
    /// (lines prefixed `nrt:`, installed unless the program installed a `log`
    /// logger first). A bad value is refused, naming the variable, the value
    /// and what is accepted. Set a field afterwards to beat its variable;
    /// [`SessionConfig::default`] reads nothing.
    pub fn from_env() -> Result<SessionConfig, crate::config::EnvError> {
        let env = crate::config::RtEnv::from_process(crate::config::Uses::ALL)?;
        crate::config::init_stderr_log("nrt", &env.log);
        SessionConfig::from_rt_env(&env)
    }

    /// The default configuration with `env`'s cores and timeout.
    pub fn from_rt_env(env: &crate::config::RtEnv) -> Result<SessionConfig, crate::config::EnvError> {
        let cores = crate::config::resolve_cores(None, "cores", env)?;
        // The documented default is the same on every generation this binding
        // knows (a test pins it), so it needs no arch before the device opens.
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
/// the device: `arch` has `nc_per_device` cores, `0..nc_per_device` (the
/// driver's range mark would take indices past them as the next device's
/// cores: neuron_cdev.c `ncdev_crwl_nc_range_mark` adds
/// `nc_per_device * device_index` and checks no upper bound of the device);
/// else [`ShapeError::OffDevice`].
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

/// Whether the driver's `COMPATIBLE_VERSION` range holds this binding's
/// runtime version for `arch` (the version, if so); the refusal names both.
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
    /// The device's core that is the session's logical core 0: logical core
    /// `c` is the device's core `first + c` in every call to the driver and
    /// every register, ring and counter of the device (`Session::physical`).
    first: u8,
    cores: u8,
    ring_entries: u32,
    timeout_s: u32,
    delay: DelayKind,
    /// Keep each harvest's poll-pass and HEAD write-back times (for a trace).
    observe: bool,
    /// The uuid this session switches its model in with (`CRWL_WRITER_ENTER`).
    uuid: [u8; 32],
    /// The cores claimed with `CRWL_NC_RANGE_MARK` (a bitmap; 0: none yet).
    marked: u64,
    /// The cores whose CRWL lock this session holds, in order, and how.
    owned: Vec<(u32, Crwl)>,
    /// The simulator's hints (`nrt_abi::sim::SIM_HINTS`); `None` on a real
    /// driver, which refuses the query: then no probe is read.
    hints: Option<SimHints>,
    /// Why the session can no longer run inferences (a ring resize that failed
    /// half-way); every later call fails with it.
    unusable: Option<String>,
    /// TX ring, RX ring, copy buffer, in order of allocation.
    chunks: Vec<Chunk>,
    /// The self-test copy's source and destination (host memory), made at
    /// the first inference.
    selftest: Option<(crate::mem::Mem, crate::mem::Mem)>,
    /// Queues initialised, in order.
    queues: Vec<(u32, u32)>,
    /// The DMA engine the session stages on (its first core's host engine).
    staging_engine: u32,
    /// The harvest's device (it holds the NQ ring mappings) and ring state.
    device: Option<DriverDevice>,
    nq: Notifications,
    /// The staging queue's cursors.
    txq: Option<SwDmaQueue>,
    rxq: Option<SwDmaQueue>,
    /// Size each ring was initialised with, for a size change (point 8).
    ring_sizes: [[Option<u32>; NQ_PER_CORE]; MAX_CORES],
    last_status: Option<NrtStatus>,
    /// Why this process's datastore could not be acquired or mapped, if so.
    datastore_error: Option<LinuxError>,
    closed: bool,
    /// The process that opened it: a forked child's calls are refused (G-FORK).
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
