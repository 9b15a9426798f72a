//! The one module that talks to the kernel: AF_PACKET sockets, socket
//! options, the shared ring mapping, interface ioctls, `poll`, privileges
//! and network namespaces.
//!
//! Every wrapper is thin and allocation-free on the packet path; callers
//! above stay safe Rust. Every `unsafe` block says why it is sound.
// AF_PACKET, mmap and ioctl calls have no safe std API.
#![allow(unsafe_code)]

use std::ffi::CString;
use std::io;
use std::mem::{size_of, zeroed};
use std::ops::Range;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU32, Ordering};

fn check(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

/// `socket(AF_PACKET, SOCK_RAW, htons(protocol))`. Protocol 0 receives
/// nothing until `bind()` names one: the 2014 lesson (see socket.rs).
pub fn packet_socket(protocol: u16) -> io::Result<OwnedFd> {
    // SAFETY: plain system call with integer arguments; a non-negative
    // result is a new descriptor that nothing else owns.
    let fd = check(unsafe {
        libc::socket(
            libc::AF_PACKET,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            i32::from(protocol.to_be()),
        )
    })?;
    // SAFETY: `fd` was just returned by socket() and is owned by no one else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `setsockopt(fd, level, name, &value, sizeof value)`. `T` is a plain C
/// struct or integer (no pointers except `sock_fprog`'s, which the caller
/// keeps alive across the call).
pub fn setsockopt<T>(fd: RawFd, level: i32, name: i32, value: &T) -> io::Result<()> {
    // SAFETY: `value` is a live `T` for the duration of the call and we pass
    // its exact size; the kernel only reads it.
    check(unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (value as *const T).cast(),
            size_of::<T>() as libc::socklen_t,
        )
    })
    .map(drop)
}

/// `getsockopt` into a plain C struct of integers (`tpacket_stats_v3`).
pub fn getsockopt<T: Copy>(fd: RawFd, level: i32, name: i32, mut value: T) -> io::Result<T> {
    let mut len = size_of::<T>() as libc::socklen_t;
    // SAFETY: `value` is a writable `T` and `len` its size; the kernel writes
    // at most `len` bytes of integers, valid for any bit pattern of T here.
    check(unsafe { libc::getsockopt(fd, level, name, (&mut value as *mut T).cast(), &mut len) })?;
    Ok(value)
}

