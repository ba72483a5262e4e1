//! The report of one inference, [`RunReport`], as the text and JSON that
//! `nrt-sim run`, `nrtctl run` and `nrtctl harvest` print alike, and the
//! `--scenario all` table. Tools parse the `status:` and `one-step return:`
//! lines and the JSON's `status` and `return_code`.
//!
//! Both renderings are pure functions of the report: a deterministic run
//! renders byte for byte the same.

use std::fmt::Write as _;

use nrt_core::arch::Arch;
use nrt_core::event::Event;
use nrt_core::exec::{fatal, ts_slot, ExecRequest, Step, TpbEngState};
use nrt_core::nq::{Engine, EngineSet, ErrorClass};
use nrt_core::trace::Level;
use nrt_core::NrtStatus;
use serde_json::{json, Value};

/// The configuration of a run as its report prints it; `SimConfig::report_config` gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReportConfig {
    /// Generation.
    pub arch: Arch,
    /// Physical cores of the logical core.
    pub cores: u8,
    /// The model's timeout, seconds.
    pub timeout_s: u32,
    /// Seed of every random choice of the device.
    pub seed: u64,
    /// Entries per NQ ring.
    pub ring_entries: u32,
    /// The device ran on its own thread or process, with the real clock.
    pub threaded: bool,
    /// The injected faults, as canonical `--inject` specs.
    pub faults: Vec<String>,
    /// Where the report's cores are on a device, when known, to name them `nd0 nc1`.
    pub place: Option<Place>,
}

/// The device and its core that is the report's core 0; core `c` is the
/// device's core `first_core + c`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    /// The device index.
    pub device: u32,
    /// The device's core of the report's core 0.
    pub first_core: u8,
}

impl Place {
    /// `nd0 nc1`: the device's name of the report's core `core`.
    pub fn name(self, core: u8) -> String {
        format!("nd{} nc{}", self.device, u32::from(self.first_core) + u32::from(core))
    }
}

impl Default for ReportConfig {
    /// `nrt-sim run`'s defaults.
    fn default() -> Self {
        ReportConfig {
            arch: Arch::Sunda,
            cores: 2,
            timeout_s: 5,
            seed: 0,
            ring_entries: 64,
            threaded: false,
            faults: Vec::new(),
            place: None,
        }
    }
}

/// One line of the device log: when (CPU ns) and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Note {
    /// CPU time, ns.
    pub t_ns: u64,
    /// What happened.
    pub text: String,
}

/// Counters of what the device did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceStats {
    /// Records written into NQ rings.
    pub records_written: u64,
    /// Records dropped by a fault or a full ring.
    pub records_dropped: u64,
    /// Records dropped because a ring was full (the hardware overflow).
    pub ring_full_drops: u64,
    /// Descriptor pairs the DMA engine processed.
    pub dma_descriptors: u64,
}

/// What staging did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StagingReport {
    /// Descriptors built, lowered and rung in each direction, marker included.
    pub descriptors: u32,
    /// Depth of each ring.
    pub ring_depth: u32,
    /// Device addresses of the TX and RX rings.
    pub rings: (u64, u64),
    /// BAR0 offsets of the M2S and S2M tail-increment doorbells.
    pub doorbells: (u64, u64),
    /// Device address of the completion handle.
    pub handle: u64,
    /// Polls that read the sentinel before the marker arrived.
    pub handle_polls: Option<u64>,
    /// Bytes copied.
    pub copy_bytes: usize,
    /// The destination matched the source.
    pub copy_verified: bool,
    /// BAR0 offset of the host trigger written.
    pub host_trigger: u64,
}

/// One engine's outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EngineReport {
    /// The engine.
    pub engine: Engine,
    /// Its final substate.
    pub state: TpbEngState,
    /// START, CPU microseconds.
    pub start_us: Option<u64>,
    /// END, CPU microseconds.
    pub end_us: Option<u64>,
}

