//! `cargo xtask bench`: run the criterion benches and write a summary into
//! BENCHMARKS.md (between the `xtask-bench` markers), with the machine, the date,
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
/// the same run (`baseline_median / median >= min`).
enum Goal {
    MaxNs(f64),
    RatioMin { baseline: &'static str, min: f64 },
}

/// The goals the issues name, by benchmark id.
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

pub fn run(run: &mut Runner, root: &Path, quick: bool) {
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
    let t = Instant::now();
    let medians = collect(&crit);
    let ok = !medians.is_empty();
    if ok {
        let summary = render(&medians);
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
