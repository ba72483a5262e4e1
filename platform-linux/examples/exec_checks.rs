//! The runtime API's failure paths, one MODE a run, each outcome printed one
//! line a call for `tests/exec.rs` to read:
//!
//! - `copy-fault` (under `nrt-sim driver --fault-copy-data 1`): a host -> host
//!   copy, then an execution of a host -> device and a host -> host copy;
//! - `marker-lost` (under `--fault-copy-marker 1`): an execution of one copy,
//!   a copy on the same session, a copy on a new session;
//! - `callback`: a callback that submits another execution, and
//!   `Pending::wait` on another thread, each bounded (`HANG` if not);
//! - `depth`: [`STREAM_DEPTH`] executions held, then each submitted as soon
//!   as `Pending::wait` on the oldest returns: how many were refused;
//! - `last-in-callback`: a callback that drops the last handle to its stream;
//! - `api`: a `Pending` queued behind a callback that holds the worker, then
//!   run by its own wait: `is_done`, `try_result`, its descriptor,
//!   `in_flight`, `wait_timeout`; then `Mem`'s bounds and refused copies.

use std::process::ExitCode;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nrt_linux::exec::{ExecResult, STREAM_DEPTH};
use nrt_linux::session::{Session, SessionConfig};
use nrt_linux::{Exec, MemKind, Stream};

const BYTES: u64 = 8192;
/// Longest any one wait here may take.
const BOUND: Duration = Duration::from_secs(60);

fn main() -> ExitCode {
    let mode = std::env::args().nth(1).unwrap_or_default();
    let r = match mode.as_str() {
        "copy-fault" => copy_fault(),
        "marker-lost" => marker_lost(),
        "callback" => callback(),
        "depth" => depth(),
        "last-in-callback" => last_in_callback(),
        "api" => api(),
        _ => {
            eprintln!("usage: exec_checks copy-fault | marker-lost | callback | depth | last-in-callback | api");
            return ExitCode::from(2);
        }
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("exec_checks: {e}");
            ExitCode::from(1)
        }
    }
}

fn open() -> Result<Stream, Box<dyn std::error::Error>> {
    Ok(Stream::new(Session::open_chosen(SessionConfig::from_env()?)?))
}

/// One line for a call's outcome.
fn show<T>(what: &str, r: &Result<T, nrt_linux::Error>) {
    match r {
        Ok(_) => println!("{what}: ok"),
        Err(e) => println!("{what}: error status {}: {e}", e.status().code()),
    }
}

/// One line for an execution's result.
fn show_exec(what: &str, r: &ExecResult) {
    match r {
        Ok(i) => println!(
            "{what}: status {} {} kickoff_us {} steps {} copies {} notes {:?}",
            i.status.code(),
            i.status.name(),
            i.kickoff_us,
            i.steps,
            i.copies.len(),
            i.notes
        ),
        Err(e) => println!("{what}: error status {}: {e}", e.status().code()),
    }
}

fn copy_fault() -> Result<(), Box<dyn std::error::Error>> {
    let stream = open()?;
    let (src, dev, dst) = {
        let mut s = stream.session();
        (s.alloc(MemKind::Host, BYTES)?, s.alloc(MemKind::Device, BYTES)?, s.alloc(MemKind::Host, BYTES)?)
    };
    let pattern: Vec<u8> = (0..BYTES).map(|i| (i * 13 + 1) as u8).collect();
    src.write(0, &pattern)?;
    dst.write(0, &vec![0; BYTES as usize])?;
    let r = stream.session().copy(&dst, 0, &src, 0, BYTES);
    show("copy host->host", &r);
    let mut e = Exec::new();
    e.copy(&dev, 0, &src, 0, BYTES).copy(&dst, 0, &src, 0, BYTES);
    let p = stream.submit(e, None)?;
    show_exec("exec host->device, host->host", &p.wait());
    drop((src, dev, dst));
    stream.close().map_err(|e| format!("close: {e:?}"))?;
    Ok(())
}

