//! Byte-array vectors for every link type, every `Malformed` reason, IPv4
//! options and fragments, VLAN stacks, the IPv6 extension-header walk and
//! Linux SLL directions.

use crate::packet::{ext6, frag, ipopt, tcp, tcpopt, v4_mapped, Direction, Malformed, Packet, L3};
use crate::{decode, LinkType};

/// Ethernet header up to (not including) the ethertype.
const MACS: [u8; 12] = [
    0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb,
];

/// IPv4 / TCP SYN+ACK, 192.168.1.10:12345 → 10.0.0.1:80, TOS 0x10, TTL 64,
/// DF, 40 bytes.
const V4_TCP: [u8; 40] = [
    0x45, 0x10, 0x00, 0x28, 0xab, 0xcd, 0x40, 0x00, 0x40, 0x06, 0x00, 0x00, // ip
    192, 168, 1, 10, 10, 0, 0, 1, //
    0x30, 0x39, 0x00, 0x50, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x12, 0x72, 0x10, 0, 0, 0, 0, // tcp
];

/// IPv4 / UDP 10.1.1.1:5353 → 224.0.0.251:5353, TTL 255, 4 bytes of data.
const V4_UDP: [u8; 32] = [
    0x45, 0x00, 0x00, 0x20, 0x00, 0x01, 0x00, 0x00, 0xff, 0x11, 0x00, 0x00, // ip
    10, 1, 1, 1, 224, 0, 0, 251, //
    0x14, 0xe9, 0x14, 0xe9, 0x00, 0x0c, 0x00, 0x00, 0xde, 0xad, 0xbe, 0xef, // udp
];

/// IPv4 / ICMP echo request 10.0.0.1 → 10.0.0.2.
const V4_ICMP: [u8; 28] = [
    0x45, 0x00, 0x00, 0x1c, 0x00, 0x02, 0x00, 0x00, 0x40, 0x01, 0x00, 0x00, // ip
    10, 0, 0, 1, 10, 0, 0, 2, //
    0x08, 0x00, 0xf7, 0xff, 0x00, 0x00, 0x00, 0x00, // icmp
];

/// IPv6 / UDP 2001:db8::1:40000 → 2001:db8::2:53, traffic class 0xb8,
/// hop limit 64, 8 bytes of data.
const V6_UDP: [u8; 56] = [
    0x6b, 0x80, 0x00, 0x00, 0x00, 0x10, 0x11, 0x40, // ipv6
    0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, //
    0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, //
    0x9c, 0x40, 0x00, 0x35, 0x00, 0x10, 0x00, 0x00, 1, 2, 3, 4, 5, 6, 7, 8, // udp
];

const V6_SRC: u128 = 0x2001_0db8_0000_0000_0000_0000_0000_0001;

fn ip(a: u8, b: u8, c: u8, d: u8) -> u128 {
    v4_mapped(u32::from_be_bytes([a, b, c, d]))
}

fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

fn eth(ethertype: u16, payload: &[u8]) -> Vec<u8> {
    cat(&[&MACS, &ethertype.to_be_bytes(), payload])
}

/// Decodes a whole frame (orig_len = captured length).
fn dec(link: LinkType, frame: &[u8]) -> Packet {
    decode(link, frame, frame.len() as u32)
}

fn assert_v4_tcp(p: &Packet) {
    assert_eq!(p.l3, L3::Ip);
    assert_eq!(p.ip_version, 4);
    assert_eq!(p.src, ip(192, 168, 1, 10));
    assert_eq!(p.dst, ip(10, 0, 0, 1));
    assert_eq!(p.proto, 6);
    assert_eq!((p.src_port, p.dst_port, p.has_ports), (12345, 80, true));
    assert_eq!(p.tcp_flags, tcp::SYN | tcp::ACK);
    assert_eq!((p.ttl, p.tos, p.ip_len), (64, 0x10, 40));
    assert_eq!(p.frag, frag::DF);
    assert!(!p.has_icmp);
}

// ---- link layers -------------------------------------------------------

#[test]
fn ethernet_ipv4_tcp() {
    let p = dec(LinkType::ETHERNET, &eth(0x0800, &V4_TCP));
    assert_v4_tcp(&p);
    assert_eq!((p.l3_offset, p.l3_len, p.vlan), (14, 40, None));
    assert_eq!(p.direction, Direction::Unknown);
}

#[test]
fn ethernet_padding_is_not_payload() {
    // A 28-byte ICMP datagram padded to the 60-byte Ethernet minimum.
    let frame = cat(&[&eth(0x0800, &V4_ICMP), &[0u8; 18]]);
    let p = dec(LinkType::ETHERNET, &frame);
    assert_eq!(p.l3, L3::Ip);
    assert_eq!((p.ip_len, p.l3_len), (28, 46));
    assert_eq!((p.icmp_type, p.icmp_code, p.has_icmp), (8, 0, true));
}

#[test]
fn ethernet_non_ip() {
    let arp = eth(0x0806, &[0u8; 28]);
    let p = decode(LinkType::ETHERNET, &arp, 60);
    assert_eq!(p.l3, L3::NonIp);
    assert_eq!((p.l3_offset, p.l3_len, p.ip_version), (14, 46, 0));
    // 802.3 length field + LLC (STP).
    let stp = eth(0x0026, &[0x42, 0x42, 0x03, 0, 0]);
    assert_eq!(dec(LinkType::ETHERNET, &stp).l3, L3::NonIp);
}

