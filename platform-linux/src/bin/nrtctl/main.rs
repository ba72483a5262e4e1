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
