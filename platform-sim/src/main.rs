//! `nrt-sim`: run inferences end to end through nrt-core against the simulated
//! device, list the named scenarios, decode raw NQ entries, or play the device for
//! a host in another process over a shared-memory file (`serve --shm PATH`, see
//! `nrt_sim::shm`, defined in `nrt_abi::shm`; the host side is `nrtctl harvest --shm PATH`).
//!
//! Exit status: 0 when the command did what was asked (a run finished, whatever
//! its NRT status; a named scenario also matched its expectation; a serve session
//! ended on the host's shutdown or after its inferences); 1 when a named
//! scenario (or a row of `--scenario all`) did not match, staging failed, or
//! serving failed (the file, or the idle timeout); 2 for a usage error (a
//! malformed `--inject` spec, bad hex, an unknown scenario, a number out of
//! range). A reader that goes away (`| head`) ends the output quietly; the
//! command finishes and exits as it would have. Any other failure to write
//! standard output is reported at exit, status 1.

use std::io::Read as _;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};
use nrt_core::arch::Arch;
use nrt_sim::decode::{self, RingKind};
use nrt_sim::report;
use nrt_sim::scenario::{self, Scenario, SCENARIOS};
use nrt_sim::{run, Fault, SimConfig, SimError};

// Standard output for a reader that may go away (`| head`): a closed pipe
// discards the rest quietly, another write error is reported at exit.
use nrt_abi::os::stdout as out;
use nrt_abi::{errln, outln, outp};

#[derive(Parser, Debug)]
#[command(name = "nrt-sim", version, about = "A simulated Neuron device driven by nrt-core: runs, scenarios, decoding")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Run one inference end to end: stage descriptors, kick off, harvest, decode errors.
    Run(RunArgs),
    /// List the named scenarios, one line each.
    Scenarios,
    /// Decode raw 16-byte NQ entries given as hex (32 digits each; spaces allowed; '-' reads stdin).
    Decode(DecodeArgs),
    /// Play the device over a shared-memory file for `nrtctl harvest --shm PATH` in another process.
    Serve(ServeArgs),
    /// Run COMMAND unmodified with the simulated device behind /dev/neuron0: its Neuron ioctls
    /// are trapped (seccomp user notification) and served by the driver model.
    #[cfg(feature = "driver")]
    Driver(DriverArgs),
}

#[cfg(feature = "driver")]
#[derive(Args, Debug)]
struct DriverArgs {
    /// A kernel BUG (a call the real driver would oops on) fails the run: COMMAND is killed, exit 70 [default].
    #[arg(long, conflicts_with = "log_violations")]
    strict: bool,
    /// Only log kernel BUGs (the call returns 0 and COMMAND goes on).
    #[arg(long = "log-violations")]
    log_violations: bool,
    /// Play a named scenario's device, or `all`: COMMAND once per scenario, with the table of `nrt-sim run`.
    #[arg(long, value_name = "NAME")]
    scenario: Option<String>,
    #[command(flatten)]
    play: PlayArgs,
    /// Kill COMMAND after this many seconds, more than 0 (exit 124).
    #[arg(long = "limit-s", value_name = "N", default_value_t = 120, value_parser = clap::value_parser!(u64).range(1..), allow_negative_numbers = true)]
    limit_s: u64,
    /// Print every refusal (errno) and warning of the model on standard error as it happens.
    #[arg(long)]
    verbose: bool,
    /// Play a real driver: refuse the simulator's hint query, so COMMAND runs with only what the driver gives.
    #[arg(long = "no-sim-hints")]
    no_sim_hints: bool,
    /// Play the scenario's and injected faults for each core's first N kickoffs only; later kickoffs (the next process's, after its reset) play the healthy device.
    #[arg(long = "fault-kickoffs", value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    fault_kickoffs: Option<u32>,
    /// From the Nth copy start of data on a process's own DMA rings on (1-based), the device moves only each side's last descriptor (the completion marker) and drops the data: it acknowledges copies it did not make.
    #[arg(long = "fault-copy-data", value_name = "N", value_parser = clap::value_parser!(u32).range(1..), conflicts_with = "fault_copy_marker", allow_negative_numbers = true)]
    fault_copy_data: Option<u32>,
    /// As --fault-copy-data, the marker dropped too: from the Nth copy start of data on, nothing moves and the copy's marker never arrives.
    #[arg(long = "fault-copy-marker", value_name = "N", value_parser = clap::value_parser!(u32).range(1..), allow_negative_numbers = true)]
    fault_copy_marker: Option<u32>,
    /// The program to run and its arguments (after `--`).
    #[arg(last = true, required = true, value_name = "COMMAND")]
    command: Vec<std::ffi::OsString>,
}

