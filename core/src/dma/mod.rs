//! The descriptor handoff: how the host builds, lowers, relocates, reserves and
//! rings DMA descriptors, and how it waits for a staging copy,
//! descriptor-handoff seed §1-§5.
//!
//! One lowering chain, one module per stage:
//!
//! ```text
//!  build, §1        vring, §2              pring, §2            queue, §3        doorbell, §4
//!  Transfer ──append──> VRing ──create_prings──> PRing ──reserve/set──> SwDmaQueue ──> tail-inc CSR  (A)
//!  op dispatch,        TX/RX blocks,  lower:    32-byte ring,  stage   cursors,         top-SP trigger (B)
//!  granule fold        pages of BDs   pad, check device copy          ring-id laps      kickoff sema   (C)
//!                       │
//!                       └─ addr_rewrite, §2.4: relocate buf_ptr (+8) in a window
//!
//!  completion handle, §5.1: arm 0xABCDEF01, poll, re-arm (0 then sentinel)
//! ```
//!
//! - [`bd`]: the 16-byte [`Bd`] in the driver's UDMA layout.
//! - [`build`]: the op dispatch, the element fold by the packetization
//!   granule, the TX and RX packets.
//! - [`vring`]: [`VRing`], paged BD storage the caller provides; [`addr_rewrite`].
//! - [`pring`]: [`PRing`], ring allocation and binding, lowering with padding and
//!   the `ndesc actual/expected` check, semaphore selection.
//! - [`queue`]: [`SwDmaQueue`] cursors: reserve and set, with ring-id laps.
//! - [`doorbell`]: the three doorbells, kept apart, and the per-arch UDMA table.
//! - [`handle`]: the sentinel-polled completion handle.
//!
//! Nothing here allocates or panics: every length, count, index, direction, op
//! and address may come from a NEFF or a caller, and a bad one gets a
//! [`DmaError`] instead of an out-of-bounds write.

use core::fmt;

use crate::hal::ErrorKind;
use crate::status::NrtStatus;
use crate::trace::{Level, Traced};

pub mod bd;
pub mod build;
pub mod doorbell;
pub mod handle;
pub mod pring;
pub mod queue;
pub mod submit;
pub mod vring;

pub use bd::{Bd, LenCtrl};
pub use build::{DescWriter, DmaOp, OpPath, Packets, Transfer, UdmaCopyWriter};
pub use doorbell::{UdmaLayout, HOST_TRIGGER_OFFSET, TOPSP_ENGINE};
pub use handle::{CompletionHandle, PlatformType, COMPLETION_SENTINEL};
pub use pring::{PRing, RingBacking, SemaTable};
pub use queue::{DeviceHead, Reservation, SwDmaQueue};
pub use submit::{submit, Submission, SubmitBuffers, SubmitError, SubmitStep, SubmitTarget, Submitted};
pub use vring::{addr_rewrite, DescBlock, Relocation, VRing};

/// A DMA direction.
///
/// The seed encodes it two ways: [`Direction::from_alloc_dir`], §2.1, and
/// [`Direction::from_doorbell_dir`], §4.1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Direction {
    /// TX, memory to stream, M2S: the READ side, bumped through TDRTP_inc.
    Tx,
    /// RX, stream to memory, S2M: the WRITE side, bumped through RDRTP_inc.
    Rx,
}

/// `dma_pring_alloc`'s direction value that binds the TX slot, seed §2.1.
pub const ALLOC_DIR_TX: u32 = 1;
/// `dma_pring_alloc`'s direction value that binds the RX slot, seed §2.1.
pub const ALLOC_DIR_RX: u32 = 2;

impl Direction {
    /// The direction of a `dma_pring_alloc` value: 1 TX, 2 RX; anything else,
    /// where the seed asserts, is [`DmaError::BadDirection`].
    pub const fn from_alloc_dir(dir: u32) -> Result<Direction, DmaError> {
        match dir {
            ALLOC_DIR_TX => Ok(Direction::Tx),
            ALLOC_DIR_RX => Ok(Direction::Rx),
            d => Err(DmaError::BadDirection(d)),
        }
    }

