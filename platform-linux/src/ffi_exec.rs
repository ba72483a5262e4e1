//! The C ABI of a runtime's own work (`include/nrt.h`): memory objects
//! (`nrt_mem_*`), synchronous copies (`nrt_copy`) and executions submitted to
//! the session's stream (`nrt_exec_*`), over [`crate::mem`] and [`crate::exec`].
//!
//! Memory and execution handles are ids in a registry of live objects, never
//! addresses: a freed, doubly freed or made-up handle is looked up, not
//! dereferenced, and refused with a status and a reason
//! (`nrt_session_last_status`, `nrt_session_last_error`). Sessions are
//! registered at open, so a closed one is refused the same way.

#![allow(unsafe_code)]
#![allow(non_camel_case_types)]

use std::collections::BTreeMap;
use std::ffi::{c_int, c_void};
use std::sync::{Arc, Mutex, MutexGuard};

use nrt_core::arch::ENGINES_PER_CORE;
use nrt_core::exec::TpbEngState;
use nrt_core::NrtStatus;

use crate::exec::{Callback, Exec, ExecResult, Pending};
use crate::ffi::{nrt_session, session_fail_with};
use crate::mem::{Mem, MemKind};
use crate::sys::EventFd;

/// A memory object of a session (opaque; the handle is an id, not an address).
pub struct nrt_mem {
    _opaque: [u8; 0],
}

/// An execution of a session: copies, then the kickoff of its cores (opaque;
/// the handle is an id, not an address).
pub struct nrt_exec {
    _opaque: [u8; 0],
}

/// What `nrt_exec_pending_engines` returns when it has no answer: a null,
/// freed or unfinished execution, or a core the session does not have.
pub const NRT_ENGINES_UNKNOWN: u32 = u32::MAX;

/// A time `nrt_exec_engine_times` writes for a record it did not see.
pub const NRT_TIME_NONE: u64 = u64::MAX;

/// Freed objects remembered for their messages; older ones are forgotten.
const TOMBSTONES: usize = 4096;

/// The completion callback of C: its context, the `NRT_STATUS`.
type CCallback = unsafe extern "C" fn(*mut c_void, u32);

struct MemEntry {
    mem: Mem,
    /// The serial of the session that allocated it.
    session: u64,
    site: String,
}

struct ExecEntry {
    /// The session's address and serial (an address may be reused by a later open).
    session_addr: usize,
    session: u64,
    site: String,
    cores: u8,
    exec: Exec,
    pending: Option<Pending>,
    /// The callback and its context (an exposed address).
    callback: Option<(CCallback, usize)>,
    /// Its descriptor, one for its life.
    signal: Arc<Signal>,
    /// The latest submission's generation of `signal`.
    generation: u64,
}

/// An execution's descriptor: readable once its latest submission is done,
/// drained at the next submit; the same descriptor for the execution's life,
/// so an `epoll` registration stays valid across submissions.
#[derive(Default)]
struct Signal(Mutex<SignalState>);

#[derive(Default)]
struct SignalState {
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

    /// Submission `generation` is done: the descriptor readable, if it is
    /// still the latest (once: a second call for it writes nothing).
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

    /// The descriptor, made at the first call (readable at once if done).
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

/// The live objects; ids are never reused.
struct Registry {
    next: u64,
    sessions: BTreeMap<usize, (u64, String, u8)>,
    mems: BTreeMap<u64, MemEntry>,
    execs: BTreeMap<u64, ExecEntry>,
    /// Freed objects, by id: what they were.
    freed: BTreeMap<u64, String>,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    next: 16,
    sessions: BTreeMap::new(),
    mems: BTreeMap::new(),
    execs: BTreeMap::new(),
    freed: BTreeMap::new(),
});

