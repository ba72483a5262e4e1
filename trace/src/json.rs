//! Chrome trace-event JSON: one event as its JSON object, and
//! [`TraceFile`], which streams a trace to a file as it is made.
//!
//! The file is `{"displayTimeUnit":"ms","traceEvents":[` then each event,
//! one per line, then `]}`: what [`Trace::to_json`](crate::Trace::to_json)
//! gives, in the order the events came. A track's `M` name events are written
//! when it is first named or renamed, before its first event, so the writer
//! keeps only the names of the tracks, never an event: its memory does not
//! grow with the run.

use std::collections::BTreeMap;
use std::io::Write as _;

use serde_json::{json, Map, Value};

use crate::file::{OutFile, WriteError, WriteStep};
use crate::{Kind, Sink, TraceEvent};

/// The opening of the file, up to the first event.
pub(crate) const OPENING: &str = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
/// The closing of the file, after the last event.
pub(crate) const CLOSING: &str = "\n]}\n";
/// The buffer between the writer and the file, bytes.
const BUFFER_BYTES: usize = 1 << 16;

/// The `process_name` and `process_sort_index` events of device `pid`.
pub(crate) fn process_meta(pid: u32, name: &str) -> [Value; 2] {
    [
        json!({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}}),
        json!({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": pid}}),
    ]
}

/// The `thread_name` and `thread_sort_index` events of track `tid` of `pid`.
pub(crate) fn thread_meta(pid: u32, tid: u32, name: &str) -> [Value; 2] {
    [
        json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}}),
        json!({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid, "args": {"sort_index": tid}}),
    ]
}

/// One event as its trace-event object: an `X` span, an `i` instant of thread
/// scope, or a `C` counter with its value as `args.count`.
pub(crate) fn event(e: &TraceEvent) -> Value {
    let mut o = Map::new();
    o.insert("name".into(), json!(e.name));
    o.insert("cat".into(), json!(e.cat));
    o.insert("pid".into(), json!(e.pid));
    o.insert("tid".into(), json!(e.tid));
    o.insert("ts".into(), json!(e.ts_us));
    let mut args: Map<String, Value> = e.args.iter().map(|(k, v)| ((*k).to_string(), json!(v))).collect();
    match e.kind {
        Kind::Span { dur_us } => {
            o.insert("ph".into(), json!("X"));
            o.insert("dur".into(), json!(dur_us));
        }
        Kind::Instant => {
            o.insert("ph".into(), json!("i"));
            o.insert("s".into(), json!("t"));
        }
        Kind::Counter { value } => {
            o.insert("ph".into(), json!("C"));
            args = Map::new();
            args.insert("count".into(), json!(value));
        }
    }
    o.insert("args".into(), Value::Object(args));
    Value::Object(o)
}

/// A trace written to its file as it is made: [`create`](Self::create)
/// writes the opening, each event is written when it is added, and
/// [`finish`](Self::finish) writes the closing and syncs. A write that fails
/// is kept and every later one skipped; `finish` returns it, naming the file,
/// which is then not JSON, as it has no closing.
#[derive(Debug)]
pub struct TraceFile {
    out: std::io::BufWriter<std::fs::File>,
    file: OutFile,
    processes: BTreeMap<u32, String>,
    threads: BTreeMap<(u32, u32), String>,
    written: u64,
    failed: Option<std::io::Error>,
}

impl TraceFile {
    /// Create `path`, which `what` names in errors, and write the opening.
    pub fn create(what: &str, path: &std::path::Path) -> Result<TraceFile, WriteError> {
        let file = OutFile::create(what, path)?;
        let handle = file.file.try_clone().map_err(|e| file.error(WriteStep::Create, e))?;
        let mut t = TraceFile {
            out: std::io::BufWriter::with_capacity(BUFFER_BYTES, handle),
            file,
            processes: BTreeMap::new(),
            threads: BTreeMap::new(),
            written: 0,
            failed: None,
        };
        t.raw(OPENING.as_bytes());
        match t.failed.take() {
            Some(e) => Err(t.file.error(WriteStep::Write, e)),
            None => Ok(t),
        }
    }

    /// Events written so far, metadata included.
    pub fn written(&self) -> u64 {
        self.written
    }

    fn raw(&mut self, b: &[u8]) {
        if self.failed.is_none() {
            if let Err(e) = self.out.write_all(b) {
                self.failed = Some(e);
            }
        }
    }

    fn value(&mut self, v: &Value) {
        if self.written > 0 {
            self.raw(b",\n");
        }
        if self.failed.is_none() {
            if let Err(e) = serde_json::to_writer(&mut self.out, v) {
                self.failed = Some(e.into());
            }
        }
        self.written += 1;
    }

    /// Write the closing, flush and sync; the first failure, naming the file.
    pub fn finish(mut self) -> Result<(), WriteError> {
        self.raw(CLOSING.as_bytes());
        if self.failed.is_none() {
            if let Err(e) = self.out.flush() {
                self.failed = Some(e);
            }
        }
        if let Some(e) = self.failed.take() {
            return Err(self.file.error(WriteStep::Write, e));
        }
        let TraceFile { out, file, .. } = self;
        drop(out);
        file.sync()
    }
}

impl Sink for TraceFile {
    fn name_process(&mut self, pid: u32, name: &str) {
        if self.processes.get(&pid).map(String::as_str) != Some(name) {
            self.processes.insert(pid, name.to_string());
            for v in process_meta(pid, name) {
                self.value(&v);
            }
        }
    }

    fn name_thread(&mut self, pid: u32, tid: u32, name: &str) {
        if self.threads.get(&(pid, tid)).map(String::as_str) != Some(name) {
            self.threads.insert((pid, tid), name.to_string());
            for v in thread_meta(pid, tid, name) {
                self.value(&v);
            }
        }
    }

    fn push(&mut self, e: TraceEvent) {
        if !matches!(e.kind, Kind::Counter { .. }) && !self.threads.contains_key(&(e.pid, e.tid)) {
            self.name_thread(e.pid, e.tid, &crate::default_track_name(e.tid));
        }
        self.value(&event(&e));
    }
}
