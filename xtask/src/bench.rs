//! `cargo xtask bench`: run the criterion benches and write a summary into
//! BENCHMARKS.md between the `xtask-bench` markers, with the machine, the date,
//! the commit, every median, and each goal's verdict. Ratios are always computed
//! from two benchmarks of the same run.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde_json::Value;

use crate::{cargo, Runner};

const BEGIN: &str = "<!-- xtask-bench:begin -->";
const END: &str = "<!-- xtask-bench:end -->";

/// A goal: either a median under a bound, or a speed ratio against a baseline of
/// the same run, `baseline_median / median >= min`.
enum Goal {
    MaxNs(f64),
    RatioMin { baseline: &'static str, min: f64 },
}

/// The goals, by benchmark id.
const GOALS: &[(&str, &str, Goal)] = &[
    (
        "decode/notification_decode/4096",
        "entry decode vs memcpy of the same bytes",
        Goal::RatioMin { baseline: "decode/memcpy/4096", min: 0.5 },
    ),
    ("wait_core_empty_sweep/cores/2", "empty WAIT_CORE sweep, 2x5 rings", Goal::MaxNs(100.0)),
    ("harvest_init_to_done/cores/2", "INIT -> DONE harvest, 2x5 engines", Goal::MaxNs(2000.0)),
    (
        "addr_rewrite/vring/1048576",
        "relocation of 1 Mi BDs vs memcpy of the same bytes",
        Goal::RatioMin { baseline: "addr_rewrite/memcpy/1048576", min: 0.5 },
    ),
    (
        "addr_rewrite/vring/1048576",
        "relocation vs a plain transcription of the seed's loop",
        Goal::RatioMin { baseline: "addr_rewrite/seed_loop/1048576", min: 1.0 },
    ),
];

/// Markers of the scale sweep's table in BENCHMARKS.md, for `cargo xtask bench --scale`.
const SCALE_BEGIN: &str = "<!-- xtask-bench-scale:begin -->";
const SCALE_END: &str = "<!-- xtask-bench-scale:end -->";

/// `cargo xtask bench --scale`: the host sweep alone, `nrt-bench scale --sweep`
/// at U = 100 us, 1 ms and 10 ms for every shape, about 2 minutes. Its table is
/// printed and written into BENCHMARKS.md between the scale markers, with
/// `uptime` before and after, as the machine's load is part of the result.
fn run_scale(run: &mut Runner, root: &Path) {
    let nb = root.join("target/nrt-bench");
    let _ = fs::remove_file(nb.join("scale.json"));
    let before = sh("uptime", &[]);
    let mut c = cargo();
    c.args(["run", "--release", "-p", "nrt-bench", "--", "scale", "--sweep", "--secs", "1.5"]);
    if !run.cmd("nrt-bench scale --sweep --secs 1.5", &mut c) {
        return;
    }
    let after = sh("uptime", &[]);
    let t = Instant::now();
    let table = read_json(&nb.join("scale.json")).map(|x| render_scale(&x)).unwrap_or_default();
    let ok = !table.is_empty();
    if ok {
        let text = format!(
            "{SCALE_BEGIN}\n\nRun by `cargo xtask bench --scale` on {} ({} CPUs), commit {}.\n\n- `uptime` before: {}\n- `uptime` after: {}\n{table}\n{SCALE_END}",
            cpu_model(),
            cores(),
            sh("git", &["rev-parse", "--short", "HEAD"]),
            before.trim(),
            after.trim()
        );
        println!("\n{text}");
        let path = root.join("BENCHMARKS.md");
        let old = fs::read_to_string(&path).unwrap_or_default();
        let new = match (old.find(SCALE_BEGIN), old.find(SCALE_END)) {
            (Some(b), Some(e)) if e > b => format!("{}{text}{}", &old[..b], &old[e + SCALE_END.len()..]),
            _ => format!("{}\n{text}\n", old.trim_end()),
        };
        if let Err(e) = fs::write(&path, new) {
            eprintln!("could not write BENCHMARKS.md: {e}");
        }
    }
    run.record("scale sweep table into BENCHMARKS.md", t.elapsed().as_secs_f64(), ok);
}

/// The sweep's table: one row per shape and U.
fn render_scale(x: &Value) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\n`nrt-bench scale --sweep`: {} devices x {} logical cores, each inference U +/- {} % (1 in {} lasts {}x U), {} s per shape.\n",
        f(x, &["devices"]),
        f(x, &["cores_per_device"]),
        f(x, &["jitter_pct"]),
        f(x, &["outlier_every"]),
        f(x, &["outlier_factor"]),
        f(x, &["secs_per_shape"])
    );
    let _ = writeln!(s, "| U | shape | notice p50 | notice p99 | harvest CPU (cores) | requests/s |");
    let _ = writeln!(s, "|---|---|---|---|---|---|");
    for r in x.get("runs").and_then(Value::as_array).cloned().unwrap_or_default() {
        let u = f(&r, &["work_us"]);
        for sh in r.get("shapes").and_then(Value::as_array).cloned().unwrap_or_default() {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {:.2} | {:.0} |",
                fmt_ns(u * 1000.0),
                sh.get("name").and_then(Value::as_str).unwrap_or("?"),
                fmt_ns(f(&sh, &["notice", "p50_ns"])),
                fmt_ns(f(&sh, &["notice", "p99_ns"])),
                f(&sh, &["cpu_cores"]),
                f(&sh, &["requests_per_s"])
            );
        }
    }
    s
}

