//! Every system call and every access to mapped memory, in one module: the only
//! place in nrt-linux with `unsafe`, each block with its `// SAFETY:` line.

#![allow(unsafe_code)]

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::ioctl::{BarRw, Ioctl, PlainArg};

/// Issue request `req` on `fd` with a pointer to `arg`: the only safe way to a
/// raw `ioctl(2)` in nrt-linux.
///
/// Sound because `req` can only be one of the typed requests of
/// [`crate::ioctl`], each paired with the argument type whose size the driver
/// copies, and `T: PlainArg` holds no pointer the driver would follow. A bare
/// request code does not type-check, nor does an argument of another type (the
/// kernel answers FIONREAD, 0x541B, with four bytes, which a `u8` does not hold):
///
/// ```compile_fail
/// use std::os::fd::AsFd;
/// let f = std::fs::File::open("/dev/null").unwrap();
/// let mut one_byte = 0u8;
/// let _ = nrt_linux::sys::ioctl(f.as_fd(), 0x541B, &mut one_byte);
/// ```
///
/// ```compile_fail
/// use std::os::fd::AsFd;
/// let f = std::fs::File::open("/dev/null").unwrap();
/// let mut one_byte = 0u8;
/// let _ = nrt_linux::sys::ioctl(f.as_fd(), nrt_linux::ioctl::SEMAPHORE_READ, &mut one_byte);
/// ```
///
/// Nor does a [`BarRw`] built by hand, whose pointers the driver would follow
/// ([`bar_rw`] builds it from slices):
///
/// ```compile_fail
/// use std::os::fd::AsFd;
/// let f = std::fs::File::open("/dev/null").unwrap();
/// let mut arg = nrt_linux::ioctl::BarRw { bar: 0, address: std::ptr::null(), data: std::ptr::null_mut(), count: 64 };
/// let _ = nrt_linux::sys::ioctl(f.as_fd(), nrt_linux::ioctl::BAR_READ, &mut arg);
/// ```
///
/// A request's own argument type does (here refused by a file that is not a
/// Neuron device):
///
/// ```
/// use std::os::fd::AsFd;
/// let f = std::fs::File::open("/dev/null").unwrap();
/// let mut arg = nrt_linux::ioctl::SemaphoreArg::default();
/// let e = nrt_linux::sys::ioctl(f.as_fd(), nrt_linux::ioctl::SEMAPHORE_READ, &mut arg).unwrap_err();
/// assert_eq!(e.raw_os_error(), Some(libc::ENOTTY));
/// ```
pub fn ioctl<T: PlainArg>(fd: BorrowedFd<'_>, req: Ioctl<T>, arg: &mut T) -> io::Result<i32> {
    // SAFETY: `arg` is a valid, exclusively borrowed `T` for the duration of the
    // call; `req` is a driver request typed with `T`, so the driver copies
    // `size_of::<T>()` bytes in and out of it (`crate::ioctl` asserts the sizes),
    // and `PlainArg` says it follows no pointer inside it.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), libc::c_ulong::from(req.code()), std::ptr::from_mut(arg)) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

/// `NEURON_IOCTL_BAR_READ` or `_WRITE` of `addresses.len()` registers of BAR
/// `bar`: the driver reads the addresses and reads (write) or writes (read) one
/// `u32` of `data` per address. The two slices must have the same length; the
/// argument's pointers and count are built from them here, so the driver never
/// follows a pointer past what the caller lent.
pub fn bar_rw(fd: BorrowedFd<'_>, req: Ioctl<BarRw>, bar: u32, addresses: &[u64], data: &mut [u32]) -> io::Result<i32> {
    let count = u32::try_from(addresses.len()).ok().filter(|_| addresses.len() == data.len()).ok_or_else(|| {
        io::Error::new(io::ErrorKind::InvalidInput, format!("{} addresses for {} values", addresses.len(), data.len()))
    })?;
    let mut arg = BarRw { bar, address: addresses.as_ptr(), data: data.as_mut_ptr(), count };
    // SAFETY: `arg` is a valid local `BarRw` (the 32 bytes the driver copies);
    // its `address` and `data` point to `count` readable `u64` and `count`
    // writable `u32`, borrowed for the call.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), libc::c_ulong::from(req.code()), std::ptr::from_mut(&mut arg)) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

/// A shared mapping of a file region, unmapped on drop. Accesses are volatile (or
/// atomic) and bounds-checked: an offset outside the mapping is an error, never
/// a stray access.
#[derive(Debug)]
pub struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain shared memory; every access goes through volatile
// or atomic operations, so sharing the handle between threads is sound.
unsafe impl Send for Mapping {}
// SAFETY: as above; no method hands out references into the mapping.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Map `len` bytes of `file` at `offset` (a multiple of the page size), shared,
    /// read-write.
    pub fn map(file: &File, offset: u64, len: usize) -> io::Result<Mapping> {
        if len == 0 {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "mmap of 0 bytes"));
        }
        let off = libc::off_t::try_from(offset)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "mmap offset too large"))?;
        // SAFETY: a fresh mapping (no fixed address); the kernel validates fd,
        // offset and length; the result is checked against MAP_FAILED.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                off,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr = NonNull::new(p.cast::<u8>()).ok_or_else(|| io::Error::other("mmap returned null"))?;
        Ok(Mapping { ptr, len })
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// `true` when empty (never: `map` refuses 0 bytes).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn check(&self, off: u64, size: usize) -> io::Result<usize> {
        let o = usize::try_from(off).map_err(|_| oob(off))?;
        if o.checked_add(size).is_none_or(|end| end > self.len) || !o.is_multiple_of(size.clamp(1, 8)) {
            return Err(oob(off));
        }
        Ok(o)
    }

    /// Volatile 32-bit read at `off` (4-aligned, inside the mapping).
    pub fn read32(&self, off: u64) -> io::Result<u32> {
        let o = self.check(off, 4)?;
        // SAFETY: `o..o+4` is inside the mapping and 4-aligned (checked above); the
        // mapping lives as long as `self`.
        Ok(unsafe { self.ptr.as_ptr().add(o).cast::<u32>().read_volatile() })
    }

    /// Volatile 32-bit write at `off`.
    pub fn write32(&self, off: u64, v: u32) -> io::Result<()> {
        let o = self.check(off, 4)?;
        // SAFETY: as in `read32`.
        unsafe { self.ptr.as_ptr().add(o).cast::<u32>().write_volatile(v) };
        Ok(())
    }

    /// Volatile 64-bit read at `off` (8-aligned).
    pub fn read64(&self, off: u64) -> io::Result<u64> {
        let o = self.check(off, 8)?;
        // SAFETY: `o..o+8` inside the mapping, 8-aligned (checked).
        Ok(unsafe { self.ptr.as_ptr().add(o).cast::<u64>().read_volatile() })
    }

    /// Volatile 64-bit write at `off`.
    pub fn write64(&self, off: u64, v: u64) -> io::Result<()> {
        let o = self.check(off, 8)?;
        // SAFETY: as in `read64`.
        unsafe { self.ptr.as_ptr().add(o).cast::<u64>().write_volatile(v) };
        Ok(())
    }

    /// Atomic 64-bit load with the given ordering (for the word that carries a
    /// ring entry's phase bit).
    pub fn load64(&self, off: u64, order: Ordering) -> io::Result<u64> {
        let o = self.check(off, 8)?;
        // SAFETY: inside the mapping and 8-aligned (checked), so a valid AtomicU64
        // location for the mapping's lifetime; other writers use atomics or the
        // device's own ordered writes.
        Ok(unsafe { AtomicU64::from_ptr(self.ptr.as_ptr().add(o).cast::<u64>()) }.load(order))
    }

    /// Atomic 64-bit store.
    pub fn store64(&self, off: u64, v: u64, order: Ordering) -> io::Result<()> {
        let o = self.check(off, 8)?;
        // SAFETY: as in `load64`.
        unsafe { AtomicU64::from_ptr(self.ptr.as_ptr().add(o).cast::<u64>()) }.store(v, order);
        Ok(())
    }

    /// Atomic 32-bit load.
    pub fn load32(&self, off: u64, order: Ordering) -> io::Result<u32> {
        let o = self.check(off, 4)?;
        // SAFETY: inside the mapping and 4-aligned (checked).
        Ok(unsafe { AtomicU32::from_ptr(self.ptr.as_ptr().add(o).cast::<u32>()) }.load(order))
    }

    /// Atomic 32-bit store.
    pub fn store32(&self, off: u64, v: u32, order: Ordering) -> io::Result<()> {
        let o = self.check(off, 4)?;
        // SAFETY: as in `load32`.
        unsafe { AtomicU32::from_ptr(self.ptr.as_ptr().add(o).cast::<u32>()) }.store(v, order);
        Ok(())
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` are exactly what mmap returned; nothing refers into
        // the mapping after drop (no method returns references).
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

fn oob(off: u64) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, format!("offset 0x{off:x} is outside the mapping or misaligned"))
}

/// An eventfd.
#[derive(Debug)]
pub struct EventFd {
    fd: OwnedFd,
}

impl EventFd {
    /// A new eventfd with counter 0; `semaphore` makes each read take 1.
    pub fn new(semaphore: bool) -> io::Result<EventFd> {
        let mut flags = libc::EFD_CLOEXEC | libc::EFD_NONBLOCK;
        if semaphore {
            flags |= libc::EFD_SEMAPHORE;
        }
        // SAFETY: plain syscall; the result is checked.
        let fd = unsafe { libc::eventfd(0, flags) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a fresh descriptor we own.
        Ok(EventFd { fd: unsafe { OwnedFd::from_raw_fd(fd) } })
    }

    /// Add `n` to the counter.
    pub fn write(&self, n: u64) -> io::Result<()> {
        let buf = n.to_ne_bytes();
        // SAFETY: writes 8 bytes from a valid local buffer.
        let rc = unsafe { libc::write(self.fd.as_raw_fd(), buf.as_ptr().cast(), 8) };
        if rc != 8 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Take from the counter without blocking: `Ok(Some(n))`, or `Ok(None)` when
    /// it is 0.
    pub fn try_read(&self) -> io::Result<Option<u64>> {
        let mut buf = [0u8; 8];
        // SAFETY: reads at most 8 bytes into a valid local buffer.
        let rc = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), 8) };
        if rc == 8 {
            return Ok(Some(u64::from_ne_bytes(buf)));
        }
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::WouldBlock {
            Ok(None)
        } else {
            Err(e)
        }
    }

    /// Wait until the counter is non-zero or `timeout_ms` passes (-1: forever).
    /// Returns whether it is readable. Does not consume.
    pub fn wait_readable(&self, timeout_ms: i32) -> io::Result<bool> {
        let mut p = libc::pollfd { fd: self.fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        loop {
            // SAFETY: one valid pollfd.
            let rc = unsafe { libc::poll(&mut p, 1, timeout_ms) };
            if rc >= 0 {
                return Ok(rc > 0 && p.revents & libc::POLLIN != 0);
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }

    /// Block until the counter is non-zero and take from it.
    pub fn read_blocking(&self) -> io::Result<u64> {
        loop {
            if let Some(n) = self.try_read()? {
                return Ok(n);
            }
            self.wait_readable(-1)?;
        }
    }
}

/// The `errno` name (`"ENOTTY"`) of an OS error, for messages.
pub fn errno_name(e: &io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(libc::EPERM) => "EPERM",
        Some(libc::ENOENT) => "ENOENT",
        Some(libc::EIO) => "EIO",
        Some(libc::EBADF) => "EBADF",
        Some(libc::EAGAIN) => "EAGAIN",
        Some(libc::ENOMEM) => "ENOMEM",
        Some(libc::EACCES) => "EACCES",
        Some(libc::EFAULT) => "EFAULT",
        Some(libc::EBUSY) => "EBUSY",
        Some(libc::ENODEV) => "ENODEV",
        Some(libc::EINVAL) => "EINVAL",
        Some(libc::ENOTTY) => "ENOTTY",
        Some(libc::E2BIG) => "E2BIG",
        Some(libc::ENXIO) => "ENXIO",
        Some(libc::EOPNOTSUPP) => "EOPNOTSUPP",
        Some(_) => "E?",
        None => "-",
    }
}

/// Pin the calling thread to CPU `cpu` (`sched_setaffinity`).
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET writes inside it
    // (`cpu` checked against CPU_SETSIZE above).
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: a valid set of the size passed; 0 is the calling thread.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// CPU time of the calling thread, nanoseconds (`CLOCK_THREAD_CPUTIME_ID`); 0
/// if the clock cannot be read.
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid out-pointer to a local timespec.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0;
    }
    u64::try_from(ts.tv_sec)
        .unwrap_or(0)
        .saturating_mul(1_000_000_000)
        .saturating_add(u64::try_from(ts.tv_nsec).unwrap_or(0))
}
