//! The echo server: read a probe, note when the kernel received it and when
//! this process had it, optionally run it through a filter, echo it.
//!
//! The per-packet loop allocates nothing and formats nothing: one receive
//! buffer, one control-message buffer, sample vectors reserved up front
//! (samples past their capacity are counted, not stored).

use crate::sys::{self, CmsgBuf};
use crate::wire::{self, Bad, Kind};
use crate::Error;
use std::io;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::time::{Duration, Instant};
use weir_stop::Stop;
use weir_wire::{addr_to_u128, Direction, Packet, L3};

/// How long a blocked receive waits before the loop looks at its stop
/// conditions (signal, duration) again.
const POLL: Duration = Duration::from_millis(100);

/// Largest UDP payload; the receive buffer is one byte more, so a cut
/// datagram is noticed even where MSG_TRUNC is not reported.
const MAX_DATAGRAM: usize = 65_535;

#[derive(Clone, Debug)]
pub struct ServerConfig {
    pub bind: SocketAddr,
    /// Stop after this many datagrams (good or bad).
    pub count: Option<u64>,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Per-packet samples kept for the closing summary.
    pub max_samples: usize,
    /// Stop on SIGINT/SIGTERM (installs handlers).
    pub handle_signals: bool,
}

impl ServerConfig {
    pub fn new(bind: SocketAddr) -> ServerConfig {
        ServerConfig {
            bind,
            count: None,
            duration: None,
            max_samples: 1 << 20,
            handle_signals: true,
        }
    }
}

/// What a server run saw. Times in nanoseconds.
#[derive(Clone, Debug, Default)]
pub struct ServerStats {
    /// Datagrams read, good or bad.
    pub datagrams: u64,
    /// Probes echoed.
    pub echoed: u64,
    /// Probes the filter dropped (not echoed).
    pub filtered_out: u64,
    /// Datagrams that were not probes, by [`Bad`] reason.
    pub bad: [u64; Bad::COUNT],
    /// Probes that arrived without a kernel timestamp.
    pub no_kernel_stamp: u64,
    /// Failed receives (other than timeouts and signals) and sends.
    pub recv_errors: u64,
    pub send_errors: u64,
    /// Kernel receive → process has the data, per probe.
    pub stack_ns: Vec<u64>,
    /// Building the `Packet` and the filter's decision, per probe.
    pub engine_ns: Vec<u64>,
    /// Samples not kept because the vectors were full.
    pub samples_dropped: u64,
    /// Cost of one `clock_gettime` (minimum of many back-to-back reads),
    /// included once in every engine time.
    pub clock_ns: u64,
    /// Wall time of the run.
    pub elapsed: Duration,
    /// What ended the run: "count", "duration" or "signal".
    pub stopped_by: &'static str,
}

impl ServerStats {
    pub fn bad_total(&self) -> u64 {
        self.bad.iter().sum()
    }
}

pub struct Server {
    sock: UdpSocket,
    local: SocketAddr,
    cfg: ServerConfig,
    /// SIGINT/SIGTERM; the receive timeout (`POLL`) makes a blocked
    /// `recvmsg` return so the loop sees it.
    stop: Stop,
}

