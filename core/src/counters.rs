//! The per-NeuronCore execution counters that FINALIZE's
//! `nds_increment_nc_counter` and the XU worker's `kmetric_update_nds_*`
//! update, completion-engine seed §1, §6, with the driver's counter ids.
//!
//! On a host they live in the driver's datastore, laid out by `nrt_abi::nds`;
//! here an [`NcCounterBlock`] per physical core, updated from an [`NcUpdate`]
//! the harvest hands the platform once per finished request and core.
//!
//! Which status increments which counter follows the SDK's documentation
//! where it says, and [`counters_for`]'s table, G-NDS-MAP, where it is
//! silent. A counter "never written" is G-NDS-UNWRITTEN: no public source
//! says what it holds, or no status maps to it.
//!
//! Nothing here allocates, blocks or panics: every index is checked and every
//! sum wraps, as the driver's u64 counters do.

use crate::status::NrtStatus;

/// The driver's counter ids, `NDS_NC_COUNTER_*` then `NDS_EXT_NC_COUNTER_*`,
/// as indices of an [`NcCounterBlock`].
pub mod id {
    /// `NDS_NC_COUNTER_TIME_IN_USE`. Never written.
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
    /// `NDS_NC_COUNTER_ERR_MODEL`. Never written.
    pub const ERR_MODEL: usize = 9;
    /// `NDS_NC_COUNTER_ERR_TRANSIENT`.
    pub const ERR_TRANSIENT: usize = 10;
    /// `NDS_NC_COUNTER_ERR_HW`.
    pub const ERR_HW: usize = 11;
    /// `NDS_NC_COUNTER_ERR_RT`.
    pub const ERR_RT: usize = 12;
    /// `NDS_NC_COUNTER_LATENCY_DEVICE`: here the sum of the device latencies,
    /// microseconds, G-NDS-LATENCY.
    pub const LATENCY_DEVICE: usize = 13;
    /// `NDS_NC_COUNTER_LATENCY_TOTAL`: the sum of the total latencies, microseconds.
    pub const LATENCY_TOTAL: usize = 14;
    /// `NDS_NC_COUNTER_NC_TIME`. Never written.
    pub const NC_TIME: usize = 15;
    /// `NDS_NC_COUNTER_GENERIC_FAIL`.
    pub const GENERIC_FAIL: usize = 16;
    /// `NDS_NC_COUNTER_ERR_RESOURCE`.
    pub const ERR_RESOURCE: usize = 17;
    /// `NDS_NC_COUNTER_ERR_RESOURCE_NC`. Never written.
    pub const ERR_RESOURCE_NC: usize = 18;
    /// `NDS_NC_COUNTER_ERR_INVALID`.
    pub const ERR_INVALID: usize = 19;
    /// `NDS_NC_COUNTER_ERR_UNSUPPORTED_NEFF_VERSION`.
    pub const ERR_UNSUPPORTED_NEFF_VERSION: usize = 20;
    /// `NDS_NC_COUNTER_CC_TIME`. Never written.
    pub const CC_TIME: usize = 21;
    /// `NDS_NC_COUNTER_MODEL_LOAD_COUNT`. Never written: no model is loaded.
    pub const MODEL_LOAD_COUNT: usize = 27;
    /// `NDS_NC_COUNTER_INFERENCE_COUNT`: successful inferences.
    pub const INFERENCE_COUNT: usize = 28;
    /// `NDS_NC_COUNTER_MAC_COUNT`, FINALIZE's `mac_count`. Never written: it is
    /// the loaded model's work.
    pub const MAC_COUNT: usize = 29;
    /// `NDS_NC_COUNTER_OOB`.
    pub const OOB: usize = 30;
    /// `NDS_NC_COUNTER_COUNT`: counters of the original per-NC section.
    pub const NC_COUNTER_COUNT: usize = 31;

