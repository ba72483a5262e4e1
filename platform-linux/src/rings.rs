//! NQ rings mapped from the driver or from a shared-memory file, read through
//! core's [`NqRings`](nrt_core::hal::NqRings) trait.
//!
//! # Memory ordering
//!
//! An entry's phase bit lives in byte 3, in the first 8-byte word. The host
//! reads that word with Acquire and only then the timestamp word, so a producer
//! that writes the second word first and publishes the first with Release, as
//! the simulator and a device's in-order DMA write do, is never seen
//! half-written. HEAD goes back through register access after a Release fence.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use nrt_core::arch::{nq_head_register, Arch, MAX_CORES, NOTIFIC_SLOTS};
use nrt_core::hal::{self, ErrorType, Registers};
use nrt_core::nq::NQ_PER_CORE;

use crate::device::NeuronDevice;
use crate::error::{Cause, LinuxError};
use crate::ioctl::{NotificationsInitV2, NotificationsInitWithReallocV2};
use crate::sys::Mapping;

/// Where one ring lives: a mapping, the ring's byte offset in it, its size.
#[derive(Clone, Debug)]
pub struct RingWindow {
    /// The mapping holding the ring.
    pub map: Arc<Mapping>,
    /// Byte offset of the ring in the mapping, 16-byte aligned.
    pub offset: u64,
    /// Ring size in bytes.
    pub size: u32,
}

/// The rings of a device and the register path for their HEADs.
#[derive(Debug)]
pub struct MappedRings<R> {
    arch: Arch,
    rings: [[Option<RingWindow>; NQ_PER_CORE]; MAX_CORES],
    /// NOTIFIC slot of each runtime ring: the `engine_index` it was initialised
    /// with, by default the runtime index, G-NQ-SLOT.
    slots: [[u8; NQ_PER_CORE]; MAX_CORES],
    /// The device's core that ring core 0 is: the rings are kept under the
    /// caller's logical index, and HEAD `(core, nq)` is written in the NOTIFIC
    /// block of the device's core `first + core`.
    first: u8,
    regs: R,
}

impl<R: Registers> MappedRings<R> {
    /// No ring bound yet; HEADs are written through `regs`.
    pub fn new(arch: Arch, regs: R) -> Self {
        let slots = [core::array::from_fn(|i| i as u8); MAX_CORES];
        MappedRings { arch, rings: Default::default(), slots, regs, first: 0 }
    }

    /// The same, with ring core `c` the device's core `first + c` for the HEAD registers.
    pub fn with_first_core(mut self, first: u8) -> Self {
        self.first = first;
        self
    }

    /// The device's core that ring core 0 is.
    pub fn first_core(&self) -> u8 {
        self.first
    }

    /// Bind runtime ring `(core, nq)` to the ring the answered
    /// `NOTIFICATIONS_INIT_V2` `done` set up: its HEAD is then written at the
    /// slot the driver programmed, `done.engine_index`, `driver-abi.md` point 5.
    pub fn bind_initialised(
        &mut self,
        core: u8,
        nq: u8,
        window: RingWindow,
        done: &NotificationsInitV2,
    ) -> Result<(), LinuxError> {
        let slot = u8::try_from(done.engine_index).ok().filter(|s| *s < NOTIFIC_SLOTS).ok_or_else(|| {
            LinuxError::refused(
                "bind ring",
                format!("core {core} nq {nq}"),
                format!("engine_index {} is past the NOTIFIC block's {NOTIFIC_SLOTS} slots", done.engine_index),
            )
        })?;
        self.bind(core, nq, window, slot)
    }

    /// The NOTIFIC slot HEAD of ring `(core, nq)` is written at.
    pub fn slot(&self, core: u8, nq: u8) -> Option<u8> {
        self.slots.get(usize::from(core)).and_then(|r| r.get(usize::from(nq))).copied()
    }

