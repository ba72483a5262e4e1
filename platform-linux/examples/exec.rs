//! A runtime's own work through the library: host and device memory, a
//! pattern copied host -> device -> host by an execution, the execution's
//! descriptor waited with `poll`, the bytes checked, each engine's times.
//!
//! Run it under the simulated driver:
//! `cargo build --release -p nrt-linux --example exec -p nrt-sim &&
//!  target/release/nrt-sim driver -- target/release/examples/exec`

use std::process::ExitCode;

use nrt_core::arch::ENGINES_PER_CORE;
use nrt_linux::session::{Session, SessionConfig};
use nrt_linux::{Exec, MemKind, Stream};

const BYTES: u64 = 96 * 1024;

fn main() -> ExitCode {
    match run() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("exec: {e}");
            ExitCode::from(1)
        }
    }
}

fn run() -> Result<ExitCode, Box<dyn std::error::Error>> {
    let session = Session::open_chosen(SessionConfig::from_env()?)?;
    let stream = Stream::new(session);
    let (src, dev, back) = {
        let mut s = stream.session();
        (s.alloc(MemKind::Host, BYTES)?, s.alloc(MemKind::Device, BYTES)?, s.alloc(MemKind::Host, BYTES)?)
    };
    let pattern: Vec<u8> = (0..BYTES).map(|i| (i * 7 + i / 251) as u8).collect();
    src.write(0, &pattern)?;
    back.write(0, &vec![0; BYTES as usize])?;
    let mut exec = Exec::new();
    exec.copy(&dev, 0, &src, 0, BYTES).copy(&back, 0, &dev, 0, BYTES / 2).copy(
        &back,
        BYTES / 2,
        &dev,
        BYTES / 2,
        BYTES / 2,
    );
    let pending = stream.submit(exec, None)?;
    let mut p = libc::pollfd { fd: pending.fd(), events: libc::POLLIN, revents: 0 };
    // Bounded: the execution ends within its copies' budgets and the session's timeout.
    let timeout_ms = 1000 * (stream.session().timeout_s() as i32 + 30);
    // SAFETY: one valid pollfd.
    let ready = unsafe { libc::poll(&mut p, 1, timeout_ms) };
    if ready != 1 {
        return Err(format!("the execution's descriptor was not readable within {timeout_ms} ms").into());
    }
    let result = pending.wait();
    let r = match result.as_ref() {
        Ok(r) => r,
        Err(e) => return Err(format!("the execution: {e} (status {})", e.status().code()).into()),
    };
    let mut got = vec![0u8; BYTES as usize];
    back.read(0, &mut got)?;
    let same = got == pattern;
    println!("status {} {}", r.status.code(), r.status.name());
    println!("copies {} bytes host -> device -> host: {}", BYTES, if same { "match" } else { "DIFFER" });
    for core in 0..stream.session().cores() {
        for eng in 0..ENGINES_PER_CORE {
            let (start, end) = r.request.engine_times_us(usize::from(core), eng);
            println!("core {core} engine {eng}: start {start:?} us, end {end:?} us");
        }
    }
    drop((src, dev, back));
    if let Err(errors) = stream.close() {
        for e in errors {
            eprintln!("exec: close: {e}");
        }
        return Ok(ExitCode::from(1));
    }
    Ok(if same && r.status.code() == 0 { ExitCode::SUCCESS } else { ExitCode::from(2) })
}
