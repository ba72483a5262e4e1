//! The Neuron driver's ioctl ABI: request codes and argument structs.
//!
//! Numbers and layouts are the public driver's (`neuron_ioctl.h`; see
//! `shared/anchors/neuron-driver-facts.md` §3), checked in the tests below. Two
//! facts matter:
//!
//! - every request encodes the size of a **pointer** (8 on x86-64), not of the
//!   struct, because the header declares them as `_IOR('N', nr, struct X *)`; the
//!   argument is a pointer to the struct, which the driver copies in with its real
//!   size;
//! - most "input" requests are declared `_IOR` (direction bits 2), against the
//!   Linux convention. We match the numbers exactly.
//!
//! The seed calls the kickoff an "_IOW-style 8-byte argument carrying (idx,
//! value)"; the driver's header is the authority (`seed-vs-driver.md` point 1): a
//! pointer to the 12-byte `{nc_id, semaphore_index, value}`.
//!
//! Each request is an [`Ioctl<T>`]: its code and the one argument type the
//! driver copies through it, paired here and nowhere else.

use core::marker::PhantomData;

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// `_IOC` direction bits: write (user to kernel).
pub const IOC_WRITE: u32 = 1;
/// `_IOC` direction bits: read (kernel to user).
pub const IOC_READ: u32 = 2;
/// The driver's ioctl type character, `'N'`.
pub const NEURON_IOCTL_BASE: u32 = b'N' as u32;
/// The size field of every Neuron request: the size of a pointer.
pub const ARG_PTR_SIZE: u32 = core::mem::size_of::<*const u8>() as u32;

/// The `_IOC` size field is 14 bits wide.
const IOC_SIZE_MASK: u32 = (1 << 14) - 1;

/// The Linux `_IOC(dir, type, nr, size)` encoding.
pub const fn ioc(dir: u32, nr: u32, size: u32) -> u32 {
    (dir << 30) | (size << 16) | (NEURON_IOCTL_BASE << 8) | nr
}

/// The size field of request `code` (`_IOC_SIZE`).
pub const fn ioc_size(code: u32) -> u32 {
    (code >> 16) & IOC_SIZE_MASK
}

/// A driver request bound to the one argument type it copies: `ioctl(fd, code,
/// &mut T)`.
///
/// The kernel copies as many bytes as the *request* says, whatever the caller
/// passes; an untyped `ioctl(fd, code, &mut x)` is therefore only as sound as the
/// pairing of `code` with the type of `x`. Here the pairing is made once, in this
/// module: the constructor is private, each request below is a constant, and
/// its code is built by the `_IOC` encoding from `size_of::<*mut T>()`, the
/// argument the header declares (`_IOR('N', nr, struct X *)`). The driver then
/// copies `sizeof(struct X)` bytes through that pointer, which is `size_of::<T>()`:
/// each argument struct's size is asserted at compile time against the driver's
/// below. The tests check every request's code against the driver's number and
/// its size field against its argument type.
///
/// Outside this module no `Ioctl` can be made, so a request the kernel answers
/// with more bytes than the argument holds (FIONREAD through a `&mut u8`)
/// does not type-check:
///
/// ```compile_fail
/// // There is no constructor to pair FIONREAD (0x541B) with a one-byte argument.
/// let _r: nrt_abi::ioctl::Ioctl<u8> = nrt_abi::ioctl::Ioctl::new(0x541B, "FIONREAD");
/// ```
pub struct Ioctl<T> {
    code: u32,
    name: &'static str,
    arg: PhantomData<fn(&mut T)>,
}

impl<T> Ioctl<T> {
    /// `_IOC(dir, 'N', nr, struct X *)`: the pointer-declared form of every
    /// Neuron request.
    const fn pointer(dir: u32, nr: u32, name: &'static str) -> Ioctl<T> {
        let code = ioc(dir, nr, core::mem::size_of::<*mut T>() as u32);
        // The size field holds the pointer's size exactly (it fits 14 bits).
        assert!(ioc_size(code) as usize == core::mem::size_of::<*mut T>());
        Ioctl { code, name, arg: PhantomData }
    }

    /// `_IOC(dir, 'N', nr, struct X)`: the few requests the header declares with
    /// the struct itself (`MEM_ALLOC_V2MT`, `DRIVER_INFO_GET`,
    /// `RESOURCE_MMAP_INFO`): the size field is the struct's.
    pub(crate) const fn by_value(dir: u32, nr: u32, name: &'static str) -> Ioctl<T> {
        let code = ioc(dir, nr, core::mem::size_of::<T>() as u32);
        assert!(ioc_size(code) as usize == core::mem::size_of::<T>());
        Ioctl { code, name, arg: PhantomData }
    }

    /// The request number (`_IOC_NR`): what the driver's switch dispatches on.
    pub const fn nr(&self) -> u32 {
        self.code & 0xFF
    }

    /// The request code passed to `ioctl(2)`.
    pub const fn code(&self) -> u32 {
        self.code
    }

    /// The request's name in the driver's header, for error messages.
    pub const fn name(&self) -> &'static str {
        self.name
    }
}

impl<T> Clone for Ioctl<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Ioctl<T> {}

impl<T> core::fmt::Debug for Ioctl<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{} (0x{:08X})", self.name, self.code)
    }
}

/// An argument the driver reads and writes only within its own
/// `size_of::<Self>()` bytes: no pointer inside it is followed. Sealed: only the
/// plain `#[repr(C)]` integer structs of this module implement it (their sizes are
/// asserted below against the driver's), so `nrt_linux::sys::ioctl` can take one
/// safely. [`BarRw`], which carries pointers, does not.
pub trait PlainArg: sealed::Sealed {}

mod sealed {
    pub trait Sealed {}
}

/// Mark the plain argument structs (no pointer inside, sizes asserted below).
macro_rules! plain {
    ($($t:ty),* $(,)?) => {$(
        impl sealed::Sealed for $t {}
        impl PlainArg for $t {}
    )*};
}

plain!(
    SemaphoreArg,
    NotificationsInitV2,
    NotificationsInitWithReallocV2,
    NotificationsQueueInfo,
    DmaQueueCopyStart,
    DmaQueueInit,
    DmaQueueRelease,
    DmaAckCompleted,
    DeviceInfo,
    DeviceBasicInfo,
    DriverInfo,
    CompatibleVersion,
    Crwl,
    NcReset,
    NcResetReady,
    MemGetExtendedInfo,
    MemFree,
    ResourceMmapInfo,
    CrwlNcMap,
    NcPidStateDump,
    NeuronDsInfo,
    crate::sim::SimHints,
);

/// `NEURON_IOCTL_BAR_READ` (nr 11). Its argument carries pointers: issued only
/// through `nrt_linux::sys::bar_rw`, which builds it from slices.
pub const BAR_READ: Ioctl<BarRw> = Ioctl::pointer(IOC_READ, 11, "NEURON_IOCTL_BAR_READ");
/// `NEURON_IOCTL_BAR_WRITE` (nr 12). As [`BAR_READ`].
pub const BAR_WRITE: Ioctl<BarRw> = Ioctl::pointer(IOC_WRITE, 12, "NEURON_IOCTL_BAR_WRITE");
/// `NEURON_IOCTL_DMA_QUEUE_COPY_START` (nr 35): how an unprivileged process
/// advances a DMA queue's tail (the driver refuses BAR writes to `drtp_inc`).
pub const DMA_QUEUE_COPY_START: Ioctl<DmaQueueCopyStart> =
    Ioctl::pointer(IOC_READ, 35, "NEURON_IOCTL_DMA_QUEUE_COPY_START");
