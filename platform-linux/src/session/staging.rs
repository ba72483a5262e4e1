//! Staging, step 11's copy: the chunks the session allocated, as device memory
//! and ring backing, and the copy and its completion marker lowered into them.

use super::*;
use nrt_core::dma::{submit, Submission, SubmitBuffers, SubmitError, SubmitStep, SubmitTarget, Submitted};

/// One chunk of host memory the driver allocated, and its mapping.
#[derive(Debug)]
pub(super) struct Chunk {
    pub(super) handle: u64,
    pub(super) info: MemGetExtendedInfo,
    pub(super) map: Option<Mapping>,
}

/// The chunks as device memory at the driver's physical addresses, and as ring
/// backing: the TX ring, the RX ring, the copy's buffer.
pub(super) struct ChunkMemory<'a> {
    pub(super) dev: &'a NeuronDevice,
    pub(super) chunks: &'a [Chunk],
}

impl ChunkMemory<'_> {
    fn at(&self, addr: u64, len: usize) -> Result<(&Mapping, u64), LinuxError> {
        let end = addr.checked_add(len as u64);
        self.chunks
            .iter()
            .find(|c| {
                addr >= c.info.pa && end.is_some_and(|e| c.info.pa.checked_add(c.info.size).is_some_and(|x| e <= x))
            })
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

/// What staging did: the fields of `nrt-sim run`'s staging report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Staging {
    /// The DMA engine and queue the copy ran on, the session's own.
    pub queue: (u32, u32),
    /// Descriptors built, lowered and rung in each direction, data and marker.
    pub descriptors: u32,
    /// Depth of each ring.
    pub ring_depth: u32,
    /// Physical addresses of the TX and RX rings.
    pub rings: (u64, u64),
    /// BAR0 offsets of the M2S and S2M tail-increment registers rung through
    /// `DMA_QUEUE_COPY_START`.
    pub doorbells: (u64, u64),
    /// Device address of the completion handle.
    pub handle: u64,
    /// Polls that read the sentinel before the marker arrived; `None` when it
    /// did not arrive within core's budget.
    pub handle_polls: Option<u64>,
    /// Bytes copied.
    pub copy_bytes: usize,
    /// The destination matched the source.
    pub copy_verified: bool,
    /// BAR0 offset of the host trigger written; 0 on a real driver, which names none.
    pub host_trigger: u64,
    /// The staging chain's events.
    pub events: Vec<Event>,
}

impl Staging {
    /// Why the copy failed, as the status the inference ends with and a line
    /// naming the queue, G-STAGING-FAIL: `NRT_TIMEOUT` when its marker never
    /// came, `NRT_HW_ERROR` when the destination does not hold the source.
    pub fn failure(&self) -> Option<(NrtStatus, String)> {
        let (eng, q) = self.queue;
        if self.handle_polls.is_none() {
            return Some((
                NrtStatus::Timeout,
                format!(
                    "copy on DMA engine {eng} queue {q}: its completion marker at 0x{:x} did not arrive; the \
                     kickoff was not made",
                    self.handle
                ),
            ));
        }
        if !self.copy_verified {
            return Some((
                NrtStatus::HwError,
                format!(
                    "copy on DMA engine {eng} queue {q}: the marker arrived but the {} bytes copied do not \
                     match their source; the kickoff was not made",
                    self.copy_bytes
                ),
            ));
        }
        None
    }
}

/// The staging submission's storage: two vring pages of [`PAGE_BDS`] per
/// direction, rings of [`STAGING_RING_DEPTH`].
pub(super) type StagingBuffers = SubmitBuffers<PAGE_BDS, 2, { STAGING_RING_DEPTH as usize }>;

/// The device as core's submit sequence sees it: the mapped chunks for memory,
/// `doorbell` for the tail-increment registers. The device is taken as caught
/// up with the queues, the default [`SubmitTarget::device_heads`]: each copy
/// completes before the next, and one whose marker timed out makes the
/// session unusable.
struct StagingTarget<'m, 'c, R> {
    mem: &'m mut ChunkMemory<'c>,
    doorbell: &'m mut R,
}

impl<R> ErrorType for StagingTarget<'_, '_, R> {
    type Error = LinuxError;
}