#[derive(Args, Debug)]
struct ServeArgs {
    /// The shared-memory file to create (e.g. /dev/shm/nrt-demo); replaced if it exists, removed on exit.
    #[arg(long, value_name = "PATH")]
    shm: std::path::PathBuf,
    /// Start from a named scenario's device (its faults, extras, arch, cores, ring size).
    #[arg(long, value_name = "NAME")]
    scenario: Option<String>,
    #[command(flatten)]
    play: PlayArgs,
    /// Stop after N inferences have been played and harvested.
    #[arg(long, value_name = "N", default_value_t = 1, conflicts_with = "forever", allow_negative_numbers = true)]
    inferences: u32,
    /// Serve until the host sets the shutdown flag.
    #[arg(long)]
    forever: bool,
    /// Exit with an error when nothing happened for N seconds (0: wait forever).
    #[arg(long = "idle-timeout-s", value_name = "N", default_value_t = 0, allow_negative_numbers = true)]
    idle_timeout_s: u64,
}

/// The device `serve` and `driver` play, over the named scenario's (if any).
#[derive(Args, Debug)]
struct PlayArgs {
    /// Inject a fault (repeatable), e.g. `hang:core=0,engine=DVE`.
    #[arg(long = "inject", value_name = "SPEC", value_parser = parse_fault)]
    inject: Vec<Fault>,
    /// Physical cores [default: 2].
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=2), allow_negative_numbers = true)]
    cores: Option<u8>,
    #[command(flatten)]
    device: DeviceArgs,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum RingArg {
    Infer,
    Error,
}

/// The device settings `run`, `serve` and `driver` share: each one given
/// replaces the scenario's (or the default) value.
#[derive(Args, Clone, Debug)]
struct DeviceArgs {
    /// Device generation [default: sunda].
    #[arg(long, value_parser = arch_parser())]
    arch: Option<Arch>,
    /// Seed of every random choice [default: 0].
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    seed: Option<u64>,
    /// Entries per NQ ring, a power of two from 2 to 65536 [default: 64].
    #[arg(long = "ring-entries", value_name = "N", value_parser = parse_ring_entries, allow_negative_numbers = true)]
    ring_entries: Option<u32>,
}

/// `--arch`: one of core's generations, by its HAL key.
fn arch_parser() -> impl clap::builder::TypedValueParser<Value = Arch> {
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(Arch::ALL.map(Arch::name))
        .try_map(|s: String| Arch::from_name(&s).ok_or_else(|| format!("no generation named {s}")))
}

impl DeviceArgs {
    fn apply(&self, cfg: &mut SimConfig) {
        if let Some(arch) = self.arch {
            cfg.arch = arch;
        }
        if let Some(s) = self.seed {
            cfg.seed = s;
        }
        if let Some(n) = self.ring_entries {
            cfg.ring_entries = n;
        }
    }
}

