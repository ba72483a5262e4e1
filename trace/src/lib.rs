//! Pictures of a harvest, from the [`RunReport`] of an inference:
//!
//! - Chrome trace-event JSON, the format Perfetto and `chrome://tracing` open:
//!   `{"traceEvents": [...]}` with `ph` `X` spans, `i` instants, `C` counters
//!   and `M` metadata naming the tracks. `ts` and `dur` are microseconds of
//!   the CPU clock the report's engine times are in. [`Trace::to_json`] builds
//!   it in memory; [`TraceFile`] writes each event to the file as it is made,
//!   in memory that does not grow with the run.
//! - An SVG timeline: [`Trace::to_svg`] draws one harvest's tracks;
//!   [`Summary::to_svg`] draws a host run from a bounded summary, one row per
//!   device.
//!
//! Events go to a [`Sink`], any of the three or a pair, on tracks named by
//! `(pid, tid)`. The process is a device, `pid` its index, 0 for a single run.
//! Its threads are tracks: [`HOST_TID`] for the kickoff, the harvest, injected
//! faults and events that name no core; then per physical core one track per
//! engine, [`engine_tid`], and one for its error marks, [`errors_tid`]; after
//! them, one collectives track per core, [`cc_tid`]. [`Sink::add_report`]
//! makes the events from a report:
//!
//! - each engine with both timestamps: a span from `ts` = START for
//!   `dur` = END - START, exactly the report's engine times;
//! - a hung engine, a START and no END: an instant at its START and a span of
//!   category [`PENDING`] from it to the harvest's end, G-TRACE-SVG;
//! - each core's collectives: a `cc` span from the earliest CC_START to the
//!   latest CC_END record the harvest kept, the report's `cc_us`, or an
//!   instant when only one of them came;
//! - the kickoff: an instant at `kickoff_us` on the host track, and the
//!   harvest as a span from the kickoff for `elapsed_ns`;
//! - each injected fault: an instant at the kickoff on the host track;
//! - each harvest event at level warn or error: an instant on its core's error
//!   track, at an error record's own `ts_cpu_us`, else at the harvest's end,
//!   since the event carries no time; G-TRACE-TIMES;
//! - the poll passes and HEAD write-backs the platform observed,
//!   [`RunReport::passes_us`] and [`RunReport::head_writes_us`]: counters of
//!   the running count, thinned evenly to at most [`MAX_COUNTER_SAMPLES`]
//!   samples, the last kept; [`counter::Samples`] thins a count of unknown
//!   length as it grows.
//!
//! Writing a file with [`write_file`] or [`TraceFile`] fails with a
//! [`WriteError`] that names the path, the step and the errno name.

use std::collections::BTreeMap;

use nrt_abi::report::{CoreReport, RunReport};
use nrt_core::arch::ENGINES_PER_CORE;
use nrt_core::event::Event;
use nrt_core::exec::ExecEvent;
use nrt_core::trace::Level;
use serde_json::Value;

pub use counter::Samples;
pub use file::{errno_name, write_file, WriteError, WriteStep};
pub use json::TraceFile;
pub use summary::{height as summary_height, Summary};

/// The host track of a device.
pub const HOST_TID: u32 = 0;
/// Tracks per physical core: its engines, then its errors.
pub const TRACKS_PER_CORE: u32 = ENGINES_PER_CORE as u32 + 1;
/// Most samples of one counter. A deterministic harvest of a hang takes a
/// step per virtual microsecond; the picture needs the shape, not each step.
pub const MAX_COUNTER_SAMPLES: usize = 2000;

/// The track of engine `engine` of physical core `core`.
pub const fn engine_tid(core: u32, engine: u32) -> u32 {
    1 + core * TRACKS_PER_CORE + engine
}

/// The first collectives track: physical core `core`'s is `CC_TID_BASE + core`,
/// after every core's engine and error tracks, which keep their numbering.
pub const CC_TID_BASE: u32 = 1 << 16;

/// The collectives track of physical core `core`: the device's CC span, from
/// its earliest CC_START to its latest CC_END record.
pub const fn cc_tid(core: u32) -> u32 {
    CC_TID_BASE + core
}

/// The category of a hung engine's span, from its START to the harvest's end.
pub const PENDING: &str = "pending";

