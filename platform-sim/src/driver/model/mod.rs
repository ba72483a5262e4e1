//! The driver's state and rules: what `/dev/neuronN` answers to each ioctl.
//!
//! [`Model::handle`] is a pure state machine over the device file of
//! [`crate::shm`] and the calling process's memory, [`TargetMem`]. The
//! supervisor copies the argument struct in; the model parses it once into a
//! typed [`Request`], checks it as the driver does, changes its state and the
//! device's words; the supervisor copies the struct back. Nothing here trusts
//! the caller: every index is bounds-checked, every pointer is read through
//! [`TargetMem`], every count is capped before anything is allocated.
//!
//! One model serves every process under one `nrt-sim driver`, as one driver
//! serves a host: core range marks, CRWL writers, NC resets and the rings they
//! destroy are shared.
//!
//! Each rule carries the id of its row in `docs/driver-conformance.md`, such
//! as `CRWL-3`, and names the public driver's file and function it comes from.
//! A call ends in one of four ways:
//!
//! - the driver's **errno**, [`Refusal::Errno`], or the positive value the
//!   driver returns on a few paths;
//! - a **kernel BUG**, where the driver would hit `BUG_ON` or dereference what
//!   it never checked: [`Violation::KernelBug`] and [`Refusal::KernelBug`];
//!   `--strict` fails the run at once;
//! - a **conformance violation**, something the driver performs unchecked that
//!   a runtime must not do: [`Violation::Conformance`]; the call is served and
//!   `--strict` fails the run at its end;
//! - a **warning**, something the driver accepts but the device or a correct
//!   program would not do: [`Violation::Warning`], never fatal.
//!
//! One module per family of requests: [`memory`] for chunks; [`dma`] for
//! queues, copy start and ack; [`notify`] for NQ rings; [`cores`] for CRWL,
//! range marks and resets; [`bar`] for BAR reads and writes and the
//! simulator's hint query; [`sema`] for semaphores and events; [`ds`] for the
//! datastore; [`fops`] for `mmap` and the file operations the driver has none
//! of. [`request`] parses a request.

pub mod bar;
pub mod cores;
pub mod dma;
pub mod ds;
pub mod fops;
pub mod memory;
pub mod notify;
pub mod request;
pub mod sema;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use nrt_abi::ioctl as abi;
use nrt_core::arch::Arch;

use crate::shm::ShmFile;

pub use bar::blocked_register;
pub use cores::{CoreLock, RESET_PENDING};
pub use dma::{CopyFault, Queue, QueueSide, COPY_BYTES_MAX, COPY_DESCS_MAX};
pub use fops::{MmapCall, NoFop, OpenMode};
pub use memory::{Chunk, ChunkKind, Chunks, SIM_HOST_PA_BASE};
pub use notify::NqRing;
pub use request::{arg_size, Request};

/// An errno value, positive as `errno` holds it.
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
    /// `EIO`: the answer to a call that oopsed the simulated kernel.
    pub const EIO: Errno = Errno(libc::EIO);
    /// `EBUSY`: cores held by another process, a lock not given up in time.
    pub const EBUSY: Errno = Errno(libc::EBUSY);
    /// `EALREADY`: this process already switched the core to that model.
    pub const EALREADY: Errno = Errno(libc::EALREADY);
    /// `ENOTSUPP`, the kernel's 524: a hook the arch does not have.
    pub const ENOTSUPP: Errno = Errno(abi::ENOTSUPP);

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
            libc::EBUSY => "EBUSY",
            libc::EALREADY => "EALREADY",
            abi::ENOTSUPP => "ENOTSUPP",
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
    /// The real driver would `BUG_ON` or dereference an unchecked pointer here.
    KernelBug {
        /// The rule in one line, with its table id.
        rule: String,
        /// The driver file it comes from.
        driver_file: &'static str,
    },
    /// Performed by the driver unchecked, but a runtime must not do it; the
    /// call is served, and a `--strict` run fails at its end.
    Conformance {
        /// What happened, with its table id.
        rule: String,
        /// Where the rule comes from: a driver file and the device map.
        source: &'static str,
    },
    /// Accepted by the driver, but not what the device expects; never fatal.
    Warning {
        /// What happened, with its table id.
        rule: String,
        /// Where the rule comes from: a driver file, or `sim`.
        source: &'static str,
    },
}

