//! Notification rings: `NOTIFICATIONS_INIT_V2` and `..._WITH_REALLOC_V2`;
//! `NOTIFICATIONS_QUEUE_INFO`, NQI-1, is in `mod.rs`. driver: neuron_cdev.c,
//! `ncdev_nc_nq_init_libnrt`; neuron_nq.c, `nnq_init`, `nnq_destroy_nc`.

use nrt_abi::ioctl::{nq_dev_type, nq_type};

use super::{nc_per_device, Answer, Chunk, ChunkKind, Errno, Model, Refusal, MAX_NQ_SUPPORTED, NQ_QUEUES_PER_TYPE};
use crate::layout::NQ_PER_CORE;

/// A notification ring the driver set up, `nd->nq_mc[nc][nq_id]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NqRing {
    /// Its chunk handle.
    pub handle: u64,
    /// The slot programmed: the `engine_index`, or 0 for TRACE_DMA.
    pub slot: u32,
    /// Its chunk was freed with `MEM_FREE` while the driver still records it,
    /// MEMF-4: the driver frees it again on a reset or a forced re-init.
    pub freed: bool,
}

impl Model {
    /// `nnq_init` for `(nq_dev_id, nq_dev_type, nq_type, engine_index, size,
    /// on_host_memory)`: the ring's mmap offset and handle.
    #[allow(clippy::type_complexity)]
    pub(super) fn nq_init(
        &mut self,
        pid: u32,
        name: &'static str,
        (dev_id, dev_type, ty, engine_index, size, on_host): (u32, u32, u32, u32, u32, u32),
        force: bool,
    ) -> Result<(u64, u64), Refusal> {
        const NQ: &str = "neuron_nq.c: nnq_init";
        // NQ-1. driver: neuron_cdev.c, ncdev_nc_nq_init_libnrt.
        if dev_type == nq_dev_type::TOPSP {
            self.refuse(pid, name, Errno::ENODEV, "NQ-1: top-SP rings are not simulated (G-DRV-TOPSP)", "sim")?;
        } else if dev_type != nq_dev_type::NEURON_CORE {
            self.refuse(
                pid,
                name,
                Errno::ENOSYS,
                "NQ-1: nq_dev_type neither NC (0) nor TOPSP (1)",
                "neuron_cdev.c: ncdev_nc_nq_init_libnrt",
            )?;
        }
        // NQ-2..4: nnq_init: nc_id and engine index are u8 parameters.
        if size & size.wrapping_sub(1) != 0 {
            self.refuse(pid, name, Errno::EINVAL, "NQ-2: ring size not a power of 2", NQ)?;
        }
        let nc = dev_id as u8;
        if u32::from(nc) >= nc_per_device(self.arch) {
            self.refuse(pid, name, Errno::EINVAL, "NQ-3: nq_dev_id >= the device's cores", NQ)?;
        }
        let eng = engine_index as u8;
        // nq_type * 16 + index, a u8. driver: v2/neuron_dhal_v2.c, nnq_get_nqid_v2.
        let nq_id = u32::from((ty.wrapping_mul(NQ_QUEUES_PER_TYPE)).wrapping_add(u32::from(eng)) as u8);
        if nq_id >= MAX_NQ_SUPPORTED {
            self.refuse(
                pid,
                name,
                Errno::EINVAL,
                &format!(
                    "NQ-4: nq id {nq_id} = nq_type {ty} * 16 + engine_index {eng} >= MAX_NQ_SUPPORTED (96): the slot \
                     is past the NOTIFIC block"
                ),
                NQ,
            )?;
        }
        let key = (u32::from(nc), nq_id);
        if let Some(r) = self.nq.get(&key).copied() {
            if !force {
                // NQ-5: the old chunk is reused whatever the size asked.
                match self.chunks.get(r.handle).copied() {
                    Some(c) => {
                        if c.size != u64::from(size) {
                            self.warn(
                                pid,
                                name,
                                format!(
                                    "NQ-5: size {size} asked, the ring keeps its {} bytes (no force_alloc_mem): map \
                                     that size",
                                    c.size
                                ),
                                NQ,
                            );
                        }
                        return Ok((if c.host { c.offset } else { u64::MAX }, r.handle));
                    }
                    None => {
                        // The driver hands out the freed chunk it still records, MEMF-4.
                        self.warn(
                            pid,
                            name,
                            format!(
                                "NQ-5: the ring's chunk {} was freed with MEM_FREE: the driver hands it out again",
                                r.handle
                            ),
                            NQ,
                        );
                        return Ok((u64::MAX, r.handle));
                    }
                }
            }
        }
        if size == 0 {
            self.refuse(pid, name, Errno::ENOMEM, "NQ-6: a ring of 0 bytes cannot be allocated", "neuron_mempool.c")?;
        }
        // The slot nnq_set_hwaddr_v2 programs: engine_index, or 0 in the DMA block for TRACE_DMA.
        let slot = if ty == nq_type::TRACE_DMA { 0 } else { u32::from(eng) };
        let served = u32::from(nc) < u32::from(self.sim_cores)
            && usize::from(eng) < NQ_PER_CORE
            && ty != nq_type::TRACE_DMA
            && on_host != 0;
        let h = if served {
            if size != self.file.layout().ring_bytes {
                self.refuse(
                    pid,
                    name,
                    Errno::EINVAL,
                    &format!(
                        "NQ-8: the simulated device's rings are {} bytes, not {size} (both sides take --ring-entries, \
                         G-DRV-RINGSIZE)",
                        self.file.layout().ring_bytes
                    ),
                    "sim",
                )?;
            }
            // A served ring is the device's own ring memory as the device left
            // it, zero until its first record: the device's producer keeps its
            // place across re-initialisations. G-DRV-RINGSIZE.
            let offset = self.file.layout().ring_offset(nc, eng).unwrap_or(u64::MAX);
            if let Some(old) = self.nq.get(&key).copied() {
                // The new chunk takes the old one's place in the file.
                self.chunks.remove(old.handle);
            }
            self.new_handle(Chunk { offset, size: u64::from(size), host: true, pid, kind: ChunkKind::Nq })
        } else {
            match self.pool_alloc(u64::from(size), on_host != 0, pid, ChunkKind::Nq) {
                Some(h) => h,
                None => {
                    self.refuse(pid, name, Errno::ENOMEM, "NQ-6: no room for the ring", "neuron_mempool.c")?;
                    return Err(Refusal::Errno(Errno::ENOMEM));
                }
            }
        };
        // NQ-6: the old chunk is freed after the new one is programmed; a chunk
        // the user already freed is a kernel BUG by mc_free's magic check.
        if let Some(old) = self.nq.insert(key, NqRing { handle: h, slot, freed: false }) {
            if old.freed {
                self.bug(
                    pid,
                    name,
                    &format!(
                        "NQ-6: forced re-init frees the ring's old chunk {}, already freed with MEM_FREE: mc_free's \
                         BUG_ON(mc->magic != MEMCHUNK_MAGIC)",
                        old.handle
                    ),
                    "neuron_nq.c: nnq_init; neuron_mempool.c: mc_free",
                )?;
            }
            self.chunks.remove(old.handle);
        }
        let c = self.chunks.get(h).copied().unwrap_or(Chunk {
            offset: u64::MAX,
            size: 0,
            host: false,
            pid,
            kind: ChunkKind::Nq,
        });
        // NQ-7: host rings map at their offset; device rings answer -1.
        Ok((if c.host { c.offset } else { u64::MAX }, h))
    }

