//! Differential property test: the compiled engine, under both dispatch
//! strategies, against a plain interpreter of the syntax tree written
//! straight from ipfw(8). Same deciding rule, same verdict, same counters.
//!
//! The interpreter keeps its dynamic states in a plain list searched
//! linearly, with ipfw's rules written out again: a packet with a state
//! takes it at the first check-state, keep-state or limit rule it
//! reaches, and then the action of the rule that made the state; TCP
//! lifetimes follow the SYN/FIN/RST flags seen each way.

use proptest::prelude::*;
use std::net::IpAddr;
use weir_engine::*;
use weir_rules::{self as ast, Names};
use weir_wire::{addr_to_u128, frag, tcp, Direction, Packet, L3};

// ---- the reference interpreter -------------------------------------------

struct Ref<'a> {
    rules: Vec<&'a ast::Rule>,
    names: Names,
    me: Vec<IpAddr>,
    iface_names: Vec<&'static str>,
    states: Vec<RefState>,
    dyn_max: usize,
    now: u64,
}

/// One dynamic state: the creating packet's ends, in its direction.
#[derive(Clone, Debug)]
struct RefState {
    rule: usize,
    version: u8,
    proto: u8,
    src: (u128, u16),
    dst: (u128, u16),
    /// TCP FIN/SYN/RST seen from the creator / from the other end.
    fwd_flags: u8,
    rev_flags: u8,
    expire: u64,
    /// `limit`: the rule's mask and the masked fields it counts under.
    limit: Option<(u8, [u128; 4])>,
}

fn ends(p: &Packet) -> ((u128, u16), (u128, u16)) {
    let port = |x: u16| if p.has_ports { x } else { 0 };
    ((p.src, port(p.src_port)), (p.dst, port(p.dst_port)))
}

/// ipfw's lifetimes (defaults) after a packet: UDP 10 s, other non-TCP 5 s;
/// TCP: SYN one way 20 s, both SYNs (with at most one FIN) 300 s, both
/// FINs 1 s, anything else (a RST, no handshake) 1 s.
fn lifetime(proto: u8, fwd: u8, rev: u8) -> u64 {
    match proto {
        6 => {
            let (f, r) = (fwd & 7, rev & 7);
            let syn = tcp::SYN;
            let fin = tcp::FIN;
            match (f, r) {
                (f, 0) if f == syn => 20,
                (f, r) if f == syn && r == syn => 300,
                (f, r) if (f == syn | fin && r == syn) || (f == syn && r == syn | fin) => 300,
                (f, r) if f == syn | fin && r == syn | fin => 1,
                _ => 1,
            }
        }
        17 => 10,
        _ => 5,
    }
}

