//! The compact, `Copy` packet record that the engine reads.
//!
//! A frame is decoded once into a [`Packet`]; nothing after decode re-parses
//! bytes. Addresses of both families live in one `u128`: an IPv4 address is
//! stored in its IPv4-mapped IPv6 form (`::ffff:a.b.c.d`), so one masked
//! compare serves every prefix and an IPv4 prefix can never match an IPv6
//! packet by accident.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Direction of a packet relative to the filtering host.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Unknown (the capture file does not say); replay substitutes `--dir`.
    #[default]
    Unknown,
    In,
    Out,
}

/// Why a frame could not be decoded into a usable IP packet.
///
/// A small `Copy` reason, as pf's `PFRES_*`: it indexes a counter array.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Malformed {
    /// The link-layer header is cut short.
    TruncatedLink = 0,
    /// The IPv4/IPv6 fixed header is cut short.
    TruncatedIp,
    /// IPv4 IHL below 5, or IP version field disagrees with the link type.
    BadIpHeader,
    /// The IP total/payload length is smaller than the header or larger than the frame.
    BadIpLength,
    /// An IPv6 extension header is cut short, or the chain is longer than the walk allows.
    BadExtHeader,
    /// The TCP/UDP/ICMP header that ipfw would pull up is not all present.
    TruncatedL4,
    /// TCP data offset below 5.
    BadL4Header,
}

impl Malformed {
    pub const COUNT: usize = 7;
    pub const ALL: [Malformed; Self::COUNT] = [
        Malformed::TruncatedLink,
        Malformed::TruncatedIp,
        Malformed::BadIpHeader,
        Malformed::BadIpLength,
        Malformed::BadExtHeader,
        Malformed::TruncatedL4,
        Malformed::BadL4Header,
    ];

    /// Stable kebab-case name used in summaries, JSON and metrics.
    pub fn name(self) -> &'static str {
        match self {
            Malformed::TruncatedLink => "truncated-link",
            Malformed::TruncatedIp => "truncated-ip",
            Malformed::BadIpHeader => "bad-ip-header",
            Malformed::BadIpLength => "bad-ip-length",
            Malformed::BadExtHeader => "bad-ext-header",
            Malformed::TruncatedL4 => "truncated-l4",
            Malformed::BadL4Header => "bad-l4-header",
        }
    }
}

/// What layer 3 the frame carries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum L3 {
    /// Not IP (ARP, LLDP, STP, …). ipfw never sees these.
    #[default]
    NonIp,
    /// IP, decoded into the record's fields.
    Ip,
    /// Claimed to be IP but could not be decoded.
    Malformed(Malformed),
}

/// Bits of [`Packet::frag`].
pub mod frag {
    /// More-fragments flag set.
    pub const MF: u8 = 1;
    /// Fragment offset is non-zero: a later fragment, carries no L4 header.
    pub const LATER: u8 = 2;
    /// IPv4 don't-fragment flag.
    pub const DF: u8 = 4;
    /// IPv4 reserved ("evil") flag.
    pub const RF: u8 = 8;
}

/// Bits of [`Packet::ip_options`] (ipfw's `ipoptions` names).
pub mod ipopt {
    pub const SSRR: u8 = 1;
    pub const LSRR: u8 = 2;
    pub const RR: u8 = 4;
    pub const TS: u8 = 8;
}

/// Bits of [`Packet::ext6`]: IPv6 extension headers seen on the walk.
pub mod ext6 {
    pub const HOPOPT: u8 = 1;
    pub const ROUTING: u8 = 2;
    pub const FRAGMENT: u8 = 4;
    pub const DSTOPT: u8 = 8;
    pub const AH: u8 = 16;
    pub const ESP: u8 = 32;
    /// A routing header of type 0 (source route) / type 2 (mobile IPv6).
    pub const RTHDR0: u8 = 64;
    pub const RTHDR2: u8 = 128;
}

/// Bits of [`Packet::tcp_opts`]: TCP options present (ipfw's
/// `IP_FW_TCPOPT_*`).
pub mod tcpopt {
    pub const MSS: u8 = 1;
    pub const WINDOW: u8 = 2;
    pub const SACK: u8 = 4;
    pub const TS: u8 = 8;
    pub const CC: u8 = 16;
}

/// TCP flag bits as they appear in the header's flags byte.
pub mod tcp {
    pub const FIN: u8 = 0x01;
    pub const SYN: u8 = 0x02;
    pub const RST: u8 = 0x04;
    pub const PSH: u8 = 0x08;
    pub const ACK: u8 = 0x10;
    pub const URG: u8 = 0x20;
    pub const ECE: u8 = 0x40;
    pub const CWR: u8 = 0x80;
}

