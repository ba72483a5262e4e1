//! Kani proofs of nrt-abi's pure functions: the `_IOC` encoding, the simulated
//! device's addresses and the driver's argument rules.
//!
//! Each property is a plain function that asserts, run by a `prove_X` harness
//! on `kani::any()` inputs and by an `X_tests` test on enumerated or sampled
//! ones, so the same assertions run without kani. [`cover!`] marks each
//! outcome a property relies on; an unreached cover fails either run.

use nrt_core::arch::Arch;
use nrt_core::dma::HOST_TRIGGER_OFFSET;

use crate::devmap::{self, udma_base, udma_window_bytes, SEMAPHORE_RESOURCE_BYTES};
use crate::ioctl::{ioc, ioc_size, NEURON_IOCTL_BASE};
use crate::rules::{
    dma_eng_per_nd, engine_initialised, h2t_queue, is_nx_ring, nc_per_device, udma_q_init_validate, RingRefusal,
    DMA_ENGINES, DMA_QUEUES, UDMA_MAX_Q_SIZE, UDMA_MIN_Q_SIZE,
};
use crate::sim::{
    intc_cause_offset, sema_page, xt_local_reg, INTC_BLOCKS, INTC_BLOCK_STRIDE, INTC_FROM_NOTIFIC, INTC_GROUP_BYTES,
    INTC_LINES, SEMA_INCR, SEMA_READ,
};

#[cfg(kani)]
macro_rules! cover {
    ($cond:expr, $msg:literal) => {
        kani::cover!($cond, $msg)
    };
}
#[cfg(not(kani))]
macro_rules! cover {
    ($cond:expr, $msg:literal) => {
        if $cond {
            tests::hit($msg)
        }
    };
}

/// The three architectures, by a byte.
fn arch_of(x: u8) -> Arch {
    match x % 3 {
        0 => Arch::Sunda,
        1 => Arch::Cayman,
        _ => Arch::Mariana,
    }
}

/// `ioctl::ioc` for every direction, number and size: each field decodes back
/// exactly, the type is `'N'`, and two different requests never share a code.
pub(crate) fn ioc_fields_round_trip(dir: u32, nr: u32, size: u32, dir2: u32, nr2: u32, size2: u32) {
    let (dir, nr, size) = (dir % 4, nr % 256, size % (1 << 14));
    let (dir2, nr2, size2) = (dir2 % 4, nr2 % 256, size2 % (1 << 14));
    let c = ioc(dir, nr, size);
    assert_eq!(ioc_size(c), size, "_IOC_SIZE");
    assert_eq!(c & 0xFF, nr, "_IOC_NR");
    assert_eq!((c >> 8) & 0xFF, NEURON_IOCTL_BASE, "_IOC_TYPE");
    assert_eq!(c >> 30, dir, "_IOC_DIR");
    let same = dir == dir2 && nr == nr2 && size == size2;
    assert_eq!(c == ioc(dir2, nr2, size2), same, "two requests share a code");
    cover!(!same && nr == nr2, "ioc: the same number, another direction or size");
    cover!(dir == 3 && size == (1 << 14) - 1, "ioc: every bit of direction and size set");
}

/// `sim::intc_cause_offset` is `Some` exactly for a modelled block and line
/// of an existing core, is the group's cause word inside the core's
/// error-trigger blocks, and gives each block and line its own register.
pub(crate) fn intc_cause_offset_is_exact_and_in_its_blocks(a: u8, core: u8, block: u32, line: u32, b2: u32, l2: u32) {
    let arch = arch_of(a);
    let got = intc_cause_offset(arch, core, block, line);
    let base = arch.notific_base(core);
    assert_eq!(got.is_some(), block < INTC_BLOCKS && line < INTC_LINES && base.is_some());
    let (Some(off), Some(n)) = (got, base) else {
        cover!(base.is_some() && line >= INTC_LINES, "intc: a line past the block");
        cover!(base.is_none(), "intc: a core the architecture does not have");
        return;
    };
    let first = n + INTC_FROM_NOTIFIC;
    assert_eq!(off, first + u64::from(block) * INTC_BLOCK_STRIDE + u64::from(line) * INTC_GROUP_BYTES);
    assert!(off >= first && off + 4 <= first + u64::from(INTC_BLOCKS) * INTC_BLOCK_STRIDE, "outside the blocks");
    assert_eq!(off % 4, 0, "a cause word is 4-byte aligned");
    if let Some(other) = intc_cause_offset(arch, core, b2, l2) {
        assert_eq!(other == off, (b2, l2) == (block, line), "two lines share a cause register");
        cover!(b2 != block && l2 == line, "intc: the same line of the other block");
    }
    cover!(block == INTC_BLOCKS - 1 && line == INTC_LINES - 1, "intc: the last line of the last block");
}

