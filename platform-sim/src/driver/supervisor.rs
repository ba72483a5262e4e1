//! The seccomp side of `nrt-sim driver -- COMMAND`.
//!
//! [`run`] starts the device ([`DeviceEngine`]), builds the filter with
//! libseccomp (allow everything; `open`, `openat`, `ioctl` whose request
//! has type `'N'` (`(arg1 >> 8) & 0xff == 0x4E`), and [`RANGE_TRAPPED`]'s
//! calls on a descriptor in the reserved range go to user notification),
//! exports it as BPF and forks the [`reaper`], a child subreaper that forks
//! COMMAND and kills COMMAND's whole tree when COMMAND ends, when asked, or
//! when this process is gone (even by `SIGKILL`). COMMAND dies with the reaper
//! (`PR_SET_PDEATHSIG`), sets `no_new_privs`, installs the exported program
//! with `SECCOMP_FILTER_FLAG_NEW_LISTENER` (only raw system calls after the
//! fork: no allocation, no lock), sends the listener to this process over a
//! socketpair (`SCM_RIGHTS`), and execs; the reaper relays COMMAND's wait
//! status. Only COMMAND's tree is filtered, never the reaper. Pids are this
//! process's own (no pid namespace).
//!
//! The parent answers each notification:
//!
//! - `open`/`openat` of `/dev/neuron0` (read from the caller's memory with
//!   `process_vm_readv`): a new descriptor of the device memfd, installed with
//!   `SECCOMP_IOCTL_NOTIF_ADDFD` + `SECCOMP_ADDFD_FLAG_SEND`, at the lowest
//!   free number of [`DEVICE_FD_BASE`].. (`SECCOMP_ADDFD_FLAG_SETFD`; the
//!   caller's `O_CLOEXEC` kept); `/dev/neuron<N>` for N > 0: `ENOENT` (one device);
//!   every other path: `SECCOMP_USER_NOTIF_FLAG_CONTINUE` (opened natively);
//! - `ioctl` on a descriptor that is the device memfd (same device and inode
//!   as `/proc/<pid>/fd/<fd>`): the argument struct copied in (size from
//!   [`model::arg_size`]), [`Model::handle`], copied back, the value or errno
//!   returned; on any other descriptor: continue (the kernel answers);
//! - a call of [`RANGE_TRAPPED`] on a device descriptor: `mmap`
//!   ([`Model::mmap`]: continued when the driver maps what the memfd holds
//!   there), `read`, `write` and the rest ([`NoFop::errno`]), `dup` and
//!   `fcntl(F_DUPFD)` (the copy installed in the range too); on any other
//!   file in the range: continue (G-DRV-MMAP).
//!
//! The caller is a hostile peer:
//!
//! - each notification's process is resolved afresh (thread -> thread group
//!   from `/proc/<tid>/status`, a pidfd opened on it) and then checked with
//!   `SECCOMP_IOCTL_NOTIF_ID_VALID`: a thread id reused by another process is
//!   never taken for the one that once had it, and a kernel BUG kills the
//!   process that made the call, through that pidfd;
//! - every access to its memory (and the descriptor check) runs on a reader
//!   thread with a deadline ([`CALLER_MEM_BUDGET`] per notification): a page
//!   nobody serves (userfaultfd) holds that reader, never the loop; a path not
//!   read in time opens natively (the kernel reads it in the caller, which
//!   then waits on its own page), an argument not read in time is `EFAULT`;
//! - a watchdog thread has the reaper kill COMMAND's whole tree when
//!   `--limit-s` passes, whatever the loop is doing; at the end (COMMAND's
//!   exit, the limit, a kernel BUG under `--strict`) the reaper kills and
//!   reaps the tree and reports, within [`reaper::REPORT_WAIT`];
//! - what the run keeps is bounded: the log ([`LOG_CAP`] lines), the
//!   violations ([`VIOLATION_CAP`]), the captured output ([`STDOUT_CAP`]
//!   bytes), each with a count of what was dropped; the drain of captured
//!   output waits at most [`DRAIN_GRACE`] once the tree is gone.
//!
//! `unsafe` here: the seccomp ioctls, `process_vm_readv`/`writev`,
//! `sendmsg`/`recvmsg`, `poll`, `pipe2`, `socketpair`, the pidfd calls, each
//! with its `// SAFETY:` line (the fork side is in [`reaper`]).

#![allow(unsafe_code)]

use std::collections::BTreeMap;
use std::ffi::{CString, OsString};
use std::fs::File;
use std::io::{Read as _, Seek as _};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use libseccomp::{ScmpAction, ScmpArgCompare, ScmpCompareOp, ScmpFilterContext, ScmpSyscall};
use nrt_core::NrtStatus;

use super::model::{
    self, CopyFault, LogLine, MemFault, MmapCall, Model, NoFop, OpenMode, Refusal, TargetMem, Violation,
};
use super::reaper::{self, Reaper, Spawn};
use super::DeviceEngine;
use crate::report::Row;
use crate::run::SimConfig;
use crate::scenario::{Mismatch, SCENARIOS};
use crate::shm::ShmError;

/// Exit status when a kernel BUG fails a `--strict` run.
pub const EXIT_KERNEL_BUG: u8 = 70;
/// Exit status when a `--strict` run saw a conformance violation (and no kernel BUG).
pub const EXIT_CONFORMANCE: u8 = 71;
/// Exit status when COMMAND ran past the limit and was killed.
pub const EXIT_TIMEOUT: u8 = 124;
/// The device path the model serves.
pub const DEVICE_PATH: &str = "/dev/neuron0";

