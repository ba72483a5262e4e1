//! The three doorbells, kept apart, descriptor-handoff seed §4.
//!
//! | | what | where | transport |
//! |---|---|---|---|
//! | A | per-DMA tail-pointer increment | UDMA queue bank `+0x38` | [`Registers::write32`] (BAR CSR) |
//! | B | top-SP host trigger | `xt_local_reg(engine 4) + 0x15A0` | [`Registers::write32`] (BAR CSR) |
//! | C | per-inference kickoff | semaphore `tpb_idx` += 1 | [`Semaphore::increment`] (Linux: the driver's ioctl) |
//!
//! The seed's GOTCHA: routing the kickoff through a BAR write deadlocks, routing the
//! tail-inc through the semaphore ioctl serialises every ring through a syscall. So
//! each has its own function and its own trait; none is reachable from another.
//!
//! Register offsets of variant A come from one per-arch table ([`UdmaLayout`]),
//! built from the public driver's UDMA map (`neuron-driver-facts.md` §5) and the
//! seed's cayman leaves, §4.1. Each doorbell write is preceded by
//! [`Fence::release`] so the BDs staged before it are visible to the device.

use super::{Direction, DmaError};
use crate::arch::Arch;
use crate::hal::{Fence, Registers, Semaphore};

/// M2S (TX) block offset in a UDMA engine window, driver §5, `aws_hal_udma_get_m2s_offset`.
pub const UDMA_M2S_OFFSET: u64 = 0x0_0000;
/// S2M (RX) block offset in a UDMA engine window, driver §5, `aws_hal_udma_get_s2m_offset`.
pub const UDMA_S2M_OFFSET: u64 = 0x2_0000;
/// Offset of queue bank 0 within an M2S/S2M block, driver §5, seed §4.1: `0x1038 = 0x1000 + 0x38`.
pub const UDMA_QUEUE_FIRST: u64 = 0x1000;
/// Stride of the per-queue banks, driver §5, seed §4.1.
pub const UDMA_QUEUE_STRIDE: u64 = 0x1000;
/// Queues per UDMA block, driver §5: "16 queues".
pub const UDMA_QUEUES: u32 = 16;
/// The tail-pointer INCREMENT register in a queue bank, M2S `TDRTP_inc` and S2M
/// `RDRTP_inc` alike, seed §4.1, driver §5.
pub const UDMA_TAIL_PTR_INC: u64 = 0x38;
/// The tail-inc value field: a descriptor count in bits `[23:0]`, driver §5.
pub const UDMA_TAIL_INC_MAX: u32 = 0x00FF_FFFF;
/// Cayman's separate "data" tail-increment register in a queue bank (seed §4.1:
/// `0x10e0` = bank 0 + 0xE0).
pub const CAYMAN_DATA_TAIL_INC: u64 = 0xE0;
/// M2S `q_sw_ctrl` in a queue bank, driver §5 `0xB0`, seed §4.1 cayman `0x10b0`.
pub const UDMA_M2S_SW_CTRL: u64 = 0xB0;
/// S2M `q_sw_ctrl` in a queue bank, driver §5 `0x64`.
pub const UDMA_S2M_SW_CTRL: u64 = 0x64;

/// The engine whose NX-local block carries the host trigger, seed §4.2: `mov $0x4,%esi`.
pub const TOPSP_ENGINE: u32 = 4;
/// Offset of the host-trigger CSR in that block (seed §4.2: `lea 0x15a0(%rax)`).
pub const HOST_TRIGGER_OFFSET: u64 = 0x15A0;
/// The value the host trigger writes, seed §4.2: `mov $0x1,%esi`.
pub const HOST_TRIGGER_VALUE: u32 = 1;
/// The kickoff's semaphore increment (seed §4.3: `ndl_nc_semaphore_increment(.., 1)`).
pub const KICKOFF_INCREMENT: u32 = 1;

/// The UDMA register map of one arch: one table, every offset the doorbells need.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UdmaLayout {
    /// Size of one engine's UDMA window: 0x4_0000 on v2 (`V2_APB_SENG_UDMA_SIZE`),
    /// the SDMA stride 0x10_0000 on v3, driver §5. Informational: every composed
    /// offset stays below it (tested).
    pub engine_window: u64,
    /// M2S block offset.
    pub m2s: u64,
    /// S2M block offset.
    pub s2m: u64,
    /// Queue bank 0.
    pub queue_first: u64,
    /// Queue bank stride.
    pub queue_stride: u64,
    /// Queues per block.
    pub queues: u32,
    /// Tail-inc register in a bank.
    pub tail_inc: u64,
    /// The data tail-inc register in a bank, where the arch has one.
    pub data_tail_inc: Option<u64>,
    /// M2S sw_ctrl in a bank.
    pub m2s_sw_ctrl: u64,
    /// S2M sw_ctrl in a bank.
    pub s2m_sw_ctrl: u64,
}

