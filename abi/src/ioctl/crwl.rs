//! Who holds a core: the CRWL locks, range marks and the attached processes.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use super::{Ioctl, IOC_READ, IOC_WRITE};

// The driver's struct sizes, `shared/anchors/driver-abi.md`.
const _: () = assert!(core::mem::size_of::<Crwl>() == 36);
const _: () = assert!(core::mem::size_of::<CrwlNcMap>() == 24);
const _: () = assert!(core::mem::size_of::<CrwlNcMapExt>() == 80);
const _: () = assert!(core::mem::size_of::<NcPidStateDump>() == 16);
const _: () = assert!(core::mem::size_of::<AppsInfoHeader>() == 16);
const _: () = assert!(core::mem::size_of::<AppInfo>() == 152);

/// `NEURON_IOCTL_CRWL_READER_ENTER`, nr 81: take a NeuronCore for a model.
pub const CRWL_READER_ENTER: Ioctl<Crwl> = Ioctl::pointer(IOC_WRITE, 81, "NEURON_IOCTL_CRWL_READER_ENTER");
/// `NEURON_IOCTL_CRWL_READER_EXIT`, nr 82: give it back.
pub const CRWL_READER_EXIT: Ioctl<Crwl> = Ioctl::pointer(IOC_WRITE, 82, "NEURON_IOCTL_CRWL_READER_EXIT");
/// `NEURON_IOCTL_CRWL_WRITER_ENTER`, nr 83: take a core's writer lock to switch
/// model `uuid` in. The driver waits for other writers and the old model's
/// readers; `EALREADY` when this process was already the writer of that uuid.
/// Driver: neuron_crwl.c, `ncrwl_writer_enter`.
pub const CRWL_WRITER_ENTER: Ioctl<Crwl> = Ioctl::pointer(IOC_WRITE, 83, "NEURON_IOCTL_CRWL_WRITER_ENTER");
/// `NEURON_IOCTL_CRWL_WRITER_DOWNGRADE`, nr 84: the writer becomes the core's
/// one reader. `EINVAL` without a writer enter, `ENOENT` for another uuid or
/// process. Driver: neuron_crwl.c, `ncrwl_writer_downgrade`.
pub const CRWL_WRITER_DOWNGRADE: Ioctl<Crwl> = Ioctl::pointer(IOC_WRITE, 84, "NEURON_IOCTL_CRWL_WRITER_DOWNGRADE");
/// `NEURON_IOCTL_CRWL_NC_RANGE_MARK`, nr 85: claim `nc_count` consecutive free
/// cores in a range; `EBUSY` when there are none. Driver: neuron_crwl.c,
/// `ncrwl_nc_range_mark`.
pub const CRWL_NC_RANGE_MARK: Ioctl<CrwlNcMap> = Ioctl::pointer(IOC_WRITE, 85, "NEURON_IOCTL_CRWL_NC_RANGE_MARK");
/// `NEURON_IOCTL_CRWL_NC_RANGE_MARK_EXT0`, nr 85 with a 512-bit bitmap; the
/// driver tells the two forms apart by the size field.
pub const CRWL_NC_RANGE_MARK_EXT0: Ioctl<CrwlNcMapExt> =
    Ioctl::by_value(IOC_READ | IOC_WRITE, 85, "NEURON_IOCTL_CRWL_NC_RANGE_MARK_EXT0");
/// `NEURON_IOCTL_CRWL_NC_RANGE_UNMARK`, nr 86: give back the cores of `bitmap`
/// this process marked; others are left alone. Always 0 once its argument is
/// copied in. Driver: neuron_crwl.c, `ncrwl_nc_range_unmark`.
pub const CRWL_NC_RANGE_UNMARK: Ioctl<CrwlNcMap> = Ioctl::pointer(IOC_WRITE, 86, "NEURON_IOCTL_CRWL_NC_RANGE_UNMARK");
/// `NEURON_IOCTL_CRWL_NC_RANGE_UNMARK_EXT0`, nr 86 with [`CrwlNcMapExt`].
pub const CRWL_NC_RANGE_UNMARK_EXT0: Ioctl<CrwlNcMapExt> =
    Ioctl::by_value(IOC_WRITE, 86, "NEURON_IOCTL_CRWL_NC_RANGE_UNMARK_EXT0");
/// `NEURON_IOCTL_NC_PID_STATE_DUMP`, nr 117: logs the core's holder to the
/// kernel log and does **not** return it; [`DEVICE_GET_ALL_APPS_INFO`] does.
/// Driver: neuron_cdev.c, `ncdev_nc_pid_state_dump`.
pub const NC_PID_STATE_DUMP: Ioctl<NcPidStateDump> =
    Ioctl::by_value(IOC_READ | IOC_WRITE, 117, "NEURON_IOCTL_NC_PID_STATE_DUMP");
