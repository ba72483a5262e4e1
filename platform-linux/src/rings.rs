//! NQ rings mapped from the driver (or from a shared-memory file), read through
//! core's [`NqRings`](nrt_core::hal::NqRings) trait.
//!
//! # Memory ordering
//!
//! An entry's phase bit lives in byte 3, in the first 8-byte word. The host reads
//! that word with Acquire and only then the second word (the timestamp), so a
//! producer that writes the second word first and publishes the first with
//! Release (as the simulator does, and as a device's in-order DMA write does) is
//! never seen half-written. HEAD goes back through register access (a mapped BAR,
//! or the driver's BAR_WRITE ioctl), after a Release fence.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use nrt_core::arch::{nq_head_register, Arch, MAX_CORES};
use nrt_core::hal::{self, ErrorType, Registers};
use nrt_core::nq::NQ_PER_CORE;

use crate::error::LinuxError;
use crate::sys::Mapping;

/// Where one ring lives: a mapping, the ring's byte offset in it, its size.
#[derive(Clone, Debug)]
pub struct RingWindow {
    /// The mapping holding the ring.
    pub map: Arc<Mapping>,
    /// Byte offset of the ring in the mapping (16-byte aligned).
    pub offset: u64,
    /// Ring size in bytes.
    pub size: u32,
}

/// The rings of a device and the register path for their HEADs.
#[derive(Debug)]
pub struct MappedRings<R> {
    arch: Arch,
    rings: [[Option<RingWindow>; NQ_PER_CORE]; MAX_CORES],
    /// NOTIFIC slot of each runtime ring (default: the runtime index, G-NQ-SLOT).
    slots: [[u8; NQ_PER_CORE]; MAX_CORES],
    regs: R,
}

impl<R: Registers> MappedRings<R> {
    /// No ring bound yet; HEADs are written through `regs`.
    pub fn new(arch: Arch, regs: R) -> Self {
        let slots = [core::array::from_fn(|i| i as u8); MAX_CORES];
        MappedRings { arch, rings: Default::default(), slots, regs }
    }

    /// Bind runtime ring `(core, nq)` to a window and a NOTIFIC slot.
    pub fn bind(&mut self, core: u8, nq: u8, window: RingWindow, slot: u8) -> Result<(), LinuxError> {
        let end = window.offset.checked_add(u64::from(window.size));
        if end.is_none_or(|e| e > window.map.len() as u64) || !window.offset.is_multiple_of(16) {
            return Err(LinuxError::new(
                "bind ring",
                format!("core {core} nq {nq}"),
                std::io::Error::new(std::io::ErrorKind::InvalidInput, "ring window outside its mapping"),
            ));
        }
        let (c, q) = (usize::from(core), usize::from(nq));
        match (self.rings.get_mut(c).and_then(|r| r.get_mut(q)), self.slots.get_mut(c).and_then(|r| r.get_mut(q))) {
            (Some(r), Some(s)) => {
                *r = Some(window);
                *s = slot;
                Ok(())
            }
            _ => Err(LinuxError::new(
                "bind ring",
                format!("core {core} nq {nq}"),
                std::io::Error::new(std::io::ErrorKind::InvalidInput, "no such ring"),
            )),
        }
    }

    /// The register path.
    pub fn regs(&mut self) -> &mut R {
        &mut self.regs
    }

    fn window(&self, core: u8, nq: u8) -> Result<&RingWindow, LinuxError> {
        self.rings.get(usize::from(core)).and_then(|r| r.get(usize::from(nq))).and_then(|w| w.as_ref()).ok_or_else(
            || {
                LinuxError::new(
                    "read ring",
                    format!("core {core} nq {nq}"),
                    std::io::Error::new(std::io::ErrorKind::NotFound, "ring not bound"),
                )
            },
        )
    }
}

impl<R: Registers> ErrorType for MappedRings<R> {
    type Error = LinuxError;
}

impl<R: Registers<Error = LinuxError>> hal::NqRings for MappedRings<R> {
    fn read_slot(&mut self, core: u8, nq: u8, offset: u32, out: &mut [u8; 16]) -> Result<(), LinuxError> {
        let w = self.window(core, nq)?;
        if offset >= w.size || !offset.is_multiple_of(16) {
            return Err(LinuxError::new(
                "read ring",
                format!("core {core} nq {nq}"),
                std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("slot offset {offset} outside the ring")),
            ));
        }
        let at = w.offset + u64::from(offset);
        let err = |e| LinuxError::new("read ring", format!("core {core} nq {nq}"), e);
        let lo = w.map.load64(at, Ordering::Acquire).map_err(err)?;
        let hi = w.map.load64(at + 8, Ordering::Relaxed).map_err(err)?;
        out[..8].copy_from_slice(&lo.to_le_bytes());
        out[8..].copy_from_slice(&hi.to_le_bytes());
        Ok(())
    }

    fn write_head(&mut self, core: u8, nq: u8, head: u32) -> Result<(), LinuxError> {
        let slot = self.slots.get(usize::from(core)).and_then(|r| r.get(usize::from(nq))).copied().unwrap_or(nq);
        let reg = nq_head_register(self.arch, core, slot).ok_or_else(|| {
            LinuxError::new(
                "write HEAD",
                format!("core {core} nq {nq}"),
                std::io::Error::new(std::io::ErrorKind::InvalidInput, "no NOTIFIC block for this core"),
            )
        })?;
        self.regs.write32(reg, head)
    }
}

