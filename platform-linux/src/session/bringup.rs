//! Bring-up and teardown: steps 1-10 and 12 of `docs/driver-model.md`.

use super::*;

/// The driver's information and the arch it names.
fn arch_of(dev: &NeuronDevice) -> Result<(DriverInfo, Arch), LinuxError> {
    let driver = dev.driver_info()?;
    let arch = u8::try_from(driver.architecture).ok().and_then(Arch::from_arch_type).ok_or_else(|| {
        refused(
            dev,
            ioctl::DRIVER_INFO_GET.name(),
            format!("unknown architecture {} (this binding knows 2, 3 and 4)", driver.architecture),
        )
    })?;
    Ok((driver, arch))
}

/// The device index of a node, the `N` of `neuronN` after symlinks; `None` for another name.
pub(crate) fn device_index(path: &std::path::Path) -> Option<u32> {
    let real = crate::device::node_of(path);
    let name = real.file_name()?.to_str()?;
    let n = name.strip_prefix("neuron")?;
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    n.parse().ok()
}

/// The opened device's own first core of a host-wide run of `cores` from
/// logical index `first`. On v3 the driver's map places each index,
/// v3/neuron_dhal_v3.c `nc_mapping_v0_seng_swap`; where the driver has none,
/// index `i` is core `i % nc_per_device` of device `i / nc_per_device`,
/// G-ENV-L2P. Refused when the run is over two devices, on another device than
/// `dev`, or not one ascending run of the device's cores, since the session
/// claims them with one range mark.
fn place_host_wide(dev: &NeuronDevice, arch: Arch, first: u8, cores: u8) -> Result<u8, String> {
    let per = arch.nc_per_device();
    let (first, n) = (u32::from(first), u32::from(cores));
    let last = first + n.max(1) - 1;
    let map = match nrt_abi::devmap::has_core_map(arch) {
        false => None,
        true => dev.logical_to_physical(last + 1).map_err(|e| e.to_string())?,
    };
    let places: Vec<(u32, u32)> = match &map {
        Some(m) => (first..=last).map(|k| m.get(k as usize).copied()).collect::<Option<_>>().ok_or_else(|| {
            format!(
                "core {last} asked, host-wide on {}: the driver's logical-to-physical map has {} entries",
                arch.name(),
                m.len()
            )
        })?,
        None => {
            if nrt_abi::devmap::has_core_map(arch) {
                log::warn!(
                    "session: {} answered no logical-to-physical core map ({}): host-wide index i is core i % {per} \
                     of device i / {per} (G-ENV-L2P)",
                    dev.path().display(),
                    ioctl::GET_LOGICAL_TO_PHYSICAL_NC_MAP.name()
                );
            }
            crate::config::device_of_run(first, n, per).map_err(|e| format!("{e} ({})", arch.name()))?;
            (first..=last).map(|k| (k / u32::from(per), k % u32::from(per))).collect()
        }
    };
    let what = crate::config::describe_places(first, &places);
    let source = if map.is_some() { "the driver's logical-to-physical map" } else { "i % cores a device" };
    let device = places[0].0;
    if places.iter().any(|p| p.0 != device) {
        return Err(format!(
            "{what} asked ({source}, {}): a session is one device, so its cores must be on one",
            arch.name()
        ));
    }
    if places.iter().zip(places[0].1..).any(|(p, want)| p.1 != want) {
        return Err(format!(
            "{what} asked ({source}, {}): not one ascending run of the device's cores, which a session claims with \
             one range mark",
            arch.name()
        ));
    }
    match device_index(dev.path()) {
        Some(d) if d == device => Ok(places[0].1 as u8),
        Some(d) => Err(format!(
            "{what} asked, host-wide on {} ({per} NeuronCores a device, {source}): that is /dev/neuron{device}, and \
             this is device {d}",
            arch.name()
        )),
        None => Err(format!(
            "{what} asked, host-wide on {} ({per} NeuronCores a device, {source}): that is /dev/neuron{device}, and \
             this node's device index is not known (its name is not neuronN)",
            arch.name()
        )),
    }
}

