//! The notification session: the state the supervisor keeps across
//! notifications, and the loop that serves them one at a time.

#![allow(unsafe_code)]

use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

use super::listener::Listener;
use super::memory::Reader;
use super::process::{pidfd_exited, pidfd_kill, pidfd_open, tgid_of, Caller};
use super::{DriverConfig, CALLER_MEM_BUDGET};
use crate::driver::model::{LogLine, Model, OpenMode, Violation};

/// At most `cap` items kept, the rest counted.
#[derive(Debug)]
pub(super) struct Capped<T> {
    pub(super) kept: Vec<T>,
    pub(super) dropped: u64,
    cap: usize,
}

impl<T> Capped<T> {
    pub(super) fn new(cap: usize) -> Capped<T> {
        Capped { kept: Vec::new(), dropped: 0, cap }
    }

    fn push(&mut self, v: T) {
        if self.kept.len() < self.cap {
            self.kept.push(v);
        } else {
            self.dropped = self.dropped.saturating_add(1);
        }
    }
}

/// What the supervisor holds for one run of COMMAND.
pub(super) struct Session<'a> {
    pub(super) cfg: &'a DriverConfig,
    pub(super) model: Model,
    pub(super) listener: Listener,
    pub(super) dev: (u64, u64),
    pub(super) memfd: RawFd,
    pub(super) reader: Reader,
    /// The processes that opened the device, each with a pidfd that polls
    /// readable when it exits.
    pub(super) openers: BTreeMap<u32, OwnedFd>,
    /// The mode of each device descriptor installed, by process and number;
    /// write-only is "free access", GEN-4. A `dup` or `fcntl(F_DUPFD)` into the
    /// reserved range is recorded too. A descriptor not recorded, such as a
    /// `dup2` out of the range or one inherited or passed over a socket, is
    /// served as `O_RDWR`: G-DRV-DUP.
    pub(super) descs: BTreeMap<(u32, i32), OpenMode>,
    pub(super) log: Capped<LogLine>,
    pub(super) violations: Capped<Violation>,
    pub(super) kernel_bugs: u64,
    pub(super) warnings: u64,
    pub(super) conformance: u64,
    /// Opens of the device answered.
    pub(super) opens: u32,
    /// A kernel BUG under `--strict`: the caller was killed, the run ends.
    pub(super) bug_pid: Option<u32>,
}

