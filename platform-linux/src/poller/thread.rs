//! The poller thread: its loop of passes, the waits between them, and the
//! answers it hands to tickets.

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

/// `spin_loop` hints per spin between passes: a PAUSE is ~40-140 cycles on the
/// Xeons measured, so 4 of them keep a pass every ~0.1-0.3 us plus the pass.
const SPINS_PER_WAIT: u32 = 4;

/// Submitted after the thread's last look at the queue (or the thread
/// died): never started, answered NRT_CLOSED (G-LINUX-CLOSE). Shutdown set
/// `closing` under the queue's lock first, so nothing is queued after this.
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

/// Lanes whose [`lane`](Lanes::lane) first puts the budget of the lane's
/// request and the lane's place in effect on the thread (a pass steps that
/// request right after lending its lane), so that the lines its harvest logs
/// name them.
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
    // The budget of each lane's request (a lane harvests one at a time), for
    // those submitted with one, until it completes (the lanes that completed
    // in a pass, `finished`).
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
            // The requests in flight may finish, within their longest timeout
            // plus a grace on this process's clock; a device clock that stalls
            // cannot hold shutdown longer (G-POLLER-CLOSE).
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
            // Not yet started: answered NRT_CLOSED (G-LINUX-CLOSE).
            for p in backlog.drain(..) {
                answer(sh, &p.handoff, Step::failed(NrtStatus::Closed));
            }
        }
        // Start what the free lanes can take, in submission order per lane
        // (only when a submission arrived or a request finished: otherwise no
        // lane became free).
        if std::mem::take(&mut lanes_changed) {
            let mut i = 0;
            while i < backlog.len() && group.in_flight() < POLLER_CAPACITY {
                let Some(p) = backlog.get(i) else { break };
                if group.lane_busy(p.lane) {
                    i += 1;
                    continue;
                }
                let Some(p) = backlog.remove(i) else { break };
                // The waiter gets only the status (the `done` below): the
                // group settles each request's timestamps and counters on its
                // lane right after answering it (G-SETTLE).
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
            // Nothing in flight (also after shutdown's forced answers): no budget.
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
            // A finished request may free a lane for the backlog, or leave
            // nothing in flight: look again before waiting.
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
                // Whichever way it ends, the loop's top takes a submission,
                // blocks when nothing is in flight, or passes.
                // Closing, once seen here, no longer ends the wait: the loop
                // has answered the backlog, and the requests in flight are
                // waited for as before, not passed over in a hot loop.
                let mut w = ThreadWaiter { sh, closing_seen: closing };
                let _ = hybrid_wait_for_pass(cfg, group.earliest_due_ns(), pass_ns, &mut w);
            }
        }
    }
}

/// The poller thread's [`HybridWaiter`]: its clock, a sleep that a
/// submission (or shutdown, until the loop has seen it: `closing_seen`) ends
/// early, and the queue and closing flags.
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

/// This poller's clock: ns since its origin (the group's due times are on it).
fn now_ns(sh: &Shared) -> u64 {
    u64::try_from(sh.origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// Set the calling thread's timer slack to 1 ns (a hybrid poller's sleeps end
/// when asked, not up to 50 us later). A refusal leaves the default slack:
/// the poller works, its sleeps overshoot more.
#[allow(unsafe_code)]
pub fn set_timer_slack_1ns() {
    // SAFETY: PR_SET_TIMERSLACK takes an integer argument and touches no memory of ours.
    let _ = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}

/// Nothing in flight: spin, then yield, then block on the wake eventfd
/// (written by a submitter only while `sleeping` is set).
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
        // The drain's sleep sleeps: 20 ms asked, at least 20 ms slept (a lower
        // bound: a slow machine only sleeps longer).
        let t = Instant::now();
        seen.sleep_ns(20_000_000);
        assert!(t.elapsed() >= Duration::from_millis(20), "{:?}: the sleep returned at once", t.elapsed());
        // A submission still ends it, and its sleep, at once (10 s asked; 5 s
        // is a backstop far above any machine's return, not a goal).
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
        // The whole wait, with a request due 30 ms ahead on the poller's
        // clock: it sleeps to the lead (once; a second time at most after an
        // early wake), then passes. A clock that does not move would sleep
        // HYBRID_MAX_SLEEPS times.
        let cfg = PollerConfig::default();
        let before = sh.counters.sleeps.load(Ordering::Relaxed);
        let pass = now_ns(&sh);
        let end = hybrid_wait_for_pass(&cfg, Some(pass + 30_000_000), pass, &mut seen);
        assert_eq!(end, HybridWaitEnd::Pass);
        let slept = sh.counters.sleeps.load(Ordering::Relaxed) - before;
        assert!((1..=3).contains(&slept), "{slept} sleeps for one wait to the lead");
    }
}
