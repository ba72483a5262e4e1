//! Proofs of the harvest, completion-engine seed §1, §2, §5.
//!
//! Two harness platforms: [`ProbeDev`], a quiet device whose INTC cause is fixed
//! and whose INTC reads are counted (the matcher), and [`AnyDev`], a device whose
//! every answer comes from an [`Any`]: it writes well-formed records in order, CC
//! and custom records, error records and arbitrary bytes into real ring memory
//! through the producer side of the protocol, drops records into an overflow (INTC
//! bit 29) when a ring is full, fails platform calls, and moves the clock by up to
//! 16 s per read. With every value 0 it is a healthy device.

use core::cell::{Cell, RefCell};

use super::{ExecConfig, ExecRequest, ExecState, Step, TpbEngState, MS_PER_TIMEOUT_S};
use crate::arch::{Arch, ENGINES_PER_CORE, MAX_CORES};
use crate::exec::ExecEvent;
use crate::hal::{self, ErrorKind, ErrorType};
use crate::nq::entry::{RawEntry, ENTRY_SIZE};
use crate::nq::ring::NqProducer;
use crate::nq::{Engine, ErrorEntry, Notifications, Subtype, ERROR_NQ, INFER_STATUS_NQS, NQ_PER_CORE};
use crate::proofs::{cover, Any};
use crate::status::{NrtError, NrtStatus};

/// INTC cause bit 29, the software NQ overflow, seed §5.
const OVERFLOW_BIT: u32 = 1 << super::INTC_SW_NQ_OVERFLOW_BIT;

/// The INTC reads a harness device has seen.
pub(crate) trait CountsIntc {
    /// Reads of the INTC cause register so far.
    fn intc_reads(&self) -> u32;
}

/// A quiet device: fixed INTC cause, INTC reads counted, nothing else answers.
pub(crate) struct ProbeDev {
    pub(crate) cause: u32,
    pub(crate) intc_reads: u32,
}

impl CountsIntc for ProbeDev {
    fn intc_reads(&self) -> u32 {
        self.intc_reads
    }
}

impl ErrorType for ProbeDev {
    type Error = ErrorKind;
}

impl hal::NqRings for ProbeDev {
    fn read_slot(&mut self, _: u8, _: u8, _: u32, _: &mut [u8; 16]) -> Result<(), ErrorKind> {
        Err(ErrorKind::NotMapped)
    }
    fn write_head(&mut self, _: u8, _: u8, _: u32) -> Result<(), ErrorKind> {
        Ok(())
    }
}

impl hal::IntcCause for ProbeDev {
    fn read_cause(&mut self, _: u8, _: u32, line: u32) -> Result<u32, ErrorKind> {
        assert_eq!(line, super::INTC_SW_NQ_OVERFLOW_LINE, "the probe reads INTC line 61");
        self.intc_reads += 1;
        Ok(self.cause)
    }
}

impl hal::Clock for ProbeDev {
    fn now_ns(&self) -> u64 {
        0
    }
}

impl hal::CollectivesProxy for ProbeDev {}

impl hal::FaultProbe for ProbeDev {}

impl hal::EventSink<ExecEvent> for ProbeDev {
    fn event(&mut self, _: &ExecEvent) {}
}

impl crate::counters::CounterSink for ProbeDev {}

impl hal::TensorNotify for ProbeDev {}

/// The substates in order.
pub(crate) const SUBSTATES: [TpbEngState; 3] =
    [TpbEngState::StartPending, TpbEngState::EndPending, TpbEngState::Complete];

