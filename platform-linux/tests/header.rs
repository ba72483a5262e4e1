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
