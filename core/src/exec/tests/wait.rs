//! The wait loops: the round-robin and watching drivers, the hooks, and the
//! batched HEAD write-back at the end.

use super::*;
use crate::exec::driver::WATCH_STEP_EVERY;
use crate::hal::Delay;
use crate::testutil::CountingDelay;
use core::ops::ControlFlow;

#[test]
fn sync_driver_polls_until_done() {
    let mut r = Rig::new(2, 5);
    r.dev.auto_advance_ns = 1_000_000; // a broken harvest ends at the timeout, not never
    r.dev.run_all(2, 1, 2);
    let mut delay = r.dev.now.get();
    let mut d = |_us: u32| delay += 1;
    struct F<'a>(&'a mut dyn FnMut(u32));
    impl Delay for F<'_> {
        fn delay_us(&mut self, us: u32) {
            (self.0)(us)
        }
    }
    let w = exec_wait_round_robin(&mut r.req, &mut *r.dev, &mut r.nq, &mut F(&mut d));
    assert_eq!(w, SyncWait { status: NrtStatus::Success, step: Step::Done(NrtStatus::Success), steps: 3 });
}

#[test]
fn sync_driver_ends_at_the_timeout_on_a_hang() {
    let mut r = Rig::new(1, 1);
    // Each clock read is 1 ms later: the 1 s budget is reached after hundreds of
    // polls. Under Miri 20 ms: the same ending after tens of polls (each poll
    // is the same sweep, and Miri interprets each one).
    let (ms, fewest, most) = if cfg!(miri) { (20, 5, 100) } else { (1, 100, 2_000) };
    r.dev.auto_advance_ns = ms * 1_000_000;
    // Counts the polls, and fails the test (rather than hang it) should the
    // harvest never reach its timeout.
    let w = exec_wait_round_robin(&mut r.req, &mut *r.dev, &mut r.nq, &mut CountingDelay::new(100_000));
    assert_eq!((w.status, w.step), (NrtStatus::Timeout, Step::failed(NrtStatus::Timeout)));
    assert!(w.steps > fewest && w.steps < most, "{}", w.steps);
}

/// Reads not yet handed back in any of `nq`'s rings.
fn unacked(nq: &Notifications) -> u32 {
    (0..MAX_CORES as u8)
        .flat_map(|c| (0..8u8).map(move |q| (c, q)))
        .filter_map(|(c, q)| nq.ring(c, q))
        .map(|r| r.unacked())
        .sum()
}

/// A request that times out with one engine started and none ended: under
/// batching its START read is held back by every step (the engine is not
/// COMPLETE and its ring did not fail).
fn timed_out_with_a_held_read(cores: u8) -> Rig {
    let mut r = Rig::new(cores, 1);
    r.nq.set_head_batching(true);
    r.dev.auto_advance_ns = 50_000_000;
    r.dev.start(0, 0, 1);
    r
}

#[test]
fn the_loop_writes_the_batched_heads_back_once_the_request_is_done() {
    let mut r = timed_out_with_a_held_read(1);
    let w = exec_wait_with(&mut r.req, &mut *r.dev, &mut r.nq, &mut count_delays(), &mut NoHooks);
    assert_eq!((w.status, w.step), (NrtStatus::Timeout, Step::failed(NrtStatus::Timeout)));
    assert_eq!(unacked(&r.nq), 0, "every read handed back at the end");
    // The same harvest by hand keeps the read (the loop's write-back is what
    // hands it back).
    let mut m = timed_out_with_a_held_read(1);
    let mut end = Step::InFlight;
    for _ in 0..1_000 {
        end = m.step();
        if end != Step::InFlight {
            break;
        }
    }
    assert_eq!(end, Step::failed(NrtStatus::Timeout));
    assert_eq!(unacked(&m.nq), 1, "a step alone keeps the batch");
    assert_eq!(r.dev.head_writes, m.dev.head_writes + 1);
}

#[test]
fn a_request_settled_after_the_notice_comes_back_with_its_reads_for_the_settle() {
    // The same held read, the request settled after its notice, G-SETTLE:
    // the loop returns the status without writing HEAD; the settle does.
    let mut r = timed_out_with_a_held_read(1);
    r.req = ExecRequest::new(ExecConfig::new(Arch::Sunda, 1, 1).with_settle(Settle::AfterNotice));
    let writes = r.dev.head_writes;
    let w = exec_wait_with(&mut r.req, &mut *r.dev, &mut r.nq, &mut count_delays(), &mut NoHooks);
    assert_eq!(w.step, Step::failed(NrtStatus::Timeout));
    assert!(r.req.settle_due());
    assert_eq!((unacked(&r.nq), r.dev.head_writes), (1, writes), "the read waits for the settle");
    assert!(r.req.settle(&mut *r.dev, &mut r.nq));
    assert_eq!((unacked(&r.nq), r.dev.head_writes), (0, writes + 1), "handed back by the settle");
}

