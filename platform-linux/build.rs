//! Writes `nrt-linux.pc` beside the libraries (`target/<profile>/`), so a C
//! build finds the header and the static library with
//! `PKG_CONFIG_PATH=target/release pkg-config --cflags --libs nrt-linux`.
//! The library is found relative to the file, `${pcfiledir}`, so a moved or
//! copied target directory still links its own library.

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=include");
    let Some(out) = std::env::var_os("OUT_DIR").map(PathBuf::from) else { return };
    // OUT_DIR is target/<profile>/build/<crate>-<hash>/out.
    let Some(libdir) = out.ancestors().nth(3) else { return };
    let include = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("include");
    let pc = format!(
        "libdir=${{pcfiledir}}\nincludedir={}\n\nName: nrt-linux\nDescription: nrt-core's Linux binding: sessions, memory, copies, \
         executions and the harvest\nVersion: {}\nCflags: -I${{includedir}}\nLibs: ${{libdir}}/libnrt_linux.a -lpthread \
         -ldl -lm\n",
        include.display(),
        env!("CARGO_PKG_VERSION")
    );
    // Best effort: a read-only target directory only loses the convenience.
    let _ = std::fs::write(libdir.join("nrt-linux.pc"), pc);
}
