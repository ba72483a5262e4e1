//! Per-generation constants, in one place.
//!
//! The seeds name three generations by their HAL file keys: sunda (NC-v2, arch
//! type 2: Trainium1/Inferentia2), cayman (NC-v3, arch 3: Trainium2) and mariana
//! (NC-v4, arch 4: Trainium3). Numbers come from the seeds or from the public
//! driver, `anchors/neuron-driver-facts.md`; each says which.

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
    /// Every generation, in arch-type order.
    pub const ALL: [Arch; 3] = [Arch::Sunda, Arch::Cayman, Arch::Mariana];

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
        let mut rest: &[Arch] = &Arch::ALL;
        while let [a, tail @ ..] = rest {
            if a.arch_type() == t {
                return Some(*a);
            }
            rest = tail;
        }
        None
    }

    /// The arch of a HAL key, [`Arch::name`].
    pub fn from_name(name: &str) -> Option<Arch> {
        Arch::ALL.into_iter().find(|a| a.name() == name)
    }

    /// The HAL key (`"sunda"`, `"cayman"`, `"mariana"`).
    pub const fn name(self) -> &'static str {
        match self {
            Arch::Sunda => "sunda",
            Arch::Cayman => "cayman",
            Arch::Mariana => "mariana",
        }
    }

    /// BAR0 offset of the NOTIFIC register block of physical core `core`, where
    /// the NQ HEAD registers live (driver `v2|v3/notific.h`, `address_map.h`;
    /// `driver-abi.md` point 4): v2 has two NeuronCores, v3 (and v4, the same
    /// map) eight. A core the arch does not have is `None`.
    ///
    /// The harvest state is still sized for [`MAX_CORES`] (one logical core);
    /// this is the device's register map, which a binding needs for any physical
    /// core it owns.
    pub const fn notific_base(self, core: u8) -> Option<u64> {
        match (self, core) {
            // v2: APB 0x3000_0000 + SENG rel {0, 0x70_0000} + TPB_TOP 0x53_0000 + 0x5000.
            (Arch::Sunda, 0) => Some(0x3053_5000),
            (Arch::Sunda, 1) => Some(0x30C3_5000),
            // v3 (and v4): two IO dies of four NCs, 0x4000_0000 apart.
            (Arch::Cayman | Arch::Mariana, 0) => Some(0x0600_1000),
            (Arch::Cayman | Arch::Mariana, 1) => Some(0x0618_1000),
            (Arch::Cayman | Arch::Mariana, 2) => Some(0x0640_1000),
            (Arch::Cayman | Arch::Mariana, 3) => Some(0x0658_1000),
            (Arch::Cayman | Arch::Mariana, 4) => Some(0x4600_1000),
            (Arch::Cayman | Arch::Mariana, 5) => Some(0x4618_1000),
            (Arch::Cayman | Arch::Mariana, 6) => Some(0x4640_1000),
            (Arch::Cayman | Arch::Mariana, 7) => Some(0x4658_1000),
            _ => None,
        }
    }

    /// Whether the runtime's cayman fixup rewrites the NQ-id tag of a custom
    /// record from engine index `eng` (`arch > 2 && eng == 2`: completion-engine
    /// seed §2 QUIRK, to [`CAYMAN_CUSTOM_NQ_TAG`](crate::nq::entry::CAYMAN_CUSTOM_NQ_TAG);
    /// the index is [`CAYMAN_FIXUP_ENGINE_INDEX`], G-CAYMAN-ENG).
    pub const fn cayman_fixup_applies(self, eng: usize) -> bool {
        self.arch_type() > 2 && eng == CAYMAN_FIXUP_ENGINE_INDEX
    }

    /// NeuronCores per device (the physical cores [`notific_base`](Self::notific_base)
    /// maps): v2 2, v3 and v4 8 (driver `V2_NC_PER_DEVICE`, `V3_NC_PER_DEVICE`).
    pub const fn nc_per_device(self) -> u8 {
        match self {
            Arch::Sunda => 2,
            Arch::Cayman | Arch::Mariana => 8,
        }
    }
}

/// Engine index the cayman custom-record fixup applies to. The seed's text says
/// "on DVE (eng == 2)", but index 2 is POOL in the runtime's order; the binary
/// compares `eng == 2`, so we keep the comparison (`seed-vs-driver.md` point 7,
/// `docs/spec-gaps.md` G-CAYMAN-ENG).
pub const CAYMAN_FIXUP_ENGINE_INDEX: usize = 2;

/// Physical cores of a logical core: the harvest state is sized for two even on
/// one-core models, completion-engine seed §7 GOTCHA.
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

/// Bytes of one NOTIFIC register block (driver `*_TPB_NOTIFIC_SIZE`, 0x1000).
pub const NOTIFIC_BLOCK_BYTES: u64 = 0x1000;

/// NOTIFIC queue slots a block holds: the slots whose registers end inside the
/// 0x1000-byte block, `(0x1000 - 0x100) / 0x28` = 96, `driver-abi.md` point 6.
pub const NOTIFIC_SLOTS: u8 = ((NOTIFIC_BLOCK_BYTES - NOTIFIC_NQ_FIRST) / NOTIFIC_NQ_STRIDE) as u8;

