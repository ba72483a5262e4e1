//! The threads that harvest: a poll group under a wait policy, and the bare
//! readers that are its floors.

use super::*;

/// One poller: a core `PollGroup` over `block`, each lane kicked off again as
/// soon as its request completes, making due-first passes and waiting between
/// them as `nrt_linux::poller` does for `pcfg.policy`.
pub(super) fn poller(
    block: Vec<Arc<LaneMem>>,
    origin: Instant,
    cfg: ExecConfig,
    pcfg: PollerConfig,
    stop: &AtomicBool,
) -> Out {
    if let Some(cpu) = pcfg.cpu {
        let _ = pin_current_thread(cpu);
    }
    if pcfg.policy == WaitPolicy::Hybrid {
        set_timer_slack_1ns();
    }
    let (c0, v0) = (thread_cpu_ns(), preemptions());
    let mut out = Out::default();
    struct Block(Vec<(LaneDev, Notifications)>);
    impl Lanes for Block {
        type Dev = LaneDev;
        fn lane(&mut self, lane: u16) -> Option<(&mut LaneDev, &mut Notifications)> {
            self.0.get_mut(usize::from(lane)).map(|(d, n)| (d, n))
        }
    }
    let now = || origin.elapsed().as_nanos() as u64;
    let mut lanes =
        Block(block.iter().map(|m| (LaneDev { mem: Arc::clone(m), origin }, notifications(true))).collect());
    let mut group: Box<PollGroup<128>> = Box::new(PollGroup::new());
    group.set_schedule(pcfg.schedule());
    for (l, m) in block.iter().enumerate() {
        group.insert(l as u16, cfg, 0).expect("room in the group");
        m.kick(origin);
    }
    let mut k = vec![0u64; block.len()];
    let mut reqs: Vec<ExecRequest> = vec![ExecRequest::new(cfg); block.len()];
    let (mut lat, mut ok, mut bad) = (Vec::new(), 0u64, 0u64);
    // Each completion with its instant: `nrt_linux::poller` answers its
    // waiter in this callback, so that is the notice.
    let mut done: Vec<(u16, Step, u64)> = Vec::with_capacity(128);
    let mut last_event = Instant::now();
    while !stop.load(Ordering::Acquire) {
        done.clear();
        let pass_ns = now();
        let pass = group.poll_due(&mut lanes, pass_ns, |c, r| {
            done.push((c.lane, c.step, now()));
            if let Some(slot) = reqs.get_mut(usize::from(c.lane)) {
                *slot = r.clone();
            }
        });
        let pass_end = now();
        out.passes += 1;
        out.looks += pass.stepped as u64;
        out.pass_ns += pass_end - pass_ns;
        if !done.is_empty() {
            for &(lane, step, seen) in &done {
                let l = usize::from(lane);
                if let Some(end) = reqs.get(l).and_then(|r| end_of(&block[l], r)) {
                    lat.push(seen.saturating_sub(end) as f64);
                    out.in_pass.push((seen - pass_ns) as f64);
                }
                k[l] += 1;
                if step == Step::Done(NrtStatus::Success) {
                    ok += 1;
                } else {
                    bad += 1;
                }
                let _ = group.insert(lane, cfg, k[l]);
                block[l].kick(origin);
            }
            last_event = Instant::now();
            continue;
        }
        match pcfg.policy {
            WaitPolicy::Spin => {
                let quiet = last_event.elapsed();
                if quiet < pcfg.spin_for {
                    for _ in 0..4 {
                        std::hint::spin_loop();
                    }
                } else if quiet < pcfg.yield_for {
                    std::thread::yield_now();
                } else {
                    let t = now();
                    std::thread::sleep(Duration::from_micros(u64::from(pcfg.sleep_us.max(1))));
                    out.sleeps += 1;
                    out.sleep_ns += now() - t;
                }
            }
            WaitPolicy::Sleep => {
                let t = now();
                std::thread::sleep(Duration::from_micros(u64::from(pcfg.sleep_us.max(1))));
                let slept = now() - t;
                out.sleeps += 1;
                out.sleep_ns += slept;
                out.overshoot.push(slept.saturating_sub(u64::from(pcfg.sleep_us.max(1)) * 1000) as f64);
            }
            WaitPolicy::Hybrid => {
                let mut w = BenchWaiter { origin, stop, sleeps: 0, sleep_ns: 0, overshoot: Vec::new() };
                let _ = hybrid_wait_for_pass(&pcfg, group.earliest_due_ns(), pass_ns, &mut w);
                out.sleeps += w.sleeps;
                out.sleep_ns += w.sleep_ns;
                out.overshoot.append(&mut w.overshoot);
            }
        }
    }
    if std::env::var_os("NRT_BENCH_DEBUG").is_some() {
        eprintln!("estimates: {:?}", (0..block.len().min(4)).map(|l| group.estimate(l as u16)).collect::<Vec<_>>());
    }
    Out { lat, cpu_ns: thread_cpu_ns() - c0, ok, bad, preempted: preemptions() - v0, ..out }
}

/// What one harvest thread measured.
#[derive(Default)]
pub(super) struct Out {
    /// Notice latencies, ns.
    pub(super) lat: Vec<f64>,
    /// From the start of the pass that saw each completion to its notice, ns.
    pub(super) in_pass: Vec<f64>,
    pub(super) cpu_ns: u64,
    pub(super) ok: u64,
    pub(super) bad: u64,
    pub(super) passes: u64,
    /// Requests stepped, or lanes looked at, over all passes.
    pub(super) looks: u64,
    pub(super) sleeps: u64,
    /// Involuntary context switches.
    pub(super) preempted: u64,
    /// Wall time in passes and asleep, ns.
    pub(super) pass_ns: u64,
    pub(super) sleep_ns: u64,
    /// Each sleep's overshoot, ns.
    pub(super) overshoot: Vec<f64>,
}

