//! The C ABI of the poller thread, `include/nrt_poller.h`.
//!
//! ```c
//! nrt_poller *p = nrt_poller_new(platforms, rings, n_lanes, -1);  /* -1: not pinned */
//! nrt_ticket *t = nrt_poller_submit(p, lane, 2, 2, 5);             /* sunda, 2 cores, 5 s */
//! uint32_t status;
//! int rc = nrt_ticket_wait(t, &status);                            /* 0 or 2, as nrt_wait */
//! nrt_ticket_free(t);
//! nrt_poller_free(p);                                              /* in-flight ones finish */
//! ```
//!
//! Only the poller thread calls a lane's callbacks. A failure leaves its reason
//! for [`nrt_poller_last_error`] on the calling thread, never through a lane's
//! callbacks. From a callback a wait is refused and a free deferred (G-POLLER-REENTRY).

#![allow(unsafe_code)]
#![allow(non_camel_case_types)]

use std::cell::RefCell;
use std::ffi::{c_char, c_int, CString};

use nrt_core::arch::Arch;
use nrt_core::exec::{ExecConfig, Lanes};
use nrt_core::nq::Notifications;

use crate::ffi::{nrt_platform, nrt_rings, CPlatform, NRT_TIMEOUT_FROM_ENV};
use crate::poller::{Poller, PollerConfig, SubmitError, Ticket, WaitPolicy, WaitRefused, POLLER_CAPACITY};

/// A lane's platform, moved to the poller thread.
struct SendPlatform(CPlatform);

// SAFETY: the table is C function pointers and a context pointer, which
// `nrt_poller_new`'s contract lets the poller thread call, one call at a time.
unsafe impl Send for SendPlatform {}

struct CLanes(Vec<(SendPlatform, Notifications)>);

impl Lanes for CLanes {
    type Dev = CPlatform;
    fn lane(&mut self, lane: u16) -> Option<(&mut CPlatform, &mut Notifications)> {
        self.0.get_mut(usize::from(lane)).map(|(p, n)| (&mut p.0, n))
    }
}

/// A poller thread and its lanes; opaque.
pub struct nrt_poller {
    poller: Poller<CLanes>,
    /// Its configuration, with the timeout variable as the constructor read it.
    cfg: PollerConfig,
}

/// A submitted request; opaque.
pub struct nrt_ticket {
    ticket: Ticket,
    /// The request's lane and timeout, named once when a wait returns a timeout.
    lane: u16,
    budget: crate::config::Budget,
    told: std::sync::atomic::AtomicBool,
}

thread_local! {
    /// The reason of the calling thread's latest failed `nrt_poller_*` call.
    static LAST_ERROR: RefCell<Option<CString>> = const { RefCell::new(None) };
}

/// Record `msg` as this thread's last error.
fn fail(msg: &str) {
    let c = CString::new(msg.replace('\0', "?")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = Some(c));
}

/// Why the calling thread's latest `nrt_poller_new`, `nrt_poller_submit`,
/// `nrt_ticket_wait`, `nrt_ticket_poll` or `nrt_rings_set_head_batching`
/// failed, or null when none did. The library's string, valid until the next
/// failing call on the thread.
#[no_mangle]
pub extern "C" fn nrt_poller_last_error() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ref().map_or(std::ptr::null(), |c| c.as_ptr()))
}

/// The poller spins between passes, on a core of its own.
pub const NRT_POLLER_SPIN: u32 = 0;
/// The poller sleeps until shortly before its next pass, then spins; the
/// default without a pinned CPU.
pub const NRT_POLLER_HYBRID: u32 = 1;
/// The poller sleeps between passes.
pub const NRT_POLLER_SLEEP: u32 = 2;

