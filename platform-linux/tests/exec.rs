//! The runtime API end to end: the examples `exec`, `exec_stress` and
//! `exec_checks`, each run under `nrt-sim driver` as its own process: every
//! engine's times on sunda and cayman, a hung engine named at the timeout, a
//! NaN's status, a device that acknowledges copies it did not make
//! (`--fault-copy-data`, `--fault-copy-marker`), a thousand executions with
//! every byte checked and no descriptor or memory left behind, two processes
//! on disjoint cores at once, a callback that submits.
//!
//! Two tests are ignored, each failing on a fault of `src/exec.rs` it names.
//!
//! Where the kernel offers no seccomp user notification, each test says
//! SKIPPED with the reason and checks nothing else.
#![cfg(feature = "sim")]

use std::path::PathBuf;
use std::process::{Command, Output};

mod common;

macro_rules! need_user_notif {
    () => {
        if !common::need_user_notif() {
            return;
        }
    };
}

/// The example `name`, built into `target/c-abi` with nrt-sim's.
fn example(name: &str) -> PathBuf {
    common::cargo_build(&["-p", "nrt-linux", "--example", name], "c-abi").join("examples").join(name)
}

/// `nrt-sim driver <driver> -- <program> <args>` with `env` and none of this process's runtime variables.
fn driven(driver: &[&str], program: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = common::without_rt_env(Command::new(common::nrt_sim()));
    c.arg("driver").args(["--limit-s", "60"]).args(driver).arg("--").arg(program).args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("nrt-sim driver runs")
}

/// Standard output, and everything for a failure's message.
fn text(o: &Output) -> (String, String) {
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    (
        out.clone(),
        format!("exit {:?}\n--- stdout\n{out}--- stderr\n{}", o.status.code(), String::from_utf8_lossy(&o.stderr)),
    )
}

/// The first whitespace-separated number after `key ` on the line starting with `line`.
fn number(out: &str, line: &str, key: &str) -> i64 {
    let l = out.lines().find(|l| l.starts_with(line)).unwrap_or_else(|| panic!("no line {line:?} in\n{out}"));
    let rest = l.split_once(&format!("{key} ")).unwrap_or_else(|| panic!("no {key:?} in {l:?}")).1;
    rest.split_whitespace().next().and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("{key} in {l:?}"))
}

#[test]
fn the_example_copies_and_times_every_engine_of_two_cores_on_sunda_and_cayman() {
    need_user_notif!();
    let exec = example("exec");
    for arch in [&[][..], &["--arch", "cayman"][..]] {
        let o = driven(arch, &exec, &[], &[]);
        let (out, ctx) = text(&o);
        assert_eq!(o.status.code(), Some(0), "{arch:?}: {ctx}");
        assert!(out.contains("status 0 NRT_SUCCESS") && out.contains("host -> device -> host: match"), "{ctx}");
        for core in 0..2 {
            for eng in 0..5 {
                let l = format!("core {core} engine {eng}: start Some(");
                let line = out.lines().find(|x| x.starts_with(&l)).unwrap_or_else(|| panic!("{l}: {ctx}"));
                assert!(line.contains(" us, end Some("), "{arch:?}: {line}: {ctx}");
            }
        }
        assert!(!out.contains("core 2 "), "two cores: {ctx}");
    }
}

#[test]
fn a_hung_engine_is_a_timeout_naming_it_and_a_nan_is_1003() {
    need_user_notif!();
    let exec = example("exec");
    let o = driven(&["--scenario", "hang"], &exec, &[], &[("NEURON_RT_EXEC_TIMEOUT", "1")]);
    let (out, ctx) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{ctx}");
    assert!(out.contains("status 5 NRT_TIMEOUT"), "{ctx}");
    // The scenario's hung engine, core 0 DVE (engine 3), started and never ended.
    let dve = out.lines().find(|l| l.starts_with("core 0 engine 3: ")).unwrap_or_else(|| panic!("{ctx}"));
    assert!(dve.contains("start Some(") && dve.ends_with("end None us"), "{dve}: {ctx}");
    let o = driven(&["--scenario", "nan"], &exec, &[], &[]);
    let (out, ctx) = text(&o);
    assert!(out.contains("status 1003 NRT_EXEC_COMPLETED_WITH_NUM_ERR"), "{ctx}");
}

#[test]
fn a_copy_the_device_acknowledged_but_did_not_make_is_6_and_ends_the_execution_before_its_kickoff() {
    need_user_notif!();
    let checks = example("exec_checks");
    let o = driven(&["--fault-copy-data", "1"], &checks, &["copy-fault"], &[]);
    let (out, ctx) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{ctx}");
    let copy = out.lines().find(|l| l.starts_with("copy host->host: ")).unwrap_or_else(|| panic!("{ctx}"));
    assert!(copy.contains("error status 6: ") && copy.contains("did not move the data"), "{ctx}");
    let exec =
        out.lines().find(|l| l.starts_with("exec host->device, host->host: ")).unwrap_or_else(|| panic!("{ctx}"));
    assert!(
        exec.contains("status 6 NRT_HW_ERROR kickoff_us 0 steps 0 copies 2 ")
            && exec.contains("DMA engine")
            && exec.contains("the kickoff was not made"),
        "{ctx}"
    );
    assert!(!out.contains("NRT_SUCCESS"), "{ctx}");
}

