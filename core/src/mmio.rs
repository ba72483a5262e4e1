//! Registers that are really memory-mapped: a device-side controller reaches
//! its BAR-equivalent window by address. The one module of core with `unsafe`:
//! the window is `volatile-register` cells, every access is
//! bounds- and alignment-checked against the window given at construction, and
//! the only unsafe operations are the constructor's promise and the cell
//! accesses it justifies.
//!
//! On Linux the same trait is implemented by nrt-linux over `mmap`; here the
//! controller's linker or HAL gives the address.
#![allow(unsafe_code)]

use volatile_register::RW;

use crate::hal::{ErrorKind, ErrorType, Fence, Registers};

/// A window of 32-bit device registers at a fixed address.
pub struct MmioRegisters {
    base: *const RW<u32>,
    words: usize,
}

impl MmioRegisters {
    /// A window of `len_bytes` bytes of registers at `base`.
    ///
    /// # Safety
    ///
    /// `base` is 4-byte aligned and points to `len_bytes` bytes of device
    /// registers (or memory) that stay mapped, and are accessed only through
    /// volatile operations, for as long as the returned value lives.
    pub unsafe fn new(base: *mut u32, len_bytes: usize) -> MmioRegisters {
        debug_assert!(!base.is_null() && base.is_aligned(), "MMIO window must be non-null and 4-byte aligned");
        MmioRegisters { base: base as *const RW<u32>, words: len_bytes / 4 }
    }

    /// The window's size in bytes.
    pub const fn len_bytes(&self) -> usize {
        self.words * 4
    }

    fn cell(&self, offset: u64) -> Result<&RW<u32>, ErrorKind> {
        if !offset.is_multiple_of(4) {
            return Err(ErrorKind::OutOfRange);
        }
        let i = usize::try_from(offset / 4).map_err(|_| ErrorKind::OutOfRange)?;
        if i >= self.words {
            return Err(ErrorKind::OutOfRange);
        }
        // SAFETY: `i < words`, so the cell is inside the window `new`'s caller
        // promised stays mapped and aligned for our lifetime.
        Ok(unsafe { &*self.base.add(i) })
    }
}

impl ErrorType for MmioRegisters {
    type Error = ErrorKind;
}

impl Registers for MmioRegisters {
    fn read32(&mut self, offset: u64) -> Result<u32, ErrorKind> {
        let v = self.cell(offset)?.read();
        core::sync::atomic::fence(core::sync::atomic::Ordering::Acquire);
        Ok(v)
    }

    fn write32(&mut self, offset: u64, value: u32) -> Result<(), ErrorKind> {
        let cell = self.cell(offset)?;
        core::sync::atomic::fence(core::sync::atomic::Ordering::Release);
        // SAFETY: a volatile store to a cell inside the promised window.
        unsafe { cell.write(value) };
        Ok(())
    }
}

/// The default Release fence orders memory between CPUs (`dmb ish` on arm64); a
/// controller whose DMA masters are outside the inner shareable domain should
/// wrap this type with a `Fence` that issues its barrier (e.g. `dmb oshst`, as
/// Linux's `writel` does) before doorbells.
impl Fence for MmioRegisters {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_writes_inside_the_window_only() {
        let mut mem = [0u32; 16];
        // SAFETY: `mem` outlives `regs` and is only touched through it below.
        let mut regs = unsafe { MmioRegisters::new(mem.as_mut_ptr(), 64) };
        assert_eq!(regs.len_bytes(), 64);
        regs.write32(0x38, 5).unwrap();
        assert_eq!(regs.read32(0x38).unwrap(), 5);
        assert_eq!(regs.write32(64, 1), Err(ErrorKind::OutOfRange));
        assert_eq!(regs.read32(2), Err(ErrorKind::OutOfRange));
        assert_eq!(regs.read32(u64::MAX - 3), Err(ErrorKind::OutOfRange));
        // The doorbell composes offsets into this window like any other.
        let layout = crate::dma::UdmaLayout::of(crate::arch::Arch::Sunda);
        let off = layout.tail_inc_offset(0, 0, crate::dma::Direction::Tx).unwrap();
        assert_eq!(regs.write32(off, 1), Err(ErrorKind::OutOfRange), "0x1038 is outside a 64-byte window");
        assert_eq!(mem[0x38 / 4], 5);
    }
}
