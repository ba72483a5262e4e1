//! The host queue cursors, `sw_dma_queue`, descriptor-handoff seed §3.2-§3.3:
//! reserve slots in the TX and RX rings, then set the BDs at them.
//!
//! A [`SwDmaQueue`] is the seed's 12-byte `{next_desc_idx, desc_ring_id,
//! desc_count}`: the producer index within the ring, the ring id (phase) of the lap
//! that index is on, and the ring's depth. `reserve` hands out the current index of
//! both queues and advances both by `n` modulo their rings (nothing reaches the
//! device; the doorbell does that, §4). `set` writes the BDs at the reserved slots,
//! wrapping at the ring end, and stamps each with the ring id of its lap: 1 on the
//! first lap, +1 mod 4 at each wrap, `seed-vs-driver.md` point 2, driver §5.
//!
//! The seed's reserve is pure cursor arithmetic and never asks how far the device
//! has got, so two whole-ring reservations before the device consumes anything
//! would both succeed and the second would overwrite descriptors in flight. The
//! driver checks the room first (`udma_available_get`, `neuron-driver-facts.md`
//! §5). So [`reserve_descriptors`] takes where the device is in each ring, a
//! [`DeviceHead`] (the queue's head-pointer register: offset and ring id), and
//! refuses more than the free slots, G-DMA-AVAIL.

use zerocopy::IntoBytes;

use super::bd::{next_ring_id, Bd, INITIAL_RING_ID, RING_ID_COUNT};
use super::pring::{PRing, UDMA_MAX_RING_DESCS};
use super::{Direction, DmaError};
use crate::hal::DeviceMemory;

/// Size of libnrt's `sw_dma_queue`, seed §3.2: "each 12 bytes".
pub const SW_DMA_QUEUE_BYTES: usize = 12;
/// Offset of the TX queue in `hw_exec_queue`, `ehq + 0x08`, seed §3.2.
pub const EHQ_TXQ_OFFSET: usize = 0x08;
/// Offset of the RX queue in `hw_exec_queue`, `ehq + 0x14`, seed §3.2.
pub const EHQ_RXQ_OFFSET: usize = 0x14;

/// The cursor of one direction's ring, `sw_dma_queue`, seed §3.3.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct SwDmaQueue {
    next_desc_idx: u32,
    desc_ring_id: u32,
    desc_count: u32,
}

const _: () = assert!(core::mem::size_of::<SwDmaQueue>() == SW_DMA_QUEUE_BYTES);
const _: () = assert!(EHQ_RXQ_OFFSET - EHQ_TXQ_OFFSET == SW_DMA_QUEUE_BYTES);

/// Slots handed out by [`reserve_descriptors`] in one ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reservation {
    /// The first slot.
    pub idx: u32,
    /// The ring id of the lap `idx` is on.
    pub ring_id: u8,
    /// How many slots (the next `n - 1` follow, wrapping at the ring end).
    pub n: u32,
}

/// Where the device's consumer is in one ring: the index of the next descriptor
/// it will fetch and the ring id of that index's lap (driver §5: the queue bank's
/// head pointer, `+0x34`, `[23:0]` offset and `[31:30]` ring id).
///
/// Device input: [`SwDmaQueue::available`] refuses a head that cannot be (an
/// index outside the ring, or a position ahead of the producer) with
/// [`DmaError::BadHead`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceHead {
    /// The next descriptor the device fetches.
    pub idx: u32,
    /// The ring id of the lap `idx` is on.
    pub ring_id: u8,
}

/// The head pointer's offset field, driver §5: `[23:0]`.
pub const HEAD_PTR_IDX_MASK: u32 = 0x00FF_FFFF;
/// The head pointer's ring-id field position, driver §5: `[31:30]`.
pub const HEAD_PTR_RING_ID_SHIFT: u32 = 30;