#[test]
fn vlan_single_tag() {
    let frame = eth(0x8100, &cat(&[&[0x20, 0x64, 0x08, 0x00], &V4_TCP]));
    let p = dec(LinkType::ETHERNET, &frame);
    assert_v4_tcp(&p);
    assert_eq!((p.vlan, p.l3_offset), (Some(100), 18));
}

#[test]
fn qinq_records_outer_vlan() {
    for outer in [0x88a8u16, 0x9100, 0x8100] {
        let tags = cat(&[
            &[0x00, 0xc8],
            &0x8100u16.to_be_bytes(),
            &[0x00, 0x64, 0x86, 0xdd],
        ]);
        let frame = eth(outer, &cat(&[&tags, &V6_UDP]));
        let p = dec(LinkType::ETHERNET, &frame);
        assert_eq!(p.l3, L3::Ip, "outer {outer:#x}");
        assert_eq!((p.vlan, p.l3_offset, p.ip_version), (Some(200), 22, 6));
        assert_eq!((p.src_port, p.dst_port), (40000, 53));
    }
}

#[test]
fn vlan_stack_too_deep_is_not_walked() {
    let tag = [0x00, 0x01, 0x81, 0x00];
    let frame = eth(
        0x8100,
        &cat(&[&tag, &tag, &tag, &tag, &[0x00, 0x01, 0x08, 0x00], &V4_TCP]),
    );
    let p = dec(LinkType::ETHERNET, &frame);
    assert_eq!((p.l3, p.vlan), (L3::NonIp, Some(1)));
}

#[test]
fn truncated_link_headers() {
    let cases: [(LinkType, &[u8]); 9] = [
        (LinkType::ETHERNET, &MACS),
        (LinkType::ETHERNET, &[0u8; 13]),
        (
            LinkType::ETHERNET,
            &[
                0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x81, 0x00, 0x00, 0x64, 0x08,
            ],
        ),
        (LinkType::NULL, &[2, 0, 0]),
        (LinkType::LOOP, &[]),
        (LinkType::PPP, &[0xff, 0x03]),
        (LinkType::PPP_HDLC, &[0x0f, 0x00, 0x08]),
        (LinkType::LINUX_SLL, &[0u8; 15]),
        (LinkType::LINUX_SLL2, &[0u8; 19]),
    ];
    for (link, frame) in cases {
        let p = decode(link, frame, 100);
        assert_eq!(
            p.l3,
            L3::Malformed(Malformed::TruncatedLink),
            "{link} {frame:?}"
        );
        // Nothing is known about the frame: all of it counts.
        assert_eq!((p.l3_offset, p.l3_len), (0, 100));
    }
}

#[test]
fn null_accepts_both_byte_orders() {
    for af in [[2, 0, 0, 0], [0, 0, 0, 2]] {
        let p = dec(LinkType::NULL, &cat(&[&af, &V4_TCP]));
        assert_v4_tcp(&p);
        assert_eq!(p.l3_offset, 4);
    }
    for af in [24u32, 28, 30] {
        for bytes in [af.to_le_bytes(), af.to_be_bytes()] {
            let p = dec(LinkType::NULL, &cat(&[&bytes, &V6_UDP]));
            assert_eq!((p.l3, p.ip_version), (L3::Ip, 6), "af {af}");
        }
    }
    assert_eq!(
        dec(LinkType::NULL, &cat(&[&[7, 0, 0, 0], &V4_TCP])).l3,
        L3::NonIp
    );
}

#[test]
fn loop_is_network_order_only() {
    assert_v4_tcp(&dec(LinkType::LOOP, &cat(&[&[0, 0, 0, 2], &V4_TCP])));
    assert_eq!(
        dec(LinkType::LOOP, &cat(&[&[0, 0, 0, 28], &V6_UDP])).ip_version,
        6
    );
    assert_eq!(
        dec(LinkType::LOOP, &cat(&[&[2, 0, 0, 0], &V4_TCP])).l3,
        L3::NonIp
    );
}

#[test]
fn raw_ip_by_version_nibble() {
    for link in [LinkType::RAW, LinkType::RAW_DLT12, LinkType::RAW_DLT14] {
        let p = dec(link, &V4_TCP);
        assert_v4_tcp(&p);
        assert_eq!((p.l3_offset, p.l3_len), (0, 40));
        let p = dec(link, &V6_UDP);
        assert_eq!((p.l3, p.ip_version, p.src), (L3::Ip, 6, V6_SRC));
        let mut bad = V4_TCP;
        bad[0] = 0x55;
        assert_eq!(dec(link, &bad).l3, L3::Malformed(Malformed::BadIpHeader));
        assert_eq!(dec(link, &[]).l3, L3::Malformed(Malformed::TruncatedIp));
    }
}

