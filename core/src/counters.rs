//! The per-NeuronCore execution counters: what FINALIZE's
//! `nds_increment_nc_counter(.. exec_notif_duration, mac_count ..)` and the XU
//! worker's `kmetric_update_nds_exec_latencies / _error_stats / _exec_stats`
//! update (completion-engine seed §1, §6), with the driver's counter ids.
//!
//! On a host these counters live in the driver's per-process datastore, where
//! the driver's sysfs files, neuron-monitor and neuron-top read them
//! (`share/neuron_driver_shared.h`: `NDS_NC_COUNTER_*`, `NDS_EXT_NC_COUNTER_*`;
//! the layout is `nrt_abi::nds`). Here they are plain RAM: an
//! [`NcCounterBlock`] per physical core, updated by [`NcCounterBlock::apply`]
//! from an [`NcUpdate`], which the harvest hands to the platform once per
//! finished request and core ([`CounterSink::nc_counters`]).
//! A controller keeps the blocks in RAM; the Linux binding writes them into the
//! mapped datastore.
//!
//! Which status increments which counter follows the SDK's documentation of
//! neuron-monitor's `execution_stats` and `nrt_status.h` where they say, and
//! [`counters_for`]'s table (G-NDS-MAP) where they are silent.
//!
//! Nothing here allocates, blocks or panics: every index is checked, every sum
//! wraps (a counter that wraps after 2^64 events is the driver's own rule for
//! its u64 counters).

use crate::status::NrtStatus;