/// `NEURON_IOCTL_SEMAPHORE_INCREMENT` (nr 41): the per-inference kickoff.
pub const SEMAPHORE_INCREMENT: Ioctl<SemaphoreArg> = Ioctl::pointer(IOC_READ, 41, "NEURON_IOCTL_SEMAPHORE_INCREMENT");
/// `NEURON_IOCTL_SEMAPHORE_DECREMENT` (nr 42).
pub const SEMAPHORE_DECREMENT: Ioctl<SemaphoreArg> = Ioctl::pointer(IOC_READ, 42, "NEURON_IOCTL_SEMAPHORE_DECREMENT");
/// `NEURON_IOCTL_SEMAPHORE_READ` (nr 43; `value` is out).
pub const SEMAPHORE_READ: Ioctl<SemaphoreArg> = Ioctl::pointer(IOC_READ | IOC_WRITE, 43, "NEURON_IOCTL_SEMAPHORE_READ");
/// `NEURON_IOCTL_SEMAPHORE_WRITE` (nr 44).
pub const SEMAPHORE_WRITE: Ioctl<SemaphoreArg> = Ioctl::pointer(IOC_READ, 44, "NEURON_IOCTL_SEMAPHORE_WRITE");
/// `NEURON_IOCTL_EVENT_SET` (nr 45).
pub const EVENT_SET: Ioctl<SemaphoreArg> = Ioctl::pointer(IOC_READ, 45, "NEURON_IOCTL_EVENT_SET");
/// `NEURON_IOCTL_EVENT_GET` (nr 46; `value` is out).
pub const EVENT_GET: Ioctl<SemaphoreArg> = Ioctl::pointer(IOC_READ | IOC_WRITE, 46, "NEURON_IOCTL_EVENT_GET");
/// `NEURON_IOCTL_NOTIFICATIONS_INIT_V2` (nr 53): create an NQ ring, get its mmap offset.
pub const NOTIFICATIONS_INIT_V2: Ioctl<NotificationsInitV2> =
    Ioctl::pointer(IOC_READ, 53, "NEURON_IOCTL_NOTIFICATIONS_INIT_V2");

/// `NEURON_IOCTL_DEVICE_INFO` (nr 3): arch, connected devices, BAR addresses and sizes.
pub const DEVICE_INFO: Ioctl<DeviceInfo> = Ioctl::pointer(IOC_READ, 3, "NEURON_IOCTL_DEVICE_INFO");
/// `NEURON_IOCTL_MEM_FREE` (nr 22).
pub const MEM_FREE: Ioctl<MemFree> = Ioctl::pointer(IOC_READ, 22, "NEURON_IOCTL_MEM_FREE");
/// `NEURON_IOCTL_MEM_GET_EXTENDED_INFO` (nr 29): a chunk's mmap offset, physical address, size.
pub const MEM_GET_EXTENDED_INFO: Ioctl<MemGetExtendedInfo> =
    Ioctl::pointer(IOC_READ, 29, "NEURON_IOCTL_MEM_GET_EXTENDED_INFO");
/// `NEURON_IOCTL_DMA_QUEUE_INIT` (nr 33): bind a queue's TX/RX rings; copy start needs it first.
pub const DMA_QUEUE_INIT: Ioctl<DmaQueueInit> = Ioctl::pointer(IOC_READ, 33, "NEURON_IOCTL_DMA_QUEUE_INIT");
/// `NEURON_IOCTL_DMA_QUEUE_RELEASE` (nr 34).
pub const DMA_QUEUE_RELEASE: Ioctl<DmaQueueRelease> = Ioctl::pointer(IOC_READ, 34, "NEURON_IOCTL_DMA_QUEUE_RELEASE");
/// `NEURON_IOCTL_DMA_ACK_COMPLETED` (nr 36).
pub const DMA_ACK_COMPLETED: Ioctl<DmaAckCompleted> = Ioctl::pointer(IOC_READ, 36, "NEURON_IOCTL_DMA_ACK_COMPLETED");
/// `NEURON_IOCTL_DMA_QUEUE_GET_STATE` (nr 37): its argument carries two pointers
/// to [`DmaQueueState`] (the wire form is [`DmaQueueGetState`], addresses as u64).
pub const DMA_QUEUE_GET_STATE: Ioctl<DmaQueueGetState> =
    Ioctl::pointer(IOC_READ | IOC_WRITE, 37, "NEURON_IOCTL_DMA_QUEUE_GET_STATE");
/// `NEURON_IOCTL_NOTIFICATIONS_INIT_WITH_REALLOC_V2` (nr 54): as INIT_V2, and
/// `force_alloc_mem` makes the driver drop the old chunk (a size change).
pub const NOTIFICATIONS_INIT_WITH_REALLOC_V2: Ioctl<NotificationsInitWithReallocV2> =
    Ioctl::pointer(IOC_READ, 54, "NEURON_IOCTL_NOTIFICATIONS_INIT_WITH_REALLOC_V2");
/// `NEURON_IOCTL_NOTIFICATIONS_QUEUE_INFO` (nr 58): the driver's view of a ring's head and phase.
pub const NOTIFICATIONS_QUEUE_INFO: Ioctl<NotificationsQueueInfo> =
    Ioctl::pointer(IOC_READ, 58, "NEURON_IOCTL_NOTIFICATIONS_QUEUE_INFO");
/// `NEURON_IOCTL_CRWL_READER_ENTER` (nr 81): take a NeuronCore for a model.
pub const CRWL_READER_ENTER: Ioctl<Crwl> = Ioctl::pointer(IOC_WRITE, 81, "NEURON_IOCTL_CRWL_READER_ENTER");
/// `NEURON_IOCTL_CRWL_READER_EXIT` (nr 82): give it back.
pub const CRWL_READER_EXIT: Ioctl<Crwl> = Ioctl::pointer(IOC_WRITE, 82, "NEURON_IOCTL_CRWL_READER_EXIT");
/// `NEURON_IOCTL_CRWL_WRITER_ENTER` (nr 83): take a core's writer lock to switch
/// model `uuid` in. The driver waits (about 2 s) for other writers and for the
/// old model's readers, then records this process and `uuid` as the core's
/// writer; `EALREADY` when this process already holds that uuid
/// (neuron_crwl.c: `ncrwl_writer_enter`).
pub const CRWL_WRITER_ENTER: Ioctl<Crwl> = Ioctl::pointer(IOC_WRITE, 83, "NEURON_IOCTL_CRWL_WRITER_ENTER");
/// `NEURON_IOCTL_CRWL_WRITER_DOWNGRADE` (nr 84): end the switch; the writer
/// becomes the core's one reader (`reader_count` 1). `EINVAL` without a writer
/// enter; `ENOENT` for another uuid or process (neuron_crwl.c:
/// `ncrwl_writer_downgrade`).
pub const CRWL_WRITER_DOWNGRADE: Ioctl<Crwl> = Ioctl::pointer(IOC_WRITE, 84, "NEURON_IOCTL_CRWL_WRITER_DOWNGRADE");
/// `NEURON_IOCTL_CRWL_NC_RANGE_MARK` (nr 85, the pointer form: the 24-byte
/// [`CrwlNcMap`]): claim `nc_count` consecutive free cores between
/// `start_nc_index` and `end_nc_index` for this process; `EBUSY` (with
/// `max_nc_available`, the longest free run seen) when there are none
/// (neuron_crwl.c: `ncrwl_nc_range_mark`; neuron_cdev.c: `ncdev_crwl_nc_range_mark`).
pub const CRWL_NC_RANGE_MARK: Ioctl<CrwlNcMap> = Ioctl::pointer(IOC_WRITE, 85, "NEURON_IOCTL_CRWL_NC_RANGE_MARK");
/// `NEURON_IOCTL_CRWL_NC_RANGE_MARK_EXT0` (nr 85, declared with the 80-byte
/// [`CrwlNcMapExt`]: a 512-bit bitmap). The driver tells the two forms apart by
/// the size field.
pub const CRWL_NC_RANGE_MARK_EXT0: Ioctl<CrwlNcMapExt> =
    Ioctl::by_value(IOC_READ | IOC_WRITE, 85, "NEURON_IOCTL_CRWL_NC_RANGE_MARK_EXT0");