/// The error track of physical core `core`.
pub const fn errors_tid(core: u32) -> u32 {
    1 + core * TRACKS_PER_CORE + ENGINES_PER_CORE as u32
}

/// What a trace event is.
#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    /// A span of `dur_us` microseconds, `ph: X`.
    Span {
        /// Its length, microseconds.
        dur_us: u64,
    },
    /// An instant of thread scope, `ph: i`.
    Instant,
    /// A counter's value from this time on, `ph: C`.
    Counter {
        /// The value.
        value: u64,
    },
}

/// One event on a track.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceEvent {
    /// The device.
    pub pid: u32,
    /// The track of the device.
    pub tid: u32,
    /// What it shows.
    pub name: String,
    /// Its category: `engine`, `pending`, `host`, `error`, `fault`, `poll` or `cc`.
    pub cat: &'static str,
    /// When, CPU microseconds.
    pub ts_us: u64,
    /// Span, instant or counter.
    pub kind: Kind,
    /// Details shown when it is selected.
    pub args: Vec<(&'static str, String)>,
}

/// The name of a track nobody named.
pub(crate) fn default_track_name(tid: u32) -> String {
    format!("track {tid}")
}

/// Where trace events go: a [`Trace`] in memory, a [`TraceFile`] streamed to
/// its file, a [`Summary`] for a host's SVG, or a pair of them. `(A, B)` gives
/// each event to both; `Option<S>` gives it to `S` when there is one.
///
/// For implementers: name the processes and tracks and take each event; the
/// provided methods make the events of a report from those three.
pub trait Sink {
    /// Name device `pid`'s process.
    fn name_process(&mut self, pid: u32, name: &str);

    /// Name track `tid` of device `pid`.
    fn name_thread(&mut self, pid: u32, tid: u32, name: &str);

    /// Take one event. A track not named yet takes the name `track <tid>`; a
    /// counter names no track.
    fn push(&mut self, e: TraceEvent);

    /// Add the engines of `cores`, the `i`th being physical core `core_base + i`,
    /// of a harvest that ended at `end_us`: a span per engine with both times;
    /// for a START without END an instant at the START and a `pending` span
    /// from it to `end_us`; and each core's CC span, or an instant for a lone
    /// CC record.
    fn add_cores(&mut self, pid: u32, core_base: u32, cores: &[CoreReport], end_us: u64, inference: Option<u32>) {
        for (i, c) in cores.iter().enumerate() {
            let core = core_base + i as u32;
            self.name_thread(pid, errors_tid(core), &format!("core {core} errors"));
            for e in &c.engines {
                let tid = engine_tid(core, e.engine.index() as u32);
                self.name_thread(pid, tid, &format!("core {core} {}", e.engine.name()));
                let mut args = vec![
                    ("core", core.to_string()),
                    ("engine", e.engine.name().to_string()),
                    ("state", format!("{:?}", e.state)),
                    ("exec_ret", format!("{} {}", c.exec_ret.code(), c.exec_ret.name())),
                ];
                if let Some(n) = inference {
                    args.push(("inference", n.to_string()));
                }
                match (e.start_us, e.end_us) {
                    (Some(s), Some(end)) => self.push(TraceEvent {
                        pid,
                        tid,
                        name: e.engine.name().to_string(),
                        cat: "engine",
                        ts_us: s,
                        kind: Kind::Span { dur_us: end.saturating_sub(s) },
                        args,
                    }),
                    (Some(s), None) => {
                        self.push(TraceEvent {
                            pid,
                            tid,
                            name: format!("{} START, no END", e.engine.name()),
                            cat: "engine",
                            ts_us: s,
                            kind: Kind::Instant,
                            args: args.clone(),
                        });
                        args.push(("until", format!("the harvest's end at {end_us} us")));
                        self.push(TraceEvent {
                            pid,
                            tid,
                            name: format!("{} pending (no END)", e.engine.name()),
                            cat: PENDING,
                            ts_us: s,
                            kind: Kind::Span { dur_us: end_us.saturating_sub(s) },
                            args,
                        });
                    }
                    _ => {}
                }
            }
            let mut args =
                vec![("core", core.to_string()), ("exec_ret", format!("{} {}", c.exec_ret.code(), c.exec_ret.name()))];
            if let Some(n) = inference {
                args.push(("inference", n.to_string()));
            }
            let (name, ts_us, kind) = match c.cc_us {
                (Some(s), Some(end)) => ("CC".to_string(), s, Kind::Span { dur_us: end.saturating_sub(s) }),
                (Some(s), None) => ("CC_START, no CC_END".to_string(), s, Kind::Instant),
                (None, Some(end)) => ("CC_END, no CC_START".to_string(), end, Kind::Instant),
                (None, None) => continue,
            };
            self.name_thread(pid, cc_tid(core), &format!("core {core} CC"));
            self.push(TraceEvent { pid, tid: cc_tid(core), name, cat: "cc", ts_us, kind, args });
        }
    }

