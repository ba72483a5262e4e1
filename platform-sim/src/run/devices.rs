//! A whole host's worth of inferences through poll groups:
//! `nrt-sim run --devices N --cores C --inferences K [--pollers P]`.
//!
//! The host has `devices` simulated devices, each with `cores` logical cores of
//! `lnc` physical cores (a trn2 device: 4 logical cores of 2). Every logical core
//! is a *lane*: its own simulated device state (rings, BAR, clock), its
//! [`Notifications`] and its device program. The devices are split into
//! `pollers` contiguous blocks; each block is harvested by one
//! [`PollGroup`], which holds one in-flight request per lane and steps each once
//! per pass, a new one twice. When a lane's request finishes, the lane's device is re-armed and
//! kicked off again, and a new request takes the slot, until every lane has run
//! `inferences` inferences.
//!
//! Faults (`--inject`) are played on the devices named by `fault_devices` (all
//! of them when empty) and nowhere else, so one run shows faulted devices
//! failing with their statuses while the others complete normally.
//!
//! Deterministic only: each lane has its own virtual clock, which advances by
//! the poller's 1 us wait after each pass (skipping idle time up to the
//! device's next action, as the single run does). HEAD write-backs are batched
//! (G-HEAD-BATCH) unless `head_batching` is off.
//!
//! A traced run ([`run_host_observed`], [`run_host_into`]) hands each finished
//! inference over as it finishes and keeps only thinned counts of the poll
//! passes and HEAD write-backs, so its memory does not grow with the
//! inferences; [`run_host_traced`] keeps every inference's times (tests).

use std::collections::BTreeMap;
use std::sync::Arc;

use nrt_core::arch::{ENGINES_PER_CORE, MAX_CORES};
use nrt_core::dma::doorbell::{kickoff_infer, set_host_trigger};
use nrt_core::exec::{Completion, ExecConfig, ExecRequest, Lanes, PollGroup, Step};
use nrt_core::hal::Clock as _;
use nrt_core::nq::Notifications;
use nrt_core::NrtStatus;

use crate::device::Device;
use crate::host::{HostClock, SimHost};
use crate::layout;
use crate::program;
use crate::run::{core_reports, CoreReport, SimConfig, SimError};
use crate::shared::Shared;

/// Most devices a host run plays (a trn2 host has 16).
pub const MAX_DEVICES: u16 = 64;
/// Most logical cores per device (8 NeuronCores at LNC=1).
pub const MAX_LOGICAL_CORES: u8 = 8;
/// Physical cores per device (trn2: 8 NeuronCores); `cores * lnc` may not exceed it.
pub const PHYSICAL_CORES_PER_DEVICE: u8 = 8;
/// Lanes one poll group holds: every lane of a 64-device host would not fit, so
/// a group of more lanes is refused (use more pollers).
pub const GROUP_CAPACITY: usize = 128;
/// Passes one poller may make, a bound for a run that cannot end (the timeouts
/// end every request long before: a 4294967295 s budget is refused instead).
pub const MAX_PASSES: u64 = 50_000_000;
/// The longest model timeout a host run accepts, seconds (each lane's virtual
/// clock walks its budget in device quanta).
pub const MAX_HOST_TIMEOUT_S: u32 = 600;

/// A host run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostConfig {
    /// What every inference is (arch, timeout, seed, ring size, faults); its
    /// `cores` is ignored, `lnc` gives the physical cores of each lane.
    pub sim: SimConfig,
    /// Devices.
    pub devices: u16,
    /// Logical cores per device.
    pub cores: u8,
    /// Physical cores per logical core (1 or 2).
    pub lnc: u8,
    /// Inferences per lane.
    pub inferences: u32,
    /// Poll groups (pollers); the devices are split among them in contiguous
    /// blocks. The default is one per device.
    pub pollers: u16,
    /// Devices the faults play on; empty: every device.
    pub fault_devices: Vec<u16>,
    /// Batch HEAD write-backs (G-HEAD-BATCH).
    pub head_batching: bool,
}

