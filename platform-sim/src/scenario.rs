//! The named scenarios: a healthy run plus faults, each with the status the seed
//! (or `docs/spec-gaps.md` where the seed is silent) says it must end with, the
//! one-step return code, and a check of the evidence (events, flags, counters).
//!
//! Return codes follow the seed's FINALIZE (G-RET0): a harvest whose engines all
//! completed returns 0 even when the error sweep set a status (NaN: 0 with 1003);
//! a faulted harvest (timeout, overflow, matcher fault, proxy failure) returns 2.

use nrt_core::arch::Arch;
use nrt_core::event::Event;
use nrt_core::exec::TpbEngState;
use nrt_core::exec::{ExecEvent, ProbeReason};
use nrt_core::nq::{Engine, ErrorClass};
use nrt_core::trace::Level;
use nrt_core::NrtStatus;

use crate::fault::{Fault, RecordKind};
use crate::program::Extra;
use crate::report::{Row, RowError};
use crate::run::{RunReport, SimConfig};

/// One named scenario.
pub struct Scenario {
    /// Short kebab-case name.
    pub name: &'static str,
    /// One line: what happens and why the status follows.
    pub description: &'static str,
    /// The status it must end with.
    pub expected: NrtStatus,
    /// The one-step return code it must end with (0 or 2).
    pub expected_rc: u8,
    configure: fn(&mut SimConfig),
    check: fn(&RunReport) -> Result<(), String>,
}

impl core::fmt::Debug for Scenario {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Scenario").field("name", &self.name).field("expected", &self.expected).finish()
    }
}

impl Scenario {
    /// The scenario as a host labels a run with it (`nrt_abi::sim`'s table,
    /// which `nrtctl run --scenario` uses without the simulator).
    pub fn label(&self) -> Option<&'static nrt_abi::sim::ScenarioLabel> {
        nrt_abi::sim::ScenarioLabel::find(self.name)
    }

    /// The scenario's configuration (defaults: sunda, 2 cores, 5 s, seed 0, 64-entry rings).
    pub fn config(&self) -> SimConfig {
        let mut c = SimConfig::default();
        (self.configure)(&mut c);
        c
    }

    /// Apply the scenario on top of `base` (its faults and extras are added; its
    /// arch, cores and ring size replace the base's defaults).
    pub fn apply(&self, base: &mut SimConfig) {
        (self.configure)(base);
    }

    /// Whether a run of this scenario shows what it must: the status, the return
    /// code, and the scenario's evidence, checked in that order.
    pub fn evaluate(&self, r: &RunReport) -> Result<(), Mismatch> {
        self.check_status(r.status, r.return_code())?;
        (self.check)(r).map_err(Mismatch::Evidence)
    }

    /// Whether a run that ended with `status` and return code `rc` ended as this
    /// scenario must, the status checked first (the evidence aside: a run whose
    /// report is not at hand, such as a command's under the driver model).
    pub fn check_status(&self, status: NrtStatus, rc: u8) -> Result<(), Mismatch> {
        if status != self.expected {
            return Err(Mismatch::Status { got: status, expected: self.expected });
        }
        if rc != self.expected_rc {
            return Err(Mismatch::ReturnCode { got: rc, expected: self.expected_rc });
        }
        Ok(())
    }

    /// This scenario's row of the `--scenario all` table: what the run gave and
    /// the verdict.
    pub fn row(&self, got: Result<(NrtStatus, u8), RowError>, verdict: Result<(), RowError>) -> Row {
        Row { name: self.name, expected: self.expected, expected_rc: self.expected_rc, got, verdict }
    }

    /// The row of a run of this scenario that could not be done (`e` says why).
    pub fn failed_row(&self, e: impl Into<RowError>) -> Row {
        self.row(Err(e.into()), Err("the run failed".into()))
    }
}