/// Seed §2 (`match_entry_to_substate`: "An engine sub-state is monotone ... a record
/// arriving out of order ... is treated as evidence that the NQ ring overflowed")
/// and §5 (the probe: `aws_hal_intc_read_cause(.., 61) >> 29 & 1`): for every
/// substate, subtype (every class: START, END, CUSTOM with every kind of sub-id,
/// CC start/end, the unexpected ones), INTC bit 29 and engine, one record never
/// moves any substate backwards and moves only its own engine's; an out-of-order
/// START (substate not START_PENDING) or END (not END_PENDING) reads the INTC cause
/// exactly once and fails with 1204 (and the overflow flag) when bit 29 is set, the
/// generic 1 when it is clear; every other record leaves the INTC unread (the
/// probe is lazy, seed §5 QUIRK); in-order START and END advance by exactly one.
///
/// Precondition: the request is in WAIT_CORE (the only state the matcher runs in)
/// and the device's INTC cause has bit 29 = `intc_bit`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn matcher_never_regresses_and_probes_out_of_order<D: crate::exec::ExecDevice + CountsIntc>(
    dev: &mut D,
    sub: TpbEngState,
    subtype: u16,
    sub_id: u16,
    intc_bit: bool,
    eng: usize,
    cayman: bool,
) {
    let Some(engine) = Engine::from_index(eng) else { return };
    let arch = if cayman { Arch::Cayman } else { Arch::Sunda };
    let mut req = ExecRequest::new(ExecConfig::new(arch, 1, 5));
    req.state = ExecState::WaitCore;
    req.tpb_exec_state[0][eng] = sub;
    let before = req.tpb_exec_state;
    let nq_id = INFER_STATUS_NQS[eng];
    let mut raw = RawEntry::new(subtype, nq_id, 0, sub_id, 1234);
    raw.set_isa_line_lo(100);
    let reads0 = dev.intc_reads();
    let r = req.match_entry(dev, 0, engine, nq_id, &raw.to_array());
    let probes = dev.intc_reads() - reads0;
    let after = req.tpb_exec_state;
    for c in 0..MAX_CORES {
        for e in 0..ENGINES_PER_CORE {
            assert!(after[c][e] >= before[c][e], "a substate regressed");
            if (c, e) != (0, eng) {
                assert_eq!(after[c][e], before[c][e], "another engine's substate moved");
            }
        }
    }
    let out_of_order = (subtype == Subtype::START && sub != TpbEngState::StartPending)
        || (subtype == Subtype::END && sub != TpbEngState::EndPending);
    cover!(out_of_order && intc_bit, "matcher: out of order, bit 29 set");
    cover!(out_of_order && !intc_bit, "matcher: out of order, bit 29 clear");
    cover!(!out_of_order, "matcher: in order or not START/END");
    if out_of_order {
        assert_eq!(probes, 1, "an out-of-order record probes the INTC exactly once");
        let want = if intc_bit { NrtStatus::ExecSwNqOverflow } else { NrtStatus::Failure };
        assert_eq!(r, Err(NrtError::failed(want)));
        assert_eq!(after, before, "an out-of-order record moves nothing");
        let flag = if subtype == Subtype::START { super::fatal::OVERFLOW } else { super::fatal::END_OVERFLOW };
        assert_eq!(req.fatal_flag(0, flag), intc_bit);
        return;
    }
    assert_eq!(probes, 0, "the INTC is read only when something is already wrong");
    match Subtype::parse(subtype) {
        Subtype::Start => {
            assert_eq!(r, Ok(()));
            assert_eq!(after[0][eng], TpbEngState::EndPending);
        }
        Subtype::End => {
            assert_eq!(r, Ok(()));
            assert_eq!(after[0][eng], TpbEngState::Complete);
        }
        Subtype::CcStart | Subtype::CcEnd => {
            assert_eq!(r, Ok(()));
            assert_eq!(after, before);
        }
        Subtype::Custom => {
            let invalid = sub_id >= crate::nq::entry::CUSTOM_SUB_ID_COUNT;
            cover!(invalid, "matcher: invalid custom sub-id");
            assert_eq!(r.is_err(), invalid);
            if let Err(st) = r {
                assert_eq!(st.status(), NrtStatus::Failure);
            }
            assert_eq!(after, before);
        }
        Subtype::Unexpected(_) => {
            cover!(true, "matcher: unexpected subtype");
            assert_eq!(r, Err(NrtError::FAILURE));
            assert_eq!(after, before);
        }
    }
}

/// Ring bytes of [`AnyDev`]'s rings at most (4 entries).
pub(crate) const ANY_RING_MAX: usize = 64;

/// A device whose every answer is drawn from an [`Any`] (see the module docs).
pub(crate) struct AnyDev<A: Any> {
    any: RefCell<A>,
    ring_size: u32,
    mem: [[[u8; ANY_RING_MAX]; NQ_PER_CORE]; MAX_CORES],
    prod: [[Option<NqProducer>; NQ_PER_CORE]; MAX_CORES],
    next_is_start: [[bool; ENGINES_PER_CORE]; MAX_CORES],
    cause: [u32; MAX_CORES],
    now: Cell<u64>,
    pub(crate) events: u32,
}

