//! The C ABI of `include/nrt.h`: the bring-up session, requests with the
//! one-step harvest and the sync wait, ring state, status names and the entry
//! decode, with the seed's conventions: 1/0/2 returns and `NRT_STATUS` values.
//!
//! A C runtime supplies its platform as a table of callbacks, one per `hal`
//! trait method, with a context pointer. Every pointer from C is checked for
//! null: a null argument returns -1 or a failure status, never crashes. Each
//! `unsafe` block has its `// SAFETY:` line. `tests/header.rs` generates the
//! header from these docs.

#![allow(unsafe_code)]
#![allow(non_camel_case_types)]

use std::cell::Cell;
use std::ffi::{c_char, CString};

use nrt_core::NrtStatus;

mod platform;
mod request;
mod rings;
mod session;
mod status;

pub use platform::nrt_platform;
pub(crate) use platform::CPlatform;
pub use request::{
    nrt_progress_one_step, nrt_request, nrt_request_free, nrt_request_new, nrt_wait, NRT_WAIT_BUDGET_GRACE_NS,
    NRT_WAIT_CLOCK_STALL_NS,
};
pub use rings::{nrt_rings, nrt_rings_bind, nrt_rings_count_into, nrt_rings_free, nrt_rings_new};
pub use session::{
    nrt_session, nrt_session_close, nrt_session_cores, nrt_session_open, nrt_session_run, nrt_session_status,
    nrt_session_timeout_s, NRT_TIMEOUT_FROM_ENV,
};
pub use status::{nrt_decode_entry, nrt_entry, nrt_status_description, nrt_status_name, nrt_status_priority};

thread_local! {
    /// The reason of the calling thread's latest failed `nrt_session_*` call.
    static SESSION_ERROR: std::cell::RefCell<Option<CString>> = const { std::cell::RefCell::new(None) };
    /// The `NRT_STATUS` of the calling thread's latest failed call.
    static SESSION_STATUS: Cell<u32> = const { Cell::new(0) };
}

/// Record a failed call's reason, as `NRT_FAILURE`.
fn session_fail(message: String) {
    session_fail_with(NrtStatus::Failure, message);
}

/// Record a failed call's status and reason for this thread.
pub(crate) fn session_fail_with(status: NrtStatus, message: String) {
    let c = CString::new(message.replace('\0', "?")).unwrap_or_default();
    SESSION_ERROR.with(|e| *e.borrow_mut() = Some(c));
    SESSION_STATUS.with(|s| s.set(status.code()));
}

/// The `NRT_STATUS` of the calling thread's latest failed call of this library:
/// `NRT_EXEC_NC_BUSY` when another process holds the cores, `NRT_INVALID` for a
/// refused argument, `NRT_INVALID_HANDLE` for a freed or unknown object,
/// `NRT_FAILURE` for an OS or driver failure, `NRT_SUCCESS` when none failed.
#[no_mangle]
pub extern "C" fn nrt_session_last_status() -> u32 {
    SESSION_STATUS.with(Cell::get)
}

/// Why the calling thread's latest `nrt_session_*`, `nrt_request_new`,
/// `nrt_mem_*`, `nrt_copy` or `nrt_exec_*` call failed, or null when none did.
/// Valid until the next failing call on the thread.
#[no_mangle]
pub extern "C" fn nrt_session_last_error() -> *const c_char {
    SESSION_ERROR.with(|e| e.borrow().as_ref().map_or(std::ptr::null(), |c| c.as_ptr()))
}

/// Read the runtime's variables `uses` names for C ABI call `call`, and install
/// the standard-error logger at their log levels. A bad value is the refusal's message.
pub(crate) fn c_env(call: &str, uses: crate::config::Uses) -> Result<crate::config::RtEnv, String> {
    let env = crate::config::RtEnv::from_process(uses).map_err(|e| format!("{call}: {e}"))?;
    crate::config::init_stderr_log("nrt", &env.log);
    Ok(env)
}
