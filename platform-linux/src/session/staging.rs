//! Staging (step 9's copy): the chunks the session allocated, as device memory
//! and ring backing, and the copy and its completion marker lowered into them.

use super::*;

/// One chunk of host memory the driver allocated, and its mapping.
#[derive(Debug)]
pub(super) struct Chunk {
    pub(super) handle: u64,
    pub(super) info: MemGetExtendedInfo,
    pub(super) map: Option<Mapping>,
}

/// The chunks as device memory (the driver's physical addresses) and as ring
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

/// The staging copy of step 9 into the mapped chunks: fill the buffer (source,
/// cleared destination, done word), arm the completion handle, build the copy
/// and its marker with core's `append_descs`, lower them into the rings
/// (`create_prings` over the TX and RX chunks), reserve, set and stage them at
/// the queue cursors. Returns the descriptors per direction, the rings'
/// addresses and their depth.
/// `meta_ctrl` bit 26 of an M2S descriptor: the write barrier
/// (udma/udma_m2m.c: `struct sdma_cme_desc_word`, `write_barrier`).
pub const M2S_WRITE_BARRIER: u32 = 1 << 26;

pub(super) fn lower_staging(
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
    let mut tx_bds: Vec<Bd> = tx.image().iter().take(n as usize).copied().collect();
    // The write barrier on the last data descriptor before the completion
    // marker's, so the marker cannot land before the data (the driver's own
    // memcpy does the same: neuron_dma.c `ndma_memcpy_chunks`, barrier type
    // from v2/v3 `ndma_get_m2m_barrier_type_*`; udma/udma_m2m.c sets
    // `sdma_cme_desc_word.write_barrier`, meta_ctrl bit 26).
    if let Some(last) = a.tx.ndesc.checked_sub(1).and_then(|i| tx_bds.get_mut(i as usize)) {
        last.meta_ctrl.set(last.meta_ctrl.get() | M2S_WRITE_BARRIER);
    }
    let rx_bds: Vec<Bd> = rx.image().iter().take(n as usize).copied().collect();
    tx.set_descriptors(&rt, &tx_bds).map_err(staging_err(dev, "set tx"))?;
    rx.set_descriptors(&rr, &rx_bds).map_err(staging_err(dev, "set rx"))?;
    tx.stage(mem, &rt).map_err(staging_err(dev, "stage tx"))?;
    rx.stage(mem, &rr).map_err(staging_err(dev, "stage rx"))?;
    Ok((n, (tx.dev_addr(), rx.dev_addr()), tx.depth()))
}

impl Session {
    /// Step 9's staging: the copy and its marker into the mapped rings, one copy
    /// start, the marker polled.
    pub(super) fn stage(&mut self) -> Result<Staging, LinuxError> {
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
            host_trigger: host_trigger(arch).unwrap_or(0),
            events,
        })
    }
}
