//! What the simulator's integration tests share: whether this kernel can run
//! `nrt-sim driver` at all (the seccomp-path tests, `driver.rs`,
//! `hostile.rs`), and how a test that cannot check something here says so.
#![allow(dead_code, unused_macros)] // each test binary uses its own subset

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
/// `chromium`): where `CI` is set and no [`SKIP_LOG`] records the skip (a CI
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

/// Why the seccomp path cannot run here, if it cannot.
pub fn unavailable() -> Option<String> {
    match std::fs::read_to_string("/proc/sys/kernel/seccomp/actions_avail") {
        Ok(t) if t.split_whitespace().any(|a| a == "user_notif") => None,
        Ok(t) => Some(format!("seccomp actions \"{}\" have no user_notif", t.trim())),
        Err(e) => Some(format!("/proc/sys/kernel/seccomp/actions_avail: {e}")),
    }
}

/// Return from the test, saying SKIPPED loudly with the reason, when this
/// kernel has no seccomp user notification.
macro_rules! need_user_notif {
    () => {
        if let Some(why) = common::unavailable() {
            common::skip(&format!("nrt-sim driver needs seccomp user notification: {why}"));
            return;
        }
    };
}
