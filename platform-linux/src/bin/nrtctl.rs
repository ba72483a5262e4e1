//! `nrtctl`: an operator's tool over the Neuron driver's ioctls.
//!
//! ```text
//! nrtctl devices
//! nrtctl sem inc|dec|read|write --device /dev/neuron0 --nc N --index I [--value V]
//! nrtctl event set|get --device /dev/neuron0 --nc N --index I [--value V]
//! nrtctl harvest --shm PATH [--inferences N] [--delay libnrt|adaptive] [--timeout-s N] [--wait-s N] [--json] [--leave-running]
//! nrtctl run --device /dev/neuron0 [--scenario NAME] [--inject SPEC] [--timeout-s N] [--ring-entries N] [--cores N]
//!            [--inferences K] [--linger-s S] [--json] [--trace FILE] [--timeline-svg FILE]
//! nrtctl stats --device /dev/neuron0 --pid N [--json] [--watch SECS [--count K]]
//! ```
//! A failed ioctl prints the call, the device, the errno name and text, and exits 1.
//!
//! `run` is the whole bring-up path of `docs/driver-model.md` for one inference
//! ([`nrt_linux::session`]): open, driver and device info, the version check,
//! cores owned and reset, DMA ring memory and queue, NQ rings, the staged copy
//! and its copy start, the kickoff, the harvest, the teardown. It prints the
//! report `nrt-sim run` prints (its `status: <code> <NAME> (...)` line; with
//! `--json` the same JSON object: `nrt_abi::report`'s printers, which `nrt-sim
//! run` uses too). `--scenario` and `--inject` only label the run (the device,
//! or `nrt-sim driver`'s model of it, decides what happens): `--scenario` takes
//! the scenario's label from `nrt_abi::sim::SCENARIO_LABELS` (its expected
//! status and return code, description, cores, ring entries and fault specs;
//! nrtctl does not depend on the simulator), and with no `--inject` the status
//! and one-step return code are checked against it, as `nrt-sim run` checks
//! them; an `--inject` spec is printed as given, its fault name checked
//! against `nrt_abi::sim::FAULT_NAMES` (its parameters are the device's). Exit
//! status as `nrt-sim run`: 0, or 1 when that check fails; 1 when a call failed
//! (no device, `ENOTTY` from a file that is not one, an incompatible driver:
//! the call, the path and the errno or the reason are printed); 2 for a usage
//! error. `--cores` and `--ring-entries` default to what the simulator's hint
//! query says (`nrt_abi::sim::SIM_HINTS`, which a real driver refuses), else the
//! scenario's, else 2 and 64. Cores another process holds fail at once, the
//! error naming that process's pid and command.
//!
//! `harvest` attaches to the device `nrt-sim serve --shm PATH` plays in another
//! process and runs inferences through this binding (mmap'd rings and BAR), printing
//! what `nrt-sim run` prints. As `nrt-sim run`, it exits 0 when every harvest
//! finished, whatever its NRT status; 1 when it could not attach or kick off (no
//! file, a stale or corrupt one, a mapping failure); 2 for a usage error (a
//! number out of range included). Then it asks the server to stop, unless
//! `--leave-running`.
//!
//! `run` and `harvest` honour the runtime's `NEURON_RT_*` variables
//! ([`nrt_linux::config`], listed by `nrtctl run --help` and `nrtctl harvest
//! --help`; a harvest's cores are the server's, so it reads the timeout and
//! the log levels): a flag beats its variable, a bad value is a usage error
//! (exit 2) naming the variable, the value and what is accepted. `--trace`
//! and `--timeline-svg` write the harvests of all the run's inferences (each
//! at its own times, its spans tagged with its number when there are several)
//! as Chrome trace-event JSON, streamed to the file as each harvest ends, and
//! an SVG timeline (`nrt_trace`: one inference's lanes, or a row summing
//! several), after the last inference; a file that cannot be made exits 1
//! before the first inference, naming it, as does one that cannot be written.
//!
//! `run --inferences K` runs K inferences on the one session, printing each
//! report (with `--json`, one object per inference); `--linger-s S` keeps the
//! process, its session and its datastore S seconds after the last one, so
//! that a monitor can read its counters.
//!
//! `stats` reads process N's datastore as neuron-monitor does
//! (`ACQUIRE_NEURON_DS {pid N}`, mapped; [`nrt_linux::datastore`]) and prints
//! its counters in the shape of neuron-monitor's `execution_stats`
//! (`nrt_abi::stats`; the same field names with `--json`): `execution_summary`
//! counts each execution once, in its outcome, and `nc_execution_summary` each
//! core's own outcome (G-NDS-SUM). `--watch SECS` prints the totals, then what
//! changed over each period of SECS seconds (with `period`; a count that went
//! down is a reset, its NC named, never a difference), and
//! stops after `--count` periods, when the process's datastore is gone (the
//! driver no longer hands it out: released, or the process exited), or when
//! standard output closes. Exit 1 when the datastore cannot be acquired (the call, the device,
//! the pid and the errno: `ENOENT` when the process has none).
//!
//! A reader that goes away (`| head`) ends the output quietly: the command
//! finishes (the harvest and the server's shutdown included) and exits as it
//! would have. Any other failure to write standard output is reported at exit,
//! status 1.

