//! Every system call and every access to mapped memory, in one module: the only
//! place in nrt-linux with `unsafe`, each block with its `// SAFETY:` line.

#![allow(unsafe_code)]

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

use nrt_abi::os::{Access, SharedMap};

use crate::ioctl::{
    AppInfo, AppsInfoHeader, BarRw, Ioctl, MemAllocV2Mt, PlainArg, DEVICE_GET_ALL_APPS_INFO, MAX_PROCESS_PER_DEVICE,
    MEM_ALLOC_V2MT,
};

/// Issue request `req` on `fd` with a pointer to `arg`: the only safe way to a
/// raw `ioctl(2)` in nrt-linux.
///
/// Sound because `req` can only be one of the typed requests of
/// [`crate::ioctl`], each paired with the argument type whose size the driver
/// copies, and `T: PlainArg` holds no pointer the driver would follow. A bare
/// request code does not type-check, nor does an argument of another type: the
/// kernel answers FIONREAD, 0x541B, with four bytes, which a `u8` does not hold.
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
/// Nor does a [`BarRw`] built by hand, whose pointers the driver would follow;
/// [`bar_rw`] builds it from slices.
///
/// ```compile_fail
/// use std::os::fd::AsFd;
/// let f = std::fs::File::open("/dev/null").unwrap();
/// let mut arg = nrt_linux::ioctl::BarRw { bar: 0, address: std::ptr::null(), data: std::ptr::null_mut(), count: 64 };
/// let _ = nrt_linux::sys::ioctl(f.as_fd(), nrt_linux::ioctl::BAR_READ, &mut arg);
/// ```
///
/// A request's own argument type does, here refused by a file that is not a
/// Neuron device.
///
/// ```
/// use std::os::fd::AsFd;
/// let f = std::fs::File::open("/dev/null").unwrap();
/// let mut arg = nrt_linux::ioctl::SemaphoreArg::default();
/// let e = nrt_linux::sys::ioctl(f.as_fd(), nrt_linux::ioctl::SEMAPHORE_READ, &mut arg).unwrap_err();
/// assert_eq!(e.raw_os_error(), Some(libc::ENOTTY));
/// ```
pub fn ioctl<T: PlainArg>(fd: BorrowedFd<'_>, req: Ioctl<T>, arg: &mut T) -> io::Result<i32> {
    #[cfg(test)]
    {
        // SAFETY: `T: PlainArg` is one of `nrt_abi::ioctl`'s `#[repr(C)]`
        // integer structs without padding, each deriving `IntoBytes` and
        // `FromBytes`: its `size_of::<T>()` bytes are initialised and any bytes
        // are a valid `T`; the slice borrows `arg` exclusively for the call.
        let bytes = unsafe { std::slice::from_raw_parts_mut(std::ptr::from_mut(arg).cast::<u8>(), size_of::<T>()) };
        if let Some(r) = fake::ioctl(fd.as_raw_fd(), req.code(), bytes) {
            return r;
        }
    }
    // SAFETY: `arg` is a valid, exclusively borrowed `T` for the duration of the
    // call; `req` is a driver request typed with `T`, so the driver copies
    // `size_of::<T>()` bytes in and out of it, as `crate::ioctl` asserts,
    // and `PlainArg` says it follows no pointer inside it.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), libc::c_ulong::from(req.code()), std::ptr::from_mut(arg)) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

/// `NEURON_IOCTL_BAR_READ` or `_WRITE` of `addresses.len()` registers of BAR
/// `bar`, one `u32` of `data` per address. The argument's pointers and count
/// are built from the two slices, of one length, so the driver never follows a
/// pointer past what the caller lent.
pub fn bar_rw(fd: BorrowedFd<'_>, req: Ioctl<BarRw>, bar: u32, addresses: &[u64], data: &mut [u32]) -> io::Result<i32> {
    let count = u32::try_from(addresses.len()).ok().filter(|_| addresses.len() == data.len()).ok_or_else(|| {
        io::Error::new(io::ErrorKind::InvalidInput, format!("{} addresses for {} values", addresses.len(), data.len()))
    })?;
    #[cfg(test)]
    if let Some(r) = fake::bar_rw(fd.as_raw_fd(), req.code(), bar, addresses, data) {
        return r;
    }
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

/// `NEURON_IOCTL_MEM_ALLOC_V2MT` with `arg`: the driver writes the chunk's
/// handle through `mem_handle`, set here to a local `u64`, so it never writes
/// anywhere the caller did not lend. Returns the ioctl's return value, whose
/// positive values the caller must check, and the handle.
pub fn mem_alloc_v2mt(fd: BorrowedFd<'_>, mut arg: MemAllocV2Mt) -> io::Result<(i32, u64)> {
    #[cfg(test)]
    if let Some(r) = fake::mem_alloc(fd.as_raw_fd(), &arg) {
        return r;
    }
    let mut handle: u64 = 0;
    arg.mem_handle = std::ptr::from_mut(&mut handle) as u64;
    // SAFETY: `arg` is a valid local `MemAllocV2Mt`, the 48 bytes the request
    // encodes, as `nrt_abi::ioctl` asserts; its one pointer, `mem_handle`,
    // points to the local `handle`, a writable `u64` that outlives the call.
    let rc = unsafe {
        libc::ioctl(fd.as_raw_fd(), libc::c_ulong::from(MEM_ALLOC_V2MT.code()), std::ptr::from_mut(&mut arg))
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok((rc, handle))
    }
}

/// The argument of `NEURON_IOCTL_DEVICE_GET_ALL_APPS_INFO`: the header and
/// room for every process the driver can list.
#[repr(C)]
struct AppsInfoBuf {
    header: AppsInfoHeader,
    entries: [AppInfo; MAX_PROCESS_PER_DEVICE],
}

/// `NEURON_IOCTL_DEVICE_GET_ALL_APPS_INFO` with `flags`: the ioctl's return
/// value and the processes attached to the device, with their locked cores
/// when `APP_INFO_PID_NC_LOCK_INFO` is asked.
pub fn get_all_apps_info(fd: BorrowedFd<'_>, flags: u16) -> io::Result<(i32, Vec<AppInfo>)> {
    // SAFETY: `AppsInfoBuf` is integers and byte arrays only, `AppInfo`
    // deriving `FromBytes`: all-zero bytes are a valid value.
    let mut buf: AppsInfoBuf = unsafe { std::mem::zeroed() };
    buf.header.apps_info_flags = flags;
    buf.header.capacity = MAX_PROCESS_PER_DEVICE as u32;
    #[cfg(test)]
    if let Some(r) = fake::apps_info(fd.as_raw_fd(), &mut buf.header, &mut buf.entries) {
        let rc = r?;
        let n = (buf.header.size as usize).min(MAX_PROCESS_PER_DEVICE);
        return Ok((rc, buf.entries[..n].to_vec()));
    }
    // SAFETY: `buf` is a valid local header followed by `capacity` entries, the
    // whole array the driver may write, the header and at most `capacity`
    // entries; it outlives the call.
    let rc = unsafe {
        libc::ioctl(fd.as_raw_fd(), libc::c_ulong::from(DEVICE_GET_ALL_APPS_INFO.code()), std::ptr::from_mut(&mut buf))
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    let n = (buf.header.size as usize).min(MAX_PROCESS_PER_DEVICE);
    Ok((rc, buf.entries[..n].to_vec()))
}

/// `GET_LOGICAL_TO_PHYSICAL_NC_MAP` of `max` entries into `buf`, which must
/// hold the map's header and `max` entries: the ioctl's return.
pub fn logical_to_physical_nc_map(fd: BorrowedFd<'_>, buf: &mut [u8], max: u32) -> io::Result<i32> {
    use nrt_abi::ioctl::{GetNcMap, NcMapEntry, NcMapHeader, GET_LOGICAL_TO_PHYSICAL_NC_MAP, NC_MAPPING_TYPE_V0};
    if buf.len() < size_of::<NcMapHeader>() + max as usize * size_of::<NcMapEntry>() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "the map buffer is shorter than its entries"));
    }
    let mut a = GetNcMap { map: buf.as_mut_ptr() as u64, max_map_entries: max, mapping_version: NC_MAPPING_TYPE_V0 };
    // SAFETY: `a` is a valid local struct; the driver writes at most the
    // header and `max` entries at `a.map`, which `buf` holds, as checked
    // above, and which outlives the call.
    let rc = unsafe {
        libc::ioctl(
            fd.as_raw_fd(),
            libc::c_ulong::from(GET_LOGICAL_TO_PHYSICAL_NC_MAP.code()),
            std::ptr::from_mut(&mut a),
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(rc)
}

/// Close `file`; the unit tests' fake driver is told first, to run the
/// driver's flush of a write-only descriptor.
pub(crate) fn close(file: File) {
    #[cfg(test)]
    fake::closing(file.as_raw_fd());
    drop(file);
}

/// A stand-in for the driver in this crate's unit tests: calls on a descriptor
/// of the file a test installed a [`fake::Driver`] for, on the calling thread,
/// go to it instead of the kernel.
#[cfg(test)]
pub(crate) mod fake {
    use std::cell::RefCell;
    use std::io;
    use std::os::fd::RawFd;
    use std::path::PathBuf;

    use nrt_sim::driver::model::request::is_misc;
    use nrt_sim::driver::model::Request;

    use crate::ioctl::{AppInfo, AppsInfoHeader, MemAllocV2Mt};

    /// The driver's side of the calls. A request arrives parsed by the
    /// simulator's driver model, and what the handler changes in it is
    /// copied back, as the driver copies its argument back.
    ///
    /// A descriptor opened `O_WRONLY` is the driver's "free access" kind,
    /// neuron_cdev.c `IS_NEURON_DEVICE_FREE_ACCESS`. Its requests reach
    /// only the misc dispatcher, `ncdev_misc_ioctl`: the fake answers `EINVAL`
    /// to every other request on it and hands the misc ones to
    /// [`misc_ioctl`](Driver::misc_ioctl). Its close runs the misc flush,
    /// `ncdev_misc_flush`, which drops every range mark of the process. The
    /// close of an `O_RDWR` descriptor is not seen: it never drops a mark.
    pub(crate) trait Driver {
        /// A plain-argument request `code`; `Err(errno)` fails it.
        fn ioctl(&mut self, code: u32, req: &mut Request) -> Result<i32, i32>;
        /// A misc request on a write-only descriptor.
        fn misc_ioctl(&mut self, code: u32, req: &mut Request) -> Result<i32, i32> {
            self.ioctl(code, req)
        }
        /// The close of a write-only descriptor: drop every range mark of the process.
        fn misc_flush(&mut self) {}
        /// DEVICE_GET_ALL_APPS_INFO: the header, and room for the entries.
        fn apps_info(&mut self, _header: &mut AppsInfoHeader, _entries: &mut [AppInfo]) -> Result<i32, i32> {
            Err(libc::EINVAL)
        }
        /// BAR_READ / BAR_WRITE of `addresses`, absolute, `data` in or out.
        fn bar_rw(&mut self, code: u32, bar: u32, addresses: &[u64], data: &mut [u32]) -> Result<i32, i32>;
        /// MEM_ALLOC_V2MT: the handle.
        fn mem_alloc(&mut self, arg: &MemAllocV2Mt) -> Result<u64, i32>;
    }

    thread_local! {
        static DRIVER: RefCell<Option<(PathBuf, Box<dyn Driver>)>> = const { RefCell::new(None) };
    }

    /// Serve calls on descriptors of the file at `path` with `driver`, on this thread.
    pub(crate) fn install(path: PathBuf, driver: Box<dyn Driver>) {
        DRIVER.with(|d| *d.borrow_mut() = Some((path, driver)));
    }

    /// Stop, handing the driver back.
    pub(crate) fn uninstall() -> Option<Box<dyn Driver>> {
        DRIVER.with(|d| d.borrow_mut().take().map(|(_, drv)| drv))
    }

    /// Whether descriptor `fd` was opened `O_WRONLY`, from `/proc/self/fdinfo`.
    fn write_only(fd: RawFd) -> bool {
        let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}")).unwrap_or_default();
        let flags = info.lines().find_map(|l| l.strip_prefix("flags:")).map(str::trim);
        flags.and_then(|f| i32::from_str_radix(f, 8).ok()).is_some_and(|f| f & libc::O_ACCMODE == libc::O_WRONLY)
    }

    /// `f` on the installed driver, `free` whether `fd` is write-only; `None`
    /// when `fd` is not the installed driver's file.
    fn with<R>(fd: RawFd, f: impl FnOnce(&mut dyn Driver, bool) -> Result<R, i32>) -> Option<io::Result<R>> {
        let target = std::fs::read_link(format!("/proc/self/fd/{fd}")).ok()?;
        DRIVER.with(|d| {
            let mut d = d.borrow_mut();
            let (path, drv) = d.as_mut()?;
            (*path == target).then(|| f(drv.as_mut(), write_only(fd)).map_err(io::Error::from_raw_os_error))
        })
    }

    /// A request the model does not parse is the driver's default answer, `EINVAL`.
    pub(super) fn ioctl(fd: RawFd, code: u32, arg: &mut [u8]) -> Option<io::Result<i32>> {
        with(fd, |d, free| {
            let mut req = Request::parse(code, arg).map_err(|_| libc::EINVAL)?;
            let r = match (free, is_misc(code)) {
                (false, _) => d.ioctl(code, &mut req),
                (true, true) => d.misc_ioctl(code, &mut req),
                (true, false) => Err(libc::EINVAL),
            };
            req.store(arg);
            r
        })
    }

    pub(super) fn apps_info(fd: RawFd, h: &mut AppsInfoHeader, e: &mut [AppInfo]) -> Option<io::Result<i32>> {
        with(fd, |d, free| if free { Err(libc::EINVAL) } else { d.apps_info(h, e) })
    }

    pub(super) fn bar_rw(fd: RawFd, code: u32, bar: u32, a: &[u64], data: &mut [u32]) -> Option<io::Result<i32>> {
        with(fd, |d, free| if free { Err(libc::EINVAL) } else { d.bar_rw(code, bar, a, data) })
    }

    pub(super) fn mem_alloc(fd: RawFd, arg: &MemAllocV2Mt) -> Option<io::Result<(i32, u64)>> {
        with(fd, |d, free| if free { Err(libc::EINVAL) } else { d.mem_alloc(arg).map(|h| (0, h)) })
    }

    /// `fd` is about to be closed: a write-only descriptor's close is the misc flush.
    pub(super) fn closing(fd: RawFd) {
        let _ = with(fd, |d, free| {
            if free {
                d.misc_flush();
            }
            Ok(())
        });
    }
}

/// A shared mapping of a file region, a [`SharedMap`], unmapped on drop. Every
/// access is an atomic load or store of an aligned 32- or 64-bit word,
/// bounds-checked: an offset outside the mapping is an error, never a stray access.
///
/// # Why atomics, not volatile
///
/// The handle is `Sync`: threads of this process may reach the same word
/// through `&self` at once, and another process or the device writes it
/// concurrently. A volatile access racing with another is a data race; an
/// atomic one is not, and an aligned word's atomic access is one untearable
/// instruction, so it is also what a device or a peer sees. The plain
/// accessors are `Relaxed`; ordering comes from the callers' fences or from
/// [`load64`](Mapping::load64)'s explicit order.
///
/// A [read-only](Mapping::map_read_only) mapping is only loaded `Relaxed`, the
/// only atomic access Rust allows on read-only memory, with a fence after the
/// load where a stronger order is asked; a write to it is an error, never a fault.
#[derive(Debug)]
pub struct Mapping {
    map: SharedMap,
}

impl Mapping {
    /// Map `len` bytes of `file` at `offset`, a multiple of the page size, shared and read-write.
    pub fn map(file: &File, offset: u64, len: usize) -> io::Result<Mapping> {
        Mapping::map_access(file, offset, len, Access::ReadWrite)
    }

    /// [`map`](Mapping::map), read-only, for a monitor's view of another
    /// process's datastore: a write is refused before it reaches the memory.
    pub fn map_read_only(file: &File, offset: u64, len: usize) -> io::Result<Mapping> {
        Mapping::map_access(file, offset, len, Access::ReadOnly)
    }

    fn map_access(file: &File, offset: u64, len: usize, access: Access) -> io::Result<Mapping> {
        Ok(Mapping { map: SharedMap::map(file, offset, len, access)? })
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// `true` when empty, which `map` never makes.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The checked 32-bit word at `off` of a read-write mapping, to store through.
    fn word32(&self, off: u64) -> io::Result<&AtomicU32> {
        self.writable(off)?;
        self.map.u32_at(off).ok_or_else(|| oob(off))
    }

    /// The checked 64-bit word at `off` of a read-write mapping, to store through.
    fn word64(&self, off: u64) -> io::Result<&AtomicU64> {
        self.writable(off)?;
        self.map.u64_at(off).ok_or_else(|| oob(off))
    }

    fn writable(&self, off: u64) -> io::Result<()> {
        match self.map.access() {
            Access::ReadWrite => Ok(()),
            Access::ReadOnly => Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("write at offset 0x{off:x} of a read-only mapping"),
            )),
        }
    }

    /// 32-bit read at `off`, 4-aligned; `Relaxed`.
    pub fn read32(&self, off: u64) -> io::Result<u32> {
        self.map.load_u32(off).ok_or_else(|| oob(off))
    }

    /// 32-bit write at `off`; `Relaxed`.
    pub fn write32(&self, off: u64, v: u32) -> io::Result<()> {
        self.word32(off)?.store(v, Ordering::Relaxed);
        Ok(())
    }

    /// 64-bit read at `off`, 8-aligned; `Relaxed`.
    pub fn read64(&self, off: u64) -> io::Result<u64> {
        self.map.load_u64(off).ok_or_else(|| oob(off))
    }

    /// 64-bit write at `off`; `Relaxed`.
    pub fn write64(&self, off: u64, v: u64) -> io::Result<()> {
        self.word64(off)?.store(v, Ordering::Relaxed);
        Ok(())
    }

    /// Atomic 64-bit load with the given ordering, for the word carrying a ring
    /// entry's phase bit. On a read-only mapping: a `Relaxed` load, then a fence.
    pub fn load64(&self, off: u64, order: Ordering) -> io::Result<u64> {
        match self.map.access() {
            Access::ReadWrite => Ok(self.word64(off)?.load(order)),
            Access::ReadOnly => {
                let v = self.map.load_u64(off).ok_or_else(|| oob(off))?;
                fence_after_load(order);
                Ok(v)
            }
        }
    }

    /// Atomic 64-bit store.
    pub fn store64(&self, off: u64, v: u64, order: Ordering) -> io::Result<()> {
        self.word64(off)?.store(v, order);
        Ok(())
    }

    /// Atomic 32-bit load, on a read-only mapping as [`load64`](Mapping::load64).
    pub fn load32(&self, off: u64, order: Ordering) -> io::Result<u32> {
        match self.map.access() {
            Access::ReadWrite => Ok(self.word32(off)?.load(order)),
            Access::ReadOnly => {
                let v = self.map.load_u32(off).ok_or_else(|| oob(off))?;
                fence_after_load(order);
                Ok(v)
            }
        }
    }

    /// Atomic 32-bit store.
    pub fn store32(&self, off: u64, v: u32, order: Ordering) -> io::Result<()> {
        self.word32(off)?.store(v, order);
        Ok(())
    }

    /// The `len` bytes at `off` of a read-write mapping as atomics, for a host
    /// buffer read and written byte by byte; `None` outside it or read-only.
    pub fn bytes(&self, off: u64, len: usize) -> Option<&[std::sync::atomic::AtomicU8]> {
        self.map.bytes(off, len)
    }
}

