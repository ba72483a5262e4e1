//! `nrtctl`: an operator's tool over the Neuron driver's ioctls.
//!
//! ```text
//! nrtctl devices
//! nrtctl sem inc|dec|read|write --device /dev/neuron0 --nc N --index I [--value V]
//! nrtctl event set|get --device /dev/neuron0 --nc N --index I [--value V]
//! nrtctl harvest --shm PATH [--inferences N] [--delay libnrt|adaptive] [--timeout-s N] [--wait-s N] [--json] [--leave-running]
//! ```
//! A failed ioctl prints the call, the device, the errno name and text, and exits 1.
//!
//! `harvest` attaches to the device `nrt-sim serve --shm PATH` plays in another
//! process and runs inferences through this binding (mmap'd rings and BAR), printing
//! what `nrt-sim run` prints. As `nrt-sim run`, it exits 0 when every harvest
//! finished, whatever its NRT status; 1 when it could not attach or kick off (no
//! file, a stale or corrupt one, a mapping failure); 2 for a usage error (a
//! number out of range included). Then it asks the server to stop, unless
//! `--leave-running`.
//!
//! A reader that goes away (`| head`) ends the output quietly: the command
//! finishes (the harvest and the server's shutdown included) and exits as it
//! would have. Any other failure to write standard output is reported at exit,
//! status 1.

use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use nrt_linux::device::{list_devices, NeuronDevice};

/// Standard output for a reader that may go away (`| head`): a closed pipe
/// silently discards the rest of the output and the command carries on to its
/// own exit status (no panic, no SIGPIPE death); any other write error is kept
/// and reported once, at exit. Standard error is written the same way, its
/// errors ignored.
mod out {
    use std::io::{self, Write};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::OnceLock;

    static CLOSED: AtomicBool = AtomicBool::new(false);
    static FAILED: OnceLock<String> = OnceLock::new();

    /// Write `text` to standard output, unless it is closed.
    pub fn print(text: &str) {
        print_bytes(text.as_bytes());
    }

    fn print_bytes(bytes: &[u8]) {
        if CLOSED.load(Ordering::Relaxed) {
            return;
        }
        let mut o = io::stdout().lock();
        if let Err(e) = o.write_all(bytes).and_then(|()| o.flush()) {
            CLOSED.store(true, Ordering::Relaxed);
            if e.kind() != io::ErrorKind::BrokenPipe {
                let _ = FAILED.set(e.to_string());
            }
        }
    }

    /// Write `text` to standard error, ignoring a failure (there is nowhere left
    /// to report it).
    pub fn eprint(text: &str) {
        let _ = io::stderr().lock().write_all(text.as_bytes());
    }

    /// The write error standard output had, other than a closed pipe.
    pub fn failure() -> Option<&'static str> {
        FAILED.get().map(String::as_str)
    }
}
/// `println!` through [`out`].
macro_rules! outln {
    () => { out::print("\n") };
    ($($a:tt)*) => { out::print(&format!("{}\n", format_args!($($a)*))) };
}

/// `print!` through [`out`].
macro_rules! outp {
    ($($a:tt)*) => { out::print(&format!($($a)*)) };
}

/// `eprintln!` through [`out`].
macro_rules! errln {
    ($($a:tt)*) => { out::eprint(&format!("{}\n", format_args!($($a)*))) };
}

#[derive(Parser)]
#[command(name = "nrtctl", about = "Neuron device operations through the driver's ioctls")]
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
    Harvest(HarvestArgs),
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
    /// The model's timeout in seconds.
    #[arg(long = "timeout-s", value_name = "N", default_value_t = 5, allow_negative_numbers = true)]
    timeout_s: u32,
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
    use nrt_linux::harvest::Harvester;
    use nrt_linux::time::DelayKind;
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
    let mut code = ExitCode::SUCCESS;
    for i in 1..=a.inferences {
        match h.harvest(a.timeout_s, delay) {
            Ok(r) if a.json => outln!("{:#}", nrt_sim::report::json(&r, None)),
            Ok(r) => {
                let heading = format!("nrtctl harvest --shm {}: inference {i} of {}", a.shm.display(), a.inferences);
                outp!("{}", nrt_sim::report::text_with_heading(&r, &heading));
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
