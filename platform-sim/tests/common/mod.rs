//! What the seccomp-path tests (`driver.rs`, `hostile.rs`) share: whether this
//! kernel can run `nrt-sim driver` at all.

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
            eprintln!("\n!!! SKIPPED: nrt-sim driver needs seccomp user notification: {why}\n");
            return;
        }
    };
}
