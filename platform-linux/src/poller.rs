//! A poller thread per poll group: one thread harvests every
//! in-flight request of its lanes (the logical cores of one device, or of
//! several), instead of one thread per request.
//!
//! [`Poller::spawn`] moves the lanes (each a device and its [`Notifications`])
//! onto a new thread, pinned to a CPU when [`PollerConfig::cpu`] asks. The
//! thread holds a core [`PollGroup`] and
//!
//! Every pass is a due-first pass of the group ([`PollGroup::poll_due`]):
//! it steps only the requests that are due by their lane's learnt
//! kickoff-to-END time, and every request at least once per
//! [`PollerConfig::sweep_bound`] (1 ms by default), so an early record, an
//! error, a timeout or an overflow is seen within that bound plus one pass.
//! Between passes the thread waits by its [`WaitPolicy`]
//! ([`PollerConfig::policy`], G-POLLER-IDLE):
//!
//! - [`WaitPolicy::Hybrid`] (the default; for a poller without a core of its
//!   own): it sleeps until [`PollerConfig::hybrid_lead`] before the group's
//!   earliest due time ([`PollGroup::earliest_due_ns`]), with the thread's
//!   timer slack set to 1 ns (`prctl(PR_SET_TIMERSLACK)`: a requested sleep
//!   then overshoots by the scheduler's wake-up, ~5-10 us on a VM, not by the
//!   default 50 us slack), looks at the wait again on waking (a sleep may
//!   end early or late), spins through what is left of the lead (the lead
//!   absorbs the overshoot) and passes at the pass's time
//!   ([`hybrid_wait_for_pass`]). The next pass is set one slice after the
//!   last ([`PollerConfig::hybrid_slice_ns`]: the [`PollerConfig::notice_bound`],
//!   50 us by default, less the lead: 40 us), so passes are at least one
//!   slice apart (more only when a sleep overshoots past the lead; less when
//!   a submission arrives, which ends the wait so the loop can start it, and
//!   the pass that follows comes at once), and with
//!   many lanes whose due windows overlap (something is nearly always due)
//!   it sleeps in slices between passes over the due lanes instead of
//!   spinning: a completion waits at most about one slice plus a pass, within
//!   the bound. It spins only through the lead before a pass; a poller with
//!   nothing due within its lead never spins.
//!   A due request still in flight is stepped again every
//!   [`PollerConfig::recheck`] (so a late one costs one wake-up per recheck,
//!   not a spin). A submission wakes the sleeping thread (its eventfd).
//! - [`WaitPolicy::Spin`] (for a core the poller owns, e.g. pinned with
//!   [`PollerConfig::cpu`]): each pass steps every due request (no recheck
//!   interval), and it **spins** between passes while work is in
//!   flight, for [`PollerConfig::spin_for`] after the last submission or
//!   completion; then **yields** until [`PollerConfig::yield_for`]; then
//!   **sleeps** [`PollerConfig::sleep_us`] between passes. A request whose
//!   device has gone quiet for that long is a hang heading for its timeout;
//!   the thread's CPU then drops to almost nothing.
//! - [`WaitPolicy::Sleep`]: it sleeps [`PollerConfig::sleep_us`] between
//!   passes (default timer slack: libnrt's `usleep(1)` with one thread).
//! - with nothing in flight, a spinning poller spins and yields the same way
//!   waiting for a submission, then blocks on an eventfd that a submitter
//!   writes only when the poller is blocked (a submission to a spinning poller
//!   is one lock and one atomic, no syscall); a hybrid or sleeping one blocks
//!   at once.
//!
//! Each completion is handed to its waiter through a [`Ticket`]: the poller
//! publishes the status and a `done` flag; a waiter that is spinning on the
//! flag sees it with no syscall. A waiter that stopped spinning registered an
//! eventfd (created on first need) and a `sleeper` flag first; the poller
//! writes that eventfd only then. Both sides use sequentially consistent
//! stores and loads of `done` and `sleeper`, so either the poller sees the
//! sleeper or the sleeper sees `done` before it blocks: no lost wake-up.
//!
//! [`PollerSet`] runs the pollers of a host: one per device by default, or one
//! per contiguous block of devices, and routes each request by device.
//!
//! Shutdown ([`Poller::shutdown`], or drop) lets the requests in flight finish
//! (each ends at the latest at its timeout; one whose device clock stalls is
//! answered `NRT_CLOSED` once the longest timeout in flight plus
//! [`SHUTDOWN_GRACE`] has passed on this process's clock, G-POLLER-CLOSE),
//! answers every request not yet started with `NRT_CLOSED` (14, G-LINUX-CLOSE),
//! and refuses new ones.
//!
//! Two kinds of call are refused at once rather than hang or abort:
//! in a child forked after the poller was made, where its thread is not,
//! every call on it or its tickets ([`SubmitError::Forked`],
//! [`WaitRefused::Forked`]; its drop forgets it: [`crate::fork`], G-FORK);
//! and a wait on the poller's own thread (a lane's callback), which would
//! wait on itself ([`WaitRefused::OnPollerThread`], G-POLLER-REENTRY). A
//! poller dropped on its own thread does not join itself: it stops taking
//! submissions and its thread ends by itself once the callback returns and
//! the requests in flight are done.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nrt_core::exec::ExecDevice;
use nrt_core::exec::{ExecConfig, ExecRequest, Lanes, PollGroup, Schedule, Settle, Step};
use nrt_core::nq::Notifications;
use nrt_core::NrtStatus;

