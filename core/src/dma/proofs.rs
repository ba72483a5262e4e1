//! Proofs of the descriptor handoff's arithmetic (descriptor-handoff seed §2.4,
//! §3.3, §4.1, §4.2).

use super::bd::{next_ring_id, Bd, LenCtrl, RING_ID_COUNT};
use super::doorbell::{host_trigger_offset, UdmaLayout, HOST_TRIGGER_OFFSET};
use super::pring::{PRing, UDMA_MAX_RING_DESCS};
use super::queue::{reserve_descriptors, DeviceHead, Reservation, SwDmaQueue};
use super::vring::{addr_rewrite, Relocation};
use super::{Direction, DmaError};
use crate::arch::Arch;
use crate::proofs::{cover, Any};

/// Seed §3.3 (`sw_dma_queue_reserve_descriptors`: read both `next_desc_idx`, hand
/// them out, advance both by `n`) with the ring-id laps of `queue.rs`: for any two
/// valid cursors and any `n`, a reservation hands out each queue's current index
/// (inside its ring) and lap id; both cursors advance to exactly `(next + n) mod
/// depth`, and the lap id moves to the next (+1 mod 4) exactly when the index
/// reaches or passes the end; `n` above either ring is refused and neither queue
/// moves; an invalid cursor is refused the same way (with `BadCursor`, or
/// `TooMany` when `n` is above the other, valid, queue checked first).
///
/// Precondition: none: any two cursors, valid (`SwDmaQueue::check()`) or not, and
/// any `n` (under kani too, so the refusal is proved, not only sampled).
pub(crate) fn reserve_stays_in_ring_and_wraps_exactly(tx: (u32, u32, u32), rx: (u32, u32, u32), n: u32) {
    let mut txq = SwDmaQueue::from_raw(tx.0, tx.1, tx.2);
    let mut rxq = SwDmaQueue::from_raw(rx.0, rx.1, rx.2);
    let valid = txq.check().is_ok() && rxq.check().is_ok();
    let (tx0, rx0) = (txq, rxq);
    // The device has consumed everything produced: the whole ring is free.
    let (th, rh) = (DeviceHead::caught_up(&txq), DeviceHead::caught_up(&rxq));
    let r = reserve_descriptors(&mut txq, &mut rxq, th, rh, n);
    if !valid {
        cover!(true, "reserve: an invalid cursor");
        // Refused: for the cursor, or for `n` when the other queue is checked first.
        assert!(matches!(r, Err(DmaError::BadCursor | DmaError::TooMany { .. })));
        assert_eq!((txq, rxq), (tx0, rx0));
        return;
    }
    let fits = n <= tx0.desc_count() && n <= rx0.desc_count();
    cover!(!fits, "reserve: n above a ring is refused");
    match r {
        Err(e) => {
            assert!(!fits);
            assert!(matches!(e, DmaError::TooMany { .. }));
            assert_eq!((txq, rxq), (tx0, rx0), "a refused reservation moves nothing");
        }
        Ok((a, b)) => {
            assert!(fits);
            for (res, before, after) in [(a, tx0, txq), (b, rx0, rxq)] {
                let depth = before.desc_count();
                assert_eq!(res, Reservation { idx: before.next_desc_idx(), ring_id: before.desc_ring_id() as u8, n });
                assert!(res.idx < depth, "a reserved slot outside the ring");
                assert!(after.next_desc_idx() < depth);
                assert!(after.check().is_ok());
                let end = u64::from(before.next_desc_idx()) + u64::from(n);
                // end < 2 * depth (idx < depth, n <= depth): `end mod depth` is
                // one subtraction (a `%` by the symbolic depth would be a 64-bit
                // division for the solver, twice per harness).
                assert!(end < 2 * u64::from(depth));
                let wrapped_end = if end >= u64::from(depth) { end - u64::from(depth) } else { end };
                assert_eq!(u64::from(after.next_desc_idx()), wrapped_end);
                let wrapped = end >= u64::from(depth);
                cover!(wrapped, "reserve: the index wraps");
                cover!(!wrapped && n > 0, "reserve: the index advances within the lap");
                cover!(end == u64::from(depth), "reserve: the index reaches the end exactly");
                let want_id =
                    if wrapped { u32::from(next_ring_id(before.desc_ring_id() as u8)) } else { before.desc_ring_id() };
                assert_eq!(after.desc_ring_id(), want_id);
                assert!(after.desc_ring_id() < u32::from(RING_ID_COUNT));
                assert_eq!(after.desc_count(), depth);
            }
        }
    }
}

