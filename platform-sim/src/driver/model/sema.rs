//! Semaphores and events: `SEMAPHORE_INCREMENT`, `_DECREMENT`, `_READ`,
//! `_WRITE`, `EVENT_SET`, `EVENT_GET`. driver: neuron_cdev.c,
//! `ncdev_semaphore_ioctl`, `ncdev_events_ioctl`; neuron_core.c.

use std::sync::atomic::Ordering;

use nrt_abi::ioctl as abi;
use nrt_core::arch::Arch;

use super::{nc_per_device, Answer, Errno, Model, EVENT_COUNT, SEMAPHORE_COUNT};

impl Model {
    pub(super) fn semaphore(&mut self, pid: u32, name: &'static str, code: u32, a: &mut abi::SemaphoreArg) -> Answer {
        // SEMA-1. driver: neuron_cdev.c, ncdev_semaphore_ioctl, ncdev_ncid_valid.
        if a.nc_id >= nc_per_device(self.arch) {
            return self.refuse(
                pid,
                name,
                Errno::E2BIG,
                "SEMA-1: nc_id >= the device's cores",
                "neuron_cdev.c: ncdev_ncid_valid",
            );
        }
        // SEMA-2: the index is taken as u16. driver: neuron_core.c, nc_semaphore_*.
        let index = u32::from(a.semaphore_index as u16);
        if index >= SEMAPHORE_COUNT {
            return self.refuse(
                pid,
                name,
                Errno::EINVAL,
                "SEMA-2: semaphore index >= 256 (V2_SEMAPHORE_COUNT)",
                "neuron_core.c",
            );
        }
        let word = if a.nc_id < u32::from(self.sim_cores) { self.file.sema_incr(a.nc_id, index) } else { None };
        let Some(word) = word else {
            self.note(pid, name, format!("core {} is not simulated: the semaphore is not backed (sim)", a.nc_id));
            return Ok(0);
        };
        // SEMA-3, G-DRV-SEMA.
        match code {
            c if c == abi::SEMAPHORE_INCREMENT.code() => {
                // The atomic add on the INCR alias that the device consumes.
                std::sync::atomic::fence(Ordering::Release);
                word.fetch_add(a.value, Ordering::AcqRel);
            }
            c if c == abi::SEMAPHORE_DECREMENT.code() => {
                let _ = word.fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| Some(v.saturating_sub(a.value)));
            }
            c if c == abi::SEMAPHORE_WRITE.code() => word.store(a.value, Ordering::Release),
            _ => a.value = word.load(Ordering::Acquire),
        }
        Ok(0)
    }

    pub(super) fn event(&mut self, pid: u32, name: &'static str, code: u32, a: &mut abi::SemaphoreArg) -> Answer {
        // EVT-1: `index > event_count`, sic; not backed, G-DRV-EVENTS. driver:
        // neuron_core.c, nc_event_set, nc_event_get.
        let index = u32::from(a.semaphore_index as u16);
        if index > EVENT_COUNT {
            return self.refuse(
                pid,
                name,
                Errno::EINVAL,
                "EVT-1: event index > 256 (V2_EVENTS_COUNT)",
                "neuron_core.c",
            );
        }
        if index == EVENT_COUNT {
            self.warn(
                pid,
                name,
                "EVT-1: event index 256 passes the driver's `>` check: one past the events".into(),
                "neuron_core.c",
            );
        }
        // EVT-2: the event ioctls do not check nc_id: nc_event_get/_set take
        // it as u8 and read or write the BAR0 word at nc_get_event_addr_v2/_v3
        // unchecked. driver: v2|v3/neuron_dhal_v*.c.
        let nc = u32::from(a.nc_id as u8);
        if nc >= nc_per_device(self.arch) {
            let off = event_offset(self.arch, nc, index);
            if off.saturating_add(4) > self.file.layout().bar_len {
                return self.bug(
                    pid,
                    name,
                    &format!(
                        "EVT-2: nc_id {} (as u8: {nc}) puts event {index} at BAR0 offset 0x{off:x}, past the BAR \
                         mapping: the driver does not check it and dereferences it",
                        a.nc_id
                    ),
                    "neuron_core.c: nc_event_get/nc_event_set",
                );
            }
            self.warn(
                pid,
                name,
                format!(
                    "EVT-2: nc_id {} past the device's cores: the driver does not check it and {} BAR0 offset \
                     0x{off:x}, in {}",
                    a.nc_id,
                    if code == abi::EVENT_GET.code() { "reads" } else { "writes" },
                    event_block(self.arch, off)
                ),
                "neuron_cdev.c: ncdev_events_ioctl; neuron_core.c",
            );
        }
        if code == abi::EVENT_GET.code() {
            a.value = 0;
        }
        Ok(0)
    }
}

/// The BAR0 offset of event `index` of core `nc` as the driver computes it:
/// the start of the core's [`nrt_abi::sim::sema_page`] + 4 x `index`.
///
/// driver: `nc_get_event_addr_v2` is `V2_PCIE_BAR0_TPB_0_OFFSET` 0 + `nc` x
/// `V2_PCIE_BAR0_TPB_0_SIZE` 0x400_0000; `nc_get_event_addr_v3`, mariana
/// too, is `V3_PCIE_BAR0_TPB_0_OFFSET` 0xD000_0000 + `nc` x
/// `V3_PCIE_BAR0_TPB_DIST` 0x400_0000; both + `MMAP_NC_EVENT_OFFSET`
/// 0x270_0000 + 4 x `index`. v2|v3/address_map.h; neuron_core.h, `NC_EVENT_SIZE`.
pub fn event_offset(arch: Arch, nc: u32, index: u32) -> u64 {
    nrt_abi::sim::sema_page(arch, nc) + 4 * u64::from(index)
}

/// The block of BAR0 that offset `off` inside the BAR falls in, for an event
/// of a core the device does not have. On v2: the TPB windows of cores past 1,
/// below `V2_PCIE_BAR0_TOPSP_0_OFFSET`; the top-SP region from 0x1000_0000;
/// the APB register block from `V2_PCIE_BAR0_APB_OFFSET` 0x3000_0000. On v3:
/// past the 8 cores' TPB windows, from 0xF000_0000. driver: v2/address_map.h.
pub fn event_block(arch: Arch, off: u64) -> &'static str {
    match arch {
        Arch::Sunda if off >= nrt_abi::devmap::V2_APB => "the APB register block (V2_PCIE_BAR0_APB_OFFSET)",
        Arch::Sunda if nrt_abi::devmap::top_sp(arch, 0).is_some_and(|w| off >= w.base) => {
            "the top-SP region (from V2_PCIE_BAR0_TOPSP_0_OFFSET)"
        }
        Arch::Sunda => "the TPB window of a core the device does not have",
        _ => "BAR0 past the 8 cores' TPB windows",
    }
}
