//! `cargo xtask kani`, `loom`: the formal and concurrency checks of core.
//!
//! `cargo xtask kani` verifies every kani harness of [`PROVED_CRATES`] in one
//! `cargo kani` run. The verdict depends only on what kani proved: the stage
//! fails on a failed property, an unsatisfied `kani::cover!`, a harness with no
//! cover or no result, and a run that failed. A harness a backstop stopped has
//! no verdict; it is UNFINISHED, a SKIPPED stage names it, and nothing fails.
//! Times are measured against goals and reported, never failed: see [`judge`].
//! Every harness body also runs as a `#[test]`; a harness without one fails.
//! Kani is installed from `shared/tools/kani` when missing. The results go to
//! `docs/kani.md`.

use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::{cargo, Runner};

mod harness;
mod table;
mod verdict;

use harness::*;
use table::*;
use verdict::*;

/// Wall-clock goal of one harness, seconds; `NRT_KANI_GOAL_S` overrides it.
const HARNESS_GOAL_S: u64 = 180;

/// Harnesses with a goal above [`HARNESS_GOAL_S`]: a path, or a prefix ending
/// in `_` that matches every engine's copy of a harness. Each goal is the
/// worst time measured under load plus a third; `docs/kani.md` has the times.
/// The matcher's per-engine and per-core pieces are the leaves of the split
/// step proofs in `core/src/exec/proofs/parts.rs`, and the NQ producer with
/// its consumer runs five symbolic operations on one ring.
const SLOW_HARNESSES: [(&str, u64); 3] = [
    ("nq::ring::proofs::prove_producer_and_consumer_agree", 600),
    ("exec::proofs::parts::prove_consume_core_keeps_its_frame", 420),
    ("exec::proofs::parts::prove_consume_engine_", 420),
];

/// The goal of harness `path`, seconds.
fn goal_of(path: &str, default: u64) -> u64 {
    let matches = |p: &str| match p.ends_with('_') {
        true => path.strip_prefix(p).is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit())),
        false => path == p,
    };
    SLOW_HARNESSES.iter().find(|(p, _)| matches(p)).map(|(_, b)| (*b).max(default)).unwrap_or(default)
}

/// kani's `--harness-timeout`, seconds: it stops a solver run that diverges.
/// Not a goal: three times the slowest harness's goal.
const HARNESS_TIMEOUT_S: u64 = 1800;

/// The stage's goal on a quiet machine, seconds: reported when missed.
const STAGE_GOAL_S: u64 = 20 * 60;

/// The stage's backstop, seconds: the kani run is killed past it and the
/// harnesses it did not finish are UNFINISHED. It leaves half of CI's 90
/// minutes to the other stages.
const STAGE_BACKSTOP_S: u64 = 45 * 60;

// A backstop stays well above its goal, and the stage's inside CI's limit.
const _: () = assert!(HARNESS_TIMEOUT_S >= 3 * 600 && HARNESS_TIMEOUT_S >= 2 * HARNESS_GOAL_S);

const _: () = assert!(STAGE_BACKSTOP_S >= 2 * STAGE_GOAL_S && STAGE_BACKSTOP_S <= 60 * 60);

/// Harnesses verified at once by `cargo kani -j`; the machines have 2 cores.
const KANI_JOBS: usize = 2;

/// The crates whose harnesses the stage verifies, each with its source
/// directory: nrt-core, and nrt-abi's pure functions in `abi/src/proofs.rs`:
/// the `_IOC` encoding, the simulated device's address maps and the driver's
/// argument rules.
const PROVED_CRATES: [(&str, &str); 2] = [("nrt-core", "core/src"), ("nrt-abi", "abi/src")];

/// The flags of every `cargo kani` call: the same each time, so the crates are
/// compiled for kani once. `-Z stubbing` is for `kani::stub`/`stub_verified`,
/// `-Z function-contracts` for `requires`/`ensures`.
const KANI_FLAGS: [&str; 8] = ["-p", "nrt-core", "-p", "nrt-abi", "-Z", "function-contracts", "-Z", "stubbing"];

// Every proved crate is in the flags.
const _: () = {
    let mut i = 0;
    while i < PROVED_CRATES.len() {
        let name = PROVED_CRATES[i].0.as_bytes();
        let flag = KANI_FLAGS[2 * i + 1].as_bytes();
        assert!(name.len() == flag.len());
        let mut j = 0;
        while j < name.len() {
            assert!(name[j] == flag[j]);
            j += 1;
        }
        i += 1;
    }
};

