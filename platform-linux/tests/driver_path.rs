//! The third way to run the main job: every scenario through the binding's
//! whole bring-up path (`nrtctl run --device /dev/neuron0`, and the C ABI's
//! session), against the simulator's driver model (`nrt-sim driver`), which
//! serves the real ioctls of the unmodified process through seccomp user
//! notification. Each must give exactly the statuses of `nrt-sim run`.
//!
//! Where the kernel offers no seccomp user notification, or `strace` is not
//! installed, the test prints SKIPPED with the reason and checks nothing else.
#![cfg(feature = "sim")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;

fn nrtctl() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_nrtctl"))
}

macro_rules! need_user_notif {
    () => {
        if let Err(why) = common::user_notif() {
            common::skip(&format!("nrt-sim driver cannot run here: {why}"));
            return;
        }
    };
}

fn text(o: &Output) -> (String, String) {
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

/// `scenario -> (got status code, return code)` from a `--scenario all` table.
fn table(out: &str) -> BTreeMap<String, (u32, u8)> {
    let mut rows = BTreeMap::new();
    for l in out.lines() {
        let w: Vec<&str> = l.split_whitespace().collect();
        // name, expected code, expected name, got code, got name, rc, result
        if w.len() == 7 && (w[6] == "PASS" || w[6] == "FAIL") {
            if let (Ok(code), Ok(rc)) = (w[3].parse(), w[5].parse()) {
                rows.insert(w[0].to_string(), (code, rc));
            }
        }
    }
    rows
}

fn driver(sim: &Path, flags: &[&str], command: &[&str]) -> Output {
    Command::new(sim).arg("driver").args(flags).arg("--").args(command).output().expect("nrt-sim runs")
}

#[test]
fn every_scenario_through_nrtctl_run_under_the_driver_model_gives_the_status_of_nrt_sim_run() {
    need_user_notif!();
    let sim = common::nrt_sim();
    let ctl = nrtctl();
    let direct = Command::new(&sim).args(["run", "--scenario", "all"]).output().unwrap();
    let (dout, derr) = text(&direct);
    assert!(direct.status.success(), "nrt-sim run --scenario all:\n{dout}\n{derr}");
    let want = table(&dout);
    assert!(want.len() >= 22, "{dout}");
    for json in [false, true] {
        let mut cmd = vec![ctl.to_str().unwrap(), "run", "--device", "/dev/neuron0", "--timeout-s", "1"];
        if json {
            cmd.push("--json");
        }
        let o = driver(&sim, &["--scenario", "all"], &cmd);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(0), "json {json}:\n{out}\n{err}");
        let got = table(&out);
        // Every scenario but barrier-300s (300 s of real time), which says why.
        assert!(out.contains("barrier-300s") && out.contains("SKIPPED"), "{out}");
        let mut expected = want.clone();
        expected.remove("barrier-300s");
        assert_eq!(got, expected, "json {json}: the driver path against nrt-sim run\n{out}\n{err}");
        assert!(!err.contains("kernel BUG"), "{err}");
    }
}

#[test]
fn the_c_abi_session_runs_every_scenario_under_the_driver_model() {
    need_user_notif!();
    let sim = common::nrt_sim();
    let lib =
        common::cargo_build(&["-p", "nrt-linux", "--lib", "--no-default-features"], "c-abi").join("libnrt_linux.a");
    let prog = std::env::temp_dir().join(format!("nrt-c-session-driver-{}", std::process::id()));
    common::compile_c("session.c", &lib, &prog);
    // DEVICE, cores 0 and ring entries 0 (the model's), a 1 s harvest budget.
    let o = driver(&sim, &["--scenario", "all"], &[prog.to_str().unwrap(), "/dev/neuron0", "0", "0", "1"]);
    let _ = std::fs::remove_file(&prog);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    let direct = Command::new(&sim).args(["run", "--scenario", "all"]).output().unwrap();
    let mut want = table(&text(&direct).0);
    want.remove("barrier-300s");
    assert_eq!(table(&out), want, "{out}\n{err}");
}

