//! The pictures of a run: `nrt-sim run --trace FILE` writes Chrome trace-event
//! JSON whose spans are the report's engine times (a scenario and a 16-device
//! host run), `--timeline-svg FILE` an SVG that headless Chromium renders to a
//! picture that is not blank, and a file that cannot be written is an error
//! naming it. Without Chromium the rendering test says SKIPPED where it is
//! seen (`common::skip_missing_tool`: `cargo xtask ci`'s summary, the
//! terminal; with `CI` set and no skip log, it fails).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

mod common;

fn nrt_sim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nrt-sim")).args(args).output().expect("spawn nrt-sim")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A fresh directory of this test's own.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("nrt-sim-trace-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch dir");
    d
}

fn read_json(p: &Path) -> Value {
    let t = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&t).unwrap_or_else(|e| panic!("{} is not JSON: {e}", p.display()))
}

/// The trace's events of phase `ph`.
fn phase<'a>(v: &'a Value, ph: &'a str) -> Vec<&'a Value> {
    v["traceEvents"].as_array().expect("traceEvents is an array").iter().filter(|e| e["ph"] == ph).collect()
}

/// Every event has the fields its phase needs, with integer microseconds.
fn check_shape(v: &Value) {
    for e in v["traceEvents"].as_array().expect("traceEvents") {
        let ph = e["ph"].as_str().expect("ph");
        assert!(["X", "i", "C", "M"].contains(&ph), "{e}");
        assert!(e["pid"].is_u64() && e["tid"].is_u64() && e["name"].is_string(), "{e}");
        if ph != "M" {
            assert!(e["ts"].is_u64(), "{e}");
        }
        if ph == "X" {
            assert!(e["dur"].is_u64(), "{e}");
        }
    }
}

