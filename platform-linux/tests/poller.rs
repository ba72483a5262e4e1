//! The poller thread: many requests, one thread, each completion handed to
//! its waiter (spinning: no syscall; sleeping: its eventfd). The lanes are
//! simulated devices, each on its own thread against the real clock.
#![cfg(feature = "sim")]

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nrt_core::arch::{Arch, ENGINES_PER_CORE};
use nrt_core::dma::doorbell::{kickoff_infer, set_host_trigger};
use nrt_core::exec::{ExecConfig, Step};
use nrt_core::nq::Notifications;
use nrt_core::NrtStatus;
use nrt_linux::poller::{Poller, PollerConfig, PollerSet, Ticket, VecLanes, WaitRefused};
use nrt_sim::device::Device;
use nrt_sim::host::{HostClock, SimHost};
use nrt_sim::program::{self, ProgramSpec};
use nrt_sim::shared::Shared;
use nrt_sim::{layout, Fault};

const RING_ENTRIES: u32 = 64;

struct SimLanes {
    lanes: VecLanes<SimHost>,
    shared: Vec<Arc<Shared>>,
    devices: Vec<JoinHandle<Device>>,
    origin: Instant,
}

/// `n` lanes of 2 cores; `faults[i]` play on lane `i`.
fn sim_lanes(n: usize, faults: &[(usize, &str)]) -> SimLanes {
    let origin = Instant::now();
    let mut out = SimLanes { lanes: VecLanes(Vec::new()), shared: Vec::new(), devices: Vec::new(), origin };
    for i in 0..n {
        let shared = Arc::new(Shared::new(Arch::Sunda, RING_ENTRIES * layout::ENTRY_BYTES));
        let f: Vec<Fault> = faults.iter().filter(|(l, _)| *l == i).map(|(_, s)| Fault::parse(s).unwrap()).collect();
        let spec = ProgramSpec {
            arch: Arch::Sunda,
            ring_entries: RING_ENTRIES,
            seed: i as u64,
            faults: f,
            extras: Vec::new(),
        };
        let device = Device::new(Arc::clone(&shared), spec, 2);
        out.devices.push(std::thread::spawn(move || device.run_threaded(origin)));
        let host = SimHost::new(Arc::clone(&shared), HostClock::Real(origin));
        let mut nq = Notifications::new();
        nq.set_head_batching(true);
        for c in 0..2 {
            nq.bind_core(c, RING_ENTRIES * layout::ENTRY_BYTES).unwrap();
            for e in 0..ENGINES_PER_CORE {
                nq.set_cal(c, e, program::calibration(c, e));
            }
            nq.set_sync_point(c, program::sync_point(c));
        }
        out.lanes.0.push((host, nq));
        out.shared.push(shared);
    }
    out
}

/// Doorbell B and one kickoff per core, through a second host view of the lane.
fn kickoff(shared: &Arc<Shared>, origin: Instant) {
    let mut h = SimHost::new(Arc::clone(shared), HostClock::Real(origin));
    let mut fence = h.fence();
    set_host_trigger(&mut h, &mut fence, layout::xt_local_reg(Arch::Sunda)).unwrap();
    for c in 0..2 {
        kickoff_infer(&mut h, c, c).unwrap();
    }
}

fn stop(devices: Vec<JoinHandle<Device>>, shared: &[Arc<Shared>]) {
    for s in shared {
        s.stop.store(true, Ordering::Release);
    }
    for d in devices {
        d.join().unwrap();
    }
}

/// The poller's counters once it has accounted for `n` completions (it counts
/// just after it publishes each one).
fn settled<L: nrt_core::exec::Lanes + Send + 'static>(p: &Poller<L>, n: u64) -> nrt_linux::poller::PollerStats {
    let t0 = Instant::now();
    loop {
        let st = p.stats();
        if st.spin_handoffs + st.eventfd_wakes >= n || t0.elapsed() > Duration::from_secs(10) {
            return st;
        }
        std::thread::yield_now();
    }
}

