//! Notification queues: the 16-byte entry, the error-ring entry, and the ring
//! consumer.
//!
//! The device sequencer writes 16-byte completion records into per-engine
//! INFER_STATUS rings and error records into the error ring; the host learns of
//! completion only by reading that memory (completion-engine seed, abstract: no
//! interrupt on this path). This module is the wire layer: [`entry`] and
//! [`error`] decode the two layouts of the same 16 bytes (the lane is chosen by
//! the ring, never by a tag inside the entry, seed §3 QUIRK), and [`ring`] is the
//! cursor arithmetic that decides which slot is fresh.

pub mod entry;
pub mod error;
pub mod ring;

#[cfg(any(kani, test))]
mod proofs;

pub use entry::{CustomKind, Notification, RawEntry, Subtype};
pub use error::{ErrorClass, ErrorEntry, InferErrorSubtype};
pub use ring::{ErrorRecord, Notifications, NqRing, RingError, SyncPoint, TsCal};

/// The runtime's NQ index of the error ring, `ens_nq[2]`, "NQ#2", seed §4.
pub const ERROR_NQ: u8 = 2;

/// The runtime's NQ indices of the INFER_STATUS rings, one per engine in engine
/// order (`notifications_get_nq_ids_for_type(INFER_STATUS)` -> {4,5,6,7,8}; seed §2).
pub const INFER_STATUS_NQS: [u8; crate::arch::ENGINES_PER_CORE] = [4, 5, 6, 7, 8];

/// Runtime NQ indices per core that a [`Notifications`] table holds: through
/// the last INFER_STATUS ring.
pub const NQ_PER_CORE: usize = INFER_STATUS_NQS[crate::arch::ENGINES_PER_CORE - 1] as usize + 1;

const _: () = assert!((ERROR_NQ as usize) < NQ_PER_CORE);

/// Most INFER_STATUS ring ids a [`Notifications`] holds
/// ([`Notifications::set_infer_status_nqs`] refuses more).
pub const MAX_INFER_STATUS_NQS: usize = 8;

/// A TPB engine, in the runtime's order, `seed-vs-driver.md` point 7.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Engine {
    /// Processing (matrix) engine, index 0.
    Pe = 0,
    /// Activation engine, index 1.
    Act = 1,
    /// Pooling engine (GpSimd), index 2.
    Pool = 2,
    /// Vector engine, index 3.
    Dve = 3,
    /// Sync/sequencer engine, index 4.
    Sp = 4,
}

impl Engine {
    /// The five engines in index order.
    pub const ALL: [Engine; crate::arch::ENGINES_PER_CORE] =
        [Engine::Pe, Engine::Act, Engine::Pool, Engine::Dve, Engine::Sp];

    /// The engine of an index below [`ENGINES_PER_CORE`](crate::arch::ENGINES_PER_CORE).
    pub const fn from_index(i: usize) -> Option<Engine> {
        match Engine::ALL.split_at_checked(i) {
            Some((_, [e, ..])) => Some(*e),
            _ => None,
        }
    }

    /// The engine's index.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The engine's name (`"PE"`, `"ACT"`, `"POOL"`, `"DVE"`, `"SP"`).
    pub const fn name(self) -> &'static str {
        match self {
            Engine::Pe => "PE",
            Engine::Act => "ACT",
            Engine::Pool => "POOL",
            Engine::Dve => "DVE",
            Engine::Sp => "SP",
        }
    }

    /// Parse a name, case-insensitive, or a one-digit index.
    pub fn parse(s: &str) -> Option<Engine> {
        Engine::ALL.iter().copied().find(|e| e.name().eq_ignore_ascii_case(s)).or(match s.as_bytes() {
            [d @ b'0'..=b'9'] => Engine::from_index(usize::from(d - b'0')),
            _ => None,
        })
    }
}

/// A set of a core's engines, one bit per [`Engine::index`]: the engines an
/// event names (those still pending at a timeout, say).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct EngineSet(u8);

impl EngineSet {
    /// No engine.
    pub const EMPTY: EngineSet = EngineSet(0);

    /// The set whose bit `i` is engine `i`; bits past the fifth engine are dropped.
    pub const fn from_bits(bits: u8) -> EngineSet {
        EngineSet(bits & ((1 << crate::arch::ENGINES_PER_CORE) - 1))
    }

    /// One bit per engine, bit `i` for [`Engine::index`] `i`.
    pub const fn bits(self) -> u8 {
        self.0
    }

    /// The set with `e` added.
    pub const fn with(self, e: Engine) -> EngineSet {
        EngineSet(self.0 | 1 << e.index())
    }

    /// Whether `e` is in the set.
    pub const fn contains(self, e: Engine) -> bool {
        self.0 & (1 << e.index()) != 0
    }

    /// Whether the set is empty.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Both sets' engines.
    pub const fn union(self, other: EngineSet) -> EngineSet {
        EngineSet(self.0 | other.0)
    }

    /// The engines in the set, in index order.
    pub fn iter(self) -> impl Iterator<Item = Engine> {
        Engine::ALL.into_iter().filter(move |e| self.contains(*e))
    }
}

impl From<Engine> for EngineSet {
    fn from(e: Engine) -> EngineSet {
        EngineSet::EMPTY.with(e)
    }
}

/// The engines' names in index order, joined by `,` (`"DVE,SP"`); `none` when empty.
impl core::fmt::Display for EngineSet {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        if self.is_empty() {
            return f.write_str("none");
        }
        for (i, e) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            f.write_str(e.name())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod engine_set_tests {
    use super::*;

    #[test]
    fn a_set_holds_its_engines_in_index_order_and_names_them() {
        assert_eq!(EngineSet::EMPTY.to_string(), "none");
        assert!(EngineSet::EMPTY.is_empty());
        let s = EngineSet::from(Engine::Sp).with(Engine::Pe).with(Engine::Dve);
        assert_eq!(s.to_string(), "PE,DVE,SP");
        assert_eq!(s.bits(), 0b1_1001);
        assert!(!s.is_empty() && s.contains(Engine::Dve) && !s.contains(Engine::Act));
        assert_eq!(
            s.iter().collect::<heapless::Vec<Engine, { crate::arch::ENGINES_PER_CORE }>>().as_slice(),
            &[Engine::Pe, Engine::Dve, Engine::Sp]
        );
        let all = (1 << crate::arch::ENGINES_PER_CORE) - 1;
        assert_eq!(EngineSet::from_bits(0xff).bits(), all, "bits past the last engine dropped");
        assert_eq!(EngineSet::from(Engine::Act).union(EngineSet::from(Engine::Pool)).bits(), 0b110);
        assert_eq!(EngineSet::from_bits(0b10).to_string(), "ACT");
        assert_eq!(s.with(Engine::Dve), s, "adding an engine twice keeps it");
        assert_eq!(s.union(EngineSet::from(Engine::Pe).with(Engine::Act)).bits(), 0b1_1011, "shared engines kept");
    }
}