impl Ref<'_> {
    /// Index of the live state of `p`'s flow, and whether `p` goes the
    /// creator's way.
    fn find_state(&mut self, p: &Packet) -> Option<(usize, bool)> {
        let now = self.now;
        self.states.retain(|s| s.expire > now);
        let (a, b) = ends(p);
        self.states.iter().enumerate().find_map(|(k, s)| {
            if s.proto != p.proto || s.version != p.ip_version {
                None
            } else if s.src == a && s.dst == b {
                Some((k, true))
            } else if s.src == b && s.dst == a {
                Some((k, false))
            } else {
                None
            }
        })
    }

    fn touch(&mut self, k: usize, forward: bool, p: &Packet) {
        let s = &mut self.states[k];
        if p.proto == 6 {
            let f = p.tcp_flags & (tcp::FIN | tcp::SYN | tcp::RST);
            if forward {
                s.fwd_flags |= f;
            } else {
                s.rev_flags |= f;
            }
        }
        s.expire = self.now + lifetime(s.proto, s.fwd_flags, s.rev_flags);
    }

    /// Makes a state for rule `i`; false if refused (full, or over the limit).
    fn install(&mut self, i: usize, p: &Packet) -> bool {
        if self.find_state(p).is_some() {
            return true;
        }
        let limit = self.rules[i].body.options.iter().find_map(|o| match o.opt {
            ast::Opt::Limit { mask, count } => Some((mask, count)),
            _ => None,
        });
        if self.states.len() >= self.dyn_max {
            return false;
        }
        let key = |mask: u8| {
            let pick = |bit: u8, v: u128| if mask & bit != 0 { v } else { 0 };
            [
                pick(1, p.src),
                pick(2, u128::from(p.src_port)),
                pick(4, p.dst),
                pick(8, u128::from(p.dst_port)),
            ]
        };
        if let Some((mask, count)) = limit {
            let k = key(mask);
            let alive = self
                .states
                .iter()
                .filter(|s| s.rule == i && s.limit.is_some_and(|(_, sk)| sk == k))
                .count();
            if alive >= count as usize {
                return false;
            }
        }
        let (src, dst) = ends(p);
        self.states.push(RefState {
            rule: i,
            version: p.ip_version,
            proto: p.proto,
            src,
            dst,
            fwd_flags: 0,
            rev_flags: 0,
            expire: 0,
            limit: limit.map(|(mask, _)| (mask, key(mask))),
        });
        let k = self.states.len() - 1;
        self.touch(k, true, p);
        true
    }

    fn state_option(r: &ast::Rule) -> Option<&ast::Opt> {
        r.body.options.iter().map(|o| &o.opt).find(|o| {
            matches!(
                o,
                ast::Opt::KeepState | ast::Opt::RecordState | ast::Opt::Limit { .. }
            )
        })
    }

    /// Returns (index of deciding rule, pass?) and bumps `counts`; the
    /// default rule has index `rules.len()`.
    fn eval(&mut self, p: &Packet, counts: &mut [u64]) -> (usize, bool) {
        let mut stack = Vec::new();
        let mut calls = 0;
        let mut i = 0;
        // weir looks the flow up once, before the walk (ipfw at the first
        // probe rule: they differ only when a record-state rule makes the
        // state earlier in the same walk).
        let mut found = self.find_state(p);
        while i < self.rules.len() {
            let r = self.rules[i];
            let probes = r.action == ast::Action::CheckState
                || matches!(
                    Self::state_option(r),
                    Some(ast::Opt::KeepState | ast::Opt::Limit { .. })
                );
            let mut acting = i;
            let mut fired = false;
            if probes {
                if let Some((k, forward)) = found.take() {
                    self.touch(k, forward, p);
                    acting = self.states[k].rule;
                    fired = true;
                }
            }
            if !fired {
                if r.action == ast::Action::CheckState || !self.matches(&r.body, p) {
                    i += 1;
                    continue;
                }
                if Self::state_option(r).is_some() && !self.install(i, p) {
                    counts[i] += 1;
                    return (i, false);
                }
            }
            i = acting;
            let r = self.rules[i];
            counts[i] += 1;
            let target = |n: u16| {
                self.rules
                    .iter()
                    .position(|r| r.number >= n)
                    .unwrap_or(self.rules.len())
            };
            match r.action {
                ast::Action::Allow => return (i, true),
                ast::Action::Deny
                | ast::Action::Reject
                | ast::Action::Reset
                | ast::Action::Unreach(_) => return (i, false),
                ast::Action::Skipto(n) => i = target(n),
                ast::Action::Call(n) if stack.len() < CALL_STACK_DEPTH && calls < MAX_CALLS => {
                    stack.push(i + 1);
                    calls += 1;
                    i = target(n);
                }
                ast::Action::Return if !stack.is_empty() => i = stack.pop().unwrap(),
                _ => i += 1,
            }
        }
        counts[self.rules.len()] += 1;
        (self.rules.len(), false)
    }

    fn matches(&self, b: &ast::Body, p: &Packet) -> bool {
        let proto_ok = b.proto.iter().any(|pr| match pr {
            ast::Proto::Any => true,
            ast::Proto::Ip4 => p.ip_version == 4,
            ast::Proto::Ip6 => p.ip_version == 6,
            ast::Proto::Number(n) => p.proto == *n,
            ast::Proto::Name(n, _) => Some(p.proto) == self.names.protocol(n),
        });
        proto_ok
            && self.addr_ok(&b.src, p.src_ip(), p.ip_version)
            && self.ports_ok(&b.src_ports, p, p.src_port)
            && self.addr_ok(&b.dst, p.dst_ip(), p.ip_version)
            && self.ports_ok(&b.dst_ports, p, p.dst_port)
            && b.options.iter().all(|o| self.option_ok(o, p))
    }

    fn addr_ok(&self, spec: &ast::AddrSpec, a: IpAddr, version: u8) -> bool {
        let hit = spec.items.iter().any(|item| match item {
            ast::Addr::Any => true,
            ast::Addr::Me => version == 4 && self.me.contains(&a),
            ast::Addr::Me6 => version == 6 && self.me.contains(&a),
            ast::Addr::Prefix(net, len) => match (net, a) {
                (IpAddr::V4(n), IpAddr::V4(x)) => {
                    let m = if *len == 0 {
                        0
                    } else {
                        u32::MAX << (32 - *len as u32)
                    };
                    u32::from(*n) & m == u32::from(x) & m
                }
                (IpAddr::V6(n), IpAddr::V6(x)) => {
                    let m = if *len == 0 {
                        0
                    } else {
                        u128::MAX << (128 - *len as u32)
                    };
                    u128::from(*n) & m == u128::from(x) & m
                }
                _ => false,
            },
            ast::Addr::Masked(IpAddr::V4(n), IpAddr::V4(m)) => match a {
                IpAddr::V4(x) => u32::from(*n) & u32::from(*m) == u32::from(x) & u32::from(*m),
                _ => false,
            },
            _ => unreachable!("not generated"),
        });
        hit != spec.not
    }

    fn ports_ok(&self, spec: &Option<ast::PortSpec>, p: &Packet, port: u16) -> bool {
        let Some(spec) = spec else { return true };
        if !p.has_ports {
            return false;
        }
        let num = |x: &ast::Port| match x {
            ast::Port::Number(n) => *n,
            ast::Port::Name(n, _) => self.names.service(n).unwrap(),
        };
        let hit = spec.items.iter().any(|r| {
            let lo = num(&r.lo);
            let hi = r.hi.as_ref().map(num).unwrap_or(lo);
            lo <= port && port <= hi
        });
        hit != spec.not
    }

    fn option_ok(&self, o: &ast::OptionItem, p: &Packet) -> bool {
        let is_tcp = p.proto == 6 && p.has_ports;
        let v4 = p.ip_version == 4;
        let flags = |bits: u8, s: ast::FlagSpec| bits & s.set == s.set && bits & s.clear == 0;
        let iface = |pat: &str| {
            self.iface_names
                .get(p.iface as usize)
                .is_some_and(|n| iface_matches(pat, n))
        };
        let hit = match &o.opt {
            ast::Opt::In => p.direction == Direction::In,
            ast::Opt::Out => p.direction == Direction::Out,
            ast::Opt::Via(i) => iface(i),
            ast::Opt::Recv(i) => p.direction == Direction::In && iface(i),
            ast::Opt::Xmit(i) => p.direction == Direction::Out && iface(i),
            ast::Opt::Established => is_tcp && p.tcp_flags & (tcp::ACK | tcp::RST) != 0,
            ast::Opt::Setup => is_tcp && p.tcp_flags & tcp::SYN != 0 && p.tcp_flags & tcp::ACK == 0,
            ast::Opt::TcpFlags(s) => is_tcp && flags(p.tcp_flags, *s),
            ast::Opt::IcmpTypes(bits) => {
                p.proto == 1 && p.has_icmp && p.icmp_type < 32 && bits >> p.icmp_type & 1 == 1
            }
            ast::Opt::Frag => p.frag & frag::LATER != 0,
            // IPv4 header fields: never match an IPv6 packet (ipfw(8)).
            ast::Opt::IpOptions(s) => v4 && flags(p.ip_options, *s),
            ast::Opt::IpTos(s) => v4 && flags(p.tos, *s),
            ast::Opt::IpLen(r) => v4 && r.iter().any(|&(a, b)| a <= p.ip_len && p.ip_len <= b),
            ast::Opt::IpTtl(r) => {
                v4 && r
                    .iter()
                    .any(|&(a, b)| a <= p.ttl as u16 && p.ttl as u16 <= b)
            }
            ast::Opt::IpVersion(v) => p.ip_version == *v,
            ast::Opt::Icmp6Types(bits) => {
                let t = usize::from(p.icmp_type);
                p.proto == 58
                    && p.ip_version == 6
                    && p.has_icmp
                    && bits[t / 64] >> (t % 64) & 1 == 1
            }
            ast::Opt::Ext6Hdr(bits) => p.ip_version == 6 && p.ext6 & bits != 0,
            // State options make states; they always "match".
            ast::Opt::KeepState | ast::Opt::RecordState | ast::Opt::Limit { .. } => !o.not,
            ast::Opt::Lookup(..) => unreachable!("not generated"),
        };
        hit != o.not
    }
}

