//! Proof of the NQ ring cursor (completion-engine seed §2: the per-engine read
//! of up to 16 entries per sweep through `aws_hal_notific_nq_read`), and of the
//! producer side ([`NqProducer`], what the simulator, the test platform and the
//! benches write rings with): its two operations by their function contracts,
//! and the two sides together, record by record.

use super::{lap_phase, NqProducer, NqRing, ENTRY, MAX_RING_BYTES, MIN_RING_BYTES};
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
/// `aws_hal_notific_nq_read`) with the ring protocol of `ring.rs`, G-PHASE: whatever
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

/// The ring protocol's phase and HEAD, G-PHASE, G-HEAD: for every valid ring
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

/// The producer's invariant (what [`NqProducer::new`] starts and its two
/// operations keep): a valid ring size, both cursors in whole entries, and at
/// most a lap written and not handed back. The precondition of its contracts.
pub(super) fn producer_ok(p: &NqProducer) -> bool {
    NqRing::new(p.size).is_ok()
        && p.write.is_multiple_of(ENTRY)
        && p.host_read.is_multiple_of(ENTRY)
        && p.write.wrapping_sub(p.host_read) <= p.size
}

/// `a` and `b` differ at most in the phase bit of the tag byte (index loop: a
/// constant bound for the solver).
#[allow(clippy::needless_range_loop)]
fn same_but_phase(a: &[u8; ENTRY_SIZE], b: &[u8; ENTRY_SIZE]) -> bool {
    let mut same = true;
    for i in 0..ENTRY_SIZE {
        let mask = if i == field::TAG { !field::PHASE_BIT } else { 0xFF };
        same &= a[i] & mask == b[i] & mask;
    }
    same
}

/// The contract of [`NqProducer::push`] (`b`, `eb` before; `a`, `ea` after): on
/// a full ring (no free entry) nothing changes and the record is refused
/// (`None`); otherwise the record goes to the slot at the write cursor (an offset
/// inside the ring, on a slot boundary), stamped with that lap's phase and
/// otherwise unchanged, and the write cursor moves one entry (one more pending).
pub(super) fn push_post(
    b: &NqProducer,
    a: &NqProducer,
    eb: &[u8; ENTRY_SIZE],
    ea: &[u8; ENTRY_SIZE],
    r: Option<u32>,
) -> bool {
    let full = b.pending() == b.size / ENTRY;
    let kept = producer_ok(a) && a.size == b.size && a.host_read == b.host_read;
    match r {
        None => full && a == b && ea == eb,
        Some(off) => {
            !full
                && kept
                && off == b.write & (b.size - 1)
                && off < b.size
                && off.is_multiple_of(ENTRY)
                && a.write == b.write.wrapping_add(ENTRY)
                && a.pending() == b.pending() + 1
                && (ea[field::TAG] & field::PHASE_BIT != 0) == lap_phase(b.write, b.size)
                && same_but_phase(ea, eb)
        }
    }
}

/// The contract of [`NqProducer::on_head_write`] (`b` before, `a` after, `head`
/// the value the host wrote): the invariant holds, only the view of the host's
/// read pointer moves, forward by whole entries and never past what was written
/// (pending never grows, never underflows); and a HEAD that hands back `k`
/// entries (on a slot boundary, `k` at most the pending ones and less than a
/// lap, which the consumer's batch cap guarantees) frees exactly those `k`.
pub(super) fn on_head_write_post(b: &NqProducer, a: &NqProducer, head: u32) -> bool {
    let moved = a.host_read.wrapping_sub(b.host_read);
    let k = head.wrapping_sub(b.host_read) & (b.size - 1);
    let exact = !head.is_multiple_of(ENTRY)
        || head >= b.size
        || k / ENTRY > b.pending()
        || a.pending() == b.pending() - k / ENTRY;
    producer_ok(a)
        && a.size == b.size
        && a.write == b.write
        && moved.is_multiple_of(ENTRY)
        && moved <= b.write.wrapping_sub(b.host_read)
        && a.pending() <= b.pending()
        && exact
}

/// A producer in any state its invariant allows: any ring size (every power of
/// two, the invalid ones refused by [`producer_ok`]), any write cursor in whole
/// entries (any lap, across the u32 wrap) and any number of pending entries up
/// to a lap.
fn any_producer<A: Any>(any: &mut A) -> NqProducer {
    let size = 1u32 << (any.u8() % 32);
    let write = any.u32() & !(ENTRY - 1);
    let pending = any.u32() % (size / ENTRY + 1);
    NqProducer { size, write, host_read: write.wrapping_sub(pending.wrapping_mul(ENTRY)) }
}

