//! `nrt-sim serve --shm PATH` on one side, `nrtctl harvest --shm PATH` on the
//! other: the device played over a shared-memory file and harvested through the
//! Linux binding's mappings (real mmap, atomic slot reads, HEAD through the mapped
//! BAR, real threads). First in one process (the server on a thread), then as two
//! processes (the two binaries).

use std::io::Read as _;
use std::os::unix::ffi::OsStringExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nrt_core::exec::{Step, TpbEngState};
use nrt_core::NrtStatus;
use nrt_linux::harvest::{HarvestError, Harvester, DEAD_DEVICE_BOUND};
use nrt_linux::time::DelayKind;
use nrt_sim::serve::{serve, ServeConfig, ServeError, ServeSummary, StopReason};
use nrt_sim::shm::ShmError;
use nrt_sim::{Fault, SimConfig};

mod common;

/// Every wait in these tests is bounded by this.
const BOUND: Duration = Duration::from_secs(20);

fn shm_path(name: &str) -> PathBuf {
    let dir = Path::new("/dev/shm");
    let dir = if dir.is_dir() { dir.to_path_buf() } else { std::env::temp_dir() };
    dir.join(format!("nrt-shm-test-{}-{name}", std::process::id()))
}

fn serve_thread(
    path: &Path,
    faults: &[&str],
    ring_entries: u32,
    n: u32,
) -> JoinHandle<Result<ServeSummary, ServeError>> {
    let cfg = ServeConfig {
        path: path.to_path_buf(),
        sim: SimConfig {
            ring_entries,
            faults: faults.iter().map(|f| Fault::parse(f).unwrap()).collect(),
            ..SimConfig::default()
        },
        inferences: Some(n),
        idle_timeout: Some(BOUND),
    };
    std::thread::spawn(move || serve(&cfg, &mut std::io::sink()))
}

/// Serve `n` inferences with `faults` on a thread, harvest them here.
fn play(name: &str, faults: &[&str], ring_entries: u32, n: u32, timeout_s: u32) -> Vec<nrt_sim::RunReport> {
    let path = shm_path(name);
    let server = serve_thread(&path, faults, ring_entries, n);
    let mut h = Harvester::attach(&path, BOUND).expect("attach");
    let reports: Vec<_> = (0..n).map(|_| h.harvest(timeout_s, DelayKind::Adaptive).expect("harvest")).collect();
    let summary = server.join().unwrap().expect("serve");
    assert_eq!((summary.played, summary.harvested, summary.reason), (n, n, StopReason::Done));
    assert!(!path.exists(), "the server removes its file");
    reports
}

#[test]
fn a_healthy_inference_over_shm_succeeds_with_every_engine_timed() {
    let r = play("healthy", &[], 64, 1, 5).remove(0);
    assert_eq!((r.status, r.step), (NrtStatus::Success, Step::Done(NrtStatus::Success)), "events: {:?}", r.events);
    for core in &r.cores {
        for e in &core.engines {
            assert_eq!(e.state, TpbEngState::Complete);
            let (s, t) = (e.start_us.unwrap(), e.end_us.unwrap());
            // Device timestamps mapped to the host clock by the sync point: after
            // the kickoff, and each engine runs 60 us or more.
            assert!(
                s >= r.kickoff_us && t >= s + 50,
                "core {} {:?}: {s}..{t} (kickoff {})",
                core.core,
                e.engine,
                r.kickoff_us
            );
        }
    }
    let text = nrt_sim::report::text_with_heading(&r, "test");
    assert!(text.contains("status: 0 NRT_SUCCESS") && text.contains("staging: none"), "{text}");
}

#[test]
fn a_hang_over_shm_times_out_with_5() {
    let r = play("hang", &["hang:core=1,engine=PE"], 64, 1, 1).remove(0);
    assert_eq!((r.status, r.step), (NrtStatus::Timeout, Step::failed(NrtStatus::Timeout)));
    assert!(r.elapsed_ns >= 1_000_000_000);
}

