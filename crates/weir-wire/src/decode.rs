//! Frame → [`Packet`], in one pass.
//!
//! Hand-written rather than built on a parsing crate, for three reasons:
//! - it goes in one pass straight into the `Copy` record, with no
//!   intermediate header structs, slices or errors to carry around;
//! - it follows ipfw's pull-up semantics: an L4 header counts only if it is
//!   inside both the captured bytes and the IP length, and a short or bad
//!   header is a counted [`Malformed`] reason that keeps the addresses
//!   decoded so far, not an error that throws them away;
//! - it covers link types such as Linux SLL2, PPP (bare or HDLC-framed),
//!   Cisco HDLC and BSD NULL/LOOP, which crates such as etherparse do not.
//!
//! Each layer is a small function returning `Result<_, Malformed>`:
//! `link::parse` finds where layer 3 starts and what the link says it is,
//! `ip::parse_v4`/`ip::parse_v6` validate the IP header and walk options or
//! extension headers, `l4::parse` reads what rules match on (ports, TCP flags,
//! ICMP type). [`decode`] turns the first error into `L3::Malformed`.
//!
//! No-panic contract: every read of frame bytes goes through `get()` (the
//! helpers at the bottom), offsets derived from packet data use checked or
//! saturating arithmetic, and the crate denies `clippy::indexing_slicing`.

use std::fmt;

use crate::fields::Fields;
use crate::packet::{Packet, L3};
use crate::{ip, l4, link};

/// A libpcap `LINKTYPE_*` value: what the first byte of a frame is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LinkType(pub u32);

impl LinkType {
    /// BSD loopback: a 4-byte address family in the capturing host's byte order.
    pub const NULL: LinkType = LinkType(0);
    /// Ethernet II, with optional 802.1Q / 802.1ad tags.
    pub const ETHERNET: LinkType = LinkType(1);
    /// PPP: protocol field, optionally behind an `ff 03` HDLC prefix.
    pub const PPP: LinkType = LinkType(9);
    /// `DLT_RAW` as most systems number it; some captures carry it as is.
    pub const RAW_DLT12: LinkType = LinkType(12);
    /// `DLT_RAW` as OpenBSD numbers it.
    pub const RAW_DLT14: LinkType = LinkType(14);
    /// PPP in HDLC-like framing (RFC 1662), or Cisco PPP/HDLC.
    pub const PPP_HDLC: LinkType = LinkType(50);
    /// Raw IP; the version nibble says 4 or 6.
    pub const RAW: LinkType = LinkType(101);
    /// Cisco HDLC: address, control, then an ethertype.
    pub const C_HDLC: LinkType = LinkType(104);
    /// OpenBSD loopback: like NULL but the family is in network byte order.
    pub const LOOP: LinkType = LinkType(108);
    /// Linux "cooked" capture v1 (16-byte header).
    pub const LINUX_SLL: LinkType = LinkType(113);
    /// Raw IPv4 only.
    pub const IPV4: LinkType = LinkType(228);
    /// Raw IPv6 only.
    pub const IPV6: LinkType = LinkType(229);
    /// Linux "cooked" capture v2 (20-byte header).
    pub const LINUX_SLL2: LinkType = LinkType(276);

    /// Short lowercase name for display; `"unknown"` for unsupported types.
    pub fn name(self) -> &'static str {
        match self {
            Self::NULL => "null",
            Self::ETHERNET => "ethernet",
            Self::PPP => "ppp",
            Self::RAW | Self::RAW_DLT12 | Self::RAW_DLT14 => "raw",
            Self::PPP_HDLC => "ppp-hdlc",
            Self::C_HDLC => "c-hdlc",
            Self::LOOP => "loop",
            Self::LINUX_SLL => "linux-sll",
            Self::IPV4 => "ipv4",
            Self::IPV6 => "ipv6",
            Self::LINUX_SLL2 => "linux-sll2",
            _ => "unknown",
        }
    }

    /// Whether [`decode`] understands this link type. Frames of other types
    /// decode as `L3::NonIp`.
    pub fn is_supported(self) -> bool {
        self.name() != "unknown"
    }
}

