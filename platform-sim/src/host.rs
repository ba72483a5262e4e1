//! The host's view of the simulated device: every nrt-core platform trait,
//! implemented over [`Shared`].
//!
//! [`SimHost`] is what the harvest, the staging chain and the doorbells are given.
//! It never calls into the device model: it reads and writes registers and
//! memory, as a host does over PCIe, and the device reacts when it steps. Two
//! clocks ([`HostClock`]): the virtual clock the deterministic mode advances, or a
//! monotonic `Instant` shared with the device thread. The one waiting primitive is
//! separate ([`VirtualDelay`] steps the device; [`RealDelay`] yields the CPU).

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use nrt_core::dma::{Direction, RingBacking};
use nrt_core::event::Event;
use nrt_core::exec::{TensorCompletions, TensorWaker};
use nrt_core::hal::{self, ErrorKind, ErrorType};
use nrt_core::{NrtError, NrtStatus};

use crate::device::Device;
use crate::layout;
use crate::shared::Shared;
use crate::shm::Line;

pub use nrt_abi::sim::{FIRST_VAR_ID, MAX_OUTPUTS};

/// The waiters of streamed outputs: each wake-up, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WakeLog(pub Vec<(u16, u32)>);

impl TensorWaker for WakeLog {
    fn wake(&mut self, output: u16, count: u32) {
        self.0.push((output, count));
    }
}

/// Where the host's time comes from.
#[derive(Clone, Copy, Debug)]
pub enum HostClock {
    /// The deterministic mode's virtual clock ([`Shared::vclock_ns`]).
    Virtual,
    /// A monotonic clock from this origin (threaded mode; the device thread uses
    /// the same origin).
    Real(Instant),
}

/// One step of the host-to-device handoff, in the order the host took it: a
/// Release fence, or a BAR register write (doorbells, queue programming, the host
/// trigger). Fences and writes share one log, so their order can be checked: in
/// two separate logs, a fence moved after its doorbell write would go unseen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handoff {
    /// [`hal::Fence::release`] on the host or on a [`SimFence`] it lent.
    Fence,
    /// [`hal::Registers::write32`].
    Write {
        /// BAR0 offset.
        offset: u64,
        /// Value written.
        value: u32,
    },
}

/// Most handoff steps a host keeps (staging and kickoff take about a dozen);
/// later ones are counted, not kept.
pub const MAX_HANDOFF_LOG: usize = 64;

/// Most poll passes and HEAD write-backs a host keeps the times of (8 MB each):
/// a trace needs the shape, and a deterministic hang steps once per virtual
/// microsecond until its timeout.
pub const MAX_OBSERVED: usize = 1 << 20;

/// The shared handoff log of a host and the fences it lends.
#[derive(Debug, Default)]
struct HandoffLog {
    steps: Vec<Handoff>,
    dropped: u64,
}

fn log_handoff(log: &Mutex<HandoffLog>, step: Handoff) {
    // A poisoned log only loses the record; the simulation goes on.
    if let Ok(mut l) = log.lock() {
        if l.steps.len() < MAX_HANDOFF_LOG {
            l.steps.push(step);
        } else {
            l.dropped = l.dropped.saturating_add(1);
        }
    }
}

/// The host side of the simulator: every platform trait of nrt-core.
pub struct SimHost {
    shared: Arc<Shared>,
    clock: HostClock,
    /// Events the core delivered, in order.
    pub events: Vec<Event>,
    /// CPU time (us) of each NQ HEAD write-back, in order (the trace's
    /// counter), at most [`MAX_OBSERVED`].
    pub head_writes_us: Vec<u64>,
    /// CPU time (us) of each harvest step the run's loop made, in order, at
    /// most [`MAX_OBSERVED`].
    pub passes_us: Vec<u64>,
    /// The per-core execution counters FINALIZE updated (what a runtime writes
    /// into the driver's datastore; here they stay in RAM).
    pub counters: nrt_core::counters::NcCounters<{ nrt_core::arch::MAX_CORES }>,
    /// The total latency counted for each core's latest request, us (its
    /// `LATENCY_TOTAL` sample; `None` until one is counted, or after the
    /// owner clears it for the next request).
    pub totals_us: [Option<u64>; nrt_core::arch::MAX_CORES],
    tensors: TensorCompletions<MAX_OUTPUTS, WakeLog>,
    ring_next: u64,
    handoff: Arc<Mutex<HandoffLog>>,
}

impl core::fmt::Debug for SimHost {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SimHost").field("clock", &self.clock).field("events", &self.events.len()).finish()
    }
}

