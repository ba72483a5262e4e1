//! The driver's state and rules: what `/dev/neuronN` answers to each ioctl.
//!
//! [`Model::handle`] is a pure state machine over the device file (the
//! shared-memory device of [`crate::shm`]) and the calling process's memory
//! ([`TargetMem`]): the supervisor copies the argument struct in, the model
//! checks it as the driver does, changes its state and the device's words, and
//! the supervisor copies the struct back. Nothing here trusts the caller: every
//! index is bounds-checked, every pointer is read through [`TargetMem`], every
//! count is capped before anything is allocated.
//!
//! Each rule names the public driver's file it comes from
//! (aws-neuron/aws-neuron-driver at fca19f7; facts only, no code). Three kinds
//! of outcome:
//!
//! - the driver's **errno** ([`Refusal::Errno`], logged in [`Model::log`]);
//! - a **kernel BUG**: a condition where the driver would hit `BUG_ON` or
//!   dereference what it never checked, and oops ([`Violation::KernelBug`],
//!   `kernel BUG: <rule> (<file>)`); the call is refused with
//!   [`Refusal::KernelBug`], and the supervisor fails the run in `--strict`
//!   mode;
//! - a **warning**: something the driver accepts but the device would not
//!   ([`Violation::Warning`]: a BD whose ring id is not the lap's, a ring
//!   longer than its memory chunk, a copy whose buffer is outside every chunk:
//!   the device's DMA error...), logged, never fatal.
//!
//! A copy start is also executed, as the device's UDMA would (G-DRV-COPY): the
//! released descriptors' bytes move between chunks of the device file, each
//! descriptor and buffer checked before a byte moves.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use nrt_abi::ioctl::{self as abi, nq_dev_type, nq_type};
use nrt_abi::sim::{self as simabi, Line};
use nrt_core::arch::Arch;
use nrt_core::dma::bd::LenCtrl;
use zerocopy::{FromBytes, IntoBytes};

use crate::layout::{self, NQ_PER_CORE};
use crate::shm::{ShmFile, PAGE};

/// An errno value (positive, as `errno` holds it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Errno(pub i32);

impl Errno {
    /// `EPERM`: what the driver's bare `return -1` becomes.
    pub const EPERM: Errno = Errno(libc::EPERM);
    /// `ENOENT`.
    pub const ENOENT: Errno = Errno(libc::ENOENT);
    /// `EFAULT`: an argument the caller's memory does not hold.
    pub const EFAULT: Errno = Errno(libc::EFAULT);
    /// `EINVAL`.
    pub const EINVAL: Errno = Errno(libc::EINVAL);
    /// `ENOMEM`.
    pub const ENOMEM: Errno = Errno(libc::ENOMEM);
    /// `EACCES`.
    pub const EACCES: Errno = Errno(libc::EACCES);
    /// `E2BIG`.
    pub const E2BIG: Errno = Errno(libc::E2BIG);
    /// `ENOSYS`.
    pub const ENOSYS: Errno = Errno(libc::ENOSYS);
    /// `ENODEV`: what the simulator answers for hardware it does not simulate.
    pub const ENODEV: Errno = Errno(libc::ENODEV);
    /// `EIO`: the answer to a call that oopsed the (simulated) kernel.
    pub const EIO: Errno = Errno(libc::EIO);

    /// The errno's name.
    pub fn name(self) -> &'static str {
        match self.0 {
            libc::EPERM => "EPERM",
            libc::ENOENT => "ENOENT",
            libc::EFAULT => "EFAULT",
            libc::EINVAL => "EINVAL",
            libc::ENOMEM => "ENOMEM",
            libc::EACCES => "EACCES",
            libc::E2BIG => "E2BIG",
            libc::ENOSYS => "ENOSYS",
            libc::ENODEV => "ENODEV",
            libc::EIO => "EIO",
            libc::ENOTTY => "ENOTTY",
            _ => "errno",
        }
    }
}

impl core::fmt::Display for Errno {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{} ({})", self.name(), self.0)
    }
}

/// Something the driver would not survive, or the device would not do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Violation {
    /// The real driver would `BUG_ON` (or dereference an unchecked pointer) here.
    KernelBug {
        /// The rule, in one line.
        rule: String,
        /// The driver file it comes from.
        driver_file: &'static str,
    },
    /// Accepted by the driver, but not what the device expects (never fatal).
    Warning {
        /// What happened.
        rule: String,
        /// Where the rule comes from (a driver file, or `sim`).
        source: &'static str,
    },
}

impl Violation {
    /// Whether this is a kernel BUG.
    pub fn is_kernel_bug(&self) -> bool {
        matches!(self, Violation::KernelBug { .. })
    }
}

impl core::fmt::Display for Violation {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Violation::KernelBug { rule, driver_file } => write!(f, "kernel BUG: {rule} ({driver_file})"),
            Violation::Warning { rule, source } => write!(f, "warning: {rule} ({source})"),
        }
    }
}

/// Why a call was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The driver returns this errno.
    Errno(Errno),
    /// The driver would oops (the violation is also in [`Model::violations`]).
    KernelBug(Violation),
}

/// A range of the caller's memory that could not be read or written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemFault;

/// The calling process's memory, for the pointers inside argument structs.
pub trait TargetMem {
    /// Read `buf.len()` bytes at `addr`; `Err` if any byte is not readable.
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), MemFault>;
    /// Write `buf` at `addr`; `Err` if any byte is not writable.
    fn write(&mut self, addr: u64, buf: &[u8]) -> Result<(), MemFault>;
}

/// Bytes of the argument struct the driver copies for request `code` (`None`:
/// not a request the model serves; the driver answers `EINVAL`).
pub fn arg_size(code: u32) -> Option<usize> {
    use core::mem::size_of;
    macro_rules! table {
        ($($q:ident => $t:ty),* $(,)?) => {
            $(if code == abi::$q.code() { return Some(size_of::<$t>()); })*
        };
    }
    table!(
        DEVICE_INFO => abi::DeviceInfo,
        BAR_READ => abi::BarRwWire,
        BAR_WRITE => abi::BarRwWire,
        MEM_FREE => abi::MemFree,
        MEM_GET_EXTENDED_INFO => abi::MemGetExtendedInfo,
        DMA_QUEUE_INIT => abi::DmaQueueInit,
        DMA_QUEUE_RELEASE => abi::DmaQueueRelease,
        DMA_QUEUE_COPY_START => abi::DmaQueueCopyStart,
        DMA_ACK_COMPLETED => abi::DmaAckCompleted,
        DMA_QUEUE_GET_STATE => abi::DmaQueueGetState,
        SEMAPHORE_INCREMENT => abi::SemaphoreArg,
        SEMAPHORE_DECREMENT => abi::SemaphoreArg,
        SEMAPHORE_READ => abi::SemaphoreArg,
        SEMAPHORE_WRITE => abi::SemaphoreArg,
        EVENT_SET => abi::SemaphoreArg,
        EVENT_GET => abi::SemaphoreArg,
        NOTIFICATIONS_INIT_V2 => abi::NotificationsInitV2,
        NOTIFICATIONS_INIT_WITH_REALLOC_V2 => abi::NotificationsInitWithReallocV2,
        NOTIFICATIONS_QUEUE_INFO => abi::NotificationsQueueInfo,
        CRWL_READER_ENTER => abi::Crwl,
        CRWL_READER_EXIT => abi::Crwl,
        COMPATIBLE_VERSION => abi::CompatibleVersion,
        DEVICE_BASIC_INFO => abi::DeviceBasicInfo,
        MEM_ALLOC_V2MT => abi::MemAllocV2Mt,
        NC_RESET => abi::NcReset,
        NC_RESET_READY => abi::NcResetReady,
        DRIVER_INFO_GET => abi::DriverInfo,
        RESOURCE_MMAP_INFO => abi::ResourceMmapInfo,
    );
    None
}

// ---- The driver's numbers (facts, each with its file) ----

/// DMA engines per device (`NUM_DMA_ENG_PER_DEVICE`, neuron_ring.h).
pub const DMA_ENGINES: u32 = 132;
/// Queues per DMA engine (`DMA_MAX_Q_V4`, udma/udma.h).
pub const DMA_QUEUES: u32 = 16;
/// Smallest ring, descriptors (`UDMA_MIN_Q_SIZE`, udma/udma.h).
pub const UDMA_MIN_Q_SIZE: u32 = 32;
/// Largest ring, descriptors (`UDMA_MAX_Q_SIZE`, udma/udma.h).
pub const UDMA_MAX_Q_SIZE: u32 = (1 << 24) - 16;
/// Ring start and end alignment, bytes (`UDMA_QUEUE_ADDR_BYTE_ALIGNMENT`, udma/udma.h).
pub const UDMA_ALIGN: u64 = 256;
/// Bytes of one descriptor (`union udma_desc`).
pub const DESC_BYTES: u64 = 16;
/// The first lap's ring id (`UDMA_INITIAL_RING_ID`, udma/udma.h).
pub const INITIAL_RING_ID: u32 = 1;
/// Semaphores per core (`V2_SEMAPHORE_COUNT` / `V3_SEMAPHORE_COUNT`, v2|v3/address_map.h).
pub const SEMAPHORE_COUNT: u32 = 256;
/// Events per core (`V2_EVENTS_COUNT`, v2/address_map.h).
pub const EVENT_COUNT: u32 = 256;
/// NQ ids per core: `MAX_NQ_TYPE * MAX_NQ_ENGINE` = 6 * 16 (neuron_core.h).
pub const MAX_NQ_SUPPORTED: u32 = 96;
/// NQ engines (slots) per type (`V2_MAX_NQ_QUEUES`, v2/address_map.h).
pub const NQ_QUEUES_PER_TYPE: u32 = 16;
/// Cores the allocator and CRWL accept (`MAX_NC_PER_DEVICE`, neuron_device.h).
pub const MAX_NC_PER_DEVICE: u32 = 8;
/// Registers one BAR_READ may read (`FW_IO_MAX_READLESS_READ_REGISTER_COUNT`, neuron_fw_io.h).
pub const BAR_READ_MAX: u32 = 100;
/// The largest `kmalloc` the BAR ioctls' address and data arrays may need
/// (`KMALLOC_MAX_SIZE` on x86-64 with 4 KiB pages: 4 MiB); larger is `ENOMEM`.
pub const KMALLOC_MAX: u64 = 4 << 20;
/// Every feature bit the driver reports (share/neuron_driver_shared.h, bits 0..=7).
pub const DRIVER_FEATURES: u64 = 0xFF;

/// Cores per device the driver knows for `arch` (`V2_NC_PER_DEVICE` 2,
/// `V3_NC_PER_DEVICE` 8; v2|v3/address_map.h).
pub const fn nc_per_device(arch: Arch) -> u32 {
    match arch {
        Arch::Sunda => 2,
        Arch::Cayman | Arch::Mariana => 8,
    }
}

/// DRAM channels (`V2_MAX_DRAM_CHANNELS` 2, `V3_MAX_DRAM_CHANNELS` 4).
pub const fn dram_channels(arch: Arch) -> u32 {
    match arch {
        Arch::Sunda => 2,
        Arch::Cayman | Arch::Mariana => 4,
    }
}

/// `{max, min}` runtime versions (`V2_RT_{MAX,MIN}_COMPATIBLE_VERSION` 7/5 in
/// v2/neuron_dhal_v2.c, `V3_...` 11/10 in v3/neuron_dhal_v3.c; mariana: v3's, G-DRV-ARCH4).
pub const fn compatible_version(arch: Arch) -> (u32, u32) {
    match arch {
        Arch::Sunda => (7, 5),
        Arch::Cayman | Arch::Mariana => (11, 10),
    }
}

/// Bytes one copy start may move (**sim**: the model's bound, the size of the
/// chunk region; the counts are already bounded by the ring sizes).
pub const COPY_BYTES_MAX: u64 = super::CHUNK_REGION_BYTES;

/// Descriptors per direction one copy start may release for the model to
/// execute (**sim**: the model's bound; more is a DMA error, nothing copied).
pub const COPY_DESCS_MAX: u32 = 1 << 16;

/// Physical address the model reports for host chunk at file offset `off`
/// (**sim**: a PCI host base over the file offset).
pub const SIM_HOST_PA_BASE: u64 = 0x8000_0000_0000;

/// The UDMA queue registers a BAR write may not touch, if `off` is one: the
/// ring base (low/high), the completion ring base (low/high) and the
/// tail-pointer increment of every queue, M2S and S2M, of every engine
/// (`ndma_bar0_blocked_one_engine`, neuron_dma.c; engines of v2 NC0/NC1, D2H and
/// H2D from v2/address_map.h; v3: the NC0 engines at nrt-sim's UDMA base, G-DRV-BLOCKED).
pub fn blocked_register(arch: Arch, off: u64) -> Option<&'static str> {
    let engines: Vec<u64> = match arch {
        Arch::Sunda => {
            let mut v: Vec<u64> = (0..16).map(|e| 0x3000_0000 + e * 0x4_0000).collect();
            v.extend((0..16).map(|e| 0x3070_0000 + e * 0x4_0000));
            v.push(0x3060_0000);
            v.push(0x30D0_0000);
            v
        }
        Arch::Cayman | Arch::Mariana => (0..16).map(|e| layout::udma_base(arch, e)).collect(),
    };
    const REGS: [(u64, &str); 5] = [
        (0x28, "ring base low (drbp_low)"),
        (0x2C, "ring base high (drbp_high)"),
        (0x38, "tail-pointer increment (drtp_inc)"),
        (0x44, "completion ring base low (crbp_low)"),
        (0x48, "completion ring base high (crbp_high)"),
    ];
    for base in engines {
        for dir in [0x1000u64, 0x2_1000] {
            let q0 = base + dir;
            if off < q0 || off >= q0 + u64::from(DMA_QUEUES) * 0x1000 {
                continue;
            }
            let within = (off - q0) % 0x1000;
            if let Some((_, name)) = REGS.iter().find(|(r, _)| *r == within) {
                return Some(name);
            }
        }
    }
    None
}

