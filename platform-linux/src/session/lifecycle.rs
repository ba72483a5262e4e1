//! A session's life after bring-up: inferences, a ring-size change, its accessors.

use super::*;

/// One inference's outcome.
#[derive(Debug)]
pub struct Inference {
    /// The request's status.
    pub status: NrtStatus,
    /// The one-step return code it ended with.
    pub step: Step,
    /// Calls of `progress_one_step`.
    pub steps: u64,
    /// Harvest time, ns, from the kickoff to the harvest's end, its last HEAD
    /// write-back included: the trace's harvest span holds every pass.
    pub elapsed_ns: u64,
    /// The kickoff time on the session's clock, us.
    pub kickoff_us: u64,
    /// The harvested request: per-core results, engine times.
    pub request: ExecRequest,
    /// The harvest's events.
    pub events: Vec<Event>,
    /// Tensor wake-ups, in order, and how many past the cap.
    pub wakes: Wakes,
    /// What each copy did, in order; the last is the one that failed, if one did.
    pub copies: Vec<Staging>,
    /// The first probe read that failed, if any.
    pub probe_error: Option<String>,
    /// The time in us of each poll pass, at most `MAX_OBSERVED`; empty unless
    /// [`Session::observe_harvests`] is on.
    pub passes_us: Vec<u64>,
    /// The time in us of each HEAD write-back, as [`passes_us`](Self::passes_us).
    pub head_writes_us: Vec<u64>,
    /// The total latency in us counted for each logical core, the sample the
    /// datastore's `LATENCY_TOTAL` window got; `None` for a core not counted.
    pub total_latency_us: [Option<u64>; MAX_CORES],
    /// What this inference could not do, or why it did not start, one line each.
    pub notes: Vec<String>,
}

impl Inference {
    /// The first copy's record; `None` for an execution of no copies.
    pub fn staging(&self) -> Option<&Staging> {
        self.copies.first()
    }
}

impl Session {
    /// Re-initialise every ring with `ring_entries` entries.
    ///
    /// The same size changes nothing: the driver would reuse each ring's chunk
    /// and the device keeps its place, so the session keeps its cursors.
    ///
    /// A new size unmaps every ring first, since a forced re-init frees the old
    /// chunk at once with no mmap reference count, neuron_nq.c `nnq_init`. Each
    /// is re-initialised with `NOTIFICATIONS_INIT_WITH_REALLOC_V2`,
    /// `force_alloc_mem` 1, and mapped; the cursors start at the first slot. A
    /// failure half-way leaves rings of both sizes and the session unusable.
    pub fn set_ring_entries(&mut self, ring_entries: u32) -> Result<(), LinuxError> {
        self.usable()?;
        validate(self.arch, self.cores, ring_entries).map_err(|why| refused_as(&self.dev, "session", why))?;
        if ring_entries == self.ring_entries {
            return Ok(());
        }
        if let Some(d) = self.device.as_mut() {
            for core in 0..self.cores {
                for (nq, _) in harvest_rings() {
                    drop(d.rings.unbind(core, nq));
                }
            }
        }
        self.nq = {
            let mut nq = Notifications::new();
            for core in 0..self.cores {
                for eng in 0..ENGINES_PER_CORE {
                    nq.set_cal(core, eng, self.nq.cal(core, eng));
                }
                nq.set_sync_point(core, self.nq.sync_point(core));
            }
            nq
        };
        let old = self.ring_entries;
        self.bind_rings(ring_entries).inspect_err(|e| {
            self.unusable = Some(format!(
                "the resize of the NQ rings from {old} to {ring_entries} entries failed half-way ({e}); \
                 the rings are of both sizes, so the session cannot run inferences"
            ));
        })
    }

    /// `Err` naming why when the session can no longer run inferences.
    fn usable(&self) -> Result<(), LinuxError> {
        self.owner.check("session").map_err(|f| f.into_linux("inference", self.dev.path().display().to_string()))?;
        if self.closed {
            return Err(refused(&self.dev, "inference", "the session is closed".into()));
        }
        match &self.unusable {
            Some(why) => Err(refused(&self.dev, "inference", format!("the session is unusable: {why}"))),
            None => Ok(()),
        }
    }

