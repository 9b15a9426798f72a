//! IPv4 and IPv6: validate the header, fill the record, find the L4 segment.
//!
//! Both parsers fill fields as soon as the bytes holding them are known to
//! be present, so a packet that fails a later check still shows its
//! addresses. They return the L4 segment — clipped to both the captured
//! bytes and the IP length — or `None` when there is no L4 header to read
//! (a later fragment, ESP).
//!
//! A length field of zero on a TCP/IP super-packet (TSO/GSO, BIG TCP) is
//! read as the frame's own length, as Wireshark and tcpdump read it; see
//! [`tso_v4_len`] and [`tso_v6_payload`].

use crate::decode::{array, be16, be32};
use crate::fields::Fields;
use crate::packet::{ext6, frag, ipopt, v4_mapped, Malformed, Packet};
use crate::proto;

type IpResult<'a> = Result<Option<&'a [u8]>, Malformed>;

mod v4 {
    pub const TOS: usize = 1;
    pub const LENGTH: usize = 2;
    pub const ID: usize = 4;
    pub const FLAGS_FRAG: usize = 6;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const SRC: usize = 12;
    pub const DST: usize = 16;
    pub const MIN_HEADER_LEN: usize = 20;

    pub const RF: u16 = 0x8000;
    pub const DF: u16 = 0x4000;
    pub const MF: u16 = 0x2000;
    pub const OFFSET_MASK: u16 = 0x1fff;

    pub const OPT_EOL: u8 = 0;
    pub const OPT_NOP: u8 = 1;
    pub const OPT_RR: u8 = 7;
    pub const OPT_TS: u8 = 68;
    pub const OPT_LSRR: u8 = 131;
    pub const OPT_SSRR: u8 = 137;
}

mod v6 {
    pub const PAYLOAD_LEN: usize = 4;
    pub const NEXT_HEADER: usize = 6;
    pub const HOP_LIMIT: usize = 7;
    pub const SRC: usize = 8;
    pub const DST: usize = 24;
    pub const HEADER_LEN: usize = 40;

    /// Extension headers walked before the chain is called malformed.
    pub const MAX_EXT_HEADERS: usize = 8;
    pub const FRAGMENT_HEADER_LEN: usize = 8;
    /// Fragment header bytes 2..4: offset in 8-byte units, 2 reserved bits, M.
    pub const FRAG_OFFSET_SHIFT: u16 = 3;
    pub const FRAG_M: u16 = 1;
    /// Hop-by-hop option types used here.
    pub const OPT_PAD1: u8 = 0;
    pub const OPT_JUMBO: u8 = 0xc2;
}

/// Parses an IPv4 header. `l3_len` is the layer-3 length of the original
/// frame, which the total length may not exceed.
pub(crate) fn parse_v4<'a>(
    p: &mut Packet,
    l3: &'a [u8],
    l3_len: u32,
    fields: Fields,
) -> IpResult<'a> {
    let ver_ihl = *l3.first().ok_or(Malformed::TruncatedIp)?;
    if ver_ihl >> 4 != 4 {
        return Err(Malformed::BadIpHeader);
    }
    p.ip_version = 4;
    // Fill what the fixed header holds before judging it, so a packet that
    // fails below still shows its addresses.
    let fixed: Option<&[u8; v4::MIN_HEADER_LEN]> = array(l3, 0);
    if let Some(h) = fixed {
        fixed_v4(p, h, fields);
    }
    // IHL counts 32-bit words; at most 15 * 4 = 60 bytes.
    let header_len = usize::from(ver_ihl & 0x0f) * 4;
    if header_len < v4::MIN_HEADER_LEN {
        return Err(Malformed::BadIpHeader);
    }
    let header = l3.get(..header_len).ok_or(Malformed::TruncatedIp)?;
    // The header is present, so `fixed_v4` has filled `ip_len`.
    let total = match p.ip_len {
        0 => tso_v4_len(p, l3_len),
        n => u32::from(n),
    };
    if total < header_len as u32 || total > l3_len {
        return Err(Malformed::BadIpLength);
    }
    p.ip_options = options_v4(header.get(v4::MIN_HEADER_LEN..).unwrap_or_default());

    if p.frag & frag::LATER != 0 {
        return Ok(None);
    }
    // Ethernet padding past the total length is not part of the datagram.
    let end = usize::try_from(total).unwrap_or(usize::MAX).min(l3.len());
    Ok(Some(l3.get(header_len..end).unwrap_or_default()))
}

