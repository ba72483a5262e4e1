//! `cargo xtask`: the project's own automation.
//!
//! ```text
//! cargo xtask ci               everything CI checks: the README's test command
//! cargo xtask bench [--quick]  the criterion benches and nrt-bench, summarised into BENCHMARKS.md
//! cargo xtask bench --summarise  rewrite that summary from the results on disk
//! cargo xtask bench --scale  the host sweep alone, nrt-bench scale --sweep, its table into BENCHMARKS.md
//! cargo xtask kani             every kani harness verified by cargo kani, installed from the offline bundle if missing
//! cargo xtask miri             core's tests under Miri
//! cargo xtask loom             the loom models of the XU handoff and the tensor counters
//! cargo xtask fuzz [--secs N]  each fuzz target for N seconds, 60 by default
//! cargo xtask qemu             the test firmware on Cortex-M4 and RV32 under QEMU, with its footprint
//! cargo xtask mutants [--file GLOB]... [--in-diff BASE] [--shard K/N]  cargo-mutants over core and the device model
//! cargo xtask prose            a report of comment density, asides and file sizes per crate
//! ```
//!
//! Each subcommand prints the stages it runs with their times, and says SKIPPED,
//! loudly and with the reason, for any check this machine cannot run.

use std::env;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

mod bench;
mod fuzz;
mod miri;
mod mutants;
mod proofs;
mod prose;
mod qemu;
mod setup;

/// The bare-metal targets the core must build for: the device-side controller.
const NO_STD_TARGETS: [&str; 2] = ["thumbv7em-none-eabihf", "riscv32imac-unknown-none-elf"];

/// Seconds per fuzz target in `cargo xtask ci`; `NRT_CI_FUZZ_SECS` overrides it.
const CI_FUZZ_SECS: u64 = 15;

/// The subcommands.
enum Task {
    /// setup, fmt, clippy, tests, docs, no_std builds, kani verification, Miri, loom, a short
    /// fuzz run, the firmware under QEMU.
    Ci,
    /// Criterion benches and the BENCHMARKS.md summary.
    Bench {
        /// Shorter measurement, for a smoke run.
        quick: bool,
    },
    /// Every kani harness verified by `cargo kani`, installed when missing.
    Kani,
    /// `cargo +nightly miri test -p nrt-core`.
    Miri,
    /// The loom models, `--cfg loom`, in release.
    Loom,
    /// Every fuzz target for `secs` seconds.
    Fuzz {
        /// Seconds per target.
        secs: u64,
    },
    /// The firmware under QEMU and its footprint.
    Qemu,
    /// cargo-mutants over core and the simulator's device model.
    Mutants(mutants::Options),
    /// Comment density and file sizes per crate.
    Prose,
}

