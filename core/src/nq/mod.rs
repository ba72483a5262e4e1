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

/// The runtime's NQ index of the error ring (`ens_nq[2]`, "NQ#2"; seed §4).
pub const ERROR_NQ: u8 = 2;

/// The runtime's NQ indices of the INFER_STATUS rings, one per engine in engine
/// order (`notifications_get_nq_ids_for_type(INFER_STATUS)` -> {4,5,6,7,8}; seed §2).
pub const INFER_STATUS_NQS: [u8; crate::arch::ENGINES_PER_CORE] = [4, 5, 6, 7, 8];

/// Runtime NQ indices per core that a [`Notifications`] table holds (0..=8).
pub const NQ_PER_CORE: usize = 9;

/// Most INFER_STATUS ring ids a [`Notifications`] holds
/// ([`Notifications::set_infer_status_nqs`] refuses more).
pub const MAX_INFER_STATUS_NQS: usize = 8;

/// A TPB engine, in the runtime's order (`seed-vs-driver.md` point 7).
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

    /// The engine of an index 0..4.
    pub const fn from_index(i: usize) -> Option<Engine> {
        match i {
            0 => Some(Engine::Pe),
            1 => Some(Engine::Act),
            2 => Some(Engine::Pool),
            3 => Some(Engine::Dve),
            4 => Some(Engine::Sp),
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

    /// Parse a name (case-insensitive) or an index `0`..`4`.
    pub fn parse(s: &str) -> Option<Engine> {
        Engine::ALL.iter().copied().find(|e| e.name().eq_ignore_ascii_case(s)).or(match s {
            "0" => Some(Engine::Pe),
            "1" => Some(Engine::Act),
            "2" => Some(Engine::Pool),
            "3" => Some(Engine::Dve),
            "4" => Some(Engine::Sp),
            _ => None,
        })
    }
}
