//! The 16-byte INFER_STATUS notification entry, completion-engine seed §3.
//!
//! ```text
//!  byte:  0   1   2   3   4   5   6   7   8 ...                 15
//!        u16 isa-   |   |   custom   subtype   device timestamp (u64)
//!        line-lo    |   |   sub-id   *(u16)@6  *(u64)@8
//!                   |   data[3] & 0x1F = NQ-id tag; bit 7 = phase (ours)
//!                   data[2] >> 4 = debug hint
//! ```
//!
//! All fields are little-endian. The completion path decodes positionally
//! ([`RawEntry`] is a zerocopy view with one accessor per field), then parses into
//! a typed [`Notification`]: the matcher sees only [`Subtype`] values, and every
//! 16-byte input parses (the decoder is total; an unknown subtype is
//! [`Subtype::Unexpected`], which the matcher faults on).
//!
//! Two fields are ours, not the seed's (`docs/spec-gaps.md`):
//! - bit 7 of byte 3 is the ring's phase (valid) bit, G-PHASE;
//! - on a custom record, `u16 @0` carries the output's var id, G-VARID.

use bitfield_struct::bitfield;
use zerocopy::byteorder::little_endian::{U16, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// Byte offsets and masks of the entry, in one place, seed §3 / §7 item 5.
pub mod field {
    /// `u16 @0`: low half of the ISA line; the var id on custom records, G-VARID.
    pub const ISA_LINE_LO: usize = 0;
    /// `data[2]`: the debug hint is its high nibble.
    pub const DEBUG_HINT: usize = 2;
    /// Shift of the debug hint in `data[2]`.
    pub const DEBUG_HINT_SHIFT: u8 = 4;
    /// `data[3]`: the NQ-id tag in bits 4:0, the phase bit in bit 7.
    pub const TAG: usize = 3;
    /// Mask of the NQ-id tag in `data[3]`.
    pub const NQ_TAG_MASK: u8 = 0x1F;
    /// The phase (valid) bit in `data[3]`, G-PHASE, `seed-vs-driver.md` point 5.
    pub const PHASE_BIT: u8 = 0x80;
    /// `u16 @4`: custom-notification sub-id. The seed's decode and checklist read a
    /// `u16` here while §3.1's prose says `data[4]` selects the table; we read the
    /// `u16`, so a non-zero `data[5]` puts the sub-id outside the table and the
    /// record is refused, G-SUBID-WIDTH.
    pub const CUSTOM_SUB_ID: usize = 4;
    /// `u16 @6`: notification subtype.
    pub const SUBTYPE: usize = 6;
    /// `u64 @8`: device timestamp.
    pub const DEVICE_TS: usize = 8;
}

/// `data[2]`: the debug hint in the high nibble, seed §3: `data[2] >> 4`.
#[bitfield(u8)]
#[derive(PartialEq, Eq)]
pub struct HintByte {
    /// Bits 3:0, not read by the completion path.
    #[bits(4)]
    pub low: u8,
    /// Bits 7:4, the debug hint.
    #[bits(4)]
    pub debug_hint: u8,
}

/// `data[3]`: the NQ-id tag in bits 4:0, seed §3: `data[3] & 0x1F`, bits 6:5 kept
/// by the cayman fixup (`& 0xE0`), and our phase bit in bit 7, G-PHASE.
#[bitfield(u8)]
#[derive(PartialEq, Eq)]
pub struct TagByte {
    /// Bits 4:0, the NQ-id tag.
    #[bits(5)]
    pub nq_tag: u8,
    /// Bits 6:5, unused by the decode; preserved by the fixup.
    #[bits(2)]
    pub keep: u8,
    /// Bit 7, the ring's phase (valid) bit.
    pub phase: bool,
}

const _: () = assert!(TagByte::new().with_nq_tag(0x1F).into_bits() == field::NQ_TAG_MASK);
const _: () = assert!(TagByte::new().with_phase(true).into_bits() == field::PHASE_BIT);
const _: () = assert!(HintByte::new().with_debug_hint(0xF).into_bits() >> field::DEBUG_HINT_SHIFT == 0xF);

/// Size of one NQ entry in bytes.
pub const ENTRY_SIZE: usize = 16;

/// The NQ-id tag the cayman DVE fixup forces (`data[3] = (data[3] & 0xE0) | 0xE`, seed §2 QUIRK).
pub const CAYMAN_CUSTOM_NQ_TAG: u8 = 0xE;

/// Custom-notification sub-id of a tensor completion, seed §3.1.
pub const SUB_ID_TENSOR_COMPLETION: u16 = 7;

/// Entries in the custom sub-id table, "an 11-way table", seed §3.1. Sub-ids at
/// or above this are rejected.
pub const CUSTOM_SUB_ID_COUNT: u16 = 11;

/// A zerocopy view of one 16-byte entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct RawEntry {
    isa_line_lo: U16,
    hint: u8,
    tag: u8,
    custom_sub_id: U16,
    subtype: U16,
    device_ts: U64,
}

