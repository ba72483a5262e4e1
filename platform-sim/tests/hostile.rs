//! `nrt-sim driver -- COMMAND` against a hostile COMMAND (`tests/c/hostile_probe.c`,
//! compiled here): a page nobody serves behind a path or an argument, processes
//! that `setsid` away or ignore signals, a supervisor killed (`SIGKILL`) or
//! interrupted (`SIGINT` to its group), a flood of refused calls, a thread
//! id reused by another process, a background process holding the captured
//! output. Every run is waited for with a deadline (and killed past it, with
//! what it started), so a supervisor that hangs fails the test instead of
//! hanging it. Without seccomp user notification, or when the kernel refuses
//! what a probe needs, the test says SKIPPED with the reason (loudly) and passes.
#![cfg(feature = "driver")]

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use nrt_sim::driver::supervisor::{LOG_CAP, MAX_ATTACHED};

const SIM: &str = env!("CARGO_BIN_EXE_nrt-sim");
/// How long a run may take before the test gives up on it (a bound, not a measurement).
const DEADLINE: Duration = Duration::from_secs(60);

#[macro_use]
mod common;

/// The probe, compiled once.
fn probe() -> &'static str {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("hostile_probe");
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/hostile_probe.c");
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let st = Command::new(&cc)
            .args(["-std=gnu11", "-Wall", "-Wextra", "-Werror", "-O1", "-pthread"])
            .arg(&src)
            .arg("-o")
            .arg(&out)
            .status()
            .expect("a C compiler (cc) is installed");
        assert!(st.success(), "cc {} failed", src.display());
        out
    })
    .to_str()
    .unwrap()
}

/// A scratch file path for this test.
fn scratch(name: &str) -> PathBuf {
    let p = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("hostile-{}-{name}", std::process::id()));
    let _ = std::fs::remove_file(&p);
    p
}

struct Run {
    status: Option<ExitStatus>,
    out: String,
    err: String,
}

/// Start `nrt-sim driver ARGS -- COMMAND` with its output in files (a process
/// that outlives it cannot hold a pipe of ours).
fn start(tag: &str, args: &[&str], command: &[&str]) -> (Child, PathBuf, PathBuf) {
    let (o, e) = (scratch(&format!("{tag}.out")), scratch(&format!("{tag}.err")));
    let child = Command::new(SIM)
        .arg("driver")
        .args(args)
        .arg("--")
        .args(command)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&o).unwrap())
        .stderr(std::fs::File::create(&e).unwrap())
        .spawn()
        .expect("nrt-sim runs");
    (child, o, e)
}

/// Wait for `child` up to [`DEADLINE`]; past it, kill it (status `None`).
fn finish(mut child: Child, o: &Path, e: &Path) -> Run {
    let t0 = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break Some(st);
        }
        if t0.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = std::fs::read_to_string(o).unwrap_or_default();
    let err = std::fs::read_to_string(e).unwrap_or_default();
    Run { status, out, err }
}

fn driver(tag: &str, args: &[&str], command: &[&str]) -> Run {
    let (c, o, e) = start(tag, args, command);
    finish(c, o.as_path(), e.as_path())
}

impl Run {
    fn code(&self) -> Option<i32> {
        self.status.and_then(|s| s.code())
    }

    fn field(&self, key: &str) -> &str {
        self.out
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{key}: ")))
            .unwrap_or_else(|| panic!("no {key} in:\n{}\nstderr:\n{}", self.out, self.err))
    }

    /// The probe said the kernel refused what it needs.
    fn skipped(&self) -> Option<&str> {
        self.out.lines().find(|l| l.starts_with("SKIPPED: "))
    }
}

impl std::fmt::Display for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "status {:?}\nstdout:\n{}\nstderr:\n{}", self.status, self.out, self.err)
    }
}

/// The start time (clock ticks after boot) of process `pid`, from `/proc/<pid>/stat`.
fn starttime(pid: u32) -> Option<u64> {
    let t = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &t[t.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// The processes a probe recorded ("pid starttime" lines) that still run.
fn still_running(file: &Path) -> Vec<u32> {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let pid: u32 = f.next()?.parse().ok()?;
            let start: u64 = f.next()?.parse().ok()?;
            (starttime(pid) == Some(start)).then_some(pid)
        })
        .collect()
}

/// Kill what a failed run left behind (only the processes it recorded).
fn kill_left(pids: &[u32]) {
    for &p in pids {
        // SAFETY: kill(2) of a process this test's probe started and recorded.
        unsafe {
            libc::kill(p as libc::pid_t, libc::SIGKILL);
        }
    }
}

