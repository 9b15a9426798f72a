//! ClassBench filters as weir rules, two ways.
//!
//! The rule language follows ipfw: ports belong to tcp, udp and sctp only
//! (the compiler rejects `ip from A 80 to B`), and a packet of another
//! protocol never matches a rule with ports. ClassBench compares ports
//! whatever the protocol. So:
//!
//! - [`import`] writes the ruleset a person would load into weir: one
//!   `allow` rule per filter, in order, with ipfw's semantics. Where the
//!   two differ (a filter with ports and a protocol other than
//!   tcp/udp/sctp, or any protocol) the rule keeps only tcp/udp/sctp and
//!   says so in its comment; a protocol mask other than 0x00/0xFF becomes
//!   the list of protocols it admits.
//! - [`Compiled`] is exact, for `weir classbench`: it builds the syntax
//!   tree directly and chooses how headers become [`Packet`] records.
//!   [`Encoding::Native`] (every filter with ports has protocol tcp, udp or
//!   sctp exactly, every mask is 0x00 or 0xFF): the rules carry the real
//!   protocol and packets carry their header's protocol, with ports.
//!   Otherwise [`Encoding::ProtoInTos`]: every rule is a tcp rule, every
//!   packet a tcp packet with ports, and the real protocol travels in the
//!   TOS byte, matched as value/mask by `iptos` (set bits = value, clear
//!   bits = mask minus value). Exact for any value/mask, at the price of
//!   one instruction per filter with a protocol and no protocol pruning.
//!
//!   With [`Fields::WithFlags`] the sixth dimension rides in the IP length:
//!   each distinct flags value some filter requires gets a code 1..=65535,
//!   its filters an `iplen CODE`, and a packet the code of its header's
//!   flags (0, which no rule asks for, when no filter requires them).
//!   Exact, as a filter requires one 32-bit value or none.

use crate::parse::{Filter, Header, Prefix};
use crate::reference::Fields;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use weir_rules::{
    Action, Addr, AddrSpec, Body, FlagSpec, Opt, OptionItem, Port, PortRange, PortSpec, Proto,
    Rule, Ruleset, Span, MAX_RULE_NUMBER,
};
use weir_wire::{proto, v4_mapped, Packet, L3};

/// The rule number of filter `i` (0-based) of `n`: `i + 1` while the set
/// fits in ipfw's 1..=65534; beyond that, spread evenly over that range
/// (never decreasing, so equal numbers keep file order, as ipfw does).
pub fn rule_number(i: usize, n: usize) -> u16 {
    let max = usize::from(MAX_RULE_NUMBER);
    let num = if n <= max {
        i + 1
    } else {
        1 + i * (max - 1) / (n - 1)
    };
    num.min(max) as u16
}

fn addr_spec(p: Prefix) -> AddrSpec {
    let item = match p.len {
        0 => Addr::Any,
        len => Addr::Prefix(IpAddr::V4(Ipv4Addr::from(p.network())), len),
    };
    AddrSpec {
        not: false,
        items: vec![item],
        or_block: false,
    }
}

/// No spec for the full range 0..65535, which every packet with ports holds.
fn port_spec((lo, hi): (u16, u16)) -> Option<PortSpec> {
    if (lo, hi) == (0, u16::MAX) {
        return None;
    }
    Some(PortSpec {
        not: false,
        items: vec![PortRange {
            lo: Port::Number(lo),
            hi: (hi != lo).then_some(Port::Number(hi)),
        }],
    })
}

fn has_ports(f: &Filter) -> bool {
    f.sport != (0, u16::MAX) || f.dport != (0, u16::MAX)
}

/// The protocol numbers a value/mask admits, ascending.
pub fn admitted_protocols(f: &Filter) -> Vec<u8> {
    (0..=255u8)
        .filter(|p| p & f.proto_mask == f.proto)
        .collect()
}

/// How a protocol number is written in imported rules.
fn proto_word(p: u8) -> Proto {
    match p {
        proto::ICMP => Proto::Name("icmp".into(), Span::default()),
        proto::TCP => Proto::Name("tcp".into(), Span::default()),
        proto::UDP => Proto::Name("udp".into(), Span::default()),
        proto::SCTP => Proto::Name("sctp".into(), Span::default()),
        n => Proto::Number(n),
    }
}

fn rule(number: u16, body: Body, comment: Option<String>) -> Rule {
    Rule {
        number,
        head: weir_rules::RuleHead::default(),
        action: Action::Allow,
        log: None,
        body,
        comment,
        span: Span::default(),
    }
}

/// The ruleset with ipfw's semantics (see the module comment).
pub fn import(filters: &[Filter]) -> Ruleset {
    let n = filters.len();
    let rules = filters
        .iter()
        .enumerate()
        .map(|(i, f)| import_one(f, rule_number(i, n)))
        .collect();
    Ruleset {
        rules,
        ..Ruleset::default()
    }
}

