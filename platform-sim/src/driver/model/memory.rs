//! Memory chunks: `MEM_ALLOC_V2MT`, `MEM_GET_EXTENDED_INFO`, `MEM_FREE`, and
//! the chunk table every other family looks chunks up in. driver:
//! neuron_mempool.c, neuron_cdev.c.
//!
//! The table is indexed twice, by handle and by file offset, so that a BD's
//! buffer is found in `O(log n)` whatever the number of chunks: one copy start
//! may release 65,536 BDs, and a process may hold tens of thousands of chunks.

use std::collections::{BTreeMap, BTreeSet};

use nrt_abi::ioctl as abi;

use super::{dram_channels, Answer, Errno, Model, TargetMem, MAX_NC_PER_DEVICE};
use crate::shm::PAGE;

/// Physical address the model reports for host chunk at file offset `off`
/// **sim**: a PCI host base over the file offset, G-DRV-POOL.
pub const SIM_HOST_PA_BASE: u64 = 0x8000_0000_0000;

/// What the model reports as `MEM_GET_EXTENDED_INFO.mem_handle` for a chunk.
/// The driver writes its kernel pointer to the chunk there, not the handle;
/// the model writes an opaque value in the x86-64 direct-map range, never a
/// valid handle. **sim**. driver: neuron_cdev.c, `ncdev_mem_get_extended_info`.
pub const SIM_KERNEL_POINTER_BASE: u64 = 0xFFFF_8880_0000_0000;

/// Who owns a chunk, and so when the driver frees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChunkKind {
    /// `MEM_ALLOC_V2MT`, `MC_LIFESPAN_CUR_PROCESS`: freed by `MEM_FREE` or at
    /// the process's flush.
    User,
    /// A notification ring, `MC_LIFESPAN_DEVICE`: freed by a forced re-init or
    /// an NC reset of its core.
    Nq,
    /// A datastore, `MC_LIFESPAN_DEVICE`.
    Datastore,
}

/// A memory chunk the model handed out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chunk {
    /// File offset, what `mmap` takes.
    pub offset: u64,
    /// Bytes; a whole number of pages for allocations.
    pub size: u64,
    /// Host memory 1 or device memory 0, as asked.
    pub host: bool,
    /// The process that allocated it.
    pub pid: u32,
    /// Who owns it.
    pub kind: ChunkKind,
}

/// The chunk table: by handle, and by file offset.
#[derive(Debug)]
pub struct Chunks {
    by_handle: BTreeMap<u64, Chunk>,
    /// File offset -> handle; every chunk has its own offset.
    by_offset: BTreeMap<u64, u64>,
    /// The allocator's region of the device file.
    base: u64,
    len: u64,
    /// Interval lookups made, each `O(log n)`, for tests and the summary.
    pub lookups: u64,
    /// Handles given back, the last freed on top: `nmch_handle_free` pushes
    /// the freed index at the head of the free list, `nmch_handle_alloc` pops
    /// the head. MEMF-5. driver: neuron_mc_handle.c.
    free_handles: Vec<u64>,
    /// The next handle never issued: the driver's first free index is 1, and
    /// a fresh entry's successor is the next index.
    next_handle: u64,
    /// Handles issued again after a free: the stale-handle hazard of MEMF-5.
    reissued: BTreeSet<u64>,
    /// Host chunks allocated as `CONTIGUOUS_SCRATCHPAD_DEVICE`, MEMF-6.
    pub(super) host_scratchpad: BTreeSet<u64>,
    /// Every chunk allocated as `CONTIGUOUS_SCRATCHPAD_DEVICE`, host or device; MMAP-6.
    pub(super) scratchpad: BTreeSet<u64>,
}

const fn page_up(v: u64) -> u64 {
    v.div_ceil(PAGE).saturating_mul(PAGE)
}