/// Time one notification may spend in the caller's memory (the path, the
/// descriptor check, the argument struct and what it points to) before every
/// further access of that notification fails (G-DRV-READ-DEADLINE). A healthy
/// read takes microseconds; one second leaves room for a loaded machine.
pub const CALLER_MEM_BUDGET: Duration = Duration::from_secs(1);
/// Reader threads left blocked in a caller's memory (a page nobody serves)
/// before every further access fails at once. They end when the process that
/// holds the page's userfaultfd dies, at the latest when COMMAND's tree is killed.
pub const MAX_STUCK_READERS: usize = 8;
/// Lines of the log kept (refusals, warnings, kernel BUGs, the supervisor's
/// own notes); later lines are counted, not kept.
pub const LOG_CAP: usize = 4096;
/// Violations kept (kernel BUGs and warnings); later ones are counted.
pub const VIOLATION_CAP: usize = 4096;
/// Bytes of COMMAND's captured standard output kept; the rest is read and counted.
pub const STDOUT_CAP: usize = 16 << 20;
/// How long the drain of captured output waits for end-of-file once
/// COMMAND's tree is gone (a process outside the tree may hold the pipe).
pub const DRAIN_GRACE: Duration = Duration::from_secs(1);
/// How long the reaper's killing of COMMAND's tree may take (rounds of scan, SIGKILL, reap).
pub const KILL_BOUND: Duration = Duration::from_secs(2);
/// What a run may take past its limit: one notification's memory budget, the
/// kill, the drain and the device's stop, rounded up. The model's own work in
/// the call in hand when the limit passes is on top (it does not touch COMMAND).
pub const LIMIT_SLACK: Duration = Duration::from_secs(5);
/// The first descriptor number of the reserved range the device's
/// descriptors are installed in (`SECCOMP_ADDFD_FLAG_SETFD`), so the filter
/// can trap `read`, `write`, `mmap` and the rest on device descriptors only
/// (G-DRV-MMAP). Below 1024, the usual `RLIMIT_NOFILE` and `FD_SETSIZE`.
pub const DEVICE_FD_BASE: i32 = 960;
/// Numbers in the reserved range: a power of two, `DEVICE_FD_BASE` a multiple
/// of it, so one masked compare matches the range.
pub const DEVICE_FD_SLOTS: i32 = 64;
const _: () = assert!(
    DEVICE_FD_SLOTS.count_ones() == 1
        && DEVICE_FD_BASE % DEVICE_FD_SLOTS == 0
        && DEVICE_FD_BASE + DEVICE_FD_SLOTS <= 1024
);
/// Processes attached to the device at once: the driver's
/// `NEURON_MAX_PROCESS_PER_DEVICE` (share/neuron_driver_shared.h); one more
/// fails `ncdev_open` with `EBUSY` (`npid_attach`, neuron_pid.c; neuron_cdev.c).
/// Bounds the pidfds the supervisor holds.
pub const MAX_ATTACHED: usize = 16;

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
    /// Answer the simulator's hint query (else the model plays a real driver
    /// and refuses it, `Model::without_hints`).
    pub hints: bool,
    /// Play the faults for each core's first that many kickoffs only (`None`: all).
    pub fault_kickoffs: Option<u32>,
    /// A device that acknowledges copies it did not make (`None`: every copy made).
    pub copy_fault: Option<CopyFault>,
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
    /// The log (refusals, warnings, kernel BUGs): the first [`LOG_CAP`] lines.
    pub log: Vec<LogLine>,
    /// Lines of the log dropped past [`LOG_CAP`].
    pub log_dropped: u64,
    /// The violations: the first [`VIOLATION_CAP`].
    pub violations: Vec<Violation>,
    /// Violations dropped past [`VIOLATION_CAP`].
    pub violations_dropped: u64,
    /// Kernel BUGs seen (kept or not).
    pub kernel_bug_count: u64,
    /// Warnings seen (kept or not).
    pub warning_count: u64,
    /// Conformance violations seen (kept or not).
    pub conformance_count: u64,
    /// Requests served, by name.
    pub calls: BTreeMap<&'static str, u32>,
    /// Opens of the device answered.
    pub opens: u32,
    /// Calls refused with an errno.
    pub refusals: u32,
    /// COMMAND's standard output, when captured (the first [`STDOUT_CAP`] bytes).
    pub stdout: Vec<u8>,
    /// Bytes of captured output dropped past [`STDOUT_CAP`].
    pub stdout_dropped: u64,
    /// Inferences the device played.
    pub played: u32,
    /// Accesses to a caller's memory that did not finish within
    /// [`CALLER_MEM_BUDGET`] (or were refused with [`MAX_STUCK_READERS`] held).
    pub late_reads: u64,
    /// Processes of COMMAND's tree (beyond COMMAND itself) still running at
    /// the end of the run, and killed then.
    pub killed: u32,
}

impl Outcome {
    /// The kernel BUGs kept.
    pub fn kernel_bugs(&self) -> Vec<&Violation> {
        self.violations.iter().filter(|v| v.is_kernel_bug()).collect()
    }

    /// The supervisor's exit status: COMMAND's, except [`EXIT_KERNEL_BUG`]
    /// for a kernel BUG under `strict`, 128 + N for signal N, [`EXIT_TIMEOUT`].
    pub fn exit_status(&self, strict: bool) -> u8 {
        if strict && self.kernel_bug_count > 0 {
            return EXIT_KERNEL_BUG;
        }
        if strict && self.conformance_count > 0 {
            return EXIT_CONFORMANCE;
        }
        match self.exit {
            Exit::Code(c) => u8::try_from(c).unwrap_or(1),
            Exit::Signal(s) => 128u8.saturating_add(u8::try_from(s).unwrap_or(0)),
            Exit::TimedOut => EXIT_TIMEOUT,
            Exit::KernelBug => EXIT_KERNEL_BUG,
        }
    }

