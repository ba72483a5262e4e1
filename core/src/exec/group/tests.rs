//! The poll group against the sync driver, its slot bookkeeping, and batched
//! HEAD write-back against the ring protocol.

use super::*;
use crate::arch::{Arch, ENGINES_PER_CORE};
use crate::exec::{exec_wait_round_robin, fatal, ExecState};
use crate::nq::{ErrorEntry, Subtype, INFER_STATUS_NQS};
use crate::status::NrtError;
use crate::testutil::{CountingDelay, FakeDevice, INTC_OVERFLOW};

const RING: u32 = 1024; // 64 entries

/// A platform's lanes: boxed fake devices, each with its notification state.
struct Host {
    lanes: Vec<(Box<FakeDevice>, Notifications)>,
}

impl Lanes for Host {
    type Dev = FakeDevice;
    fn lane(&mut self, lane: u16) -> Option<(&mut FakeDevice, &mut Notifications)> {
        self.lanes.get_mut(usize::from(lane)).map(|(d, n)| (&mut **d, n))
    }
}

/// Scenarios, each a device with its records and faults already in place.
const SCENARIOS: usize = 10;

fn scenario(i: usize, ring: u32) -> (Box<FakeDevice>, Notifications, ExecConfig) {
    let mut d = Box::new(FakeDevice::new(Arch::Sunda, ring));
    let nq = FakeDevice::notifications(ring);
    let mut cfg = ExecConfig::new(Arch::Sunda, 2, 1);
    // Every clock read moves 1 ms, so a hang reaches its 1 s budget (after a
    // thousand sweeps). Under Miri 50 ms: the same endings after 20 sweeps
    // (the sweep's code is the same each time; Miri interprets each one).
    d.auto_advance_ns = if cfg!(miri) { 50_000_000 } else { 1_000_000 };
    match i {
        0 => d.run_all(2, 100, 200),
        1 => {
            d.barrier_fail[0] = NrtError::new(NrtStatus::ExecHwErrCollectives);
            d.run_all(2, 100, 200);
        }
        2 => {
            d.network_fail[1] = NrtError::new(NrtStatus::NetworkProxyFailure);
            d.run_all(2, 100, 200);
        }
        3 => {
            // A hang: every START, no END on core 1 engine 3.
            d.run_all(1, 100, 200);
            for e in 0..ENGINES_PER_CORE {
                d.start(1, e, 100);
                if e != 3 {
                    d.end(1, e, 200);
                }
            }
        }
        4 => {
            // A hang on core 0 with INTC bit 29 up: an overflow, not a timeout.
            for e in 0..ENGINES_PER_CORE {
                d.start(0, e, 100);
                d.start(1, e, 100);
                d.end(1, e, 200);
            }
            d.intc_cause[0] = INTC_OVERFLOW;
        }
        5 => {
            d.run_all(2, 100, 200);
            d.error(0, ErrorEntry::new(1, 0, 0, 150)); // NaN: done, 1003 in out
        }
        6 => {
            // Two STARTs on one engine, no overflow: generic failure.
            d.start(0, 2, 100);
            d.start(0, 2, 101);
            d.run_all(2, 100, 200);
        }
        7 => {
            cfg = ExecConfig::new(Arch::Sunda, 1, 1);
            d.run_all(1, 100, 200);
        }
        8 => {
            // A hang on core 0 with an HBM uncorrectable: the timeout is reclassified.
            cfg = ExecConfig::new(Arch::Sunda, 1, 1);
            d.hbm[0] = Some(NrtStatus::ExecHwErrHbmUe);
            for e in 0..ENGINES_PER_CORE - 1 {
                d.start(0, e, 100);
                d.end(0, e, 200);
            }
        }
        _ => {
            // Many records per engine: several sweeps of 16.
            for e in 0..ENGINES_PER_CORE {
                for c in 0..2 {
                    d.start(c, e, 100);
                    for k in 0..40 {
                        d.record(c, e, Subtype::CC_START, 110 + k);
                    }
                    d.end(c, e, 300);
                }
            }
        }
    }
    (d, nq, cfg)
}

#[derive(Debug, PartialEq)]
struct Outcome {
    step: Step,
    status: NrtStatus,
    out: crate::exec::OutInfo,
    fatal: Vec<bool>,
    events: Vec<&'static str>,
}

fn outcome(step: Step, status: NrtStatus, req: &ExecRequest, dev: &FakeDevice) -> Outcome {
    let fatal =
        (0..2).flat_map(|c| (0..fatal::COUNT).map(move |f| (c, f))).map(|(c, f)| req.fatal_flag(c, f)).collect();
    let events = dev.events.iter().map(|e| e.kind()).filter(|k| *k != "head_write_failed").collect();
    Outcome { step, status, out: *req.out_info(), fatal, events }
}

/// Every scenario, in order.
const ALL: [usize; SCENARIOS] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9];

/// The scenarios the group-against-alone tests run under Miri: a clean run, a
/// collectives error, an error record, two STARTs on one engine and the
/// 40-record streams. The hangs (3, 4, 8) sweep to their timeout (20 sweeps
/// under Miri, a thousand natively) in both drivers, and Miri interprets
/// every sweep; the group's code is the same for every ending, and every
/// scenario runs natively.
const UNDER_MIRI: [usize; 5] = [0, 1, 5, 6, 9];

