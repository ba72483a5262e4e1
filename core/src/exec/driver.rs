//! The two drivers of the one state machine, completion-engine seed §1, §6.
//!
//! - [`exec_wait_round_robin`], the sync driver: `while step() == 1 { delay }`.
//!   It tests `== InFlight` specifically, seed §1 GOTCHA: a driver that treats
//!   every non-zero return as a failure aborts healthy in-flight requests.
//! - [`exec_wait_watching`], the same loop stepping only when a cheap look at
//!   the rings finds a fresh record.
//! - [`exec_wait_with`], the one loop both run, with a caller's [`WaitHooks`].
//! - [`ExecUnit::step`], the execution-unit worker step, `tpb_xu_step`: it
//!   degrades the unit to FATAL_SHUTDOWN on a 2, answers 101 once fatal, and on
//!   completion consumes one has-work, publishes the status and pops the
//!   request, in that order; the post-processing follows, G-SETTLE.

use core::ops::ControlFlow;

use super::{ExecConfig, ExecDevice, ExecEvent, ExecRequest, Settle, Step};
use crate::hal::Delay;
use crate::nq::Notifications;
use crate::status::NrtStatus;
use crate::trace::emit;

/// Microseconds the sync driver waits between steps: `usleep(1)`, seed §1.
pub const SYNC_POLL_DELAY_US: u32 = 1;

/// What the sync driver returns: the status, the final step code and the steps.
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

/// `exec_wait_round_robin`: poll `req` until it is done, waiting through
/// `delay` between steps. Ends at the core timeout at the latest, while the
/// platform's clock advances.
pub fn exec_wait_round_robin<D: ExecDevice + ?Sized, W: Delay + ?Sized>(
    req: &mut ExecRequest,
    dev: &mut D,
    nq: &mut Notifications,
    delay: &mut W,
) -> SyncWait {
    exec_wait_with(req, dev, nq, delay, &mut NoHooks)
}

/// What a caller adds to the harvest loop of [`exec_wait_with`]; every default
/// adds nothing. A hook may look at the device `D` and the delay `W`.
pub trait WaitHooks<D: ?Sized, W: ?Sized> {
    /// Just before each step, the first included.
    fn before_step(&mut self, _req: &ExecRequest, _dev: &mut D, _nq: &Notifications) {}

    /// Just after each step, with its code.
    fn after_step(&mut self, _req: &ExecRequest, _dev: &mut D, _nq: &Notifications, _step: Step) {}

    /// Before each delay, while the request is in flight: go on, or abandon
    /// the wait with a status. An abandoned request stays in flight. Default: go on.
    fn before_delay(
        &mut self,
        _req: &ExecRequest,
        _dev: &mut D,
        _nq: &Notifications,
        _delay: &mut W,
    ) -> ControlFlow<NrtStatus> {
        ControlFlow::Continue(())
    }

    /// After each delay: whether to step now. The loop steps after
    /// [`WATCH_STEP_EVERY`] delays whatever this says. Default: always.
    fn step_now(&mut self, _req: &ExecRequest, _dev: &mut D, _nq: &Notifications) -> bool {
        true
    }
}

/// The hooks that add nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NoHooks;

impl<D: ?Sized, W: ?Sized> WaitHooks<D, W> for NoHooks {}

/// The one harvest loop every sync driver runs: a step, then, while in
/// flight, [`WaitHooks::before_delay`], a delay, and a step when
/// [`WaitHooks::step_now`] says so or after [`WATCH_STEP_EVERY`] delays. At
/// the end batched HEADs are written back once, G-HEAD-BATCH: only records
/// already consumed, so a request left in flight loses nothing.
///
/// An abandoned wait returns [`Step::InFlight`] with the hook's status. A
/// request under [`Settle::AfterNotice`] comes back DONE with
/// [`ExecRequest::settle_due`]: the caller settles it, G-SETTLE.
///
/// Allocates nothing and blocks only in `delay`. Ends when the request does or
/// the hooks abandon it.
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
            // `step_now` cannot hold the step back past WATCH_STEP_EVERY delays.
            if hooks.step_now(req, dev, nq) || delays >= WATCH_STEP_EVERY {
                break;
            }
        }
    }
}

/// At most this many delays pass between two steps of [`exec_wait_with`].
pub const WATCH_STEP_EVERY: u32 = 16;

/// The sync driver with a cheap look between steps, G-SYNC-WATCH: after each
/// delay it steps only when [`ExecRequest::may_progress`] finds a fresh record
/// or [`WATCH_STEP_EVERY`] delays have passed, so a fault or timeout is still
/// seen. The result is [`exec_wait_round_robin`]'s, with fewer steps.
pub fn exec_wait_watching<D: ExecDevice + ?Sized, W: Delay + ?Sized>(
    req: &mut ExecRequest,
    dev: &mut D,
    nq: &mut Notifications,
    delay: &mut W,
) -> SyncWait {
    exec_wait_with(req, dev, nq, delay, &mut Watch)
}

/// The hooks of [`exec_wait_watching`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Watch;

impl<D: ExecDevice + ?Sized, W: ?Sized> WaitHooks<D, W> for Watch {
    fn step_now(&mut self, req: &ExecRequest, dev: &mut D, nq: &Notifications) -> bool {
        req.may_progress(dev, nq)
    }
}

/// Health of an execution unit, `xu->health_status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum XuHealth {
    /// Accepting and running work.
    Healthy,
    /// A request failed with a 2, or the handoff broke: every request is answered 101.
    FatalShutdown,
}

/// One queued request as the worker peeks it, `xuq_exec_info_t`.
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
    /// The has-work count was already 0: the accounting is corrupt.
    Underflow,
    /// The platform's signal failed.
    Signal,
}

/// The worker side of the XU work queue.
pub trait XuQueue {
    /// `xuq_worker_peek_current_exec`: the request at the head, if any.
    fn peek_current(&mut self) -> Option<XuWork>;
    /// `read(has_work_efd)`: consume one has-work count posted by submit.
    fn consume_has_work(&mut self) -> Result<(), XuSignalError>;
    /// `xuq_worker_pop_current_exec`: publish `status` for `seq_id`, pop the
    /// request and signal its mark-complete. The request must leave the queue
    /// even on `Err`, or the next step would consume a second has-work for it.
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

/// An execution unit: the worker-owned harvest state, `xu->current_exec_state`.
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

    /// The harvest state of the current or last request.
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
            // No harvest runs, but the seed's DONE path counts the completion, §6.
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
                // published: its out-info work waits until then, G-SETTLE.
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
            // No HEAD write-back here: the settle below hands the rings back.
            out
        };
        self.initialized = false;
        self.report_complete(dev, queue, work.seq_id, status);
        // The submitter has its status: now the post-processing and counters.
        self.current.settle(dev, nq);
        XuStep::Completed { seq_id: work.seq_id, status }
    }

    /// `tpb_xu_base_report_complete`: consume one has-work, then publish and
    /// pop. An underflow, where libnrt aborts, degrades the unit and still
    /// completes the request, G-XU-UNDERFLOW.
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
