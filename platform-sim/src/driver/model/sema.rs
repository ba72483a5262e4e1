//! Semaphores and events: `SEMAPHORE_INCREMENT` / `_DECREMENT` / `_READ` /
//! `_WRITE`, `EVENT_SET` / `EVENT_GET` (neuron_cdev.c: `ncdev_semaphore_ioctl`,
//! `ncdev_events_ioctl`; neuron_core.c).

use std::sync::atomic::Ordering;

use nrt_abi::ioctl as abi;

use super::{nc_per_device, Answer, Errno, Model, EVENT_COUNT, SEMAPHORE_COUNT};

impl Model {
    pub(super) fn semaphore(&mut self, pid: u32, name: &'static str, code: u32, a: &mut abi::SemaphoreArg) -> Answer {
        // SEMA-1: ncdev_semaphore_ioctl -> ncdev_ncid_valid (neuron_cdev.c).
        if a.nc_id >= nc_per_device(self.arch) {
            return self.refuse(
                pid,
                name,
                Errno::E2BIG,
                "SEMA-1: nc_id >= the device's cores",
                "neuron_cdev.c: ncdev_ncid_valid",
            );
        }
        // SEMA-2: nc_semaphore_* (neuron_core.c): the index is taken as u16.
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
        // SEMA-3 (G-DRV-SEMA).
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
        // EVT-1: nc_event_set / nc_event_get (neuron_core.c): `index > event_count` (sic). Not backed: G-DRV-EVENTS.
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
        // EVT-2: the event ioctls do not check nc_id.
        if u32::from(a.nc_id as u8) >= nc_per_device(self.arch) {
            self.warn(
                pid,
                name,
                format!(
                    "EVT-2: nc_id {} past the device's cores: the driver does not check it and writes elsewhere",
                    a.nc_id
                ),
                "neuron_cdev.c: ncdev_events_ioctl",
            );
        }
        if code == abi::EVENT_GET.code() {
            a.value = 0;
        }
        Ok(0)
    }
}
