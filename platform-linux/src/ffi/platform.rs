//! The platform a C runtime supplies, a table of callbacks, and that table as core's `hal` traits.

use std::cell::Cell;
use std::ffi::{c_char, c_int, c_void, CString};

use nrt_core::event::Event;
use nrt_core::hal::{self, ErrorKind, ErrorType};
use nrt_core::{NrtError, NrtStatus};

use super::rings::RingsCounting;

/// The platform, as C callbacks. Every callback receives `ctx` first. Return
/// conventions: 0 for success, non-zero for failure, unless stated.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct nrt_platform {
    /// Passed to every callback.
    pub ctx: *mut c_void,
    /// Copy the 16-byte slot at byte `offset` of ring `core`, `nq` into `out`, with Acquire ordering.
    pub read_slot: Option<unsafe extern "C" fn(*mut c_void, u8, u8, u32, *mut u8) -> c_int>,
    /// Write ring `core`, `nq`'s HEAD register, in bytes.
    pub write_head: Option<unsafe extern "C" fn(*mut c_void, u8, u8, u32) -> c_int>,
    /// Read INTC cause `line` of error-trigger `block` of `core` into `*out`.
    pub read_cause: Option<unsafe extern "C" fn(*mut c_void, u8, u32, u32, *mut u32) -> c_int>,
    /// Monotonic nanoseconds. Required: without it no timeout can fire, and the
    /// harvest calls refuse the table. Counting rings call it once more per
    /// counted core of each finished request.
    pub now_ns: Option<unsafe extern "C" fn(*mut c_void) -> u64>,
    /// Barrier of `core`: 1 done, 0 pending, -1 failed with `*status` set.
    pub barrier_status: Option<unsafe extern "C" fn(*mut c_void, u8, *mut u32) -> c_int>,
    /// Network proxy of `core`, as `barrier_status`. May be null: always done.
    pub network_status: Option<unsafe extern "C" fn(*mut c_void, u8, *mut u32) -> c_int>,
    /// HBM uncorrectable error of `core`: 0 none, 1201 or 1205. May be null.
    pub hbm_uncorrectable: Option<unsafe extern "C" fn(*mut c_void, u8) -> u32>,
    /// Non-zero when a DMA engine of `core` aborted. May be null.
    pub dma_aborted: Option<unsafe extern "C" fn(*mut c_void, u8) -> c_int>,
    /// An event: its kind and its message, NUL-terminated, valid during the call. May be null.
    pub event: Option<unsafe extern "C" fn(*mut c_void, *const c_char, *const c_char)>,
    /// Output `var_id` completed on `core`: return 0 and set `*output`, `*count`, or non-zero for an unknown var id. May be null.
    pub tensor_completed: Option<unsafe extern "C" fn(*mut c_void, u8, u16, *mut u16, *mut u32) -> c_int>,
}

/// The callback table as core's traits, with the clock values it handed out
/// for `nrt_wait`'s checks and where its rings' requests are counted.
pub(crate) struct CPlatform {
    pub(super) p: nrt_platform,
    /// The largest `now_ns` value seen.
    pub(super) clock_max: Cell<u64>,
    /// Whether `now_ns` returned a value above `clock_max` since the last look.
    pub(super) clock_moved: Cell<bool>,
    /// Where the rings count; `None` counts nothing.
    counters: Option<RingsCounting>,
}

impl CPlatform {
    /// The table `p`, counting into `counters`.
    pub(crate) fn new(p: nrt_platform, counters: Option<RingsCounting>) -> CPlatform {
        CPlatform { p, clock_max: Cell::new(0), clock_moved: Cell::new(false), counters }
    }
}

impl ErrorType for CPlatform {
    type Error = ErrorKind;
}

impl hal::NqRings for CPlatform {
    fn read_slot(&mut self, core: u8, nq: u8, offset: u32, out: &mut [u8; 16]) -> Result<(), ErrorKind> {
        let f = self.p.read_slot.ok_or(ErrorKind::NotMapped)?;
        // SAFETY: `out` is a valid 16-byte buffer; the callback's contract is to
        // write at most 16 bytes into it.
        match unsafe { f(self.p.ctx, core, nq, offset, out.as_mut_ptr()) } {
            0 => Ok(()),
            _ => Err(ErrorKind::Io),
        }
    }
    fn write_head(&mut self, core: u8, nq: u8, head: u32) -> Result<(), ErrorKind> {
        let f = self.p.write_head.ok_or(ErrorKind::NotMapped)?;
        // SAFETY: plain values; the callback owns `ctx`.
        match unsafe { f(self.p.ctx, core, nq, head) } {
            0 => Ok(()),
            _ => Err(ErrorKind::Io),
        }
    }
}

