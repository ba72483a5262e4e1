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
/// let _r: nrt_linux::ioctl::Ioctl<u8> = nrt_linux::ioctl::Ioctl::new(0x541B, "FIONREAD");
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
/// asserted below against the driver's), so [`crate::sys::ioctl`] can take one
/// safely. [`BarRw`], which carries pointers, does not.
pub trait PlainArg: sealed::Sealed {}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::SemaphoreArg {}
    impl Sealed for super::NotificationsInitV2 {}
    impl Sealed for super::DmaQueueCopyStart {}
}

impl PlainArg for SemaphoreArg {}
impl PlainArg for NotificationsInitV2 {}
impl PlainArg for DmaQueueCopyStart {}

/// `NEURON_IOCTL_BAR_READ` (nr 11). Its argument carries pointers: issued only
/// through [`crate::sys::bar_rw`], which builds it from slices.
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

// The driver's struct sizes (`shared/anchors/driver-abi.md`): what it copies
// through each request's pointer.
const _: () = assert!(core::mem::size_of::<SemaphoreArg>() == 12);
const _: () = assert!(core::mem::size_of::<NotificationsInitV2>() == 48);
const _: () = assert!(core::mem::size_of::<BarRw>() == 32);
const _: () = assert!(core::mem::size_of::<DmaQueueCopyStart>() == 16);

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
}