#[test]
fn ipv4_and_ipv6_link_types_check_the_version() {
    assert_v4_tcp(&dec(LinkType::IPV4, &V4_TCP));
    assert_eq!(dec(LinkType::IPV6, &V6_UDP).ip_version, 6);
    assert_eq!(
        dec(LinkType::IPV4, &V6_UDP).l3,
        L3::Malformed(Malformed::BadIpHeader)
    );
    assert_eq!(
        dec(LinkType::IPV6, &V4_TCP).l3,
        L3::Malformed(Malformed::BadIpHeader)
    );
}

#[test]
fn ppp_framings() {
    let cases: [(LinkType, &[u8], u16); 7] = [
        (LinkType::PPP, &[0x00, 0x21], 2),
        (LinkType::PPP, &[0xff, 0x03, 0x00, 0x21], 4),
        (LinkType::PPP, &[0x21], 1), // protocol-field compression
        (LinkType::PPP_HDLC, &[0xff, 0x03, 0x00, 0x21], 4),
        (LinkType::PPP_HDLC, &[0x00, 0x21], 2),
        (LinkType::PPP_HDLC, &[0x0f, 0x00, 0x08, 0x00], 4), // Cisco HDLC
        (LinkType::PPP_HDLC, &[0xff, 0x03, 0x21], 3),
    ];
    for (link, header, offset) in cases {
        let p = dec(link, &cat(&[header, &V4_TCP]));
        assert_v4_tcp(&p);
        assert_eq!(p.l3_offset, offset, "{link} {header:?}");
    }
    let p = dec(LinkType::PPP, &cat(&[&[0xff, 0x03, 0x00, 0x57], &V6_UDP]));
    assert_eq!((p.l3, p.ip_version), (L3::Ip, 6));
    // LCP is not IP.
    let lcp = dec(LinkType::PPP, &[0xff, 0x03, 0xc0, 0x21, 1, 1, 0, 4]);
    assert_eq!((lcp.l3, lcp.l3_offset), (L3::NonIp, 4));
}

#[test]
fn cisco_hdlc() {
    // Unicast and multicast addresses, and (as tcpdump reads it) any other.
    for address in [0x0f, 0x8f, 0x00] {
        let p = dec(
            LinkType::C_HDLC,
            &cat(&[&[address, 0, 0x08, 0x00], &V4_TCP]),
        );
        assert_v4_tcp(&p);
        assert_eq!((p.l3_offset, p.l3_len), (4, 40));
    }
    let p = dec(LinkType::C_HDLC, &cat(&[&[0x0f, 0, 0x86, 0xdd], &V6_UDP]));
    assert_eq!((p.l3, p.ip_version, p.dst_port), (L3::Ip, 6, 53));
    // SLARP keepalives (0x8035) and CDP (0x2000) are not IP.
    for proto in [[0x80, 0x35], [0x20, 0x00]] {
        let p = dec(LinkType::C_HDLC, &cat(&[&[0x8f, 0], &proto, &[0; 20]]));
        assert_eq!((p.l3, p.l3_offset), (L3::NonIp, 4));
    }
    assert_eq!(
        malformed(LinkType::C_HDLC, &[0x0f, 0, 0x08], 3),
        Malformed::TruncatedLink
    );
}

const SLL_V4: [u8; 16] = [
    0, 0, 0, 1, 0, 6, 0, 0x11, 0x22, 0x33, 0x44, 0x55, 0, 0, 0x08, 0x00,
];
const SLL2_V6: [u8; 20] = [
    0x86, 0xdd, 0, 0, 0, 0, 0, 2, 0, 1, 0, 6, 0, 0x11, 0x22, 0x33, 0x44, 0x55, 0, 0,
];

#[test]
fn sll_direction_from_packet_type() {
    let expect = [
        (0u8, Direction::In),
        (1, Direction::In),
        (2, Direction::In),
        (3, Direction::In),
        (4, Direction::Out),
        (5, Direction::Unknown),
    ];
    for (pkttype, dir) in expect {
        let mut sll = SLL_V4;
        sll[1] = pkttype;
        let p = dec(LinkType::LINUX_SLL, &cat(&[&sll, &V4_TCP]));
        assert_v4_tcp(&p);
        assert_eq!((p.direction, p.l3_offset), (dir, 16), "sll type {pkttype}");

        let mut sll2 = SLL2_V6;
        sll2[10] = pkttype;
        let p = dec(LinkType::LINUX_SLL2, &cat(&[&sll2, &V6_UDP]));
        assert_eq!((p.l3, p.ip_version, p.dst_port), (L3::Ip, 6, 53));
        assert_eq!((p.direction, p.l3_offset), (dir, 20), "sll2 type {pkttype}");
    }
    // The direction is known even for a frame that is not IP.
    let mut arp = SLL_V4;
    (arp[1], arp[15]) = (4, 0x06);
    let p = dec(LinkType::LINUX_SLL, &cat(&[&arp, &[0u8; 28]]));
    assert_eq!((p.l3, p.direction), (L3::NonIp, Direction::Out));
}

#[test]
fn unknown_link_type_is_non_ip() {
    let link = LinkType(147);
    assert!(!link.is_supported());
    assert_eq!(
        (link.name(), link.to_string()),
        ("unknown", "linktype-147".to_string())
    );
    let p = dec(link, &V4_TCP);
    assert_eq!((p.l3, p.l3_offset, p.l3_len), (L3::NonIp, 0, 40));
}

