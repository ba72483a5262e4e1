//! The bring-up session from C: open, run one inference, status, close.

use std::ffi::{c_char, c_int};

use nrt_core::NrtStatus;

use super::{c_env, session_fail, session_fail_with};

/// An open bring-up session: cores of a Neuron device owned through the driver.
/// Its executions run on its stream's worker.
pub struct nrt_session {
    pub(crate) stream: crate::exec::Stream,
    /// The execution timeout in effect and where it came from.
    budget: crate::config::Budget,
}

/// The `timeout_s` that asks for `NEURON_RT_EXEC_TIMEOUT`, else the generation's
/// default. Any other value is the timeout in seconds; this one lies above the
/// variable's largest, `INT_MAX`.
pub const NRT_TIMEOUT_FROM_ENV: u32 = u32::MAX;

/// Bring up a session on the device node `device`: `cores` cores owned and
/// reset, DMA ring memory and queue, NQ rings of `ring_entries` entries, and
/// the model's `timeout_s`. A null `device` is the device of
/// `NEURON_RT_VISIBLE_CORES`, else `/dev/neuron0`.
///
/// The runtime's variables fill what the arguments leave open. `cores` 0 takes
/// `NEURON_RT_VISIBLE_CORES`, one run of one device's cores numbered across the
/// host and of `device` when given, else `NEURON_RT_NUM_CORES`, else the
/// simulator's hint, else 2; an explicit `cores` claims from core 0. `ring_entries` 0 takes the simulator's
/// hint, else 64. [`NRT_TIMEOUT_FROM_ENV`] takes `NEURON_RT_EXEC_TIMEOUT`.
/// `NEURON_RT_LOG_LEVEL` sets what the library logs. A bad value is refused
/// before the device is opened.
///
/// Null on failure, with whatever was acquired released. Close with
/// [`nrt_session_close`].
///
/// # Safety
/// `device` is null or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn nrt_session_open(
    device: *const c_char,
    cores: u8,
    ring_entries: u32,
    timeout_s: u32,
) -> *mut nrt_session {
    use crate::config::{resolve_cores, Budget};
    let path = (!device.is_null()).then(|| {
        // SAFETY: non-null and NUL-terminated by the caller's contract.
        let bytes = unsafe { std::ffi::CStr::from_ptr(device) }.to_bytes();
        std::path::Path::new(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(bytes))
    });
    let env = match c_env("nrt_session_open", crate::config::Uses::ALL) {
        Ok(e) => e,
        Err(m) => {
            session_fail_with(NrtStatus::Invalid, m);
            return std::ptr::null_mut();
        }
    };
    let choice = match resolve_cores((cores != 0).then_some(cores), "cores of nrt_session_open", &env) {
        Ok(c) => c,
        Err(e) => {
            session_fail_with(NrtStatus::Invalid, format!("nrt_session_open: {e}"));
            return std::ptr::null_mut();
        }
    };
    let explicit = (timeout_s != NRT_TIMEOUT_FROM_ENV).then_some(timeout_s);
    let cfg = crate::session::SessionConfig {
        first_core: choice.first,
        host_wide: choice.host_wide(),
        cores: choice.count,
        ring_entries: (ring_entries != 0).then_some(ring_entries),
        // The generation's default needs the arch, known once open.
        timeout_s: explicit.or(env.exec_timeout_s).unwrap_or(0),
        ..crate::session::SessionConfig::default()
    };
    let opened = match path {
        Some(p) => crate::session::Session::open(p, cfg),
        None => crate::session::Session::open_chosen(cfg),
    };
    match opened {
        Ok(mut session) => {
            let budget = Budget::resolve_argument(explicit, "timeout_s of nrt_session_open", &env, session.arch());
            session.set_timeout_s(budget.seconds);
            let s = Box::into_raw(Box::new(nrt_session { stream: crate::exec::Stream::new(session), budget }));
            crate::ffi_exec::session_opened(s);
            s
        }
        Err(e) => {
            let from = if e.subject == crate::error::Subject::Cores { choice.origin() } else { String::new() };
            let on = path.map_or_else(|| "(device chosen)".into(), |p| p.display().to_string());
            let message = format!("nrt_session_open {on}: {e}{from}");
            session_fail_with(crate::api_error::Error::from(e).status(), message);
            std::ptr::null_mut()
        }
    }
}

/// The physical cores the session owns; 0 when `session` is null.
///
/// # Safety
/// `session` is null or a live pointer from [`nrt_session_open`].
#[no_mangle]
pub unsafe extern "C" fn nrt_session_cores(session: *const nrt_session) -> u8 {
    // Looked up, not dereferenced: a closed session answers 0.
    crate::ffi_exec::session_cores(session).unwrap_or(0)
}

