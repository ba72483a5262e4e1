//! `cargo xtask qemu`: the test firmware in `tests/firmware` on the controller's
//! targets under QEMU, and its footprint.
//!
//! For each target: build the firmware in release, read its ELF's section sizes
//! and the bytes of the functions that are nrt-core's own, run it under `timeout`
//! in QEMU with semihosting, and require every case's status to be the seed's;
//! the firmware exits QEMU with its verdict. The footprint goals: the harvest's
//! code at most 24 KiB, the request state at most libnrt's 472 bytes.
//!
//! QEMU comes from Debian: `.ci/run` installs `qemu-system-arm` and
//! `qemu-system-misc` from bookworm-backports, whose QEMU matches the machine's
//! qemu-utils. Where it is missing the run is SKIPPED, loudly, and the build and
//! footprint still happen.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use crate::{cargo, works, Runner};

/// Seconds QEMU may run before `timeout` ends it.
const QEMU_TIMEOUT_S: &str = "120";

/// The firmware's closing line when every status is the seed's.
const VERDICT_OK: &str = "firmware: every status is the seed's";

/// The footprint goals: the harvest's code and the request state, bytes.
const GOAL_HARVEST_TEXT: u64 = 24 * 1024;
const GOAL_REQUEST_STATE: u64 = 472;

struct Target {
    triple: &'static str,
    qemu: &'static str,
    qemu_args: &'static [&'static str],
    /// The debian package that has the emulator.
    package: &'static str,
}

const TARGETS: [Target; 2] = [
    Target {
        triple: "thumbv7em-none-eabihf",
        qemu: "qemu-system-arm",
        qemu_args: &[
            "-cpu",
            "cortex-m4",
            "-machine",
            "mps2-an386",
            "-nographic",
            "-semihosting-config",
            "enable=on,target=native",
            "-kernel",
        ],
        package: "qemu-system-arm",
    },
    Target {
        triple: "riscv32imac-unknown-none-elf",
        qemu: "qemu-system-riscv32",
        qemu_args: &[
            "-machine",
            "virt",
            "-bios",
            "none",
            "-nographic",
            "-semihosting-config",
            "enable=on,target=native",
            "-kernel",
        ],
        package: "qemu-system-misc",
    },
];

pub fn run(run: &mut Runner, root: &Path) {
    let fw = root.join("tests/firmware");
    let mut summary = String::new();
    for t in &TARGETS {
        // The firmware's `.cargo/config.toml`, with its runner and linker script,
        // applies from its own directory; an outer RUSTFLAGS would replace its rustflags.
        let built = run.cmd(
            &format!("firmware build {}", t.triple),
            cargo()
                .current_dir(&fw)
                .args(["build", "--release", "--target", t.triple])
                .env_remove("RUSTFLAGS")
                .env_remove("CARGO_TARGET_DIR"),
        );
        if !built {
            continue;
        }
        let elf = fw.join("target").join(t.triple).join("release/nrt-firmware");
        let fp = footprint(&elf);
        let mut stack = None;
        let mut state = None;
        if works(Command::new(t.qemu).arg("--version")) {
            let mut c = Command::new("timeout");
            c.args(["--kill-after=5", QEMU_TIMEOUT_S, t.qemu]).args(t.qemu_args).arg(&elf);
            let out = run.cmd_output(&format!("firmware under {} ({})", t.qemu, t.triple), &mut c);
            let text = out.unwrap_or_default();
            stack = field(&text, "harvest stack, deepest case: ");
            state = field(&text, "size_of ExecRequest ");
            run.record(&format!("firmware statuses are the seed's ({})", t.triple), 0.0, text.contains(VERDICT_OK));
        } else {
            run.skip(
                &format!("firmware under {}", t.qemu),
                &format!(
                    "{} is not installed (Debian: apt-get install -t bookworm-backports {}; .ci/run does this)",
                    t.qemu, t.package
                ),
            );
        }
        match fp {
            Ok(fp) => {
                let _ = writeln!(summary, "  {}:", t.triple);
                let _ = writeln!(
                    summary,
                    "    .text {} B, .rodata {} B, .data {} B, .bss {} B (vector table {} B)",
                    fp.text, fp.rodata, fp.data, fp.bss, fp.vectors
                );
                let _ = writeln!(
                    summary,
                    "    nrt-core's own functions: {} B of .text (goal for the harvest: <= {} B){}",
                    fp.core_text,
                    GOAL_HARVEST_TEXT,
                    if fp.core_text <= GOAL_HARVEST_TEXT { "" } else { "  OVER" }
                );
                for (size, name) in fp.core_largest.iter().take(6) {
                    let _ = writeln!(summary, "      {size:>6} B  {name}");
                }
                if let Some(s) = state {
                    let _ = writeln!(summary, "    size_of::<ExecRequest>() = {s} B (goal <= {GOAL_REQUEST_STATE} B)");
                }
                if let Some(s) = stack {
                    let _ = writeln!(summary, "    harvest stack (painted, deepest case) = {s} B");
                }
                let ok = fp.core_text <= GOAL_HARVEST_TEXT && state.is_none_or(|s| s <= GOAL_REQUEST_STATE);
                run.record(&format!("footprint goals ({})", t.triple), 0.0, ok);
            }
            Err(e) => {
                println!("    cannot read {}: {e}", elf.display());
                run.record(&format!("footprint ({})", t.triple), 0.0, false);
            }
        }
    }
    if !summary.is_empty() {
        println!("\n==== firmware footprint ====\n{summary}");
    }
}

