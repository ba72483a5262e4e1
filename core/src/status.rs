//! `NRT_STATUS`: the runtime's status codes, their names, descriptions and
//! priorities.
//!
//! The values are those of the public SDK header `nrt/nrt_status.h` (release 2.28;
//! `anchors/neuron-driver-facts.md` §1). Values 8 and 12 are unused there; a value
//! that is not one of the enumerators is carried as [`NrtStatus::Other`] so that a
//! status read back from a device or a C caller is never lost.
//!
//! # Priority
//!
//! When the two NeuronCores of a logical core disagree, the harvest keeps the
//! status of highest priority (completion-engine seed §4, "nrt_get_status_priority
//! resolves multi-core disagreement"). No public source gives that table; we use
//! the one reading of the reverse-engineering notes that is self-consistent
//! (`anchors/seed-vs-driver.md` point 6), listed as unverified in
//! `docs/spec-gaps.md`.

use core::fmt;

/// How severe a status is, for multi-core reconciliation (`nrt_status_priority_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Priority {
    /// `NRT_SUCCESS` only.
    None = 0,
    /// Most failures.
    Medium = 1,
    /// Timeouts, hardware errors, queue overflow, network proxy failure.
    High = 2,
    /// Errors that leave the core in an undefined state.
    Critical = 3,
}

macro_rules! statuses {
    ($( $(#[$m:meta])* $variant:ident = $value:literal, $name:literal, $desc:literal; )*) => {
        /// An `NRT_STATUS` value.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum NrtStatus {
            $( $(#[$m])* #[doc = $desc] $variant, )*
            /// A value that is not an enumerator of `nrt_status.h`.
            Other(u32),
        }

        impl NrtStatus {
            /// Every enumerator of `nrt_status.h`, in value order.
            pub const ALL: &'static [NrtStatus] = &[$(NrtStatus::$variant),*];

            /// The numeric value, as the C API returns it.
            pub const fn code(self) -> u32 {
                match self {
                    $( NrtStatus::$variant => $value, )*
                    NrtStatus::Other(v) => v,
                }
            }

            /// The status of a numeric value; unknown values become [`NrtStatus::Other`].
            pub const fn from_code(code: u32) -> Self {
                match code {
                    $( $value => NrtStatus::$variant, )*
                    v => NrtStatus::Other(v),
                }
            }

            /// The enumerator's identifier (`"NRT_TIMEOUT"`), or `"UNKNOWN"`, as
            /// `nrt_get_status_as_str` does.
            pub const fn name(self) -> &'static str {
                match self {
                    $( NrtStatus::$variant => $name, )*
                    NrtStatus::Other(_) => "UNKNOWN",
                }
            }

            /// A one-line description (paraphrasing the SDK developer guide).
            pub const fn description(self) -> &'static str {
                match self {
                    $( NrtStatus::$variant => $desc, )*
                    NrtStatus::Other(_) => "status value not defined by nrt_status.h",
                }
            }
        }
    };
}

statuses! {
    Success = 0, "NRT_SUCCESS", "the call succeeded";
    Failure = 1, "NRT_FAILURE", "non-specific failure";
    Invalid = 2, "NRT_INVALID", "invalid NEFF, instruction, DMA descriptor or input";
    InvalidHandle = 3, "NRT_INVALID_HANDLE", "invalid handle";
    Resource = 4, "NRT_RESOURCE", "failed to allocate a resource";
    Timeout = 5, "NRT_TIMEOUT", "the operation timed out";
    HwError = 6, "NRT_HW_ERROR", "hardware failure";
    QueueFull = 7, "NRT_QUEUE_FULL", "the execution input queue is full";
    LoadNotEnoughNc = 9, "NRT_LOAD_NOT_ENOUGH_NC", "not enough NeuronCores available to load the model";
    UnsupportedNeffVersion = 10, "NRT_UNSUPPORTED_NEFF_VERSION", "unsupported NEFF version";
    FailHostMemAlloc = 11, "NRT_FAIL_HOST_MEM_ALLOC", "host memory allocation failed (kept for compatibility)";
    Uninitialized = 13, "NRT_UNINITIALIZED", "called before nrt_init";
    Closed = 14, "NRT_CLOSED", "called after nrt_close";
    QueueEmpty = 15, "NRT_QUEUE_EMPTY", "the queue has no data";
    ExecUnitUnrecoverable = 101, "NRT_EXEC_UNIT_UNRECOVERABLE", "the execution unit is in a fatal state and needs a reset";
    ExecBadInput = 1002, "NRT_EXEC_BAD_INPUT", "invalid input to the execution";
    ExecCompletedWithNumErr = 1003, "NRT_EXEC_COMPLETED_WITH_NUM_ERR", "execution completed with a numerical error (NaN)";
    ExecCompletedWithErr = 1004, "NRT_EXEC_COMPLETED_WITH_ERR", "execution completed with an error (logical or parity)";
    ExecNcBusy = 1005, "NRT_EXEC_NC_BUSY", "the NeuronCore is locked by another model or process";
    ExecOob = 1006, "NRT_EXEC_OOB", "an indirect memory copy or embedding lookup went out of bounds";
    CollPending = 1100, "NRT_COLL_PENDING", "a collective operation is pending";
    ExecHwErrCollectives = 1200, "NRT_EXEC_HW_ERR_COLLECTIVES", "stuck in a collective operation (missing notifications)";
    ExecHwErrHbmUe = 1201, "NRT_EXEC_HW_ERR_HBM_UE", "unrepairable uncorrectable HBM memory error";
    ExecHwErrNcUe = 1202, "NRT_EXEC_HW_ERR_NC_UE", "uncorrectable on-chip (NeuronCore) memory parity error";
    ExecHwErrDmaAbort = 1203, "NRT_EXEC_HW_ERR_DMA_ABORT", "a DMA engine hit an unrecoverable error";
    ExecSwNqOverflow = 1204, "NRT_EXEC_SW_NQ_OVERFLOW", "timed out because the software notification queue overflowed and dropped notifications";
    ExecHwErrRepairableHbmUe = 1205, "NRT_EXEC_HW_ERR_REPAIRABLE_HBM_UE", "repairable uncorrectable HBM memory error";
    NetworkProxyFailure = 1206, "NRT_NETWORK_PROXY_FAILURE", "the EFA network proxy failed";
}

impl NrtStatus {
    /// The status's priority (`nrt_get_status_priority`).
    ///
    /// Unverified table, `seed-vs-driver.md` point 6, `docs/spec-gaps.md` G-STATUS-PRIO:
    /// SUCCESS none; 5 and 6 high; other codes below 1004 medium; 1004 critical;
    /// 1005, 1006, 1100 medium; 1200-1203 critical; 1204 high; 1205 critical;
    /// 1206 high; anything else medium.
    pub const fn priority(self) -> Priority {
        match self.code() {
            0 => Priority::None,
            5 | 6 => Priority::High,
            1004 => Priority::Critical,
            1200..=1203 => Priority::Critical,
            1204 => Priority::High,
            1205 => Priority::Critical,
            1206 => Priority::High,
            _ => Priority::Medium,
        }
    }

    /// The worse of two statuses: the higher priority wins; on a tie the one
    /// already held (`self`) stays, as the seed's strict `>` comparison does.
    pub const fn worst(self, other: NrtStatus) -> NrtStatus {
        if (other.priority() as u8) > (self.priority() as u8) {
            other
        } else {
            self
        }
    }

    /// `true` for `NRT_SUCCESS`.
    pub const fn is_success(self) -> bool {
        self.code() == 0
    }
}

impl fmt::Display for NrtStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name(), self.code())
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for NrtStatus {
    fn format(&self, f: defmt::Formatter) {
        defmt::write!(f, "{=str}({=u32})", self.name(), self.code())
    }
}