/// A memory chunk the model handed out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chunk {
    /// File offset (what `mmap` takes).
    pub offset: u64,
    /// Bytes (a whole number of pages for allocations).
    pub size: u64,
    /// Host memory (1) or device memory (0), as asked.
    pub host: bool,
    /// The process that allocated it.
    pub pid: u32,
    /// A notification ring's chunk (not freed by `MEM_FREE` bookkeeping of the allocator).
    pub ring: bool,
}

/// One direction of a DMA queue, as `DMA_QUEUE_INIT` left it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueSide {
    /// Ring size in descriptors (0: never initialised: the driver's zeroed queue).
    pub size: u32,
    /// The ring's chunk handle (`None`: initialised without a ring).
    pub chunk: Option<u64>,
    /// Next descriptor the device takes.
    pub next: u32,
    /// The ring id of the current lap.
    pub ring_id: u32,
}

/// A DMA queue: TX (M2S) and RX (S2M).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Queue {
    /// M2S.
    pub tx: QueueSide,
    /// S2M.
    pub rx: QueueSide,
    /// The process that initialised it.
    pub owner: u32,
}

/// One descriptor a copy start released, as the device fetched it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FetchedBd {
    /// Its index in the ring.
    index: u32,
    /// The ring id of the lap it was taken in.
    lap: u32,
    /// `len_ctrl[25:24]`.
    ring_id: u32,
    /// `len_ctrl[15:0]`, 0 decoded as 65536.
    len: u32,
    /// `buf_ptr` (+8): the TX source or the RX destination.
    addr: u64,
    /// Whether it could be fetched (else why not).
    fetch: Result<(), &'static str>,
}

impl Default for FetchedBd {
    fn default() -> FetchedBd {
        FetchedBd { index: 0, lap: 0, ring_id: 0, len: 0, addr: 0, fetch: Ok(()) }
    }
}

/// A notification ring the model set up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NqRing {
    /// Its chunk handle.
    pub handle: u64,
    /// The slot programmed (the `engine_index`, or 0 for TRACE_DMA).
    pub slot: u32,
}

/// One line of the model's log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogLine {
    /// The caller (thread group id).
    pub pid: u32,
    /// The request's name.
    pub request: &'static str,
    /// What happened.
    pub text: String,
}

/// The driver's state for one device.
#[derive(Debug)]
pub struct Model {
    file: Arc<ShmFile>,
    arch: Arch,
    /// Cores the device simulates (the layout's; the driver knows more).
    sim_cores: u8,
    chunk_base: u64,
    chunk_len: u64,
    next_handle: u64,
    chunks: BTreeMap<u64, Chunk>,
    queues: BTreeMap<(u32, u32), Queue>,
    nq: BTreeMap<(u32, u32), NqRing>,
    attached: BTreeSet<u32>,
    opens: u32,
    readers: BTreeMap<u32, BTreeSet<u32>>,
    resets: BTreeSet<u32>,
    /// Every refusal, warning and kernel BUG, in order.
    pub log: Vec<LogLine>,
    /// Every violation (kernel BUGs and warnings), in order.
    pub violations: Vec<Violation>,
    /// Requests served, by name.
    pub calls: BTreeMap<&'static str, u32>,
    /// Calls refused with an errno.
    pub refusals: u32,
    /// Bytes the executed copies moved (G-DRV-COPY).
    pub dma_bytes: u64,
    /// Copies refused by the device (DMA errors: an address outside the chunks, ...).
    pub dma_errors: u32,
}

type Answer = Result<i64, Refusal>;

fn parse<T: FromBytes + IntoBytes + zerocopy::Immutable + zerocopy::KnownLayout + Copy>(
    arg: &[u8],
) -> Result<T, Refusal> {
    T::read_from_prefix(arg).map(|(t, _)| t).map_err(|_| Refusal::Errno(Errno::EFAULT))
}

fn store<T: IntoBytes + zerocopy::Immutable>(arg: &mut [u8], v: &T) {
    let b = v.as_bytes();
    if let Some(dst) = arg.get_mut(..b.len()) {
        dst.copy_from_slice(b);
    }
}

const fn page_up(v: u64) -> u64 {
    v.div_ceil(PAGE).saturating_mul(PAGE)
}

impl Model {
    /// The driver for the device in `file`; `MEM_ALLOC_V2MT` chunks come from
    /// the file's extra region ([`ShmFile::extra_region`]).
    pub fn new(file: Arc<ShmFile>) -> Model {
        let l = *file.layout();
        let (chunk_base, chunk_len) = file.extra_region();
        Model {
            file,
            arch: l.arch,
            sim_cores: l.cores,
            chunk_base,
            chunk_len,
            next_handle: 1,
            chunks: BTreeMap::new(),
            queues: BTreeMap::new(),
            nq: BTreeMap::new(),
            attached: BTreeSet::new(),
            opens: 0,
            readers: BTreeMap::new(),
            resets: BTreeSet::new(),
            log: Vec::new(),
            violations: Vec::new(),
            calls: BTreeMap::new(),
            refusals: 0,
            dma_bytes: 0,
            dma_errors: 0,
        }
    }

    /// The device file.
    pub fn file(&self) -> &Arc<ShmFile> {
        &self.file
    }

    /// `open("/dev/neuronN")` by process `pid`: the process is attached
    /// (`npid_attach` in `ncdev_open`, neuron_cdev.c).
    pub fn open(&mut self, pid: u32) {
        self.opens = self.opens.saturating_add(1);
        self.attached.insert(pid);
    }

    /// Last `close` of process `pid`'s descriptors: detach it and drop what it
    /// owned (`ncdev_flush`/`ncdev_release`, neuron_cdev.c: its chunks freed,
    /// its queues reset, its core locks released).
    pub fn close(&mut self, pid: u32) {
        self.opens = self.opens.saturating_sub(1);
        self.attached.remove(&pid);
        self.chunks.retain(|_, c| c.pid != pid || c.ring);
        self.queues.retain(|_, q| q.owner != pid);
        for r in self.readers.values_mut() {
            r.remove(&pid);
        }
    }

    /// Opens not yet closed.
    pub fn opens(&self) -> u32 {
        self.opens
    }

    /// Whether `[offset, offset + len)` of the device file is something an
    /// ioctl handed out (a chunk, a ring; `ncdev_mmap` refuses anything else
    /// with `EINVAL`, neuron_mmap.c). The supervisor does not trap `mmap`
    /// (G-DRV-MMAP); this is for tests and tools.
    pub fn mmap_allowed(&self, offset: u64, len: u64) -> bool {
        let end = match offset.checked_add(len) {
            Some(e) => e,
            None => return false,
        };
        self.chunks.values().any(|c| offset >= c.offset && end <= c.offset.saturating_add(c.size))
    }

    /// The chunk of `handle`.
    pub fn chunk(&self, handle: u64) -> Option<&Chunk> {
        self.chunks.get(&handle)
    }

    /// The queue `(eng, qid)`, if initialised.
    pub fn queue(&self, eng: u32, qid: u32) -> Option<&Queue> {
        self.queues.get(&(eng, qid))
    }

    /// The kernel BUGs so far.
    pub fn kernel_bugs(&self) -> impl Iterator<Item = &Violation> {
        self.violations.iter().filter(|v| v.is_kernel_bug())
    }

    fn note(&mut self, pid: u32, request: &'static str, text: String) {
        self.log.push(LogLine { pid, request, text });
    }

    fn refuse(&mut self, pid: u32, request: &'static str, e: Errno, rule: &str, file: &'static str) -> Answer {
        self.refusals = self.refusals.saturating_add(1);
        self.note(pid, request, format!("{e}: {rule} ({file})"));
        Err(Refusal::Errno(e))
    }

    fn bug(&mut self, pid: u32, request: &'static str, rule: &str, driver_file: &'static str) -> Answer {
        let v = Violation::KernelBug { rule: format!("{request}: {rule}"), driver_file };
        self.note(pid, request, v.to_string());
        self.violations.push(v.clone());
        Err(Refusal::KernelBug(v))
    }

    fn warn(&mut self, pid: u32, request: &'static str, rule: String, source: &'static str) {
        let v = Violation::Warning { rule: format!("{request}: {rule}"), source };
        self.note(pid, request, v.to_string());
        self.violations.push(v);
    }

    /// Serve request `code` for process `pid`: `arg` holds the argument struct
    /// ([`arg_size`] bytes, copied in by the caller and copied back after),
    /// `mem` the caller's memory for the pointers inside it. `Ok(v)` is the
    /// ioctl's return value (the driver returns a positive value in a few
    /// places where it meant an errno; those are kept, and logged).
    pub fn handle(&mut self, pid: u32, code: u32, arg: &mut [u8], mem: &mut dyn TargetMem) -> Answer {
        let name = abi::request_name(code).unwrap_or("NEURON_IOCTL_(unknown)");
        *self.calls.entry(name).or_insert(0) += 1;
        let need = match arg_size(code) {
            Some(n) => n,
            None => {
                return self.refuse(
                    pid,
                    name,
                    Errno::EINVAL,
                    &format!("request 0x{code:08X} is not one the model serves (the driver's default: invalid IOCTL)"),
                    "neuron_cdev.c",
                )
            }
        };
        if arg.len() < need {
            return self.refuse(
                pid,
                name,
                Errno::EFAULT,
                "the argument struct could not be copied in",
                "neuron_cdev.c",
            );
        }
        // ncdev_ioctl: these need the process that opened the device (npid_is_attached; G-DRV-ATTACH).
        let attached_only = [
            abi::DMA_QUEUE_INIT.code(),
            abi::DMA_ACK_COMPLETED.code(),
            abi::DMA_QUEUE_RELEASE.code(),
            abi::MEM_FREE.code(),
            abi::BAR_WRITE.code(),
            abi::NOTIFICATIONS_INIT_V2.code(),
            abi::NOTIFICATIONS_INIT_WITH_REALLOC_V2.code(),
        ];
        if attached_only.contains(&code) && !self.attached.contains(&pid) {
            return self.refuse(
                pid,
                name,
                Errno::EACCES,
                "the calling process did not open the device (pid not attached)",
                "neuron_cdev.c",
            );
        }
        match code {
            c if c == abi::DEVICE_INFO.code() => self.device_info(arg),
            c if c == abi::DEVICE_BASIC_INFO.code() => {
                store(arg, &abi::DeviceBasicInfo { architecture: u32::from(self.arch.arch_type()), revision: 0 });
                Ok(0)
            }
            c if c == abi::DRIVER_INFO_GET.code() => {
                let d = abi::DriverInfo {
                    architecture: u32::from(self.arch.arch_type()),
                    revision: 0,
                    version: 0,
                    size: core::mem::size_of::<abi::DriverInfo>() as u32,
                    feature_flags1: DRIVER_FEATURES,
                };
                store(arg, &d);
                Ok(0)
            }
            c if c == abi::COMPATIBLE_VERSION.code() => {
                let (max, min) = compatible_version(self.arch);
                store(arg, &abi::CompatibleVersion { max, min });
                Ok(0)
            }
            c if c == abi::CRWL_READER_ENTER.code() || c == abi::CRWL_READER_EXIT.code() => {
                self.crwl(pid, name, c == abi::CRWL_READER_ENTER.code(), arg)
            }
            c if c == abi::NC_RESET.code() => {
                let mut a: abi::NcReset = parse(arg)?;
                // ncdev_nc_reset: the request id is the caller's tgid (nothing is reset: G-DRV-RESET).
                a.request_id = pid;
                self.resets.insert(pid);
                store(arg, &a);
                Ok(0)
            }
            c if c == abi::NC_RESET_READY.code() => {
                let mut a: abi::NcResetReady = parse(arg)?;
                // nr_wait (neuron_reset.c): an unknown request id is an error result.
                a.result = if self.resets.contains(&a.request_id) { 0 } else { -libc::EINVAL };
                if a.result != 0 {
                    self.note(pid, name, format!("unknown reset request id {} (neuron_reset.c)", a.request_id));
                }
                store(arg, &a);
                Ok(0)
            }
            c if c == abi::MEM_ALLOC_V2MT.code() => self.mem_alloc(pid, name, arg, mem),
            c if c == abi::MEM_GET_EXTENDED_INFO.code() => self.mem_info(pid, name, arg),
            c if c == abi::MEM_FREE.code() => {
                let a: abi::MemFree = parse(arg)?;
                match self.chunks.get(&a.mem_handle).copied() {
                    Some(ch) if ch.ring => {
                        // The driver frees any chunk by handle, a notification ring
                        // included, while the NOTIFIC slot still points at it.
                        self.chunks.remove(&a.mem_handle);
                        self.nq.retain(|_, r| r.handle != a.mem_handle);
                        self.warn(
                            pid,
                            name,
                            format!(
                                "chunk {} is a notification ring: freed while its slot still points at it",
                                a.mem_handle
                            ),
                            "neuron_cdev.c",
                        );
                        Ok(0)
                    }
                    Some(_) => {
                        self.chunks.remove(&a.mem_handle);
                        let used = self
                            .queues
                            .values()
                            .any(|q| q.tx.chunk == Some(a.mem_handle) || q.rx.chunk == Some(a.mem_handle));
                        if used {
                            self.warn(
                                pid,
                                name,
                                format!("chunk {} freed while a DMA queue still uses it as a ring", a.mem_handle),
                                "neuron_cdev.c",
                            );
                        }
                        Ok(0)
                    }
                    _ => self.refuse(pid, name, Errno::EINVAL, "invalid memory handle", "neuron_cdev.c"),
                }
            }
            c if c == abi::DMA_QUEUE_INIT.code() => self.queue_init(pid, name, arg),
            c if c == abi::DMA_QUEUE_RELEASE.code() => {
                let _a: abi::DmaQueueRelease = parse(arg)?;
                // ndmar_queue_release (neuron_ring.c) does nothing and returns 0.
                Ok(0)
            }
            c if c == abi::DMA_QUEUE_COPY_START.code() => self.copy_start(pid, name, arg),
            c if c == abi::DMA_ACK_COMPLETED.code() => {
                let a: abi::DmaAckCompleted = parse(arg)?;
                if a.eng_id >= DMA_ENGINES {
                    return self.refuse(pid, name, Errno::EINVAL, "engine id past the device's", "neuron_ring.c");
                }
                if a.qid >= DMA_QUEUES {
                    return self.refuse(pid, name, Errno::EINVAL, "queue id past the engine's", "udma/udma_main.c");
                }
                Ok(0)
            }
            c if c == abi::DMA_QUEUE_GET_STATE.code() => self.queue_state(pid, name, arg, mem),
            c if c == abi::SEMAPHORE_INCREMENT.code()
                || c == abi::SEMAPHORE_DECREMENT.code()
                || c == abi::SEMAPHORE_READ.code()
                || c == abi::SEMAPHORE_WRITE.code() =>
            {
                self.semaphore(pid, name, code, arg)
            }
            c if c == abi::EVENT_SET.code() || c == abi::EVENT_GET.code() => self.event(pid, name, code, arg),
            c if c == abi::NOTIFICATIONS_INIT_V2.code() => {
                let mut a: abi::NotificationsInitV2 = parse(arg)?;
                let (off, h) = self.nq_init(
                    pid,
                    name,
                    (a.nq_dev_id, a.nq_dev_type, a.nq_type, a.engine_index, a.size, a.on_host_memory),
                    false,
                )?;
                a.mmap_offset = off;
                a.mem_handle = h;
                store(arg, &a);
                Ok(0)
            }
            c if c == abi::NOTIFICATIONS_INIT_WITH_REALLOC_V2.code() => {
                let mut a: abi::NotificationsInitWithReallocV2 = parse(arg)?;
                let (off, h) = self.nq_init(
                    pid,
                    name,
                    (a.nq_dev_id, a.nq_dev_type, a.nq_type, a.engine_index, a.size, a.on_host_memory),
                    a.force_alloc_mem != 0,
                )?;
                a.mmap_offset = off;
                a.mem_handle = h;
                store(arg, &a);
                Ok(0)
            }
            c if c == abi::NOTIFICATIONS_QUEUE_INFO.code() => {
                let mut a: abi::NotificationsQueueInfo = parse(arg)?;
                if u32::from(a.nq_dev_id) >= nc_per_device(self.arch) {
                    return self.refuse(pid, name, Errno::EINVAL, "nq_dev_id past the device's cores", "neuron_nq.c");
                }
                let head = nrt_core::arch::nq_head_register(self.arch, a.nq_dev_id, a.engine_index)
                    .and_then(|r| self.file.bar_u32(r))
                    .map_or(0, |w| w.load(Ordering::Acquire));
                a.head = head;
                a.phase_bit = 0;
                store(arg, &a);
                Ok(0)
            }
            c if c == abi::BAR_READ.code() || c == abi::BAR_WRITE.code() => {
                self.bar_rw(pid, name, c == abi::BAR_READ.code(), arg, mem)
            }
            c if c == abi::RESOURCE_MMAP_INFO.code() => self.refuse(
                pid,
                name,
                Errno::EINVAL,
                "no special resource is mapped by the simulated device (G-DRV-RESOURCE)",
                "neuron_mmap.c",
            ),
            _ => self.refuse(pid, name, Errno::EINVAL, "unserved request", "neuron_cdev.c"),
        }
    }