/// [`ALL`], or [`UNDER_MIRI`] under Miri.
fn scenarios() -> &'static [usize] {
    if cfg!(miri) {
        &UNDER_MIRI
    } else {
        &ALL
    }
}

fn sync_outcomes(ring: u32, batching: bool, which: &[usize]) -> Vec<Outcome> {
    which
        .iter()
        .map(|&i| {
            let (mut d, mut nq, cfg) = scenario(i, ring);
            nq.set_head_batching(batching);
            let mut req = ExecRequest::new(cfg);
            let mut delay = no_delay();
            let w = exec_wait_round_robin(&mut req, &mut *d, &mut nq, &mut delay);
            outcome(w.step, w.status, &req, &d)
        })
        .collect()
}

/// The sync driver's delay without moving the fake's clock, so both drivers
/// see the same clock reads (bounded, so a harvest that never ends fails).
const fn no_delay() -> CountingDelay {
    CountingDelay::new(u32::MAX)
}

fn group_outcomes(ring: u32, batching: bool, which: &[usize]) -> Vec<Outcome> {
    let mut host = Host { lanes: Vec::new() };
    let mut group = PollGroup::<SCENARIOS>::new();
    for (i, &sc) in which.iter().enumerate() {
        let (d, mut nq, cfg) = scenario(sc, ring);
        nq.set_head_batching(batching);
        host.lanes.push((d, nq));
        assert_eq!(group.insert(i as u16, cfg, 1000 + i as u64), Ok(i));
    }
    let mut got: Vec<Option<(Completion, ExecRequest)>> = vec![None; which.len()];
    let mut passes = 0;
    while !group.is_empty() {
        let before = group.in_flight();
        let p = group.poll(&mut host, |c, r| {
            assert!(got[c.lane as usize].is_none(), "lane {} reported twice", c.lane);
            got[c.lane as usize] = Some((*c, r.clone()));
        });
        assert_eq!(p.stepped, before, "each in-flight request is stepped once per pass");
        assert_eq!(group.in_flight(), before - p.completed);
        passes += 1;
        assert!(passes < 10_000, "the group did not drain");
    }
    got.into_iter()
        .enumerate()
        .map(|(i, g)| {
            let (c, r) = g.unwrap();
            assert_eq!((c.lane, c.token, c.slot), (i as u16, 1000 + i as u64, i));
            assert_eq!(r.result(), Some(c.step), "the completion is the request's DONE result");
            assert_eq!(c.step.status(), Some(c.status()), "the completion's status is its step's");
            outcome(c.step, c.status(), &r, &host.lanes[i].0)
        })
        .collect()
}

#[test]
fn a_group_gives_exactly_the_statuses_of_separate_sync_drivers() {
    let which = scenarios();
    let sync = sync_outcomes(RING, false, which);
    // The scenarios cover every ending: 0, 0 with a status, and 2 with each fault.
    let want: [Step; SCENARIOS] = [
        Step::Done(NrtStatus::Success),
        Step::failed(NrtStatus::ExecHwErrCollectives),
        Step::failed(NrtStatus::NetworkProxyFailure),
        Step::failed(NrtStatus::Timeout),
        Step::failed(NrtStatus::ExecSwNqOverflow),
        Step::Done(NrtStatus::ExecCompletedWithNumErr),
        Step::failed(NrtStatus::Failure),
        Step::Done(NrtStatus::Success),
        Step::failed(NrtStatus::ExecHwErrHbmUe),
        Step::Done(NrtStatus::Success),
    ];
    assert!(sync.iter().all(|o| o.step.status() == Some(o.status)), "a wait's status is its step's");
    let seen: Vec<_> = sync.iter().map(|o| o.step).collect();
    assert_eq!(seen, which.iter().map(|&i| want[i]).collect::<Vec<_>>());
    let group = group_outcomes(RING, false, which);
    for (i, (s, g)) in sync.iter().zip(&group).enumerate() {
        assert_eq!(s, g, "scenario {i}");
    }
}

#[test]
fn batched_heads_change_no_outcome() {
    // Small rings (8 entries): the 40-record streams wrap several laps. Under
    // Miri the small rings only, and three scenarios (a clean run, an error
    // record, the 40-record streams): the batched and plain HEAD paths are the
    // same code for every scenario and ring, and Miri interprets each sweep.
    let (rings, which): (&[u32], &[usize]) = if cfg!(miri) { (&[128], &[0, 5, 9]) } else { (&[RING, 128], &ALL) };
    for &ring in rings {
        let plain = sync_outcomes(ring, false, which);
        assert_eq!(group_outcomes(ring, true, which), plain, "ring {ring}");
        assert_eq!(sync_outcomes(ring, true, which), plain, "ring {ring}");
    }
}

