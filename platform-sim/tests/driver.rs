//! `nrt-sim driver -- COMMAND` end to end, through the real seccomp path: a
//! small C program (`tests/c/driver_probe.c`, compiled here) opens
//! `/dev/neuron0`, makes the driver's ioctls and stages a copy; the
//! supervisor traps and serves them with the model. If this kernel has no
//! seccomp user notification, each test says SKIPPED with the reason (loudly)
//! and passes.
#![cfg(feature = "driver")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

const SIM: &str = env!("CARGO_BIN_EXE_nrt-sim");

#[macro_use]
mod common;

/// The probe program, compiled once.
fn probe() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("driver_probe");
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/driver_probe.c");
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let st = Command::new(&cc)
            .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-O1"])
            .arg(&src)
            .arg("-o")
            .arg(&out)
            .status()
            .expect("a C compiler (cc) is installed");
        assert!(st.success(), "cc {} failed", src.display());
        out
    })
}

fn driver(args: &[&str], command: &[&str]) -> Output {
    Command::new(SIM).arg("driver").args(args).arg("--").args(command).output().expect("nrt-sim runs")
}

fn text(o: &Output) -> (String, String) {
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

/// The value printed for `key` (the rest of its line).
fn field<'a>(out: &'a str, key: &str) -> &'a str {
    out.lines().find_map(|l| l.strip_prefix(&format!("{key}: "))).unwrap_or_else(|| panic!("no {key} in:\n{out}"))
}

#[test]
fn an_unmodified_process_gets_the_device_its_answers_and_a_ring_slot_the_device_wrote() {
    need_user_notif!();
    let p = probe().to_str().unwrap();
    let o = driver(&["--cores", "1"], &[p, "probe", "1024"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "stdout:\n{out}\nstderr:\n{err}");
    assert_eq!(field(&out, "open"), "ok");
    assert_eq!(field(&out, "open_neuron1"), "No such file or directory");
    assert_eq!(field(&out, "driver_info"), "0 arch 2 size 24 features 0xff");
    assert_eq!(field(&out, "device_info"), "0 arch 2 bar0 0x4000000000 size 0x30c58000");
    assert_eq!(field(&out, "compatible_version"), "0 max 7 min 5");
    // Copy start before DMA_QUEUE_INIT: the driver's bare -1 (EPERM).
    assert_eq!(field(&out, "copy_start_before_init"), "-1");
    // NOTIFY (1) * 16 + engine_index 80 = nq id 96: past the block (EINVAL).
    assert_eq!(field(&out, "slot_past_block"), "-22");
    assert_eq!(field(&out, "semaphore_256"), "-22");
    assert!(field(&out, "nq_init").starts_with("0 offset 0x"), "{out}");
    assert_eq!(field(&out, "host_trigger"), "0");
    assert_eq!(field(&out, "kickoff"), "0");
    assert_ne!(field(&out, "ring_slot0"), "0x0000000000000000", "the device wrote no record:\n{out}\n{err}");
    // The simulator's hint query answers; the old status window is plain BAR space.
    assert_eq!(field(&out, "heartbeat"), "0 nonzero 1 magic 1");
    assert_eq!(field(&out, "barrier_fail_core1"), "0 0");
    assert_eq!(field(&out, "tail_inc_write"), "-22");
    assert_eq!(field(&out, "other_fd_ioctl"), "-25", "ENOTTY from the real kernel");
    assert!(err.contains("1 open(s) of /dev/neuron0") && err.contains("0 kernel BUG(s)"), "{err}");
    assert!(err.contains("1 inference(s) played"), "{err}");
}

/// BAR-8: BAR accesses the driver performs unchecked are served, and those a
/// runtime must not make are conformance violations that fail a strict run
/// (exit 71): outside every window of the device map, a write into a TPB's or
/// a top-SP's semaphore resource; the simulator's INTC cause and host trigger
/// only with the hint query refused.
#[test]
fn bar_accesses_outside_the_map_are_conformance_violations_that_fail_a_strict_run() {
    need_user_notif!();
    let p = probe().to_str().unwrap();
    for (flags, code, count) in [(&[][..], 71, 3), (&["--log-violations"][..], 0, 3), (&["--no-sim-hints"][..], 71, 5)]
    {
        let o = driver(flags, &[p, "bar"]);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(code), "{flags:?}:\nstdout:\n{out}\nstderr:\n{err}");
        for key in
            ["old_window_word", "head_write", "tpb_sema_write", "top_sp_sema_write", "intc_read", "trigger_write"]
        {
            assert!(field(&out, key).starts_with('0'), "{flags:?} {key}: the driver performs it:\n{out}");
        }
        assert!(
            err.contains("BAR-8: read of BAR0 offset 0x305ff048, outside every window the device map names"),
            "{err}"
        );
        assert!(
            err.contains("BAR-8: write of BAR0 offset 0x2701400, in TpbSemaphores(0)'s SEMAPHORE resource"),
            "{err}"
        );
        assert!(
            err.contains("BAR-8: write of BAR0 offset 0x100015a0, in TopSpSemaphores(0)'s SEMAPHORE resource"),
            "{err}"
        );
        assert!(!err.contains("0x305351ac"), "the HEAD register is named: {err}");
        let sim_only = err.contains("0x30555f40, the simulator's INTC cause registers")
            && err.contains("0x100035a0, the simulator's top-SP host trigger");
        assert_eq!(sim_only, count == 5, "{flags:?}: {err}");
        assert!(err.contains(&format!("{count} conformance violation(s)")), "{flags:?}: {err}");
    }
}

