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
    /// Hybrid: wake this long before the earliest due completion and spin
    /// through it (covers the sleep's overshoot).
    pub hybrid_lead: Duration,
    /// Hybrid: at most one pass per this window, each taking the requests due
    /// within it (so many lanes' completions share a wake-up).
    pub hybrid_batch: Duration,
    /// Hybrid: the notice latency the poller aims to keep while requests are
    /// due. The next pass is set this bound less
    /// [`hybrid_lead`](Self::hybrid_lead) after the last (at least
    /// [`hybrid_batch`](Self::hybrid_batch)), and the poller wakes the lead
    /// before it and spins to it (the lead absorbs the sleep's overshoot): a
    /// completion waits for the next pass, at most about the bound less the
    /// lead (plus a pass). A longer bound costs fewer
    /// wake-ups (less CPU); a bound within the lead plus the batch window gives
    /// the batch-window spacing.
    pub notice_bound: Duration,
    /// Hybrid: the slice itself, when set, instead of the notice bound less
    /// the lead ([`hybrid_slice_ns`](Self::hybrid_slice_ns));
    /// `NEURON_RT_POLL_SLICE_US` ([`PollerConfig::from_env`]) and
    /// `nrt_poller_new_with_slice` set it (G-POLL-SLICE).
    pub hybrid_slice: Option<Duration>,
    /// Hybrid and sleep: a due request still in flight is stepped again
    /// after this long. A spinning poller owns its core and steps every due
    /// request at every pass (its schedule's recheck is 0: a completion is
    /// noticed within one pass, not within a recheck).
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
    /// `NEURON_RT_EXEC_TIMEOUT`, seconds, as [`PollerConfig::from_env`] read
    /// it ([`PollerConfig::budget`]); `None` in [`PollerConfig::default`],
    /// which reads no variable.
    pub exec_timeout_s: Option<u32>,
}

impl Default for PollerConfig {
    fn default() -> Self {
        PollerConfig {
            cpu: None,
            policy: WaitPolicy::Hybrid,
            hybrid_lead: Duration::from_micros(10),
            hybrid_batch: Duration::from_micros(20),
            notice_bound: Duration::from_micros(50),
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
    /// The default configuration with the runtime's variables a poller reads,
    /// as `nrt_poller_new` reads them: `NEURON_RT_EXEC_TIMEOUT` (kept for
    /// [`budget`](Self::budget)), this library's `NEURON_RT_POLL_SLICE_US`
    /// ([`hybrid_slice`](Self::hybrid_slice)) and `NEURON_RT_LOG_LEVEL[_<component>]` (the
    /// standard-error logger, lines prefixed `nrt:`, installed unless the
    /// program installed a `log` logger first). The core variables are not
    /// read: the lanes fix the cores. A bad value is refused, naming the
    /// variable, the value and what is accepted. [`PollerConfig::default`]
    /// reads nothing.
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

    /// The execution timeout of a submission on `arch`: `timeout_s` (an
    /// argument, `name` names it), else [`exec_timeout_s`](Self::exec_timeout_s)
    /// (`NEURON_RT_EXEC_TIMEOUT`), else the generation's documented default.
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