    /// The device node.
    pub fn path(&self) -> &std::path::Path {
        self.dev.path()
    }
    /// The device's generation.
    pub fn arch(&self) -> Arch {
        self.arch
    }
    /// The driver's info.
    pub fn driver_info(&self) -> DriverInfo {
        self.driver
    }
    /// The runtime versions the driver serves.
    pub fn compatible_version(&self) -> CompatibleVersion {
        self.compat
    }
    /// The device's info: BAR addresses and sizes.
    pub fn device_info(&self) -> DeviceInfo {
        self.info
    }
    /// Physical cores owned.
    pub fn cores(&self) -> u8 {
        self.cores
    }
    /// The device's core that is the session's logical core 0; reports, events
    /// and [`Session::counters`] index the session's cores from 0.
    pub fn first_core(&self) -> u8 {
        self.first
    }
    /// Where the session's harvests run, `nd0 nc1`, for the lines that report them.
    pub fn site(&self) -> crate::oplog::Site {
        crate::oplog::Site::of_device(self.dev.path(), self.first, self.cores)
    }
    /// NQ ring entries.
    pub fn ring_entries(&self) -> u32 {
        self.ring_entries
    }
    /// The model's timeout, seconds.
    pub fn timeout_s(&self) -> u32 {
        self.timeout_s
    }

    /// Keep, from the next inference on, the time of each poll pass and HEAD
    /// write-back, [`Inference::passes_us`]. Off by default: each kept time is
    /// a clock read in the poll loop.
    pub fn observe_harvests(&mut self, on: bool) {
        self.observe = on;
    }

    /// Set the model's timeout, seconds, for the inferences from now on.
    pub fn set_timeout_s(&mut self, seconds: u32) {
        self.timeout_s = seconds;
    }
    /// Why the datastore could not be acquired at bring-up, if so.
    pub fn datastore_error(&self) -> Option<&LinuxError> {
        self.datastore_error.as_ref()
    }
    /// The datastore the counters are written to, if one was acquired.
    pub fn datastore(&self) -> Option<&crate::datastore::Datastore> {
        self.device.as_ref().and_then(|d| d.datastore.as_ref()).map(|t| t.counters().datastore())
    }
    /// Where the session's requests are counted: the process's counters at
    /// the NCs of the session's cores, if there is a datastore. A harvest of
    /// these cores elsewhere, a poller, an XU unit or C rings, handed it counts
    /// in the same counters. It keeps the datastore while it lives.
    pub fn counter_target(&self) -> Option<crate::datastore::CounterTarget> {
        self.device.as_ref().and_then(|d| d.datastore.clone())
    }
    /// The counters of the session's cores as its own harvests counted them,
    /// by logical core.
    pub fn counters(&self) -> Option<&nrt_core::counters::NcCounters<MAX_CORES>> {
        self.device.as_ref().map(|d| &d.counters)
    }
    /// The first failed datastore write, if any.
    pub fn datastore_write_error(&self) -> Option<&LinuxError> {
        self.device.as_ref().and_then(|d| d.datastore_error.as_ref())
    }
    /// The status of the latest inference, if one ran.
    pub fn last_status(&self) -> Option<NrtStatus> {
        self.last_status
    }

    /// Step 11: stage, kick off, harvest. A status is a result, not an error:
    /// `Err` is a failed call.
    pub fn run_inference(&mut self) -> Result<Inference, LinuxError> {
        self.usable()?;
        let exec = self.self_test().map_err(|e| e.into_linux(self.dev.path()))?;
        self.run_exec("inference", &exec).map_err(|e| e.into_linux(self.dev.path()))
    }

    /// The self-test execution of an inference: a pattern copied between two
    /// host objects of [`COPY_BYTES`], then compared.
    fn self_test(&mut self) -> Result<crate::exec::Exec, crate::api_error::Error> {
        let (src, dst) = match &self.selftest {
            Some(m) => m.clone(),
            None => {
                let src = self.alloc(crate::mem::MemKind::Host, COPY_BYTES as u64)?;
                let dst = self.alloc(crate::mem::MemKind::Host, COPY_BYTES as u64)?;
                self.selftest = Some((src.clone(), dst.clone()));
                (src, dst)
            }
        };
        let pattern: Vec<u8> = (0..COPY_BYTES).map(|i| (i.wrapping_mul(131) % 251) as u8).collect();
        src.write(0, &pattern)?;
        dst.write(0, &[0; COPY_BYTES])?;
        let mut exec = crate::exec::Exec::new();
        exec.copy(&dst, 0, &src, 0, COPY_BYTES as u64);
        Ok(exec)
    }

