//! The operating-system floor the Linux binding stands on: the cost of one
//! ioctl round trip (a Neuron request on a file that is not a device, which
//! fails with ENOTTY after the full syscall path) and of libnrt's `usleep(1)`.

use std::time::{Duration, Instant};

use nrt_linux::device::NeuronDevice;
use serde_json::json;

use crate::{thread_cpu_ns, write_json, Pct};

pub fn run() {
    let p = std::env::temp_dir().join(format!("nrt-bench-sys-{}", std::process::id()));
    std::fs::write(&p, b"").expect("temp file");
    let dev = NeuronDevice::open(&p).expect("open");
    let mut ioctl = Vec::with_capacity(20_000);
    for _ in 0..20_000 {
        let t = Instant::now();
        let _ = dev.bar_write(0, 0x10C, 0);
        ioctl.push(t.elapsed().as_nanos() as f64);
    }
    let _ = std::fs::remove_file(&p);
    let ioctl = Pct::of(&mut ioctl);
    let mut wall = Vec::with_capacity(2000);
    let mut cpu = Vec::with_capacity(2000);
    for _ in 0..2000 {
        let (t, c) = (Instant::now(), thread_cpu_ns());
        std::thread::sleep(Duration::from_micros(1));
        wall.push(t.elapsed().as_nanos() as f64);
        cpu.push((thread_cpu_ns() - c) as f64);
    }
    let (wall, cpu) = (Pct::of(&mut wall), Pct::of(&mut cpu));
    println!("OS floor: ioctl round trip (ENOTTY) p50 {:.0} ns p99 {:.0} ns; usleep(1) lasts p50 {:.1} us (p99 {:.1} us) and costs {:.1} us of CPU (p50)",
        ioctl.p50, ioctl.p99, wall.p50 / 1e3, wall.p99 / 1e3, cpu.p50 / 1e3);
    write_json("sys", &json!({ "ioctl": ioctl.json(), "usleep1_wall": wall.json(), "usleep1_cpu": cpu.json() }));
}