impl<A: Any> AnyDev<A> {
    pub(crate) fn new(any: A, ring_size: u32) -> AnyDev<A> {
        let size = ring_size.min(ANY_RING_MAX as u32);
        AnyDev {
            any: RefCell::new(any),
            ring_size: size,
            mem: [[[0; ANY_RING_MAX]; NQ_PER_CORE]; MAX_CORES],
            prod: [[NqProducer::new(size).ok(); NQ_PER_CORE]; MAX_CORES],
            next_is_start: [[true; ENGINES_PER_CORE]; MAX_CORES],
            cause: [0; MAX_CORES],
            now: Cell::new(1_000_000_000),
            events: 0,
        }
    }

    fn draw(&self) -> u8 {
        self.any.borrow_mut().u8()
    }

    /// Write `entry` as the device would, or drop it and raise bit 29 when full.
    fn push(&mut self, core: usize, nq: usize, mut entry: [u8; ENTRY_SIZE]) {
        let Some(p) = self.prod[core][nq].as_mut() else { return };
        match p.push(&mut entry) {
            Some(off) => {
                let off = off as usize;
                self.mem[core][nq][off..off + ENTRY_SIZE].copy_from_slice(&entry);
            }
            None => self.cause[core] |= OVERFLOW_BIT,
        }
    }

    /// Maybe write a record into ring `(core, nq)` before the host reads it.
    fn produce(&mut self, core: usize, nq: u8) {
        let act = self.draw();
        let ts = u64::from(self.draw()) + 1;
        if nq == ERROR_NQ {
            if (0x40..0x60).contains(&act) {
                let sub = u16::from(self.draw() % 12);
                self.push(core, usize::from(nq), ErrorEntry::new(sub, 0, 0, ts).to_array());
            }
            return;
        }
        let Some(eng) = INFER_STATUS_NQS.iter().position(|q| *q == nq) else { return };
        let rec = match act {
            0x00..=0x3F => {
                let start = self.next_is_start[core][eng];
                self.next_is_start[core][eng] = !start;
                RawEntry::new(if start { Subtype::START } else { Subtype::END }, nq, 0, 0, ts)
            }
            0x40..=0x5F => {
                let sel = self.draw();
                let subtype = [Subtype::CC_START, Subtype::CC_END, Subtype::CUSTOM][usize::from(sel % 3)];
                let mut r = RawEntry::new(subtype, nq, 0, u16::from(sel / 3 % 12), ts);
                r.set_isa_line_lo(u16::from(self.draw()));
                r
            }
            0x60..=0x7F => {
                let b = self.any.borrow_mut().bytes16();
                *RawEntry::from_array(&b)
            }
            _ => return,
        };
        self.push(core, usize::from(nq), rec.to_array());
    }
}

impl<A: Any> ErrorType for AnyDev<A> {
    type Error = ErrorKind;
}

impl<A: Any> hal::NqRings for AnyDev<A> {
    fn read_slot(&mut self, core: u8, nq: u8, offset: u32, out: &mut [u8; 16]) -> Result<(), ErrorKind> {
        assert!(offset < self.ring_size && offset.is_multiple_of(16), "a read outside the ring");
        let (c, q) = (usize::from(core), usize::from(nq));
        assert!(c < MAX_CORES && q < NQ_PER_CORE, "a read of a ring that does not exist");
        if self.draw() >= 0xFC {
            return Err(ErrorKind::Io);
        }
        self.produce(c, nq);
        let off = offset as usize;
        out.copy_from_slice(&self.mem[c][q][off..off + ENTRY_SIZE]);
        Ok(())
    }
    fn write_head(&mut self, core: u8, nq: u8, head: u32) -> Result<(), ErrorKind> {
        assert!(head < self.ring_size && head.is_multiple_of(16), "HEAD outside the ring");
        if self.draw() >= 0xF8 {
            return Err(ErrorKind::Io);
        }
        if let Some(p) = self.prod[usize::from(core)][usize::from(nq)].as_mut() {
            p.on_head_write(head);
        }
        Ok(())
    }
}

impl<A: Any> hal::IntcCause for AnyDev<A> {
    fn read_cause(&mut self, core: u8, _: u32, _: u32) -> Result<u32, ErrorKind> {
        let d = self.draw();
        if d >= 0xF0 {
            return Err(ErrorKind::Io);
        }
        let extra = if d >= 0xC0 { OVERFLOW_BIT } else { 0 };
        Ok(self.cause[usize::from(core)] | extra)
    }
}

