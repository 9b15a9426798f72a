//! Layer 4: the fields rules match on — ports, TCP flags, ICMP type/code.
//!
//! Follows ipfw's pull-up: each protocol needs a fixed number of bytes (the
//! part ipfw pulls up before matching) inside the segment, which the IP layer
//! has already clipped to both the captured bytes and the IP length. Fewer is
//! `TruncatedL4`, whichever of the two cut it short. Protocols without such
//! a header are left alone.

use crate::decode::{array, be16, be32};
use crate::fields::Fields;
use crate::packet::{tcpopt, Malformed, Packet};
use crate::proto;

/// Source and destination port lead TCP, UDP and SCTP headers alike.
mod ports {
    pub const SRC: usize = 0;
    pub const DST: usize = 2;
}

mod tcp {
    pub const SEQ: usize = 4;
    pub const ACK: usize = 8;
    pub const DATA_OFFSET: usize = 12;
    pub const FLAGS: usize = 13;
    pub const WINDOW: usize = 14;
    pub const HEADER_LEN: usize = 20;
    /// Data offset in 32-bit words; below 5 the header overlaps the payload.
    pub const MIN_DATA_OFFSET: u8 = 5;
    pub const OPT_EOL: u8 = 0;
    pub const OPT_NOP: u8 = 1;
    pub const OPT_MSS: u8 = 2;
    pub const OPT_WINDOW: u8 = 3;
    pub const OPT_SACK_PERMITTED: u8 = 4;
    pub const OPT_SACK: u8 = 5;
    pub const OPT_TIMESTAMP: u8 = 8;
    pub const OPT_CC: u8 = 11;
    pub const OPT_CC_NEW: u8 = 12;
    pub const OPT_CC_ECHO: u8 = 13;
}

const UDP_HEADER_LEN: usize = 8;
/// SCTP common header: ports, verification tag, checksum.
const SCTP_HEADER_LEN: usize = 12;

mod icmp {
    pub const TYPE: usize = 0;
    pub const CODE: usize = 1;
    /// Type, code, checksum.
    pub const HEADER_LEN: usize = 4;
}

/// Decodes the L4 header of `segment`, which carries `p.proto`.
/// `ip_payload` is the IP length less the IP headers (for `tcp_data_len`).
/// Fills of the optional TCP fields only those in `fields`.
#[inline]
pub(crate) fn parse(
    p: &mut Packet,
    segment: &[u8],
    ip_payload: usize,
    fields: Fields,
) -> Result<(), Malformed> {
    match (p.proto, p.ip_version) {
        (proto::TCP, _) => {
            let h: &[u8; tcp::HEADER_LEN] = array(segment, 0).ok_or(Malformed::TruncatedL4)?;
            set_ports(p, h);
            p.tcp_flags = h[tcp::FLAGS];
            let header_len = usize::from(h[tcp::DATA_OFFSET] >> 4) * 4;
            if fields.intersects(TCP_FIELDS) {
                tcp_fields(p, segment, header_len, ip_payload, fields);
            }
            if header_len < usize::from(tcp::MIN_DATA_OFFSET) * 4 {
                return Err(Malformed::BadL4Header);
            }
        }
        (proto::UDP, _) => {
            let h: &[u8; UDP_HEADER_LEN] = array(segment, 0).ok_or(Malformed::TruncatedL4)?;
            set_ports(p, h);
        }
        (proto::SCTP, _) => {
            let h: &[u8; SCTP_HEADER_LEN] = array(segment, 0).ok_or(Malformed::TruncatedL4)?;
            set_ports(p, h);
        }
        // ICMP belongs to IPv4 and ICMPv6 to IPv6; the other pairing is just
        // an unusual protocol number, as ipfw sees it.
        (proto::ICMP, 4) | (proto::ICMPV6, 6) => {
            let h: &[u8; icmp::HEADER_LEN] = array(segment, 0).ok_or(Malformed::TruncatedL4)?;
            p.icmp_type = h[icmp::TYPE];
            p.icmp_code = h[icmp::CODE];
            p.has_icmp = true;
        }
        _ => {}
    }
    Ok(())
}

/// Every optional field of the TCP header.
const TCP_FIELDS: Fields = Fields::TCP_HEADER
    .with(Fields::TCP_DATA_LEN)
    .with(Fields::TCP_OPTIONS);

/// The TCP fields beyond ports and flags that `fields` asks for; the data
/// length and options only of a header whose length is valid. Out of
/// line: most rulesets read none of them.
#[inline(never)]
fn tcp_fields(
    p: &mut Packet,
    segment: &[u8],
    header_len: usize,
    ip_payload: usize,
    fields: Fields,
) {
    if fields.contains(Fields::TCP_HEADER) {
        p.tcp_seq = be32(segment, tcp::SEQ).unwrap_or_default();
        p.tcp_ack = be32(segment, tcp::ACK).unwrap_or_default();
        p.tcp_win = be16(segment, tcp::WINDOW).unwrap_or_default();
    }
    if header_len < usize::from(tcp::MIN_DATA_OFFSET) * 4 {
        return;
    }
    if fields.contains(Fields::TCP_DATA_LEN) {
        p.tcp_data_len = u16::try_from(ip_payload.saturating_sub(header_len)).unwrap_or(u16::MAX);
    }
    if fields.contains(Fields::TCP_OPTIONS) {
        // Options as far as they were captured (ipfw pulls them up).
        let opts = segment.get(tcp::HEADER_LEN..header_len.min(segment.len()));
        tcp_options(p, opts.unwrap_or_default());
    }
}

/// Walks TCP options for the kinds ipfw's `tcpoptions` names, and the MSS
/// value; a bad length ends the walk, as ipfw's `tcpopts_parse` does.
fn tcp_options(p: &mut Packet, mut opts: &[u8]) {
    while let Some(&kind) = opts.first() {
        let len = match kind {
            tcp::OPT_EOL => break,
            tcp::OPT_NOP => 1,
            _ => match opts.get(1) {
                Some(&len) if len >= 2 && usize::from(len) <= opts.len() => usize::from(len),
                _ => break,
            },
        };
        p.tcp_opts |= match kind {
            tcp::OPT_MSS => {
                p.tcp_mss = be16(opts, 2).unwrap_or_default();
                tcpopt::MSS
            }
            tcp::OPT_WINDOW => tcpopt::WINDOW,
            tcp::OPT_SACK_PERMITTED | tcp::OPT_SACK => tcpopt::SACK,
            tcp::OPT_TIMESTAMP => tcpopt::TS,
            tcp::OPT_CC | tcp::OPT_CC_NEW | tcp::OPT_CC_ECHO => tcpopt::CC,
            _ => 0,
        };
        opts = opts.get(len..).unwrap_or_default();
    }
}

fn set_ports(p: &mut Packet, h: &[u8]) {
    p.src_port = be16(h, ports::SRC).unwrap_or_default();
    p.dst_port = be16(h, ports::DST).unwrap_or_default();
    p.has_ports = true;
}