/// Most descriptors a `set` harness ring holds (kani's unwind bound, 7, is set by
/// the slot loops: up to `depth + 1` = 6 iterations and the exit test; BDs are
/// compared field by field, [`same_bd`], since `==` on a BD compares `buf_ptr`'s
/// 8 bytes in a `memcmp` loop that alone would need 9).
/// Depths 1 to 5 realise every relation the two
/// runs of `set_descriptors` depend on: `idx` at the start, inside and at the last
/// slot; `n` of 0, inside the first run, ending exactly at the ring's end,
/// wrapping, the whole ring, and above it (refused); a deeper ring only repeats
/// the same per-slot loop body.
pub(crate) const PROOF_MAX_DEPTH: usize = 5;

/// Seed §3.2 (`sw_dma_queue_set_descriptors` writes the BDs into the bound prings
/// at the reserved slots): a reservation from a valid cursor writes exactly its `n`
/// slots, `(idx + k) mod depth`, with the lap's ring id before the wrap and the
/// next one after it, and no other slot of the image.
///
/// Precondition: `SwDmaQueue::check()` on the cursor, and a depth the harness
/// image holds.
pub(crate) fn set_writes_exactly_the_reserved_slots<A: Any>(mut any: A) {
    let depth = any.below(PROOF_MAX_DEPTH as u32) + 1;
    let q = SwDmaQueue::from_raw(any.below(depth), any.below(u32::from(RING_ID_COUNT)), depth);
    assert!(q.check().is_ok());
    let n = any.below(depth + 2);
    let mut txq = q;
    let mut rxq = SwDmaQueue::from_raw(0, 1, UDMA_MAX_RING_DESCS);
    let (th, rh) = (DeviceHead::caught_up(&txq), DeviceHead::caught_up(&rxq));
    let Ok((res, _)) = reserve_descriptors(&mut txq, &mut rxq, th, rh, n) else {
        cover!(true, "set: a refused reservation");
        assert!(n > depth);
        return;
    };
    let marker = Bd::new(LenCtrl::new(), 0xDEAD_BEEF, u64::MAX);
    let mut image = [marker; PROOF_MAX_DEPTH];
    let mut bds = [Bd::ZERO; PROOF_MAX_DEPTH];
    for (k, bd) in bds.iter_mut().enumerate() {
        *bd = Bd::new(LenCtrl::new().with_length(16), k as u32, 0x1000 + k as u64);
    }
    let image = &mut image[..depth as usize];
    let mut ring = match PRing::new(Direction::Tx, 0, 2, image) {
        Ok(r) => r,
        Err(_) => panic!("a depth of 1..=PROOF_MAX_DEPTH is a valid ring"),
    };
    assert!(ring.set_descriptors(&res, &bds[..n as usize]).is_ok());
    let mut written = [false; PROOF_MAX_DEPTH];
    for k in 0..n {
        let pos = res.idx + k;
        // pos < idx + n <= 2 * depth: one subtraction wraps it (a `%` by the
        // symbolic depth would be a 32-bit division per slot for the solver).
        assert!(pos < 2 * depth);
        let slot = if pos >= depth { pos - depth } else { pos } as usize;
        written[slot] = true;
        let want_id = if pos >= depth { next_ring_id(res.ring_id) } else { res.ring_id };
        cover!(pos >= depth, "set: a slot after the wrap");
        let got = ring.image()[slot];
        assert_eq!(got.addr(), 0x1000 + u64::from(k));
        assert_eq!(got.meta_ctrl.get(), k);
        assert_eq!(got.ctrl().ring_id(), want_id);
    }
    for (slot, w) in written.iter().enumerate().take(depth as usize) {
        if !w {
            cover!(true, "set: an untouched slot");
            assert!(same_bd(&ring.image()[slot], &marker), "a slot outside the reservation was written");
        }
    }
}