impl Violation {
    /// Whether this is a kernel BUG.
    pub fn is_kernel_bug(&self) -> bool {
        matches!(self, Violation::KernelBug { .. })
    }

    /// Whether this is a conformance violation.
    pub fn is_conformance(&self) -> bool {
        matches!(self, Violation::Conformance { .. })
    }
}

impl core::fmt::Display for Violation {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Violation::KernelBug { rule, driver_file } => write!(f, "kernel BUG: {rule} ({driver_file})"),
            Violation::Conformance { rule, source } => write!(f, "conformance violation: {rule} ({source})"),
            Violation::Warning { rule, source } => write!(f, "warning: {rule} ({source})"),
        }
    }
}

/// Why a call was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The driver returns this errno.
    Errno(Errno),
    /// The driver would oops; the violation is also in [`Model::violations`].
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

// ---- The driver's numbers, each with its file ----

// DMA engines per device, queues per engine and the ring size bounds are the
// argument rules' numbers: in `nrt_abi::rules`, where kani proves the rules,
// with their files.
pub use nrt_abi::rules::{DMA_ENGINES, DMA_QUEUES, UDMA_MAX_Q_SIZE, UDMA_MIN_Q_SIZE};
/// Ring start and end alignment, bytes. driver: udma/udma.h, `UDMA_QUEUE_ADDR_BYTE_ALIGNMENT`.
pub const UDMA_ALIGN: u64 = 256;
/// Bytes of one descriptor, `union udma_desc`.
pub const DESC_BYTES: u64 = 16;
/// The first lap's ring id. driver: udma/udma.h, `UDMA_INITIAL_RING_ID`.
pub const INITIAL_RING_ID: u32 = 1;
/// Semaphores per core. driver: v2|v3/address_map.h, `V2_SEMAPHORE_COUNT`, `V3_SEMAPHORE_COUNT`.
pub const SEMAPHORE_COUNT: u32 = 256;
/// Events per core. driver: v2/address_map.h, `V2_EVENTS_COUNT`.
pub const EVENT_COUNT: u32 = 256;
/// NQ ids per core, `MAX_NQ_TYPE * MAX_NQ_ENGINE` = 6 * 16. driver: neuron_core.h.
pub const MAX_NQ_SUPPORTED: u32 = 96;
/// NQ slots per type. driver: v2/address_map.h, `V2_MAX_NQ_QUEUES`.
pub const NQ_QUEUES_PER_TYPE: u32 = 16;
/// Cores the allocator and CRWL accept. driver: neuron_device.h, `MAX_NC_PER_DEVICE`.
pub const MAX_NC_PER_DEVICE: u32 = abi::MAX_NC_PER_DEVICE;
/// Registers one BAR_READ may read. driver: neuron_fw_io.h, `FW_IO_MAX_READLESS_READ_REGISTER_COUNT`.
pub const BAR_READ_MAX: u32 = 100;
/// The largest `kmalloc` the BAR ioctls' address and data arrays may need,
/// `KMALLOC_MAX_SIZE` on x86-64 with 4 KiB pages; larger is `ENOMEM`.
pub const KMALLOC_MAX: u64 = 4 << 20;
/// Every feature bit the driver reports, bits 0..=7. driver: share/neuron_driver_shared.h.
pub const DRIVER_FEATURES: u64 = 0xFF;

// Cores per device the driver knows for `arch`, in `nrt_abi::rules`.
pub use nrt_abi::rules::nc_per_device;

