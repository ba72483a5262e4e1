//! The `NEURON_RT_*` variables this binding does not honour: each one set gets
//! one warning per process on standard error, so that a setting the user
//! relies on is never dropped silently (G-ENV-UNHONOURED).
//!
//! Honoured are [`EXEC_TIMEOUT`], [`VISIBLE_CORES`], [`NUM_CORES`],
//! [`LOG_LEVEL`] with its [`LOG_COMPONENTS`] forms, and [`POLL_SLICE_US`]. The
//! warning for one the SDK documents says what it does there.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::sync::Mutex;

use super::{EXEC_TIMEOUT, LOG_COMPONENTS, LOG_LEVEL, NUM_CORES, POLL_SLICE_US, VISIBLE_CORES};

/// The prefix of the runtime's variables.
pub const PREFIX: &str = "NEURON_RT_";

/// The SDK's documented variables this binding does not honour, each with what
/// it does in libnrt and why it does nothing here, from
/// `neuron-runtime/nrt-configurable-parameters.rst`. A `_<component>` form
/// is matched by its prefix.
pub const DOCUMENTED: [(&str, &str); 5] = [
    (
        "NEURON_RT_LOG_LOCATION",
        "libnrt's log destination (console or syslog); this binding logs to standard error only",
    ),
    ("NEURON_RT_VALIDATE_HASH", "libnrt's NEFF checksum validation at load; no NEFF is loaded here"),
    (
        "NEURON_RT_MULTI_INSTANCE_SHARED_WEIGHTS",
        "libnrt's weight sharing between model instances; no model is loaded here",
    ),
    (
        "NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS",
        "libnrt's asynchronous execution queue depth; a session runs one request at a time and a poller \
         takes what it is given",
    ),
    ("NEURON_RT_ALLOW_LEGACY_NEFF", "libnrt's running of a NEFF built for an older arch; no NEFF is loaded here"),
];

/// Whether this binding honours variable `name`.
pub fn honoured(name: &str) -> bool {
    [EXEC_TIMEOUT, VISIBLE_CORES, NUM_CORES, LOG_LEVEL, POLL_SLICE_US].contains(&name)
        || name.strip_prefix(LOG_LEVEL).and_then(|r| r.strip_prefix('_')).is_some_and(|c| LOG_COMPONENTS.contains(&c))
}

/// The name and warning of each `NEURON_RT_*` variable of `vars` set and not honoured, in name order.
pub fn warnings(vars: impl IntoIterator<Item = (OsString, OsString)>) -> Vec<(String, String)> {
    let mut names: Vec<String> = vars
        .into_iter()
        .filter(|(_, v)| !v.is_empty())
        .filter_map(|(k, _)| k.into_string().ok())
        .filter(|k| k.starts_with(PREFIX) && !honoured(k))
        .collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .map(|name| {
            let doc = DOCUMENTED.iter().find(|(d, _)| name == *d || name.starts_with(&format!("{d}_")));
            let line = match doc {
                Some((_, what)) => format!("{name} is set but has no effect here ({what})"),
                None => format!("{name} is set but has no effect here (not a variable this runtime reads)"),
            };
            (name, line)
        })
        .collect()
}

/// Print [`warnings`] of the process environment on standard error, each
/// variable once per process; nothing when `quiet`.
pub fn warn_once(quiet: bool) {
    static WARNED: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
    if quiet {
        return;
    }
    let mut warned = WARNED.lock().unwrap_or_else(|p| p.into_inner());
    for (name, line) in warnings(std::env::vars_os()) {
        if warned.insert(name) {
            nrt_abi::errln!("nrt: warning: {line}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs.iter().map(|(k, v)| (OsString::from(k), OsString::from(v))).collect()
    }

    #[test]
    fn each_unhonoured_variable_is_named_once_with_what_it_does_there() {
        let got = warnings(vars(&[
            ("NEURON_RT_VALIDATE_HASH", "true"),
            ("NEURON_RT_LOG_LOCATION", "syslog"),
            ("NEURON_RT_LOG_LOCATION_TDRV", "tdrv.log"),
            ("NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS", "3"),
            ("NEURON_RT_SOMETHING_NEW", "1"),
            ("NEURON_RT_LOG_LEVEL_FOO", "INFO"),
            ("NEURON_RT_EXEC_TIMEOUT", "5"),
            ("NEURON_RT_VISIBLE_CORES", "0"),
            ("NEURON_RT_NUM_CORES", "1"),
            ("NEURON_RT_LOG_LEVEL", "INFO"),
            ("NEURON_RT_LOG_LEVEL_TDRV", "DEBUG"),
            ("NEURON_RT_ALLOW_LEGACY_NEFF", ""),
            ("PATH", "/bin"),
        ]));
        let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS",
                "NEURON_RT_LOG_LEVEL_FOO",
                "NEURON_RT_LOG_LOCATION",
                "NEURON_RT_LOG_LOCATION_TDRV",
                "NEURON_RT_SOMETHING_NEW",
                "NEURON_RT_VALIDATE_HASH",
            ]
        );
        for (name, line) in &got {
            assert!(line.starts_with(&format!("{name} is set but has no effect here (")), "{line}");
        }
        assert!(got[0].1.contains("asynchronous execution"), "{}", got[0].1);
        assert!(got[2].1.contains("standard error only") && got[3].1.contains("standard error only"));
        assert!(got[4].1.contains("not a variable this runtime reads"));
        assert!(DOCUMENTED.iter().all(|(d, _)| d.starts_with(PREFIX) && !honoured(d)));
    }
}
