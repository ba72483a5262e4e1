//! A Neuron device node (`/dev/neuronN`) and the driver's ioctls.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use nrt_core::hal::{self, ErrorType};

use crate::error::LinuxError;
use crate::ioctl::{self, DmaQueueCopyStart, Ioctl, NotificationsInitV2, PlainArg, SemaphoreArg};
use crate::sys;

/// An open device node.
#[derive(Debug)]
pub struct NeuronDevice {
    file: File,
    path: PathBuf,
}

impl NeuronDevice {
    /// Open a device node read-write.
    pub fn open(path: impl AsRef<Path>) -> Result<NeuronDevice, LinuxError> {
        let path = path.as_ref().to_path_buf();
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| LinuxError::new("open", path.display().to_string(), e))?;
        Ok(NeuronDevice { file, path })
    }

    /// The node's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The open file (for `mmap`).
    pub fn file(&self) -> &File {
        &self.file
    }

    fn call<T: PlainArg>(&self, req: Ioctl<T>, arg: &mut T) -> Result<i32, LinuxError> {
        sys::ioctl(self.file.as_fd(), req, arg).map_err(|e| self.failed(req.name(), e))
    }

    fn failed(&self, call: &'static str, e: io::Error) -> LinuxError {
        LinuxError::new(call, self.path.display().to_string(), e)
    }

    fn sema(&self, req: Ioctl<SemaphoreArg>, nc: u32, index: u32, value: u32) -> Result<u32, LinuxError> {
        let mut a = SemaphoreArg { nc_id: nc, semaphore_index: index, value };
        self.call(req, &mut a)?;
        Ok(a.value)
    }

    /// `NEURON_IOCTL_SEMAPHORE_INCREMENT`: the per-inference kickoff (doorbell C).
    pub fn semaphore_increment(&self, nc: u32, index: u32, value: u32) -> Result<(), LinuxError> {
        self.sema(ioctl::SEMAPHORE_INCREMENT, nc, index, value).map(|_| ())
    }

    /// `NEURON_IOCTL_SEMAPHORE_DECREMENT`.
    pub fn semaphore_decrement(&self, nc: u32, index: u32, value: u32) -> Result<(), LinuxError> {
        self.sema(ioctl::SEMAPHORE_DECREMENT, nc, index, value).map(|_| ())
    }

    /// `NEURON_IOCTL_SEMAPHORE_READ`. Semaphores hold signed 32-bit values.
    pub fn semaphore_read(&self, nc: u32, index: u32) -> Result<i32, LinuxError> {
        self.sema(ioctl::SEMAPHORE_READ, nc, index, 0).map(|v| v as i32)
    }

    /// `NEURON_IOCTL_SEMAPHORE_WRITE`.
    pub fn semaphore_write(&self, nc: u32, index: u32, value: u32) -> Result<(), LinuxError> {
        self.sema(ioctl::SEMAPHORE_WRITE, nc, index, value).map(|_| ())
    }

    /// `NEURON_IOCTL_EVENT_SET`.
    pub fn event_set(&self, nc: u32, index: u32, value: u32) -> Result<(), LinuxError> {
        self.sema(ioctl::EVENT_SET, nc, index, value).map(|_| ())
    }

    /// `NEURON_IOCTL_EVENT_GET`.
    pub fn event_get(&self, nc: u32, index: u32) -> Result<u32, LinuxError> {
        self.sema(ioctl::EVENT_GET, nc, index, 0)
    }

    /// `NEURON_IOCTL_NOTIFICATIONS_INIT_V2`: create (or reuse) an NQ ring; returns
    /// the argument with `mmap_offset` and `mem_handle` filled in.
    pub fn notifications_init_v2(&self, mut arg: NotificationsInitV2) -> Result<NotificationsInitV2, LinuxError> {
        if !arg.size.is_power_of_two() {
            return Err(LinuxError::new(
                "NEURON_IOCTL_NOTIFICATIONS_INIT_V2",
                self.path.display().to_string(),
                io::Error::new(io::ErrorKind::InvalidInput, "ring size must be a power of two"),
            ));
        }
        self.call(ioctl::NOTIFICATIONS_INIT_V2, &mut arg)?;
        Ok(arg)
    }

    /// `NEURON_IOCTL_BAR_READ` of one register at absolute address `addr`.
    pub fn bar_read(&self, bar: u32, addr: u64) -> Result<u32, LinuxError> {
        let mut d = [0u32];
        sys::bar_rw(self.file.as_fd(), ioctl::BAR_READ, bar, &[addr], &mut d)
            .map_err(|e| self.failed(ioctl::BAR_READ.name(), e))?;
        Ok(d[0])
    }

    /// `NEURON_IOCTL_BAR_WRITE` of one register at absolute address `addr`.
    pub fn bar_write(&self, bar: u32, addr: u64, value: u32) -> Result<(), LinuxError> {
        sys::bar_rw(self.file.as_fd(), ioctl::BAR_WRITE, bar, &[addr], &mut [value])
            .map(|_| ())
            .map_err(|e| self.failed(ioctl::BAR_WRITE.name(), e))
    }

    /// `NEURON_IOCTL_DMA_QUEUE_COPY_START`: release descriptors on a DMA queue (the
    /// tail-increment doorbell for a process that does not map the BAR).
    pub fn dma_queue_copy_start(&self, eng_id: u32, qid: u32, tx: u32, rx: u32) -> Result<(), LinuxError> {
        let mut arg = DmaQueueCopyStart { eng_id, qid, tx_desc_count: tx, rx_desc_count: rx };
        self.call(ioctl::DMA_QUEUE_COPY_START, &mut arg).map(|_| ())
    }
}

