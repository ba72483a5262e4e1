//! Streamed output completions, completion-engine seed §3.1, custom sub-id 7.
//!
//! The device writes a custom record naming a finished output by var id; the
//! runtime resolves it (`io_mr_to_name_map`), bumps that output's
//! `output_completion_count` and wakes the threads waiting on it. This is a second
//! completion channel on the same rings, distinct from the whole-inference DONE.
//!
//! [`TensorCompletions`] is the count table: fixed capacity, counts in
//! `critical-section` cells so another context (a waiter thread, an interrupt
//! handler) reads them safely while the harvest writes. Waking is the platform's:
//! a [`TensorWaker`] is called after each count changes, outside the critical
//! section.

use core::cell::Cell;

use critical_section::Mutex;

use crate::hal::TensorNotify;

/// Wakes the waiters of an output (Linux: a condvar broadcast; a controller: an
/// event flag).
pub trait TensorWaker {
    /// Output `output` now has `count` completions.
    fn wake(&mut self, output: u16, count: u32);
}

/// A waker that wakes nobody (counts are read by polling).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoWake;

impl TensorWaker for NoWake {
    fn wake(&mut self, _output: u16, _count: u32) {}
}

impl<F: FnMut(u16, u32)> TensorWaker for F {
    fn wake(&mut self, output: u16, count: u32) {
        self(output, count)
    }
}

/// Completion counts of up to `N` outputs, by var id.
pub struct TensorCompletions<const N: usize, W: TensorWaker = NoWake> {
    var_ids: heapless::Vec<u16, N>,
    counts: [Mutex<Cell<u32>>; N],
    waker: W,
}

impl<const N: usize> TensorCompletions<N, NoWake> {
    /// A table for the outputs named by `var_ids` (output `i` is `var_ids[i]`);
    /// `None` when there are more than `N`.
    pub fn new(var_ids: &[u16]) -> Option<Self> {
        Self::with_waker(var_ids, NoWake)
    }

    /// A table for exactly `N` outputs (output `i` is `var_ids[i]`).
    pub fn from_array(var_ids: [u16; N]) -> Self {
        Self::from_array_with_waker(var_ids, NoWake)
    }
}

impl<const N: usize, W: TensorWaker> TensorCompletions<N, W> {
    /// As [`from_array`](TensorCompletions::from_array), waking through `waker`.
    pub fn from_array_with_waker(var_ids: [u16; N], waker: W) -> Self {
        let mut vars = heapless::Vec::new();
        for v in var_ids {
            // `N` ids always fit a capacity of `N`.
            let _ = vars.push(v);
        }
        TensorCompletions { var_ids: vars, counts: core::array::from_fn(|_| Mutex::new(Cell::new(0))), waker }
    }

    /// As [`new`](TensorCompletions::new), waking through `waker`.
    pub fn with_waker(var_ids: &[u16], waker: W) -> Option<Self> {
        Some(TensorCompletions {
            var_ids: heapless::Vec::from_slice(var_ids).ok()?,
            counts: core::array::from_fn(|_| Mutex::new(Cell::new(0))),
            waker,
        })
    }

    /// The output index of a var id.
    pub fn output_of(&self, var_id: u16) -> Option<u16> {
        self.var_ids.iter().position(|v| *v == var_id).and_then(|i| u16::try_from(i).ok())
    }

    /// The completion count of output `output` (0 for an unknown output).
    pub fn count(&self, output: u16) -> u32 {
        self.counts.get(usize::from(output)).map(|m| critical_section::with(|cs| m.borrow(cs).get())).unwrap_or(0)
    }

    /// Count one completion of `var_id`; returns the output and its new count.
    pub fn record(&mut self, var_id: u16) -> Option<(u16, u32)> {
        let output = self.output_of(var_id)?;
        let cell = self.counts.get(usize::from(output))?;
        let n = critical_section::with(|cs| {
            let c = cell.borrow(cs);
            let n = c.get().saturating_add(1);
            c.set(n);
            n
        });
        self.waker.wake(output, n);
        Some((output, n))
    }

    /// Reset every count to 0 (a new inference).
    pub fn reset(&self) {
        critical_section::with(|cs| {
            for c in &self.counts {
                c.borrow(cs).set(0);
            }
        })
    }

    /// The waker.
    pub fn waker(&self) -> &W {
        &self.waker
    }
}

impl<const N: usize, W: TensorWaker> TensorNotify for TensorCompletions<N, W> {
    fn tensor_completed(&mut self, _core: u8, var_id: u16) -> Option<(u16, u32)> {
        self.record(var_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_wakes_in_order() {
        let mut log: heapless::Vec<(u16, u32), 8> = heapless::Vec::new();
        {
            let mut t: TensorCompletions<4, _> =
                TensorCompletions::with_waker(&[70, 71, 72], |o, n| log.push((o, n)).unwrap()).unwrap();
            assert_eq!(t.record(71), Some((1, 1)));
            assert_eq!(t.record(70), Some((0, 1)));
            assert_eq!(t.record(71), Some((1, 2)));
            assert_eq!(t.record(99), None, "unknown var id");
            assert_eq!(t.count(1), 2);
            assert_eq!(t.count(3), 0);
            assert_eq!(t.count(100), 0);
            t.reset();
            assert_eq!(t.count(1), 0);
        }
        assert_eq!(&log[..], &[(1, 1), (0, 1), (1, 2)]);
        assert!(TensorCompletions::<2>::new(&[1, 2, 3]).is_none(), "over capacity");
    }

    #[test]
    fn the_table_is_the_harvests_tensor_notify_and_keeps_its_waker() {
        #[derive(Default)]
        struct Log(heapless::Vec<(u16, u32), 4>);
        impl TensorWaker for Log {
            fn wake(&mut self, output: u16, count: u32) {
                self.0.push((output, count)).unwrap();
            }
        }
        let mut t = TensorCompletions::from_array_with_waker([10, 11], Log::default());
        assert_eq!(TensorNotify::tensor_completed(&mut t, 1, 11), Some((1, 1)));
        assert_eq!(TensorNotify::tensor_completed(&mut t, 0, 11), Some((1, 2)));
        assert_eq!(TensorNotify::tensor_completed(&mut t, 0, 12), None);
        assert_eq!(&t.waker().0[..], &[(1, 1), (1, 2)]);
        assert_eq!((t.output_of(10), t.output_of(11), t.output_of(12)), (Some(0), Some(1), None));
        let t = TensorCompletions::from_array([5, 6, 7]);
        assert_eq!(t.output_of(7), Some(2));
        let mut woke = 0;
        let mut f = |_: u16, n: u32| woke += n;
        TensorWaker::wake(&mut f, 0, 3);
        assert_eq!(woke, 3);
    }
}
