//! `cargo xtask prose`: how much a reader must read, per crate.
//!
//! Counts every source under each crate's `src/`: comment characters, the
//! text after `//`, `///` or `//!`, per character of code with its indentation
//! left out; prose parentheses per 100 comment words; and the largest file,
//! test and proof code left out. A report, never a gate: each bound is printed
//! beside its figure.

use std::fs;
use std::path::{Path, PathBuf};

/// The crates measured, by directory.
const CRATES: [&str; 8] = ["core", "abi", "platform-linux", "platform-sim", "trace", "bench", "xtask", "tests"];

/// The most comment characters per code character a crate should carry.
pub const COMMENT_RATIO_MAX: f64 = 0.40;
/// The most prose parentheses per 100 comment words.
pub const PARENS_MAX: f64 = 2.5;
/// The most lines a non-test source file should have.
pub const FILE_LINES_MAX: usize = 900;
/// The most lines the README should have.
pub const README_LINES_MAX: usize = 160;

/// One crate's figures.
#[derive(Default, Debug, PartialEq)]
pub struct Figures {
    /// Characters of comment text.
    pub comment: usize,
    /// Characters of code, leading and trailing blanks left out.
    pub code: usize,
    /// Words of comment text.
    pub words: usize,
    /// Parentheses that open prose, not a call: after a blank or at the start.
    pub parens: usize,
    /// The largest non-test file and its lines.
    pub largest: Option<(PathBuf, usize)>,
    /// Every non-test file over [`FILE_LINES_MAX`] lines.
    pub over: Vec<(PathBuf, usize)>,
}

impl Figures {
    /// Comment characters per code character.
    pub fn ratio(&self) -> f64 {
        self.comment as f64 / self.code.max(1) as f64
    }

    /// Prose parentheses per 100 comment words.
    pub fn parens_per_100(&self) -> f64 {
        self.parens as f64 * 100.0 / self.words.max(1) as f64
    }

    /// Adds one file's text; `path` names it, `test` says it is test or proof
    /// code as a whole, which counts for prose but not for the largest file.
    pub fn add(&mut self, path: &Path, text: &str, test: bool) {
        let mut lines = 0;
        let mut in_tail = test;
        let mut rest = text;
        while let Some((line, after)) = rest.split_once('\n').or((!rest.is_empty()).then_some((rest, ""))) {
            rest = after;
            let t = line.trim();
            if (t.starts_with("#[cfg(test)]") || t.starts_with("#[cfg(kani)]")) && opens_module(rest) {
                in_tail = true;
            }
            if !in_tail {
                lines += 1;
            }
            let (code, comment) = split_comment(t);
            self.code += code.trim().len();
            if let Some(c) = comment {
                let c = c.trim();
                self.comment += c.chars().count();
                self.words += c.split_whitespace().count();
                self.parens += prose_parens(c);
            }
        }
        if !test && lines > FILE_LINES_MAX {
            self.over.push((path.to_path_buf(), lines));
        }
        if !test && self.largest.as_ref().is_none_or(|(_, n)| lines > *n) {
            self.largest = Some((path.to_path_buf(), lines));
        }
    }
}

/// Whether the text after an attribute line opens a module: the attribute is
/// a test or proof module's.
fn opens_module(rest: &str) -> bool {
    rest.trim_start().starts_with("mod ")
}

/// A trimmed line's code and its comment text, markers stripped; a `//` inside
/// a string literal is code.
fn split_comment(line: &str) -> (&str, Option<&str>) {
    let bytes = line.as_bytes();
    let mut in_str = false;
    let mut i = 0;
    while i + 1 < bytes.len() {
        match bytes[i] {
            b'\\' if in_str => i += 1,
            b'"' => in_str = !in_str,
            b'/' if !in_str && bytes[i + 1] == b'/' => {
                let text = line[i + 2..].trim_start_matches(['/', '!']);
                return (&line[..i], Some(text));
            }
            _ => {}
        }
        i += 1;
    }
    (line, None)
}

/// Parentheses that open an aside: at the start or after a blank, outside code marks.
fn prose_parens(comment: &str) -> usize {
    let mut in_code = false;
    let mut prev = ' ';
    let mut n = 0;
    for c in comment.chars() {
        if c == '`' {
            in_code = !in_code;
        } else if c == '(' && !in_code && prev.is_whitespace() {
            n += 1;
        }
        prev = c;
    }
    n
}