/// What became of a core's harvest: what its report line says it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CoreHarvest {
    /// Every engine wrote START and END: the core's time is its duration.
    Complete,
    /// The core's budget ran out with engines pending: a timeout, or an
    /// overflow found at it.
    TimedOut {
        /// The budget, ms.
        budget_ms: u64,
        /// Engines that never wrote START.
        no_start: EngineSet,
        /// Engines that started and never wrote END.
        no_end: EngineSet,
    },
    /// The harvest ended at a fault of this core before its engines all
    /// ended: its duration spans only the records seen.
    Faulted {
        /// Engines that never wrote START.
        no_start: EngineSet,
        /// Engines that started and never wrote END.
        no_end: EngineSet,
    },
    /// The harvest ended at another core's fault before this core's engines
    /// all ended: its `exec_ret` and duration say nothing of it.
    NotHarvested {
        /// Engines that never wrote START.
        no_start: EngineSet,
        /// Engines that started and never wrote END.
        no_end: EngineSet,
    },
}

impl CoreHarvest {
    /// What `req` left of `core`: complete, timed out, faulted or not harvested.
    pub fn of(req: &ExecRequest, core: usize) -> CoreHarvest {
        let no_start = req.engines_in(core, TpbEngState::StartPending);
        let no_end = req.engines_in(core, TpbEngState::EndPending);
        if no_start.is_empty() && no_end.is_empty() {
            CoreHarvest::Complete
        } else if req.timed_out(core) {
            CoreHarvest::TimedOut { budget_ms: req.timeout_ms(), no_start, no_end }
        } else if req.out_info().exec_rets.get(core).is_some_and(|s| !s.is_success()) {
            CoreHarvest::Faulted { no_start, no_end }
        } else {
            CoreHarvest::NotHarvested { no_start, no_end }
        }
    }

    /// The JSON name, `"not_harvested"`.
    pub const fn name(self) -> &'static str {
        match self {
            CoreHarvest::Complete => "complete",
            CoreHarvest::TimedOut { .. } => "timed_out",
            CoreHarvest::Faulted { .. } => "faulted",
            CoreHarvest::NotHarvested { .. } => "not_harvested",
        }
    }

    /// The engines that never wrote START and those that never wrote END.
    pub const fn pending(self) -> (EngineSet, EngineSet) {
        match self {
            CoreHarvest::Complete => (EngineSet::EMPTY, EngineSet::EMPTY),
            CoreHarvest::TimedOut { no_start, no_end, .. }
            | CoreHarvest::Faulted { no_start, no_end }
            | CoreHarvest::NotHarvested { no_start, no_end } => (no_start, no_end),
        }
    }
}

/// `started, never wrote END: DVE; never wrote START: SP`.
fn pending_text(no_start: EngineSet, no_end: EngineSet) -> String {
    let mut parts = Vec::new();
    if !no_end.is_empty() {
        parts.push(format!("started, never wrote END: {no_end}"));
    }
    if !no_start.is_empty() {
        parts.push(format!("never wrote START: {no_start}"));
    }
    parts.join("; ")
}

/// One core's outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoreReport {
    /// Physical core.
    pub core: u8,
    /// `exec_rets[core]`.
    pub exec_ret: NrtStatus,
    /// `tpb_duration[core]`, microseconds.
    pub duration_us: u64,
    /// What became of the core's harvest.
    pub harvest: CoreHarvest,
    /// The `exec_fatal_status` flags set, by name.
    pub fatal: Vec<&'static str>,
    /// The first error class of its error sweep.
    pub err: Option<ErrorClass>,
    /// The engines.
    pub engines: Vec<EngineReport>,
    /// The earliest CC_START and latest CC_END the harvest kept, CPU
    /// microseconds; `None` for no such record.
    pub cc_us: (Option<u64>, Option<u64>),
    /// The `LATENCY_TOTAL` sample the platform counted for this core's
    /// request, microseconds, G-NDS-LATENCY; [`core_reports`] leaves it `None`.
    pub total_latency_us: Option<u64>,
}

/// Everything a run produced.
#[derive(Clone, Debug)]
pub struct RunReport {
    /// The configuration run, as printed.
    pub config: ReportConfig,
    /// The request's status.
    pub status: NrtStatus,
    /// The one-step return code it ended with, 0 or 2.
    pub step: Step,
    /// Calls of `progress_one_step`.
    pub steps: u64,
    /// Harvest time, ns; virtual in deterministic mode.
    pub elapsed_ns: u64,
    /// The model's budget, ms.
    pub timeout_ms: u64,
    /// CPU time of the kickoff, us.
    pub kickoff_us: u64,
    /// What staging did; `None` without staging.
    pub staging: Option<StagingReport>,
    /// The shared-memory file of a device in another process; `None` for `run`.
    pub remote: Option<String>,
    /// Per core.
    pub cores: Vec<CoreReport>,
    /// The harvest's events, in order.
    pub events: Vec<Event>,
    /// The staging chain's events, in order.
    pub staging_events: Vec<Event>,
    /// Tensor waiters woken, `(output, count)`, in order.
    pub wakes: Vec<(u16, u32)>,
    /// The device log.
    pub notes: Vec<Note>,
    /// Device counters.
    pub device: DeviceStats,
    /// CPU microseconds of each poll pass the platform made; empty if unobserved.
    pub passes_us: Vec<u64>,
    /// CPU microseconds of each NQ HEAD write-back; empty if unobserved.
    pub head_writes_us: Vec<u64>,
}

