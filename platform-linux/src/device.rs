//! A Neuron device node, `/dev/neuronN`, and the driver's ioctls.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use nrt_core::hal::{self, ErrorType};

use crate::error::{Cause, LinuxError};
use crate::ioctl::{
    self, AppInfo, CompatibleVersion, Crwl, CrwlNcMap, DeviceInfo, DmaQueueCopyStart, DmaQueueInit, DmaQueueRelease,
    DriverInfo, Ioctl, MemAllocV2Mt, MemFree, MemGetExtendedInfo, NcReset, NcResetReady, NotificationsInitV2,
    NotificationsInitWithReallocV2, PlainArg, SemaphoreArg,
};
use crate::sys;
use nrt_abi::sim::{SimHints, SIM_HINTS, SIM_HINTS_MAGIC, SIM_HINTS_VERSION};

/// The process's write-only descriptors of the device nodes, through which it
/// takes and gives back range marks, and how many [`NeuronDevice`]s use them.
///
/// Driver, neuron_cdev.c: an `O_WRONLY` descriptor is "free access"
/// (`IS_NEURON_DEVICE_FREE_ACCESS`); it does not attach the process and reaches
/// only `ncdev_misc_ioctl`. The close of any such descriptor unmarks every core
/// the process holds on every device, `ncdev_misc_flush`; an `O_RDWR` close
/// drops no mark. So marks go through one write-only descriptor per process and
/// node, which a killed process's exit closes, and none is closed while a user
/// remains: all close together after the last user's explicit unmark.
#[derive(Debug, Default)]
struct FreeAccess {
    users: usize,
    fds: Vec<(PathBuf, File)>,
}

#[cfg(not(test))]
static FREE_ACCESS: Mutex<FreeAccess> = Mutex::new(FreeAccess { users: 0, fds: Vec::new() });

/// Run `f` on the process's registry of write-only descriptors, under its lock.
#[cfg(not(test))]
fn with_free_access<R>(f: impl FnOnce(&mut FreeAccess) -> R) -> R {
    let mut g = FREE_ACCESS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    f(&mut g)
}

// In the unit tests each thread stands for a process: the fake driver of
// `sys::fake` is per thread, and so is the registry.
#[cfg(test)]
thread_local! {
    static FREE_ACCESS: std::cell::RefCell<FreeAccess> = std::cell::RefCell::new(FreeAccess::default());
}

#[cfg(test)]
fn with_free_access<R>(f: impl FnOnce(&mut FreeAccess) -> R) -> R {
    FREE_ACCESS.with(|r| f(&mut r.borrow_mut()))
}

/// An open device node.
///
/// # One descriptor, never duplicated
///
/// The node is opened once per `NeuronDevice`, `O_RDWR | O_CLOEXEC`, and that
/// descriptor is never `dup`ed, cloned or handed to a forked child. The driver
/// runs its whole per-process cleanup at the close of the process's last open
/// descriptor and detaches the process at every close, a `dup` not counting as
/// an open: closing a copy would tear the process down while the original is
/// in use. Driver: neuron_cdev.c `ncdev_flush`, neuron_pid.c `npid_detach`.
/// Range marks alone go through the shared write-only descriptor.
///
/// It remembers the DMA queues this process initialised, with their ring
/// sizes, and refuses a copy start the driver would fail or oops on,
/// `driver-abi.md` points 1 and 2.
#[derive(Debug)]
pub struct NeuronDevice {
    file: File,
    path: PathBuf,
    /// The node `path` named when it was opened, after symlinks.
    node: PathBuf,
    /// `(eng_id, qid)` -> `(tx_desc_count, rx_desc_count)` of each queue initialised.
    queues: Mutex<HashMap<(u32, u32), (u32, u32)>>,
    /// Whether this device is a user of the process's write-only descriptors.
    free_access: Mutex<bool>,
}

impl Drop for NeuronDevice {
    fn drop(&mut self) {
        self.release_free_access();
    }
}

