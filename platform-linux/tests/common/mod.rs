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
    // The others too: each one set is warned of (`config::unhonoured`).
    for (k, _) in std::env::vars_os() {
        if k.to_str().is_some_and(|k| k.starts_with("NEURON_RT_")) {
            c.env_remove(k);
        }
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

/// Whether `nrt-sim driver` can run here; if not, the running test is
/// recorded as skipped, naming why ([`skip`]), and should return.
pub fn need_user_notif() -> bool {
    match user_notif() {
        Ok(()) => true,
        Err(why) => {
            skip(&format!("nrt-sim driver needs seccomp user notification: {why}"));
            false
        }
    }
}

/// Compile `tests/c/<source>` against `include/` and the static library `lib`
/// into `out`, warnings as errors.
pub fn compile_c(source: &str, lib: &Path, out: &Path) {
    compile_c_file(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c").join(source), lib, out);
}

/// As [`compile_c`], for a C file anywhere (an example).
pub fn compile_c_file(source: &Path, lib: &Path, out: &Path) {
    let dir = env!("CARGO_MANIFEST_DIR");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = Command::new(&cc)
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-O1"])
        .arg(format!("-I{dir}/include"))
        .arg(source)
        .arg(lib)
        .args(["-lpthread", "-ldl", "-lm", "-o"])
        .arg(out)
        .status()
        .expect("a C compiler (cc) is installed");
    assert!(status.success(), "C build of {} failed", source.display());
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

/// Say that the running test checks nothing here because this machine
/// lacks something no package gives (a kernel feature), and why
/// (`nrt_abi::skip::record`: on standard error past the harness's capture,
/// and in the file `NRT_SKIP_LOG` names, which `cargo xtask ci` reads). The
/// test then returns.
pub fn skip(why: &str) {
    nrt_abi::skip::record(
        &nrt_abi::skip::test_name(env!("CARGO_CRATE_NAME")),
        nrt_abi::skip::SkipClass::Unsupported,
        why,
    );
}

/// As [`skip`], for a check that needs Debian's `pkg`, which `cargo xtask
/// ci`'s setup installs (`nrt_abi::skip::missing_tool`): recorded as a skip
/// this machine could have avoided (apt-get, root, a candidate: `cargo xtask
/// ci`'s SKIPPED stage then says the install failed) or one it could not;
/// where `CI` is set and no skip log is named, the test fails instead, naming
/// why.
pub fn skip_missing_tool(pkg: &str, why: &str) {
    nrt_abi::skip::missing_tool(&nrt_abi::skip::test_name(env!("CARGO_CRATE_NAME")), pkg, why);
}

/// The header's comments as plain C: the Rust docs' links, code marks,
/// paths and the spec-gap ids they cite are the Rust side's, not a C reader's.
pub fn plain_c(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let body = line.trim_start();
        if !(body.starts_with("//") || body.starts_with("/*") || body.starts_with('*')) {
            out.push_str(line);
            continue;
        }
        let mut l = line.replace("[`", "").replace("`]", "").replace('`', "");
        // Parenthesised asides that are only ids or Rust paths go; bare ids go.
        while let Some((a, b)) = aside(&l) {
            l.replace_range(a..b, "");
        }
        // Punctuation an aside left at a line's start goes back to the line before.
        let indent = line.len() - body.len();
        if let Some(rest) = l.get(indent + 2..).filter(|_| body.starts_with("//")) {
            if let Some(p) = rest.chars().next().filter(|c| matches!(c, '.' | ',' | ':' | ';')) {
                if out.ends_with('\n') {
                    out.pop();
                    out.push(p);
                    out.push('\n');
                }
                let tail = rest[1..].trim_start();
                if tail.trim().is_empty() {
                    continue;
                }
                l = format!("{}// {tail}", &line[..indent]);
            }
        }
        out.push_str(&l);
    }
    out
}

/// The byte range of the first ` (G-ID)`, ` (crate::x)`, `, G-ID` or `G-ID `
/// of a comment line, to drop.
fn aside(l: &str) -> Option<(usize, usize)> {
    let id_end = |from: usize| {
        from + l[from..]
            .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '-'))
            .unwrap_or(l.len() - from)
    };
    if let Some(i) = l.find(" (G-") {
        let e = id_end(i + 2);
        if l[e..].starts_with(')') {
            return Some((i, e + 1));
        }
    }
    if let Some(i) = l.find("(crate::") {
        let e = i + l[i..].find(')')? + 1;
        let start = if l[..i].ends_with(' ') { i - 1 } else { i };
        return Some((start, e));
    }
    if let Some(i) = l.find(", G-") {
        return Some((i, id_end(i + 2)));
    }
    if let Some(i) = l.find("G-").filter(|i| l[i + 2..].starts_with(|c: char| c.is_ascii_uppercase())) {
        let e = id_end(i);
        let e = if l[e..].starts_with(' ') { e + 1 } else { e };
        return Some((i, e));
    }
    None
}
