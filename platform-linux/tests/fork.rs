//! `fork()` after init (G-FORK): in the child, every call on an inherited
//! session, poller, ticket or ring state is refused at once naming the fork,
//! dropping them releases nothing (the parent's resources and the child's own
//! datastore stay), nothing hangs or aborts; the parent runs and closes as
//! before. The Rust API and the C ABI, each in a process under `nrt-sim
//! driver` (the driver model serves the forked child's calls as the driver
//! would, by its own pid).
//!
//! Where the kernel offers no seccomp user notification, the tests say
//! SKIPPED with the reason and check nothing else.

use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nrt_core::arch::Arch;
use nrt_core::exec::{ExecConfig, Lanes, Step};
use nrt_core::nq::Notifications;
use nrt_core::NrtStatus;
use nrt_linux::datastore::ProcessCounters;
use nrt_linux::device::NeuronDevice;
use nrt_linux::poller::{Poller, PollerConfig, SubmitError, WaitRefused};
use nrt_linux::session::{Session, SessionConfig};
use nrt_sim::host::SimHost;

mod common;

/// Set in the process the outer test runs under the driver model.
const INNER: &str = "NRT_FORK_TEST_INNER";
/// The inner test's name, run with `--ignored --exact`.
const INNER_TEST: &str = "inner_a_forked_child_is_refused_and_forgets";
/// How long the child may take before the parent kills it (a backstop far
/// above the child's few calls on any machine).
const CHILD_BOUND: Duration = Duration::from_secs(60);
/// The child's own backstop: `alarm` kills a child that hangs.
const CHILD_ALARM_S: u32 = 60;

fn text(o: &Output) -> String {
    format!("--- stdout\n{}\n--- stderr\n{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// Whether `nrt-sim driver` can run here (else the test is recorded SKIPPED, with why).
fn driver_runs() -> bool {
    match common::user_notif() {
        Ok(()) => true,
        Err(why) => {
            common::skip(&format!("nrt-sim driver cannot run here: {why}"));
            false
        }
    }
}

/// `nrt-sim driver --scenario healthy-2core -- COMMAND`, bounded by the driver's `--limit-s`.
fn under_driver(command: &Command) -> Output {
    let sim = common::nrt_sim();
    let mut c = common::without_rt_env(Command::new(sim));
    c.args(["driver", "--limit-s", "120", "--scenario", "healthy-2core", "--"]);
    c.arg(command.get_program()).args(command.get_args());
    for (k, v) in command.get_envs() {
        if let Some(v) = v {
            c.env(k, v);
        }
    }
    c.output().expect("nrt-sim runs")
}

#[test]
fn a_forked_child_is_refused_every_inherited_call_and_the_parent_is_unaffected() {
    if !driver_runs() {
        return;
    }
    let mut inner = Command::new(std::env::current_exe().expect("this test binary"));
    inner.args(["--ignored", "--exact", INNER_TEST, "--nocapture", "--test-threads", "1"]).env(INNER, "1");
    let o = under_driver(&inner);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.contains(&format!("test {INNER_TEST} ... ok")), "{out}");
    assert!(out.contains("child: every check passed"), "{out}");
}

#[test]
fn a_forked_c_child_is_refused_every_inherited_call_and_the_parent_is_unaffected() {
    if !driver_runs() {
        return;
    }
    let lib =
        common::cargo_build(&["-p", "nrt-linux", "--lib", "--no-default-features"], "c-abi").join("libnrt_linux.a");
    let prog = std::env::temp_dir().join(format!("nrt-c-fork-{}", std::process::id()));
    common::compile_c("fork.c", &lib, &prog);
    let o = under_driver(&Command::new(&prog));
    let _ = std::fs::remove_file(&prog);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("child exit 0"), "{out}");
    assert!(out.contains("parent: session closed 0"), "{out}");
    assert!(out.contains("ok: 0 failure(s)"), "{out}");
}

/// Lanes whose poller thread stays inside the lane's first call until
/// `release` (bounded: 60 s), then answers it `NRT_INVALID_HANDLE` (no lane):
/// a request in flight, and a poller thread busy, at the fork.
struct Parked {
    release: Arc<AtomicBool>,
}

impl Lanes for Parked {
    type Dev = SimHost;
    fn lane(&mut self, _lane: u16) -> Option<(&mut SimHost, &mut Notifications)> {
        let t0 = Instant::now();
        while !self.release.load(Ordering::Acquire) && t0.elapsed() < CHILD_BOUND {
            std::thread::sleep(Duration::from_millis(1));
        }
        None
    }
}

