//! The seccomp side of `nrt-sim driver -- COMMAND`.
//!
//! [`run`] starts the device ([`DeviceEngine`]), builds the filter with
//! libseccomp (allow everything; `open`, `openat`, and `ioctl` whose request
//! has type `'N'` (`(arg1 >> 8) & 0xff == 0x4E`) go to user notification),
//! exports it as BPF, and forks COMMAND: the child sets `no_new_privs`,
//! installs the exported program with `SECCOMP_FILTER_FLAG_NEW_LISTENER`
//! (only raw system calls after the fork: no allocation, no lock), sends the
//! listener to the parent over a socketpair (`SCM_RIGHTS`), and execs.
//!
//! The parent answers each notification:
//!
//! - `open`/`openat` of `/dev/neuron0` (read from the caller's memory with
//!   `process_vm_readv`): a new descriptor of the device memfd, installed with
//!   `SECCOMP_IOCTL_NOTIF_ADDFD` + `SECCOMP_ADDFD_FLAG_SEND` (the caller's
//!   `O_CLOEXEC` kept); `/dev/neuron<N>` for N > 0: `ENOENT` (one device);
//!   every other path: `SECCOMP_USER_NOTIF_FLAG_CONTINUE` (opened natively);
//! - `ioctl` on a descriptor that is the device memfd (same device and inode
//!   as `/proc/<pid>/fd/<fd>`): the argument struct copied in (size from
//!   [`model::arg_size`]), [`Model::handle`], copied back, the value or errno
//!   returned; on any other descriptor: continue (the kernel answers).
//!
//! Every answer is preceded by `SECCOMP_IOCTL_NOTIF_ID_VALID`: a caller that
//! died (or whose memory we read after it changed) is not answered. The
//! caller is a hostile peer: every read of its memory is bounded and may fail
//! (then `EFAULT`), no input panics.
//!
//! `unsafe` here: the fork-side closure (prctl, seccomp, sendmsg, close), the
//! seccomp ioctls, `process_vm_readv`/`writev`, `recvmsg`, `poll`, `kill`,
//! each with its `// SAFETY:` line.

#![allow(unsafe_code)]

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs::File;
use std::io::{Read as _, Seek as _};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use libseccomp::{ScmpAction, ScmpArgCompare, ScmpCompareOp, ScmpFilterContext, ScmpSyscall};
use nrt_core::NrtStatus;

use super::model::{self, LogLine, MemFault, Model, Refusal, TargetMem, Violation};
use super::DeviceEngine;
use crate::report::Row;
use crate::run::SimConfig;
use crate::scenario::SCENARIOS;
use crate::shm::ShmError;

/// Exit status when a kernel BUG fails a `--strict` run.
pub const EXIT_KERNEL_BUG: u8 = 70;
/// Exit status when COMMAND ran past the limit and was killed.
pub const EXIT_TIMEOUT: u8 = 124;
/// The device path the model serves.
pub const DEVICE_PATH: &str = "/dev/neuron0";

/// What to run.
#[derive(Clone, Debug)]
pub struct DriverConfig {
    /// The device (arch, cores, ring entries, seed, faults, extras).
    pub sim: SimConfig,
    /// A kernel BUG fails the run (kills COMMAND, exit [`EXIT_KERNEL_BUG`]).
    pub strict: bool,
    /// COMMAND is killed after this long.
    pub limit: Duration,
    /// COMMAND and its arguments.
    pub command: Vec<OsString>,
    /// Capture COMMAND's standard output (else it is inherited).
    pub capture_stdout: bool,
    /// Print each refusal and violation on standard error as it happens.
    pub echo: bool,
}

/// How COMMAND ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// It exited with this status.
    Code(i32),
    /// A signal killed it.
    Signal(i32),
    /// It ran past the limit and was killed.
    TimedOut,
    /// A kernel BUG in strict mode: it was killed.
    KernelBug,
}

/// What a supervised run did.
#[derive(Debug)]
pub struct Outcome {
    /// How COMMAND ended.
    pub exit: Exit,
    /// The model's log (refusals, warnings, kernel BUGs).
    pub log: Vec<LogLine>,
    /// Every violation.
    pub violations: Vec<Violation>,
    /// Requests served, by name.
    pub calls: BTreeMap<&'static str, u32>,
    /// Opens of the device answered.
    pub opens: u32,
    /// Calls refused with an errno.
    pub refusals: u32,
    /// COMMAND's standard output, when captured.
    pub stdout: Vec<u8>,
    /// Inferences the device played.
    pub played: u32,
}

