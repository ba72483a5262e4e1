//! The Neuron runtime's environment variables this binding honours, parsed by
//! pure functions into an [`RtEnv`], so that tests need not touch the process
//! environment. Their meanings come from the SDK's
//! `neuron-runtime/guides/configuration-guide.rst` and `nrt-developer-guide.rst`;
//! `NEURON_RT_POLL_SLICE_US` is this library's own.
//!
//! `NEURON_RT_VISIBLE_CORES` beats `NEURON_RT_NUM_CORES`, the guide's note 5, and
//! its indices are host-wide, note 3. A flag beats its variable; a bad value is
//! refused at start, naming the variable, the value and what is accepted; any
//! other `NEURON_RT_*` variable set is warned of once ([`unhonoured`]).

use nrt_core::arch::Arch;

pub mod unhonoured;

/// `NEURON_RT_EXEC_TIMEOUT`: the execution timeout in seconds.
pub const EXEC_TIMEOUT: &str = "NEURON_RT_EXEC_TIMEOUT";
/// `NEURON_RT_VISIBLE_CORES`: the NeuronCores to reserve, an index, a range `a-b` or a list of those.
pub const VISIBLE_CORES: &str = "NEURON_RT_VISIBLE_CORES";
/// `NEURON_RT_NUM_CORES`: how many NeuronCores to reserve; 0 is all.
pub const NUM_CORES: &str = "NEURON_RT_NUM_CORES";
/// `NEURON_RT_LOG_LEVEL`, and `_<component>` for one component.
pub const LOG_LEVEL: &str = "NEURON_RT_LOG_LEVEL";
/// `NEURON_RT_POLL_SLICE_US`: this library's own, a hybrid poller's slice in microseconds (G-POLL-SLICE).
pub const POLL_SLICE_US: &str = "NEURON_RT_POLL_SLICE_US";
/// The shortest slice the variable takes, us: the poller's batch window.
pub const MIN_POLL_SLICE_US: u32 = 20;
/// The longest slice the variable takes, us: the poller's sweep bound.
pub const MAX_POLL_SLICE_US: u32 = 1000;
/// The components of `NEURON_RT_LOG_LEVEL_<component>` the SDK names.
pub const LOG_COMPONENTS: [&str; 4] = ["TDRV", "NMGR", "KMGR", "NRT"];
/// The largest timeout, seconds: the guide's `INT_MAX`.
pub const MAX_EXEC_TIMEOUT_S: u32 = i32::MAX as u32;
/// The largest NeuronCore index a core list may name, for the session's 64-bit map of its cores.
pub const MAX_CORE_INDEX: u32 = 63;

/// A variable refused: its name, its value and what it accepts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnvError {
    /// The variable.
    pub var: String,
    /// Its value.
    pub value: String,
    /// What it accepts.
    pub accepted: String,
}

impl core::fmt::Display for EnvError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}={:?} is refused: {}", self.var, self.value, self.accepted)
    }
}

impl std::error::Error for EnvError {}

fn refuse(var: &str, value: &str, accepted: &str) -> EnvError {
    EnvError { var: var.to_string(), value: value.to_string(), accepted: accepted.to_string() }
}

/// The default execution timeout of `arch`, seconds: the developer guide's 600
/// on trn1 and inf2. trn2 and trn3 have none documented and take trn1's
/// (G-ENV-TIMEOUT-DEFAULT).
pub const fn default_exec_timeout_s(_arch: Arch) -> u32 {
    600
}

/// Parse `NEURON_RT_EXEC_TIMEOUT`: decimal seconds, 0 to `INT_MAX`, blanks around allowed.
pub fn parse_exec_timeout(value: &str) -> Result<u32, EnvError> {
    let accepted = "an integer number of seconds from 0 to 2147483647";
    let t = value.trim();
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return Err(refuse(EXEC_TIMEOUT, value, accepted));
    }
    match t.parse::<u64>() {
        Ok(n) if n <= u64::from(MAX_EXEC_TIMEOUT_S) => Ok(n as u32),
        _ => Err(refuse(EXEC_TIMEOUT, value, accepted)),
    }
}

/// Parse `NEURON_RT_VISIBLE_CORES`: comma-separated items, each a core index or
/// an inclusive range `a-b` with `a <= b`, indices 0 to [`MAX_CORE_INDEX`].
/// Returns the cores as a bitmap, bit `n` for core `n`.
pub fn parse_visible_cores(value: &str) -> Result<u64, EnvError> {
    let accepted = "a NeuronCore index (3), an inclusive range (0-1) or a comma list of those (0,2-3), indices 0 to 63";
    let bad = || refuse(VISIBLE_CORES, value, accepted);
    let index = |s: &str| -> Result<u32, EnvError> {
        let s = s.trim();
        // Digits only, as `u32::from_str` would take a leading '+'.
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        s.parse::<u32>().ok().filter(|n| *n <= MAX_CORE_INDEX).ok_or_else(bad)
    };
    let mut set = 0u64;
    for item in value.split(',') {
        let (a, b) = match item.split_once('-') {
            Some((a, b)) => (index(a)?, index(b)?),
            None => {
                let n = index(item)?;
                (n, n)
            }
        };
        if a > b {
            return Err(bad());
        }
        for c in a..=b {
            set |= 1 << c;
        }
    }
    Ok(set)
}

