//! # nrt-sim
//!
//! A simulated Neuron device behind nrt-core's platform traits, with every fault
//! the seeds describe injectable, and the `nrt-sim` tool that runs inferences end
//! to end through the real core.
//!
//! ## The shape
//!
//! The simulator is one more implementation of the `hal` traits, plus fault
//! injection as a rewrite of a healthy device program (after smoltcp's
//! `Loopback` and `FaultInjector`). Three layers, each a module:
//!
//! ```text
//!   host (SimHost: every hal trait)        device (Device: the hardware's behaviour)
//!   ──────────────────────────────         ─────────────────────────────────────────
//!   read_slot / write_head  ─┐             ┌─ engines' programs (program.rs) + faults
//!   read32 / write32 (BAR)  ─┤   Shared    ├─ NqProducer per ring: phase-stamped writes,
//!   copy_in / copy_out      ─┼─ (atomics) ─┤    drop + INTC bit 29 when full up to HEAD
//!   semaphore increment     ─┤  registers  ├─ INTC cause lines, collectives barrier
//!   read_cause, probes      ─┘  + memory   └─ UDMA queues: tail-inc, BDs, copies, marker
//! ```
//!
//! - [`shared::Shared`] is the hardware state: NQ ring memory, a BAR0 register
//!   file decoded at the driver's and seed's offsets ([`layout`]), device DRAM,
//!   and the status lines of the collectives proxies and fault probes. All of it
//!   atomics: no pointers, no locks, so its host-visible part can be laid over a
//!   shared-memory file for a host in another process ([`shm`], [`serve`]).
//! - [`device::Device`] is the hardware's behaviour: it samples its inputs
//!   (host trigger, kickoff semaphores, tail increments, HEAD latches) and runs
//!   its scheduled actions. Rings are written through nrt-core's own
//!   `NqProducer`, so both ends of the ring protocol are the core's code.
//! - [`host::SimHost`] is the host: every nrt-core trait (`NqRings`,
//!   `IntcCause`, `Clock`, `CollectivesProxy`, `FaultProbe`, `EventSink`, `CounterSink`,
//!   `TensorNotify`, `Registers`, `DeviceMemory`, `Semaphore`, `Fence`,
//!   `RingBacking`) over `Shared`, and nothing else.
//!
//! ## Two modes
//!
//! - **Deterministic** (tests, the default): one thread, a virtual clock, every
//!   random choice from the seed ([`rng`]): the same seed gives the same output,
//!   byte for byte. Time passes only in `Delay::delay_us` ([`host::VirtualDelay`]):
//!   the device steps at the current time (seeing what the host wrote), then the
//!   clock advances. Stepping a 5 s hang 1 us at a time would be 5 million steps,
//!   so the wait **skips ahead**: when nothing is scheduled before `now + us`, the
//!   clock jumps to the next scheduled device action, or by a quantum of 1 ms
//!   ([`device::QUANTUM_NS`]) when nothing is scheduled. And when the host's last
//!   harvest step changed nothing and the device's step did nothing either, the
//!   harvest tells the wait its own next deadline (the core budget, or the
//!   barrier warning threshold: `run::wait_round_robin`), and the clock jumps
//!   straight to the sooner of that and the next device action
//!   ([`device::Device::advance_virtual_until`]). Nothing observable happens in
//!   the skipped time: the statuses, events and their order are those of polling
//!   every microsecond; the timeout (whole milliseconds, seed §5) fires at the
//!   poll exactly at the budget, so `elapsed_ms` equals it. A 300 s barrier, or a
//!   4294967295 s timeout, is a few dozen polls.
//! - **Threaded** (`--threaded`): the device runs on its own thread against the
//!   real monotonic clock; the host polls with a yielding delay. Ring entries are
//!   published payload first, then the word with the phase byte with Release,
//!   and read with Acquire ([`shared`] explains each handoff), so the memory
//!   ordering is real. The statuses match the deterministic mode's.
//!
//! And one for a host in another process: **`nrt-sim serve --shm PATH`**
//! ([`serve`]) plays the threaded device over a shared-memory file ([`shm`]: the
//! NQ rings, the BAR0 words the host touches at their real offsets, and the
//! proxy/probe status lines), and `nrtctl harvest --shm PATH` (nrt-linux) maps
//! the same file as it would map a device and harvests through it.
//!
//! ## Running a scenario from code
//!
//! ```
//! let s = nrt_sim::scenario::find("nan").unwrap();
//! let report = nrt_sim::run::run(&s.config()).unwrap();
//! assert_eq!(report.status.code(), 1003);
//! assert_eq!(report.return_code(), 0); // clean harvest, error-sweep status (G-RET0)
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
