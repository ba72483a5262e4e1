//! The trace of a hand-made report: every track named, each span at the
//! report's engine times, instants where the events are, counters thinned.

use super::*;
use nrt_abi::report::{EngineReport, ReportConfig};
use nrt_core::exec::{ExecEvent, Step, TpbEngState};
use nrt_core::nq::{Engine, ErrorClass};
use nrt_core::NrtStatus;

fn report() -> RunReport {
    let engines = |base: u64, hang: Option<Engine>| {
        Engine::ALL
            .iter()
            .map(|e| EngineReport {
                engine: *e,
                state: TpbEngState::Complete,
                start_us: Some(base + e.index() as u64),
                end_us: if Some(*e) == hang { None } else { Some(base + 10 * (e.index() as u64 + 1)) },
            })
            .collect::<Vec<_>>()
    };
    RunReport {
        config: ReportConfig { faults: vec!["nan:core=1".into()], ..ReportConfig::default() },
        status: NrtStatus::ExecCompletedWithNumErr,
        step: Step::Done(NrtStatus::ExecCompletedWithNumErr),
        steps: 3,
        elapsed_ns: 80_000,
        timeout_ms: 5_000,
        kickoff_us: 100,
        staging: None,
        remote: None,
        cores: vec![
            CoreReport {
                core: 0,
                exec_ret: NrtStatus::Success,
                duration_us: 50,
                harvest: nrt_abi::report::CoreHarvest::Complete,
                fatal: Vec::new(),
                err: None,
                engines: engines(110, None),
                cc_us: (Some(115), Some(145)),
                total_latency_us: None,
            },
            CoreReport {
                core: 1,
                exec_ret: NrtStatus::ExecCompletedWithNumErr,
                duration_us: 50,
                harvest: nrt_abi::report::CoreHarvest::Faulted {
                    no_start: nrt_core::nq::EngineSet::EMPTY,
                    no_end: Engine::Dve.into(),
                },
                fatal: Vec::new(),
                err: Some(ErrorClass::Numerical),
                engines: engines(120, Some(Engine::Dve)),
                cc_us: (Some(125), None),
                total_latency_us: None,
            },
        ],
        events: vec![
            Event::Exec(ExecEvent::ErrorRecord {
                core: 1,
                subtype: 3,
                class: ErrorClass::Numerical,
                ts_cpu_us: 140,
                status: NrtStatus::ExecCompletedWithNumErr,
            }),
            Event::Exec(ExecEvent::HangOnCompute { core: 1 }),
            Event::Exec(ExecEvent::XuFatalShutdown { status: NrtStatus::Timeout }),
            Event::Exec(ExecEvent::CorrectableEcc { core: 0 }),
        ],
        staging_events: Vec::new(),
        wakes: Vec::new(),
        notes: Vec::new(),
        device: Default::default(),
        passes_us: (0..5000).map(|i| 100 + i / 60).collect(),
        head_writes_us: vec![150, 170],
    }
}

fn events_of<'a>(v: &'a Value, ph: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
    v["traceEvents"].as_array().into_iter().flatten().filter(move |e| e["ph"] == ph)
}

#[test]
fn spans_are_the_reports_engine_times_on_one_track_per_core_and_engine() {
    let r = report();
    let mut t = Trace::new();
    t.add_report(&r, 3, "device 3");
    let v: Value = serde_json::from_str(&t.to_json().to_string()).expect("the JSON parses");
    let spans: Vec<&Value> = events_of(&v, "X").filter(|e| e["cat"] == "engine").collect();
    // 10 engines, one without END.
    assert_eq!(spans.len(), 9);
    for c in &r.cores {
        for e in &c.engines {
            let tid = engine_tid(u32::from(c.core), e.engine.index() as u32);
            let on: Vec<&&Value> = spans.iter().filter(|s| s["tid"] == tid && s["pid"] == 3).collect();
            match (e.start_us, e.end_us) {
                (Some(s), Some(end)) => {
                    assert_eq!(on.len(), 1, "core {} {}", c.core, e.engine.name());
                    assert_eq!(on[0]["ts"].as_u64(), Some(s));
                    assert_eq!(on[0]["dur"].as_u64(), Some(end - s));
                    assert_eq!(on[0]["name"], e.engine.name());
                }
                _ => assert!(on.is_empty()),
            }
        }
    }
    let hang: Vec<&Value> = events_of(&v, "i").filter(|e| e["tid"] == engine_tid(1, 3)).collect();
    assert_eq!(hang.len(), 1);
    assert_eq!(hang[0]["ts"].as_u64(), Some(123));
}