impl SimHost {
    /// A host over `shared` reading time from `clock`.
    pub fn new(shared: Arc<Shared>, clock: HostClock) -> SimHost {
        let vars: Vec<u16> = (0..MAX_OUTPUTS as u16).map(|i| FIRST_VAR_ID + i).collect();
        let tensors = match TensorCompletions::with_waker(&vars, WakeLog::default()) {
            Some(t) => t,
            None => unreachable!("MAX_OUTPUTS var ids fit a table of MAX_OUTPUTS"),
        };
        SimHost {
            shared,
            clock,
            events: Vec::new(),
            head_writes_us: Vec::new(),
            passes_us: Vec::new(),
            counters: nrt_core::counters::NcCounters::new(),
            totals_us: [None; nrt_core::arch::MAX_CORES],
            tensors,
            ring_next: layout::RING_BACKING_BASE,
            handoff: Arc::default(),
        }
    }

    /// A fence for the doorbell functions (which take the registers and a fence as
    /// two borrows) that logs into this host's handoff log.
    pub fn fence(&self) -> SimFence {
        SimFence(Arc::clone(&self.handoff))
    }

    /// The handoff steps so far, in order (at most [`MAX_HANDOFF_LOG`]), and how
    /// many more were not kept.
    pub fn handoff(&self) -> (Vec<Handoff>, u64) {
        match self.handoff.lock() {
            Ok(l) => (l.steps.clone(), l.dropped),
            Err(_) => (Vec::new(), 0),
        }
    }

    /// The shared hardware state.
    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Tensor waiters woken so far: (output, count), in order.
    pub fn wakes(&self) -> &[(u16, u32)] {
        &self.tensors.waker().0
    }

    /// Completion count of output `output`.
    pub fn tensor_count(&self, output: u16) -> u32 {
        self.tensors.count(output)
    }
}

impl ErrorType for SimHost {
    type Error = ErrorKind;
}

impl hal::NqRings for SimHost {
    fn read_slot(&mut self, core: u8, nq: u8, offset: u32, out: &mut [u8; 16]) -> Result<(), ErrorKind> {
        self.shared.ring(core, nq)?.read(offset, out)
    }

    fn write_head(&mut self, core: u8, nq: u8, head: u32) -> Result<(), ErrorKind> {
        let off = layout::nq_head_offset(self.shared.arch(), core, nq).ok_or(ErrorKind::OutOfRange)?;
        std::sync::atomic::fence(Ordering::Release);
        if self.head_writes_us.len() < MAX_OBSERVED {
            let t = hal::Clock::now_ns(self) / 1_000;
            self.head_writes_us.push(t);
        }
        self.shared.bar_write(off, head)
    }
}

impl hal::IntcCause for SimHost {
    fn read_cause(&mut self, core: u8, block: u32, line: u32) -> Result<u32, ErrorKind> {
        let off = layout::intc_cause_offset(self.shared.arch(), core, block, line).ok_or(ErrorKind::OutOfRange)?;
        self.shared.bar_read(off)
    }
}

impl hal::Clock for SimHost {
    fn now_ns(&self) -> u64 {
        match self.clock {
            HostClock::Virtual => self.shared.vclock_ns.load(Ordering::Acquire),
            HostClock::Real(origin) => u64::try_from(origin.elapsed().as_nanos()).unwrap_or(u64::MAX),
        }
    }
}

/// A status line's failure: `None` while it holds 0 (success).
fn status_line(shared: &Shared, line: Line, core: u8) -> Option<NrtError> {
    NrtError::new(NrtStatus::from_code(shared.get_line(line, core)))
}

impl hal::CollectivesProxy for SimHost {
    fn barrier_status(&mut self, core: u8) -> Result<bool, NrtError> {
        if let Some(e) = status_line(&self.shared, Line::BarrierFail, core) {
            return Err(e);
        }
        Ok(self.shared.get_line(Line::BarrierDone, core) != 0)
    }

    fn network_status(&mut self, core: u8) -> Result<bool, NrtError> {
        status_line(&self.shared, Line::NetproxyFail, core).map_or(Ok(true), Err)
    }
}

impl hal::FaultProbe for SimHost {
    fn hbm_uncorrectable(&mut self, core: u8) -> Option<NrtStatus> {
        status_line(&self.shared, Line::Hbm, core).map(NrtError::status)
    }

    fn dma_aborted(&mut self, core: u8) -> bool {
        self.shared.get_line(Line::DmaAbort, core) != 0
    }
}

impl<E: Copy + Into<Event>> hal::EventSink<E> for SimHost {
    fn event(&mut self, event: &E) {
        self.events.push((*event).into());
    }
}

impl nrt_core::counters::CounterSink for SimHost {
    fn nc_counters(&mut self, core: u8, update: &nrt_core::counters::NcUpdate) {
        let now = hal::Clock::now_ns(self);
        if self.counters.apply(core, update, now) && update.harvested {
            if let Some(slot) = self.totals_us.get_mut(usize::from(core)) {
                *slot = Some(update.total_latency_us(now));
            }
        }
    }
}

