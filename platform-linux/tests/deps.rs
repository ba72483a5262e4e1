//! The binding a runtime links carries no simulator: `nrt-sim` is at most a
//! dev-dependency of `nrt-linux`. What the two agree on
//! is `nrt-abi`.

/// The `[section]` of a Cargo.toml, its lines up to the next section.
fn section<'a>(toml: &'a str, name: &str) -> Vec<&'a str> {
    let header = format!("[{name}]");
    toml.lines()
        .skip_while(|l| l.trim() != header)
        .skip(1)
        .take_while(|l| !l.trim_start().starts_with('['))
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect()
}

#[test]
fn nrt_linux_does_not_depend_on_the_simulator() {
    let toml = include_str!("../Cargo.toml");
    let deps = section(toml, "dependencies");
    assert!(!deps.is_empty(), "no [dependencies] section found");
    assert!(deps.iter().any(|l| l.starts_with("nrt-abi")), "{deps:?}");
    assert!(!deps.iter().any(|l| l.contains("nrt-sim")), "nrt-sim in [dependencies]: {deps:?}");
    let features = section(toml, "features");
    assert!(!features.iter().any(|l| l.contains("nrt-sim")), "a feature pulls nrt-sim: {features:?}");
    assert!(section(toml, "dev-dependencies").iter().any(|l| l.starts_with("nrt-sim")), "tests only");
}