/// `a == b`, field by field as integers (see [`PROOF_MAX_DEPTH`] for why not `==`).
fn same_bd(a: &Bd, b: &Bd) -> bool {
    a.len_ctrl.get() == b.len_ctrl.get() && a.meta_ctrl.get() == b.meta_ctrl.get() && a.buf_ptr.get() == b.buf_ptr.get()
}

/// BDs a relocation harness rewrites.
pub(crate) const PROOF_BDS: usize = 4;

/// Seed §2.4 (`vring_addr_rewrite`: `if buf_ptr >= old_base && buf_ptr <
/// old_base + size: bd[0] += delta`): relocation changes exactly the BDs whose address lies
/// inside the window, moving each to the same offset from the new base, and changes
/// no other BD and no other byte of any BD.
///
/// Precondition: the production check, `Relocation::new(old, size, new).is_ok()`
/// (both windows inside the 64-bit space).
pub(crate) fn relocation_changes_exactly_the_window<A: Any>(mut any: A) {
    let (old_base, size, new_base) = (any.u64(), any.u64(), any.u64());
    let reloc = Relocation::new(old_base, size, new_base);
    #[cfg(kani)]
    kani::assume(reloc.is_ok());
    let Ok(reloc) = reloc else {
        assert!(u128::from(old_base) + u128::from(size) > 1 << 64 || u128::from(new_base) + u128::from(size) > 1 << 64);
        return;
    };
    let mut bds = [Bd::ZERO; PROOF_BDS];
    for bd in bds.iter_mut() {
        // Some addresses near the window's edges, some anywhere.
        let addr = match any.u8() % 4 {
            // Inside the window: an offset below `size` (no `%`: a 64-bit
            // modulo by a symbolic size is most of this proof's solver time).
            0 => {
                let off = any.u64();
                old_base.wrapping_add(if off < size { off } else { off >> 1 & size >> 1 })
            }
            1 => old_base.wrapping_add(size),
            2 => old_base.wrapping_sub(1),
            _ => any.u64(),
        };
        *bd = Bd::new(LenCtrl::from_bits(any.u32()), any.u32(), addr);
    }
    let before = bds;
    addr_rewrite(&mut bds, &reloc);
    for (b, a) in before.iter().zip(bds.iter()) {
        let addr = u128::from(b.addr());
        let inside = addr >= u128::from(old_base) && addr < u128::from(old_base) + u128::from(size);
        cover!(inside, "relocation: a BD inside the window moves");
        cover!(!inside, "relocation: a BD outside the window stays");
        assert_eq!(a.len_ctrl, b.len_ctrl);
        assert_eq!(a.meta_ctrl, b.meta_ctrl);
        assert_eq!(reloc.contains(b.addr()), inside);
        if inside {
            assert_eq!(u128::from(a.addr()), u128::from(new_base) + addr - u128::from(old_base));
        } else {
            assert_eq!(a.addr(), b.addr());
        }
    }
}

