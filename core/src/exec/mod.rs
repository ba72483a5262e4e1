//! The completion harvest: `exec_request_progress_one_step` and its drivers,
//! completion-engine seed §1, §2, §5, §6.
//!
//! [`ExecRequest`] is one request's harvest state, libnrt's 472-byte
//! `exec_request_state_t`. [`ExecRequest::progress_one_step`] advances it by
//! one non-blocking step and returns the seed's contract:
//!
//! | return | [`Step`] | meaning |
//! |---|---|---|
//! | 1 | `InFlight` | not done: sleep and call again |
//! | 0 | `Done(status)` | complete, with the reconciled status, which may be 1003 for a NaN |
//! | 2 | `Error(error)` | done with an error, the highest-priority status, never `NRT_SUCCESS` |
//!
//! The machine: `INIT` arms the barrier wait -> `WAIT_BARRIER_PROXY` gates on
//! the collectives barrier, checks the ring count and starts the core clock ->
//! `WAIT_CORE` sweeps each engine's ring, at most 16 records each, through
//! `matcher.rs`, then checks completeness and the budget, probing INTC cause
//! bit 29 only when something is already wrong -> `FINALIZE`, `finalize.rs`,
//! rescales timestamps, sweeps the error ring and reconciles the cores ->
//! `DONE`, terminal.
//!
//! The drivers are in [`driver`]; [`group`] steps many requests from one poller.

mod device;
pub mod driver;
mod event;
mod finalize;
pub mod group;
mod matcher;
pub mod tensor;

pub use device::ExecDevice;
pub use driver::{
    exec_wait_round_robin, exec_wait_watching, exec_wait_with, ExecUnit, NoHooks, SyncWait, WaitHooks, Watch, XuHealth,
    XuQueue, XuSignalError, XuStep, XuWork,
};
pub use event::{ExecEvent, ProbeReason};
#[cfg(any(test, feature = "test-utils"))]
#[doc(hidden)]
pub use finalize::parts as finalize_parts;
pub use group::{Completion, Estimate, GroupError, Harvest, Lanes, Pass, PollGroup, Schedule};
pub use matcher::{errtrig_block_of_tpb, IntcCauseLine61};
pub use tensor::{NoWake, TensorCompletions, TensorWaker};

use crate::arch::{Arch, ENGINES_PER_CORE, MAX_CORES};
use crate::nq::{Engine, EngineSet, ErrorClass, Notifications};
use crate::status::{NrtError, NrtStatus};
use crate::trace::emit;

/// First barrier-wait warning threshold, seconds; it doubles at each warning.
/// Seed §1, `timeout_thresh`.
pub const BARRIER_WARN_INITIAL_S: u32 = 120;

/// Entries read per engine per sweep, seed §2 GOTCHA.
pub const READS_PER_ENGINE_PER_SWEEP: u32 = 16;

/// INTC line of the engine's error-trigger block that carries the software NQ
/// overflow cause, seed §5.
pub const INTC_SW_NQ_OVERFLOW_LINE: u32 = 61;

/// Bit of that cause register that says the software NQ overflowed, seed §5.
pub const INTC_SW_NQ_OVERFLOW_BIT: u32 = 29;

/// Milliseconds per second of the model's timeout, seed §5 GOTCHA.
pub const MS_PER_TIMEOUT_S: u64 = 1000;

/// libnrt's `exec_request_state_t` is 472 bytes, seed §1; ours must not be larger.
pub const LIBNRT_EXEC_REQUEST_STATE_SIZE: usize = 472;

