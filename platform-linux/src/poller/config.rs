//! A poller's configuration, and the runtime's variables it reads.

use std::time::Duration;

use super::WaitPolicy;

/// How a poller waits (G-POLLER-IDLE).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PollerConfig {
    /// Pin the poller thread to this CPU.
    pub cpu: Option<usize>,
    /// How it waits between passes.
    pub policy: WaitPolicy,
    /// Hybrid: wake this long before a pass and spin to it, absorbing the sleep's overshoot.
    pub hybrid_lead: Duration,
    /// Hybrid: each pass takes the requests due within this window, so that lanes share a wake-up.
    pub hybrid_batch: Duration,
    /// Hybrid: the notice latency to keep while requests are due; the slice is
    /// this bound less the lead. A longer bound costs fewer wake-ups.
    pub notice_bound: Duration,
    /// Hybrid: the slice itself, when set, instead of the notice bound less the
    /// lead; `NEURON_RT_POLL_SLICE_US` sets it (G-POLL-SLICE).
    pub hybrid_slice: Option<Duration>,
    /// Hybrid and sleep: a due request still in flight is stepped again after
    /// this long. A spinning poller steps every due request at every pass.
    pub recheck: Duration,
    /// Every request in flight is stepped at least this often.
    pub sweep_bound: Duration,
    /// Spin between passes for this long after the last submission or completion.
    pub spin_for: Duration,
    /// Then yield between passes until this long after it.
    pub yield_for: Duration,
    /// Then sleep this many microseconds between passes.
    pub sleep_us: u32,
    /// How long a [`Ticket::wait`](super::Ticket::wait) spins before it sleeps on its eventfd.
    pub waiter_spin_for: Duration,
    /// `NEURON_RT_EXEC_TIMEOUT` in seconds, as [`PollerConfig::from_env`] read it.
    pub exec_timeout_s: Option<u32>,
}

impl Default for PollerConfig {
    fn default() -> Self {
        PollerConfig {
            cpu: None,
            policy: WaitPolicy::Hybrid,
            hybrid_lead: Duration::from_micros(10),
            hybrid_batch: Duration::from_micros(20),
            notice_bound: Duration::from_micros(60),
            hybrid_slice: None,
            recheck: Duration::from_micros(20),
            sweep_bound: Duration::from_millis(1),
            spin_for: Duration::from_millis(2),
            yield_for: Duration::from_millis(20),
            sleep_us: 50,
            waiter_spin_for: Duration::from_micros(50),
            exec_timeout_s: None,
        }
    }
}

impl PollerConfig {
    /// The default with the variables `nrt_poller_new` reads: the timeout, the
    /// slice and the log levels, which install the standard-error logger. The
    /// lanes fix the cores, so their variables are not read. A bad value is refused.
    pub fn from_env() -> Result<PollerConfig, crate::config::EnvError> {
        let env = crate::config::RtEnv::from_process(crate::config::Uses::POLLER)?;
        crate::config::init_stderr_log("nrt", &env.log);
        Ok(PollerConfig::from_rt_env(&env))
    }

    /// The default configuration with `env`'s timeout and slice.
    pub fn from_rt_env(env: &crate::config::RtEnv) -> PollerConfig {
        let hybrid_slice = env.poll_slice_us.map(|us| Duration::from_micros(u64::from(us)));
        PollerConfig { exec_timeout_s: env.exec_timeout_s, hybrid_slice, ..PollerConfig::default() }
    }

    /// The execution timeout of a submission on `arch`: the argument `timeout_s`
    /// named `name`, else the variable, else the generation's default.
    pub fn budget(
        &self,
        timeout_s: Option<u32>,
        name: &'static str,
        arch: nrt_core::arch::Arch,
    ) -> crate::config::Budget {
        let env = crate::config::RtEnv { exec_timeout_s: self.exec_timeout_s, ..Default::default() };
        crate::config::Budget::resolve_argument(timeout_s, name, &env, arch)
    }
}

impl PollerConfig {
    /// The configuration for a poller on a core of its own: pinned to `cpu`, spinning.
    pub fn dedicated(cpu: usize) -> PollerConfig {
        PollerConfig { cpu: Some(cpu), policy: WaitPolicy::Spin, ..PollerConfig::default() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_submissions_budget_is_its_argument_then_the_variable_then_the_default() {
        use crate::config::{RtEnv, Source, EXEC_TIMEOUT};
        use nrt_core::arch::Arch;
        assert_eq!(PollerConfig::default().exec_timeout_s, None, "the default reads no variable");
        let cfg = PollerConfig::from_rt_env(&RtEnv { exec_timeout_s: Some(9), ..RtEnv::default() });
        assert_eq!(cfg.exec_timeout_s, Some(9));
        assert_eq!(cfg.hybrid_slice, None, "no slice asked: the default's");
        let sliced = PollerConfig::from_rt_env(&RtEnv { poll_slice_us: Some(200), ..RtEnv::default() });
        assert_eq!(sliced.hybrid_slice_ns(), 200_000, "NEURON_RT_POLL_SLICE_US sets the slice");
        assert_eq!(cfg.policy, PollerConfig::default().policy, "the rest is the default");
        let b = cfg.budget(Some(3), "timeout_s of submit", Arch::Sunda);
        assert_eq!((b.seconds, b.source), (3, Source::Argument("timeout_s of submit")));
        let b = cfg.budget(None, "timeout_s of submit", Arch::Sunda);
        assert_eq!((b.seconds, b.source), (9, Source::Env(EXEC_TIMEOUT)));
        let b = PollerConfig::default().budget(None, "timeout_s of submit", Arch::Cayman);
        assert_eq!((b.seconds, b.source), (600, Source::Default(Arch::Cayman)));
    }
}