impl ErrorType for NeuronDevice {
    type Error = LinuxError;
}

impl hal::Semaphore for NeuronDevice {
    fn increment(&mut self, nc: u32, index: u32, value: u32) -> Result<(), LinuxError> {
        self.semaphore_increment(nc, index, value)
    }
}

/// Register access through the driver's BAR ioctls: how an unprivileged process
/// writes NQ HEAD registers. Offsets are relative to `bar_base`, the BAR's
/// absolute address cookie from the driver's device info.
#[derive(Debug)]
pub struct IoctlBar<'a> {
    dev: &'a NeuronDevice,
    bar: u32,
    bar_base: u64,
    size: u64,
}

impl<'a> IoctlBar<'a> {
    /// BAR `bar` of `dev`, `size` bytes from `bar_base`.
    pub fn new(dev: &'a NeuronDevice, bar: u32, bar_base: u64, size: u64) -> IoctlBar<'a> {
        IoctlBar { dev, bar, bar_base, size }
    }

    fn addr(&self, offset: u64) -> Result<u64, LinuxError> {
        let refuse = |why: String| {
            LinuxError::new(
                "BAR access",
                self.dev.path.display().to_string(),
                io::Error::new(io::ErrorKind::InvalidInput, why),
            )
        };
        if offset.checked_add(4).is_none_or(|end| end > self.size) || !offset.is_multiple_of(4) {
            return Err(refuse(format!("offset 0x{offset:x} outside the BAR of 0x{:x} bytes", self.size)));
        }
        // The base is the driver's cookie, not ours to trust: a base near the top
        // of the address space would wrap (release) or panic (debug).
        self.bar_base.checked_add(offset).ok_or_else(|| {
            refuse(format!(
                "BAR {} address 0x{:x} + 0x{offset:x} overflows 64 bits (a bad BAR base)",
                self.bar, self.bar_base
            ))
        })
    }
}

impl ErrorType for IoctlBar<'_> {
    type Error = LinuxError;
}

impl hal::Registers for IoctlBar<'_> {
    fn read32(&mut self, offset: u64) -> Result<u32, LinuxError> {
        let a = self.addr(offset)?;
        self.dev.bar_read(self.bar, a)
    }
    fn write32(&mut self, offset: u64, value: u32) -> Result<(), LinuxError> {
        let a = self.addr(offset)?;
        self.dev.bar_write(self.bar, a, value)
    }
}

/// The `/dev/neuron*` nodes present, sorted, with the PCI BDF of each when sysfs
/// tells it (`/sys/class/neuron_device/neuronN/device` links to the PCI device).
pub fn list_devices() -> Vec<(PathBuf, Option<String>)> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir("/dev") {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            if let Some(n) = name.strip_prefix("neuron") {
                if !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()) {
                    let bdf = std::fs::read_link(format!("/sys/class/neuron_device/{name}/device"))
                        .ok()
                        .and_then(|p| p.file_name().map(|f| f.to_string_lossy().to_string()));
                    out.push((e.path(), bdf));
                }
            }
        }
    }
    out.sort_by_key(|(p, _)| {
        p.file_name()
            .and_then(|f| f.to_str())
            .and_then(|s| s.trim_start_matches("neuron").parse::<u32>().ok())
            .unwrap_or(u32::MAX)
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use nrt_core::hal::Registers;

    fn not_a_device(name: &str) -> (NeuronDevice, PathBuf) {
        let p = std::env::temp_dir().join(format!("nrt-linux-dev-{}-{name}", std::process::id()));
        std::fs::write(&p, b"").unwrap();
        (NeuronDevice::open(&p).unwrap(), p)
    }

    #[test]
    fn an_ioctl_bar_whose_base_plus_offset_overflows_refuses_by_name() {
        let (dev, p) = not_a_device("bar-wrap");
        // A BAR cookie near the top of the address space: offset 8 is inside the
        // BAR's 4 KiB, but base + 8 does not fit 64 bits.
        let mut bar = IoctlBar::new(&dev, 0, u64::MAX - 3, 0x1000);
        for e in [bar.read32(8).unwrap_err(), bar.write32(8, 1).unwrap_err()] {
            let msg = e.to_string();
            assert_eq!(e.call, "BAR access", "{msg}");
            assert!(msg.contains(&p.display().to_string()), "{msg}");
            assert!(msg.contains("0xfffffffffffffffc + 0x8 overflows"), "{msg}");
            assert_eq!(e.source.kind(), io::ErrorKind::InvalidInput, "{msg}");
        }
        // In range: the address is formed and the ioctl made (a plain file: ENOTTY).
        let mut ok = IoctlBar::new(&dev, 0, 0x1000_0000, 0x1000);
        assert_eq!(ok.read32(8).unwrap_err().errno(), Some(libc::ENOTTY));
        std::fs::remove_file(p).unwrap();
    }
}