/// Indices of `exec_fatal_status[core][6]`, seed §1, §2, §5.
pub mod fatal {
    /// `[1]`: the core timed out.
    pub const TIMEOUT: usize = 1;
    /// `[2]`: the NQ overflowed at the timeout or on an out-of-order START,
    /// where the seed sets no flag, G-START-OVERFLOW.
    pub const OVERFLOW: usize = 2;
    /// `[3]`: an END record was lost to an overflow.
    pub const END_OVERFLOW: usize = 3;
    /// `[4]`: the network proxy failed.
    pub const NETWORK_PROXY: usize = 4;
    /// `[5]`: the barrier proxy failed.
    pub const BARRIER_PROXY: usize = 5;
    /// Entries per core.
    pub const COUNT: usize = 6;
    /// Names of the flags, by index; `[0]` is unused.
    pub const NAMES: [&str; COUNT] = ["none", "timeout", "overflow", "end_overflow", "network_proxy", "barrier_proxy"];
}

/// Slots of `vcore_notif_ts[core][13]`, stride 13, seed §7 GOTCHA. The seed does
/// not list them; ours, G-TS-SLOTS: `2*eng` START and `2*eng + 1` END of engine
/// `eng`, then CC start, CC end and the latest tensor-completion record.
pub mod ts_slot {
    use crate::arch::ENGINES_PER_CORE;

    /// Earliest START of engine `eng`.
    pub const fn start(eng: usize) -> usize {
        2 * eng
    }
    /// Latest END of engine `eng`.
    pub const fn end(eng: usize) -> usize {
        2 * eng + 1
    }
    /// Earliest CC start: the first slot after the engines' own.
    pub const CC_START: usize = 2 * ENGINES_PER_CORE;
    /// Latest CC end.
    pub const CC_END: usize = CC_START + 1;
    /// Latest tensor-completion record.
    pub const TENSOR: usize = CC_START + 2;
    /// Slots per core.
    pub const COUNT: usize = TENSOR + 1;
    /// Slots from [`CC_START`] on, each kept with the engine whose ring carried it.
    pub const SHARED: usize = COUNT - CC_START;

    // `ExecRequest::ts_recorded` keeps one bit a slot in a u16.
    const _: () = assert!(COUNT <= u16::BITS as usize);
}

/// `exec_state_t`, seed §1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum ExecState {
    /// 0: not started.
    Init = 0,
    /// 1: waiting on the collectives barrier.
    WaitBarrierProxy = 1,
    /// 2: harvesting the engines' rings.
    WaitCore = 2,
    /// 3: finished; terminal.
    Done = 3,
}

impl ExecState {
    /// The seed's name.
    pub const fn name(self) -> &'static str {
        match self {
            ExecState::Init => "INIT",
            ExecState::WaitBarrierProxy => "WAIT_BARRIER_PROXY",
            ExecState::WaitCore => "WAIT_CORE",
            ExecState::Done => "DONE",
        }
    }
}

/// Per-engine substate, `TPB_ENG_STATE_*`; monotone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum TpbEngState {
    /// 0: waiting for START.
    StartPending = 0,
    /// 1: started, waiting for END.
    EndPending = 1,
    /// 2: done.
    Complete = 2,
}

impl TpbEngState {
    /// The seed's name.
    pub const fn name(self) -> &'static str {
        match self {
            TpbEngState::StartPending => "START_PENDING",
            TpbEngState::EndPending => "END_PENDING",
            TpbEngState::Complete => "COMPLETE",
        }
    }
}

/// What one step returns: in flight, or done with the request's status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Step {
    /// 1: in flight; call again.
    InFlight,
    /// 0: done, with the reconciled status, which the error sweep may have
    /// set on a clean harvest, G-RET0.
    Done(NrtStatus),
    /// 2: done with an error: the highest-priority status.
    Error(NrtError),
}

impl Step {
    /// Done with an error; a status left at `NRT_SUCCESS` is `NRT_FAILURE`.
    pub const fn failed(status: NrtStatus) -> Step {
        Step::Error(NrtError::failed(status))
    }

    /// The C integer: 1 in flight, 0 done, 2 done with an error.
    pub const fn code(self) -> u8 {
        match self {
            Step::Done(_) => 0,
            Step::InFlight => 1,
            Step::Error(_) => 2,
        }
    }

