//! The platform seam: small traits, one job each, in the spirit of embedded-hal 1.0.
//!
//! Core touches hardware only through these. A platform implements the ones it
//! needs on its own types; core takes them as generic parameters, so nothing
//! is dynamically dispatched on the harvest path.
//!
//! # For the core
//!
//! Everything a trait returns is device input unless documented as platform
//! configuration: a ring slot's bytes or a register read may be anything. Only
//! the platform's own failures come back as `Err`, and core turns each into an
//! [`NrtStatus`] and an event of the layer that made the call.
//!
//! # Where this sits
//!
//! This module depends on `status` only, so every layer depends on it and it
//! on none; a test checks the module graph has no cycle. A trait that carries
//! a layer's type lives beside that layer or is generic over it, as
//! [`EventSink<E>`], `counters::CounterSink` and `exec::ExecDevice` are.
//!
//! # For platform authors
//!
//! - Implementations must not block: a harvest step is non-blocking by contract,
//!   completion-engine seed §1. [`Delay`] is the one trait that is *meant* to wait.
//! - Reads of device-written memory ([`NqRings::read_slot`], [`DeviceMemory::copy_out`])
//!   must have Acquire semantics with respect to the device's writes; writes that
//!   release work to the device ([`Registers::write32`] of a doorbell,
//!   [`NqRings::write_head`]) must be preceded by a Release fence. [`Fence`] lets a
//!   controller add cache maintenance there.
//! - Each trait has a blanket `impl for &mut T`, so a platform can lend itself out.
//! - What a platform may lack has a defined answer in default methods: no
//!   collectives engine, no fault probes, no streamed outputs, the plain
//!   Release fence. The platform still writes the empty impl, so lacking one
//!   is a decision visible in its code.

use crate::status::{NrtError, NrtStatus};

/// What went wrong in a platform call, for the core to classify.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum ErrorKind {
    /// An offset or index outside the mapped window or table.
    OutOfRange,
    /// The resource is not mapped or not bound.
    NotMapped,
    /// The operating system or transport refused the operation.
    Io,
    /// Anything else.
    Other,
}

/// A platform error: anything that can say what kind of failure it is.
pub trait Error: core::fmt::Debug {
    /// The kind of failure, for the core.
    fn kind(&self) -> ErrorKind;
}

impl Error for ErrorKind {
    fn kind(&self) -> ErrorKind {
        *self
    }
}

/// The error type of a trait's fallible methods.
pub trait ErrorType {
    /// The platform's error type.
    type Error: Error;
}

impl<T: ErrorType + ?Sized> ErrorType for &mut T {
    type Error = T::Error;
}

/// 32-bit register access at BAR offsets: `al_reg_write32`.
///
/// Used for the DMA tail-increment doorbell and the top-SP host trigger,
/// descriptor-handoff seed §4.1, §4.2.
pub trait Registers: ErrorType {
    /// Read the 32-bit register at byte offset `offset` of the BAR.
    fn read32(&mut self, offset: u64) -> Result<u32, Self::Error>;
    /// Write the 32-bit register at byte offset `offset` of the BAR.
    fn write32(&mut self, offset: u64, value: u32) -> Result<(), Self::Error>;
}

impl<T: Registers + ?Sized> Registers for &mut T {
    fn read32(&mut self, offset: u64) -> Result<u32, Self::Error> {
        T::read32(self, offset)
    }
    fn write32(&mut self, offset: u64, value: u32) -> Result<(), Self::Error> {
        T::write32(self, offset, value)
    }
}

/// Memory of the notification-queue rings, as the device writes it.
///
/// Rings are named by `(core, nq)`: the physical core of the logical core and
/// the runtime's NQ index, `ens_nq[]`, `seed-vs-driver.md` point 4. Ring
/// sizes are configuration the harvest's `nq::Notifications` holds.
pub trait NqRings: ErrorType {
    /// Copy the 16-byte slot at byte offset `offset` of ring `(core, nq)` into
    /// `out`, with Acquire ordering.
    fn read_slot(&mut self, core: u8, nq: u8, offset: u32, out: &mut [u8; 16]) -> Result<(), Self::Error>;

