//! Cores: the CRWL lock, `CRWL_READER_*` and `CRWL_WRITER_*`; core range
//! marks, `CRWL_NC_RANGE_MARK`, `_UNMARK` and `NC_PID_STATE_DUMP`; resets,
//! `NC_RESET` and `NC_RESET_READY`. driver: neuron_crwl.c, neuron_cdev.c,
//! neuron_reset.c.
//!
//! The driver sleeps on a CRWL lock another process holds, about 500 ms for a
//! reader and 2 s for a writer, then answers `EBUSY`. The model serves one
//! call at a time, so nothing can change during such a wait: it answers
//! `EBUSY` at once. CRWL-2, CRWL-7.

use nrt_abi::ioctl as abi;

use super::{Answer, Errno, Model, TargetMem, MAX_NC_PER_DEVICE};

/// The CRWL state of one core. driver: neuron_device.h, `struct neuron_crwl`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CoreLock {
    /// The `uuid` of the model switched in; zero on a fresh core.
    pub uuid: [u8; 32],
    /// The process that switched it in; 0 for none.
    pub writer_pid: u32,
    /// A writer holds the lock, between WRITER_ENTER and DOWNGRADE.
    pub writer_acquired: bool,
    /// Readers inside.
    pub reader_count: u64,
}

/// `NC_RESET`'s positive return for a reset request already pending, RESET-3.
pub const RESET_PENDING: i64 = 1;

const CRWL: &str = "neuron_crwl.c";

/// How long `NC_RESET_READY` waits for the simulated device to reset the
/// cores. **sim**: the device thread steps every few tens of microseconds.
pub const RESET_SETTLE_MAX: std::time::Duration = std::time::Duration::from_secs(1);

/// A device file whose heartbeat is older than this has no device stepping
/// it. **sim**: the device thread stamps it at every step.
pub const DEVICE_ALIVE_NS: u64 = 100_000_000;

impl Model {
    /// CRWL-1, CRWL-3, CRWL-4: the core index, then `ncrwl_validate_uuid`:
    /// the uuid must be the core's, and the caller its writer's process.
    fn crwl_validate(
        &mut self,
        pid: u32,
        name: &'static str,
        c: &abi::Crwl,
        check_uuid: bool,
    ) -> Result<usize, Answer> {
        if c.nc_id >= MAX_NC_PER_DEVICE {
            return Err(self.refuse(pid, name, Errno::EINVAL, "CRWL-1: nc_id >= MAX_NC_PER_DEVICE (8)", CRWL));
        }
        let nc = c.nc_id as usize;
        if !check_uuid {
            return Ok(nc);
        }
        let l = self.crwl[nc];
        if c.uuid != l.uuid {
            let why = if l.writer_pid == 0 {
                format!("CRWL-3: core {nc} has no model switched in (uuid 0): CRWL_WRITER_ENTER first")
            } else {
                format!("CRWL-3: the uuid is not the one pid {} switched in on core {nc}", l.writer_pid)
            };
            return Err(self.refuse(pid, name, Errno::ENOENT, &why, "neuron_crwl.c: ncrwl_validate_uuid"));
        }
        if l.writer_pid != pid {
            return Err(self.refuse(
                pid,
                name,
                Errno::ENOENT,
                &format!("CRWL-4: core {nc}'s writer is pid {}, not the caller", l.writer_pid),
                "neuron_crwl.c: ncrwl_validate_uuid",
            ));
        }
        Ok(nc)
    }

    pub(super) fn crwl_reader_enter(&mut self, pid: u32, name: &'static str, c: &mut abi::Crwl) -> Answer {
        let nc = match self.crwl_validate(pid, name, c, false) {
            Ok(nc) => nc,
            Err(a) => return a,
        };
        if self.crwl[nc].writer_acquired {
            return self.refuse(
                pid,
                name,
                Errno::EBUSY,
                &format!("CRWL-2: core {nc}'s writer lock is held by pid {}: reader starved", self.crwl[nc].writer_pid),
                "neuron_crwl.c: ncrwl_reader_enter",
            );
        }
        if let Err(a) = self.crwl_validate(pid, name, c, true) {
            return a;
        }
        // CRWL-5.
        self.crwl[nc].reader_count = self.crwl[nc].reader_count.saturating_add(1);
        Ok(0)
    }

