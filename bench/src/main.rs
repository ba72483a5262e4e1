//! `nrt-bench`: the measurements criterion cannot make, because they need two
//! threads and a real clock.
//!
//! ```text
//! nrt-bench latency [--inferences N] [--work-us U] [--device sleep|spin]
//!                                                     completion-notice latency, libnrt vs adaptive delay
//! nrt-bench ring [--records N]                       NQ ring transfer between threads vs rtrb
//! nrt-bench xu [--secs S]                            XU submit-to-complete round trip and requests/s
//! nrt-bench sys                                      the OS floor: an ioctl round trip, usleep(1)
//! nrt-bench exec [--rounds N]                        an execution of 0 copies: Stream::submit + Pending::wait vs
//!                                                     Session::execute, under `nrt-sim driver -- nrt-bench exec`
//! nrt-bench scale [--devices 16] [--cores-per-device 4] [--secs S] [--work-us U] [--jitter-pct J] [--sweep] [--cpu N]
//!                 [--notice-us B] [--slice-us S] [--device sleep|spin]
//!                                                     a host's logical cores: libnrt threads vs adaptive threads vs poll
//!                                                     groups: spin / hybrid / sleep, 1, 2, 4 pollers; --sweep: U = 100 us,
//!                                                     1 ms, 10 ms; at 1 ms also the bare readers' floors and the slice sweep
//! nrt-bench all [--inferences N] [--secs S]          latency, ring, xu, sys, and scale: 16 x 4, S s per shape
//! ```
//!
//! The simulated device thread sleeps to each due write by default; with
//! `--device spin` it spins, taking a CPU from the host.
//!
//! Each prints a summary and writes `target/nrt-bench/<name>.json`, which `cargo
//! xtask bench` folds into BENCHMARKS.md. Ratios are between two measurements
//! of the same run.

use std::path::PathBuf;
use std::time::Instant;

mod clock;
mod exec;
mod latency;
mod ring;
mod scale;
mod sys;
mod xu;

/// Percentiles of a sample, in nanoseconds.
#[derive(Clone, Copy, Debug)]
pub struct Pct {
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
    pub mean: f64,
}

impl Pct {
    pub fn of(v: &mut [f64]) -> Pct {
        v.sort_by(|a, b| a.total_cmp(b));
        let at = |q: f64| v.get(((v.len() as f64 - 1.0) * q).round() as usize).copied().unwrap_or(f64::NAN);
        let mean = if v.is_empty() { f64::NAN } else { v.iter().sum::<f64>() / v.len() as f64 };
        Pct { p50: at(0.5), p99: at(0.99), max: v.last().copied().unwrap_or(f64::NAN), mean }
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({ "p50_ns": self.p50, "p99_ns": self.p99, "max_ns": self.max, "mean_ns": self.mean })
    }
}

/// Thread CPU time, nanoseconds.
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid out-pointer to a local timespec.
    #[allow(unsafe_code)]
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0;
    }
    (ts.tv_sec as u64).saturating_mul(1_000_000_000).saturating_add(ts.tv_nsec as u64)
}

/// Spin until `d` has passed, the device "working".
pub fn spin_for(d: std::time::Duration) {
    let t = Instant::now();
    while t.elapsed() < d {
        std::hint::spin_loop();
    }
}

fn out_dir() -> PathBuf {
    let d = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/nrt-bench");
    let _ = std::fs::create_dir_all(&d);
    d
}

pub fn write_json(name: &str, v: &serde_json::Value) {
    let p = out_dir().join(format!("{name}.json"));
    match serde_json::to_string_pretty(v) {
        Ok(s) => {
            if let Err(e) = std::fs::write(&p, s) {
                eprintln!("could not write {}: {e}", p.display());
            }
        }
        Err(e) => eprintln!("could not serialise {name}: {e}"),
    }
}

fn arg<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> T {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// `--device sleep|spin`, exiting on another value.
fn device_arg(args: &[String]) -> clock::DeviceKind {
    let v = args.iter().position(|a| a == "--device").and_then(|i| args.get(i + 1)).map(String::as_str);
    clock::DeviceKind::from_arg(v).unwrap_or_else(|| {
        eprintln!("--device takes sleep or spin");
        std::process::exit(2);
    })
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("latency") => {
            latency::run(arg(&args, "--inferences", 10_000), arg(&args, "--work-us", 20), device_arg(&args))
        }
        Some("ring") => ring::run(arg(&args, "--records", 4_000_000)),
        Some("xu") => xu::run(arg(&args, "--secs", 1.0)),
        Some("sys") => sys::run(),
        Some("exec") => exec::run(arg(&args, "--rounds", 1000usize).max(1)),
        Some("scale") => scale::run(
            scale::Setup {
                devices: arg(&args, "--devices", 16usize).clamp(1, 64),
                cores_per_device: arg(&args, "--cores-per-device", 4usize).clamp(1, 8),
                secs: arg(&args, "--secs", 2.0f64).clamp(0.1, 600.0),
                jitter: arg(&args, "--jitter-pct", 10u64).min(100),
                device: device_arg(&args),
            },
            arg(&args, "--work-us", 1000u64).max(1),
            args.iter().any(|a| a == "--sweep"),
            {
                // Each flag's default is the poller's own.
                let d = nrt_linux::poller::PollerConfig::default();
                let us = |flag: &str, default: std::time::Duration| {
                    std::time::Duration::from_micros(arg(&args, flag, default.as_micros() as u64))
                };
                nrt_linux::poller::PollerConfig {
                    cpu: args.iter().any(|a| a == "--cpu").then(|| arg(&args, "--cpu", 0usize)),
                    notice_bound: us("--notice-us", d.notice_bound),
                    hybrid_slice: args
                        .iter()
                        .any(|a| a == "--slice-us")
                        .then(|| us("--slice-us", std::time::Duration::from_nanos(d.hybrid_slice_ns())))
                        .or(d.hybrid_slice),
                    ..d
                }
            },
        ),
        Some("all") => {
            latency::run(arg(&args, "--inferences", 10_000), 20, device_arg(&args));
            ring::run(4_000_000);
            xu::run(1.0);
            sys::run();
            // A 16-device host, each harvest shape in turn.
            let setup = scale::Setup {
                devices: 16,
                cores_per_device: 4,
                secs: arg(&args, "--secs", 2.0f64).clamp(0.1, 600.0),
                jitter: 10,
                device: device_arg(&args),
            };
            scale::run(setup, 1000, false, nrt_linux::poller::PollerConfig::default());
        }
        _ => {
            eprintln!("usage: nrt-bench latency|ring|xu|sys|exec|scale|all [options]");
            std::process::exit(2);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Pct;

    #[test]
    fn percentiles_are_the_nearest_rank_of_the_sorted_sample() {
        let mut v: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        let p = Pct::of(&mut v);
        assert_eq!((p.p50, p.p99, p.max, p.mean), (51.0, 99.0, 100.0, 50.5));
        let p = Pct::of(&mut [7.0]);
        assert_eq!((p.p50, p.p99, p.max), (7.0, 7.0, 7.0), "one sample is every percentile");
        let p = Pct::of(&mut []);
        assert!(p.p50.is_nan() && p.p99.is_nan() && p.max.is_nan(), "no sample: no figure, not 0");
    }
}