/// How a run differs from what its scenario must show ([`Scenario::evaluate`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mismatch {
    /// The run ended with another status. Its text: `status <code> <name>,
    /// expected <code>`.
    Status {
        /// The run's status.
        got: NrtStatus,
        /// The scenario's.
        expected: NrtStatus,
    },
    /// The status matched, the one-step return code did not. Its text:
    /// `return code <got>, expected <expected>`.
    ReturnCode {
        /// The run's return code.
        got: u8,
        /// The scenario's.
        expected: u8,
    },
    /// Status and return code matched; the evidence the scenario looks for is
    /// missing (its text: what was looked for, `every engine COMPLETE`, `an
    /// overflow probe (Timeout) reading bit 29 = true`, ...).
    Evidence(String),
}

impl core::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Mismatch::Status { got, expected } => {
                write!(f, "status {} {}, expected {}", got.code(), got.name(), expected.code())
            }
            Mismatch::ReturnCode { got, expected } => write!(f, "return code {got}, expected {expected}"),
            Mismatch::Evidence(what) => f.write_str(what),
        }
    }
}

impl std::error::Error for Mismatch {}

fn need(ok: bool, what: &str) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(what.to_string())
    }
}

fn count(r: &RunReport, kind: &str) -> usize {
    r.events_of(kind).count()
}

fn all_complete(r: &RunReport) -> bool {
    r.cores.iter().all(|c| c.engines.iter().all(|e| e.state == TpbEngState::Complete))
}

fn healthy(r: &RunReport) -> Result<(), String> {
    need(all_complete(r), "every engine COMPLETE")?;
    need(r.staging.as_ref().is_none_or(|s| s.copy_verified), "the staged copy verified")?;
    need(r.events.iter().all(|e| e.level() < Level::Warn), "no warnings")
}

fn probe(r: &RunReport, reason: ProbeReason, overflow: bool) -> Result<(), String> {
    let found = r.events.iter().any(
        |e| matches!(e, Event::Exec(ExecEvent::OverflowProbe { reason: got, overflow: o, .. }) if *got == reason && *o == overflow),
    );
    need(found, &format!("an overflow probe ({reason:?}) reading bit 29 = {overflow}"))
}

/// The `corrupt` scenario's evidence: the failure is the matcher's, on the ring
/// that was corrupted (core 0, DVE), and on nothing else. Exactly one error-level
/// event, a matcher fault (an unexpected notification, or a custom record with an
/// unknown sub-id) naming core 0 and DVE; core 0 ends with `NRT_FAILURE`, core 1
/// untouched with `NRT_SUCCESS`.
fn corrupt_on_core0_dve(r: &RunReport) -> Result<(), String> {
    let errors: Vec<&Event> = r.events.iter().filter(|e| e.level() == Level::Error).collect();
    let on_dve = |e: &Event| {
        matches!(
            e,
            Event::Exec(ExecEvent::UnexpectedNotification { core: 0, engine: Engine::Dve, .. })
                | Event::Exec(ExecEvent::BadCustomSubId { core: 0, engine: Engine::Dve, .. })
        )
    };
    need(
        errors.len() == 1 && errors.iter().all(|e| on_dve(e)),
        "exactly one error event, a matcher fault on core 0 DVE's ring",
    )?;
    let rets: Vec<NrtStatus> = r.cores.iter().map(|c| c.exec_ret).collect();
    need(rets == [NrtStatus::Failure, NrtStatus::Success], "exec_rets: core 0 NRT_FAILURE, core 1 NRT_SUCCESS")
}

fn fatal(r: &RunReport, core: usize, flag: &str) -> Result<(), String> {
    need(
        r.cores.get(core).is_some_and(|c| c.fatal.contains(&flag)),
        &format!("exec_fatal_status {flag} on core {core}"),
    )
}

