//! Executions: made of copies, submitted to the session's stream, waited
//! for, and read back engine by engine.

use std::ffi::{c_int, c_void};
use std::sync::{Arc, Mutex, MutexGuard};

use nrt_core::arch::ENGINES_PER_CORE;
use nrt_core::exec::TpbEngState;
use nrt_core::NrtStatus;

use super::mem::copy_args;
use super::*;
use crate::exec::{Callback, ExecResult};
use crate::sys::EventFd;

/// An execution's descriptor, readable once its latest submission is done and
/// drained at the next; one for its life, so that an `epoll` registration stays valid.
#[derive(Default)]
pub(super) struct Signal(Mutex<SignalState>);

#[derive(Default)]
pub(super) struct SignalState {
    fd: Option<EventFd>,
    /// The submission the descriptor stands for.
    generation: u64,
    done: bool,
}

impl Signal {
    fn state(&self) -> MutexGuard<'_, SignalState> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A new submission: not done, the descriptor drained; its generation.
    fn arm(&self) -> u64 {
        let mut s = self.state();
        s.generation += 1;
        s.done = false;
        if let Some(fd) = &s.fd {
            let _ = fd.try_read();
        }
        s.generation
    }

    /// Submission `generation` is done: make the descriptor readable once, if it is still the latest.
    fn fire(&self, generation: u64) {
        let mut s = self.state();
        if s.generation == generation && !s.done {
            s.done = true;
            if let Some(fd) = &s.fd {
                if let Err(e) = fd.write(1) {
                    log::warn!("nrt: signalling an execution's descriptor: {e}");
                }
            }
        }
    }

    /// The descriptor, made at the first call and readable at once if done.
    fn fd(&self) -> std::io::Result<c_int> {
        let mut s = self.state();
        if s.fd.is_none() {
            let fd = EventFd::new(false)?;
            if s.done {
                fd.write(1)?;
            }
            s.fd = Some(fd);
        }
        Ok(s.fd.as_ref().map_or(-1, EventFd::raw_fd))
    }
}

/// The `NRT_STATUS` of a finished execution.
fn status_of(r: &ExecResult) -> NrtStatus {
    match r {
        Ok(i) => i.status,
        Err(e) => e.status(),
    }
}

/// A new execution of session `s`, of no copies yet. When submitted, its
/// copies run in order, then the kickoff of the session's cores and the
/// harvest. Null on failure. Free with nrt_exec_free.
///
/// # Safety
/// `s` is null or a session of nrt_session_open, not closed during the call.
#[no_mangle]
pub unsafe extern "C" fn nrt_exec_new(s: *mut nrt_session) -> *mut nrt_exec {
    const CALL: &str = "nrt_exec_new";
    match session(CALL, s) {
        Ok((_, serial, site, cores)) => {
            let mut r = registry();
            let id = r.id();
            let entry = ExecEntry {
                session_addr: s.expose_provenance(),
                session: serial,
                site,
                cores,
                exec: Exec::new(),
                pending: None,
                callback: None,
                signal: Arc::default(),
                generation: 0,
            };
            r.execs.insert(id, entry);
            handle_of(id)
        }
        Err(f) => {
            record(f);
            std::ptr::null_mut()
        }
    }
}

/// `Err`, refusing `call`, when the execution is in flight.
fn idle(call: &str, id: u64, e: &ExecEntry) -> Result<(), Fail> {
    match &e.pending {
        Some(p) if !p.is_done() => Err((
            NrtStatus::Invalid,
            format!("{call} on {}: execution {id:#x} is in flight: wait for it first (nrt_exec_wait)", e.site),
        )),
        _ => Ok(()),
    }
}

/// Add a copy to the execution: `len` bytes from `src` at `src_off` to `dst`
/// at `dst_off`, both memory of its session. Returns 0, or -1 for a null
/// argument, a freed handle, another session's memory, a range past an
/// object's end, or an execution in flight.
#[no_mangle]
pub extern "C" fn nrt_exec_add_copy(
    e: *mut nrt_exec,
    dst: *mut nrt_mem,
    dst_off: u64,
    src: *mut nrt_mem,
    src_off: u64,
    len: u64,
) -> c_int {
    const CALL: &str = "nrt_exec_add_copy";
    let mut r = registry();
    let checked = exec_entry(&mut r, CALL, e).and_then(|x| {
        idle(CALL, handle_id(e), x)?;
        Ok((x.session, x.site.clone()))
    });
    let added = checked.and_then(|(serial, site)| {
        let (d, s) = copy_args(&r, CALL, serial, &site, (dst, dst_off), (src, src_off), len)?;
        let x = exec_entry(&mut r, CALL, e)?;
        x.exec.copy(&d, dst_off, &s, src_off, len);
        Ok(())
    });
    drop(r);
    match added {
        Ok(()) => 0,
        Err(f) => {
            record(f);
            -1
        }
    }
}