/// [`NqProducer::new`] accepts exactly the sizes the consumer accepts
/// ([`NqRing::new`]), and starts where a fresh consumer does: nothing pending,
/// a whole lap free, the invariant of its contracts holding.
pub(crate) fn producer_new_accepts_exactly_the_consumer_sizes(size: u32) {
    let fresh = NqProducer::new(size);
    assert_eq!(fresh.is_ok(), NqRing::new(size).is_ok(), "producer and consumer accept the same sizes");
    if let Ok(f) = fresh {
        assert!(producer_ok(&f) && f.pending() == 0 && f.free() == size / ENTRY && f.size_bytes() == size);
    }
    cover!(fresh.is_ok(), "new: a valid ring");
    cover!(fresh.is_err() && size.is_power_of_two(), "new: a power of two out of range");
}

/// `push` keeps its contract ([`push_post`]) from any state the invariant
/// allows (the body of the contract's proof).
pub(crate) fn producer_push_contract<A: Any>(mut any: A) {
    let mut p = any_producer(&mut any);
    if !producer_ok(&p) {
        return;
    }
    let (before, mut entry) = (p, any.bytes16());
    let eb = entry;
    let r = p.push(&mut entry);
    assert!(push_post(&before, &p, &eb, &entry, r), "push broke its contract");
    cover!(r.is_none(), "producer: a full ring refuses the record");
    cover!(r.is_some() && before.write % before.size == before.size - ENTRY, "producer: the last slot of a lap");
    cover!(r.is_some() && before.write > p.write, "producer: the write cursor wraps the u32");
}

/// `on_head_write` keeps its contract ([`on_head_write_post`]) from any state,
/// for any HEAD value (garbage included: off the slot boundary, outside the
/// ring, more than was written), and one that hands back what a consumer read.
pub(crate) fn producer_on_head_write_contract<A: Any>(mut any: A) {
    let mut p = any_producer(&mut any);
    if !producer_ok(&p) {
        return;
    }
    let before = p;
    let read = any.u32() % (p.pending() + 1);
    let head = if any.bool() { any.u32() } else { p.host_read.wrapping_add(read * ENTRY) & (p.size - 1) };
    p.on_head_write(head);
    assert!(on_head_write_post(&before, &p, head), "on_head_write broke its contract");
    let k = head.wrapping_sub(before.host_read) & (before.size - 1);
    cover!(head.is_multiple_of(ENTRY) && k > 0 && p.pending() < before.pending(), "producer: a HEAD frees entries");
    cover!(k / ENTRY > before.pending(), "producer: a HEAD past what was written is clamped");
    cover!(p.host_read < before.host_read, "producer: the host's read pointer wraps the u32");
}

/// Ring memory shared by a producer and a consumer: the slots of one ring, the
/// producer behind its HEAD register (a HEAD write reaches it unless the write
/// fails, which any write may).
struct Shared<A: Any> {
    slots: [[u8; ENTRY_SIZE]; 4],
    size: u32,
    prod: NqProducer,
    any: A,
}

impl<A: Any> ErrorType for Shared<A> {
    type Error = ErrorKind;
}

impl<A: Any> NqRings for Shared<A> {
    fn read_slot(&mut self, _core: u8, _nq: u8, offset: u32, out: &mut [u8; ENTRY_SIZE]) -> Result<(), ErrorKind> {
        assert!(offset < self.size && offset.is_multiple_of(ENTRY), "read outside the ring");
        *out = self.slots[(offset / ENTRY) as usize % 4];
        Ok(())
    }
    fn write_head(&mut self, _core: u8, _nq: u8, head: u32) -> Result<(), ErrorKind> {
        assert!(head < self.size && head.is_multiple_of(ENTRY), "HEAD outside the ring");
        if self.any.u8() >= 0xC0 {
            return Err(ErrorKind::Io);
        }
        self.prod.on_head_write(head);
        Ok(())
    }
}

