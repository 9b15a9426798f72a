//! Property tests: no input panics the decoder, and on well-formed frames
//! built by etherparse the decoder agrees with etherparse's own parse.

use etherparse::{
    LinkExtHeader, LinkHeader, NetHeaders, PacketBuilder, PacketHeaders, TransportHeader, VlanId,
};
use proptest::prelude::*;
use weir_wire::{decode, decode_with, tcp, v4_mapped, Fields, LinkType, Packet, L3};

const LINK_TYPES: [LinkType; 12] = [
    LinkType::NULL,
    LinkType::ETHERNET,
    LinkType::PPP,
    LinkType::RAW_DLT12,
    LinkType::RAW_DLT14,
    LinkType::PPP_HDLC,
    LinkType::RAW,
    LinkType::LOOP,
    LinkType::LINUX_SLL,
    LinkType::IPV4,
    LinkType::IPV6,
    LinkType::LINUX_SLL2,
];

fn link_type() -> impl Strategy<Value = LinkType> {
    prop_oneof![
        4 => proptest::sample::select(LINK_TYPES.to_vec()),
        1 => any::<u32>().prop_map(LinkType),
    ]
}

/// Invariants every decoded record keeps, whatever the input.
fn check_invariants(p: &Packet, frame_len: usize, orig_len: u32) {
    let wire = orig_len.max(frame_len as u32);
    assert!(p.l3_len <= wire);
    assert_eq!(p.l3_len, wire.saturating_sub(u32::from(p.l3_offset)));
    if p.l3 == L3::Ip {
        assert!(p.ip_version == 4 || p.ip_version == 6);
        assert!(usize::from(p.l3_offset) <= frame_len);
    }
    if p.l3 == L3::NonIp {
        assert_eq!((p.ip_version, p.has_ports, p.has_icmp), (0, false, false));
    }
}

/// A plausible link header and IP version nibble before `body`, so the IP
/// and L4 code sees most of the traffic rather than the link code.
fn ip_frame(link: LinkType, v6: bool, body: &[u8]) -> Vec<u8> {
    let (header, version): (&[u8], u8) = match (link, v6) {
        (LinkType::ETHERNET, false) => (&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x08, 0x00], 0x45),
        (LinkType::ETHERNET, true) => (&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x86, 0xdd], 0x60),
        (LinkType::NULL | LinkType::LOOP, false) => (&[0, 0, 0, 2], 0x45),
        (LinkType::NULL | LinkType::LOOP, true) => (&[0, 0, 0, 30], 0x60),
        (LinkType::PPP | LinkType::PPP_HDLC, false) => (&[0xff, 0x03, 0x00, 0x21], 0x45),
        (LinkType::PPP | LinkType::PPP_HDLC, true) => (&[0xff, 0x03, 0x00, 0x57], 0x60),
        (LinkType::LINUX_SLL, _) => (
            &[0, 4, 0, 1, 0, 6, 1, 2, 3, 4, 5, 6, 0, 0, 0x08, 0x00],
            0x45,
        ),
        (LinkType::LINUX_SLL2, _) => (
            &[
                0x86, 0xdd, 0, 0, 0, 0, 0, 1, 0, 1, 0, 6, 1, 2, 3, 4, 5, 6, 0, 0,
            ],
            0x60,
        ),
        (_, false) => (&[], 0x45),
        (_, true) => (&[], 0x60),
    };
    let mut frame = header.to_vec();
    frame.push(version | (body.first().copied().unwrap_or(0) & 0x0f));
    frame.extend_from_slice(body);
    frame
}