/// Call `cb(ctx, status)` once each submission of the execution is done, on
/// the thread that ran it, with no lock held: it may submit, free or wait.
/// Null `cb` removes it. Set it before nrt_exec_submit; it still runs for an
/// execution freed in flight. Returns 0, or -1 for a null or freed execution
/// or one in flight.
#[no_mangle]
pub extern "C" fn nrt_exec_set_callback(
    e: *mut nrt_exec,
    cb: Option<unsafe extern "C" fn(*mut c_void, u32)>,
    ctx: *mut c_void,
) -> c_int {
    const CALL: &str = "nrt_exec_set_callback";
    let mut r = registry();
    let set = exec_entry(&mut r, CALL, e).and_then(|x| {
        idle(CALL, handle_id(e), x)?;
        x.callback = cb.map(|f| (f, ctx.expose_provenance()));
        Ok(())
    });
    drop(r);
    match set {
        Ok(()) => 0,
        Err(f) => {
            record(f);
            -1
        }
    }
}

/// Submit the execution to its session's stream and return at once; the
/// session's executions run in submission order. Returns NRT_SUCCESS;
/// NRT_QUEUE_FULL when the stream holds NRT_STREAM_DEPTH executions;
/// NRT_INVALID for a null execution or one in flight; NRT_INVALID_HANDLE for
/// a freed one or a closed session. A done execution may be submitted again.
/// Its own failures are its status once done.
#[no_mangle]
pub extern "C" fn nrt_exec_submit(e: *mut nrt_exec) -> u32 {
    const CALL: &str = "nrt_exec_submit";
    let mut r = registry();
    let submitted = (|| {
        let x = exec_entry(&mut r, CALL, e)?;
        idle(CALL, handle_id(e), x)?;
        let (addr, serial) = (x.session_addr, x.session);
        let live = r.sessions.get(&addr).is_some_and(|(s, _, _)| *s == serial);
        let x = exec_entry(&mut r, CALL, e)?;
        if !live {
            return Err((
                NrtStatus::InvalidHandle,
                format!("{CALL} on {}: execution {:#x}: its session is closed", x.site, handle_id(e)),
            ));
        }
        let (user, signal) = (x.callback, Arc::clone(&x.signal));
        let generation = signal.arm();
        x.generation = generation;
        let cb: Callback = Box::new(move |res: &ExecResult| {
            signal.fire(generation);
            if let Some((f, ctx)) = user {
                // SAFETY: the caller's callback and context, as given to
                // nrt_exec_set_callback.
                unsafe { f(std::ptr::with_exposed_provenance_mut(ctx), status_of(res).code()) }
            }
        });
        // SAFETY: the session is live (registered): close unregisters it,
        // under this lock, before freeing it.
        let sess = unsafe { &*std::ptr::with_exposed_provenance::<nrt_session>(addr) };
        let p = sess.stream.submit(x.exec.clone(), Some(cb)).map_err(|e| (e.status(), e.to_string()))?;
        x.pending = Some(p);
        Ok(())
    })();
    drop(r);
    match submitted {
        Ok(()) => NrtStatus::Success.code(),
        Err(f) => record(f).code(),
    }
}

/// The execution's pending submission, or why none. Once its result is in,
/// its descriptor is made readable before this returns, keeping the order a caller sees.
fn pending(call: &str, e: *const nrt_exec) -> Result<(Pending, String), Fail> {
    let mut r = registry();
    let x = exec_entry(&mut r, call, e)?;
    match &x.pending {
        Some(p) => {
            if p.is_done() {
                x.signal.fire(x.generation);
            }
            Ok((p.clone(), x.site.clone()))
        }
        None => Err((
            NrtStatus::Invalid,
            format!("{call} on {}: execution {:#x} was never submitted", x.site, handle_id(e)),
        )),
    }
}

