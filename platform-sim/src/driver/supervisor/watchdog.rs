//! The watchdog: when the limit passes, the reaper ends COMMAND's tree,
//! whatever the supervisor's loop is doing.

use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::driver::reaper;

/// A thread that asks the reaper to end COMMAND's tree when the limit passes.
pub(super) struct Watchdog {
    done: Arc<(Mutex<bool>, Condvar)>,
    fired: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Watchdog {
    pub(super) fn start(limit: Duration, stopper: Option<OwnedFd>) -> Watchdog {
        let done = Arc::new((Mutex::new(false), Condvar::new()));
        let fired = Arc::new(AtomicBool::new(false));
        let (d, f) = (Arc::clone(&done), Arc::clone(&fired));
        let thread = std::thread::Builder::new()
            .name("nrt-sim-limit".into())
            .spawn(move || {
                let until = Instant::now() + limit;
                let (m, cv) = &*d;
                let mut stop = m.lock().unwrap_or_else(|e| e.into_inner());
                while !*stop {
                    let left = until.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        f.store(true, Ordering::SeqCst);
                        if let Some(fd) = &stopper {
                            reaper::stop(fd);
                        }
                        return;
                    }
                    stop = cv.wait_timeout(stop, left).unwrap_or_else(|e| e.into_inner()).0;
                }
            })
            .ok();
        Watchdog { done, fired, thread }
    }

    pub(super) fn fired(&self) -> bool {
        self.fired.load(Ordering::SeqCst)
    }

    pub(super) fn stop(&mut self) {
        let (m, cv) = &*self.done;
        *m.lock().unwrap_or_else(|e| e.into_inner()) = true;
        cv.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.stop();
    }
}
