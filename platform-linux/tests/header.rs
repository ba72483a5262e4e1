//! The checked-in C header is what cbindgen generates from `src/ffi.rs`.
//! `UPDATE_HEADER=1 cargo test -p nrt-linux --test header` rewrites it.

#[test]
fn header_is_current() {
    check("cbindgen.toml", "src/ffi.rs", "include/nrt.h");
}

#[test]
fn shm_header_is_current() {
    check("cbindgen-shm.toml", "src/ffi_shm.rs", "include/nrt_shm.h");
}

fn check(config: &str, src: &str, header: &str) {
    let dir = env!("CARGO_MANIFEST_DIR");
    let cfg = cbindgen::Config::from_file(format!("{dir}/{config}")).expect("cbindgen config");
    let bindings = cbindgen::Builder::new()
        .with_src(format!("{dir}/{src}"))
        .with_config(cfg)
        .generate()
        .expect("cbindgen generates the header");
    let mut generated = Vec::new();
    bindings.write(&mut generated);
    let generated = String::from_utf8(generated).expect("utf-8");
    let path = format!("{dir}/{header}");
    if std::env::var_os("UPDATE_HEADER").is_some() {
        std::fs::write(&path, &generated).expect("write the header");
        return;
    }
    let current = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        current == generated,
        "{header} is stale: run `UPDATE_HEADER=1 cargo test -p nrt-linux --test header` and commit it"
    );
}

/// Each header compiles on its own: a C file that includes only it (and uses
/// `NRT_TIMEOUT_FROM_ENV`, nrt.h's, and a function it declares) builds with
/// warnings as errors, as C11 and as C++.
#[test]
fn each_header_compiles_on_its_own() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    for (header, body) in [
        ("nrt.h", "const char *(*f)(uint32_t) = nrt_status_name;"),
        ("nrt_shm.h", "struct nrt_shm *(*f)(const char *, uint32_t) = nrt_shm_attach;"),
        ("nrt_poller.h", "const nrt_platform *p = 0; const nrt_rings *r = 0; (void)p; (void)r; void (*f)(struct nrt_poller *) = nrt_poller_free;"),
    ] {
        let src = std::env::temp_dir().join(format!("nrt-header-alone-{}-{header}.c", std::process::id()));
        let text = format!(
            "#include \"{header}\"\nint main(void) {{\n    {body}\n    uint32_t t = NRT_TIMEOUT_FROM_ENV;\n    return (f != 0 && t == UINT32_MAX) ? 0 : 1;\n}}\n"
        );
        std::fs::write(&src, text).unwrap();
        for lang in [&["-x", "c", "-std=c11"][..], &["-x", "c++", "-std=c++17"][..]] {
            let o = std::process::Command::new(&cc)
                .args(lang)
                .args(["-Wall", "-Wextra", "-Werror", "-fsyntax-only"])
                .arg(format!("-I{dir}/include"))
                .arg(&src)
                .output()
                .expect("a C compiler (cc) is installed");
            assert!(o.status.success(), "{header} alone, {lang:?}: {}", String::from_utf8_lossy(&o.stderr));
        }
        let _ = std::fs::remove_file(&src);
    }
}
