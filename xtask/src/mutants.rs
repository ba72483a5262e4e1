//! `cargo xtask mutants [--file GLOB]... [--in-diff BASE] [--shard K/N]`: mutation
//! testing with cargo-mutants over core and the simulator's device model, as
//! `docs/mutants.md` describes.
//!
//! - cargo-mutants is pinned at [`CARGO_MUTANTS_VERSION`] and installed with
//!   `cargo install --locked` when `cargo mutants --version` shows another version
//!   or none.
//! - What is examined: [`SCOPE`], or the `--file` globs given. What never is and
//!   the test arguments are in `.cargo/mutants.toml`: the test platform, the
//!   kani harnesses and their stub devices, test modules.
//! - `--in-diff BASE`: only mutants on lines changed since the merge base of
//!   `BASE` and `HEAD`, uncommitted changes included.
//! - The results are in `target/mutants/mutants.out/`: `missed.txt`,
//!   `caught.txt`, `timeout.txt`, `unviable.txt`, `outcomes.json`.
//!
//! The task fails when a mutant is missed, having survived every test.
//! [`ci_stage`] is the bounded subset `cargo xtask ci` runs.

use std::fs;
use std::io::Write as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::{cargo, Runner};

/// The cargo-mutants release the project uses.
pub const CARGO_MUTANTS_VERSION: &str = "27.0.0";

/// What is mutated unless `--file` narrows it: core and the simulator's device
/// model.
pub const SCOPE: [&str; 2] = ["core/src/**/*.rs", "platform-sim/src/device.rs"];

/// The CI subset runs at most this many mutants, one shard of the diff's. On the
/// shared 2-core CI machine a mutant of core costs 10-40 s to build and test, and
/// the first build is a cold one of about 3 minutes.
pub const CI_MAX_MUTANTS: usize = 8;

/// Per cargo command of the CI subset, a build or test of one mutant, seconds.
pub const CI_MUTANT_TIMEOUT_S: u64 = 120;

/// Wall-clock cap of the CI subset.
pub const CI_WALL_CAP: Duration = Duration::from_secs(8 * 60);

/// Where cargo-mutants writes `mutants.out/`.
const OUTPUT_DIR: &str = "target/mutants";

/// `cargo xtask mutants` options.
#[derive(Debug, Default, PartialEq)]
pub struct Options {
    /// `--file GLOB`, repeatable: examine these instead of [`SCOPE`].
    pub files: Vec<String>,
    /// `--in-diff BASE`: only code changed since the merge base with `BASE`.
    pub in_diff: Option<String>,
    /// `--shard K/N`: the `K`th of `N` slices, 0-based as in cargo-mutants.
    pub shard: Option<String>,
}

impl Options {
    /// Parse the arguments after `mutants`.
    pub fn parse(args: &[String]) -> Result<Options, String> {
        let mut o = Options::default();
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let mut value = |name: &str| it.next().cloned().ok_or_else(|| format!("mutants: {name} needs a value"));
            match a.as_str() {
                "--file" => o.files.push(value("--file")?),
                "--in-diff" => o.in_diff = Some(value("--in-diff")?),
                "--shard" => {
                    let s = value("--shard")?;
                    parse_shard(&s)?;
                    o.shard = Some(s);
                }
                other => return Err(format!("mutants: unknown argument '{other}'")),
            }
        }
        Ok(o)
    }
}

/// `K/N` with `N >= 1` and `K < N`.
fn parse_shard(s: &str) -> Result<(usize, usize), String> {
    let bad = || format!("mutants: --shard '{s}' is not K/N with 0 <= K < N");
    let (k, n) = s.split_once('/').ok_or_else(bad)?;
    let (k, n) = (k.parse::<usize>().map_err(|_| bad())?, n.parse::<usize>().map_err(|_| bad())?);
    if n == 0 || k >= n {
        return Err(bad());
    }
    Ok((k, n))
}

/// The version line `cargo mutants --version` prints, when it runs.
fn installed_version() -> Option<String> {
    let o = cargo().args(["mutants", "--version"]).stdin(Stdio::null()).output().ok()?;
    o.status.success().then(|| String::from_utf8_lossy(&o.stdout).trim().to_string())
}

fn is_pinned(version: Option<&str>) -> bool {
    version.is_some_and(|v| v.split_whitespace().nth(1) == Some(CARGO_MUTANTS_VERSION))
}

