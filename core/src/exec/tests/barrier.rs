//! WAIT_BARRIER_PROXY: the barrier warnings, proxy failures, and the core budget
//! starting only once the barrier clears.

use super::*;

#[test]
fn barrier_warns_at_120_240_480_seconds_and_never_fails() {
    let mut r = Rig::new(1, 5);
    r.dev.barrier_done_at_ns = [u64::MAX; 2];
    r.step(); // INIT at t0
    let t0 = r.dev.now.get();
    let at = |r: &mut Rig, s: u64| {
        r.dev.now.set(t0 + s * 1_000_000_000);
        assert_eq!(r.step(), Step::InFlight);
        r.dev.count("barrier_wait")
    };
    assert_eq!(at(&mut r, 119), 0);
    assert_eq!(at(&mut r, 120), 1);
    assert_eq!(r.req.barrier_threshold_s(), 240);
    assert_eq!(at(&mut r, 200), 1);
    assert_eq!(at(&mut r, 239), 1);
    assert_eq!(at(&mut r, 240), 2);
    assert_eq!(at(&mut r, 479), 2);
    assert_eq!(at(&mut r, 480), 3);
    assert_eq!(at(&mut r, 10_000), 4, "one warning per poll past the threshold, then it doubles again");
    assert_eq!(r.req.barrier_threshold_s(), 1920);
    let thresholds: Vec<u32> = r
        .dev
        .events_of("barrier_wait")
        .map(|e| match e {
            Event::Exec(ExecEvent::BarrierWait { threshold_s, .. }) => *threshold_s,
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(thresholds, [120, 240, 480, 960]);
    assert_eq!(r.req.state(), ExecState::WaitBarrierProxy);
    // The barrier clears; the core budget starts only now.
    r.dev.barrier_done_at_ns = [0; 2];
    assert_eq!(r.step(), Step::InFlight);
    assert_eq!(r.req.state(), ExecState::WaitCore);
    r.dev.run_all(1, 1, 2);
    assert_eq!(r.step(), Step::Done(NrtStatus::Success));
}

#[test]
fn barrier_of_300_s_gives_two_warnings_and_success() {
    let mut r = Rig::new(2, 5);
    r.dev.barrier_done_at_ns = [0, r.dev.now.get() + 300 * 1_000_000_000];
    r.dev.run_all(2, 5, 6);
    r.step();
    for _ in 0..31 {
        r.dev.advance_ms(10_000);
        r.step();
    }
    let s = r.finish();
    assert_eq!(s, Step::Done(NrtStatus::Success));
    assert_eq!(r.dev.count("barrier_wait"), 2);
}

#[test]
fn barrier_and_network_proxy_failures_finalize_with_their_status() {
    let mut r = Rig::new(2, 5);
    r.dev.barrier_fail[1] = NrtError::new(NrtStatus::ExecHwErrCollectives);
    r.step();
    assert_eq!(r.step(), Step::failed(NrtStatus::ExecHwErrCollectives));
    assert!(r.req.fatal_flag(1, fatal::BARRIER_PROXY));
    assert_eq!(r.dev.count("barrier_proxy_failed"), 1);

    let mut r = Rig::new(2, 5);
    r.dev.network_fail[0] = NrtError::new(NrtStatus::NetworkProxyFailure);
    r.enter_wait_core();
    assert_eq!(r.step(), Step::failed(NrtStatus::NetworkProxyFailure));
    assert!(r.req.fatal_flag(0, fatal::NETWORK_PROXY));
    assert_eq!(r.req.out_info().exec_rets[0], NrtStatus::NetworkProxyFailure);

    // A proxy that fails with "success" is still a failure.
    let mut r = Rig::new(1, 5);
    r.dev.barrier_fail[0] = Some(NrtError::failed(NrtStatus::Success));
    r.step();
    assert_eq!(r.step(), Step::failed(NrtStatus::Failure));
}

#[test]
fn the_core_budget_starts_when_the_barrier_clears_not_at_init() {
    // The barrier takes 300 s; the model's budget is 5 s; PE stays pending.
    let mut r = Rig::new(1, 5);
    let t0 = r.dev.now.get();
    r.dev.barrier_done_at_ns = [t0 + 300_000_000_000; 2];
    assert_eq!(r.step(), Step::InFlight); // INIT at t0
    r.dev.now.set(t0 + 300_000_000_000);
    assert_eq!(r.step(), Step::InFlight);
    assert_eq!(r.req.state(), ExecState::WaitCore);
    // Right after the barrier: 300 s since INIT, 0 s of the core budget.
    assert_eq!(r.step(), Step::InFlight);
    r.dev.advance_ms(4_999);
    assert_eq!(r.step(), Step::InFlight, "4.999 s of the 5 s budget");
    assert_eq!(r.dev.count("core_timeout"), 0);
    r.dev.advance_ms(1);
    assert_eq!(r.step(), Step::failed(NrtStatus::Timeout));
    assert!(r
        .dev
        .events
        .iter()
        .any(|e| matches!(e, Event::Exec(ExecEvent::CoreTimeout { elapsed_ms: 5_000, timeout_ms: 5_000, .. }))));
}

#[test]
fn barrier_wait_event_reports_whole_seconds_waited() {
    let mut r = Rig::new(1, 5);
    r.dev.barrier_done_at_ns = [u64::MAX; 2];
    r.step();
    r.dev.advance_ns(125_700_000_000);
    assert_eq!(r.step(), Step::InFlight);
    assert_eq!(
        r.dev.events_of("barrier_wait").collect::<Vec<_>>(),
        [&Event::Exec(ExecEvent::BarrierWait { waited_s: 125, threshold_s: 120 })]
    );
}