/// The simulator's host trigger (`sim::xt_local_reg + HOST_TRIGGER_OFFSET`)
/// lies inside top-SP 0's window past its SEMAPHORE resource
/// (`devmap::top_sp`), in no DMA engine's registers (`devmap::udma_base` of
/// every engine, each as wide as its stride) and in no semaphore block of a
/// core the architecture has (`sim::sema_page`, its READ and INCR aliases).
pub(crate) fn top_sp_window_and_trigger_stay_clear(a: u8, eng: u32, tpb: u32) {
    let arch = arch_of(a);
    let xt = xt_local_reg(arch);
    let trigger = xt + HOST_TRIGGER_OFFSET;
    let top = devmap::top_sp(arch, 0);
    assert!(top.is_some(), "every arch has a top-SP 0");
    if let Some(w) = top {
        assert!(w.holds(trigger, 4), "the host trigger is in top-SP 0's window");
        assert!(trigger >= w.base + SEMAPHORE_RESOURCE_BYTES, "the host trigger is past the top-SP's semaphores");
    }
    // Two ranges [a, a + n) and [b, b + m) overlap exactly when each starts
    // before the other ends.
    let overlaps = |a: u64, n: u64, b: u64, m: u64| a < b + m && b < a + n;
    if let Some(e) = udma_base(arch, eng) {
        assert!(!overlaps(trigger, 4, e, udma_window_bytes(arch)), "the host trigger is inside a DMA engine");
        cover!(eng == devmap::engine_count(arch) - 1, "top-SP: the last engine of the device");
    }
    if tpb < nc_per_device(arch) {
        let s = sema_page(arch, tpb);
        let page = SEMA_INCR + 0x800;
        assert!(SEMA_READ < page, "the READ alias is inside its page");
        assert!(!overlaps(trigger, 4, s, page), "the host trigger is inside a semaphore page");
        cover!(tpb == nc_per_device(arch) - 1, "top-SP: the last core's semaphore page");
    }
    cover!(matches!(arch, Arch::Mariana), "top-SP: mariana plays cayman's map");
}

/// Every core's `rules::h2t_queue` is a queue of an initialised engine past
/// the ones FLUSH-2 walks, not an NX ring, and no two cores share one.
pub(crate) fn h2t_queues_are_initialised_distinct_and_past_the_flush(a: u8, nc: u32, nc2: u32) {
    let arch = arch_of(a);
    let n = nc_per_device(arch);
    let (nc, nc2) = (nc % n, nc2 % n);
    let (eng, qid) = h2t_queue(arch, nc);
    assert!(qid < DMA_QUEUES, "the H2T queue is a queue");
    assert!(engine_initialised(arch, eng), "the H2T engine is one the driver initialised");
    // The driver's numbers: the flush walks 32 engines on v2 and 128 on v3;
    // the H2T engines follow.
    let walked = match arch {
        Arch::Sunda => 32,
        Arch::Cayman | Arch::Mariana => 128,
    };
    assert_eq!(dma_eng_per_nd(arch), walked, "the engines the flush walks");
    assert!(eng >= walked && eng < walked + 4 && eng < DMA_ENGINES, "the flush walks the H2T engine");
    assert!(!is_nx_ring(arch, eng, qid), "an H2T queue is an NX ring");
    assert_eq!(h2t_queue(arch, nc2) == (eng, qid), nc == nc2, "two cores share an H2T queue");
    cover!(nc != nc2 && h2t_queue(arch, nc2).0 == eng, "h2t: two cores on one engine, different queues");
    cover!(matches!(arch, Arch::Sunda) && nc == 1, "h2t: v2's second core (engine 33)");
}

