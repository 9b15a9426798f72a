//! A small ClassBench-like generator of rulesets and matching traces, for
//! the classifier's tests and benches (until `weir gen-rules` replaces it).
//!
//! Like ClassBench's seeds, addresses are prefixes drawn around a pool of
//! nested networks (so rules overlap and nest), ports are wildcards,
//! ranges or exact, protocols tcp/udp/any; the three kinds differ in their
//! mix: `acl` mostly specific (hosts and exact ports), `fw` wildcard-heavy
//! with port ranges, `ipc` in between. Traces pick a rule and make a
//! header inside it, as ClassBench's trace generator does, plus some
//! random headers. `extras` adds what the classifier must handle without
//! indexing: count, skipto, call/return, log, or-blocks, `not`, options,
//! `me`, IPv6.
#![allow(dead_code)]

use weir_wire::{v4_mapped, Direction, Packet, L3};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Acl,
    Fw,
    Ipc,
}

impl Kind {
    pub const ALL: [Kind; 3] = [Kind::Acl, Kind::Fw, Kind::Ipc];
    pub fn name(self) -> &'static str {
        match self {
            Kind::Acl => "acl",
            Kind::Fw => "fw",
            Kind::Ipc => "ipc",
        }
    }
}

/// xorshift64*: seeded, no dependency.
pub struct Rng(u64);
impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }
}

/// One generated rule's header, kept to make matching packets.
#[derive(Clone, Debug)]
pub struct Header {
    pub src: (u32, u8),
    pub dst: (u32, u8),
    pub sport: (u16, u16),
    pub dport: (u16, u16),
    /// 0: any.
    pub proto: u8,
    pub v6: bool,
}

pub struct Ruleset {
    pub text: String,
    pub headers: Vec<Header>,
}

const PORTS: [u16; 12] = [80, 443, 22, 25, 53, 123, 1521, 3306, 8080, 161, 389, 5060];

fn prefix_len(kind: Kind, rng: &mut Rng, side_dst: bool) -> u8 {
    let wild = match (kind, side_dst) {
        (Kind::Acl, false) => 8,
        (Kind::Acl, true) => 2,
        (Kind::Fw, false) => 35,
        (Kind::Fw, true) => 25,
        (Kind::Ipc, false) => 15,
        (Kind::Ipc, true) => 10,
    };
    if rng.chance(wild) {
        return 0;
    }
    let lens: &[u8] = match kind {
        Kind::Acl => &[
            32, 32, 32, 31, 30, 29, 28, 27, 26, 24, 24, 23, 22, 21, 20, 16, 12, 8,
        ],
        Kind::Fw => &[32, 32, 30, 29, 28, 24, 24, 24, 22, 20, 16, 16, 12, 8],
        Kind::Ipc => &[32, 32, 32, 30, 29, 28, 26, 24, 24, 22, 20, 18, 16, 8],
    };
    rng.pick(lens)
}

fn ports(kind: Kind, rng: &mut Rng, side_dst: bool) -> (u16, u16) {
    let r = rng.below(100);
    let (wild, hi, exact) = match (kind, side_dst) {
        (Kind::Acl, false) => (90, 95, 100),
        (Kind::Acl, true) => (25, 35, 90),
        (Kind::Fw, false) => (75, 90, 95),
        (Kind::Fw, true) => (40, 55, 85),
        (Kind::Ipc, false) => (70, 85, 95),
        (Kind::Ipc, true) => (40, 50, 90),
    };
    if r < wild {
        (0, 65535)
    } else if r < hi {
        rng.pick(&[(1024, 65535), (0, 1023), (49152, 65535)])
    } else if r < exact {
        let p = if rng.chance(60) {
            rng.pick(&PORTS)
        } else {
            rng.below(65536) as u16
        };
        (p, p)
    } else {
        let a = rng.below(65000) as u16;
        (a, a + rng.below(500) as u16)
    }
}

fn spec(addr: (u32, u8)) -> String {
    if addr.1 == 0 {
        "any".into()
    } else {
        format!("{}/{}", std::net::Ipv4Addr::from(addr.0), addr.1)
    }
}

fn port_spec((lo, hi): (u16, u16)) -> String {
    match (lo, hi) {
        (0, 65535) => String::new(),
        (a, b) if a == b => format!(" {a}"),
        (a, b) => format!(" {a}-{b}"),
    }
}

