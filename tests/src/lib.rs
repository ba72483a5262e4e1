//! nrt-tests: end-to-end tests of nrt-core against the simulated device.
//! These are the helpers the tests in `tests/` share.

use nrt_sim::run::{run, RunReport, SimConfig};
use nrt_sim::scenario::{self, Scenario};

/// The scenario named `name`.
pub fn scenario(name: &str) -> &'static Scenario {
    scenario::find(name).unwrap_or_else(|| {
        let names: Vec<&str> = nrt_sim::SCENARIOS.iter().map(|s| s.name).collect();
        panic!("no scenario {name}; have {names:?}")
    })
}

/// Run `cfg`; panics on failure.
pub fn run_cfg(cfg: &SimConfig) -> RunReport {
    run(cfg).unwrap_or_else(|e| panic!("run failed: {e}"))
}

/// Run the named scenario.
pub fn run_named(name: &str) -> RunReport {
    run_cfg(&scenario(name).config())
}

/// Run the named scenario with another seed, threading and timeout.
pub fn run_variant(name: &str, seed: u64, threaded: bool, timeout_s: Option<u32>) -> RunReport {
    let mut cfg = scenario(name).config();
    cfg.seed = seed;
    cfg.threaded = threaded;
    if let Some(t) = timeout_s {
        cfg.timeout_s = t;
    }
    run_cfg(&cfg)
}

/// The kinds of a run's events.
pub fn kinds(r: &RunReport) -> Vec<&'static str> {
    r.events.iter().map(|e| e.kind()).collect()
}

/// A run's status code and one-step return code.
pub fn outcome(r: &RunReport) -> (u32, u8) {
    (r.status.code(), r.return_code())
}