// HBM channels of a device, in `nrt_abi::devmap`.
pub use nrt_abi::devmap::dram_channels;

/// One line of the model's log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogLine {
    /// The caller's thread group id.
    pub pid: u32,
    /// The request's name.
    pub request: &'static str,
    /// What happened.
    pub text: String,
}

/// What the driver keeps per attached process: its open descriptors.
/// driver: neuron_pid.c, `struct neuron_attached_process`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Process {
    /// Descriptors of the device it holds open.
    pub opens: u32,
    /// Whether one of them is a write-only "free access" descriptor, whose
    /// flush gives back the process's core range marks: `ncdev_misc_flush`.
    pub free_access: bool,
}

/// The driver's state for one device, and its global table of range marks,
/// which spans every device.
#[derive(Debug)]
pub struct Model {
    file: Arc<ShmFile>,
    arch: Arch,
    /// Cores the device simulates, the layout's; the driver knows more.
    sim_cores: u8,
    /// The simulator's hint query is answered; else refused as a real driver does.
    hints: bool,
    /// Every chunk handed out: MEM_ALLOC_V2MT, NQ rings, datastores.
    pub(crate) chunks: Chunks,
    queues: BTreeMap<(u32, u32), Queue>,
    nq: BTreeMap<(u32, u32), NqRing>,
    procs: BTreeMap<u32, Process>,
    opens: u32,
    crwl: [CoreLock; MAX_NC_PER_DEVICE as usize],
    /// `ncrwl_range_pids[]`: the process that marked each core, 0 when free.
    range_pids: Vec<u32>,
    /// Reset requests not yet waited for, `nr.req_pending_head`, by id.
    resets: BTreeSet<u32>,
    /// Whether each core's DMA and its H2T ring are initialised, `dmar_init_done`.
    dmar_init_done: [bool; MAX_NC_PER_DEVICE as usize],
    datastore: ds::Datastore,
    /// Every refusal, warning and kernel BUG, in order.
    pub log: Vec<LogLine>,
    /// Every violation, kernel BUGs and warnings, in order.
    pub violations: Vec<Violation>,
    /// Requests served, by name.
    pub calls: BTreeMap<&'static str, u32>,
    /// Calls refused with an errno.
    pub refusals: u32,
    /// Bytes the executed copies moved. G-DRV-COPY.
    pub dma_bytes: u64,
    /// Copies the device refused as DMA errors, such as an address outside the chunks.
    pub dma_errors: u32,
    /// The device's copy fault, if played. G-DRV-COPY-FAULT.
    copy_fault: Option<CopyFault>,
    /// Copy starts of data on a process's own rings, counted for `copy_fault`.
    data_copy_starts: u32,
}

/// A call's outcome: the ioctl's return value, or why it was refused.
pub type Answer = Result<i64, Refusal>;

impl Model {
    /// The driver for the device in `file`; `MEM_ALLOC_V2MT` chunks come from
    /// [`ShmFile::extra_region`].
    pub fn new(file: Arc<ShmFile>) -> Model {
        let l = *file.layout();
        let (chunk_base, chunk_len) = file.extra_region();
        let mut m = Model {
            file,
            arch: l.arch,
            sim_cores: l.cores,
            hints: true,
            chunks: Chunks::new(chunk_base, chunk_len),
            queues: BTreeMap::new(),
            nq: BTreeMap::new(),
            procs: BTreeMap::new(),
            opens: 0,
            crwl: [CoreLock::default(); MAX_NC_PER_DEVICE as usize],
            range_pids: vec![0; (abi::MAX_NEURON_DEVICE_COUNT * abi::MAX_NC_PER_DEVICE) as usize],
            resets: BTreeSet::new(),
            dmar_init_done: [false; MAX_NC_PER_DEVICE as usize],
            datastore: ds::Datastore::default(),
            log: Vec::new(),
            violations: Vec::new(),
            calls: BTreeMap::new(),
            refusals: 0,
            dma_bytes: 0,
            dma_errors: 0,
            copy_fault: None,
            data_copy_starts: 0,
        };
        // ndmar_init at probe: every core's DMA and H2T ring. driver: neuron_ring.c, ndmar_init_ncs.
        m.dma_init_cores(abi::NC_MAP_DEVICE);
        m
    }

