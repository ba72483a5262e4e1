//! The poller thread: its loop of passes, the waits between them, and the
//! answers it hands to tickets. Only this thread calls the lanes.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nrt_core::exec::{ExecRequest, Lanes, PollGroup, Settle, Step};
use nrt_core::nq::Notifications;
use nrt_core::NrtStatus;

use super::policy::{hybrid_wait_for_pass, HybridWaiter, WaitPolicy};
use super::ticket::Handoff;
use super::{Pending, PollerConfig, Shared, IDLE_BLOCK_MS, POLLER_CAPACITY, SHUTDOWN_GRACE};

/// `spin_loop` hints per spin between passes: four PAUSEs are a fraction of a microsecond.
const SPINS_PER_WAIT: u32 = 4;

/// Answer `NRT_CLOSED` to what was queued after the thread's last look
/// (G-LINUX-CLOSE); `closing` is set under the queue's lock, so nothing follows.
pub(super) fn answer_queued_closed(sh: &Shared) {
    let left: Vec<Pending> = sh.queue().drain(..).collect();
    for p in left {
        answer(sh, &p.handoff, Step::failed(NrtStatus::Closed));
    }
}

/// Hand a finished request's result to its waiter.
fn answer(sh: &Shared, h: &Handoff, step: Step) {
    h.status.store(step.status().map_or(0, NrtStatus::code), Ordering::Release);
    h.step.store(step.code(), Ordering::Release);
    h.noticed_ns.store(u64::try_from(sh.origin.elapsed().as_nanos()).unwrap_or(u64::MAX), Ordering::Release);
    h.done.store(true, Ordering::SeqCst);
    sh.counters.completions.fetch_add(1, Ordering::Relaxed);
    if h.sleeper.load(Ordering::SeqCst) {
        if let Some(Some(e)) = h.efd.get() {
            let _ = e.write(1);
        }
        sh.counters.eventfd_wakes.fetch_add(1, Ordering::Relaxed);
    } else {
        sh.counters.spin_handoffs.fetch_add(1, Ordering::Relaxed);
    }
}

/// Lanes that, lending a lane, put its request's budget and place in effect
/// on the thread, for the lines its harvest logs.
struct BudgetLanes<'a, L> {
    inner: &'a mut L,
    budgets: &'a std::collections::HashMap<u16, crate::config::Budget>,
}

impl<L: Lanes> Lanes for BudgetLanes<'_, L> {
    type Dev = L::Dev;
    fn lane(&mut self, lane: u16) -> Option<(&mut L::Dev, &mut Notifications)> {
        let budget = if self.budgets.is_empty() { None } else { self.budgets.get(&lane).copied() };
        crate::config::set_thread_budget(budget);
        crate::oplog::set_thread_site(Some(crate::oplog::Site::lane(lane)));
        self.inner.lane(lane)
    }
}

