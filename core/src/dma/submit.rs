//! The one submit sequence: a copy and its completion marker, from a
//! transfer to the device's answer, descriptor-handoff seed §1-§5.
//!
//! [`submit`] arms the completion handle, builds the copy and the marker with
//! [`append_descs`], lowers both into rings ([`VRing::create_prings`]), asks
//! the platform where the device is ([`SubmitTarget::device_heads`], where a
//! platform also programs its queue banks), reserves, sets and stages the
//! descriptors at the queue cursors, rings the tail-increment doorbells (S2M
//! then M2S, the driver's order: udma/udma_m2m.c `udma_m2m_copy_start`
//! adds the RX queue's descriptors before the TX queue's) and waits on the handle. Every
//! failure names its step ([`SubmitError`]).

use core::fmt;

use super::build::{append_descs, Transfer, OP_COPY};
use super::doorbell::{ring_tail_inc, UdmaLayout};
use super::pring::{PRing, RingBacking};
use super::queue::{reserve_descriptors, DeviceHead, SwDmaQueue};
use super::{Bd, CompletionHandle, Direction, DmaError, DmaEvent, PlatformType, UdmaCopyWriter, VRing};
use crate::arch::Arch;
use crate::hal::{Delay, DeviceMemory, EventSink, Fence, Registers};

/// The step of [`submit`] that failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum SubmitStep {
    /// Arming the completion handle.
    Arm,
    /// Building the data copy's descriptors.
    AppendData,
    /// Building the completion marker's descriptor.
    AppendMarker,
    /// Lowering the vring into rings.
    Lower,
    /// Taking the two lowered rings.
    Rings,
    /// A step of the platform's own, named by it (its queue banks, its head
    /// registers; see [`SubmitTarget::device_heads`]).
    Platform(&'static str),
    /// Reserving slots at the queue cursors.
    Reserve,
    /// Writing the descriptors into a ring's host image.
    Set(Direction),
    /// Copying a ring's reserved slots to the device.
    Stage(Direction),
    /// Computing the tail-increment registers' offsets.
    DoorbellOffset,
    /// Ringing one direction's tail-increment doorbell.
    Doorbell(Direction),
    /// Waiting for the completion marker.
    Wait,
}

impl SubmitStep {
    /// The step as a message names it (`"append data"`, `"stage tx"`...).
    pub const fn name(self) -> &'static str {
        match self {
            SubmitStep::Arm => "arm completion handle",
            SubmitStep::AppendData => "append data",
            SubmitStep::AppendMarker => "append marker",
            SubmitStep::Lower => "lower",
            SubmitStep::Rings => "rings",
            SubmitStep::Platform(name) => name,
            SubmitStep::Reserve => "reserve",
            SubmitStep::Set(Direction::Tx) => "set tx",
            SubmitStep::Set(Direction::Rx) => "set rx",
            SubmitStep::Stage(Direction::Tx) => "stage tx",
            SubmitStep::Stage(Direction::Rx) => "stage rx",
            SubmitStep::DoorbellOffset => "doorbell offset",
            SubmitStep::Doorbell(Direction::Tx) => "doorbell tx",
            SubmitStep::Doorbell(Direction::Rx) => "doorbell rx",
            SubmitStep::Wait => "completion wait",
        }
    }
}

impl fmt::Display for SubmitStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A failed [`submit`]: the step and core's error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SubmitError {
    /// Which step failed.
    pub step: SubmitStep,
    /// Why.
    pub error: DmaError,
    /// What was rung before a [`SubmitStep::Wait`] failure (`None` for every
    /// other step): the descriptors are on the device, only the marker did not
    /// arrive, which a platform may report rather than fail on.
    pub rung: Option<Submitted>,
}

impl SubmitError {
    /// The error of `step`.
    pub const fn at(step: SubmitStep, error: DmaError) -> SubmitError {
        SubmitError { step, error, rung: None }
    }
}

impl fmt::Display for SubmitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.step, self.error)
    }
}

impl core::error::Error for SubmitError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// What to submit: one copy, its completion marker, and the queue to ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Submission {
    /// Generation (descriptor encoding, doorbell layout).
    pub arch: Arch,
    /// The copy.
    pub data: Transfer,
    /// The completion handle the marker lands on.
    pub handle: CompletionHandle,
    /// Device address of the 4-byte word the marker copies over the handle's
    /// sentinel.
    pub done_word: u64,
    /// BAR offset of the UDMA engine whose queue is rung.
    pub engine_base: u64,
    /// The queue within the engine.
    pub queue: u32,
    /// Set the write barrier (`meta_ctrl` bit 26) on the data's last M2S
    /// descriptor, so the marker cannot land before the data (the driver's own
    /// memcpy does: neuron_dma.c `ndma_memcpy_chunks`; udma/udma_m2m.c
    /// `sdma_cme_desc_word.write_barrier`).
    pub write_barrier: bool,
    /// The platform type the wait's poll budget is taken for.
    pub platform: PlatformType,
}