impl Outcome {
    /// The kernel BUGs.
    pub fn kernel_bugs(&self) -> Vec<&Violation> {
        self.violations.iter().filter(|v| v.is_kernel_bug()).collect()
    }

    /// The supervisor's exit status: COMMAND's, except [`EXIT_KERNEL_BUG`]
    /// for a kernel BUG under `strict`, 128 + N for signal N, [`EXIT_TIMEOUT`].
    pub fn exit_status(&self, strict: bool) -> u8 {
        if strict && !self.kernel_bugs().is_empty() {
            return EXIT_KERNEL_BUG;
        }
        match self.exit {
            Exit::Code(c) => u8::try_from(c).unwrap_or(1),
            Exit::Signal(s) => 128u8.saturating_add(u8::try_from(s).unwrap_or(0)),
            Exit::TimedOut => EXIT_TIMEOUT,
            Exit::KernelBug => EXIT_KERNEL_BUG,
        }
    }
}

/// Why supervision could not run.
#[derive(Debug)]
pub enum DriverError {
    /// The device file.
    Device(ShmError),
    /// seccomp user notification is not available, or the filter failed.
    Seccomp(String),
    /// COMMAND could not be started.
    Spawn(String),
}

impl core::fmt::Display for DriverError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            DriverError::Device(e) => write!(f, "the device: {e}"),
            DriverError::Seccomp(m) => write!(f, "seccomp user notification: {m}"),
            DriverError::Spawn(m) => write!(f, "starting COMMAND: {m}"),
        }
    }
}

impl std::error::Error for DriverError {}

/// Whether this kernel offers seccomp user notification (`None`) or why not.
pub fn user_notif_unavailable() -> Option<String> {
    match std::fs::read_to_string("/proc/sys/kernel/seccomp/actions_avail") {
        Ok(t) if t.split_whitespace().any(|a| a == "user_notif") => None,
        Ok(t) => Some(format!("the kernel's seccomp actions are \"{}\": no user_notif", t.trim())),
        Err(e) => Some(format!("/proc/sys/kernel/seccomp/actions_avail: {e}")),
    }
}

