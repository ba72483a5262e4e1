//! The NQ ring protocol: cursor arithmetic over ring memory the device writes.
//!
//! Following the public driver, `seed-vs-driver.md` point 5: a ring is a
//! power-of-two number of **bytes**; the consumer keeps a free-running read
//! cursor; a slot is fresh when its phase bit (bit 7 of byte 3, G-PHASE) equals
//! the parity the current lap expects (set on lap 0, clear on lap 1, ...); after a
//! batch the consumer writes HEAD (the read pointer in bytes, within the ring)
//! back so the device knows what is free. Overflow is the device's fact: it finds
//! no room before HEAD, drops the record, and raises INTC cause bit 29.
//!
//! Whatever the device writes, [`NqRing::poll`] touches one slot inside the ring,
//! consumes a fresh slot at most once per lap, and never loops: the caller bounds
//! each batch by [`NqRing::batch_limit`].
//!
//! A batch never consumes a whole lap (`batch_limit` is at most `entries - 1`), so
//! the HEAD value written after it always differs from the one before when
//! anything was consumed: the device can tell "nothing read" from "everything
//! read" from the byte offset alone, [`NqProducer::on_head_write`], G-HEAD.

use heapless::Deque;

use super::entry::{field, ENTRY_SIZE};
use crate::arch::{ENGINES_PER_CORE, MAX_CORES};
use crate::hal::NqRings;

/// The smallest ring: two entries (one usable per batch). With the batch capped
/// at `entries - 1`, smaller rings could never be read, G-RING-MIN.
pub const MIN_RING_BYTES: u32 = 2 * ENTRY_SIZE as u32;
/// The largest ring we accept: 1 GiB (the driver's rings are far smaller).
pub const MAX_RING_BYTES: u32 = 1 << 30;

/// Depth of the bounded error subscriber ring (libnrt: 4 MB of backing; here a
/// fixed 64 records, oldest dropped and counted when full; G-ERR-RING).
pub const ERROR_SUBSCRIBER_DEPTH: usize = 64;

const ENTRY: u32 = ENTRY_SIZE as u32;

/// Why a ring configuration was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RingError {
    /// The size is not a power of two, or below [`MIN_RING_BYTES`], or above [`MAX_RING_BYTES`].
    BadSize(u32),
    /// `(core, nq)` is outside the table.
    BadIndex,
}

/// The phase a fresh slot carries on the lap that `cursor` (free-running bytes)
/// is in, for a ring of `size` bytes (a power of two): set on even laps.
#[inline]
pub const fn lap_phase(cursor: u32, size: u32) -> bool {
    // `size` is a power of two <= 2^30, so 2^32 is a multiple of 2*size and the
    // parity stays right across the u32 wrap of the cursor.
    (cursor / size) & 1 == 0
}

/// The consumer side of one ring.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NqRing {
    /// Bytes; 0 when unbound.
    size: u32,
    /// Free-running read cursor in bytes.
    cursor: u32,
    /// The cursor at the last HEAD write that succeeded: what the device knows.
    acked: u32,
}

impl NqRing {
    /// An unbound ring: every poll fails with `NotMapped` at the caller.
    pub const UNBOUND: NqRing = NqRing { size: 0, cursor: 0, acked: 0 };

    /// A ring of `size_bytes` bytes, cursor at 0.
    pub const fn new(size_bytes: u32) -> Result<NqRing, RingError> {
        if size_bytes < MIN_RING_BYTES || size_bytes > MAX_RING_BYTES || !size_bytes.is_power_of_two() {
            return Err(RingError::BadSize(size_bytes));
        }
        Ok(NqRing { size: size_bytes, cursor: 0, acked: 0 })
    }

    /// `true` when the ring has a valid size.
    pub const fn is_bound(&self) -> bool {
        self.size != 0
    }

    /// Size in bytes (0 when unbound).
    pub const fn size_bytes(&self) -> u32 {
        self.size
    }

    /// Number of 16-byte slots.
    pub const fn entries(&self) -> u32 {
        self.size / ENTRY
    }

