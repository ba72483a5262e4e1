//! A harvest request from C: made, stepped once, waited for, freed.

use std::ffi::c_int;
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use nrt_core::arch::Arch;
use nrt_core::exec::{exec_wait_with, ExecConfig, ExecRequest, ExecState, WaitHooks};
use nrt_core::nq::Notifications;
use nrt_core::NrtStatus;

use super::platform::{c_event, CPlatform};
use super::{c_env, nrt_platform, nrt_rings, session_fail, session_fail_with, NRT_TIMEOUT_FROM_ENV};
use crate::time::{AnyDelay, DelayKind};

/// An opaque harvest request, with its execution timeout and where it came from.
pub struct nrt_request(ExecRequest, crate::config::Budget);

/// A new request for `tpb_count` cores, 1 or 2, of arch type `arch_type`: 2
/// sunda, 3 cayman, 4 mariana. `timeout_s` is the model's timeout in seconds;
/// [`NRT_TIMEOUT_FROM_ENV`] takes `NEURON_RT_EXEC_TIMEOUT`, else the
/// generation's default. Null for an unknown arch type or a bad value of the
/// timeout or log variables. Free with [`nrt_request_free`].
#[no_mangle]
pub extern "C" fn nrt_request_new(arch_type: u32, tpb_count: u8, timeout_s: u32) -> *mut nrt_request {
    let Some(arch) = u8::try_from(arch_type).ok().and_then(Arch::from_arch_type) else {
        session_fail_with(NrtStatus::Invalid, format!("nrt_request_new: unknown arch type {arch_type}"));
        return std::ptr::null_mut();
    };
    let explicit = (timeout_s != NRT_TIMEOUT_FROM_ENV).then_some(timeout_s);
    // The timeout variable is read only when asked for, so that a malformed unused value is not refused.
    let uses = crate::config::Uses { timeout: explicit.is_none(), ..crate::config::Uses::TIMEOUT_AND_LOG };
    let env = match c_env("nrt_request_new", uses) {
        Ok(e) => e,
        Err(m) => {
            session_fail(m);
            return std::ptr::null_mut();
        }
    };
    let budget = crate::config::Budget::resolve_argument(explicit, "timeout_s of nrt_request_new", &env, arch);
    log::info!("nrt_request_new: {budget}");
    Box::into_raw(Box::new(nrt_request(ExecRequest::new(ExecConfig::new(arch, tpb_count, budget.seconds)), budget)))
}

/// Free a request; null is ignored.
///
/// # Safety
/// `req` is null or came from [`nrt_request_new`] and is not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn nrt_request_free(req: *mut nrt_request) {
    if !req.is_null() {
        // SAFETY: the caller passes a pointer from `nrt_request_new`, once.
        drop(unsafe { Box::from_raw(req) });
    }
}

/// `exec_request_progress_one_step`: 1 in flight, 0 done, 2 done with error;
/// the status is written to `*status` when done. -1 for a null argument, a
/// platform without `now_ns`, or rings made before this process was forked.
///
/// # Safety
/// `req`, `platform`, `rings` are live pointers from this API or a valid
/// platform table; `status` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn nrt_progress_one_step(
    req: *mut nrt_request,
    platform: *const nrt_platform,
    rings: *mut nrt_rings,
    status: *mut u32,
) -> c_int {
    // SAFETY: each pointer is null-checked; the caller guarantees liveness.
    let (Some(req), Some(p), Some(rings)) =
        (unsafe { req.as_mut() }, unsafe { platform.as_ref() }, unsafe { rings.as_mut() })
    else {
        return -1;
    };
    if p.now_ns.is_none() {
        return -1;
    }
    if let Err(m) = rings.check("nrt_progress_one_step") {
        session_fail(m);
        return -1;
    }
    let mut dev = CPlatform::new(*p, rings.1.clone());
    let _budget = crate::config::BudgetScope::enter(req.1);
    let step = req.0.progress_one_step(&mut dev, &mut rings.0);
    if let Some(out) = step.status() {
        // SAFETY: null-checked; the caller guarantees it is writable.
        if let Some(s) = unsafe { status.as_mut() } {
            *s = out.code();
        }
    }
    c_int::from(step.code())
}

/// How long `now_ns` may stand still while [`nrt_wait`] polls (G-FFI-CLOCK-STALL).
pub const NRT_WAIT_CLOCK_STALL_NS: u64 = 1_000_000_000;

/// How much longer than the model's budget, on the process's own clock, [`nrt_wait`]
/// polls a core before it stops trusting `now_ns` (G-FFI-CLOCK-BEHIND).
pub const NRT_WAIT_BUDGET_GRACE_NS: u64 = 1_000_000_000;

