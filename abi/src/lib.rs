//! # nrt-abi
//!
//! What the binding (`nrt-linux`) and the simulator (`nrt-sim`) must agree on,
//! and nothing else: the binding speaks it to a real driver (or to a device
//! played in another process), the simulator serves it. Neither crate depends
//! on the other.
//!
//! - [`devmap`]: the device's layout as the public driver states it (each
//!   core's DMA engines and which reach host memory, the BAR0 windows, the v3
//!   core map), the one place the binding, the simulator and the model take
//!   it from;
//! - [`ioctl`]: the Neuron driver's request codes and argument layouts, as the
//!   public driver's `neuron_ioctl.h` declares them (facts only; checked in the
//!   tests against the numbers in `shared/anchors/driver-abi.md`);
//! - [`sim`]: what a host must know about the simulated device that a real
//!   one would tell it outside the ioctl ABI (sim choices, each named), the
//!   simulator-only hint query (`sim::SIM_HINTS`, an `'N'` request the real
//!   driver refuses), and the scenario labels (name, expected status and return
//!   code) a host checks a run against;
//! - [`rules`]: the driver's argument rules that are functions of the
//!   argument alone (DMA engine and queue numbering, `DMA_QUEUE_INIT`'s ring
//!   checks), each with its driver file and function; the driver model calls
//!   them and kani proves them (`proofs.rs`);
//! - `os` (feature `os`, std and libc): what the host programs need of Linux
//!   beyond the ABI, written once for both: the monotonic clock, a shared
//!   mapping reached through atomics, and standard output for a reader that
//!   may go away (`| head`), with its `outln!`/`outp!`/`errln!` macros;
//! - `shm` (feature `shm`, std; takes `os`): the device file of `nrt-sim serve --shm PATH`,
//!   its header and layout, mapped by the server and by `nrtctl harvest`;
//! - `report` (feature `report`, std and serde_json): the report of one
//!   inference and its text and JSON renderings, printed the same by
//!   `nrt-sim run` and `nrtctl run` / `nrtctl harvest`;
//! - `skip` (feature `test-skips`, std): not the binding's and the
//!   simulator's agreement but their tests' with `cargo xtask ci`: how a
//!   test records a check it cannot make here, and how xtask reads it (a
//!   dev-dependency feature, in no library build).
//!
//! The default build is `no_std` and has no dependency but `nrt-core` and
//! `zerocopy`.
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