    /// Bind runtime ring `(core, nq)` to a window and a NOTIFIC slot below
    /// [`NOTIFIC_SLOTS`], `driver-abi.md` point 6.
    pub fn bind(&mut self, core: u8, nq: u8, window: RingWindow, slot: u8) -> Result<(), LinuxError> {
        if slot >= NOTIFIC_SLOTS {
            return Err(LinuxError::refused(
                "bind ring",
                format!("core {core} nq {nq}"),
                format!("slot {slot} is past the NOTIFIC block's {NOTIFIC_SLOTS} slots"),
            ));
        }
        let end = window.offset.checked_add(u64::from(window.size));
        if end.is_none_or(|e| e > window.map.len() as u64) || !window.offset.is_multiple_of(16) {
            return Err(LinuxError::refused(
                "bind ring",
                format!("core {core} nq {nq}"),
                "ring window outside its mapping",
            ));
        }
        let (c, q) = (usize::from(core), usize::from(nq));
        match (self.rings.get_mut(c).and_then(|r| r.get_mut(q)), self.slots.get_mut(c).and_then(|r| r.get_mut(q))) {
            (Some(r), Some(s)) => {
                *r = Some(window);
                *s = slot;
                Ok(())
            }
            _ => Err(LinuxError::refused("bind ring", format!("core {core} nq {nq}"), "no such ring")),
        }
    }

    /// Unbind runtime ring `(core, nq)`, handing its window back.
    pub fn unbind(&mut self, core: u8, nq: u8) -> Option<RingWindow> {
        self.rings.get_mut(usize::from(core)).and_then(|r| r.get_mut(usize::from(nq))).and_then(Option::take)
    }

    /// The register path.
    pub fn regs(&mut self) -> &mut R {
        &mut self.regs
    }