impl<R> hal::DeviceMemory for StagingTarget<'_, '_, R> {
    fn copy_in(&mut self, addr: u64, data: &[u8]) -> Result<(), LinuxError> {
        self.mem.copy_in(addr, data)
    }
    fn copy_out(&mut self, addr: u64, out: &mut [u8]) -> Result<(), LinuxError> {
        self.mem.copy_out(addr, out)
    }
}

impl<R> RingBacking for StagingTarget<'_, '_, R> {
    fn alloc_ring(&mut self, dir: Direction, depth: u32) -> Result<u64, LinuxError> {
        self.mem.alloc_ring(dir, depth)
    }
}

impl<R: hal::Registers<Error = LinuxError>> hal::Registers for StagingTarget<'_, '_, R> {
    fn read32(&mut self, offset: u64) -> Result<u32, LinuxError> {
        self.doorbell.read32(offset)
    }
    fn write32(&mut self, offset: u64, value: u32) -> Result<(), LinuxError> {
        self.doorbell.write32(offset, value)
    }
}

impl<R: hal::Registers<Error = LinuxError>> SubmitTarget for StagingTarget<'_, '_, R> {}

/// Bytes one data descriptor of a runtime's copy moves: a BD's most,
/// udma/udma.h `MAX_DMA_DESC_SIZE`, the size the driver's own copies cut at,
/// G-COPY-CUT.
const DESC_BYTES_MAX: u64 = nrt_core::dma::bd::MAX_BD_LEN as u64;
/// Data descriptors of one submission of a runtime's copy: the staging vring's
/// two pages of [`PAGE_BDS`] hold them and the marker.
pub const DESCS_PER_SUBMIT: u64 = 8;

/// A copy of `len` bytes from device address `src` to `dst`, cut into the
/// transfers of its submissions: at most [`DESCS_PER_SUBMIT`] descriptors of
/// [`DESC_BYTES_MAX`] each, the tail in one descriptor of its own.
pub(super) fn pieces(src: u64, dst: u64, len: u64) -> impl Iterator<Item = Transfer> {
    let mut done = 0u64;
    core::iter::from_fn(move || {
        let left = len - done;
        if left == 0 {
            return None;
        }
        let (granule, count) = if left >= DESC_BYTES_MAX {
            (DESC_BYTES_MAX, (left / DESC_BYTES_MAX).min(DESCS_PER_SUBMIT))
        } else {
            (left, 1)
        };
        let t = Transfer {
            op: OP_COPY,
            elem_count: (granule * count) as u32,
            granule: granule as u32,
            elem_bytes: 1,
            src: src + done,
            dst: dst + done,
        };
        done += granule * count;
        Some(t)
    })
}

/// One submission of a copy on the session's queue through core's sequence:
/// arm the completion handle at `handle_page`, build `data` and its marker,
/// lower, reserve, set and stage them at the queue cursors, ring S2M then M2S
/// through `doorbell`, and poll the marker. The write barrier goes on the last
/// data descriptor, as the driver's own memcpy does. A marker that does not
/// arrive is reported by the missing `Completed` event, not fatal.
#[allow(clippy::too_many_arguments)]
pub(super) fn submit_piece<R: hal::Registers<Error = LinuxError>, W: hal::Delay>(
    mem: &mut ChunkMemory<'_>,
    doorbell: &mut R,
    delay: &mut W,
    arch: Arch,
    engine_base: u64,
    handle_page: u64,
    data: Transfer,
    (txq, rxq): (&mut SwDmaQueue, &mut SwDmaQueue),
    bufs: &mut StagingBuffers,
    events: &mut Vec<Event>,
) -> Result<Submitted, StagingFailure> {
    let done_addr = handle_page + 0x100;
    hal::DeviceMemory::copy_in(mem, done_addr, &DONE_WORD.to_le_bytes())?;
    let plan = Submission {
        arch,
        data,
        handle: CompletionHandle::new(handle_page),
        done_word: done_addr,
        engine_base,
        queue: STAGING_QUEUE,
        // neuron_dma.c `ndma_memcpy_chunks`, barrier type from v2/v3
        // `ndma_get_m2m_barrier_type_*`.
        write_barrier: true,
        platform: PlatformType::HARDWARE,
    };
    let mut target = StagingTarget { mem, doorbell };
    match submit(&mut target, &mut Fence, delay, &mut Collect(events), &plan, (txq, rxq), bufs) {
        Ok(done) => Ok(done),
        // The marker within core's budget; a device that did not copy is reported, not fatal.
        Err(SubmitError { step: SubmitStep::Wait, rung: Some(done), .. }) => Ok(done),
        Err(e) => Err(StagingFailure::Submit(e)),
    }
}