fn marker_lost() -> Result<(), Box<dyn std::error::Error>> {
    let stream = open()?;
    let (src, dst) = {
        let mut s = stream.session();
        (s.alloc(MemKind::Host, BYTES)?, s.alloc(MemKind::Host, BYTES)?)
    };
    let mut e = Exec::new();
    e.copy(&dst, 0, &src, 0, BYTES);
    let p = stream.submit(e, None)?;
    show_exec("exec host->host", &p.wait());
    show("copy after", &stream.session().copy(&dst, 0, &src, 0, BYTES));
    drop((src, dst));
    // The session is unusable; its close still releases everything.
    stream.close().map_err(|e| format!("close: {e:?}"))?;
    let mut s = Session::open_chosen(SessionConfig::from_env()?)?;
    let (src, dst) = (s.alloc(MemKind::Host, BYTES)?, s.alloc(MemKind::Host, BYTES)?);
    show("copy on a new session", &s.copy(&dst, 0, &src, 0, BYTES));
    drop((src, dst));
    s.close().map_err(|e| format!("close: {e:?}"))?;
    Ok(())
}

fn callback() -> Result<(), Box<dyn std::error::Error>> {
    let stream = Arc::new(Mutex::new(open()?));
    let (src, dev, dst) = {
        let st = stream.lock().map_err(|_| "poisoned")?;
        let mut s = st.session();
        (s.alloc(MemKind::Host, BYTES)?, s.alloc(MemKind::Device, BYTES)?, s.alloc(MemKind::Host, BYTES)?)
    };
    let pattern: Vec<u8> = (0..BYTES).map(|i| (i * 5 + 3) as u8).collect();
    src.write(0, &pattern)?;
    dst.write(0, &vec![0; BYTES as usize])?;
    let mut first = Exec::new();
    first.copy(&dev, 0, &src, 0, BYTES);
    let mut second = Exec::new();
    second.copy(&dst, 0, &dev, 0, BYTES);
    // The callback submits the second execution and hands its handle over.
    let (tx, rx) = mpsc::channel();
    let inner = Arc::clone(&stream);
    let on_done: nrt_linux::exec::Callback = Box::new(move |r| {
        show_exec("first (in its callback)", r);
        let submitted = inner
            .lock()
            .map_err(|_| ())
            .and_then(|s| s.submit(second, None).map_err(|e| show("submit in callback", &Err::<(), _>(e))));
        let _ = tx.send(submitted);
    });
    let p1 = stream.lock().map_err(|_| "poisoned")?.submit(first, Some(on_done))?;
    let p2 = match rx.recv_timeout(BOUND) {
        Ok(Ok(p)) => p,
        Ok(Err(())) => return Err("the callback's submit failed".into()),
        Err(_) => {
            println!("HANG: the callback did not submit within {} s", BOUND.as_secs());
            std::process::exit(3);
        }
    };
    // Both waited from another thread each.
    let (wtx, wrx) = mpsc::channel();
    for (name, p) in [("first", p1), ("second", p2)] {
        let wtx = wtx.clone();
        std::thread::spawn(move || {
            let r = p.wait();
            let _ = wtx.send((name, r));
        });
    }
    for _ in 0..2 {
        match wrx.recv_timeout(BOUND) {
            Ok((name, r)) => show_exec(&format!("{name} (waited on another thread)"), &r),
            Err(_) => {
                println!("HANG: Pending::wait on another thread did not return within {} s", BOUND.as_secs());
                std::process::exit(3);
            }
        }
    }
    let mut got = vec![0u8; BYTES as usize];
    dst.read(0, &mut got)?;
    println!("bytes {}", if got == pattern { "match" } else { "DIFFER" });
    drop((src, dev, dst));
    let stream = Arc::into_inner(stream).ok_or("the stream is still shared")?;
    stream.into_inner().map_err(|_| "poisoned")?.close().map_err(|e| format!("close: {e:?}"))?;
    Ok(())
}

fn depth() -> Result<(), Box<dyn std::error::Error>> {
    let stream = open()?;
    let mut held = std::collections::VecDeque::new();
    let (mut submitted, mut refused) = (0u32, 0u32);
    for _ in 0..STREAM_DEPTH + 200 {
        if held.len() >= STREAM_DEPTH {
            let oldest: nrt_linux::Pending = held.pop_front().ok_or("none held")?;
            let _ = oldest.wait();
        }
        match stream.submit(Exec::new(), None) {
            Ok(p) => {
                submitted += 1;
                held.push_back(p);
            }
            Err(e) => {
                refused += 1;
                println!("refused after {submitted}: status {}: {e}", e.status().code());
                break;
            }
        }
    }
    println!("depth {STREAM_DEPTH}: submitted {submitted} refused {refused}");
    drop(held);
    stream.close().map_err(|e| format!("close: {e:?}"))?;
    Ok(())
}

