//! The harvest's events: every warning, probe, error and trace point the
//! completion-engine seed names, as small `Copy` values.
//!
//! The harvest hands each to the platform's
//! [`EventSink<ExecEvent>`](crate::hal::EventSink) (through
//! [`trace`](crate::trace), which also routes it to `log` or defmt);
//! [`event::Event`](crate::event::Event) gathers them with the descriptor
//! handoff's for a platform that wants one stream. `Display` renders the seed's
//! own message text where it gives one.

use core::fmt;

use crate::hal::ErrorKind;
use crate::nq::{Engine, EngineSet, ErrorClass};
use crate::status::NrtStatus;
use crate::trace::{Level, Traced};

/// Why the INTC overflow cause was probed, completion-engine seed §5.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ProbeReason {
    /// A START arrived when the engine was not START_PENDING.
    OutOfOrderStart,
    /// An END arrived when the engine was not END_PENDING.
    OutOfOrderEnd,
    /// The core's budget ran out with an engine still pending.
    Timeout,
}

/// An event of the harvest: every warning, probe, error and trace point the
/// completion-engine seed names.
///
/// Fields are named for what they hold: `core` is the physical core (0 or 1),
/// `nq` the runtime NQ index, `status` the `NRT_STATUS` the event led to.
#[allow(missing_docs)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum ExecEvent {
    /// WAIT_BARRIER_PROXY waited past its threshold; the threshold doubles.
    BarrierWait {
        /// Seconds waited so far.
        waited_s: u64,
        /// The threshold that was crossed, in seconds.
        threshold_s: u32,
    },
    /// The collectives barrier proxy task failed (`exec_fatal_status[core][5]`).
    BarrierProxyFailed { core: u8, status: NrtStatus },
    /// The network proxy task failed (`exec_fatal_status[core][4]`).
    NetworkProxyFailed { core: u8, status: NrtStatus },
    /// The INFER_STATUS NQ count differs from the engine count (`exec.c:0x5A0`).
    NqCountMismatch { got: u8, expected: u8 },
    /// A ring the harvest needs is not configured with a valid size.
    BadRing { core: u8, nq: u8, size_bytes: u32 },
    /// Reading a ring slot failed ("Failed to check for infer_status notifications").
    RingReadFailed { core: u8, nq: u8, kind: ErrorKind },
    /// Writing a ring's HEAD back failed.
    HeadWriteFailed { core: u8, nq: u8, kind: ErrorKind },
    /// The INTC cause register was read to tell overflow from timeout;
    /// `engines`: the engine whose record was out of order, or at a timeout
    /// those still pending.
    OverflowProbe { core: u8, reason: ProbeReason, cause: u32, overflow: bool, engines: EngineSet },
    /// The INTC cause register could not be read (treated as "no overflow").
    IntcReadFailed { core: u8, kind: ErrorKind },
    /// A record of an unexpected subtype on an INFER_STATUS ring.
    UnexpectedNotification { core: u8, engine: Engine, debug_hint: u8, subtype: u16 },
    /// A record's NQ-id tag does not name the ring it was read from (the lane is
    /// chosen by the ring, so this is reported, not acted on).
    NqTagMismatch { core: u8, engine: Engine, tag: u8, expected: u8 },
    /// A custom (subtype 6) diagnostic notification, sub-id other than 7.
    CustomNotification { core: u8, engine: Engine, sub_id: u16, payload: u16, tag: u8 },
    /// A custom notification with a sub-id outside the 11-entry table.
    BadCustomSubId { core: u8, engine: Engine, sub_id: u16 },
    /// A streamed output tensor completed (sub-id 7).
    TensorCompleted { core: u8, var_id: u16, output: u16, count: u32 },
    /// A tensor-completion record names a var id that is no output of the model.
    UnknownTensor { core: u8, var_id: u16 },
    /// The core's budget ran out with engines pending: 5 (timeout) or 1204
    /// (overflow). `no_start`: the engines that never wrote START; `no_end`:
    /// those that started and never wrote END.
    CoreTimeout {
        core: u8,
        elapsed_ms: u64,
        timeout_ms: u64,
        status: NrtStatus,
        no_start: EngineSet,
        no_end: EngineSet,
    },
    /// A timed-out core was reclassified by a fault probe (HBM UE, DMA abort,
    /// collectives).
    HwFault { core: u8, status: NrtStatus },
    /// A timed-out core has no HBM, DMA or collectives fault: the compute itself
    /// hung (HANG_ON_COMPUTE); the status stays 5.
    HangOnCompute { core: u8 },
    /// An engine's timestamp calibration has a zero actual increment: its times are
    /// left unscaled.
    TimestampCalInvalid { core: u8, engine: Engine },
    /// An error-ring record (the first of its subtype in this sweep).
    ErrorRecord { core: u8, subtype: u16, class: ErrorClass, ts_cpu_us: u64, status: NrtStatus },
    /// A sequencer error, with its code.
    SequencerError { core: u8, code: u16 },
    /// "(FATAL-RT-UNDEFINED-STATE) Uncorrectable memory error" (1202).
    UncorrectableEcc { core: u8 },
    /// "Correctable memory error": status unchanged.
    CorrectableEcc { core: u8 },
    /// "Received an unusually large number of error notifications".
    ErrorCountLarge { core: u8, count: u32 },
    /// The bounded error subscriber ring was full: the oldest record was dropped.
    ErrorSubscriberOverrun { dropped: u32 },
    /// The execution unit's has-work count was empty when a request completed
    /// (libnrt aborts; we report and degrade the unit).
    XuHasWorkUnderflow,
    /// Popping the completed request (signalling mark-complete) failed.
    XuCompleteFailed,
    /// The execution unit degraded to FATAL_SHUTDOWN.
    XuFatalShutdown { status: NrtStatus },
}

