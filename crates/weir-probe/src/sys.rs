//! The one module that talks to the kernel: socket options, `recvmsg` with
//! control messages, the error queue, `clock_gettime`.
//!
//! Everything here is a thin, allocation-free wrapper; callers above stay
//! safe Rust. Every `unsafe` block says why it is sound.

use std::io;
use std::mem::{size_of, zeroed, MaybeUninit};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6, UdpSocket};
use std::os::fd::AsRawFd;

/// `SO_EE_ORIGIN_TIMESTAMPING` from linux/errqueue.h.
const SO_EE_ORIGIN_TIMESTAMPING: u8 = 4;

/// Nanoseconds since the epoch by `CLOCK_REALTIME`: the clock the kernel's
/// software timestamps use, so the two can be subtracted.
#[inline]
pub fn now_ns() -> u64 {
    let mut ts = MaybeUninit::<libc::timespec>::uninit();
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_REALTIME always
    // exists, so the call fills it and returns 0 (checked below).
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, ts.as_mut_ptr()) };
    if rc != 0 {
        return 0;
    }
    // SAFETY: clock_gettime returned 0, so it initialised `ts`.
    let ts = unsafe { ts.assume_init() };
    timespec_ns(&ts)
}

#[inline]
fn timespec_ns(ts: &libc::timespec) -> u64 {
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}

fn setsockopt_int(sock: &UdpSocket, level: i32, name: i32, value: i32) -> io::Result<()> {
    // SAFETY: the fd is open for the lifetime of `sock`; we pass a pointer
    // to a live i32 and its exact size.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            level,
            name,
            (&value as *const i32).cast(),
            size_of::<i32>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Asks for the kernel's software receive timestamp on every datagram
/// (`SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE`), and with
/// `tx`, a software transmit timestamp per send on the error queue, keyed
/// by a per-socket counter (`OPT_ID`) and carrying no packet (`OPT_TSONLY`).
pub fn enable_timestamping(sock: &UdpSocket, tx: bool) -> io::Result<()> {
    let mut flags = libc::SOF_TIMESTAMPING_RX_SOFTWARE | libc::SOF_TIMESTAMPING_SOFTWARE;
    if tx {
        flags |= libc::SOF_TIMESTAMPING_TX_SOFTWARE
            | libc::SOF_TIMESTAMPING_OPT_ID
            | libc::SOF_TIMESTAMPING_OPT_TSONLY;
    }
    setsockopt_int(sock, libc::SOL_SOCKET, libc::SO_TIMESTAMPING, flags as i32)
}

/// Asks for the destination address and TTL / hop limit of each datagram,
/// so the filter sees the packet's real header fields.
pub fn enable_packet_info(sock: &UdpSocket, v6: bool) -> io::Result<()> {
    if v6 {
        setsockopt_int(sock, libc::SOL_IPV6, libc::IPV6_RECVPKTINFO, 1)?;
        setsockopt_int(sock, libc::SOL_IPV6, libc::IPV6_RECVHOPLIMIT, 1)?;
        // IPv4 datagrams on a dual-stack socket: best effort.
        let _ = setsockopt_int(sock, libc::SOL_IP, libc::IP_PKTINFO, 1);
        let _ = setsockopt_int(sock, libc::SOL_IP, libc::IP_RECVTTL, 1);
        Ok(())
    } else {
        setsockopt_int(sock, libc::SOL_IP, libc::IP_PKTINFO, 1)?;
        setsockopt_int(sock, libc::SOL_IP, libc::IP_RECVTTL, 1)
    }
}

/// What `recvmsg` said about one datagram besides its bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvMeta {
    /// Bytes placed in the buffer.
    pub len: usize,
    /// The datagram was longer than the buffer (`MSG_TRUNC`).
    pub truncated: bool,
    /// Sender.
    pub peer: Option<SocketAddr>,
    /// Kernel software receive time, ns since the epoch.
    pub kernel_rx_ns: Option<u64>,
    /// Destination address from the IP header (`IP_PKTINFO`).
    pub dst: Option<IpAddr>,
    /// TTL or hop limit.
    pub ttl: Option<u8>,
}

/// Control-message space, aligned for `cmsghdr`; reused across calls.
#[repr(C, align(8))]
pub struct CmsgBuf([u8; 512]);

impl Default for CmsgBuf {
    fn default() -> CmsgBuf {
        CmsgBuf([0; 512])
    }
}

