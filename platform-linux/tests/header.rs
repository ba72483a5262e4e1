//! The checked-in C headers are what cbindgen generates: `nrt.h` from
//! `src/ffi/` and `src/ffi_exec/`, with a constants block built here from
//! the tables it must not drift from (`NRT_STATUS` from
//! `nrt_core::NrtStatus::ALL`, `NRT_ENGINE_*` from core's engines,
//! `NRT_MEM_*` from `MemKind`, `NRT_STREAM_DEPTH`).
//! `UPDATE_HEADER=1 cargo test -p nrt-linux --test header` rewrites them.

use nrt_core::nq::Engine;
use nrt_core::NrtStatus;
use nrt_linux::MemKind;

mod common;

#[test]
fn header_is_current() {
    check("cbindgen.toml", &["src/ffi/mod.rs", "src/ffi_exec/mod.rs"], Some(constants()), "include/nrt.h");
}

#[test]
fn shm_header_is_current() {
    check("cbindgen-shm.toml", &["src/ffi_shm.rs"], None, "include/nrt_shm.h");
}

/// The block of `nrt.h` that comes from core's tables, after its includes.
fn constants() -> String {
    let mut b = String::from(
        "/* NRT_STATUS: every status code of the runtime (the values of the SDK's\n   \
         nrt_status.h), generated from nrt-core's table. */\ntypedef enum NRT_STATUS {\n",
    );
    for s in NrtStatus::ALL {
        let desc = s.description().replace("*/", "* /");
        b.push_str(&format!("  {} = {}, /* {desc} */\n", s.name(), s.code()));
    }
    b.push_str("} NRT_STATUS;\n\n");
    b.push_str(
        "/* The engines of a core, by the index nrt_exec_engine_times takes and the\n   \
         bit nrt_exec_pending_engines sets. */\n",
    );
    for e in Engine::ALL {
        b.push_str(&format!("#define NRT_ENGINE_{} {}\n", e.name(), e.index()));
    }
    b.push_str(&format!("#define NRT_ENGINES_PER_CORE {}\n\n", Engine::ALL.len()));
    b.push_str("/* Where nrt_mem_alloc places memory. */\n");
    for k in [MemKind::Host, MemKind::Device] {
        b.push_str(&format!("#define NRT_MEM_{} {}\n", k.name().to_uppercase(), k as u32));
    }
    b.push_str(&format!(
        "\n/* Executions a session's stream holds at once, queued or running:\n   \
         nrt_exec_submit answers NRT_QUEUE_FULL past them. */\n#define NRT_STREAM_DEPTH {}\n",
        nrt_linux::exec::STREAM_DEPTH
    ));
    b
}

/// The block lists every status of core's table, each with its value.
#[test]
fn the_status_block_has_every_value_of_cores_table() {
    let c = constants();
    for s in NrtStatus::ALL {
        assert!(c.contains(&format!("  {} = {},", s.name(), s.code())), "{} missing:\n{c}", s.name());
    }
    assert!(c.contains("NRT_EXEC_NC_BUSY = 1005,") && c.contains("NRT_TIMEOUT = 5,"), "{c}");
    assert!(c.contains("#define NRT_ENGINE_DVE 3") && c.contains("#define NRT_MEM_DEVICE 1"), "{c}");
}

fn check(config: &str, srcs: &[&str], after_includes: Option<String>, header: &str) {
    let dir = env!("CARGO_MANIFEST_DIR");
    let mut cfg = cbindgen::Config::from_file(format!("{dir}/{config}")).expect("cbindgen config");
    cfg.after_includes = after_includes;
    let mut builder = cbindgen::Builder::new();
    for src in srcs {
        builder = builder.with_src(format!("{dir}/{src}"));
    }
    let bindings = builder.with_config(cfg).generate().expect("cbindgen generates the header");
    let mut generated = Vec::new();
    bindings.write(&mut generated);
    let generated = common::plain_c(&String::from_utf8(generated).expect("utf-8"));
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
/// warnings as errors, as C99, C11 and C++.
#[test]
fn each_header_compiles_on_its_own() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    for (header, body) in [
        (
            "nrt.h",
            "const char *(*f)(uint32_t) = nrt_status_name; NRT_STATUS st = NRT_EXEC_NC_BUSY; \
             uint32_t (*w)(struct nrt_exec *) = nrt_exec_wait; \
             (void)w; (void)st; int where = NRT_MEM_HOST + NRT_ENGINE_SP + NRT_STREAM_DEPTH; (void)where;",
        ),
        ("nrt_shm.h", "struct nrt_shm *(*f)(const char *, uint32_t) = nrt_shm_attach;"),
        ("nrt_poller.h", "const nrt_platform *p = 0; const nrt_rings *r = 0; (void)p; (void)r; void (*f)(struct nrt_poller *) = nrt_poller_free;"),
    ] {
        let src = std::env::temp_dir().join(format!("nrt-header-alone-{}-{header}.c", std::process::id()));
        let text = format!(
            "#include \"{header}\"\nint main(void) {{\n    {body}\n    uint32_t t = NRT_TIMEOUT_FROM_ENV;\n    return (f != 0 && t == UINT32_MAX) ? 0 : 1;\n}}\n"
        );
        std::fs::write(&src, text).unwrap();
        for lang in [&["-x", "c", "-std=c99", "-pedantic"][..], &["-x", "c", "-std=c11"][..], &["-x", "c++", "-std=c++17"][..]] {
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

/// The build's `nrt-linux.pc` names the library beside itself, so a copied
/// target directory links its own library, and the headers it points at.
#[test]
fn the_pkg_config_file_links_the_library_beside_it() {
    let exe = std::env::current_exe().expect("the test's path");
    let profile = exe.parent().and_then(|deps| deps.parent()).expect("target/<profile>/deps");
    let pc = std::fs::read_to_string(profile.join("nrt-linux.pc")).expect("the build writes nrt-linux.pc");
    assert!(pc.lines().any(|l| l == "libdir=${pcfiledir}"), "{pc}");
    let include = pc.lines().find_map(|l| l.strip_prefix("includedir=")).expect("an includedir line");
    assert!(std::path::Path::new(include).join("nrt.h").is_file(), "{include} has no nrt.h");
    assert!(pc.contains("Libs: ${libdir}/libnrt_linux.a"), "{pc}");
}
