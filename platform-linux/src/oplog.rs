//! What the operator reads: the stamp, the place and the next step of the
//! binding's log lines.
//!
//! Every line the binding's logger writes is
//! `TIME pid PID PREFIX: LEVEL COMPONENT: [PLACE: ]message`, `TIME` the wall
//! clock in RFC 3339 UTC. A core's event names its place as libnrt's users
//! quote it, `nd0 nc1 DVE`, from the [`Site`] the thread harvests and the
//! event's `core` and `engines`. A core's timeout line ends with what to check next.

use std::cell::Cell;
use std::fmt;
use std::path::Path;

use nrt_core::exec::{ExecRequest, TpbEngState};
use nrt_core::nq::EngineSet;

use crate::config::{Budget, Source, EXEC_TIMEOUT};

/// Where a harvest runs: a device's cores, or a poller's lane on a C platform table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Site {
    /// The device's number `N` of `/dev/neuron<N>`, when known.
    pub device: Option<u32>,
    /// The device's core that is the request's core 0.
    pub first_core: u8,
    /// The request's cores.
    pub cores: u8,
    /// The poller lane, for a lane's request.
    pub lane: Option<u16>,
}

impl Site {
    /// The cores `first_core..first_core + cores` of the device at `path`, numbered from a name `neuron<N>`.
    pub fn of_device(path: &Path, first_core: u8, cores: u8) -> Site {
        let device = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix("neuron"))
            .and_then(|n| n.parse().ok());
        Site { device, first_core, cores, lane: None }
    }

    /// Poller lane `lane`, whose device and cores are the lane's platform's.
    pub fn lane(lane: u16) -> Site {
        Site { device: None, first_core: 0, cores: 0, lane: Some(lane) }
    }

    /// The name of the request's core `core`: `nd0 nc1` with the device's own
    /// core number, `nd?` for a node of another name, or `lane 2 core 0`.
    pub fn core_name(&self, core: u8) -> String {
        let nc = u32::from(self.first_core) + u32::from(core);
        match (self.device, self.lane) {
            (Some(d), _) => format!("nd{d} nc{nc}"),
            (None, Some(l)) => format!("lane {l} core {core}"),
            (None, None) => format!("nd? nc{nc}"),
        }
    }
}

/// The request's whole place: `nd0 nc0-1`, `nd0 nc1`, `lane 2`.
impl fmt::Display for Site {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(l) = self.lane {
            return write!(f, "lane {l}");
        }
        match self.device {
            Some(d) => write!(f, "nd{d}")?,
            None => f.write_str("nd?")?,
        }
        let (a, n) = (u32::from(self.first_core), u32::from(self.cores.max(1)));
        if n == 1 {
            write!(f, " nc{a}")
        } else {
            write!(f, " nc{a}-{}", a + n - 1)
        }
    }
}

thread_local! {
    /// The place of the harvest this thread runs, if one is said.
    static SITE: Cell<Option<Site>> = const { Cell::new(None) };
}

/// The place of the harvest this thread runs, if one is said.
pub fn thread_site() -> Option<Site> {
    SITE.with(Cell::get)
}

/// Set the place of the harvest this thread runs, returning the one it replaces.
pub(crate) fn set_thread_site(s: Option<Site>) -> Option<Site> {
    SITE.with(|c| c.replace(s))
}

/// While it lives, the harvest events this thread logs are placed at its
/// site; dropping it restores what was in effect before.
#[derive(Debug)]
#[must_use = "the site is in effect only while the scope lives"]
pub struct SiteScope {
    before: Option<Site>,
}

impl SiteScope {
    /// `site` in effect on this thread until the scope is dropped.
    pub fn enter(site: Site) -> SiteScope {
        SiteScope { before: set_thread_site(Some(site)) }
    }
}

impl Drop for SiteScope {
    fn drop(&mut self) {
        set_thread_site(self.before.take());
    }
}

/// The place of an event of core `core` about `engines` at `site`: `nd0 nc1
/// DVE`, or `nd0 nc1` with no engine, or `core 0 DVE` with no site.
pub fn place(site: Option<Site>, core: u8, engines: EngineSet) -> String {
    let mut s = match site {
        Some(site) => site.core_name(core),
        None => format!("core {core}"),
    };
    if !engines.is_empty() {
        s.push(' ');
        s.push_str(&engines.to_string());
    }
    s
}

/// `PLACE: ` for a record of a core's event, which carries `core` and
/// `engines`, at the thread's [`Site`]; empty for any other record.
pub fn record_place(r: &log::Record<'_>) -> String {
    let kv = r.key_values();
    let Some(core) = kv.get(log::kv::Key::from_str("core")).and_then(|v| v.to_u64()) else {
        return String::new();
    };
    let engines = kv.get(log::kv::Key::from_str("engines")).and_then(|v| v.to_u64()).unwrap_or(0);
    let core = u8::try_from(core).unwrap_or(u8::MAX);
    format!("{}: ", place(thread_site(), core, EngineSet::from_bits(engines as u8)))
}

