//! One ppp filter set as ipfw rules that decide as ppp's `FilterCheck`.

use super::{
    rule_number, Endpoint, Filter, FilterSet, PortOp, PortTest, PppFilters, Symbol, Verb,
    FRAGMENT_RULE, IMPLICIT_DENY_RULE, INVERT_OFFSET,
};
use crate::ast::*;
use crate::diag::Diagnostic;
use crate::names::Names;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use weir_wire::{ext6, proto};

/// What ppp learns when the link comes up (here: from flags), and the
/// host names the rules use, each resolved once before translating.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Bindings {
    pub myaddr: Option<Ipv4Addr>,
    pub hisaddr: Option<Ipv4Addr>,
    pub myaddr6: Option<Ipv6Addr>,
    pub hisaddr6: Option<Ipv6Addr>,
    pub dns0: Option<Ipv4Addr>,
    pub dns1: Option<Ipv4Addr>,
    /// Host name (lower case) to the IPv4 address it resolved to.
    pub hosts: HashMap<String, Ipv4Addr>,
}

impl Bindings {
    fn get(&self, s: Symbol) -> Option<IpAddr> {
        match s {
            Symbol::MyAddr => self.myaddr.map(IpAddr::V4),
            Symbol::HisAddr => self.hisaddr.map(IpAddr::V4),
            Symbol::MyAddr6 => self.myaddr6.map(IpAddr::V6),
            Symbol::HisAddr6 => self.hisaddr6.map(IpAddr::V6),
            Symbol::Dns0 => self.dns0.map(IpAddr::V4),
            Symbol::Dns1 => self.dns1.map(IpAddr::V4),
        }
    }
}

/// One set as ipfw rules, and what a reader should know about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Translation {
    pub ruleset: Ruleset,
    /// Not errors, but surprises (a set with rules but no rule 0).
    pub notes: Vec<Diagnostic>,
}

type PResult<T> = Result<T, Diagnostic>;

/// Translates one set into ipfw rules that weir compiles to the same
/// decisions ppp makes. Names resolve here (protocols, services), the
/// symbolic addresses and host names from `bind`; every error carries its
/// span.
pub fn translate(
    filters: &PppFilters,
    set: FilterSet,
    bind: &Bindings,
    names: &Names,
) -> Result<Translation, Vec<Diagnostic>> {
    let mut notes = Vec::new();
    let mut rules = Vec::new();
    let mut errors = Vec::new();
    let Some(first) = filters.rules(set).find(|f| f.number == 0) else {
        if let Some(r) = filters.rules(set).next() {
            notes.push(Diagnostic::new(
                r.span,
                format!(
                    "set {} has no rule 0, so ppp permits every packet and never reads rules 1..39",
                    set.word()
                ),
            ));
        }
        rules.push(simple_rule(
            FRAGMENT_RULE,
            Action::Allow,
            None,
            Body::match_all(),
            "no rule 0: ppp permits every packet",
        ));
        return Ok(Translation {
            ruleset: Ruleset {
                rules,
                ..Ruleset::default()
            },
            notes,
        });
    };
    let (frag_action, frag_log) = if set.fragments_ok() {
        (Action::Allow, None)
    } else {
        (Action::Deny, Some(Log { amount: None }))
    };
    let mut frag_body = Body::match_all();
    frag_body.proto = vec![Proto::Ip4];
    frag_body.options.push(opt(Opt::Frag, first.span));
    rules.push(simple_rule(
        FRAGMENT_RULE,
        frag_action,
        frag_log,
        frag_body,
        "later IPv4 fragments",
    ));
    for f in filters.rules(set) {
        match translate_rule(f, set, bind, names, &mut notes) {
            Ok(mut r) => rules.append(&mut r),
            Err(e) => errors.push(e),
        }
    }
    rules.push(simple_rule(
        IMPLICIT_DENY_RULE,
        Action::Deny,
        Some(Log { amount: None }),
        Body::match_all(),
        "implicit deny",
    ));
    if errors.is_empty() {
        Ok(Translation {
            ruleset: Ruleset {
                rules,
                ..Ruleset::default()
            },
            notes,
        })
    } else {
        Err(errors)
    }
}

fn simple_rule(number: u16, action: Action, log: Option<Log>, body: Body, comment: &str) -> Rule {
    Rule {
        number,
        head: RuleHead::default(),
        action,
        log,
        body,
        comment: Some(format!("ppp: {comment}")),
        span: Span::default(),
    }
}

