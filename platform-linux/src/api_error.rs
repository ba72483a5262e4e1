//! The runtime API's error: one typed enum for memory, copies and executions,
//! each variant with its source and its `NRT_STATUS`, [`Error::status`].
//!
//! Every message names the call, the object, the device and its cores, and
//! the reason; a `site` reads `/dev/neuron0 nd0 nc0-1`.

use std::fmt;

use nrt_core::dma::SubmitError;
use nrt_core::NrtStatus;

use crate::error::{Cause, LinuxError, Subject};
use crate::fork::ForkedChild;

/// Why a call of the runtime API failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// A call to the driver or the OS failed: `NRT_FAILURE`.
    Os(LinuxError),
    /// The cores are held by another process, named in the source: `NRT_EXEC_NC_BUSY`.
    Busy(LinuxError),
    /// The driver had no memory for an allocation: `NRT_RESOURCE`.
    NoMemory(LinuxError),
    /// An argument is refused: `NRT_INVALID`.
    Invalid {
        /// The call.
        call: &'static str,
        /// The device and cores.
        site: String,
        /// What was refused.
        why: String,
    },
    /// The object cannot be used here, closed or another session's: `NRT_INVALID_HANDLE`.
    Handle {
        /// The call.
        call: &'static str,
        /// The device and cores.
        site: String,
        /// Why.
        why: String,
    },
    /// The session cannot run work any more, after a lost copy marker or a
    /// half-done resize: `NRT_EXEC_UNIT_UNRECOVERABLE`, close and reopen.
    Unusable {
        /// The call.
        call: &'static str,
        /// The device and cores.
        site: String,
        /// Why.
        why: String,
    },
    /// The object was made by the parent of this forked child: `NRT_INVALID_HANDLE`.
    Forked {
        /// The call.
        call: &'static str,
        /// The refusal.
        source: ForkedChild,
    },
    /// A copy's completion marker did not arrive within core's budget: `NRT_TIMEOUT`.
    CopyTimeout {
        /// The device and cores.
        site: String,
        /// The DMA engine and queue.
        queue: (u32, u32),
        /// Device address of the completion handle.
        handle: u64,
    },
    /// A copy's marker arrived but its destination does not hold its source: `NRT_HW_ERROR`.
    CopyNotMoved {
        /// The device and cores.
        site: String,
        /// The DMA engine and queue.
        queue: (u32, u32),
        /// Bytes that should have moved.
        bytes: u64,
    },
    /// A step of core's submit sequence failed: `NRT_FAILURE`, `NRT_TIMEOUT` for its wait.
    Submit {
        /// The device and cores.
        site: String,
        /// The DMA engine and queue.
        queue: (u32, u32),
        /// Core's error, naming the step.
        source: Box<SubmitError>,
    },
    /// The execution was queued when its session closed, and never ran: `NRT_CLOSED`.
    Closed {
        /// The device and cores.
        site: String,
    },
    /// The session's queue of executions is full: `NRT_QUEUE_FULL`.
    QueueFull {
        /// The device and cores.
        site: String,
        /// Executions in flight, the queue's capacity.
        in_flight: usize,
    },
}

impl Error {
    /// The `NRT_STATUS` a C caller gets for this error.
    pub fn status(&self) -> NrtStatus {
        match self {
            Error::Os(_) => NrtStatus::Failure,
            Error::Busy(_) => NrtStatus::ExecNcBusy,
            Error::NoMemory(_) => NrtStatus::Resource,
            Error::Invalid { .. } => NrtStatus::Invalid,
            Error::Handle { .. } | Error::Forked { .. } => NrtStatus::InvalidHandle,
            Error::Unusable { .. } => NrtStatus::ExecUnitUnrecoverable,
            Error::CopyTimeout { .. } => NrtStatus::Timeout,
            Error::CopyNotMoved { .. } => NrtStatus::HwError,
            Error::Submit { source, .. } => match source.error {
                nrt_core::dma::DmaError::Timeout => NrtStatus::Timeout,
                _ => NrtStatus::Failure,
            },
            Error::QueueFull { .. } => NrtStatus::QueueFull,
            Error::Closed { .. } => NrtStatus::Closed,
        }
    }

