//! Opens: `/dev/neuron0` gets a descriptor of the device memfd at the
//! lowest free number of the reserved range, keeping the caller's
//! `O_CLOEXEC`; another `/dev/neuron<N>` is `ENOENT`; any other path opens
//! natively.

use std::time::Instant;

use super::memory::read_path;
use super::session::Session;
use super::{DEVICE_FD_BASE, DEVICE_FD_SLOTS, DEVICE_PATH, MAX_ATTACHED};
use crate::driver::model::OpenMode;

/// The device path `/dev/neuron<N>`'s N.
fn neuron_index(path: &[u8]) -> Option<u32> {
    let rest = path.strip_prefix(b"/dev/neuron")?;
    if rest.is_empty() || !rest.iter().all(u8::is_ascii_digit) || rest.len() > 6 {
        return None;
    }
    std::str::from_utf8(rest).ok()?.parse().ok()
}

impl Session<'_> {
    /// `open` or `openat`: the device's own path is served, any other
    /// `/dev/neuron<N>` is `ENOENT`, every other path opens natively.
    pub(super) fn handle_open(&mut self, n: &libc::seccomp_notif, deadline: Instant) {
        let nr = i64::from(n.data.nr);
        let args = n.data.args;
        let tid = n.pid;
        let (path_ptr, flags) = if nr == libc::SYS_openat { (args[1], args[2]) } else { (args[0], args[1]) };
        // A path not read, by a fault or not in time, opens natively: the
        // kernel reads it in the caller, which then waits on its own page.
        let Some(path) = self.reader.run(deadline, move || read_path(tid, path_ptr)).flatten() else {
            return self.listener.cont(n.id);
        };
        // Absolute /dev/neuron<N> only: G-DRV-OPEN.
        match neuron_index(&path) {
            Some(0) => self.open_device(n, flags),
            Some(_) => self.listener.respond(n.id, 0, libc::ENOENT, 0),
            None => self.listener.cont(n.id),
        }
    }

    /// `open("/dev/neuron0")`: a descriptor of the device memfd for the caller,
    /// which is attached; past [`MAX_ATTACHED`] processes, `EBUSY` as the driver.
    fn open_device(&mut self, n: &libc::seccomp_notif, flags: u64) {
        let Some(caller) = self.live_caller(n) else { return };
        let pid = caller.tgid;
        // The O_WRONLY bit of the open flags: such an open takes no slot and
        // no count. driver: neuron_cdev.c, IS_NEURON_DEVICE_FREE_ACCESS.
        let free_access = OpenMode::from_flags(flags).free_access();
        let attached = self.openers.keys().filter(|p| self.model.attached(**p)).count();
        if !free_access && !self.model.attached(pid) && attached >= MAX_ATTACHED {
            self.note(
                pid,
                "open",
                format!("EBUSY: {MAX_ATTACHED} processes hold {DEVICE_PATH} (npid_attach, neuron_pid.c)"),
            );
            return self.listener.respond(n.id, 0, libc::EBUSY, 0);
        }
        let cloexec = flags & libc::O_CLOEXEC as u64 != 0;
        match self.install(n, pid, cloexec, DEVICE_FD_BASE) {
            Ok(fd) => {
                if free_access {
                    self.model.open_free_access(pid);
                } else {
                    self.model.open(pid);
                }
                self.descs.insert((pid, fd), OpenMode::from_flags(flags));
                self.opens = self.opens.saturating_add(1);
                self.openers.entry(pid).or_insert(caller.pidfd);
                self.absorb();
            }
            Err(e) => self.listener.respond(n.id, 0, e, 0),
        }
    }

    /// Install the device memfd in the caller of `n` at the lowest free number
    /// of the reserved range from `from`, G-DRV-MMAP. With none free, or the
    /// caller's `RLIMIT_NOFILE` below it, at its lowest free number, noted in
    /// the log: read, write and mmap on that descriptor are not checked.
    pub(super) fn install(&mut self, n: &libc::seccomp_notif, pid: u32, cloexec: bool, from: i32) -> Result<i32, i32> {
        let end = DEVICE_FD_BASE + DEVICE_FD_SLOTS;
        // The notifying thread's table, by lstat of the link: nothing of the caller's is followed.
        let free = (from.max(DEVICE_FD_BASE)..end).find(|fd| {
            std::fs::symlink_metadata(format!("/proc/{}/fd/{fd}", n.pid))
                .is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
        });
        if let Some(at) = free {
            match self.listener.add_fd(n.id, self.memfd, cloexec, Some(at)) {
                Err(libc::EBADF | libc::EMFILE) => {}
                r => return r,
            }
        }
        let r = self.listener.add_fd(n.id, self.memfd, cloexec, None);
        if let Ok(fd) = r {
            self.note(
                pid,
                "open",
                format!(
                    "descriptor {fd}: no free number in {DEVICE_FD_BASE}..{end} (or RLIMIT_NOFILE below it): read, \
                     write and mmap on it are not checked (G-DRV-MMAP)"
                ),
            );
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_paths() {
        assert_eq!(neuron_index(b"/dev/neuron0"), Some(0));
        assert_eq!(neuron_index(b"/dev/neuron12"), Some(12));
        assert_eq!(neuron_index(b"/dev/neuron"), None);
        assert_eq!(neuron_index(b"/dev/neuron0x"), None);
        assert_eq!(neuron_index(b"/dev/null"), None);
    }
}
