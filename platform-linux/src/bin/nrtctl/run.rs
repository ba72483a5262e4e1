//! `nrtctl run`: the bring-up path of `docs/driver-model.md` for each inference,
//! and the report `nrt-sim run` prints.
//!
//! `--scenario` and `--inject` only label the run: the device decides what
//! happens. With a scenario and no injection, the status and the one-step
//! return code are checked against the scenario's, and a failed check exits 1.

use std::process::ExitCode;

#[cfg_attr(not(feature = "sim"), allow(unused_imports))]
use nrt_abi::outp;
use nrt_abi::{errln, outln};

use crate::{init_log, DelayArg, RunArgs};

/// A usage error: the message, exit 2.
fn usage_error(msg: &str) -> ExitCode {
    errln!("nrtctl run: {msg}");
    ExitCode::from(2)
}

/// A scenario's label from `nrt_abi::sim`'s table: its expected status and return code.
type Label = &'static nrt_abi::sim::ScenarioLabel;

fn find_scenario(name: &str) -> Result<Label, String> {
    nrt_abi::sim::ScenarioLabel::find(name).ok_or_else(|| {
        let names: Vec<&str> = nrt_abi::sim::SCENARIO_LABELS.iter().map(|s| s.name).collect();
        format!("unknown scenario '{name}' (expected one of: {})", names.join(", "))
    })
}

/// An `--inject` spec is a label: its fault name must be one the simulator
/// knows; its parameters are the device's to check.
fn check_inject(spec: &str) -> Result<String, String> {
    let spec = spec.trim();
    let name = spec.split_once(':').map_or(spec, |(n, _)| n);
    if nrt_abi::sim::FAULT_NAMES.contains(&name) {
        Ok(spec.to_string())
    } else {
        Err(format!(
            "--inject '{spec}': unknown fault '{name}' (expected one of {})",
            nrt_abi::sim::FAULT_NAMES.join(", ")
        ))
    }
}