impl<A: Any> hal::Clock for AnyDev<A> {
    fn now_ns(&self) -> u64 {
        let d = self.draw();
        let step = if d >= 0xF0 { u64::from(d - 0xEF) * 1_000_000_000 } else { 1_000 };
        let t = self.now.get().saturating_add(step);
        self.now.set(t);
        t
    }
}

fn proxy<A: Any>(dev: &AnyDev<A>) -> Result<bool, NrtError> {
    match dev.draw() {
        0x00..=0xDF => Ok(true),
        0xE0..=0xF7 => Ok(false),
        // A source that failed without setting a status.
        0xF8..=0xF9 => Err(NrtError::failed(NrtStatus::Success)),
        0xFA..=0xFB => Err(NrtError::failed(NrtStatus::Timeout)),
        _ => Err(NrtError::FAILURE),
    }
}

impl<A: Any> hal::CollectivesProxy for AnyDev<A> {
    fn barrier_status(&mut self, _: u8) -> Result<bool, NrtError> {
        proxy(self)
    }
    fn network_status(&mut self, _: u8) -> Result<bool, NrtError> {
        proxy(self)
    }
}

impl<A: Any> hal::FaultProbe for AnyDev<A> {
    fn hbm_uncorrectable(&mut self, _: u8) -> Option<NrtStatus> {
        match self.draw() {
            0xF0..=0xF7 => Some(NrtStatus::ExecHwErrHbmUe),
            0xF8..=0xFF => Some(NrtStatus::ExecHwErrRepairableHbmUe),
            _ => None,
        }
    }
    fn dma_aborted(&mut self, _: u8) -> bool {
        self.draw() >= 0xF0
    }
}

impl<A: Any> hal::EventSink<ExecEvent> for AnyDev<A> {
    fn event(&mut self, _: &ExecEvent) {
        self.events = self.events.saturating_add(1);
    }
}

impl<A: Any> crate::counters::CounterSink for AnyDev<A> {}

impl<A: Any> hal::TensorNotify for AnyDev<A> {
    fn tensor_completed(&mut self, _: u8, _: u16) -> Option<(u16, u32)> {
        (self.draw() < 0x80).then_some((0, 1))
    }
}