use crate::fork::{ForkedChild, Owner};
use crate::sys::{self, EventFd};

/// Requests one poller holds at once (a 16-device trn2 host has 64 logical
/// cores; two of them fit one poller).
pub const POLLER_CAPACITY: usize = 128;

/// How long a blocked idle poller waits on its eventfd before it looks at the
/// shutdown flag again.
const IDLE_BLOCK_MS: i32 = 50;

/// At shutdown, how long past the longest timeout of the requests in flight
/// they may still finish before they are answered `NRT_CLOSED` (G-POLLER-CLOSE).
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(1);

/// `spin_loop` hints per spin between passes: a PAUSE is ~40-140 cycles on the
/// Xeons measured, so 4 of them keep a pass every ~0.1-0.3 us plus the pass.
const SPINS_PER_WAIT: u32 = 4;

/// How a poller waits between passes (G-POLLER-IDLE; see the module's
/// documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitPolicy {
    /// Spin between passes while work is in flight (a core of its own).
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
    /// Nothing due within the lead: sleep this many ns (then look again).
    Sleep(u64),
}

/// When a hybrid poller makes its next pass: when the earliest request is
/// due less the batch window (a pass takes what is due within it), but not
/// sooner than one batch window after the last pass (`pass_ns`), so that the
/// due times of many lanes share passes. `None` when nothing is in flight.
pub fn next_pass_ns(earliest_due_ns: Option<u64>, pass_ns: u64, batch_ns: u64) -> Option<u64> {
    next_sliced_pass_ns(earliest_due_ns, pass_ns, batch_ns, batch_ns)
}

/// [`next_pass_ns`] with the least time between passes apart from the batch
/// window: when the earliest request is due less `batch_ns`, but not sooner
/// than `slice_ns` after the last pass. With many lanes whose due windows
/// overlap, something is nearly always due: the slice is then what keeps the
/// poller asleep between passes instead of spinning.
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
    /// How long a [`Ticket::wait`] spins before it sleeps on its eventfd.
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

    /// Hybrid: how long after a pass the poller sets its next one, ns: the
    /// [`hybrid_slice`](Self::hybrid_slice) when set, else the notice bound
    /// less the lead; at least the batch window and at most the
    /// sweep bound (so that a long notice bound never lets a request in
    /// flight go unstepped longer than [`sweep_bound`](Self::sweep_bound)). It
    /// wakes the lead before that pass and spins to it, so passes are at
    /// least this apart ([`hybrid_wait_for_pass`]).
    pub fn hybrid_slice_ns(&self) -> u64 {
        let slice = match self.hybrid_slice {
            Some(s) => ns(s),
            None => ns(self.notice_bound).saturating_sub(ns(self.hybrid_lead)),
        };
        slice.max(ns(self.hybrid_batch)).min(ns(self.sweep_bound))
    }

    /// Hybrid: what the poller does at `now_ns` after a pass at `pass_ns` that
    /// completed nothing, given the group's earliest due time: it sleeps until
    /// the lead before its next pass ([`next_sliced_pass_ns`]), and spins only
    /// when that pass is within the lead.
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

/// What a hybrid poller's waiting does: read its clock, sleep (a sleep may
/// end early), spin a little, and tell whether it should stop waiting (a new
/// submission, or shutdown). [`hybrid_wait_for_pass`] drives it; the poller
/// thread and `nrt-bench scale` give the real clock, a test a fake one.
pub trait HybridWaiter {
    /// The poller's clock, ns (the group's due times are on it).
    fn now_ns(&mut self) -> u64;
    /// Sleep about `ns` (it may end sooner, or overshoot).
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
    /// Nothing in flight (the caller blocks until a submission).
    Idle,
    /// A submission or shutdown ended the wait early.
    Interrupted,
}

