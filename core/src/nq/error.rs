//! The error-ring entry: the same 16 bytes, another layout (completion-engine
//! seed §3 QUIRK, §4).
//!
//! The seed gives the error classes, their statuses, the de-dup table size (26)
//! and that the entry carries a device timestamp; the bit layout of libnrt's
//! `sunda.tpb_error` / sequencer / ECC metadata union is not in it. This module is
//! the one place our layout is defined, `docs/spec-gaps.md` G-ERR-LAYOUT:
//!
//! ```text
//!  byte:  0          1        2          3              4..5       6..7             8..15
//!        error_id   flags    hint<<4    phase|nq-tag   metadata   error subtype    device ts
//! ```
//!
//! - bytes 2 and 3 are shared with the INFER_STATUS layout, so the one ring
//!   protocol (phase bit, bit 7 of byte 3) serves both rings;
//! - `u16 @6` is the error discriminant (`infer_error_subtype`), as the seed says
//!   the byte at +6 is on the error ring;
//! - `u16 @4` is class metadata: the sequencer error code for SW_SEQUENCER, the
//!   ECC bank/syndrome for ECC records;
//! - `u64 @8` is the device timestamp, rescaled like completion timestamps.

use zerocopy::byteorder::little_endian::{U16, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::entry::{field, ENTRY_SIZE};
use crate::status::NrtStatus;

/// Size of the de-dup table, `already_logged[26]`, seed §4: error subtypes are
/// below this.
pub const ERROR_SUBTYPE_COUNT: usize = 26;

/// A zerocopy view of one error-ring entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct ErrorEntry {
    error_id: u8,
    flags: u8,
    hint: u8,
    tag: u8,
    metadata: U16,
    subtype: U16,
    device_ts: U64,
}

const _: () = assert!(core::mem::size_of::<ErrorEntry>() == ENTRY_SIZE);
const _: () = assert!(core::mem::offset_of!(ErrorEntry, tag) == field::TAG);
const _: () = assert!(core::mem::offset_of!(ErrorEntry, subtype) == field::SUBTYPE);
const _: () = assert!(core::mem::offset_of!(ErrorEntry, device_ts) == field::DEVICE_TS);

impl ErrorEntry {
    /// View 16 bytes as an error entry.
    #[inline]
    pub fn from_array(bytes: &[u8; ENTRY_SIZE]) -> &ErrorEntry {
        zerocopy::transmute_ref!(bytes)
    }

    /// The entry's bytes.
    #[inline]
    pub fn to_array(&self) -> [u8; ENTRY_SIZE] {
        zerocopy::transmute!(*self)
    }

    /// Build an error entry (the device side; tests and the simulator).
    #[inline]
    pub fn new(subtype: u16, error_id: u8, metadata: u16, device_ts: u64) -> ErrorEntry {
        ErrorEntry {
            error_id,
            flags: 0,
            hint: 0,
            tag: super::ERROR_NQ,
            metadata: U16::new(metadata),
            subtype: U16::new(subtype),
            device_ts: U64::new(device_ts),
        }
    }

    /// Byte 0: the reporting block's id.
    #[inline]
    pub fn error_id(&self) -> u8 {
        self.error_id
    }
    /// Byte 1: flags (reserved).
    #[inline]
    pub fn flags(&self) -> u8 {
        self.flags
    }
    /// `u16 @4`: class metadata.
    #[inline]
    pub fn metadata(&self) -> u16 {
        self.metadata.get()
    }
    /// `u16 @6`: the error subtype discriminant.
    #[inline]
    pub fn subtype(&self) -> u16 {
        self.subtype.get()
    }
    /// `u64 @8`: device timestamp.
    #[inline]
    pub fn device_ts(&self) -> u64 {
        self.device_ts.get()
    }
    /// The phase bit, shared with the INFER_STATUS layout.
    #[inline]
    pub fn phase(&self) -> bool {
        self.tag & field::PHASE_BIT != 0
    }
    /// The typed subtype.
    #[inline]
    pub fn infer_error_subtype(&self) -> InferErrorSubtype {
        InferErrorSubtype::parse(self.subtype())
    }
    /// The class this record falls in.
    #[inline]
    pub fn class(&self) -> ErrorClass {
        self.infer_error_subtype().class()
    }
}

