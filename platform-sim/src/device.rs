//! The device's behaviour: the sequencer that runs the engines' programs, the NQ
//! producers, the INTC, the collectives peers and the DMA engine.
//!
//! [`Device`] owns nothing the host reads directly: it reads its inputs from and
//! writes its outputs to [`Shared`] (registers and memory), exactly as hardware
//! would. One [`Device::step`] at time `now`:
//!
//! 0. resets each core the driver reset (`NC_RESET`: the core's reset
//!    generation moved, [`Shared::reset_requested`]) to a fresh device's
//!    state, and acknowledges it;
//! 1. samples its inputs: the top-SP host trigger (arms the sequencers), the kickoff
//!    semaphore of each core (starts that core's programs at `now`, and schedules
//!    its collectives barrier), the UDMA tail increments (descriptors to process);
//! 2. samples every HEAD latch once, so the room it sees in each ring is fixed for
//!    the whole step (a burst in one instant either fits or does not);
//! 3. runs every scheduled action due at or before `now`, in time order.
//!
//! Records go through nrt-core's [`NqProducer`]: stamped with the lap's phase at
//! the device's write cursor, or, when the ring is full up to the HEAD the host
//! wrote back, dropped with INTC cause bit 29 (line 61 of the core's error-trigger
//! block) raised.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use nrt_core::arch::MAX_CORES;
use nrt_core::dma::bd::{next_ring_id, LenCtrl, BD_SIZE, INITIAL_RING_ID};
use nrt_core::dma::doorbell::HOST_TRIGGER_VALUE;
use nrt_core::exec::{INTC_SW_NQ_OVERFLOW_BIT, INTC_SW_NQ_OVERFLOW_LINE};
use nrt_core::nq::ring::NqProducer;

use crate::fault::Fault;
use crate::layout::{NQ_PER_CORE, SIM_UDMA_ENGINE};
use crate::program::{self, Action, Fate, Label, ProgramSpec};
use crate::shared::{Shared, UDMA_QUEUES};
use crate::shm::Line;

/// Latency of the DMA engine per descriptor pair, ns.
pub const DMA_NS_PER_DESC: u64 = 500;

/// Most notes the device log keeps.
pub const MAX_NOTES: usize = 64;

pub use nrt_abi::report::{DeviceStats, Note};

#[derive(Clone, Copy, Debug)]
struct QueueState {
    head: u32,
    ring_id: u8,
    avail: u32,
}

/// The simulated device.
#[derive(Debug)]
pub struct Device {
    shared: Arc<Shared>,
    spec: ProgramSpec,
    cores: u8,
    producers: Vec<Option<NqProducer>>,
    applied: Vec<u32>,
    full_noted: Vec<bool>,
    sched: BTreeMap<(u64, u64), Action>,
    seq: u64,
    /// Each core's sequencers armed (by the host trigger, or from the start).
    armed: [bool; MAX_CORES],
    /// Armed without the host trigger ([`Device::arm`]): a reset core stays armed.
    arm_free: bool,
    /// The reset generation of each core the device last acted on.
    reset_seen: [u32; MAX_CORES],
    /// Each core's kickoff taken and not yet played out (see [`Device::step`]).
    started: [bool; MAX_CORES],
    /// Scheduled actions of each core still to run.
    pending: [u32; MAX_CORES],
    /// Cores played out since the last inference was counted (bit `c`: core `c`).
    played: u8,
    queues: [Vec<QueueState>; 2],
    notes: Vec<Note>,
    notes_dropped: u32,
    stats: DeviceStats,
    /// Clear the core's per-inference lines when its next kickoff is taken.
    clear_at_kickoff: [bool; MAX_CORES],
    /// Scheduled actions run so far (with `seq` and `armed`: whether a step did anything).
    executed: u64,
    /// Kickoffs of each core that play the faults ([`Device::faults_for_kickoffs`]; `None`: all).
    fault_kickoffs: Option<u32>,
    /// Kickoffs taken by each core.
    kickoffs: [u32; MAX_CORES],
    /// The spec without its faults, played once a core is past `fault_kickoffs`.
    healthy: ProgramSpec,
}

/// The deterministic mode's quantum: how far the virtual clock jumps when the
/// device has nothing scheduled (see the crate docs).
pub const QUANTUM_NS: u64 = 1_000_000;

impl Device {
    /// A device over `shared` for a logical core of `cores` physical cores.
    pub fn new(shared: Arc<Shared>, spec: ProgramSpec, cores: u8) -> Device {
        let size = shared.ring_bytes();
        let producers = (0..MAX_CORES * NQ_PER_CORE).map(|_| NqProducer::new(size).ok()).collect();
        let q = QueueState { head: 0, ring_id: INITIAL_RING_ID, avail: 0 };
        set_fault_lines(&shared, &spec, None);
        Device {
            shared,
            cores: cores.clamp(1, MAX_CORES as u8),
            producers,
            applied: vec![0; MAX_CORES * NQ_PER_CORE],
            full_noted: vec![false; MAX_CORES * NQ_PER_CORE],
            sched: BTreeMap::new(),
            seq: 0,
            armed: [false; MAX_CORES],
            arm_free: false,
            reset_seen: [0; MAX_CORES],
            started: [false; MAX_CORES],
            pending: [0; MAX_CORES],
            played: 0,
            queues: [vec![q; UDMA_QUEUES], vec![q; UDMA_QUEUES]],
            notes: Vec::new(),
            notes_dropped: 0,
            stats: DeviceStats::default(),
            clear_at_kickoff: [false; MAX_CORES],
            executed: 0,
            fault_kickoffs: None,
            kickoffs: [0; MAX_CORES],
            healthy: ProgramSpec { faults: Vec::new(), ..spec.clone() },
            spec,
        }
    }

    /// Play the faults for each core's first `n` kickoffs only: later
    /// kickoffs play the healthy programs, and a reset after them sets no
    /// fault line (a device that misbehaves for the first process only).
    pub fn faults_for_kickoffs(&mut self, n: u32) {
        self.fault_kickoffs = Some(n);
    }

    /// The spec core `c`'s next kickoff plays.
    fn spec_for(&self, c: usize) -> &ProgramSpec {
        let next = self.kickoffs.get(c).copied().unwrap_or(0).saturating_add(1);
        if self.fault_kickoffs.is_some_and(|n| next > n) {
            &self.healthy
        } else {
            &self.spec
        }
    }

    /// The device log.
    pub fn notes(&self) -> &[Note] {
        &self.notes
    }

