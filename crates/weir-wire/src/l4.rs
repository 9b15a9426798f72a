//! Layer 4: the fields rules match on — ports, TCP flags, ICMP type/code.
//!
//! Follows ipfw's pull-up: each protocol needs a fixed number of bytes (the
//! part ipfw pulls up before matching) inside the segment, which the IP layer
//! has already clipped to both the captured bytes and the IP length. Fewer is
//! `TruncatedL4`, whichever of the two cut it short. Protocols without such
//! a header are left alone.

use crate::decode::{array, be16};
use crate::packet::{Malformed, Packet};

const PROTO_ICMP: u8 = 1;
const PROTO_TCP: u8 = 6;
const PROTO_UDP: u8 = 17;
const PROTO_ICMPV6: u8 = 58;
const PROTO_SCTP: u8 = 132;

/// Source and destination port lead TCP, UDP and SCTP headers alike.
mod ports {
    pub const SRC: usize = 0;
    pub const DST: usize = 2;
}

mod tcp {
    pub const DATA_OFFSET: usize = 12;
    pub const FLAGS: usize = 13;
    pub const HEADER_LEN: usize = 20;
    /// Data offset in 32-bit words; below 5 the header overlaps the payload.
    pub const MIN_DATA_OFFSET: u8 = 5;
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
pub(crate) fn parse(p: &mut Packet, segment: &[u8]) -> Result<(), Malformed> {
    match (p.proto, p.ip_version) {
        (PROTO_TCP, _) => {
            let h: &[u8; tcp::HEADER_LEN] = array(segment, 0).ok_or(Malformed::TruncatedL4)?;
            set_ports(p, h);
            p.tcp_flags = h[tcp::FLAGS];
            if h[tcp::DATA_OFFSET] >> 4 < tcp::MIN_DATA_OFFSET {
                return Err(Malformed::BadL4Header);
            }
        }
        (PROTO_UDP, _) => {
            let h: &[u8; UDP_HEADER_LEN] = array(segment, 0).ok_or(Malformed::TruncatedL4)?;
            set_ports(p, h);
        }
        (PROTO_SCTP, _) => {
            let h: &[u8; SCTP_HEADER_LEN] = array(segment, 0).ok_or(Malformed::TruncatedL4)?;
            set_ports(p, h);
        }
        // ICMP belongs to IPv4 and ICMPv6 to IPv6; the other pairing is just
        // an unusual protocol number, as ipfw sees it.
        (PROTO_ICMP, 4) | (PROTO_ICMPV6, 6) => {
            let h: &[u8; icmp::HEADER_LEN] = array(segment, 0).ok_or(Malformed::TruncatedL4)?;
            p.icmp_type = h[icmp::TYPE];
            p.icmp_code = h[icmp::CODE];
            p.has_icmp = true;
        }
        _ => {}
    }
    Ok(())
}

fn set_ports(p: &mut Packet, h: &[u8]) {
    p.src_port = be16(h, ports::SRC).unwrap_or_default();
    p.dst_port = be16(h, ports::DST).unwrap_or_default();
    p.has_ports = true;
}
