//! How a poller waits between passes, as pure functions of its clock.
//!
//! A hybrid poller sets its next pass one slice after the last, sleeps until a
//! short lead before it, and spins through the lead, which absorbs the sleep's
//! overshoot. Passes are then at least one slice apart, however many lanes are due.

use std::time::Duration;

use nrt_core::exec::Schedule;

use super::PollerConfig;

/// How a poller waits between passes (G-POLLER-IDLE).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitPolicy {
    /// Spin between passes while work is in flight: for a core of its own.
    Spin,
    /// Sleep until shortly before the earliest due completion, then spin.
    Hybrid,
    /// Sleep [`PollerConfig::sleep_us`] between passes.
    Sleep,
}

impl WaitPolicy {
    /// The C ABI's code: 0 spin, 1 hybrid, 2 sleep.
    pub const fn code(self) -> u32 {
        match self {
            WaitPolicy::Spin => 0,
            WaitPolicy::Hybrid => 1,
            WaitPolicy::Sleep => 2,
        }
    }

    /// The policy of a C ABI code, `None` for an unknown one.
    pub const fn from_code(code: u32) -> Option<WaitPolicy> {
        match code {
            0 => Some(WaitPolicy::Spin),
            1 => Some(WaitPolicy::Hybrid),
            2 => Some(WaitPolicy::Sleep),
            _ => None,
        }
    }
}

/// What a hybrid poller does after a pass, at `now_ns`, given the group's
/// earliest due time and its lead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HybridWait {
    /// Nothing in flight: block until a submission.
    Idle,
    /// Something is due: pass again at once.
    Pass,
    /// Due within the lead: spin until this clock, then pass.
    SpinUntil(u64),
    /// Nothing due within the lead: sleep this many ns, then look again.
    Sleep(u64),
}

/// When a hybrid poller passes next: the batch window before the earliest due
/// time, but at least one window after the last pass. `None` when nothing is in flight.
pub fn next_pass_ns(earliest_due_ns: Option<u64>, pass_ns: u64, batch_ns: u64) -> Option<u64> {
    next_sliced_pass_ns(earliest_due_ns, pass_ns, batch_ns, batch_ns)
}

/// [`next_pass_ns`], at least `slice_ns` after the last pass: the slice keeps
/// the poller asleep when something is nearly always due.
pub fn next_sliced_pass_ns(earliest_due_ns: Option<u64>, pass_ns: u64, batch_ns: u64, slice_ns: u64) -> Option<u64> {
    earliest_due_ns.map(|d| d.saturating_sub(batch_ns).max(pass_ns.saturating_add(slice_ns)))
}

/// The hybrid policy: pass when something is due, spin when it is due within
/// `lead_ns`, else sleep until `lead_ns` before it.
pub fn hybrid_wait(now_ns: u64, earliest_due_ns: Option<u64>, lead_ns: u64) -> HybridWait {
    let Some(due) = earliest_due_ns else { return HybridWait::Idle };
    let Some(wait) = due.checked_sub(now_ns).filter(|&w| w > 0) else { return HybridWait::Pass };
    if wait <= lead_ns {
        HybridWait::SpinUntil(due)
    } else {
        HybridWait::Sleep(wait - lead_ns)
    }
}

impl PollerConfig {
    /// Hybrid: ns from a pass to the next, the [`hybrid_slice`](Self::hybrid_slice)
    /// or else the notice bound less the lead, kept between the batch window and
    /// the sweep bound.
    pub fn hybrid_slice_ns(&self) -> u64 {
        let slice = match self.hybrid_slice {
            Some(s) => ns(s),
            None => ns(self.notice_bound).saturating_sub(ns(self.hybrid_lead)),
        };
        slice.max(ns(self.hybrid_batch)).min(ns(self.sweep_bound))
    }

