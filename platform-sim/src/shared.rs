//! The hardware state both sides touch: NQ ring memory, BAR0 registers, device
//! DRAM, and the collectives/fault status lines.
//!
//! Everything here is an atomic, so the same struct serves the single-threaded
//! deterministic mode and the threaded mode (device on its own thread), and, with
//! [`Shared::over_shm`], a device in another process: the NQ ring memory, the BAR
//! registers the host touches (HEAD, INTC cause, the kickoff semaphores' INCR
//! alias, the host trigger) and the proxy/probe status lines are then words of
//! the mapped file ([`crate::shm`]), and the rest (DRAM, UDMA queues) stays
//! private to the device.
//!
//! # Memory ordering at the handoff
//!
//! - **NQ entries.** A 16-byte slot is two `AtomicU64` words: bytes 0..8 (which
//!   hold byte 3, the phase bit) and bytes 8..16 (the device timestamp). The
//!   device writes the second word first (Relaxed), then publishes the first with
//!   Release; the host reads the first with Acquire, then the second. A slot whose
//!   phase is fresh therefore always shows its whole payload.
//! - **HEAD.** The host's HEAD write is latched as hardware latches an MMIO write:
//!   each write advances a free-running "consumed" byte count by
//!   `(head - previous) mod size` (exact, because a batch never consumes a whole
//!   lap, G-HEAD). The device reads the count with Acquire; it never has to guess
//!   how many writes it missed. Over a shared-memory file the host's HEAD write is
//!   a plain store nothing latches, so the device samples the value instead
//!   ([`Shared::head_latched`] is `false`; the limitation is in [`crate::shm`]).
//! - **DRAM.** Bytes are `AtomicU8`s written Relaxed after a Release fence and read
//!   Relaxed before an Acquire fence; doorbells (tail-inc, semaphore) are
//!   Release/Acquire read-modify-writes, so the descriptors staged before a
//!   doorbell are visible to the device that sees it.

use std::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};

use nrt_core::arch::{Arch, MAX_CORES};
use nrt_core::hal::ErrorKind;

use std::sync::Arc;

use crate::layout::{self, udma, ENTRY_BYTES, NQ_PER_CORE};
use crate::shm::{Line, ShmFile};

/// Queues per UDMA block (nrt-core's `UDMA_QUEUES`).
pub const UDMA_QUEUES: usize = nrt_core::dma::doorbell::UDMA_QUEUES as usize;

/// One NQ ring's memory: `2 * entries` little-endian words, on the heap or in a
/// mapped file.
#[derive(Debug)]
pub struct RingMem {
    size: u32,
    words: Words,
}

#[derive(Debug)]
enum Words {
    Heap(Box<[AtomicU64]>),
    Mapped { file: Arc<ShmFile>, offset: u64 },
}

impl RingMem {
    fn new(size: u32) -> RingMem {
        let n = (size / ENTRY_BYTES) as usize * 2;
        RingMem { size, words: Words::Heap((0..n).map(|_| AtomicU64::new(0)).collect()) }
    }

    fn word(&self, i: usize) -> Option<&AtomicU64> {
        match &self.words {
            Words::Heap(w) => w.get(i),
            Words::Mapped { file, offset } => file.map().u64_at(offset.checked_add(8 * i as u64)?),
        }
    }

    /// Size in bytes.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// Device side: write the entry at byte offset `offset`, publishing the word
    /// with the phase byte last (Release).
    pub fn publish(&self, offset: u32, entry: &[u8; 16]) -> Result<(), ErrorKind> {
        let (w0, w1) = self.slot(offset)?;
        let (lo, hi) = entry.split_at(8);
        let lo = u64::from_le_bytes(lo.try_into().map_err(|_| ErrorKind::Other)?);
        let hi = u64::from_le_bytes(hi.try_into().map_err(|_| ErrorKind::Other)?);
        w1.store(hi, Ordering::Relaxed);
        w0.store(lo, Ordering::Release);
        Ok(())
    }