    /// The status once done, what the C call writes to `*out`.
    pub const fn status(self) -> Option<NrtStatus> {
        match self {
            Step::InFlight => None,
            Step::Done(s) => Some(s),
            Step::Error(e) => Some(e.status()),
        }
    }
}

/// What a request is for: the model's parameters the harvest needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExecConfig {
    /// The device generation.
    pub arch: Arch,
    /// Physical cores of the logical core, `tpb_count`: [`ExecRequest::new`]
    /// clamps it into 1..=2.
    pub tpb_count: u8,
    /// The model's timeout in **seconds**, `param.timeout`.
    pub timeout_s: u32,
    /// Device TPB index of each physical core: selects its INTC error-trigger block.
    pub tpb_idx: [u8; MAX_CORES],
    /// When FINALIZE's out-info work runs.
    pub settle: Settle,
}

impl ExecConfig {
    /// A config for `tpb_count` cores with TPB indices 0 and 1, settled in FINALIZE.
    pub const fn new(arch: Arch, tpb_count: u8, timeout_s: u32) -> ExecConfig {
        ExecConfig { arch, tpb_count, timeout_s, tpb_idx: [0, 1], settle: Settle::InFinalize }
    }

    /// The same config with FINALIZE's out-info work run when `settle` says.
    pub const fn with_settle(self, settle: Settle) -> ExecConfig {
        ExecConfig { settle, ..self }
    }
}

/// When a finished request's out-info work runs: the timestamps' rescale to
/// CPU time, the durations and the counter update, G-SETTLE.
///
/// Neither decides the status: the error sweep and the reconciliation do,
/// always in FINALIZE. [`Settle::AfterNotice`] lets the status reach its
/// waiter first and leaves the rest to [`ExecRequest::settle`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Settle {
    /// In FINALIZE, in the seed's order. DONE comes with the timestamps in CPU time.
    #[default]
    InFinalize,
    /// FINALIZE runs the error sweep and the reconciliation only; the rest
    /// waits for [`ExecRequest::settle`]. Until then the timestamps are device
    /// units, the durations 0, the request uncounted, and a completed engine's
    /// reads not handed back unless half its ring waits. An invalid
    /// calibration's event then follows the error sweep's events.
    AfterNotice,
}

/// What a core that timed out was classified as at FINALIZE, seed §4. The
/// probes are asked in this order and the first that answers wins, G-TIMEOUT-CLASS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum TimeoutCause {
    /// An HBM uncorrectable error: 1201, or 1205 when repairable, COMPLETE-1.
    HbmUe(NrtStatus),
    /// A DMA engine aborted: 1203.
    DmaAbort,
    /// Stuck in a collective operation: 1200.
    Collectives,
    /// No fault found: the compute hung. The status stays `NRT_TIMEOUT`.
    HangOnCompute,
}

impl TimeoutCause {
    /// The status the cause gives the core.
    pub const fn status(self) -> NrtStatus {
        match self {
            TimeoutCause::HbmUe(s) => s,
            TimeoutCause::DmaAbort => NrtStatus::ExecHwErrDmaAbort,
            TimeoutCause::Collectives => NrtStatus::ExecHwErrCollectives,
            TimeoutCause::HangOnCompute => NrtStatus::Timeout,
        }
    }

    /// A display name.
    pub const fn name(self) -> &'static str {
        match self {
            TimeoutCause::HbmUe(_) => "HBM_UE",
            TimeoutCause::DmaAbort => "DMA_ABORT",
            TimeoutCause::Collectives => "COLLECTIVES",
            TimeoutCause::HangOnCompute => "HANG_ON_COMPUTE",
        }
    }
}

