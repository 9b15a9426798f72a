//! The traffic mix: shares as named constants, the host pool, port weights.
//!
//! Shares are per frame, in per mille of the frames that are not malformed:
//! every frame first picks a [`Category`], then the category's conversation
//! table supplies one packet. That keeps the measured mix close to these
//! numbers however long the conversations are.

use crate::builder::Mac;
use crate::rng::Rng;

/// TCP over IPv4 and IPv6 (handshake, data, teardown).
pub const TCP_PER_MILLE: u32 = 560;
/// UDP over IPv4 and IPv6 (DNS, NTP, high ports, large datagrams), unfragmented.
pub const UDP_PER_MILLE: u32 = 290;
/// ICMPv4: echo request/reply, destination unreachable, time exceeded.
pub const ICMP4_PER_MILLE: u32 = 70;
/// ICMPv6: echo request/reply and neighbour solicitation.
pub const ICMP6_PER_MILLE: u32 = 40;
/// IP fragments (IPv4 and IPv6 fragment header), UDP datagrams split in 2-3.
pub const FRAGMENT_PER_MILLE: u32 = 10;
/// Non-IP: ARP request/reply, LLDP.
pub const NON_IP_PER_MILLE: u32 = 15;
/// IPv4 ICMP echo requests carrying IP options (RR, TS, LSRR).
pub const IP_OPTIONS_PER_MILLE: u32 = 5;
/// Other IP protocols: ESP and GRE (carrying an IPv4 ICMP echo).
pub const OTHER_PROTO_PER_MILLE: u32 = 10;

/// Share of TCP and UDP conversations (and of fragment trains) that use
/// IPv6. With ICMPv6 this puts IPv6 near 10% of all frames.
pub const IPV6_PERCENT: u32 = 7;
/// Share of IPv6 packets with a hop-by-hop or destination-options header.
pub const IPV6_EXT_HEADER_PERCENT: u32 = 10;
/// Share of conversations (and single frames) carrying a VLAN tag.
pub const VLAN_PERCENT: u32 = 5;
/// Share of the tagged ones that are QinQ (802.1ad outer + 802.1Q inner).
pub const QINQ_PERCENT_OF_VLAN: u32 = 20;
/// Customer VLAN ids in use; the QinQ service tag is [`QINQ_OUTER_VLAN`].
pub const VLAN_IDS: [u16; 4] = [10, 20, 100, 2001];
pub const QINQ_OUTER_VLAN: u16 = 300;

/// Within TCP: how conversations end after the data phase.
pub const TCP_RST_TEARDOWN_PERCENT: u32 = 8;
/// Within TCP: connection attempts answered by RST|ACK (closed port).
pub const TCP_REFUSED_PERCENT: u32 = 4;

/// Server ports of TCP flows, by weight; `0` means a random port 1024-65535.
pub const TCP_SERVER_PORTS: [(u16, u32); 6] =
    [(443, 45), (80, 17), (22, 8), (25, 5), (8080, 6), (0, 19)];
/// Client ephemeral ports (Linux default `ip_local_port_range`).
pub const EPHEMERAL_PORTS: (u16, u16) = (32768, 60999);

/// Within UDP: what kind of exchange a new conversation is.
pub const UDP_KINDS: [(UdpKind, u32); 4] = [
    (UdpKind::Dns, 45),
    (UdpKind::Ntp, 10),
    (UdpKind::HighPort, 35),
    (UdpKind::Large, 10),
];

/// Within ICMPv4: share of error messages (the rest is echo).
pub const ICMP4_ERROR_PERCENT: u32 = 25;
/// Within ICMPv6: share of neighbour solicitations (the rest is echo).
pub const ICMP6_NS_PERCENT: u32 = 25;
/// Within non-IP: share of LLDP (the rest is ARP).
pub const LLDP_PERCENT_OF_NON_IP: u32 = 15;

/// Bounds of the conversation tables: memory does not grow with `count`.
pub const MAX_TCP_FLOWS: usize = 24;
pub const MAX_UDP_EXCHANGES: usize = 16;
pub const MAX_ICMP_EXCHANGES: usize = 8;
pub const MAX_FRAGMENT_TRAINS: usize = 4;
pub const MAX_ARP_EXCHANGES: usize = 4;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UdpKind {
    Dns,
    Ntp,
    HighPort,
    Large,
}

/// What one frame is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Category {
    Tcp,
    Udp,
    Icmp4,
    Icmp6,
    Fragment,
    NonIp,
    IpOptions,
    OtherProto,
}

pub const CATEGORIES: [(Category, u32); 8] = [
    (Category::Tcp, TCP_PER_MILLE),
    (Category::Udp, UDP_PER_MILLE),
    (Category::Icmp4, ICMP4_PER_MILLE),
    (Category::Icmp6, ICMP6_PER_MILLE),
    (Category::Fragment, FRAGMENT_PER_MILLE),
    (Category::NonIp, NON_IP_PER_MILLE),
    (Category::IpOptions, IP_OPTIONS_PER_MILLE),
    (Category::OtherProto, OTHER_PROTO_PER_MILLE),
];

