//! The drain of COMMAND's captured standard output, at most [`STDOUT_CAP`]
//! bytes kept.

#![allow(unsafe_code)]

use std::fs::File;
use std::io::Read as _;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::STDOUT_CAP;

/// What the drain of captured output read.
#[derive(Default)]
pub(super) struct Captured {
    pub(super) bytes: Vec<u8>,
    pub(super) dropped: u64,
}

/// COMMAND's captured standard output, read on a thread so that a full pipe
/// never blocks COMMAND; it stops at end-of-file or when told to.
pub(super) struct Drain {
    got: Arc<Mutex<Captured>>,
    stop: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

impl Drain {
    pub(super) fn start(mut out: File) -> Option<Drain> {
        let got = Arc::new(Mutex::new(Captured::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let (g, s) = (Arc::clone(&got), Arc::clone(&stop));
        let thread = std::thread::Builder::new()
            .name("nrt-sim-stdout".into())
            .spawn(move || {
                let mut buf = vec![0u8; 64 << 10];
                while !s.load(Ordering::Acquire) {
                    let mut p = libc::pollfd { fd: out.as_raw_fd(), events: libc::POLLIN, revents: 0 };
                    // SAFETY: one valid pollfd.
                    let rc = unsafe { libc::poll(&mut p, 1, 20) };
                    if rc <= 0 {
                        continue;
                    }
                    match out.read(&mut buf) {
                        Ok(0) => return,
                        Ok(n) => {
                            let mut c = g.lock().unwrap_or_else(|e| e.into_inner());
                            let room = STDOUT_CAP.saturating_sub(c.bytes.len()).min(n);
                            c.bytes.extend_from_slice(buf.get(..room).unwrap_or_default());
                            c.dropped = c.dropped.saturating_add((n - room) as u64);
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(_) => return,
                    }
                }
            })
            .ok()?;
        Some(Drain { got, stop, thread })
    }

    /// Wait up to `grace` for end-of-file, then stop; what was read.
    pub(super) fn finish(self, grace: Duration) -> Captured {
        let until = Instant::now() + grace;
        while !self.thread.is_finished() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
        self.stop.store(true, Ordering::Release);
        let _ = self.thread.join();
        std::mem::take(&mut *self.got.lock().unwrap_or_else(|e| e.into_inner()))
    }
}