#[test]
fn link_type_names() {
    let all = [
        (LinkType::NULL, 0, "null"),
        (LinkType::ETHERNET, 1, "ethernet"),
        (LinkType::PPP, 9, "ppp"),
        (LinkType::RAW_DLT12, 12, "raw"),
        (LinkType::RAW_DLT14, 14, "raw"),
        (LinkType::PPP_HDLC, 50, "ppp-hdlc"),
        (LinkType::RAW, 101, "raw"),
        (LinkType::C_HDLC, 104, "c-hdlc"),
        (LinkType::LOOP, 108, "loop"),
        (LinkType::LINUX_SLL, 113, "linux-sll"),
        (LinkType::IPV4, 228, "ipv4"),
        (LinkType::IPV6, 229, "ipv6"),
        (LinkType::LINUX_SLL2, 276, "linux-sll2"),
    ];
    for (link, number, name) in all {
        assert_eq!(
            (link.0, link.name(), link.to_string()),
            (number, name, name.to_string())
        );
        assert!(link.is_supported());
    }
}

// ---- IPv4 --------------------------------------------------------------

fn malformed(link: LinkType, frame: &[u8], orig_len: u32) -> Malformed {
    match decode(link, frame, orig_len).l3 {
        L3::Malformed(reason) => reason,
        other => panic!("expected malformed, got {other:?}"),
    }
}

#[test]
fn ipv4_bad_headers() {
    let mut v6_in_v4 = V4_TCP;
    v6_in_v4[0] = 0x65;
    assert_eq!(
        malformed(LinkType::ETHERNET, &eth(0x0800, &v6_in_v4), 54),
        Malformed::BadIpHeader
    );
    let mut ihl4 = V4_TCP;
    ihl4[0] = 0x44;
    let p = dec(LinkType::ETHERNET, &eth(0x0800, &ihl4));
    assert_eq!(p.l3, L3::Malformed(Malformed::BadIpHeader));
    // What was decoded before the failure stays.
    assert_eq!(
        (p.src, p.dst, p.ip_version, p.has_ports),
        (ip(192, 168, 1, 10), ip(10, 0, 0, 1), 4, false)
    );
}

#[test]
fn ipv4_truncated_header() {
    let cut = eth(0x0800, V4_TCP.get(..12).unwrap());
    assert_eq!(
        malformed(LinkType::ETHERNET, &cut, 54),
        Malformed::TruncatedIp
    );
    assert_eq!(
        malformed(LinkType::ETHERNET, &eth(0x0800, &[]), 60),
        Malformed::TruncatedIp
    );
    // IHL 6 needs 24 bytes but the snap length kept 20.
    let mut ihl6 = V4_TCP;
    ihl6[0] = 0x46;
    let p = decode(LinkType::RAW, ihl6.get(..20).unwrap(), 40);
    assert_eq!(p.l3, L3::Malformed(Malformed::TruncatedIp));
    assert_eq!(p.src, ip(192, 168, 1, 10));
}

#[test]
fn ipv4_bad_lengths() {
    let mut short = V4_TCP;
    short[3] = 19; // below the 20-byte header
    assert_eq!(malformed(LinkType::RAW, &short, 40), Malformed::BadIpLength);
    let mut long = V4_TCP;
    long[3] = 41; // one more than the frame had on the wire
    assert_eq!(malformed(LinkType::RAW, &long, 40), Malformed::BadIpLength);
    // A capture cut by the snap length is not malformed: orig_len vouches for the rest.
    let mut big = V4_TCP;
    big[2..4].copy_from_slice(&1500u16.to_be_bytes());
    let p = decode(LinkType::ETHERNET, &eth(0x0800, &big), 1514);
    assert_eq!((p.l3, p.l3_len, p.ip_len), (L3::Ip, 1500, 1500));
}

/// `V4_TCP` with `payload` more bytes and the total length `total`, for
/// super-packets.
fn v4_tcp_super(total: u16, payload: usize) -> Vec<u8> {
    let mut frame = V4_TCP.to_vec();
    frame[2..4].copy_from_slice(&total.to_be_bytes());
    frame.resize(40 + payload, 0xab);
    frame
}

#[test]
fn ipv4_tso_total_length_zero_is_the_frame_length() {
    // TSO from a NIC-offloading host: 1,500 bytes, total length 0.
    let frame = eth(0x0800, &v4_tcp_super(0, 1460));
    let p = dec(LinkType::ETHERNET, &frame);
    assert_eq!((p.l3, p.proto, p.dst_port), (L3::Ip, 6, 80));
    assert_eq!((p.ip_len, p.l3_len), (1500, 1500));
    // BIG TCP past 64 KiB: the length saturates in `ip_len`, and the
    // byte counters get the whole frame.
    let frame = eth(0x0800, &v4_tcp_super(0, 100_000));
    let p = dec(LinkType::ETHERNET, &frame);
    assert_eq!((p.l3, p.ip_len, p.l3_len), (L3::Ip, u16::MAX, 100_040));
    assert_eq!((p.src_port, p.tcp_flags), (12345, tcp::SYN | tcp::ACK));
    // A snap length that kept only the headers: the wire length decides.
    let p = decode(LinkType::ETHERNET, &frame[..54], 100_054);
    assert_eq!((p.l3, p.ip_len, p.l3_len), (L3::Ip, u16::MAX, 100_040));
    // Zero with a header cut short is still truncated, and any other
    // length below the header still bad.
    assert_eq!(
        malformed(LinkType::RAW, &v4_tcp_super(0, 0)[..19], 19),
        Malformed::TruncatedIp
    );
    assert_eq!(
        malformed(LinkType::RAW, &v4_tcp_super(1, 0), 40),
        Malformed::BadIpLength
    );
}

