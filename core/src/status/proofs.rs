//! Proof of the status priority (completion-engine seed §4: "nrt_get_status_priority
//! resolves multi-core disagreement"; the table is G-STATUS-PRIO in
//! `docs/spec-gaps.md`).

use super::{NrtStatus, Priority};
use crate::proofs::cover;

/// G-STATUS-PRIO as `docs/spec-gaps.md` words it, written independently of
/// `NrtStatus::priority` (ranges checked in the document's order): SUCCESS none;
/// 5, 6 high; other codes below 1004 medium; 1004 critical; 1005, 1006, 1100
/// medium; 1200-1203 critical; 1204 high; 1205 critical; 1206 high; anything else
/// medium.
fn documented(code: u32) -> Priority {
    if code == 0 {
        Priority::None
    } else if code == 5 || code == 6 {
        Priority::High
    } else if code < 1004 {
        Priority::Medium
    } else if code == 1004 {
        Priority::Critical
    } else if code == 1005 || code == 1006 || code == 1100 {
        Priority::Medium
    } else if (1200..=1203).contains(&code) || code == 1205 {
        Priority::Critical
    } else if code == 1204 || code == 1206 {
        Priority::High
    } else {
        Priority::Medium
    }
}

/// For every three status values (enumerators or not): the value round-trips
/// through `from_code`; the priority is the documented table's; `worst` is a
/// selection by a total preorder on priority: it returns one of its arguments,
/// the one of higher priority, and on a tie the one already held; its priority
/// is commutative and associative (so the cross-core fold does not depend on the
/// order of the cores); `NRT_SUCCESS` is its identity and the lowest priority.
///
/// Precondition: none (a status may come from a device or a C caller).
pub(crate) fn worst_is_a_total_preorder_by_the_table(a: u32, b: u32, c: u32) {
    let (x, y, z) = (NrtStatus::from_code(a), NrtStatus::from_code(b), NrtStatus::from_code(c));
    assert_eq!(x.code(), a);
    assert_eq!(x.priority(), documented(a));
    assert_eq!(x.is_success(), a == 0);
    assert_eq!(x.priority() == Priority::None, a == 0);
    let (px, py, pz) = (x.priority(), y.priority(), z.priority());
    let w = x.worst(y);
    assert!(w == x || w == y);
    assert_eq!(w.priority(), px.max(py));
    if px == py {
        cover!(a != b, "priority: a tie between two statuses keeps the first");
        assert_eq!(w, x, "a tie keeps the status already held");
    }
    if py > px {
        cover!(true, "priority: the second is worse");
        assert_eq!(w, y);
    }
    assert_eq!(y.worst(x).priority(), w.priority());
    assert_eq!(x.worst(y).worst(z).priority(), x.worst(y.worst(z)).priority());
    assert_eq!(x.worst(y).worst(z).priority(), px.max(py).max(pz));
    assert_eq!(NrtStatus::Success.worst(x), x);
    assert_eq!(x.worst(NrtStatus::Success), x);
    cover!(px == Priority::Critical, "priority: a critical status");
    cover!(matches!(x, NrtStatus::Other(_)), "priority: a value outside nrt_status.h");
}

#[cfg(kani)]
#[kani::proof]
fn prove_worst_is_a_total_preorder_by_the_table() {
    worst_is_a_total_preorder_by_the_table(kani::any(), kani::any(), kani::any());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proofs::{assert_covered, cases, reset_covers};
    use proptest::prelude::*;

    #[test]
    fn worst_is_a_total_preorder_by_the_table_tests() {
        reset_covers();
        // Every enumerator, the gaps around them, and a value past them all.
        let mut codes: Vec<u32> = NrtStatus::ALL.iter().map(|s| s.code()).collect();
        codes.extend([8, 12, 16, 100, 1001, 1007, 1099, 1101, 1199, 1207, 2000, u32::MAX]);
        // Under Miri (where this grid alone was a third of a share) every code is still
        // `a`, against every fifth code as `b` and two of the third statuses:
        // safe, pure code, whose whole grid runs natively and which kani
        // proves for every input.
        let (b_step, thirds): (usize, &[u32]) =
            if cfg!(miri) { (5, &[0, 1204]) } else { (1, &[0, 5, 1004, 1204, 1206, 77]) };
        for &a in &codes {
            for &b in codes.iter().step_by(b_step) {
                for &c in thirds {
                    worst_is_a_total_preorder_by_the_table(a, b, c);
                }
            }
        }
        proptest!(ProptestConfig::with_cases(cases(4096)), |(a in any::<u32>(), b in any::<u32>(), c in 0u32..1300)| {
            worst_is_a_total_preorder_by_the_table(a, b, c);
        });
        assert_covered(4);
    }
}