/// Hooks that log what the loop calls, and abandon or skip as told.
#[derive(Default)]
struct LogHooks {
    before: u32,
    after: std::vec::Vec<Step>,
    delays: u32,
    looks: u32,
    /// Abandon at this `before_delay` call (1-based).
    abandon_at: Option<u32>,
    /// Step only at every this many looks.
    step_every: u32,
}

impl<D: ?Sized, W: ?Sized> WaitHooks<D, W> for LogHooks {
    fn before_step(&mut self, _: &ExecRequest, _: &mut D, _: &Notifications) {
        self.before += 1;
    }
    fn after_step(&mut self, _: &ExecRequest, _: &mut D, _: &Notifications, step: Step) {
        self.after.push(step);
    }
    fn before_delay(&mut self, _: &ExecRequest, _: &mut D, _: &Notifications, _: &mut W) -> ControlFlow<NrtStatus> {
        self.delays += 1;
        if self.abandon_at == Some(self.delays) {
            return ControlFlow::Break(NrtStatus::Invalid);
        }
        ControlFlow::Continue(())
    }
    fn step_now(&mut self, _: &ExecRequest, _: &mut D, _: &Notifications) -> bool {
        self.looks += 1;
        self.looks.is_multiple_of(self.step_every.max(1))
    }
}

#[test]
fn the_loop_calls_each_hook_around_each_step_and_delay() {
    let mut r = Rig::new(2, 5);
    r.dev.run_all(2, 1, 2);
    let mut d = count_delays();
    let mut h = LogHooks { step_every: 3, ..LogHooks::default() };
    let w = exec_wait_with(&mut r.req, &mut *r.dev, &mut r.nq, &mut d, &mut h);
    assert_eq!(w, SyncWait { status: NrtStatus::Success, step: Step::Done(NrtStatus::Success), steps: 3 });
    assert_eq!(h.before, 3, "one pass hook per step");
    assert_eq!(h.after, [Step::InFlight, Step::InFlight, Step::Done(NrtStatus::Success)]);
    // Two waits between the three steps, each three delays long: the hook said
    // "not yet" twice, then "step".
    assert_eq!((d.calls, h.delays, h.looks), (6, 6, 6));
}

#[test]
fn a_hook_abandons_the_wait_with_its_status_and_the_request_goes_on_after() {
    let mut r = Rig::new(1, 5);
    r.nq.set_head_batching(true);
    let mut d = count_delays();
    let mut h = LogHooks { abandon_at: Some(4), ..LogHooks::default() };
    let w = exec_wait_with(&mut r.req, &mut *r.dev, &mut r.nq, &mut d, &mut h);
    assert_eq!(w, SyncWait { status: NrtStatus::Invalid, step: Step::InFlight, steps: 4 });
    assert_eq!(d.calls, 3, "no delay after the abandoning look");
    assert_eq!(r.req.state(), ExecState::WaitCore, "left in flight");
    let writes = r.dev.head_writes;
    r.dev.run_all(1, 1, 2);
    let w = exec_wait_round_robin(&mut r.req, &mut *r.dev, &mut r.nq, &mut d);
    assert_eq!((w.status, w.step), (NrtStatus::Success, Step::Done(NrtStatus::Success)));
    assert!(r.dev.head_writes > writes);
    assert_eq!(unacked(&r.nq), 0);
}

#[test]
fn the_loop_ends_at_the_requests_timeout_with_hooks_that_never_abandon() {
    let mut r = Rig::new(1, 1);
    let ms = if cfg!(miri) { 20 } else { 1 };
    r.dev.auto_advance_ns = ms * 1_000_000;
    let mut h = LogHooks::default();
    let w = exec_wait_with(&mut r.req, &mut *r.dev, &mut r.nq, &mut CountingDelay::new(100_000), &mut h);
    assert_eq!((w.status, w.step), (NrtStatus::Timeout, Step::failed(NrtStatus::Timeout)));
    assert_eq!(u64::from(h.before), w.steps);
    assert_eq!(u64::from(h.delays), w.steps - 1);
}