impl Chunks {
    /// An empty table allocating from `[base, base + len)` of the device file.
    pub fn new(base: u64, len: u64) -> Chunks {
        Chunks {
            by_handle: BTreeMap::new(),
            by_offset: BTreeMap::new(),
            base,
            len,
            lookups: 0,
            free_handles: Vec::new(),
            next_handle: 1,
            reissued: BTreeSet::new(),
            host_scratchpad: BTreeSet::new(),
            scratchpad: BTreeSet::new(),
        }
    }

    /// The allocator's region, `base` and `len`.
    pub fn region(&self) -> (u64, u64) {
        (self.base, self.len)
    }

    /// The chunk of `handle`.
    pub fn get(&self, handle: u64) -> Option<&Chunk> {
        self.by_handle.get(&handle)
    }

    /// Whether `handle` is a live chunk.
    pub fn contains(&self, handle: u64) -> bool {
        self.by_handle.contains_key(&handle)
    }

    /// Chunks handed out.
    pub fn len(&self) -> usize {
        self.by_handle.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.by_handle.is_empty()
    }

    /// The handle for a new chunk: the last one freed, else the next fresh one.
    pub(super) fn take_handle(&mut self) -> u64 {
        if let Some(h) = self.free_handles.pop() {
            self.reissued.insert(h);
            return h;
        }
        let h = self.next_handle;
        self.next_handle = self.next_handle.wrapping_add(1).max(1);
        h
    }

    /// Whether `handle` was freed once and issued again since.
    pub fn reissued(&self, handle: u64) -> bool {
        self.reissued.contains(&handle)
    }

    pub(super) fn insert(&mut self, handle: u64, c: Chunk) {
        if let Some(old) = self.by_handle.insert(handle, c) {
            self.by_offset.remove(&old.offset);
        }
        self.by_offset.insert(c.offset, handle);
    }

    pub(super) fn remove(&mut self, handle: u64) -> Option<Chunk> {
        let c = self.by_handle.remove(&handle)?;
        if self.by_offset.get(&c.offset) == Some(&handle) {
            self.by_offset.remove(&c.offset);
        }
        self.free_handles.push(handle);
        self.host_scratchpad.remove(&handle);
        self.scratchpad.remove(&handle);
        Some(c)
    }

    pub(super) fn retain(&mut self, mut keep: impl FnMut(&Chunk) -> bool) {
        let gone: Vec<u64> = self.by_handle.iter().filter(|(_, c)| !keep(c)).map(|(h, _)| *h).collect();
        for h in gone {
            self.remove(h);
        }
    }

    /// The handles of the chunks `pick` selects.
    pub(super) fn handles_where(&self, mut pick: impl FnMut(&Chunk) -> bool) -> Vec<u64> {
        self.by_handle.iter().filter(|(_, c)| pick(c)).map(|(h, _)| *h).collect()
    }

    /// Bytes of host and of device memory in `pid`'s `MEM_ALLOC_V2MT` chunks.
    pub fn usage_of(&self, pid: u32) -> (u64, u64) {
        let mine = self.by_handle.values().filter(|c| c.pid == pid && c.kind == ChunkKind::User);
        mine.fold((0, 0), |(h, d), c| if c.host { (h + c.size, d) } else { (h, d + c.size) })
    }

    /// The handle of the chunk holding `[off, off + len)` of the device file,
    /// if one does: the last chunk starting at or below `off`, since chunks
    /// never overlap.
    pub fn file_range(&self, off: u64, len: u64) -> Option<u64> {
        let end = off.checked_add(len)?;
        let (_, &h) = self.by_offset.range(..=off).next_back()?;
        let c = self.by_handle.get(&h)?;
        (end <= c.offset.saturating_add(c.size)).then_some(h)
    }

    /// First fit of `size` bytes, page-rounded, in the region: at the end of
    /// the last chunk when there is room, in `O(log n)`, else the first gap.
    /// First fit at an offset that is a multiple of `align`, a power of two
    /// above the page size, as `gen_pool_first_fit_align`: the lowest aligned
    /// gap that holds `size` bytes.
    fn alloc_aligned(&self, size: u64, align: u64) -> Option<u64> {
        let size = page_up(size);
        if size == 0 || !align.is_power_of_two() {
            return None;
        }
        let up = |o: u64| o.checked_add(align - 1).map(|v| v & !(align - 1));
        let limit = self.base.saturating_add(self.len);
        let mut at = up(self.base)?;
        for (&o, h) in self.by_offset.range(self.base..limit) {
            if at.checked_add(size)? <= o {
                break;
            }
            at = at.max(up(o.saturating_add(self.by_handle.get(h).map_or(0, |c| c.size)))?);
        }
        (at.checked_add(size)? <= limit).then_some(at)
    }