/// The name of every Neuron ioctl, `open` of the device and `close` of its
/// descriptor in an `strace -f` log, in order. The process's write-only
/// descriptor of the node (the one the range marks go through) is told apart:
/// `open O_WRONLY`, each request on it with ` (O_WRONLY)` after its name,
/// `close O_WRONLY`.
fn calls(log: &str) -> Vec<String> {
    let mut v = Vec::new();
    let mut dev_fd: Option<String> = None;
    let mut wo_fd: Option<String> = None;
    for l in log.lines() {
        if let Some(at) = l.find("openat(") {
            if l[at..].contains("\"/dev/neuron0\"") {
                if let Some(fd) = l.rsplit("= ").next() {
                    let fd = fd.trim().to_string();
                    if l[at..].contains("O_WRONLY") {
                        wo_fd = Some(fd);
                        v.push("open O_WRONLY".to_string());
                    } else {
                        dev_fd = Some(fd);
                        v.push("open".to_string());
                    }
                }
            }
        } else if let Some(at) = l.find("ioctl(") {
            // ioctl(3, _IOC(_IOC_READ, 0x4e, 0x6e, 0x18), 0x7ff...) = 0
            let rest = &l[at + 6..];
            let on_wo = wo_fd.as_ref().is_some_and(|fd| rest.starts_with(&format!("{fd},")));
            let Some(ioc) = rest.find("_IOC(").map(|i| &rest[i + 5..]) else { continue };
            let parts: Vec<&str> = ioc.split(',').map(str::trim).collect();
            if parts.len() < 4 || parts[1] != "0x4e" {
                continue;
            }
            let dir = match parts[0] {
                "_IOC_READ" => 2u32,
                "_IOC_WRITE" => 1,
                "_IOC_READ|_IOC_WRITE" => 3,
                _ => 0,
            };
            let hex = |s: &str| u32::from_str_radix(s.trim_start_matches("0x").trim_end_matches(')'), 16).unwrap_or(0);
            let code = (dir << 30) | (hex(parts[3]) << 16) | (0x4E << 8) | hex(parts[2]);
            let name = nrt_linux::ioctl::request_name(code).unwrap_or("unknown");
            v.push(if on_wo { format!("{name} (O_WRONLY)") } else { name.to_string() });
        } else if let Some(at) = l.find("close(") {
            let arg = &l[at + 6..];
            if dev_fd.as_ref().is_some_and(|fd| arg.starts_with(&format!("{fd})"))) {
                v.push("close".to_string());
                dev_fd = None;
            } else if wo_fd.as_ref().is_some_and(|fd| arg.starts_with(&format!("{fd})"))) {
                v.push("close O_WRONLY".to_string());
                wo_fd = None;
            }
        }
    }
    v
}