#[test]
fn ipv4_options() {
    // NOP, LSRR (7), TS (8), RR (7), EOL: 24 bytes of options, IHL 11.
    let opts: [u8; 24] = [
        1, 131, 7, 4, 1, 2, 3, 4, 68, 8, 5, 0, 0, 0, 0, 0, 7, 7, 4, 0, 0, 0, 0, 0,
    ];
    let mut hdr = V4_UDP;
    hdr[0] = 0x4b;
    hdr[3] = 32 + 24;
    let frame = cat(&[hdr.get(..20).unwrap(), &opts, hdr.get(20..).unwrap()]);
    let p = dec(LinkType::RAW, &frame);
    assert_eq!(p.l3, L3::Ip);
    assert_eq!(p.ip_options, ipopt::LSRR | ipopt::TS | ipopt::RR);
    assert_eq!((p.src_port, p.dst_port), (5353, 5353));

    // SSRR alone, then a bad option length that ends the walk early.
    let opts: [u8; 12] = [137, 7, 4, 1, 2, 3, 4, 7, 1, 0, 0, 0];
    hdr[0] = 0x48;
    hdr[3] = 32 + 12;
    let frame = cat(&[hdr.get(..20).unwrap(), &opts, hdr.get(20..).unwrap()]);
    let p = dec(LinkType::RAW, &frame);
    assert_eq!((p.l3, p.ip_options), (L3::Ip, ipopt::SSRR));

    // An option whose length runs past the header is ignored, not an error.
    let opts: [u8; 4] = [131, 40, 4, 0];
    hdr[0] = 0x46;
    hdr[3] = 32 + 4;
    let frame = cat(&[hdr.get(..20).unwrap(), &opts, hdr.get(20..).unwrap()]);
    let p = dec(LinkType::RAW, &frame);
    assert_eq!((p.l3, p.ip_options, p.dst_port), (L3::Ip, 0, 5353));
}

#[test]
fn ipv4_fragments() {
    // First fragment: MF, offset 0 — L4 is read.
    let mut first = V4_TCP;
    first[6] = 0x20;
    let p = dec(LinkType::RAW, &first);
    assert_eq!(
        (p.l3, p.frag, p.has_ports, p.dst_port),
        (L3::Ip, frag::MF, true, 80)
    );

    // Later fragment: offset 185 (1480 bytes), MF — no L4, even if tiny.
    let mut later = V4_TCP;
    later[6..8].copy_from_slice(&(0x2000u16 | 185).to_be_bytes());
    later[3] = 24;
    let p = dec(LinkType::RAW, later.get(..24).unwrap());
    assert_eq!((p.l3, p.frag, p.proto), (L3::Ip, frag::MF | frag::LATER, 6));
    assert_eq!((p.has_ports, p.src_port, p.tcp_flags), (false, 0, 0));

    // Last fragment: offset only.
    let mut last = V4_TCP;
    last[6..8].copy_from_slice(&185u16.to_be_bytes());
    assert_eq!(dec(LinkType::RAW, &last).frag, frag::LATER);

    // A first fragment too short for the TCP header (the tiny-fragment attack).
    let mut tiny = V4_TCP;
    (tiny[3], tiny[6]) = (28, 0x20);
    assert_eq!(
        malformed(LinkType::RAW, tiny.get(..28).unwrap(), 28),
        Malformed::TruncatedL4
    );
}

// ---- layer 4 -----------------------------------------------------------

#[test]
fn l4_truncated_by_capture_or_by_ip_length() {
    // Snap length cut the TCP header: the wire had all 40 bytes.
    let p = decode(LinkType::RAW, V4_TCP.get(..30).unwrap(), 40);
    assert_eq!(p.l3, L3::Malformed(Malformed::TruncatedL4));
    assert_eq!(
        (p.src, p.proto, p.has_ports),
        (ip(192, 168, 1, 10), 6, false)
    );
    // The IP length says 30 although 40 bytes were sent: the rest is padding.
    let mut short = V4_TCP;
    short[3] = 30;
    assert_eq!(malformed(LinkType::RAW, &short, 40), Malformed::TruncatedL4);
    // UDP, ICMP and SCTP need 8, 4 and 12 bytes.
    assert_eq!(
        malformed(LinkType::RAW, V4_UDP.get(..27).unwrap(), 32),
        Malformed::TruncatedL4
    );
    assert_eq!(
        malformed(LinkType::RAW, V4_ICMP.get(..23).unwrap(), 28),
        Malformed::TruncatedL4
    );
    let mut sctp = V4_UDP;
    (sctp[9], sctp[3]) = (132, 31);
    assert_eq!(
        malformed(LinkType::RAW, sctp.get(..31).unwrap(), 31),
        Malformed::TruncatedL4
    );
}

