//! The crate's module graph has no cycle, `hal` is a leaf and `event` is imported
//! by no layer.
//!
//! The test reads `core/src`, takes every `crate::<module>` path in code (comments,
//! doc comments and string literals are left out, so an intra-doc link is not a
//! dependency) and builds the graph of the top-level modules declared in
//! `lib.rs`: an edge `a -> b` when a file of `a` names `crate::b`. Left out:
//!
//! - modules compiled only for tests or proofs (`#[cfg(test)]`, `#[cfg(kani)]`,
//!   `#[cfg(any(kani, test))]`, inline or in their own files), and every file
//!   under a `proofs` module: they are never part of the library a platform
//!   links, and a test or harness reaching across modules is what they are for;
//! - `testutil`'s own edges count (it is built with the `test-utils` feature),
//!   and nothing in the library depends on it.
//!
//! A cycle fails the test with its path (`hal -> event -> dma -> hal`) and, for
//! each edge, the first file and line that makes it.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Code of a Rust source with comments, strings and char literals blanked
/// (newlines kept, so line numbers hold).
fn strip(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let blank = |out: &mut Vec<u8>, c: u8| out.push(if c == b'\n' { b'\n' } else { b' ' });
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == b'/' && next == Some(b'/') {
            while i < b.len() && b[i] != b'\n' {
                out.push(b' ');
                i += 1;
            }
        } else if c == b'/' && next == Some(b'*') {
            let mut depth = 0usize;
            while i < b.len() {
                if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                    depth += 1;
                    out.extend_from_slice(b"  ");
                    i += 2;
                } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                    depth -= 1;
                    out.extend_from_slice(b"  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, b[i]);
                    i += 1;
                }
            }
        } else if c == b'r'
            && (next == Some(b'"') || next == Some(b'#'))
            && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'))
        {
            // A raw string r"..." or r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&b'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&b'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= b.len() {
                    break;
                }
                if b[j] == b'"' && b[j + 1..].iter().take(hashes).filter(|&&h| h == b'#').count() == hashes {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            for &ch in &b[i..j.min(b.len())] {
                blank(&mut out, ch);
            }
            i = j;
        } else if c == b'"' {
            out.push(b' ');
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    blank(&mut out, b[i]);
                    i += 1;
                }
                if i < b.len() {
                    blank(&mut out, b[i]);
                    i += 1;
                }
            }
            out.push(b' ');
            i += 1;
        } else if c == b'\'' {
            // A char literal ('x', '\n', '\u{..}'), else a lifetime.
            if next == Some(b'\\') {
                let mut j = i + 2;
                while j < b.len() && b[j] != b'\'' {
                    j += 1;
                }
                out.extend(std::iter::repeat_n(b' ', j + 1 - i));
                i = j + 1;
            } else if b.get(i + 2) == Some(&b'\'') {
                out.extend_from_slice(b"   ");
                i += 3;
            } else {
                out.push(c);
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether a `#[cfg(..)]` predicate holds only in tests or proofs.
fn test_or_proof_only(pred: &str) -> bool {
    let words: Vec<&str> =
        pred.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).filter(|w| !w.is_empty()).collect();
    !words.is_empty() && words.iter().all(|w| matches!(*w, "any" | "test" | "kani"))
}

/// A module declaration of a file.
struct Decl {
    name: String,
    /// `mod name { .. }`, not `mod name;`.
    inline: bool,
    /// Compiled only in tests or proofs.
    gated: bool,
    /// Where `mod` stands.
    at: usize,
    /// The byte range of an inline module's body.
    body: (usize, usize),
}

/// The modules a file declares.
fn declared_modules(code: &str) -> Vec<Decl> {
    let mut out = Vec::new();
    let b = code.as_bytes();
    let mut search = 0;
    while let Some(off) = code[search..].find("mod ") {
        let at = search + off;
        search = at + 4;
        if at > 0 && (b[at - 1].is_ascii_alphanumeric() || b[at - 1] == b'_') {
            continue;
        }
        let rest = &code[at + 4..];
        let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        if name.is_empty() {
            continue;
        }
        let after = rest[name.len()..].trim_start();
        let inline = after.starts_with('{');
        if !inline && !after.starts_with(';') {
            continue;
        }
        // The attributes just before the declaration (and `pub`, `pub(crate)`).
        let before = code[..at].trim_end();
        let before = before.strip_suffix("pub(crate)").or_else(|| before.strip_suffix("pub")).unwrap_or(before);
        let mut gated = false;
        let mut cursor = before.trim_end();
        while cursor.ends_with(']') {
            let Some(open) = cursor.rfind("#[") else { break };
            let attr = &cursor[open + 2..cursor.len() - 1];
            if let Some(pred) = attr.trim().strip_prefix("cfg(") {
                gated |= test_or_proof_only(pred);
            }
            cursor = cursor[..open].trim_end();
        }
        let (start, end) = if inline {
            let open = at + 4 + name.len() + (rest[name.len()..].len() - after.len());
            let mut depth = 0usize;
            let mut j = open;
            while j < b.len() {
                match b[j] {
                    b'{' => depth += 1,
                    b'}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            (open, j)
        } else {
            (0, 0)
        };
        out.push(Decl { name, inline, gated, at, body: (start, end) });
    }
    out
}

/// The top-level modules `code` names as `crate::<module>` (also inside
/// `crate::{a, b::c}`), each with the line of its first mention.
fn crate_refs(code: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    let line_of = |at: usize| code[..at].bytes().filter(|&c| c == b'\n').count() + 1;
    let mut search = 0;
    while let Some(off) = code[search..].find("crate::") {
        let at = search + off;
        search = at + 7;
        let b = code.as_bytes();
        if at > 0 && (b[at - 1].is_ascii_alphanumeric() || b[at - 1] == b'_' || b[at - 1] == b'$') {
            continue;
        }
        let rest = code[at + 7..].trim_start();
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 1usize;
            let mut item = String::new();
            let mut items = Vec::new();
            for ch in group.chars() {
                match ch {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    ',' if depth == 1 => items.push(std::mem::take(&mut item)),
                    _ if depth == 1 => item.push(ch),
                    _ => {}
                }
            }
            items.push(item);
            for it in items {
                let name: String = it.trim().chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                if !name.is_empty() {
                    out.push((name, line_of(at)));
                }
            }
        } else {
            let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            if !name.is_empty() {
                out.push((name, line_of(at)));
            }
        }
    }
    out
}

/// An edge's first witness: file and line.
type Witness = (PathBuf, usize);

/// The graph: module -> (module it names -> first witness).
type Graph = BTreeMap<String, BTreeMap<String, Witness>>;

/// Add the edges of the library file `path` (code already stripped), owned by
/// top-level module `owner`, and walk the files of the modules it declares.
fn walk(path: &Path, dir: &Path, owner: &str, tops: &BTreeSet<String>, graph: &mut Graph) {
    let src = fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let code = strip(&src);
    let mods = declared_modules(&code);
    // Blank the bodies of gated inline modules.
    let mut kept = code.clone().into_bytes();
    for d in mods.iter().filter(|d| d.inline && d.gated) {
        {
            for c in &mut kept[d.body.0..d.body.1] {
                if *c != b'\n' {
                    *c = b' ';
                }
            }
        }
    }
    let kept = String::from_utf8(kept).expect("ascii blanking keeps UTF-8");
    for (name, line) in crate_refs(&kept) {
        if tops.contains(&name) && name != owner {
            graph.entry(owner.to_string()).or_default().entry(name).or_insert_with(|| (path.to_path_buf(), line));
        }
    }
    let gated_bodies: Vec<(usize, usize)> = mods.iter().filter(|d| d.inline && d.gated).map(|d| d.body).collect();
    for d in mods {
        let in_gated = gated_bodies.iter().any(|&(s, e)| s < d.at && d.at < e);
        if d.inline || d.gated || in_gated || d.name == "proofs" {
            continue;
        }
        let name = d.name;
        let sub = dir.join(&name);
        let file = [dir.join(format!("{name}.rs")), sub.join("mod.rs")].into_iter().find(|p| p.exists());
        if let Some(file) = file {
            walk(&file, &sub, owner, tops, graph);
        }
    }
}

/// The graph of `src` (a crate's `src/`): the top-level modules of `lib.rs` that
/// are not gated to tests or proofs, and their edges.
fn module_graph(src: &Path) -> (BTreeSet<String>, Graph) {
    let lib = strip(&fs::read_to_string(src.join("lib.rs")).expect("read lib.rs"));
    let tops: BTreeSet<String> = declared_modules(&lib)
        .into_iter()
        .filter(|d| !d.inline && !d.gated && d.name != "proofs")
        .map(|d| d.name)
        .collect();
    let mut graph = Graph::new();
    for m in &tops {
        let sub = src.join(m);
        let file = [src.join(format!("{m}.rs")), sub.join("mod.rs")].into_iter().find(|p| p.exists());
        let file = file.unwrap_or_else(|| panic!("no file for module {m}"));
        walk(&file, &sub, m, &tops, &mut graph);
    }
    (tops, graph)
}

/// A cycle of the graph, as its modules in order with the first repeated at the
/// end, if there is one.
fn find_cycle(graph: &Graph) -> Option<Vec<String>> {
    fn visit(n: &str, graph: &Graph, state: &mut BTreeMap<String, u8>, path: &mut Vec<String>) -> Option<Vec<String>> {
        state.insert(n.to_string(), 1);
        path.push(n.to_string());
        for m in graph.get(n).map(|e| e.keys().cloned().collect::<Vec<_>>()).unwrap_or_default() {
            match state.get(&m).copied() {
                Some(1) => {
                    let from = path.iter().position(|p| *p == m).expect("on the path");
                    let mut cycle = path[from..].to_vec();
                    cycle.push(m);
                    return Some(cycle);
                }
                Some(_) => {}
                None => {
                    if let Some(c) = visit(&m, graph, state, path) {
                        return Some(c);
                    }
                }
            }
        }
        path.pop();
        state.insert(n.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in graph.keys() {
        if !state.contains_key(n) {
            if let Some(c) = visit(n, graph, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

fn describe(cycle: &[String], graph: &Graph) -> String {
    let mut s = cycle.join(" -> ");
    for w in cycle.windows(2) {
        let (file, line) = &graph[&w[0]][&w[1]];
        s.push_str(&format!("\n  {} -> {}: {}:{line}", w[0], w[1], file.display()));
    }
    s
}

fn core_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn the_module_graph_of_core_has_no_cycle() {
    let (tops, graph) = module_graph(&core_src());
    // The walk saw the crate: the layers are there and depend on the seam.
    for m in ["hal", "event", "exec", "dma", "dge", "nq", "status"] {
        assert!(tops.contains(m), "module {m} not found in lib.rs: {tops:?}");
    }
    assert!(graph["exec"].contains_key("hal") && graph["dma"].contains_key("hal"), "{graph:?}");
    if let Some(cycle) = find_cycle(&graph) {
        panic!("import cycle between core's modules: {}", describe(&cycle, &graph));
    }
}

#[test]
fn hal_is_a_leaf_and_no_layer_imports_event() {
    let (_, graph) = module_graph(&core_src());
    let hal: Vec<&String> = graph.get("hal").map(|e| e.keys().collect()).unwrap_or_default();
    assert!(hal.iter().all(|m| *m == "status"), "hal may depend on status only; it names {hal:?}");
    let importers: Vec<&String> = graph.iter().filter(|(_, e)| e.contains_key("event")).map(|(m, _)| m).collect();
    // testutil records every layer's events in one stream; it is no layer.
    assert!(importers.iter().all(|m| *m == "testutil"), "event is imported by {importers:?}");
}

// The checker itself, on sources written here.

fn graph_of(files: &[(&str, &str)]) -> Graph {
    // One directory per call: the tests run in parallel threads of one process.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("nrt-core-module-graph-{}-{call}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    for (path, text) in files {
        let p = dir.join(path);
        fs::create_dir_all(p.parent().expect("a parent")).expect("mkdir");
        fs::write(&p, text).expect("write");
    }
    let (_, graph) = module_graph(&dir);
    let _ = fs::remove_dir_all(&dir);
    graph
}

#[test]
fn a_cycle_through_a_submodule_is_found_and_named() {
    let graph = graph_of(&[
        ("lib.rs", "pub mod a;\npub mod b;\npub mod c;\n"),
        ("a.rs", "use crate::b::X;\n"),
        ("b/mod.rs", "mod inner;\n"),
        ("b/inner.rs", "use crate::{c::Y, a};\n"),
        ("c.rs", "pub struct Y;\n"),
    ]);
    let cycle = find_cycle(&graph).expect("a -> b -> a");
    assert_eq!(cycle, ["a", "b", "a"]);
    assert!(describe(&cycle, &graph).contains("b/inner.rs:1"), "{}", describe(&cycle, &graph));
}

#[test]
fn comments_strings_and_test_or_proof_modules_are_not_edges() {
    let graph = graph_of(&[
        ("lib.rs", "pub mod a;\npub mod b;\n#[cfg(any(kani, test))]\nmod proofs;\n"),
        (
            "a.rs",
            "//! [`X`](crate::b::X)\n/* crate::b */\nconst S: &str = \"crate::b\";\nconst C: char = '\"';\n\
             #[cfg(test)]\nmod tests { use crate::b::X; }\n#[cfg(kani)]\nmod proofs;\n",
        ),
        ("a/proofs.rs", "use crate::b::X;\n"),
        ("b.rs", "use crate::a::Y;\n"),
        ("proofs.rs", "use crate::a::Y;\nuse crate::b::X;\n"),
    ]);
    assert_eq!(find_cycle(&graph), None, "{graph:?}");
    assert!(!graph.contains_key("a"), "{graph:?}");
    assert!(graph["b"].contains_key("a"));
}

#[test]
fn a_feature_gated_module_counts() {
    let graph = graph_of(&[
        ("lib.rs", "pub mod a;\n#[cfg(any(test, feature = \"test-utils\"))]\npub mod t;\n"),
        ("a.rs", "#[cfg(feature = \"x\")]\nmod f { use crate::t::Z; }\n"),
        ("t.rs", "use crate::a::Y;\n"),
    ]);
    assert_eq!(find_cycle(&graph), Some(vec!["a".to_string(), "t".to_string(), "a".to_string()]));
}
