//! A test platform: a fake device with rings in memory, an INTC, a settable
//! clock, collectives proxies, fault probes, an event log and a tensor table;
//! and the small fakes a layer's own tests need: [`EventLog`], a sink of one
//! layer's events, and [`CountingDelay`], a delay that counts and is bounded.
//!
//! Behind the `test-utils` feature (and always in core's own tests), so that the
//! simulator's and the integration tests' fakes are not copied per test. It is
//! `no_std` and allocation-free like the rest of core (the ring memory is a fixed
//! array, [`FAKE_RING_BYTES_MAX`] bytes per ring).

use core::cell::Cell;

use crate::arch::{Arch, ENGINES_PER_CORE, MAX_CORES};
use crate::event::Event;
use crate::exec::TensorCompletions;
use crate::hal::{self, ErrorKind, ErrorType};
use crate::nq::entry::ENTRY_SIZE;
use crate::nq::ring::NqProducer;
use crate::nq::{ErrorEntry, Notifications, RawEntry, Subtype, ERROR_NQ, INFER_STATUS_NQS, NQ_PER_CORE};
use crate::status::{NrtError, NrtStatus};

/// Largest ring the fake holds: 4 KiB, 256 entries.
pub const FAKE_RING_BYTES_MAX: usize = 4096;

/// Events the fake keeps (later ones are counted in `events_dropped`).
pub const FAKE_EVENT_CAPACITY: usize = 256;

/// Outputs the fake's tensor table holds.
pub const FAKE_TENSORS: usize = 8;

/// INTC cause bit 29 (the software NQ overflow), as the fake device sets it.
pub const INTC_OVERFLOW: u32 = 1 << crate::exec::INTC_SW_NQ_OVERFLOW_BIT;

/// The fake device.
pub struct FakeDevice {
    /// Generation (for the HEAD register offsets and the cayman fixup).
    pub arch: Arch,
    mem: [[[u8; FAKE_RING_BYTES_MAX]; NQ_PER_CORE]; MAX_CORES],
    producers: [[Option<NqProducer>; NQ_PER_CORE]; MAX_CORES],
    /// INTC cause register (line 61) per core.
    pub intc_cause: [u32; MAX_CORES],
    /// Reads of the INTC cause register so far.
    pub intc_reads: u32,
    /// Fail INTC reads.
    pub intc_fail: bool,
    /// Every INTC read, in order: (core, error-trigger block).
    pub intc_blocks: heapless::Vec<(u8, u32), 16>,
    /// Clock, ns.
    pub now: Cell<u64>,
    /// Added to the clock after each read (lets a poll loop see time pass).
    pub auto_advance_ns: u64,
    /// Barrier of each core clears at this time (ns); `u64::MAX` never.
    pub barrier_done_at_ns: [u64; MAX_CORES],
    /// Barrier proxy failure per core.
    pub barrier_fail: [Option<NrtError>; MAX_CORES],
    /// Network proxy failure per core.
    pub network_fail: [Option<NrtError>; MAX_CORES],
    /// HBM UE to report at the timeout path, per core.
    pub hbm: [Option<NrtStatus>; MAX_CORES],
    /// DMA abort per core.
    pub dma_abort: [bool; MAX_CORES],
    /// Stuck in a collective, per core.
    pub collectives_stuck: [bool; MAX_CORES],
    /// The fault probes asked so far, in order: (`"hbm"`, `"dma"` or `"cc"`, core).
    pub fault_probes: heapless::Vec<(&'static str, u8), 16>,
    /// Fail reads of this ring `(core, nq)`.
    pub fail_ring: Option<(u8, u8)>,
    /// Records the device dropped because a ring was full.
    pub dropped: u32,
    /// Slot reads so far.
    pub slot_reads: u64,
    /// HEAD writes so far.
    pub head_writes: u64,
    /// Events in order.
    pub events: heapless::Vec<Event, FAKE_EVENT_CAPACITY>,
    /// Events that did not fit.
    pub events_dropped: u32,
    /// The tensor table (var ids 100.. map to outputs 0..).
    pub tensors: TensorCompletions<FAKE_TENSORS>,
    /// Tensor wake-ups in order: (output, count).
    pub wakes: heapless::Vec<(u16, u32), 64>,
    /// The per-core counters FINALIZE updated.
    pub counters: crate::counters::NcCounters<MAX_CORES>,
    /// Counter updates, in order: (core, update).
    pub counter_updates: heapless::Vec<(u8, crate::counters::NcUpdate), 16>,
}

impl FakeDevice {
    /// A device whose error and INFER_STATUS rings are `ring_bytes` each, barriers
    /// already clear, clock at 1 s, var ids 100..108 naming outputs 0..8.
    pub fn new(arch: Arch, ring_bytes: u32) -> FakeDevice {
        let mut producers = [[None; NQ_PER_CORE]; MAX_CORES];
        let size = (ring_bytes as usize).min(FAKE_RING_BYTES_MAX) as u32;
        for core in producers.iter_mut() {
            for nq in core.iter_mut() {
                *nq = NqProducer::new(size).ok();
            }
        }
        let vars: [u16; FAKE_TENSORS] = core::array::from_fn(|i| 100 + i as u16);
        FakeDevice {
            arch,
            mem: [[[0; FAKE_RING_BYTES_MAX]; NQ_PER_CORE]; MAX_CORES],
            producers,
            intc_cause: [0; MAX_CORES],
            intc_reads: 0,
            intc_fail: false,
            intc_blocks: heapless::Vec::new(),
            now: Cell::new(1_000_000_000),
            auto_advance_ns: 0,
            barrier_done_at_ns: [0; MAX_CORES],
            barrier_fail: [None; MAX_CORES],
            network_fail: [None; MAX_CORES],
            hbm: [None; MAX_CORES],
            dma_abort: [false; MAX_CORES],
            collectives_stuck: [false; MAX_CORES],
            fault_probes: heapless::Vec::new(),
            fail_ring: None,
            dropped: 0,
            slot_reads: 0,
            head_writes: 0,
            events: heapless::Vec::new(),
            events_dropped: 0,
            tensors: TensorCompletions::from_array(vars),
            wakes: heapless::Vec::new(),
            counters: crate::counters::NcCounters::new(),
            counter_updates: heapless::Vec::new(),
        }
    }

