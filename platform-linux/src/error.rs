//! Errors at the platform seam: every failed operation names the call, the
//! device or file, and a typed [`Cause`]. Nothing is recovered by downcasting.
//!
//! [`hal::Error::kind`] is computed from the cause: an OS error's kind from
//! its `io::ErrorKind`, every other cause's from what it is.

use std::fmt;
use std::io;

use nrt_abi::devmap::Unknown;
use nrt_core::dma::{DmaError, SubmitError};
use nrt_core::hal::{self, ErrorKind};

use crate::device::positive_return;
use crate::fork::ForkedChild;
use crate::sys::errno_name;

/// What a failed operation was about, for a caller that adds the source of a
/// setting to the errors that setting caused: `nrtctl run` and
/// `nrt_session_open` name where the cores came from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Subject {
    /// Anything else.
    #[default]
    Other,
    /// The cores the session claims: their count refused, or their range
    /// mark refused or held.
    Cores,
}

/// Why an operation failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum Cause {
    /// The OS or the driver refused the call: an errno, or a mapping's own check.
    Os(io::Error),
    /// The driver returned this positive value where 0 is success.
    Positive(i32),
    /// The binding refused the call before the driver saw it: an argument or
    /// a state it does not take.
    Refused(String),
    /// What the call needs is not mapped, not bound or not found.
    Missing(String),
    /// The device file stopped answering.
    Gone(String),
    /// A fact no public source gives, so the binding does not guess it.
    Unknown(Unknown),
    /// The session's shape: its cores, their place, its ring entries.
    Shape(ShapeError),
    /// The driver does not serve this binding's runtime version.
    Incompatible(IncompatibleDriver),
    /// A step of core's DMA submit sequence.
    Submit(Box<SubmitError>),
    /// The kickoff semaphore of this core.
    Kickoff {
        /// The device's core.
        nc: u32,
        /// Core's error.
        error: DmaError,
    },
    /// The object was made by the parent of this forked child.
    Forked(ForkedChild),
    /// A runtime API call's error, as a session call answers it.
    Api(Box<crate::Error>),
}

impl From<io::Error> for Cause {
    fn from(e: io::Error) -> Cause {
        Cause::Os(e)
    }
}

impl From<ShapeError> for Cause {
    fn from(e: ShapeError) -> Cause {
        Cause::Shape(e)
    }
}

impl From<IncompatibleDriver> for Cause {
    fn from(e: IncompatibleDriver) -> Cause {
        Cause::Incompatible(e)
    }
}

impl From<SubmitError> for Cause {
    fn from(e: SubmitError) -> Cause {
        Cause::Submit(Box::new(e))
    }
}

impl From<ForkedChild> for Cause {
    fn from(e: ForkedChild) -> Cause {
        Cause::Forked(e)
    }
}

/// The kind of core's DMA error: a platform call's kind as the platform gave it.
fn dma_kind(e: DmaError) -> ErrorKind {
    match e {
        DmaError::Platform(kind) => kind,
        _ => ErrorKind::Other,
    }
}

/// A failed operation on a device or file.
#[derive(Debug)]
pub struct LinuxError {
    /// The call: `"NEURON_IOCTL_SEMAPHORE_INCREMENT"`, `"mmap"`, `"open"`...
    pub call: &'static str,
    /// The device node or file.
    pub target: String,
    /// Why it failed.
    pub cause: Cause,
    /// What the binding learned beyond the cause, printed after it: who
    /// holds the cores a mark was refused...
    pub detail: Option<String>,
    /// What the operation was about.
    pub subject: Subject,
}

impl LinuxError {
    /// `call` on `target` failed for `cause`: an `io::Error` or a typed cause.
    pub fn new(call: &'static str, target: impl Into<String>, cause: impl Into<Cause>) -> LinuxError {
        LinuxError { call, target: target.into(), cause: cause.into(), detail: None, subject: Subject::Other }
    }

    /// `call` on `target` refused by the binding, saying why.
    pub fn refused(call: &'static str, target: impl Into<String>, why: impl Into<String>) -> LinuxError {
        LinuxError::new(call, target, Cause::Refused(why.into()))
    }

    /// The same error with `detail` printed after the cause.
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
        match &self.cause {
            Cause::Os(e) => e.raw_os_error(),
            _ => None,
        }
    }

    /// The step of core's DMA submit sequence that failed, and core's error.
    pub fn dma(&self) -> Option<&SubmitError> {
        match &self.cause {
            Cause::Submit(e) => Some(e.as_ref()),
            _ => None,
        }
    }
}

impl fmt::Display for LinuxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} on {} failed: ", self.call, self.target)?;
        match &self.cause {
            Cause::Os(e) => match errno_name(e) {
                Some(name) => write!(f, "{name} ({e})"),
                None => write!(f, "{e}"),
            },
            Cause::Positive(rc) => f.write_str(&positive_return(self.call, *rc)),
            Cause::Refused(why) | Cause::Missing(why) | Cause::Gone(why) => f.write_str(why),
            Cause::Unknown(u) => f.write_str(u.what()),
            Cause::Shape(e) => write!(f, "{e}"),
            Cause::Incompatible(e) => write!(f, "{e}"),
            Cause::Submit(e) => write!(f, "{e}"),
            Cause::Kickoff { nc, error } => write!(f, "core {nc}: {error}"),
            Cause::Forked(e) => write!(f, "{e}"),
            Cause::Api(e) => write!(f, "{e}"),
        }?;
        match &self.detail {
            Some(d) => write!(f, ": {d}"),
            None => Ok(()),
        }
    }
}