impl NeuronDevice {
    /// Open a device node `O_RDWR | O_CLOEXEC`; the descriptor is never duplicated nor shared.
    pub fn open(path: impl AsRef<Path>) -> Result<NeuronDevice, LinuxError> {
        let path = path.as_ref().to_path_buf();
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_CLOEXEC)
            .open(&path)
            .map_err(|e| open_error(&path, e))?;
        let node = node_of(&path);
        Ok(NeuronDevice { file, path, node, queues: Mutex::new(HashMap::new()), free_access: Mutex::new(false) })
    }

    /// The architecture the driver behind `path` names, asked with
    /// `DRIVER_INFO_GET` through a write-only descriptor opened for the call
    /// alone. It is a misc request, so the process is not attached to a device
    /// it may not use: neuron_cdev.c `ncdev_misc_ioctl`, `npid_attach` skipped.
    pub fn probe_architecture(path: impl AsRef<Path>) -> Result<u32, LinuxError> {
        let path = path.as_ref();
        let f =
            OpenOptions::new().write(true).custom_flags(libc::O_CLOEXEC).open(path).map_err(|e| open_error(path, e))?;
        let mut a = DriverInfo { version: 0, size: core::mem::size_of::<DriverInfo>() as u32, ..DriverInfo::default() };
        let name = ioctl::DRIVER_INFO_GET.name();
        let target = path.display().to_string();
        let rc =
            sys::ioctl(f.as_fd(), ioctl::DRIVER_INFO_GET, &mut a).map_err(|e| LinuxError::new(name, target.clone(), e));
        sys::close(f);
        match rc? {
            0 => Ok(a.architecture),
            r => Err(LinuxError::new(name, target, Cause::Positive(r))),
        }
    }

    /// Issue `req` through the process's write-only descriptor of this node,
    /// opened at the first use; this device is then one of its users until
    /// [`release_free_access`](Self::release_free_access).
    fn call_free_access<T: PlainArg>(&self, req: Ioctl<T>, arg: &mut T) -> Result<(), LinuxError> {
        let mut joined = self.free_access.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let rc = with_free_access(|r| {
            if !r.fds.iter().any(|(p, _)| *p == self.path) {
                let f = OpenOptions::new()
                    .write(true)
                    .custom_flags(libc::O_CLOEXEC)
                    .open(&self.path)
                    .map_err(|e| open_error(&self.path, e))?;
                r.fds.push((self.path.clone(), f));
            }
            if !*joined {
                r.users += 1;
                *joined = true;
            }
            let fd = r.fds.iter().find(|(p, _)| *p == self.path).map(|(_, f)| f.as_fd());
            match fd {
                Some(fd) => sys::ioctl(fd, req, arg).map_err(|e| self.failed(req.name(), e)),
                None => Err(self.refuse(req.name(), "the write-only descriptor is not open".into())),
            }
        })?;
        self.check_rc(req.name(), rc)
    }

    /// Stop using the process's write-only descriptors. The last user closes
    /// them all, and the driver then drops any mark the process still holds:
    /// `ncdev_misc_flush`. Called after the explicit unmark, and at drop.
    pub fn release_free_access(&self) {
        let mut joined = self.free_access.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if !std::mem::take(&mut *joined) {
            return;
        }
        with_free_access(|r| {
            r.users = r.users.saturating_sub(1);
            if r.users == 0 {
                for (_, f) in r.fds.drain(..) {
                    sys::close(f);
                }
            }
        });
    }

    /// The node's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The node the path named when it was opened, after symlinks: one device however spelled.
    pub fn node(&self) -> &Path {
        &self.node
    }

    /// The open file, for `mmap`.
    pub fn file(&self) -> &File {
        &self.file
    }

    /// Issue `req`; a positive return is an error as much as a negative one, [`positive_return`].
    fn call<T: PlainArg>(&self, req: Ioctl<T>, arg: &mut T) -> Result<(), LinuxError> {
        let rc = sys::ioctl(self.file.as_fd(), req, arg).map_err(|e| self.failed(req.name(), e))?;
        self.check_rc(req.name(), rc)
    }

    fn check_rc(&self, call: &'static str, rc: i32) -> Result<(), LinuxError> {
        match rc {
            0 => Ok(()),
            _ => Err(self.failed(call, Cause::Positive(rc))),
        }
    }

    fn failed(&self, call: &'static str, e: impl Into<Cause>) -> LinuxError {
        LinuxError::new(call, self.path.display().to_string(), e)
    }

    /// A call refused by this binding before it reached the driver, saying why.
    pub(crate) fn refuse(&self, call: &'static str, why: String) -> LinuxError {
        self.failed(call, Cause::Refused(why))
    }

    fn sema(&self, req: Ioctl<SemaphoreArg>, nc: u32, index: u32, value: u32) -> Result<u32, LinuxError> {
        let mut a = SemaphoreArg { nc_id: nc, semaphore_index: index, value };
        self.call(req, &mut a)?;
        Ok(a.value)
    }

    /// `NEURON_IOCTL_SEMAPHORE_INCREMENT`: the per-inference kickoff (doorbell C).
    pub fn semaphore_increment(&self, nc: u32, index: u32, value: u32) -> Result<(), LinuxError> {
        self.sema(ioctl::SEMAPHORE_INCREMENT, nc, index, value).map(|_| ())
    }

    /// `NEURON_IOCTL_SEMAPHORE_DECREMENT`.
    pub fn semaphore_decrement(&self, nc: u32, index: u32, value: u32) -> Result<(), LinuxError> {
        self.sema(ioctl::SEMAPHORE_DECREMENT, nc, index, value).map(|_| ())
    }

    /// `NEURON_IOCTL_SEMAPHORE_READ`. Semaphores hold signed 32-bit values.
    pub fn semaphore_read(&self, nc: u32, index: u32) -> Result<i32, LinuxError> {
        self.sema(ioctl::SEMAPHORE_READ, nc, index, 0).map(|v| v as i32)
    }

    /// `NEURON_IOCTL_SEMAPHORE_WRITE`.
    pub fn semaphore_write(&self, nc: u32, index: u32, value: u32) -> Result<(), LinuxError> {
        self.sema(ioctl::SEMAPHORE_WRITE, nc, index, value).map(|_| ())
    }

    /// `NEURON_IOCTL_EVENT_SET`.
    pub fn event_set(&self, nc: u32, index: u32, value: u32) -> Result<(), LinuxError> {
        self.sema(ioctl::EVENT_SET, nc, index, value).map(|_| ())
    }

    /// `NEURON_IOCTL_EVENT_GET`.
    pub fn event_get(&self, nc: u32, index: u32) -> Result<u32, LinuxError> {
        self.sema(ioctl::EVENT_GET, nc, index, 0)
    }

    /// `NEURON_IOCTL_NOTIFICATIONS_INIT_V2`: create or reuse an NQ ring; the
    /// argument comes back with `mmap_offset` and `mem_handle` filled in.
    pub fn notifications_init_v2(&self, mut arg: NotificationsInitV2) -> Result<NotificationsInitV2, LinuxError> {
        if !arg.size.is_power_of_two() {
            return Err(LinuxError::new(
                "NEURON_IOCTL_NOTIFICATIONS_INIT_V2",
                self.path.display().to_string(),
                Cause::Refused("ring size must be a power of two".into()),
            ));
        }
        self.call(ioctl::NOTIFICATIONS_INIT_V2, &mut arg)?;
        Ok(arg)
    }

    /// `NEURON_IOCTL_BAR_READ` of one register at absolute address `addr`.
    pub fn bar_read(&self, bar: u32, addr: u64) -> Result<u32, LinuxError> {
        let mut d = [0u32];
        let rc = sys::bar_rw(self.file.as_fd(), ioctl::BAR_READ, bar, &[addr], &mut d)
            .map_err(|e| self.failed(ioctl::BAR_READ.name(), e))?;
        self.check_rc(ioctl::BAR_READ.name(), rc)?;
        Ok(d[0])
    }

    /// `NEURON_IOCTL_BAR_WRITE` of one register at absolute address `addr`.
    pub fn bar_write(&self, bar: u32, addr: u64, value: u32) -> Result<(), LinuxError> {
        let rc = sys::bar_rw(self.file.as_fd(), ioctl::BAR_WRITE, bar, &[addr], &mut [value])
            .map_err(|e| self.failed(ioctl::BAR_WRITE.name(), e))?;
        self.check_rc(ioctl::BAR_WRITE.name(), rc)
    }

    /// `NEURON_IOCTL_DMA_QUEUE_COPY_START`: release `tx` M2S and `rx` S2M
    /// descriptors of one queue in one call, the tail-increment doorbell of a
    /// process that does not map the BAR.
    ///
    /// Refused before the call when the driver would fail or oops. `rx == 0`:
    /// the driver always adds the RX count and `udma_desc_action_add` does
    /// `BUG_ON(num == 0)`, `driver-abi.md` point 1. A queue this process has not
    /// initialised, point 2. A count above the ring size, `udma_m2m_copy_start`.
    pub fn dma_queue_copy_start(&self, eng_id: u32, qid: u32, tx: u32, rx: u32) -> Result<(), LinuxError> {
        let call = ioctl::DMA_QUEUE_COPY_START.name();
        if rx == 0 {
            return Err(self.refuse(
                call,
                format!(
                    "engine {eng_id} queue {qid}: rx_desc_count 0 (tx {tx}): the driver adds the RX count \
                     unconditionally and BUG_ONs on 0 (udma_desc_action_add): TX and RX of a queue go in one call, \
                     RX at least 1"
                ),
            ));
        }
        let sizes = self.queues.lock().map(|q| q.get(&(eng_id, qid)).copied()).unwrap_or(None);
        let Some((tx_size, rx_size)) = sizes else {
            return Err(self.refuse(
                call,
                format!(
                    "engine {eng_id} queue {qid} was not initialised: NEURON_IOCTL_DMA_QUEUE_INIT comes first \
                     (the driver checks counts against the queue it set up)"
                ),
            ));
        };
        if tx > tx_size || rx > rx_size {
            return Err(self.refuse(
                call,
                format!(
                    "engine {eng_id} queue {qid}: tx {tx} / rx {rx} descriptors exceed the rings of {tx_size} / {rx_size}"
                ),
            ));
        }
        let mut arg = DmaQueueCopyStart { eng_id, qid, tx_desc_count: tx, rx_desc_count: rx };
        self.call(ioctl::DMA_QUEUE_COPY_START, &mut arg)
    }

    /// Whether this process initialised queue `(eng_id, qid)` and has not released it.
    pub fn queue_initialised(&self, eng_id: u32, qid: u32) -> bool {
        self.queues.lock().is_ok_and(|q| q.contains_key(&(eng_id, qid)))
    }

    /// `NEURON_IOCTL_ACQUIRE_NEURON_DS`: `pid` 0 creates or finds this
    /// process's datastore, another pid hands a monitor that process's, or
    /// `ENOENT`. Returns the `mmap_offset` and `size`. Driver: neuron_cdev.c
    /// `ncdev_acquire_neuron_ds`, neuron_ds.c `neuron_ds_acquire_pid`.
    pub fn acquire_neuron_ds(&self, pid: i32) -> Result<ioctl::NeuronDsInfo, LinuxError> {
        let mut a = ioctl::NeuronDsInfo { pid, ..Default::default() };
        self.call(ioctl::ACQUIRE_NEURON_DS, &mut a)?;
        Ok(a)
    }

    /// `NEURON_IOCTL_RELEASE_NEURON_DS`: the owner's release clears and zeroes
    /// the datastore, a monitor's changes nothing; neuron_ds.c `neuron_ds_release_pid`.
    pub fn release_neuron_ds(&self, pid: i32) -> Result<(), LinuxError> {
        let mut a = ioctl::NeuronDsInfo { pid, ..Default::default() };
        self.call(ioctl::RELEASE_NEURON_DS, &mut a)
    }

    /// `NEURON_IOCTL_DRIVER_INFO_GET`: the architecture and the driver's feature flags.
    pub fn driver_info(&self) -> Result<DriverInfo, LinuxError> {
        let mut a = DriverInfo { version: 0, size: core::mem::size_of::<DriverInfo>() as u32, ..DriverInfo::default() };
        self.call(ioctl::DRIVER_INFO_GET, &mut a)?;
        Ok(a)
    }

    /// `NEURON_IOCTL_COMPATIBLE_VERSION`: the runtime versions the driver serves.
    pub fn compatible_version(&self) -> Result<CompatibleVersion, LinuxError> {
        let mut a = CompatibleVersion::default();
        self.call(ioctl::COMPATIBLE_VERSION, &mut a)?;
        Ok(a)
    }

    /// `NEURON_IOCTL_DEVICE_INFO`: architecture, connected devices, BAR addresses and sizes.
    pub fn device_info(&self) -> Result<DeviceInfo, LinuxError> {
        let mut a = DeviceInfo::default();
        self.call(ioctl::DEVICE_INFO, &mut a)?;
        Ok(a)
    }

    /// `NEURON_IOCTL_CRWL_READER_ENTER`: become a reader of core `nc_id`'s
    /// model `uuid`. Only the core's writer process with the writer's uuid is
    /// accepted, else `ENOENT`; neuron_crwl.c `ncrwl_validate_uuid`.
    pub fn crwl_reader_enter(&self, nc_id: u32, uuid: [u8; 32]) -> Result<(), LinuxError> {
        self.call(ioctl::CRWL_READER_ENTER, &mut Crwl { nc_id, uuid })
    }

    /// `NEURON_IOCTL_CRWL_READER_EXIT`: stop reading core `nc_id`'s model
    /// `uuid`; the enter's check, and `EINVAL` at reader count 0.
    pub fn crwl_reader_exit(&self, nc_id: u32, uuid: [u8; 32]) -> Result<(), LinuxError> {
        self.call(ioctl::CRWL_READER_EXIT, &mut Crwl { nc_id, uuid })
    }

    /// `NEURON_IOCTL_CRWL_WRITER_ENTER`: take core `nc_id`'s writer lock to
    /// switch model `uuid` in. `EALREADY` when this process already holds that
    /// uuid sets the lock all the same; neuron_crwl.c `ncrwl_writer_enter`.
    pub fn crwl_writer_enter(&self, nc_id: u32, uuid: [u8; 32]) -> Result<(), LinuxError> {
        self.call(ioctl::CRWL_WRITER_ENTER, &mut Crwl { nc_id, uuid })
    }

    /// `NEURON_IOCTL_CRWL_WRITER_DOWNGRADE`: end the switch; this process becomes
    /// the core's one reader, neuron_crwl.c `ncrwl_writer_downgrade`.
    pub fn crwl_writer_downgrade(&self, nc_id: u32, uuid: [u8; 32]) -> Result<(), LinuxError> {
        self.call(ioctl::CRWL_WRITER_DOWNGRADE, &mut Crwl { nc_id, uuid })
    }

    /// `NEURON_IOCTL_CRWL_NC_RANGE_MARK` through the write-only descriptor:
    /// claim `nc_count` consecutive free cores from `start` to `end` inclusive.
    /// The bitmap claimed, or `EBUSY` when another process holds them;
    /// neuron_crwl.c `ncrwl_nc_range_mark`.
    pub fn crwl_nc_range_mark(&self, nc_count: u32, start: u32, end: u32) -> Result<u64, LinuxError> {
        let mut a = CrwlNcMap { nc_count, start_nc_index: start, end_nc_index: end, ..CrwlNcMap::default() };
        self.call_free_access(ioctl::CRWL_NC_RANGE_MARK, &mut a)?;
        Ok(a.bitmap)
    }

    /// `NEURON_IOCTL_CRWL_NC_RANGE_UNMARK` through the write-only descriptor:
    /// give back the cores of `bitmap`, neuron_crwl.c `ncrwl_nc_range_unmark`.
    pub fn crwl_nc_range_unmark(&self, bitmap: u64) -> Result<(), LinuxError> {
        self.call_free_access(ioctl::CRWL_NC_RANGE_UNMARK, &mut CrwlNcMap { bitmap, ..CrwlNcMap::default() })
    }

    /// `NEURON_IOCTL_DEVICE_GET_ALL_APPS_INFO` with the lock information: the
    /// processes attached to the device and the cores whose writer each is.
    pub fn apps_info(&self) -> Result<Vec<AppInfo>, LinuxError> {
        let call = ioctl::DEVICE_GET_ALL_APPS_INFO.name();
        let (rc, apps) = sys::get_all_apps_info(self.file.as_fd(), ioctl::APP_INFO_PID_NC_LOCK_INFO)
            .map_err(|e| self.failed(call, e))?;
        self.check_rc(call, rc)?;
        Ok(apps)
    }

    /// `NEURON_IOCTL_GET_LOGICAL_TO_PHYSICAL_NC_MAP`: the `(device, device
    /// core)` of each of the first `max` host-wide logical cores, as
    /// v3/neuron_dhal_v3.c `nc_mapping_v0_seng_swap` maps them. `None` where the
    /// driver has none: `ENOTSUPP` on v2, or `EINVAL` from a driver older than
    /// the request, neuron_cdev.c `ncdev_misc_ioctl`.
    pub fn logical_to_physical(&self, max: u32) -> Result<Option<Vec<(u32, u32)>>, LinuxError> {
        let max = max.min(ioctl::NC_MAP_MAX_ENTRIES);
        let head = core::mem::size_of::<ioctl::NcMapHeader>();
        let each = core::mem::size_of::<ioctl::NcMapEntry>();
        let mut buf = vec![0u8; head + max as usize * each];
        let call = ioctl::GET_LOGICAL_TO_PHYSICAL_NC_MAP.name();
        match sys::logical_to_physical_nc_map(self.file.as_fd(), &mut buf, max) {
            Ok(rc) => self.check_rc(call, rc)?,
            Err(e) if matches!(e.raw_os_error(), Some(ioctl::ENOTSUPP | libc::EINVAL | libc::ENOTTY)) => {
                return Ok(None)
            }
            Err(e) => return Err(self.failed(call, e)),
        }
        let word = |b: &[u8], at: usize| b.get(at..at + 4).map_or(0, |w| u32::from_ne_bytes([w[0], w[1], w[2], w[3]]));
        let n = word(&buf, 0).min(max);
        let entries = buf[head..].chunks_exact(each).take(n as usize).map(|c| (word(c, 0), word(c, 4))).collect();
        Ok(Some(entries))
    }

    /// The simulator-only hint query, `nrt_abi::sim::SIM_HINTS`: `Some` only
    /// when the call succeeded and the answer carries the simulator's magic and
    /// version. A real driver refuses it, and any failure means no hints.
    pub fn sim_hints(&self) -> Option<SimHints> {
        self.sim_hints_call().ok().flatten()
    }

    /// As [`sim_hints`](Self::sim_hints), the failure kept: a device that
    /// answered before and now fails is gone.
    pub fn sim_hints_call(&self) -> Result<Option<SimHints>, LinuxError> {
        let mut a = SimHints { size: core::mem::size_of::<SimHints>() as u32, ..SimHints::default() };
        self.call(SIM_HINTS, &mut a)?;
        Ok((a.magic == SIM_HINTS_MAGIC && a.version == SIM_HINTS_VERSION).then_some(a))
    }

    /// `NEURON_IOCTL_NC_RESET` of the cores in `nc_map`: the reset request's id.
    pub fn nc_reset(&self, nc_map: u32) -> Result<u32, LinuxError> {
        let mut a = NcReset { nc_map, request_id: 0 };
        // +1: a reset with this id already pending or not yet waited for,
        // nothing copied back; neuron_reset.c `nr_start_ncs`.
        self.call(ioctl::NC_RESET, &mut a)?;
        Ok(a.request_id)
    }

    /// `NEURON_IOCTL_NC_RESET_READY`: wait for reset `request_id`; its result, 0 on success.
    pub fn nc_reset_ready(&self, request_id: u32) -> Result<i32, LinuxError> {
        let mut a = NcResetReady { request_id, result: 0 };
        self.call(ioctl::NC_RESET_READY, &mut a)?;
        Ok(a.result)
    }

    /// `NEURON_IOCTL_MEM_ALLOC_V2MT`: allocate a chunk; the handle the driver
    /// wrote, which the info struct does not give back. Host memory takes
    /// `align` 0: the driver refuses any other with `EINVAL`, neuron_mempool.c
    /// `mc_alloc_internal`.
    pub fn mem_alloc_v2mt(&self, arg: MemAllocV2Mt) -> Result<u64, LinuxError> {
        let call = ioctl::MEM_ALLOC_V2MT.name();
        if arg.host_memory != 0 && arg.align != 0 {
            return Err(self.refuse(
                call,
                format!(
                    "host memory with align {}: the driver refuses any alignment of host memory \
                     (mc_alloc_internal: EINVAL); host chunks are page-aligned, pass 0",
                    arg.align
                ),
            ));
        }
        let (rc, handle) = sys::mem_alloc_v2mt(self.file.as_fd(), arg).map_err(|e| self.failed(call, e))?;
        self.check_rc(call, rc)?;
        Ok(handle)
    }

    /// `NEURON_IOCTL_MEM_GET_EXTENDED_INFO`, version 1, of chunk `mem_handle`.
    /// Its `mem_handle` comes back as a kernel pointer, so the caller keeps the
    /// handle it passed; neuron_cdev.c `ncdev_mem_get_extended_info`.
    pub fn mem_get_extended_info(&self, mem_handle: u64) -> Result<MemGetExtendedInfo, LinuxError> {
        let mut a = MemGetExtendedInfo { mem_handle, version: 1, ..MemGetExtendedInfo::default() };
        self.call(ioctl::MEM_GET_EXTENDED_INFO, &mut a)?;
        Ok(a)
    }

    /// `NEURON_IOCTL_MEM_FREE` of chunk `mem_handle`.
    pub fn mem_free(&self, mem_handle: u64) -> Result<(), LinuxError> {
        self.call(ioctl::MEM_FREE, &mut MemFree { mem_handle })
    }

    /// `NEURON_IOCTL_DMA_QUEUE_INIT`: bind a queue's rings, remembered with
    /// their sizes once the driver accepted it.
    pub fn dma_queue_init(&self, mut arg: DmaQueueInit) -> Result<(), LinuxError> {
        self.call(ioctl::DMA_QUEUE_INIT, &mut arg)?;
        if let Ok(mut q) = self.queues.lock() {
            q.insert((arg.eng_id, arg.qid), (arg.tx_desc_count, arg.rx_desc_count));
        }
        Ok(())
    }

    /// `NEURON_IOCTL_DMA_QUEUE_RELEASE`. The queue is forgotten whatever the driver answers.
    pub fn dma_queue_release(&self, eng_id: u32, qid: u32) -> Result<(), LinuxError> {
        if let Ok(mut q) = self.queues.lock() {
            q.remove(&(eng_id, qid));
        }
        self.call(ioctl::DMA_QUEUE_RELEASE, &mut DmaQueueRelease { eng_id, qid })
    }

    /// `NEURON_IOCTL_NOTIFICATIONS_INIT_WITH_REALLOC_V2`: with `force_alloc_mem`
    /// 1 the driver frees the ring's old chunk and allocates one of the new
    /// size, `driver-abi.md` point 8.
    pub fn notifications_init_with_realloc_v2(
        &self,
        mut arg: NotificationsInitWithReallocV2,
    ) -> Result<NotificationsInitWithReallocV2, LinuxError> {
        if !arg.size.is_power_of_two() {
            return Err(self
                .refuse(ioctl::NOTIFICATIONS_INIT_WITH_REALLOC_V2.name(), "ring size must be a power of two".into()));
        }
        self.call(ioctl::NOTIFICATIONS_INIT_WITH_REALLOC_V2, &mut arg)?;
        Ok(arg)
    }
}

