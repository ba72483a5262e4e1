//! The per-engine consumer and the START/END matcher, completion-engine seed §2.
//!
//! For each (core, engine) not yet COMPLETE: read up to 16 fresh records from
//! that engine's INFER_STATUS ring, match each against the engine's substate,
//! stop early when the engine completes, and hand the consumed slots back by
//! writing HEAD, libnrt's `notification_drain`, G-DRAIN.
//!
//! | subtype | substate | effect |
//! |---|---|---|
//! | 2 START | START_PENDING | earliest start kept, -> END_PENDING |
//! | 2 START | other | INTC bit 29 probe: 1204 (overflow) or 1 (generic) |
//! | 3 END | END_PENDING | latest end kept, -> COMPLETE |
//! | 3 END | other | probe: 1204 with `exec_fatal_status[3]`, or 1 |
//! | 7 / 8 CC | any | earliest CC start / latest CC end kept |
//! | 6 CUSTOM | any | cayman fixup on engine index 2, then the sub-id table |
//! | 0, 1, 4, 5, > 8 | any | "unexpected notification": 1 |

use super::{
    fatal, ts_slot, ExecDevice, ExecEvent, ExecRequest, ProbeReason, Settle, TpbEngState, READS_PER_ENGINE_PER_SWEEP,
};
use crate::hal::Error as _;
use crate::nq::entry::{CAYMAN_CUSTOM_NQ_TAG, ENTRY_SIZE};
use crate::nq::{CustomKind, Engine, EngineSet, Notification, Notifications, RawEntry, Subtype};
use crate::status::{NrtError, NrtStatus};
use crate::trace::emit;

/// The INTC error-trigger cause register, line 61, seed §5: bit 29 says the
/// software notification queue overflowed; the other bits are not the
/// harvest's.
#[bitfield_struct::bitfield(u32)]
#[derive(PartialEq, Eq)]
pub struct IntcCauseLine61 {
    /// Bits 28:0.
    #[bits(29)]
    pub other_low: u32,
    /// Bit 29: SW NQ overflow.
    pub sw_nq_overflow: bool,
    /// Bits 31:30.
    #[bits(2)]
    pub other_high: u8,
}

const _: () =
    assert!(IntcCauseLine61::new().with_sw_nq_overflow(true).into_bits() == 1 << super::INTC_SW_NQ_OVERFLOW_BIT);

/// The INTC error-trigger block of a device TPB index
/// (`aws_hal_get_user_errtrig_block_from_tpb_idx`): not given by the seed; we use
/// the TPB index itself, G-ERRTRIG.
pub const fn errtrig_block_of_tpb(tpb_idx: u8) -> u32 {
    tpb_idx as u32
}

impl ExecRequest {
    /// Whether a step now could make progress, read cheaply: outside
    /// WAIT_CORE always `true`; in it, `true` when some engine not yet
    /// COMPLETE has a fresh record at its ring's cursor (a step that reads
    /// nothing fresh cannot complete the request: an engine completes only by
    /// consuming its END). It reads one slot per pending engine, each a line
    /// in this CPU's cache while the device works, and stops at the first
    /// fresh one. It changes nothing: a copy of each cursor is polled, no HEAD
    /// is written. A ring it cannot read, or an unbound one, answers `true`
    /// (the step reports it). It sees no error, timeout or overflow: a driver
    /// that skips steps on `false` must still step at a bounded interval
    /// ([`exec_wait_watching`](super::driver::exec_wait_watching)).
    pub fn may_progress<D: ExecDevice + ?Sized>(&self, dev: &mut D, nq: &Notifications) -> bool {
        if self.state != super::ExecState::WaitCore {
            return true;
        }
        let mut buf = [0u8; ENTRY_SIZE];
        for core in 0..self.tpb_count() {
            for eng in 0..Engine::ALL.len() {
                if self.substate(core, eng) != Some(TpbEngState::StartPending)
                    && self.substate(core, eng) != Some(TpbEngState::EndPending)
                {
                    continue;
                }
                let c = core as u8;
                let Some(&nq_id) = nq.infer_status_nqs().get(eng) else { return true };
                let Some(ring) = nq.ring(c, nq_id).filter(|r| r.is_bound()) else { return true };
                let mut probe = *ring;
                match probe.poll(dev, c, nq_id, &mut buf) {
                    Ok(false) => {}
                    Ok(true) | Err(_) => return true,
                }
            }
        }
        false
    }

    /// `exec_consume_tpb_status_notifications_per_engine` for every engine of `core`.
    pub(super) fn consume_core<D: ExecDevice + ?Sized>(
        &mut self,
        dev: &mut D,
        nq: &mut Notifications,
        core: usize,
    ) -> Result<(), NrtError> {
        // An index loop (a constant bound for the model checker, where a slice
        // iterator's end is a pointer it can bound only by its unwind limit).
        for eng in 0..Engine::ALL.len() {
            let Some(engine) = Engine::from_index(eng) else { continue };
            if self.substate(core, eng) != Some(TpbEngState::StartPending)
                && self.substate(core, eng) != Some(TpbEngState::EndPending)
            {
                continue; // COMPLETE (or no such engine): counted, skipped
            }
            self.consume_engine(dev, nq, core, eng, engine)?;
        }
        Ok(())
    }

