//! What each engine does once kicked off: its program of records, with device
//! timestamps, and the faults applied on top.
//!
//! A healthy program for engine `e` of core `c` kicked off at `t0`:
//!
//! ```text
//!   START  at t0 + 2 us + jitter + e us
//!   (SP only) CC_START at START + 5 us, CC_END at END - 5 us
//!   scenario extras: tensor completions (custom sub-id 7), diagnostics
//!   END    at START + 60 us + jitter + 20e us
//! ```
//!
//! Jitter comes from the run's seed, one stream per core, so a run is a function
//! of its seed. Error-ring records are written at `t0 + 40 us` and a bit, before any
//! END, so the error sweep at FINALIZE always finds them.
//!
//! Device timestamps come from a per-engine device clock that runs fast:
//! [`calibration`] gives each engine an actual increment of 1250 + 10e + 5c units per
//! 1000 expected nanoseconds, so core's rescale (`(ts - init) * expected /
//! actual`) has real work to do and the printed microseconds are CPU time.

use nrt_core::arch::{Arch, ENGINES_PER_CORE};
use nrt_core::nq::INFER_STATUS_NQS;
use nrt_core::nq::{Engine, ErrorEntry, InferErrorSubtype, RawEntry, Subtype, SyncPoint, ERROR_NQ};

use crate::fault::{Fault, RecordKind};
use crate::rng::Rng;

/// The CPU time (ns on the simulator's clock) of the device clock's calibration point.
pub const CAL_NS: u64 = 0;

/// Expected device-clock increment, ns per period.
pub const EXPECTED_INC: u32 = nrt_abi::sim::CAL_EXPECTED_INC;

/// The tag a cayman engine index 2 stamps on its custom records (a stale NQ-id the
/// runtime's fixup overwrites with 0xE; completion-engine seed §2 QUIRK, G-CAYMAN-ENG).
pub const CAYMAN_STALE_CUSTOM_TAG: u8 = 0x1B;

pub use nrt_abi::sim::calibration;

/// The sync point of a core: the calibration instant paired with its CPU time.
pub fn sync_point(_core: u8) -> SyncPoint {
    SyncPoint { dev_us: 0, cpu_us: CAL_NS / 1000 }
}

/// The device timestamp engine `(core, eng)` stamps at CPU time `t_ns`.
pub fn device_ts(core: u8, eng: usize, t_ns: u64) -> u64 {
    let cal = calibration(core, eng);
    let dt = u128::from(t_ns.saturating_sub(CAL_NS));
    let units = dt * u128::from(cal.actual_timestamp_inc) / u128::from(cal.expected_timestamp_inc);
    cal.init_timestamp.saturating_add(u64::try_from(units).unwrap_or(u64::MAX))
}

/// Scenario-only additions to a healthy program (not faults).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Extra {
    /// Tensor completions (custom sub-id 7) naming these var ids, in order.
    TensorStream {
        /// Physical core.
        core: u8,
        /// Engine.
        engine: Engine,
        /// Var ids, in order.
        var_ids: Vec<u16>,
    },
    /// One diagnostic custom record (sub-id other than 7).
    Diagnostic {
        /// Physical core.
        core: u8,
        /// Engine.
        engine: Engine,
        /// Sub-id.
        sub_id: u16,
        /// `u16 @0`.
        payload: u16,
    },
}

/// What a scheduled record is, for the device log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Label {
    /// An INFER_STATUS record of this subtype name on an engine.
    Infer(Engine, &'static str),
    /// An error-ring record of this class name.
    Error(&'static str),
}

/// What the device does with a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// Write it (or drop it if the ring is full).
    Write,
    /// Drop it (a fault); with `overflow`, raise INTC bit 29.
    Drop {
        /// Raise INTC bit 29.
        overflow: bool,
    },
}