    /// Hybrid: what to do at `now_ns` after a pass at `pass_ns` that completed nothing.
    pub fn hybrid_wait_after(&self, now_ns: u64, earliest_due_ns: Option<u64>, pass_ns: u64) -> HybridWait {
        let next = next_sliced_pass_ns(earliest_due_ns, pass_ns, ns(self.hybrid_batch), self.hybrid_slice_ns());
        hybrid_wait(now_ns, next, ns(self.hybrid_lead))
    }

    /// The group's schedule for this configuration.
    pub fn schedule(&self) -> Schedule {
        let ahead_ns = if self.policy == WaitPolicy::Hybrid { ns(self.hybrid_batch) } else { 0 };
        let recheck_ns = if self.policy == WaitPolicy::Spin { 0 } else { ns(self.recheck) };
        Schedule { sweep_bound_ns: ns(self.sweep_bound), recheck_ns, ahead_ns }
    }
}

/// The clock, sleep and spin a hybrid wait runs on: the poller thread's, a
/// bench's, or a test's fake.
pub trait HybridWaiter {
    /// The poller's clock, ns, on which the group's due times are.
    fn now_ns(&mut self) -> u64;
    /// Sleep about `ns`; it may end sooner, or overshoot.
    fn sleep_ns(&mut self, ns: u64);
    /// One short spin.
    fn spin(&mut self);
    /// A submission arrived or the poller is closing: stop waiting.
    fn interrupted(&mut self) -> bool;
}

/// How [`hybrid_wait_for_pass`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HybridWaitEnd {
    /// The next pass is due: make it.
    Pass,
    /// Nothing in flight: the caller blocks until a submission.
    Idle,
    /// A submission or shutdown ended the wait early.
    Interrupted,
}

/// Sleeps in one wait before the poller passes anyway, so that a sleep that
/// keeps ending early cannot hold it off its requests.
pub const HYBRID_MAX_SLEEPS: u32 = 64;

/// Hybrid: wait from a pass at `pass_ns` that completed nothing until the next
/// pass is due, sleeping, looking again on waking and spinning through the lead.
/// Never returns [`HybridWaitEnd::Pass`] before the pass's time; at most
/// [`HYBRID_MAX_SLEEPS`] sleeps.
pub fn hybrid_wait_for_pass<W: HybridWaiter>(
    cfg: &PollerConfig,
    earliest_due_ns: Option<u64>,
    pass_ns: u64,
    w: &mut W,
) -> HybridWaitEnd {
    for _ in 0..HYBRID_MAX_SLEEPS {
        if w.interrupted() {
            return HybridWaitEnd::Interrupted;
        }
        match cfg.hybrid_wait_after(w.now_ns(), earliest_due_ns, pass_ns) {
            HybridWait::Idle => return HybridWaitEnd::Idle,
            HybridWait::Pass => return HybridWaitEnd::Pass,
            HybridWait::SpinUntil(due) => {
                while w.now_ns() < due {
                    if w.interrupted() {
                        return HybridWaitEnd::Interrupted;
                    }
                    w.spin();
                }
                return HybridWaitEnd::Pass;
            }
            HybridWait::Sleep(ns) => w.sleep_ns(ns),
        }
    }
    HybridWaitEnd::Pass
}