/// Re-evaluations of the wait after one pass before the poller passes anyway
/// (each follows a sleep; a sleep that keeps ending early, e.g. a wake
/// eventfd that stays readable, cannot hold the poller off its requests).
pub const HYBRID_MAX_SLEEPS: u32 = 64;

/// Hybrid: wait after a pass at `pass_ns` that completed nothing, until the
/// next pass ([`PollerConfig::hybrid_wait_after`]): sleep until the lead
/// before it, look at the wait again on waking (the sleep may end early or
/// late), spin through what is left of the lead, and return
/// [`HybridWaitEnd::Pass`] no sooner than the next pass's time, so passes
/// are at least [`PollerConfig::hybrid_slice_ns`] apart (unless a sleep
/// overshoots past it). Ends early on [`HybridWaiter::interrupted`]. Bounded:
/// at most [`HYBRID_MAX_SLEEPS`] sleeps, and the spin ends by the clock
/// (at most the lead).
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

/// Lanes in a vector: lane `i` is `self.0[i]`.
#[derive(Debug)]
pub struct VecLanes<D>(pub Vec<(D, Notifications)>);

impl<D: ExecDevice> Lanes for VecLanes<D> {
    type Dev = D;
    fn lane(&mut self, lane: u16) -> Option<(&mut D, &mut Notifications)> {
        self.0.get_mut(usize::from(lane)).map(|(d, n)| (d, n))
    }
}

/// One request's handoff from the poller to its waiter.
#[derive(Debug, Default)]
struct Handoff {
    done: AtomicBool,
    status: AtomicU32,
    step: AtomicU8,
    /// The poller's clock (ns since the poller's origin) when it saw the completion.
    noticed_ns: AtomicU64,
    sleeper: AtomicBool,
    efd: OnceLock<Option<EventFd>>,
}

/// Whether the poller thread is still there to answer (set false when it
/// ends, by return or by unwinding).
#[derive(Debug)]
struct Alive(AtomicBool);

/// A submitted request; wait for it with [`Ticket::wait`].
#[derive(Debug, Clone)]
pub struct Ticket {
    handoff: Arc<Handoff>,
    spin_for: Duration,
    alive: Arc<Alive>,
    /// The process that submitted it.
    owner: Owner,
}

/// Why a wait on a [`Ticket`] is refused at once (G-POLLER-REENTRY).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitRefused {
    /// In a child forked after the submission: the poller thread is not in it.
    Forked(ForkedChild),
    /// On the poller's own thread (a lane's callback): it would wait on itself.
    OnPollerThread,
}

impl WaitRefused {
    /// The status [`Ticket::wait`] answers with: `NRT_INVALID_HANDLE` (3) in a
    /// forked child, `NRT_FAILURE` (1) on the poller's thread.
    pub fn status(self) -> NrtStatus {
        match self {
            WaitRefused::Forked(_) => NrtStatus::InvalidHandle,
            WaitRefused::OnPollerThread => NrtStatus::Failure,
        }
    }
}

impl std::fmt::Display for WaitRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WaitRefused::Forked(e) => e.fmt(f),
            WaitRefused::OnPollerThread => f.write_str(
                "the ticket's poller thread is the calling thread (a lane's callback): the wait would wait on \
                 itself; poll it instead, or wait from another thread",
            ),
        }
    }
}

impl std::error::Error for WaitRefused {}

impl Ticket {
    /// `Err` when this thread may not wait for the ticket: in a child forked
    /// after the submission, or on the poller's own thread.
    pub fn waitable(&self) -> Result<(), WaitRefused> {
        self.owner.check("ticket").map_err(WaitRefused::Forked)?;
        if on_poller_thread(&self.alive) {
            return Err(WaitRefused::OnPollerThread);
        }
        Ok(())
    }

    /// The result once the request completed: [`Step::Done`] or
    /// [`Step::Error`] with the status.
    pub fn try_result(&self) -> Option<Step> {
        if !self.handoff.done.load(Ordering::SeqCst) {
            return None;
        }
        let status = NrtStatus::from_code(self.handoff.status.load(Ordering::Acquire));
        Some(match self.handoff.step.load(Ordering::Acquire) {
            0 => Step::Done(status),
            _ => Step::failed(status),
        })
    }

    /// When the poller saw the completion, ns since [`Poller::origin`].
    pub fn noticed_ns(&self) -> Option<u64> {
        self.try_result().map(|_| self.handoff.noticed_ns.load(Ordering::Acquire))
    }

