//! The C ABI of the poller thread (`include/nrt_poller.h`): one
//! thread harvests many requests, each on its lane (a platform table and its
//! ring state), and hands each completion to its waiter.
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
//! The poller calls each lane's callbacks from its own thread, and only from
//! it: a platform table given here must be safe to call from a thread other
//! than the caller's, one call at a time. The ring state is copied when the
//! poller is made (with where its requests are counted:
//! `nrt_rings_count_into`); the caller's `nrt_rings` are not updated by its
//! harvest.
//!
//! Each failure returns null or -1 and leaves one line naming the call, the
//! argument and the reason for [`nrt_poller_last_error`] on the calling
//! thread; no failure is reported through a lane's callbacks (the poller
//! thread may be inside the same table at that moment), and nothing here aborts.
//!
//! From a lane's callback (the poller thread), a submission and a poll work
//! as anywhere, a wait is refused (-1: it would wait on itself) and a free is
//! deferred: the thread stops taking submissions and ends by itself once the
//! callback returns and the requests in flight are done (G-POLLER-REENTRY).
//! In a child forked after the poller, its tickets or the rings were made,
//! every call on them is refused at once naming the fork, and a free
//! forgets them (G-FORK).

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

// SAFETY: the platform table is C function pointers and a context pointer;
// `nrt_poller_new`'s contract is that the caller's callbacks may be called from
// the poller thread (one call at a time: only that thread calls them).
unsafe impl Send for SendPlatform {}

struct CLanes(Vec<(SendPlatform, Notifications)>);

impl Lanes for CLanes {
    type Dev = CPlatform;
    fn lane(&mut self, lane: u16) -> Option<(&mut CPlatform, &mut Notifications)> {
        self.0.get_mut(usize::from(lane)).map(|(p, n)| (&mut p.0, n))
    }
}

/// A poller thread and its lanes (opaque).
pub struct nrt_poller {
    poller: Poller<CLanes>,
    /// Its configuration, with `NEURON_RT_EXEC_TIMEOUT` as the constructor
    /// read it, for a submission that asks for the environment's timeout.
    cfg: PollerConfig,
}

/// A submitted request (opaque).
pub struct nrt_ticket {
    ticket: Ticket,
    /// The request's lane and execution timeout with its source, named once
    /// when a wait returns a timeout.
    lane: u16,
    budget: crate::config::Budget,
    told: std::sync::atomic::AtomicBool,
}

thread_local! {
    /// The reason of the calling thread's latest failed `nrt_poller_*` call.
    static LAST_ERROR: RefCell<Option<CString>> = const { RefCell::new(None) };
}

/// Record `msg` as this thread's last error (never through a lane's callbacks).
fn fail(msg: &str) {
    let c = CString::new(msg.replace('\0', "?")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = Some(c));
}

/// The reason of the calling thread's latest failed `nrt_poller_new`,
/// `nrt_poller_submit`, `nrt_ticket_wait`, `nrt_ticket_poll` or
/// `nrt_rings_set_head_batching` (the call, the argument and why), or null
/// when none failed on this thread. The string belongs to the library and stays valid
/// until the next failing `nrt_poller_*` call on the same thread; copy it to
/// keep it.
#[no_mangle]
pub extern "C" fn nrt_poller_last_error() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ref().map_or(std::ptr::null(), |c| c.as_ptr()))
}

/// The poller spins between passes (a core of its own): `NRT_POLLER_SPIN`.
pub const NRT_POLLER_SPIN: u32 = 0;
/// The poller sleeps until shortly before the earliest due completion, then
/// spins through that lead (the default without a pinned CPU): `NRT_POLLER_HYBRID`.
pub const NRT_POLLER_HYBRID: u32 = 1;
/// The poller sleeps between passes: `NRT_POLLER_SLEEP`.
pub const NRT_POLLER_SLEEP: u32 = 2;