#[test]
fn slots_are_reused_and_lanes_refuse_a_second_request() {
    let mut host = Host { lanes: Vec::new() };
    for _ in 0..3 {
        host.lanes.push((Box::new(FakeDevice::new(Arch::Sunda, RING)), FakeDevice::notifications(RING)));
    }
    let cfg = ExecConfig::new(Arch::Sunda, 1, 5);
    let mut g = PollGroup::<2>::new();
    assert_eq!(g.capacity(), 2);
    assert!(g.is_empty());
    assert_eq!(g.poll(&mut host, |_, _| panic!("nothing in flight")), Pass::default());
    assert_eq!(g.insert(0, cfg, 10), Ok(0));
    assert_eq!(g.insert(0, cfg, 11), Err(GroupError::LaneBusy));
    assert_eq!(g.insert(1, cfg, 12), Ok(1));
    assert_eq!(g.insert(2, cfg, 13), Err(GroupError::Full));
    assert!(g.request(0).is_some() && g.request(2).is_none());

    // Lane 1 completes first; lane 0 stays in flight.
    host.lanes[1].0.run_all(1, 100, 200);
    let mut done = Vec::new();
    for _ in 0..3 {
        g.poll(&mut host, |c, _| done.push(*c));
    }
    assert_eq!(done.len(), 1);
    assert_eq!((done[0].lane, done[0].token, done[0].slot), (1, 12, 1));
    assert_eq!((done[0].step, done[0].status()), (Step::Done(NrtStatus::Success), NrtStatus::Success));
    assert_eq!(g.in_flight(), 1);
    assert!(g.request(1).is_none(), "the finished request left the group");

    // Its slot is reused, and a lane that does not exist fails cleanly.
    assert_eq!(g.insert(7, cfg, 14), Ok(1));
    let mut done = Vec::new();
    let p = g.poll(&mut host, |c, _| done.push(*c));
    assert_eq!((p.stepped, p.completed), (2, 1));
    assert_eq!(done[0].token, 14);
    let invalid = NrtStatus::InvalidHandle;
    assert_eq!((done[0].step, done[0].status()), (Step::failed(invalid), invalid));

    // A request taken out is never reported, and its slot and lane are free.
    assert_eq!(g.insert(2, cfg, 15), Ok(1));
    assert_eq!(g.remove(1), Some((2, 15)));
    assert_eq!(g.remove(1), None);
    assert!(!g.lane_busy(2) && g.in_flight() == 1);

    host.lanes[0].0.run_all(1, 100, 200);
    let mut done = Vec::new();
    for _ in 0..2 {
        g.poll(&mut host, |c, _| done.push(*c));
    }
    assert_eq!(done.iter().map(|c| (c.token, c.status())).collect::<Vec<_>>(), [(10, NrtStatus::Success)]);
    assert!(g.is_empty());
}

/// One lane, one request: STARTs in one sweep, ENDs in the next.
fn two_sweep_heads(batching: bool) -> u64 {
    let mut host =
        Host { lanes: vec![(Box::new(FakeDevice::new(Arch::Sunda, RING)), FakeDevice::notifications(RING))] };
    host.lanes[0].1.set_head_batching(batching);
    let mut g = PollGroup::<1>::new();
    g.insert(0, ExecConfig::new(Arch::Sunda, 2, 5), 0).unwrap();
    g.poll(&mut host, |_, _| {});
    g.poll(&mut host, |_, _| {}); // WAIT_CORE
    for c in 0..2 {
        for e in 0..ENGINES_PER_CORE {
            host.lanes[0].0.start(c, e, 100);
        }
    }
    assert_eq!(g.poll(&mut host, |_, _| {}).completed, 0);
    for c in 0..2 {
        for e in 0..ENGINES_PER_CORE {
            host.lanes[0].0.end(c, e, 200);
        }
    }
    assert_eq!(g.poll(&mut host, |_, _| {}).completed, 1);
    host.lanes[0].0.head_writes
}

#[test]
fn batched_heads_are_written_once_per_ring_per_inference() {
    let rings = 2 * ENGINES_PER_CORE as u64;
    assert_eq!(two_sweep_heads(false), 2 * rings, "libnrt's drain: one per ring per sweep that read");
    assert_eq!(two_sweep_heads(true), rings, "batched: one per ring per inference");
}

/// Whether the device can write a whole ring's worth into every INFER_STATUS
/// ring of `cores`: true exactly when it knows every read (HEAD caught up).
fn device_knows_every_read(d: &mut FakeDevice, cores: u8, entries: u32) -> bool {
    let dropped = d.dropped;
    for c in 0..cores {
        for &nq in &INFER_STATUS_NQS {
            for _ in 0..entries {
                d.push_raw(c, nq, [0; 16]);
            }
        }
    }
    d.dropped == dropped
}

