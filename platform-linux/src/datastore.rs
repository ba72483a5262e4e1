//! A process's datastore in the driver: where the runtime writes its per-core
//! execution counters and where monitors (neuron-monitor, `nrtctl stats`) read
//! them (neuron_ds.c; the layout is `nrt_abi::nds`).
//!
//! [`Datastore::own`] acquires this process's (`ACQUIRE_NEURON_DS {pid 0}`),
//! maps it and writes the header; [`Datastore::write_nc`] writes one core's
//! counters at the driver's offsets. [`Datastore::monitor`] acquires another
//! process's (`{pid N}`) and maps it read-only, as the SDK's `nds_open` does
//! for a pid other than 0 (the driver itself would grant a writable mapping: a
//! datastore's chunk is device-lifespan, neuron_mmap.c `nmmap_mem`). Dropping either unmaps it, then releases it
//! (`RELEASE_NEURON_DS`): the owner's release clears and zeroes it, a monitor's
//! changes nothing (neuron_ds.c `neuron_ds_release_pid`).
//!
//! The driver keeps one datastore per process and device, with no count of
//! its users: the owner's first release clears it. So a process counts
//! through one [`ProcessCounters`] per device node ([`ProcessCounters::of`]:
//! acquired once, released when the last user lets go), whose RAM blocks are
//! the only copy it writes from: a session's own harvest, a poller's or an
//! XU unit's, and a C runtime's rings ([`CounterTarget`]) add into the same
//! counters, and none overwrites another's.

use std::io;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use nrt_abi::nds;
use nrt_core::counters::{id, NcCounterBlock, NcUpdate};

use crate::device::NeuronDevice;
use crate::error::LinuxError;
use crate::ioctl;
use crate::sys::Mapping;

/// One NC's counters as read out of a datastore, by id.
pub type NcValues = [u64; id::TOTAL_NC_COUNTER_COUNT];

/// A mapped datastore and the pid it was acquired for (0: this process's own).
pub struct Datastore {
    dev: Arc<NeuronDevice>,
    map: Option<Mapping>,
    pid: i32,
    info: ioctl::NeuronDsInfo,
}

impl core::fmt::Debug for Datastore {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Datastore")
            .field("device", &self.dev.path())
            .field("pid", &self.pid)
            .field("mmap_offset", &self.info.mmap_offset)
            .field("size", &self.info.size)
            .finish()
    }
}

impl Datastore {
    /// This process's datastore: acquired (pid 0), mapped, its header written
    /// (`nds_header_t`: [`nds::NDS_SIGNATURE`] at [`nds::NDS_SIGNATURE_OFFSET`],
    /// [`nds::NDS_VERSION`] at [`nds::NDS_VERSION_OFFSET`]).
    pub fn own(dev: Arc<NeuronDevice>) -> Result<Datastore, LinuxError> {
        let ds = Datastore::acquire(dev, 0)?;
        let map = ds.mapping()?;
        let sig = u32::from_le_bytes(nds::NDS_SIGNATURE);
        map.write32(nds::NDS_SIGNATURE_OFFSET as u64, sig)
            .and_then(|()| map.write32(nds::NDS_VERSION_OFFSET as u64, nds::NDS_VERSION as u32))
            .map_err(|e| ds.err("datastore header write", e))?;
        Ok(ds)
    }

    /// Process `pid`'s datastore, for reading as a monitor does. `ENOENT` from
    /// the driver when the process has none (it never made one, released it,
    /// or exited).
    pub fn monitor(dev: Arc<NeuronDevice>, pid: i32) -> Result<Datastore, LinuxError> {
        if pid <= 0 {
            return Err(dev.refuse(
                ioctl::ACQUIRE_NEURON_DS.name(),
                format!("pid {pid}: a monitor names a process (pid 0 would create this process's own datastore)"),
            ));
        }
        Datastore::acquire(dev, pid)
    }

    fn acquire(dev: Arc<NeuronDevice>, pid: i32) -> Result<Datastore, LinuxError> {
        let info = dev.acquire_neuron_ds(pid).map_err(|e| e.with_detail(format!("datastore of pid {pid}")))?;
        let want = ioctl::NEURON_DATASTORE_SIZE;
        if info.size < want {
            let why = format!("pid {pid}: the driver's datastore is {} bytes, the layout needs {want}", info.size);
            let _ = dev.release_neuron_ds(pid);
            return Err(dev.refuse(ioctl::ACQUIRE_NEURON_DS.name(), why));
        }
        // The driver maps a chunk only whole (neuron_mmap.c `nmmap_get_mc`); a
        // monitor's view read-only, as the SDK's `nds_open` opens it (the
        // driver would grant write access: the chunk is device-lifespan).
        let map = if pid == 0 {
            Mapping::map(dev.file(), info.mmap_offset, info.size as usize)
        } else {
            Mapping::map_read_only(dev.file(), info.mmap_offset, info.size as usize)
        };
        let mut ds = Datastore { dev, map: None, pid, info };
        ds.map = Some(map.map_err(|e| {
            ds.err(
                "mmap",
                io::Error::new(e.kind(), format!("{e}: datastore of pid {pid} at offset 0x{:x}", info.mmap_offset)),
            )
        })?);
        Ok(ds)
    }