/// The per-core result of a finished request, `out_info`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutInfo {
    /// Each core's status, `exec_rets[pcore]`.
    pub exec_rets: [NrtStatus; MAX_CORES],
    /// Each core's latest END minus earliest START, microseconds, `tpb_duration[pcore]`.
    pub tpb_duration_us: [u64; MAX_CORES],
    /// The first error class the core's error sweep saw, `infer_err[pcore]`.
    pub err: [Option<ErrorClass>; MAX_CORES],
    /// For a core that timed out, what the fault probes found.
    pub timeout_cause: [Option<TimeoutCause>; MAX_CORES],
}

impl OutInfo {
    const EMPTY: OutInfo = OutInfo {
        exec_rets: [NrtStatus::Success; MAX_CORES],
        tpb_duration_us: [0; MAX_CORES],
        err: [None; MAX_CORES],
        timeout_cause: [None; MAX_CORES],
    };
}

/// One request's harvest state, `exec_request_state_t`.
#[derive(Clone, Debug)]
pub struct ExecRequest {
    state: ExecState,
    cfg: ExecConfig,
    /// `barrier_proxy.start_ts`, ns.
    barrier_start_ns: u64,
    /// `barrier_proxy.timeout_thresh`, s.
    barrier_thresh_s: u32,
    /// `barrier_proxy.proxy_done[pcore]`.
    proxy_done: [bool; MAX_CORES],
    /// `core.start_ts`, ns.
    core_start_ns: u64,
    /// `core.timeout_ms`.
    timeout_ms: u64,
    /// `core.network_proxy_done[pcore]`.
    network_proxy_done: [bool; MAX_CORES],
    /// `core.tpb_exec_state[2][5]`.
    tpb_exec_state: [[TpbEngState; ENGINES_PER_CORE]; MAX_CORES],
    /// `vcore_notif_ts`: raw device timestamps until FINALIZE, CPU
    /// microseconds after it.
    vcore_notif_ts: [[u64; ts_slot::COUNT]; MAX_CORES],
    /// Per core, the engine whose ring carried each kept [`ts_slot::SHARED`]
    /// record: selects its calibration.
    slot_engine: [[u8; ts_slot::SHARED]; MAX_CORES],
    /// Per core, bit `s`: slot `s` held a record when FINALIZE rescaled it,
    /// since a record can rescale to 0, an unrecorded slot's value.
    ts_recorded: [u16; MAX_CORES],
    ts_is_cpu: bool,
    /// DONE under [`Settle::AfterNotice`], not yet settled.
    settle_due: bool,
    /// `exec_fatal_status[2][6]`.
    exec_fatal_status: [[bool; fatal::COUNT]; MAX_CORES],
    /// Bit `core`: the core's budget ran out with engines pending.
    timed_out: u8,
    out_info: OutInfo,
    /// The cached result once DONE.
    result: Step,
}

const _: () = assert!(core::mem::size_of::<ExecRequest>() <= LIBNRT_EXEC_REQUEST_STATE_SIZE);

impl ExecRequest {
    /// `exec_request_init_state`: a request in INIT, `tpb_count` clamped to 1..=2.
    pub const fn new(cfg: ExecConfig) -> ExecRequest {
        let mut cfg = cfg;
        if cfg.tpb_count == 0 {
            cfg.tpb_count = 1;
        } else if cfg.tpb_count as usize > MAX_CORES {
            cfg.tpb_count = MAX_CORES as u8;
        }
        ExecRequest {
            state: ExecState::Init,
            cfg,
            barrier_start_ns: 0,
            barrier_thresh_s: BARRIER_WARN_INITIAL_S,
            proxy_done: [false; MAX_CORES],
            core_start_ns: 0,
            timeout_ms: 0,
            network_proxy_done: [false; MAX_CORES],
            tpb_exec_state: [[TpbEngState::StartPending; ENGINES_PER_CORE]; MAX_CORES],
            vcore_notif_ts: [[0; ts_slot::COUNT]; MAX_CORES],
            slot_engine: [[0; ts_slot::SHARED]; MAX_CORES],
            ts_recorded: [0; MAX_CORES],
            ts_is_cpu: false,
            settle_due: false,
            exec_fatal_status: [[false; fatal::COUNT]; MAX_CORES],
            timed_out: 0,
            out_info: OutInfo::EMPTY,
            result: Step::InFlight,
        }
    }

