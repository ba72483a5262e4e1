//! The Neuron driver's ioctl ABI: request codes and argument structs, as the
//! public driver's `neuron_ioctl.h` declares them; `tests.rs` checks each.
//!
//! - Every request encodes the size of a **pointer**, not of the struct: the
//!   header declares `_IOR('N', nr, struct X *)`.
//! - Most input requests are declared `_IOR`, against the Linux convention.
//! - The kickoff takes a pointer to the 12-byte `{nc_id, semaphore_index,
//!   value}`, not the seed's 8-byte value: `seed-vs-driver.md` point 1.
//!
//! Each request is an [`Ioctl<T>`], paired with its argument type here only.

use core::marker::PhantomData;

mod crwl;
mod device;
mod dma;
mod mem;
mod notify;
mod sync;

pub use crwl::*;
pub use device::*;
pub use dma::*;
pub use mem::*;
pub use notify::*;
pub use sync::*;

/// `_IOC` direction bits: write, user to kernel.
pub const IOC_WRITE: u32 = 1;
/// `_IOC` direction bits: read, kernel to user.
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

/// The size field of request `code`, `_IOC_SIZE`.
pub const fn ioc_size(code: u32) -> u32 {
    (code >> 16) & IOC_SIZE_MASK
}

/// A driver request bound to the one argument type it copies.
///
/// The kernel copies as many bytes as the request says, so the pairing of
/// code and type is the soundness. It is made once, here: the constructor is
/// private, each code is built from `size_of::<*mut T>()`, and each
/// argument's size is asserted against the driver's.
///
/// Outside this module no `Ioctl` can be made, so FIONREAD through a `&mut u8`
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
    /// `_IOC(dir, 'N', nr, struct X *)`: the form of most Neuron requests.
    const fn pointer(dir: u32, nr: u32, name: &'static str) -> Ioctl<T> {
        let code = ioc(dir, nr, core::mem::size_of::<*mut T>() as u32);
        // The size field holds the pointer's size exactly.
        assert!(ioc_size(code) as usize == core::mem::size_of::<*mut T>());
        Ioctl { code, name, arg: PhantomData }
    }

    /// `_IOC(dir, 'N', nr, struct X)`: the few requests declared with the
    /// struct itself, whose size field is the struct's.
    pub(crate) const fn by_value(dir: u32, nr: u32, name: &'static str) -> Ioctl<T> {
        let code = ioc(dir, nr, core::mem::size_of::<T>() as u32);
        assert!(ioc_size(code) as usize == core::mem::size_of::<T>());
        Ioctl { code, name, arg: PhantomData }
    }

    /// The request number, `_IOC_NR`, which the driver dispatches on.
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

/// An argument the driver touches only within its own `size_of::<Self>()`
/// bytes, following no pointer inside it. Sealed to this module's plain
/// structs, so `nrt_linux::sys::ioctl` can take one safely; [`BarRw`] is not one.
pub trait PlainArg: sealed::Sealed {}

mod sealed {
    pub trait Sealed {}
}

/// Mark the plain argument structs.
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

/// Every request this crate names, `(nr, code, name)`, for a dispatcher or a tracer.
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

#[cfg(test)]
mod tests;
