//! `nrt_wait` through the C ABI with a careless platform table: no clock, a
//! clock that never advances, a clock far slower than real time. Each returns
//! (`NRT_INVALID`, with an event naming the call and the reason) instead of
//! polling forever.
//!
//! Each case runs on a thread behind a generous guard, so a regression shows as
//! a failed test, not as a test binary that never ends.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use nrt_linux::ffi::{
    nrt_platform, nrt_progress_one_step, nrt_request_free, nrt_request_new, nrt_rings_bind, nrt_rings_free,
    nrt_rings_new, nrt_wait,
};

/// The platform of a device that never writes a record: empty rings, the
/// barrier done, no fault.
unsafe extern "C" fn read_slot(_: *mut c_void, _: u8, _: u8, _: u32, out: *mut u8) -> c_int {
    // SAFETY: the caller passes a 16-byte buffer.
    unsafe { out.write_bytes(0, 16) };
    0
}
unsafe extern "C" fn write_head(_: *mut c_void, _: u8, _: u8, _: u32) -> c_int {
    0
}
unsafe extern "C" fn read_cause(_: *mut c_void, _: u8, _: u32, _: u32, out: *mut u32) -> c_int {
    // SAFETY: the caller passes a writable u32.
    unsafe { out.write(0) };
    0
}
unsafe extern "C" fn barrier_done(_: *mut c_void, _: u8, _: *mut u32) -> c_int {
    1
}

static EVENTS: std::sync::Mutex<Vec<(String, String)>> = std::sync::Mutex::new(Vec::new());

unsafe extern "C" fn on_event(_: *mut c_void, kind: *const c_char, msg: *const c_char) {
    // SAFETY: both NUL-terminated for the call.
    let (k, m) = unsafe { (CStr::from_ptr(kind), CStr::from_ptr(msg)) };
    EVENTS.lock().unwrap().push((k.to_string_lossy().into_owned(), m.to_string_lossy().into_owned()));
}

/// Always 42 ns: a clock that never advances.
unsafe extern "C" fn stuck_clock(_: *mut c_void) -> u64 {
    42
}

static SLOW: AtomicU64 = AtomicU64::new(0);
/// One nanosecond per read: advancing, but about 10^4 times slower than real
/// time (a 1 s model budget would take hours of polling).
unsafe extern "C" fn slow_clock(_: *mut c_void) -> u64 {
    SLOW.fetch_add(1, Ordering::Relaxed) + 1
}

fn platform(now_ns: Option<unsafe extern "C" fn(*mut c_void) -> u64>) -> nrt_platform {
    nrt_platform {
        ctx: std::ptr::null_mut(),
        read_slot: Some(read_slot),
        write_head: Some(write_head),
        read_cause: Some(read_cause),
        now_ns,
        barrier_status: Some(barrier_done),
        network_status: None,
        hbm_uncorrectable: None,
        dma_aborted: None,
        event: Some(on_event),
        tensor_completed: None,
    }
}

/// One case: a 1-core sunda request with a 1 s budget over the empty rings.
/// Returns (status, steps, one-step code afterwards, wall time).
fn wait_with(p: &nrt_platform) -> (u32, u64, c_int, Duration) {
    let rings = nrt_rings_new();
    for nq in [2u8, 4, 5, 6, 7, 8] {
        // SAFETY: `rings` is live.
        assert_eq!(unsafe { nrt_rings_bind(rings, 0, nq, 1024) }, 0);
    }
    let req = nrt_request_new(2, 1, 1);
    assert!(!req.is_null());
    let mut steps = u64::MAX;
    let t = Instant::now();
    // SAFETY: live pointers from this API; `steps` is writable.
    let status = unsafe { nrt_wait(req, p, rings, 1, &mut steps) };
    let wall = t.elapsed();
    let mut st = 0u32;
    // SAFETY: as above.
    let after = unsafe { nrt_progress_one_step(req, p, rings, &mut st) };
    // SAFETY: each freed once.
    unsafe {
        nrt_request_free(req);
        nrt_rings_free(rings);
    }
    (status, steps, after, wall)
}

/// Run `case` on a thread; a regression that polls forever fails the test after
/// `HANG_GUARD` (the thread is left behind, and ends with the test binary).
fn guarded(case: fn() -> (u32, u64, c_int, Duration)) -> (u32, u64, c_int, Duration) {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(case());
    });
    rx.recv_timeout(HANG_GUARD)
        .unwrap_or_else(|_| panic!("nrt_wait did not return within {HANG_GUARD:?} (a hang guard, not a speed bound)"))
}

/// Generous: the bounds under test are about 1 s and 2 s.
const HANG_GUARD: Duration = Duration::from_secs(60);

fn event(kind: &str) -> Option<String> {
    EVENTS.lock().unwrap().iter().find(|(k, _)| k == kind).map(|(_, m)| m.clone())
}

#[test]
fn a_null_clock_is_refused_before_any_step() {
    let (status, steps, after, _) = guarded(|| wait_with(&platform(None)));
    assert_eq!(status, 2, "NRT_INVALID");
    assert_eq!(steps, 0, "refused before any step");
    assert_eq!(after, -1, "nrt_progress_one_step refuses a null clock too");
}

#[test]
fn a_clock_that_never_advances_ends_the_wait() {
    let (status, steps, after, _) = guarded(|| wait_with(&platform(Some(stuck_clock))));
    assert_eq!(status, 2, "NRT_INVALID");
    assert!(steps > 1, "it polled before giving up ({steps} steps)");
    assert_eq!(after, 1, "the request is left in flight, not finished with an invented status");
    let msg = event("clock_stalled").expect("an event says why");
    assert!(msg.starts_with("nrt_wait: the platform's now_ns"), "{msg}");
    assert!(msg.contains("returned no value past 42 ns"), "{msg}");
}

#[test]
fn a_clock_far_slower_than_real_time_ends_the_wait() {
    let (status, steps, after, _) = guarded(|| wait_with(&platform(Some(slow_clock))));
    assert_eq!(status, 2, "NRT_INVALID");
    assert!(steps > 1, "{steps}");
    assert_eq!(after, 1, "still in flight");
    let msg = event("clock_behind").expect("an event says why");
    assert!(msg.starts_with("nrt_wait: the platform's now_ns"), "{msg}");
    assert!(msg.contains("1 s budget"), "{msg}");
}