impl Server {
    /// Binds the socket and asks for timestamps and packet info.
    pub fn bind(cfg: ServerConfig) -> Result<Server, Error> {
        let sock = UdpSocket::bind(cfg.bind).map_err(|e| Error::Io("bind", e))?;
        let local = sock.local_addr().map_err(|e| Error::Io("getsockname", e))?;
        sys::enable_timestamping(&sock, false).map_err(|e| Error::Io("SO_TIMESTAMPING", e))?;
        sys::enable_packet_info(&sock, local.is_ipv6()).map_err(|e| Error::Io("IP_PKTINFO", e))?;
        sock.set_read_timeout(Some(POLL))
            .map_err(|e| Error::Io("SO_RCVTIMEO", e))?;
        sys::warm_up_timestamping();
        let stop = match cfg.handle_signals {
            true => Stop::on_signals(None).map_err(|e| Error::Io("sigaction", e))?,
            false => Stop::new(None),
        };
        Ok(Server {
            sock,
            local,
            cfg,
            stop,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Echoes until a stop condition.
    pub fn run(&mut self) -> ServerStats {
        self.run_loop(None::<fn(&Packet) -> bool>)
    }

    /// Echoes until a stop condition, running each probe through `filter`
    /// first (true: echo, false: drop) and timing it.
    pub fn run_filtered<F: FnMut(&Packet) -> bool>(&mut self, filter: F) -> ServerStats {
        self.run_loop(Some(filter))
    }

    fn run_loop<F: FnMut(&Packet) -> bool>(&mut self, mut filter: Option<F>) -> ServerStats {
        let keep = self.cfg.max_samples;
        let mut st = ServerStats {
            stack_ns: Vec::with_capacity(keep),
            engine_ns: Vec::with_capacity(if filter.is_some() { keep } else { 0 }),
            clock_ns: clock_overhead(),
            ..ServerStats::default()
        };
        let mut buf = vec![0u8; MAX_DATAGRAM + 1];
        let mut cmsg = CmsgBuf::default();
        let start = Instant::now();
        let deadline = self.cfg.duration.map(|d| start + d);
        st.stopped_by = loop {
            if self.stop.requested() {
                break self.stop.reason().name();
            }
            if self.cfg.count.is_some_and(|n| st.datagrams >= n) {
                break "count";
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                break "duration";
            }
            let meta = match sys::recv(&self.sock, &mut buf, &mut cmsg) {
                Ok(m) => m,
                Err(e) => {
                    if !matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock
                            | io::ErrorKind::TimedOut
                            | io::ErrorKind::Interrupted
                    ) {
                        st.recv_errors += 1;
                    }
                    continue;
                }
            };
            // The process has the data: this is the second NetDyn stamp.
            let user_rx = sys::now_ns();
            st.datagrams += 1;
            let Some(peer) = meta.peer else {
                st.recv_errors += 1;
                continue;
            };
            if meta.truncated || meta.len > MAX_DATAGRAM {
                st.bad[Bad::Truncated as usize] += 1;
                continue;
            }
            let data = &mut buf[..meta.len];
            if let Err(why) = wire::parse(data, Kind::Request) {
                st.bad[why as usize] += 1;
                continue;
            }
            let engine = match filter.as_mut() {
                Some(f) => {
                    let t0 = sys::now_ns();
                    let p = packet_for(peer, self.local, &meta);
                    let pass = f(&p);
                    let ns = sys::now_ns().saturating_sub(t0);
                    if st.engine_ns.len() < st.engine_ns.capacity() {
                        st.engine_ns.push(ns);
                    }
                    if !pass {
                        st.filtered_out += 1;
                        continue;
                    }
                    Some(ns.min(u64::from(u32::MAX)) as u32)
                }
                None => None,
            };
            match meta.kernel_rx_ns {
                Some(k) => {
                    if st.stack_ns.len() < st.stack_ns.capacity() {
                        st.stack_ns.push(user_rx.saturating_sub(k));
                    } else {
                        st.samples_dropped += 1;
                    }
                }
                None => st.no_kernel_stamp += 1,
            }
            wire::stamp_echo(data, meta.kernel_rx_ns, user_rx, engine);
            match self.sock.send_to(data, peer) {
                Ok(_) => st.echoed += 1,
                Err(_) => st.send_errors += 1,
            }
        };
        st.elapsed = start.elapsed();
        st
    }
}

/// The minimum cost of one clock read, to put engine times in context.
fn clock_overhead() -> u64 {
    (0..1000)
        .map(|_| {
            let a = sys::now_ns();
            sys::now_ns().saturating_sub(a)
        })
        .min()
        .unwrap_or(0)
}

/// The record the filter sees for a received UDP datagram: addresses and
/// ports from `recvmsg` (destination from `IP_PKTINFO`, else the bound
/// address), protocol 17, lengths from the payload, TTL from `IP_RECVTTL`.
/// The kernel does not hand up TOS, IP options or the DF bit here; they are
/// zero.
pub fn packet_for(peer: SocketAddr, local: SocketAddr, meta: &sys::RecvMeta) -> Packet {
    let src_ip = unmap(peer.ip());
    let dst_ip = unmap(meta.dst.unwrap_or(local.ip()));
    let v4 = src_ip.is_ipv4();
    let header = if v4 { 20 } else { 40 };
    let ip_len = (header + 8 + meta.len).min(usize::from(u16::MAX)) as u16;
    Packet {
        src: addr_to_u128(src_ip),
        dst: addr_to_u128(dst_ip),
        l3: L3::Ip,
        ip_version: if v4 { 4 } else { 6 },
        proto: weir_wire::proto::UDP,
        src_port: peer.port(),
        dst_port: local.port(),
        has_ports: true,
        ip_len,
        ttl: meta.ttl.unwrap_or(64),
        direction: Direction::In,
        l3_len: u32::from(ip_len),
        ..Packet::default()
    }
}

/// An IPv4-mapped IPv6 address (a v4 peer on a dual-stack socket) as IPv4.
fn unmap(a: IpAddr) -> IpAddr {
    match a {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(a, IpAddr::V4),
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    #[test]
    fn packet_record_for_a_v4_datagram() {
        let meta = sys::RecvMeta {
            len: 32,
            truncated: false,
            peer: None,
            kernel_rx_ns: None,
            dst: Some(IpAddr::V4(Ipv4Addr::new(10, 77, 0, 1))),
            ttl: Some(63),
        };
        let p = packet_for(
            "10.77.0.2:4000".parse().unwrap(),
            "0.0.0.0:7777".parse().unwrap(),
            &meta,
        );
        assert!(p.is_ip());
        assert_eq!(p.src_ip(), "10.77.0.2".parse::<IpAddr>().unwrap());
        assert_eq!(p.dst_ip(), "10.77.0.1".parse::<IpAddr>().unwrap());
        assert_eq!(
            (p.proto, p.src_port, p.dst_port, p.ip_len, p.ttl),
            (17, 4000, 7777, 60, 63)
        );
        let mapped = packet_for(
            "[::ffff:10.77.0.2]:4000".parse().unwrap(),
            "[::]:7777".parse().unwrap(),
            &sys::RecvMeta { dst: None, ..meta },
        );
        assert_eq!(mapped.ip_version, 4);
        assert_eq!(mapped.src, p.src);
    }
}
