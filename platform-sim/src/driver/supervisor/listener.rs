//! The seccomp listener: receive a notification, check it is live, answer it.

#![allow(unsafe_code)]

use std::os::fd::{AsRawFd, OwnedFd, RawFd};

/// The listener COMMAND sent before its exec.
pub(super) struct Listener {
    pub(super) fd: OwnedFd,
}

impl Listener {
    pub(super) fn recv(&self) -> std::io::Result<libc::seccomp_notif> {
        // SAFETY: the kernel requires a zeroed seccomp_notif; all-zero is valid.
        let mut n: libc::seccomp_notif = unsafe { std::mem::zeroed() };
        // SAFETY: a seccomp listener and a seccomp_notif of the kernel's size.
        let rc = unsafe { libc::ioctl(self.fd.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_RECV, &mut n) };
        if rc < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(n)
    }

    pub(super) fn valid(&self, id: u64) -> bool {
        let mut id = id;
        // SAFETY: the ioctl reads one u64.
        unsafe { libc::ioctl(self.fd.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_ID_VALID, &mut id) == 0 }
    }

    pub(super) fn respond(&self, id: u64, val: i64, errno: i32, flags: u32) {
        if !self.valid(id) {
            return;
        }
        let mut r = libc::seccomp_notif_resp { id, val, error: -errno, flags };
        // SAFETY: a seccomp_notif_resp of the kernel's layout; a failure means
        // the caller died meanwhile.
        unsafe {
            libc::ioctl(self.fd.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_SEND, &mut r);
        }
    }

    pub(super) fn cont(&self, id: u64) {
        self.respond(id, 0, 0, libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32);
    }

    /// Answer with a new descriptor for `src` in the caller, numbered `at` or
    /// else the lowest free; its number, or the errno.
    pub(super) fn add_fd(&self, id: u64, src: RawFd, cloexec: bool, at: Option<i32>) -> Result<i32, i32> {
        if !self.valid(id) {
            return Err(libc::ESRCH);
        }
        let setfd = if at.is_some() { libc::SECCOMP_ADDFD_FLAG_SETFD as u32 } else { 0 };
        let mut a = libc::seccomp_notif_addfd {
            id,
            flags: libc::SECCOMP_ADDFD_FLAG_SEND as u32 | setfd,
            srcfd: src as u32,
            newfd: at.map_or(0, |n| n as u32),
            newfd_flags: if cloexec { libc::O_CLOEXEC as u32 } else { 0 },
        };
        // SAFETY: a seccomp_notif_addfd of the kernel's layout.
        let rc = unsafe { libc::ioctl(self.fd.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_ADDFD, &mut a) };
        if rc < 0 {
            Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO))
        } else {
            Ok(rc)
        }
    }
}
