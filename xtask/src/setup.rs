//! What `cargo xtask ci` installs before it checks anything, so that the
//! README's two commands really are all a fresh machine with rustup and cargo
//! needs:
//!
//! - the rustup components rustfmt and clippy;
//! - the nightly toolchain with `miri` and `rust-src`, for Miri and cargo-fuzz;
//! - cargo-fuzz, pinned, from crates.io;
//! - QEMU for the firmware, `qemu-system-arm` and `qemu-system-misc`, from
//!   Debian. On bookworm it comes from bookworm-backports, whose QEMU matches
//!   the newer qemu-utils these machines have; the backports source is derived
//!   from the machine's own Debian mirror and keyring, so the repository names
//!   no host;
//! - from Debian, libseccomp-dev, which `nrt-sim driver`'s seccomp filter
//!   links, and strace, for the driver path's order test;
//! - Chromium from Debian, `/usr/bin/chromium`, for the test in
//!   `platform-sim/tests/trace.rs` that renders an SVG timeline headless and
//!   checks the screenshot is not blank. Without it that test records its
//!   skip, which `tests` in `main.rs` lists as a SKIPPED stage with the reason;
//! - kani, from the offline bundle, is installed by the kani stage itself, and
//!   cargo-mutants by the mutants stage.
//!
//! The Debian packages are installed where `apt-get` exists and we are root.
//! Every step is tolerant: what cannot be installed is reported here, and the
//! stage that needs it says SKIPPED, loudly, with the reason. An install that
//! failed, say a mirror down or a package withdrawn, is a check that cannot run
//! here, never a red run; the reason says whether this machine could have
//! installed it, see `nrt_abi::skip::installable`.

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::{cargo, works, Runner};

/// cargo-fuzz, pinned.
const CARGO_FUZZ_VERSION: &str = "0.13.2";

/// Run `cmd`, echoing its output, killed after `secs`; `true` on exit 0.
pub fn run_bounded(what: &str, cmd: &mut Command, secs: u64) -> bool {
    println!("\n==> setup: {what}");
    let t = Instant::now();
    let Ok(mut child) = cmd.stdin(Stdio::null()).spawn() else {
        println!("    could not start");
        return false;
    };
    loop {
        match child.try_wait() {
            Ok(Some(s)) => {
                println!(
                    "<== setup: {what}: {} in {:.1} s",
                    if s.success() { "ok" } else { "FAILED" },
                    t.elapsed().as_secs_f64()
                );
                return s.success();
            }
            Ok(None) if t.elapsed() > Duration::from_secs(secs) => {
                let _ = child.kill();
                let _ = child.wait();
                println!("<== setup: {what}: gave up after {secs} s");
                return false;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(200)),
            Err(_) => return false,
        }
    }
}

fn rustup(args: &[&str]) -> Command {
    let mut c = Command::new("rustup");
    c.args(args);
    c
}

fn has_nightly() -> bool {
    works(rustup(&["run", "nightly", "cargo", "--version"]).env_remove("RUSTUP_TOOLCHAIN"))
}

