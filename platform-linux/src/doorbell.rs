//! The DMA tail-increment doorbell for a process that does not map the BAR.
//!
//! Core's doorbell A writes a descriptor count to the tail-increment register
//! of a UDMA queue bank, at a BAR offset it composes. The driver refuses
//! user-space BAR writes there, `seed-vs-driver.md` point 3, so an unprivileged
//! process releases descriptors with `NEURON_IOCTL_DMA_QUEUE_COPY_START`.
//! [`IoctlDoorbell`] is core's `Registers` for that path: it decodes each write
//! back into engine, queue and direction through the arch's one UDMA table and
//! issues the ioctl. A write to any other register is refused, never sent
//! somewhere else.
//!
//! The driver adds the RX count of every copy start to the S2M ring, and
//! `udma_desc_action_add` does `BUG_ON(num == 0)`: a copy start with
//! `rx_desc_count == 0` oopses the kernel, `driver-abi.md` point 1. So TX never
//! goes alone: core rings S2M first, then M2S, driver §5; the RX write is held
//! and the TX write of the same queue sends both counts in one call. A TX write
//! with no RX held is refused; an RX-only release goes out with
//! [`IoctlDoorbell::flush`].

use nrt_core::arch::Arch;
use nrt_core::dma::doorbell::UdmaLayout;
use nrt_core::dma::Direction;
use nrt_core::hal::{self, ErrorType};

use crate::device::NeuronDevice;
use crate::error::LinuxError;

/// Where one DMA engine's UDMA window sits in BAR0, and its driver engine id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UdmaEngine {
    /// The driver's engine index, the ioctl's `eng_id`.
    pub eng_id: u32,
    /// BAR0 offset of the engine's UDMA window, the `base` core composes from.
    pub base: u64,
}

/// A tail-increment register, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TailInc {
    /// The driver's engine index.
    pub eng_id: u32,
    /// Queue in the engine.
    pub queue: u32,
    /// M2S for TX, S2M for RX.
    pub dir: Direction,
}

/// Decode a BAR0 offset into the tail-increment register it names, if it is one.
pub fn decode_tail_inc(arch: Arch, engines: &[UdmaEngine], offset: u64) -> Option<TailInc> {
    let l = UdmaLayout::of(arch);
    let e = engines.iter().find(|e| offset >= e.base && offset - e.base < l.engine_window)?;
    let rel = offset - e.base;
    let (dir, in_block) = if rel >= l.s2m { (Direction::Rx, rel - l.s2m) } else { (Direction::Tx, rel - l.m2s) };
    let bank = in_block.checked_sub(l.queue_first)?;
    let queue = u32::try_from(bank / l.queue_stride).ok()?;
    (queue < l.queues && bank % l.queue_stride == l.tail_inc).then_some(TailInc { eng_id: e.eng_id, queue, dir })
}

/// Core's `Registers` over `NEURON_IOCTL_DMA_QUEUE_COPY_START`: tail-increment
/// writes only, RX held until the TX of the same queue, never `rx == 0`.
#[derive(Debug)]
pub struct IoctlDoorbell<'a> {
    dev: &'a NeuronDevice,
    arch: Arch,
    engines: Vec<UdmaEngine>,
    /// RX counts written and not yet sent, by `(eng_id, queue)`.
    pending_rx: Vec<((u32, u32), u32)>,
}

impl<'a> IoctlDoorbell<'a> {
    /// Doorbells of `engines` on `dev`.
    pub fn new(dev: &'a NeuronDevice, arch: Arch, engines: Vec<UdmaEngine>) -> IoctlDoorbell<'a> {
        IoctlDoorbell { dev, arch, engines, pending_rx: Vec::new() }
    }

    /// The RX count held for `(eng_id, queue)`, 0 for none.
    pub fn pending_rx(&self, eng_id: u32, queue: u32) -> u32 {
        self.pending_rx.iter().find(|(k, _)| *k == (eng_id, queue)).map_or(0, |(_, n)| *n)
    }

    /// Send every RX count still held alone, `tx 0`, which the driver allows.
    pub fn flush(&mut self) -> Result<(), LinuxError> {
        while let Some(((eng, q), n)) = self.pending_rx.pop() {
            self.dev.dma_queue_copy_start(eng, q, 0, n)?;
        }
        Ok(())
    }

    fn refuse(&self, offset: u64, what: &str) -> LinuxError {
        LinuxError::refused(
            "DMA doorbell",
            self.dev.path().display().to_string(),
            format!("offset 0x{offset:x}: {what}"),
        )
    }
}

impl ErrorType for IoctlDoorbell<'_> {
    type Error = LinuxError;
}