impl DeviceHead {
    /// The head of a ring the device has not consumed from: index 0 on the first
    /// lap (ring id 1).
    pub const START: DeviceHead = DeviceHead { idx: 0, ring_id: INITIAL_RING_ID };

    /// The head from the queue's head-pointer register value (`[23:0]` offset,
    /// `[31:30]` ring id).
    pub const fn from_head_ptr(reg: u32) -> DeviceHead {
        DeviceHead { idx: reg & HEAD_PTR_IDX_MASK, ring_id: (reg >> HEAD_PTR_RING_ID_SHIFT) as u8 }
    }

    /// The head standing at `q`'s producer index: the device has consumed all
    /// that was produced (the ring is empty).
    pub const fn caught_up(q: &SwDmaQueue) -> DeviceHead {
        DeviceHead { idx: q.next_desc_idx, ring_id: (q.desc_ring_id & 3) as u8 }
    }
}

impl SwDmaQueue {
    /// A queue over a ring of `desc_count` descriptors: index 0, ring id 1.
    pub const fn new(desc_count: u32) -> Result<SwDmaQueue, DmaError> {
        if desc_count == 0 || desc_count > UDMA_MAX_RING_DESCS {
            return Err(DmaError::BadRingDepth(desc_count as u64));
        }
        Ok(SwDmaQueue { next_desc_idx: 0, desc_ring_id: INITIAL_RING_ID as u32, desc_count })
    }

    /// A queue over `ring` (its depth).
    pub fn for_ring(ring: &PRing<'_>) -> Result<SwDmaQueue, DmaError> {
        SwDmaQueue::new(ring.depth())
    }

    /// A queue from raw fields (as found in a host structure); checked at use.
    pub const fn from_raw(next_desc_idx: u32, desc_ring_id: u32, desc_count: u32) -> SwDmaQueue {
        SwDmaQueue { next_desc_idx, desc_ring_id, desc_count }
    }

    /// The producer index (`sw_dma_queue_get_next_desc_idx`).
    pub const fn next_desc_idx(&self) -> u32 {
        self.next_desc_idx
    }

    /// The ring id of the lap the producer index is on.
    pub const fn desc_ring_id(&self) -> u32 {
        self.desc_ring_id
    }

    /// The ring's depth.
    pub const fn desc_count(&self) -> u32 {
        self.desc_count
    }

    /// [`DmaError::BadCursor`] unless `next < count <= max` and the ring id is 2 bits.
    pub const fn check(&self) -> Result<(), DmaError> {
        if self.desc_count == 0
            || self.desc_count > UDMA_MAX_RING_DESCS
            || self.next_desc_idx >= self.desc_count
            || self.desc_ring_id >= RING_ID_COUNT as u32
        {
            return Err(DmaError::BadCursor);
        }
        Ok(())
    }

    /// Descriptors produced and not yet consumed by a device at `head`: the
    /// distance from the head to the producer index, counted over the four laps
    /// the 2-bit ring id tells apart, so a full ring (`desc_count` in flight) and
    /// an empty one (0) differ.
    ///
    /// [`DmaError::BadCursor`] for an invalid cursor; [`DmaError::BadHead`] for a
    /// head outside the ring, with a ring id above 3, or more than a ring ahead of
    /// the device (the device cannot be ahead of the producer).
    pub fn in_flight(&self, dir: Direction, head: DeviceHead) -> Result<u32, DmaError> {
        self.check()?;
        let depth = u64::from(self.desc_count);
        let bad = DmaError::BadHead { dir, idx: head.idx, ring_id: head.ring_id };
        if head.idx >= self.desc_count || head.ring_id >= RING_ID_COUNT {
            return Err(bad);
        }
        // Positions over four laps. The ring id is the lap number + 1 mod 4, and only
        // the difference of two positions mod four laps matters, so the id serves
        // as the lap number as it is.
        let span = depth * RING_ID_COUNT as u64;
        let produced = u64::from(self.desc_ring_id) * depth + u64::from(self.next_desc_idx);
        let consumed = u64::from(head.ring_id) * depth + u64::from(head.idx);
        // Both < span, so the distance `produced + span - consumed` lies in
        // 1..2 * span (<= 2^27) and `mod span` is at most one subtraction (no
        // division: cheaper here and for the solver in the reserve proof).
        let d = produced + span - consumed;
        let n = if d >= span { d - span } else { d };
        if n > depth {
            return Err(bad);
        }
        // n <= depth <= UDMA_MAX_RING_DESCS.
        Ok(n as u32)
    }