    /// Zero every slot (a reset core's fresh ring: no record, phase 0).
    pub fn clear(&self) {
        let words = (self.size / ENTRY_BYTES) as usize * 2;
        for i in 0..words {
            if let Some(w) = self.word(i) {
                w.store(0, Ordering::Relaxed);
            }
        }
        fence(Ordering::Release);
    }

    /// Host side: read the entry at `offset` (Acquire on the phase word).
    pub fn read(&self, offset: u32, out: &mut [u8; 16]) -> Result<(), ErrorKind> {
        let (w0, w1) = self.slot(offset)?;
        let lo = w0.load(Ordering::Acquire);
        let hi = w1.load(Ordering::Relaxed);
        out[..8].copy_from_slice(&lo.to_le_bytes());
        out[8..].copy_from_slice(&hi.to_le_bytes());
        Ok(())
    }

    fn slot(&self, offset: u32) -> Result<(&AtomicU64, &AtomicU64), ErrorKind> {
        if offset >= self.size || !offset.is_multiple_of(ENTRY_BYTES) {
            return Err(ErrorKind::OutOfRange);
        }
        let i = (offset / ENTRY_BYTES) as usize * 2;
        match (self.word(i), self.word(i + 1)) {
            (Some(a), Some(b)) => Ok((a, b)),
            _ => Err(ErrorKind::OutOfRange),
        }
    }
}

/// The HEAD register of one ring and the hardware's latch of it.
#[derive(Debug, Default)]
pub struct HeadReg {
    /// The last value written (what a read of the register returns).
    pub value: AtomicU32,
    /// Free-running bytes handed back, advanced on each write.
    pub consumed: AtomicU32,
}

/// One UDMA queue bank (the registers the simulator models).
#[derive(Debug, Default)]
pub struct QueueRegs {
    /// `+0x28` ring base, low.
    pub base_lo: AtomicU32,
    /// `+0x2C` ring base, high.
    pub base_hi: AtomicU32,
    /// `+0x30` ring length in descriptors.
    pub len: AtomicU32,
    /// `+0x34` head pointer (device-owned).
    pub head: AtomicU32,
    /// `+0x3C` tail pointer (device-owned; advanced by tail increments).
    pub tail: AtomicU32,
    /// Tail increments written and not yet taken by the device.
    pub tail_inc_pending: AtomicU32,
}

impl QueueRegs {
    /// A queue bank out of reset: the head at slot 0 of the first lap, so its
    /// ring id field (`[31:30]`) reads 1 (`UDMA_INITIAL_RING_ID`, driver §5), as
    /// the device's own cursor starts.
    pub fn at_reset() -> QueueRegs {
        let head = u32::from(nrt_core::dma::bd::INITIAL_RING_ID) << nrt_core::dma::queue::HEAD_PTR_RING_ID_SHIFT;
        QueueRegs { head: AtomicU32::new(head), ..QueueRegs::default() }
    }
}

/// The whole shared hardware state.
#[derive(Debug)]
pub struct Shared {
    arch: Arch,
    ring_bytes: u32,
    rings: Vec<RingMem>,
    heads: Vec<HeadReg>,
    intc: Vec<AtomicU32>,
    dram: Box<[AtomicU8]>,
    /// UDMA queue banks: `[dir][queue]`, dir 0 = M2S (TX), 1 = S2M (RX).
    pub queues: [Vec<QueueRegs>; 2],
    host_trigger: AtomicU32,
    sema: Vec<AtomicU32>,
    /// The status lines ([`Line`]) of each core, when not in a file.
    lines: [[AtomicU32; MAX_CORES]; 5],
    /// Each core's reset generation and the device's acknowledgement, when
    /// not in a file ([`ShmFile::request_reset`]).
    resets: [[AtomicU32; MAX_CORES]; 2],
    /// The mapped file, in `nrt-sim serve` mode.
    shm: Option<Arc<ShmFile>>,
    /// The virtual clock, nanoseconds (deterministic mode).
    pub vclock_ns: AtomicU64,
    /// Tells the device thread to stop (threaded mode).
    pub stop: AtomicBool,
}