/// The node `path` names: its canonical path, or `path` itself when no file
/// backs it, as for a node only `nrt-sim driver` answers for.
pub fn node_of(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The error of a failed open of `path`. `EBUSY` is the driver's limit of 16
/// processes per device, said so: neuron_pid.c `npid_attach`,
/// `NEURON_MAX_PROCESS_PER_DEVICE`.
fn open_error(path: &Path, e: io::Error) -> LinuxError {
    let busy = e.raw_os_error() == Some(libc::EBUSY);
    let err = LinuxError::new("open", path.display().to_string(), e);
    if busy {
        err.with_detail(format!(
            "{} processes already have {} open, the driver's limit per device (NEURON_MAX_PROCESS_PER_DEVICE, \
             neuron_pid.c: npid_attach)",
            ioctl::MAX_PROCESS_PER_DEVICE,
            path.display()
        ))
    } else {
        err
    }
}

/// What a positive return of `call` means: the driver's positive returns are
/// failures a binding checking only `< 0` takes for success.
pub fn positive_return(call: &str, rc: i32) -> String {
    let why = match (call, rc) {
        ("NEURON_IOCTL_NC_RESET", 1) => {
            "a reset with this request id is already pending or was never waited for (neuron_reset.c: \
             nr_start_ncs); nothing was copied back"
        }
        (_, 22) => "EINVAL returned as a positive value (a bad handle: neuron_cdev.c)",
        ("NEURON_IOCTL_BAR_READ", _) => "the bytes of the register array a failed copy left (neuron_cdev.c)",
        (_, _) => "the bytes a failed copy to or from this process left (neuron_cdev.c: copy_to_user)",
    };
    format!("the ioctl returned +{rc} where 0 is success: {why}")
}

impl ErrorType for NeuronDevice {
    type Error = LinuxError;
}

impl hal::Semaphore for NeuronDevice {
    fn increment(&mut self, nc: u32, index: u32, value: u32) -> Result<(), LinuxError> {
        self.semaphore_increment(nc, index, value)
    }
}

/// Register access through the driver's BAR ioctls: how an unprivileged
/// process writes NQ HEAD registers. Offsets are relative to `bar_base`, the
/// kernel address `DEVICE_INFO` reports in `bar_address[bar]`, and both reads
/// and writes send `bar_base + offset`. BAR_WRITE subtracts the driver's BAR0
/// base and bounds the offset, neuron_cdev.c `ncdev_bar_write_data_v2`;
/// BAR_READ reads the address as given, neuron_fw_io.c
/// `fw_io_read_csr_array_direct`, so a plain offset would be read as a small
/// kernel address. Make one with [`from_device_info`](Self::from_device_info).
#[derive(Debug)]
pub struct IoctlBar<'a> {
    dev: &'a NeuronDevice,
    bar: u32,
    bar_base: u64,
    size: u64,
}

