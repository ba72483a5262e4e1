//! Proofs of the two 16-byte decoders, completion-engine seed §3, §4.
//!
//! Each property is a plain function over its inputs; `prove_*` runs it under kani
//! for every input, `*_tests` under `cargo test` over generated and enumerated
//! inputs (see `crate::proofs`).

use super::entry::{field, CustomKind, Notification, RawEntry, Subtype, CUSTOM_SUB_ID_COUNT, SUB_ID_TENSOR_COMPLETION};
use super::error::{ErrorClass, ErrorEntry, InferErrorSubtype, ERROR_SUBTYPE_COUNT};
use crate::proofs::cover;

/// Seed §3 ("The 16-Byte Notification Entry") and §7 checklist item 5: the entry
/// decoder is total over all 16-byte inputs and positional: `data[2] >> 4` is the
/// debug hint, `data[3] & 0x1F` the NQ-id tag, `*(u16)@4` the custom sub-id,
/// `*(u16)@6` the subtype (START 2, END 3, CUSTOM 6, CC 7/8, anything else
/// unexpected), `*(u64)@8` the device timestamp; and the bytes round-trip.
///
/// Precondition: none; every 16 bytes are a valid input (the decoder has no
/// validity check to assume).
pub(crate) fn entry_decoder_is_total(bytes: [u8; 16]) {
    let raw = RawEntry::from_array(&bytes);
    let n = Notification::decode(&bytes);
    let le16 = |at: usize| u16::from_le_bytes([bytes[at], bytes[at + 1]]);
    assert_eq!(n.debug_hint, bytes[field::DEBUG_HINT] >> 4);
    assert!(n.debug_hint < 16);
    assert_eq!(n.nq_tag, bytes[field::TAG] & 0x1F);
    assert_eq!(raw.phase(), bytes[field::TAG] & 0x80 != 0);
    assert_eq!(n.custom_sub_id, le16(field::CUSTOM_SUB_ID));
    assert_eq!(n.isa_line_lo, le16(field::ISA_LINE_LO));
    let mut ts = [0u8; 8];
    ts.copy_from_slice(&bytes[field::DEVICE_TS..field::DEVICE_TS + 8]);
    assert_eq!(n.device_ts, u64::from_le_bytes(ts));
    let subtype = le16(field::SUBTYPE);
    assert_eq!(n.subtype.value(), subtype);
    let known = matches!(subtype, 2 | 3 | 6 | 7 | 8);
    cover!(known, "entry: a known subtype");
    cover!(!known, "entry: an unexpected subtype");
    assert_eq!(!matches!(n.subtype, Subtype::Unexpected(_)), known);
    match n.custom() {
        CustomKind::TensorCompletion { var_id } => {
            cover!(true, "entry: tensor completion");
            assert_eq!(n.custom_sub_id, SUB_ID_TENSOR_COMPLETION);
            assert_eq!(var_id, n.isa_line_lo);
        }
        CustomKind::Diagnostic { sub_id, payload } => {
            cover!(true, "entry: custom diagnostic");
            assert!(sub_id < CUSTOM_SUB_ID_COUNT && sub_id != SUB_ID_TENSOR_COMPLETION);
            assert_eq!(payload, n.isa_line_lo);
        }
        CustomKind::Invalid { sub_id } => {
            cover!(true, "entry: invalid custom sub-id");
            assert!(sub_id >= CUSTOM_SUB_ID_COUNT);
        }
    }
    assert_eq!(raw.to_array(), bytes);
}

/// Seed §4 ("Error Decode", the status-code map) and §3 QUIRK (the same 16 bytes,
/// another layout): the error-entry decoder is total over all 16-byte inputs; the
/// subtype at `+6` round-trips; NUMERICAL gives 1003, TRANSIENT and SW_SEQUENCER
/// 1004, uncorrectable ECC 1202, correctable ECC no status; a subtype outside the
/// de-dup table (`>= 26`) is invalid and still a "completed with error" (1004).
///
/// Precondition: none (every input is decodable).
pub(crate) fn error_decoder_is_total(bytes: [u8; 16]) {
    let e = ErrorEntry::from_array(&bytes);
    let subtype = u16::from_le_bytes([bytes[field::SUBTYPE], bytes[field::SUBTYPE + 1]]);
    assert_eq!(e.subtype(), subtype);
    assert_eq!(e.error_id(), bytes[0]);
    assert_eq!(e.metadata(), u16::from_le_bytes([bytes[4], bytes[5]]));
    assert_eq!(e.phase(), bytes[field::TAG] & 0x80 != 0);
    let s = e.infer_error_subtype();
    assert_eq!(s.value(), subtype);
    let class = e.class();
    let status = class.status().map(|s| s.code());
    match subtype {
        1 => assert_eq!(status, Some(1003)),
        2 | 8 => assert_eq!(status, Some(1004)),
        4 => assert_eq!(status, Some(1202)),
        3 => assert_eq!(status, None),
        _ => {}
    }
    let outside = usize::from(subtype) >= ERROR_SUBTYPE_COUNT;
    cover!(outside, "error: subtype outside the table");
    cover!(!outside && class == ErrorClass::Unknown, "error: reserved subtype");
    cover!(class == ErrorClass::Numerical, "error: numerical");
    if outside {
        assert_eq!(s, InferErrorSubtype::Invalid(subtype));
        assert_eq!(status, Some(1004));
    }
    // Only correctable ECC leaves the status alone.
    assert_eq!(status.is_none(), class == ErrorClass::EccCorrectable);
    assert_eq!(e.to_array(), bytes);
}

#[cfg(kani)]
#[kani::proof]
fn prove_entry_decoder_is_total() {
    entry_decoder_is_total(kani::any());
}

#[cfg(kani)]
#[kani::proof]
fn prove_error_decoder_is_total() {
    error_decoder_is_total(kani::any());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proofs::{assert_covered, cases, reset_covers};
    use proptest::prelude::*;

    /// Every subtype and sub-id value, around arbitrary other bytes.
    fn enumerated(mut f: impl FnMut([u8; 16])) {
        let step = if cfg!(miri) { 4099 } else { 1 };
        for v in (0..=u16::MAX).step_by(step) {
            let [lo, hi] = v.to_le_bytes();
            let mut b = [0xA5u8; 16];
            b[6] = lo;
            b[7] = hi;
            f(b);
            let mut b = [0x5Au8; 16];
            b[4] = lo;
            b[5] = hi;
            b[6] = 6; // CUSTOM, every sub-id
            b[7] = 0;
            f(b);
        }
    }

    #[test]
    fn entry_decoder_is_total_tests() {
        reset_covers();
        enumerated(entry_decoder_is_total);
        entry_decoder_is_total([0; 16]);
        entry_decoder_is_total([0xFF; 16]);
        proptest!(ProptestConfig::with_cases(cases(4096)), |(b in any::<[u8; 16]>())| {
            entry_decoder_is_total(b);
        });
        assert_covered(5);
    }

    #[test]
    fn error_decoder_is_total_tests() {
        reset_covers();
        enumerated(error_decoder_is_total);
        error_decoder_is_total([0; 16]);
        error_decoder_is_total([0xFF; 16]);
        proptest!(ProptestConfig::with_cases(cases(4096)), |(b in any::<[u8; 16]>())| {
            error_decoder_is_total(b);
        });
        assert_covered(3);
    }
}
