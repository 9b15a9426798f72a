//! Witness packets: one point of a set, as a field record people read and
//! as a raw IP frame (LINKTYPE_RAW) the real decoder and engine replay.

use crate::bdd::Set;
use crate::space::*;
use serde::Serialize;
use weir_gen::builder as b;
use weir_wire::{addr_from_u128, decode, Direction, LinkType, Packet};

/// One packet of the space.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Point {
    pub ip_version: u8,
    pub proto: u8,
    pub src: String,
    pub dst: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub src_port: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dst_port: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tcp_flags: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub icmp_type: Option<u8>,
    /// A later fragment (offset not 0).
    pub fragment: bool,
    pub more_fragments: bool,
    pub direction: &'static str,
    /// The interface class's name; None for a capture that names none.
    pub interface: Option<String>,
    #[serde(skip)]
    pub iface_class: u16,
    #[serde(skip)]
    raw_src: u128,
    #[serde(skip)]
    raw_dst: u128,
    #[serde(skip)]
    flags: u8,
    #[serde(skip)]
    pub bits: Vec<bool>,
}

impl Point {
    /// A member of `set`, if it has one.
    pub fn pick(s: &Space, set: Set) -> Option<Point> {
        let bits = s.bdd.pick(set)?;
        let v6 = Space::read(&bits, V6) == 1;
        let version = if v6 { 6 } else { 4 };
        let proto = Space::read(&bits, PROTO) as u8;
        let later = Space::read(&bits, LATER) == 1;
        let has_ports = !later && matches!(proto, 6 | 17 | 132);
        let has_icmp = !later && ((!v6 && proto == 1) || (v6 && proto == 58));
        let (src, dst) = if v6 {
            (Space::read(&bits, SRC6), Space::read(&bits, DST6))
        } else {
            let mapped = |f| weir_wire::v4_mapped(Space::read(&bits, f) as u32);
            (mapped(SRC4), mapped(DST4))
        };
        let flags = Space::read(&bits, FLAGS) as u8;
        let class = Space::read(&bits, IFACE) as u16;
        Some(Point {
            ip_version: version,
            proto,
            src: addr_from_u128(src, version).to_string(),
            dst: addr_from_u128(dst, version).to_string(),
            src_port: has_ports.then(|| Space::read(&bits, SPORT) as u16),
            dst_port: has_ports.then(|| Space::read(&bits, DPORT) as u16),
            tcp_flags: (has_ports && proto == 6).then(|| flag_names(flags)),
            icmp_type: has_icmp.then(|| Space::read(&bits, ICMP_TYPE) as u8),
            fragment: later,
            more_fragments: Space::read(&bits, MF) == 1,
            direction: if Space::read(&bits, OUT) == 1 {
                "out"
            } else {
                "in"
            },
            interface: s.ifaces.get(usize::from(class)).cloned().flatten(),
            iface_class: class,
            raw_src: src,
            raw_dst: dst,
            flags,
            bits,
        })
    }

    /// A packet made by hand (tests, enumerations): no ports, flags or
    /// type yet, inbound, interface class 0.
    pub fn manual(version: u8, proto: u8, src: &str, dst: &str) -> Point {
        let parse =
            |a: &str| weir_wire::addr_to_u128(a.parse().expect("a literal address in the caller"));
        Point {
            ip_version: version,
            proto,
            src: src.into(),
            dst: dst.into(),
            src_port: None,
            dst_port: None,
            tcp_flags: None,
            icmp_type: None,
            fragment: false,
            more_fragments: false,
            direction: "in",
            interface: None,
            iface_class: 0,
            raw_src: parse(src),
            raw_dst: parse(dst),
            flags: 0,
            bits: Vec::new(),
        }
    }

    pub fn ports(mut self, src: u16, dst: u16) -> Point {
        (self.src_port, self.dst_port) = (Some(src), Some(dst));
        self
    }

    pub fn flags(mut self, flags: u8) -> Point {
        self.flags = flags;
        self.tcp_flags = Some(flag_names(flags));
        self
    }

    pub fn icmp(mut self, t: u8) -> Point {
        self.icmp_type = Some(t);
        self
    }

    /// A later fragment of this packet.
    pub fn fragment(mut self) -> Point {
        self.fragment = true;
        self
    }