#[test]
fn batched_heads_keep_the_ring_protocol_over_many_laps() {
    // Rings of 2, 4 and 8 entries; the device writes a long stream on engine 0
    // as room allows, so it depends on every HEAD the host writes. 200 records
    // (25 laps of the largest ring); 40 under Miri (5 laps: every ring still
    // wraps, and Miri interprets each sweep).
    let total: u64 = if cfg!(miri) { 40 } else { 200 };
    for ring in [32u32, 64, 128] {
        let entries = ring / 16;
        let mut host =
            Host { lanes: vec![(Box::new(FakeDevice::new(Arch::Sunda, ring)), FakeDevice::notifications(ring))] };
        host.lanes[0].1.set_head_batching(true);
        let mut g = PollGroup::<1>::new();
        g.insert(0, ExecConfig::new(Arch::Sunda, 1, 5), 0).unwrap();
        g.poll(&mut host, |_, _| {});
        g.poll(&mut host, |_, _| {});
        let d = &mut host.lanes[0].0;
        for e in 1..ENGINES_PER_CORE {
            d.start(0, e, 100);
            d.end(0, e, 200);
        }
        assert!(d.start(0, 0, 100));
        let mut sent = 0u64;
        let mut result = None;
        for _ in 0..2000 {
            let d = &mut host.lanes[0].0;
            // Write as much as fits (never into a slot the host has not handed back).
            while sent < total {
                let before = d.dropped;
                d.custom(0, 0, 7, 100 + (sent % 8) as u16, 110 + sent); // a tensor completion
                if d.dropped != before {
                    d.dropped = before;
                    d.intc_cause[0] = 0;
                    break;
                }
                sent += 1;
            }
            if sent == total && d.end(0, 0, 500) {
                sent += 1;
            } else if sent == total {
                d.dropped -= 1;
                d.intc_cause[0] = 0;
            }
            g.poll(&mut host, |c, _| result = Some(c.step));
            if result.is_some() {
                break;
            }
        }
        assert_eq!(
            result,
            Some(Step::Done(NrtStatus::Success)),
            "ring {ring}: sent {sent}, {:?} {:?}",
            g.request(0).map(|r| (0..ENGINES_PER_CORE).map(|e| r.substate(0, e)).collect::<Vec<_>>()),
            host.lanes[0].1.ring(0, 4)
        );
        let d = &mut host.lanes[0].0;
        let counts: Vec<u32> = (0..8).map(|o| d.tensors.count(o)).collect();
        assert_eq!(counts, [total as u32 / 8; 8], "ring {ring}: each of the {total} records read exactly once");
        // HEAD writes: far fewer than the records read (the stream, START and
        // END), but enough.
        let expect_max = (total + 2) / u64::from(entries.div_ceil(2)) + 10;
        assert!(d.head_writes <= expect_max, "ring {ring}: {} HEAD writes", d.head_writes);
        assert!(device_knows_every_read(d, 1, entries), "ring {ring}: HEAD caught up at completion");
    }
}

#[test]
fn a_faulted_request_hands_its_rings_back_at_completion() {
    // A timeout while engines are mid-way: under batching their reads are
    // unreported until the request completes; then every ring is handed back.
    for through_group in [false, true] {
        let (mut d, mut nq, cfg) = scenario(3, 128);
        nq.set_head_batching(true);
        if through_group {
            let mut host = Host { lanes: vec![(d, nq)] };
            let mut g = PollGroup::<1>::new();
            g.insert(0, cfg, 0).unwrap();
            let mut r = None;
            let mut passes = 0;
            while r.is_none() {
                g.poll(&mut host, |c, _| r = Some(c.status()));
                passes += 1;
                assert!(passes < 10_000, "no completion after {passes} passes (1002 expected)");
            }
            assert_eq!(r, Some(NrtStatus::Timeout));
            d = host.lanes.pop().unwrap().0;
        } else {
            let mut req = ExecRequest::new(cfg);
            let w = exec_wait_round_robin(&mut req, &mut *d, &mut nq, &mut no_delay());
            assert_eq!(w.status, NrtStatus::Timeout);
        }
        assert!(device_knows_every_read(&mut d, 2, 8), "group: {through_group}");
    }
}

#[test]
fn an_estimate_learns_the_mean_and_spread_with_outliers_capped() {
    let mut e = Estimate::default();
    assert_eq!(e.due_after_ns(), 0);
    e.learn(80_000);
    assert_eq!(e, Estimate { mean_ns: 80_000, spread_ns: 10_000, samples: 1 });
    assert_eq!(e.due_after_ns(), 80_000 - 3 * 10_000);
    // Above the mean, within the cap of 4 spreads: an eighth of the distance.
    e.learn(96_000);
    assert_eq!(e, Estimate { mean_ns: 82_000, spread_ns: 10_750, samples: 2 });
    // Below it.
    e.learn(74_000);
    assert_eq!(e, Estimate { mean_ns: 81_000, spread_ns: 10_407, samples: 3 });
    // A long outlier moves both as if it lay 4 spreads away.
    e.learn(10_000_000);
    assert_eq!(e, Estimate { mean_ns: 86_203, spread_ns: 14_310, samples: 4 });
    // A short one likewise, downwards.
    e.learn(0);
    assert_eq!(e, Estimate { mean_ns: 79_048, spread_ns: 19_677, samples: 5 });
    assert_eq!(e.due_after_ns(), 79_048 - 3 * 19_677);
    // Equal samples shrink the spread to nothing; the cap's floor of 1 us still
    // lets a new duration in.
    let mut f = Estimate::default();
    f.learn(7);
    assert_eq!(f, Estimate { mean_ns: 7, spread_ns: 0, samples: 1 });
    f.learn(5_000_007);
    assert_eq!(f, Estimate { mean_ns: 132, spread_ns: 125, samples: 2 });
    f.learn(0);
    assert_eq!(f, Estimate { mean_ns: 116, spread_ns: 126, samples: 3 });
    // A spread larger than the mean: due at once after kickoff; huge values saturate.
    assert_eq!(Estimate { mean_ns: 10, spread_ns: 6, samples: 1 }.due_after_ns(), 0);
    let mut g = Estimate { mean_ns: u64::MAX - 1, spread_ns: u64::MAX, samples: u32::MAX };
    g.learn(u64::MAX);
    assert_eq!(g, Estimate { mean_ns: u64::MAX - 1, spread_ns: u64::MAX - u64::MAX / 8, samples: u32::MAX });
}