/// `n` rules of `kind` (plus the implicit default rule), seeded.
pub fn ruleset(kind: Kind, n: usize, seed: u64, extras: bool) -> Ruleset {
    let mut rng = Rng::new(seed ^ n as u64 ^ (kind as u64) << 32);
    // Networks rules nest in: about sqrt(n) /8../16 bases, each with a few
    // /24s, so prefixes of many lengths overlap.
    let bases: Vec<u32> = (0..(n as f64).sqrt() as usize + 4)
        .map(|_| (rng.next() as u32) & 0xffff_0000)
        .collect();
    let subnets: Vec<u32> = (0..bases.len() * 4)
        .map(|_| rng.pick(&bases) | (rng.below(64) as u32) << 8)
        .collect();
    let addr = |rng: &mut Rng, dst: bool| {
        let len = prefix_len(kind, rng, dst);
        let a = rng.pick(&subnets) | rng.below(256) as u32;
        let mask = u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0);
        (a & mask, len)
    };
    let mut text = String::new();
    let mut headers = Vec::with_capacity(n);
    for i in 0..n {
        let number = 1 + (i * 65000 / n.max(1)) as u32;
        let proto = match rng.below(100) {
            0..60 => 6,
            60..85 => 17,
            85..90 if extras => 1,
            _ => 0,
        };
        let v6 = extras && rng.chance(3);
        let src = addr(&mut rng, false);
        let dst = addr(&mut rng, true);
        let (sport, dport) = if proto == 6 || proto == 17 {
            (ports(kind, &mut rng, false), ports(kind, &mut rng, true))
        } else {
            ((0, 65535), (0, 65535))
        };
        let mut action = if rng.chance(50) { "allow" } else { "deny" }.to_string();
        let mut options = String::new();
        let mut proto_text = match proto {
            6 => "tcp".to_string(),
            17 => "udp".to_string(),
            1 => "icmp".to_string(),
            _ => "ip".to_string(),
        };
        let (mut src_text, mut dst_text) = (spec(src), spec(dst));
        if v6 {
            src_text = if src.1 == 0 {
                "any".into()
            } else {
                format!("2001:db8:{:x}::/48", src.0 >> 16)
            };
            dst_text = if dst.1 == 0 {
                "any".into()
            } else {
                format!("2001:db8:{:x}::/64", dst.0 >> 16)
            };
        }
        if extras {
            let later = |rng: &mut Rng| number + 1 + rng.below(2000) as u32;
            match rng.below(100) {
                0..8 => action = "count".into(),
                8..11 => action = format!("skipto {}", later(&mut rng).min(65534)),
                11..13 => action = format!("call {}", later(&mut rng).min(65534)),
                13..15 => action = "return".into(),
                15..18 => action = format!("{action} log"),
                _ => {}
            }
            match rng.below(100) {
                0..4 => options = " in".into(),
                4..6 if proto == 6 => options = " setup".into(),
                6..8 if proto == 6 => options = " tcpflags syn,!ack".into(),
                8..10 => options = " iplen 40-1000".into(),
                10..12 => src_text = format!("not {src_text}"),
                12..14 => src_text = "me".into(),
                14..16 if proto == 0 => proto_text = "{ tcp or udp }".into(),
                16..18 if !v6 => dst_text = format!("{{ {dst_text} or 10.9.9.9 }}"),
                18..20 => options = " out via eth*".into(),
                _ => {}
            }
            if src_text == "not any" {
                src_text = "any".into();
            }
        }
        let line = format!(
            "{number} {action} {proto_text} from {src_text}{} to {dst_text}{}{options}\n",
            port_spec(sport),
            port_spec(dport)
        );
        text.push_str(&line);
        headers.push(Header {
            src,
            dst,
            sport,
            dport,
            proto,
            v6,
        });
    }
    Ruleset { text, headers }
}

/// `count` packets: most inside a random rule's header (random host bits
/// and ports within its ranges), the rest random over the same networks.
pub fn trace(rules: &Ruleset, count: usize, seed: u64) -> Vec<Packet> {
    let mut rng = Rng::new(seed);
    let n = rules.headers.len().max(1);
    (0..count)
        .map(|_| {
            let h = rules.headers.get(rng.below(n as u64) as usize);
            let random = h.is_none() || rng.chance(10);
            let inside = |rng: &mut Rng, (a, len): (u32, u8)| {
                let host = u32::MAX.checked_shr(u32::from(len)).unwrap_or(0);
                a | (rng.next() as u32 & host)
            };
            let port =
                |rng: &mut Rng, (lo, hi): (u16, u16)| lo + rng.below(u64::from(hi - lo) + 1) as u16;
            let (src, dst, sp, dp, proto, v6) = match h {
                Some(h) if !random => (
                    inside(&mut rng, h.src),
                    inside(&mut rng, h.dst),
                    port(&mut rng, h.sport),
                    port(&mut rng, h.dport),
                    if h.proto == 0 {
                        rng.pick(&[6, 17, 1, 47])
                    } else {
                        h.proto
                    },
                    h.v6,
                ),
                _ => (
                    rng.next() as u32,
                    rng.next() as u32,
                    rng.below(65536) as u16,
                    rng.pick(&PORTS),
                    rng.pick(&[6, 17, 1]),
                    false,
                ),
            };
            let l4 = proto == 6 || proto == 17;
            let (src, dst) = if v6 {
                let mut six = |a: u32| {
                    (0x2001_0db8u128 << 96) | u128::from(a >> 16) << 80 | u128::from(rng.next())
                };
                (six(src), six(dst))
            } else {
                (v4_mapped(src), v4_mapped(dst))
            };
            Packet {
                src,
                dst,
                l3: L3::Ip,
                ip_version: if v6 { 6 } else { 4 },
                proto,
                src_port: if l4 { sp } else { 0 },
                dst_port: if l4 { dp } else { 0 },
                has_ports: l4,
                tcp_flags: if proto == 6 {
                    rng.pick(&[0x02, 0x10, 0x12, 0x18])
                } else {
                    0
                },
                has_icmp: proto == 1,
                ip_len: 40 + rng.below(1400) as u16,
                l3_len: 60,
                ttl: 64,
                direction: if rng.chance(50) {
                    Direction::In
                } else {
                    Direction::Out
                },
                ..Packet::default()
            }
        })
        .collect()
}