/// Why the simulated device with hints `h` would not play the device's cores
/// `first..first + cores`, if so. It plays `0..device_cores` only, so a session
/// elsewhere would wait out its budget for records that never come. The reason
/// names the cores and the host-wide indices this device plays.
fn unplayed(dev: &NeuronDevice, arch: Arch, h: &simabi::SimHints, first: u8, cores: u8) -> Option<String> {
    let asked = first..first.saturating_add(cores);
    if asked.clone().all(|nc| device::DriverDevice::plays(h, nc)) {
        return None;
    }
    let played = h.device_cores.min(u32::from(arch.nc_per_device()));
    let device = device_index(dev.path()).unwrap_or(0);
    let per = u32::from(arch.nc_per_device());
    let mut logical: Vec<u32> = (device * per..(device + 1) * per)
        .filter(|k| nrt_abi::devmap::logical_to_physical(arch, *k).is_some_and(|(_, nc)| u32::from(nc) < played))
        .collect();
    logical.sort_unstable();
    let list = |v: &mut dyn Iterator<Item = u32>| v.map(|x| x.to_string()).collect::<Vec<_>>().join(", ");
    Some(format!(
        "the device's core(s) {} asked: the simulated {} device plays its cores 0-{} only (host-wide \
         NEURON_RT_VISIBLE_CORES {} of this device), so no record would ever come from the others",
        list(&mut asked.map(u32::from)),
        arch.name(),
        played.saturating_sub(1),
        list(&mut logical.into_iter()),
    ))
}

impl Session {
    /// Bring up `cfg.cores` cores of the device at `path`. On any failure,
    /// what was acquired is released before the error returns.
    pub fn open(path: impl AsRef<std::path::Path>, cfg: SessionConfig) -> Result<Session, LinuxError> {
        Session::open_on(NeuronDevice::open(path)?, cfg)
    }

    /// [`Session::open`] on the device no caller named: with host-wide cores
    /// the device they are on, else `/dev/neuron0`. Only an open device tells
    /// its cores per device, so each generation's reading of the index is
    /// tried and the node kept whose driver names that generation; only that
    /// device is opened, G-ENV-VISIBLE-CORES. A node that cannot be opened is
    /// an error about the cores, naming the nodes tried.
    pub fn open_chosen(cfg: SessionConfig) -> Result<Session, LinuxError> {
        if !cfg.host_wide {
            return Session::open("/dev/neuron0", cfg);
        }
        let first = u32::from(cfg.first_core);
        let mut tried: Vec<u32> = Vec::new();
        let mut seen: Vec<String> = Vec::new();
        for per in [Arch::Sunda.nc_per_device(), Arch::Cayman.nc_per_device()] {
            let n = first / u32::from(per);
            if tried.contains(&n) {
                continue;
            }
            tried.push(n);
            let path = format!("/dev/neuron{n}");
            // Only the chosen node is opened read-write and attached; the
            // others are asked their generation through a write-only one.
            match NeuronDevice::probe_architecture(&path) {
                Ok(t) => match u8::try_from(t).ok().and_then(Arch::from_arch_type) {
                    Some(arch) if first / u32::from(arch.nc_per_device()) == n => {
                        return Session::open(&path, cfg).map_err(|e| e.about(Subject::Cores))
                    }
                    Some(arch) => seen.push(format!(
                        "{path} is {} ({} cores a device), so core {first} is on /dev/neuron{}",
                        arch.name(),
                        arch.nc_per_device(),
                        first / u32::from(arch.nc_per_device())
                    )),
                    None => seen.push(format!("{path}: unknown architecture {t}")),
                },
                Err(e) => seen.push(e.to_string()),
            }
        }
        let nodes: Vec<String> = tried.iter().map(|n| format!("/dev/neuron{n}")).collect();
        let why = format!(
            "core {first} is on {} ({} cores a device on sunda, {} on cayman and mariana): {}",
            nodes.join(" or "),
            Arch::Sunda.nc_per_device(),
            Arch::Cayman.nc_per_device(),
            seen.join("; ")
        );
        Err(LinuxError::new("open", nodes.join(", "), Cause::Missing(why)).about(Subject::Cores))
    }