/// The calling thread's involuntary context switches so far: the times the
/// scheduler took its CPU away.
#[allow(unsafe_code)]
pub(super) fn preemptions() -> u64 {
    // SAFETY: an all-zero rusage is a valid value to be overwritten.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid out-pointer to a local rusage.
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } != 0 {
        return 0;
    }
    ru.ru_nivcsw as u64
}

/// A bare reader over every lane, the floor a poller is measured against. Per
/// lane it looks at the one slot where the next END of the lane's last ring
/// lands: two loads against the record it expects, from a shadow of the
/// device's producer. On seeing it, it takes the notice, hands every ring's
/// HEAD back and kicks the lane off again. Nothing else: no request, no group,
/// no estimate. With `slice` it sleeps to one slice after each sweep's start,
/// on an absolute deadline with 1 ns timer slack, instead of spinning.
pub(super) fn bare_reader(
    lanes: Vec<Arc<LaneMem>>,
    origin: Instant,
    slice: Option<Duration>,
    stop: &AtomicBool,
) -> Out {
    let (c0, v0) = (thread_cpu_ns(), preemptions());
    let mut out = Out::default();
    let deadlines = slice.map(|_| Deadlines::new(origin));
    let slice_ns = slice.map_or(0, |s| s.as_nanos() as u64);
    let n = lanes.len();
    let mut shadow: Vec<NqProducer> = (0..n).map(|_| NqProducer::new(RING).expect("ring")).collect();
    let mut k = vec![0u64; n];
    let mut expect: Vec<(usize, u64, u64)> = shadow.iter_mut().map(|p| next_end(p, 0)).collect();
    for m in &lanes {
        m.kick(origin);
    }
    let (mut lat, mut ok) = (Vec::new(), 0u64);
    while !stop.load(Ordering::Acquire) {
        let sweep_ns = origin.elapsed().as_nanos() as u64;
        for l in 0..n {
            let (i, lo, hi) = expect[l];
            let mem = &lanes[l];
            if mem.words[i].load(Ordering::Acquire) != lo || mem.words[i + 1].load(Ordering::Relaxed) != hi {
                continue;
            }
            let seen = origin.elapsed().as_nanos() as u64;
            // Stored before the record was published.
            if let Some(end) = mem.end_ns[(k[l] as usize) % ENDS].load(Ordering::Acquire).checked_sub(1) {
                lat.push(seen.saturating_sub(end) as f64);
                out.in_pass.push((seen - sweep_ns) as f64);
            }
            ok += 1;
            k[l] += 1;
            // Every ring moved by one START and one END.
            let head = ((2 * k[l] * 16) % u64::from(RING)) as u32;
            for h in &mem.heads {
                h.store(head, Ordering::Release);
            }
            shadow[l].on_head_write(head);
            expect[l] = next_end(&mut shadow[l], k[l]);
            mem.kick(origin);
        }
        let t = origin.elapsed().as_nanos() as u64;
        out.passes += 1;
        out.looks += n as u64;
        out.pass_ns += t - sweep_ns;
        match &deadlines {
            None => std::hint::spin_loop(),
            Some(d) => {
                d.sleep_until(sweep_ns + slice_ns);
                let woke = origin.elapsed().as_nanos() as u64;
                out.sleeps += 1;
                out.sleep_ns += woke - t;
                out.overshoot.push(woke.saturating_sub(sweep_ns + slice_ns) as f64);
            }
        }
    }
    Out { lat, cpu_ns: thread_cpu_ns() - c0, ok, bad: 0, preempted: preemptions() - v0, ..out }
}

/// Where inference `k`'s END lands on a lane's last ring and its two words,
/// lo and hi, from the shadow of that ring's producer: its START, then its END.
pub(super) fn next_end(shadow: &mut NqProducer, k: u64) -> (usize, u64, u64) {
    let id = INFER_STATUS_NQS[(RINGS - 1) % ENGINES_PER_CORE];
    let mut start = RawEntry::new(Subtype::START, id, 0, 0, (k + 1) * 1000).to_array();
    let _ = shadow.push(&mut start);
    let mut e = RawEntry::new(Subtype::END, id, 0, 0, (k + 1) * 1000).to_array();
    let off = shadow.push(&mut e).expect("the reader hands every slot back") as usize / 16;
    let w = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("8"));
    (((RINGS - 1) * SLOTS + off) * 2, w(&e[..8]), w(&e[8..]))
}

/// The bench poller's [`HybridWaiter`]: the poller thread's waits, on its clock
/// with `thread::sleep`, ended early only by the run's end.
pub(super) struct BenchWaiter<'a> {
    pub(super) origin: Instant,
    pub(super) stop: &'a AtomicBool,
    /// Sleeps made, their wall time and each one's overshoot, ns.
    pub(super) sleeps: u64,
    pub(super) sleep_ns: u64,
    pub(super) overshoot: Vec<f64>,
}

impl HybridWaiter for BenchWaiter<'_> {
    fn now_ns(&mut self) -> u64 {
        self.origin.elapsed().as_nanos() as u64
    }
    fn sleep_ns(&mut self, ns: u64) {
        let t = Instant::now();
        std::thread::sleep(Duration::from_nanos(ns));
        let slept = t.elapsed().as_nanos() as u64;
        self.sleeps += 1;
        self.sleep_ns += slept;
        self.overshoot.push(slept.saturating_sub(ns) as f64);
    }
    fn spin(&mut self) {
        std::hint::spin_loop();
    }
    fn interrupted(&mut self) -> bool {
        self.stop.load(Ordering::Acquire)
    }
}