impl Default for HostConfig {
    fn default() -> Self {
        HostConfig {
            sim: SimConfig::default(),
            devices: 16,
            cores: 4,
            lnc: 2,
            inferences: 1,
            // One poller per device (the default).
            pollers: 16,
            fault_devices: Vec::new(),
            head_batching: true,
        }
    }
}

impl HostConfig {
    /// Check the configuration; the error names the flag and the limit.
    pub fn validate(&self) -> Result<(), SimError> {
        let bad = |m: String| Err(SimError::Config(m));
        if !(1..=MAX_DEVICES).contains(&self.devices) {
            return bad(format!("--devices must be from 1 to {MAX_DEVICES}, got {}", self.devices));
        }
        if !(1..=MAX_CORES as u8).contains(&self.lnc) {
            return bad(format!("--lnc must be 1 or 2, got {}", self.lnc));
        }
        let max_cores = PHYSICAL_CORES_PER_DEVICE / self.lnc;
        if !(1..=max_cores).contains(&self.cores) {
            return bad(format!(
                "--cores (logical cores per device) must be from 1 to {max_cores} at --lnc {}, got {}",
                self.lnc, self.cores
            ));
        }
        if self.inferences == 0 {
            return bad("--inferences must be at least 1".into());
        }
        if !(1..=self.devices).contains(&self.pollers) {
            return bad(format!("--pollers must be from 1 to the {} devices, got {}", self.devices, self.pollers));
        }
        let per_group = usize::from(self.devices.div_ceil(self.pollers)) * usize::from(self.cores);
        if per_group > GROUP_CAPACITY {
            return bad(format!(
                "a poll group would hold {per_group} lanes, more than its {GROUP_CAPACITY}: use more --pollers"
            ));
        }
        if let Some(d) = self.fault_devices.iter().find(|d| **d >= self.devices) {
            return bad(format!("--fault-devices names device {d}, but the host has {} devices", self.devices));
        }
        if self.sim.timeout_s > MAX_HOST_TIMEOUT_S {
            return bad(format!(
                "--timeout-s must be at most {MAX_HOST_TIMEOUT_S} with --devices, got {}",
                self.sim.timeout_s
            ));
        }
        if self.sim.threaded {
            return bad("--threaded does not combine with --devices (a host run is deterministic)".into());
        }
        let lane = SimConfig { cores: self.lnc, ..self.sim.clone() };
        lane.validate()
    }

    fn faulty(&self, device: u16) -> bool {
        self.fault_devices.is_empty() || self.fault_devices.contains(&device)
    }
}

/// What one lane did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaneReport {
    /// Device index.
    pub device: u16,
    /// Logical core of the device.
    pub core: u8,
    /// The poller that harvested it.
    pub poller: u16,
    /// Each inference's step code and status, in order.
    pub results: Vec<(Step, NrtStatus)>,
    /// The lane's per-core execution counters (its host's, as FINALIZE
    /// updated them), one per physical core of the logical core.
    pub counters: Vec<nrt_core::counters::NcCounterBlock>,
    /// Each inference's kickoff and engine times, in order: kept only by
    /// [`run_host_traced`] (its memory grows with the inferences: a long
    /// run streams them through [`run_host_observed`] instead).
    pub times: Vec<InferenceTimes>,
    /// The lane's poll passes that found it in flight, at its time (its
    /// virtual clock, us), thinned to a bounded count: observed runs only
    /// ([`run_host_observed`], the trace's poll-pass counter).
    pub passes: nrt_trace::Samples,
    /// The HEAD write-backs of the lane's host, thinned alike: observed runs only.
    pub head_writes: nrt_trace::Samples,
}

