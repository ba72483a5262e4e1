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
use crate::nq::{Engine, ErrorClass};
use crate::status::NrtStatus;
use crate::trace::{Level, Traced};

/// Why the INTC overflow cause was probed (completion-engine seed §5).
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
    /// The INTC cause register was read to tell overflow from timeout.
    OverflowProbe { core: u8, reason: ProbeReason, cause: u32, overflow: bool },
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
    /// The core's budget ran out with engines pending: 5 (timeout) or 1204 (overflow).
    CoreTimeout { core: u8, elapsed_ms: u64, timeout_ms: u64, status: NrtStatus },
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

impl fmt::Display for ExecEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ExecEvent::*;
        match *self {
            BarrierWait { waited_s, threshold_s } => write!(
                f,
                "Timeout exceeded: Waiting on barrier proxy task: {threshold_s} sec (waited {waited_s} s; next warning at {} s)",
                u64::from(threshold_s) * 2
            ),
            BarrierProxyFailed { core, status } => write!(f, "core {core}: barrier proxy task failed: {status}"),
            NetworkProxyFailed { core, status } => write!(f, "core {core}: network proxy task failed: {status}"),
            NqCountMismatch { got, expected } => {
                write!(f, "INFER_STATUS NQ count {got} differs from the engine count {expected}")
            }
            BadRing { core, nq, size_bytes } => {
                write!(f, "core {core}: NQ {nq} has an invalid size of {size_bytes} bytes")
            }
            RingReadFailed { core, nq, kind } => {
                write!(f, "core {core}: Failed to check for infer_status notifications (NQ {nq}: {kind:?})")
            }
            HeadWriteFailed { core, nq, kind } => write!(f, "core {core}: failed to write NQ {nq} HEAD ({kind:?})"),
            OverflowProbe { core, reason, cause, overflow } => {
                let what = match reason {
                    ProbeReason::OutOfOrderStart => "Expected state to be start pending",
                    ProbeReason::OutOfOrderEnd => "Expected state to be end pending",
                    ProbeReason::Timeout => "Engine still pending at the timeout",
                };
                write!(
                    f,
                    "core {core}: {what}; aws_hal_intc_read_cause = 0x{cause:x}{}",
                    if overflow { " [overflow detected]" } else { "" }
                )
            }
            IntcReadFailed { core, kind } => write!(f, "core {core}: INTC cause read failed ({kind:?})"),
            // The seed's text, its "Recieved" spelt right (G-SEED-TYPO).
            UnexpectedNotification { core, engine, debug_hint, subtype } => write!(
                f,
                "core {core}: Received unexpected notification on engine {}. Debug Hint: {debug_hint}, Notification Type: {subtype}",
                engine.name()
            ),
            NqTagMismatch { core, engine, tag, expected } => write!(
                f,
                "core {core}: record on the {} ring carries NQ-id tag {tag}, expected {expected}",
                engine.name()
            ),
            CustomNotification { core, engine, sub_id, payload, tag } => write!(
                f,
                "core {core}: custom notification sub-id {sub_id} on {} (payload {payload}, NQ-id tag {tag})",
                engine.name()
            ),
            BadCustomSubId { core, engine, sub_id } => {
                write!(f, "core {core}: custom notification with unknown sub-id {sub_id} on {}", engine.name())
            }
            TensorCompleted { core, var_id, output, count } => {
                write!(f, "core {core}: output tensor {output} (var id {var_id}) completed, count {count}")
            }
            UnknownTensor { core, var_id } => {
                write!(f, "core {core}: tensor completion for var id {var_id}, which names no output")
            }
            CoreTimeout { core, elapsed_ms, timeout_ms, status } => write!(
                f,
                "core {core}: engines still pending after {elapsed_ms} ms (budget {timeout_ms} ms): {status}"
            ),
            HwFault { core, status } => write!(f, "core {core}: hardware fault found at the timeout: {status}"),
            HangOnCompute { core } => write!(
                f,
                "core {core}: timed out with no HBM, DMA or collectives fault: hang on compute (HANG_ON_COMPUTE)"
            ),
            TimestampCalInvalid { core, engine } => write!(
                f,
                "core {core}: {} timestamp calibration has a zero actual increment; times left unscaled",
                engine.name()
            ),
            ErrorRecord { core, subtype, class, ts_cpu_us, status } => write!(
                f,
                "core {core}: error notification subtype {subtype} ({}) at {ts_cpu_us} us: {status}",
                class.name()
            ),
            SequencerError { core, code } => write!(f, "core {core}: sequencer error, code {code}"),
            UncorrectableEcc { core } => write!(
                f,
                "core {core}: (FATAL-RT-UNDEFINED-STATE) Uncorrectable memory error detected; the NeuronCore is in an undefined state"
            ),
            CorrectableEcc { core } => write!(f, "core {core}: Correctable memory error detected"),
            ErrorCountLarge { core, count } => {
                write!(f, "core {core}: Received an unusually large number of error notifications (count:{count})")
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

impl Traced for ExecEvent {
    fn level(&self) -> Level {
        ExecEvent::level(self)
    }
    fn kind(&self) -> &'static str {
        ExecEvent::kind(self)
    }
}
