//! The device the harvest sees through the driver: BAR0 through the BAR
//! ioctls, the mapped NQ rings, the probes, the kickoff semaphore.

use super::*;

/// BAR0 through the driver's BAR ioctls, owned (the device shared).
#[derive(Clone, Debug)]
pub struct DriverBar {
    dev: Arc<NeuronDevice>,
    base: u64,
    size: u64,
}

impl DriverBar {
    /// BAR0 of `dev` as `info` reports it.
    pub fn new(dev: Arc<NeuronDevice>, info: &DeviceInfo) -> Result<DriverBar, LinuxError> {
        let b = IoctlBar::with_info(&dev, info, 0)?;
        let (base, size) = (b.base(), b.size());
        Ok(DriverBar { dev, base, size })
    }

    fn bar(&self) -> IoctlBar<'_> {
        IoctlBar::new(&self.dev, 0, self.base, self.size)
    }

    /// The 64-bit value of two 32-bit registers, low word first.
    pub(super) fn read64(&mut self, offset: u64) -> Result<u64, LinuxError> {
        let lo = self.read32(offset)?;
        let hi = self.read32(offset + 4)?;
        Ok(u64::from(lo) | (u64::from(hi) << 32))
    }
}

impl ErrorType for DriverBar {
    type Error = LinuxError;
}

impl Registers for DriverBar {
    fn read32(&mut self, offset: u64) -> Result<u32, LinuxError> {
        self.bar().read32(offset)
    }
    fn write32(&mut self, offset: u64, value: u32) -> Result<(), LinuxError> {
        self.bar().write32(offset, value)
    }
}

pub(super) struct Collect<'a>(pub(super) &'a mut Vec<Event>);

impl hal::EventSink for Collect<'_> {
    fn event(&mut self, e: &Event) {
        self.0.push(*e);
    }
}

pub(super) struct Fence;
impl hal::Fence for Fence {}

/// The kickoff semaphore: `NEURON_IOCTL_SEMAPHORE_INCREMENT`.
pub(super) struct Sema<'a>(pub(super) &'a NeuronDevice);

impl ErrorType for Sema<'_> {
    type Error = LinuxError;
}

impl hal::Semaphore for Sema<'_> {
    fn increment(&mut self, nc: u32, index: u32, value: u32) -> Result<(), LinuxError> {
        self.0.semaphore_increment(nc, index, value)
    }
}

/// Tensor wake-ups one inference keeps; later ones are counted.
pub const WAKE_LOG_CAP: usize = 256;

/// The waiters of streamed outputs, for one inference.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Wakes {
    /// (output, count), in order.
    pub wakes: Vec<(u16, u32)>,
    /// Wake-ups past the cap.
    pub dropped: u64,
}

impl TensorWaker for Wakes {
    fn wake(&mut self, output: u16, count: u32) {
        if self.wakes.len() < WAKE_LOG_CAP {
            self.wakes.push((output, count));
        } else {
            self.dropped = self.dropped.saturating_add(1);
        }
    }
}

pub(super) fn tensor_table() -> Option<TensorCompletions<{ simabi::MAX_OUTPUTS }, Wakes>> {
    let vars: Vec<u16> = (0..simabi::MAX_OUTPUTS as u16).map(|i| simabi::FIRST_VAR_ID + i).collect();
    TensorCompletions::with_waker(&vars, Wakes::default())
}

/// The device the harvest sees: the mapped rings, HEAD / INTC / probes through
/// the BAR ioctls, `CLOCK_MONOTONIC`.
pub struct DriverDevice {
    pub(super) rings: MappedRings<DriverBar>,
    pub(super) arch: Arch,
    pub(super) clock: MonotonicClock,
    /// Events the core delivered, in order.
    pub events: Vec<Event>,
    pub(super) tensors: TensorCompletions<{ simabi::MAX_OUTPUTS }, Wakes>,
    /// The first failed probe read (the harvest goes on: a probe is advisory).
    pub probe_error: Option<LinuxError>,
}

impl core::fmt::Debug for DriverDevice {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("DriverDevice").field("arch", &self.arch).field("events", &self.events.len()).finish()
    }
}

impl DriverDevice {
    fn status(&mut self, line: Line, core: u8) -> Result<Option<NrtStatus>, LinuxError> {
        let off = simabi::status_window(self.arch) + simabi::status_line_offset(line, core);
        let v = self.rings.regs().read32(off)?;
        Ok((v != 0).then(|| NrtStatus::from_code(v)))
    }

    fn probe(&mut self, line: Line, core: u8) -> Option<NrtStatus> {
        match self.status(line, core) {
            Ok(s) => s,
            Err(e) => {
                self.probe_error.get_or_insert(e);
                None
            }
        }
    }
}

impl ErrorType for DriverDevice {
    type Error = LinuxError;
}

impl hal::NqRings for DriverDevice {
    fn read_slot(&mut self, core: u8, nq: u8, offset: u32, out: &mut [u8; 16]) -> Result<(), LinuxError> {
        self.rings.read_slot(core, nq, offset, out)
    }
    fn write_head(&mut self, core: u8, nq: u8, head: u32) -> Result<(), LinuxError> {
        self.rings.write_head(core, nq, head)
    }
}

impl hal::IntcCause for DriverDevice {
    fn read_cause(&mut self, core: u8, block: u32, line: u32) -> Result<u32, LinuxError> {
        let off = simabi::intc_cause_offset(self.arch, core, block, line).ok_or_else(|| {
            let e = io::Error::new(io::ErrorKind::InvalidInput, "no INTC cause register");
            LinuxError::new("INTC read", format!("core {core} block {block} line {line}"), e)
        })?;
        self.rings.regs().read32(off)
    }
}

impl hal::Clock for DriverDevice {
    fn now_ns(&self) -> u64 {
        self.clock.now_ns()
    }
}

impl hal::CollectivesProxy for DriverDevice {
    fn barrier_status(&mut self, core: u8) -> Result<bool, NrtStatus> {
        // The barrier wait is never fatal by itself: a device that stopped
        // answering ends it.
        match self.status(Line::BarrierFail, core) {
            Ok(Some(s)) => return Err(s),
            Ok(None) => {}
            Err(e) => {
                self.probe_error.get_or_insert(e);
                return Err(NrtStatus::HwError);
            }
        }
        let off = simabi::status_window(self.arch) + simabi::status_line_offset(Line::BarrierDone, core);
        match self.rings.regs().read32(off) {
            Ok(v) => Ok(v != 0),
            Err(e) => {
                self.probe_error.get_or_insert(e);
                Err(NrtStatus::HwError)
            }
        }
    }
    fn network_status(&mut self, core: u8) -> Result<bool, NrtStatus> {
        self.probe(Line::NetproxyFail, core).map_or(Ok(true), Err)
    }
}

impl hal::FaultProbe for DriverDevice {
    fn hbm_uncorrectable(&mut self, core: u8) -> Option<NrtStatus> {
        self.probe(Line::Hbm, core)
    }
    fn dma_aborted(&mut self, core: u8) -> bool {
        self.probe(Line::DmaAbort, core).is_some()
    }
}

impl hal::EventSink for DriverDevice {
    fn event(&mut self, e: &Event) {
        self.events.push(*e);
    }
}

impl hal::TensorNotify for DriverDevice {
    fn tensor_completed(&mut self, core: u8, var_id: u16) -> Option<(u16, u32)> {
        self.tensors.tensor_completed(core, var_id)
    }
}