/// A descriptor that polls readable once the execution's latest submission is
/// done; its callback may still be running. The same for the execution's
/// life, drained by the next nrt_exec_submit, closed by nrt_exec_free. -1 for
/// a null or freed execution, or when no descriptor can be made.
#[no_mangle]
pub extern "C" fn nrt_exec_fd(e: *mut nrt_exec) -> c_int {
    const CALL: &str = "nrt_exec_fd";
    let mut r = registry();
    let signal = exec_entry(&mut r, CALL, e).map(|x| (Arc::clone(&x.signal), x.site.clone()));
    drop(r);
    let made = signal.and_then(|(sig, site)| {
        sig.fd().map_err(|err| (NrtStatus::Failure, format!("{CALL} on {site}: eventfd failed: {err}")))
    });
    made.unwrap_or_else(|f| {
        record(f);
        -1
    })
}

/// Why a finished execution's status is not NRT_SUCCESS.
fn failure_reason(call: &str, site: &str, id: u64, res: &ExecResult) -> String {
    match res {
        Err(e) => format!("{call}: execution {id:#x}: {e}"),
        Ok(i) => {
            let engines = crate::oplog::timed_out_engines(&i.request, None);
            let mut why =
                format!("{call} on {site}: execution {id:#x}: status {} {}", i.status.code(), i.status.name());
            for n in i.notes.iter().map(String::as_str).chain((!engines.is_empty()).then_some(engines.as_str())) {
                why.push_str("; ");
                why.push_str(n);
            }
            why
        }
    }
}

/// Block until the execution's latest submission is done, within the session's
/// timeout, and return its NRT_STATUS: the harvest's or a copy's failure.
/// NRT_INVALID for a null execution or one never submitted,
/// NRT_INVALID_HANDLE for a freed one. Any failure has its reason.
#[no_mangle]
pub extern "C" fn nrt_exec_wait(e: *mut nrt_exec) -> u32 {
    const CALL: &str = "nrt_exec_wait";
    let (p, site) = match pending(CALL, e) {
        Ok(p) => p,
        Err(f) => return record(f).code(),
    };
    let res = p.wait();
    // Its descriptor readable when the wait returns, if the entry was not freed meanwhile.
    let _ = pending(CALL, e);
    let st = status_of(&res);
    if st != NrtStatus::Success {
        session_fail_with(st, failure_reason(CALL, &site, handle_id(e), &res));
    }
    st.code()
}

/// Whether the execution's latest submission is done, without blocking, as the
/// one-step harvest answers: 1 in flight, 0 done with NRT_SUCCESS, 2 done with
/// another status, written to `*status`. -1 for a null argument, a freed
/// execution or one never submitted.
///
/// # Safety
/// `status` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn nrt_exec_status(e: *const nrt_exec, status: *mut u32) -> c_int {
    const CALL: &str = "nrt_exec_status";
    let (p, site) = match pending(CALL, e) {
        Ok(p) => p,
        Err(f) => {
            record(f);
            return -1;
        }
    };
    let Some(res) = p.try_result() else { return 1 };
    let st = status_of(&res);
    // SAFETY: null-checked; the caller guarantees it is writable.
    if let Some(out) = unsafe { status.as_mut() } {
        *out = st.code();
    }
    if st == NrtStatus::Success {
        0
    } else {
        session_fail_with(st, failure_reason(CALL, &site, handle_id(e), &res));
        2
    }
}

/// The finished harvest of the execution, for `call` on `core`.
fn harvested<T>(
    call: &str,
    e: *const nrt_exec,
    core: u8,
    f: impl FnOnce(&nrt_core::exec::ExecRequest) -> Result<T, String>,
) -> Result<T, Fail> {
    let id = handle_id(e);
    let (p, site) = pending(call, e)?;
    let cores = {
        let mut r = registry();
        exec_entry(&mut r, call, e)?.cores
    };
    if core >= cores {
        return Err((NrtStatus::Invalid, format!("{call} on {site}: core {core}: the session has {cores}")));
    }
    let Some(res) = p.try_result() else {
        return Err((NrtStatus::Invalid, format!("{call} on {site}: execution {id:#x} is in flight")));
    };
    match res.as_ref() {
        Ok(i) => f(&i.request).map_err(|why| (NrtStatus::Invalid, format!("{call} on {site} core {core}: {why}"))),
        Err(err) => Err((err.status(), format!("{call}: execution {id:#x} ended before its harvest: {err}"))),
    }
}