/// The length of an IPv4 datagram whose total length says 0: the frame's.
///
/// A host that leaves segmentation to its NIC (TSO/GSO) may capture its
/// outgoing super-packets with 0 there, and Linux's BIG TCP writes 0 on
/// IPv4 packets past 64 KiB; Wireshark
/// (`ip.tso_support`, on by default) and tcpdump (since late 2023) read such
/// a packet with the length the frame gives, and so does weir. `ip_len`
/// then records that length, saturating at 65535.
fn tso_v4_len(p: &mut Packet, l3_len: u32) -> u32 {
    p.ip_len = u16::try_from(l3_len).unwrap_or(u16::MAX);
    l3_len
}

/// Copies the fields of the fixed 20-byte IPv4 header into the record.
fn fixed_v4(p: &mut Packet, h: &[u8; v4::MIN_HEADER_LEN], fields: Fields) {
    p.tos = h[v4::TOS];
    p.ttl = h[v4::TTL];
    p.proto = h[v4::PROTOCOL];
    p.src = v4_mapped(be32(h, v4::SRC).unwrap_or_default());
    p.dst = v4_mapped(be32(h, v4::DST).unwrap_or_default());
    p.ip_len = u16::from_be_bytes([h[v4::LENGTH], h[v4::LENGTH + 1]]);
    if fields.contains(Fields::IP_ID) {
        p.ip_id = u16::from_be_bytes([h[v4::ID], h[v4::ID + 1]]);
    }
    let flags_frag = u16::from_be_bytes([h[v4::FLAGS_FRAG], h[v4::FLAGS_FRAG + 1]]);
    if flags_frag & v4::MF != 0 {
        p.frag |= frag::MF;
    }
    if flags_frag & v4::OFFSET_MASK != 0 {
        p.frag |= frag::LATER;
    }
    if flags_frag & v4::DF != 0 {
        p.frag |= frag::DF;
    }
    if flags_frag & v4::RF != 0 {
        p.frag |= frag::RF;
    }
}

/// Walks IPv4 options for the kinds ipfw's `ipoptions` names. A bad length
/// ends the walk (as ipfw does) rather than failing the packet.
fn options_v4(mut opts: &[u8]) -> u8 {
    let mut seen = 0;
    while let Some(&kind) = opts.first() {
        let len = match kind {
            v4::OPT_EOL => break,
            v4::OPT_NOP => 1,
            _ => match opts.get(1) {
                Some(&len) if len >= 2 && usize::from(len) <= opts.len() => usize::from(len),
                _ => break,
            },
        };
        seen |= match kind {
            v4::OPT_LSRR => ipopt::LSRR,
            v4::OPT_SSRR => ipopt::SSRR,
            v4::OPT_RR => ipopt::RR,
            v4::OPT_TS => ipopt::TS,
            _ => 0,
        };
        opts = opts.get(len..).unwrap_or_default();
    }
    seen
}

/// Parses an IPv6 header and walks its extension headers.
pub(crate) fn parse_v6<'a>(
    p: &mut Packet,
    l3: &'a [u8],
    l3_len: u32,
    fields: Fields,
) -> IpResult<'a> {
    let first = *l3.first().ok_or(Malformed::TruncatedIp)?;
    if first >> 4 != 6 {
        return Err(Malformed::BadIpHeader);
    }
    p.ip_version = 6;
    let h: &[u8; v6::HEADER_LEN] = array(l3, 0).ok_or(Malformed::TruncatedIp)?;
    // Traffic class straddles bytes 0 and 1; the flow label is the rest.
    p.tos = (h[0] << 4) | (h[1] >> 4);
    if fields.contains(Fields::FLOW_LABEL) {
        p.flow_label = u32::from_be_bytes([h[0], h[1], h[2], h[3]]) & 0xf_ffff;
    }
    p.ttl = h[v6::HOP_LIMIT];
    let next = h[v6::NEXT_HEADER];
    p.proto = next;
    p.src = array(h, v6::SRC).map_or(0, |a| u128::from_be_bytes(*a));
    p.dst = array(h, v6::DST).map_or(0, |a| u128::from_be_bytes(*a));

    let frame_payload = l3_len.saturating_sub(v6::HEADER_LEN as u32);
    let mut payload_len = u32::from(u16::from_be_bytes([
        h[v6::PAYLOAD_LEN],
        h[v6::PAYLOAD_LEN + 1],
    ]));
    // A jumbogram (RFC 2675) says 0 here and gives its length in a hop-by-hop
    // option; the frame's own length is as good and needs no trust.
    if payload_len == 0
        && next == proto::HOPOPT
        && has_jumbo(l3.get(v6::HEADER_LEN..).unwrap_or_default())
    {
        payload_len = frame_payload;
    }
    if payload_len == 0 {
        payload_len = tso_v6_payload(next, frame_payload);
    }
    let ip_len = payload_len.saturating_add(v6::HEADER_LEN as u32);
    p.ip_len = u16::try_from(ip_len).unwrap_or(u16::MAX);
    if payload_len > frame_payload {
        return Err(Malformed::BadIpLength);
    }
    let end = usize::try_from(ip_len).unwrap_or(usize::MAX).min(l3.len());
    walk_ext(p, l3.get(..end).unwrap_or_default(), next)
}