    /// Add the kickoff instant and the harvest span on the host track of `pid`.
    fn add_kickoff(&mut self, pid: u32, kickoff_us: u64, harvest_us: u64, status: &str) {
        self.name_thread(pid, HOST_TID, "host");
        self.add_kickoff_on(pid, HOST_TID, kickoff_us, harvest_us, status, None);
    }

    /// Add the kickoff instant and the harvest span on track `tid` of `pid`;
    /// with `Some(n)` both carry `inference: n`.
    fn add_kickoff_on(
        &mut self,
        pid: u32,
        tid: u32,
        kickoff_us: u64,
        harvest_us: u64,
        status: &str,
        inference: Option<u32>,
    ) {
        let n = inference.map(|n| ("inference", n.to_string()));
        self.push(TraceEvent {
            pid,
            tid,
            name: "kickoff".into(),
            cat: "host",
            ts_us: kickoff_us,
            kind: Kind::Instant,
            args: n.iter().cloned().collect(),
        });
        self.push(TraceEvent {
            pid,
            tid,
            name: "harvest".into(),
            cat: "host",
            ts_us: kickoff_us,
            kind: Kind::Span { dur_us: harvest_us },
            args: [("status", status.to_string())].into_iter().chain(n).collect(),
        });
    }

    /// Add everything of one report as device `pid` named `label`.
    fn add_report(&mut self, r: &RunReport, pid: u32, label: &str) {
        self.add_inference(r, pid, label, None);
    }

    /// As [`add_report`](Self::add_report), for the `n`th of several
    /// inferences on the same tracks, each at its own times. With `Some(n)` its
    /// kickoff, harvest and engine spans carry `inference: n`.
    fn add_inference(&mut self, r: &RunReport, pid: u32, label: &str, inference: Option<u32>) {
        self.name_process(pid, label);
        let status = format!("{} {}", r.status.code(), r.status.name());
        let end_us = r.kickoff_us.saturating_add(r.elapsed_ns / 1_000);
        self.name_thread(pid, HOST_TID, "host");
        self.add_kickoff_on(pid, HOST_TID, r.kickoff_us, r.elapsed_ns / 1_000, &status, inference);
        for f in &r.config.faults {
            self.push(TraceEvent {
                pid,
                tid: HOST_TID,
                name: format!("fault {f}"),
                cat: "fault",
                ts_us: r.kickoff_us,
                kind: Kind::Instant,
                args: vec![("spec", f.clone())],
            });
        }
        self.add_cores(pid, 0, &r.cores, end_us, inference);
        for e in &r.events {
            self.add_event(pid, e, end_us);
        }
        self.add_counter(pid, "poll passes", &r.passes_us);
        self.add_counter(pid, "HEAD write-backs", &r.head_writes_us);
    }

    /// Add a harvest event at level warn or error as an instant, at its own
    /// time if it has one, else at `end_us`; other levels are left out.
    fn add_event(&mut self, pid: u32, e: &Event, end_us: u64) {
        if !matches!(e.level(), Level::Warn | Level::Error) {
            return;
        }
        let (core, ts) = match *e {
            Event::Exec(ExecEvent::ErrorRecord { core, ts_cpu_us, .. }) => (Some(core), ts_cpu_us),
            _ => (event_core(e), end_us),
        };
        let tid = core.map_or(HOST_TID, |c| errors_tid(u32::from(c)));
        if tid == HOST_TID {
            self.name_thread(pid, HOST_TID, "host");
        }
        self.push(TraceEvent {
            pid,
            tid,
            name: e.kind().to_string(),
            cat: "error",
            ts_us: ts,
            kind: Kind::Instant,
            args: vec![("message", e.to_string()), ("level", format!("{:?}", e.level()))],
        });
    }