/// `meta_ctrl` bit 26 of an M2S descriptor: the write barrier
/// (udma/udma_m2m.c: `struct sdma_cme_desc_word`, `write_barrier`).
pub const M2S_WRITE_BARRIER: u32 = 1 << 26;

/// What [`submit`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Submitted {
    /// Descriptors built, lowered and rung in each direction (data + marker).
    pub descriptors: u32,
    /// Device addresses of the TX and RX rings.
    pub rings: (u64, u64),
    /// Depth of the TX ring.
    pub ring_depth: u32,
    /// BAR offsets of the M2S and S2M tail-increment registers.
    pub doorbells: (u64, u64),
}

/// The storage of one [`submit`]: the vring's `PAGES` pages of `PAGE`
/// descriptors per direction, the two rings' host images of `DEPTH`
/// descriptors, and room for the descriptors on their way into the rings. The
/// caller places it (stack, static, heap): core allocates nothing.
#[derive(Clone, Debug)]
pub struct SubmitBuffers<const PAGE: usize, const PAGES: usize, const DEPTH: usize> {
    tx_pages: [[Bd; PAGE]; PAGES],
    rx_pages: [[Bd; PAGE]; PAGES],
    tx_image: [Bd; DEPTH],
    rx_image: [Bd; DEPTH],
    scratch: [Bd; DEPTH],
}

impl<const PAGE: usize, const PAGES: usize, const DEPTH: usize> SubmitBuffers<PAGE, PAGES, DEPTH> {
    /// Zeroed storage.
    pub const fn new() -> Self {
        SubmitBuffers {
            tx_pages: [[Bd::ZERO; PAGE]; PAGES],
            rx_pages: [[Bd::ZERO; PAGE]; PAGES],
            tx_image: [Bd::ZERO; DEPTH],
            rx_image: [Bd::ZERO; DEPTH],
            scratch: [Bd::ZERO; DEPTH],
        }
    }
}

impl<const PAGE: usize, const PAGES: usize, const DEPTH: usize> Default for SubmitBuffers<PAGE, PAGES, DEPTH> {
    fn default() -> Self {
        Self::new()
    }
}

/// The device [`submit`] runs against: its memory (the handle, the rings'
/// backing and contents) and its registers (the doorbells), with one error
/// type.
pub trait SubmitTarget: DeviceMemory + RingBacking + Registers {
    /// Called once the rings are lowered at `tx` and `rx`, before the
    /// reservation: program the queue banks if this platform does it here, and
    /// say where the device is in each ring. A failure names the platform's
    /// own step ([`SubmitStep::Platform`]).
    ///
    /// Default: nothing to program, and the device has consumed all the queues
    /// produced ([`DeviceHead::caught_up`]).
    fn device_heads(
        &mut self,
        _plan: &Submission,
        _tx: &PRing<'_>,
        _rx: &PRing<'_>,
        txq: &SwDmaQueue,
        rxq: &SwDmaQueue,
    ) -> Result<(DeviceHead, DeviceHead), SubmitError> {
        Ok((DeviceHead::caught_up(txq), DeviceHead::caught_up(rxq)))
    }
}