proptest! {
    /// Decoding fewer fields changes nothing else: not whether the frame
    /// is IP, not why it is malformed, not any field that was asked for.
    #[test]
    fn a_field_set_skips_only_its_fields(
        link in proptest::sample::select(LINK_TYPES.to_vec()),
        v6 in any::<bool>(),
        body in proptest::collection::vec(any::<u8>(), 0..160),
        tcp in tcp_frame(),
        case in case(),
        fields in fields(),
    ) {
        let frames = [
            (link, ip_frame(link, v6, &body)),
            (LinkType::ETHERNET, tcp),
            (LinkType::ETHERNET, build(&case)),
        ];
        for (link, frame) in frames {
            let full = decode(link, &frame, frame.len() as u32);
            let some = decode_with(link, &frame, frame.len() as u32, fields);
            prop_assert_eq!(some, fields.keep(&full), "{:?} on {:02x?}", fields, frame);
            prop_assert_eq!(decode_with(link, &frame, frame.len() as u32, Fields::ALL), full);
        }
    }

    #[test]
    fn random_bytes_never_panic(
        link in link_type(),
        frame in proptest::collection::vec(any::<u8>(), 0..256),
        orig_len in any::<u32>(),
    ) {
        let p = decode(link, &frame, orig_len);
        check_invariants(&p, frame.len(), orig_len);
    }

    /// Random bytes behind a plausible link header and IP version nibble, so
    /// the IP and L4 code sees most of the traffic rather than the link code.
    #[test]
    fn random_ip_never_panics(
        link in proptest::sample::select(LINK_TYPES.to_vec()),
        v6 in any::<bool>(),
        body in proptest::collection::vec(any::<u8>(), 0..160),
        extra in 0u32..100,
    ) {
        let frame = ip_frame(link, v6, &body);
        let orig_len = frame.len() as u32 + extra;
        let p = decode(link, &frame, orig_len);
        check_invariants(&p, frame.len(), orig_len);
    }

    #[test]
    fn agrees_with_etherparse(case in case()) {
        let frame = build(&case);
        let p = decode(LinkType::ETHERNET, &frame, frame.len() as u32);
        let theirs = PacketHeaders::from_ethernet_slice(&frame).expect("etherparse parses what it built");
        prop_assert_eq!(p.l3, L3::Ip);

        let vlan = theirs.link_exts.first().and_then(|ext| match ext {
            LinkExtHeader::Vlan(v) => Some(v.vlan_id.value()),
            _ => None,
        });
        prop_assert_eq!(p.vlan, vlan);
        if let Some(LinkHeader::Ethernet2(e)) = &theirs.link {
            prop_assert_eq!((p.mac_dst, p.mac_src), (e.destination, e.source));
        }
        match theirs.net {
            Some(NetHeaders::Ipv4(h, _)) => {
                prop_assert_eq!(p.ip_version, 4);
                prop_assert_eq!(p.ip_id, h.identification);
                prop_assert_eq!(p.src, v4_mapped(u32::from_be_bytes(h.source)));
                prop_assert_eq!(p.dst, v4_mapped(u32::from_be_bytes(h.destination)));
                prop_assert_eq!((p.ttl, p.proto, p.ip_len), (h.time_to_live, h.protocol.0, h.total_len));
            }
            Some(NetHeaders::Ipv6(h, _)) => {
                prop_assert_eq!(p.ip_version, 6);
                prop_assert_eq!(p.src, u128::from_be_bytes(h.source));
                prop_assert_eq!(p.dst, u128::from_be_bytes(h.destination));
                prop_assert_eq!((p.ttl, p.proto, p.tos), (h.hop_limit, h.next_header.0, h.traffic_class));
                prop_assert_eq!(p.ip_len, 40 + h.payload_length);
                prop_assert_eq!(p.flow_label, h.flow_label.value());
            }
            other => prop_assert!(false, "etherparse saw {:?}", other),
        }
        match theirs.transport {
            Some(TransportHeader::Tcp(t)) => {
                prop_assert_eq!((p.src_port, p.dst_port, p.has_ports), (t.source_port, t.destination_port, true));
                let flags = [
                    (t.fin, tcp::FIN), (t.syn, tcp::SYN), (t.rst, tcp::RST), (t.psh, tcp::PSH),
                    (t.ack, tcp::ACK), (t.urg, tcp::URG), (t.ece, tcp::ECE), (t.cwr, tcp::CWR),
                ];
                let want = flags.iter().filter(|(set, _)| *set).fold(0, |acc, (_, bit)| acc | bit);
                prop_assert_eq!(p.tcp_flags, want);
                prop_assert_eq!((p.tcp_seq, p.tcp_ack, p.tcp_win), (t.sequence_number, t.acknowledgment_number, t.window_size));
            }
            Some(TransportHeader::Udp(u)) => {
                prop_assert_eq!((p.src_port, p.dst_port, p.has_ports), (u.source_port, u.destination_port, true));
                prop_assert_eq!(p.tcp_flags, 0);
            }
            other => prop_assert!(false, "etherparse saw {:?}", other),
        }
    }
}

/// One well-formed Ethernet frame to build.
#[derive(Clone, Debug)]
struct Case {
    vlan: Option<u16>,
    v6: bool,
    src4: [u8; 4],
    dst4: [u8; 4],
    src6: [u8; 16],
    dst6: [u8; 16],
    ttl: u8,
    tcp: bool,
    ports: (u16, u16),
    flags: u8,
    payload: Vec<u8>,
}