    fn open_on(dev: NeuronDevice, mut cfg: SessionConfig) -> Result<Session, LinuxError> {
        let dev = Arc::new(dev);
        let (driver, arch) = arch_of(&dev)?;
        let compat = dev.compatible_version()?;
        check_compatible(arch, compat).map_err(|why| refused_as(&dev, ioctl::COMPATIBLE_VERSION.name(), why))?;
        let info = dev.device_info()?;
        if info.architecture != driver.architecture {
            return Err(refused(
                &dev,
                ioctl::DEVICE_INFO.name(),
                format!("architecture {} where the driver said {}", info.architecture, driver.architecture),
            ));
        }
        let bar = DriverBar::new(Arc::clone(&dev), &info)?;
        // The caller's choice first, then the simulator's hint when in range;
        // a real driver refuses the query.
        let hints = dev.sim_hints();
        let cores = match cfg.cores {
            Some(c) => c,
            None => hints
                .and_then(|h| u8::try_from(h.model_cores).ok())
                .filter(|c| validate(arch, *c, DEFAULT_RING_ENTRIES).is_ok())
                .unwrap_or(cfg.fallback_cores),
        };
        let ring_entries = match cfg.ring_entries {
            Some(n) => n,
            None => hints
                .map(|h| h.ring_entries)
                .filter(|n| validate(arch, 1, *n).is_ok())
                .unwrap_or(cfg.fallback_ring_entries),
        };
        validate_cores(arch, cores).map_err(|why| refused_as(&dev, "session", why).about(Subject::Cores))?;
        if cfg.host_wide {
            cfg.first_core = place_host_wide(&dev, arch, cfg.first_core, cores)
                .map_err(|why| refused(&dev, "session", why).about(Subject::Cores))?;
        }
        validate_placement(arch, cfg.first_core, cores)
            .map_err(|why| refused_as(&dev, "session", why).about(Subject::Cores))?;
        validate(arch, cores, ring_entries).map_err(|why| refused_as(&dev, "session", why))?;
        if let Some(h) = hints {
            unplayed(&dev, arch, &h, cfg.first_core, cores)
                .map_or(Ok(()), |why| Err(refused(&dev, "session", why).about(Subject::Cores)))?;
        }
        let mut s = Session {
            dev,
            arch,
            driver,
            compat,
            info,
            first: cfg.first_core,
            cores,
            ring_entries,
            timeout_s: cfg.timeout_s,
            delay: cfg.delay,
            observe: false,
            uuid: session_uuid(),
            marked: 0,
            owned: Vec::new(),
            hints,
            unusable: None,
            chunks: Vec::new(),
            queues: Vec::new(),
            staging_engine: 0,
            device: None,
            nq: Notifications::new(),
            txq: None,
            rxq: None,
            ring_sizes: [[None; NQ_PER_CORE]; MAX_CORES],
            last_status: None,
            datastore_error: None,
            selftest: None,
            closed: false,
            owner: crate::fork::Owner::here(),
        };
        s.claim_cores().map_err(|e| e.about(Subject::Cores))?;
        s.reset_cores()?;
        s.enter_writers()?;
        s.alloc_chunks()?;
        s.init_queue()?;
        s.init_rings(bar)?;
        s.downgrade_writers()?;
        s.acquire_datastore();
        Ok(s)
    }

