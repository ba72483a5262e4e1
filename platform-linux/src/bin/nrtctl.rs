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
//! file, a stale or corrupt one, a mapping failure); 2 for a usage error. Then it
//! asks the server to stop, unless `--leave-running`.

use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use nrt_linux::device::{list_devices, NeuronDevice};

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
    #[arg(long, value_name = "N", default_value_t = 1)]
    inferences: u32,
    /// The poll delay between harvest steps.
    #[arg(long, value_enum, default_value = "adaptive")]
    delay: DelayArg,
    /// The model's timeout in seconds.
    #[arg(long = "timeout-s", value_name = "N", default_value_t = 5)]
    timeout_s: u32,
    /// How long to wait for the file to appear and be ready, seconds.
    #[arg(long = "wait-s", value_name = "N", default_value_t = 10.0)]
    wait_s: f64,
    /// Print JSON (one object per inference) instead of text.
    #[arg(long)]
    json: bool,
    /// Do not ask the server to stop when done.
    #[arg(long)]
    leave_running: bool,
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
    #[arg(long)]
    nc: u32,
    /// Semaphore or event index.
    #[arg(long)]
    index: u32,
    /// Value (inc, dec, write, set).
    #[arg(long, default_value_t = 1)]
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
    let cli = Cli::parse();
    let result = match cli.cmd {
        Cmd::Devices => {
            let devs = list_devices();
            if devs.is_empty() {
                println!("no Neuron devices: no /dev/neuron* node (is the aws-neuronx driver loaded?)");
            }
            for (path, bdf) in devs {
                println!("{}\t{}", path.display(), bdf.as_deref().unwrap_or("(PCI address unknown)"));
            }
            Ok(())
        }
        Cmd::Sem { op, at } => NeuronDevice::open(&at.device).and_then(|d| match op {
            SemOp::Inc => d.semaphore_increment(at.nc, at.index, at.value).map(|_| println!("ok")),
            SemOp::Dec => d.semaphore_decrement(at.nc, at.index, at.value).map(|_| println!("ok")),
            SemOp::Read => d.semaphore_read(at.nc, at.index).map(|v| println!("{v}")),
            SemOp::Write => d.semaphore_write(at.nc, at.index, at.value).map(|_| println!("ok")),
        }),
        Cmd::Event { op, at } => NeuronDevice::open(&at.device).and_then(|d| match op {
            EventOp::Set => d.event_set(at.nc, at.index, at.value).map(|_| println!("ok")),
            EventOp::Get => d.event_get(at.nc, at.index).map(|v| println!("{v}")),
        }),
        #[cfg(feature = "sim")]
        Cmd::Harvest(a) => return harvest(&a),
        #[cfg(not(feature = "sim"))]
        Cmd::Harvest(_) => {
            eprintln!("nrtctl harvest: this nrtctl was built without the `sim` feature");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("nrtctl: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(feature = "sim")]
fn harvest(a: &HarvestArgs) -> ExitCode {
    use nrt_linux::harvest::Harvester;
    use nrt_linux::time::DelayKind;
    let wait = std::time::Duration::from_secs_f64(a.wait_s.clamp(0.0, 86_400.0));
    let mut h = match Harvester::attach(&a.shm, wait) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("nrtctl harvest: {e}");
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
            Ok(r) if a.json => println!("{:#}", nrt_sim::report::json(&r, None)),
            Ok(r) => {
                let heading = format!("nrtctl harvest --shm {}: inference {i} of {}", a.shm.display(), a.inferences);
                print!("{}", nrt_sim::report::text_with_heading(&r, &heading));
                if i < a.inferences {
                    println!();
                }
            }
            Err(e) => {
                eprintln!("nrtctl harvest: inference {i}: {e}");
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