    /// Free slots for a device at `head` (`udma_available_get`): `desc_count -
    /// in_flight`, G-DMA-AVAIL. Errors as [`SwDmaQueue::in_flight`].
    pub fn available(&self, dir: Direction, head: DeviceHead) -> Result<u32, DmaError> {
        Ok(self.desc_count - self.in_flight(dir, head)?)
    }

    /// `n` slots from the producer index, refused when `n` exceeds the ring or
    /// the room left by a device at `head`.
    fn peek(&self, dir: Direction, head: DeviceHead, n: u32) -> Result<Reservation, DmaError> {
        self.check()?;
        if n > self.desc_count {
            return Err(DmaError::TooMany { requested: u64::from(n), max: u64::from(self.desc_count) });
        }
        let available = self.available(dir, head)?;
        if n > available {
            return Err(DmaError::RingFull { dir, requested: n, available });
        }
        // Checked above: fits in two bits.
        Ok(Reservation { idx: self.next_desc_idx, ring_id: self.desc_ring_id as u8, n })
    }

    /// `sw_dma_queue_inc_next_desc_idx`: advance by `n <= desc_count`, moving to the
    /// next ring id when the index wraps (reaching the end counts as a wrap).
    fn advance(&mut self, n: u32) {
        let next = u64::from(self.next_desc_idx) + u64::from(n);
        let count = u64::from(self.desc_count);
        if next >= count {
            // n <= count and next_desc_idx < count: next - count < count.
            self.next_desc_idx = (next - count) as u32;
            self.desc_ring_id = u32::from(next_ring_id(self.desc_ring_id as u8));
        } else {
            self.next_desc_idx = next as u32;
        }
    }
}

/// `sw_dma_queue_reserve_descriptors`, seed §3.3: the TX and RX reservations of `n`
/// slots, advancing both queues by `n` modulo their rings. `n` larger than either
/// ring, or a cursor outside its ring, is refused and neither queue moves.
///
/// `tx_head` and `rx_head` are where the device is in each ring (its head
/// pointers; [`DeviceHead::START`] before it has consumed anything). `n` above
/// the free slots of either ring is [`DmaError::RingFull`] (G-DMA-AVAIL; the
/// driver's `udma_available_get` check): the slots still hold descriptors the
/// device has not fetched. An impossible head is [`DmaError::BadHead`].
pub fn reserve_descriptors(
    txq: &mut SwDmaQueue,
    rxq: &mut SwDmaQueue,
    tx_head: DeviceHead,
    rx_head: DeviceHead,
    n: u32,
) -> Result<(Reservation, Reservation), DmaError> {
    let tx = txq.peek(Direction::Tx, tx_head, n)?;
    let rx = rxq.peek(Direction::Rx, rx_head, n)?;
    txq.advance(n);
    rxq.advance(n);
    Ok((tx, rx))
}