fn registry() -> MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Registry {
    /// A new id: the handle's value, a multiple of 16 as a pointer would be.
    fn id(&mut self) -> u64 {
        let id = self.next;
        self.next += 16;
        id
    }

    fn bury(&mut self, id: u64, what: String) {
        self.freed.insert(id, what);
        while self.freed.len() > TOMBSTONES {
            self.freed.pop_first();
        }
    }

    /// Why `id` is not a live object of `kind`.
    fn why_not(&self, id: u64, kind: &str) -> String {
        match self.freed.get(&id) {
            Some(what) => format!("{kind} {id:#x} ({what}) was freed"),
            None => format!("{kind} {id:#x} is not a live {kind} object (freed, or never made)"),
        }
    }
}

/// A refused call: its status and reason.
type Fail = (NrtStatus, String);

/// Record `f` for this thread; returns its status.
fn record((status, why): Fail) -> NrtStatus {
    session_fail_with(status, why);
    status
}

fn handle_id<T>(p: *const T) -> u64 {
    p.addr() as u64
}

fn handle_of<T>(id: u64) -> *mut T {
    std::ptr::without_provenance_mut(id as usize)
}

/// Register an opened session (called by `nrt_session_open`).
pub(crate) fn session_opened(s: *mut nrt_session) {
    // SAFETY: `s` was just made by `Box::into_raw`.
    let (site, cores) = {
        let session = unsafe { &*s }.stream.session();
        (session.site_name(), session.cores())
    };
    let mut r = registry();
    let serial = r.id();
    r.sessions.insert(s.addr(), (serial, site, cores));
}

/// The cores of live session `s` (`None`: closed or never opened).
pub(crate) fn session_cores(s: *const nrt_session) -> Option<u8> {
    registry().sessions.get(&s.addr()).map(|(_, _, cores)| *cores)
}

/// Unregister a session about to be closed: `false` when it is not live.
pub(crate) fn session_closing(s: *mut nrt_session) -> bool {
    registry().sessions.remove(&s.addr()).is_some()
}

/// The live session `s` and its serial and site, or why not. The reference
/// is valid while the caller does not close the session during the call.
fn session<'a>(call: &str, s: *const nrt_session) -> Result<(&'a nrt_session, u64, String, u8), Fail> {
    if s.is_null() {
        return Err((NrtStatus::Invalid, format!("{call}: session is NULL")));
    }
    let r = registry();
    let Some((serial, site, cores)) = r.sessions.get(&s.addr()) else {
        return Err((NrtStatus::InvalidHandle, format!("{call}: session {s:?} is closed or was never opened")));
    };
    // SAFETY: registered at open and removed before close frees it; the
    // caller does not close it during this call.
    Ok((unsafe { &*s }, *serial, site.clone(), *cores))
}

/// The live memory `m`, for `call` (`side` names it in the reason).
fn mem_entry<'r>(r: &'r Registry, call: &str, side: &str, m: *const nrt_mem) -> Result<&'r MemEntry, Fail> {
    if m.is_null() {
        return Err((NrtStatus::Invalid, format!("{call}: the {side} is NULL")));
    }
    let id = handle_id(m);
    let why = |why: String| if side == "memory" { why } else { format!("the {side}, {why}") };
    r.mems.get(&id).ok_or_else(|| (NrtStatus::InvalidHandle, format!("{call}: {}", why(r.why_not(id, "memory")))))
}

fn exec_entry<'r>(r: &'r mut Registry, call: &str, e: *const nrt_exec) -> Result<&'r mut ExecEntry, Fail> {
    if e.is_null() {
        return Err((NrtStatus::Invalid, format!("{call}: execution is NULL")));
    }
    let id = handle_id(e);
    if !r.execs.contains_key(&id) {
        return Err((NrtStatus::InvalidHandle, format!("{call}: {}", r.why_not(id, "execution"))));
    }
    r.execs.get_mut(&id).ok_or_else(|| (NrtStatus::InvalidHandle, format!("{call}: execution {id:#x}")))
}

fn describe(id: u64, m: &Mem) -> String {
    format!("{} memory {id:#x} of {} bytes", m.kind().name(), m.size())
}

/// The `NRT_STATUS` of a finished execution.
fn status_of(r: &ExecResult) -> NrtStatus {
    match r {
        Ok(i) => i.status,
        Err(e) => e.status(),
    }
}