    /// A [`Notifications`] with every ring of both cores bound at `ring_bytes`.
    pub fn notifications(ring_bytes: u32) -> Notifications {
        let mut n = Notifications::new();
        for core in 0..MAX_CORES as u8 {
            let _ = n.bind(core, ERROR_NQ, ring_bytes);
            for nq in INFER_STATUS_NQS {
                let _ = n.bind(core, nq, ring_bytes);
            }
        }
        n
    }

    /// Advance the clock.
    pub fn advance_ns(&self, ns: u64) {
        self.now.set(self.now.get().saturating_add(ns));
    }

    /// Advance the clock by milliseconds.
    pub fn advance_ms(&self, ms: u64) {
        self.advance_ns(ms.saturating_mul(1_000_000));
    }

    /// Write raw bytes as the device would into ring `(core, nq)`: stamped with
    /// the lap's phase, or dropped with INTC bit 29 raised when the ring is full.
    pub fn push_raw(&mut self, core: u8, nq: u8, mut entry: [u8; ENTRY_SIZE]) -> bool {
        let (c, q) = (usize::from(core), usize::from(nq));
        let Some(Some(p)) = self.producers.get_mut(c).map(|r| r.get_mut(q)) else {
            return false;
        };
        let Some(p) = p.as_mut() else { return false };
        match p.push(&mut entry) {
            Some(off) => {
                let off = off as usize;
                if let Some(slot) =
                    self.mem.get_mut(c).and_then(|r| r.get_mut(q)).and_then(|m| m.get_mut(off..off + ENTRY_SIZE))
                {
                    slot.copy_from_slice(&entry);
                }
                true
            }
            None => {
                self.dropped += 1;
                if let Some(cause) = self.intc_cause.get_mut(c) {
                    *cause |= INTC_OVERFLOW;
                }
                false
            }
        }
    }

    /// An INFER_STATUS record of `subtype` on engine `eng` of `core`.
    pub fn record(&mut self, core: u8, eng: usize, subtype: u16, ts: u64) -> bool {
        let nq = INFER_STATUS_NQS.get(eng).copied().unwrap_or(0);
        self.push_raw(core, nq, RawEntry::new(subtype, nq, 0, 0, ts).to_array())
    }

    /// START on `(core, eng)`.
    pub fn start(&mut self, core: u8, eng: usize, ts: u64) -> bool {
        self.record(core, eng, Subtype::START, ts)
    }