impl Shared {
    /// Hardware for `arch` with every NQ ring (both cores, NQ 0..=8) of `ring_bytes`.
    pub fn new(arch: Arch, ring_bytes: u32) -> Shared {
        let n = MAX_CORES * NQ_PER_CORE;
        Shared {
            arch,
            ring_bytes,
            rings: (0..n).map(|_| RingMem::new(ring_bytes)).collect(),
            heads: (0..n).map(|_| HeadReg::default()).collect(),
            intc: (0..MAX_CORES * (layout::INTC_BLOCKS * layout::INTC_LINES) as usize)
                .map(|_| AtomicU32::new(0))
                .collect(),
            dram: (0..layout::DRAM_BYTES).map(|_| AtomicU8::new(0)).collect(),
            queues: [
                (0..UDMA_QUEUES).map(|_| QueueRegs::at_reset()).collect(),
                (0..UDMA_QUEUES).map(|_| QueueRegs::at_reset()).collect(),
            ],
            host_trigger: AtomicU32::new(0),
            sema: (0..MAX_CORES * layout::SEMAPHORES as usize).map(|_| AtomicU32::new(0)).collect(),
            lines: Default::default(),
            resets: Default::default(),
            shm: None,
            vclock_ns: AtomicU64::new(0),
            stop: AtomicBool::new(false),
        }
    }

    /// Hardware whose host-visible state is the mapped file `file` (`nrt-sim
    /// serve`): ring memory, the BAR words of HEAD, INTC cause, kickoff semaphores
    /// and host trigger, and the status lines live in the file.
    pub fn over_shm(file: Arc<ShmFile>) -> Shared {
        let l = *file.layout();
        let mut s = Shared::new(l.arch, l.ring_bytes);
        s.rings = (0..MAX_CORES * NQ_PER_CORE)
            .map(|i| {
                let (core, nq) = ((i / NQ_PER_CORE) as u8, (i % NQ_PER_CORE) as u8);
                let offset = l.ring_offset(core, nq).unwrap_or(u64::MAX);
                RingMem { size: l.ring_bytes, words: Words::Mapped { file: Arc::clone(&file), offset } }
            })
            .collect();
        s.shm = Some(file);
        s
    }

    /// Whether HEAD writes are latched (in-process) or must be sampled (a file).
    pub fn head_latched(&self) -> bool {
        self.shm.is_none()
    }

    /// The last value written to the HEAD register of ring `(core, nq)`.
    pub fn head_value(&self, core: u8, nq: u8) -> Result<u32, ErrorKind> {
        Ok(self.head_word(core, nq)?.load(Ordering::Acquire))
    }

    fn head_word(&self, core: u8, nq: u8) -> Result<&AtomicU32, ErrorKind> {
        let heap = &self.head(core, nq)?.value;
        self.bar_cell(layout::nq_head_offset(self.arch, core, nq), heap)
    }

    /// The register at BAR offset `reg`: the file's word in serve mode, else `heap`.
    fn bar_cell<'s>(&'s self, reg: Option<u64>, heap: &'s AtomicU32) -> Result<&'s AtomicU32, ErrorKind> {
        match &self.shm {
            None => Ok(heap),
            Some(f) => reg.and_then(|r| f.bar_u32(r)).ok_or(ErrorKind::NotMapped),
        }
    }

    /// Status line `line` of `core`.
    pub fn line(&self, line: Line, core: u8) -> Option<&AtomicU32> {
        match &self.shm {
            Some(f) => f.line(line, core),
            None => self.lines.get(line as usize).and_then(|l| l.get(usize::from(core))),
        }
    }

