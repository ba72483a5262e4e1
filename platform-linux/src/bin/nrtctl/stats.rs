//! `nrtctl stats`: process N's datastore, read as neuron-monitor reads it and
//! printed in the shape of its `execution_stats` (G-NDS-SUM). `--watch` prints
//! what changed over each period until the datastore is gone.

use std::process::ExitCode;

use nrt_abi::os::stdout as out;
use nrt_abi::{errln, outln, outp};
use nrt_linux::device::NeuronDevice;

use crate::StatsArgs;

/// Print process `--pid`'s counters.
pub(crate) fn stats(a: &StatsArgs) -> ExitCode {
    use nrt_abi::stats::ExecutionStats;
    use nrt_linux::datastore::Datastore;
    let ds = match NeuronDevice::open(&a.device).and_then(|d| Datastore::monitor(std::sync::Arc::new(d), a.pid)) {
        Ok(ds) => ds,
        Err(e) => {
            let hint = if e.errno() == Some(libc::ENOENT) {
                " (the process has no datastore: it never made one, released it, or exited)"
            } else {
                ""
            };
            errln!("nrtctl stats: {e}{hint}");
            return ExitCode::FAILURE;
        }
    };
    let ncs = nrt_abi::nds::NDS_NC_MAX;
    let read = |ds: &Datastore| -> Result<Option<Vec<_>>, nrt_linux::error::LinuxError> {
        // Read, then ask whether the process still held it: once it released
        // the datastore or exited, what was read may be zeros.
        let v = ds.read_ncs(ncs)?;
        Ok(ds.still_held()?.then_some(v))
    };
    let print = |s: &ExecutionStats, period: Option<f64>| {
        if a.json {
            let v = serde_json::json!({ "pid": a.pid, "execution_stats": s.json(period) });
            outln!("{v:#}");
        } else {
            match period {
                Some(p) => outln!("nrtctl stats --pid {}: the last {p:.3} s", a.pid),
                None => outln!("nrtctl stats --pid {} on {}", a.pid, a.device.display()),
            }
            outp!("{}", s.text());
        }
    };
    let gone = || errln!("nrtctl stats: pid {}'s datastore is gone (released, or the process exited)", a.pid);
    let mut before = match read(&ds) {
        Ok(Some(v)) => v,
        Ok(None) => {
            gone();
            return ExitCode::FAILURE;
        }
        Err(e) => {
            errln!("nrtctl stats: {e}");
            return ExitCode::FAILURE;
        }
    };
    // The totals first, with --watch too, then what changed in each period.
    print(&ExecutionStats::from_values(before.iter()), None);
    let Some(period) = a.watch else {
        return ExitCode::SUCCESS;
    };
    let mut t0 = std::time::Instant::now();
    let mut n = 0u32;
    while a.count.is_none_or(|c| n < c) && !out::closed() {
        std::thread::sleep(period);
        let after = match read(&ds) {
            Ok(Some(v)) => v,
            Ok(None) => {
                gone();
                break;
            }
            Err(e) => {
                errln!("nrtctl stats: {e}");
                return ExitCode::FAILURE;
            }
        };
        let now = std::time::Instant::now();
        print(&ExecutionStats::between(&before, &after), Some(now.duration_since(t0).as_secs_f64()));
        (before, t0, n) = (after, now, n + 1);
    }
    ExitCode::SUCCESS
}
