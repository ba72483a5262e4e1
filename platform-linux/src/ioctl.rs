//! The Neuron driver's ioctl ABI: [`nrt_abi::ioctl`], shared with the simulator's driver model.
pub use nrt_abi::ioctl::*;