#[test]
fn a_dropped_end_with_overflow_over_shm_reads_intc_bit_29_and_gives_1204() {
    let r = play("drop-end", &["drop:core=0,engine=ACT,record=end,overflow"], 64, 1, 1).remove(0);
    assert!(matches!((r.status.code(), r.step), (1204, Step::Error(_))), "events: {:?}", r.events);
    assert!(r.cores[0].fatal.contains(&"overflow"), "{:?}", r.cores[0].fatal);
    assert!(r.events.iter().any(|e| e.to_string().contains("0x20000000")), "INTC read through the BAR: {:?}", r.events);
}

#[test]
fn status_lines_cross_the_file_nan_and_hbm() {
    let r = play("nan-hbm", &["nan:core=0", "hbm-ue:core=1"], 64, 1, 1).remove(0);
    assert_eq!(r.status.code(), 1201, "the HBM probe line read through the header: {:?}", r.events);
    assert!(r.events_of("error_record").count() == 1, "the NaN record on the error ring: {:?}", r.events);
}

#[test]
fn three_inferences_lap_small_rings_and_each_succeeds() {
    // 8-entry rings, 4 records on SP per inference: the second and third
    // inferences write across the lap boundary (phase flips) with HEAD sampled.
    for r in play("laps", &[], 8, 3, 5) {
        assert_eq!((r.status, r.step), (NrtStatus::Success, Step::Done(NrtStatus::Success)), "events: {:?}", r.events);
    }
}

#[test]
fn attach_refuses_a_missing_file_and_a_foreign_one() {
    let missing = shm_path("missing");
    match Harvester::attach(&missing, Duration::from_millis(100)) {
        Err(HarvestError::Shm(ShmError::Timeout(m))) => assert!(m.contains("not ready"), "{m}"),
        other => panic!("{other:?}"),
    }
    let foreign = shm_path("foreign");
    std::fs::write(&foreign, vec![0xA5u8; 8192]).unwrap();
    let got = Harvester::attach(&foreign, Duration::from_millis(100));
    std::fs::remove_file(&foreign).unwrap();
    match got {
        Err(HarvestError::Shm(ShmError::Corrupt(m))) => assert!(m.contains("magic"), "{m}"),
        other => panic!("{other:?}"),
    }
}

/// Build the `nrt-sim` binary. The outer `cargo test` holds the main target
/// directory, so build into the one `c_abi.rs` uses for its static library.
fn nrt_sim_binary() -> PathBuf {
    common::cargo_build(&["-p", "nrt-sim", "--bin", "nrt-sim"], "c-abi").join("nrt-sim")
}

