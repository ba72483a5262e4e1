//! The process behind a notification: its thread group and a pidfd on it,
//! resolved afresh for each call, so that a reused thread id is never taken
//! for the process that once had it.

#![allow(unsafe_code)]

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// The thread group of thread `tid`; `None` when there is no such thread.
pub(super) fn tgid_of(tid: u32) -> Option<u32> {
    std::fs::read_to_string(format!("/proc/{tid}/status"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("Tgid:").and_then(|v| v.trim().parse().ok()))
}

/// A pidfd for process `pid`.
pub(super) fn pidfd_open(pid: u32) -> Option<OwnedFd> {
    // SAFETY: pidfd_open(2) takes a pid and flags; the result is checked.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    // SAFETY: a fresh descriptor the kernel gave this process.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// `SIGKILL` to the process of `pidfd`.
pub(super) fn pidfd_kill(pidfd: &OwnedFd) {
    // SAFETY: a pidfd this process holds, no siginfo; a failure means it is gone.
    unsafe {
        libc::syscall(libc::SYS_pidfd_send_signal, pidfd.as_raw_fd(), libc::SIGKILL, std::ptr::null::<u8>(), 0);
    }
}

/// Whether the process of `pidfd` has exited: its pidfd polls readable.
pub(super) fn pidfd_exited(pidfd: &OwnedFd) -> bool {
    let mut p = libc::pollfd { fd: pidfd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd, no wait.
    unsafe { libc::poll(&mut p, 1, 0) > 0 }
}

/// The process that made a call, resolved for this notification only.
pub(super) struct Caller {
    pub(super) tgid: u32,
    pub(super) pidfd: OwnedFd,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_its_own_thread_group() {
        let me = std::process::id();
        assert_eq!(tgid_of(me), Some(me));
        let pidfd = pidfd_open(me).expect("a pidfd on this process");
        assert!(!pidfd_exited(&pidfd));
    }
}