/// The driver's counter ids (`share/neuron_driver_shared.h`, the `NDS_NC_COUNTER_*`
/// enum from 0 and the `NDS_EXT_NC_COUNTER_*` enum from
/// [`NC_COUNTER_COUNT`](id::NC_COUNTER_COUNT)), as indices of an
/// [`NcCounterBlock`].
pub mod id {
    /// `NDS_NC_COUNTER_TIME_IN_USE` (the driver's sysfs `nc_time_in_use`).
    /// Never written (G-NDS-UNWRITTEN): no public source says what time it
    /// holds or in which unit, so it stays 0.
    pub const TIME_IN_USE: usize = 0;
    /// `NDS_NC_COUNTER_INFER_COMPLETED`.
    pub const INFER_COMPLETED: usize = 1;
    /// `NDS_NC_COUNTER_INFER_COMPLETED_WITH_ERR`.
    pub const INFER_COMPLETED_WITH_ERR: usize = 2;
    /// `NDS_NC_COUNTER_INFER_COMPLETED_WITH_NUM_ERR`.
    pub const INFER_COMPLETED_WITH_NUM_ERR: usize = 3;
    /// `NDS_NC_COUNTER_INFER_TIMED_OUT`.
    pub const INFER_TIMED_OUT: usize = 4;
    /// `NDS_NC_COUNTER_INFER_INCORRECT_INPUT`.
    pub const INFER_INCORRECT_INPUT: usize = 5;
    /// `NDS_NC_COUNTER_INFER_FAILED_TO_QUEUE`.
    pub const INFER_FAILED_TO_QUEUE: usize = 6;
    /// `NDS_NC_COUNTER_ERR_GENERIC`.
    pub const ERR_GENERIC: usize = 7;
    /// `NDS_NC_COUNTER_ERR_NUMERICAL`.
    pub const ERR_NUMERICAL: usize = 8;
    /// `NDS_NC_COUNTER_ERR_MODEL` (neuron-monitor's `error_summary.model`).
    /// Never incremented (G-NDS-UNWRITTEN): [`counters_for`](super::counters_for)
    /// maps no status to it, none of the seeds' statuses or error classes
    /// being the model's.
    pub const ERR_MODEL: usize = 9;
    /// `NDS_NC_COUNTER_ERR_TRANSIENT`.
    pub const ERR_TRANSIENT: usize = 10;
    /// `NDS_NC_COUNTER_ERR_HW`.
    pub const ERR_HW: usize = 11;
    /// `NDS_NC_COUNTER_ERR_RT`.
    pub const ERR_RT: usize = 12;
    /// `NDS_NC_COUNTER_LATENCY_DEVICE`: here the sum of the device latencies,
    /// microseconds (G-NDS-LATENCY).
    pub const LATENCY_DEVICE: usize = 13;
    /// `NDS_NC_COUNTER_LATENCY_TOTAL`: the sum of the total latencies, microseconds.
    pub const LATENCY_TOTAL: usize = 14;
    /// `NDS_NC_COUNTER_NC_TIME`. Never written (G-NDS-UNWRITTEN): no public
    /// definition or unit.
    pub const NC_TIME: usize = 15;
    /// `NDS_NC_COUNTER_GENERIC_FAIL` (sysfs `failure`).
    pub const GENERIC_FAIL: usize = 16;
    /// `NDS_NC_COUNTER_ERR_RESOURCE`.
    pub const ERR_RESOURCE: usize = 17;
    /// `NDS_NC_COUNTER_ERR_RESOURCE_NC`. Never incremented (G-NDS-UNWRITTEN):
    /// no status the harvest returns is a core's resource error.
    pub const ERR_RESOURCE_NC: usize = 18;
    /// `NDS_NC_COUNTER_ERR_INVALID`.
    pub const ERR_INVALID: usize = 19;
    /// `NDS_NC_COUNTER_ERR_UNSUPPORTED_NEFF_VERSION`.
    pub const ERR_UNSUPPORTED_NEFF_VERSION: usize = 20;
    /// `NDS_NC_COUNTER_CC_TIME`. Never written (G-NDS-UNWRITTEN): no public
    /// definition or unit (the harvest keeps each core's CC span, the
    /// report's `cc_start_us` / `cc_end_us`, but not what this counter sums).
    pub const CC_TIME: usize = 21;
    /// `NDS_NC_COUNTER_MODEL_LOAD_COUNT` (sysfs `model_load_count`). Never
    /// written (G-NDS-UNWRITTEN): this project loads no model.
    pub const MODEL_LOAD_COUNT: usize = 27;
    /// `NDS_NC_COUNTER_INFERENCE_COUNT` (sysfs `inference_count`: successful inferences).
    pub const INFERENCE_COUNT: usize = 28;
    /// `NDS_NC_COUNTER_MAC_COUNT` (the driver's sysfs `flop_count`), which
    /// FINALIZE passes as `mac_count`. Never written (G-NDS-UNWRITTEN): it is
    /// the loaded model's work per execution, and there is no model here to
    /// take it from.
    pub const MAC_COUNT: usize = 29;
    /// `NDS_NC_COUNTER_OOB`.
    pub const OOB: usize = 30;
    /// `NDS_NC_COUNTER_COUNT`: counters of the original per-NC section (31).
    pub const NC_COUNTER_COUNT: usize = 31;

