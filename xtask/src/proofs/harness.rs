//! Finding the kani harnesses in the proved crates' sources, with their
//! bounds and whether each has a test of its body.

use super::*;

/// A kani harness and the test that runs the same property body.
pub(super) struct Harness {
    /// `module::path::prove_x`, as kani names it.
    pub(super) path: String,
    /// `module::path::tests::x_tests`.
    pub(super) test: String,
    /// The file it is in.
    pub(super) file: PathBuf,
    /// The test exists in that file.
    pub(super) has_test: bool,
    /// `#[kani::unwind(N)]`, if any.
    pub(super) unwind: Option<u32>,
    /// `proof_for_contract(f)`, `stub_verified(f)`, `stub(f, g)` attributes.
    pub(super) notes: Vec<String>,
}

pub(super) fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = fs::read_dir(dir) else { return };
    let mut entries: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rs_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// Every `#[kani::proof]` and `#[kani::proof_for_contract(..)]` harness of the
/// [`PROVED_CRATES`], with its attributes and its test.
pub(super) fn harnesses(root: &Path) -> Vec<Harness> {
    let mut out = Vec::new();
    for (_, dir) in PROVED_CRATES {
        harnesses_in(root, &root.join(dir), &mut out);
    }
    out
}

/// The harnesses of the crate whose sources are `src`.
pub(super) fn harnesses_in(root: &Path, src: &Path, out: &mut Vec<Harness>) {
    let mut files = Vec::new();
    rs_files(src, &mut files);
    for file in files {
        let Ok(text) = fs::read_to_string(&file) else { continue };
        let rel = file.strip_prefix(src).unwrap_or(&file).with_extension("");
        let module = rel.to_string_lossy().replace(['/', '\\'], "::");
        let module = module.strip_suffix("::mod").unwrap_or(&module).to_string();
        let mut armed = false;
        let mut unwind = None;
        let mut notes = Vec::new();
        for line in text.lines() {
            let l = line.trim();
            if l.starts_with("#[kani::proof]") {
                armed = true;
                continue;
            }
            if let Some(rest) = l.strip_prefix("#[kani::proof_for_contract(") {
                armed = true;
                notes.push(format!("contract of {}", rest.trim_end_matches(")]")));
                continue;
            }
            if !armed {
                continue;
            }
            if let Some(rest) = l.strip_prefix("#[kani::unwind(") {
                unwind = rest.trim_end_matches(")]").parse().ok();
            } else if let Some(rest) = l.strip_prefix("#[kani::stub_verified(") {
                notes.push(format!("uses the verified contract of {}", rest.trim_end_matches(")]")));
            } else if let Some(rest) = l.strip_prefix("#[kani::stub(") {
                notes.push(format!("stub {}", rest.trim_end_matches(")]")));
            } else if let Some(rest) = l.strip_prefix("fn ").or_else(|| l.strip_prefix("pub fn ")) {
                let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                let body = name.strip_prefix("prove_").unwrap_or(&name).to_string();
                let test = format!("{body}_tests");
                out.push(Harness {
                    has_test: text.contains(&format!("fn {test}()")),
                    test: format!("{module}::tests::{test}"),
                    path: format!("{module}::{name}"),
                    file: file.strip_prefix(root).unwrap_or(&file).to_path_buf(),
                    unwind: unwind.take(),
                    notes: std::mem::take(&mut notes),
                });
                armed = false;
            }
        }
    }
}