    pub(super) fn crwl_reader_exit(&mut self, pid: u32, name: &'static str, c: &mut abi::Crwl) -> Answer {
        let nc = match self.crwl_validate(pid, name, c, true) {
            Ok(nc) => nc,
            Err(a) => return a,
        };
        // CRWL-6.
        if self.crwl[nc].reader_count == 0 {
            return self.refuse(
                pid,
                name,
                Errno::EINVAL,
                &format!("CRWL-6: core {nc}'s reader count is already 0"),
                "neuron_crwl.c: ncrwl_reader_exit",
            );
        }
        self.crwl[nc].reader_count -= 1;
        Ok(0)
    }

    pub(super) fn crwl_writer_enter(&mut self, pid: u32, name: &'static str, c: &mut abi::Crwl) -> Answer {
        let nc = match self.crwl_validate(pid, name, c, false) {
            Ok(nc) => nc,
            Err(a) => return a,
        };
        let l = self.crwl[nc];
        // CRWL-7: one writer at a time, and the old model's readers gone.
        if l.writer_acquired || l.reader_count > 0 {
            return self.refuse(
                pid,
                name,
                Errno::EBUSY,
                &format!(
                    "CRWL-7: core {nc}: writer starved (writer lock held: {}, readers: {}, writer pid {})",
                    l.writer_acquired, l.reader_count, l.writer_pid
                ),
                "neuron_crwl.c: ncrwl_writer_enter",
            );
        }
        // CRWL-8: the lock is taken *before* the already-switched check: EALREADY
        // returns with the writer lock held, which a downgrade releases.
        self.crwl[nc].writer_acquired = true;
        if l.writer_pid == pid && l.uuid == c.uuid {
            return self.refuse(
                pid,
                name,
                Errno::EALREADY,
                &format!("CRWL-8: this process already switched core {nc} to that model (the writer lock is held)"),
                "neuron_crwl.c: ncrwl_writer_enter",
            );
        }
        // CRWL-9.
        self.crwl[nc].writer_pid = pid;
        self.crwl[nc].uuid = c.uuid;
        Ok(0)
    }

    pub(super) fn crwl_writer_downgrade(&mut self, pid: u32, name: &'static str, c: &mut abi::Crwl) -> Answer {
        let nc = match self.crwl_validate(pid, name, c, false) {
            Ok(nc) => nc,
            Err(a) => return a,
        };
        // CRWL-10 before the uuid check.
        if !self.crwl[nc].writer_acquired {
            return self.refuse(
                pid,
                name,
                Errno::EINVAL,
                &format!("CRWL-10: writer downgrade on core {nc} without a writer enter"),
                "neuron_crwl.c: ncrwl_writer_downgrade",
            );
        }
        if let Err(a) = self.crwl_validate(pid, name, c, true) {
            return a;
        }
        // CRWL-12: BUG_ON(reader_count != 0); a writer enter waits for the
        // readers and blocks new ones, so no user call reaches it.
        if self.crwl[nc].reader_count != 0 {
            return self.bug(
                pid,
                name,
                "CRWL-12: BUG_ON(reader_count != 0) in writer downgrade",
                "neuron_crwl.c: ncrwl_writer_downgrade",
            );
        }
        // CRWL-13.
        self.crwl[nc].writer_acquired = false;
        self.crwl[nc].reader_count = 1;
        Ok(0)
    }

    /// CRWL-14: `ncrwl_release_current_process`: every core whose writer was
    /// `pid` is reset to a fresh core.
    pub(super) fn crwl_release_process(&mut self, pid: u32) {
        for l in self.crwl.iter_mut().filter(|l| l.writer_pid == pid) {
            *l = CoreLock::default();
        }
    }