fn sockaddr_to_std(ss: &libc::sockaddr_storage, len: libc::socklen_t) -> Option<SocketAddr> {
    match i32::from(ss.ss_family) {
        libc::AF_INET if len as usize >= size_of::<libc::sockaddr_in>() => {
            // SAFETY: the family says sockaddr_in, the kernel wrote at least
            // that many bytes, and sockaddr_storage is aligned for it.
            let sin =
                unsafe { &*(ss as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            let ip = Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr));
            Some(SocketAddr::V4(SocketAddrV4::new(
                ip,
                u16::from_be(sin.sin_port),
            )))
        }
        libc::AF_INET6 if len as usize >= size_of::<libc::sockaddr_in6>() => {
            // SAFETY: as above, for sockaddr_in6.
            let sin6 =
                unsafe { &*(ss as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>() };
            Some(SocketAddr::V6(SocketAddrV6::new(
                Ipv6Addr::from(sin6.sin6_addr.s6_addr),
                u16::from_be(sin6.sin6_port),
                sin6.sin6_flowinfo,
                sin6.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

/// Walks the control messages `recvmsg` left in `msg` and calls `f` with
/// each one's level, type and data bytes.
fn for_each_cmsg(msg: &libc::msghdr, mut f: impl FnMut(i32, i32, &[u8])) {
    // SAFETY: `msg` was filled by a successful recvmsg, so msg_control and
    // msg_controllen describe our buffer and the kernel's well-formed chain;
    // CMSG_FIRSTHDR/CMSG_NXTHDR stay inside it and return null at the end.
    let mut cmsg = unsafe { libc::CMSG_FIRSTHDR(msg) };
    while !cmsg.is_null() {
        // SAFETY: non-null cmsg from the macros points at a complete header
        // inside the buffer; the data runs to cmsg_len from the header start,
        // which the kernel bounded by msg_controllen.
        let (level, kind, data) = unsafe {
            let hdr = &*cmsg;
            let data = libc::CMSG_DATA(cmsg);
            let head = data.offset_from(cmsg.cast::<u8>()) as usize;
            let len = (hdr.cmsg_len as usize).saturating_sub(head);
            (
                hdr.cmsg_level,
                hdr.cmsg_type,
                std::slice::from_raw_parts(data, len),
            )
        };
        f(level, kind, data);
        // SAFETY: as for CMSG_FIRSTHDR.
        cmsg = unsafe { libc::CMSG_NXTHDR(msg, cmsg) };
    }
}

/// Reads a `T` from the front of `data`, if it is long enough.
fn read_struct<T: Copy>(data: &[u8]) -> Option<T> {
    if data.len() < size_of::<T>() {
        return None;
    }
    // SAFETY: `data` holds at least size_of::<T>() bytes; read_unaligned
    // copes with any alignment; T is a plain C struct of integers here.
    Some(unsafe { data.as_ptr().cast::<T>().read_unaligned() })
}

fn read_i32(data: &[u8]) -> Option<i32> {
    read_struct::<i32>(data)
}

/// The first non-zero stamp of an `scm_timestamping` (ts[0] is software).
fn software_stamp(data: &[u8]) -> Option<u64> {
    let ts: [libc::timespec; 3] = read_struct(data)?;
    let ns = timespec_ns(&ts[0]);
    (ns != 0).then_some(ns)
}

/// One `recvmsg`: fills `buf`, and returns the sender, the kernel's
/// software receive time and the header fields from control messages.
/// No allocation; `cmsg` is reused between calls.
pub fn recv(sock: &UdpSocket, buf: &mut [u8], cmsg: &mut CmsgBuf) -> io::Result<RecvMeta> {
    // SAFETY: all-zero is a valid sockaddr_storage and msghdr.
    let mut name: libc::sockaddr_storage = unsafe { zeroed() };
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: all-zero is a valid msghdr; the pointers are set below.
    let mut msg: libc::msghdr = unsafe { zeroed() };
    msg.msg_name = (&mut name as *mut libc::sockaddr_storage).cast();
    msg.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cmsg.0.as_mut_ptr().cast();
    msg.msg_controllen = cmsg.0.len() as _;
    // SAFETY: every pointer in `msg` refers to a live, writable buffer of
    // the stated length for the duration of the call.
    let n = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut meta = RecvMeta {
        len: (n as usize).min(buf.len()),
        truncated: msg.msg_flags & libc::MSG_TRUNC != 0,
        peer: sockaddr_to_std(&name, msg.msg_namelen),
        kernel_rx_ns: None,
        dst: None,
        ttl: None,
    };
    for_each_cmsg(&msg, |level, kind, data| match (level, kind) {
        (libc::SOL_SOCKET, libc::SCM_TIMESTAMPING) => meta.kernel_rx_ns = software_stamp(data),
        (libc::SOL_IP, libc::IP_PKTINFO) => {
            if let Some(pi) = read_struct::<libc::in_pktinfo>(data) {
                meta.dst = Some(IpAddr::V4(Ipv4Addr::from(u32::from_be(pi.ipi_addr.s_addr))));
            }
        }
        (libc::SOL_IP, libc::IP_TTL) => meta.ttl = read_i32(data).map(|t| t as u8),
        (libc::SOL_IPV6, libc::IPV6_PKTINFO) => {
            if let Some(pi) = read_struct::<libc::in6_pktinfo>(data) {
                meta.dst = Some(IpAddr::V6(Ipv6Addr::from(pi.ipi6_addr.s6_addr)));
            }
        }
        (libc::SOL_IPV6, libc::IPV6_HOPLIMIT) => meta.ttl = read_i32(data).map(|t| t as u8),
        _ => {}
    });
    Ok(meta)
}

/// Reads one software transmit timestamp from the error queue without
/// blocking: `(id, ns)`, where `id` counts this socket's sends from 0.
/// `Ok(None)` when the queue is empty.
pub fn recv_tx_stamp(sock: &UdpSocket, cmsg: &mut CmsgBuf) -> io::Result<Option<(u32, u64)>> {
    let mut dummy = [0u8; 64];
    let mut iov = libc::iovec {
        iov_base: dummy.as_mut_ptr().cast(),
        iov_len: dummy.len(),
    };
    // SAFETY: all-zero is a valid msghdr; the pointers are set below.
    let mut msg: libc::msghdr = unsafe { zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cmsg.0.as_mut_ptr().cast();
    msg.msg_controllen = cmsg.0.len() as _;
    // SAFETY: as in `recv`: every pointer is to a live buffer of its length.
    let n = unsafe {
        libc::recvmsg(
            sock.as_raw_fd(),
            &mut msg,
            libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT,
        )
    };
    if n < 0 {
        let e = io::Error::last_os_error();
        return match e.kind() {
            io::ErrorKind::WouldBlock => Ok(None),
            _ => Err(e),
        };
    }
    let mut stamp = None;
    let mut id = None;
    for_each_cmsg(&msg, |level, kind, data| match (level, kind) {
        (libc::SOL_SOCKET, libc::SCM_TIMESTAMPING) => stamp = software_stamp(data),
        (libc::SOL_IP, libc::IP_RECVERR) | (libc::SOL_IPV6, libc::IPV6_RECVERR) => {
            if let Some(ee) = read_struct::<libc::sock_extended_err>(data) {
                if ee.ee_errno == libc::ENOMSG as u32 && ee.ee_origin == SO_EE_ORIGIN_TIMESTAMPING {
                    id = Some(ee.ee_data);
                }
            }
        }
        _ => {}
    });
    Ok(match (id, stamp) {
        (Some(id), Some(ns)) => Some((id, ns)),
        // A queue entry that is not a timestamp: skip it, keep draining.
        _ => Some((u32::MAX, 0)),
    })
}

/// Makes sure the kernel is stamping received packets before a run starts.
///
/// Linux turns receive timestamping on through a deferred static key, so
/// the first datagrams after `SO_TIMESTAMPING` may arrive unstamped. This
/// sends itself datagrams over loopback until one comes back stamped (at
/// most ~100 ms); if loopback is down it just waits a little.
pub fn warm_up_timestamping() {
    let pair = UdpSocket::bind("127.0.0.1:0").and_then(|s| {
        enable_timestamping(&s, false)?;
        s.set_read_timeout(Some(std::time::Duration::from_millis(10)))?;
        s.connect(s.local_addr()?)?;
        Ok(s)
    });
    let Ok(sock) = pair else {
        std::thread::sleep(std::time::Duration::from_millis(20));
        return;
    };
    let mut buf = [0u8; 16];
    let mut cmsg = CmsgBuf::default();
    for _ in 0..10 {
        if sock.send(b"warm-up").is_ok() {
            if let Ok(m) = recv(&sock, &mut buf, &mut cmsg) {
                if m.kernel_rx_ns.is_some() {
                    return;
                }
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_datagram_carries_a_kernel_stamp() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        enable_timestamping(&b, false).unwrap();
        enable_packet_info(&b, false).unwrap();
        warm_up_timestamping();
        let mut buf = [0u8; 16];
        let mut cm = CmsgBuf::default();
        let before = now_ns();
        a.send_to(b"hello", b.local_addr().unwrap()).unwrap();
        let meta = recv(&b, &mut buf, &mut cm).unwrap();
        let after = now_ns();
        assert_eq!(&buf[..meta.len], b"hello");
        assert_eq!(meta.peer, Some(a.local_addr().unwrap()));
        assert_eq!(meta.dst, Some(IpAddr::V4(Ipv4Addr::LOCALHOST)));
        assert!(meta.ttl.is_some());
        let k = meta.kernel_rx_ns.expect("software rx stamp");
        assert!(before <= k && k <= after, "{before} <= {k} <= {after}");
    }

    #[test]
    fn truncation_is_reported() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        a.send_to(&[7u8; 100], b.local_addr().unwrap()).unwrap();
        let mut buf = [0u8; 10];
        let meta = recv(&b, &mut buf, &mut CmsgBuf::default()).unwrap();
        assert!(meta.truncated);
        assert_eq!(meta.len, 10);
    }

    #[test]
    fn tx_stamps_come_back_in_send_order() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        enable_timestamping(&a, true).unwrap();
        a.connect(b.local_addr().unwrap()).unwrap();
        let t0 = now_ns();
        for _ in 0..3 {
            a.send(b"x").unwrap();
        }
        let mut cm = CmsgBuf::default();
        let mut ids = Vec::new();
        for _ in 0..100 {
            match recv_tx_stamp(&a, &mut cm).unwrap() {
                Some((id, ns)) if id != u32::MAX => {
                    assert!(ns >= t0);
                    ids.push(id);
                }
                Some(_) => {}
                None if ids.len() == 3 => break,
                None => std::thread::sleep(std::time::Duration::from_millis(1)),
            }
        }
        assert_eq!(ids, [0, 1, 2]);
    }
}