impl fmt::Display for LinkType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_supported() {
            f.write_str(self.name())
        } else {
            write!(f, "linktype-{}", self.0)
        }
    }
}

/// Decodes one captured frame.
///
/// `frame` is the captured bytes (possibly cut short by the snap length);
/// `orig_len` is the frame's length on the wire. Never panics and never
/// allocates. `l3_offset`/`l3_len` are always set; when the link header itself
/// is cut short they are 0 and the whole frame, as nothing is known about it.
pub fn decode(link: LinkType, frame: &[u8], orig_len: u32) -> Packet {
    decode_with(link, frame, orig_len, Fields::ALL)
}

/// As [`decode`], filling of the optional fields only those in `fields`
/// (see [`Fields`]); the others stay zero. Whether the frame is IP, and
/// why it is malformed, never depend on `fields`.
#[inline]
pub fn decode_with(link: LinkType, frame: &[u8], orig_len: u32, fields: Fields) -> Packet {
    let mut p = Packet::default();
    // The wire carried at least what was captured; a record claiming less
    // (or a caller passing 0) must not make every packet look over-long.
    let orig_len = orig_len.max(u32::try_from(frame.len()).unwrap_or(u32::MAX));
    p.l3_len = orig_len;

    let (offset, net) = match link::parse(link, frame, &mut p, fields) {
        Ok(found) => found,
        Err(reason) => {
            p.l3 = L3::Malformed(reason);
            return p;
        }
    };
    p.l3_offset = u16::try_from(offset).unwrap_or(u16::MAX);
    p.l3_len = orig_len.saturating_sub(u32::try_from(offset).unwrap_or(u32::MAX));
    let l3 = frame.get(offset..).unwrap_or_default();
    let l3_len = p.l3_len;

    let result = match net {
        link::Net::NonIp => return p,
        link::Net::V4 => ip::parse_v4(&mut p, l3, l3_len, fields),
        link::Net::V6 => ip::parse_v6(&mut p, l3, l3_len, fields),
        // Raw IP: the version nibble decides; anything but 6 is checked as
        // IPv4 so that an empty or garbled frame gets its IPv4 reason.
        link::Net::Raw => match l3.first().map(|b| b >> 4) {
            Some(6) => ip::parse_v6(&mut p, l3, l3_len, fields),
            _ => ip::parse_v4(&mut p, l3, l3_len, fields),
        },
    };
    // `None`: a later fragment or ESP, which carry no readable L4 header.
    let result = match result {
        Ok(Some(segment)) => {
            // The segment lies inside `l3`: its offset is the IP headers'
            // length. Only `tcp_data_len` needs the payload's.
            let payload = if fields.contains(Fields::TCP_DATA_LEN) {
                let headers = (segment.as_ptr() as usize).saturating_sub(l3.as_ptr() as usize);
                usize::from(p.ip_len).saturating_sub(headers)
            } else {
                0
            };
            l4::parse(&mut p, segment, payload, fields)
        }
        Ok(None) => Ok(()),
        Err(reason) => Err(reason),
    };
    p.l3 = match result {
        Ok(()) => L3::Ip,
        Err(reason) => L3::Malformed(reason),
    };
    p
}

// Bounds-checked readers shared by the layers. Each returns `None` rather
// than panicking when the field is not wholly inside `bytes`.

/// The `N` bytes at `at`, as an array (so constant indexing into it is
/// checked at compile time).
#[inline]
pub(crate) fn array<const N: usize>(bytes: &[u8], at: usize) -> Option<&[u8; N]> {
    bytes.get(at..at.checked_add(N)?)?.try_into().ok()
}

/// The big-endian `u16` at `at`.
#[inline]
pub(crate) fn be16(bytes: &[u8], at: usize) -> Option<u16> {
    array(bytes, at).map(|b| u16::from_be_bytes(*b))
}

/// The big-endian `u32` at `at`.
#[inline]
pub(crate) fn be32(bytes: &[u8], at: usize) -> Option<u32> {
    array(bytes, at).map(|b| u32::from_be_bytes(*b))
}
