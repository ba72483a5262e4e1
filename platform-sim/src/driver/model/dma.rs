//! DMA queues: `DMA_QUEUE_INIT`, `DMA_QUEUE_COPY_START` and the copy it
//! releases, executed as the device's UDMA would, G-DRV-COPY;
//! `DMA_ACK_COMPLETED`, `DMA_QUEUE_GET_STATE`; the H2T rings the driver keeps
//! per core; the re-pointing of a gone process's queues. driver: neuron_ring.c,
//! udma/udma_m2m.c, udma/udma_main.c, udma/udma.h.

use std::sync::atomic::Ordering;

use nrt_abi::ioctl as abi;
use nrt_core::dma::bd::LenCtrl;
use zerocopy::IntoBytes;

use super::{
    nc_per_device, Answer, Errno, Model, TargetMem, DESC_BYTES, DMA_ENGINES, DMA_QUEUES, INITIAL_RING_ID,
    MAX_NC_PER_DEVICE, SIM_HOST_PA_BASE, UDMA_ALIGN,
};

/// Bytes one copy start may move. **sim**: the model's bound, the size of the
/// chunk region; the counts are already bounded by the ring sizes.
pub const COPY_BYTES_MAX: u64 = super::super::CHUNK_REGION_BYTES;

/// Descriptors per direction one copy start may release for the model to
/// execute. **sim**: the model's bound; more is a DMA error, nothing copied.
pub const COPY_DESCS_MAX: u32 = 1 << 16;

/// Descriptors of each direction of the driver's dummy ring, on which a gone
/// process's queues are re-initialised. driver: neuron_ring.h, `NDMA_QUEUE_DUMMY_RING_DESC_COUNT`.
pub const DUMMY_RING_DESCS: u32 = 64;

/// Descriptors of each direction of an H2T ring: `DMA_H2T_DESC_COUNT`, 4096,
/// which `ndmar_ring_get_desc_count` rounds up to 8192, the power of two
/// above 4096 + 15. driver: neuron_ring.h, neuron_ring.c.
pub const H2T_RING_DESCS: u32 = 8192;

/// A device that acknowledges copies it did not make. **sim**, G-DRV-COPY-FAULT.
/// From the 1-based `from`th copy start on a process's own rings that moves
/// data, with more than one descriptor a side, only the last descriptor of
/// each side, the completion marker, is moved and the data descriptors'
/// bytes are dropped; with `marker`, the marker too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CopyFault {
    /// The first faulted copy start, 1-based; every later one is faulted too.
    pub from: u32,
    /// The marker is dropped too: nothing moves, the copy's wait times out.
    pub marker: bool,
}

/// One direction of a DMA queue, as `DMA_QUEUE_INIT` left it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueSide {
    /// Ring size in descriptors; 0 when never initialised, the driver's zeroed queue.
    pub size: u32,
    /// The ring's chunk handle; `None` for no ring or the driver's own memory.
    pub chunk: Option<u64>,
    /// Next descriptor the device takes.
    pub next: u32,
    /// The ring id of the current lap.
    pub ring_id: u32,
    /// The ring is the driver's own memory: an H2T ring or the dummy ring.
    pub driver_ring: bool,
}

/// A DMA queue: TX, M2S, and RX, S2M.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Queue {
    /// M2S.
    pub tx: QueueSide,
    /// S2M.
    pub rx: QueueSide,
    /// The process that initialised it last; 0 for the driver.
    pub owner: u32,
    /// The completion index `DMA_ACK_COMPLETED` advances, `next_cdesc_idx`.
    pub acked: u32,
}

/// One descriptor a copy start released, as the device fetched it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FetchedBd {
    index: u32,
    lap: u32,
    ring_id: u32,
    len: u32,
    addr: u64,
    fetch: Result<(), &'static str>,
}

impl Default for FetchedBd {
    fn default() -> FetchedBd {
        FetchedBd { index: 0, lap: 0, ring_id: 0, len: 0, addr: 0, fetch: Ok(()) }
    }
}