const _: () = assert!(core::mem::size_of::<RawEntry>() == ENTRY_SIZE);
const _: () = assert!(core::mem::offset_of!(RawEntry, hint) == field::DEBUG_HINT);
const _: () = assert!(core::mem::offset_of!(RawEntry, tag) == field::TAG);
const _: () = assert!(core::mem::offset_of!(RawEntry, custom_sub_id) == field::CUSTOM_SUB_ID);
const _: () = assert!(core::mem::offset_of!(RawEntry, subtype) == field::SUBTYPE);
const _: () = assert!(core::mem::offset_of!(RawEntry, device_ts) == field::DEVICE_TS);

impl RawEntry {
    /// View 16 bytes as an entry.
    #[inline]
    pub fn from_array(bytes: &[u8; ENTRY_SIZE]) -> &RawEntry {
        zerocopy::transmute_ref!(bytes)
    }

    /// The entry's bytes.
    #[inline]
    pub fn to_array(&self) -> [u8; ENTRY_SIZE] {
        zerocopy::transmute!(*self)
    }

    /// Build an entry (the device side; tests and the simulator).
    #[inline]
    pub fn new(subtype: u16, nq_tag: u8, debug_hint: u8, custom_sub_id: u16, device_ts: u64) -> RawEntry {
        RawEntry {
            isa_line_lo: U16::new(0),
            hint: HintByte::new().with_debug_hint(debug_hint & 0x0F).into_bits(),
            tag: TagByte::new().with_nq_tag(nq_tag & field::NQ_TAG_MASK).into_bits(),
            custom_sub_id: U16::new(custom_sub_id),
            subtype: U16::new(subtype),
            device_ts: U64::new(device_ts),
        }
    }

    /// `u16 @0`.
    #[inline]
    pub fn isa_line_lo(&self) -> u16 {
        self.isa_line_lo.get()
    }
    /// Set `u16 @0` (the var id of a custom record).
    #[inline]
    pub fn set_isa_line_lo(&mut self, v: u16) {
        self.isa_line_lo.set(v)
    }
    /// `data[2] >> 4`.
    #[inline]
    pub fn debug_hint(&self) -> u8 {
        HintByte::from_bits(self.hint).debug_hint()
    }
    /// `data[3] & 0x1F`.
    #[inline]
    pub fn nq_tag(&self) -> u8 {
        TagByte::from_bits(self.tag).nq_tag()
    }
    /// The raw `data[3]` byte.
    #[inline]
    pub fn tag_byte(&self) -> u8 {
        self.tag
    }
    /// Replace the NQ-id tag, keeping bits 7:5 (`(data[3] & 0xE0) | tag`).
    #[inline]
    pub fn set_nq_tag(&mut self, tag: u8) {
        self.tag = TagByte::from_bits(self.tag).with_nq_tag(tag & field::NQ_TAG_MASK).into_bits();
    }
    /// The phase bit (bit 7 of `data[3]`).
    #[inline]
    pub fn phase(&self) -> bool {
        TagByte::from_bits(self.tag).phase()
    }
    /// Set or clear the phase bit.
    #[inline]
    pub fn set_phase(&mut self, phase: bool) {
        self.tag = TagByte::from_bits(self.tag).with_phase(phase).into_bits();
    }
    /// `*(u16*)&data[4]`.
    #[inline]
    pub fn custom_sub_id(&self) -> u16 {
        self.custom_sub_id.get()
    }
    /// `*(u16*)&data[6]`.
    #[inline]
    pub fn subtype(&self) -> u16 {
        self.subtype.get()
    }
    /// `*(u64*)&data[8]`.
    #[inline]
    pub fn device_ts(&self) -> u64 {
        self.device_ts.get()
    }
}

/// The INFER_STATUS subtype at `+6`, seed §2 `match_entry_to_substate`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Subtype {
    /// 2: the engine started.
    Start,
    /// 3: the engine ended.
    End,
    /// 6: an explicit custom notification (sub-id at `+4`).
    Custom,
    /// 7: collectives sync start.
    CcStart,
    /// 8: collectives sync end.
    CcEnd,
    /// 0, 1, 4, 5 or anything above 8: unexpected on an INFER_STATUS ring.
    Unexpected(u16),
}

impl Subtype {
    /// Subtype value of START.
    pub const START: u16 = 2;
    /// Subtype value of END.
    pub const END: u16 = 3;
    /// Subtype value of CUSTOM.
    pub const CUSTOM: u16 = 6;
    /// Subtype value of CC start.
    pub const CC_START: u16 = 7;
    /// Subtype value of CC end.
    pub const CC_END: u16 = 8;