#[test]
fn strace_shows_the_bring_up_requests_in_the_contract_order() {
    need_user_notif!();
    if Command::new("strace").arg("-V").output().is_err() {
        common::skip_missing_tool("strace", "strace is not installed (cargo xtask ci installs it with apt)");
        return;
    }
    let sim = common::nrt_sim();
    let ctl = nrtctl();
    let log = std::env::temp_dir().join(format!("nrt-driver-strace-{}", std::process::id()));
    let o = driver(
        &sim,
        &["--scenario", "healthy-2core"],
        &[
            "strace",
            "-f",
            "-e",
            "trace=openat,ioctl,close",
            "-o",
            log.to_str().unwrap(),
            ctl.to_str().unwrap(),
            "run",
            "--device",
            "/dev/neuron0",
            "--timeout-s",
            "1",
        ],
    );
    let (out, err) = text(&o);
    let trace = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}\n{trace}");
    assert!(out.contains("status: 0 NRT_SUCCESS"), "{out}");
    // The staged copy ran through the mapped rings: the model's device executed it.
    assert!(out.contains("4096 B copy verified"), "{out}");
    let seq = calls(&trace);
    // docs/driver-model.md, "The bring-up sequence": the first occurrence of each
    // step, in order, then the teardown after the last kickoff.
    let order = [
        "open",
        "NEURON_IOCTL_DRIVER_INFO_GET",
        "NEURON_IOCTL_COMPATIBLE_VERSION",
        "NEURON_IOCTL_DEVICE_INFO",
        "NRT_SIM_IOCTL_HINTS",
        "open O_WRONLY",
        "NEURON_IOCTL_CRWL_NC_RANGE_MARK (O_WRONLY)",
        "NEURON_IOCTL_NC_RESET",
        "NEURON_IOCTL_NC_RESET_READY",
        "NEURON_IOCTL_CRWL_WRITER_ENTER",
        "NEURON_IOCTL_MEM_ALLOC_V2MT",
        "NEURON_IOCTL_MEM_GET_EXTENDED_INFO",
        "NEURON_IOCTL_DMA_QUEUE_INIT",
        "NEURON_IOCTL_NOTIFICATIONS_INIT_V2",
        "NEURON_IOCTL_CRWL_WRITER_DOWNGRADE",
        "NEURON_IOCTL_DMA_QUEUE_COPY_START",
        "NEURON_IOCTL_SEMAPHORE_INCREMENT",
        "NEURON_IOCTL_MEM_FREE",
        "NEURON_IOCTL_DMA_QUEUE_RELEASE",
        "NEURON_IOCTL_CRWL_READER_EXIT",
        "NEURON_IOCTL_CRWL_NC_RANGE_UNMARK (O_WRONLY)",
        "close O_WRONLY",
        "close",
    ];
    let firsts: Vec<usize> = order
        .iter()
        .map(|name| seq.iter().position(|c| c == name).unwrap_or_else(|| panic!("no {name} in {seq:?}")))
        .collect();
    assert!(firsts.windows(2).all(|w| w[0] < w[1]), "out of order: {:?}\n{seq:?}", order.iter().zip(&firsts));
    // Two cores: one mark, two writers entered and downgraded, two readers
    // left, one unmark; no reader enter (the downgrade makes the reader); two
    // kickoffs; one copy start.
    let count = |name: &str| seq.iter().filter(|c| *c == name).count();
    assert_eq!(count("NEURON_IOCTL_CRWL_NC_RANGE_MARK (O_WRONLY)"), 1, "{seq:?}");
    assert_eq!(count("NEURON_IOCTL_CRWL_WRITER_ENTER"), 2, "{seq:?}");
    assert_eq!(count("NEURON_IOCTL_CRWL_WRITER_DOWNGRADE"), 2, "{seq:?}");
    assert_eq!(count("NEURON_IOCTL_CRWL_READER_ENTER"), 0, "{seq:?}");
    assert_eq!(count("NEURON_IOCTL_CRWL_READER_EXIT"), 2, "{seq:?}");
    assert_eq!(count("NEURON_IOCTL_CRWL_NC_RANGE_UNMARK (O_WRONLY)"), 1, "{seq:?}");
    // One write-only descriptor, opened once, closed once; the marks alone go
    // through it (every other request there would be EINVAL on the driver:
    // neuron_cdev.c `ncdev_misc_ioctl`), and none goes through the other.
    assert_eq!((count("open O_WRONLY"), count("close O_WRONLY")), (1, 1), "{seq:?}");
    let on_wo: Vec<&String> = seq.iter().filter(|c| c.ends_with(" (O_WRONLY)")).collect();
    assert_eq!(
        on_wo,
        ["NEURON_IOCTL_CRWL_NC_RANGE_MARK (O_WRONLY)", "NEURON_IOCTL_CRWL_NC_RANGE_UNMARK (O_WRONLY)"],
        "{seq:?}"
    );
    assert_eq!((count("NEURON_IOCTL_CRWL_NC_RANGE_MARK"), count("NEURON_IOCTL_CRWL_NC_RANGE_UNMARK")), (0, 0));
    assert_eq!(count("NEURON_IOCTL_SEMAPHORE_INCREMENT"), 2, "{seq:?}");
    assert_eq!(count("NEURON_IOCTL_DMA_QUEUE_COPY_START"), 1, "{seq:?}");
    // Five chunks allocated (two rings, the copy buffer, the self-test copy's
    // source and destination), three freed: the self-test memory first, then
    // the copy buffer after the queue's release; the two ring chunks are left
    // to close (the queue stays programmed on them until then).
    assert_eq!((count("NEURON_IOCTL_MEM_ALLOC_V2MT"), count("NEURON_IOCTL_MEM_FREE")), (5, 3), "{seq:?}");
    // Teardown comes after the inference: nothing is released before the last kickoff.
    let last_kick = seq.iter().rposition(|c| c == "NEURON_IOCTL_SEMAPHORE_INCREMENT").unwrap();
    let first_release = seq.iter().position(|c| c == "NEURON_IOCTL_DMA_QUEUE_RELEASE").unwrap();
    assert!(last_kick < first_release, "{seq:?}");
    assert!(!seq.iter().any(|c| c == "unknown"), "a request no table names: {seq:?}");
}

