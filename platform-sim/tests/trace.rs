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

/// The host run's spans, streamed to a file as the run goes: each is at the
/// engine times of the inference the run handed over, tagged with its number.
#[test]
fn a_16_device_host_trace_streamed_to_its_file_has_every_lanes_spans_at_its_engine_times() {
    use nrt_sim::run::devices::{name_lane, run_host_observed, trace_inference, HostConfig, InferenceTimes};
    use nrt_trace::Sink as _;
    let cfg = HostConfig { inferences: 2, ..HostConfig::default() };
    assert_eq!(cfg.devices, 16);
    let d = scratch("host-stream");
    let path = d.join("host.json");
    let mut file = nrt_trace::TraceFile::create("trace", &path).expect("the trace file");
    let mut seen: Vec<(u16, u8, u32, InferenceTimes)> = Vec::new();
    let r = run_host_observed(&cfg, &mut |f| {
        if f.n == 0 {
            name_lane(&mut file, f.device, f.core);
        }
        trace_inference(&mut file, cfg.lnc, &f);
        seen.push((f.device, f.core, f.n, f.times.clone()));
    })
    .expect("the host run");
    for device in 0..16u16 {
        let lanes: Vec<_> = r.lanes.iter().filter(|l| l.device == device).collect();
        let passes: Vec<&nrt_trace::Samples> = lanes.iter().map(|l| &l.passes).collect();
        file.add_samples(u32::from(device), "poll passes", &nrt_trace::counter::merge(&passes));
    }
    file.finish().expect("the trace written");
    let v = read_json(&path);
    check_shape(&v);
    let spans: Vec<&Value> = phase(&v, "X").into_iter().filter(|e| e["cat"] == "engine").collect();
    let mut expected = 0usize;
    for (device, core, n, inf) in &seen {
        for (i, c) in inf.cores.iter().enumerate() {
            let pcore = u32::from(*core) * u32::from(cfg.lnc) + i as u32;
            for e in &c.engines {
                let (Some(s), Some(end)) = (e.start_us, e.end_us) else { continue };
                expected += 1;
                let tid = nrt_trace::engine_tid(pcore, e.engine.index() as u32);
                let hit: Vec<&&Value> = spans
                    .iter()
                    .filter(|x| {
                        x["pid"] == u64::from(*device)
                            && x["tid"] == tid
                            && x["args"]["inference"].as_str().and_then(|i| i.parse().ok()) == Some(*n)
                    })
                    .collect();
                assert_eq!(hit.len(), 1, "device {device} pcore {pcore} {} inference {n}", e.engine.name());
                assert_eq!((hit[0]["ts"].as_u64(), hit[0]["dur"].as_u64()), (Some(s), Some(end - s)));
            }
        }
    }
    // 16 devices x 4 logical cores x 2 physical x 5 engines x 2 inferences, all clean.
    assert_eq!(seen.len(), 16 * 4 * 2);
    assert_eq!(expected, 16 * 4 * 2 * 5 * 2);
    assert_eq!(spans.len(), expected);
    assert!(phase(&v, "X").iter().all(|e| e["cat"] != nrt_trace::PENDING), "a clean run leaves nothing pending");
    let procs = phase(&v, "M").into_iter().filter(|e| e["name"] == "process_name").count();
    assert_eq!(procs, 16);
    // Per device, the poll passes of its lanes as one counter: the last sample is the total.
    let counters = phase(&v, "C");
    for device in 0..16u16 {
        let total: u64 = r.lanes.iter().filter(|l| l.device == device).map(|l| l.passes.total()).sum();
        assert!(total >= 4 * 2, "device {device}: each lane polled at least once per inference: {total}");
        let last = counters
            .iter()
            .filter(|e| e["pid"] == u64::from(device) && e["name"] == "poll passes")
            .filter_map(|e| e["args"]["count"].as_u64())
            .max();
        assert_eq!(last, Some(total), "device {device}");
    }
    let _ = std::fs::remove_dir_all(&d);
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

/// A host run's streamed trace against its report: every harvest span has
/// the status the report gives that lane's inference, in order; the hung
/// device's pending engines are spans to the harvest's end on their engine's
/// track, and nowhere else; the SVG has a row per device, the hung marks and
/// names the hung engines.
#[test]
fn the_host_run_cli_streams_a_trace_whose_harvests_are_the_reports() {
    let d = scratch("host-report");
    let (json, svg) = (d.join("host.json"), d.join("host.svg"));
    let o = nrt_sim(&[
        "run",
        "--devices",
        "4",
        "--inferences",
        "3",
        "--inject",
        "hang:core=0,engine=DVE",
        "--fault-devices",
        "2",
        "--timeout-s",
        "1",
        "--json",
        "--trace",
        json.to_str().unwrap(),
        "--timeline-svg",
        svg.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let report: Value = serde_json::from_slice(&o.stdout).expect("the report is JSON");
    let v = read_json(&json);
    check_shape(&v);
    let harvests: Vec<&Value> = phase(&v, "X").into_iter().filter(|e| e["name"] == "harvest").collect();
    let lanes = report["lanes"].as_array().expect("lanes");
    assert_eq!(lanes.len(), 4 * 4);
    for l in lanes {
        let (device, core) = (l["device"].as_u64().unwrap(), l["core"].as_u64().unwrap());
        let tid = nrt_sim::run::devices::lane_tid(core as u8);
        for (n, r) in l["results"].as_array().expect("results").iter().enumerate() {
            let hit: Vec<&&Value> = harvests
                .iter()
                .filter(|h| {
                    h["pid"] == device
                        && h["tid"] == tid
                        && h["args"]["inference"].as_str().and_then(|i| i.parse().ok()) == Some(n)
                })
                .collect();
            assert_eq!(hit.len(), 1, "device {device} core {core} inference {n}");
            let status = hit[0]["args"]["status"].as_str().expect("its status");
            assert_eq!(status.split(' ').next().and_then(|c| c.parse::<u64>().ok()), r["status"].as_u64(), "{status}");
        }
    }
    assert_eq!(harvests.len(), 4 * 4 * 3);
    // Device 2's lanes: core 0 of each (physical core 2k) leaves DVE pending, every inference.
    let pending: Vec<&Value> = phase(&v, "X").into_iter().filter(|e| e["cat"] == nrt_trace::PENDING).collect();
    assert_eq!(pending.len(), 4 * 3, "one per lane of device 2 per inference");
    for p in &pending {
        assert_eq!(p["pid"], 2);
        let tid = p["tid"].as_u64().unwrap() as u32;
        assert!((0..4).any(|k| tid == nrt_trace::engine_tid(2 * k, 3)), "a DVE track of a core 0: {p}");
        let end = p["ts"].as_u64().unwrap() + p["dur"].as_u64().unwrap();
        let harvest_end = harvests
            .iter()
            .filter(|h| h["pid"] == 2 && h["args"]["inference"] == p["args"]["inference"])
            .map(|h| h["ts"].as_u64().unwrap() + h["dur"].as_u64().unwrap())
            .collect::<Vec<_>>();
        assert!(harvest_end.contains(&end), "pending to its harvest's end: {p}");
        assert!(p["dur"].as_u64().unwrap() >= 900_000, "to the 1 s timeout: {p}");
    }
    let s = std::fs::read_to_string(&svg).expect("the SVG");
    assert!(s.contains(&format!(r#"height="{}""#, nrt_trace::summary_height(4))), "a row per device");
    assert_eq!(s.matches(r#"<text class="device""#).count(), 4);
    assert!(s.matches(r#"<g class="hung">"#).count() > 1, "hung marks beyond the legend's");
    assert!(s.contains("hung: core 0 DVE x3, core 2 DVE x3, core 4 DVE x3, core 6 DVE x3"), "{s}");
    assert_eq!(s.matches("12 harvests: 12 x 5 NRT_TIMEOUT<").count(), 1, "device 2 times out: {s}");
    assert_eq!(s.matches("12 harvests: 12 x 0 NRT_SUCCESS<").count(), 3, "the others do not: {s}");
    let _ = std::fs::remove_dir_all(&d);
}

/// Peak resident memory of `nrt-sim ARGS`, KiB (`wait4`'s `ru_maxrss`).
// `wait4` reaps the child: clippy sees no `wait()`.
#[allow(clippy::zombie_processes)]
fn peak_rss_kib(args: &[&str]) -> (i32, i64) {
    let child = Command::new(env!("CARGO_BIN_EXE_nrt-sim"))
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn nrt-sim");
    let (mut status, mut usage) = (0i32, unsafe { std::mem::zeroed::<libc::rusage>() });
    // SAFETY: the child is ours and not yet reaped; status and usage are valid for writes.
    let got = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    assert_eq!(got, child.id() as libc::pid_t, "wait4: {}", std::io::Error::last_os_error());
    (libc::WEXITSTATUS(status), usage.ru_maxrss)
}

/// `--trace` and `--timeline-svg` stream: a run of many inferences keeps no
/// more than a small bound whatever their number (the trace is written as it
/// is made, the SVG drawn from a bounded summary).
#[test]
fn a_long_host_runs_pictures_take_bounded_memory() {
    const BOUND_KIB: i64 = 64 * 1024;
    let d = scratch("host-rss");
    let (json, svg) = (d.join("host.json"), d.join("host.svg"));
    let (rc, kib) = peak_rss_kib(&[
        "run",
        "--devices",
        "4",
        "--inferences",
        "200",
        "--trace",
        json.to_str().unwrap(),
        "--timeline-svg",
        svg.to_str().unwrap(),
    ]);
    assert_eq!(rc, 0);
    assert!(kib < BOUND_KIB, "peak RSS {kib} KiB, bound {BOUND_KIB} KiB");
    let v = read_json(&json);
    let spans = phase(&v, "X").into_iter().filter(|e| e["cat"] == "engine").count();
    assert_eq!(spans, 4 * 4 * 2 * 5 * 200, "every span written");
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

/// The height an SVG declares, px.
fn svg_height(s: &str) -> u32 {
    s.split("height=\"")
        .nth(1)
        .and_then(|t| t.split('"').next())
        .and_then(|h| h.parse().ok())
        .expect("the SVG's height")
}

/// A screenshot: its pixels, row by row, 1200 wide.
struct Picture {
    px: Vec<(u8, u8, u8)>,
}

impl Picture {
    /// The count of pixels of each colour.
    fn colours(&self) -> std::collections::BTreeMap<(u8, u8, u8), u64> {
        let mut colours = std::collections::BTreeMap::new();
        for p in &self.px {
            *colours.entry(*p).or_insert(0u64) += 1;
        }
        colours
    }

    /// The pixels of the box `x0..x1`, `y0..y1` that are red (the marks' red,
    /// antialiased or under the hatch's opacity: strong red, weak green and blue).
    fn reddish(&self, (x0, y0): (u32, u32), (x1, y1): (u32, u32)) -> usize {
        (y0..y1)
            .flat_map(|y| (x0..x1).map(move |x| (x, y)))
            .filter_map(|(x, y)| self.px.get((y * 1200 + x) as usize))
            .filter(|(r, g, b)| *r > 180 && *g < 140 && *b < 140)
            .count()
    }
}

/// `svg` rendered by headless Chromium at 1200 x `height` (a minute at most).
fn render(svg: &Path, height: u32) -> Picture {
    let d = svg.parent().expect("the SVG's directory");
    let stem = svg.file_stem().and_then(|s| s.to_str()).unwrap_or("svg");
    let (png_path, profile) = (d.join(format!("{stem}.png")), d.join(format!("{stem}-profile")));
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
    Picture { px: buf[..info.buffer_size()].chunks_exact(px).map(|p| (p[0], p[1], p[2])).collect() }
}

/// The pixels of colour `hex` (`0xRRGGBB`).
fn pixels(colours: &std::collections::BTreeMap<(u8, u8, u8), u64>, hex: u32) -> u64 {
    colours.get(&((hex >> 16) as u8, (hex >> 8) as u8, hex as u8)).copied().unwrap_or(0)
}

#[test]
fn the_svg_of_a_scenario_renders_in_headless_chromium_to_a_picture_that_is_not_blank() {
    if let Some(why) = no_chromium() {
        common::skip_missing_tool("chromium", &format!("the SVG rendering test needs headless Chromium: {why}"));
        return;
    }
    let d = scratch("render");
    let svg = d.join("nan.svg");
    let o = nrt_sim(&["run", "--scenario", "nan", "--timeline-svg", svg.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let s = std::fs::read_to_string(&svg).expect("the SVG");
    let colours = render(&svg, svg_height(&s)).colours();
    let total: u64 = colours.values().sum();
    let background = colours.values().max().copied().unwrap_or(0);
    // The five engine colours of the bars, each over a bar's worth of pixels.
    for (hex, name) in [(0x4e79a7u32, "PE"), (0xf28e2b, "ACT"), (0x59a14f, "POOL"), (0xb07aa1, "DVE"), (0x76b7b2, "SP")]
    {
        let n = pixels(&colours, hex);
        assert!(n > 1000, "{name}'s bars ({hex:06x}) cover {n} pixels");
    }
    assert!(colours.len() > 50, "{} colours", colours.len());
    assert!(background < total * 9 / 10, "one colour covers {background} of {total} pixels");
    let _ = std::fs::remove_dir_all(&d);
}

/// The hang's picture says which engine of which core hung: its lane has the
/// hatched pending bar to the timeout and the hung mark at its end (red on
/// the screen beyond the legend's), the axis breaks over the wait so the
/// work is wide, and the three marks at the timeout do not overlap.
#[test]
fn the_hangs_svg_shows_the_hung_engine_to_the_timeout_and_the_work_at_a_readable_scale() {
    let d = scratch("hang");
    let svg = d.join("hang.svg");
    let o = nrt_sim(&["run", "--scenario", "hang", "--timeline-svg", svg.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let s = std::fs::read_to_string(&svg).expect("the SVG");
    // The structure: the hung mark (legend's and the engine's), on core 0 DVE's lane.
    assert_eq!(s.matches(r#"<g class="hung">"#).count(), 2, "{s}");
    assert!(s.contains(">hung</text>") && s.contains(">pending (no END)</text>"), "the legend names them");
    let lanes: Vec<&str> = s.lines().filter(|l| l.starts_with(r#"<text x="6" y=""#)).collect();
    let dve = lanes.iter().position(|l| l.contains(">core 0 DVE<")).expect("core 0 DVE's lane");
    let lane_y = 30 + dve as u32 * 18;
    let pending = s.lines().find(|l| l.starts_with(r#"<rect class="pending""#)).expect("the pending bar");
    assert!(pending.contains(&format!(r#"y="{}""#, lane_y + 3)), "on core 0 DVE's lane: {pending}");
    let hung = s.lines().filter(|l| l.starts_with(r#"<g class="hung">"#)).nth(1).expect("the engine's hung mark");
    assert!(hung.contains(&format!(r#"cy="{}""#, lane_y + 9)) && hung.contains("DVE pending"), "{hung}");
    // The axis breaks: the engines' work (tens to hundreds of microseconds) spans most of the width.
    assert!(s.contains(r#"class="axis-break""#) && s.contains("the axis skips"), "{s}");
    let width_of = |l: &str| -> f64 {
        l.split(" width=\"").nth(1).and_then(|w| w.split('"').next()).and_then(|w| w.parse().ok()).unwrap_or(0.0)
    };
    let widest =
        s.lines().filter(|l| l.contains(r##"fill="#59a14f" rx="2"><title>"##)).map(width_of).fold(0.0, f64::max);
    assert!(widest > 400.0, "the POOL bars are drawn wide, not as slivers: {widest} px");
    // The marks of one lane keep apart: every red diamond's centre at least a mark's width from the next.
    let mut diamonds: Vec<(u32, f64)> = s
        .lines()
        .filter(|l| l.starts_with("<path d=\"M ") && l.contains(r##"fill="#d62728"><title>"##))
        .filter_map(|l| {
            let n: Vec<f64> = l.split(' ').filter_map(|w| w.parse().ok()).collect();
            // M cx top L right cy ...: the centre's x and the lane's middle.
            Some((*n.get(3)? as u32, *n.first()?))
        })
        .collect();
    diamonds.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    assert!(diamonds.len() >= 4, "the fault and the three timeout marks: {diamonds:?}");
    for w in diamonds.windows(2) {
        assert!(w[0].0 != w[1].0 || w[1].1 - w[0].1 >= 10.0, "overlapping marks: {diamonds:?}");
    }
    let h = svg_height(&s);
    assert!(h < 400, "a readable height: {h}");
    if let Some(why) = no_chromium() {
        common::skip_missing_tool("chromium", &format!("the hang's SVG rendering needs headless Chromium: {why}"));
        let _ = std::fs::remove_dir_all(&d);
        return;
    }
    let picture = render(&svg, h);
    // On the screen: the hung mark (a disc of radius 6 with a white cross) at
    // its centre, and the hatch's red stripes along the pending bar.
    let number = |l: &str, key: &str| -> u32 {
        l.split(&format!(" {key}=\""))
            .nth(1)
            .and_then(|v| v.split(['"', '.']).next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    let (cx, cy) = (number(hung, "cx"), number(hung, "cy"));
    let disc = picture.reddish((cx - 6, cy - 6), (cx + 7, cy + 7));
    assert!(disc > 40, "the hung mark at ({cx}, {cy}) is red on the screen: {disc} px");
    let (bx, bw) = (number(pending, "x"), number(pending, "width"));
    let hatch = picture.reddish((bx + 10, lane_y + 4), (bx + bw.min(400), lane_y + 14));
    assert!(hatch > 500, "the pending bar's hatch is on the screen: {hatch} px");
    assert!(pixels(&picture.colours(), 0xb07aa1) > 1000, "core 1's DVE bar is drawn");
    let _ = std::fs::remove_dir_all(&d);
}

/// A 16-device host run's SVG is a row per device at a readable height; with
/// a hang on two devices, their rows carry the hung marks and name the hung
/// engines, the others say they completed.
#[test]
fn a_16_device_host_runs_svg_is_a_readable_row_per_device() {
    let d = scratch("host-svg");
    let svg = d.join("host.svg");
    let o = nrt_sim(&[
        "run",
        "--devices",
        "16",
        "--inferences",
        "4",
        "--inject",
        "hang:core=1,engine=PE",
        "--fault-devices",
        "3,9",
        "--timeout-s",
        "1",
        "--timeline-svg",
        svg.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let s = std::fs::read_to_string(&svg).expect("the SVG");
    let h = svg_height(&s);
    assert!(h <= 600, "16 devices in at most 600 px, got {h}");
    let rows: Vec<&str> = s.lines().filter(|l| l.starts_with(r#"<text class="device""#)).collect();
    assert_eq!(rows.len(), 16);
    let hung: Vec<&str> = s.lines().filter(|l| l.starts_with(r#"<text class="hung-engines""#)).collect();
    assert_eq!(hung.len(), 2, "devices 3 and 9: {hung:?}");
    assert!(
        hung.iter().all(|l| l.contains("hung: core 1 PE x4, core 3 PE x4, core 5 PE x4, core 7 PE x4")),
        "{hung:?}"
    );
    // Each hung row's marks sit in that row (rows are 26 px from y = 30).
    for (device, l) in [(3u32, hung[0]), (9, hung[1])] {
        let y = 30 + device * 26;
        assert!(l.contains(&format!(r#"y="{}""#, y + 23)), "{l}");
        let marks =
            s.lines().filter(|m| m.starts_with(r#"<g class="hung">"#) && m.contains(&format!(r#"cy="{}""#, y + 19)));
        assert!(marks.count() >= 1, "device {device}'s hung marks");
    }
    assert_eq!(s.matches("16 harvests: 16 x 5 NRT_TIMEOUT<").count(), 2, "{s}");
    assert_eq!(s.matches("16 harvests: 16 x 0 NRT_SUCCESS<").count(), 14, "{s}");
    if let Some(why) = no_chromium() {
        common::skip_missing_tool("chromium", &format!("the host SVG rendering needs headless Chromium: {why}"));
        let _ = std::fs::remove_dir_all(&d);
        return;
    }
    let picture = render(&svg, h);
    for device in [3u32, 9] {
        let y = 30 + device * 26;
        let red = picture.reddish((90, y + 12), (840, y + 26));
        assert!(red > 300, "device {device}'s pending strip and hung marks are on the screen: {red} px");
    }
    let healthy = picture.reddish((90, 30 + 26), (840, 30 + 2 * 26));
    assert_eq!(healthy, 0, "device 1's row has no red");
    let _ = std::fs::remove_dir_all(&d);
}