    /// This process's counters on the device, at the NCs of the session's
    /// cores: its datastore, or the one another harvest of the process holds,
    /// [`crate::datastore::ProcessCounters::of`]. A failure does not stop the
    /// session: it is logged and kept, and the counters stay in RAM only.
    fn acquire_datastore(&mut self) {
        match crate::datastore::ProcessCounters::of(&self.dev) {
            Ok(c) => {
                if let Some(d) = self.device.as_mut() {
                    d.datastore = Some(crate::datastore::CounterTarget::new(c, self.first, self.cores));
                }
            }
            Err(e) => {
                log::warn!("session: no datastore, the counters stay in this process: {e}");
                self.datastore_error = Some(e);
            }
        }
    }

    /// Step 4: claim the device's cores `first..first + cores` with
    /// `CRWL_NC_RANGE_MARK`, one process per core. The driver marks the first
    /// free run of `nc_count` in the range, which is exactly the run, so it is
    /// that run or nothing: neuron_crwl.c `ncrwl_nc_range_mark`. On `EBUSY`
    /// the error names the holder's pid and command.
    fn claim_cores(&mut self) -> Result<(), LinuxError> {
        let n = u32::from(self.cores);
        let first = u32::from(self.first);
        let want = ((1u64 << n) - 1) << first;
        match self.dev.crwl_nc_range_mark(n, first, first + n - 1) {
            Ok(got) => {
                self.marked = got;
                if got != want {
                    return Err(refused(
                        &self.dev,
                        ioctl::CRWL_NC_RANGE_MARK.name(),
                        format!("asked for cores 0x{want:x}, the driver marked 0x{got:x}"),
                    ));
                }
                Ok(())
            }
            Err(e) if e.errno() == Some(libc::EBUSY) => {
                let who = holders(&self.dev, want);
                Err(e.with_detail(format!("{} {who}", core_list(want))))
            }
            Err(e) => Err(e),
        }
    }

    /// Step 5: reset only the cores this session claimed: a reset destroys
    /// every NQ of its cores, of every process. Driver: neuron_cdev.c
    /// `ncdev_nc_reset`, neuron_reset.c `nr_start_ncs`.
    fn reset_cores(&mut self) -> Result<(), LinuxError> {
        let map = u32::try_from(self.marked).map_err(|_| {
            refused(&self.dev, ioctl::NC_RESET.name(), format!("cores 0x{:x} past the reset map", self.marked))
        })?;
        if map == 0 {
            return Err(refused(&self.dev, ioctl::NC_RESET.name(), "no core claimed to reset".into()));
        }
        let id = self.dev.nc_reset(map)?;
        match self.dev.nc_reset_ready(id)? {
            0 => Ok(()),
            r => Err(refused(
                &self.dev,
                ioctl::NC_RESET_READY.name(),
                format!("the reset of cores 0x{map:x} (request {id}) failed with result {r}"),
            )),
        }
    }

    /// Step 6: switch this session's model in with `CRWL_WRITER_ENTER` of each
    /// core; the rings and queues are set up under the writer lock.
    ///
    /// `EALREADY`, this process already the core's writer with this uuid, is
    /// not nothing to do: the driver sets the writer lock before that test,
    /// neuron_crwl.c `ncrwl_writer_enter`. The core is recorded as held and
    /// downgraded like the others; left alone, every reader would get `EBUSY`.
    fn enter_writers(&mut self) -> Result<(), LinuxError> {
        for core in 0..self.cores {
            let nc = u32::from(self.physical(core));
            match self.dev.crwl_writer_enter(nc, self.uuid) {
                Ok(()) => {}
                Err(e) if e.errno() == Some(libc::EALREADY) => {
                    log::info!("core {nc}: {e}: the writer lock is held by this session all the same");
                }
                Err(e) => return Err(e),
            }
            self.owned.push((nc, Crwl::Writer));
        }
        Ok(())
    }

