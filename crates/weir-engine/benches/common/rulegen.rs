//! Rulesets and traces for the classifier's differential tests and benches:
//! `weir_classbench::gen`'s acl/fw/ipc-like filter sets and header traces,
//! imported with ipfw's semantics (`to_weir::import`), plus, with
//! `extras`, deny rules and what the classifier must handle without
//! indexing it: count, skipto, call/return, log, or-blocks, `not`, `me`,
//! a lookup table, options and IPv6. The decorations draw from their own seeded stream, so
//! without them a set is what `weir gen-rules --like KIND -n N --seed S`
//! writes, imported as `weir import classbench` does.
#![allow(dead_code)]

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use weir_classbench::gen;
use weir_classbench::to_weir::import;
use weir_classbench::Filter;
use weir_gen::Rng;
use weir_rules::{Action, Addr, FlagSpec, Log, Opt, OptionItem, Proto, Rule, Span};
use weir_wire::proto::WITH_PORTS;
use weir_wire::{v4_mapped, Direction, Packet, L3};

pub use weir_classbench::gen::Kind;

/// The address `me` stands for, and the or-blocks' extra member.
pub const ME: u32 = 0x0a09_0909;
/// The lookup table some decorated rules match their destination in.
pub const TABLE: &str = "dsts";

pub struct Ruleset {
    pub text: String,
    filters: Vec<Filter>,
    /// Per rule: its addresses were moved to IPv6 (2001:db8::/32).
    v6: Vec<bool>,
}

/// `n` rules of `kind` (plus the default rule), seeded.
pub fn ruleset(kind: Kind, n: usize, seed: u64, extras: bool) -> Ruleset {
    let filters = gen::filters(kind, n, seed);
    let mut rs = import(&filters);
    let mut v6 = vec![false; n];
    let mut table = BTreeSet::new();
    if extras {
        let mut rng = Rng::new(seed ^ 0xdec0_4a7e);
        for (rule, v6) in rs.rules.iter_mut().zip(&mut v6) {
            *v6 = decorate(rule, &mut rng, &mut table);
        }
    }
    let mut text: String = table
        .iter()
        .map(|(net, len)| format!("table {TABLE} add {}/{len}\n", Ipv4Addr::from(*net)))
        .collect();
    text.push_str(&weir_rules::print_ruleset(&rs));
    Ruleset { text, filters, v6 }
}

fn option(opt: Opt) -> OptionItem {
    OptionItem {
        not: false,
        opt,
        span: Span::default(),
    }
}

fn is_any(proto: &[Proto]) -> bool {
    proto == [Proto::Any]
}

fn tcp_only(proto: &[Proto]) -> bool {
    matches!(proto, [Proto::Name(p, _)] if p == "tcp")
}

/// The IPv6 prefix a decorated rule uses for an IPv4 one: the top 16 bits
/// after 2001:db8, /48 for sources and /64 for destinations.
fn six(a: u32, len: u8) -> Addr {
    let net = (0x2001_0db8u128 << 96) | u128::from(a >> 16) << 80;
    Addr::Prefix(IpAddr::V6(Ipv6Addr::from(net)), len)
}