/// `rules::is_nx_ring` is the driver's list, written here independently, for
/// every engine and queue. Driver: `ndmar_is_nx_ring_v2`, `ndmar_is_nx_ring_v3`.
pub(crate) fn nx_rings_are_the_drivers(a: u8, eng: u32, qid: u32) {
    let arch = arch_of(a);
    // The driver's engine lists as bit masks: 0..=10 (v2), 0..=4, 7, 8 (v3).
    let listed: u32 = match arch {
        Arch::Sunda => 0b000_0111_1111_1111,
        Arch::Cayman | Arch::Mariana => 0b000_0001_1001_1111,
    };
    let documented = qid == 14 && (listed >> (eng % 16)) & 1 == 1;
    assert_eq!(is_nx_ring(arch, eng, qid), documented);
    cover!(documented && eng % 16 == 10 && matches!(arch, Arch::Sunda), "nx: v2's engine 10");
    cover!(!documented && qid == 14 && eng % 16 == 5, "nx: v3's engine 5 is not one");
}

/// `rules::udma_q_init_validate`, DMAQ-11 and DMAQ-12, accepts exactly an
/// initialised engine with 32 to 2^24 - 16 descriptors, names the first check
/// that refused, and an accepted ring's bytes fit 32 bits.
pub(crate) fn udma_q_init_validate_is_the_drivers(a: u8, eng: u32, count: u32) {
    let arch = arch_of(a);
    let r = udma_q_init_validate(arch, eng, count);
    let init = match arch {
        Arch::Sunda => eng <= 33,
        Arch::Cayman | Arch::Mariana => eng < 132,
    };
    assert_eq!(engine_initialised(arch, eng), init);
    assert!(!init || eng < DMA_ENGINES);
    // udma/udma.h's bounds as numbers, so a wrong constant fails too.
    let sized = (32..=16_777_200).contains(&count);
    assert_eq!((UDMA_MIN_Q_SIZE, UDMA_MAX_Q_SIZE), (32, 16_777_200));
    assert_eq!(r.is_ok(), init && sized);
    match r {
        Ok(()) => assert!(u64::from(count) * 16 <= u64::from(u32::MAX)),
        Err(RingRefusal::EngineNotInitialised) => assert!(!init),
        Err(RingRefusal::TooSmall) => assert!(init && count < 32),
        Err(RingRefusal::TooLarge) => assert!(init && count > 16_777_200),
    }
    cover!(r.is_ok() && count == UDMA_MAX_Q_SIZE, "dmaq11: the largest ring");
    cover!(r.is_ok() && count == UDMA_MIN_Q_SIZE, "dmaq11: the smallest ring");
    cover!(init && count == UDMA_MIN_Q_SIZE - 1, "dmaq11: one below the smallest");
    cover!(init && count == UDMA_MAX_Q_SIZE + 1, "dmaq11: one past the largest");
    cover!(!init && sized, "dmaq11: a good size on an engine never initialised");
}

// The harnesses: no loop in any property, so no unwind bound.

#[cfg(kani)]
#[kani::proof]
fn prove_ioc_fields_round_trip() {
    ioc_fields_round_trip(kani::any(), kani::any(), kani::any(), kani::any(), kani::any(), kani::any());
}

#[cfg(kani)]
#[kani::proof]
fn prove_intc_cause_offset_is_exact_and_in_its_blocks() {
    intc_cause_offset_is_exact_and_in_its_blocks(
        kani::any(),
        kani::any(),
        kani::any(),
        kani::any(),
        kani::any(),
        kani::any(),
    );
}

#[cfg(kani)]
#[kani::proof]
fn prove_top_sp_window_and_trigger_stay_clear() {
    top_sp_window_and_trigger_stay_clear(kani::any(), kani::any(), kani::any());
}

#[cfg(kani)]
#[kani::proof]
fn prove_h2t_queues_are_initialised_distinct_and_past_the_flush() {
    h2t_queues_are_initialised_distinct_and_past_the_flush(kani::any(), kani::any(), kani::any());
}

#[cfg(kani)]
#[kani::proof]
fn prove_nx_rings_are_the_drivers() {
    nx_rings_are_the_drivers(kani::any(), kani::any(), kani::any());
}

#[cfg(kani)]
#[kani::proof]
fn prove_udma_q_init_validate_is_the_drivers() {
    udma_q_init_validate_is_the_drivers(kani::any(), kani::any(), kani::any());
}

#[cfg(test)]
mod tests {
    extern crate std;

    use std::cell::RefCell;
    use std::collections::BTreeSet;
    use std::vec::Vec;

    use super::*;

    std::thread_local! {
        static HITS: RefCell<BTreeSet<&'static str>> = const { RefCell::new(BTreeSet::new()) };
    }

    /// A `cover!` reached.
    pub(super) fn hit(msg: &'static str) {
        HITS.with(|h| h.borrow_mut().insert(msg));
    }