    /// The same model playing a real driver: the simulator's hint query is
    /// refused with `EINVAL` as an unknown misc request, so a host runs with
    /// only what the driver gives.
    pub fn without_hints(mut self) -> Model {
        self.hints = false;
        self
    }

    /// The same model over a device that acknowledges copies it did not make;
    /// `None`: every copy made.
    pub fn with_copy_fault(mut self, fault: Option<CopyFault>) -> Model {
        self.copy_fault = fault;
        self
    }

    /// The device file.
    pub fn file(&self) -> &Arc<ShmFile> {
        &self.file
    }

    /// The architecture the model plays.
    pub fn arch(&self) -> Arch {
        self.arch
    }

    /// `open("/dev/neuronN", O_RDWR)` by process `pid`: the process is attached.
    /// driver: neuron_cdev.c, `ncdev_open` calls `npid_attach`.
    pub fn open(&mut self, pid: u32) {
        self.opens = self.opens.saturating_add(1);
        let p = self.procs.entry(pid).or_default();
        p.opens = p.opens.saturating_add(1);
    }

    /// `open("/dev/neuronN", O_WRONLY)` by `pid`: a "free access" descriptor,
    /// not attached, whose flush gives back every core range mark of the
    /// process, RANGE-6. driver: neuron_cdev.c, `IS_NEURON_DEVICE_FREE_ACCESS`.
    pub fn open_free_access(&mut self, pid: u32) {
        self.opens = self.opens.saturating_add(1);
        self.procs.entry(pid).or_default().free_access = true;
    }

    /// Whether `pid` has the device open, `npid_is_attached`. G-DRV-ATTACH.
    pub fn attached(&self, pid: u32) -> bool {
        self.procs.get(&pid).is_some_and(|p| p.opens > 0)
    }