use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use nrt_linux::device::{list_devices, NeuronDevice};

// Standard output for a reader that may go away (`| head`): a closed pipe
// discards the rest quietly, another write error is reported at exit.
use nrt_abi::os::stdout as out;
#[cfg_attr(not(feature = "sim"), allow(unused_imports))]
use nrt_abi::outp;
use nrt_abi::{errln, outln};

#[derive(Parser)]
#[command(name = "nrtctl", version, about = "Neuron device operations through the driver's ioctls")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// List /dev/neuron* nodes and their PCI BDFs.
    Devices,
    /// Semaphore operations.
    Sem {
        /// The operation.
        op: SemOp,
        #[command(flatten)]
        at: At,
    },
    /// Event operations.
    Event {
        /// The operation.
        op: EventOp,
        #[command(flatten)]
        at: At,
    },
    /// Harvest inferences from `nrt-sim serve --shm PATH` (another process) through the Linux binding.
    #[command(after_help = HARVEST_ENV_HELP)]
    Harvest(HarvestArgs),
    /// Bring up cores of a device through the driver's ioctls and run inferences (docs/driver-model.md).
    #[command(after_help = RUN_ENV_HELP)]
    Run(RunArgs),
    /// Read a process's execution counters from its datastore, as neuron-monitor does.
    Stats(StatsArgs),
}

/// The longest `--linger-s` and `--watch` period: an hour.
const MAX_LINGER_S: f64 = 3_600.0;

/// `--linger-s` / `--watch`: a finite number of seconds from 0 to an hour.
fn parse_secs(s: &str) -> Result<std::time::Duration, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=MAX_LINGER_S).contains(&v) => Ok(std::time::Duration::from_secs_f64(v)),
        Ok(_) => Err(format!("not a number of seconds from 0 to {MAX_LINGER_S}")),
        Err(e) => Err(format!("not a number of seconds: {e}")),
    }
}

/// `--watch`: a period, more than 0 seconds (a zero period would read the
/// datastore in a tight loop) and at most an hour.
fn parse_period(s: &str) -> Result<std::time::Duration, String> {
    match parse_secs(s) {
        Ok(d) if d.is_zero() => Err("a period must be more than 0 seconds".to_string()),
        Ok(d) => Ok(d),
        Err(_) => Err(format!("not a number of seconds more than 0 and at most {MAX_LINGER_S}")),
    }
}

#[derive(clap::Args)]
struct StatsArgs {
    /// Device node.
    #[arg(long, default_value = "/dev/neuron0")]
    device: std::path::PathBuf,
    /// The process whose datastore to read.
    #[arg(long, value_parser = clap::value_parser!(i32).range(1..), allow_negative_numbers = true)]
    pid: i32,
    /// Print neuron-monitor's JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// Print the totals, then what changed every SECS seconds (more than 0, at most 3600).
    #[arg(long, value_name = "SECS", value_parser = parse_period, allow_negative_numbers = true)]
    watch: Option<std::time::Duration>,
    /// With --watch: stop after this many periods [default: when the process's datastore is gone].
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(1..))]
    count: Option<u32>,
}

