//! FINALIZE: timestamp post-processing, the error sweep, and the status
//! reconciliation, completion-engine seed §1 FINALIZE, §3 timestamp decode, §4.

use super::{ts_slot, ExecDevice, ExecEvent, ExecRequest, ExecState, Settle, Step, TimeoutCause};
use crate::arch::ENGINES_PER_CORE;
use crate::counters::NcUpdate;
use crate::nq::entry::ENTRY_SIZE;
use crate::nq::error::ERROR_SUBTYPE_COUNT;
use crate::nq::{Engine, ErrorClass, ErrorEntry, ErrorRecord, Notifications, TsCal, ERROR_NQ};
use crate::status::{NrtError, NrtStatus};
use crate::trace::emit;

/// More pending error records than this draws the "unusually large number of
/// error notifications" warning. The seed names the warning, not the number,
/// G-ERR-LARGE: 32, two full 16-entry batches.
pub const ERROR_COUNT_WARN_THRESHOLD: u32 = 32;

/// Nanoseconds per microsecond: the seed's `/ 0x3E8` after the rescale.
pub const NS_PER_US: u64 = 0x3E8;

/// Rescale a device timestamp to nanoseconds from the calibration point:
/// `(ts - init) * expected_inc / actual_inc` in saturating integer arithmetic,
/// the seed's `double` ratio without its rounding. `None` when the actual
/// increment is 0.
///
/// Kani proves its contract, `None` exactly then, which stands in for it in
/// the harvest's proofs. The value, `rescale_post`, is checked by tests: a
/// 128-bit product and quotient are more than the SAT back end decides.
#[cfg_attr(kani, kani::ensures(|r: &Option<u64>| r.is_none() == (cal.actual_timestamp_inc == 0)))]
pub fn rescale_ns(cal: &TsCal, device_ts: u64) -> Option<u64> {
    if cal.actual_timestamp_inc == 0 {
        return None;
    }
    let delta = device_ts.saturating_sub(cal.init_timestamp);
    // Fast paths, each the 128-bit quotient's value: a 1:1 calibration is the
    // delta itself, and a product that fits 64 bits is divided in 64 bits.
    if cal.expected_timestamp_inc == cal.actual_timestamp_inc {
        return Some(delta);
    }
    if let Some(num) = delta.checked_mul(u64::from(cal.expected_timestamp_inc)) {
        return Some(num / u64::from(cal.actual_timestamp_inc));
    }
    let ns = u128::from(delta) * u128::from(cal.expected_timestamp_inc) / u128::from(cal.actual_timestamp_inc);
    Some(u64::try_from(ns).unwrap_or(u64::MAX))
}

/// What [`rescale_ns`] guarantees: `None` exactly without an actual increment;
/// 0 before the calibration point; the identity for a 1:1 calibration; no
/// stretch for a clock that runs fast or true; and the exact quotient
/// `floor(delta * expected / actual)`, or `u64::MAX` when that does not fit.
#[cfg(test)]
pub(crate) fn rescale_post(cal: &TsCal, device_ts: u64, r: &Option<u64>) -> bool {
    let Some(v) = *r else { return cal.actual_timestamp_inc == 0 };
    if cal.actual_timestamp_inc == 0 {
        return false;
    }
    let delta = device_ts.saturating_sub(cal.init_timestamp);
    let (e, a) = (u128::from(cal.expected_timestamp_inc), u128::from(cal.actual_timestamp_inc));
    let num = u128::from(delta) * e;
    let exact = u128::from(v) * a <= num && num < (u128::from(v) + 1) * a;
    let saturated = v == u64::MAX && u128::from(v) * a <= num;
    (delta != 0 || v == 0)
        && (cal.expected_timestamp_inc != cal.actual_timestamp_inc || v == delta)
        && (cal.expected_timestamp_inc > cal.actual_timestamp_inc || v <= delta)
        && (exact || saturated)
}