/// `infer_error_subtype` values. NUMERICAL (1), TRANSIENT (2) and SW_SEQUENCER (8)
/// are the seed's; the others are ours, G-ERR-LAYOUT.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum InferErrorSubtype {
    /// 1: NaN produced (seed).
    Numerical,
    /// 2: transient error (seed).
    Transient,
    /// 3: correctable ECC (ours).
    EccCorrectable,
    /// 4: uncorrectable ECC on chip (ours).
    EccUncorrectable,
    /// 5: unrepairable HBM uncorrectable error (ours).
    HbmUe,
    /// 6: repairable HBM uncorrectable error (ours).
    HbmRepairableUe,
    /// 7: DMA engine abort (ours).
    DmaAbort,
    /// 8: software sequencer error (seed).
    SwSequencer,
    /// 9: indirect copy / embedding out of bounds (ours).
    Oob,
    /// 0 or 10..25: inside the de-dup table but without a class.
    Reserved(u16),
    /// 26 and above: outside the table.
    Invalid(u16),
}

impl InferErrorSubtype {
    /// Parse a raw discriminant. Total.
    #[inline]
    pub const fn parse(v: u16) -> InferErrorSubtype {
        match v {
            1 => InferErrorSubtype::Numerical,
            2 => InferErrorSubtype::Transient,
            3 => InferErrorSubtype::EccCorrectable,
            4 => InferErrorSubtype::EccUncorrectable,
            5 => InferErrorSubtype::HbmUe,
            6 => InferErrorSubtype::HbmRepairableUe,
            7 => InferErrorSubtype::DmaAbort,
            8 => InferErrorSubtype::SwSequencer,
            9 => InferErrorSubtype::Oob,
            v if (v as usize) < ERROR_SUBTYPE_COUNT => InferErrorSubtype::Reserved(v),
            v => InferErrorSubtype::Invalid(v),
        }
    }

    /// The raw discriminant.
    #[inline]
    pub const fn value(self) -> u16 {
        match self {
            InferErrorSubtype::Numerical => 1,
            InferErrorSubtype::Transient => 2,
            InferErrorSubtype::EccCorrectable => 3,
            InferErrorSubtype::EccUncorrectable => 4,
            InferErrorSubtype::HbmUe => 5,
            InferErrorSubtype::HbmRepairableUe => 6,
            InferErrorSubtype::DmaAbort => 7,
            InferErrorSubtype::SwSequencer => 8,
            InferErrorSubtype::Oob => 9,
            InferErrorSubtype::Reserved(v) | InferErrorSubtype::Invalid(v) => v,
        }
    }

    /// A display name (`"NUMERICAL"`, ..., `"RESERVED"`, `"INVALID"`).
    pub const fn name(self) -> &'static str {
        match self {
            InferErrorSubtype::Numerical => "NUMERICAL",
            InferErrorSubtype::Transient => "TRANSIENT",
            InferErrorSubtype::EccCorrectable => "ECC_CORRECTABLE",
            InferErrorSubtype::EccUncorrectable => "ECC_UNCORRECTABLE",
            InferErrorSubtype::HbmUe => "HBM_UE",
            InferErrorSubtype::HbmRepairableUe => "HBM_REPAIRABLE_UE",
            InferErrorSubtype::DmaAbort => "DMA_ABORT",
            InferErrorSubtype::SwSequencer => "SW_SEQUENCER",
            InferErrorSubtype::Oob => "OOB",
            InferErrorSubtype::Reserved(_) => "RESERVED",
            InferErrorSubtype::Invalid(_) => "INVALID",
        }
    }

    /// The class.
    #[inline]
    pub const fn class(self) -> ErrorClass {
        match self {
            InferErrorSubtype::Numerical => ErrorClass::Numerical,
            InferErrorSubtype::Transient => ErrorClass::Transient,
            InferErrorSubtype::EccCorrectable => ErrorClass::EccCorrectable,
            InferErrorSubtype::EccUncorrectable => ErrorClass::EccUncorrectable,
            InferErrorSubtype::HbmUe => ErrorClass::HbmUe,
            InferErrorSubtype::HbmRepairableUe => ErrorClass::HbmRepairableUe,
            InferErrorSubtype::DmaAbort => ErrorClass::DmaAbort,
            InferErrorSubtype::SwSequencer => ErrorClass::SwSequencer,
            InferErrorSubtype::Oob => ErrorClass::Oob,
            InferErrorSubtype::Reserved(_) | InferErrorSubtype::Invalid(_) => ErrorClass::Unknown,
        }
    }
}