    /// Look without waiting: the result, `NRT_EXEC_UNIT_UNRECOVERABLE` (101)
    /// when the poller thread ended without answering (it died,
    /// G-POLLER-CLOSE), or `None` while in flight. In a forked child:
    /// `NRT_INVALID_HANDLE` (3) at once ([`Ticket::waitable`] says why). On
    /// the poller's own thread it looks as anywhere.
    pub fn poll(&self) -> Option<Step> {
        if let Err(f) = self.owner.check("ticket") {
            return Some(Step::failed(WaitRefused::Forked(f).status()));
        }
        self.look()
    }

    /// [`poll`](Self::poll) without the fork check (the wait's spin).
    fn look(&self) -> Option<Step> {
        if let Some(r) = self.try_result() {
            return Some(r);
        }
        if !self.alive.0.load(Ordering::SeqCst) {
            // It may have answered just before it ended.
            return Some(self.try_result().unwrap_or(Step::failed(NrtStatus::ExecUnitUnrecoverable)));
        }
        None
    }

    /// Wait for the result: spin (no syscall) for the configured time, then
    /// sleep on an eventfd the poller writes only for sleepers. Returns 101
    /// (`NRT_EXEC_UNIT_UNRECOVERABLE`) if the poller thread died. Where
    /// [`Ticket::waitable`] refuses (a forked child, the poller's own
    /// thread), it returns at once with the refusal's
    /// [`status`](WaitRefused::status), logged.
    pub fn wait(&self) -> Step {
        if let Err(e) = self.waitable() {
            log::error!("poller ticket wait refused: {e}");
            return Step::failed(e.status());
        }
        let t0 = Instant::now();
        loop {
            if let Some(r) = self.look() {
                return r;
            }
            if t0.elapsed() >= self.spin_for {
                break;
            }
            std::hint::spin_loop();
        }
        let efd = self.handoff.efd.get_or_init(|| EventFd::new(false).ok());
        self.handoff.sleeper.store(true, Ordering::SeqCst);
        loop {
            if let Some(r) = self.look() {
                return r;
            }
            match efd {
                // The timeout is a backstop only: the poller writes the eventfd.
                Some(e) => {
                    let _ = e.wait_readable(IDLE_BLOCK_MS);
                    let _ = e.try_read();
                }
                // No eventfd to be had: sleep and look again.
                None => std::thread::sleep(Duration::from_micros(50)),
            }
        }
    }
}

/// Counters of a poller.
#[derive(Debug, Default)]
struct Counters {
    passes: AtomicU64,
    steps: AtomicU64,
    completions: AtomicU64,
    eventfd_wakes: AtomicU64,
    spin_handoffs: AtomicU64,
    refused_busy_lane: AtomicU64,
    skipped: AtomicU64,
    sleeps: AtomicU64,
}

/// What a poller did, read at any time ([`Poller::stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PollerStats {
    /// Passes over the group.
    pub passes: u64,
    /// Request steps over all passes.
    pub steps: u64,
    /// Requests completed.
    pub completions: u64,
    /// Completions handed to a sleeping waiter through its eventfd.
    pub eventfd_wakes: u64,
    /// Completions handed over with no syscall (the waiter was spinning, or not waiting yet).
    pub spin_handoffs: u64,
    /// Requests in flight that passes left alone (not due).
    pub skipped: u64,
    /// Sleeps between passes (hybrid or sleep policy).
    pub sleeps: u64,
}

struct Pending {
    lane: u16,
    cfg: ExecConfig,
    handoff: Arc<Handoff>,
    /// The request's execution timeout with its source, put in effect while
    /// it is stepped (`config::BudgetScope`); `None`: none said.
    budget: Option<crate::config::Budget>,
}

struct Shared {
    queue: Mutex<VecDeque<Pending>>,
    queued: AtomicU32,
    sleeping: AtomicBool,
    wake: EventFd,
    closing: AtomicBool,
    counters: Counters,
    origin: Instant,
    alive: Arc<Alive>,
}