/// `NEURON_IOCTL_CRWL_NC_RANGE_UNMARK` (nr 86): give back the cores of `bitmap`
/// that this process marked (others are left alone); always 0 once copied in
/// (neuron_crwl.c: `ncrwl_nc_range_unmark`).
pub const CRWL_NC_RANGE_UNMARK: Ioctl<CrwlNcMap> = Ioctl::pointer(IOC_WRITE, 86, "NEURON_IOCTL_CRWL_NC_RANGE_UNMARK");
/// `NEURON_IOCTL_CRWL_NC_RANGE_UNMARK_EXT0` (nr 86, declared with [`CrwlNcMapExt`]).
pub const CRWL_NC_RANGE_UNMARK_EXT0: Ioctl<CrwlNcMapExt> =
    Ioctl::by_value(IOC_WRITE, 86, "NEURON_IOCTL_CRWL_NC_RANGE_UNMARK_EXT0");
/// `NEURON_IOCTL_NC_PID_STATE_DUMP` (nr 117, declared with the 16-byte struct):
/// the query over `ncrwl_range_pids[]` (`ncrwl_nc_range_pid_get`). It does **not**
/// return the holder's pid to the caller: the driver prints the holder's pid and
/// task state to the kernel log and dumps its log, and returns `ENOENT` for
/// `nc_id >= 512`, 0 when no process holds the core, else the log dump's result
/// (neuron_cdev.c: `ncdev_nc_pid_state_dump`). The holder's pid reaches user
/// space through [`DEVICE_GET_ALL_APPS_INFO`] (the processes that have the device
/// open) or the kernel log.
pub const NC_PID_STATE_DUMP: Ioctl<NcPidStateDump> =
    Ioctl::by_value(IOC_READ | IOC_WRITE, 117, "NEURON_IOCTL_NC_PID_STATE_DUMP");
/// `NEURON_IOCTL_DEVICE_GET_ALL_APPS_INFO` (nr 7): the processes attached to the
/// device (at most 16), each with its pid, the cores whose CRWL writer it is
/// (`nc_lock_map`, cores 0..=3 only) and their uuids. The argument is an
/// [`AppsInfoHeader`] followed by `capacity` [`AppInfo`]s; the driver copies
/// back the header and `size` entries (neuron_cdev.c: `ncdev_device_get_all_apps_info`).
pub const DEVICE_GET_ALL_APPS_INFO: Ioctl<AppsInfoHeader> =
    Ioctl::pointer(IOC_READ, 7, "NEURON_IOCTL_DEVICE_GET_ALL_APPS_INFO");
/// `NEURON_IOCTL_ACQUIRE_NEURON_DS` (nr 71): `pid` 0 creates the caller's
/// datastore ([`NEURON_DATASTORE_SIZE`] bytes) and returns its `mmap_offset` and
/// `size`; another process's pid hands a monitor that process's datastore
/// (neuron_cdev.c: `ncdev_acquire_neuron_ds`; neuron_ds.c: `neuron_ds_acquire_pid`).
pub const ACQUIRE_NEURON_DS: Ioctl<NeuronDsInfo> = Ioctl::pointer(IOC_READ, 71, "NEURON_IOCTL_ACQUIRE_NEURON_DS");
/// `NEURON_IOCTL_RELEASE_NEURON_DS` (nr 72): `pid`'s datastore (0: the
/// caller's) is cleared and zeroed when the caller owns it; a monitor's release
/// of another process's changes nothing (there is no reference count, whatever
/// neuron_ds.h's comment says); always 0 once copied in (neuron_ds.c:
/// `neuron_ds_release_pid`, `neuron_ds_release_entry`).
pub const RELEASE_NEURON_DS: Ioctl<NeuronDsInfo> = Ioctl::pointer(IOC_READ, 72, "NEURON_IOCTL_RELEASE_NEURON_DS");
/// `NEURON_IOCTL_COMPATIBLE_VERSION` (nr 93): the runtime versions this driver supports.
pub const COMPATIBLE_VERSION: Ioctl<CompatibleVersion> =
    Ioctl::pointer(IOC_WRITE, 93, "NEURON_IOCTL_COMPATIBLE_VERSION");
/// `NEURON_IOCTL_DEVICE_BASIC_INFO` (nr 100).
pub const DEVICE_BASIC_INFO: Ioctl<DeviceBasicInfo> = Ioctl::pointer(IOC_WRITE, 100, "NEURON_IOCTL_DEVICE_BASIC_INFO");
/// `NEURON_IOCTL_MEM_ALLOC_V2MT` (nr 102, declared with the struct: size 48).
/// Its `mem_handle` is a pointer the driver writes the handle through.
pub const MEM_ALLOC_V2MT: Ioctl<MemAllocV2Mt> = Ioctl::by_value(IOC_READ, 102, "NEURON_IOCTL_MEM_ALLOC_V2MT");
/// `NEURON_IOCTL_NC_RESET` (nr 103): reset the cores of `nc_map`, get a request id.
pub const NC_RESET: Ioctl<NcReset> = Ioctl::pointer(IOC_READ, 103, "NEURON_IOCTL_NC_RESET");
/// `NEURON_IOCTL_NC_RESET_READY` (nr 104): wait for a reset request, get its result.
pub const NC_RESET_READY: Ioctl<NcResetReady> = Ioctl::pointer(IOC_READ, 104, "NEURON_IOCTL_NC_RESET_READY");
/// `NEURON_IOCTL_DRIVER_INFO_GET` (nr 110, declared with the struct: size 24).
pub const DRIVER_INFO_GET: Ioctl<DriverInfo> = Ioctl::by_value(IOC_READ, 110, "NEURON_IOCTL_DRIVER_INFO_GET");
/// `NEURON_IOCTL_RESOURCE_MMAP_INFO` (nr 112, declared with the struct: size 32).
pub const RESOURCE_MMAP_INFO: Ioctl<ResourceMmapInfo> =
    Ioctl::by_value(IOC_READ | IOC_WRITE, 112, "NEURON_IOCTL_RESOURCE_MMAP_INFO");
/// `NEURON_IOCTL_GET_LOGICAL_TO_PHYSICAL_NC_MAP` (nr 120, declared with the
/// struct: size 16), a misc request: the host-wide logical cores' places,
/// written through [`GetNcMap::map`] (neuron_cdev.c
/// `ncdev_get_logical_to_physical_nc_map`; `ENOTSUPP` where the arch has no
/// map, v2).
pub const GET_LOGICAL_TO_PHYSICAL_NC_MAP: Ioctl<GetNcMap> =
    Ioctl::by_value(IOC_READ | IOC_WRITE, 120, "NEURON_IOCTL_GET_LOGICAL_TO_PHYSICAL_NC_MAP");

