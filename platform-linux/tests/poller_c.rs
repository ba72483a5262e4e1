//! The poller's C ABI: its header is what cbindgen generates, and a C program
//! linking the static library harvests four lanes through one poller thread,
//! with every refusal reported through `nrt_poller_last_error` and no lane
//! callback ever run on the caller's thread.

use std::process::Command;

mod common;

#[test]
fn poller_header_is_current() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let cfg = cbindgen::Config::from_file(format!("{dir}/cbindgen-poller.toml")).expect("cbindgen config");
    let bindings = cbindgen::Builder::new()
        .with_src(format!("{dir}/src/ffi_poller.rs"))
        .with_config(cfg)
        .generate()
        .expect("cbindgen generates the header");
    let mut generated = Vec::new();
    bindings.write(&mut generated);
    let generated = common::plain_c(&String::from_utf8(generated).expect("utf-8"));
    let path = format!("{dir}/include/nrt_poller.h");
    if std::env::var_os("UPDATE_HEADER").is_some() {
        std::fs::write(&path, &generated).expect("write the header");
        return;
    }
    let current = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        current == generated,
        "include/nrt_poller.h is stale: run `UPDATE_HEADER=1 cargo test -p nrt-linux --test poller_c` and commit it"
    );
}

#[test]
fn a_c_program_harvests_four_lanes_through_one_poller() {
    let lib =
        common::cargo_build(&["-p", "nrt-linux", "--lib", "--no-default-features"], "c-abi").join("libnrt_linux.a");
    let out = std::env::temp_dir().join(format!("nrt-c-poller-{}", std::process::id()));
    common::compile_c("poller.c", &lib, &out);
    let run = Command::new(&out).output().unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    println!("{stdout}");
    let _ = std::fs::remove_file(&out);
    assert!(run.status.success(), "C poller failed:\n{stdout}\n{}", String::from_utf8_lossy(&run.stderr));
    assert!(stdout.contains("lane 2 hang                    5 NRT_TIMEOUT"), "{stdout}");
    assert!(stdout.contains("lane 3 NaN                     1003 NRT_EXEC_COMPLETED_WITH_NUM_ERR"), "{stdout}");
    // Refusals are the caller's thread's last error, never a lane's callback there.
    assert!(stdout.contains("null platforms: nrt_poller_new: 4 lanes at 0x0"), "{stdout}");
    assert!(
        stdout.contains("no clock: nrt_poller_new: lane 1: the platform has no read_slot or no now_ns"),
        "{stdout}"
    );
    assert!(stdout.contains("arch 9: nrt_poller_submit: lane 0: unknown arch type 9"), "{stdout}");
    assert!(stdout.contains("null poller: nrt_poller_submit: lane 3: the poller is NULL"), "{stdout}");
    assert!(stdout.contains("callbacks on the caller's thread: 0"), "{stdout}");
    assert!(!stdout.contains("event poller_error"), "{stdout}");
    assert!(stdout.contains("HEAD writes: lane 0 10, lane 1 5"), "{stdout}");
    assert!(
        stdout.contains("slice_us 5: nrt_poller_new_with_slice: slice_us 5: need 20 to 1000 microseconds"),
        "{stdout}"
    );
    assert!(stdout.contains("slice_us 1001: nrt_poller_new_with_slice: slice_us 1001: need 20"), "{stdout}");
}

/// A lane's callback that waits on its own poller's ticket gets -1 at once
/// with the reason, and one that frees its poller returns (the free is
/// deferred): no deadlock, no abort ("panic in a function that cannot
/// unwind", exit 134), and the caller's tickets are answered.
#[test]
fn a_c_callback_that_waits_on_or_frees_its_own_poller_neither_hangs_nor_aborts() {
    let lib =
        common::cargo_build(&["-p", "nrt-linux", "--lib", "--no-default-features"], "c-abi").join("libnrt_linux.a");
    let out = std::env::temp_dir().join(format!("nrt-c-poller-reentry-{}", std::process::id()));
    common::compile_c("poller_reentry.c", &lib, &out);
    let run = Command::new(&out).output().unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    let _ = std::fs::remove_file(&out);
    let ctx = format!("{stdout}\n{}", String::from_utf8_lossy(&run.stderr));
    assert_eq!(run.status.code(), Some(0), "{ctx}");
    assert!(stdout.contains("caller's wait: 0 status 0"), "{ctx}");
    assert!(
        stdout.contains("callback: free returned 1, wait -1: nrt_ticket_wait: lane 0: the ticket's poller thread"),
        "{ctx}"
    );
    assert!(stdout.contains("callback: poll 1"), "{ctx}");
    assert!(stdout.contains("callback's submission: 2 status 14 NRT_CLOSED"), "{ctx}");
}
