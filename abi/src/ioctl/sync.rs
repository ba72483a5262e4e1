//! Semaphores and events: the per-inference kickoff and its counters.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use super::{Ioctl, IOC_READ, IOC_WRITE};

// The driver's struct sizes, `shared/anchors/driver-abi.md`.
const _: () = assert!(core::mem::size_of::<SemaphoreArg>() == 12);

/// `NEURON_IOCTL_SEMAPHORE_INCREMENT`, nr 41: the per-inference kickoff.
pub const SEMAPHORE_INCREMENT: Ioctl<SemaphoreArg> = Ioctl::pointer(IOC_READ, 41, "NEURON_IOCTL_SEMAPHORE_INCREMENT");
/// `NEURON_IOCTL_SEMAPHORE_DECREMENT`, nr 42.
pub const SEMAPHORE_DECREMENT: Ioctl<SemaphoreArg> = Ioctl::pointer(IOC_READ, 42, "NEURON_IOCTL_SEMAPHORE_DECREMENT");
/// `NEURON_IOCTL_SEMAPHORE_READ`, nr 43: `value` is out.
pub const SEMAPHORE_READ: Ioctl<SemaphoreArg> = Ioctl::pointer(IOC_READ | IOC_WRITE, 43, "NEURON_IOCTL_SEMAPHORE_READ");
/// `NEURON_IOCTL_SEMAPHORE_WRITE`, nr 44.
pub const SEMAPHORE_WRITE: Ioctl<SemaphoreArg> = Ioctl::pointer(IOC_READ, 44, "NEURON_IOCTL_SEMAPHORE_WRITE");
/// `NEURON_IOCTL_EVENT_SET`, nr 45.
pub const EVENT_SET: Ioctl<SemaphoreArg> = Ioctl::pointer(IOC_READ, 45, "NEURON_IOCTL_EVENT_SET");
/// `NEURON_IOCTL_EVENT_GET`, nr 46: `value` is out.
pub const EVENT_GET: Ioctl<SemaphoreArg> = Ioctl::pointer(IOC_READ | IOC_WRITE, 46, "NEURON_IOCTL_EVENT_GET");

/// `struct neuron_ioctl_semaphore`, also `neuron_ioctl_event`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct SemaphoreArg {
    /// NeuronCore index: `E2BIG` past the device's cores for a semaphore, not
    /// checked for an event. Driver: neuron_cdev.c, `ncdev_semaphore_ioctl`.
    pub nc_id: u32,
    /// Semaphore or event index; 256 or more is `EINVAL`.
    pub semaphore_index: u32,
    /// Value to add, subtract or set; out for reads.
    pub value: u32,
}
