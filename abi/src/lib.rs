//! # nrt-abi
//!
//! What the binding (`nrt-linux`) and the simulator (`nrt-sim`) must agree on,
//! and nothing else: the binding speaks it to a real driver, the simulator's
//! driver model serves it. Neither crate depends on the other.
//!
//! - [`ioctl`]: the Neuron driver's request codes and argument layouts, as the
//!   public driver's `neuron_ioctl.h` declares them (facts only; checked in the
//!   tests against the numbers in `shared/anchors/driver-abi.md`);
//! - [`sim`]: what a host must know about the simulated device that a real
//!   one would tell it outside the ioctl ABI (sim choices, each named).
#![no_std]
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod ioctl;
pub mod sim;