/// The filter as classic BPF, built by libseccomp.
fn filter_program() -> Result<Vec<libc::sock_filter>, String> {
    let e = |what: &str| {
        let what = what.to_string();
        move |err: libseccomp::error::SeccompError| format!("libseccomp {what}: {err}")
    };
    let mut ctx = ScmpFilterContext::new_filter(ScmpAction::Allow).map_err(e("new filter"))?;
    // A process of another ABI (i386, x32) runs unsupervised rather than dying.
    ctx.set_act_badarch(ScmpAction::Allow).map_err(e("bad-arch action"))?;
    for name in ["open", "openat"] {
        let sc = ScmpSyscall::from_name(name).map_err(e(name))?;
        ctx.add_rule(ScmpAction::Notify, sc).map_err(e(name))?;
    }
    let ioctl = ScmpSyscall::from_name("ioctl").map_err(e("ioctl"))?;
    let cmp = ScmpArgCompare::new(1, ScmpCompareOp::MaskedEqual(0xFF00), 0x4E00);
    ctx.add_rule_conditional(ScmpAction::Notify, ioctl, &[cmp]).map_err(e("ioctl rule"))?;
    // SAFETY: a NUL-terminated name and valid flags; the result is checked.
    let fd = unsafe { libc::memfd_create(c"nrt-sim-bpf".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(format!("memfd_create: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: a fresh descriptor this process owns.
    let mut f = unsafe { File::from_raw_fd(fd) };
    ctx.export_bpf(&mut f).map_err(e("export"))?;
    f.rewind().map_err(|e| format!("rewind: {e}"))?;
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes).map_err(|e| format!("read the BPF: {e}"))?;
    if bytes.is_empty() || bytes.len() % 8 != 0 || bytes.len() / 8 > usize::from(u16::MAX) {
        return Err(format!("libseccomp exported {} bytes of BPF", bytes.len()));
    }
    Ok(bytes
        .chunks_exact(8)
        .map(|c| libc::sock_filter {
            code: u16::from_ne_bytes([c[0], c[1]]),
            jt: c[2],
            jf: c[3],
            k: u32::from_ne_bytes([c[4], c[5], c[6], c[7]]),
        })
        .collect())
}

/// Send `fd` over the socket `sock` (fork-safe: stack buffers only).
fn send_fd(sock: RawFd, fd: RawFd) -> std::io::Result<()> {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec { iov_base: byte.as_mut_ptr().cast(), iov_len: 1 };
    #[repr(C)]
    struct Cmsg {
        hdr: libc::cmsghdr,
        fd: RawFd,
        _pad: u32,
    }
    // SAFETY: an all-zero cmsghdr/msghdr is valid; the fields are set below.
    let mut cmsg: Cmsg = unsafe { std::mem::zeroed() };
    // SAFETY: CMSG_LEN only computes a length.
    cmsg.hdr.cmsg_len = unsafe { libc::CMSG_LEN(core::mem::size_of::<RawFd>() as u32) } as usize;
    cmsg.hdr.cmsg_level = libc::SOL_SOCKET;
    cmsg.hdr.cmsg_type = libc::SCM_RIGHTS;
    cmsg.fd = fd;
    // SAFETY: as above.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = (&mut cmsg as *mut Cmsg).cast();
    // SAFETY: CMSG_SPACE only computes a length.
    msg.msg_controllen = unsafe { libc::CMSG_SPACE(core::mem::size_of::<RawFd>() as u32) } as usize;
    // SAFETY: msg points to live stack buffers of the lengths given.
    let rc = unsafe { libc::sendmsg(sock, &msg, 0) };
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Receive one descriptor from `sock`, waiting up to `wait`.
fn recv_fd(sock: RawFd, wait: Duration) -> std::io::Result<OwnedFd> {
    let mut pfd = libc::pollfd { fd: sock, events: libc::POLLIN, revents: 0 };
    let ms = i32::try_from(wait.as_millis()).unwrap_or(i32::MAX);
    // SAFETY: one valid pollfd.
    let rc = unsafe { libc::poll(&mut pfd, 1, ms) };
    if rc <= 0 {
        return Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "no listener from the child"));
    }
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec { iov_base: byte.as_mut_ptr().cast(), iov_len: 1 };
    let mut space = [0u64; 8];
    // SAFETY: an all-zero msghdr is valid; set below.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = space.as_mut_ptr().cast();
    msg.msg_controllen = core::mem::size_of_val(&space);
    // SAFETY: msg points to live buffers of the lengths given.
    let n = unsafe { libc::recvmsg(sock, &mut msg, libc::MSG_CMSG_CLOEXEC) };
    if n <= 0 {
        return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "the child sent no listener"));
    }
    // SAFETY: the kernel filled msg; CMSG_FIRSTHDR reads within msg_control.
    let c = unsafe { libc::CMSG_FIRSTHDR(&msg) };
    if c.is_null() {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "no SCM_RIGHTS message"));
    }
    // SAFETY: c points into `space`, a cmsghdr the kernel wrote.
    let (level, ty) = unsafe { ((*c).cmsg_level, (*c).cmsg_type) };
    if level != libc::SOL_SOCKET || ty != libc::SCM_RIGHTS {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "not an SCM_RIGHTS message"));
    }
    // SAFETY: the data of an SCM_RIGHTS cmsg holds at least one int.
    let fd = unsafe { std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<RawFd>()) };
    // SAFETY: the kernel installed `fd` in this process for us.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The memory of process (thread) `pid`, through `process_vm_readv`/`writev`.
struct ProcMem {
    pid: libc::pid_t,
}

impl TargetMem for ProcMem {
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), MemFault> {
        if buf.is_empty() {
            return Ok(());
        }
        let local = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
        let remote = libc::iovec { iov_base: addr as usize as *mut libc::c_void, iov_len: buf.len() };
        // SAFETY: `local` is our live buffer of that length; the remote range is
        // the kernel's to check (a bad one fails, it is never dereferenced here).
        let n = unsafe { libc::process_vm_readv(self.pid, &local, 1, &remote, 1, 0) };
        if n == buf.len() as isize {
            Ok(())
        } else {
            Err(MemFault)
        }
    }

    fn write(&mut self, addr: u64, buf: &[u8]) -> Result<(), MemFault> {
        if buf.is_empty() {
            return Ok(());
        }
        let local = libc::iovec { iov_base: buf.as_ptr().cast_mut().cast(), iov_len: buf.len() };
        let remote = libc::iovec { iov_base: addr as usize as *mut libc::c_void, iov_len: buf.len() };
        // SAFETY: as in `read`; `local` is only read by the kernel.
        let n = unsafe { libc::process_vm_writev(self.pid, &local, 1, &remote, 1, 0) };
        if n == buf.len() as isize {
            Ok(())
        } else {
            Err(MemFault)
        }
    }
}