/// Parse `NEURON_RT_POLL_SLICE_US`: decimal microseconds, [`MIN_POLL_SLICE_US`]
/// to [`MAX_POLL_SLICE_US`], blanks around allowed.
pub fn parse_poll_slice_us(value: &str) -> Result<u32, EnvError> {
    let accepted = "an integer number of microseconds from 20 to 1000 (this library's hybrid poller slice)";
    let t = value.trim();
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return Err(refuse(POLL_SLICE_US, value, accepted));
    }
    t.parse::<u32>()
        .ok()
        .filter(|n| (MIN_POLL_SLICE_US..=MAX_POLL_SLICE_US).contains(n))
        .ok_or_else(|| refuse(POLL_SLICE_US, value, accepted))
}

/// Parse `NEURON_RT_NUM_CORES`: a decimal count, 0 for all, to 64.
pub fn parse_num_cores(value: &str) -> Result<u32, EnvError> {
    let accepted = "a number of NeuronCores from 1 to 64, or 0 for all";
    let t = value.trim();
    // Digits only: `u32::from_str` would take a leading '+'.
    if !t.bytes().all(|b| b.is_ascii_digit()) {
        return Err(refuse(NUM_CORES, value, accepted));
    }
    t.parse::<u32>().ok().filter(|n| *n <= MAX_CORE_INDEX + 1).ok_or_else(|| refuse(NUM_CORES, value, accepted))
}

/// Parse a `NEURON_RT_LOG_LEVEL` value, in any case: `ERROR`, `WARNING` or
/// `WARN`, `INFO`, `DEBUG`, `TRACE`, `QUIET`. `var` names the variable in the refusal.
pub fn parse_log_level(var: &str, value: &str) -> Result<log::LevelFilter, EnvError> {
    match value.trim().to_ascii_uppercase().as_str() {
        "ERROR" => Ok(log::LevelFilter::Error),
        "WARNING" | "WARN" => Ok(log::LevelFilter::Warn),
        "INFO" => Ok(log::LevelFilter::Info),
        "DEBUG" => Ok(log::LevelFilter::Debug),
        "TRACE" => Ok(log::LevelFilter::Trace),
        "QUIET" => Ok(log::LevelFilter::Off),
        _ => Err(refuse(var, value, "one of ERROR, WARNING, INFO, DEBUG, TRACE, QUIET")),
    }
}

/// The SDK component a `log` target belongs to: `TDRV` for the harvest engine
/// and the driver binding, as libnrt logs `TDRV:exec_...`, `NRT` for the
/// tools. `NMGR` and `KMGR` are accepted and govern nothing (G-ENV-LOG-COMPONENTS).
pub fn component_of(target: &str) -> &'static str {
    if target.starts_with("nrt_core") || target.starts_with("nrt_linux") {
        "TDRV"
    } else {
        "NRT"
    }
}

/// The log levels in effect: the global one and each component's override.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogLevels {
    /// `NEURON_RT_LOG_LEVEL`, by default `ERROR`.
    pub global: log::LevelFilter,
    /// `NEURON_RT_LOG_LEVEL_<component>`, where set.
    pub components: Vec<(&'static str, log::LevelFilter)>,
}

impl Default for LogLevels {
    fn default() -> Self {
        LogLevels { global: log::LevelFilter::Error, components: Vec::new() }
    }
}

impl LogLevels {
    /// The level of a `log` target.
    pub fn level_of(&self, target: &str) -> log::LevelFilter {
        let c = component_of(target);
        self.components.iter().find(|(n, _)| *n == c).map_or(self.global, |(_, l)| *l)
    }

    /// The most verbose level of any component: the `log` facade's max level.
    pub fn max(&self) -> log::LevelFilter {
        self.components.iter().map(|(_, l)| *l).fold(self.global, core::cmp::max)
    }
}

/// A `log` sink writing each record to standard error as [`log_line`] makes it,
/// each target at its level. A failed write is ignored: there is nowhere to report it.
struct StderrLog {
    prefix: &'static str,
    levels: LogLevels,
}

impl log::Log for StderrLog {
    fn enabled(&self, m: &log::Metadata<'_>) -> bool {
        m.level() <= self.levels.level_of(m.target())
    }

    fn log(&self, r: &log::Record<'_>) {
        if self.enabled(r.metadata()) {
            use std::io::Write;
            let line = format!("{}{}", crate::oplog::stamp(), log_line(self.prefix, r));
            let _ = std::io::stderr().lock().write_all(line.as_bytes());
        }
    }

    fn flush(&self) {}
}

/// The `kind` of the harvest's record of a core still pending at its timeout,
/// nrt-core's `ExecEvent::CoreTimeout`: its line is given the budget in effect
/// on the thread, with its source.
pub const CORE_TIMEOUT_KIND: &str = "core_timeout";

/// The line [`init_stderr_log`]'s logger writes for `r` after the time and pid:
/// `PREFIX: LEVEL COMPONENT: message`, a core's event placed first. A
/// [`CORE_TIMEOUT_KIND`] record also gets the thread's budget and what to check next.
pub fn log_line(prefix: &str, r: &log::Record<'_>) -> String {
    let place = crate::oplog::record_place(r);
    let mut line = format!("{prefix}: {} {}: {place}{}", r.level(), component_of(r.target()), r.args());
    let kind = r.key_values().get(log::kv::Key::from_str("kind"));
    if kind.and_then(|v| v.to_borrowed_str().map(|k| k == CORE_TIMEOUT_KIND)) == Some(true) {
        if let Some(b) = thread_budget() {
            line.push_str(&format!("; budget in effect: {b}"));
        }
        line.push_str(&crate::oplog::next_step(thread_budget(), crate::oplog::thread_site()));
    }
    line.push('\n');
    line
}

thread_local! {
    /// The execution timeout of the harvest this thread runs, if a [`BudgetScope`] says.
    static BUDGET: std::cell::Cell<Option<Budget>> = const { std::cell::Cell::new(None) };
}

