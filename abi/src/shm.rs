//! The shared-memory device file of `nrt-sim serve --shm PATH`: NQ ring memory
//! and the BAR0 registers the host touches, in one file the simulator and a
//! host in another process both map. Layout and design: `docs/shm-file.md`.
//!
//! Invariants: the file is a memfd sealed against shrinking before anyone maps
//! it, so no mapping faults; `PATH` holds only a locator, read and never
//! mapped, checked against the header's pid and token. All words are
//! little-endian; BAR offset `r` is at file offset `bar_offset + r`.
//!
//! `unsafe` here: `memfd_create` and the seals' `fcntl`, each with its
//! `// SAFETY:` line; the mapping and the clock are [`crate::os`]'s.

#![allow(unsafe_code)]

use std::fs::{File, OpenOptions};
use std::io::{Read as _, Write as _};
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nrt_core::arch::{Arch, MAX_CORES};

use nrt_core::nq::NQ_PER_CORE;

use crate::os::{monotonic_ns, Access, SharedMap};
use crate::sim;

/// `"NRTSHM01"` as a little-endian u64.
pub const MAGIC: u64 = u64::from_le_bytes(*b"NRTSHM01");
/// Layout version: 2, a sealed memfd behind a locator.
pub const VERSION: u32 = 2;
/// `"NRTSHML1"` as a little-endian u64: the locator at the published path.
pub const LOCATOR_MAGIC: u64 = u64::from_le_bytes(*b"NRTSHML1");
/// Bytes of the locator.
pub const LOCATOR_BYTES: usize = 32;
/// The seals of the device file: no shrinking, which would fault a mapping,
/// no growing, and no later seal against writes.
const SEALS: libc::c_int = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL;
/// Temporary names tried beside the path before publishing gives up.
const TEMPORARY_TRIES: u32 = 16;
/// Page size the regions are aligned to.
pub const PAGE: u64 = 4096;
/// File offset of the ring region.
pub const RINGS_OFFSET: u64 = PAGE;
/// Bytes of the faults text in the header.
pub const FAULTS_BYTES: usize = 512;
/// A ready file whose heartbeat is older than this is stale: its server died.
pub const STALE_NS: u64 = 2_000_000_000;

mod off {
    pub const MAGIC: u64 = 0x00;
    pub const VERSION: u64 = 0x08;
    pub const ARCH: u64 = 0x0C;
    pub const CORES: u64 = 0x10;
    pub const RING_BYTES: u64 = 0x14;
    pub const RINGS_OFF: u64 = 0x18;
    pub const RINGS_LEN: u64 = 0x20;
    pub const BAR_OFF: u64 = 0x28;
    pub const BAR_LEN: u64 = 0x30;
    pub const STATE: u64 = 0x38;
    pub const SHUTDOWN: u64 = 0x3C;
    pub const ORIGIN: u64 = 0x40;
    pub const PLAYED: u64 = 0x48;
    pub const HARVESTED: u64 = 0x4C;
    pub const PID: u64 = 0x50;
    pub const SEED: u64 = 0x58;
    pub const HEARTBEAT: u64 = 0x60;
    pub const TOKEN: u64 = 0x68;
    pub const LINES: u64 = 0x80;
    pub const RESET_REQ: u64 = 0xA8;
    pub const RESET_ACK: u64 = 0xB0;
    pub const FAULTS: u64 = 0x100;
}
const _: () = assert!(off::FAULTS + FAULTS_BYTES as u64 <= RINGS_OFFSET);
const _: () = assert!(off::LINES + 8 * 5 <= off::RESET_REQ);
const _: () = assert!(off::RESET_REQ + 4 * MAX_CORES as u64 <= off::RESET_ACK);
const _: () = assert!(off::RESET_ACK + 4 * MAX_CORES as u64 <= off::FAULTS);

/// The server's state word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Being laid out.
    Initialising = 0,
    /// Playing: a host may attach and kick off.
    Ready = 1,
    /// The server exited.
    Exited = 2,
}

pub use crate::sim::Line;

/// Why a shared-memory file could not be made, opened or trusted.
#[derive(Debug)]
pub enum ShmError {
    /// An OS call failed.
    Io {
        /// What was being done.
        what: String,
        /// The error.
        error: std::io::Error,
    },
    /// The file is not, or no longer, a valid nrt-sim shared-memory file.
    Corrupt(String),
    /// A bounded wait ran out.
    Timeout(String),
}

