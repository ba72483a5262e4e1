//! nrt-tests: end-to-end tests of nrt-core against the simulated device.
//!
//! The tests live in `tests/`; these are their shared helpers: run a named
//! scenario (optionally with another seed or in threaded mode), and look at what
//! a run reported.

use nrt_sim::run::{run, RunReport, SimConfig};
use nrt_sim::scenario::{self, Scenario};

/// The scenario named `name`; panics with the list when there is none.
pub fn scenario(name: &str) -> &'static Scenario {
    scenario::find(name).unwrap_or_else(|| {
        let names: Vec<&str> = nrt_sim::SCENARIOS.iter().map(|s| s.name).collect();
        panic!("no scenario {name}; have {names:?}")
    })
}

/// Run `cfg`; panics on a configuration or staging failure.
pub fn run_cfg(cfg: &SimConfig) -> RunReport {
    run(cfg).unwrap_or_else(|e| panic!("run failed: {e}"))
}

/// Run the named scenario as defined.
pub fn run_named(name: &str) -> RunReport {
    run_cfg(&scenario(name).config())
}

/// Run the named scenario with another seed, optionally threaded and with another timeout.
pub fn run_variant(name: &str, seed: u64, threaded: bool, timeout_s: Option<u32>) -> RunReport {
    let mut cfg = scenario(name).config();
    cfg.seed = seed;
    cfg.threaded = threaded;
    if let Some(t) = timeout_s {
        cfg.timeout_s = t;
    }
    run_cfg(&cfg)
}

/// The kinds of a run's events, in order.
pub fn kinds(r: &RunReport) -> Vec<&'static str> {
    r.events.iter().map(|e| e.kind()).collect()
}

/// `(status code, one-step return code)` of a run.
pub fn outcome(r: &RunReport) -> (u32, u8) {
    (r.status.code(), r.return_code())
}