/// A status that is not `NRT_SUCCESS`: the error of a call that failed.
///
/// [`NrtStatus`] includes success, so a `Result<_, NrtStatus>` can say "failed,
/// with success"; this type cannot. It is built by [`NrtError::new`], which
/// refuses success, or by [`NrtError::failed`], which takes a call already known
/// to have failed and gives a status left at success the generic failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct NrtError(NrtStatus);

impl NrtError {
    /// `NRT_FAILURE` (1), the non-specific failure.
    pub const FAILURE: NrtError = NrtError(NrtStatus::Failure);

    /// The error of `status`; `None` for `NRT_SUCCESS`.
    pub const fn new(status: NrtStatus) -> Option<NrtError> {
        if status.is_success() {
            None
        } else {
            Some(NrtError(status))
        }
    }

    /// The error of a call that failed with `status`. A failure whose status
    /// is still `NRT_SUCCESS` ("failed but error not set", completion-engine
    /// seed §4) is `NRT_FAILURE`.
    pub const fn failed(status: NrtStatus) -> NrtError {
        match NrtError::new(status) {
            Some(e) => e,
            None => NrtError::FAILURE,
        }
    }

    /// The status; never `NRT_SUCCESS`.
    pub const fn status(self) -> NrtStatus {
        self.0
    }

    /// The numeric value, as the C API returns it; never 0.
    pub const fn code(self) -> u32 {
        self.0.code()
    }
}

impl From<NrtError> for NrtStatus {
    fn from(e: NrtError) -> NrtStatus {
        e.0
    }
}