/// Install the pinned cargo-mutants unless it is there. `false` when it is still
/// missing.
fn ensure_installed(run: &mut Runner) -> bool {
    let have = installed_version();
    if is_pinned(have.as_deref()) {
        return true;
    }
    println!(
        "\n    cargo mutants --version: {}; installing cargo-mutants {CARGO_MUTANTS_VERSION}",
        have.as_deref().unwrap_or("not installed")
    );
    run.cmd(
        &format!("install cargo-mutants {CARGO_MUTANTS_VERSION}"),
        cargo().args(["install", "--locked", &format!("cargo-mutants@{CARGO_MUTANTS_VERSION}")]),
    );
    is_pinned(installed_version().as_deref())
}

/// `cargo mutants` with the project's fixed arguments.
fn mutants_cmd(files: &[String]) -> Command {
    let mut c = cargo();
    c.args(["mutants", "-j", "1", "--colors", "never", "--output", OUTPUT_DIR]);
    if files.is_empty() {
        for f in SCOPE {
            c.args(["--file", f]);
        }
    } else {
        for f in files {
            c.args(["--file", f]);
        }
    }
    c
}

/// `cargo xtask mutants`.
pub fn run(run: &mut Runner, root: &Path, opts: &Options) {
    let name = "mutants";
    if !ensure_installed(run) {
        run.skip(
            name,
            &format!("cargo-mutants {CARGO_MUTANTS_VERSION} is not installed and `cargo install` failed (no network?)"),
        );
        return;
    }
    let mut c = mutants_cmd(&opts.files);
    if let Some(base) = &opts.in_diff {
        match write_diff(root, base) {
            Ok(Some(diff)) => {
                c.arg("--in-diff").arg(diff);
            }
            Ok(None) => {
                println!("\n    no change since the merge base of {base} and HEAD: no mutants to run");
                run.record(name, 0.0, true);
                return;
            }
            Err(e) => {
                println!("\n    {e}");
                run.record(name, 0.0, false);
                return;
            }
        }
    }
    if let Some(s) = &opts.shard {
        c.args(["--shard", s]);
    }
    let t = Instant::now();
    println!("\n==> {name}: {}", crate::render(&c));
    let ok = match c.status() {
        Ok(s) => verdict(s.code()),
        Err(e) => {
            println!("    could not start cargo mutants: {e}");
            false
        }
    };
    summarise(root);
    run.record(name, t.elapsed().as_secs_f64(), ok);
}

/// cargo-mutants' exit code: 0 all caught or unviable, 2 some missed, 3 some
/// timed out and none missed, 4 the unmutated tree failed its tests. A timeout
/// means the mutant made the tests hang, which the suite noticed: not a survivor.
fn verdict(code: Option<i32>) -> bool {
    match code {
        Some(0) | Some(3) => true,
        Some(2) => {
            println!("    FAILED: mutants survived every test (missed): see {OUTPUT_DIR}/mutants.out/missed.txt");
            false
        }
        Some(4) => {
            println!("    FAILED: the tests fail without any mutation (baseline)");
            false
        }
        other => {
            println!("    FAILED: cargo mutants exited with {other:?}");
            false
        }
    }
}

/// Count the outcomes in `mutants.out/` and print them with the score. Returns
/// the mutants tested, viable or not, and those missed.
fn summarise(root: &Path) -> (usize, usize) {
    let dir = root.join(OUTPUT_DIR).join("mutants.out");
    let lines = |f: &str| -> Vec<String> {
        fs::read_to_string(dir.join(f)).map(|s| s.lines().map(str::to_string).collect()).unwrap_or_default()
    };
    let (caught, missed, timeout, unviable) =
        (lines("caught.txt"), lines("missed.txt"), lines("timeout.txt"), lines("unviable.txt"));
    let viable = caught.len() + missed.len() + timeout.len();
    if viable + unviable.len() == 0 {
        return (0, 0);
    }
    let score = if viable == 0 { 100.0 } else { 100.0 * (caught.len() + timeout.len()) as f64 / viable as f64 };
    println!(
        "    caught {}, timed out {}, missed {}, unviable {}: {score:.1} % of {viable} viable caught",
        caught.len(),
        timeout.len(),
        missed.len(),
        unviable.len()
    );
    for m in &missed {
        println!("    MISSED {m}");
    }
    (viable + unviable.len(), missed.len())
}

/// Write the diff of the working tree against the merge base of `base` and
/// `HEAD` to `target/mutants/in.diff`. `Ok(None)` when it is empty.
fn write_diff(root: &Path, base: &str) -> Result<Option<PathBuf>, String> {
    let mb = git(root, &["merge-base", base, "HEAD"])
        .ok_or_else(|| format!("mutants: no merge base of '{base}' and HEAD (`git merge-base {base} HEAD` failed)"))?;
    write_diff_from(root, &mb)
}