/// The budget the harvest on this thread runs under, if one is said.
pub fn thread_budget() -> Option<Budget> {
    BUDGET.with(std::cell::Cell::get)
}

/// Set the budget the harvest on this thread runs under, returning the one
/// it replaces.
pub(crate) fn set_thread_budget(b: Option<Budget>) -> Option<Budget> {
    BUDGET.with(|c| c.replace(b))
}

/// While it lives, the timeout line of the harvests this thread runs names
/// `budget` and its source. Dropping it restores what was in effect before.
#[derive(Debug)]
#[must_use = "the budget is in effect only while the scope lives"]
pub struct BudgetScope {
    before: Option<Budget>,
}

impl BudgetScope {
    /// `budget` in effect on this thread until the scope is dropped.
    pub fn enter(budget: Budget) -> BudgetScope {
        BudgetScope { before: set_thread_budget(Some(budget)) }
    }
}

impl Drop for BudgetScope {
    fn drop(&mut self) {
        set_thread_budget(self.before.take());
    }
}

/// Route the `log` facade to standard error at `levels`, lines prefixed
/// `prefix`. The first call of the process installs it, unless the program
/// installed its own; later calls change nothing.
pub fn init_stderr_log(prefix: &'static str, levels: &LogLevels) {
    static LOGGER: std::sync::OnceLock<StderrLog> = std::sync::OnceLock::new();
    let mut first = false;
    let logger = LOGGER.get_or_init(|| {
        first = true;
        StderrLog { prefix, levels: levels.clone() }
    });
    if first && log::set_logger(logger).is_ok() {
        log::set_max_level(levels.max());
    }
}

/// What the environment says, parsed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RtEnv {
    /// `NEURON_RT_EXEC_TIMEOUT`, seconds.
    pub exec_timeout_s: Option<u32>,
    /// `NEURON_RT_VISIBLE_CORES`, as a bitmap, with the text it came from.
    pub visible_cores: Option<(u64, String)>,
    /// `NEURON_RT_NUM_CORES`; 0 is all.
    pub num_cores: Option<u32>,
    /// `NEURON_RT_LOG_LEVEL` and its per-component forms.
    pub log: LogLevels,
    /// `NEURON_RT_POLL_SLICE_US`, microseconds.
    pub poll_slice_us: Option<u32>,
}

/// Which variables a surface reads: only those that govern it, so that a
/// malformed one it never uses does not refuse it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Uses {
    /// `NEURON_RT_EXEC_TIMEOUT`.
    pub timeout: bool,
    /// `NEURON_RT_VISIBLE_CORES` and `NEURON_RT_NUM_CORES`.
    pub cores: bool,
    /// `NEURON_RT_LOG_LEVEL` and its `_<component>` forms.
    pub log: bool,
    /// `NEURON_RT_POLL_SLICE_US`, for a poller.
    pub poll: bool,
}

impl Uses {
    /// A session's: all but the poller's slice.
    pub const ALL: Uses = Uses { timeout: true, cores: true, log: true, poll: false };
    /// The timeout and the log levels, for harvests of cores someone else chose.
    pub const TIMEOUT_AND_LOG: Uses = Uses { timeout: true, cores: false, log: true, poll: false };
    /// A poller's: the timeout, the log levels and the slice.
    pub const POLLER: Uses = Uses { poll: true, ..Uses::TIMEOUT_AND_LOG };
}

impl RtEnv {
    /// Parse every variable `lookup` returns; an empty value is as unset.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<RtEnv, EnvError> {
        RtEnv::parse(Uses::ALL, |v| lookup(v).map(std::ffi::OsString::from))
    }

    /// Parse the variables of `uses` that `lookup` returns, leaving the others
    /// unset. An empty value is as unset; one that is not UTF-8 is refused.
    pub fn parse(uses: Uses, lookup: impl Fn(&str) -> Option<std::ffi::OsString>) -> Result<RtEnv, EnvError> {
        let get = |v: &str| -> Result<Option<String>, EnvError> {
            match lookup(v).map(std::ffi::OsString::into_string) {
                None => Ok(None),
                Some(Ok(s)) => Ok(Some(s).filter(|s| !s.is_empty())),
                Some(Err(raw)) => Err(refuse(v, &raw.to_string_lossy(), "a UTF-8 value (this one is not)")),
            }
        };
        let mut env = RtEnv::default();
        if uses.timeout {
            env.exec_timeout_s = get(EXEC_TIMEOUT)?.map(|v| parse_exec_timeout(&v)).transpose()?;
        }
        if uses.cores {
            if let Some(v) = get(VISIBLE_CORES)? {
                env.visible_cores = Some((parse_visible_cores(&v)?, v));
            }
            env.num_cores = get(NUM_CORES)?.map(|v| parse_num_cores(&v)).transpose()?;
        }
        if uses.poll {
            env.poll_slice_us = get(POLL_SLICE_US)?.map(|v| parse_poll_slice_us(&v)).transpose()?;
        }
        if uses.log {
            if let Some(v) = get(LOG_LEVEL)? {
                env.log.global = parse_log_level(LOG_LEVEL, &v)?;
            }
            for c in LOG_COMPONENTS {
                let var = format!("{LOG_LEVEL}_{c}");
                if let Some(v) = get(&var)? {
                    env.log.components.push((c, parse_log_level(&var, &v)?));
                }
            }
        }
        Ok(env)
    }

    /// Parse the variables of `uses` from the process environment, warning once
    /// of those set that this binding does not honour, unless `QUIET`.
    pub fn from_process(uses: Uses) -> Result<RtEnv, EnvError> {
        let env = RtEnv::parse(uses, |v| std::env::var_os(v));
        let quiet = env.as_ref().is_ok_and(|e| e.log.global == log::LevelFilter::Off);
        unhonoured::warn_once(quiet);
        env
    }
}

