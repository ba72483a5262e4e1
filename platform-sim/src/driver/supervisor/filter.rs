//! The seccomp filter, built with libseccomp and exported as classic BPF:
//! everything is allowed but `open`, `openat`, an `ioctl` whose request has
//! type `'N'`, and the [`RANGE_TRAPPED`] calls on a descriptor in the reserved
//! range, which go to user notification.

#![allow(unsafe_code)]

use std::fs::File;
use std::io::{Read as _, Seek as _};
use std::os::fd::FromRawFd;

use libseccomp::{ScmpAction, ScmpArgCompare, ScmpCompareOp, ScmpFilterContext, ScmpSyscall};

use super::{DEVICE_FD_BASE, DEVICE_FD_SLOTS};

/// The calls trapped when the descriptor argument at the index given is in
/// the reserved range: the file operations the driver has none of, `mmap`,
/// and the duplications, which the supervisor makes into the range itself.
pub const RANGE_TRAPPED: &[(&str, u32)] = &[
    ("read", 0),
    ("write", 0),
    ("pread64", 0),
    ("pwrite64", 0),
    ("readv", 0),
    ("writev", 0),
    ("preadv", 0),
    ("pwritev", 0),
    ("preadv2", 0),
    ("pwritev2", 0),
    ("ftruncate", 0),
    ("fallocate", 0),
    ("mmap", 4),
    ("dup", 0),
    ("fcntl", 0),
];

/// The filter as classic BPF, built by libseccomp.
pub(super) fn filter_program() -> Result<Vec<libc::sock_filter>, String> {
    let e = |what: &str| {
        let what = what.to_string();
        move |err: libseccomp::error::SeccompError| format!("libseccomp {what}: {err}")
    };
    let mut ctx = ScmpFilterContext::new_filter(ScmpAction::Allow).map_err(e("new filter"))?;
    // A process of another ABI, i386 or x32, runs unsupervised rather than dying.
    ctx.set_act_badarch(ScmpAction::Allow).map_err(e("bad-arch action"))?;
    for name in ["open", "openat"] {
        let sc = ScmpSyscall::from_name(name).map_err(e(name))?;
        ctx.add_rule(ScmpAction::Notify, sc).map_err(e(name))?;
    }
    // Calls on a descriptor in the reserved range. The fd is an int: the
    // mask drops the register's upper half.
    let in_range = |arg: u32| {
        ScmpArgCompare::new(
            arg,
            ScmpCompareOp::MaskedEqual(u64::from(!(DEVICE_FD_SLOTS as u32 - 1))),
            DEVICE_FD_BASE as u64,
        )
    };
    for (name, arg) in RANGE_TRAPPED {
        let sc = ScmpSyscall::from_name(name).map_err(e(name))?;
        ctx.add_rule_conditional(ScmpAction::Notify, sc, &[in_range(*arg)]).map_err(e(name))?;
    }
    let ioctl = ScmpSyscall::from_name("ioctl").map_err(e("ioctl"))?;
    let cmp = ScmpArgCompare::new(1, ScmpCompareOp::MaskedEqual(0xFF00), 0x4E00);
    ctx.add_rule_conditional(ScmpAction::Notify, ioctl, &[cmp]).map_err(e("ioctl rule"))?;
    // SAFETY: a NUL-terminated name and valid flags; the result is checked.
    let fd = unsafe { libc::memfd_create(c"nrt-sim-bpf".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(format!("memfd_create: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: a fresh descriptor this process owns.
    let mut f = unsafe { File::from_raw_fd(fd) };
    ctx.export_bpf(&mut f).map_err(e("export"))?;
    f.rewind().map_err(|e| format!("rewind: {e}"))?;
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes).map_err(|e| format!("read the BPF: {e}"))?;
    if bytes.is_empty() || bytes.len() % 8 != 0 || bytes.len() / 8 > usize::from(u16::MAX) {
        return Err(format!("libseccomp exported {} bytes of BPF", bytes.len()));
    }
    Ok(bytes
        .chunks_exact(8)
        .map(|c| libc::sock_filter {
            code: u16::from_ne_bytes([c[0], c[1]]),
            jt: c[2],
            jf: c[3],
            k: u32::from_ne_bytes([c[4], c[5], c[6], c[7]]),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_builds() {
        let f = filter_program().expect("libseccomp builds the filter");
        assert!(f.len() > 4);
    }
}