/// Seed §1 (the one-step contract: "returns 1 ... 0 ... or 2", and the
/// GOTCHA that drivers depend on it) with DESIGN.md's "a DONE request is terminal":
/// against a device whose every answer is arbitrary (records in and out of order,
/// garbage bytes, overflows, failed reads and proxies, clock jumps), for any arch,
/// core count and timeout, each call of `progress_one_step` returns 0, 1 or 2; the
/// machine only moves forward (INIT -> WAIT_BARRIER_PROXY -> WAIT_CORE -> DONE);
/// 1 only before DONE; 0 and 2 only in DONE, 2 never with `NRT_SUCCESS`; once DONE,
/// every further call returns the same code and status and changes nothing; and a
/// substate never regresses while in WAIT_CORE. (The existing proptest
/// `exec::tests::props::arbitrary_entry_streams` checks the same over FakeDevice.)
///
/// Precondition: none beyond the types; `tpb_count` is any byte (clamped by
/// `ExecRequest::new`), ring sizes are any of the valid 32 or 64 bytes, and one
/// ring may be left unbound.
///
/// This whole-harvest form runs as a test only: under kani the same contract is
/// proved for every number of steps by induction (`step.rs`), where unrolling
/// this loop never reached the solver.
#[cfg_attr(kani, allow(dead_code))] // kani proves this property another way (see the doc)
pub(crate) fn progress_one_step_returns_0_1_2_and_done_is_terminal<A: Any>(mut any: A, steps: usize) {
    let arch = [Arch::Sunda, Arch::Cayman, Arch::Mariana][usize::from(any.u8() % 3)];
    let tpb_count = any.u8() % 4;
    let timeout_s = u32::from(any.u8() % 4);
    let ring_size = 32u32 << (any.u8() % 2);
    let hole = any.u8();
    let mut nq = Notifications::new();
    for core in 0..MAX_CORES as u8 {
        assert!(nq.bind_core(core, ring_size).is_ok());
    }
    if hole & 0xF0 == 0xF0 {
        // Leave one ring unbound: the transition to WAIT_CORE must fail cleanly.
        let q =
            (hole % (ENGINES_PER_CORE as u8 + 1)).checked_sub(1).map_or(ERROR_NQ, |e| INFER_STATUS_NQS[usize::from(e)]);
        if let Some(r) = nq.ring_mut(hole >> 3 & 1, q) {
            *r = crate::nq::NqRing::UNBOUND;
        }
    }
    let mut dev = AnyDev::new(any, ring_size);
    let mut req = ExecRequest::new(ExecConfig::new(arch, tpb_count, timeout_s));
    assert!((1..=MAX_CORES).contains(&req.tpb_count()));
    let mut done: Option<Step> = None;
    let mut prev = req.tpb_exec_state;
    for _ in 0..steps {
        let was = req.state;
        let s = req.progress_one_step(&mut dev, &mut nq);
        let out = s.status().unwrap_or(NrtStatus::Other(0xDEAD));
        assert!(s.code() <= 2);
        assert!(req.state as u8 >= was as u8, "the machine moved backwards");
        match s {
            Step::InFlight => {
                assert_ne!(req.state, ExecState::Done);
                assert!(done.is_none(), "1 after DONE");
            }
            Step::Done(_) | Step::Error(_) => {
                assert_eq!(req.state, ExecState::Done);
                assert_eq!(req.result(), Some(s));
                if matches!(s, Step::Error(_)) {
                    assert!(!out.is_success(), "2 with NRT_SUCCESS");
                }
            }
        }
        match done {
            Some(d) => {
                cover!(true, "progress: a DONE request stepped again");
                assert_eq!(s, d, "DONE is not terminal");
                assert_eq!(req.tpb_exec_state, prev);
            }
            None if s != Step::InFlight => {
                cover!(matches!(s, Step::Done(_)) && out.is_success(), "progress: DONE with 0 and success");
                cover!(matches!(s, Step::Error(_)), "progress: DONE with 2");
                cover!(out == NrtStatus::Timeout, "progress: timeout (5)");
                cover!(out == NrtStatus::ExecSwNqOverflow, "progress: overflow (1204)");
                cover!(was == ExecState::WaitCore, "progress: DONE from WAIT_CORE");
                done = Some(s);
            }
            None => {}
        }
        if was == ExecState::WaitCore {
            for (now, before) in req.tpb_exec_state.iter().flatten().zip(prev.iter().flatten()) {
                assert!(now >= before, "a substate regressed");
            }
        }
        prev = req.tpb_exec_state;
    }
}

/// Seed §5 GOTCHA (`core.timeout_ms = 1000 * mods[0]->param.timeout`, seconds to
/// milliseconds) and §1 step 3: for every `timeout_s`, entering WAIT_CORE derives
/// `timeout_ms` as exactly `1000 * timeout_s` (compared in u128: the u64 product
/// never overflows), and a harvest that starts at once is not over budget unless
/// the budget is 0.
///
/// Precondition: none (every u32 is a timeout a model may carry).
pub(crate) fn timeout_ms_never_overflows(timeout_s: u32) {
    assert!(MS_PER_TIMEOUT_S.checked_mul(u64::from(timeout_s)).is_some());
    let mut nq = Notifications::new();
    assert!(nq.bind_core(0, 32).is_ok());
    let mut dev = AnyDev::new(crate::proofs::Zeros, 32);
    let mut req = ExecRequest::new(ExecConfig::new(Arch::Sunda, 1, timeout_s));
    assert_eq!(req.progress_one_step(&mut dev, &mut nq), Step::InFlight);
    assert_eq!(req.progress_one_step(&mut dev, &mut nq), Step::InFlight);
    assert_eq!(req.state(), ExecState::WaitCore);
    assert_eq!(u128::from(req.timeout_ms()), 1000 * u128::from(timeout_s));
    cover!(timeout_s == u32::MAX, "timeout: the largest timeout");
    cover!(timeout_s == 0, "timeout: a zero budget");
    let elapsed_ms = 0u64;
    assert_eq!(elapsed_ms >= req.timeout_ms(), timeout_s == 0);
}