    /// Set status line `line` of `core` (Release).
    pub fn set_line(&self, line: Line, core: u8, v: u32) {
        if let Some(c) = self.line(line, core) {
            c.store(v, Ordering::Release);
        }
    }

    /// Read status line `line` of `core` (Acquire; 0 when there is no such core).
    pub fn get_line(&self, line: Line, core: u8) -> u32 {
        self.line(line, core).map_or(0, |c| c.load(Ordering::Acquire))
    }

    /// Ask for a reset of `core` (the driver model's `NC_RESET`): its new
    /// reset generation, `None` past the cores.
    pub fn request_reset(&self, core: u8) -> Option<u32> {
        match &self.shm {
            Some(f) => f.request_reset(core),
            None => {
                let w = self.resets[0].get(usize::from(core))?;
                Some(w.fetch_add(1, Ordering::AcqRel).wrapping_add(1))
            }
        }
    }

    /// Core `core`'s reset generation (0 before any reset).
    pub fn reset_requested(&self, core: u8) -> u32 {
        match &self.shm {
            Some(f) => f.reset_requested(core),
            None => self.resets[0].get(usize::from(core)).map_or(0, |w| w.load(Ordering::Acquire)),
        }
    }

    /// The reset generation the device last acknowledged for `core`.
    pub fn reset_acknowledged(&self, core: u8) -> u32 {
        match &self.shm {
            Some(f) => f.reset_acknowledged(core),
            None => self.resets[1].get(usize::from(core)).map_or(0, |w| w.load(Ordering::Acquire)),
        }
    }

    /// Device side: `core` is fresh for reset generation `generation`.
    pub fn acknowledge_reset(&self, core: u8, generation: u32) {
        match &self.shm {
            Some(f) => f.acknowledge_reset(core, generation),
            None => {
                if let Some(w) = self.resets[1].get(usize::from(core)) {
                    w.store(generation, Ordering::Release);
                }
            }
        }
    }

    /// Device side: the host-visible state of a reset `core` back to a fresh
    /// device's: its NQ rings' memory zeroed, their HEAD registers 0, its INTC
    /// cause registers, status lines and TPB semaphores 0.
    pub fn clear_core(&self, core: u8) {
        for nq in 0..NQ_PER_CORE as u8 {
            if let Ok(r) = self.ring(core, nq) {
                r.clear();
            }
            if let Ok(w) = self.head_word(core, nq) {
                w.store(0, Ordering::Release);
            }
        }
        for block in 0..layout::INTC_BLOCKS {
            for line in 0..layout::INTC_LINES {
                if let Ok(c) = self.intc_cell(core, block, line) {
                    c.store(0, Ordering::Release);
                }
            }
        }
        for i in 0..layout::SEMAPHORES {
            if let Ok(s) = self.sema(u32::from(core), i) {
                s.store(0, Ordering::Release);
            }
        }
        for line in [Line::BarrierDone, Line::BarrierFail, Line::NetproxyFail, Line::Hbm, Line::DmaAbort] {
            self.set_line(line, core, 0);
        }
    }

    /// The top-SP host trigger CSR (`xt_local_reg + 0x15A0`).
    pub fn host_trigger(&self) -> &AtomicU32 {
        let reg = layout::xt_local_reg(self.arch) + nrt_core::dma::HOST_TRIGGER_OFFSET;
        self.bar_cell(Some(reg), &self.host_trigger).unwrap_or(&self.host_trigger)
    }

    /// The device generation.
    pub fn arch(&self) -> Arch {
        self.arch
    }

    /// Bytes of each NQ ring.
    pub fn ring_bytes(&self) -> u32 {
        self.ring_bytes
    }

    /// Ring `(core, nq)`.
    pub fn ring(&self, core: u8, nq: u8) -> Result<&RingMem, ErrorKind> {
        self.rings.get(ring_index(core, nq)?).ok_or(ErrorKind::NotMapped)
    }

