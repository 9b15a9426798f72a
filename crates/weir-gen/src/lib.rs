//! weir-gen: a seeded, reproducible generator of a realistic Ethernet packet
//! trace, for `weir gen`, `weir demo` and the benchmarks.
//!
//! Frames are Ethernet II (pcap `LINKTYPE_ETHERNET`, [`LINKTYPE_ETHERNET`])
//! with nanosecond timestamps that are whole microseconds, so a microsecond
//! pcap loses nothing. This crate writes no files.
//!
//! ```
//! use weir_gen::{GenConfig, Generator};
//! let mut g = Generator::new(GenConfig { seed: 7, count: 3, ..GenConfig::default() });
//! while let Some(f) = g.next_frame() {
//!     assert!(f.data.len() >= 14);
//! }
//! ```
//!
//! # Reproducibility
//!
//! One `ChaCha8Rng` seeded with [`GenConfig::seed`] drives everything and
//! only integer ranges are sampled, so the same seed and count give the same
//! bytes on every run and platform. The golden test pins the output; a change
//! that moves it is a visible, deliberate decision.
//!
//! # Traffic mix
//!
//! Each frame is first malformed with probability
//! [`GenConfig::malformed_per_mille`]; otherwise it picks a category by the
//! per-mille weights in [`mix`] and takes the next packet of a conversation of
//! that category (new or already running), so the shares hold per frame:
//!
//! | category | share | what |
//! |---|---|---|
//! | TCP | 56% ([`mix::TCP_PER_MILLE`]) | connections: SYN, SYN-ACK, ACK with Linux options (MSS, SACK-permitted, timestamps, window scale); 1-12 data segments (pure ACK, 100-600 bytes with PSH, or full 1448/1428-byte segments) mostly server to client, seq/ack and timestamps advancing; FIN/ACK teardown, sometimes RST ([`mix::TCP_RST_TEARDOWN_PERCENT`]) or a refused SYN answered by RST ([`mix::TCP_REFUSED_PERCENT`]). Server ports 443, 80, 22, 25, 8080 and random high ports ([`mix::TCP_SERVER_PORTS`]); client ports 32768-60999. Up to [`mix::MAX_TCP_FLOWS`] interleaved. |
//! | UDP | 29% | DNS query/response to port 53 (A/AAAA, some NXDOMAIN, some unanswered), NTP on 123, high-port exchanges, large (1000-1472 byte) datagrams ([`mix::UDP_KINDS`]) |
//! | ICMPv4 | 7% | echo request/reply (Linux and Windows payloads, some lost replies); 25% errors: port unreachable 3/3, host unreachable 3/1, time exceeded 11/0, quoting the original IP header + 8 bytes |
//! | ICMPv6 | 4% | echo request/reply 128/129; 25% neighbour solicitations 135 to the solicited-node group |
//! | fragments | 1% | a 1.6-4.3 kB UDP datagram as in-order fragments: first with MF, offset 0 and the UDP header, then offset != 0; 20% over IPv6 with a fragment header |
//! | non-IP | 1.5% | ARP request (broadcast) and reply; 15% LLDP (0x88cc) |
//! | IP options | 0.5% | ICMP echo requests with record route (7), timestamp (68) or LSRR (131) |
//! | other | 1% | ESP (50); GRE (47) carrying an IPv4 ICMP echo |
//!
//! Across TCP, UDP and fragments [`mix::IPV6_PERCENT`] of conversations
//! use IPv6, which with ICMPv6 makes IPv6 about 10% of frames;
//! [`mix::IPV6_EXT_HEADER_PERCENT`] of IPv6 packets carry a hop-by-hop or
//! destination-options header before the transport. [`mix::VLAN_PERCENT`] of
//! conversations are 802.1Q tagged (VLANs [`mix::VLAN_IDS`]), a fifth of
//! those QinQ (0x88a8 outer VLAN 300 + 0x8100 inner).
//!
//! Hosts: 200 clients in 10.1.0.0/16 and 32 in 2001:db8:1::/64 on the capture
//! link, servers in 192.0.2.0/24, 198.51.100.0/24 and 2001:db8:ff00::/40
//! behind the gateway 10.1.0.1 / fe80::1, transit routers in 203.0.113.0/24;
//! all MACs locally administered.
//!
//! Malformed frames ([`Malformed`]): truncated IPv4 header, IHL < 5, total
//! length beyond the frame, TCP data offset < 5, truncated TCP header.
//!
//! Every well-formed packet has correct IPv4 header and TCP/UDP/ICMP/ICMPv6
//! checksums. Frames shorter than 60 bytes are zero-padded as on the wire
//! (except malformed ones); the largest untagged frame is 1514 bytes.
//! Timestamps increase by 1 µs-4 ms per frame. Memory is bounded by the
//! conversation tables, whatever `count` is.
#![forbid(unsafe_code)]