/// Every request this crate names, for a dispatcher (the simulator's driver
/// model) or a tracer: `(nr, code, name)`.
pub const ALL_REQUESTS: [(u32, u32, &str); 40] = {
    macro_rules! r { ($($q:expr),* $(,)?) => { [$(($q.nr(), $q.code(), $q.name())),*] } }
    r!(
        DEVICE_INFO,
        BAR_READ,
        BAR_WRITE,
        MEM_FREE,
        MEM_GET_EXTENDED_INFO,
        DMA_QUEUE_INIT,
        DMA_QUEUE_RELEASE,
        DMA_QUEUE_COPY_START,
        DMA_ACK_COMPLETED,
        DMA_QUEUE_GET_STATE,
        SEMAPHORE_INCREMENT,
        SEMAPHORE_DECREMENT,
        SEMAPHORE_READ,
        SEMAPHORE_WRITE,
        EVENT_SET,
        EVENT_GET,
        NOTIFICATIONS_INIT_V2,
        NOTIFICATIONS_INIT_WITH_REALLOC_V2,
        NOTIFICATIONS_QUEUE_INFO,
        CRWL_READER_ENTER,
        CRWL_READER_EXIT,
        COMPATIBLE_VERSION,
        DEVICE_BASIC_INFO,
        MEM_ALLOC_V2MT,
        NC_RESET,
        NC_RESET_READY,
        DRIVER_INFO_GET,
        RESOURCE_MMAP_INFO,
        CRWL_WRITER_ENTER,
        CRWL_WRITER_DOWNGRADE,
        CRWL_NC_RANGE_MARK,
        CRWL_NC_RANGE_MARK_EXT0,
        CRWL_NC_RANGE_UNMARK,
        CRWL_NC_RANGE_UNMARK_EXT0,
        NC_PID_STATE_DUMP,
        DEVICE_GET_ALL_APPS_INFO,
        ACQUIRE_NEURON_DS,
        RELEASE_NEURON_DS,
        GET_LOGICAL_TO_PHYSICAL_NC_MAP,
        crate::sim::SIM_HINTS,
    )
};

/// The name of request `code`, if it is one of [`ALL_REQUESTS`].
pub fn request_name(code: u32) -> Option<&'static str> {
    ALL_REQUESTS.iter().find(|r| r.1 == code).map(|r| r.2)
}

/// `NQ_TYPE` (share/neuron_driver_shared.h).
pub mod nq_type {
    /// Trace.
    pub const TRACE: u32 = 0;
    /// Notifications (the engines' START/END records).
    pub const NOTIFY: u32 = 1;
    /// Events.
    pub const EVENT: u32 = 2;
    /// Errors.
    pub const ERROR: u32 = 3;
    /// DMA trace (another NOTIFIC block, slot 0).
    pub const TRACE_DMA: u32 = 4;
    /// Throttle.
    pub const THROTTLE: u32 = 5;
}

/// `NQ_DEVICE_TYPE`: a ring of a NeuronCore or of a top-SP.
pub mod nq_dev_type {
    /// A NeuronCore.
    pub const NEURON_CORE: u32 = 0;
    /// A top-level sequence processor.
    pub const TOPSP: u32 = 1;
}

/// `mem_alloc_category_t` (share/neuron_driver_shared.h): the `mem_type` of
/// `MEM_ALLOC_V2MT`, for the driver's usage counters. The driver treats an
/// out-of-range value as unknown.
pub mod mem_type {
    /// `NEURON_MEMALLOC_TYPE_TENSORS_HOST`: a runtime's tensors in host memory.
    pub const TENSORS_HOST: u32 = 2;
    /// `NEURON_MEMALLOC_TYPE_NOTIFICATION_HOST`.
    pub const NOTIFICATION_HOST: u32 = 6;
    /// `NEURON_MEMALLOC_TYPE_TENSORS_DEVICE`: a runtime's tensors in device memory.
    pub const TENSORS_DEVICE: u32 = 9;
    /// `NEURON_MEMALLOC_TYPE_DMA_RINGS_HOST`: a DMA queue's descriptor ring in host memory.
    pub const DMA_RINGS_HOST: u32 = 17;
    /// `NEURON_MEMALLOC_TYPE_DMA_RINGS_DEVICE`.
    pub const DMA_RINGS_DEVICE: u32 = 18;
}

/// `NEURON_NC_MAP_DEVICE`: the `nc_map` of `NC_RESET` that resets the whole device.
pub const NC_MAP_DEVICE: u32 = 0xFFFF_FFFF;

/// `NEURON_DATASTORE_SIZE` (neuron_ds.h): bytes of one process's datastore,
/// the `size` [`ACQUIRE_NEURON_DS`] returns.
pub const NEURON_DATASTORE_SIZE: u32 = 256 * 1024;
/// `MAX_NC_PER_DEVICE` (neuron_device.h): the CRWL state is per core of these.
pub const MAX_NC_PER_DEVICE: u32 = 8;
/// `MAX_NEURON_DEVICE_COUNT` (neuron_device.h): range marks index
/// `MAX_NEURON_DEVICE_COUNT * MAX_NC_PER_DEVICE` cores over every device.
pub const MAX_NEURON_DEVICE_COUNT: u32 = 64;
/// `NEURON_MAX_PROCESS_PER_DEVICE` (share/neuron_driver_shared.h): the
/// attached-process table, and so [`DEVICE_GET_ALL_APPS_INFO`]'s entries.
pub const MAX_PROCESS_PER_DEVICE: usize = 16;
/// `APP_INFO_MAX_MODELS_PER_DEVICE`: the uuids an [`AppInfo`] holds (cores 0..=3).
pub const APP_INFO_MAX_MODELS_PER_DEVICE: usize = 4;
/// `APP_INFO_PID_NC_LOCK_INFO`: ask [`DEVICE_GET_ALL_APPS_INFO`] for `nc_lock_map` and uuids.
pub const APP_INFO_PID_NC_LOCK_INFO: u16 = 1;
/// `APP_INFO_PID_MEM_USAGE`: ask for each process's memory use.
pub const APP_INFO_PID_MEM_USAGE: u16 = 1 << 1;

/// `NEURON_IOCTL_MAX_CONNECTED_DEVICES`.
pub const MAX_CONNECTED_DEVICES: usize = 8;
/// `NEURON_MAX_BARS`.
pub const MAX_BARS: usize = 2;

// The driver's struct sizes (`shared/anchors/driver-abi.md`): what it copies
// through each request's pointer.
const _: () = assert!(core::mem::size_of::<SemaphoreArg>() == 12);
const _: () = assert!(core::mem::size_of::<NotificationsInitV2>() == 48);
// `BarRw` carries two pointers: 32 bytes where the driver runs (64-bit); a
// 32-bit build (a controller that links only the constants) has no BAR ioctl.
#[cfg(target_pointer_width = "64")]
const _: () = assert!(core::mem::size_of::<BarRw>() == 32);
const _: () = assert!(core::mem::size_of::<DmaQueueCopyStart>() == 16);
const _: () = assert!(core::mem::size_of::<DeviceInfo>() == 80);
const _: () = assert!(core::mem::size_of::<DeviceBasicInfo>() == 8);
const _: () = assert!(core::mem::size_of::<DriverInfo>() == 24);
const _: () = assert!(core::mem::size_of::<CompatibleVersion>() == 8);
const _: () = assert!(core::mem::size_of::<Crwl>() == 36);
const _: () = assert!(core::mem::size_of::<NcReset>() == 8);
const _: () = assert!(core::mem::size_of::<NcResetReady>() == 8);
const _: () = assert!(core::mem::size_of::<MemAllocV2Mt>() == 48);
const _: () = assert!(core::mem::size_of::<MemGetExtendedInfo>() == 48);
const _: () = assert!(core::mem::size_of::<MemFree>() == 8);
const _: () = assert!(core::mem::size_of::<DmaQueueInit>() == 48);
const _: () = assert!(core::mem::size_of::<DmaQueueRelease>() == 8);
const _: () = assert!(core::mem::size_of::<DmaAckCompleted>() == 12);
const _: () = assert!(core::mem::size_of::<DmaQueueGetState>() == 24);
const _: () = assert!(core::mem::size_of::<DmaQueueState>() == 48);
const _: () = assert!(core::mem::size_of::<NotificationsInitWithReallocV2>() == 56);
const _: () = assert!(core::mem::size_of::<NotificationsQueueInfo>() == 12);
const _: () = assert!(core::mem::size_of::<ResourceMmapInfo>() == 32);
const _: () = assert!(core::mem::size_of::<BarRwWire>() == 32);
const _: () = assert!(core::mem::size_of::<CrwlNcMap>() == 24);
const _: () = assert!(core::mem::size_of::<CrwlNcMapExt>() == 80);
const _: () = assert!(core::mem::size_of::<NcPidStateDump>() == 16);
const _: () = assert!(core::mem::size_of::<NeuronDsInfo>() == 24);
const _: () = assert!(core::mem::size_of::<AppsInfoHeader>() == 16);
const _: () = assert!(core::mem::size_of::<AppInfo>() == 152);