/// What an error record means for the request, seed §4 status-code map.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ErrorClass {
    /// NUMERICAL -> 1003.
    Numerical,
    /// TRANSIENT -> 1004.
    Transient,
    /// SW_SEQUENCER -> 1004, with the sequencer error text.
    SwSequencer,
    /// Uncorrectable ECC -> 1202, with a fatal event.
    EccUncorrectable,
    /// Correctable ECC -> an event only; status unchanged.
    EccCorrectable,
    /// Unrepairable HBM UE -> 1201.
    HbmUe,
    /// Repairable HBM UE -> 1205.
    HbmRepairableUe,
    /// DMA abort -> 1203.
    DmaAbort,
    /// Out of bounds -> 1006.
    Oob,
    /// Unclassified (reserved or invalid subtype) -> 1004, G-ERR-UNKNOWN.
    Unknown,
}

impl ErrorClass {
    /// The status this class sets, or `None` when it leaves the status unchanged.
    #[inline]
    pub const fn status(self) -> Option<NrtStatus> {
        match self {
            ErrorClass::Numerical => Some(NrtStatus::ExecCompletedWithNumErr),
            ErrorClass::Transient | ErrorClass::SwSequencer => Some(NrtStatus::ExecCompletedWithErr),
            ErrorClass::EccUncorrectable => Some(NrtStatus::ExecHwErrNcUe),
            ErrorClass::EccCorrectable => None,
            ErrorClass::HbmUe => Some(NrtStatus::ExecHwErrHbmUe),
            ErrorClass::HbmRepairableUe => Some(NrtStatus::ExecHwErrRepairableHbmUe),
            ErrorClass::DmaAbort => Some(NrtStatus::ExecHwErrDmaAbort),
            ErrorClass::Oob => Some(NrtStatus::ExecOob),
            // An error record we cannot classify still says the execution
            // completed with an error.
            ErrorClass::Unknown => Some(NrtStatus::ExecCompletedWithErr),
        }
    }