impl hal::Registers for IoctlDoorbell<'_> {
    fn read32(&mut self, offset: u64) -> Result<u32, LinuxError> {
        Err(self.refuse(offset, "the DMA queue ioctl path has no register reads"))
    }

    fn write32(&mut self, offset: u64, value: u32) -> Result<(), LinuxError> {
        let t = decode_tail_inc(self.arch, &self.engines, offset)
            .ok_or_else(|| self.refuse(offset, "not the tail-increment register of a known UDMA queue"))?;
        let key = (t.eng_id, t.queue);
        match t.dir {
            Direction::Rx if value == 0 => Err(self.refuse(offset, "an S2M tail increment of 0 descriptors")),
            Direction::Rx => {
                match self.pending_rx.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, n)) => *n = n.saturating_add(value),
                    None => self.pending_rx.push((key, value)),
                }
                Ok(())
            }
            Direction::Tx => {
                let rx = self.pending_rx(t.eng_id, t.queue);
                if rx == 0 {
                    return Err(self.refuse(
                        offset,
                        &format!(
                            "an M2S tail increment of {value} on engine {} queue {} with no S2M count to send with it: \
                             a copy start with rx_desc_count 0 would hit the driver's BUG_ON \
                             (udma_desc_action_add); ring S2M first",
                            t.eng_id, t.queue
                        ),
                    ));
                }
                self.pending_rx.retain(|(k, _)| *k != key);
                self.dev.dma_queue_copy_start(t.eng_id, t.queue, value, rx)
            }
        }
    }
}

impl hal::Fence for IoctlDoorbell<'_> {}

#[cfg(test)]
mod tests {
    use super::*;
    use nrt_core::hal::Registers;

    const ENGINES: [UdmaEngine; 2] =
        [UdmaEngine { eng_id: 0, base: 0x3000_0000 }, UdmaEngine { eng_id: 1, base: 0x3004_0000 }];

    #[test]
    fn decodes_exactly_what_core_composes() {
        let l = UdmaLayout::of(Arch::Sunda);
        for e in ENGINES {
            for q in 0..16 {
                for dir in [Direction::Tx, Direction::Rx] {
                    let off = l.tail_inc_offset(e.base, q, dir).unwrap();
                    assert_eq!(
                        decode_tail_inc(Arch::Sunda, &ENGINES, off),
                        Some(TailInc { eng_id: e.eng_id, queue: q, dir })
                    );
                    // Its neighbours are not tail-increment registers.
                    assert_eq!(decode_tail_inc(Arch::Sunda, &ENGINES, off + 4), None);
                    assert_eq!(decode_tail_inc(Arch::Sunda, &ENGINES, off - 4), None);
                }
            }
        }
        // The seed's example: NC0 engine 0 queue 0 M2S tail-inc at 0x3000_1038.
        assert_eq!(
            decode_tail_inc(Arch::Sunda, &ENGINES, 0x3000_1038),
            Some(TailInc { eng_id: 0, queue: 0, dir: Direction::Tx })
        );
        assert_eq!(decode_tail_inc(Arch::Sunda, &ENGINES, 0x3002_1038).map(|t| t.dir), Some(Direction::Rx));
        assert_eq!(decode_tail_inc(Arch::Sunda, &ENGINES, 0x3008_1038), None, "no such engine");
        assert_eq!(decode_tail_inc(Arch::Sunda, &ENGINES, 0x3000_0038), None, "below the first bank");
        assert_eq!(decode_tail_inc(Arch::Sunda, &ENGINES, 0x3001_1038), None, "queue 16 does not exist");
    }

    /// driver-abi.md point 1: the TX-only doorbell is refused before any ioctl;
    /// RX then TX of one queue go out as one copy start.
    #[test]
    fn the_tx_only_doorbell_never_reaches_the_driver() {
        let dev = NeuronDevice::open("/dev/null").unwrap();
        let l = UdmaLayout::of(Arch::Sunda);
        let tx = l.tail_inc_offset(ENGINES[0].base, 3, Direction::Tx).unwrap();
        let rx = l.tail_inc_offset(ENGINES[0].base, 3, Direction::Rx).unwrap();
        let mut db = IoctlDoorbell::new(&dev, Arch::Sunda, ENGINES.to_vec());
        let e = db.write32(tx, 4).unwrap_err();
        assert!(matches!(e.cause, crate::error::Cause::Refused(_)), "{e}");
        assert!(e.to_string().contains("rx_desc_count 0 would hit the driver's BUG_ON"), "{e}");
        assert!(db.write32(rx, 0).unwrap_err().to_string().contains("0 descriptors"));
        // RX is held with no ioctl yet, then TX sends both: /dev/null is
        // reached once, with the pair, and nothing stays held.
        db.write32(rx, 4).unwrap();
        assert_eq!(db.pending_rx(0, 3), 4);
        let e = db.write32(tx, 4).unwrap_err();
        assert_eq!(e.call, "NEURON_IOCTL_DMA_QUEUE_COPY_START");
        assert!(e.to_string().contains("was not initialised"), "{e}");
        assert_eq!(db.pending_rx(0, 3), 0);
        // An RX-only release goes out with flush.
        db.write32(rx, 2).unwrap();
        assert!(db.flush().unwrap_err().to_string().contains("was not initialised"));
        assert_eq!(db.pending_rx(0, 3), 0);
    }
}
