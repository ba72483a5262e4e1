//! neuron-monitor's `execution_stats` from per-core counters: what `nrtctl
//! stats` prints of a datastore and `nrt-sim run` of its own counters. The
//! shape and names are neuron-monitor's user guide's.
//!
//! `execution_summary` counts each execution once, by the execution counts
//! the request's first core keeps, G-NDS-SUM. The driver's per-NC words,
//! where a two-core request counts twice, are `nc_execution_summary`, and
//! `error_summary` is theirs. A writer that keeps no execution counts gets its
//! per-NC sums, said in `execution_summary_source`. The percentiles are
//! nearest-rank over the pooled latency samples, G-NDS-LATENCY.
//!
//! Between two reads a count that went down is never a difference: the NC's
//! counts are its totals since the reset, named in `counters_reset_on_nc`.

use nrt_core::counters::{id, latency_samples_of, NcCounterBlock};
use serde_json::{json, Value};

/// The percentiles neuron-monitor prints, by name.
pub const PERCENTILES: [(&str, u32); 7] =
    [("p0", 0), ("p1", 1), ("p25", 25), ("p50", 50), ("p75", 75), ("p99", 99), ("p100", 100)];

/// neuron-monitor's `execution_summary` fields, each with its per-NC word and
/// its execution count.
pub const SUMMARY_FIELDS: [(&str, usize, usize); 6] = [
    ("completed", id::INFER_COMPLETED, id::EXEC_COMPLETED),
    ("completed_with_err", id::INFER_COMPLETED_WITH_ERR, id::EXEC_COMPLETED_WITH_ERR),
    ("completed_with_num_err", id::INFER_COMPLETED_WITH_NUM_ERR, id::EXEC_COMPLETED_WITH_NUM_ERR),
    ("timed_out", id::INFER_TIMED_OUT, id::EXEC_TIMED_OUT),
    ("incorrect_input", id::INFER_INCORRECT_INPUT, id::EXEC_INCORRECT_INPUT),
    ("failed_to_queue", id::INFER_FAILED_TO_QUEUE, id::EXEC_FAILED_TO_QUEUE),
];

/// The driver's runtime memory-usage ids: levels, not counts, so they may go down.
const MEMORY_USAGE_IDS: core::ops::RangeInclusive<usize> = (id::CC_TIME + 1)..=(id::MODEL_LOAD_COUNT - 1);

/// Whether id `c` is a count that only grows; the latency samples and the
/// memory-usage levels are not.
fn is_count(c: usize) -> bool {
    (c < id::EXT_LAST && !MEMORY_USAGE_IDS.contains(&c))
        || c == id::LATENCY_SAMPLES_WRITTEN
        || (id::EXECUTIONS..id::WRITTEN_END).contains(&c)
}

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
    /// Positions of the NCs whose counts went down between two reads.
    pub reset_ncs: Vec<usize>,
}

