//! DMA queues and BAR register access.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use super::{Ioctl, IOC_READ, IOC_WRITE};

// The driver's struct sizes, `shared/anchors/driver-abi.md`.
// `BarRw` carries two pointers; a 32-bit build has no BAR ioctl.
#[cfg(target_pointer_width = "64")]
const _: () = assert!(core::mem::size_of::<BarRw>() == 32);
const _: () = assert!(core::mem::size_of::<BarRwWire>() == 32);
const _: () = assert!(core::mem::size_of::<DmaQueueCopyStart>() == 16);
const _: () = assert!(core::mem::size_of::<DmaQueueInit>() == 48);
const _: () = assert!(core::mem::size_of::<DmaQueueRelease>() == 8);
const _: () = assert!(core::mem::size_of::<DmaAckCompleted>() == 12);
const _: () = assert!(core::mem::size_of::<DmaQueueGetState>() == 24);
const _: () = assert!(core::mem::size_of::<DmaQueueState>() == 48);

/// `NEURON_IOCTL_BAR_READ`, nr 11. Its argument carries pointers: issued only
/// by `nrt_linux::sys::bar_rw`, from slices.
pub const BAR_READ: Ioctl<BarRw> = Ioctl::pointer(IOC_READ, 11, "NEURON_IOCTL_BAR_READ");
/// `NEURON_IOCTL_BAR_WRITE`, nr 12. As [`BAR_READ`].
pub const BAR_WRITE: Ioctl<BarRw> = Ioctl::pointer(IOC_WRITE, 12, "NEURON_IOCTL_BAR_WRITE");
/// `NEURON_IOCTL_DMA_QUEUE_COPY_START`, nr 35: how an unprivileged process
/// advances a DMA queue's tail; the driver refuses BAR writes to `drtp_inc`.
pub const DMA_QUEUE_COPY_START: Ioctl<DmaQueueCopyStart> =
    Ioctl::pointer(IOC_READ, 35, "NEURON_IOCTL_DMA_QUEUE_COPY_START");
/// `NEURON_IOCTL_DMA_QUEUE_INIT`, nr 33: bind a queue's TX/RX rings; copy start needs it first.
pub const DMA_QUEUE_INIT: Ioctl<DmaQueueInit> = Ioctl::pointer(IOC_READ, 33, "NEURON_IOCTL_DMA_QUEUE_INIT");
/// `NEURON_IOCTL_DMA_QUEUE_RELEASE`, nr 34.
pub const DMA_QUEUE_RELEASE: Ioctl<DmaQueueRelease> = Ioctl::pointer(IOC_READ, 34, "NEURON_IOCTL_DMA_QUEUE_RELEASE");
/// `NEURON_IOCTL_DMA_ACK_COMPLETED`, nr 36.
pub const DMA_ACK_COMPLETED: Ioctl<DmaAckCompleted> = Ioctl::pointer(IOC_READ, 36, "NEURON_IOCTL_DMA_ACK_COMPLETED");
/// `NEURON_IOCTL_DMA_QUEUE_GET_STATE`, nr 37: two pointers to [`DmaQueueState`].
pub const DMA_QUEUE_GET_STATE: Ioctl<DmaQueueGetState> =
    Ioctl::pointer(IOC_READ | IOC_WRITE, 37, "NEURON_IOCTL_DMA_QUEUE_GET_STATE");

/// `struct neuron_ioctl_bar_rw`: `count` registers at the absolute addresses in
/// `address[]` (BAR0), values in `data[]`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct BarRw {
    /// BAR index.
    pub bar: u32,
    /// Absolute register addresses: `bar_address[0]` plus the offset.
    pub address: *const u64,
    /// Values: in for writes, out for reads.
    pub data: *mut u32,
    /// Number of registers.
    pub count: u32,
}

/// The wire form of [`BarRw`], pointers as the caller's addresses.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct BarRwWire {
    /// BAR index.
    pub bar: u32,
    /// Padding.
    pub _pad0: u32,
    /// Address of the register addresses in the caller.
    pub address: u64,
    /// Address of the data in the caller.
    pub data: u64,
    /// Number of registers.
    pub count: u32,
    /// Padding.
    pub _pad1: u32,
}

/// `struct neuron_ioctl_dma_queue_copy_start`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct DmaQueueCopyStart {
    /// DMA engine index.
    pub eng_id: u32,
    /// Queue index in the engine.
    pub qid: u32,
    /// TX descriptors to release.
    pub tx_desc_count: u32,
    /// RX descriptors to release.
    pub rx_desc_count: u32,
}

/// `struct neuron_ioctl_dma_queue_init`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct DmaQueueInit {
    /// DMA engine index.
    pub eng_id: u32,
    /// Queue index in the engine.
    pub qid: u32,
    /// TX ring descriptors.
    pub tx_desc_count: u32,
    /// RX ring descriptors.
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

/// The wire form of `struct neuron_ioctl_dma_queue_get_state`.
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

/// `struct neuron_dma_queue_state`.
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
    /// Hardware head pointer.
    pub head_pointer: u32,
    /// Software tail pointer.
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