/// A NUL-terminated path at `addr` in `mem` (at most 4096 bytes), read page by page.
fn read_path(mem: &mut ProcMem, addr: u64) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let mut at = addr;
    while out.len() < 4096 {
        let page_left = 4096 - (at % 4096) as usize;
        let n = page_left.min(4096 - out.len());
        let mut buf = vec![0u8; n];
        mem.read(at, &mut buf).ok()?;
        if let Some(z) = buf.iter().position(|b| *b == 0) {
            out.extend_from_slice(buf.get(..z)?);
            return Some(out);
        }
        out.extend_from_slice(&buf);
        at = at.checked_add(n as u64)?;
    }
    None
}

/// The thread group of thread `tid`.
fn tgid_of(tid: u32) -> u32 {
    std::fs::read_to_string(format!("/proc/{tid}/status"))
        .ok()
        .and_then(|t| t.lines().find_map(|l| l.strip_prefix("Tgid:").and_then(|v| v.trim().parse().ok())))
        .unwrap_or(tid)
}

struct Listener {
    fd: OwnedFd,
}

impl Listener {
    fn recv(&self) -> std::io::Result<libc::seccomp_notif> {
        // SAFETY: the kernel requires a zeroed seccomp_notif; all-zero is valid.
        let mut n: libc::seccomp_notif = unsafe { std::mem::zeroed() };
        // SAFETY: a seccomp listener and a seccomp_notif of the kernel's size.
        let rc = unsafe { libc::ioctl(self.fd.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_RECV, &mut n) };
        if rc < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(n)
    }

    fn valid(&self, id: u64) -> bool {
        let mut id = id;
        // SAFETY: the ioctl reads one u64.
        unsafe { libc::ioctl(self.fd.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_ID_VALID, &mut id) == 0 }
    }

    fn respond(&self, id: u64, val: i64, errno: i32, flags: u32) {
        if !self.valid(id) {
            return;
        }
        let mut r = libc::seccomp_notif_resp { id, val, error: -errno, flags };
        // SAFETY: a seccomp_notif_resp of the kernel's layout; a failure (the
        // caller died meanwhile) is nothing to act on.
        unsafe {
            libc::ioctl(self.fd.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_SEND, &mut r);
        }
    }

    fn cont(&self, id: u64) {
        self.respond(id, 0, 0, libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32);
    }