fn write_diff_from(root: &Path, rev: &str) -> Result<Option<PathBuf>, String> {
    let o = Command::new("git")
        .current_dir(root)
        .args(["diff", "--no-color", "--no-ext-diff", rev, "--"])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("mutants: could not run git diff {rev}: {e}"))?;
    if !o.status.success() {
        return Err(format!("mutants: git diff {rev} failed: {}", String::from_utf8_lossy(&o.stderr).trim()));
    }
    if o.stdout.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let dir = root.join(OUTPUT_DIR);
    fs::create_dir_all(&dir).map_err(|e| format!("mutants: could not create {}: {e}", dir.display()))?;
    let path = dir.join("in.diff");
    fs::File::create(&path)
        .and_then(|mut f| f.write_all(&o.stdout))
        .map_err(|e| format!("mutants: could not write {}: {e}", path.display()))?;
    Ok(Some(path))
}

/// `git args` in `root`: its trimmed output when it succeeds.
fn git(root: &Path, args: &[&str]) -> Option<String> {
    let o = Command::new("git").current_dir(root).args(args).stdin(Stdio::null()).output().ok()?;
    let s = String::from_utf8_lossy(&o.stdout).trim().to_string();
    (o.status.success() && !s.is_empty()).then_some(s)
}

/// The commit the CI subset diffs against, and why. On a branch, the merge base
/// with `origin/main` or `main`; when that is `HEAD` itself, as in a fresh clone
/// of main, `HEAD~1`.
fn ci_base(root: &Path) -> Option<(String, String)> {
    let head = git(root, &["rev-parse", "HEAD"])?;
    for r in ["origin/main", "main"] {
        if let Some(mb) = git(root, &["merge-base", r, "HEAD"]) {
            if mb != head {
                return Some((mb, format!("the merge base with {r}")));
            }
        }
    }
    git(root, &["rev-parse", "--verify", "-q", "HEAD~1"]).map(|p| (p, "HEAD~1 (main's previous commit)".to_string()))
}

/// The mutants `cargo mutants --list` finds for `cmd`'s arguments.
fn count_mutants(files: &[String], diff: &Path) -> Result<usize, String> {
    let mut c = mutants_cmd(files);
    c.arg("--in-diff").arg(diff).arg("--list");
    let o = c.stdin(Stdio::null()).output().map_err(|e| format!("could not run cargo mutants --list: {e}"))?;
    if !o.status.success() {
        return Err(format!("cargo mutants --list failed: {}", String::from_utf8_lossy(&o.stderr).trim()));
    }
    Ok(String::from_utf8_lossy(&o.stdout).lines().filter(|l| !l.trim().is_empty()).count())
}