impl RunReport {
    /// Events of a kind, in order.
    pub fn events_of<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a Event> + 'a {
        self.events.iter().filter(move |e| e.kind() == kind)
    }

    /// The one-step return code as the C integer.
    pub fn return_code(&self) -> u8 {
        self.step.code()
    }
}

/// The per-core and per-engine part of a [`RunReport`] of `req`.
pub fn core_reports(req: &ExecRequest, cores: u8) -> Vec<CoreReport> {
    let out = req.out_info();
    (0..usize::from(cores))
        .map(|c| CoreReport {
            core: c as u8,
            exec_ret: out.exec_rets.get(c).copied().unwrap_or(NrtStatus::Success),
            duration_us: out.tpb_duration_us.get(c).copied().unwrap_or(0),
            harvest: CoreHarvest::of(req, c),
            fatal: (1..fatal::COUNT)
                .filter(|i| req.fatal_flag(c, *i))
                .filter_map(|i| fatal::NAMES.get(i).copied())
                .collect(),
            err: out.err.get(c).copied().flatten(),
            engines: Engine::ALL
                .iter()
                .map(|e| {
                    let (start_us, end_us) = req.engine_times_us(c, e.index());
                    EngineReport {
                        engine: *e,
                        state: req.substate(c, e.index()).unwrap_or(TpbEngState::StartPending),
                        start_us,
                        end_us,
                    }
                })
                .collect(),
            cc_us: cc_times_us(req, c),
            total_latency_us: None,
        })
        .collect()
}

/// The CC_START and CC_END times of `core` in CPU microseconds once
/// finalized; `None` for a slot that never held a record, see
/// [`ExecRequest::ts_recorded`].
pub fn cc_times_us(req: &ExecRequest, core: usize) -> (Option<u64>, Option<u64>) {
    if !req.timestamps_are_cpu_us() {
        return (None, None);
    }
    let slot = |s| req.notif_ts(core, s).filter(|_| req.ts_recorded(core, s));
    (slot(ts_slot::CC_START), slot(ts_slot::CC_END))
}

/// Width of the timeline bars, in columns.
pub const TIMELINE_COLUMNS: u64 = 60;

fn level_name(l: Level) -> &'static str {
    match l {
        Level::Debug => "debug",
        Level::Info => "info",
        Level::Warn => "warn",
        Level::Error => "error",
    }
}

fn rc_meaning(rc: u8) -> &'static str {
    match rc {
        0 => "done: the harvest was clean (the error sweep may still set the status)",
        2 => "done with an error: the harvest itself faulted",
        _ => "in flight",
    }
}

fn status_line(s: NrtStatus) -> String {
    format!("{} {} ({})", s.code(), s.name(), s.description())
}

fn ms(ns: u64) -> f64 {
    (ns / 1_000) as f64 / 1_000.0
}

/// The text report of one run of `nrt-sim run`; `title` names the scenario.
pub fn text(r: &RunReport, title: Option<(&str, &str)>) -> String {
    let heading = match title {
        Some((name, description)) => format!("nrt-sim run: scenario {name}: {description}"),
        None => "nrt-sim run".to_string(),
    };
    text_with_heading(r, &heading)
}