    fn alloc(&self, size: u64) -> Option<u64> {
        let size = page_up(size);
        if size == 0 {
            return None;
        }
        let limit = self.base.saturating_add(self.len);
        let in_region = self.by_offset.range(self.base..limit);
        let top = in_region
            .clone()
            .next_back()
            .and_then(|(_, h)| self.by_handle.get(h))
            .map_or(self.base, |c| c.offset.saturating_add(c.size));
        if top.checked_add(size)? <= limit {
            return Some(top);
        }
        let mut at = self.base;
        for (&o, h) in in_region {
            if o >= at.saturating_add(size) {
                break;
            }
            at = at.max(o.saturating_add(self.by_handle.get(h).map_or(0, |c| c.size)));
        }
        (at.checked_add(size)? <= limit).then_some(at)
    }
}

/// `NEURON_MEMALLOC_TYPE_CONTIGUOUS_SCRATCHPAD_DEVICE`, the 20th of the
/// allocation categories, whose allocation ignores `align`.
/// driver: share/neuron_driver_shared.h.
pub const CONTIGUOUS_SCRATCHPAD_DEVICE: u32 = 19;

impl Model {
    /// A new chunk of `size` bytes from the pool; `None` when there is no room.
    pub(super) fn pool_alloc(&mut self, size: u64, host: bool, pid: u32, kind: ChunkKind) -> Option<u64> {
        let offset = self.chunks.alloc(size)?;
        Some(self.new_handle(Chunk { offset, size: page_up(size), host, pid, kind }))
    }

    /// The device-file offset of `[pa, pa + len)` when it lies inside one
    /// chunk handed out, whose `pa` is `SIM_HOST_PA_BASE | offset`, G-DRV-POOL,
    /// and whether that chunk is host memory.
    pub fn chunk_range_of(&mut self, pa: u64, len: u64) -> Option<(u64, bool)> {
        self.chunks.lookups = self.chunks.lookups.saturating_add(1);
        let off = pa.checked_sub(SIM_HOST_PA_BASE)?;
        let h = self.chunks.file_range(off, len)?;
        Some((off, self.chunks.get(h).is_some_and(|c| c.host)))
    }