impl ExecRequest {
    /// Post-process, sweep errors, reconcile, count; the request becomes DONE.
    /// `fault` is what ended the harvest early, if anything did.
    /// Under [`Settle::AfterNotice`] the post-processing and the counters are
    /// left to [`Self::settle`], G-SETTLE: the status does not depend on them.
    pub(super) fn finalize<D: ExecDevice + ?Sized>(
        &mut self,
        dev: &mut D,
        nq: &mut Notifications,
        fault: Option<NrtError>,
    ) -> Step {
        let deferred = self.cfg.settle == Settle::AfterNotice;
        if !deferred {
            self.postprocess(dev, nq);
        }
        self.process_errors(dev, nq);
        let mut best = NrtStatus::Success;
        for r in self.out_info.exec_rets.iter().take(self.tpb_count()) {
            best = best.worst(*r);
        }
        // As the seed: a clean harvest returns 0 even when the error sweep set a
        // status; only a faulted harvest returns 2, G-RET0, a generic failure
        // when no core has a status. Every FINALIZE ends in DONE, G-DONE.
        let step = match fault {
            None => Step::Done(best),
            Some(_) => Step::Error(NrtError::failed(best)),
        };
        self.state = ExecState::Done;
        self.result = step;
        if deferred {
            self.settle_due = true;
        } else {
            self.count(dev, step);
        }
        step
    }

    /// The work FINALIZE left under [`Settle::AfterNotice`], once: the HEAD
    /// write-back of every ring not handed back, G-HEAD-BATCH, then the
    /// post-processing and the counter update in the seed's order. Returns
    /// `false`, changing nothing, when nothing is due.
    ///
    /// The rescale uses the calibration in force now, and the counters end the
    /// total latency now, so a caller settles as soon as the status is out. A
    /// request never settled is never counted; its rings lose nothing.
    pub fn settle<D: ExecDevice + ?Sized>(&mut self, dev: &mut D, nq: &mut Notifications) -> bool {
        if !self.settle_due || self.state != ExecState::Done {
            return false;
        }
        self.settle_due = false;
        super::group::write_back_heads(dev, nq, self.tpb_count());
        self.postprocess(dev, nq);
        self.count(dev, self.result);
        true
    }

    /// The counter hook, `nds_increment_nc_counter`, seed §1 FINALIZE: each
    /// core's outcome to the platform, once the status is decided. A core with
    /// no status of its own whose engines did not all complete counts the
    /// request's; one that completed counts its success, G-NDS-MAP. The first
    /// core's update carries the request's status, G-NDS-SUM. FINALIZE reads no
    /// clock: the platform ends the total latency on its own.
    fn count<D: ExecDevice + ?Sized>(&self, dev: &mut D, step: Step) {
        let best = step.status().unwrap_or(NrtStatus::Success);
        for core in 0..self.tpb_count() {
            let own = self.out_info.exec_rets.get(core).copied().unwrap_or(best);
            let cut_short = own.is_success() && matches!(step, Step::Error(_)) && !self.core_complete(core);
            let status = if cut_short { best } else { own };
            let err = self.out_info.err.get(core).copied().flatten();
            let update = NcUpdate {
                status,
                sequencer_error: err == Some(ErrorClass::SwSequencer),
                correctable_ecc: err == Some(ErrorClass::EccCorrectable),
                device_latency_us: self.out_info.tpb_duration_us.get(core).copied().unwrap_or(0),
                started_ns: self.barrier_start_ns,
                harvested: true,
                // The execution counts once, at the first core, in the request's outcome.
                execution: (core == 0).then_some(best),
            };
            dev.nc_counters(core as u8, &update);
        }
    }

    /// `exec_request_postprocess_exec`: device timestamps to CPU microseconds, and
    /// each core's duration.
    fn postprocess<D: ExecDevice + ?Sized>(&mut self, dev: &mut D, nq: &Notifications) {
        if self.ts_is_cpu {
            return;
        }
        for core in 0..self.tpb_count() {
            // Which slots hold a record, from the raw values: a rescaled one may be 0.
            let raw = self.vcore_notif_ts.get(core).copied().unwrap_or_default();
            let bits = raw.iter().enumerate().fold(0u16, |b, (s, v)| if *v != 0 { b | (1 << s) } else { b });
            if let Some(r) = self.ts_recorded.get_mut(core) {
                *r = bits;
            }
            self.postprocess_core(dev, nq, core);
        }
        self.ts_is_cpu = true;
    }