    /// `ncdev_crwl_nc_range_mark` and `ncrwl_nc_range_mark`, RANGE-2..4. `m` is
    /// the driver's 512-bit form; the pointer form copies back its first 24 bytes.
    pub(super) fn range_mark(&mut self, pid: u32, name: &'static str, m: &mut abi::CrwlNcMapExt) -> Answer {
        // RANGE-2: the bitmap is cleared; device 0's cores are the first, at
        // offset nc_per_device * device_index = 0.
        m.bitmap = [0; 8];
        m.max_nc_available = 0;
        let total = self.range_pids.len() as u32;
        let (start, end, count) = (m.start_nc_index, m.end_nc_index, m.nc_count);
        if start > end || start >= total || end >= total {
            // RANGE-3: the struct is still copied back, bitmap 0, max 0.
            return self.refuse(
                pid,
                name,
                Errno::EINVAL,
                &format!("RANGE-3: start {start} > end {end}, or either past the driver's {total} cores"),
                "neuron_crwl.c: ncrwl_nc_range_mark",
            );
        }
        // RANGE-4: the driver's search as it is, u32 arithmetic included: a
        // free run long enough is marked; after a run too short the search
        // resumes two past where it stopped.
        let mut i = start;
        while i <= end {
            if self.range_pids[i as usize] != 0 {
                i += 1;
                continue;
            }
            let mut run = 1u32;
            let mut j = i;
            while j <= end && j < i.wrapping_add(count) {
                if self.range_pids[j as usize] != 0 {
                    break;
                }
                run = j - i + 1;
                j += 1;
            }
            if run >= count {
                let mut k = i;
                while k <= end && k < i.wrapping_add(count) {
                    self.range_pids[k as usize] = pid;
                    m.bitmap[(k / 64) as usize] |= 1 << (k % 64);
                    k += 1;
                }
                return Ok(0);
            }
            m.max_nc_available = m.max_nc_available.max(run);
            i = j + 2;
        }
        let holders: Vec<String> = (start..=end.min(start + 63))
            .filter(|&k| self.range_pids[k as usize] != 0)
            .map(|k| format!("nc{k}: pid {}", self.range_pids[k as usize]))
            .collect();
        self.refuse(
            pid,
            name,
            Errno::EBUSY,
            &format!(
                "RANGE-4: no {count} free consecutive cores in {start}..={end} (longest free run {}; held: {})",
                m.max_nc_available,
                holders.join(", ")
            ),
            "neuron_crwl.c: ncrwl_nc_range_mark",
        )
    }

    /// RANGE-5: `ncrwl_nc_range_unmark`: the cores of `bitmap` this process
    /// marked are freed; others are left alone; always 0.
    pub(super) fn range_unmark(&mut self, pid: u32, bitmap: &[u64]) -> Answer {
        for (w, bits) in bitmap.iter().enumerate() {
            for b in 0..64 {
                let k = w * 64 + b;
                if bits & (1 << b) != 0 && self.range_pids.get(k) == Some(&pid) {
                    self.range_pids[k] = 0;
                }
            }
        }
        Ok(0)
    }

    /// RANGE-7: `ncdev_nc_pid_state_dump`: the holder's pid goes to the kernel
    /// log, here the model's log, not to the caller.
    pub(super) fn pid_state_dump(&mut self, pid: u32, name: &'static str, d: &mut abi::NcPidStateDump) -> Answer {
        let Some(&holder) = self.range_pids.get(d.nc_id as usize) else {
            return self.refuse(
                pid,
                name,
                Errno::ENOENT,
                "RANGE-7: nc_id past the driver's 512 cores",
                "neuron_crwl.c: ncrwl_nc_range_pid_get",
            );
        };
        if holder != 0 {
            self.note(pid, name, format!("RANGE-7: nc {} is marked by pid {holder} (kernel log)", d.nc_id));
        }
        Ok(0)
    }

    pub(super) fn nc_reset(&mut self, pid: u32, name: &'static str, r: &mut abi::NcReset) -> Answer {
        // RESET-1: ndmar_close_ncs runs first, whatever follows.
        let nc_map = r.nc_map;
        self.dma_close_cores(pid, name, nc_map)?;
        // RESET-2: the request id is the caller's tgid.
        // RESET-3: a request with that id still pending: +1, nothing copied back.
        if self.resets.contains(&pid) {
            return self.positive(
                pid,
                name,
                RESET_PENDING,
                &format!("RESET-3: reset request {pid} is already pending (NC_RESET_READY not called)"),
                "neuron_reset.c: nr_start_ncs",
            );
        }
        // RESET-4: every NQ of every core of the map, of every process, destroyed.
        for nc in 0..MAX_NC_PER_DEVICE {
            if nc_map == abi::NC_MAP_DEVICE || nc_map & (1 << nc) != 0 {
                self.nq_destroy_core(pid, name, nc)?;
            }
        }
        // RESET-5: queued; the reset thread re-initialises the cores' DMA with
        // a new H2T ring each, which the model does at once, RESET-6.
        self.resets.insert(pid);
        self.dma_init_cores(nc_map);
        // RESET-8: the simulated device resets the reset cores' TPBs, as
        // nr_initiate_reset_via_fw does with nr_get_tpb_reset_map's bits.
        for core in 0..self.sim_cores {
            if nc_map == abi::NC_MAP_DEVICE || nc_map & (1 << core) != 0 {
                let _ = self.file.request_reset(core);
            }
        }
        r.request_id = pid;
        Ok(0)
    }

