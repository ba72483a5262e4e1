//! The datastore the tools read: `ACQUIRE_NEURON_DS`, `RELEASE_NEURON_DS`.
//! driver: neuron_cdev.c, `ncdev_acquire_neuron_ds`; neuron_ds.c.
//!
//! The driver allocates its 16 entries' memory when the device comes up; the
//! model allocates an entry's chunk when the entry is first taken, and keeps
//! its slot and offset as the driver does.

use nrt_abi::ioctl as abi;

use super::{Answer, ChunkKind, Errno, Model};

/// One datastore entry. driver: neuron_ds.h, `struct neuron_datastore_entry`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DsEntry {
    /// The process that owns it; 0 when free.
    pub pid: u32,
    /// Its chunk, allocated at first use.
    pub chunk: Option<u64>,
    /// When it was last cleared, 0 for never, for the driver's reuse order.
    pub clear_tick: u64,
}

/// The device's datastore, `struct neuron_datastore`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Datastore {
    /// `NEURON_MAX_DATASTORE_ENTRIES_PER_DEVICE` entries, 16.
    pub entries: [DsEntry; abi::MAX_PROCESS_PER_DEVICE],
    ticks: u64,
}

impl Model {
    /// The datastore entries.
    pub fn datastore(&self) -> &Datastore {
        &self.datastore
    }

    pub(super) fn ds_acquire(&mut self, pid: u32, name: &'static str, d: &mut abi::NeuronDsInfo) -> Answer {
        const F: &str = "neuron_ds.c: neuron_ds_acquire_pid";
        let idx = if d.pid != 0 {
            // DS-2: a monitor takes an existing process's datastore.
            match self.datastore.entries.iter().position(|e| e.pid == d.pid as u32) {
                Some(i) => i,
                None => {
                    return self.refuse(pid, name, Errno::ENOENT, &format!("DS-2: pid {} has no datastore", d.pid), F)
                }
            }
        } else if let Some(i) = self.datastore.entries.iter().position(|e| e.pid == pid) {
            // DS-1: the caller's own, again.
            i
        } else {
            // DS-1: a free entry: one never cleared first, else the one cleared longest ago.
            let free = self.datastore.entries.iter().enumerate().filter(|(_, e)| e.pid == 0);
            let pick = free
                .clone()
                .find(|(_, e)| e.clear_tick == 0)
                .or_else(|| free.min_by_key(|(_, e)| e.clear_tick))
                .map(|(i, _)| i);
            let Some(i) = pick else {
                return self.refuse(pid, name, Errno::ENOMEM, "DS-1: all 16 datastore entries are in use", F);
            };
            self.datastore.entries[i].pid = pid;
            i
        };
        let chunk = match self.datastore.entries[idx].chunk {
            Some(h) => h,
            None => {
                let Some(h) = self.pool_alloc(u64::from(abi::NEURON_DATASTORE_SIZE), true, 0, ChunkKind::Datastore)
                else {
                    self.datastore.entries[idx].pid = 0;
                    return self.refuse(pid, name, Errno::ENOMEM, "DS-1: no room for the datastore (G-DRV-POOL)", F);
                };
                self.datastore.entries[idx].chunk = Some(h);
                h
            }
        };
        let off = self.chunks.get(chunk).map_or(u64::MAX, |c| c.offset);
        d.mmap_offset = off;
        d.size = abi::NEURON_DATASTORE_SIZE;
        Ok(0)
    }

    /// DS-5: at the release of the device's last `O_RDWR` descriptor,
    /// `neuron_ds_clear` clears all 16 entries, in use or not, in slot order.
    /// Each gets the next clear tick and its memory zeroed, whoever owns it,
    /// so none is "never cleared" and the next choice is the oldest tick, slot
    /// 0 first. **Deviation**: the driver's tick counter is one for all
    /// devices, the model's per device, with the same order within a device.
    /// driver: neuron_cdev.c, `ncdev_release`.
    pub(super) fn ds_clear_all(&mut self) {
        for i in 0..self.datastore.entries.len() {
            self.datastore.ticks = self.datastore.ticks.saturating_add(1);
            let e = &mut self.datastore.entries[i];
            e.pid = 0;
            e.clear_tick = self.datastore.ticks;
            if let Some(c) = e.chunk.and_then(|h| self.chunks.get(h).copied()) {
                use std::os::unix::fs::FileExt;
                let _ = self.file.file().write_all_at(&vec![0u8; c.size as usize], c.offset);
            }
        }
    }

    /// DS-3, DS-4: `neuron_ds_release_pid(target)` by `caller`: only the
    /// owner's own release clears the entry and zeroes its memory.
    pub(super) fn ds_release(&mut self, caller: u32, target: u32) {
        let Some(i) = self.datastore.entries.iter().position(|e| e.pid == target && e.pid != 0) else { return };
        if target != caller {
            return;
        }
        self.datastore.ticks = self.datastore.ticks.saturating_add(1);
        let e = &mut self.datastore.entries[i];
        e.pid = 0;
        e.clear_tick = self.datastore.ticks;
        if let Some(c) = e.chunk.and_then(|h| self.chunks.get(h).copied()) {
            use std::os::unix::fs::FileExt;
            let _ = self.file.file().write_all_at(&vec![0u8; c.size as usize], c.offset);
        }
    }
}