/// The poller thread.
pub(super) fn run<L: Lanes>(sh: &Shared, lanes: &mut L, cfg: &PollerConfig) {
    let mut group: Box<PollGroup<POLLER_CAPACITY>> = Box::new(PollGroup::new());
    group.set_schedule(cfg.schedule());
    let mut handoffs: Vec<Option<Arc<Handoff>>> = vec![None; POLLER_CAPACITY];
    // Each slot's model timeout, for the shutdown bound.
    let mut timeouts_s = [0u32; POLLER_CAPACITY];
    let mut closing_since: Option<Instant> = None;
    let mut lanes_changed = false;
    let mut backlog: VecDeque<Pending> = VecDeque::new();
    let mut last_event = Instant::now();
    // The budget of each lane's request until it completes; `finished` holds a pass's completed lanes.
    let mut budgets: std::collections::HashMap<u16, crate::config::Budget> = std::collections::HashMap::new();
    let mut finished: Vec<u16> = Vec::new();
    loop {
        if sh.queued.load(Ordering::SeqCst) > 0 {
            let mut q = sh.queue();
            sh.queued.store(0, Ordering::SeqCst);
            backlog.extend(q.drain(..));
            lanes_changed = true;
            last_event = Instant::now();
        }
        let closing = sh.closing.load(Ordering::SeqCst);
        if closing && closing_since.is_none() {
            closing_since = Some(Instant::now());
        }
        if let Some(t) = closing_since {
            // The requests in flight may finish within their longest timeout plus
            // the grace, on this process's clock: a stalled device clock cannot hold shutdown.
            let longest = timeouts_s.iter().copied().max().unwrap_or(0);
            if t.elapsed() > Duration::from_secs(u64::from(longest)) + SHUTDOWN_GRACE {
                for (slot, h) in handoffs.iter_mut().enumerate() {
                    if let Some(h) = h.take() {
                        group.remove(slot);
                        answer(sh, &h, Step::failed(NrtStatus::Closed));
                    }
                }
            }
        }
        if closing {
            // Not yet started: answered NRT_CLOSED.
            for p in backlog.drain(..) {
                answer(sh, &p.handoff, Step::failed(NrtStatus::Closed));
            }
        }
        // Start what the free lanes can take, in submission order per lane, once
        // a submission arrived or a request finished: only then is a lane freed.
        if std::mem::take(&mut lanes_changed) {
            let mut i = 0;
            while i < backlog.len() && group.in_flight() < POLLER_CAPACITY {
                let Some(p) = backlog.get(i) else { break };
                if group.lane_busy(p.lane) {
                    i += 1;
                    continue;
                }
                let Some(p) = backlog.remove(i) else { break };
                // The waiter gets the status first; the group settles the
                // request's timestamps and counters right after (G-SETTLE).
                match group.insert(p.lane, p.cfg.with_settle(Settle::AfterNotice), 0) {
                    Ok(slot) => {
                        match p.budget {
                            Some(b) => budgets.insert(p.lane, b),
                            None => budgets.remove(&p.lane),
                        };
                        if let Some(h) = handoffs.get_mut(slot) {
                            *h = Some(p.handoff);
                        }
                        if let Some(t) = timeouts_s.get_mut(slot) {
                            *t = p.cfg.timeout_s;
                        }
                    }
                    Err(_) => {
                        // Full: it waits, in its place, for the next completion.
                        sh.counters.refused_busy_lane.fetch_add(1, Ordering::Relaxed);
                        backlog.insert(i, p);
                        break;
                    }
                }
            }
        }
        if group.is_empty() {
            // Nothing in flight, so no budget.
            budgets.clear();
            if closing && backlog.is_empty() {
                return;
            }
            idle_wait(sh, cfg, last_event);
            continue;
        }
        let pass_ns = now_ns(sh);
        let mut done = |c: &nrt_core::exec::Completion, _req: &ExecRequest| {
            if let Some(h) = handoffs.get_mut(c.slot).and_then(Option::take) {
                answer(sh, &h, c.step);
            }
            if let Some(t) = timeouts_s.get_mut(c.slot) {
                *t = 0;
            }
            finished.push(c.lane);
        };
        let pass = group.poll_due(&mut BudgetLanes { inner: &mut *lanes, budgets: &budgets }, pass_ns, &mut done);
        crate::config::set_thread_budget(None);
        crate::oplog::set_thread_site(None);
        for lane in finished.drain(..) {
            budgets.remove(&lane);
        }
        sh.counters.passes.fetch_add(1, Ordering::Relaxed);
        sh.counters.steps.fetch_add(pass.stepped as u64, Ordering::Relaxed);
        sh.counters.skipped.fetch_add(pass.skipped as u64, Ordering::Relaxed);
        if pass.completed > 0 {
            lanes_changed = true;
            last_event = Instant::now();
            // A lane may be free for the backlog, or nothing left in flight: look again.
            continue;
        }
        match cfg.policy {
            WaitPolicy::Spin => {
                let quiet = last_event.elapsed();
                if quiet < cfg.spin_for {
                    spin_hint();
                } else if quiet < cfg.yield_for {
                    std::thread::yield_now();
                } else {
                    sleep_between_passes(sh, cfg);
                }
            }
            WaitPolicy::Sleep => sleep_between_passes(sh, cfg),
            WaitPolicy::Hybrid => {
                // However it ends, the loop's top takes it from there. Shutdown
                // ends the wait once: the requests in flight are then waited
                // for as before, not passed over in a hot loop.
                let mut w = ThreadWaiter { sh, closing_seen: closing };
                let _ = hybrid_wait_for_pass(cfg, group.earliest_due_ns(), pass_ns, &mut w);
            }
        }
    }
}

/// The poller thread's [`HybridWaiter`]: a submission, or shutdown news, ends its sleep early.
struct ThreadWaiter<'a> {
    sh: &'a Shared,
    closing_seen: bool,
}

impl ThreadWaiter<'_> {
    /// Shutdown that the loop has not yet seen.
    fn closing_news(&self) -> bool {
        !self.closing_seen && self.sh.closing.load(Ordering::SeqCst)
    }
}

impl HybridWaiter for ThreadWaiter<'_> {
    fn now_ns(&mut self) -> u64 {
        now_ns(self.sh)
    }
    fn sleep_ns(&mut self, ns: u64) {
        self.sh.counters.sleeps.fetch_add(1, Ordering::Relaxed);
        self.sh.sleeping.store(true, Ordering::SeqCst);
        if self.sh.queued.load(Ordering::SeqCst) == 0 && !self.closing_news() {
            let _ = self.sh.wake.wait_readable_ns(ns);
        }
        let _ = self.sh.wake.try_read();
        self.sh.sleeping.store(false, Ordering::SeqCst);
    }
    fn spin(&mut self) {
        spin_hint();
    }
    fn interrupted(&mut self) -> bool {
        self.sh.queued.load(Ordering::Relaxed) != 0 || self.closing_news()
    }
}

