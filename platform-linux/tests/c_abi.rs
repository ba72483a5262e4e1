//! A C program, compiled with the system C compiler, links the static library and
//! harvests inferences through the C ABI.

use std::process::Command;

mod common;

#[test]
fn a_c_program_links_the_staticlib_and_harvests() {
    // Without the `sim` feature: the C library carries no simulator.
    let lib =
        common::cargo_build(&["-p", "nrt-linux", "--lib", "--no-default-features"], "c-abi").join("libnrt_linux.a");
    assert!(lib.exists(), "{} not built", lib.display());
    let out = std::env::temp_dir().join(format!("nrt-c-harvest-{}", std::process::id()));
    common::compile_c("harvest.c", &lib, &out);
    let run = Command::new(&out).output().unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    println!("{stdout}");
    let _ = std::fs::remove_file(&out);
    assert!(run.status.success(), "C harvest failed:\n{stdout}\n{}", String::from_utf8_lossy(&run.stderr));
    assert!(stdout.contains("healthy (nrt_wait)                 0 NRT_SUCCESS"), "{stdout}");
    assert!(stdout.contains("1204 NRT_EXEC_SW_NQ_OVERFLOW"), "{stdout}");
    assert!(stdout.contains("no clock (nrt_wait)                2 NRT_INVALID"), "{stdout}");
    assert!(stdout.contains("stuck clock (nrt_wait)             2 NRT_INVALID"), "{stdout}");
    assert!(
        stdout.contains("event clock_stalled: nrt_wait: the platform's now_ns returned no value past 7 ns"),
        "{stdout}"
    );
}

/// The bring-up session from C, without a device: the NULL checks hold, and the
/// open fails naming the call, the path and the errno (the end-to-end run is
/// under `nrt-sim driver`: `docs/driver-model.md`).
#[test]
fn the_c_session_names_the_failed_call_without_a_device() {
    let lib =
        common::cargo_build(&["-p", "nrt-linux", "--lib", "--no-default-features"], "c-abi").join("libnrt_linux.a");
    let out = std::env::temp_dir().join(format!("nrt-c-session-{}", std::process::id()));
    common::compile_c("session.c", &lib, &out);
    let run = Command::new(&out).arg("/dev/null").output().unwrap();
    let missing = Command::new(&out).arg("/nonexistent/neuron0").output().unwrap();
    let usage = Command::new(&out).output().unwrap();
    let _ = std::fs::remove_file(&out);
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{err}");
    assert!(
        err.contains("session: nrt_session_open /dev/null: NEURON_IOCTL_DRIVER_INFO_GET on /dev/null failed: ENOTTY"),
        "{err}"
    );
    let err = String::from_utf8_lossy(&missing.stderr);
    assert_eq!(missing.status.code(), Some(1), "{err}");
    assert!(err.contains("open on /nonexistent/neuron0 failed: ENOENT"), "{err}");
    assert_eq!(usage.status.code(), Some(2));
}