    /// `NDS_EXT_NC_COUNTER_HW_ERR_COLLECTIVES` (the extended ids start at 31).
    pub const HW_ERR_COLLECTIVES: usize = 31;
    /// `NDS_EXT_NC_COUNTER_HW_ERR_HBM_UE`.
    pub const HW_ERR_HBM_UE: usize = 32;
    /// `NDS_EXT_NC_COUNTER_HW_ERR_NC_UE`.
    pub const HW_ERR_NC_UE: usize = 33;
    /// `NDS_EXT_NC_COUNTER_HW_ERR_DMA_ABORT`.
    pub const HW_ERR_DMA_ABORT: usize = 34;
    /// `NDS_EXT_NC_COUNTER_ERR_SW_NQ_OVERFLOW` (sysfs `execute_sw_nq_overflow`).
    pub const ERR_SW_NQ_OVERFLOW: usize = 35;
    /// `NDS_EXT_NC_COUNTER_ERR_SW_SEMAPHORE_ERROR`. Never incremented
    /// (G-NDS-UNWRITTEN): no status or error class the seeds give is one.
    pub const ERR_SW_SEMAPHORE_ERROR: usize = 36;
    /// `NDS_EXT_NC_COUNTER_ERR_SW_EVENT_ERROR`. Never incremented (G-NDS-UNWRITTEN): no
    /// status or error class the seeds give is one.
    pub const ERR_SW_EVENT_ERROR: usize = 37;
    /// `NDS_EXT_NC_COUNTER_ERR_SW_PSUM_COLLISION`. Never incremented (G-NDS-UNWRITTEN): no
    /// status or error class the seeds give is one.
    pub const ERR_SW_PSUM_COLLISION: usize = 38;
    /// `NDS_EXT_NC_COUNTER_ERR_SW_SEQUENCER_FATAL`. Never incremented
    /// (G-NDS-UNWRITTEN): the seeds do not say a sequencer error is fatal, and
    /// G-NDS-MAP counts it `ERR_GENERIC`.
    pub const ERR_SW_SEQUENCER_FATAL: usize = 39;
    /// `NDS_EXT_NC_COUNTER_HW_ERR_REPAIRABLE_HBM_UE`.
    pub const HW_ERR_REPAIRABLE_HBM_UE: usize = 40;
    /// `NDS_EXT_NC_COUNTER_LAST`: the first id the driver leaves reserved (41).
    pub const EXT_LAST: usize = 41;
    /// `NDS_EXT_NC_COUNTER_COUNT`: extended counters, reserved ones included
    /// (`LAST - 31 + NDS_EXT_NC_COUNTER_ADDED_RESERVED 54` = 64).
    pub const EXT_NC_COUNTER_COUNT: usize = 64;
    /// `NDS_TOTAL_NC_COUNTER_COUNT`: ids of one NC, original and extended (95).
    pub const TOTAL_NC_COUNTER_COUNT: usize = NC_COUNTER_COUNT + EXT_NC_COUNTER_COUNT;

    /// Ours, in the driver's reserved extended ids (G-NDS-LATENCY): how many
    /// latency samples were ever written (the next sample's slot is this count
    /// modulo [`LATENCY_WINDOW`]).
    pub const LATENCY_SAMPLES_WRITTEN: usize = EXT_LAST;
    /// Ours: the last [`LATENCY_WINDOW`] device latencies, microseconds.
    pub const LATENCY_DEVICE_SAMPLES: usize = LATENCY_SAMPLES_WRITTEN + 1;
    /// Ours: the last [`LATENCY_WINDOW`] total latencies, microseconds.
    pub const LATENCY_TOTAL_SAMPLES: usize = LATENCY_DEVICE_SAMPLES + LATENCY_WINDOW;
    /// Latency samples kept per core, for the percentiles a monitor prints:
    /// as many as the driver's 54 reserved ids (41..=94) hold beside the
    /// sample count and the seven execution counts (1 + 2 x 23 + 7 = 54).
    pub const LATENCY_WINDOW: usize = 23;
    /// Ours, in the driver's reserved extended ids (G-NDS-SUM): the executions
    /// counted once each, at their request's first core, in the request's
    /// outcome: the execution-summary ids `INFER_COMPLETED..=INFER_FAILED_TO_QUEUE`
    /// in the same order from here ([`EXEC_COMPLETED`] .. [`EXEC_FAILED_TO_QUEUE`]).
    pub const EXECUTIONS: usize = LATENCY_TOTAL_SAMPLES + LATENCY_WINDOW;
    /// Executions whose request succeeded (neuron-monitor's `completed`).
    pub const EXEC_COMPLETED: usize = EXECUTIONS;
    /// Executions that ended in an error other than a numeric one.
    pub const EXEC_COMPLETED_WITH_ERR: usize = EXECUTIONS + 1;
    /// Executions that ended in a numeric error.
    pub const EXEC_COMPLETED_WITH_NUM_ERR: usize = EXECUTIONS + 2;
    /// Executions that timed out.
    pub const EXEC_TIMED_OUT: usize = EXECUTIONS + 3;
    /// Executions refused for their input.
    pub const EXEC_INCORRECT_INPUT: usize = EXECUTIONS + 4;
    /// Executions that failed to queue.
    pub const EXEC_FAILED_TO_QUEUE: usize = EXECUTIONS + 5;
    const _: () = assert!(EXEC_FAILED_TO_QUEUE - EXEC_COMPLETED == INFER_FAILED_TO_QUEUE - INFER_COMPLETED);
    /// Executions whose status has no execution-summary field (`GENERIC_FAIL`'s
    /// statuses): with the six above, every execution is in exactly one.
    pub const EXEC_OTHER: usize = EXECUTIONS + 6;
    /// The first id past what this crate writes (95: every reserved id is used).
    pub const WRITTEN_END: usize = EXEC_OTHER + 1;
    const _: () = assert!(WRITTEN_END <= TOTAL_NC_COUNTER_COUNT);
}

