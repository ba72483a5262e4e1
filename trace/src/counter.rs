//! Counters of a run of any length in bounded memory. [`Samples`] counts
//! observations as they come and keeps at most [`MAX_COUNTER_SAMPLES`] points
//! of the running count; when full it halves them and doubles its stride, the
//! latest always kept. [`merge`] adds several such counts, each on its own
//! clock such as each lane of a device, into one.

use crate::MAX_COUNTER_SAMPLES;

/// A running count thinned as it grows: the count at every `stride`th
/// observation, at most [`MAX_COUNTER_SAMPLES`] points with the latest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Samples {
    points: Vec<(u64, u64)>,
    stride: u64,
    count: u64,
    last_us: u64,
}

impl Default for Samples {
    fn default() -> Self {
        Samples { points: Vec::new(), stride: 1, count: 0, last_us: 0 }
    }
}

impl Samples {
    /// No observation yet.
    pub fn new() -> Samples {
        Samples::default()
    }

    /// One more observation at `t_us`, in time order.
    pub fn observe(&mut self, t_us: u64) {
        self.count += 1;
        self.last_us = t_us;
        if self.count.is_multiple_of(self.stride) {
            self.points.push((t_us, self.count));
            // One slot stays for the latest observation.
            if self.points.len() >= MAX_COUNTER_SAMPLES - 1 {
                let stride = self.stride.saturating_mul(2);
                self.points.retain(|p| p.1.is_multiple_of(stride));
                self.stride = stride;
            }
        }
    }

    /// Observations so far.
    pub fn total(&self) -> u64 {
        self.count
    }

    /// The kept points, `(time us, running count)`, the latest observation last.
    pub fn points(&self) -> Vec<(u64, u64)> {
        let mut p = self.points.clone();
        if self.count > 0 && p.last().map(|l| l.1) != Some(self.count) {
            p.push((self.last_us, self.count));
        }
        p
    }
}

/// At most [`MAX_COUNTER_SAMPLES`] of `points`, evenly, the last kept.
pub fn thin(points: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let n = points.len();
    let every = n.div_ceil(MAX_COUNTER_SAMPLES).max(1);
    points.iter().enumerate().filter(|(i, _)| (i + 1) % every == 0 || i + 1 == n).map(|(_, p)| *p).collect()
}

/// The sum of several counts: at each point of any of them, in time order,
/// the sum of each count's latest value; thinned by [`thin`]. Its last value
/// is the sum of their totals.
pub fn merge(counts: &[&Samples]) -> Vec<(u64, u64)> {
    let mut all: Vec<(u64, usize, u64)> = Vec::new();
    for (i, c) in counts.iter().enumerate() {
        all.extend(c.points().into_iter().map(|(t, n)| (t, i, n)));
    }
    all.sort_unstable();
    let mut latest = vec![0u64; counts.len()];
    let mut sum = 0u64;
    let mut out = Vec::with_capacity(all.len());
    for (t, i, n) in all {
        if let Some(l) = latest.get_mut(i) {
            // Each count only grows: the sum grows by the step.
            sum = sum.saturating_add(n.saturating_sub(*l));
            *l = n;
        }
        out.push((t, sum));
    }
    thin(&out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_count_keeps_at_most_the_cap_evenly_with_the_last() {
        let mut s = Samples::new();
        assert!(s.points().is_empty());
        for t in 0..1_000_003u64 {
            s.observe(t);
        }
        let p = s.points();
        assert!(p.len() <= MAX_COUNTER_SAMPLES && p.len() >= MAX_COUNTER_SAMPLES / 2, "{}", p.len());
        assert_eq!(p.last(), Some(&(1_000_002, 1_000_003)));
        assert_eq!(s.total(), 1_000_003);
        // Every kept point but the last is a multiple of one stride, time = count - 1.
        let stride = p[0].1;
        assert!(p[..p.len() - 1].iter().all(|&(t, n)| n % stride == 0 && t + 1 == n), "{p:?}");
        assert!(p.windows(2).all(|w| w[0].1 < w[1].1));
        // A short count keeps every point.
        let mut s = Samples::new();
        for t in [5, 9, 12] {
            s.observe(t);
        }
        assert_eq!(s.points(), vec![(5, 1), (9, 2), (12, 3)]);
    }

    #[test]
    fn merged_counts_add_up_in_time_order() {
        let (mut a, mut b) = (Samples::new(), Samples::new());
        for t in [1, 4, 6] {
            a.observe(t);
        }
        for t in [2, 3] {
            b.observe(t);
        }
        assert_eq!(merge(&[&a, &b]), vec![(1, 1), (2, 2), (3, 3), (4, 4), (6, 5)]);
        let big: Vec<(u64, u64)> = (0..5000).map(|i| (i, i + 1)).collect();
        let t = thin(&big);
        assert!(t.len() <= MAX_COUNTER_SAMPLES);
        assert_eq!(t.last(), Some(&(4999, 5000)));
        assert_eq!(&t[..2], &[(2, 3), (5, 6)]);
    }
}
