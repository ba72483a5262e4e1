//! DMA queues and BAR register access.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use super::{Ioctl, IOC_READ, IOC_WRITE};

// The driver's struct sizes (`shared/anchors/driver-abi.md`): what it copies
// through each request's pointer.
// `BarRw` carries two pointers: 32 bytes where the driver runs (64-bit); a
// 32-bit build (a controller that links only the constants) has no BAR ioctl.
#[cfg(target_pointer_width = "64")]
const _: () = assert!(core::mem::size_of::<BarRw>() == 32);
const _: () = assert!(core::mem::size_of::<BarRwWire>() == 32);
const _: () = assert!(core::mem::size_of::<DmaQueueCopyStart>() == 16);
const _: () = assert!(core::mem::size_of::<DmaQueueInit>() == 48);
const _: () = assert!(core::mem::size_of::<DmaQueueRelease>() == 8);
const _: () = assert!(core::mem::size_of::<DmaAckCompleted>() == 12);
const _: () = assert!(core::mem::size_of::<DmaQueueGetState>() == 24);
const _: () = assert!(core::mem::size_of::<DmaQueueState>() == 48);

/// `NEURON_IOCTL_BAR_READ` (nr 11). Its argument carries pointers: issued only
/// through `nrt_linux::sys::bar_rw`, which builds it from slices.
pub const BAR_READ: Ioctl<BarRw> = Ioctl::pointer(IOC_READ, 11, "NEURON_IOCTL_BAR_READ");
/// `NEURON_IOCTL_BAR_WRITE` (nr 12). As [`BAR_READ`].
pub const BAR_WRITE: Ioctl<BarRw> = Ioctl::pointer(IOC_WRITE, 12, "NEURON_IOCTL_BAR_WRITE");
/// `NEURON_IOCTL_DMA_QUEUE_COPY_START` (nr 35): how an unprivileged process
/// advances a DMA queue's tail (the driver refuses BAR writes to `drtp_inc`).
pub const DMA_QUEUE_COPY_START: Ioctl<DmaQueueCopyStart> =
    Ioctl::pointer(IOC_READ, 35, "NEURON_IOCTL_DMA_QUEUE_COPY_START");
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