    /// Write the ring's HEAD register, the read pointer in bytes, handing
    /// consumed slots back.
    fn write_head(&mut self, core: u8, nq: u8, head: u32) -> Result<(), Self::Error>;
}

impl<T: NqRings + ?Sized> NqRings for &mut T {
    fn read_slot(&mut self, core: u8, nq: u8, offset: u32, out: &mut [u8; 16]) -> Result<(), Self::Error> {
        T::read_slot(self, core, nq, offset, out)
    }
    fn write_head(&mut self, core: u8, nq: u8, head: u32) -> Result<(), Self::Error> {
        T::write_head(self, core, nq, head)
    }
}

/// Read of an INTC error-trigger cause register, `aws_hal_intc_read_cause`.
pub trait IntcCause: ErrorType {
    /// The cause register of `line` in error-trigger `block` of physical core `core`.
    fn read_cause(&mut self, core: u8, block: u32, line: u32) -> Result<u32, Self::Error>;
}

impl<T: IntcCause + ?Sized> IntcCause for &mut T {
    fn read_cause(&mut self, core: u8, block: u32, line: u32) -> Result<u32, Self::Error> {
        T::read_cause(self, core, block, line)
    }
}

/// A monotonic clock in nanoseconds.
///
/// libnrt uses `CLOCK_REALTIME`, which jumps; every implementation here must
/// be monotonic.
pub trait Clock {
    /// Nanoseconds since an arbitrary, fixed origin; never decreases.
    fn now_ns(&self) -> u64;
}

impl<T: Clock + ?Sized> Clock for &mut T {
    fn now_ns(&self) -> u64 {
        T::now_ns(self)
    }
}

/// The one waiting primitive, between the polls of the sync driver and the
/// completion-handle wait.
pub trait Delay {
    /// Wait about `us` microseconds, spinning, yielding or sleeping.
    fn delay_us(&mut self, us: u32);
}

impl<T: Delay + ?Sized> Delay for &mut T {
    fn delay_us(&mut self, us: u32) {
        T::delay_us(self, us)
    }
}

/// The per-inference kickoff semaphore, descriptor-handoff seed §4.3.
pub trait Semaphore: ErrorType {
    /// Add `value` to semaphore `index` of NeuronCore `nc`.
    fn increment(&mut self, nc: u32, index: u32, value: u32) -> Result<(), Self::Error>;
}

impl<T: Semaphore + ?Sized> Semaphore for &mut T {
    fn increment(&mut self, nc: u32, index: u32, value: u32) -> Result<(), Self::Error> {
        T::increment(self, nc, index, value)
    }
}

/// Device-memory staging, `dmem_buf_copyin` and `dmem_buf_copyout`, and the
/// DGE accessors' reads and writes.
pub trait DeviceMemory: ErrorType {
    /// Copy `data` to device address `addr`.
    fn copy_in(&mut self, addr: u64, data: &[u8]) -> Result<(), Self::Error>;
    /// Copy device memory at `addr` into `out`, with Acquire ordering.
    fn copy_out(&mut self, addr: u64, out: &mut [u8]) -> Result<(), Self::Error>;
}

impl<T: DeviceMemory + ?Sized> DeviceMemory for &mut T {
    fn copy_in(&mut self, addr: u64, data: &[u8]) -> Result<(), Self::Error> {
        T::copy_in(self, addr, data)
    }
    fn copy_out(&mut self, addr: u64, out: &mut [u8]) -> Result<(), Self::Error> {
        T::copy_out(self, addr, out)
    }
}

/// Status of the collectives proxy tasks, `enc_check_proxy_*_task_status`.
///
/// `Ok(true)` when done, `Ok(false)` while pending, `Err` when it failed: the
/// harvest finalizes with that status, [`NrtError::failed`] for none. Each
/// method defaults to done, the answer without a collectives engine.
pub trait CollectivesProxy {
    /// The collectives barrier of physical core `core`.
    fn barrier_status(&mut self, core: u8) -> Result<bool, NrtError> {
        let _ = core;
        Ok(true)
    }
    /// The network proxy of physical core `core`.
    fn network_status(&mut self, core: u8) -> Result<bool, NrtError> {
        let _ = core;
        Ok(true)
    }
}