thread_local! {
    /// On a poller thread, the address of its poller's [`Alive`] (0
    /// elsewhere): a wait or a drop on the poller's own thread is told by it
    /// (an address its tickets keep alive, so never another poller's).
    static POLLER_OF_THREAD: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Whether the calling thread is the thread of the poller whose [`Alive`] is
/// `alive` (never panics: no thread handle is asked for).
fn on_poller_thread(alive: &Arc<Alive>) -> bool {
    POLLER_OF_THREAD.try_with(|p| p.get() == Arc::as_ptr(alive) as usize).unwrap_or(false)
}

/// Marks the poller dead when the thread ends, however it ends.
struct AliveGuard(Arc<Alive>);

impl Drop for AliveGuard {
    fn drop(&mut self) {
        self.0 .0.store(false, Ordering::SeqCst);
    }
}

impl Shared {
    fn queue(&self) -> MutexGuard<'_, VecDeque<Pending>> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Why a poller, or a set of pollers, could not start. The text names the
/// call and the reason (an OS error with its errno name); [`source`] is the
/// OS error where there is one.
///
/// [`source`]: std::error::Error::source
#[derive(Debug)]
pub enum PollerError {
    /// The wake eventfd could not be made.
    Eventfd(std::io::Error),
    /// The poller thread could not be started.
    Thread(std::io::Error),
    /// The poller thread could not be pinned to `cpu`.
    Pin {
        /// The CPU asked for ([`PollerConfig::cpu`]).
        cpu: usize,
        /// What `sched_setaffinity` answered.
        source: std::io::Error,
    },
    /// The poller thread ended before it said it had started.
    ThreadEnded,
    /// A [`PollerSet`] of this shape is refused (the reason).
    Shape(String),
}

impl std::fmt::Display for PollerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PollerError::Eventfd(e) => write!(f, "poller: eventfd: {e}{}", errno_suffix(e)),
            PollerError::Thread(e) => write!(f, "poller: spawn: {e}{}", errno_suffix(e)),
            PollerError::Pin { cpu, source } => write!(f, "poller: pin to CPU {cpu}: {source}{}", errno_suffix(source)),
            PollerError::ThreadEnded => f.write_str("poller: the thread ended before it started"),
            PollerError::Shape(why) => write!(f, "poller set: {why}"),
        }
    }
}

impl std::error::Error for PollerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PollerError::Eventfd(e) | PollerError::Thread(e) | PollerError::Pin { source: e, .. } => Some(e),
            PollerError::ThreadEnded | PollerError::Shape(_) => None,
        }
    }
}

/// Why a submission was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubmitError {
    /// The poller is shutting down (`NRT_CLOSED`).
    Closed,
    /// A child forked after the poller was made: its thread is not here.
    Forked(ForkedChild),
}

/// A poller thread and its group.
pub struct Poller<L: Lanes + Send + 'static> {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<(L, u64)>>,
    waiter_spin_for: Duration,
    cpu_ns: u64,
    lanes: Option<L>,
    /// The process that made it (G-FORK).
    owner: Owner,
}

impl<L: Lanes + Send + 'static> std::fmt::Debug for Poller<L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Poller").field("stats", &self.stats()).finish()
    }
}

