//! Errors: every failed system call names the call, the device (or file) and
//! the errno, by name and text.

use std::fmt;
use std::io;

use nrt_core::dma::{DmaError, SubmitError};
use nrt_core::hal::{self, ErrorKind};

use crate::sys::errno_name;

/// What a failed operation was about, for a caller that adds the source of a
/// setting to the errors that setting caused (`nrtctl run` and
/// `nrt_session_open` name where the cores came from).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Subject {
    /// Anything else.
    #[default]
    Other,
    /// The cores the session claims: their count refused, or their range
    /// mark refused or held.
    Cores,
}

/// A failed operation on a device or file.
#[derive(Debug)]
pub struct LinuxError {
    /// The call (`"NEURON_IOCTL_SEMAPHORE_INCREMENT"`, `"mmap"`, `"open"`...).
    pub call: &'static str,
    /// The device node or file.
    pub target: String,
    /// The OS error.
    pub source: io::Error,
    /// What the binding learned about the failure beyond the errno (who holds
    /// the cores a mark was refused, ...), printed after it.
    pub detail: Option<String>,
    /// What the operation was about.
    pub subject: Subject,
}

impl LinuxError {
    /// Wrap `source`.
    pub fn new(call: &'static str, target: impl Into<String>, source: io::Error) -> LinuxError {
        LinuxError { call, target: target.into(), source, detail: None, subject: Subject::Other }
    }

    /// The same error with `detail` printed after the errno.
    pub fn with_detail(mut self, detail: impl Into<String>) -> LinuxError {
        self.detail = Some(detail.into());
        self
    }

    /// The same error, about `subject`.
    pub fn about(mut self, subject: Subject) -> LinuxError {
        self.subject = subject;
        self
    }

    /// The errno value, if the error came from the OS.
    pub fn errno(&self) -> Option<i32> {
        self.source.raw_os_error()
    }

    /// The step of core's DMA submit sequence that failed, and core's error,
    /// when this is a DMA staging failure (the same value is the `source()`).
    pub fn dma(&self) -> Option<&SubmitError> {
        self.source.get_ref().and_then(|e| e.downcast_ref::<SubmitError>())
    }
}

impl fmt::Display for LinuxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match errno_name(&self.source) {
            Some(name) => write!(f, "{} on {} failed: {name} ({})", self.call, self.target, self.source)?,
            None => write!(f, "{} on {} failed: {}", self.call, self.target, self.source)?,
        }
        match &self.detail {
            Some(d) => write!(f, ": {d}"),
            None => Ok(()),
        }
    }
}

impl std::error::Error for LinuxError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self.dma() {
            Some(e) => Some(e),
            None => Some(&self.source),
        }
    }
}

impl hal::Error for LinuxError {
    fn kind(&self) -> ErrorKind {
        // A DMA step's error is core's, not the OS's: a platform call's failure
        // keeps the kind the platform gave, anything else is `Other`.
        if let Some(e) = self.dma() {
            return match e.error {
                DmaError::Platform(kind) => kind,
                _ => ErrorKind::Other,
            };
        }
        match self.source.kind() {
            io::ErrorKind::InvalidInput => ErrorKind::OutOfRange,
            io::ErrorKind::NotFound => ErrorKind::NotMapped,
            _ => ErrorKind::Io,
        }
    }
}