impl ExecEvent {
    /// How loud the event is.
    pub fn level(&self) -> Level {
        use ExecEvent::*;
        match self {
            BarrierWait { .. } | ErrorCountLarge { .. } | NqTagMismatch { .. } | TimestampCalInvalid { .. } => {
                Level::Warn
            }
            ErrorSubscriberOverrun { .. } => Level::Warn,
            OverflowProbe { overflow, .. } => {
                if *overflow {
                    Level::Error
                } else {
                    Level::Warn
                }
            }
            CustomNotification { .. } | TensorCompleted { .. } => Level::Debug,
            CorrectableEcc { .. } => Level::Info,
            ErrorRecord { status, .. } => {
                if status.is_success() {
                    Level::Info
                } else {
                    Level::Error
                }
            }
            _ => Level::Error,
        }
    }

    /// A short machine-friendly name of the event's kind (`"barrier_wait"`).
    pub fn kind(&self) -> &'static str {
        use ExecEvent::*;
        match self {
            BarrierWait { .. } => "barrier_wait",
            BarrierProxyFailed { .. } => "barrier_proxy_failed",
            NetworkProxyFailed { .. } => "network_proxy_failed",
            NqCountMismatch { .. } => "nq_count_mismatch",
            BadRing { .. } => "bad_ring",
            RingReadFailed { .. } => "ring_read_failed",
            HeadWriteFailed { .. } => "head_write_failed",
            OverflowProbe { .. } => "overflow_probe",
            IntcReadFailed { .. } => "intc_read_failed",
            UnexpectedNotification { .. } => "unexpected_notification",
            NqTagMismatch { .. } => "nq_tag_mismatch",
            CustomNotification { .. } => "custom_notification",
            BadCustomSubId { .. } => "bad_custom_sub_id",
            TensorCompleted { .. } => "tensor_completed",
            UnknownTensor { .. } => "unknown_tensor",
            CoreTimeout { .. } => "core_timeout",
            HwFault { .. } => "hw_fault",
            HangOnCompute { .. } => "hang_on_compute",
            TimestampCalInvalid { .. } => "timestamp_cal_invalid",
            ErrorRecord { .. } => "error_record",
            SequencerError { .. } => "sequencer_error",
            UncorrectableEcc { .. } => "uncorrectable_ecc",
            CorrectableEcc { .. } => "correctable_ecc",
            ErrorCountLarge { .. } => "error_count_large",
            ErrorSubscriberOverrun { .. } => "error_subscriber_overrun",
            XuHasWorkUnderflow => "xu_has_work_underflow",
            XuCompleteFailed => "xu_complete_failed",
            XuFatalShutdown { .. } => "xu_fatal_shutdown",
        }
    }
}

