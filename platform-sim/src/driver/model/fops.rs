//! The device node's file operations besides `ioctl`: `mmap`, and the calls
//! `ncdev_fops` has no entry for, which the kernel's VFS answers by itself:
//! read, write and their vector and positioned forms, `ftruncate`,
//! `fallocate`. driver: neuron_mmap.c, `ncdev_mmap`, `nmmap_mem`;
//! neuron_cdev.c, `ncdev_fops`.
//!
//! The supervisor traps these only on descriptors it installed in its
//! reserved range of numbers, G-DRV-MMAP; the rules here are pure.

use super::memory::ChunkKind;
use super::{Errno, Model, Refusal};
use crate::shm::PAGE;

/// What `mmap` and the VFS log a refusal under.
const MMAP: &str = "mmap";

/// How a descriptor of the device was opened: the `O_ACCMODE` bits of its
/// open flags, 0 read-only, 1 write-only, 2 read-write, 3 neither. The
/// kernel's `OPEN_FMODE` gives `FMODE_READ` for 0 and 2, `FMODE_WRITE` for 1
/// and 2; include/linux/fs.h.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenMode(pub u8);

impl OpenMode {
    /// `O_RDWR`: what a descriptor the supervisor did not install is served as. G-DRV-DUP.
    pub const RDWR: OpenMode = OpenMode(2);

    /// The mode of open flags `flags`.
    pub fn from_flags(flags: u64) -> OpenMode {
        OpenMode((flags & libc::O_ACCMODE as u64) as u8)
    }

    /// `FMODE_READ`.
    pub fn readable(self) -> bool {
        ((self.0 & 3) + 1) & 1 != 0
    }

    /// `FMODE_WRITE`.
    pub fn writable(self) -> bool {
        ((self.0 & 3) + 1) & 2 != 0
    }

    /// The `O_WRONLY` bit. driver: neuron_cdev.c, `IS_NEURON_DEVICE_FREE_ACCESS`.
    pub fn free_access(self) -> bool {
        self.0 & libc::O_WRONLY as u8 != 0
    }
}

/// A call on a device descriptor that `ncdev_fops` has no entry for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoFop {
    /// `read`, `readv`; `pread64`, `preadv`, `preadv2` with their position.
    Read {
        /// The position of a positioned read; `None` for `read` and `readv`.
        pos: Option<i64>,
    },
    /// `write`, `writev`; `pwrite64`, `pwritev`, `pwritev2` with their position.
    Write {
        /// The position of a positioned write.
        pos: Option<i64>,
    },
    /// `ftruncate`.
    Ftruncate,
    /// `fallocate` with its offset and length.
    Fallocate {
        /// `offset`.
        offset: i64,
        /// `len`.
        len: i64,
    },
}

impl NoFop {
    /// The system call's name, for the log.
    pub fn name(self) -> &'static str {
        match self {
            NoFop::Read { pos: None } => "read",
            NoFop::Read { pos: Some(_) } => "pread",
            NoFop::Write { pos: None } => "write",
            NoFop::Write { pos: Some(_) } => "pwrite",
            NoFop::Ftruncate => "ftruncate",
            NoFop::Fallocate { .. } => "fallocate",
        }
    }

    /// The kernel's errno for this call on a device descriptor of mode `mode`,
    /// FOPS-1..4 in docs/driver-conformance.md.
    pub fn errno(self, mode: OpenMode) -> Errno {
        // A negative position is refused before the descriptor is looked at.
        // fs/read_write.c: ksys_pread64, ksys_pwrite64, do_preadv, do_pwritev.
        let negative = |pos: Option<i64>| pos.is_some_and(|p| p < 0);
        match self {
            // FOPS-1: no FMODE_READ is EBADF; no FMODE_CAN_READ, for no .read
            // and no .read_iter, is EINVAL. fs/read_write.c: vfs_read, vfs_readv.
            NoFop::Read { pos } if negative(pos) => Errno::EINVAL,
            NoFop::Read { .. } if !mode.readable() => Errno(libc::EBADF),
            NoFop::Read { .. } => Errno::EINVAL,
            // FOPS-2: vfs_write / vfs_writev, the same with FMODE_WRITE.
            NoFop::Write { pos } if negative(pos) => Errno::EINVAL,
            NoFop::Write { .. } if !mode.writable() => Errno(libc::EBADF),
            NoFop::Write { .. } => Errno::EINVAL,
            // FOPS-3: not a regular file is EINVAL. fs/open.c: do_ftruncate.
            NoFop::Ftruncate => Errno::EINVAL,
            // FOPS-4: a bad range EINVAL, no FMODE_WRITE EBADF, neither a
            // regular file nor a block device ENODEV. fs/open.c: vfs_fallocate.
            NoFop::Fallocate { offset, len } if offset < 0 || len <= 0 => Errno::EINVAL,
            NoFop::Fallocate { .. } if !mode.writable() => Errno(libc::EBADF),
            NoFop::Fallocate { .. } => Errno::ENODEV,
        }
    }
}

/// One `mmap` of a device descriptor, as the caller passed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MmapCall {
    /// `offset`, the device file offset an ioctl handed out.
    pub offset: u64,
    /// `length`.
    pub len: u64,
    /// `prot`.
    pub prot: u64,
    /// `flags`.
    pub flags: u64,
}

const fn page_up(v: u64) -> u64 {
    v.div_ceil(PAGE).saturating_mul(PAGE)
}

/// What the driver does with one `mmap`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum MmapVerdict {
    /// It maps exactly `[offset, offset + len)` of the device file.
    Maps,
    /// It refuses: the errno, the rule, its source.
    Refused(Errno, String, &'static str),
    /// It maps something else than asked, which the supervisor cannot: refused
    /// with EPERM, a conformance violation.
    Elsewhere(String),
    /// It oopses.
    Bug(String),
}