    /// END on `(core, eng)`.
    pub fn end(&mut self, core: u8, eng: usize, ts: u64) -> bool {
        self.record(core, eng, Subtype::END, ts)
    }

    /// A custom record with `sub_id` and `payload` (`u16 @0`, the var id for sub-id 7).
    pub fn custom(&mut self, core: u8, eng: usize, sub_id: u16, payload: u16, ts: u64) -> bool {
        let nq = INFER_STATUS_NQS.get(eng).copied().unwrap_or(0);
        let mut e = RawEntry::new(Subtype::CUSTOM, nq, 0, sub_id, ts);
        e.set_isa_line_lo(payload);
        self.push_raw(core, nq, e.to_array())
    }

    /// START and END on every engine of cores `0..cores`.
    pub fn run_all(&mut self, cores: u8, t0: u64, t1: u64) {
        for core in 0..cores {
            for eng in 0..ENGINES_PER_CORE {
                self.start(core, eng, t0 + eng as u64);
                self.end(core, eng, t1 + eng as u64);
            }
        }
    }

    /// An error record on `core`'s error ring.
    pub fn error(&mut self, core: u8, e: ErrorEntry) -> bool {
        self.push_raw(core, ERROR_NQ, e.to_array())
    }

    /// Events of a kind, in order.
    pub fn events_of<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a Event> + 'a {
        self.events.iter().filter(move |e| e.kind() == kind)
    }

    /// Number of events of a kind.
    pub fn count(&self, kind: &str) -> usize {
        self.events_of(kind).count()
    }
}

impl ErrorType for FakeDevice {
    type Error = ErrorKind;
}

impl hal::NqRings for FakeDevice {
    fn read_slot(&mut self, core: u8, nq: u8, offset: u32, out: &mut [u8; 16]) -> Result<(), ErrorKind> {
        if self.fail_ring == Some((core, nq)) {
            return Err(ErrorKind::Io);
        }
        let size = self
            .producers
            .get(usize::from(core))
            .and_then(|r| r.get(usize::from(nq)))
            .copied()
            .flatten()
            .map(|p| p.size_bytes())
            .ok_or(ErrorKind::NotMapped)?;
        if offset >= size || !offset.is_multiple_of(16) {
            return Err(ErrorKind::OutOfRange);
        }
        let off = offset as usize;
        let slot = self
            .mem
            .get(usize::from(core))
            .and_then(|r| r.get(usize::from(nq)))
            .and_then(|m| m.get(off..off + ENTRY_SIZE))
            .ok_or(ErrorKind::OutOfRange)?;
        out.copy_from_slice(slot);
        self.slot_reads += 1;
        Ok(())
    }

    fn write_head(&mut self, core: u8, nq: u8, head: u32) -> Result<(), ErrorKind> {
        let p = self
            .producers
            .get_mut(usize::from(core))
            .and_then(|r| r.get_mut(usize::from(nq)))
            .and_then(|p| p.as_mut())
            .ok_or(ErrorKind::NotMapped)?;
        p.on_head_write(head);
        self.head_writes += 1;
        Ok(())
    }
}

impl hal::IntcCause for FakeDevice {
    fn read_cause(&mut self, core: u8, block: u32, line: u32) -> Result<u32, ErrorKind> {
        self.intc_reads += 1;
        let _ = self.intc_blocks.push((core, block));
        if self.intc_fail {
            return Err(ErrorKind::Io);
        }
        if line != crate::exec::INTC_SW_NQ_OVERFLOW_LINE {
            return Ok(0);
        }
        self.intc_cause.get(usize::from(core)).copied().ok_or(ErrorKind::OutOfRange)
    }
}

impl hal::Clock for FakeDevice {
    fn now_ns(&self) -> u64 {
        let t = self.now.get();
        self.now.set(t.saturating_add(self.auto_advance_ns));
        t
    }
}

impl hal::Delay for FakeDevice {
    fn delay_us(&mut self, us: u32) {
        self.advance_ns(u64::from(us) * 1000);
    }
}

impl hal::CollectivesProxy for FakeDevice {
    fn barrier_status(&mut self, core: u8) -> Result<bool, NrtError> {
        let c = usize::from(core);
        if let Some(Some(s)) = self.barrier_fail.get(c) {
            return Err(*s);
        }
        Ok(self.now.get() >= self.barrier_done_at_ns.get(c).copied().unwrap_or(0))
    }
    fn network_status(&mut self, core: u8) -> Result<bool, NrtError> {
        match self.network_fail.get(usize::from(core)) {
            Some(Some(s)) => Err(*s),
            _ => Ok(true),
        }
    }
}