impl ExecEvent {
    /// The message without its `core N: ` head (the core is [`ExecEvent::core`]).
    fn fmt_message(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ExecEvent::*;
        match *self {
            BarrierWait { waited_s, threshold_s } => write!(
                f,
                "Timeout exceeded: Waiting on barrier proxy task: {threshold_s} sec (waited {waited_s} s; next warning at {} s)",
                u64::from(threshold_s) * 2
            ),
            BarrierProxyFailed { status, .. } => write!(f, "barrier proxy task failed: {status}"),
            NetworkProxyFailed { status, .. } => write!(f, "network proxy task failed: {status}"),
            NqCountMismatch { got, expected } => {
                write!(f, "INFER_STATUS NQ count {got} differs from the engine count {expected}")
            }
            BadRing { nq, size_bytes, .. } => {
                write!(f, "NQ {nq} has an invalid size of {size_bytes} bytes")
            }
            RingReadFailed { nq, kind, .. } => {
                write!(f, "Failed to check for infer_status notifications (NQ {nq}: {kind:?})")
            }
            HeadWriteFailed { nq, kind, .. } => write!(f, "failed to write NQ {nq} HEAD ({kind:?})"),
            OverflowProbe { reason, cause, overflow, engines, .. } => {
                let what = match reason {
                    ProbeReason::OutOfOrderStart => "Expected state to be start pending",
                    ProbeReason::OutOfOrderEnd => "Expected state to be end pending",
                    ProbeReason::Timeout => "Engine still pending at the timeout",
                };
                f.write_str(what)?;
                if !engines.is_empty() {
                    write!(f, " ({engines})")?;
                }
                write!(
                    f,
                    "; aws_hal_intc_read_cause = 0x{cause:x}{}",
                    if overflow { " [overflow detected]" } else { "" }
                )
            }
            IntcReadFailed { kind, .. } => write!(f, "INTC cause read failed ({kind:?})"),
            // The seed's text, its "Recieved" spelt right, G-SEED-TYPO.
            UnexpectedNotification { engine, debug_hint, subtype, .. } => write!(
                f,
                "Received unexpected notification on engine {}. Debug Hint: {debug_hint}, Notification Type: {subtype}",
                engine.name()
            ),
            NqTagMismatch { engine, tag, expected, .. } => write!(
                f,
                "record on the {} ring carries NQ-id tag {tag}, expected {expected}",
                engine.name()
            ),
            CustomNotification { engine, sub_id, payload, tag, .. } => write!(
                f,
                "custom notification sub-id {sub_id} on {} (payload {payload}, NQ-id tag {tag})",
                engine.name()
            ),
            BadCustomSubId { engine, sub_id, .. } => {
                write!(f, "custom notification with unknown sub-id {sub_id} on {}", engine.name())
            }
            TensorCompleted { var_id, output, count, .. } => {
                write!(f, "output tensor {output} (var id {var_id}) completed, count {count}")
            }
            UnknownTensor { var_id, .. } => {
                write!(f, "tensor completion for var id {var_id}, which names no output")
            }
            CoreTimeout { elapsed_ms, timeout_ms, status, no_start, no_end, .. } => {
                write!(f, "engines still pending after {elapsed_ms} ms (budget {timeout_ms} ms): {status}")?;
                if !no_end.is_empty() {
                    write!(f, "; started, never wrote END: {no_end}")?;
                }
                if !no_start.is_empty() {
                    write!(f, "; never wrote START: {no_start}")?;
                }
                Ok(())
            }
            HwFault { status, .. } => write!(f, "hardware fault found at the timeout: {status}"),
            HangOnCompute { .. } => write!(
                f,
                "timed out with no HBM, DMA or collectives fault: hang on compute (HANG_ON_COMPUTE)"
            ),
            TimestampCalInvalid { engine, .. } => write!(
                f,
                "{} timestamp calibration has a zero actual increment; times left unscaled",
                engine.name()
            ),
            ErrorRecord { subtype, class, ts_cpu_us, status, .. } => write!(
                f,
                "error notification subtype {subtype} ({}) at {ts_cpu_us} us: {status}",
                class.name()
            ),
            SequencerError { code, .. } => write!(f, "sequencer error, code {code}"),
            UncorrectableEcc { .. } => write!(
                f,
                "(FATAL-RT-UNDEFINED-STATE) Uncorrectable memory error detected; the NeuronCore is in an undefined state"
            ),
            CorrectableEcc { .. } => write!(f, "Correctable memory error detected"),
            ErrorCountLarge { count, .. } => {
                write!(f, "Received an unusually large number of error notifications (count:{count})")
            }
            ErrorSubscriberOverrun { dropped } => {
                write!(f, "error subscriber ring full: {dropped} oldest record(s) dropped so far")
            }
            XuHasWorkUnderflow => write!(f, "execution unit: has-work count empty at completion"),
            XuCompleteFailed => write!(f, "execution unit: Failed to complete request"),
            XuFatalShutdown { status } => write!(f, "execution unit degraded to FATAL_SHUTDOWN after {status}"),
        }
    }
}