pub(crate) fn run(a: &RunArgs) -> ExitCode {
    use nrt_linux::config::{resolve_cores, Budget, RtEnv, Uses};
    use nrt_linux::session::{Session, SessionConfig};
    use nrt_linux::time::DelayKind;
    if a.scenario.as_deref() == Some("all") {
        return usage_error("--scenario all is the supervisor's: `nrt-sim driver --scenario all -- nrtctl run ...`");
    }
    let env = match RtEnv::from_process(Uses::ALL) {
        Ok(e) => e,
        Err(e) => return usage_error(&e.to_string()),
    };
    init_log(&env.log);
    let cores = match resolve_cores(a.cores, "--cores", &env) {
        Ok(c) => c,
        Err(e) => return usage_error(&e.to_string()),
    };
    let label = match a.scenario.as_deref().map(find_scenario).transpose() {
        Ok(l) => l,
        Err(m) => return usage_error(&m),
    };
    let mut faults = Vec::new();
    for spec in &a.inject {
        match check_inject(spec) {
            Ok(f) => faults.push(f),
            Err(e) => return usage_error(&e),
        }
    }
    let mut cfg = SessionConfig {
        first_core: cores.first,
        cores: cores.count,
        ring_entries: a.ring_entries,
        // The generation's default needs the arch, known once open.
        timeout_s: a.timeout_s.or(env.exec_timeout_s).unwrap_or(0),
        delay: match a.delay {
            DelayArg::Libnrt => DelayKind::Libnrt,
            DelayArg::Adaptive => DelayKind::Adaptive,
        },
        ..SessionConfig::default()
    };
    if let Some(s) = label {
        cfg.fallback_cores = s.cores;
        cfg.fallback_ring_entries = s.ring_entries;
    }
    cfg.host_wide = cores.host_wide();
    let opened = match &a.device {
        Some(path) => Session::open(path, cfg),
        None => Session::open_chosen(cfg),
    };
    let mut session = match opened {
        Ok(mut s) => {
            // The trace's counters: the times of each poll pass and HEAD write.
            s.observe_harvests(a.trace.is_some() || a.timeline_svg.is_some());
            s
        }
        Err(e) => {
            let hint = if e.errno() == Some(libc::ENOTTY) {
                " (not a Neuron device: run on a host with the driver, or under `nrt-sim driver -- nrtctl run ...`)"
            } else {
                ""
            };
            let from = match &cores.source {
                Some(src @ nrt_linux::config::Source::Flag(_)) if e.subject == nrt_linux::error::Subject::Cores => {
                    format!(" (cores from {src})")
                }
                _ if e.subject == nrt_linux::error::Subject::Cores => cores.origin(),
                _ => String::new(),
            };
            errln!("nrtctl run: {e}{hint}{from}");
            return ExitCode::FAILURE;
        }
    };
    let a = &RunArgs { opened: session.path().to_path_buf(), ..a.clone() };
    let budget = Budget::resolve(a.timeout_s, "--timeout-s", &env, session.arch());
    session.set_timeout_s(budget.seconds);
    // The harvest's own timeout line names it too.
    let _budget = nrt_linux::config::BudgetScope::enter(budget);
    if let Some(e) = session.datastore_error() {
        errln!("nrtctl run: no datastore (the counters stay in this process): {e}");
    }
    let mut code = ExitCode::SUCCESS;
    // The trace file is made before the first inference, as its events stream into it.
    let (mut pictures, inferences) = match open_pictures(a) {
        Ok(p) => (p, a.inferences),
        Err(e) => {
            errln!("nrtctl run: {e}");
            code = ExitCode::FAILURE;
            (Pictures::default(), 0)
        }
    };
    for i in 1..=inferences {
        match session.run_inference() {
            Ok(r) => {
                let (stamp, site) = (nrt_linux::oplog::stamp(), session.site());
                if let Some(p) = &r.probe_error {
                    errln!("{stamp}nrtctl run: inference {i}: {site}: a probe read failed (the harvest went on): {p}");
                }
                if matches!(r.status, nrt_core::NrtStatus::Timeout | nrt_core::NrtStatus::ExecSwNqOverflow) {
                    let engines = nrt_linux::oplog::timed_out_engines(&r.request, Some(site));
                    errln!(
                        "{stamp}nrtctl run: inference {i}: {site}: the harvest ended at its {budget}: status {} {}{}{}",
                        r.status.code(),
                        r.status.name(),
                        if engines.is_empty() { "" } else { "; " },
                        engines
                    );
                }
                if a.inferences > 1 && !a.json {
                    if i > 1 {
                        outln!();
                    }
                    outln!("inference {i} of {}", a.inferences);
                }
                if print_run(a, label, &r, &session, faults.clone(), &budget, i, &mut pictures) != ExitCode::SUCCESS {
                    code = ExitCode::FAILURE;
                }
            }
            Err(e) => {
                errln!("{}nrtctl run: inference {i}: {}: {e}", nrt_linux::oplog::stamp(), session.site());
                code = ExitCode::FAILURE;
                break;
            }
        }
    }
    if let Err(e) = write_pictures(a, label, pictures) {
        errln!("nrtctl run: {e}");
        code = ExitCode::FAILURE;
    }
    if let Some(e) = session.datastore_write_error() {
        errln!("nrtctl run: a datastore write failed: {e}");
    }
    if let Some(d) = a.linger_s {
        // The session, its cores and its datastore stay while a monitor reads.
        std::thread::sleep(d);
    }
    if let Err(errors) = session.close() {
        for e in errors {
            errln!("nrtctl run: teardown: {e}");
        }
        code = ExitCode::FAILURE;
    }
    code
}