impl<'a> IoctlBar<'a> {
    /// BAR `bar` of `dev`, `size` bytes from `bar_base`.
    pub fn new(dev: &'a NeuronDevice, bar: u32, bar_base: u64, size: u64) -> IoctlBar<'a> {
        IoctlBar { dev, bar, bar_base, size }
    }

    /// BAR `bar` of `dev` at the base and size `DEVICE_INFO` reports; a BAR of
    /// size 0 or past the driver's is refused.
    pub fn with_info(dev: &'a NeuronDevice, info: &DeviceInfo, bar: u32) -> Result<IoctlBar<'a>, LinuxError> {
        let i = usize::try_from(bar).ok().filter(|i| *i < ioctl::MAX_BARS);
        match i.map(|i| (info.bar_address[i], info.bar_size[i])) {
            Some((base, size)) if size > 0 => Ok(IoctlBar::new(dev, bar, base, size)),
            Some(_) => Err(dev.refuse(ioctl::DEVICE_INFO.name(), format!("BAR {bar} has size 0 in the device info"))),
            None => Err(
                dev.refuse(ioctl::DEVICE_INFO.name(), format!("no BAR {bar} (the driver reports {})", ioctl::MAX_BARS))
            ),
        }
    }

    /// BAR `bar` of `dev`, its base and size asked of the driver.
    pub fn from_device_info(dev: &'a NeuronDevice, bar: u32) -> Result<IoctlBar<'a>, LinuxError> {
        let info = dev.device_info()?;
        IoctlBar::with_info(dev, &info, bar)
    }

    /// The BAR's base address, the driver's `bar_address[bar]`.
    pub fn base(&self) -> u64 {
        self.bar_base
    }

    /// The BAR's size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    fn addr(&self, offset: u64) -> Result<u64, LinuxError> {
        let refuse = |why: String| LinuxError::refused("BAR access", self.dev.path.display().to_string(), why);
        if offset.checked_add(4).is_none_or(|end| end > self.size) || !offset.is_multiple_of(4) {
            return Err(refuse(format!("offset 0x{offset:x} outside the BAR of 0x{:x} bytes", self.size)));
        }
        // The base is the driver's cookie, not ours to trust: near the top of
        // the address space it would wrap or panic.
        self.bar_base.checked_add(offset).ok_or_else(|| {
            refuse(format!(
                "BAR {} address 0x{:x} + 0x{offset:x} overflows 64 bits (a bad BAR base)",
                self.bar, self.bar_base
            ))
        })
    }
}

impl ErrorType for IoctlBar<'_> {
    type Error = LinuxError;
}

impl hal::Registers for IoctlBar<'_> {
    fn read32(&mut self, offset: u64) -> Result<u32, LinuxError> {
        let a = self.addr(offset)?;
        self.dev.bar_read(self.bar, a)
    }
    fn write32(&mut self, offset: u64, value: u32) -> Result<(), LinuxError> {
        let a = self.addr(offset)?;
        self.dev.bar_write(self.bar, a, value)
    }
}