/// Start a poller thread over `n_lanes` lanes: lane `i` is `platforms[i]` with
/// a copy of `*rings[i]`, counting where those rings count. `cpu` >= 0 pins the
/// thread to that CPU and makes it spin between passes; `cpu` < 0 leaves it
/// unpinned and hybrid. Returns null for a null array, 0 or more than 65535
/// lanes, a lane without `read_slot` or `now_ns`, a null `rings[i]`, rings made
/// before a fork, a thread, eventfd or pin the OS refused, or a bad value of
/// `NEURON_RT_EXEC_TIMEOUT`, `NEURON_RT_POLL_SLICE_US` or
/// `NEURON_RT_LOG_LEVEL`. The lanes fix the cores, so their variables are not
/// read. Free with [`nrt_poller_free`].
///
/// # Safety
/// `platforms` points to `n_lanes` valid tables whose callbacks may be called
/// from the poller thread until [`nrt_poller_free`] returns; `rings` points to
/// `n_lanes` pointers from `nrt_rings_new` (read once, here).
#[no_mangle]
pub unsafe extern "C" fn nrt_poller_new(
    platforms: *const nrt_platform,
    rings: *const *const nrt_rings,
    n_lanes: u32,
    cpu: i32,
) -> *mut nrt_poller {
    let policy = if cpu >= 0 { NRT_POLLER_SPIN } else { NRT_POLLER_HYBRID };
    // SAFETY: the same contract, passed on.
    unsafe { new_poller("nrt_poller_new", platforms, rings, n_lanes, cpu, policy, 0) }
}

/// As [`nrt_poller_new`], with `policy` one of `NRT_POLLER_SPIN`,
/// `NRT_POLLER_HYBRID` or `NRT_POLLER_SLEEP`; null for another.
///
/// # Safety
/// As [`nrt_poller_new`].
#[no_mangle]
pub unsafe extern "C" fn nrt_poller_new_with_policy(
    platforms: *const nrt_platform,
    rings: *const *const nrt_rings,
    n_lanes: u32,
    cpu: i32,
    policy: u32,
) -> *mut nrt_poller {
    // SAFETY: the same contract, passed on.
    unsafe { new_poller("nrt_poller_new_with_policy", platforms, rings, n_lanes, cpu, policy, 0) }
}

/// As [`nrt_poller_new_with_policy`], with a hybrid poller's slice: `slice_us`
/// from one pass to the next, 20 to 1000, or 0 for `NEURON_RT_POLL_SLICE_US`,
/// else the default. A longer slice costs fewer wake-ups and notices later.
/// Null for a slice out of range.
///
/// # Safety
/// As [`nrt_poller_new`].
#[no_mangle]
pub unsafe extern "C" fn nrt_poller_new_with_slice(
    platforms: *const nrt_platform,
    rings: *const *const nrt_rings,
    n_lanes: u32,
    cpu: i32,
    policy: u32,
    slice_us: u32,
) -> *mut nrt_poller {
    // SAFETY: the same contract, passed on.
    unsafe { new_poller("nrt_poller_new_with_slice", platforms, rings, n_lanes, cpu, policy, slice_us) }
}

/// # Safety
/// As [`nrt_poller_new`].
unsafe fn new_poller(
    call: &str,
    platforms: *const nrt_platform,
    rings: *const *const nrt_rings,
    n_lanes: u32,
    cpu: i32,
    policy: u32,
    slice_us: u32,
) -> *mut nrt_poller {
    let env = match crate::ffi::c_env(call, crate::config::Uses::POLLER) {
        Ok(e) => e,
        Err(m) => {
            fail(&m);
            return std::ptr::null_mut();
        }
    };
    let Some(policy) = WaitPolicy::from_code(policy) else {
        fail(&format!("{call}: policy {policy}: unknown (0 spin, 1 hybrid, 2 sleep)"));
        return std::ptr::null_mut();
    };
    let (lo, hi) = (crate::config::MIN_POLL_SLICE_US, crate::config::MAX_POLL_SLICE_US);
    if slice_us != 0 && !(lo..=hi).contains(&slice_us) {
        fail(&format!("{call}: slice_us {slice_us}: need {lo} to {hi} microseconds, or 0 for the default"));
        return std::ptr::null_mut();
    }
    if platforms.is_null() || rings.is_null() || n_lanes == 0 || n_lanes > u32::from(u16::MAX) {
        fail(&format!("{call}: {n_lanes} lanes at {platforms:?} with rings at {rings:?}: need non-null arrays of 1 to 65535 lanes"));
        return std::ptr::null_mut();
    }
    // SAFETY: the caller passes `n_lanes` valid tables and ring pointers.
    let (tables, ring_ptrs) = unsafe {
        (std::slice::from_raw_parts(platforms, n_lanes as usize), std::slice::from_raw_parts(rings, n_lanes as usize))
    };
    let mut lanes = Vec::with_capacity(tables.len());
    for (i, (t, r)) in tables.iter().zip(ring_ptrs).enumerate() {
        if t.read_slot.is_none() || t.now_ns.is_none() {
            fail(&format!("{call}: lane {i}: the platform has no read_slot or no now_ns"));
            return std::ptr::null_mut();
        }
        // SAFETY: null-checked; a live pointer from `nrt_rings_new`.
        let Some(r) = (unsafe { r.as_ref() }) else {
            fail(&format!("{call}: lane {i}: rings is null"));
            return std::ptr::null_mut();
        };
        if let Err(m) = r.check(&format!("{call}: lane {i}")) {
            fail(&m);
            return std::ptr::null_mut();
        }
        lanes.push((SendPlatform(CPlatform::new(*t, r.1.clone())), r.0.clone()));
    }
    let mut cfg = PollerConfig { cpu: usize::try_from(cpu).ok(), policy, ..PollerConfig::from_rt_env(&env) };
    if slice_us != 0 {
        cfg.hybrid_slice = Some(std::time::Duration::from_micros(u64::from(slice_us)));
    }
    match Poller::spawn(CLanes(lanes), cfg) {
        Ok(poller) => Box::into_raw(Box::new(nrt_poller { poller, cfg })),
        Err(e) => {
            fail(&format!("{call}: {e}"));
            std::ptr::null_mut()
        }
    }
}