    /// The machine's state.
    pub const fn state(&self) -> ExecState {
        self.state
    }

    /// The request's configuration, clamped.
    pub const fn config(&self) -> &ExecConfig {
        &self.cfg
    }

    /// Physical cores harvested.
    pub const fn tpb_count(&self) -> usize {
        self.cfg.tpb_count as usize
    }

    /// `core.timeout_ms`, 0 before WAIT_CORE.
    pub const fn timeout_ms(&self) -> u64 {
        self.timeout_ms
    }

    /// The barrier-wait warning threshold now in force, seconds.
    pub const fn barrier_threshold_s(&self) -> u32 {
        self.barrier_thresh_s
    }

    /// Substate of `(core, engine)`.
    pub fn substate(&self, core: usize, engine: usize) -> Option<TpbEngState> {
        self.tpb_exec_state.get(core)?.get(engine).copied()
    }

    /// The engines of `core` whose substate is `state`.
    pub fn engines_in(&self, core: usize, state: TpbEngState) -> EngineSet {
        let Some(engines) = self.tpb_exec_state.get(core) else { return EngineSet::EMPTY };
        Engine::ALL.iter().zip(engines).filter(|(_, s)| **s == state).fold(EngineSet::EMPTY, |set, (e, _)| set.with(*e))
    }

    /// Whether `core`'s budget ran out with engines pending, its [`ExecEvent::CoreTimeout`].
    pub fn timed_out(&self, core: usize) -> bool {
        u32::try_from(core).ok().and_then(|c| self.timed_out.checked_shr(c)).is_some_and(|b| b & 1 != 0)
    }

    /// `exec_fatal_status[core][idx]`, indexed by [`fatal`].
    pub fn fatal_flag(&self, core: usize, idx: usize) -> bool {
        self.exec_fatal_status.get(core).and_then(|c| c.get(idx)).copied().unwrap_or(false)
    }

    /// The raw `vcore_notif_ts[core][slot]`: device units before FINALIZE, CPU
    /// microseconds after.
    pub fn notif_ts(&self, core: usize, slot: usize) -> Option<u64> {
        self.vcore_notif_ts.get(core)?.get(slot).copied()
    }

    /// Whether slot `slot` of `core` holds a record: its raw value, before the
    /// rescale, is not 0. Its CPU time may be 0.
    pub fn ts_recorded(&self, core: usize, slot: usize) -> bool {
        if self.ts_is_cpu {
            let bits = self.ts_recorded.get(core).copied().unwrap_or(0);
            slot < ts_slot::COUNT && bits & (1 << slot) != 0
        } else {
            self.notif_ts(core, slot).is_some_and(|v| v != 0)
        }
    }

    /// `true` once FINALIZE or [`Self::settle`] turned the timestamps into CPU
    /// microseconds.
    pub const fn timestamps_are_cpu_us(&self) -> bool {
        self.ts_is_cpu
    }

    /// `true` while the request is DONE and its [`Self::settle`] is due.
    pub const fn settle_due(&self) -> bool {
        self.settle_due
    }

    /// START and END of `(core, engine)` in CPU microseconds, once finalized,
    /// for the records seen.
    pub fn engine_times_us(&self, core: usize, engine: usize) -> (Option<u64>, Option<u64>) {
        if !self.ts_is_cpu || self.substate(core, engine).is_none() {
            return (None, None);
        }
        let st = self.substate(core, engine);
        let start = match st {
            Some(TpbEngState::EndPending | TpbEngState::Complete) => self.notif_ts(core, ts_slot::start(engine)),
            _ => None,
        };
        let end = match st {
            Some(TpbEngState::Complete) => self.notif_ts(core, ts_slot::end(engine)),
            _ => None,
        };
        (start, end)
    }