    /// The free-running read cursor, in bytes.
    pub const fn cursor(&self) -> u32 {
        self.cursor
    }

    /// The HEAD value to hand back: the read pointer in bytes, within the ring.
    pub const fn head(&self) -> u32 {
        self.cursor & self.size.wrapping_sub(1)
    }

    /// Entries read since the last HEAD write that succeeded.
    pub const fn unacked(&self) -> u32 {
        self.cursor.wrapping_sub(self.acked) / ENTRY
    }

    /// How many entries one batch may consume: `want`, but never so many that
    /// the reads not yet handed back by a successful HEAD write reach a whole lap
    /// (G-HEAD: the device could no longer tell "all read" from "none read"; a
    /// failed HEAD write therefore shrinks the next batches instead of leaving
    /// the device one lap behind for good).
    pub const fn batch_limit(&self, want: u32) -> u32 {
        let max = self.entries().saturating_sub(1).saturating_sub(self.unacked());
        if want < max {
            want
        } else {
            max
        }
    }

    /// Read the slot at the cursor; when it is fresh, copy it to `out`, advance the
    /// cursor by one entry and return `Ok(true)`. A stale slot returns `Ok(false)`
    /// and changes nothing. An unbound ring reads nothing and returns `Ok(false)`;
    /// callers check [`is_bound`](Self::is_bound) first.
    #[inline]
    pub fn poll<R: NqRings + ?Sized>(
        &mut self,
        mem: &mut R,
        core: u8,
        nq: u8,
        out: &mut [u8; ENTRY_SIZE],
    ) -> Result<bool, R::Error> {
        if self.size == 0 {
            return Ok(false);
        }
        mem.read_slot(core, nq, self.head(), out)?;
        let phase = out[field::TAG] & field::PHASE_BIT != 0;
        if phase != lap_phase(self.cursor, self.size) {
            return Ok(false);
        }
        self.cursor = self.cursor.wrapping_add(ENTRY);
        Ok(true)
    }

    /// Count the fresh slots ahead of the cursor without consuming them
    /// (`aws_hal_notific_nq_available_count`), at most `entries - 1`.
    pub fn available<R: NqRings + ?Sized>(&self, mem: &mut R, core: u8, nq: u8) -> Result<u32, R::Error> {
        let mut probe = *self;
        let mut n = 0;
        let mut buf = [0u8; ENTRY_SIZE];
        while n < self.entries().saturating_sub(1) && probe.poll(mem, core, nq, &mut buf)? {
            n += 1;
        }
        Ok(n)
    }

    /// Under batched HEAD write-back, G-HEAD-BATCH, whether this ring's HEAD is
    /// due now: half the ring or more has been read and not handed back. The
    /// device then still has at least half the ring to write into, and the
    /// batch cap ([`batch_limit`](Self::batch_limit)) keeps the unreported reads
    /// below a whole lap.
    pub const fn head_due(&self) -> bool {
        self.unacked().saturating_mul(2) >= self.entries()
    }

    /// Write HEAD back through the platform; on success the device knows every
    /// read so far.
    pub fn write_head<R: NqRings + ?Sized>(&mut self, mem: &mut R, core: u8, nq: u8) -> Result<(), R::Error> {
        mem.write_head(core, nq, self.head())?;
        self.acked = self.cursor;
        Ok(())
    }
}

/// The producer side of the protocol: the device's write cursor and its view of
/// the host's read pointer. The simulator, the test platform and the controller
/// firmware all use this, so both ends of the protocol live in one module.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NqProducer {
    size: u32,
    write: u32,
    host_read: u32,
}

impl NqProducer {
    /// A producer for a ring of `size_bytes` (validated as [`NqRing::new`]).
    pub const fn new(size_bytes: u32) -> Result<NqProducer, RingError> {
        match NqRing::new(size_bytes) {
            Ok(_) => Ok(NqProducer { size: size_bytes, write: 0, host_read: 0 }),
            Err(e) => Err(e),
        }
    }