    /// Notes that did not fit the log.
    pub fn notes_dropped(&self) -> u32 {
        self.notes_dropped
    }

    /// What the device did.
    pub fn stats(&self) -> &DeviceStats {
        &self.stats
    }

    /// The shared hardware state.
    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Take the device log written so far (and the count of notes that did not fit).
    pub fn take_notes(&mut self) -> (Vec<Note>, u32) {
        (std::mem::take(&mut self.notes), std::mem::replace(&mut self.notes_dropped, 0))
    }

    /// Cores whose kickoff was taken and whose programs are still playing.
    pub fn cores_started(&self) -> u8 {
        self.started.iter().take(usize::from(self.cores)).filter(|s| **s).count() as u8
    }

    /// Whether an inference was played since the last call that said so: some
    /// core was kicked off and played out since, and nothing is left
    /// scheduled (so no core is still playing: a core still playing has
    /// actions scheduled, else the step re-armed it). A core plays out, and re-arms on its own,
    /// when nothing of its programs is left ([`Device::step`]); an inference
    /// is every core kicked off until the device is quiet again: both cores of
    /// a two-core session (kicked off together, the first done only after the
    /// second started: the programs run for tens of microseconds), the one
    /// core of a session on part of the device. Once true, false until another
    /// core has played out.
    pub fn take_inference_played(&mut self) -> bool {
        if self.played == 0 || !self.sched.is_empty() {
            return false;
        }
        self.played = 0;
        true
    }

    /// Arm the sequencers without the top-SP host trigger: a host on a real
    /// driver cannot write it, since no public source names its block
    /// (`nrt_abi::devmap::Unknown::HostTrigger`, G-DRV-TRIGGER).
    pub fn arm(&mut self) {
        self.arm_free = true;
        self.armed = [true; MAX_CORES];
    }

    /// Step 0: each core whose reset generation moved since the last step
    /// is reset ([`Device::reset_core`]) and the generation acknowledged.
    fn apply_resets(&mut self, now: u64) {
        for core in 0..MAX_CORES as u8 {
            let generation = self.shared.reset_requested(core);
            let seen = self.reset_seen.get_mut(usize::from(core));
            if seen.as_deref() == Some(&generation) || seen.is_none() {
                continue;
            }
            if let Some(s) = seen {
                *s = generation;
            }
            self.reset_core(now, core);
            self.shared.acknowledge_reset(core, generation);
        }
    }

    /// `core` as a freshly reset device has it: nothing of its programs
    /// scheduled, not kicked off, disarmed (unless armed without the host
    /// trigger; the trigger word is cleared), its NQ producers back at the
    /// start of their rings, the rings' memory, HEAD registers, INTC cause
    /// registers, semaphores and per-inference lines zero, the scenario's
    /// proxy-failure lines set again.
    fn reset_core(&mut self, now: u64, core: u8) {
        let c = usize::from(core);
        self.sched.retain(|_, a| action_core(a) != Some(core));
        for flag in [self.started.get_mut(c), self.clear_at_kickoff.get_mut(c)].into_iter().flatten() {
            *flag = false;
        }
        if let Some(n) = self.pending.get_mut(c) {
            *n = 0;
        }
        if let Some(a) = self.armed.get_mut(c) {
            *a = self.arm_free;
        }
        self.played &= !(1u8 << (c % 8));
        let sh = Arc::clone(&self.shared);
        if !self.arm_free {
            sh.host_trigger().store(0, Ordering::Release);
        }
        sh.clear_core(core);
        set_fault_lines(&sh, self.spec_for(c), Some(core));
        let size = sh.ring_bytes();
        for nq in 0..NQ_PER_CORE as u8 {
            let i = c * NQ_PER_CORE + usize::from(nq);
            if let Some(p) = self.producers.get_mut(i) {
                *p = NqProducer::new(size).ok();
            }
            if let Some(f) = self.full_noted.get_mut(i) {
                *f = false;
            }
            let consumed = sh.head(core, nq).map_or(0, |h| h.consumed.load(Ordering::Acquire));
            if let Some(a) = self.applied.get_mut(i) {
                *a = consumed;
            }
        }
        self.note(now, format!("core {core}: reset (NC_RESET): programs, rings, kickoff and lines fresh"));
    }

    /// Re-arm every core now (the host run, which kicks the next inference
    /// off as soon as its host harvested the last, whatever is left
    /// scheduled): the next kickoff of each core starts its programs again.
    /// A core re-arms on its own once played out ([`Device::step`]); this
    /// does it for the cores still playing too.
    pub fn rearm(&mut self) {
        for core in 0..MAX_CORES {
            self.rearm_core(core);
        }
    }

    /// Re-arm `core` for its next kickoff. Its per-inference lines (barrier
    /// done, HBM, DMA abort, its INTC cause lines) are cleared when that
    /// kickoff is taken, not now: the host may still be harvesting (and
    /// reading them) until then.
    fn rearm_core(&mut self, core: usize) {
        if let (Some(s), Some(c)) = (self.started.get_mut(core), self.clear_at_kickoff.get_mut(core)) {
            *s = false;
            *c = true;
        }
    }

    /// Re-arm each core that was kicked off and has nothing left scheduled,
    /// independently of the other core, and count it as played.
    fn rearm_played_cores(&mut self) {
        for core in 0..MAX_CORES {
            let played_out =
                self.started.get(core).copied().unwrap_or(false) && self.pending.get(core).copied().unwrap_or(0) == 0;
            if played_out {
                self.rearm_core(core);
                self.played |= 1 << core;
            }
        }
    }

    fn clear_inference_lines(&mut self, core: u8) {
        let sh = Arc::clone(&self.shared);
        for line in [Line::BarrierDone, Line::Hbm, Line::DmaAbort] {
            sh.set_line(line, core, 0);
        }
        for block in 0..crate::layout::INTC_BLOCKS {
            for l in 0..crate::layout::INTC_LINES {
                if let Some(off) = crate::layout::intc_cause_offset(sh.arch(), core, block, l) {
                    let _ = sh.bar_write(off, 0);
                }
            }
        }
    }

    /// The time of the next scheduled action.
    pub fn next_event_ns(&self) -> Option<u64> {
        self.sched.keys().next().map(|k| k.0)
    }

    fn note(&mut self, t_ns: u64, text: String) {
        if self.notes.len() < MAX_NOTES {
            self.notes.push(Note { t_ns, text });
        } else {
            self.notes_dropped = self.notes_dropped.saturating_add(1);
        }
    }