pub fn run(run: &mut Runner, root: &Path, quick: bool) {
    if std::env::args().any(|a| a == "--scale") {
        run_scale(run, root);
        return;
    }
    if std::env::args().any(|a| a == "--summarise") {
        // Re-render the summary from the results already on disk.
        let crit = root.join("target/criterion");
        let medians = collect(&crit);
        let mut summary = render(&medians).replacen(
            "- commit: ",
            "- commit (when this summary was re-rendered with `--summarise`; the results are the last run's): ",
            1,
        );
        summary.push_str(&render_threads(&root.join("target/nrt-bench")));
        let ok = !medians.is_empty() && write_summary(&root.join("BENCHMARKS.md"), &summary).is_ok();
        run.record("summarise into BENCHMARKS.md (from results on disk)", 0.0, ok);
        return;
    }
    let mut benches: Vec<&str> = vec!["harvest"];
    if root.join("core/benches/dma.rs").exists() {
        benches.push("dma");
    }
    let crit = root.join("target/criterion");
    for b in &benches {
        let mut c = cargo();
        c.args(["bench", "-p", "nrt-core", "--bench", b, "--"]);
        if quick {
            c.args(["--warm-up-time", "1", "--measurement-time", "2"]);
        }
        if !run.cmd(&format!("bench {b}"), &mut c) {
            return;
        }
    }
    // nrt-bench's two-thread measurements: latency, ring transfer, XU.
    let nb = root.join("target/nrt-bench");
    for f in ["latency.json", "ring.json", "xu.json", "sys.json", "scale.json", "exec.json"] {
        let _ = fs::remove_file(nb.join(f));
    }
    let mut c = cargo();
    c.args(["run", "--release", "-p", "nrt-bench", "--", "all"]);
    if quick {
        c.args(["--inferences", "2000", "--secs", "0.5"]);
    }
    run.cmd("nrt-bench all (latency, ring transfer, XU, OS floor, host scale)", &mut c);
    run_exec(run, root, quick);
    let t = Instant::now();
    let medians = collect(&crit);
    let ok = !medians.is_empty();
    if ok {
        let mut summary = render(&medians);
        summary.push_str(&render_threads(&nb));
        println!("\n{summary}");
        if let Err(e) = write_summary(&root.join("BENCHMARKS.md"), &summary) {
            eprintln!("could not write BENCHMARKS.md: {e}");
        } else {
            println!("wrote the summary into BENCHMARKS.md");
        }
    } else {
        eprintln!("no criterion estimates under {}", crit.display());
    }
    run.record("summarise into BENCHMARKS.md", t.elapsed().as_secs_f64(), ok);
}

/// `nrt-bench exec`, the runtime API's round trip against `Session::execute`,
/// under the simulated driver, which needs seccomp user notification.
fn run_exec(run: &mut Runner, root: &Path, quick: bool) {
    const NAME: &str = "nrt-bench exec under nrt-sim driver (the runtime API's round trip)";
    let avail = fs::read_to_string("/proc/sys/kernel/seccomp/actions_avail").unwrap_or_default();
    if !avail.split_whitespace().any(|a| a == "user_notif") {
        run.skip(NAME, "nrt-sim driver needs seccomp user notification, which this kernel does not offer");
        return;
    }
    let mut c = cargo();
    c.args(["build", "--release", "-p", "nrt-sim", "--bin", "nrt-sim", "-p", "nrt-bench"]);
    if !run.cmd("build nrt-sim and nrt-bench (release)", &mut c) {
        return;
    }
    let rel = root.join("target/release");
    let mut c = Command::new(rel.join("nrt-sim"));
    c.args(["driver", "--limit-s", "300", "--"]).arg(rel.join("nrt-bench"));
    c.args(["exec", "--rounds", if quick { "200" } else { "1000" }]);
    run.cmd(NAME, &mut c);
}

