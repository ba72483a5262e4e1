//! The reaper: the process between `nrt-sim driver`'s supervisor and COMMAND
//! that leaves nothing of COMMAND's tree behind, however the supervisor ends.
//!
//! [`Reaper::spawn`] forks it. As a child subreaper it inherits every orphan
//! of the tree, `setsid` or not. It ignores a terminal's signals, since a
//! Ctrl-C ends the supervisor and that end is its cue, and forks COMMAND,
//! which installs the supervisor's filter and execs. It reaps orphans until
//! COMMAND ends, the supervisor asks, or the supervisor is gone; then it
//! kills its children with `SIGKILL` and reaps them in rounds until none is
//! left or [`KILL_BOUND`] passes, reports COMMAND's wait status and the count
//! killed, and exits.
//!
//! Invariants: it only signals its own unreaped children, so no pid it signals
//! can be another process's; between a fork and the exec or `_exit` only raw
//! system calls run, on data prepared before the fork: no allocation, no lock.

#![allow(unsafe_code)]

use std::ffi::c_char;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

use super::supervisor::KILL_BOUND;

/// How long the supervisor waits for the reaper's report once it asked for
/// the tree's end: the reaper's kill bound and a second for the rest.
pub const REPORT_WAIT: Duration = Duration::from_secs(3);
/// How often the reaper looks at its parent and reaps orphans while COMMAND runs.
const TICK_MS: i32 = 50;
/// Distinct processes the reaper remembers having killed; past it, the count goes on undeduplicated.
const HIT_CAP: usize = 1024;
/// The byte the supervisor sends to end the tree.
const STOP: u8 = b'K';
/// The signals the reaper ignores: those a terminal sends its foreground job.
const IGNORED: [libc::c_int; 4] = [libc::SIGINT, libc::SIGQUIT, libc::SIGHUP, libc::SIGTERM];

/// What the reaper sends at its end.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// COMMAND's raw wait status; `None` when never reaped or no report came.
    pub status: Option<i32>,
    /// Processes of the tree other than COMMAND that were running and were killed.
    pub killed: u32,
}

impl Report {
    fn encode(&self) -> [u8; 12] {
        let mut b = [0u8; 12];
        b[..4].copy_from_slice(&self.status.unwrap_or(0).to_ne_bytes());
        b[4..8].copy_from_slice(&u32::from(self.status.is_some()).to_ne_bytes());
        b[8..].copy_from_slice(&self.killed.to_ne_bytes());
        b
    }

    fn decode(b: &[u8; 12]) -> Report {
        let word = |i: usize| [b[i], b[i + 1], b[i + 2], b[i + 3]];
        let has = u32::from_ne_bytes(word(4)) != 0;
        Report { status: has.then(|| i32::from_ne_bytes(word(0))), killed: u32::from_ne_bytes(word(8)) }
    }
}

/// What COMMAND's side of the fork needs, prepared before it.
pub struct Spawn<'a> {
    /// COMMAND and its arguments, NUL-terminated strings, the array NULL-terminated.
    pub argv: &'a [*const c_char],
    /// The filter COMMAND installs before its exec.
    pub filter: &'a [libc::sock_filter],
    /// Where COMMAND sends its seccomp listener.
    pub listener_sock: RawFd,
    /// The pipe's write end for COMMAND's standard output, when captured.
    pub stdout: Option<RawFd>,
    /// Where COMMAND, or the reaper before COMMAND exists, writes the errno
    /// that kept it from starting; close-on-exec, so an exec closes it.
    pub start_error: RawFd,
}

/// The reaper, as the supervisor holds it.
#[derive(Debug)]
pub struct Reaper {
    pid: libc::pid_t,
    ctl: OwnedFd,
    report: Option<Report>,
    reaped: bool,
}