    /// The direction of a `get_dma_queue_tail_inc_offset` value: nonzero TX,
    /// 0 RX, seed §4.1.
    pub const fn from_doorbell_dir(dir: u32) -> Direction {
        if dir != 0 {
            Direction::Tx
        } else {
            Direction::Rx
        }
    }

    /// `"tx"` or `"rx"`.
    pub const fn name(self) -> &'static str {
        match self {
            Direction::Tx => "tx",
            Direction::Rx => "rx",
        }
    }
}

/// Why a descriptor-handoff operation was refused.
///
/// Each variant maps to an `NRT_STATUS` through [`DmaError::status`]:
/// - bad NEFF or caller input is `NRT_INVALID`, as the SDK documents;
/// - running out of caller-provided capacity is `NRT_RESOURCE`, as libnrt's
///   failed `calloc` is;
/// - a ring with no room until the device consumes more is `NRT_QUEUE_FULL`,
///   worth a retry, G-DMA-AVAIL;
/// - the completion handle's poll budget running out is `NRT_TIMEOUT`;
/// - a platform call failing is `NRT_FAILURE`: the transport's failure, not
///   evidence of a device fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum DmaError {
    /// The vring is sealed: no ring allocation, seed §2.1, and no append.
    Sealed,
    /// A ring-allocation direction other than TX or RX, seed §2.1.
    BadDirection(u32),
    /// A template op outside `0..=5`, seed §1.2.
    BadOp(u32),
    /// The descriptor writer has no encoding for this op, G-DMA-WRITER.
    UnsupportedOp(u32),
    /// The packetization granule is 0, where seed §1.3 would divide by zero.
    ZeroGranule,
    /// The element count is not a multiple of the granule, seed §1.3.
    GranuleRemainder {
        /// Elements requested.
        elem_count: u32,
        /// The granule.
        granule: u32,
    },
    /// More than allowed: descriptors per packet, a reservation larger than the
    /// ring, a tail-increment above 24 bits.
    TooMany {
        /// What was asked for.
        requested: u64,
        /// The limit.
        max: u64,
    },
    /// A BD byte length outside `1..=65536`, driver §5.
    BadLength(u64),
    /// A BD address, `base + i * len`, would overflow u64.
    AddressOverflow,
    /// The vring's pages cannot hold the descriptors.
    VringFull {
        /// Descriptors the block would hold.
        needed: u64,
        /// What its pages hold.
        capacity: u64,
    },
    /// A ring depth of 0, above the UDMA maximum, or larger than its storage.
    BadRingDepth(u64),
    /// No ring is bound in this direction, seed §3.2.
    NotBound(Direction),
    /// Lowering copied a different number of BDs than the block holds, seed §2.3.
    CountMismatch {
        /// The direction lowered.
        dir: Direction,
        /// BDs copied.
        actual: u32,
        /// BDs the block says it holds.
        expected: u32,
    },
    /// A relocation window that does not fit in u64, where seed §2.4 would wrap.
    WindowOverflow,
    /// Semaphore selection on a ring whose type is not 2, seed §3.4.
    BadRingType(u32),
    /// A queue cursor or reservation that does not fit its ring.
    BadCursor,
    /// A device head pointer that cannot be: outside the ring, a ring id above 3,
    /// or ahead of the producer, G-DMA-AVAIL.
    BadHead {
        /// The ring.
        dir: Direction,
        /// The head's index.
        idx: u32,
        /// The head's ring id.
        ring_id: u8,
    },
    /// A reservation larger than the slots the device has consumed, G-DMA-AVAIL:
    /// the rest hold descriptors in flight.
    RingFull {
        /// The ring.
        dir: Direction,
        /// Slots asked for.
        requested: u32,
        /// Slots free.
        available: u32,
    },
    /// A host-only [`VRing::addr_rewrite`] of a block already lowered into a
    /// ring, whose copies would keep the old addresses.
    /// [`VRing::relocate`] moves them too, G-DMA-RELOC-LOWERED.
    RelocateAfterLower(Direction),
    /// A UDMA queue index at or above [`doorbell::UDMA_QUEUES`].
    BadQueue(u32),
    /// A register this arch does not have.
    Unsupported,
    /// The completion handle still read the sentinel after every poll, seed §5.1.
    Timeout,
    /// A platform call failed.
    Platform(ErrorKind),
}

