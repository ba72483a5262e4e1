//! The report `nrt-sim run` prints, of an inference run through the driver.

use super::*;

/// The report `nrt-sim run` prints, of inference `r` run on the device at
/// `device` with the labels of `config` (its scenario's and `--inject`'s
/// faults; arch, cores, ring entries and timeout are replaced by the
/// session's). The device's own log and counters stay with the driver.
pub fn run_report(
    session: &Session,
    r: &Inference,
    mut config: nrt_abi::report::ReportConfig,
) -> nrt_abi::report::RunReport {
    use nrt_abi::report::{core_reports, Note, RunReport, StagingReport};
    config.arch = session.arch;
    config.cores = session.cores;
    config.ring_entries = session.ring_entries;
    config.timeout_s = session.timeout_s;
    config.threaded = true;
    config.place = Some(nrt_abi::report::Place {
        device: bringup::device_index(session.dev.path()).unwrap_or(0),
        first_core: session.first,
    });
    let s = r.staging();
    let mut notes: Vec<Note> = r.notes.iter().map(|text| Note { t_ns: 0, text: text.clone() }).collect();
    if r.wakes.dropped > 0 {
        notes.push(Note {
            t_ns: r.elapsed_ns,
            text: format!("{} more tensor wake-ups not kept (the log keeps {WAKE_LOG_CAP})", r.wakes.dropped),
        });
    }
    RunReport {
        config,
        status: r.status,
        step: r.step,
        steps: r.steps,
        elapsed_ns: r.elapsed_ns,
        timeout_ms: r.request.timeout_ms(),
        kickoff_us: r.kickoff_us,
        staging: s.map(|s| StagingReport {
            descriptors: s.descriptors,
            ring_depth: s.ring_depth,
            rings: s.rings,
            doorbells: s.doorbells,
            handle: s.handle,
            handle_polls: s.handle_polls,
            copy_bytes: s.copy_bytes,
            copy_verified: s.copy_verified,
            host_trigger: s.host_trigger,
        }),
        remote: Some(format!("the Neuron driver behind {}", session.path().display())),
        cores: core_reports(&r.request, session.cores)
            .into_iter()
            .map(|mut c| {
                c.total_latency_us = r.total_latency_us.get(usize::from(c.core)).copied().flatten();
                c
            })
            .collect(),
        events: r.events.clone(),
        staging_events: s.map(|s| s.events.clone()).unwrap_or_default(),
        wakes: r.wakes.wakes.clone(),
        notes,
        device: Default::default(),
        passes_us: r.passes_us.clone(),
        head_writes_us: r.head_writes_us.clone(),
    }
}