    /// `NDS_EXT_NC_COUNTER_HW_ERR_COLLECTIVES`, the first extended id.
    pub const HW_ERR_COLLECTIVES: usize = 31;
    /// `NDS_EXT_NC_COUNTER_HW_ERR_HBM_UE`.
    pub const HW_ERR_HBM_UE: usize = 32;
    /// `NDS_EXT_NC_COUNTER_HW_ERR_NC_UE`.
    pub const HW_ERR_NC_UE: usize = 33;
    /// `NDS_EXT_NC_COUNTER_HW_ERR_DMA_ABORT`.
    pub const HW_ERR_DMA_ABORT: usize = 34;
    /// `NDS_EXT_NC_COUNTER_ERR_SW_NQ_OVERFLOW`.
    pub const ERR_SW_NQ_OVERFLOW: usize = 35;
    /// `NDS_EXT_NC_COUNTER_ERR_SW_SEMAPHORE_ERROR`. Never written.
    pub const ERR_SW_SEMAPHORE_ERROR: usize = 36;
    /// `NDS_EXT_NC_COUNTER_ERR_SW_EVENT_ERROR`. Never written.
    pub const ERR_SW_EVENT_ERROR: usize = 37;
    /// `NDS_EXT_NC_COUNTER_ERR_SW_PSUM_COLLISION`. Never written.
    pub const ERR_SW_PSUM_COLLISION: usize = 38;
    /// `NDS_EXT_NC_COUNTER_ERR_SW_SEQUENCER_FATAL`. Never written: G-NDS-MAP
    /// counts a sequencer error `ERR_GENERIC`.
    pub const ERR_SW_SEQUENCER_FATAL: usize = 39;
    /// `NDS_EXT_NC_COUNTER_HW_ERR_REPAIRABLE_HBM_UE`.
    pub const HW_ERR_REPAIRABLE_HBM_UE: usize = 40;
    /// `NDS_EXT_NC_COUNTER_LAST`: the first id the driver leaves reserved.
    pub const EXT_LAST: usize = 41;
    /// `NDS_EXT_NC_COUNTER_COUNT`: extended counters, reserved ones included.
    pub const EXT_NC_COUNTER_COUNT: usize = 64;
    /// `NDS_TOTAL_NC_COUNTER_COUNT`: ids of one NC, original and extended.
    pub const TOTAL_NC_COUNTER_COUNT: usize = NC_COUNTER_COUNT + EXT_NC_COUNTER_COUNT;

    /// Ours, in a reserved id, G-NDS-LATENCY: latency samples ever written;
    /// the next goes to this modulo [`LATENCY_WINDOW`].
    pub const LATENCY_SAMPLES_WRITTEN: usize = EXT_LAST;
    /// Ours: the last [`LATENCY_WINDOW`] device latencies, microseconds.
    pub const LATENCY_DEVICE_SAMPLES: usize = LATENCY_SAMPLES_WRITTEN + 1;
    /// Ours: the last [`LATENCY_WINDOW`] total latencies, microseconds.
    pub const LATENCY_TOTAL_SAMPLES: usize = LATENCY_DEVICE_SAMPLES + LATENCY_WINDOW;
    /// Latency samples kept per core: what the 54 reserved ids hold beside the
    /// sample count and the seven execution counts.
    pub const LATENCY_WINDOW: usize = 23;
    /// Ours, in reserved ids, G-NDS-SUM: each execution counted once, at its
    /// request's first core, in the order of `INFER_COMPLETED..=INFER_FAILED_TO_QUEUE`.
    pub const EXECUTIONS: usize = LATENCY_TOTAL_SAMPLES + LATENCY_WINDOW;
    /// Executions whose request succeeded.
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
    /// Executions whose status has no execution-summary field; with the six
    /// above, every execution is in exactly one.
    pub const EXEC_OTHER: usize = EXECUTIONS + 6;
    /// The first id past what this crate writes: every reserved id is used.
    pub const WRITTEN_END: usize = EXEC_OTHER + 1;
    const _: () = assert!(WRITTEN_END <= TOTAL_NC_COUNTER_COUNT);
}