/// The sync driver: step until done, with delay kind `delay_kind` between
/// steps: 0 libnrt's `usleep(1)`, 1 adaptive. Returns the `NRT_STATUS` and
/// writes the steps taken to `*steps` when not null. `NRT_INVALID` for a null
/// argument or a platform without `now_ns`, `NRT_INVALID_HANDLE` for rings
/// made before this process was forked; 0 steps then.
///
/// The wait is bounded even when the platform's clock is not. It returns
/// `NRT_INVALID` with the request still in flight, and an event saying why,
/// when `now_ns` stands still for 1 s of `CLOCK_MONOTONIC` (`clock_stalled`),
/// or when the cores were polled for the model's timeout plus 1 s and the
/// budget has not run out on `now_ns` (`clock_behind`). As in libnrt, the
/// barrier wait is never fatal: it lasts while `barrier_status` returns 0,
/// warning each time it doubles past 120 s; return -1 from it to abort.
///
/// # Safety
/// As [`nrt_progress_one_step`]; `steps` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn nrt_wait(
    req: *mut nrt_request,
    platform: *const nrt_platform,
    rings: *mut nrt_rings,
    delay_kind: c_int,
    steps: *mut u64,
) -> u32 {
    // SAFETY: each pointer is null-checked; the caller guarantees liveness.
    let (Some(req), Some(p), Some(rings)) =
        (unsafe { req.as_mut() }, unsafe { platform.as_ref() }, unsafe { rings.as_mut() })
    else {
        return NrtStatus::Invalid.code();
    };
    let (status, n) = if p.now_ns.is_none() {
        (NrtStatus::Invalid, 0)
    } else if let Err(m) = rings.check("nrt_wait") {
        session_fail(m);
        (NrtStatus::InvalidHandle, 0)
    } else {
        let mut dev = CPlatform::new(*p, rings.1.clone());
        let _budget = crate::config::BudgetScope::enter(req.1);
        let mut delay = AnyDelay::new(if delay_kind == 0 { DelayKind::Libnrt } else { DelayKind::Adaptive });
        wait_bounded(&mut req.0, &mut dev, &mut rings.0, &mut delay)
    };
    // SAFETY: null-checked; the caller guarantees it is writable.
    if let Some(s) = unsafe { steps.as_mut() } {
        *s = n;
    }
    status.code()
}

/// Core's harvest loop with [`nrt_wait`]'s clock checks between steps; the status and the steps.
fn wait_bounded(
    req: &mut ExecRequest,
    dev: &mut CPlatform,
    rings: &mut Notifications,
    delay: &mut AnyDelay,
) -> (NrtStatus, u64) {
    let budget =
        Duration::from_secs(u64::from(req.config().timeout_s)) + Duration::from_nanos(NRT_WAIT_BUDGET_GRACE_NS);
    let now = Instant::now();
    let mut checks = ClockChecks { budget, steps: 0, before: now, moved_at: now, core_since: None };
    let w = exec_wait_with(req, dev, rings, delay, &mut checks);
    (w.status, w.steps)
}

/// [`nrt_wait`]'s checks of the platform's clock against the process's own.
struct ClockChecks {
    /// The model's budget plus [`NRT_WAIT_BUDGET_GRACE_NS`].
    budget: Duration,
    /// Steps taken, for the events' text.
    steps: u64,
    /// Read just before the last step, so that a clock at real time has always
    /// seen as much of the budget as we have and its own timeout fires first.
    before: Instant,
    /// When `now_ns` last moved, by our clock.
    moved_at: Instant,
    /// When the cores' budget started, by our clock.
    core_since: Option<Instant>,
}

impl WaitHooks<CPlatform, AnyDelay> for ClockChecks {
    fn before_step(&mut self, _: &ExecRequest, _: &mut CPlatform, _: &Notifications) {
        self.before = Instant::now();
        self.steps = self.steps.saturating_add(1);
    }

    fn before_delay(
        &mut self,
        req: &ExecRequest,
        dev: &mut CPlatform,
        _: &Notifications,
        _: &mut AnyDelay,
    ) -> ControlFlow<NrtStatus> {
        let (before, steps) = (self.before, self.steps);
        if dev.clock_moved.replace(false) {
            self.moved_at = before;
        } else if before.duration_since(self.moved_at) >= Duration::from_nanos(NRT_WAIT_CLOCK_STALL_NS) {
            let msg = format!(
                "nrt_wait: the platform's now_ns returned no value past {} ns for {} ms of CLOCK_MONOTONIC ({steps} steps); \
                 no timeout can fire on it, so the wait stops with the request in flight",
                dev.clock_max.get(),
                NRT_WAIT_CLOCK_STALL_NS / 1_000_000
            );
            c_event(dev, "clock_stalled", &msg);
            return ControlFlow::Break(NrtStatus::Invalid);
        }
        match self.core_since {
            None if req.state() == ExecState::WaitCore => self.core_since = Some(Instant::now()),
            Some(t) if before.duration_since(t) >= self.budget => {
                let msg = format!(
                    "nrt_wait: the platform's now_ns advanced too slowly: the cores were polled for {} ms of \
                     CLOCK_MONOTONIC ({steps} steps) and the model's {} s budget has not run out on it \
                     (a clock slower than real time, or not in ns); the wait stops with the request in flight",
                    before.duration_since(t).as_millis(),
                    req.config().timeout_s
                );
                c_event(dev, "clock_behind", &msg);
                return ControlFlow::Break(NrtStatus::Invalid);
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }
}