/// Start a poller thread over `n_lanes` lanes: lane `i` is `platforms[i]` with
/// a copy of `*rings[i]` (its requests counted where those rings count,
/// `nrt_rings_count_into`, when that call came before this one; the copy
/// keeps their datastore until the poller is freed). `cpu` >= 0 pins the
/// thread to that CPU and makes it spin between passes (`NRT_POLLER_SPIN`); `cpu` < 0 leaves it unpinned and
/// hybrid (`NRT_POLLER_HYBRID`). [`nrt_poller_new_with_policy`] chooses the
/// policy. Returns null
/// (the reason for [`nrt_poller_last_error`]) for a null array, 0 lanes or
/// more than 65535, a lane without `read_slot` or `now_ns` (its timeout could
/// never fire), a null `rings[i]`, or a thread, eventfd or pin that the OS
/// refused, rings made before this process was forked from their maker, or a
/// bad value of a runtime variable the poller reads (the
/// variable, the value and what is accepted): `NEURON_RT_EXEC_TIMEOUT` (kept
/// for a submission with `NRT_TIMEOUT_FROM_ENV`), this library's own
/// `NEURON_RT_POLL_SLICE_US` (a hybrid poller's slice, 20 to 1000 us; not
/// an SDK variable) and `NEURON_RT_LOG_LEVEL[_<component>]` (what the
/// library logs to standard error). The core variables (`NEURON_RT_VISIBLE_CORES`,
/// `NEURON_RT_NUM_CORES`) are not read: the caller's lanes fix the cores.
/// Free with [`nrt_poller_free`].
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

/// As [`nrt_poller_new`], with the wait between passes given: `policy` is
/// `NRT_POLLER_SPIN` (0), `NRT_POLLER_HYBRID` (1) or `NRT_POLLER_SLEEP` (2).
/// Also returns null for another policy.
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

/// As [`nrt_poller_new_with_policy`], with a hybrid poller's slice given:
/// `slice_us` microseconds from one pass to the next while requests are due
/// (20 to 1000; a longer slice costs fewer wake-ups and notices later), or
/// 0 for `NEURON_RT_POLL_SLICE_US`, else the default. The argument beats
/// the variable. Also returns null for a slice of 1 to 19 or past 1000.
/// Only a hybrid poller uses it.
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
/// (2 sunda, 3 cayman, 4 mariana) with the model's timeout in seconds
/// (`NRT_TIMEOUT_FROM_ENV`: `NEURON_RT_EXEC_TIMEOUT` as the poller's
/// constructor read it, else the generation's documented default). A
/// request for a busy lane waits until the lane is free. Returns null (the
/// reason for [`nrt_poller_last_error`], on this thread: no lane's callback
/// is called here) for a null poller, an unknown arch type, a poller
/// shutting down, or a poller made before this process was forked from its
/// maker. At most `POLLER_CAPACITY` requests run at once; more wait. It may
/// be called from a lane's callback. Free the ticket with [`nrt_ticket_free`].
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
/// (when not null; 101 if the poller thread died); -1 for a null ticket, and
/// -1 at once, `*status` untouched, the reason for [`nrt_poller_last_error`],
/// from a lane's callback of the ticket's poller (the wait would wait on
/// the poller thread itself) or in a child forked after the submission.
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

/// The end of a ticket's request, seen by `call`: the first caller that sees
/// it end at its execution timeout (or a software NQ overflow) logs the line
/// naming the budget and its source, once per ticket; the status to
/// `*status` (when not null); the one-step code returned.
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

/// Look without waiting: 1 while in flight, else 0 or 2 with the status in
/// `*status` (when not null; 101 if the poller thread died); -1 for a null
/// ticket, and -1, the reason for [`nrt_poller_last_error`], in a child
/// forked after the submission. It may be called from a lane's callback.
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

/// Free a ticket (null is ignored); the request itself runs on.
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

/// Batch HEAD write-backs on `rings` (`on` != 0) or write HEAD after every
/// sweep that read something (0, the default, libnrt's drain): an INFER_STATUS
/// ring's HEAD is then written when half the ring is read, when its engine
/// completes, or when the request completes (G-HEAD-BATCH). Applies to the
/// sync wait and the one-step harvest on these rings, and to the copies a
/// poller made from them after this call. Returns 0, or -1 for null, or for
/// rings made before this process was forked from their maker (the reason
/// for [`nrt_poller_last_error`]).
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

/// Stop the poller (null is ignored): requests in flight finish (bounded by
/// their timeout plus 1 s of this process's clock), requests not started are
/// answered `NRT_CLOSED` (14), then the thread ends. Tickets stay valid.
///
/// From a lane's callback (the poller thread) it does not wait for the
/// thread, which cannot end while inside the callback: the poller is freed
/// and takes no more submissions, and its thread ends by itself once the
/// callback returns and the requests in flight are done as above; its lane
/// tables may be called until then (a caller that must know when they no
/// longer are frees the poller from another thread). In a child forked after `nrt_poller_new`
/// it releases nothing: the poller is the parent's, its memory here is
/// forgotten.
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