// The engine and queue numbering of the flush and of `DMA_QUEUE_INIT` are
// functions of the argument alone: in `nrt_abi::rules` with their driver
// files, where kani proves them.
pub use nrt_abi::rules::{
    dma_eng_per_nd, engine_initialised, h2t_queue, is_nx_ring, udma_q_init_validate, RingRefusal,
};

impl Model {
    /// Each core's H2T queue on the driver's own rings, `dmar_init_done` set.
    /// driver: neuron_ring.c, `ndmar_init_ncs`.
    pub(super) fn dma_init_cores(&mut self, nc_map: u32) {
        for nc in 0..nc_per_device(self.arch).min(MAX_NC_PER_DEVICE) {
            if nc_map != abi::NC_MAP_DEVICE && nc_map & (1 << nc) == 0 {
                continue;
            }
            if self.dmar_init_done[nc as usize] {
                continue;
            }
            let side =
                QueueSide { size: H2T_RING_DESCS, chunk: None, next: 0, ring_id: INITIAL_RING_ID, driver_ring: true };
            self.queues.insert(h2t_queue(self.arch, nc), Queue { tx: side, rx: side, owner: 0, acked: 0 });
            self.dmar_init_done[nc as usize] = true;
        }
    }

    /// RESET-1: each initialised core's H2T ring chunks are freed, whoever put
    /// them there. A chunk already freed is freed again: `mc_free`'s magic
    /// check is a kernel BUG. driver: neuron_ring.c, `ndmar_close_ncs`,
    /// `ndmar_h2t_ring_free`; neuron_mempool.c, `mc_free`.
    pub(super) fn dma_close_cores(&mut self, pid: u32, name: &'static str, nc_map: u32) -> Answer {
        for nc in 0..nc_per_device(self.arch).min(MAX_NC_PER_DEVICE) {
            if nc_map != abi::NC_MAP_DEVICE && nc_map & (1 << nc) == 0 {
                continue;
            }
            if !self.dmar_init_done[nc as usize] {
                continue;
            }
            let key = h2t_queue(self.arch, nc);
            let q = self.queues.get(&key).copied().unwrap_or_default();
            for h in [q.tx.chunk, q.rx.chunk].into_iter().flatten() {
                if self.chunks.remove(h).is_none() {
                    return self.bug(
                        pid,
                        name,
                        &format!(
                            "RESET-1: the H2T ring of core {nc} (engine {}, queue {}) is chunk {h}, already freed: \
                             mc_free's BUG_ON(mc->magic != MEMCHUNK_MAGIC)",
                            key.0, key.1
                        ),
                        "neuron_ring.c: ndmar_h2t_ring_free; neuron_mempool.c: mc_free",
                    );
                }
                self.note(pid, name, format!("RESET-1: core {nc}'s H2T ring chunk {h} freed by the reset"));
            }
            self.queues.remove(&key);
            self.dmar_init_done[nc as usize] = false;
        }
        Ok(0)
    }

    /// FLUSH-2: every queue `pid` owns on the engines below [`dma_eng_per_nd`],
    /// but the H2T and [`is_nx_ring`] queues, is re-initialised on the
    /// driver's dummy ring. The others stay programmed on their rings.
    /// driver: neuron_ring.c, `ndmar_handle_process_exit`.
    pub(super) fn repoint_queues_of(&mut self, pid: u32) {
        let arch = self.arch;
        let h2t: Vec<(u32, u32)> = (0..nc_per_device(arch)).map(|nc| h2t_queue(arch, nc)).collect();
        for (k, q) in self.queues.iter_mut() {
            if q.owner != pid || k.0 >= dma_eng_per_nd(arch) || h2t.contains(k) || is_nx_ring(arch, k.0, k.1) {
                continue;
            }
            let side =
                QueueSide { size: DUMMY_RING_DESCS, chunk: None, next: 0, ring_id: INITIAL_RING_ID, driver_ring: true };
            *q = Queue { tx: side, rx: side, owner: pid, acked: 0 };
        }
    }