/// One scheduled device action.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Write a record into ring `(core, nq)`.
    Record {
        /// Physical core.
        core: u8,
        /// Runtime NQ index.
        nq: u8,
        /// The 16 bytes (the phase is stamped at write).
        entry: [u8; 16],
        /// Write or drop.
        fate: Fate,
        /// What it is.
        label: Label,
    },
    /// Raise INTC cause bit 29 on the core (a lost record elsewhere).
    RaiseOverflow {
        /// Physical core.
        core: u8,
    },
    /// The collectives barrier of the core clears.
    BarrierClear {
        /// Physical core.
        core: u8,
    },
    /// An HBM uncorrectable error on the core, with its status (1201 or 1205).
    Hbm {
        /// Physical core.
        core: u8,
        /// The status the probe reports.
        status: u32,
    },
    /// The DMA engine processes the available descriptors of a queue.
    DmaRun {
        /// The UDMA queue.
        queue: usize,
    },
}

/// One program item: when, in which order at equal times, what.
#[derive(Clone, Debug)]
pub struct Item {
    /// CPU time, ns.
    pub t: u64,
    /// Order among items of equal `t` (lower first; END records are 1).
    pub prio: u8,
    kind: Kind,
    /// The action.
    pub action: Action,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Start(usize),
    End(usize),
    Other,
}

/// What a device needs to build programs.
#[derive(Clone, Debug)]
pub struct ProgramSpec {
    /// Generation.
    pub arch: Arch,
    /// Entries per NQ ring.
    pub ring_entries: u32,
    /// The run's seed.
    pub seed: u64,
    /// Faults.
    pub faults: Vec<Fault>,
    /// Scenario extras.
    pub extras: Vec<Extra>,
}

fn infer(core: u8, eng: usize, subtype: u16, sub_id: u16, payload: u16, hint: u8, t: u64) -> [u8; 16] {
    let nq = INFER_STATUS_NQS.get(eng).copied().unwrap_or(0);
    let mut e = RawEntry::new(subtype, nq, hint, sub_id, device_ts(core, eng, t));
    e.set_isa_line_lo(payload);
    e.to_array()
}

/// A custom record of engine `eng`, with the stale NQ-id tag the engine stamps
/// where the runtime's cayman fixup overwrites it.
fn custom_entry(arch: Arch, core: u8, eng: usize, sub_id: u16, payload: u16, t: u64) -> [u8; 16] {
    let entry = infer(core, eng, Subtype::CUSTOM, sub_id, payload, 0, t);
    if !arch.cayman_fixup_applies(eng) {
        return entry;
    }
    let mut raw = *RawEntry::from_array(&entry);
    raw.set_nq_tag(CAYMAN_STALE_CUSTOM_TAG);
    raw.to_array()
}

fn nq_of(eng: usize) -> u8 {
    INFER_STATUS_NQS.get(eng).copied().unwrap_or(0)
}

/// Build the program of every engine of `core`, kicked off at `t0`, with the faults
/// and extras that concern it, sorted by time.
pub fn core_program(spec: &ProgramSpec, core: u8, t0: u64) -> Vec<Item> {
    let mut rng = Rng::stream(spec.seed, u64::from(core));
    let mut items: Vec<Item> = Vec::new();
    let mut window = [(0u64, 0u64); ENGINES_PER_CORE];
    for (eng, engine) in Engine::ALL.iter().copied().enumerate() {
        let e = eng as u64;
        let start = t0 + 2_000 + rng.range(0, 8_000) + e * 1_000;
        let end = start + 60_000 + rng.range(0, 240_000) + e * 20_000;
        if let Some(w) = window.get_mut(eng) {
            *w = (start, end);
        }
        let rec = |t, sub, label| Item {
            t,
            prio: 0,
            kind: Kind::Other,
            action: Action::Record {
                core,
                nq: nq_of(eng),
                entry: infer(core, eng, sub, 0, 0, 0, t),
                fate: Fate::Write,
                label: Label::Infer(engine, label),
            },
        };
        items.push(Item { kind: Kind::Start(eng), ..rec(start, Subtype::START, "START") });
        if engine == Engine::Sp {
            items.push(rec(start + 5_000, Subtype::CC_START, "CC_START"));
            items.push(rec(end - 5_000, Subtype::CC_END, "CC_END"));
        }
        items.push(Item { prio: 1, kind: Kind::End(eng), ..rec(end, Subtype::END, "END") });
    }
    let custom = |eng: usize, t: u64, sub_id: u16, payload: u16, label: &'static str| {
        let entry = custom_entry(spec.arch, core, eng, sub_id, payload, t);
        let engine = Engine::from_index(eng).unwrap_or(Engine::Pe);
        Action::Record { core, nq: nq_of(eng), entry, fate: Fate::Write, label: Label::Infer(engine, label) }
    };
    for x in &spec.extras {
        match x {
            Extra::TensorStream { core: c, engine, var_ids } if *c == core => {
                let (s, e) = window.get(engine.index()).copied().unwrap_or_default();
                let n = var_ids.len() as u64 + 1;
                for (i, v) in var_ids.iter().enumerate() {
                    let t = s + (e - s) * (i as u64 + 1) / n;
                    let action = custom(engine.index(), t, nrt_core::nq::entry::SUB_ID_TENSOR_COMPLETION, *v, "TENSOR");
                    items.push(Item { t, prio: 0, kind: Kind::Other, action });
                }
            }
            Extra::Diagnostic { core: c, engine, sub_id, payload } if *c == core => {
                let (s, e) = window.get(engine.index()).copied().unwrap_or_default();
                let t = s + (e - s) / 3;
                let action = custom(engine.index(), t, *sub_id, *payload, "CUSTOM");
                items.push(Item { t, prio: 0, kind: Kind::Other, action });
            }
            _ => {}
        }
    }
    for (i, f) in spec.faults.iter().enumerate() {
        if f.core() == Some(core) {
            apply_fault(spec, core, t0, &window, f, i as u64, &mut items);
        }
    }
    items.sort_by_key(|it| (it.t, it.prio));
    items
}

