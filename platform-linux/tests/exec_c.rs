//! The memory and execution C ABI under `nrt-sim driver`: `examples/exec.c`
//! copies its pattern host -> device -> host through one execution on sunda
//! and cayman; `tests/c/exec_args.c` gets a status and a reason naming the
//! call from every call given NULL, freed, doubly freed, out-of-range,
//! closed-session or another session's objects, keeps memory and executions
//! freed in flight alive to their end, and sees an open on held cores
//! refused with `NRT_EXEC_NC_BUSY`; the hang and NaN scenarios give their
//! statuses and the hung engine.
//!
//! Where the kernel offers no seccomp user notification, each test says
//! SKIPPED with the reason and checks nothing else.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;

/// A C program built against the static library, removed when dropped.
struct CProg(PathBuf);

impl Drop for CProg {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn build(source: &Path, name: &str) -> CProg {
    let lib =
        common::cargo_build(&["-p", "nrt-linux", "--lib", "--no-default-features"], "c-abi").join("libnrt_linux.a");
    let out = std::env::temp_dir().join(format!("nrt-exec-c-{name}-{}", std::process::id()));
    common::compile_c_file(source, &lib, &out);
    CProg(out)
}

/// `nrt-sim driver <driver args> -- <program> <args>`, no runtime variables.
fn under_driver(driver: &[&str], program: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let mut c = common::without_rt_env(Command::new(common::nrt_sim()));
    c.arg("driver").args(driver).arg("--").arg(program).args(args);
    let o: Output = c.output().expect("nrt-sim driver runs");
    (o.status.code(), String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

#[test]
fn the_c_example_copies_its_pattern_through_one_execution_on_sunda_and_cayman() {
    if !common::need_user_notif() {
        return;
    }
    let prog = build(&Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/exec.c"), "example");
    for arch in ["sunda", "cayman"] {
        let (code, out, err) = under_driver(&["--arch", arch], &prog.0, &[]);
        let ctx = format!("{arch}:\n{out}\n{err}");
        assert_eq!(code, Some(0), "{ctx}");
        assert!(out.contains("status 0 NRT_SUCCESS"), "{ctx}");
        assert!(out.contains("copies 98304 bytes host -> device -> host: match"), "{ctx}");
        for core in 0..2 {
            for eng in 0..5 {
                let head = format!("core {core} engine {eng}: start ");
                let line = out.lines().find(|l| l.starts_with(&head)).unwrap_or_else(|| panic!("{head}: {ctx}"));
                let times = line[head.len()..].strip_suffix(" us").and_then(|t| t.split_once(" us, end "));
                let t: Option<(u64, u64)> = times.and_then(|(s, e)| Some((s.parse().ok()?, e.parse().ok()?)));
                assert!(t.is_some_and(|(s, e)| s <= e), "{line}: {ctx}");
            }
        }
    }
}

/// The lines of `exec_args`: label -> (value, last status, last error).
fn checks(out: &str) -> BTreeMap<String, (i64, u32, String)> {
    out.lines()
        .filter_map(|l| {
            let (label, rest) = l.split_once(" = ")?;
            let mut f = rest.splitn(3, " | ");
            let v = f.next()?.parse().ok()?;
            let st = f.next()?.parse().ok()?;
            Some((label.to_string(), (v, st, f.next().unwrap_or("").to_string())))
        })
        .collect()
}

/// `(label, value, status, reason)`: a failed call's value, the status it
/// left and a piece of its reason; `None` for a call that succeeds (its
/// reason is an earlier call's).
type Want = (&'static str, i64, Option<(u32, &'static str)>);

const UNKNOWN: i64 = u32::MAX as i64;

const ARGS: &[Want] = &[
    ("alloc NULL session", 0, Some((2, "nrt_mem_alloc: session is NULL"))),
    ("host_ptr NULL", 0, Some((2, "nrt_mem_host_ptr: the memory is NULL"))),
    ("mem_free NULL", 0, None),
    ("copy NULL session", 2, Some((2, "nrt_copy: session is NULL"))),
    ("exec_new NULL", 0, Some((2, "nrt_exec_new: session is NULL"))),
    ("add_copy NULL", -1, Some((2, "nrt_exec_add_copy: execution is NULL"))),
    ("set_callback NULL", -1, Some((2, "nrt_exec_set_callback: execution is NULL"))),
    ("submit NULL", 2, Some((2, "nrt_exec_submit: execution is NULL"))),
    ("fd NULL", -1, Some((2, "nrt_exec_fd: execution is NULL"))),
    ("wait NULL", 2, Some((2, "nrt_exec_wait: execution is NULL"))),
    ("status NULL", -1, Some((2, "nrt_exec_status: execution is NULL"))),
    ("times NULL", -1, Some((2, "nrt_exec_engine_times: execution is NULL"))),
    ("pending NULL", UNKNOWN, Some((2, "nrt_exec_pending_engines: execution is NULL"))),
    ("exec_free NULL", 0, Some((2, "nrt_exec_free: execution is NULL"))),
    ("open held cores", 0, Some((1005, "NEURON_IOCTL_CRWL_NC_RANGE_MARK on /dev/neuron0 failed: EBUSY"))),
    (
        "alloc where 7",
        0,
        Some((2, "nrt_mem_alloc on /dev/neuron0 nd0 nc0: where 7: NRT_MEM_HOST (0) or NRT_MEM_DEVICE (1)")),
    ),
    ("alloc 0 bytes", 0, Some((2, "nrt_mem_alloc on /dev/neuron0 nd0 nc0: 0 bytes"))),
    ("host_ptr device", 0, Some((2, "nrt_mem_host_ptr on /dev/neuron0 nd0 nc0: device memory 0x"))),
    ("copy NULL source", 2, Some((2, "nrt_copy on /dev/neuron0 nd0 nc0: the source is NULL"))),
    ("copy past end", 2, Some((2, "200 bytes at offset 4000 of the destination, device memory 0x"))),
    ("copy offset overflow", 2, Some((2, "2 bytes at offset 18446744073709551615 of the source, host memory"))),
    ("copy 0 bytes", 2, Some((2, "nrt_copy on /dev/neuron0 nd0 nc0: a copy of 0 bytes"))),
    ("copy other session", 3, Some((3, "is another session's (on /dev/neuron0 nd0 nc1)"))),
    ("copy exec handle as memory", 3, Some((3, "is not a live memory object (freed, or never made)"))),
    ("copy ok", 0, None),
    ("fd unsubmitted", 1, None),
    ("wait unsubmitted", 2, Some((2, "nrt_exec_wait on /dev/neuron0 nd0 nc0: execution 0x"))),
    ("status unsubmitted", -1, Some((2, "was never submitted"))),
    ("times unsubmitted", -1, Some((2, "nrt_exec_engine_times on /dev/neuron0 nd0 nc0: execution 0x"))),
    ("pending unsubmitted", UNKNOWN, Some((2, "nrt_exec_pending_engines on /dev/neuron0 nd0 nc0: execution 0x"))),
    ("add_copy other session", -1, Some((3, "nrt_exec_add_copy on /dev/neuron0 nd0 nc0: the source, host memory"))),
    ("add_copy past end", -1, Some((2, "2 bytes at offset 4095 of the source, device memory"))),
    ("add_copy NULL destination", -1, Some((2, "nrt_exec_add_copy on /dev/neuron0 nd0 nc0: the destination is NULL"))),
    ("status NULL out", -1, Some((2, "execution 0x80 was never submitted"))),
    ("times NULL out", -1, Some((2, "nrt_exec_engine_times: start_us 0x0"))),
    ("set_callback block", 0, None),
    ("set_callback count", 0, None),
    ("add_copy ok", 0, None),
    ("submit e0", 0, None),
    ("submit e2", 0, None),
    ("submit e", 0, None),
    ("submit in flight", 2, Some((2, "nrt_exec_submit on /dev/neuron0 nd0 nc0: execution 0x"))),
    ("submits until full", 14, None),
    ("submit past the depth", 7, Some((7, "16 executions in flight, the queue's capacity"))),
    ("status in flight", 1, None),
    ("fd not readable in flight", 0, None),
    ("add_copy in flight", -1, Some((2, "is in flight: wait for it first"))),
    ("set_callback in flight", -1, Some((2, "nrt_exec_set_callback on /dev/neuron0 nd0 nc0: execution 0x"))),
    ("times in flight", -1, Some((2, "nrt_exec_engine_times on /dev/neuron0 nd0 nc0: execution 0x"))),
    ("pending in flight", UNKNOWN, Some((2, "nrt_exec_pending_engines on /dev/neuron0 nd0 nc0: execution 0x"))),
    ("wait freed exec", 3, Some((3, "(execution on /dev/neuron0 nd0 nc0) was freed"))),
    ("exec double free", 0, Some((3, "nrt_exec_free: execution 0x"))),
    ("mem_free in flight", 0, None),
    ("mem double free", -1, Some((3, "nrt_mem_free: memory 0x"))),
    ("host_ptr freed", 0, Some((3, "(host memory of 4096 bytes on /dev/neuron0 nd0 nc0) was freed"))),
    ("copy freed source", 3, Some((3, "nrt_copy on /dev/neuron0 nd0 nc0: the source, memory 0x"))),
    ("add_copy freed source", -1, Some((3, "nrt_exec_add_copy on /dev/neuron0 nd0 nc0: the source, memory 0x"))),
    ("wait e", 0, None),
    ("status done", 0, None),
    ("status done value", 0, None),
    ("callback of the freed exec ran", 1, None),
    ("bytes of the freed memory", 1, None),
    ("fd readable when done", 1, None),
    ("status done NULL out", 0, None),
    ("resubmit done exec", 0, None),
    ("fd the same after resubmit", 1, None),
    ("wait resubmitted", 0, None),
    ("fd readable after the resubmit", 1, None),
    ("times done", 0, None),
    ("times done ordered", 1, None),
    (
        "times core out of range",
        -1,
        Some((2, "nrt_exec_engine_times on /dev/neuron0 nd0 nc0: core 1: the session has 1")),
    ),
    ("times engine out of range", -1, Some((2, "core 0: engine 9: a core has 5"))),
    ("pending done", 0, None),
    ("pending core out of range", UNKNOWN, Some((2, "nrt_exec_pending_engines on /dev/neuron0 nd0 nc0: core 1"))),
    ("wait e0", 0, None),
    ("submit freed", 3, Some((3, "nrt_exec_submit: execution 0x"))),
    ("exec_free freed", 0, Some((3, "nrt_exec_free: execution 0x"))),
    ("close b", 0, None),
    ("submit closed session", 3, Some((3, "nrt_exec_submit on /dev/neuron0 nd0 nc1: execution 0x"))),
    ("alloc closed session", 0, Some((3, "nrt_mem_alloc: session 0x"))),
    ("exec_new closed session", 0, Some((3, "is closed or was never opened"))),
    ("copy closed session", 3, Some((3, "nrt_copy: session 0x"))),
    ("close b again", -1, Some((3, "nrt_session_close: session 0x"))),
    ("mem_free of closed session", 0, None),
    ("close a", 0, None),
];

fn assert_checks(out: &str, err: &str, want: &[Want]) {
    let got = checks(out);
    for (label, value, failure) in want {
        let ctx = format!("{label}:\n{out}\n{err}");
        let (v, st, why) = got.get(*label).unwrap_or_else(|| panic!("no line: {ctx}"));
        assert_eq!(v, value, "{ctx}");
        if let Some((status, piece)) = failure {
            assert_eq!(st, status, "{ctx}");
            assert!(why.contains(piece), "reason lacks {piece:?}: {ctx}");
        }
    }
}

#[test]
fn every_call_refuses_bad_arguments_with_a_status_and_a_reason_and_keeps_in_flight_objects() {
    if !common::need_user_notif() {
        return;
    }
    let prog = build(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/exec_args.c"), "args");
    let (code, out, err) = under_driver(&["--scenario", "healthy-2core"], &prog.0, &["args"]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert_checks(&out, &err, ARGS);
    let exec_free_null = checks(&out).len();
    assert_eq!(exec_free_null, ARGS.len(), "a check the test does not know: {out}");
    assert!(out.contains("callback status 0"), "{out}");
}

/// `hang` stops core 0's DVE (platform-sim's scenario table): the wait ends
/// at the 1 s timeout with NRT_TIMEOUT and DVE's bit pending, its START seen
/// and its END not; `nan` completes with NRT_EXEC_COMPLETED_WITH_NUM_ERR.
#[test]
fn a_hang_times_out_naming_the_hung_engine_and_a_nan_gives_1003() {
    if !common::need_user_notif() {
        return;
    }
    let prog = build(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/exec_args.c"), "end");
    let (code, out, err) = under_driver(&["--scenario", "hang"], &prog.0, &["end"]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    let dve = 1 << nrt_core::nq::Engine::Dve.index();
    assert_checks(
        &out,
        &err,
        &[
            ("submit", 0, None),
            ("wait", 5, Some((5, "nrt_exec_wait on /dev/neuron0 nd0 nc0-1: execution 0x"))),
            ("status", 2, Some((5, "status 5 NRT_TIMEOUT; core 0: started, never wrote END: DVE"))),
            ("status value", 5, None),
            ("pending core 0", dve, None),
            ("core 0 status", 0, None),
            ("core 0 status value", 5, None),
            ("core 1 status value", 0, None),
            ("times core 0 DVE", -1, Some((2, "core 0 engine 3 DVE: its END was not seen"))),
            ("times core 0 DVE end seen", 0, None),
            ("pending core 1", 0, None),
            ("times core 1 DVE end seen", 1, None),
            ("close", 0, None),
            ("ended unrun, NRT_CLOSED", 1, None),
            ("their callbacks ran", 3, None),
            ("cores of a closed session", 0, None),
            ("timeout of a closed session", 0, None),
            ("status of a closed session", 2, None),
            ("run on a closed session", -1, Some((3, "nrt_session_run: session 0x"))),
        ],
    );
    let (code, out, err) = under_driver(&["--scenario", "nan"], &prog.0, &["end"]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert_checks(
        &out,
        &err,
        &[
            ("wait", 1003, Some((1003, "status 1003 NRT_EXEC_COMPLETED_WITH_NUM_ERR"))),
            ("status value", 1003, None),
            ("pending core 0", 0, None),
            ("core 0 status value", 1003, None),
            ("close", 0, None),
        ],
    );
}
