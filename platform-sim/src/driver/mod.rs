//! `nrt-sim driver -- COMMAND`: the Neuron driver, played for an unmodified
//! process. The contract is `docs/driver-model.md`.
//!
//! - [`model`]: the driver's state and rules, a pure state machine over the
//!   device file and the caller's memory, one module per family of requests;
//!   each rule has its id in `docs/driver-conformance.md` and the driver file
//!   and function it comes from.
//! - [`DeviceEngine`], here: the simulated [`Device`] that `nrt-sim serve`
//!   runs, over a device file that is [`crate::shm`]'s plus a region for
//!   `MEM_ALLOC_V2MT` chunks. The file has no path: the process gets it as the
//!   descriptor its `open("/dev/neuron0")` returns.
//! - `supervisor`, with the default feature `driver`: the seccomp side that
//!   traps COMMAND's calls on the device and answers them with the model.
//! - `reaper`, with the feature `driver`: the process between the supervisor
//!   and COMMAND that kills COMMAND's whole tree at the end.

pub mod model;
#[cfg(feature = "driver")]
pub mod reaper;
#[cfg(feature = "driver")]
pub mod supervisor;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::device::{Device, DeviceStats};
use crate::layout::ENTRY_BYTES;
use crate::run::SimConfig;
use crate::shared::Shared;
use crate::shm::{ShmError, ShmFile, ShmLayout, State};
use nrt_abi::os::monotonic_ns;

/// Bytes of the chunk region, room for every ring and buffer a bring-up
/// allocates; sparse, so untouched pages cost nothing.
pub const CHUNK_REGION_BYTES: u64 = 64 << 20;

/// The simulated device on its own thread, over a device file.
#[derive(Debug)]
pub struct DeviceEngine {
    file: Arc<ShmFile>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<(u32, DeviceStats)>>,
}

impl DeviceEngine {
    /// Make the device file for `sim`, mark it ready and start the device.
    /// Without `hints` the device is armed from the start, since a host that
    /// learns nothing from the simulator writes no host trigger. With
    /// `fault_kickoffs` the faults play for each core's first that many
    /// kickoffs only.
    pub fn start(sim: &SimConfig, hints: bool, fault_kickoffs: Option<u32>) -> Result<DeviceEngine, ShmError> {
        let layout = ShmLayout::new(sim.arch, sim.cores, sim.ring_entries.saturating_mul(ENTRY_BYTES))?;
        let faults: Vec<String> = sim.faults.iter().map(|f| f.to_string()).collect();
        let file = Arc::new(ShmFile::create_with_extra(
            Path::new("/dev/neuron0"),
            layout,
            sim.seed,
            &faults.join(" "),
            CHUNK_REGION_BYTES,
        )?);
        let mut device = Device::new(Arc::new(Shared::over_shm(Arc::clone(&file))), sim.program_spec(), sim.cores);
        if !hints {
            device.arm();
        }
        if let Some(n) = fault_kickoffs {
            device.faults_for_kickoffs(n);
        }
        let origin = monotonic_ns();
        file.mark_ready(origin);
        let stop = Arc::new(AtomicBool::new(false));
        let (f, s) = (Arc::clone(&file), Arc::clone(&stop));
        let thread = std::thread::Builder::new()
            .name("nrt-sim-device".into())
            .spawn(move || {
                // The serve loop's device part: sample, step, count each
                // inference played. Each core re-arms once played out.
                let mut played = 0u32;
                while !s.load(Ordering::Acquire) {
                    f.heartbeat();
                    let now = monotonic_ns().saturating_sub(origin);
                    device.step(now);
                    if device.take_inference_played() {
                        played = played.saturating_add(1);
                        f.set_played(played);
                    }
                    match device.next_event_ns() {
                        Some(t) if t <= now.saturating_add(200_000) => std::thread::yield_now(),
                        _ => std::thread::sleep(Duration::from_micros(20)),
                    }
                }
                f.set_state(State::Exited);
                (played, device.stats().clone())
            })
            .map_err(|error| ShmError::Io { what: "spawn the device thread".into(), error })?;
        Ok(DeviceEngine { file, stop, thread: Some(thread) })
    }

    /// The device file.
    pub fn file(&self) -> &Arc<ShmFile> {
        &self.file
    }

    /// Stop the device; the inferences it played and its counters.
    pub fn stop(mut self) -> (u32, DeviceStats) {
        self.stop.store(true, Ordering::Release);
        self.thread.take().and_then(|t| t.join().ok()).unwrap_or_default()
    }
}

impl Drop for DeviceEngine {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