/// The filter's addresses and ports, any protocol, no options: what both
/// mappings start from.
fn fields_body(f: &Filter) -> Body {
    Body {
        proto: vec![Proto::Any],
        src: addr_spec(f.src),
        src_ports: port_spec(f.sport),
        dst: addr_spec(f.dst),
        dst_ports: port_spec(f.dport),
        options: Vec::new(),
    }
}

fn import_one(f: &Filter, number: u16) -> Rule {
    let mut body = fields_body(f);
    let admitted = admitted_protocols(f);
    let mut comment = None;
    if has_ports(f) {
        let kept: Vec<u8> = admitted
            .iter()
            .copied()
            .filter(|p| proto::WITH_PORTS.contains(p))
            .collect();
        if kept.len() < admitted.len() {
            comment = Some(if kept.is_empty() {
                format!(
                    "classbench: protocol 0x{:02X}/0x{:02X} with ports never matches here",
                    f.proto, f.proto_mask
                )
            } else {
                "classbench: ports match tcp/udp/sctp only here".to_owned()
            });
        }
        if kept.is_empty() {
            // No protocol carries ports: a rule that can never match.
            body.src.not = true;
            body.src.items = vec![Addr::Any];
            body.proto = vec![Proto::Name("tcp".into(), Span::default())];
        } else {
            body.proto = kept.into_iter().map(proto_word).collect();
        }
    } else if admitted.len() < 256 {
        body.proto = admitted.into_iter().map(proto_word).collect();
    }
    rule(number, body, comment)
}

/// The imported ruleset as text: a header comment, then one rule a line.
pub fn import_text(filters: &[Filter], source: &str) -> String {
    let mut out = format!(
        "# Imported from the ClassBench filter set {source} ({} filters) by `weir import classbench`.\n\
         # Filter N (line N) is the Nth rule, `allow`, in order; the default rule 65535 denies.\n\
         # Semantics are ipfw's: ports match tcp, udp and sctp packets only, so a filter\n\
         # with ports and another (or any) protocol keeps tcp/udp/sctp (its comment says so).\n\
         # The rules hold the 5-tuple: a filter's flags and extra fields are not imported.\n\
         # `weir classbench` evaluates the filters with ClassBench's own semantics.\n",
        filters.len()
    );
    out.push_str(&weir_rules::print_ruleset(&import(filters)));
    out
}

/// How headers become packets for [`Compiled`] (see the module comment).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// Real protocols in rules and packets.
    Native,
    /// Every rule and packet is tcp; the protocol is matched in the TOS byte.
    ProtoInTos,
}

impl Encoding {
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Native => "native",
            Encoding::ProtoInTos => "proto-in-tos",
        }
    }
}

/// Filters as a ruleset whose first match is exactly ClassBench's, and
/// how to make the matching packet records.
#[derive(Clone, Debug)]
pub struct Compiled {
    pub ruleset: Ruleset,
    pub encoding: Encoding,
    /// Number of filters (rule index `filters` is weir's default rule).
    pub filters: usize,
    pub fields: Fields,
    /// With [`Fields::WithFlags`]: the code of each flags value a filter
    /// requires (see the module comment).
    flag_codes: HashMap<u32, u16>,
}

impl Compiled {
    /// The exact ruleset for a 5-tuple classification.
    pub fn new(filters: &[Filter]) -> Compiled {
        let flag_codes = HashMap::new();
        Compiled::build(filters, Fields::FiveTuple, flag_codes)
    }

    /// The exact ruleset comparing `fields`; fails only when the filters
    /// require more than 65,535 distinct flags values.
    pub fn with_fields(filters: &[Filter], fields: Fields) -> Result<Compiled, String> {
        let mut flag_codes = HashMap::new();
        if fields == Fields::WithFlags {
            for v in filters.iter().filter_map(Filter::flags_value) {
                let next = flag_codes.len() + 1;
                if let std::collections::hash_map::Entry::Vacant(e) = flag_codes.entry(v) {
                    let code = u16::try_from(next).map_err(|_| {
                        format!(
                            "the filters require more than {} distinct flags values",
                            u16::MAX
                        )
                    })?;
                    e.insert(code);
                }
            }
        }
        Ok(Compiled::build(filters, fields, flag_codes))
    }