const SUNDA: UdmaLayout = UdmaLayout {
    engine_window: 0x4_0000,
    m2s: UDMA_M2S_OFFSET,
    s2m: UDMA_S2M_OFFSET,
    queue_first: UDMA_QUEUE_FIRST,
    queue_stride: UDMA_QUEUE_STRIDE,
    queues: UDMA_QUEUES,
    tail_inc: UDMA_TAIL_PTR_INC,
    data_tail_inc: None,
    m2s_sw_ctrl: UDMA_M2S_SW_CTRL,
    s2m_sw_ctrl: UDMA_S2M_SW_CTRL,
};

const CAYMAN: UdmaLayout = UdmaLayout { engine_window: 0x10_0000, data_tail_inc: Some(CAYMAN_DATA_TAIL_INC), ..SUNDA };

/// G-DMA-MARIANA-UDMA: the seed gives only cayman's leaves and the driver's v4 map is
/// the v3 one; we use cayman's table for mariana without the data tail-inc, which
/// the seed names for cayman only.
const MARIANA: UdmaLayout = UdmaLayout { data_tail_inc: None, ..CAYMAN };

impl UdmaLayout {
    /// The table of `arch`.
    pub const fn of(arch: Arch) -> &'static UdmaLayout {
        match arch {
            Arch::Sunda => &SUNDA,
            Arch::Cayman => &CAYMAN,
            Arch::Mariana => &MARIANA,
        }
    }

    /// The M2S or S2M block offset (`aws_hal_udma_get_{m2s,s2m}_offset`).
    pub const fn block_offset(&self, dir: Direction) -> u64 {
        match dir {
            Direction::Tx => self.m2s,
            Direction::Rx => self.s2m,
        }
    }

    /// The offset of queue `queue`'s bank in a block (`aws_hal_udma_get_*_queue_offset`).
    pub const fn queue_offset(&self, queue: u32) -> Result<u64, DmaError> {
        if queue >= self.queues {
            return Err(DmaError::BadQueue(queue));
        }
        Ok(self.queue_first + queue as u64 * self.queue_stride)
    }

    fn compose(&self, base: u64, queue: u32, dir: Direction, reg: u64) -> Result<u64, DmaError> {
        let rel = self.block_offset(dir) + self.queue_offset(queue)? + reg;
        base.checked_add(rel).ok_or(DmaError::AddressOverflow)
    }

    /// `get_dma_queue_tail_inc_offset`, seed §4.1: `base + {m2s,s2m} block + queue
    /// bank + 0x38`, for the UDMA engine at BAR offset `base`.
    pub fn tail_inc_offset(&self, base: u64, queue: u32, dir: Direction) -> Result<u64, DmaError> {
        self.compose(base, queue, dir, self.tail_inc)
    }

    /// The data tail-inc register (bank + 0xE0, cayman only; else [`DmaError::Unsupported`]).
    /// G-DMA-DATA-TAILINC: the seed gives the M2S leaf; we use the same bank offset
    /// for S2M.
    pub fn data_tail_inc_offset(&self, base: u64, queue: u32, dir: Direction) -> Result<u64, DmaError> {
        match self.data_tail_inc {
            Some(reg) => self.compose(base, queue, dir, reg),
            None => Err(DmaError::Unsupported),
        }
    }

    /// The queue's sw_ctrl register (M2S bank + 0xB0, S2M bank + 0x64).
    pub fn sw_ctrl_offset(&self, base: u64, queue: u32, dir: Direction) -> Result<u64, DmaError> {
        let reg = match dir {
            Direction::Tx => self.m2s_sw_ctrl,
            Direction::Rx => self.s2m_sw_ctrl,
        };
        self.compose(base, queue, dir, reg)
    }
}

/// Doorbell A (seed §4.1, §7 step 7: `al_reg_write32(tail_inc_csr, n)`): tell queue
/// `queue` of the UDMA engine at BAR offset `base` that `n` more descriptors are
/// ready in direction `dir`. `n` must fit the 24-bit field; 0 writes nothing.
/// Fences (Release) before the write.
pub fn ring_tail_inc<R: Registers + ?Sized, F: Fence + ?Sized>(
    regs: &mut R,
    fence: &mut F,
    arch: Arch,
    base: u64,
    queue: u32,
    dir: Direction,
    n: u32,
) -> Result<(), DmaError> {
    if n > UDMA_TAIL_INC_MAX {
        return Err(DmaError::TooMany { requested: u64::from(n), max: u64::from(UDMA_TAIL_INC_MAX) });
    }
    let off = UdmaLayout::of(arch).tail_inc_offset(base, queue, dir)?;
    if n == 0 {
        return Ok(());
    }
    fence.release();
    regs.write32(off, n).map_err(DmaError::platform)
}