/// Every `(full_id, median_ns)` under `target/criterion`.
fn collect(dir: &Path) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n == "benchmark.json")
                && p.parent().is_some_and(|q| q.ends_with("new"))
            {
                if let Some(m) = read_median(&p) {
                    out.push(m);
                }
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn read_median(benchmark_json: &Path) -> Option<(String, f64)> {
    let b: Value = serde_json::from_str(&fs::read_to_string(benchmark_json).ok()?).ok()?;
    let id = b.get("full_id")?.as_str()?.to_string();
    let est: PathBuf = benchmark_json.with_file_name("estimates.json");
    let e: Value = serde_json::from_str(&fs::read_to_string(est).ok()?).ok()?;
    let median = e.get("median")?.get("point_estimate")?.as_f64()?;
    Some((id, median))
}

fn fmt_ns(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.2} us", ns / 1e3)
    } else {
        format!("{ns:.1} ns")
    }
}

fn render(medians: &[(String, f64)]) -> String {
    let get = |id: &str| medians.iter().find(|(i, _)| i == id).map(|(_, m)| *m);
    let mut s = String::new();
    let _ = writeln!(s, "## Latest run (`cargo xtask bench`)\n");
    let _ = writeln!(s, "- machine: {} ({} logical CPUs)", cpu_model(), cores());
    let _ = writeln!(s, "- date: {}", sh("date", &["-u", "+%Y-%m-%d %H:%M UTC"]));
    let _ = writeln!(s, "- commit: {}", sh("git", &["rev-parse", "--short", "HEAD"]));
    let _ = writeln!(s, "- rustc: {}", sh("rustc", &["--version"]));
    let _ = writeln!(s, "- statistic: criterion median of each benchmark; ratios from two medians of this same run\n");
    let _ = writeln!(s, "| goal | measured | target | verdict |");
    let _ = writeln!(s, "|---|---|---|---|");
    for (id, what, goal) in GOALS {
        let Some(m) = get(id) else { continue };
        let (measured, target, pass) = match goal {
            Goal::MaxNs(max) => (fmt_ns(m), format!("<= {}", fmt_ns(*max)), m <= *max),
            Goal::RatioMin { baseline, min } => match get(baseline) {
                Some(b) => {
                    let r = b / m;
                    (format!("{r:.2}x ({} vs {})", fmt_ns(m), fmt_ns(b)), format!(">= {min}x"), r >= *min)
                }
                None => continue,
            },
        };
        let _ = writeln!(s, "| {what} | {measured} | {target} | {} |", if pass { "met" } else { "MISSED" });
    }
    let _ = writeln!(s, "\n| benchmark | median |");
    let _ = writeln!(s, "|---|---|");
    for (id, m) in medians {
        let _ = writeln!(s, "| `{id}` | {} |", fmt_ns(*m));
    }
    s
}

/// The number at `path` in `v`, NaN when absent.
fn f(v: &Value, path: &[&str]) -> f64 {
    path.iter().try_fold(v, |v, k| v.get(*k)).and_then(Value::as_f64).unwrap_or(f64::NAN)
}

fn read_json(p: &Path) -> Option<Value> {
    serde_json::from_str(&fs::read_to_string(p).ok()?).ok()
}