    pub(super) fn mem_alloc(
        &mut self,
        pid: u32,
        name: &'static str,
        a: &mut abi::MemAllocV2Mt,
        mem: &mut dyn TargetMem,
    ) -> Answer {
        const F: &str = "neuron_mempool.c: mc_alloc_internal";
        // MEM-1..5, in mc_alloc_internal's order.
        if a.size > i64::MAX as u64 {
            return self.refuse(pid, name, Errno::EINVAL, "MEM-1: size > INT64_MAX", F);
        }
        if a.dram_channel >= dram_channels(self.arch) {
            return self.refuse(pid, name, Errno::EINVAL, "MEM-2: dram_channel past the device's", F);
        }
        if a.nc_id >= MAX_NC_PER_DEVICE {
            return self.refuse(pid, name, Errno::EINVAL, "MEM-3: nc_id >= MAX_NC_PER_DEVICE (8)", F);
        }
        // MEM-4, a dram_region past the pool's regions, is the driver's
        // configuration: the model has one pool and accepts any region. G-DRV-POOL.
        if a.host_memory != 0 && a.align != 0 {
            return self.refuse(
                pid,
                name,
                Errno::EINVAL,
                &format!("MEM-5: align {} for host memory: aligned host memory is not supported (use 0)", a.align),
                F,
            );
        }
        // MEM-8: device memory: an alignment above PAGE_SIZE is a first-fit
        // aligned allocation, EINVAL past INT_MAX, ENOMEM with no aligned room.
        // Up to PAGE_SIZE, and for the contiguous scratchpad, mem_type 19,
        // align is ignored.
        let aligned = a.host_memory == 0 && a.mem_type != CONTIGUOUS_SCRATCHPAD_DEVICE && a.align > PAGE;
        if aligned && a.align > i32::MAX as u64 {
            return self.refuse(
                pid,
                name,
                Errno::EINVAL,
                &format!("MEM-8: device memory align {} > INT_MAX: alignment not supported", a.align),
                F,
            );
        }
        if aligned {
            let Some(offset) = self.chunks.alloc_aligned(a.size, a.align) else {
                return self.refuse(
                    pid,
                    name,
                    Errno::ENOMEM,
                    &format!(
                        "MEM-8: {} bytes aligned to {}: no aligned room (an alignment that is not a power of two never \
                         yields an aligned address here)",
                        a.size, a.align
                    ),
                    F,
                );
            };
            let h = self.new_handle(Chunk { offset, size: page_up(a.size), host: false, pid, kind: ChunkKind::User });
            return self.mem_alloc_finish(pid, name, a, h, mem);
        }
        let scratchpad = a.mem_type == CONTIGUOUS_SCRATCHPAD_DEVICE;
        let host_scratchpad = a.host_memory != 0 && scratchpad;
        let Some(h) = self.pool_alloc(a.size, a.host_memory != 0, pid, ChunkKind::User) else {
            let region = self.chunks.region().1;
            return self.refuse(
                pid,
                name,
                Errno::ENOMEM,
                &format!("MEM-6: {} bytes: no room (the simulated pool holds {region} bytes, G-DRV-POOL)", a.size),
                F,
            );
        };
        let r = self.mem_alloc_finish(pid, name, a, h, mem);
        if scratchpad && self.chunks.contains(h) {
            self.chunks.scratchpad.insert(h);
        }
        if host_scratchpad && self.chunks.contains(h) {
            // MEMF-6: mc_alloc_internal does not cross-check mem_type with
            // host memory; the chunk's free will oops.
            self.chunks.host_scratchpad.insert(h);
        }
        r
    }

    /// The end of MEM_ALLOC_V2MT once chunk `h` is allocated.
    fn mem_alloc_finish(
        &mut self,
        pid: u32,
        name: &'static str,
        a: &abi::MemAllocV2Mt,
        h: u64,
        mem: &mut dyn TargetMem,
    ) -> Answer {
        // MEM-0: mc_alloc_internal -> mc_add_to_lifespan_list ->
        // mpset_get_lifespan_head: a CUR_PROCESS chunk goes on the caller's
        // attach slot's list, BUG_ON(slot == -1) for a caller that is not
        // attached, such as a forked child on an inherited descriptor.
        if !self.attached(pid) {
            self.chunks.remove(h);
            return self.bug(
                pid,
                name,
                "MEM-0: the caller has no attach slot (it did not open the device): BUG_ON(slot == -1)",
                "neuron_mempool.c: mpset_get_lifespan_head",
            );
        }
        // MEM-7: ncdev_mem_alloc_libnrt: the handle goes through the caller's
        // pointer; when that copy fails the chunk is freed and the bytes not
        // copied, 8, are returned as a *positive* value.
        if mem.write(a.mem_handle, &h.to_le_bytes()).is_err() {
            self.chunks.remove(h);
            return self.positive(
                pid,
                name,
                8,
                &format!("MEM-7: mem_handle pointer 0x{:x} not writable: the chunk is freed", a.mem_handle),
                "neuron_cdev.c: ncdev_mem_alloc_libnrt",
            );
        }
        Ok(0)
    }