#[test]
fn one_poller_harvests_many_lanes_with_faults_on_some() {
    let SimLanes { lanes, shared, devices, origin } = sim_lanes(6, &[(2, "hang:core=1,engine=ACT"), (4, "nan:core=0")]);
    let poller = Poller::spawn(lanes, PollerConfig::default()).unwrap();
    let cfg = ExecConfig::new(Arch::Sunda, 2, 1);
    let tickets: Vec<_> = (0..6)
        .map(|i| {
            kickoff(&shared[i], origin);
            poller.submit(i as u16, cfg).unwrap()
        })
        .collect();
    let got: Vec<_> = tickets.iter().map(|t| t.wait()).collect();
    let want = [
        Step::Done(NrtStatus::Success),
        Step::Done(NrtStatus::Success),
        Step::failed(NrtStatus::Timeout),
        Step::Done(NrtStatus::Success),
        Step::Done(NrtStatus::ExecCompletedWithNumErr),
        Step::Done(NrtStatus::Success),
    ];
    assert_eq!(got, want);
    let st = settled(&poller, 6);
    assert_eq!(st.completions, 6);
    assert_eq!(st.spin_handoffs + st.eventfd_wakes, 6);
    let (lanes, cpu_ns) = poller.shutdown();
    assert_eq!(lanes.unwrap().0.len(), 6, "the lanes come back");
    assert!(cpu_ns > 0);
    stop(devices, &shared);
}

#[test]
fn a_spinning_waiter_gets_its_completion_without_the_eventfd() {
    let SimLanes { lanes, shared, devices, origin } = sim_lanes(3, &[]);
    let cfg = PollerConfig { waiter_spin_for: Duration::from_secs(30), ..PollerConfig::default() };
    let poller = Poller::spawn(lanes, cfg).unwrap();
    for s in &shared {
        kickoff(s, origin);
    }
    let tickets: Vec<_> = (0..3).map(|i| poller.submit(i, ExecConfig::new(Arch::Sunda, 2, 5)).unwrap()).collect();
    for t in &tickets {
        assert_eq!(t.wait(), Step::Done(NrtStatus::Success));
        assert!(t.noticed_ns().is_some());
    }
    let st = settled(&poller, 3);
    assert_eq!((st.completions, st.eventfd_wakes, st.spin_handoffs), (3, 0, 3));
    drop(poller);
    stop(devices, &shared);
}

#[test]
fn a_sleeping_waiter_is_woken_by_its_eventfd() {
    // A hang: the request ends at its 1 s timeout, long after the waiter stopped spinning.
    let SimLanes { lanes, shared, devices, origin } = sim_lanes(1, &[(0, "hang:core=0,engine=PE")]);
    let cfg = PollerConfig { waiter_spin_for: Duration::ZERO, ..PollerConfig::default() };
    let poller = Poller::spawn(lanes, cfg).unwrap();
    kickoff(&shared[0], origin);
    let t = poller.submit(0, ExecConfig::new(Arch::Sunda, 2, 1)).unwrap();
    let t0 = Instant::now();
    assert_eq!(t.wait(), Step::failed(NrtStatus::Timeout));
    assert!(t0.elapsed() < Duration::from_secs(10));
    let st = settled(&poller, 1);
    assert_eq!((st.completions, st.eventfd_wakes), (1, 1));
    drop(poller);
    stop(devices, &shared);
}

/// A request submitted with a budget runs under the budget's seconds, not
/// under another `timeout_s` its config carries: a hang with a 1 s budget
/// and 30 s in the config has timed out when its waiter looks at 20 s (were
/// it the config's, the shutdown after that look would end it at 30 s).
#[test]
fn a_budgeted_request_times_out_at_its_budget_whatever_its_config_says() {
    use nrt_linux::config::{Budget, Source};
    let SimLanes { lanes, shared, devices, origin } = sim_lanes(1, &[(0, "hang:core=0,engine=PE")]);
    let poller = Poller::spawn(lanes, PollerConfig::default()).unwrap();
    kickoff(&shared[0], origin);
    let budget = Budget { seconds: 1, source: Source::Argument("the test's budget") };
    let t = poller.submit_budgeted(0, ExecConfig::new(Arch::Sunda, 2, 30), budget).unwrap();
    let t0 = Instant::now();
    let mut got = None;
    while got.is_none() && t0.elapsed() < Duration::from_secs(20) {
        got = t.try_result();
        std::thread::sleep(Duration::from_millis(10));
    }
    let (_, _) = poller.shutdown();
    stop(devices, &shared);
    assert_eq!(got, Some(Step::failed(NrtStatus::Timeout)), "the 1 s budget, not the config's 30 s");
}