#[derive(Args, Clone, Debug)]
struct RunArgs {
    /// A named scenario (see `nrt-sim scenarios`), or `all` for the table of every one.
    #[arg(long, value_name = "NAME")]
    scenario: Option<String>,
    /// Inject a fault (repeatable), e.g. `hang:core=0,engine=DVE`, `nan:core=1`.
    #[arg(long = "inject", value_name = "SPEC", value_parser = parse_fault)]
    inject: Vec<Fault>,
    /// Physical cores of the logical core, 1 or 2 [default: 2]; with `--devices`,
    /// logical cores per device [default: 4].
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=8), allow_negative_numbers = true)]
    cores: Option<u8>,
    #[command(flatten)]
    device: DeviceArgs,
    /// Play a host of N devices, every logical core harvested through poll groups.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=64), allow_negative_numbers = true)]
    devices: Option<u16>,
    /// With `--devices`: inferences per logical core [default: 1].
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(1..=1_000_000), allow_negative_numbers = true)]
    inferences: Option<u32>,
    /// With `--devices`: poll groups (pollers), each harvesting a block of devices [default: one per device].
    #[arg(long, value_name = "P", value_parser = clap::value_parser!(u16).range(1..=64), allow_negative_numbers = true)]
    pollers: Option<u16>,
    /// With `--devices`: physical cores per logical core, 1 or 2 [default: 2].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8).range(1..=2), allow_negative_numbers = true)]
    lnc: Option<u8>,
    /// With `--devices`: the devices the `--inject` faults play on, e.g. `3,7` [default: every device].
    #[arg(long = "fault-devices", value_name = "LIST", value_delimiter = ',', allow_negative_numbers = true)]
    fault_devices: Vec<u16>,
    /// With `--devices`: write HEAD back after every sweep that read something
    /// (libnrt's drain) instead of batching it per ring.
    #[arg(long = "head-every-sweep")]
    head_every_sweep: bool,
    /// The model's timeout in seconds [default: 5].
    #[arg(long = "timeout-s", value_name = "N", allow_negative_numbers = true)]
    timeout_s: Option<u32>,
    /// Run the device on its own thread against the real clock.
    #[arg(long)]
    threaded: bool,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// Write the harvest as Chrome trace-event JSON (Perfetto, chrome://tracing) to FILE, streamed as the run goes.
    #[arg(long, value_name = "FILE")]
    trace: Option<std::path::PathBuf>,
    /// Write the harvest as an SVG timeline to FILE (engines as lanes, a hung one to the timeout; with --devices a row per device).
    #[arg(long = "timeline-svg", value_name = "FILE")]
    timeline_svg: Option<std::path::PathBuf>,
}

#[derive(Args, Debug)]
struct DecodeArgs {
    /// Which ring's layout to decode with.
    #[arg(long, value_enum, default_value = "infer")]
    ring: RingArg,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// Hex digits, 32 per entry (spaces allowed), or `-` to read stdin.
    #[arg(required = true, value_name = "HEX")]
    hex: Vec<String>,
}

fn parse_fault(s: &str) -> Result<Fault, String> {
    Fault::parse(s).map_err(|e| e.to_string())
}

fn parse_ring_entries(s: &str) -> Result<u32, String> {
    let max = nrt_sim::run::MAX_RING_ENTRIES;
    match s.parse::<u32>() {
        Ok(n) if n.is_power_of_two() && (2..=max).contains(&n) => Ok(n),
        _ => Err(format!("'{s}' is not a power of two from 2 to {max}")),
    }
}

fn usage_error(msg: &str) -> ExitCode {
    errln!("nrt-sim: error: {msg}");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let code = dispatch(Cli::parse());
    match out::failure() {
        Some(e) => {
            errln!("nrt-sim: writing standard output failed: {e}");
            ExitCode::from(1)
        }
        None => code,
    }
}

