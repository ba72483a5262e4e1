//! Put the target's memory map where the linker scripts find it (`memory.x`).
use std::{env, fs, path::PathBuf};

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));
    let target = env::var("TARGET").unwrap_or_default();
    let src = if target.starts_with("riscv") { "memory-riscv.x" } else { "memory-arm.x" };
    fs::copy(src, out.join("memory.x")).expect("copy memory.x");
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rerun-if-changed=memory-arm.x");
    println!("cargo:rerun-if-changed=memory-riscv.x");
    println!("cargo:rerun-if-changed=build.rs");
}
