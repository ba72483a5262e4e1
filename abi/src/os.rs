//! What the host programs need of Linux beyond the ABI, written once (feature
//! `os`: std and libc): the monotonic clock the server and a host in another
//! process read the same, a shared mapping of a file reached only through
//! atomics, and standard output for a reader that may go away.
//!
//! They are here because this is the lowest crate that both the binding
//! (`nrt-linux`, its `sys` mappings and `nrtctl`) and the simulator (`nrt-sim`,
//! and [`crate::shm`]'s device file) depend on; neither of those depends on
//! the other. The default build leaves this module out and stays `no_std`.
//!
//! `unsafe` here: `clock_gettime`, `mmap`/`munmap` and the views of mapped
//! words as atomics, each with its `// SAFETY:` line.

#![allow(unsafe_code)]

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8};

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

/// `CLOCK_MONOTONIC` in nanoseconds (the system's, not since an origin): a
/// clock every process on the machine reads the same, so a device clock's
/// origin published on it means the same to the server and to a host.
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// A shared mapping (`MAP_SHARED`) of a region of a file, unmapped on drop.
/// Its words are reached only as atomics borrowed from the mapping, each
/// bounds- and alignment-checked: another process (or the device) writes the
/// same memory concurrently, and an atomic access to it is no data race.
///
/// A mapping made without `PROT_WRITE` hands out the same atomics: a store
/// through one faults, so its users only load.
#[derive(Debug)]
pub struct SharedMap {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain shared memory owned by this handle; moving it
// to another thread moves nothing but the pointer.
unsafe impl Send for SharedMap {}
// SAFETY: every reference handed out through `&self` is to an atomic inside
// the mapping (checked), so concurrent accesses from several threads are
// race-free.
unsafe impl Sync for SharedMap {}

impl SharedMap {
    /// Map `len` bytes of `file` from `offset` (a multiple of the page size),
    /// shared, with protection `prot` (`libc::PROT_READ`, with or without
    /// `libc::PROT_WRITE`). 0 bytes or an offset past `off_t` are refused
    /// (`InvalidInput`); the kernel's refusal is its OS error.
    pub fn map(file: &File, offset: u64, len: usize, prot: libc::c_int) -> io::Result<SharedMap> {
        if len == 0 {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "mmap of 0 bytes"));
        }
        let off = libc::off_t::try_from(offset)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "mmap offset too large"))?;
        // SAFETY: a fresh mapping at an address the kernel picks (no fixed
        // address); the kernel validates fd, offset and length; the result is
        // checked against MAP_FAILED.
        let p = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, libc::MAP_SHARED, file.as_raw_fd(), off) };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr = NonNull::new(p.cast::<u8>()).ok_or_else(|| io::Error::other("mmap returned null"))?;
        Ok(SharedMap { ptr, len })
    }

    /// Length in bytes (never 0).
    pub fn len(&self) -> usize {
        self.len
    }

    /// `true` when empty (never: [`map`](SharedMap::map) refuses 0 bytes).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The offset of `size` bytes at `off`, if inside the mapping and aligned
    /// to `size` (at most 8).
    fn checked(&self, off: u64, size: usize) -> Option<usize> {
        let o = usize::try_from(off).ok()?;
        (o.checked_add(size)? <= self.len && o.is_multiple_of(size.clamp(1, 8))).then_some(o)
    }

    /// The 4-byte word at `off` (4-aligned, inside the mapping).
    pub fn u32_at(&self, off: u64) -> Option<&AtomicU32> {
        let o = self.checked(off, 4)?;
        // SAFETY: `o..o+4` is inside the mapping and 4-aligned (the mapping
        // is page-aligned), so it is a valid AtomicU32 for as long as `self`
        // (the mapping) lives: the borrow cannot outlive it.
        Some(unsafe { AtomicU32::from_ptr(self.ptr.as_ptr().add(o).cast::<u32>()) })
    }

    /// The 8-byte word at `off` (8-aligned, inside the mapping).
    pub fn u64_at(&self, off: u64) -> Option<&AtomicU64> {
        let o = self.checked(off, 8)?;
        // SAFETY: as in `u32_at`, for 8 bytes, 8-aligned.
        Some(unsafe { AtomicU64::from_ptr(self.ptr.as_ptr().add(o).cast::<u64>()) })
    }

    /// The `len` bytes at `off`, as atomics, if all are inside the mapping.
    pub fn bytes(&self, off: u64, len: usize) -> Option<&[AtomicU8]> {
        let o = usize::try_from(off).ok()?;
        if o.checked_add(len)? > self.len {
            return None;
        }
        // SAFETY: `o..o+len` is inside the mapping (checked above); AtomicU8
        // has u8's size and alignment, so the bytes are `len` valid AtomicU8s
        // for as long as `self` lives.
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

/// Standard output for a reader that may go away (`| head`): a closed pipe
/// silently discards the rest of the output and the program carries on to its
/// own exit status (no panic, no SIGPIPE death: Rust programs ignore SIGPIPE,
/// and nothing here panics on a failed write); any other write error is kept
/// and reported once, at exit ([`failure`](stdout::failure)). Standard error
/// is written the same way, its errors ignored. `nrtctl` and `nrt-sim` print
/// through it, with the macros [`outln!`](crate::outln), [`outp!`](crate::outp)
/// and [`errln!`](crate::errln).
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

    /// Write `text` to standard error, ignoring a failure (there is nowhere
    /// left to report it).
    pub fn eprint(text: &str) {
        let _ = io::stderr().lock().write_all(text.as_bytes());
    }

    /// Whether standard output has closed (a reader gone, or a write failed):
    /// a loop that prints stops.
    pub fn closed() -> bool {
        CLOSED.load(Ordering::Relaxed)
    }

    /// The write error standard output had, other than a closed pipe.
    pub fn failure() -> Option<&'static str> {
        FAILED.get().map(String::as_str)
    }

    /// Standard output as an `io::Write` (for code that takes a writer).
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
    ($($a:tt)*) => { $crate::os::stdout::print(&format!("{}\n", format_args!($($a)*))) };
}