#[test]
fn the_next_step_follows_the_estimate_within_the_sweep_bound() {
    let sched = Schedule { sweep_bound_ns: 1_000, recheck_ns: 30, ahead_ns: 0 };
    let none = Estimate::default();
    assert_eq!(next_step_ns(&sched, &none, 100, 150), 0, "no estimate: due at once");
    let est = Estimate { mean_ns: 550, spread_ns: 50, samples: 3 }; // due 400 after kickoff
    assert_eq!(next_step_ns(&sched, &est, 100, 150), 500, "before its due time: at it");
    assert_eq!(next_step_ns(&sched, &est, 100, 499), 500);
    assert_eq!(next_step_ns(&sched, &est, 100, 500), 530, "at or past it: a recheck later");
    assert_eq!(next_step_ns(&sched, &est, 100, 700), 730);
    let long = Estimate { mean_ns: 5_000, spread_ns: 0, samples: 1 };
    assert_eq!(next_step_ns(&sched, &long, 100, 150), 1_150, "never past the sweep bound");
    assert_eq!(next_step_ns(&sched, &long, 100, 4_100), 5_100);
    assert_eq!(next_step_ns(&sched, &long, 100, 4_101), 5_100);
    let wide = Estimate { mean_ns: 5_000, spread_ns: 1_600, samples: 3 }; // due 200 after kickoff
    assert_eq!(next_step_ns(&sched, &wide, 100, 400), 450, "a wide spread: a 32nd of it between rechecks");
    let wider = Estimate { spread_ns: 959, ..wide };
    assert_eq!(next_step_ns(&sched, &wider, 0, 4_000), 4_030, "a 32nd of the spread shorter than the recheck");
    let ahead = Schedule { ahead_ns: 100, ..sched };
    assert_eq!(next_step_ns(&ahead, &est, 100, 399), 500, "due later than the pass's window: at its time");
    assert_eq!(next_step_ns(&ahead, &est, 100, 400), 430, "due within the window: as if past it");
    let every_pass = Schedule { recheck_ns: 0, ..sched };
    assert_eq!(next_step_ns(&every_pass, &est, 100, 150), 500, "recheck 0: before its due time, still at it");
    assert_eq!(next_step_ns(&every_pass, &est, 100, 500), 500, "recheck 0, past its due time: the next pass");
    assert_eq!(next_step_ns(&every_pass, &wide, 100, 400), 400, "recheck 0: the spread does not widen it");
    let slow = Schedule { sweep_bound_ns: 20, recheck_ns: 30, ahead_ns: 0 };
    assert_eq!(next_step_ns(&slow, &est, 100, 600), 620, "a recheck capped by the bound");
    assert_eq!(next_step_ns(&sched, &long, u64::MAX - 5, u64::MAX - 2), u64::MAX, "saturates");
}

/// Lanes that record the clock of the pass that asked for each lane.
struct Timed {
    host: Host,
    now: u64,
    asked: Vec<Vec<u64>>,
}

impl Lanes for Timed {
    type Dev = FakeDevice;
    fn lane(&mut self, lane: u16) -> Option<(&mut FakeDevice, &mut Notifications)> {
        if let Some(a) = self.asked.get_mut(usize::from(lane)) {
            a.push(self.now);
        }
        self.host.lane(lane)
    }
}

/// The scenarios through due-first passes every `tick` ns, lanes `primed`
/// holding the estimate `est` beforehand. Returns the outcomes, the clock of
/// each step per lane, and the passes' (stepped, skipped) sums.
fn due_first_outcomes(
    which: &[usize],
    primed: &[usize],
    est: Estimate,
    sched: Schedule,
    tick: u64,
) -> (Vec<Outcome>, Vec<Vec<u64>>, (usize, usize)) {
    let mut lanes = Timed { host: Host { lanes: Vec::new() }, now: 1_000, asked: vec![Vec::new(); which.len()] };
    let mut group = PollGroup::<SCENARIOS>::new();
    group.set_schedule(sched);
    assert_eq!(group.schedule(), sched);
    assert_eq!(group.earliest_due_ns(), None);
    for (i, &sc) in which.iter().enumerate() {
        let (d, nq, cfg) = scenario(sc, RING);
        lanes.host.lanes.push((d, nq));
        assert_eq!(group.insert(i as u16, cfg, i as u64), Ok(i));
        if primed.contains(&i) {
            group.hist[i].est = est;
        }
    }
    assert_eq!(group.earliest_due_ns(), Some(0), "nothing seen yet: due at once");
    let mut got: Vec<Option<(Completion, ExecRequest)>> = vec![None; which.len()];
    let mut sums = (0, 0);
    for _ in 0..20_000 {
        if group.is_empty() {
            break;
        }
        let before = group.in_flight();
        let now = lanes.now;
        let p = group.poll_due(&mut lanes, now, |c, r| {
            assert!(got[c.lane as usize].is_none(), "lane {} reported twice", c.lane);
            got[c.lane as usize] = Some((*c, r.clone()));
        });
        assert_eq!(p.stepped + p.skipped, before, "each request is stepped or left, once");
        sums = (sums.0 + p.stepped, sums.1 + p.skipped);
        if let Some(due) = group.earliest_due_ns() {
            assert!(due <= lanes.now + sched.sweep_bound_ns, "earliest due {due} past the bound at {}", lanes.now);
        }
        lanes.now += tick;
    }
    assert!(group.is_empty(), "the group did not drain");
    let outcomes = got
        .into_iter()
        .enumerate()
        .map(|(i, g)| {
            let (c, r) = g.unwrap();
            outcome(c.step, c.status(), &r, &lanes.host.lanes[i].0)
        })
        .collect();
    (outcomes, lanes.asked, sums)
}