/// Where a setting came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// A command-line flag, named.
    Flag(&'static str),
    /// An explicit argument of a C ABI call, named with its call.
    Argument(&'static str),
    /// An environment variable, named.
    Env(&'static str),
    /// The documented default of the generation.
    Default(Arch),
}

impl core::fmt::Display for Source {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Source::Flag(n) => write!(f, "flag {n}"),
            Source::Argument(n) => write!(f, "argument {n}"),
            Source::Env(n) => write!(f, "variable {n}"),
            Source::Default(a) => write!(f, "the documented default for {}", a.name()),
        }
    }
}

/// The execution timeout in effect and its source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// Seconds.
    pub seconds: u32,
    /// Where it came from.
    pub source: Source,
}

impl Budget {
    /// The flag named `flag_name`, else `NEURON_RT_EXEC_TIMEOUT`, else the generation's default.
    pub fn resolve(flag: Option<u32>, flag_name: &'static str, env: &RtEnv, arch: Arch) -> Budget {
        match (flag, env.exec_timeout_s) {
            (Some(s), _) => Budget { seconds: s, source: Source::Flag(flag_name) },
            (None, Some(s)) => Budget { seconds: s, source: Source::Env(EXEC_TIMEOUT) },
            (None, None) => Budget { seconds: default_exec_timeout_s(arch), source: Source::Default(arch) },
        }
    }
}

impl Budget {
    /// As [`Budget::resolve`], for an explicit argument `name` of a call.
    pub fn resolve_argument(explicit: Option<u32>, name: &'static str, env: &RtEnv, arch: Arch) -> Budget {
        let mut b = Budget::resolve(explicit, name, env, arch);
        if let Source::Flag(n) = b.source {
            b.source = Source::Argument(n);
        }
        b
    }
}

impl core::fmt::Display for Budget {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "execution timeout {} s (from {})", self.seconds, self.source)
    }
}

/// The cores a session claims: how many, from which core of the opened
/// device, and where that came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoreChoice {
    /// The session's logical core 0: the lowest index of `NEURON_RT_VISIBLE_CORES`, else 0.
    pub first: u8,
    /// Cores `first..first + count`; `None` takes the session's default.
    pub count: Option<u8>,
    /// Where it came from, if anything asked.
    pub source: Option<Source>,
    /// The variable's value, when it came from one, for the session's refusals.
    pub value: Option<String>,
}

impl CoreChoice {
    /// Whether `first` is a host-wide index from `NEURON_RT_VISIBLE_CORES`, so
    /// that the session opens or checks the device the run is on.
    pub fn host_wide(&self) -> bool {
        self.source == Some(Source::Env(VISIBLE_CORES))
    }

    /// The variable and its value the cores came from, for an error about them; else empty.
    pub fn origin(&self) -> String {
        match (&self.source, &self.value) {
            (Some(src @ Source::Env(_)), Some(v)) => format!(" (cores from {src}={v:?})"),
            _ => String::new(),
        }
    }
}

/// The device a host-wide run of `count` cores from index `first` is on, and
/// its first core there: index `i` is core `i % nc_per_device` of device
/// `i / nc_per_device`, as the driver's range mark adds
/// `nc_per_device * device_index` (driver: neuron_cdev.c,
/// ncdev_crwl_nc_range_mark). A run over two devices is refused (G-ENV-VISIBLE-CORES).
pub fn device_of_run(first: u32, count: u32, nc_per_device: u8) -> Result<(u32, u8), SplitRun> {
    let per = u32::from(nc_per_device.max(1));
    let last = first + count.max(1) - 1;
    let (device, last_device) = (first / per, last / per);
    let local = (first % per) as u8;
    if device != last_device {
        return Err(SplitRun { first, last, per, devices: (device, last_device) });
    }
    Ok((device, local))
}

/// A host-wide run of cores over two or more devices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SplitRun {
    /// The run's first host-wide core index.
    pub first: u32,
    /// Its last.
    pub last: u32,
    /// Cores per device.
    pub per: u32,
    /// The devices of the first and the last core.
    pub devices: (u32, u32),
}

impl core::fmt::Display for SplitRun {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let SplitRun { first, last, per, devices: (device, last_device) } = *self;
        write!(
            f,
            "cores {first}-{last} are on devices {device} to {last_device} (host-wide index i is core i % {per} of device i / {per}): a session is one device, so its cores must be on one"
        )
    }
}

impl std::error::Error for SplitRun {}

/// A placed host-wide run for messages, `places[i]` the device and device core
/// of index `first + i`: `cores 0-1 (device 0's cores 4, 5)`.
pub fn describe_places(first: u32, places: &[(u32, u32)]) -> String {
    let mut devices: Vec<u32> = places.iter().map(|p| p.0).collect();
    devices.dedup();
    let join = |v: &mut dyn Iterator<Item = u32>| v.map(|x| x.to_string()).collect::<Vec<_>>().join(", ");
    let d = join(&mut devices.iter().copied());
    let c = join(&mut places.iter().map(|p| p.1));
    match places.len() {
        0 | 1 => format!("core {first} (device {d}'s core {c})"),
        n => {
            let s = if devices.len() > 1 { "s" } else { "" };
            format!("cores {first}-{} (device{s} {d}'s cores {c})", first + n as u32 - 1)
        }
    }
}