/// What to check after a core's timeout at `site`: the named engines' spans,
/// the core's counts, and the budget to raise if the work needs longer.
pub fn next_step(budget: Option<Budget>, site: Option<Site>) -> String {
    let stats = match site.and_then(|s| s.device) {
        Some(d) => format!("`nrtctl stats --device /dev/neuron{d} --pid {}`", std::process::id()),
        None => format!("`nrtctl stats --pid {}`", std::process::id()),
    };
    let raise = match budget.map(|b| b.source) {
        Some(Source::Flag(n)) => format!("raise {n}"),
        Some(Source::Argument(n)) => format!("raise {n}"),
        Some(Source::Env(v)) => format!("raise {v}"),
        Some(Source::Default(_)) | None => format!("set {EXEC_TIMEOUT}"),
    };
    format!(
        "; to check next: each engine's span (`nrtctl run --trace FILE`), the core's counts ({stats}); \
         {raise} only if the work needs longer"
    )
}

/// The engines of each timed-out core of `req` at `site`, such as
/// `nd0 nc1: started, never wrote END: DVE`; empty when no core timed out.
pub fn timed_out_engines(req: &ExecRequest, site: Option<Site>) -> String {
    let mut parts = Vec::new();
    for core in 0..req.tpb_count() {
        if !req.timed_out(core) {
            continue;
        }
        let name = place(site, core as u8, EngineSet::EMPTY);
        let no_end = req.engines_in(core, TpbEngState::EndPending);
        let no_start = req.engines_in(core, TpbEngState::StartPending);
        parts.push(pending_of(&name, no_start, no_end));
    }
    parts.join("; ")
}

/// `NAME: started, never wrote END: DVE; never wrote START: SP`, without empty parts.
pub fn pending_of(name: &str, no_start: EngineSet, no_end: EngineSet) -> String {
    let mut p = name.to_string();
    if !no_end.is_empty() {
        p.push_str(&format!(": started, never wrote END: {no_end}"));
    }
    if !no_start.is_empty() {
        p.push_str(&format!("{} never wrote START: {no_start}", if no_end.is_empty() { ":" } else { ";" }));
    }
    p
}

/// The wall clock now, RFC 3339 UTC with microseconds.
pub fn timestamp() -> String {
    let d = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    rfc3339_us(d.as_secs(), d.subsec_micros())
}

/// `secs` past the Unix epoch and `us` microseconds, as RFC 3339 UTC.
pub fn rfc3339_us(secs: u64, us: u32) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01, proleptic Gregorian.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{us:06}Z", rem / 3_600, rem % 3_600 / 60, rem % 60)
}