#[test]
fn due_first_passes_give_exactly_the_statuses_of_separate_sync_drivers() {
    let which = scenarios();
    let sync = sync_outcomes(RING, false, which);
    // Half the lanes expect 55 us (due 40 us after kickoff), passes every 7 us.
    let est = Estimate { mean_ns: 55_000, spread_ns: 5_000, samples: 4 };
    let sched = Schedule { sweep_bound_ns: 100_000, recheck_ns: 20_000, ahead_ns: 0 };
    let (group, asked, (stepped, skipped)) = due_first_outcomes(which, &[0, 2, 4, 6, 8], est, sched, 7_000);
    for (i, (s, g)) in sync.iter().zip(&group).enumerate() {
        assert_eq!(s, g, "scenario {i}");
    }
    assert!(skipped > 0 && stepped > 0);
    for (lane, at) in asked.iter().enumerate() {
        let kick = at[0];
        assert_eq!(kick, 1_000, "lane {lane}: every request is stepped by the first pass");
        if lane % 2 == 1 {
            // No estimate: stepped at every pass.
            assert!(at.windows(2).all(|w| w[1] == w[0] + 7_000), "lane {lane}: {at:?}");
        } else if at.len() > 1 {
            // Next at the first pass at or past kickoff + 40 us, then every
            // first pass at or past 20 us later.
            assert_eq!(at[1], 43_000, "lane {lane}: {at:?}");
            assert!(at.windows(2).skip(1).all(|w| w[1] == w[0] + 21_000), "lane {lane}: {at:?}");
        }
    }
}

#[test]
fn the_sweep_bound_holds_for_a_lane_due_far_ahead() {
    // A hang (scenario 3, a timeout after 1000 of its own steps) on a lane
    // expecting 1 s: stepped once per 30 us bound, passes every 4 us, and
    // still ends as alone.
    let est = Estimate { mean_ns: 1_000_000_000, spread_ns: 0, samples: 1 };
    let sched = Schedule { sweep_bound_ns: 30_000, recheck_ns: 20_000, ahead_ns: 0 };
    let (group, asked, _) = due_first_outcomes(&[3, 0], &[0, 1], est, sched, 4_000);
    assert_eq!(group, sync_outcomes(RING, false, &[3, 0]));
    for at in &asked {
        assert!(at.len() > 1);
        assert!(at.windows(2).all(|w| w[1] == w[0] + 32_000), "{at:?}");
    }
    // Ahead: a pass takes the requests due within 10 us of its clock.
    let sched = Schedule { ahead_ns: 10_000, ..sched };
    let (_, asked, _) = due_first_outcomes(&[3], &[0], est, sched, 4_000);
    assert!(asked[0].windows(2).all(|w| w[1] == w[0] + 20_000), "{:?}", asked[0]);
}