impl Reaper {
    /// Fork the reaper, which forks COMMAND. `ctl` is the reaper's end of the
    /// `SOCK_SEQPACKET` control socket, `mine` the supervisor's.
    pub fn spawn(s: &Spawn<'_>, ctl: OwnedFd, mine: OwnedFd) -> std::io::Result<Reaper> {
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: fork(2); the child runs only `reaper_main`, raw system calls
        // on data prepared before the fork, and never returns from it.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if pid == 0 {
            reaper_main(s, ctl.as_raw_fd(), parent);
        }
        drop(ctl);
        Ok(Reaper { pid, ctl: mine, report: None, reaped: false })
    }

    /// A descriptor the watchdog can [`stop`] the tree through.
    pub fn stopper(&self) -> std::io::Result<OwnedFd> {
        self.ctl.try_clone()
    }

    /// Whether the reaper has reported that COMMAND ended and its tree is gone, without waiting.
    pub fn reported(&mut self) -> bool {
        if self.report.is_none() {
            self.report = recv_report(self.ctl.as_raw_fd(), libc::MSG_DONTWAIT);
        }
        self.report.is_some()
    }

    /// End the tree if COMMAND has not, wait at most [`REPORT_WAIT`] for the
    /// report and reap the reaper; the report.
    pub fn finish(&mut self) -> Report {
        if !self.reaped {
            if !self.reported() {
                stop(&self.ctl);
                let until = Instant::now() + REPORT_WAIT;
                while self.report.is_none() && Instant::now() < until {
                    let mut p = libc::pollfd { fd: self.ctl.as_raw_fd(), events: libc::POLLIN, revents: 0 };
                    let ms = until.saturating_duration_since(Instant::now()).as_millis().clamp(1, 100) as i32;
                    // SAFETY: one valid pollfd.
                    if unsafe { libc::poll(&mut p, 1, ms) } > 0 {
                        self.report = recv_report(self.ctl.as_raw_fd(), libc::MSG_DONTWAIT);
                    }
                }
            }
            self.reap();
        }
        self.report.unwrap_or_default()
    }

    /// Wait for the reaper's exit, which follows its report at once; past a
    /// second, `SIGKILL` it: it is our unreaped child, so the pid is its.
    fn reap(&mut self) {
        let until = Instant::now() + Duration::from_secs(1);
        let mut st = 0;
        loop {
            // SAFETY: waitpid on our child with a valid status pointer; WNOHANG never blocks.
            let rc = unsafe { libc::waitpid(self.pid, &mut st, libc::WNOHANG) };
            if rc != 0 {
                break;
            }
            if Instant::now() >= until {
                // SAFETY: kill(2) of our own unreaped child, then a blocking reap of it.
                unsafe {
                    libc::kill(self.pid, libc::SIGKILL);
                    libc::waitpid(self.pid, &mut st, 0);
                }
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        self.reaped = true;
    }
}

impl Drop for Reaper {
    fn drop(&mut self) {
        self.finish();
    }
}

/// Ask the reaper to end the tree now; a second ask is harmless, a gone reaper no error.
pub fn stop(ctl: &OwnedFd) {
    // SAFETY: a one-byte send on a socket we hold; MSG_NOSIGNAL: a closed peer is EPIPE, not SIGPIPE.
    unsafe {
        libc::send(ctl.as_raw_fd(), [STOP].as_ptr().cast(), 1, libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT);
    }
}

/// The reaper's report from `ctl`: `None` while none is there; end-of-file,
/// the reaper gone without one, is an empty report.
fn recv_report(ctl: RawFd, flags: libc::c_int) -> Option<Report> {
    let mut b = [0u8; 12];
    // SAFETY: a receive into a live buffer of its length.
    let n = unsafe { libc::recv(ctl, b.as_mut_ptr().cast(), b.len(), flags) };
    match n {
        12 => Some(Report::decode(&b)),
        0 => Some(Report::default()),
        n if n < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EAGAIN) => None,
        _ => Some(Report::default()),
    }
}

/// The current errno, without allocating.
fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
}

/// The fork side's failure: write `e` to `fd` and `_exit(127)`.
fn fail(fd: RawFd, e: i32) -> ! {
    // SAFETY: a write of a live 4-byte buffer, then _exit(2), both async-signal-safe.
    unsafe {
        libc::write(fd, e.to_ne_bytes().as_ptr().cast(), 4);
        libc::_exit(127)
    }
}