pub mod builder;
mod emit;
mod flows;
pub mod mix;
mod rng;
mod singles;

pub use rng::Rng;
pub use singles::Malformed;

use builder::ETH_MIN_FRAME;
use emit::Ctx;
use flows::{drive, ArpExchange, EchoExchange, FragTrain, TcpFlow, UdpExchange};
use mix::*;

/// The pcap link type of every frame: Ethernet.
pub const LINKTYPE_ETHERNET: u32 = 1;

/// 2026-01-01T00:00:00Z in nanoseconds since the Unix epoch.
pub const DEFAULT_START_NS: u64 = 1_767_225_600 * 1_000_000_000;

/// What to generate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GenConfig {
    /// Same seed and count, same bytes.
    pub seed: u64,
    /// Number of frames.
    pub count: u64,
    /// Timestamp of the first frame, ns since the Unix epoch.
    pub start_ns: u64,
    /// Malformed frames per thousand.
    pub malformed_per_mille: u32,
}

impl Default for GenConfig {
    /// Seed 7, 10 000 frames from 2026-01-01T00:00:00Z, 2‰ malformed.
    fn default() -> Self {
        GenConfig {
            seed: 7,
            count: 10_000,
            start_ns: DEFAULT_START_NS,
            malformed_per_mille: 2,
        }
    }
}

/// One frame; its original length is `data.len()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GeneratedFrame<'a> {
    pub ts_ns: u64,
    pub data: &'a [u8],
}

/// The trace, frame by frame.
pub struct Generator {
    cfg: GenConfig,
    emitted: u64,
    next_ts_ns: u64,
    ctx: Ctx,
    tcp: Vec<TcpFlow>,
    udp: Vec<UdpExchange>,
    echo4: Vec<EchoExchange>,
    echo6: Vec<EchoExchange>,
    frags: Vec<FragTrain>,
    arp: Vec<ArpExchange>,
}

/// Chance of starting a new conversation when others are pending: low for
/// TCP so connections overlap for many packets, higher for short exchanges.
const TCP_NEW_PERCENT: u32 = 10;
const EXCHANGE_NEW_PERCENT: u32 = 50;

impl Generator {
    pub fn new(cfg: GenConfig) -> Self {
        let mut rng = Rng::new(cfg.seed);
        let hosts = Hosts::new(&mut rng);
        Generator {
            next_ts_ns: cfg.start_ns,
            cfg,
            emitted: 0,
            ctx: Ctx {
                rng,
                // Big enough for any frame (1514 + two VLAN tags) and for the
                // scratch sum of a fragmented datagram.
                buf: Vec::with_capacity(8192),
                now_ns: 0,
                hosts,
            },
            tcp: Vec::with_capacity(MAX_TCP_FLOWS),
            udp: Vec::with_capacity(MAX_UDP_EXCHANGES),
            echo4: Vec::with_capacity(MAX_ICMP_EXCHANGES),
            echo6: Vec::with_capacity(MAX_ICMP_EXCHANGES),
            frags: Vec::with_capacity(MAX_FRAGMENT_TRAINS),
            arp: Vec::with_capacity(MAX_ARP_EXCHANGES),
        }
    }

