//! Errors: every failed system call names the call, the device (or file) and
//! the errno, by name and text.

use std::fmt;
use std::io;

use nrt_core::hal::{self, ErrorKind};

use crate::sys::errno_name;

/// A failed operation on a device or file.
#[derive(Debug)]
pub struct LinuxError {
    /// The call (`"NEURON_IOCTL_SEMAPHORE_INCREMENT"`, `"mmap"`, `"open"`...).
    pub call: &'static str,
    /// The device node or file.
    pub target: String,
    /// The OS error.
    pub source: io::Error,
}

impl LinuxError {
    /// Wrap `source`.
    pub fn new(call: &'static str, target: impl Into<String>, source: io::Error) -> LinuxError {
        LinuxError { call, target: target.into(), source }
    }

    /// The errno value, if the error came from the OS.
    pub fn errno(&self) -> Option<i32> {
        self.source.raw_os_error()
    }
}

impl fmt::Display for LinuxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} on {} failed: {} ({})", self.call, self.target, errno_name(&self.source), self.source)
    }
}

impl std::error::Error for LinuxError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

impl hal::Error for LinuxError {
    fn kind(&self) -> ErrorKind {
        match self.source.kind() {
            io::ErrorKind::InvalidInput => ErrorKind::OutOfRange,
            io::ErrorKind::NotFound => ErrorKind::NotMapped,
            _ => ErrorKind::Io,
        }
    }
}