impl core::fmt::Display for ShmError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ShmError::Io { what, error } => write!(f, "{what}: {error}"),
            ShmError::Corrupt(m) => write!(f, "not a usable nrt-sim shared-memory file: {m}"),
            ShmError::Timeout(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for ShmError {}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> ShmError {
    let what = what.into();
    move |error| ShmError::Io { what, error }
}

/// Arch from its type number.
pub fn arch_from_type(t: u32) -> Option<Arch> {
    [Arch::Sunda, Arch::Cayman, Arch::Mariana].into_iter().find(|a| u32::from(a.arch_type()) == t)
}

const fn page_up(v: u64) -> u64 {
    v.div_ceil(PAGE) * PAGE
}

/// Where everything is in the file, for one arch, core count and ring size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShmLayout {
    /// Generation.
    pub arch: Arch,
    /// Physical cores, 1 or 2.
    pub cores: u8,
    /// Bytes per NQ ring.
    pub ring_bytes: u32,
    /// File offset of the ring region.
    pub rings_offset: u64,
    /// Bytes of the ring region.
    pub rings_len: u64,
    /// File offset of the BAR region, page-aligned.
    pub bar_offset: u64,
    /// Bytes of the BAR region.
    pub bar_len: u64,
}

impl ShmLayout {
    /// The checked layout for `arch`, `cores` and rings of `ring_bytes`.
    pub fn new(arch: Arch, cores: u8, ring_bytes: u32) -> Result<ShmLayout, ShmError> {
        if !(1..=MAX_CORES as u8).contains(&cores) {
            return Err(ShmError::Corrupt(format!("cores must be 1 or 2, not {cores}")));
        }
        if !ring_bytes.is_power_of_two() || !(32..=(1 << 20)).contains(&ring_bytes) {
            return Err(ShmError::Corrupt(format!("ring size {ring_bytes} is not a power of two from 32 to 1 MiB")));
        }
        // Each ring starts on its own page for `mmap`, G-DRV-RINGPAGE.
        let rings_len = (MAX_CORES * NQ_PER_CORE) as u64 * ring_stride(ring_bytes);
        let bar_offset = RINGS_OFFSET + rings_len;
        let top = bar_registers(arch).into_iter().map(|(_, r)| r + 4).max().unwrap_or(0);
        let l = ShmLayout {
            arch,
            cores,
            ring_bytes,
            rings_offset: RINGS_OFFSET,
            rings_len,
            bar_offset,
            bar_len: page_up(top) + PAGE,
        };
        let r = l.regions();
        if r.windows(2).any(|w| w[0].2 > w[1].1) {
            return Err(ShmError::Corrupt(format!("regions overlap: {r:?}")));
        }
        Ok(l)
    }

    /// The three regions as `(name, start, end)` file offsets, in order.
    pub fn regions(&self) -> [(&'static str, u64, u64); 3] {
        [
            ("header", 0, RINGS_OFFSET),
            ("rings", self.rings_offset, self.rings_offset + self.rings_len),
            ("bar", self.bar_offset, self.bar_offset + self.bar_len),
        ]
    }

    /// File length.
    pub fn total_len(&self) -> u64 {
        self.bar_offset + self.bar_len
    }

    /// File offset of ring `(core, nq)`.
    pub fn ring_offset(&self, core: u8, nq: u8) -> Option<u64> {
        if usize::from(core) >= MAX_CORES || usize::from(nq) >= NQ_PER_CORE {
            return None;
        }
        let i = usize::from(core) * NQ_PER_CORE + usize::from(nq);
        Some(self.rings_offset + i as u64 * ring_stride(self.ring_bytes))
    }
}

/// Bytes from one ring's start to the next: a page multiple, so each ring can
/// be `mmap`ed on its own, G-DRV-RINGPAGE.
pub fn ring_stride(ring_bytes: u32) -> u64 {
    page_up(u64::from(ring_bytes))
}

/// Every BAR register the completion path uses, by name.
pub fn bar_registers(arch: Arch) -> Vec<(&'static str, u64)> {
    let mut v = Vec::new();
    for core in 0..MAX_CORES as u8 {
        for nq in 0..NQ_PER_CORE as u8 {
            v.extend(nrt_core::arch::nq_head_register(arch, core, nq).map(|r| ("nq head", r)));
        }
        for block in 0..sim::INTC_BLOCKS {
            v.extend(sim::intc_cause_offset(arch, core, block, sim::INTC_LINES - 1).map(|r| ("intc cause", r)));
        }
        let sema = sim::sema_page(arch, u32::from(core)) + sim::SEMA_INCR;
        v.push(("semaphore INCR", sema + 4 * u64::from(sim::SEMAPHORES - 1)));
    }
    v.push(("host trigger", sim::xt_local_reg(arch) + nrt_core::dma::HOST_TRIGGER_OFFSET));
    v
}

/// A read-write [`SharedMap`] of a whole file.
#[derive(Debug)]
pub struct ShmMap {
    map: SharedMap,
}

impl ShmMap {
    fn map(file: &File, len: u64, name: &str) -> Result<ShmMap, ShmError> {
        let len =
            usize::try_from(len).map_err(|_| ShmError::Corrupt(format!("{name}: {len} bytes, too large to map")))?;
        if len == 0 {
            return Err(ShmError::Corrupt(format!("{name}: an empty file")));
        }
        let map = SharedMap::map(file, 0, len, Access::ReadWrite)
            .map_err(|error| ShmError::Io { what: format!("mmap of {len} bytes of {name}"), error })?;
        Ok(ShmMap { map })
    }