#[derive(clap::Args, Clone)]
struct RunArgs {
    /// Device node [default: the device of NEURON_RT_VISIBLE_CORES's cores, /dev/neuron<i / cores per device> for
    /// index i, else /dev/neuron0]; given, NEURON_RT_VISIBLE_CORES must name cores of this device.
    #[arg(long)]
    device: Option<std::path::PathBuf>,
    /// The device node the session opened (`--device`, or the one chosen).
    #[arg(skip)]
    opened: std::path::PathBuf,
    /// Label the run with a named scenario (its expected status is checked).
    #[arg(long, value_name = "NAME")]
    scenario: Option<String>,
    /// Label the run with an injected fault (repeatable; the device decides what happens).
    #[arg(long = "inject", value_name = "SPEC")]
    inject: Vec<String>,
    /// The model's timeout in seconds [default: NEURON_RT_EXEC_TIMEOUT, else the generation's documented default, 600].
    #[arg(long = "timeout-s", value_name = "N", allow_negative_numbers = true)]
    timeout_s: Option<u32>,
    /// Entries per NQ ring, a power of two from 2 to 65536 [default: the simulator's hint, else 64].
    #[arg(long = "ring-entries", value_name = "N", value_parser = parse_ring_entries, allow_negative_numbers = true)]
    ring_entries: Option<u32>,
    /// Physical cores, 1 or 2, claimed from core 0 [default: NEURON_RT_VISIBLE_CORES (from its first core), else NEURON_RT_NUM_CORES, else the simulator's hint, else 2].
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=2), allow_negative_numbers = true)]
    cores: Option<u8>,
    /// The poll delay between harvest steps.
    #[arg(long, value_enum, default_value = "adaptive")]
    delay: DelayArg,
    /// Inferences to run on the one session, one after the other.
    #[arg(long, value_name = "K", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    inferences: u32,
    /// Keep the process (its session and datastore) this many seconds after the last inference.
    #[arg(long = "linger-s", value_name = "S", value_parser = parse_secs, allow_negative_numbers = true)]
    linger_s: Option<std::time::Duration>,
    /// Print one JSON object (per inference) instead of text.
    #[arg(long)]
    json: bool,
    /// Write the harvests (every inference, each at its own times) as Chrome trace-event JSON (Perfetto, chrome://tracing) to FILE.
    #[arg(long, value_name = "FILE")]
    trace: Option<std::path::PathBuf>,
    /// Write the harvests as an SVG timeline to FILE (one inference: engines as lanes; several: a row summing them).
    #[arg(long = "timeline-svg", value_name = "FILE")]
    timeline_svg: Option<std::path::PathBuf>,
}

/// The log variables' lines of the subcommands' help.
macro_rules! log_env_help {
    () => {
        "  NEURON_RT_LOG_LEVEL=LEVEL        ERROR (default), WARNING, INFO, DEBUG, TRACE or QUIET, on standard error
  NEURON_RT_LOG_LEVEL_<C>=LEVEL    the same for one component C: TDRV (the harvest and the driver
                                   binding), NRT (nrtctl); NMGR and KMGR are accepted (no code here)
  other NEURON_RT_* variables      have no effect here (NEURON_RT_LOG_LOCATION, NEURON_RT_VALIDATE_HASH, ...):
                                   each one set is named once in a warning on standard error (not with QUIET)"
    };
}

/// `nrtctl run --help`'s list of the runtime's environment variables it honours
/// (`nrt_linux::config`); a flag beats its variable.
const RUN_ENV_HELP: &str = concat!(
    r#"Environment (a flag beats its variable; a bad value is refused at start):
  NEURON_RT_EXEC_TIMEOUT=SECONDS   execution timeout, 0 to 2147483647 [default: 600, the documented
                                   default of trn1/inf2]; every timeout message names the budget and its source
  NEURON_RT_VISIBLE_CORES=LIST     the cores to claim, one run of one device's cores: 1, 2-3 or 2,3 (not 0,2), numbered
                                   across the host: index i is core i % C of /dev/neuron<i / C>, C the cores of a device
                                   (2 on trn1/inf2); without --device that device is opened, with --device a set on
                                   another device is refused, as is a set over two devices (a session is one device);
                                   the report's cores 0..n are the device's from the first; beats NEURON_RT_NUM_CORES
  NEURON_RT_NUM_CORES=N            how many cores to claim, 0 for all
"#,
    log_env_help!()
);