/// `struct neuron_ioctl_semaphore` (and `neuron_ioctl_event`, the same layout).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct SemaphoreArg {
    /// NeuronCore index. The semaphore ioctls refuse one at or above the
    /// device's core count with `E2BIG`; the event ioctls do not check it
    /// (`neuron_cdev.c`: only `ncdev_semaphore_ioctl` calls `ncdev_ncid_valid`;
    /// `driver-abi.md` point 9).
    pub nc_id: u32,
    /// Semaphore (or event) index (below 256 on v2+: else `EINVAL`).
    pub semaphore_index: u32,
    /// Value to add, subtract or set; out for reads.
    pub value: u32,
}

/// `struct neuron_ioctl_notifications_init_v2`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct NotificationsInitV2 {
    /// Index of the NC or TopSP.
    pub nq_dev_id: u32,
    /// `NQ_DEVICE_TYPE`: NEURON_CORE 0, TOPSP 1.
    pub nq_dev_type: u32,
    /// `NQ_TYPE`: TRACE 0, NOTIFY 1, EVENT 2, ERROR 3, TRACE_DMA 4, THROTTLE 5.
    pub nq_type: u32,
    /// Engine index (the hardware slot programmed).
    pub engine_index: u32,
    /// Ring size in bytes (a power of two).
    pub size: u32,
    /// 1 for a ring in host memory.
    pub on_host_memory: u32,
    /// DRAM channel for a device ring.
    pub dram_channel: u32,
    /// DRAM region for a device ring.
    pub dram_region: u32,
    /// Out: the offset to pass to `mmap` (host rings), or `u64::MAX`.
    pub mmap_offset: u64,
    /// Out: the driver's memory handle.
    pub mem_handle: u64,
}

/// `struct neuron_ioctl_bar_rw`: `count` registers at the absolute addresses in
/// `address[]` (BAR0), values in `data[]`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct BarRw {
    /// BAR index.
    pub bar: u32,
    /// Array of absolute register addresses (`bar_address[0]` + offset).
    pub address: *const u64,
    /// Array of values (in for writes, out for reads).
    pub data: *mut u32,
    /// Number of registers.
    pub count: u32,
}

/// `struct neuron_ioctl_dma_queue_copy_start`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct DmaQueueCopyStart {
    /// DMA engine index.
    pub eng_id: u32,
    /// Queue index in the engine.
    pub qid: u32,
    /// TX (M2S) descriptors to release.
    pub tx_desc_count: u32,
    /// RX (S2M) descriptors to release.
    pub rx_desc_count: u32,
}

/// The wire form of [`BarRw`]: the same 32 bytes with the two pointers as the
/// caller's addresses (what a driver model reads out of another process).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct BarRwWire {
    /// BAR index.
    pub bar: u32,
    /// Padding (the pointer's alignment).
    pub _pad0: u32,
    /// Address of the `u64` register-address array in the caller.
    pub address: u64,
    /// Address of the `u32` data array in the caller.
    pub data: u64,
    /// Number of registers.
    pub count: u32,
    /// Padding.
    pub _pad1: u32,
}

/// `struct neuron_ioctl_device_info`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct DeviceInfo {
    /// Architecture (2 v2/trn1, 3 v3/trn2, 4).
    pub architecture: u32,
    /// Board revision.
    pub revision: u32,
    /// Devices connected to this one.
    pub connected_device_count: u32,
    /// Their ids.
    pub connected_devices: [u32; MAX_CONNECTED_DEVICES],
    /// Padding (the u64 array's alignment).
    pub _pad: u32,
    /// BAR physical addresses: the driver subtracts `bar_address[bar]` from
    /// every BAR_READ/BAR_WRITE address.
    pub bar_address: [u64; MAX_BARS],
    /// BAR sizes.
    pub bar_size: [u64; MAX_BARS],
}

/// `struct neuron_ioctl_device_basic_info`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct DeviceBasicInfo {
    /// Architecture.
    pub architecture: u32,
    /// Board revision.
    pub revision: u32,
}

/// `struct neuron_ioctl_device_driver_info` (`DRIVER_INFO_GET`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct DriverInfo {
    /// Architecture.
    pub architecture: u32,
    /// Board revision.
    pub revision: u32,
    /// Version of this structure (0).
    pub version: u32,
    /// Size of this structure (24).
    pub size: u32,
    /// Supported features.
    pub feature_flags1: u64,
}

/// `struct neuron_ioctl_compatible_version`: the runtime versions the driver serves.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct CompatibleVersion {
    /// Highest supported runtime version.
    pub max: u32,
    /// Lowest supported runtime version.
    pub min: u32,
}

/// `struct neuron_ioctl_crwl`: a core and the model that takes it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct Crwl {
    /// NeuronCore index.
    pub nc_id: u32,
    /// Model identifier (`struct neuron_uuid`, 32 bytes).
    pub uuid: [u8; 32],
}

/// `struct neuron_ioctl_crwl_nc_map` (`CRWL_NC_RANGE_MARK` / `_UNMARK`, the
/// pointer form). Core indices are the device's (the driver adds
/// `nc_per_device * device_index` for its global table and shifts the bitmap back).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct CrwlNcMap {
    /// Consecutive cores wanted.
    pub nc_count: u32,
    /// First core index of the search.
    pub start_nc_index: u32,
    /// Last core index of the search (inclusive).
    pub end_nc_index: u32,
    /// Out: the longest free run seen when the mark fails.
    pub max_nc_available: u32,
    /// In/out: the cores marked (mark: cleared first, then the cores taken;
    /// unmark: the cores to give back).
    pub bitmap: u64,
}

/// `struct neuron_ioctl_crwl_nc_map_ext`: as [`CrwlNcMap`] with a 512-bit bitmap.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct CrwlNcMapExt {
    /// Consecutive cores wanted.
    pub nc_count: u32,
    /// First core index of the search.
    pub start_nc_index: u32,
    /// Last core index of the search (inclusive).
    pub end_nc_index: u32,
    /// Out: the longest free run seen when the mark fails.
    pub max_nc_available: u32,
    /// In/out: the cores.
    pub bitmap: [u64; 8],
}

/// `struct neuron_ioctl_nc_pid_state_dump` (`NC_PID_STATE_DUMP`): every field is in.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct NcPidStateDump {
    /// Size of the structure (16), for versioning.
    pub size: u32,
    /// The core whose holder is dumped (global index: device * cores + core).
    pub nc_id: u32,
    /// 1: dump only the holder's log entries.
    pub filter_log_owner: u32,
    /// Most log entries to dump.
    pub log_dump_limit: u32,
}