/// Allocate `size` bytes of memory for the session's copies: `where`
/// NRT_MEM_HOST (mapped into this process: nrt_mem_host_ptr) or
/// NRT_MEM_DEVICE (the session's first core's device memory). Null on
/// failure, with the status for nrt_session_last_status (NRT_INVALID for a
/// bad argument, NRT_RESOURCE when the driver has no memory) and the reason
/// for nrt_session_last_error. Free with nrt_mem_free; the memory lives on
/// while an execution that copies it is in flight.
///
/// # Safety
/// `s` is null or a session of nrt_session_open, not closed during the call.
#[no_mangle]
pub unsafe extern "C" fn nrt_mem_alloc(s: *mut nrt_session, r#where: c_int, size: u64) -> *mut nrt_mem {
    const CALL: &str = "nrt_mem_alloc";
    let made = session(CALL, s).and_then(|(sess, serial, site, _)| {
        let kind = u32::try_from(r#where).ok().and_then(MemKind::from_raw).ok_or_else(|| {
            (NrtStatus::Invalid, format!("{CALL} on {site}: where {where}: NRT_MEM_HOST (0) or NRT_MEM_DEVICE (1)"))
        })?;
        let mem = sess.stream.alloc(kind, size).map_err(|e| (e.status(), e.to_string()))?;
        Ok((mem, serial, site))
    });
    match made {
        Ok((mem, session, site)) => {
            let mut r = registry();
            let id = r.id();
            r.mems.insert(id, MemEntry { mem, session, site });
            handle_of(id)
        }
        Err(f) => {
            record(f);
            std::ptr::null_mut()
        }
    }
}

/// The address of host memory's mapped bytes, valid until it is freed; null
/// for device memory, or a null or freed handle (the reason for
/// nrt_session_last_error). The device writes these bytes by DMA: read them
/// after the copy's execution is done.
#[no_mangle]
pub extern "C" fn nrt_mem_host_ptr(m: *mut nrt_mem) -> *mut c_void {
    const CALL: &str = "nrt_mem_host_ptr";
    let r = registry();
    let found = mem_entry(&r, CALL, "memory", m).and_then(|e| match e.mem.host_bytes() {
        Some(b) => Ok(b.as_ptr().cast::<c_void>().cast_mut()),
        None => Err((
            NrtStatus::Invalid,
            format!(
                "{CALL} on {}: {} has no host mapping: copy it to host memory",
                e.site,
                describe(handle_id(m), &e.mem)
            ),
        )),
    });
    drop(r);
    found.unwrap_or_else(|f| {
        record(f);
        std::ptr::null_mut()
    })
}

/// Free memory: 0 (also for null, as free does), or -1 for a freed or
/// unknown handle (a double free is refused, NRT_INVALID_HANDLE). An
/// execution in flight that copies it keeps it until it is done; the host
/// pointer is then invalid. Memory is the process's until freed, also after
/// its session is closed.
#[no_mangle]
pub extern "C" fn nrt_mem_free(m: *mut nrt_mem) -> c_int {
    const CALL: &str = "nrt_mem_free";
    if m.is_null() {
        return 0;
    }
    let mut r = registry();
    if let Err(f) = mem_entry(&r, CALL, "memory", m) {
        drop(r);
        record(f);
        return -1;
    }
    let id = handle_id(m);
    let Some(e) = r.mems.remove(&id) else { return -1 };
    let what = format!("{} memory of {} bytes on {}", e.mem.kind().name(), e.mem.size(), e.site);
    r.bury(id, what);
    drop(r);
    // The chunk is freed here unless an execution still holds it.
    drop(e);
    0
}

