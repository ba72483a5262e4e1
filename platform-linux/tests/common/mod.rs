//! Helpers shared by the integration tests that build other artifacts (the
//! static library, the nrt-sim binary) and C programs, and how a test that
//! cannot check something here says so ([`skip`]).
#![allow(dead_code)] // each test binary uses its own subset

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The Neuron runtime's variables this binding reads (`nrt_linux::config`).
pub const RT_VARS: [&str; 8] = [
    "NEURON_RT_EXEC_TIMEOUT",
    "NEURON_RT_VISIBLE_CORES",
    "NEURON_RT_NUM_CORES",
    "NEURON_RT_LOG_LEVEL",
    "NEURON_RT_LOG_LEVEL_TDRV",
    "NEURON_RT_LOG_LEVEL_NMGR",
    "NEURON_RT_LOG_LEVEL_KMGR",
    "NEURON_RT_LOG_LEVEL_NRT",
];

/// `c` without the runtime's variables of this process (a test's child sees
/// only those the test sets, whatever the environment `cargo test` ran in).
pub fn without_rt_env(mut c: Command) -> Command {
    for v in RT_VARS {
        c.env_remove(v);
    }
    c
}

/// `cargo build --quiet ARGS` into `target/<subdir>` (its own target directory:
/// the outer `cargo test` may hold the main one, and `cargo test` builds no
/// staticlib). Returns `target/<subdir>/debug`.
pub fn cargo_build(args: &[&str], subdir: &str) -> PathBuf {
    // target/<profile>/deps/<test>-xxxx -> target
    let exe = std::env::current_exe().unwrap();
    let target = exe.ancestors().nth(3).unwrap().join(subdir);
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "--quiet"])
        .args(args)
        .arg("--target-dir")
        .arg(&target)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .expect("cargo runs");
    assert!(status.success(), "cargo build {args:?} failed");
    target.join("debug")
}

/// The `nrt-sim` binary, built into `target/c-abi` (the tests that run the
/// driver model: `nrt-sim driver -- COMMAND`).
pub fn nrt_sim() -> PathBuf {
    cargo_build(&["-p", "nrt-sim", "--bin", "nrt-sim"], "c-abi").join("nrt-sim")
}

/// Whether this kernel offers seccomp user notification, which `nrt-sim
/// driver` needs (else: why not).
pub fn user_notif() -> Result<(), String> {
    let avail = std::fs::read_to_string("/proc/sys/kernel/seccomp/actions_avail")
        .map_err(|e| format!("/proc/sys/kernel/seccomp/actions_avail: {e}"))?;
    if avail.split_whitespace().any(|a| a == "user_notif") {
        Ok(())
    } else {
        Err(format!("the kernel's seccomp actions are '{}', without user_notif", avail.trim()))
    }
}

/// Compile `tests/c/<source>` against `include/` and the static library `lib`
/// into `out`, warnings as errors.
pub fn compile_c(source: &str, lib: &Path, out: &Path) {
    let dir = env!("CARGO_MANIFEST_DIR");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = Command::new(&cc)
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-O1"])
        .arg(format!("-I{dir}/include"))
        .arg(format!("{dir}/tests/c/{source}"))
        .arg(lib)
        .args(["-lpthread", "-ldl", "-lm", "-o"])
        .arg(out)
        .status()
        .expect("a C compiler (cc) is installed");
    assert!(status.success(), "C build of {source} failed");
}

/// `nrt-sim serve --inferences N --shm PATH`, with its output captured.
pub fn spawn_server(sim: &Path, path: &Path, inferences: u32) -> Child {
    spawn_server_with(sim, path, inferences, &[])
}

/// As [`spawn_server`], with more arguments (`--inject ...`).
pub fn spawn_server_with(sim: &Path, path: &Path, inferences: u32, more: &[&str]) -> Child {
    without_rt_env(Command::new(sim))
        .args(["serve", "--inferences", &inferences.to_string(), "--idle-timeout-s", "20"])
        .args(more)
        .arg("--shm")
        .arg(path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("nrt-sim runs")
}

/// The variable naming the file a skipped check is recorded in; `cargo xtask
/// ci` sets it for its test stage and lists each line as a SKIPPED stage with
/// its reason (xtask's `test_skips`).
pub const SKIP_LOG: &str = "NRT_SKIP_LOG";

/// Say that the running test checks nothing here, and why, where a person
/// sees it: on standard error past the test harness's capture (which hides a
/// passing test's output), and, when [`SKIP_LOG`] names a file, as a line
/// `TEST<TAB>REASON` appended to it. The test then returns.
pub fn skip(why: &str) {
    use std::io::Write;
    let test =
        format!("{}::{}", env!("CARGO_CRATE_NAME"), std::thread::current().name().unwrap_or("(unnamed test thread)"));
    let why = why.replace(['\t', '\n'], " ");
    let _ = writeln!(std::io::stderr(), "\n!!! SKIPPED {test}: {why}\n");
    if let Some(path) = std::env::var_os(SKIP_LOG) {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .unwrap_or_else(|e| panic!("{test}: recording the skip in {SKIP_LOG}={path:?}: {e}"));
        f.write_all(format!("{test}\t{why}\n").as_bytes())
            .unwrap_or_else(|e| panic!("{test}: recording the skip in {SKIP_LOG}={path:?}: {e}"));
    }
}

/// As [`skip`], for a check whose tool `cargo xtask ci` installs (Debian's
/// `strace`): where `CI` is set and no [`SKIP_LOG`] records the skip (a CI
/// that runs `cargo test` itself, where nobody would see it), the test fails
/// instead, naming why.
pub fn skip_or_fail_in_ci(why: &str) {
    if std::env::var_os("CI").is_some() && std::env::var_os(SKIP_LOG).is_none() {
        panic!(
            "{why}; CI is set and no skip log ({SKIP_LOG}, which `cargo xtask ci` sets and reports) records a skip, \
             so the check fails rather than pass unseen"
        );
    }
    skip(why);
}