fn translate_rule(
    f: &Filter,
    set: FilterSet,
    bind: &Bindings,
    names: &Names,
    notes: &mut Vec<Diagnostic>,
) -> PResult<Vec<Rule>> {
    let number = rule_number(f.number);
    let action = match f.action {
        Verb::Permit => Action::Allow,
        Verb::Deny => Action::Deny,
        Verb::Goto(n) => Action::Skipto(rule_number(n)),
    };
    // ppp logs every deny, and on the dial set every permit too.
    let logged = matches!(f.action, Verb::Deny)
        || (matches!(f.action, Verb::Permit) && set == FilterSet::Dial);
    let log = logged.then_some(Log { amount: None });
    let body = body(f, bind, names, notes)?;
    let comment = Some(format!("ppp: set filter {} {f}", set.word()));
    if !f.invert {
        return Ok(vec![Rule {
            number,
            head: RuleHead::default(),
            action,
            log,
            body,
            comment,
            span: f.span,
        }]);
    }
    // Inverted: a match skips the action; anything else takes it.
    Ok(vec![
        Rule {
            number,
            head: RuleHead::default(),
            action: Action::Skipto(number + 100),
            log: None,
            body,
            comment,
            span: f.span,
        },
        Rule {
            number: number + INVERT_OFFSET,
            head: RuleHead::default(),
            action,
            log,
            body: Body::match_all(),
            comment: Some(format!("ppp: rule {} did not match", f.number)),
            span: f.span,
        },
    ])
}

/// The `ext6` bits of every extension header weir_wire walks.
const ALL_EXT6: u8 =
    ext6::HOPOPT | ext6::ROUTING | ext6::FRAGMENT | ext6::DSTOPT | ext6::AH | ext6::ESP;

fn body(f: &Filter, bind: &Bindings, names: &Names, notes: &mut Vec<Diagnostic>) -> PResult<Body> {
    let mut b = Body::match_all();
    if let Some((src, dst)) = &f.addrs {
        b.src = addr_spec(src, bind)?;
        b.dst = addr_spec(dst, bind)?;
    }
    let Some(proto) = f.proto.as_ref().filter(|p| p.number != 0) else {
        return Ok(b);
    };
    let n = proto.number;
    b.proto = vec![match names.protocol_name(n) {
        Some(canonical) => Proto::Name(canonical.to_owned(), proto.span),
        None => Proto::Number(n),
    }];
    // ppp compares an IPv6 packet's first Next Header: one with extension
    // headers is never an upper-layer protocol's, and ESP's only when
    // nothing comes before it.
    match n {
        proto::IPV6_ROUTE | proto::IPV6_FRAG | proto::IPV6_OPTS | proto::AH => notes.push(Diagnostic::new(
            proto.span,
            format!(
                "ppp matches an IPv6 packet whose first Next Header is {}; weir reads the protocol after IPv6 extension headers, so for IPv6 this rule differs",
                proto.name
            ),
        )),
        proto::ESP => b.options.push(not(Opt::Ext6Hdr(ALL_EXT6 & !ext6::ESP), proto.span)),
        _ => b.options.push(not(Opt::Ext6Hdr(ALL_EXT6), proto.span)),
    }
    let mut never = false;
    match n {
        proto::TCP | proto::UDP => {
            b.src_ports = f
                .src_port
                .as_ref()
                .map(|t| port_spec(t, names))
                .transpose()?;
            b.dst_ports = f
                .dst_port
                .as_ref()
                .map(|t| port_spec(t, names))
                .transpose()?;
        }
        // ppp reads no ports for these: both are 0.
        proto::IPIP | proto::IPV6 => {
            for t in f.src_port.iter().chain(&f.dst_port) {
                never |= !t.op.holds(0, port_number(&t.port, names)?);
            }
        }
        proto::ICMP | proto::ICMPV6 => match f.icmp_type {
            None => {}
            Some(t @ 256..) => {
                notes.push(Diagnostic::new(
                    f.span,
                    format!("ICMP type {t} is above 255: this rule never matches"),
                ));
                never = true;
            }
            Some(t) if n == proto::ICMPV6 => {
                let mut bits = [0u64; 4];
                bits[usize::from(t / 64)] |= 1 << (t % 64);
                b.options.push(opt(Opt::Icmp6Types(bits), f.span));
            }
            Some(t @ 0..=31) => b.options.push(opt(Opt::IcmpTypes(1 << t), f.span)),
            Some(t) => {
                return Err(Diagnostic::new(
                    f.span,
                    format!("weir cannot test ICMP type {t}: ipfw's icmptypes holds types 0..31"),
                ))
            }
        },
        _ => {}
    }
    let set = (if f.estab { 0x10 } else { 0 }) | (if f.syn { 0x02 } else { 0 });
    if set != 0 {
        b.options
            .push(opt(Opt::TcpFlags(FlagSpec { set, clear: 0 }), f.span));
    }
    if f.finrst {
        // FIN or RST: not (FIN clear and RST clear).
        b.options.push(not(
            Opt::TcpFlags(FlagSpec {
                set: 0,
                clear: 0x01 | 0x04,
            }),
            f.span,
        ));
    }
    if never {
        b.src = AddrSpec {
            not: true,
            items: vec![Addr::Any],
            or_block: false,
        };
    }
    Ok(b)
}

