//! The caller's memory: `process_vm_readv` and `process_vm_writev` on reader
//! threads, each access under the notification's deadline. A page nobody
//! serves holds a reader, never the supervisor's loop.

#![allow(unsafe_code)]

use std::os::unix::fs::MetadataExt;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Instant;

use super::MAX_STUCK_READERS;
use crate::driver::model::{MemFault, TargetMem};

/// `process_vm_readv` of `buf.len()` bytes at `addr` in thread `tid`. It may
/// block for as long as the caller's page is not there: run it on a [`Reader`].
pub(super) fn vm_read(tid: u32, addr: u64, buf: &mut [u8]) -> Result<(), MemFault> {
    if buf.is_empty() {
        return Ok(());
    }
    let local = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    let remote = libc::iovec { iov_base: addr as usize as *mut libc::c_void, iov_len: buf.len() };
    // SAFETY: `local` is our live buffer of that length; the remote range is
    // the kernel's to check: a bad one fails, it is never dereferenced here.
    let n = unsafe { libc::process_vm_readv(tid as libc::pid_t, &local, 1, &remote, 1, 0) };
    if n == buf.len() as isize {
        Ok(())
    } else {
        Err(MemFault)
    }
}

/// `process_vm_writev` of `buf` at `addr` in thread `tid`, as [`vm_read`].
fn vm_write(tid: u32, addr: u64, buf: &[u8]) -> Result<(), MemFault> {
    if buf.is_empty() {
        return Ok(());
    }
    let local = libc::iovec { iov_base: buf.as_ptr().cast_mut().cast(), iov_len: buf.len() };
    let remote = libc::iovec { iov_base: addr as usize as *mut libc::c_void, iov_len: buf.len() };
    // SAFETY: as in `vm_read`; `local` is only read by the kernel.
    let n = unsafe { libc::process_vm_writev(tid as libc::pid_t, &local, 1, &remote, 1, 0) };
    if n == buf.len() as isize {
        Ok(())
    } else {
        Err(MemFault)
    }
}

/// A NUL-terminated path of at most 4096 bytes at `addr` in thread `tid`, read page by page.
pub(super) fn read_path(tid: u32, addr: u64) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let mut at = addr;
    while out.len() < 4096 {
        let page_left = 4096 - (at % 4096) as usize;
        let n = page_left.min(4096 - out.len());
        let mut buf = vec![0u8; n];
        vm_read(tid, at, &mut buf).ok()?;
        if let Some(z) = buf.iter().position(|b| *b == 0) {
            out.extend_from_slice(buf.get(..z)?);
            return Some(out);
        }
        out.extend_from_slice(&buf);
        at = at.checked_add(n as u64)?;
    }
    None
}

/// Whether descriptor `fd` of thread `tid` is the device file, by device and
/// inode. The stat follows the descriptor to its file, which may be one
/// COMMAND serves itself through FUSE: run it on a [`Reader`].
pub(super) fn is_device_fd(tid: u32, fd: i32, dev: (u64, u64)) -> bool {
    fd >= 0 && std::fs::metadata(format!("/proc/{tid}/fd/{fd}")).is_ok_and(|m| (m.dev(), m.ino()) == dev)
}

type Job = Box<dyn FnOnce() + Send>;

/// A thread that runs one access to a caller's memory at a time.
struct Worker {
    jobs: mpsc::Sender<Job>,
    thread: JoinHandle<()>,
}

impl Worker {
    fn spawn() -> Option<Worker> {
        let (jobs, rx) = mpsc::channel::<Job>();
        let thread = std::thread::Builder::new()
            .name("nrt-sim-reader".into())
            .spawn(move || {
                while let Ok(job) = rx.recv() {
                    job();
                }
            })
            .ok()?;
        Some(Worker { jobs, thread })
    }
}

/// Runs the accesses to a caller's memory with a deadline. A job that does
/// not finish in time leaves its worker blocked in the kernel on the caller's
/// page, until that page comes in or its userfaultfd is closed, and the next
/// job gets a fresh worker. At most [`MAX_STUCK_READERS`] are left behind;
/// past that, every job fails at once.
#[derive(Default)]
pub(super) struct Reader {
    idle: Option<Worker>,
    stuck: Vec<JoinHandle<()>>,
    pub(super) late: u64,
}