/// One finished request's outcome on one physical core, for the counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NcUpdate {
    /// The core's status, `exec_rets[pcore]`.
    pub status: NrtStatus,
    /// The core's error sweep saw a software-sequencer error first: counted
    /// generic, not transient.
    pub sequencer_error: bool,
    /// The core's error sweep saw a correctable ECC error first: counted transient.
    pub correctable_ecc: bool,
    /// Device latency, microseconds: `tpb_duration[pcore]`, the seed's
    /// `exec_notif_duration`.
    pub device_latency_us: u64,
    /// When the request took its first step, on the platform's
    /// [`Clock`](crate::hal::Clock), ns. The total latency runs from here to
    /// [`NcCounterBlock::apply`]'s `now_ns`.
    pub started_ns: u64,
    /// FINALIZE ran, so the latencies count. `false` for a request an XU in
    /// FATAL_SHUTDOWN answered without running it, §6: only its status counts.
    pub harvested: bool,
    /// The request's status, on its first core's update only: the execution
    /// counts once, G-NDS-SUM.
    pub execution: Option<NrtStatus>,
}

impl NcUpdate {
    /// The update for a request answered without a harvest.
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

    /// The total latency at `now_ns`, microseconds; 0 for a clock behind the start.
    pub const fn total_latency_us(&self, now_ns: u64) -> u64 {
        now_ns.saturating_sub(self.started_ns) / 1_000
    }
}

/// The counters one outcome increments by one, at most four, unused slots
/// `None`.
pub type CounterSet = [Option<usize>; 4];

/// Which counters a core's status increments, G-NDS-MAP: its execution
/// summary, its error summary, and the driver's own counter where it has one.
///
/// | status | summary | error | own |
/// |---|---|---|---|
/// | 0 | `INFER_COMPLETED` | | `INFERENCE_COUNT` |
/// | 1003 | `..._WITH_NUM_ERR` | `ERR_NUMERICAL` | |
/// | 1004 | `..._WITH_ERR` | `ERR_TRANSIENT`, `ERR_GENERIC` for a sequencer error | |
/// | 5 | `INFER_TIMED_OUT` | | |
/// | 1204 | `INFER_TIMED_OUT` | `ERR_RT` | `ERR_SW_NQ_OVERFLOW` |
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

/// The id an execution whose request ended in `status` counts in: its
/// [`counters_for`] execution summary, or [`id::EXEC_OTHER`].
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

/// The counters of one physical core, by the driver's counter id, in the
/// datastore's order.
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

    /// A block holding `values`, by id.
    pub const fn from_values(values: [u64; id::TOTAL_NC_COUNTER_COUNT]) -> NcCounterBlock {
        NcCounterBlock { values }
    }

    /// Counter `id`; 0 past the block, as the driver answers.
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

    /// Count one finished request's outcome on this core at `now_ns`, the end
    /// of its total latency: [`counters_for`], the latency sums and samples.
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

    /// Copy the latency samples kept into `device` and `total`, oldest first;
    /// returns how many.
    pub fn latency_samples(
        &self,
        device: &mut [u64; id::LATENCY_WINDOW],
        total: &mut [u64; id::LATENCY_WINDOW],
    ) -> usize {
        latency_samples_of(|i| self.get(i), device, total)
    }
}

/// [`NcCounterBlock::latency_samples`] over any reader of counters by id.
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

/// Where the harvest hands each finished request's per-core counter update:
/// one call per physical core, after its status is decided. Here, beside the
/// update it carries, so that `hal` names no layer's types.
pub trait CounterSink {
    /// Count `update` for physical core `core`; must not block. The default
    /// keeps no counters.
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

    /// Count `u` on core `core` at `now_ns`; `false` for a core past `N`.
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