    /// DMAQ-13: a conformance violation for `pid` programming queue `key` of a
    /// core another process range-marked, or a queue another attached process
    /// owns by the driver's `queue->owner`; each names both pids, the engine,
    /// the queue and the core.
    fn check_queue_ownership(&mut self, pid: u32, name: &'static str, key: (u32, u32)) {
        const SRC: &str = "neuron_ring.c: ndmar_queue_init (no ownership check); nrt_abi::devmap::owner_of";
        let (eng, qid) = key;
        let core = nrt_abi::devmap::owner_of(self.arch, eng);
        if let Some(nc) = core {
            let holder = self.range_holder(u32::from(nc));
            if holder != 0 && holder != pid {
                self.violate(
                    pid,
                    name,
                    format!(
                        "DMAQ-13: pid {pid} programs engine {eng} queue {qid} of core {nc}, which pid {holder} holds \
                         (CRWL_NC_RANGE_MARK): the driver re-points it unchecked"
                    ),
                    SRC,
                );
            }
        }
        let owner = self.queues.get(&key).map_or(0, |q| q.owner);
        if owner != 0 && owner != pid && self.attached(owner) {
            let core = core.map_or_else(|| "the driver's".to_string(), |nc| nc.to_string());
            self.violate(
                pid,
                name,
                format!(
                    "DMAQ-13: pid {pid} re-points engine {eng} queue {qid} (core {core}), which pid {owner} owns: \
                     the driver overwrites the owner unchecked"
                ),
                SRC,
            );
        }
    }

