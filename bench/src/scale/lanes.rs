//! The simulated host: each lane's ring memory, the harvest's view of it, and
//! the device thread that writes each inference's records when it is due.

use super::*;

pub(super) const CORES: usize = 2;

pub(super) const RINGS: usize = CORES * ENGINES_PER_CORE;

pub(super) const RING: u32 = 4096;

pub(super) const SLOTS: usize = RING as usize / 16;

/// The model timeout of the bench's requests, seconds.
pub(super) const BENCH_TIMEOUT_S: u32 = 120;

/// How long the harvest threads may take to finish their last request.
pub(super) const STOP_GRACE: Duration = Duration::from_secs(5);

/// End instants kept per lane, a ring of them indexed by inference number.
pub(super) const ENDS: usize = 1024;

/// One inference in this many is a long outlier.
pub const OUTLIER_EVERY: u64 = 200;

/// A long outlier lasts this many times the work.
pub const OUTLIER_FACTOR: u64 = 4;

/// One lane's memory: 10 rings, their HEAD registers, the END instants, and
/// the harvest's kickoffs: how many, and when the latest was.
pub(super) struct LaneMem {
    pub(super) words: Vec<AtomicU64>,
    pub(super) heads: Vec<AtomicU32>,
    pub(super) end_ns: Vec<AtomicU64>,
    pub(super) kicks: AtomicU64,
    pub(super) kick_ns: AtomicU64,
}

impl LaneMem {
    /// The harvest kicks off the lane's next inference.
    pub(super) fn kick(&self, origin: Instant) {
        self.kick_ns.store(origin.elapsed().as_nanos() as u64, Ordering::Relaxed);
        self.kicks.fetch_add(1, Ordering::Release);
    }
}

impl LaneMem {
    pub(super) fn new() -> LaneMem {
        LaneMem {
            words: (0..RINGS * SLOTS * 2).map(|_| AtomicU64::new(0)).collect(),
            heads: (0..RINGS).map(|_| AtomicU32::new(0)).collect(),
            end_ns: (0..ENDS).map(|_| AtomicU64::new(0)).collect(),
            kicks: AtomicU64::new(0),
            kick_ns: AtomicU64::new(0),
        }
    }
}

pub(super) fn ring_index(core: u8, nq: u8) -> Option<usize> {
    let eng = INFER_STATUS_NQS.iter().position(|&id| id == nq)?;
    (usize::from(core) < CORES).then_some(usize::from(core) * ENGINES_PER_CORE + eng)
}

/// The harvest's view of one lane.
pub(super) struct LaneDev {
    pub(super) mem: Arc<LaneMem>,
    pub(super) origin: Instant,
}

impl ErrorType for LaneDev {
    type Error = ErrorKind;
}

impl hal::NqRings for LaneDev {
    #[inline]
    fn read_slot(&mut self, core: u8, nq: u8, offset: u32, out: &mut [u8; 16]) -> Result<(), ErrorKind> {
        let r = ring_index(core, nq).ok_or(ErrorKind::OutOfRange)?;
        let i = (r * SLOTS + offset as usize / 16) * 2;
        let lo = self.mem.words.get(i).ok_or(ErrorKind::OutOfRange)?.load(Ordering::Acquire);
        let hi = self.mem.words.get(i + 1).ok_or(ErrorKind::OutOfRange)?.load(Ordering::Relaxed);
        out[..8].copy_from_slice(&lo.to_le_bytes());
        out[8..].copy_from_slice(&hi.to_le_bytes());
        Ok(())
    }
    #[inline]
    fn write_head(&mut self, core: u8, nq: u8, head: u32) -> Result<(), ErrorKind> {
        let r = ring_index(core, nq).ok_or(ErrorKind::OutOfRange)?;
        self.mem.heads.get(r).ok_or(ErrorKind::OutOfRange)?.store(head, Ordering::Release);
        Ok(())
    }
}

impl hal::IntcCause for LaneDev {
    fn read_cause(&mut self, _: u8, _: u32, _: u32) -> Result<u32, ErrorKind> {
        Ok(0)
    }
}

impl hal::Clock for LaneDev {
    #[inline]
    fn now_ns(&self) -> u64 {
        self.origin.elapsed().as_nanos() as u64
    }
}

impl hal::CollectivesProxy for LaneDev {}

impl hal::FaultProbe for LaneDev {}

impl<E: Copy + Into<Event>> hal::EventSink<E> for LaneDev {
    fn event(&mut self, _: &E) {}
}

impl nrt_core::counters::CounterSink for LaneDev {}

impl hal::TensorNotify for LaneDev {}

/// The hook that abandons a lane's wait once the bench raises the flag: the
/// device has stopped, so the request would never complete.
pub(super) struct Abort<'a>(pub(super) &'a AtomicBool);

impl<D: ?Sized, W: ?Sized> WaitHooks<D, W> for Abort<'_> {
    fn before_delay(
        &mut self,
        _: &ExecRequest,
        _: &mut D,
        _: &Notifications,
        _: &mut W,
    ) -> std::ops::ControlFlow<NrtStatus> {
        if self.0.load(Ordering::Relaxed) {
            std::ops::ControlFlow::Break(NrtStatus::Invalid)
        } else {
            std::ops::ControlFlow::Continue(())
        }
    }
}

pub(super) fn notifications(head_batching: bool) -> Notifications {
    let mut nq = Notifications::new();
    for c in 0..CORES as u8 {
        for &id in &INFER_STATUS_NQS {
            nq.bind(c, id, RING).expect("bind");
        }
    }
    nq.set_head_batching(head_batching);
    nq
}