/// One finished inference, as an observed run ([`run_host_observed`]) hands it over.
#[derive(Clone, Copy, Debug)]
pub struct Finished<'a> {
    /// Device index.
    pub device: u16,
    /// Logical core of the device.
    pub core: u8,
    /// The inference's number on its lane, from 0.
    pub n: u32,
    /// Its kickoff, harvest and engine times.
    pub times: &'a InferenceTimes,
}

/// When one inference of a lane ran: its kickoff, how long the harvest took,
/// and what each of its physical cores' engines reported (the lane's own
/// virtual clock, CPU microseconds).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InferenceTimes {
    /// CPU time of the kickoff, us.
    pub kickoff_us: u64,
    /// From the kickoff to the completion, us.
    pub harvest_us: u64,
    /// The request's status.
    pub status: NrtStatus,
    /// Per physical core of the lane: its engines' START/END, its device
    /// latency (`duration_us`) and the total latency its counters took
    /// (`total_latency_us`).
    pub cores: Vec<CoreReport>,
}

/// What one poller did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PollerReport {
    /// First and last device it harvested.
    pub devices: (u16, u16),
    /// Lanes it held.
    pub lanes: usize,
    /// Passes it made.
    pub passes: u64,
    /// Requests stepped over all passes.
    pub steps: u64,
    /// Records its lanes' devices wrote into the rings.
    pub records_written: u64,
    /// Of those, records dropped because a ring was full (0 unless a fault fills one).
    pub ring_full_drops: u64,
}

/// Everything a host run produced.
#[derive(Clone, Debug)]
pub struct HostReport {
    /// The configuration run.
    pub config: HostConfig,
    /// Per lane, device-major.
    pub lanes: Vec<LaneReport>,
    /// Per poller.
    pub pollers: Vec<PollerReport>,
}

impl HostReport {
    /// neuron-monitor's `execution_stats` over every lane's cores: what a
    /// monitor of each process would sum.
    pub fn execution_stats(&self) -> nrt_abi::stats::ExecutionStats {
        nrt_abi::stats::ExecutionStats::from_blocks(self.lanes.iter().flat_map(|l| l.counters.iter()))
    }

    /// How many inferences ended with each (step, status), ordered by status code.
    pub fn totals(&self) -> BTreeMap<(u32, u8), u64> {
        let mut t = BTreeMap::new();
        for r in self.lanes.iter().flat_map(|l| l.results.iter()) {
            *t.entry((r.1.code(), r.0.code())).or_insert(0) += 1;
        }
        t
    }

    /// Same, for one device.
    pub fn device_totals(&self, device: u16) -> BTreeMap<(u32, u8), u64> {
        let mut t = BTreeMap::new();
        for r in self.lanes.iter().filter(|l| l.device == device).flat_map(|l| l.results.iter()) {
            *t.entry((r.1.code(), r.0.code())).or_insert(0) += 1;
        }
        t
    }
}

/// One lane of a poller: the host side, the ring cursors, the device.
struct SimLane {
    device_index: u16,
    core: u8,
    host: SimHost,
    nq: Notifications,
    device: Device,
    done: u32,
    in_flight: bool,
    results: Vec<(Step, NrtStatus)>,
    kickoff_us: u64,
    times: Vec<InferenceTimes>,
    passes: nrt_trace::Samples,
    heads: nrt_trace::Samples,
}

struct PollerLanes(Vec<SimLane>);

impl Lanes for PollerLanes {
    type Dev = SimHost;
    fn lane(&mut self, lane: u16) -> Option<(&mut SimHost, &mut Notifications)> {
        self.0.get_mut(usize::from(lane)).map(|l| (&mut l.host, &mut l.nq))
    }
}

