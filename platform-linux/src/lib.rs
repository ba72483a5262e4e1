//! # nrt-linux
//!
//! The Linux binding of nrt-core: thin, with every OS call checked.
//!
//! - [`session`]: the bring-up path against `/dev/neuronN`, steps 1-12 of
//!   `docs/driver-model.md`, for `nrtctl run` and `nrt_session_*`.
//! - [`device`]: the device node and the driver's ioctls, [`ioctl`] their codes;
//!   [`doorbell`], the DMA doorbell through `DMA_QUEUE_COPY_START`.
//! - [`bar`]: a BAR mapped with `mmap`; [`device::IoctlBar`], one through the BAR ioctls.
//! - [`rings`]: NQ rings in mapped memory and [`rings::MappedDevice`], the
//!   smallest complete device for the harvest.
//! - [`mem`] and [`exec`]: a runtime's memory objects, copies and executions.
//! - [`xu`] and [`poller`]: execution units and poller threads that hand
//!   completions to waiters.
//! - [`ffi`], [`ffi_exec`], [`ffi_poller`]: the C ABI of `include/nrt.h` and
//!   `include/nrt_poller.h`.
//! - [`error`] and [`api_error`]: the typed errors at the seam.
//! - [`fork`]: a forked child's calls on its parent's objects are refused.
//! - [`harvest`]: inferences harvested from `nrt-sim serve --shm`, feature `sim`.
//!
//! The binding does not depend on the simulator: the two agree through
//! `nrt-abi`. `unsafe` lives in [`sys`], [`ffi`], [`ffi_exec`] and
//! [`ffi_poller`] only, each block with a `// SAFETY:` line.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod api_error;
pub mod bar;
pub mod config;
pub mod datastore;
pub mod device;
pub mod doorbell;
pub mod error;
pub mod exec;
pub mod ffi;
pub mod ffi_exec;
pub mod ffi_poller;
#[cfg(feature = "sim")]
pub mod ffi_shm;
pub mod fork;
#[cfg(feature = "sim")]
pub mod harvest;
pub mod ioctl;
pub mod mem;
pub mod oplog;
pub mod poller;
pub mod rings;
pub mod session;
pub mod sys;
pub mod time;
pub mod xu;

pub use api_error::Error;
pub use error::LinuxError;
pub use exec::{Exec, Pending, Stream};
pub use mem::{Mem, MemKind};