// ---- generators ------------------------------------------------------------

const ADDRS: [&str; 5] = [
    "10.0.0.1",
    "10.0.0.2",
    "192.0.2.7",
    "2001:db8::1",
    "2001:db8:1::9",
];

fn gen_addr() -> impl Strategy<Value = ast::Addr> {
    let a = |s: &str| s.parse::<IpAddr>().unwrap();
    prop_oneof![
        Just(ast::Addr::Any),
        Just(ast::Addr::Me),
        Just(ast::Addr::Me6),
        (0..ADDRS.len(), 0u8..=32).prop_map(move |(i, l)| {
            let addr = a(ADDRS[i]);
            let l = if addr.is_ipv4() { l } else { l * 4 };
            ast::Addr::Prefix(addr, l)
        }),
        Just(ast::Addr::Masked(a("10.0.0.0"), a("255.0.0.255"))),
    ]
}

fn gen_addr_spec() -> impl Strategy<Value = ast::AddrSpec> {
    (
        prop::bool::weighted(0.2),
        prop::collection::vec(gen_addr(), 1..3),
        any::<bool>(),
    )
        .prop_map(|(not, items, or_block)| ast::AddrSpec {
            not,
            items,
            or_block,
        })
}

fn gen_ports() -> impl Strategy<Value = Option<ast::PortSpec>> {
    let range = prop_oneof![
        (0u16..100).prop_map(|n| ast::PortRange {
            lo: ast::Port::Number(n),
            hi: None
        }),
        (0u16..100, 0u16..100).prop_map(|(a, b)| ast::PortRange {
            lo: ast::Port::Number(a.min(b)),
            hi: Some(ast::Port::Number(a.max(b)))
        }),
        Just(ast::PortRange {
            lo: ast::Port::Name("domain".into(), Default::default()),
            hi: None
        }),
    ];
    prop::option::weighted(
        0.3,
        (
            prop::bool::weighted(0.2),
            prop::collection::vec(range, 1..3),
        )
            .prop_map(|(not, items)| ast::PortSpec { not, items }),
    )
}