    /// The 8-byte word at `off`.
    pub fn u64_at(&self, off: u64) -> Option<&AtomicU64> {
        self.map.u64_at(off)
    }

    /// The 4-byte word at `off`.
    pub fn u32_at(&self, off: u64) -> Option<&AtomicU32> {
        self.map.u32_at(off)
    }

    /// Copy `len` bytes within the mapping as a DMA engine does: relaxed
    /// atomics, then a release fence. `None` when a range is outside it.
    pub fn copy_bytes(&self, src: u64, dst: u64, len: u64) -> Option<()> {
        let n = usize::try_from(len).ok()?;
        let (from, to) = (self.map.bytes(src, n)?, self.map.bytes(dst, n)?);
        for (f, t) in from.iter().zip(to) {
            t.store(f.load(Ordering::Relaxed), Ordering::Relaxed);
        }
        std::sync::atomic::fence(Ordering::Release);
        Some(())
    }
}

/// An nrt-sim shared-memory file, mapped.
#[derive(Debug)]
pub struct ShmFile {
    file: File,
    path: PathBuf,
    layout: ShmLayout,
    map: ShmMap,
}

impl ShmFile {
    /// Create the sealed, mapped device file for `layout`, its header written
    /// and its state [`State::Initialising`]. Nothing appears at `path` until
    /// [`publish`](Self::publish).
    pub fn create(path: &Path, layout: ShmLayout, seed: u64, faults: &str) -> Result<ShmFile, ShmError> {
        ShmFile::create_with_extra(path, layout, seed, faults, 0)
    }

