//! A BAR mapped with `mmap`: the PCI sysfs resource file
//! `/sys/bus/pci/devices/<bdf>/resource<N>`, the device node at an offset, or
//! any file standing in for one, as the tests' shared-memory file does.

use std::fs::{File, OpenOptions};
use std::path::Path;
use std::sync::atomic::{fence, Ordering};

use nrt_core::hal::{self, ErrorType};

use crate::error::LinuxError;
use crate::sys::Mapping;

/// A mapped BAR window: atomic 32/64-bit access at checked offsets, unmapped on
/// drop.
#[derive(Debug)]
pub struct MappedBar {
    map: Mapping,
    name: String,
}

impl MappedBar {
    /// Map `len` bytes of the file at `path`, from `offset`.
    pub fn open(path: impl AsRef<Path>, offset: u64, len: usize) -> Result<MappedBar, LinuxError> {
        let path = path.as_ref();
        let name = path.display().to_string();
        let file: File = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| LinuxError::new("open", name.clone(), e))?;
        Self::from_file(&file, &name, offset, len)
    }

    /// Map `len` bytes of an open file from `offset`.
    pub fn from_file(file: &File, name: &str, offset: u64, len: usize) -> Result<MappedBar, LinuxError> {
        let map = Mapping::map(file, offset, len).map_err(|e| LinuxError::new("mmap", name, e))?;
        Ok(MappedBar { map, name: name.to_string() })
    }

    /// The BAR resource file of PCI device `bdf`, `0000:00:1e.0`, BAR `n`.
    pub fn sysfs_resource(bdf: &str, n: u32, len: usize) -> Result<MappedBar, LinuxError> {
        Self::open(format!("/sys/bus/pci/devices/{bdf}/resource{n}"), 0, len)
    }

    /// The mapping.
    pub fn mapping(&self) -> &Mapping {
        &self.map
    }

    /// Size in bytes.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Never empty.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    fn err(&self, call: &'static str, e: std::io::Error) -> LinuxError {
        LinuxError::new(call, self.name.clone(), e)
    }

    /// 64-bit read.
    pub fn read64(&self, offset: u64) -> Result<u64, LinuxError> {
        self.map.read64(offset).map_err(|e| self.err("BAR read64", e))
    }

    /// 64-bit write.
    pub fn write64(&self, offset: u64, v: u64) -> Result<(), LinuxError> {
        self.map.write64(offset, v).map_err(|e| self.err("BAR write64", e))
    }
}

impl ErrorType for MappedBar {
    type Error = LinuxError;
}

impl hal::Registers for MappedBar {
    fn read32(&mut self, offset: u64) -> Result<u32, LinuxError> {
        let v = self.map.read32(offset).map_err(|e| self.err("BAR read32", e))?;
        fence(Ordering::Acquire);
        Ok(v)
    }
    fn write32(&mut self, offset: u64, value: u32) -> Result<(), LinuxError> {
        // Everything written before a register write is visible to the device first.
        fence(Ordering::Release);
        self.map.write32(offset, value).map_err(|e| self.err("BAR write32", e))
    }
}

impl hal::Fence for MappedBar {}
