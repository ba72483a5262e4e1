//! Ioctls on the device: the argument struct copied in from the caller, its
//! size from the model's request table, answered by the model, copied back.
//! An ioctl on any other descriptor continues to the kernel.

use std::time::Instant;

use super::memory::{is_device_fd, ProcMem};
use super::session::Session;
use crate::driver::model::{self, OpenMode, Refusal, TargetMem as _};

impl Session<'_> {
    /// `ioctl` on the device: the argument copied in, [`model::Model::handle_on`],
    /// copied back; on any other descriptor the kernel answers.
    pub(super) fn handle_ioctl(&mut self, n: &libc::seccomp_notif, deadline: Instant) {
        let args = n.data.args;
        let tid = n.pid;
        let fd = args[0] as i32;
        let dev = self.dev;
        if !self.reader.run(deadline, move || is_device_fd(tid, fd, dev)).unwrap_or(false) {
            return self.listener.cont(n.id);
        }
        let Some(caller) = self.live_caller(n) else { return };
        let pid = caller.tgid;
        let code = args[1] as u32;
        let ptr = args[2];
        let free_access = self.descs.get(&(pid, fd)).copied().unwrap_or(OpenMode::RDWR).free_access();
        if code == nrt_abi::ioctl::DEVICE_GET_ALL_APPS_INFO.code() && !free_access {
            return self.apps_info(n, pid, ptr, deadline);
        }
        // GEN-4: on a write-only descriptor the driver refuses a non-misc
        // request before it reads the argument.
        let size = if free_access && !model::request::is_misc(code) { 0 } else { model::arg_size(code).unwrap_or(0) };
        let mut arg = vec![0u8; size];
        let mut mem = ProcMem { reader: &mut self.reader, tid, deadline, late: false };
        if mem.read(ptr, &mut arg).is_err() {
            let late = mem.late;
            let answer = if late {
                // Not read in time, a page nobody serves: EFAULT, G-DRV-EFAULT.
                None
            } else {
                // GEN-3: the driver's copy_from_user stops at the first byte
                // it cannot read; a struct this small ends in the next page,
                // so the bytes before the page boundary are what it copied.
                let to_page = (4096 - (ptr % 4096)) as usize;
                let mut head = vec![0u8; to_page.min(size)];
                let readable = if to_page < size && mem.read(ptr, &mut head).is_ok() { head.len() } else { 0 };
                Some(self.model.copy_in_failed(pid, code, readable))
            };
            let late = late || mem.late;
            self.absorb();
            if late {
                self.note_late(pid, code);
            }
            match answer {
                Some(Ok(v)) => self.listener.respond(n.id, v, 0, 0),
                Some(Err(Refusal::Errno(e))) => self.listener.respond(n.id, 0, e.0, 0),
                _ => self.listener.respond(n.id, 0, libc::EFAULT, 0),
            }
            return;
        }
        // The memory read was the caller's only if its notification is still
        // live, as seccomp_unotify(2) says; else the model must not act on it.
        if !self.listener.valid(n.id) {
            return;
        }
        let before = arg.clone();
        let answer = self.model.handle_on(pid, code, free_access, &mut arg, &mut mem);
        let wrote = arg == before || mem.write(ptr, &arg).is_ok();
        let late = mem.late;
        self.absorb();
        if late {
            self.note_late(pid, code);
        }
        if !wrote {
            self.listener.respond(n.id, 0, libc::EFAULT, 0);
            return;
        }
        match answer {
            Ok(v) => self.listener.respond(n.id, v, 0, 0),
            Err(Refusal::Errno(e)) => self.listener.respond(n.id, 0, e.0, 0),
            Err(Refusal::KernelBug(v)) => {
                self.kernel_bug(n, &caller, &v.to_string(), |s| s.listener.respond(n.id, 0, 0, 0))
            }
        }
    }

    /// `DEVICE_GET_ALL_APPS_INFO`, APPS-1: its argument is a header and then
    /// `capacity` entries, so the header is read here, [`model::Model::apps_info`]
    /// answers, and the header and `size` entries it returns are written at
    /// the argument's address, each access under the call's deadline.
    fn apps_info(&mut self, n: &libc::seccomp_notif, pid: u32, ptr: u64, deadline: Instant) {
        use zerocopy::FromBytes;
        let code = nrt_abi::ioctl::DEVICE_GET_ALL_APPS_INFO.code();
        let mut hdr = [0u8; core::mem::size_of::<nrt_abi::ioctl::AppsInfoHeader>()];
        let mut mem = ProcMem { reader: &mut self.reader, tid: n.pid, deadline, late: false };
        let read = mem.read(ptr, &mut hdr);
        let late = mem.late;
        let header = match read.ok().and_then(|()| nrt_abi::ioctl::AppsInfoHeader::read_from_bytes(&hdr).ok()) {
            Some(h) => h,
            None => {
                if late {
                    self.note_late(pid, code);
                    return self.listener.respond(n.id, 0, libc::EFAULT, 0);
                }
                // GEN-3: copy_from_user's count of bytes not copied, all 16
                // of the header or the part past a page end.
                let to_page = (4096 - (ptr % 4096)) as usize;
                let readable = if to_page < hdr.len() { to_page } else { 0 };
                let answer = self.model.copy_in_failed(pid, code, readable);
                self.absorb();
                return match answer {
                    Ok(v) => self.listener.respond(n.id, v, 0, 0),
                    Err(Refusal::Errno(e)) => self.listener.respond(n.id, 0, e.0, 0),
                    Err(Refusal::KernelBug(_)) => self.listener.respond(n.id, 0, libc::EFAULT, 0),
                };
            }
        };
        if !self.listener.valid(n.id) {
            return;
        }
        let (answer, bytes) = self.model.apps_info(pid, &header);
        let mut mem = ProcMem { reader: &mut self.reader, tid: n.pid, deadline, late: false };
        let wrote = mem.write(ptr, &bytes).is_ok();
        let late = mem.late;
        self.absorb();
        if late {
            self.note_late(pid, code);
        }
        match answer {
            Ok(v) if wrote => self.listener.respond(n.id, v, 0, 0),
            Err(Refusal::Errno(e)) => self.listener.respond(n.id, 0, e.0, 0),
            _ => self.listener.respond(n.id, 0, libc::EFAULT, 0),
        }
    }
}