#[test]
fn tcp_bad_data_offset() {
    let mut bad = V4_TCP;
    bad[32] = 0x40;
    let p = dec(LinkType::RAW, &bad);
    assert_eq!(p.l3, L3::Malformed(Malformed::BadL4Header));
    assert_eq!((p.src_port, p.dst_port), (12345, 80));
}

#[test]
fn udp_icmp_sctp_and_other_protocols() {
    let p = dec(LinkType::RAW, &V4_UDP);
    assert_eq!((p.l3, p.proto, p.ttl, p.frag), (L3::Ip, 17, 255, 0));
    assert_eq!((p.src, p.dst), (ip(10, 1, 1, 1), ip(224, 0, 0, 251)));
    assert_eq!(
        (p.src_port, p.dst_port, p.has_ports, p.tcp_flags),
        (5353, 5353, true, 0)
    );

    let p = dec(LinkType::RAW, &V4_ICMP);
    assert_eq!(
        (p.proto, p.icmp_type, p.icmp_code, p.has_icmp, p.has_ports),
        (1, 8, 0, true, false)
    );

    let mut sctp = V4_UDP;
    sctp[9] = 132;
    let p = dec(LinkType::RAW, &sctp);
    assert_eq!(
        (p.l3, p.proto, p.src_port, p.has_ports),
        (L3::Ip, 132, 5353, true)
    );

    // GRE with an empty payload: not malformed, no L4 fields.
    let mut gre = V4_UDP;
    (gre[9], gre[3]) = (47, 20);
    let p = dec(LinkType::RAW, gre.get(..20).unwrap());
    assert_eq!(
        (p.l3, p.proto, p.has_ports, p.has_icmp),
        (L3::Ip, 47, false, false)
    );
}

// ---- IPv6 --------------------------------------------------------------

/// IPv6 header with the given payload length and next header, then `rest`.
fn v6(next: u8, rest: &[u8]) -> Vec<u8> {
    let mut h = V6_UDP.get(..40).unwrap().to_vec();
    h[4..6].copy_from_slice(&(rest.len() as u16).to_be_bytes());
    h[6] = next;
    cat(&[&h, rest])
}

const UDP_53: [u8; 8] = [0x9c, 0x40, 0x00, 0x35, 0x00, 0x08, 0x00, 0x00];
const TCP_SYN: [u8; 20] = [
    0x04, 0xd2, 0x00, 0x16, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02, 0xff, 0xff, 0, 0, 0, 0,
];

#[test]
fn ipv6_udp() {
    let p = dec(LinkType::ETHERNET, &eth(0x86dd, &V6_UDP));
    assert_eq!((p.l3, p.ip_version, p.proto), (L3::Ip, 6, 17));
    assert_eq!((p.src, p.dst & 0xff), (V6_SRC, 2));
    assert_eq!((p.tos, p.ttl, p.ip_len, p.l3_len), (0xb8, 64, 56, 56));
    assert_eq!((p.src_port, p.dst_port, p.ext6, p.frag), (40000, 53, 0, 0));
}

#[test]
fn ipv6_malformed_headers() {
    assert_eq!(
        malformed(LinkType::ETHERNET, &eth(0x86dd, &V4_TCP), 54),
        Malformed::BadIpHeader
    );
    let p = decode(LinkType::RAW, V6_UDP.get(..39).unwrap(), 56);
    assert_eq!(
        (p.l3, p.ip_version),
        (L3::Malformed(Malformed::TruncatedIp), 6)
    );
    // Payload length 17 but the wire carried 16.
    let mut long = V6_UDP;
    long[5] = 17;
    let p = dec(LinkType::RAW, &long);
    assert_eq!(
        (p.l3, p.src),
        (L3::Malformed(Malformed::BadIpLength), V6_SRC)
    );
    // Payload length 4: the UDP header is cut by the IP length.
    let mut short = V6_UDP;
    short[5] = 4;
    assert_eq!(malformed(LinkType::RAW, &short, 56), Malformed::TruncatedL4);
}

#[test]
fn ipv6_extension_chain() {
    // Hop-by-hop → destination options → routing → fragment (first, M) → AH → TCP.
    let hbh = [60, 0, 1, 4, 0, 0, 0, 0];
    let dst = [43, 0, 1, 4, 0, 0, 0, 0];
    let rt = [44, 0, 4, 0, 0, 0, 0, 0];
    let fr = [51, 0, 0x00, 0x01, 0, 0, 0, 7];
    let ah = [
        6, 4, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    ];
    let p = dec(
        LinkType::RAW,
        &v6(0, &cat(&[&hbh, &dst, &rt, &fr, &ah, &TCP_SYN])),
    );
    assert_eq!(p.l3, L3::Ip);
    let all = ext6::HOPOPT | ext6::DSTOPT | ext6::ROUTING | ext6::FRAGMENT | ext6::AH;
    assert_eq!((p.ext6, p.frag, p.proto), (all, frag::MF, 6));
    assert_eq!((p.src_port, p.dst_port, p.tcp_flags), (1234, 22, tcp::SYN));
}