    /// Step 10: `CRWL_WRITER_DOWNGRADE` of each core: this session becomes its
    /// one reader, neuron_crwl.c `ncrwl_writer_downgrade`.
    fn downgrade_writers(&mut self) -> Result<(), LinuxError> {
        for i in 0..self.owned.len() {
            let (nc, _) = self.owned[i];
            self.dev.crwl_writer_downgrade(nc, self.uuid)?;
            self.owned[i].1 = Crwl::Reader;
        }
        Ok(())
    }

    /// Step 7.
    fn alloc_chunks(&mut self) -> Result<(), LinuxError> {
        let ring = u64::from(STAGING_RING_DEPTH) * 16;
        for (size, kind) in [
            (ring, mem_type::DMA_RINGS_HOST),
            (ring, mem_type::DMA_RINGS_HOST),
            (COPY_BUFFER_BYTES, mem_type::DMA_RINGS_HOST),
        ] {
            let a = MemAllocV2Mt { size, align: 0, host_memory: 1, mem_type: kind, ..MemAllocV2Mt::default() };
            let handle = self.dev.mem_alloc_v2mt(a)?;
            self.chunks.push(Chunk { handle, info: MemGetExtendedInfo::default(), map: None });
            let info = self.dev.mem_get_extended_info(handle)?;
            if info.size < size {
                return Err(refused(
                    &self.dev,
                    ioctl::MEM_GET_EXTENDED_INFO.name(),
                    format!("chunk {handle:#x} has {} bytes, {size} were asked", info.size),
                ));
            }
            let len = usize::try_from(info.size).map_err(|_| {
                refused(&self.dev, "mmap", format!("a chunk of {} bytes does not fit this address space", info.size))
            })?;
            let map = Mapping::map(self.dev.file(), info.mmap_offset, len)
                .map_err(|e| LinuxError::new("mmap", self.dev.path().display().to_string(), e))?;
            if let Some(c) = self.chunks.last_mut() {
                c.info = info;
                c.map = Some(map);
            }
        }
        Ok(())
    }

    /// Step 8.
    fn init_queue(&mut self) -> Result<(), LinuxError> {
        let (tx, rx) = match (self.chunks.first(), self.chunks.get(1)) {
            (Some(t), Some(r)) => (t.handle, r.handle),
            _ => return Err(refused(&self.dev, ioctl::DMA_QUEUE_INIT.name(), "no ring memory".into())),
        };
        // The queue is on an engine of the session's own first core that
        // reaches host memory: no other session's, since the driver checks no
        // ownership in ncdev_dma_queue_init.
        let core = self.physical(0);
        let eng = nrt_abi::devmap::host_engine(self.arch, core).ok_or_else(|| {
            refused(
                &self.dev,
                ioctl::DMA_QUEUE_INIT.name(),
                format!("core {core} of {} has no DMA engine with host connectivity", self.arch.name()),
            )
        })?;
        self.staging_engine = eng;
        self.dev.dma_queue_init(DmaQueueInit {
            eng_id: eng,
            qid: STAGING_QUEUE,
            tx_desc_count: STAGING_RING_DEPTH,
            rx_desc_count: STAGING_RING_DEPTH,
            tx_handle: tx,
            rx_handle: rx,
            rxc_handle: 0,
            axi_port: 0,
            _pad: 0,
        })?;
        self.queues.push((eng, STAGING_QUEUE));
        let queue_err = |e| staging_err(&self.dev, SubmitError::at(SubmitStep::Platform("queue"), e));
        self.txq = Some(SwDmaQueue::new(STAGING_RING_DEPTH).map_err(queue_err)?);
        self.rxq = Some(SwDmaQueue::new(STAGING_RING_DEPTH).map_err(queue_err)?);
        Ok(())
    }