/// The text report of one run under the caller's heading.
pub fn text_with_heading(r: &RunReport, heading: &str) -> String {
    let c = &r.config;
    let mut o = String::new();
    let _ = writeln!(o, "{heading}");
    let remote_mode;
    let mode = match &r.remote {
        Some(at) => {
            remote_mode = format!("device in another process ({at}), real clock");
            remote_mode.as_str()
        }
        None if c.threaded => "threaded (real clock)",
        None => "deterministic (virtual clock)",
    };
    let _ = writeln!(
        o,
        "  arch {}, {} core{}, seed {}, {mode}, timeout {} s, NQ rings of {} entries",
        c.arch.name(),
        c.cores,
        if c.cores == 1 { "" } else { "s" },
        c.seed,
        c.timeout_s,
        c.ring_entries
    );
    if !c.faults.is_empty() {
        let f: Vec<String> = c.faults.iter().map(|f| f.to_string()).collect();
        let _ = writeln!(o, "  faults: {}", f.join(" "));
    }
    match &r.staging {
        Some(s) => staging_text(&mut o, s, r.kickoff_us),
        None => {
            let _ = writeln!(o, "staging: none (descriptor staging does not cross the shared-memory file)");
            let _ = writeln!(
                o,
                "kickoff: host trigger <- 1 through the mapped BAR; kickoff semaphore of each core += 1 (atomic add on \
                 its INCR-alias word, in place of the driver's ioctl) at {} us",
                r.kickoff_us
            );
        }
    }
    let _ = writeln!(o);
    let _ = writeln!(o, "status: {}", status_line(r.status));
    rest_text(&mut o, r);
    o
}

fn staging_text(o: &mut String, s: &StagingReport, kickoff_us: u64) {
    let polls = s.handle_polls.map_or("?".to_string(), |p| p.to_string());
    let _ = writeln!(
        o,
        "staging: {n} descriptors each way lowered into {d}-deep rings (tx 0x{:x}, rx 0x{:x}); tail-inc S2M 0x{:x} += {n}, \
         M2S 0x{:x} += {n}; completion handle 0x{:x} done after {polls} poll(s); {} B copy {}",
        s.rings.0,
        s.rings.1,
        s.doorbells.1,
        s.doorbells.0,
        s.handle,
        s.copy_bytes,
        if s.copy_verified { "verified" } else { "MISMATCH" },
        n = s.descriptors,
        d = s.ring_depth,
    );
    if s.host_trigger == 0 {
        let _ = writeln!(
            o,
            "kickoff: host trigger not written (no public address); kickoff semaphore of each core += 1 at {kickoff_us} us"
        );
    } else {
        let _ = writeln!(
            o,
            "kickoff: host trigger 0x{:x} <- 1; kickoff semaphore of each core += 1 at {} us",
            s.host_trigger, kickoff_us
        );
    }
}

fn rest_text(o: &mut String, r: &RunReport) {
    let c = &r.config;
    let clock = if c.threaded || r.remote.is_some() { "" } else { " (virtual)" };
    let _ = writeln!(
        o,
        "one-step return: {} ({}) after {} steps, {:.3} ms{clock}",
        r.return_code(),
        rc_meaning(r.return_code()),
        r.steps,
        ms(r.elapsed_ns)
    );
    for core in &r.cores {
        core_text(o, core, c.place);
    }
    let _ = writeln!(o);
    let _ = writeln!(o, "events ({}, in order):", r.events.len());
    if r.events.is_empty() {
        let _ = writeln!(o, "  (none)");
    }
    for e in &r.events {
        let _ = match (c.place, nrt_core::trace::Traced::core(e)) {
            (Some(p), Some(core)) => writeln!(
                o,
                "  {:5} {:24} {} (core {core}): {}",
                level_name(e.level()),
                e.kind(),
                p.name(core),
                nrt_core::trace::MessageOf(e)
            ),
            _ => writeln!(o, "  {:5} {:24} {}", level_name(e.level()), e.kind(), e),
        };
    }
    if !r.wakes.is_empty() {
        let w: Vec<String> = r.wakes.iter().map(|(out, n)| format!("out{out}#{n}")).collect();
        let _ = writeln!(o, "tensor waiters woken: {}", w.join(" "));
    }
    let _ = writeln!(o);
    timeline(o, r);
    let _ = writeln!(o);
    if let Some(at) = &r.remote {
        let _ = writeln!(o, "device: played by {at}; its log is in the server's output");
        for n in &r.notes {
            let _ = writeln!(o, "  note: {}", n.text);
        }
        return;
    }
    let d = &r.device;
    let _ = writeln!(
        o,
        "device: {} records written, {} dropped ({} on a full ring), {} DMA descriptor pairs",
        d.records_written, d.records_dropped, d.ring_full_drops, d.dma_descriptors
    );
    for n in &r.notes {
        let _ = writeln!(o, "  {:>10.1} us  {}", n.t_ns as f64 / 1_000.0, n.text);
    }
}

