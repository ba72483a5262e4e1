//! Bring-up (steps 1-8) and teardown (step 10).

use super::*;

impl Session {
    /// Bring up `cfg.cores` cores of the device at `path` (steps 1-8). On any
    /// failure, what was acquired is released before the error returns.
    pub fn open(path: impl AsRef<std::path::Path>, cfg: SessionConfig) -> Result<Session, LinuxError> {
        let dev = Arc::new(NeuronDevice::open(path)?);
        let driver = dev.driver_info()?;
        let arch = u8::try_from(driver.architecture).ok().and_then(Arch::from_arch_type).ok_or_else(|| {
            refused(
                &dev,
                ioctl::DRIVER_INFO_GET.name(),
                format!("unknown architecture {} (this binding knows 2, 3 and 4)", driver.architecture),
            )
        })?;
        let compat = dev.compatible_version()?;
        check_compatible(arch, compat).map_err(|why| refused(&dev, ioctl::COMPATIBLE_VERSION.name(), why))?;
        let info = dev.device_info()?;
        if info.architecture != driver.architecture {
            return Err(refused(
                &dev,
                ioctl::DEVICE_INFO.name(),
                format!("architecture {} where the driver said {}", info.architecture, driver.architecture),
            ));
        }
        let mut bar = DriverBar::new(Arc::clone(&dev), &info)?;
        // What the model says (0, a value out of range or a failed read:
        // nothing, so a real device's unrelated register there is ignored);
        // the caller's choice first.
        let mut hint = |off: u64| bar.read32(simabi::status_window(arch) + off).ok().filter(|v| *v != 0);
        let cores = match cfg.cores {
            Some(c) => c,
            None => hint(simabi::STATUS_MODEL_CORES)
                .and_then(|v| u8::try_from(v).ok())
                .filter(|c| validate(arch, *c, DEFAULT_RING_ENTRIES).is_ok())
                .unwrap_or(cfg.fallback_cores),
        };
        let ring_entries = match cfg.ring_entries {
            Some(n) => n,
            None => hint(simabi::STATUS_MODEL_RING_ENTRIES)
                .filter(|n| validate(arch, 1, *n).is_ok())
                .unwrap_or(cfg.fallback_ring_entries),
        };
        validate(arch, cores, ring_entries).map_err(|why| refused(&dev, "session", why))?;
        let mut s = Session {
            dev,
            arch,
            driver,
            compat,
            info,
            cores,
            ring_entries,
            timeout_s: cfg.timeout_s,
            delay: cfg.delay,
            readers: Vec::new(),
            chunks: Vec::new(),
            queues: Vec::new(),
            device: None,
            nq: Notifications::new(),
            txq: None,
            rxq: None,
            ring_sizes: [[None; NQ_PER_CORE]; MAX_CORES],
            last_status: None,
            closed: false,
        };
        s.own_cores()?;
        s.alloc_chunks()?;
        s.init_queue()?;
        s.init_rings(bar)?;
        Ok(s)
    }

    /// Steps 4 and 5.
    fn own_cores(&mut self) -> Result<(), LinuxError> {
        for nc in 0..u32::from(self.cores) {
            self.dev.crwl_reader_enter(nc)?;
            self.readers.push(nc);
        }
        let map = (1u32 << self.cores) - 1;
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

    /// Step 6.
    fn alloc_chunks(&mut self) -> Result<(), LinuxError> {
        let ring = u64::from(STAGING_RING_DEPTH) * 16;
        for (size, kind) in [
            (ring, mem_type::DMA_RINGS_HOST),
            (ring, mem_type::DMA_RINGS_HOST),
            (COPY_BUFFER_BYTES, mem_type::DMA_RINGS_HOST),
        ] {
            let a = MemAllocV2Mt { size, align: 4096, host_memory: 1, mem_type: kind, ..MemAllocV2Mt::default() };
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

    /// Step 7.
    fn init_queue(&mut self) -> Result<(), LinuxError> {
        let (tx, rx) = match (self.chunks.first(), self.chunks.get(1)) {
            (Some(t), Some(r)) => (t.handle, r.handle),
            _ => return Err(refused(&self.dev, ioctl::DMA_QUEUE_INIT.name(), "no ring memory".into())),
        };
        self.dev.dma_queue_init(DmaQueueInit {
            eng_id: STAGING_ENGINE,
            qid: STAGING_QUEUE,
            tx_desc_count: STAGING_RING_DEPTH,
            rx_desc_count: STAGING_RING_DEPTH,
            tx_handle: tx,
            rx_handle: rx,
            rxc_handle: 0,
            axi_port: 0,
            _pad: 0,
        })?;
        self.queues.push((STAGING_ENGINE, STAGING_QUEUE));
        self.txq = Some(SwDmaQueue::new(STAGING_RING_DEPTH).map_err(|e| self.dma_error("queue", e))?);
        self.rxq = Some(SwDmaQueue::new(STAGING_RING_DEPTH).map_err(|e| self.dma_error("queue", e))?);
        Ok(())
    }

    /// Step 8, and the clock and calibration of each core.
    fn init_rings(&mut self, mut bar: DriverBar) -> Result<(), LinuxError> {
        let origin = bar.read64(simabi::status_window(self.arch) + simabi::STATUS_CLOCK_ORIGIN).unwrap_or(0);
        let rings = MappedRings::new(self.arch, bar);
        let clock = MonotonicClock::new();
        let tensors = tensor_table().ok_or_else(|| {
            refused(&self.dev, "session", format!("a tensor table of {} outputs", simabi::MAX_OUTPUTS))
        })?;
        self.device =
            Some(DriverDevice { rings, arch: self.arch, clock, events: Vec::new(), tensors, probe_error: None });
        // Device time (us since the model's origin) at host time 0.
        let dev_us = if origin == 0 { 0 } else { sys::monotonic_ns().saturating_sub(origin) / 1_000 };
        for core in 0..self.cores {
            for eng in 0..ENGINES_PER_CORE {
                self.nq.set_cal(core, eng, simabi::calibration(core, eng));
            }
            self.nq.set_sync_point(core, SyncPoint { dev_us, cpu_us: 0 });
        }
        self.bind_rings(self.ring_entries)
    }

    pub(super) fn bind_rings(&mut self, ring_entries: u32) -> Result<(), LinuxError> {
        for core in 0..self.cores {
            for (nq, kind) in harvest_rings() {
                let arg = ring_request(core, nq, kind, ring_entries);
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
        let mut errors = Vec::new();
        // munmap: the NQ rings (held by the harvest's device), then the chunks.
        self.device = None;
        for c in self.chunks.iter_mut().rev() {
            c.map = None;
        }
        for (eng, q) in self.queues.drain(..).rev() {
            if let Err(e) = self.dev.dma_queue_release(eng, q) {
                errors.push(e);
            }
        }
        for c in self.chunks.drain(..).rev() {
            if let Err(e) = self.dev.mem_free(c.handle) {
                errors.push(e);
            }
        }
        for nc in self.readers.drain(..).rev() {
            if let Err(e) = self.dev.crwl_reader_exit(nc) {
                errors.push(e);
            }
        }
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