/// Seed §5 (`aws_hal_intc_read_cause(.., 61) >> 29 & 1`): the INTC cause decoder
/// is total and exact over every 32-bit word: bit 29 is the overflow flag, the
/// other 31 bits are kept apart and the word round-trips; and the probe the
/// harvest makes reads the cause exactly once and answers exactly bit 29.
///
/// Precondition: none (the device may put any word in the register).
pub(crate) fn intc_cause_decoder_is_exact(word: u32, core: usize, timeout: bool) {
    let c = super::IntcCauseLine61::from_bits(word);
    let bit = word >> super::INTC_SW_NQ_OVERFLOW_BIT & 1 == 1;
    assert_eq!(c.sw_nq_overflow(), bit);
    assert_eq!(c.other_low(), word & 0x1FFF_FFFF);
    assert_eq!(u32::from(c.other_high()), word >> 30);
    assert_eq!(c.into_bits(), word);
    cover!(bit, "intc: bit 29 set");
    cover!(!bit && word != 0, "intc: other bits only");
    let core = core % MAX_CORES;
    let mut dev = ProbeDev { cause: word, intc_reads: 0 };
    let mut req = ExecRequest::new(ExecConfig::new(Arch::Sunda, 2, 1));
    let reason = if timeout { crate::exec::ProbeReason::Timeout } else { crate::exec::ProbeReason::OutOfOrderEnd };
    assert_eq!(req.probe_overflow(&mut dev, core, reason, crate::nq::EngineSet::EMPTY), bit);
    assert_eq!(dev.intc_reads, 1, "one probe, one INTC read");
}

/// The timestamp rescale (seed §3 timestamp decode: `(ts - init) * expected_inc /
/// actual_inc`, in integer arithmetic): the whole postcondition,
/// `finalize::rescale_post`, over generated calibrations. Kani proves
/// the part the harvest's proofs rely on as the function's contract (`None`
/// exactly without an actual increment, `prove_rescale_ns_contract`).
#[cfg(test)]
pub(crate) fn rescale_ns_contract(cal: crate::nq::TsCal, ts: u64) {
    let r = super::finalize::rescale_ns(&cal, ts);
    assert!(super::finalize::rescale_post(&cal, ts, &r));
    cover!(r.is_none(), "rescale: no calibration");
    cover!(r == Some(u64::MAX) && ts > cal.init_timestamp, "rescale: saturates");
    cover!(r.is_some_and(|v| v > 0 && v < u64::MAX), "rescale: an ordinary value");
}

/// `sync_point_dev_ts_to_cpu_ts`, seed §3: the sync point maps to itself, the map
/// is monotone (a later device time is never an earlier CPU time) and shifts by
/// exactly the device delta while it does not saturate; it never wraps or panics.
///
/// Precondition: none.
pub(crate) fn dev_to_cpu_is_monotone_and_exact(sp: crate::nq::SyncPoint, a: u64, b: u64) {
    assert_eq!(sp.dev_to_cpu_us(sp.dev_us), sp.cpu_us);
    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
    let (x, y) = (sp.dev_to_cpu_us(lo), sp.dev_to_cpu_us(hi));
    assert!(x <= y, "the map is not monotone");
    let want = i128::from(sp.cpu_us) + i128::from(lo) - i128::from(sp.dev_us);
    let saturated = want < 0 || want > i128::from(u64::MAX);
    cover!(saturated, "sync: saturates");
    cover!(!saturated, "sync: exact");
    if !saturated {
        assert_eq!(i128::from(x), want);
    }
}

#[cfg(kani)]
#[kani::proof]
#[kani::unwind(6)]
fn prove_matcher_never_regresses_and_probes_out_of_order() {
    let intc_bit: bool = kani::any();
    let mut dev = ProbeDev {
        cause: if intc_bit { OVERFLOW_BIT } else { 0 } | (kani::any::<u32>() & !OVERFLOW_BIT),
        intc_reads: 0,
    };
    let sub = SUBSTATES[kani::any::<usize>() % 3];
    matcher_never_regresses_and_probes_out_of_order(
        &mut dev,
        sub,
        kani::any(),
        kani::any(),
        intc_bit,
        kani::any::<usize>() % ENGINES_PER_CORE,
        kani::any(),
    );
}

#[cfg(kani)]
#[kani::proof]
#[kani::unwind(14)]
fn prove_timeout_ms_never_overflows() {
    timeout_ms_never_overflows(kani::any());
}

#[cfg(kani)]
#[kani::proof]
fn prove_intc_cause_decoder_is_exact() {
    intc_cause_decoder_is_exact(kani::any(), kani::any(), kani::any());
}