#[test]
fn copy_start_with_rx_zero_is_a_kernel_bug_that_fails_a_strict_run() {
    need_user_notif!();
    let p = probe().to_str().unwrap();
    let o = driver(&[], &[p, "bug"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(70), "stdout:\n{out}\nstderr:\n{err}");
    assert_eq!(field(&out, "queue_init"), "0");
    assert!(
        err.contains("kernel BUG: NEURON_IOCTL_DMA_QUEUE_COPY_START: COPY-5: udma_desc_action_add: BUG_ON(num == 0")
            && err.contains("(udma/udma_main.c)"),
        "{err}"
    );
    assert!(!out.contains("copy_start_rx0"), "the call returned to the process:\n{out}");
    assert!(err.contains("killed"), "{err}");
}

#[test]
fn a_copy_start_executes_the_copy_its_descriptors_describe() {
    need_user_notif!();
    let p = probe().to_str().unwrap();
    let o = driver(&["--verbose"], &[p, "copy"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "stdout:\n{out}\nstderr:\n{err}");
    assert_eq!(field(&out, "chunks"), "ok");
    assert_eq!(field(&out, "queue_init"), "0");
    assert_eq!(field(&out, "copy_start"), "0");
    // Two BDs each way, 3000 + 1096 bytes: page 1 is page 0, page 2 untouched.
    assert_eq!(field(&out, "copied"), "verified guard intact");
    // A destination outside every chunk: the driver returns 0, the device's DMA error is logged.
    assert_eq!(field(&out, "copy_start_outside"), "0");
    assert!(
        err.contains("DMA error: engine 0 queue 0 RX: BD 2 destination 0x1000 + 16 bytes is outside every chunk"),
        "{err}"
    );
    assert_eq!(field(&out, "queue_state"), "0 tx head 3 rx head 3 length 64");
    assert!(err.contains("0 kernel BUG(s), 1 warning(s)"), "{err}");
}

#[test]
fn log_violations_only_logs_the_kernel_bug() {
    need_user_notif!();
    let p = probe().to_str().unwrap();
    let o = driver(&["--log-violations"], &[p, "bug"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "stdout:\n{out}\nstderr:\n{err}");
    assert_eq!(field(&out, "copy_start_rx0"), "0");
    assert!(err.contains("kernel BUG: ") && err.contains("1 kernel BUG(s)"), "{err}");
}

#[test]
fn exit_statuses_signals_and_the_limit() {
    need_user_notif!();
    let o = driver(&[], &["sh", "-c", "exit 3"]);
    assert_eq!(o.status.code(), Some(3), "{:?}", text(&o));
    let o = driver(&[], &["sh", "-c", "kill -9 $$"]);
    assert_eq!(o.status.code(), Some(137), "{:?}", text(&o));
    assert!(text(&o).1.contains("killed by signal 9"), "{:?}", text(&o));
    let o = driver(&["--limit-s", "1"], &["sleep", "30"]);
    assert_eq!(o.status.code(), Some(124), "{:?}", text(&o));
    assert!(text(&o).1.contains("ran past --limit-s 1"), "{:?}", text(&o));
    let o = driver(&[], &["/nonexistent/program"]);
    assert_eq!(o.status.code(), Some(1), "{:?}", text(&o));
    assert!(text(&o).1.contains("/nonexistent/program"), "{:?}", text(&o));
}

#[test]
fn scenario_all_runs_the_command_per_scenario_and_prints_the_table() {
    need_user_notif!();
    // A command that always reports success: the healthy rows pass, the rest fail.
    let o = driver(
        &["--scenario", "all"],
        &["sh", "-c", "echo 'status: 0 NRT_SUCCESS (ok)'; echo 'one-step return: 0 (ok) after 1 steps'"],
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "stdout:\n{out}\nstderr:\n{err}");
    let row = |name: &str| out.lines().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("no {name}:\n{out}"));
    assert!(row("healthy-2core ").ends_with("PASS"), "{out}");
    assert!(row("nan ").contains("FAIL"), "{out}");
    assert!(out.contains("barrier-300s") && out.contains("SKIPPED"), "{out}");
    assert!(out.contains("scenarios:") && out.contains("passed"), "{out}");
    let o = driver(&["--scenario", "all", "--cores", "1"], &["true"]);
    assert_eq!(o.status.code(), Some(2), "{:?}", text(&o));
}

#[test]
fn a_status_without_a_return_code_does_not_pass() {
    need_user_notif!();
    let o = driver(&["--scenario", "all"], &["sh", "-c", "echo 'status: 0 NRT_SUCCESS (ok)'"]);
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(1));
    let healthy = out.lines().find(|l| l.starts_with("healthy-1core ")).unwrap();
    assert!(healthy.contains("no return code printed") && healthy.contains("FAIL"), "{out}");
}

#[test]
fn a_scenario_plays_its_device_for_the_command() {
    need_user_notif!();
    let p = probe().to_str().unwrap();
    // barrier-fail: core 1's barrier proxy fails with 1200, read through the hint query.
    let o = driver(&["--scenario", "barrier-fail"], &[p, "probe", "1024"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "stdout:\n{out}\nstderr:\n{err}");
    assert_eq!(field(&out, "barrier_fail_core1"), "0 1200");
    // The scenario's device configuration, for a COMMAND that runs every scenario unmodified.
    for (scenario, want) in [
        ("healthy-1core", "0 arch 2 cores 1 ring_entries 64"),
        ("ring-overflow", "0 arch 2 cores 2 ring_entries 4"),
        ("cayman-fixup", "0 arch 3 cores 2 ring_entries 64"),
    ] {
        let o = driver(&["--scenario", scenario], &[p, "window"]);
        let (out, err) = text(&o);
        assert_eq!(field(&out, "window"), want, "{scenario}: {err}");
    }
    let o = driver(&["--scenario", "no-such-scenario"], &["true"]);
    assert_eq!(o.status.code(), Some(2), "{:?}", text(&o));
}

/// The ownership sequence a runtime uses, through the real seccomp path, with
/// the driver's answers (docs/driver-conformance.md CRWL-3..13, RANGE-4/5).
#[test]
fn the_ownership_sequence_gets_the_drivers_answers() {
    need_user_notif!();
    let p = probe().to_str().unwrap();
    let o = driver(&[], &[p, "own"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "stdout:\n{out}\nstderr:\n{err}");
    for (key, want) in [
        ("reader_enter_uuid0", "-2"),
        ("range_mark", "0 bitmap 1"),
        ("writer_enter", "0"),
        ("writer_downgrade", "0"),
        ("reader_enter", "0"),
        ("reader_exit", "0"),
        ("reader_exit_downgraded", "0"),
        ("reader_exit_at_zero", "-22"),
        ("writer_enter_again", "-114"),
        ("writer_downgrade_again", "0"),
        ("reader_exit_last", "0"),
        ("range_unmark", "0"),
    ] {
        assert_eq!(field(&out, key), want, "{key}:\n{out}\n{err}");
    }
    assert!(err.contains("0 kernel BUG(s), 0 warning(s)"), "{err}");
}

/// Two processes under one `nrt-sim driver` see one driver: the second's mark
/// of a core the first holds is EBUSY, and the refusal names the holder.
#[test]
fn a_second_process_cannot_mark_a_core_the_first_holds() {
    need_user_notif!();
    let p = probe().to_str().unwrap();
    let o = driver(&["--verbose"], &[p, "twoproc"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "stdout:\n{out}\nstderr:\n{err}");
    assert_eq!(field(&out, "child_marked"), "y");
    assert_eq!(field(&out, "parent_mark"), "-16 max 0");
    assert_eq!(field(&out, "pid_state_dump"), "0");
    let child = field(&out, "child_pid");
    assert!(err.contains(&format!("held: nc0: pid {child}")), "{err}");
    assert!(err.contains(&format!("RANGE-7: nc 0 is marked by pid {child}")), "{err}");
}

/// A write-only ("free access") descriptor (docs/driver-conformance.md GEN-4,
/// RANGE-6), DEVICE_GET_ALL_APPS_INFO (APPS-1) and the driver's answers to an
/// argument it cannot copy in (GEN-3), through the real seccomp path.
#[test]
fn a_write_only_descriptor_reaches_only_the_misc_requests_and_its_marks_go_with_the_process() {
    need_user_notif!();
    let p = probe().to_str().unwrap();
    let o = driver(&["--verbose"], &[p, "free"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "stdout:\n{out}\nstderr:\n{err}");
    for (key, want) in [
        ("wronly_open", "ok"),
        ("wronly_driver_info", "0"),
        ("wronly_compatible_version", "0"),
        ("wronly_device_info", "-22"),
        ("wronly_writer_enter", "-22"),
        ("wronly_range_mark", "0 bitmap 1"),
        ("rdwr_writer_enter", "0"),
        // The caller is the one attached process, writer of core 0 with uuid 0x5A...
        ("apps_info", "0 size 1 self 1 lock_map 1 uuid 90"),
        ("wronly_apps_info", "-22"),
        // 48-byte struct, 16 bytes readable: copy_from_user leaves 32.
        ("mem_alloc_straddling", "32"),
        ("queue_init_unreadable", "-13"),
        ("wronly_queue_init_unreadable", "-22"),
        ("wronly_range_unmark", "0"),
        ("child_wronly_marks", "y"),
        ("mark_after_wronly_child", "0"),
        ("child_rdwr_marks", "y"),
        ("mark_after_rdwr_child", "-16"),
    ] {
        assert_eq!(field(&out, key), want, "{key}:\n{out}\n{err}");
    }
    assert!(err.contains("GEN-4: a write-only (free access) descriptor"), "{err}");
    // The child that marked core 0 through the inherited O_RDWR descriptor is gone, its mark stays.
    assert!(err.contains("RANGE-4: no 1 free consecutive cores in 0..=0"), "{err}");
}

/// MMAP-1..5 and FOPS-1..4 through the real seccomp path: only a whole chunk
/// maps, from its start (part of one, its middle, two, offset 0: EPERM; the
/// middle with the chunk's length a conformance violation, exit 71); read,
/// write, pwrite, ftruncate, fallocate on the node get the kernel's errno
/// and change nothing, on dups of it too; the modes' EACCES and EBADF; a
/// file that is not the device is served natively in the reserved numbers.
#[test]
fn the_node_maps_only_whole_chunks_and_refuses_read_and_write() {
    need_user_notif!();
    let p = probe().to_str().unwrap();
    for (flags, code) in [(&[][..], 71), (&["--log-violations"][..], 0)] {
        let o = driver(flags, &[p, "fops"]);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(code), "{flags:?}:\nstdout:\n{out}\nstderr:\n{err}");
        for (key, want) in [
            ("fd_in_range", "1"),
            ("adjacent", "1"),
            ("map_whole", "ok"),
            ("map_part", "EPERM"),
            ("map_middle", "EPERM"),
            ("map_middle_whole_length", "EPERM"),
            ("map_across_two", "EPERM"),
            ("map_offset_0", "EPERM"),
            ("write", "EINVAL"),
            ("read", "EINVAL"),
            ("pwrite", "EINVAL"),
            ("ftruncate", "EINVAL"),
            ("fallocate", "ENODEV"),
            ("dup_in_range", "1"),
            ("dup_write", "EINVAL"),
            ("dupfd_in_range", "1 cloexec 1"),
            ("dupfd_write", "EINVAL"),
            ("dup_map_part", "EPERM"),
            ("unchanged", "1"),
            ("ro_map_write", "EACCES"),
            ("ro_map_read", "ok"),
            ("ro_write", "EBADF"),
            ("wo_map", "EACCES"),
            ("wo_read", "EBADF"),
            ("wo_write", "EINVAL"),
            ("other_in_range", "ok ok y"),
        ] {
            assert_eq!(field(&out, key), want, "{flags:?} {key}:\n{out}\n{err}");
        }
        assert!(err.contains("MMAP-5: offset") && err.contains("1 conformance violation(s)"), "{flags:?}: {err}");
    }
}
