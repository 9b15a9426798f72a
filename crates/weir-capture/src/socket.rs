//! Opening a capture socket in the right order, and reading from it.
//!
//! The order is the lesson of the 2014 Linux fix. A packet socket created
//! with a protocol (`socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL))`) is
//! hooked into the receive path at once, on every interface; `bind()` to
//! one interface must then unhook it, which waits in `synchronize_net()`
//! (milliseconds; `weir sockbench` measures it), and every packet that
//! arrived in between is unfiltered and from any interface. So:
//!
//! 1. `socket(AF_PACKET, SOCK_RAW, 0)`: protocol 0, hooked nowhere, sees
//!    nothing;
//! 2. `setsockopt(SOL_PACKET, PACKET_VERSION)` (must precede the ring:
//!    EBUSY after), `setsockopt(SOL_SOCKET, SO_ATTACH_FILTER)` with a
//!    one-instruction classic BPF `ret #snaplen` (accept all, cut at the
//!    snap length, as libpcap sets its snap length), `setsockopt(SOL_PACKET,
//!    PACKET_RX_RING)`;
//! 3. `mmap` the ring;
//! 4. `bind()` with `ETH_P_ALL` and the interface index: the socket is
//!    hooked once, already filtered and with its ring;
//! 5. only then `setsockopt(SOL_PACKET, PACKET_FANOUT)`, when workers share
//!    the flows: the kernel refuses to add a socket that is not yet bound
//!    to a protocol ("running"), with EINVAL (fanout_add in
//!    net/packet/af_packet.c; packet(7): "the socket must be bound").
//!
//! The sequence is one generic function over [`Kernel`], so a unit test
//! checks it against a recording kernel; the strace test in
//! crates/weir/tests/capture.rs checks the real system calls.

use crate::ring::{Batch, Layout, Ring, RingMode};
use crate::sys::{self, Iface, LinkKind, Mmap};
use crate::{Error, ETH_P_ALL};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

/// What to open.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    pub mode: RingMode,
    /// Ring size in bytes (tcpdump's `-B`, which counts KiB).
    pub buffer: usize,
    /// Bytes kept of each packet.
    pub snaplen: u32,
    /// Join this PACKET_FANOUT group (hash of the flow, defragmenting).
    pub fanout: Option<u16>,
    /// V3: hand over a block that is not full after this long.
    pub block_timeout_ms: u32,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            mode: RingMode::Blocks,
            buffer: 2 << 20,
            snaplen: 262_144,
            fanout: None,
            block_timeout_ms: 10,
        }
    }
}

/// One socket option the set-up sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opt {
    /// PACKET_VERSION: TPACKET_V2 or TPACKET_V3.
    Version(RingMode),
    /// SO_ATTACH_FILTER with `ret #snaplen`.
    Filter { snaplen: u32 },
    /// PACKET_RX_RING.
    RxRing {
        layout: Layout,
        block_timeout_ms: u32,
    },
    /// PACKET_FANOUT: `group | (PACKET_FANOUT_HASH | FLAG_DEFRAG) << 16`.
    Fanout { group: u16 },
}

impl Opt {
    pub fn name(&self) -> &'static str {
        match self {
            Opt::Version(_) => "setsockopt(PACKET_VERSION)",
            Opt::Filter { .. } => "setsockopt(SO_ATTACH_FILTER)",
            Opt::RxRing { .. } => "setsockopt(PACKET_RX_RING)",
            Opt::Fanout { .. } => "setsockopt(PACKET_FANOUT)",
        }
    }
}

/// The kernel calls the set-up makes: the real ones ([`Sys`]) or a
/// recorder (tests).
pub trait Kernel {
    type Sock;
    type Map;
    fn socket(&mut self, protocol: u16) -> io::Result<Self::Sock>;
    fn setsockopt(&mut self, sock: &Self::Sock, opt: Opt) -> io::Result<()>;
    fn mmap(&mut self, sock: &Self::Sock, bytes: usize) -> io::Result<Self::Map>;
    fn bind(&mut self, sock: &Self::Sock, protocol: u16, ifindex: i32) -> io::Result<()>;
}

