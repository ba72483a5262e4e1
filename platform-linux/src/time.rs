//! The clock and the two poll delays of the sync driver.
//!
//! libnrt reads `CLOCK_REALTIME`, which jumps when the wall clock is set: a
//! jump forward fires a timeout that did not happen, a jump back hides one.
//! Here the clock is `CLOCK_MONOTONIC`, as core's [`Clock`] requires.

use std::time::{Duration, Instant};

use nrt_core::hal::{Clock, Delay};

/// `CLOCK_MONOTONIC` in nanoseconds since the clock was made.
#[derive(Clone, Copy, Debug)]
pub struct MonotonicClock {
    origin: Instant,
}

impl Default for MonotonicClock {
    fn default() -> Self {
        MonotonicClock::new()
    }
}

impl MonotonicClock {
    /// A clock starting now.
    pub fn new() -> MonotonicClock {
        MonotonicClock { origin: Instant::now() }
    }
}

impl Clock for MonotonicClock {
    fn now_ns(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

/// libnrt's delay, the seed's `usleep(1)` between steps; the kernel's timer
/// slack makes it last about 50-60 us.
#[derive(Clone, Copy, Debug, Default)]
pub struct LibnrtDelay;

impl Delay for LibnrtDelay {
    fn delay_us(&mut self, us: u32) {
        std::thread::sleep(Duration::from_micros(u64::from(us)));
    }
}

/// `spin_loop` hints per wait while the adaptive delay spins: four PAUSEs keep
/// a step every fraction of a microsecond, for the same CPU as more.
pub const ADAPTIVE_SPINS_PER_WAIT: u32 = 4;

/// Spin for a bounded time, then yield, then sleep: a short wait notices its
/// completion within tens of ns, a long one costs almost nothing.
#[derive(Clone, Copy, Debug)]
pub struct AdaptiveDelay {
    /// Spin while the wait is younger than this.
    pub spin_for: Duration,
    /// Then yield while younger than this; then sleep `us`.
    pub yield_for: Duration,
    started: Option<Instant>,
}

impl Default for AdaptiveDelay {
    fn default() -> Self {
        AdaptiveDelay { spin_for: Duration::from_micros(50), yield_for: Duration::from_millis(2), started: None }
    }
}

impl AdaptiveDelay {
    /// Start a new wait: the next call spins again.
    pub fn reset(&mut self) {
        self.started = None;
    }
}

impl Delay for AdaptiveDelay {
    fn delay_us(&mut self, us: u32) {
        let t0 = *self.started.get_or_insert_with(Instant::now);
        let waited = t0.elapsed();
        if waited < self.spin_for {
            for _ in 0..ADAPTIVE_SPINS_PER_WAIT {
                core::hint::spin_loop();
            }
        } else if waited < self.yield_for {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(u64::from(us.max(1))));
        }
    }
}

/// The two delays by name, as `--delay` takes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum DelayKind {
    /// `usleep(1)`.
    Libnrt,
    /// Spin, yield, sleep: the default.
    #[default]
    Adaptive,
}

/// A delay of either kind.
#[derive(Clone, Copy, Debug)]
pub enum AnyDelay {
    /// libnrt's.
    Libnrt(LibnrtDelay),
    /// Adaptive.
    Adaptive(AdaptiveDelay),
}

impl AnyDelay {
    /// A fresh delay of `kind`.
    pub fn new(kind: DelayKind) -> AnyDelay {
        match kind {
            DelayKind::Libnrt => AnyDelay::Libnrt(LibnrtDelay),
            DelayKind::Adaptive => AnyDelay::Adaptive(AdaptiveDelay::default()),
        }
    }
}

impl Delay for AnyDelay {
    fn delay_us(&mut self, us: u32) {
        match self {
            AnyDelay::Libnrt(d) => d.delay_us(us),
            AnyDelay::Adaptive(d) => d.delay_us(us),
        }
    }
}
