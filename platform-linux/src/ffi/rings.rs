//! A C runtime's ring state, and where its requests are counted.

use std::ffi::c_int;
use std::sync::OnceLock;

use nrt_core::nq::Notifications;
use nrt_core::NrtStatus;

use super::{nrt_session, session_fail, session_fail_with};

/// Opaque ring state of a device, shared by its requests: cursors, calibration,
/// where their counters go, and the process that made it.
pub struct nrt_rings(pub(crate) Notifications, pub(crate) Option<RingsCounting>, pub(crate) crate::fork::Owner);

impl nrt_rings {
    /// `Err` with `call`'s refusal in a child forked after the rings were made.
    pub(crate) fn check(&self, call: &str) -> Result<(), String> {
        self.2.check("ring state").map_err(|f| format!("{call}: {f}"))
    }
}

/// Where a C runtime's rings count, and the first count on them that failed,
/// shared with a poller's copy: only that first failure is logged.
#[derive(Clone, Debug)]
pub(crate) struct RingsCounting {
    target: crate::datastore::CounterTarget,
    first_error: std::sync::Arc<OnceLock<crate::LinuxError>>,
}

impl RingsCounting {
    pub(crate) fn new(target: crate::datastore::CounterTarget) -> RingsCounting {
        RingsCounting { target, first_error: std::sync::Arc::default() }
    }

    /// Count `update` of the rings' core `core` at `now_ns`.
    pub(super) fn count(&self, core: u8, update: &nrt_core::counters::NcUpdate, now_ns: u64) {
        if let Err(e) = self.target.count(core, update, now_ns) {
            let said = e.to_string();
            if self.first_error.set(e).is_ok() {
                log::warn!(
                    "nrt: counting core {core}'s request into the datastore: {said} (the first failure on these \
                     rings; later ones are not logged)"
                );
            }
        }
    }

    /// The first count on these rings that failed.
    #[cfg(test)]
    pub(crate) fn first_error(&self) -> Option<&crate::LinuxError> {
        self.first_error.get()
    }
}

/// New ring state with no ring bound. Free with [`nrt_rings_free`].
#[no_mangle]
pub extern "C" fn nrt_rings_new() -> *mut nrt_rings {
    Box::into_raw(Box::new(nrt_rings(Notifications::new(), None, crate::fork::Owner::here())))
}

/// Count every request harvested on `rings` from now on in `session`'s process
/// datastore, as the session's own inferences are: the rings' core `c` at the
/// session's core `c`. Returns 0, or -1 for a null argument, a session without
/// a datastore, or objects made before this process was forked.
///
/// A poller made from `rings` after this call counts too. The rings keep the
/// datastore open until freed, also after the session is closed; a second call
/// points them elsewhere. Each counted core costs one more `now_ns` call. A
/// failed count is logged once, and the harvest goes on.
///
/// # Safety
/// `rings` is null or a live pointer from [`nrt_rings_new`], `session` null or
/// one from `nrt_session_open`; no other thread uses either during the call.
#[no_mangle]
pub unsafe extern "C" fn nrt_rings_count_into(rings: *mut nrt_rings, session: *const nrt_session) -> c_int {
    if !session.is_null() && crate::ffi_exec::session_cores(session).is_none() {
        let why = format!("nrt_rings_count_into: session {session:?} is closed or was never opened");
        session_fail_with(NrtStatus::InvalidHandle, why);
        return -1;
    }
    // SAFETY: null-checked; the caller guarantees both are live.
    let (Some(r), Some(s)) = (unsafe { rings.as_mut() }, unsafe { session.as_ref() }) else {
        session_fail(format!("nrt_rings_count_into: rings {rings:?}, session {session:?}: neither may be NULL"));
        return -1;
    };
    if let Err(m) = r.check("nrt_rings_count_into") {
        session_fail(m);
        return -1;
    }
    let session = s.stream.session();
    let target = session.counter_target();
    if let Some(Err(f)) = target.as_ref().map(crate::datastore::CounterTarget::check) {
        session_fail(format!("nrt_rings_count_into: the session's counters: {f}"));
        return -1;
    }
    match target {
        Some(t) => {
            r.1 = Some(RingsCounting::new(t));
            0
        }
        None => {
            let why = session.datastore_error().map_or_else(|| "none was acquired".to_string(), ToString::to_string);
            session_fail(format!(
                "nrt_rings_count_into: the session on {} has no datastore to count into: {why}",
                session.path().display()
            ));
            -1
        }
    }
}