    /// HEAD register of ring `(core, nq)`.
    pub fn head(&self, core: u8, nq: u8) -> Result<&HeadReg, ErrorKind> {
        self.heads.get(ring_index(core, nq)?).ok_or(ErrorKind::NotMapped)
    }

    fn intc_cell(&self, core: u8, block: u32, line: u32) -> Result<&AtomicU32, ErrorKind> {
        if block >= layout::INTC_BLOCKS || line >= layout::INTC_LINES {
            return Err(ErrorKind::OutOfRange);
        }
        let per_core = (layout::INTC_BLOCKS * layout::INTC_LINES) as usize;
        let i = usize::from(core) * per_core + (block * layout::INTC_LINES + line) as usize;
        let heap = self.intc.get(i).ok_or(ErrorKind::OutOfRange)?;
        self.bar_cell(layout::intc_cause_offset(self.arch, core, block, line), heap)
    }

    /// Device side: raise `bits` in the cause register of `(core, block, line)`.
    pub fn raise_intc(&self, core: u8, block: u32, line: u32, bits: u32) {
        if let Ok(c) = self.intc_cell(core, block, line) {
            c.fetch_or(bits, Ordering::AcqRel);
        }
    }

    /// Semaphore `index` of TPB `tpb` (in a file: its INCR-alias word, which the
    /// host increments with an atomic add in place of the driver's ioctl).
    pub fn sema(&self, tpb: u32, index: u32) -> Result<&AtomicU32, ErrorKind> {
        if index >= layout::SEMAPHORES {
            return Err(ErrorKind::OutOfRange);
        }
        let heap = self.sema.get((tpb * layout::SEMAPHORES + index) as usize).ok_or(ErrorKind::OutOfRange)?;
        let reg = layout::sema_page(self.arch, tpb) + layout::SEMA_INCR + 4 * u64::from(index);
        self.bar_cell(Some(reg), heap)
    }

