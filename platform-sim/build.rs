//! Link libseccomp (for `nrt-sim driver`) also where only the runtime library
//! is installed.
//!
//! The `libseccomp` crate links `-lseccomp`, which needs the development
//! symlink `libseccomp.so` (Debian's `libseccomp-dev`; `cargo xtask ci`
//! installs it). A fresh Debian machine has only the runtime library
//! `libseccomp.so.2` (`libseccomp2`, which apt itself depends on), so that the
//! README's first command (`cargo run -p nrt-sim ...`, rustup and cargo only)
//! would fail to link there. When no `libseccomp.so` is found in the system's
//! library directories but a `libseccomp.so.2` is, this script links against
//! that one through a symlink in its own output directory (same library, same
//! SONAME at run time), and says so in a cargo warning.

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=LIBSECCOMP_LIB_PATH");
    // Only the `driver` feature links libseccomp.
    if std::env::var_os("CARGO_FEATURE_DRIVER").is_none() || std::env::var_os("LIBSECCOMP_LIB_PATH").is_some() {
        return;
    }
    let multiarch = match std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() {
        Ok("x86_64") => "x86_64-linux-gnu",
        Ok("aarch64") => "aarch64-linux-gnu",
        _ => "",
    };
    let dirs: Vec<PathBuf> = [
        format!("/usr/lib/{multiarch}"),
        format!("/lib/{multiarch}"),
        "/usr/lib64".into(),
        "/usr/lib".into(),
        "/lib64".into(),
        "/lib".into(),
    ]
    .into_iter()
    .map(PathBuf::from)
    .collect();
    if dirs.iter().any(|d| d.join("libseccomp.so").exists()) {
        return;
    }
    let Some(runtime) = dirs.iter().map(|d| d.join("libseccomp.so.2")).find(|p| p.exists()) else {
        println!(
            "cargo:warning=libseccomp is not installed (neither libseccomp.so nor libseccomp.so.2): nrt-sim will not \
             link; install Debian's libseccomp-dev (cargo xtask ci does)"
        );
        return;
    };
    let Some(out) = std::env::var_os("OUT_DIR").map(PathBuf::from) else { return };
    let dir = out.join("seccomp-link");
    let link = dir.join("libseccomp.so");
    let _ = std::fs::create_dir_all(&dir);
    let _ = std::fs::remove_file(&link);
    if std::os::unix::fs::symlink(&runtime, &link).is_ok() {
        println!("cargo:rustc-link-search=native={}", dir.display());
        println!(
            "cargo:warning=linking {} directly: no libseccomp.so was found when this build script ran (Debian's \
             libseccomp-dev has it; cargo xtask ci installs it)",
            runtime.display()
        );
    }
}