    /// An [`Error::Invalid`].
    pub(crate) fn invalid(call: &'static str, site: impl fmt::Display, why: impl Into<String>) -> Error {
        Error::Invalid { call, site: site.to_string(), why: why.into() }
    }

    /// An [`Error::Handle`].
    pub(crate) fn handle(call: &'static str, site: impl fmt::Display, why: impl Into<String>) -> Error {
        Error::Handle { call, site: site.to_string(), why: why.into() }
    }
}

impl Error {
    /// As a [`LinuxError`] on `target`, for the session calls that answer one:
    /// the driver's own error as it is, any other as its [`Cause::Api`].
    pub fn into_linux(self, target: &std::path::Path) -> LinuxError {
        match self {
            Error::Os(e) | Error::Busy(e) | Error::NoMemory(e) => e,
            Error::Forked { call, source } => source.into_linux(call, target.display().to_string()),
            other => {
                let call = match &other {
                    Error::Invalid { call, .. } | Error::Handle { call, .. } | Error::Unusable { call, .. } => *call,
                    _ => "copy",
                };
                LinuxError::new(call, target.display().to_string(), Cause::Api(Box::new(other)))
            }
        }
    }
}

impl From<LinuxError> for Error {
    /// A refused range mark of cores another process holds is [`Error::Busy`],
    /// an allocation refused with `ENOMEM` [`Error::NoMemory`], anything else
    /// [`Error::Os`].
    fn from(e: LinuxError) -> Error {
        match e.errno() {
            Some(libc::EBUSY) if e.subject == Subject::Cores => Error::Busy(e),
            Some(libc::ENOMEM) => Error::NoMemory(e),
            _ => Error::Os(e),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Os(e) | Error::NoMemory(e) => write!(f, "{e}"),
            Error::Busy(e) => write!(f, "{e} (the cores are another process's)"),
            Error::Invalid { call, site, why } => write!(f, "{call} on {site}: {why}"),
            Error::Handle { call, site, why } => write!(f, "{call} on {site}: {why}"),
            Error::Unusable { call, site, why } => {
                write!(f, "{call} on {site}: the session is unusable: {why}; close and reopen it")
            }
            Error::Forked { call, source } => write!(f, "{call}: {source}"),
            Error::CopyTimeout { site, queue: (e, q), handle } => write!(
                f,
                "copy on {site} DMA engine {e} queue {q}: its completion marker at 0x{handle:x} did not arrive; \
                 the queue's state is unknown: close and reopen the session"
            ),
            Error::CopyNotMoved { site, queue: (e, q), bytes } => write!(
                f,
                "copy on {site} DMA engine {e} queue {q}: the marker arrived but the {bytes} bytes copied do not \
                 match their source (the device did not move the data)"
            ),
            Error::Submit { site, queue: (e, q), source } => {
                write!(f, "copy on {site} DMA engine {e} queue {q}: {source}")
            }
            Error::Closed { site } => {
                write!(f, "execution on {site}: the session closed before it ran (it was queued, never started)")
            }
            Error::QueueFull { site, in_flight } => write!(
                f,
                "nrt_exec_submit on {site}: {in_flight} executions in flight, the queue's capacity: wait for one first"
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Os(e) | Error::Busy(e) | Error::NoMemory(e) => Some(e),
            Error::Forked { source, .. } => Some(source),
            Error::Submit { source, .. } => Some(source.as_ref()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;

    #[test]
    fn each_error_has_its_status() {
        let busy = LinuxError::new(
            "NEURON_IOCTL_CRWL_NC_RANGE_MARK",
            "/dev/neuron0",
            io::Error::from_raw_os_error(libc::EBUSY),
        )
        .about(Subject::Cores);
        assert_eq!(Error::from(busy).status().code(), 1005);
        let other_busy = LinuxError::new("open", "/dev/neuron0", io::Error::from_raw_os_error(libc::EBUSY));
        assert_eq!(Error::from(other_busy).status().code(), 1);
        let nomem =
            LinuxError::new("NEURON_IOCTL_MEM_ALLOC_V2MT", "/dev/neuron0", io::Error::from_raw_os_error(libc::ENOMEM));
        assert_eq!(Error::from(nomem).status().code(), 4);
        assert_eq!(Error::invalid("nrt_copy", "s", "x").status().code(), 2);
        assert_eq!(Error::handle("nrt_copy", "s", "x").status().code(), 3);
        let u = Error::Unusable { call: "nrt_copy", site: "s".into(), why: "w".into() };
        assert_eq!(u.status().code(), 101);
        let t = Error::CopyTimeout { site: "/dev/neuron0 nd0 nc0".into(), queue: (4, 0), handle: 0x10 };
        assert_eq!(t.status().code(), 5);
        assert!(t.to_string().contains("DMA engine 4 queue 0"), "{t}");
        let m = Error::CopyNotMoved { site: "s".into(), queue: (4, 0), bytes: 8 };
        assert_eq!(m.status().code(), 6);
        assert_eq!(Error::QueueFull { site: "s".into(), in_flight: 8 }.status().code(), 7);
        assert_eq!(Error::Closed { site: "s".into() }.status().code(), 14);
    }

    fn submit_error(error: nrt_core::dma::DmaError) -> Error {
        let source = SubmitError { step: nrt_core::dma::SubmitStep::Wait, error, rung: None };
        Error::Submit { site: "s".into(), queue: (4, 0), source: Box::new(source) }
    }

    /// A submit step's timeout is NRT_TIMEOUT, any other step's failure NRT_FAILURE.
    #[test]
    fn a_submit_error_is_a_timeout_only_for_its_wait() {
        assert_eq!(submit_error(nrt_core::dma::DmaError::Timeout).status(), NrtStatus::Timeout);
        assert_eq!(submit_error(nrt_core::dma::DmaError::ZeroGranule).status(), NrtStatus::Failure);
    }

    /// As a LinuxError: the driver's own error as it was; the others keep
    /// their call, a timeout's kind, and this error as the cause.
    #[test]
    fn into_linux_keeps_the_call_the_kind_and_the_source() {
        let path = std::path::Path::new("/dev/neuron0");
        let os = LinuxError::new("mmap", "/dev/neuron0", io::Error::from_raw_os_error(libc::EACCES));
        assert_eq!(Error::Os(os).into_linux(path).errno(), Some(libc::EACCES));
        let u = Error::Unusable { call: "inference", site: "s".into(), why: "w".into() }.into_linux(path);
        assert!(matches!(&u.cause, Cause::Api(e) if matches!(**e, Error::Unusable { .. })), "{u}");
        assert_eq!((u.call, nrt_core::hal::Error::kind(&u)), ("inference", nrt_core::hal::ErrorKind::OutOfRange));
        assert!(u.to_string().contains("the session is unusable: w"), "{u}");
        let t = submit_error(nrt_core::dma::DmaError::Timeout).into_linux(path);
        assert!(matches!(&t.cause, Cause::Api(e) if e.status() == NrtStatus::Timeout), "{t}");
        assert_eq!((t.call, nrt_core::hal::Error::kind(&t)), ("copy", nrt_core::hal::ErrorKind::Io));
        assert_eq!(Error::invalid("nrt_copy", "s", "x").into_linux(path).call, "nrt_copy");
        assert_eq!(Error::handle("nrt_mem_alloc", "s", "x").into_linux(path).call, "nrt_mem_alloc");
    }

    /// Each error with a cause gives it as its source.
    #[test]
    fn the_source_is_the_cause() {
        use std::error::Error as _;
        let os = || LinuxError::new("mmap", "/dev/neuron0", io::Error::from_raw_os_error(libc::EACCES));
        for e in [Error::Os(os()), Error::Busy(os()), Error::NoMemory(os())] {
            assert!(e.source().is_some_and(|s| s.to_string().starts_with("mmap on /dev/neuron0")), "{e}");
        }
        let forked = Error::Forked {
            call: "nrt_copy",
            source: crate::fork::ForkedChild { object: "memory", creator: 1, this: 2 },
        };
        assert!(forked.source().is_some_and(|s| s.to_string().contains("memory")), "{forked}");
        let submit = submit_error(nrt_core::dma::DmaError::Timeout);
        let step =
            SubmitError { step: nrt_core::dma::SubmitStep::Wait, error: nrt_core::dma::DmaError::Timeout, rung: None };
        assert_eq!(submit.source().map(ToString::to_string), Some(step.to_string()));
        assert!(Error::invalid("c", "s", "w").source().is_none());
    }
}