/// Decorates one imported rule; true when its addresses became IPv6.
fn decorate(rule: &mut Rule, rng: &mut Rng, table: &mut BTreeSet<(u32, u8)>) -> bool {
    let later = |rng: &mut Rng, n: u16| (u32::from(n) + 1 + rng.below(2000)).min(65534) as u16;
    match rng.below(100) {
        0..8 => rule.action = Action::Count,
        8..11 => rule.action = Action::Skipto(later(rng, rule.number)),
        11..13 => rule.action = Action::Call(later(rng, rule.number)),
        13..15 => rule.action = Action::Return,
        15..18 => rule.log = Some(Log { amount: None }),
        18..58 => rule.action = Action::Deny,
        _ => {}
    }
    let body = &mut rule.body;
    let v4 = |a: &Addr| match *a {
        Addr::Prefix(IpAddr::V4(ip), len) => Some((u32::from(ip), len)),
        _ => None,
    };
    let (src, dst) = (body.src.items.clone(), body.dst.items.clone());
    let v6 = !body.src.not && rng.percent(3);
    if v6 {
        if let [a] = &src[..] {
            body.src.items = vec![v4(a).map_or(Addr::Any, |(a, _)| six(a, 48))];
        }
        if let [a] = &dst[..] {
            body.dst.items = vec![v4(a).map_or(Addr::Any, |(a, _)| six(a, 64))];
        }
    }
    match rng.below(100) {
        0..4 => body.options.push(option(Opt::In)),
        4..6 if tcp_only(&body.proto) => body.options.push(option(Opt::Setup)),
        6..8 if tcp_only(&body.proto) => body.options.push(option(Opt::TcpFlags(FlagSpec {
            set: 0x02,
            clear: 0x10,
        }))),
        8..10 => body.options.push(option(Opt::IpLen(vec![(40, 1000)]))),
        10..12 if body.src.items != [Addr::Any] => body.src.not = !body.src.not,
        12..14 => body.src.items = vec![Addr::Me],
        14..16 if is_any(&body.proto) => {
            body.proto = ["tcp", "udp"]
                .map(|p| Proto::Name(p.into(), Span::default()))
                .into()
        }
        16..18 if !v6 => {
            let me = Addr::Prefix(IpAddr::V4(Ipv4Addr::from(ME)), 32);
            body.dst.items.push(me);
            body.dst.or_block = true;
        }
        18..20 => {
            body.options.push(option(Opt::Out));
            body.options.push(option(Opt::Via("eth*".into())));
        }
        20..22 if !v6 => {
            // The rule's destination moves into the table, beside others.
            if let Some(prefix) = dst.first().and_then(v4) {
                table.insert(prefix);
                body.dst.items = vec![Addr::Table(TABLE.into(), None, Span::default())];
            }
        }
        _ => {}
    }
    v6
}

/// `count` packets: `weir_classbench::gen::trace`'s headers (most inside a
/// rule's box, some repeated, some random), as ipfw sees them: ports only
/// for tcp/udp/sctp, IPv6 for headers drawn from a rule moved to IPv6,
/// and a random direction, TCP flags and IP length for the options.
pub fn trace(rules: &Ruleset, count: usize, seed: u64) -> Vec<Packet> {
    let headers = gen::trace(&rules.filters, count, seed);
    let mut rng = Rng::new(seed ^ 0x7ace);
    headers
        .iter()
        .map(|h| {
            let v6 = h.filter.is_some_and(|i| rules.v6[i as usize]);
            let (src, dst) = if v6 {
                let mut addr = |a: u32| {
                    (0x2001_0db8u128 << 96) | u128::from(a >> 16) << 80 | u128::from(rng.next_u64())
                };
                (addr(h.src), addr(h.dst))
            } else {
                (v4_mapped(h.src), v4_mapped(h.dst))
            };
            let ports = WITH_PORTS.contains(&h.proto);
            Packet {
                src,
                dst,
                l3: L3::Ip,
                ip_version: if v6 { 6 } else { 4 },
                proto: h.proto,
                src_port: if ports { h.sport } else { 0 },
                dst_port: if ports { h.dport } else { 0 },
                has_ports: ports,
                tcp_flags: if h.proto == 6 {
                    [0x02, 0x10, 0x12, 0x18][rng.index(4)]
                } else {
                    0
                },
                has_icmp: h.proto == 1,
                ip_len: 40 + rng.below(1400) as u16,
                l3_len: 60,
                ttl: 64,
                direction: if rng.percent(50) {
                    Direction::In
                } else {
                    Direction::Out
                },
                ..Packet::default()
            }
        })
        .collect()
}