    /// Process `pid` is gone, by exit or by closing its last descriptor: what
    /// the driver's `ncdev_flush` does for a process's last descriptor, in its
    /// order, FLUSH-1..6; at the last attached process, the device's release,
    /// DS-5. driver: neuron_cdev.c, `ncdev_flush`, `ncdev_release`.
    ///
    /// `close` is not trapped, G-DRV-MMAP: the supervisor calls this when it
    /// learns the process exited.
    pub fn process_gone(&mut self, pid: u32) {
        let Some(p) = self.procs.remove(&pid) else { return };
        const WHAT: &str = "(process gone)";
        // FLUSH-1: a reset requested and never waited for is consumed.
        // driver: neuron_reset.c, nr_wait.
        self.resets.remove(&pid);
        // FLUSH-2: its queues on engines below dma_eng_per_nd, but H2T and NX,
        // go back to the dummy ring. driver: neuron_ring.c, ndmar_handle_process_exit.
        self.repoint_queues_of(pid);
        // FLUSH-3, CRWL-14. driver: neuron_crwl.c, ncrwl_release_current_process.
        self.crwl_release_process(pid);
        // FLUSH-4, DS-4. driver: neuron_ds.c, neuron_ds_release_pid.
        self.ds_release(pid, pid);
        // FLUSH-5: its chunks are freed, with a warning for each a queue the
        // flush did not re-point still uses as a ring, since the device keeps
        // DMA-ing into it. driver: neuron_mempool.c, mpset_free_expired_mc.
        let freed: Vec<u64> = self.chunks.handles_where(|c| c.pid == pid && c.kind == ChunkKind::User);
        for (k, q) in self.queues.clone() {
            for side in [q.tx, q.rx] {
                if let Some(h) = side.chunk.filter(|h| freed.contains(h)) {
                    self.warn(
                        pid,
                        WHAT,
                        format!(
                            "FLUSH-5: chunk {h} freed while DMA queue (engine {}, queue {}) is still programmed on it: \
                             the flush re-points only engines below {} and not the H2T or NX queues \
                             (ndmar_handle_process_exit), so the device may DMA into freed memory",
                            k.0,
                            k.1,
                            dma::dma_eng_per_nd(self.arch)
                        ),
                        "neuron_ring.c: ndmar_handle_process_exit; neuron_mempool.c: mpset_free_expired_mc",
                    );
                }
            }
        }
        let oops: Vec<u64> = freed.iter().copied().filter(|h| self.chunks.host_scratchpad.contains(h)).collect();
        for h in oops {
            // MEMF-6 at the flush's free, mc_free.
            let _ = self.bug(
                pid,
                WHAT,
                &format!(
                    "MEMF-6: chunk {h} is host memory allocated as CONTIGUOUS_SCRATCHPAD_DEVICE (mem_type 19): the \
                     flush's free dereferences the NULL pool pointer mc->mp"
                ),
                "neuron_mempool.c: mc_free",
            );
        }
        self.chunks.retain(|c| !(c.pid == pid && c.kind == ChunkKind::User));
        // DS-5: the last attached process gone is the device's last release.
        if !self.procs.values().any(|p| p.opens > 0) {
            self.ds_clear_all();
        }
        // FLUSH-6, RANGE-6: range marks go back only through a write-only
        // descriptor. driver: neuron_cdev.c, ncdev_misc_flush.
        let marked: Vec<usize> =
            self.range_pids.iter().enumerate().filter(|(_, p)| **p == pid).map(|(i, _)| i).collect();
        if p.free_access {
            for i in marked {
                self.range_pids[i] = 0;
            }
        } else if !marked.is_empty() {
            self.warn(
                pid,
                WHAT,
                format!(
                    "RANGE-6: cores {marked:?} stay marked for pid {pid} after it is gone: the driver gives range \
                     marks back only at the flush of a write-only descriptor, or with CRWL_NC_RANGE_UNMARK"
                ),
                "neuron_cdev.c: ncdev_flush, ncdev_misc_flush",
            );
        }
    }

    /// Opens of the device made so far, the summary's count.
    pub fn opens(&self) -> u32 {
        self.opens
    }

    /// Whether a read-write shared `mmap` of `len` bytes at `offset` maps by
    /// the rules of [`Model::mmap`], without logging anything.
    pub fn mmap_allowed(&self, offset: u64, len: u64) -> bool {
        let call =
            MmapCall { offset, len, prot: (libc::PROT_READ | libc::PROT_WRITE) as u64, flags: libc::MAP_SHARED as u64 };
        matches!(self.mmap_verdict(call, OpenMode::RDWR), fops::MmapVerdict::Maps)
    }

    /// The chunk of `handle`.
    pub fn chunk(&self, handle: u64) -> Option<&Chunk> {
        self.chunks.get(handle)
    }

    /// The queue `(eng, qid)`, if ever initialised.
    pub fn queue(&self, eng: u32, qid: u32) -> Option<&Queue> {
        self.queues.get(&(eng, qid))
    }

    /// The CRWL state of core `nc`.
    pub fn core_lock(&self, nc: u32) -> Option<&CoreLock> {
        self.crwl.get(nc as usize)
    }