/// Why [`submit_piece`] failed: filling the buffer, or a step of core's
/// submit sequence.
#[derive(Debug)]
pub(super) enum StagingFailure {
    /// A copy into the chunks.
    Fill(LinuxError),
    /// A step of the sequence.
    Submit(SubmitError),
}

impl From<LinuxError> for StagingFailure {
    fn from(e: LinuxError) -> StagingFailure {
        StagingFailure::Fill(e)
    }
}

impl Session {
    /// One copy on the session's own queue: each of its transfers submitted
    /// and its marker polled, in order, up to the first marker that did not
    /// arrive. The caller checks the bytes.
    pub(super) fn copy_transfers(
        &mut self,
        transfers: impl Iterator<Item = Transfer>,
    ) -> Result<Staging, StagingFailure> {
        let arch = self.arch;
        let handle_addr =
            self.chunks.get(2).map(|c| c.info.pa).ok_or_else(|| refused(&self.dev, "copy", "no buffer".into()))?;
        let mut events = Vec::new();
        let (mut txq, mut rxq) = match (self.txq, self.rxq) {
            (Some(t), Some(r)) => (t, r),
            _ => return Err(refused(&self.dev, "copy", "the queue was not initialised".into()).into()),
        };
        let eng = self.staging_engine;
        let base = nrt_abi::devmap::udma_base(arch, eng).ok_or_else(|| {
            refused(&self.dev, "copy", format!("DMA engine {eng} has no register window on {}", arch.name()))
        })?;
        let mut delay = AnyDelay::new(DelayKind::Libnrt);
        let mut out = Staging {
            queue: (eng, STAGING_QUEUE),
            descriptors: 0,
            ring_depth: STAGING_RING_DEPTH,
            rings: (0, 0),
            doorbells: (0, 0),
            handle: handle_addr,
            handle_polls: Some(0),
            copy_bytes: 0,
            copy_verified: true,
            host_trigger: self.hints.map_or(0, |h| h.host_trigger),
            events: Vec::new(),
        };
        let mut result = Ok(());
        let mut bufs = Box::new(StagingBuffers::new());
        let mut moved = 0u64;
        for (i, data) in transfers.enumerate() {
            // The events of the first submission and of a failed one are kept,
            // bounded whatever the copy's size.
            let first = events.len();
            let piece = {
                let mut mem = ChunkMemory { dev: &self.dev, chunks: &self.chunks };
                let mut db = IoctlDoorbell::new(&self.dev, arch, vec![UdmaEngine { eng_id: eng, base }]);
                let q = (&mut txq, &mut rxq);
                submit_piece(&mut mem, &mut db, &mut delay, arch, base, handle_addr, data, q, &mut bufs, &mut events)
            };
            match piece {
                Ok(done) => {
                    out.descriptors += done.descriptors;
                    out.ring_depth = done.ring_depth;
                    out.rings = done.rings;
                    out.doorbells = done.doorbells;
                    let polls = events[first..].iter().rev().find_map(|e| match e {
                        Event::Dma(DmaEvent::Completed { polls, .. }) => Some(*polls),
                        _ => None,
                    });
                    out.handle_polls = out.handle_polls.zip(polls).map(|(a, b)| a + b);
                    if polls.is_none() {
                        break;
                    }
                    moved += u64::from(data.elem_count) * u64::from(data.elem_bytes);
                    if i > 0 {
                        events.truncate(first);
                    }
                }
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        // Core's sequence leaves the cursors where they must be: handed back
        // when nothing was staged, past the staged slots from the doorbells on.
        self.txq = Some(txq);
        self.rxq = Some(rxq);
        result?;
        out.copy_bytes = moved as usize;
        out.events = events;
        Ok(out)
    }
}