fn new_lane(cfg: &HostConfig, device_index: u16, core: u8) -> Result<SimLane, SimError> {
    let sim = &cfg.sim;
    let shared = Arc::new(Shared::new(sim.arch, sim.ring_entries * layout::ENTRY_BYTES));
    let lane_no = u64::from(device_index) * u64::from(MAX_LOGICAL_CORES) + u64::from(core);
    let mut spec = sim.program_spec();
    spec.seed = spec.seed.wrapping_add(lane_no);
    if !cfg.faulty(device_index) {
        spec.faults.clear();
    }
    let device = Device::new(Arc::clone(&shared), spec, cfg.lnc);
    let mut host = SimHost::new(shared, HostClock::Virtual);
    let mut nq = Notifications::new();
    nq.set_head_batching(cfg.head_batching);
    for c in 0..cfg.lnc {
        nq.bind_core(c, sim.ring_entries * layout::ENTRY_BYTES)
            .map_err(|e| SimError::Config(format!("ring binding refused: {e:?}")))?;
        for eng in 0..ENGINES_PER_CORE {
            nq.set_cal(c, eng, program::calibration(c, eng));
        }
        nq.set_sync_point(c, program::sync_point(c));
    }
    // Doorbell B arms the sequencers once; each inference is a kickoff per core.
    let mut fence = host.fence();
    set_host_trigger(&mut host, &mut fence, layout::xt_local_reg(sim.arch))
        .map_err(|e| SimError::Staging { step: "host trigger", error: e })?;
    Ok(SimLane {
        device_index,
        core,
        host,
        nq,
        device,
        done: 0,
        in_flight: false,
        results: Vec::new(),
        kickoff_us: 0,
        times: Vec::new(),
        passes: nrt_trace::Samples::new(),
        heads: nrt_trace::Samples::new(),
    })
}

fn kickoff(lane: &mut SimLane, lnc: u8) -> Result<(), SimError> {
    lane.kickoff_us = lane.host.now_ns() / 1_000;
    for c in 0..lnc {
        kickoff_infer(&mut lane.host, u32::from(c), u32::from(c))
            .map_err(|e| SimError::Staging { step: "kickoff", error: e })?;
    }
    Ok(())
}

