//! neuron-monitor's `execution_stats`, from per-core counters: what `nrtctl
//! stats` prints of a process's datastore and `nrt-sim run` prints of its own
//! counters at the end.
//!
//! The shape and field names are neuron-monitor's (SDK
//! `tools/neuron-sys-tools/neuron-monitor-user-guide.rst`, "execution_stats"):
//! `error_summary` {generic, numerical, transient, model, runtime, hardware},
//! `execution_summary` {completed, completed_with_err, completed_with_num_err,
//! timed_out, incorrect_input, failed_to_queue}, `latency_stats`
//! {total_latency, device_latency} with percentiles p0, p1, p25, p50, p75, p99,
//! p100 in seconds (`null` when nothing ran), `error`.
//!
//! The counts are the sums over the NeuronCores read: each physical core counts
//! its own outcome of a request (FINALIZE's per-core update), so a request over
//! two cores counts on both (G-NDS-SUM). The percentiles are nearest-rank over
//! the latency samples the cores keep (the last
//! [`LATENCY_WINDOW`](nrt_core::counters::id::LATENCY_WINDOW) per core,
//! G-NDS-LATENCY), pooled.

use nrt_core::counters::{id, latency_samples_of, NcCounterBlock};
use serde_json::{json, Value};

/// The percentiles neuron-monitor prints, by name.
pub const PERCENTILES: [(&str, u32); 7] =
    [("p0", 0), ("p1", 1), ("p25", 25), ("p50", 50), ("p75", 75), ("p99", 99), ("p100", 100)];

/// The counts and samples of one or more cores.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExecutionStats {
    /// Per counter id, the sum over the cores.
    pub totals: Vec<u64>,
    /// Device latencies kept, microseconds, pooled over the cores.
    pub device_latency_us: Vec<u64>,
    /// Total latencies kept, microseconds, pooled.
    pub total_latency_us: Vec<u64>,
    /// NeuronCores read.
    pub cores: usize,
}