/// Verification flags: no reachability check per assertion, which costs a
/// solver call each; the harnesses' `kani::cover!`s are the vacuity check, and
/// every one must be satisfied. `--assertion-reach-checks` is a kani-compiler
/// option, so the codegen step passes it too: with other compiler options the
/// verification run would compile the crates again.
const VERIFY_FLAGS: [&str; 1] = ["--no-assertion-reach-checks"];

/// `cargo kani --version` works, after installing it from the offline bundle if
/// it did not. `Err` says why it cannot be had.
fn ensure_kani(root: &Path) -> Result<String, String> {
    let version = || {
        cargo()
            .args(["kani", "--version"])
            .stdin(Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    if let Some(v) = version() {
        return Ok(v);
    }
    let script = std::env::var_os("NRT_KANI_INSTALL")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("../shared/tools/kani/install.sh"));
    if !script.is_file() {
        return Err(format!(
            "cargo-kani is not installed and its offline installer {} is not there \
             (kani's own setup downloads from GitHub, which this machine cannot reach)",
            script.display()
        ));
    }
    println!("\n==> installing kani: bash {}", script.display());
    let ok = Command::new("bash").arg(&script).stdin(Stdio::null()).status().map(|s| s.success()).unwrap_or(false);
    if !ok {
        return Err(format!("cargo-kani is not installed and `bash {}` failed", script.display()));
    }
    version().ok_or_else(|| format!("`bash {}` ran but `cargo kani --version` still fails", script.display()))
}

/// The kani stage the module docs describe. In CI, `in_ci`, the harness bodies
/// already ran as tests in the `test` stage; on its own, where kani cannot be
/// installed, they run here as tests.
pub fn kani(run: &mut Runner, root: &Path, in_ci: bool) {
    let t = Instant::now();
    let hs = harnesses(root);
    println!("\n==> kani harnesses ({}), each with the test that runs the same property:", hs.len());
    for h in &hs {
        println!("    {:<66} {}{}", h.path, h.test, if h.has_test { "" } else { "  NO TEST" });
    }
    let untested: Vec<&str> = hs.iter().filter(|h| !h.has_test).map(|h| h.path.as_str()).collect();
    if !untested.is_empty() {
        println!("    every harness needs a test running the same body: missing for {untested:?}");
    }
    run.record(
        "kani harness list (each with its test)",
        t.elapsed().as_secs_f64(),
        untested.is_empty() && !hs.is_empty(),
    );

    let version = match ensure_kani(root) {
        Ok(v) => v,
        Err(why) => {
            run.skip_short("kani", &why, "cargo-kani could not be installed");
            if !in_ci {
                run.cmd(
                    "the kani properties as tests",
                    cargo().args(["test", "-p", "nrt-core", "-p", "nrt-abi", "--lib", "proofs"]),
                );
            }
            return;
        }
    };
    println!("    {version}");
    // Compile once for kani, with the same flags as every harness run.
    if !run.cmd(
        "kani codegen (nrt-core, nrt-abi)",
        cargo().current_dir(root).arg("kani").args(KANI_FLAGS).args(VERIFY_FLAGS).args([
            "-Z",
            "unstable-options",
            "--only-codegen",
        ]),
    ) {
        return;
    }
    let default_goal = std::env::var("NRT_KANI_GOAL_S").ok().and_then(|s| s.parse().ok()).unwrap_or(HARNESS_GOAL_S);
    let goal = |p: &str| goal_of(p, default_goal);
    let load_before = crate::load_average();
    let stage = Instant::now();
    let (verdicts, run_end, text) = verify_all(root, &goal, HARNESS_TIMEOUT_S, STAGE_BACKSTOP_S);
    let total = stage.elapsed().as_secs_f64();
    let load = (load_before.clone(), crate::load_average());
    let paths: Vec<&str> = hs.iter().map(|h| h.path.as_str()).collect();
    let summary = judge(&paths, &verdicts, run_end);
    let mut results: Vec<Outcome> = Vec::new();
    for h in &hs {
        let r = verdicts.iter().find(|(p, _, _)| *p == h.path).map(|(_, v, b)| (v.clone(), b.clone()));
        match &r {
            Some((v, _)) if v.timed_out => println!(
                "\n!!! {} ({}): UNFINISHED, SKIPPED: {} (the machine's speed; load average {} at the start)",
                h.path,
                h.file.display(),
                v.why,
                load_before
            ),
            Some((v, b)) if !v.ok => {
                println!("\n---- {} ({}): FAILED: {} ----", h.path, h.file.display(), v.why);
                for l in b.lines() {
                    println!("    {l}");
                }
            }
            Some(_) => {}
            None if run_end == RunEnd::StoppedAtBackstop => println!(
                "\n!!! {} ({}): UNFINISHED, SKIPPED: the stage's backstop of {STAGE_BACKSTOP_S} s stopped the run \
                 first (the machine's speed; load average {} at the start)",
                h.path,
                h.file.display(),
                load_before
            ),
            None => println!("\n---- {} ({}): FAILED: kani reported no result for it ----", h.path, h.file.display()),
        }
        results.push(r);
    }
    for p in &summary.unknown {
        println!("    kani verified {p}, which the harness list (the `prove_*` scan) does not know");
    }
    if run_end != RunEnd::Succeeded {
        let lines: Vec<&str> = text.lines().collect();
        println!("\n---- cargo kani did not succeed; the end of its output: ----");
        for l in lines.iter().skip(lines.len().saturating_sub(40)) {
            println!("    {l}");
        }
    }
    if !summary.over_goal.is_empty() {
        println!(
            "\n!!! {} harness(es) verified but OVER THEIR GOAL (a measurement on this machine, not a failure):",
            summary.over_goal.len()
        );
        for (p, v, _) in verdicts.iter().filter(|(_, v, _)| v.over_goal.is_some()) {
            println!("!!!   {p}: {}", over_goal_note(v).unwrap_or_default());
        }
    }
    let stage_note = stage_goal_note(total);
    if let Some(note) = &stage_note {
        println!("\n!!! {note}");
    }
    println!(
        "    kani: {} of {} harnesses verified in {total:.0} s (stage goal {STAGE_GOAL_S} s, backstop {STAGE_BACKSTOP_S} s; \
         load average {} before, {} after)",
        summary.verified,
        hs.len(),
        load.0,
        load.1
    );
    write_table(root, &hs, &results, total, &version, default_goal, &load);
    let mut name = format!("kani: {}/{} harnesses verified, covers satisfied", summary.verified, hs.len());
    if !summary.over_goal.is_empty() {
        name.push_str(&format!(" ({} over their goal, reported)", summary.over_goal.len()));
    }
    if stage_note.is_some() {
        name.push_str(&format!(" (over the stage goal of {STAGE_GOAL_S} s, reported)"));
    }
    if run_end == RunEnd::StoppedAtBackstop {
        name.push_str(&format!(" (the run stopped at the backstop of {STAGE_BACKSTOP_S} s after {total:.0} s)"));
    }
    run.record(&name, total, summary.ok);
    if !summary.unfinished.is_empty() {
        let n = summary.unfinished.len();
        run.skip_short(
            &format!("kani: {n} harness(es) unfinished"),
            &format!(
                "{n} of {} harnesses were stopped by a backstop before they finished, so they have no verdict \
                 (load average {} before, {} after: the machine's speed, not a failure): {}",
                hs.len(),
                load.0,
                load.1,
                summary.unfinished.join(", ")
            ),
            &format!("{n} stopped by a backstop on a slow machine, no verdict"),
        );
    }
}

/// The stage's verdict from the harness list and kani's verdicts.
#[derive(Debug, PartialEq)]
struct Summary {
    /// No harness failed: every listed harness is verified or unfinished,
    /// kani reported none the list does not know, and the run did not fail
    /// for another reason.
    ok: bool,
    /// Listed harnesses verified.
    verified: usize,
    /// Listed harnesses a backstop stopped before they finished, kani's
    /// `--harness-timeout` or the stage's: the machine's speed, no verdict;
    /// reported SKIPPED, loudly, not failed.
    unfinished: Vec<String>,
    /// Verified harnesses over their goal, reported, not failed.
    over_goal: Vec<String>,
    /// Harnesses kani reported that the list does not know; they fail the stage.
    unknown: Vec<String>,
}

/// How the kani run ended.
#[derive(Clone, Copy, Debug, PartialEq)]
enum RunEnd {
    /// `cargo kani` exited with success.
    Succeeded,
    /// `cargo kani` exited with a failure or could not start.
    Failed,
    /// The stage's backstop killed the run; what it had reported by then stands.
    StoppedAtBackstop,
}

/// The stage passes when no listed harness failed a property or a cover or
/// lacked a result from a run that ended on its own, kani reported no harness
/// the list does not know, and the run did not fail but through a harness's
/// timeout. A harness a backstop stopped before it finished, by kani's
/// `--harness-timeout` or the stage's backstop killing the run, has no
/// verdict: it is unfinished, reported SKIPPED, and fails nothing, since only
/// the machine's speed put it there. A time over a goal never fails the stage.
fn judge(paths: &[&str], verdicts: &[(String, Verdict, String)], end: RunEnd) -> Summary {
    let of = |p: &str| verdicts.iter().find(|(q, _, _)| q == p).map(|(_, v, _)| v);
    let verified = paths.iter().filter(|p| of(p).is_some_and(|v| v.ok)).count();
    let unfinished: Vec<String> = paths
        .iter()
        .filter(|p| match of(p) {
            Some(v) => v.timed_out,
            None => end == RunEnd::StoppedAtBackstop,
        })
        .map(|p| p.to_string())
        .collect();
    let failed = paths.len() - verified - unfinished.len();
    let over_goal =
        verdicts.iter().filter(|(_, v, _)| v.ok && v.over_goal.is_some()).map(|(p, _, _)| p.clone()).collect();
    let unknown: Vec<String> =
        verdicts.iter().filter(|(p, _, _)| !paths.contains(&p.as_str())).map(|(p, _, _)| p.clone()).collect();
    let timed_out = verdicts.iter().any(|(_, v, _)| v.timed_out);
    Summary {
        ok: failed == 0 && (end != RunEnd::Failed || timed_out) && !paths.is_empty() && unknown.is_empty(),
        verified,
        unfinished,
        over_goal,
        unknown,
    }
}

/// `the kani stage took T s, over its goal of G s` when it did.
fn stage_goal_note(total: f64) -> Option<String> {
    (total > STAGE_GOAL_S as f64)
        .then(|| format!("the kani stage took {total:.0} s, OVER ITS GOAL of {STAGE_GOAL_S} s (reported, not failed)"))
}

/// The loom models: release mode, `--cfg loom`, their own target directory so
/// the flag does not rebuild the normal one.
pub fn loom(run: &mut Runner) {
    run.cmd(
        "loom (XU handoff, tensor waiters)",
        cargo()
            .args(["test", "--release", "-p", "nrt-core", "--features", "test-utils", "--test", "loom"])
            .args(["--target-dir", "target/loom"])
            .env("RUSTFLAGS", "--cfg loom"),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `cargo kani -j 2 --output-format terse` result block as kani 0.64
    /// prints it for one harness: `println!("Thread {i}: {output}")`, the
    /// output a rendered result that starts on a new line.
    fn block(summary: &str, result: &str, time: Option<f64>) -> String {
        let mut s = format!("Thread 1: \nVERIFICATION RESULT:\n{summary}\n\n\nVERIFICATION:- {result}\n");
        if let Some(t) = time {
            s.push_str(&format!("Verification Time: {t}s\n"));
        }
        s
    }

    /// Feed `output` through the block splitter and judge each block.
    fn verdicts(output: &str, goal: u64) -> Vec<(String, Verdict)> {
        let mut b = Blocks::default();
        for l in output.lines() {
            b.line(l);
        }
        b.finish().into_iter().map(|(h, text)| (h.clone(), verdict_of(&text, goal))).collect()
    }

    const H: &str = "exec::proofs::parts::prove_consume_core_keeps_its_frame";

    fn one(body: &str, goal: u64) -> Verdict {
        let out = format!("Thread 1: Checking harness {H}...\n{body}");
        let mut v = verdicts(&out, goal);
        assert_eq!(v.len(), 1, "one block for one harness: {out}");
        let (h, v) = v.remove(0);
        assert_eq!(h, H);
        v
    }

    #[test]
    fn a_success_within_its_goal_is_verified() {
        let v = one(
            &block(" ** 0 of 1708 failed\n\n ** 5 of 5 cover properties satisfied", "SUCCESSFUL", Some(146.5)),
            180,
        );
        assert!(v.ok, "{v:?}");
        assert_eq!((v.secs, v.covers, v.over_goal), (146.5, Some((5, 5)), None));
        assert_eq!(v.checks, "0 of 1708 failed");
        assert!(v.why.is_empty());
    }

    #[test]
    fn a_block_as_kani_prints_it() {
        // Verbatim from `cargo kani -j 2 --output-format terse` of kani 0.64.0.
        let out = "Thread 0: Checking harness exec::proofs::prove_rescale_ns_contract...\nThread 0: \n\
                   VERIFICATION RESULT:\n ** 0 of 148 failed\n\n ** 2 of 2 cover properties satisfied\n\n\n\
                   VERIFICATION:- SUCCESSFUL\nVerification Time: 0.4759204s\n\nManual Harness Summary:\n\
                   Complete - 1 successfully verified harnesses, 0 failures, 1 total.\n";
        let v = verdicts(out, 180);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].0, "exec::proofs::prove_rescale_ns_contract");
        let v = &v[0].1;
        assert!(v.ok && v.over_goal.is_none(), "{v:?}");
        assert_eq!((v.checks.as_str(), v.covers, v.secs), ("0 of 148 failed", Some((2, 2)), 0.4759204));
    }

    #[test]
    fn a_success_over_its_goal_is_verified_with_a_note() {
        let v = one(
            &block(" ** 0 of 2497 failed\n\n ** 6 of 6 cover properties satisfied", "SUCCESSFUL", Some(186.0)),
            180,
        );
        assert!(v.ok && !v.timed_out, "a slow proof is still a proof: {v:?}");
        assert_eq!(v.over_goal, Some(180));
        let note = over_goal_note(&v).expect("a note for a harness over its goal");
        assert!(note.contains("186.0 s") && note.contains("goal of 180 s"), "{note}");
        let s = judge(&[H], &[(H.into(), v, String::new())], RunEnd::Succeeded);
        assert!(s.ok, "a harness over its goal does not fail the stage: {s:?}");
        assert_eq!((s.verified, s.over_goal.len()), (1, 1));
    }

    #[test]
    fn a_harness_kani_stopped_at_its_timeout_is_unfinished() {
        let out =
            "\nCBMC failed\nVERIFICATION:- FAILED\nCBMC timed out. You may want to rerun your proof with a larger \
                   timeout or use stubbing to reduce the size of the code the verifier reasons about.\n";
        let v = one(&format!("Thread 1: {out}"), 180);
        assert!(!v.ok && v.timed_out, "{v:?}");
        assert!(v.why.contains("--harness-timeout"), "{}", v.why);
        assert_eq!(v.over_goal, None);
        let s = judge(&[H], &[(H.into(), v.clone(), String::new())], RunEnd::Succeeded);
        assert!(s.ok && s.verified == 0 && s.unfinished == [H], "no verdict, not a failure: {s:?}");
        let s = judge(&[H], &[(H.into(), v, String::new())], RunEnd::Failed);
        assert!(s.ok && s.unfinished == [H], "kani's failing exit for its timeout is no failure either: {s:?}");
    }

    #[test]
    fn a_failed_property_fails() {
        let summary = " ** 1 of 1708 failed\nFailed Checks: consume_core left its frame\n File: \"core/src/exec/proofs/parts.rs\", \
                       line 171, in exec::proofs::parts::consume_core_keeps_its_frame\n\n ** 5 of 5 cover properties satisfied";
        let v = one(&block(summary, "FAILED", Some(12.0)), 180);
        assert!(!v.ok && !v.timed_out, "{v:?}");
        assert!(v.why.contains("property failed"), "{}", v.why);
        assert_eq!(v.checks, "1 of 1708 failed");
        // Fast and failed: no goal note makes it pass, and the stage fails.
        assert_eq!(v.over_goal, None);
        assert!(!judge(&[H], &[(H.into(), v, String::new())], RunEnd::Succeeded).ok);
    }

    #[test]
    fn a_harness_without_a_cover_fails() {
        let v = one(&block(" ** 0 of 282 failed", "SUCCESSFUL", Some(0.5)), 180);
        assert!(!v.ok, "{v:?}");
        assert_eq!(v.covers, None);
        assert!(v.why.contains("no kani::cover!"), "{}", v.why);
    }

    #[test]
    fn an_unsatisfied_or_unreachable_cover_fails() {
        for covers in [" ** 4 of 5 cover properties satisfied", " ** 4 of 5 cover properties satisfied (1 unreachable)"]
        {
            let v = one(&block(&format!(" ** 0 of 1901 failed\n\n{covers}"), "SUCCESSFUL", Some(100.0)), 420);
            assert!(!v.ok, "{covers}: {v:?}");
            assert_eq!(v.covers, Some((4, 5)));
            assert!(v.why.contains("vacuous"), "{}", v.why);
        }
    }

    #[test]
    fn two_threads_interleaved_give_each_harness_its_own_block() {
        let a = "dge::proofs::prove_dge_guards_admit_exactly_nx_pool";
        let out = format!(
            "Thread 0: Checking harness {a}...\nThread 1: Checking harness {H}...\n{}{}",
            block(" ** 0 of 306 failed\n\n ** 3 of 3 cover properties satisfied", "SUCCESSFUL", Some(0.8))
                .replace("Thread 1: ", "Thread 0: "),
            block(" ** 0 of 1708 failed\n\n ** 5 of 5 cover properties satisfied", "SUCCESSFUL", Some(450.0)),
        );
        let v = verdicts(&out, 180);
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].0, a);
        assert!(v[0].1.ok && v[0].1.over_goal.is_none() && v[0].1.secs == 0.8);
        assert_eq!(v[1].0, H);
        assert!(v[1].1.ok && v[1].1.over_goal == Some(180));
    }

    #[test]
    fn the_stage_fails_on_a_missing_an_unknown_harness_or_a_failed_run() {
        let ok =
            one(&block(" ** 0 of 1 failed\n\n ** 1 of 1 cover properties satisfied", "SUCCESSFUL", Some(1.0)), 180);
        let got = [(H.to_string(), ok.clone(), String::new())];
        assert!(judge(&[H], &got, RunEnd::Succeeded).ok);
        assert!(!judge(&[H, "x::prove_y"], &got, RunEnd::Succeeded).ok, "a listed harness without a result fails");
        assert!(!judge(&[H], &got, RunEnd::Failed).ok, "a run that failed fails");
        let extra = [got[0].clone(), ("x::prove_z".to_string(), ok, String::new())];
        let s = judge(&[H], &extra, RunEnd::Succeeded);
        assert!(!s.ok && s.unknown == ["x::prove_z"], "{s:?}");
        assert!(!judge(&[], &[], RunEnd::Succeeded).ok, "no harness at all fails");
    }

    /// A stand-in for `cargo kani`: prints `output`, then sleeps `linger_s`
    /// seconds, a run that outlasts a tiny backstop.
    fn fake_kani(output: &str, linger_s: u32, tag: &str) -> Command {
        let file = std::env::temp_dir().join(format!("nrt-xtask-fake-kani-{}-{tag}.txt", std::process::id()));
        fs::write(&file, output).expect("write the fake kani output");
        let mut cmd = Command::new("sh");
        cmd.args(["-c", &format!("cat '{}'; rm -f '{}'; exec sleep {linger_s}", file.display(), file.display())]);
        cmd
    }

    #[test]
    fn a_run_stopped_by_the_backstop_after_every_harness_verified_passes() {
        let a = "exec::proofs::parts::prove_consume_engine_0_keeps_its_frame";
        let verified = block(" ** 0 of 9 failed\n\n ** 1 of 1 cover properties satisfied", "SUCCESSFUL", Some(2.0));
        let out = format!(
            "Thread 1: Checking harness {H}...\nThread 2: Checking harness {a}...\n{verified}{}",
            verified.replace("Thread 1:", "Thread 2:")
        );
        // The fake sleeps 30 s, outlasting a backstop of 0.3 s: the stage is
        // stopped, and its verdict is still that of its harnesses.
        let t = Instant::now();
        let (got, end, text) = run_streamed(fake_kani(&out, 30, "all"), &|_| 180, Duration::from_millis(300));
        assert!(t.elapsed() < Duration::from_secs(25), "the backstop stopped the run");
        assert_eq!(end, RunEnd::StoppedAtBackstop, "{text}");
        assert!(text.contains("outlasted the stage's backstop"), "{text}");
        assert_eq!(got.len(), 2, "{text}");
        let s = judge(&[H, a], &got, end);
        assert!(s.ok && s.verified == 2, "every harness verified passes however long the stage took: {s:?}");

        // A harness the backstop stopped before it finished is unfinished:
        // skipped, not failed; the one it finished is verified.
        let (got, end, text) = run_streamed(
            fake_kani(
                &format!("Thread 1: Checking harness {H}...\nThread 2: Checking harness {a}...\n{verified}"),
                30,
                "one",
            ),
            &|_| 180,
            Duration::from_millis(300),
        );
        assert_eq!(end, RunEnd::StoppedAtBackstop, "{text}");
        let s = judge(&[H, a], &got, end);
        assert!(s.ok && s.verified == 1 && s.unfinished.len() == 1, "{s:?}");
        let failed = block(" ** 1 of 9 failed\n\n ** 1 of 1 cover properties satisfied", "FAILED", Some(2.0));
        let (got, end, _) = run_streamed(
            fake_kani(&format!("Thread 1: Checking harness {H}...\n{failed}"), 30, "failed"),
            &|_| 180,
            Duration::from_millis(300),
        );
        let s = judge(&[H, a], &got, end);
        assert!(!s.ok && s.unfinished.len() == 1, "a failed property fails, whatever else was unfinished: {s:?}");

        // The same output from a run that ended on its own: a pass.
        let (got, end, _) = run_streamed(fake_kani(&out, 0, "quick"), &|_| 180, Duration::from_secs(60));
        assert_eq!(end, RunEnd::Succeeded);
        assert!(judge(&[H, a], &got, end).ok);
    }

    #[test]
    fn every_harness_of_core_and_abi_is_listed_with_its_test() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace root");
        let hs = harnesses(root);
        let missing: Vec<&str> = hs.iter().filter(|h| !h.has_test).map(|h| h.path.as_str()).collect();
        assert!(missing.is_empty(), "harnesses without the test that runs their body: {missing:?}");
        assert!(hs.len() >= 42, "{} harnesses", hs.len());
        let abi = hs.iter().find(|h| h.path == "proofs::prove_udma_q_init_validate_is_the_drivers");
        assert!(
            abi.is_some_and(|h| h.file == Path::new("abi/src/proofs.rs") && h.unwind.is_none()),
            "nrt-abi's harnesses"
        );
        let mut paths: Vec<&str> = hs.iter().map(|h| h.path.as_str()).collect();
        paths.sort();
        paths.dedup();
        assert_eq!(paths.len(), hs.len(), "two harnesses of the two crates share a name");
        let push = hs.iter().find(|h| h.path == "nq::ring::proofs::prove_producer_push_contract");
        assert!(push.is_some_and(|h| h.notes == ["contract of NqProducer::push"] && h.unwind == Some(17)));
        let agree = hs.iter().find(|h| h.path == "nq::ring::proofs::prove_producer_and_consumer_agree");
        assert!(agree.is_some_and(|h| h.unwind == Some(17) && goal_of(&h.path, HARNESS_GOAL_S) == 600));
    }

    #[test]
    fn goals_are_per_harness_and_the_stage_goal_is_a_note() {
        assert_eq!(goal_of("exec::proofs::parts::prove_consume_engine_3_keeps_its_frame", HARNESS_GOAL_S), 420);
        assert_eq!(goal_of("dge::proofs::prove_dge_guards_admit_exactly_nx_pool", HARNESS_GOAL_S), HARNESS_GOAL_S);
        assert_eq!(goal_of("exec::proofs::parts::prove_consume_engine_", HARNESS_GOAL_S), HARNESS_GOAL_S);
        assert_eq!(goal_of("exec::proofs::parts::prove_consume_engine_x", HARNESS_GOAL_S), HARNESS_GOAL_S);
        assert_eq!(stage_goal_note(STAGE_GOAL_S as f64), None);
        assert!(stage_goal_note(STAGE_GOAL_S as f64 + 62.0).is_some_and(|n| n.contains("OVER ITS GOAL")));
    }

    #[test]
    fn the_busy_share_counts_every_result_against_both_threads() {
        let v = |secs| Some((Verdict { secs, ok: true, ..Verdict::default() }, String::new()));
        let results = vec![v(30.0), None, v(50.0)];
        // 80 s of verification over 50 s of 2 threads: 80 % busy.
        assert_eq!(busy_share(&results, 50.0), (80.0, 80.0));
        assert_eq!(busy_share(&results, 0.0), (80.0, 0.0));
        assert_eq!(busy_share(&[], 10.0), (0.0, 0.0));
    }
}
