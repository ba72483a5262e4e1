//! How a test that cannot make its check here says so, and how `cargo xtask
//! ci` reads it. The test prints `!!! SKIPPED` past the harness's capture and
//! appends `TEST<TAB>CLASS<TAB>REASON` to the file [`SKIP_LOG`] names; xtask
//! lists each as a SKIPPED stage: never a pass, never a red run.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// The variable naming the file a skipped check is recorded in.
pub const SKIP_LOG: &str = "NRT_SKIP_LOG";

/// What a skip is, for a CI machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SkipClass {
    /// A tool `cargo xtask ci` installs is missing on a machine that could
    /// install it: the install failed.
    Installable,
    /// Such a tool is missing and this machine cannot install it.
    NotInstallable,
    /// Something no package gives, such as a kernel feature.
    Unsupported,
}

impl SkipClass {
    /// Its word in the log.
    pub fn name(self) -> &'static str {
        match self {
            SkipClass::Installable => "installable",
            SkipClass::NotInstallable => "not-installable",
            SkipClass::Unsupported => "unsupported",
        }
    }

    /// The class a word of the log names.
    pub fn parse(word: &str) -> Option<SkipClass> {
        [SkipClass::Installable, SkipClass::NotInstallable, SkipClass::Unsupported]
            .into_iter()
            .find(|c| c.name() == word)
    }
}

/// One skip read from the log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skip {
    /// `CRATE::TEST`.
    pub test: String,
    /// What it is for a CI machine.
    pub class: SkipClass,
    /// Why the check was not made.
    pub why: String,
}

/// The log's line for a skip of `test`; tabs and newlines of `why` become spaces.
pub fn line(test: &str, class: SkipClass, why: &str) -> String {
    format!("{test}\t{}\t{}\n", class.name(), why.replace(['\t', '\n'], " "))
}

/// The skips a log records, each test once, in order. A line without a class
/// is [`SkipClass::Unsupported`].
pub fn read_log(text: &str) -> Vec<Skip> {
    let mut out: Vec<Skip> = Vec::new();
    for l in text.lines().filter(|l| !l.trim().is_empty()) {
        let (test, rest) = l.split_once('\t').unwrap_or((l, "no reason recorded"));
        let (class, why) = match rest.split_once('\t') {
            Some((c, why)) => match SkipClass::parse(c) {
                Some(class) => (class, why),
                None => (SkipClass::Unsupported, rest),
            },
            None => (SkipClass::Unsupported, rest),
        };
        if !out.iter().any(|s| s.test == test) {
            out.push(Skip { test: test.to_string(), class, why: why.to_string() });
        }
    }
    out
}

/// Whether this machine could install the Debian package `pkg` as `cargo xtask
/// ci` does: `apt-get` runs as root and knows a candidate. Else why not.
pub fn installable(pkg: &str) -> Result<(), String> {
    let quiet = |c: &mut Command| c.stdin(Stdio::null()).stderr(Stdio::null()).output();
    if !quiet(Command::new("apt-get").arg("--version")).is_ok_and(|o| o.status.success()) {
        return Err("no apt-get on this machine".into());
    }
    match effective_uid() {
        Some(0) => {}
        Some(uid) => return Err(format!("not root (effective uid {uid}), so apt-get cannot install {pkg}")),
        None => return Err("the effective uid is not in /proc/self/status".into()),
    }
    let policy = quiet(Command::new("apt-cache").args(["policy", pkg]))
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let candidate = policy.lines().find_map(|l| l.trim().strip_prefix("Candidate:")).map(str::trim);
    match candidate {
        Some(v) if v != "(none)" => Ok(()),
        _ => Err(format!("apt knows no candidate for {pkg} (`apt-cache policy {pkg}`)")),
    }
}

/// The effective uid, from the `Uid:` line of `/proc/self/status`.
fn effective_uid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let uids = status.lines().find_map(|l| l.strip_prefix("Uid:"))?;
    uids.split_whitespace().nth(1)?.parse().ok()
}