    /// Answer with a new descriptor for `src` in the caller; its number, or the errno.
    fn add_fd(&self, id: u64, src: RawFd, cloexec: bool) -> Result<i32, i32> {
        if !self.valid(id) {
            return Err(libc::ESRCH);
        }
        let mut a = libc::seccomp_notif_addfd {
            id,
            flags: libc::SECCOMP_ADDFD_FLAG_SEND as u32,
            srcfd: src as u32,
            newfd: 0,
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

/// The device path `/dev/neuron<N>`'s N.
fn neuron_index(path: &[u8]) -> Option<u32> {
    let rest = path.strip_prefix(b"/dev/neuron")?;
    if rest.is_empty() || !rest.iter().all(u8::is_ascii_digit) || rest.len() > 6 {
        return None;
    }
    std::str::from_utf8(rest).ok()?.parse().ok()
}

struct Session<'a> {
    cfg: &'a DriverConfig,
    model: Model,
    listener: Listener,
    dev: (u64, u64),
    memfd: RawFd,
    tgids: BTreeMap<u32, u32>,
    bug_pid: Option<u32>,
}

impl Session<'_> {
    fn tgid(&mut self, tid: u32) -> u32 {
        *self.tgids.entry(tid).or_insert_with(|| tgid_of(tid))
    }

    fn echo(&self, from: usize) {
        if self.cfg.echo {
            for l in self.model.log.iter().skip(from) {
                eprintln!("nrt-sim driver: pid {}: {}: {}", l.pid, l.request, l.text);
            }
        }
    }

    fn handle(&mut self, n: &libc::seccomp_notif) {
        let nr = i64::from(n.data.nr);
        let args = n.data.args;
        let mut mem = ProcMem { pid: n.pid as libc::pid_t };
        if nr == libc::SYS_openat || nr == libc::SYS_open {
            let (path_ptr, flags) = if nr == libc::SYS_openat { (args[1], args[2]) } else { (args[0], args[1]) };
            let Some(path) = read_path(&mut mem, path_ptr) else {
                return self.listener.cont(n.id);
            };
            // Absolute /dev/neuron<N> only (G-DRV-OPEN).
            match neuron_index(&path) {
                Some(0) => {
                    let cloexec = flags & libc::O_CLOEXEC as u64 != 0;
                    match self.listener.add_fd(n.id, self.memfd, cloexec) {
                        Ok(_) => {
                            let pid = self.tgid(n.pid);
                            self.model.open(pid);
                        }
                        Err(e) => self.listener.respond(n.id, 0, e, 0),
                    }
                }
                Some(_) => self.listener.respond(n.id, 0, libc::ENOENT, 0),
                None => self.listener.cont(n.id),
            }
            return;
        }
        if nr != libc::SYS_ioctl {
            return self.listener.cont(n.id);
        }
        let fd = args[0] as i32;
        let ours = fd >= 0
            && std::fs::metadata(format!("/proc/{}/fd/{fd}", n.pid)).is_ok_and(|m| (m.dev(), m.ino()) == self.dev);
        if !ours {
            return self.listener.cont(n.id);
        }
        let code = args[1] as u32;
        let ptr = args[2];
        let pid = self.tgid(n.pid);
        let size = model::arg_size(code).unwrap_or(0);
        let mut arg = vec![0u8; size];
        let from = self.model.log.len();
        if mem.read(ptr, &mut arg).is_err() {
            // The driver's copy_from_user failure, answered EFAULT (G-DRV-EFAULT).
            self.listener.respond(n.id, 0, libc::EFAULT, 0);
            return;
        }
        // The memory read was of the caller only if its notification is still
        // live (seccomp_unotify(2)): else the model must not act on it.
        if !self.listener.valid(n.id) {
            return;
        }
        let before = arg.clone();
        let answer = self.model.handle(pid, code, &mut arg, &mut mem);
        if arg != before && mem.write(ptr, &arg).is_err() {
            self.listener.respond(n.id, 0, libc::EFAULT, 0);
            return;
        }
        self.echo(from);
        match answer {
            Ok(v) => self.listener.respond(n.id, v, 0, 0),
            Err(Refusal::Errno(e)) => self.listener.respond(n.id, 0, e.0, 0),
            Err(Refusal::KernelBug(v)) => {
                eprintln!("nrt-sim driver: {v}");
                if self.cfg.strict {
                    // The real kernel oopses in the caller: it never returns (G-DRV-BUG-MODE).
                    self.bug_pid = Some(pid);
                    // SAFETY: kill(2) on a process of our own supervised tree.
                    unsafe {
                        libc::kill(pid as libc::pid_t, libc::SIGKILL);
                    }
                    self.listener.respond(n.id, 0, libc::EIO, 0);
                } else {
                    self.listener.respond(n.id, 0, 0, 0);
                }
            }
        }
    }
}

/// Run COMMAND under the driver model (see the module docs).
pub fn run(cfg: &DriverConfig) -> Result<Outcome, DriverError> {
    if let Some(why) = user_notif_unavailable() {
        return Err(DriverError::Seccomp(why));
    }
    let Some((prog, args)) = cfg.command.split_first() else {
        return Err(DriverError::Spawn("no COMMAND given".into()));
    };
    let filter = filter_program().map_err(DriverError::Seccomp)?;
    let engine = DeviceEngine::start(&cfg.sim).map_err(DriverError::Device)?;
    let file = std::sync::Arc::clone(engine.file());
    let meta =
        file.file().metadata().map_err(|e| DriverError::Device(ShmError::Io { what: "fstat".into(), error: e }))?;
    let mut fds = [0 as RawFd; 2];
    // SAFETY: a valid two-int array; the result is checked.
    let rc = unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr()) };
    if rc != 0 {
        return Err(DriverError::Spawn(format!("socketpair: {}", std::io::Error::last_os_error())));
    }
    // SAFETY: two fresh descriptors this process owns.
    let (parent_sock, child_sock) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    let child_raw = child_sock.as_raw_fd();
    let mut cmd = Command::new(prog);
    cmd.args(args).stdin(Stdio::inherit()).stderr(Stdio::inherit());
    cmd.stdout(if cfg.capture_stdout { Stdio::piped() } else { Stdio::inherit() });
    // SAFETY: the closure runs in the forked child before exec and makes only
    // async-signal-safe system calls on stack data and the prebuilt filter.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let fprog = libc::sock_fprog { len: filter.len() as u16, filter: filter.as_ptr().cast_mut() };
            let fd = libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                libc::SECCOMP_FILTER_FLAG_NEW_LISTENER,
                &fprog as *const libc::sock_fprog,
            );
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            let sent = send_fd(child_raw, fd as RawFd);
            libc::close(fd as RawFd);
            sent
        });
    }
    let mut child = cmd.spawn().map_err(|e| DriverError::Spawn(format!("{}: {e}", prog.to_string_lossy())))?;
    drop(child_sock);
    let listener = match recv_fd(parent_sock.as_raw_fd(), Duration::from_secs(10)) {
        Ok(fd) => Listener { fd },
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(DriverError::Seccomp(format!("the listener: {e}")));
        }
    };
    drop(parent_sock);
    // Drain captured stdout on a thread (a full pipe must not block COMMAND).
    let reader = child.stdout.take().map(|mut s| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = s.read_to_end(&mut v);
            v
        })
    });
    let mut s = Session {
        cfg,
        model: Model::new(std::sync::Arc::clone(&file)),
        listener,
        dev: (meta.dev(), meta.ino()),
        memfd: file.file().as_raw_fd(),
        tgids: BTreeMap::new(),
        bug_pid: None,
    };
    let t0 = Instant::now();
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => {
                // COMMAND is gone: what the driver's flush does for its descriptors.
                s.model.process_gone(child.id());
                break Some(st);
            }
            Ok(None) => {}
            Err(_) => break None,
        }
        if t0.elapsed() >= cfg.limit {
            timed_out = true;
            let _ = child.kill();
            break child.wait().ok();
        }
        let mut pfd = libc::pollfd { fd: s.listener.fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd.
        let rc = unsafe { libc::poll(&mut pfd, 1, 20) };
        if rc > 0 && pfd.revents & libc::POLLIN != 0 {
            if let Ok(n) = s.listener.recv() {
                s.handle(&n);
            }
        } else if rc > 0 && pfd.revents & (libc::POLLHUP | libc::POLLERR) != 0 {
            // No task left under the filter: wait for COMMAND's exit.
            std::thread::sleep(Duration::from_millis(5));
        }
    };
    let stdout = reader.and_then(|r| r.join().ok()).unwrap_or_default();
    let opens = s.model.opens();
    let exit = if timed_out {
        Exit::TimedOut
    } else if s.bug_pid.is_some() && cfg.strict {
        Exit::KernelBug
    } else {
        match status {
            Some(st) => match (st.code(), st.signal()) {
                (Some(c), _) => Exit::Code(c),
                (None, Some(sig)) => Exit::Signal(sig),
                _ => Exit::Code(1),
            },
            None => Exit::Code(1),
        }
    };
    let (played, _) = engine.stop();
    Ok(Outcome {
        exit,
        log: std::mem::take(&mut s.model.log),
        violations: std::mem::take(&mut s.model.violations),
        calls: std::mem::take(&mut s.model.calls),
        opens,
        refusals: s.model.refusals,
        stdout,
        played,
    })
}