fn wait_bounded(child: &mut Child, what: &str) -> (ExitStatus, String) {
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t0.elapsed() > BOUND {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not finish within {BOUND:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut out = String::new();
    if let Some(mut o) = child.stdout.take() {
        o.read_to_string(&mut out).unwrap();
    }
    if let Some(mut e) = child.stderr.take() {
        e.read_to_string(&mut out).unwrap();
    }
    (status, out)
}

#[test]
fn two_processes_nrt_sim_serve_and_nrtctl_harvest() {
    let sim = nrt_sim_binary();
    let path = shm_path("xproc");
    let mut server = common::spawn_server(&sim, &path, 2);
    let mut host = common::without_rt_env(Command::new(env!("CARGO_BIN_EXE_nrtctl")))
        .args(["harvest", "--inferences", "2", "--wait-s", "20", "--shm"])
        .arg(&path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("nrtctl runs");
    let (hs, hout) = wait_bounded(&mut host, "nrtctl harvest");
    let (ss, sout) = wait_bounded(&mut server, "nrt-sim serve");
    let _ = std::fs::remove_file(&path);
    println!("{hout}\n{sout}");
    assert!(hs.success(), "nrtctl harvest: {hs}\n{hout}");
    assert!(ss.success(), "nrt-sim serve: {ss}\n{sout}");
    assert_eq!(hout.matches("status: 0 NRT_SUCCESS").count(), 2, "{hout}");
    assert!(hout.contains("inference 2 of 2") && hout.contains("nrt-sim serve pid"), "{hout}");
    assert!(sout.contains("2 played, 2 harvested"), "{sout}");
}

#[test]
fn nrtctl_harvest_of_a_hang_names_the_file_the_core_and_the_engine_with_a_stamp() {
    let sim = nrt_sim_binary();
    let path = shm_path("xproc-hang");
    let mut server = common::spawn_server_with(&sim, &path, 1, &["--inject", "hang:core=1,engine=PE"]);
    let mut host = common::without_rt_env(Command::new(env!("CARGO_BIN_EXE_nrtctl")))
        .args(["harvest", "--timeout-s", "1", "--wait-s", "20", "--shm"])
        .arg(&path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("nrtctl runs");
    let (_, hout) = wait_bounded(&mut host, "nrtctl harvest");
    let _ = wait_bounded(&mut server, "nrt-sim serve");
    let _ = std::fs::remove_file(&path);
    assert!(hout.contains("status: 5 NRT_TIMEOUT"), "{hout}");
    let tail = format!(
        " nrtctl harvest: inference 1: {}: the harvest ended at its execution timeout 1 s (from flag --timeout-s): \
         status 5 NRT_TIMEOUT; core 1: started, never wrote END: PE",
        path.display()
    );
    let line = hout.lines().find(|l| l.ends_with(&tail)).unwrap_or_else(|| panic!("{hout}"));
    let pid = line.split(" pid ").nth(1).and_then(|r| r.split(' ').next()).and_then(|p| p.parse::<u32>().ok());
    assert!(line.ends_with('Z') || line.contains("Z pid "), "stamped: {line}");
    assert!(pid.is_some(), "the pid: {line}");
    // The harvest engine's own line: no device node behind the file, so the file's core.
    assert!(hout.contains("nrtctl: ERROR TDRV: core 1 PE: engines still pending after "), "{hout}");
    assert!(
        hout.contains(
            "core 1: exec_ret 5 NRT_TIMEOUT, timed out after 1000 ms (its budget): started, never wrote END: PE"
        ),
        "{hout}"
    );
}

#[test]
fn the_named_scenarios_over_shm_pass_their_own_checks() {
    // Each scenario's device served on a thread, harvested with a 1 s budget, and
    // judged by the scenario's own check. Not here: barrier-300s (300 s of real
    // time). ring-overflow's evidence includes the device's drop counter, which
    // stays with the server: only its status and return code are checked.
    let runs: Vec<_> = nrt_sim::SCENARIOS
        .iter()
        .filter(|s| s.name != "barrier-300s")
        .map(|s: &'static nrt_sim::Scenario| {
            std::thread::spawn(move || {
                let path = shm_path(&format!("scenario-{}", s.name));
                let cfg =
                    ServeConfig { path: path.clone(), sim: s.config(), inferences: Some(1), idle_timeout: Some(BOUND) };
                let server = std::thread::spawn(move || serve(&cfg, &mut std::io::sink()));
                let r = Harvester::attach(&path, BOUND).and_then(|mut h| h.harvest(1, DelayKind::Adaptive));
                let served = server.join().unwrap();
                let r = r.expect("harvest");
                served.expect("serve");
                let verdict = match s.name {
                    "ring-overflow" => {
                        if (r.status, r.return_code()) == (s.expected, s.expected_rc) {
                            Ok(())
                        } else {
                            Err(format!("{} rc {}", r.status.code(), r.return_code()))
                        }
                    }
                    _ => s.evaluate(&r).map_err(|m| m.to_string()),
                };
                (s.name, verdict)
            })
        })
        .collect();
    let failed: Vec<_> = runs.into_iter().map(|t| t.join().unwrap()).filter(|(_, v)| v.is_err()).collect();
    assert!(failed.is_empty(), "{failed:?}");
}

#[test]
fn a_c_program_harvests_the_simulator_in_another_process() {
    let sim = nrt_sim_binary();
    let lib = common::cargo_build(&["-p", "nrt-linux", "--lib"], "c-abi-sim").join("libnrt_linux.a");
    let prog = std::env::temp_dir().join(format!("nrt-c-shm-{}", std::process::id()));
    common::compile_c("shm_harvest.c", &lib, &prog);
    let path = shm_path("c-abi");
    let mut server = common::spawn_server(&sim, &path, 2);
    let mut host = common::without_rt_env(Command::new(&prog))
        .arg(&path)
        .arg("2")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (hs, hout) = wait_bounded(&mut host, "the C program");
    let (ss, sout) = wait_bounded(&mut server, "nrt-sim serve");
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(&prog);
    println!("{hout}\n{sout}");
    assert!(hs.success(), "C program: {hs}\n{hout}");
    assert!(ss.success(), "nrt-sim serve: {ss}\n{sout}");
    assert_eq!(hout.matches("return 0, status 0 NRT_SUCCESS").count(), 2, "{hout}");
}

/// `nrt-sim serve` with a 30 s barrier in another process, attached; the
/// server is SIGKILLed `after` a while by a thread that returns when it did.
fn doomed_server(name: &str, after: Duration) -> (PathBuf, Harvester, JoinHandle<Instant>) {
    let sim = nrt_sim_binary();
    let path = shm_path(name);
    let mut server = common::spawn_server_with(&sim, &path, 1, &["--inject", "barrier-delay:secs=30"]);
    let h = match Harvester::attach(&path, BOUND) {
        Ok(h) => h,
        Err(e) => {
            let _ = server.kill();
            panic!("attach: {e}");
        }
    };
    let killer = std::thread::spawn(move || {
        std::thread::sleep(after);
        server.kill().expect("SIGKILL the server");
        let t = Instant::now();
        let _ = server.wait();
        t
    });
    (path, h, killer)
}

#[test]
fn a_server_killed_in_the_barrier_wait_ends_the_harvest_with_an_error_within_the_bound() {
    let (path, mut h, killer) = doomed_server("killed", Duration::from_millis(300));
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let r = h.harvest(1, DelayKind::Adaptive);
        let _ = tx.send((r, Instant::now()));
    });
    let got = rx.recv_timeout(BOUND);
    let killed = killer.join().unwrap();
    let _ = std::fs::remove_file(&path);
    let (r, ended) = got.expect("the harvest did not end after the server was killed");
    match r {
        Err(HarvestError::DeviceGone(m)) => {
            assert!(m.contains("has not stamped its heartbeat") && m.contains("pid"), "{m}");
            assert!(m.contains("barrier"), "{m}");
            assert!(m.contains(&path.display().to_string()), "{m}");
        }
        other => panic!("expected DeviceGone, got {other:?}"),
    }
    let took = ended.saturating_duration_since(killed);
    println!("the harvest ended {took:?} after the kill");
    assert!(took <= DEAD_DEVICE_BOUND, "the harvest ended {took:?} after the kill, the bound is {DEAD_DEVICE_BOUND:?}");
}

#[test]
fn an_xu_pool_over_a_killed_server_answers_its_request_and_shuts_down_within_the_bound() {
    use nrt_core::exec::{ExecConfig, XuHealth};
    use nrt_linux::xu::XuPool;
    let (path, h, killer) = doomed_server("xu-killed", Duration::from_millis(300));
    let (mut dev, nq) = h.into_unit();
    let arch = dev.file().layout().arch;
    let cores = dev.file().layout().cores;
    dev.kickoff(cores).expect("kickoff");
    let pool = XuPool::start(vec![(dev, nq)], DelayKind::Adaptive).unwrap();
    let ticket = pool.submit(0, ExecConfig::new(arch, cores, 1)).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let status = ticket.wait();
        let health = pool.shutdown();
        let _ = tx.send((status, health, Instant::now()));
    });
    let got = rx.recv_timeout(BOUND);
    let killed = killer.join().unwrap();
    let _ = std::fs::remove_file(&path);
    let (status, health, ended) = got.expect("the pool did not answer or shut down after the server was killed");
    assert_eq!(status, NrtStatus::HwError, "the barrier proxy fails with NRT_HW_ERROR on a gone server");
    assert_eq!(health, vec![XuHealth::FatalShutdown]);
    let took = ended.saturating_duration_since(killed);
    println!("the pool answered and shut down {took:?} after the kill");
    assert!(took <= DEAD_DEVICE_BOUND, "ended {took:?} after the kill, the bound is {DEAD_DEVICE_BOUND:?}");
}

