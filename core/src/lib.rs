//! # nrt-core
//!
//! The part of a Neuron accelerator host runtime that hands work to the device
//! and learns, by polling, that it finished, as an allocation-free `no_std`
//! library over small platform traits ([`hal`]).
//!
//! Two halves, each reverse-engineered from libnrt 2.31 (the seeds in
//! `shared/seeds/`):
//!
//! - **The completion engine** ([`exec`], [`nq`]): the one-step harvest state
//!   machine `INIT -> WAIT_BARRIER_PROXY -> WAIT_CORE -> DONE` that polls the
//!   per-engine notification rings, matches START/END records, tells a timeout (5)
//!   from a queue overflow (1204) by INTC cause bit 29, sweeps the error ring, and
//!   reconciles the cores by status priority.
//! - **The descriptor handoff** ([`dma`], [`dge`]): paged vrings of 16-byte
//!   descriptors lowered to device rings, relocated, reserved through per-direction
//!   queue cursors and released by three distinct doorbells, with the
//!   sentinel-polled completion handle and the DGE priority gate.
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
//! Rules this crate keeps: it never allocates, never blocks (except in
//! [`hal::Delay`], by name) and never panics on device input; a corrupt entry,
//! ring, count or id becomes a documented [`NrtStatus`] and an
//! event of its layer (gathered in [`Event`](event::Event)). Where the seeds are silent, the choice is written next
//! to the constant and listed in `docs/spec-gaps.md`.
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

/// The Rust examples of `docs/from-rust.md`, compiled as doctests by
/// `cargo test`, so the first code a user copies cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../../docs/from-rust.md")]
pub struct ReadmeDoctests;
