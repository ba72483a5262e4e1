//! A process's datastore in the driver, where the runtime writes its per-core
//! execution counters and monitors read them. Driver: neuron_ds.c; the layout
//! is `nrt_abi::nds`.
//!
//! The driver keeps one datastore per process and device, with no count of its
//! users: the owner's first release clears it (neuron_ds.c,
//! neuron_ds_release_pid). So a process counts through one [`ProcessCounters`]
//! per device node, acquired once and released by the last holder, both under
//! one lock; every harvest of the process adds into it. [`Datastore::monitor`]
//! maps another process's read-only, as the SDK's `nds_open` does.

use std::io;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};

use nrt_abi::nds;
use nrt_core::counters::{id, NcCounterBlock, NcUpdate};

use crate::device::NeuronDevice;
use crate::error::LinuxError;
use crate::fork::Owner;
use crate::ioctl;
use crate::sys::Mapping;

/// One NC's counters as read out of a datastore, by id.
pub type NcValues = [u64; id::TOTAL_NC_COUNTER_COUNT];

/// A mapped datastore and the pid it was acquired for, 0 for this process's own.
pub struct Datastore {
    dev: Arc<NeuronDevice>,
    map: Option<Mapping>,
    pid: i32,
    info: ioctl::NeuronDsInfo,
    /// Unmapped and released already.
    released: bool,
    /// The process that acquired it.
    owner: Owner,
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
    /// This process's datastore, acquired with pid 0, mapped, and its
    /// `nds_header_t` written: [`nds::NDS_SIGNATURE`] and [`nds::NDS_VERSION`].
    /// Only through [`ProcessCounters::of`].
    pub(crate) fn own(dev: Arc<NeuronDevice>) -> Result<Datastore, LinuxError> {
        let ds = Datastore::acquire(dev, 0)?;
        let map = ds.mapping()?;
        let sig = u32::from_le_bytes(nds::NDS_SIGNATURE);
        map.write32(nds::NDS_SIGNATURE_OFFSET as u64, sig)
            .and_then(|()| map.write32(nds::NDS_VERSION_OFFSET as u64, nds::NDS_VERSION as u32))
            .map_err(|e| ds.err("datastore header write", e))?;
        Ok(ds)
    }

