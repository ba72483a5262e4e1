//! The simulated device's address map: BAR0 register offsets and device DRAM.
//!
//! Every offset the host reaches is either the driver's or the seed's (and then
//! computed by nrt-core itself), or a documented choice of the simulator where no
//! public source gives one:
//!
//! | block | BAR0 offset | source |
//! |---|---|---|
//! | NQ HEAD of runtime ring `nq` of core `c` | [`arch::nq_head_register`]`(arch, c, nq)` | driver NOTIFIC (`0x10C + k*0x28`); slot = runtime NQ index (G-NQ-SLOT) |
//! | INTC error-trigger cause, core `c`, block `b`, line `l` | [`intc_cause_offset`] | **sim**: IOFIC groups of 0x40 bytes (driver §6) at `NOTIFIC(c) + 0x2_0000 + b*0x1000 + l*0x40` |
//! | UDMA engine, queue bank `q`, M2S / S2M | [`sim_udma_base`] `+ {0, 0x2_0000} + 0x1000 + q*0x1000` | `nrt_abi::devmap::udma_base` |
//! | tail-pointer increment | bank `+ 0x38` | seed §4.1, driver §5 |
//! | top-SP host trigger | [`xt_local_reg`]`(arch) + 0x15A0` | seed §4.2; the `xt_local_reg` base is **sim** (G-DMA-XTLOCAL): top-SP 0's window past its semaphores |
//! | semaphore page of TPB `n` | [`sema_page`]: READ `+0x1000 + 4i`, INCR `+0x1800 + 4i` | driver §3 |
//!
//! Device DRAM (a flat [`DRAM_BYTES`] window, **sim**): the completion handle at
//! [`COMPLETION_HANDLE_ADDR`], the word its DMA copies over the sentinel at
//! [`DONE_WORD_ADDR`], ring backing from [`RING_BACKING_BASE`], and the staging
//! copy's source and destination buffers.
//!
//! The NQ rings themselves are host memory the device writes (the driver's
//! `dma_alloc_coherent` rings): they are addressed by `(core, nq, offset)`, as
//! [`nrt_core::hal::NqRings`] does, not by a device address.

use nrt_core::arch::{self, Arch};

// The parts of the address map a host must share with the device (INTC, the
// top-SP NX-local block, the semaphore pages) live in `nrt_abi::sim`.
pub use nrt_abi::sim::{
    intc_cause_offset, sema_page, xt_local_reg, INTC_BLOCKS, INTC_BLOCK_STRIDE, INTC_CAUSE, INTC_CAUSE_SET,
    INTC_FROM_NOTIFIC, INTC_GROUP_BYTES, INTC_LINES, SEMAPHORES, SEMA_INCR, SEMA_READ,
};

/// Runtime NQ indices per core the device holds rings for (0..=8; `ens_nq[]`).
pub const NQ_PER_CORE: usize = nrt_core::nq::NQ_PER_CORE;

/// Bytes of one NQ entry.
pub const ENTRY_BYTES: u32 = 16;

/// Size of a NOTIFIC register block (the driver's 0x1000 window).
pub const NOTIFIC_BLOCK_BYTES: u64 = 0x1000;

/// UDMA queue-bank registers the DMA engine uses (driver §5).
pub mod udma {
    /// Ring base, low 32 bits (bits 5:0 must be 0).
    pub const RING_BASE_LO: u64 = 0x28;
    /// Ring base, high 32 bits.
    pub const RING_BASE_HI: u64 = 0x2C;
    /// Ring length in descriptors.
    pub const RING_LEN: u64 = 0x30;
    /// Head pointer: `[23:0]` offset, `[31:30]` ring id (read-only, device-owned).
    pub const HEAD_PTR: u64 = 0x34;
    /// Tail-pointer increment: a descriptor count (nrt-core's `UDMA_TAIL_PTR_INC`).
    pub const TAIL_PTR_INC: u64 = nrt_core::dma::doorbell::UDMA_TAIL_PTR_INC;
    /// Tail pointer: `[23:0]` offset, `[31:30]` ring id (read-only).
    pub const TAIL_PTR: u64 = 0x3C;
}