#[test]
fn the_nan_trace_parses_and_its_spans_are_the_reports_engine_times() {
    let d = scratch("nan");
    let (json, svg) = (d.join("nan.json"), d.join("nan.svg"));
    let o = nrt_sim(&[
        "run",
        "--scenario",
        "nan",
        "--json",
        "--trace",
        json.to_str().unwrap(),
        "--timeline-svg",
        svg.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}{}", text(&o.stdout), text(&o.stderr));
    let report: Value = serde_json::from_slice(&o.stdout).expect("the report is JSON");
    let trace = read_json(&json);
    check_shape(&trace);
    let spans: Vec<&Value> = phase(&trace, "X").into_iter().filter(|e| e["cat"] == "engine").collect();
    let mut expected = 0;
    for (c, core) in report["cores"].as_array().expect("cores").iter().enumerate() {
        for (i, e) in core["engines"].as_array().expect("engines").iter().enumerate() {
            let (Some(s), Some(end)) = (e["start_us"].as_u64(), e["end_us"].as_u64()) else { continue };
            expected += 1;
            let tid = nrt_trace::engine_tid(c as u32, i as u32);
            let on: Vec<&&Value> = spans.iter().filter(|x| x["tid"] == tid).collect();
            assert_eq!(on.len(), 1, "core {c} engine {i}");
            assert_eq!((on[0]["ts"].as_u64(), on[0]["dur"].as_u64()), (Some(s), Some(end - s)), "core {c} engine {i}");
            assert_eq!(on[0]["name"], e["name"], "core {c} engine {i}");
        }
    }
    assert_eq!(expected, 10, "the nan scenario finishes every engine");
    assert_eq!(spans.len(), expected);
    // Each core's CC span: the report's CC_START and CC_END, on its CC track.
    let cc: Vec<&Value> = phase(&trace, "X").into_iter().filter(|e| e["cat"] == "cc").collect();
    for (c, core) in report["cores"].as_array().expect("cores").iter().enumerate() {
        let (s, end) = (core["cc_start_us"].as_u64().expect("CC_START"), core["cc_end_us"].as_u64().expect("CC_END"));
        let on: Vec<&&Value> = cc.iter().filter(|x| x["tid"] == nrt_trace::cc_tid(c as u32)).collect();
        assert_eq!(on.len(), 1, "core {c}");
        assert_eq!((on[0]["ts"].as_u64(), on[0]["dur"].as_u64()), (Some(s), Some(end - s)), "core {c}");
        assert!(end > s, "core {c}: the SP's CC span has a length");
    }
    assert_eq!(cc.len(), 2, "one CC span per core");
    // The NaN record, at its own time, on core 0's error track; the kickoff; the fault.
    let inst = phase(&trace, "i");
    let rec: Vec<&&Value> = inst.iter().filter(|e| e["name"] == "error_record").collect();
    let ev = report["events"].as_array().expect("events");
    // The report's message says when: "... at 52 us: ...".
    let msg = ev.iter().find(|e| e["kind"] == "error_record").and_then(|e| e["message"].as_str()).expect("the record");
    let rec_ts: u64 = msg
        .split(" at ")
        .nth(1)
        .and_then(|t| t.split(" us").next())
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no time in {msg:?}"));
    assert_eq!(rec.len(), 1);
    assert_eq!(rec[0]["tid"].as_u64(), Some(u64::from(nrt_trace::errors_tid(0))));
    assert_eq!(rec[0]["ts"].as_u64(), Some(rec_ts));
    let kick: Vec<&&Value> = inst.iter().filter(|e| e["name"] == "kickoff").collect();
    assert_eq!(kick.len(), 1);
    assert_eq!(kick[0]["ts"], report["kickoff_us"]);
    assert!(inst.iter().any(|e| e["name"] == "fault nan:core=0"), "the injected fault is marked");
    // The poll passes count the report's steps.
    let passes: Vec<u64> = phase(&trace, "C")
        .iter()
        .filter(|e| e["name"] == "poll passes")
        .filter_map(|e| e["args"]["count"].as_u64())
        .collect();
    assert_eq!(passes.last().copied(), report["steps"].as_u64());
    assert!(passes.len() > 1, "{passes:?}");
    let s = std::fs::read_to_string(&svg).expect("the SVG");
    assert!(s.starts_with("<svg") && s.contains("core 0 errors") && s.contains("nrt-sim run --scenario nan"));
    assert!(s.contains("core 0 CC") && s.contains("core 1 CC"), "the CC lanes are drawn");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_16_device_host_trace_has_every_lanes_spans_at_its_engine_times() {
    use nrt_sim::hostrun::{run_host_traced, trace, HostConfig};
    let cfg = HostConfig { inferences: 2, ..HostConfig::default() };
    assert_eq!(cfg.devices, 16);
    let r = run_host_traced(&cfg).expect("the host run");
    let v: Value = serde_json::from_str(&trace(&r).to_json().to_string()).expect("the trace parses");
    check_shape(&v);
    let spans: Vec<&Value> = phase(&v, "X").into_iter().filter(|e| e["cat"] == "engine").collect();
    let mut expected = 0usize;
    for l in &r.lanes {
        assert_eq!(l.times.len(), 2, "device {} core {}", l.device, l.core);
        for (n, inf) in l.times.iter().enumerate() {
            for (i, c) in inf.cores.iter().enumerate() {
                let pcore = u32::from(l.core) * u32::from(cfg.lnc) + i as u32;
                for e in &c.engines {
                    let (Some(s), Some(end)) = (e.start_us, e.end_us) else { continue };
                    expected += 1;
                    let tid = nrt_trace::engine_tid(pcore, e.engine.index() as u32);
                    let hit = spans.iter().filter(|x| {
                        x["pid"] == u64::from(l.device)
                            && x["tid"] == tid
                            && x["args"]["inference"].as_str().and_then(|i| i.parse().ok()) == Some(n)
                    });
                    let hit: Vec<&&Value> = hit.collect();
                    assert_eq!(hit.len(), 1, "device {} pcore {pcore} {} inference {n}", l.device, e.engine.name());
                    assert_eq!((hit[0]["ts"].as_u64(), hit[0]["dur"].as_u64()), (Some(s), Some(end - s)));
                }
            }
        }
    }
    // 16 devices x 4 logical cores x 2 physical x 5 engines x 2 inferences, all clean.
    assert_eq!(expected, 16 * 4 * 2 * 5 * 2);
    assert_eq!(spans.len(), expected);
    let procs = phase(&v, "M").into_iter().filter(|e| e["name"] == "process_name").count();
    assert_eq!(procs, 16);
    // Per device, the poll passes and HEAD write-backs of its lanes as counters: the last
    // sample is the device's total, and each lane was polled at least once per inference.
    let counters = phase(&v, "C");
    for device in 0..16u16 {
        let lanes: Vec<_> = r.lanes.iter().filter(|l| l.device == device).collect();
        for (name, total) in [
            ("poll passes", lanes.iter().map(|l| l.passes_us.len()).sum::<usize>()),
            ("HEAD write-backs", lanes.iter().map(|l| l.head_writes_us.len()).sum::<usize>()),
        ] {
            assert!(total >= lanes.len() * 2, "device {device} {name}: {total}");
            let last = counters
                .iter()
                .filter(|e| e["pid"] == u64::from(device) && e["name"] == name)
                .filter_map(|e| e["args"]["count"].as_u64())
                .max();
            assert_eq!(last, Some(total as u64), "device {device} {name}");
        }
    }
    assert!(r.lanes.iter().all(|l| l.passes_us.windows(2).all(|w| w[0] <= w[1])), "each lane's passes in time order");
}

#[test]
fn the_host_run_cli_writes_a_trace_of_every_device() {
    let d = scratch("host");
    let json = d.join("host.json");
    let o = nrt_sim(&["run", "--devices", "16", "--trace", json.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let v = read_json(&json);
    check_shape(&v);
    let pids: std::collections::BTreeSet<u64> =
        phase(&v, "X").iter().filter(|e| e["cat"] == "engine").filter_map(|e| e["pid"].as_u64()).collect();
    assert_eq!(pids, (0..16).collect());
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_file_that_cannot_be_written_is_an_error_naming_it_and_the_reason() {
    let o = nrt_sim(&["run", "--scenario", "nan", "--trace", "/nonexistent-nrt-dir/t.json"]);
    assert_eq!(o.status.code(), Some(1));
    let e = text(&o.stderr);
    assert!(e.contains("/nonexistent-nrt-dir/t.json") && e.contains("ENOENT") && e.contains("trace"), "{e}");
    let dir = std::env::temp_dir();
    let o = nrt_sim(&["run", "--devices", "2", "--timeline-svg", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let e = text(&o.stderr);
    assert!(e.contains("EISDIR") && e.contains("timeline SVG"), "{e}");
    let o = nrt_sim(&["run", "--scenario", "all", "--trace", "/tmp/x.json"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
}

/// The browser the rendering test runs: Debian's `/usr/bin/chromium`, unless
/// `NRT_CHROMIUM` names another (the test of the missing-browser path names
/// one that is not there).
fn chromium() -> PathBuf {
    std::env::var_os("NRT_CHROMIUM").map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from)
}

/// Why headless Chromium cannot run here, if it cannot.
fn no_chromium() -> Option<String> {
    let b = chromium();
    match Command::new(&b).arg("--version").output() {
        Ok(o) if o.status.success() => None,
        Ok(o) => Some(format!("{} --version exited {:?}: {}", b.display(), o.status.code(), text(&o.stderr))),
        Err(e) => {
            Some(format!("{}: {e} (Debian's package `chromium`, which `cargo xtask ci`'s setup installs)", b.display()))
        }
    }
}

const RENDER_TEST: &str = "the_svg_of_a_scenario_renders_in_headless_chromium_to_a_picture_that_is_not_blank";

/// Without a browser the rendering test is never a silent `ok`: run alone in
/// a child of this test binary, with a browser that is not there, it says
/// SKIPPED with the reason on the terminal (past the harness's capture)
/// and passes; under `cargo xtask ci` (a skip log named, in a directory not
/// made yet) it also records the skip there, with its class (whether this
/// machine could have installed Chromium), for the stage summary; with `CI`
/// set and no skip log it fails, naming why.
#[test]
fn a_missing_browser_is_a_loud_skip_recorded_for_xtask_and_a_failure_in_ci() {
    let dir = scratch("nobrowser");
    let log = dir.join("not-made-yet").join("skips.txt");
    let child = |env: &[(&str, &std::ffi::OsStr)]| {
        let mut c = Command::new(std::env::current_exe().expect("this test binary"));
        c.args(["--exact", RENDER_TEST, "--test-threads", "1"])
            .env("NRT_CHROMIUM", dir.join("no-such-browser"))
            .env_remove("CI")
            .env_remove(nrt_abi::skip::SKIP_LOG);
        for (k, v) in env {
            c.env(k, v);
        }
        let o = c.output().expect("run the rendering test alone");
        (o.status.success(), format!("{}{}", text(&o.stdout), text(&o.stderr)))
    };
    let said = format!("!!! SKIPPED trace::{RENDER_TEST}: the SVG rendering test needs headless Chromium: ");
    // A person's `cargo test`: passes, and says so where it is seen.
    let (ok, out) = child(&[]);
    assert!(ok && out.contains(&said) && out.contains("no-such-browser"), "{out}");
    assert!(out.contains("1 passed"), "the test ran: {out}");
    // Under `cargo xtask ci`: the skip recorded, one line, with its reason.
    let (ok, out) = child(&[(nrt_abi::skip::SKIP_LOG, log.as_os_str())]);
    let recorded = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(ok && out.contains(&said), "{out}");
    assert_eq!(recorded.lines().count(), 1, "{recorded}");
    let skips = nrt_abi::skip::read_log(&recorded);
    let [s] = &skips[..] else { panic!("one skip: {recorded}") };
    assert_eq!(s.test, format!("trace::{RENDER_TEST}"));
    assert!(s.why.starts_with("the SVG rendering test needs headless Chromium: ") && s.why.contains("no-such-browser"));
    // Its class: whether this machine could have installed Chromium, with why not.
    match nrt_abi::skip::installable("chromium") {
        Ok(()) => assert_eq!(s.class, nrt_abi::skip::SkipClass::Installable, "{recorded}"),
        Err(why) => {
            assert_eq!(s.class, nrt_abi::skip::SkipClass::NotInstallable, "{recorded}");
            assert!(s.why.contains(&why), "{recorded}");
        }
    }
    // In a CI without xtask: it fails, saying why.
    let (ok, out) = child(&[("CI", std::ffi::OsStr::new("true"))]);
    assert!(!ok && out.contains("CI is set and no skip log") && out.contains("no-such-browser"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_svg_of_a_scenario_renders_in_headless_chromium_to_a_picture_that_is_not_blank() {
    if let Some(why) = no_chromium() {
        common::skip_missing_tool("chromium", &format!("the SVG rendering test needs headless Chromium: {why}"));
        return;
    }
    let d = scratch("render");
    let (svg, png_path, profile) = (d.join("nan.svg"), d.join("nan.png"), d.join("profile"));
    let o = nrt_sim(&["run", "--scenario", "nan", "--timeline-svg", svg.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let s = std::fs::read_to_string(&svg).expect("the SVG");
    let height: u32 = s
        .split("height=\"")
        .nth(1)
        .and_then(|t| t.split('"').next())
        .and_then(|h| h.parse().ok())
        .expect("the SVG's height");
    let mut child = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", png_path.display()))
        .arg(format!("--window-size=1200,{height}"))
        .arg(format!("file://{}", svg.display()))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn chromium");
    // Bounded: a minute for one screenshot, then the browser is ended.
    let mut status = None;
    for _ in 0..600 {
        if let Some(s) = child.try_wait().expect("wait chromium") {
            status = Some(s);
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
        panic!("chromium did not finish the screenshot within 60 s");
    }
    let file = std::fs::File::open(&png_path).expect("chromium wrote the screenshot");
    let mut reader = png::Decoder::new(std::io::BufReader::new(file)).read_info().expect("a PNG");
    let mut buf = vec![0; reader.output_buffer_size().expect("PNG size")];
    let info = reader.next_frame(&mut buf).expect("the PNG's frame");
    assert_eq!((info.width, info.height), (1200, height));
    let px = info.color_type.samples();
    assert!(px >= 3, "an RGB(A) screenshot, got {:?}", info.color_type);
    let mut colours = std::collections::BTreeMap::new();
    for p in buf[..info.buffer_size()].chunks_exact(px) {
        *colours.entry((p[0], p[1], p[2])).or_insert(0u64) += 1;
    }
    let total: u64 = colours.values().sum();
    let background = colours.values().max().copied().unwrap_or(0);
    // The five engine colours of the bars, each over a bar's worth of pixels.
    for (hex, name) in [(0x4e79a7u32, "PE"), (0xf28e2b, "ACT"), (0x59a14f, "POOL"), (0xb07aa1, "DVE"), (0x76b7b2, "SP")]
    {
        let rgb = ((hex >> 16) as u8, (hex >> 8) as u8, hex as u8);
        let n = colours.get(&rgb).copied().unwrap_or(0);
        assert!(n > 1000, "{name}'s bars ({rgb:?}) cover {n} pixels");
    }
    assert!(colours.len() > 50, "{} colours", colours.len());
    assert!(background < total * 9 / 10, "one colour covers {background} of {total} pixels");
    let _ = std::fs::remove_dir_all(&d);
}