    pub(super) fn nc_reset_ready(&mut self, pid: u32, name: &'static str, r: &mut abi::NcResetReady) -> Answer {
        // RESET-7: nr_wait: a request never made, or already waited for, is 1;
        // a completed one is 0 and forgotten. A pending SIGKILL, -EINTR, is not
        // modelled: the model's resets complete at once.
        if self.resets.remove(&r.request_id) {
            // RESET-8: the reset is complete once the device has reset the cores.
            self.wait_for_device_resets(pid, name);
            r.result = 0;
        } else {
            self.note(
                pid,
                name,
                format!(
                    "RESET-7: reset request {} is unknown or already waited for: result 1 (neuron_reset.c: nr_wait)",
                    r.request_id
                ),
            );
            r.result = 1;
        }
        Ok(0)
    }
}

impl Model {
    /// RESET-8: wait at most [`RESET_SETTLE_MAX`] until the device has
    /// acknowledged every reset asked of its cores, as `nr_wait` waits for the
    /// reset thread. Only while a device steps the file, its state ready and
    /// its heartbeat fresher than [`DEVICE_ALIVE_NS`]; a model without one, as
    /// in its unit tests, does not wait. A device that does not answer in time
    /// is a warning.
    fn wait_for_device_resets(&mut self, pid: u32, name: &'static str) {
        let pending = |m: &Model| (0..m.sim_cores).any(|c| m.file.reset_acknowledged(c) != m.file.reset_requested(c));
        let alive =
            |m: &Model| m.file.state() == Some(crate::shm::State::Ready) && m.file.heartbeat_age_ns() < DEVICE_ALIVE_NS;
        let t0 = std::time::Instant::now();
        // Bounded by RESET_SETTLE_MAX; each pass sleeps 50 us.
        while pending(self) && alive(self) {
            if t0.elapsed() >= RESET_SETTLE_MAX {
                self.warn(
                    pid,
                    name,
                    format!(
                        "RESET-8: the simulated device did not reset the cores within {} ms: the next inference may                          see the old state",
                        RESET_SETTLE_MAX.as_millis()
                    ),
                    "sim",
                );
                return;
            }
            std::thread::sleep(std::time::Duration::from_micros(50));
        }
    }

    /// `DEVICE_GET_ALL_APPS_INFO`, APPS-1. Its argument is a header followed
    /// by `capacity` entries in the caller's memory, so the supervisor passes
    /// the header it read and writes the bytes returned, the header with
    /// `size` and then `size` entries, at the argument's address; it is not
    /// dispatched by [`Model::handle`], which has no address.
    ///
    /// For each process with the device open, at most 16 and while fewer than
    /// `capacity` are written: its pid; with `APP_INFO_PID_NC_LOCK_INFO`, the
    /// cores 0..=3 whose CRWL writer it is while it holds the lock or has
    /// readers, and their uuids; with `APP_INFO_PID_MEM_USAGE`, the bytes of
    /// its host and device chunks. Range marks are not in it. The model's order
    /// is by pid, the driver's by attach slot. driver: neuron_cdev.c,
    /// `ncdev_device_get_all_apps_info`.
    pub fn apps_info(&mut self, pid: u32, header: &abi::AppsInfoHeader) -> (Answer, Vec<u8>) {
        use zerocopy::IntoBytes;
        *self.calls.entry(abi::DEVICE_GET_ALL_APPS_INFO.name()).or_insert(0) += 1;
        let mut out = *header;
        let mut entries: Vec<abi::AppInfo> = Vec::new();
        let procs: Vec<u32> = self.procs.iter().filter(|(_, p)| p.opens > 0).map(|(k, _)| *k).collect();
        for p in procs.into_iter().take(abi::MAX_PROCESS_PER_DEVICE) {
            if entries.len() as u64 >= u64::from(header.capacity) {
                break;
            }
            let mut e = abi::AppInfo {
                pid: p as i32,
                nc_lock_map: 0,
                uuid_data: [[0; 32]; abi::APP_INFO_MAX_MODELS_PER_DEVICE],
                _pad: [0; 3],
                host_mem_size: 0,
                device_mem_size: 0,
            };
            if header.apps_info_flags & abi::APP_INFO_PID_NC_LOCK_INFO != 0 {
                for nc in 0..abi::APP_INFO_MAX_MODELS_PER_DEVICE {
                    let l = self.crwl[nc];
                    if l.writer_pid == p && (l.writer_acquired || l.reader_count > 0) {
                        e.nc_lock_map |= 1 << nc;
                        e.uuid_data[nc] = l.uuid;
                    }
                }
            }
            if header.apps_info_flags & abi::APP_INFO_PID_MEM_USAGE != 0 {
                let (host, device) = self.chunks.usage_of(p);
                e.host_mem_size = host;
                e.device_mem_size = device;
            }
            entries.push(e);
        }
        out.size = entries.len() as u32;
        let mut bytes = out.as_bytes().to_vec();
        for e in &entries {
            bytes.extend_from_slice(e.as_bytes());
        }
        let _ = pid;
        (Ok(0), bytes)
    }
}