/// The pid of a descendant of `root` whose command is `comm`, if any.
fn descendant(root: u32, comm: &str) -> Option<u32> {
    let stat = |pid: u32| std::fs::read_to_string(format!("/proc/{pid}/stat")).ok();
    let ppid = |pid: u32| -> Option<u32> {
        let s = stat(pid)?;
        let rest = &s[s.rfind(')')? + 2..];
        rest.split_whitespace().nth(1)?.parse().ok()
    };
    for e in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        if !std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == comm) {
            continue;
        }
        let mut p = pid;
        for _ in 0..16 {
            match ppid(p) {
                Some(q) if q == root => return Some(pid),
                Some(q) if q > 1 => p = q,
                _ => break,
            }
        }
    }
    None
}

/// Whether process `pid` has the device file (the model's memfd) mapped: its
/// bring-up has claimed its cores and mapped its rings.
fn mapped_device(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/maps")).is_ok_and(|m| m.contains("memfd:"))
}

/// Two `nrtctl run` on the same cores under one `nrt-sim driver`: the first
/// holds the cores in the 300 s barrier (its budget 10 s); the second starts
/// once the first has mapped its rings (a bounded wait), and the first is then
/// stopped. Returns the second's output, the supervisor's stderr (where the
/// second's error is) and the first's pid.
fn two_runs_on_the_same_cores() -> (String, String, String) {
    let sim = common::nrt_sim();
    let ctl = nrtctl();
    let dir =
        std::env::temp_dir().join(format!("nrt-two-runs-{}-{:?}", std::process::id(), std::thread::current().id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (first_out, first_pid) = (dir.join("first"), dir.join("first.pid"));
    let script = r#"
        "$0" run --device /dev/neuron0 --timeout-s 10 >"$1" 2>&1 &
        first=$!
        echo "$first" >"$2"
        i=0
        while [ $i -lt 400 ] && ! grep -q 'memfd:' /proc/$first/maps 2>/dev/null; do i=$((i+1)); sleep 0.05; done
        "$0" run --device /dev/neuron0 --timeout-s 1
        echo "second exit $?"
        kill $first
        wait $first
        exit 0
    "#;
    let o = driver(
        &sim,
        &["--scenario", "barrier-300s", "--limit-s", "60"],
        &["sh", "-c", script, ctl.to_str().unwrap(), first_out.to_str().unwrap(), first_pid.to_str().unwrap()],
    );
    let (out, err) = text(&o);
    let pid = std::fs::read_to_string(&first_pid).unwrap_or_default().trim().to_string();
    let _ = std::fs::remove_dir_all(&dir);
    (out, err, pid)
}

/// The second of two runs on the same cores fails at once (exit 1, before any
/// reset or writer lock) with the range mark's EBUSY, naming the cores.
#[test]
fn a_second_run_on_held_cores_fails_at_once_with_ebusy() {
    need_user_notif!();
    let (out, err, pid) = two_runs_on_the_same_cores();
    assert!(out.contains("second exit 1"), "{out}\n{err}");
    assert!(!pid.is_empty(), "{out}\n{err}");
    assert!(
        err.contains("NEURON_IOCTL_CRWL_NC_RANGE_MARK on /dev/neuron0 failed: EBUSY")
            && err.contains("cores 0-1 are held by"),
        "{err}"
    );
}

/// The second's error names the first's pid and command, which the binding
/// asks the driver with `DEVICE_GET_ALL_APPS_INFO`.
#[test]
fn a_second_run_on_held_cores_names_the_first_pid() {
    need_user_notif!();
    let (out, err, pid) = two_runs_on_the_same_cores();
    assert!(out.contains("second exit 1"), "{out}\n{err}");
    assert!(!pid.is_empty(), "{out}\n{err}");
    assert!(err.contains(&format!("cores 0-1 are held by pid {pid} (nrtctl)")), "pid {pid}:\n{err}");
}

/// A second session of one process on the core its first holds is refused
/// with the range mark's EBUSY, and the error names this process (its pid and
/// command), not "another process"; one core is "core 0 is held".
#[test]
fn a_second_session_of_one_process_names_this_process_as_the_holder() {
    need_user_notif!();
    let sim = common::nrt_sim();
    let lib =
        common::cargo_build(&["-p", "nrt-linux", "--lib", "--no-default-features"], "c-abi").join("libnrt_linux.a");
    let prog = std::env::temp_dir().join(format!("two-sessions-{}", std::process::id()));
    common::compile_c("two_sessions.c", &lib, &prog);
    let o = driver(&sim, &["--limit-s", "60"], &[prog.to_str().unwrap(), "/dev/neuron0"]);
    let _ = std::fs::remove_file(&prog);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    let pid = out.lines().find_map(|l| l.strip_prefix("pid ")).unwrap_or_else(|| panic!("no pid: {out}\n{err}"));
    // The command is the file name, as the kernel keeps it (15 bytes).
    let comm: String = format!("two-sessions-{}", std::process::id()).chars().take(15).collect();
    assert!(
        out.contains("EBUSY") && out.contains(&format!("core 0 is held by this process, pid {pid} ({comm})")),
        "{out}\n{err}"
    );
    assert!(!out.contains("another process") && !out.contains(" are held"), "{out}\n{err}");
}

/// Holds a process stopped (`SIGSTOP`) until dropped (`SIGCONT`).
struct Stopped(u32);

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-CONT", &self.0.to_string()]).status();
    }
}