/// Why the shape of a session (its cores, their place on the device, its ring
/// entries) is refused: `session::validate_cores`, `validate_placement` and
/// `validate`. A session that refuses it at open carries it inside its
/// [`LinuxError`]'s source (an `InvalidInput` `io::Error`), where
/// `get_ref().downcast_ref()` finds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShapeError {
    /// The count of cores is 0 or past the harvest state's cores or the
    /// device's. Its text: `cores must be 1 to <max>, got <got>`.
    Cores {
        /// The most this arch and the harvest state take.
        max: u8,
        /// The count asked.
        got: u8,
    },
    /// The run of cores from `first` goes past the device's last core. Its
    /// text: `core <first> asked, off the device: a <arch> device has <n>
    /// NeuronCores (0-<n-1>)`, with `cores <first>-<last> asked` for a run of
    /// more than one.
    OffDevice {
        /// The device's generation.
        arch: nrt_core::arch::Arch,
        /// The device's core that would be the session's core 0.
        first: u8,
        /// The count of cores asked.
        cores: u8,
    },
    /// The ring entries are not a power of two from 2 to the most the
    /// binding maps. Its text: `ring entries must be a power of two from 2 to
    /// <max>, got <got>`.
    RingEntries {
        /// The most (`session::MAX_RING_ENTRIES`).
        max: u32,
        /// The count asked.
        got: u32,
    },
}

impl fmt::Display for ShapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ShapeError::Cores { max, got } => write!(f, "cores must be 1 to {max}, got {got}"),
            ShapeError::OffDevice { arch, first, cores } => {
                let have = arch.nc_per_device();
                match cores {
                    1 => write!(f, "core {first} asked")?,
                    _ => write!(f, "cores {first}-{} asked", (u32::from(first) + u32::from(cores)).saturating_sub(1))?,
                }
                write!(
                    f,
                    ", off the device: a {} device has {have} NeuronCores (0-{})",
                    arch.name(),
                    have.saturating_sub(1)
                )
            }
            ShapeError::RingEntries { max, got } => {
                write!(f, "ring entries must be a power of two from 2 to {max}, got {got}")
            }
        }
    }
}

impl std::error::Error for ShapeError {}

/// The driver's `COMPATIBLE_VERSION` range does not hold this binding's
/// runtime version for the device's arch (`session::check_compatible`). Its
/// text names both: `incompatible driver: it serves runtime versions <min> to
/// <max> on arch <type> (<name>), this binding speaks version <ours>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IncompatibleDriver {
    /// The device's generation.
    pub arch: nrt_core::arch::Arch,
    /// The driver's range, as it answered.
    pub driver: nrt_abi::ioctl::CompatibleVersion,
    /// This binding's runtime version for `arch`.
    pub ours: u32,
}

impl fmt::Display for IncompatibleDriver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "incompatible driver: it serves runtime versions {} to {} on arch {} ({}), this binding speaks version {}",
            self.driver.min,
            self.driver.max,
            self.arch.arch_type(),
            self.arch.name(),
            self.ours
        )
    }
}

impl std::error::Error for IncompatibleDriver {}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hand-built run of no cores still prints (no overflow at `first + cores - 1`).
    #[test]
    fn an_off_device_run_of_no_cores_prints() {
        let e = ShapeError::OffDevice { arch: nrt_core::arch::Arch::Sunda, first: 0, cores: 0 };
        assert!(e.to_string().starts_with("cores 0-0 asked, off the device: a sunda device has 2 NeuronCores"), "{e}");
    }

    #[test]
    fn every_errno_prints_by_name_or_number() {
        let named = LinuxError::new("open", "/dev/neuron0", io::Error::from_raw_os_error(libc::EDQUOT));
        assert!(named.to_string().starts_with("open on /dev/neuron0 failed: EDQUOT ("), "{named}");
        let named = LinuxError::new("mmap", "f", io::Error::from_raw_os_error(libc::EOVERFLOW));
        assert!(named.to_string().contains("failed: EOVERFLOW ("), "{named}");
        let unknown = LinuxError::new("ioctl", "/dev/neuron0", io::Error::from_raw_os_error(4000));
        assert!(unknown.to_string().contains("failed: errno 4000 ("), "{unknown}");
        assert!(!unknown.to_string().contains("E?"), "{unknown}");
        let plain = LinuxError::new("read ring", "core 0 nq 4", io::Error::other("the server is gone"));
        assert_eq!(plain.to_string(), "read ring on core 0 nq 4 failed: the server is gone");
    }
}