fn dispatch(cli: Cli) -> ExitCode {
    match cli.cmd {
        Cmd::Run(a) => cmd_run(&a),
        Cmd::Scenarios => {
            for s in SCENARIOS {
                let exp = format!("{} {}", s.expected.code(), s.expected.name());
                outln!("{:20} {:40} {}", s.name, exp, s.description);
            }
            ExitCode::SUCCESS
        }
        Cmd::Decode(a) => cmd_decode(&a),
        Cmd::Serve(a) => cmd_serve(&a),
        #[cfg(feature = "driver")]
        Cmd::Driver(a) => cmd_driver(&a),
    }
}

#[cfg(feature = "driver")]
fn cmd_driver(a: &DriverArgs) -> ExitCode {
    use nrt_sim::driver::supervisor::{self, DriverConfig, Exit};
    let all = a.scenario.as_deref() == Some("all");
    let p = &a.play;
    if all && (!p.inject.is_empty() || p.cores.is_some() || p.device.arch.is_some() || p.device.ring_entries.is_some())
    {
        return usage_error(
            "--inject, --cores, --arch and --ring-entries do not combine with --scenario all (each scenario sets its own)",
        );
    }
    let cfg = match played_config(a.scenario.as_deref().filter(|_| !all), p) {
        Ok(cfg) => cfg,
        Err(code) => return code,
    };
    let dc = DriverConfig {
        sim: cfg,
        strict: !a.log_violations,
        limit: std::time::Duration::from_secs(a.limit_s),
        command: a.command.clone(),
        capture_stdout: false,
        echo: a.verbose,
        hints: !a.no_sim_hints,
        fault_kickoffs: a.fault_kickoffs,
        copy_fault: match (a.fault_copy_data, a.fault_copy_marker) {
            (Some(from), _) => Some(nrt_sim::driver::model::CopyFault { from, marker: false }),
            (None, Some(from)) => Some(nrt_sim::driver::model::CopyFault { from, marker: true }),
            (None, None) => None,
        },
    };
    if all {
        // Each skipped scenario is named (SKIPPED, with its reason) as the rows run.
        let (rows, _skipped) = supervisor::run_all(&dc, &mut out::Stdout);
        outp!("{}", report::table_text(&rows));
        return if rows.iter().all(|r| r.verdict.is_ok()) { ExitCode::SUCCESS } else { ExitCode::from(1) };
    }
    let o = match supervisor::run(&dc) {
        Ok(o) => o,
        Err(e) => {
            errln!("nrt-sim driver: {e}");
            return ExitCode::from(1);
        }
    };
    // Each kernel BUG was reported on standard error as it happened.
    let calls: u32 = o.calls.values().sum();
    let cmd = a.command.first().map(|c| c.to_string_lossy().into_owned()).unwrap_or_default();
    match o.exit {
        Exit::Signal(sig) => errln!("nrt-sim driver: {cmd} was killed by signal {sig}"),
        Exit::TimedOut => errln!("nrt-sim driver: {cmd} ran past --limit-s {} and was killed", a.limit_s),
        Exit::KernelBug => {
            errln!("nrt-sim driver: {cmd} was killed: the real kernel would have oopsed in that call (--strict)")
        }
        Exit::Code(_) => {}
    }
    errln!(
        "nrt-sim driver: {} open(s) of {}, {calls} ioctl(s) served, {} refused, {} kernel BUG(s), {} warning(s), {} inference(s) played",
        o.opens,
        supervisor::DEVICE_PATH,
        o.refusals,
        o.kernel_bug_count,
        o.warning_count,
        o.played
    );
    if o.conformance_count > 0 {
        errln!(
            "nrt-sim driver: {} conformance violation(s): the driver performs them, a runtime must not{}",
            o.conformance_count,
            if dc.strict { " (the run fails, exit 71)" } else { "" }
        );
    }
    if let Some(note) = o.dropped_note() {
        errln!("nrt-sim driver: {note}");
    }
    if o.killed > 0 {
        errln!("nrt-sim driver: {} process(es) of {cmd}'s tree were still running and were killed", o.killed);
    }
    ExitCode::from(o.exit_status(dc.strict))
}