impl<L: Lanes + Send + 'static> Poller<L> {
    /// Start a poller thread over `lanes`. Fails when the eventfd or the thread
    /// cannot be made, or the CPU cannot be pinned (the message names which).
    pub fn spawn(lanes: L, cfg: PollerConfig) -> Result<Poller<L>, PollerError> {
        let wake = EventFd::new(false).map_err(PollerError::Eventfd)?;
        let shared = Arc::new(Shared {
            queue: Mutex::new(VecDeque::new()),
            queued: AtomicU32::new(0),
            sleeping: AtomicBool::new(false),
            wake,
            closing: AtomicBool::new(false),
            counters: Counters::default(),
            origin: Instant::now(),
            alive: Arc::new(Alive(AtomicBool::new(true))),
        });
        let (tx, rx) = std::sync::mpsc::channel::<Result<(), PollerError>>();
        let sh = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("nrt-poller".into())
            .spawn(move || {
                let _alive = AliveGuard(Arc::clone(&sh.alive));
                let _ = POLLER_OF_THREAD.try_with(|p| p.set(Arc::as_ptr(&sh.alive) as usize));
                let pinned = match cfg.cpu {
                    Some(cpu) => sys::pin_current_thread(cpu).map_err(|source| PollerError::Pin { cpu, source }),
                    None => Ok(()),
                };
                if cfg.policy == WaitPolicy::Hybrid {
                    set_timer_slack_1ns();
                }
                let ok = pinned.is_ok();
                let _ = tx.send(pinned);
                let mut lanes = lanes;
                if ok {
                    run(&sh, &mut lanes, &cfg);
                }
                // A poller dropped on this thread is not joined: what raced
                // its shutdown is answered here.
                answer_queued_closed(&sh);
                (lanes, sys::thread_cpu_ns())
            })
            .map_err(PollerError::Thread)?;
        let mut p = Poller {
            shared,
            thread: Some(thread),
            waiter_spin_for: cfg.waiter_spin_for,
            cpu_ns: 0,
            lanes: None,
            owner: Owner::here(),
        };
        match rx.recv() {
            Ok(Ok(())) => Ok(p),
            Ok(Err(e)) => {
                p.join();
                Err(e)
            }
            Err(_) => {
                p.join();
                Err(PollerError::ThreadEnded)
            }
        }
    }

    /// The instant [`Ticket::noticed_ns`] counts from.
    pub fn origin(&self) -> Instant {
        self.shared.origin
    }

    /// Submit a request for `cfg` on `lane`. A lane harvests one request at a
    /// time: a request for a busy lane waits, in order, until the lane is free.
    /// Refused in a child forked after the poller was made; allowed from a
    /// lane's callback (the poller takes it at its next pass).
    pub fn submit(&self, lane: u16, cfg: ExecConfig) -> Result<Ticket, SubmitError> {
        self.submit_with(lane, cfg, None)
    }

    /// [`submit`](Self::submit) a request whose execution timeout is
    /// `budget` ([`PollerConfig::budget`]): its seconds are the request's
    /// timeout (they replace `cfg`'s `timeout_s`, so the two cannot differ),
    /// and while the poller steps it, the budget is in effect on the poller
    /// thread, so the timeout line its harvest logs names the budget and its
    /// source (`config::BudgetScope`).
    pub fn submit_budgeted(
        &self,
        lane: u16,
        cfg: ExecConfig,
        budget: crate::config::Budget,
    ) -> Result<Ticket, SubmitError> {
        self.submit_with(lane, ExecConfig { timeout_s: budget.seconds, ..cfg }, Some(budget))
    }

    fn submit_with(
        &self,
        lane: u16,
        cfg: ExecConfig,
        budget: Option<crate::config::Budget>,
    ) -> Result<Ticket, SubmitError> {
        self.owner.check("poller").map_err(SubmitError::Forked)?;
        let handoff = Arc::new(Handoff::default());
        {
            // Checked under the queue's lock: shutdown sets the flag, then
            // (after the thread ended) answers whatever the queue still holds
            // under the same lock, so no submission is left unanswered.
            let mut q = self.shared.queue();
            if self.shared.closing.load(Ordering::SeqCst) {
                return Err(SubmitError::Closed);
            }
            q.push_back(Pending { lane, cfg, handoff: Arc::clone(&handoff), budget });
            self.shared.queued.fetch_add(1, Ordering::SeqCst);
        }
        if self.shared.sleeping.load(Ordering::SeqCst) {
            let _ = self.shared.wake.write(1);
        }
        Ok(Ticket { handoff, spin_for: self.waiter_spin_for, alive: Arc::clone(&self.shared.alive), owner: self.owner })
    }

    /// The counters so far.
    pub fn stats(&self) -> PollerStats {
        let c = &self.shared.counters;
        PollerStats {
            passes: c.passes.load(Ordering::Relaxed),
            steps: c.steps.load(Ordering::Relaxed),
            completions: c.completions.load(Ordering::Relaxed),
            eventfd_wakes: c.eventfd_wakes.load(Ordering::Relaxed),
            spin_handoffs: c.spin_handoffs.load(Ordering::Relaxed),
            skipped: c.skipped.load(Ordering::Relaxed),
            sleeps: c.sleeps.load(Ordering::Relaxed),
        }
    }

    fn join(&mut self) {
        if self.owner.inherited() {
            // A forked child: the thread is the parent's. Forget it all: no
            // join, no lock, no eventfd write the parent's thread would see.
            std::mem::forget(self.thread.take());
            std::mem::forget(Arc::clone(&self.shared));
            return;
        }
        {
            let _q = self.shared.queue();
            self.shared.closing.store(true, Ordering::SeqCst);
        }
        let _ = self.shared.wake.write(1);
        if on_poller_thread(&self.shared.alive) {
            // On the poller's own thread (a lane's callback): it cannot join
            // itself. Detached, it ends by itself once the callback returns and
            // the requests in flight are done, and answers what is left.
            drop(self.thread.take());
            return;
        }
        if let Some(t) = self.thread.take() {
            if let Ok((lanes, cpu)) = t.join() {
                self.lanes = Some(lanes);
                self.cpu_ns = cpu;
            }
        }
        // The thread died before its own last look at the queue.
        answer_queued_closed(&self.shared);
    }

    /// Stop: the requests in flight finish, queued ones are answered
    /// `NRT_CLOSED`. Returns the lanes, and the poller thread's CPU time in ns;
    /// no lanes and 0 in a forked child (forgotten) or on the poller's own
    /// thread (it ends by itself after the callback).
    pub fn shutdown(mut self) -> (Option<L>, u64) {
        self.join();
        (self.lanes.take(), self.cpu_ns)
    }
}

impl<L: Lanes + Send + 'static> Drop for Poller<L> {
    fn drop(&mut self) {
        self.join();
    }
}