#[test]
fn a_lane_learns_from_its_done_requests_and_keeps_its_estimate_across_slots() {
    let mut host = Host { lanes: Vec::new() };
    for _ in 0..3 {
        host.lanes.push((Box::new(FakeDevice::new(Arch::Sunda, RING)), FakeDevice::notifications(RING)));
    }
    let cfg = ExecConfig::new(Arch::Sunda, 1, 5);
    let mut g = PollGroup::<3>::new();
    assert_eq!(g.insert(2, cfg, 0), Ok(0));
    assert_eq!(g.estimate(2), None);
    // Kickoff at 1000 (the first due-first pass, which starts the request and
    // clears its barrier), in flight at 41_000, done at 81_000: it ended at
    // 61_000 as far as the passes can tell.
    assert_eq!(g.poll_due(&mut host, 1_000, |_, _| panic!("not done")).stepped, 1);
    assert_eq!(g.request(0).map(ExecRequest::state), Some(ExecState::WaitCore), "started and past its barrier");
    assert_eq!(g.earliest_due_ns(), Some(0), "no estimate: due at once");
    let mut n = 0;
    for t in [41_000u64, 81_000] {
        g.poll_due(&mut host, t, |c, _| {
            assert_eq!((c.step, c.status(), t), (Step::Done(NrtStatus::Success), NrtStatus::Success, 81_000));
            n += 1;
        });
        if t == 41_000 {
            host.lanes[2].0.run_all(1, 100, 200);
        }
    }
    assert_eq!(n, 1);
    assert_eq!(g.estimate(2), Some(Estimate { mean_ns: 60_000, spread_ns: 7_500, samples: 1 }));
    // Lane 0 takes slot 1 (blank) even though slot 0 is free: slot 0 keeps lane 2's estimate.
    assert_eq!(g.insert(0, cfg, 1), Ok(1));
    assert_eq!(g.insert(2, cfg, 2), Ok(0));
    assert_eq!(g.poll_due(&mut host, 100_000, |_, _| {}).stepped, 2);
    // Lane 2 is next due at kickoff + 60 us - 3 x 7.5 us; lane 0 (no estimate) at once.
    assert_eq!(g.earliest_due_ns(), Some(0));
    assert_eq!(g.remove(1), Some((0, 1)));
    assert_eq!(g.earliest_due_ns(), Some(137_500));
    let p = g.poll_due(&mut host, 137_499, |_, _| {});
    assert_eq!((p.stepped, p.skipped), (0, 1));
    // A request that ends in error teaches nothing: lane 2's device has no
    // more records, so make it fail on a missing lane instead.
    assert_eq!(g.remove(0), Some((2, 2)));
    assert_eq!(g.insert(9, cfg, 3), Ok(2), "a slot with no estimate before one holding another lane's");
    // Every free slot holds some lane's estimate: a new lane takes the first
    // free slot, which forgets what it held.
    assert_eq!(g.insert(8, cfg, 4), Ok(0));
    assert_eq!(g.estimate(2), None, "lane 2's estimate went with slot 0");
    let mut seen = Vec::new();
    g.poll_due(&mut host, 200_000, |c, _| seen.push((c.lane, c.status())));
    assert_eq!(seen, [(9, NrtStatus::InvalidHandle), (8, NrtStatus::InvalidHandle)]);
    assert_eq!((g.estimate(9), g.estimate(8)), (None, None));
    assert_eq!(g.insert(5, cfg, 5), Ok(0));
    // A plain pass neither learns nor schedules.
    host.lanes.push((Box::new(FakeDevice::new(Arch::Sunda, RING)), FakeDevice::notifications(RING)));
    host.lanes.push((Box::new(FakeDevice::new(Arch::Sunda, RING)), FakeDevice::notifications(RING)));
    host.lanes.push((Box::new(FakeDevice::new(Arch::Sunda, RING)), FakeDevice::notifications(RING)));
    host.lanes[5].0.run_all(1, 100, 200);
    for _ in 0..3 {
        g.poll(&mut host, |_, _| {});
    }
    assert!(g.is_empty());
    assert_eq!(g.estimate(5), None);
}

#[test]
fn a_group_over_a_slice_or_a_borrowed_lanes_ends_requests_as_alone() {
    let which = [0usize, 5, 7];
    let sync = sync_outcomes(RING, false, &which);
    // Lanes as a slice of (device, notifications).
    let mut v: Vec<(FakeDevice, Notifications)> = Vec::new();
    let mut g = PollGroup::<3>::new();
    for (i, &sc) in which.iter().enumerate() {
        let (d, nq, cfg) = scenario(sc, RING);
        v.push((*d, nq));
        g.insert(i as u16, cfg, 0).unwrap();
    }
    let blank = FakeDevice::new(Arch::Sunda, RING);
    let mut got: Vec<Option<Outcome>> = (0..3).map(|_| None).collect();
    for _ in 0..100 {
        g.poll(&mut v[..], |c, r| got[usize::from(c.lane)] = Some(outcome(c.step, c.status(), r, &blank)));
    }
    for (i, o) in got.iter().enumerate() {
        let o = o.as_ref().expect("finished");
        assert_eq!((o.step, o.status, o.out, &o.fatal), (sync[i].step, sync[i].status, sync[i].out, &sync[i].fatal));
    }
    for (i, (d, _)) in v.iter().enumerate() {
        assert_eq!(d.events.iter().map(|e| e.kind()).collect::<Vec<_>>(), sync[i].events, "scenario {i}");
    }
    // Through `&mut L`: a borrowed Host.
    let mut host = Host { lanes: Vec::new() };
    for (i, &sc) in which.iter().enumerate() {
        let (d, nq, cfg) = scenario(sc, RING);
        host.lanes.push((d, nq));
        g.insert(i as u16, cfg, 0).unwrap();
    }
    let mut borrowed = &mut host;
    let mut got = vec![None; 3];
    for _ in 0..100 {
        g.poll_due(&mut borrowed, 0, |c, r| got[usize::from(c.lane)] = Some((c.step, c.status(), *r.out_info())));
    }
    let want: Vec<_> = sync.iter().map(|o| Some((o.step, o.status, o.out))).collect();
    assert_eq!(got, want);
    // A lane past the slice's end fails cleanly.
    g.insert(3, ExecConfig::new(Arch::Sunda, 1, 1), 0).unwrap();
    let mut r = None;
    g.poll(&mut v[..], |c, _| r = Some(c.status()));
    assert_eq!(r, Some(NrtStatus::InvalidHandle));
}

#[test]
fn a_refusal_says_why() {
    assert_eq!(GroupError::Full.reason(), "every slot of the poll group holds an in-flight request");
    assert_eq!(GroupError::LaneBusy.reason(), "the lane already has a request in flight");
}