fn error_record(core: u8, sub: InferErrorSubtype, metadata: u16, t: u64) -> Action {
    let entry = ErrorEntry::new(sub.value(), core, metadata, t.saturating_sub(CAL_NS)).to_array();
    Action::Record { core, nq: ERROR_NQ, entry, fate: Fate::Write, label: Label::Error(sub.class().name()) }
}

fn apply_fault(
    spec: &ProgramSpec,
    core: u8,
    t0: u64,
    window: &[(u64, u64); ENGINES_PER_CORE],
    f: &Fault,
    index: u64,
    items: &mut Vec<Item>,
) {
    let mut rng = Rng::stream(spec.seed ^ 0xFA17, (u64::from(core) << 32) | index);
    let err_t = t0 + 40_000 + rng.range(0, 5_000);
    let win = |engine: Engine| window.get(engine.index()).copied().unwrap_or_default();
    let other = |t, action| Item { t, prio: 0, kind: Kind::Other, action };
    match *f {
        Fault::Hang { engine, .. } => items.retain(|it| it.kind != Kind::End(engine.index())),
        Fault::Drop { engine, record, overflow, .. } => {
            let want = match record {
                RecordKind::Start => Kind::Start(engine.index()),
                RecordKind::End => Kind::End(engine.index()),
            };
            for it in items.iter_mut().filter(|it| it.kind == want) {
                if let Action::Record { fate, .. } = &mut it.action {
                    *fate = Fate::Drop { overflow };
                }
            }
        }
        Fault::DupStart { engine, overflow, .. } => {
            let (s, _) = win(engine);
            if overflow {
                items.push(other(s + 1_000, Action::RaiseOverflow { core }));
            }
            let entry = infer(core, engine.index(), Subtype::START, 0, 0, 0, s + 1_000);
            let label = Label::Infer(engine, "START (duplicate)");
            let action = Action::Record { core, nq: nq_of(engine.index()), entry, fate: Fate::Write, label };
            items.push(other(s + 1_000, action));
        }
        Fault::Unexpected { engine, subtype, .. } => {
            let (s, e) = win(engine);
            let t = s + (e - s) / 2;
            let entry = infer(core, engine.index(), subtype, 0, 0, 3, t);
            let label = Label::Infer(engine, "UNEXPECTED");
            items.push(other(t, Action::Record { core, nq: nq_of(engine.index()), entry, fate: Fate::Write, label }));
        }
        Fault::Nan { .. } => items.push(other(err_t, error_record(core, InferErrorSubtype::Numerical, 0, err_t))),
        Fault::Transient { .. } => items.push(other(err_t, error_record(core, InferErrorSubtype::Transient, 0, err_t))),
        Fault::SeqError { .. } => {
            let code = 0x0100 + rng.range(0, 0x100) as u16;
            items.push(other(err_t, error_record(core, InferErrorSubtype::SwSequencer, code, err_t)))
        }
        Fault::EccUe { .. } => {
            let syndrome = rng.range(1, 0x1_0000) as u16;
            items.push(other(err_t, error_record(core, InferErrorSubtype::EccUncorrectable, syndrome, err_t)))
        }
        Fault::EccCe { .. } => {
            let syndrome = rng.range(1, 0x1_0000) as u16;
            items.push(other(err_t, error_record(core, InferErrorSubtype::EccCorrectable, syndrome, err_t)))
        }
        Fault::HbmUe { .. } | Fault::HbmRepairable { .. } => {
            let status = if matches!(f, Fault::HbmUe { .. }) { 1201 } else { 1205 };
            items.retain(|it| !matches!(it.kind, Kind::End(_)));
            items.push(other(t0 + 30_000, Action::Hbm { core, status }));
        }
        Fault::Overflow { engine, .. } => {
            // More than the ring holds, in the same device instant as the END:
            // the device finds no room and drops the rest, the END among them.
            let (_, e) = win(engine);
            let burst = spec.ring_entries.saturating_mul(2).saturating_add(2);
            for i in 0..burst {
                let payload = (i & 0xFFFF) as u16;
                let entry = custom_entry(spec.arch, core, engine.index(), 0, payload, e);
                let label = Label::Infer(engine, "CUSTOM (burst)");
                items.push(other(
                    e,
                    Action::Record { core, nq: nq_of(engine.index()), entry, fate: Fate::Write, label },
                ));
            }
        }
        Fault::Corrupt { engine, count, .. } => {
            let (_, e) = win(engine);
            for _ in 0..count {
                let t = rng.range(t0, e);
                let entry = rng.bytes16();
                let label = Label::Infer(engine, "CORRUPT");
                items.push(other(
                    t,
                    Action::Record { core, nq: nq_of(engine.index()), entry, fate: Fate::Write, label },
                ));
            }
        }
        // Host-side or device-wide: applied by the device at kickoff / construction.
        Fault::BarrierDelay { .. } | Fault::BarrierFail { .. } | Fault::NetproxyFail { .. } => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(faults: Vec<Fault>) -> ProgramSpec {
        ProgramSpec { arch: Arch::Sunda, ring_entries: 64, seed: 3, faults, extras: vec![] }
    }

    #[test]
    fn healthy_program_has_start_before_end_and_errors_before_any_end() {
        let p = core_program(&spec(vec![Fault::Nan { core: 0 }]), 0, 1_000);
        let first_end = p.iter().filter(|i| i.kind != Kind::Other && matches!(i.kind, Kind::End(_))).map(|i| i.t).min();
        let err = p.iter().find(|i| matches!(i.action, Action::Record { nq: ERROR_NQ, .. })).map(|i| i.t);
        assert!(err < first_end);
        assert_eq!(p.iter().filter(|i| matches!(i.kind, Kind::Start(_))).count(), 5);
        assert!(p.windows(2).all(|w| (w[0].t, w[0].prio) <= (w[1].t, w[1].prio)));
    }

    #[test]
    fn device_clock_rescales_back_to_cpu_time() {
        for eng in 0..5 {
            let cal = calibration(1, eng);
            let ts = device_ts(1, eng, 123_456_000);
            let ns =
                (ts - cal.init_timestamp) * u64::from(cal.expected_timestamp_inc) / u64::from(cal.actual_timestamp_inc);
            assert!(ns.abs_diff(123_456_000) <= 1, "{ns}");
            assert_ne!(cal.actual_timestamp_inc, cal.expected_timestamp_inc);
        }
    }

    #[test]
    fn overflow_burst_precedes_the_end() {
        let p = core_program(&spec(vec![Fault::Overflow { core: 0, engine: Engine::Pool }]), 0, 0);
        let end = p.iter().position(|i| i.kind == Kind::End(2)).unwrap();
        let t = p[end].t;
        let burst = p.iter().filter(|i| i.t == t && i.kind == Kind::Other).count();
        assert_eq!(burst, 130);
        assert!(p[..end].iter().filter(|i| i.t == t).count() == 130);
    }
}