/// Create (or reuse) a host-memory NQ ring with the driver's
/// `NOTIFICATIONS_INIT_V2` and map it: the driver returns the ring's mmap offset
/// (its device-view address), and the mapping must be exactly the ring's size.
pub fn map_driver_ring(
    dev: &crate::device::NeuronDevice,
    arg: crate::ioctl::NotificationsInitV2,
) -> Result<RingWindow, LinuxError> {
    let done = dev.notifications_init_v2(arg)?;
    if done.mmap_offset == u64::MAX {
        return Err(LinuxError::new(
            "NEURON_IOCTL_NOTIFICATIONS_INIT_V2",
            dev.path().display().to_string(),
            std::io::Error::new(std::io::ErrorKind::Unsupported, "the ring is in device memory: no mmap offset"),
        ));
    }
    let map = Mapping::map(dev.file(), done.mmap_offset, done.size as usize)
        .map_err(|e| LinuxError::new("mmap", dev.path().display().to_string(), e))?;
    Ok(RingWindow { map: Arc::new(map), offset: 0, size: done.size })
}

/// Where the INTC cause register of `(core, block, line)` is in the BAR, for a
/// [`MappedDevice`]; `None` when there is none.
pub type IntcMap = fn(Arch, u8, u32, u32) -> Option<u64>;

/// The smallest complete device for the harvest: mapped rings with HEAD through
/// `R`, `CLOCK_MONOTONIC`, the INTC cause read through `R` where an [`IntcMap`]
/// says, collectives always done and no hardware faults (a runtime without
/// collectives), events kept in order (and logged through core's `log` feature).
pub struct MappedDevice<R> {
    /// The rings and the register path.
    pub rings: MappedRings<R>,
    /// The clock.
    pub clock: crate::time::MonotonicClock,
    /// Where the INTC cause registers are; `None` reads 0 (no overflow).
    pub intc: Option<IntcMap>,
    /// Events delivered by the core, in order (cleared by the owner).
    pub events: Vec<nrt_core::event::Event>,
}

impl<R: Registers<Error = LinuxError>> MappedDevice<R> {
    /// A device over `rings`.
    pub fn new(rings: MappedRings<R>) -> Self {
        MappedDevice { rings, clock: crate::time::MonotonicClock::new(), intc: None, events: Vec::new() }
    }
}

impl<R: Registers<Error = LinuxError>> ErrorType for MappedDevice<R> {
    type Error = LinuxError;
}

impl<R: Registers<Error = LinuxError>> hal::NqRings for MappedDevice<R> {
    #[inline]
    fn read_slot(&mut self, core: u8, nq: u8, offset: u32, out: &mut [u8; 16]) -> Result<(), LinuxError> {
        self.rings.read_slot(core, nq, offset, out)
    }
    fn write_head(&mut self, core: u8, nq: u8, head: u32) -> Result<(), LinuxError> {
        self.rings.write_head(core, nq, head)
    }
}

impl<R: Registers<Error = LinuxError>> hal::IntcCause for MappedDevice<R> {
    fn read_cause(&mut self, core: u8, block: u32, line: u32) -> Result<u32, LinuxError> {
        match self.intc.and_then(|m| m(self.rings.arch, core, block, line)) {
            Some(off) => self.rings.regs.read32(off),
            None => Ok(0),
        }
    }
}

impl<R> hal::Clock for MappedDevice<R> {
    fn now_ns(&self) -> u64 {
        hal::Clock::now_ns(&self.clock)
    }
}

impl<R> hal::CollectivesProxy for MappedDevice<R> {
    fn barrier_status(&mut self, _core: u8) -> Result<bool, nrt_core::NrtStatus> {
        Ok(true)
    }
    fn network_status(&mut self, _core: u8) -> Result<bool, nrt_core::NrtStatus> {
        Ok(true)
    }
}

impl<R> hal::FaultProbe for MappedDevice<R> {
    fn hbm_uncorrectable(&mut self, _core: u8) -> Option<nrt_core::NrtStatus> {
        None
    }
    fn dma_aborted(&mut self, _core: u8) -> bool {
        false
    }
}

impl<R> hal::EventSink for MappedDevice<R> {
    fn event(&mut self, event: &nrt_core::event::Event) {
        self.events.push(*event);
    }
}

impl<R> hal::TensorNotify for MappedDevice<R> {
    fn tensor_completed(&mut self, _core: u8, _var_id: u16) -> Option<(u16, u32)> {
        None
    }
}