impl ExecutionStats {
    /// From each core's counters by id, in order.
    pub fn from_values<'a>(ncs: impl IntoIterator<Item = &'a [u64; id::TOTAL_NC_COUNTER_COUNT]>) -> ExecutionStats {
        let mut s = ExecutionStats { totals: vec![0; id::TOTAL_NC_COUNTER_COUNT], ..Default::default() };
        for nc in ncs {
            s.add_nc(nc, None);
        }
        s
    }

    /// Add one core's counts and latency samples, those since `before` if given.
    fn add_nc(&mut self, nc: &[u64; id::TOTAL_NC_COUNTER_COUNT], before: Option<&[u64; id::TOTAL_NC_COUNTER_COUNT]>) {
        self.cores += 1;
        for (c, t) in self.totals.iter_mut().enumerate() {
            let v = nc[c];
            *t = t.wrapping_add(match before {
                None => v,
                Some(o) if is_count(c) => v.saturating_sub(o[c]),
                Some(_) => 0,
            });
        }
        let (mut d, mut t) = ([0u64; id::LATENCY_WINDOW], [0u64; id::LATENCY_WINDOW]);
        let n = latency_samples_of(|c| nc.get(c).copied().unwrap_or(0), &mut d, &mut t);
        let new =
            before.map_or(u64::MAX, |o| nc[id::LATENCY_SAMPLES_WRITTEN].saturating_sub(o[id::LATENCY_SAMPLES_WRITTEN]));
        let k = usize::try_from(new).unwrap_or(usize::MAX).min(n);
        self.device_latency_us.extend_from_slice(&d[n - k..n]);
        self.total_latency_us.extend_from_slice(&t[n - k..n]);
    }

    /// What changed between two reads of the same cores: the counts'
    /// differences and the latency samples written in between. An NC whose
    /// count went down gives its totals in `after`, listed in `reset_ncs`.
    pub fn between(
        before: &[[u64; id::TOTAL_NC_COUNTER_COUNT]],
        after: &[[u64; id::TOTAL_NC_COUNTER_COUNT]],
    ) -> ExecutionStats {
        let mut s = ExecutionStats { totals: vec![0; id::TOTAL_NC_COUNTER_COUNT], ..Default::default() };
        let zero = [0u64; id::TOTAL_NC_COUNTER_COUNT];
        for (i, nc) in after.iter().enumerate() {
            let old = before.get(i).unwrap_or(&zero);
            let went_down = (0..id::TOTAL_NC_COUNTER_COUNT).any(|c| is_count(c) && nc[c] < old[c]);
            if went_down {
                s.reset_ncs.push(i);
                s.add_nc(nc, None);
            } else {
                s.add_nc(nc, Some(old));
            }
        }
        s
    }

    /// From counter blocks kept in RAM.
    pub fn from_blocks<'a>(blocks: impl IntoIterator<Item = &'a NcCounterBlock>) -> ExecutionStats {
        ExecutionStats::from_values(blocks.into_iter().map(NcCounterBlock::values))
    }

    /// Counter `c` summed over the cores.
    pub fn total(&self, c: usize) -> u64 {
        self.totals.get(c).copied().unwrap_or(0)
    }

    /// Whether the counts hold each execution once: some execution count, or
    /// no outcome at all. `false` for a writer of per-NC words only.
    pub fn counts_executions(&self) -> bool {
        (id::EXECUTIONS..id::WRITTEN_END).any(|e| self.total(e) != 0)
            || SUMMARY_FIELDS.iter().all(|(_, nc, _)| self.total(*nc) == 0)
    }

    /// Executions in the `execution_summary` field `field`.
    pub fn executions(&self, field: &str) -> u64 {
        let per_execution = self.counts_executions();
        SUMMARY_FIELDS
            .iter()
            .find(|(f, _, _)| *f == field)
            .map_or(0, |(_, nc, e)| self.total(if per_execution { *e } else { *nc }))
    }

    /// neuron-monitor's `execution_stats` object; `period_s` when sampled over a period.
    pub fn json(&self, period_s: Option<f64>) -> Value {
        let summary = |pick: &dyn Fn(usize, usize) -> u64| {
            let mut o = serde_json::Map::new();
            for (f, nc, e) in SUMMARY_FIELDS {
                o.insert(f.into(), json!(pick(nc, e)));
            }
            Value::Object(o)
        };
        let per_execution = self.counts_executions();
        let mut v = json!({
            "error_summary": {
                "generic": self.total(id::ERR_GENERIC),
                "numerical": self.total(id::ERR_NUMERICAL),
                "transient": self.total(id::ERR_TRANSIENT),
                "model": self.total(id::ERR_MODEL),
                "runtime": self.total(id::ERR_RT),
                "hardware": self.total(id::ERR_HW),
            },
            "execution_summary": summary(&|nc, e| self.total(if per_execution { e } else { nc })),
            "execution_summary_source": if per_execution { "executions" } else { "neuroncores" },
            "nc_execution_summary": summary(&|nc, _| self.total(nc)),
            "latency_stats": {
                "total_latency": percentiles(&self.total_latency_us),
                "device_latency": percentiles(&self.device_latency_us),
            },
            "error": "",
        });
        if let Some(o) = v.as_object_mut() {
            if let Some(p) = period_s {
                o.insert("period".into(), json!(p));
            }
            if !self.reset_ncs.is_empty() {
                o.insert("counters_reset_on_nc".into(), json!(self.reset_ncs));
            }
        }
        v
    }

    /// The same as text, one line per field.
    pub fn text(&self) -> String {
        let mut s = String::new();
        let v = self.json(None);
        for (section, heading) in [
            (
                "execution_summary",
                if self.counts_executions() {
                    "execution_summary (executions, each once, in its outcome):"
                } else {
                    "execution_summary (per NeuronCore: the datastore's writer keeps no execution counts):"
                },
            ),
            ("nc_execution_summary", "nc_execution_summary (each NeuronCore's own outcome, summed over the cores):"),
            ("error_summary", "error_summary (per NeuronCore):"),
        ] {
            s.push_str(heading);
            s.push('\n');
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
        for nc in &self.reset_ncs {
            s.push_str(&format!(
                "note: NC {nc}'s counters went down (the datastore was reset or written by another): its counts are its totals since then\n"
            ));
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
            execution: None,
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
            execution: None,
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

    /// One execution over `statuses.len()` cores, counted as FINALIZE does.
    fn execute(blocks: &mut [NcCounterBlock], statuses: &[NrtStatus], request: NrtStatus) {
        for (core, (b, s)) in blocks.iter_mut().zip(statuses).enumerate() {
            let u = NcUpdate {
                status: *s,
                sequencer_error: false,
                correctable_ecc: false,
                device_latency_us: 5,
                started_ns: 0,
                harvested: true,
                execution: (core == 0).then_some(request),
            };
            b.apply(&u, 9_000);
        }
    }

    fn summary(v: &Value, section: &str) -> Vec<u64> {
        SUMMARY_FIELDS.iter().map(|(f, _, _)| v[section][f].as_u64().unwrap()).collect()
    }

    #[test]
    fn an_execution_over_two_cores_counts_once_in_its_outcome() {
        use NrtStatus::{ExecCompletedWithNumErr as Nan, Success as Ok, Timeout};
        // Five healthy executions on two cores: 5 completed, 10 core outcomes.
        let mut b = [NcCounterBlock::new(), NcCounterBlock::new()];
        for _ in 0..5 {
            execute(&mut b, &[Ok, Ok], Ok);
        }
        let v = ExecutionStats::from_blocks(&b).json(None);
        assert_eq!(summary(&v, "execution_summary"), [5, 0, 0, 0, 0, 0], "{v}");
        assert_eq!(summary(&v, "nc_execution_summary"), [10, 0, 0, 0, 0, 0], "{v}");
        assert_eq!(v["execution_summary_source"], "executions");
        // A NaN on core 1: completed_with_num_err only; the numeric error counted once, where it was.
        let mut b = [NcCounterBlock::new(), NcCounterBlock::new()];
        execute(&mut b, &[Ok, Nan], Nan);
        let v = ExecutionStats::from_blocks(&b).json(None);
        assert_eq!(summary(&v, "execution_summary"), [0, 0, 1, 0, 0, 0], "{v}");
        assert_eq!(summary(&v, "nc_execution_summary"), [1, 0, 1, 0, 0, 0], "{v}");
        assert_eq!(v["error_summary"]["numerical"], 1);
        // A hang on core 1, core 0 clean: timed_out only.
        let mut b = [NcCounterBlock::new(), NcCounterBlock::new()];
        execute(&mut b, &[Ok, Timeout], Timeout);
        let s = ExecutionStats::from_blocks(&b);
        assert_eq!(summary(&s.json(None), "execution_summary"), [0, 0, 0, 1, 0, 0]);
        let text = s.text();
        assert!(
            text.contains("execution_summary (executions, each once, in its outcome):\n  completed                0\n"),
            "{text}"
        );
        assert!(text.contains("  timed_out                1\n"), "{text}");
        assert!(text.contains("nc_execution_summary (each NeuronCore's own outcome"), "{text}");
        // A failure with no execution-summary field: in no field, still an execution.
        let mut b = [NcCounterBlock::new(), NcCounterBlock::new()];
        execute(&mut b, &[Ok, NrtStatus::Failure], NrtStatus::Failure);
        let v = ExecutionStats::from_blocks(&b).json(None);
        assert_eq!(summary(&v, "execution_summary"), [0; 6], "{v}");
        assert_eq!(summary(&v, "nc_execution_summary"), [1, 0, 0, 0, 0, 0], "{v}");
        assert_eq!(v["execution_summary_source"], "executions");
    }

    #[test]
    fn a_writer_without_execution_counts_gives_its_per_nc_sums_labelled() {
        let mut b = NcCounterBlock::new();
        execute(std::slice::from_mut(&mut b), &[NrtStatus::Success], NrtStatus::Success);
        let mut values = *b.values();
        values[id::EXECUTIONS..id::WRITTEN_END].fill(0);
        let s = ExecutionStats::from_values([&values, &values]);
        assert!(!s.counts_executions());
        let v = s.json(None);
        assert_eq!(
            (v["execution_summary"]["completed"].as_u64(), v["execution_summary_source"].as_str()),
            (Some(2), Some("neuroncores"))
        );
        assert!(s.text().contains("per NeuronCore: the datastore's writer keeps no execution counts"), "{}", s.text());
        // Nothing counted at all: executions, all 0.
        assert!(ExecutionStats::from_blocks([&NcCounterBlock::new()]).counts_executions());
    }

    #[test]
    fn a_count_that_went_down_is_a_reset_never_a_wrapped_difference() {
        let mut b = [NcCounterBlock::new(), NcCounterBlock::new()];
        for _ in 0..10 {
            execute(&mut b, &[NrtStatus::Success, NrtStatus::Success], NrtStatus::Success);
        }
        let before = [*b[0].values(), *b[1].values()];
        // NC 0 cleared (a reused datastore entry) and counting again: 3 since.
        let mut fresh = [NcCounterBlock::new(), b[1]];
        for _ in 0..3 {
            execute(&mut fresh, &[NrtStatus::Success, NrtStatus::Success], NrtStatus::Success);
        }
        let after = [*fresh[0].values(), *fresh[1].values()];
        let s = ExecutionStats::between(&before, &after);
        assert_eq!(s.reset_ncs, [0]);
        assert!(s.totals.iter().all(|&t| t < 1 << 32), "no wrapped difference: {:?}", s.totals);
        let v = s.json(Some(1.0));
        assert_eq!(v["execution_summary"]["completed"], 3, "NC 0's total since the reset: {v}");
        assert_eq!(v["nc_execution_summary"]["completed"], 6, "3 since the reset, 3 new on NC 1: {v}");
        assert_eq!(v["counters_reset_on_nc"], json!([0]));
        assert_eq!(s.device_latency_us.len(), 6, "the reset NC's samples kept, NC 1's new ones");
        assert!(s.text().contains("note: NC 0's counters went down"), "{}", s.text());
        // No reset: no key, no note.
        let same = ExecutionStats::between(&after, &after);
        assert!(same.reset_ncs.is_empty() && same.json(None).get("counters_reset_on_nc").is_none());
        assert!(!same.text().contains("note:"));
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