/// `NEURON_IOCTL_DEVICE_GET_ALL_APPS_INFO`, nr 7: the processes attached to
/// the device, an [`AppsInfoHeader`] then [`AppInfo`]s. Driver: neuron_cdev.c,
/// `ncdev_device_get_all_apps_info`.
pub const DEVICE_GET_ALL_APPS_INFO: Ioctl<AppsInfoHeader> =
    Ioctl::pointer(IOC_READ, 7, "NEURON_IOCTL_DEVICE_GET_ALL_APPS_INFO");

/// `MAX_NC_PER_DEVICE`, neuron_device.h: the CRWL state is per core of these.
pub const MAX_NC_PER_DEVICE: u32 = 8;
/// `MAX_NEURON_DEVICE_COUNT`, neuron_device.h: range marks index this many
/// devices' cores.
pub const MAX_NEURON_DEVICE_COUNT: u32 = 64;
/// `NEURON_MAX_PROCESS_PER_DEVICE`: the most [`DEVICE_GET_ALL_APPS_INFO`] entries.
pub const MAX_PROCESS_PER_DEVICE: usize = 16;
/// `APP_INFO_MAX_MODELS_PER_DEVICE`: the uuids an [`AppInfo`] holds, cores 0..=3.
pub const APP_INFO_MAX_MODELS_PER_DEVICE: usize = 4;
/// `APP_INFO_PID_NC_LOCK_INFO`: ask for `nc_lock_map` and uuids.
pub const APP_INFO_PID_NC_LOCK_INFO: u16 = 1;
/// `APP_INFO_PID_MEM_USAGE`: ask for each process's memory use.
pub const APP_INFO_PID_MEM_USAGE: u16 = 1 << 1;

/// `struct neuron_ioctl_crwl`: a core and the model that takes it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct Crwl {
    /// NeuronCore index.
    pub nc_id: u32,
    /// Model identifier, `struct neuron_uuid`.
    pub uuid: [u8; 32],
}

/// `struct neuron_ioctl_crwl_nc_map`, the pointer form of the range marks.
/// Core indices are the device's own.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct CrwlNcMap {
    /// Consecutive cores wanted.
    pub nc_count: u32,
    /// First core index of the search.
    pub start_nc_index: u32,
    /// Last core index of the search, inclusive.
    pub end_nc_index: u32,
    /// Out: the longest free run seen when the mark fails.
    pub max_nc_available: u32,
    /// Out for a mark: the cores taken. In for an unmark: the cores to give back.
    pub bitmap: u64,
}

/// `struct neuron_ioctl_crwl_nc_map_ext`: as [`CrwlNcMap`] with a 512-bit bitmap.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct CrwlNcMapExt {
    /// As [`CrwlNcMap::nc_count`].
    pub nc_count: u32,
    /// As [`CrwlNcMap::start_nc_index`].
    pub start_nc_index: u32,
    /// As [`CrwlNcMap::end_nc_index`].
    pub end_nc_index: u32,
    /// As [`CrwlNcMap::max_nc_available`].
    pub max_nc_available: u32,
    /// As [`CrwlNcMap::bitmap`].
    pub bitmap: [u64; 8],
}

/// `struct neuron_ioctl_nc_pid_state_dump`: every field is in.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct NcPidStateDump {
    /// Size of the structure, for versioning.
    pub size: u32,
    /// The core whose holder is dumped, a global index.
    pub nc_id: u32,
    /// 1: dump only the holder's log entries.
    pub filter_log_owner: u32,
    /// Most log entries to dump.
    pub log_dump_limit: u32,
}

/// `struct neuron_ioctl_get_apps_info` without its flexible array: the caller
/// passes this header followed by `capacity` [`AppInfo`] entries.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct AppsInfoHeader {
    /// What to fill in: `APP_INFO_PID_*`.
    pub apps_info_flags: u16,
    /// Padding.
    pub _pad0: u16,
    /// In: entries the caller's array holds.
    pub capacity: u32,
    /// Out: entries the driver wrote.
    pub size: u32,
    /// Padding.
    pub _pad1: u32,
}

/// `struct neuron_app_info`: one process attached to the device.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct AppInfo {
    /// The process.
    pub pid: i32,
    /// Cores 0..=3 whose CRWL writer it is.
    pub nc_lock_map: u8,
    /// The uuid of each core of `nc_lock_map`.
    pub uuid_data: [[u8; 32]; APP_INFO_MAX_MODELS_PER_DEVICE],
    /// Padding.
    pub _pad: [u8; 3],
    /// Host memory it uses, with `APP_INFO_PID_MEM_USAGE`.
    pub host_mem_size: u64,
    /// Device memory it uses, with `APP_INFO_PID_MEM_USAGE`.
    pub device_mem_size: u64,
}