    fn schedule(&mut self, t: u64, action: Action) {
        self.seq += 1;
        if let Some(n) = action_core(&action).and_then(|c| self.pending.get_mut(usize::from(c))) {
            *n += 1;
        }
        self.sched.insert((t, self.seq), action);
    }

    /// One device step at CPU time `now` (see the module docs); at its end,
    /// each core kicked off with nothing of its own left scheduled has played
    /// its kickoff out and re-arms for its next one, whatever the other core
    /// is doing ([`Device::take_inference_played`] counts the inferences).
    pub fn step(&mut self, now: u64) {
        self.apply_resets(now);
        self.sample_inputs(now);
        self.sync_heads();
        // Each pass removes one action: bounded by the schedule's size.
        while let Some(entry) = self.sched.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let ((t, _), action) = entry.remove_entry();
            self.executed += 1;
            if let Some(n) = action_core(&action).and_then(|c| self.pending.get_mut(usize::from(c))) {
                *n = n.saturating_sub(1);
            }
            self.execute(t, action);
        }
        self.rearm_played_cores();
    }

    /// Deterministic mode: let `us` microseconds of virtual time pass. Steps at the
    /// current time (to see what the host wrote), then advances the clock to
    /// `now + us` when something is due by then, else straight to the next
    /// scheduled action or by [`QUANTUM_NS`], whichever is sooner, and steps again.
    pub fn advance_virtual(&mut self, us: u32) {
        self.advance_virtual_until(us, None);
    }

    /// [`Device::advance_virtual`] for a host that knows when it next acts on its
    /// own. `host_deadline_ns` is given only when the host's last step changed
    /// nothing: then its next step, over the same inputs, would change nothing
    /// either until its deadline (a timeout or a warning threshold of its clock).
    /// If this device's step at `now` does nothing as well (no input taken, no
    /// action run), nothing can happen before the sooner of the next scheduled
    /// action and that deadline, and the clock jumps straight there. Otherwise,
    /// or for a deadline not after `now`, the quantum applies as before.
    pub fn advance_virtual_until(&mut self, us: u32, host_deadline_ns: Option<u64>) {
        let now = self.shared.vclock_ns.load(Ordering::Acquire);
        let before = (self.seq, self.armed, self.executed);
        self.step(now);
        let idle = before == (self.seq, self.armed, self.executed);
        let target = now.saturating_add(u64::from(us) * 1_000);
        let horizon = host_deadline_ns.filter(|&d| idle && d > now);
        let next = match (self.next_event_ns(), horizon) {
            (Some(t), _) if t <= target => target,
            (Some(t), Some(h)) => t.min(h).max(target),
            (None, Some(h)) => h.max(target),
            (Some(t), None) => t.min(now.saturating_add(QUANTUM_NS)).max(target),
            (None, None) => now.saturating_add(QUANTUM_NS).max(target),
        };
        self.shared.vclock_ns.store(next, Ordering::Release);
        self.step(next);
    }

    /// Threaded mode: run on this thread against the real clock until
    /// [`Shared::stop`] is set, then hand the device back (for its log).
    pub fn run_threaded(mut self, origin: std::time::Instant) -> Device {
        while !self.shared.stop.load(Ordering::Acquire) {
            let now = u64::try_from(origin.elapsed().as_nanos()).unwrap_or(u64::MAX);
            self.step(now);
            match self.next_event_ns() {
                Some(t) if t <= now.saturating_add(200_000) => std::thread::yield_now(),
                _ => std::thread::sleep(std::time::Duration::from_micros(20)),
            }
        }
        self
    }

    fn sample_inputs(&mut self, now: u64) {
        let sh = Arc::clone(&self.shared);
        let cores = usize::from(self.cores);
        if self.armed.iter().take(cores).any(|a| !a) && sh.host_trigger().load(Ordering::Acquire) == HOST_TRIGGER_VALUE
        {
            for a in self.armed.iter_mut().take(cores) {
                *a = true;
            }
            self.note(now, "top-SP host trigger set: sequencers armed".into());
        }
        for core in 0..self.cores {
            let c = usize::from(core);
            if !self.armed.get(c).copied().unwrap_or(false) || self.started.get(c).copied().unwrap_or(true) {
                continue;
            }
            let Ok(sema) = sh.sema(u32::from(core), u32::from(core)) else { continue };
            if sema.load(Ordering::Acquire) == 0 {
                continue;
            }
            sema.fetch_sub(1, Ordering::AcqRel);
            if self.clear_at_kickoff.get_mut(c).is_some_and(std::mem::take) {
                self.clear_inference_lines(core);
            }
            if let Some(s) = self.started.get_mut(c) {
                *s = true;
            }
            self.note(now, format!("core {core}: kickoff semaphore {core} taken; engines start"));
            let spec = self.spec_for(c).clone();
            if let Some(k) = self.kickoffs.get_mut(c) {
                *k = k.saturating_add(1);
            }
            for it in program::core_program(&spec, core, now) {
                self.schedule(it.t, it.action);
            }
            let delay_s = spec.faults.iter().find_map(|f| match f {
                Fault::BarrierDelay { secs } => Some(*secs),
                _ => None,
            });
            let clear = now.saturating_add(u64::from(delay_s.unwrap_or(0)) * 1_000_000_000);
            self.schedule(clear, Action::BarrierClear { core });
        }
        for dir in 0..2 {
            for q in 0..UDMA_QUEUES {
                let Some(bank) = sh.queues.get(dir).and_then(|d| d.get(q)) else { continue };
                let n = bank.tail_inc_pending.swap(0, Ordering::AcqRel);
                if n == 0 {
                    continue;
                }
                if let Some(st) = self.queues.get_mut(dir).and_then(|d| d.get_mut(q)) {
                    st.avail = st.avail.saturating_add(n);
                }
                bank.tail.fetch_add(n, Ordering::AcqRel);
                self.schedule(now + DMA_NS_PER_DESC * u64::from(n), Action::DmaRun { queue: q });
            }
        }
    }

    /// Apply the HEAD latches to the producers (exactly, in steps below a lap).
    fn sync_heads(&mut self) {
        let sh = Arc::clone(&self.shared);
        for core in 0..MAX_CORES as u8 {
            for nq in 0..NQ_PER_CORE as u8 {
                let i = usize::from(core) * NQ_PER_CORE + usize::from(nq);
                if !sh.head_latched() {
                    // A file: sample the HEAD word (exact below a full lap, see crate::shm).
                    if let (Some(Some(p)), Ok(head)) = (self.producers.get_mut(i), sh.head_value(core, nq)) {
                        p.on_head_write(head & (p.size_bytes() - 1));
                    }
                    continue;
                }
                let (Some(Some(p)), Some(applied), Ok(h)) =
                    (self.producers.get_mut(i), self.applied.get_mut(i), sh.head(core, nq))
                else {
                    continue;
                };
                let total = h.consumed.load(Ordering::Acquire);
                let size = p.size_bytes();
                // A host cannot hand back more than was written: at most two steps.
                let mut delta = total.wrapping_sub(*applied).min(p.pending().saturating_mul(16));
                while delta > 0 {
                    let step = delta.min(size - 16);
                    *applied = applied.wrapping_add(step);
                    p.on_head_write(*applied & (size - 1));
                    delta -= step;
                }
                *applied = total;
            }
        }
    }

    fn raise_overflow(&self, core: u8) {
        // Block = the core's TPB index (G-ERRTRIG); line 61, bit 29 (seed §5).
        self.shared.raise_intc(core, u32::from(core), INTC_SW_NQ_OVERFLOW_LINE, 1 << INTC_SW_NQ_OVERFLOW_BIT);
    }

    fn execute(&mut self, t: u64, action: Action) {
        match action {
            Action::Record { core, nq, mut entry, fate, label } => {
                let what = describe(core, nq, label);
                match fate {
                    Fate::Drop { overflow } => {
                        self.stats.records_dropped += 1;
                        if overflow {
                            self.raise_overflow(core);
                        }
                        let bit = if overflow { "; INTC cause bit 29 raised" } else { "" };
                        self.note(t, format!("{what} dropped (injected){bit}"));
                    }
                    Fate::Write => self.write_record(t, core, nq, &mut entry, &what),
                }
            }
            Action::RaiseOverflow { core } => {
                self.raise_overflow(core);
                self.note(t, format!("core {core}: INTC cause bit 29 raised (injected)"));
            }
            Action::BarrierClear { core } => {
                self.shared.set_line(Line::BarrierDone, core, 1);
                if t > 0 && self.spec.faults.iter().any(|f| matches!(f, Fault::BarrierDelay { .. })) {
                    self.note(t, format!("core {core}: collectives barrier cleared"));
                }
            }
            Action::Hbm { core, status } => {
                self.shared.set_line(Line::Hbm, core, status);
                self.note(t, format!("core {core}: HBM uncorrectable error ({status}); engines stall"));
            }
            Action::DmaRun { queue } => self.dma_run(t, queue),
        }
    }

    fn write_record(&mut self, t: u64, core: u8, nq: u8, entry: &mut [u8; 16], what: &str) {
        let i = usize::from(core) * NQ_PER_CORE + usize::from(nq);
        let pushed = match self.producers.get_mut(i) {
            Some(Some(p)) => p.push(entry),
            _ => {
                self.note(t, format!("{what}: no such ring"));
                return;
            }
        };
        match pushed {
            Some(off) => match self.shared.ring(core, nq).and_then(|r| r.publish(off, entry)) {
                Ok(()) => self.stats.records_written += 1,
                Err(e) => self.note(t, format!("{what}: ring write failed ({e:?})")),
            },
            None => {
                self.stats.records_dropped += 1;
                self.stats.ring_full_drops += 1;
                self.raise_overflow(core);
                if let Some(flag) = self.full_noted.get_mut(i) {
                    if !*flag {
                        *flag = true;
                        self.note(
                            t,
                            format!("{what}: ring full up to HEAD: dropped (and later ones); INTC cause bit 29 raised"),
                        );
                    }
                }
            }
        }
    }

    /// The DMA engine: pair each available M2S descriptor with the next S2M one,
    /// copy, advance both heads (ring id +1 mod 4 at each wrap).
    fn dma_run(&mut self, t: u64, queue: usize) {
        let sh = Arc::clone(&self.shared);
        let pairs = match (self.queues[0].get(queue), self.queues[1].get(queue)) {
            (Some(tx), Some(rx)) => tx.avail.min(rx.avail),
            _ => return,
        };
        let mut done = 0u32;
        let mut error = None;
        for _ in 0..pairs {
            match self.dma_one(&sh, queue) {
                Ok(()) => done += 1,
                Err(e) => {
                    error = Some(e);
                    break;
                }
            }
        }
        self.stats.dma_descriptors += u64::from(done);
        if let Some(e) = error {
            sh.set_line(Line::DmaAbort, 0, 1);
            for d in 0..2 {
                if let Some(st) = self.queues[d].get_mut(queue) {
                    st.avail = 0;
                }
            }
            self.note(t, format!("UDMA {SIM_UDMA_ENGINE} queue {queue}: abort: {e}"));
        } else if done > 0 {
            self.note(t, format!("UDMA {SIM_UDMA_ENGINE} queue {queue}: {done} descriptor pair(s) copied"));
        }
    }

    fn dma_one(&mut self, sh: &Shared, queue: usize) -> Result<(), String> {
        let mut bds = [(0u64, 0u32, LenCtrl::new()); 2];
        for (dir, slot) in bds.iter_mut().enumerate() {
            let bank = sh.queues.get(dir).and_then(|d| d.get(queue)).ok_or("no queue")?;
            let st = self.queues.get(dir).and_then(|d| d.get(queue)).ok_or("no queue")?;
            let base = u64::from(bank.base_lo.load(Ordering::Acquire))
                | (u64::from(bank.base_hi.load(Ordering::Acquire)) << 32);
            let len = bank.len.load(Ordering::Acquire);
            if len == 0 || st.head >= len {
                return Err(format!("ring length {len} with head {}", st.head));
            }
            let mut raw = [0u8; BD_SIZE];
            sh.dram_read(base + u64::from(st.head) * BD_SIZE as u64, &mut raw)
                .map_err(|e| format!("descriptor read failed ({e:?})"))?;
            let ctrl = LenCtrl::from_bits(u32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]]));
            let mut ptr = [0u8; 8];
            ptr.copy_from_slice(&raw[8..16]);
            if ctrl.ring_id() != st.ring_id {
                return Err(format!(
                    "ring id {} where {} was expected (prefetch ring-id error)",
                    ctrl.ring_id(),
                    st.ring_id
                ));
            }
            *slot = (u64::from_le_bytes(ptr), len, ctrl);
        }
        let [(src, _, tx), (dst, _, rx)] = bds;
        let n = tx.len_bytes().min(rx.len_bytes()) as usize;
        let mut buf = vec![0u8; n];
        sh.dram_read(src, &mut buf).map_err(|e| format!("read of 0x{src:x} failed ({e:?})"))?;
        sh.dram_write(dst, &buf).map_err(|e| format!("write of 0x{dst:x} failed ({e:?})"))?;
        for (dir, (_, len, _)) in bds.iter().enumerate() {
            let bank = sh.queues.get(dir).and_then(|d| d.get(queue)).ok_or("no queue")?;
            let st = self.queues.get_mut(dir).and_then(|d| d.get_mut(queue)).ok_or("no queue")?;
            st.head += 1;
            if st.head >= *len {
                st.head = 0;
                st.ring_id = next_ring_id(st.ring_id);
            }
            st.avail = st.avail.saturating_sub(1);
            bank.head.store(st.head | (u32::from(st.ring_id) << 30), Ordering::Release);
        }
        Ok(())
    }
}