    fn mapping(&self) -> Result<&Mapping, LinuxError> {
        self.map.as_ref().ok_or_else(|| self.err("datastore", io::Error::other("not mapped")))
    }

    fn err(&self, call: &'static str, e: io::Error) -> LinuxError {
        LinuxError::new(call, self.dev.path().display().to_string(), e)
    }

    /// The pid it was acquired for (0: this process's).
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// What `ACQUIRE_NEURON_DS` returned.
    pub fn info(&self) -> ioctl::NeuronDsInfo {
        self.info
    }

    /// Write NC `nc`'s counters (ids below [`id::WRITTEN_END`]) at the
    /// driver's offsets. Each word is one atomic store (a monitor reading at
    /// the same time sees each counter whole); the latency-sample count last,
    /// with Release, after the samples it counts.
    pub fn write_nc(&self, nc: usize, block: &NcCounterBlock) -> Result<(), LinuxError> {
        if self.pid != 0 {
            let why = format!("pid {}'s datastore is mapped read-only: a monitor does not write", self.pid);
            return Err(self.err("datastore write", io::Error::new(io::ErrorKind::PermissionDenied, why)));
        }
        let map = self.mapping()?;
        for (c, v) in block.values().iter().enumerate().take(id::WRITTEN_END) {
            if c == id::LATENCY_SAMPLES_WRITTEN {
                continue;
            }
            self.store(map, nc, c, *v, Ordering::Relaxed)?;
        }
        self.store(map, nc, id::LATENCY_SAMPLES_WRITTEN, block.get(id::LATENCY_SAMPLES_WRITTEN), Ordering::Release)
    }

    fn store(&self, map: &Mapping, nc: usize, c: usize, v: u64, order: Ordering) -> Result<(), LinuxError> {
        let off = nds::nc_counter_offset(nc, c).ok_or_else(|| {
            self.err(
                "datastore write",
                io::Error::new(io::ErrorKind::InvalidInput, format!("no slot for NC {nc} counter {c}")),
            )
        })?;
        map.store64(off as u64, v, order).map_err(|e| self.err("datastore write", e))
    }

    /// Whether the process still holds this datastore: a monitor's acquire
    /// again (idempotent in the driver, nothing counted) names the same
    /// memory. `Ok(false)` when the driver says `ENOENT` (released, or the
    /// process gone: the memory now reads zeros and may be handed to another
    /// process) or hands another offset. The header is not consulted: the
    /// driver never writes or checks it, and a runtime need not.
    pub fn still_held(&self) -> Result<bool, LinuxError> {
        match self.dev.acquire_neuron_ds(self.pid) {
            Ok(info) => Ok(info.mmap_offset == self.info.mmap_offset),
            Err(e) if e.errno() == Some(libc::ENOENT) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The header's signature and version.
    pub fn header(&self) -> Result<([u8; 4], i32), LinuxError> {
        let map = self.mapping()?;
        let sig = map.read32(nds::NDS_SIGNATURE_OFFSET as u64).map_err(|e| self.err("datastore read", e))?;
        let ver = map.read32(nds::NDS_VERSION_OFFSET as u64).map_err(|e| self.err("datastore read", e))?;
        Ok((sig.to_le_bytes(), ver as i32))
    }

    /// NC `nc`'s counters, all 95 ids, as the driver's
    /// `get_neuroncore_counter_value` reads them.
    pub fn read_nc(&self, nc: usize) -> Result<NcValues, LinuxError> {
        let map = self.mapping()?;
        let mut out = [0u64; id::TOTAL_NC_COUNTER_COUNT];
        // The sample count first, with Acquire: the samples it counts are
        // written. A monitor's mapping is read-only: `load64` loads it
        // `Relaxed` with an Acquire fence after, the load Rust allows there.
        for c in core::iter::once(id::LATENCY_SAMPLES_WRITTEN).chain(0..id::TOTAL_NC_COUNTER_COUNT) {
            let Some(off) = nds::nc_counter_offset(nc, c) else { continue };
            let order = if c == id::LATENCY_SAMPLES_WRITTEN { Ordering::Acquire } else { Ordering::Relaxed };
            let v = map.load64(off as u64, order).map_err(|e| self.err("datastore read", e))?;
            if let Some(slot) = out.get_mut(c) {
                *slot = v;
            }
        }
        Ok(out)
    }

    /// The counters of NCs `0..ncs`.
    pub fn read_ncs(&self, ncs: usize) -> Result<Vec<NcValues>, LinuxError> {
        (0..ncs.min(nds::NDS_NC_MAX)).map(|nc| self.read_nc(nc)).collect()
    }
}

impl Drop for Datastore {
    fn drop(&mut self) {
        self.map = None;
        if let Err(e) = self.dev.release_neuron_ds(self.pid) {
            log::warn!("datastore release: {e}");
        }
    }
}

/// This process's counters on one device: its datastore, acquired once per
/// process and device node, and the RAM blocks of the datastore's 16 NCs it
/// writes from, shared by every harvest of the process on the device (see the
/// module's documentation). Released (unmapped, `RELEASE_NEURON_DS`) when the
/// last holder drops it.
pub struct ProcessCounters {
    ds: Datastore,
    blocks: Mutex<Vec<NcCounterBlock>>,
}

impl core::fmt::Debug for ProcessCounters {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ProcessCounters").field("datastore", &self.ds).finish()
    }
}

/// The live [`ProcessCounters`] of this process, by device node and pid (a
/// forked child is another process: the driver gives it a datastore of its
/// own).
fn registry() -> MutexGuard<'static, Vec<(PathBuf, u32, Weak<ProcessCounters>)>> {
    static REGISTRY: Mutex<Vec<(PathBuf, u32, Weak<ProcessCounters>)>> = Mutex::new(Vec::new());
    REGISTRY.lock().unwrap_or_else(|p| p.into_inner())
}

