//! Byte-level header writers.
//!
//! Every writer appends to one `Vec<u8>` that the generator reuses for each
//! frame. A header whose length or checksum depends on what follows is written
//! in two steps: `*_begin` appends it with zeroed fields and returns its
//! offset, `*_seal`/`*_finish` patches the fields once the rest is in place.

use weir_wire::proto;

/// A MAC address.
pub type Mac = [u8; 6];

pub const ETH_IPV4: u16 = 0x0800;
pub const ETH_ARP: u16 = 0x0806;
pub const ETH_IPV6: u16 = 0x86dd;
pub const ETH_LLDP: u16 = 0x88cc;
pub const ETH_8021Q: u16 = 0x8100;
pub const ETH_8021AD: u16 = 0x88a8;

/// IPv4 flag bits in the flags/fragment-offset word.
pub const IP_DF: u16 = 0x4000;
pub const IP_MF: u16 = 0x2000;

pub const TCP_FIN: u8 = 0x01;
pub const TCP_SYN: u8 = 0x02;
pub const TCP_RST: u8 = 0x04;
pub const TCP_PSH: u8 = 0x08;
pub const TCP_ACK: u8 = 0x10;

/// Smallest Ethernet frame without FCS; shorter frames are padded on the wire.
pub const ETH_MIN_FRAME: usize = 60;

#[inline]
pub fn put_u16(buf: &mut Vec<u8>, v: u16) {
    buf.extend_from_slice(&v.to_be_bytes());
}

#[inline]
pub fn put_u32(buf: &mut Vec<u8>, v: u32) {
    buf.extend_from_slice(&v.to_be_bytes());
}

#[inline]
pub fn set_u16(buf: &mut [u8], at: usize, v: u16) {
    buf[at..at + 2].copy_from_slice(&v.to_be_bytes());
}

/// 802.1Q tagging of a frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Vlan {
    #[default]
    None,
    Dot1q(u16),
    /// 802.1ad service tag (0x88a8) outside a customer tag (0x8100).
    QinQ {
        outer: u16,
        inner: u16,
    },
}

/// The Ethernet addressing of one direction of a conversation.
#[derive(Clone, Copy, Debug)]
pub struct Link {
    pub src: Mac,
    pub dst: Mac,
    pub vlan: Vlan,
}

impl Link {
    /// The same link seen in the other direction (same VLAN).
    pub fn rev(self) -> Link {
        Link {
            src: self.dst,
            dst: self.src,
            vlan: self.vlan,
        }
    }
}

pub fn ethernet(buf: &mut Vec<u8>, link: &Link, ethertype: u16) {
    buf.extend_from_slice(&link.dst);
    buf.extend_from_slice(&link.src);
    match link.vlan {
        Vlan::None => {}
        Vlan::Dot1q(id) => {
            put_u16(buf, ETH_8021Q);
            put_u16(buf, id & 0x0fff);
        }
        Vlan::QinQ { outer, inner } => {
            put_u16(buf, ETH_8021AD);
            put_u16(buf, outer & 0x0fff);
            put_u16(buf, ETH_8021Q);
            put_u16(buf, inner & 0x0fff);
        }
    }
    put_u16(buf, ethertype);
}

// ---------------------------------------------------------------------------
// Internet checksum (RFC 1071)

/// Adds `data` as big-endian 16-bit words to `acc`. Callers sum pieces of
/// even length except possibly the last one.
pub fn sum16(data: &[u8], mut acc: u64) -> u64 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        acc += u64::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [last] = chunks.remainder() {
        acc += u64::from(*last) << 8;
    }
    acc
}