    pub fn dir(&self) -> Direction {
        if self.direction == "out" {
            Direction::Out
        } else {
            Direction::In
        }
    }

    /// The packet as a raw IP frame (LINKTYPE_RAW).
    pub fn frame(&self) -> Vec<u8> {
        let mut buf = Vec::with_capacity(96);
        let frag_v4 =
            if self.fragment { 1 } else { 0 } | if self.more_fragments { b::IP_MF } else { 0 };
        let off = if self.ip_version == 4 {
            let h = b::Ipv4 {
                src: (self.raw_src as u32).to_be_bytes(),
                dst: (self.raw_dst as u32).to_be_bytes(),
                proto: self.proto,
                ttl: 64,
                tos: 0,
                id: 1,
                frag: frag_v4,
            };
            b::ipv4_begin(&mut buf, &h, &[])
        } else {
            let fragmented = self.fragment || self.more_fragments;
            let h = b::Ipv6 {
                src: self.raw_src.to_be_bytes(),
                dst: self.raw_dst.to_be_bytes(),
                next: if fragmented {
                    weir_wire::proto::IPV6_FRAG
                } else {
                    self.proto
                },
                hop_limit: 64,
                flow_label: 0,
            };
            let off = b::ipv6_begin(&mut buf, &h);
            if fragmented {
                let offset = if self.fragment { 8 } else { 0 };
                b::ipv6_frag_ext(&mut buf, self.proto, offset, self.more_fragments, 1);
            }
            off
        };
        let ports = (self.src_port.unwrap_or(0), self.dst_port.unwrap_or(0));
        if self.fragment {
            buf.extend_from_slice(&[0; 8]);
        } else {
            match self.proto {
                6 => {
                    let t = b::Tcp {
                        sport: ports.0,
                        dport: ports.1,
                        seq: 1,
                        ack: 0,
                        flags: self.flags,
                        window: 1024,
                    };
                    b::tcp_begin(&mut buf, &t, &[]);
                }
                17 => {
                    b::udp_begin(&mut buf, ports.0, ports.1);
                }
                132 => {
                    b::put_u16(&mut buf, ports.0);
                    b::put_u16(&mut buf, ports.1);
                    buf.extend_from_slice(&[0; 8]);
                }
                _ => {
                    let t = self.icmp_type.unwrap_or(0);
                    b::icmp_begin(&mut buf, t, 0, [0; 4]);
                }
            }
        }
        if self.ip_version == 4 {
            b::ipv4_finish(&mut buf, off);
        } else {
            b::ipv6_finish(&mut buf, off);
        }
        buf
    }

    /// The packet as the engine sees it: decoded from [`frame`](Self::frame),
    /// with its direction and interface index (the class number; see
    /// [`crate::Analyser::interface_names`]).
    pub fn packet(&self) -> Packet {
        let f = self.frame();
        let mut p = decode(LinkType::RAW, &f, f.len() as u32);
        p.direction = self.dir();
        p.iface = self.iface_class;
        p
    }
}

fn flag_names(flags: u8) -> String {
    const NAMES: [&str; 8] = ["fin", "syn", "rst", "psh", "ack", "urg", "ece", "cwr"];
    let on: Vec<&str> = (0..8)
        .filter(|k| flags >> k & 1 == 1)
        .map(|k| NAMES[k])
        .collect();
    if on.is_empty() {
        "none".into()
    } else {
        on.join(",")
    }
}

/// Witnesses as pcapng into `w`: one named interface per interface class
/// (`ifaces`, from [`crate::Analyser::interface_names`]), the direction in
/// each packet's flags, so `weir explain` replays them as the analysis saw
/// them.
pub fn write_pcapng<'p, W: std::io::Write>(
    w: W,
    ifaces: &[Option<&str>],
    points: impl IntoIterator<Item = &'p Point>,
) -> std::io::Result<()> {
    let mut w = weir_io::PcapngWriter::new(w)?;
    for name in ifaces {
        let iface = weir_io::Interface {
            link_type: LinkType::RAW,
            snaplen: 0,
            name: name.map(str::to_string),
        };
        w.add_interface(&iface)?;
    }
    for p in points {
        let f = p.frame();
        let no_comments: [&str; 0] = [];
        let iface = u32::from(p.iface_class);
        w.write_frame(iface, 0, f.len() as u32, &f, p.dir(), no_comments)?;
    }
    w.flush()
}