#[test]
fn every_track_is_named_by_metadata() {
    let mut t = Trace::new();
    t.add_report(&report(), 0, "nrt-sim run");
    let v = t.to_json();
    let named: Vec<(u64, String)> = events_of(&v, "M")
        .filter(|e| e["name"] == "thread_name")
        .map(|e| (e["tid"].as_u64().unwrap_or(u64::MAX), e["args"]["name"].as_str().unwrap_or("").to_string()))
        .collect();
    // Host, then per core 5 engines, errors and CC, for 2 cores.
    assert_eq!(named.len(), 1 + 2 * 7);
    assert!(named.contains(&(u64::from(cc_tid(1)), "core 1 CC".into())));
    assert!(named.contains(&(0, "host".into())));
    assert!(named.contains(&(u64::from(engine_tid(1, 4)), "core 1 SP".into())));
    assert!(named.contains(&(u64::from(errors_tid(0)), "core 0 errors".into())));
    for e in v["traceEvents"].as_array().into_iter().flatten().filter(|e| e["ph"] != "M" && e["ph"] != "C") {
        assert!(named.iter().any(|(tid, _)| e["tid"].as_u64() == Some(*tid)), "unnamed track of {e}");
    }
    let procs: Vec<&Value> = events_of(&v, "M").filter(|e| e["name"] == "process_name").collect();
    assert_eq!(procs.len(), 1);
    assert_eq!(procs[0]["args"]["name"], "nrt-sim run");
}

#[test]
fn kickoff_faults_and_errors_are_instants_where_they_happened() {
    let mut t = Trace::new();
    t.add_report(&report(), 0, "run");
    let v = t.to_json();
    let inst: Vec<&Value> = events_of(&v, "i").collect();
    let find = |name: &str| inst.iter().find(|e| e["name"] == name).copied();
    assert_eq!(find("kickoff").map(|e| (e["ts"].as_u64(), e["tid"].as_u64())), Some((Some(100), Some(0))));
    assert_eq!(find("fault nan:core=1").and_then(|e| e["ts"].as_u64()), Some(100));
    let rec = find("error_record").expect("the error record");
    assert_eq!((rec["ts"].as_u64(), rec["tid"].as_u64()), (Some(140), Some(u64::from(errors_tid(1)))));
    // No time of its own: at the end of the harvest, kickoff + 80 us.
    let hang = find("hang_on_compute").expect("the hang");
    assert_eq!((hang["ts"].as_u64(), hang["tid"].as_u64()), (Some(180), Some(u64::from(errors_tid(1)))));
    assert_eq!(find("xu_fatal_shutdown").and_then(|e| e["tid"].as_u64()), Some(0));
    // Info level: left out.
    assert!(find("correctable_ecc").is_none());
    let harvest: Vec<&Value> = events_of(&v, "X").filter(|e| e["name"] == "harvest").collect();
    assert_eq!(harvest.len(), 1);
    assert_eq!((harvest[0]["ts"].as_u64(), harvest[0]["dur"].as_u64()), (Some(100), Some(80)));
}

