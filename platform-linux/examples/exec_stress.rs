//! Many executions on one session through a [`Stream`]: ITERATIONS executions
//! of COPIES copies each (a pattern of its own host -> device, then back to
//! host in COPIES - 1 pieces; one copy: host -> host), up to IN_FLIGHT
//! submitted at once, every byte of every execution checked. Prints the
//! descriptors open and the resident set before and after, and the
//! submit-to-notice times (submit to the execution's callback) and the
//! wall-clock span of the executions.
//!
//! `target/release/nrt-sim driver -- target/release/examples/exec_stress 1000 8 3 4096`

use std::collections::VecDeque;
use std::process::ExitCode;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use nrt_linux::exec::STREAM_DEPTH;
use nrt_linux::session::{Session, SessionConfig};
use nrt_linux::{Exec, Mem, MemKind, Pending, Stream};

/// One in-flight slot's memory: the source, the device copy, the result.
struct Slot {
    src: Mem,
    dev: Mem,
    dst: Mem,
}

fn main() -> ExitCode {
    let args: Vec<u64> = std::env::args().skip(1).map(|a| a.parse().unwrap_or(0)).collect();
    let &[iterations, in_flight, copies, bytes] = args.as_slice() else {
        eprintln!("usage: exec_stress ITERATIONS IN_FLIGHT COPIES BYTES");
        return ExitCode::from(2);
    };
    if in_flight == 0 || bytes == 0 || (copies > 1 && bytes < copies - 1) {
        eprintln!("exec_stress: IN_FLIGHT and BYTES from 1, BYTES at least COPIES - 1");
        return ExitCode::from(2);
    }
    match run(iterations, in_flight as usize, copies, bytes) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(2),
        Err(e) => {
            eprintln!("exec_stress: {e}");
            ExitCode::from(1)
        }
    }
}

/// Execution `i`'s pattern.
fn pattern(i: u64, len: u64) -> Vec<u8> {
    (0..len).map(|b| ((b.wrapping_mul(2_654_435_761) >> 7) ^ i.wrapping_mul(0x9E37) ^ (i >> 8)) as u8).collect()
}

/// The execution of `copies` copies of `slot`'s `bytes`.
fn exec_of(slot: &Slot, copies: u64, bytes: u64) -> Exec {
    let mut e = Exec::new();
    match copies {
        0 => {}
        1 => {
            e.copy(&slot.dst, 0, &slot.src, 0, bytes);
        }
        k => {
            e.copy(&slot.dev, 0, &slot.src, 0, bytes);
            let piece = bytes / (k - 1);
            for j in 0..k - 1 {
                let off = j * piece;
                let len = if j == k - 2 { bytes - off } else { piece };
                e.copy(&slot.dst, off, &slot.dev, off, len);
            }
        }
    }
    e
}

/// Wall-clock milliseconds since the epoch (to compare two processes' spans).
fn unix_ms() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis())
}

/// Descriptors open in this process.
fn fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

/// The resident set, KiB (`VmRSS`).
fn rss_kib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// When an execution's callback ran, set by it.
type Notice = Arc<(Mutex<Option<Instant>>, Condvar)>;

/// A submitted execution: its number, submit time, notice, handle.
type InFlight = (u64, Instant, Notice, Pending);

/// The callback's time: it runs on the worker just after the result is
/// set, so it is waited for, bounded. Waiting for it also waits for the
/// stream to count the execution out, which `Pending::wait` does not (a
/// submit right after that wait may find the stream full at `STREAM_DEPTH`).
fn noticed(n: &Notice) -> Option<Instant> {
    let g = n.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let (g, _) =
        n.1.wait_timeout_while(g, Duration::from_secs(30), |t| t.is_none())
            .unwrap_or_else(std::sync::PoisonError::into_inner);
    *g
}