/// An Ethernet IPv4 TCP segment with a random header (data offset 5 to
/// 15), options drawn from the kinds ipfw names and any others, and a
/// payload: the TCP fields' own code, most of the time.
fn tcp_frame() -> impl Strategy<Value = Vec<u8>> {
    let option = prop_oneof![
        Just(vec![1u8]),
        Just(vec![0u8]),
        any::<u16>().prop_map(|mss| vec![2, 4, (mss >> 8) as u8, mss as u8]),
        Just(vec![3, 3, 7]),
        Just(vec![4, 2]),
        Just(vec![8, 10, 0, 0, 0, 1, 0, 0, 0, 2]),
        proptest::collection::vec(any::<u8>(), 1..6),
    ];
    (
        any::<[u8; 20]>(),
        proptest::collection::vec(option, 0..6),
        proptest::collection::vec(any::<u8>(), 0..40),
        any::<[u8; 4]>(),
    )
        .prop_map(|(mut th, options, payload, ip)| {
            let opts: Vec<u8> = options.concat();
            let words = (opts.len().div_ceil(4)).min(10);
            th[12] = ((5 + words) as u8) << 4 | (th[12] & 0x0f);
            let mut seg = th.to_vec();
            seg.extend(
                opts.iter()
                    .copied()
                    .chain(std::iter::repeat(0))
                    .take(words * 4),
            );
            seg.extend_from_slice(&payload);
            let total = (20 + seg.len()) as u16;
            let mut frame = vec![1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0x08, 0x00];
            frame.extend_from_slice(&[
                0x45,
                ip[0],
                (total >> 8) as u8,
                total as u8,
                ip[1],
                ip[2],
                0x40,
                0,
                64,
                6,
                0,
                0,
            ]);
            frame.extend_from_slice(&[10, 0, 0, ip[3], 192, 0, 2, 1]);
            frame.extend_from_slice(&seg);
            frame
        })
}

fn fields() -> impl Strategy<Value = Fields> {
    any::<u8>().prop_map(Fields::from_bits)
}

fn case() -> impl Strategy<Value = Case> {
    (
        proptest::option::of(0u16..4096),
        any::<bool>(),
        any::<([u8; 4], [u8; 4], [u8; 16], [u8; 16])>(),
        any::<u8>(),
        any::<bool>(),
        any::<(u16, u16)>(),
        any::<u8>(),
        proptest::collection::vec(any::<u8>(), 0..64),
    )
        .prop_map(
            |(vlan, v6, (src4, dst4, src6, dst6), ttl, tcp, ports, flags, payload)| Case {
                vlan,
                v6,
                src4,
                dst4,
                src6,
                dst6,
                ttl,
                tcp,
                ports,
                flags,
                payload,
            },
        )
}

/// Finishes a builder step that has reached the IP layer. A macro because
/// etherparse's steps are distinct types with no common trait.
macro_rules! transport {
    ($ip:expr, $c:expr) => {{
        let c = $c;
        let mut out = Vec::new();
        if c.tcp {
            let mut b = $ip.tcp(c.ports.0, c.ports.1, 1, 1024);
            let set = |bit: u8| c.flags & bit != 0;
            if set(tcp::FIN) {
                b = b.fin();
            }
            if set(tcp::SYN) {
                b = b.syn();
            }
            if set(tcp::RST) {
                b = b.rst();
            }
            if set(tcp::PSH) {
                b = b.psh();
            }
            if set(tcp::ACK) {
                b = b.ack(7);
            }
            if set(tcp::URG) {
                b = b.urg(3);
            }
            if set(tcp::ECE) {
                b = b.ece();
            }
            if set(tcp::CWR) {
                b = b.cwr();
            }
            b.write(&mut out, &c.payload).unwrap();
        } else {
            $ip.udp(c.ports.0, c.ports.1)
                .write(&mut out, &c.payload)
                .unwrap();
        }
        out
    }};
}

macro_rules! network {
    ($link:expr, $c:expr) => {
        if $c.v6 {
            transport!($link.ipv6($c.src6, $c.dst6, $c.ttl), $c)
        } else {
            transport!($link.ipv4($c.src4, $c.dst4, $c.ttl), $c)
        }
    };
}

fn build(c: &Case) -> Vec<u8> {
    let eth = PacketBuilder::ethernet2([1, 2, 3, 4, 5, 6], [7, 8, 9, 10, 11, 12]);
    match c.vlan {
        Some(id) => network!(eth.single_vlan(VlanId::try_new(id).unwrap()), c),
        None => network!(eth, c),
    }
}