impl DmaError {
    /// The `NRT_STATUS` this error is reported as.
    pub const fn status(&self) -> NrtStatus {
        match self {
            DmaError::VringFull { .. } => NrtStatus::Resource,
            DmaError::RingFull { .. } => NrtStatus::QueueFull,
            DmaError::Timeout => NrtStatus::Timeout,
            DmaError::Platform(_) => NrtStatus::Failure,
            _ => NrtStatus::Invalid,
        }
    }

    /// The error of a platform call.
    pub fn platform<E: crate::hal::Error>(e: E) -> DmaError {
        DmaError::Platform(e.kind())
    }
}

impl core::error::Error for DmaError {}

impl fmt::Display for DmaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            DmaError::Sealed => write!(f, "the vring is sealed"),
            DmaError::BadDirection(d) => write!(f, "bad ring direction {d} (1 = tx, 2 = rx)"),
            DmaError::BadOp(op) => write!(f, "bad descriptor op {op} (0..=5)"),
            DmaError::UnsupportedOp(op) => write!(f, "the descriptor writer has no encoding for op {op}"),
            DmaError::ZeroGranule => write!(f, "packetization granule is 0"),
            DmaError::GranuleRemainder { elem_count, granule } => {
                write!(f, "element count {elem_count} is not a multiple of the granule {granule}")
            }
            DmaError::TooMany { requested, max } => write!(f, "{requested} requested, at most {max} allowed"),
            DmaError::BadLength(l) => write!(f, "descriptor length {l} outside 1..=65536"),
            DmaError::AddressOverflow => write!(f, "descriptor address overflows u64"),
            DmaError::VringFull { needed, capacity } => {
                write!(f, "vring pages hold {capacity} descriptors, {needed} needed")
            }
            DmaError::BadRingDepth(d) => write!(f, "bad ring depth {d}"),
            DmaError::NotBound(dir) => write!(f, "no {} ring bound", dir.name()),
            DmaError::CountMismatch { dir, actual, expected } => {
                write!(f, "{} vring is copied to pring. ndesc={actual}/{expected}", dir.name())
            }
            DmaError::WindowOverflow => write!(f, "relocation window overflows u64"),
            DmaError::BadRingType(t) => write!(f, "ring type {t}, expected 2"),
            DmaError::BadCursor => write!(f, "queue cursor outside its ring"),
            DmaError::BadHead { dir, idx, ring_id } => write!(
                f,
                "{} device head (index {idx}, ring id {ring_id}) is outside the ring or ahead of the producer",
                dir.name()
            ),
            DmaError::RingFull { dir, requested, available } => write!(
                f,
                "{} ring full: {requested} descriptors requested, {available} free until the device consumes more",
                dir.name()
            ),
            DmaError::RelocateAfterLower(dir) => write!(
                f,
                "the {} block is already lowered: relocate with the device (VRing::relocate) so its ring moves too",
                dir.name()
            ),
            DmaError::BadQueue(q) => write!(f, "UDMA queue {q} out of range"),
            DmaError::Unsupported => write!(f, "register not present on this arch"),
            DmaError::Timeout => write!(f, "Error: DMA completion timeout"),
            DmaError::Platform(k) => write!(f, "platform call failed: {k:?}"),
        }
    }
}