impl hal::TensorNotify for SimHost {
    fn tensor_completed(&mut self, core: u8, var_id: u16) -> Option<(u16, u32)> {
        self.tensors.tensor_completed(core, var_id)
    }
}

impl hal::Registers for SimHost {
    fn read32(&mut self, offset: u64) -> Result<u32, ErrorKind> {
        self.shared.bar_read(offset)
    }

    fn write32(&mut self, offset: u64, value: u32) -> Result<(), ErrorKind> {
        log_handoff(&self.handoff, Handoff::Write { offset, value });
        self.shared.bar_write(offset, value)
    }
}

impl hal::DeviceMemory for SimHost {
    fn copy_in(&mut self, addr: u64, data: &[u8]) -> Result<(), ErrorKind> {
        self.shared.dram_write(addr, data)
    }

    fn copy_out(&mut self, addr: u64, out: &mut [u8]) -> Result<(), ErrorKind> {
        self.shared.dram_read(addr, out)
    }
}

impl hal::Semaphore for SimHost {
    /// The driver's `SEMAPHORE_INCREMENT`: one MMIO write of `value` to the INCR
    /// alias of semaphore `index` in NC `nc`'s page.
    fn increment(&mut self, nc: u32, index: u32, value: u32) -> Result<(), ErrorKind> {
        if nc as usize >= nrt_core::arch::MAX_CORES || index >= layout::SEMAPHORES {
            return Err(ErrorKind::OutOfRange);
        }
        let off = layout::sema_page(self.shared.arch(), nc) + layout::SEMA_INCR + 4 * u64::from(index);
        self.shared.bar_write(off, value)
    }
}

impl hal::Fence for SimHost {
    fn release(&mut self) {
        std::sync::atomic::fence(Ordering::Release);
        log_handoff(&self.handoff, Handoff::Fence);
    }
}

impl RingBacking for SimHost {
    /// `dma_ring_alloc`: 256-byte aligned device memory from the ring-backing window.
    fn alloc_ring(&mut self, _dir: Direction, depth: u32) -> Result<u64, ErrorKind> {
        let bytes = u64::from(depth) * 16;
        let bytes = bytes.div_ceil(layout::RING_ALIGN) * layout::RING_ALIGN;
        let addr = self.ring_next;
        let end = addr.checked_add(bytes).ok_or(ErrorKind::OutOfRange)?;
        if end > layout::RING_BACKING_END {
            return Err(ErrorKind::Other);
        }
        self.ring_next = end;
        Ok(addr)
    }
}

/// A fence object for the doorbell functions (which take registers and a fence
/// as two borrows), lent by [`SimHost::fence`]: it logs into the host's handoff
/// log.
#[derive(Clone, Debug)]
pub struct SimFence(Arc<Mutex<HandoffLog>>);

impl hal::Fence for SimFence {
    fn release(&mut self) {
        std::sync::atomic::fence(Ordering::Release);
        log_handoff(&self.0, Handoff::Fence);
    }
}

/// A wait the harvest can tell when the host next acts on its own: the virtual
/// clock may jump to that deadline ([`Device::advance_virtual_until`]); a real
/// clock ignores it.
pub trait HostDelay: hal::Delay {
    /// The virtual time (ns) of the host's next time-driven observation (its
    /// timeout or barrier warning), or `None` when it has none.
    fn set_host_deadline(&mut self, _ns: Option<u64>) {}
}

/// The deterministic mode's wait: virtual time passes and the device steps.
#[derive(Debug)]
pub struct VirtualDelay {
    /// The device, stepped by each wait.
    pub device: Device,
    /// The host's next deadline ([`HostDelay`]).
    pub host_deadline_ns: Option<u64>,
}

impl VirtualDelay {
    /// A wait stepping `device`, with no host deadline yet.
    pub fn new(device: Device) -> VirtualDelay {
        VirtualDelay { device, host_deadline_ns: None }
    }
}

impl hal::Delay for VirtualDelay {
    fn delay_us(&mut self, us: u32) {
        self.device.advance_virtual_until(us, self.host_deadline_ns);
    }
}

impl HostDelay for VirtualDelay {
    fn set_host_deadline(&mut self, ns: Option<u64>) {
        self.host_deadline_ns = ns;
    }
}

impl HostDelay for RealDelay {}

/// The threaded mode's wait: yield the CPU (`usleep(1)` in spirit); longer waits sleep.
#[derive(Clone, Copy, Debug, Default)]
pub struct RealDelay;

impl hal::Delay for RealDelay {
    fn delay_us(&mut self, us: u32) {
        if us <= 1 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(std::time::Duration::from_micros(u64::from(us)));
        }
    }
}