/// The status (and one-step return code, when printed) in COMMAND's output:
/// a JSON report's top-level `"status"` / `"return_code"`, or the text
/// report's `status: <code> <NAME>` and `one-step return: <rc>` lines.
pub fn parse_status(out: &[u8]) -> Option<(NrtStatus, Option<u8>)> {
    let text = String::from_utf8_lossy(out);
    let trimmed = text.trim();
    if trimmed.starts_with('{') {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(trimmed) {
            let code = v.get("status").and_then(serde_json::Value::as_u64)?;
            let rc = v.get("return_code").and_then(serde_json::Value::as_u64).and_then(|r| u8::try_from(r).ok());
            return Some((NrtStatus::from_code(u32::try_from(code).ok()?), rc));
        }
    }
    let mut status = None;
    let mut rc = None;
    for line in text.lines() {
        let l = line.trim_start();
        if let Some(rest) = l.strip_prefix("status: ") {
            if let Some(code) = rest.split_whitespace().next().and_then(|c| c.parse::<u32>().ok()) {
                status.get_or_insert(NrtStatus::from_code(code));
            }
        } else if let Some(rest) = l.strip_prefix("one-step return: ") {
            rc = rc.or_else(|| rest.split_whitespace().next().and_then(|c| c.parse::<u8>().ok()));
        }
    }
    status.map(|s| (s, rc))
}