fn last_in_callback() -> Result<(), Box<dyn std::error::Error>> {
    let stream = Arc::new(Mutex::new(open()?));
    let inner = Arc::clone(&stream);
    let (tx, rx) = mpsc::channel::<()>();
    let on_done: nrt_linux::exec::Callback = Box::new(move |r| {
        // Holds on until the caller has dropped its handle.
        let _ = rx.recv_timeout(BOUND);
        show_exec("in the callback", r);
        drop(inner);
    });
    let p = stream.lock().map_err(|_| "poisoned")?.submit(Exec::new(), Some(on_done))?;
    drop(stream);
    let _ = tx.send(());
    show_exec("waited", &p.wait());
    // The worker's end (its drop of the stream) is not waited for by any handle: a bounded pause.
    std::thread::sleep(Duration::from_millis(500));
    println!("done");
    Ok(())
}

/// Whether `fd` polls readable now.
fn readable(fd: std::os::fd::RawFd) -> bool {
    let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd, no wait.
    unsafe { libc::poll(&mut p, 1, 0) == 1 && p.revents & libc::POLLIN != 0 }
}

fn api() -> Result<(), Box<dyn std::error::Error>> {
    let stream = open()?;
    let (entered_tx, entered) = mpsc::channel();
    let (release, release_rx) = mpsc::channel::<()>();
    let hold: nrt_linux::exec::Callback = Box::new(move |_| {
        let _ = entered_tx.send(());
        let _ = release_rx.recv_timeout(BOUND);
    });
    let p1 = stream.submit(Exec::new(), Some(hold))?;
    entered.recv_timeout(BOUND).map_err(|_| "the first execution's callback never ran")?;
    let p2 = stream.submit(Exec::new(), None)?;
    let fd = p2.fd()?;
    println!("first done: {}", p1.is_done());
    println!("queued in flight: {}", stream.in_flight());
    println!("queued done: {}", p2.is_done());
    println!("queued result: {}", p2.try_result().is_some());
    println!("queued fd readable: {}", readable(fd));
    println!("queued fd stable: {}", p2.fd()? == fd);
    // The worker is held: this wait runs the queued execution itself.
    let r = p2.wait_timeout(BOUND).ok_or("the queued execution did not finish")?;
    show_exec("queued, waited while the worker is held", &r);
    release.send(()).map_err(|_| "the callback is gone")?;
    println!("done: {}", p2.is_done());
    println!("done result: {}", p2.try_result().is_some_and(|r| r.is_ok()));
    println!("done fd readable: {}", readable(fd));
    println!("done in flight: {}", stream.in_flight());
    println!("done wait_timeout 0: {}", p2.wait_timeout(Duration::ZERO).is_some());
    let late = stream.submit(Exec::new(), None)?;
    println!("late fd readable before: {}", late.try_result().is_some() || !readable(late.fd()?));
    println!("late wait: {}", late.wait().as_ref().as_ref().map(|i| i.status.code()).unwrap_or(u32::MAX));
    println!("late fd readable after: {}", readable(late.fd()?));
    let host = stream.alloc(MemKind::Host, 100)?;
    let dev = stream.alloc(MemKind::Device, 100)?;
    println!("host: {} {} bytes", host.kind().name(), host.size());
    println!("device: {} {} bytes, mapped {}", dev.kind().name(), dev.size(), dev.host_bytes().is_some());
    println!("addresses differ: {}", host.device_address() != dev.device_address());
    show("write to the end", &host.write(96, &[1, 2, 3, 4]));
    show("write past the end", &host.write(97, &[1, 2, 3, 4]));
    let mut four = [0u8; 4];
    show("read to the end", &host.read(96, &mut four));
    println!("read back: {four:?}");
    show("read past the end", &host.read(u64::MAX, &mut four));
    show("read device memory", &dev.read(0, &mut four));
    show("alloc 0 bytes", &stream.alloc(MemKind::Host, 0));
    show("alloc 2^63 bytes", &stream.alloc(MemKind::Device, 1 << 63));
    show("alloc 2^63 - 1 bytes", &stream.alloc(MemKind::Device, i64::MAX as u64));
    show("copy onto itself", &stream.session().copy(&host, 10, &host, 0, 20));
    show("copy past the end", &stream.session().copy(&dev, 90, &host, 0, 20));
    show("copy 0 bytes", &stream.session().copy(&dev, 0, &host, 0, 0));
    show("copy host to device", &stream.session().copy(&dev, 0, &host, 0, 100));
    drop((host, dev));
    match stream.close() {
        Ok(()) => println!("close: ok"),
        Err(e) => println!("close: {} errors: {:?}", e.len(), e.iter().map(ToString::to_string).collect::<Vec<_>>()),
    }
    Ok(())
}