#[test]
fn sync_driver_sleeps_1_us_between_steps() {
    let mut r = Rig::new(1, 5);
    r.dev.auto_advance_ns = 1_000_000; // a broken harvest ends at the timeout, not never
    r.dev.run_all(1, 1, 2);
    struct Log(Vec<u32>);
    impl Delay for Log {
        fn delay_us(&mut self, us: u32) {
            self.0.push(us);
        }
    }
    let mut log = Log(Vec::new());
    let w = exec_wait_round_robin(&mut r.req, &mut *r.dev, &mut r.nq, &mut log);
    assert_eq!((w.status, w.step, w.steps), (NrtStatus::Success, Step::Done(NrtStatus::Success), 3));
    assert_eq!(log.0, [1, 1], "usleep(1) between steps, none after the last (seed §1)");
}

/// Counts the delays; fails the test (rather than hang it) past a bound.
const fn count_delays() -> CountingDelay {
    CountingDelay::new(100_000)
}

#[test]
fn the_watching_driver_ends_as_the_sync_driver_does() {
    // Records already there: every look says step, the same three steps.
    let mut a = Rig::new(2, 5);
    a.dev.run_all(2, 1, 2);
    let mut b = Rig::new(2, 5);
    b.dev.run_all(2, 1, 2);
    let wa = exec_wait_round_robin(&mut a.req, &mut *a.dev, &mut a.nq, &mut count_delays());
    let mut d = count_delays();
    let wb = exec_wait_watching(&mut b.req, &mut *b.dev, &mut b.nq, &mut d);
    assert_eq!(wa, SyncWait { status: NrtStatus::Success, step: Step::Done(NrtStatus::Success), steps: 3 });
    assert_eq!(wb, wa);
    assert_eq!(d.calls, 2, "a delay between steps, none after the last");
    assert_eq!(a.req.out_info(), b.req.out_info());
}

#[test]
fn the_watching_driver_steps_at_a_bounded_interval_and_ends_at_the_timeout() {
    let mut r = Rig::new(1, 1);
    let (ms, fewest) = if cfg!(miri) { (20, 5) } else { (1, 100) };
    r.dev.auto_advance_ns = ms * 1_000_000;
    let mut d = count_delays();
    let w = exec_wait_watching(&mut r.req, &mut *r.dev, &mut r.nq, &mut d);
    assert_eq!((w.status, w.step), (NrtStatus::Timeout, Step::failed(NrtStatus::Timeout)));
    assert!(w.steps > fewest, "{}", w.steps);
    // Init and the barrier step at once (no look skips them); then one step
    // per WATCH_STEP_EVERY delays, exactly.
    assert_eq!(
        u64::from(d.calls),
        (w.steps - 2) * u64::from(driver::WATCH_STEP_EVERY) + 1,
        "{} delays, {} steps",
        d.calls,
        w.steps
    );
}

#[test]
fn a_hook_that_never_says_step_cannot_hold_the_step_back() {
    // `step_now` says "not yet" at every look (but the 2^32-th): the loop
    // still steps after every WATCH_STEP_EVERY delays, and so sees the
    // request's own timeout (without that, CountingDelay's bound fails it).
    let mut r = timed_out_with_a_held_read(1);
    let mut h = LogHooks { step_every: u32::MAX, ..LogHooks::default() };
    let mut d = count_delays();
    let w = exec_wait_with(&mut r.req, &mut *r.dev, &mut r.nq, &mut d, &mut h);
    assert_eq!((w.status, w.step), (NrtStatus::Timeout, Step::failed(NrtStatus::Timeout)));
    assert!(w.steps > 1, "{w:?}");
    assert_eq!(u64::from(d.calls), (w.steps - 1) * u64::from(WATCH_STEP_EVERY), "a step every WATCH_STEP_EVERY delays");
    assert_eq!(h.looks, d.calls, "step_now is still asked after every delay");
}

#[test]
fn an_abandoned_wait_hands_back_the_reads_it_held() {
    let mut r = timed_out_with_a_held_read(1);
    let before = r.dev.head_writes;
    // INIT, WAIT_BARRIER_PROXY, then a WAIT_CORE step that reads the START and
    // holds it back (batched, the engine not COMPLETE); abandoned after it.
    let mut h = LogHooks { abandon_at: Some(3), ..LogHooks::default() };
    let w = exec_wait_with(&mut r.req, &mut *r.dev, &mut r.nq, &mut count_delays(), &mut h);
    assert_eq!(w, SyncWait { status: NrtStatus::Invalid, step: Step::InFlight, steps: 3 });
    assert_eq!(r.req.state(), ExecState::WaitCore, "left in flight");
    assert_eq!(unacked(&r.nq), 0, "the START read is handed back");
    assert!(r.dev.head_writes > before);
}
