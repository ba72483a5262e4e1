//! What the host programs need of Linux beyond the ABI: the monotonic clock,
//! a shared file mapping reached only through atomics, and standard output
//! for a reader that may go away. Here because both the binding and the
//! simulator depend on this crate.
//!
//! `unsafe` here: `clock_gettime`, `mmap`, `munmap` and the views of mapped
//! words as atomics, each with its `// SAFETY:` line.

#![allow(unsafe_code)]

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};

/// Clock `id` in nanoseconds; 0 if it cannot be read.
pub fn clock_ns(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid out-pointer to a local timespec; the result is checked.
    let rc = unsafe { libc::clock_gettime(id, &mut ts) };
    if rc != 0 {
        return 0;
    }
    let s = u64::try_from(ts.tv_sec).unwrap_or(0);
    let ns = u64::try_from(ts.tv_nsec).unwrap_or(0);
    s.saturating_mul(1_000_000_000).saturating_add(ns)
}

/// `CLOCK_MONOTONIC` in nanoseconds, the same in every process.
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// How a [`SharedMap`] may be used: read and written, or only read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// `PROT_READ | PROT_WRITE`: the words are handed out as atomics.
    ReadWrite,
    /// `PROT_READ`: read only by the `Relaxed` loads.
    ReadOnly,
}

/// A `MAP_SHARED` mapping of a region of a file, unmapped on drop. Its words
/// are reached only as checked atomics, since another process or the device
/// writes the same memory. A read-only mapping gives only `Relaxed` loads.
///
/// # One size per word
///
/// Racing atomic accesses of different sizes to the same bytes are undefined
/// behaviour, so each word must be accessed at one size while another thread
/// may access it. Every field of the shared file and the driver's memory has
/// one width; nothing enforces it, as the other side is often another process.
///
/// # A file shrunk under the mapping
///
/// An access past the end of a truncated file raises `SIGBUS`. [`map`](SharedMap::map)
/// is still safe: every view is an atomic, and the process ends before a byte
/// is read. The device file is sealed against shrinking, as [`crate::shm`] checks.
#[derive(Debug)]
pub struct SharedMap {
    ptr: NonNull<u8>,
    len: usize,
    access: Access,
}

// SAFETY: the mapping is plain shared memory owned by this handle; moving it
// to another thread moves nothing but the pointer.
unsafe impl Send for SharedMap {}
// SAFETY: everything reached through `&self` is a checked atomic access inside
// the mapping, so several threads cause no data race, provided each word is
// accessed at one size, the rule in the type's doc. A read-only mapping is only
// loaded, `Relaxed`.
unsafe impl Sync for SharedMap {}

