//! What the simulator's integration tests share: whether this kernel can run
//! `nrt-sim driver` at all (the seccomp-path tests, `driver.rs`,
//! `hostile.rs`), and how a test that cannot check something here says so.
#![allow(dead_code, unused_macros)] // each test binary uses its own subset

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