/// Bind ring `core`, `nq` of `size_bytes`, a power of two from 32. Returns 0, or
/// -1 for a bad size, index or null pointer, or rings made before a fork.
///
/// # Safety
/// `rings` is null or a live pointer from [`nrt_rings_new`].
#[no_mangle]
pub unsafe extern "C" fn nrt_rings_bind(rings: *mut nrt_rings, core: u8, nq: u8, size_bytes: u32) -> c_int {
    // SAFETY: null-checked; the caller guarantees it is live and unaliased.
    let Some(r) = (unsafe { rings.as_mut() }) else { return -1 };
    if let Err(m) = r.check("nrt_rings_bind") {
        session_fail(m);
        return -1;
    }
    match r.0.bind(core, nq, size_bytes) {
        Ok(()) => 0,
        Err(_) => -1,
    }
}

/// Free ring state; null is ignored. A forked child does not release the
/// parent's datastore.
///
/// # Safety
/// `rings` is null or came from [`nrt_rings_new`] and is not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn nrt_rings_free(rings: *mut nrt_rings) {
    if !rings.is_null() {
        // SAFETY: the caller passes a pointer from `nrt_rings_new`, once.
        drop(unsafe { Box::from_raw(rings) });
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use nrt_core::counters::{id, CounterSink, NcUpdate};

    use std::ffi::c_void;

    use super::*;
    use crate::datastore::fake_ds::{node, DsDriver, Served};
    use crate::datastore::{CounterTarget, ProcessCounters};
    use crate::ffi::{nrt_platform, CPlatform};

    extern "C" fn clock(_: *mut c_void) -> u64 {
        1_000_000
    }

    /// Rings at NC 15 whose cores 1 and 2 fall past the datastore keep the
    /// first failure, also across a copy; core 0 counts.
    #[test]
    fn rings_whose_counts_fail_keep_and_log_only_the_first_failure() {
        let p = node("ffi-first");
        let drv = Arc::new(Mutex::new(DsDriver::default()));
        crate::sys::fake::install(p.clone(), Box::new(Served(Arc::clone(&drv))));
        let dev = Arc::new(crate::device::NeuronDevice::open(&p).unwrap());
        let counting = RingsCounting::new(CounterTarget::new(ProcessCounters::of(&dev).unwrap(), 15, 3));
        let table = nrt_platform {
            ctx: std::ptr::null_mut(),
            read_slot: None,
            write_head: None,
            read_cause: None,
            now_ns: Some(clock),
            barrier_status: None,
            network_status: None,
            hbm_uncorrectable: None,
            dma_aborted: None,
            event: None,
            tensor_completed: None,
        };
        let done = NcUpdate {
            status: NrtStatus::Success,
            sequencer_error: false,
            correctable_ecc: false,
            device_latency_us: 1,
            started_ns: 0,
            harvested: true,
            execution: None,
        };
        let mut waited = CPlatform::new(table, Some(counting.clone()));
        let mut polled = CPlatform::new(table, Some(counting.clone()));
        waited.nc_counters(1, &done);
        let first = counting.first_error().map(ToString::to_string).expect("the failure kept");
        assert!(first.contains("NC 16: the datastore has counters for NCs 0 to 15"), "{first}");
        polled.nc_counters(2, &done);
        waited.nc_counters(2, &done);
        assert_eq!(counting.first_error().map(ToString::to_string), Some(first), "the first failure stays");
        waited.nc_counters(0, &done);
        let nc15 = counting.target.counters().block(15).map(|b| b.get(id::INFER_COMPLETED));
        assert_eq!(nc15, Some(1), "core 0 counted at NC 15");
        drop((waited, polled, counting));
        assert_eq!(drv.lock().unwrap().live, None, "released with the rings' last copy");
        crate::sys::fake::uninstall();
        let _ = std::fs::remove_file(&p);
    }
}