#[test]
fn a_page_nobody_serves_holds_neither_the_loop_nor_other_calls() {
    need_user_notif!();
    let r = driver("uffd", &[], &[probe(), "uffd"]);
    if let Some(s) = r.skipped() {
        common::skip(&format!("the probe needs userfaultfd: {s}"));
        return;
    }
    assert_eq!(r.code(), Some(0), "{r}");
    assert_eq!(r.field("thread_open"), "started", "{r}");
    assert_eq!(r.field("driver_info"), "0 arch 2", "{r}");
    // An argument that could not be read in time is the driver's copy_from_user failure.
    assert_eq!(r.field("ioctl_arg_in_page"), "-14", "{r}");
    // The model's own reads and writes through pointers in the argument are bounded too:
    // an address array not read in time is the driver's failed copy_from_user of
    // it, which BAR_READ returns as the count of bytes not copied (G-DRV-POSITIVE).
    assert_eq!(r.field("bar_read_addresses_in_page"), "8", "{r}");
    // The driver frees the chunk and returns the bytes not copied (G-DRV-POSITIVE).
    assert_eq!(r.field("mem_alloc_handle_in_page"), "8", "{r}");
    assert_eq!(r.field("driver_info_after"), "0 arch 2", "{r}");
    // The thread's path, the argument, the address array, the handle.
    assert!(r.err.contains("4 access(es) to a caller's memory did not finish within"), "{r}");
}

#[test]
fn the_limit_holds_when_the_command_waits_on_a_page_nobody_serves() {
    need_user_notif!();
    let r = driver("uffd-hold", &["--limit-s", "1"], &[probe(), "uffd-hold"]);
    if let Some(s) = r.skipped() {
        common::skip(&format!("the probe needs userfaultfd: {s}"));
        return;
    }
    assert_eq!(r.code(), Some(124), "{r}");
    assert_eq!(r.field("open_in_page"), "calling", "{r}");
    assert!(r.err.contains("ran past --limit-s 1"), "{r}");
}

#[test]
fn setsid_grandchildren_are_killed_on_exit_on_the_limit_and_on_a_kernel_bug() {
    need_user_notif!();
    for (end, args, want) in [("exit", &[][..], 0), ("sleep", &["--limit-s", "2"][..], 124), ("bug", &[][..], 70)] {
        let file = scratch(&format!("orphans-{end}"));
        let r = driver(&format!("orphans-{end}"), args, &[probe(), "orphans", file.to_str().unwrap(), end]);
        let left = still_running(&file);
        kill_left(&left);
        assert_eq!(r.field("orphans"), "2", "{end}: {r}");
        assert_eq!(r.code(), Some(want), "{end}: {r}");
        assert!(left.is_empty(), "{end}: processes {left:?} of COMMAND's tree outlived the run\n{r}");
        assert!(
            r.err.contains("2 process(es) of ") && r.err.contains("were still running and were killed"),
            "{end}: {r}"
        );
    }
}

#[test]
fn killing_the_supervisor_ends_the_command() {
    need_user_notif!();
    let file = scratch("pid");
    let (mut sup, _out, _err) = start("pid", &[], &[probe(), "pid", file.to_str().unwrap()]);
    let t0 = Instant::now();
    let pid = loop {
        if let Some(p) = std::fs::read_to_string(&file).ok().and_then(|t| t.trim().parse::<u32>().ok()) {
            break p;
        }
        assert!(t0.elapsed() < DEADLINE, "COMMAND never wrote its pid");
        std::thread::sleep(Duration::from_millis(10));
    };
    // SAFETY: pidfd_open(2) of COMMAND's pid (alive: it sleeps for ever); the result is checked.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    assert!(fd >= 0, "pidfd_open({pid}): {}", std::io::Error::last_os_error());
    // SAFETY: a fresh descriptor from the kernel.
    let pidfd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
    sup.kill().unwrap();
    let _ = sup.wait();
    // The pidfd polls readable once COMMAND has exited (a zombie included).
    let t0 = Instant::now();
    let ended = loop {
        let mut p = libc::pollfd { fd: pidfd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd.
        if unsafe { libc::poll(&mut p, 1, 50) } > 0 {
            break true;
        }
        if t0.elapsed() > DEADLINE {
            break false;
        }
    };
    if !ended {
        // SAFETY: pidfd_send_signal(2) through the pidfd of the process this test started.
        unsafe {
            libc::syscall(libc::SYS_pidfd_send_signal, pidfd.as_raw_fd(), libc::SIGKILL, std::ptr::null::<u8>(), 0);
        }
    }
    assert!(ended, "COMMAND (pid {pid}) ran on after the supervisor was killed");
}

/// The processes recorded in `file` ("pid starttime" lines).
fn recorded(file: &Path) -> Vec<(u32, u64)> {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            Some((f.next()?.parse().ok()?, f.next()?.parse().ok()?))
        })
        .collect()
}