/// The host-trigger CSR of doorbell B: `xt_local_reg + 0x15A0`.
pub const fn host_trigger_offset(xt_local_reg: u64) -> Result<u64, DmaError> {
    match xt_local_reg.checked_add(HOST_TRIGGER_OFFSET) {
        Some(o) => Ok(o),
        None => Err(DmaError::AddressOverflow),
    }
}

/// Doorbell B, `aws_hal_sp_topsp_set_host_trigger`, seed §4.2: write 1 at
/// `xt_local_reg + 0x15A0`, where `xt_local_reg` is the BAR offset of engine 4's
/// ([`TOPSP_ENGINE`]) NX-local register block.
///
/// G-DMA-XTLOCAL: `aws_hal_arch_*_get_xt_local_reg_offset(4)` is per arch and no
/// source we have gives its value, so it is platform configuration, passed in.
pub fn set_host_trigger<R: Registers + ?Sized, F: Fence + ?Sized>(
    regs: &mut R,
    fence: &mut F,
    xt_local_reg: u64,
) -> Result<(), DmaError> {
    let off = host_trigger_offset(xt_local_reg)?;
    fence.release();
    regs.write32(off, HOST_TRIGGER_VALUE).map_err(DmaError::platform)
}

/// Doorbell C, `exec_kickoff_infer`, seed §4.3: increment semaphore `tpb_idx` of
/// NeuronCore `nc` by 1 through the semaphore trait (Linux: the driver's
/// `NEURON_IOCTL_SEMAPHORE_INCREMENT`, `seed-vs-driver.md` point 1). Never a BAR write.
pub fn kickoff_infer<S: Semaphore + ?Sized>(sema: &mut S, nc: u32, tpb_idx: u32) -> Result<(), DmaError> {
    sema.increment(nc, tpb_idx, KICKOFF_INCREMENT).map_err(DmaError::platform)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hal::{ErrorKind, ErrorType};
    use core::cell::RefCell;

    /// One ordered log of everything that reaches the device side: fences,
    /// register writes and semaphore increments, so that a fence moved after its
    /// write shows in the order (in a log of their own it would not).
    type Log = RefCell<Vec<(&'static str, u64, u32)>>;

    struct Bar<'a> {
        log: &'a Log,
        fail: bool,
    }
    impl ErrorType for Bar<'_> {
        type Error = ErrorKind;
    }
    impl Registers for Bar<'_> {
        fn read32(&mut self, _: u64) -> Result<u32, ErrorKind> {
            Ok(0)
        }
        fn write32(&mut self, offset: u64, value: u32) -> Result<(), ErrorKind> {
            if self.fail {
                return Err(ErrorKind::Io);
            }
            self.log.borrow_mut().push(("write", offset, value));
            Ok(())
        }
    }
    impl Semaphore for Bar<'_> {
        fn increment(&mut self, nc: u32, index: u32, value: u32) -> Result<(), ErrorKind> {
            self.log.borrow_mut().push(("sema", u64::from(nc) << 32 | u64::from(index), value));
            Ok(())
        }
    }
    /// Fences into the same log as the writes.
    struct F<'a>(&'a Log);
    impl Fence for F<'_> {
        fn release(&mut self) {
            self.0.borrow_mut().push(("fence", 0, 0));
        }
    }
    const FENCE: (&str, u64, u32) = ("fence", 0, 0);

    #[test]
    fn tail_inc_offsets_follow_the_seed_and_the_driver() {
        for arch in [Arch::Sunda, Arch::Cayman, Arch::Mariana] {
            let l = UdmaLayout::of(arch);
            assert_eq!(l.tail_inc_offset(0, 0, Direction::Tx), Ok(0x1038));
            assert_eq!(l.tail_inc_offset(0, 0, Direction::Rx), Ok(0x2_1038));
            assert_eq!(l.tail_inc_offset(0x100, 3, Direction::Tx), Ok(0x100 + 0x4038));
            assert_eq!(l.tail_inc_offset(0, 15, Direction::Rx), Ok(0x2_0000 + 0x1_0000 + 0x38));
            assert_eq!(l.tail_inc_offset(0, 16, Direction::Tx), Err(DmaError::BadQueue(16)));
            assert_eq!(l.tail_inc_offset(u64::MAX, 0, Direction::Tx), Err(DmaError::AddressOverflow));
            assert_eq!(l.sw_ctrl_offset(0, 0, Direction::Tx), Ok(0x10B0));
            assert_eq!(l.sw_ctrl_offset(0, 0, Direction::Rx), Ok(0x2_1064));
            // Every register of every queue stays inside the engine window.
            for q in 0..16 {
                for d in [Direction::Tx, Direction::Rx] {
                    assert!(l.tail_inc_offset(0, q, d).unwrap() < l.engine_window);
                    assert!(l.sw_ctrl_offset(0, q, d).unwrap() < l.engine_window);
                }
            }
        }
        // The driver's example: v2 NC0 engine e queue q M2S = 0x3000_0000 + e*0x4_0000 + 0x1000 + q*0x1000 + 0x38.
        let e = 5u64;
        assert_eq!(
            UdmaLayout::of(Arch::Sunda).tail_inc_offset(0x3000_0000 + e * 0x4_0000, 2, Direction::Tx),
            Ok(0x3000_0000 + e * 0x4_0000 + 0x1000 + 2 * 0x1000 + 0x38)
        );
        // The engine windows, driver §5: v2 0x4_0000; v3 (and v4, G-DMA-MARIANA-UDMA) the SDMA stride.
        let windows = [Arch::Sunda, Arch::Cayman, Arch::Mariana].map(|a| UdmaLayout::of(a).engine_window);
        assert_eq!(windows, [0x4_0000, 0x10_0000, 0x10_0000]);
        // Cayman's data tail-inc 0x10E0 and sw_ctrl 0x10B0, seed §4.1.
        let c = UdmaLayout::of(Arch::Cayman);
        assert_eq!(c.data_tail_inc_offset(0, 0, Direction::Tx), Ok(0x10E0));
        assert_eq!(UdmaLayout::of(Arch::Sunda).data_tail_inc_offset(0, 0, Direction::Tx), Err(DmaError::Unsupported));
        assert_eq!(UdmaLayout::of(Arch::Mariana).data_tail_inc_offset(0, 0, Direction::Tx), Err(DmaError::Unsupported));
    }

    #[test]
    fn doorbell_a_fences_then_writes_the_count() {
        let log = Log::default();
        let mut bar = Bar { log: &log, fail: false };
        ring_tail_inc(&mut bar, &mut F(&log), Arch::Cayman, 0x8200_0000, 1, Direction::Rx, 7).unwrap();
        // The fence comes first, then the write: the BDs staged before are visible.
        assert_eq!(*log.borrow(), [FENCE, ("write", 0x8200_0000 + 0x2_0000 + 0x2000 + 0x38, 7)]);
        // 0 writes nothing; above 24 bits is refused; neither fences.
        ring_tail_inc(&mut bar, &mut F(&log), Arch::Cayman, 0, 1, Direction::Rx, 0).unwrap();
        assert_eq!(
            ring_tail_inc(&mut bar, &mut F(&log), Arch::Cayman, 0, 1, Direction::Rx, 1 << 24),
            Err(DmaError::TooMany { requested: 1 << 24, max: 0xFF_FFFF })
        );
        // The largest count is written as is.
        ring_tail_inc(&mut bar, &mut F(&log), Arch::Sunda, 0, 0, Direction::Tx, 0xFF_FFFF).unwrap();
        assert_eq!(
            ring_tail_inc(&mut bar, &mut F(&log), Arch::Cayman, 0, 99, Direction::Rx, 1),
            Err(DmaError::BadQueue(99))
        );
        assert_eq!(log.borrow().len(), 4);
        assert_eq!(log.borrow()[2..], [FENCE, ("write", 0x1038, 0xFF_FFFF)]);
        bar.fail = true;
        assert_eq!(
            ring_tail_inc(&mut bar, &mut F(&log), Arch::Sunda, 0, 0, Direction::Tx, 1),
            Err(DmaError::Platform(ErrorKind::Io))
        );
    }

    #[test]
    fn doorbell_b_writes_1_at_xt_local_plus_0x15a0() {
        let log = Log::default();
        let mut bar = Bar { log: &log, fail: false };
        set_host_trigger(&mut bar, &mut F(&log), 0x0700_0000).unwrap();
        assert_eq!(*log.borrow(), [FENCE, ("write", 0x0700_15A0, 1)]);
        assert_eq!(TOPSP_ENGINE, 4);
        assert_eq!(set_host_trigger(&mut bar, &mut F(&log), u64::MAX), Err(DmaError::AddressOverflow));
        assert_eq!(log.borrow().len(), 2, "a refused trigger neither fences nor writes");
        bar.fail = true;
        assert_eq!(set_host_trigger(&mut bar, &mut F(&log), 0), Err(DmaError::Platform(ErrorKind::Io)));
    }

    #[test]
    fn doorbell_c_increments_the_semaphore_by_one_and_touches_no_register() {
        let log = Log::default();
        let mut bar = Bar { log: &log, fail: false };
        kickoff_infer(&mut bar, 1, 3).unwrap();
        assert_eq!(*log.borrow(), [("sema", 1 << 32 | 3, 1)]);
    }
}
