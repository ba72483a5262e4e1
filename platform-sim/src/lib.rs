//! # nrt-sim
//!
//! A simulated Neuron device behind nrt-core's platform traits, with every fault
//! the seeds describe injectable, and the `nrt-sim` tool that runs inferences end
//! to end through the real core.
//!
//! ## The shape
//!
//! The simulator is one more implementation of the `hal` traits, plus fault
//! injection as a rewrite of a healthy device program, after smoltcp's
//! `Loopback` and `FaultInjector`. Three layers, each a module:
//!
//! ```text
//!   host: SimHost, every hal trait         device: Device, the hardware's behaviour
//!   ──────────────────────────────         ─────────────────────────────────────────
//!   read_slot / write_head  ─┐             ┌─ engines' programs, program.rs, + faults
//!   read32 / write32, BAR   ─┤   Shared    ├─ NqProducer per ring: phase-stamped writes,
//!   copy_in / copy_out      ─┼─  atomics  ─┤    drop + INTC bit 29 when full up to HEAD
//!   semaphore increment     ─┤  registers  ├─ INTC cause lines, collectives barrier
//!   read_cause, probes      ─┘  + memory   └─ UDMA queues: tail-inc, BDs, copies, marker
//! ```
//!
//! - [`shared::Shared`] is the hardware state: NQ ring memory, a BAR0 register
//!   file decoded at the driver's and seed's offsets of [`layout`], device DRAM,
//!   and the status lines of the collectives proxies and fault probes. All of it
//!   is atomics, no pointers and no locks, so its host-visible part can be laid
//!   over the [`shm`] file for a host in another process.
//! - [`device::Device`] is the hardware's behaviour: it samples its inputs, such
//!   as the host trigger, kickoff semaphores, tail increments and HEAD latches,
//!   and runs its scheduled actions. Rings are written through nrt-core's own
//!   `NqProducer`, so both ends of the ring protocol are the core's code.
//! - [`host::SimHost`] is the host: every nrt-core platform trait over
//!   `Shared`, and nothing else.
//!
//! ## Two modes
//!
//! - **Deterministic**, the default and the tests': one thread, a virtual
//!   clock, every random choice from the seed by [`rng`], so the same seed gives
//!   the same output byte for byte. Time passes only in `Delay::delay_us`,
//!   [`host::VirtualDelay`]: the device steps at the current time, seeing what
//!   the host wrote, then the clock advances. The wait **skips ahead** to the
//!   next scheduled device action, or by the [`device::QUANTUM_NS`] quantum when
//!   nothing is scheduled; when neither the host's harvest step nor the
//!   device's step changed anything, it jumps to the sooner of the harvest's own
//!   next deadline and the next device action,
//!   [`device::Device::advance_virtual_until`]. Nothing observable happens in
//!   the skipped time: statuses, events and their order are those of polling
//!   every microsecond, and a timeout fires at the poll exactly at its budget.
//!   A 300 s barrier is a few dozen polls.
//! - **Threaded**, `--threaded`: the device runs on its own thread against the
//!   real monotonic clock; the host polls with a yielding delay. Ring entries
//!   are published payload first, then the word with the phase byte with
//!   Release, and read with Acquire, so the memory ordering is real; [`shared`]
//!   explains each handoff. The statuses match the deterministic mode's.
//!
//! And one for a host in another process: **`nrt-sim serve --shm PATH`**,
//! [`serve`], plays the threaded device over the [`shm`] file, and `nrtctl
//! harvest --shm PATH` maps the same file as it would map a device.
//!
//! ## Running a scenario from code
//!
//! ```
//! let s = nrt_sim::scenario::find("nan").unwrap();
//! let report = nrt_sim::run::run(&s.config()).unwrap();
//! assert_eq!(report.status.code(), 1003);
//! assert_eq!(report.return_code(), 0); // a clean harvest with an error-sweep status: G-RET0
//! assert!(s.evaluate(&report).is_ok());
//! ```
//!
//! Or compose faults yourself:
//!
//! ```
//! use nrt_sim::{fault::Fault, run::{run, SimConfig}};
//! let cfg = SimConfig {
//!     faults: vec![Fault::parse("dup-start:core=0,engine=ACT").unwrap()],
//!     ..SimConfig::default()
//! };
//! assert_eq!(run(&cfg).unwrap().status.code(), 1);
//! ```
#![deny(unsafe_code)]
#![warn(missing_docs)]

// The simulated device.
pub mod device;
pub mod fault;
pub mod layout;
pub mod program;
pub mod rng;
pub mod shared;
pub mod shm;

// The host's side of it: every nrt-core platform trait.
pub mod host;

// The programs: `nrt-sim run`, `serve`, `driver` and `decode`, and what they print.
pub mod decode;
pub mod driver;
pub mod report;
pub mod run;
pub mod scenario;
pub mod serve;

pub use fault::Fault;
pub use run::{run, RunReport, SimConfig, SimError};
pub use scenario::{Scenario, SCENARIOS};