/// `nrtctl harvest --help`'s list: the server's file fixes the cores, so only
/// the timeout and the log levels govern a harvest (and only they are read).
const HARVEST_ENV_HELP: &str = concat!(
    r#"Environment (a flag beats its variable; a bad value is refused at start):
  NEURON_RT_EXEC_TIMEOUT=SECONDS   execution timeout, 0 to 2147483647 [default: 600, the documented
                                   default of trn1/inf2]; every timeout message names the budget and its source
  (NEURON_RT_VISIBLE_CORES is not read, NEURON_RT_NUM_CORES is not read: the server's file fixes the cores)
"#,
    log_env_help!()
);

/// Route `log` to standard error at `levels` (once per process), lines
/// prefixed `nrtctl:`.
fn init_log(levels: &nrt_linux::config::LogLevels) {
    nrt_linux::config::init_stderr_log("nrtctl", levels);
}

/// `--ring-entries`: a power of two from 2 to 65536.
fn parse_ring_entries(s: &str) -> Result<u32, String> {
    let max = nrt_linux::session::MAX_RING_ENTRIES;
    match s.parse::<u32>() {
        Ok(n) if n.is_power_of_two() && (2..=max).contains(&n) => Ok(n),
        _ => Err(format!("'{s}' is not a power of two from 2 to {max}")),
    }
}

#[derive(clap::Args)]
struct HarvestArgs {
    /// The shared-memory file the server plays the device over.
    #[arg(long, value_name = "PATH")]
    shm: std::path::PathBuf,
    /// Inferences to run, one after the other.
    #[arg(long, value_name = "N", default_value_t = 1, allow_negative_numbers = true)]
    inferences: u32,
    /// The poll delay between harvest steps.
    #[arg(long, value_enum, default_value = "adaptive")]
    delay: DelayArg,
    /// The model's timeout in seconds [default: NEURON_RT_EXEC_TIMEOUT, else the generation's documented default, 600].
    #[arg(long = "timeout-s", value_name = "N", allow_negative_numbers = true)]
    timeout_s: Option<u32>,
    /// How long to wait for the file to appear and be ready, seconds (0 to 86400).
    #[arg(long = "wait-s", value_name = "N", default_value = "10", value_parser = parse_wait_s, allow_negative_numbers = true)]
    wait_s: std::time::Duration,
    /// Print JSON (one object per inference) instead of text.
    #[arg(long)]
    json: bool,
    /// Do not ask the server to stop when done.
    #[arg(long)]
    leave_running: bool,
}

/// The longest `--wait-s`: a day.
const MAX_WAIT_S: f64 = 86_400.0;

/// `--wait-s`: a finite number of seconds from 0 to [`MAX_WAIT_S`] (clap names
/// the flag and the value with the reason).
fn parse_wait_s(s: &str) -> Result<std::time::Duration, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=MAX_WAIT_S).contains(&v) => Ok(std::time::Duration::from_secs_f64(v)),
        Ok(_) => Err(format!("not a number of seconds from 0 to {MAX_WAIT_S}")),
        Err(e) => Err(format!("not a number of seconds: {e}")),
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum DelayArg {
    Libnrt,
    Adaptive,
}

#[derive(clap::Args)]
struct At {
    /// Device node.
    #[arg(long, default_value = "/dev/neuron0")]
    device: String,
    /// NeuronCore index.
    #[arg(long, allow_negative_numbers = true)]
    nc: u32,
    /// Semaphore or event index.
    #[arg(long, allow_negative_numbers = true)]
    index: u32,
    /// Value (inc, dec, write, set).
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    value: u32,
}

#[derive(Clone, Copy, ValueEnum)]
enum SemOp {
    Inc,
    Dec,
    Read,
    Write,
}

#[derive(Clone, Copy, ValueEnum)]
enum EventOp {
    Set,
    Get,
}