    /// RESET-4: every ring of core `nc`, of every process, halted and its
    /// chunk freed. A chunk the user already freed is a kernel BUG by
    /// `mc_free`'s magic check. driver: neuron_nq.c, `nnq_destroy_nc`.
    pub(super) fn nq_destroy_core(&mut self, pid: u32, name: &'static str, nc: u32) -> Answer {
        if nc >= nc_per_device(self.arch) {
            // nnq_halt / nnq_destroy: EINVAL for a core past the device, ignored.
            return Ok(0);
        }
        let keys: Vec<(u32, u32)> = self.nq.range((nc, 0)..(nc + 1, 0)).map(|(k, _)| *k).collect();
        for k in keys {
            let Some(r) = self.nq.remove(&k) else { continue };
            if r.freed {
                return self.bug(
                    pid,
                    name,
                    &format!(
                        "RESET-4: core {nc}'s ring (nq id {}) is chunk {}, already freed with MEM_FREE: mc_free's \
                         BUG_ON(mc->magic != MEMCHUNK_MAGIC)",
                        k.1, r.handle
                    ),
                    "neuron_nq.c: nnq_destroy_nc; neuron_mempool.c: mc_free",
                );
            }
            self.chunks.remove(r.handle);
        }
        Ok(0)
    }
}
