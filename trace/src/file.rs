//! Writing a picture to a file. A FIFO nobody reads fails at once with ENXIO
//! instead of blocking, and every failure is a [`WriteError`] that names what
//! was written, the path, the step and the errno name.

use std::io::Write as _;

/// The conventional name of an errno value, for messages.
pub fn errno_name(e: i32) -> &'static str {
    match e {
        1 => "EPERM",
        2 => "ENOENT",
        5 => "EIO",
        6 => "ENXIO",
        9 => "EBADF",
        13 => "EACCES",
        17 => "EEXIST",
        20 => "ENOTDIR",
        21 => "EISDIR",
        22 => "EINVAL",
        24 => "EMFILE",
        27 => "EFBIG",
        28 => "ENOSPC",
        30 => "EROFS",
        32 => "EPIPE",
        36 => "ENAMETOOLONG",
        122 => "EDQUOT",
        _ => "errno",
    }
}

/// The step of [`write_file`] that failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteStep {
    /// The non-blocking probe open of a FIFO; ENXIO: nobody reads it.
    Open,
    /// Creating or truncating the file.
    Create,
    /// Writing the text; EPIPE: a FIFO's reader went away.
    Write,
    /// Syncing the file to its device.
    Fsync,
}

impl WriteStep {
    /// The step's name in messages: `open`, `create`, `write` or `fsync`.
    pub fn name(self) -> &'static str {
        match self {
            WriteStep::Open => "open",
            WriteStep::Create => "create",
            WriteStep::Write => "write",
            WriteStep::Fsync => "fsync",
        }
    }
}

/// Why [`write_file`] failed: what was written, where, at which step, and the
/// OS error as its [`source`](std::error::Error::source). Its text is
/// `writing the <what> to <path>: <step> failed: <OS error> (<errno name>)`.
#[derive(Debug)]
pub struct WriteError {
    /// What the file is: "trace", "timeline SVG".
    pub what: String,
    /// The file.
    pub path: std::path::PathBuf,
    /// The step that failed.
    pub step: WriteStep,
    /// The OS error.
    pub source: std::io::Error,
}

impl WriteError {
    /// The errno value of the failure, if the OS gave one.
    pub fn errno(&self) -> Option<i32> {
        self.source.raw_os_error()
    }
}

impl core::fmt::Display for WriteError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let name = self.errno().map_or("", errno_name);
        write!(
            f,
            "writing the {} to {}: {} failed: {} ({name})",
            self.what,
            self.path.display(),
            self.step.name(),
            self.source
        )
    }
}

impl std::error::Error for WriteError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// Write `text` to `path`, which `what` names: "trace", "timeline SVG". The
/// error names what, the path, the step and the reason with its errno name. A
/// FIFO without a reader fails at once with ENXIO; a reader that goes away
/// fails the write with EPIPE, as Rust programs ignore SIGPIPE.
pub fn write_file(what: &str, path: &std::path::Path, text: &str) -> Result<(), WriteError> {
    let mut f = OutFile::create(what, path)?;
    f.file.write_all(text.as_bytes()).map_err(|e| f.error(WriteStep::Write, e))?;
    f.sync()
}

/// A file being written: created as [`write_file`] creates it, so a FIFO
/// nobody reads fails at once, each failure named as it names them.
#[derive(Debug)]
pub(crate) struct OutFile {
    what: String,
    path: std::path::PathBuf,
    /// The FIFO's non-blocking probe, held open until the file is done.
    _probe: Option<std::fs::File>,
    pub(crate) file: std::fs::File,
}

impl OutFile {
    /// Create or truncate `path`; a FIFO without a reader fails with ENXIO.
    pub(crate) fn create(what: &str, path: &std::path::Path) -> Result<OutFile, WriteError> {
        let fail = |step: WriteStep| {
            move |source: std::io::Error| WriteError { what: what.into(), path: path.into(), step, source }
        };
        // A FIFO nobody reads would block the open for ever: a non-blocking open
        // first fails at once with ENXIO or, where a reader is there, holds the
        // FIFO open for the blocking one below.
        let probe = if std::fs::metadata(path).is_ok_and(|m| std::os::unix::fs::FileTypeExt::is_fifo(&m.file_type())) {
            use std::os::unix::fs::OpenOptionsExt as _;
            Some(
                std::fs::OpenOptions::new()
                    .write(true)
                    .custom_flags(libc::O_NONBLOCK)
                    .open(path)
                    .map_err(fail(WriteStep::Open))?,
            )
        } else {
            None
        };
        let file = std::fs::File::create(path).map_err(fail(WriteStep::Create))?;
        Ok(OutFile { what: what.into(), path: path.into(), _probe: probe, file })
    }

    /// The error of `step` on this file.
    pub(crate) fn error(&self, step: WriteStep, source: std::io::Error) -> WriteError {
        WriteError { what: self.what.clone(), path: self.path.clone(), step, source }
    }

    /// Sync the file to its device. EINVAL, from a file that is no file such
    /// as `/dev/null` or a FIFO, is not an error.
    pub(crate) fn sync(self) -> Result<(), WriteError> {
        self.file
            .sync_all()
            .or_else(|e| if e.raw_os_error() == Some(libc::EINVAL) { Ok(()) } else { Err(e) })
            .map_err(|e| self.error(WriteStep::Fsync, e))
    }
}