/// `--scenario all`: COMMAND once per scenario (a fresh device each), the
/// table of `nrt-sim run --scenario all`. `base` gives everything but the
/// device; barrier-300s is skipped (it needs 300 s of real time). Returns the
/// rows and the names skipped with their reason.
pub fn run_all(base: &DriverConfig, out: &mut dyn std::io::Write) -> (Vec<Row>, Vec<(&'static str, String)>) {
    let mut rows = Vec::new();
    let mut skipped = Vec::new();
    for s in SCENARIOS {
        if s.name == "barrier-300s" {
            let why = "needs 300 s of real time (the barrier clears at 300 s)".to_string();
            let _ = writeln!(out, "{:20} SKIPPED: {why}", s.name);
            skipped.push((s.name, why));
            continue;
        }
        let cfg = DriverConfig { sim: s.config(), capture_stdout: true, ..base.clone() };
        let row = match run(&cfg) {
            Ok(o) => {
                let bugs: Vec<String> = o.kernel_bugs().iter().map(|v| v.to_string()).collect();
                match parse_status(&o.stdout) {
                    _ if cfg.strict && !bugs.is_empty() => Row {
                        name: s.name,
                        expected: s.expected,
                        expected_rc: s.expected_rc,
                        got: Err(bugs.join("; ")),
                        verdict: Err("kernel BUG".into()),
                    },
                    Some((st, None)) => Row {
                        name: s.name,
                        expected: s.expected,
                        expected_rc: s.expected_rc,
                        got: Err(format!("{} {} (no return code printed)", st.code(), st.name())),
                        verdict: if st == s.expected {
                            Err("no one-step return code in COMMAND's output".into())
                        } else {
                            Err(format!("status {} {}, expected {}", st.code(), st.name(), s.expected.code()))
                        },
                    },
                    Some((st, Some(rc))) => {
                        let verdict = if st != s.expected {
                            Err(format!("status {} {}, expected {}", st.code(), st.name(), s.expected.code()))
                        } else if rc != s.expected_rc {
                            Err(format!("return code {rc}, expected {}", s.expected_rc))
                        } else {
                            Ok(())
                        };
                        Row {
                            name: s.name,
                            expected: s.expected,
                            expected_rc: s.expected_rc,
                            got: Ok((st, rc)),
                            verdict,
                        }
                    }
                    None => Row {
                        name: s.name,
                        expected: s.expected,
                        expected_rc: s.expected_rc,
                        got: Err(format!("no status line in COMMAND's output ({:?})", o.exit)),
                        verdict: Err("no status".into()),
                    },
                }
            }
            Err(e) => Row {
                name: s.name,
                expected: s.expected,
                expected_rc: s.expected_rc,
                got: Err(e.to_string()),
                verdict: Err("the run failed".into()),
            },
        };
        rows.push(row);
    }
    (rows, skipped)
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

    #[test]
    fn statuses_are_found_in_text_and_json() {
        let t = b"heading\n\nstatus: 1003 NRT_EXEC_NAN (nan)\none-step return: 0 (ok) after 3 steps\n";
        assert_eq!(parse_status(t), Some((NrtStatus::from_code(1003), Some(0))));
        let j = br#"{"status": 5, "status_name": "NRT_TIMEOUT", "return_code": 2}"#;
        assert_eq!(parse_status(j), Some((NrtStatus::from_code(5), Some(2))));
        assert_eq!(parse_status(b"nothing"), None);
        assert_eq!(parse_status(&[0xFF, 0xFE]), None);
    }

    #[test]
    fn the_filter_builds() {
        let f = filter_program().expect("libseccomp builds the filter");
        assert!(f.len() > 4);
    }
}