    /// Add a counter named `name` on device `pid`: the running count of the
    /// observations at `times_us`, thinned to [`MAX_COUNTER_SAMPLES`].
    fn add_counter(&mut self, pid: u32, name: &str, times_us: &[u64]) {
        let points: Vec<(u64, u64)> = times_us.iter().enumerate().map(|(i, t)| (*t, (i + 1) as u64)).collect();
        self.add_samples(pid, name, &counter::thin(&points));
    }

    /// Add a counter named `name` on device `pid` from its `(time us, value)`
    /// points as they are, from a [`counter::Samples`] or [`counter::merge`].
    fn add_samples(&mut self, pid: u32, name: &str, points: &[(u64, u64)]) {
        for (t, value) in points {
            self.push(TraceEvent {
                pid,
                tid: HOST_TID,
                name: name.to_string(),
                cat: "poll",
                ts_us: *t,
                kind: Kind::Counter { value: *value },
                args: Vec::new(),
            });
        }
    }
}

impl<A: Sink, B: Sink> Sink for (A, B) {
    fn name_process(&mut self, pid: u32, name: &str) {
        self.0.name_process(pid, name);
        self.1.name_process(pid, name);
    }

    fn name_thread(&mut self, pid: u32, tid: u32, name: &str) {
        self.0.name_thread(pid, tid, name);
        self.1.name_thread(pid, tid, name);
    }

    fn push(&mut self, e: TraceEvent) {
        self.0.push(e.clone());
        self.1.push(e);
    }
}

impl<S: Sink> Sink for Option<S> {
    fn name_process(&mut self, pid: u32, name: &str) {
        if let Some(s) = self {
            s.name_process(pid, name);
        }
    }

    fn name_thread(&mut self, pid: u32, tid: u32, name: &str) {
        if let Some(s) = self {
            s.name_thread(pid, tid, name);
        }
    }

    fn push(&mut self, e: TraceEvent) {
        if let Some(s) = self {
            s.push(e);
        }
    }
}

/// A single report's events on named tracks, in memory. A run of many
/// inferences streams to a [`TraceFile`] and a [`Summary`] instead.
#[derive(Clone, Debug, Default)]
pub struct Trace {
    /// Events, in the order added.
    pub events: Vec<TraceEvent>,
    processes: BTreeMap<u32, String>,
    threads: BTreeMap<(u32, u32), String>,
}

impl Sink for Trace {
    fn name_process(&mut self, pid: u32, name: &str) {
        self.processes.insert(pid, name.to_string());
    }

    fn name_thread(&mut self, pid: u32, tid: u32, name: &str) {
        self.threads.insert((pid, tid), name.to_string());
    }

    fn push(&mut self, e: TraceEvent) {
        if !matches!(e.kind, Kind::Counter { .. }) {
            self.threads.entry((e.pid, e.tid)).or_insert_with(|| default_track_name(e.tid));
        }
        self.events.push(e);
    }
}

impl Trace {
    /// An empty trace.
    pub fn new() -> Trace {
        Trace::default()
    }

    /// The named tracks, ordered by device then track.
    pub fn tracks(&self) -> impl Iterator<Item = (&(u32, u32), &String)> {
        self.threads.iter()
    }

    /// The trace as Chrome trace-event JSON: the names first, then the events.
    pub fn to_json(&self) -> Value {
        let mut out = Vec::with_capacity(self.events.len() + self.threads.len() * 2 + self.processes.len() * 2);
        for (pid, name) in &self.processes {
            out.extend(json::process_meta(*pid, name));
        }
        for ((pid, tid), name) in &self.threads {
            out.extend(json::thread_meta(*pid, *tid, name));
        }
        out.extend(self.events.iter().map(json::event));
        serde_json::json!({"traceEvents": out, "displayTimeUnit": "ms"})
    }

    /// The trace as an SVG timeline: one lane per track, counters left out;
    /// spans as bars, a pending engine as a hatched bar to the harvest's end
    /// with its own mark, instants as marks that do not overlap, and a time
    /// axis broken over a long idle gap.
    pub fn to_svg(&self, title: &str) -> String {
        svg::render(self, title)
    }
}

/// The core an event names, if any.
fn event_core(e: &Event) -> Option<u8> {
    e.exec()?.core()
}

pub mod counter;
mod file;
mod json;
mod summary;
mod svg;

#[cfg(test)]
mod tests;