#[test]
fn ipv6_later_fragment_and_esp() {
    // Offset 1 (8 bytes), no M: the walk stops, proto is the fragment's next header.
    let p = dec(
        LinkType::RAW,
        &v6(44, &[17, 0, 0x00, 0x08, 0, 0, 0, 9, 1, 2, 3]),
    );
    assert_eq!(
        (p.l3, p.frag, p.ext6, p.proto, p.has_ports),
        (L3::Ip, frag::LATER, ext6::FRAGMENT, 17, false)
    );
    let p = dec(
        LinkType::RAW,
        &v6(60, &[50, 0, 1, 4, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]),
    );
    assert_eq!(
        (p.l3, p.ext6, p.proto),
        (L3::Ip, ext6::DSTOPT | ext6::ESP, 50)
    );
}

#[test]
fn ipv6_bad_extension_headers() {
    // Routing header claims 16 bytes, 8 present.
    assert_eq!(
        malformed(LinkType::RAW, &v6(43, &[17, 1, 0, 0, 0, 0, 0, 0]), 48),
        Malformed::BadExtHeader
    );
    // Only the first byte of a header.
    assert_eq!(
        malformed(LinkType::RAW, &v6(0, &[17]), 41),
        Malformed::BadExtHeader
    );
    // Eight destination-options headers are walked; a ninth is one too many.
    let opt = |next| [next, 0, 1, 4, 0, 0, 0, 0];
    let eight: Vec<u8> = (0..8)
        .flat_map(|i| opt(if i == 7 { 17 } else { 60 }))
        .collect();
    let p = dec(LinkType::RAW, &v6(60, &cat(&[&eight, &UDP_53])));
    assert_eq!((p.l3, p.dst_port), (L3::Ip, 53));
    let nine: Vec<u8> = (0..9)
        .flat_map(|i| opt(if i == 8 { 17 } else { 60 }))
        .collect();
    assert_eq!(
        malformed(LinkType::RAW, &v6(60, &cat(&[&nine, &UDP_53])), 200),
        Malformed::BadExtHeader
    );
}

#[test]
fn ipv6_jumbo_uses_frame_length() {
    // Payload length 0, hop-by-hop with a Jumbo Payload option.
    let hbh = [17, 0, 0xc2, 4, 0, 0, 0, 16];
    let mut frame = v6(0, &cat(&[&hbh, &UDP_53]));
    frame[4..6].copy_from_slice(&[0, 0]);
    let p = dec(LinkType::RAW, &frame);
    assert_eq!(
        (p.l3, p.ext6, p.dst_port, p.ip_len),
        (L3::Ip, ext6::HOPOPT, 53, 56)
    );
    // Payload length 0 without the option: the hop-by-hop header is outside the datagram.
    let mut frame = v6(0, &cat(&[&[17, 0, 1, 4, 0, 0, 0, 0], &UDP_53]));
    frame[4..6].copy_from_slice(&[0, 0]);
    assert_eq!(
        malformed(LinkType::RAW, &frame, 56),
        Malformed::BadExtHeader
    );
}

#[test]
fn ipv6_big_tcp_payload_length_zero_is_the_frame_length() {
    // BIG TCP without the hop-by-hop option: 100,000 bytes of TCP.
    let mut segment = TCP_SYN.to_vec();
    segment.resize(100_000, 0xcd);
    let mut frame = v6(6, &segment);
    frame[4..6].copy_from_slice(&[0, 0]);
    let p = dec(LinkType::RAW, &frame);
    assert_eq!((p.l3, p.proto, p.dst_port), (L3::Ip, 6, 22));
    assert_eq!((p.ip_len, p.l3_len), (u16::MAX, 100_040));
    // Under 64 KiB the 16-bit field could have said it: 0 stays 0, and
    // the TCP header is outside the datagram.
    let mut small = v6(6, &TCP_SYN);
    small[4..6].copy_from_slice(&[0, 0]);
    assert_eq!(malformed(LinkType::RAW, &small, 60), Malformed::TruncatedL4);
    // "No next header" over 64 KiB is not a TSO packet either.
    let mut none = frame.clone();
    none[6] = 59;
    let p = dec(LinkType::RAW, &none);
    assert_eq!((p.l3, p.ip_len, p.proto), (L3::Ip, 40, 59));
}

#[test]
fn icmpv6() {
    let p = dec(LinkType::RAW, &v6(58, &[128, 0, 0x12, 0x34, 0, 1, 0, 1]));
    assert_eq!(
        (p.l3, p.proto, p.icmp_type, p.icmp_code, p.has_icmp),
        (L3::Ip, 58, 128, 0, true)
    );
    assert_eq!(
        malformed(LinkType::RAW, &v6(58, &[128, 0, 0]), 43),
        Malformed::TruncatedL4
    );
}

// ---- the record as a whole ---------------------------------------------

#[test]
fn orig_len_shorter_than_capture_is_raised() {
    let p = decode(LinkType::ETHERNET, &eth(0x0800, &V4_TCP), 0);
    assert_v4_tcp(&p);
    assert_eq!(p.l3_len, 40);
}