fn core_text(o: &mut String, core: &CoreReport, place: Option<Place>) {
    let fatal = if core.fatal.is_empty() { "none".to_string() } else { core.fatal.join(", ") };
    let err = core.err.map_or(String::new(), |e| format!(", first error class {}", e.name()));
    let ret = format!("exec_ret {} {}", core.exec_ret.code(), core.exec_ret.name());
    let what = match core.harvest {
        CoreHarvest::Complete => format!("{ret}, duration {} us", core.duration_us),
        CoreHarvest::TimedOut { budget_ms, no_start, no_end } => {
            format!("{ret}, timed out after {budget_ms} ms (its budget): {}", pending_text(no_start, no_end))
        }
        CoreHarvest::Faulted { no_start, no_end } => format!(
            "{ret}, stopped at its fault: {}; {} us from the first START to the last END seen",
            pending_text(no_start, no_end),
            core.duration_us
        ),
        CoreHarvest::NotHarvested { no_start, no_end } => format!(
            "not harvested: the harvest ended before this core's engines did ({}); no exec_ret or duration",
            pending_text(no_start, no_end)
        ),
    };
    let name = place.map_or(String::new(), |p| format!(" ({})", p.name(core.core)));
    let _ = writeln!(o, "core {}{name}: {what}, fatal flags: {fatal}{err}", core.core);
    let _ = writeln!(o, "  engine  state          start_us      end_us  duration_us");
    for e in &core.engines {
        let fmt = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
        let dur = match (e.start_us, e.end_us) {
            (Some(s), Some(t)) => t.saturating_sub(s).to_string(),
            _ => "-".to_string(),
        };
        let _ = writeln!(
            o,
            "  {:6}  {:13} {:>9} {:>11} {:>12}",
            e.engine.name(),
            e.state.name(),
            fmt(e.start_us),
            fmt(e.end_us),
            dur
        );
    }
}

fn timeline(o: &mut String, r: &RunReport) {
    let k = r.kickoff_us;
    let last = r
        .cores
        .iter()
        .flat_map(|c| c.engines.iter())
        .flat_map(|e| [e.start_us, e.end_us])
        .flatten()
        .max()
        .unwrap_or(k)
        .max(k + 1);
    let span = last - k;
    let per_col = span.div_ceil(TIMELINE_COLUMNS).max(1);
    let _ = writeln!(
        o,
        "timeline (from kickoff at {k} us; 1 column = {per_col} us; # running, > no END by the end, blank: no START):"
    );
    for core in &r.cores {
        for e in &core.engines {
            let mut bar = String::new();
            let col = |t: u64| t.saturating_sub(k) / per_col;
            let (from, to, open) = match (e.start_us, e.end_us) {
                (Some(s), Some(t)) => (Some(col(s)), col(t), false),
                (Some(s), None) => (Some(col(s)), TIMELINE_COLUMNS, true),
                _ => (None, 0, false),
            };
            for i in 0..TIMELINE_COLUMNS {
                let ch = match from {
                    Some(_) if open && i + 1 == TIMELINE_COLUMNS => '>',
                    Some(f) if i >= f && i <= to => '#',
                    _ => ' ',
                };
                bar.push(ch);
            }
            let _ = writeln!(o, "  core {} {:5} |{bar}|", core.core, e.engine.name());
        }
    }
}