    /// Process `pid`'s datastore, for reading as a monitor does; `ENOENT` when the process has none.
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
        // The driver maps a chunk only whole (driver: neuron_mmap.c,
        // nmmap_get_mc). A monitor's view is read-only, as `nds_open` opens it,
        // though the driver would grant write access (neuron_mmap.c, nmmap_mem).
        let map = if pid == 0 {
            Mapping::map(dev.file(), info.mmap_offset, info.size as usize)
        } else {
            Mapping::map_read_only(dev.file(), info.mmap_offset, info.size as usize)
        };
        let mut ds = Datastore { dev, map: None, pid, info, released: false, owner: Owner::here() };
        ds.map = Some(map.map_err(|e| {
            ds.err(
                "mmap",
                io::Error::new(e.kind(), format!("{e}: datastore of pid {pid} at offset 0x{:x}", info.mmap_offset)),
            )
        })?);
        Ok(ds)
    }

    fn mapping(&self) -> Result<&Mapping, LinuxError> {
        self.check("datastore")?;
        self.map.as_ref().ok_or_else(|| self.err("datastore", io::Error::other("not mapped")))
    }

    /// `Err` refusing `call` in a child forked after the acquire.
    fn check(&self, call: &'static str) -> Result<(), LinuxError> {
        self.owner.check("datastore").map_err(|f| f.into_linux(call, self.dev.path().display().to_string()))
    }

    fn err(&self, call: &'static str, e: io::Error) -> LinuxError {
        LinuxError::new(call, self.dev.path().display().to_string(), e)
    }

    /// The pid it was acquired for; 0 is this process.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// What `ACQUIRE_NEURON_DS` returned.
    pub fn info(&self) -> ioctl::NeuronDsInfo {
        self.info
    }

    /// Write NC `nc`'s counters below [`id::WRITTEN_END`] at the driver's
    /// offsets, each an atomic store, so that a monitor sees each whole. The
    /// latency-sample count goes last, with Release.
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
    /// again, idempotent in the driver, names the same memory. `Ok(false)` on
    /// `ENOENT` or another offset. The header is not consulted, as the driver
    /// never checks it.
    pub fn still_held(&self) -> Result<bool, LinuxError> {
        // In a forked child, pid 0 would name the child's own datastore.
        self.check(ioctl::ACQUIRE_NEURON_DS.name())?;
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

    /// NC `nc`'s counters, all 95 ids, as the driver reads them (neuron_ds.c,
    /// get_neuroncore_counter_value).
    pub fn read_nc(&self, nc: usize) -> Result<NcValues, LinuxError> {
        let map = self.mapping()?;
        let mut out = [0u64; id::TOTAL_NC_COUNTER_COUNT];
        // The sample count first, with Acquire, so that the samples it counts
        // are written; on the read-only mapping, a Relaxed load and a fence.
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

impl Datastore {
    /// Unmap it, then release it, once; the drop does it unless this did. In a
    /// forked child it is forgotten instead.
    fn release(&mut self) {
        if std::mem::replace(&mut self.released, true) {
            return;
        }
        if self.owner.inherited() {
            std::mem::forget(self.map.take());
            std::mem::forget(Arc::clone(&self.dev));
            return;
        }
        self.map = None;
        if let Err(e) = self.dev.release_neuron_ds(self.pid) {
            log::warn!("datastore release: {e}");
        }
    }
}

impl Drop for Datastore {
    fn drop(&mut self) {
        self.release();
    }
}

/// This process's counters on one device: its datastore and the RAM blocks
/// of its 16 NCs, shared by every harvest of the process there. Released by
/// the last [`CountersHolder`]'s drop.
pub struct ProcessCounters {
    ds: Datastore,
    blocks: Mutex<Vec<NcCounterBlock>>,
}

impl core::fmt::Debug for ProcessCounters {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ProcessCounters").field("datastore", &self.ds).finish()
    }
}

/// One process's counters on one device node, with the number of their holders.
struct Entry {
    node: PathBuf,
    pid: u32,
    counters: Arc<ProcessCounters>,
    holders: usize,
}

/// The held [`ProcessCounters`], by device node and pid. An entry is made,
/// counted and removed, and its datastore acquired and released, only under
/// this lock: a caller finds the counters held or released, never between,
/// as an acquire during a release would get the datastore about to be cleared.
fn registry() -> MutexGuard<'static, Vec<Entry>> {
    static REGISTRY: Mutex<Vec<Entry>> = Mutex::new(Vec::new());
    REGISTRY.lock().unwrap_or_else(|p| p.into_inner())
}

impl ProcessCounters {
    /// A holder of this process's counters on `dev`'s node: those held already,
    /// else its datastore acquired anew with every counter 0.
    pub fn of(dev: &Arc<NeuronDevice>) -> Result<CountersHolder, LinuxError> {
        let pid = std::process::id();
        let mut reg = registry();
        if let Some(e) = reg.iter_mut().find(|e| e.node == dev.node() && e.pid == pid) {
            e.holders += 1;
            return Ok(CountersHolder { counters: Arc::clone(&e.counters) });
        }
        let ds = Datastore::own(Arc::clone(dev))?;
        let counters =
            Arc::new(ProcessCounters { ds, blocks: Mutex::new(vec![NcCounterBlock::new(); nds::NDS_NC_MAX]) });
        reg.push(Entry { node: dev.node().to_path_buf(), pid, counters: Arc::clone(&counters), holders: 1 });
        Ok(CountersHolder { counters })
    }

    fn blocks(&self) -> MutexGuard<'_, Vec<NcCounterBlock>> {
        self.blocks.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Count `update` on NC `nc` at `now_ns`, on the clock its start was read
    /// on: into the RAM block, then the block into the datastore, under one
    /// lock, so that concurrent harvests add up. An NC past the 16th is refused.
    pub fn count(&self, nc: usize, update: &NcUpdate, now_ns: u64) -> Result<(), LinuxError> {
        self.ds.check("datastore write")?;
        let mut blocks = self.blocks();
        let Some(block) = blocks.get_mut(nc) else {
            let why = format!("NC {nc}: the datastore has counters for NCs 0 to {}", nds::NDS_NC_MAX - 1);
            return Err(self.ds.err("datastore write", io::Error::new(io::ErrorKind::InvalidInput, why)));
        };
        block.apply(update, now_ns);
        self.ds.write_nc(nc, block)
    }

