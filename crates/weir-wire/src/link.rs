//! Link layers: where layer 3 starts, and what the link says it is.
//!
//! Each parser returns the layer-3 offset and a [`Net`]; only a link header
//! that is cut short is an error (`TruncatedLink`). An unknown protocol or
//! address family is not an error: the frame is simply not IP.

use crate::decode::{array, be16, LinkType};
use crate::fields::Fields;
use crate::packet::{Direction, Malformed, Packet};

/// What the link layer says layer 3 is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Net {
    V4,
    V6,
    /// Raw IP: the version nibble decides.
    Raw,
    NonIp,
}

type LinkResult = Result<(usize, Net), Malformed>;

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86dd;
/// 802.1Q customer tag.
const ETHERTYPE_VLAN: u16 = 0x8100;
/// 802.1ad service tag (the outer tag of QinQ).
const ETHERTYPE_QINQ: u16 = 0x88a8;
/// Pre-standard QinQ outer tag still seen in the wild.
const ETHERTYPE_QINQ_OLD: u16 = 0x9100;
/// Tags walked before giving up: real networks stack two, rarely three.
const MAX_VLAN_TAGS: usize = 4;
/// A tag is TCI (priority, DEI, 12-bit VLAN id) then the next ethertype.
const VLAN_TAG_LEN: usize = 4;
const VLAN_ID_MASK: u16 = 0x0fff;

mod ether {
    pub const ETHERTYPE: usize = 12;
    pub const HEADER_LEN: usize = 14;
}

mod sll {
    pub const PKTTYPE: usize = 0;
    pub const PROTOCOL: usize = 14;
    pub const HEADER_LEN: usize = 16;
}

mod sll2 {
    pub const PROTOCOL: usize = 0;
    pub const PKTTYPE: usize = 10;
    pub const HEADER_LEN: usize = 20;
}

mod ppp {
    /// RFC 1662 HDLC-like framing: all-stations address, unnumbered info.
    pub const ADDRESS: u8 = 0xff;
    pub const CONTROL: u8 = 0x03;
    /// Cisco HDLC (RFC 1547 §4.3.1): unicast/multicast address, control 0,
    /// then an ethertype.
    pub const CISCO_UNICAST: u8 = 0x0f;
    pub const CISCO_MULTICAST: u8 = 0x8f;
    pub const CISCO_HEADER_LEN: usize = 4;
    pub const PROTO_IPV4: u16 = 0x0021;
    pub const PROTO_IPV6: u16 = 0x0057;
}

/// BSD address families as each OS numbers them; IPv6 differs by OS.
const AF_INET: u32 = 2;
const AF_INET6_NETBSD: u32 = 24;
const AF_INET6_FREEBSD: u32 = 28;
const AF_INET6_DARWIN: u32 = 30;
const NULL_HEADER_LEN: usize = 4;

#[inline]
pub(crate) fn parse(link: LinkType, frame: &[u8], p: &mut Packet, fields: Fields) -> LinkResult {
    match link {
        LinkType::ETHERNET => ethernet(frame, p, fields),
        LinkType::NULL => null(frame, false),
        LinkType::LOOP => null(frame, true),
        LinkType::RAW | LinkType::RAW_DLT12 | LinkType::RAW_DLT14 => Ok((0, Net::Raw)),
        LinkType::IPV4 => Ok((0, Net::V4)),
        LinkType::IPV6 => Ok((0, Net::V6)),
        LinkType::PPP | LinkType::PPP_HDLC => ppp(frame),
        LinkType::C_HDLC => cisco_hdlc(frame),
        LinkType::LINUX_SLL => sll(frame, p),
        LinkType::LINUX_SLL2 => sll2(frame, p),
        _ => Ok((0, Net::NonIp)),
    }
}

fn ethernet(frame: &[u8], p: &mut Packet, fields: Fields) -> LinkResult {
    let ethertype = be16(frame, ether::ETHERTYPE).ok_or(Malformed::TruncatedLink)?;
    let found = after_ethertype(frame, ether::HEADER_LEN, ethertype, p);
    if fields.contains(Fields::MAC) {
        mac_header(frame, ethertype, &found, p);
    }
    found
}

/// The Ethernet addresses and type, for the rules that read them. Out of
/// line: most rulesets do not.
#[inline(never)]
fn mac_header(frame: &[u8], ethertype: u16, found: &LinkResult, p: &mut Packet) {
    // `ethernet` read the type after them, so both addresses are there.
    if let Some(macs) = array::<{ ether::ETHERTYPE }>(frame, 0) {
        p.mac_dst.copy_from_slice(&macs[..6]);
        p.mac_src.copy_from_slice(&macs[6..]);
        p.has_mac = true;
    }
    p.ether_type = found.map_or(ethertype, |(at, _)| {
        // The type after the VLAN tags: what ipfw on the VLAN interface sees.
        be16(frame, at.saturating_sub(2)).unwrap_or(ethertype)
    });
}