/// The JSON object of one run; `scenario` labels it.
pub fn json(r: &RunReport, scenario: Option<(&str, NrtStatus)>) -> Value {
    let c = &r.config;
    let cores: Vec<Value> = r
        .cores
        .iter()
        .map(|core| {
            let mut flags = serde_json::Map::new();
            for name in fatal::NAMES.iter().skip(1) {
                flags.insert((*name).to_string(), Value::Bool(core.fatal.contains(name)));
            }
            json!({
                "core": core.core,
                "exec_ret": core.exec_ret.code(),
                "exec_ret_name": core.exec_ret.name(),
                "duration_us": core.duration_us,
                "harvest": core.harvest.name(),
                "timed_out_after_ms": match core.harvest {
                    CoreHarvest::TimedOut { budget_ms, .. } => Some(budget_ms),
                    _ => None,
                },
                "never_wrote_start": core.harvest.pending().0.iter().map(Engine::name).collect::<Vec<_>>(),
                "never_wrote_end": core.harvest.pending().1.iter().map(Engine::name).collect::<Vec<_>>(),
                "fatal": Value::Object(flags),
                "error_class": core.err.map(|e| e.name()),
                "cc_start_us": core.cc_us.0,
                "cc_end_us": core.cc_us.1,
                "total_latency_us": core.total_latency_us,
                "engines": core.engines.iter().map(|e| json!({
                    "name": e.engine.name(),
                    "index": e.engine.index(),
                    "state": e.state.name(),
                    "start_us": e.start_us,
                    "end_us": e.end_us,
                    "duration_us": match (e.start_us, e.end_us) {
                        (Some(s), Some(t)) => Some(t.saturating_sub(s)),
                        _ => None,
                    },
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    let staging = r.staging.as_ref().map(|s| {
        json!({
            "descriptors": s.descriptors,
            "ring_depth": s.ring_depth,
            "tx_ring": s.rings.0,
            "rx_ring": s.rings.1,
            "doorbell_m2s": s.doorbells.0,
            "doorbell_s2m": s.doorbells.1,
            "completion_handle": s.handle,
            "handle_polls": s.handle_polls,
            "copy_bytes": s.copy_bytes,
            "copy_verified": s.copy_verified,
            "host_trigger": s.host_trigger,
            "events": r.staging_events.iter().map(event_json).collect::<Vec<_>>(),
        })
    });
    json!({
        "scenario": scenario.map(|s| s.0),
        "expected_status": scenario.map(|s| s.1.code()),
        "arch": c.arch.name(),
        "cores_count": c.cores,
        "seed": c.seed,
        "threaded": c.threaded,
        "timeout_s": c.timeout_s,
        "ring_entries": c.ring_entries,
        "faults": c.faults.iter().map(|f| f.to_string()).collect::<Vec<_>>(),
        "status": r.status.code(),
        "status_name": r.status.name(),
        "status_description": r.status.description(),
        "return_code": r.return_code(),
        "steps": r.steps,
        "elapsed_ms": ms(r.elapsed_ns),
        "timeout_ms": r.timeout_ms,
        "kickoff_us": r.kickoff_us,
        "staging": staging,
        "remote": r.remote,
        "cores": cores,
        "events": r.events.iter().map(event_json).collect::<Vec<_>>(),
        "tensor_wakes": r.wakes.iter().map(|(o, n)| json!({"output": o, "count": n})).collect::<Vec<_>>(),
        "device": {
            "records_written": r.device.records_written,
            "records_dropped": r.device.records_dropped,
            "ring_full_drops": r.device.ring_full_drops,
            "dma_descriptors": r.device.dma_descriptors,
            "log": r.notes.iter().map(|n| json!({"t_us": n.t_ns as f64 / 1000.0, "text": n.text})).collect::<Vec<_>>(),
        },
    })
}

fn event_json(e: &Event) -> Value {
    json!({"kind": e.kind(), "level": level_name(e.level()), "message": e.to_string()})
}

/// The run's error or the reason a row failed, kept as the error it is.
pub type RowError = Box<dyn std::error::Error + Send + Sync>;

/// One row of the `--scenario all` table.
#[derive(Debug)]
pub struct Row {
    /// The scenario.
    pub name: &'static str,
    /// Expected status.
    pub expected: NrtStatus,
    /// Expected return code.
    pub expected_rc: u8,
    /// The run's status and return code, or its error.
    pub got: Result<(NrtStatus, u8), RowError>,
    /// `Ok` when it passed, else why not.
    pub verdict: Result<(), RowError>,
}

/// The `--scenario all` table as text.
pub fn table_text(rows: &[Row]) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "{:20} {:42} {:42} {:>2}  result", "scenario", "expected", "got", "rc");
    for row in rows {
        let exp = format!("{} {}", row.expected.code(), row.expected.name());
        let (got, rc) = match &row.got {
            Ok((s, rc)) => (format!("{} {}", s.code(), s.name()), rc.to_string()),
            Err(e) => (format!("error: {e}"), "-".to_string()),
        };
        let verdict = match &row.verdict {
            Ok(()) => "PASS".to_string(),
            Err(why) => format!("FAIL ({why})"),
        };
        let _ = writeln!(o, "{:20} {:42} {:42} {:>2}  {verdict}", row.name, exp, got, rc);
    }
    let failed = rows.iter().filter(|r| r.verdict.is_err()).count();
    let _ = writeln!(o, "{} scenarios: {} passed, {} failed", rows.len(), rows.len() - failed, failed);
    o
}

/// The `--scenario all` table as JSON.
pub fn table_json(rows: &[Row]) -> Value {
    let failed = rows.iter().filter(|r| r.verdict.is_err()).count();
    json!({
        "scenarios": rows.iter().map(|row| json!({
            "name": row.name,
            "expected": row.expected.code(),
            "expected_name": row.expected.name(),
            "expected_return_code": row.expected_rc,
            "got": row.got.as_ref().ok().map(|g| g.0.code()),
            "got_name": row.got.as_ref().ok().map(|g| g.0.name()),
            "return_code": row.got.as_ref().ok().map(|g| g.1),
            "error": row.got.as_ref().err().map(ToString::to_string),
            "pass": row.verdict.is_ok(),
            "reason": row.verdict.as_ref().err().map(ToString::to_string),
        })).collect::<Vec<_>>(),
        "passed": rows.len() - failed,
        "failed": failed,
    })
}

#[cfg(test)]
mod cc_tests {
    use super::*;
    use nrt_core::exec::ExecConfig;
    use nrt_core::nq::Subtype;
    use nrt_core::testutil::FakeDevice;

    #[test]
    fn a_cc_record_that_rescales_to_0_us_is_reported_at_0_and_a_missing_one_as_none() {
        const RING: u32 = 64 * 16;
        let mut dev = FakeDevice::new(Arch::Sunda, RING);
        let mut nq = FakeDevice::notifications(RING);
        // The sync point puts the device's 5 us before the CPU clock's 0.
        nq.set_sync_point(0, nrt_core::nq::SyncPoint { dev_us: 1_000, cpu_us: 0 });
        dev.record(0, 0, Subtype::CC_START, 5_000);
        dev.run_all(1, 2_000_000, 3_000_000);
        let mut req = ExecRequest::new(ExecConfig::new(Arch::Sunda, 1, 5));
        let mut st = None;
        for _ in 0..64 {
            st = req.progress_one_step(&mut dev, &mut nq).status();
            if st.is_some() {
                break;
            }
        }
        assert_eq!(st, Some(NrtStatus::Success));
        assert_eq!(cc_times_us(&req, 0), (Some(0), None));
    }
}

#[cfg(test)]
mod table_tests {
    use super::*;

    /// A typed reason, as a scenario's mismatch is one.
    #[derive(Debug, PartialEq)]
    struct Why(&'static str);

    impl core::fmt::Display for Why {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            f.write_str(self.0)
        }
    }

    impl std::error::Error for Why {}

    /// The table prints each reason by its `Display`, the same in text and
    /// JSON, and the row keeps the reason's type for a caller that looks.
    #[test]
    fn a_rows_reasons_stay_typed_and_print_by_their_text() {
        let rows = [
            Row {
                name: "a",
                expected: NrtStatus::Success,
                expected_rc: 0,
                got: Ok((NrtStatus::Success, 0)),
                verdict: Ok(()),
            },
            Row {
                name: "b",
                expected: NrtStatus::Timeout,
                expected_rc: 2,
                got: Ok((NrtStatus::Success, 0)),
                verdict: Err(Box::new(Why("status 0 NRT_SUCCESS, expected 5"))),
            },
            Row {
                name: "c",
                expected: NrtStatus::Success,
                expected_rc: 0,
                got: Err(Box::new(Why("no device"))),
                verdict: Err("the run failed".into()),
            },
        ];
        let why = rows[1].verdict.as_ref().err().and_then(|e| e.downcast_ref::<Why>());
        assert_eq!(why, Some(&Why("status 0 NRT_SUCCESS, expected 5")));
        let t = table_text(&rows);
        assert!(t.contains("FAIL (status 0 NRT_SUCCESS, expected 5)"), "{t}");
        assert!(t.contains("error: no device") && t.contains("FAIL (the run failed)"), "{t}");
        assert!(t.ends_with("3 scenarios: 1 passed, 2 failed\n"), "{t}");
        let j = table_json(&rows);
        assert_eq!(j["scenarios"][1]["reason"], "status 0 NRT_SUCCESS, expected 5");
        assert_eq!(j["scenarios"][2]["error"], "no device");
        assert!(j["scenarios"][0]["reason"].is_null() && j["scenarios"][0]["error"].is_null());
        assert_eq!((j["passed"].as_u64(), j["failed"].as_u64()), (Some(1), Some(2)));
    }
}