    fn device_info(&mut self, arg: &mut [u8]) -> Answer {
        let mut d = abi::DeviceInfo { architecture: u32::from(self.arch.arch_type()), ..abi::DeviceInfo::default() };
        // ncdev_device_info (neuron_cdev.c): BAR0 and BAR2 addresses and sizes.
        d.bar_address[0] = simabi::SIM_BAR0_PA;
        d.bar_size[0] = self.file.layout().bar_len;
        store(arg, &d);
        Ok(0)
    }

    fn crwl(&mut self, pid: u32, name: &'static str, enter: bool, arg: &mut [u8]) -> Answer {
        let a: abi::Crwl = parse(arg)?;
        // ncrwl_reader_enter / _exit (neuron_crwl.c).
        if a.nc_id >= MAX_NC_PER_DEVICE {
            return self.refuse(pid, name, Errno::EINVAL, "nc_id >= MAX_NC_PER_DEVICE (8)", "neuron_crwl.c");
        }
        let set = self.readers.entry(a.nc_id).or_default();
        if enter {
            set.insert(pid);
            Ok(0)
        } else if set.remove(&pid) {
            Ok(0)
        } else {
            self.refuse(pid, name, Errno::EINVAL, "reader exit without a reader on the core", "neuron_crwl.c")
        }
    }

    /// First fit in the chunk region.
    fn alloc(&mut self, size: u64) -> Option<u64> {
        let size = page_up(size);
        if size == 0 {
            return None;
        }
        let mut used: Vec<(u64, u64)> =
            self.chunks.values().filter(|c| c.offset >= self.chunk_base).map(|c| (c.offset, c.size)).collect();
        used.sort_unstable();
        let mut at = self.chunk_base;
        for (o, s) in used {
            if o >= at.saturating_add(size) {
                break;
            }
            at = at.max(o.saturating_add(s));
        }
        (at.checked_add(size)? <= self.chunk_base.saturating_add(self.chunk_len)).then_some(at)
    }

    fn new_handle(&mut self, c: Chunk) -> u64 {
        let h = self.next_handle;
        self.next_handle = self.next_handle.wrapping_add(1).max(1);
        self.chunks.insert(h, c);
        h
    }

    fn mem_alloc(&mut self, pid: u32, name: &'static str, arg: &mut [u8], mem: &mut dyn TargetMem) -> Answer {
        let a: abi::MemAllocV2Mt = parse(arg)?;
        // mc_alloc_internal (neuron_mempool.c).
        if a.size > i64::MAX as u64 {
            return self.refuse(pid, name, Errno::EINVAL, "size > INT64_MAX", "neuron_mempool.c");
        }
        if a.dram_channel >= dram_channels(self.arch) {
            return self.refuse(pid, name, Errno::EINVAL, "dram_channel past the device's", "neuron_mempool.c");
        }
        if a.nc_id >= MAX_NC_PER_DEVICE {
            return self.refuse(pid, name, Errno::EINVAL, "nc_id >= MAX_NC_PER_DEVICE (8)", "neuron_mempool.c");
        }
        let Some(offset) = self.alloc(a.size) else {
            return self.refuse(
                pid,
                name,
                Errno::ENOMEM,
                &format!("{} bytes: no room (the simulated pool holds {} bytes, G-DRV-POOL)", a.size, self.chunk_len),
                "neuron_mempool.c",
            );
        };
        let h = self.new_handle(Chunk { offset, size: page_up(a.size), host: a.host_memory != 0, pid, ring: false });
        // ncdev_mem_alloc_libnrt: the handle goes through the caller's pointer;
        // when that copy fails the chunk is freed and the bytes not copied (8)
        // are returned as a *positive* value (G-DRV-POSITIVE).
        if mem.write(a.mem_handle, &h.to_le_bytes()).is_err() {
            self.chunks.remove(&h);
            self.note(
                pid,
                name,
                format!(
                    "mem_handle pointer 0x{:x} not writable: returns 8 (bytes not copied) (neuron_cdev.c)",
                    a.mem_handle
                ),
            );
            return Ok(8);
        }
        Ok(0)
    }

    fn mem_info(&mut self, pid: u32, name: &'static str, arg: &mut [u8]) -> Answer {
        let mut a: abi::MemGetExtendedInfo = parse(arg)?;
        let Some(c) = self.chunks.get(&a.mem_handle).copied() else {
            // ncdev_mem_get_extended_info returns EINVAL *positive*: the ioctl "succeeds" with 22 (G-DRV-POSITIVE).
            self.note(pid, name, "invalid memory handle: returns +EINVAL (22), not an error (neuron_cdev.c)".into());
            return Ok(i64::from(libc::EINVAL));
        };
        a.host_memory = u32::from(c.host);
        // nmmap_offset (neuron_mmap.c): the chunk's address is its mmap offset; here, its file offset.
        a.mmap_offset = c.offset;
        a.pa = SIM_HOST_PA_BASE | c.offset;
        a.pid = u64::from(c.pid);
        a.size = c.size;
        store(arg, &a);
        Ok(0)
    }