/// Submit a request on `lane` for `tpb_count` cores of arch type `arch_type`
/// with the model's timeout in seconds; `NRT_TIMEOUT_FROM_ENV` takes the
/// variable as the constructor read it. A request for a busy lane waits until
/// it is free. Null for a null poller, an unknown arch type, a poller shutting
/// down, or one made before a fork. It may be called from a lane's callback.
/// Free the ticket with [`nrt_ticket_free`].
///
/// # Safety
/// `p` is null or a live pointer from [`nrt_poller_new`].
#[no_mangle]
pub unsafe extern "C" fn nrt_poller_submit(
    p: *mut nrt_poller,
    lane: u16,
    arch_type: u32,
    tpb_count: u8,
    timeout_s: u32,
) -> *mut nrt_ticket {
    // SAFETY: null-checked; live per the contract.
    let Some(p) = (unsafe { p.as_ref() }) else {
        fail(&format!("nrt_poller_submit: lane {lane}: the poller is NULL"));
        return std::ptr::null_mut();
    };
    let Some(arch) = u8::try_from(arch_type).ok().and_then(Arch::from_arch_type) else {
        fail(&format!("nrt_poller_submit: lane {lane}: unknown arch type {arch_type}"));
        return std::ptr::null_mut();
    };
    let explicit = (timeout_s != NRT_TIMEOUT_FROM_ENV).then_some(timeout_s);
    let budget = p.cfg.budget(explicit, "timeout_s of nrt_poller_submit", arch);
    log::info!("nrt_poller_submit: lane {lane}: {budget}");
    match p.poller.submit_budgeted(lane, ExecConfig::new(arch, tpb_count, budget.seconds), budget) {
        Ok(ticket) => Box::into_raw(Box::new(nrt_ticket {
            ticket,
            lane,
            budget,
            told: std::sync::atomic::AtomicBool::new(false),
        })),
        Err(SubmitError::Closed) => {
            fail(&format!("nrt_poller_submit: lane {lane}: the poller is shutting down"));
            std::ptr::null_mut()
        }
        Err(SubmitError::Forked(f)) => {
            fail(&format!("nrt_poller_submit: lane {lane}: {f}"));
            std::ptr::null_mut()
        }
    }
}

/// Wait for the request: spin briefly, then sleep until the poller wakes this
/// thread. Returns the one-step code, 0 or 2, with the status in `*status`
/// when not null, 101 if the poller thread died. -1 for a null ticket, and -1
/// at once from a lane's callback of the ticket's poller or in a forked child.
///
/// # Safety
/// `t` is null or a live pointer from [`nrt_poller_submit`]; `status` is null
/// or writable.
#[no_mangle]
pub unsafe extern "C" fn nrt_ticket_wait(t: *const nrt_ticket, status: *mut u32) -> c_int {
    // SAFETY: null-checked; live per the contract.
    let Some(t) = (unsafe { t.as_ref() }) else { return -1 };
    if let Err(e) = t.ticket.waitable() {
        fail(&format!("nrt_ticket_wait: lane {}: {e}", t.lane));
        return -1;
    }
    let step = t.ticket.wait();
    // SAFETY: `status` is null or writable per the contract.
    unsafe { finished(t, "nrt_ticket_wait", step, status) }
}