#[test]
fn a_copy_whose_marker_never_arrives_is_a_timeout_naming_the_queue() {
    need_user_notif!();
    let checks = example("exec_checks");
    let o = driven(&["--fault-copy-marker", "1"], &checks, &["marker-lost"], &[]);
    let (out, ctx) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{ctx}");
    let exec = out.lines().find(|l| l.starts_with("exec host->host: ")).unwrap_or_else(|| panic!("{ctx}"));
    assert!(
        exec.contains("status 5 NRT_TIMEOUT kickoff_us 0 steps 0 copies 1 ")
            && exec.contains("copy on DMA engine ")
            && exec.contains(" queue 0: its completion marker at 0x"),
        "{ctx}"
    );
    // The queue's state is unknown: the session refuses more work.
    let after = out.lines().find(|l| l.starts_with("copy after: ")).unwrap_or_else(|| panic!("{ctx}"));
    assert!(after.contains("error status 101: ") && after.contains("the session is unusable"), "{ctx}");
    let copy = out.lines().find(|l| l.starts_with("copy on a new session: ")).unwrap_or_else(|| panic!("{ctx}"));
    assert!(copy.contains("error status 5: ") && copy.contains(" queue 0: its completion marker at 0x"), "{ctx}");
}

/// Pass bounds of one `exec_stress` run: every execution checked, the
/// descriptors as many after as before, the resident set grown by less than
/// `rss_kib`; returns the output.
fn assert_clean_stress(o: &Output, executions: u64, rss_kib: i64) -> String {
    let (out, ctx) = text(o);
    assert_eq!(o.status.code(), Some(0), "{ctx}");
    assert!(out.contains(&format!("checked {executions} executions: 0 differ, 0 failed")), "{ctx}");
    assert_eq!(number(&out, "fds before", "before"), number(&out, "fds before", "after"), "{ctx}");
    let growth = number(&out, "rss_kib before", "growth");
    assert!(growth < rss_kib, "resident set grew {growth} KiB: {ctx}");
    assert_eq!(number(&out, "submit_to_notice_us", "n"), executions as i64, "{ctx}");
    out
}

#[test]
fn a_thousand_executions_eight_in_flight_check_every_byte_and_leave_nothing_behind() {
    need_user_notif!();
    let stress = example("exec_stress");
    let o = driven(&[], &stress, &["1000", "8", "3", "4096"], &[]);
    let out = assert_clean_stress(&o, 1000, 8 * 1024);
    eprintln!("{out}");
    let (_, ctx) = text(&o);
    assert!(String::from_utf8_lossy(&o.stderr).contains(" 0 warning(s)"), "{ctx}");
    // At the stream's depth: never refused (exec_stress waits each one's
    // callback, which runs once the stream has counted it out).
    let depth = nrt_linux::exec::STREAM_DEPTH.to_string();
    let o = driven(&[], &stress, &["300", &depth, "2", "4096"], &[]);
    assert_clean_stress(&o, 300, 8 * 1024);
}