/// Seed §4.1 (`get_dma_queue_tail_inc_offset` = base + {m2s,s2m} offset + queue
/// offset + tail-inc offset, with the cayman leaf `0x1038`, data tail-inc `0x10e0`,
/// sw_ctrl `0x10b0`) and §4.2 (`xt_local_reg + 0x15a0`): for every arch, BAR base,
/// queue and direction, the composed doorbell offsets never overflow: each is
/// either exactly `base + block + 0x1000 + queue * 0x1000 + reg` (computed without
/// wrapping) and inside the engine window relative to `base`, or an error saying
/// which guard refused (a queue above 15, or a sum past `u64::MAX`).
///
/// Precondition: none (every base and queue is an input the composition must judge).
pub(crate) fn doorbell_offsets_never_overflow(arch: u8, base: u64, queue: u32, tx: bool, xt_local: u64) {
    let arch = match arch % 3 {
        0 => Arch::Sunda,
        1 => Arch::Cayman,
        _ => Arch::Mariana,
    };
    let dir = if tx { Direction::Tx } else { Direction::Rx };
    let l = UdmaLayout::of(arch);
    let block = match dir {
        Direction::Tx => l.m2s,
        Direction::Rx => l.s2m,
    };
    let sw_ctrl = match dir {
        Direction::Tx => l.m2s_sw_ctrl,
        Direction::Rx => l.s2m_sw_ctrl,
    };
    let regs = [
        (l.tail_inc_offset(base, queue, dir), Some(l.tail_inc)),
        (l.data_tail_inc_offset(base, queue, dir), l.data_tail_inc),
        (l.sw_ctrl_offset(base, queue, dir), Some(sw_ctrl)),
    ];
    for (got, reg) in regs {
        let Some(reg) = reg else {
            assert_eq!(got, Err(DmaError::Unsupported));
            continue;
        };
        if queue >= l.queues {
            cover!(true, "doorbell: queue above 15 refused");
            assert_eq!(got, Err(DmaError::BadQueue(queue)));
            continue;
        }
        let rel = u128::from(block)
            + u128::from(l.queue_first)
            + u128::from(queue) * u128::from(l.queue_stride)
            + u128::from(reg);
        assert!(rel < u128::from(l.engine_window), "a register outside the engine window");
        let want = u128::from(base) + rel;
        if want > u128::from(u64::MAX) {
            cover!(true, "doorbell: base + offset past u64::MAX refused");
            assert_eq!(got, Err(DmaError::AddressOverflow));
        } else {
            cover!(true, "doorbell: composed");
            assert_eq!(got.map(u128::from), Ok(want));
        }
    }
    let trig = host_trigger_offset(xt_local);
    match xt_local.checked_add(HOST_TRIGGER_OFFSET) {
        Some(v) => assert_eq!(trig, Ok(v)),
        None => {
            cover!(true, "doorbell: host trigger past u64::MAX refused");
            assert_eq!(trig, Err(DmaError::AddressOverflow));
        }
    }
}

#[cfg(kani)]
#[kani::proof]
fn prove_reserve_stays_in_ring_and_wraps_exactly() {
    reserve_stays_in_ring_and_wraps_exactly(kani::any(), kani::any(), kani::any());
}

#[cfg(kani)]
#[kani::proof]
#[kani::unwind(7)]
fn prove_set_writes_exactly_the_reserved_slots() {
    set_writes_exactly_the_reserved_slots(crate::proofs::KaniAny);
}

#[cfg(kani)]
#[kani::proof]
#[kani::unwind(5)]
fn prove_relocation_changes_exactly_the_window() {
    relocation_changes_exactly_the_window(crate::proofs::KaniAny);
}