/// One finished request's outcome on one physical core, for the counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NcUpdate {
    /// The core's status (`exec_rets[pcore]`).
    pub status: NrtStatus,
    /// The core's error sweep saw a software-sequencer error first (1004 with
    /// sequencer text): counted generic, not transient.
    pub sequencer_error: bool,
    /// The core's error sweep saw a correctable ECC error first (the status is
    /// unchanged): counted transient (neuron-monitor: "recoverable errors, such
    /// as ECC corrections").
    pub correctable_ecc: bool,
    /// Device latency, microseconds: the core's earliest engine START to its
    /// latest END (`tpb_duration[pcore]`, the seed's `exec_notif_duration`).
    pub device_latency_us: u64,
    /// When the request took its first step (INIT, right after the kickoff),
    /// on the platform's [`Clock`](crate::hal::Clock), ns. The total latency is
    /// from here to the platform's clock when it applies the update
    /// ([`NcCounterBlock::apply`]'s `now_ns`): FINALIZE itself reads no clock.
    pub started_ns: u64,
    /// The request was harvested (FINALIZE ran): its latencies count. `false`
    /// for a request an execution unit in FATAL_SHUTDOWN answered 101 without
    /// running it (the seed's XU DONE path counts it all the same, §6): its
    /// status counts, no latency does.
    pub harvested: bool,
    /// The request's status, on the update of the request's first core only
    /// (`None` on its other cores): the execution counts once, in the
    /// request's outcome ([`execution_counter`], G-NDS-SUM).
    pub execution: Option<NrtStatus>,
}

impl NcUpdate {
    /// The update for a request answered without a harvest (no latency).
    pub const fn unharvested(status: NrtStatus) -> NcUpdate {
        NcUpdate {
            status,
            sequencer_error: false,
            correctable_ecc: false,
            device_latency_us: 0,
            started_ns: 0,
            harvested: false,
            execution: None,
        }
    }

    /// The total latency at `now_ns`, microseconds (0 when the clock is behind
    /// the start).
    pub const fn total_latency_us(&self, now_ns: u64) -> u64 {
        now_ns.saturating_sub(self.started_ns) / 1_000
    }
}

/// The counters one outcome increments by one, at most four, unused slots
/// `None`.
pub type CounterSet = [Option<usize>; 4];