    pub fn config(&self) -> &GenConfig {
        &self.cfg
    }

    /// Frames still to come.
    pub fn remaining(&self) -> u64 {
        self.cfg.count - self.emitted
    }

    /// The next frame, or None after `count` frames. Reuses an internal
    /// buffer: no allocation per frame in steady state.
    pub fn next_frame(&mut self) -> Option<GeneratedFrame<'_>> {
        if self.emitted >= self.cfg.count {
            return None;
        }
        self.emitted += 1;
        let ctx = &mut self.ctx;
        ctx.now_ns = self.next_ts_ns;
        ctx.buf.clear();

        if ctx.rng.per_mille(self.cfg.malformed_per_mille) {
            singles::malformed(ctx);
        } else {
            self.well_formed();
            let buf = &mut self.ctx.buf;
            if buf.len() < ETH_MIN_FRAME {
                buf.resize(ETH_MIN_FRAME, 0);
            }
        }

        let ctx = &mut self.ctx;
        self.next_ts_ns += gap_us(&mut ctx.rng) * 1000;
        Some(GeneratedFrame {
            ts_ns: ctx.now_ns,
            data: &ctx.buf,
        })
    }

    fn well_formed(&mut self) {
        let ctx = &mut self.ctx;
        match ctx.rng.weighted(&CATEGORIES) {
            Category::Tcp => drive(
                &mut self.tcp,
                MAX_TCP_FLOWS,
                TCP_NEW_PERCENT,
                ctx,
                TcpFlow::new,
            ),
            Category::Udp => drive(
                &mut self.udp,
                MAX_UDP_EXCHANGES,
                EXCHANGE_NEW_PERCENT,
                ctx,
                UdpExchange::new,
            ),
            Category::Icmp4 => {
                if ctx.rng.percent(ICMP4_ERROR_PERCENT) {
                    singles::icmp4_error(ctx);
                } else {
                    drive(
                        &mut self.echo4,
                        MAX_ICMP_EXCHANGES,
                        EXCHANGE_NEW_PERCENT,
                        ctx,
                        |c| EchoExchange::new(c, false),
                    );
                }
            }
            Category::Icmp6 => {
                if ctx.rng.percent(ICMP6_NS_PERCENT) {
                    singles::icmp6_ns(ctx);
                } else {
                    drive(
                        &mut self.echo6,
                        MAX_ICMP_EXCHANGES,
                        EXCHANGE_NEW_PERCENT,
                        ctx,
                        |c| EchoExchange::new(c, true),
                    );
                }
            }
            Category::Fragment => drive(
                &mut self.frags,
                MAX_FRAGMENT_TRAINS,
                EXCHANGE_NEW_PERCENT,
                ctx,
                FragTrain::new,
            ),
            Category::NonIp => {
                if ctx.rng.percent(LLDP_PERCENT_OF_NON_IP) {
                    singles::lldp(ctx);
                } else {
                    drive(
                        &mut self.arp,
                        MAX_ARP_EXCHANGES,
                        EXCHANGE_NEW_PERCENT,
                        ctx,
                        ArpExchange::new,
                    );
                }
            }
            Category::IpOptions => singles::ip_options(ctx),
            Category::OtherProto => singles::other_proto(ctx),
        }
    }
}

/// Inter-frame gap: mostly back-to-back bursts, sometimes idle milliseconds.
fn gap_us(rng: &mut Rng) -> u64 {
    u64::from(match rng.below(100) {
        0..=49 => rng.range(1, 100),
        50..=84 => rng.range(100, 1000),
        _ => rng.range(1000, 4000),
    })
}

/// All frames as owned `(timestamp ns, bytes)`; for tests and benchmarks.
pub fn generate(cfg: GenConfig) -> Vec<(u64, Vec<u8>)> {
    let mut g = Generator::new(cfg);
    let mut out = Vec::with_capacity(g.remaining().min(1 << 20) as usize);
    while let Some(f) = g.next_frame() {
        out.push((f.ts_ns, f.data.to_vec()));
    }
    out
}