#[test]
fn shutdown_finishes_the_request_in_flight_and_closes_the_queued_one() {
    let SimLanes { lanes, shared, devices, origin } = sim_lanes(1, &[(0, "hang:core=0,engine=PE")]);
    let poller = Poller::spawn(lanes, PollerConfig::default()).unwrap();
    kickoff(&shared[0], origin);
    let cfg = ExecConfig::new(Arch::Sunda, 2, 1);
    let first = poller.submit(0, cfg).unwrap();
    // The same lane: waits behind the first.
    let second = poller.submit(0, cfg).unwrap();
    let t0 = Instant::now();
    while poller.stats().passes == 0 {
        assert!(t0.elapsed() < Duration::from_secs(10));
        std::thread::yield_now();
    }
    let (_, _) = poller.shutdown();
    assert_eq!(first.try_result(), Some(Step::failed(NrtStatus::Timeout)));
    assert_eq!(second.try_result(), Some(Step::failed(NrtStatus::Closed)));
    stop(devices, &shared);
}

#[test]
fn a_lane_that_does_not_exist_and_a_cpu_that_does_not_exist() {
    let SimLanes { lanes, shared, devices, .. } = sim_lanes(1, &[]);
    let poller = Poller::spawn(lanes, PollerConfig { cpu: Some(0), ..PollerConfig::default() }).unwrap();
    let t = poller.submit(9, ExecConfig::new(Arch::Sunda, 2, 1)).unwrap();
    assert_eq!(t.wait(), Step::failed(NrtStatus::InvalidHandle));
    drop(poller);
    let err =
        Poller::spawn(VecLanes::<SimHost>(Vec::new()), PollerConfig { cpu: Some(100_000), ..PollerConfig::default() })
            .unwrap_err();
    assert!(matches!(err, nrt_linux::poller::PollerError::Pin { cpu: 100_000, .. }), "{err:?}");
    assert!(std::error::Error::source(&err).is_some(), "the OS error is its source");
    let err = err.to_string();
    assert!(err.contains("pin to CPU 100000") && err.contains("(EINVAL)"), "{err}");
    stop(devices, &shared);
}

#[test]
fn shutdown_is_bounded_when_a_device_clock_stalls() {
    // No device behind the lane and a virtual clock nobody advances: the
    // request waits on its barrier forever, as far as its own clock can tell.
    let shared = Arc::new(Shared::new(Arch::Sunda, RING_ENTRIES * layout::ENTRY_BYTES));
    let mut nq = Notifications::new();
    for c in 0..2 {
        nq.bind_core(c, RING_ENTRIES * layout::ENTRY_BYTES).unwrap();
    }
    let lanes = VecLanes(vec![(SimHost::new(shared, HostClock::Virtual), nq)]);
    let poller = Poller::spawn(lanes, PollerConfig::default()).unwrap();
    let t = poller.submit(0, ExecConfig::new(Arch::Sunda, 2, 1)).unwrap();
    let t0 = Instant::now();
    while poller.stats().passes < 10 {
        assert!(t0.elapsed() < Duration::from_secs(10));
        std::thread::yield_now();
    }
    assert_eq!(t.try_result(), None, "in flight");
    let t1 = Instant::now();
    let _ = poller.shutdown();
    let took = t1.elapsed();
    assert_eq!(t.try_result(), Some(Step::failed(NrtStatus::Closed)));
    assert!(took >= Duration::from_secs(2) && took < Duration::from_secs(10), "{took:?}: the 1 s timeout + 1 s grace");
}

/// Lanes whose platform panics: the poller thread dies.
struct Exploding;

impl nrt_core::exec::Lanes for Exploding {
    type Dev = SimHost;
    fn lane(&mut self, _lane: u16) -> Option<(&mut SimHost, &mut Notifications)> {
        panic!("a platform bug");
    }
}

#[test]
fn a_waiter_is_answered_101_when_the_poller_thread_dies() {
    let poller =
        Poller::spawn(Exploding, PollerConfig { waiter_spin_for: Duration::ZERO, ..PollerConfig::default() }).unwrap();
    let t = poller.submit(0, ExecConfig::new(Arch::Sunda, 2, 1)).unwrap();
    let t0 = Instant::now();
    assert_eq!(t.wait(), Step::failed(NrtStatus::ExecUnitUnrecoverable));
    assert!(t0.elapsed() < Duration::from_secs(10));
    assert_eq!(t.poll(), Some(Step::failed(NrtStatus::ExecUnitUnrecoverable)));
    let (lanes, _) = poller.shutdown();
    assert!(lanes.is_none(), "the lanes died with the thread");
}