/// Install what the checks need, as the module docs list; records one stage.
pub fn all(run: &mut Runner) {
    let t = Instant::now();
    let mut missing: Vec<String> = Vec::new();

    if !run_bounded("rustfmt and clippy", &mut rustup(&["component", "add", "rustfmt", "clippy"]), 300) {
        missing.push("rustfmt/clippy".into());
    }
    if !has_nightly() {
        run_bounded(
            "the nightly toolchain",
            &mut rustup(&["toolchain", "install", "nightly", "--profile", "minimal"]),
            900,
        );
    }
    if has_nightly() {
        if !works(rustup(&["run", "nightly", "cargo", "miri", "--version"]).env_remove("RUSTUP_TOOLCHAIN"))
            && !run_bounded(
                "miri and rust-src (nightly)",
                &mut rustup(&["component", "add", "--toolchain", "nightly", "miri", "rust-src"]),
                600,
            )
        {
            missing.push("miri".into());
        }
    } else {
        missing.push("the nightly toolchain (Miri, libFuzzer)".into());
    }

    if !works(cargo().args(["fuzz", "--version"]))
        && !run_bounded(
            &format!("cargo-fuzz {CARGO_FUZZ_VERSION}"),
            cargo().args(["install", "--locked", &format!("cargo-fuzz@{CARGO_FUZZ_VERSION}")]),
            900,
        )
    {
        missing.push("cargo-fuzz".into());
    }

    let have_qemu = || {
        works(Command::new("qemu-system-arm").arg("--version"))
            && works(Command::new("qemu-system-riscv32").arg("--version"))
    };
    if !have_qemu() {
        match install_qemu() {
            Ok(()) if have_qemu() => {}
            Ok(()) => missing.push("QEMU (installed, but qemu-system-arm/riscv32 still do not run)".into()),
            Err(why) => missing.push(format!("QEMU ({why})")),
        }
    }

    // libseccomp-dev: `nrt-sim driver`'s seccomp filter. The `libseccomp`
    // crate links -lseccomp; platform-sim/build.rs falls back to the runtime
    // library libseccomp.so.2 where only that is installed.
    // strace: the driver path's test of the bring-up order, `strace -f` of
    // `nrtctl run` under `nrt-sim driver`.
    // chromium: the trace test's headless rendering of an SVG timeline.
    let debs: Vec<&str> = [("libseccomp-dev", "libseccomp-dev"), ("strace", "strace"), ("chromium", "chromium")]
        .into_iter()
        .filter(|(pkg, _)| debian_version(pkg) == "none")
        .map(|(_, name)| name)
        .collect();
    if !debs.is_empty() {
        if let Err(why) = install_debs(&debs) {
            missing.push(format!("{} ({why})", debs.join(", ")));
        }
    }

    let secs = t.elapsed().as_secs_f64();
    if missing.is_empty() {
        run.record("setup: toolchains and tools installed", secs, true);
    } else {
        // Not a failure here: what this machine cannot install makes each
        // stage that needs it say SKIPPED with its reason.
        println!("\n!!! setup could not install: {}", missing.join(", "));
        run.record(&format!("setup (could not install: {})", missing.join(", ")), secs, true);
    }
}

/// `qemu-system-arm` and `qemu-system-misc` from Debian, as the module docs say.
fn install_qemu() -> Result<(), String> {
    if !works(Command::new("apt-get").arg("--version")) {
        return Err("no apt-get on this machine".into());
    }
    let codename = fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|t| {
            t.lines().find_map(|l| l.strip_prefix("VERSION_CODENAME=").map(|v| v.trim_matches('"').to_string()))
        })
        .unwrap_or_default();
    let mut target: Vec<String> = Vec::new();
    if codename == "bookworm" {
        ensure_backports(&codename)?;
        target = vec!["-t".into(), format!("{codename}-backports")];
    }
    if !run_bounded("apt-get update", Command::new("apt-get").args(["update", "-q"]), 300) {
        return Err("apt-get update failed".into());
    }
    let before = debian_version("qemu-utils");
    let ok = run_bounded(
        "QEMU (qemu-system-arm, qemu-system-misc) from Debian",
        Command::new("apt-get")
            .args(["install", "-y", "-q", "--no-install-recommends"])
            .args(&target)
            .args(["qemu-system-arm", "qemu-system-misc"])
            .env("DEBIAN_FRONTEND", "noninteractive"),
        900,
    );
    println!("    qemu-utils: {before} -> {}", debian_version("qemu-utils"));
    if ok {
        Ok(())
    } else {
        Err("apt-get install qemu-system-arm qemu-system-misc failed".into())
    }
}

/// Debian packages the tests need: `libseccomp-dev` for `nrt-sim driver`,
/// `strace` for its order test, `chromium` for the timeline rendering.
fn install_debs(pkgs: &[&str]) -> Result<(), String> {
    if !works(Command::new("apt-get").arg("--version")) {
        return Err("no apt-get on this machine".into());
    }
    if !run_bounded("apt-get update", Command::new("apt-get").args(["update", "-q"]), 300) {
        return Err("apt-get update failed".into());
    }
    let ok = run_bounded(
        &format!("{} from Debian (the driver path, the timeline rendering)", pkgs.join(", ")),
        Command::new("apt-get")
            .args(["install", "-y", "-q", "--no-install-recommends"])
            .args(pkgs)
            .env("DEBIAN_FRONTEND", "noninteractive"),
        600,
    );
    if ok {
        Ok(())
    } else {
        Err(format!("apt-get install {} failed", pkgs.join(" ")))
    }
}