/// Step-by-step record of a set-up, for tests and `--verbose` output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    Socket { protocol: u16 },
    SetSockOpt(Opt),
    Mmap { bytes: usize },
    Bind { protocol: u16, ifindex: i32 },
}

/// The set-up sequence (see the module doc), on any [`Kernel`].
pub fn set_up<K: Kernel>(
    k: &mut K,
    cfg: &Config,
    layout: Layout,
    ifindex: i32,
) -> Result<(K::Sock, K::Map), Error> {
    let sock = k
        .socket(0)
        .map_err(Error::sys("socket(AF_PACKET, SOCK_RAW, 0)"))?;
    for opt in [
        Opt::Version(cfg.mode),
        Opt::Filter {
            snaplen: cfg.snaplen,
        },
        Opt::RxRing {
            layout,
            block_timeout_ms: cfg.block_timeout_ms,
        },
    ] {
        k.setsockopt(&sock, opt).map_err(Error::sys(opt.name()))?;
    }
    let map = k.mmap(&sock, layout.bytes()).map_err(Error::sys("mmap"))?;
    k.bind(&sock, ETH_P_ALL, ifindex)
        .map_err(Error::sys("bind(AF_PACKET)"))?;
    if let Some(group) = cfg.fanout {
        let opt = Opt::Fanout { group };
        k.setsockopt(&sock, opt).map_err(Error::sys(opt.name()))?;
    }
    Ok((sock, map))
}

/// The real kernel.
pub struct Sys;

/// `TPACKET_V2` and `TPACKET_V3` (enum tpacket_versions).
const TPACKET_V2: libc::c_int = 1;
const TPACKET_V3: libc::c_int = 2;
/// Classic BPF `BPF_RET | BPF_K`.
const BPF_RET_K: u16 = 0x06;

impl Kernel for Sys {
    type Sock = OwnedFd;
    type Map = Mmap;

    fn socket(&mut self, protocol: u16) -> io::Result<OwnedFd> {
        sys::packet_socket(protocol)
    }

    fn setsockopt(&mut self, sock: &OwnedFd, opt: Opt) -> io::Result<()> {
        let fd = sock.as_raw_fd();
        match opt {
            Opt::Version(mode) => {
                let v = match mode {
                    RingMode::Blocks => TPACKET_V3,
                    RingMode::Immediate => TPACKET_V2,
                };
                sys::setsockopt(fd, libc::SOL_PACKET, libc::PACKET_VERSION, &v)
            }
            Opt::Filter { snaplen } => {
                let mut insn = [libc::sock_filter {
                    code: BPF_RET_K,
                    jt: 0,
                    jf: 0,
                    k: snaplen,
                }];
                let prog = libc::sock_fprog {
                    len: 1,
                    filter: insn.as_mut_ptr(),
                };
                sys::setsockopt(fd, libc::SOL_SOCKET, libc::SO_ATTACH_FILTER, &prog)
            }
            Opt::RxRing {
                layout,
                block_timeout_ms,
            } => match layout.mode {
                RingMode::Blocks => {
                    let req = libc::tpacket_req3 {
                        tp_block_size: layout.block_size,
                        tp_block_nr: layout.block_nr,
                        tp_frame_size: layout.frame_size,
                        tp_frame_nr: layout.frame_nr,
                        tp_retire_blk_tov: block_timeout_ms,
                        tp_sizeof_priv: 0,
                        tp_feature_req_word: 0,
                    };
                    sys::setsockopt(fd, libc::SOL_PACKET, libc::PACKET_RX_RING, &req)
                }
                RingMode::Immediate => {
                    let req = libc::tpacket_req {
                        tp_block_size: layout.block_size,
                        tp_block_nr: layout.block_nr,
                        tp_frame_size: layout.frame_size,
                        tp_frame_nr: layout.frame_nr,
                    };
                    sys::setsockopt(fd, libc::SOL_PACKET, libc::PACKET_RX_RING, &req)
                }
            },
            Opt::Fanout { group } => {
                let kind = libc::PACKET_FANOUT_HASH | libc::PACKET_FANOUT_FLAG_DEFRAG;
                let arg: u32 = u32::from(group) | (kind << 16);
                sys::setsockopt(fd, libc::SOL_PACKET, libc::PACKET_FANOUT, &arg)
            }
        }
    }