impl Reader {
    /// `f`'s result, or `None` when it did not finish by `deadline` or could not start.
    pub(super) fn run<T: Send + 'static>(
        &mut self,
        deadline: Instant,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Option<T> {
        self.stuck.retain(|t| !t.is_finished());
        let left = deadline.saturating_duration_since(Instant::now());
        if self.stuck.len() >= MAX_STUCK_READERS || left.is_zero() {
            self.late = self.late.saturating_add(1);
            return None;
        }
        let w = match self.idle.take() {
            Some(w) => w,
            None => Worker::spawn()?,
        };
        let (tx, rx) = mpsc::sync_channel(1);
        let job: Job = Box::new(move || {
            let _ = tx.send(f());
        });
        if w.jobs.send(job).is_err() {
            return None;
        }
        match rx.recv_timeout(left) {
            Ok(v) => {
                self.idle = Some(w);
                Some(v)
            }
            Err(_) => {
                // Its channel closes here: the worker ends once its job returns.
                self.stuck.push(w.thread);
                self.late = self.late.saturating_add(1);
                None
            }
        }
    }

    /// Workers still blocked in a caller's memory.
    #[cfg(test)]
    fn stuck(&mut self) -> usize {
        self.stuck.retain(|t| !t.is_finished());
        self.stuck.len()
    }
}

/// The memory of the thread that made the call, through a [`Reader`], within
/// the notification's deadline.
pub(super) struct ProcMem<'a> {
    pub(super) reader: &'a mut Reader,
    pub(super) tid: u32,
    pub(super) deadline: Instant,
    /// An access did not finish in time.
    pub(super) late: bool,
}

impl TargetMem for ProcMem<'_> {
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), MemFault> {
        if buf.is_empty() {
            return Ok(());
        }
        let (tid, len) = (self.tid, buf.len());
        let got = self.reader.run(self.deadline, move || {
            let mut v = vec![0u8; len];
            vm_read(tid, addr, &mut v).map(|()| v)
        });
        match got {
            Some(Ok(v)) if v.len() == buf.len() => {
                buf.copy_from_slice(&v);
                Ok(())
            }
            Some(_) => Err(MemFault),
            None => {
                self.late = true;
                Err(MemFault)
            }
        }
    }

    fn write(&mut self, addr: u64, buf: &[u8]) -> Result<(), MemFault> {
        if buf.is_empty() {
            return Ok(());
        }
        let (tid, v) = (self.tid, buf.to_vec());
        match self.reader.run(self.deadline, move || vm_write(tid, addr, &v)) {
            Some(r) => r,
            None => {
                self.late = true;
                Err(MemFault)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    #[test]
    fn a_job_past_its_deadline_leaves_its_worker_and_the_next_gets_a_fresh_one() {
        let mut r = Reader::default();
        let (release, held) = mpsc::channel::<()>();
        let held = Arc::new(Mutex::new(held));
        let h = Arc::clone(&held);
        let soon = Instant::now() + Duration::from_millis(50);
        // Blocks until released, standing in for a page nobody serves.
        assert_eq!(r.run(soon, move || h.lock().map(|rx| rx.recv().is_ok()).unwrap_or(false)), None);
        assert_eq!((r.late, r.stuck()), (1, 1));
        assert_eq!(r.run(Instant::now() + Duration::from_secs(10), || 7), Some(7));
        // Up to MAX_STUCK_READERS are left behind; then a job fails without running.
        for _ in 1..MAX_STUCK_READERS {
            let h = Arc::clone(&held);
            let soon = Instant::now() + Duration::from_millis(10);
            assert_eq!(r.run(soon, move || h.lock().map(|rx| rx.recv().is_ok()).unwrap_or(false)), None);
        }
        assert_eq!(r.stuck(), MAX_STUCK_READERS);
        let ran = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&ran);
        assert_eq!(r.run(Instant::now() + Duration::from_secs(10), move || flag.store(true, Ordering::SeqCst)), None);
        assert!(!ran.load(Ordering::SeqCst));
        assert_eq!(r.late, MAX_STUCK_READERS as u64 + 1);
        // Released, the workers end, each job taking the lock in turn; bounded wait.
        for _ in 0..MAX_STUCK_READERS {
            release.send(()).unwrap();
        }
        let t0 = Instant::now();
        while r.stuck() > 0 && t0.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(r.stuck(), 0);
        assert_eq!(r.run(Instant::now() + Duration::from_secs(10), || 8), Some(8));
    }
}