    /// The per-core results: meaningful once DONE, the durations once settled.
    pub const fn out_info(&self) -> &OutInfo {
        &self.out_info
    }

    /// The final result once DONE: [`Step::Done`] or [`Step::Error`] with the status.
    pub fn result(&self) -> Option<Step> {
        (self.state == ExecState::Done).then_some(self.result)
    }

    /// `exec_request_progress_one_step`: advance by one non-blocking step.
    ///
    /// Returns [`Step::InFlight`] while in flight, then [`Step::Done`] or
    /// [`Step::Error`] with the status. DONE is terminal: later calls return
    /// the same and change nothing.
    pub fn progress_one_step<D: ExecDevice + ?Sized>(&mut self, dev: &mut D, nq: &mut Notifications) -> Step {
        match self.state {
            ExecState::Init => {
                self.state = ExecState::WaitBarrierProxy;
                self.barrier_thresh_s = BARRIER_WARN_INITIAL_S;
                self.barrier_start_ns = dev.now_ns();
                Step::InFlight
            }
            ExecState::WaitBarrierProxy => self.step_wait_barrier(dev, nq),
            ExecState::WaitCore => self.step_wait_core(dev, nq),
            ExecState::Done => self.result,
        }
    }

    fn step_wait_barrier<D: ExecDevice + ?Sized>(&mut self, dev: &mut D, nq: &mut Notifications) -> Step {
        let n = self.tpb_count();
        for (core, done) in self.proxy_done.iter_mut().enumerate().take(n) {
            if *done {
                continue;
            }
            let c = core as u8;
            match dev.barrier_status(c) {
                Ok(d) => *done = d,
                Err(e) => {
                    self.set_fatal(core, fatal::BARRIER_PROXY);
                    self.set_core_status(core, e.status());
                    emit(dev, ExecEvent::BarrierProxyFailed { core: c, status: e.status() });
                    return self.finalize(dev, nq, Some(e));
                }
            }
        }
        if self.proxy_done.iter().take(n).any(|d| !d) {
            let waited_ns = dev.now_ns().saturating_sub(self.barrier_start_ns);
            let thresh_ns = u64::from(self.barrier_thresh_s).saturating_mul(1_000_000_000);
            if waited_ns >= thresh_ns {
                emit(
                    dev,
                    ExecEvent::BarrierWait { waited_s: waited_ns / 1_000_000_000, threshold_s: self.barrier_thresh_s },
                );
                // Back off and keep waiting: the barrier is never fatal, seed §1 QUIRK.
                self.barrier_thresh_s = self.barrier_thresh_s.saturating_mul(2);
            }
            return Step::InFlight;
        }

        // All barriers cleared: the transition to WAIT_CORE.
        let got = nq.infer_status_nqs().len();
        if got != ENGINES_PER_CORE {
            emit(
                dev,
                ExecEvent::NqCountMismatch { got: got.min(u8::MAX as usize) as u8, expected: ENGINES_PER_CORE as u8 },
            );
            for core in 0..n {
                self.set_core_status(core, NrtStatus::Failure);
            }
            return self.finalize(dev, nq, Some(NrtError::FAILURE));
        }
        for core in 0..n {
            for &id in nq.infer_status_nqs() {
                let ring = nq.ring(core as u8, id).copied().unwrap_or_default();
                if !ring.is_bound() {
                    emit(dev, ExecEvent::BadRing { core: core as u8, nq: id, size_bytes: ring.size_bytes() });
                    self.set_core_status(core, NrtStatus::Failure);
                    return self.finalize(dev, nq, Some(NrtError::FAILURE));
                }
            }
        }
        self.state = ExecState::WaitCore;
        self.tpb_exec_state = [[TpbEngState::StartPending; ENGINES_PER_CORE]; MAX_CORES];
        self.vcore_notif_ts = [[0; ts_slot::COUNT]; MAX_CORES];
        // u32 seconds * 1000 always fits a u64 (kani: `timeout_ms_never_overflows`).
        self.timeout_ms = MS_PER_TIMEOUT_S * u64::from(self.cfg.timeout_s);
        self.core_start_ns = dev.now_ns();
        Step::InFlight
    }

