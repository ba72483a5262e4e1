//! The two drivers of the one state machine (completion-engine seed §1, §6).
//!
//! - [`exec_wait_round_robin`], the sync driver: `while step() == 1 { delay }`.
//!   It tests `== InFlight` specifically (seed §1 GOTCHA: a driver that treats any
//!   non-zero return as failure aborts healthy in-flight requests).
//! - [`exec_wait_watching`], the same loop taking a step only when a cheap
//!   look at the rings finds a fresh record (or every
//!   [`WATCH_STEP_EVERY`] delays).
//! - [`exec_wait_with`], the one loop both run: the same steps and delays,
//!   with a caller's [`WaitHooks`] around them (a pass counter, a clock
//!   check that may abandon the wait, a look before stepping).
//! - [`ExecUnit::step`], the async execution-unit worker step (`tpb_xu_step`):
//!   drives the same machine from a worker, degrades the unit to FATAL_SHUTDOWN on
//!   a 2, answers 101 once fatal, and on completion runs
//!   `tpb_xu_base_report_complete`: consume one has-work, publish the status,
//!   pop the request (which signals its mark-complete), in that order; then
//!   the request's post-processing and counters, after its submitter has its
//!   status (G-SETTLE).

use core::ops::ControlFlow;

use super::{ExecConfig, ExecDevice, ExecEvent, ExecRequest, Settle, Step};
use crate::hal::Delay;
use crate::nq::Notifications;
use crate::status::NrtStatus;
use crate::trace::emit;

/// Microseconds the sync driver waits between steps (`usleep(1)`, seed §1).
pub const SYNC_POLL_DELAY_US: u32 = 1;

/// What the sync driver returns: the status (`exec_ret`), the final step code,
/// and how many steps it took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyncWait {
    /// The request's status.
    pub status: NrtStatus,
    /// The final one-step code: 0 or 2, or 1 when [`WaitHooks::before_delay`]
    /// abandoned the wait with the request in flight.
    pub step: Step,
    /// Calls of `progress_one_step`.
    pub steps: u64,
}

/// `exec_wait_round_robin`: poll `req` until it is done, waiting through `delay`
/// between steps. Returns the status and step count.
///
/// Terminates when the request does: at the latest at the core timeout, as long
/// as the platform's clock advances.
pub fn exec_wait_round_robin<D: ExecDevice + ?Sized, W: Delay + ?Sized>(
    req: &mut ExecRequest,
    dev: &mut D,
    nq: &mut Notifications,
    delay: &mut W,
) -> SyncWait {
    exec_wait_with(req, dev, nq, delay, &mut NoHooks)
}

/// What a caller adds to the harvest loop of [`exec_wait_with`]. Every method
/// has a default that adds nothing, so [`NoHooks`] is the seed's
/// `exec_wait_round_robin`.
///
/// `D` is the device the loop steps, `W` its delay: a hook may look at both
/// (a simulator tells its delay how far it may skip).
pub trait WaitHooks<D: ?Sized, W: ?Sized> {
    /// Just before each step, the first included (a trace's pass counter, a
    /// clock read).
    fn before_step(&mut self, _req: &ExecRequest, _dev: &mut D, _nq: &Notifications) {}

    /// Just after each step, with its code.
    fn after_step(&mut self, _req: &ExecRequest, _dev: &mut D, _nq: &Notifications, _step: Step) {}

    /// Before each delay, while the request is in flight: go on
    /// (`Continue`), or abandon the wait with a status (`Break`). An abandoned
    /// request is left in flight: it may be stepped on, or dropped. Default:
    /// go on (the request's own timeout ends the wait).
    fn before_delay(
        &mut self,
        _req: &ExecRequest,
        _dev: &mut D,
        _nq: &Notifications,
        _delay: &mut W,
    ) -> ControlFlow<NrtStatus> {
        ControlFlow::Continue(())
    }

    /// After each delay: whether to step now, or wait another delay first.
    /// The loop steps after [`WATCH_STEP_EVERY`] delays in a row whatever this
    /// says, so the request's own timeout is always seen. Default: step after
    /// every delay.
    fn step_now(&mut self, _req: &ExecRequest, _dev: &mut D, _nq: &Notifications) -> bool {
        true
    }
}

/// The hooks that add nothing: [`exec_wait_with`] is then
/// [`exec_wait_round_robin`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NoHooks;

impl<D: ?Sized, W: ?Sized> WaitHooks<D, W> for NoHooks {}