impl ProcessCounters {
    /// This process's counters on the device `dev` opened: the live ones of
    /// its node if some harvest of the process holds them, else its datastore
    /// acquired ([`Datastore::own`]) with every counter 0.
    pub fn of(dev: &Arc<NeuronDevice>) -> Result<Arc<ProcessCounters>, LinuxError> {
        let pid = std::process::id();
        let mut reg = registry();
        reg.retain(|(_, _, w)| w.strong_count() > 0);
        let live = reg.iter().find(|(path, p, _)| path == dev.path() && *p == pid).and_then(|(_, _, w)| w.upgrade());
        if let Some(c) = live {
            return Ok(c);
        }
        let ds = Datastore::own(Arc::clone(dev))?;
        let c = Arc::new(ProcessCounters { ds, blocks: Mutex::new(vec![NcCounterBlock::new(); nds::NDS_NC_MAX]) });
        reg.push((dev.path().to_path_buf(), pid, Arc::downgrade(&c)));
        Ok(c)
    }

    fn blocks(&self) -> MutexGuard<'_, Vec<NcCounterBlock>> {
        self.blocks.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Count `update` on the datastore's NC `nc` at `now_ns` (the clock the
    /// update's start was read on): into the RAM block, then the block into
    /// the datastore ([`Datastore::write_nc`]), under one lock, so that
    /// concurrent harvests of the process add up. An NC past the datastore's
    /// 16 is refused, naming it.
    pub fn count(&self, nc: usize, update: &NcUpdate, now_ns: u64) -> Result<(), LinuxError> {
        let mut blocks = self.blocks();
        let Some(block) = blocks.get_mut(nc) else {
            let why = format!("NC {nc}: the datastore has counters for NCs 0 to {}", nds::NDS_NC_MAX - 1);
            return Err(self.ds.err("datastore write", io::Error::new(io::ErrorKind::InvalidInput, why)));
        };
        block.apply(update, now_ns);
        self.ds.write_nc(nc, block)
    }

    /// NC `nc`'s counters as this process counted them (`None` past NC 15).
    pub fn block(&self, nc: usize) -> Option<NcCounterBlock> {
        self.blocks().get(nc).copied()
    }

    /// The datastore the counters are written to.
    pub fn datastore(&self) -> &Datastore {
        &self.ds
    }
}

/// Where a harvest's counters go: a [`ProcessCounters`] and the datastore NCs
/// of the harvest's cores (core `c` is NC `first_nc + c`; a core at or past
/// `cores` is not this target's and is not counted). A session hands out its
/// own ([`crate::session::Session::counter_target`]); a poller's or an XU
/// unit's device holds one ([`crate::rings::MappedDevice::counters`], and
/// for C, `nrt_rings_count_into`).
#[derive(Clone, Debug)]
pub struct CounterTarget {
    counters: Arc<ProcessCounters>,
    first_nc: u8,
    cores: u8,
}

impl CounterTarget {
    /// Cores `0..cores` of a harvest counted at NCs `first_nc..first_nc + cores`.
    pub fn new(counters: Arc<ProcessCounters>, first_nc: u8, cores: u8) -> CounterTarget {
        CounterTarget { counters, first_nc, cores }
    }

    /// Count `update` of the harvest's core `core` at `now_ns`: `Ok(false)`
    /// for a core that is not the target's (nothing written).
    pub fn count(&self, core: u8, update: &NcUpdate, now_ns: u64) -> Result<bool, LinuxError> {
        if core >= self.cores {
            return Ok(false);
        }
        let nc = usize::from(self.first_nc) + usize::from(core);
        self.counters.count(nc, update, now_ns).map(|()| true)
    }

    /// The datastore NC of the harvest's core 0.
    pub fn first_nc(&self) -> u8 {
        self.first_nc
    }

    /// The harvest's cores counted.
    pub fn cores(&self) -> u8 {
        self.cores
    }

    /// The process's counters this target writes into.
    pub fn counters(&self) -> &Arc<ProcessCounters> {
        &self.counters
    }
}
