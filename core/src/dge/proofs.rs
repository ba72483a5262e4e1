//! Proof of the DGE accessors' shared guards, descriptor-handoff seed §6.1.

use super::{is_nx_pool_kind, DgeCore, DgeError, BOOT_STATE_BOOTED, KIND_GUARD_MAX, NX_POOL_KIND_MASK};
use crate::proofs::cover;

/// The five NX_POOL kinds: the bits of 0x1_0202_0204, "decoded by brute force"
/// in the seed.
const NX_POOL_KINDS: [u32; 5] = [2, 9, 17, 25, 32];

/// Seed §6.1 ("The shared guards", and its CORRECTION: "the gate admits the
/// NX_POOL cores ONLY"): for every `core->kind` and `boot_state`, the guards
/// admit exactly a BOOTED core of one of the five NX_POOL kinds {2, 9, 17, 25,
/// 32}; a core that is not booted is refused first (status 8, `NotBooted`), then a
/// kind outside the set (`BadKind`), including every kind above the `cmp $0x20`
/// bound, where the 64-bit `bt` would otherwise wrap.
///
/// Precondition: none (every kind and boot state is an input the guard must judge).
pub(crate) fn dge_guards_admit_exactly_nx_pool(kind: u32, boot_state: u32, base: u64) {
    let in_set = NX_POOL_KINDS.contains(&kind);
    assert_eq!(is_nx_pool_kind(kind), in_set);
    assert_eq!(NX_POOL_KIND_MASK.count_ones(), 5);
    if kind > KIND_GUARD_MAX {
        assert!(!is_nx_pool_kind(kind));
    }
    let core = DgeCore { kind, boot_state, base };
    let r = core.check();
    cover!(r.is_ok(), "dge: admitted");
    cover!(boot_state == BOOT_STATE_BOOTED && !in_set, "dge: booted, wrong kind");
    cover!(kind > KIND_GUARD_MAX, "dge: kind above the bt bound");
    match r {
        Ok(()) => assert!(boot_state == BOOT_STATE_BOOTED && in_set),
        Err(DgeError::NotBooted(s)) => {
            assert_eq!(s, boot_state);
            assert_ne!(boot_state, BOOT_STATE_BOOTED);
        }
        Err(DgeError::BadKind(k)) => {
            assert_eq!(k, kind);
            assert!(boot_state == BOOT_STATE_BOOTED && !in_set);
        }
        Err(_) => panic!("the guard returns only NotBooted or BadKind"),
    }
    if let Err(e) = r {
        assert_eq!(e.code(), super::UCODE_INVALID);
    }
}

#[cfg(kani)]
#[kani::proof]
#[kani::unwind(6)]
fn prove_dge_guards_admit_exactly_nx_pool() {
    dge_guards_admit_exactly_nx_pool(kani::any(), kani::any(), kani::any());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proofs::{assert_covered, cases, reset_covers};
    use proptest::prelude::*;

    #[test]
    fn dge_guards_admit_exactly_nx_pool_tests() {
        reset_covers();
        let top = if cfg!(miri) { 0x40 } else { 0x1_0000 };
        for kind in (0..top).chain([u32::MAX - 1, u32::MAX, 0x8000_0000, 64, 96, 0x20 + 64]) {
            for boot in [0, 1, 2, u32::MAX] {
                dge_guards_admit_exactly_nx_pool(kind, boot, 0);
            }
        }
        proptest!(ProptestConfig::with_cases(cases(1024)), |(k in any::<u32>(), b in any::<u32>(), base in any::<u64>())| {
            dge_guards_admit_exactly_nx_pool(k, b, base);
        });
        assert_covered(3);
    }
}