impl ExecutionStats {
    /// From each core's counters by id (a datastore's NCs, in order).
    pub fn from_values<'a>(ncs: impl IntoIterator<Item = &'a [u64; id::TOTAL_NC_COUNTER_COUNT]>) -> ExecutionStats {
        let mut s = ExecutionStats { totals: vec![0; id::TOTAL_NC_COUNTER_COUNT], ..Default::default() };
        for nc in ncs {
            s.cores += 1;
            for (t, v) in s.totals.iter_mut().zip(nc.iter()) {
                *t = t.wrapping_add(*v);
            }
            let (mut d, mut t) = ([0u64; id::LATENCY_WINDOW], [0u64; id::LATENCY_WINDOW]);
            let n = latency_samples_of(|i| nc.get(i).copied().unwrap_or(0), &mut d, &mut t);
            s.device_latency_us.extend_from_slice(&d[..n]);
            s.total_latency_us.extend_from_slice(&t[..n]);
        }
        s
    }

    /// What changed from `before` to `after` (two reads of the same cores): the
    /// counts' differences and the latency samples written in between (at most
    /// the window each core keeps), for a monitor sampling over a period.
    pub fn between(
        before: &[[u64; id::TOTAL_NC_COUNTER_COUNT]],
        after: &[[u64; id::TOTAL_NC_COUNTER_COUNT]],
    ) -> ExecutionStats {
        let mut s = ExecutionStats { totals: vec![0; id::TOTAL_NC_COUNTER_COUNT], ..Default::default() };
        for (i, nc) in after.iter().enumerate() {
            let zero = [0u64; id::TOTAL_NC_COUNTER_COUNT];
            let old = before.get(i).unwrap_or(&zero);
            s.cores += 1;
            for ((t, v), o) in s.totals.iter_mut().zip(nc.iter()).zip(old.iter()) {
                *t = t.wrapping_add(v.wrapping_sub(*o));
            }
            let (mut d, mut t) = ([0u64; id::LATENCY_WINDOW], [0u64; id::LATENCY_WINDOW]);
            let n = latency_samples_of(|c| nc.get(c).copied().unwrap_or(0), &mut d, &mut t);
            let new = nc[id::LATENCY_SAMPLES_WRITTEN].wrapping_sub(old[id::LATENCY_SAMPLES_WRITTEN]);
            let k = usize::try_from(new).unwrap_or(usize::MAX).min(n);
            s.device_latency_us.extend_from_slice(&d[n - k..n]);
            s.total_latency_us.extend_from_slice(&t[n - k..n]);
        }
        s
    }

    /// From counter blocks kept in RAM (`nrt-sim run`'s).
    pub fn from_blocks<'a>(blocks: impl IntoIterator<Item = &'a NcCounterBlock>) -> ExecutionStats {
        ExecutionStats::from_values(blocks.into_iter().map(NcCounterBlock::values))
    }

    /// Counter `c` summed over the cores.
    pub fn total(&self, c: usize) -> u64 {
        self.totals.get(c).copied().unwrap_or(0)
    }

    /// neuron-monitor's `execution_stats` object; `period_s` when sampled over
    /// a period (`--watch`), else the counters since the process began.
    pub fn json(&self, period_s: Option<f64>) -> Value {
        let mut v = json!({
            "error_summary": {
                "generic": self.total(id::ERR_GENERIC),
                "numerical": self.total(id::ERR_NUMERICAL),
                "transient": self.total(id::ERR_TRANSIENT),
                "model": self.total(id::ERR_MODEL),
                "runtime": self.total(id::ERR_RT),
                "hardware": self.total(id::ERR_HW),
            },
            "execution_summary": {
                "completed": self.total(id::INFER_COMPLETED),
                "completed_with_err": self.total(id::INFER_COMPLETED_WITH_ERR),
                "completed_with_num_err": self.total(id::INFER_COMPLETED_WITH_NUM_ERR),
                "timed_out": self.total(id::INFER_TIMED_OUT),
                "incorrect_input": self.total(id::INFER_INCORRECT_INPUT),
                "failed_to_queue": self.total(id::INFER_FAILED_TO_QUEUE),
            },
            "latency_stats": {
                "total_latency": percentiles(&self.total_latency_us),
                "device_latency": percentiles(&self.device_latency_us),
            },
            "error": "",
        });
        if let (Some(p), Some(o)) = (period_s, v.as_object_mut()) {
            o.insert("period".into(), json!(p));
        }
        v
    }

    /// The same as text, one line per field.
    pub fn text(&self) -> String {
        let mut s = String::new();
        let v = self.json(None);
        for section in ["execution_summary", "error_summary"] {
            s.push_str(section);
            s.push_str(":\n");
            if let Some(o) = v.get(section).and_then(Value::as_object) {
                for (k, n) in o {
                    s.push_str(&format!("  {k:<24} {n}\n"));
                }
            }
        }
        s.push_str("latency_stats (seconds):\n");
        for (name, samples) in [("total_latency", &self.total_latency_us), ("device_latency", &self.device_latency_us)]
        {
            match percentiles(samples) {
                Value::Null => s.push_str(&format!("  {name:<24} null (no executions)\n")),
                p => {
                    let parts: Vec<String> =
                        PERCENTILES.iter().map(|(k, _)| format!("{k} {}", p.get(*k).unwrap_or(&Value::Null))).collect();
                    s.push_str(&format!("  {name:<24} {}\n", parts.join(", ")));
                }
            }
        }
        s
    }
}