    /// The process that marked core `nc`; 0 for none.
    pub fn range_holder(&self, nc: u32) -> u32 {
        self.range_pids.get(nc as usize).copied().unwrap_or(0)
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

    /// A positive return the driver gives where it meant an error, logged.
    fn positive(&mut self, pid: u32, request: &'static str, v: i64, rule: &str, file: &'static str) -> Answer {
        self.note(pid, request, format!("returns {v} (positive, not an errno): {rule} ({file})"));
        Ok(v)
    }

    fn bug(&mut self, pid: u32, request: &'static str, rule: &str, driver_file: &'static str) -> Answer {
        let v = Violation::KernelBug { rule: format!("{request}: {rule}"), driver_file };
        self.note(pid, request, v.to_string());
        self.violations.push(v.clone());
        Err(Refusal::KernelBug(v))
    }

    fn violate(&mut self, pid: u32, request: &'static str, rule: String, source: &'static str) {
        let v = Violation::Conformance { rule: format!("{request}: {rule}"), source };
        self.note(pid, request, v.to_string());
        self.violations.push(v);
    }

    /// The conformance violations so far.
    pub fn conformance_violations(&self) -> impl Iterator<Item = &Violation> {
        self.violations.iter().filter(|v| v.is_conformance())
    }

    fn warn(&mut self, pid: u32, request: &'static str, rule: String, source: &'static str) {
        let v = Violation::Warning { rule: format!("{request}: {rule}"), source };
        self.note(pid, request, v.to_string());
        self.violations.push(v);
    }

    fn new_handle(&mut self, c: Chunk) -> u64 {
        let h = self.chunks.take_handle();
        self.chunks.insert(h, c);
        h
    }

    /// The driver's answer when the argument struct of `code` cannot be copied
    /// in, GEN-3: `copy_from_user`'s count of bytes not copied as a positive
    /// value on most paths, `EACCES` on the DMA-queue-init path. `readable` is
    /// how many leading bytes could be read. driver: neuron_cdev.c,
    /// `ncdev_dma_queue_init`.
    pub fn copy_in_failed(&mut self, pid: u32, code: u32, readable: usize) -> Answer {
        let name = abi::request_name(code).unwrap_or("NEURON_IOCTL_(unknown)");
        // DEVICE_GET_ALL_APPS_INFO copies its header first, APPS-1.
        let size = if code == abi::DEVICE_GET_ALL_APPS_INFO.code() {
            Some(core::mem::size_of::<abi::AppsInfoHeader>())
        } else {
            arg_size(code)
        };
        let Some(size) = size else {
            return self.refuse(
                pid,
                name,
                Errno::EINVAL,
                "GEN-2: a request the driver does not define",
                "neuron_cdev.c",
            );
        };
        if code == abi::GET_LOGICAL_TO_PHYSICAL_NC_MAP.code() && self.arch == Arch::Sunda {
            // MAP-1 comes before the copy in.
            return self.refuse(
                pid,
                name,
                Errno::ENOTSUPP,
                "MAP-1: the v2 dhal has no logical-to-physical map",
                "neuron_cdev.c: ncdev_get_logical_to_physical_nc_map",
            );
        }
        if code == abi::DMA_QUEUE_INIT.code() {
            return self.refuse(
                pid,
                name,
                Errno::EACCES,
                "GEN-3: the argument struct could not be copied in (this path answers EACCES)",
                "neuron_cdev.c: ncdev_dma_queue_init",
            );
        }
        let left = size.saturating_sub(readable) as i64;
        self.positive(pid, name, left, "GEN-3: copy_from_user left these bytes uncopied", "neuron_cdev.c")
    }

    /// Serve request `code` for process `pid`: `arg` holds the [`arg_size`]
    /// bytes of the argument struct, copied in by the caller and copied back
    /// after; `mem` is the caller's memory for the pointers inside it. `Ok(v)`
    /// is the ioctl's return value, positive in the few places the driver
    /// returns one where it meant an errno; those are logged.
    pub fn handle(&mut self, pid: u32, code: u32, arg: &mut [u8], mem: &mut dyn TargetMem) -> Answer {
        self.handle_on(pid, code, false, arg, mem)
    }

    /// [`Model::handle`] on a descriptor of a given mode. `free_access` is a
    /// write-only descriptor, on which `ncdev_ioctl` hands every request to
    /// `ncdev_misc_ioctl` before it reads the argument: anything but a
    /// [`request::is_misc`] request is `EINVAL`, GEN-4. driver: neuron_cdev.c,
    /// `IS_NEURON_DEVICE_FREE_ACCESS`.
    pub fn handle_on(
        &mut self,
        pid: u32,
        code: u32,
        free_access: bool,
        arg: &mut [u8],
        mem: &mut dyn TargetMem,
    ) -> Answer {
        let name = abi::request_name(code).unwrap_or("NEURON_IOCTL_(unknown)");
        *self.calls.entry(name).or_insert(0) += 1;
        if free_access && !request::is_misc(code) {
            return self.refuse(
                pid,
                name,
                Errno::EINVAL,
                "GEN-4: a write-only (free access) descriptor reaches only the misc requests",
                "neuron_cdev.c: ncdev_ioctl, ncdev_misc_ioctl",
            );
        }
        let mut req = match Request::parse(code, arg) {
            Ok(r) => r,
            Err(request::ParseError::Unknown) => {
                return self.refuse(
                    pid,
                    name,
                    Errno::EINVAL,
                    &format!("GEN-2: request 0x{code:08X} is not one the driver serves (its invalid-IOCTL default)"),
                    "neuron_cdev.c: ncdev_misc_ioctl",
                )
            }
            Err(request::ParseError::Short) => {
                return self.refuse(
                    pid,
                    name,
                    Errno::EFAULT,
                    "GEN-3: the argument struct could not be copied in",
                    "neuron_cdev.c",
                )
            }
        };
        // GEN-1: ncdev_ioctl: these need a process that has the device open,
        // npid_is_attached. G-DRV-ATTACH.
        if req.needs_attach() && !self.attached(pid) {
            return self.refuse(
                pid,
                name,
                Errno::EACCES,
                "GEN-1: the calling process did not open the device (pid not attached)",
                "neuron_cdev.c: ncdev_ioctl",
            );
        }
        let answer = self.dispatch(pid, name, &mut req, mem);
        req.store(arg);
        answer
    }

    fn dispatch(&mut self, pid: u32, name: &'static str, req: &mut Request, mem: &mut dyn TargetMem) -> Answer {
        use Request as R;
        match req {
            R::DeviceInfo(d) => self.device_info(d),
            R::DeviceBasicInfo(d) => {
                // INFO-2: ncdev_device_basic_info.
                *d = abi::DeviceBasicInfo { architecture: u32::from(self.arch.arch_type()), revision: 0 };
                Ok(0)
            }
            R::DriverInfo(d) => {
                // INFO-3: ncdev_driver_info.
                *d = abi::DriverInfo {
                    architecture: u32::from(self.arch.arch_type()),
                    revision: 0,
                    version: 0,
                    size: core::mem::size_of::<abi::DriverInfo>() as u32,
                    feature_flags1: DRIVER_FEATURES,
                };
                Ok(0)
            }
            R::CompatibleVersion(v) => {
                // INFO-4: ncdev_compatible_version.
                *v = nrt_abi::rules::compatible_version(self.arch);
                Ok(0)
            }
            R::CrwlReaderEnter(c) => self.crwl_reader_enter(pid, name, c),
            R::CrwlReaderExit(c) => self.crwl_reader_exit(pid, name, c),
            R::CrwlWriterEnter(c) => self.crwl_writer_enter(pid, name, c),
            R::CrwlWriterDowngrade(c) => self.crwl_writer_downgrade(pid, name, c),
            R::RangeMark(m) => {
                // The driver works on the 512-bit form and copies back the first 24 bytes.
                let mut ext = abi::CrwlNcMapExt {
                    nc_count: m.nc_count,
                    start_nc_index: m.start_nc_index,
                    end_nc_index: m.end_nc_index,
                    max_nc_available: m.max_nc_available,
                    bitmap: [m.bitmap, 0, 0, 0, 0, 0, 0, 0],
                };
                let r = self.range_mark(pid, name, &mut ext);
                m.max_nc_available = ext.max_nc_available;
                m.bitmap = ext.bitmap[0];
                r
            }
            R::RangeMarkExt(m) => self.range_mark(pid, name, m),
            R::RangeUnmark(m) => self.range_unmark(pid, &[m.bitmap]),
            R::RangeUnmarkExt(m) => self.range_unmark(pid, &m.bitmap),
            R::PidStateDump(d) => self.pid_state_dump(pid, name, d),
            R::NcReset(r) => self.nc_reset(pid, name, r),
            R::NcResetReady(r) => self.nc_reset_ready(pid, name, r),
            R::MemAlloc(a) => self.mem_alloc(pid, name, a, mem),
            R::MemInfo(i) => self.mem_info(pid, name, i),
            R::MemFree(f) => self.mem_free(pid, name, f),
            R::DmaQueueInit(q) => self.queue_init(pid, name, q),
            R::DmaQueueRelease(_) => {
                // DMAR-1: ndmar_queue_release does nothing and returns 0: the
                // queue stays programmed on its rings until the process is gone,
                // FLUSH-2. driver: neuron_ring.c.
                Ok(0)
            }
            R::DmaCopyStart(c) => self.copy_start(pid, name, c),
            R::DmaAck(a) => self.ack_completed(pid, name, a),
            R::DmaGetState(s) => self.queue_state(pid, name, s, mem),
            R::Semaphore(code, s) => self.semaphore(pid, name, *code, s),
            R::Event(code, e) => self.event(pid, name, *code, e),
            R::NqInit(a) => {
                let (off, h) = self.nq_init(
                    pid,
                    name,
                    (a.nq_dev_id, a.nq_dev_type, a.nq_type, a.engine_index, a.size, a.on_host_memory),
                    false,
                )?;
                a.mmap_offset = off;
                a.mem_handle = h;
                Ok(0)
            }
            R::NqInitRealloc(a) => {
                let (off, h) = self.nq_init(
                    pid,
                    name,
                    (a.nq_dev_id, a.nq_dev_type, a.nq_type, a.engine_index, a.size, a.on_host_memory),
                    a.force_alloc_mem != 0,
                )?;
                a.mmap_offset = off;
                a.mem_handle = h;
                Ok(0)
            }
            R::NqQueueInfo(_) => self.refuse(
                pid,
                name,
                Errno::EPERM,
                "NQI-1: the driver answers this request with a bare -1, always",
                "neuron_cdev.c: ncdev_ioctl",
            ),
            R::BarRead(w) => self.bar_read(pid, name, w, mem),
            R::BarWrite(w) => self.bar_write(pid, name, w, mem),
            R::ResourceMmapInfo(_) => self.refuse(
                pid,
                name,
                Errno::EINVAL,
                "RES-1: no special resource is mapped by the simulated device (G-DRV-RESOURCE)",
                "neuron_mmap.c",
            ),
            R::AcquireDs(d) => self.ds_acquire(pid, name, d),
            R::ReleaseDs(d) => {
                // DS-3: neuron_ds_release_pid: pid 0 is the caller; only the owner's release counts.
                let target = if d.pid == 0 { pid } else { d.pid as u32 };
                self.ds_release(pid, target);
                Ok(0)
            }
            R::NcMap(a) => self.nc_map(pid, name, a, mem),
            R::SimHints(h) => self.sim_hints(pid, name, h),
        }
    }

    fn device_info(&mut self, d: &mut abi::DeviceInfo) -> Answer {
        // INFO-1: BAR0 and BAR2 addresses and sizes. driver: neuron_cdev.c, ncdev_device_info.
        *d = abi::DeviceInfo { architecture: u32::from(self.arch.arch_type()), ..abi::DeviceInfo::default() };
        d.bar_address[0] = nrt_abi::sim::SIM_BAR0_PA;
        d.bar_size[0] = self.file.layout().bar_len;
        Ok(0)
    }
}