/// The submit sequence, seed §1-§5: arm `plan.handle`; build the copy and
/// the marker (a 4-byte copy of `plan.done_word` over the handle); lower them
/// into rings backed by `dev`; [`SubmitTarget::device_heads`]; reserve at the
/// cursors `txq`, `rxq` (which advance); set the descriptors (the write
/// barrier on the data's last M2S descriptor when asked) and stage them; ring
/// S2M, then M2S, through `fence`; wait on the handle through `delay`. Events
/// go to `sink`.
///
/// Stops at the first failure, naming its step. The cursors stay where they
/// were when the reservation is refused or a set or stage fails (nothing was
/// handed to the device), and stay advanced past the staged slots from the
/// doorbells on (the device may have them). Allocates nothing; blocks only in
/// `delay`, at most the handle's poll budget.
pub fn submit<P, F, W, S, const PAGE: usize, const PAGES: usize, const DEPTH: usize>(
    dev: &mut P,
    fence: &mut F,
    delay: &mut W,
    sink: &mut S,
    plan: &Submission,
    (txq, rxq): (&mut SwDmaQueue, &mut SwDmaQueue),
    bufs: &mut SubmitBuffers<PAGE, PAGES, DEPTH>,
) -> Result<Submitted, SubmitError>
where
    P: SubmitTarget + ?Sized,
    F: Fence + ?Sized,
    W: Delay + ?Sized,
    S: EventSink<DmaEvent> + ?Sized,
{
    let at = |step| move |e| SubmitError::at(step, e);
    let arch = plan.arch;
    plan.handle.arm(dev).map_err(at(SubmitStep::Arm))?;
    let SubmitBuffers { tx_pages, rx_pages, tx_image, rx_image, scratch } = bufs;
    let mut vring: VRing<'_, PAGE> = VRing::new(tx_pages, rx_pages);
    let a = append_descs(&mut vring, arch, &plan.data, &mut UdmaCopyWriter).map_err(at(SubmitStep::AppendData))?;
    let marker = Transfer {
        op: OP_COPY,
        elem_count: 1,
        granule: 1,
        elem_bytes: 4,
        src: plan.done_word,
        dst: plan.handle.addr(),
    };
    let b = append_descs(&mut vring, arch, &marker, &mut UdmaCopyWriter).map_err(at(SubmitStep::AppendMarker))?;
    let n = a.tx.ndesc.saturating_add(b.tx.ndesc);
    vring.create_prings(dev, sink, tx_image, rx_image).map_err(at(SubmitStep::Lower))?;
    let (tx, rx) = vring.rings_mut().map_err(at(SubmitStep::Rings))?;
    let (th, rh) = dev.device_heads(plan, tx, rx, txq, rxq)?;
    let cursors = (*txq, *rxq);
    let (rt, rr) = reserve_descriptors(txq, rxq, th, rh, n).map_err(at(SubmitStep::Reserve))?;
    let staged = (|| {
        let too_many = DmaError::TooMany { requested: u64::from(n), max: DEPTH as u64 };
        for (ring, res, dir) in [(&mut *tx, &rt, Direction::Tx), (&mut *rx, &rr, Direction::Rx)] {
            // The first `n` slots of the lowered image, at the reserved slots.
            let bds = scratch.get_mut(..n as usize).ok_or(SubmitError::at(SubmitStep::Set(dir), too_many))?;
            let built = ring.image().get(..n as usize).ok_or(SubmitError::at(SubmitStep::Set(dir), too_many))?;
            bds.copy_from_slice(built);
            if plan.write_barrier && dir == Direction::Tx {
                if let Some(last) = a.tx.ndesc.checked_sub(1).and_then(|i| bds.get_mut(i as usize)) {
                    last.meta_ctrl.set(last.meta_ctrl.get() | M2S_WRITE_BARRIER);
                }
            }
            ring.set_descriptors(res, bds).map_err(at(SubmitStep::Set(dir)))?;
        }
        tx.stage(dev, &rt).map_err(at(SubmitStep::Stage(Direction::Tx)))?;
        rx.stage(dev, &rr).map_err(at(SubmitStep::Stage(Direction::Rx)))
    })();
    if let Err(e) = staged {
        // Nothing is staged on both rings: the reservation is handed back, so
        // the next submission takes the same slots.
        (*txq, *rxq) = cursors;
        return Err(e);
    }
    let map = UdmaLayout::of(arch);
    let (base, q) = (plan.engine_base, plan.queue);
    let doorbells = (
        map.tail_inc_offset(base, q, Direction::Tx).map_err(at(SubmitStep::DoorbellOffset))?,
        map.tail_inc_offset(base, q, Direction::Rx).map_err(at(SubmitStep::DoorbellOffset))?,
    );
    let done = Submitted { descriptors: n, rings: (tx.dev_addr(), rx.dev_addr()), ring_depth: tx.depth(), doorbells };
    for dir in [Direction::Rx, Direction::Tx] {
        ring_tail_inc(dev, fence, arch, base, q, dir, n).map_err(at(SubmitStep::Doorbell(dir)))?;
    }
    plan.handle.wait(dev, delay, sink, n, plan.platform).map_err(|e| SubmitError {
        step: SubmitStep::Wait,
        error: e,
        rung: Some(done),
    })?;
    Ok(done)
}

#[cfg(test)]
mod tests;