fn cmd_serve(a: &ServeArgs) -> ExitCode {
    let cfg = match played_config(a.scenario.as_deref(), &a.play) {
        Ok(cfg) => cfg,
        Err(code) => return code,
    };
    let serve_cfg = nrt_sim::serve::ServeConfig {
        path: a.shm.clone(),
        sim: cfg,
        inferences: (!a.forever).then_some(a.inferences),
        idle_timeout: (a.idle_timeout_s > 0).then(|| std::time::Duration::from_secs(a.idle_timeout_s)),
    };
    match nrt_sim::serve::serve(&serve_cfg, &mut out::Stdout) {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            errln!("nrt-sim serve: {e}");
            ExitCode::from(1)
        }
    }
}

/// The device `serve` and `driver` play, checked: the named scenario's (else
/// the default), with the flags over it and the injected faults added. A usage
/// error is printed and its exit status returned.
fn played_config(scenario: Option<&str>, p: &PlayArgs) -> Result<SimConfig, ExitCode> {
    let mut cfg = SimConfig::default();
    if let Some(name) = scenario {
        match scenario::find(name) {
            Some(s) => s.apply(&mut cfg),
            None => return Err(usage_error(&format!("unknown scenario '{name}' (see `nrt-sim scenarios`)"))),
        }
    }
    if let Some(c) = p.cores {
        cfg.cores = c;
    }
    p.device.apply(&mut cfg);
    // The device plays on its own thread, against the real clock.
    cfg.threaded = true;
    cfg.faults.extend(p.inject.iter().copied());
    cfg.validate().map_err(|e| usage_error(&e.to_string()))?;
    Ok(cfg)
}

impl RunArgs {
    /// The flags over `cfg` (a scenario's or the default), all but `--cores`,
    /// which counts physical cores of one run but logical cores per device
    /// with `--devices`.
    fn apply(&self, cfg: &mut SimConfig) {
        self.device.apply(cfg);
        if let Some(t) = self.timeout_s {
            cfg.timeout_s = t;
        }
        cfg.threaded = self.threaded;
    }
}

fn print_json(v: &serde_json::Value) {
    match serde_json::to_string_pretty(v) {
        Ok(s) => outln!("{s}"),
        Err(e) => errln!("nrt-sim: JSON rendering failed: {e}"),
    }
}