/// The one harvest loop every sync driver runs: a step; then, while the
/// request is in flight, [`WaitHooks::before_delay`] (which may abandon the
/// wait), a delay of [`SYNC_POLL_DELAY_US`], and a step whenever
/// [`WaitHooks::step_now`] says so, and at the latest after
/// [`WATCH_STEP_EVERY`] delays in a row; each step between
/// [`WaitHooks::before_step`] and [`WaitHooks::after_step`]. When the request
/// is done, or the wait is abandoned, and the rings batch their HEADs, the
/// HEADs are written back once (G-HEAD-BATCH): that hands back only records
/// already consumed, so a request left in flight loses nothing, and its
/// caller need not remember to write them back.
///
/// Returns the status, the final step code and the steps taken. An abandoned
/// wait returns [`Step::InFlight`] with the hook's status (the request may
/// still be stepped on). A request configured with
/// [`Settle::AfterNotice`] comes back DONE with its status and
/// [`ExecRequest::settle_due`]: the caller settles it once it has passed the
/// status on (G-SETTLE).
///
/// Allocates nothing and blocks only in `delay`. Terminates when the request
/// does (at the latest at the core timeout, as long as the platform's clock
/// advances) or when the hooks abandon it.
pub fn exec_wait_with<D, W, H>(
    req: &mut ExecRequest,
    dev: &mut D,
    nq: &mut Notifications,
    delay: &mut W,
    hooks: &mut H,
) -> SyncWait
where
    D: ExecDevice + ?Sized,
    W: Delay + ?Sized,
    H: WaitHooks<D, W> + ?Sized,
{
    let mut steps = 0u64;
    loop {
        hooks.before_step(req, dev, nq);
        let step = req.progress_one_step(dev, nq);
        steps = steps.saturating_add(1);
        hooks.after_step(req, dev, nq, step);
        if let Some(status) = step.status() {
            // Settled after the notice, the caller's settle hands them back.
            if nq.head_batching() && !req.settle_due() {
                super::group::write_back_heads(dev, nq, req.tpb_count());
            }
            return SyncWait { status, step, steps };
        }
        let mut delays = 0u32;
        loop {
            if let ControlFlow::Break(why) = hooks.before_delay(req, dev, nq, delay) {
                if nq.head_batching() {
                    super::group::write_back_heads(dev, nq, req.tpb_count());
                }
                return SyncWait { status: why, step: Step::InFlight, steps };
            }
            delay.delay_us(SYNC_POLL_DELAY_US);
            delays = delays.saturating_add(1);
            // `step_now` is asked after every delay (a hook may count them),
            // but cannot hold the step back past WATCH_STEP_EVERY delays.
            if hooks.step_now(req, dev, nq) || delays >= WATCH_STEP_EVERY {
                break;
            }
        }
    }
}

/// At most this many delays pass between two steps of [`exec_wait_with`]
/// (and so of [`exec_wait_watching`]), whatever its hooks say.
pub const WATCH_STEP_EVERY: u32 = 16;

/// The sync driver with a cheap look between steps (G-SYNC-WATCH): poll `req`
/// until it is done, waiting through `delay`; after each delay it takes a
/// step only when [`ExecRequest::may_progress`] says a step could make
/// progress (some engine not yet COMPLETE has a fresh record: one cached slot
/// read per pending engine while the device works), or when [`WATCH_STEP_EVERY`] delays have
/// passed since the last step, so an error, a timeout or an overflow is seen
/// within that many delays plus a step. Each step is a whole
/// `progress_one_step`; the request, its status and its result are those of
/// [`exec_wait_round_robin`], with fewer steps. `steps` counts the steps.
///
/// Terminates when the request does: at the latest at the core timeout, as
/// long as the platform's clock advances.
pub fn exec_wait_watching<D: ExecDevice + ?Sized, W: Delay + ?Sized>(
    req: &mut ExecRequest,
    dev: &mut D,
    nq: &mut Notifications,
    delay: &mut W,
) -> SyncWait {
    exec_wait_with(req, dev, nq, delay, &mut Watch)
}

/// The hooks of [`exec_wait_watching`]: step after a delay only when
/// [`ExecRequest::may_progress`] says so (the loop itself steps after
/// [`WATCH_STEP_EVERY`] delays in a row whatever a hook says).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Watch;

impl<D: ExecDevice + ?Sized, W: ?Sized> WaitHooks<D, W> for Watch {
    fn step_now(&mut self, req: &ExecRequest, dev: &mut D, nq: &Notifications) -> bool {
        req.may_progress(dev, nq)
    }
}

/// Health of an execution unit (`xu->health_status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum XuHealth {
    /// Accepting and running work.
    Healthy,
    /// A request failed with a 2, or the handoff broke: every request is answered 101.
    FatalShutdown,
}

/// One queued request, as the worker peeks it (`xuq_exec_info_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct XuWork {
    /// The submitter's sequence id.
    pub seq_id: u64,
    /// What to harvest.
    pub config: ExecConfig,
}

/// A failure of the has-work / mark-complete handoff.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum XuSignalError {
    /// The has-work count was already 0 (an underflow: the accounting is corrupt).
    Underflow,
    /// The platform's signal failed (e.g. an eventfd write).
    Signal,
}