/// Whether a source file is test or proof code as a whole: its module, or one
/// above it, is declared under `#[cfg(test)]` or `#[cfg(kani)]`.
fn is_test_file(path: &Path) -> bool {
    let name = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let (name, dir) = match (name.as_str(), path.parent()) {
        ("mod", Some(d)) => (d.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default(), d.parent()),
        ("lib" | "main", _) => return false,
        (_, d) => (name, d),
    };
    let Some(dir) = dir else { return false };
    let parents = [dir.join("mod.rs"), dir.join("lib.rs"), dir.join("main.rs"), dir.with_extension("rs")];
    let Some(parent) = parents.into_iter().find(|p| fs::read_to_string(p).is_ok_and(|t| declares(&t, &name).is_some()))
    else {
        return false;
    };
    let text = fs::read_to_string(&parent).unwrap_or_default();
    declares(&text, &name) == Some(true) || is_test_file(&parent)
}

/// Whether `text` declares `mod name;`, and if so whether under a test or proof cfg.
fn declares(text: &str, name: &str) -> Option<bool> {
    let decl = [format!("mod {name};"), format!("pub mod {name};"), format!("pub(crate) mod {name};")];
    let mut prev = "";
    for line in text.lines() {
        let t = line.trim();
        if decl.iter().any(|d| t == d) {
            let cfg = prev.starts_with("#[cfg(") && !prev.contains("not(");
            return Some(cfg && (prev.contains("test") || prev.contains("kani")));
        }
        if !t.is_empty() {
            prev = t;
        }
    }
    None
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// One crate's figures, from its `src/`.
pub fn measure(root: &Path, krate: &str) -> Figures {
    let mut files = Vec::new();
    sources(&root.join(krate).join("src"), &mut files);
    files.sort();
    let mut f = Figures::default();
    for p in files {
        let rel = p.strip_prefix(root).unwrap_or(&p);
        let test = is_test_file(&p);
        if let Ok(text) = fs::read_to_string(&p) {
            f.add(rel, &text, test);
        }
    }
    f
}

/// The report: one line a crate, then the README.
pub fn report(root: &Path) -> String {
    let mut out = format!(
        "{:<16} {:>8} {:>12} {:>30}\n",
        "crate",
        format!("comment/code (<= {COMMENT_RATIO_MAX})"),
        format!("parens/100 words (<= {PARENS_MAX})"),
        format!("largest non-test file (<= {FILE_LINES_MAX})")
    );
    for krate in CRATES {
        let f = measure(root, krate);
        let mark = |over: bool| if over { " over" } else { "" };
        let (file, lines) = f.largest.clone().unwrap_or_default();
        out.push_str(&format!(
            "{krate:<16} {:>8.2}{:<5} {:>12.1}{:<5} {lines:>6}{:<5} {}\n",
            f.ratio(),
            mark(f.ratio() > COMMENT_RATIO_MAX),
            f.parens_per_100(),
            mark(f.parens_per_100() > PARENS_MAX),
            mark(lines > FILE_LINES_MAX),
            file.display()
        ));
        for (p, n) in &f.over {
            out.push_str(&format!("    over {FILE_LINES_MAX} lines: {} ({n})\n", p.display()));
        }
    }
    let readme = fs::read_to_string(root.join("README.md")).map(|t| t.lines().count()).unwrap_or(0);
    out.push_str(&format!("README.md {readme} lines (<= {README_LINES_MAX})\n"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_code_and_parens_are_told_apart() {
        let mut f = Figures::default();
        let src = "//! Top (an aside).\nfn a() { b(\"//x\") } // tail\n\n/// Doc `f(x)` call (one).\n#[cfg(test)]\nmod tests { // not counted\n}\n";
        f.add(Path::new("x.rs"), src, false);
        let code = ["fn a() { b(\"//x\") }", "#[cfg(test)]", "mod tests {", "}"];
        assert_eq!(f.code, code.iter().map(|c| c.len()).sum::<usize>());
        assert_eq!(f.comment, ["Top (an aside).", "tail", "Doc `f(x)` call (one).", "not counted"].concat().len());
        assert_eq!(f.words, 3 + 1 + 4 + 2);
        assert_eq!(f.parens, 2);
        assert_eq!(f.largest, Some((PathBuf::from("x.rs"), 4)));
        f.add(Path::new("tests.rs"), &"x\n".repeat(10), true);
        assert_eq!(f.largest, Some((PathBuf::from("x.rs"), 4)));
    }

    #[test]
    fn a_crate_is_measured_from_its_sources_and_reported_with_its_bounds() {
        let root = std::env::temp_dir().join(format!("nrt-prose-{}", std::process::id()));
        let src = root.join("core/src");
        fs::create_dir_all(src.join("big")).unwrap();
        // lib.rs: three code lines, one comment of 19 characters with one aside.
        fs::write(src.join("lib.rs"), "mod big;\n#[cfg(test)]\nmod tests;\n// abcd (fgh) jklmnopq\n").unwrap();
        fs::write(src.join("tests.rs"), "fn t() {}\n".repeat(1000)).unwrap();
        fs::write(src.join("big/mod.rs"), "x\n".repeat(FILE_LINES_MAX + 1)).unwrap();
        // Exactly at the bound is not over; of two equal largest, the first stays.
        fs::write(src.join("m.rs"), "#[cfg(test)]\nuse a;\n".to_string() + &"x\n".repeat(FILE_LINES_MAX - 2)).unwrap();
        fs::write(src.join("y.rs"), "x\n".repeat(FILE_LINES_MAX + 5)).unwrap();
        fs::write(src.join("z.rs"), "x\n".repeat(FILE_LINES_MAX + 5)).unwrap();
        fs::write(root.join("README.md"), "a\nb\n").unwrap();
        let f = measure(&root, "core");
        assert_eq!((f.comment, f.words, f.parens), (19, 3, 1));
        let lib = "mod big;".len() + "#[cfg(test)]".len() + "mod tests;".len();
        let m = "#[cfg(test)]".len() + "use a;".len() + FILE_LINES_MAX - 2;
        assert_eq!(f.code, lib + 9000 + FILE_LINES_MAX + 1 + m + 2 * (FILE_LINES_MAX + 5));
        assert_eq!(f.largest, Some((PathBuf::from("core/src/y.rs"), FILE_LINES_MAX + 5)));
        let over = |p: &str, n| (PathBuf::from(p), n);
        let want = [
            over("core/src/big/mod.rs", FILE_LINES_MAX + 1),
            over("core/src/y.rs", FILE_LINES_MAX + 5),
            over("core/src/z.rs", FILE_LINES_MAX + 5),
        ];
        assert_eq!(f.over, want, "m.rs, a cfg(test) that starts no module, has exactly the bound");
        assert!((f.parens_per_100() - 100.0 / 3.0).abs() < 1e-9);
        assert!((f.ratio() - 19.0 / f.code as f64).abs() < 1e-12);
        let text = report(&root);
        assert!(
            text.contains(&format!("over {FILE_LINES_MAX} lines: core/src/big/mod.rs ({})", FILE_LINES_MAX + 1)),
            "{text}"
        );
        assert!(text.contains("README.md 2 lines"), "{text}");
        let _ = fs::remove_dir_all(&root);
    }

    #[test]
    fn a_comment_marker_inside_a_string_is_code() {
        assert_eq!(split_comment(r#"let s = "a\"//b"; // c"#), (r#"let s = "a\"//b"; "#, Some(" c")));
        assert_eq!(split_comment("//! doc"), ("", Some(" doc")));
        assert_eq!(split_comment("x /"), ("x /", None));
        assert_eq!(prose_parens("(a) f(x) `(b)` (c"), 2);
        assert_eq!(prose_parens("`a (b)` (c)"), 1, "an aside inside code marks is code");
        assert_eq!(split_comment("xy // c"), ("xy ", Some(" c")));
        assert_eq!(split_comment("a / b"), ("a / b", None), "one slash is division");
        let mut f = Figures::default();
        f.add(Path::new("a.rs"), "fn a() {}\nmod b;\nfn c() {}\n", false);
        assert_eq!(f.largest, Some((PathBuf::from("a.rs"), 3)), "only a cfg line starts the tail");
        assert_eq!(split_comment(r"x \// c"), (r"x \", Some(" c")), "a backslash outside a string escapes nothing");
        assert!(!opens_module("fn f() {}\n") && opens_module("\nmod tests {"));
        let mut f = Figures::default();
        f.add(Path::new("b.rs"), "#[cfg(test)]\nuse a;\nfn f() {}\n#[cfg(test)]\nmod tests {\n}", false);
        assert_eq!(f.largest, Some((PathBuf::from("b.rs"), 3)), "the second cfg line starts the tail, not the first");
    }

    #[test]
    fn test_and_proof_files_are_told_by_their_declaration() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        assert!(is_test_file(&root.join("core/src/exec/proofs/step.rs")));
        assert!(is_test_file(&root.join("core/src/exec/proofs.rs")));
        assert!(!is_test_file(&root.join("core/src/exec/mod.rs")));
        assert!(!is_test_file(&root.join("xtask/src/proofs/mod.rs")));
        assert_eq!(declares("#[cfg(kani)]\nmod proofs;\n", "proofs"), Some(true));
        assert_eq!(declares("/// Doc.\npub mod ring;\n", "ring"), Some(false));
        assert_eq!(declares("#[cfg(any(kani, test))]\nmod proofs;\n", "proofs"), Some(true));
        assert_eq!(declares("#[cfg(not(test))]\nmod real;\n", "real"), Some(false));
        assert_eq!(declares("mod ring;\n", "proofs"), None);
    }
}
