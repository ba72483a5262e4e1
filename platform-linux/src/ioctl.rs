//! The Neuron driver's ioctl ABI, from [`nrt_abi::ioctl`] (shared with the
//! simulator's driver model, so the two cannot disagree).
pub use nrt_abi::ioctl::*;