/// The pollers of a host: one per device by default ([`PollerSet::per_device`]),
/// or one per contiguous block of devices ([`PollerSet::blocks`],
/// for a machine with fewer spare cores than devices). A request is submitted
/// by `(device, lane)`; the set routes it to the poller holding that device.
pub struct PollerSet<D: ExecDevice + Send + 'static> {
    pollers: Vec<Poller<VecLanes<D>>>,
    /// `route[device]`: the poller holding the device and the device's first
    /// lane in it, and the device's lane count.
    route: Vec<(usize, u16, u16)>,
}

impl<D: ExecDevice + Send + 'static> std::fmt::Debug for PollerSet<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PollerSet").field("pollers", &self.pollers.len()).field("devices", &self.route.len()).finish()
    }
}

impl<D: ExecDevice + Send + 'static> PollerSet<D> {
    /// One poller per device: `devices[d]` holds the lanes (logical cores) of
    /// device `d`. With [`PollerConfig::cpu`] set, poller `d` is pinned to CPU
    /// `cpu + d`.
    pub fn per_device(devices: Vec<Vec<(D, Notifications)>>, cfg: PollerConfig) -> Result<PollerSet<D>, PollerError> {
        let n = devices.len();
        PollerSet::blocks(devices, n, cfg)
    }

    /// `pollers` pollers, each over a contiguous block of devices (the first
    /// `devices % pollers` blocks one device larger). Refused: no device, no
    /// poller or more pollers than devices, a block of more than
    /// [`POLLER_CAPACITY`] lanes, a device of more than `u16::MAX` lanes.
    pub fn blocks(
        devices: Vec<Vec<(D, Notifications)>>,
        pollers: usize,
        cfg: PollerConfig,
    ) -> Result<PollerSet<D>, PollerError> {
        let n = devices.len();
        if n == 0 || pollers == 0 || pollers > n {
            return Err(PollerError::Shape(format!("{pollers} pollers for {n} devices (1 to {n} needed)")));
        }
        let mut route = Vec::with_capacity(n);
        let mut blocks: Vec<Vec<(D, Notifications)>> = (0..pollers).map(|_| Vec::new()).collect();
        for (d, lanes) in devices.into_iter().enumerate() {
            // Contiguous blocks: device d goes to poller floor(d * pollers / n).
            let p = d * pollers / n;
            let first = u16::try_from(blocks[p].len()).ok();
            let count = u16::try_from(lanes.len()).ok();
            let (Some(first), Some(count)) = (first, count) else {
                return Err(PollerError::Shape(format!("device {d} has {} lanes, too many", lanes.len())));
            };
            if usize::from(first) + usize::from(count) > POLLER_CAPACITY {
                return Err(PollerError::Shape(format!(
                    "poller {p} would hold more than its {POLLER_CAPACITY} lanes at device {d}: use more pollers"
                )));
            }
            route.push((p, first, count));
            blocks[p].extend(lanes);
        }
        let mut set = Vec::with_capacity(pollers);
        for (p, lanes) in blocks.into_iter().enumerate() {
            let cpu = cfg.cpu.map(|c| c + p);
            // A failure drops the pollers already started (each joins its thread).
            set.push(Poller::spawn(VecLanes(lanes), PollerConfig { cpu, ..cfg })?);
        }
        Ok(PollerSet { pollers: set, route })
    }

    /// Submit a request on `lane` of `device`. A device or lane that does not
    /// exist is answered `NRT_INVALID_HANDLE` through its ticket, as
    /// [`Poller::submit`] answers an unknown lane.
    pub fn submit(&self, device: usize, lane: u16, cfg: ExecConfig) -> Result<Ticket, SubmitError> {
        match self.route.get(device) {
            Some(&(p, first, count)) if lane < count => self.pollers[p].submit(first + lane, cfg),
            // Past every lane of its poller: the poller answers InvalidHandle.
            _ => self.pollers[0].submit(u16::MAX, cfg),
        }
    }

    /// How many pollers (threads) the set runs.
    pub fn pollers(&self) -> usize {
        self.pollers.len()
    }

    /// The poller holding `device`, if it exists.
    pub fn poller_of(&self, device: usize) -> Option<usize> {
        self.route.get(device).map(|r| r.0)
    }

    /// Each poller's counters so far.
    pub fn stats(&self) -> Vec<PollerStats> {
        self.pollers.iter().map(Poller::stats).collect()
    }

    /// Stop every poller (as [`Poller::shutdown`]); returns each device's lanes
    /// in device order, and the pollers' CPU time in ns, summed.
    pub fn shutdown(self) -> (Vec<Vec<(D, Notifications)>>, u64) {
        let mut cpu = 0u64;
        let mut blocks: Vec<std::vec::IntoIter<(D, Notifications)>> = Vec::new();
        for p in self.pollers {
            let (lanes, ns) = p.shutdown();
            cpu = cpu.saturating_add(ns);
            blocks.push(lanes.map(|l| l.0).unwrap_or_default().into_iter());
        }
        let devices =
            self.route.iter().map(|&(p, _, count)| blocks[p].by_ref().take(usize::from(count)).collect()).collect();
        (devices, cpu)
    }
}