/// `bind(fd, {AF_PACKET, htons(protocol), ifindex})`. ifindex 0 is every
/// interface.
pub fn bind_packet(fd: RawFd, protocol: u16, ifindex: i32) -> io::Result<()> {
    // SAFETY: all-zero is a valid sockaddr_ll.
    let mut sll: libc::sockaddr_ll = unsafe { zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = protocol.to_be();
    sll.sll_ifindex = ifindex;
    // SAFETY: pointer to a live sockaddr_ll and its exact size.
    check(unsafe {
        libc::bind(
            fd,
            (&sll as *const libc::sockaddr_ll).cast(),
            size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    })
    .map(drop)
}

/// Waits up to `timeout_ms` for the socket to be readable. `Ok(false)` on
/// timeout or when a signal interrupted the wait (the caller re-checks its
/// stop flag).
pub fn poll_readable(fd: RawFd, timeout_ms: i32) -> io::Result<bool> {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN | libc::POLLERR,
        revents: 0,
    };
    // SAFETY: one live pollfd, count 1.
    let rc = unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
    if rc < 0 {
        let e = io::Error::last_os_error();
        return if e.kind() == io::ErrorKind::Interrupted {
            Ok(false)
        } else {
            Err(e)
        };
    }
    Ok(rc > 0)
}

/// The ring, mapped shared with the kernel.
///
/// Ownership protocol (packet(7), "PACKET_MMAP"): each block (V3) or
/// frame (V2) starts with a status word. While it lacks `TP_STATUS_USER`
/// the kernel may write the block; once set (with a write barrier before
/// it), the block is user space's until user space stores
/// `TP_STATUS_KERNEL`. [`Mmap::owned`] hands out a slice only after an
/// acquire load saw the user bit, and [`Mmap::release`] takes `&mut self`,
/// so no slice can outlive the hand-back.
pub struct Mmap {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is plain memory; access goes through the ownership
// protocol above, which does not depend on the thread.
unsafe impl Send for Mmap {}

impl Mmap {
    /// `mmap(NULL, len, PROT_READ|PROT_WRITE, MAP_SHARED|MAP_LOCKED?, fd, 0)`
    /// of a socket whose RX ring is configured.
    pub fn map(fd: RawFd, len: usize) -> io::Result<Mmap> {
        // SAFETY: a fresh mapping chosen by the kernel; we check for failure
        // and own the region until munmap in Drop.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mmap {
            ptr: ptr.cast(),
            len,
        })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    fn status_word(&self, off: usize) -> Option<&AtomicU32> {
        if !off.is_multiple_of(4) || off.checked_add(4)? > self.len {
            return None;
        }
        // SAFETY: in bounds and 4-aligned (the mapping is page-aligned);
        // the kernel updates this word concurrently, which is why it is only
        // ever accessed atomically.
        Some(unsafe { AtomicU32::from_ptr(self.ptr.add(off).cast()) })
    }

    /// The status word at `off` (acquire: what the kernel wrote before it
    /// is visible after).
    #[inline]
    pub fn status(&self, off: usize) -> u32 {
        self.status_word(off)
            .map_or(0, |w| w.load(Ordering::Acquire))
    }

    /// `range` of the ring, if the status word at `status_off` says user
    /// space owns it. The caller passes the range of the block or frame
    /// that this status word governs.
    #[inline]
    pub fn owned(&self, status_off: usize, range: Range<usize>) -> Option<&[u8]> {
        if self.status(status_off) & libc::TP_STATUS_USER == 0
            || range.start > range.end
            || range.end > self.len
        {
            return None;
        }
        // SAFETY: in bounds; the status word says the kernel will not write
        // this range until `release`, which needs `&mut self` and so cannot
        // run while the returned slice (borrowing `self`) lives.
        Some(unsafe { std::slice::from_raw_parts(self.ptr.add(range.start), range.len()) })
    }

    /// Gives the block or frame at `status_off` back to the kernel.
    #[inline]
    pub fn release(&mut self, status_off: usize) {
        if let Some(w) = self.status_word(status_off) {
            w.store(libc::TP_STATUS_KERNEL, Ordering::Release);
        }
    }
}

impl Drop for Mmap {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` are exactly what mmap returned; no slice of
        // the mapping outlives `self`.
        unsafe {
            libc::munmap(self.ptr.cast(), self.len);
        }
    }
}

/// What the interface carries at its link layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkKind {
    Ethernet,
    /// `lo`: Ethernet framing with zero addresses, and every packet seen
    /// twice (once outgoing, once incoming).
    Loopback,
    /// tun-style devices (ARPHRD_NONE): frames start at the IP header.
    RawIp,
}

/// An interface by name, as the kernel numbers it in this namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Iface {
    pub name: String,
    pub index: i32,
    pub mtu: u32,
    /// `ARPHRD_*`.
    pub hatype: u16,
}

const ARPHRD_NONE: u16 = 0xfffe;

impl Iface {
    /// Index, MTU and hardware type by `SIOCGIF*` ioctls on a throw-away
    /// datagram socket (not the capture socket: its set-up order is the
    /// point of the exercise).
    pub fn lookup(name: &str) -> io::Result<Iface> {
        if name.is_empty() || name.len() >= libc::IFNAMSIZ || name.contains('\0') {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "interface names are 1 to 15 bytes",
            ));
        }
        // SAFETY: plain system call; the descriptor is owned below.
        let fd = check(unsafe {
            libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0)
        })?;
        // SAFETY: `fd` is new and owned by no one else.
        let sock = unsafe { OwnedFd::from_raw_fd(fd) };
        let ask = |req: libc::c_ulong| -> io::Result<libc::ifreq> {
            // SAFETY: all-zero is a valid ifreq.
            let mut ifr: libc::ifreq = unsafe { zeroed() };
            for (d, s) in ifr.ifr_name.iter_mut().zip(name.bytes()) {
                *d = s as libc::c_char;
            }
            // SAFETY: SIOCGIF* read the NUL-terminated name (checked length
            // above, the rest is zero) and write into the same ifreq.
            check(unsafe { libc::ioctl(sock.as_raw_fd(), req as _, &mut ifr) })?;
            Ok(ifr)
        };
        let index = ask(libc::SIOCGIFINDEX)?;
        let mtu = ask(libc::SIOCGIFMTU)?;
        let hw = ask(libc::SIOCGIFHWADDR)?;
        // SAFETY: each ioctl above filled the union member it is named for.
        let (index, mtu, hatype) = unsafe {
            (
                index.ifr_ifru.ifru_ifindex,
                mtu.ifr_ifru.ifru_mtu,
                hw.ifr_ifru.ifru_hwaddr.sa_family,
            )
        };
        Ok(Iface {
            name: name.to_owned(),
            index,
            mtu: u32::try_from(mtu).unwrap_or(0),
            hatype,
        })
    }

    /// The link layer, if weir can decode it.
    pub fn link(&self) -> Option<LinkKind> {
        match self.hatype {
            libc::ARPHRD_ETHER => Some(LinkKind::Ethernet),
            libc::ARPHRD_LOOPBACK => Some(LinkKind::Loopback),
            ARPHRD_NONE => Some(LinkKind::RawIp),
            _ => None,
        }
    }
}

/// Becomes `user` (its uid, gid and supplementary groups), as tcpdump's
/// `-Z`: call after the sockets are open. glibc applies the change to
/// every thread. Returns the new (uid, gid).
pub fn drop_privileges(user: &str) -> io::Result<(u32, u32)> {
    let name = CString::new(user).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: all-zero is a valid passwd; getpwnam_r fills it with pointers
    // into `buf`, which outlives every use below (we copy the ids out).
    let mut pw: libc::passwd = unsafe { zeroed() };
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer refers to a live buffer of the stated size.
    let rc = unsafe {
        libc::getpwnam_r(
            name.as_ptr(),
            &mut pw,
            buf.as_mut_ptr(),
            buf.len(),
            &mut found,
        )
    };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    if found.is_null() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("no user named {user}"),
        ));
    }
    let (uid, gid) = (pw.pw_uid, pw.pw_gid);
    // SAFETY: plain system calls; order matters: groups and gid while
    // still root, uid last.
    unsafe {
        check(libc::initgroups(name.as_ptr(), gid))?;
        check(libc::setgid(gid))?;
        check(libc::setuid(uid))?;
    }
    // SAFETY: plain queries.
    let (now_uid, now_gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    if now_uid != uid || now_gid != gid {
        return Err(io::Error::other("privileges did not change"));
    }
    Ok((uid, gid))
}

/// Moves the calling thread into a new, empty network namespace (only a
/// down `lo`), for sockbench.
pub fn unshare_net() -> io::Result<()> {
    // SAFETY: plain system call; it affects only this thread's namespaces.
    check(unsafe { libc::unshare(libc::CLONE_NEWNET) }).map(drop)
}

/// The page size (ring blocks are multiples of it).
pub fn page_size() -> usize {
    // SAFETY: plain query.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(n).unwrap_or(4096)
}

/// Moves the calling thread into the network namespace at `path` (such as
/// `/run/netns/NAME`, made by `ip netns add`). Sockets it opens afterwards
/// live there. For tests and benchmarks that send from one namespace.
pub fn enter_netns(path: &std::path::Path) -> io::Result<()> {
    let file = std::fs::File::open(path)?;
    // SAFETY: plain system call on a descriptor we hold open; it affects
    // only this thread's network namespace.
    check(unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) }).map(drop)
}