#[test]
fn a_peer_that_truncates_the_file_after_attach_does_not_crash_the_harvester() {
    let path = shm_path("truncated");
    let server = serve_thread(&path, &[], 64, 2);
    let mut h = Harvester::attach(&path, BOUND).expect("attach");
    let r = h.harvest(5, DelayKind::Adaptive).expect("harvest 1");
    assert_eq!(r.status, NrtStatus::Success);
    // A peer truncates what it finds at the path, then the device file itself.
    std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(0).unwrap();
    let shrink = h.file().file().set_len(0);
    let e = shrink.expect_err("the device file is sealed against shrinking");
    assert_eq!(e.raw_os_error(), Some(libc::EPERM), "{e}");
    // The harvester keeps working on its sealed mapping (no SIGBUS).
    let r = h.harvest(5, DelayKind::Adaptive).expect("harvest 2");
    assert_eq!((r.status, r.step), (NrtStatus::Success, Step::Done(NrtStatus::Success)), "events: {:?}", r.events);
    let summary = server.join().unwrap().expect("serve");
    assert_eq!((summary.played, summary.harvested), (2, 2));
}

/// Serve `cfg` for `n` inferences on a thread and harvest them here.
fn play_config(name: &str, sim: SimConfig, n: u32) -> Vec<nrt_sim::RunReport> {
    let path = shm_path(name);
    let cfg = ServeConfig { path: path.clone(), sim, inferences: Some(n), idle_timeout: Some(BOUND) };
    let server = std::thread::spawn(move || serve(&cfg, &mut std::io::sink()));
    let mut h = Harvester::attach(&path, BOUND).expect("attach");
    let reports: Vec<_> = (0..n).map(|_| h.harvest(5, DelayKind::Adaptive).expect("harvest")).collect();
    server.join().unwrap().expect("serve");
    reports
}

