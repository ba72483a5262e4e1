//! `nrt-sim serve --shm PATH`: play the simulated device for a host in another
//! process, over the shared-memory file of [`crate::shm`].
//!
//! [`serve`] lays the file out, marks it ready, and runs the device as the
//! threaded mode does, against `CLOCK_MONOTONIC`, the clock both processes
//! share; the device clock's origin is in the header. Each loop samples the
//! host's inputs and runs the engines' programs with their faults. Each core
//! re-arms on its own once its programs have played out, so a host on part of
//! the device's cores gets every inference played; once no core is playing
//! and nothing is left scheduled, [`Device::take_inference_played`] counts the
//! inference and its notes are printed.
//!
//! It stops when the host sets the header's shutdown flag, after `inferences`
//! inferences once the host has harvested them all, or with an error when
//! nothing happened for `idle_timeout`. On the way out it marks the file
//! exited and removes it.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::device::{Device, DeviceStats};
use crate::layout::ENTRY_BYTES;
use crate::run::{SimConfig, SimError};
use crate::shared::Shared;
use crate::shm::{ShmError, ShmFile, ShmLayout, State};
use nrt_abi::os::monotonic_ns;

/// What to serve.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    /// The shared-memory file, replaced if it exists.
    pub path: PathBuf,
    /// The device; `timeout_s` and `threaded` are the host's business and unused.
    pub sim: SimConfig,
    /// Stop after this many inferences were played and harvested; `None`: when
    /// the host asks for shutdown.
    pub inferences: Option<u32>,
    /// Give up when neither the host nor the device did anything for this long.
    pub idle_timeout: Option<Duration>,
}

/// Why the server stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// The requested inferences were played and harvested.
    Done,
    /// The host set the shutdown flag.
    Shutdown,
}

/// What a serve session did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServeSummary {
    /// Inferences played.
    pub played: u32,
    /// Inferences the host reported harvested.
    pub harvested: u32,
    /// The device's counters over the session.
    pub stats: DeviceStats,
    /// Why it stopped.
    pub reason: StopReason,
}

/// Why serving failed.
#[derive(Debug)]
pub enum ServeError {
    /// The device configuration is invalid.
    Config(SimError),
    /// The file could not be made.
    Shm(ShmError),
    /// Nothing happened for the idle timeout.
    Idle(String),
}

impl core::fmt::Display for ServeError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ServeError::Config(e) => write!(f, "{e}"),
            ServeError::Shm(e) => write!(f, "{e}"),
            ServeError::Idle(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for ServeError {}

/// Serve until done, writing progress to `out`.
pub fn serve(cfg: &ServeConfig, out: &mut dyn Write) -> Result<ServeSummary, ServeError> {
    let sim = &cfg.sim;
    sim.validate().map_err(ServeError::Config)?;
    let layout = ShmLayout::new(sim.arch, sim.cores, sim.ring_entries * ENTRY_BYTES).map_err(ServeError::Shm)?;
    let faults: Vec<String> = sim.faults.iter().map(|f| f.to_string()).collect();
    let file = Arc::new(ShmFile::create(&cfg.path, layout, sim.seed, &faults.join(" ")).map_err(ServeError::Shm)?);
    let mut device = Device::new(Arc::new(Shared::over_shm(Arc::clone(&file))), sim.program_spec(), sim.cores);
    let origin = monotonic_ns();
    file.publish(origin).map_err(ServeError::Shm)?;
    let result = serve_loop(cfg, &file, &mut device, origin, out);
    file.set_state(State::Exited);
    let _ = std::fs::remove_file(file.path());
    result
}

fn serve_loop(
    cfg: &ServeConfig,
    file: &ShmFile,
    device: &mut Device,
    origin: u64,
    out: &mut dyn Write,
) -> Result<ServeSummary, ServeError> {
    let sim = &cfg.sim;
    let l = file.layout();
    let faults: Vec<String> = sim.faults.iter().map(|f| f.to_string()).collect();
    let _ = writeln!(
        out,
        "nrt-sim serve: {} ready (pid {}): arch {}, {} core{}, NQ rings of {} entries, seed {}, faults: {}",
        file.path().display(),
        std::process::id(),
        sim.arch.name(),
        sim.cores,
        if sim.cores == 1 { "" } else { "s" },
        sim.ring_entries,
        sim.seed,
        if faults.is_empty() { "none".to_string() } else { faults.join(" ") },
    );
    let _ = writeln!(
        out,
        "  file: header 0x0..0x{:x}, rings 0x{:x}..0x{:x}, BAR0 0x{:x}..0x{:x} (sparse); descriptor staging is not served",
        l.rings_offset,
        l.rings_offset,
        l.rings_offset + l.rings_len,
        l.bar_offset,
        l.bar_offset + l.bar_len
    );
    let _ = writeln!(
        out,
        "  waiting for `nrtctl harvest --shm {}` (host trigger, then the kickoff semaphores)",
        file.path().display()
    );
    let _ = out.flush();
    let mut played = 0u32;
    let mut last_progress = Instant::now();
    let mut last_harvested = file.harvested();
    let reason = loop {
        file.heartbeat();
        if file.shutdown_requested() {
            break StopReason::Shutdown;
        }
        let now = monotonic_ns().saturating_sub(origin);
        device.step(now);
        // Each core re-armed in the step once played out; count the inference.
        if device.take_inference_played() {
            played = played.saturating_add(1);
            file.set_played(played);
            report_inference(out, device, played);
        }
        let harvested = file.harvested();
        if cfg.inferences.is_some_and(|n| played >= n && harvested >= n) {
            break StopReason::Done;
        }
        if device.cores_started() > 0 || device.next_event_ns().is_some() || harvested != last_harvested {
            last_progress = Instant::now();
            last_harvested = harvested;
        }
        if let Some(idle) = cfg.idle_timeout {
            if last_progress.elapsed() >= idle {
                return Err(ServeError::Idle(format!(
                    "nothing happened for {:.1} s ({played} played, {harvested} harvested): no host?",
                    idle.as_secs_f64()
                )));
            }
        }
        match device.next_event_ns() {
            Some(t) if t <= now.saturating_add(200_000) => std::thread::yield_now(),
            _ => std::thread::sleep(Duration::from_micros(20)),
        }
    };
    let stats = device.stats().clone();
    let _ = writeln!(
        out,
        "nrt-sim serve: stopping ({}): {played} played, {} harvested",
        match reason {
            StopReason::Done => "the requested inferences were played and harvested",
            StopReason::Shutdown => "the host asked for shutdown",
        },
        file.harvested()
    );
    let _ = out.flush();
    Ok(ServeSummary { played, harvested: file.harvested(), stats, reason })
}

fn report_inference(out: &mut dyn Write, device: &mut Device, n: u32) {
    let (notes, dropped) = device.take_notes();
    let d = device.stats();
    let _ = writeln!(
        out,
        "inference {n} played: {} records written, {} dropped ({} on a full ring) so far",
        d.records_written, d.records_dropped, d.ring_full_drops
    );
    for note in &notes {
        let _ = writeln!(out, "  {:>12.1} us  {}", note.t_ns as f64 / 1_000.0, note.text);
    }
    if dropped > 0 {
        let _ = writeln!(out, "  ({dropped} more notes not kept)");
    }
    let _ = out.flush();
}