    /// The kickoff of the session's cores after `copies`, and the harvest.
    pub(super) fn kick_and_harvest(&mut self, copies: Vec<Staging>) -> Result<Inference, LinuxError> {
        // Doorbell B, the top-SP host trigger, where the simulator's hint says
        // its NX-local block is. A real driver names none, so nothing is
        // written: the window starts with its semaphores, G-DRV-TRIGGER.
        let trigger = self.hints.map(|h| h.host_trigger).filter(|t| *t != 0);
        let mut notes = Vec::new();
        if trigger.is_none() {
            notes.push(format!("host trigger: {}", nrt_abi::devmap::Unknown::HostTrigger.what()));
        }
        let arch = self.arch;
        let cores = self.cores;
        let first = self.first;
        let tensors = tensor_table().ok_or_else(|| {
            refused(&self.dev, "session", format!("a tensor table of {} outputs", simabi::MAX_OUTPUTS))
        })?;
        let dev = Arc::clone(&self.dev);
        let d = self.device.as_mut().ok_or_else(|| refused(&dev, "inference", "the session is closed".into()))?;
        d.restart(tensors);
        // Core's `set_host_trigger`, a Release fence then 1 at the trigger,
        // written here so that a failed BAR_WRITE keeps its errno.
        if let Some(t) = trigger {
            fence(Ordering::Release);
            d.rings.regs().write32(t, nrt_core::dma::doorbell::HOST_TRIGGER_VALUE)?;
        }
        let kickoff_ns = d.now_ns();
        let kickoff_us = kickoff_ns / 1_000;
        // The kickoff semaphore of each of the device's cores the session
        // owns: the semaphores are the device's, by core.
        for c in 0..cores {
            let nc = u32::from(first) + u32::from(c);
            kickoff_infer(&mut Sema(&dev), nc, nc).map_err(|error| {
                let path = dev.path().display().to_string();
                LinuxError::new(ioctl::SEMAPHORE_INCREMENT.name(), path, Cause::Kickoff { nc, error })
            })?;
        }
        let mut req = ExecRequest::new(ExecConfig::new(arch, cores, self.timeout_s));
        let t0 = d.now_ns();
        d.head_writes_us.clear();
        d.observe = self.observe;
        let mut delay = super::device::ObservedDelay {
            inner: AnyDelay::new(self.delay),
            clock: d.clock,
            passes_us: if self.observe { vec![t0 / 1_000] } else { Vec::new() },
            observe: self.observe,
        };
        let w = exec_wait_round_robin(&mut req, d, &mut self.nq, &mut delay);
        let elapsed_ns = d.now_ns().saturating_sub(kickoff_ns);
        if let Some(why) = d.gone() {
            // As the shared-memory path's G-SHM-GONE: the request is abandoned.
            let secs = elapsed_ns as f64 / 1e9;
            let e = Cause::Gone(format!("{why}; the harvest was abandoned after {secs:.1} s ({} steps)", w.steps));
            return Err(LinuxError::new("harvest", dev.path().display().to_string(), e));
        }
        self.last_status = Some(w.status);
        let intc_unread = |e: &Event| {
            matches!(e, Event::Exec(nrt_core::exec::ExecEvent::IntcReadFailed { kind: hal::ErrorKind::NotMapped, .. }))
        };
        if !d.sim && d.events.iter().any(intc_unread) {
            notes.push(format!("INTC: {}", nrt_abi::devmap::Unknown::IntcCause.what()));
        }
        Ok(Inference {
            status: w.status,
            step: w.step,
            steps: w.steps,
            elapsed_ns,
            kickoff_us,
            request: req,
            events: std::mem::take(&mut d.events),
            wakes: d.tensors.waker().clone(),
            copies,
            probe_error: d.probe_error.take().map(|e| e.to_string()),
            passes_us: delay.passes_us,
            head_writes_us: std::mem::take(&mut d.head_writes_us),
            total_latency_us: d.totals_us,
            notes,
        })
    }

    /// The inference a failed staging copy ends before its kickoff: `status`,
    /// done with an error, no engine harvested, `why` its one note.
    pub(super) fn not_started(&mut self, copies: Vec<Staging>, status: NrtStatus, why: String) -> Inference {
        log::error!("{} {}: {why}", self.dev.path().display(), self.site());
        self.last_status = Some(status);
        let wakes = self.device.as_ref().map(|d| d.tensors.waker().clone()).unwrap_or_default();
        Inference {
            status,
            step: Step::Error(NrtError::failed(status)),
            steps: 0,
            elapsed_ns: 0,
            kickoff_us: 0,
            request: ExecRequest::new(ExecConfig::new(self.arch, self.cores, self.timeout_s)),
            events: Vec::new(),
            wakes,
            copies,
            probe_error: None,
            passes_us: Vec::new(),
            head_writes_us: Vec::new(),
            total_latency_us: [None; MAX_CORES],
            notes: vec![why],
        }
    }

    /// Step 12: release everything in reverse order and close the device;
    /// every failed release is returned, the others still made.
    pub fn close(mut self) -> Result<(), Vec<LinuxError>> {
        let errors = self.teardown();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }
}