    fn mmap(&mut self, sock: &OwnedFd, bytes: usize) -> io::Result<Mmap> {
        Mmap::map(sock.as_raw_fd(), bytes)
    }

    fn bind(&mut self, sock: &OwnedFd, protocol: u16, ifindex: i32) -> io::Result<()> {
        sys::bind_packet(sock.as_raw_fd(), protocol, ifindex)
    }
}

/// What the kernel counted for a socket (PACKET_STATISTICS), summed over
/// reads (each read resets the kernel's counters).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KernelStats {
    /// Packets that passed the socket filter, including those dropped.
    pub received: u64,
    /// Packets dropped because the ring was full.
    pub dropped: u64,
    /// V3: times the queue froze because no block was free.
    pub freezes: u64,
}

impl std::ops::AddAssign for KernelStats {
    fn add_assign(&mut self, o: KernelStats) {
        self.received += o.received;
        self.dropped += o.dropped;
        self.freezes += o.freezes;
    }
}

/// An open capture: the socket, its mapped ring, the interface.
pub struct Capture {
    // Field order: the ring is unmapped before the socket closes.
    ring: Ring,
    fd: OwnedFd,
    iface: Iface,
    link: LinkKind,
    totals: KernelStats,
}

/// Opens a capture on `iface` in the 2014 order (module doc).
pub fn open(cfg: &Config, iface: &Iface) -> Result<Capture, Error> {
    let link = iface.link().ok_or_else(|| Error::LinkType {
        iface: iface.name.clone(),
        hatype: iface.hatype,
    })?;
    let layout = Layout::plan(
        cfg.mode,
        cfg.buffer,
        cfg.snaplen,
        iface.mtu,
        sys::page_size(),
    )
    .map_err(Error::Config)?;
    let (fd, map) = set_up(&mut Sys, cfg, layout, iface.index)?;
    Ok(Capture {
        ring: Ring::new(map, layout),
        fd,
        iface: iface.clone(),
        link,
        totals: KernelStats::default(),
    })
}

impl Capture {
    pub fn iface(&self) -> &Iface {
        &self.iface
    }

    pub fn link(&self) -> LinkKind {
        self.link
    }