/// The reaper, the supervisor's forked child: never returns.
fn reaper_main(s: &Spawn<'_>, ctl: RawFd, parent: libc::pid_t) -> ! {
    // SAFETY: for the whole function: raw system calls on stack data and the
    // supervisor's data `s` points to, prepared before the fork.
    unsafe {
        libc::prctl(libc::PR_SET_NAME, c"nrt-sim-reaper".as_ptr());
        if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong) != 0 {
            fail(s.start_error, errno());
        }
        // The supervisor already gone: start nothing.
        if libc::getppid() != parent {
            libc::_exit(0);
        }
        // Held until ignored, so none lands on the default action meanwhile.
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in IGNORED {
            libc::sigaddset(&mut set, sig);
        }
        libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        // Its children's statuses are the reaper's to collect, whatever the
        // supervisor's SIGCHLD was; COMMAND gets that back.
        let chld_ignored = libc::signal(libc::SIGCHLD, libc::SIG_DFL) == libc::SIG_IGN;
        let me = libc::getpid();
        let command = libc::fork();
        if command == 0 {
            command_main(s, me, chld_ignored);
        }
        if command < 0 {
            fail(s.start_error, errno());
        }
        for sig in IGNORED.into_iter().chain([libc::SIGPIPE]) {
            libc::signal(sig, libc::SIG_IGN);
        }
        libc::sigemptyset(&mut set);
        libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
        // Hold nothing of the supervisor's but the control socket: a pipe end
        // held here would keep its reader from end-of-file.
        if ctl > 0 {
            libc::syscall(libc::SYS_close_range, 0u32, (ctl - 1) as u32, 0u32);
        }
        libc::syscall(libc::SYS_close_range, (ctl + 1) as u32, u32::MAX, 0u32);
        let mut report = Report::default();
        let mut ended = false;
        loop {
            reap_ended(command, &mut report.status);
            if report.status.is_some() || ended {
                break;
            }
            let mut p = libc::pollfd { fd: ctl, events: libc::POLLIN, revents: 0 };
            // Any message is the stop; end-of-file or an error is the supervisor gone.
            ended = libc::poll(&mut p, 1, TICK_MS) > 0 || libc::getppid() != parent;
        }
        report.killed = kill_tree(me, command, &mut report.status);
        // A socket closed with unread data resets its peer, which then loses
        // the report: take no more, read what came, then report.
        libc::shutdown(ctl, libc::SHUT_RD);
        let mut sink = [0u8; 64];
        while libc::recv(ctl, sink.as_mut_ptr().cast(), sink.len(), libc::MSG_DONTWAIT) > 0 {}
        let b = report.encode();
        libc::send(ctl, b.as_ptr().cast(), b.len(), libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT);
        libc::_exit(0)
    }
}

/// COMMAND's side of the fork, in the reaper's child: death with the reaper,
/// the signal state std's `Command` gives, the supervisor's SIGCHLD, the
/// captured output, the filter, the listener sent, the exec. Never returns.
fn command_main(s: &Spawn<'_>, reaper: libc::pid_t, chld_ignored: bool) -> ! {
    // SAFETY: for the whole function: raw system calls on stack data and the
    // data `s` points to, before the exec.
    unsafe {
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
            fail(s.start_error, errno());
        }
        if libc::getppid() != reaper {
            fail(s.start_error, libc::ESRCH);
        }
        // As std's Command: SIGPIPE at its default, no signal blocked.
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        if chld_ignored {
            libc::signal(libc::SIGCHLD, libc::SIG_IGN);
        }
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
        if let Some(fd) = s.stdout {
            let ok = if fd == 1 { libc::fcntl(1, libc::F_SETFD, 0) == 0 } else { libc::dup2(fd, 1) == 1 };
            if !ok {
                fail(s.start_error, errno());
            }
        }
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            fail(s.start_error, errno());
        }
        let fprog = libc::sock_fprog { len: s.filter.len() as u16, filter: s.filter.as_ptr().cast_mut() };
        let fd = libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            libc::SECCOMP_FILTER_FLAG_NEW_LISTENER,
            &fprog as *const libc::sock_fprog,
        );
        if fd < 0 {
            fail(s.start_error, errno());
        }
        if let Err(e) = super::supervisor::send_fd(s.listener_sock, fd as RawFd) {
            fail(s.start_error, e.raw_os_error().unwrap_or(libc::EIO));
        }
        libc::close(fd as RawFd);
        let Some(&prog) = s.argv.first() else { fail(s.start_error, libc::EINVAL) };
        libc::execvp(prog, s.argv.as_ptr());
        fail(s.start_error, errno())
    }
}

/// Reap every child of the reaper that has ended; COMMAND's status kept.
/// `false` when it has no child left.
fn reap_ended(command: libc::pid_t, status: &mut Option<i32>) -> bool {
    loop {
        let mut st = 0;
        // SAFETY: waitpid with a valid status pointer; WNOHANG never blocks.
        let rc = unsafe { libc::waitpid(-1, &mut st, libc::WNOHANG) };
        if rc == command {
            *status = Some(st);
        }
        if rc == 0 {
            return true;
        }
        if rc < 0 {
            return errno() != libc::ECHILD;
        }
    }
}