fn main() -> ExitCode {
    let code = dispatch(Cli::parse());
    match out::failure() {
        Some(e) => {
            errln!("nrtctl: writing standard output failed: {e}");
            ExitCode::FAILURE
        }
        None => code,
    }
}

fn dispatch(cli: Cli) -> ExitCode {
    let result = match cli.cmd {
        Cmd::Devices => {
            let devs = list_devices();
            if devs.is_empty() {
                outln!("no Neuron devices: no /dev/neuron* node (is the aws-neuronx driver loaded?)");
            }
            for (path, bdf) in devs {
                outln!("{}\t{}", path.display(), bdf.as_deref().unwrap_or("(PCI address unknown)"));
            }
            Ok(())
        }
        Cmd::Sem { op, at } => NeuronDevice::open(&at.device).and_then(|d| match op {
            SemOp::Inc => d.semaphore_increment(at.nc, at.index, at.value).map(|_| outln!("ok")),
            SemOp::Dec => d.semaphore_decrement(at.nc, at.index, at.value).map(|_| outln!("ok")),
            SemOp::Read => d.semaphore_read(at.nc, at.index).map(|v| outln!("{v}")),
            SemOp::Write => d.semaphore_write(at.nc, at.index, at.value).map(|_| outln!("ok")),
        }),
        Cmd::Event { op, at } => NeuronDevice::open(&at.device).and_then(|d| match op {
            EventOp::Set => d.event_set(at.nc, at.index, at.value).map(|_| outln!("ok")),
            EventOp::Get => d.event_get(at.nc, at.index).map(|v| outln!("{v}")),
        }),
        Cmd::Run(a) => return run(&a),
        #[cfg(feature = "sim")]
        Cmd::Stats(a) => return stats(&a),
        #[cfg(not(feature = "sim"))]
        Cmd::Stats(_) => {
            errln!("nrtctl stats: this nrtctl was built without the `sim` feature (its JSON printers)");
            return ExitCode::from(2);
        }
        #[cfg(feature = "sim")]
        Cmd::Harvest(a) => return harvest(&a),
        #[cfg(not(feature = "sim"))]
        Cmd::Harvest(_) => {
            errln!("nrtctl harvest: this nrtctl was built without the `sim` feature");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            errln!("nrtctl: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(feature = "sim")]
fn harvest(a: &HarvestArgs) -> ExitCode {
    use nrt_linux::config::{Budget, RtEnv, Uses};
    use nrt_linux::harvest::Harvester;
    use nrt_linux::time::DelayKind;
    // The server's file fixes the cores: the core variables are not read.
    let env = match RtEnv::from_process(Uses::TIMEOUT_AND_LOG) {
        Ok(e) => e,
        Err(e) => {
            errln!("nrtctl harvest: {e}");
            return ExitCode::from(2);
        }
    };
    init_log(&env.log);
    let mut h = match Harvester::attach(&a.shm, a.wait_s) {
        Ok(h) => h,
        Err(e) => {
            errln!("nrtctl harvest: {e}");
            return ExitCode::FAILURE;
        }
    };
    let delay = match a.delay {
        DelayArg::Libnrt => DelayKind::Libnrt,
        DelayArg::Adaptive => DelayKind::Adaptive,
    };
    let budget = Budget::resolve(a.timeout_s, "--timeout-s", &env, h.arch());
    // The harvest's own timeout line names it too (`config::log_line`).
    let _budget = nrt_linux::config::BudgetScope::enter(budget);
    let mut code = ExitCode::SUCCESS;
    for i in 1..=a.inferences {
        let r = h.harvest(budget.seconds, delay);
        if let Ok(r) = &r {
            if matches!(r.status, nrt_core::NrtStatus::Timeout | nrt_core::NrtStatus::ExecSwNqOverflow) {
                // The served file's cores, by the report's (timed-out) core lines.
                let engines: Vec<String> = r
                    .cores
                    .iter()
                    .filter_map(|c| match c.harvest {
                        nrt_abi::report::CoreHarvest::TimedOut { no_start, no_end, .. } => {
                            Some(nrt_linux::oplog::pending_of(&format!("core {}", c.core), no_start, no_end))
                        }
                        _ => None,
                    })
                    .collect();
                errln!(
                    "{}nrtctl harvest: inference {i}: {}: the harvest ended at its {budget}: status {} {}{}{}",
                    nrt_linux::oplog::stamp(),
                    a.shm.display(),
                    r.status.code(),
                    r.status.name(),
                    if engines.is_empty() { "" } else { "; " },
                    engines.join("; ")
                );
            }
        }
        match r {
            Ok(r) if a.json => outln!("{:#}", nrt_abi::report::json(&r, None)),
            Ok(r) => {
                let heading = format!("nrtctl harvest --shm {}: inference {i} of {}", a.shm.display(), a.inferences);
                outp!("{}", nrt_abi::report::text_with_heading(&r, &heading));
                if i < a.inferences {
                    outln!();
                }
            }
            Err(e) => {
                errln!("nrtctl harvest: inference {i}: {e}");
                code = ExitCode::FAILURE;
                break;
            }
        }
    }
    if !a.leave_running {
        h.shutdown_server();
    }
    code
}

/// A usage error: the message, exit 2.
fn usage_error(msg: &str) -> ExitCode {
    errln!("nrtctl run: {msg}");
    ExitCode::from(2)
}

/// The scenario's expected status and return code, by name, with its
/// description and label configuration (`nrt_abi::sim`'s table: no simulator).
type Label = &'static nrt_abi::sim::ScenarioLabel;

fn find_scenario(name: &str) -> Result<Label, String> {
    nrt_abi::sim::ScenarioLabel::find(name).ok_or_else(|| {
        let names: Vec<&str> = nrt_abi::sim::SCENARIO_LABELS.iter().map(|s| s.name).collect();
        format!("unknown scenario '{name}' (expected one of: {})", names.join(", "))
    })
}

/// An `--inject` spec is a label: its fault name must be one the simulator
/// knows (`nrt_abi::sim::FAULT_NAMES`); its parameters are the device's to check.
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

fn run(a: &RunArgs) -> ExitCode {
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
        // The generation's default needs the arch, known once open: set below.
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
    // The harvest's own timeout line names it too (`config::log_line`).
    let _budget = nrt_linux::config::BudgetScope::enter(budget);
    if let Some(e) = session.datastore_error() {
        errln!("nrtctl run: no datastore (the counters stay in this process): {e}");
    }
    let mut code = ExitCode::SUCCESS;
    // The trace file is made before the first inference (its events stream into it).
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

/// `nrtctl stats`: process `--pid`'s datastore, read as a monitor reads it.
#[cfg(feature = "sim")]
fn stats(a: &StatsArgs) -> ExitCode {
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
        // Read, then ask whether the process still held it (ENOENT once it
        // released it or exited: what was read may then be zeros).
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
    // The totals first (with --watch too: what was counted before the first
    // period), then what changed in each period.
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

#[cfg_attr(not(feature = "sim"), allow(dead_code))]
/// The scenario check of `nrt-sim run`, on what crosses the driver: the status
/// and the one-step return code (the device's own evidence stays with it).
fn verdict(expected: (nrt_core::NrtStatus, u8), r: &nrt_linux::session::Inference) -> Result<(), String> {
    if r.status != expected.0 {
        return Err(format!("status {} {}, expected {}", r.status.code(), r.status.name(), expected.0.code()));
    }
    if r.step.code() != expected.1 {
        return Err(format!("return code {}, expected {}", r.step.code(), expected.1));
    }
    Ok(())
}

/// The pictures of a run: the trace file every inference's harvest streams
/// into (`--trace`), and what the SVG is drawn from (`--timeline-svg`): one
/// inference's lanes, or the summary of several (bounded, whatever their number).
#[cfg(feature = "sim")]
type Pictures = (Option<nrt_trace::TraceFile>, (Option<nrt_trace::Trace>, Option<nrt_trace::Summary>));
#[cfg(not(feature = "sim"))]
type Pictures = ();

/// Make `--trace`'s file (its opening written) and the SVG's collector.
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

/// Finish `--trace` and write `--timeline-svg` (each file names its failure).
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