/// Check one copy of `session` between two live objects of it, for `call`.
fn copy_args(
    r: &Registry,
    call: &str,
    session: u64,
    site: &str,
    (dst, dst_off): (*const nrt_mem, u64),
    (src, src_off): (*const nrt_mem, u64),
    len: u64,
) -> Result<(Mem, Mem), Fail> {
    let mut both = Vec::with_capacity(2);
    for (side, m, off) in [("destination", dst, dst_off), ("source", src, src_off)] {
        let e = mem_entry(r, call, side, m)
            .map_err(|(st, why)| (st, why.replacen(call, &format!("{call} on {site}"), 1)))?;
        let id = handle_id(m);
        if e.session != session {
            return Err((
                NrtStatus::InvalidHandle,
                format!("{call} on {site}: the {side}, {}, is another session's (on {})", describe(id, &e.mem), e.site),
            ));
        }
        if off.checked_add(len).is_none_or(|end| end > e.mem.size()) {
            return Err((
                NrtStatus::Invalid,
                format!(
                    "{call} on {site}: {len} bytes at offset {off} of the {side}, {}, run past its end",
                    describe(id, &e.mem)
                ),
            ));
        }
        both.push(e.mem.clone());
    }
    if len == 0 {
        return Err((NrtStatus::Invalid, format!("{call} on {site}: a copy of 0 bytes")));
    }
    let src = both.pop().unwrap_or_else(|| unreachable!());
    let dst = both.pop().unwrap_or_else(|| unreachable!());
    Ok((dst, src))
}

/// Copy `len` bytes from `src` at `src_off` to `dst` at `dst_off`, both
/// memory of session `s`, on the session's DMA queue, and wait for it (after
/// the execution running, if any). Returns the NRT_STATUS: NRT_SUCCESS;
/// NRT_INVALID for a null argument or a range past an object's end;
/// NRT_INVALID_HANDLE for a freed handle or another session's memory;
/// NRT_TIMEOUT when the copy's completion did not arrive (the session is
/// then unusable: close and reopen it); NRT_EXEC_UNIT_UNRECOVERABLE on a
/// session made unusable so; NRT_HW_ERROR when, between two host objects, the
/// destination does not hold the source after the completion (a copy to or
/// from device memory is taken on its completion). A copy within one object
/// whose ranges overlap is refused (NRT_INVALID): copy through a second
/// object. The reason for nrt_session_last_error.
///
/// # Safety
/// `s` is null or a session of nrt_session_open, not closed during the call.
#[no_mangle]
pub unsafe extern "C" fn nrt_copy(
    s: *mut nrt_session,
    dst: *mut nrt_mem,
    dst_off: u64,
    src: *mut nrt_mem,
    src_off: u64,
    len: u64,
) -> u32 {
    const CALL: &str = "nrt_copy";
    let done = session(CALL, s).and_then(|(sess, serial, site, _)| {
        let (d, sr) = copy_args(&registry(), CALL, serial, &site, (dst, dst_off), (src, src_off), len)?;
        sess.stream.session().copy(&d, dst_off, &sr, src_off, len).map_err(|e| (e.status(), e.to_string()))
    });
    match done {
        Ok(_) => NrtStatus::Success.code(),
        Err(f) => record(f).code(),
    }
}

/// A new execution of session `s`, of no copies yet (nrt_exec_add_copy):
/// when submitted, its copies run in order, then the kickoff of the
/// session's cores and the harvest. Null on failure (the status and reason
/// for nrt_session_last_status and nrt_session_last_error). Free with
/// nrt_exec_free.
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

/// `Err` when the execution is in flight (`call` refused then).
fn idle(call: &str, id: u64, e: &ExecEntry) -> Result<(), Fail> {
    match &e.pending {
        Some(p) if !p.is_done() => Err((
            NrtStatus::Invalid,
            format!("{call} on {}: execution {id:#x} is in flight: wait for it first (nrt_exec_wait)", e.site),
        )),
        _ => Ok(()),
    }
}

