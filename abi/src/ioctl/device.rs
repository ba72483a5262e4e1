//! The device: its identity, versions, core resets and the logical core map.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use super::{Ioctl, IOC_READ, IOC_WRITE};

// The driver's struct sizes, `shared/anchors/driver-abi.md`.
const _: () = assert!(core::mem::size_of::<DeviceInfo>() == 80);
const _: () = assert!(core::mem::size_of::<DeviceBasicInfo>() == 8);
const _: () = assert!(core::mem::size_of::<DriverInfo>() == 24);
const _: () = assert!(core::mem::size_of::<CompatibleVersion>() == 8);
const _: () = assert!(core::mem::size_of::<NcReset>() == 8);
const _: () = assert!(core::mem::size_of::<NcResetReady>() == 8);

/// `NEURON_IOCTL_DEVICE_INFO`, nr 3: arch, connected devices, BAR addresses and sizes.
pub const DEVICE_INFO: Ioctl<DeviceInfo> = Ioctl::pointer(IOC_READ, 3, "NEURON_IOCTL_DEVICE_INFO");
/// `NEURON_IOCTL_DEVICE_BASIC_INFO`, nr 100.
pub const DEVICE_BASIC_INFO: Ioctl<DeviceBasicInfo> = Ioctl::pointer(IOC_WRITE, 100, "NEURON_IOCTL_DEVICE_BASIC_INFO");
/// `NEURON_IOCTL_DRIVER_INFO_GET`, nr 110, declared with the struct.
pub const DRIVER_INFO_GET: Ioctl<DriverInfo> = Ioctl::by_value(IOC_READ, 110, "NEURON_IOCTL_DRIVER_INFO_GET");
/// `NEURON_IOCTL_COMPATIBLE_VERSION`, nr 93: the runtime versions this driver supports.
pub const COMPATIBLE_VERSION: Ioctl<CompatibleVersion> =
    Ioctl::pointer(IOC_WRITE, 93, "NEURON_IOCTL_COMPATIBLE_VERSION");
/// `NEURON_IOCTL_NC_RESET`, nr 103: reset the cores of `nc_map`, get a request id.
pub const NC_RESET: Ioctl<NcReset> = Ioctl::pointer(IOC_READ, 103, "NEURON_IOCTL_NC_RESET");
/// `NEURON_IOCTL_NC_RESET_READY`, nr 104: wait for a reset request, get its result.
pub const NC_RESET_READY: Ioctl<NcResetReady> = Ioctl::pointer(IOC_READ, 104, "NEURON_IOCTL_NC_RESET_READY");
/// `NEURON_IOCTL_GET_LOGICAL_TO_PHYSICAL_NC_MAP`, nr 120, declared with the
/// struct: where each host-wide logical core is, written through
/// [`GetNcMap::map`]. `ENOTSUPP` on v2. Driver: neuron_cdev.c,
/// `ncdev_get_logical_to_physical_nc_map`.
pub const GET_LOGICAL_TO_PHYSICAL_NC_MAP: Ioctl<GetNcMap> =
    Ioctl::by_value(IOC_READ | IOC_WRITE, 120, "NEURON_IOCTL_GET_LOGICAL_TO_PHYSICAL_NC_MAP");

/// `NEURON_IOCTL_MAX_CONNECTED_DEVICES`.
pub const MAX_CONNECTED_DEVICES: usize = 8;
/// `NEURON_MAX_BARS`.
pub const MAX_BARS: usize = 2;

/// `NEURON_NC_MAP_DEVICE`: the `nc_map` of `NC_RESET` that resets the whole device.
pub const NC_MAP_DEVICE: u32 = 0xFFFF_FFFF;

/// `NEURON_NC_MAP_MAX_ENTRIES`.
pub const NC_MAP_MAX_ENTRIES: u32 = 128;
/// `NEURON_IOCTL_NC_MAPPING_TYPE_V0`, the "seng swap" mapping.
pub const NC_MAPPING_TYPE_V0: u32 = 0;
/// `ENOTSUPP`, kernel-internal: the arch has no map.
pub const ENOTSUPP: i32 = 524;

/// `struct neuron_ioctl_device_info`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct DeviceInfo {
    /// Architecture: 2, 3 or 4.
    pub architecture: u32,
    /// Board revision.
    pub revision: u32,
    /// Devices connected to this one.
    pub connected_device_count: u32,
    /// Their ids.
    pub connected_devices: [u32; MAX_CONNECTED_DEVICES],
    /// Padding.
    pub _pad: u32,
    /// BAR physical addresses, which the driver subtracts from every BAR_READ
    /// and BAR_WRITE address.
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

/// `struct neuron_ioctl_device_driver_info`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct DriverInfo {
    /// Architecture.
    pub architecture: u32,
    /// Board revision.
    pub revision: u32,
    /// Version of this structure, 0.
    pub version: u32,
    /// Size of this structure, 24.
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

/// `struct neuron_ioctl_device_reset`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct NcReset {
    /// NeuronCore bitmap, or [`NC_MAP_DEVICE`].
    pub nc_map: u32,
    /// Out: the reset request's id.
    pub request_id: u32,
}

/// `struct neuron_ioctl_device_ready`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct NcResetReady {
    /// The reset request's id.
    pub request_id: u32,
    /// Out: the reset's result, 0 for success.
    pub result: i32,
}

/// `struct neuron_ioctl_get_logical_to_physical_nc_map`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct GetNcMap {
    /// Address of a [`NcMapHeader`] followed by `max_map_entries` [`NcMapEntry`]s.
    pub map: u64,
    /// Entries the buffer holds; over [`NC_MAP_MAX_ENTRIES`] is `EINVAL`.
    pub max_map_entries: u32,
    /// [`NC_MAPPING_TYPE_V0`]; any other is `EINVAL`.
    pub mapping_version: u32,
}

/// `struct neuron_ioctl_nc_map`'s fixed part.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct NcMapHeader {
    /// Out: entries written, at most the arch's logical cores.
    pub num_entries: u32,
}

/// `struct neuron_ioctl_nc_map_entry`: where one logical core is.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct NcMapEntry {
    /// The device: the `N` of `/dev/neuronN`.
    pub device_id: u32,
    /// The device's own core.
    pub device_nc_idx: u32,
}
