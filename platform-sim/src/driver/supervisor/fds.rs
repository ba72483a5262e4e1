//! Descriptors between the supervisor, the reaper and COMMAND: the listener
//! passed over a socket, the pipes and socket pairs, the start-error pipe.

#![allow(unsafe_code)]

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

use super::DriverError;

/// Send `fd` over the socket `sock`; fork-safe, stack buffers only.
pub(in crate::driver) fn send_fd(sock: RawFd, fd: RawFd) -> std::io::Result<()> {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec { iov_base: byte.as_mut_ptr().cast(), iov_len: 1 };
    #[repr(C)]
    struct Cmsg {
        hdr: libc::cmsghdr,
        fd: RawFd,
        _pad: u32,
    }
    // SAFETY: an all-zero cmsghdr/msghdr is valid; the fields are set below.
    let mut cmsg: Cmsg = unsafe { std::mem::zeroed() };
    // SAFETY: CMSG_LEN only computes a length.
    cmsg.hdr.cmsg_len = unsafe { libc::CMSG_LEN(core::mem::size_of::<RawFd>() as u32) } as usize;
    cmsg.hdr.cmsg_level = libc::SOL_SOCKET;
    cmsg.hdr.cmsg_type = libc::SCM_RIGHTS;
    cmsg.fd = fd;
    // SAFETY: as above.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = (&mut cmsg as *mut Cmsg).cast();
    // SAFETY: CMSG_SPACE only computes a length.
    msg.msg_controllen = unsafe { libc::CMSG_SPACE(core::mem::size_of::<RawFd>() as u32) } as usize;
    // SAFETY: msg points to live stack buffers of the lengths given.
    let rc = unsafe { libc::sendmsg(sock, &msg, 0) };
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Receive one descriptor from `sock`, waiting up to `wait`.
pub(super) fn recv_fd(sock: RawFd, wait: Duration) -> std::io::Result<OwnedFd> {
    let mut pfd = libc::pollfd { fd: sock, events: libc::POLLIN, revents: 0 };
    let ms = i32::try_from(wait.as_millis()).unwrap_or(i32::MAX);
    // SAFETY: one valid pollfd.
    let rc = unsafe { libc::poll(&mut pfd, 1, ms) };
    if rc <= 0 {
        return Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "no listener from the child"));
    }
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec { iov_base: byte.as_mut_ptr().cast(), iov_len: 1 };
    let mut space = [0u64; 8];
    // SAFETY: an all-zero msghdr is valid; set below.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = space.as_mut_ptr().cast();
    msg.msg_controllen = core::mem::size_of_val(&space);
    // SAFETY: msg points to live buffers of the lengths given.
    let n = unsafe { libc::recvmsg(sock, &mut msg, libc::MSG_CMSG_CLOEXEC) };
    if n <= 0 {
        return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "the child sent no listener"));
    }
    // SAFETY: the kernel filled msg; CMSG_FIRSTHDR reads within msg_control.
    let c = unsafe { libc::CMSG_FIRSTHDR(&msg) };
    if c.is_null() {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "no SCM_RIGHTS message"));
    }
    // SAFETY: c points into `space`, a cmsghdr the kernel wrote.
    let (level, ty) = unsafe { ((*c).cmsg_level, (*c).cmsg_type) };
    if level != libc::SOL_SOCKET || ty != libc::SCM_RIGHTS {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "not an SCM_RIGHTS message"));
    }
    // SAFETY: the data of an SCM_RIGHTS cmsg holds at least one int.
    let fd = unsafe { std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<RawFd>()) };
    // SAFETY: the kernel installed `fd` in this process for us.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// A pipe, both ends close-on-exec: `(read, write)`.
pub(super) fn pipe() -> Result<(OwnedFd, OwnedFd), DriverError> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: a valid two-int array; the result is checked.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(DriverError::Spawn(format!("pipe2: {}", std::io::Error::last_os_error())));
    }
    // SAFETY: two fresh descriptors this process owns.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// A `SOCK_SEQPACKET` socket pair, close-on-exec.
pub(super) fn seqpacket_pair() -> Result<(OwnedFd, OwnedFd), DriverError> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: a valid two-int array; the result is checked.
    let rc = unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr()) };
    if rc != 0 {
        return Err(DriverError::Spawn(format!("socketpair: {}", std::io::Error::last_os_error())));
    }
    // SAFETY: two fresh descriptors this process owns.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// The errno COMMAND or the reaper wrote on `start_error` before an exec
/// that did not happen; `Ok` once every writer has closed it, COMMAND having
/// exec'd; `Err(None)` when `wait` passed first.
pub(super) fn started(start_error: &OwnedFd, wait: Duration) -> Result<(), Option<i32>> {
    let until = Instant::now() + wait;
    loop {
        let mut p = libc::pollfd { fd: start_error.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        let ms = until.saturating_duration_since(Instant::now()).as_millis().min(100) as i32;
        // SAFETY: one valid pollfd.
        if unsafe { libc::poll(&mut p, 1, ms) } > 0 {
            let mut b = [0u8; 4];
            // SAFETY: a read into a live buffer of its length.
            let n = unsafe { libc::read(start_error.as_raw_fd(), b.as_mut_ptr().cast(), 4) };
            return if n == 4 { Err(Some(i32::from_ne_bytes(b))) } else { Ok(()) };
        }
        if Instant::now() >= until {
            return Err(None);
        }
    }
}
