//! Proof of the NQ ring cursor (completion-engine seed §2: the per-engine read
//! of up to 16 entries per sweep through `aws_hal_notific_nq_read`).

use super::{lap_phase, NqRing, ENTRY, MAX_RING_BYTES, MIN_RING_BYTES};
use crate::hal::{ErrorKind, ErrorType, NqRings};
use crate::nq::entry::{field, ENTRY_SIZE};
use crate::proofs::{cover, Any};

/// Ring memory the device writes anything into: each read returns arbitrary bytes
/// (so an arbitrary phase bit), and asserts the offset is a slot of the ring.
struct AnyMem<A: Any> {
    any: A,
    size: u32,
}

impl<A: Any> ErrorType for AnyMem<A> {
    type Error = ErrorKind;
}

impl<A: Any> NqRings for AnyMem<A> {
    fn read_slot(&mut self, _core: u8, _nq: u8, offset: u32, out: &mut [u8; ENTRY_SIZE]) -> Result<(), ErrorKind> {
        assert!(offset < self.size, "read outside the ring");
        assert!(offset.is_multiple_of(ENTRY), "read not on a slot boundary");
        *out = self.any.bytes16();
        Ok(())
    }
    fn write_head(&mut self, _core: u8, _nq: u8, head: u32) -> Result<(), ErrorKind> {
        assert!(head < self.size && head.is_multiple_of(ENTRY), "HEAD outside the ring");
        Ok(())
    }
}

/// Most entries a kani harness ring has (the unwind bound follows from it).
#[cfg_attr(not(kani), allow(dead_code))]
pub(crate) const PROOF_MAX_ENTRIES: u32 = 8;

/// Slots tracked for the once-per-lap check (rings up to 128 entries).
const SEEN: usize = 128;

/// Seed §2 (the per-engine NQ harvest; `notification_read_exec_queue` ->
/// `aws_hal_notific_nq_read`) with the ring protocol of `ring.rs` (G-PHASE): whatever
/// the device writes and wherever the free-running cursor is (across the u32
/// wrap), a batch of polls reads only slots inside the ring, on slot boundaries;
/// consumes a slot only when its phase is the lap's; advances exactly one entry
/// per consumed slot; never consumes the same slot twice in one lap (a batch is
/// less than a lap, and two batches whose total stays under a lap read distinct
/// slots); and writes a HEAD inside the ring.
///
/// Precondition: the production check, `NqRing::new(size).is_ok()`, and the
/// cursor's invariant that it moves in whole entries from 0 (`cursor % 16 == 0`).
pub(crate) fn ring_cursor_stays_in_ring_once_per_lap<A: Any>(mut any: A, size_pow: u32, cursor: u32) {
    let size = 1u32.checked_shl(size_pow).unwrap_or(0);
    #[cfg(kani)]
    kani::assume(NqRing::new(size).is_ok() && size / ENTRY <= PROOF_MAX_ENTRIES && cursor.is_multiple_of(ENTRY));
    if NqRing::new(size).is_err() || !cursor.is_multiple_of(ENTRY) {
        return;
    }
    assert!((MIN_RING_BYTES..=MAX_RING_BYTES).contains(&size));
    let mut ring = NqRing { size, cursor, acked: cursor };
    let entries = ring.entries();
    let want_a = any.u32();
    let want_b = any.u32();
    let mut mem = AnyMem { any, size };
    let start = ring.cursor;
    // Slots consumed, by their distance (in entries) from the start.
    let mut consumed_total = 0u32;
    let mut seen = [false; SEEN];
    for want in [want_a, want_b] {
        let limit = ring.batch_limit(want);
        assert!(limit < entries, "a batch never consumes a whole lap");
        let mut n = 0;
        let mut buf = [0u8; ENTRY_SIZE];
        while n < limit {
            let before = ring;
            let fresh = matches!(ring.poll(&mut mem, 0, 4, &mut buf), Ok(true));
            if !fresh {
                cover!(true, "ring: a stale slot stops the batch");
                assert_eq!(ring, before, "a stale poll changes nothing");
                break;
            }
            cover!(true, "ring: a fresh slot is consumed");
            assert_eq!(buf[field::TAG] & field::PHASE_BIT != 0, lap_phase(before.cursor, size));
            assert_eq!(ring.cursor, before.cursor.wrapping_add(ENTRY));
            let k = before.cursor.wrapping_sub(start) / ENTRY;
            let slot = (before.cursor & (size - 1)) / ENTRY;
            if k < entries && (slot as usize) < SEEN {
                // Within the first lap from `start`, each slot at most once.
                let idx = slot as usize;
                assert!(!seen[idx], "a slot consumed twice in one lap");
                seen[idx] = true;
            }
            n += 1;
            consumed_total += 1;
        }
        let head = ring.head();
        assert!(head < size && head.is_multiple_of(ENTRY));
        if n > 0 {
            assert!(ring.write_head(&mut mem, 0, 4).is_ok());
        }
    }
    cover!(consumed_total >= entries, "ring: two batches cross a lap boundary");
    cover!(cursor > u32::MAX - size, "ring: the cursor starts in the last lap before the u32 wrap");
    assert_eq!(ring.cursor, start.wrapping_add(consumed_total * ENTRY));
}

