//! The C ABI of a runtime's own work in `include/nrt.h`: memory objects,
//! synchronous copies and executions submitted to the session's stream.
//!
//! Handles are ids in a registry of live objects, never addresses: a freed or
//! made-up handle is looked up, not dereferenced, and refused with a status and
//! a reason (G-FFI-HANDLES). Sessions are registered at open, so a closed one
//! is refused the same way.

#![allow(unsafe_code)]
#![allow(non_camel_case_types)]

use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex, MutexGuard};

use nrt_core::NrtStatus;

use crate::exec::{Exec, Pending};
use crate::ffi::{nrt_session, session_fail_with};
use crate::mem::Mem;

mod exec;
mod mem;

pub use exec::{
    nrt_exec_add_copy, nrt_exec_core_status, nrt_exec_engine_times, nrt_exec_fd, nrt_exec_free, nrt_exec_new,
    nrt_exec_pending_engines, nrt_exec_set_callback, nrt_exec_status, nrt_exec_submit, nrt_exec_wait,
};
pub use mem::{nrt_copy, nrt_mem_alloc, nrt_mem_free, nrt_mem_host_ptr};

use exec::Signal;

/// A memory object of a session; opaque, its handle an id.
pub struct nrt_mem {
    _opaque: [u8; 0],
}

/// An execution of a session, copies then the kickoff of its cores; opaque, its handle an id.
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
    /// The session's address and serial, as a later open may reuse the address.
    session_addr: usize,
    session: u64,
    site: String,
    cores: u8,
    exec: Exec,
    pending: Option<Pending>,
    /// The callback and its context's address.
    callback: Option<(CCallback, usize)>,
    /// Its descriptor, one for its life.
    signal: Arc<Signal>,
    /// The latest submission's generation of `signal`.
    generation: u64,
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

/// Register an opened session.
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

/// The cores of live session `s`; `None` when closed or never opened.
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

/// The live memory `m`, for `call`; `side` names it in the reason.
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