/// `struct neuron_ioctl_neuron_ds_info` (`ACQUIRE_NEURON_DS` / `RELEASE_NEURON_DS`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct NeuronDsInfo {
    /// The process whose datastore; 0: the caller's own (acquire creates it).
    pub pid: i32,
    /// Padding (the u64's alignment).
    pub _pad0: u32,
    /// Out: the offset to `mmap` the datastore at.
    pub mmap_offset: u64,
    /// Out: its size ([`NEURON_DATASTORE_SIZE`]).
    pub size: u32,
    /// Padding.
    pub _pad1: u32,
}

/// `struct neuron_ioctl_get_apps_info` without its flexible array: the caller
/// passes this header followed by `capacity` [`AppInfo`] entries.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct AppsInfoHeader {
    /// What to fill in (`APP_INFO_PID_NC_LOCK_INFO`, `APP_INFO_PID_MEM_USAGE`).
    pub apps_info_flags: u16,
    /// Padding.
    pub _pad0: u16,
    /// In: entries the caller's array holds.
    pub capacity: u32,
    /// Out: entries the driver wrote.
    pub size: u32,
    /// Padding (the entries' alignment).
    pub _pad1: u32,
}

/// `struct neuron_app_info`: one process attached to the device.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct AppInfo {
    /// The process.
    pub pid: i32,
    /// Cores 0..=3 whose CRWL writer it is (with a writer lock or readers).
    pub nc_lock_map: u8,
    /// The uuid of each core of `nc_lock_map`.
    pub uuid_data: [[u8; 32]; APP_INFO_MAX_MODELS_PER_DEVICE],
    /// Padding (the `size_t`'s alignment).
    pub _pad: [u8; 3],
    /// Host memory it uses (with `APP_INFO_PID_MEM_USAGE`).
    pub host_mem_size: u64,
    /// Device memory it uses (with `APP_INFO_PID_MEM_USAGE`).
    pub device_mem_size: u64,
}

/// `struct neuron_ioctl_device_reset` (`NC_RESET`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct NcReset {
    /// NeuronCore bitmap (`NEURON_NC_MAP_DEVICE` for the whole device).
    pub nc_map: u32,
    /// Out: the reset request's id.
    pub request_id: u32,
}

/// `struct neuron_ioctl_device_ready` (`NC_RESET_READY`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct NcResetReady {
    /// The reset request's id.
    pub request_id: u32,
    /// Out: the reset's result (0 is success).
    pub result: i32,
}

/// `struct neuron_ioctl_mem_alloc_v2_mem_type` (`MEM_ALLOC_V2MT`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct MemAllocV2Mt {
    /// Bytes to allocate.
    pub size: u64,
    /// Alignment.
    pub align: u64,
    /// 1 for host memory.
    pub host_memory: u32,
    /// DRAM channel of a device allocation.
    pub dram_channel: u32,
    /// DRAM region of a device allocation.
    pub dram_region: u32,
    /// NeuronCore of a device allocation.
    pub nc_id: u32,
    /// Type of allocation.
    pub mem_type: u32,
    /// Padding (the pointer's alignment).
    pub _pad: u32,
    /// Address of the caller's `u64` the driver writes the handle into.
    pub mem_handle: u64,
}

/// `struct neuron_ioctl_mem_get_extended_info` (version 1).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct MemGetExtendedInfo {
    /// The handle.
    pub mem_handle: u64,
    /// In: version of the structure (1).
    pub version: u32,
    /// Out: 1 for host memory.
    pub host_memory: u32,
    /// Out: the offset to `mmap` the chunk at.
    pub mmap_offset: u64,
    /// Out: physical address.
    pub pa: u64,
    /// Out: the process that allocated it.
    pub pid: u64,
    /// Out: allocation size.
    pub size: u64,
}

/// `struct neuron_ioctl_mem_free`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct MemFree {
    /// The handle to free.
    pub mem_handle: u64,
}

/// `struct neuron_ioctl_dma_queue_init`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct DmaQueueInit {
    /// DMA engine index.
    pub eng_id: u32,
    /// Queue index in the engine.
    pub qid: u32,
    /// TX (M2S) ring descriptors.
    pub tx_desc_count: u32,
    /// RX (S2M) ring descriptors.
    pub rx_desc_count: u32,
    /// Memory handle of the TX ring.
    pub tx_handle: u64,
    /// Memory handle of the RX ring.
    pub rx_handle: u64,
    /// Memory handle of the RX completion ring.
    pub rxc_handle: u64,
    /// AXI port.
    pub axi_port: u32,
    /// Padding.
    pub _pad: u32,
}

/// `struct neuron_ioctl_dma_queue_release`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct DmaQueueRelease {
    /// DMA engine index.
    pub eng_id: u32,
    /// Queue index.
    pub qid: u32,
}

/// `struct neuron_ioctl_dma_ack_completed`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct DmaAckCompleted {
    /// DMA engine index.
    pub eng_id: u32,
    /// Queue index.
    pub qid: u32,
    /// Descriptors to acknowledge.
    pub count: u32,
}

/// The wire form of `struct neuron_ioctl_dma_queue_get_state`: the two out
/// pointers as the caller's addresses of [`DmaQueueState`]s.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct DmaQueueGetState {
    /// DMA engine index.
    pub eng_id: u32,
    /// Queue index.
    pub qid: u32,
    /// Address of the TX [`DmaQueueState`].
    pub tx: u64,
    /// Address of the RX [`DmaQueueState`].
    pub rx: u64,
}

/// `struct neuron_dma_queue_state` (share/neuron_driver_shared.h).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct DmaQueueState {
    /// Hardware status.
    pub hw_status: u32,
    /// Software status.
    pub sw_status: u32,
    /// Ring base address.
    pub base_addr: u64,
    /// Ring size.
    pub length: u32,
    /// Hardware (head) pointer.
    pub head_pointer: u32,
    /// Software (tail) pointer.
    pub tail_pointer: u32,
    /// Padding.
    pub _pad0: u32,
    /// Completion ring base.
    pub completion_base_addr: u64,
    /// Completion head.
    pub completion_head: u32,
    /// Padding.
    pub _pad1: u32,
}

/// `struct neuron_ioctl_notifications_init_with_realloc_v2`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct NotificationsInitWithReallocV2 {
    /// Index of the NC or TopSP.
    pub nq_dev_id: u32,
    /// `NQ_DEVICE_TYPE`.
    pub nq_dev_type: u32,
    /// `NQ_TYPE`.
    pub nq_type: u32,
    /// Engine index (the hardware slot programmed).
    pub engine_index: u32,
    /// Ring size in bytes.
    pub size: u32,
    /// 1 for a ring in host memory.
    pub on_host_memory: u32,
    /// DRAM channel.
    pub dram_channel: u32,
    /// DRAM region.
    pub dram_region: u32,
    /// 1: free the ring's old chunk and allocate a new one (a size change).
    pub force_alloc_mem: u32,
    /// Padding.
    pub _pad: u32,
    /// Out: the mmap offset.
    pub mmap_offset: u64,
    /// Out: the memory handle.
    pub mem_handle: u64,
}

/// `struct neuron_ioctl_notifications_queue_info`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct NotificationsQueueInfo {
    /// NC or TopSP index.
    pub nq_dev_id: u8,
    /// `NQ_DEVICE_TYPE`.
    pub nq_dev_type: u8,
    /// `NQ_TYPE`.
    pub nq_type: u8,
    /// Engine index.
    pub engine_index: u8,
    /// Out: head.
    pub head: u32,
    /// Out: phase bit.
    pub phase_bit: u32,
}

