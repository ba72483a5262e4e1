//! `nrtctl`: an operator's tool over the Neuron driver's ioctls: `devices`,
//! `sem`, `event`, `run` a session's inferences, `harvest` from `nrt-sim serve`,
//! and `stats` of a process's datastore. `nrtctl COMMAND --help` tells each.
//!
//! Exit status: 0; 1 when a call failed, printing the call, the device and the
//! errno; 2 for a usage error, such as a bad `NEURON_RT_*` value. A closed
//! standard output ends the output quietly; another write failure exits 1.

use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use nrt_linux::device::{list_devices, NeuronDevice};

// Standard output that a closed pipe ends quietly; another write error is reported at exit.
use nrt_abi::os::stdout as out;
use nrt_abi::{errln, outln};

#[cfg(feature = "sim")]
mod harvest;
mod run;
#[cfg(feature = "sim")]
mod stats;

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
    /// Harvest inferences from `nrt-sim serve --shm PATH` in another process through the Linux binding.
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

/// `--watch`: a period of more than 0 seconds, at most an hour.
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
    /// Print the totals, then what changed every SECS seconds, more than 0 and at most 3600.
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
    /// The device node the session opened.
    #[arg(skip)]
    opened: std::path::PathBuf,
    /// Label the run with a named scenario, whose expected status is checked.
    #[arg(long, value_name = "NAME")]
    scenario: Option<String>,
    /// Label the run with an injected fault; repeatable, the device decides what happens.
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
    /// Keep the process, its session and datastore this many seconds after the last inference.
    #[arg(long = "linger-s", value_name = "S", value_parser = parse_secs, allow_negative_numbers = true)]
    linger_s: Option<std::time::Duration>,
    /// Print one JSON object per inference instead of text.
    #[arg(long)]
    json: bool,
    /// Write every inference's harvest as Chrome trace-event JSON, for Perfetto or chrome://tracing, to FILE.
    #[arg(long, value_name = "FILE")]
    trace: Option<std::path::PathBuf>,
    /// Write the harvests as an SVG timeline to FILE: one inference's engines as lanes, or a row summing several.
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

/// `nrtctl run --help`'s list of the runtime's variables it honours.
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
/// the timeout and the log levels are read.
const HARVEST_ENV_HELP: &str = concat!(
    r#"Environment (a flag beats its variable; a bad value is refused at start):
  NEURON_RT_EXEC_TIMEOUT=SECONDS   execution timeout, 0 to 2147483647 [default: 600, the documented
                                   default of trn1/inf2]; every timeout message names the budget and its source
  (NEURON_RT_VISIBLE_CORES is not read, NEURON_RT_NUM_CORES is not read: the server's file fixes the cores)
"#,
    log_env_help!()
);

/// Route `log` to standard error at `levels`, lines prefixed `nrtctl:`.
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
    /// How long to wait for the file to appear and be ready, seconds from 0 to 86400.
    #[arg(long = "wait-s", value_name = "N", default_value = "10", value_parser = parse_wait_s, allow_negative_numbers = true)]
    wait_s: std::time::Duration,
    /// Print one JSON object per inference instead of text.
    #[arg(long)]
    json: bool,
    /// Do not ask the server to stop when done.
    #[arg(long)]
    leave_running: bool,
}

/// The longest `--wait-s`: a day.
const MAX_WAIT_S: f64 = 86_400.0;

/// `--wait-s`: a finite number of seconds from 0 to [`MAX_WAIT_S`].
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
    /// Value of inc, dec, write and set.
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
        Cmd::Run(a) => return run::run(&a),
        #[cfg(feature = "sim")]
        Cmd::Stats(a) => return stats::stats(&a),
        #[cfg(not(feature = "sim"))]
        Cmd::Stats(_) => {
            errln!("nrtctl stats: this nrtctl was built without the `sim` feature (its JSON printers)");
            return ExitCode::from(2);
        }
        #[cfg(feature = "sim")]
        Cmd::Harvest(a) => return harvest::harvest(&a),
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