/// Which counters a core's status increments (G-NDS-MAP, beside each row).
///
/// The execution summary (one of `INFER_*`), the error summary (one of
/// `ERR_*`), and for the statuses the driver has a counter of its own, that
/// counter:
///
/// | status | summary | error | own |
/// |---|---|---|---|
/// | 0 | `INFER_COMPLETED` | | `INFERENCE_COUNT` (successful inferences, sysfs doc) |
/// | 1003 | `..._WITH_NUM_ERR` | `ERR_NUMERICAL` | |
/// | 1004 | `..._WITH_ERR` | `ERR_TRANSIENT` (sequencer: `ERR_GENERIC`) | |
/// | 5 | `INFER_TIMED_OUT` | | |
/// | 1204 | `INFER_TIMED_OUT` ("timed out due to dropped notifications", nrt_status) | `ERR_RT` | `ERR_SW_NQ_OVERFLOW` |
/// | 1200, 1201, 1202, 1203, 1205 | `..._WITH_ERR` | `ERR_HW` | `HW_ERR_COLLECTIVES`, `HW_ERR_HBM_UE`, `HW_ERR_NC_UE`, `HW_ERR_DMA_ABORT`, `HW_ERR_REPAIRABLE_HBM_UE` |
/// | 6 | `..._WITH_ERR` | `ERR_HW` | |
/// | 1006 | `..._WITH_ERR` | `ERR_GENERIC` | `OOB` |
/// | 1206 | `..._WITH_ERR` | `ERR_RT` | |
/// | 1002 | `INFER_INCORRECT_INPUT` | | |
/// | 7 | `INFER_FAILED_TO_QUEUE` | | |
/// | 101 | `GENERIC_FAIL` | `ERR_RT` | |
/// | 2 | `GENERIC_FAIL` | `ERR_INVALID` | |
/// | 4 | `GENERIC_FAIL` | `ERR_RESOURCE` | |
/// | 10 | `GENERIC_FAIL` | `ERR_UNSUPPORTED_NEFF_VERSION` | |
/// | any other | `GENERIC_FAIL` | `ERR_GENERIC` | |
///
/// A success with a correctable ECC error also counts `ERR_TRANSIENT`.
pub const fn counters_for(u: &NcUpdate) -> CounterSet {
    use id::*;
    match u.status {
        NrtStatus::Success if u.correctable_ecc => {
            [Some(INFER_COMPLETED), Some(INFERENCE_COUNT), Some(ERR_TRANSIENT), None]
        }
        NrtStatus::Success => [Some(INFER_COMPLETED), Some(INFERENCE_COUNT), None, None],
        NrtStatus::ExecCompletedWithNumErr => [Some(INFER_COMPLETED_WITH_NUM_ERR), Some(ERR_NUMERICAL), None, None],
        NrtStatus::ExecCompletedWithErr if u.sequencer_error => {
            [Some(INFER_COMPLETED_WITH_ERR), Some(ERR_GENERIC), None, None]
        }
        NrtStatus::ExecCompletedWithErr => [Some(INFER_COMPLETED_WITH_ERR), Some(ERR_TRANSIENT), None, None],
        NrtStatus::Timeout => [Some(INFER_TIMED_OUT), None, None, None],
        NrtStatus::ExecSwNqOverflow => [Some(INFER_TIMED_OUT), Some(ERR_RT), Some(ERR_SW_NQ_OVERFLOW), None],
        NrtStatus::ExecHwErrCollectives => hw(HW_ERR_COLLECTIVES),
        NrtStatus::ExecHwErrHbmUe => hw(HW_ERR_HBM_UE),
        NrtStatus::ExecHwErrNcUe => hw(HW_ERR_NC_UE),
        NrtStatus::ExecHwErrDmaAbort => hw(HW_ERR_DMA_ABORT),
        NrtStatus::ExecHwErrRepairableHbmUe => hw(HW_ERR_REPAIRABLE_HBM_UE),
        NrtStatus::HwError => [Some(INFER_COMPLETED_WITH_ERR), Some(ERR_HW), None, None],
        NrtStatus::ExecOob => [Some(INFER_COMPLETED_WITH_ERR), Some(ERR_GENERIC), Some(OOB), None],
        NrtStatus::NetworkProxyFailure => [Some(INFER_COMPLETED_WITH_ERR), Some(ERR_RT), None, None],
        NrtStatus::ExecBadInput => [Some(INFER_INCORRECT_INPUT), None, None, None],
        NrtStatus::QueueFull => [Some(INFER_FAILED_TO_QUEUE), None, None, None],
        NrtStatus::ExecUnitUnrecoverable => [Some(GENERIC_FAIL), Some(ERR_RT), None, None],
        NrtStatus::Invalid => [Some(GENERIC_FAIL), Some(ERR_INVALID), None, None],
        NrtStatus::Resource => [Some(GENERIC_FAIL), Some(ERR_RESOURCE), None, None],
        NrtStatus::UnsupportedNeffVersion => [Some(GENERIC_FAIL), Some(ERR_UNSUPPORTED_NEFF_VERSION), None, None],
        _ => [Some(GENERIC_FAIL), Some(ERR_GENERIC), None, None],
    }
}

