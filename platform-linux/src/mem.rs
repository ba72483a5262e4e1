//! Memory objects of a session: host memory the driver allocates and this
//! process maps, or device memory, freed when the last holder drops.
//!
//! A [`Mem`] is shared by the caller and every execution that copies it, so
//! it lives until the last of them is done, then is unmapped and freed. Made
//! by [`crate::session::Session::alloc`]; the sessions on its device copy it.
//! In a forked child it has no mapping: neuron_mmap.c `nmmap_mem` sets
//! `VM_DONTCOPY`.

use std::sync::atomic::{fence, Ordering};
use std::sync::Arc;

use crate::api_error::Error;
use crate::device::NeuronDevice;
use crate::sys::Mapping;

/// Where a memory object lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum MemKind {
    /// Host memory, mapped into this process: `NRT_MEM_HOST`.
    Host = 0,
    /// Device memory, reached only by DMA: `NRT_MEM_DEVICE`.
    Device = 1,
}

impl MemKind {
    /// The kind of a C `where` argument.
    pub fn from_raw(v: u32) -> Option<MemKind> {
        match v {
            0 => Some(MemKind::Host),
            1 => Some(MemKind::Device),
            _ => None,
        }
    }

    /// Its name in messages.
    pub fn name(self) -> &'static str {
        match self {
            MemKind::Host => "host",
            MemKind::Device => "device",
        }
    }
}

/// One chunk the driver allocated for a memory object.
#[derive(Debug)]
pub(crate) struct MemChunk {
    pub(crate) dev: Arc<NeuronDevice>,
    pub(crate) handle: u64,
    /// Physical address on the device.
    pub(crate) pa: u64,
    /// Bytes asked; the chunk may be larger, in whole pages.
    pub(crate) size: u64,
    pub(crate) kind: MemKind,
    pub(crate) map: Option<Mapping>,
    pub(crate) owner: crate::fork::Owner,
    /// A copy whose marker never came may still write it: not freed but left
    /// to the device file's close, which re-points the process's queues before
    /// it frees its chunks, neuron_cdev.c `ncdev_flush`.
    pub(crate) left_to_close: std::sync::atomic::AtomicBool,
}

impl Drop for MemChunk {
    fn drop(&mut self) {
        if self.owner.inherited() {
            // The parent's chunk: forget it, G-FORK.
            std::mem::forget(self.map.take());
            return;
        }
        drop(self.map.take());
        if self.left_to_close.load(Ordering::Relaxed) {
            return;
        }
        if let Err(e) = self.dev.mem_free(self.handle) {
            log::warn!("nrt: freeing {} memory of {} bytes at 0x{:x}: {e}", self.kind.name(), self.size, self.pa);
        }
    }
}

/// A memory object: host or device memory of one session.
#[derive(Clone, Debug)]
pub struct Mem(pub(crate) Arc<MemChunk>);

impl Mem {
    /// Bytes.
    pub fn size(&self) -> u64 {
        self.0.size
    }

    /// Host or device.
    pub fn kind(&self) -> MemKind {
        self.0.kind
    }

    /// Its address as the device sees it.
    pub fn device_address(&self) -> u64 {
        self.0.pa
    }

    /// The mapped bytes of host memory as atomics, since the device writes
    /// them by DMA while this process may read them; `None` for device memory.
    pub fn host_bytes(&self) -> Option<&[std::sync::atomic::AtomicU8]> {
        if self.0.owner.inherited() {
            return None;
        }
        let len = usize::try_from(self.0.size).ok()?;
        self.0.map.as_ref()?.bytes(0, len)
    }

    /// Write `data` at `off` of host memory, Release: a copy submitted after sees it.
    pub fn write(&self, off: u64, data: &[u8]) -> Result<(), Error> {
        let dst = self.host_range("write", off, data.len())?;
        for (d, s) in dst.iter().zip(data) {
            d.store(*s, Ordering::Relaxed);
        }
        fence(Ordering::Release);
        Ok(())
    }

    /// Read `out.len()` bytes at `off` of host memory, Acquire: after a finished copy, its bytes.
    pub fn read(&self, off: u64, out: &mut [u8]) -> Result<(), Error> {
        let src = self.host_range("read", off, out.len())?;
        fence(Ordering::Acquire);
        for (o, s) in out.iter_mut().zip(src) {
            *o = s.load(Ordering::Relaxed);
        }
        Ok(())
    }