/// The START and END times, in CPU microseconds, of engine `engine` of the
/// session's core `core` in the execution's finished harvest. Returns 0 with
/// both written; -1 when one was not seen, written NRT_TIME_NONE, for a null
/// argument, a freed or unfinished execution, or a core or engine out of range.
///
/// # Safety
/// `start_us` and `end_us` are null or writable.
#[no_mangle]
pub unsafe extern "C" fn nrt_exec_engine_times(
    e: *const nrt_exec,
    core: u8,
    engine: u8,
    start_us: *mut u64,
    end_us: *mut u64,
) -> c_int {
    const CALL: &str = "nrt_exec_engine_times";
    // SAFETY: null-checked; the caller guarantees both are writable.
    let (Some(start), Some(end)) = (unsafe { start_us.as_mut() }, unsafe { end_us.as_mut() }) else {
        record((NrtStatus::Invalid, format!("{CALL}: start_us {start_us:?}, end_us {end_us:?}: neither may be NULL")));
        return -1;
    };
    let times = harvested(CALL, e, core, |req| {
        if usize::from(engine) >= ENGINES_PER_CORE {
            return Err(format!("engine {engine}: a core has {ENGINES_PER_CORE} (NRT_ENGINE_*)"));
        }
        Ok(req.engine_times_us(usize::from(core), usize::from(engine)))
    });
    match times {
        Ok((s, en)) => {
            *start = s.unwrap_or(NRT_TIME_NONE);
            *end = en.unwrap_or(NRT_TIME_NONE);
            if s.is_some() && en.is_some() {
                return 0;
            }
            let name = nrt_core::nq::Engine::from_index(usize::from(engine)).map_or("?", |e| e.name());
            let missing = if s.is_none() { "START and END were" } else { "END was" };
            let site = pending(CALL, e).map(|(_, site)| site).unwrap_or_default();
            record((
                NrtStatus::Invalid,
                format!("{CALL} on {site} core {core} engine {engine} {name}: its {missing} not seen"),
            ));
            -1
        }
        Err(f) => {
            record(f);
            -1
        }
    }
}

/// The NRT_STATUS, its exec_ret, with which core `core` ended the execution's
/// finished harvest, written to `*status`; the execution's is the worst of its
/// cores'. Returns 0, or -1 for a null argument, a freed or unfinished
/// execution, one that ended before its harvest, or a core it does not have.
///
/// # Safety
/// `status` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn nrt_exec_core_status(e: *const nrt_exec, core: u8, status: *mut u32) -> c_int {
    const CALL: &str = "nrt_exec_core_status";
    // SAFETY: null-checked; the caller guarantees it is writable.
    let Some(out) = (unsafe { status.as_mut() }) else {
        record((NrtStatus::Invalid, format!("{CALL}: status is NULL")));
        return -1;
    };
    let ret = harvested(CALL, e, core, |req| {
        req.out_info().exec_rets.get(usize::from(core)).copied().ok_or_else(|| "no such core".to_string())
    });
    match ret {
        Ok(st) => {
            *out = st.code();
            0
        }
        Err(f) => {
            record(f);
            -1
        }
    }
}

/// The engines of the session's core `core` that had not ended when the
/// execution's harvest finished, one bit per NRT_ENGINE_* index; 0 when all
/// ended. NRT_ENGINES_UNKNOWN for a null, freed or unfinished execution, one
/// that ended before its harvest, or a core the session does not have.
#[no_mangle]
pub extern "C" fn nrt_exec_pending_engines(e: *const nrt_exec, core: u8) -> u32 {
    const CALL: &str = "nrt_exec_pending_engines";
    let c = usize::from(core);
    let bits = harvested(CALL, e, core, |req| {
        Ok(req.engines_in(c, TpbEngState::StartPending).union(req.engines_in(c, TpbEngState::EndPending)).bits())
    });
    match bits {
        Ok(b) => u32::from(b),
        Err(f) => {
            record(f);
            NRT_ENGINES_UNKNOWN
        }
    }
}

/// Free the execution; a null, freed or unknown handle is refused, never
/// dereferenced. One in flight runs to its end, holding its memory, and its
/// callback still runs; its descriptor is closed once it is done.
#[no_mangle]
pub extern "C" fn nrt_exec_free(e: *mut nrt_exec) {
    const CALL: &str = "nrt_exec_free";
    let mut r = registry();
    if let Err(f) = exec_entry(&mut r, CALL, e) {
        drop(r);
        record(f);
        return;
    }
    let id = handle_id(e);
    let Some(x) = r.execs.remove(&id) else { return };
    r.bury(id, format!("execution on {}", x.site));
    drop(r);
    drop(x);
}
