//! Memory objects and the synchronous copy between them.

use std::ffi::{c_int, c_void};

use nrt_core::NrtStatus;

use super::*;
use crate::mem::MemKind;

/// Allocate `size` bytes for the session's copies: `where` is NRT_MEM_HOST,
/// mapped into this process, or NRT_MEM_DEVICE, the first core's device memory.
/// Null on failure: NRT_INVALID for a bad argument, NRT_RESOURCE when the
/// driver has no memory. Free with nrt_mem_free; the memory lives on while an
/// execution that copies it is in flight.
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
/// for device memory or a null or freed handle. The device writes these bytes
/// by DMA: read them once the copy's execution is done.
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

/// Free memory: 0, also for null as free does, or -1 with NRT_INVALID_HANDLE
/// for a freed or unknown handle. An execution in flight that copies it keeps
/// it until done. Memory outlives its session's close.
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
pub(super) fn copy_args(
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

/// Copy `len` bytes from `src` at `src_off` to `dst` at `dst_off`, both memory
/// of session `s`, on its DMA queue, after the running execution, and wait.
/// Returns NRT_SUCCESS; NRT_INVALID for a null argument, a range past an
/// object's end or overlapping ranges in one object; NRT_INVALID_HANDLE for a
/// freed handle or another session's memory; NRT_TIMEOUT when the completion
/// did not arrive, after which the session must be reopened;
/// NRT_EXEC_UNIT_UNRECOVERABLE on such a session; NRT_HW_ERROR when a
/// host-to-host copy's destination does not hold the source.
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