    /// `exec_consume_tpb_status_notifications_per_engine` for one engine of
    /// `core` that is not COMPLETE: one batch of its ring through the matcher,
    /// then HEAD. Writes of the request only that engine's substate and `core`'s
    /// timestamps, slot engines and fatal flags, and of `nq` only that engine's
    /// ring (kani: `exec::proofs::parts`'s `consume_engine_keeps_its_frame`).
    pub(super) fn consume_engine<D: ExecDevice + ?Sized>(
        &mut self,
        dev: &mut D,
        nq: &mut Notifications,
        core: usize,
        eng: usize,
        engine: Engine,
    ) -> Result<(), NrtError> {
        let c = core as u8;
        let Some(&nq_id) = nq.infer_status_nqs().get(eng) else {
            return Err(NrtError::FAILURE);
        };
        let Some(ring) = nq.ring_mut(c, nq_id) else {
            return Err(NrtError::FAILURE);
        };
        let mut cursor = *ring;
        let limit = cursor.batch_limit(READS_PER_ENGINE_PER_SWEEP);
        let mut consumed = 0u32;
        let mut result = Ok(());
        let mut buf = [0u8; ENTRY_SIZE];
        while consumed < limit {
            match cursor.poll(dev, c, nq_id, &mut buf) {
                Ok(true) => {}
                Ok(false) => break,
                Err(e) => {
                    emit(dev, ExecEvent::RingReadFailed { core: c, nq: nq_id, kind: e.kind() });
                    result = Err(NrtError::FAILURE);
                    break;
                }
            }
            consumed += 1;
            if let Err(st) = self.match_entry(dev, core, engine, nq_id, &buf) {
                result = Err(st);
                break;
            }
            if self.substate(core, eng) == Some(TpbEngState::Complete) {
                break;
            }
        }
        // Hand back what was read, and retry a HEAD write that failed before;
        // batched, only when due, G-HEAD-BATCH. Settled after the notice, a
        // completed engine's last reads go back at the settle, not on the
        // notice path, G-SETTLE, unless half the ring waits for them.
        let complete = self.substate(core, eng) == Some(TpbEngState::Complete);
        let at_settle = complete && self.cfg.settle == Settle::AfterNotice;
        let due = cursor.head_due() || result.is_err() || (!at_settle && (!nq.head_batching() || complete));
        if cursor.unacked() > 0 && due {
            if let Err(e) = cursor.write_head(dev, c, nq_id) {
                // Not fatal by itself: later batches shrink so the device's view
                // never falls a lap behind, and if the ring fills the overflow
                // path reports it, G-HEAD-FAIL.
                emit(dev, ExecEvent::HeadWriteFailed { core: c, nq: nq_id, kind: e.kind() });
            }
        }
        if let Some(ring) = nq.ring_mut(c, nq_id) {
            *ring = cursor;
        }
        result
    }