/// The running test of crate `krate` as the log names it, `CRATE::TEST`.
pub fn test_name(krate: &str) -> String {
    format!("{krate}::{}", std::thread::current().name().unwrap_or("(unnamed test thread)"))
}

/// Say that `test` checks nothing here, and why: on standard error past the
/// harness's capture, and as a [`line()`] of the [`SKIP_LOG`] file. A failure
/// to record panics.
pub fn record(test: &str, class: SkipClass, why: &str) {
    let why = why.replace(['\t', '\n'], " ");
    let _ = writeln!(std::io::stderr(), "\n!!! SKIPPED {test}: {why}\n");
    let Some(path) = std::env::var_os(SKIP_LOG) else { return };
    let path = Path::new(&path);
    if let Err(e) = append(path, &line(test, class, &why)) {
        panic!("{test}: recording the skip in {SKIP_LOG}={}: {e}", path.display());
    }
}

/// Append `text` to the file `path`, made with its directory if missing.
fn append(path: &Path, text: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::OpenOptions::new().create(true).append(true).open(path)?.write_all(text.as_bytes())
}

/// [`record`] a check that needs Debian's `pkg`: [`SkipClass::Installable`]
/// when this machine could install it, else [`SkipClass::NotInstallable`].
/// Where `CI` is set and no [`SKIP_LOG`] is, nobody would see the skip, so it panics.
pub fn missing_tool(test: &str, pkg: &str, why: &str) {
    if std::env::var_os("CI").is_some() && std::env::var_os(SKIP_LOG).is_none() {
        panic!(
            "{why}; CI is set and no skip log ({SKIP_LOG}, which `cargo xtask ci` sets and reports) records a skip, \
             so the check fails rather than pass unseen"
        );
    }
    match installable(pkg) {
        Ok(()) => record(
            test,
            SkipClass::Installable,
            &format!("{why} (this machine could install Debian's {pkg}: apt-get, root, a candidate)"),
        ),
        Err(cannot) => {
            record(test, SkipClass::NotInstallable, &format!("{why} ({pkg} cannot be installed here: {cannot})"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_reads_back_with_its_class_and_each_test_once() {
        let text = [
            line("trace::render", SkipClass::Installable, "needs Chromium:\n/usr/bin/chromium\tnot found"),
            line("driver::a", SkipClass::Unsupported, "no user_notif"),
            line("trace::render", SkipClass::NotInstallable, "again"),
            "\nold::two\tfields only\nodd line\n".to_string(),
        ]
        .concat();
        let got = read_log(&text);
        let want = [
            ("trace::render", SkipClass::Installable, "needs Chromium: /usr/bin/chromium not found"),
            ("driver::a", SkipClass::Unsupported, "no user_notif"),
            ("old::two", SkipClass::Unsupported, "fields only"),
            ("odd line", SkipClass::Unsupported, "no reason recorded"),
        ]
        .map(|(t, c, w)| Skip { test: t.into(), class: c, why: w.into() });
        assert_eq!(got, want);
        assert!(read_log("").is_empty());
        for c in [SkipClass::Installable, SkipClass::NotInstallable, SkipClass::Unsupported] {
            assert_eq!(SkipClass::parse(c.name()), Some(c));
        }
        assert_eq!(SkipClass::parse("skipped"), None);
    }

    /// The log's file is made, with the directories it is in, at the first
    /// skip, and later skips are appended to it.
    #[test]
    fn the_log_and_its_directory_are_made_at_the_first_skip() {
        let dir = std::env::temp_dir().join(format!("nrt-abi-skiplog-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let log = dir.join("not").join("there").join("skips.txt");
        append(&log, &line("a::one", SkipClass::Unsupported, "why")).unwrap();
        append(&log, &line("a::two", SkipClass::Installable, "why not")).unwrap();
        let tests: Vec<String> =
            read_log(&std::fs::read_to_string(&log).unwrap()).into_iter().map(|s| s.test).collect();
        assert_eq!(tests, ["a::one", "a::two"]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