    /// Parse the raw subtype. Total: every value maps to a variant.
    #[inline]
    pub const fn parse(v: u16) -> Subtype {
        match v {
            Self::START => Subtype::Start,
            Self::END => Subtype::End,
            Self::CUSTOM => Subtype::Custom,
            Self::CC_START => Subtype::CcStart,
            Self::CC_END => Subtype::CcEnd,
            other => Subtype::Unexpected(other),
        }
    }

    /// The raw value.
    #[inline]
    pub const fn value(self) -> u16 {
        match self {
            Subtype::Start => Self::START,
            Subtype::End => Self::END,
            Subtype::Custom => Self::CUSTOM,
            Subtype::CcStart => Self::CC_START,
            Subtype::CcEnd => Self::CC_END,
            Subtype::Unexpected(v) => v,
        }
    }

    /// A display name (`"START"`, ..., `"UNEXPECTED"`).
    #[inline]
    pub const fn name(self) -> &'static str {
        match self {
            Subtype::Start => "START",
            Subtype::End => "END",
            Subtype::Custom => "CUSTOM",
            Subtype::CcStart => "CC_START",
            Subtype::CcEnd => "CC_END",
            Subtype::Unexpected(_) => "UNEXPECTED",
        }
    }
}

/// What a custom (subtype 6) record is, by its sub-id, seed §3.1. The seed's
/// 11-way table lost every name but sub-id 7 in extraction; the others are carried
/// as typed diagnostics, `docs/spec-gaps.md` G-SUBID.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum CustomKind {
    /// Sub-id 7: a streamed output tensor finished; the var id is `u16 @0`.
    TensorCompletion {
        /// The output's var id.
        var_id: u16,
    },
    /// Sub-ids 0..=10 other than 7: a runtime diagnostic or debug-tensor hook.
    Diagnostic {
        /// The sub-id.
        sub_id: u16,
        /// `u16 @0`, carried for the reader.
        payload: u16,
    },
    /// A sub-id outside the table (>= 11).
    Invalid {
        /// The sub-id.
        sub_id: u16,
    },
}

impl CustomKind {
    /// Classify a custom record.
    #[inline]
    pub const fn parse(sub_id: u16, payload: u16) -> CustomKind {
        if sub_id == SUB_ID_TENSOR_COMPLETION {
            CustomKind::TensorCompletion { var_id: payload }
        } else if sub_id < CUSTOM_SUB_ID_COUNT {
            CustomKind::Diagnostic { sub_id, payload }
        } else {
            CustomKind::Invalid { sub_id }
        }
    }
}

/// A parsed INFER_STATUS entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Notification {
    /// `data[2] >> 4`.
    pub debug_hint: u8,
    /// `data[3] & 0x1F` (after the cayman fixup, when it applied).
    pub nq_tag: u8,
    /// `u16 @4`.
    pub custom_sub_id: u16,
    /// `u16 @6`, parsed.
    pub subtype: Subtype,
    /// `u64 @8`, device clock units.
    pub device_ts: u64,
    /// `u16 @0`.
    pub isa_line_lo: u16,
}

impl Notification {
    /// Parse an entry as read from an INFER_STATUS ring. Total over all inputs.
    #[inline]
    pub fn parse(raw: &RawEntry) -> Notification {
        Notification {
            debug_hint: raw.debug_hint(),
            nq_tag: raw.nq_tag(),
            custom_sub_id: raw.custom_sub_id(),
            subtype: Subtype::parse(raw.subtype()),
            device_ts: raw.device_ts(),
            isa_line_lo: raw.isa_line_lo(),
        }
    }

    /// Parse 16 bytes.
    #[inline]
    pub fn decode(bytes: &[u8; ENTRY_SIZE]) -> Notification {
        Notification::parse(RawEntry::from_array(bytes))
    }

    /// The custom-record classification (meaningful when `subtype` is CUSTOM).
    #[inline]
    pub fn custom(&self) -> CustomKind {
        CustomKind::parse(self.custom_sub_id, self.isa_line_lo)
    }
}