    pub(super) fn queue_init(&mut self, pid: u32, name: &'static str, a: &mut abi::DmaQueueInit) -> Answer {
        // DMAQ-2: an unknown handle is no ring at all. driver: neuron_cdev.c, ncdev_dma_queue_init.
        let lookup = |m: &mut Model, h: u64, what: &str| -> Option<u64> {
            if h == 0 {
                return None;
            }
            if m.chunks.contains(h) {
                Some(h)
            } else {
                m.warn(
                    pid,
                    name,
                    format!("DMAQ-2: invalid {what} memory handle {h}: the driver queues no ring for it"),
                    "neuron_cdev.c: ncdev_dma_queue_init",
                );
                None
            }
        };
        let rx = lookup(self, a.rx_handle, "RX");
        let tx = lookup(self, a.tx_handle, "TX");
        let rxc = lookup(self, a.rxc_handle, "RX completion");
        const RING: &str = "neuron_ring.c: ndmar_queue_init";
        if a.eng_id >= DMA_ENGINES {
            return self.refuse(pid, name, Errno::EINVAL, "DMAQ-3: engine id >= NUM_DMA_ENG_PER_DEVICE (132)", RING);
        }
        if a.qid >= DMA_QUEUES {
            return self.refuse(pid, name, Errno::EINVAL, "DMAQ-4: qid >= DMA_MAX_Q_V4 (16)", RING);
        }
        // DMAQ-13: no ownership check, so a queue of a core another process
        // marked, or one another live process owns, is re-pointed all the
        // same. driver: neuron_ring.c, ndmar_queue_init.
        let key = (a.eng_id, a.qid);
        self.check_queue_ownership(pid, name, key);
        // DMAQ-5: the queue is the caller's from here on, and its ring records
        // take the chunks, whatever the checks below decide.
        let q = self.queues.entry(key).or_default();
        q.owner = pid;
        if tx.is_some() {
            q.tx.chunk = tx;
            q.tx.driver_ring = false;
        }
        if rx.is_some() {
            q.rx.chunk = rx;
            q.rx.driver_ring = false;
        }
        for (h, count, what) in [(tx, a.tx_desc_count, "TX"), (rx, a.rx_desc_count, "RX")] {
            if let Some(c) = h.and_then(|h| self.chunks.get(h).copied()) {
                if u64::from(count) * DESC_BYTES > c.size {
                    // The driver's check is commented out: accepted, the device reads past the chunk.
                    self.warn(
                        pid,
                        name,
                        format!(
                            "DMAQ-5: {what} ring of {count} descriptors is larger than its chunk ({} bytes)",
                            c.size
                        ),
                        RING,
                    );
                }
            }
        }
        if let Some(h) = rxc {
            let size = self.chunks.get(h).map_or(0, |c| c.size);
            if u64::from(a.rx_desc_count) * DESC_BYTES > size {
                return self.refuse(
                    pid,
                    name,
                    Errno::EINVAL,
                    "DMAQ-6: RX completion ring smaller than rx_desc_count",
                    RING,
                );
            }
        }
        // DMAQ-7, a ring base not 256-byte aligned, cannot happen here: every
        // chunk is page-aligned.
        // DMAQ-8..10: a bare `return -1` is EPERM. driver: udma/udma_m2m.c, udma_m2m_init_queue.
        const M2M: &str = "udma/udma_m2m.c: udma_m2m_init_queue";
        let multiple = (UDMA_ALIGN / DESC_BYTES) as u32;
        if !a.tx_desc_count.is_multiple_of(multiple) {
            return self.refuse(pid, name, Errno::EPERM, "DMAQ-8: TX ring size not a multiple of 16 descriptors", M2M);
        }
        if !a.rx_desc_count.is_multiple_of(multiple) {
            return self.refuse(pid, name, Errno::EPERM, "DMAQ-9: RX ring size not a multiple of 16 descriptors", M2M);
        }
        if rxc.is_some() {
            return self.refuse(pid, name, Errno::EPERM, "DMAQ-10: completion ring not supported", M2M);
        }
        // DMAQ-11/12, TX then RX: TX stays initialised if RX fails.
        // driver: udma/udma_main.c, udma_q_init_validate.
        const MAIN: &str = "udma/udma_main.c: udma_q_init_validate";
        let (arch, eng) = (self.arch, a.eng_id);
        let side = |count: u32| udma_q_init_validate(arch, eng, count).map_err(RingRefusal::why);
        if let Err(why) = side(a.tx_desc_count) {
            return self.refuse(pid, name, Errno::EINVAL, &format!("DMAQ-11: TX: {why}"), MAIN);
        }
        let q = self.queues.entry(key).or_default();
        q.tx = QueueSide { size: a.tx_desc_count, next: 0, ring_id: INITIAL_RING_ID, ..q.tx };
        q.acked = 0;
        if let Err(why) = side(a.rx_desc_count) {
            return self.refuse(pid, name, Errno::EINVAL, &format!("DMAQ-12: RX: {why}"), MAIN);
        }
        let q = self.queues.entry(key).or_default();
        q.rx = QueueSide { size: a.rx_desc_count, next: 0, ring_id: INITIAL_RING_ID, ..q.rx };
        Ok(0)
    }