/// The id an execution whose request ended in `status` counts in, once
/// ([`id::EXECUTIONS`]): the execution-summary field of [`counters_for`]'s
/// row for the status, [`id::EXEC_OTHER`] for a status with none
/// (`GENERIC_FAIL`'s).
pub const fn execution_counter(status: NrtStatus) -> usize {
    match counters_for(&NcUpdate::unharvested(status))[0] {
        Some(c) if c >= id::INFER_COMPLETED && c <= id::INFER_FAILED_TO_QUEUE => {
            id::EXECUTIONS + (c - id::INFER_COMPLETED)
        }
        _ => id::EXEC_OTHER,
    }
}

/// A hardware error with its own extended counter.
const fn hw(own: usize) -> CounterSet {
    [Some(id::INFER_COMPLETED_WITH_ERR), Some(id::ERR_HW), Some(own), None]
}

/// The counters of one physical core, indexed by the driver's counter id
/// (`0..NDS_TOTAL_NC_COUNTER_COUNT`): the same ids, in the same order, as one
/// NC's counters in the datastore.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NcCounterBlock {
    values: [u64; id::TOTAL_NC_COUNTER_COUNT],
}

impl Default for NcCounterBlock {
    fn default() -> Self {
        NcCounterBlock::new()
    }
}

impl NcCounterBlock {
    /// All counters 0.
    pub const fn new() -> NcCounterBlock {
        NcCounterBlock { values: [0; id::TOTAL_NC_COUNTER_COUNT] }
    }

    /// A block holding `values`, by id (counters read back out of a datastore).
    pub const fn from_values(values: [u64; id::TOTAL_NC_COUNTER_COUNT]) -> NcCounterBlock {
        NcCounterBlock { values }
    }

    /// Counter `id` (0 for an id past the block, as the driver's
    /// `get_neuroncore_counter_value` answers an invalid one).
    pub fn get(&self, id: usize) -> u64 {
        self.values.get(id).copied().unwrap_or(0)
    }

    /// Every counter, by id.
    pub const fn values(&self) -> &[u64; id::TOTAL_NC_COUNTER_COUNT] {
        &self.values
    }

    fn add(&mut self, id: usize, n: u64) {
        if let Some(v) = self.values.get_mut(id) {
            *v = v.wrapping_add(n);
        }
    }

    fn set(&mut self, id: usize, n: u64) {
        if let Some(v) = self.values.get_mut(id) {
            *v = n;
        }
    }

    /// Count one finished request's outcome on this core at `now_ns` (the
    /// platform's clock: the end of the total latency): the counters of
    /// [`counters_for`] by one, the latency sums, and the latency samples.
    pub fn apply(&mut self, u: &NcUpdate, now_ns: u64) {
        for c in counters_for(u).into_iter().flatten() {
            self.add(c, 1);
        }
        if let Some(s) = u.execution {
            self.add(execution_counter(s), 1);
        }
        if !u.harvested {
            return;
        }
        let total = u.total_latency_us(now_ns);
        self.add(id::LATENCY_DEVICE, u.device_latency_us);
        self.add(id::LATENCY_TOTAL, total);
        let n = self.get(id::LATENCY_SAMPLES_WRITTEN);
        let slot = (n % id::LATENCY_WINDOW as u64) as usize;
        self.set(id::LATENCY_DEVICE_SAMPLES + slot, u.device_latency_us);
        self.set(id::LATENCY_TOTAL_SAMPLES + slot, total);
        self.set(id::LATENCY_SAMPLES_WRITTEN, n.wrapping_add(1));
    }