#[cfg(kani)]
#[kani::proof_for_contract(super::finalize::rescale_ns)]
fn prove_rescale_ns_contract() {
    let cal = crate::nq::TsCal {
        init_timestamp: kani::any(),
        actual_timestamp_inc: kani::any(),
        expected_timestamp_inc: kani::any(),
    };
    let r = super::finalize::rescale_ns(&cal, kani::any());
    kani::cover!(r.is_none(), "rescale: no calibration");
    kani::cover!(r.is_some(), "rescale: a value");
}

#[cfg(kani)]
#[kani::proof]
fn prove_dev_to_cpu_is_monotone_and_exact() {
    let sp = crate::nq::SyncPoint { dev_us: kani::any(), cpu_us: kani::any() };
    dev_to_cpu_is_monotone_and_exact(sp, kani::any(), kani::any());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proofs::{assert_covered, cases, reset_covers, Bytes};
    use crate::testutil::{FakeDevice, INTC_OVERFLOW};
    use proptest::prelude::*;

    impl CountsIntc for FakeDevice {
        fn intc_reads(&self) -> u32 {
            self.intc_reads
        }
    }

    /// kani takes only a literal unwind bound: the step and frame harnesses'
    /// bound must stay `ts_slot::COUNT + 1`, the timestamp-slot loop and its exit test.
    #[test]
    fn unwind_bounds_follow_the_timestamp_slots() {
        let want = crate::exec::ts_slot::COUNT + 1;
        let mut found = 0;
        for src in [include_str!("proofs.rs"), include_str!("proofs/parts.rs"), include_str!("proofs/step.rs")] {
            for rest in src.split(concat!("#[kani::", "unwind(")).skip(1) {
                let n: usize = rest.split(')').next().and_then(|n| n.parse().ok()).expect("a literal bound");
                if n >= crate::exec::ts_slot::CC_START {
                    assert_eq!(n, want, "an unwind bound over the slot loop is not ts_slot::COUNT + 1");
                    found += 1;
                }
            }
        }
        assert!(found > 0, "no harness has the bound ts_slot::COUNT + 1 = {want}");
        // The matcher's harness loops over the engines once: ENGINES_PER_CORE + 1.
        let head = include_str!("proofs.rs").split("fn prove_matcher_never_regresses_and_probes_out_of_order").next();
        let bound =
            head.and_then(|h| h.rsplit(concat!("#[kani::", "unwind(")).next()).and_then(|r| r.split(')').next());
        assert_eq!(
            bound.and_then(|n| n.parse().ok()),
            Some(ENGINES_PER_CORE + 1),
            "the matcher harness's unwind bound"
        );
    }

    /// Exhaustive: every substate x every subtype class (0..=10, 0xFFFF) x INTC bit
    /// 29 set or clear x engine x a sub-id of each custom kind x sunda/cayman, on both
    /// the harness device and core's FakeDevice.
    #[test]
    fn matcher_never_regresses_and_probes_out_of_order_tests() {
        reset_covers();
        let mut fake = Box::new(FakeDevice::new(Arch::Sunda, 64));
        // Under Miri (each step interpreted) one engine and one sub-id of each kind.
        let engines = if cfg!(miri) { 2..3 } else { 0..ENGINES_PER_CORE };
        let sub_ids: &[u16] = if cfg!(miri) { &[7, 11] } else { &[0, 7, 10, 11, 0xFFFF] };
        for sub in SUBSTATES {
            for subtype in (0u16..=10).chain([0xFFFF]) {
                for intc_bit in [false, true] {
                    let cause = if intc_bit { OVERFLOW_BIT } else { 0 } | 0x0000_0F0F;
                    for eng in engines.clone() {
                        for &sub_id in sub_ids {
                            for cayman in [false, true] {
                                let mut dev = ProbeDev { cause, intc_reads: 0 };
                                matcher_never_regresses_and_probes_out_of_order(
                                    &mut dev, sub, subtype, sub_id, intc_bit, eng, cayman,
                                );
                                fake.intc_cause = [if intc_bit { INTC_OVERFLOW } else { 0 }; 2];
                                matcher_never_regresses_and_probes_out_of_order(
                                    &mut *fake, sub, subtype, sub_id, intc_bit, eng, cayman,
                                );
                            }
                        }
                    }
                }
            }
        }
        assert_covered(5);
    }

    #[test]
    fn progress_one_step_returns_0_1_2_and_done_is_terminal_tests() {
        reset_covers();
        // The healthy device: every draw 0.
        progress_one_step_returns_0_1_2_and_done_is_terminal(Bytes::new(&[]), 6);
        // Arbitrary devices, and devices that are healthy but for a few bytes.
        proptest!(ProptestConfig::with_cases(cases(2048)),
        |(bytes in proptest::collection::vec(any::<u8>(), 0..1500), steps in 3usize..12)| {
            progress_one_step_returns_0_1_2_and_done_is_terminal(Bytes::new(&bytes), steps);
        });
        proptest!(ProptestConfig::with_cases(cases(2048)),
        |(head in proptest::collection::vec(0u8..4, 0..8),
          sparse in proptest::collection::vec((0usize..400, any::<u8>()), 0..6), steps in 3usize..12)| {
            let mut bytes = vec![0u8; 400];
            bytes[..head.len()].copy_from_slice(&head);
            for (at, v) in sparse {
                bytes[at] = v;
            }
            progress_one_step_returns_0_1_2_and_done_is_terminal(Bytes::new(&bytes), steps);
        });
        assert_covered(6);
    }

    #[test]
    fn timeout_ms_never_overflows_tests() {
        reset_covers();
        for t in [0, 1, 5, 120, 1 << 20, u32::MAX / 1000, u32::MAX / 1000 + 1, u32::MAX - 1, u32::MAX] {
            timeout_ms_never_overflows(t);
        }
        proptest!(ProptestConfig::with_cases(cases(512)), |(t in any::<u32>())| {
            timeout_ms_never_overflows(t);
        });
        assert_covered(2);
    }

    #[test]
    fn intc_cause_decoder_is_exact_tests() {
        reset_covers();
        for bit in 0..32 {
            intc_cause_decoder_is_exact(1 << bit, bit as usize, bit % 2 == 0);
        }
        intc_cause_decoder_is_exact(0, 0, true);
        intc_cause_decoder_is_exact(u32::MAX, 1, false);
        proptest!(ProptestConfig::with_cases(cases(2048)), |(w in any::<u32>(), core in any::<usize>(), t in any::<bool>())| {
            intc_cause_decoder_is_exact(w, core, t);
        });
        assert_covered(2);
    }

    #[test]
    fn rescale_ns_contract_tests() {
        reset_covers();
        let cals = [(0u64, 1u32, 1u32), (1000, 3, 2), (0, 0, 1), (0, 1, u32::MAX), (u64::MAX, 7, 7), (5, 2, 3)];
        for (init, actual, expected) in cals {
            let cal = crate::nq::TsCal {
                init_timestamp: init,
                actual_timestamp_inc: actual,
                expected_timestamp_inc: expected,
            };
            for ts in [0, 1, 999, 1000, 4000, u64::MAX / 2, u64::MAX] {
                rescale_ns_contract(cal, ts);
            }
        }
        proptest!(ProptestConfig::with_cases(cases(4096)),
        |(init in any::<u64>(), actual in prop_oneof![Just(0u32), 1u32..4, any::<u32>()], expected in any::<u32>(), ts in any::<u64>())| {
            let cal = crate::nq::TsCal { init_timestamp: init, actual_timestamp_inc: actual, expected_timestamp_inc: expected };
            rescale_ns_contract(cal, ts);
        });
        assert_covered(3);
    }

    #[test]
    fn dev_to_cpu_is_monotone_and_exact_tests() {
        reset_covers();
        let edges = [0u64, 1, 1000, u64::MAX / 2, u64::MAX - 1, u64::MAX];
        for dev_us in edges {
            for cpu_us in edges {
                for a in edges {
                    for b in [0, 7, u64::MAX] {
                        dev_to_cpu_is_monotone_and_exact(crate::nq::SyncPoint { dev_us, cpu_us }, a, b);
                    }
                }
            }
        }
        proptest!(ProptestConfig::with_cases(cases(4096)), |(d in any::<u64>(), c in any::<u64>(), a in any::<u64>(), b in any::<u64>())| {
            dev_to_cpu_is_monotone_and_exact(crate::nq::SyncPoint { dev_us: d, cpu_us: c }, a, b);
        });
        assert_covered(2);
    }
}

mod group;
mod parts;
mod step;
