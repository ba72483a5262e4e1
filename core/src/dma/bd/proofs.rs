//! Proof of the BD decoder (descriptor-handoff seed §2: "each BD is 16 bytes";
//! the layout of the driver's `union udma_desc`, `neuron-driver-facts.md` §5).

use super::{Bd, LenCtrl, MAX_BD_LEN, RING_ID_COUNT};
use crate::proofs::cover;
use zerocopy::{FromBytes, IntoBytes};

/// For every 16 bytes: they decode as a [`Bd`] (no validity to check), whose
/// `len_ctrl` is the little-endian word at +0 with length `[15:0]` (0 meaning
/// 65536), ring id `[25:24]`, FIRST 26, LAST 27, INT_EN 28, STRONG_ORDER 29, DMB
/// 30; `meta_ctrl` the word at +4; the buffer address the u64 at +8; and the BD
/// round-trips to the same bytes. Restamping the ring id changes bits 25:24 only;
/// setting a byte length accepts exactly 1..=65536 and reads back the same.
///
/// Precondition: none.
pub(crate) fn bd_fields_are_exact(bytes: [u8; 16], ring_id: u8, len: u32) {
    let Ok(bd) = Bd::read_from_bytes(&bytes) else { panic!("any 16 bytes are a BD") };
    let w = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    let c = bd.ctrl();
    assert_eq!(u32::from(c.length()), w & 0xFFFF);
    assert_eq!(c.len_bytes(), if w & 0xFFFF == 0 { MAX_BD_LEN } else { w & 0xFFFF });
    assert_eq!(u32::from(c.ring_id()), w >> 24 & 3);
    assert_eq!(c.first(), w >> 26 & 1 == 1);
    assert_eq!(c.last(), w >> 27 & 1 == 1);
    assert_eq!(c.int_en(), w >> 28 & 1 == 1);
    assert_eq!(c.strong_order(), w >> 29 & 1 == 1);
    assert_eq!(c.dmb(), w >> 30 & 1 == 1);
    assert_eq!(c.into_bits(), w);
    assert_eq!(bd.meta_ctrl.get(), u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]));
    let mut addr = [0u8; 8];
    addr.copy_from_slice(&bytes[8..16]);
    assert_eq!(bd.addr(), u64::from_le_bytes(addr));
    assert_eq!(bd.as_bytes(), &bytes);
    cover!(w & 0xFFFF == 0, "bd: length 0 encodes 65536");

    let re = bd.with_ring_id(ring_id);
    assert_eq!(re.ctrl().ring_id(), ring_id & (RING_ID_COUNT - 1));
    assert_eq!(re.len_ctrl.get() & !(3 << 24), w & !(3 << 24), "restamping touched another bit");
    assert_eq!((re.meta_ctrl, re.buf_ptr), (bd.meta_ctrl, bd.buf_ptr));

    let set = LenCtrl::from_bits(w).with_len_bytes(len);
    let valid = (1..=MAX_BD_LEN).contains(&len);
    cover!(valid, "bd: a byte length accepted");
    cover!(!valid, "bd: a byte length refused");
    assert_eq!(set.is_some(), valid);
    if let Some(s) = set {
        assert_eq!(s.len_bytes(), len);
        assert_eq!(s.into_bits() & !0xFFFF, w & !0xFFFF, "setting the length touched another bit");
    }
}

#[cfg(kani)]
#[kani::proof]
fn prove_bd_fields_are_exact() {
    bd_fields_are_exact(kani::any(), kani::any(), kani::any());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proofs::{assert_covered, cases, reset_covers};
    use proptest::prelude::*;

    #[test]
    fn bd_fields_are_exact_tests() {
        reset_covers();
        for bit in 0..128 {
            let mut b = [0u8; 16];
            b[bit / 8] = 1 << (bit % 8);
            bd_fields_are_exact(b, bit as u8, bit as u32 * 1000);
        }
        for len in [0, 1, 2, 0xFFFF, MAX_BD_LEN, MAX_BD_LEN + 1, u32::MAX] {
            bd_fields_are_exact([0xFF; 16], 7, len);
        }
        proptest!(ProptestConfig::with_cases(cases(4096)), |(b in any::<[u8; 16]>(), id in any::<u8>(), len in prop_oneof![0u32..=0x1_0001, any::<u32>()])| {
            bd_fields_are_exact(b, id, len);
        });
        assert_covered(3);
    }
}
