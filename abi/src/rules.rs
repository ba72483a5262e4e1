//! The driver's argument rules that are functions of the argument alone: the
//! DMA engine and queue numbering the public driver checks a request against
//! and walks at a process's exit, and the runtime versions it serves (facts only, each with its driver file and
//! function and the rule id the driver model gives it in
//! `docs/driver-conformance.md`).
//!
//! The driver model (`nrt-sim driver`, `platform-sim/src/driver/model/dma.rs`)
//! calls these, and re-exports them under its own names; they live here, in a
//! `no_std` crate with no state, so that kani proves them (`crate::proofs`)
//! and both the model and a host see one definition.

use nrt_core::arch::Arch;

use crate::ioctl::CompatibleVersion;

/// DMA engines per device (`NUM_DMA_ENG_PER_DEVICE`, neuron_ring.h): DMAQ-3
/// refuses an `eng_id` at or past it.
pub const DMA_ENGINES: u32 = 132;
/// Queues per DMA engine (`DMA_MAX_Q_V4`, udma/udma.h): DMAQ-4 refuses a `qid`
/// at or past it.
pub const DMA_QUEUES: u32 = 16;
/// Smallest ring, descriptors (`UDMA_MIN_Q_SIZE`, udma/udma.h).
pub const UDMA_MIN_Q_SIZE: u32 = 32;
/// Largest ring, descriptors (`UDMA_MAX_Q_SIZE`, udma/udma.h).
pub const UDMA_MAX_Q_SIZE: u32 = (1 << 24) - 16;

/// Cores per device the driver knows for `arch`: core's
/// [`Arch::nc_per_device`] (`V2_NC_PER_DEVICE` 2, `V3_NC_PER_DEVICE` 8), as the
/// `u32` the driver's arguments carry.
pub const fn nc_per_device(arch: Arch) -> u32 {
    arch.nc_per_device() as u32
}

/// INFO-4: the runtime versions the driver serves for `arch`, as
/// `COMPATIBLE_VERSION` answers them (`ncdev_compatible_version`:
/// `V2_RT_{MAX,MIN}_COMPATIBLE_VERSION` 7/5 in v2/neuron_dhal_v2.c, `V3_...`
/// 11/10 in v3/neuron_dhal_v3.c; mariana: v3's, G-DRV-ARCH4).
pub const fn compatible_version(arch: Arch) -> CompatibleVersion {
    match arch {
        Arch::Sunda => CompatibleVersion { max: 7, min: 5 },
        Arch::Cayman | Arch::Mariana => CompatibleVersion { max: 11, min: 10 },
    }
}

/// DMA engines the driver's flush loop covers (`dma_eng_per_nd`: cores x 16,
/// v2 32 and v3 128; v2|v3/neuron_dhal_v*.c, mariana as v3): the H2T engines
/// past them are never re-pointed (FLUSH-2, neuron_ring.c:
/// `ndmar_handle_process_exit`).
pub const fn dma_eng_per_nd(arch: Arch) -> u32 {
    nc_per_device(arch) * 16
}

/// Whether queue `qid` of engine `eng` is reserved for the NX cores, which the
/// flush leaves alone (FLUSH-2; `ndmar_is_nx_ring_v2`: queue 14 on engines
/// 0..=10 of each core's 16, `V2_TPB_ENG_PER_NC + V2_TS_PER_DEVICE`;
/// `ndmar_is_nx_ring_v3`: queue 14 on engines 0..=4, 7 and 8 of each core's 16;
/// mariana as v3).
pub const fn is_nx_ring(arch: Arch, eng: u32, qid: u32) -> bool {
    let e = eng % 16;
    qid == DMA_QUEUES - 2
        && match arch {
            Arch::Sunda => e < 5 + 6,
            Arch::Cayman | Arch::Mariana => e < 5 || e == 7 || e == 8,
        }
}

/// The H2T queue of core `nc` (FLUSH-2 leaves it alone; `ndmar_get_h2t_eng_id`
/// / `_qid`, neuron_ring.c and v2|v3/neuron_dhal_v*.c: v2 engine 32 (D2H) for
/// NC0 and 33 (H2D) for NC1, queue 0; v3 engines 128..=131, one per pair of
/// cores, queue `nc % 2`; mariana as v3, G-DRV-ARCH4).
pub const fn h2t_queue(arch: Arch, nc: u32) -> (u32, u32) {
    match arch {
        Arch::Sunda => (if nc == 0 { 32 } else { 33 }, 0),
        Arch::Cayman | Arch::Mariana => (128 + nc / 2, nc % 2),
    }
}

/// Whether the driver initialised DMA engine `eng` (so that it has 16 queues;
/// an engine it never initialised has `num_of_queues` 0, which DMAQ-11 then
/// refuses): v2 the 16 engines of each of its 2 cores and the two H2T engines,
/// 0..=33; v3 every engine, 0..=131 (neuron_ring.c: `ndmar_init_nc`;
/// v2|v3/address_map.h).
pub const fn engine_initialised(arch: Arch, eng: u32) -> bool {
    match arch {
        Arch::Sunda => eng <= 33,
        Arch::Cayman | Arch::Mariana => eng < DMA_ENGINES,
    }
}

/// Why `udma_q_init_validate` refused one direction of a queue (the driver
/// answers `EINVAL` for each).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RingRefusal {
    /// The engine's `num_of_queues` is 0: the driver never initialised it.
    EngineNotInitialised,
    /// Fewer than `UDMA_MIN_Q_SIZE` descriptors.
    TooSmall,
    /// More than `UDMA_MAX_Q_SIZE` descriptors.
    TooLarge,
}

impl RingRefusal {
    /// The refusal in words, for the model's log.
    pub const fn why(self) -> &'static str {
        match self {
            RingRefusal::EngineNotInitialised => "the driver never initialised this engine: its num_of_queues is 0",
            RingRefusal::TooSmall => "ring size < UDMA_MIN_Q_SIZE (32)",
            RingRefusal::TooLarge => "ring size > UDMA_MAX_Q_SIZE (2^24 - 16)",
        }
    }
}

/// DMAQ-11 / DMAQ-12: one direction of `DMA_QUEUE_INIT` on engine `eng` with a
/// ring of `count` descriptors (udma/udma_main.c: `udma_q_init_validate`, the
/// `qid >= num_of_queues` check first, then the two size bounds): `Err` says
/// which check refused it.
pub const fn udma_q_init_validate(arch: Arch, eng: u32, count: u32) -> Result<(), RingRefusal> {
    if !engine_initialised(arch, eng) {
        Err(RingRefusal::EngineNotInitialised)
    } else if count < UDMA_MIN_Q_SIZE {
        Err(RingRefusal::TooSmall)
    } else if count > UDMA_MAX_Q_SIZE {
        Err(RingRefusal::TooLarge)
    } else {
        Ok(())
    }
}