    fn queue_init(&mut self, pid: u32, name: &'static str, arg: &mut [u8]) -> Answer {
        let a: abi::DmaQueueInit = parse(arg)?;
        // ncdev_dma_queue_init (neuron_cdev.c): an unknown handle is no ring at all.
        let lookup = |m: &mut Model, h: u64, what: &str| -> Option<u64> {
            if h == 0 {
                return None;
            }
            if m.chunks.contains_key(&h) {
                Some(h)
            } else {
                m.warn(
                    pid,
                    name,
                    format!("invalid {what} memory handle {h}: the driver queues no ring for it"),
                    "neuron_cdev.c",
                );
                None
            }
        };
        let tx = lookup(self, a.tx_handle, "TX");
        let rx = lookup(self, a.rx_handle, "RX");
        let rxc = lookup(self, a.rxc_handle, "RX completion");
        // ndmar_queue_init (neuron_ring.c).
        if a.eng_id >= DMA_ENGINES {
            return self.refuse(pid, name, Errno::EINVAL, "engine id >= NUM_DMA_ENG_PER_DEVICE (132)", "neuron_ring.c");
        }
        if a.qid >= DMA_QUEUES {
            return self.refuse(pid, name, Errno::EINVAL, "qid >= DMA_MAX_Q_V4 (16)", "neuron_ring.c");
        }
        if let Some(h) = rxc {
            let size = self.chunks.get(&h).map_or(0, |c| c.size);
            if u64::from(a.rx_desc_count) * DESC_BYTES > size {
                return self.refuse(
                    pid,
                    name,
                    Errno::EINVAL,
                    "RX completion ring smaller than rx_desc_count",
                    "neuron_ring.c",
                );
            }
        }
        for (h, count, what) in [(tx, a.tx_desc_count, "TX"), (rx, a.rx_desc_count, "RX")] {
            if let Some(c) = h.and_then(|h| self.chunks.get(&h).copied()) {
                if u64::from(count) * DESC_BYTES > c.size {
                    // The driver's check is commented out: accepted, the device reads past the chunk.
                    self.warn(
                        pid,
                        name,
                        format!("{what} ring of {count} descriptors is larger than its chunk ({} bytes)", c.size),
                        "neuron_ring.c",
                    );
                }
            }
        }
        // udma_m2m_init_queue (udma/udma_m2m.c): bare `return -1` = EPERM.
        if !a.tx_desc_count.is_multiple_of((UDMA_ALIGN / DESC_BYTES) as u32) {
            return self.refuse(
                pid,
                name,
                Errno::EPERM,
                "TX ring size not a multiple of 16 descriptors",
                "udma/udma_m2m.c",
            );
        }
        if !a.rx_desc_count.is_multiple_of((UDMA_ALIGN / DESC_BYTES) as u32) {
            return self.refuse(
                pid,
                name,
                Errno::EPERM,
                "RX ring size not a multiple of 16 descriptors",
                "udma/udma_m2m.c",
            );
        }
        if rxc.is_some() {
            return self.refuse(pid, name, Errno::EPERM, "completion ring not supported", "udma/udma_m2m.c");
        }
        // udma_q_init_validate (udma/udma_main.c), TX then RX: TX stays initialised if RX fails.
        let side = |count: u32| -> Result<(), &'static str> {
            if count < UDMA_MIN_Q_SIZE {
                Err("ring size < UDMA_MIN_Q_SIZE (32)")
            } else if count > UDMA_MAX_Q_SIZE {
                Err("ring size > UDMA_MAX_Q_SIZE (2^24 - 16)")
            } else {
                Ok(())
            }
        };
        if let Err(why) = side(a.tx_desc_count) {
            return self.refuse(pid, name, Errno::EINVAL, &format!("TX {why}"), "udma/udma_main.c");
        }
        let q = self.queues.entry((a.eng_id, a.qid)).or_default();
        q.owner = pid;
        q.tx = QueueSide { size: a.tx_desc_count, chunk: tx, next: 0, ring_id: INITIAL_RING_ID };
        if let Err(why) = side(a.rx_desc_count) {
            return self.refuse(pid, name, Errno::EINVAL, &format!("RX {why}"), "udma/udma_main.c");
        }
        let q = self.queues.entry((a.eng_id, a.qid)).or_default();
        q.rx = QueueSide { size: a.rx_desc_count, chunk: rx, next: 0, ring_id: INITIAL_RING_ID };
        Ok(0)
    }

    fn copy_start(&mut self, pid: u32, name: &'static str, arg: &mut [u8]) -> Answer {
        let a: abi::DmaQueueCopyStart = parse(arg)?;
        // ndmar_queue_copy_start (neuron_ring.c) -> udma_m2m_copy_start (udma/udma_m2m.c)
        // -> udma_desc_action_add (udma/udma_main.c).
        if a.eng_id >= DMA_ENGINES {
            return self.refuse(pid, name, Errno::EINVAL, "engine id >= NUM_DMA_ENG_PER_DEVICE (132)", "neuron_ring.c");
        }
        if a.qid >= DMA_QUEUES {
            return self.refuse(pid, name, Errno::EPERM, "qid >= the engine's queues (16)", "udma/udma_m2m.c");
        }
        let q = self.queues.get(&(a.eng_id, a.qid)).copied().unwrap_or_default();
        if a.tx_desc_count > q.tx.size {
            let why = if q.tx.size == 0 {
                "the queue was never initialised (DMA_QUEUE_INIT): its TX size is 0".to_string()
            } else {
                format!("tx_desc_count {} > the TX ring's {} descriptors", a.tx_desc_count, q.tx.size)
            };
            return self.refuse(pid, name, Errno::EPERM, &why, "udma/udma_m2m.c");
        }
        if a.rx_desc_count > q.rx.size {
            let why = if q.rx.size == 0 {
                "the queue was never initialised (DMA_QUEUE_INIT): its RX size is 0".to_string()
            } else {
                format!("rx_desc_count {} > the RX ring's {} descriptors", a.rx_desc_count, q.rx.size)
            };
            return self.refuse(pid, name, Errno::EPERM, &why, "udma/udma_m2m.c");
        }
        if a.rx_desc_count == 0 {
            return self.bug(
                pid,
                name,
                "udma_desc_action_add: BUG_ON(num == 0 || num > size) with num = rx_desc_count = 0 (the RX count is \
                 always added)",
                "udma/udma_main.c",
            );
        }
        if q.rx.chunk.is_none() {
            return self.bug(
                pid,
                name,
                "the queue has no RX ring chunk (DMA_QUEUE_INIT without rx_handle): copy start dereferences it (NULL)",
                "neuron_ring.c",
            );
        }
        self.execute_copy(pid, name, a.eng_id, a.qid, a.tx_desc_count, a.rx_desc_count);
        Ok(0)
    }

    /// The copy a copy start releases, executed as the device's UDMA would
    /// (G-DRV-COPY): the `tx` TX (M2S) and `rx` RX (S2M) descriptors at the
    /// queue's positions are read from the rings' chunks, and the bytes of the
    /// TX buffers, in order, are written into the RX buffers, in order (one
    /// stream: a BD pair of equal lengths is one copy). Each BD must carry the
    /// ring id of its lap (udma/udma.h: the device takes a BD only with the
    /// ring id it expects, starting at 1 and advancing mod 4 at each wrap; the
    /// driver does not look): a warning if not, and the device stalls on it, so
    /// nothing is copied. Buffer addresses are chunk `pa`s from
    /// `MEM_GET_EXTENDED_INFO`; a range outside every chunk (or a descriptor
    /// outside its ring's chunk) is a DMA error: logged, nothing copied. The
    /// queue's positions advance by the counts either way (G-DRV-QSTATE).
    fn execute_copy(&mut self, pid: u32, name: &'static str, eng: u32, qid: u32, tx: u32, rx: u32) {
        let Some(q) = self.queues.get(&(eng, qid)).copied() else { return };
        let (txs, tx_bds) = self.fetch_bds(q.tx, tx);
        let (rxs, rx_bds) = self.fetch_bds(q.rx, rx);
        if let Some(q) = self.queues.get_mut(&(eng, qid)) {
            q.tx = txs;
            q.rx = rxs;
        }
        if tx.max(rx) > COPY_DESCS_MAX {
            self.dma_error(
                pid,
                name,
                format!(
                    "engine {eng} queue {qid}: {} descriptors in one copy start, past the model's bound of \
                     {COPY_DESCS_MAX} (G-DRV-COPY)",
                    tx.max(rx)
                ),
            );
            return;
        }
        let side = |tx: bool| if tx { "TX" } else { "RX" };
        let mut stalled = false;
        for (dir, bds) in [(true, &tx_bds), (false, &rx_bds)] {
            if let Some(b) = bds.iter().find(|b| b.fetch.is_ok() && b.ring_id != b.lap) {
                self.warn(
                    pid,
                    name,
                    format!(
                        "engine {eng} queue {qid} {}: BD {} has ring id {}, the lap's is {}: the device stalls on it \
                         (nothing copied)",
                        side(dir),
                        b.index,
                        b.ring_id,
                        b.lap
                    ),
                    "udma/udma_m2m.c",
                );
                stalled = true;
            }
        }
        if stalled {
            return;
        }
        // Every descriptor fetched and every buffer inside a chunk, before a byte moves.
        let mut segs: [Vec<(u64, u64)>; 2] = [Vec::new(), Vec::new()];
        let mut total = [0u64; 2];
        for (k, (dir, bds)) in [(true, &tx_bds), (false, &rx_bds)].into_iter().enumerate() {
            for b in bds.iter() {
                let fault = match b.fetch {
                    Err(why) => Some(format!("BD {}: {why}", b.index)),
                    Ok(()) => match self.chunk_range(b.addr, u64::from(b.len)) {
                        Some(off) => {
                            segs[k].push((off, u64::from(b.len)));
                            total[k] = total[k].saturating_add(u64::from(b.len));
                            None
                        }
                        None => Some(format!(
                            "BD {} {} 0x{:x} + {} bytes is outside every chunk the driver handed out",
                            b.index,
                            if dir { "source" } else { "destination" },
                            b.addr,
                            b.len
                        )),
                    },
                };
                if let Some(f) = fault {
                    self.dma_error(pid, name, format!("engine {eng} queue {qid} {}: {f}", side(dir)));
                    return;
                }
            }
        }
        let n = total[0].min(total[1]);
        if n > COPY_BYTES_MAX {
            self.dma_error(
                pid,
                name,
                format!(
                    "engine {eng} queue {qid}: {n} bytes in one copy start, past the model's bound of {COPY_BYTES_MAX} \
                     (G-DRV-COPY)"
                ),
            );
            return;
        }
        if total[0] != total[1] {
            self.warn(
                pid,
                name,
                format!(
                    "engine {eng} queue {qid}: the TX descriptors carry {} bytes, the RX descriptors {}: {n} copied",
                    total[0], total[1]
                ),
                "udma/udma_m2m.c",
            );
        }
        if let Err(e) = self.stream(&segs[0], &segs[1], n) {
            self.dma_error(pid, name, format!("engine {eng} queue {qid}: the device file: {e}"));
            return;
        }
        self.dma_bytes = self.dma_bytes.saturating_add(n);
    }

    /// A DMA error: the driver does not check BD addresses; the device's UDMA
    /// faults the transfer. Logged (a warning), nothing written.
    fn dma_error(&mut self, pid: u32, name: &'static str, what: String) {
        self.dma_errors = self.dma_errors.saturating_add(1);
        self.warn(
            pid,
            name,
            format!("DMA error: {what}: the device's UDMA faults the transfer, nothing copied"),
            "the device's UDMA, sim; udma/udma_m2m.c does not check BD addresses",
        );
    }

    /// The `count` descriptors of side `s` from its position, and the side
    /// moved past them (the ring id advancing at each wrap).
    fn fetch_bds(&self, mut s: QueueSide, count: u32) -> (QueueSide, Vec<FetchedBd>) {
        let chunk = s.chunk.and_then(|h| self.chunks.get(&h).copied());
        let map = self.file.map();
        let mut out = Vec::with_capacity(count.min(s.size).min(COPY_DESCS_MAX) as usize);
        for _ in 0..count.min(s.size) {
            if out.len() >= COPY_DESCS_MAX as usize {
                // Past the model's bound: the caller refuses the copy; the position still moves.
                s.next += 1;
                if s.next >= s.size {
                    s.next = 0;
                    s.ring_id = (s.ring_id + 1) % 4;
                }
                continue;
            }
            let mut b = FetchedBd { index: s.next, lap: s.ring_id, ..FetchedBd::default() };
            let off = u64::from(s.next) * DESC_BYTES;
            b.fetch = match chunk {
                None => Err("the queue has no ring chunk to fetch it from"),
                Some(c) if off + DESC_BYTES > c.size => Err("the descriptor is past its ring's chunk"),
                Some(c) => match (map.u32_at(c.offset + off), map.u64_at(c.offset + off + 8)) {
                    (Some(w), Some(p)) => {
                        let ctrl = LenCtrl::from_bits(w.load(Ordering::Acquire));
                        b.ring_id = u32::from(ctrl.ring_id());
                        b.len = ctrl.len_bytes();
                        b.addr = p.load(Ordering::Acquire);
                        Ok(())
                    }
                    _ => Err("the descriptor is past the device file"),
                },
            };
            out.push(b);
            s.next += 1;
            if s.next >= s.size {
                s.next = 0;
                s.ring_id = (s.ring_id + 1) % 4;
            }
        }
        (s, out)
    }

    /// The device-file offset of `[pa, pa + len)` when it lies inside one
    /// chunk handed out (its `pa` is `SIM_HOST_PA_BASE | offset`, G-DRV-POOL).
    pub fn chunk_range(&self, pa: u64, len: u64) -> Option<u64> {
        let off = pa.checked_sub(SIM_HOST_PA_BASE)?;
        let end = off.checked_add(len)?;
        self.chunks.values().any(|c| off >= c.offset && end <= c.offset.saturating_add(c.size)).then_some(off)
    }

    /// Move the first `n` bytes of the TX segments' stream into the RX
    /// segments, in order, through the device file (the process sees them in
    /// its shared mappings).
    fn stream(&self, src: &[(u64, u64)], dst: &[(u64, u64)], mut n: u64) -> std::io::Result<()> {
        use std::os::unix::fs::FileExt;
        let f = self.file.file();
        let (mut s, mut d) = (src.iter().copied(), dst.iter().copied());
        let (mut cs, mut cd) = ((0u64, 0u64), (0u64, 0u64));
        let mut buf = vec![0u8; 1 << 16];
        while n > 0 {
            if cs.1 == 0 {
                cs = s.next().unwrap_or_default();
            }
            if cd.1 == 0 {
                cd = d.next().unwrap_or_default();
            }
            let step = cs.1.min(cd.1).min(n).min(buf.len() as u64);
            if step == 0 {
                break;
            }
            let b = &mut buf[..step as usize];
            f.read_exact_at(b, cs.0)?;
            f.write_all_at(b, cd.0)?;
            cs = (cs.0 + step, cs.1 - step);
            cd = (cd.0 + step, cd.1 - step);
            n -= step;
        }
        Ok(())
    }

    fn queue_state(&mut self, pid: u32, name: &'static str, arg: &mut [u8], mem: &mut dyn TargetMem) -> Answer {
        let a: abi::DmaQueueGetState = parse(arg)?;
        if a.eng_id >= DMA_ENGINES {
            return self.refuse(pid, name, Errno::EINVAL, "engine id past the device's", "neuron_ring.c");
        }
        if a.qid >= DMA_QUEUES {
            return self.refuse(pid, name, Errno::EINVAL, "queue id past the engine's", "udma/udma_main.c");
        }
        // The model's view of the queue (G-DRV-QSTATE).
        let q = self.queues.get(&(a.eng_id, a.qid)).copied().unwrap_or_default();
        for (ptr, s) in [(a.tx, q.tx), (a.rx, q.rx)] {
            let base = s.chunk.and_then(|h| self.chunks.get(&h)).map_or(0, |c| SIM_HOST_PA_BASE | c.offset);
            let st = abi::DmaQueueState {
                base_addr: base,
                length: s.size,
                head_pointer: s.next,
                tail_pointer: s.next,
                ..abi::DmaQueueState::default()
            };
            if mem.write(ptr, st.as_bytes()).is_err() {
                return self.refuse(pid, name, Errno::EFAULT, "state pointer not writable", "neuron_cdev.c");
            }
        }
        Ok(0)
    }

    fn semaphore(&mut self, pid: u32, name: &'static str, code: u32, arg: &mut [u8]) -> Answer {
        let mut a: abi::SemaphoreArg = parse(arg)?;
        // ncdev_semaphore_ioctl -> ncdev_ncid_valid (neuron_cdev.c).
        if a.nc_id >= nc_per_device(self.arch) {
            return self.refuse(pid, name, Errno::E2BIG, "nc_id >= the device's cores", "neuron_cdev.c");
        }
        // nc_semaphore_* (neuron_core.c): the index is taken as u16.
        let index = u32::from(a.semaphore_index as u16);
        if index >= SEMAPHORE_COUNT {
            return self.refuse(
                pid,
                name,
                Errno::EINVAL,
                "semaphore index >= 256 (V2_SEMAPHORE_COUNT)",
                "neuron_core.c",
            );
        }
        let word = if a.nc_id < u32::from(self.sim_cores) { self.file.sema_incr(a.nc_id, index) } else { None };
        let Some(word) = word else {
            self.note(pid, name, format!("core {} is not simulated: the semaphore is not backed (sim)", a.nc_id));
            return Ok(0);
        };
        match code {
            c if c == abi::SEMAPHORE_INCREMENT.code() => {
                // The atomic add on the INCR alias that the device consumes (G-DRV-SEMA).
                std::sync::atomic::fence(Ordering::Release);
                word.fetch_add(a.value, Ordering::AcqRel);
            }
            c if c == abi::SEMAPHORE_DECREMENT.code() => {
                let _ = word.fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| Some(v.saturating_sub(a.value)));
            }
            c if c == abi::SEMAPHORE_WRITE.code() => word.store(a.value, Ordering::Release),
            _ => {
                a.value = word.load(Ordering::Acquire);
                store(arg, &a);
            }
        }
        Ok(0)
    }

    fn event(&mut self, pid: u32, name: &'static str, code: u32, arg: &mut [u8]) -> Answer {
        let mut a: abi::SemaphoreArg = parse(arg)?;
        // nc_event_set / nc_event_get (neuron_core.c): `index > event_count` (sic). Not backed: G-DRV-EVENTS.
        let index = u32::from(a.semaphore_index as u16);
        if index > EVENT_COUNT {
            return self.refuse(pid, name, Errno::EINVAL, "event index > 256 (V2_EVENTS_COUNT)", "neuron_core.c");
        }
        if index == EVENT_COUNT {
            self.warn(
                pid,
                name,
                "event index 256 passes the driver's `>` check: one past the events".into(),
                "neuron_core.c",
            );
        }
        // The event ioctls do not check nc_id (driver-abi.md point 9).
        if u32::from(a.nc_id as u8) >= nc_per_device(self.arch) {
            self.warn(
                pid,
                name,
                format!("nc_id {} past the device's cores: the driver does not check it and writes elsewhere", a.nc_id),
                "neuron_cdev.c",
            );
        }
        if code == abi::EVENT_GET.code() {
            a.value = 0;
            store(arg, &a);
        }
        Ok(0)
    }

    #[allow(clippy::type_complexity)]
    fn nq_init(
        &mut self,
        pid: u32,
        name: &'static str,
        (dev_id, dev_type, ty, engine_index, size, on_host): (u32, u32, u32, u32, u32, u32),
        force: bool,
    ) -> Result<(u64, u64), Refusal> {
        // ncdev_nc_nq_init_libnrt (neuron_cdev.c).
        if dev_type == nq_dev_type::TOPSP {
            self.refuse(pid, name, Errno::ENODEV, "top-SP rings are not simulated (G-DRV-TOPSP)", "sim")?;
        } else if dev_type != nq_dev_type::NEURON_CORE {
            self.refuse(pid, name, Errno::ENOSYS, "nq_dev_type neither NC (0) nor TOPSP (1)", "neuron_cdev.c")?;
        }
        // nnq_init (neuron_nq.c): nc_id and engine index are u8 parameters.
        if size & size.wrapping_sub(1) != 0 {
            self.refuse(pid, name, Errno::EINVAL, "ring size not a power of 2", "neuron_nq.c")?;
        }
        let nc = dev_id as u8;
        if u32::from(nc) >= nc_per_device(self.arch) {
            self.refuse(pid, name, Errno::EINVAL, "nq_dev_id >= the device's cores", "neuron_nq.c")?;
        }
        let eng = engine_index as u8;
        // nnq_get_nqid_v2 (v2/neuron_dhal_v2.c): (nq_type * 16 + index), a u8.
        let nq_id = u32::from((ty.wrapping_mul(NQ_QUEUES_PER_TYPE)).wrapping_add(u32::from(eng)) as u8);
        if nq_id >= MAX_NQ_SUPPORTED {
            self.refuse(
                pid,
                name,
                Errno::EINVAL,
                &format!(
                    "nq id {nq_id} = nq_type {ty} * 16 + engine_index {eng} >= MAX_NQ_SUPPORTED (96): the slot is past \
                     the NOTIFIC block"
                ),
                "neuron_nq.c",
            )?;
        }
        let key = (u32::from(nc), nq_id);
        if let Some(r) = self.nq.get(&key).copied() {
            if !force {
                // The old chunk is reused whatever the size asked (driver-abi.md point 8).
                let c = self.chunks.get(&r.handle).copied();
                if let Some(c) = c {
                    if c.size != u64::from(size) {
                        self.warn(
                            pid,
                            name,
                            format!(
                                "size {size} asked, the ring keeps its {} bytes (no force_alloc_mem): map that size",
                                c.size
                            ),
                            "neuron_nq.c",
                        );
                    }
                    return Ok((if c.host { c.offset } else { u64::MAX }, r.handle));
                }
            }
        }
        if size == 0 {
            self.refuse(pid, name, Errno::ENOMEM, "a ring of 0 bytes cannot be allocated", "neuron_mempool.c")?;
        }
        // The slot programmed (nnq_set_hwaddr_v2): engine_index, or 0 in the DMA block for TRACE_DMA.
        let slot = if ty == nq_type::TRACE_DMA { 0 } else { u32::from(eng) };
        let served = u32::from(nc) < u32::from(self.sim_cores)
            && usize::from(eng) < NQ_PER_CORE
            && ty != nq_type::TRACE_DMA
            && on_host != 0;
        let chunk = if served {
            if size != self.file.layout().ring_bytes {
                self.refuse(
                    pid,
                    name,
                    Errno::EINVAL,
                    &format!(
                        "the simulated device's rings are {} bytes, not {size} (both sides take --ring-entries, \
                         G-DRV-RINGSIZE)",
                        self.file.layout().ring_bytes
                    ),
                    "sim",
                )?;
            }
            let offset = self.file.layout().ring_offset(nc, eng).unwrap_or(u64::MAX);
            Chunk { offset, size: u64::from(size), host: true, pid, ring: true }
        } else {
            let Some(offset) = self.alloc(u64::from(size)) else {
                self.refuse(pid, name, Errno::ENOMEM, "no room for the ring", "neuron_mempool.c")?;
                return Err(Refusal::Errno(Errno::ENOMEM));
            };
            Chunk { offset, size: u64::from(size), host: on_host != 0, pid, ring: true }
        };
        if let Some(old) = self.nq.remove(&key) {
            self.chunks.remove(&old.handle);
        }
        // A served ring is the device's own ring memory, as the device left it
        // (zero until its first record): the device's producer keeps its place
        // across re-initialisations (G-DRV-RINGSIZE).
        let h = self.new_handle(chunk);
        self.nq.insert(key, NqRing { handle: h, slot });
        Ok((if chunk.host { chunk.offset } else { u64::MAX }, h))
    }

    /// BAR0 register `off` as a BAR_READ sees it: the status window is served
    /// from the file header (G-DRV-PROBES), the rest from the BAR region.
    pub fn bar_word(&self, off: u64) -> Option<u32> {
        let w = simabi::status_window(self.arch);
        if off >= w && off < w + simabi::STATUS_WINDOW_BYTES {
            let o = off - w;
            let lines = [Line::BarrierDone, Line::BarrierFail, Line::NetproxyFail, Line::Hbm, Line::DmaAbort];
            for l in lines {
                for core in 0..nrt_core::arch::MAX_CORES as u8 {
                    if o == simabi::status_line_offset(l, core) {
                        return Some(self.file.line(l, core).map_or(0, |a| a.load(Ordering::Acquire)));
                    }
                }
            }
            let split = |v: u64, base: u64| if o == base { Some(v as u32) } else { Some((v >> 32) as u32) };
            return match o {
                x if x == simabi::STATUS_CLOCK_ORIGIN || x == simabi::STATUS_CLOCK_ORIGIN + 4 => {
                    split(self.file.origin_ns(), simabi::STATUS_CLOCK_ORIGIN)
                }
                x if x == simabi::STATUS_HEARTBEAT || x == simabi::STATUS_HEARTBEAT + 4 => {
                    split(self.file.heartbeat_ns(), simabi::STATUS_HEARTBEAT)
                }
                x if x == simabi::STATUS_MODEL_CORES => Some(u32::from(self.sim_cores)),
                x if x == simabi::STATUS_MODEL_RING_ENTRIES => {
                    Some(self.file.layout().ring_bytes / crate::layout::ENTRY_BYTES)
                } // entries, not bytes
                _ => Some(0),
            };
        }
        self.file.bar_u32(off).map(|a| a.load(Ordering::Acquire))
    }

    fn bar_rw(&mut self, pid: u32, name: &'static str, read: bool, arg: &mut [u8], mem: &mut dyn TargetMem) -> Answer {
        let a: abi::BarRwWire = parse(arg)?;
        // ncdev_bar_rw (neuron_cdev.c): BAR0 takes an address per register.
        if a.bar != 0 {
            return self.refuse(
                pid,
                name,
                Errno::EINVAL,
                "only BAR0 is served (BAR2/BAR4 direct access is disabled in the driver)",
                if read { "neuron_cdev.c" } else { "v2/neuron_dhal_v2.c" },
            );
        }
        let count = u64::from(a.count);
        if count * 8 > KMALLOC_MAX {
            return self.refuse(
                pid,
                name,
                Errno::ENOMEM,
                "the address array is larger than kmalloc gives",
                "neuron_cdev.c",
            );
        }
        if read && a.count > BAR_READ_MAX {
            return self.refuse(pid, name, Errno::EINVAL, "more than 100 registers in one read", "v2/neuron_dhal_v2.c");
        }
        let mut addrs = vec![0u8; (count * 8) as usize];
        if mem.read(a.address, &mut addrs).is_err() {
            return self.refuse(pid, name, Errno::EFAULT, "address array not readable", "neuron_cdev.c");
        }
        let addrs: Vec<u64> =
            addrs.chunks_exact(8).map(|c| u64::from_le_bytes(<[u8; 8]>::try_from(c).unwrap_or_default())).collect();
        let bar_len = self.file.layout().bar_len;
        if read {
            let mut out = Vec::with_capacity(addrs.len() * 4);
            for &addr in &addrs {
                // The driver reads each address as given (readl), unchecked.
                let off = addr.wrapping_sub(simabi::SIM_BAR0_PA);
                if off.checked_add(4).is_none_or(|e| e > bar_len) {
                    return self.bug(
                        pid,
                        name,
                        &format!("address 0x{addr:x} is outside BAR0: the driver reads it unchecked (readl)"),
                        "neuron_fw_io.c",
                    );
                }
                if off % 4 != 0 {
                    return self.refuse(
                        pid,
                        name,
                        Errno::EINVAL,
                        "unaligned register address (G-DRV-BAR-ALIGN)",
                        "sim",
                    );
                }
                out.extend_from_slice(&self.bar_word(off).unwrap_or(0).to_le_bytes());
            }
            if mem.write(a.data, &out).is_err() {
                return self.refuse(pid, name, Errno::EFAULT, "data array not writable", "neuron_cdev.c");
            }
            return Ok(0);
        }
        let mut data = vec![0u8; (count * 4) as usize];
        if mem.read(a.data, &mut data).is_err() {
            return self.refuse(pid, name, Errno::EFAULT, "data array not readable", "neuron_cdev.c");
        }
        // ncdev_bar_write_data_v2 (v2/neuron_dhal_v2.c): in order; an error stops the rest.
        for (i, &addr) in addrs.iter().enumerate() {
            let off = addr.wrapping_sub(simabi::SIM_BAR0_PA);
            if off > bar_len {
                return self.refuse(
                    pid,
                    name,
                    Errno::EINVAL,
                    &format!("address 0x{addr:x} past BAR0"),
                    "v2/neuron_dhal_v2.c",
                );
            }
            if let Some(reg) = blocked_register(self.arch, off) {
                return self.refuse(
                    pid,
                    name,
                    Errno::EINVAL,
                    &format!("BAR0 offset 0x{off:x} is a UDMA {reg}: writes are blocked (use DMA_QUEUE_COPY_START)"),
                    "neuron_dma.c",
                );
            }
            if off + 4 > bar_len {
                return self.bug(
                    pid,
                    name,
                    &format!("offset 0x{off:x} passes the `off > bar0_size` check and writes past the BAR mapping"),
                    "v2/neuron_dhal_v2.c",
                );
            }
            let v = data
                .get(i * 4..i * 4 + 4)
                .map_or(0, |b| u32::from_le_bytes(<[u8; 4]>::try_from(b).unwrap_or_default()));
            if off % 4 != 0 {
                return self.refuse(pid, name, Errno::EINVAL, "unaligned register address (G-DRV-BAR-ALIGN)", "sim");
            }
            if let Some(w) = self.file.bar_u32(off) {
                w.store(v, Ordering::Release);
            }
        }
        Ok(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shm::ShmLayout;
    use abi::Ioctl;
    use zerocopy::{Immutable, KnownLayout};

    /// The caller's memory: `bytes` at `base`, nothing else.
    struct VecMem {
        base: u64,
        bytes: Vec<u8>,
    }

    impl VecMem {
        fn new() -> VecMem {
            VecMem { base: 0x10_0000, bytes: vec![0; 0x1000] }
        }
        fn range(&self, addr: u64, len: usize) -> Option<core::ops::Range<usize>> {
            let o = usize::try_from(addr.checked_sub(self.base)?).ok()?;
            let end = o.checked_add(len)?;
            (end <= self.bytes.len()).then_some(o..end)
        }
        fn u64_at(&self, addr: u64) -> u64 {
            let r = self.range(addr, 8).unwrap();
            u64::from_le_bytes(self.bytes[r].try_into().unwrap())
        }
        fn put(&mut self, addr: u64, b: &[u8]) {
            let r = self.range(addr, b.len()).unwrap();
            self.bytes[r].copy_from_slice(b);
        }
    }

    impl TargetMem for VecMem {
        fn read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), MemFault> {
            let r = self.range(addr, buf.len()).ok_or(MemFault)?;
            buf.copy_from_slice(&self.bytes[r]);
            Ok(())
        }
        fn write(&mut self, addr: u64, buf: &[u8]) -> Result<(), MemFault> {
            let r = self.range(addr, buf.len()).ok_or(MemFault)?;
            self.bytes[r].copy_from_slice(buf);
            Ok(())
        }
    }

    const PID: u32 = 4242;

    fn model(arch: Arch, cores: u8) -> Model {
        let l = ShmLayout::new(arch, cores, 1024).unwrap();
        let p = std::env::temp_dir().join(format!("nrt-drv-unit-{}", std::process::id()));
        let f = ShmFile::create_with_extra(&p, l, 0, "", 16 << 20).unwrap();
        let mut m = Model::new(Arc::new(f));
        m.open(PID);
        m
    }

    fn call<T: FromBytes + IntoBytes + Immutable + KnownLayout + Copy>(
        m: &mut Model,
        req: Ioctl<T>,
        arg: &mut T,
        mem: &mut VecMem,
    ) -> Answer {
        let mut b = arg.as_bytes().to_vec();
        let r = m.handle(PID, req.code(), &mut b, mem);
        *arg = T::read_from_bytes(&b).unwrap();
        r
    }

    fn errno(e: Errno) -> Answer {
        Err(Refusal::Errno(e))
    }

    fn assert_bug(r: Answer, needle: &str, file: &str) {
        match r {
            Err(Refusal::KernelBug(v)) => {
                let s = v.to_string();
                assert!(
                    s.starts_with("kernel BUG: ") && s.contains(needle) && s.ends_with(&format!("({file})")),
                    "{s}"
                );
            }
            other => panic!("expected a kernel BUG ({needle}), got {other:?}"),
        }
    }

    fn assert_logged(m: &Model, needle: &str) {
        assert!(m.log.iter().any(|l| l.text.contains(needle)), "{needle} not in {:#?}", m.log);
    }

    /// Two host chunks and queue (0, 0) initialised with `n` descriptors each way.
    fn with_queue(m: &mut Model, mem: &mut VecMem, n: u32) -> (u64, u64) {
        let mut hs = [0u64; 2];
        for (i, h) in hs.iter_mut().enumerate() {
            let ptr = mem.base + 8 * i as u64;
            let mut a = abi::MemAllocV2Mt { size: 4096, host_memory: 1, mem_handle: ptr, ..Default::default() };
            assert_eq!(call(m, abi::MEM_ALLOC_V2MT, &mut a, mem), Ok(0));
            *h = mem.u64_at(ptr);
        }
        let mut q = abi::DmaQueueInit {
            tx_desc_count: n,
            rx_desc_count: n,
            tx_handle: hs[0],
            rx_handle: hs[1],
            ..Default::default()
        };
        assert_eq!(call(m, abi::DMA_QUEUE_INIT, &mut q, mem), Ok(0));
        (hs[0], hs[1])
    }

    #[test]
    fn copy_start_with_rx_zero_is_a_kernel_bug() {
        let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
        with_queue(&mut m, &mut mem, 64);
        let mut c = abi::DmaQueueCopyStart { eng_id: 0, qid: 0, tx_desc_count: 1, rx_desc_count: 0 };
        assert_bug(call(&mut m, abi::DMA_QUEUE_COPY_START, &mut c, &mut mem), "num == 0", "udma/udma_main.c");
        assert_eq!(m.kernel_bugs().count(), 1);
        let mut c = abi::DmaQueueCopyStart { eng_id: 0, qid: 0, tx_desc_count: 1, rx_desc_count: 1 };
        assert_eq!(call(&mut m, abi::DMA_QUEUE_COPY_START, &mut c, &mut mem), Ok(0));
    }

    #[test]
    fn copy_start_before_queue_init_fails_as_the_driver_does() {
        let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
        let mut c = abi::DmaQueueCopyStart { eng_id: 0, qid: 0, tx_desc_count: 1, rx_desc_count: 1 };
        assert_eq!(call(&mut m, abi::DMA_QUEUE_COPY_START, &mut c, &mut mem), errno(Errno::EPERM));
        assert_logged(&m, "never initialised (DMA_QUEUE_INIT)");
        // With nothing to count against, the zero RX count reaches the BUG_ON.
        let mut c = abi::DmaQueueCopyStart { eng_id: 0, qid: 0, tx_desc_count: 0, rx_desc_count: 0 };
        assert_bug(call(&mut m, abi::DMA_QUEUE_COPY_START, &mut c, &mut mem), "num == 0", "udma/udma_main.c");
    }

    #[test]
    fn copy_start_counts_and_ids_are_checked_against_the_queue() {
        let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
        with_queue(&mut m, &mut mem, 64);
        for (tx, rx) in [(65, 1), (1, 65)] {
            let mut c = abi::DmaQueueCopyStart { eng_id: 0, qid: 0, tx_desc_count: tx, rx_desc_count: rx };
            assert_eq!(call(&mut m, abi::DMA_QUEUE_COPY_START, &mut c, &mut mem), errno(Errno::EPERM));
        }
        let mut c = abi::DmaQueueCopyStart { eng_id: 132, qid: 0, tx_desc_count: 1, rx_desc_count: 1 };
        assert_eq!(call(&mut m, abi::DMA_QUEUE_COPY_START, &mut c, &mut mem), errno(Errno::EINVAL));
        let mut c = abi::DmaQueueCopyStart { eng_id: 0, qid: 16, tx_desc_count: 1, rx_desc_count: 1 };
        assert_eq!(call(&mut m, abi::DMA_QUEUE_COPY_START, &mut c, &mut mem), errno(Errno::EPERM));
    }

    #[test]
    fn copy_start_on_a_queue_without_an_rx_ring_is_a_kernel_bug() {
        let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
        let mut q = abi::DmaQueueInit { tx_desc_count: 64, rx_desc_count: 64, ..Default::default() };
        assert_eq!(call(&mut m, abi::DMA_QUEUE_INIT, &mut q, &mut mem), Ok(0));
        let mut c = abi::DmaQueueCopyStart { eng_id: 0, qid: 0, tx_desc_count: 1, rx_desc_count: 1 };
        assert_bug(call(&mut m, abi::DMA_QUEUE_COPY_START, &mut c, &mut mem), "NULL", "neuron_ring.c");
    }

    #[test]
    fn bds_with_the_wrong_ring_id_are_a_warning() {
        let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
        let (tx, _) = with_queue(&mut m, &mut mem, 64);
        let off = m.chunk(tx).unwrap().offset;
        // BD 0 with ring id 1 (the first lap's), BD 1 with ring id 0.
        m.file().map().u32_at(off).unwrap().store(1 << 24, Ordering::Release);
        m.file().map().u32_at(off + 16).unwrap().store(0, Ordering::Release);
        let mut c = abi::DmaQueueCopyStart { eng_id: 0, qid: 0, tx_desc_count: 1, rx_desc_count: 1 };
        assert_eq!(call(&mut m, abi::DMA_QUEUE_COPY_START, &mut c, &mut mem), Ok(0));
        assert!(!m.log.iter().any(|l| l.text.contains("TX: BD")), "{:?}", m.log);
        assert_eq!(call(&mut m, abi::DMA_QUEUE_COPY_START, &mut c, &mut mem), Ok(0));
        assert_logged(&m, "TX: BD 1 has ring id 0, the lap's is 1");
        assert_eq!(m.kernel_bugs().count(), 0);
    }

    /// A host chunk of `size` bytes: its handle and `pa`.
    fn alloc(m: &mut Model, mem: &mut VecMem, size: u64) -> (u64, u64) {
        let ptr = mem.base + 0x100;
        let mut a = abi::MemAllocV2Mt { size, host_memory: 1, mem_handle: ptr, ..Default::default() };
        assert_eq!(call(m, abi::MEM_ALLOC_V2MT, &mut a, mem), Ok(0));
        let h = mem.u64_at(ptr);
        let mut i = abi::MemGetExtendedInfo { version: 1, mem_handle: h, ..Default::default() };
        assert_eq!(call(m, abi::MEM_GET_EXTENDED_INFO, &mut i, mem), Ok(0));
        (h, i.pa)
    }

    /// Write BD `i` of the ring in chunk `ring`: `len` bytes at `addr`, ring id `id`.
    fn put_bd(m: &Model, ring: u64, i: u64, len: u32, id: u8, addr: u64) {
        let off = m.chunk(ring).unwrap().offset + i * DESC_BYTES;
        let ctrl = LenCtrl::new().with_len_bytes(len).unwrap().with_ring_id(id);
        m.file().map().u32_at(off).unwrap().store(ctrl.into_bits(), Ordering::Release);
        m.file().map().u64_at(off + 8).unwrap().store(addr, Ordering::Release);
    }

    fn file_bytes(m: &Model, pa: u64, len: usize) -> Vec<u8> {
        use std::os::unix::fs::FileExt;
        let mut b = vec![0u8; len];
        m.file().file().read_exact_at(&mut b, pa - SIM_HOST_PA_BASE).unwrap();
        b
    }

    fn fill(m: &Model, pa: u64, b: &[u8]) {
        use std::os::unix::fs::FileExt;
        m.file().file().write_all_at(b, pa - SIM_HOST_PA_BASE).unwrap();
    }

    #[test]
    fn a_copy_start_moves_exactly_the_bytes_the_bds_say() {
        let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
        let (tx, rx) = with_queue(&mut m, &mut mem, 64);
        let (_, buf) = alloc(&mut m, &mut mem, 3 * 4096);
        let src: Vec<u8> = (0..4096u32).map(|i| (i * 131 % 251) as u8).collect();
        fill(&m, buf, &src);
        fill(&m, buf + 4096, &[0xEE; 8192]);
        // Two BDs each way: 1000 bytes from +0 to +4096, then 24 bytes from +1000 to +6000.
        put_bd(&m, tx, 0, 1000, 1, buf);
        put_bd(&m, tx, 1, 24, 1, buf + 1000);
        put_bd(&m, rx, 0, 1000, 1, buf + 4096);
        put_bd(&m, rx, 1, 24, 1, buf + 6000);
        let mut c = abi::DmaQueueCopyStart { eng_id: 0, qid: 0, tx_desc_count: 2, rx_desc_count: 2 };
        assert_eq!(call(&mut m, abi::DMA_QUEUE_COPY_START, &mut c, &mut mem), Ok(0));
        assert_eq!(m.violations, vec![], "{:?}", m.log);
        assert_eq!(m.dma_bytes, 1024);
        let got = file_bytes(&m, buf + 4096, 8192);
        let mut want = vec![0xEE; 8192];
        want[..1000].copy_from_slice(&src[..1000]);
        want[1904..1928].copy_from_slice(&src[1000..1024]);
        assert_eq!(got, want, "exactly the BDs' bytes, nothing around them");
        // The head advanced: DMA_QUEUE_GET_STATE says so.
        let (tp, rp) = (mem.base + 0x200, mem.base + 0x300);
        let mut st = abi::DmaQueueGetState { eng_id: 0, qid: 0, tx: tp, rx: rp };
        assert_eq!(call(&mut m, abi::DMA_QUEUE_GET_STATE, &mut st, &mut mem), Ok(0));
        for p in [tp, rp] {
            let s = abi::DmaQueueState::read_from_prefix(&mem.bytes[(p - mem.base) as usize..]).unwrap().0;
            assert_eq!((s.head_pointer, s.length), (2, 64));
        }
        // Length 0 is 65536 bytes.
        let ((_, big_src), (_, big_dst)) = (alloc(&mut m, &mut mem, 65536), alloc(&mut m, &mut mem, 65536));
        let pattern: Vec<u8> = (0..65536u32).map(|i| (i % 253) as u8).collect();
        fill(&m, big_src, &pattern);
        put_bd(&m, tx, 2, 65536, 1, big_src);
        put_bd(&m, rx, 2, 65536, 1, big_dst);
        assert_eq!(
            m.file().map().u32_at(m.chunk(tx).unwrap().offset + 32).unwrap().load(Ordering::Acquire) & 0xFFFF,
            0
        );
        let mut c = abi::DmaQueueCopyStart { eng_id: 0, qid: 0, tx_desc_count: 1, rx_desc_count: 1 };
        assert_eq!(call(&mut m, abi::DMA_QUEUE_COPY_START, &mut c, &mut mem), Ok(0));
        assert_eq!(file_bytes(&m, big_dst, 65536), pattern);
        assert_eq!(m.dma_bytes, 1024 + 65536);
        // Unequal streams: TX 32 bytes against RX 16: the 16 that fit are copied, a warning.
        put_bd(&m, tx, 3, 32, 1, buf);
        put_bd(&m, rx, 3, 16, 1, buf + 8192);
        assert_eq!(call(&mut m, abi::DMA_QUEUE_COPY_START, &mut c, &mut mem), Ok(0));
        assert_logged(&m, "the TX descriptors carry 32 bytes, the RX descriptors 16: 16 copied");
        assert_eq!(file_bytes(&m, buf + 8192, 17), [&src[..16], &[0xEE][..]].concat());
        assert_eq!(m.dma_errors, 0);
    }

    #[test]
    fn an_address_outside_the_chunks_is_a_dma_error_and_nothing_is_written() {
        let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
        let (tx, rx) = with_queue(&mut m, &mut mem, 64);
        let (_, buf) = alloc(&mut m, &mut mem, 4096);
        fill(&m, buf, &[0x5A; 4096]);
        let before = file_bytes(&m, buf, 4096);
        let end = SIM_HOST_PA_BASE | m.chunk_base.saturating_add(m.chunk_len);
        for (i, (src, dst, len)) in [
            (buf, buf + 2048, 4096u32),   // the destination runs past its chunk
            (buf, 0x1000, 16),            // a destination below every chunk
            (end, buf, 16),               // a source past the region
            (buf + 4000, buf + 100, 200), // the source runs past its chunk
            (u64::MAX - 4, buf, 16),      // the range wraps
            (buf, SIM_HOST_PA_BASE, 16),  // the file header is no chunk
        ]
        .into_iter()
        .enumerate()
        {
            let i = i as u64;
            put_bd(&m, tx, i, len, 1, src);
            put_bd(&m, rx, i, len, 1, dst);
            let mut c = abi::DmaQueueCopyStart { eng_id: 0, qid: 0, tx_desc_count: 1, rx_desc_count: 1 };
            assert_eq!(call(&mut m, abi::DMA_QUEUE_COPY_START, &mut c, &mut mem), Ok(0));
            assert_eq!(m.dma_errors as u64, i + 1, "{:?}", m.log);
        }
        assert_logged(&m, "DMA error: engine 0 queue 0 RX: BD 0 destination");
        assert_logged(&m, "is outside every chunk the driver handed out");
        assert_eq!(m.dma_bytes, 0);
        assert_eq!(file_bytes(&m, buf, 4096), before, "nothing written");
        assert_eq!(m.kernel_bugs().count(), 0);
        // A queue whose TX ring has no chunk: the descriptors cannot be fetched.
        let mut q =
            abi::DmaQueueInit { qid: 1, tx_desc_count: 64, rx_desc_count: 64, rx_handle: rx, ..Default::default() };
        assert_eq!(call(&mut m, abi::DMA_QUEUE_INIT, &mut q, &mut mem), Ok(0));
        let mut c = abi::DmaQueueCopyStart { eng_id: 0, qid: 1, tx_desc_count: 1, rx_desc_count: 1 };
        assert_eq!(call(&mut m, abi::DMA_QUEUE_COPY_START, &mut c, &mut mem), Ok(0));
        assert_logged(&m, "TX: BD 0: the queue has no ring chunk");
        // A stalled BD (wrong ring id) copies nothing either.
        put_bd(&m, tx, 6, 16, 0, buf);
        put_bd(&m, rx, 6, 16, 1, buf + 16);
        let mut c = abi::DmaQueueCopyStart { eng_id: 0, qid: 0, tx_desc_count: 1, rx_desc_count: 1 };
        assert_eq!(call(&mut m, abi::DMA_QUEUE_COPY_START, &mut c, &mut mem), Ok(0));
        // More descriptors than the model's bound: a DMA error, the positions still move.
        let n = COPY_DESCS_MAX + 16;
        let (big_tx, _) = alloc(&mut m, &mut mem, u64::from(n) * DESC_BYTES);
        let (big_rx, _) = alloc(&mut m, &mut mem, u64::from(n) * DESC_BYTES);
        let mut q = abi::DmaQueueInit {
            qid: 2,
            tx_desc_count: n,
            rx_desc_count: n,
            tx_handle: big_tx,
            rx_handle: big_rx,
            ..Default::default()
        };
        assert_eq!(call(&mut m, abi::DMA_QUEUE_INIT, &mut q, &mut mem), Ok(0));
        let mut c = abi::DmaQueueCopyStart { eng_id: 0, qid: 2, tx_desc_count: n - 1, rx_desc_count: n - 1 };
        assert_eq!(call(&mut m, abi::DMA_QUEUE_COPY_START, &mut c, &mut mem), Ok(0));
        assert_logged(&m, "descriptors in one copy start, past the model's bound");
        assert_eq!(m.queue(0, 2).map(|q| (q.tx.next, q.rx.next)), Some((n - 1, n - 1)));
        assert_logged(&m, "TX: BD 6 has ring id 0, the lap's is 1: the device stalls on it (nothing copied)");
        assert_eq!(file_bytes(&m, buf, 4096), before);
    }

    /// Hostile descriptors: random lengths, ring ids and addresses around the
    /// chunks, random counts. Nothing panics, and nothing outside the chunks
    /// handed out is written.
    #[test]
    fn random_descriptors_never_panic_or_write_outside_the_chunks() {
        let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
        let (tx, rx) = with_queue(&mut m, &mut mem, 64);
        let (_, buf) = alloc(&mut m, &mut mem, 2 * 4096);
        let (base, _) = m.file().extra_region();
        let probe_at = |m: &Model| file_bytes(m, SIM_HOST_PA_BASE | (base - 4096), 4096);
        let header = probe_at(&m);
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..500 {
            let counts = [(next() % 12) as u32, (next() % 12) as u32];
            let q = *m.queue(0, 0).unwrap();
            for (ring, side, count) in [(tx, q.tx, counts[0]), (rx, q.rx, counts[1])] {
                let (mut i, mut lap) = (side.next, side.ring_id);
                for _ in 0..count {
                    let len =
                        if next() % 2 == 0 { (next() % 0x100) as u32 + 1 } else { (next() % 0x1_0000) as u32 + 1 };
                    let addr = match next() % 8 {
                        0 => SIM_HOST_PA_BASE | (base - 4096 + next() % 0x2000),
                        1 => next(),
                        2 => buf.wrapping_sub(next() % 0x100),
                        _ => buf + next() % 0x2000,
                    };
                    let id = if next() % 16 == 0 { lap as u8 ^ 1 } else { lap as u8 };
                    put_bd(&m, ring, u64::from(i), len, id, addr);
                    i += 1;
                    if i == 64 {
                        (i, lap) = (0, (lap + 1) % 4);
                    }
                }
            }
            let mut c =
                abi::DmaQueueCopyStart { eng_id: 0, qid: 0, tx_desc_count: counts[0], rx_desc_count: counts[1] };
            let _ = call(&mut m, abi::DMA_QUEUE_COPY_START, &mut c, &mut mem);
        }
        assert!(m.dma_bytes > 0 && m.dma_errors > 0, "{} bytes, {} DMA errors", m.dma_bytes, m.dma_errors);
        assert_eq!(probe_at(&m), header, "the page before the chunk region was written");
        assert_eq!(m.kernel_bugs().filter(|v| !v.to_string().contains("num == 0")).count(), 0);
    }

    /// Messages name the errno (what a user reads first) and its number.
    #[test]
    fn errnos_are_named_in_messages() {
        let all = [
            (Errno::EPERM, "EPERM"),
            (Errno::ENOENT, "ENOENT"),
            (Errno::EFAULT, "EFAULT"),
            (Errno::EINVAL, "EINVAL"),
            (Errno::ENOMEM, "ENOMEM"),
            (Errno::EACCES, "EACCES"),
            (Errno::E2BIG, "E2BIG"),
            (Errno::ENOSYS, "ENOSYS"),
            (Errno::ENODEV, "ENODEV"),
            (Errno::EIO, "EIO"),
            (Errno(libc::ENOTTY), "ENOTTY"),
        ];
        for (e, name) in all {
            assert_eq!(e.name(), name);
            assert_eq!(e.to_string(), format!("{name} ({})", e.0));
        }
        assert_eq!(Errno(libc::EXDEV).name(), "errno");
        assert_eq!(Errno::EINVAL.to_string(), "EINVAL (22)");
    }

    /// The ring-size bounds of `udma_q_init_validate` (udma/udma_main.c) at
    /// their edges, and the DRAM channel bound per arch (v2 2, v3 4).
    #[test]
    fn ring_size_and_dram_channel_edges() {
        let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
        // The largest ring passes (no chunk: a warning), 16 more is refused.
        let mut q = abi::DmaQueueInit { tx_desc_count: 16_777_200, rx_desc_count: 32, ..Default::default() };
        assert_eq!(call(&mut m, abi::DMA_QUEUE_INIT, &mut q, &mut mem), Ok(0));
        let mut q = abi::DmaQueueInit { qid: 1, tx_desc_count: 16_777_216, rx_desc_count: 32, ..Default::default() };
        assert_eq!(call(&mut m, abi::DMA_QUEUE_INIT, &mut q, &mut mem), errno(Errno::EINVAL));
        for (arch, last) in [(Arch::Sunda, 1u32), (Arch::Cayman, 3)] {
            let (mut m, mut mem) = (model(arch, 2), VecMem::new());
            let ptr = mem.base + 0x40;
            let mut a = abi::MemAllocV2Mt { size: 4096, dram_channel: last, mem_handle: ptr, ..Default::default() };
            assert_eq!(call(&mut m, abi::MEM_ALLOC_V2MT, &mut a, &mut mem), Ok(0), "{arch:?} channel {last}");
            let mut a = abi::MemAllocV2Mt { size: 4096, dram_channel: last + 1, mem_handle: ptr, ..Default::default() };
            assert_eq!(call(&mut m, abi::MEM_ALLOC_V2MT, &mut a, &mut mem), errno(Errno::EINVAL), "{arch:?}");
        }
    }

    #[test]
    fn queue_init_rules() {
        let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
        let mut q = abi::DmaQueueInit { tx_desc_count: 40, rx_desc_count: 64, ..Default::default() };
        assert_eq!(call(&mut m, abi::DMA_QUEUE_INIT, &mut q, &mut mem), errno(Errno::EPERM));
        let mut q = abi::DmaQueueInit { tx_desc_count: 16, rx_desc_count: 64, ..Default::default() };
        assert_eq!(call(&mut m, abi::DMA_QUEUE_INIT, &mut q, &mut mem), errno(Errno::EINVAL));
        // RX fails after TX was set up: TX stays initialised (udma_q_init, TX then RX).
        let mut q = abi::DmaQueueInit { eng_id: 1, tx_desc_count: 64, rx_desc_count: 16, ..Default::default() };
        assert_eq!(call(&mut m, abi::DMA_QUEUE_INIT, &mut q, &mut mem), errno(Errno::EINVAL));
        assert_eq!(m.queue(1, 0).map(|q| (q.tx.size, q.rx.size)), Some((64, 0)));
        let mut q = abi::DmaQueueInit { qid: 16, tx_desc_count: 64, rx_desc_count: 64, ..Default::default() };
        assert_eq!(call(&mut m, abi::DMA_QUEUE_INIT, &mut q, &mut mem), errno(Errno::EINVAL));
        let mut q = abi::DmaQueueInit { eng_id: 132, tx_desc_count: 64, rx_desc_count: 64, ..Default::default() };
        assert_eq!(call(&mut m, abi::DMA_QUEUE_INIT, &mut q, &mut mem), errno(Errno::EINVAL));
        // An unknown handle is no ring (a warning, not an error).
        let mut q = abi::DmaQueueInit { tx_desc_count: 64, rx_desc_count: 64, rx_handle: 999, ..Default::default() };
        assert_eq!(call(&mut m, abi::DMA_QUEUE_INIT, &mut q, &mut mem), Ok(0));
        assert_logged(&m, "invalid RX memory handle 999");
        assert_eq!(m.queue(0, 0).unwrap().rx.chunk, None);
        // A completion ring is refused.
        let (tx, _) = with_queue(&mut m, &mut mem, 64);
        let mut q = abi::DmaQueueInit { tx_desc_count: 64, rx_desc_count: 64, rxc_handle: tx, ..Default::default() };
        assert_eq!(call(&mut m, abi::DMA_QUEUE_INIT, &mut q, &mut mem), errno(Errno::EPERM));
    }

    #[test]
    fn only_the_opener_may_init_queues_rings_and_write_the_bar() {
        let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
        let mut q = abi::DmaQueueInit { tx_desc_count: 64, rx_desc_count: 64, ..Default::default() };
        let mut b = q.as_bytes().to_vec();
        assert_eq!(m.handle(PID + 1, abi::DMA_QUEUE_INIT.code(), &mut b, &mut mem), errno(Errno::EACCES));
        m.close(PID);
        assert_eq!(call(&mut m, abi::DMA_QUEUE_INIT, &mut q, &mut mem), errno(Errno::EACCES));
        assert_logged(&m, "pid not attached");
    }

    fn nq(dev: u32, ty: u32, eng: u32, size: u32) -> abi::NotificationsInitV2 {
        abi::NotificationsInitV2 {
            nq_dev_id: dev,
            nq_type: ty,
            engine_index: eng,
            size,
            on_host_memory: 1,
            ..Default::default()
        }
    }

    #[test]
    fn notification_rings_are_the_devices_and_slots_stay_in_the_block() {
        let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
        let mut a = nq(1, nq_type::NOTIFY, 4, 1024);
        assert_eq!(call(&mut m, abi::NOTIFICATIONS_INIT_V2, &mut a, &mut mem), Ok(0));
        assert_eq!(a.mmap_offset, m.file().layout().ring_offset(1, 4).unwrap());
        assert!(m.mmap_allowed(a.mmap_offset, 1024));
        assert!(!m.mmap_allowed(a.mmap_offset, 2048));
        // nq id = type * 16 + index must stay below 96.
        let mut a = nq(0, nq_type::NOTIFY, 80, 1024);
        assert_eq!(call(&mut m, abi::NOTIFICATIONS_INIT_V2, &mut a, &mut mem), errno(Errno::EINVAL));
        assert_logged(&m, "MAX_NQ_SUPPORTED (96)");
        let mut a = nq(0, nq_type::TRACE, 96, 1024);
        assert_eq!(call(&mut m, abi::NOTIFICATIONS_INIT_V2, &mut a, &mut mem), errno(Errno::EINVAL));
        // Slot 95 of type 0 is in the block: a ring the device never writes, from the pool.
        let mut a = nq(0, nq_type::TRACE, 95, 1024);
        assert_eq!(call(&mut m, abi::NOTIFICATIONS_INIT_V2, &mut a, &mut mem), Ok(0));
        assert!(a.mmap_offset >= m.file().extra_region().0);
        // Freeing a ring's handle is allowed (a warning), and forgets the ring.
        let mut f = abi::MemFree { mem_handle: a.mem_handle };
        assert_eq!(call(&mut m, abi::MEM_FREE, &mut f, &mut mem), Ok(0));
        assert_logged(&m, "is a notification ring");
        // Size a power of two; core in range.
        let mut a = nq(0, nq_type::NOTIFY, 5, 1000);
        assert_eq!(call(&mut m, abi::NOTIFICATIONS_INIT_V2, &mut a, &mut mem), errno(Errno::EINVAL));
        assert_logged(&m, "not a power of 2");
        let mut a = nq(2, nq_type::NOTIFY, 5, 1024);
        assert_eq!(call(&mut m, abi::NOTIFICATIONS_INIT_V2, &mut a, &mut mem), errno(Errno::EINVAL));
        // The device's ring size is the device's (sim).
        let mut a = nq(0, nq_type::NOTIFY, 6, 2048);
        assert_eq!(call(&mut m, abi::NOTIFICATIONS_INIT_V2, &mut a, &mut mem), errno(Errno::EINVAL));
        assert_logged(&m, "G-DRV-RINGSIZE");
        let mut a = abi::NotificationsInitV2 { nq_dev_type: 7, ..nq(0, nq_type::NOTIFY, 4, 1024) };
        assert_eq!(call(&mut m, abi::NOTIFICATIONS_INIT_V2, &mut a, &mut mem), errno(Errno::ENOSYS));
    }

    #[test]
    fn a_ring_keeps_its_chunk_unless_realloc_is_forced() {
        let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
        let mut a = nq(0, nq_type::NOTIFY, 12, 4096);
        assert_eq!(call(&mut m, abi::NOTIFICATIONS_INIT_V2, &mut a, &mut mem), Ok(0));
        let first = a.mmap_offset;
        let mut b = nq(0, nq_type::NOTIFY, 12, 8192);
        assert_eq!(call(&mut m, abi::NOTIFICATIONS_INIT_V2, &mut b, &mut mem), Ok(0));
        assert_eq!(b.mmap_offset, first);
        assert_logged(&m, "keeps its 4096 bytes");
        let mut r = abi::NotificationsInitWithReallocV2 {
            nq_type: nq_type::NOTIFY,
            engine_index: 12,
            size: 8192,
            on_host_memory: 1,
            force_alloc_mem: 1,
            ..Default::default()
        };
        assert_eq!(call(&mut m, abi::NOTIFICATIONS_INIT_WITH_REALLOC_V2, &mut r, &mut mem), Ok(0));
        assert_eq!(m.chunk(r.mem_handle).map(|c| c.size), Some(8192));
    }

    #[test]
    fn semaphores_index_and_core_bounds_and_the_kickoff_word() {
        let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
        let mut s = abi::SemaphoreArg { nc_id: 0, semaphore_index: 256, value: 1 };
        assert_eq!(call(&mut m, abi::SEMAPHORE_INCREMENT, &mut s, &mut mem), errno(Errno::EINVAL));
        let mut s = abi::SemaphoreArg { nc_id: 2, semaphore_index: 0, value: 1 };
        assert_eq!(call(&mut m, abi::SEMAPHORE_INCREMENT, &mut s, &mut mem), errno(Errno::E2BIG));
        let mut s = abi::SemaphoreArg { nc_id: 1, semaphore_index: 1, value: 1 };
        assert_eq!(call(&mut m, abi::SEMAPHORE_INCREMENT, &mut s, &mut mem), Ok(0));
        assert_eq!(m.file().sema_incr(1, 1).unwrap().load(Ordering::Acquire), 1);
        // The index is a u16 in the driver: 65536 + 1 is semaphore 1.
        let mut s = abi::SemaphoreArg { nc_id: 1, semaphore_index: 65537, value: 2 };
        assert_eq!(call(&mut m, abi::SEMAPHORE_INCREMENT, &mut s, &mut mem), Ok(0));
        assert_eq!(m.file().sema_incr(1, 1).unwrap().load(Ordering::Acquire), 3);
        let mut s = abi::SemaphoreArg { nc_id: 1, semaphore_index: 1, value: 0 };
        assert_eq!(call(&mut m, abi::SEMAPHORE_READ, &mut s, &mut mem), Ok(0));
        assert_eq!(s.value, 3);
        // v3 has 8 cores: nc_id 7 is valid (not simulated: accepted, noted).
        let (mut m3, mut mem3) = (model(Arch::Cayman, 2), VecMem::new());
        let mut s = abi::SemaphoreArg { nc_id: 7, semaphore_index: 0, value: 1 };
        assert_eq!(call(&mut m3, abi::SEMAPHORE_INCREMENT, &mut s, &mut mem3), Ok(0));
        // The event ioctls do not check nc_id (a warning), but their index.
        let mut e = abi::SemaphoreArg { nc_id: 9, semaphore_index: 3, value: 1 };
        assert_eq!(call(&mut m, abi::EVENT_SET, &mut e, &mut mem), Ok(0));
        assert_logged(&m, "does not check it");
        let mut e = abi::SemaphoreArg { nc_id: 0, semaphore_index: 257, value: 1 };
        assert_eq!(call(&mut m, abi::EVENT_SET, &mut e, &mut mem), errno(Errno::EINVAL));
    }

    fn bar(m: &mut Model, mem: &mut VecMem, read: bool, addrs: &[u64], data: &[u32]) -> Answer {
        let (a_ptr, d_ptr) = (mem.base + 0x100, mem.base + 0x800);
        let ab: Vec<u8> = addrs.iter().flat_map(|a| a.to_le_bytes()).collect();
        let db: Vec<u8> = data.iter().flat_map(|d| d.to_le_bytes()).collect();
        mem.put(a_ptr, &ab);
        mem.put(d_ptr, &db);
        let w = abi::BarRwWire { bar: 0, address: a_ptr, data: d_ptr, count: addrs.len() as u32, ..Default::default() };
        let mut b = w.as_bytes().to_vec();
        let code = if read { abi::BAR_READ.code() } else { abi::BAR_WRITE.code() };
        m.handle(PID, code, &mut b, mem)
    }

    #[test]
    fn bar_writes_land_in_the_device_and_tail_increments_are_refused() {
        let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
        let pa = simabi::SIM_BAR0_PA;
        let head = nrt_core::arch::nq_head_register(Arch::Sunda, 0, 4).unwrap();
        assert_eq!(bar(&mut m, &mut mem, false, &[pa + head], &[7]), Ok(0));
        assert_eq!(m.file().bar_u32(head).unwrap().load(Ordering::Acquire), 7);
        assert_eq!(bar(&mut m, &mut mem, true, &[pa + head], &[0]), Ok(0));
        assert_eq!(mem.bytes[0x800..0x804], 7u32.to_le_bytes());
        for reg in [0x38u64, 0x28, 0x2C, 0x44, 0x48] {
            let q3_s2m = layout::udma_base(Arch::Sunda, 2) + 0x2_1000 + 3 * 0x1000 + reg;
            assert_eq!(bar(&mut m, &mut mem, false, &[pa + q3_s2m], &[1]), errno(Errno::EINVAL), "0x{reg:x}");
        }
        assert_logged(&m, "tail-pointer increment (drtp_inc)");
        // An earlier register of the same call is written before the refusal.
        let tail = layout::udma_base(Arch::Sunda, 0) + 0x1000 + 0x38;
        assert_eq!(bar(&mut m, &mut mem, false, &[pa + head, pa + tail], &[9, 1]), errno(Errno::EINVAL));
        assert_eq!(m.file().bar_u32(head).unwrap().load(Ordering::Acquire), 9);
        let len = m.file().layout().bar_len;
        assert_eq!(bar(&mut m, &mut mem, false, &[pa + len + 4], &[1]), errno(Errno::EINVAL));
        assert_bug(bar(&mut m, &mut mem, false, &[pa + len - 2], &[1]), "past the BAR mapping", "v2/neuron_dhal_v2.c");
        assert_bug(bar(&mut m, &mut mem, true, &[pa - 4], &[0]), "outside BAR0", "neuron_fw_io.c");
        let many = vec![pa + head; 101];
        assert_eq!(bar(&mut m, &mut mem, true, &many, &[]), errno(Errno::EINVAL));
        let w = abi::BarRwWire { bar: 0, address: 0xdead_0000, data: 0, count: 1, ..Default::default() };
        let mut b = w.as_bytes().to_vec();
        assert_eq!(m.handle(PID, abi::BAR_READ.code(), &mut b, &mut mem), errno(Errno::EFAULT));
    }

    #[test]
    fn the_status_window_serves_the_header() {
        let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
        let w = simabi::SIM_BAR0_PA + simabi::status_window(Arch::Sunda);
        m.file().line(Line::Hbm, 1).unwrap().store(1201, Ordering::Release);
        m.file().mark_ready(0x1234_5678_9ABC);
        let hb = m.file().heartbeat_ns();
        let addrs = [
            w + simabi::status_line_offset(Line::Hbm, 1),
            w + simabi::STATUS_CLOCK_ORIGIN,
            w + simabi::STATUS_CLOCK_ORIGIN + 4,
            w + simabi::STATUS_HEARTBEAT,
            w + simabi::STATUS_HEARTBEAT + 4,
            w + simabi::STATUS_MODEL_CORES,
            w + simabi::STATUS_MODEL_RING_ENTRIES,
        ];
        assert_eq!(bar(&mut m, &mut mem, true, &addrs, &[0; 7]), Ok(0));
        let words: Vec<u32> =
            mem.bytes[0x800..0x81C].chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect();
        assert_eq!(words, [1201, 0x5678_9ABC, 0x1234, hb as u32, (hb >> 32) as u32, 2, 64]);
    }

    #[test]
    fn memory_handles() {
        let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
        let ptr = mem.base + 0x40;
        let mut a = abi::MemAllocV2Mt { size: 5000, host_memory: 1, mem_handle: ptr, ..Default::default() };
        assert_eq!(call(&mut m, abi::MEM_ALLOC_V2MT, &mut a, &mut mem), Ok(0));
        let h = mem.u64_at(ptr);
        let mut i = abi::MemGetExtendedInfo { mem_handle: h, version: 1, ..Default::default() };
        assert_eq!(call(&mut m, abi::MEM_GET_EXTENDED_INFO, &mut i, &mut mem), Ok(0));
        assert_eq!((i.size, i.host_memory, i.pid), (8192, 1, u64::from(PID)));
        assert_eq!(i.mmap_offset, m.file().extra_region().0);
        assert!(m.mmap_allowed(i.mmap_offset, 8192));
        // A bad handle: MEM_GET_EXTENDED_INFO "succeeds" with +EINVAL; MEM_FREE refuses.
        let mut bad = abi::MemGetExtendedInfo { mem_handle: 777, ..Default::default() };
        assert_eq!(call(&mut m, abi::MEM_GET_EXTENDED_INFO, &mut bad, &mut mem), Ok(22));
        let mut f = abi::MemFree { mem_handle: 777 };
        assert_eq!(call(&mut m, abi::MEM_FREE, &mut f, &mut mem), errno(Errno::EINVAL));
        let mut f = abi::MemFree { mem_handle: h };
        assert_eq!(call(&mut m, abi::MEM_FREE, &mut f, &mut mem), Ok(0));
        assert_eq!(call(&mut m, abi::MEM_FREE, &mut f, &mut mem), errno(Errno::EINVAL));
        // An unwritable handle pointer: freed again, 8 bytes "not copied" returned.
        let mut a = abi::MemAllocV2Mt { size: 4096, host_memory: 1, mem_handle: 8, ..Default::default() };
        assert_eq!(call(&mut m, abi::MEM_ALLOC_V2MT, &mut a, &mut mem), Ok(8));
        let mut a = abi::MemAllocV2Mt { size: 4096, dram_channel: 2, mem_handle: ptr, ..Default::default() };
        assert_eq!(call(&mut m, abi::MEM_ALLOC_V2MT, &mut a, &mut mem), errno(Errno::EINVAL));
        let mut a = abi::MemAllocV2Mt { size: 1 << 40, mem_handle: ptr, ..Default::default() };
        assert_eq!(call(&mut m, abi::MEM_ALLOC_V2MT, &mut a, &mut mem), errno(Errno::ENOMEM));
    }

    #[test]
    fn identity_version_reset_and_core_locks() {
        let (mut m, mut mem) = (model(Arch::Cayman, 2), VecMem::new());
        let mut d = abi::DeviceInfo::default();
        assert_eq!(call(&mut m, abi::DEVICE_INFO, &mut d, &mut mem), Ok(0));
        assert_eq!((d.architecture, d.bar_address[0]), (3, simabi::SIM_BAR0_PA));
        assert_eq!(d.bar_size[0], m.file().layout().bar_len);
        let mut v = abi::CompatibleVersion::default();
        assert_eq!(call(&mut m, abi::COMPATIBLE_VERSION, &mut v, &mut mem), Ok(0));
        assert_eq!((v.max, v.min), (11, 10));
        let mut i = abi::DriverInfo::default();
        assert_eq!(call(&mut m, abi::DRIVER_INFO_GET, &mut i, &mut mem), Ok(0));
        assert_eq!((i.architecture, i.size, i.feature_flags1), (3, 24, 0xFF));
        let mut c = abi::Crwl { nc_id: 8, ..Default::default() };
        assert_eq!(call(&mut m, abi::CRWL_READER_ENTER, &mut c, &mut mem), errno(Errno::EINVAL));
        let mut c = abi::Crwl { nc_id: 1, ..Default::default() };
        assert_eq!(call(&mut m, abi::CRWL_READER_EXIT, &mut c, &mut mem), errno(Errno::EINVAL));
        assert_eq!(call(&mut m, abi::CRWL_READER_ENTER, &mut c, &mut mem), Ok(0));
        assert_eq!(call(&mut m, abi::CRWL_READER_EXIT, &mut c, &mut mem), Ok(0));
        let mut r = abi::NcReset { nc_map: 3, request_id: 0 };
        assert_eq!(call(&mut m, abi::NC_RESET, &mut r, &mut mem), Ok(0));
        assert_eq!(r.request_id, PID);
        let mut w = abi::NcResetReady { request_id: PID, result: 9 };
        assert_eq!(call(&mut m, abi::NC_RESET_READY, &mut w, &mut mem), Ok(0));
        assert_eq!(w.result, 0);
        let mut w = abi::NcResetReady { request_id: 1, result: 0 };
        assert_eq!(call(&mut m, abi::NC_RESET_READY, &mut w, &mut mem), Ok(0));
        assert_ne!(w.result, 0);
    }

    #[test]
    fn unknown_requests_and_short_arguments_are_refused() {
        let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
        let mut b = vec![0u8; 64];
        assert_eq!(m.handle(PID, 0xC008_4EFF, &mut b, &mut mem), errno(Errno::EINVAL));
        let mut short = vec![0u8; 4];
        assert_eq!(m.handle(PID, abi::DEVICE_INFO.code(), &mut short, &mut mem), errno(Errno::EFAULT));
        assert_eq!(arg_size(abi::BAR_READ.code()), Some(32));
        assert_eq!(arg_size(abi::NOTIFICATIONS_INIT_WITH_REALLOC_V2.code()), Some(56));
        for (_, code, name) in abi::ALL_REQUESTS {
            assert!(arg_size(code).is_some(), "{name}");
        }
    }

    /// A hostile caller: random argument bytes for every request, random
    /// pointers. Nothing panics; the model stays usable.
    #[test]
    fn random_arguments_never_panic() {
        let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for i in 0..4000 {
            let (_, code, _) = abi::ALL_REQUESTS[i % abi::ALL_REQUESTS.len()];
            let mut b: Vec<u8> = (0..arg_size(code).unwrap()).map(|_| next() as u8).collect();
            // Half the time, small counts and pointers into the caller's memory.
            if i % 2 == 0 {
                for (k, w) in b.chunks_exact_mut(8).enumerate() {
                    let v = if k % 2 == 0 { next() % 300 } else { mem.base + next() % 0x1100 };
                    w.copy_from_slice(&v.to_le_bytes());
                }
            }
            let _ = m.handle(PID, code, &mut b, &mut mem);
        }
        let mut d = abi::DeviceInfo::default();
        assert_eq!(call(&mut m, abi::DEVICE_INFO, &mut d, &mut mem), Ok(0));
    }
}