    fn window(&self, core: u8, nq: u8) -> Result<&RingWindow, LinuxError> {
        self.rings.get(usize::from(core)).and_then(|r| r.get(usize::from(nq))).and_then(|w| w.as_ref()).ok_or_else(
            || LinuxError::new("read ring", format!("core {core} nq {nq}"), Cause::Missing("ring not bound".into())),
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
            return Err(LinuxError::refused(
                "read ring",
                format!("core {core} nq {nq}"),
                format!("slot offset {offset} outside the ring"),
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
        let reg = nq_head_register(self.arch, self.first.saturating_add(core), slot).ok_or_else(|| {
            LinuxError::refused(
                "write HEAD",
                format!("core {core} nq {nq}"),
                format!("no HEAD register for slot {slot}: no NOTIFIC block for this core, or a slot past it"),
            )
        })?;
        self.regs.write32(reg, head)
    }
}

/// How a ring is initialised: `NOTIFICATIONS_INIT_V2`, or, when it was
/// initialised before with another size, `..._WITH_REALLOC_V2` with
/// `force_alloc_mem` 1. Without it the driver reuses the old chunk and the mmap
/// of the new size fails: neuron_nq.c, neuron_mmap.c, `driver-abi.md` point 8.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RingInit {
    /// A first initialisation, or the same size again.
    Init(NotificationsInitV2),
    /// A size change: the driver drops the old chunk.
    Realloc(NotificationsInitWithReallocV2),
}

impl RingInit {
    /// The call for `arg`, given the size the ring was last initialised with.
    pub fn for_size(arg: NotificationsInitV2, previous_size: Option<u32>) -> RingInit {
        match previous_size {
            Some(old) if old != arg.size => RingInit::Realloc(NotificationsInitWithReallocV2 {
                nq_dev_id: arg.nq_dev_id,
                nq_dev_type: arg.nq_dev_type,
                nq_type: arg.nq_type,
                engine_index: arg.engine_index,
                size: arg.size,
                on_host_memory: arg.on_host_memory,
                dram_channel: arg.dram_channel,
                dram_region: arg.dram_region,
                force_alloc_mem: 1,
                ..NotificationsInitWithReallocV2::default()
            }),
            _ => RingInit::Init(arg),
        }
    }

    /// The ring size asked for.
    pub fn size(&self) -> u32 {
        match self {
            RingInit::Init(a) => a.size,
            RingInit::Realloc(a) => a.size,
        }
    }

    /// Make the call on `dev`; the answer in the `INIT_V2` form, `mmap_offset`
    /// and `mem_handle` filled in.
    pub fn call(self, dev: &NeuronDevice) -> Result<NotificationsInitV2, LinuxError> {
        match self {
            RingInit::Init(a) => dev.notifications_init_v2(a),
            RingInit::Realloc(a) => {
                let d = dev.notifications_init_with_realloc_v2(a)?;
                Ok(NotificationsInitV2 {
                    nq_dev_id: d.nq_dev_id,
                    nq_dev_type: d.nq_dev_type,
                    nq_type: d.nq_type,
                    engine_index: d.engine_index,
                    size: d.size,
                    on_host_memory: d.on_host_memory,
                    dram_channel: d.dram_channel,
                    dram_region: d.dram_region,
                    mmap_offset: d.mmap_offset,
                    mem_handle: d.mem_handle,
                })
            }
        }
    }
}

/// Create or reuse a host-memory NQ ring with `NOTIFICATIONS_INIT_V2` and map
/// it at the mmap offset the driver returns, exactly the ring's size. Returns
/// the window and the answered argument, whose `engine_index` is the HEAD slot.
pub fn map_driver_ring(dev: &NeuronDevice, arg: NotificationsInitV2) -> Result<RingWindow, LinuxError> {
    map_ring(dev, RingInit::Init(arg)).map(|(w, _)| w)
}

/// As [`map_driver_ring`], for either form of the initialisation. The mapping
/// is of the size asked for, since the driver maps a ring's chunk whole.
pub fn map_ring(dev: &NeuronDevice, init: RingInit) -> Result<(RingWindow, NotificationsInitV2), LinuxError> {
    let size = init.size();
    let done = init.call(dev)?;
    if done.mmap_offset == u64::MAX {
        return Err(LinuxError::new(
            "NEURON_IOCTL_NOTIFICATIONS_INIT_V2",
            dev.path().display().to_string(),
            Cause::Missing("the ring is in device memory: no mmap offset".into()),
        ));
    }
    let map = Mapping::map(dev.file(), done.mmap_offset, size as usize)
        .map_err(|e| LinuxError::new("mmap", dev.path().display().to_string(), e))?;
    Ok((RingWindow { map: Arc::new(map), offset: 0, size }, done))
}

/// Where the INTC cause register of `(core, block, line)` is in the BAR, for a
/// [`MappedDevice`]; `None` when there is none.
pub type IntcMap = fn(Arch, u8, u32, u32) -> Option<u64>;

/// The smallest complete device for the harvest: mapped rings with HEAD through
/// `R`, `CLOCK_MONOTONIC`, the INTC cause read through `R` where an [`IntcMap`]
/// says, collectives always done, no hardware faults, events kept in order.
/// Each finished request is counted where [`counters`](Self::counters) says,
/// so a poller or an XU unit over it counts as the session's own harvest does.
pub struct MappedDevice<R> {
    /// The rings and the register path.
    pub rings: MappedRings<R>,
    /// The clock.
    pub clock: crate::time::MonotonicClock,
    /// Where the INTC cause registers are; `None` reads 0, no overflow.
    pub intc: Option<IntcMap>,
    /// Events delivered by the core, in order, cleared by the owner.
    pub events: Vec<nrt_core::event::Event>,
    /// Where each finished request's per-core counters go; `None` counts nothing.
    pub counters: Option<crate::datastore::CounterTarget>,
    /// The first failed counter write; the harvest goes on.
    pub counter_error: Option<LinuxError>,
}

impl<R: Registers<Error = LinuxError>> MappedDevice<R> {
    /// A device over `rings`, counting nowhere.
    pub fn new(rings: MappedRings<R>) -> Self {
        MappedDevice {
            rings,
            clock: crate::time::MonotonicClock::new(),
            intc: None,
            events: Vec::new(),
            counters: None,
            counter_error: None,
        }
    }

    /// This device, counting each finished request into `target`.
    pub fn counting_into(self, target: crate::datastore::CounterTarget) -> Self {
        MappedDevice { counters: Some(target), ..self }
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

impl<R> hal::CollectivesProxy for MappedDevice<R> {}

impl<R> hal::FaultProbe for MappedDevice<R> {}

impl<R, E: Copy + Into<nrt_core::event::Event>> hal::EventSink<E> for MappedDevice<R> {
    fn event(&mut self, event: &E) {
        self.events.push((*event).into());
    }
}

impl<R> nrt_core::counters::CounterSink for MappedDevice<R> {
    /// FINALIZE's counters of the harvest's core `core`, into
    /// [`counters`](Self::counters) at this device's clock.
    fn nc_counters(&mut self, core: u8, update: &nrt_core::counters::NcUpdate) {
        let Some(t) = &self.counters else { return };
        if let Err(e) = t.count(core, update, hal::Clock::now_ns(&self.clock)) {
            self.counter_error.get_or_insert(e);
        }
    }
}

impl<R> hal::TensorNotify for MappedDevice<R> {}

#[cfg(test)]
mod tests {
    use super::*;
    use nrt_core::hal::NqRings;

    /// Records register writes.
    #[derive(Default)]
    struct Regs(Vec<(u64, u32)>);
    impl ErrorType for Regs {
        type Error = LinuxError;
    }
    impl Registers for Regs {
        fn read32(&mut self, _: u64) -> Result<u32, LinuxError> {
            Ok(0)
        }
        fn write32(&mut self, off: u64, v: u32) -> Result<(), LinuxError> {
            self.0.push((off, v));
            Ok(())
        }
    }

    fn window(name: &str) -> RingWindow {
        let p = std::env::temp_dir().join(format!("nrt-linux-rings-{}-{name}", std::process::id()));
        let f = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&p).unwrap();
        f.set_len(4096).unwrap();
        let map = Mapping::map(&f, 0, 4096).unwrap();
        std::fs::remove_file(p).unwrap();
        RingWindow { map: Arc::new(map), offset: 0, size: 1024 }
    }

    /// driver-abi.md point 5: HEAD goes to the slot the driver programmed, the
    /// `engine_index` passed, not the runtime NQ index.
    #[test]
    fn head_is_written_at_the_engine_index_the_ring_was_initialised_with() {
        let mut rings = MappedRings::new(Arch::Cayman, Regs::default());
        let done = NotificationsInitV2 { nq_dev_id: 1, engine_index: 17, size: 1024, ..Default::default() };
        rings.bind_initialised(1, 4, window("slot"), &done).unwrap();
        assert_eq!(rings.slot(1, 4), Some(17));
        rings.write_head(1, 4, 0x40).unwrap();
        let want = nq_head_register(Arch::Cayman, 1, 17).unwrap();
        assert_eq!(rings.regs().0, [(want, 0x40)]);
        assert_ne!(want, nq_head_register(Arch::Cayman, 1, 4).unwrap());
    }

    /// driver-abi.md point 6: a slot past the block's 96 is refused at bind.
    #[test]
    fn a_slot_past_the_notific_block_is_refused() {
        let mut rings = MappedRings::new(Arch::Sunda, Regs::default());
        rings.bind(0, 4, window("s95"), 95).unwrap();
        let e = rings.bind(0, 5, window("s96"), 96).unwrap_err();
        assert!(e.to_string().contains("slot 96 is past the NOTIFIC block's 96 slots"), "{e}");
        let done = NotificationsInitV2 { engine_index: 300, size: 1024, ..Default::default() };
        let e = rings.bind_initialised(0, 6, window("s300"), &done).unwrap_err();
        assert!(e.to_string().contains("engine_index 300"), "{e}");
    }

    /// driver-abi.md point 8: a new size goes through WITH_REALLOC_V2 with
    /// force_alloc_mem 1; a first init or the same size through INIT_V2.
    #[test]
    fn a_size_change_reallocates() {
        let arg = NotificationsInitV2 {
            nq_dev_id: 1,
            nq_type: 1,
            engine_index: 5,
            size: 2048,
            on_host_memory: 1,
            ..Default::default()
        };
        assert_eq!(RingInit::for_size(arg, None), RingInit::Init(arg));
        assert_eq!(RingInit::for_size(arg, Some(2048)), RingInit::Init(arg));
        match RingInit::for_size(arg, Some(1024)) {
            RingInit::Realloc(r) => {
                assert_eq!(r.force_alloc_mem, 1);
                assert_eq!((r.nq_dev_id, r.nq_type, r.engine_index, r.size, r.on_host_memory), (1, 1, 5, 2048, 1));
            }
            other => panic!("{other:?}"),
        }
        let dev = NeuronDevice::open("/dev/null").unwrap();
        let e = RingInit::for_size(arg, Some(1024)).call(&dev).unwrap_err();
        assert_eq!(e.call, "NEURON_IOCTL_NOTIFICATIONS_INIT_WITH_REALLOC_V2");
        assert_eq!(e.errno(), Some(libc::ENOTTY));
        let e = map_ring(&dev, RingInit::for_size(arg, None)).unwrap_err();
        assert_eq!(e.call, "NEURON_IOCTL_NOTIFICATIONS_INIT_V2");
    }
}