impl std::error::Error for LinuxError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.cause {
            Cause::Os(e) => Some(e),
            Cause::Shape(e) => Some(e),
            Cause::Incompatible(e) => Some(e),
            Cause::Submit(e) => Some(e.as_ref()),
            Cause::Kickoff { error, .. } => Some(error),
            Cause::Forked(e) => Some(e),
            Cause::Api(e) => Some(e.as_ref()),
            Cause::Positive(_) | Cause::Refused(_) | Cause::Missing(_) | Cause::Gone(_) | Cause::Unknown(_) => None,
        }
    }
}

impl hal::Error for LinuxError {
    fn kind(&self) -> ErrorKind {
        match &self.cause {
            // No typed cause: the OS's own kind says what it can.
            Cause::Os(e) => match e.kind() {
                io::ErrorKind::InvalidInput => ErrorKind::OutOfRange,
                io::ErrorKind::NotFound => ErrorKind::NotMapped,
                _ => ErrorKind::Io,
            },
            Cause::Refused(_) | Cause::Shape(_) | Cause::Incompatible(_) => ErrorKind::OutOfRange,
            Cause::Missing(_) | Cause::Unknown(_) => ErrorKind::NotMapped,
            Cause::Positive(_) | Cause::Gone(_) | Cause::Forked(_) => ErrorKind::Io,
            Cause::Submit(e) => dma_kind(e.error),
            // A kickoff the semaphore refused is the platform's I/O failure,
            // whatever the errno.
            Cause::Kickoff { .. } => ErrorKind::Io,
            Cause::Api(e) => match e.status() {
                nrt_core::NrtStatus::Timeout => ErrorKind::Io,
                _ => ErrorKind::OutOfRange,
            },
        }
    }
}

/// Why the shape of a session is refused: its cores, their place on the
/// device or its ring entries. A session refusing it carries it as
/// [`Cause::Shape`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShapeError {
    /// The count of cores is 0 or past the harvest state's or the device's.
    Cores {
        /// The most this arch and the harvest state take.
        max: u8,
        /// The count asked.
        got: u8,
    },
    /// The run of cores from `first` goes past the device's last core.
    OffDevice {
        /// The device's generation.
        arch: nrt_core::arch::Arch,
        /// The device's core that would be the session's core 0.
        first: u8,
        /// The count of cores asked.
        cores: u8,
    },
    /// The ring entries are not a power of two from 2 to the most the binding maps.
    RingEntries {
        /// The most, `session::MAX_RING_ENTRIES`.
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
/// runtime version for the device's arch. Its text names both.
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

    /// Each typed cause is the `source()` as itself, and gives the kind of
    /// what it is; only an OS error has an errno.
    #[test]
    fn a_typed_cause_is_the_source_and_gives_the_kind() {
        use std::error::Error as _;
        let shape = ShapeError::Cores { max: 2, got: 3 };
        let e = LinuxError::new("session", "/dev/neuron0", shape);
        assert!(matches!(e.cause, Cause::Shape(s) if s == shape));
        assert_eq!(e.source().map(ToString::to_string), Some(shape.to_string()));
        assert_eq!((hal::Error::kind(&e), e.errno()), (ErrorKind::OutOfRange, None));
        assert_eq!(e.to_string(), "session on /dev/neuron0 failed: cores must be 1 to 2, got 3");
        let step = nrt_core::dma::SubmitStep::Wait;
        let e = LinuxError::new("DMA staging", "d", SubmitError::at(step, DmaError::Platform(ErrorKind::NotMapped)));
        assert_eq!(e.dma().map(|s| s.step), Some(step));
        assert_eq!(hal::Error::kind(&e), ErrorKind::NotMapped, "the platform's kind, kept");
        let e = LinuxError::new("DMA staging", "d", SubmitError::at(step, DmaError::Timeout));
        assert_eq!(hal::Error::kind(&e), ErrorKind::Other);
        let gone = LinuxError::new("harvest", "d", Cause::Gone("the server is gone".into()));
        assert_eq!((hal::Error::kind(&gone), gone.source().is_none()), (ErrorKind::Io, true));
        let unknown = LinuxError::new("INTC read", "core 0", Cause::Unknown(Unknown::IntcCause));
        assert_eq!(hal::Error::kind(&unknown), ErrorKind::NotMapped);
        assert!(unknown.to_string().ends_with(Unknown::IntcCause.what()), "{unknown}");
        let refused = LinuxError::refused("BAR access", "d", "offset 0x3 misaligned");
        assert_eq!(hal::Error::kind(&refused), ErrorKind::OutOfRange);
        assert_eq!(refused.to_string(), "BAR access on d failed: offset 0x3 misaligned");
        let rc = LinuxError::new("NEURON_IOCTL_NC_RESET", "d", Cause::Positive(1));
        assert!(rc.to_string().contains("returned +1 where 0 is success: a reset"), "{rc}");
        assert_eq!((hal::Error::kind(&rc), rc.errno()), (ErrorKind::Io, None));
        let os = |n| LinuxError::new("ioctl", "d", io::Error::from_raw_os_error(n));
        assert_eq!(hal::Error::kind(&os(libc::EINVAL)), ErrorKind::OutOfRange);
        assert_eq!(hal::Error::kind(&os(libc::ENOENT)), ErrorKind::NotMapped);
        assert_eq!(hal::Error::kind(&os(libc::EIO)), ErrorKind::Io);
        let kick = Cause::Kickoff { nc: 1, error: DmaError::Platform(ErrorKind::OutOfRange) };
        let kick = LinuxError::new("NEURON_IOCTL_SEMAPHORE_INCREMENT", "d", kick);
        assert_eq!(hal::Error::kind(&kick), ErrorKind::Io, "a refused kickoff is an I/O failure");
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