fn usage() -> ExitCode {
    eprintln!(
        "usage: cargo xtask <task>\n\n\
         tasks:\n  \
         ci              fmt, clippy, tests, docs, no_std builds, kani, Miri, loom, fuzz, QEMU (what .ci/run runs)\n  \
         bench [--quick] criterion benches and nrt-bench; writes the summary into BENCHMARKS.md\n  \
         bench --summarise  rewrite that summary from the results on disk\n  \
         bench --scale      the host sweep alone (nrt-bench scale --sweep) into BENCHMARKS.md\n  \
         kani            every kani harness verified (cargo kani; installed from shared/tools/kani when missing)\n  \
         miri            core's tests under Miri (cargo +nightly miri)\n  \
         loom            the loom models (RUSTFLAGS=\"--cfg loom\", release)\n  \
         fuzz [--secs N] each cargo-fuzz target for N seconds (default 60)\n  \
         qemu            the test firmware under QEMU (Cortex-M4, RV32) and its footprint\n  \
         mutants [--file GLOB]... [--in-diff BASE] [--shard K/N]  cargo-mutants (pinned) over core and the device model\n  \
         prose           comment density, asides and file sizes per crate (a report, not a gate)"
    );
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args: Vec<String> = env::args().skip(1).collect();
    let flag = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1));
    let task = match args.first().map(String::as_str) {
        Some("ci") => Task::Ci,
        Some("bench") => Task::Bench { quick: args.iter().any(|a| a == "--quick") },
        Some("kani") => Task::Kani,
        Some("miri") => Task::Miri,
        Some("loom") => Task::Loom,
        Some("fuzz") => match flag("--secs").map(|s| s.parse::<u64>()) {
            None => Task::Fuzz { secs: 60 },
            Some(Ok(secs)) => Task::Fuzz { secs },
            Some(Err(_)) => return usage(),
        },
        Some("qemu") => Task::Qemu,
        Some("prose") => Task::Prose,
        Some("mutants") => match mutants::Options::parse(&args[1..]) {
            Ok(o) => Task::Mutants(o),
            Err(e) => {
                eprintln!("{e}");
                return usage();
            }
        },
        _ => return usage(),
    };
    let root = project_root();
    env::set_current_dir(&root).expect("cd to the project root");
    let mut run = Runner::default();
    match task {
        Task::Ci => ci(&mut run),
        Task::Bench { quick } => bench::run(&mut run, &root, quick),
        Task::Kani => proofs::kani(&mut run, &root, false),
        Task::Miri => miri::miri(&mut run),
        Task::Loom => proofs::loom(&mut run),
        Task::Fuzz { secs } => fuzz::run(&mut run, secs),
        Task::Qemu => qemu::run(&mut run, &root),
        Task::Mutants(o) => mutants::run(&mut run, &root, &o),
        Task::Prose => prose_stage(&mut run, &root),
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

    /// Run `cmd` as stage `name`, capturing its output and echoing it as it
    /// was; return the output when it succeeded.
    pub fn cmd_output(&mut self, name: &str, cmd: &mut Command) -> Option<String> {
        let (ok, text) = self.cmd_capture_inner(name, cmd, true);
        ok.then_some(text)
    }

    /// Run `cmd` as stage `name`, capturing its output without echoing it.
    pub fn cmd_capture(&mut self, name: &str, cmd: &mut Command) -> (bool, String) {
        self.cmd_capture_inner(name, cmd, false)
    }

    fn cmd_capture_inner(&mut self, name: &str, cmd: &mut Command, echo: bool) -> (bool, String) {
        println!("\n==> {name}: {}", render(cmd));
        let t = Instant::now();
        let out = cmd.stdin(Stdio::null()).output();
        let secs = t.elapsed().as_secs_f64();
        let (ok, text) = exit_and_text(out);
        if echo {
            for line in text.lines() {
                println!("    {line}");
            }
        }
        println!("<== {name}: {} in {secs:.1} s", if ok { "ok" } else { "FAILED" });
        self.stages.push((name.to_string(), secs, if ok { Outcome::Ok } else { Outcome::Failed }));
        (ok, text)
    }

    /// Record a stage that cannot run here.
    pub fn skip(&mut self, name: &str, why: &str) {
        self.skip_short(name, why, why);
    }

    /// Record a stage that cannot run here, with a long reason printed now and a
    /// short one for the summary.
    pub fn skip_short(&mut self, name: &str, why: &str, short: &str) {
        println!("\n!!! SKIPPED {name}: {why}");
        self.stages.push((name.to_string(), 0.0, Outcome::Skipped(short.to_string())));
    }

    /// Record a stage that failed without running a command, saying why.
    pub fn fail(&mut self, name: &str, why: &str) {
        println!("\n!!! FAILED {name}: {why}");
        self.stages.push((name.to_string(), 0.0, Outcome::Failed));
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

/// Run `cmd` to its end with its output captured, in a process group of its
/// own. Past `cap`, a backstop rather than a goal, kill the whole group, the
/// command and everything it started, and keep what it printed until then.
/// Returns the output, or why it could not start or be waited for, and whether
/// the cap killed it.
pub(crate) fn output_capped(
    cmd: &mut Command,
    cap: std::time::Duration,
) -> (std::io::Result<std::process::Output>, bool) {
    use std::io::Read as _;
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(cmd, 0);
    let mut child = match cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn() {
        Ok(c) => c,
        Err(e) => return (Err(e), false),
    };
    let reader = |r: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut v);
            }
            v
        })
    };
    let out = reader(child.stdout.take().map(|r| Box::new(r) as Box<dyn std::io::Read + Send>));
    let err = reader(child.stderr.take().map(|r| Box::new(r) as Box<dyn std::io::Read + Send>));
    let t = Instant::now();
    let mut killed = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Ok(s),
            Ok(None) if t.elapsed() >= cap => {
                let _ = Command::new("kill").args(["-KILL", "--", &format!("-{}", child.id())]).status();
                killed = true;
                break child.wait();
            }
            Ok(None) => std::thread::sleep(std::time::Duration::from_millis(200)),
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                break Err(e);
            }
        }
    };
    let (stdout, stderr) = (out.join().unwrap_or_default(), err.join().unwrap_or_default());
    (status.map(|status| std::process::Output { status, stdout, stderr }), killed)
}