/// Nearest-rank percentiles of `samples_us`, in seconds; `null` when empty.
pub fn percentiles(samples_us: &[u64]) -> Value {
    if samples_us.is_empty() {
        return Value::Null;
    }
    let mut v = samples_us.to_vec();
    v.sort_unstable();
    let n = v.len();
    let mut o = serde_json::Map::new();
    for (name, p) in PERCENTILES {
        let rank = (p as usize * n).div_ceil(100).max(1);
        let us = v.get(rank - 1).copied().unwrap_or(0);
        o.insert(name.into(), json!(us as f64 / 1e6));
    }
    Value::Object(o)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nrt_core::counters::NcUpdate;
    use nrt_core::NrtStatus;

    #[test]
    fn the_shape_is_neuron_monitors_and_the_counts_sum_over_cores() {
        let mut a = NcCounterBlock::new();
        let mut b = NcCounterBlock::new();
        let u = |status, d| NcUpdate {
            status,
            sequencer_error: false,
            correctable_ecc: false,
            device_latency_us: d,
            started_ns: 0,
            harvested: true,
        };
        a.apply(&u(NrtStatus::Success, 10), 50_000);
        a.apply(&u(NrtStatus::ExecCompletedWithNumErr, 30), 70_000);
        b.apply(&u(NrtStatus::Timeout, 20), 60_000);
        let s = ExecutionStats::from_blocks([&a, &b]);
        let v = s.json(None);
        let e = &v["execution_summary"];
        assert_eq!(
            (e["completed"].as_u64(), e["completed_with_num_err"].as_u64(), e["timed_out"].as_u64()),
            (Some(1), Some(1), Some(1))
        );
        assert_eq!(e.as_object().unwrap().len(), 6);
        assert_eq!(v["error_summary"]["numerical"].as_u64(), Some(1));
        assert_eq!(v["error_summary"].as_object().unwrap().len(), 6);
        let d = &v["latency_stats"]["device_latency"];
        assert_eq!((d["p0"].as_f64(), d["p50"].as_f64(), d["p100"].as_f64()), (Some(10e-6), Some(20e-6), Some(30e-6)));
        let t = &v["latency_stats"]["total_latency"];
        assert_eq!((t["p0"].as_f64(), t["p100"].as_f64()), (Some(50e-6), Some(70e-6)));
        assert_eq!(v["error"], "");
        assert!(v.get("period").is_none());
        assert_eq!(s.json(Some(1.5))["period"].as_f64(), Some(1.5));
        // Nothing ran: the latencies are null, as neuron-monitor prints them.
        let none = ExecutionStats::from_blocks([&NcCounterBlock::new()]).json(None);
        assert!(none["latency_stats"]["total_latency"].is_null());
        assert!(s.text().contains("completed_with_num_err"));
    }

    #[test]
    fn between_two_reads_counts_only_the_period() {
        let u = |d| NcUpdate {
            status: NrtStatus::Success,
            sequencer_error: false,
            correctable_ecc: false,
            device_latency_us: d,
            started_ns: 0,
            harvested: true,
        };
        let mut a = NcCounterBlock::new();
        a.apply(&u(1), 0);
        a.apply(&u(2), 0);
        let before = [*a.values()];
        a.apply(&u(7), 0);
        let after = [*a.values()];
        let s = ExecutionStats::between(&before, &after);
        assert_eq!(s.total(id::INFER_COMPLETED), 1);
        assert_eq!(s.device_latency_us, vec![7]);
        let none = ExecutionStats::between(&after, &after);
        assert_eq!(none.total(id::INFER_COMPLETED), 0);
        assert!(none.json(Some(1.0))["latency_stats"]["device_latency"].is_null());
    }

    #[test]
    fn nearest_rank_percentiles() {
        let p = percentiles(&[5, 1, 4, 2, 3]);
        let got: Vec<f64> = PERCENTILES.iter().map(|(k, _)| p[*k].as_f64().unwrap() * 1e6).collect();
        let want = [1.0, 1.0, 2.0, 3.0, 4.0, 5.0, 5.0];
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < 1e-6, "{got:?}");
        }
        assert!(percentiles(&[]).is_null());
    }
}