/// Follows VLAN tags from `at` (just past `ethertype`), recording the
/// outermost VLAN id. A stack deeper than [`MAX_VLAN_TAGS`] is left as
/// non-IP rather than walked without bound.
fn after_ethertype(frame: &[u8], mut at: usize, mut ethertype: u16, p: &mut Packet) -> LinkResult {
    for _ in 0..MAX_VLAN_TAGS {
        if !matches!(
            ethertype,
            ETHERTYPE_VLAN | ETHERTYPE_QINQ | ETHERTYPE_QINQ_OLD
        ) {
            break;
        }
        let tag: &[u8; VLAN_TAG_LEN] = array(frame, at).ok_or(Malformed::TruncatedLink)?;
        // The first tag after the MAC addresses is the outermost one.
        if p.vlan.is_none() {
            p.vlan = Some(u16::from_be_bytes([tag[0], tag[1]]) & VLAN_ID_MASK);
        }
        ethertype = u16::from_be_bytes([tag[2], tag[3]]);
        at = at.saturating_add(VLAN_TAG_LEN);
    }
    Ok((at, ethertype_net(ethertype)))
}

fn ethertype_net(ethertype: u16) -> Net {
    match ethertype {
        ETHERTYPE_IPV4 => Net::V4,
        ETHERTYPE_IPV6 => Net::V6,
        _ => Net::NonIp,
    }
}

/// NULL carries the family in the capturing host's byte order, which the
/// file does not record, so both orders are tried; LOOP is network order.
fn null(frame: &[u8], network_order_only: bool) -> LinkResult {
    let af: &[u8; NULL_HEADER_LEN] = array(frame, 0).ok_or(Malformed::TruncatedLink)?;
    let family = |af: u32| match af {
        AF_INET => Some(Net::V4),
        AF_INET6_NETBSD | AF_INET6_FREEBSD | AF_INET6_DARWIN => Some(Net::V6),
        _ => None,
    };
    let mut net = family(u32::from_be_bytes(*af));
    if net.is_none() && !network_order_only {
        net = family(u32::from_le_bytes(*af));
    }
    Ok((NULL_HEADER_LEN, net.unwrap_or(Net::NonIp)))
}

/// PPP, with or without the `ff 03` prefix on either link type, and Cisco
/// HDLC framing (which PPP_HDLC captures may hold).
fn ppp(frame: &[u8]) -> LinkResult {
    let at = match (frame.first().copied(), frame.get(1).copied()) {
        (Some(ppp::ADDRESS), Some(ppp::CONTROL)) => 2,
        (Some(ppp::CISCO_UNICAST | ppp::CISCO_MULTICAST), Some(0)) => return cisco_hdlc(frame),
        _ => 0,
    };
    let first = *frame.get(at).ok_or(Malformed::TruncatedLink)?;
    // Protocol-field compression (RFC 1661 §6.5): a valid two-byte protocol
    // has an even first byte, so an odd one is a one-byte protocol.
    let (proto, len) = if first & 1 == 1 {
        (u16::from(first), 1)
    } else {
        (be16(frame, at).ok_or(Malformed::TruncatedLink)?, 2)
    };
    let net = match proto {
        ppp::PROTO_IPV4 => Net::V4,
        ppp::PROTO_IPV6 => Net::V6,
        _ => Net::NonIp,
    };
    Ok((at.saturating_add(len), net))
}

/// Cisco HDLC (RFC 1547 §4.3.1): address, control, then an ethertype.
/// As in tcpdump's `chdlc_print` and libpcap's filters for this link type,
/// the address byte is not checked: the ethertype alone says what follows.
fn cisco_hdlc(frame: &[u8]) -> LinkResult {
    let ethertype = be16(frame, 2).ok_or(Malformed::TruncatedLink)?;
    Ok((ppp::CISCO_HEADER_LEN, ethertype_net(ethertype)))
}

fn sll(frame: &[u8], p: &mut Packet) -> LinkResult {
    let header: &[u8; sll::HEADER_LEN] = array(frame, 0).ok_or(Malformed::TruncatedLink)?;
    p.direction = direction(u16::from_be_bytes([
        header[sll::PKTTYPE],
        header[sll::PKTTYPE + 1],
    ]));
    let protocol = u16::from_be_bytes([header[sll::PROTOCOL], header[sll::PROTOCOL + 1]]);
    // The protocol is an ethertype; a VLAN tag left in place is walked.
    after_ethertype(frame, sll::HEADER_LEN, protocol, p)
}

fn sll2(frame: &[u8], p: &mut Packet) -> LinkResult {
    let header: &[u8; sll2::HEADER_LEN] = array(frame, 0).ok_or(Malformed::TruncatedLink)?;
    p.direction = direction(u16::from(header[sll2::PKTTYPE]));
    let protocol = u16::from_be_bytes([header[sll2::PROTOCOL], header[sll2::PROTOCOL + 1]]);
    after_ethertype(frame, sll2::HEADER_LEN, protocol, p)
}

/// Linux `PACKET_*` types. Everything the host received, including frames
/// for other hosts seen in promiscuous mode, is inbound; only
/// `PACKET_OUTGOING` is outbound; others (loopback, kernel) say nothing.
fn direction(pkttype: u16) -> Direction {
    match pkttype {
        // HOST, BROADCAST, MULTICAST, OTHERHOST
        0..=3 => Direction::In,
        // OUTGOING
        4 => Direction::Out,
        _ => Direction::Unknown,
    }
}
