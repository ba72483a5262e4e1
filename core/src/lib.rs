//! # nrt-core
//!
//! The part of a Neuron accelerator host runtime that hands work to the device
//! and learns, by polling, that it finished: an allocation-free `no_std`
//! library over the small platform traits of [`hal`].
//!
//! Two halves, each from a seed of libnrt 2.31 in `shared/seeds/`:
//!
//! - **The completion engine**, [`exec`] and [`nq`]: the one-step harvest
//!   state machine that polls the per-engine notification rings, matches
//!   START and END records, tells a timeout from a queue overflow by INTC cause
//!   bit 29, sweeps the error ring and reconciles the cores by priority.
//! - **The descriptor handoff**, [`dma`] and [`dge`]: vrings of descriptors
//!   lowered to device rings, relocated, reserved through queue cursors and
//!   released by three doorbells, with the completion handle and the DGE gate.
//!
//! Data flows one way:
//!
//! ```text
//!   submit (dma)                          harvest (exec)
//!   vring -lower-> pring -reserve-> queue   kickoff -> progress_one_step (again)
//!         relocate        doorbell          INIT -> WAIT_BARRIER_PROXY -> WAIT_CORE -> DONE
//!   completion handle (sentinel poll)       nq ring -> entry decode -> matcher -> finalize
//! ```
//!
//! Rules this crate keeps: it never allocates, never blocks but in
//! [`hal::Delay`], and never panics on device input; a corrupt entry, ring,
//! count or id becomes a documented [`NrtStatus`] and an [`Event`](event::Event).
//! Where the seeds are silent, the choice is written next to the constant and
//! listed in `docs/spec-gaps.md`.
#![cfg_attr(not(test), no_std)]
#![deny(unsafe_code)]
#![warn(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing))]

pub mod arch;
pub mod counters;
pub mod dge;
pub mod dma;
pub mod event;
pub mod exec;
pub mod hal;
pub mod mmio;
pub mod nq;
pub mod status;
pub mod trace;

#[cfg(any(kani, test))]
mod proofs;

#[cfg(any(test, feature = "test-utils"))]
pub mod testutil;

pub use status::{NrtError, NrtStatus};

/// The Rust examples of `docs/from-rust.md`, compiled as doctests so they cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../../docs/from-rust.md")]
pub struct ReadmeDoctests;
