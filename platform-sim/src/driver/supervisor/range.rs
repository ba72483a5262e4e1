//! Calls on a descriptor in the reserved range. On the device: `mmap` as the
//! model says, continued when the driver maps what the memfd holds there;
//! `read`, `write` and the other file operations refused as the kernel does;
//! `dup` and `fcntl(F_DUPFD)` installed in the range too. On any other file
//! in the range they continue. G-DRV-MMAP.

use std::time::Instant;

use super::memory::is_device_fd;
use super::session::Session;
use super::{DEVICE_FD_BASE, DEVICE_FD_SLOTS};
use crate::driver::model::{MmapCall, NoFop, OpenMode, Refusal};

/// The rule behind the errno [`NoFop::errno`] gives, for the log.
fn fops_rule(call: NoFop) -> &'static str {
    match call {
        NoFop::Read { .. } | NoFop::Write { .. } => {
            "ncdev_fops has no .read/.write: vfs_read/vfs_write (fs/read_write.c) refuse it"
        }
        NoFop::Ftruncate => "the device is no regular file: do_ftruncate (fs/open.c) refuses it",
        NoFop::Fallocate { .. } => "the device is no regular file: vfs_fallocate (fs/open.c) refuses it",
    }
}

impl Session<'_> {
    /// A call the filter trapped because its descriptor is in the reserved
    /// range: on the device, answered as the kernel and the driver do; on
    /// any other file, continued.
    pub(super) fn handle_range(&mut self, n: &libc::seccomp_notif, deadline: Instant) {
        let nr = i64::from(n.data.nr);
        let a = n.data.args;
        let fd = if nr == libc::SYS_mmap { a[4] as i32 } else { a[0] as i32 };
        let (tid, dev) = (n.pid, self.dev);
        if !self.reader.run(deadline, move || is_device_fd(tid, fd, dev)).unwrap_or(false) {
            return self.listener.cont(n.id);
        }
        let Some(caller) = self.live_caller(n) else { return };
        let pid = caller.tgid;
        let mode = self.descs.get(&(pid, fd)).copied().unwrap_or(OpenMode::RDWR);
        // preadv2 / pwritev2 take -1 for the current position.
        let pos = |p: u64, current_ok: bool| Some(p as i64).filter(|p| !(current_ok && *p == -1));
        let call = match nr {
            libc::SYS_read | libc::SYS_readv => NoFop::Read { pos: None },
            libc::SYS_pread64 | libc::SYS_preadv => NoFop::Read { pos: pos(a[3], false) },
            libc::SYS_preadv2 => NoFop::Read { pos: pos(a[3], true) },
            libc::SYS_write | libc::SYS_writev => NoFop::Write { pos: None },
            libc::SYS_pwrite64 | libc::SYS_pwritev => NoFop::Write { pos: pos(a[3], false) },
            libc::SYS_pwritev2 => NoFop::Write { pos: pos(a[3], true) },
            libc::SYS_ftruncate => NoFop::Ftruncate,
            libc::SYS_fallocate => NoFop::Fallocate { offset: a[2] as i64, len: a[3] as i64 },
            libc::SYS_mmap => {
                let call = MmapCall { offset: a[5], len: a[1], prot: a[2], flags: a[3] };
                let answer = self.model.mmap(pid, call, mode);
                self.absorb();
                return match answer {
                    // The driver maps exactly what the memfd holds there: the kernel maps it.
                    Ok(()) => self.listener.cont(n.id),
                    Err(Refusal::Errno(e)) => self.listener.respond(n.id, 0, e.0, 0),
                    Err(Refusal::KernelBug(v)) => {
                        self.kernel_bug(n, &caller, &v.to_string(), |s| s.listener.cont(n.id))
                    }
                };
            }
            libc::SYS_dup => return self.duplicate(n, pid, mode, false, DEVICE_FD_BASE),
            libc::SYS_fcntl => {
                let (cmd, min) = (a[1] as i32, a[2] as i64);
                let end = i64::from(DEVICE_FD_BASE + DEVICE_FD_SLOTS);
                return match cmd {
                    // A lowest number past the range is the kernel's, unchecked.
                    libc::F_DUPFD | libc::F_DUPFD_CLOEXEC if (0..end).contains(&min) => {
                        self.duplicate(n, pid, mode, cmd == libc::F_DUPFD_CLOEXEC, min as i32)
                    }
                    _ => self.listener.cont(n.id),
                };
            }
            _ => return self.listener.cont(n.id),
        };
        let e = call.errno(mode);
        self.model.refusals = self.model.refusals.saturating_add(1);
        self.note(pid, call.name(), format!("{e}: {} (FOPS, G-DRV-MMAP)", fops_rule(call)));
        self.listener.respond(n.id, 0, e.0, 0);
    }

    /// `dup` or `fcntl(F_DUPFD[_CLOEXEC])` of a device descriptor of mode
    /// `mode`: the copy goes at the lowest free number of the reserved range
    /// from `from`, not at the lowest free one. G-DRV-MMAP.
    fn duplicate(&mut self, n: &libc::seccomp_notif, pid: u32, mode: OpenMode, cloexec: bool, from: i32) {
        match self.install(n, pid, cloexec, from) {
            Ok(fd) => {
                self.descs.insert((pid, fd), mode);
            }
            Err(e) => self.listener.respond(n.id, 0, e, 0),
        }
    }
}