/// Add a copy to the execution: `len` bytes from `src` at `src_off` to
/// `dst` at `dst_off`, both memory of its session. Returns 0, or -1 (the
/// status and reason for nrt_session_last_status and
/// nrt_session_last_error) for a null argument, a freed handle, another
/// session's memory, a range past an object's end, or an execution in flight.
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
/// the thread that ran it (the session's worker, or a thread whose
/// nrt_exec_wait ran it) with no lock held: it may submit, free, or wait
/// (a wait on one still queued runs it there). Null `cb` removes it. Set before nrt_exec_submit; it still
/// runs for an execution freed in flight. Returns 0, or -1 for a null or
/// freed execution or one in flight.
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
/// session's executions run in submission order. Returns the NRT_STATUS:
/// NRT_SUCCESS; NRT_QUEUE_FULL when the stream holds NRT_STREAM_DEPTH
/// executions; NRT_INVALID for a null execution or one already in flight;
/// NRT_INVALID_HANDLE for a freed one or a closed session. A done execution
/// may be submitted again (its descriptor is then a new one). Its own
/// failures (a copy refused, a timeout) are its status once done.
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
/// its descriptor is readable before this returns (the completion's own
/// signal comes just after the result: this keeps the order a caller sees).
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

/// A descriptor that polls readable (POLLIN) once the execution's latest
/// submission is done (its callback, if any, may still be running). It is
/// the execution's for its life, the same at every call, drained by the next
/// nrt_exec_submit, closed by nrt_exec_free; it may be registered with
/// epoll before the first submit. -1 for a null or freed execution, or when
/// no descriptor can be made (the reason for nrt_session_last_error).
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

/// Block until the execution's latest submission is done (bounded by its
/// copies and the session's timeout) and return its NRT_STATUS: the
/// harvest's (NRT_TIMEOUT, a core's error status, ...), or the failure of a
/// copy. NRT_INVALID for a null execution or one never submitted,
/// NRT_INVALID_HANDLE for a freed one. A status other than NRT_SUCCESS has
/// its reason for nrt_session_last_error.
#[no_mangle]
pub extern "C" fn nrt_exec_wait(e: *mut nrt_exec) -> u32 {
    const CALL: &str = "nrt_exec_wait";
    let (p, site) = match pending(CALL, e) {
        Ok(p) => p,
        Err(f) => return record(f).code(),
    };
    let res = p.wait();
    // Its descriptor readable when the wait returns (looked up again: the
    // entry may have been freed meanwhile, then there is none to signal).
    let _ = pending(CALL, e);
    let st = status_of(&res);
    if st != NrtStatus::Success {
        session_fail_with(st, failure_reason(CALL, &site, handle_id(e), &res));
    }
    st.code()
}

/// Whether the execution's latest submission is done, without blocking, as
/// the one-step harvest answers: 1 in flight (queued or running); 0 done
/// with NRT_SUCCESS; 2 done with another status; the status is written to
/// `*status` when done. -1 for a null argument, a freed execution or one
/// never submitted (the status and reason for nrt_session_last_status and
/// nrt_session_last_error).
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

/// The START and END times, in CPU microseconds, of engine `engine`
/// (NRT_ENGINE_*) of the session's core `core` in the execution's finished
/// harvest. Returns 0 with both written; -1 when either was not seen (the
/// one not seen is NRT_TIME_NONE), for a null argument, a freed or
/// unfinished execution, or a core or engine out of range (the reason for
/// nrt_session_last_error).
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

/// The NRT_STATUS core `core` of the session ended the execution's finished
/// harvest with (its exec_ret; the execution's own status is the worst of
/// its cores'), written to `*status`. Returns 0, or -1 for a null argument,
/// a freed or unfinished execution, one that ended before its harvest, or a
/// core the session does not have (the reason for nrt_session_last_error).
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
/// execution's harvest finished (a timeout: those the core still waited
/// for), one bit per NRT_ENGINE_* index; 0 when all ended.
/// NRT_ENGINES_UNKNOWN for a null, freed or unfinished execution, one that
/// ended before its harvest, or a core the session does not have (the reason
/// for nrt_session_last_error).
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

/// Free the execution (null, freed or unknown handles are refused with a
/// reason for nrt_session_last_error, never dereferenced). One in flight
/// still runs to its end, holding its memory, and its callback still runs;
/// its descriptor is closed once it is done.
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