    /// A display name.
    #[inline]
    pub const fn name(self) -> &'static str {
        match self {
            ErrorClass::Numerical => "NUMERICAL",
            ErrorClass::Transient => "TRANSIENT",
            ErrorClass::SwSequencer => "SW_SEQUENCER",
            ErrorClass::EccUncorrectable => "ECC_UNCORRECTABLE",
            ErrorClass::EccCorrectable => "ECC_CORRECTABLE",
            ErrorClass::HbmUe => "HBM_UE",
            ErrorClass::HbmRepairableUe => "HBM_REPAIRABLE_UE",
            ErrorClass::DmaAbort => "DMA_ABORT",
            ErrorClass::Oob => "OOB",
            ErrorClass::Unknown => "UNKNOWN",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_classes_map_to_seed_statuses() {
        assert_eq!(InferErrorSubtype::parse(1).class().status(), Some(NrtStatus::ExecCompletedWithNumErr));
        assert_eq!(InferErrorSubtype::parse(2).class().status(), Some(NrtStatus::ExecCompletedWithErr));
        assert_eq!(InferErrorSubtype::parse(8).class(), ErrorClass::SwSequencer);
        assert_eq!(ErrorClass::SwSequencer.status(), Some(NrtStatus::ExecCompletedWithErr));
        assert_eq!(ErrorClass::EccUncorrectable.status().map(|s| s.code()), Some(1202));
        assert_eq!(ErrorClass::EccCorrectable.status(), None);
    }

    #[test]
    fn parse_is_total_and_round_trips() {
        // Under Miri every 97th value and the top (the whole range runs natively).
        for v in (0..=u16::MAX).step_by(if cfg!(miri) { 97 } else { 1 }).chain([u16::MAX]) {
            let s = InferErrorSubtype::parse(v);
            assert_eq!(s.value(), v);
            if v as usize >= ERROR_SUBTYPE_COUNT {
                assert_eq!(s, InferErrorSubtype::Invalid(v));
            }
        }
    }

    #[test]
    fn layout_shares_the_ring_bytes() {
        let e = ErrorEntry::new(8, 3, 0x1234, 99);
        let b = e.to_array();
        assert_eq!(b[0], 3);
        assert_eq!(u16::from_le_bytes([b[4], b[5]]), 0x1234);
        assert_eq!(u16::from_le_bytes([b[6], b[7]]), 8);
        assert_eq!(b[3] & 0x1F, super::super::ERROR_NQ);
        assert_eq!(ErrorEntry::from_array(&b).device_ts(), 99);
        assert_eq!(ErrorEntry::from_array(&b).class(), ErrorClass::SwSequencer);
    }

    #[test]
    fn every_field_reads_its_bytes() {
        let b: [u8; 16] = [0x11, 0x22, 0x33, 0x80 | 2, 0x34, 0x12, 8, 0, 1, 2, 3, 4, 5, 6, 7, 8];
        let e = ErrorEntry::from_array(&b);
        assert_eq!((e.error_id(), e.flags(), e.metadata(), e.subtype()), (0x11, 0x22, 0x1234, 8));
        assert_eq!(e.device_ts(), 0x0807_0605_0403_0201);
        assert!(e.phase());
        let mut c = b;
        c[3] = 0x7F;
        assert!(!ErrorEntry::from_array(&c).phase(), "bit 7 of byte 3 only");
        assert_eq!(e.infer_error_subtype(), InferErrorSubtype::SwSequencer);
        assert_eq!(e.to_array(), b);
    }

    #[test]
    fn names() {
        let subtypes: Vec<&str> = (0..=9).chain([25, 26]).map(|v| InferErrorSubtype::parse(v).name()).collect();
        assert_eq!(
            subtypes,
            [
                "RESERVED",
                "NUMERICAL",
                "TRANSIENT",
                "ECC_CORRECTABLE",
                "ECC_UNCORRECTABLE",
                "HBM_UE",
                "HBM_REPAIRABLE_UE",
                "DMA_ABORT",
                "SW_SEQUENCER",
                "OOB",
                "RESERVED",
                "INVALID"
            ]
        );
        let classes: Vec<(&str, Option<u32>)> = (0..=9)
            .map(|v| InferErrorSubtype::parse(v).class())
            .map(|c| (c.name(), c.status().map(NrtStatus::code)))
            .collect();
        assert_eq!(
            classes,
            [
                ("UNKNOWN", Some(1004)),
                ("NUMERICAL", Some(1003)),
                ("TRANSIENT", Some(1004)),
                ("ECC_CORRECTABLE", None),
                ("ECC_UNCORRECTABLE", Some(1202)),
                ("HBM_UE", Some(1201)),
                ("HBM_REPAIRABLE_UE", Some(1205)),
                ("DMA_ABORT", Some(1203)),
                ("SW_SEQUENCER", Some(1004)),
                ("OOB", Some(1006)),
            ]
        );
    }
}