/// A descriptor-handoff event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum DmaEvent {
    /// A vring block was lowered into its ring, counts equal, seed §2.3.
    Lowered {
        /// The direction lowered.
        dir: Direction,
        /// BDs copied.
        ndesc: u32,
        /// The ring's depth; the rest is zero padding.
        depth: u32,
    },
    /// Lowering copied `actual` BDs where the block holds `expected`.
    NdescMismatch {
        /// The direction lowered.
        dir: Direction,
        /// BDs copied.
        actual: u32,
        /// BDs the block says it holds.
        expected: u32,
    },
    /// `"Failed to allocate static tx ring"`, or rx.
    RingAllocFailed {
        /// The direction.
        dir: Direction,
        /// What failed.
        kind: ErrorKind,
    },
    /// `"Failed to write descritpors to static tx ring"`, sic, or rx.
    RingWriteFailed {
        /// The direction.
        dir: Direction,
        /// What failed.
        kind: ErrorKind,
    },
    /// `"DMA completed %u descriptors"`, seed §5.1.
    Completed {
        /// The handle's descriptor count, `handle_idx`.
        descriptors: u32,
        /// Polls that read the sentinel before completion.
        polls: u64,
    },
    /// `"Error: DMA completion timeout"` after `loops` polls, seed §5.1.
    CompletionTimeout {
        /// Device address of the handle.
        handle: u64,
        /// The handle's descriptor count.
        descriptors: u32,
        /// The poll budget that ran out.
        loops: u64,
    },
    /// Reading or re-arming the completion handle failed.
    HandleIoFailed {
        /// Device address of the handle.
        handle: u64,
        /// What failed.
        kind: ErrorKind,
    },
}

impl DmaEvent {
    /// How loud the event is.
    pub fn level(&self) -> Level {
        match self {
            DmaEvent::Lowered { .. } | DmaEvent::Completed { .. } => Level::Debug,
            _ => Level::Error,
        }
    }

    /// A short machine-friendly name.
    pub fn kind(&self) -> &'static str {
        match self {
            DmaEvent::Lowered { .. } => "dma_lowered",
            DmaEvent::NdescMismatch { .. } => "dma_ndesc_mismatch",
            DmaEvent::RingAllocFailed { .. } => "dma_ring_alloc_failed",
            DmaEvent::RingWriteFailed { .. } => "dma_ring_write_failed",
            DmaEvent::Completed { .. } => "dma_completed",
            DmaEvent::CompletionTimeout { .. } => "dma_completion_timeout",
            DmaEvent::HandleIoFailed { .. } => "dma_handle_io_failed",
        }
    }
}

impl Traced for DmaEvent {
    fn level(&self) -> Level {
        DmaEvent::level(self)
    }
    fn kind(&self) -> &'static str {
        DmaEvent::kind(self)
    }
}

impl fmt::Display for DmaEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            DmaEvent::Lowered { dir, ndesc, depth } => {
                write!(f, "{} vring is copied to pring. ndesc={ndesc}/{ndesc} (ring depth {depth})", dir.name())
            }
            DmaEvent::NdescMismatch { dir, actual, expected } => {
                write!(f, "{} vring is copied to pring. ndesc={actual}/{expected}: count mismatch", dir.name())
            }
            DmaEvent::RingAllocFailed { dir, kind } => {
                write!(f, "Failed to allocate static {} ring ({kind:?})", dir.name())
            }
            DmaEvent::RingWriteFailed { dir, kind } => {
                write!(f, "Failed to write descritpors to static {} ring ({kind:?})", dir.name())
            }
            DmaEvent::Completed { descriptors, polls } => {
                write!(f, "DMA completed {descriptors} descriptors (after {polls} polls)")
            }
            DmaEvent::CompletionTimeout { handle, descriptors, loops } => write!(
                f,
                "Error: DMA completion timeout (handle 0x{handle:x}, {descriptors} descriptors, {loops} polls)"
            ),
            DmaEvent::HandleIoFailed { handle, kind } => {
                write!(f, "completion handle 0x{handle:x}: device memory access failed ({kind:?})")
            }
        }
    }
}

