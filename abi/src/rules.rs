//! The driver's argument rules that depend on the argument alone: DMA engine
//! and queue numbering and the runtime versions served. Each names its driver
//! file and function and its rule id in `docs/driver-conformance.md`.
//!
//! Here, stateless and `no_std`, so that kani proves them once for the model
//! and a host.

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

/// [`Arch::nc_per_device`] as the `u32` the driver's arguments carry.
pub const fn nc_per_device(arch: Arch) -> u32 {
    arch.nc_per_device() as u32
}

/// INFO-4: the runtime versions `COMPATIBLE_VERSION` answers for `arch`.
/// Driver: v2|v3/neuron_dhal_v*.c, `V*_RT_{MAX,MIN}_COMPATIBLE_VERSION`;
/// mariana takes v3's, G-DRV-ARCH4.
pub const fn compatible_version(arch: Arch) -> CompatibleVersion {
    match arch {
        Arch::Sunda => CompatibleVersion { max: 7, min: 5 },
        Arch::Cayman | Arch::Mariana => CompatibleVersion { max: 11, min: 10 },
    }
}

/// FLUSH-2: the DMA engines the exit flush covers, 16 per core; the H2T
/// engines past them are never re-pointed. Driver: neuron_ring.c,
/// `ndmar_handle_process_exit`; `dma_eng_per_nd`.
pub const fn dma_eng_per_nd(arch: Arch) -> u32 {
    nc_per_device(arch) * 16
}

/// FLUSH-2: whether queue `qid` of engine `eng` is the NX cores', which the
/// flush leaves alone. Driver: `ndmar_is_nx_ring_v2`, `ndmar_is_nx_ring_v3`.
pub const fn is_nx_ring(arch: Arch, eng: u32, qid: u32) -> bool {
    let e = eng % 16;
    qid == DMA_QUEUES - 2
        && match arch {
            Arch::Sunda => e < 5 + 6,
            Arch::Cayman | Arch::Mariana => e < 5 || e == 7 || e == 8,
        }
}

/// The H2T queue of core `nc`, which FLUSH-2 leaves alone. Driver:
/// `ndmar_get_h2t_eng_id`, `ndmar_get_h2t_qid`; G-DRV-ARCH4.
pub const fn h2t_queue(arch: Arch, nc: u32) -> (u32, u32) {
    match arch {
        Arch::Sunda => (if nc == 0 { 32 } else { 33 }, 0),
        Arch::Cayman | Arch::Mariana => (128 + nc / 2, nc % 2),
    }
}

/// Whether the driver initialised DMA engine `eng`; DMAQ-11 refuses another.
/// Driver: neuron_ring.c, `ndmar_init_nc`.
pub const fn engine_initialised(arch: Arch, eng: u32) -> bool {
    match arch {
        Arch::Sunda => eng <= 33,
        Arch::Cayman | Arch::Mariana => eng < DMA_ENGINES,
    }
}

/// Why `udma_q_init_validate` refused one direction of a queue; each is `EINVAL`.
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

/// DMAQ-11, DMAQ-12: one direction of `DMA_QUEUE_INIT` on engine `eng` with
/// `count` descriptors; `Err` names the check that refused it, in the driver's
/// order. Driver: udma/udma_main.c, `udma_q_init_validate`.
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