/// One line to standard error with `write(2)` only (the child of a
/// threaded process).
fn say(s: &str) {
    let line = format!("{s}\n");
    // SAFETY: a valid buffer of its length; fd 2 is the process's stderr.
    let _ = unsafe { libc::write(2, line.as_ptr().cast(), line.len()) };
}

/// The child's checks on what it inherited: 0 when all pass, else the
/// number of the first that failed (and a line saying which).
fn child(session: Session, poller: Poller<Parked>, ticket: nrt_linux::poller::Ticket, parent: u32) -> i32 {
    let me = std::process::id();
    let names_fork = |s: &str| s.contains(&format!("made by pid {parent}, and this is pid {me}, a child forked"));
    let mut session = session;
    match session.run_inference() {
        Err(e) if names_fork(&e.to_string()) => {}
        other => {
            say(&format!("child: run_inference: {other:?}"));
            return 1;
        }
    }
    // The child's own datastore, acquired here (pid 0 is this process).
    let own = match NeuronDevice::open("/dev/neuron0").map(Arc::new).and_then(|d| ProcessCounters::of(&d)) {
        Ok(c) => c,
        Err(e) => {
            say(&format!("child: its own datastore: {e}"));
            return 2;
        }
    };
    match session.close() {
        Err(errors) if errors.len() == 1 && names_fork(&errors[0].to_string()) => {}
        other => {
            say(&format!("child: close: {other:?}"));
            return 3;
        }
    }
    match own.datastore().still_held() {
        Ok(true) => {}
        other => {
            say(&format!("child: its own datastore after the inherited close: {other:?}"));
            return 4;
        }
    }
    match poller.submit(0, ExecConfig::new(Arch::Sunda, 1, 5)) {
        Err(SubmitError::Forked(f)) if f.creator == parent && f.this == me && f.object == "poller" => {}
        other => {
            say(&format!("child: submit: {other:?}"));
            return 5;
        }
    }
    match ticket.waitable() {
        Err(WaitRefused::Forked(f)) if f.creator == parent && f.this == me => {}
        other => {
            say(&format!("child: waitable: {other:?}"));
            return 6;
        }
    }
    let t0 = Instant::now();
    let waited = ticket.wait();
    if waited != Step::failed(NrtStatus::InvalidHandle) || t0.elapsed() > Duration::from_secs(5) {
        say(&format!("child: wait: {waited:?} after {:?}", t0.elapsed()));
        return 7;
    }
    if ticket.poll() != Some(Step::failed(NrtStatus::InvalidHandle)) {
        say("child: poll");
        return 8;
    }
    drop(ticket);
    drop(poller);
    drop(own);
    say("child: every check passed");
    0
}

#[test]
#[ignore = "run inside `nrt-sim driver` by a_forked_child_is_refused_every_inherited_call_and_the_parent_is_unaffected"]
fn inner_a_forked_child_is_refused_and_forgets() {
    assert!(std::env::var_os(INNER).is_some(), "run by the outer test, under nrt-sim driver");
    let mut session = Session::open("/dev/neuron0", SessionConfig::default()).expect("open");
    assert_eq!(session.run_inference().expect("the parent's first inference").status, NrtStatus::Success);
    let release = Arc::new(AtomicBool::new(false));
    let poller = Poller::spawn(Parked { release: Arc::clone(&release) }, PollerConfig::default()).expect("poller");
    let ticket = poller.submit(0, ExecConfig::new(Arch::Sunda, 1, 5)).expect("submit");
    let parent = std::process::id();

    // SAFETY: the child runs the checks below and ends with `_exit`.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
    if pid == 0 {
        // SAFETY: plain calls; the child ends by `_exit`, running no destructor of the parent's.
        unsafe {
            libc::alarm(CHILD_ALARM_S);
            libc::_exit(child(session, poller, ticket, parent));
        }
    }
    let t0 = Instant::now();
    let mut status = 0;
    loop {
        // SAFETY: our child's pid and a writable status.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if r == pid {
            break;
        }
        if t0.elapsed() > CHILD_BOUND {
            // SAFETY: our child's pid.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("the child did not end within {CHILD_BOUND:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "the child: status {status:#x} (exit {}, signal {})",
        libc::WEXITSTATUS(status),
        libc::WTERMSIG(status)
    );

    // The parent: its poller answers, its datastore is held, it runs and closes.
    release.store(true, Ordering::Release);
    assert_eq!(ticket.wait(), Step::failed(NrtStatus::InvalidHandle), "the parked lane's answer");
    assert_eq!(session.datastore().map(|d| d.still_held().expect("still_held")), Some(true));
    assert_eq!(session.run_inference().expect("the parent's inference after the child").status, NrtStatus::Success);
    drop(poller);
    session.close().expect("the parent's close releases everything");
}