/// BAR0 offset of the HEAD register of NOTIFIC slot `slot` of `core`
/// (`0x10C + slot * 0x28` inside the core's NOTIFIC block); `None` for a core
/// the arch does not have or a slot past the block ([`NOTIFIC_SLOTS`]).
///
/// The slot is the `engine_index` the runtime passed to
/// `NOTIFICATIONS_INIT_V2` for the ring: the driver programs the ring's base and
/// size there, `v2|v3/neuron_dhal_v*.c`, G-NQ-SLOT.
pub const fn nq_head_register(arch: Arch, core: u8, slot: u8) -> Option<u64> {
    if slot >= NOTIFIC_SLOTS {
        return None;
    }
    match arch.notific_base(core) {
        Some(base) => Some(base + NOTIFIC_NQ_FIRST + NOTIFIC_NQ_HEAD + slot as u64 * NOTIFIC_NQ_STRIDE),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ALL` holds every variant once: the match fails to compile when a
    /// variant is added, and points here.
    #[test]
    fn all_holds_every_generation_once() {
        let index = |a: Arch| match a {
            Arch::Sunda => 0,
            Arch::Cayman => 1,
            Arch::Mariana => 2,
        };
        for (i, a) in Arch::ALL.into_iter().enumerate() {
            assert_eq!(index(a), i, "{a:?}");
            assert_eq!(Arch::from_name(a.name()), Some(a));
        }
        assert_eq!((Arch::from_arch_type(1), Arch::from_name("trn1")), (None, None));
    }

    #[test]
    fn arch_types_round_trip() {
        for a in Arch::ALL {
            assert_eq!(Arch::from_arch_type(a.arch_type()), Some(a));
        }
        assert_eq!(Arch::Sunda.arch_type(), 2);
        assert_eq!(Arch::from_arch_type(1), None);
    }

    #[test]
    fn the_cayman_fixup_is_engine_index_2_past_sunda() {
        for eng in 0..ENGINES_PER_CORE {
            assert!(!Arch::Sunda.cayman_fixup_applies(eng), "sunda {eng}");
            for arch in [Arch::Cayman, Arch::Mariana] {
                assert_eq!(arch.cayman_fixup_applies(eng), eng == 2, "{arch:?} {eng}");
            }
        }
    }

    #[test]
    fn head_register_offsets_follow_the_driver() {
        assert_eq!(nq_head_register(Arch::Sunda, 0, 0), Some(0x3053_510C));
        assert_eq!(nq_head_register(Arch::Sunda, 1, 2), Some(0x30C3_5000 + 0x10C + 2 * 0x28));
        assert_eq!(nq_head_register(Arch::Cayman, 0, 4), Some(0x0600_1000 + 0x10C + 4 * 0x28));
        assert_eq!(nq_head_register(Arch::Sunda, 2, 0), None);
    }

    /// driver-abi.md point 4: every NC of each arch has its NOTIFIC block.
    #[test]
    fn every_nc_of_each_arch_has_its_notific_block() {
        let v3 =
            [0x0600_1000, 0x0618_1000, 0x0640_1000, 0x0658_1000, 0x4600_1000, 0x4618_1000, 0x4640_1000, 0x4658_1000];
        for arch in [Arch::Cayman, Arch::Mariana] {
            assert_eq!(arch.nc_per_device(), 8);
            for (nc, base) in v3.iter().enumerate() {
                assert_eq!(arch.notific_base(nc as u8), Some(*base), "{arch:?} NC{nc}");
                assert_eq!(nq_head_register(arch, nc as u8, 0), Some(base + 0x10C), "{arch:?} NC{nc}");
            }
            assert_eq!(arch.notific_base(8), None);
        }
        assert_eq!(Arch::Sunda.nc_per_device(), 2);
        assert_eq!(Arch::Sunda.notific_base(1), Some(0x30C3_5000));
        assert_eq!(Arch::Sunda.notific_base(2), None);
        for arch in [Arch::Sunda, Arch::Cayman, Arch::Mariana] {
            for nc in 0..arch.nc_per_device() {
                assert!(arch.notific_base(nc).is_some());
            }
            assert_eq!(arch.notific_base(arch.nc_per_device()), None);
        }
    }

    /// driver-abi.md point 6: 96 slots fit the 0x1000-byte block, the 97th does not.
    #[test]
    fn slots_are_bounded_to_the_notific_block() {
        assert_eq!(NOTIFIC_SLOTS, 96);
        for arch in [Arch::Sunda, Arch::Cayman] {
            let base = arch.notific_base(0).unwrap();
            let last = nq_head_register(arch, 0, 95).unwrap();
            assert_eq!(last, base + 0x10C + 95 * 0x28);
            // The last slot's registers (0x28 bytes) end inside the block.
            assert!(last - NOTIFIC_NQ_HEAD + NOTIFIC_NQ_STRIDE <= base + NOTIFIC_BLOCK_BYTES);
            assert_eq!(nq_head_register(arch, 0, 96), None);
            assert_eq!(nq_head_register(arch, 0, u8::MAX), None);
        }
    }
}