impl<T: CollectivesProxy + ?Sized> CollectivesProxy for &mut T {
    fn barrier_status(&mut self, core: u8) -> Result<bool, NrtError> {
        T::barrier_status(self, core)
    }
    fn network_status(&mut self, core: u8) -> Result<bool, NrtError> {
        T::network_status(self, core)
    }
}

/// Hardware fault probes consulted when a core timed out, completion-engine
/// seed §4: HBM UE, DMA abort, collectives, else HANG_ON_COMPUTE.
///
/// The harvest asks them in that order, one core at a time, and stops at the
/// first that answers, G-TIMEOUT-CLASS; never on a clean run or an overflow.
/// Each method defaults to no fault, the answer of a platform that cannot probe.
pub trait FaultProbe {
    /// `exec_check_hbm_uncorrectable`: 1201 for an unrepairable HBM UE, 1205
    /// for a repairable one, `None` by default.
    fn hbm_uncorrectable(&mut self, core: u8) -> Option<NrtStatus> {
        let _ = core;
        None
    }
    /// `true` when a DMA engine of the core aborted; `false` by default.
    fn dma_aborted(&mut self, core: u8) -> bool {
        let _ = core;
        false
    }
    /// `true` when the core is stuck in a collective operation, waiting for
    /// notifications that never came. The default `false` is right without a
    /// collectives engine, G-COLL-PROBE.
    fn collectives_stuck(&mut self, core: u8) -> bool {
        let _ = core;
        false
    }
}

impl<T: FaultProbe + ?Sized> FaultProbe for &mut T {
    fn hbm_uncorrectable(&mut self, core: u8) -> Option<NrtStatus> {
        T::hbm_uncorrectable(self, core)
    }
    fn dma_aborted(&mut self, core: u8) -> bool {
        T::dma_aborted(self, core)
    }
    fn collectives_stuck(&mut self, core: u8) -> bool {
        T::collectives_stuck(self, core)
    }
}

/// Where a layer's structured events go.
///
/// Generic over the event type `E`, so that the seam names no layer. A
/// platform that wants one stream implements it for every `E: Into<Event>`.
pub trait EventSink<E: ?Sized> {
    /// Take one event. Must not block.
    fn event(&mut self, event: &E);
}

impl<E: ?Sized, T: EventSink<E> + ?Sized> EventSink<E> for &mut T {
    fn event(&mut self, event: &E) {
        T::event(self, event)
    }
}

/// The streamed-output channel, completion-engine seed §3.1: resolve a device
/// var id to an output, count it, wake its waiters. `exec::TensorCompletions`
/// implements it; the default knows no output.
pub trait TensorNotify {
    /// Output `var_id` finished once more on physical core `core`: its index
    /// and new completion count, or `None` for no output of the model.
    fn tensor_completed(&mut self, core: u8, var_id: u16) -> Option<(u16, u32)> {
        let _ = (core, var_id);
        None
    }
}

impl<T: TensorNotify + ?Sized> TensorNotify for &mut T {
    fn tensor_completed(&mut self, core: u8, var_id: u16) -> Option<(u16, u32)> {
        T::tensor_completed(self, core, var_id)
    }
}

/// Memory ordering at the host/device handoff, as a platform method so that a
/// controller can add cache maintenance.
pub trait Fence {
    /// Make every earlier write visible to the device before a later doorbell.
    fn release(&mut self) {
        core::sync::atomic::fence(core::sync::atomic::Ordering::Release);
    }
}

impl<T: Fence + ?Sized> Fence for &mut T {
    fn release(&mut self) {
        T::release(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A platform with no collectives engine, fault probes or streamed outputs.
    struct Bare;
    impl CollectivesProxy for Bare {}
    impl FaultProbe for Bare {}
    impl TensorNotify for Bare {}

    #[test]
    fn an_absent_feature_answers_done_no_fault_and_no_output() {
        let mut b = Bare;
        let dev = &mut b;
        for core in [0, 1, u8::MAX] {
            assert_eq!((dev.barrier_status(core), dev.network_status(core)), (Ok(true), Ok(true)));
            assert_eq!(dev.hbm_uncorrectable(core), None);
            assert!(!dev.dma_aborted(core) && !dev.collectives_stuck(core));
            assert_eq!(dev.tensor_completed(core, 7), None);
        }
    }
}