    /// The latency samples kept (device, total), oldest first, copied into
    /// `device` and `total`; returns how many (at most [`id::LATENCY_WINDOW`]).
    pub fn latency_samples(
        &self,
        device: &mut [u64; id::LATENCY_WINDOW],
        total: &mut [u64; id::LATENCY_WINDOW],
    ) -> usize {
        latency_samples_of(|i| self.get(i), device, total)
    }
}

/// [`NcCounterBlock::latency_samples`] over any reader of counters by id (a
/// monitor reads them out of a mapped datastore).
pub fn latency_samples_of(
    read: impl Fn(usize) -> u64,
    device: &mut [u64; id::LATENCY_WINDOW],
    total: &mut [u64; id::LATENCY_WINDOW],
) -> usize {
    let written = read(id::LATENCY_SAMPLES_WRITTEN);
    let w = id::LATENCY_WINDOW as u64;
    let n = written.min(w);
    let first = written - n;
    for k in 0..n {
        let slot = ((first + k) % w) as usize;
        if let (Some(d), Some(t)) = (device.get_mut(k as usize), total.get_mut(k as usize)) {
            *d = read(id::LATENCY_DEVICE_SAMPLES + slot);
            *t = read(id::LATENCY_TOTAL_SAMPLES + slot);
        }
    }
    n as usize
}

/// Where the harvest hands each finished request's per-core counter update.
///
/// FINALIZE's counter update (`nds_increment_nc_counter`, completion-engine seed
/// §1; the XU worker's `kmetric_update_nds_*`, §6): one call per physical core of
/// each finished request, after its status is decided, with that core's outcome.
/// A platform that keeps counters applies it to its [`NcCounterBlock`] (and the
/// Linux binding writes the block into the driver's datastore).
///
/// The trait sits here, beside the update it carries, so that the platform seam
/// (`hal`) names no layer's types.
pub trait CounterSink {
    /// Count `update` for physical core `core`. The default keeps no counters:
    /// a platform that does not care writes `impl CounterSink for P {}`. Must not
    /// block.
    fn nc_counters(&mut self, core: u8, update: &NcUpdate) {
        let _ = (core, update);
    }
}

impl<T: CounterSink + ?Sized> CounterSink for &mut T {
    fn nc_counters(&mut self, core: u8, update: &NcUpdate) {
        T::nc_counters(self, core, update)
    }
}

/// The counter blocks of `N` physical cores: a ready
/// [`CounterSink::nc_counters`] target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NcCounters<const N: usize> {
    blocks: [NcCounterBlock; N],
}

impl<const N: usize> Default for NcCounters<N> {
    fn default() -> Self {
        NcCounters::new()
    }
}

impl<const N: usize> NcCounters<N> {
    /// All counters of all cores 0.
    pub const fn new() -> NcCounters<N> {
        NcCounters { blocks: [NcCounterBlock::new(); N] }
    }

    /// Count `u` on core `core` at `now_ns`; a core past `N` is ignored (and
    /// reported `false`).
    pub fn apply(&mut self, core: u8, u: &NcUpdate, now_ns: u64) -> bool {
        match self.blocks.get_mut(usize::from(core)) {
            Some(b) => {
                b.apply(u, now_ns);
                true
            }
            None => false,
        }
    }

    /// Core `core`'s block.
    pub fn core(&self, core: u8) -> Option<&NcCounterBlock> {
        self.blocks.get(usize::from(core))
    }
}

#[cfg(test)]
mod tests;