/// The worker side of the XU work queue (Linux: the SPSC slots with their
/// `has_work_efd` and per-slot `mark_comp_efd`).
pub trait XuQueue {
    /// `xuq_worker_peek_current_exec`: the request at the head, or `None` when the
    /// queue is empty (`NRT_QUEUE_EMPTY`).
    fn peek_current(&mut self) -> Option<XuWork>;
    /// `read(has_work_efd)`: consume one has-work count posted by submit.
    fn consume_has_work(&mut self) -> Result<(), XuSignalError>;
    /// Publish `status` for `seq_id` and pop the current request, signalling its
    /// mark-complete (`xuq_worker_pop_current_exec`). The request must leave the
    /// queue even when this returns `Err` (a failed signal): otherwise the next
    /// step would see it again and consume a second has-work for it.
    fn pop_current(&mut self, seq_id: u64, status: NrtStatus) -> Result<(), XuSignalError>;
}

/// What one worker step did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XuStep {
    /// The queue was empty.
    Idle,
    /// The current request is still in flight.
    InFlight,
    /// The current request completed with `status` and was reported.
    Completed {
        /// The request's sequence id.
        seq_id: u64,
        /// Its status.
        status: NrtStatus,
    },
}

/// An execution unit: the worker-owned harvest state (`xu->current_exec_state`).
#[derive(Clone, Debug)]
pub struct ExecUnit {
    health: XuHealth,
    initialized: bool,
    current: ExecRequest,
}

impl Default for ExecUnit {
    fn default() -> Self {
        ExecUnit::new()
    }
}

impl ExecUnit {
    /// A healthy unit with no request started.
    pub const fn new() -> ExecUnit {
        ExecUnit {
            health: XuHealth::Healthy,
            initialized: false,
            current: ExecRequest::new(ExecConfig::new(crate::arch::Arch::Sunda, 1, 0)),
        }
    }

    /// The unit's health.
    pub const fn health(&self) -> XuHealth {
        self.health
    }

    /// The harvest state of the current (or last) request.
    pub const fn current(&self) -> &ExecRequest {
        &self.current
    }

    /// `tpb_xu_step`: one step of the worker.
    pub fn step<D: ExecDevice + ?Sized, Q: XuQueue + ?Sized>(
        &mut self,
        dev: &mut D,
        nq: &mut Notifications,
        queue: &mut Q,
    ) -> XuStep {
        let Some(work) = queue.peek_current() else {
            return XuStep::Idle;
        };
        let status = if self.health == XuHealth::FatalShutdown {
            // No harvest runs, but the seed's DONE path counts the completion
            // (`kmetric_update_nds_*`, §6): each core of the request, no latency.
            let s = NrtStatus::ExecUnitUnrecoverable;
            for core in 0..work.config.tpb_count.clamp(1, crate::arch::MAX_CORES as u8) {
                let execution = (core == 0).then_some(s);
                dev.nc_counters(
                    core,
                    &crate::counters::NcUpdate { execution, ..crate::counters::NcUpdate::unharvested(s) },
                );
            }
            s
        } else {
            if !self.initialized {
                // The unit's request is read by nobody before its status is
                // published: its out-info work waits until then (G-SETTLE).
                self.current = ExecRequest::new(work.config.with_settle(Settle::AfterNotice));
                self.initialized = true;
            }
            let out = match self.current.progress_one_step(dev, nq) {
                Step::InFlight => return XuStep::InFlight,
                Step::Error(e) => {
                    self.health = XuHealth::FatalShutdown;
                    emit(dev, ExecEvent::XuFatalShutdown { status: e.status() });
                    e.status()
                }
                Step::Done(s) => s,
            };
            // No HEAD write-back here: the unit's request is always settled
            // after the notice, and its settle below hands the rings back.
            out
        };
        self.initialized = false;
        self.report_complete(dev, queue, work.seq_id, status);
        // The submitter has its status: now the post-processing and the
        // counters (nothing when the unit was already fatal).
        self.current.settle(dev, nq);
        XuStep::Completed { seq_id: work.seq_id, status }
    }

    /// `tpb_xu_base_report_complete` (G-XU-UNDERFLOW): consume one has-work, then publish and pop
    /// (signalling mark-complete). An underflow, which libnrt answers with
    /// `abort()`, is reported and degrades the unit, and the request is still
    /// completed so that its submitter is never left blocked.
    fn report_complete<D: ExecDevice + ?Sized, Q: XuQueue + ?Sized>(
        &mut self,
        dev: &mut D,
        queue: &mut Q,
        seq_id: u64,
        status: NrtStatus,
    ) {
        if queue.consume_has_work().is_err() {
            emit(dev, ExecEvent::XuHasWorkUnderflow);
            self.degrade(dev, NrtStatus::ExecUnitUnrecoverable);
        }
        if queue.pop_current(seq_id, status).is_err() {
            emit(dev, ExecEvent::XuCompleteFailed);
            self.degrade(dev, NrtStatus::ExecUnitUnrecoverable);
        }
    }

    fn degrade<D: ExecDevice + ?Sized>(&mut self, dev: &mut D, status: NrtStatus) {
        if self.health != XuHealth::FatalShutdown {
            self.health = XuHealth::FatalShutdown;
            emit(dev, ExecEvent::XuFatalShutdown { status });
        }
    }
}