/// Which of the device's cores the session's cores `0..n` are.
fn device_cores(session: &nrt_linux::session::Session) -> String {
    let (first, n) = (session.first_core(), session.cores());
    match n {
        1 => format!("device cores: {first} (the report's core 0)"),
        _ => format!("device cores: {first}-{} (the report's cores 0-{})", first + n - 1, n - 1),
    }
}

#[cfg_attr(not(feature = "sim"), allow(dead_code))]
/// The scenario check of `nrt-sim run` on what crosses the driver: the status and the return code.
fn verdict(expected: (nrt_core::NrtStatus, u8), r: &nrt_linux::session::Inference) -> Result<(), String> {
    if r.status != expected.0 {
        return Err(format!("status {} {}, expected {}", r.status.code(), r.status.name(), expected.0.code()));
    }
    if r.step.code() != expected.1 {
        return Err(format!("return code {}, expected {}", r.step.code(), expected.1));
    }
    Ok(())
}

/// The pictures of a run: the `--trace` file the harvests stream into, and
/// what the SVG is drawn from, one inference's lanes or a bounded summary of several.
#[cfg(feature = "sim")]
type Pictures = (Option<nrt_trace::TraceFile>, (Option<nrt_trace::Trace>, Option<nrt_trace::Summary>));
#[cfg(not(feature = "sim"))]
type Pictures = ();

/// Make `--trace`'s file and the SVG's collector.
#[cfg(feature = "sim")]
fn open_pictures(a: &RunArgs) -> Result<Pictures, nrt_trace::WriteError> {
    let file = a.trace.as_deref().map(|p| nrt_trace::TraceFile::create("trace", p)).transpose()?;
    let svg = a.timeline_svg.is_some();
    let one = a.inferences <= 1;
    Ok((file, ((svg && one).then(nrt_trace::Trace::new), (svg && !one).then(nrt_trace::Summary::new))))
}

#[cfg(not(feature = "sim"))]
fn open_pictures(_a: &RunArgs) -> Result<Pictures, std::convert::Infallible> {
    Ok(())
}

/// The title of the run's pictures.
#[cfg_attr(not(feature = "sim"), allow(dead_code))]
fn picture_title(a: &RunArgs, label: Option<Label>) -> String {
    match label {
        Some(sc) => format!("nrtctl run --device {} (scenario {})", a.opened.display(), sc.name),
        None => format!("nrtctl run --device {}", a.opened.display()),
    }
}

/// Finish `--trace` and write `--timeline-svg`; each failure names its file.
#[cfg(feature = "sim")]
fn write_pictures(a: &RunArgs, label: Option<Label>, pictures: Pictures) -> Result<(), nrt_trace::WriteError> {
    let title = picture_title(a, label);
    let (file, (lanes, rows)) = pictures;
    if let Some(f) = file {
        f.finish()?;
    }
    let svg = lanes.map(|t| t.to_svg(&title)).or_else(|| rows.map(|r| r.to_svg(&title)));
    match (&a.timeline_svg, svg) {
        (Some(p), Some(svg)) => nrt_trace::write_file("timeline SVG", p, &svg),
        _ => Ok(()),
    }
}

#[cfg(not(feature = "sim"))]
fn write_pictures(_a: &RunArgs, _label: Option<Label>, _pictures: Pictures) -> Result<(), std::convert::Infallible> {
    Ok(())
}