fn gen_option() -> impl Strategy<Value = ast::OptionItem> {
    let flags = (any::<u8>(), any::<u8>()).prop_map(|(a, b)| ast::FlagSpec {
        set: a & 0x17,
        clear: b & 0x17 & !a,
    });
    let opt = prop_oneof![
        Just(ast::Opt::In),
        Just(ast::Opt::Out),
        Just(ast::Opt::Via("eth*".into())),
        Just(ast::Opt::Recv("eth0".into())),
        Just(ast::Opt::Xmit("wan0".into())),
        Just(ast::Opt::Established),
        Just(ast::Opt::Setup),
        Just(ast::Opt::Frag),
        flags.clone().prop_map(ast::Opt::TcpFlags),
        (0u32..16).prop_map(|b| ast::Opt::IcmpTypes(1 << b | 1)),
        (0u8..4, 0u8..4).prop_map(|(s, c)| ast::Opt::IpOptions(ast::FlagSpec {
            set: s,
            clear: c & !s
        })),
        (0u8..4, 0u8..4).prop_map(|(s, c)| ast::Opt::IpTos(ast::FlagSpec {
            set: s,
            clear: c & !s
        })),
        (20u16..100).prop_map(|n| ast::Opt::IpLen(vec![(n, n + 20)])),
        (0u16..10).prop_map(|n| ast::Opt::IpTtl(vec![(n, n + 3)])),
        prop::sample::select(vec![4u8, 6]).prop_map(ast::Opt::IpVersion),
        (0usize..4).prop_map(|t| {
            let mut bits = [0u64; 4];
            bits[2] |= 1 << t; // types 128..131: echo request/reply, MLD
            ast::Opt::Icmp6Types(bits)
        }),
        (1u8..64).prop_map(ast::Opt::Ext6Hdr),
    ];
    (prop::bool::weighted(0.2), opt).prop_map(|(not, opt)| ast::OptionItem {
        not,
        opt,
        span: Default::default(),
    })
}