#[test]
fn counters_count_up_thinned_to_the_cap_with_the_last_kept() {
    let mut t = Trace::new();
    t.add_report(&report(), 0, "run");
    let v = t.to_json();
    let passes: Vec<&Value> = events_of(&v, "C").filter(|e| e["name"] == "poll passes").collect();
    assert!(passes.len() <= MAX_COUNTER_SAMPLES && passes.len() >= MAX_COUNTER_SAMPLES / 2, "{}", passes.len());
    let counts: Vec<u64> = passes.iter().filter_map(|e| e["args"]["count"].as_u64()).collect();
    assert!(counts.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(counts.last(), Some(&5000));
    // 5000 passes over 2000 samples: every third count, then the last.
    assert_eq!(&counts[..3], &[3, 6, 9]);
    assert!(counts[..counts.len() - 1].iter().all(|c| c % 3 == 0), "{counts:?}");
    let heads: Vec<(Option<u64>, Option<u64>)> = events_of(&v, "C")
        .filter(|e| e["name"] == "HEAD write-backs")
        .map(|e| (e["ts"].as_u64(), e["args"]["count"].as_u64()))
        .collect();
    assert_eq!(heads, vec![(Some(150), Some(1)), (Some(170), Some(2))]);
}

#[test]
fn the_svg_has_a_lane_per_track_a_bar_per_span_and_a_mark_per_instant() {
    let mut t = Trace::new();
    t.add_report(&report(), 0, "run <1>");
    let s = t.to_svg("nan & more");
    assert!(s.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    assert!(s.trim_end().ends_with("</svg>"));
    assert!(s.contains("nan &amp; more"));
    assert!(s.contains(">core 1 DVE<"), "one device: lanes named by their track");
    // Every track has something drawn but core 0's errors, whose one event is info.
    let lanes = t.tracks().count() - 1;
    assert!(!s.contains("core 0 errors"));
    // The background, a rect per lane, eight legend swatches for seven colours
    // and the pending hatch, then the bars: the spans and core 1 DVE's pending one.
    let bars = s.matches("<rect x=").count() - 1 - lanes - 8;
    let pending = s.matches(r#"<rect class="pending""#).count();
    let spans = t.events.iter().filter(|e| matches!(e.kind, Kind::Span { .. })).count();
    assert_eq!(bars + pending, spans);
    assert_eq!(pending, 1, "DVE's pending bar");
    // Three legend marks, error, kickoff and hung; then one per instant but the
    // engine's START without END, where its pending bar starts; and the hung mark.
    let marks = s.matches("<path d=").count() - 3;
    let instants = t.events.iter().filter(|e| e.kind == Kind::Instant && e.cat != "engine").count();
    assert_eq!(marks, instants + 1);
    assert_eq!(s.matches(r#"<g class="hung">"#).count(), 1 + 1, "the legend's hung mark and DVE's");
    assert!(s.contains("hung</text>") && s.contains("pending (no END)</text>"), "the legend names them");
    assert!(s.contains(">100 µs<") || s.contains(">90 µs<"), "an axis label at the start");
    // The hatch, the legend's diamond and hung disc, the hung disc, then the
    // fault, the record, the hang, the shutdown.
    assert_eq!(s.matches("fill=\"#d62728\"").count(), 3 + 1 + 4, "the errors, the fault and the hung mark are red");
    let mut two = Trace::new();
    two.add_report(&report(), 0, "run <1>");
    two.add_report(&report(), 1, "device 1");
    let s = two.to_svg("two");
    assert!(
        s.contains(">run &lt;1&gt;: core 1 DVE<") && s.contains(">device 1: core 0 PE<"),
        "several: lanes say whose"
    );
}

#[test]
fn errno_names_are_the_conventional_ones() {
    for (n, name) in [
        (libc::EPERM, "EPERM"),
        (libc::ENOENT, "ENOENT"),
        (libc::EIO, "EIO"),
        (libc::ENXIO, "ENXIO"),
        (libc::EBADF, "EBADF"),
        (libc::EACCES, "EACCES"),
        (libc::EEXIST, "EEXIST"),
        (libc::ENOTDIR, "ENOTDIR"),
        (libc::EISDIR, "EISDIR"),
        (libc::EINVAL, "EINVAL"),
        (libc::EMFILE, "EMFILE"),
        (libc::EFBIG, "EFBIG"),
        (libc::ENOSPC, "ENOSPC"),
        (libc::EROFS, "EROFS"),
        (libc::EPIPE, "EPIPE"),
        (libc::ENAMETOOLONG, "ENAMETOOLONG"),
        (libc::EDQUOT, "EDQUOT"),
        (9999, "errno"),
    ] {
        assert_eq!(errno_name(n), name, "{n}");
    }
}

#[test]
fn a_device_that_cannot_be_synced_is_written_all_the_same() {
    // fsync of /dev/null is EINVAL: not an error for a file that is no file.
    write_file("trace", std::path::Path::new("/dev/null"), "{}").expect("/dev/null takes the text");
}

/// A FIFO of this test's own, made with `mkfifo`.
fn fifo(name: &str) -> std::path::PathBuf {
    let p = std::env::temp_dir().join(format!("nrt-trace-{name}-{}", std::process::id()));
    let _ = std::fs::remove_file(&p);
    let ok = std::process::Command::new("mkfifo").arg(&p).status().is_ok_and(|s| s.success());
    assert!(ok, "mkfifo {}", p.display());
    p
}

#[test]
fn a_fifo_nobody_reads_fails_at_once_and_a_reader_that_leaves_is_epipe() {
    let p = fifo("noreader");
    let e = write_file("trace", &p, "{}").unwrap_err();
    assert!(matches!(e, WriteError { step: WriteStep::Open, .. }), "{e:?}");
    assert_eq!(e.errno(), Some(libc::ENXIO));
    let m = e.to_string();
    assert!(m.contains("ENXIO") && m.contains(&p.display().to_string()), "{m}");
    let _ = std::fs::remove_file(&p);

    let p = fifo("leaves");
    // The reader opens first, non-blocking so without a writer, reads one
    // byte once the writer is there, and closes: the rest of the write is EPIPE.
    let reader = {
        use std::os::unix::fs::OpenOptionsExt as _;
        std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(&p).expect("the reader")
    };
    let t = std::thread::spawn(move || {
        use std::io::Read as _;
        let mut r = reader;
        let mut b = [0u8; 1];
        // Non-blocking: bounded retries until the writer has written.
        for _ in 0..10_000 {
            if matches!(r.read(&mut b), Ok(1)) {
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        false
    });
    let big = "x".repeat(4 << 20);
    let e = write_file("timeline SVG", &p, &big).unwrap_err();
    assert!(t.join().unwrap_or(false), "the reader read a byte");
    assert_eq!((e.step, e.errno()), (WriteStep::Write, Some(libc::EPIPE)));
    let m = e.to_string();
    assert!(m.contains("EPIPE") && m.contains("write failed") && m.contains(&p.display().to_string()), "{m}");
    let _ = std::fs::remove_file(&p);
}

#[test]
fn write_file_names_the_path_and_the_errno() {
    let e = write_file("trace", std::path::Path::new("/nonexistent-dir/x.json"), "{}").unwrap_err();
    assert!(matches!(e, WriteError { step: WriteStep::Create, .. }), "{e:?}");
    assert_eq!(e.errno(), Some(libc::ENOENT));
    let source = std::error::Error::source(&e).map(ToString::to_string);
    assert_eq!(source, Some(std::io::Error::from_raw_os_error(libc::ENOENT).to_string()), "the OS error is the source");
    assert_eq!(
        e.to_string(),
        format!(
            "writing the trace to /nonexistent-dir/x.json: create failed: {} (ENOENT)",
            std::io::Error::from_raw_os_error(libc::ENOENT)
        )
    );
    let dir = std::env::temp_dir();
    let e = write_file("timeline SVG", &dir, "<svg/>").unwrap_err();
    assert_eq!((e.step, e.errno(), e.what.as_str()), (WriteStep::Create, Some(libc::EISDIR), "timeline SVG"));
    let m = e.to_string();
    assert!(m.contains("EISDIR") && m.contains("timeline SVG"), "{m}");
    let p = dir.join(format!("nrt-trace-test-{}.json", std::process::id()));
    write_file("trace", &p, "{}").expect("a writable path");
    assert_eq!(std::fs::read_to_string(&p).ok().as_deref(), Some("{}"));
    let _ = std::fs::remove_file(&p);
}

#[test]
fn tracks_are_numbered_host_then_per_core_engines_then_errors() {
    assert_eq!(HOST_TID, 0);
    assert_eq!((engine_tid(0, 0), engine_tid(0, 4), errors_tid(0)), (1, 5, 6));
    assert_eq!((engine_tid(1, 0), engine_tid(1, 4), errors_tid(1)), (7, 11, 12));
    assert_eq!(errors_tid(7), 48);
}

#[test]
fn an_event_without_a_core_names_the_host_track() {
    let mut t = Trace::new();
    t.add_event(2, &Event::Exec(ExecEvent::XuFatalShutdown { status: NrtStatus::Timeout }), 40);
    t.add_event(2, &Event::Exec(ExecEvent::HangOnCompute { core: 1 }), 40);
    let named: Vec<(&(u32, u32), &String)> = t.tracks().collect();
    assert_eq!(named.len(), 2, "{named:?}");
    assert_eq!(named[0], (&(2, HOST_TID), &"host".to_string()));
    assert_eq!(*named[1].0, (2, errors_tid(1)));
    assert_eq!(t.events.iter().map(|e| e.ts_us).collect::<Vec<_>>(), vec![40, 40]);
}

#[test]
fn each_cores_cc_records_are_a_span_or_an_instant_on_its_cc_track() {
    let mut t = Trace::new();
    t.add_inference(&report(), 0, "cc", Some(4));
    let v = t.to_json();
    let cc: Vec<&Value> = v["traceEvents"].as_array().unwrap().iter().filter(|e| e["cat"] == "cc").collect();
    assert_eq!(cc.len(), 2, "{cc:?}");
    // Core 0: CC_START 115 to CC_END 145, a span of 30 us.
    assert_eq!((cc[0]["ph"].as_str(), cc[0]["tid"].as_u64()), (Some("X"), Some(u64::from(cc_tid(0)))));
    assert_eq!(
        (cc[0]["ts"].as_u64(), cc[0]["dur"].as_u64(), cc[0]["name"].as_str()),
        (Some(115), Some(30), Some("CC"))
    );
    assert_eq!(cc[0]["args"]["inference"], "4");
    // Core 1: a CC_START alone, an instant.
    assert_eq!((cc[1]["ph"].as_str(), cc[1]["tid"].as_u64()), (Some("i"), Some(u64::from(cc_tid(1)))));
    assert_eq!((cc[1]["ts"].as_u64(), cc[1]["name"].as_str()), (Some(125), Some("CC_START, no CC_END")));
    // A CC_END alone: an instant at it; no record: nothing on the track.
    let mut r = report();
    r.cores[0].cc_us = (None, Some(150));
    r.cores[1].cc_us = (None, None);
    let mut t = Trace::new();
    t.add_report(&r, 0, "cc");
    let v = t.to_json();
    let cc: Vec<&Value> = v["traceEvents"].as_array().unwrap().iter().filter(|e| e["cat"] == "cc").collect();
    assert_eq!(cc.len(), 1);
    assert_eq!((cc[0]["ts"].as_u64(), cc[0]["name"].as_str()), (Some(150), Some("CC_END, no CC_START")));
    assert!(cc[0]["args"].get("inference").is_none(), "a single report's spans carry no inference");
    assert!(!t.tracks().any(|(k, _)| *k == (0, cc_tid(1))), "no CC track without a record");
    // The SVG draws the CC lane.
    let mut t = Trace::new();
    t.add_report(&report(), 0, "cc");
    let svg = t.to_svg("cc");
    assert!(svg.contains("core 0 CC") && svg.contains("core 1 CC"), "{svg}");
    assert_eq!(svg.matches(r##"fill="#edc948" rx="2"><title>"##).count(), 1, "core 0's CC span in the CC colour");
    assert_eq!((cc_tid(0), cc_tid(3)), (CC_TID_BASE, CC_TID_BASE + 3));
    assert!(cc_tid(0) > errors_tid(63), "after every core's engine and error tracks");
}

/// A scratch path of this test's own.
fn scratch(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("nrt-trace-{name}-{}", std::process::id()))
}

#[test]
fn a_streamed_file_holds_what_the_trace_in_memory_holds() {
    let p = scratch("stream.json");
    let mut f = TraceFile::create("trace", &p).expect("the file");
    let mut t = Trace::new();
    for (pid, label) in [(0, "run"), (1, "device 1")] {
        f.add_inference(&report(), pid, label, Some(pid));
        t.add_inference(&report(), pid, label, Some(pid));
    }
    let written = f.written();
    f.finish().expect("finished");
    let text = std::fs::read_to_string(&p).expect("read back");
    let _ = std::fs::remove_file(&p);
    assert!(text.starts_with(json::OPENING) && text.ends_with(json::CLOSING), "{text}");
    let v: Value = serde_json::from_str(&text).expect("the file is JSON");
    assert_eq!(v["displayTimeUnit"], "ms");
    let streamed = v["traceEvents"].as_array().expect("traceEvents");
    assert_eq!(streamed.len() as u64, written);
    let memory = t.to_json();
    let memory = memory["traceEvents"].as_array().expect("traceEvents");
    // The same events in the same order; the same names, each track's before its first event.
    let not_meta = |v: &&Value| v["ph"] != "M";
    assert_eq!(
        streamed.iter().filter(not_meta).collect::<Vec<_>>(),
        memory.iter().filter(not_meta).collect::<Vec<_>>()
    );
    let meta = |a: &[Value]| {
        let mut m: Vec<String> = a.iter().filter(|e| e["ph"] == "M").map(Value::to_string).collect();
        m.sort();
        m
    };
    assert_eq!(meta(streamed), meta(memory));
    for (i, e) in streamed.iter().enumerate().filter(|(_, e)| e["ph"] != "M" && e["ph"] != "C") {
        let named =
            streamed[..i].iter().any(|m| m["name"] == "thread_name" && m["pid"] == e["pid"] && m["tid"] == e["tid"]);
        assert!(named, "track named before {e}");
    }
    // The pending DVE: a span from its START to the harvest's end, kickoff 100 + 80 us.
    let pending: Vec<&Value> = streamed.iter().filter(|e| e["cat"] == PENDING).collect();
    assert_eq!(pending.len(), 2, "one per device");
    assert_eq!((pending[0]["ts"].as_u64(), pending[0]["dur"].as_u64()), (Some(123), Some(180 - 123)));
    assert_eq!(pending[0]["tid"].as_u64(), Some(u64::from(engine_tid(1, 3))));
}

#[test]
fn a_streamed_file_whose_reader_leaves_fails_at_finish_naming_it() {
    let p = fifo("stream-leaves");
    let reader = {
        use std::os::unix::fs::OpenOptionsExt as _;
        std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(&p).expect("the reader")
    };
    let mut f = TraceFile::create("trace", &p).expect("a FIFO with a reader");
    drop(reader);
    // More than the writer's buffer, as each report has 2000 counter samples:
    // the writes after the reader left fail.
    for n in 0..2 {
        f.add_inference(&report(), 0, "run", Some(n));
    }
    let e = f.finish().unwrap_err();
    assert_eq!((e.step, e.errno()), (WriteStep::Write, Some(libc::EPIPE)));
    assert!(e.to_string().contains(&p.display().to_string()), "{e}");
    let _ = std::fs::remove_file(&p);
    let e = TraceFile::create("trace", std::path::Path::new("/nonexistent-dir/t.json")).unwrap_err();
    assert_eq!((e.step, e.errno()), (WriteStep::Create, Some(libc::ENOENT)));
}
