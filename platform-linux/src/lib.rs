//! # nrt-linux
//!
//! The Linux binding of nrt-core: thin, with every OS call checked.
//!
//! - [`bar`]: a BAR mapped with `mmap` (sysfs resource file, device node, or a
//!   shared-memory stand-in), atomic 32/64-bit access at checked offsets;
//!   [`device::IoctlBar`] does the same through the driver's BAR ioctls.
//! - [`device`]: `/dev/neuronN` and the driver's ioctls with their real request
//!   codes ([`ioctl`]): the kickoff `NEURON_IOCTL_SEMAPHORE_INCREMENT`, semaphore
//!   read/write, event set/get, `NOTIFICATIONS_INIT_V2`, BAR read/write, DMA queue
//!   copy-start. Every failure names the call, the device and the errno.
//! - [`session`]: the bring-up path against `/dev/neuronN` (`docs/driver-model.md`
//!   steps 1-10): own cores, ring memory, DMA queues, NQ rings, one inference
//!   staged, kicked off and harvested through the driver's ioctls, everything
//!   released in reverse order on drop (`nrtctl run`, `nrt_session_*`).
//! - [`rings`]: NQ rings in mapped memory, read with the ordering device writes need,
//!   and [`rings::MappedDevice`], the smallest complete device for the harvest.
//! - [`xu`]: execution units on worker threads with eventfd has-work /
//!   mark-complete handoff.
//! - [`poller`]: one poller thread per poll group (many requests, one thread),
//!   handing completions to spinning waiters without a syscall.
//! - [`time`]: `CLOCK_MONOTONIC`, and the `libnrt` and `adaptive` poll delays.
//! - [`ffi`]: the C ABI (`include/nrt.h`); [`ffi_exec`], its memory, copies
//!   and executions; [`ffi_poller`], the poller's (`include/nrt_poller.h`).
//! - [`fork`]: the pid each session, poller, ticket, ring state and datastore
//!   was made in; a forked child's calls on them are refused, its drops forget.
//! - [`harvest`]: inferences harvested from `nrt-sim serve --shm PATH` in another
//!   process, through this binding's mappings (`nrtctl harvest`; feature `sim`).
//!
//! The binding does not depend on the simulator: what the two agree on is
//! `nrt-abi` (the driver's ioctl ABI, the simulated device's choices and
//! scenario labels; with the `sim` feature also the shared-memory file,
//! `nrt_abi::shm`, and the report `nrtctl` prints, `nrt_abi::report`).
//!
//! `unsafe` lives in [`sys`] (syscalls, mapped memory), [`ffi`], [`ffi_exec`]
//! and [`ffi_poller`] (C pointers) only, each block with a `// SAFETY:` line.
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