/// The nrt-bench results: completion-notice latency, ring transfer, XU.
fn render_threads(dir: &Path) -> String {
    let mut s = String::new();
    if let Some(l) = read_json(&dir.join("latency.json")) {
        let _ = writeln!(
            s,
            "\n### Completion-notice latency (`nrt-bench latency`: device thread, mapped rings, {} inferences, device works {} us)\n",
            f(&l, &["inferences"]),
            f(&l, &["device_work_us"])
        );
        let _ = writeln!(s, "| delay | p50 | p99 | max | harvest CPU per inference (p50) | steps (p50) |");
        let _ = writeln!(s, "|---|---|---|---|---|---|");
        for k in ["libnrt", "adaptive"] {
            let _ = writeln!(
                s,
                "| {k} | {} | {} | {} | {:.1} us | {:.0} |",
                fmt_ns(f(&l, &[k, "latency", "p50_ns"])),
                fmt_ns(f(&l, &[k, "latency", "p99_ns"])),
                fmt_ns(f(&l, &[k, "latency", "max_ns"])),
                f(&l, &[k, "cpu_us_per_inference", "p50"]),
                f(&l, &[k, "steps_p50"])
            );
        }
        let r = f(&l, &["ratio_p50"]);
        let _ = writeln!(
            s,
            "\nadaptive p50 is {r:.1}x lower than libnrt's (goal >= 50x): {}",
            if r >= 50.0 { "met" } else { "MISSED" }
        );
        let (floor, over) = (f(&l, &["floor", "p50_ns"]), f(&l, &["adaptive_over_floor_p50_ns"]));
        let ad = f(&l, &["adaptive", "latency", "p50_ns"]);
        let _ = writeln!(
            s,
            "
the notice floor (one thread stores, another spins on the line), same run: p50 {}; adaptive p50 {} is \
             {} above it (goal: adaptive p50 <= 1 us and within 0.5 us of the floor): {}",
            fmt_ns(floor),
            fmt_ns(ad),
            fmt_ns(over),
            if ad <= 1000.0 && over <= 500.0 { "met" } else { "MISSED" }
        );
        if l.get("adaptive_pieces").is_some_and(|p| !p.is_null()) {
            let p = |k: &str| fmt_ns(f(&l, &["adaptive_pieces", k, "p50_ns"]));
            let _ = writeln!(
                s,
                "\nthe adaptive notice taken apart (a second adaptive run with a clock read around each step, p50): \
                 last END -> the step that finishes {}, that step (the sweep reading END, FINALIZE) {}, \
                 after it (HEAD hand-back, return) {}; the step before it {}, one delay {}; its latency {}",
                p("end_to_final_step"),
                p("final_step"),
                p("after_final_step"),
                p("empty_step"),
                p("one_delay"),
                p("latency_timed")
            );
        }
    }
    if let Some(r) = read_json(&dir.join("ring.json")) {
        let ratio = f(&r, &["ratio"]);
        let _ = writeln!(
            s,
            "\n### NQ ring transfer between threads (`nrt-bench ring`, {} records, median of 5)\n",
            f(&r, &["records"])
        );
        let _ = writeln!(s, "| ring | records/s |");
        let _ = writeln!(s, "|---|---|");
        let _ = writeln!(
            s,
            "| ours (phase bit, HEAD write-back per {} records) | {:.1} M |",
            f(&r, &["batch"]),
            f(&r, &["ours_per_s"]) / 1e6
        );
        let _ = writeln!(s, "| rtrb | {:.1} M |", f(&r, &["rtrb_per_s"]) / 1e6);
        let _ =
            writeln!(s, "\nours / rtrb = {ratio:.2}x (goal >= 0.8x): {}", if ratio >= 0.8 { "met" } else { "MISSED" });
    }
    if let Some(x) = read_json(&dir.join("sys.json")) {
        let _ = writeln!(s, "\n### The OS floor (`nrt-bench sys`)\n");
        let _ = writeln!(
            s,
            "- one ioctl round trip (a Neuron request on a plain file, ENOTTY): p50 {}, p99 {}",
            fmt_ns(f(&x, &["ioctl", "p50_ns"])),
            fmt_ns(f(&x, &["ioctl", "p99_ns"]))
        );
        let _ = writeln!(
            s,
            "- `usleep(1)`: lasts p50 {} (p99 {}), costs p50 {} of CPU",
            fmt_ns(f(&x, &["usleep1_wall", "p50_ns"])),
            fmt_ns(f(&x, &["usleep1_wall", "p99_ns"])),
            fmt_ns(f(&x, &["usleep1_cpu", "p50_ns"]))
        );
    }
    if let Some(x) = read_json(&dir.join("scale.json")) {
        let _ = writeln!(s, "\n### A host (`nrt-bench scale`, {} CPUs)", f(&x, &["cpus"]));
        s.push_str(&render_scale(&x));
        // The goals are ratios within the run: nrt-bench's own verdict lines.
        let verdicts = x.get("verdicts").and_then(Value::as_array).cloned().unwrap_or_default();
        if !verdicts.is_empty() {
            let _ = writeln!(s, "\nThe goals, each a ratio within this run:\n");
            for v in verdicts.iter().filter_map(Value::as_str) {
                let _ = writeln!(s, "- {}", v.strip_prefix("verdict: ").unwrap_or(v));
            }
        }
    }
    if let Some(x) = read_json(&dir.join("exec.json")) {
        let _ = writeln!(
            s,
            "\n### The runtime API's round trip (`nrt-bench exec` under `nrt-sim driver`, {} rounds, 0 copies)\n",
            f(&x, &["rounds"])
        );
        let _ = writeln!(s, "| path | p50 | p99 |");
        let _ = writeln!(s, "|---|---|---|");
        for (k, what) in [("submit_wait", "`Stream::submit` + `Pending::wait`"), ("execute", "`Session::execute`")] {
            let _ = writeln!(s, "| {what} | {} | {} |", fmt_ns(f(&x, &[k, "p50_ns"])), fmt_ns(f(&x, &[k, "p99_ns"])));
        }
        let _ = writeln!(
            s,
            "\nratio of the p50s (stream / direct): {:.3}; each round's paired difference, p50: {}",
            f(&x, &["ratio_p50"]),
            fmt_ns(f(&x, &["paired_difference", "p50_ns"]))
        );
    }
    if let Some(x) = read_json(&dir.join("xu.json")) {
        let _ = writeln!(s, "\n### Execution units (`nrt-bench xu`, {} CPUs)\n", f(&x, &["cores"]));
        let _ = writeln!(
            s,
            "- submit to mark-complete round trip, 1 unit: p50 {}, p99 {}",
            fmt_ns(f(&x, &["round_trip", "p50_ns"])),
            fmt_ns(f(&x, &["round_trip", "p99_ns"]))
        );
        for u in ["1", "4", "16"] {
            let _ = writeln!(
                s,
                "- {u} unit(s), one closed-loop submitter each: {:.0} requests/s",
                f(&x, &["requests_per_s", u])
            );
        }
    }
    s
}