    /// What the summary says about the caps, when something was dropped.
    pub fn dropped_note(&self) -> Option<String> {
        let mut parts = Vec::new();
        if self.log_dropped > 0 {
            parts.push(format!("the log kept its first {LOG_CAP} lines, {} more dropped", self.log_dropped));
        }
        if self.violations_dropped > 0 {
            parts.push(format!(
                "the violations kept their first {VIOLATION_CAP}, {} more dropped",
                self.violations_dropped
            ));
        }
        if self.stdout_dropped > 0 {
            parts.push(format!(
                "the captured output kept its first {STDOUT_CAP} bytes, {} more dropped",
                self.stdout_dropped
            ));
        }
        if self.late_reads > 0 {
            parts.push(format!(
                "{} access(es) to a caller's memory did not finish within {} ms (answered as faults)",
                self.late_reads,
                CALLER_MEM_BUDGET.as_millis()
            ));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
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

/// The calls trapped when their descriptor argument (its index) is in the
/// reserved range: the file operations the driver has none of, `mmap`, and
/// the duplications (which the supervisor makes into the range itself).
pub const RANGE_TRAPPED: &[(&str, u32)] = &[
    ("read", 0),
    ("write", 0),
    ("pread64", 0),
    ("pwrite64", 0),
    ("readv", 0),
    ("writev", 0),
    ("preadv", 0),
    ("pwritev", 0),
    ("preadv2", 0),
    ("pwritev2", 0),
    ("ftruncate", 0),
    ("fallocate", 0),
    ("mmap", 4),
    ("dup", 0),
    ("fcntl", 0),
];

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
    // Calls on a descriptor in the reserved range (the fd is an int: the
    // mask drops the register's upper half).
    let in_range = |arg: u32| {
        ScmpArgCompare::new(
            arg,
            ScmpCompareOp::MaskedEqual(u64::from(!(DEVICE_FD_SLOTS as u32 - 1))),
            DEVICE_FD_BASE as u64,
        )
    };
    for (name, arg) in RANGE_TRAPPED {
        let sc = ScmpSyscall::from_name(name).map_err(e(name))?;
        ctx.add_rule_conditional(ScmpAction::Notify, sc, &[in_range(*arg)]).map_err(e(name))?;
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
pub(super) fn send_fd(sock: RawFd, fd: RawFd) -> std::io::Result<()> {
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

/// `process_vm_readv` of `buf.len()` bytes at `addr` in thread `tid` (may
/// block for as long as the caller's page is not there: run it on a [`Reader`]).
fn vm_read(tid: u32, addr: u64, buf: &mut [u8]) -> Result<(), MemFault> {
    if buf.is_empty() {
        return Ok(());
    }
    let local = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    let remote = libc::iovec { iov_base: addr as usize as *mut libc::c_void, iov_len: buf.len() };
    // SAFETY: `local` is our live buffer of that length; the remote range is
    // the kernel's to check (a bad one fails, it is never dereferenced here).
    let n = unsafe { libc::process_vm_readv(tid as libc::pid_t, &local, 1, &remote, 1, 0) };
    if n == buf.len() as isize {
        Ok(())
    } else {
        Err(MemFault)
    }
}

/// `process_vm_writev` of `buf` at `addr` in thread `tid` (as [`vm_read`]).
fn vm_write(tid: u32, addr: u64, buf: &[u8]) -> Result<(), MemFault> {
    if buf.is_empty() {
        return Ok(());
    }
    let local = libc::iovec { iov_base: buf.as_ptr().cast_mut().cast(), iov_len: buf.len() };
    let remote = libc::iovec { iov_base: addr as usize as *mut libc::c_void, iov_len: buf.len() };
    // SAFETY: as in `vm_read`; `local` is only read by the kernel.
    let n = unsafe { libc::process_vm_writev(tid as libc::pid_t, &local, 1, &remote, 1, 0) };
    if n == buf.len() as isize {
        Ok(())
    } else {
        Err(MemFault)
    }
}

/// A NUL-terminated path at `addr` in thread `tid` (at most 4096 bytes), read page by page.
fn read_path(tid: u32, addr: u64) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let mut at = addr;
    while out.len() < 4096 {
        let page_left = 4096 - (at % 4096) as usize;
        let n = page_left.min(4096 - out.len());
        let mut buf = vec![0u8; n];
        vm_read(tid, at, &mut buf).ok()?;
        if let Some(z) = buf.iter().position(|b| *b == 0) {
            out.extend_from_slice(buf.get(..z)?);
            return Some(out);
        }
        out.extend_from_slice(&buf);
        at = at.checked_add(n as u64)?;
    }
    None
}

/// Whether descriptor `fd` of thread `tid` is the device file (device, inode).
/// The stat follows the descriptor to its file, which may be one COMMAND
/// serves itself (FUSE): run it on a [`Reader`].
fn is_device_fd(tid: u32, fd: i32, dev: (u64, u64)) -> bool {
    fd >= 0 && std::fs::metadata(format!("/proc/{tid}/fd/{fd}")).is_ok_and(|m| (m.dev(), m.ino()) == dev)
}

type Job = Box<dyn FnOnce() + Send>;

/// A thread that runs one job (an access to a caller's memory) at a time.
struct Worker {
    jobs: mpsc::Sender<Job>,
    thread: JoinHandle<()>,
}

impl Worker {
    fn spawn() -> Option<Worker> {
        let (jobs, rx) = mpsc::channel::<Job>();
        let thread = std::thread::Builder::new()
            .name("nrt-sim-reader".into())
            .spawn(move || {
                while let Ok(job) = rx.recv() {
                    job();
                }
            })
            .ok()?;
        Some(Worker { jobs, thread })
    }
}

/// Runs the accesses to a caller's memory with a deadline: a job that does not
/// finish in time leaves its worker behind (blocked in the kernel on the
/// caller's page; it ends when that page comes in or its userfaultfd is
/// closed) and the next job gets a fresh worker. At most
/// [`MAX_STUCK_READERS`] are left behind; past that, every job fails at once.
#[derive(Default)]
struct Reader {
    idle: Option<Worker>,
    stuck: Vec<JoinHandle<()>>,
    late: u64,
}

impl Reader {
    /// `f`'s result, or `None` when it did not finish by `deadline` (or could not start).
    fn run<T: Send + 'static>(&mut self, deadline: Instant, f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
        self.stuck.retain(|t| !t.is_finished());
        let left = deadline.saturating_duration_since(Instant::now());
        if self.stuck.len() >= MAX_STUCK_READERS || left.is_zero() {
            self.late = self.late.saturating_add(1);
            return None;
        }
        let w = match self.idle.take() {
            Some(w) => w,
            None => Worker::spawn()?,
        };
        let (tx, rx) = mpsc::sync_channel(1);
        let job: Job = Box::new(move || {
            let _ = tx.send(f());
        });
        if w.jobs.send(job).is_err() {
            return None;
        }
        match rx.recv_timeout(left) {
            Ok(v) => {
                self.idle = Some(w);
                Some(v)
            }
            Err(_) => {
                // Its channel closes here: the worker ends once its job returns.
                self.stuck.push(w.thread);
                self.late = self.late.saturating_add(1);
                None
            }
        }
    }

    /// Workers still blocked in a caller's memory.
    #[cfg(test)]
    fn stuck(&mut self) -> usize {
        self.stuck.retain(|t| !t.is_finished());
        self.stuck.len()
    }
}

/// The memory of the thread that made the call, through a [`Reader`], within
/// the notification's deadline.
struct ProcMem<'a> {
    reader: &'a mut Reader,
    tid: u32,
    deadline: Instant,
    /// An access did not finish in time.
    late: bool,
}

impl TargetMem for ProcMem<'_> {
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), MemFault> {
        if buf.is_empty() {
            return Ok(());
        }
        let (tid, len) = (self.tid, buf.len());
        let got = self.reader.run(self.deadline, move || {
            let mut v = vec![0u8; len];
            vm_read(tid, addr, &mut v).map(|()| v)
        });
        match got {
            Some(Ok(v)) if v.len() == buf.len() => {
                buf.copy_from_slice(&v);
                Ok(())
            }
            Some(_) => Err(MemFault),
            None => {
                self.late = true;
                Err(MemFault)
            }
        }
    }