/// One decoded frame. Small, `Copy`, no pointers into the frame. The
/// fields marked "(optional)" are filled only when the decode asked for
/// them ([`Fields`](crate::Fields)); otherwise they are zero.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Packet {
    /// Source address; IPv4 in IPv4-mapped form. Zero for non-IP; for a
    /// malformed packet, whatever was decoded before the failure.
    pub src: u128,
    /// Destination address; IPv4 in IPv4-mapped form.
    pub dst: u128,
    /// Layer-3 status.
    pub l3: L3,
    /// 4 or 6 for IP, and for a malformed packet whose version field was
    /// valid; 0 otherwise.
    pub ip_version: u8,
    /// Upper-layer protocol (after the IPv6 extension-header walk).
    pub proto: u8,
    /// Source and destination ports; valid when `has_ports`.
    pub src_port: u16,
    pub dst_port: u16,
    /// True when the packet carries a TCP/UDP/SCTP header with ports
    /// (false for later fragments, which never match a port rule).
    pub has_ports: bool,
    /// TCP flags byte (TCP only, first fragment only).
    pub tcp_flags: u8,
    /// TCP options present, see [`tcpopt`] (TCP only; optional).
    pub tcp_opts: u8,
    /// TCP sequence and acknowledgment numbers, window, and the bytes of
    /// data after the TCP header (IP length minus the IP and TCP headers);
    /// optional.
    pub tcp_seq: u32,
    pub tcp_ack: u32,
    pub tcp_win: u16,
    pub tcp_data_len: u16,
    /// The TCP MSS option's value, 0 when absent (optional).
    pub tcp_mss: u16,
    /// ICMP or ICMPv6 type and code; valid when `has_icmp`.
    pub icmp_type: u8,
    pub icmp_code: u8,
    pub has_icmp: bool,
    /// IP length as the header says: IPv4 total length, IPv6 40 + payload
    /// length. A TSO/GSO super-packet whose header says 0 gets the frame's
    /// length instead, saturating at 65535.
    pub ip_len: u16,
    /// TTL / hop limit.
    pub ttl: u8,
    /// IPv4 TOS / IPv6 traffic class.
    pub tos: u8,
    /// Fragment bits, see [`frag`].
    pub frag: u8,
    /// IPv4 options present, see [`ipopt`].
    pub ip_options: u8,
    /// IPv6 extension headers present, see [`ext6`].
    pub ext6: u8,
    /// IPv4 identification (optional).
    pub ip_id: u16,
    /// IPv6 flow label (20 bits; optional).
    pub flow_label: u32,
    /// Ethernet destination and source addresses and type (after VLAN
    /// tags), when the frame came with an Ethernet header (`has_mac`);
    /// optional.
    pub mac_dst: [u8; 6],
    pub mac_src: [u8; 6],
    pub ether_type: u16,
    pub has_mac: bool,
    /// Outermost 802.1Q VLAN id, if tagged.
    pub vlan: Option<u16>,
    /// Offset of the layer-3 header in the frame.
    pub l3_offset: u16,
    /// Direction as the capture says (pcapng EPB flags, SLL packet type).
    pub direction: Direction,
    /// Interface index in the capture (pcapng IDB index), 0 otherwise.
    pub iface: u16,
    /// Bytes this packet counts for in per-rule byte counters: the
    /// layer-3 length of the original frame, as ipfw counts `m_pkthdr.len`.
    pub l3_len: u32,
}

impl Packet {
    pub fn is_ip(&self) -> bool {
        self.l3 == L3::Ip
    }

    pub fn src_ip(&self) -> IpAddr {
        addr_from_u128(self.src, self.ip_version)
    }

    pub fn dst_ip(&self) -> IpAddr {
        addr_from_u128(self.dst, self.ip_version)
    }
}

/// The IPv4-mapped form of an IPv4 address, as stored in [`Packet`].
#[inline]
pub const fn v4_mapped(addr: u32) -> u128 {
    (0xffff_u128 << 32) | addr as u128
}

/// The `u128` key of any address, IPv4 in mapped form.
pub fn addr_to_u128(addr: IpAddr) -> u128 {
    match addr {
        IpAddr::V4(a) => v4_mapped(u32::from(a)),
        IpAddr::V6(a) => u128::from(a),
    }
}

/// The address a `u128` key stands for, given the IP version.
pub fn addr_from_u128(v: u128, version: u8) -> IpAddr {
    if version == 4 {
        IpAddr::V4(Ipv4Addr::from(v as u32))
    } else {
        IpAddr::V6(Ipv6Addr::from(v))
    }
}