#[test]
fn requests_queued_on_one_lane_run_in_turn() {
    use nrt_core::testutil::FakeDevice;
    // Three inferences' records already in the rings of lane 0, one in lane 1's.
    let mut lanes = Vec::new();
    for n in [3u64, 1] {
        let mut d = FakeDevice::new(Arch::Sunda, 1024);
        for k in 0..n {
            d.run_all(1, 100 + 10 * k, 105 + 10 * k);
        }
        let mut nq = FakeDevice::notifications(1024);
        nq.set_head_batching(true);
        lanes.push((d, nq));
    }
    let poller = Poller::spawn(VecLanes(lanes), PollerConfig::default()).unwrap();
    let cfg = ExecConfig::new(Arch::Sunda, 1, 5);
    let tickets: Vec<_> = [0u16, 0, 1, 0, 0].iter().map(|&l| poller.submit(l, cfg).unwrap()).collect();
    for t in &tickets[..4] {
        assert_eq!(t.wait(), Step::Done(NrtStatus::Success));
    }
    // The fourth on lane 0 has no records: never done. At shutdown it is
    // either not started yet (answered NRT_CLOSED at once) or in flight with a
    // 5 s budget on a clock that does not move (answered NRT_CLOSED after
    // 5 s + 1 s of the process clock).
    assert_eq!(tickets[4].poll(), None);
    let (lanes, _) = poller.shutdown();
    assert_eq!(tickets[4].poll(), Some(Step::failed(NrtStatus::Closed)));
    let lanes = lanes.unwrap();
    assert_eq!(lanes.0[0].0.head_writes, 15, "batched: one per ring per inference, 3 inferences");
}

/// One poller per device by default; a request goes to its device's poller,
/// and the lanes come back per device at shutdown.
#[test]
fn a_poller_set_runs_one_poller_per_device_and_routes_by_device() {
    // 3 devices x 2 lanes; a hang on device 1 lane 0, a NaN on device 2 lane 1.
    let SimLanes { lanes, shared, devices, origin } = sim_lanes(6, &[(2, "hang:core=1,engine=ACT"), (5, "nan:core=0")]);
    let mut it = lanes.0.into_iter();
    let per_device: Vec<Vec<_>> = (0..3).map(|_| it.by_ref().take(2).collect()).collect();
    let set = PollerSet::per_device(per_device, PollerConfig::default()).unwrap();
    assert_eq!(set.pollers(), 3);
    assert_eq!((set.poller_of(0), set.poller_of(2), set.poller_of(3)), (Some(0), Some(2), None));
    let cfg = ExecConfig::new(Arch::Sunda, 2, 1);
    let tickets: Vec<_> = (0..6)
        .map(|i| {
            kickoff(&shared[i], origin);
            set.submit(i / 2, (i % 2) as u16, cfg).unwrap()
        })
        .collect();
    let got: Vec<_> = tickets.iter().map(|t| t.wait()).collect();
    let want = [
        Step::Done(NrtStatus::Success),
        Step::Done(NrtStatus::Success),
        Step::failed(NrtStatus::Timeout),
        Step::Done(NrtStatus::Success),
        Step::Done(NrtStatus::Success),
        Step::Done(NrtStatus::ExecCompletedWithNumErr),
    ];
    assert_eq!(got, want);
    // A device or a lane that does not exist: answered, not lost.
    assert_eq!(set.submit(3, 0, cfg).unwrap().wait(), Step::failed(NrtStatus::InvalidHandle));
    assert_eq!(set.submit(0, 2, cfg).unwrap().wait(), Step::failed(NrtStatus::InvalidHandle));
    let completions: u64 = set.stats().iter().map(|s| s.completions).sum();
    assert!(completions >= 6, "{completions}");
    let (back, cpu_ns) = set.shutdown();
    assert_eq!(back.iter().map(Vec::len).collect::<Vec<_>>(), [2, 2, 2], "each device's lanes come back");
    assert!(cpu_ns > 0);
    stop(devices, &shared);
}