    /// Write `data` to DRAM at `addr` (Release: visible to whoever acquires a later doorbell).
    pub fn dram_write(&self, addr: u64, data: &[u8]) -> Result<(), ErrorKind> {
        let cells = self.dram_range(addr, data.len())?;
        fence(Ordering::Release);
        for (c, b) in cells.iter().zip(data) {
            c.store(*b, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Read DRAM at `addr` into `out` (Acquire).
    pub fn dram_read(&self, addr: u64, out: &mut [u8]) -> Result<(), ErrorKind> {
        let cells = self.dram_range(addr, out.len())?;
        for (c, b) in cells.iter().zip(out.iter_mut()) {
            *b = c.load(Ordering::Relaxed);
        }
        fence(Ordering::Acquire);
        Ok(())
    }

    fn dram_range(&self, addr: u64, len: usize) -> Result<&[AtomicU8], ErrorKind> {
        let start = usize::try_from(addr).map_err(|_| ErrorKind::OutOfRange)?;
        let end = start.checked_add(len).ok_or(ErrorKind::OutOfRange)?;
        self.dram.get(start..end).ok_or(ErrorKind::OutOfRange)
    }

    /// A BAR0 register read.
    pub fn bar_read(&self, off: u64) -> Result<u32, ErrorKind> {
        match self.decode(off)? {
            Reg::Head(core, nq) => self.head_value(core, nq),
            Reg::IntcCause(core, block, line) => Ok(self.intc_cell(core, block, line)?.load(Ordering::Acquire)),
            Reg::IntcCauseSet(..) => Ok(0),
            Reg::Queue(dir, q, reg) => {
                let b = self.bank(dir, q)?;
                Ok(match reg {
                    udma::RING_BASE_LO => b.base_lo.load(Ordering::Acquire),
                    udma::RING_BASE_HI => b.base_hi.load(Ordering::Acquire),
                    udma::RING_LEN => b.len.load(Ordering::Acquire),
                    udma::HEAD_PTR => b.head.load(Ordering::Acquire),
                    udma::TAIL_PTR => b.tail.load(Ordering::Acquire),
                    _ => 0, // the increment register reads as 0
                })
            }
            Reg::HostTrigger => Ok(self.host_trigger().load(Ordering::Acquire)),
            Reg::SemaRead(tpb, i) => Ok(self.sema(tpb, i)?.load(Ordering::Acquire)),
            Reg::SemaIncr(..) => Ok(0),
        }
    }

    /// A BAR0 register write.
    pub fn bar_write(&self, off: u64, value: u32) -> Result<(), ErrorKind> {
        match self.decode(off)? {
            Reg::Head(core, nq) if !self.head_latched() => {
                self.head_word(core, nq)?.store(value, Ordering::Release);
                Ok(())
            }
            Reg::Head(core, nq) => {
                let h = self.head(core, nq)?;
                let mask = self.ring_bytes.wrapping_sub(1);
                // One writer (the host): the previous value is exact.
                let prev = h.value.swap(value, Ordering::AcqRel);
                let advance = value.wrapping_sub(prev) & mask & !(ENTRY_BYTES - 1);
                h.consumed.fetch_add(advance, Ordering::Release);
                Ok(())
            }
            Reg::IntcCause(core, block, line) => {
                // Write-1-to-clear is not modelled; a plain write replaces the cause.
                self.intc_cell(core, block, line)?.store(value, Ordering::Release);
                Ok(())
            }
            Reg::IntcCauseSet(core, block, line) => {
                self.intc_cell(core, block, line)?.fetch_or(value, Ordering::AcqRel);
                Ok(())
            }
            Reg::Queue(dir, q, reg) => {
                let b = self.bank(dir, q)?;
                match reg {
                    udma::RING_BASE_LO => b.base_lo.store(value, Ordering::Release),
                    udma::RING_BASE_HI => b.base_hi.store(value, Ordering::Release),
                    udma::RING_LEN => b.len.store(value & 0x00FF_FFFF, Ordering::Release),
                    udma::TAIL_PTR_INC => {
                        b.tail_inc_pending.fetch_add(value & 0x00FF_FFFF, Ordering::AcqRel);
                    }
                    _ => return Err(ErrorKind::OutOfRange), // head/tail are read-only
                }
                Ok(())
            }
            Reg::HostTrigger => {
                self.host_trigger().store(value, Ordering::Release);
                Ok(())
            }
            Reg::SemaIncr(tpb, i) => {
                self.sema(tpb, i)?.fetch_add(value, Ordering::AcqRel);
                Ok(())
            }
            Reg::SemaRead(..) => Err(ErrorKind::OutOfRange),
        }
    }

    fn bank(&self, dir: usize, q: usize) -> Result<&QueueRegs, ErrorKind> {
        self.queues.get(dir).and_then(|d| d.get(q)).ok_or(ErrorKind::OutOfRange)
    }

    /// Which register a BAR0 offset names.
    fn decode(&self, off: u64) -> Result<Reg, ErrorKind> {
        let arch = self.arch;
        for core in 0..MAX_CORES as u8 {
            for nq in 0..NQ_PER_CORE as u8 {
                if layout::nq_head_offset(arch, core, nq) == Some(off) {
                    return Ok(Reg::Head(core, nq));
                }
            }
            if let Some(base) = layout::intc_cause_offset(arch, core, 0, 0) {
                let span = u64::from(layout::INTC_BLOCKS) * layout::INTC_BLOCK_STRIDE;
                if off >= base && off < base + span {
                    let rel = off - base;
                    let block = (rel / layout::INTC_BLOCK_STRIDE) as u32;
                    let line = ((rel % layout::INTC_BLOCK_STRIDE) / layout::INTC_GROUP_BYTES) as u32;
                    return match rel % layout::INTC_GROUP_BYTES {
                        layout::INTC_CAUSE => Ok(Reg::IntcCause(core, block, line)),
                        layout::INTC_CAUSE_SET => Ok(Reg::IntcCauseSet(core, block, line)),
                        _ => Err(ErrorKind::OutOfRange),
                    };
                }
            }
            let page = layout::sema_page(arch, u32::from(core));
            for (alias, read) in [(layout::SEMA_READ, true), (layout::SEMA_INCR, false)] {
                let lo = page + alias;
                let hi = lo + 4 * u64::from(layout::SEMAPHORES);
                if off >= lo && off < hi && (off - lo).is_multiple_of(4) {
                    let i = ((off - lo) / 4) as u32;
                    let tpb = u32::from(core);
                    return Ok(if read { Reg::SemaRead(tpb, i) } else { Reg::SemaIncr(tpb, i) });
                }
            }
        }
        let ud = layout::sim_udma_base(arch);
        let layout_of = nrt_core::dma::UdmaLayout::of(arch);
        for (dir, block) in [(0usize, layout_of.m2s), (1usize, layout_of.s2m)] {
            let first = ud + block + layout_of.queue_first;
            let end = first + layout_of.queue_stride * u64::from(layout_of.queues);
            if off >= first && off < end {
                let rel = off - first;
                let q = (rel / layout_of.queue_stride) as usize;
                let reg = rel % layout_of.queue_stride;
                return match reg {
                    udma::RING_BASE_LO
                    | udma::RING_BASE_HI
                    | udma::RING_LEN
                    | udma::HEAD_PTR
                    | udma::TAIL_PTR_INC
                    | udma::TAIL_PTR => Ok(Reg::Queue(dir, q, reg)),
                    _ => Err(ErrorKind::OutOfRange),
                };
            }
        }
        if off == layout::xt_local_reg(arch) + nrt_core::dma::HOST_TRIGGER_OFFSET {
            return Ok(Reg::HostTrigger);
        }
        Err(ErrorKind::OutOfRange)
    }
}

#[derive(Clone, Copy, Debug)]
enum Reg {
    Head(u8, u8),
    IntcCause(u8, u32, u32),
    IntcCauseSet(u8, u32, u32),
    Queue(usize, usize, u64),
    HostTrigger,
    SemaRead(u32, u32),
    SemaIncr(u32, u32),
}

fn ring_index(core: u8, nq: u8) -> Result<usize, ErrorKind> {
    if usize::from(core) >= MAX_CORES || usize::from(nq) >= NQ_PER_CORE {
        return Err(ErrorKind::OutOfRange);
    }
    Ok(usize::from(core) * NQ_PER_CORE + usize::from(nq))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_writes_accumulate_exactly_across_laps() {
        let s = Shared::new(Arch::Sunda, 64);
        let off = layout::nq_head_offset(Arch::Sunda, 1, 4).unwrap();
        for head in [48u32, 32, 16, 0, 48] {
            s.bar_write(off, head).unwrap();
        }
        // 48 + 48 + 48 + 48 + 48 bytes: each write advanced by three entries.
        assert_eq!(s.head(1, 4).unwrap().consumed.load(Ordering::Relaxed), 5 * 48);
        assert_eq!(s.bar_read(off).unwrap(), 48);
    }

    #[test]
    fn entries_round_trip_and_unknown_registers_are_refused() {
        let s = Shared::new(Arch::Cayman, 32);
        let e: [u8; 16] = core::array::from_fn(|i| i as u8);
        s.ring(0, 2).unwrap().publish(16, &e).unwrap();
        let mut out = [0u8; 16];
        s.ring(0, 2).unwrap().read(16, &mut out).unwrap();
        assert_eq!(out, e);
        assert_eq!(s.ring(0, 2).unwrap().read(32, &mut out), Err(ErrorKind::OutOfRange));
        assert_eq!(s.bar_read(0x1234), Err(ErrorKind::OutOfRange));
        let trig = layout::xt_local_reg(Arch::Cayman) + 0x15A0;
        s.bar_write(trig, 1).unwrap();
        assert_eq!(s.bar_read(trig).unwrap(), 1);
    }
}