    /// Step 9, and the clock and calibration of each core.
    fn init_rings(&mut self, bar: DriverBar) -> Result<(), LinuxError> {
        // The device clock's origin: the simulator's hint, else none.
        let origin = self.hints.map_or(0, |h| h.clock_origin_ns);
        let rings = MappedRings::new(self.arch, bar).with_first_core(self.first);
        let clock = MonotonicClock::new();
        let tensors = tensor_table().ok_or_else(|| {
            refused(&self.dev, "session", format!("a tensor table of {} outputs", simabi::MAX_OUTPUTS))
        })?;
        // The device's first core comes with its rings (`MappedRings::first_core`).
        self.device =
            Some(DriverDevice::new(Arc::clone(&self.dev), rings, self.arch, self.hints.is_some(), clock, tensors));
        // Device time, us since the model's origin, at host time 0.
        let dev_us = if origin == 0 { 0 } else { nrt_abi::os::monotonic_ns().saturating_sub(origin) / 1_000 };
        for core in 0..self.cores {
            // The simulator's calibration is its physical core's.
            for eng in 0..ENGINES_PER_CORE {
                self.nq.set_cal(core, eng, simabi::calibration(self.physical(core), eng));
            }
            self.nq.set_sync_point(core, SyncPoint { dev_us, cpu_us: 0 });
        }
        self.bind_rings(self.ring_entries)
    }

    pub(super) fn bind_rings(&mut self, ring_entries: u32) -> Result<(), LinuxError> {
        for core in 0..self.cores {
            for (nq, kind) in harvest_rings() {
                // The NQs of the device's core; kept under the logical index.
                let arg = ring_request(self.physical(core), nq, kind, ring_entries);
                let prev =
                    self.ring_sizes.get(usize::from(core)).and_then(|r| r.get(usize::from(nq))).copied().flatten();
                let (window, _) = map_ring(&self.dev, RingInit::for_size(arg, prev))?;
                if let Some(s) = self.ring_sizes.get_mut(usize::from(core)).and_then(|r| r.get_mut(usize::from(nq))) {
                    *s = Some(arg.size);
                }
                // HEAD at the slot the driver programmed: the engine_index passed.
                match self.device.as_mut() {
                    Some(d) => d.rings.bind_initialised(core, nq, window, &arg)?,
                    None => return Err(refused(&self.dev, "bind ring", "the session is closed".into())),
                }
            }
            self.nq.bind_core(core, ring_entries * ENTRY_BYTES).map_err(|e| {
                refused(&self.dev, "bind ring", format!("core {core}: the ring state refused the binding: {e:?}"))
            })?;
        }
        self.ring_entries = ring_entries;
        Ok(())
    }

    pub(super) fn teardown(&mut self) -> Vec<LinuxError> {
        if self.closed {
            return Vec::new();
        }
        self.closed = true;
        // In a child forked after the open, every resource is the parent's:
        // it is forgotten without an ioctl, unmap or close, and the close says
        // why, G-FORK.
        if let Err(f) = self.owner.check("session") {
            std::mem::forget(self.device.take());
            std::mem::forget(std::mem::take(&mut self.chunks));
            std::mem::forget(self.selftest.take());
            std::mem::forget(Arc::clone(&self.dev));
            return vec![f.into_linux("close", self.dev.path().display().to_string())];
        }
        let mut errors = Vec::new();
        // munmap: the NQ rings, the self-test memory, then the chunks.
        self.device = None;
        self.selftest = None;
        for c in self.chunks.iter_mut().rev() {
            c.map = None;
        }
        // The queues are released, which changes nothing in the driver,
        // neuron_ring.c `ndmar_queue_release`. Their ring chunks stay: the
        // queue stays programmed on them until `close` re-points it at a dummy
        // ring, neuron_cdev.c `ncdev_flush`. Only chunks no queue uses are freed.
        let rings: Vec<u64> = self.chunks.iter().take(2).map(|c| c.handle).collect();
        for (eng, q) in self.queues.drain(..).rev() {
            if let Err(e) = self.dev.dma_queue_release(eng, q) {
                errors.push(e);
            }
        }
        for c in self.chunks.drain(..).rev() {
            if rings.contains(&c.handle) {
                continue;
            }
            if let Err(e) = self.dev.mem_free(c.handle) {
                errors.push(e);
            }
        }
        // The cores, in reverse: a writer not yet downgraded is downgraded
        // first, the driver having no writer exit, then the reader exits.
        for (nc, how) in self.owned.drain(..).rev() {
            if how == Crwl::Writer {
                if let Err(e) = self.dev.crwl_writer_downgrade(nc, self.uuid) {
                    errors.push(e);
                    continue;
                }
            }
            if let Err(e) = self.dev.crwl_reader_exit(nc, self.uuid) {
                errors.push(e);
            }
        }
        if self.marked != 0 {
            if let Err(e) = self.dev.crwl_nc_range_unmark(self.marked) {
                errors.push(e);
            }
            self.marked = 0;
        }
        // After the explicit unmark, leave the process's write-only descriptor;
        // the last user's close drops any mark still held.
        self.dev.release_free_access();
        for e in &errors {
            log::warn!("session teardown: {e}");
        }
        errors
        // The device closes when the last reference (this session's) drops.
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.teardown();
    }
}