    fn build(filters: &[Filter], fields: Fields, flag_codes: HashMap<u32, u16>) -> Compiled {
        let native = filters.iter().all(|f| {
            let exact_or_any = matches!(f.proto_mask, 0 | 0xff);
            let ports_ok =
                !has_ports(f) || (f.proto_mask == 0xff && proto::WITH_PORTS.contains(&f.proto));
            exact_or_any && ports_ok
        });
        let encoding = if native {
            Encoding::Native
        } else {
            Encoding::ProtoInTos
        };
        let n = filters.len();
        let rules = filters
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let mut body = exact_body(f, encoding);
                let code = f.flags_value().and_then(|v| flag_codes.get(&v));
                if let Some(&code) = code {
                    body.options.push(OptionItem {
                        not: false,
                        opt: Opt::IpLen(vec![(code, code)]),
                        span: Span::default(),
                    });
                }
                rule(rule_number(i, n), body, None)
            })
            .collect();
        Compiled {
            ruleset: Ruleset {
                rules,
                ..Ruleset::default()
            },
            encoding,
            filters: n,
            fields,
            flag_codes,
        }
    }

    /// The packet record for a header: IPv4, ports present whatever the
    /// protocol (ClassBench compares them always).
    #[inline]
    pub fn packet(&self, h: &Header) -> Packet {
        let (proto, tos) = match self.encoding {
            Encoding::Native => (h.proto, 0),
            Encoding::ProtoInTos => (proto::TCP, h.proto),
        };
        let ip_len = match self.fields {
            Fields::WithFlags => h
                .flags
                .and_then(|v| self.flag_codes.get(&v).copied())
                .unwrap_or(0),
            Fields::FiveTuple => 40,
        };
        Packet {
            src: v4_mapped(h.src),
            dst: v4_mapped(h.dst),
            l3: L3::Ip,
            ip_version: 4,
            proto,
            src_port: h.sport,
            dst_port: h.dport,
            has_ports: true,
            tos,
            ttl: 64,
            ip_len,
            l3_len: 40,
            ..Packet::default()
        }
    }

    /// The ClassBench answer for the engine's decision: the 1-based
    /// filter number, or 0 when only weir's default rule matched.
    #[inline]
    pub fn filter_number(&self, rule_index: Option<usize>) -> u32 {
        match rule_index {
            Some(i) if i < self.filters => i as u32 + 1,
            _ => 0,
        }
    }
}

fn exact_body(f: &Filter, enc: Encoding) -> Body {
    let mut body = fields_body(f);
    match enc {
        Encoding::Native => {
            if f.proto_mask == 0xff {
                body.proto = vec![Proto::Number(f.proto)];
            }
        }
        Encoding::ProtoInTos => {
            body.proto = vec![Proto::Number(proto::TCP)];
            if f.proto_mask != 0 {
                body.options.push(OptionItem {
                    not: false,
                    opt: Opt::IpTos(FlagSpec {
                        set: f.proto,
                        clear: f.proto_mask & !f.proto,
                    }),
                    span: Span::default(),
                });
            }
        }
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_filters;

    #[test]
    fn rule_numbers_fit_and_keep_order() {
        assert_eq!(rule_number(0, 10), 1);
        assert_eq!(rule_number(9, 10), 10);
        let n = 100_000;
        let nums: Vec<u16> = (0..n).map(|i| rule_number(i, n)).collect();
        assert_eq!(nums[0], 1);
        assert_eq!(nums[n - 1], MAX_RULE_NUMBER);
        assert!(nums.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn import_writes_ipfw_rules() {
        let f = parse_filters(
            "@10.1.2.3/16\t0.0.0.0/0\t0 : 65535\t80 : 80\t0x06/0xFF\n\
             @0.0.0.0/0\t192.168.0.1/32\t0 : 65535\t0 : 65535\t0x00/0x00\n\
             @0.0.0.0/0\t0.0.0.0/0\t1024 : 65535\t53 : 53\t0x00/0x00\n\
             @0.0.0.0/0\t0.0.0.0/0\t0 : 65535\t0 : 65535\t0x01/0xFF\n\
             @0.0.0.0/0\t0.0.0.0/0\t0 : 65535\t7 : 9\t0x01/0xFF\n\
             @0.0.0.0/0\t0.0.0.0/0\t0 : 65535\t0 : 65535\t0x04/0xFE\n",
        )
        .unwrap();
        let text = weir_rules::print_ruleset(&import(&f));
        assert_eq!(
            text,
            "1 allow tcp from 10.1.0.0/16 to any 80\n\
             2 allow ip from any to 192.168.0.1\n\
             3 allow { tcp or udp or sctp } from any 1024-65535 to any 53 // classbench: ports match tcp/udp/sctp only here\n\
             4 allow icmp from any to any\n\
             5 allow tcp from not any to any 7-9 // classbench: protocol 0x01/0xFF with ports never matches here\n\
             6 allow { 4 or 5 } from any to any\n"
        );
    }

    #[test]
    fn encoding_follows_the_filters() {
        let native =
            parse_filters("@0.0.0.0/0\t0.0.0.0/0\t0 : 65535\t80 : 80\t0x11/0xFF\n").unwrap();
        assert_eq!(Compiled::new(&native).encoding, Encoding::Native);
        let any_with_ports =
            parse_filters("@0.0.0.0/0\t0.0.0.0/0\t0 : 65535\t80 : 80\t0x00/0x00\n").unwrap();
        let c = Compiled::new(&any_with_ports);
        assert_eq!(c.encoding, Encoding::ProtoInTos);
        let h = Header {
            proto: 1,
            dport: 80,
            ..Header::default()
        };
        let p = c.packet(&h);
        assert_eq!((p.proto, p.tos, p.has_ports), (6, 1, true));
        assert_eq!(c.filter_number(Some(0)), 1);
        assert_eq!(c.filter_number(Some(1)), 0);
    }
}