    fn step_wait_core<D: ExecDevice + ?Sized>(&mut self, dev: &mut D, nq: &mut Notifications) -> Step {
        let n = self.tpb_count();
        for core in 0..n {
            let c = core as u8;
            if !self.network_proxy_done.get(core).copied().unwrap_or(true) {
                match dev.network_status(c) {
                    Ok(d) => {
                        if let Some(slot) = self.network_proxy_done.get_mut(core) {
                            *slot = d;
                        }
                    }
                    Err(e) => {
                        self.set_fatal(core, fatal::NETWORK_PROXY);
                        self.set_core_status(core, e.status());
                        emit(dev, ExecEvent::NetworkProxyFailed { core: c, status: e.status() });
                        return self.finalize(dev, nq, Some(e));
                    }
                }
            }
            if let Err(e) = self.consume_core(dev, nq, core) {
                self.set_core_status(core, e.status());
                return self.finalize(dev, nq, Some(e));
            }
        }

        // End of sweep: completeness and the budget.
        let elapsed_ms = dev.now_ns().saturating_sub(self.core_start_ns) / 1_000_000;
        let mut all_done = true;
        let mut fault: Option<NrtError> = None;
        // Engines that completed during this sweep count as done here, unlike
        // the seed, which could time out an END that arrived in the last
        // sweep, G-UNITS-DONE.
        for core in 0..n {
            if self.core_complete(core) {
                continue;
            }
            all_done = false;
            if elapsed_ms >= self.timeout_ms {
                let c = core as u8;
                let pending = self
                    .engines_in(core, TpbEngState::StartPending)
                    .union(self.engines_in(core, TpbEngState::EndPending));
                let st = if self.probe_overflow(dev, core, ProbeReason::Timeout, pending) {
                    self.set_fatal(core, fatal::OVERFLOW);
                    NrtError::failed(NrtStatus::ExecSwNqOverflow)
                } else {
                    self.set_fatal(core, fatal::TIMEOUT);
                    NrtError::failed(NrtStatus::Timeout)
                };
                self.set_core_status(core, st.status());
                self.timed_out |= 1 << core;
                emit(
                    dev,
                    ExecEvent::CoreTimeout {
                        core: c,
                        elapsed_ms,
                        timeout_ms: self.timeout_ms,
                        status: st.status(),
                        no_start: self.engines_in(core, TpbEngState::StartPending),
                        no_end: self.engines_in(core, TpbEngState::EndPending),
                    },
                );
                fault = Some(st);
            }
        }
        if fault.is_some() || all_done {
            return self.finalize(dev, nq, fault);
        }
        Step::InFlight
    }

    /// Every engine of `core` is COMPLETE: `units_done == units_polled`.
    fn core_complete(&self, core: usize) -> bool {
        self.tpb_exec_state.get(core).is_none_or(|engines| engines.iter().all(|s| *s == TpbEngState::Complete))
    }

    fn set_fatal(&mut self, core: usize, idx: usize) {
        if let Some(f) = self.exec_fatal_status.get_mut(core).and_then(|c| c.get_mut(idx)) {
            *f = true;
        }
    }

    fn set_core_status(&mut self, core: usize, status: NrtStatus) {
        if let Some(r) = self.out_info.exec_rets.get_mut(core) {
            *r = r.worst(status);
        }
    }
}

#[cfg(any(kani, test))]
mod proofs;

#[cfg(test)]
mod tests;