/// The scenario's host-side proxy failures, as status lines (set before
/// anything runs, and again at a reset of their core): of every core, or of `only`.
fn set_fault_lines(shared: &Shared, spec: &ProgramSpec, only: Option<u8>) {
    for f in &spec.faults {
        let (line, core, status) = match *f {
            Fault::BarrierFail { core } => (Line::BarrierFail, core, 1200),
            Fault::NetproxyFail { core } => (Line::NetproxyFail, core, 1206),
            _ => continue,
        };
        if only.is_none_or(|c| c == core) {
            shared.set_line(line, core, status);
        }
    }
}

/// The core a scheduled action belongs to (`None`: the DMA engine's, shared).
fn action_core(action: &Action) -> Option<u8> {
    match *action {
        Action::Record { core, .. }
        | Action::RaiseOverflow { core }
        | Action::BarrierClear { core }
        | Action::Hbm { core, .. } => Some(core),
        Action::DmaRun { .. } => None,
    }
}

fn describe(core: u8, nq: u8, label: Label) -> String {
    match label {
        Label::Infer(engine, what) => format!("core {core} {} NQ {nq}: {what}", engine.name()),
        Label::Error(class) => format!("core {core} error ring: {class} record"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::{self, udma};
    use nrt_core::arch::Arch;
    use nrt_core::dma::{Bd, Direction, UdmaLayout};

    const RING: u64 = layout::RING_BACKING_BASE;
    const DEPTH: u32 = 2;
    const LEN: u32 = 64;

    /// A device with no programs, and the staging queue's bank offsets ([M2S, S2M]).
    fn rig() -> (Device, [u64; 2]) {
        let shared = Arc::new(Shared::new(Arch::Sunda, 64 * layout::ENTRY_BYTES));
        let spec = ProgramSpec { arch: Arch::Sunda, ring_entries: 64, seed: 0, faults: vec![], extras: vec![] };
        let map = UdmaLayout::of(Arch::Sunda);
        let banks = [Direction::Tx, Direction::Rx]
            .map(|d| layout::sim_udma_base(Arch::Sunda) + map.block_offset(d) + map.queue_offset(0).unwrap());
        for (k, bank) in banks.iter().enumerate() {
            let ring = RING + k as u64 * 0x100;
            shared.bar_write(bank + udma::RING_BASE_LO, ring as u32).unwrap();
            shared.bar_write(bank + udma::RING_BASE_HI, 0).unwrap();
            shared.bar_write(bank + udma::RING_LEN, DEPTH).unwrap();
        }
        (Device::new(shared, spec, 1), banks)
    }

    /// Write slot `slot` of both rings: TX reads `src + 64 * seq`, RX writes `dst +
    /// 64 * seq`, each BD carrying `ring_id`.
    fn put(dev: &Device, slot: u32, seq: u64, ring_id: u8) {
        for (k, base) in [layout::COPY_SRC_ADDR, layout::COPY_DST_ADDR].into_iter().enumerate() {
            let bd = Bd::new(LenCtrl::new().with_length(LEN as u16).with_ring_id(ring_id), 0, base + seq * 64);
            let mut raw = [0u8; BD_SIZE];
            raw[..4].copy_from_slice(&bd.len_ctrl.get().to_le_bytes());
            raw[8..].copy_from_slice(&bd.addr().to_le_bytes());
            let at = RING + k as u64 * 0x100 + u64::from(slot) * BD_SIZE as u64;
            dev.shared().dram_write(at, &raw).unwrap();
        }
    }

    /// Ring both tail increments by `n` (S2M first) and let the engine run.
    fn ring(dev: &mut Device, banks: [u64; 2], n: u32, now: &mut u64) {
        for bank in [banks[1], banks[0]] {
            dev.shared().bar_write(bank + udma::TAIL_PTR_INC, n).unwrap();
        }
        dev.step(*now);
        *now += 1_000_000;
        dev.step(*now);
    }

    fn aborted(dev: &Device) -> bool {
        dev.shared().get_line(Line::DmaAbort, 0) != 0
    }

    fn fill_src(dev: &Device) -> Vec<u8> {
        let src: Vec<u8> = (0..256u32).map(|i| (i * 7 + 1) as u8).collect();
        dev.shared().dram_write(layout::COPY_SRC_ADDR, &src).unwrap();
        src
    }

    fn dst(dev: &Device, n: usize) -> Vec<u8> {
        let mut out = vec![0u8; n];
        dev.shared().dram_read(layout::COPY_DST_ADDR, &mut out).unwrap();
        out
    }

    /// [`Device::rearm`] re-arms a core still playing: its next kickoff is
    /// taken at once (the host run's), where the core alone would wait until
    /// its programs are played out.
    #[test]
    fn rearm_takes_the_next_kickoff_of_a_core_still_playing() {
        let mut dev = two_cores();
        kick(&mut dev, 0, 0);
        kick(&mut dev, 0, 1_000);
        assert_eq!(kickoffs(&dev), [(0, 0)], "the second waits while core 0 plays");
        dev.rearm();
        assert_eq!(dev.cores_started(), 0);
        dev.step(2_000);
        assert_eq!(kickoffs(&dev), [(0, 0), (0, 2_000)], "taken once re-armed");
    }

    /// `faults_for_kickoffs(n)`: a core's first `n` kickoffs play the faults
    /// (a hang drops the engine's END: one action fewer), the later ones the
    /// healthy programs; each core counts its own kickoffs.
    #[test]
    fn faults_play_for_each_cores_first_kickoffs_only() {
        let hang = vec![Fault::Hang { core: 0, engine: nrt_core::nq::Engine::Pe }];
        let scheduled_at_first_kick = |limit: Option<u32>| {
            let mut dev = two_cores();
            dev.spec.faults.clone_from(&hang);
            if let Some(n) = limit {
                dev.faults_for_kickoffs(n);
            }
            kick(&mut dev, 0, 0);
            (dev.sched.len(), dev)
        };
        let (healthy, _) = scheduled_at_first_kick(Some(0));
        let (faulty, mut dev) = scheduled_at_first_kick(Some(1));
        assert_eq!(faulty + 1, healthy, "the hang's END is not scheduled");
        assert!(dev.spec_for(0).faults.is_empty(), "core 0's second kickoff plays the healthy device");
        assert_eq!(dev.spec_for(1).faults, hang, "core 1 has not been kicked off");
        dev.faults_for_kickoffs(2);
        assert_eq!(dev.spec_for(0).faults, hang);
        let (always, dev) = scheduled_at_first_kick(None);
        assert_eq!(always, faulty);
        assert_eq!(dev.spec_for(0).faults, hang, "without a limit every kickoff plays the faults");
    }

    /// A two-core device with the default programs, its host trigger set.
    fn two_cores() -> Device {
        let shared = Arc::new(Shared::new(Arch::Sunda, 64 * layout::ENTRY_BYTES));
        let spec = ProgramSpec { arch: Arch::Sunda, ring_entries: 64, seed: 7, faults: vec![], extras: vec![] };
        shared.host_trigger().store(HOST_TRIGGER_VALUE, Ordering::Release);
        Device::new(shared, spec, 2)
    }

    /// Kick `core` off at `now` (its kickoff semaphore, as the host writes it).
    fn kick(dev: &mut Device, core: u8, now: u64) {
        dev.shared().sema(u32::from(core), u32::from(core)).unwrap().fetch_add(1, Ordering::AcqRel);
        dev.step(now);
    }

    /// The kickoffs the device took, as `(core, time)`.
    fn kickoffs(dev: &Device) -> Vec<(u8, u64)> {
        dev.notes()
            .iter()
            .filter(|n| n.text.contains("kickoff semaphore"))
            .map(|n| (n.text.as_bytes()[5] - b'0', n.t_ns))
            .collect()
    }

    /// Without the host trigger a kickoff is not taken, unless the device was
    /// armed for a host on a real driver, which cannot write it.
    #[test]
    fn a_device_armed_for_a_real_driver_takes_kickoffs_without_the_trigger() {
        let spec = ProgramSpec { arch: Arch::Sunda, ring_entries: 64, seed: 7, faults: vec![], extras: vec![] };
        for armed in [false, true] {
            let shared = Arc::new(Shared::new(Arch::Sunda, 64 * layout::ENTRY_BYTES));
            let mut dev = Device::new(shared, spec.clone(), 2);
            if armed {
                dev.arm();
            }
            kick(&mut dev, 0, 0);
            assert_eq!(dev.cores_started(), u8::from(armed), "armed {armed}: {:?}", dev.notes());
        }
    }

    /// Step from `from` in 1 ms steps until an inference was played (at most
    /// 1 s of device time: the programs last under 1 ms); the time it was.
    fn play_out(dev: &mut Device, from: u64) -> Option<u64> {
        (1..=1_000u64).map(|k| from + k * 1_000_000).find(|&t| {
            dev.step(t);
            dev.take_inference_played()
        })
    }

    /// On the two-core device, a host on core 1 only gets each of its
    /// kickoffs played: core 1 re-arms once its programs are played out, the
    /// other core never kicked off; each is one inference.
    #[test]
    fn a_core_kicked_off_alone_re_arms_for_each_of_its_kickoffs() {
        for core in [0u8, 1] {
            let mut dev = two_cores();
            let mut now = 0;
            for k in 1..=3u64 {
                kick(&mut dev, core, now);
                assert_eq!(dev.cores_started(), 1, "core {core}, kickoff {k}: taken");
                now = play_out(&mut dev, now).unwrap_or_else(|| panic!("core {core}, kickoff {k} not played"));
                assert_eq!(dev.cores_started(), 0, "core {core}: re-armed");
                assert_eq!(kickoffs(&dev).len() as u64, k, "core {core}: {:?}", dev.notes());
            }
            assert!(kickoffs(&dev).iter().all(|(c, _)| *c == core), "{:?}", dev.notes());
            assert!(!dev.take_inference_played(), "counted once each");
        }
    }

    /// A two-core device that played one inference on both cores and was left
    /// with an HBM line set on each (1201 on core 0, 1205 on core 1).
    fn played_with_hbm_lines() -> Device {
        let mut dev = two_cores();
        kick(&mut dev, 0, 0);
        kick(&mut dev, 1, 0);
        assert!(play_out(&mut dev, 0).is_some());
        dev.shared().set_line(Line::Hbm, 0, 1201);
        dev.shared().set_line(Line::Hbm, 1, 1205);
        dev
    }

    /// A core that has played out re-arms while the other is still playing:
    /// its next kickoff starts at once, not when the other is done. Each
    /// core's per-inference lines are cleared at its own next kickoff, not at
    /// the other core's.
    #[test]
    fn a_played_out_core_re_arms_while_the_other_is_playing() {
        let mut dev = played_with_hbm_lines();
        let t0 = 10_000_000;
        for core in [0, 1] {
            dev.shared().sema(core, core).unwrap().fetch_add(1, Ordering::AcqRel);
        }
        dev.step(t0);
        assert_eq!(dev.cores_started(), 2);
        assert_eq!((dev.shared().get_line(Line::Hbm, 0), dev.shared().get_line(Line::Hbm, 1)), (0, 0));
        // 1 us steps (1 s at most) until one core is done and the other still plays.
        let t = (1..=1_000_000u64).map(|i| t0 + i * 1_000).find(|&t| {
            dev.step(t);
            dev.cores_started() == 1
        });
        let t = t.expect("one core finished before the other (seed 7)");
        // The core not still playing.
        let done = u8::from(dev.started[0]);
        assert!(!dev.started[usize::from(done)], "core {done} is the one done");
        dev.shared().set_line(Line::Hbm, 1 - done, 1201);
        kick(&mut dev, done, t);
        assert_eq!(dev.cores_started(), 2, "core {done}'s next kickoff taken while core {} plays", 1 - done);
        assert_eq!(kickoffs(&dev).last(), Some(&(done, t)));
        assert_eq!(dev.shared().get_line(Line::Hbm, 1 - done), 1201, "the playing core's line untouched");
        assert!(!dev.take_inference_played(), "both still playing");
        assert!(play_out(&mut dev, t).is_some());
        assert_eq!(dev.cores_started(), 0);
    }

    /// Core 1's lines stay until core 1's own kickoff: a kickoff of core 0
    /// clears only core 0's.
    #[test]
    fn a_kickoff_clears_only_its_cores_lines() {
        let mut dev = played_with_hbm_lines();
        kick(&mut dev, 0, 10_000_000);
        assert_eq!((dev.shared().get_line(Line::Hbm, 0), dev.shared().get_line(Line::Hbm, 1)), (0, 1205));
        kick(&mut dev, 1, 10_001_000);
        assert_eq!(dev.shared().get_line(Line::Hbm, 1), 0);
    }

    /// Both cores kicked off together play one inference, counted once both
    /// are played out and nothing is left scheduled, as the serve loop counts
    /// it; then both take their next kickoff.
    #[test]
    fn two_cores_kicked_off_together_are_one_inference() {
        let mut dev = two_cores();
        let mut now = 0;
        for k in 1..=2 {
            for core in [0, 1] {
                dev.shared().sema(core, core).unwrap().fetch_add(1, Ordering::AcqRel);
            }
            dev.step(now);
            assert_eq!(dev.cores_started(), 2, "inference {k}");
            let mut counted = 0;
            let mut last = now;
            // 1 us steps over 1 s at most: the first step where both are done.
            for t in (1..=1_000_000u64).map(|i| now + i * 1_000) {
                let was_playing = dev.cores_started();
                dev.step(t);
                if dev.take_inference_played() {
                    counted += 1;
                    assert_eq!(was_playing, 1, "counted at the step where the second core finished");
                    assert!(dev.next_event_ns().is_none());
                    last = t;
                    break;
                }
            }
            assert_eq!(counted, 1, "inference {k}: {:?}", dev.notes());
            now = last + 1_000_000;
        }
        assert_eq!(kickoffs(&dev).len(), 4);
    }

    /// Slots holding a record in every NQ ring of `core`.
    fn written_slots(dev: &Device, core: u8) -> usize {
        let size = dev.shared().ring_bytes();
        (0..NQ_PER_CORE as u8)
            .flat_map(|nq| (0..size / 16).map(move |k| (nq, k * 16)))
            .filter(|&(nq, off)| {
                let mut e = [0u8; 16];
                dev.shared().ring(core, nq).unwrap().read(off, &mut e).unwrap();
                e != [0; 16]
            })
            .count()
    }

    /// A reset (NC_RESET: the core's reset generation moved) gives the core
    /// a fresh device's state at the next step, and the device acknowledges
    /// it: nothing of its programs left, not kicked off, disarmed until the
    /// host trigger again, its rings zeroed and their producers back at the
    /// start, its kickoff semaphore and lines 0, the scenario's proxy lines
    /// set again. The other core is untouched.
    #[test]
    fn a_reset_core_starts_fresh_and_the_other_core_is_untouched() {
        let shared = Arc::new(Shared::new(Arch::Sunda, 64 * layout::ENTRY_BYTES));
        let spec = ProgramSpec {
            arch: Arch::Sunda,
            ring_entries: 64,
            seed: 7,
            faults: vec![Fault::BarrierFail { core: 0 }],
            extras: vec![],
        };
        shared.host_trigger().store(HOST_TRIGGER_VALUE, Ordering::Release);
        let mut dev = Device::new(shared, spec, 2);
        kick(&mut dev, 0, 0);
        let t = play_out(&mut dev, 0).expect("played");
        let one = written_slots(&dev, 0);
        assert!(one > 0);
        // Core 0 kicked off again and reset in the middle; core 1 kicked off.
        dev.shared().set_line(Line::Hbm, 0, 1201);
        dev.shared().set_line(Line::Hbm, 1, 1205);
        kick(&mut dev, 0, t + 1_000);
        kick(&mut dev, 1, t + 1_000);
        assert_eq!(dev.cores_started(), 2);
        dev.shared().sema(0, 0).unwrap().fetch_add(1, Ordering::AcqRel);
        let g = dev.shared().request_reset(0).unwrap();
        assert_eq!(dev.shared().reset_acknowledged(0), 0, "not before the device's step");
        dev.step(t + 2_000);
        assert_eq!(dev.shared().reset_acknowledged(0), g);
        assert_eq!(dev.shared().reset_acknowledged(1), 0);
        assert!(!dev.started[0] && dev.started[1], "core 1 still plays");
        assert_eq!(dev.pending[0], 0);
        assert!(dev.sched.values().all(|a| action_core(a) != Some(0)), "core 0's program dropped");
        assert_eq!(written_slots(&dev, 0), 0, "core 0's rings zeroed");
        assert_eq!(dev.shared().sema(0, 0).unwrap().load(Ordering::Acquire), 0);
        assert_eq!(dev.shared().get_line(Line::Hbm, 0), 0);
        assert_eq!(dev.shared().get_line(Line::BarrierFail, 0), 1200, "the scenario's line again");
        assert_eq!(dev.shared().get_line(Line::Hbm, 1), 1205, "core 1's lines untouched");
        assert!(!dev.armed[0] && dev.armed[1]);
        assert_eq!(dev.shared().host_trigger().load(Ordering::Acquire), 0);
        // Disarmed: a kickoff waits for the host trigger.
        kick(&mut dev, 0, t + 3_000);
        assert!(!dev.started[0]);
        dev.shared().host_trigger().store(HOST_TRIGGER_VALUE, Ordering::Release);
        dev.step(t + 4_000);
        assert!(dev.started[0]);
        // The producers start over: the same slots as the first inference, not the next ones.
        assert!(play_out(&mut dev, t + 4_000).is_some());
        assert_eq!(written_slots(&dev, 0), one, "{:?}", dev.notes());
        assert!(dev
            .notes()
            .iter()
            .any(|n| n.text == "core 0: reset (NC_RESET): programs, rings, kickoff and lines fresh"));
    }

    /// A device armed without the host trigger (a real driver's host)
    /// stays armed across a reset.
    #[test]
    fn a_device_armed_without_the_trigger_stays_armed_across_a_reset() {
        let mut dev = two_cores();
        dev.shared().host_trigger().store(0, Ordering::Release);
        dev.arm();
        dev.shared().request_reset(1).unwrap();
        dev.step(0);
        assert_eq!(dev.armed, [true; MAX_CORES]);
        kick(&mut dev, 1, 1_000);
        assert!(dev.started[1]);
    }

    /// The DMA engine takes the first lap with ring id 1 and each later lap with
    /// the next id (+1 mod 4), and its head pointer says where it is (driver §5).
    #[test]
    fn the_engine_follows_the_ring_id_of_each_lap() {
        let (mut dev, banks) = rig();
        let src = fill_src(&dev);
        // The head pointer out of reset: slot 0, ring id 1.
        assert_eq!(dev.shared().bar_read(banks[0] + udma::HEAD_PTR), Ok(1 << 30));
        let mut now = 0;
        put(&dev, 0, 0, 1);
        put(&dev, 1, 1, 1);
        ring(&mut dev, banks, 2, &mut now);
        // Lap 2 (ring id 2), then lap 3 (ring id 3).
        put(&dev, 0, 2, 2);
        put(&dev, 1, 3, 2);
        ring(&mut dev, banks, 2, &mut now);
        assert!(!aborted(&dev), "{:?}", dev.notes());
        assert_eq!(dev.stats().dma_descriptors, 4);
        assert_eq!(dst(&dev, 256), src);
        for bank in banks {
            assert_eq!(dev.shared().bar_read(bank + udma::HEAD_PTR), Ok(3 << 30), "slot 0 of lap 3");
        }
    }

    /// The engine pairs M2S with S2M descriptors: an M2S increment alone copies
    /// nothing (and logs nothing) until the S2M side has descriptors too; each
    /// run that copies says how many pairs.
    #[test]
    fn the_engine_waits_for_both_sides_and_logs_each_copy() {
        let (mut dev, banks) = rig();
        let src = fill_src(&dev);
        put(&dev, 0, 0, 1);
        put(&dev, 1, 1, 1);
        dev.shared().bar_write(banks[0] + udma::TAIL_PTR_INC, 2).unwrap();
        dev.step(0);
        dev.step(1_000_000);
        assert_eq!(dev.stats().dma_descriptors, 0);
        assert!(dev.notes().is_empty(), "{:?}", dev.notes());
        dev.shared().bar_write(banks[1] + udma::TAIL_PTR_INC, 2).unwrap();
        dev.step(2_000_000);
        dev.step(3_000_000);
        assert_eq!(dev.stats().dma_descriptors, 2);
        assert_eq!(dst(&dev, 128), src[..128]);
        let texts: Vec<&str> = dev.notes().iter().map(|n| n.text.as_str()).collect();
        assert_eq!(texts, ["UDMA 0 queue 0: 2 descriptor pair(s) copied"]);
    }

    /// The ring base is the 64-bit `hi:lo` pair: a base above the device's memory
    /// is a failed descriptor read (abort), not a read of some low address.
    #[test]
    fn a_ring_base_above_memory_aborts() {
        let (mut dev, banks) = rig();
        fill_src(&dev);
        put(&dev, 0, 0, 1);
        dev.shared().bar_write(banks[0] + udma::RING_BASE_HI, 1).unwrap();
        let mut now = 0;
        ring(&mut dev, banks, 1, &mut now);
        assert!(aborted(&dev));
        assert_eq!(dev.stats().dma_descriptors, 0);
        let note = dev.notes().iter().map(|n| n.text.as_str()).find(|t| t.contains("abort")).unwrap_or("");
        assert!(note.contains("descriptor read failed"), "{note}");
    }

    /// A head at or past a ring length reprogrammed shorter is refused, as is a
    /// ring of length 0.
    #[test]
    fn a_head_outside_the_ring_aborts() {
        let (mut dev, banks) = rig();
        fill_src(&dev);
        put(&dev, 0, 0, 1);
        put(&dev, 1, 1, 1);
        let mut now = 0;
        ring(&mut dev, banks, 1, &mut now);
        assert_eq!(dev.stats().dma_descriptors, 1);
        dev.shared().bar_write(banks[0] + udma::RING_LEN, 1).unwrap();
        ring(&mut dev, banks, 1, &mut now);
        assert!(aborted(&dev));
        assert_eq!(dev.stats().dma_descriptors, 1);
        let note = dev.notes().iter().map(|n| n.text.as_str()).find(|t| t.contains("abort")).unwrap_or("");
        assert!(note.contains("ring length 1 with head 1"), "{note}");

        let (mut dev, banks) = rig();
        put(&dev, 0, 0, 1);
        dev.shared().bar_write(banks[1] + udma::RING_LEN, 0).unwrap();
        let mut now = 0;
        ring(&mut dev, banks, 1, &mut now);
        assert!(aborted(&dev));
        assert_eq!(dev.stats().dma_descriptors, 0);
    }

    /// The engine checks each BD's ring id. A BD with the wrong id is a prefetch
    /// ring-id error: the queue aborts, nothing is copied, and the note says why.
    #[test]
    fn a_wrong_ring_id_aborts_the_queue() {
        // Ring id 0 on the first lap (what lowering left before G-DMA-LOWER-RINGID).
        let (mut dev, banks) = rig();
        fill_src(&dev);
        let mut now = 0;
        put(&dev, 0, 0, 0);
        ring(&mut dev, banks, 1, &mut now);
        assert!(aborted(&dev));
        assert_eq!(dev.stats().dma_descriptors, 0);
        assert_eq!(dst(&dev, 64), vec![0; 64], "nothing copied");
        let note = dev.notes().iter().map(|n| n.text.as_str()).find(|t| t.contains("abort")).unwrap_or("");
        assert!(note.contains("ring id 0 where 1 was expected"), "{note}");

        // A stale lap: the second lap written with the first lap's id.
        let (mut dev, banks) = rig();
        let src = fill_src(&dev);
        let mut now = 0;
        put(&dev, 0, 0, 1);
        put(&dev, 1, 1, 1);
        ring(&mut dev, banks, 2, &mut now);
        put(&dev, 0, 2, 1);
        ring(&mut dev, banks, 1, &mut now);
        assert!(aborted(&dev));
        assert_eq!(dev.stats().dma_descriptors, 2);
        assert_eq!(dst(&dev, 192), [&src[..128], &[0; 64][..]].concat());
    }
}
