//! Builds the packets an `.expect` table describes, with weir-gen's header
//! writers (correct lengths and checksums), and writes a run's packets to a
//! pcapng whose interfaces carry the names and whose packets carry the
//! directions the table gives.

use crate::expect::{Dir, Packet, PacketLine, L4};
use std::net::IpAddr;
use std::path::Path;
use weir_gen::builder::{self as b, Ipv4, Ipv6, Link, Pseudo, Tcp, Vlan};
use weir_io::{Interface, PcapWriter, PcapngWriter};
use weir_wire::{proto, Direction, LinkType};

/// Where a later fragment starts, in bytes.
const FRAG_OFFSET: u16 = 1480;
/// Payload of a later fragment and of a `proto N` packet.
const OPAQUE: [u8; 8] = [0x5a; 8];

/// The IP datagram (no link header).
pub fn ip_bytes(p: &Packet) -> Vec<u8> {
    let mut buf = Vec::with_capacity(128);
    let proto = p.l4.proto();
    match (p.src, p.dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            let frag = if p.frag { FRAG_OFFSET / 8 } else { 0 };
            let h = Ipv4 {
                src: s.octets(),
                dst: d.octets(),
                proto,
                ttl: 64,
                tos: p.tos,
                id: 1,
                frag,
            };
            let off = b::ipv4_begin(&mut buf, &h, &[]);
            transport(&mut buf, p, Pseudo::V4(h.src, h.dst));
            b::ipv4_finish(&mut buf, off);
        }
        (IpAddr::V6(s), IpAddr::V6(d)) => {
            let h = Ipv6 {
                src: s.octets(),
                dst: d.octets(),
                next: if p.frag { proto::IPV6_FRAG } else { proto },
                hop_limit: 64,
                flow_label: 0,
            };
            let off = b::ipv6_begin(&mut buf, &h);
            // Traffic class: the 8 bits after the version.
            buf[off] = 0x60 | (p.tos >> 4);
            buf[off + 1] |= p.tos << 4;
            if p.frag {
                b::ipv6_frag_ext(&mut buf, proto, FRAG_OFFSET, false, 1);
            }
            transport(&mut buf, p, Pseudo::V6(h.src, h.dst));
            b::ipv6_finish(&mut buf, off);
        }
        _ => unreachable!("the parser refuses mixed families"),
    }
    buf
}

fn transport(buf: &mut Vec<u8>, p: &Packet, pseudo: Pseudo) {
    if p.frag {
        buf.extend_from_slice(&OPAQUE);
        return;
    }
    match p.l4 {
        L4::Tcp {
            sport,
            dport,
            flags,
        } => {
            let h = Tcp {
                sport,
                dport,
                seq: 1,
                ack: if flags & b::TCP_ACK != 0 { 1 } else { 0 },
                flags,
                window: 65535,
            };
            let off = b::tcp_begin(buf, &h, &[]);
            b::l4_seal(buf, off, b::TCP_CSUM_AT, pseudo, proto::TCP);
        }
        L4::Udp { sport, dport } => {
            let off = b::udp_begin(buf, sport, dport);
            buf.extend_from_slice(&OPAQUE[..4]);
            b::udp_seal(buf, off, pseudo);
        }
        L4::Icmp { typ, code } => {
            let off = b::icmp_begin(buf, typ, code, [0, 1, 0, 1]);
            if matches!(typ, 3 | 4 | 5 | 11 | 12) {
                buf.extend_from_slice(&quoted(p));
            }
            b::l4_seal(buf, off, b::ICMP_CSUM_AT, Pseudo::None, proto::ICMP);
        }
        L4::Icmp6 { typ, code } => {
            let off = b::icmp_begin(buf, typ, code, [0, 1, 0, 1]);
            if typ < 128 {
                buf.extend_from_slice(&quoted(p));
            }
            b::l4_seal(buf, off, b::ICMP_CSUM_AT, pseudo, proto::ICMPV6);
        }
        L4::Proto(_) => buf.extend_from_slice(&OPAQUE),
    }
}

/// What an ICMP error quotes: the IP header and first 8 bytes of a UDP
/// datagram the receiver of the error had sent to its sender.
fn quoted(p: &Packet) -> Vec<u8> {
    let sent = Packet {
        src: p.dst,
        dst: p.src,
        l4: L4::Udp {
            sport: 40000,
            dport: 33434,
        },
        frag: false,
        tos: 0,
    };
    let mut ip = ip_bytes(&sent);
    let header = if p.src.is_ipv4() { 20 } else { 40 };
    ip.truncate(header + 8);
    ip
}

/// The frame as captured: raw IP, or behind an Ethernet header.
pub fn frame(line: &PacketLine) -> Vec<u8> {
    let ip = ip_bytes(&line.packet);
    if !line.ether {
        return ip;
    }
    let link = Link {
        src: [0x02, 0, 0, 0, 0, 0x01],
        dst: [0x02, 0, 0, 0, 0, 0x02],
        vlan: Vlan::None,
    };
    let ethertype = if line.packet.src.is_ipv4() {
        b::ETH_IPV4
    } else {
        b::ETH_IPV6
    };
    let mut f = Vec::with_capacity(14 + ip.len());
    b::ethernet(&mut f, &link, ethertype);
    f.extend_from_slice(&ip);
    f
}

/// First timestamp of a capture; packets follow 1 ms apart.
const T0_NS: u64 = 1_700_000_000_000_000_000;
const STEP_NS: u64 = 1_000_000;

/// Writes the packets (each `repeat` times) to a pcapng with one interface
/// per name and framing, in order of first use.
pub fn write_pcapng(path: &Path, packets: &[PacketLine]) {
    let file = std::fs::File::create(path).unwrap();
    let mut w = PcapngWriter::new(file).unwrap();
    let mut ifaces: Vec<(String, bool)> = Vec::new();
    let mut ts = T0_NS;
    for line in packets {
        let key = (line.iface.clone(), line.ether);
        let id = match ifaces.iter().position(|k| *k == key) {
            Some(i) => i as u32,
            None => {
                let link_type = if line.ether {
                    LinkType::ETHERNET
                } else {
                    LinkType::RAW
                };
                ifaces.push(key);
                w.add_interface(&Interface {
                    link_type,
                    snaplen: 0,
                    name: Some(line.iface.clone()),
                })
                .unwrap()
            }
        };
        let dir = match line.dir {
            Dir::In => Direction::In,
            Dir::Out => Direction::Out,
        };
        let data = frame(line);
        for _ in 0..line.repeat {
            w.write_frame(id, ts, data.len() as u32, &data, dir, None::<&[u8]>)
                .unwrap();
            ts += STEP_NS;
        }
    }
    w.flush().unwrap();
}

/// Writes the IP datagrams, once each, to a raw-IP pcap (for tcpdump).
pub fn write_raw_pcap(path: &Path, packets: &[&Packet]) {
    let file = std::fs::File::create(path).unwrap();
    let mut w = PcapWriter::new(file, LinkType::RAW, 65535, true).unwrap();
    for (k, p) in packets.iter().enumerate() {
        let data = ip_bytes(p);
        w.write_frame(T0_NS + k as u64 * STEP_NS, data.len() as u32, &data)
            .unwrap();
    }
    w.flush().unwrap();
}