/// The driver's functions `mmap` goes through.
const F: &str = "neuron_mmap.c: nmmap_get_mc, nmap_dm_special, nmmap_dm_root";

impl Model {
    /// `mmap` of a device descriptor of mode `mode` by `pid`: `Ok` when the
    /// driver maps exactly the device file's `[offset, offset + len)`, which
    /// the supervisor then lets the kernel map; else the errno the caller
    /// gets, or a kernel BUG. MMAP-1..6 in docs/driver-conformance.md.
    pub fn mmap(&mut self, pid: u32, m: MmapCall, mode: OpenMode) -> Result<(), Refusal> {
        match self.mmap_verdict(m, mode) {
            MmapVerdict::Maps => Ok(()),
            MmapVerdict::Refused(e, rule, file) => self.refuse(pid, MMAP, e, &rule, file).map(|_| ()),
            MmapVerdict::Elsewhere(rule) => {
                self.violate(pid, MMAP, rule, "neuron_mmap.c: nmmap_mem, nmmap_dm_mc");
                self.refusals = self.refusals.saturating_add(1);
                Err(Refusal::Errno(Errno::EPERM))
            }
            MmapVerdict::Bug(rule) => self.bug(pid, MMAP, &rule, "neuron_mmap.c: nmmap_get_mc").map(|_| ()),
        }
    }

    /// The driver's verdict on `m` from a descriptor of mode `mode`, nothing logged.
    pub(super) fn mmap_verdict(&self, m: MmapCall, mode: OpenMode) -> MmapVerdict {
        // MMAP-1: the kernel's checks before any f_op->mmap: an offset that
        // is not a multiple of the page, 0 bytes, no mapping type: EINVAL.
        // mm/mmap.c: ksys_mmap_pgoff, do_mmap; arch sys_mmap.
        let kind = m.flags & libc::MAP_TYPE as u64;
        let shared = kind == libc::MAP_SHARED as u64 || kind == libc::MAP_SHARED_VALIDATE as u64;
        if !m.offset.is_multiple_of(PAGE) || m.len == 0 || !(shared || kind == libc::MAP_PRIVATE as u64) {
            let rule = format!(
                "MMAP-1: offset {:#x}, {} bytes, mapping type {kind:#x}: the kernel refuses it before the driver",
                m.offset, m.len
            );
            return MmapVerdict::Refused(Errno::EINVAL, rule, "mm/mmap.c: do_mmap");
        }
        // MMAP-2: do_mmap: a descriptor not open for reading, or a shared
        // writable mapping of one not open for writing: EACCES.
        if !mode.readable() || (shared && m.prot & libc::PROT_WRITE as u64 != 0 && !mode.writable()) {
            let rule = format!("MMAP-2: a descriptor opened with O_ACCMODE {} cannot be mapped so", mode.0);
            return MmapVerdict::Refused(Errno::EACCES, rule, "mm/mmap.c: do_mmap");
        }
        let size = page_up(m.len);
        // MMAP-3: nmmap_get_mc looks up the chunk *holding* the offset with
        // mpset_search_mc. With none, EPERM: no special resource is served
        // here, G-DRV-RESOURCE, and nmmap_dm_root maps raw device memory only
        // with CAP_SYS_RAWIO, which the model never grants, G-DRV-MMAP.
        let Some((h, c)) = self.chunks.file_range(m.offset, 1).and_then(|h| Some((h, *self.chunks.get(h)?))) else {
            let rule = format!("MMAP-3: offset {:#x} is in no chunk an ioctl handed out", m.offset);
            return MmapVerdict::Refused(Errno::EPERM, rule, F);
        };
        // mc_alloc_internal rounds every chunk up to whole pages.
        let chunk_size = page_up(c.size);
        let scratchpad = c.kind == ChunkKind::User && self.chunks.scratchpad.contains(&h);
        if scratchpad && c.host {
            // MMAP-6, MEMF-6: a contiguous-scratchpad chunk's mapping reads
            // mc->mp->main_pool_end_addr; a host chunk's mp is NULL.
            return MmapVerdict::Bug(format!(
                "MMAP-6: chunk {h} is host memory allocated as CONTIGUOUS_SCRATCHPAD_DEVICE (mem_type 19): its mapping \
                 dereferences the NULL pool pointer mc->mp"
            ));
        }
        let (base, len) = self.chunks.region();
        let fits = if scratchpad {
            // MMAP-6: a device scratchpad mapping may run past its chunk, to the pool's end.
            c.offset.checked_add(size).is_some_and(|e| e <= base.saturating_add(len))
        } else {
            size == chunk_size
        };
        if !fits {
            // MMAP-4: any other length than the chunk's whole pages falls
            // to nmap_dm_special and then nmmap_dm_root: EPERM.
            let rule = format!(
                "MMAP-4: {} bytes at {:#x}: chunk {h} is {chunk_size} bytes from {:#x}; only the whole chunk maps",
                m.len, m.offset, c.offset
            );
            return MmapVerdict::Refused(Errno::EPERM, rule, F);
        }
        if m.offset != c.offset {
            // MMAP-5: the driver remaps mc->pa, the chunk from its start,
            // whatever offset inside it was passed.
            return MmapVerdict::Elsewhere(format!(
                "MMAP-5: offset {:#x} is {:#x} bytes into chunk {h}: the driver maps the chunk from its start \
                 {:#x}, not the offset asked (refused here with EPERM: the supervisor cannot map another offset, \
                 G-DRV-MMAP)",
                m.offset,
                m.offset - c.offset,
                c.offset
            ));
        }
        MmapVerdict::Maps
    }
}
