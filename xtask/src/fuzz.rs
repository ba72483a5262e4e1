//! `cargo xtask fuzz [--secs N]`: every cargo-fuzz target of `fuzz/` for `N`
//! seconds: a short run in CI, a long one on demand.
//!
//! New inputs go to `target/fuzz-corpus/<target>`, not committed; the seeds in
//! `fuzz/corpus/<target>` are read only. A crash leaves its input in
//! `fuzz/artifacts/<target>/`: reproduce it with `cargo +nightly fuzz run <target>
//! <file>` and turn it into a regression test in core. Where cargo-fuzz or nightly
//! is missing, the target bodies run as plain tests over the seeds and generated
//! inputs instead, `cargo test` in `fuzz/`, and the stage says so.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::{cargo, works, Runner};

/// The targets, each `fuzz/fuzz_targets/<name>.rs`.
pub const TARGETS: [&str; 3] = ["decode", "harvest", "dma"];

fn nightly_cargo() -> Command {
    let mut c = Command::new("rustup");
    c.args(["run", "nightly", "cargo"]);
    c.env_remove("RUSTUP_TOOLCHAIN").env_remove("RUSTFLAGS").env_remove("CARGO");
    c
}

pub fn run(run: &mut Runner, secs: u64) {
    if !works(nightly_cargo().args(["fuzz", "--version"])) {
        run.skip(
            "fuzz (libFuzzer)",
            "cargo-fuzz or the nightly toolchain is missing (`cargo install cargo-fuzz`); \
             running the target bodies over the seeds and generated inputs as tests instead",
        );
        run.cmd(
            "fuzz target bodies as tests",
            cargo().args(["test", "--release", "--manifest-path", "fuzz/Cargo.toml"]).env_remove("RUSTFLAGS"),
        );
        return;
    }
    if !run.cmd("fuzz build", nightly_cargo().args(["fuzz", "build", "-a"])) {
        return;
    }
    for t in TARGETS {
        let work = Path::new("target/fuzz-corpus").join(t);
        let _ = fs::create_dir_all(&work);
        let seeds = Path::new("fuzz/corpus").join(t);
        let mut c = nightly_cargo();
        c.args(["fuzz", "run", "-a", t]).arg(&work);
        if seeds.is_dir() {
            c.arg(&seeds);
        }
        c.args(["--", &format!("-max_total_time={secs}"), "-timeout=10", "-rss_limit_mb=2048", "-print_final_stats=1"]);
        let (ok, text) = run.cmd_capture(&format!("fuzz {t} ({secs} s)"), &mut c);
        // libFuzzer prints a line per new input: show the verdict and the totals.
        for line in text.lines() {
            let l = line.trim_start();
            if l.starts_with("Done ")
                || l.starts_with("stat::number_of_executed_units")
                || l.starts_with("stat::average_exec_per_sec")
                || l.starts_with("stat::new_units_added")
                || l.contains("ERROR")
                || l.contains("panicked")
                || l.contains("Test unit written")
                || l.starts_with("#") && l.contains("DONE")
            {
                println!("    {l}");
            }
        }
        if !ok {
            println!("    last lines:");
            let lines: Vec<&str> = text.lines().collect();
            for l in &lines[lines.len().saturating_sub(25)..] {
                println!("      {l}");
            }
            println!(
                "    a crash input is in fuzz/artifacts/{t}/: reproduce with `cargo +nightly fuzz run {t} <file>` \
                 and add it to core's tests as a regression test"
            );
        }
    }
}