    /// [`Self::postprocess`] for one core. Writes only `vcore_notif_ts[core]`
    /// and `out_info.tpb_duration_us[core]`, as kani proves.
    pub(super) fn postprocess_core<D: ExecDevice + ?Sized>(&mut self, dev: &mut D, nq: &Notifications, core: usize) {
        let c = core as u8;
        let sync = nq.sync_point(c);
        let slot_engine = self.slot_engine.get(core).copied().unwrap_or_default();
        let Some(slots) = self.vcore_notif_ts.get_mut(core) else { return };
        let mut reported = [false; ENGINES_PER_CORE];
        for (slot, v) in slots.iter_mut().enumerate() {
            if *v == 0 {
                continue; // never recorded
            }
            let eng = match slot {
                s if s < 2 * ENGINES_PER_CORE => s / 2,
                // CC and tensor slots: the engine whose ring carried the kept record.
                s => usize::from(slot_engine.get(s.wrapping_sub(ts_slot::CC_START)).copied().unwrap_or(0)),
            };
            let cal = nq.cal(c, eng);
            let ns = match rescale_ns(&cal, *v) {
                Some(ns) => ns,
                None => {
                    if let (Some(flag), Some(engine)) = (reported.get_mut(eng), Engine::from_index(eng)) {
                        if !*flag {
                            *flag = true;
                            emit(dev, ExecEvent::TimestampCalInvalid { core: c, engine });
                        }
                    }
                    v.saturating_sub(cal.init_timestamp)
                }
            };
            *v = sync.dev_to_cpu_us(ns / NS_PER_US);
        }
        // Duration: earliest START to latest END over the engines that have both.
        let mut first = u64::MAX;
        let mut last = 0u64;
        for eng in 0..ENGINES_PER_CORE {
            let s = slots.get(ts_slot::start(eng)).copied().unwrap_or(0);
            let e = slots.get(ts_slot::end(eng)).copied().unwrap_or(0);
            if s != 0 && e != 0 {
                first = first.min(s);
                last = last.max(e);
            }
        }
        if let Some(d) = self.out_info.tpb_duration_us.get_mut(core) {
            *d = last.saturating_sub(first);
        }
    }

    /// `exec_request_process_errors`: per core, the timeout-path hardware
    /// classification, then the error-ring sweep; each core's status is the worst
    /// of what it had and what the sweep found.
    fn process_errors<D: ExecDevice + ?Sized>(&mut self, dev: &mut D, nq: &mut Notifications) {
        for core in 0..self.tpb_count() {
            let c = core as u8;
            let current = self.out_info.exec_rets.get(core).copied().unwrap_or(NrtStatus::Success);
            if current == NrtStatus::Timeout {
                let cause = classify_timeout(dev, c);
                match cause {
                    TimeoutCause::HangOnCompute => emit(dev, ExecEvent::HangOnCompute { core: c }),
                    _ => {
                        let s = cause.status();
                        emit(dev, ExecEvent::HwFault { core: c, status: s });
                        if let Some(r) = self.out_info.exec_rets.get_mut(core) {
                            *r = s;
                        }
                    }
                }
                if let Some(t) = self.out_info.timeout_cause.get_mut(core) {
                    *t = Some(cause);
                }
            }
            let (swept, first_class) = consume_error_block(dev, nq, c);
            if let Some(r) = self.out_info.exec_rets.get_mut(core) {
                *r = r.worst(swept);
            }
            if let Some(e) = self.out_info.err.get_mut(core) {
                if e.is_none() {
                    *e = first_class;
                }
            }
        }
    }
}

/// The timeout branch of `exec_request_process_errors` for one core: ask the
/// probes in the seed's order, HBM UE, DMA abort, collectives, and stop at the
/// first that answers with a status outranking the timeout (by priority, seed §4;
/// G-HW-PRIO: a milder answer cannot erase the timeout and counts as no answer).
/// COMPLETE-1: a repairable HBM UE (1205) is propagated like 1201. Nothing found:
/// HANG_ON_COMPUTE, and the status stays 5, G-TIMEOUT-CLASS.
fn classify_timeout<D: ExecDevice + ?Sized>(dev: &mut D, c: u8) -> TimeoutCause {
    let outranks = |s: NrtStatus| NrtStatus::Timeout.worst(s) == s && s != NrtStatus::Timeout;
    if let Some(s) = dev.hbm_uncorrectable(c).filter(|s| outranks(*s)) {
        return TimeoutCause::HbmUe(s);
    }
    if dev.dma_aborted(c) {
        return TimeoutCause::DmaAbort;
    }
    if dev.collectives_stuck(c) {
        return TimeoutCause::Collectives;
    }
    TimeoutCause::HangOnCompute
}