fn run(iterations: u64, in_flight: usize, copies: u64, bytes: u64) -> Result<bool, Box<dyn std::error::Error>> {
    let session = Session::open_chosen(SessionConfig::from_env()?)?;
    let stream = Stream::new(session);
    let slots: Vec<Slot> = {
        let mut s = stream.session();
        (0..in_flight)
            .map(|_| {
                Ok(Slot {
                    src: s.alloc(MemKind::Host, bytes)?,
                    dev: s.alloc(MemKind::Device, bytes)?,
                    dst: s.alloc(MemKind::Host, bytes)?,
                })
            })
            .collect::<Result<_, nrt_linux::Error>>()?
    };
    let (fds0, rss0) = (fds(), rss_kib());
    let mut queue: VecDeque<InFlight> = VecDeque::new();
    let mut times_us: Vec<u64> = Vec::with_capacity(iterations as usize);
    let (mut bad, mut failed) = (0u64, 0u64);
    let t_all = Instant::now();
    let start_ms = unix_ms();
    let mut finish = |(i, t0, notice, p): InFlight, slots: &[Slot]| {
        let r = p.wait();
        match r.as_ref() {
            Ok(inf) if inf.status.code() == 0 => {}
            Ok(inf) => {
                failed += 1;
                eprintln!(
                    "exec_stress: execution {i}: status {} {}: {:?}",
                    inf.status.code(),
                    inf.status.name(),
                    inf.notes
                );
            }
            Err(e) => {
                failed += 1;
                eprintln!("exec_stress: execution {i}: {e} (status {})", e.status().code());
            }
        }
        match noticed(&notice) {
            Some(t) => times_us.push(t.duration_since(t0).as_micros() as u64),
            None => eprintln!("exec_stress: execution {i}: its callback did not run within 30 s"),
        }
        if copies > 0 {
            let slot = &slots[(i % slots.len() as u64) as usize];
            let mut got = vec![0u8; bytes as usize];
            if slot.dst.read(0, &mut got).is_err() || got != pattern(i, bytes) {
                bad += 1;
                eprintln!("exec_stress: execution {i}: the bytes copied back differ from its pattern");
            }
        }
    };
    for i in 0..iterations {
        if queue.len() >= in_flight {
            let oldest = queue.pop_front().ok_or("no execution in flight")?;
            finish(oldest, &slots);
        }
        let slot = &slots[(i % in_flight as u64) as usize];
        if copies > 0 {
            let p = pattern(i, bytes);
            slot.src.write(0, &p)?;
            slot.dst.write(0, &p.iter().map(|b| !b).collect::<Vec<u8>>())?;
        }
        let notice: Notice = Arc::new((Mutex::new(None), Condvar::new()));
        let n = Arc::clone(&notice);
        let on_done: nrt_linux::exec::Callback = Box::new(move |_| {
            *n.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Instant::now());
            n.1.notify_all();
        });
        let t0 = Instant::now();
        match stream.submit(exec_of(slot, copies, bytes), Some(on_done)) {
            Ok(p) => queue.push_back((i, t0, notice, p)),
            // QueueFull (7) among them: never at IN_FLIGHT <= STREAM_DEPTH.
            Err(e) => return Err(format!("execution {i}: submit: {e} (status {})", e.status().code()).into()),
        }
    }
    while let Some(x) = queue.pop_front() {
        finish(x, &slots);
    }
    let wall = t_all.elapsed();
    let end_ms = unix_ms();
    let (fds1, rss1) = (fds(), rss_kib());
    times_us.sort_unstable();
    let q = |f: f64| times_us.get(((times_us.len() as f64 - 1.0) * f).round() as usize).copied().unwrap_or(0);
    println!(
        "executions {iterations} of {copies} copies of {bytes} bytes, {in_flight} in flight (stream depth {STREAM_DEPTH})"
    );
    println!("checked {iterations} executions: {bad} differ, {failed} failed");
    println!("fds before {fds0} after {fds1}");
    println!("rss_kib before {rss0} after {rss1} growth {}", rss1 as i64 - rss0 as i64);
    println!(
        "submit_to_notice_us n {} median {} p90 {} p99 {} max {}",
        times_us.len(),
        q(0.5),
        q(0.9),
        q(0.99),
        times_us.last().copied().unwrap_or(0)
    );
    println!("span_unix_ms start {start_ms} end {end_ms}");
    println!("wall {:.3} s, {:.0} executions/s", wall.as_secs_f64(), iterations as f64 / wall.as_secs_f64().max(1e-9));
    drop(slots);
    if let Err(errors) = stream.close() {
        for e in errors {
            eprintln!("exec_stress: close: {e}");
        }
        return Ok(false);
    }
    Ok(bad == 0 && failed == 0 && times_us.len() as u64 == iterations)
}