/// `struct neuron_ioctl_get_logical_to_physical_nc_map` (neuron_ioctl.h).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct GetNcMap {
    /// Address of a [`NcMapHeader`] followed by `max_map_entries` [`NcMapEntry`]s.
    pub map: u64,
    /// Entries the buffer holds (at most [`NC_MAP_MAX_ENTRIES`], else `EINVAL`).
    pub max_map_entries: u32,
    /// `enum neuron_ioctl_nc_mapping_type`: [`NC_MAPPING_TYPE_V0`] only, else `EINVAL`.
    pub mapping_version: u32,
}

/// `struct neuron_ioctl_nc_map`'s fixed part (share/neuron_driver_shared.h).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct NcMapHeader {
    /// Out: entries written, `min(max_map_entries, the arch's logical cores)`.
    pub num_entries: u32,
}

/// `struct neuron_ioctl_nc_map_entry`: where one logical core is.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct NcMapEntry {
    /// The device (the `N` of `/dev/neuronN`).
    pub device_id: u32,
    /// The device's own core.
    pub device_nc_idx: u32,
}

/// `NEURON_NC_MAP_MAX_ENTRIES` (share/neuron_driver_shared.h).
pub const NC_MAP_MAX_ENTRIES: u32 = 128;
/// `NEURON_IOCTL_NC_MAPPING_TYPE_V0`, the "seng swap" mapping.
pub const NC_MAPPING_TYPE_V0: u32 = 0;
/// `ENOTSUPP` (kernel-internal 524): the arch has no map.
pub const ENOTSUPP: i32 = 524;

