//! The bench devices' clock. A real device costs the host no CPU between its
//! writes, so the simulated device thread sleeps until its next due write: an
//! absolute deadline on `CLOCK_MONOTONIC`, `clock_nanosleep` with
//! `TIMER_ABSTIME`, its timer slack at 1 ns. It stamps each inference's real
//! write instant, so its own lateness never counts as notice latency. A
//! spinning device is a labelled variant.

use std::time::Instant;

/// How the simulated device thread waits for its next write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceKind {
    /// Sleeps to each due write: an absolute deadline, 1 ns timer slack.
    Sleep,
    /// Spins between writes, taking a whole CPU from the host.
    Spin,
}

impl DeviceKind {
    /// The label printed and written to JSON.
    pub fn name(self) -> &'static str {
        match self {
            DeviceKind::Sleep => "sleeping",
            DeviceKind::Spin => "spinning",
        }
    }

    /// `--device sleep|spin`, sleep by default.
    pub fn from_arg(s: Option<&str>) -> Option<DeviceKind> {
        match s {
            None | Some("sleep") => Some(DeviceKind::Sleep),
            Some("spin") => Some(DeviceKind::Spin),
            Some(_) => None,
        }
    }
}

/// The CPU a sleeping device thread is pinned to: the last, so that its
/// wake-ups do not preempt a harvest thread kept on CPU 0, as a real device's
/// writes take no host CPU at all; `None` on one CPU. It counts the machine's
/// online CPUs, not the caller's affinity: a thread pinned to CPU 0 still
/// places the device on the last.
#[allow(unsafe_code)]
pub fn device_cpu() -> Option<usize> {
    // SAFETY: sysconf reads a system value and touches no memory of ours.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    (n >= 2).then(|| n as usize - 1)
}

/// Pin the calling thread to [`device_cpu`], when there is one.
pub fn pin_device_thread() {
    if let Some(c) = device_cpu() {
        let _ = nrt_linux::sys::pin_current_thread(c);
    }
}

/// `CLOCK_MONOTONIC`, the clock `Instant` reads on Linux, in ns.
#[allow(unsafe_code)]
pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid out-pointer to a local timespec.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    if rc != 0 {
        return 0;
    }
    (ts.tv_sec as u64).saturating_mul(1_000_000_000).saturating_add(ts.tv_nsec as u64)
}

/// Absolute sleeps on a bench clock, in ns since `origin`.
pub struct Deadlines {
    /// `CLOCK_MONOTONIC` at the origin, ns.
    base_ns: u64,
}

impl Deadlines {
    /// Deadlines on `origin`'s clock; sets the calling thread's timer slack to 1 ns.
    pub fn new(origin: Instant) -> Deadlines {
        nrt_linux::poller::set_timer_slack_1ns();
        let since = origin.elapsed().as_nanos() as u64;
        Deadlines { base_ns: mono_ns().saturating_sub(since) }
    }

    /// Sleep until `t_ns` on the bench clock; return at once when it has passed.
    #[allow(unsafe_code)]
    pub fn sleep_until(&self, t_ns: u64) {
        let ts = abs_timespec(self.base_ns, t_ns);
        loop {
            // SAFETY: a valid timespec; the remaining-time pointer may be null with TIMER_ABSTIME.
            let rc =
                unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) };
            if rc != libc::EINTR {
                break;
            }
        }
    }
}

/// The absolute `CLOCK_MONOTONIC` instant of bench time `t_ns`, as a timespec.
pub fn abs_timespec(base_ns: u64, t_ns: u64) -> libc::timespec {
    let abs = base_ns.saturating_add(t_ns);
    libc::timespec { tv_sec: (abs / 1_000_000_000) as libc::time_t, tv_nsec: (abs % 1_000_000_000) as libc::c_long }
}

/// When a sleeping device wakes next, ns: at its earliest pending write, but
/// no later than `look` from now, since a kickoff it has not seen yet ends at
/// least that far out, see [`look_ns`]. When a write is overdue but blocked by
/// a ring without room, `retry` from now.
pub fn device_wake_ns(earliest_end_ns: Option<u64>, blocked: bool, now_ns: u64, look: u64, retry: u64) -> u64 {
    let bound = now_ns.saturating_add(if blocked { retry.min(look) } else { look });
    earliest_end_ns.map_or(bound, |e| e.min(bound))
}

/// How long a sleeping device may go without looking for kickoffs, ns: half
/// the shortest inference, the work less its jitter, at least 1 us, so a
/// kickoff is seen before the inference it starts is due.
pub fn look_ns(work_ns: u64, jitter_pct: u64) -> u64 {
    let shortest = work_ns.saturating_sub(work_ns * jitter_pct.min(100) / 100);
    (shortest / 2).max(1_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_device_wakes_at_its_earliest_write_or_to_look_for_kickoffs() {
        assert_eq!(device_wake_ns(Some(1_500), false, 1_000, 10_000, 2_000), 1_500, "the earliest write");
        assert_eq!(device_wake_ns(Some(50_000), false, 1_000, 10_000, 2_000), 11_000, "look for kickoffs first");
        assert_eq!(device_wake_ns(None, false, 1_000, 10_000, 2_000), 11_000, "nothing pending: look");
        assert_eq!(device_wake_ns(Some(900), false, 1_000, 10_000, 2_000), 900, "overdue: at once");
        assert_eq!(device_wake_ns(None, true, 1_000, 10_000, 2_000), 3_000, "blocked: retry");
        assert_eq!(device_wake_ns(None, true, 1_000, 500, 2_000), 1_500, "the retry never past the look");
        assert_eq!(device_wake_ns(None, false, u64::MAX, 10, 2), u64::MAX, "saturates");
    }

    #[test]
    fn a_kickoff_is_seen_before_its_inference_is_due() {
        assert_eq!(look_ns(1_000_000, 10), 450_000, "1 ms +/- 10 %: half of 0.9 ms");
        assert_eq!(look_ns(100_000, 0), 50_000);
        assert_eq!(look_ns(100_000, 100), 1_000, "jitter to 0: at least 1 us");
        assert_eq!(look_ns(100_000, 500), 1_000, "jitter clamped to 100 %");
        for (w, j) in [(100_000u64, 10u64), (1_000_000, 10), (10_000_000, 50)] {
            let shortest = w - w * j / 100;
            assert!(look_ns(w, j) <= shortest, "a look within the shortest inference");
        }
    }

    #[test]
    fn deadlines_are_absolute_monotonic_timespecs() {
        let ts = abs_timespec(5_000_000_000, 1_500_000_001);
        assert_eq!((ts.tv_sec, ts.tv_nsec), (6, 500_000_001));
        let ts = abs_timespec(u64::MAX, 1);
        assert_eq!(ts.tv_nsec as u64, u64::MAX % 1_000_000_000, "saturates");
    }
}