/// Run the host.
pub fn run_host(cfg: &HostConfig) -> Result<HostReport, SimError> {
    run_host_with::<dyn FnMut(Finished<'_>)>(cfg, None)
}

/// Run the host handing each finished inference to `observe` as it
/// finishes, and keeping each lane's poll passes and HEAD write-backs as
/// thinned counts ([`LaneReport::passes`], [`LaneReport::head_writes`]):
/// the memory it keeps does not grow with the inferences.
pub fn run_host_observed(cfg: &HostConfig, observe: &mut dyn FnMut(Finished<'_>)) -> Result<HostReport, SimError> {
    run_host_with(cfg, Some(observe))
}

/// Run the host keeping every inference's kickoff and engine times
/// ([`LaneReport::times`]): memory linear in the inferences, for a test or a
/// short run (a trace streams through [`run_host_into`]).
pub fn run_host_traced(cfg: &HostConfig) -> Result<HostReport, SimError> {
    let mut kept: BTreeMap<(u16, u8), Vec<InferenceTimes>> = BTreeMap::new();
    let mut r = run_host_observed(cfg, &mut |f| kept.entry((f.device, f.core)).or_default().push(f.times.clone()))?;
    for l in &mut r.lanes {
        l.times = kept.remove(&(l.device, l.core)).unwrap_or_default();
    }
    Ok(r)
}

/// Run the host streaming its trace into `sink` as it runs ([`trace_inference`]
/// for each finished inference; at the end, per device, the poll passes and
/// HEAD write-backs of its lanes merged into one counter each).
pub fn run_host_into<S: nrt_trace::Sink>(cfg: &HostConfig, sink: &mut S) -> Result<HostReport, SimError> {
    let mut named = std::collections::BTreeSet::new();
    let r = run_host_observed(cfg, &mut |f| {
        if named.insert((f.device, f.core)) {
            name_lane(sink, f.device, f.core);
        }
        trace_inference(sink, cfg.lnc, &f);
    })?;
    for device in 0..cfg.devices {
        let lanes: Vec<&LaneReport> = r.lanes.iter().filter(|l| l.device == device).collect();
        let passes: Vec<&nrt_trace::Samples> = lanes.iter().map(|l| &l.passes).collect();
        let heads: Vec<&nrt_trace::Samples> = lanes.iter().map(|l| &l.head_writes).collect();
        sink.add_samples(u32::from(device), "poll passes", &nrt_trace::counter::merge(&passes));
        sink.add_samples(u32::from(device), "HEAD write-backs", &nrt_trace::counter::merge(&heads));
    }
    Ok(r)
}

fn run_host_with<F: FnMut(Finished<'_>) + ?Sized>(
    cfg: &HostConfig,
    mut observe: Option<&mut F>,
) -> Result<HostReport, SimError> {
    cfg.validate()?;
    let mut lanes_out = Vec::new();
    let mut pollers = Vec::new();
    for p in 0..cfg.pollers {
        // Contiguous blocks, the first ones one device larger when uneven.
        let first = u32::from(cfg.devices) * u32::from(p) / u32::from(cfg.pollers);
        let end = u32::from(cfg.devices) * (u32::from(p) + 1) / u32::from(cfg.pollers);
        let (first, end) = (first as u16, end as u16);
        let (report, lanes) = run_poller(cfg, p, first..end, observe.as_deref_mut())?;
        pollers.push(report);
        lanes_out.extend(lanes);
    }
    lanes_out.sort_by_key(|l| (l.device, l.core));
    Ok(HostReport { config: cfg.clone(), lanes: lanes_out, pollers })
}

fn run_poller<F: FnMut(Finished<'_>) + ?Sized>(
    cfg: &HostConfig,
    poller: u16,
    devices: std::ops::Range<u16>,
    mut observe: Option<&mut F>,
) -> Result<(PollerReport, Vec<LaneReport>), SimError> {
    let keep_times = observe.is_some();
    let mut lanes = PollerLanes(Vec::new());
    for d in devices.clone() {
        for c in 0..cfg.cores {
            lanes.0.push(new_lane(cfg, d, c)?);
        }
    }
    let exec_cfg = ExecConfig::new(cfg.sim.arch, cfg.lnc, cfg.sim.timeout_s);
    let mut group: Box<PollGroup<GROUP_CAPACITY>> = Box::new(PollGroup::new());
    for (i, lane) in lanes.0.iter_mut().enumerate() {
        kickoff(lane, cfg.lnc)?;
        group
            .insert(i as u16, exec_cfg, 0)
            .map_err(|e| SimError::Config(format!("poll group insert of lane {i}: {}", e.reason())))?;
        lane.in_flight = true;
    }
    let (mut passes, mut steps) = (0u64, 0u64);
    let mut finished: Vec<(Completion, Vec<CoreReport>)> = Vec::new();
    while !group.is_empty() {
        if passes >= MAX_PASSES {
            return Err(SimError::Config(format!(
                "poller {poller}: {} requests still in flight after {MAX_PASSES} passes",
                group.in_flight()
            )));
        }
        finished.clear();
        if keep_times {
            for lane in lanes.0.iter_mut().filter(|l| l.in_flight) {
                let t = lane.host.now_ns() / 1_000;
                lane.passes.observe(t);
            }
        }
        let pass = group.poll(&mut lanes, |c, req: &ExecRequest| {
            finished.push((*c, if keep_times { core_reports(req, cfg.lnc) } else { Vec::new() }))
        });
        passes += 1;
        steps += pass.stepped as u64;
        for (c, cores) in finished.drain(..) {
            let Some(lane) = lanes.0.get_mut(usize::from(c.lane)) else { continue };
            lane.results.push((c.step, c.status()));
            if keep_times {
                let now_us = lane.host.now_ns() / 1_000;
                let mut cores = cores;
                for core in &mut cores {
                    core.total_latency_us = lane.host.totals_us.get(usize::from(core.core)).copied().flatten();
                }
                let times = InferenceTimes {
                    kickoff_us: lane.kickoff_us,
                    harvest_us: now_us.saturating_sub(lane.kickoff_us),
                    status: c.status(),
                    cores,
                };
                if let Some(f) = observe.as_deref_mut() {
                    f(Finished { device: lane.device_index, core: lane.core, n: lane.done, times: &times });
                }
            }
            // Nothing of a finished inference stays on the lane: the host's events are not
            // read by a host run, and its HEAD write-backs are counted below.
            lane.host.events.clear();
            lane.host.totals_us = Default::default();
            lane.done += 1;
            lane.in_flight = false;
            if lane.done < cfg.inferences {
                // Every core re-arms now: the next kickoff is taken whatever is still scheduled.
                lane.device.rearm();
                kickoff(lane, cfg.lnc)?;
                group
                    .insert(c.lane, exec_cfg, u64::from(lane.done))
                    .map_err(|e| SimError::Config(format!("poll group insert of lane {}: {}", c.lane, e.reason())))?;
                lane.in_flight = true;
            }
        }
        // The HEAD write-backs of the pass, into the lane's bounded count.
        for lane in &mut lanes.0 {
            if keep_times {
                for t in &lane.host.head_writes_us {
                    lane.heads.observe(*t);
                }
            }
            lane.host.head_writes_us.clear();
        }
        // The poller's wait between passes: 1 us of each in-flight lane's time.
        for lane in lanes.0.iter_mut().filter(|l| l.in_flight) {
            lane.device.advance_virtual(1);
        }
    }
    let records_written = lanes.0.iter().map(|l| l.device.stats().records_written).sum();
    let ring_full_drops = lanes.0.iter().map(|l| l.device.stats().ring_full_drops).sum();
    let report = PollerReport {
        devices: (devices.start, devices.end.saturating_sub(1)),
        lanes: lanes.0.len(),
        passes,
        steps,
        records_written,
        ring_full_drops,
    };
    let lanes = lanes
        .0
        .into_iter()
        .map(|l| LaneReport {
            device: l.device_index,
            core: l.core,
            poller,
            counters: (0..cfg.lnc).filter_map(|c| l.host.counters.core(c).copied()).collect(),
            results: l.results,
            times: l.times,
            passes: l.passes,
            head_writes: l.heads,
        })
        .collect();
    Ok((report, lanes))
}

fn status_list(t: &BTreeMap<(u32, u8), u64>) -> String {
    t.iter()
        .map(|(&(code, rc), n)| format!("{n} x {code} {} (rc {rc})", NrtStatus::from_code(code).name()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The run as text: the host, one line per device, one per poller, the totals.
pub fn text(r: &HostReport) -> String {
    use std::fmt::Write as _;
    let c = &r.config;
    let mut s = String::new();
    let lanes = usize::from(c.devices) * usize::from(c.cores);
    let _ = writeln!(
        s,
        "host: {} devices x {} logical cores ({} physical each) = {lanes} lanes, {} inference{} each, {} poll group{}",
        c.devices,
        c.cores,
        c.lnc,
        c.inferences,
        if c.inferences == 1 { "" } else { "s" },
        c.pollers,
        if c.pollers == 1 { "" } else { "s" }
    );
    if !c.sim.faults.is_empty() {
        let on = if c.fault_devices.is_empty() {
            "every device".to_string()
        } else {
            let d: Vec<String> = c.fault_devices.iter().map(u16::to_string).collect();
            format!("device{} {}", if d.len() == 1 { "" } else { "s" }, d.join(", "))
        };
        let f: Vec<String> = c.sim.faults.iter().map(|f| f.to_string()).collect();
        let _ = writeln!(s, "faults on {on}: {}", f.join("; "));
    }
    let _ = writeln!(
        s,
        "HEAD write-back: {}",
        if c.head_batching { "batched (G-HEAD-BATCH)" } else { "after every sweep" }
    );
    for d in 0..c.devices {
        let _ = writeln!(s, "device {d:>2}: {}", status_list(&r.device_totals(d)));
    }
    for (i, p) in r.pollers.iter().enumerate() {
        let _ = writeln!(
            s,
            "poller {i}: devices {}-{}, {} lanes, {} passes, {} steps, {} records written, {} dropped ring-full",
            p.devices.0, p.devices.1, p.lanes, p.passes, p.steps, p.records_written, p.ring_full_drops
        );
    }
    let _ = writeln!(s, "execution_stats (every lane's cores, as neuron-monitor would sum them):");
    s.push_str(&r.execution_stats().text());
    // The totals stay the last line (tools read it).
    let total: u64 = r.totals().values().sum();
    let _ = writeln!(s, "total: {total} inferences: {}", status_list(&r.totals()));
    s
}

/// The run as JSON.
pub fn json(r: &HostReport) -> serde_json::Value {
    use serde_json::json;
    let c = &r.config;
    let totals = |t: BTreeMap<(u32, u8), u64>| -> Vec<serde_json::Value> {
        t.into_iter()
            .map(|((code, rc), n)| json!({"status": code, "name": NrtStatus::from_code(code).name(), "rc": rc, "count": n}))
            .collect()
    };
    json!({
        "devices": c.devices,
        "cores_per_device": c.cores,
        "lnc": c.lnc,
        "inferences_per_lane": c.inferences,
        "pollers": c.pollers,
        "head_batching": c.head_batching,
        "faults": c.sim.faults.iter().map(|f| f.to_string()).collect::<Vec<_>>(),
        "fault_devices": if c.fault_devices.is_empty() { (0..c.devices).collect::<Vec<_>>() } else { c.fault_devices.clone() },
        "per_device": (0..c.devices).map(|d| json!({"device": d, "statuses": totals(r.device_totals(d))})).collect::<Vec<_>>(),
        "lanes": r.lanes.iter().map(|l| json!({
            "device": l.device, "core": l.core, "poller": l.poller,
            "results": l.results.iter().map(|(st, status)| json!({"rc": st.code(), "status": status.code()})).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "poll_groups": r.pollers.iter().map(|p| json!({
            "first_device": p.devices.0, "last_device": p.devices.1, "lanes": p.lanes, "passes": p.passes,
            "steps": p.steps, "records_written": p.records_written, "ring_full_drops": p.ring_full_drops,
        })).collect::<Vec<_>>(),
        "totals": totals(r.totals()),
        "execution_stats": r.execution_stats().json(None),
    })
}

/// The track of logical core `core`'s kickoffs and harvests in a host run's trace.
pub const fn lane_tid(core: u8) -> u32 {
    1000 + core as u32
}

/// Name device `device`'s process and logical core `core`'s track of kickoffs and harvests.
pub fn name_lane<S: nrt_trace::Sink>(sink: &mut S, device: u16, core: u8) {
    let pid = u32::from(device);
    sink.name_process(pid, &format!("device {device}"));
    sink.name_thread(pid, lane_tid(core), &format!("logical core {core}"));
}

/// One finished inference into `sink`: device `f.device` is the process, its
/// kickoff and harvest on the lane's track ([`lane_tid`]), each physical core
/// (`core * lnc + i`) a track per engine with its START->END span (a pending
/// engine's to the harvest's end), each tagged `inference: n`.
pub fn trace_inference<S: nrt_trace::Sink>(sink: &mut S, lnc: u8, f: &Finished<'_>) {
    let pid = u32::from(f.device);
    let inf = f.times;
    let status = format!("{} {}", inf.status.code(), inf.status.name());
    sink.add_kickoff_on(pid, lane_tid(f.core), inf.kickoff_us, inf.harvest_us, &status, Some(f.n));
    let base = u32::from(f.core) * u32::from(lnc);
    let end_us = inf.kickoff_us.saturating_add(inf.harvest_us);
    sink.add_cores(pid, base, &inf.cores, end_us, Some(f.n));
}