    pub(super) fn mem_info(&mut self, pid: u32, name: &'static str, a: &mut abi::MemGetExtendedInfo) -> Answer {
        let Some(c) = self.chunks.get(a.mem_handle).copied() else {
            // MEMX-1: a bad handle returns EINVAL *positive*; nothing is copied back.
            return self.positive(
                pid,
                name,
                i64::from(libc::EINVAL),
                "MEMX-1: invalid memory handle",
                "neuron_cdev.c: ncdev_mem_get_extended_info",
            );
        };
        // MEMX-2: the whole struct is rewritten from a local one: mem_handle
        // becomes the chunk's kernel pointer, not the handle. The driver leaves
        // `version` as its stack held it; the model writes 0.
        *a = abi::MemGetExtendedInfo {
            mem_handle: SIM_KERNEL_POINTER_BASE | (c.offset << 4),
            version: 0,
            host_memory: u32::from(c.host),
            // The driver's nmmap_offset is the chunk's address; here, its file offset. G-DRV-MMAP.
            mmap_offset: c.offset,
            pa: SIM_HOST_PA_BASE | c.offset,
            pid: u64::from(c.pid),
            size: c.size,
        };
        Ok(0)
    }

    pub(super) fn mem_free(&mut self, pid: u32, name: &'static str, a: &mut abi::MemFree) -> Answer {
        const F: &str = "neuron_cdev.c: ncdev_mem_free";
        let h = a.mem_handle;
        let Some(c) = self.chunks.get(h).copied() else {
            return self.refuse(pid, name, Errno::EINVAL, "MEMF-1: invalid memory handle", F);
        };
        // MEMF-5: handles are reused last-in first-out: a copy of a handle
        // freed before this chunk was allocated frees this chunk and returns 0.
        if self.chunks.reissued(h) {
            self.note(
                pid,
                name,
                format!(
                    "MEMF-5: handle {h} was freed before and issued again (to the chunk at offset 0x{:x}, pid {}): a \
                     stale copy of the old handle frees this newer chunk, and the driver answers 0 (handles are \
                     reused last-in first-out, neuron_mc_handle.c: nmch_handle_free)",
                    c.offset, c.pid
                ),
            );
        }
        // MEMF-6: a contiguous-scratchpad chunk's tail reads the pool's
        // scratchpad fields through mc->mp, which a host chunk from
        // dma_alloc_coherent leaves NULL. driver: neuron_mempool.c, mc_free.
        if self.chunks.host_scratchpad.contains(&h) {
            self.chunks.remove(h);
            return self.bug(
                pid,
                name,
                &format!(
                    "MEMF-6: chunk {h} is host memory allocated as CONTIGUOUS_SCRATCHPAD_DEVICE (mem_type 19): its free \
                     dereferences the NULL pool pointer mc->mp"
                ),
                "neuron_mempool.c: mc_free",
            );
        }
        // MEMF-2: the driver frees any chunk by its handle, mc_free.
        self.chunks.remove(h);
        if c.kind == ChunkKind::Nq {
            // MEMF-4: the NOTIFIC slot still points at it; the ring's record
            // keeps the freed chunk, which a reset or a forced re-init frees
            // again: a kernel BUG, NQ-6 and RESET-4.
            self.warn(
                pid,
                name,
                format!(
                    "MEMF-4: chunk {h} is a notification ring: freed while its slot still points at it (an NC reset \
                     or a forced re-init of the ring then frees it again: kernel BUG)"
                ),
                F,
            );
            for r in self.nq.values_mut().filter(|r| r.handle == h) {
                r.freed = true;
            }
            return Ok(0);
        }
        let used: Vec<(u32, u32)> = self
            .queues
            .iter()
            .filter(|(_, q)| q.tx.chunk == Some(h) || q.rx.chunk == Some(h))
            .map(|(k, _)| *k)
            .collect();
        if let Some((e, q)) = used.first() {
            // MEMF-3: the queue stays programmed on the freed pages until the
            // owner's flush re-points it, FLUSH-2.
            self.warn(
                pid,
                name,
                format!(
                    "MEMF-3: chunk {h} freed while DMA queue (engine {e}, queue {q}) still uses it as a ring: the \
                     queue stays programmed on it until the process is gone (DMA_QUEUE_RELEASE does not unprogram it)"
                ),
                F,
            );
        }
        Ok(0)
    }
}