impl ExecEvent {
    /// The core the event is about (the request's core index), if one.
    pub fn core(&self) -> Option<u8> {
        use ExecEvent::*;
        match *self {
            BarrierProxyFailed { core, .. }
            | NetworkProxyFailed { core, .. }
            | BadRing { core, .. }
            | RingReadFailed { core, .. }
            | HeadWriteFailed { core, .. }
            | OverflowProbe { core, .. }
            | IntcReadFailed { core, .. }
            | UnexpectedNotification { core, .. }
            | NqTagMismatch { core, .. }
            | CustomNotification { core, .. }
            | BadCustomSubId { core, .. }
            | TensorCompleted { core, .. }
            | UnknownTensor { core, .. }
            | CoreTimeout { core, .. }
            | HwFault { core, .. }
            | HangOnCompute { core }
            | TimestampCalInvalid { core, .. }
            | ErrorRecord { core, .. }
            | SequencerError { core, .. }
            | UncorrectableEcc { core }
            | CorrectableEcc { core }
            | ErrorCountLarge { core, .. } => Some(core),
            BarrierWait { .. }
            | NqCountMismatch { .. }
            | ErrorSubscriberOverrun { .. }
            | XuHasWorkUnderflow
            | XuCompleteFailed
            | XuFatalShutdown { .. } => None,
        }
    }

    /// The engines the event is about: the record's engine, or at a timeout
    /// those still pending; empty for an event of the core or the request.
    pub fn engines(&self) -> EngineSet {
        use ExecEvent::*;
        match *self {
            UnexpectedNotification { engine, .. }
            | NqTagMismatch { engine, .. }
            | CustomNotification { engine, .. }
            | BadCustomSubId { engine, .. }
            | TimestampCalInvalid { engine, .. } => engine.into(),
            CoreTimeout { no_start, no_end, .. } => no_start.union(no_end),
            OverflowProbe { engines, .. } => engines,
            _ => EngineSet::EMPTY,
        }
    }

    /// The message without its `core N: ` head: a platform that names the
    /// core its own way puts this after its name.
    pub fn message(&self) -> impl fmt::Display + '_ {
        Message(self)
    }
}

/// [`ExecEvent::message`].
struct Message<'a>(&'a ExecEvent);

impl fmt::Display for Message<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt_message(f)
    }
}

/// `core N: ` (for an event of a core) and the message.
impl fmt::Display for ExecEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(core) = self.core() {
            write!(f, "core {core}: ")?;
        }
        self.fmt_message(f)
    }
}

impl Traced for ExecEvent {
    fn level(&self) -> Level {
        ExecEvent::level(self)
    }
    fn kind(&self) -> &'static str {
        ExecEvent::kind(self)
    }
    fn core(&self) -> Option<u8> {
        ExecEvent::core(self)
    }
    fn engines(&self) -> EngineSet {
        ExecEvent::engines(self)
    }
    fn fmt_message(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        ExecEvent::fmt_message(self, f)
    }
}