impl PRing<'_> {
    /// The two runs `[idx, min(idx + n, depth))` and `[0, rest)` of a reservation in
    /// this ring, or [`DmaError::BadCursor`] when it does not fit.
    fn runs(&self, res: &Reservation) -> Result<(u32, u32, u32), DmaError> {
        let depth = self.depth();
        if res.idx >= depth || res.n > depth || res.ring_id >= RING_ID_COUNT {
            return Err(DmaError::BadCursor);
        }
        let first = res.n.min(depth - res.idx);
        Ok((res.idx, first, res.n - first))
    }

    /// `sw_dma_queue_set_descriptors`, seed §3.2: write `bds` (exactly `res.n`) at
    /// the reserved slots of the host image, wrapping at the ring end, each stamped
    /// with the ring id of its lap (`res.ring_id`, then the next id after the wrap).
    pub fn set_descriptors(&mut self, res: &Reservation, bds: &[Bd]) -> Result<(), DmaError> {
        if bds.len() != res.n as usize {
            return Err(DmaError::TooMany { requested: bds.len() as u64, max: u64::from(res.n) });
        }
        let (idx, first, second) = self.runs(res)?;
        let (head, tail) = bds.split_at(first as usize);
        let lap_id = res.ring_id;
        let next_id = next_ring_id(lap_id);
        let end = idx as usize + first as usize;
        let run1 = self.image.get_mut(idx as usize..end).ok_or(DmaError::BadCursor)?;
        for (slot, bd) in run1.iter_mut().zip(head) {
            *slot = bd.with_ring_id(lap_id);
        }
        let run2 = self.image.get_mut(..second as usize).ok_or(DmaError::BadCursor)?;
        for (slot, bd) in run2.iter_mut().zip(tail) {
            *slot = bd.with_ring_id(next_id);
        }
        Ok(())
    }

    /// Copy the reserved slots of the host image to the device ring (`dmem_buf_copyin`,
    /// at most two copies: before and after the wrap).
    pub fn stage<M: DeviceMemory + ?Sized>(&self, mem: &mut M, res: &Reservation) -> Result<(), DmaError> {
        let (idx, first, second) = self.runs(res)?;
        let end = idx as usize + first as usize;
        let run1 = self.image.get(idx as usize..end).ok_or(DmaError::BadCursor)?;
        // idx < depth <= 2^24: the offset fits; the sum is checked.
        let addr = self.dev_addr().checked_add(u64::from(idx) * 16).ok_or(DmaError::AddressOverflow)?;
        if !run1.is_empty() {
            mem.copy_in(addr, run1.as_bytes()).map_err(DmaError::platform)?;
        }
        let run2 = self.image.get(..second as usize).ok_or(DmaError::BadCursor)?;
        if !run2.is_empty() {
            mem.copy_in(self.dev_addr(), run2.as_bytes()).map_err(DmaError::platform)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dma::bd::LenCtrl;
    use crate::dma::Direction;
    use proptest::prelude::*;

    fn bd(i: u64) -> Bd {
        Bd::new(LenCtrl::new().with_length(8).with_last(true), 0, i)
    }

    /// Reserve with a device that has consumed everything produced so far: the
    /// cursor arithmetic alone.
    fn reserve(tx: &mut SwDmaQueue, rx: &mut SwDmaQueue, n: u32) -> Result<(Reservation, Reservation), DmaError> {
        let (th, rh) = (DeviceHead::caught_up(tx), DeviceHead::caught_up(rx));
        reserve_descriptors(tx, rx, th, rh, n)
    }

    /// Two whole-ring reservations before the device consumes
    /// anything. The second would overwrite the first's descriptors in flight; the
    /// driver's `udma_available_get` refuses it, and so do we, G-DMA-AVAIL.
    #[test]
    fn a_second_whole_ring_reservation_waits_for_the_device() {
        let mut tx = SwDmaQueue::new(4).unwrap();
        let mut rx = SwDmaQueue::new(4).unwrap();
        let start = DeviceHead::START;
        assert_eq!(start, DeviceHead { idx: 0, ring_id: 1 });
        let (a, _) = reserve_descriptors(&mut tx, &mut rx, start, start, 4).unwrap();
        assert_eq!(a, Reservation { idx: 0, ring_id: 1, n: 4 });
        // The device is still at slot 0 of lap 1: four in flight, none free.
        assert_eq!(tx.in_flight(Direction::Tx, start), Ok(4));
        assert_eq!(tx.available(Direction::Tx, start), Ok(0));
        let full = DmaError::RingFull { dir: Direction::Tx, requested: 4, available: 0 };
        assert_eq!(reserve_descriptors(&mut tx, &mut rx, start, start, 4), Err(full));
        assert_eq!(full.status().code(), 7, "NRT_QUEUE_FULL");
        assert_eq!(reserve_descriptors(&mut tx, &mut rx, start, start, 1).unwrap_err().status().code(), 7);
        assert_eq!((tx.next_desc_idx(), tx.desc_ring_id()), (0, 2), "a refused reservation moves nothing");
        // The device fetched three (head at slot 3 of lap 1): three free.
        let h = DeviceHead { idx: 3, ring_id: 1 };
        assert_eq!(tx.available(Direction::Tx, h), Ok(3));
        assert_eq!(
            reserve_descriptors(&mut tx, &mut rx, h, h, 4),
            Err(DmaError::RingFull { dir: Direction::Tx, requested: 4, available: 3 })
        );
        // RX is checked too: TX has room, RX does not.
        assert_eq!(
            reserve_descriptors(&mut tx, &mut rx, h, start, 1),
            Err(DmaError::RingFull { dir: Direction::Rx, requested: 1, available: 0 })
        );
        let (r, _) = reserve_descriptors(&mut tx, &mut rx, h, DeviceHead { idx: 1, ring_id: 1 }, 1).unwrap();
        assert_eq!(r, Reservation { idx: 0, ring_id: 2, n: 1 });
        // The device caught up (slot 1 of lap 2): the whole ring is free again.
        let h = DeviceHead { idx: 1, ring_id: 2 };
        assert_eq!((tx.in_flight(Direction::Tx, h), rx.in_flight(Direction::Rx, h)), (Ok(0), Ok(0)));
        reserve_descriptors(&mut tx, &mut rx, h, h, 4).unwrap();
    }

    #[test]
    fn impossible_device_heads_are_refused() {
        let mut tx = SwDmaQueue::from_raw(2, 1, 4); // produced 2 on lap 1
        let mut rx = SwDmaQueue::new(4).unwrap();
        let bad = |idx, ring_id| DmaError::BadHead { dir: Direction::Tx, idx, ring_id };
        // Outside the ring, or a ring id above 3.
        assert_eq!(tx.in_flight(Direction::Tx, DeviceHead { idx: 4, ring_id: 1 }), Err(bad(4, 1)));
        assert_eq!(tx.in_flight(Direction::Tx, DeviceHead { idx: 0, ring_id: 4 }), Err(bad(0, 4)));
        // Refused for the field itself, even where the position arithmetic would
        // land within a ring of the producer.
        let q = SwDmaQueue::from_raw(2, 2, 4);
        assert_eq!(q.in_flight(Direction::Tx, DeviceHead { idx: 5, ring_id: 1 }), Err(bad(5, 1)));
        let q = SwDmaQueue::from_raw(1, 0, 4);
        assert_eq!(q.in_flight(Direction::Tx, DeviceHead { idx: 1, ring_id: 4 }), Err(bad(1, 4)));
        // Ahead of the producer: slot 3 of lap 1, or anything on lap 2.
        assert_eq!(tx.in_flight(Direction::Tx, DeviceHead { idx: 3, ring_id: 1 }), Err(bad(3, 1)));
        assert_eq!(tx.in_flight(Direction::Tx, DeviceHead { idx: 0, ring_id: 2 }), Err(bad(0, 2)));
        // Behind by a whole ring (slot 2 of the lap before, ring id 0) is full, not an error.
        assert_eq!(tx.in_flight(Direction::Tx, DeviceHead { idx: 2, ring_id: 0 }), Ok(4));
        assert_eq!(tx.in_flight(Direction::Tx, DeviceHead { idx: 1, ring_id: 0 }), Err(bad(1, 0)));
        assert_eq!(tx.in_flight(Direction::Tx, DeviceHead { idx: 0, ring_id: 1 }), Ok(2));
        let before = tx;
        assert_eq!(
            reserve_descriptors(&mut tx, &mut rx, DeviceHead { idx: 3, ring_id: 1 }, DeviceHead::START, 1),
            Err(bad(3, 1))
        );
        assert_eq!(tx, before);
        assert_eq!(bad(3, 1).status().code(), 2);
        // An invalid cursor is reported as such, whatever the head.
        assert_eq!(SwDmaQueue::from_raw(4, 1, 4).in_flight(Direction::Rx, DeviceHead::START), Err(DmaError::BadCursor));
    }

    #[test]
    fn device_head_from_the_head_pointer_register() {
        // Driver §5: [23:0] offset, [31:30] ring id; bits 29:24 ignored.
        assert_eq!(DeviceHead::from_head_ptr(0x4000_0005), DeviceHead { idx: 5, ring_id: 1 });
        assert_eq!(DeviceHead::from_head_ptr(0xFFFF_FFFF), DeviceHead { idx: 0xFF_FFFF, ring_id: 3 });
        assert_eq!(DeviceHead::from_head_ptr(0x3F00_0000), DeviceHead { idx: 0, ring_id: 0 });
        assert_eq!(DeviceHead::caught_up(&SwDmaQueue::from_raw(7, 3, 9)), DeviceHead { idx: 7, ring_id: 3 });
    }

    #[test]
    fn reserve_hands_out_both_slots_and_advances_mod_the_ring() {
        let mut tx = SwDmaQueue::new(8).unwrap();
        let mut rx = SwDmaQueue::new(4).unwrap();
        assert_eq!((tx.next_desc_idx(), tx.desc_ring_id(), tx.desc_count()), (0, 1, 8));
        let (a, b) = reserve(&mut tx, &mut rx, 3).unwrap();
        assert_eq!(a, Reservation { idx: 0, ring_id: 1, n: 3 });
        assert_eq!(b, Reservation { idx: 0, ring_id: 1, n: 3 });
        assert_eq!((tx.next_desc_idx(), tx.desc_ring_id()), (3, 1));
        assert_eq!((rx.next_desc_idx(), rx.desc_ring_id()), (3, 1));
        let (a, b) = reserve(&mut tx, &mut rx, 2).unwrap();
        assert_eq!((a.idx, a.ring_id, b.idx, b.ring_id), (3, 1, 3, 1));
        // rx wrapped: 3 + 2 = 5 -> 1, ring id 2.
        assert_eq!((rx.next_desc_idx(), rx.desc_ring_id()), (1, 2));
        assert_eq!((tx.next_desc_idx(), tx.desc_ring_id()), (5, 1));
        // n larger than either ring is refused; neither queue moves.
        assert_eq!(reserve(&mut tx, &mut rx, 5), Err(DmaError::TooMany { requested: 5, max: 4 }));
        assert_eq!((tx.next_desc_idx(), rx.next_desc_idx()), (5, 1));
        // n equal to the ring is a full lap.
        reserve(&mut tx, &mut rx, 4).unwrap();
        assert_eq!((rx.next_desc_idx(), rx.desc_ring_id()), (1, 3));
        assert_eq!((tx.next_desc_idx(), tx.desc_ring_id()), (1, 2));
    }

    #[test]
    fn ring_ids_cycle_1_2_3_0_1() {
        let mut tx = SwDmaQueue::new(2).unwrap();
        let mut rx = SwDmaQueue::new(2).unwrap();
        let ids: Vec<u8> = (0..6).map(|_| reserve(&mut tx, &mut rx, 2).unwrap().0.ring_id).collect();
        assert_eq!(ids, [1, 2, 3, 0, 1, 2]);
    }

    #[test]
    fn bad_queues_are_refused() {
        assert_eq!(SwDmaQueue::new(0), Err(DmaError::BadRingDepth(0)));
        assert_eq!(SwDmaQueue::new(1 << 24), Err(DmaError::BadRingDepth(1 << 24)));
        // The UDMA maximum (driver §5: 2^24 - 16 descriptors) is a valid ring; one more is not.
        assert_eq!(UDMA_MAX_RING_DESCS, 0x00FF_FFF0);
        assert_eq!(SwDmaQueue::new(0x00FF_FFF0).map(|q| q.desc_count()), Ok(0x00FF_FFF0));
        assert_eq!(SwDmaQueue::new(0x00FF_FFF1), Err(DmaError::BadRingDepth(0x00FF_FFF1)));
        let mut ok = SwDmaQueue::new(4).unwrap();
        for bad in [
            SwDmaQueue::from_raw(4, 1, 4),
            SwDmaQueue::from_raw(0, 4, 4),
            SwDmaQueue::from_raw(0, 1, 0),
            SwDmaQueue::from_raw(0, 1, 0x00FF_FFF1),
        ] {
            let mut b = bad;
            assert_eq!(reserve(&mut ok, &mut b, 1), Err(DmaError::BadCursor));
            assert_eq!(reserve(&mut b, &mut ok, 1), Err(DmaError::BadCursor));
        }
        assert_eq!(ok.next_desc_idx(), 0);
    }

    #[test]
    fn set_wraps_and_stamps_the_lap_ring_id() {
        let mut img = [Bd::ZERO; 4];
        let mut ring = PRing::new(Direction::Tx, 0x4000, 2, &mut img).unwrap();
        let mut tx = SwDmaQueue::for_ring(&ring).unwrap();
        let mut rx = SwDmaQueue::new(4).unwrap();
        let (r, _) = reserve(&mut tx, &mut rx, 3).unwrap();
        ring.set_descriptors(&r, &[bd(10), bd(11), bd(12)]).unwrap();
        let (r, _) = reserve(&mut tx, &mut rx, 3).unwrap();
        assert_eq!(r, Reservation { idx: 3, ring_id: 1, n: 3 });
        ring.set_descriptors(&r, &[bd(13), bd(14), bd(15)]).unwrap();
        let got: Vec<(u64, u8)> = ring.image().iter().map(|b| (b.addr(), b.ctrl().ring_id())).collect();
        // Slot 3 is on lap 1; slots 0 and 1 were rewritten on lap 2; slot 2 is from lap 1.
        assert_eq!(got, [(14, 2), (15, 2), (12, 1), (13, 1)]);
        assert!(ring.image().iter().all(|b| b.ctrl().length() == 8 && b.ctrl().last()));

        // Staging copies the two runs: slot 3, then slots 0..2.
        #[derive(Default)]
        struct Mem(Vec<(u64, usize)>);
        impl crate::hal::ErrorType for Mem {
            type Error = crate::hal::ErrorKind;
        }
        impl DeviceMemory for Mem {
            fn copy_in(&mut self, addr: u64, data: &[u8]) -> Result<(), Self::Error> {
                self.0.push((addr, data.len()));
                Ok(())
            }
            fn copy_out(&mut self, _: u64, _: &mut [u8]) -> Result<(), Self::Error> {
                Ok(())
            }
        }
        let mut mem = Mem::default();
        ring.stage(&mut mem, &r).unwrap();
        assert_eq!(mem.0, [(0x4000 + 3 * 16, 16), (0x4000, 32)]);
    }

    #[test]
    fn set_refuses_reservations_that_do_not_fit() {
        let mut img = [Bd::ZERO; 4];
        let mut ring = PRing::new(Direction::Rx, 0, 2, &mut img).unwrap();
        let r = Reservation { idx: 4, ring_id: 1, n: 1 };
        assert_eq!(ring.set_descriptors(&r, &[bd(0)]), Err(DmaError::BadCursor));
        let r = Reservation { idx: 0, ring_id: 1, n: 5 };
        assert_eq!(ring.set_descriptors(&r, &[bd(0); 5]), Err(DmaError::BadCursor));
        let r = Reservation { idx: 0, ring_id: 1, n: 2 };
        assert_eq!(ring.set_descriptors(&r, &[bd(0)]), Err(DmaError::TooMany { requested: 1, max: 2 }));
        assert!(ring.image().iter().all(|b| *b == Bd::ZERO));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 4 } else { 256 }))]

        /// The in-flight count against a free-running model: a producer `produced`
        /// descriptors in, a device `behind` descriptors behind it (or ahead, modulo
        /// the four laps the ring id tells apart): exactly `behind mod 4 laps` when
        /// that is at most a ring, else an impossible head.
        #[test]
        fn in_flight_matches_a_free_running_model(depth in 1u32..20, produced in 0u64..400, behind in 0u64..200) {
            let d = u64::from(depth);
            let pos = |p: u64| ((p % d) as u32, ((1 + p / d) % 4) as u8);
            let (idx, id) = pos(produced);
            let q = SwDmaQueue::from_raw(idx, u32::from(id), depth);
            // The consumer, `behind` back, shifted by 100 x four laps so it stays >= 0.
            let c = produced + 400 * d - behind;
            let (hidx, hid) = pos(c);
            let head = DeviceHead { idx: hidx, ring_id: hid };
            let want = behind % (4 * d);
            match q.in_flight(Direction::Rx, head) {
                Ok(n) => {
                    prop_assert!(want <= d);
                    prop_assert_eq!(u64::from(n), want);
                    prop_assert_eq!(q.available(Direction::Rx, head), Ok(depth - n));
                }
                Err(e) => {
                    prop_assert!(want > d);
                    prop_assert_eq!(e, DmaError::BadHead { dir: Direction::Rx, idx: hidx, ring_id: hid });
                }
            }
        }

        /// Reserve never hands out a slot outside the ring, wraps exactly (a free-running
        /// model agrees), and set writes only inside the image with the lap's ring id.
        #[test]
        fn reserve_and_set_stay_in_the_ring(
            depth in 1u32..40,
            ns in proptest::collection::vec(0u32..48, 1..30),
        ) {
            let mut img = vec![Bd::ZERO; depth as usize];
            let mut ring = PRing::new(Direction::Tx, 0, 2, &mut img).unwrap();
            let mut tx = SwDmaQueue::new(depth).unwrap();
            let mut rx = SwDmaQueue::new(depth).unwrap();
            let mut produced: u64 = 0; // free-running model
            for n in ns {
                match reserve(&mut tx, &mut rx, n) {
                    Ok((r, r2)) => {
                        prop_assert!(n <= depth);
                        prop_assert_eq!(r, r2);
                        prop_assert!(r.idx < depth);
                        prop_assert_eq!(u64::from(r.idx), produced % u64::from(depth));
                        let lap = produced / u64::from(depth);
                        prop_assert_eq!(u64::from(r.ring_id), (1 + lap) % 4);
                        let bds: Vec<Bd> = (0..n).map(|k| bd(produced + u64::from(k))).collect();
                        ring.set_descriptors(&r, &bds).unwrap();
                        for k in 0..u64::from(n) {
                            let p = produced + k;
                            let slot = &ring.image()[(p % u64::from(depth)) as usize];
                            prop_assert_eq!(slot.addr(), p);
                            prop_assert_eq!(u64::from(slot.ctrl().ring_id()), (1 + p / u64::from(depth)) % 4);
                        }
                        produced += u64::from(n);
                    }
                    Err(e) => {
                        prop_assert!(n > depth);
                        prop_assert_eq!(e, DmaError::TooMany { requested: u64::from(n), max: u64::from(depth) });
                    }
                }
                prop_assert!(tx.next_desc_idx() < depth);
                prop_assert_eq!(u64::from(tx.next_desc_idx()), produced % u64::from(depth));
            }
        }
    }
}