fn error_class(r: &RunReport, class: ErrorClass) -> Result<(), String> {
    need(
        r.events.iter().any(|e| matches!(e, Event::Exec(ExecEvent::ErrorRecord { class: c, .. }) if *c == class)),
        &format!("an error_record of class {}", class.name()),
    )
}

fn timed_out_at_budget(r: &RunReport) -> Result<(), String> {
    let at = r.events.iter().find_map(|e| match e {
        Event::Exec(ExecEvent::CoreTimeout { elapsed_ms, timeout_ms, .. }) => Some((*elapsed_ms, *timeout_ms)),
        _ => None,
    });
    match at {
        Some((e, t)) if e >= t && (r.config.threaded || e <= t + 1) => Ok(()),
        other => Err(format!("a core_timeout at the budget, got {other:?}")),
    }
}

const fn cfg_none(_: &mut SimConfig) {}

macro_rules! faults {
    ($($f:expr),* $(,)?) => {
        |c: &mut SimConfig| { $( c.faults.push($f); )* }
    };
}

/// Every named scenario, in the order `nrt-sim scenarios` lists them.
pub static SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "healthy-1core",
        description: "one core, five engines START and END: clean",
        expected: NrtStatus::Success,
        expected_rc: 0,
        configure: |c| c.cores = 1,
        check: healthy,
    },
    Scenario {
        name: "healthy-2core",
        description: "two cores, ten engines, a CC pair on SP: clean",
        expected: NrtStatus::Success,
        expected_rc: 0,
        configure: cfg_none,
        check: healthy,
    },
    Scenario {
        name: "hang",
        description: "core 0 DVE starts and never ends: INTC bit 29 clear at the timeout -> NRT_TIMEOUT",
        expected: NrtStatus::Timeout,
        expected_rc: 2,
        configure: faults![Fault::Hang { core: 0, engine: Engine::Dve }],
        check: |r| {
            timed_out_at_budget(r)?;
            probe(r, ProbeReason::Timeout, false)?;
            fatal(r, 0, "timeout")?;
            let dve = r.cores.first().and_then(|c| c.engines.get(Engine::Dve.index())).map(|e| e.state);
            need(dve == Some(TpbEngState::EndPending), "DVE END_PENDING")
        },
    },
    Scenario {
        name: "drop-end-overflow",
        description: "core 0 PE's END is dropped with INTC bit 29 raised: overflow at the timeout -> 1204",
        expected: NrtStatus::ExecSwNqOverflow,
        expected_rc: 2,
        configure: faults![Fault::Drop { core: 0, engine: Engine::Pe, record: RecordKind::End, overflow: true }],
        check: |r| {
            timed_out_at_budget(r)?;
            probe(r, ProbeReason::Timeout, true)?;
            fatal(r, 0, "overflow")
        },
    },
    Scenario {
        name: "drop-end",
        description: "core 1 SP's END is dropped without the overflow bit: indistinguishable from a hang -> 5",
        expected: NrtStatus::Timeout,
        expected_rc: 2,
        configure: faults![Fault::Drop { core: 1, engine: Engine::Sp, record: RecordKind::End, overflow: false }],
        check: |r| {
            timed_out_at_budget(r)?;
            probe(r, ProbeReason::Timeout, false)
        },
    },
    Scenario {
        name: "ring-overflow",
        description:
            "4-entry rings; core 0 POOL bursts 10 records with its END: the device drops, raises bit 29 -> 1204",
        expected: NrtStatus::ExecSwNqOverflow,
        expected_rc: 2,
        configure: |c| {
            c.ring_entries = 4;
            c.faults.push(Fault::Overflow { core: 0, engine: Engine::Pool });
        },
        check: |r| {
            need(r.device.ring_full_drops > 0, "the device dropped records on a full ring")?;
            probe(r, ProbeReason::Timeout, true)?;
            fatal(r, 0, "overflow")
        },
    },
    Scenario {
        name: "dup-start",
        description: "core 1 ACT writes START twice, no overflow bit: out-of-order START -> NRT_FAILURE",
        expected: NrtStatus::Failure,
        expected_rc: 2,
        configure: faults![Fault::DupStart { core: 1, engine: Engine::Act, overflow: false }],
        check: |r| probe(r, ProbeReason::OutOfOrderStart, false),
    },
    Scenario {
        name: "dup-start-overflow",
        description: "as dup-start, with INTC bit 29 raised first: the duplicate is overflow evidence -> 1204",
        expected: NrtStatus::ExecSwNqOverflow,
        expected_rc: 2,
        configure: faults![Fault::DupStart { core: 0, engine: Engine::Pe, overflow: true }],
        check: |r| {
            probe(r, ProbeReason::OutOfOrderStart, true)?;
            fatal(r, 0, "overflow")
        },
    },
    Scenario {
        name: "drop-start",
        description: "core 0 SP's START is dropped: its END arrives out of order, bit 29 clear -> NRT_FAILURE",
        expected: NrtStatus::Failure,
        expected_rc: 2,
        configure: faults![Fault::Drop { core: 0, engine: Engine::Sp, record: RecordKind::Start, overflow: false }],
        check: |r| probe(r, ProbeReason::OutOfOrderEnd, false),
    },
    Scenario {
        name: "nan",
        description: "core 0 reports a NaN on its error ring: clean harvest (return 0), status 1003",
        expected: NrtStatus::ExecCompletedWithNumErr,
        expected_rc: 0,
        configure: faults![Fault::Nan { core: 0 }],
        check: |r| {
            error_class(r, ErrorClass::Numerical)?;
            need(all_complete(r), "every engine COMPLETE")
        },
    },
    Scenario {
        name: "transient",
        description: "a TRANSIENT error record on core 0 -> 1004",
        expected: NrtStatus::ExecCompletedWithErr,
        expected_rc: 0,
        configure: faults![Fault::Transient { core: 0 }],
        check: |r| error_class(r, ErrorClass::Transient),
    },
    Scenario {
        name: "seq-error",
        description: "a SW_SEQUENCER error record on core 1, with its code -> 1004",
        expected: NrtStatus::ExecCompletedWithErr,
        expected_rc: 0,
        configure: faults![Fault::SeqError { core: 1 }],
        check: |r| need(count(r, "sequencer_error") == 1, "one sequencer_error event"),
    },
    Scenario {
        name: "ecc-ue",
        description: "an uncorrectable ECC record on core 0 after a clean run -> 1202 (return 0)",
        expected: NrtStatus::ExecHwErrNcUe,
        expected_rc: 0,
        configure: faults![Fault::EccUe { core: 0 }],
        check: |r| need(count(r, "uncorrectable_ecc") == 1, "one uncorrectable_ecc event"),
    },
    Scenario {
        name: "ecc-ce",
        description: "a correctable ECC record on core 0: an event, status unchanged -> 0",
        expected: NrtStatus::Success,
        expected_rc: 0,
        configure: faults![Fault::EccCe { core: 0 }],
        check: |r| need(count(r, "correctable_ecc") == 1, "one correctable_ecc event"),
    },
    Scenario {
        name: "core1-nan",
        description: "core 0 healthy, core 1 NaN: priority reconciles the cores -> 1003",
        expected: NrtStatus::ExecCompletedWithNumErr,
        expected_rc: 0,
        configure: faults![Fault::Nan { core: 1 }],
        check: |r| {
            let rets: Vec<u32> = r.cores.iter().map(|c| c.exec_ret.code()).collect();
            need(rets == [0, 1003], "exec_rets [0, 1003]")
        },
    },
    Scenario {
        name: "barrier-300s",
        description: "the collectives barrier clears after 300 s: warnings at 120 s and 240 s, never fatal -> 0",
        expected: NrtStatus::Success,
        expected_rc: 0,
        configure: faults![Fault::BarrierDelay { secs: 300 }],
        check: |r| {
            let th: Vec<u32> = r
                .events
                .iter()
                .filter_map(|e| match e {
                    Event::Exec(ExecEvent::BarrierWait { threshold_s, .. }) => Some(*threshold_s),
                    _ => None,
                })
                .collect();
            need(th == [120, 240], "two barrier_wait warnings, at 120 s and 240 s")
        },
    },
    Scenario {
        name: "unexpected-subtype",
        description: "core 0 SP writes a record of subtype 9 mid-run: unexpected notification -> NRT_FAILURE",
        expected: NrtStatus::Failure,
        expected_rc: 2,
        configure: faults![Fault::Unexpected { core: 0, engine: Engine::Sp, subtype: 9 }],
        check: |r| {
            let ok =
                r.events.iter().any(|e| matches!(e, Event::Exec(ExecEvent::UnexpectedNotification { subtype: 9, .. })));
            need(ok, "an unexpected_notification of subtype 9")
        },
    },
    Scenario {
        name: "tensor-streaming",
        description: "core 0 ACT streams outputs (custom sub-id 7, var ids 100 101 100 102): waiters woken in order",
        expected: NrtStatus::Success,
        expected_rc: 0,
        configure: |c| {
            c.extras.push(Extra::TensorStream { core: 0, engine: Engine::Act, var_ids: vec![100, 101, 100, 102] })
        },
        check: |r| {
            need(r.wakes == [(0, 1), (1, 1), (0, 2), (2, 1)], "wakes out0#1 out1#1 out0#2 out2#1")?;
            need(count(r, "tensor_completed") == 4, "four tensor_completed events")
        },
    },
    Scenario {
        name: "cayman-fixup",
        description: "cayman; a custom record on engine index 2 (the binary's eng == 2, POOL in runtime order; \
                      the seed says DVE) carries a stale NQ-id: the fixup forces tag 0xE",
        expected: NrtStatus::Success,
        expected_rc: 0,
        configure: |c| {
            c.arch = Arch::Cayman;
            c.extras.push(Extra::Diagnostic { core: 0, engine: Engine::Pool, sub_id: 3, payload: 0x42 });
        },
        check: |r| {
            let ok = r.events.iter().any(|e| {
                matches!(
                    e,
                    Event::Exec(ExecEvent::CustomNotification { engine: Engine::Pool, tag: 0xE, sub_id: 3, .. })
                )
            });
            need(ok, "a custom_notification on POOL with NQ-id tag 0xE")
        },
    },
    Scenario {
        name: "corrupt",
        description: "8 random entries on core 0 DVE's ring: the first one read decides; a random subtype is \
                      unexpected -> NRT_FAILURE, never a panic",
        expected: NrtStatus::Failure,
        expected_rc: 2,
        configure: faults![Fault::Corrupt { core: 0, engine: Engine::Dve, count: 8 }],
        check: corrupt_on_core0_dve,
    },
    Scenario {
        name: "hbm-ue",
        description: "an unrepairable HBM UE stalls core 0: the timeout is reclassified by the HBM probe -> 1201",
        expected: NrtStatus::ExecHwErrHbmUe,
        expected_rc: 2,
        configure: faults![Fault::HbmUe { core: 0 }],
        check: |r| need(count(r, "hw_fault") == 1, "one hw_fault event"),
    },
    Scenario {
        name: "hbm-repairable",
        description: "a repairable HBM UE stalls core 1: reclassified at the timeout (COMPLETE-1) -> 1205",
        expected: NrtStatus::ExecHwErrRepairableHbmUe,
        expected_rc: 2,
        configure: faults![Fault::HbmRepairable { core: 1 }],
        check: |r| need(count(r, "hw_fault") == 1, "one hw_fault event"),
    },
    Scenario {
        name: "barrier-fail",
        description: "core 1's barrier proxy fails: exec_fatal_status[1][5], finalized at once -> 1200",
        expected: NrtStatus::ExecHwErrCollectives,
        expected_rc: 2,
        configure: faults![Fault::BarrierFail { core: 1 }],
        check: |r| fatal(r, 1, "barrier_proxy"),
    },
    Scenario {
        name: "netproxy-fail",
        description: "core 0's network proxy fails in WAIT_CORE: exec_fatal_status[0][4] -> 1206",
        expected: NrtStatus::NetworkProxyFailure,
        expected_rc: 2,
        configure: faults![Fault::NetproxyFail { core: 0 }],
        check: |r| fatal(r, 0, "network_proxy"),
    },
];