/// Folds the carries and complements.
pub fn fold(mut acc: u64) -> u16 {
    while acc >> 16 != 0 {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    !(acc as u16)
}

/// The part of a transport checksum that comes from the IP layer.
#[derive(Clone, Copy, Debug)]
pub enum Pseudo {
    /// ICMPv4 has no pseudo-header.
    None,
    V4([u8; 4], [u8; 4]),
    V6([u8; 16], [u8; 16]),
}

pub fn pseudo_sum(p: Pseudo, proto: u8, len: u32) -> u64 {
    match p {
        Pseudo::None => 0,
        Pseudo::V4(s, d) => sum16(&d, sum16(&s, 0)) + u64::from(proto) + u64::from(len),
        Pseudo::V6(s, d) => sum16(&d, sum16(&s, 0)) + u64::from(proto) + u64::from(len),
    }
}

/// Writes the checksum of the transport message that runs from `l4_off` to
/// the end of `buf`; the field sits `csum_at` bytes into the message.
pub fn l4_seal(buf: &mut [u8], l4_off: usize, csum_at: usize, pseudo: Pseudo, proto: u8) {
    set_u16(buf, l4_off + csum_at, 0);
    let len = (buf.len() - l4_off) as u32;
    let mut c = fold(sum16(&buf[l4_off..], pseudo_sum(pseudo, proto, len)));
    // In UDP a computed 0 is sent as all ones (0 means "no checksum").
    if c == 0 && proto == proto::UDP {
        c = 0xffff;
    }
    set_u16(buf, l4_off + csum_at, c);
}

// ---------------------------------------------------------------------------
// IPv4

#[derive(Clone, Copy, Debug)]
pub struct Ipv4 {
    pub src: [u8; 4],
    pub dst: [u8; 4],
    pub proto: u8,
    pub ttl: u8,
    pub tos: u8,
    pub id: u16,
    /// Flags (DF/MF) | fragment offset in 8-byte units.
    pub frag: u16,
}

/// Appends an IPv4 header with `options` (padded by the caller to a multiple
/// of 4 bytes). Total length and checksum are filled by [`ipv4_seal`].
pub fn ipv4_begin(buf: &mut Vec<u8>, h: &Ipv4, options: &[u8]) -> usize {
    debug_assert!(options.len() & 3 == 0 && options.len() <= 40);
    let off = buf.len();
    buf.push(0x40 | (5 + options.len() / 4) as u8);
    buf.push(h.tos);
    put_u16(buf, 0);
    put_u16(buf, h.id);
    put_u16(buf, h.frag);
    buf.push(h.ttl);
    buf.push(h.proto);
    put_u16(buf, 0);
    buf.extend_from_slice(&h.src);
    buf.extend_from_slice(&h.dst);
    buf.extend_from_slice(options);
    off
}

/// Sets the total length to `total_len` and computes the header checksum
/// over the IHL the header claims.
pub fn ipv4_seal(buf: &mut [u8], off: usize, total_len: u16) {
    set_u16(buf, off + 2, total_len);
    set_u16(buf, off + 10, 0);
    let hlen = usize::from(buf[off] & 0x0f) * 4;
    let c = fold(sum16(&buf[off..off + hlen], 0));
    set_u16(buf, off + 10, c);
}

/// Seals an IPv4 header whose datagram runs to the end of `buf`.
pub fn ipv4_finish(buf: &mut [u8], off: usize) {
    let total = (buf.len() - off) as u16;
    ipv4_seal(buf, off, total);
}

// ---------------------------------------------------------------------------
// IPv6

#[derive(Clone, Copy, Debug)]
pub struct Ipv6 {
    pub src: [u8; 16],
    pub dst: [u8; 16],
    /// The first next-header value (an extension header or the transport).
    pub next: u8,
    pub hop_limit: u8,
    pub flow_label: u32,
}

pub fn ipv6_begin(buf: &mut Vec<u8>, h: &Ipv6) -> usize {
    let off = buf.len();
    put_u32(buf, (6 << 28) | (h.flow_label & 0x000f_ffff));
    put_u16(buf, 0);
    buf.push(h.next);
    buf.push(h.hop_limit);
    buf.extend_from_slice(&h.src);
    buf.extend_from_slice(&h.dst);
    off
}

/// An 8-byte hop-by-hop or destination-options header holding one PadN
/// option: legal, ignored by every receiver, and it moves the transport.
pub fn ipv6_opts_ext(buf: &mut Vec<u8>, next: u8) {
    buf.extend_from_slice(&[next, 0, 1, 4, 0, 0, 0, 0]);
}

/// The IPv6 fragment header (RFC 8200 §4.5); `offset` in bytes, multiple of 8.
pub fn ipv6_frag_ext(buf: &mut Vec<u8>, next: u8, offset: u16, more: bool, ident: u32) {
    buf.push(next);
    buf.push(0);
    put_u16(buf, (offset & !7) | u16::from(more));
    put_u32(buf, ident);
}

pub fn ipv6_finish(buf: &mut [u8], off: usize) {
    let plen = (buf.len() - off - 40) as u16;
    set_u16(buf, off + 4, plen);
}

// ---------------------------------------------------------------------------
// Transport

#[derive(Clone, Copy, Debug)]
pub struct Tcp {
    pub sport: u16,
    pub dport: u16,
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
    pub window: u16,
}

/// Appends a TCP header with `options` (a multiple of 4 bytes); the checksum
/// is left for [`l4_seal`] with `csum_at = 16`.
pub fn tcp_begin(buf: &mut Vec<u8>, h: &Tcp, options: &[u8]) -> usize {
    debug_assert!(options.len() & 3 == 0 && options.len() <= 40);
    let off = buf.len();
    put_u16(buf, h.sport);
    put_u16(buf, h.dport);
    put_u32(buf, h.seq);
    put_u32(buf, h.ack);
    buf.push(((5 + options.len() / 4) as u8) << 4);
    buf.push(h.flags);
    put_u16(buf, h.window);
    put_u16(buf, 0); // checksum
    put_u16(buf, 0); // urgent pointer
    buf.extend_from_slice(options);
    off
}

pub const TCP_CSUM_AT: usize = 16;
pub const UDP_CSUM_AT: usize = 6;
pub const ICMP_CSUM_AT: usize = 2;

pub fn udp_begin(buf: &mut Vec<u8>, sport: u16, dport: u16) -> usize {
    let off = buf.len();
    put_u16(buf, sport);
    put_u16(buf, dport);
    put_u32(buf, 0); // length + checksum, see udp_seal
    off
}

/// Fills the UDP length (to the end of `buf`) and checksum.
pub fn udp_seal(buf: &mut [u8], off: usize, pseudo: Pseudo) {
    let len = (buf.len() - off) as u16;
    set_u16(buf, off + 4, len);
    l4_seal(buf, off, UDP_CSUM_AT, pseudo, proto::UDP);
}

/// ICMP and ICMPv6 share the first 8 bytes: type, code, checksum, and a
/// 4-byte field (identifier+sequence, unused, MTU, ...).
pub fn icmp_begin(buf: &mut Vec<u8>, typ: u8, code: u8, rest: [u8; 4]) -> usize {
    let off = buf.len();
    buf.push(typ);
    buf.push(code);
    put_u16(buf, 0);
    buf.extend_from_slice(&rest);
    off
}

// ---------------------------------------------------------------------------
// Payload bytes

/// SplitMix64's finaliser: a cheap, well-mixed hash of a 64-bit value.
#[inline]
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Appends `len` opaque bytes of the stream named by `seed`, starting at byte
/// `offset` of that stream. Any range of the stream can be regenerated, which
/// lets IP fragments of one datagram be written one at a time without keeping
/// the datagram around.
pub fn payload(buf: &mut Vec<u8>, seed: u64, offset: usize, len: usize) {
    let mut pos = offset;
    let end = offset + len;
    while pos < end {
        let word = mix64(seed ^ (pos as u64 / 8).wrapping_mul(0x9e37_79b9_7f4a_7c15)).to_le_bytes();
        let from = pos % 8;
        let take = (8 - from).min(end - pos);
        buf.extend_from_slice(&word[from..from + take]);
        pos += take;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_matches_rfc1071_example() {
        // RFC 1071 §3 example: words 0001 f203 f4f5 f6f7 sum to ddf2 (folded).
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(fold(sum16(&data, 0)), !0xddf2);
    }

    #[test]
    fn ipv4_header_checksum_verifies_to_zero() {
        let mut buf = Vec::new();
        let off = ipv4_begin(
            &mut buf,
            &Ipv4 {
                src: [10, 1, 2, 3],
                dst: [192, 0, 2, 10],
                proto: proto::UDP,
                ttl: 64,
                tos: 0,
                id: 0x1234,
                frag: IP_DF,
            },
            &[1, 1, 1, 0],
        );
        buf.extend_from_slice(&[0; 12]);
        ipv4_finish(&mut buf, off);
        assert_eq!(buf[0], 0x46);
        assert_eq!(u16::from_be_bytes([buf[2], buf[3]]), 36);
        assert_eq!(fold(sum16(&buf[..24], 0)), 0);
    }

    #[test]
    fn payload_ranges_are_consistent() {
        let mut whole = Vec::new();
        payload(&mut whole, 99, 0, 100);
        let mut parts = Vec::new();
        payload(&mut parts, 99, 0, 13);
        payload(&mut parts, 99, 13, 50);
        payload(&mut parts, 99, 63, 37);
        assert_eq!(whole, parts);
        let mut other = Vec::new();
        payload(&mut other, 100, 0, 100);
        assert_ne!(whole, other);
    }
}