    /// Size in bytes.
    pub const fn size_bytes(&self) -> u32 {
        self.size
    }

    /// Entries written and not yet handed back.
    pub const fn pending(&self) -> u32 {
        self.write.wrapping_sub(self.host_read) / ENTRY
    }

    /// Room for more entries before HEAD.
    pub const fn free(&self) -> u32 {
        (self.size / ENTRY).saturating_sub(self.pending())
    }

    /// The HEAD register was written with `head` (bytes within the ring): advance
    /// the view of the host's read pointer. The host never consumes a whole lap
    /// between HEAD writes, so the advance is `(head - old) mod size`, clamped to
    /// what was written.
    #[cfg_attr(kani, kani::requires(proofs::producer_ok(self)))]
    #[cfg_attr(kani, kani::modifies(self))]
    #[cfg_attr(kani, kani::ensures(|_| proofs::on_head_write_post(&old(*self), self, head)))]
    pub fn on_head_write(&mut self, head: u32) {
        let mask = self.size - 1;
        let advance = head.wrapping_sub(self.host_read & mask) & mask & !(ENTRY - 1);
        let written = self.write.wrapping_sub(self.host_read);
        self.host_read = self.host_read.wrapping_add(if advance <= written { advance } else { written });
    }

    /// Stamp `entry` with this lap's phase and return the byte offset to write it
    /// at, advancing the write cursor; `None` when the ring is full (the record is
    /// dropped, and the device raises INTC cause bit 29).
    #[cfg_attr(kani, kani::requires(proofs::producer_ok(self)))]
    #[cfg_attr(kani, kani::modifies(self, entry))]
    #[cfg_attr(kani, kani::ensures(|r: &Option<u32>| proofs::push_post(&old(*self), self, &old(*entry), entry, *r)))]
    pub fn push(&mut self, entry: &mut [u8; ENTRY_SIZE]) -> Option<u32> {
        if self.free() == 0 {
            return None;
        }
        let phase = lap_phase(self.write, self.size);
        if phase {
            entry[field::TAG] |= field::PHASE_BIT;
        } else {
            entry[field::TAG] &= !field::PHASE_BIT;
        }
        let off = self.write & (self.size - 1);
        self.write = self.write.wrapping_add(ENTRY);
        Some(off)
    }
}

/// Timestamp calibration of one engine (`notif->init_timestamp.tpb.<engine>`):
/// the device clock at init, and its actual vs expected increment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TsCal {
    /// Device timestamp at the calibration point.
    pub init_timestamp: u64,
    /// How much the device clock actually advanced per nominal period.
    pub actual_timestamp_inc: u32,
    /// How much it should have (nanoseconds per period at the nominal rate).
    pub expected_timestamp_inc: u32,
}

impl TsCal {
    /// A calibration that maps device units 1:1 to nanoseconds from 0.
    pub const IDENTITY: TsCal = TsCal { init_timestamp: 0, actual_timestamp_inc: 1, expected_timestamp_inc: 1 };
}

impl Default for TsCal {
    fn default() -> Self {
        TsCal::IDENTITY
    }
}

/// A pairing of device time and CPU time (`sync_point`), both in microseconds:
/// `cpu = cpu_us + (dev - dev_us)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SyncPoint {
    /// Rescaled device time at the sync point, microseconds.
    pub dev_us: u64,
    /// CPU (monotonic clock) time at the sync point, microseconds.
    pub cpu_us: u64,
}

impl SyncPoint {
    /// `sync_point_dev_ts_to_cpu_ts`: map a rescaled device time (us) to CPU time
    /// (us), saturating at 0 and `u64::MAX`.
    pub fn dev_to_cpu_us(&self, dev_us: u64) -> u64 {
        let v = i128::from(self.cpu_us) + i128::from(dev_us) - i128::from(self.dev_us);
        if v < 0 {
            0
        } else if v > i128::from(u64::MAX) {
            u64::MAX
        } else {
            v as u64
        }
    }
}

