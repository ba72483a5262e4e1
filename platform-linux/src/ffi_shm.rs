//! The C ABI of the shared-memory device, `include/nrt_shm.h`: attach to the
//! device `nrt-sim serve --shm PATH` plays in another process and harvest
//! inferences through this binding's mappings and sync wait.
//!
//! Every failure leaves its reason for [`nrt_shm_last_error`] on the calling thread.

#![allow(unsafe_code)]
#![allow(non_camel_case_types)]

use std::cell::RefCell;
use std::ffi::{c_char, c_int, CStr, CString, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::Duration;

use crate::harvest::Harvester;
use crate::time::DelayKind;

/// An attached shared-memory device.
pub struct nrt_shm {
    h: Harvester,
    /// `NEURON_RT_EXEC_TIMEOUT` as [`nrt_shm_attach`] read it, or why it is
    /// refused; only a harvest that takes its timeout from it refuses it.
    env_timeout_s: Result<Option<u32>, crate::config::EnvError>,
}

thread_local! {
    /// The reason of the calling thread's latest failed `nrt_shm_*` call.
    static LAST_ERROR: RefCell<Option<CString>> = const { RefCell::new(None) };
}

/// Record `message` as this thread's last error, and print it on standard error.
fn fail(message: String) {
    eprintln!("{message}");
    // An interior NUL cannot come from our messages; replace it rather than lose the text.
    let c = CString::new(message.replace('\0', "?")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = Some(c));
}

/// Why the calling thread's latest `nrt_shm_*` call failed, or null when none
/// did. The library's string, valid until the next failing call on the thread.
#[no_mangle]
pub extern "C" fn nrt_shm_last_error() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ref().map_or(std::ptr::null(), |c| c.as_ptr()))
}

/// Attach to the device served at `path`, any bytes a file name may hold,
/// waiting up to `wait_ms` for it to be ready. Null when it is missing, stale
/// or not a served device, or for a bad `NEURON_RT_LOG_LEVEL`. A bad
/// `NEURON_RT_EXEC_TIMEOUT` is refused only by a harvest that takes its
/// timeout from it. The server's file fixes the cores. Close with [`nrt_shm_close`].
///
/// # Safety
/// `path` is null or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn nrt_shm_attach(path: *const c_char, wait_ms: u32) -> *mut nrt_shm {
    if path.is_null() {
        fail("nrt_shm_attach: path is NULL".into());
        return std::ptr::null_mut();
    }
    // The log levels now; the timeout's refusal is kept for a harvest that uses it.
    let logs = crate::config::Uses { timeout: false, ..crate::config::Uses::TIMEOUT_AND_LOG };
    if let Err(m) = crate::ffi::c_env("nrt_shm_attach", logs) {
        fail(m);
        return std::ptr::null_mut();
    }
    let timeout = crate::config::Uses { timeout: true, cores: false, log: false, poll: false };
    let env_timeout_s = crate::config::RtEnv::from_process(timeout).map(|e| e.exec_timeout_s);
    // SAFETY: non-null and NUL-terminated by the caller's contract.
    let p = Path::new(OsStr::from_bytes(unsafe { CStr::from_ptr(path) }.to_bytes()));
    match Harvester::attach(p, Duration::from_millis(u64::from(wait_ms))) {
        Ok(h) => Box::into_raw(Box::new(nrt_shm { h, env_timeout_s })),
        Err(e) => {
            fail(format!("nrt_shm_attach {}: {e}", p.display()));
            std::ptr::null_mut()
        }
    }
}

/// Kick off one inference and harvest it with the sync wait, delay 0 libnrt or
/// 1 adaptive, and the model's `timeout_s`; `NRT_TIMEOUT_FROM_ENV` takes the
/// variable as attach read it. Writes the `NRT_STATUS` to `*status` and returns
/// the one-step code, 0 or 2; -1 when `shm` is null, the variable asked for is
/// refused, the kickoff failed or the server died.
///
/// # Safety
/// `shm` is a live pointer from [`nrt_shm_attach`]; `status` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn nrt_shm_harvest(
    shm: *mut nrt_shm,
    timeout_s: u32,
    delay_kind: c_int,
    status: *mut u32,
) -> c_int {
    // SAFETY: null-checked; the caller guarantees liveness and exclusivity.
    let Some(h) = (unsafe { shm.as_mut() }) else {
        fail("nrt_shm_harvest: shm is NULL".into());
        return -1;
    };
    let delay = if delay_kind == 0 { DelayKind::Libnrt } else { DelayKind::Adaptive };
    let explicit = (timeout_s != crate::ffi::NRT_TIMEOUT_FROM_ENV).then_some(timeout_s);
    let exec_timeout_s = match (&h.env_timeout_s, explicit) {
        (Ok(t), _) => *t,
        (Err(_), Some(_)) => None,
        (Err(e), None) => {
            fail(format!("nrt_shm_harvest: {e}"));
            return -1;
        }
    };
    let env = crate::config::RtEnv { exec_timeout_s, ..Default::default() };
    let budget = crate::config::Budget::resolve_argument(explicit, "timeout_s of nrt_shm_harvest", &env, h.h.arch());
    log::info!("nrt_shm_harvest: {budget}");
    let scope = crate::config::BudgetScope::enter(budget);
    let harvested = h.h.harvest(budget.seconds, delay);
    drop(scope);
    match harvested {
        Ok(r) => {
            if matches!(r.status, nrt_core::NrtStatus::Timeout | nrt_core::NrtStatus::ExecSwNqOverflow) {
                log::error!(
                    "nrt_shm_harvest: the harvest ended at its {budget}: status {} {}",
                    r.status.code(),
                    r.status.name()
                );
            }
            // SAFETY: null-checked; the caller guarantees it is writable.
            if let Some(s) = unsafe { status.as_mut() } {
                *s = r.status.code();
            }
            r.return_code() as c_int
        }
        Err(e) => {
            fail(format!("nrt_shm_harvest {}: {e}", h.h.file().path().display()));
            -1
        }
    }
}

/// Ask the server to stop (when `stop_server` is non-zero) and detach.
///
/// # Safety
/// `shm` is null or came from [`nrt_shm_attach`] and is not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn nrt_shm_close(shm: *mut nrt_shm, stop_server: c_int) {
    if shm.is_null() {
        return;
    }
    // SAFETY: the caller passes a pointer from `nrt_shm_attach`, once.
    let h = unsafe { Box::from_raw(shm) };
    if stop_server != 0 {
        h.h.shutdown_server();
    }
}