/// Submitted after the thread's last look at the queue (or the thread
/// died): never started, answered NRT_CLOSED (G-LINUX-CLOSE). Shutdown set
/// `closing` under the queue's lock first, so nothing is queued after this.
fn answer_queued_closed(sh: &Shared) {
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
fn run<L: Lanes>(sh: &Shared, lanes: &mut L, cfg: &PollerConfig) {
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

/// " (ENAME)" for an OS error, nothing for another.
fn errno_suffix(e: &std::io::Error) -> String {
    sys::errno_name(e).map(|n| format!(" ({n})")).unwrap_or_default()
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
        assert_eq!(d.notice_bound, Duration::from_micros(50));
        assert_eq!(d.hybrid_slice_ns(), 40_000, "the bound less the 10 us lead");
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
        // After a pass at 100 us with something overdue: sleep to the lead
        // before one slice after it (the lead absorbs the overshoot).
        let pass = 100_000;
        assert_eq!(d.hybrid_wait_after(103_000, Some(50_000), pass), HybridWait::Sleep(27_000));
        assert_eq!(d.hybrid_wait_after(103_000, None, pass), HybridWait::Idle);
        // Woken within the lead of the slice's end: spin to it.
        assert_eq!(d.hybrid_wait_after(131_000, Some(50_000), pass), HybridWait::SpinUntil(140_000));
        assert_eq!(d.hybrid_wait_after(140_000, Some(50_000), pass), HybridWait::Pass);
        // Due far out: sleep to the batch window before it, less the lead.
        assert_eq!(d.hybrid_wait_after(103_000, Some(900_000), pass), HybridWait::Sleep(767_000));
        // A bound within lead + batch: the batch-window spacing.
        let tight = c(20, 10, 20);
        assert_eq!(tight.hybrid_wait_after(103_000, Some(50_000), pass), HybridWait::Sleep(7_000));
        assert_eq!(tight.hybrid_wait_after(111_000, Some(50_000), pass), HybridWait::SpinUntil(120_000));
    }

    /// A fake clock for [`hybrid_wait_for_pass`]: each sleep lasts what was
    /// asked plus the next overshoot of `overshoots` (negative: it ends that
    /// much early), each spin 100 ns; after `interrupt_after` sleeps (or
    /// `interrupt_after_spins` spins) it reports a submission.
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
            // Something is always overdue (many lanes); the pass takes 2 us.
            let pass_ns = w.t;
            w.t += 2_000;
            let (sleeps, spins) = (w.sleeps, w.spins);
            assert_eq!(hybrid_wait_for_pass(&d, Some(0), pass_ns, &mut w), HybridWaitEnd::Pass);
            assert!(w.sleeps > sleeps, "it slept between passes");
            let gap = w.t - pass_ns;
            assert!(gap >= slice, "passes {gap} ns apart, under the {slice} ns slice");
            // Exactly the slice (the spin ends on the pass's time: every
            // time here is a multiple of the 100 ns spin), or the sleep's
            // 5 us overshoot past the lead.
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
        assert_eq!((w.sleeps, w.t), (1, 1_030_000), "one sleep to the lead before the pass, then the submission");
        let mut w = FakeWaiter::new(1_000_000, vec![0]);
        assert_eq!(hybrid_wait_for_pass(&d, None, 1_000_000, &mut w), HybridWaitEnd::Idle);
        assert_eq!((w.sleeps, w.spins), (0, 0), "nothing in flight: no sleep, no spin");
        // Interrupted while spinning through the lead.
        let mut w = FakeWaiter::new(1_035_000, vec![0]);
        w.interrupt_after_spins = Some(3);
        assert_eq!(hybrid_wait_for_pass(&d, Some(0), 1_000_000, &mut w), HybridWaitEnd::Interrupted);
        assert_eq!((w.sleeps, w.spins, w.t), (0, 3, 1_035_300), "woken inside the lead: spun, then stopped");
        // Sleeps that never advance the clock: it passes after the bound.
        let mut w = FakeWaiter::new(1_000_000, vec![-1_000_000_000]);
        assert_eq!(hybrid_wait_for_pass(&d, Some(0), 1_000_000, &mut w), HybridWaitEnd::Pass);
        assert_eq!((w.sleeps, w.t), (HYBRID_MAX_SLEEPS, 1_000_000));
    }

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