/// The model killed mid-run (its supervisor SIGKILLed while `nrtctl run` waits
/// in the 300 s barrier with a 20 s budget): every later call of the device
/// file fails, and the run ends with a device-gone error instead of spinning
/// to NRT_TIMEOUT; the process exits by itself (every wait below is bounded).
/// The supervisor's reaper, which would kill nrtctl with it, is held stopped
/// meanwhile, so that nrtctl lives on as a runtime whose driver died would.
#[test]
fn a_driver_killed_mid_run_ends_the_harvest_with_device_gone() {
    need_user_notif!();
    let sim = common::nrt_sim();
    let ctl = nrtctl();
    let out_file = std::env::temp_dir().join(format!("nrt-gone-{}", std::process::id()));
    let _ = std::fs::remove_file(&out_file);
    // nrtctl is a descendant of the supervisor (reaper, sh), its output in a
    // file, so that its result can be read once the supervisor is gone.
    let script = r#""$0" run --device /dev/neuron0 --timeout-s 20 >"$1" 2>&1; echo "exit $?" >>"$1""#;
    let mut child = Command::new(&sim)
        .args(["driver", "--scenario", "barrier-300s", "--limit-s", "60", "--", "sh", "-c", script])
        .arg(&ctl)
        .arg(&out_file)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut nrtctl_pid = None;
    for _ in 0..400 {
        nrtctl_pid = descendant(child.id(), "nrtctl").filter(|p| mapped_device(*p));
        if nrtctl_pid.is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let Some(pid) = nrtctl_pid else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("nrtctl never mapped the device under nrt-sim driver");
    };
    let Some(reaper) = descendant(child.id(), "nrt-sim-reaper") else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("no nrt-sim-reaper under the supervisor");
    };
    if !Command::new("kill").args(["-STOP", &reaper.to_string()]).status().is_ok_and(|s| s.success()) {
        let _ = child.kill();
        let _ = child.wait();
        panic!("kill -STOP {reaper} (the reaper) failed");
    }
    let held = Stopped(reaper);
    // Past the bring-up (milliseconds), into the barrier wait.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    child.kill().unwrap();
    child.wait().unwrap();
    let mut log = String::new();
    for _ in 0..600 {
        log = std::fs::read_to_string(&out_file).unwrap_or_default();
        if log.contains("nrtctl run:") || log.contains("status:") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let mut alive = true;
    for _ in 0..200 {
        alive = std::path::Path::new(&format!("/proc/{pid}")).exists()
            && !std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default().contains(") Z ");
        if !alive {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    if alive {
        // Leave nothing running: the process this test started.
        let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
    }
    // Resumed, the reaper finds its supervisor gone and ends what is left of the tree.
    drop(held);
    let _ = std::fs::remove_file(&out_file);
    assert!(!alive, "nrtctl {pid} still running after the driver was killed:\n{log}");
    assert!(log.contains("is gone") && log.contains("calls of the device file failed in a row"), "{log}");
    assert!(!log.contains("NRT_TIMEOUT"), "{log}");
}

/// `(status, return code, notes)` from `nrtctl run --json`'s output.
fn json_status(out: &str) -> Option<(u32, u8, String)> {
    let v: serde_json::Value = serde_json::from_str(out.trim()).ok()?;
    let status = u32::try_from(v["status"].as_u64()?).ok()?;
    let rc = u8::try_from(v["return_code"].as_u64()?).ok()?;
    Some((status, rc, v["device"]["log"].to_string()))
}

/// On a real driver (the simulator's hint query refused), every scenario on
/// sunda and cayman ends with its status, or with the real path's named
/// difference where the fact it needs has no public register; the host
/// trigger and the INTC cause are never guessed, and the inference says so.
#[test]
fn every_scenario_on_the_real_driver_path_gives_its_status_or_its_named_difference() {
    need_user_notif!();
    let (sim, ctl) = (common::nrt_sim(), nrtctl());
    let mut wrong = Vec::new();
    for arch in ["sunda", "cayman"] {
        for l in nrt_abi::sim::SCENARIO_LABELS {
            let (cores, ring) = (l.cores.to_string(), l.ring_entries.to_string());
            let run = [ctl.to_str().unwrap(), "run", "--device", "/dev/neuron0", "--timeout-s", "1", "--json"];
            let shape = ["--cores", &cores, "--ring-entries", &ring];
            let cmd: Vec<&str> = run.iter().chain(shape.iter()).copied().collect();
            let o = driver(&sim, &["--no-sim-hints", "--scenario", l.name, "--arch", arch], &cmd);
            let (out, err) = text(&o);
            assert!(err.contains(", 0 kernel BUG(s), 0 warning(s)"), "{arch} {}:\n{err}", l.name);
            let (want, want_rc) = l.real_path.map_or((l.expected, l.expected_rc), |r| (r.expected, r.expected_rc));
            match json_status(&out) {
                Some((st, rc, log)) => {
                    if (st, rc) != (want.code(), want_rc) {
                        wrong.push(format!("{arch} {}: got {st} rc {rc}, want {} rc {want_rc}", l.name, want.code()));
                    }
                    assert!(log.contains("host trigger is not written"), "{arch} {}: {log}", l.name);
                    if l.real_path.is_some_and(|r| r.why.contains("INTC")) {
                        assert!(log.contains("INTC"), "{arch} {}: the notes say the INTC was not read: {log}", l.name);
                    }
                }
                None => wrong.push(format!("{arch} {}: no status in\n{out}\n{err}", l.name)),
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Two processes on disjoint cores of one device (the device's cores 0 and 1:
/// `NEURON_RT_VISIBLE_CORES=0` and `=1` on sunda, `=6` and `=7` on cayman,
/// through the driver's core map), 100 inferences each at once under one
/// `nrt-sim driver`, on sunda and on cayman: each stages on its own core's
/// engine, so every copy is verified, every status is NRT_SUCCESS and the
/// model warns of nothing.
#[test]
fn two_processes_on_disjoint_cores_run_concurrently_and_cleanly() {
    need_user_notif!();
    let (sim, ctl) = (common::nrt_sim(), nrtctl());
    for (arch, first, second) in [("sunda", "0", "1"), ("cayman", "6", "7")] {
        let dir = std::env::temp_dir().join(format!("nrt-disjoint-{arch}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let script = r#"
            NEURON_RT_VISIBLE_CORES=$2 "$0" run --timeout-s 5 --inferences 100 --json >"$1/core0" 2>"$1/err0" &
            a=$!
            NEURON_RT_VISIBLE_CORES=$3 "$0" run --timeout-s 5 --inferences 100 --json >"$1/core1" 2>"$1/err1"
            b=$?
            wait $a
            echo "exits $? $b"
        "#;
        let flags = ["--scenario", "healthy-2core", "--arch", arch, "--limit-s", "100"];
        let args = ["sh", "-c", script, ctl.to_str().unwrap(), dir.to_str().unwrap(), first, second];
        let o = driver(&sim, &flags, &args);
        let (out, err) = text(&o);
        assert!(out.contains("exits 0 0"), "{arch}:\n{out}\n{err}");
        assert!(
            err.contains(", 0 warning(s)") && err.contains(", 0 kernel BUG(s)"),
            "{arch}: the model warned:\n{err}"
        );
        for core in ["core0", "core1"] {
            let body = std::fs::read_to_string(dir.join(core)).unwrap();
            let runs: Vec<serde_json::Value> =
                serde_json::Deserializer::from_str(&body).into_iter().collect::<Result<_, _>>().unwrap();
            assert_eq!(runs.len(), 100, "{arch} {core}:\n{body}");
            for (i, r) in runs.iter().enumerate() {
                assert_eq!(r["status"], 0, "{arch} {core} run {i}: {r}");
                assert_eq!(r["first_core"], if core == "core0" { 0 } else { 1 }, "{arch} {core} run {i}: {r}");
                assert_eq!(r["staging"]["copy_verified"], true, "{arch} {core} run {i}: {r}");
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// `--trace /dev/neuron0` under the driver model: the node has no `write`
/// (FOPS-2, docs/driver-conformance.md), so the trace fails, naming the file
/// and EINVAL, and nothing is written into the device's memory.
#[test]
fn a_trace_written_to_the_device_node_fails_naming_the_file() {
    need_user_notif!();
    let o = driver(&common::nrt_sim(), &[], &[nrtctl().to_str().unwrap(), "run", "--trace", "/dev/neuron0"]);
    let (out, err) = text(&o);
    assert_ne!(o.status.code(), Some(0), "the trace was written into the device:\n{out}\n{err}");
    assert!(err.contains("writing the trace to /dev/neuron0: write failed") && err.contains("(EINVAL)"), "{err}");
    assert!(err.contains("0 kernel BUG(s)"), "{err}");
}