/// The number after `prefix` on a line of `text`.
fn field(text: &str, prefix: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let rest = l.split_once(prefix)?.1;
        rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
    })
}

struct Footprint {
    vectors: u64,
    text: u64,
    rodata: u64,
    data: u64,
    bss: u64,
    /// Bytes of function symbols in nrt-core, `_ZN8nrt_core...`.
    core_text: u64,
    core_largest: Vec<(u64, String)>,
}

fn footprint(elf: &Path) -> Result<Footprint, String> {
    let bytes = std::fs::read(elf).map_err(|e| e.to_string())?;
    let e = Elf32::parse(&bytes)?;
    let size = |n: &str| e.sections.iter().filter(|s| s.name == n).map(|s| u64::from(s.size)).sum::<u64>();
    let mut core_largest: Vec<(u64, String)> =
        e.functions.iter().filter(|(_, n)| n.contains("nrt_core")).map(|(s, n)| (u64::from(*s), short(n))).collect();
    core_largest.sort_by(|a, b| b.cmp(a));
    let fp = Footprint {
        vectors: size(".vector_table"),
        text: size(".text") + size(".init") + size(".trap"),
        rodata: size(".rodata") + size(".srodata"),
        data: size(".data") + size(".sdata"),
        bss: size(".bss") + size(".sbss"),
        core_text: core_largest.iter().map(|(s, _)| s).sum(),
        core_largest,
    };
    Ok(fp)
}

/// A legacy-mangled path without its hash, roughly demangled.
fn short(mangled: &str) -> String {
    let Some(body) = mangled.strip_prefix("_ZN") else { return mangled.to_string() };
    let mut out = Vec::new();
    let mut rest = body;
    while let Some(c) = rest.chars().next() {
        if !c.is_ascii_digit() {
            break;
        }
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let n: usize = digits.parse().unwrap_or(0);
        rest = &rest[digits.len()..];
        if n > rest.len() {
            break;
        }
        let seg = &rest[..n];
        rest = &rest[n..];
        if seg.starts_with('h') && seg.len() == 17 {
            continue; // the hash
        }
        out.push(seg.replace("$LT$", "<").replace("$GT$", ">").replace("$u20$", " ").replace("..", "::"));
    }
    out.join("::")
}

struct Section {
    name: String,
    size: u32,
}

/// Just enough of a little-endian ELF32, as both controller targets are, for
/// section sizes and function symbols.
struct Elf32 {
    sections: Vec<Section>,
    functions: Vec<(u32, String)>,
}

impl Elf32 {
    fn parse(b: &[u8]) -> Result<Elf32, String> {
        let u16_at = |o: usize| b.get(o..o + 2).map(|s| u16::from_le_bytes([s[0], s[1]])).ok_or("truncated");
        let u32_at =
            |o: usize| b.get(o..o + 4).map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]])).ok_or("truncated");
        if b.get(..4) != Some(b"\x7fELF") || b.get(4) != Some(&1) || b.get(5) != Some(&1) {
            return Err("not a little-endian ELF32 file".into());
        }
        let shoff = u32_at(0x20)? as usize;
        let shentsize = u16_at(0x2E)? as usize;
        let shnum = u16_at(0x30)? as usize;
        let shstrndx = u16_at(0x32)? as usize;
        struct Raw {
            name: u32,
            ty: u32,
            off: u32,
            size: u32,
            link: u32,
        }
        let mut raw = Vec::new();
        for i in 0..shnum {
            let o = shoff + i * shentsize;
            raw.push(Raw {
                name: u32_at(o)?,
                ty: u32_at(o + 4)?,
                off: u32_at(o + 16)?,
                size: u32_at(o + 20)?,
                link: u32_at(o + 24)?,
            });
        }
        let cstr = |table: &Raw, at: u32| -> String {
            let start = table.off as usize + at as usize;
            let end = b[start.min(b.len())..].iter().position(|c| *c == 0).map_or(b.len(), |p| start + p);
            String::from_utf8_lossy(&b[start.min(b.len())..end]).into_owned()
        };
        let shstr = raw.get(shstrndx).ok_or("no section-name table")?;
        let sections = raw.iter().map(|s| Section { name: cstr(shstr, s.name), size: s.size }).collect();
        let mut functions = Vec::new();
        const SHT_SYMTAB: u32 = 2;
        const STT_FUNC: u8 = 2;
        if let Some(symtab) = raw.iter().find(|s| s.ty == SHT_SYMTAB) {
            let strtab = raw.get(symtab.link as usize).ok_or("no symbol-name table")?;
            for i in 0..(symtab.size / 16) as usize {
                let o = symtab.off as usize + i * 16;
                let name = u32_at(o)?;
                let size = u32_at(o + 8)?;
                let info = *b.get(o + 12).ok_or("truncated")?;
                if info & 0xF == STT_FUNC && size > 0 {
                    functions.push((size, cstr(strtab, name)));
                }
            }
        }
        Ok(Elf32 { sections, functions })
    }
}