    fn host_range(&self, call: &'static str, off: u64, len: usize) -> Result<&[std::sync::atomic::AtomicU8], Error> {
        let what = || format!("{} memory of {} bytes at 0x{:x}", self.0.kind.name(), self.0.size, self.0.pa);
        self.0.owner.check("memory").map_err(|source| Error::Forked { call, source })?;
        let Some(all) = self.host_bytes() else {
            return Err(Error::invalid(call, what(), "device memory has no host mapping: copy it to host memory"));
        };
        let end = off.checked_add(len as u64).filter(|e| *e <= self.0.size);
        match end {
            Some(e) => Ok(&all[off as usize..e as usize]),
            None => Err(Error::invalid(call, what(), format!("{len} bytes at offset {off} run past its end"))),
        }
    }

    /// Leave the chunk to the device file's close, not `MEM_FREE`: a DMA may still write it.
    pub(crate) fn leave_to_close(&self) {
        self.0.left_to_close.store(true, Ordering::Relaxed);
    }

    /// Whether two handles are the same object.
    pub fn same(&self, other: &Mem) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// What an allocation needs of its session, kept apart so that a stream
/// allocates without waiting for the execution running.
#[derive(Clone, Debug)]
pub(crate) struct Allocator {
    pub(crate) dev: Arc<NeuronDevice>,
    pub(crate) arch: nrt_core::arch::Arch,
    /// The session's staging engine, whose HBM takes device memory.
    pub(crate) engine: u32,
    /// The device's core of the session's core 0.
    pub(crate) first_core: u8,
    pub(crate) owner: crate::fork::Owner,
    /// The device and cores, for messages.
    pub(crate) site: String,
}

impl Allocator {
    /// Allocate `size` bytes of `kind` memory with `MEM_ALLOC_V2MT` and
    /// `MEM_GET_EXTENDED_INFO`: host memory is `TENSORS_HOST`, mapped; device
    /// memory `TENSORS_DEVICE` on the staging engine's HBM, G-MEM-TYPE.
    pub(crate) fn alloc(&self, kind: MemKind, size: u64) -> Result<Mem, Error> {
        use nrt_abi::ioctl::{mem_type, MemAllocV2Mt};
        const CALL: &str = "nrt_mem_alloc";
        self.owner.check("session").map_err(|source| Error::Forked { call: CALL, source })?;
        if size == 0 || size > i64::MAX as u64 {
            return Err(Error::invalid(CALL, &self.site, format!("{size} bytes: 1 to {} accepted", i64::MAX)));
        }
        let a = match kind {
            MemKind::Host => {
                MemAllocV2Mt { size, host_memory: 1, mem_type: mem_type::TENSORS_HOST, ..Default::default() }
            }
            MemKind::Device => MemAllocV2Mt {
                size,
                host_memory: 0,
                dram_channel: nrt_abi::devmap::hbm_of(self.arch, self.engine),
                nc_id: u32::from(self.first_core),
                mem_type: mem_type::TENSORS_DEVICE,
                ..Default::default()
            },
        };
        let handle = self.dev.mem_alloc_v2mt(a).map_err(|e| {
            let e = Error::from(e);
            match e {
                Error::NoMemory(inner) => {
                    Error::NoMemory(inner.with_detail(format!("{size} bytes of {} memory asked", kind.name())))
                }
                other => other,
            }
        })?;
        let mut chunk = MemChunk {
            dev: Arc::clone(&self.dev),
            handle,
            pa: 0,
            size,
            kind,
            map: None,
            owner: self.owner,
            left_to_close: Default::default(),
        };
        // From here a failure frees the chunk (its drop).
        let info = self.dev.mem_get_extended_info(handle)?;
        if info.size < size {
            let why = format!("chunk {handle:#x} has {} bytes, {size} were asked", info.size);
            return Err(Error::invalid(CALL, &self.site, why));
        }
        if (info.host_memory == 1) != (kind == MemKind::Host) {
            let why =
                format!("chunk {handle:#x} of {} memory came back with host_memory {}", kind.name(), info.host_memory);
            return Err(Error::invalid(CALL, &self.site, why));
        }
        chunk.pa = info.pa;
        if kind == MemKind::Host {
            let len = usize::try_from(info.size).map_err(|_| {
                Error::invalid(CALL, &self.site, format!("{} bytes do not fit this address space", info.size))
            })?;
            let map = Mapping::map(self.dev.file(), info.mmap_offset, len)
                .map_err(|e| crate::LinuxError::new("mmap", self.dev.path().display().to_string(), e))?;
            chunk.map = Some(map);
        }
        Ok(Mem(Arc::new(chunk)))
    }
}