/// Kill every child of `me`, the reaper, in rounds and reap, until it has
/// none or [`KILL_BOUND`] passes; the distinct processes other than
/// `command` that were signalled.
fn kill_tree(me: libc::pid_t, command: libc::pid_t, status: &mut Option<i32>) -> u32 {
    let until = Instant::now() + KILL_BOUND;
    let mut hit = [0 as libc::pid_t; HIT_CAP];
    let (mut kept, mut more) = (0usize, 0u32);
    loop {
        for_each_child(me, |pid, state| {
            if state == b'Z' || state == b'X' {
                return;
            }
            // SAFETY: kill(2) of our own unreaped child: the pid cannot be another's.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
            if pid != command && !hit[..kept].contains(&pid) {
                if kept < HIT_CAP {
                    hit[kept] = pid;
                    kept += 1;
                } else {
                    more = more.saturating_add(1);
                }
            }
        });
        if !reap_ended(command, status) || Instant::now() >= until {
            return (kept as u32).saturating_add(more);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Call `f(pid, state)` for each child of `me`, read from `/proc/<pid>/stat`
/// without allocating: it runs in the forked reaper.
pub fn for_each_child(me: libc::pid_t, mut f: impl FnMut(libc::pid_t, u8)) {
    // SAFETY: open(2) of a NUL-terminated literal.
    let dir = unsafe { libc::open(c"/proc".as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC) };
    if dir < 0 {
        return;
    }
    let mut buf = [0u8; 8192];
    loop {
        // SAFETY: getdents64(2) into a live buffer of its length.
        let n = unsafe { libc::syscall(libc::SYS_getdents64, dir, buf.as_mut_ptr(), buf.len()) };
        if n <= 0 {
            break;
        }
        let mut at = 0usize;
        // Each record: d_ino 8 bytes, d_off 8, d_reclen 2, d_type 1, d_name NUL-terminated.
        while at + 19 < n as usize {
            let reclen = usize::from(u16::from_ne_bytes([buf[at + 16], buf[at + 17]]));
            if reclen == 0 || at + reclen > n as usize {
                break;
            }
            let name = &buf[at + 19..at + reclen];
            let name = &name[..name.iter().position(|b| *b == 0).unwrap_or(name.len())];
            if let Some(pid) = parse_pid(name) {
                if let Some((ppid, state)) = stat_of(name) {
                    if ppid == me {
                        f(pid, state);
                    }
                }
            }
            at += reclen;
        }
    }
    // SAFETY: the descriptor opened above.
    unsafe {
        libc::close(dir);
    }
}

/// A decimal pid; `None` when not all digits or out of range.
fn parse_pid(name: &[u8]) -> Option<libc::pid_t> {
    if name.is_empty() || name.len() > 9 || !name.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(name.iter().fold(0, |v, d| v * 10 + libc::pid_t::from(d - b'0')))
}

/// `(ppid, state)` from `/proc/<name>/stat`, after the command name's last
/// `)`; a name is at most 15 bytes, so the first 256 bytes hold both.
fn stat_of(name: &[u8]) -> Option<(libc::pid_t, u8)> {
    let mut path = [0u8; 32];
    let parts: [&[u8]; 3] = [b"/proc/", name, b"/stat\0"];
    let mut len = 0;
    for p in parts {
        path.get_mut(len..len + p.len())?.copy_from_slice(p);
        len += p.len();
    }
    let mut b = [0u8; 256];
    // SAFETY: a NUL-terminated path in a stack buffer; a read into a live
    // buffer of its length; the descriptor closed after.
    let n = unsafe {
        let fd = libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return None;
        }
        let n = libc::read(fd, b.as_mut_ptr().cast(), b.len());
        libc::close(fd);
        n
    };
    let text = b.get(..usize::try_from(n).ok()?)?;
    let close = text.iter().rposition(|c| *c == b')')?;
    let mut fields = text.get(close + 1..)?.split(|c| *c == b' ').filter(|f| !f.is_empty());
    let state = *fields.next()?.first()?;
    let ppid = parse_pid(fields.next()?)?;
    Some((ppid, state))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_survives_its_encoding() {
        for r in [Report { status: Some(3 << 8), killed: 2 }, Report { status: None, killed: 0 }] {
            assert_eq!(Report::decode(&r.encode()), r);
        }
        assert_eq!(Report::decode(&Report { status: Some(0), killed: 7 }.encode()).status, Some(0));
    }

    #[test]
    fn pids_parse_and_this_processs_children_are_found() {
        assert_eq!(parse_pid(b"1234"), Some(1234));
        assert_eq!((parse_pid(b""), parse_pid(b"self"), parse_pid(b"12a")), (None, None, None));
        let me = std::process::id() as libc::pid_t;
        let (ppid, state) = stat_of(me.to_string().as_bytes()).expect("/proc/self/stat");
        assert_eq!(ppid as u32, std::os::unix::process::parent_id());
        assert!(b"RSD".contains(&state), "{}", state as char);
        let mut child = std::process::Command::new("sleep").arg("30").spawn().expect("sleep runs");
        let pid = child.id() as libc::pid_t;
        let mut seen = Vec::new();
        for_each_child(me, |p, s| seen.push((p, s)));
        let _ = child.kill();
        let _ = child.wait();
        assert!(seen.iter().any(|&(p, _)| p == pid), "{pid} not among {seen:?}");
        let mut none = Vec::new();
        for_each_child(pid.saturating_add(1 << 22), |p, s| none.push((p, s)));
        assert!(none.is_empty(), "{none:?}");
    }
}