impl Model {
    /// `GET_LOGICAL_TO_PHYSICAL_NC_MAP`. MAP-1: v2 has no hook, `ENOTSUPP`.
    /// MAP-2: more than `NEURON_NC_MAP_MAX_ENTRIES` entries, or a mapping
    /// version but V0: `EINVAL`. MAP-3: the first `min(max, 128)` entries of
    /// `nc_mapping_v0_seng_swap`, [`nrt_abi::devmap::logical_to_physical`],
    /// and their count, written as the header and `max` entries at `map`; a
    /// copy that fails returns the bytes not copied, positive. The die flip of
    /// ultraserver pods is not modelled: the simulated host is no pod.
    /// driver: neuron_cdev.c, `ncdev_get_logical_to_physical_nc_map`;
    /// v3/neuron_dhal_v3.c, `ncdev_logical_to_physical_nc_map_v3`.
    pub(super) fn nc_map(
        &mut self,
        pid: u32,
        name: &'static str,
        a: &abi::GetNcMap,
        mem: &mut dyn TargetMem,
    ) -> Answer {
        use nrt_core::arch::Arch;
        use zerocopy::IntoBytes;
        const SRC: &str = "neuron_cdev.c: ncdev_get_logical_to_physical_nc_map";
        if self.arch == Arch::Sunda {
            return self.refuse(pid, name, Errno::ENOTSUPP, "MAP-1: the v2 dhal has no logical-to-physical map", SRC);
        }
        if a.max_map_entries > abi::NC_MAP_MAX_ENTRIES {
            let why = format!("MAP-2: {} entries asked, more than {}", a.max_map_entries, abi::NC_MAP_MAX_ENTRIES);
            return self.refuse(pid, name, Errno::EINVAL, &why, SRC);
        }
        if a.mapping_version != abi::NC_MAPPING_TYPE_V0 {
            let why = format!("MAP-2: mapping version {} is not V0", a.mapping_version);
            return self.refuse(
                pid,
                name,
                Errno::EINVAL,
                &why,
                "v3/neuron_dhal_v3.c: ncdev_logical_to_physical_nc_map_v3",
            );
        }
        let n = a.max_map_entries.min(nrt_abi::devmap::LOGICAL_CORES);
        let mut out = abi::NcMapHeader { num_entries: n }.as_bytes().to_vec();
        // `max` is at most the map's 128 entries here, MAP-2, so every entry asked is one.
        for k in 0..n {
            let (device_id, nc) = nrt_abi::devmap::logical_to_physical(self.arch, k).unwrap_or((0, 0));
            out.extend_from_slice(abi::NcMapEntry { device_id, device_nc_idx: u32::from(nc) }.as_bytes());
        }
        if mem.write(a.map, &out).is_err() {
            let why = format!("MAP-3: the map at 0x{:x} could not be written: copy_to_user's bytes not copied", a.map);
            return self.positive(pid, name, out.len() as i64, &why, SRC);
        }
        Ok(0)
    }
}
