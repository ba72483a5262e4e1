//! Memory: allocation, a chunk's mmap offset, and the per-process datastore.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use super::{Ioctl, IOC_READ, IOC_WRITE};

// The driver's struct sizes, `shared/anchors/driver-abi.md`.
const _: () = assert!(core::mem::size_of::<MemAllocV2Mt>() == 48);
const _: () = assert!(core::mem::size_of::<MemGetExtendedInfo>() == 48);
const _: () = assert!(core::mem::size_of::<MemFree>() == 8);
const _: () = assert!(core::mem::size_of::<ResourceMmapInfo>() == 32);
const _: () = assert!(core::mem::size_of::<NeuronDsInfo>() == 24);

/// `NEURON_IOCTL_MEM_FREE`, nr 22.
pub const MEM_FREE: Ioctl<MemFree> = Ioctl::pointer(IOC_READ, 22, "NEURON_IOCTL_MEM_FREE");
/// `NEURON_IOCTL_MEM_GET_EXTENDED_INFO`, nr 29: a chunk's mmap offset, physical address, size.
pub const MEM_GET_EXTENDED_INFO: Ioctl<MemGetExtendedInfo> =
    Ioctl::pointer(IOC_READ, 29, "NEURON_IOCTL_MEM_GET_EXTENDED_INFO");
/// `NEURON_IOCTL_MEM_ALLOC_V2MT`, nr 102, declared with the struct.
/// Its `mem_handle` is a pointer the driver writes the handle through.
pub const MEM_ALLOC_V2MT: Ioctl<MemAllocV2Mt> = Ioctl::by_value(IOC_READ, 102, "NEURON_IOCTL_MEM_ALLOC_V2MT");
/// `NEURON_IOCTL_RESOURCE_MMAP_INFO`, nr 112, declared with the struct.
pub const RESOURCE_MMAP_INFO: Ioctl<ResourceMmapInfo> =
    Ioctl::by_value(IOC_READ | IOC_WRITE, 112, "NEURON_IOCTL_RESOURCE_MMAP_INFO");
/// `NEURON_IOCTL_ACQUIRE_NEURON_DS`, nr 71: `pid`'s datastore, 0 the caller's,
/// created then. Driver: neuron_ds.c, `neuron_ds_acquire_pid`.
pub const ACQUIRE_NEURON_DS: Ioctl<NeuronDsInfo> = Ioctl::pointer(IOC_READ, 71, "NEURON_IOCTL_ACQUIRE_NEURON_DS");
/// `NEURON_IOCTL_RELEASE_NEURON_DS`, nr 72: zero `pid`'s datastore if the
/// caller owns it; no reference count. Driver: neuron_ds.c, `neuron_ds_release_pid`.
pub const RELEASE_NEURON_DS: Ioctl<NeuronDsInfo> = Ioctl::pointer(IOC_READ, 72, "NEURON_IOCTL_RELEASE_NEURON_DS");

/// `mem_alloc_category_t`: the `mem_type` of `MEM_ALLOC_V2MT`.
pub mod mem_type {
    /// `NEURON_MEMALLOC_TYPE_TENSORS_HOST`: a runtime's tensors in host memory.
    pub const TENSORS_HOST: u32 = 2;
    /// `NEURON_MEMALLOC_TYPE_NOTIFICATION_HOST`.
    pub const NOTIFICATION_HOST: u32 = 6;
    /// `NEURON_MEMALLOC_TYPE_TENSORS_DEVICE`: a runtime's tensors in device memory.
    pub const TENSORS_DEVICE: u32 = 9;
    /// `NEURON_MEMALLOC_TYPE_DMA_RINGS_HOST`: a DMA descriptor ring in host memory.
    pub const DMA_RINGS_HOST: u32 = 17;
    /// `NEURON_MEMALLOC_TYPE_DMA_RINGS_DEVICE`.
    pub const DMA_RINGS_DEVICE: u32 = 18;
}

/// `NEURON_DATASTORE_SIZE`, neuron_ds.h: bytes of one process's datastore.
pub const NEURON_DATASTORE_SIZE: u32 = 256 * 1024;

/// `struct neuron_ioctl_mem_alloc_v2_mem_type`.
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
    /// Padding.
    pub _pad: u32,
    /// Address of the caller's `u64` the handle is written to.
    pub mem_handle: u64,
}

/// `struct neuron_ioctl_mem_get_extended_info`, version 1.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct MemGetExtendedInfo {
    /// The handle.
    pub mem_handle: u64,
    /// In: version of the structure, 1.
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

/// `struct neuron_ioctl_neuron_ds_info`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct NeuronDsInfo {
    /// The process whose datastore; 0 the caller's own.
    pub pid: i32,
    /// Padding.
    pub _pad0: u32,
    /// Out: the offset to `mmap` the datastore at.
    pub mmap_offset: u64,
    /// Out: its size, [`NEURON_DATASTORE_SIZE`].
    pub size: u32,
    /// Padding.
    pub _pad1: u32,
}