/// Print inference `i` of the run, its harvest added to `pictures`.
#[cfg(feature = "sim")]
#[allow(clippy::too_many_arguments)]
fn print_run(
    a: &RunArgs,
    label: Option<Label>,
    r: &nrt_linux::session::Inference,
    session: &nrt_linux::session::Session,
    faults: Vec<String>,
    budget: &nrt_linux::config::Budget,
    i: u32,
    pictures: &mut Pictures,
) -> ExitCode {
    let mut config = nrt_abi::report::ReportConfig::default();
    if let Some(s) = label {
        config.faults.extend(s.faults.iter().map(|f| f.to_string()));
    }
    config.faults.extend(faults);
    let report = nrt_linux::session::run_report(session, r, config);
    let verdict = label.filter(|_| a.inject.is_empty()).map(|sc| verdict((sc.expected, sc.expected_rc), r));
    if a.trace.is_some() || a.timeline_svg.is_some() {
        let n = (a.inferences > 1).then_some(i);
        nrt_trace::Sink::add_inference(pictures, &report, 0, &picture_title(a, label), n);
    }
    if a.json {
        let mut v = nrt_abi::report::json(&report, label.map(|s| (s.name, s.expected)));
        if let (Some(obj), Some(verdict)) = (v.as_object_mut(), &verdict) {
            obj.insert("scenario_pass".into(), serde_json::Value::Bool(verdict.is_ok()));
        }
        if let Some(obj) = v.as_object_mut() {
            obj.insert("timeout_source".into(), serde_json::Value::String(budget.source.to_string()));
            // The device's core that is the report's core 0.
            obj.insert("first_core".into(), serde_json::Value::from(session.first_core()));
        }
        match serde_json::to_string_pretty(&v) {
            Ok(t) => outln!("{t}"),
            Err(e) => errln!("nrtctl run: JSON rendering failed: {e}"),
        }
    } else {
        let mut heading = format!("nrtctl run --device {}", a.opened.display());
        if let Some(sc) = label {
            heading.push_str(&format!(": scenario {}: {}", sc.name, sc.description));
        }
        outp!("{}", nrt_abi::report::text_with_heading(&report, &heading));
        outln!("budget: {budget}");
        outln!("{}", device_cores(session));
        if let (Some(sc), Some(verdict)) = (label, &verdict) {
            match verdict {
                Ok(()) => outln!("\nscenario check: PASS (expected {} {})", sc.expected.code(), sc.expected.name()),
                Err(why) => outln!("\nscenario check: FAIL ({why})"),
            }
        }
    }
    match verdict {
        Some(Err(_)) => ExitCode::FAILURE,
        _ => ExitCode::SUCCESS,
    }
}

/// Without the simulator's printers: the status line and the return code, or
/// the JSON object's status fields.
#[cfg(not(feature = "sim"))]
#[allow(clippy::too_many_arguments)]
fn print_run(
    a: &RunArgs,
    _label: Option<Label>,
    r: &nrt_linux::session::Inference,
    session: &nrt_linux::session::Session,
    _faults: Vec<String>,
    budget: &nrt_linux::config::Budget,
    _i: u32,
    _pictures: &mut Pictures,
) -> ExitCode {
    if a.trace.is_some() || a.timeline_svg.is_some() {
        errln!(
            "nrtctl run: --trace and --timeline-svg need the report: this nrtctl was built without the `sim` feature"
        );
        return ExitCode::from(2);
    }
    let (arch, cores, ring_entries) = (session.arch(), session.cores(), session.ring_entries());
    let s = r.status;
    if a.json {
        outln!(
            "{{\n  \"arch\": \"{}\",\n  \"cores_count\": {cores},\n  \"first_core\": {},\n  \"ring_entries\": {ring_entries},\n  \"status\": {},\n  \"status_name\": \"{}\",\n  \"return_code\": {}\n}}",
            arch.name(),
            session.first_core(),
            s.code(),
            s.name(),
            r.step.code()
        );
    } else {
        outln!("nrtctl run --device {}", a.opened.display());
        outln!(
            "  arch {}, {cores} core(s), timeout {} s, NQ rings of {ring_entries} entries",
            arch.name(),
            budget.seconds
        );
        outln!("budget: {budget}");
        outln!("{}", device_cores(session));
        outln!();
        outln!("status: {} {} ({})", s.code(), s.name(), s.description());
        outln!("one-step return: {} after {} steps", r.step.code(), r.steps);
    }
    ExitCode::SUCCESS
}