impl hal::IntcCause for CPlatform {
    fn read_cause(&mut self, core: u8, block: u32, line: u32) -> Result<u32, ErrorKind> {
        let f = self.p.read_cause.ok_or(ErrorKind::NotMapped)?;
        let mut v = 0u32;
        // SAFETY: `&mut v` is a valid u32 for the call.
        match unsafe { f(self.p.ctx, core, block, line, &mut v) } {
            0 => Ok(v),
            _ => Err(ErrorKind::Io),
        }
    }
}

impl hal::Clock for CPlatform {
    fn now_ns(&self) -> u64 {
        let v = match self.p.now_ns {
            // SAFETY: no pointers besides `ctx`.
            Some(f) => unsafe { f(self.p.ctx) },
            // Refused by both entry points before any step.
            None => 0,
        };
        if v > self.clock_max.get() {
            self.clock_max.set(v);
            self.clock_moved.set(true);
        }
        v
    }
}

fn proxy(
    f: Option<unsafe extern "C" fn(*mut c_void, u8, *mut u32) -> c_int>,
    ctx: *mut c_void,
    core: u8,
) -> Result<bool, NrtError> {
    let Some(f) = f else { return Ok(true) };
    let mut st = 0u32;
    // SAFETY: `&mut st` is a valid u32 for the call.
    match unsafe { f(ctx, core, &mut st) } {
        1 => Ok(true),
        0 => Ok(false),
        // A failure that left `*st` at 0 is the generic NRT_FAILURE.
        _ => Err(NrtError::failed(NrtStatus::from_code(st))),
    }
}

impl hal::CollectivesProxy for CPlatform {
    fn barrier_status(&mut self, core: u8) -> Result<bool, NrtError> {
        proxy(self.p.barrier_status, self.p.ctx, core)
    }
    fn network_status(&mut self, core: u8) -> Result<bool, NrtError> {
        proxy(self.p.network_status, self.p.ctx, core)
    }
}

impl hal::FaultProbe for CPlatform {
    fn hbm_uncorrectable(&mut self, core: u8) -> Option<NrtStatus> {
        let f = self.p.hbm_uncorrectable?;
        // SAFETY: plain values.
        let v = unsafe { f(self.p.ctx, core) };
        (v != 0).then(|| NrtStatus::from_code(v))
    }
    fn dma_aborted(&mut self, core: u8) -> bool {
        // SAFETY: plain values.
        self.p.dma_aborted.is_some_and(|f| unsafe { f(self.p.ctx, core) } != 0)
    }
}

impl<E: Copy + Into<Event>> hal::EventSink<E> for CPlatform {
    fn event(&mut self, event: &E) {
        let event: Event = (*event).into();
        let Some(f) = self.p.event else { return };
        let kind = CString::new(event.kind()).unwrap_or_default();
        let msg = CString::new(event.to_string().replace('\0', " ")).unwrap_or_default();
        // SAFETY: both strings are NUL-terminated and live across the call.
        unsafe { f(self.p.ctx, kind.as_ptr(), msg.as_ptr()) }
    }
}

impl nrt_core::counters::CounterSink for CPlatform {
    /// FINALIZE's counters of core `core` into the rings' datastore, stamped by
    /// one more `now_ns` call. Rings that count nowhere, the default, read no
    /// clock. A failed count is logged once; the harvest goes on.
    fn nc_counters(&mut self, core: u8, update: &nrt_core::counters::NcUpdate) {
        let Some(c) = self.counters.take() else { return };
        let now = hal::Clock::now_ns(self);
        c.count(core, update, now);
        self.counters = Some(c);
    }
}

impl hal::TensorNotify for CPlatform {
    fn tensor_completed(&mut self, core: u8, var_id: u16) -> Option<(u16, u32)> {
        let f = self.p.tensor_completed?;
        let (mut out, mut count) = (0u16, 0u32);
        // SAFETY: both out-pointers are valid locals for the call.
        match unsafe { f(self.p.ctx, core, var_id, &mut out, &mut count) } {
            0 => Some((out, count)),
            _ => None,
        }
    }
}

/// An event of this binding's own through the C `event` callback.
pub(super) fn c_event(dev: &CPlatform, kind: &str, msg: &str) {
    let Some(f) = dev.p.event else { return };
    let kind = CString::new(kind).unwrap_or_default();
    let msg = CString::new(msg.replace('\0', " ")).unwrap_or_default();
    // SAFETY: both strings are NUL-terminated and live across the call.
    unsafe { f(dev.p.ctx, kind.as_ptr(), msg.as_ptr()) }
}