/// The `/dev/neuron*` nodes present, sorted, with the PCI BDF of each when
/// `/sys/class/neuron_device/neuronN/device` tells it.
pub fn list_devices() -> Vec<(PathBuf, Option<String>)> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir("/dev") {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            if let Some(n) = name.strip_prefix("neuron") {
                if !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()) {
                    let bdf = std::fs::read_link(format!("/sys/class/neuron_device/{name}/device"))
                        .ok()
                        .and_then(|p| p.file_name().map(|f| f.to_string_lossy().to_string()));
                    out.push((e.path(), bdf));
                }
            }
        }
    }
    out.sort_by_key(|(p, _)| {
        p.file_name()
            .and_then(|f| f.to_str())
            .and_then(|s| s.trim_start_matches("neuron").parse::<u32>().ok())
            .unwrap_or(u32::MAX)
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use nrt_core::hal::Registers;

    fn not_a_device(name: &str) -> (NeuronDevice, PathBuf) {
        let p = std::env::temp_dir().join(format!("nrt-linux-dev-{}-{name}", std::process::id()));
        std::fs::write(&p, b"").unwrap();
        (NeuronDevice::open(&p).unwrap(), p)
    }

    #[test]
    fn an_ioctl_bar_whose_base_plus_offset_overflows_refuses_by_name() {
        let (dev, p) = not_a_device("bar-wrap");
        // A BAR cookie near the top of the address space: offset 8 is inside the
        // BAR's 4 KiB, but base + 8 does not fit 64 bits.
        let mut bar = IoctlBar::new(&dev, 0, u64::MAX - 3, 0x1000);
        for e in [bar.read32(8).unwrap_err(), bar.write32(8, 1).unwrap_err()] {
            let msg = e.to_string();
            assert_eq!(e.call, "BAR access", "{msg}");
            assert!(msg.contains(&p.display().to_string()), "{msg}");
            assert!(msg.contains("0xfffffffffffffffc + 0x8 overflows"), "{msg}");
            assert!(matches!(e.cause, Cause::Refused(_)), "{msg}");
        }
        // In range: the address is formed and the ioctl made; a plain file answers ENOTTY.
        let mut ok = IoctlBar::new(&dev, 0, 0x1000_0000, 0x1000);
        assert_eq!(ok.read32(8).unwrap_err().errno(), Some(libc::ENOTTY));
        std::fs::remove_file(p).unwrap();
    }

    /// driver-abi.md point 7: the BAR base is the driver's `bar_address[bar]`,
    /// asked with DEVICE_INFO; no base is assumed.
    #[test]
    fn the_ioctl_bar_takes_its_base_and_size_from_the_device_info() {
        let (dev, p) = not_a_device("bar-info");
        let info = DeviceInfo {
            bar_address: [0x40_0000_0000, 0x50_0000_0000],
            bar_size: [0x1000_0000, 0],
            ..DeviceInfo::default()
        };
        let bar = IoctlBar::with_info(&dev, &info, 0).unwrap();
        assert_eq!((bar.base(), bar.size()), (0x40_0000_0000, 0x1000_0000));
        let e = IoctlBar::with_info(&dev, &info, 1).unwrap_err();
        assert!(e.to_string().contains("BAR 1 has size 0"), "{e}");
        let e = IoctlBar::with_info(&dev, &info, 2).unwrap_err();
        assert!(e.to_string().contains("no BAR 2"), "{e}");
        // Past the reported size: refused before any ioctl.
        let mut bar = IoctlBar::with_info(&dev, &info, 0).unwrap();
        assert!(matches!(bar.read32(0x1000_0000).unwrap_err().cause, Cause::Refused(_)));
        // Asked of a file that is not a Neuron device: DEVICE_INFO's ENOTTY, named.
        let e = IoctlBar::from_device_info(&dev, 0).unwrap_err();
        assert_eq!((e.call, e.errno()), ("NEURON_IOCTL_DEVICE_INFO", Some(libc::ENOTTY)), "{e}");
        std::fs::remove_file(p).unwrap();
    }

    /// EBUSY is the 17th process of a device, neuron_pid.c `npid_attach`;
    /// the error says so and names the node.
    #[test]
    fn an_open_refused_with_ebusy_names_the_process_limit() {
        let e = open_error(Path::new("/dev/neuron3"), io::Error::from_raw_os_error(libc::EBUSY));
        assert_eq!((e.call, e.errno()), ("open", Some(libc::EBUSY)));
        let msg = e.to_string();
        assert!(msg.starts_with("open on /dev/neuron3 failed: EBUSY"), "{msg}");
        assert!(msg.contains("16 processes already have /dev/neuron3 open"), "{msg}");
        assert!(msg.contains("NEURON_MAX_PROCESS_PER_DEVICE"), "{msg}");
        let other = open_error(Path::new("/dev/neuron3"), io::Error::from_raw_os_error(libc::ENOENT));
        assert!(other.detail.is_none(), "{other}");
        // Through `open` itself: a node that is not there is ENOENT, named.
        let e = NeuronDevice::open("/nonexistent/neuron9").unwrap_err();
        assert_eq!((e.call, e.errno(), e.target.as_str()), ("open", Some(libc::ENOENT), "/nonexistent/neuron9"));
    }

    /// driver-abi.md point 1: copy start never goes out with rx == 0.
    #[test]
    fn copy_start_with_rx_zero_is_refused_before_the_driver() {
        let (dev, p) = not_a_device("rx0");
        dev.queues.lock().unwrap().insert((0, 0), (16, 16));
        let e = dev.dma_queue_copy_start(0, 0, 5, 0).unwrap_err();
        assert_eq!(e.call, "NEURON_IOCTL_DMA_QUEUE_COPY_START");
        assert!(matches!(e.cause, Cause::Refused(_)), "{e}");
        assert!(e.to_string().contains("rx_desc_count 0") && e.to_string().contains("BUG_ON"), "{e}");
        // A valid pair reaches the plain file, ENOTTY, TX 0 included.
        assert_eq!(dev.dma_queue_copy_start(0, 0, 5, 5).unwrap_err().errno(), Some(libc::ENOTTY));
        assert_eq!(dev.dma_queue_copy_start(0, 0, 0, 1).unwrap_err().errno(), Some(libc::ENOTTY));
        std::fs::remove_file(p).unwrap();
    }

    /// driver-abi.md point 2: copy start only on a queue this process initialised.
    #[test]
    fn copy_start_before_queue_init_or_past_the_ring_is_refused() {
        let (dev, p) = not_a_device("noinit");
        let e = dev.dma_queue_copy_start(0, 0, 1, 1).unwrap_err();
        assert!(matches!(e.cause, Cause::Refused(_)), "{e}");
        assert!(e.to_string().contains("was not initialised"), "{e}");
        // The driver refusing DMA_QUEUE_INIT leaves it uninitialised.
        let init = DmaQueueInit { eng_id: 0, qid: 0, tx_desc_count: 8, rx_desc_count: 8, ..DmaQueueInit::default() };
        assert_eq!(dev.dma_queue_init(init).unwrap_err().errno(), Some(libc::ENOTTY));
        assert!(!dev.queue_initialised(0, 0));
        dev.queues.lock().unwrap().insert((0, 0), (8, 8));
        assert!(dev.queue_initialised(0, 0));
        let e = dev.dma_queue_copy_start(0, 0, 9, 1).unwrap_err();
        assert!(e.to_string().contains("exceed the rings of 8 / 8"), "{e}");
        assert_eq!(dev.dma_queue_copy_start(0, 0, 8, 8).unwrap_err().errno(), Some(libc::ENOTTY));
        // Released: refused again, the release itself reaching the driver.
        assert_eq!(dev.dma_queue_release(0, 0).unwrap_err().errno(), Some(libc::ENOTTY));
        assert!(dev.dma_queue_copy_start(0, 0, 1, 1).unwrap_err().to_string().contains("was not initialised"));
        std::fs::remove_file(p).unwrap();
    }

    /// Every bring-up call on a file that is not a Neuron device fails with
    /// ENOTTY, naming the call and the file.
    #[test]
    fn every_bring_up_call_names_itself_on_a_non_device() {
        let dev = NeuronDevice::open("/dev/null").unwrap();
        let results: Vec<(&str, Result<(), LinuxError>)> = vec![
            ("NEURON_IOCTL_DRIVER_INFO_GET", dev.driver_info().map(|_| ())),
            ("NEURON_IOCTL_COMPATIBLE_VERSION", dev.compatible_version().map(|_| ())),
            ("NEURON_IOCTL_DEVICE_INFO", dev.device_info().map(|_| ())),
            ("NEURON_IOCTL_CRWL_READER_ENTER", dev.crwl_reader_enter(0, [1; 32])),
            ("NEURON_IOCTL_CRWL_READER_EXIT", dev.crwl_reader_exit(0, [1; 32])),
            ("NEURON_IOCTL_NC_RESET", dev.nc_reset(1).map(|_| ())),
            ("NEURON_IOCTL_NC_RESET_READY", dev.nc_reset_ready(1).map(|_| ())),
            (
                "NEURON_IOCTL_MEM_ALLOC_V2MT",
                dev.mem_alloc_v2mt(MemAllocV2Mt { size: 4096, ..Default::default() }).map(|_| ()),
            ),
            ("NEURON_IOCTL_MEM_GET_EXTENDED_INFO", dev.mem_get_extended_info(1).map(|_| ())),
            ("NEURON_IOCTL_MEM_FREE", dev.mem_free(1)),
            ("NEURON_IOCTL_DMA_QUEUE_INIT", dev.dma_queue_init(DmaQueueInit::default())),
            ("NEURON_IOCTL_DMA_QUEUE_RELEASE", dev.dma_queue_release(0, 0)),
            (
                "NEURON_IOCTL_NOTIFICATIONS_INIT_WITH_REALLOC_V2",
                dev.notifications_init_with_realloc_v2(NotificationsInitWithReallocV2 {
                    size: 1024,
                    ..Default::default()
                })
                .map(|_| ()),
            ),
        ];
        for (call, r) in results {
            let e = r.unwrap_err();
            assert_eq!(e.call, call);
            assert_eq!(e.errno(), Some(libc::ENOTTY), "{e}");
            let msg = e.to_string();
            assert!(msg.starts_with(&format!("{call} on /dev/null failed: ENOTTY")), "{msg}");
        }
    }
}