/// `print!` through [`stdout`].
#[macro_export]
macro_rules! outp {
    ($($a:tt)*) => { $crate::os::stdout::print(&format!($($a)*)) };
}

/// `eprintln!` through [`stdout`].
#[macro_export]
macro_rules! errln {
    ($($a:tt)*) => { $crate::os::stdout::eprint(&format!("{}\n", format_args!($($a)*))) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

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
        let a = SharedMap::map(&f, 0, 4096, libc::PROT_READ | libc::PROT_WRITE).expect("mapped");
        let b = SharedMap::map(&f, 0, 4096, libc::PROT_READ).expect("mapped again");
        assert_eq!((a.len(), a.is_empty()), (4096, false));
        a.u64_at(8).expect("inside").store(0x1122_3344_5566_7788, Ordering::Relaxed);
        assert_eq!(b.u64_at(8).map(|w| w.load(Ordering::Relaxed)), Some(0x1122_3344_5566_7788));
        assert_eq!(b.u32_at(8).map(|w| w.load(Ordering::Relaxed)), Some(0x5566_7788), "little-endian");
        assert!(a.u64_at(4).is_none() && a.u32_at(2).is_none(), "misaligned");
        assert!(a.u64_at(4088).is_some() && a.u64_at(4096).is_none() && a.u32_at(4094).is_none(), "the end");
        assert!(a.u64_at(u64::MAX - 7).is_none(), "no overflow");
        assert_eq!(a.bytes(4090, 6).map(<[_]>::len), Some(6));
        assert!(a.bytes(4090, 7).is_none() && a.bytes(4096, 0).is_some() && a.bytes(1, usize::MAX).is_none());
        drop((a, b));
        let e = SharedMap::map(&f, 0, 0, libc::PROT_READ).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        let e = SharedMap::map(&f, 1, 4096, libc::PROT_READ).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EINVAL), "an offset off a page is the kernel's refusal");
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