#[cfg(any(kani, test))]
mod proofs;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directions_follow_the_seed() {
        assert_eq!(Direction::from_alloc_dir(1), Ok(Direction::Tx));
        assert_eq!(Direction::from_alloc_dir(2), Ok(Direction::Rx));
        assert_eq!(Direction::from_alloc_dir(0), Err(DmaError::BadDirection(0)));
        assert_eq!(Direction::from_alloc_dir(3), Err(DmaError::BadDirection(3)));
        assert_eq!(Direction::from_doorbell_dir(7), Direction::Tx);
        assert_eq!(Direction::from_doorbell_dir(0), Direction::Rx);
    }

    #[test]
    fn statuses() {
        assert_eq!(DmaError::Sealed.status(), NrtStatus::Invalid);
        assert_eq!(DmaError::ZeroGranule.status().code(), 2);
        assert_eq!(DmaError::VringFull { needed: 2, capacity: 1 }.status().code(), 4);
        assert_eq!(DmaError::Timeout.status().code(), 5);
        assert_eq!(DmaError::Platform(ErrorKind::Io).status(), NrtStatus::Failure);
    }

    #[test]
    fn events_have_names_levels_and_messages() {
        extern crate std;
        use std::string::ToString;
        let e = DmaEvent::CompletionTimeout { handle: 0x40, descriptors: 3, loops: 1200 };
        assert_eq!(e.kind(), "dma_completion_timeout");
        assert_eq!(e.level(), Level::Error);
        assert!(e.to_string().contains("DMA completion timeout"));
        let e = DmaEvent::NdescMismatch { dir: Direction::Tx, actual: 3, expected: 4 };
        assert!(e.to_string().contains("ndesc=3/4"));
        assert_eq!(DmaEvent::Completed { descriptors: 1, polls: 0 }.level(), Level::Debug);
    }

    /// Every error names the object and the reason, with its values.
    #[test]
    fn every_error_message_names_what_and_why() {
        extern crate std;
        use std::string::ToString;
        let (tx, rx) = (Direction::Tx, Direction::Rx);
        assert_eq!((tx.name(), rx.name()), ("tx", "rx"));
        let cases: [(DmaError, &str); 24] = [
            (DmaError::Sealed, "the vring is sealed"),
            (DmaError::BadDirection(3), "bad ring direction 3 (1 = tx, 2 = rx)"),
            (DmaError::BadOp(9), "bad descriptor op 9 (0..=5)"),
            (DmaError::UnsupportedOp(5), "the descriptor writer has no encoding for op 5"),
            (DmaError::ZeroGranule, "packetization granule is 0"),
            (
                DmaError::GranuleRemainder { elem_count: 10, granule: 4 },
                "element count 10 is not a multiple of the granule 4",
            ),
            (DmaError::TooMany { requested: 5, max: 4 }, "5 requested, at most 4 allowed"),
            (DmaError::BadLength(0), "descriptor length 0 outside 1..=65536"),
            (DmaError::AddressOverflow, "descriptor address overflows u64"),
            (DmaError::VringFull { needed: 9, capacity: 8 }, "vring pages hold 8 descriptors, 9 needed"),
            (DmaError::BadRingDepth(0), "bad ring depth 0"),
            (DmaError::NotBound(rx), "no rx ring bound"),
            (DmaError::CountMismatch { dir: tx, actual: 3, expected: 4 }, "tx vring is copied to pring. ndesc=3/4"),
            (DmaError::WindowOverflow, "relocation window overflows u64"),
            (DmaError::BadRingType(1), "ring type 1, expected 2"),
            (DmaError::BadCursor, "queue cursor outside its ring"),
            (
                DmaError::BadHead { dir: rx, idx: 7, ring_id: 2 },
                "rx device head (index 7, ring id 2) is outside the ring or ahead of the producer",
            ),
            (
                DmaError::RingFull { dir: tx, requested: 4, available: 1 },
                "tx ring full: 4 descriptors requested, 1 free until the device consumes more",
            ),
            (
                DmaError::RelocateAfterLower(rx),
                "the rx block is already lowered: relocate with the device (VRing::relocate) so its ring moves too",
            ),
            (DmaError::BadQueue(16), "UDMA queue 16 out of range"),
            (DmaError::Unsupported, "register not present on this arch"),
            (DmaError::Timeout, "Error: DMA completion timeout"),
            (DmaError::Platform(ErrorKind::Io), "platform call failed: Io"),
            (DmaError::BadCursor, "queue cursor outside its ring"),
        ];
        for (e, want) in cases {
            assert_eq!(e.to_string(), want);
        }
        let statuses = [
            (DmaError::RingFull { dir: tx, requested: 1, available: 0 }, 7),
            (DmaError::BadHead { dir: tx, idx: 0, ring_id: 0 }, 2),
            (DmaError::RelocateAfterLower(tx), 2),
            (DmaError::BadCursor, 2),
        ];
        for (e, code) in statuses {
            assert_eq!(e.status().code(), code, "{e}");
        }
        let events: [(DmaEvent, &str, &str, Level); 8] = [
            (
                DmaEvent::Lowered { dir: tx, ndesc: 5, depth: 16 },
                "dma_lowered",
                "tx vring is copied to pring. ndesc=5/5 (ring depth 16)",
                Level::Debug,
            ),
            (
                DmaEvent::NdescMismatch { dir: rx, actual: 3, expected: 4 },
                "dma_ndesc_mismatch",
                "rx vring is copied to pring. ndesc=3/4: count mismatch",
                Level::Error,
            ),
            (
                DmaEvent::RingAllocFailed { dir: tx, kind: ErrorKind::Other },
                "dma_ring_alloc_failed",
                "Failed to allocate static tx ring (Other)",
                Level::Error,
            ),
            (
                DmaEvent::RingWriteFailed { dir: rx, kind: ErrorKind::Io },
                "dma_ring_write_failed",
                "Failed to write descritpors to static rx ring (Io)",
                Level::Error,
            ),
            (
                DmaEvent::Completed { descriptors: 3, polls: 2 },
                "dma_completed",
                "DMA completed 3 descriptors (after 2 polls)",
                Level::Debug,
            ),
            (
                DmaEvent::CompletionTimeout { handle: 0x40, descriptors: 3, loops: 1200 },
                "dma_completion_timeout",
                "Error: DMA completion timeout (handle 0x40, 3 descriptors, 1200 polls)",
                Level::Error,
            ),
            (
                DmaEvent::HandleIoFailed { handle: 0x80, kind: ErrorKind::NotMapped },
                "dma_handle_io_failed",
                "completion handle 0x80: device memory access failed (NotMapped)",
                Level::Error,
            ),
            (
                DmaEvent::Lowered { dir: rx, ndesc: 0, depth: 1 },
                "dma_lowered",
                "rx vring is copied to pring. ndesc=0/0 (ring depth 1)",
                Level::Debug,
            ),
        ];
        for (e, kind, text, level) in events {
            assert_eq!((e.kind(), e.to_string().as_str(), e.level()), (kind, text, level));
        }
    }

    /// The whole chain once: build, lower, reserve + set + stage, doorbell A, wait.
    #[test]
    fn end_to_end() {
        use crate::arch::Arch;
        use crate::hal::{Delay, DeviceMemory, ErrorType, EventSink, Fence, Registers};

        #[derive(Default)]
        struct Plat {
            mem: std::collections::BTreeMap<u64, u8>,
            regs: Vec<(u64, u32)>,
            next_ring: u64,
            events: Vec<DmaEvent>,
        }
        impl ErrorType for Plat {
            type Error = ErrorKind;
        }
        impl RingBacking for Plat {
            fn alloc_ring(&mut self, _: Direction, depth: u32) -> Result<u64, ErrorKind> {
                self.next_ring += 0x1_0000;
                assert!(u64::from(depth) * 16 <= 0x1_0000);
                Ok(self.next_ring)
            }
        }
        impl DeviceMemory for Plat {
            fn copy_in(&mut self, addr: u64, data: &[u8]) -> Result<(), ErrorKind> {
                for (i, b) in data.iter().enumerate() {
                    self.mem.insert(addr + i as u64, *b);
                }
                Ok(())
            }
            fn copy_out(&mut self, addr: u64, out: &mut [u8]) -> Result<(), ErrorKind> {
                for (i, b) in out.iter_mut().enumerate() {
                    *b = self.mem.get(&(addr + i as u64)).copied().unwrap_or(0);
                }
                Ok(())
            }
        }
        impl Registers for Plat {
            fn read32(&mut self, _: u64) -> Result<u32, ErrorKind> {
                Ok(0)
            }
            fn write32(&mut self, off: u64, v: u32) -> Result<(), ErrorKind> {
                self.regs.push((off, v));
                // The "device" completes the staged copy when rung.
                self.copy_in(0x900, &1u32.to_le_bytes())
            }
        }
        impl Fence for Plat {}
        impl Delay for Plat {
            fn delay_us(&mut self, _: u32) {}
        }
        impl EventSink<DmaEvent> for Plat {
            fn event(&mut self, e: &DmaEvent) {
                self.events.push(*e);
            }
        }

        let mut p = Plat::default();
        let mut sink = Vec::new();
        struct VecSink<'a>(&'a mut Vec<DmaEvent>);
        impl EventSink<DmaEvent> for VecSink<'_> {
            fn event(&mut self, e: &DmaEvent) {
                self.0.push(*e);
            }
        }

        // Build a 4-BD copy into a vring with 2-BD pages, lower it into 8-deep rings.
        let mut txp = [[Bd::ZERO; 2]; 2];
        let mut rxp = [[Bd::ZERO; 2]; 2];
        let mut v: VRing<'_, 2> = VRing::new(&mut txp, &mut rxp);
        let t = Transfer { op: 0, elem_count: 64, granule: 16, elem_bytes: 4, src: 0xA000, dst: 0xB000 };
        let pk = build::append_descs(&mut v, Arch::Sunda, &t, &mut UdmaCopyWriter).unwrap();
        assert_eq!(pk.tx.ndesc, 4);
        v.addr_rewrite(&Relocation::new(0xA000, 0x1000, 0xC000).unwrap()).unwrap();
        let (mut ti, mut ri) = ([Bd::ZERO; 8], [Bd::ZERO; 8]);
        v.create_prings(&mut p, &mut VecSink(&mut sink), &mut ti, &mut ri).unwrap();
        let (tx, rx) = v.rings_mut().unwrap();
        assert_eq!(tx.image()[0].addr(), 0xC000);
        assert_eq!(tx.image()[3].addr(), 0xC000 + 3 * 64);

        // Per-inference BDs through the cursors, staged, then doorbell A and the wait.
        let mut txq = SwDmaQueue::for_ring(tx).unwrap();
        let mut rxq = SwDmaQueue::for_ring(rx).unwrap();
        let start = DeviceHead::START;
        let (rt, rr) = queue::reserve_descriptors(&mut txq, &mut rxq, start, start, 2).unwrap();
        let two = [tx.image()[0], tx.image()[1]];
        tx.set_descriptors(&rt, &two).unwrap();
        rx.set_descriptors(&rr, &two).unwrap();
        tx.stage(&mut p, &rt).unwrap();
        let h = CompletionHandle::new(0x900);
        h.arm(&mut p).unwrap();
        let mut f = Plat::default();
        doorbell::ring_tail_inc(&mut p, &mut f, Arch::Sunda, 0x3000_0000, 0, Direction::Tx, 2).unwrap();
        assert_eq!(p.regs, [(0x3000_1038, 2)]);
        let mut d = Plat::default();
        h.wait(&mut p, &mut d, &mut VecSink(&mut sink), 1, PlatformType::HARDWARE).unwrap();
        assert!(sink.iter().any(|e| e.kind() == "dma_completed"));
        assert_eq!(sink.iter().filter(|e| e.kind() == "dma_lowered").count(), 2);
    }
}