/// The seed's engine-select of the timestamp rescaler: `(subtype + 26) & 0x1F`,
/// cases 0 -> PE, 4 -> ACT, 8 -> POOL, 0xC -> DVE, 0x10 -> SP, seed §3.
///
/// The seed's own numbers do not agree (its hardware codes PE=4/5 ... give
/// 30/31 ..., not 0/4/...); the harvest therefore selects the calibration by the
/// ring the record came from, and this function documents the binary's switch
/// for decoders of raw hardware subtypes, `docs/spec-gaps.md` G-TS-SELECT.
#[inline]
pub const fn hw_subtype_engine_select(hw_subtype: u16) -> Option<super::Engine> {
    match (hw_subtype.wrapping_add(26)) & 0x1F {
        0 => Some(super::Engine::Pe),
        4 => Some(super::Engine::Act),
        8 => Some(super::Engine::Pool),
        0xC => Some(super::Engine::Dve),
        0x10 => Some(super::Engine::Sp),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positional_decode_matches_the_seed() {
        let bytes: [u8; 16] = [
            0x34, 0x12, // isa line lo
            0xA5, // debug hint 0xA in the high nibble
            0xE4, // tag: phase bit set, bits 6:5 = 11, NQ-id 4
            0x07, 0x00, // custom sub-id 7
            0x03, 0x00, // subtype END
            0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,
        ];
        let raw = RawEntry::from_array(&bytes);
        assert_eq!(raw.isa_line_lo(), 0x1234);
        assert_eq!(raw.debug_hint(), 0xA);
        assert_eq!(raw.nq_tag(), 4);
        assert!(raw.phase());
        assert_eq!(raw.custom_sub_id(), 7);
        assert_eq!(raw.subtype(), 3);
        assert_eq!(raw.device_ts(), 0x1122_3344_5566_7788);
        let n = Notification::decode(&bytes);
        assert_eq!(n.subtype, Subtype::End);
        assert_eq!(n.custom(), CustomKind::TensorCompletion { var_id: 0x1234 });
        assert_eq!(raw.to_array(), bytes);
    }

    #[test]
    fn subtype_parse_is_total_and_round_trips() {
        // Under Miri every 97th value and the top (the whole range runs natively).
        for v in (0..=u16::MAX).step_by(if cfg!(miri) { 97 } else { 1 }).chain([u16::MAX]) {
            let s = Subtype::parse(v);
            assert_eq!(s.value(), v);
            let expect_known = matches!(v, 2 | 3 | 6 | 7 | 8);
            assert_eq!(!matches!(s, Subtype::Unexpected(_)), expect_known, "{v}");
        }
    }

    #[test]
    fn cayman_fixup_keeps_the_top_bits() {
        let mut e = RawEntry::new(Subtype::CUSTOM, 0x1B, 0, 3, 0);
        e.set_phase(true);
        e.set_nq_tag(CAYMAN_CUSTOM_NQ_TAG);
        assert_eq!(e.tag_byte(), 0x80 | 0x0E);
        let mut raw = [0u8; 16];
        raw[3] = 0xFF;
        let mut e: RawEntry = zerocopy::transmute!(raw);
        e.set_nq_tag(CAYMAN_CUSTOM_NQ_TAG);
        assert_eq!(e.tag_byte(), 0xEE, "(data[3] & 0xE0) | 0xE");
    }

    #[test]
    fn subtype_names() {
        let names: Vec<&str> = [0u16, 2, 3, 6, 7, 8, 9].iter().map(|v| Subtype::parse(*v).name()).collect();
        assert_eq!(names, ["UNEXPECTED", "START", "END", "CUSTOM", "CC_START", "CC_END", "UNEXPECTED"]);
    }

    #[test]
    fn custom_sub_id_is_the_u16_at_4() {
        let mut bytes = [0u8; 16];
        bytes[4] = 7;
        bytes[5] = 1;
        bytes[6] = Subtype::CUSTOM as u8;
        let n = Notification::decode(&bytes);
        assert_eq!(n.custom_sub_id, 0x0107);
        assert_eq!(n.custom(), CustomKind::Invalid { sub_id: 0x0107 }, "data[5] is part of the sub-id");
        bytes[5] = 0;
        assert_eq!(Notification::decode(&bytes).custom(), CustomKind::TensorCompletion { var_id: 0 });
    }

    #[test]
    fn custom_sub_ids() {
        assert_eq!(CustomKind::parse(7, 42), CustomKind::TensorCompletion { var_id: 42 });
        assert_eq!(CustomKind::parse(0, 1), CustomKind::Diagnostic { sub_id: 0, payload: 1 });
        assert_eq!(CustomKind::parse(10, 1), CustomKind::Diagnostic { sub_id: 10, payload: 1 });
        assert_eq!(CustomKind::parse(11, 1), CustomKind::Invalid { sub_id: 11 });
        assert_eq!(CustomKind::parse(u16::MAX, 1), CustomKind::Invalid { sub_id: u16::MAX });
    }

    #[test]
    fn engine_select_switch() {
        use crate::nq::Engine;
        assert_eq!(hw_subtype_engine_select(6), Some(Engine::Pe));
        assert_eq!(hw_subtype_engine_select(10), Some(Engine::Act));
        assert_eq!(hw_subtype_engine_select(14), Some(Engine::Pool));
        assert_eq!(hw_subtype_engine_select(18), Some(Engine::Dve));
        assert_eq!(hw_subtype_engine_select(22), Some(Engine::Sp));
        assert_eq!(hw_subtype_engine_select(4), None);
    }
}