    /// NC `nc`'s counters as this process counted them; `None` past NC 15.
    pub fn block(&self, nc: usize) -> Option<NcCounterBlock> {
        self.blocks().get(nc).copied()
    }

    /// The datastore the counters are written to.
    pub fn datastore(&self) -> &Datastore {
        &self.ds
    }
}

/// A hold on this process's counters on one device. The datastore stays
/// acquired while any holder lives; the last one's drop releases it, under
/// the registry's lock.
pub struct CountersHolder {
    counters: Arc<ProcessCounters>,
}

impl core::fmt::Debug for CountersHolder {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_tuple("CountersHolder").field(&*self.counters).finish()
    }
}

impl core::ops::Deref for CountersHolder {
    type Target = ProcessCounters;
    fn deref(&self) -> &ProcessCounters {
        &self.counters
    }
}

impl Drop for CountersHolder {
    fn drop(&mut self) {
        // A forked child's copy is the parent's: forgotten, taking no lock that
        // another thread of the parent may have held at the fork.
        if self.counters.ds.owner.inherited() {
            std::mem::forget(Arc::clone(&self.counters));
            return;
        }
        let mut reg = registry();
        let Some(i) = reg.iter().position(|e| Arc::ptr_eq(&e.counters, &self.counters)) else { return };
        let Some(e) = reg.get_mut(i) else { return };
        e.holders = e.holders.saturating_sub(1);
        if e.holders > 0 {
            return;
        }
        drop(reg.swap_remove(i));
        // The registry's reference gone, this holder's is the last: the
        // datastore is released here, before the lock is let go.
        match Arc::get_mut(&mut self.counters) {
            Some(c) => c.ds.release(),
            None => log::error!(
                "datastore release: the counters of {} are still referenced past their last holder; released when \
                 that reference goes",
                self.counters.ds.dev.path().display()
            ),
        }
    }
}

/// Where a harvest's counters go: core `c` at NC `first_nc + c` of a
/// [`ProcessCounters`]; a core past `cores` is not counted. Its clones share
/// one [`CountersHolder`].
#[derive(Clone, Debug)]
pub struct CounterTarget {
    counters: Arc<CountersHolder>,
    first_nc: u8,
    cores: u8,
}

impl CounterTarget {
    /// Cores `0..cores` of a harvest counted at NCs `first_nc..first_nc + cores`.
    pub fn new(counters: CountersHolder, first_nc: u8, cores: u8) -> CounterTarget {
        CounterTarget { counters: Arc::new(counters), first_nc, cores }
    }

    /// Count `update` of the harvest's core `core` at `now_ns`; `Ok(false)` for a core not the target's.
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
    pub fn counters(&self) -> &ProcessCounters {
        &self.counters
    }

    /// `Err` in a child forked after the counters were acquired.
    pub fn check(&self) -> Result<(), crate::fork::ForkedChild> {
        self.counters.ds.owner.check("datastore")
    }
}

/// A driver in this process serving the datastore calls alone, for the
/// tests of what holds the process's counters.
#[cfg(test)]
pub(crate) mod fake_ds {
    use std::sync::mpsc;
    use std::time::Duration;

    use super::*;
    use nrt_sim::driver::model::Request;

    use crate::ioctl::NEURON_DATASTORE_SIZE;
    use crate::sys::fake::Driver;

    /// The driver's datastores of this process, as neuron_ds.c keeps them: an
    /// acquire with pid 0 hands the live one or a new one at a new offset, the
    /// first release clears it. Each call is logged with the offset it saw.
    #[derive(Default)]
    pub(crate) struct DsDriver {
        pub live: Option<u64>,
        pub made: u64,
        pub log: Vec<String>,
        /// Holds the first release before it clears, until another thread's word or a timeout.
        pub gate: Option<(mpsc::Sender<()>, mpsc::Receiver<()>)>,
    }

    pub(crate) struct Served(pub Arc<Mutex<DsDriver>>);