/// `struct neuron_ioctl_resource_mmap_info`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct ResourceMmapInfo {
    /// Block type.
    pub block: u32,
    /// Block id.
    pub block_id: u32,
    /// Resource.
    pub resource: u32,
    /// Padding.
    pub _pad: u32,
    /// Out: mmap offset.
    pub offset: u64,
    /// Out: mmap size.
    pub size: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::{offset_of, size_of};

    #[test]
    fn request_codes_are_the_drivers() {
        assert_eq!(SEMAPHORE_INCREMENT.code(), 0x8008_4E29);
        assert_eq!(SEMAPHORE_DECREMENT.code(), 0x8008_4E2A);
        assert_eq!(SEMAPHORE_READ.code(), 0xC008_4E2B);
        assert_eq!(SEMAPHORE_WRITE.code(), 0x8008_4E2C);
        assert_eq!(EVENT_SET.code(), 0x8008_4E2D);
        assert_eq!(EVENT_GET.code(), 0xC008_4E2E);
        assert_eq!(NOTIFICATIONS_INIT_V2.code(), 0x8008_4E35);
        assert_eq!(BAR_READ.code(), 0x8008_4E0B);
        assert_eq!(BAR_WRITE.code(), 0x4008_4E0C);
        assert_eq!(DMA_QUEUE_COPY_START.code(), 0x8008_4E23);
    }

    /// The size field of `req` is the size of the pointer to its argument (the
    /// header's `struct X *`), and the argument is the driver's struct size.
    fn sized<T>(req: Ioctl<T>, driver_struct_bytes: usize) -> &'static str {
        assert_eq!(ioc_size(req.code()) as usize, size_of::<*mut T>(), "{req:?}");
        assert_eq!(ioc_size(req.code()), ARG_PTR_SIZE, "{req:?}");
        assert_eq!(size_of::<T>(), driver_struct_bytes, "{req:?}");
        assert!(req.name().starts_with("NEURON_IOCTL_"), "{req:?}");
        req.name()
    }

    #[test]
    fn every_request_encodes_its_argument_and_the_driver_copies_its_struct() {
        let names = [
            sized(SEMAPHORE_INCREMENT, 12),
            sized(SEMAPHORE_DECREMENT, 12),
            sized(SEMAPHORE_READ, 12),
            sized(SEMAPHORE_WRITE, 12),
            sized(EVENT_SET, 12),
            sized(EVENT_GET, 12),
            sized(NOTIFICATIONS_INIT_V2, 48),
            sized(BAR_READ, 32),
            sized(BAR_WRITE, 32),
            sized(DMA_QUEUE_COPY_START, 16),
        ];
        // Each name is its own request's (messages name the call).
        let mut sorted = names.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len());
        assert_eq!(SEMAPHORE_READ.name(), "NEURON_IOCTL_SEMAPHORE_READ");
        assert_eq!(ioc_size(0xC020_4E70), 32, "RESOURCE_MMAP_INFO encodes its struct, not a pointer");
    }

    #[test]
    fn struct_layouts_are_the_drivers() {
        assert_eq!(size_of::<SemaphoreArg>(), 12);
        assert_eq!(offset_of!(SemaphoreArg, semaphore_index), 4);
        assert_eq!(offset_of!(SemaphoreArg, value), 8);
        assert_eq!(size_of::<NotificationsInitV2>(), 48);
        assert_eq!(offset_of!(NotificationsInitV2, size), 16);
        assert_eq!(offset_of!(NotificationsInitV2, dram_region), 28);
        assert_eq!(offset_of!(NotificationsInitV2, mmap_offset), 32);
        assert_eq!(offset_of!(NotificationsInitV2, mem_handle), 40);
        assert_eq!(size_of::<BarRw>(), 32);
        assert_eq!(offset_of!(BarRw, address), 8);
        assert_eq!(offset_of!(BarRw, data), 16);
        assert_eq!(offset_of!(BarRw, count), 24);
        assert_eq!(size_of::<DmaQueueCopyStart>(), 16);
    }
    #[test]
    fn bring_up_request_codes_are_the_drivers() {
        // shared/anchors/driver-abi.md, "What a runtime calls to bring a core up".
        let expect: [(u32, u32); 18] = [
            (DEVICE_INFO.code(), 0x8008_4E03),
            (DEVICE_BASIC_INFO.code(), 0x4008_4E64),
            (DRIVER_INFO_GET.code(), 0x8018_4E6E),
            (COMPATIBLE_VERSION.code(), 0x4008_4E5D),
            (CRWL_READER_ENTER.code(), 0x4008_4E51),
            (NC_RESET.code(), 0x8008_4E67),
            (NC_RESET_READY.code(), 0x8008_4E68),
            (MEM_ALLOC_V2MT.code(), 0x8030_4E66),
            (MEM_GET_EXTENDED_INFO.code(), 0x8008_4E1D),
            (MEM_FREE.code(), 0x8008_4E16),
            (DMA_QUEUE_INIT.code(), 0x8008_4E21),
            (DMA_QUEUE_RELEASE.code(), 0x8008_4E22),
            (DMA_ACK_COMPLETED.code(), 0x8008_4E24),
            (DMA_QUEUE_GET_STATE.code(), 0xC008_4E25),
            (NOTIFICATIONS_INIT_WITH_REALLOC_V2.code(), 0x8008_4E36),
            (NOTIFICATIONS_QUEUE_INFO.code(), 0x8008_4E3A),
            (RESOURCE_MMAP_INFO.code(), 0xC020_4E70),
            (CRWL_READER_EXIT.code(), 0x4008_4E52),
        ];
        for (got, want) in expect {
            assert_eq!(got, want, "{:?}", request_name(got));
        }
        let mut codes: [u32; ALL_REQUESTS.len()] = ALL_REQUESTS.map(|r| r.1);
        codes.sort_unstable();
        assert!(codes.windows(2).all(|w| w[0] != w[1]), "two requests share a code");
        assert_eq!(request_name(0x8008_4E23), Some("NEURON_IOCTL_DMA_QUEUE_COPY_START"));
        assert_eq!(request_name(0x541B), None);
    }

    /// The CRWL family, the datastore, the holder query and the apps list:
    /// codes, directions, numbers and struct sizes as gcc computes them from the
    /// driver's `neuron_ioctl.h` at fca19f7 on x86-64.
    #[test]
    fn ownership_datastore_and_query_requests_are_the_drivers() {
        // (request code, driver code, direction, nr, size field)
        let expect: [(u32, u32, u32, u32, u32); 15] = [
            (CRWL_READER_ENTER.code(), 0x4008_4E51, IOC_WRITE, 81, 8),
            (CRWL_READER_EXIT.code(), 0x4008_4E52, IOC_WRITE, 82, 8),
            (CRWL_WRITER_ENTER.code(), 0x4008_4E53, IOC_WRITE, 83, 8),
            (CRWL_WRITER_DOWNGRADE.code(), 0x4008_4E54, IOC_WRITE, 84, 8),
            (CRWL_NC_RANGE_MARK.code(), 0x4008_4E55, IOC_WRITE, 85, 8),
            (CRWL_NC_RANGE_MARK_EXT0.code(), 0xC050_4E55, IOC_READ | IOC_WRITE, 85, 80),
            (CRWL_NC_RANGE_UNMARK.code(), 0x4008_4E56, IOC_WRITE, 86, 8),
            (CRWL_NC_RANGE_UNMARK_EXT0.code(), 0x4050_4E56, IOC_WRITE, 86, 80),
            (NC_PID_STATE_DUMP.code(), 0xC010_4E75, IOC_READ | IOC_WRITE, 117, 16),
            (DEVICE_GET_ALL_APPS_INFO.code(), 0x8008_4E07, IOC_READ, 7, 8),
            (ACQUIRE_NEURON_DS.code(), 0x8008_4E47, IOC_READ, 71, 8),
            (RELEASE_NEURON_DS.code(), 0x8008_4E48, IOC_READ, 72, 8),
            (NOTIFICATIONS_QUEUE_INFO.code(), 0x8008_4E3A, IOC_READ, 58, 8),
            (DMA_ACK_COMPLETED.code(), 0x8008_4E24, IOC_READ, 36, 8),
            (GET_LOGICAL_TO_PHYSICAL_NC_MAP.code(), 0xC010_4E78, IOC_READ | IOC_WRITE, 120, 16),
        ];
        for (got, want, dir, nr, size) in expect {
            assert_eq!(got, want, "{:?}", request_name(got));
            assert_eq!(got >> 30, dir, "{:?}", request_name(got));
            assert_eq!(got & 0xFF, nr, "{:?}", request_name(got));
            assert_eq!((got >> 8) & 0xFF, NEURON_IOCTL_BASE);
            assert_eq!(ioc_size(got), size, "{:?}", request_name(got));
            assert!(request_name(got).is_some_and(|n| n.starts_with("NEURON_IOCTL_")));
        }
        assert_eq!(CRWL_NC_RANGE_MARK.nr(), CRWL_NC_RANGE_MARK_EXT0.nr());
        let names = [
            sized(CRWL_WRITER_ENTER, 36),
            sized(CRWL_WRITER_DOWNGRADE, 36),
            sized(CRWL_NC_RANGE_MARK, 24),
            sized(CRWL_NC_RANGE_UNMARK, 24),
            sized(ACQUIRE_NEURON_DS, 24),
            sized(RELEASE_NEURON_DS, 24),
            sized(DEVICE_GET_ALL_APPS_INFO, 16),
        ];
        assert_eq!(names[2], "NEURON_IOCTL_CRWL_NC_RANGE_MARK");
        assert_eq!(size_of::<CrwlNcMapExt>(), 80);
        assert_eq!(size_of::<NcPidStateDump>(), 16);
        assert_eq!(size_of::<AppInfo>(), 152);
        assert_eq!((size_of::<GetNcMap>(), size_of::<NcMapHeader>(), size_of::<NcMapEntry>()), (16, 4, 8));
        assert_eq!(NEURON_DATASTORE_SIZE, 0x4_0000);
        assert_eq!(MAX_NEURON_DEVICE_COUNT * MAX_NC_PER_DEVICE, 512);
    }

    #[test]
    fn ownership_and_datastore_layouts_are_the_drivers() {
        assert_eq!(offset_of!(CrwlNcMap, start_nc_index), 4);
        assert_eq!(offset_of!(CrwlNcMap, end_nc_index), 8);
        assert_eq!(offset_of!(CrwlNcMap, max_nc_available), 12);
        assert_eq!(offset_of!(CrwlNcMap, bitmap), 16);
        assert_eq!(offset_of!(CrwlNcMapExt, bitmap), 16);
        assert_eq!(offset_of!(NcPidStateDump, nc_id), 4);
        assert_eq!(offset_of!(NcPidStateDump, log_dump_limit), 12);
        assert_eq!(offset_of!(NeuronDsInfo, mmap_offset), 8);
        assert_eq!(offset_of!(NeuronDsInfo, size), 16);
        assert_eq!(offset_of!(AppsInfoHeader, capacity), 4);
        assert_eq!(offset_of!(AppsInfoHeader, size), 8);
        assert_eq!(offset_of!(AppInfo, nc_lock_map), 4);
        assert_eq!(offset_of!(AppInfo, uuid_data), 5);
        assert_eq!(offset_of!(AppInfo, host_mem_size), 136);
        assert_eq!(offset_of!(AppInfo, device_mem_size), 144);
    }

    #[test]
    fn bring_up_layouts_are_the_drivers() {
        assert_eq!(offset_of!(DeviceInfo, connected_device_count), 8);
        assert_eq!(offset_of!(DeviceInfo, connected_devices), 12);
        assert_eq!(offset_of!(DeviceInfo, bar_address), 48);
        assert_eq!(offset_of!(DeviceInfo, bar_size), 64);
        assert_eq!(offset_of!(MemAllocV2Mt, mem_type), 32);
        assert_eq!(offset_of!(MemAllocV2Mt, mem_handle), 40);
        assert_eq!(offset_of!(MemGetExtendedInfo, mmap_offset), 16);
        assert_eq!(offset_of!(MemGetExtendedInfo, pa), 24);
        assert_eq!(offset_of!(MemGetExtendedInfo, size), 40);
        assert_eq!(offset_of!(DmaQueueInit, tx_handle), 16);
        assert_eq!(offset_of!(DmaQueueInit, rxc_handle), 32);
        assert_eq!(offset_of!(DmaQueueInit, axi_port), 40);
        assert_eq!(offset_of!(NotificationsInitWithReallocV2, force_alloc_mem), 32);
        assert_eq!(offset_of!(NotificationsInitWithReallocV2, mmap_offset), 40);
        assert_eq!(offset_of!(NotificationsInitWithReallocV2, mem_handle), 48);
        assert_eq!(offset_of!(NotificationsQueueInfo, head), 4);
        assert_eq!(offset_of!(NotificationsQueueInfo, phase_bit), 8);
        assert_eq!(offset_of!(ResourceMmapInfo, offset), 16);
        assert_eq!(offset_of!(ResourceMmapInfo, size), 24);
        assert_eq!(offset_of!(DmaQueueState, base_addr), 8);
        assert_eq!(offset_of!(DmaQueueState, completion_base_addr), 32);
        assert_eq!(offset_of!(BarRwWire, address), offset_of!(BarRw, address));
        assert_eq!(offset_of!(BarRwWire, data), offset_of!(BarRw, data));
        assert_eq!(offset_of!(BarRwWire, count), offset_of!(BarRw, count));
        assert_eq!(offset_of!(Crwl, uuid), 4);
    }
}
