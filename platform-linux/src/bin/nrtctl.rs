//! `nrtctl`: an operator's tool over the Neuron driver's ioctls.
//!
//! ```text
//! nrtctl devices
//! nrtctl sem inc|dec|read|write --device /dev/neuron0 --nc N --index I [--value V]
//! nrtctl event set|get --device /dev/neuron0 --nc N --index I [--value V]
//! ```
//! A failed ioctl prints the call, the device, the errno name and text, and exits 1.

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
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("nrtctl: {e}");
            ExitCode::FAILURE
        }
    }
}