    pub(super) fn copy_start(&mut self, pid: u32, name: &'static str, a: &mut abi::DmaQueueCopyStart) -> Answer {
        // driver: neuron_ring.c, ndmar_queue_copy_start; udma/udma_m2m.c,
        // udma_m2m_copy_start; udma/udma_main.c, udma_desc_action_add.
        const M2M: &str = "udma/udma_m2m.c: udma_m2m_copy_start";
        if a.eng_id >= DMA_ENGINES {
            return self.refuse(
                pid,
                name,
                Errno::EINVAL,
                "COPY-1: engine id >= NUM_DMA_ENG_PER_DEVICE (132)",
                "neuron_ring.c: ndmar_queue_copy_start",
            );
        }
        let queues = if engine_initialised(self.arch, a.eng_id) { DMA_QUEUES } else { 0 };
        if a.qid >= queues {
            let why = if queues == 0 {
                format!("COPY-2: engine {} was never initialised by the driver (num_of_queues 0)", a.eng_id)
            } else {
                "COPY-2: qid >= the engine's queues (16)".to_string()
            };
            return self.refuse(pid, name, Errno::EPERM, &why, M2M);
        }
        let q = self.queues.get(&(a.eng_id, a.qid)).copied().unwrap_or_default();
        if a.tx_desc_count > q.tx.size {
            let why = if q.tx.size == 0 {
                "COPY-3: the queue was never initialised (DMA_QUEUE_INIT): its TX size is 0".to_string()
            } else {
                format!("COPY-3: tx_desc_count {} > the TX ring's {} descriptors", a.tx_desc_count, q.tx.size)
            };
            return self.refuse(pid, name, Errno::EPERM, &why, M2M);
        }
        if a.rx_desc_count > q.rx.size {
            let why = if q.rx.size == 0 {
                "COPY-4: the queue was never initialised (DMA_QUEUE_INIT): its RX size is 0".to_string()
            } else {
                format!("COPY-4: rx_desc_count {} > the RX ring's {} descriptors", a.rx_desc_count, q.rx.size)
            };
            return self.refuse(pid, name, Errno::EPERM, &why, M2M);
        }
        if a.rx_desc_count == 0 {
            return self.bug(
                pid,
                name,
                "COPY-5: udma_desc_action_add: BUG_ON(num == 0 || num > size) with num = rx_desc_count = 0 (the RX \
                 count is always added)",
                "udma/udma_main.c",
            );
        }
        if q.rx.chunk.is_none() && !q.rx.driver_ring {
            return self.bug(
                pid,
                name,
                "COPY-7: the queue has no RX ring chunk (DMA_QUEUE_INIT without rx_handle): copy start dereferences \
                 it (NULL)",
                "neuron_ring.c: ndmar_queue_copy_start",
            );
        }
        self.execute_copy(pid, name, a.eng_id, a.qid, a.tx_desc_count, a.rx_desc_count);
        Ok(0)
    }