/// One error-ring record kept for subscribers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ErrorRecord {
    /// Physical core.
    pub core: u8,
    /// The raw 16 bytes.
    pub raw: [u8; ENTRY_SIZE],
    /// The record's time on the CPU clock, microseconds.
    pub ts_cpu_us: u64,
}

/// The per-device notification state libnrt keeps in `tpb->notification`: the
/// ring cursors, the INFER_STATUS ring ids, the timestamp calibration and sync
/// points, and the bounded error subscriber ring. It outlives requests; a request
/// borrows it for each step.
#[derive(Clone, Debug)]
pub struct Notifications {
    rings: [[NqRing; super::NQ_PER_CORE]; MAX_CORES],
    infer_status_nqs: heapless::Vec<u8, { super::MAX_INFER_STATUS_NQS }>,
    cal: [[TsCal; ENGINES_PER_CORE]; MAX_CORES],
    sync: [SyncPoint; MAX_CORES],
    errors: Deque<ErrorRecord, ERROR_SUBSCRIBER_DEPTH>,
    errors_dropped: u32,
    /// Batched HEAD write-back, G-HEAD-BATCH; off by default, G-DRAIN.
    head_batching: bool,
}

impl Default for Notifications {
    fn default() -> Self {
        Notifications::new()
    }
}

impl Notifications {
    /// No ring bound; INFER_STATUS ids {4,5,6,7,8}; identity calibration.
    pub fn new() -> Notifications {
        Notifications {
            rings: [[NqRing::UNBOUND; super::NQ_PER_CORE]; MAX_CORES],
            // The five ids in a capacity of 8 (checked when this compiles).
            infer_status_nqs: heapless::Vec::from_array(super::INFER_STATUS_NQS),
            cal: [[TsCal::IDENTITY; ENGINES_PER_CORE]; MAX_CORES],
            sync: [SyncPoint::default(); MAX_CORES],
            errors: Deque::new(),
            errors_dropped: 0,
            head_batching: false,
        }
    }

    /// Bind ring `(core, nq)` with `size_bytes` bytes, cursor at 0.
    pub fn bind(&mut self, core: u8, nq: u8, size_bytes: u32) -> Result<(), RingError> {
        let ring = NqRing::new(size_bytes)?;
        *self.ring_mut(core, nq).ok_or(RingError::BadIndex)? = ring;
        Ok(())
    }

    /// Bind the error ring and the five INFER_STATUS rings of `core`, each `size_bytes`.
    pub fn bind_core(&mut self, core: u8, size_bytes: u32) -> Result<(), RingError> {
        self.bind(core, super::ERROR_NQ, size_bytes)?;
        for nq in super::INFER_STATUS_NQS {
            self.bind(core, nq, size_bytes)?;
        }
        Ok(())
    }

    /// Batch HEAD write-backs, G-HEAD-BATCH: an INFER_STATUS ring's HEAD is
    /// written when half the ring has been read, when its engine completes, on a
    /// fault, and (by the drivers) when the request completes, instead of after
    /// every sweep that read something, libnrt's drain, G-DRAIN, the default.
    pub fn set_head_batching(&mut self, on: bool) {
        self.head_batching = on;
    }

    /// `true` when HEAD write-backs are batched.
    pub const fn head_batching(&self) -> bool {
        self.head_batching
    }

    /// The ring `(core, nq)`.
    pub fn ring(&self, core: u8, nq: u8) -> Option<&NqRing> {
        self.rings.get(usize::from(core))?.get(usize::from(nq))
    }

    /// The ring `(core, nq)`, mutably.
    pub fn ring_mut(&mut self, core: u8, nq: u8) -> Option<&mut NqRing> {
        self.rings.get_mut(usize::from(core))?.get_mut(usize::from(nq))
    }

    /// The INFER_STATUS ring ids (`notifications_get_nq_ids_for_type`).
    pub fn infer_status_nqs(&self) -> &[u8] {
        &self.infer_status_nqs
    }