    impl Driver for Served {
        fn ioctl(&mut self, _: u32, req: &mut Request) -> Result<i32, i32> {
            match req {
                Request::AcquireDs(a) if a.pid == 0 => {
                    let mut d = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                    let off = match d.live {
                        Some(off) => off,
                        None => {
                            d.made += 1;
                            let off = d.made * u64::from(NEURON_DATASTORE_SIZE);
                            d.live = Some(off);
                            off
                        }
                    };
                    d.log.push(format!("acquire 0x{off:x}"));
                    (a.mmap_offset, a.size) = (off, NEURON_DATASTORE_SIZE);
                    Ok(0)
                }
                Request::ReleaseDs(r) if r.pid == 0 => {
                    let gate = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).gate.take();
                    if let Some((begun, go)) = gate {
                        begun.send(()).unwrap();
                        let _ = go.recv_timeout(Duration::from_secs(1));
                    }
                    let mut d = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                    let off = d.live.take();
                    d.log.push(off.map_or_else(|| "release (none live)".to_string(), |o| format!("release 0x{o:x}")));
                    Ok(0)
                }
                Request::AcquireDs(_) | Request::ReleaseDs(_) => Err(libc::ENOENT),
                _ => Err(libc::EINVAL),
            }
        }
        fn bar_rw(&mut self, _: u32, _: u32, _: &[u64], _: &mut [u32]) -> Result<i32, i32> {
            Err(libc::EINVAL)
        }
        fn mem_alloc(&mut self, _: &crate::ioctl::MemAllocV2Mt) -> Result<u64, i32> {
            Err(libc::EINVAL)
        }
    }

    /// A temporary node with room for a few datastores.
    pub(crate) fn node(name: &str) -> std::path::PathBuf {
        let p = std::env::temp_dir().join(format!("nrt-linux-ds-{}-{name}", std::process::id()));
        let f = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&p).unwrap();
        f.set_len(8 * u64::from(NEURON_DATASTORE_SIZE)).unwrap();
        p
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use super::fake_ds::{node, DsDriver, Served};
    use super::*;
    use crate::sys::fake;

    /// The last holder dropped on one thread while another asks for the
    /// counters: the second gets a live datastore, not the one being released.
    /// The release is held open up to a second for the other's `of`, which
    /// waits for it instead, then acquires anew.
    #[test]
    fn a_holder_made_while_the_last_one_is_released_gets_a_live_datastore() {
        let p = node("race");
        let (begun_tx, begun) = mpsc::channel();
        let (go, go_rx) = mpsc::channel();
        let drv = Arc::new(Mutex::new(DsDriver { gate: Some((begun_tx, go_rx)), ..DsDriver::default() }));
        fake::install(p.clone(), Box::new(Served(Arc::clone(&drv))));
        let dev = Arc::new(NeuronDevice::open(&p).unwrap());
        let first = ProcessCounters::of(&dev).unwrap();
        let first_off = first.datastore().info().mmap_offset;

        let other = {
            let (dev, drv, p) = (Arc::clone(&dev), Arc::clone(&drv), p.clone());
            std::thread::spawn(move || {
                fake::install(p, Box::new(Served(drv)));
                begun.recv_timeout(Duration::from_secs(10)).expect("the release begins");
                let second = ProcessCounters::of(&dev);
                let _ = go.send(());
                let second = second.unwrap();
                let off = second.datastore().info().mmap_offset;
                (second, off)
            })
        };
        drop(first);
        let (second, off) = other.join().unwrap();
        {
            let d = drv.lock().unwrap();
            assert_eq!(
                d.log,
                [format!("acquire 0x{first_off:x}"), format!("release 0x{first_off:x}"), format!("acquire 0x{off:x}")],
                "the second acquire after the first release"
            );
            assert_eq!(d.live, Some(off), "the second holder's datastore is the live one");
        }
        assert_ne!(off, first_off);
        let done = NcUpdate {
            status: nrt_core::NrtStatus::Success,
            sequencer_error: false,
            correctable_ecc: false,
            device_latency_us: 1,
            started_ns: 0,
            harvested: true,
            execution: None,
        };
        second.count(0, &done, 1_000).expect("the second holder counts");
        assert_eq!(second.datastore().read_nc(0).unwrap()[id::INFER_COMPLETED], 1);
        drop(second);
        assert_eq!(drv.lock().unwrap().live, None, "released with its last holder");
        fake::uninstall();
        let _ = std::fs::remove_file(&p);
    }
}