/// The payload length of an IPv6 packet whose header says 0 and that
/// carries no Jumbo Payload option.
///
/// Linux's BIG TCP, once it stopped inserting a hop-by-hop Jumbo option,
/// hands capture super-packets past 64 KiB with payload length 0 and no
/// hop-by-hop header; tcpdump reads them with the frame's length, and so
/// does Wireshark with `ipv6.tso_support` on.
/// Only a frame whose payload cannot be written in 16 bits is taken for
/// one: a smaller frame saying 0 is malformed, as before. A hop-by-hop
/// header without the option, or "no next header", keeps the length 0.
fn tso_v6_payload(next: u8, frame_payload: u32) -> u32 {
    let big = frame_payload > u32::from(u16::MAX);
    if big && next != proto::HOPOPT && next != proto::IPV6_NONXT {
        frame_payload
    } else {
        0
    }
}

/// Walks up to [`v6::MAX_EXT_HEADERS`] extension headers from byte 40 of
/// `datagram`, setting `ext6` bits and `proto`. A header not wholly inside
/// the datagram, or a chain longer than the limit, is `BadExtHeader`.
fn walk_ext<'a>(p: &mut Packet, datagram: &'a [u8], mut next: u8) -> IpResult<'a> {
    let mut at = v6::HEADER_LEN;
    let mut walked = 0;
    loop {
        p.proto = next;
        let bit = match next {
            proto::HOPOPT => ext6::HOPOPT,
            proto::IPV6_ROUTE => ext6::ROUTING,
            proto::IPV6_OPTS => ext6::DSTOPT,
            proto::IPV6_FRAG => ext6::FRAGMENT,
            proto::AH => ext6::AH,
            // ESP encrypts everything after it: nothing more to read.
            proto::ESP => {
                p.ext6 |= ext6::ESP;
                return Ok(None);
            }
            _ => return Ok(Some(datagram.get(at..).unwrap_or_default())),
        };
        if walked == v6::MAX_EXT_HEADERS {
            return Err(Malformed::BadExtHeader);
        }
        walked += 1;
        let len_byte = *datagram
            .get(at.saturating_add(1))
            .ok_or(Malformed::BadExtHeader)?;
        let len = match next {
            proto::IPV6_FRAG => v6::FRAGMENT_HEADER_LEN,
            // AH counts 32-bit words, minus 2 (RFC 4302).
            proto::AH => (usize::from(len_byte) + 2) * 4,
            // The others count 8-byte units, not counting the first.
            _ => (usize::from(len_byte) + 1) * 8,
        };
        let header = datagram
            .get(at..at.saturating_add(len))
            .ok_or(Malformed::BadExtHeader)?;
        p.ext6 |= bit;
        if next == proto::IPV6_ROUTE {
            p.ext6 |= match header.get(2) {
                Some(0) => ext6::RTHDR0,
                Some(2) => ext6::RTHDR2,
                _ => 0,
            };
        }
        let header_next = header.first().copied().unwrap_or_default();
        if next == proto::IPV6_FRAG {
            let frag_field = be16(header, 2).unwrap_or_default();
            if frag_field & v6::FRAG_M != 0 {
                p.frag |= frag::MF;
            }
            if frag_field >> v6::FRAG_OFFSET_SHIFT != 0 {
                // A later fragment: the rest is the middle of some payload.
                p.frag |= frag::LATER;
                p.proto = header_next;
                return Ok(None);
            }
        }
        next = header_next;
        at = at.saturating_add(len);
    }
}

/// Whether the hop-by-hop header at the start of `hbh` has a Jumbo Payload
/// option.
fn has_jumbo(hbh: &[u8]) -> bool {
    let Some(&len_byte) = hbh.get(1) else {
        return false;
    };
    let end = ((usize::from(len_byte) + 1) * 8).min(hbh.len());
    let mut opts = hbh.get(2..end).unwrap_or_default();
    while let Some(&kind) = opts.first() {
        if kind == v6::OPT_JUMBO {
            return true;
        }
        let len = match kind {
            v6::OPT_PAD1 => 1,
            _ => match opts.get(1) {
                Some(&len) => usize::from(len) + 2,
                None => break,
            },
        };
        opts = opts.get(len..).unwrap_or_default();
    }
    false
}