impl hal::FaultProbe for FakeDevice {
    fn hbm_uncorrectable(&mut self, core: u8) -> Option<NrtStatus> {
        let _ = self.fault_probes.push(("hbm", core));
        self.hbm.get(usize::from(core)).copied().flatten()
    }
    fn dma_aborted(&mut self, core: u8) -> bool {
        let _ = self.fault_probes.push(("dma", core));
        self.dma_abort.get(usize::from(core)).copied().unwrap_or(false)
    }
    fn collectives_stuck(&mut self, core: u8) -> bool {
        let _ = self.fault_probes.push(("cc", core));
        self.collectives_stuck.get(usize::from(core)).copied().unwrap_or(false)
    }
}

impl<E: Copy + Into<Event>> hal::EventSink<E> for FakeDevice {
    fn event(&mut self, event: &E) {
        if self.events.push((*event).into()).is_err() {
            self.events_dropped += 1;
        }
    }
}

impl crate::counters::CounterSink for FakeDevice {
    fn nc_counters(&mut self, core: u8, update: &crate::counters::NcUpdate) {
        // The fake's clock as it stands (no auto-advance: this is not a harvest read).
        self.counters.apply(core, update, self.now.get());
        let _ = self.counter_updates.push((core, *update));
    }
}

impl hal::TensorNotify for FakeDevice {
    fn tensor_completed(&mut self, _core: u8, var_id: u16) -> Option<(u16, u32)> {
        let r = self.tensors.record(var_id);
        if let Some(w) = r {
            let _ = self.wakes.push(w);
        }
        r
    }
}

/// Events a [`EventLog`] keeps (later ones are counted in `dropped`).
pub const EVENT_LOG_CAPACITY: usize = 64;

/// A sink of one layer's events (`DmaEvent`, `DgeEvent`, `ExecEvent`, or the
/// umbrella `Event`): the first [`EVENT_LOG_CAPACITY`] in order, the rest counted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventLog<E> {
    /// Events in order.
    pub events: heapless::Vec<E, EVENT_LOG_CAPACITY>,
    /// Events that did not fit.
    pub dropped: u32,
}

impl<E> Default for EventLog<E> {
    fn default() -> Self {
        EventLog { events: heapless::Vec::new(), dropped: 0 }
    }
}

impl<E: Copy> hal::EventSink<E> for EventLog<E> {
    fn event(&mut self, event: &E) {
        if self.events.push(*event).is_err() {
            self.dropped = self.dropped.saturating_add(1);
        }
    }
}

/// A delay that moves no clock and counts its calls, failing the test past
/// `bound` calls, so that a wait that never ends fails fast instead of hanging.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CountingDelay {
    /// Calls so far.
    pub calls: u32,
    /// The call that fails the test.
    pub bound: u32,
}

impl CountingDelay {
    /// A delay that fails the test at its `bound`-th call.
    pub const fn new(bound: u32) -> CountingDelay {
        CountingDelay { calls: 0, bound }
    }
}

impl hal::Delay for CountingDelay {
    fn delay_us(&mut self, _us: u32) {
        self.calls = self.calls.saturating_add(1);
        assert!(self.calls < self.bound, "{} delays: the wait did not end", self.calls);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hal::{Delay, EventSink};

    #[test]
    fn the_event_log_keeps_its_capacity_in_order_and_counts_the_rest() {
        let mut log = EventLog::<u32>::default();
        for i in 0..EVENT_LOG_CAPACITY as u32 + 3 {
            log.event(&i);
        }
        assert_eq!(log.events.len(), EVENT_LOG_CAPACITY);
        assert!(log.events.iter().copied().eq(0..EVENT_LOG_CAPACITY as u32));
        assert_eq!(log.dropped, 3);
    }

    #[test]
    fn the_counting_delay_counts_below_its_bound() {
        let mut d = CountingDelay::new(3);
        d.delay_us(1);
        d.delay_us(1);
        assert_eq!(d.calls, 2);
    }

    #[test]
    #[should_panic(expected = "3 delays: the wait did not end")]
    fn the_counting_delay_fails_the_test_at_its_bound() {
        let mut d = CountingDelay::new(3);
        for _ in 0..3 {
            d.delay_us(1);
        }
    }
}
