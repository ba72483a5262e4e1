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

/// `_IOC` direction bits: write (user to kernel).
pub const IOC_WRITE: u32 = 1;
/// `_IOC` direction bits: read (kernel to user).
pub const IOC_READ: u32 = 2;
/// The driver's ioctl type character, `'N'`.
pub const NEURON_IOCTL_BASE: u32 = b'N' as u32;
/// The size field of every Neuron request: the size of a pointer.
pub const ARG_PTR_SIZE: u32 = core::mem::size_of::<*const u8>() as u32;

/// The Linux `_IOC(dir, type, nr, size)` encoding.
pub const fn ioc(dir: u32, nr: u32, size: u32) -> u32 {
    (dir << 30) | (size << 16) | (NEURON_IOCTL_BASE << 8) | nr
}

/// `_IOR('N', nr, struct X *)`.
pub const fn ior(nr: u32) -> u32 {
    ioc(IOC_READ, nr, ARG_PTR_SIZE)
}

/// `_IOW('N', nr, struct X *)`.
pub const fn iow(nr: u32) -> u32 {
    ioc(IOC_WRITE, nr, ARG_PTR_SIZE)
}

/// `_IOWR('N', nr, struct X *)`.
pub const fn iowr(nr: u32) -> u32 {
    ioc(IOC_READ | IOC_WRITE, nr, ARG_PTR_SIZE)
}

/// `NEURON_IOCTL_BAR_READ` (nr 11).
pub const BAR_READ: u32 = ior(11);
/// `NEURON_IOCTL_BAR_WRITE` (nr 12).
pub const BAR_WRITE: u32 = iow(12);
/// `NEURON_IOCTL_DMA_QUEUE_COPY_START` (nr 35): how an unprivileged process
/// advances a DMA queue's tail (the driver refuses BAR writes to `drtp_inc`).
pub const DMA_QUEUE_COPY_START: u32 = ior(35);
/// `NEURON_IOCTL_SEMAPHORE_INCREMENT` (nr 41): the per-inference kickoff.
pub const SEMAPHORE_INCREMENT: u32 = ior(41);
/// `NEURON_IOCTL_SEMAPHORE_DECREMENT` (nr 42).
pub const SEMAPHORE_DECREMENT: u32 = ior(42);
/// `NEURON_IOCTL_SEMAPHORE_READ` (nr 43; `value` is out).
pub const SEMAPHORE_READ: u32 = iowr(43);
/// `NEURON_IOCTL_SEMAPHORE_WRITE` (nr 44).
pub const SEMAPHORE_WRITE: u32 = ior(44);
/// `NEURON_IOCTL_EVENT_SET` (nr 45).
pub const EVENT_SET: u32 = ior(45);
/// `NEURON_IOCTL_EVENT_GET` (nr 46; `value` is out).
pub const EVENT_GET: u32 = iowr(46);
/// `NEURON_IOCTL_NOTIFICATIONS_INIT_V2` (nr 53): create an NQ ring, get its mmap offset.
pub const NOTIFICATIONS_INIT_V2: u32 = ior(53);

/// `struct neuron_ioctl_semaphore` (and `neuron_ioctl_event`, the same layout).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SemaphoreArg {
    /// NeuronCore index (must be below the device's core count: else `E2BIG`).
    pub nc_id: u32,
    /// Semaphore (or event) index (below 256 on v2+: else `EINVAL`).
    pub semaphore_index: u32,
    /// Value to add, subtract or set; out for reads.
    pub value: u32,
}

/// `struct neuron_ioctl_notifications_init_v2`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
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

/// A request's name, for error messages.
pub fn request_name(req: u32) -> &'static str {
    match req {
        BAR_READ => "NEURON_IOCTL_BAR_READ",
        BAR_WRITE => "NEURON_IOCTL_BAR_WRITE",
        DMA_QUEUE_COPY_START => "NEURON_IOCTL_DMA_QUEUE_COPY_START",
        SEMAPHORE_INCREMENT => "NEURON_IOCTL_SEMAPHORE_INCREMENT",
        SEMAPHORE_DECREMENT => "NEURON_IOCTL_SEMAPHORE_DECREMENT",
        SEMAPHORE_READ => "NEURON_IOCTL_SEMAPHORE_READ",
        SEMAPHORE_WRITE => "NEURON_IOCTL_SEMAPHORE_WRITE",
        EVENT_SET => "NEURON_IOCTL_EVENT_SET",
        EVENT_GET => "NEURON_IOCTL_EVENT_GET",
        NOTIFICATIONS_INIT_V2 => "NEURON_IOCTL_NOTIFICATIONS_INIT_V2",
        _ => "NEURON_IOCTL_?",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::{offset_of, size_of};

    #[test]
    fn request_codes_are_the_drivers() {
        assert_eq!(SEMAPHORE_INCREMENT, 0x8008_4E29);
        assert_eq!(SEMAPHORE_DECREMENT, 0x8008_4E2A);
        assert_eq!(SEMAPHORE_READ, 0xC008_4E2B);
        assert_eq!(SEMAPHORE_WRITE, 0x8008_4E2C);
        assert_eq!(EVENT_SET, 0x8008_4E2D);
        assert_eq!(EVENT_GET, 0xC008_4E2E);
        assert_eq!(NOTIFICATIONS_INIT_V2, 0x8008_4E35);
        assert_eq!(BAR_READ, 0x8008_4E0B);
        assert_eq!(BAR_WRITE, 0x4008_4E0C);
        assert_eq!(DMA_QUEUE_COPY_START, 0x8008_4E23);
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
}