/// keep-state, record-state, limit, or none (most rules).
fn gen_state_option() -> impl Strategy<Value = Option<ast::OptionItem>> {
    let opt = prop_oneof![
        6 => Just(None),
        2 => Just(Some(ast::Opt::KeepState)),
        1 => Just(Some(ast::Opt::RecordState)),
        1 => (1u8..16, 1u32..3).prop_map(|(mask, count)| Some(ast::Opt::Limit { mask, count })),
    ];
    opt.prop_map(|o| {
        o.map(|opt| ast::OptionItem {
            not: false,
            opt,
            span: Default::default(),
        })
    })
}

fn gen_rule() -> impl Strategy<Value = ast::Rule> {
    let action = prop_oneof![
        3 => Just(ast::Action::Allow),
        3 => Just(ast::Action::Deny),
        1 => Just(ast::Action::Reject),
        3 => Just(ast::Action::Count),
        2 => (1u16..=60).prop_map(|n| ast::Action::Skipto(n * 10)),
        2 => (1u16..=60).prop_map(|n| ast::Action::Call(n * 10)),
        2 => Just(ast::Action::Return),
        1 => Just(ast::Action::CheckState),
    ];
    let protos = prop_oneof![
        Just(vec![ast::Proto::Any]),
        Just(vec![ast::Proto::Name("tcp".into(), Default::default())]),
        Just(vec![ast::Proto::Number(17)]),
        Just(vec![ast::Proto::Name("icmp".into(), Default::default())]),
        Just(vec![
            ast::Proto::Name("tcp".into(), Default::default()),
            ast::Proto::Number(17)
        ]),
        Just(vec![ast::Proto::Ip6]),
    ];
    (
        1u16..60,
        action,
        protos,
        gen_addr_spec(),
        gen_ports(),
        gen_addr_spec(),
        gen_ports(),
        prop::collection::vec(gen_option(), 0..3),
        gen_state_option(),
    )
        .prop_map(|(n, action, proto, src, sp, dst, dp, mut options, state)| {
            if action != ast::Action::CheckState {
                options.extend(state);
            }
            let number = n * 10;
            // Jumps must go forward; ports need tcp/udp.
            let action = match action {
                ast::Action::Skipto(t) | ast::Action::Call(t) if t <= number => ast::Action::Count,
                a => a,
            };
            let port_ok = proto.iter().all(|p| {
                matches!(p, ast::Proto::Number(17))
                    || matches!(p, ast::Proto::Name(n, _) if n == "tcp")
            });
            ast::Rule {
                number,
                action,
                log: None,
                body: ast::Body {
                    proto,
                    src,
                    src_ports: if port_ok { sp } else { None },
                    dst,
                    dst_ports: if port_ok { dp } else { None },
                    options,
                },
                comment: None,
                span: Default::default(),
            }
        })
}