impl Session<'_> {
    /// Resolve the thread that made notification `n` to its process, hold a
    /// pidfd on it, then check the notification is still live: the thread is
    /// still blocked in that call, so the pidfd is its process's, and a thread
    /// id reused by another process meanwhile fails the check. `Err(true)`:
    /// the notification is live but its process could not be resolved.
    pub(super) fn caller(&self, n: &libc::seccomp_notif) -> Result<Caller, bool> {
        let resolved = tgid_of(n.pid).and_then(|tgid| Some(Caller { tgid, pidfd: pidfd_open(tgid)? }));
        let live = self.listener.valid(n.id);
        match resolved {
            Some(c) if live => Ok(c),
            _ => Err(live),
        }
    }

    /// The caller of notification `n`, after a check that its process was not
    /// replaced; `None` when the notification is answered already: `ESRCH`
    /// for a live one whose process could not be resolved, nothing for a dead one.
    pub(super) fn live_caller(&mut self, n: &libc::seccomp_notif) -> Option<Caller> {
        match self.caller(n) {
            Ok(c) => {
                self.check_gone(c.tgid);
                Some(c)
            }
            Err(true) => {
                self.listener.respond(n.id, 0, libc::ESRCH, 0);
                None
            }
            Err(false) => None,
        }
    }

    /// A call the real driver would `BUG_ON`: printed, and under `--strict`
    /// the caller is killed and the call fails `EIO`, since the real kernel
    /// oopses in the caller, which never returns (G-DRV-BUG-MODE). Otherwise
    /// `lenient` answers it.
    pub(super) fn kernel_bug(
        &mut self,
        n: &libc::seccomp_notif,
        caller: &Caller,
        bug: &str,
        lenient: impl FnOnce(&Self),
    ) {
        eprintln!("nrt-sim driver: pid {}: {bug}", caller.tgid);
        if self.cfg.strict {
            self.bug_pid = Some(caller.tgid);
            pidfd_kill(&caller.pidfd);
            self.listener.respond(n.id, 0, libc::EIO, 0);
        } else {
            lenient(self);
        }
    }

    /// The process `tgid` that opened the device has exited if its pidfd says
    /// so; its pid may now be another process's, which must not inherit it.
    pub(super) fn check_gone(&mut self, tgid: u32) {
        if self.openers.get(&tgid).is_some_and(pidfd_exited) {
            self.process_gone(tgid);
        }
    }

    /// A process of COMMAND's tree that opened the device is gone: its pidfd
    /// said so, or the run is ending with the tree killed. This is the one
    /// place that knows it, so the driver's release of what the process held
    /// belongs here.
    pub(super) fn process_gone(&mut self, tgid: u32) {
        self.descs.retain(|(p, _), _| *p != tgid);
        if self.openers.remove(&tgid).is_some() {
            // The driver detaches a process at its last close; close is not
            // trapped, so its exit stands for it. driver: neuron_cdev.c, ncdev_release.
            self.model.process_gone(tgid);
            self.absorb();
        }
    }

    /// Move the model's new log lines and violations into the capped ones,
    /// echoed with `--verbose`; the model's own lists stay empty.
    pub(super) fn absorb(&mut self) {
        for l in self.model.log.drain(..) {
            if self.cfg.echo {
                eprintln!("nrt-sim driver: pid {}: {}: {}", l.pid, l.request, l.text);
            }
            self.log.push(l);
        }
        for v in self.model.violations.drain(..) {
            if v.is_kernel_bug() {
                self.kernel_bugs = self.kernel_bugs.saturating_add(1);
            } else if v.is_conformance() {
                eprintln!("nrt-sim driver: {v}");
                self.conformance = self.conformance.saturating_add(1);
            } else {
                self.warnings = self.warnings.saturating_add(1);
            }
            self.violations.push(v);
        }
    }

    /// A line of the supervisor's own, kept in the capped log and echoed with `--verbose`.
    pub(super) fn note(&mut self, pid: u32, request: &'static str, text: String) {
        if self.cfg.echo {
            eprintln!("nrt-sim driver: pid {pid}: {request}: {text}");
        }
        self.log.push(LogLine { pid, request, text });
    }

    /// Serve one notification: an open, an ioctl, or a call on a descriptor
    /// in the reserved range.
    fn handle(&mut self, n: &libc::seccomp_notif) {
        let deadline = Instant::now() + CALLER_MEM_BUDGET;
        let nr = i64::from(n.data.nr);
        if nr == libc::SYS_openat || nr == libc::SYS_open {
            return self.handle_open(n, deadline);
        }
        if nr != libc::SYS_ioctl {
            return self.handle_range(n, deadline);
        }
        self.handle_ioctl(n, deadline)
    }

    pub(super) fn note_late(&mut self, pid: u32, code: u32) {
        let name = nrt_abi::ioctl::request_name(code).unwrap_or("NEURON_IOCTL_(unknown)");
        self.note(
            pid,
            name,
            format!(
                "EFAULT: the caller's memory was not read within {} ms (a page nobody serves?)",
                CALLER_MEM_BUDGET.as_millis()
            ),
        );
    }

    /// Poll the listener and every opener's pidfd for up to `ms`: note the
    /// openers gone, serve one notification.
    pub(super) fn step(&mut self, ms: i32) {
        let mut fds = vec![libc::pollfd { fd: self.listener.fd.as_raw_fd(), events: libc::POLLIN, revents: 0 }];
        let pids: Vec<u32> = self.openers.keys().copied().collect();
        fds.extend(self.openers.values().map(|f| libc::pollfd { fd: f.as_raw_fd(), events: libc::POLLIN, revents: 0 }));
        // SAFETY: a valid array of `fds.len()` pollfds: the listener and one per opener.
        let rc = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
        if rc <= 0 {
            return;
        }
        for (pid, f) in pids.iter().zip(fds.iter().skip(1)) {
            if f.revents != 0 {
                self.process_gone(*pid);
            }
        }
        let l = fds.first().map_or(0, |f| f.revents);
        if l & libc::POLLIN != 0 {
            if let Ok(n) = self.listener.recv() {
                self.handle(&n);
            }
        } else if l & (libc::POLLHUP | libc::POLLERR) != 0 {
            // No task left under the filter: wait for COMMAND's exit.
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_capped_list_keeps_the_first_and_counts_the_rest() {
        let mut c = Capped::new(3);
        for i in 0..10 {
            c.push(i);
        }
        assert_eq!((c.kept, c.dropped), (vec![0, 1, 2], 7));
    }
}