fn cmd_run(a: &RunArgs) -> ExitCode {
    if a.devices.is_some() {
        return cmd_host(a);
    }
    if a.inferences.is_some()
        || a.pollers.is_some()
        || a.lnc.is_some()
        || !a.fault_devices.is_empty()
        || a.head_every_sweep
    {
        return usage_error("--inferences, --pollers, --lnc, --fault-devices and --head-every-sweep need --devices N");
    }
    if a.scenario.as_deref() == Some("all") {
        if a.trace.is_some() || a.timeline_svg.is_some() {
            return usage_error("--trace and --timeline-svg picture one run: they do not combine with --scenario all");
        }
        return cmd_all(a);
    }
    let scenario: Option<&Scenario> = match a.scenario.as_deref() {
        None => None,
        Some(name) => match scenario::find(name) {
            Some(s) => Some(s),
            None => {
                let names: Vec<&str> = SCENARIOS.iter().map(|s| s.name).collect();
                return usage_error(&format!(
                    "unknown scenario '{name}' (expected all or one of: {})",
                    names.join(", ")
                ));
            }
        },
    };
    let mut cfg = SimConfig::default();
    if let Some(s) = scenario {
        s.apply(&mut cfg);
    }
    if let Some(c) = a.cores {
        cfg.cores = c;
    }
    a.apply(&mut cfg);
    cfg.faults.extend(a.inject.iter().copied());
    let (report, counters) = match nrt_sim::run::run_counted(&cfg) {
        Ok(r) => r,
        Err(e @ SimError::Config(_)) => return usage_error(&e.to_string()),
        Err(e) => {
            errln!("nrt-sim: {e}");
            return ExitCode::from(1);
        }
    };
    let title = scenario.map_or_else(|| "nrt-sim run".to_string(), |s| format!("nrt-sim run --scenario {}", s.name));
    if let Err(e) = write_pictures(a, &report, &title) {
        errln!("nrt-sim run: {e}");
        return ExitCode::from(1);
    }
    // The counters' summary, in the shape `nrtctl stats` prints a process's.
    let stats = nrt_abi::stats::ExecutionStats::from_blocks((0..cfg.cores).filter_map(|c| counters.core(c)));
    // A named scenario is checked when it runs as defined (injections change it).
    let verdict = scenario.filter(|_| a.inject.is_empty()).map(|s| s.evaluate(&report));
    if a.json {
        let mut v = report::json(&report, scenario);
        if let Some(obj) = v.as_object_mut() {
            if let Some(verdict) = &verdict {
                obj.insert("scenario_pass".into(), serde_json::Value::Bool(verdict.is_ok()));
            }
            obj.insert("execution_stats".into(), stats.json(None));
        }
        print_json(&v);
    } else {
        outp!("{}", report::text(&report, scenario));
        outp!("\nexecution_stats (this run's counters, as `nrtctl stats` prints a process's):\n{}", stats.text());
        if let (Some(s), Some(verdict)) = (scenario, &verdict) {
            match verdict {
                Ok(()) => outln!("\nscenario check: PASS (expected {} {})", s.expected.code(), s.expected.name()),
                Err(why) => outln!("\nscenario check: FAIL ({why})"),
            }
        }
    }
    match verdict {
        Some(Err(_)) => ExitCode::from(1),
        _ => ExitCode::SUCCESS,
    }
}

/// Write `--trace` (trace-event JSON, streamed to its file) and
/// `--timeline-svg` of one run's report, each if asked; the error names the
/// file and the reason.
fn write_pictures(a: &RunArgs, report: &nrt_sim::run::RunReport, title: &str) -> Result<(), nrt_trace::WriteError> {
    use nrt_trace::Sink as _;
    if let Some(p) = &a.trace {
        let mut f = nrt_trace::TraceFile::create("trace", p)?;
        f.add_report(report, 0, title);
        f.finish()?;
    }
    if let Some(p) = &a.timeline_svg {
        let mut t = nrt_trace::Trace::new();
        t.add_report(report, 0, title);
        nrt_trace::write_file("timeline SVG", p, &t.to_svg(title))?;
    }
    Ok(())
}

/// A host run with its pictures: the trace streamed to its file as the run
/// goes, the SVG from a bounded per-device summary, written at the end.
fn run_host_pictured(
    a: &RunArgs,
    cfg: &nrt_sim::run::devices::HostConfig,
) -> Result<Result<nrt_sim::run::devices::HostReport, SimError>, nrt_trace::WriteError> {
    let file = a.trace.as_deref().map(|p| nrt_trace::TraceFile::create("trace", p)).transpose()?;
    let mut sink = (file, a.timeline_svg.as_ref().map(|_| nrt_trace::Summary::new()));
    let run = nrt_sim::run::devices::run_host_into(cfg, &mut sink);
    let (file, summary) = sink;
    if let Some(f) = file {
        f.finish()?;
    }
    if let (Some(p), Some(summary)) = (&a.timeline_svg, summary) {
        let title = format!(
            "nrt-sim run --devices {} --cores {} --lnc {} --inferences {}",
            cfg.devices, cfg.cores, cfg.lnc, cfg.inferences
        );
        nrt_trace::write_file("timeline SVG", p, &summary.to_svg(&title))?;
    }
    Ok(run)
}

