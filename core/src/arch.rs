//! Per-generation constants, in one place.
//!
//! The seeds name three generations by their HAL file keys: sunda (NC-v2, arch
//! type 2: Trainium1/Inferentia2), cayman (NC-v3, arch 3: Trainium2) and mariana
//! (NC-v4, arch 4: Trainium3). Numbers come from the seeds or from the public
//! driver (`anchors/neuron-driver-facts.md`); each says which.

/// A NeuronCore generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Arch {
    /// NC-v2, arch type 2 (trn1, inf2).
    Sunda,
    /// NC-v3, arch type 3 (trn2).
    Cayman,
    /// NC-v4, arch type 4 (trn3).
    Mariana,
}

impl Arch {
    /// The arch type number the runtime compares (`arch == 2` is sunda; the seed's
    /// cayman fixups test `arch > 2`).
    pub const fn arch_type(self) -> u8 {
        match self {
            Arch::Sunda => 2,
            Arch::Cayman => 3,
            Arch::Mariana => 4,
        }
    }

    /// The arch of an arch type number, if known.
    pub const fn from_arch_type(t: u8) -> Option<Arch> {
        match t {
            2 => Some(Arch::Sunda),
            3 => Some(Arch::Cayman),
            4 => Some(Arch::Mariana),
            _ => None,
        }
    }

    /// The HAL key (`"sunda"`, `"cayman"`, `"mariana"`).
    pub const fn name(self) -> &'static str {
        match self {
            Arch::Sunda => "sunda",
            Arch::Cayman => "cayman",
            Arch::Mariana => "mariana",
        }
    }

    /// BAR0 offset of the NOTIFIC register block of physical core `core` (0 or 1),
    /// where the NQ HEAD registers live (driver `v2|v3/address_map.h`;
    /// `neuron-driver-facts.md` §2.3). Cores above 1 are `None`.
    pub const fn notific_base(self, core: u8) -> Option<u64> {
        match (self, core) {
            // v2: APB 0x3000_0000 + SENG rel {0, 0x70_0000} + TPB_TOP 0x53_0000 + 0x5000.
            (Arch::Sunda, 0) => Some(0x3053_5000),
            (Arch::Sunda, 1) => Some(0x30C3_5000),
            // v3 (and v4, same map): NC0 0x600_1000, NC1 0x618_1000.
            (Arch::Cayman | Arch::Mariana, 0) => Some(0x0600_1000),
            (Arch::Cayman | Arch::Mariana, 1) => Some(0x0618_1000),
            _ => None,
        }
    }
}

/// Physical cores of a logical core: the harvest state is sized for two even on
/// one-core models (completion-engine seed §7 GOTCHA).
pub const MAX_CORES: usize = 2;

/// TPB engines per core (`al_hal_tpb_get_tpb_eng_count`, 5 on sunda; driver
/// `V*_TPB_ENG_PER_NC`).
pub const ENGINES_PER_CORE: usize = 5;

/// Byte offset of the first per-queue register slot in a NOTIFIC block
/// (driver `notific.h`: BASE_ADDR_LO at 0x100).
pub const NOTIFIC_NQ_FIRST: u64 = 0x100;
/// Stride of the per-queue register slots in a NOTIFIC block (`NOTIFIC_NQ_SIZE`).
pub const NOTIFIC_NQ_STRIDE: u64 = 0x28;
/// Offset of HEAD within a per-queue slot (0x10C - 0x100).
pub const NOTIFIC_NQ_HEAD: u64 = 0x0C;

/// BAR0 offset of the HEAD register of NOTIFIC slot `slot` of `core`
/// (`0x10C + slot * 0x28` inside the core's NOTIFIC block).
///
/// The slot number a runtime ring occupies is not public
/// (`neuron-driver-facts.md` §2.1); platforms choose it (the simulator uses the
/// runtime NQ index, see `docs/spec-gaps.md` G-NQ-SLOT).
pub const fn nq_head_register(arch: Arch, core: u8, slot: u8) -> Option<u64> {
    match arch.notific_base(core) {
        Some(base) => Some(base + NOTIFIC_NQ_FIRST + NOTIFIC_NQ_HEAD + slot as u64 * NOTIFIC_NQ_STRIDE),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arch_types_round_trip() {
        for a in [Arch::Sunda, Arch::Cayman, Arch::Mariana] {
            assert_eq!(Arch::from_arch_type(a.arch_type()), Some(a));
        }
        assert_eq!(Arch::Sunda.arch_type(), 2);
        assert_eq!(Arch::from_arch_type(1), None);
    }

    #[test]
    fn head_register_offsets_follow_the_driver() {
        assert_eq!(nq_head_register(Arch::Sunda, 0, 0), Some(0x3053_510C));
        assert_eq!(nq_head_register(Arch::Sunda, 1, 2), Some(0x30C3_5000 + 0x10C + 2 * 0x28));
        assert_eq!(nq_head_register(Arch::Cayman, 0, 4), Some(0x0600_1000 + 0x10C + 4 * 0x28));
        assert_eq!(nq_head_register(Arch::Sunda, 2, 0), None);
    }
}