/// `notification_consume_error_block` for the TPB error ring of `core` (the
/// per-TopSP error blocks are not swept: the harvest has no TopSP rings, G-TOPSP): drain up
/// to one lap less one of error records, keep each for subscribers, classify the
/// first of each subtype (de-dup, `already_logged[26]`), and return the worst
/// status found and the first class seen. An unbound error ring is skipped.
pub(super) fn consume_error_block<D: ExecDevice + ?Sized>(
    dev: &mut D,
    nq: &mut Notifications,
    c: u8,
) -> (NrtStatus, Option<ErrorClass>) {
    let mut status = NrtStatus::Success;
    let mut first_class = None;
    let Some(mut ring) = nq.ring(c, ERROR_NQ).copied() else {
        return (status, first_class);
    };
    if !ring.is_bound() {
        return (status, first_class);
    }
    match ring.available(dev, c, ERROR_NQ) {
        Ok(n) if n > ERROR_COUNT_WARN_THRESHOLD => emit(dev, ExecEvent::ErrorCountLarge { core: c, count: n }),
        Ok(_) => {}
        Err(e) => {
            emit(dev, ExecEvent::RingReadFailed { core: c, nq: ERROR_NQ, kind: crate::hal::Error::kind(&e) });
            return (NrtStatus::Failure, first_class);
        }
    }
    let sync = nq.sync_point(c);
    let limit = ring.batch_limit(u32::MAX);
    let mut logged = [false; ERROR_SUBTYPE_COUNT];
    let mut logged_invalid = false;
    let mut consumed = 0u32;
    let mut buf = [0u8; ENTRY_SIZE];
    while consumed < limit {
        match ring.poll(dev, c, ERROR_NQ, &mut buf) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => {
                emit(dev, ExecEvent::RingReadFailed { core: c, nq: ERROR_NQ, kind: crate::hal::Error::kind(&e) });
                status = status.worst(NrtStatus::Failure);
                break;
            }
        }
        consumed += 1;
        let e = ErrorEntry::from_array(&buf);
        // The seed converts error timestamps with `device_ts / 1000` and the sync
        // point only, without the engine's rescale, G-ERR-TS.
        let ts_cpu_us = sync.dev_to_cpu_us(e.device_ts() / NS_PER_US);
        if nq.push_error(ErrorRecord { core: c, raw: buf, ts_cpu_us }) {
            emit(dev, ExecEvent::ErrorSubscriberOverrun { dropped: nq.errors_dropped() });
        }
        let subtype = e.subtype();
        let seen = match logged.get_mut(usize::from(subtype)) {
            Some(flag) => core::mem::replace(flag, true),
            None => core::mem::replace(&mut logged_invalid, true),
        };
        if seen {
            continue;
        }
        let class = e.class();
        if first_class.is_none() {
            first_class = Some(class);
        }
        match class {
            ErrorClass::EccUncorrectable => emit(dev, ExecEvent::UncorrectableEcc { core: c }),
            ErrorClass::EccCorrectable => emit(dev, ExecEvent::CorrectableEcc { core: c }),
            ErrorClass::SwSequencer => emit(dev, ExecEvent::SequencerError { core: c, code: e.metadata() }),
            _ => {}
        }
        let st = class.status().unwrap_or(NrtStatus::Success);
        emit(dev, ExecEvent::ErrorRecord { core: c, subtype, class, ts_cpu_us, status: st });
        // Several classes in one sweep: keep the worst, G-ERR-COMBINE.
        status = status.worst(st);
    }
    if ring.unacked() > 0 {
        if let Err(e) = ring.write_head(dev, c, ERROR_NQ) {
            emit(dev, ExecEvent::HeadWriteFailed { core: c, nq: ERROR_NQ, kind: crate::hal::Error::kind(&e) });
        }
    }
    if let Some(r) = nq.ring_mut(c, ERROR_NQ) {
        *r = ring;
    }
    (status, first_class)
}