/// `0-1`, `0`, `0,2`: the cores of `map`.
pub(super) fn core_list(map: u64) -> String {
    let v: Vec<u32> = (0..64).filter(|i| map & (1u64 << i) != 0).collect();
    let run = map >> map.trailing_zeros();
    match v.as_slice() {
        [] => "no core".to_string(),
        [one] => format!("core {one}"),
        [first, .., last] if run & run.wrapping_add(1) == 0 => format!("cores {first}-{last}"),
        _ => format!("cores {}", v.iter().map(u32::to_string).collect::<Vec<_>>().join(",")),
    }
}

/// Who holds cores `want` of `dev`, for the error of a refused mark: the
/// writers of those cores `DEVICE_GET_ALL_APPS_INFO` lists, each with its
/// command from `/proc/<pid>/comm`. This process is named when the driver lists
/// it as a writer or lists no other process: a session of it holds the cores.
pub(super) fn holders(dev: &NeuronDevice, want: u64) -> String {
    let me = std::process::id() as i32;
    let (verb, them) = if want.count_ones() == 1 { ("is", "it") } else { ("are", "them") };
    let named = |pid: i32| {
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm"))
            .map(|c| c.trim().to_string())
            .unwrap_or_else(|e| format!("command unknown: /proc/{pid}/comm: {e}"));
        format!("pid {pid} ({comm})")
    };
    let this = format!("this process, {}", named(me));
    let apps = match dev.apps_info() {
        Ok(apps) => apps,
        Err(e) => return format!("{verb} held by another process or by {this} (asking the driver who failed: {e})"),
    };
    let writers: Vec<i32> =
        apps.iter().filter(|a| a.pid > 0 && u64::from(a.nc_lock_map) & want != 0).map(|a| a.pid).collect();
    let who: Vec<String> = writers.iter().filter(|p| **p != me).map(|p| named(*p)).collect();
    let others: Vec<String> = apps.iter().filter(|a| a.pid > 0 && a.pid != me).map(|a| a.pid.to_string()).collect();
    let mine = writers.contains(&me);
    match (mine, who.is_empty()) {
        (true, true) => format!("{verb} held by {this}: a session of it already holds {them}"),
        (true, false) => format!("{verb} held by {this} and by {}", who.join(", ")),
        (false, false) => format!("{verb} held by {}", who.join(", ")),
        (false, true) if others.is_empty() => format!(
            "{verb} held by {this}: no other process has the device open (the driver names no writer of {them}), \
             so a session of it already holds {them}"
        ),
        (false, true) => format!(
            "{verb} held, and the driver names no writer of {them}: by {this} (a session of it already open on \
             {them}) or by a process with the device open: {}",
            others.join(", ")
        ),
    }
}