/// An IP address of either family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ip {
    V4([u8; 4]),
    V6([u8; 16]),
}

impl Ip {
    pub fn is_v6(self) -> bool {
        matches!(self, Ip::V6(_))
    }
}

/// A host on the capture link (its own MAC) or behind the gateway.
#[derive(Clone, Copy, Debug)]
pub struct Host {
    pub mac: Mac,
    pub ip: Ip,
}

/// Locally administered MACs (bit 1 of the first octet set, unicast).
pub const GATEWAY_MAC: Mac = [0x02, 0x00, 0x00, 0x00, 0x00, 0x01];
pub const GATEWAY_V4: [u8; 4] = [10, 1, 0, 1];
/// The gateway's IPv6 link-local address fe80::1.
pub const GATEWAY_V6_LL: [u8; 16] = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
/// Routers further out that send time-exceeded (TEST-NET-3, 203.0.113.0/24).
pub const TRANSIT_ROUTERS: [[u8; 4]; 3] = [[203, 0, 113, 1], [203, 0, 113, 9], [198, 51, 100, 1]];
pub const DNS_RESOLVERS: [[u8; 4]; 2] = [[192, 0, 2, 53], [198, 51, 100, 53]];
pub const DNS_RESOLVER_V6: [u8; 16] = [
    0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x53,
];
pub const NTP_SERVERS: [[u8; 4]; 2] = [[192, 0, 2, 123], [198, 51, 100, 123]];

pub const N_CLIENTS_V4: usize = 200;
pub const N_CLIENTS_V6: usize = 32;
pub const N_SERVERS_V4: usize = 16;
pub const N_SERVERS_V6: usize = 8;

/// The host pool, drawn once from the seed.
pub struct Hosts {
    /// 10.1.0.0/16 clients on the capture link.
    pub clients_v4: Vec<Host>,
    /// 2001:db8:1::/64 clients on the capture link.
    pub clients_v6: Vec<Host>,
    /// Servers in 192.0.2.0/24 and 198.51.100.0/24, reached via the gateway.
    pub servers_v4: Vec<[u8; 4]>,
    /// Servers in 2001:db8:ff00::/40, reached via the gateway.
    pub servers_v6: Vec<[u8; 16]>,
}

fn client_mac(tag: u8, a: u8, b: u8) -> Mac {
    [0x02, 0x00, 0x5e, tag, a, b]
}

impl Hosts {
    pub fn new(rng: &mut Rng) -> Hosts {
        let mut clients_v4 = Vec::with_capacity(N_CLIENTS_V4);
        while clients_v4.len() < N_CLIENTS_V4 {
            let (c, d) = (rng.range(0, 15) as u8, rng.range(2, 254) as u8);
            let ip = Ip::V4([10, 1, c, d]);
            // Distinct addresses keep ARP and MACs consistent.
            if clients_v4.iter().all(|h: &Host| h.ip != ip) {
                clients_v4.push(Host {
                    mac: client_mac(4, c, d),
                    ip,
                });
            }
        }
        let clients_v6 = (0..N_CLIENTS_V6)
            .map(|i| {
                let iid = rng.next_u32().to_be_bytes();
                let mut a = [0u8; 16];
                a[..6].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0x00, 0x01]);
                a[12..].copy_from_slice(&iid);
                a[15] = a[15].wrapping_add(i as u8) | 1;
                Host {
                    mac: client_mac(6, a[14], a[15]),
                    ip: Ip::V6(a),
                }
            })
            .collect();
        let servers_v4 = (0..N_SERVERS_V4)
            .map(|i| {
                let last = 10 + 10 * (i / 2) as u8 + rng.range(0, 9) as u8;
                if i % 2 == 0 {
                    [192, 0, 2, last]
                } else {
                    [198, 51, 100, last]
                }
            })
            .collect();
        let servers_v6 = (0..N_SERVERS_V6)
            .map(|i| {
                let mut a = [0u8; 16];
                a[..6].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0xff, i as u8]);
                a[14..].copy_from_slice(&(rng.range(1, 0xfffe) as u16).to_be_bytes());
                a
            })
            .collect();
        Hosts {
            clients_v4,
            clients_v6,
            servers_v4,
            servers_v6,
        }
    }

    pub fn client(&self, rng: &mut Rng, v6: bool) -> Host {
        let pool = if v6 {
            &self.clients_v6
        } else {
            &self.clients_v4
        };
        pool[rng.below(pool.len() as u32) as usize]
    }

    /// A server, skewed so that a few servers get most conversations.
    pub fn server(&self, rng: &mut Rng, v6: bool) -> Ip {
        let n = if v6 {
            self.servers_v6.len()
        } else {
            self.servers_v4.len()
        } as u32;
        let i = rng.below(n).min(rng.below(n)) as usize;
        if v6 {
            Ip::V6(self.servers_v6[i])
        } else {
            Ip::V4(self.servers_v4[i])
        }
    }
}
