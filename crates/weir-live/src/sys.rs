//! The only `unsafe` of the crate: the netlink socket's system calls.
//!
//! Everything here is a thin, checked wrapper; the message formats live in
//! `netlink.rs`, which is safe code.
// Raw netlink socket calls have no safe std API.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

/// `NETLINK_NETFILTER` from `<linux/netlink.h>`.
const NETLINK_NETFILTER: libc::c_int = 12;
/// `SOL_NETLINK` and `NETLINK_NO_ENOBUFS` from `<linux/netlink.h>`.
const SOL_NETLINK: libc::c_int = 270;
const NETLINK_NO_ENOBUFS: libc::c_int = 5;

/// A bound `AF_NETLINK`/`NETLINK_NETFILTER` socket.
pub struct NetlinkSocket {
    fd: OwnedFd,
}

fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

impl NetlinkSocket {
    /// Opens and binds a netfilter netlink socket (the kernel picks the port id).
    pub fn open() -> io::Result<NetlinkSocket> {
        // SAFETY: socket(2) takes no pointers; the result is checked.
        let fd = check(unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                NETLINK_NETFILTER,
            )
        })?;
        // SAFETY: fd is a fresh descriptor we own and nobody else closes.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: sockaddr_nl is plain old data; all-zero is a valid value.
        let mut addr: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        addr.nl_family = libc::AF_NETLINK as libc::sa_family_t;
        // SAFETY: addr points to a live sockaddr_nl of the length passed.
        check(unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&addr as *const libc::sockaddr_nl).cast(),
                std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            )
        })?;
        Ok(NetlinkSocket { fd })
    }

    fn setsockopt<T>(&self, level: libc::c_int, name: libc::c_int, value: &T) -> io::Result<()> {
        // SAFETY: value is a live T and its size is passed with it.
        check(unsafe {
            libc::setsockopt(
                self.fd.as_raw_fd(),
                level,
                name,
                (value as *const T).cast(),
                std::mem::size_of::<T>() as libc::socklen_t,
            )
        })
        .map(drop)
    }

    /// Grows the receive buffer past `rmem_max` (root), else as far as allowed.
    pub fn set_recv_buffer(&self, bytes: usize) -> io::Result<()> {
        let n = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
        self.setsockopt(libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, &n)
            .or_else(|_| self.setsockopt(libc::SOL_SOCKET, libc::SO_RCVBUF, &n))
    }

    /// Without this, a full socket buffer makes the next recv fail with
    /// ENOBUFS; the kernel counts those drops either way (`user_dropped`).
    pub fn set_no_enobufs(&self) -> io::Result<()> {
        self.setsockopt(SOL_NETLINK, NETLINK_NO_ENOBUFS, &1 as &libc::c_int)
    }

    /// A blocking receive returns EAGAIN after this long, so the loop can
    /// look at its flags.
    pub fn set_recv_timeout(&self, t: Duration) -> io::Result<()> {
        let tv = libc::timeval {
            tv_sec: t.as_secs() as libc::time_t,
            tv_usec: t.subsec_micros() as libc::suseconds_t,
        };
        self.setsockopt(libc::SOL_SOCKET, libc::SO_RCVTIMEO, &tv)
    }

    /// Sends one buffer (one or more netlink messages) to the kernel.
    pub fn send(&self, buf: &[u8]) -> io::Result<()> {
        // SAFETY: sockaddr_nl is plain old data; all-zero addresses the kernel.
        let mut addr: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        addr.nl_family = libc::AF_NETLINK as libc::sa_family_t;
        loop {
            // SAFETY: buf and addr are live for the call, lengths match.
            let n = unsafe {
                libc::sendto(
                    self.fd.as_raw_fd(),
                    buf.as_ptr().cast(),
                    buf.len(),
                    0,
                    (&addr as *const libc::sockaddr_nl).cast(),
                    std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
                )
            };
            if n >= 0 {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }

    /// Receives one datagram into `buf`; returns its full length, which is
    /// larger than `buf` when it was cut (MSG_TRUNC).
    pub fn recv(&self, buf: &mut [u8], dontwait: bool) -> io::Result<usize> {
        let flags = libc::MSG_TRUNC | if dontwait { libc::MSG_DONTWAIT } else { 0 };
        // SAFETY: buf is a live, writable slice of the length passed.
        let n = unsafe {
            libc::recv(
                self.fd.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                flags,
            )
        };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }

    /// Receives up to `bufs.len()` datagrams in one call: waits for the
    /// first (up to the receive timeout), takes the rest only if already
    /// queued. `lens[i]` gets each datagram's full length (see `recv`).
    pub fn recv_many(&self, bufs: &mut [Vec<u8>], lens: &mut [usize]) -> io::Result<usize> {
        const MAX: usize = 64;
        let n = bufs.len().min(lens.len()).min(MAX);
        // SAFETY: iovec and mmsghdr are plain old data; all-zero is valid.
        let mut iov: [libc::iovec; MAX] = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        let mut hdrs: [libc::mmsghdr; MAX] = unsafe { std::mem::zeroed() };
        for ((buf, v), h) in bufs
            .iter_mut()
            .zip(iov.iter_mut())
            .zip(hdrs.iter_mut())
            .take(n)
        {
            v.iov_base = buf.as_mut_ptr().cast();
            v.iov_len = buf.len();
            h.msg_hdr.msg_iov = v;
            h.msg_hdr.msg_iovlen = 1;
        }
        // SAFETY: hdrs[..n] each point to one live iovec over a live buffer;
        // the kernel writes at most iov_len bytes into each.
        let got = unsafe {
            libc::recvmmsg(
                self.fd.as_raw_fd(),
                hdrs.as_mut_ptr(),
                n as libc::c_uint,
                libc::MSG_WAITFORONE | libc::MSG_TRUNC,
                std::ptr::null_mut(),
            )
        };
        if got < 0 {
            return Err(io::Error::last_os_error());
        }
        let got = got as usize;
        for ((len, h), buf) in lens.iter_mut().zip(&hdrs).zip(bufs.iter()).take(got) {
            // With MSG_TRUNC netlink reports the datagram's full length.
            *len = h.msg_len as usize;
            if h.msg_hdr.msg_flags & libc::MSG_TRUNC != 0 {
                *len = (*len).max(buf.len() + 1);
            }
        }
        Ok(got)
    }
}

/// The interface's name for a kernel interface index, if it has one.
pub fn interface_name(index: u32) -> Option<String> {
    let mut buf = [0u8; libc::IF_NAMESIZE];
    // SAFETY: buf holds IF_NAMESIZE bytes, as if_indextoname requires.
    let p = unsafe { libc::if_indextoname(index, buf.as_mut_ptr().cast()) };
    if p.is_null() {
        return None;
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8(buf.get(..end)?.to_vec()).ok()
}
