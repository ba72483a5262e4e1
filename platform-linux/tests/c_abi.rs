//! A C program, compiled with the system C compiler, links the static library and
//! harvests inferences through the C ABI.

use std::path::PathBuf;
use std::process::Command;

/// Build the static library. `cargo test` builds the rlib only, so build it
/// here, into its own target directory (the outer build may hold the main one).
fn build_staticlib() -> PathBuf {
    // target/<profile>/deps/c_abi-xxxx -> target
    let exe = std::env::current_exe().unwrap();
    let target = exe.ancestors().nth(3).unwrap().join("c-abi");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        // Without the `sim` feature: the C library carries no simulator.
        .args(["build", "--quiet", "-p", "nrt-linux", "--lib", "--no-default-features", "--target-dir"])
        .arg(&target)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .expect("cargo runs");
    assert!(status.success(), "building the static library failed");
    target.join("debug").join("libnrt_linux.a")
}

#[test]
fn a_c_program_links_the_staticlib_and_harvests() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let lib = build_staticlib();
    assert!(lib.exists(), "{} not built", lib.display());
    let out = std::env::temp_dir().join(format!("nrt-c-harvest-{}", std::process::id()));
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = Command::new(&cc)
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-O1"])
        .arg(format!("-I{dir}/include"))
        .arg(format!("{dir}/tests/c/harvest.c"))
        .arg(&lib)
        .args(["-lpthread", "-ldl", "-lm", "-o"])
        .arg(&out)
        .status()
        .expect("a C compiler (cc) is installed");
    assert!(status.success(), "C build failed");
    let run = Command::new(&out).output().unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    println!("{stdout}");
    let _ = std::fs::remove_file(&out);
    assert!(run.status.success(), "C harvest failed:\n{stdout}\n{}", String::from_utf8_lossy(&run.stderr));
    assert!(stdout.contains("healthy (nrt_wait)                 0 NRT_SUCCESS"), "{stdout}");
    assert!(stdout.contains("1204 NRT_EXEC_SW_NQ_OVERFLOW"), "{stdout}");
}