    /// Replace the INFER_STATUS ring ids (at most
    /// [`MAX_INFER_STATUS_NQS`](super::MAX_INFER_STATUS_NQS); a platform whose ring table
    /// does not have one ring per engine makes the WAIT_CORE transition fail).
    /// Duplicates, the error ring and ids outside the table are refused: two
    /// engines must never share a cursor.
    pub fn set_infer_status_nqs(&mut self, ids: &[u8]) -> Result<(), RingError> {
        for (i, id) in ids.iter().enumerate() {
            if *id == super::ERROR_NQ
                || usize::from(*id) >= super::NQ_PER_CORE
                || ids.get(..i).is_some_and(|p| p.contains(id))
            {
                return Err(RingError::BadIndex);
            }
        }
        self.infer_status_nqs = heapless::Vec::from_slice(ids).map_err(|_| RingError::BadIndex)?;
        Ok(())
    }

    /// Timestamp calibration of `(core, engine)`.
    pub fn cal(&self, core: u8, engine: usize) -> TsCal {
        self.cal.get(usize::from(core)).and_then(|c| c.get(engine)).copied().unwrap_or(TsCal::IDENTITY)
    }

    /// Set the timestamp calibration of `(core, engine)`.
    pub fn set_cal(&mut self, core: u8, engine: usize, cal: TsCal) {
        if let Some(slot) = self.cal.get_mut(usize::from(core)).and_then(|c| c.get_mut(engine)) {
            *slot = cal;
        }
    }

    /// The sync point of `core`.
    pub fn sync_point(&self, core: u8) -> SyncPoint {
        self.sync.get(usize::from(core)).copied().unwrap_or_default()
    }

    /// Set the sync point of `core`.
    pub fn set_sync_point(&mut self, core: u8, sp: SyncPoint) {
        if let Some(slot) = self.sync.get_mut(usize::from(core)) {
            *slot = sp;
        }
    }

    /// Keep an error record for subscribers; when the ring is full the oldest is
    /// dropped and counted. Returns `true` when one was dropped.
    pub fn push_error(&mut self, rec: ErrorRecord) -> bool {
        let mut dropped = false;
        if self.errors.is_full() {
            let _ = self.errors.pop_front();
            self.errors_dropped = self.errors_dropped.saturating_add(1);
            dropped = true;
        }
        let _ = self.errors.push_back(rec);
        dropped
    }

    /// Take the oldest kept error record.
    pub fn pop_error(&mut self) -> Option<ErrorRecord> {
        self.errors.pop_front()
    }

    /// Error records currently kept.
    pub fn errors_len(&self) -> usize {
        self.errors.len()
    }

    /// Error records dropped because the subscriber ring was full.
    pub fn errors_dropped(&self) -> u32 {
        self.errors_dropped
    }
}