#[test]
fn every_malformed_reason_has_a_vector() {
    let mut ihl4 = V4_TCP;
    ihl4[0] = 0x44;
    let mut bad_off = V4_TCP;
    bad_off[32] = 0x40;
    let vectors: [(LinkType, Vec<u8>, u32); 7] = [
        (LinkType::ETHERNET, MACS.to_vec(), 60),
        (LinkType::RAW, V4_TCP.get(..19).unwrap().to_vec(), 40),
        (LinkType::RAW, ihl4.to_vec(), 40),
        (LinkType::RAW, V6_UDP.get(..50).unwrap().to_vec(), 50),
        (LinkType::RAW, v6(0, &[17, 3]), 42),
        (LinkType::RAW, V4_UDP.get(..24).unwrap().to_vec(), 32),
        (LinkType::RAW, bad_off.to_vec(), 40),
    ];
    let seen: Vec<L3> = vectors
        .iter()
        .map(|(link, frame, orig)| decode(*link, frame, *orig).l3)
        .collect();
    let want: Vec<L3> = Malformed::ALL.iter().map(|&m| L3::Malformed(m)).collect();
    assert_eq!(seen, want);
}

#[test]
fn packet_record_stays_small() {
    assert!(
        std::mem::size_of::<Packet>() <= 112,
        "{}",
        std::mem::size_of::<Packet>()
    );
    println!("Packet is {} bytes", std::mem::size_of::<Packet>());
}

#[test]
fn ethernet_addresses_and_type_are_kept() {
    let p = dec(LinkType::ETHERNET, &eth(0x0800, &V4_TCP));
    assert!(p.has_mac);
    assert_eq!(p.mac_dst, [0x00, 0x11, 0x22, 0x33, 0x44, 0x55]);
    assert_eq!(p.mac_src, [0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb]);
    assert_eq!(p.ether_type, 0x0800);
    // Behind a VLAN tag: the inner type, as on the VLAN interface.
    let tagged = eth(0x8100, &cat(&[&[0x20, 0x64, 0x08, 0x00], &V4_TCP]));
    assert_eq!(dec(LinkType::ETHERNET, &tagged).ether_type, 0x0800);
    let arp = dec(LinkType::ETHERNET, &eth(0x0806, &[0; 28]));
    assert_eq!(
        (arp.l3, arp.ether_type, arp.has_mac),
        (L3::NonIp, 0x0806, true)
    );
    // Raw IP has no Ethernet header.
    assert!(!dec(LinkType::RAW, &V4_TCP).has_mac);
}

#[test]
fn ip_and_tcp_header_fields() {
    let p = dec(LinkType::RAW, &V4_TCP);
    assert_eq!(p.ip_id, 0xabcd);
    assert_eq!((p.tcp_seq, p.tcp_ack, p.tcp_win), (1, 0, 0x7210));
    assert_eq!((p.tcp_data_len, p.tcp_opts, p.tcp_mss), (0, 0, 0));
    // A SYN with MSS 1460, SACK permitted, timestamps, window scale and
    // 4 bytes of data.
    let opts = [
        2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 3, 7,
    ];
    let mut tcp = TCP_SYN.to_vec();
    tcp[12] = 0xa0; // 40-byte header
    let segment = cat(&[&tcp, &opts, &[1, 2, 3, 4]]);
    let mut ip = V4_TCP[..20].to_vec();
    ip[2..4].copy_from_slice(&((20 + segment.len()) as u16).to_be_bytes());
    ip[6] = 0x80; // the reserved flag
    let p = dec(LinkType::RAW, &cat(&[&ip, &segment]));
    assert_eq!(p.l3, L3::Ip);
    assert_eq!(p.tcp_mss, 1460);
    let all = tcpopt::MSS | tcpopt::SACK | tcpopt::TS | tcpopt::WINDOW;
    assert_eq!((p.tcp_opts, p.tcp_data_len), (all, 4));
    assert_eq!(p.frag, frag::RF);
    // Options cut by the snap length are read as far as they go.
    let whole = cat(&[&ip, &segment]);
    let cut = decode(LinkType::RAW, &whole[..24 + 20], whole.len() as u32);
    assert_eq!(cut.l3, L3::Ip);
    assert_eq!((cut.tcp_mss, cut.tcp_opts), (1460, tcpopt::MSS));
}

#[test]
fn ipv6_flow_label_and_routing_types() {
    let mut frame = V6_UDP;
    frame[1] = 0x8a;
    frame[2] = 0xbc;
    frame[3] = 0xde;
    let p = dec(LinkType::RAW, &frame);
    assert_eq!((p.tos, p.flow_label), (0xb8, 0xabcde));
    for (kind, bit) in [(0u8, ext6::RTHDR0), (2, ext6::RTHDR2), (4, 0)] {
        let rt = [17, 0, kind, 0, 0, 0, 0, 0];
        let p = dec(LinkType::RAW, &v6(43, &cat(&[&rt, &UDP_53])));
        assert_eq!(p.ext6, ext6::ROUTING | bit, "routing type {kind}");
    }
}
