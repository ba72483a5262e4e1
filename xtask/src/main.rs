//! `cargo xtask`: the project's own automation.
//!
//! ```text
//! cargo xtask ci      everything CI checks (the README's test command)
//! cargo xtask bench   the criterion benches, summarised into BENCHMARKS.md
//! ```
//!
//! Each subcommand prints the stages it runs with their times, and says SKIPPED,
//! loudly and with the reason, for any check this machine cannot run.

use std::env;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

mod bench;

/// The bare-metal targets the core must build for (the device-side controller).
const NO_STD_TARGETS: [&str; 2] = ["thumbv7em-none-eabihf", "riscv32imac-unknown-none-elf"];

/// The subcommands.
enum Task {
    /// fmt, clippy, tests, docs, no_std builds.
    Ci,
    /// Criterion benches and the BENCHMARKS.md summary.
    Bench {
        /// Shorter measurement (for a smoke run).
        quick: bool,
    },
}

fn usage() -> ExitCode {
    eprintln!(
        "usage: cargo xtask <task>\n\n\
         tasks:\n  \
         ci              fmt, clippy, tests, docs, no_std builds (what .ci/run runs)\n  \
         bench [--quick] criterion benches; writes the summary into BENCHMARKS.md"
    );
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args: Vec<String> = env::args().skip(1).collect();
    let task = match args.first().map(String::as_str) {
        Some("ci") => Task::Ci,
        Some("bench") => Task::Bench { quick: args.iter().any(|a| a == "--quick") },
        _ => return usage(),
    };
    let root = project_root();
    env::set_current_dir(&root).expect("cd to the project root");
    let mut run = Runner::default();
    match task {
        Task::Ci => ci(&mut run),
        Task::Bench { quick } => bench::run(&mut run, &root, quick),
    }
    run.report()
}

fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives in the workspace").to_path_buf()
}

/// Runs stages, times them, and remembers failures and skips.
#[derive(Default)]
pub struct Runner {
    stages: Vec<(String, f64, Outcome)>,
}

#[derive(Clone, PartialEq)]
pub enum Outcome {
    Ok,
    Failed,
    Skipped(String),
}

impl Runner {
    /// Run `cmd` as stage `name`.
    pub fn cmd(&mut self, name: &str, cmd: &mut Command) -> bool {
        println!("\n==> {name}: {}", render(cmd));
        let t = Instant::now();
        let ok = match cmd.status() {
            Ok(s) => s.success(),
            Err(e) => {
                eprintln!("    could not start: {e}");
                false
            }
        };
        let secs = t.elapsed().as_secs_f64();
        println!("<== {name}: {} in {secs:.1} s", if ok { "ok" } else { "FAILED" });
        self.stages.push((name.to_string(), secs, if ok { Outcome::Ok } else { Outcome::Failed }));
        ok
    }

    /// Record a stage that cannot run here.
    pub fn skip(&mut self, name: &str, why: &str) {
        println!("\n!!! SKIPPED {name}: {why}");
        self.stages.push((name.to_string(), 0.0, Outcome::Skipped(why.to_string())));
    }

    /// Record a stage whose work was done in-process.
    pub fn record(&mut self, name: &str, secs: f64, ok: bool) {
        self.stages.push((name.to_string(), secs, if ok { Outcome::Ok } else { Outcome::Failed }));
    }

    fn report(&self) -> ExitCode {
        println!("\n==== summary ====");
        let mut failed = 0;
        let mut skipped = 0;
        let mut total = 0.0;
        for (name, secs, outcome) in &self.stages {
            total += secs;
            let what = match outcome {
                Outcome::Ok => "ok".to_string(),
                Outcome::Failed => {
                    failed += 1;
                    "FAILED".to_string()
                }
                Outcome::Skipped(why) => {
                    skipped += 1;
                    format!("SKIPPED ({why})")
                }
            };
            println!("{secs:>8.1} s  {name:<48} {what}");
        }
        println!("{total:>8.1} s  total");
        let passed = self.stages.len() - failed - skipped;
        // The plain closing line CI reads.
        println!("xtask: {passed} passed, {failed} failed, {skipped} skipped");
        if failed > 0 {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        }
    }
}

fn render(cmd: &Command) -> String {
    let mut s = String::new();
    for (k, v) in cmd.get_envs() {
        if let Some(v) = v {
            let _ = write!(s, "{}={} ", k.to_string_lossy(), v.to_string_lossy());
        }
    }
    s.push_str(&cmd.get_program().to_string_lossy());
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

fn cargo() -> Command {
    Command::new(env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

fn ci(run: &mut Runner) {
    run.cmd("fmt", cargo().args(["fmt", "--all", "--", "--check"]));
    run.cmd("clippy", cargo().args(["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"]));
    run.cmd(
        "clippy core (no_std lib, log + test-utils)",
        cargo().args(["clippy", "-p", "nrt-core", "--features", "log,test-utils", "--", "-D", "warnings"]),
    );
    run.cmd("test", cargo().args(["test", "--workspace"]));
    run.cmd("doc", cargo().args(["doc", "--workspace", "--no-deps"]).env("RUSTDOCFLAGS", "-D warnings"));
    no_std_builds(run);
    // Always, not only as the fallback: proves the core links with no std at all.
    nostd_link_check(run);
}

/// The core on the controller's targets, with and without `defmt`; where a target
/// cannot be installed, a host link check of a `#![no_std]` binary instead.
fn no_std_builds(run: &mut Runner) {
    let installed = rustup_targets();
    for target in NO_STD_TARGETS {
        let have = installed.iter().any(|t| t == target) || {
            println!("\n==> rustup target add {target}");
            Command::new("rustup").args(["target", "add", target]).status().map(|s| s.success()).unwrap_or(false)
        };
        if !have {
            run.skip(
                &format!("no_std build for {target}"),
                "`rustup target add` failed (no network or no rustup); running the host no_std link check instead",
            );
            nostd_link_check(run);
            continue;
        }
        for features in [None, Some("defmt")] {
            let mut c = cargo();
            c.args(["build", "-p", "nrt-core", "--target", target]);
            if let Some(f) = features {
                c.args(["--features", f]);
            }
            run.cmd(
                &format!("build nrt-core --target {target}{}", features.map(|f| format!(" +{f}")).unwrap_or_default()),
                &mut c,
            );
        }
    }
}

fn host_triple() -> String {
    Command::new("rustc")
        .arg("-vV")
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout).lines().find_map(|l| l.strip_prefix("host: ").map(str::to_string))
        })
        .unwrap_or_else(|| "x86_64-unknown-linux-gnu".into())
}

fn rustup_targets() -> Vec<String> {
    Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).lines().map(str::to_string).collect())
        .unwrap_or_default()
}

/// Links `tests/nostd-link`, a `#![no_std]` `#![no_main]` binary with its own
/// panic handler, for the host: it fails to link if anything pulls in std.
fn nostd_link_check(run: &mut Runner) {
    if run.stages.iter().any(|(n, _, _)| n == "host no_std link check") {
        return;
    }
    // An explicit --target keeps RUSTFLAGS off the build scripts.
    let host = host_triple();
    run.cmd(
        "host no_std link check",
        cargo()
            .args(["build", "--release", "--manifest-path", "tests/nostd-link/Cargo.toml", "--target-dir", "target/nostd-link"])
            .args(["--target", &host])
            .env("RUSTFLAGS", "-C panic=abort -C link-arg=-nostartfiles -C link-arg=-static -C link-arg=-lc -C relocation-model=static"),
    );
}