    fn write(&mut self, addr: u64, buf: &[u8]) -> Result<(), MemFault> {
        if buf.is_empty() {
            return Ok(());
        }
        let (tid, v) = (self.tid, buf.to_vec());
        match self.reader.run(self.deadline, move || vm_write(tid, addr, &v)) {
            Some(r) => r,
            None => {
                self.late = true;
                Err(MemFault)
            }
        }
    }
}

/// The thread group of thread `tid` (`None`: no such thread any more).
fn tgid_of(tid: u32) -> Option<u32> {
    std::fs::read_to_string(format!("/proc/{tid}/status"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("Tgid:").and_then(|v| v.trim().parse().ok()))
}

/// A pidfd for process `pid`.
fn pidfd_open(pid: u32) -> Option<OwnedFd> {
    // SAFETY: pidfd_open(2) takes a pid and flags; the result is checked.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    // SAFETY: a fresh descriptor the kernel gave this process.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// `SIGKILL` to the process of `pidfd`.
fn pidfd_kill(pidfd: &OwnedFd) {
    // SAFETY: a pidfd this process holds; no siginfo; a failure (it is gone) is nothing to act on.
    unsafe {
        libc::syscall(libc::SYS_pidfd_send_signal, pidfd.as_raw_fd(), libc::SIGKILL, std::ptr::null::<u8>(), 0);
    }
}

/// Whether the process of `pidfd` has exited (a pidfd polls readable then).
fn pidfd_exited(pidfd: &OwnedFd) -> bool {
    let mut p = libc::pollfd { fd: pidfd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd, no wait.
    unsafe { libc::poll(&mut p, 1, 0) > 0 }
}

/// Ends COMMAND's tree when the limit passes (through the reaper), whatever the supervisor's loop is doing.
struct Watchdog {
    done: Arc<(Mutex<bool>, Condvar)>,
    fired: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Watchdog {
    fn start(limit: Duration, stopper: Option<OwnedFd>) -> Watchdog {
        let done = Arc::new((Mutex::new(false), Condvar::new()));
        let fired = Arc::new(AtomicBool::new(false));
        let (d, f) = (Arc::clone(&done), Arc::clone(&fired));
        let thread = std::thread::Builder::new()
            .name("nrt-sim-limit".into())
            .spawn(move || {
                let until = Instant::now() + limit;
                let (m, cv) = &*d;
                let mut stop = m.lock().unwrap_or_else(|e| e.into_inner());
                while !*stop {
                    let left = until.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        f.store(true, Ordering::SeqCst);
                        if let Some(fd) = &stopper {
                            reaper::stop(fd);
                        }
                        return;
                    }
                    stop = cv.wait_timeout(stop, left).unwrap_or_else(|e| e.into_inner()).0;
                }
            })
            .ok();
        Watchdog { done, fired, thread }
    }

    fn fired(&self) -> bool {
        self.fired.load(Ordering::SeqCst)
    }

    fn stop(&mut self) {
        let (m, cv) = &*self.done;
        *m.lock().unwrap_or_else(|e| e.into_inner()) = true;
        cv.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.stop();
    }
}

/// What the drain of captured output read.
#[derive(Default)]
struct Captured {
    bytes: Vec<u8>,
    dropped: u64,
}

/// COMMAND's captured standard output, read on a thread (a full pipe must not
/// block COMMAND) that stops at end-of-file or when told to.
struct Drain {
    got: Arc<Mutex<Captured>>,
    stop: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

impl Drain {
    fn start(mut out: File) -> Option<Drain> {
        let got = Arc::new(Mutex::new(Captured::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let (g, s) = (Arc::clone(&got), Arc::clone(&stop));
        let thread = std::thread::Builder::new()
            .name("nrt-sim-stdout".into())
            .spawn(move || {
                let mut buf = vec![0u8; 64 << 10];
                while !s.load(Ordering::Acquire) {
                    let mut p = libc::pollfd { fd: out.as_raw_fd(), events: libc::POLLIN, revents: 0 };
                    // SAFETY: one valid pollfd.
                    let rc = unsafe { libc::poll(&mut p, 1, 20) };
                    if rc <= 0 {
                        continue;
                    }
                    match out.read(&mut buf) {
                        Ok(0) => return,
                        Ok(n) => {
                            let mut c = g.lock().unwrap_or_else(|e| e.into_inner());
                            let room = STDOUT_CAP.saturating_sub(c.bytes.len()).min(n);
                            c.bytes.extend_from_slice(buf.get(..room).unwrap_or_default());
                            c.dropped = c.dropped.saturating_add((n - room) as u64);
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(_) => return,
                    }
                }
            })
            .ok()?;
        Some(Drain { got, stop, thread })
    }

    /// Wait up to `grace` for end-of-file, then stop; what was read.
    fn finish(self, grace: Duration) -> Captured {
        let until = Instant::now() + grace;
        while !self.thread.is_finished() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
        self.stop.store(true, Ordering::Release);
        let _ = self.thread.join();
        std::mem::take(&mut *self.got.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// At most `cap` items kept, the rest counted.
#[derive(Debug)]
struct Capped<T> {
    kept: Vec<T>,
    dropped: u64,
    cap: usize,
}

impl<T> Capped<T> {
    fn new(cap: usize) -> Capped<T> {
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

    /// Answer with a new descriptor for `src` in the caller, numbered `at`
    /// (else the lowest free); its number, or the errno.
    fn add_fd(&self, id: u64, src: RawFd, cloexec: bool, at: Option<i32>) -> Result<i32, i32> {
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

/// The device path `/dev/neuron<N>`'s N.
fn neuron_index(path: &[u8]) -> Option<u32> {
    let rest = path.strip_prefix(b"/dev/neuron")?;
    if rest.is_empty() || !rest.iter().all(u8::is_ascii_digit) || rest.len() > 6 {
        return None;
    }
    std::str::from_utf8(rest).ok()?.parse().ok()
}

/// The process that made a call, resolved for this notification only.
struct Caller {
    tgid: u32,
    pidfd: OwnedFd,
}

struct Session<'a> {
    cfg: &'a DriverConfig,
    model: Model,
    listener: Listener,
    dev: (u64, u64),
    memfd: RawFd,
    reader: Reader,
    /// The processes attached to the device (opened it), each with a pidfd
    /// that polls readable when it exits.
    openers: BTreeMap<u32, OwnedFd>,
    /// The device descriptors installed, by (process, fd number): the mode
    /// each was opened with (write-only is "free access", GEN-4). A `dup` or
    /// `fcntl(F_DUPFD)` of one in the reserved range is installed here too
    /// with its mode; one not in it (a `dup2` out of the range, one inherited
    /// by a child or passed over a socket) is served as `O_RDWR` (G-DRV-DUP).
    descs: BTreeMap<(u32, i32), OpenMode>,
    log: Capped<LogLine>,
    violations: Capped<Violation>,
    kernel_bugs: u64,
    warnings: u64,
    conformance: u64,
    /// Opens of the device answered.
    opens: u32,
    /// A kernel BUG under `--strict`: the caller was killed, the run ends.
    bug_pid: Option<u32>,
}

impl Session<'_> {
    /// Resolve the thread that made notification `n` to its process, hold a
    /// pidfd on it, then check the notification is still live: the thread is
    /// still blocked in that call, so the pidfd is its process's (a thread id
    /// reused by another process meanwhile fails the check). `Err(true)`: the
    /// notification is live but its process could not be resolved.
    fn caller(&self, n: &libc::seccomp_notif) -> Result<Caller, bool> {
        let resolved = tgid_of(n.pid).and_then(|tgid| Some(Caller { tgid, pidfd: pidfd_open(tgid)? }));
        let live = self.listener.valid(n.id);
        match resolved {
            Some(c) if live => Ok(c),
            _ => Err(live),
        }
    }

    /// The process `tgid` that opened the device has exited if its pidfd says
    /// so (its pid may now be another process's, which must not inherit it).
    fn check_gone(&mut self, tgid: u32) {
        if self.openers.get(&tgid).is_some_and(pidfd_exited) {
            self.process_gone(tgid);
        }
    }

    /// A process of COMMAND's tree that opened the device is gone: its exit
    /// was seen through its pidfd (in the loop, or before a call from a
    /// process that now has its pid), or the run is ending with the tree
    /// killed. This is the one place that knows it: the driver's release of
    /// what that process held belongs here.
    fn process_gone(&mut self, tgid: u32) {
        self.descs.retain(|(p, _), _| *p != tgid);
        if self.openers.remove(&tgid).is_some() {
            // The driver detaches a process at its last close (ncdev_release,
            // neuron_cdev.c); close is not trapped, so its exit stands for it.
            self.model.process_gone(tgid);
            self.absorb();
        }
    }

    /// Move the model's new log lines and violations into the capped ones
    /// (echoing them with `--verbose`): the model's own lists stay empty.
    fn absorb(&mut self) {
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

    /// A line of the supervisor's own (kept in the capped log, echoed with `--verbose`).
    fn note(&mut self, pid: u32, request: &'static str, text: String) {
        if self.cfg.echo {
            eprintln!("nrt-sim driver: pid {pid}: {request}: {text}");
        }
        self.log.push(LogLine { pid, request, text });
    }

    fn handle(&mut self, n: &libc::seccomp_notif) {
        let deadline = Instant::now() + CALLER_MEM_BUDGET;
        let nr = i64::from(n.data.nr);
        let args = n.data.args;
        let tid = n.pid;
        if nr == libc::SYS_openat || nr == libc::SYS_open {
            let (path_ptr, flags) = if nr == libc::SYS_openat { (args[1], args[2]) } else { (args[0], args[1]) };
            // Not read (a fault, or not in time): the kernel opens it natively,
            // reading the path in the caller (which then waits on its own page).
            let Some(path) = self.reader.run(deadline, move || read_path(tid, path_ptr)).flatten() else {
                return self.listener.cont(n.id);
            };
            // Absolute /dev/neuron<N> only (G-DRV-OPEN).
            match neuron_index(&path) {
                Some(0) => self.open_device(n, flags),
                Some(_) => self.listener.respond(n.id, 0, libc::ENOENT, 0),
                None => self.listener.cont(n.id),
            }
            return;
        }
        if nr != libc::SYS_ioctl {
            return self.handle_range(n, deadline);
        }
        let fd = args[0] as i32;
        let dev = self.dev;
        if !self.reader.run(deadline, move || is_device_fd(tid, fd, dev)).unwrap_or(false) {
            return self.listener.cont(n.id);
        }
        let caller = match self.caller(n) {
            Ok(c) => c,
            Err(true) => return self.listener.respond(n.id, 0, libc::ESRCH, 0),
            Err(false) => return,
        };
        self.check_gone(caller.tgid);
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
                // Not read in time (a page nobody serves): EFAULT (G-DRV-EFAULT).
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
        // The memory read was of the caller only if its notification is still
        // live (seccomp_unotify(2)): else the model must not act on it.
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
                eprintln!("nrt-sim driver: pid {pid}: {v}");
                if self.cfg.strict {
                    // The real kernel oopses in the caller: it never returns
                    // (G-DRV-BUG-MODE). The process that made the call is killed
                    // through the pidfd resolved for this call; the run then ends
                    // and the rest of the tree follows.
                    self.bug_pid = Some(pid);
                    pidfd_kill(&caller.pidfd);
                    self.listener.respond(n.id, 0, libc::EIO, 0);
                } else {
                    self.listener.respond(n.id, 0, 0, 0);
                }
            }
        }
    }

    /// `DEVICE_GET_ALL_APPS_INFO` (APPS-1): its argument is a header and then
    /// `capacity` entries, so the model does not see it through
    /// [`Model::handle`]: the header is read here, [`Model::apps_info`]
    /// answers, and its bytes (the header and `size` entries) are written at
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
                // GEN-3: copy_from_user's count of bytes not copied (the
                // header is 16 bytes: all of it, or the part past a page end).
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

    fn note_late(&mut self, pid: u32, code: u32) {
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

    /// `open("/dev/neuron0")`: a descriptor of the device memfd for the caller,
    /// which is attached (EBUSY past [`MAX_ATTACHED`] processes, as the driver).
    fn open_device(&mut self, n: &libc::seccomp_notif, flags: u64) {
        let caller = match self.caller(n) {
            Ok(c) => c,
            Err(true) => return self.listener.respond(n.id, 0, libc::ESRCH, 0),
            Err(false) => return,
        };
        self.check_gone(caller.tgid);
        let pid = caller.tgid;
        // IS_NEURON_DEVICE_FREE_ACCESS (neuron_cdev.c): the O_WRONLY bit of
        // the open flags; such an open is not attached (no slot, no count).
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
    /// of the reserved range from `from` (G-DRV-MMAP); with none free, or the
    /// caller's `RLIMIT_NOFILE` below it, at its lowest free number, noted
    /// in the log: read, write and mmap on that descriptor are not checked.
    fn install(&mut self, n: &libc::seccomp_notif, pid: u32, cloexec: bool, from: i32) -> Result<i32, i32> {
        let end = DEVICE_FD_BASE + DEVICE_FD_SLOTS;
        // The notifying thread's table (lstat of the link only: nothing of the caller's is followed).
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

    /// A call the filter trapped because its descriptor is in the reserved
    /// range: on the device, answered as the kernel and the driver do; on
    /// any other file, continued.
    fn handle_range(&mut self, n: &libc::seccomp_notif, deadline: Instant) {
        let nr = i64::from(n.data.nr);
        let a = n.data.args;
        let fd = if nr == libc::SYS_mmap { a[4] as i32 } else { a[0] as i32 };
        let (tid, dev) = (n.pid, self.dev);
        if !self.reader.run(deadline, move || is_device_fd(tid, fd, dev)).unwrap_or(false) {
            return self.listener.cont(n.id);
        }
        let caller = match self.caller(n) {
            Ok(c) => c,
            Err(true) => return self.listener.respond(n.id, 0, libc::ESRCH, 0),
            Err(false) => return,
        };
        self.check_gone(caller.tgid);
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
                        eprintln!("nrt-sim driver: pid {pid}: {v}");
                        if self.cfg.strict {
                            self.bug_pid = Some(pid);
                            pidfd_kill(&caller.pidfd);
                            self.listener.respond(n.id, 0, libc::EIO, 0);
                        } else {
                            self.listener.cont(n.id);
                        }
                    }
                };
            }
            libc::SYS_dup => return self.duplicate(n, pid, mode, false, DEVICE_FD_BASE),
            libc::SYS_fcntl => {
                let (cmd, min) = (a[1] as i32, a[2] as i64);
                let end = i64::from(DEVICE_FD_BASE + DEVICE_FD_SLOTS);
                return match cmd {
                    // A lowest number past the range: the kernel's (out of the range, unchecked).
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

    /// `dup` / `fcntl(F_DUPFD[_CLOEXEC])` of a device descriptor of mode
    /// `mode`: the copy goes in the reserved range from `from` too (the
    /// lowest free number there, not the lowest free one: G-DRV-MMAP).
    fn duplicate(&mut self, n: &libc::seccomp_notif, pid: u32, mode: OpenMode, cloexec: bool, from: i32) {
        match self.install(n, pid, cloexec, from) {
            Ok(fd) => {
                self.descs.insert((pid, fd), mode);
            }
            Err(e) => self.listener.respond(n.id, 0, e, 0),
        }
    }

    /// Poll the listener and every opener's pidfd for up to `ms`: note the
    /// openers gone, serve one notification.
    fn step(&mut self, ms: i32) {
        let mut fds = vec![libc::pollfd { fd: self.listener.fd.as_raw_fd(), events: libc::POLLIN, revents: 0 }];
        let pids: Vec<u32> = self.openers.keys().copied().collect();
        fds.extend(self.openers.values().map(|f| libc::pollfd { fd: f.as_raw_fd(), events: libc::POLLIN, revents: 0 }));
        // SAFETY: a valid array of `fds.len()` pollfds (the listener and one per opener).
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

/// A pipe, both ends close-on-exec: `(read, write)`.
fn pipe() -> Result<(OwnedFd, OwnedFd), DriverError> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: a valid two-int array; the result is checked.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(DriverError::Spawn(format!("pipe2: {}", std::io::Error::last_os_error())));
    }
    // SAFETY: two fresh descriptors this process owns.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// A `SOCK_SEQPACKET` socket pair, close-on-exec.
fn seqpacket_pair() -> Result<(OwnedFd, OwnedFd), DriverError> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: a valid two-int array; the result is checked.
    let rc = unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr()) };
    if rc != 0 {
        return Err(DriverError::Spawn(format!("socketpair: {}", std::io::Error::last_os_error())));
    }
    // SAFETY: two fresh descriptors this process owns.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// The errno COMMAND (or the reaper) wrote on `start_error` before an exec
/// that did not happen; `Ok` once every writer has closed it (COMMAND
/// exec'd); `Err(None)` when `wait` passed first.
fn started(start_error: &OwnedFd, wait: Duration) -> Result<(), Option<i32>> {
    let until = Instant::now() + wait;
    loop {
        let mut p = libc::pollfd { fd: start_error.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        let ms = until.saturating_duration_since(Instant::now()).as_millis().min(100) as i32;
        // SAFETY: one valid pollfd.
        if unsafe { libc::poll(&mut p, 1, ms) } > 0 {
            let mut b = [0u8; 4];
            // SAFETY: a read into a live buffer of its length.
            let n = unsafe { libc::read(start_error.as_raw_fd(), b.as_mut_ptr().cast(), 4) };
            return if n == 4 { Err(Some(i32::from_ne_bytes(b))) } else { Ok(()) };
        }
        if Instant::now() >= until {
            return Err(None);
        }
    }
}

/// Run COMMAND under the driver model (see the module docs).
///
/// COMMAND runs under a reaper process this call forks ([`reaper`]); the
/// calling process's own children and its subreaper setting are left alone.
/// Nothing of COMMAND's tree outlives the calling process.
pub fn run(cfg: &DriverConfig) -> Result<Outcome, DriverError> {
    if let Some(why) = user_notif_unavailable() {
        return Err(DriverError::Seccomp(why));
    }
    let Some(prog) = cfg.command.first() else {
        return Err(DriverError::Spawn("no COMMAND given".into()));
    };
    let argv: Vec<CString> = cfg
        .command
        .iter()
        .map(|a| CString::new(a.as_bytes()))
        .collect::<Result<_, _>>()
        .map_err(|_| DriverError::Spawn("an argument of COMMAND holds a NUL byte".into()))?;
    let argv_ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).chain([std::ptr::null()]).collect();
    let filter = filter_program().map_err(DriverError::Seccomp)?;
    let engine = DeviceEngine::start(&cfg.sim, cfg.hints, cfg.fault_kickoffs).map_err(DriverError::Device)?;
    let file = Arc::clone(engine.file());
    let meta =
        file.file().metadata().map_err(|e| DriverError::Device(ShmError::Io { what: "fstat".into(), error: e }))?;
    let (parent_sock, child_sock) = seqpacket_pair()?;
    let (ctl_mine, ctl_reaper) = seqpacket_pair()?;
    let (start_read, start_write) = pipe()?;
    let out = if cfg.capture_stdout { Some(pipe()?) } else { None };
    let spawn = Spawn {
        argv: &argv_ptrs,
        filter: &filter,
        listener_sock: child_sock.as_raw_fd(),
        stdout: out.as_ref().map(|o| o.1.as_raw_fd()),
        start_error: start_write.as_raw_fd(),
    };
    // The limit counts from here: COMMAND's start.
    let t0 = Instant::now();
    let mut reaper =
        Reaper::spawn(&spawn, ctl_reaper, ctl_mine).map_err(|e| DriverError::Spawn(format!("fork the reaper: {e}")))?;
    drop((child_sock, start_write));
    let out = out.map(|(read, _write)| File::from(read));
    match started(&start_read, cfg.limit) {
        Ok(()) => {}
        Err(e) => {
            reaper.finish();
            let why = e.map_or_else(
                || format!("not started within --limit-s {}", cfg.limit.as_secs()),
                |e| std::io::Error::from_raw_os_error(e).to_string(),
            );
            return Err(DriverError::Spawn(format!("{}: {why}", prog.to_string_lossy())));
        }
    }
    // COMMAND sent its listener before its exec.
    let listener = match recv_fd(parent_sock.as_raw_fd(), Duration::from_secs(2)) {
        Ok(fd) => Listener { fd },
        Err(e) => {
            reaper.finish();
            return Err(DriverError::Seccomp(format!("the listener: {e}")));
        }
    };
    drop(parent_sock);
    let drain = out.and_then(Drain::start);
    let mut s = Session {
        cfg,
        model: if cfg.hints { Model::new(Arc::clone(&file)) } else { Model::new(Arc::clone(&file)).without_hints() }
            .with_copy_fault(cfg.copy_fault),
        listener,
        dev: (meta.dev(), meta.ino()),
        memfd: file.file().as_raw_fd(),
        reader: Reader::default(),
        openers: BTreeMap::new(),
        descs: BTreeMap::new(),
        log: Capped::new(LOG_CAP),
        violations: Capped::new(VIOLATION_CAP),
        kernel_bugs: 0,
        warnings: 0,
        conformance: 0,
        opens: 0,
        bug_pid: None,
    };
    let mut watchdog = Watchdog::start(cfg.limit.saturating_sub(t0.elapsed()), reaper.stopper().ok());
    let mut timed_out = false;
    loop {
        // The reaper reports once COMMAND has ended and the rest of its tree is killed.
        if reaper.reported() {
            break;
        }
        if watchdog.fired() || t0.elapsed() >= cfg.limit {
            timed_out = true;
            break;
        }
        if s.bug_pid.is_some() {
            break;
        }
        s.step(20);
    }
    let report = reaper.finish();
    timed_out |= watchdog.fired();
    watchdog.stop();
    // Every process of the tree is gone: so is every opener.
    let gone: Vec<u32> = s.openers.keys().copied().collect();
    for pid in gone {
        s.process_gone(pid);
    }
    s.absorb();
    let captured = drain.map(|d| d.finish(DRAIN_GRACE)).unwrap_or_default();
    let opens = s.opens;
    let exit = if timed_out {
        Exit::TimedOut
    } else if s.bug_pid.is_some() && cfg.strict {
        Exit::KernelBug
    } else {
        match report.status {
            Some(st) if libc::WIFEXITED(st) => Exit::Code(libc::WEXITSTATUS(st)),
            Some(st) if libc::WIFSIGNALED(st) => Exit::Signal(libc::WTERMSIG(st)),
            _ => Exit::Code(1),
        }
    };
    let (played, _) = engine.stop();
    let late_reads = s.reader.late;
    Ok(Outcome {
        exit,
        log: std::mem::take(&mut s.log.kept),
        log_dropped: s.log.dropped,
        violations: std::mem::take(&mut s.violations.kept),
        violations_dropped: s.violations.dropped,
        kernel_bug_count: s.kernel_bugs,
        warning_count: s.warnings,
        conformance_count: s.conformance,
        calls: std::mem::take(&mut s.model.calls),
        opens,
        refusals: s.model.refusals,
        stdout: captured.bytes,
        stdout_dropped: captured.dropped,
        played,
        late_reads,
        killed: report.killed,
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
                    _ if cfg.strict && !bugs.is_empty() => s.row(Err(bugs.join("; ").into()), Err("kernel BUG".into())),
                    Some((st, None)) => s.row(
                        Err(format!("{} {} (no return code printed)", st.code(), st.name()).into()),
                        if st == s.expected {
                            Err("no one-step return code in COMMAND's output".into())
                        } else {
                            Err(Mismatch::Status { got: st, expected: s.expected }.into())
                        },
                    ),
                    Some((st, Some(rc))) => s.row(Ok((st, rc)), s.check_status(st, rc).map_err(Into::into)),
                    None => s.row(
                        Err(format!("no status line in COMMAND's output ({:?})", o.exit).into()),
                        Err("no status".into()),
                    ),
                }
            }
            Err(e) => s.failed_row(e),
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
    fn a_job_past_its_deadline_leaves_its_worker_and_the_next_gets_a_fresh_one() {
        let mut r = Reader::default();
        let (release, held) = mpsc::channel::<()>();
        let held = Arc::new(Mutex::new(held));
        let h = Arc::clone(&held);
        let soon = Instant::now() + Duration::from_millis(50);
        // Blocks until released (a page nobody serves, standing in).
        assert_eq!(r.run(soon, move || h.lock().map(|rx| rx.recv().is_ok()).unwrap_or(false)), None);
        assert_eq!((r.late, r.stuck()), (1, 1));
        assert_eq!(r.run(Instant::now() + Duration::from_secs(10), || 7), Some(7));
        // Up to MAX_STUCK_READERS are left behind; then a job fails without running.
        for _ in 1..MAX_STUCK_READERS {
            let h = Arc::clone(&held);
            let soon = Instant::now() + Duration::from_millis(10);
            assert_eq!(r.run(soon, move || h.lock().map(|rx| rx.recv().is_ok()).unwrap_or(false)), None);
        }
        assert_eq!(r.stuck(), MAX_STUCK_READERS);
        let ran = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&ran);
        assert_eq!(r.run(Instant::now() + Duration::from_secs(10), move || flag.store(true, Ordering::SeqCst)), None);
        assert!(!ran.load(Ordering::SeqCst));
        assert_eq!(r.late, MAX_STUCK_READERS as u64 + 1);
        // Released, the workers end (each job takes the lock in turn); bounded wait.
        for _ in 0..MAX_STUCK_READERS {
            release.send(()).unwrap();
        }
        let t0 = Instant::now();
        while r.stuck() > 0 && t0.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(r.stuck(), 0);
        assert_eq!(r.run(Instant::now() + Duration::from_secs(10), || 8), Some(8));
    }

    fn outcome(exit: Exit, kernel_bug_count: u64) -> Outcome {
        Outcome {
            exit,
            log: Vec::new(),
            log_dropped: 0,
            violations: Vec::new(),
            violations_dropped: 0,
            kernel_bug_count,
            warning_count: 0,
            conformance_count: 0,
            calls: BTreeMap::new(),
            opens: 0,
            refusals: 0,
            stdout: Vec::new(),
            stdout_dropped: 0,
            played: 0,
            late_reads: 0,
            killed: 0,
        }
    }

    #[test]
    fn a_kernel_bug_fails_a_strict_run_whatever_else_ended_it() {
        // A BUG and the limit in the same moment: strict says 70, the log mode the limit.
        assert_eq!(outcome(Exit::TimedOut, 1).exit_status(true), EXIT_KERNEL_BUG);
        assert_eq!(outcome(Exit::TimedOut, 1).exit_status(false), EXIT_TIMEOUT);
        assert_eq!(outcome(Exit::Code(0), 2).exit_status(true), EXIT_KERNEL_BUG);
        assert_eq!(outcome(Exit::Code(0), 2).exit_status(false), 0);
        assert_eq!(outcome(Exit::Code(3), 0).exit_status(true), 3);
        assert_eq!(outcome(Exit::Code(300), 0).exit_status(true), 1);
        assert_eq!(outcome(Exit::Signal(9), 0).exit_status(true), 137);
        assert_eq!(outcome(Exit::KernelBug, 0).exit_status(false), EXIT_KERNEL_BUG);
        // A conformance violation fails a strict run at its end, after a BUG's status.
        let mut o = outcome(Exit::Code(0), 0);
        o.conformance_count = 1;
        assert_eq!((o.exit_status(true), o.exit_status(false)), (EXIT_CONFORMANCE, 0));
        o.kernel_bug_count = 1;
        assert_eq!(o.exit_status(true), EXIT_KERNEL_BUG);
        assert_eq!(outcome(Exit::Code(0), 0).dropped_note(), None);
        let mut o = outcome(Exit::Code(0), 0);
        (o.log_dropped, o.stdout_dropped) = (5, 7);
        let note = o.dropped_note().unwrap();
        assert!(note.contains("4096 lines, 5 more dropped") && note.contains("7 more dropped"), "{note}");
    }

    #[test]
    fn a_capped_list_keeps_the_first_and_counts_the_rest() {
        let mut c = Capped::new(3);
        for i in 0..10 {
            c.push(i);
        }
        assert_eq!((c.kept, c.dropped), (vec![0, 1, 2], 7));
    }

    #[test]
    fn this_process_is_its_own_thread_group() {
        let me = std::process::id();
        assert_eq!(tgid_of(me), Some(me));
        let pidfd = pidfd_open(me).expect("a pidfd on this process");
        assert!(!pidfd_exited(&pidfd));
    }

    #[test]
    fn the_filter_builds() {
        let f = filter_program().expect("libseccomp builds the filter");
        assert!(f.len() > 4);
    }
}