    /// The next filled batch, waiting up to `timeout_ms` when the ring is
    /// empty. `Ok(None)`: nothing yet (or a signal came), try again. One
    /// `poll` per empty ring, none per packet.
    pub fn next_batch(&mut self, timeout_ms: i32) -> Result<Option<Batch<'_>>, Error> {
        if !self.ring.ready() {
            sys::poll_readable(self.fd.as_raw_fd(), timeout_ms).map_err(Error::sys("poll"))?;
        }
        Ok(self.ring.take())
    }

    /// Kernel counters since the socket was opened.
    pub fn stats(&mut self) -> Result<KernelStats, Error> {
        let zero = libc::tpacket_stats_v3 {
            tp_packets: 0,
            tp_drops: 0,
            tp_freeze_q_cnt: 0,
        };
        let s = sys::getsockopt(
            self.fd.as_raw_fd(),
            libc::SOL_PACKET,
            libc::PACKET_STATISTICS,
            zero,
        )
        .map_err(Error::sys("getsockopt(PACKET_STATISTICS)"))?;
        self.totals += KernelStats {
            received: u64::from(s.tp_packets),
            dropped: u64::from(s.tp_drops),
            freezes: u64::from(s.tp_freeze_q_cnt),
        };
        Ok(self.totals)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records every call; fails the one named by `fail_at`.
    #[derive(Default)]
    struct Recorder {
        steps: Vec<Step>,
        fail_at: Option<usize>,
    }

    impl Recorder {
        fn step(&mut self, s: Step) -> io::Result<()> {
            self.steps.push(s);
            if self.fail_at == Some(self.steps.len() - 1) {
                Err(io::Error::from_raw_os_error(libc::EPERM))
            } else {
                Ok(())
            }
        }
    }

    impl Kernel for Recorder {
        type Sock = ();
        type Map = ();
        fn socket(&mut self, protocol: u16) -> io::Result<()> {
            self.step(Step::Socket { protocol })
        }
        fn setsockopt(&mut self, _: &(), opt: Opt) -> io::Result<()> {
            self.step(Step::SetSockOpt(opt))
        }
        fn mmap(&mut self, _: &(), bytes: usize) -> io::Result<()> {
            self.step(Step::Mmap { bytes })
        }
        fn bind(&mut self, _: &(), protocol: u16, ifindex: i32) -> io::Result<()> {
            self.step(Step::Bind { protocol, ifindex })
        }
    }

    fn layout(mode: RingMode) -> Layout {
        Layout::plan(mode, 2 << 20, 262_144, 1500, 4096).unwrap()
    }

    #[test]
    fn protocol_zero_then_options_ring_mmap_bind_then_fanout() {
        let cfg = Config {
            fanout: Some(77),
            ..Config::default()
        };
        let l = layout(RingMode::Blocks);
        let mut k = Recorder::default();
        set_up(&mut k, &cfg, l, 5).unwrap();
        assert_eq!(
            k.steps,
            vec![
                Step::Socket { protocol: 0 },
                Step::SetSockOpt(Opt::Version(RingMode::Blocks)),
                Step::SetSockOpt(Opt::Filter { snaplen: 262_144 }),
                Step::SetSockOpt(Opt::RxRing {
                    layout: l,
                    block_timeout_ms: 10
                }),
                Step::Mmap { bytes: l.bytes() },
                Step::Bind {
                    protocol: ETH_P_ALL,
                    ifindex: 5
                },
                Step::SetSockOpt(Opt::Fanout { group: 77 }),
            ]
        );
    }

    #[test]
    fn without_workers_there_is_no_fanout_and_v2_asks_for_v2() {
        let cfg = Config {
            mode: RingMode::Immediate,
            ..Config::default()
        };
        let mut k = Recorder::default();
        set_up(&mut k, &cfg, layout(RingMode::Immediate), 3).unwrap();
        assert_eq!(k.steps.len(), 6);
        assert_eq!(
            k.steps[1],
            Step::SetSockOpt(Opt::Version(RingMode::Immediate))
        );
        assert!(matches!(k.steps.last(), Some(Step::Bind { .. })));
    }

    #[test]
    fn a_failing_step_stops_the_set_up_and_is_named() {
        for (at, name) in [
            (0, "socket(AF_PACKET, SOCK_RAW, 0)"),
            (3, "setsockopt(PACKET_RX_RING)"),
            (4, "mmap"),
            (5, "bind(AF_PACKET)"),
            (6, "setsockopt(PACKET_FANOUT)"),
        ] {
            let mut k = Recorder {
                fail_at: Some(at),
                ..Recorder::default()
            };
            let cfg = Config {
                fanout: Some(1),
                ..Config::default()
            };
            let err = set_up(&mut k, &cfg, layout(RingMode::Blocks), 1).unwrap_err();
            assert_eq!(k.steps.len(), at + 1, "nothing after the failure");
            assert!(err.to_string().starts_with(name), "{err} names {name}");
        }
    }
}