/// The cores of a session: the flag beats `NEURON_RT_VISIBLE_CORES`, which
/// beats `NEURON_RT_NUM_CORES`.
///
/// The visible set must be one run of consecutive cores, as the session claims
/// them with one range mark; a set with a gap is refused. The indices are
/// host-wide: the session places them once its device says its arch.
pub fn resolve_cores(flag: Option<u8>, flag_name: &'static str, env: &RtEnv) -> Result<CoreChoice, EnvError> {
    if let Some(n) = flag {
        return Ok(CoreChoice { first: 0, count: Some(n), source: Some(Source::Flag(flag_name)), value: None });
    }
    if let Some((set, text)) = &env.visible_cores {
        let first = set.trailing_zeros();
        let run = set.checked_shr(first).unwrap_or(0);
        // One run of ones from `first`: `run + 1` is a power of two.
        if *set == 0 || run & run.wrapping_add(1) != 0 {
            return Err(refuse(
                VISIBLE_CORES,
                text,
                "one run of consecutive NeuronCores (1, 2-3, 2,3), host-wide indices of one device's cores: this \
                 binding's session claims its cores with one range mark, so a set with a gap is not taken",
            ));
        }
        return Ok(CoreChoice {
            first: first as u8,
            count: Some(set.count_ones() as u8),
            source: Some(Source::Env(VISIBLE_CORES)),
            value: Some(text.clone()),
        });
    }
    let value = env.num_cores.map(|n| n.to_string());
    match env.num_cores {
        Some(0) | None => {
            Ok(CoreChoice { first: 0, count: None, source: env.num_cores.map(|_| Source::Env(NUM_CORES)), value })
        }
        Some(n) => Ok(CoreChoice {
            first: 0,
            count: Some(n.min(u32::from(u8::MAX)) as u8),
            source: Some(Source::Env(NUM_CORES)),
            value,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use log::LevelFilter as L;

    fn env(vars: &[(&str, &str)]) -> Result<RtEnv, EnvError> {
        let vars: Vec<(String, String)> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        RtEnv::from_lookup(|k| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()))
    }

    #[test]
    fn exec_timeout_takes_seconds_from_0_to_int_max() {
        assert_eq!(parse_exec_timeout("0"), Ok(0));
        assert_eq!(parse_exec_timeout("5"), Ok(5));
        assert_eq!(parse_exec_timeout(" 600 "), Ok(600));
        assert_eq!(parse_exec_timeout("2147483647"), Ok(2_147_483_647));
        for bad in ["", " ", "-1", "+5", "5s", "1.5", "2147483648", "99999999999999999999999", "0x10", "five"] {
            let e = parse_exec_timeout(bad).unwrap_err();
            assert_eq!((e.var.as_str(), e.value.as_str()), (EXEC_TIMEOUT, bad));
            assert!(e.to_string().contains("from 0 to 2147483647"), "{e}");
        }
    }

    #[test]
    fn the_default_timeout_is_the_documented_one() {
        assert_eq!(default_exec_timeout_s(Arch::Sunda), 600);
        assert_eq!(default_exec_timeout_s(Arch::Cayman), 600);
        assert_eq!(default_exec_timeout_s(Arch::Mariana), 600);
    }

    #[test]
    fn visible_cores_takes_an_index_a_range_and_comma_lists() {
        assert_eq!(parse_visible_cores("0"), Ok(0b1));
        assert_eq!(parse_visible_cores("3"), Ok(0b1000));
        assert_eq!(parse_visible_cores("0-2"), Ok(0b111));
        assert_eq!(parse_visible_cores("1-1"), Ok(0b10));
        assert_eq!(parse_visible_cores("0,2-3"), Ok(0b1101));
        assert_eq!(parse_visible_cores(" 0 , 1 "), Ok(0b11));
        assert_eq!(parse_visible_cores("63"), Ok(1 << 63));
        assert_eq!(parse_visible_cores("0-63"), Ok(u64::MAX));
        for bad in ["", ",", "0,", "-", "1-", "-1", "2-1", "a", "1.5", "64", "0-64", "1000", "0--1", "1-2-3", "+1"] {
            let e = parse_visible_cores(bad).unwrap_err();
            assert_eq!((e.var.as_str(), e.value.as_str()), (VISIBLE_CORES, bad));
            assert!(e.accepted.contains("inclusive range"), "{e}");
        }
    }

    #[test]
    fn a_host_wide_run_is_on_the_device_of_its_index() {
        // Two cores per device (sunda): index i is core i % 2 of device i / 2.
        assert_eq!(device_of_run(0, 2, 2), Ok((0, 0)));
        assert_eq!(device_of_run(1, 1, 2), Ok((0, 1)));
        assert_eq!(device_of_run(2, 1, 2), Ok((1, 0)));
        assert_eq!(device_of_run(3, 1, 2), Ok((1, 1)));
        assert_eq!(device_of_run(2, 2, 2), Ok((1, 0)));
        assert_eq!(device_of_run(63, 1, 2), Ok((31, 1)));
        // Eight per device (cayman, mariana).
        assert_eq!(device_of_run(7, 1, 8), Ok((0, 7)));
        assert_eq!(device_of_run(8, 2, 8), Ok((1, 0)));
        assert_eq!(device_of_run(13, 3, 8), Ok((1, 5)));
        for (first, count, per, devices) in
            [(1, 2, 2, "0 to 1"), (3, 2, 2, "1 to 2"), (7, 2, 8, "0 to 1"), (0, 5, 2, "0 to 2")]
        {
            let e = device_of_run(first, count, per).unwrap_err().to_string();
            assert!(e.contains(&format!("are on devices {devices}")) && e.contains("a session is one device"), "{e}");
        }
        assert_eq!(describe_places(2, &[(1, 0)]), "core 2 (device 1's core 0)");
        assert_eq!(describe_places(0, &[(0, 4), (0, 5)]), "cores 0-1 (device 0's cores 4, 5)");
        assert_eq!(describe_places(7, &[(0, 1), (1, 2)]), "cores 7-8 (devices 0, 1's cores 1, 2)");
    }

    #[test]
    fn num_cores_takes_0_for_all_to_64() {
        assert_eq!(parse_num_cores("0"), Ok(0));
        assert_eq!(parse_num_cores("2"), Ok(2));
        assert_eq!(parse_num_cores("64"), Ok(64));
        for bad in ["", "-1", "+1", "65", "1000", "99999999999", "two", "1.0"] {
            let e = parse_num_cores(bad).unwrap_err();
            assert_eq!((e.var.as_str(), e.value.as_str()), (NUM_CORES, bad));
        }
    }

    #[test]
    fn log_levels_map_onto_the_log_crates() {
        for (v, l) in [
            ("ERROR", L::Error),
            ("error", L::Error),
            ("WARNING", L::Warn),
            ("WARN", L::Warn),
            ("INFO", L::Info),
            ("Debug", L::Debug),
            ("TRACE", L::Trace),
            ("QUIET", L::Off),
        ] {
            assert_eq!(parse_log_level(LOG_LEVEL, v), Ok(l), "{v}");
        }
        for bad in ["", "VERBOSE", "3", "FATAL"] {
            let e = parse_log_level("NEURON_RT_LOG_LEVEL_TDRV", bad).unwrap_err();
            assert_eq!(e.var, "NEURON_RT_LOG_LEVEL_TDRV");
            assert!(e.accepted.contains("WARNING"), "{e}");
        }
    }

    #[test]
    fn per_component_levels_override_the_global_one_for_their_targets() {
        let e = env(&[(LOG_LEVEL, "WARNING"), ("NEURON_RT_LOG_LEVEL_TDRV", "DEBUG")]).unwrap();
        assert_eq!(e.log.level_of("nrt_core::event"), L::Debug);
        assert_eq!(e.log.level_of("nrt_linux::session::bringup"), L::Debug);
        assert_eq!(e.log.level_of("nrtctl"), L::Warn);
        assert_eq!(e.log.max(), L::Debug);
        let e = env(&[("NEURON_RT_LOG_LEVEL_NRT", "QUIET")]).unwrap();
        assert_eq!(e.log.level_of("nrtctl"), L::Off);
        assert_eq!(e.log.level_of("nrt_core"), L::Error, "the default is ERROR");
        assert_eq!(env(&[]).unwrap().log, LogLevels::default());
        let bad = env(&[("NEURON_RT_LOG_LEVEL_NMGR", "LOUD")]).unwrap_err();
        assert_eq!((bad.var.as_str(), bad.value.as_str()), ("NEURON_RT_LOG_LEVEL_NMGR", "LOUD"));
    }

    #[test]
    fn the_stderr_logger_passes_each_target_at_its_components_level() {
        use log::Log;
        let e = env(&[(LOG_LEVEL, "WARNING"), ("NEURON_RT_LOG_LEVEL_TDRV", "DEBUG")]).unwrap();
        let l = StderrLog { prefix: "test", levels: e.log };
        let at = |level, target| l.enabled(&log::Metadata::builder().level(level).target(target).build());
        assert!(at(log::Level::Debug, "nrt_linux::ffi"));
        assert!(!at(log::Level::Trace, "nrt_core::exec"));
        assert!(at(log::Level::Warn, "nrtctl"));
        assert!(!at(log::Level::Info, "nrtctl"));
    }

    #[test]
    fn the_first_init_installs_the_logger_at_its_levels_and_later_ones_change_nothing() {
        use log::Level;
        // The only test of this binary that installs a logger; TDRV stays quiet
        // for the library's own lines, which the other tests make.
        let e = env(&[(LOG_LEVEL, "QUIET"), ("NEURON_RT_LOG_LEVEL_NRT", "INFO")]).unwrap();
        init_stderr_log("test", &e.log);
        let at = |level, target| log::logger().enabled(&log::Metadata::builder().level(level).target(target).build());
        assert_eq!(log::max_level(), L::Info);
        assert!(at(Level::Info, "nrtctl") && !at(Level::Debug, "nrtctl"));
        assert!(!at(Level::Error, "nrt_core"));
        init_stderr_log("again", &env(&[(LOG_LEVEL, "TRACE")]).unwrap().log);
        assert_eq!(log::max_level(), L::Info, "a later call changes nothing");
        assert!(!at(Level::Error, "nrt_core"));
    }

    #[test]
    fn the_environment_is_parsed_whole_and_an_empty_value_is_unset() {
        let e = env(&[(EXEC_TIMEOUT, "7"), (VISIBLE_CORES, "0-1"), (NUM_CORES, "1"), (LOG_LEVEL, "")]).unwrap();
        assert_eq!(e.exec_timeout_s, Some(7));
        assert_eq!(e.visible_cores, Some((0b11, "0-1".to_string())));
        assert_eq!(e.num_cores, Some(1));
        assert_eq!(e.log.global, L::Error);
        assert_eq!(env(&[(EXEC_TIMEOUT, "")]).unwrap().exec_timeout_s, None);
        assert_eq!(env(&[(EXEC_TIMEOUT, "x")]).unwrap_err().var, EXEC_TIMEOUT);
        assert_eq!(env(&[(VISIBLE_CORES, "9-2")]).unwrap_err().var, VISIBLE_CORES);
        assert_eq!(env(&[(NUM_CORES, "-2")]).unwrap_err().var, NUM_CORES);
    }

    #[test]
    fn a_surface_reads_only_the_variables_it_uses() {
        use std::ffi::OsString;
        let table = |k: &str| match k {
            EXEC_TIMEOUT => Some(OsString::from("7")),
            VISIBLE_CORES | NUM_CORES => Some(OsString::from("junk")),
            LOG_LEVEL => Some(OsString::from("DEBUG")),
            _ => None,
        };
        let e = RtEnv::parse(Uses::TIMEOUT_AND_LOG, table).unwrap();
        assert_eq!((e.exec_timeout_s, e.visible_cores, e.num_cores), (Some(7), None, None));
        assert_eq!(e.log.global, L::Debug);
        assert_eq!(RtEnv::parse(Uses::ALL, table).unwrap_err().var, VISIBLE_CORES);
        let none = Uses { timeout: false, cores: false, log: false, poll: false };
        assert_eq!(RtEnv::parse(none, table), Ok(RtEnv::default()));
        let log_only = Uses { timeout: false, cores: false, log: true, poll: false };
        assert_eq!(RtEnv::parse(log_only, table).unwrap().exec_timeout_s, None);
        let cores_only = Uses { timeout: false, cores: true, log: false, poll: false };
        assert_eq!(RtEnv::parse(cores_only, table).unwrap_err().var, VISIBLE_CORES);
    }

    #[test]
    fn the_poll_slice_takes_20_to_1000_us_and_only_a_pollers_surface_reads_it() {
        assert_eq!(parse_poll_slice_us("20"), Ok(20));
        assert_eq!(parse_poll_slice_us(" 200 "), Ok(200));
        assert_eq!(parse_poll_slice_us("1000"), Ok(1000));
        for bad in ["", "19", "0", "1001", "-50", "+50", "50us", "1.5", "0x40", "99999999999"] {
            let e = parse_poll_slice_us(bad).unwrap_err();
            assert_eq!((e.var.as_str(), e.value.as_str()), (POLL_SLICE_US, bad));
            assert!(e.to_string().starts_with("NEURON_RT_POLL_SLICE_US="), "{e}");
            assert!(e.to_string().contains("from 20 to 1000"), "{e}");
        }
        use std::ffi::OsString;
        let table = |v: &'static str| move |k: &str| (k == POLL_SLICE_US).then(|| OsString::from(v));
        assert_eq!(RtEnv::parse(Uses::POLLER, table("150")).unwrap().poll_slice_us, Some(150));
        assert_eq!(RtEnv::parse(Uses::POLLER, table("")).unwrap().poll_slice_us, None, "empty is unset");
        assert_eq!(RtEnv::parse(Uses::POLLER, table("5")).unwrap_err().var, POLL_SLICE_US);
        // A session and the other harvests do not read it, bad or not.
        assert_eq!(RtEnv::parse(Uses::ALL, table("5")), Ok(RtEnv::default()));
        assert_eq!(RtEnv::parse(Uses::TIMEOUT_AND_LOG, table("5")), Ok(RtEnv::default()));
        assert!(unhonoured::honoured(POLL_SLICE_US), "not warned of as unknown");
    }

    #[test]
    fn a_value_that_is_not_utf8_is_refused_by_name() {
        use std::os::unix::ffi::OsStringExt;
        for var in [EXEC_TIMEOUT, VISIBLE_CORES, NUM_CORES, LOG_LEVEL, "NEURON_RT_LOG_LEVEL_NRT"] {
            let lookup = |k: &str| (k == var).then(|| std::ffi::OsString::from_vec(vec![b'1', 0xff]));
            let e = RtEnv::parse(Uses::ALL, lookup).unwrap_err();
            assert_eq!((e.var.as_str(), e.value.as_str()), (var, "1\u{fffd}"), "{e}");
            assert!(e.accepted.contains("UTF-8"), "{e}");
        }
    }

    #[test]
    fn a_flag_beats_the_variable_which_beats_the_default() {
        let set = env(&[(EXEC_TIMEOUT, "9")]).unwrap();
        let b = Budget::resolve(Some(3), "--timeout-s", &set, Arch::Sunda);
        assert_eq!((b.seconds, b.source), (3, Source::Flag("--timeout-s")));
        assert_eq!(b.to_string(), "execution timeout 3 s (from flag --timeout-s)");
        let b = Budget::resolve(None, "--timeout-s", &set, Arch::Sunda);
        assert_eq!(b.to_string(), "execution timeout 9 s (from variable NEURON_RT_EXEC_TIMEOUT)");
        let b = Budget::resolve(None, "--timeout-s", &RtEnv::default(), Arch::Cayman);
        assert_eq!(b.to_string(), "execution timeout 600 s (from the documented default for cayman)");
        let b = Budget { seconds: 4, source: Source::Argument("timeout_s of nrt_session_open") };
        assert_eq!(b.to_string(), "execution timeout 4 s (from argument timeout_s of nrt_session_open)");
        let b = Budget::resolve_argument(Some(4), "timeout_s of f", &set, Arch::Sunda);
        assert_eq!((b.seconds, b.source), (4, Source::Argument("timeout_s of f")));
        let b = Budget::resolve_argument(None, "timeout_s of f", &set, Arch::Sunda);
        assert_eq!((b.seconds, b.source), (9, Source::Env(EXEC_TIMEOUT)));
        let b = Budget::resolve_argument(None, "timeout_s of f", &RtEnv::default(), Arch::Mariana);
        assert_eq!((b.seconds, b.source), (600, Source::Default(Arch::Mariana)));
    }

    #[test]
    fn cores_come_from_the_flag_then_visible_cores_then_num_cores() {
        let both = env(&[(VISIBLE_CORES, "1"), (NUM_CORES, "2")]).unwrap();
        assert_eq!(
            resolve_cores(Some(2), "--cores", &both),
            Ok(CoreChoice { first: 0, count: Some(2), source: Some(Source::Flag("--cores")), value: None })
        );
        // VISIBLE_CORES takes precedence over NUM_CORES: the guide's note 5.
        let c = resolve_cores(None, "--cores", &both).unwrap();
        assert_eq!(
            c,
            CoreChoice { first: 1, count: Some(1), source: Some(Source::Env(VISIBLE_CORES)), value: Some("1".into()) }
        );
        assert_eq!(c.origin(), " (cores from variable NEURON_RT_VISIBLE_CORES=\"1\")");
        assert!(c.host_wide(), "the variable's indices are the host's");
        assert!(!resolve_cores(Some(2), "--cores", &both).unwrap().host_wide());
        assert!(!resolve_cores(None, "--cores", &env(&[(NUM_CORES, "1")]).unwrap()).unwrap().host_wide());
        for (v, first, n) in
            [("0-1", 0, 2), ("0,1", 0, 2), ("1,0", 0, 2), ("0", 0, 1), ("0-63", 0, 64), ("1", 1, 1), ("2-3", 2, 2)]
        {
            let e = env(&[(VISIBLE_CORES, v)]).unwrap();
            let c = resolve_cores(None, "--cores", &e).unwrap();
            assert_eq!((c.first, c.count), (first, Some(n)), "{v}");
        }
        for (v, first, n) in [("2,3", 2, 2), ("3,2", 2, 2), ("5-6,7", 5, 3), ("63", 63, 1)] {
            let e = env(&[(VISIBLE_CORES, v)]).unwrap();
            let c = resolve_cores(None, "--cores", &e).unwrap();
            assert_eq!((c.first, c.count), (first, Some(n)), "{v}");
        }
        for v in ["0,2", "1,3-4", "0-1,3", "0,63"] {
            let e = env(&[(VISIBLE_CORES, v)]).unwrap();
            let err = resolve_cores(None, "--cores", &e).unwrap_err();
            assert_eq!((err.var.as_str(), err.value.as_str()), (VISIBLE_CORES, v));
            assert!(err.accepted.contains("one run of consecutive NeuronCores"), "{err}");
        }
        let one = env(&[(NUM_CORES, "1")]).unwrap();
        let c = resolve_cores(None, "--cores", &one).unwrap();
        assert_eq!((c.first, c.count), (0, Some(1)));
        assert_eq!(c.origin(), " (cores from variable NEURON_RT_NUM_CORES=\"1\")");
        let all = env(&[(NUM_CORES, "0")]).unwrap();
        assert_eq!(
            resolve_cores(None, "--cores", &all),
            Ok(CoreChoice { first: 0, count: None, source: Some(Source::Env(NUM_CORES)), value: Some("0".into()) })
        );
        let none = resolve_cores(None, "--cores", &RtEnv::default()).unwrap();
        assert_eq!(none, CoreChoice { first: 0, count: None, source: None, value: None });
        assert_eq!(none.origin(), "");
        assert_eq!(resolve_cores(Some(1), "--cores", &both).unwrap().origin(), "", "a flag is not a variable");
    }

    /// The harvest's timeout record, and no other, gets the thread's budget
    /// with its source; a scope puts back what it replaced when it ends.
    #[test]
    fn the_timeout_line_names_the_budget_in_effect_and_its_source() {
        let line = |kind: &str| {
            let kvs = [("kind", kind)];
            log_line(
                "nrt",
                &log::Record::builder()
                    .args(format_args!("core 0: engines still pending after 1000 ms (budget 1000 ms): NRT_TIMEOUT"))
                    .level(log::Level::Error)
                    .target("nrt_core::trace")
                    .key_values(&kvs)
                    .build(),
            )
        };
        let bare = "nrt: ERROR TDRV: core 0: engines still pending after 1000 ms (budget 1000 ms): NRT_TIMEOUT\n";
        let next = crate::oplog::next_step(None, None);
        assert_eq!(thread_budget(), None);
        assert_eq!(line(CORE_TIMEOUT_KIND), bare.replace('\n', &format!("{next}\n")), "no budget said: no budget");
        let env = Budget { seconds: 1, source: Source::Env(EXEC_TIMEOUT) };
        let flag = Budget { seconds: 2, source: Source::Flag("--timeout-s") };
        {
            let _outer = BudgetScope::enter(env);
            assert_eq!(
                line(CORE_TIMEOUT_KIND),
                format!(
                    "nrt: ERROR TDRV: core 0: engines still pending after 1000 ms (budget 1000 ms): NRT_TIMEOUT; \
                     budget in effect: execution timeout 1 s (from variable NEURON_RT_EXEC_TIMEOUT){}\n",
                    crate::oplog::next_step(Some(env), None)
                )
            );
            assert_eq!(line("error_record"), bare, "another kind of line is left alone");
            {
                let _inner = BudgetScope::enter(flag);
                assert!(
                    line(CORE_TIMEOUT_KIND).contains("execution timeout 2 s (from flag --timeout-s); to check next: ")
                );
            }
            assert_eq!(thread_budget(), Some(env), "the inner scope put the outer budget back");
            let other = std::thread::spawn(thread_budget).join().unwrap();
            assert_eq!(other, None, "a budget is the thread's own");
        }
        assert_eq!(thread_budget(), None);
        assert_eq!(line(CORE_TIMEOUT_KIND), bare.replace('\n', &format!("{next}\n")));
    }
}
