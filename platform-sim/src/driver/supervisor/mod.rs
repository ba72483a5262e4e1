//! The seccomp side of `nrt-sim driver -- COMMAND`: COMMAND's calls on the
//! device are trapped and answered by the driver [`Model`].
//!
//! [`run`] starts the [`DeviceEngine`], builds the filter, forks the
//! [reaper](super::reaper) that starts COMMAND under it, and serves one
//! notification at a time until COMMAND's tree is gone or the limit passes.
//! An open of [`DEVICE_PATH`] gets a descriptor of the device memfd in a
//! reserved range; ioctls on it and [`RANGE_TRAPPED`] calls on that range go
//! to the model; everything else continues to the kernel.
//!
//! COMMAND is a hostile peer. Every run ends within its limit plus
//! [`LIMIT_SLACK`], leaves no process of COMMAND's tree behind, and keeps
//! bounded memory; `docs/driver-model.md`, "Against a hostile COMMAND", says
//! how and what is not guaranteed.

mod drain;
mod fds;
mod filter;
mod ioctl;
mod listener;
mod memory;
mod open;
mod outcome;
mod process;
mod range;
mod scenarios;
mod session;
mod watchdog;

use std::collections::BTreeMap;
use std::ffi::{CString, OsString};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::model::{CopyFault, Model};
use super::reaper::{Reaper, Spawn};
use super::DeviceEngine;
use crate::run::SimConfig;
use crate::shm::ShmError;
use drain::Drain;
use fds::{pipe, recv_fd, seqpacket_pair, started};
use filter::filter_program;
use listener::Listener;
use memory::Reader;
use session::{Capped, Session};
use watchdog::Watchdog;

pub(super) use fds::send_fd;
pub use filter::RANGE_TRAPPED;
pub use outcome::{Exit, Outcome};
pub use scenarios::{parse_status, run_all};

/// Exit status when a kernel BUG fails a `--strict` run.
pub const EXIT_KERNEL_BUG: u8 = 70;
/// Exit status when a `--strict` run saw a conformance violation but no kernel BUG.
pub const EXIT_CONFORMANCE: u8 = 71;
/// Exit status when COMMAND ran past the limit and was killed.
pub const EXIT_TIMEOUT: u8 = 124;
/// The device path the model serves.
pub const DEVICE_PATH: &str = "/dev/neuron0";

/// Time one notification may spend in the caller's memory before every
/// further access of it fails: the path, the descriptor check, the argument
/// and what it points to. A healthy read takes microseconds; one second leaves
/// room for a loaded machine. G-DRV-READ-DEADLINE.
pub const CALLER_MEM_BUDGET: Duration = Duration::from_secs(1);
/// Reader threads left blocked on a page nobody serves before every further
/// access fails at once. Each ends when the process holding the page's
/// userfaultfd dies, at the latest when COMMAND's tree is killed.
pub const MAX_STUCK_READERS: usize = 8;
/// Lines of the log kept: refusals, warnings, kernel BUGs and the
/// supervisor's own notes. Later lines are counted, not kept.
pub const LOG_CAP: usize = 4096;
/// Violations kept, kernel BUGs and warnings; later ones are counted.
pub const VIOLATION_CAP: usize = 4096;
/// Bytes of COMMAND's captured standard output kept; the rest is read and counted.
pub const STDOUT_CAP: usize = 16 << 20;
/// How long the drain of captured output waits for end-of-file once
/// COMMAND's tree is gone: a process outside the tree may hold the pipe.
pub const DRAIN_GRACE: Duration = Duration::from_secs(1);
/// How long the reaper's rounds of scan, `SIGKILL` and reap may take.
pub const KILL_BOUND: Duration = Duration::from_secs(2);
/// What a run may take past its limit: one notification's memory budget, the
/// kill, the drain and the device's stop, rounded up. The model's own work on
/// the call in hand when the limit passes comes on top.
pub const LIMIT_SLACK: Duration = Duration::from_secs(5);
/// The first number of the reserved range the device's descriptors are
/// installed at, so that the filter traps `read`, `write`, `mmap` and the rest
/// on device descriptors only. Below 1024, the usual `RLIMIT_NOFILE` and
/// `FD_SETSIZE`. G-DRV-MMAP.
pub const DEVICE_FD_BASE: i32 = 960;
/// Numbers in the reserved range: a power of two, `DEVICE_FD_BASE` a multiple
/// of it, so one masked compare matches the range.
pub const DEVICE_FD_SLOTS: i32 = 64;
const _: () = assert!(
    DEVICE_FD_SLOTS.count_ones() == 1
        && DEVICE_FD_BASE % DEVICE_FD_SLOTS == 0
        && DEVICE_FD_BASE + DEVICE_FD_SLOTS <= 1024
);
/// Processes attached to the device at once; one more fails `ncdev_open`
/// with `EBUSY`. Bounds the pidfds the supervisor holds.
/// driver: share/neuron_driver_shared.h, `NEURON_MAX_PROCESS_PER_DEVICE`;
/// neuron_pid.c, `npid_attach`.
pub const MAX_ATTACHED: usize = 16;

/// What to run.
#[derive(Clone, Debug)]
pub struct DriverConfig {
    /// The device to play.
    pub sim: SimConfig,
    /// A kernel BUG kills COMMAND and fails the run with [`EXIT_KERNEL_BUG`].
    pub strict: bool,
    /// COMMAND is killed after this long.
    pub limit: Duration,
    /// COMMAND and its arguments.
    pub command: Vec<OsString>,
    /// Capture COMMAND's standard output; else it is inherited.
    pub capture_stdout: bool,
    /// Print each refusal and violation on standard error as it happens.
    pub echo: bool,
    /// Answer the simulator's hint query; else the model refuses it as a real
    /// driver does, `Model::without_hints`.
    pub hints: bool,
    /// Play the faults for each core's first that many kickoffs only; `None`: all.
    pub fault_kickoffs: Option<u32>,
    /// A device that acknowledges copies it did not make; `None`: every copy made.
    pub copy_fault: Option<CopyFault>,
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

/// Why this kernel offers no seccomp user notification; `None` when it does.
pub fn user_notif_unavailable() -> Option<String> {
    match std::fs::read_to_string("/proc/sys/kernel/seccomp/actions_avail") {
        Ok(t) if t.split_whitespace().any(|a| a == "user_notif") => None,
        Ok(t) => Some(format!("the kernel's seccomp actions are \"{}\": no user_notif", t.trim())),
        Err(e) => Some(format!("/proc/sys/kernel/seccomp/actions_avail: {e}")),
    }
}

/// Run COMMAND under the driver model.
///
/// COMMAND runs under a reaper process this call forks. The calling process's
/// own children and its subreaper setting are left alone; nothing of COMMAND's
/// tree outlives the calling process.
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