/// A duration in ns, saturated.
fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hybrid_poller_sleeps_until_the_lead_then_spins_then_passes() {
        assert_eq!(hybrid_wait(100, None, 10), HybridWait::Idle);
        assert_eq!(hybrid_wait(100, Some(0), 10), HybridWait::Pass, "due at once");
        assert_eq!(hybrid_wait(100, Some(99), 10), HybridWait::Pass, "overdue");
        assert_eq!(hybrid_wait(100, Some(100), 10), HybridWait::Pass, "due now");
        assert_eq!(hybrid_wait(100, Some(101), 10), HybridWait::SpinUntil(101));
        assert_eq!(hybrid_wait(100, Some(110), 10), HybridWait::SpinUntil(110), "within the lead: spin");
        assert_eq!(hybrid_wait(100, Some(111), 10), HybridWait::Sleep(1), "past it: never spins");
        assert_eq!(hybrid_wait(100, Some(1_000_100), 10), HybridWait::Sleep(999_990));
        assert_eq!(hybrid_wait(100, Some(150), 0), HybridWait::Sleep(50), "no lead: sleep to the due time");
        assert_eq!(hybrid_wait(u64::MAX, Some(0), u64::MAX), HybridWait::Pass);
    }

    #[test]
    fn a_hybrid_poller_batches_due_times_into_one_pass_per_window() {
        assert_eq!(next_pass_ns(None, 100, 20), None);
        assert_eq!(next_pass_ns(Some(0), 100, 20), Some(120), "due at once: one window after the last pass");
        assert_eq!(next_pass_ns(Some(130), 100, 20), Some(120));
        assert_eq!(next_pass_ns(Some(150), 100, 20), Some(130), "the window before the due time");
        assert_eq!(next_pass_ns(Some(1_000), 100, 20), Some(980));
        assert_eq!(next_pass_ns(Some(1_000), 100, 0), Some(1_000));
        assert_eq!(next_pass_ns(Some(5), u64::MAX, 20), Some(u64::MAX), "saturates");
        assert_eq!(next_sliced_pass_ns(None, 100, 20, 40), None);
        assert_eq!(next_sliced_pass_ns(Some(0), 100, 20, 40), Some(140), "due at once: one slice after the last pass");
        assert_eq!(next_sliced_pass_ns(Some(150), 100, 20, 40), Some(140), "due within the slice: the slice");
        assert_eq!(next_sliced_pass_ns(Some(170), 100, 20, 40), Some(150), "the batch window before the due time");
        assert_eq!(next_sliced_pass_ns(Some(1_000), 100, 20, 0), Some(980), "no slice: the batch window");
        assert_eq!(next_sliced_pass_ns(Some(1_000), 100, 0, 40), Some(1_000));
        assert_eq!(next_sliced_pass_ns(Some(5), u64::MAX, 20, 40), Some(u64::MAX), "saturates");
    }

    #[test]
    fn policies_have_stable_codes_and_hybrid_is_the_default_without_a_core() {
        for p in [WaitPolicy::Spin, WaitPolicy::Hybrid, WaitPolicy::Sleep] {
            assert_eq!(WaitPolicy::from_code(p.code()), Some(p));
        }
        assert_eq!([WaitPolicy::Spin.code(), WaitPolicy::Hybrid.code(), WaitPolicy::Sleep.code()], [0, 1, 2]);
        assert_eq!(WaitPolicy::from_code(3), None);
        let d = PollerConfig::default();
        assert_eq!((d.cpu, d.policy), (None, WaitPolicy::Hybrid));
        let p = PollerConfig::dedicated(3);
        assert_eq!((p.cpu, p.policy, p.sweep_bound), (Some(3), WaitPolicy::Spin, d.sweep_bound));
        let c = PollerConfig {
            recheck: Duration::from_micros(7),
            sweep_bound: Duration::from_micros(900),
            ..PollerConfig::default()
        };
        assert_eq!(c.schedule(), Schedule { sweep_bound_ns: 900_000, recheck_ns: 7_000, ahead_ns: 20_000 });
        let s = PollerConfig { policy: WaitPolicy::Sleep, ..c };
        assert_eq!(s.schedule().ahead_ns, 0, "only a hybrid poller batches");
        assert_eq!(s.schedule().recheck_ns, 7_000, "a sleeping poller rechecks as asked");
        let spin = PollerConfig { policy: WaitPolicy::Spin, ..c }.schedule();
        assert_eq!((spin.ahead_ns, spin.recheck_ns), (0, 0), "a spinning poller steps every due request every pass");
        let huge = PollerConfig { sweep_bound: Duration::MAX, ..c };
        assert_eq!(huge.schedule().sweep_bound_ns, u64::MAX);
    }

    #[test]
    fn hybrid_slices_come_from_the_notice_bound() {
        let d = PollerConfig::default();
        assert_eq!(d.notice_bound, Duration::from_micros(60));
        assert_eq!(d.hybrid_slice_ns(), 50_000, "the bound less the 10 us lead");
        let us = Duration::from_micros;
        let c = |bound, lead, batch| PollerConfig {
            notice_bound: us(bound),
            hybrid_lead: us(lead),
            hybrid_batch: us(batch),
            ..d
        };
        assert_eq!(c(35, 5, 20).hybrid_slice_ns(), 30_000);
        assert_eq!(c(25, 10, 20).hybrid_slice_ns(), 20_000, "never under the batch window");
        assert_eq!(c(5, 10, 20).hybrid_slice_ns(), 20_000, "a bound inside the lead: the batch window");
        assert_eq!(c(0, 0, 0).hybrid_slice_ns(), 0);
        let huge = PollerConfig { notice_bound: Duration::MAX, ..d };
        assert_eq!(huge.hybrid_slice_ns(), 1_000_000, "never past the 1 ms sweep bound");
        assert_eq!(c(5_000, 10, 20).hybrid_slice_ns(), 1_000_000, "a 5 ms bound: the sweep bound");
        let slow_sweep = PollerConfig { sweep_bound: Duration::MAX, ..huge };
        assert_eq!(slow_sweep.hybrid_slice_ns(), u64::MAX - 10_000, "saturates, less the lead");
        let set = |slice| PollerConfig { hybrid_slice: Some(us(slice)), ..d };
        assert_eq!(set(200).hybrid_slice_ns(), 200_000, "a slice set is the slice, whatever the bound");
        assert_eq!(set(5).hybrid_slice_ns(), 20_000, "a slice set is still at least the batch window");
        assert_eq!(set(5_000).hybrid_slice_ns(), 1_000_000, "and at most the sweep bound");
        // After a pass at 100 us with something overdue: sleep to the lead before one slice on.
        let pass = 100_000;
        assert_eq!(d.hybrid_wait_after(103_000, Some(50_000), pass), HybridWait::Sleep(37_000));
        assert_eq!(d.hybrid_wait_after(103_000, None, pass), HybridWait::Idle);
        // Woken within the lead of the slice's end: spin to it.
        assert_eq!(d.hybrid_wait_after(141_000, Some(50_000), pass), HybridWait::SpinUntil(150_000));
        assert_eq!(d.hybrid_wait_after(150_000, Some(50_000), pass), HybridWait::Pass);
        // Due far out: sleep to the batch window before it, less the lead.
        assert_eq!(d.hybrid_wait_after(103_000, Some(900_000), pass), HybridWait::Sleep(767_000));
        // A bound within lead + batch: the batch-window spacing.
        let tight = c(20, 10, 20);
        assert_eq!(tight.hybrid_wait_after(103_000, Some(50_000), pass), HybridWait::Sleep(7_000));
        assert_eq!(tight.hybrid_wait_after(111_000, Some(50_000), pass), HybridWait::SpinUntil(120_000));
    }

    /// A fake clock: each sleep lasts what was asked plus the next of
    /// `overshoots`, each spin 100 ns; a submission comes after
    /// `interrupt_after` sleeps or `interrupt_after_spins` spins.
    struct FakeWaiter {
        t: u64,
        overshoots: Vec<i64>,
        sleeps: u32,
        spins: u32,
        interrupt_after: Option<u32>,
        interrupt_after_spins: Option<u32>,
    }

    impl FakeWaiter {
        fn new(t: u64, overshoots: Vec<i64>) -> FakeWaiter {
            FakeWaiter { t, overshoots, sleeps: 0, spins: 0, interrupt_after: None, interrupt_after_spins: None }
        }
    }

    impl HybridWaiter for FakeWaiter {
        fn now_ns(&mut self) -> u64 {
            self.t
        }
        fn sleep_ns(&mut self, ns: u64) {
            let o = self.overshoots.get(self.sleeps as usize % self.overshoots.len().max(1)).copied().unwrap_or(0);
            self.t = self.t.saturating_add_signed(i64::try_from(ns).unwrap_or(i64::MAX).saturating_add(o).max(0));
            self.sleeps += 1;
        }
        fn spin(&mut self) {
            self.t += 100;
            self.spins += 1;
        }
        fn interrupted(&mut self) -> bool {
            self.interrupt_after.is_some_and(|n| self.sleeps >= n)
                || self.interrupt_after_spins.is_some_and(|n| self.spins >= n)
        }
    }

    #[test]
    fn hybrid_passes_are_at_least_one_slice_apart_and_spin_through_the_lead() {
        let d = PollerConfig::default();
        let slice = d.hybrid_slice_ns();
        let lead = u64::try_from(d.hybrid_lead.as_nanos()).unwrap();
        // Overshoots inside the lead, one sleep ending 5 us early, one
        // overshooting past the lead by 5 us.
        let overshoots = vec![0, 3_000, 7_000, 9_900, -5_000, 15_000, 5_000];
        let mut w = FakeWaiter::new(1_000_000, overshoots);
        let mut gaps = Vec::new();
        for _ in 0..50 {
            // Something is always overdue, and the pass takes 2 us.
            let pass_ns = w.t;
            w.t += 2_000;
            let (sleeps, spins) = (w.sleeps, w.spins);
            assert_eq!(hybrid_wait_for_pass(&d, Some(0), pass_ns, &mut w), HybridWaitEnd::Pass);
            assert!(w.sleeps > sleeps, "it slept between passes");
            let gap = w.t - pass_ns;
            assert!(gap >= slice, "passes {gap} ns apart, under the {slice} ns slice");
            // Exactly the slice, as the spin ends on the pass's time, or the
            // sleep's 5 us overshoot past the lead.
            assert!(gap == slice || gap == slice + 5_000, "passes {gap} ns apart");
            if gap < slice + 100 {
                assert!(w.spins > spins, "woken inside the lead: it spun to the pass");
            }
            gaps.push(gap);
        }
        assert!(gaps.iter().any(|&g| g == slice + 5_000), "the late wake-up is in the sample: {gaps:?}");
        assert!(w.spins > 0 && lead > 0);
    }

    #[test]
    fn a_hybrid_wait_ends_on_a_submission_when_idle_and_within_its_bound() {
        let d = PollerConfig::default();
        let mut w = FakeWaiter::new(1_000_000, vec![0]);
        w.interrupt_after = Some(1);
        assert_eq!(hybrid_wait_for_pass(&d, Some(0), 1_000_000, &mut w), HybridWaitEnd::Interrupted);
        assert_eq!((w.sleeps, w.t), (1, 1_040_000), "one sleep to the lead before the pass, then the submission");
        let mut w = FakeWaiter::new(1_000_000, vec![0]);
        assert_eq!(hybrid_wait_for_pass(&d, None, 1_000_000, &mut w), HybridWaitEnd::Idle);
        assert_eq!((w.sleeps, w.spins), (0, 0), "nothing in flight: no sleep, no spin");
        // Interrupted while spinning through the lead.
        let mut w = FakeWaiter::new(1_045_000, vec![0]);
        w.interrupt_after_spins = Some(3);
        assert_eq!(hybrid_wait_for_pass(&d, Some(0), 1_000_000, &mut w), HybridWaitEnd::Interrupted);
        assert_eq!((w.sleeps, w.spins, w.t), (0, 3, 1_045_300), "woken inside the lead: spun, then stopped");
        // Sleeps that never advance the clock: it passes after the bound.
        let mut w = FakeWaiter::new(1_000_000, vec![-1_000_000_000]);
        assert_eq!(hybrid_wait_for_pass(&d, Some(0), 1_000_000, &mut w), HybridWaitEnd::Pass);
        assert_eq!((w.sleeps, w.t), (HYBRID_MAX_SLEEPS, 1_000_000));
    }
}