/// Whether a finished command succeeded, and its standard output followed by
/// its standard error, or why it could not start.
pub(crate) fn exit_and_text(out: std::io::Result<std::process::Output>) -> (bool, String) {
    match out {
        Ok(o) => {
            let mut text = String::from_utf8_lossy(&o.stdout).into_owned();
            text.push_str(&String::from_utf8_lossy(&o.stderr));
            (o.status.success(), text)
        }
        Err(e) => (false, format!("could not start: {e}")),
    }
}

pub(crate) fn render(cmd: &Command) -> String {
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

/// `true` when `cmd` starts and exits 0; its output is discarded.
pub fn works(cmd: &mut Command) -> bool {
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).status().map(|s| s.success()).unwrap_or(false)
}

fn cargo() -> Command {
    Command::new(env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

/// The prose report as a stage that always passes.
fn prose_stage(run: &mut Runner, root: &Path) {
    println!("\n==> prose (a report, not a gate)");
    let t = Instant::now();
    print!("{}", prose::report(root));
    run.record("prose (a report, not a gate)", t.elapsed().as_secs_f64(), true);
}

fn ci(run: &mut Runner) {
    // Everything the stages below need, installed here rather than by .ci/run.
    setup::all(run);
    run.cmd("fmt", cargo().args(["fmt", "--all", "--", "--check"]));
    run.cmd("clippy", cargo().args(["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"]));
    run.cmd(
        "clippy core (no_std lib, log + test-utils)",
        cargo().args(["clippy", "-p", "nrt-core", "--features", "log,test-utils", "--", "-D", "warnings"]),
    );
    tests(run);
    prose_stage(run, Path::new("."));
    run.cmd("doc", cargo().args(["doc", "--workspace", "--no-deps"]).env("RUSTDOCFLAGS", "-D warnings"));
    no_std_builds(run);
    // Always, not only as the fallback: proves the core links with no std at all.
    nostd_link_check(run);
    // The crates outside the host workspace: formatted like the rest.
    run.cmd(
        "fmt (fuzz, firmware)",
        Command::new("rustfmt")
            .args(["--check", "--edition", "2021", "--config-path", "rustfmt.toml"])
            .args(outside_workspace_sources()),
    );
    run.cmd(
        "clippy firmware (thumbv7em)",
        cargo()
            .current_dir("tests/firmware")
            .args(["clippy", "--release", "--", "-D", "warnings"])
            .env_remove("RUSTFLAGS")
            .env_remove("CARGO_TARGET_DIR"),
    );
    run.cmd(
        "clippy fuzz targets",
        cargo()
            .args(["clippy", "--manifest-path", "fuzz/Cargo.toml", "--all-targets", "--", "-D", "warnings"])
            .env_remove("RUSTFLAGS")
            .env_remove("CARGO_TARGET_DIR"),
    );
    proofs::kani(run, Path::new("."), true);
    mutants::ci_stage(run, Path::new("."));
    proofs::loom(run);
    qemu::run(run, Path::new("."));
    let secs = env::var("NRT_CI_FUZZ_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(CI_FUZZ_SECS);
    fuzz::run(run, secs);
    miri::miri(run);
}

/// The file in which the tests record the checks they cannot make here, see
/// `nrt_abi::skip`: in `CARGO_TARGET_DIR`, else `target` at the project's root.
fn skip_log() -> PathBuf {
    let target = env::var_os("CARGO_TARGET_DIR").map_or_else(|| PathBuf::from("target"), PathBuf::from);
    project_root().join(target).join("xtask-test-skips.txt")
}

/// `cargo test --workspace` with `NRT_SKIP_LOG` set, see `nrt_abi::skip`. Each
/// check a test could not make here is then listed as a stage by
/// [`skip_stages`], so the summary shows it even though a passing test's own
/// output is not shown.
fn tests(run: &mut Runner) {
    let log = skip_log();
    if let Err(e) = std::fs::remove_file(&log) {
        if e.kind() != std::io::ErrorKind::NotFound {
            println!("    could not remove the last run's skip log {}: {e}", log.display());
        }
    }
    run.cmd("test", cargo().args(["test", "--workspace"]).env(nrt_abi::skip::SKIP_LOG, &log));
    match std::fs::read_to_string(&log) {
        Ok(text) => skip_stages(run, &nrt_abi::skip::read_log(&text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => run.fail("test skips", &format!("the skip log {} could not be read: {e}", log.display())),
    }
}

/// Each recorded skip as a stage `test CRATE::TEST`: SKIPPED, loudly, with
/// its reason. A tool this machine could have installed but whose install
/// failed, [`SkipClass::Installable`], says so and points at the setup stage's
/// output for why. A check that cannot run is never a pass, and never a red
/// run, since an install can fail for reasons outside the project.
///
/// [`SkipClass::Installable`]: nrt_abi::skip::SkipClass::Installable
fn skip_stages(run: &mut Runner, skips: &[nrt_abi::skip::Skip]) {
    for s in skips {
        let name = format!("test {}", s.test);
        if s.class == nrt_abi::skip::SkipClass::Installable {
            run.skip(&name, &format!("{} (installable here, but the install failed: see the setup stage)", s.why));
        } else {
            run.skip(&name, &s.why);
        }
    }
}

/// The Rust sources of the crates that are their own workspace roots.
fn outside_workspace_sources() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in ["fuzz/src", "fuzz/fuzz_targets", "tests/firmware/src", "tests/firmware"] {
        if let Ok(rd) = std::fs::read_dir(dir) {
            let mut files: Vec<PathBuf> =
                rd.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|e| e == "rs")).collect();
            files.sort();
            out.extend(files);
        }
    }
    out
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
        // nrt-abi's default build is no_std too: a controller may share its constants.
        run.cmd(
            &format!("build nrt-abi --target {target}"),
            cargo().args(["build", "-p", "nrt-abi", "--target", target]),
        );
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

/// The 1, 5 and 15 minute load averages from `/proc/loadavg`, or `unknown`.
pub(crate) fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

/// Today's UTC date, from `date`.
pub(crate) fn today() -> String {
    Command::new("date")
        .args(["-u", "+%Y-%m-%d"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// The tests' skips as stages: each SKIPPED with its reason, a tool this
    /// machine could have installed saying that its install failed.
    #[test]
    fn each_recorded_skip_is_a_skipped_stage_with_its_reason() {
        use nrt_abi::skip::{line, read_log, SkipClass};
        let text = [
            line("trace::render", SkipClass::Installable, "needs headless Chromium: /usr/bin/chromium: not found"),
            line("driver_path::strace", SkipClass::NotInstallable, "strace is not installed (not root)"),
            line("driver::a", SkipClass::Unsupported, "no user_notif"),
        ]
        .concat();
        let mut run = Runner::default();
        skip_stages(&mut run, &read_log(&text));
        let outcomes: Vec<String> = run
            .stages
            .into_iter()
            .map(|(n, _, o)| match o {
                Outcome::Ok => format!("{n}: ok"),
                Outcome::Failed => format!("{n}: FAILED"),
                Outcome::Skipped(why) => format!("{n}: SKIPPED ({why})"),
            })
            .collect();
        assert_eq!(
            outcomes,
            [
                "test trace::render: SKIPPED (needs headless Chromium: /usr/bin/chromium: not found \
                 (installable here, but the install failed: see the setup stage))",
                "test driver_path::strace: SKIPPED (strace is not installed (not root))",
                "test driver::a: SKIPPED (no user_notif)",
            ]
        );
    }

    #[test]
    fn a_command_within_its_cap_gives_its_output() {
        let (out, killed) =
            output_capped(Command::new("sh").args(["-c", "echo out; echo err >&2"]), Duration::from_secs(60));
        let o = out.expect("sh runs");
        assert!(!killed && o.status.success());
        assert_eq!((o.stdout.as_slice(), o.stderr.as_slice()), (&b"out\n"[..], &b"err\n"[..]));
    }

    #[test]
    fn past_its_cap_the_whole_group_is_killed() {
        // The shell starts a 60 s grandchild whose output goes elsewhere, so the
        // call returns at the cap either way: the kill must take it too.
        let dir = std::env::temp_dir().join(format!("xtask-capped-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let pid_file = dir.join("grandchild");
        let script = format!("echo started; sleep 60 >/dev/null 2>&1 & echo $! > {}; wait", pid_file.display());
        let (out, killed) = output_capped(Command::new("sh").args(["-c", &script]), Duration::from_millis(500));
        let o = out.expect("sh runs");
        assert!(killed, "the cap did not fire");
        assert!(!o.status.success(), "a killed command reported success");
        assert_eq!(o.stdout, b"started\n", "what it printed before the kill is kept");
        let pid = std::fs::read_to_string(&pid_file).expect("the grandchild's pid");
        // Gone, or a zombie waiting for init to reap it: killed with its group.
        // At most 50 looks, 100 ms apart, for the reparenting to finish.
        let running = || {
            std::fs::read_to_string(format!("/proc/{}/stat", pid.trim()))
                .is_ok_and(|st| st.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')))
        };
        let mut alive = running();
        for _ in 0..50 {
            if !alive {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
            alive = running();
        }
        let _ = std::fs::remove_dir_all(&dir);
        assert!(!alive, "the grandchild {} outlived its group's kill", pid.trim());
    }
}