/// Whether process `pid`, started at `start`, still runs (a zombie has ended).
fn alive(pid: u32, start: u64) -> bool {
    let Ok(t) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
    let Some(rest) = t.rfind(')').map(|i| &t[i + 1..]) else { return false };
    let f: Vec<&str> = rest.split_whitespace().collect();
    !matches!(f.first(), Some(&"Z" | &"X")) && f.get(19).and_then(|s| s.parse().ok()) == Some(start)
}

/// A COMMAND (for `sh -c`) whose tree holds a grandchild that ignores TERM,
/// INT and HUP and one that `setsid`s, each recording itself in `file` (which
/// must exist) and sleeping long; once both are recorded (a bounded wait) it runs `then`.
fn stubborn_tree(file: &Path, then: &str) -> String {
    let f = file.display();
    let rec = format!(r#"echo "$$ $(cut -d" " -f22 /proc/$$/stat)" >> {f}"#);
    format!(
        "sh -c 'trap \"\" TERM INT HUP; {rec}; exec sleep 1093' & \
         setsid sh -c '{rec}; exec sleep 1094' & \
         i=0; while [ \"$(wc -l < {f})\" -lt 2 ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; {then}"
    )
}

#[test]
fn nothing_of_the_tree_outlives_a_supervisor_killed_or_interrupted() {
    need_user_notif!();
    for how in ["SIGKILL", "SIGINT to its group"] {
        let tag = format!("stubborn-{}", &how[3..6]);
        let file = scratch(&tag);
        std::fs::write(&file, "").unwrap();
        let (o, e) = (scratch(&format!("{tag}.out")), scratch(&format!("{tag}.err")));
        // Its own process group (this test's), as a shell's job is: Ctrl-C signals that group.
        let mut sup = Command::new(SIM)
            .args(["driver", "--", "sh", "-c", &stubborn_tree(&file, "sleep 1095")])
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&o).unwrap())
            .stderr(std::fs::File::create(&e).unwrap())
            .spawn()
            .expect("nrt-sim runs");
        let t0 = Instant::now();
        while recorded(&file).len() < 2 && t0.elapsed() < DEADLINE {
            std::thread::sleep(Duration::from_millis(10));
        }
        let procs = recorded(&file);
        if how == "SIGKILL" {
            sup.kill().unwrap();
        } else {
            // SAFETY: kill(2) of the process group this test created for the supervisor.
            unsafe {
                libc::kill(-(sup.id() as libc::pid_t), libc::SIGINT);
            }
        }
        let r = finish(sup, &o, &e);
        let t0 = Instant::now();
        let mut left: Vec<(u32, u64)> = procs.clone();
        while !left.is_empty() && t0.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(50));
            left.retain(|&(p, s)| alive(p, s));
        }
        kill_left(&left.iter().map(|p| p.0).collect::<Vec<_>>());
        assert_eq!(procs.len(), 2, "{how}: the grandchildren never recorded themselves\n{r}");
        assert!(left.is_empty(), "{how}: processes {left:?} of COMMAND's tree outlived the supervisor\n{r}");
    }
}

#[test]
fn a_command_that_exits_gives_its_status_and_leaves_no_process() {
    need_user_notif!();
    let file = scratch("stubborn-exit");
    std::fs::write(&file, "").unwrap();
    let r = driver("stubborn-exit", &[], &["sh", "-c", &stubborn_tree(&file, "sleep 1095 & exit 3")]);
    let procs = recorded(&file);
    let left: Vec<u32> = procs.iter().filter(|&&(p, s)| alive(p, s)).map(|p| p.0).collect();
    kill_left(&left);
    assert_eq!(r.code(), Some(3), "{r}");
    assert_eq!(procs.len(), 2, "the grandchildren never recorded themselves\n{r}");
    // Gone by the supervisor's exit, reaped (no zombie left either).
    assert!(left.is_empty(), "processes {left:?} of COMMAND's tree outlived the run\n{r}");
    let zombies: Vec<u32> = procs.iter().filter(|&&(p, s)| starttime(p) == Some(s)).map(|p| p.0).collect();
    assert!(zombies.is_empty(), "processes {zombies:?} were left unreaped\n{r}");
    assert!(r.err.contains("3 process(es) of sh's tree were still running and were killed"), "{r}");
}

