//! Notification queues: creating a ring and reading the driver's view of it.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use super::{Ioctl, IOC_READ};

// The driver's struct sizes, `shared/anchors/driver-abi.md`.
const _: () = assert!(core::mem::size_of::<NotificationsInitV2>() == 48);
const _: () = assert!(core::mem::size_of::<NotificationsInitWithReallocV2>() == 56);
const _: () = assert!(core::mem::size_of::<NotificationsQueueInfo>() == 12);

/// `NEURON_IOCTL_NOTIFICATIONS_INIT_V2`, nr 53: create an NQ ring, get its mmap offset.
pub const NOTIFICATIONS_INIT_V2: Ioctl<NotificationsInitV2> =
    Ioctl::pointer(IOC_READ, 53, "NEURON_IOCTL_NOTIFICATIONS_INIT_V2");
/// `NEURON_IOCTL_NOTIFICATIONS_INIT_WITH_REALLOC_V2`, nr 54: as INIT_V2;
/// `force_alloc_mem` drops the old chunk for a size change.
pub const NOTIFICATIONS_INIT_WITH_REALLOC_V2: Ioctl<NotificationsInitWithReallocV2> =
    Ioctl::pointer(IOC_READ, 54, "NEURON_IOCTL_NOTIFICATIONS_INIT_WITH_REALLOC_V2");
/// `NEURON_IOCTL_NOTIFICATIONS_QUEUE_INFO`, nr 58: the driver's view of a ring's head and phase.
pub const NOTIFICATIONS_QUEUE_INFO: Ioctl<NotificationsQueueInfo> =
    Ioctl::pointer(IOC_READ, 58, "NEURON_IOCTL_NOTIFICATIONS_QUEUE_INFO");

/// `NQ_TYPE`, share/neuron_driver_shared.h.
pub mod nq_type {
    /// Trace.
    pub const TRACE: u32 = 0;
    /// Notifications: the engines' START and END records.
    pub const NOTIFY: u32 = 1;
    /// Events.
    pub const EVENT: u32 = 2;
    /// Errors.
    pub const ERROR: u32 = 3;
    /// DMA trace, in another NOTIFIC block.
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

/// `struct neuron_ioctl_notifications_init_v2`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct NotificationsInitV2 {
    /// Index of the NC or TopSP.
    pub nq_dev_id: u32,
    /// [`nq_dev_type`].
    pub nq_dev_type: u32,
    /// [`nq_type`].
    pub nq_type: u32,
    /// Engine index: the hardware slot programmed.
    pub engine_index: u32,
    /// Ring size in bytes, a power of two.
    pub size: u32,
    /// 1 for a ring in host memory.
    pub on_host_memory: u32,
    /// DRAM channel for a device ring.
    pub dram_channel: u32,
    /// DRAM region for a device ring.
    pub dram_region: u32,
    /// Out: the offset to `mmap` a host ring at, or `u64::MAX`.
    pub mmap_offset: u64,
    /// Out: the driver's memory handle.
    pub mem_handle: u64,
}

/// `struct neuron_ioctl_notifications_init_with_realloc_v2`: as
/// [`NotificationsInitV2`] with `force_alloc_mem`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct NotificationsInitWithReallocV2 {
    /// NC or TopSP index.
    pub nq_dev_id: u32,
    /// [`nq_dev_type`].
    pub nq_dev_type: u32,
    /// [`nq_type`].
    pub nq_type: u32,
    /// Engine index.
    pub engine_index: u32,
    /// Ring size in bytes.
    pub size: u32,
    /// 1 for host memory.
    pub on_host_memory: u32,
    /// DRAM channel.
    pub dram_channel: u32,
    /// DRAM region.
    pub dram_region: u32,
    /// 1: free the ring's old chunk and allocate a new one.
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