fn gen_packet() -> impl Strategy<Value = Packet> {
    (
        (
            0..ADDRS.len(),
            0..ADDRS.len(),
            prop::sample::select(vec![1u8, 6, 17, 47]),
        ),
        (0u16..100, 0u16..100, any::<u8>(), 0u8..16, any::<bool>()),
        (0u8..64, 0u8..4, 0u8..4, 20u16..120, 0u8..12),
        (
            prop::sample::select(vec![Direction::In, Direction::Out]),
            0u16..4,
        ),
    )
        .prop_map(
            |(
                (s, d, proto),
                (sp, dp, flags, icmp, later),
                (ext, opts, tos, len, ttl),
                (direction, iface),
            )| {
                let (src, dst) = (
                    ADDRS[s].parse::<IpAddr>().unwrap(),
                    ADDRS[d].parse::<IpAddr>().unwrap(),
                );
                let v6 = src.is_ipv6();
                let dst = if dst.is_ipv6() == v6 { dst } else { src };
                let proto = if v6 && proto == 1 { 58 } else { proto };
                let icmp = if proto == 58 { 128 + icmp % 4 } else { icmp };
                let l4 = !later && (proto == 6 || proto == 17);
                Packet {
                    src: addr_to_u128(src),
                    dst: addr_to_u128(dst),
                    l3: L3::Ip,
                    ip_version: if v6 { 6 } else { 4 },
                    proto,
                    src_port: if l4 { sp } else { 0 },
                    dst_port: if l4 { dp } else { 0 },
                    has_ports: l4,
                    tcp_flags: if l4 && proto == 6 { flags } else { 0 },
                    icmp_type: icmp,
                    has_icmp: !later && (proto == 1 || proto == 58),
                    ext6: if v6 { ext } else { 0 },
                    ip_len: len,
                    ttl,
                    tos,
                    frag: if later { frag::LATER } else { 0 },
                    ip_options: if v6 { 0 } else { opts },
                    direction,
                    iface,
                    l3_len: len as u32,
                    ..Packet::default()
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn compiled_engine_equals_reference(
        rules in prop::collection::vec(gen_rule(), 1..25),
        packets in prop::collection::vec((gen_packet(), prop_oneof![3 => Just(0u64), 2 => 1u64..30]), 1..40),
        dyn_max in 2u32..8,
    ) {
        let settings = vec![ast::Setting { name: "dyn_max".into(), value: dyn_max, span: Default::default() }];
        let rs = ast::Ruleset { rules, settings, ..Default::default() };
        let names = Names::default();
        let prog = compile(&rs, &names, &CompileOptions::default()).expect("generated rules compile");
        let mut sorted: Vec<&ast::Rule> = rs.rules.iter().collect();
        sorted.sort_by_key(|r| r.number);
        let mut reference = Ref {
            rules: sorted,
            names: names.clone(),
            me: vec!["10.0.0.2".parse().unwrap(), "2001:db8::1".parse().unwrap()],
            iface_names: vec!["eth0", "eth1", "wan0"],
            states: Vec::new(),
            dyn_max: dyn_max as usize,
            now: 0,
        };
        // Both dispatchers, each with both classifiers and the linear walk.
        let mut engines: Vec<Engine> = [DispatchKind::Match, DispatchKind::Table]
            .into_iter()
            .flat_map(|d| [(d, WalkKind::Bits), (d, WalkKind::Linear), (d, WalkKind::Trie)])
            .map(|(d, walk)| {
                let mut e = Engine::new(prog.clone());
                e.dispatch = d;
                e.set_walk(walk);
                e.env.me = reference
                    .me
                    .iter()
                    .map(|a| (addr_to_u128(*a), if a.is_ipv4() { 4 } else { 6 }))
                    .collect();
                e.set_interfaces(&[Some("eth0"), Some("eth1"), Some("wan0")]);
                e
            })
            .collect();
        let walks: Vec<WalkKind> = engines.iter().map(Engine::walk_kind).collect();
        assert_eq!(&walks[..3], &[WalkKind::Bits, WalkKind::Linear, WalkKind::Trie]);
        let mut ref_counts = vec![0u64; prog.rules.len()];
        for (p, gap) in &packets {
            reference.now += gap;
            let (ri, pass) = reference.eval(p, &mut ref_counts);
            for e in &mut engines {
                e.set_time(reference.now * 1_000_000_000);
                let d = e.decide(p);
                prop_assert_eq!(d.rule, Some(ri), "{:?} {:?} on {:?}", e.dispatch, e.walk_kind(), p);
                prop_assert_eq!(d.verdict == Verdict::Pass, pass);
            }
        }
        for e in &engines {
            let counts: Vec<u64> = e.counters().iter().map(|c| c.packets).collect();
            prop_assert_eq!(&counts, &ref_counts);
        }
    }
}