/// The execution timeout of the session's harvests in seconds; 0 when `session` is null.
///
/// # Safety
/// `session` is null or a live pointer from [`nrt_session_open`].
#[no_mangle]
pub unsafe extern "C" fn nrt_session_timeout_s(session: *const nrt_session) -> u32 {
    if crate::ffi_exec::session_cores(session).is_none() {
        return 0;
    }
    // SAFETY: registered until its close; the caller does not close it during the call.
    unsafe { session.as_ref() }.map_or(0, |s| s.budget.seconds)
}

/// Run one inference: stage, kick off, harvest. Writes the `NRT_STATUS` to
/// `*status` when not null and returns the one-step code, 0 or 2; -1 when
/// `session` is null, a call failed, or in a child forked after the open.
///
/// # Safety
/// `session` is null or a live pointer from [`nrt_session_open`], not used by
/// another thread during the call; `status` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn nrt_session_run(session: *mut nrt_session, status: *mut u32) -> c_int {
    if !session.is_null() && crate::ffi_exec::session_cores(session).is_none() {
        let why = format!("nrt_session_run: session {session:?} is closed or was never opened");
        session_fail_with(NrtStatus::InvalidHandle, why);
        return -1;
    }
    // SAFETY: null-checked and registered; the caller guarantees exclusivity.
    let Some(s) = (unsafe { session.as_mut() }) else {
        session_fail("nrt_session_run: session is NULL".into());
        return -1;
    };
    let scope = crate::config::BudgetScope::enter(s.budget);
    let mut session = s.stream.session();
    let ran = session.run_inference();
    drop(scope);
    let site = session.site();
    drop(session);
    match ran {
        Ok(r) => {
            if matches!(r.status, NrtStatus::Timeout | NrtStatus::ExecSwNqOverflow) {
                let engines = crate::oplog::timed_out_engines(&r.request, Some(site));
                log::error!(
                    "nrt_session_run: {site}: the harvest ended at its {}: status {} {}{}{}",
                    s.budget,
                    r.status.code(),
                    r.status.name(),
                    if engines.is_empty() { "" } else { "; " },
                    engines
                );
            }
            // SAFETY: null-checked; the caller guarantees it is writable.
            if let Some(out) = unsafe { status.as_mut() } {
                *out = r.status.code();
            }
            c_int::from(r.step.code())
        }
        Err(e) => {
            session_fail(format!("nrt_session_run: {e}"));
            -1
        }
    }
}

/// The `NRT_STATUS` of the session's latest inference; `NRT_INVALID` when
/// `session` is null or ran none.
///
/// # Safety
/// `session` is null or a live pointer from [`nrt_session_open`].
#[no_mangle]
pub unsafe extern "C" fn nrt_session_status(session: *const nrt_session) -> u32 {
    if crate::ffi_exec::session_cores(session).is_none() {
        return NrtStatus::Invalid.code();
    }
    // SAFETY: registered; the caller does not close it during the call.
    match unsafe { session.as_ref() }.and_then(|s| s.stream.session().last_status()) {
        Some(st) => st.code(),
        None => NrtStatus::Invalid.code(),
    }
}

/// Release everything the session holds, in reverse order, and close the
/// device. Returns 0, or -1 when a release failed; the others are still made.
/// Null is ignored; a session closed already is refused with
/// `NRT_INVALID_HANDLE`. The running execution runs to its end, queued ones end
/// unrun with `NRT_CLOSED`. Memory objects stay until `nrt_mem_free`. In a
/// forked child nothing of the parent's is released, and -1 says so.
///
/// # Safety
/// `session` is null or came from [`nrt_session_open`] and is not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn nrt_session_close(session: *mut nrt_session) -> c_int {
    if session.is_null() {
        return 0;
    }
    if !crate::ffi_exec::session_closing(session) {
        session_fail_with(
            NrtStatus::InvalidHandle,
            format!("nrt_session_close: session {session:?} is closed already or was never opened"),
        );
        return -1;
    }
    // SAFETY: a pointer from `nrt_session_open`, live as it was registered, freed once.
    let s = unsafe { Box::from_raw(session) };
    match s.stream.close() {
        Ok(()) => 0,
        Err(errors) => {
            let all: Vec<String> = errors.iter().map(ToString::to_string).collect();
            session_fail(format!("nrt_session_close: {}", all.join("; ")));
            -1
        }
    }
}
