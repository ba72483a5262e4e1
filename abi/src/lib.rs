//! # nrt-abi
//!
//! What the binding (`nrt-linux`) and the simulator (`nrt-sim`) agree on;
//! neither depends on the other.
//!
//! - [`devmap`]: the device's layout as the public driver states it;
//! - [`ioctl`]: the driver's request codes and argument layouts;
//! - [`sim`]: what the simulated device tells a host outside the ioctl ABI;
//! - [`rules`]: the driver's argument rules, proved by kani;
//! - `os`, feature `os`: what the host programs need of Linux;
//! - `shm`, feature `shm`: the device file of `nrt-sim serve --shm`;
//! - `report`, feature `report`: one inference's report, as text and JSON;
//! - `skip`, feature `test-skips`: how a test records a check it cannot make.
//!
//! The default build is `no_std`, with `nrt-core` and `zerocopy` only.
#![cfg_attr(not(any(feature = "os", feature = "report", feature = "test-skips")), no_std)]
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod devmap;
pub mod ioctl;
pub mod nds;
#[cfg(feature = "os")]
pub mod os;
#[cfg(any(kani, test))]
mod proofs;
#[cfg(feature = "report")]
pub mod report;
pub mod rules;
#[cfg(feature = "shm")]
pub mod shm;
pub mod sim;
#[cfg(feature = "test-skips")]
pub mod skip;
#[cfg(feature = "report")]
pub mod stats;