impl SharedMap {
    /// Map `len` bytes of `file` from `offset`, a multiple of the page size,
    /// with `access`. 0 bytes or an offset past `off_t` are `InvalidInput`; a
    /// kernel refusal is its OS error.
    pub fn map(file: &File, offset: u64, len: usize, access: Access) -> io::Result<SharedMap> {
        if len == 0 {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "mmap of 0 bytes"));
        }
        let off = libc::off_t::try_from(offset)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "mmap offset too large"))?;
        let prot = match access {
            Access::ReadWrite => libc::PROT_READ | libc::PROT_WRITE,
            Access::ReadOnly => libc::PROT_READ,
        };
        // SAFETY: a fresh mapping at an address the kernel picks; the kernel
        // validates fd, offset and length; the result is checked against MAP_FAILED.
        let p = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, libc::MAP_SHARED, file.as_raw_fd(), off) };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr = NonNull::new(p.cast::<u8>()).ok_or_else(|| io::Error::other("mmap returned null"))?;
        Ok(SharedMap { ptr, len, access })
    }

    /// How it was mapped.
    pub fn access(&self) -> Access {
        self.access
    }

    /// Length in bytes, never 0.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Never `true`: [`map`](SharedMap::map) refuses 0 bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The offset of `size` bytes at `off`, if inside the mapping and aligned to `size`.
    fn checked(&self, off: u64, size: usize) -> Option<usize> {
        let o = usize::try_from(off).ok()?;
        (o.checked_add(size)? <= self.len && o.is_multiple_of(size.clamp(1, 8))).then_some(o)
    }

    /// The 4-byte word at `off` as an atomic, not checked for [`Access`].
    fn word32(&self, off: u64) -> Option<&AtomicU32> {
        let o = self.checked(off, 4)?;
        // SAFETY: `o..o+4` is inside the page-aligned mapping and 4-aligned,
        // so a valid AtomicU32 while `self` lives, which the borrow cannot
        // outlive. Callers store only on a read-write mapping and load a
        // read-only one only `Relaxed`.
        Some(unsafe { AtomicU32::from_ptr(self.ptr.as_ptr().add(o).cast::<u32>()) })
    }

    /// As [`word32`](SharedMap::word32), for 8 bytes, 8-aligned.
    fn word64(&self, off: u64) -> Option<&AtomicU64> {
        let o = self.checked(off, 8)?;
        // SAFETY: as in `word32`, for 8 bytes, 8-aligned.
        Some(unsafe { AtomicU64::from_ptr(self.ptr.as_ptr().add(o).cast::<u64>()) })
    }

    /// The 4-byte word at `off` of a [read-write](Access::ReadWrite) mapping.
    pub fn u32_at(&self, off: u64) -> Option<&AtomicU32> {
        self.writable()?;
        self.word32(off)
    }

    /// The 8-byte word at `off` of a read-write mapping.
    pub fn u64_at(&self, off: u64) -> Option<&AtomicU64> {
        self.writable()?;
        self.word64(off)
    }

    /// The 4-byte word at `off` of any mapping, loaded `Relaxed`.
    pub fn load_u32(&self, off: u64) -> Option<u32> {
        Some(self.word32(off)?.load(Ordering::Relaxed))
    }

    /// The 8-byte word at `off`, loaded `Relaxed`. A 32-bit target answers
    /// `None` for a read-only mapping: Rust allows only 4-byte loads of
    /// read-only memory there, and two halves could tear.
    pub fn load_u64(&self, off: u64) -> Option<u64> {
        if self.access == Access::ReadOnly && !cfg!(target_pointer_width = "64") {
            return None;
        }
        Some(self.word64(off)?.load(Ordering::Relaxed))
    }

    /// `Some` when the mapping may be written.
    fn writable(&self) -> Option<()> {
        (self.access == Access::ReadWrite).then_some(())
    }

    /// The `len` bytes at `off` of a read-write mapping, as atomics.
    pub fn bytes(&self, off: u64, len: usize) -> Option<&[AtomicU8]> {
        self.writable()?;
        let o = usize::try_from(off).ok()?;
        if o.checked_add(len)? > self.len {
            return None;
        }
        // SAFETY: `o..o+len` is inside the mapping, checked above; AtomicU8 has
        // u8's layout, so these are `len` valid AtomicU8s while `self` lives.
        Some(unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().add(o).cast::<AtomicU8>(), len) })
    }
}