/// How long inference `k` of a lane lasts, ns: around `work_ns`, uniform
/// within `jitter_pct` percent, one in [`OUTLIER_EVERY`] [`OUTLIER_FACTOR`]
/// times as long. Each lane draws from its own xorshift stream, the same every run.
pub(super) fn duration_ns(rng: &mut u64, work_ns: u64, jitter_pct: u64) -> u64 {
    *rng ^= *rng << 13;
    *rng ^= *rng >> 7;
    *rng ^= *rng << 17;
    if (*rng).is_multiple_of(OUTLIER_EVERY) {
        return work_ns * OUTLIER_FACTOR;
    }
    let span = work_ns * jitter_pct.min(100) / 100;
    let r = (*rng >> 16) % (2 * span + 1);
    (work_ns + r).saturating_sub(span).max(1)
}

/// The device thread: each lane's inference starts at its kickoff and ends a
/// drawn time later, the first also delayed by the lane's phase. `Sleep`:
/// between writes it sleeps to the earliest due write or to its next look for
/// kickoffs, see [`clock::device_wake_ns`]; `Spin`: it spins. The instant of
/// each inference's last END store is stamped just before that store and
/// published with it, so a late wake-up of the device lengthens the
/// inference, never the notice. Returns the inferences written and the
/// thread's CPU time, ns.
pub(super) fn device(
    lanes: Vec<Arc<LaneMem>>,
    origin: Instant,
    work: Duration,
    jitter_pct: u64,
    stop: Arc<AtomicBool>,
    kind: DeviceKind,
) -> (u64, u64, Vec<f64>) {
    let c0 = thread_cpu_ns();
    let mut late = Vec::new();
    let n = lanes.len();
    let work_ns = work.as_nanos() as u64;
    let deadlines = (kind == DeviceKind::Sleep).then(|| {
        clock::pin_device_thread();
        Deadlines::new(origin)
    });
    let look = clock::look_ns(work_ns, jitter_pct);
    let mut prods: Vec<Vec<NqProducer>> =
        (0..n).map(|_| (0..RINGS).map(|_| NqProducer::new(RING).expect("ring")).collect()).collect();
    let mut rng: Vec<u64> =
        (0..n).map(|l| 0x9E37_79B9_7F4A_7C15 ^ (l as u64 + 1).wrapping_mul(0x2545_F491_4F6C_DD1D)).collect();
    // When the inference running on each lane ends; `None`: not kicked off yet.
    let mut end_at: Vec<Option<u64>> = vec![None; n];
    let mut k = vec![0u64; n];
    let mut written = 0u64;
    while !stop.load(Ordering::Acquire) {
        let now = origin.elapsed().as_nanos() as u64;
        let (mut earliest, mut blocked) = (None::<u64>, false);
        for l in 0..n {
            let mem = &lanes[l];
            if end_at[l].is_none() && mem.kicks.load(Ordering::Acquire) > k[l] {
                let phase = if k[l] == 0 { work_ns * l as u64 / n as u64 } else { 0 };
                let d = duration_ns(&mut rng[l], work_ns, jitter_pct);
                end_at[l] = Some(mem.kick_ns.load(Ordering::Relaxed) + phase + d);
            }
            let Some(at) = end_at[l] else { continue };
            if now < at {
                earliest = Some(earliest.map_or(at, |e| e.min(at)));
                continue;
            }
            let p = &mut prods[l];
            // Room for one START and one END on every ring, or try again later.
            for (r, pr) in p.iter_mut().enumerate() {
                pr.on_head_write(mem.heads[r].load(Ordering::Acquire));
            }
            if p.iter().any(|pr| pr.free() < 2) {
                blocked = true;
                continue;
            }
            for sub in [Subtype::START, Subtype::END] {
                for (r, pr) in p.iter_mut().enumerate() {
                    let id = INFER_STATUS_NQS[r % ENGINES_PER_CORE];
                    // The inference number rides in the timestamp: `k + 1` us.
                    let mut e = RawEntry::new(sub, id, 0, 0, (k[l] + 1) * 1000).to_array();
                    let off = pr.push(&mut e).expect("room checked") as usize / 16;
                    let i = (r * SLOTS + off) * 2;
                    mem.words[i + 1].store(u64::from_le_bytes(e[8..].try_into().expect("8")), Ordering::Relaxed);
                    if sub == Subtype::END && r == RINGS - 1 {
                        // The last record: its write instant, published with it.
                        let t_end = origin.elapsed().as_nanos() as u64;
                        mem.end_ns[(k[l] as usize) % ENDS].store(t_end + 1, Ordering::Relaxed);
                        late.push(t_end.saturating_sub(at) as f64);
                    }
                    mem.words[i].store(u64::from_le_bytes(e[..8].try_into().expect("8")), Ordering::Release);
                }
            }
            written += 1;
            k[l] += 1;
            end_at[l] = None;
        }
        match &deadlines {
            None => std::hint::spin_loop(),
            Some(d) => {
                let now = origin.elapsed().as_nanos() as u64;
                d.sleep_until(clock::device_wake_ns(earliest, blocked, now, look, DEVICE_RETRY_NS));
            }
        }
    }
    (written, thread_cpu_ns() - c0, late)
}

/// A sleeping device with a write blocked by a full ring looks again this
/// soon, ns.
pub(super) const DEVICE_RETRY_NS: u64 = 5_000;

/// The END instant of the inference `req` harvested, or `None` when the
/// request failed and saw no END. The inference number rides in the END
/// timestamp, which FINALIZE turns into microseconds: `k + 1`.
pub(super) fn end_of(mem: &LaneMem, req: &ExecRequest) -> Option<u64> {
    let k = req.engine_times_us(0, 0).1?.checked_sub(1)?;
    // Stored before the records were published.
    let v = mem.end_ns.get((k as usize) % ENDS)?.load(Ordering::Acquire);
    v.checked_sub(1)
}