#[test]
fn a_poller_set_in_blocks_and_its_refusals() {
    let SimLanes { lanes, shared, devices, .. } = sim_lanes(3, &[]);
    let per_device: Vec<Vec<_>> = lanes.0.into_iter().map(|l| vec![l]).collect();
    let set = PollerSet::blocks(per_device, 2, PollerConfig::default()).unwrap();
    assert_eq!(set.pollers(), 2);
    // Contiguous blocks: devices 0 and 1 share poller 0, device 2 has poller 1.
    assert_eq!((set.poller_of(0), set.poller_of(1), set.poller_of(2)), (Some(0), Some(0), Some(1)));
    let (back, _) = set.shutdown();
    assert_eq!(back.len(), 3);
    let err = PollerSet::blocks(back, 4, PollerConfig::default()).unwrap_err().to_string();
    assert!(err.contains("4 pollers for 3 devices"), "{err}");
    let err = PollerSet::<SimHost>::per_device(Vec::new(), PollerConfig::default()).unwrap_err().to_string();
    assert!(err.contains("0 pollers for 0 devices"), "{err}");
    stop(devices, &shared);
}

/// What a lane's callback saw doing with its own poller, on the poller thread.
#[derive(Debug, PartialEq)]
enum Seen {
    /// The wait on a ticket of its poller: refused, and what `wait` answered.
    Wait(Result<(), WaitRefused>, Step, bool),
    /// The poller's drop returned.
    Dropped,
    /// The lanes were dropped: the poller thread ended.
    LanesDropped,
}

/// Lanes whose first lookup (on the poller thread) waits for a ticket and its
/// poller, waits on the ticket, drops the poller, and lends no lane (the
/// request is answered `NRT_INVALID_HANDLE`).
struct Reentrant {
    go: std::sync::mpsc::Receiver<(Ticket, Poller<Reentrant>)>,
    seen: std::sync::mpsc::Sender<Seen>,
    done: bool,
}

impl nrt_core::exec::Lanes for Reentrant {
    type Dev = SimHost;
    fn lane(&mut self, _lane: u16) -> Option<(&mut SimHost, &mut Notifications)> {
        if !std::mem::replace(&mut self.done, true) {
            if let Ok((ticket, poller)) = self.go.recv_timeout(Duration::from_secs(10)) {
                let t0 = Instant::now();
                let step = ticket.wait();
                let at_once = t0.elapsed() < Duration::from_secs(5);
                let _ = self.seen.send(Seen::Wait(ticket.waitable(), step, at_once));
                drop(poller);
                let _ = self.seen.send(Seen::Dropped);
            }
        }
        None
    }
}

impl Drop for Reentrant {
    fn drop(&mut self) {
        let _ = self.seen.send(Seen::LanesDropped);
    }
}

/// A lane's callback that waits on its own poller's ticket is refused at once
/// (the wait would wait on itself), and one that drops the poller does not
/// join its own thread: the drop returns, the request in flight is answered,
/// and the thread ends by itself once the callback is done.
#[test]
fn a_poller_waited_on_or_dropped_from_its_own_callback_neither_hangs_nor_aborts() {
    let (go_tx, go) = std::sync::mpsc::channel();
    let (seen_tx, seen) = std::sync::mpsc::channel();
    let poller = Poller::spawn(Reentrant { go, seen: seen_tx, done: false }, PollerConfig::default()).unwrap();
    let t = poller.submit(0, ExecConfig::new(Arch::Sunda, 1, 5)).unwrap();
    assert_eq!(t.waitable(), Ok(()), "the test's thread may wait");
    go_tx.send((t.clone(), poller)).unwrap();
    let next = || seen.recv_timeout(Duration::from_secs(10)).expect("the callback's report within 10 s");
    assert_eq!(
        next(),
        Seen::Wait(Err(WaitRefused::OnPollerThread), Step::failed(NrtStatus::Failure), true),
        "refused at once"
    );
    assert_eq!(next(), Seen::Dropped, "the drop on the poller's own thread returned");
    assert_eq!(t.wait(), Step::failed(NrtStatus::InvalidHandle), "the request in flight is answered");
    assert_eq!(next(), Seen::LanesDropped, "the thread ended by itself");
    assert!(WaitRefused::OnPollerThread.to_string().contains("would wait on itself"));
}