    /// Run `body`, then check every cover in `want` was reached.
    fn covered(want: &[&str], body: impl FnOnce()) {
        HITS.with(|h| h.borrow_mut().clear());
        body();
        let hits = HITS.with(|h| h.borrow().clone());
        let missing: Vec<&&str> = want.iter().filter(|w| !hits.contains(**w)).collect();
        assert!(missing.is_empty(), "covers never reached: {missing:?}");
    }

    /// 32-bit values: the edges of every bound the properties name, and a
    /// fixed pseudo-random sample.
    fn u32s() -> Vec<u32> {
        let mut v: Vec<u32> = [0, 1, 2, 3, 5, 7, 8, 10, 11, 13, 14, 15, 16, 31, 32, 33, 63, 64, 127, 128, 131, 132]
            .into_iter()
            .chain([255, 256, (1 << 14) - 1, 1 << 14, UDMA_MAX_Q_SIZE, UDMA_MAX_Q_SIZE + 1, u32::MAX])
            .collect();
        let mut x = 0x2545_F491_u32;
        for _ in 0..64 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            v.push(x);
        }
        v
    }

    #[test]
    fn ioc_fields_round_trip_tests() {
        covered(
            &["ioc: the same number, another direction or size", "ioc: every bit of direction and size set"],
            || {
                for dir in 0..4 {
                    for nr in [0, 1, 0x2A, 0xE0, 0xFF, 0x100] {
                        for size in [0, 8, 12, 200, (1 << 14) - 1, 1 << 14] {
                            ioc_fields_round_trip(dir, nr, size, 3 - dir, nr, size);
                            ioc_fields_round_trip(dir, nr, size, dir, nr, size);
                            ioc_fields_round_trip(dir, nr, size, dir, nr, 8);
                        }
                    }
                }
            },
        );
    }

    #[test]
    fn intc_cause_offset_is_exact_and_in_its_blocks_tests() {
        covered(
            &[
                "intc: a line past the block",
                "intc: a core the architecture does not have",
                "intc: the same line of the other block",
                "intc: the last line of the last block",
            ],
            || {
                for a in 0..3 {
                    for core in [0, 1, 2, 7, 8, 255] {
                        for block in 0..=INTC_BLOCKS {
                            for line in [0, 1, INTC_LINES - 1, INTC_LINES, u32::MAX] {
                                intc_cause_offset_is_exact_and_in_its_blocks(a, core, block, line, 1 - block % 2, line);
                                intc_cause_offset_is_exact_and_in_its_blocks(a, core, block, line, block, 3);
                            }
                        }
                    }
                }
            },
        );
    }

    #[test]
    fn top_sp_window_and_trigger_stay_clear_tests() {
        covered(
            &[
                "top-SP: the last engine of the device",
                "top-SP: the last core's semaphore page",
                "top-SP: mariana plays cayman's map",
            ],
            || {
                for a in 0..3 {
                    for eng in 0..=DMA_ENGINES {
                        top_sp_window_and_trigger_stay_clear(a, eng, eng % 9);
                    }
                }
            },
        );
    }

    #[test]
    fn h2t_queues_are_initialised_distinct_and_past_the_flush_tests() {
        covered(&["h2t: two cores on one engine, different queues", "h2t: v2's second core (engine 33)"], || {
            for a in 0..3 {
                for nc in 0..8 {
                    for nc2 in 0..8 {
                        h2t_queues_are_initialised_distinct_and_past_the_flush(a, nc, nc2);
                    }
                }
            }
        });
    }

    #[test]
    fn nx_rings_are_the_drivers_tests() {
        covered(&["nx: v2's engine 10", "nx: v3's engine 5 is not one"], || {
            for a in 0..3 {
                for eng in 0..DMA_ENGINES + 4 {
                    for qid in [0, 13, 14, 15, 16] {
                        nx_rings_are_the_drivers(a, eng, qid);
                    }
                }
            }
        });
    }

    #[test]
    fn udma_q_init_validate_is_the_drivers_tests() {
        covered(
            &[
                "dmaq11: the largest ring",
                "dmaq11: the smallest ring",
                "dmaq11: one below the smallest",
                "dmaq11: one past the largest",
                "dmaq11: a good size on an engine never initialised",
            ],
            || {
                let all = u32s();
                for a in 0..3 {
                    for &eng in &all {
                        for &count in &all {
                            udma_q_init_validate_is_the_drivers(a, eng, count);
                        }
                    }
                }
            },
        );
    }
}