/// The end of a ticket's request, seen by `call`: logs a timeout once per
/// ticket, writes the status to `*status` and returns the one-step code.
///
/// # Safety
/// `status` is null or writable.
unsafe fn finished(t: &nrt_ticket, call: &str, step: nrt_core::exec::Step, status: *mut u32) -> c_int {
    // A ticket answers only finished steps, which carry a status.
    let st = step.status().unwrap_or(nrt_core::NrtStatus::Success);
    if matches!(st, nrt_core::NrtStatus::Timeout | nrt_core::NrtStatus::ExecSwNqOverflow)
        && !t.told.swap(true, std::sync::atomic::Ordering::Relaxed)
    {
        log::error!(
            "{call}: lane {}: the harvest ended at its {}: status {} {}",
            t.lane,
            t.budget,
            st.code(),
            st.name()
        );
    }
    // SAFETY: null or writable per this function's contract.
    if let Some(s) = unsafe { status.as_mut() } {
        *s = st.code();
    }
    c_int::from(step.code())
}

/// Look without waiting: 1 while in flight, else as [`nrt_ticket_wait`]. -1
/// for a null ticket or in a forked child. It may be called from a lane's callback.
///
/// # Safety
/// As [`nrt_ticket_wait`].
#[no_mangle]
pub unsafe extern "C" fn nrt_ticket_poll(t: *const nrt_ticket, status: *mut u32) -> c_int {
    // SAFETY: null-checked; live per the contract.
    let Some(t) = (unsafe { t.as_ref() }) else { return -1 };
    if let Err(WaitRefused::Forked(f)) = t.ticket.waitable() {
        fail(&format!("nrt_ticket_poll: lane {}: {f}", t.lane));
        return -1;
    }
    let Some(step) = t.ticket.poll() else { return 1 };
    // SAFETY: `status` is null or writable per the contract.
    unsafe { finished(t, "nrt_ticket_poll", step, status) }
}

/// Free a ticket; null is ignored. The request itself runs on.
///
/// # Safety
/// `t` is null or came from [`nrt_poller_submit`] and is not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn nrt_ticket_free(t: *mut nrt_ticket) {
    if !t.is_null() {
        // SAFETY: the caller passes a pointer from `nrt_poller_submit`, once.
        drop(unsafe { Box::from_raw(t) });
    }
}

/// With `on` non-zero, batch HEAD write-backs on `rings`: an INFER_STATUS
/// ring's HEAD is written when half of it is read, or its engine or request
/// completes (G-HEAD-BATCH). With 0, the default, HEAD follows every sweep
/// that read something, as libnrt does. Applies to pollers made after this
/// call. Returns 0, or -1 for null or rings made before a fork.
///
/// # Safety
/// `rings` is null or a live pointer from `nrt_rings_new`.
#[no_mangle]
pub unsafe extern "C" fn nrt_rings_set_head_batching(rings: *mut nrt_rings, on: c_int) -> c_int {
    // SAFETY: null-checked; the caller guarantees it is live and unaliased.
    let Some(r) = (unsafe { rings.as_mut() }) else { return -1 };
    if let Err(m) = r.check("nrt_rings_set_head_batching") {
        fail(&m);
        return -1;
    }
    r.0.set_head_batching(on != 0);
    0
}

/// Requests one poller runs at once; more wait for a slot.
#[no_mangle]
pub extern "C" fn nrt_poller_capacity() -> u32 {
    POLLER_CAPACITY as u32
}

/// Stop the poller; null is ignored. Requests in flight finish within their
/// timeout plus 1 s, those not started are answered `NRT_CLOSED`, then the
/// thread ends. Tickets stay valid.
///
/// From a lane's callback it does not wait: the thread ends by itself once
/// the callback returns and the requests in flight are done, and may call the
/// lane tables until then. In a forked child it releases nothing of the parent's.
///
/// # Safety
/// `p` is null or came from [`nrt_poller_new`] and is not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn nrt_poller_free(p: *mut nrt_poller) {
    if !p.is_null() {
        // SAFETY: the caller passes a pointer from `nrt_poller_new`, once.
        drop(unsafe { Box::from_raw(p) });
    }
}