/// The CI subset: the mutants on lines changed since [`ci_base`], at most
/// [`CI_MAX_MUTANTS`] of them in one shard, chosen by the commit so that
/// successive commits rotate through the shards. Each cargo command is capped at
/// [`CI_MUTANT_TIMEOUT_S`] and the whole stage at [`CI_WALL_CAP`]. `--baseline
/// skip` leaves out the unmutated baseline: CI's test stage has just run the
/// same suite. Fails when a mutant of the subset is missed. Says SKIPPED when
/// cargo-mutants cannot be installed, when there is no base to diff against,
/// and, with how far it got, when the cap stopped the run before the subset was done.
pub fn ci_stage(run: &mut Runner, root: &Path) {
    let name = "mutants (changed lines, bounded)";
    if !ensure_installed(run) {
        run.skip(
            name,
            &format!(
                "cargo-mutants {CARGO_MUTANTS_VERSION} is not installed and `cargo install --locked \
                 cargo-mutants@{CARGO_MUTANTS_VERSION}` failed (no network?): NO MUTATION TESTING RAN"
            ),
        );
        return;
    }
    let Some((base, why)) = ci_base(root) else {
        run.skip(name, "no base commit to diff against (a single-commit or shallow clone): NO MUTATION TESTING RAN");
        return;
    };
    let t = Instant::now();
    let diff = match write_diff_from(root, &base) {
        Ok(Some(d)) => d,
        Ok(None) => {
            println!("\n    {name}: no change since {why} ({base}): no mutants to run");
            run.record(name, 0.0, true);
            return;
        }
        Err(e) => {
            println!("\n    {name}: {e}");
            run.record(name, 0.0, false);
            return;
        }
    };
    let n = match count_mutants(&[], &diff) {
        Ok(n) => n,
        Err(e) => {
            println!("\n    {name}: {e}");
            run.record(name, t.elapsed().as_secs_f64(), false);
            return;
        }
    };
    if n == 0 {
        println!("\n    {name}: the changes since {why} ({base}) touch no mutable code of core or the device model");
        run.record(name, t.elapsed().as_secs_f64(), true);
        return;
    }
    let shards = n.div_ceil(CI_MAX_MUTANTS);
    let head = git(root, &["rev-parse", "HEAD"]).unwrap_or_default();
    let k = usize::from_str_radix(head.get(..6).unwrap_or("0"), 16).unwrap_or(0) % shards;
    if shards > 1 {
        println!(
            "\n    {name}: {n} mutants on the lines changed since {why} ({base}); running shard {k}/{shards} \
             (at most {CI_MAX_MUTANTS}); all of them: `cargo xtask mutants --in-diff {base}`"
        );
    } else {
        println!("\n    {name}: {n} mutants on the lines changed since {why} ({base}); running all of them");
    }
    let mut c = mutants_cmd(&[]);
    c.arg("--in-diff").arg(&diff).args(["--timeout", &CI_MUTANT_TIMEOUT_S.to_string(), "--baseline", "skip"]);
    if shards > 1 {
        c.args(["--shard", &format!("{k}/{shards}")]);
    }
    println!("==> {name}: {}", crate::render(&c));
    let outcome = run_capped(&mut c, CI_WALL_CAP);
    let (done, missed) = summarise(root);
    match outcome {
        Ok(code) => run.record(name, t.elapsed().as_secs_f64(), verdict(code)),
        Err(Capped::Start(e)) => {
            println!("    FAILED: {e}");
            run.record(name, t.elapsed().as_secs_f64(), false);
        }
        Err(Capped::Cap) if missed > 0 => {
            println!("    FAILED: {missed} mutants missed before the {} s cap", CI_WALL_CAP.as_secs());
            run.record(name, t.elapsed().as_secs_f64(), false);
        }
        Err(Capped::Cap) => run.skip_short(
            name,
            &format!(
                "the {} s cap stopped cargo mutants after {done} of the subset's mutants (none missed); \
                 the rest: `cargo xtask mutants --in-diff {base}`",
                CI_WALL_CAP.as_secs()
            ),
            &format!("cap hit after {done} mutants, none missed"),
        ),
    }
}

/// Why [`run_capped`] gave no exit code.
enum Capped {
    /// cargo mutants could not be started or waited for.
    Start(String),
    /// The wall-clock cap was hit; the process group was killed.
    Cap,
}

/// Run `cmd` in its own process group; past `cap`, kill the group.
fn run_capped(cmd: &mut Command, cap: Duration) -> Result<Option<i32>, Capped> {
    let mut child = cmd
        .stdin(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|e| Capped::Start(format!("could not start cargo mutants: {e}")))?;
    let t = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(s)) => return Ok(s.code()),
            Ok(None) if t.elapsed() >= cap => {
                // The group: cargo mutants and the cargo build/test it runs.
                let _ = Command::new("kill").args(["-KILL", "--", &format!("-{}", child.id())]).status();
                let _ = child.wait();
                println!("    cargo mutants did not finish within {} s: stopped", cap.as_secs());
                return Err(Capped::Cap);
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(500)),
            Err(e) => return Err(Capped::Start(format!("waiting for cargo mutants: {e}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn options_parse() {
        assert_eq!(Options::parse(&[]), Ok(Options::default()));
        let o = Options::parse(&args("--file core/src/exec/** --file core/src/nq/** --in-diff main --shard 1/4"));
        assert_eq!(
            o,
            Ok(Options {
                files: vec!["core/src/exec/**".into(), "core/src/nq/**".into()],
                in_diff: Some("main".into()),
                shard: Some("1/4".into()),
            })
        );
        for bad in ["--shard 4/4", "--shard 1/0", "--shard x", "--file", "--in-diff", "--frobnicate"] {
            assert!(Options::parse(&args(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_pinned_version_is_recognised() {
        assert!(is_pinned(Some("cargo-mutants 27.0.0")));
        assert!(!is_pinned(Some("cargo-mutants 27.0.1")));
        assert!(!is_pinned(Some("cargo-mutants 26.2.0")));
        assert!(!is_pinned(None));
    }

    #[test]
    fn exit_codes() {
        assert!(verdict(Some(0)));
        assert!(verdict(Some(3)), "a timeout is the suite noticing a hang");
        assert!(!verdict(Some(2)), "missed mutants fail");
        assert!(!verdict(Some(4)));
        assert!(!verdict(Some(1)));
        assert!(!verdict(None));
    }
}
