//! `cargo xtask kani`, `miri`, `loom`: the formal and concurrency checks of core.
//!
//! kani cannot be installed everywhere (its setup downloads from GitHub), so every
//! `#[kani::proof]` harness body also runs as a `#[test]` (the `X_tests` beside
//! `prove_X`, see `core/src/proofs.rs`); this stage lists the pairs, fails a
//! harness that has no test, runs `cargo kani` where it exists (failing on an
//! unsatisfiable `kani::cover!`), and otherwise says SKIPPED and why.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::{cargo, works, Runner};

/// A kani harness and the test that runs the same property body.
struct Harness {
    /// `prove_x`.
    proof: String,
    /// `module::path::tests::x_tests`.
    test: String,
    /// The file it is in.
    file: PathBuf,
    /// The test exists in that file.
    has_test: bool,
}

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = fs::read_dir(dir) else { return };
    let mut entries: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rs_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// Every `#[kani::proof]` under `core/src`, with its test.
fn harnesses(root: &Path) -> Vec<Harness> {
    let src = root.join("core/src");
    let mut files = Vec::new();
    rs_files(&src, &mut files);
    let mut out = Vec::new();
    for file in files {
        let Ok(text) = fs::read_to_string(&file) else { continue };
        let rel = file.strip_prefix(&src).unwrap_or(&file).with_extension("");
        let module = rel.to_string_lossy().replace(['/', '\\'], "::");
        let module = module.strip_suffix("::mod").unwrap_or(&module).to_string();
        let mut armed = false;
        for line in text.lines() {
            let l = line.trim();
            if l.starts_with("#[kani::proof]") {
                armed = true;
                continue;
            }
            if armed {
                if let Some(rest) = l.strip_prefix("fn ").or_else(|| l.strip_prefix("pub fn ")) {
                    let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                    let body = name.strip_prefix("prove_").unwrap_or(&name).to_string();
                    let test = format!("{body}_tests");
                    out.push(Harness {
                        has_test: text.contains(&format!("fn {test}()")),
                        test: format!("{module}::tests::{test}"),
                        proof: name,
                        file: file.strip_prefix(root).unwrap_or(&file).to_path_buf(),
                    });
                    armed = false;
                }
            }
        }
    }
    out
}

/// The kani stage. In CI (`in_ci`) the tests already ran in the `test` stage; on
/// its own, the same properties run here as tests when kani is absent.
pub fn kani(run: &mut Runner, root: &Path, in_ci: bool) {
    let t = Instant::now();
    let hs = harnesses(root);
    println!("\n==> kani harnesses ({}), each with the test that runs the same property:", hs.len());
    for h in &hs {
        println!("    {:<58} {}  [{}]{}", h.proof, h.test, h.file.display(), if h.has_test { "" } else { "  NO TEST" });
    }
    let untested: Vec<&str> = hs.iter().filter(|h| !h.has_test).map(|h| h.proof.as_str()).collect();
    if !untested.is_empty() {
        println!("    every harness needs a test running the same body: missing for {untested:?}");
    }
    run.record(
        "kani harness list (each with its test)",
        t.elapsed().as_secs_f64(),
        untested.is_empty() && !hs.is_empty(),
    );

    let tests: Vec<&str> = hs.iter().map(|h| h.test.as_str()).collect();
    if works(cargo().args(["kani", "--version"])) {
        let out = run.cmd_output("cargo kani -p nrt-core", cargo().args(["kani", "-p", "nrt-core"]));
        if let Some(text) = out {
            let vacuous: Vec<&str> =
                text.lines().filter(|l| l.contains("UNSATISFIABLE") || l.contains("UNREACHABLE")).collect();
            let ok = vacuous.is_empty();
            if !ok {
                println!("    unreachable or unsatisfiable covers (a vacuous proof):");
                for l in &vacuous {
                    println!("      {l}");
                }
            }
            run.record("kani covers all satisfiable", 0.0, ok);
        }
        return;
    }
    let why = format!(
        "cargo-kani is not installed (its setup downloads from GitHub, which this machine cannot reach); \
         the same properties ran as tests: {}",
        tests.join(", ")
    );
    run.skip_short(
        "kani",
        &why,
        &format!("cargo-kani not installed; the same {} properties ran as tests", tests.len()),
    );
    if !in_ci {
        run.cmd("the kani properties as tests", cargo().args(["test", "-p", "nrt-core", "--lib", "proofs::"]));
    }
}

/// `rustup run nightly <program>`.
fn nightly(program: &str) -> Command {
    let mut c = Command::new("rustup");
    c.args(["run", "nightly", program]);
    c.env_remove("RUSTUP_TOOLCHAIN").env_remove("RUSTFLAGS").env_remove("CARGO");
    c
}

/// Core's tests under Miri (nightly, the `miri` component; installed when missing).
pub fn miri(run: &mut Runner) {
    if !works(nightly("cargo").arg("--version")) {
        run.skip("miri", "no nightly toolchain (`rustup toolchain install nightly` failed or is not possible here)");
        return;
    }
    if !works(nightly("cargo").args(["miri", "--version"])) {
        println!("\n==> rustup component add --toolchain nightly miri rust-src");
        let added =
            works(Command::new("rustup").args(["component", "add", "--toolchain", "nightly", "miri", "rust-src"]));
        if !added {
            run.skip("miri", "the nightly `miri` component is not installed and `rustup component add` failed");
            return;
        }
    }
    if !run.cmd("miri setup", nightly("cargo").args(["miri", "setup"])) {
        return;
    }
    // Proptest reads the working directory for its failure files: isolation off
    // (the tests touch no other host state). Miri lowers every proptest to 4
    // cases and the exhaustive proofs to a sample (`cfg!(miri)`).
    let flags = std::env::var("MIRIFLAGS")
        .map(|f| format!("{f} -Zmiri-disable-isolation"))
        .unwrap_or_else(|_| "-Zmiri-disable-isolation".into());
    run.cmd(
        "miri test -p nrt-core --lib",
        nightly("cargo")
            .args(["miri", "test", "-p", "nrt-core", "--lib"])
            .env("MIRIFLAGS", flags)
            .env("PROPTEST_DISABLE_FAILURE_PERSISTENCE", "1"),
    );
}

/// The loom models: release mode, `--cfg loom`, their own target directory (so
/// the flag does not rebuild the normal one).
pub fn loom(run: &mut Runner) {
    run.cmd(
        "loom (XU handoff, tensor waiters)",
        cargo()
            .args(["test", "--release", "-p", "nrt-core", "--features", "test-utils", "--test", "loom"])
            .args(["--target-dir", "target/loom"])
            .env("RUSTFLAGS", "--cfg loom"),
    );
}