#[cfg(any(kani, test))]
mod proofs;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hal::{ErrorKind, ErrorType};

    /// One ring of memory the test writes as a device would.
    struct Mem {
        bytes: [u8; 256],
        size: u32,
        reads: u32,
        heads: heapless::Vec<u32, 64>,
        fail_heads: bool,
    }
    impl ErrorType for Mem {
        type Error = ErrorKind;
    }
    impl NqRings for Mem {
        fn read_slot(&mut self, _c: u8, _n: u8, off: u32, out: &mut [u8; 16]) -> Result<(), ErrorKind> {
            assert!(off < self.size && off.is_multiple_of(16), "read outside the ring: {off}");
            self.reads += 1;
            out.copy_from_slice(&self.bytes[off as usize..off as usize + 16]);
            Ok(())
        }
        fn write_head(&mut self, _c: u8, _n: u8, head: u32) -> Result<(), ErrorKind> {
            if self.fail_heads {
                return Err(ErrorKind::Io);
            }
            self.heads.push(head).unwrap();
            Ok(())
        }
    }

    fn mem(size: u32) -> Mem {
        Mem { bytes: [0; 256], size, reads: 0, heads: heapless::Vec::new(), fail_heads: false }
    }

    fn produce(m: &mut Mem, p: &mut NqProducer, tag: u8) -> bool {
        let mut e = [0u8; 16];
        e[0] = tag;
        match p.push(&mut e) {
            Some(off) => {
                m.bytes[off as usize..off as usize + 16].copy_from_slice(&e);
                true
            }
            None => false,
        }
    }

    #[test]
    fn sizes_are_validated() {
        assert!(NqRing::new(0).is_err());
        assert!(NqRing::new(16).is_err());
        assert!(NqRing::new(48).is_err());
        assert!(NqRing::new(32).is_ok());
        assert!(NqRing::new(1 << 30).is_ok());
        assert!(NqRing::new(1 << 31).is_err());
        assert_eq!(NqRing::new(256).unwrap().entries(), 16);
        assert_eq!(NqRing::new(256).unwrap().size_bytes(), 256);
        assert_eq!(NqRing::UNBOUND.size_bytes(), 0);
        // The published bounds, G-RING-MIN: two entries, 1 GiB.
        assert_eq!((MIN_RING_BYTES, MAX_RING_BYTES), (32, 1 << 30));
    }

    #[test]
    fn the_producer_stamps_only_the_phase_bit() {
        let mut p = NqProducer::new(32).unwrap(); // two entries
        let mut e = [0u8; 16];
        e[3] = 0x65; // tag bits set, phase clear
        assert_eq!(p.push(&mut e), Some(0));
        assert_eq!(e[3], 0xE5, "lap 0: phase set, the rest kept");
        let mut e2 = e;
        assert_eq!(p.push(&mut e2), Some(16));
        assert_eq!(p.push(&mut e2), None, "full");
        p.on_head_write(16);
        let mut e3 = [0u8; 16];
        e3[3] = 0xE5; // phase set on the way in
        assert_eq!(p.push(&mut e3), Some(0));
        assert_eq!(e3[3], 0x65, "lap 1: phase clear, the rest kept");
    }

    #[test]
    fn fresh_slots_are_consumed_once_across_laps() {
        let mut m = mem(64); // 4 entries
        let mut p = NqProducer::new(64).unwrap();
        let mut r = NqRing::new(64).unwrap();
        let mut buf = [0u8; 16];
        assert!(!r.poll(&mut m, 0, 4, &mut buf).unwrap(), "zeroed memory is stale on lap 0");
        let mut seq = 0u8;
        let mut got = 0u8;
        for _round in 0..10 {
            // Device writes as much as fits.
            let mut written = 0;
            while produce(&mut m, &mut p, seq) {
                seq = seq.wrapping_add(1);
                written += 1;
                assert!(written <= 64, "the producer wrote past a 64-entry ring");
            }
            assert_eq!(p.free(), 0);
            // Host consumes one batch (never a full lap), writes HEAD back.
            let limit = r.batch_limit(16);
            assert_eq!(limit, 3);
            let mut n = 0;
            while n < limit && r.poll(&mut m, 0, 4, &mut buf).unwrap() {
                assert_eq!(buf[0], got, "in order, no duplicates");
                got = got.wrapping_add(1);
                n += 1;
            }
            assert_eq!(n, 3);
            r.write_head(&mut m, 0, 4).unwrap();
            p.on_head_write(*m.heads.last().unwrap());
            assert_eq!(p.free(), 3);
        }
        // Drain the rest (at most a ring's worth).
        let mut drained = 0;
        while r.poll(&mut m, 0, 4, &mut buf).unwrap() {
            assert_eq!(buf[0], got);
            got = got.wrapping_add(1);
            drained += 1;
            assert!(drained <= 64, "read past a 64-entry ring");
        }
        assert_eq!(got, seq);
    }

    #[test]
    fn a_failed_head_write_shrinks_later_batches_until_the_device_knows() {
        let mut m = mem(64); // 4 entries
        let mut p = NqProducer::new(64).unwrap();
        let mut r = NqRing::new(64).unwrap();
        let mut buf = [0u8; 16];
        for i in 0..4 {
            assert!(produce(&mut m, &mut p, i));
        }
        assert_eq!(r.batch_limit(16), 3);
        for _ in 0..3 {
            assert!(r.poll(&mut m, 0, 4, &mut buf).unwrap());
        }
        m.fail_heads = true;
        assert!(r.write_head(&mut m, 0, 4).is_err());
        assert_eq!(r.unacked(), 3);
        // The device still thinks the ring is full; reading the 4th now would make
        // the next HEAD equal the last one it saw (a whole lap): refused.
        assert_eq!(r.batch_limit(16), 0);
        m.fail_heads = false;
        r.write_head(&mut m, 0, 4).unwrap();
        p.on_head_write(*m.heads.last().unwrap());
        assert_eq!((r.unacked(), p.free()), (0, 3), "the device's view is exact again");
        assert_eq!(r.batch_limit(16), 3);
        assert!(r.poll(&mut m, 0, 4, &mut buf).unwrap());
        assert_eq!(buf[0], 3);
    }

    #[test]
    fn infer_status_ids_refuse_duplicates_and_the_error_ring() {
        let mut n = Notifications::new();
        assert!(n.set_infer_status_nqs(&[4, 5, 6, 7, 4]).is_err());
        assert!(n.set_infer_status_nqs(&[4, 5, 2, 7, 8]).is_err());
        assert!(n.set_infer_status_nqs(&[4, 5, 6, 7, super::super::NQ_PER_CORE as u8]).is_err());
        assert_eq!(n.infer_status_nqs(), &super::super::INFER_STATUS_NQS, "unchanged after a refusal");
        n.set_infer_status_nqs(&[3, 4, 5, 6]).unwrap();
        assert_eq!(n.infer_status_nqs(), &[3, 4, 5, 6]);
    }

    #[test]
    fn a_full_ring_drops_records() {
        let mut m = mem(32);
        let mut p = NqProducer::new(32).unwrap();
        assert!(produce(&mut m, &mut p, 1));
        assert!(produce(&mut m, &mut p, 2));
        assert!(!produce(&mut m, &mut p, 3), "third record overflows a two-entry ring");
        let r = NqRing::new(32).unwrap();
        assert_eq!(r.available(&mut m, 0, 2).unwrap(), 1, "available never counts a whole lap");
    }

    #[test]
    fn cursor_parity_survives_u32_wrap() {
        let size = 1u32 << 30;
        assert!(lap_phase(0, size));
        assert!(!lap_phase(size, size));
        assert!(lap_phase(2 * size, size));
        assert!(!lap_phase(3 * size, size));
        assert!(lap_phase((4 * u64::from(size)) as u32, size), "2^32 wraps to lap 0: even");
        assert!(!lap_phase(u32::MAX, size), "the last byte before the wrap is on lap 3");
    }

    #[test]
    fn sync_point_saturates() {
        let sp = SyncPoint { dev_us: 100, cpu_us: 1000 };
        assert_eq!(sp.dev_to_cpu_us(150), 1050);
        assert_eq!(sp.dev_to_cpu_us(0), 900);
        let sp = SyncPoint { dev_us: 1000, cpu_us: 10 };
        assert_eq!(sp.dev_to_cpu_us(0), 0);
        let sp = SyncPoint { dev_us: 0, cpu_us: u64::MAX };
        assert_eq!(sp.dev_to_cpu_us(10), u64::MAX);
    }

    #[test]
    fn error_subscriber_ring_drops_oldest_and_counts() {
        let mut n = Notifications::new();
        for i in 0..(ERROR_SUBSCRIBER_DEPTH + 3) {
            let rec = ErrorRecord { core: 0, raw: [i as u8; 16], ts_cpu_us: i as u64 };
            n.push_error(rec);
        }
        assert_eq!(n.errors_len(), ERROR_SUBSCRIBER_DEPTH);
        assert_eq!(n.errors_dropped(), 3);
        assert_eq!(n.pop_error().unwrap().ts_cpu_us, 3);
    }
}