/// `run --devices N`: a host's worth of inferences through poll groups.
fn cmd_host(a: &RunArgs) -> ExitCode {
    if a.scenario.is_some() {
        return usage_error("--scenario does not combine with --devices (use --inject and --fault-devices)");
    }
    let mut sim = SimConfig::default();
    a.apply(&mut sim);
    sim.faults.extend(a.inject.iter().copied());
    let defaults = nrt_sim::run::devices::HostConfig::default();
    let cfg = nrt_sim::run::devices::HostConfig {
        sim,
        devices: a.devices.unwrap_or(defaults.devices),
        cores: a.cores.unwrap_or(defaults.cores),
        lnc: a.lnc.unwrap_or(defaults.lnc),
        inferences: a.inferences.unwrap_or(1),
        // One poller per device unless told otherwise (one poller may also take
        // several devices).
        pollers: a.pollers.unwrap_or(a.devices.unwrap_or(defaults.devices)),
        fault_devices: a.fault_devices.clone(),
        head_batching: !a.head_every_sweep,
    };
    let pictures = a.trace.is_some() || a.timeline_svg.is_some();
    let run = if pictures {
        // A configuration the run refuses is a usage error before any file is made.
        if let Err(e) = cfg.validate() {
            return usage_error(&e.to_string());
        }
        match run_host_pictured(a, &cfg) {
            Ok(run) => run,
            Err(e) => {
                errln!("nrt-sim run --devices: {e}");
                return ExitCode::from(1);
            }
        }
    } else {
        nrt_sim::run::devices::run_host(&cfg)
    };
    match run {
        Ok(r) => {
            if a.json {
                print_json(&nrt_sim::run::devices::json(&r));
            } else {
                outp!("{}", nrt_sim::run::devices::text(&r));
            }
            ExitCode::SUCCESS
        }
        Err(e @ SimError::Config(_)) => usage_error(&e.to_string()),
        Err(e) => {
            errln!("nrt-sim run --devices: {e}");
            ExitCode::from(1)
        }
    }
}

fn cmd_all(a: &RunArgs) -> ExitCode {
    if !a.inject.is_empty() {
        return usage_error("--inject does not combine with --scenario all (each scenario sets its own faults)");
    }
    if a.cores.is_some() || a.device.arch.is_some() || a.device.ring_entries.is_some() {
        return usage_error("--cores, --arch and --ring-entries do not combine with --scenario all");
    }
    let mut rows = Vec::new();
    for s in SCENARIOS {
        let mut cfg = s.config();
        a.apply(&mut cfg);
        if cfg.threaded && s.name == "barrier-300s" {
            // 300 s of real time: the row is checked in deterministic mode.
            cfg.threaded = false;
        }
        let row = match run(&cfg) {
            Ok(r) => s.row(Ok((r.status, r.return_code())), s.evaluate(&r).map_err(Into::into)),
            Err(e) => s.failed_row(e),
        };
        rows.push(row);
    }
    if a.json {
        print_json(&report::table_json(&rows));
    } else {
        outp!("{}", report::table_text(&rows));
    }
    if rows.iter().all(|r| r.verdict.is_ok()) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn cmd_decode(a: &DecodeArgs) -> ExitCode {
    let input = if a.hex.len() == 1 && a.hex.first().map(String::as_str) == Some("-") {
        let mut s = String::new();
        if let Err(e) = std::io::stdin().read_to_string(&mut s) {
            return usage_error(&format!("reading stdin: {e}"));
        }
        s
    } else {
        a.hex.join(" ")
    };
    let entries = match decode::parse_hex(&input) {
        Ok(e) => e,
        Err(e) => return usage_error(&format!("decode: {e}")),
    };
    let ring = match a.ring {
        RingArg::Infer => RingKind::Infer,
        RingArg::Error => RingKind::Error,
    };
    if a.json {
        print_json(&decode::json(&entries, ring));
    } else {
        outp!("{}", decode::text(&entries, ring));
    }
    ExitCode::SUCCESS
}
