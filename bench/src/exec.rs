//! The runtime API's own cost: an execution of no copies, the kickoff and the
//! harvest alone, submitted through a `Stream` and waited on its `Pending`,
//! which adds the queue and a wait that runs what it finds idle. It is set
//! against the same execution run by `Session::execute` on the calling thread,
//! on the same session, alternating, in one run. Needs a device: run it under
//! the simulated driver, `nrt-sim driver -- nrt-bench exec`.

use std::time::Instant;

use nrt_linux::session::{Session, SessionConfig};
use nrt_linux::{Exec, Stream};
use serde_json::json;

use crate::{write_json, Pct};

/// Rounds run first and not counted.
const WARM_UP: usize = 20;

pub fn run(rounds: usize) {
    let cfg = SessionConfig::from_env().unwrap_or_else(|e| fail(&e.to_string()));
    let session = Session::open_chosen(cfg).unwrap_or_else(|e| fail(&e.to_string()));
    let stream = Stream::new(session);
    let exec = Exec::new();
    let (mut public, mut internal) = (Vec::with_capacity(rounds), Vec::with_capacity(rounds));
    for i in 0..WARM_UP + rounds {
        let t = Instant::now();
        let p = stream.submit(exec.clone(), None).unwrap_or_else(|e| fail(&e.to_string()));
        let r = p.wait();
        let a = t.elapsed().as_nanos() as f64;
        check(&r);
        let t = Instant::now();
        let r = stream.session().execute(&exec);
        let b = t.elapsed().as_nanos() as f64;
        check(&r);
        if i >= WARM_UP {
            public.push(a);
            internal.push(b);
        }
    }
    let _ = stream.close();
    // Each round's two paths back to back: their difference, paired.
    let mut diff: Vec<f64> = public.iter().zip(&internal).map(|(a, b)| a - b).collect();
    let d = Pct::of(&mut diff);
    let (p, q) = (Pct::of(&mut public), Pct::of(&mut internal));
    let ratio = p.p50 / q.p50;
    println!(
        "exec round trip, {rounds} rounds, 0 copies: Stream::submit + Pending::wait p50 {:.1} us (p99 {:.1} us), \
         Session::execute p50 {:.1} us (p99 {:.1} us): ratio {ratio:.3}; paired difference p50 {:.1} us",
        p.p50 / 1e3,
        p.p99 / 1e3,
        q.p50 / 1e3,
        q.p99 / 1e3,
        d.p50 / 1e3
    );
    write_json(
        "exec",
        &json!({ "rounds": rounds, "copies": 0, "submit_wait": p.json(), "execute": q.json(), "ratio_p50": ratio,
            "paired_difference": d.json() }),
    );
}

fn check(r: &nrt_linux::exec::ExecResult) {
    match r {
        Ok(i) if i.status.code() == 0 => {}
        Ok(i) => fail(&format!("an execution ended with status {}", i.status.code())),
        Err(e) => fail(&e.to_string()),
    }
}

fn fail(why: &str) -> ! {
    eprintln!("nrt-bench exec: {why} (run it under `nrt-sim driver -- nrt-bench exec`)");
    std::process::exit(1);
}