#[test]
fn a_refusal_displays_the_call_and_its_reason() {
    assert_eq!(
        GroupError::Full.to_string(),
        "PollGroup::insert: every slot of the poll group holds an in-flight request"
    );
    assert_eq!(GroupError::LaneBusy.to_string(), "PollGroup::insert: the lane already has a request in flight");
    // An error type a caller can box or chain (this line compiles only if it is one).
    let _: &dyn core::error::Error = &GroupError::LaneBusy;
}

#[test]
fn a_group_settles_a_request_right_after_its_notice() {
    // Requests settled after the notice, G-SETTLE: `done` sees each with its
    // status and its settle due; by the end of the pass its lane has the
    // counts a request settled in FINALIZE gives, and the same events.
    let which = scenarios();
    let mut host = Host { lanes: Vec::new() };
    let mut group = PollGroup::<SCENARIOS>::new();
    for (i, &sc) in which.iter().enumerate() {
        let (d, nq, cfg) = scenario(sc, RING);
        host.lanes.push((d, nq));
        assert_eq!(group.insert(i as u16, cfg.with_settle(crate::exec::Settle::AfterNotice), i as u64), Ok(i));
    }
    let mut due_at_notice = vec![None; which.len()];
    let mut passes = 0;
    while !group.is_empty() {
        group.poll(&mut host, |c, r| {
            due_at_notice[usize::from(c.lane)] = Some((r.settle_due(), r.timestamps_are_cpu_us()));
        });
        passes += 1;
        assert!(passes < 10_000, "the group did not drain");
    }
    for (i, &sc) in which.iter().enumerate() {
        assert_eq!(due_at_notice[i], Some((true, false)), "scenario {sc}: reported before its settle");
        let (mut d, mut nq, cfg) = scenario(sc, RING);
        let mut req = ExecRequest::new(cfg);
        exec_wait_round_robin(&mut req, &mut *d, &mut nq, &mut no_delay());
        let lane = &host.lanes[i].0;
        assert_eq!(lane.counter_updates, d.counter_updates, "scenario {sc}: counted once per core, after");
        let sorted = |dev: &FakeDevice| {
            let mut k: Vec<_> = dev.events.iter().map(|e| e.kind()).collect();
            k.sort_unstable();
            k
        };
        assert_eq!(sorted(lane), sorted(&d), "scenario {sc}: the same events");
    }
}

#[test]
fn a_lane_of_uniform_jitter_is_due_before_its_earliest_end() {
    // 10 ms +/- 10 %, uniform, each end learnt exactly; an end before the
    // request is due waits for it. A xorshift stream keeps it repeatable.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut e = Estimate::default();
    let (mut early, mut n) = (0, 0);
    for i in 0..4_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let end = 9_000_000 + x % 2_000_001;
        if i >= 100 {
            n += 1;
            early += usize::from(end < e.due_after_ns());
        }
        e.learn(end);
    }
    // Two spreads let 165 of the 3,900 wait; three, 8.
    assert!(early * 200 <= n, "{early} of {n} ends came before their lane's due time");
}

/// A request that counts its steps and never ends, with the default `unstarted`.
#[derive(Clone)]
struct Counted(u32);

impl Harvest for Counted {
    type Config = ();
    fn start((): ()) -> Counted {
        Counted(0)
    }
    fn step<D: ExecDevice + ?Sized>(&mut self, _: &mut D, _: &mut Notifications) -> Step {
        self.0 += 1;
        Step::InFlight
    }
}

#[test]
fn only_a_request_that_has_not_started_is_stepped_twice_in_a_pass() {
    let mut host = Host { lanes: Vec::new() };
    for _ in 0..2 {
        host.lanes.push((Box::new(FakeDevice::new(Arch::Sunda, RING)), FakeDevice::notifications(RING)));
    }
    // A request with no start step: one step a pass, the first included.
    let mut plain = PollGroup::<1, Counted>::new();
    assert_eq!(plain.insert(0, (), 0), Ok(0));
    for pass in 1..=3 {
        assert_eq!(plain.poll(&mut host, |_, _| {}).stepped, 1);
        assert_eq!(plain.request(0).map(|r| r.0), Some(pass), "steps after pass {pass}");
    }
    // The real one: its first pass starts it and checks its barrier, reading
    // no ring; every later pass is one sweep, as many reads as alone.
    let cfg = ExecConfig::new(Arch::Sunda, 1, 5);
    let (mut dev, mut nq) = (FakeDevice::new(Arch::Sunda, RING), FakeDevice::notifications(RING));
    let mut alone = ExecRequest::new(cfg);
    for _ in 0..3 {
        assert_eq!(alone.progress_one_step(&mut dev, &mut nq), Step::InFlight);
    }
    let sweep = dev.slot_reads;
    assert!(sweep > 0);
    let mut g = PollGroup::<1>::new();
    assert_eq!(g.insert(1, cfg, 0), Ok(0));
    g.poll(&mut host, |_, _| {});
    assert_eq!(g.request(0).map(ExecRequest::state), Some(ExecState::WaitCore));
    assert_eq!(host.lanes[1].0.slot_reads, 0, "the first pass reads no ring");
    for pass in 1..=2 {
        g.poll(&mut host, |_, _| {});
        assert_eq!(host.lanes[1].0.slot_reads, pass * sweep, "one sweep a pass");
    }
}