fn debian_version(pkg: &str) -> String {
    Command::new("dpkg-query")
        .args(["-W", "-f=${Version}", pkg])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_else(|| "none".into())
}

/// A `<codename>-backports` source built from the machine's own Debian source
/// for `<codename>`, same mirror and keyring, unless one is configured.
fn ensure_backports(codename: &str) -> Result<(), String> {
    let backports = format!("{codename}-backports");
    let mut texts = Vec::new();
    for p in ["/etc/apt/sources.list"] {
        if let Ok(t) = fs::read_to_string(p) {
            texts.push(t);
        }
    }
    if let Ok(rd) = fs::read_dir("/etc/apt/sources.list.d") {
        for e in rd.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "list" || x == "sources") {
                if let Ok(t) = fs::read_to_string(&p) {
                    texts.push(t);
                }
            }
        }
    }
    if texts.iter().any(|t| t.lines().any(|l| !l.trim_start().starts_with('#') && l.contains(&backports))) {
        return Ok(());
    }
    let (uri, keyring) = debian_mirror(&texts, codename).ok_or_else(|| {
        format!("no Debian source for {codename} in the apt configuration to derive {backports} from")
    })?;
    let mut entry = format!("Types: deb\nURIs: {uri}\nSuites: {backports}\nComponents: main\n");
    if let Some(k) = keyring {
        entry.push_str(&format!("Signed-By: {k}\n"));
    }
    let path = Path::new("/etc/apt/sources.list.d/nrt-backports.sources");
    fs::write(path, entry).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    println!("    {backports}: from the machine's own Debian mirror {uri} ({})", path.display());
    Ok(())
}

/// The mirror URI and keyring of the first active Debian source for
/// `codename`, from one-line `deb URI SUITE ...` or deb822 `URIs:`/`Suites:`
/// entries.
fn debian_mirror(texts: &[String], codename: &str) -> Option<(String, Option<String>)> {
    for t in texts {
        for l in t.lines() {
            let l = l.trim();
            if let Some(rest) = l.strip_prefix("deb ") {
                let words: Vec<&str> =
                    rest.split_whitespace().filter(|w| !w.starts_with('[') && !w.ends_with(']')).collect();
                if words.len() >= 2 && words[1] == codename {
                    return Some((words[0].to_string(), None));
                }
            }
        }
        for stanza in t.split("\n\n") {
            let field =
                |name: &str| stanza.lines().find_map(|l| l.trim().strip_prefix(name).map(|v| v.trim().to_string()));
            let (Some(uris), Some(suites)) = (field("URIs:"), field("Suites:")) else { continue };
            if field("Enabled:").is_some_and(|v| v == "no") || !field("Types:").is_some_and(|v| v.contains("deb")) {
                continue;
            }
            if suites.split_whitespace().any(|s| s == codename) {
                let uri = uris.split_whitespace().next()?.to_string();
                return Some((uri, field("Signed-By:")));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::debian_mirror;

    #[test]
    fn mirror_from_deb822_and_one_line_sources() {
        let deb822 = "Types: deb\nURIs: http://mirror.invalid/debian\nSuites: bookworm bookworm-updates\n\
                      Components: main\nSigned-By: /usr/share/keyrings/k.gpg\n\n\
                      Types: deb\nURIs: http://mirror.invalid/debian-security\nSuites: bookworm-security\n"
            .to_string();
        assert_eq!(
            debian_mirror(&[deb822], "bookworm"),
            Some(("http://mirror.invalid/debian".into(), Some("/usr/share/keyrings/k.gpg".into())))
        );
        let one = "# comment\ndeb [arch=amd64] http://m.invalid/debian bookworm main\n".to_string();
        assert_eq!(debian_mirror(&[one], "bookworm"), Some(("http://m.invalid/debian".into(), None)));
        assert_eq!(debian_mirror(&["deb http://m.invalid/debian trixie main\n".into()], "bookworm"), None);
    }
}