/// A few PAUSEs between passes.
fn spin_hint() {
    for _ in 0..SPINS_PER_WAIT {
        std::hint::spin_loop();
    }
}

/// The sleeping wait between passes: [`PollerConfig::sleep_us`].
fn sleep_between_passes(sh: &Shared, cfg: &PollerConfig) {
    sh.counters.sleeps.fetch_add(1, Ordering::Relaxed);
    std::thread::sleep(Duration::from_micros(u64::from(cfg.sleep_us.max(1))));
}

/// This poller's clock: ns since its origin.
fn now_ns(sh: &Shared) -> u64 {
    u64::try_from(sh.origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// Set the calling thread's timer slack to 1 ns, so that a sleep ends when
/// asked, not up to 50 us later. A refusal only leaves the default slack.
#[allow(unsafe_code)]
pub fn set_timer_slack_1ns() {
    // SAFETY: PR_SET_TIMERSLACK takes an integer argument and touches no memory of ours.
    let _ = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}

/// Nothing in flight: spin, then yield, then block on the wake eventfd, which
/// a submitter writes only while `sleeping` is set.
fn idle_wait(sh: &Shared, cfg: &PollerConfig, last_event: Instant) {
    let quiet = if cfg.policy == WaitPolicy::Spin { last_event.elapsed() } else { Duration::MAX };
    if quiet < cfg.spin_for {
        for _ in 0..SPINS_PER_WAIT {
            std::hint::spin_loop();
        }
        return;
    }
    if quiet < cfg.yield_for {
        std::thread::yield_now();
        return;
    }
    sh.sleeping.store(true, Ordering::SeqCst);
    if sh.queued.load(Ordering::SeqCst) == 0 && !sh.closing.load(Ordering::SeqCst) {
        let _ = sh.wake.wait_readable(IDLE_BLOCK_MS);
    }
    let _ = sh.wake.try_read();
    sh.sleeping.store(false, Ordering::SeqCst);
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, AtomicU32};
    use std::sync::Mutex;

    use super::*;
    use crate::poller::ticket::Alive;
    use crate::poller::{Counters, HybridWaitEnd};
    use crate::sys::EventFd;

    fn quiet_shared() -> Shared {
        Shared {
            queue: Mutex::new(VecDeque::new()),
            queued: AtomicU32::new(0),
            sleeping: AtomicBool::new(false),
            wake: EventFd::new(false).expect("an eventfd"),
            closing: AtomicBool::new(false),
            counters: Counters::default(),
            origin: Instant::now(),
            alive: Arc::new(Alive(AtomicBool::new(true))),
        }
    }

    #[test]
    fn closing_ends_the_hybrid_wait_once_then_the_wait_sleeps_as_before() {
        let sh = quiet_shared();
        sh.closing.store(true, Ordering::SeqCst);
        let mut news = ThreadWaiter { sh: &sh, closing_seen: false };
        assert!(news.interrupted(), "shutdown the loop has not seen ends the wait");
        let mut seen = ThreadWaiter { sh: &sh, closing_seen: true };
        assert!(!seen.interrupted(), "once seen, shutdown does not end the wait (no hot drain)");
        // The drain's sleep sleeps: 20 ms asked, at least 20 ms slept.
        let t = Instant::now();
        seen.sleep_ns(20_000_000);
        assert!(t.elapsed() >= Duration::from_millis(20), "{:?}: the sleep returned at once", t.elapsed());
        // A submission still ends it, and its sleep, at once: 10 s asked, 5 s a
        // backstop far above any machine's return.
        sh.queued.store(1, Ordering::SeqCst);
        assert!(seen.interrupted(), "a submission ends the wait");
        let t = Instant::now();
        seen.sleep_ns(10_000_000_000);
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}: slept through a submission", t.elapsed());
        sh.queued.store(0, Ordering::SeqCst);
        // Shutdown not yet seen ends the sleep at once too.
        let t = Instant::now();
        news.sleep_ns(10_000_000_000);
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}: slept through shutdown news", t.elapsed());
        // The whole wait, with a request due 30 ms ahead: it sleeps to the lead,
        // once or after an early wake twice, then passes.
        let cfg = PollerConfig::default();
        let before = sh.counters.sleeps.load(Ordering::Relaxed);
        let pass = now_ns(&sh);
        let end = hybrid_wait_for_pass(&cfg, Some(pass + 30_000_000), pass, &mut seen);
        assert_eq!(end, HybridWaitEnd::Pass);
        let slept = sh.counters.sleeps.load(Ordering::Relaxed) - before;
        assert!((1..=3).contains(&slept), "{slept} sleeps for one wait to the lead");
    }
}