#[test]
fn each_inference_reports_its_own_tensor_counts_and_wake_ups() {
    let s = nrt_sim::scenario::find("tensor-streaming").unwrap();
    let reports = play_config("tensor-2", s.config(), 2);
    for (i, r) in reports.iter().enumerate() {
        assert_eq!(r.wakes, [(0, 1), (1, 1), (0, 2), (2, 1)], "inference {}", i + 1);
        s.evaluate(r).unwrap_or_else(|e| panic!("inference {}: {e}", i + 1));
    }
}

#[test]
fn the_wake_log_of_one_inference_is_bounded() {
    use nrt_linux::harvest::WAKE_LOG_CAP;
    use nrt_sim::program::Extra;
    let n = WAKE_LOG_CAP + 44;
    let var_ids: Vec<u16> = (0..n).map(|i| 100 + (i % 8) as u16).collect();
    let mut sim = SimConfig { ring_entries: 1024, ..SimConfig::default() };
    sim.extras.push(Extra::TensorStream { core: 0, engine: nrt_core::nq::Engine::Act, var_ids });
    let r = play_config("tensor-bounded", sim, 1).remove(0);
    assert_eq!(
        (r.status, r.step),
        (NrtStatus::Success, Step::Done(NrtStatus::Success)),
        "events: {:?}",
        r.events.len()
    );
    assert_eq!(r.events_of("tensor_completed").count(), n, "every completion was harvested");
    assert_eq!(r.wakes.len(), WAKE_LOG_CAP, "the log keeps {WAKE_LOG_CAP}");
    assert_eq!(r.wakes.last(), Some(&(7, WAKE_LOG_CAP as u32 / 8)));
    let note = r.notes.iter().map(|n| n.text.as_str()).find(|t| t.contains("wake-ups not kept"));
    assert!(note.is_some_and(|t| t.contains("44 more")), "{:?}", r.notes);
}