/// FINALIZE's pieces one at a time, for the latency bench to time each on a
/// copy of a finished request (`nrt-bench latency`); not part of the harvest's
/// interface, and built only with `test-utils` (the bench's and tests'
/// feature): run on a live request instead of a copy they would rescale its
/// timestamps twice and change its result after DONE. Each runs exactly the
/// code FINALIZE runs.
#[cfg(any(test, feature = "test-utils"))]
#[doc(hidden)]
pub mod parts {
    use super::{ExecDevice, ExecRequest, Notifications};

    /// The timestamp post-processing of every core (`postprocess_core`, the
    /// rescale of each recorded slot), run again: the CPU-time flag is reset
    /// first, so that a finished request's copy rescales all its slots.
    pub fn postprocess<D: ExecDevice + ?Sized>(req: &mut ExecRequest, dev: &mut D, nq: &Notifications) {
        req.ts_is_cpu = false;
        req.postprocess(dev, nq);
    }

    /// The error sweep of every core (the timeout classification and
    /// `consume_error_block`).
    pub fn process_errors<D: ExecDevice + ?Sized>(req: &mut ExecRequest, dev: &mut D, nq: &mut Notifications) {
        req.process_errors(dev, nq);
    }

    /// The per-core counter update of the request's cached result.
    pub fn count<D: ExecDevice + ?Sized>(req: &ExecRequest, dev: &mut D) {
        req.count(dev, req.result);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rescale_on_known_numbers() {
        // Device clock runs 1.5x fast: 3 actual units per 2 expected ns.
        let cal = TsCal { init_timestamp: 1_000, actual_timestamp_inc: 3, expected_timestamp_inc: 2 };
        assert_eq!(rescale_ns(&cal, 4_000), Some(2_000));
        assert_eq!(rescale_ns(&cal, 1_000), Some(0));
        assert_eq!(rescale_ns(&cal, 999), Some(0), "before init saturates at 0");
        let cal = TsCal { init_timestamp: 0, actual_timestamp_inc: 1, expected_timestamp_inc: u32::MAX };
        assert_eq!(rescale_ns(&cal, u64::MAX), Some(u64::MAX), "saturates, never wraps");
        let cal = TsCal { init_timestamp: 0, actual_timestamp_inc: 0, expected_timestamp_inc: 1 };
        assert_eq!(rescale_ns(&cal, 5), None);
    }

    /// The rescale without its fast paths: the 128-bit quotient, saturated.
    fn rescale_128(cal: &TsCal, device_ts: u64) -> Option<u64> {
        if cal.actual_timestamp_inc == 0 {
            return None;
        }
        let delta = u128::from(device_ts.saturating_sub(cal.init_timestamp));
        let ns = delta * u128::from(cal.expected_timestamp_inc) / u128::from(cal.actual_timestamp_inc);
        Some(u64::try_from(ns).unwrap_or(u64::MAX))
    }

    #[test]
    fn rescale_fast_paths_give_the_128_bit_quotient() {
        // Increments at the edges, and deltas on both sides of the 64-bit
        // product's limit for each (`u64::MAX / expected`).
        let incs = [0u32, 1, 2, 3, 999, 1_000, 1_001, 0x7FFF_FFFF, u32::MAX - 1, u32::MAX];
        let mut checked = 0u32;
        for &e in &incs {
            for &a in &incs {
                let limit = u64::MAX / u64::from(e.max(1));
                for delta in [0, 1, 2, 1_000_003, limit - 1, limit, limit.saturating_add(1), u64::MAX - 1, u64::MAX] {
                    for init in [0u64, 7] {
                        let cal = TsCal { init_timestamp: init, actual_timestamp_inc: a, expected_timestamp_inc: e };
                        let ts = delta.saturating_add(init);
                        assert_eq!(rescale_ns(&cal, ts), rescale_128(&cal, ts), "cal {cal:?} ts {ts}");
                        checked += 1;
                    }
                }
            }
        }
        assert_eq!(checked, 10 * 10 * 9 * 2);
    }
}