impl Drop for SharedMap {
    fn drop(&mut self) {
        // SAFETY: exactly the pointer and length mmap returned; every borrow
        // handed out ends with `self`.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

/// Standard output for a reader that may go away, as `| head` does: a closed
/// pipe discards the rest and the program carries on to its own exit status.
/// Any other write error is kept for [`failure`](stdout::failure). Printed
/// through [`outln!`](crate::outln), [`outp!`](crate::outp) and [`errln!`](crate::errln).
pub mod stdout {
    use std::io::{self, Write};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::OnceLock;

    static CLOSED: AtomicBool = AtomicBool::new(false);
    static FAILED: OnceLock<String> = OnceLock::new();

    /// Write `text` to standard output, unless it is closed.
    pub fn print(text: &str) {
        print_bytes(text.as_bytes());
    }

    fn print_bytes(bytes: &[u8]) {
        if CLOSED.load(Ordering::Relaxed) {
            return;
        }
        let mut o = io::stdout().lock();
        if let Err(e) = o.write_all(bytes).and_then(|()| o.flush()) {
            CLOSED.store(true, Ordering::Relaxed);
            if e.kind() != io::ErrorKind::BrokenPipe {
                let _ = FAILED.set(e.to_string());
            }
        }
    }

    /// Write `text` to standard error, ignoring a failure.
    pub fn eprint(text: &str) {
        let _ = io::stderr().lock().write_all(text.as_bytes());
    }

    /// Whether standard output has closed: a loop that prints stops.
    pub fn closed() -> bool {
        CLOSED.load(Ordering::Relaxed)
    }

    /// The write error standard output had, other than a closed pipe.
    pub fn failure() -> Option<&'static str> {
        FAILED.get().map(String::as_str)
    }

    /// Standard output as an `io::Write`.
    pub struct Stdout;

    impl Write for Stdout {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            print_bytes(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
}

/// `println!` through [`stdout`].
#[macro_export]
macro_rules! outln {
    () => { $crate::os::stdout::print("\n") };
    ($($a:tt)*) => { $crate::os::stdout::print(&::std::format!("{}\n", ::std::format_args!($($a)*))) };
}

/// `print!` through [`stdout`].
#[macro_export]
macro_rules! outp {
    ($($a:tt)*) => { $crate::os::stdout::print(&::std::format!($($a)*)) };
}

/// `eprintln!` through [`stdout`].
#[macro_export]
macro_rules! errln {
    ($($a:tt)*) => { $crate::os::stdout::eprint(&::std::format!("{}\n", ::std::format_args!($($a)*))) };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file of `len` zero bytes of this test's own.
    fn file(name: &str, len: u64) -> (std::path::PathBuf, File) {
        let p = std::env::temp_dir().join(format!("nrt-abi-os-{name}-{}", std::process::id()));
        let f = File::options().read(true).write(true).create(true).truncate(true).open(&p).expect("a temp file");
        f.set_len(len).expect("its length");
        (p, f)
    }

    /// Every word is reached inside the mapping and aligned, or not at all;
    /// two mappings of one file see each other's stores.
    #[test]
    fn a_shared_map_hands_out_only_aligned_words_inside_it() {
        let (p, f) = file("words", 4096);
        let a = SharedMap::map(&f, 0, 4096, Access::ReadWrite).expect("mapped");
        let b = SharedMap::map(&f, 0, 4096, Access::ReadWrite).expect("mapped again");
        assert_eq!((a.len(), a.is_empty(), a.access()), (4096, false, Access::ReadWrite));
        a.u64_at(8).expect("inside").store(0x1122_3344_5566_7788, Ordering::Relaxed);
        assert_eq!(b.u64_at(8).map(|w| w.load(Ordering::Relaxed)), Some(0x1122_3344_5566_7788));
        // Of another size than the store, but ordered after it (one thread): no race.
        assert_eq!(b.u32_at(8).map(|w| w.load(Ordering::Relaxed)), Some(0x5566_7788), "little-endian");
        assert_eq!((b.load_u64(8), b.load_u32(12)), (Some(0x1122_3344_5566_7788), Some(0x1122_3344)));
        assert!(a.u64_at(4).is_none() && a.u32_at(2).is_none(), "misaligned");
        assert!(a.load_u64(4).is_none() && a.load_u32(2).is_none(), "misaligned");
        assert!(a.u64_at(4088).is_some() && a.u64_at(4096).is_none() && a.u32_at(4094).is_none(), "the end");
        assert!(a.load_u64(4088).is_some() && a.load_u64(4096).is_none() && a.load_u32(4094).is_none(), "the end");
        assert!(a.u64_at(u64::MAX - 7).is_none(), "no overflow");
        assert_eq!(a.bytes(4090, 6).map(<[_]>::len), Some(6));
        assert!(a.bytes(4090, 7).is_none() && a.bytes(4096, 0).is_some() && a.bytes(1, usize::MAX).is_none());
        drop((a, b));
        let e = SharedMap::map(&f, 0, 0, Access::ReadOnly).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        let e = SharedMap::map(&f, 1, 4096, Access::ReadOnly).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EINVAL), "an offset off a page is the kernel's refusal");
        let _ = std::fs::remove_file(&p);
    }

    /// A read-only mapping gives only the `Relaxed` loads, and they see a
    /// writer's stores.
    #[test]
    fn a_read_only_map_is_only_loaded() {
        let (p, f) = file("ro", 4096);
        let w = SharedMap::map(&f, 0, 4096, Access::ReadWrite).expect("mapped");
        let r = SharedMap::map(&f, 0, 4096, Access::ReadOnly).expect("mapped read-only");
        assert_eq!(r.access(), Access::ReadOnly);
        assert!(r.u32_at(0).is_none() && r.u64_at(8).is_none() && r.bytes(0, 1).is_none(), "no store possible");
        w.u32_at(0).expect("writable").store(0xA5A5_0001, Ordering::Release);
        w.u64_at(8).expect("writable").store(u64::MAX - 1, Ordering::Release);
        assert_eq!(r.load_u32(0), Some(0xA5A5_0001));
        let want = if cfg!(target_pointer_width = "64") { Some(u64::MAX - 1) } else { None };
        assert_eq!(r.load_u64(8), want);
        assert!(r.load_u32(4096).is_none() && r.load_u32(1).is_none(), "still bounds- and alignment-checked");
        drop((w, r));
        let ro = File::open(&p).expect("opened read-only");
        let e = SharedMap::map(&ro, 0, 4096, Access::ReadWrite).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EACCES), "read-write of a file opened read-only");
        assert!(SharedMap::map(&ro, 0, 4096, Access::ReadOnly).is_ok());
        let _ = std::fs::remove_file(&p);
    }

    #[test]
    fn the_monotonic_clock_moves_forward() {
        let t0 = monotonic_ns();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let t1 = monotonic_ns();
        assert!(t0 > 0 && t1 >= t0 + 2_000_000, "{t0} {t1}");
        assert_eq!(clock_ns(-1), 0, "a clock that cannot be read");
    }
}