#[test]
fn two_processes_on_disjoint_cores_run_at_once_under_one_driver_cleanly() {
    need_user_notif!();
    let stress = example("exec_stress");
    let dir = std::env::temp_dir().join(format!("nrt-exec-two-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    const BOTH: &str = r#"
prog="$1"; dir="$2"
NEURON_RT_VISIBLE_CORES=0 "$prog" 400 8 3 4096 >"$dir/a.out" 2>"$dir/a.err" &
a=$!
NEURON_RT_VISIBLE_CORES=1 "$prog" 400 8 3 4096 >"$dir/b.out" 2>"$dir/b.err"
echo "exit $?" >>"$dir/b.err"
wait $a
echo "exit $?" >>"$dir/a.err"
"#;
    let mut c = common::without_rt_env(Command::new(common::nrt_sim()));
    c.args(["driver", "--limit-s", "60", "--", "sh", "-c", BOTH, "sh"]).arg(&stress).arg(&dir);
    let o = c.output().expect("nrt-sim driver runs");
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_default();
    let (a, a_err, b, b_err) = (read("a.out"), read("a.err"), read("b.out"), read("b.err"));
    let _ = std::fs::remove_dir_all(&dir);
    let driver = String::from_utf8_lossy(&o.stderr).into_owned();
    let ctx = format!("--- driver\n{driver}\n--- a\n{a}{a_err}\n--- b\n{b}{b_err}");
    for (out, err) in [(&a, &a_err), (&b, &b_err)] {
        assert!(err.trim_end().ends_with("exit 0"), "{ctx}");
        assert!(out.contains("checked 400 executions: 0 differ, 0 failed"), "{ctx}");
        assert_eq!(number(out, "fds before", "before"), number(out, "fds before", "after"), "{ctx}");
    }
    assert!(driver.contains(" 0 refused, 0 kernel BUG(s), 0 warning(s)"), "{ctx}");
    // At once: each one's executions overlap the other's.
    let span = |out: &str| (number(out, "span_unix_ms", "start"), number(out, "span_unix_ms", "end"));
    let ((a0, a1), (b0, b1)) = (span(&a), span(&b));
    assert!(a0 < b1 && b0 < a1, "the two runs did not overlap: {ctx}");
}

#[test]
fn a_callback_that_submits_and_a_wait_on_another_thread_do_not_hang() {
    need_user_notif!();
    let checks = example("exec_checks");
    let o = driven(&[], &checks, &["callback"], &[]);
    let (out, ctx) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{ctx}");
    assert!(!out.contains("HANG"), "{ctx}");
    for l in [
        "first (in its callback): status 0 NRT_SUCCESS",
        "first (waited on another thread): status 0 NRT_SUCCESS",
        "second (waited on another thread): status 0 NRT_SUCCESS",
        "bytes match",
    ] {
        assert!(out.contains(l), "{l}: {ctx}");
    }
}

/// Fails: `Pending::wait` returns before the stream counts its execution
/// out (src/exec.rs `work`: `held -= 1` comes after the result is published
/// and the descriptor written), so a caller that keeps `STREAM_DEPTH` held
/// and submits as soon as the oldest is done gets `NRT_QUEUE_FULL` (7).
#[test]
fn a_stream_kept_at_its_depth_never_refuses_a_submit_once_the_oldest_is_waited() {
    need_user_notif!();
    let checks = example("exec_checks");
    let o = driven(&[], &checks, &["depth"], &[]);
    let (out, ctx) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{ctx}");
    assert!(out.contains("refused 0"), "{ctx}");
}

/// Fails: a callback that drops the last handle to its stream runs the
/// stream's drop on the worker, which joins itself (src/exec.rs
/// `Stream::stop`): the worker panics, "failed to join thread: Resource
/// deadlock avoided".
#[test]
fn a_callback_may_drop_the_last_handle_to_its_stream() {
    need_user_notif!();
    let checks = example("exec_checks");
    let o = driven(&[], &checks, &["last-in-callback"], &[]);
    let (out, ctx) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{ctx}");
    assert!(out.contains("waited: status 0") && out.contains("done"), "{ctx}");
    assert!(!String::from_utf8_lossy(&o.stderr).contains("panicked"), "{ctx}");
}

/// A `Pending` queued behind a callback that holds the worker: not done, no
/// result, its descriptor not readable (and the same at every call), counted
/// in flight; its own wait runs it while the worker is still held; then done,
/// a result, readable, none in flight; a wait of no time on a done one
/// answers; the stream closes clean.
#[test]
fn a_queued_pending_is_not_done_until_it_runs_and_then_is_readable() {
    need_user_notif!();
    let checks = example("exec_checks");
    let o = driven(&[], &checks, &["api"], &[]);
    let (out, ctx) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{ctx}");
    for line in [
        "first done: true",
        "queued in flight: 1",
        "queued done: false",
        "queued result: false",
        "queued fd readable: false",
        "queued fd stable: true",
        "queued, waited while the worker is held: status 0 NRT_SUCCESS",
        "done: true",
        "done result: true",
        "done fd readable: true",
        "done in flight: 0",
        "done wait_timeout 0: true",
        "late fd readable before: true",
        "late wait: 0",
        "late fd readable after: true",
        "host: host 100 bytes",
        "device: device 100 bytes, mapped false",
        "addresses differ: true",
        "write to the end: ok",
        "write past the end: error status 2: write on host memory of 100 bytes at 0x",
        "read to the end: ok",
        "read back: [1, 2, 3, 4]",
        "read past the end: error status 2: ",
        "read device memory: error status 2: read on device memory of 100 bytes",
        "alloc 0 bytes: error status 2: nrt_mem_alloc on /dev/neuron0 ",
        "alloc 2^63 bytes: error status 2: nrt_mem_alloc on /dev/neuron0 ",
        "alloc 2^63 - 1 bytes: error status 4: NEURON_IOCTL_MEM_ALLOC_V2MT on /dev/neuron0 failed: ENOMEM",
        "copy onto itself: error status 2: nrt_copy on /dev/neuron0 ",
        "copy past the end: error status 2: ",
        "copy 0 bytes: error status 2: ",
        "copy host to device: ok",
        "close: ok",
    ] {
        assert!(out.lines().any(|l| l.starts_with(line)), "{line}: {ctx}");
    }
}