/// The ring protocol's phase and HEAD (G-PHASE, G-HEAD): for every valid ring
/// size and every cursor a consumer can hold (whole entries, any lap, across the
/// u32 wrap): walking the ring slot by slot, the phase a fresh slot must carry
/// flips exactly once per lap (at the lap boundary and nowhere else) and comes
/// back after two laps; HEAD is the cursor's byte offset in the ring (inside it,
/// on a slot boundary); and whatever was read but not yet handed back (less than
/// a lap), a batch never reaches a whole lap of unacknowledged reads.
///
/// Precondition: `NqRing::new(size).is_ok()`, `cursor % 16 == 0` and fewer than a
/// lap of reads not handed back (what `batch_limit` itself maintains).
pub(crate) fn phase_flips_once_per_lap_and_head_is_an_offset(size_pow: u32, cursor: u32, unacked: u32, want: u32) {
    let size = 1u32.checked_shl(size_pow).unwrap_or(0);
    let Ok(empty) = NqRing::new(size) else { return };
    if !cursor.is_multiple_of(ENTRY) {
        return;
    }
    let entries = empty.entries();
    let unacked = unacked % entries;
    let ring = NqRing { size, cursor, acked: cursor.wrapping_sub(unacked * ENTRY) };
    assert_eq!(ring.unacked(), unacked);
    let next = cursor.wrapping_add(ENTRY);
    let last_slot = cursor % size == size - ENTRY;
    cover!(last_slot, "phase: the last slot of a lap");
    cover!(!last_slot, "phase: a slot inside a lap");
    assert_eq!(lap_phase(next, size) != lap_phase(cursor, size), last_slot, "the phase flips at the lap boundary only");
    assert_eq!(lap_phase(cursor.wrapping_add(size), size), !lap_phase(cursor, size));
    assert_eq!(lap_phase(cursor.wrapping_add(size).wrapping_add(size), size), lap_phase(cursor, size));
    cover!(cursor.checked_add(size).is_none(), "phase: across the u32 wrap");
    let head = ring.head();
    assert!(head < size && head.is_multiple_of(ENTRY));
    assert_eq!(head, cursor % size);
    let limit = ring.batch_limit(want);
    assert!(limit <= want);
    assert!(limit + unacked < entries, "a batch would complete a lap of unacknowledged reads");
    cover!(limit == 0 && want > 0, "phase: a full ring of unacknowledged reads stops the batch");
}

#[cfg(kani)]
#[kani::proof]
#[kani::unwind(10)]
fn prove_ring_cursor_stays_in_ring_once_per_lap() {
    ring_cursor_stays_in_ring_once_per_lap(crate::proofs::KaniAny, kani::any(), kani::any());
}

#[cfg(kani)]
#[kani::proof]
fn prove_phase_flips_once_per_lap_and_head_is_an_offset() {
    phase_flips_once_per_lap_and_head_is_an_offset(kani::any(), kani::any(), kani::any(), kani::any());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proofs::{assert_covered, cases, reset_covers, Bytes};
    use proptest::prelude::*;

    #[test]
    fn ring_cursor_stays_in_ring_once_per_lap_tests() {
        reset_covers();
        // Every fresh-slot pattern of a 2- and 4-entry ring from a few cursors,
        // including the last lap before the u32 wrap.
        let limit = if cfg!(miri) { 4 } else { 256 };
        for pow in [5u32, 6] {
            for cursor in [0u32, 16, 48, u32::MAX - 63, u32::MAX - 15] {
                for pattern in 0u32..limit {
                    let mut bytes = [0u8; 8 + 16 * 8];
                    bytes[0] = 0xFF; // batch A wants all
                    bytes[4] = 0xFF; // batch B wants all
                    for i in 0..8 {
                        bytes[8 + 16 * i + field::TAG] = if pattern >> i & 1 == 1 { 0x80 } else { 0 };
                    }
                    ring_cursor_stays_in_ring_once_per_lap(Bytes::new(&bytes), pow, cursor & !15);
                }
            }
        }
        proptest!(ProptestConfig::with_cases(cases(2048)),
        |(pow in 0u32..13, cursor in any::<u32>(), bytes in proptest::collection::vec(any::<u8>(), 0..1024))| {
            ring_cursor_stays_in_ring_once_per_lap(Bytes::new(&bytes), pow, cursor & !15);
        });
        assert_covered(4);
    }

    #[test]
    fn phase_flips_once_per_lap_and_head_is_an_offset_tests() {
        reset_covers();
        for pow in 0..32 {
            for cursor in [0u32, 16, 32, 48, 1 << 20, u32::MAX - 15, u32::MAX - 31, 0x8000_0000 - 16] {
                for unacked in [0, 1, 3, 1 << 20, u32::MAX] {
                    phase_flips_once_per_lap_and_head_is_an_offset(pow, cursor, unacked, 16);
                }
            }
        }
        proptest!(ProptestConfig::with_cases(cases(4096)),
        |(pow in 0u32..33, cursor in any::<u32>(), unacked in any::<u32>(), want in prop_oneof![0u32..20, any::<u32>()])| {
            phase_flips_once_per_lap_and_head_is_an_offset(pow, cursor & !15, unacked, want);
        });
        assert_covered(4);
    }
}