#[test]
fn the_log_of_refused_calls_is_capped_and_what_it_dropped_is_counted() {
    need_user_notif!();
    let n = LOG_CAP + 1500;
    let r = driver("flood", &[], &[probe(), "flood", &n.to_string()]);
    assert_eq!(r.code(), Some(0), "{r}");
    assert_eq!(r.field("flood"), format!("{n} refused {n}"), "{r}");
    assert!(r.err.contains(&format!("{n} refused")), "{r}");
    assert!(r.err.contains(&format!("the log kept its first {LOG_CAP} lines, 1500 more dropped")), "{r}");
}

#[test]
fn a_reused_thread_id_is_not_taken_for_the_opener() {
    need_user_notif!();
    let r = driver("reuse", &["--verbose"], &[probe(), "reuse"]);
    if let Some(s) = r.skipped() {
        common::skip(&format!("the probe needs clone3 with set_tid: {s}"));
        return;
    }
    assert_eq!(r.code(), Some(70), "{r}");
    assert_eq!(r.field("thread_call"), "0", "{r}");
    let ids = r.field("opener");
    let nums: Vec<&str> = ids.split_whitespace().collect();
    let (opener, child, thread) = (nums[0], nums[2], nums[4]);
    assert_eq!(child, thread, "the child did not get the thread's id: {r}");
    // The child never opened the device: the driver's pid check refuses it.
    assert_eq!(r.field("child_release"), "-13", "{r}");
    // The kernel BUG is the child's, and the child is the one killed.
    assert!(r.err.contains(&format!("pid {child}: NEURON_IOCTL_BAR_READ: kernel BUG")), "{r}");
    assert!(!r.err.contains(&format!("pid {opener}: NEURON_IOCTL_BAR_READ")), "{r}");
    assert!(!r.out.contains("child_bar_read_outside"), "the call returned to the child: {r}");
}

#[test]
fn scenario_all_ends_when_a_background_process_holds_the_captured_output() {
    need_user_notif!();
    let file = scratch("bg");
    let script = format!(
        "echo 'status: 0 NRT_SUCCESS (ok)'; echo 'one-step return: 0 (ok) after 1 steps'; \
         sleep 1071 & echo \"$! $(cut -d' ' -f22 /proc/$!/stat)\" >> {}",
        file.display()
    );
    let r = driver("bg", &["--scenario", "all"], &["sh", "-c", &script]);
    let left = still_running(&file);
    kill_left(&left);
    assert_eq!(r.code(), Some(1), "{r}");
    assert!(r.out.contains("healthy-2core") && r.out.contains("scenarios:"), "{r}");
    let recorded = std::fs::read_to_string(&file).unwrap_or_default().lines().count();
    assert!(recorded > 10, "{recorded} background processes recorded: {r}");
    assert!(left.is_empty(), "background processes {left:?} outlived their runs\n{r}");
}

#[test]
fn the_driver_attaches_at_most_its_process_count_and_an_exit_frees_a_slot() {
    need_user_notif!();
    let n = MAX_ATTACHED + 2;
    let r = driver("attach", &[], &[probe(), "attach", &n.to_string()]);
    assert_eq!(r.code(), Some(0), "{r}");
    assert_eq!(r.field("attach"), format!("ok {MAX_ATTACHED} busy 2 other 0"), "{r}");
    // The holders have exited: their slots are free again.
    assert_eq!(r.field("open_after"), "ok", "{r}");
}

#[test]
fn a_process_given_a_gone_openers_pid_is_not_attached() {
    need_user_notif!();
    let r = driver("reuse-pid", &[], &[probe(), "reuse-pid"]);
    if let Some(s) = r.skipped() {
        common::skip(&format!("the probe needs clone3 with set_tid: {s}"));
        return;
    }
    assert_eq!(r.code(), Some(0), "{r}");
    assert_eq!(r.field("opener_exit"), "0", "{r}");
    let pids: Vec<&str> = r.field("pids").split_whitespace().collect();
    assert_eq!(pids.first(), pids.get(1), "the second child did not get the opener's pid: {r}");
    assert_eq!(r.field("same_pid_release"), "-13", "{r}");
}

#[test]
fn scenario_all_fails_every_row_whose_command_hit_a_kernel_bug() {
    need_user_notif!();
    // COMMAND prints a healthy status, then makes a call the real kernel oopses on.
    let r = driver("all-bug", &["--scenario", "all"], &[probe(), "bug"]);
    assert_eq!(r.code(), Some(1), "{r}");
    let row = r.out.lines().find(|l| l.starts_with("healthy-2core ")).unwrap_or_else(|| panic!("no row: {r}"));
    assert!(row.contains("error: kernel BUG: NEURON_IOCTL_BAR_READ") && row.ends_with("FAIL (kernel BUG)"), "{r}");
}