/// The UDMA engine the simulator models: engine 0 of NeuronCore 0.
pub const SIM_UDMA_ENGINE: u32 = 0;
/// The UDMA queue the staging copy uses.
pub const SIM_UDMA_QUEUE: u32 = 0;

/// BAR0 offset of [`SIM_UDMA_ENGINE`]'s registers (`nrt_abi::devmap::udma_base`).
pub const fn sim_udma_base(arch: Arch) -> u64 {
    match nrt_abi::devmap::udma_base(arch, SIM_UDMA_ENGINE) {
        Some(b) => b,
        None => 0,
    }
}

/// BAR0 offset of the HEAD register of runtime ring `nq` of `core` (G-NQ-SLOT: the
/// slot is the runtime NQ index).
pub const fn nq_head_offset(arch: Arch, core: u8, nq: u8) -> Option<u64> {
    arch::nq_head_register(arch, core, nq)
}

/// Bytes of device DRAM the simulator models.
pub const DRAM_BYTES: usize = 256 * 1024;
/// The completion handle (8 bytes, `dma_alloc_completion_handle`).
pub const COMPLETION_HANDLE_ADDR: u64 = 0x100;
/// The word the staging copy's last descriptor copies over the handle (the
/// driver's "extra 4-byte copy of a marker", `neuron-driver-facts.md` §5).
pub const DONE_WORD_ADDR: u64 = 0x200;
/// The value of that word: anything but the sentinel means done.
pub const DONE_WORD: u32 = 0x0000_0001;
/// First byte of ring backing (`dma_ring_alloc`), 256-byte aligned allocations.
pub const RING_BACKING_BASE: u64 = 0x1000;
/// End of ring backing.
pub const RING_BACKING_END: u64 = 0x1_0000;
/// Alignment of ring backing (driver §5: ring start and end 256-byte aligned).
pub const RING_ALIGN: u64 = 256;
/// Source buffer of the staging copy.
pub const COPY_SRC_ADDR: u64 = 0x1_0000;
/// Destination buffer of the staging copy.
pub const COPY_DST_ADDR: u64 = 0x2_0000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_do_not_overlap() {
        for arch in [Arch::Sunda, Arch::Cayman] {
            let mut spans: Vec<(u64, u64, &str)> = vec![];
            for core in 0..2u8 {
                let n = arch.notific_base(core).unwrap();
                spans.push((n, n + NOTIFIC_BLOCK_BYTES, "notific"));
                let i = intc_cause_offset(arch, core, 0, 0).unwrap();
                spans.push((i, i + u64::from(INTC_BLOCKS) * INTC_BLOCK_STRIDE, "intc"));
                let s = sema_page(arch, u32::from(core));
                spans.push((s, s + 0x2000, "sema"));
            }
            let u = sim_udma_base(arch);
            spans.push((u, u + 0x4_0000, "udma"));
            let x = xt_local_reg(arch);
            spans.push((x, x + 0x2000, "xt_local"));
            spans.sort();
            for w in spans.windows(2) {
                assert!(w[0].1 <= w[1].0, "{arch:?}: {:?} overlaps {:?}", w[0], w[1]);
            }
        }
    }

    #[test]
    fn head_offsets_are_the_drivers() {
        assert_eq!(nq_head_offset(Arch::Sunda, 0, 4), Some(0x3053_5000 + 0x10C + 4 * 0x28));
        assert_eq!(intc_cause_offset(Arch::Sunda, 0, 0, 61), Some(0x3053_5000 + 0x2_0000 + 61 * 0x40));
        assert_eq!(intc_cause_offset(Arch::Sunda, 0, 2, 61), None);
    }
}