    /// As [`create`](Self::create), with `extra` more bytes at
    /// [`extra_region`](Self::extra_region): the driver model's region for
    /// `MEM_ALLOC_V2MT` chunks. A host checks only the layout's length.
    pub fn create_with_extra(
        path: &Path,
        layout: ShmLayout,
        seed: u64,
        faults: &str,
        extra: u64,
    ) -> Result<ShmFile, ShmError> {
        let what = |call: &str| format!("{call} (the device file for {})", path.display());
        // SAFETY: a NUL-terminated name and valid flags; the result is checked.
        let fd = unsafe { libc::memfd_create(c"nrt-sim-shm".as_ptr(), libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING) };
        if fd < 0 {
            return Err(ShmError::Io { what: what("memfd_create"), error: std::io::Error::last_os_error() });
        }
        // SAFETY: `fd` is a fresh descriptor this process owns and nothing else holds.
        let file = unsafe { File::from_raw_fd(fd) };
        let total = page_up(layout.total_len())
            .checked_add(page_up(extra))
            .ok_or_else(|| ShmError::Corrupt(format!("{extra} extra bytes: too large")))?;
        file.set_len(total).map_err(io(what("ftruncate")))?;
        // SAFETY: fcntl on a descriptor we own, with an int argument; checked.
        let rc = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_ADD_SEALS, SEALS) };
        if rc != 0 {
            return Err(ShmError::Io { what: what("F_ADD_SEALS"), error: std::io::Error::last_os_error() });
        }
        let map = ShmMap::map(&file, total, &format!("the device file for {}", path.display()))?;
        let f = ShmFile { file, path: path.to_path_buf(), layout, map };
        f.put64(off::MAGIC, MAGIC);
        f.put32(off::VERSION, VERSION);
        f.put32(off::ARCH, u32::from(layout.arch.arch_type()));
        f.put32(off::CORES, u32::from(layout.cores));
        f.put32(off::RING_BYTES, layout.ring_bytes);
        f.put64(off::RINGS_OFF, layout.rings_offset);
        f.put64(off::RINGS_LEN, layout.rings_len);
        f.put64(off::BAR_OFF, layout.bar_offset);
        f.put64(off::BAR_LEN, layout.bar_len);
        f.put32(off::PID, std::process::id());
        f.put64(off::SEED, seed);
        let token = monotonic_ns().rotate_left(29) ^ (u64::from(std::process::id()) << 32) ^ fd as u64;
        f.put64(off::TOKEN, token);
        let mut text = [0u8; FAULTS_BYTES];
        let n = faults.len().min(FAULTS_BYTES - 1);
        for (d, s) in text.iter_mut().zip(faults.as_bytes().iter().take(n)) {
            *d = *s;
        }
        for (i, w) in text.chunks_exact(4).enumerate() {
            f.put32(off::FAULTS + 4 * i as u64, u32::from_le_bytes(<[u8; 4]>::try_from(w).unwrap_or_default()));
        }
        Ok(f)
    }

    /// Mark the file ready and publish its locator, renamed into place so a
    /// host never sees half of it.
    pub fn publish(&self, origin_ns: u64) -> Result<(), ShmError> {
        self.mark_ready(origin_ns);
        let mut loc = [0u8; LOCATOR_BYTES];
        loc[0..8].copy_from_slice(&LOCATOR_MAGIC.to_le_bytes());
        loc[8..12].copy_from_slice(&std::process::id().to_le_bytes());
        loc[12..16].copy_from_slice(&(self.file.as_raw_fd() as u32).to_le_bytes());
        loc[16..24].copy_from_slice(&self.get64(off::TOKEN).to_le_bytes());
        let (tmp, mut f) = create_temporary(&self.path)?;
        let written = f.write_all(&loc).map_err(io(format!("write {}", tmp.display())));
        drop(f);
        let r = written.and_then(|()| {
            std::fs::rename(&tmp, &self.path).map_err(io(format!(
                "rename {} to {}",
                tmp.display(),
                self.path.display()
            )))
        });
        if r.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        r
    }

    /// As [`publish`](Self::publish) without a locator: the driver model hands
    /// the file out as a descriptor.
    pub fn mark_ready(&self, origin_ns: u64) {
        self.put64(off::ORIGIN, origin_ns);
        self.heartbeat();
        self.set_state(State::Ready);
    }

    /// File offset and length of the region after the layout's; 0 bytes
    /// unless made by [`create_with_extra`](Self::create_with_extra).
    pub fn extra_region(&self) -> (u64, u64) {
        let start = page_up(self.layout.total_len());
        (start, (self.map.map.len() as u64).saturating_sub(start))
    }

    /// The last heartbeat, `CLOCK_MONOTONIC` ns.
    pub fn heartbeat_ns(&self) -> u64 {
        self.get64(off::HEARTBEAT)
    }

    /// The server is alive: stamp [`monotonic_ns`] in the header.
    pub fn heartbeat(&self) {
        self.put64(off::HEARTBEAT, monotonic_ns());
    }

    /// Nanoseconds since the server's last heartbeat.
    pub fn heartbeat_age_ns(&self) -> u64 {
        monotonic_ns().saturating_sub(self.map.u64_at(off::HEARTBEAT).map_or(0, |w| w.load(Ordering::Acquire)))
    }

    /// Open a published file through its locator, checking its seals, token
    /// and header; a wrong one is [`ShmError::Corrupt`].
    pub fn open(path: &Path) -> Result<ShmFile, ShmError> {
        let (pid, fd, token) = read_locator(path)?;
        let proc = format!("/proc/{pid}/fd/{fd}");
        let file = OpenOptions::new().read(true).write(true).open(&proc).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                ShmError::Timeout(format!(
                    "{}: the server (pid {pid}) that published it is gone ({proc} does not exist): a stale file?",
                    path.display()
                ))
            } else {
                ShmError::Io { what: format!("open {proc} (the device file {} names)", path.display()), error: e }
            }
        })?;
        // SAFETY: fcntl on a descriptor we own; F_GET_SEALS takes no argument; checked.
        let seals = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GET_SEALS) };
        if seals < 0 {
            return Err(ShmError::Corrupt(format!(
                "{proc} (named by {}) is not a memfd: F_GET_SEALS failed: {}",
                path.display(),
                std::io::Error::last_os_error()
            )));
        }
        if seals & libc::F_SEAL_SHRINK == 0 {
            return Err(ShmError::Corrupt(format!(
                "{proc} (named by {}) is not sealed against shrinking (seals 0x{seals:x}): a peer could truncate it \
                 under the mapping",
                path.display()
            )));
        }
        let len = file.metadata().map_err(io(format!("fstat {proc}")))?.len();
        if len < RINGS_OFFSET {
            return Err(ShmError::Corrupt(format!("{proc} is {len} bytes, shorter than the header page")));
        }
        let head = ShmMap::map(&file, RINGS_OFFSET, &proc)?;
        let get32 = |o| head.u32_at(o).map_or(0, |w| w.load(Ordering::Acquire));
        let get64 = |o| head.u64_at(o).map_or(0, |w| w.load(Ordering::Acquire));
        if get64(off::MAGIC) != MAGIC {
            return Err(ShmError::Corrupt(format!("{proc}: bad magic 0x{:016x}", get64(off::MAGIC))));
        }
        if get32(off::VERSION) != VERSION {
            return Err(ShmError::Corrupt(format!(
                "{proc}: layout version {}, expected {VERSION}",
                get32(off::VERSION)
            )));
        }
        if (get32(off::PID), get64(off::TOKEN)) != (pid, token) {
            return Err(ShmError::Timeout(format!(
                "{}: {proc} is not the file it names (pid {}, token 0x{:x}; the locator says pid {pid}, token \
                 0x{token:x}): a stale file?",
                path.display(),
                get32(off::PID),
                get64(off::TOKEN)
            )));
        }
        let arch = arch_from_type(get32(off::ARCH))
            .ok_or_else(|| ShmError::Corrupt(format!("{proc}: unknown arch type {}", get32(off::ARCH))))?;
        let cores = u8::try_from(get32(off::CORES)).unwrap_or(0);
        let layout = ShmLayout::new(arch, cores, get32(off::RING_BYTES)).map_err(|e| match e {
            ShmError::Corrupt(m) => ShmError::Corrupt(format!("{proc}: {m}")),
            e => e,
        })?;
        let stored = (get64(off::RINGS_OFF), get64(off::RINGS_LEN), get64(off::BAR_OFF), get64(off::BAR_LEN));
        let expected = (layout.rings_offset, layout.rings_len, layout.bar_offset, layout.bar_len);
        if stored != expected {
            let table = |(a, b, c, d): (u64, u64, u64, u64)| {
                format!("rings offset 0x{a:x}, rings length 0x{b:x}, BAR offset 0x{c:x}, BAR length 0x{d:x}")
            };
            return Err(ShmError::Corrupt(format!(
                "{proc}: the header's region table ({}) does not match the layout of {} with {cores} core(s) and \
                 rings of {} bytes ({})",
                table(stored),
                arch.name(),
                layout.ring_bytes,
                table(expected)
            )));
        }
        if len < layout.total_len() {
            return Err(ShmError::Corrupt(format!("{proc} is {len} bytes, the layout needs {}", layout.total_len())));
        }
        drop(head);
        let map = ShmMap::map(&file, layout.total_len(), &proc)?;
        Ok(ShmFile { file, path: path.to_path_buf(), layout, map })
    }

    /// Wait up to `wait` for `path` to exist and be ready, then open it.
    pub fn wait_ready(path: &Path, wait: Duration) -> Result<ShmFile, ShmError> {
        let t0 = Instant::now();
        loop {
            let last = match ShmFile::open(path) {
                Ok(f) => match f.state() {
                    Some(State::Ready) if f.heartbeat_age_ns() < STALE_NS => return Ok(f),
                    Some(State::Ready) => ShmError::Timeout(format!(
                        "the server (pid {}) has not stamped its heartbeat for {:.1} s: a stale file?",
                        f.pid(),
                        f.heartbeat_age_ns() as f64 / 1e9
                    )),
                    Some(State::Exited) => {
                        return Err(ShmError::Corrupt(format!("the server (pid {}) has exited", f.pid())))
                    }
                    Some(State::Initialising) => ShmError::Timeout("the server is still initialising".into()),
                    None => {
                        return Err(ShmError::Corrupt(format!(
                            "{}: the state word holds {}, not a state (0, 1 or 2) a server writes",
                            path.display(),
                            f.state_word()
                        )))
                    }
                },
                // Wait only for a file not yet published or a transient state;
                // report any other error at once.
                Err(ShmError::Io { what, error }) if error.kind() != std::io::ErrorKind::NotFound => {
                    return Err(ShmError::Io { what, error })
                }
                Err(e @ ShmError::Corrupt(_)) => return Err(e),
                Err(e) => e,
            };
            if t0.elapsed() >= wait {
                return Err(ShmError::Timeout(format!(
                    "{} not ready after {:.1} s ({last}); is `nrt-sim serve --shm {}` running?",
                    path.display(),
                    wait.as_secs_f64(),
                    path.display()
                )));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn put32(&self, o: u64, v: u32) {
        if let Some(w) = self.map.u32_at(o) {
            w.store(v, Ordering::Release);
        }
    }

    fn put64(&self, o: u64, v: u64) {
        if let Some(w) = self.map.u64_at(o) {
            w.store(v, Ordering::Release);
        }
    }

    fn get32(&self, o: u64) -> u32 {
        self.map.u32_at(o).map_or(0, |w| w.load(Ordering::Acquire))
    }

    fn get64(&self, o: u64) -> u64 {
        self.map.u64_at(o).map_or(0, |w| w.load(Ordering::Acquire))
    }

    /// The open file, for a host to map with its own binding.
    pub fn file(&self) -> &File {
        &self.file
    }

    /// Where the file is, once published.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The layout.
    pub fn layout(&self) -> &ShmLayout {
        &self.layout
    }

    /// The whole-file mapping.
    pub fn map(&self) -> &ShmMap {
        &self.map
    }

    /// The server's state; `None` for an unknown value.
    pub fn state(&self) -> Option<State> {
        match self.get32(off::STATE) {
            0 => Some(State::Initialising),
            1 => Some(State::Ready),
            2 => Some(State::Exited),
            _ => None,
        }
    }

    /// The raw state word.
    pub fn state_word(&self) -> u32 {
        self.get32(off::STATE)
    }

    /// Set the server's state.
    pub fn set_state(&self, s: State) {
        self.put32(off::STATE, s as u32);
    }

    /// Whether the host asked the server to stop.
    pub fn shutdown_requested(&self) -> bool {
        self.get32(off::SHUTDOWN) != 0
    }

    /// Ask the server to stop.
    pub fn request_shutdown(&self) {
        self.put32(off::SHUTDOWN, 1);
    }

    /// The device clock's origin, `CLOCK_MONOTONIC` ns.
    pub fn origin_ns(&self) -> u64 {
        self.map.u64_at(off::ORIGIN).map_or(0, |w| w.load(Ordering::Acquire))
    }

    /// The seed of the device's programs.
    pub fn seed(&self) -> u64 {
        self.map.u64_at(off::SEED).map_or(0, |w| w.load(Ordering::Acquire))
    }

    /// The server's pid.
    pub fn pid(&self) -> u32 {
        self.get32(off::PID)
    }

    /// Inferences the device has played.
    pub fn played(&self) -> u32 {
        self.get32(off::PLAYED)
    }

    /// Set the played count.
    pub fn set_played(&self, n: u32) {
        self.put32(off::PLAYED, n);
    }

    /// Inferences the host has harvested.
    pub fn harvested(&self) -> u32 {
        self.get32(off::HARVESTED)
    }

    /// Count one more harvested inference.
    pub fn add_harvested(&self) {
        if let Some(w) = self.map.u32_at(off::HARVESTED) {
            w.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// The injected faults' canonical specs, separated by spaces.
    pub fn faults_text(&self) -> String {
        let bytes: Vec<u8> =
            (0..FAULTS_BYTES as u64 / 4).flat_map(|i| self.get32(off::FAULTS + 4 * i).to_le_bytes()).collect();
        let end = bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len());
        String::from_utf8_lossy(bytes.get(..end).unwrap_or(&[])).into_owned()
    }

    /// Status line `line` of `core`.
    pub fn line(&self, line: Line, core: u8) -> Option<&AtomicU32> {
        if usize::from(core) >= MAX_CORES {
            return None;
        }
        self.map.u32_at(off::LINES + 8 * line as u64 + 4 * u64::from(core))
    }

    /// The driver model's `NC_RESET` of `core`: count one more reset generation
    /// and return it; `None` past the file's cores.
    pub fn request_reset(&self, core: u8) -> Option<u32> {
        let w = self.reset_word(off::RESET_REQ, core)?;
        Some(w.fetch_add(1, Ordering::AcqRel).wrapping_add(1))
    }

    /// Core `core`'s reset generation; 0 before any reset.
    pub fn reset_requested(&self, core: u8) -> u32 {
        self.reset_word(off::RESET_REQ, core).map_or(0, |w| w.load(Ordering::Acquire))
    }

    /// The reset generation the device last acknowledged for `core`.
    pub fn reset_acknowledged(&self, core: u8) -> u32 {
        self.reset_word(off::RESET_ACK, core).map_or(0, |w| w.load(Ordering::Acquire))
    }

    /// The device reset `core` for `generation`. Release: the fresh state is
    /// visible to whoever acquires the acknowledgement.
    pub fn acknowledge_reset(&self, core: u8, generation: u32) {
        if let Some(w) = self.reset_word(off::RESET_ACK, core) {
            w.store(generation, Ordering::Release);
        }
    }

    fn reset_word(&self, base: u64, core: u8) -> Option<&AtomicU32> {
        if usize::from(core) >= MAX_CORES {
            return None;
        }
        self.map.u32_at(base + 4 * u64::from(core))
    }

    /// The BAR register at BAR0 offset `reg`, as the device sees it.
    pub fn bar_u32(&self, reg: u64) -> Option<&AtomicU32> {
        if reg.checked_add(4)? > self.layout.bar_len {
            return None;
        }
        self.map.u32_at(self.layout.bar_offset + reg)
    }

    /// The kickoff: the INCR-alias word of semaphore `index` of TPB `tpb`.
    pub fn sema_incr(&self, tpb: u32, index: u32) -> Option<&AtomicU32> {
        if tpb as usize >= MAX_CORES || index >= sim::SEMAPHORES {
            return None;
        }
        self.bar_u32(sim::sema_page(self.layout.arch, tpb) + sim::SEMA_INCR + 4 * u64::from(index))
    }
}

/// A new temporary file beside `path`, `<path>.<pid>[.<n>].tmp`, created
/// exclusively, never through a symlink, mode 0600.
fn create_temporary(path: &Path) -> Result<(PathBuf, File), ShmError> {
    let pid = std::process::id();
    let mut last = None;
    for n in 0..TEMPORARY_TRIES {
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(if n == 0 { format!(".{pid}.tmp") } else { format!(".{pid}.{n}.tmp") });
        let tmp = PathBuf::from(tmp);
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&tmp)
        {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some((tmp, e)),
            Err(e) => return Err(ShmError::Io { what: format!("create {}", tmp.display()), error: e }),
        }
    }
    let (tmp, error) = last.unwrap_or_else(|| (path.to_path_buf(), std::io::Error::other("no name tried")));
    Err(ShmError::Io {
        what: format!("create {} (and {} other temporary names: all exist)", tmp.display(), TEMPORARY_TRIES - 1),
        error,
    })
}

/// The server's pid, memfd descriptor and token from the locator at `path`,
/// read and never mapped.
fn read_locator(path: &Path) -> Result<(u32, u32, u64), ShmError> {
    let f = File::open(path).map_err(io(format!("open {}", path.display())))?;
    let mut loc = [0u8; LOCATOR_BYTES];
    let mut got = 0;
    let mut r = f.take(LOCATOR_BYTES as u64);
    while got < LOCATOR_BYTES {
        match r.read(loc.get_mut(got..).unwrap_or_default()) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(ShmError::Io { what: format!("read {}", path.display()), error: e }),
        }
    }
    let word =
        |a: usize, b: usize| loc.get(a..b).map_or(0, |s| s.iter().rev().fold(0u64, |v, x| v << 8 | u64::from(*x)));
    if got < LOCATOR_BYTES || word(0, 8) != LOCATOR_MAGIC {
        return Err(ShmError::Corrupt(format!(
            "{} is not an nrt-sim serve locator: {got} bytes, bad magic 0x{:016x} (expected 0x{LOCATOR_MAGIC:016x})",
            path.display(),
            word(0, 8)
        )));
    }
    Ok((word(8, 12) as u32, word(12, 16) as u32, word(16, 24)))
}

/// Shared ownership of a file by the device model and the server.
pub type SharedFile = Arc<ShmFile>;

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("nrt-shm-unit-{}-{name}", std::process::id()))
    }

    #[test]
    fn layouts_do_not_overlap_and_hold_every_register() {
        for arch in [Arch::Sunda, Arch::Cayman, Arch::Mariana] {
            for ring in [32, 1024, 1 << 20] {
                let l = ShmLayout::new(arch, 2, ring).unwrap();
                assert_eq!(l.bar_offset % PAGE, 0);
                for (name, r) in bar_registers(arch) {
                    assert!(r + 4 <= l.bar_len, "{arch:?} {name} 0x{r:x}");
                }
                assert!(l.ring_offset(1, 8).unwrap() + u64::from(ring) <= l.bar_offset);
            }
        }
        assert!(ShmLayout::new(Arch::Sunda, 3, 64).is_err());
        assert!(ShmLayout::new(Arch::Sunda, 1, 48).is_err());
    }

    #[test]
    fn a_published_file_reopens_and_a_bad_one_is_refused() {
        let p = tmp("roundtrip");
        let l = ShmLayout::new(Arch::Sunda, 2, 1024).unwrap();
        let f = ShmFile::create(&p, l, 7, "nan:core=0 hang:core=1,engine=PE").unwrap();
        f.publish(123).unwrap();
        let g = ShmFile::wait_ready(&p, Duration::from_secs(1)).unwrap();
        assert_eq!((*g.layout(), g.origin_ns(), g.seed()), (l, 123, 7));
        assert_eq!(g.faults_text(), "nan:core=0 hang:core=1,engine=PE");
        g.sema_incr(1, 1).unwrap().fetch_add(1, Ordering::AcqRel);
        assert_eq!(f.sema_incr(1, 1).unwrap().load(Ordering::Acquire), 1);
        f.put64(off::MAGIC, 0x1234);
        assert!(matches!(ShmFile::open(&p), Err(ShmError::Corrupt(_))));
        f.put64(off::MAGIC, MAGIC);
        f.put32(off::RING_BYTES, 48);
        assert!(matches!(ShmFile::wait_ready(&p, Duration::from_millis(50)), Err(ShmError::Corrupt(_))));
        std::fs::remove_file(&p).unwrap();
        assert!(matches!(ShmFile::wait_ready(&p, Duration::from_millis(50)), Err(ShmError::Timeout(_))));
    }

    /// Every `<path>.*tmp` name left in `path`'s directory.
    fn leftovers(path: &Path) -> Vec<PathBuf> {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| {
                let n = p.file_name().unwrap().to_string_lossy();
                n.starts_with(&format!("{name}.")) && n.ends_with(".tmp")
            })
            .collect()
    }

    #[test]
    fn a_symlink_at_the_temporary_name_is_not_followed() {
        let p = tmp("symlinked");
        let victim = tmp("victim");
        std::fs::write(&victim, b"precious").unwrap();
        let link = PathBuf::from(format!("{}.{}.tmp", p.display(), std::process::id()));
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let l = ShmLayout::new(Arch::Sunda, 1, 64).unwrap();
        let made = ShmFile::create(&p, l, 1, "").and_then(|f| f.publish(1).map(|()| f));
        let kept = std::fs::read(&victim).unwrap();
        let opened = ShmFile::open(&p).map(|g| g.seed());
        let _ = std::fs::remove_file(&link);
        let _ = std::fs::remove_file(&victim);
        let _ = std::fs::remove_file(&p);
        assert_eq!(kept, b"precious", "the symlink's target was written through");
        let f = made.expect("publish beside a planted symlink");
        assert_eq!(opened.unwrap(), 1);
        drop(f);
        assert!(leftovers(&p).is_empty(), "{:?}", leftovers(&p));
    }

    #[test]
    fn a_failed_publish_leaves_no_temporary_file() {
        // A directory where the file should go: the rename fails.
        let p = tmp("is-a-dir");
        std::fs::create_dir_all(&p).unwrap();
        let l = ShmLayout::new(Arch::Sunda, 1, 64).unwrap();
        let r = ShmFile::create(&p, l, 1, "").and_then(|f| f.publish(1));
        let left = leftovers(&p);
        for t in &left {
            let _ = std::fs::remove_file(t);
        }
        std::fs::remove_dir(&p).unwrap();
        let e = r.expect_err("publishing onto a directory");
        assert!(e.to_string().contains(&p.display().to_string()), "{e}");
        assert!(left.is_empty(), "left behind: {left:?}");
    }

    #[test]
    fn a_locator_naming_an_unsealed_file_is_refused() {
        // An unsealed tmpfs file with a real header is refused before it is mapped.
        let shm = Path::new("/dev/shm");
        let dir = if shm.is_dir() { shm.to_path_buf() } else { std::env::temp_dir() };
        let plain = dir.join(format!("nrt-shm-unit-{}-plain", std::process::id()));
        let f = OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&plain).unwrap();
        f.set_len(RINGS_OFFSET).unwrap();
        let p = tmp("unsealed-locator");
        let mut loc = [0u8; LOCATOR_BYTES];
        loc[0..8].copy_from_slice(&LOCATOR_MAGIC.to_le_bytes());
        loc[8..12].copy_from_slice(&std::process::id().to_le_bytes());
        loc[12..16].copy_from_slice(&(f.as_raw_fd() as u32).to_le_bytes());
        std::fs::write(&p, loc).unwrap();
        let got = ShmFile::open(&p);
        std::fs::remove_file(&p).unwrap();
        std::fs::remove_file(&plain).unwrap();
        match got {
            Err(ShmError::Corrupt(m)) => {
                assert!(m.contains("not sealed against shrinking") || m.contains("not a memfd"), "{m}")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_permanent_error_is_reported_at_once_with_its_reason() {
        // A directory at the path: no wait makes it a device file.
        let p = tmp("a-directory");
        std::fs::create_dir_all(&p).unwrap();
        let t0 = Instant::now();
        let got = ShmFile::wait_ready(&p, Duration::from_secs(2));
        let took = t0.elapsed();
        std::fs::remove_dir(&p).unwrap();
        let m = got.expect_err("a directory").to_string();
        assert!(m.contains("Is a directory") && m.contains(&p.display().to_string()), "{m}");
        assert!(m.contains("read"), "the call is named: {m}");
        assert!(!m.contains("is `nrt-sim serve"), "not a readiness problem: {m}");
        assert!(took < Duration::from_secs(1), "retried for {took:?}");
    }

    #[test]
    fn an_unknown_state_value_is_named_not_called_initialising() {
        let p = tmp("bad-state");
        let l = ShmLayout::new(Arch::Sunda, 1, 64).unwrap();
        let f = ShmFile::create(&p, l, 1, "").unwrap();
        f.publish(1).unwrap();
        f.put32(off::STATE, 7);
        let got = ShmFile::wait_ready(&p, Duration::from_millis(200));
        std::fs::remove_file(&p).unwrap();
        let m = got.expect_err("state 7").to_string();
        assert!(m.contains("state word holds 7") && !m.contains("initialising"), "{m}");
    }

    #[test]
    fn a_region_table_mismatch_prints_hex_with_0x() {
        let p = tmp("bad-regions");
        let l = ShmLayout::new(Arch::Sunda, 1, 64).unwrap();
        let f = ShmFile::create(&p, l, 1, "").unwrap();
        f.publish(1).unwrap();
        f.put64(off::RINGS_LEN, 0x1234);
        let got = ShmFile::open(&p);
        std::fs::remove_file(&p).unwrap();
        let m = got.expect_err("bad region table").to_string();
        assert!(m.contains("rings length 0x1234") && m.contains(&format!("0x{:x}", l.rings_len)), "{m}");
    }
}