    /// `match_entry_to_substate`: one record against `(core, engine)`.
    pub(super) fn match_entry<D: ExecDevice + ?Sized>(
        &mut self,
        dev: &mut D,
        core: usize,
        engine: Engine,
        nq_id: u8,
        bytes: &[u8; ENTRY_SIZE],
    ) -> Result<(), NrtError> {
        let c = core as u8;
        let eng = engine.index();
        let raw = RawEntry::from_array(bytes);
        let n = Notification::parse(raw);
        let ts = n.device_ts;
        let sub = self.substate(core, eng).unwrap_or(TpbEngState::Complete);
        match n.subtype {
            Subtype::Start | Subtype::End | Subtype::CcStart | Subtype::CcEnd if n.nq_tag != nq_id => {
                // The lane is chosen by the ring, not the tag, seed §3 QUIRK: report only.
                emit(dev, ExecEvent::NqTagMismatch { core: c, engine, tag: n.nq_tag, expected: nq_id });
            }
            _ => {}
        }
        match n.subtype {
            Subtype::Start => {
                if sub != TpbEngState::StartPending {
                    return Err(if self.probe_overflow(dev, core, ProbeReason::OutOfOrderStart, engine.into()) {
                        self.set_fatal(core, fatal::OVERFLOW);
                        NrtError::failed(NrtStatus::ExecSwNqOverflow)
                    } else {
                        NrtError::FAILURE
                    });
                }
                // libnrt also records an NC_TIMESTAMP_SYNC trace here; we do not
                // (a per-START event would tax the sweep, G-TRACE-SYNC).
                self.keep_earliest(core, ts_slot::start(eng), ts);
                self.set_substate(core, eng, TpbEngState::EndPending);
            }
            Subtype::End => {
                if sub != TpbEngState::EndPending {
                    return Err(if self.probe_overflow(dev, core, ProbeReason::OutOfOrderEnd, engine.into()) {
                        self.set_fatal(core, fatal::END_OVERFLOW);
                        NrtError::failed(NrtStatus::ExecSwNqOverflow)
                    } else {
                        NrtError::FAILURE
                    });
                }
                self.keep_latest(core, ts_slot::end(eng), ts);
                self.set_substate(core, eng, TpbEngState::Complete);
            }
            Subtype::CcStart => {
                if self.keep_earliest(core, ts_slot::CC_START, ts) {
                    self.set_slot_engine(core, ts_slot::CC_START, eng);
                }
            }
            Subtype::CcEnd => {
                if self.keep_latest(core, ts_slot::CC_END, ts) {
                    self.set_slot_engine(core, ts_slot::CC_END, eng);
                }
            }
            Subtype::Custom => {
                let mut n = n;
                if self.cfg.arch.cayman_fixup_applies(eng) {
                    // The cayman engine emits custom records with a stale NQ-id,
                    // seed §2 QUIRK: data[3] = (data[3] & 0xE0) | 0xE.
                    let mut fixed = *raw;
                    fixed.set_nq_tag(CAYMAN_CUSTOM_NQ_TAG);
                    n.nq_tag = fixed.nq_tag();
                }
                match n.custom() {
                    CustomKind::TensorCompletion { var_id } => {
                        if self.keep_latest(core, ts_slot::TENSOR, ts) {
                            self.set_slot_engine(core, ts_slot::TENSOR, eng);
                        }
                        match dev.tensor_completed(c, var_id) {
                            Some((output, count)) => {
                                emit(dev, ExecEvent::TensorCompleted { core: c, var_id, output, count })
                            }
                            None => emit(dev, ExecEvent::UnknownTensor { core: c, var_id }),
                        }
                    }
                    CustomKind::Diagnostic { sub_id, payload } => {
                        emit(dev, ExecEvent::CustomNotification { core: c, engine, sub_id, payload, tag: n.nq_tag });
                    }
                    CustomKind::Invalid { sub_id } => {
                        emit(dev, ExecEvent::BadCustomSubId { core: c, engine, sub_id });
                        return Err(NrtError::FAILURE);
                    }
                }
            }
            Subtype::Unexpected(subtype) => {
                emit(dev, ExecEvent::UnexpectedNotification { core: c, engine, debug_hint: n.debug_hint, subtype });
                return Err(NrtError::FAILURE);
            }
        }
        Ok(())
    }

    /// `exec_check_intc_sw_notif_queue_overflow`: read INTC cause line 61 of the
    /// core's error-trigger block and test bit 29. A failed read counts as "no
    /// overflow" (the generic status follows) and is reported. `engines`:
    /// those the probe is about, for its event.
    pub(super) fn probe_overflow<D: ExecDevice + ?Sized>(
        &mut self,
        dev: &mut D,
        core: usize,
        reason: ProbeReason,
        engines: EngineSet,
    ) -> bool {
        let c = core as u8;
        let tpb = self.cfg.tpb_idx.get(core).copied().unwrap_or(c);
        match dev.read_cause(c, errtrig_block_of_tpb(tpb), super::INTC_SW_NQ_OVERFLOW_LINE) {
            Ok(cause) => {
                let overflow = IntcCauseLine61::from_bits(cause).sw_nq_overflow();
                emit(dev, ExecEvent::OverflowProbe { core: c, reason, cause, overflow, engines });
                overflow
            }
            Err(e) => {
                emit(dev, ExecEvent::IntcReadFailed { core: c, kind: e.kind() });
                false
            }
        }
    }

    fn set_substate(&mut self, core: usize, eng: usize, s: TpbEngState) {
        if let Some(slot) = self.tpb_exec_state.get_mut(core).and_then(|c| c.get_mut(eng)) {
            // Monotone by construction: callers only move forward.
            debug_assert!(*slot <= s);
            *slot = s;
        }
    }

    /// Remember which engine's ring set the kept value of a CC or tensor slot,
    /// so FINALIZE rescales it with that engine's calibration, G-CC-CAL.
    fn set_slot_engine(&mut self, core: usize, slot: usize, eng: usize) {
        if let Some(e) = self.slot_engine.get_mut(core).and_then(|s| s.get_mut(slot.wrapping_sub(ts_slot::CC_START))) {
            *e = eng as u8;
        }
    }

    /// Keep the earliest timestamp: `if slot - 1 >= ts: slot = ts` (an empty slot,
    /// 0, wraps to `u64::MAX` and always takes the first value).
    fn keep_earliest(&mut self, core: usize, slot: usize, ts: u64) -> bool {
        if let Some(v) = self.vcore_notif_ts.get_mut(core).and_then(|c| c.get_mut(slot)) {
            if v.wrapping_sub(1) >= ts {
                *v = ts;
                return true;
            }
        }
        false
    }

    /// Keep the latest timestamp: `if slot < ts || slot == 0: slot = ts`.
    fn keep_latest(&mut self, core: usize, slot: usize, ts: u64) -> bool {
        if let Some(v) = self.vcore_notif_ts.get_mut(core).and_then(|c| c.get_mut(slot)) {
            if *v < ts || *v == 0 {
                *v = ts;
                return true;
            }
        }
        false
    }
}