/// The head of every line of the binding's logger: the time and this process's pid.
pub fn stamp() -> String {
    format!("{} pid {} ", timestamp(), std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wall_clock_is_rfc_3339_utc_with_microseconds() {
        assert_eq!(rfc3339_us(0, 0), "1970-01-01T00:00:00.000000Z");
        assert_eq!(rfc3339_us(951_782_400, 7), "2000-02-29T00:00:00.000007Z");
        assert_eq!(rfc3339_us(1_798_764_896, 123_456), "2027-01-01T00:54:56.123456Z");
        assert_eq!(rfc3339_us(4_102_444_799, 999_999), "2099-12-31T23:59:59.999999Z");
        let now = stamp();
        let (ts, rest) = now.split_once(' ').unwrap();
        assert!(ts.len() == 27 && ts.ends_with('Z') && ts.as_bytes()[10] == b'T', "{now}");
        assert_eq!(rest, format!("pid {} ", std::process::id()));
    }

    #[test]
    fn a_site_names_the_device_and_its_own_core_numbers() {
        let s = Site::of_device(Path::new("/dev/neuron3"), 1, 1);
        assert_eq!((s.device, s.to_string(), s.core_name(0)), (Some(3), "nd3 nc1".into(), "nd3 nc1".into()));
        let two = Site::of_device(Path::new("/dev/neuron0"), 2, 2);
        assert_eq!((two.to_string(), two.core_name(1)), ("nd0 nc2-3".into(), "nd0 nc3".into()));
        let other = Site::of_device(Path::new("/tmp/dev"), 0, 2);
        assert_eq!((other.device, other.core_name(1), other.to_string()), (None, "nd? nc1".into(), "nd? nc0-1".into()));
        assert_eq!((Site::lane(2).to_string(), Site::lane(2).core_name(1)), ("lane 2".into(), "lane 2 core 1".into()));
        let dve = EngineSet::from(nrt_core::nq::Engine::Dve);
        assert_eq!(place(Some(s), 0, dve), "nd3 nc1 DVE");
        assert_eq!(place(None, 1, EngineSet::EMPTY), "core 1");
    }

    #[test]
    fn pending_engines_are_named_by_what_they_never_wrote() {
        use nrt_core::nq::Engine;
        let (dve, sp) = (EngineSet::from(Engine::Dve), EngineSet::from(Engine::Sp));
        assert_eq!(pending_of("nd0 nc1", EngineSet::EMPTY, dve), "nd0 nc1: started, never wrote END: DVE");
        assert_eq!(pending_of("core 0", sp, EngineSet::EMPTY), "core 0: never wrote START: SP");
        assert_eq!(pending_of("nd0 nc0", sp, dve), "nd0 nc0: started, never wrote END: DVE; never wrote START: SP");
    }

    #[test]
    fn a_site_scope_is_the_threads_and_puts_back_what_it_replaced() {
        assert_eq!(thread_site(), None);
        let a = Site::of_device(Path::new("/dev/neuron0"), 1, 1);
        {
            let _outer = SiteScope::enter(a);
            {
                let _inner = SiteScope::enter(Site::lane(1));
                assert_eq!(thread_site(), Some(Site::lane(1)));
            }
            assert_eq!(thread_site(), Some(a));
            assert_eq!(std::thread::spawn(thread_site).join().unwrap(), None);
        }
        assert_eq!(thread_site(), None);
    }

    #[test]
    fn the_next_step_says_which_budget_to_raise() {
        let at = |source| next_step(Some(Budget { seconds: 1, source }), None);
        assert!(
            at(Source::Env(EXEC_TIMEOUT)).ends_with(&format!("; raise {EXEC_TIMEOUT} only if the work needs longer"))
        );
        assert!(at(Source::Flag("--timeout-s")).contains("raise --timeout-s"));
        assert!(at(Source::Argument("timeout_s of nrt_session_open")).contains("raise timeout_s of nrt_session_open"));
        let pid = std::process::id();
        let none = next_step(None, None);
        assert!(none.contains(&format!("set {EXEC_TIMEOUT}")), "{none}");
        assert!(none.contains("`nrtctl run --trace FILE`") && none.contains(&format!("`nrtctl stats --pid {pid}`")));
        let nd1 = next_step(None, Some(Site::of_device(Path::new("/dev/neuron1"), 0, 1)));
        assert!(nd1.contains(&format!("`nrtctl stats --device /dev/neuron1 --pid {pid}`")), "{nd1}");
    }
}

#[cfg(test)]
mod line_tests {
    use super::*;

    /// nrt-core's record of a harvest event of a core: the message without
    /// its core, the core and the engines as key-values.
    fn line(core: u64, engines: u64) -> String {
        let kvs: [(&str, log::kv::Value<'_>); 3] =
            [("kind", "unexpected_notification".into()), ("core", core.into()), ("engines", engines.into())];
        crate::config::log_line(
            "nrt",
            &log::Record::builder()
                .args(format_args!("Received unexpected notification on engine DVE"))
                .level(log::Level::Error)
                .target("nrt_core::trace")
                .key_values(&kvs)
                .build(),
        )
    }

    #[test]
    fn a_core_event_is_placed_at_the_device_core_and_engines_of_the_threads_site() {
        let msg = "Received unexpected notification on engine DVE\n";
        assert_eq!(line(0, 0b1000), format!("nrt: ERROR TDRV: core 0 DVE: {msg}"), "no site: the request's core");
        {
            let _s = SiteScope::enter(Site::of_device(Path::new("/dev/neuron0"), 1, 1));
            assert_eq!(line(0, 0b1000), format!("nrt: ERROR TDRV: nd0 nc1 DVE: {msg}"));
            assert_eq!(line(0, 0b1_1000), format!("nrt: ERROR TDRV: nd0 nc1 DVE,SP: {msg}"));
            assert_eq!(line(0, 0), format!("nrt: ERROR TDRV: nd0 nc1: {msg}"));
        }
        {
            let _s = SiteScope::enter(Site::lane(3));
            assert_eq!(line(1, 0b1), format!("nrt: ERROR TDRV: lane 3 core 1 PE: {msg}"));
        }
        let plain = crate::config::log_line(
            "nrt",
            &log::Record::builder().args(format_args!("no core")).level(log::Level::Warn).target("nrt_linux").build(),
        );
        assert_eq!(plain, "nrt: WARN TDRV: no core\n", "a record without a core is not placed");
    }
}