/// The scenario named `name`.
pub fn find(name: &str) -> Option<&'static Scenario> {
    SCENARIOS.iter().find(|s| s.name == name)
}

/// Scenarios whose run waits for the model's timeout (slow in threaded mode).
pub fn waits_for_timeout(s: &Scenario) -> bool {
    matches!(s.name, "hang" | "drop-end-overflow" | "drop-end" | "ring-overflow" | "hbm-ue" | "hbm-repairable")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `nrt_abi::sim::SCENARIO_LABELS` is this table as a host sees it: the
    /// same scenarios in the same order, each with the same description,
    /// expected status and return code, cores, ring entries and faults.
    #[test]
    fn the_labels_are_the_scenarios() {
        let labels = nrt_abi::sim::SCENARIO_LABELS;
        assert_eq!(
            labels.iter().map(|l| l.name).collect::<Vec<_>>(),
            SCENARIOS.iter().map(|s| s.name).collect::<Vec<_>>()
        );
        for (s, l) in SCENARIOS.iter().zip(labels) {
            let c = s.config();
            let faults: Vec<String> = c.faults.iter().map(|f| f.to_string()).collect();
            assert_eq!(
                (l.description, l.expected, l.expected_rc, l.cores, l.ring_entries),
                (s.description, s.expected, s.expected_rc, c.cores, c.ring_entries),
                "{}",
                s.name
            );
            assert_eq!(l.faults, faults, "{}", s.name);
            assert_eq!(s.label(), Some(l));
            for f in l.faults {
                assert_eq!(Fault::parse(f).map(|f| f.to_string()).as_deref(), Ok(*f), "canonical");
            }
        }
    }

    /// A run is judged by its status, then its return code, then its
    /// evidence; each refusal is its own variant, with the text the CLI and
    /// the `--scenario all` table print.
    #[test]
    fn a_mismatch_names_the_status_the_return_code_or_the_missing_evidence() {
        let healthy = find("healthy-1core").expect("the scenario");
        let r = crate::run::run(&healthy.config()).expect("a run");
        assert_eq!(healthy.evaluate(&r), Ok(()));

        let hang = find("hang").expect("the scenario");
        let e = hang.evaluate(&r).unwrap_err();
        assert_eq!(e, Mismatch::Status { got: NrtStatus::Success, expected: NrtStatus::Timeout });
        assert_eq!(e.to_string(), format!("status 0 NRT_SUCCESS, expected {}", NrtStatus::Timeout.code()));

        let mut wrong_rc = r.clone();
        wrong_rc.step = nrt_core::exec::Step::failed(NrtStatus::Failure);
        let e = healthy.evaluate(&wrong_rc).unwrap_err();
        assert_eq!(e, Mismatch::ReturnCode { got: 2, expected: 0 });
        assert_eq!(e.to_string(), "return code 2, expected 0");

        let mut pending = r;
        if let Some(engine) = pending.cores.first_mut().and_then(|c| c.engines.first_mut()) {
            engine.state = TpbEngState::EndPending;
        }
        let e = healthy.evaluate(&pending).unwrap_err();
        assert_eq!(e, Mismatch::Evidence("every engine COMPLETE".into()));
        assert_eq!(e.to_string(), "every engine COMPLETE");
    }
}