fn opt(opt: Opt, span: Span) -> OptionItem {
    OptionItem {
        not: false,
        opt,
        span,
    }
}

fn not(opt: Opt, span: Span) -> OptionItem {
    OptionItem {
        not: true,
        opt,
        span,
    }
}

fn addr_spec(e: &Endpoint, bind: &Bindings) -> PResult<AddrSpec> {
    let host = |a: IpAddr| match a {
        // ppp: the all-zeros IPv4 address is any (width 0).
        IpAddr::V4(v4) if v4.is_unspecified() => Addr::Any,
        IpAddr::V4(_) => Addr::Prefix(a, 32),
        IpAddr::V6(_) => Addr::Prefix(a, 128),
    };
    let addr = match e {
        Endpoint::Any => Addr::Any,
        // ppp: width 0 means any.
        Endpoint::Net(_, 0) => Addr::Any,
        Endpoint::Net(a, w) => Addr::Prefix(*a, *w),
        Endpoint::Host(name, w, span) => {
            let a = bind.hosts.get(&name.to_ascii_lowercase()).ok_or_else(|| {
                Diagnostic::new(
                    *span,
                    format!("host name '{name}' did not resolve to an IPv4 address"),
                )
            })?;
            if *a == Ipv4Addr::BROADCAST {
                return Err(Diagnostic::new(
                    *span,
                    format!("host name '{name}' resolved to 255.255.255.255, which ppp refuses"),
                ));
            }
            match host(IpAddr::V4(*a)) {
                Addr::Prefix(a, _) if *w > 0 => Addr::Prefix(a, *w),
                _ => Addr::Any,
            }
        }
        Endpoint::Symbol(s, span) => {
            let a = bind.get(*s).ok_or_else(|| {
                Diagnostic::new(
                    *span,
                    format!("{} used but {} not given", s.word(), s.flag()),
                )
            })?;
            host(a)
        }
    };
    Ok(AddrSpec {
        not: false,
        items: vec![addr],
        or_block: false,
    })
}

fn port_number(p: &Port, names: &Names) -> PResult<u16> {
    match p {
        Port::Number(n) => Ok(*n),
        Port::Name(name, s) => names
            .service(name)
            .filter(|&p| p > 0)
            .ok_or_else(|| Diagnostic::new(*s, format!("unknown service '{name}'"))),
    }
}

fn port_spec(t: &PortTest, names: &Names) -> PResult<PortSpec> {
    let p = port_number(&t.port, names)?;
    let range = |lo, hi| PortRange {
        lo: Port::Number(lo),
        hi: (hi != lo).then_some(Port::Number(hi)),
    };
    Ok(match t.op {
        PortOp::Eq => PortSpec {
            not: false,
            items: vec![range(p, p)],
        },
        PortOp::Lt => PortSpec {
            not: false,
            items: vec![range(0, p - 1)],
        },
        // `gt 65535` matches no port at all.
        PortOp::Gt if p == u16::MAX => PortSpec {
            not: true,
            items: vec![range(0, u16::MAX)],
        },
        PortOp::Gt => PortSpec {
            not: false,
            items: vec![range(p + 1, u16::MAX)],
        },
    })
}