/// The two sides of the ring protocol together, G-PHASE, G-HEAD, for a ring of
/// 2 or 4 entries starting at any cursor (any lap, across the u32 wrap) with the
/// memory every earlier lap left, over `steps` operations in any order: the
/// device pushes any record (refused only on a full ring, else written where
/// `push` says), the consumer polls within its batch cap, the consumer writes
/// HEAD (which may fail). The consumer reads a slot as fresh exactly when a
/// record is waiting, and then reads exactly the oldest waiting record; the
/// producer never overwrites a record not yet read; and the producer's count of
/// pending entries is always the records waiting plus the reads not yet handed
/// back. Larger rings repeat the same arithmetic (the cursor proofs above cover
/// every size).
pub(crate) fn producer_and_consumer_agree<A: Any>(mut any: A, steps: usize) {
    // Under kani 2 entries (every cover within 5 steps); 2 or 4 in the tests.
    let size = if cfg!(kani) { 32 } else { 32u32 << (any.u8() % 2) };
    let entries = size / ENTRY;
    let start = any.u32() & !(ENTRY - 1);
    let mut slots = [[0u8; ENTRY_SIZE]; 4];
    for (o, slot) in slots.iter_mut().enumerate() {
        // The last write to this slot before `start`, a lap behind at most.
        let last = start.wrapping_sub(size).wrapping_add((o as u32 * ENTRY).wrapping_sub(start) & (size - 1));
        *slot = any.bytes16();
        if lap_phase(last, size) {
            slot[field::TAG] |= field::PHASE_BIT;
        } else {
            slot[field::TAG] &= !field::PHASE_BIT;
        }
    }
    let prod = NqProducer { size, write: start, host_read: start };
    let mut ring = NqRing { size, cursor: start, acked: start };
    let mut mem = Shared { slots, size, prod, any };
    // The records written and not yet read, oldest first.
    let mut waiting = [[0u8; ENTRY_SIZE]; 4];
    let (mut first, mut len) = (0usize, 0u32);
    let (mut refused, mut failed_head, mut fresh_reads) = (false, false, 0u32);
    for _ in 0..steps {
        match mem.any.u8() % 3 {
            0 => {
                let mut e = mem.any.bytes16();
                let full = mem.prod.pending() == entries;
                match mem.prod.push(&mut e) {
                    None => {
                        assert!(full, "a record refused with room in the ring");
                        refused = true;
                    }
                    Some(off) => {
                        assert!(!full && len < entries, "a record written over one not yet read");
                        mem.slots[(off / ENTRY) as usize % 4] = e;
                        waiting[(first + len as usize) % 4] = e;
                        len += 1;
                    }
                }
            }
            1 => {
                if ring.batch_limit(1) == 1 {
                    let mut buf = [0u8; ENTRY_SIZE];
                    let fresh = matches!(ring.poll(&mut mem, 0, 4, &mut buf), Ok(true));
                    assert_eq!(fresh, len > 0, "fresh exactly when a record is waiting");
                    if fresh {
                        assert!(buf == waiting[first], "the consumer read another record than the oldest");
                        first = (first + 1) % 4;
                        len -= 1;
                        fresh_reads += 1;
                    }
                }
            }
            _ => failed_head |= ring.write_head(&mut mem, 0, 4).is_err(),
        }
        assert_eq!(mem.prod.pending(), len + ring.unacked(), "the producer's count of pending entries");
        assert_eq!(mem.prod.host_read, ring.acked, "the producer knows every HEAD that arrived");
    }
    cover!(fresh_reads > 0, "agree: a record read");
    cover!(refused, "agree: a full ring refuses a record");
    cover!(failed_head && fresh_reads > 0, "agree: a failed HEAD write, the records still agree");
    cover!(ring.cursor.wrapping_sub(start) >= size, "agree: the consumer crosses a lap");
    cover!(ring.cursor < start, "agree: across the u32 wrap");
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

#[cfg(kani)]
#[kani::proof]
fn prove_producer_new_accepts_exactly_the_consumer_sizes() {
    producer_new_accepts_exactly_the_consumer_sizes(kani::any());
}

#[cfg(kani)]
#[kani::proof_for_contract(NqProducer::push)]
#[kani::unwind(17)]
fn prove_producer_push_contract() {
    producer_push_contract(crate::proofs::KaniAny);
}

#[cfg(kani)]
#[kani::proof_for_contract(NqProducer::on_head_write)]
fn prove_producer_on_head_write_contract() {
    producer_on_head_write_contract(crate::proofs::KaniAny);
}

// Unwind 17: the 16-byte compares; the step loop runs 5 times on a 2-entry
// ring (a refused push after 3, a lap crossed by push, poll, HEAD, push, poll:
// 5 steps reach every cover), the memory loop 4.
#[cfg(kani)]
#[kani::proof]
#[kani::unwind(17)]
fn prove_producer_and_consumer_agree() {
    producer_and_consumer_agree(crate::proofs::KaniAny, 5);
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
        // Under Miri the smallest, a middle and the largest ring (pure arithmetic:
        // every size runs natively).
        let all: Vec<u32> = (0..32).collect();
        let pows: &[u32] = if cfg!(miri) { &[0, 1, 5, 31] } else { &all };
        for &pow in pows {
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

    #[test]
    fn producer_new_accepts_exactly_the_consumer_sizes_tests() {
        reset_covers();
        for pow in 0..32 {
            for d in [0u32, 1, 16] {
                producer_new_accepts_exactly_the_consumer_sizes((1u32 << pow).wrapping_add(d));
                producer_new_accepts_exactly_the_consumer_sizes((1u32 << pow).wrapping_sub(d));
            }
        }
        proptest!(ProptestConfig::with_cases(cases(1024)), |(size in any::<u32>())| {
            producer_new_accepts_exactly_the_consumer_sizes(size);
        });
        assert_covered(2);
    }

    #[test]
    fn producer_push_contract_tests() {
        reset_covers();
        producer_push_contract(Bytes::new(&[]));
        proptest!(ProptestConfig::with_cases(cases(4096)),
        |(pow in 0u8..32, write in any::<u32>(), pending in any::<u32>(), full in any::<bool>(), e in any::<[u8; 16]>())| {
            let mut b = vec![pow];
            b.extend_from_slice(&write.to_le_bytes());
            let entries = (1u32 << pow) / ENTRY;
            b.extend_from_slice(&(if full { entries } else { pending }).to_le_bytes());
            b.extend_from_slice(&e);
            producer_push_contract(Bytes::new(&b));
        });
        // The last slot of a lap, and the u32 wrap of the write cursor.
        for write in [16u32 * 3, u32::MAX - 15] {
            let mut bytes = vec![6u8]; // 64 bytes: 4 entries
            bytes.extend_from_slice(&write.to_le_bytes());
            bytes.extend_from_slice(&[0; 4]);
            producer_push_contract(Bytes::new(&bytes));
        }
        assert_covered(3);
    }

    #[test]
    fn producer_on_head_write_contract_tests() {
        reset_covers();
        proptest!(ProptestConfig::with_cases(cases(4096)),
        |(pow in 0u8..32, write in any::<u32>(), pending in any::<u32>(), read in any::<u32>(), garbage in any::<bool>(), head in any::<u32>())| {
            let mut b = vec![pow];
            b.extend_from_slice(&write.to_le_bytes());
            b.extend_from_slice(&pending.to_le_bytes());
            b.extend_from_slice(&read.to_le_bytes());
            b.push(u8::from(garbage));
            b.extend_from_slice(&head.to_le_bytes());
            producer_on_head_write_contract(Bytes::new(&b));
        });
        assert_covered(3);
    }

    #[test]
    fn producer_and_consumer_agree_tests() {
        reset_covers();
        producer_and_consumer_agree(Bytes::new(&[]), 6);
        proptest!(ProptestConfig::with_cases(cases(4096)),
        |(bytes in proptest::collection::vec(any::<u8>(), 0..400), steps in 0usize..24)| {
            producer_and_consumer_agree(Bytes::new(&bytes), steps);
        });
        // Mostly pushes, then mostly reads and HEAD writes, from the last lap
        // before the u32 wrap.
        proptest!(ProptestConfig::with_cases(cases(1024)),
        |(ops in proptest::collection::vec(0u8..3, 1..24), fill in any::<u8>())| {
            let mut bytes = vec![1u8, 0xC0, 0xFF, 0xFF, 0xFF];
            bytes.extend_from_slice(&[fill; 64]);
            for op in &ops {
                // Each operation's draws: a push its record, a HEAD write its
                // failure draw (0: it succeeds), a poll none.
                bytes.push(*op);
                match op {
                    0 => bytes.extend_from_slice(&[fill; 16]),
                    2 => bytes.push(0),
                    _ => {}
                }
            }
            producer_and_consumer_agree(Bytes::new(&bytes), ops.len());
        });
        assert_covered(5);
    }
}