#[test]
fn the_c_abi_attaches_at_a_non_utf8_path_and_says_why_an_attach_failed() {
    use nrt_linux::ffi_shm::{nrt_shm_attach, nrt_shm_close, nrt_shm_harvest, nrt_shm_last_error};
    use std::ffi::{CStr, CString, OsStr};
    use std::os::unix::ffi::OsStrExt;
    let last = || {
        let p = nrt_shm_last_error();
        // SAFETY: null or a NUL-terminated string valid until the next failing nrt_shm call here.
        (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    };
    // A path that is not UTF-8.
    let mut bytes = shm_path("c-non-utf8").into_os_string().into_vec();
    bytes.extend_from_slice(b"-\xff\xfe");
    let path = PathBuf::from(OsStr::from_bytes(&bytes));
    let server = serve_thread(&path, &[], 64, 1);
    let c = CString::new(bytes.clone()).unwrap();
    // SAFETY: a NUL-terminated path.
    let shm = unsafe { nrt_shm_attach(c.as_ptr(), 20_000) };
    assert!(!shm.is_null(), "attach at a non-UTF-8 path: {:?}", last());
    let mut status = u32::MAX;
    // SAFETY: a live handle and a writable status.
    let rc = unsafe { nrt_shm_harvest(shm, 5, 1, &mut status) };
    // SAFETY: from nrt_shm_attach, not used afterwards.
    unsafe { nrt_shm_close(shm, 1) };
    assert_eq!((rc, status), (0, 0), "{:?}", last());
    server.join().unwrap().expect("serve");
    // A failed attach leaves its reason, naming the call and the path.
    let missing = CString::new(shm_path("c-missing").into_os_string().into_vec()).unwrap();
    // SAFETY: a NUL-terminated path.
    let none = unsafe { nrt_shm_attach(missing.as_ptr(), 50) };
    assert!(none.is_null());
    let m = last().expect("a reason");
    assert!(m.starts_with("nrt_shm_attach") && m.contains("c-missing") && m.contains("not ready"), "{m}");
    // SAFETY: null is refused, not dereferenced.
    assert_eq!(unsafe { nrt_shm_harvest(std::ptr::null_mut(), 1, 1, &mut status) }, -1);
    let m = last().expect("a reason");
    assert!(m.contains("nrt_shm_harvest") && m.contains("NULL"), "{m}");
}

#[test]
fn nrtctl_harvest_over_a_killed_server_exits_1_naming_the_reason() {
    let sim = nrt_sim_binary();
    let path = shm_path("nrtctl-killed");
    let mut server = common::spawn_server_with(&sim, &path, 1, &["--inject", "barrier-delay:secs=30"]);
    let t0 = Instant::now();
    while !path.exists() && t0.elapsed() < BOUND {
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut host = common::without_rt_env(Command::new(env!("CARGO_BIN_EXE_nrtctl")))
        .args(["harvest", "--timeout-s", "1", "--wait-s", "20", "--shm"])
        .arg(&path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("nrtctl runs");
    // Let it attach and kick off: it is then in the 30 s barrier wait.
    std::thread::sleep(Duration::from_millis(500));
    server.kill().unwrap();
    let killed = Instant::now();
    let _ = server.wait();
    let (hs, out) = wait_bounded(&mut host, "nrtctl harvest over a killed server");
    let took = killed.elapsed();
    let _ = std::fs::remove_file(&path);
    println!("nrtctl ended {took:?} after the kill:\n{out}");
    assert_eq!(hs.code(), Some(1), "{out}");
    assert!(out.contains("inference 1") && out.contains("is gone") && out.contains("heartbeat"), "{out}");
    // The bound, plus a process's start and exit on a loaded machine.
    assert!(took <= DEAD_DEVICE_BOUND + Duration::from_secs(1), "nrtctl ended {took:?} after the kill\n{out}");
}

#[test]
fn the_c_shm_harvest_takes_the_timeout_from_the_variable_and_refuses_bad_values() {
    let sim = nrt_sim_binary();
    let lib = common::cargo_build(&["-p", "nrt-linux", "--lib"], "c-abi-sim").join("libnrt_linux.a");
    let prog = std::env::temp_dir().join(format!("nrt-c-shm-env-{}", std::process::id()));
    common::compile_c("shm_harvest.c", &lib, &prog);
    // A bad log level: refused by nrt_shm_attach before the file is looked at.
    let (var, value) = ("NEURON_RT_LOG_LEVEL", "LOUD");
    let o = common::without_rt_env(Command::new(&prog)).args(["/nonexistent/shm", "1"]).env(var, value).output();
    let o = o.unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains(&format!("nrt_shm_attach: {var}=\"{value}\" is refused")) && err.contains("ERROR, WARNING"));
    assert!(!err.contains("not ready"), "{err}");
    // A bad timeout is not the attach's to refuse (the timeout is each
    // harvest's argument): the attach goes on to the file, with an explicit
    // timeout and with NRT_TIMEOUT_FROM_ENV alike.
    for timeout in ["5", "env"] {
        let mut c = common::without_rt_env(Command::new(&prog));
        let o = c.args(["/nonexistent/shm", "1", timeout]).env("NEURON_RT_EXEC_TIMEOUT", "5s").output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(err.contains("not ready") && !err.contains("is refused"), "{timeout}: {err}");
    }
    // NRT_TIMEOUT_FROM_ENV takes the variable; an explicit timeout beats it.
    let budget_of = |arg: &str, tag: &str, more: Option<(&str, &str)>| {
        let path = shm_path(tag);
        let mut server = common::spawn_server(&sim, &path, 1);
        let mut host = common::without_rt_env(Command::new(&prog))
            .arg(&path)
            .args(["1", arg])
            .env("NEURON_RT_EXEC_TIMEOUT", "7")
            .env("NEURON_RT_LOG_LEVEL", "INFO")
            .envs(more)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (hs, hout) = wait_bounded(&mut host, "the C program");
        if !hs.success() {
            let _ = server.kill();
        }
        let _ = wait_bounded(&mut server, "nrt-sim serve");
        let _ = std::fs::remove_file(&path);
        assert!(hs.success() && hout.contains("ok"), "{hout}");
        hout
    };
    let out = budget_of("env", "c-env", None);
    assert!(out.contains("nrt_shm_harvest: execution timeout 7 s (from variable NEURON_RT_EXEC_TIMEOUT)"), "{out}");
    let out = budget_of("3", "c-env-arg", None);
    assert!(out.contains("execution timeout 3 s (from argument timeout_s of nrt_shm_harvest)"), "{out}");
    // An explicit timeout does not read the variable: a malformed one refuses nothing.
    let out = budget_of("3", "c-env-bad-unused", Some(("NEURON_RT_EXEC_TIMEOUT", "soon")));
    assert!(out.contains("execution timeout 3 s (from argument timeout_s of nrt_shm_harvest)"), "{out}");
    assert!(!out.contains("is refused"), "{out}");
    // NRT_TIMEOUT_FROM_ENV with a malformed variable: the harvest is refused
    // (-1, nothing kicked off), naming the call, the variable and the value.
    let path = shm_path("c-env-bad-used");
    let mut server = common::spawn_server(&sim, &path, 1);
    let mut host = common::without_rt_env(Command::new(&prog))
        .arg(&path)
        .args(["1", "env"])
        .env("NEURON_RT_EXEC_TIMEOUT", "soon")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (hs, hout) = wait_bounded(&mut host, "the C program");
    let _ = server.kill();
    let _ = wait_bounded(&mut server, "nrt-sim serve");
    let _ = std::fs::remove_file(&path);
    assert_eq!(hs.code(), Some(1), "{hout}");
    assert!(
        hout.contains("nrt_shm_harvest: NEURON_RT_EXEC_TIMEOUT=\"soon\" is refused")
            && hout.contains("from 0 to 2147483647")
            && hout.contains("inference 1: return -1"),
        "{hout}"
    );
    // A core variable is not read (the server's file fixes the cores): a malformed one changes nothing.
    let out = budget_of("env", "c-env-cores", Some(("NEURON_RT_NUM_CORES", "many")));
    assert!(out.contains("execution timeout 7 s") && !out.contains("NEURON_RT_NUM_CORES"), "{out}");
    let _ = std::fs::remove_file(&prog);
}
