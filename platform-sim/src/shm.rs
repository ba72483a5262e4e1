//! The shared-memory file of `nrt-sim serve --shm PATH` and of the driver
//! model's device file, re-exported from [`nrt_abi::shm`], where it is
//! defined once for both sides: the binding's `harvest` maps it from the other.

pub use nrt_abi::shm::*;