fn write_summary(path: &Path, summary: &str) -> std::io::Result<()> {
    let old = fs::read_to_string(path).unwrap_or_else(|_| format!("# Benchmarks\n\n{BEGIN}\n{END}\n"));
    let new = match (old.find(BEGIN), old.find(END)) {
        (Some(b), Some(e)) if b < e => format!("{}{BEGIN}\n{summary}{}", &old[..b], &old[e..]),
        _ => format!("{old}\n{BEGIN}\n{summary}{END}\n"),
    };
    fs::write(path, new)
}

fn cpu_model() -> String {
    fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into())
}

fn cores() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

fn sh(cmd: &str, args: &[&str]) -> String {
    Command::new(cmd)
        .args(args)
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `render_threads` over a directory holding only `file` with `v`.
    fn rendered(file: &str, v: &serde_json::Value) -> String {
        let dir = std::env::temp_dir().join(format!("xtask-bench-{file}-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join(file), v.to_string()).unwrap();
        let s = render_threads(&dir);
        let _ = fs::remove_dir_all(&dir);
        s
    }

    #[test]
    fn the_host_goals_are_the_runs_own_verdicts_not_absolute_times() {
        let v = serde_json::json!({ "cpus": 2, "runs": [], "verdicts": [
            "verdict: hybrid x1 at its default slice 50 us against the bare sleeping reader at it: p99 0.9x (goal <= 3x): met",
            "verdict: U = 1000 us: 7 of 9 poll-group shapes below libnrt's on both p99 and CPU (goal: all): MISSED" ] });
        let s = rendered("scale.json", &v);
        assert!(s.contains("The goals, each a ratio within this run:"), "{s}");
        assert!(s.contains("\n- hybrid x1 at its default slice 50 us against the bare sleeping reader at it"), "{s}");
        assert!(s.contains("\n- U = 1000 us: 7 of 9 poll-group shapes"), "{s}");
        assert!(!s.contains("<= 50 us with <= 0.15 core"), "{s}");
    }

    #[test]
    fn the_exec_round_trip_is_rendered_with_both_medians_and_their_ratio() {
        let pct = |p50: f64| serde_json::json!({ "p50_ns": p50, "p99_ns": 2.0 * p50, "max_ns": 0, "mean_ns": 0 });
        let v = serde_json::json!({ "rounds": 1000, "copies": 0, "submit_wait": pct(1_386_800.0),
            "execute": pct(1_368_800.0), "ratio_p50": 1.013, "paired_difference": pct(12_400.0) });
        let s = rendered("exec.json", &v);
        assert!(s.contains("`nrt-bench exec` under `nrt-sim driver`, 1000 rounds, 0 copies"), "{s}");
        assert!(s.contains("| `Stream::submit` + `Pending::wait` | 1.39 ms |"), "{s}");
        assert!(s.contains("| `Session::execute` | 1.37 ms |"), "{s}");
        assert!(
            s.contains("ratio of the p50s (stream / direct): 1.013; each round's paired difference, p50: 12.40 us"),
            "{s}"
        );
    }
}