#[cfg(kani)]
#[kani::proof]
#[kani::unwind(4)]
fn prove_doorbell_offsets_never_overflow() {
    doorbell_offsets_never_overflow(kani::any(), kani::any(), kani::any(), kani::any(), kani::any());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proofs::{assert_covered, cases, reset_covers, Bytes};
    use proptest::prelude::*;

    fn cursor() -> impl Strategy<Value = (u32, u32, u32)> {
        prop_oneof![
            // Valid cursors, small rings (wraps are frequent).
            (1u32..12).prop_flat_map(|d| (0..d, 0u32..4, Just(d))),
            // Valid cursors anywhere up to the largest ring.
            (1u32..=UDMA_MAX_RING_DESCS).prop_flat_map(|d| (0..d, 0u32..4, Just(d))),
            // Anything (mostly invalid).
            (any::<u32>(), any::<u32>(), any::<u32>()),
        ]
    }

    #[test]
    fn reserve_stays_in_ring_and_wraps_exactly_tests() {
        reset_covers();
        // Every cursor of rings up to depth 5 and every n up to 7.
        let max_depth = if cfg!(miri) { 2 } else { 5 };
        for d in 1..=max_depth {
            for i in 0..d {
                for id in 0..4 {
                    for n in 0..=7 {
                        reserve_stays_in_ring_and_wraps_exactly((i, id, d), (0, 1, 3), n);
                        reserve_stays_in_ring_and_wraps_exactly((0, 1, 7), (i, id, d), n);
                    }
                }
            }
        }
        reserve_stays_in_ring_and_wraps_exactly((0, 1, 0), (0, 1, 4), 1);
        reserve_stays_in_ring_and_wraps_exactly((UDMA_MAX_RING_DESCS - 1, 3, UDMA_MAX_RING_DESCS), (0, 1, 4), 4);
        proptest!(ProptestConfig::with_cases(cases(4096)), |(tx in cursor(), rx in cursor(), n in prop_oneof![0u32..16, any::<u32>()])| {
            reserve_stays_in_ring_and_wraps_exactly(tx, rx, n);
        });
        assert_covered(5);
    }

    #[test]
    fn set_writes_exactly_the_reserved_slots_tests() {
        reset_covers();
        proptest!(ProptestConfig::with_cases(cases(2048)), |(bytes in proptest::collection::vec(any::<u8>(), 0..16))| {
            set_writes_exactly_the_reserved_slots(Bytes::new(&bytes));
        });
        assert_covered(3);
    }

    #[test]
    fn relocation_changes_exactly_the_window_tests() {
        reset_covers();
        proptest!(ProptestConfig::with_cases(cases(4096)), |(bytes in proptest::collection::vec(any::<u8>(), 24..120))| {
            relocation_changes_exactly_the_window(Bytes::new(&bytes));
        });
        // Windows that end exactly at 2^64, and empty windows.
        let mut edge = Vec::new();
        edge.extend_from_slice(&(u64::MAX - 0xF).to_le_bytes());
        edge.extend_from_slice(&0x10u64.to_le_bytes());
        edge.extend_from_slice(&0u64.to_le_bytes());
        for k in 0..4u8 {
            edge.extend_from_slice(&[k, 0xF, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]);
        }
        relocation_changes_exactly_the_window(Bytes::new(&edge));
        relocation_changes_exactly_the_window(Bytes::new(&[0; 8]));
        assert_covered(2);
    }

    #[test]
    fn doorbell_offsets_never_overflow_tests() {
        reset_covers();
        let bases = [0u64, 0x100, 0x3000_0000, u64::MAX - 0x3_FFFF, u64::MAX - 0x2_1038, u64::MAX - 0x2_1037, u64::MAX];
        let queues = [0, 1, 15, 16, 17, u32::MAX];
        // Under Miri, the edges only (pure arithmetic: the whole grid runs natively).
        let (bases, queues): (&[u64], &[u32]) =
            if cfg!(miri) { (&[0, u64::MAX - 0x2_1038, u64::MAX], &[0, 16, u32::MAX]) } else { (&bases, &queues) };
        for arch in 0..3 {
            for &base in bases {
                for &queue in queues {
                    for tx in [false, true] {
                        doorbell_offsets_never_overflow(arch, base, queue, tx, base);
                    }
                }
            }
        }
        proptest!(ProptestConfig::with_cases(cases(4096)),
        |(arch in any::<u8>(), base in prop_oneof![any::<u64>(), (u64::MAX - 0x4_0000)..=u64::MAX],
          queue in prop_oneof![0u32..20, any::<u32>()], tx in any::<bool>(), xt in any::<u64>())| {
            doorbell_offsets_never_overflow(arch, base, queue, tx, xt);
        });
        assert_covered(4);
    }
}