/// The fence after a `Relaxed` load of read-only memory that gives it `order`:
/// Acquire for Acquire, `SeqCst` for `SeqCst`, none for `Relaxed`. A load asked
/// `Release` or `AcqRel`, which `AtomicU64::load` refuses with a panic, gets
/// the Acquire fence instead.
fn fence_after_load(order: Ordering) {
    match order {
        Ordering::Relaxed => {}
        Ordering::SeqCst => fence(Ordering::SeqCst),
        _ => fence(Ordering::Acquire),
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

    /// Wait until the counter is non-zero or `timeout_ms` passes, -1 for
    /// ever; whether it is readable. Does not consume.
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

    /// Wait until the counter is non-zero or `ns` nanoseconds pass, with
    /// `ppoll`; whether it is readable. An interrupted wait returns
    /// `Ok(false)` for the caller to look at its clock. Does not consume.
    pub fn wait_readable_ns(&self, ns: u64) -> io::Result<bool> {
        let ts = libc::timespec {
            tv_sec: libc::time_t::try_from(ns / 1_000_000_000).unwrap_or(libc::time_t::MAX),
            tv_nsec: (ns % 1_000_000_000) as libc::c_long,
        };
        let mut p = libc::pollfd { fd: self.fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd, a valid timespec, no signal mask.
        let rc = unsafe { libc::ppoll(&mut p, 1, &ts, std::ptr::null()) };
        if rc >= 0 {
            return Ok(rc > 0 && p.revents & libc::POLLIN != 0);
        }
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            Ok(false)
        } else {
            Err(e)
        }
    }

    /// The descriptor, for `poll` or `epoll`; it stays this object's.
    pub fn raw_fd(&self) -> std::os::fd::RawFd {
        self.fd.as_raw_fd()
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

/// Every Linux `errno` by name, the target's own values from `libc`.
const ERRNO_NAMES: &[(libc::c_int, &str)] = &[
    (libc::EPERM, "EPERM"),
    (libc::ENOENT, "ENOENT"),
    (libc::ESRCH, "ESRCH"),
    (libc::EINTR, "EINTR"),
    (libc::EIO, "EIO"),
    (libc::ENXIO, "ENXIO"),
    (libc::E2BIG, "E2BIG"),
    (libc::ENOEXEC, "ENOEXEC"),
    (libc::EBADF, "EBADF"),
    (libc::ECHILD, "ECHILD"),
    (libc::EAGAIN, "EAGAIN"),
    (libc::ENOMEM, "ENOMEM"),
    (libc::EACCES, "EACCES"),
    (libc::EFAULT, "EFAULT"),
    (libc::ENOTBLK, "ENOTBLK"),
    (libc::EBUSY, "EBUSY"),
    (libc::EEXIST, "EEXIST"),
    (libc::EXDEV, "EXDEV"),
    (libc::ENODEV, "ENODEV"),
    (libc::ENOTDIR, "ENOTDIR"),
    (libc::EISDIR, "EISDIR"),
    (libc::EINVAL, "EINVAL"),
    (libc::ENFILE, "ENFILE"),
    (libc::EMFILE, "EMFILE"),
    (libc::ENOTTY, "ENOTTY"),
    (libc::ETXTBSY, "ETXTBSY"),
    (libc::EFBIG, "EFBIG"),
    (libc::ENOSPC, "ENOSPC"),
    (libc::ESPIPE, "ESPIPE"),
    (libc::EROFS, "EROFS"),
    (libc::EMLINK, "EMLINK"),
    (libc::EPIPE, "EPIPE"),
    (libc::EDOM, "EDOM"),
    (libc::ERANGE, "ERANGE"),
    (libc::EDEADLK, "EDEADLK"),
    (libc::ENAMETOOLONG, "ENAMETOOLONG"),
    (libc::ENOLCK, "ENOLCK"),
    (libc::ENOSYS, "ENOSYS"),
    (libc::ENOTEMPTY, "ENOTEMPTY"),
    (libc::ELOOP, "ELOOP"),
    (libc::ENOMSG, "ENOMSG"),
    (libc::EIDRM, "EIDRM"),
    (libc::ECHRNG, "ECHRNG"),
    (libc::EL2NSYNC, "EL2NSYNC"),
    (libc::EL3HLT, "EL3HLT"),
    (libc::EL3RST, "EL3RST"),
    (libc::ELNRNG, "ELNRNG"),
    (libc::EUNATCH, "EUNATCH"),
    (libc::ENOCSI, "ENOCSI"),
    (libc::EL2HLT, "EL2HLT"),
    (libc::EBADE, "EBADE"),
    (libc::EBADR, "EBADR"),
    (libc::EXFULL, "EXFULL"),
    (libc::ENOANO, "ENOANO"),
    (libc::EBADRQC, "EBADRQC"),
    (libc::EBADSLT, "EBADSLT"),
    (libc::EBFONT, "EBFONT"),
    (libc::ENOSTR, "ENOSTR"),
    (libc::ENODATA, "ENODATA"),
    (libc::ETIME, "ETIME"),
    (libc::ENOSR, "ENOSR"),
    (libc::ENONET, "ENONET"),
    (libc::ENOPKG, "ENOPKG"),
    (libc::EREMOTE, "EREMOTE"),
    (libc::ENOLINK, "ENOLINK"),
    (libc::EADV, "EADV"),
    (libc::ESRMNT, "ESRMNT"),
    (libc::ECOMM, "ECOMM"),
    (libc::EPROTO, "EPROTO"),
    (libc::EMULTIHOP, "EMULTIHOP"),
    (libc::EDOTDOT, "EDOTDOT"),
    (libc::EBADMSG, "EBADMSG"),
    (libc::EOVERFLOW, "EOVERFLOW"),
    (libc::ENOTUNIQ, "ENOTUNIQ"),
    (libc::EBADFD, "EBADFD"),
    (libc::EREMCHG, "EREMCHG"),
    (libc::ELIBACC, "ELIBACC"),
    (libc::ELIBBAD, "ELIBBAD"),
    (libc::ELIBSCN, "ELIBSCN"),
    (libc::ELIBMAX, "ELIBMAX"),
    (libc::ELIBEXEC, "ELIBEXEC"),
    (libc::EILSEQ, "EILSEQ"),
    (libc::ERESTART, "ERESTART"),
    (libc::ESTRPIPE, "ESTRPIPE"),
    (libc::EUSERS, "EUSERS"),
    (libc::ENOTSOCK, "ENOTSOCK"),
    (libc::EDESTADDRREQ, "EDESTADDRREQ"),
    (libc::EMSGSIZE, "EMSGSIZE"),
    (libc::EPROTOTYPE, "EPROTOTYPE"),
    (libc::ENOPROTOOPT, "ENOPROTOOPT"),
    (libc::EPROTONOSUPPORT, "EPROTONOSUPPORT"),
    (libc::ESOCKTNOSUPPORT, "ESOCKTNOSUPPORT"),
    (libc::EOPNOTSUPP, "EOPNOTSUPP"),
    (libc::EPFNOSUPPORT, "EPFNOSUPPORT"),
    (libc::EAFNOSUPPORT, "EAFNOSUPPORT"),
    (libc::EADDRINUSE, "EADDRINUSE"),
    (libc::EADDRNOTAVAIL, "EADDRNOTAVAIL"),
    (libc::ENETDOWN, "ENETDOWN"),
    (libc::ENETUNREACH, "ENETUNREACH"),
    (libc::ENETRESET, "ENETRESET"),
    (libc::ECONNABORTED, "ECONNABORTED"),
    (libc::ECONNRESET, "ECONNRESET"),
    (libc::ENOBUFS, "ENOBUFS"),
    (libc::EISCONN, "EISCONN"),
    (libc::ENOTCONN, "ENOTCONN"),
    (libc::ESHUTDOWN, "ESHUTDOWN"),
    (libc::ETOOMANYREFS, "ETOOMANYREFS"),
    (libc::ETIMEDOUT, "ETIMEDOUT"),
    (libc::ECONNREFUSED, "ECONNREFUSED"),
    (libc::EHOSTDOWN, "EHOSTDOWN"),
    (libc::EHOSTUNREACH, "EHOSTUNREACH"),
    (libc::EALREADY, "EALREADY"),
    (libc::EINPROGRESS, "EINPROGRESS"),
    (libc::ESTALE, "ESTALE"),
    (libc::EUCLEAN, "EUCLEAN"),
    (libc::ENOTNAM, "ENOTNAM"),
    (libc::ENAVAIL, "ENAVAIL"),
    (libc::EISNAM, "EISNAM"),
    (libc::EREMOTEIO, "EREMOTEIO"),
    (libc::EDQUOT, "EDQUOT"),
    (libc::ENOMEDIUM, "ENOMEDIUM"),
    (libc::EMEDIUMTYPE, "EMEDIUMTYPE"),
    (libc::ECANCELED, "ECANCELED"),
    (libc::ENOKEY, "ENOKEY"),
    (libc::EKEYEXPIRED, "EKEYEXPIRED"),
    (libc::EKEYREVOKED, "EKEYREVOKED"),
    (libc::EKEYREJECTED, "EKEYREJECTED"),
    (libc::EOWNERDEAD, "EOWNERDEAD"),
    (libc::ENOTRECOVERABLE, "ENOTRECOVERABLE"),
    (libc::ERFKILL, "ERFKILL"),
    (libc::EHWPOISON, "EHWPOISON"),
];

/// The `errno` name of an OS error, `"ENOTTY"`: `errno N` for a value without
/// a name, `None` for an error that did not come from the OS.
pub fn errno_name(e: &io::Error) -> Option<std::borrow::Cow<'static, str>> {
    let n = e.raw_os_error()?;
    Some(match ERRNO_NAMES.iter().find(|(v, _)| *v == n) {
        Some((_, name)) => std::borrow::Cow::Borrowed(*name),
        None => std::borrow::Cow::Owned(format!("errno {n}")),
    })
}

/// Pin the calling thread to CPU `cpu` with `sched_setaffinity`.
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET writes inside it,
    // `cpu` being checked against CPU_SETSIZE above.
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

/// CPU time of the calling thread in nanoseconds, `CLOCK_THREAD_CPUTIME_ID`; 0
/// if the clock cannot be read.
pub fn thread_cpu_ns() -> u64 {
    nrt_abi::os::clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A read-only mapping reads what a read-write one of the same file wrote,
    /// at every order asked, and refuses every write with an error instead of faulting.
    #[test]
    fn a_read_only_mapping_reads_and_refuses_writes() {
        let p = std::env::temp_dir().join(format!("nrt-linux-sys-ro-{}", std::process::id()));
        let f = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&p).unwrap();
        f.set_len(4096).unwrap();
        let w = Mapping::map(&f, 0, 4096).unwrap();
        let r = Mapping::map_read_only(&f, 0, 4096).unwrap();
        std::fs::remove_file(&p).unwrap();
        w.store64(8, 0x0102_0304_0506_0708, Ordering::Release).unwrap();
        w.write32(4, 7).unwrap();
        assert_eq!(r.load64(8, Ordering::Acquire).unwrap(), 0x0102_0304_0506_0708);
        assert_eq!(r.load64(8, Ordering::SeqCst).unwrap(), 0x0102_0304_0506_0708);
        assert_eq!(
            (r.read64(8).unwrap(), r.read32(4).unwrap(), r.load32(4, Ordering::Acquire).unwrap()),
            (0x0102_0304_0506_0708, 7, 7)
        );
        for e in [
            r.write32(4, 1).unwrap_err(),
            r.write64(8, 1).unwrap_err(),
            r.store32(4, 1, Ordering::Release).unwrap_err(),
            r.store64(8, 1, Ordering::Release).unwrap_err(),
        ] {
            assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{e}");
        }
        assert_eq!(r.load64(4096, Ordering::Acquire).unwrap_err().kind(), io::ErrorKind::InvalidInput, "outside");
        assert_eq!(w.read32(4).unwrap(), 7, "nothing written through the read-only one");
    }
}