    /// COPY-8: the copy a copy start releases, executed as the device's UDMA
    /// would, G-DRV-COPY. The `tx` M2S and `rx` S2M descriptors at the queue's
    /// positions are read from the rings' chunks, and the TX buffers' bytes
    /// are written into the RX buffers as one stream, both in order.
    ///
    /// Each BD must carry the ring id of its lap, starting at 1 and advancing
    /// mod 4 at each wrap: the device takes no other, and the driver does not
    /// look. Otherwise a warning, and the device stalls, so nothing is copied.
    /// Buffer addresses are chunk `pa`s, each found by `Model::chunk_range_of`;
    /// a range outside every chunk, or a descriptor outside its ring's chunk,
    /// is a DMA error: logged, nothing copied. The queue's positions advance by
    /// the counts either way, G-DRV-QSTATE. driver: udma/udma.h.
    fn execute_copy(&mut self, pid: u32, name: &'static str, eng: u32, qid: u32, tx: u32, rx: u32) {
        let Some(q) = self.queues.get(&(eng, qid)).copied() else { return };
        if q.tx.driver_ring || q.rx.driver_ring {
            // The driver's own rings, H2T or dummy: nothing the model can execute.
            return;
        }
        let (txs, tx_bds) = self.fetch_bds(q.tx, tx);
        let (rxs, rx_bds) = self.fetch_bds(q.rx, rx);
        if let Some(q) = self.queues.get_mut(&(eng, qid)) {
            q.tx = txs;
            q.rx = rxs;
        }
        let faulted = if tx.max(rx) > 1 {
            self.data_copy_starts = self.data_copy_starts.saturating_add(1);
            self.copy_fault.filter(|f| self.data_copy_starts >= f.from)
        } else {
            None
        };
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
                        "COPY-8: engine {eng} queue {qid} {}: BD {} has ring id {}, the lap's is {}: the device \
                         stalls on it (nothing copied)",
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
        // Every descriptor fetched and every buffer inside a chunk, and none in
        // host memory on an engine without host connectivity, before a byte moves.
        let host_reach = nrt_abi::devmap::host_connected(self.arch, eng);
        let mut segs: [Vec<(u64, u64)>; 2] = [Vec::new(), Vec::new()];
        let mut total = [0u64; 2];
        for (k, (dir, bds)) in [(true, &tx_bds), (false, &rx_bds)].into_iter().enumerate() {
            for b in bds.iter() {
                let fault = match b.fetch {
                    Err(why) => Some(format!("BD {}: {why}", b.index)),
                    Ok(()) => match self.chunk_range_of(b.addr, u64::from(b.len)) {
                        // COPY-9: an engine without host connectivity cannot reach host memory.
                        Some((_, true)) if !host_reach => Some(format!(
                            "COPY-9: BD {} {} 0x{:x} is host memory, and engine {eng} has no host connectivity \
                             (v3/neuron_dhal_v3.c: ndma_get_engines_with_host_connectivity_v3: engines 4-7 and 12-15 \
                             of each core's 16)",
                            b.index,
                            if dir { "source" } else { "destination" },
                            b.addr
                        )),
                        Some((off, _)) => {
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
        if let Some(f) = faulted {
            let what = if f.marker { "nothing moved" } else { "only the completion markers moved" };
            self.note(
                pid,
                name,
                format!(
                    "copy fault: engine {eng} queue {qid}: copy start {} of data ({} bytes): {what} \
                     (--fault-copy-{} {}, G-DRV-COPY-FAULT)",
                    self.data_copy_starts,
                    total[0].min(total[1]),
                    if f.marker { "marker" } else { "data" },
                    f.from
                ),
            );
            if f.marker {
                return;
            }
            for (k, seg) in segs.iter_mut().enumerate() {
                let last = seg.pop();
                seg.clear();
                seg.extend(last);
                total[k] = seg.iter().map(|s| s.1).sum();
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
                    "COPY-8: engine {eng} queue {qid}: the TX descriptors carry {} bytes, the RX descriptors {}: {n} \
                     copied",
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
    /// faults the transfer. Logged as a warning, nothing written.
    fn dma_error(&mut self, pid: u32, name: &'static str, what: String) {
        self.dma_errors = self.dma_errors.saturating_add(1);
        self.warn(
            pid,
            name,
            format!("COPY-8: DMA error: {what}: the device's UDMA faults the transfer, nothing copied"),
            "the device's UDMA, sim; udma/udma_m2m.c does not check BD addresses",
        );
    }

    /// The `count` descriptors of side `s` from its position, and the side
    /// moved past them, the ring id advancing at each wrap.
    fn fetch_bds(&self, mut s: QueueSide, count: u32) -> (QueueSide, Vec<FetchedBd>) {
        let chunk = s.chunk.and_then(|h| self.chunks.get(h).copied());
        let map = self.file.map();
        let mut out = Vec::with_capacity(count.min(s.size).min(COPY_DESCS_MAX) as usize);
        for _ in 0..count.min(s.size) {
            if out.len() < COPY_DESCS_MAX as usize {
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
            }
            // Past the model's bound the caller refuses the copy; the position still moves.
            s.next += 1;
            if s.next >= s.size {
                s.next = 0;
                s.ring_id = (s.ring_id + 1) % 4;
            }
        }
        (s, out)
    }

    /// Move the first `n` bytes of the TX segments' stream into the RX
    /// segments, in order, through the device file's mapping, which the
    /// process shares: one in-memory copy per segment pair, no system call.
    fn stream(&self, src: &[(u64, u64)], dst: &[(u64, u64)], mut n: u64) -> Result<(), &'static str> {
        let map = self.file.map();
        let (mut s, mut d) = (src.iter().copied(), dst.iter().copied());
        let (mut cs, mut cd) = ((0u64, 0u64), (0u64, 0u64));
        while n > 0 {
            if cs.1 == 0 {
                cs = s.next().unwrap_or_default();
            }
            if cd.1 == 0 {
                cd = d.next().unwrap_or_default();
            }
            let step = cs.1.min(cd.1).min(n);
            if step == 0 {
                break;
            }
            map.copy_bytes(cs.0, cd.0, step).ok_or("a segment is past the mapping")?;
            cs = (cs.0 + step, cs.1 - step);
            cd = (cd.0 + step, cd.1 - step);
            n -= step;
        }
        Ok(())
    }

    pub(super) fn ack_completed(&mut self, pid: u32, name: &'static str, a: &mut abi::DmaAckCompleted) -> Answer {
        // RX then TX. driver: neuron_ring.c, ndmar_ack_completed;
        // udma/udma_main.c, udma_q_handle_get; udma/udma.h, udma_cdesc_ack.
        if a.eng_id >= DMA_ENGINES {
            return self.refuse(
                pid,
                name,
                Errno::EINVAL,
                "ACK-1: engine id >= NUM_DMA_ENG_PER_DEVICE (132)",
                "neuron_ring.c: ndmar_ack_completed",
            );
        }
        let queues = if engine_initialised(self.arch, a.eng_id) { DMA_QUEUES } else { 0 };
        if a.qid >= queues {
            return self.refuse(
                pid,
                name,
                Errno::EINVAL,
                &format!("ACK-2: qid {} >= the engine's num_of_queues ({queues})", a.qid),
                "udma/udma_main.c: udma_q_handle_get",
            );
        }
        let q = self.queues.get(&(a.eng_id, a.qid)).copied().unwrap_or_default();
        // IS_POWER_OF_TWO is `(n & (n - 1)) == 0`: a queue never initialised, size 0, passes.
        for (size, what, id) in [(q.rx.size, "RX", "ACK-3"), (q.tx.size, "TX", "ACK-4")] {
            if size & size.wrapping_sub(1) != 0 {
                return self.bug(
                    pid,
                    name,
                    &format!(
                        "{id}: udma_cdesc_ack: BUG_ON(!IS_POWER_OF_TWO(size)) on the {what} queue of {size} \
                         descriptors"
                    ),
                    "udma/udma.h",
                );
            }
        }
        // ACK-5: the completion index advances modulo the size.
        if let Some(q) = self.queues.get_mut(&(a.eng_id, a.qid)) {
            q.acked = q.acked.wrapping_add(a.count) & q.rx.size.wrapping_sub(1);
        }
        Ok(0)
    }

    pub(super) fn queue_state(
        &mut self,
        pid: u32,
        name: &'static str,
        a: &mut abi::DmaQueueGetState,
        mem: &mut dyn TargetMem,
    ) -> Answer {
        if a.eng_id >= DMA_ENGINES {
            return self.refuse(pid, name, Errno::EINVAL, "QST-1: engine id past the device's", "neuron_ring.c");
        }
        if a.qid >= DMA_QUEUES {
            return self.refuse(pid, name, Errno::EINVAL, "QST-2: queue id past the engine's", "udma/udma_main.c");
        }
        // QST-3: the model's view of the queue, G-DRV-QSTATE; a state pointer
        // not writable returns copy_to_user's positive count.
        let q = self.queues.get(&(a.eng_id, a.qid)).copied().unwrap_or_default();
        for (ptr, s) in [(a.tx, q.tx), (a.rx, q.rx)] {
            let base = s.chunk.and_then(|h| self.chunks.get(h)).map_or(0, |c| SIM_HOST_PA_BASE | c.offset);
            let st = abi::DmaQueueState {
                base_addr: base,
                length: s.size,
                head_pointer: s.next,
                tail_pointer: s.next,
                ..abi::DmaQueueState::default()
            };
            if mem.write(ptr, st.as_bytes()).is_err() {
                let n = core::mem::size_of::<abi::DmaQueueState>() as i64;
                return self.positive(pid, name, n, "QST-3: state pointer not writable", "neuron_cdev.c");
            }
        }
        Ok(0)
    }
}