impl fmt::Display for NrtError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl core::error::Error for NrtError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_match_the_header() {
        let expect: &[(u32, &str)] = &[
            (0, "NRT_SUCCESS"),
            (1, "NRT_FAILURE"),
            (2, "NRT_INVALID"),
            (3, "NRT_INVALID_HANDLE"),
            (4, "NRT_RESOURCE"),
            (5, "NRT_TIMEOUT"),
            (6, "NRT_HW_ERROR"),
            (7, "NRT_QUEUE_FULL"),
            (9, "NRT_LOAD_NOT_ENOUGH_NC"),
            (10, "NRT_UNSUPPORTED_NEFF_VERSION"),
            (11, "NRT_FAIL_HOST_MEM_ALLOC"),
            (13, "NRT_UNINITIALIZED"),
            (14, "NRT_CLOSED"),
            (15, "NRT_QUEUE_EMPTY"),
            (101, "NRT_EXEC_UNIT_UNRECOVERABLE"),
            (1002, "NRT_EXEC_BAD_INPUT"),
            (1003, "NRT_EXEC_COMPLETED_WITH_NUM_ERR"),
            (1004, "NRT_EXEC_COMPLETED_WITH_ERR"),
            (1005, "NRT_EXEC_NC_BUSY"),
            (1006, "NRT_EXEC_OOB"),
            (1100, "NRT_COLL_PENDING"),
            (1200, "NRT_EXEC_HW_ERR_COLLECTIVES"),
            (1201, "NRT_EXEC_HW_ERR_HBM_UE"),
            (1202, "NRT_EXEC_HW_ERR_NC_UE"),
            (1203, "NRT_EXEC_HW_ERR_DMA_ABORT"),
            (1204, "NRT_EXEC_SW_NQ_OVERFLOW"),
            (1205, "NRT_EXEC_HW_ERR_REPAIRABLE_HBM_UE"),
            (1206, "NRT_NETWORK_PROXY_FAILURE"),
        ];
        assert_eq!(NrtStatus::ALL.len(), expect.len());
        for (s, (code, name)) in NrtStatus::ALL.iter().zip(expect) {
            assert_eq!(s.code(), *code);
            assert_eq!(s.name(), *name);
            assert_eq!(NrtStatus::from_code(*code), *s);
            assert!(!s.description().is_empty());
        }
        assert_eq!(NrtStatus::from_code(8), NrtStatus::Other(8));
        assert_eq!(NrtStatus::from_code(12).name(), "UNKNOWN");
    }

    #[test]
    fn priority_table() {
        use Priority::*;
        let cases: &[(u32, Priority)] = &[
            (0, None),
            (1, Medium),
            (2, Medium),
            (5, High),
            (6, High),
            (101, Medium),
            (1003, Medium),
            (1004, Critical),
            (1005, Medium),
            (1006, Medium),
            (1100, Medium),
            (1200, Critical),
            (1201, Critical),
            (1202, Critical),
            (1203, Critical),
            (1204, High),
            (1205, Critical),
            (1206, High),
            (1207, Medium),
            (u32::MAX, Medium),
        ];
        for (code, p) in cases {
            assert_eq!(NrtStatus::from_code(*code).priority(), *p, "code {code}");
        }
    }

    #[test]
    fn an_error_is_never_success() {
        assert_eq!(NrtError::new(NrtStatus::Success), None);
        assert_eq!(NrtError::new(NrtStatus::Other(0)), None, "a hand-made 0 is success too");
        assert_eq!(NrtError::failed(NrtStatus::Success), NrtError::FAILURE);
        assert_eq!(NrtError::FAILURE.status(), NrtStatus::Failure);
        let others = NrtStatus::ALL.iter().copied().chain([NrtStatus::Other(8), NrtStatus::Other(u32::MAX)]);
        for s in others.filter(|s| !s.is_success()) {
            let e = NrtError::new(s).expect("a failure status is an error");
            assert_eq!((e.status(), e.code()), (s, s.code()));
            assert_eq!(NrtError::failed(s), e, "failed keeps a status that is set");
            assert_eq!(NrtStatus::from(e), s);
            assert_eq!(std::format!("{e}"), std::format!("{s}"));
        }
        for code in 0..=2000 {
            for e in [NrtError::new(NrtStatus::from_code(code)), Some(NrtError::failed(NrtStatus::from_code(code)))] {
                assert!(e.is_none_or(|e| !e.status().is_success() && e.code() != 0), "code {code}: {e:?}");
            }
        }
        let _: &dyn core::error::Error = &NrtError::FAILURE;
    }

    #[test]
    fn worst_keeps_the_more_severe_and_the_first_on_ties() {
        let ok = NrtStatus::Success;
        let nan = NrtStatus::ExecCompletedWithNumErr;
        assert_eq!(ok.worst(nan), nan);
        assert_eq!(nan.worst(ok), nan);
        assert_eq!(nan.worst(NrtStatus::Timeout), NrtStatus::Timeout);
        assert_eq!(NrtStatus::Timeout.worst(NrtStatus::ExecHwErrNcUe), NrtStatus::ExecHwErrNcUe);
        // 5 and 1204 are both HIGH: the first one held stays.
        assert_eq!(NrtStatus::Timeout.worst(NrtStatus::ExecSwNqOverflow), NrtStatus::Timeout);
        assert_eq!(NrtStatus::ExecSwNqOverflow.worst(NrtStatus::Timeout), NrtStatus::ExecSwNqOverflow);
    }
}

#[cfg(any(kani, test))]
mod proofs;
