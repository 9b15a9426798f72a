//! Differential property test: the compiled engine, under both dispatch
//! strategies and every walk, against a plain interpreter of the syntax
//! tree written straight from ipfw(8). Same deciding rule, same verdict,
//! same counters.
//!
//! The interpreter keeps its dynamic states in a plain list searched
//! linearly, with ipfw's rules written out again: a packet with a state
//! of a name takes it at the first check-state, keep-state or limit rule
//! of that name (or `:any`) it reaches, and then the action of the rule
//! that made the state; TCP lifetimes follow the SYN/FIN/RST flags seen
//! each way. A walk carries what its actions did (tags, FIB, DSCP, MSS,
//! diverted). Hand-offs follow `one_pass`; Ethernet frames pass the rules
//! at layer 2 first when the ruleset says `net.link.ether.ipfw=1`.

use proptest::prelude::*;
use std::collections::BTreeSet;
use std::net::IpAddr;
use weir_engine::*;
use weir_rules::{self as ast, Names};
use weir_wire::{addr_to_u128, frag, tcp, tcpopt, Direction, Packet, L3};

// ---- the reference interpreter -------------------------------------------

struct Ref<'a> {
    rules: Vec<&'a ast::Rule>,
    names: Names,
    me: Vec<IpAddr>,
    iface_names: Vec<&'static str>,
    tables: Vec<RefTable>,
    states: Vec<RefState>,
    /// State names in the order the engine numbers them (default first),
    /// which `check-state :any` tries in.
    name_order: Vec<String>,
    dyn_max: usize,
    now: u64,
    one_pass: bool,
    layer2: bool,
    fib: u16,
    seed: u64,
    packet_no: u64,
}

/// A table as a plain list of (key, value), searched linearly.
struct RefTable {
    name: String,
    entries: Vec<(ast::TableKey, u32)>,
}

/// One dynamic state: the creating packet's ends, in its direction.
#[derive(Clone, Debug)]
struct RefState {
    rule: usize,
    name: String,
    version: u8,
    proto: u8,
    src: (u128, u16),
    dst: (u128, u16),
    /// TCP FIN/SYN/RST seen from the creator / from the other end.
    fwd_flags: u8,
    rev_flags: u8,
    expire: u64,
    /// `limit`: the masked fields it counts under.
    limit: Option<[u128; 4]>,
}

/// What a walk has done to the packet.
struct Walk {
    tos: u8,
    fib: u16,
    tags: BTreeSet<u16>,
    mss: u16,
    diverted: u8,
    layer2: bool,
    draws: u32,
    packet_no: u64,
    seed: u64,
}

impl Walk {
    /// weir's seeded draw: splitmix64's finaliser over the seed, the
    /// packet's number and the draw's number; true below `threshold`.
    fn draw(&mut self, threshold: u32) -> bool {
        self.draws += 1;
        let mut z = self
            .seed
            .wrapping_add(self.packet_no.wrapping_mul(0x9e37_79b9_7f4a_7c15))
            .wrapping_add(u64::from(self.draws).wrapping_mul(0xd1b5_4a32_d192_ed03));
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        ((z >> 32) as u32) < threshold
    }
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

/// The state option of a rule, if any.
fn state_option(r: &ast::Rule) -> Option<&ast::Opt> {
    r.body.options.iter().map(|o| &o.opt).find(|o| {
        matches!(
            o,
            ast::Opt::KeepState(_) | ast::Opt::RecordState(_) | ast::Opt::Limit { .. }
        )
    })
}

/// The state name a rule probes or makes ("default" when unnamed).
fn state_name(r: &ast::Rule) -> String {
    let name = match (&r.action, state_option(r)) {
        (ast::Action::CheckState(n), _) => n.clone(),
        (_, Some(ast::Opt::KeepState(n) | ast::Opt::RecordState(n))) => n.clone(),
        (_, Some(ast::Opt::Limit { name, .. })) => name.clone(),
        _ => None,
    };
    name.unwrap_or_else(|| "default".to_owned())
}

fn has(r: &ast::Rule, f: impl Fn(&ast::Opt) -> bool) -> bool {
    r.body.options.iter().any(|o| f(&o.opt))
}

impl Ref<'_> {
    /// Index of the live state of `p`'s flow named `name`, and whether `p`
    /// goes the creator's way.
    fn find_state(&mut self, p: &Packet, name: &str) -> Option<(usize, bool)> {
        let now = self.now;
        self.states.retain(|s| s.expire > now);
        let (a, b) = ends(p);
        self.states.iter().enumerate().find_map(|(k, s)| {
            if s.proto != p.proto || s.version != p.ip_version || s.name != name {
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
        let name = state_name(self.rules[i]);
        if self.find_state(p, &name).is_some() {
            return true;
        }
        let limit = self.rules[i].body.options.iter().find_map(|o| match o.opt {
            ast::Opt::Limit { mask, count, .. } => Some((mask, count)),
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
                .filter(|s| s.rule == i && s.limit == Some(k))
                .count();
            if alive >= count as usize {
                return false;
            }
        }
        let (src, dst) = ends(p);
        self.states.push(RefState {
            rule: i,
            name,
            version: p.ip_version,
            proto: p.proto,
            src,
            dst,
            fwd_flags: 0,
            rev_flags: 0,
            expire: 0,
            limit: limit.map(|(mask, _)| key(mask)),
        });
        let k = self.states.len() - 1;
        self.touch(k, true, p);
        true
    }

    /// Returns (index of deciding rule, pass?) and bumps `counts`; the
    /// default rule has index `rules.len()`.
    fn eval(&mut self, p: &Packet, counts: &mut [u64]) -> (usize, bool) {
        self.packet_no += 1;
        let mut w = Walk {
            tos: p.tos,
            fib: self.fib,
            tags: BTreeSet::new(),
            mss: p.tcp_mss,
            diverted: 0,
            layer2: false,
            draws: 0,
            packet_no: self.packet_no,
            seed: self.seed,
        };
        if !(self.layer2 && p.has_mac) {
            return self.pass(p, &mut w, counts);
        }
        // A frame: layer 2 then IP inbound, IP then layer 2 outbound; the
        // layer-2 decision stands unless the IP pass drops.
        if p.direction == Direction::Out {
            let ip = self.pass(p, &mut w, counts);
            if !ip.1 {
                return ip;
            }
            return self.layer2_pass(p, &mut w, counts);
        }
        let frame = self.layer2_pass(p, &mut w, counts);
        if !frame.1 {
            return frame;
        }
        let ip = self.pass(p, &mut w, counts);
        if ip.1 {
            frame
        } else {
            ip
        }
    }

    fn layer2_pass(&mut self, p: &Packet, w: &mut Walk, counts: &mut [u64]) -> (usize, bool) {
        w.layer2 = true;
        let d = self.pass(p, w, counts);
        w.layer2 = false;
        d
    }

    fn pass(&mut self, p: &Packet, w: &mut Walk, counts: &mut [u64]) -> (usize, bool) {
        let mut stack = Vec::new();
        let mut calls = 0;
        let mut i = 0;
        // weir looks the flow up once per name, before the walk (ipfw at
        // the first probe rule: they differ only when a record-state rule
        // makes the state earlier in the same walk).
        let mut found: Vec<(String, usize, bool)> = self
            .name_order
            .clone()
            .into_iter()
            .filter_map(|n| self.find_state(p, &n).map(|(k, f)| (n, k, f)))
            .collect();
        while i < self.rules.len() {
            let r = self.rules[i];
            let keeps = matches!(
                state_option(r),
                Some(ast::Opt::KeepState(_) | ast::Opt::Limit { probe: true, .. })
            );
            let probes = matches!(r.action, ast::Action::CheckState(_)) || keeps;
            let defer = has(r, |o| *o == ast::Opt::DeferAction);
            let mut acting = i;
            let mut fired = false;
            let mut drawn = false;
            if probes && !found.is_empty() {
                // ipfw's O_PROB comes before O_PROBE_STATE.
                if let Some(pr) = r.head.prob {
                    if !w.draw(pr.0) {
                        i += 1;
                        continue;
                    }
                    drawn = true;
                }
                let want = state_name(r);
                let hit = found
                    .iter()
                    .position(|(n, _, _)| want == "any" || *n == want);
                if let Some(h) = hit {
                    let (_, k, forward) = found[h].clone();
                    self.touch(k, forward, p);
                    acting = self.states[k].rule;
                    fired = true;
                    found.clear(); // no more lookups after a state fires
                }
            }
            if !fired {
                let never = matches!(r.action, ast::Action::CheckState(_))
                    || (defer && state_option(r).is_none());
                if never || !self.matches(&r.body, p, w) {
                    i += 1;
                    continue;
                }
                if let Some(pr) = r.head.prob {
                    if !drawn && !w.draw(pr.0) {
                        i += 1;
                        continue;
                    }
                }
                if state_option(r).is_some() && !self.install(i, p) {
                    counts[i] += 1;
                    return (i, false);
                }
                if defer {
                    i += 1;
                    continue;
                }
            }
            i = acting;
            let r = self.rules[i];
            // Not done here: divert, tee, fwd at layer 2; reass of IPv6; a
            // call with the stack full, a return with it empty (ip_fw2.c:
            // "On error both `call' and `return' just continue with next
            // rule", before the rule is counted).
            let skipped = match r.action {
                ast::Action::Divert(_) | ast::Action::Tee(_) | ast::Action::Fwd(_) => w.layer2,
                ast::Action::Reass => !w.layer2 && p.ip_version == 6,
                ast::Action::Call(_) => stack.len() >= CALL_STACK_DEPTH || calls >= MAX_CALLS,
                ast::Action::Return => stack.is_empty(),
                _ => false,
            };
            if skipped {
                i += 1;
                continue;
            }
            counts[i] += 1;
            match r.head.tag {
                Some(ast::TagOp::Tag(n)) => {
                    w.tags.insert(n);
                }
                Some(ast::TagOp::Untag(n)) => {
                    w.tags.remove(&n);
                }
                None => {}
            }
            let target = |n: u32| {
                self.rules
                    .iter()
                    .position(|r| u32::from(r.number) >= n)
                    .unwrap_or(self.rules.len())
            };
            let handoff = |w: &mut Walk| -> Option<bool> {
                if self.one_pass {
                    Some(true)
                } else {
                    let _ = w;
                    None
                }
            };
            use ast::Action as A;
            let verdict: Option<bool> = match &r.action {
                A::Allow | A::Fwd(_) => Some(true),
                A::Deny
                | A::Reject
                | A::Reset
                | A::Unreach(_)
                | A::Abort
                | A::Unreach6(_)
                | A::Reset6
                | A::Abort6 => Some(false),
                A::Skipto(n) => {
                    i = target(u32::from(*n));
                    continue;
                }
                A::SkiptoTablearg => {
                    i = match self.tablearg(r, p, w) {
                        Some(v) if target(v) > i => target(v),
                        _ => i + 1,
                    };
                    continue;
                }
                A::Call(n) if stack.len() < CALL_STACK_DEPTH && calls < MAX_CALLS => {
                    stack.push(i + 1);
                    calls += 1;
                    i = target(u32::from(*n));
                    continue;
                }
                A::Return if !stack.is_empty() => {
                    i = stack.pop().unwrap();
                    continue;
                }
                A::Nat(_) | A::Reass if w.layer2 => Some(true),
                A::Nat(_) if p.ip_version != 4 => Some(false),
                A::Pipe(_) | A::Queue(_) | A::Netgraph(_) | A::Nat(_) => handoff(w),
                A::Divert(_) => {
                    let v = handoff(w);
                    w.diverted = if p.direction == Direction::Out { 2 } else { 1 };
                    v
                }
                A::Reass if p.frag & (frag::MF | frag::LATER) != 0 => Some(true),
                A::SetFib(ast::Arg::Number(n)) => {
                    w.fib = *n as u16;
                    None
                }
                A::SetFib(ast::Arg::Tablearg) => {
                    w.fib = (self.tablearg(r, p, w).unwrap_or(0) & 0x7fff) as u16;
                    None
                }
                A::SetDscp(ast::Arg::Number(c)) => {
                    w.tos = (*c as u8) << 2 | w.tos & 3;
                    None
                }
                A::SetDscp(ast::Arg::Tablearg) => {
                    let c = self.tablearg(r, p, w).unwrap_or(0) & 0x3f;
                    w.tos = (c as u8) << 2 | w.tos & 3;
                    None
                }
                A::TcpSetMss(m) => {
                    let syn_mss = p.proto == 6
                        && p.has_ports
                        && p.tcp_flags & tcp::SYN != 0
                        && p.tcp_opts & tcpopt::MSS != 0;
                    if syn_mss && w.mss > *m {
                        w.mss = *m;
                    }
                    None
                }
                _ => None,
            };
            match verdict {
                Some(pass) => return (i, pass),
                None => i += 1,
            }
        }
        counts[self.rules.len()] += 1;
        (self.rules.len(), false)
    }

    /// The value of the last table lookup of rule `r` that finds the
    /// packet, as ipfw's kernel sets `tablearg` (a matching member of an
    /// or-block ends it: the engine tries a list's prefixes first, then
    /// its other members in order).
    fn tablearg(&self, r: &ast::Rule, p: &Packet, w: &Walk) -> Option<u32> {
        let addrs = |spec: &ast::AddrSpec, a: u128| -> Option<u32> {
            if spec.not {
                return None; // a lookup that finds the packet fails the rule
            }
            let prefix = |i: &ast::Addr| matches!(i, ast::Addr::Prefix(..) | ast::Addr::Masked(..));
            if spec
                .items
                .iter()
                .any(|i| prefix(i) && self.addr_hit(i, a, p))
            {
                return None;
            }
            let first = spec
                .items
                .iter()
                .filter(|i| !prefix(i) && !matches!(i, ast::Addr::Not(_)))
                .find(|i| self.addr_hit(i, a, p))?;
            match first {
                ast::Addr::Table(t, v, _) => self.lookup_addr(t, *v, a, p.ip_version),
                _ => None,
            }
        };
        let mut options = r.body.options.iter().filter_map(|o| match &o.opt {
            ast::Opt::Lookup(k, t) => self.lookup(k, t, p, w),
            _ => None,
        });
        options
            .next_back()
            .or_else(|| addrs(&r.body.dst, p.dst))
            .or_else(|| addrs(&r.body.src, p.src))
    }

    fn table(&self, name: &str) -> &RefTable {
        self.tables
            .iter()
            .find(|t| t.name == name)
            .expect("generated tables exist")
    }

    /// Longest prefix of the table that holds `a`, with the value asked.
    fn lookup_addr(&self, name: &str, want: Option<u32>, a: u128, version: u8) -> Option<u32> {
        let ip = weir_wire::addr_from_u128(a, version);
        let best = self
            .table(name)
            .entries
            .iter()
            .filter_map(|(k, v)| match k {
                ast::TableKey::Prefix(net, len) => match (net, ip) {
                    (IpAddr::V4(n), IpAddr::V4(x)) => {
                        let m = if *len == 0 {
                            0
                        } else {
                            u32::MAX << (32 - u32::from(*len))
                        };
                        (u32::from(*n) & m == u32::from(x) & m).then_some((*len, *v))
                    }
                    (IpAddr::V6(n), IpAddr::V6(x)) => {
                        let m = if *len == 0 {
                            0
                        } else {
                            u128::MAX << (128 - u32::from(*len))
                        };
                        (u128::from(*n) & m == u128::from(x) & m).then_some((*len, *v))
                    }
                    _ => None,
                },
                _ => None,
            })
            .max_by_key(|(l, _)| *l)
            .map(|(_, v)| v)?;
        want.is_none_or(|w| w == best).then_some(best)
    }

    fn lookup(&self, key: &ast::LookupKey, name: &str, p: &Packet, w: &Walk) -> Option<u32> {
        let number = |n: u32| {
            self.table(name).entries.iter().find_map(|(k, v)| match k {
                ast::TableKey::Number(x) if *x == n => Some(*v),
                _ => None,
            })
        };
        match key {
            ast::LookupKey::SrcIp => self.lookup_addr(name, None, p.src, p.ip_version),
            ast::LookupKey::DstIp => self.lookup_addr(name, None, p.dst, p.ip_version),
            ast::LookupKey::SrcPort if p.has_ports => number(u32::from(p.src_port)),
            ast::LookupKey::DstPort if p.has_ports => number(u32::from(p.dst_port)),
            ast::LookupKey::Dscp => number(u32::from(w.tos >> 2)),
            _ => None,
        }
    }

    fn matches(&self, b: &ast::Body, p: &Packet, w: &Walk) -> bool {
        b.proto.iter().any(|pr| self.proto_ok(pr, p))
            && self.addr_ok(&b.src, p.src, p)
            && self.ports_ok(&b.src_ports, p, p.src_port)
            && self.addr_ok(&b.dst, p.dst, p)
            && self.ports_ok(&b.dst_ports, p, p.dst_port)
            && b.options.iter().all(|o| self.option_ok(o, p, w))
    }

    fn proto_ok(&self, pr: &ast::Proto, p: &Packet) -> bool {
        match pr {
            ast::Proto::Any => true,
            ast::Proto::Ip4 => p.ip_version == 4,
            ast::Proto::Ip6 => p.ip_version == 6,
            ast::Proto::Number(n) => p.proto == *n,
            ast::Proto::Name(n, _) => Some(p.proto) == self.names.protocol(n),
        }
    }

    fn addr_ok(&self, spec: &ast::AddrSpec, a: u128, p: &Packet) -> bool {
        let hit = spec.items.iter().any(|item| self.addr_hit(item, a, p));
        hit != spec.not
    }

    fn addr_hit(&self, item: &ast::Addr, a: u128, p: &Packet) -> bool {
        let ip = weir_wire::addr_from_u128(a, p.ip_version);
        match item {
            ast::Addr::Any => true,
            // ipfw's `me` is any local address, IPv4 or IPv6; `me6` IPv6.
            ast::Addr::Me => self.me.contains(&ip),
            ast::Addr::Me6 => p.ip_version == 6 && self.me.contains(&ip),
            ast::Addr::Prefix(net, len) => match (net, ip) {
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
            ast::Addr::Masked(IpAddr::V4(n), IpAddr::V4(m)) => match ip {
                IpAddr::V4(x) => u32::from(*n) & u32::from(*m) == u32::from(x) & u32::from(*m),
                _ => false,
            },
            ast::Addr::Masked(..) => false,
            ast::Addr::Table(t, v, _) => self.lookup_addr(t, *v, a, p.ip_version).is_some(),
            ast::Addr::Set { base, len, members } => match ip {
                IpAddr::V4(x) => {
                    let k = u32::from(x).wrapping_sub(u32::from(*base));
                    k < 1 << (32 - u32::from(*len))
                        && members[(k / 64) as usize] >> (k % 64) & 1 == 1
                }
                _ => false,
            },
            ast::Addr::Not(inner) => !self.addr_hit(inner, a, p),
        }
    }

    fn ports_ok(&self, spec: &Option<ast::PortSpec>, p: &Packet, port: u16) -> bool {
        let Some(spec) = spec else { return true };
        self.port_list_ok(spec, spec.not, p, port)
    }

    /// A later fragment never matches a rule with ports, `not` or not.
    fn port_list_ok(&self, spec: &ast::PortSpec, not: bool, p: &Packet, port: u16) -> bool {
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
        hit != not
    }

    fn option_ok(&self, o: &ast::OptionItem, p: &Packet, w: &Walk) -> bool {
        use ast::Opt;
        let is_tcp = p.proto == 6 && p.has_ports;
        let v4 = p.ip_version == 4;
        let ip = p.ip_version == 4 || p.ip_version == 6;
        let flags = |bits: u8, s: ast::FlagSpec| bits & s.set == s.set && bits & s.clear == 0;
        let in_ranges = |r: &ast::Ranges, v: u16| r.iter().any(|&(a, b)| a <= v && v <= b);
        let iface = |pat: &str| {
            self.iface_names
                .get(p.iface as usize)
                .is_some_and(|n| iface_matches(pat, n))
        };
        // Negated port lists keep their own rule for fragments.
        match &o.opt {
            Opt::SrcPort(spec) => return self.port_list_ok(spec, spec.not != o.not, p, p.src_port),
            Opt::DstPort(spec) => return self.port_list_ok(spec, spec.not != o.not, p, p.dst_port),
            Opt::Via(n) | Opt::Recv(n) | Opt::Xmit(n) if n == "any" => return !o.not,
            _ => {}
        }
        let hit = match &o.opt {
            Opt::In => p.direction == Direction::In,
            Opt::Out => p.direction == Direction::Out,
            Opt::Via(i) => iface(i),
            Opt::Recv(i) => p.direction == Direction::In && iface(i),
            Opt::Xmit(i) => p.direction == Direction::Out && iface(i),
            Opt::ViaTable(..) => unreachable!("not generated"),
            // ip_fw2.c O_ESTAB: all but a bare SYN among RST, ACK, SYN.
            Opt::Established => {
                is_tcp && p.tcp_flags & (tcp::RST | tcp::ACK | tcp::SYN) != tcp::SYN
            }
            Opt::Setup => is_tcp && p.tcp_flags & tcp::SYN != 0 && p.tcp_flags & tcp::ACK == 0,
            Opt::TcpFlags(s) => is_tcp && flags(p.tcp_flags, *s),
            Opt::TcpOptions(s) => is_tcp && flags(p.tcp_opts, *s),
            Opt::TcpSeq(n) => is_tcp && p.tcp_seq == *n,
            Opt::TcpAck(n) => is_tcp && p.tcp_ack == *n,
            Opt::TcpWin(r) => is_tcp && in_ranges(r, p.tcp_win),
            Opt::TcpDataLen(r) => is_tcp && in_ranges(r, p.tcp_data_len),
            // ipfw reads the MSS of SYN segments only.
            Opt::TcpMss(r) => {
                is_tcp
                    && p.tcp_flags & tcp::SYN != 0
                    && p.tcp_opts & tcpopt::MSS != 0
                    && in_ranges(r, w.mss)
            }
            Opt::IcmpTypes(bits) => {
                p.proto == 1 && p.has_icmp && p.icmp_type < 32 && bits >> p.icmp_type & 1 == 1
            }
            Opt::Frag => p.frag & frag::LATER != 0,
            Opt::FragFlags(s) => {
                let bit = |f: u8, b: u8| if p.frag & f != 0 { b } else { 0 };
                let byte = bit(frag::RF, 0x80)
                    | bit(frag::DF, 0x40)
                    | bit(frag::MF, 0x20)
                    | bit(frag::LATER, 1);
                v4 && flags(byte, *s)
            }
            // IPv4 header fields: never match an IPv6 packet (ipfw(8)).
            Opt::IpOptions(s) => v4 && flags(p.ip_options, *s),
            Opt::IpTos(s) => v4 && flags(w.tos, *s),
            Opt::IpPrecedence(n) => v4 && w.tos >> 5 == *n,
            Opt::IpLen(r) => v4 && in_ranges(r, p.ip_len),
            Opt::IpTtl(r) => v4 && in_ranges(r, u16::from(p.ttl)),
            Opt::IpId(r) => v4 && in_ranges(r, p.ip_id),
            Opt::Dscp(bits) => ip && bits >> (w.tos >> 2) & 1 == 1,
            Opt::IpVersion(v) => p.ip_version == *v,
            Opt::Icmp6Types(bits) => {
                let t = usize::from(p.icmp_type);
                p.proto == 58
                    && p.ip_version == 6
                    && p.has_icmp
                    && bits[t / 64] >> (t % 64) & 1 == 1
            }
            Opt::Ext6Hdr(bits) => p.ip_version == 6 && p.ext6 & bits != 0,
            Opt::FlowId(ids) => p.ip_version == 6 && ids.contains(&p.flow_label),
            Opt::Lookup(k, t) => self.lookup(k, t, p, w).is_some(),
            Opt::FlowTable(..) => unreachable!("not generated"),
            Opt::SrcIp { spec, .. } => self.addr_ok(spec, p.src, p),
            Opt::DstIp { spec, .. } => self.addr_ok(spec, p.dst, p),
            Opt::SrcPort(_) | Opt::DstPort(_) => unreachable!("handled above"),
            Opt::Proto(pr) => self.proto_ok(pr, p),
            Opt::Fib(n) => w.fib == *n,
            Opt::Tagged(r) => w.tags.iter().any(|t| in_ranges(r, *t)),
            // The Ethernet header is there only in the layer-2 pass.
            Opt::Mac { dst, src } => {
                let eq = |a: &[u8; 6], m: &ast::MacAddr| {
                    a.iter()
                        .zip(m.addr)
                        .zip(m.mask)
                        .all(|((a, want), mask)| a & mask == want)
                };
                w.layer2 && p.has_mac && eq(&p.mac_dst, dst) && eq(&p.mac_src, src)
            }
            Opt::MacType(r) => w.layer2 && p.has_mac && in_ranges(r, p.ether_type),
            Opt::Layer2 => w.layer2,
            Opt::Diverted(bits) => w.diverted & bits != 0,
            // State options make states; they always "match".
            Opt::KeepState(_) | Opt::RecordState(_) | Opt::Limit { .. } | Opt::DeferAction => {
                !o.not
            }
            Opt::Or(members) => members.iter().any(|m| self.option_ok(m, p, w)),
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

/// The tables every generated ruleset has: addresses `a`, numbers `n`.
const TABLES: &str = "\
table a add 10.0.0.0/8 300
table a add 10.0.0.2 7
table a add 2001:db8::/32 420
table n create type number
table n add 53 1
table n add 80 250
table n add 4 3
table n add 0 500
";

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
        prop::option::of(prop::sample::select(vec![7u32, 300])).prop_map(|v| ast::Addr::Table(
            "a".into(),
            v,
            Default::default()
        )),
    ]
}

fn gen_addr_spec() -> impl Strategy<Value = ast::AddrSpec> {
    let set = (0u64..16).prop_map(|bits| ast::Addr::Set {
        base: "10.0.0.0".parse().unwrap(),
        len: 30,
        members: [bits, 0, 0, 0],
    });
    // A member negated on its own, as ipfw allows in an or-block; not a
    // table, whose tablearg the reference reads from hits only.
    let negated = prop_oneof![gen_addr(), set.clone()]
        .prop_filter("no table", |a| !matches!(a, ast::Addr::Table(..)))
        .prop_map(|a| ast::Addr::Not(Box::new(a)));
    let member = prop_oneof![4 => gen_addr(), 1 => negated];
    prop_oneof![
        5 => (
            prop::bool::weighted(0.2),
            prop::collection::vec(gen_addr(), 1..3),
            any::<bool>(),
        )
            .prop_map(|(not, items, or_block)| ast::AddrSpec {
                not,
                items,
                or_block,
            }),
        2 => (
            prop::bool::weighted(0.2),
            prop::collection::vec(member, 1..4),
        )
            .prop_map(|(not, items)| ast::AddrSpec {
                not,
                items,
                or_block: true,
            }),
        1 => (any::<bool>(), set).prop_map(|(not, s)| ast::AddrSpec {
            not,
            items: vec![s],
            or_block: false,
        }),
    ]
}

fn gen_port_spec() -> impl Strategy<Value = ast::PortSpec> {
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
    (
        prop::bool::weighted(0.2),
        prop::collection::vec(range, 1..3),
    )
        .prop_map(|(not, items)| ast::PortSpec { not, items })
}

fn gen_ports() -> impl Strategy<Value = Option<ast::PortSpec>> {
    prop::option::weighted(0.3, gen_port_spec())
}

fn small_ranges(max: u16) -> impl Strategy<Value = ast::Ranges> {
    (0..max, 0..max).prop_map(|(a, b)| vec![(a.min(b), a.max(b))])
}

/// An option that may stand in an or-block.
fn gen_plain_option() -> impl Strategy<Value = ast::Opt> {
    use ast::Opt;
    let flags = (any::<u8>(), any::<u8>()).prop_map(|(a, b)| ast::FlagSpec {
        set: a & 0x17,
        clear: b & 0x17 & !a,
    });
    let bits = |mask: u8| {
        (any::<u8>(), any::<u8>()).prop_map(move |(a, b)| ast::FlagSpec {
            set: a & mask,
            clear: b & mask & !a,
        })
    };
    prop_oneof![
        Just(Opt::In),
        Just(Opt::Out),
        Just(Opt::Via("eth*".into())),
        Just(Opt::Recv("eth0".into())),
        Just(Opt::Xmit("wan0".into())),
        Just(Opt::Via("any".into())),
        Just(Opt::Established),
        Just(Opt::Setup),
        Just(Opt::Frag),
        bits(0xe1).prop_map(Opt::FragFlags),
        flags.prop_map(Opt::TcpFlags),
        bits(0x0f).prop_map(Opt::TcpOptions),
        (0u32..16).prop_map(|b| Opt::IcmpTypes(1 << b | 1)),
        (0u8..4, 0u8..4).prop_map(|(s, c)| Opt::IpOptions(ast::FlagSpec {
            set: s,
            clear: c & !s
        })),
        bits(0x1f).prop_map(Opt::IpTos),
        bits(0x1f).prop_map(Opt::IpTos),
        (20u16..100).prop_map(|n| Opt::IpLen(vec![(n, n + 20)])),
        (0u16..10).prop_map(|n| Opt::IpTtl(vec![(n, n + 3)])),
        small_ranges(8).prop_map(Opt::IpId),
        small_ranges(8).prop_map(Opt::TcpWin),
        small_ranges(8).prop_map(Opt::TcpDataLen),
        small_ranges(1500).prop_map(Opt::TcpMss),
        (0u32..4).prop_map(Opt::TcpSeq),
        (0u32..4).prop_map(Opt::TcpAck),
        (0u8..8).prop_map(Opt::IpPrecedence),
        (1u64..16).prop_map(|b| Opt::Dscp(b << 3 | b)),
        prop::sample::select(vec![4u8, 6]).prop_map(Opt::IpVersion),
        (0usize..4).prop_map(|t| {
            let mut bits = [0u64; 4];
            bits[2] |= 1 << t; // types 128..131: echo request/reply, MLD
            Opt::Icmp6Types(bits)
        }),
        (1u8..=255).prop_map(Opt::Ext6Hdr),
        prop::collection::vec(0u32..4, 1..3).prop_map(Opt::FlowId),
        prop::sample::select(vec![
            ast::LookupKey::SrcIp,
            ast::LookupKey::DstIp,
            ast::LookupKey::SrcPort,
            ast::LookupKey::DstPort,
            ast::LookupKey::Dscp
        ])
        .prop_map(|k| {
            let t = if matches!(k, ast::LookupKey::SrcIp | ast::LookupKey::DstIp) {
                "a"
            } else {
                "n"
            };
            Opt::Lookup(k, t.into())
        }),
        prop::collection::vec(gen_addr(), 1..3).prop_map(|items| Opt::DstIp {
            v6: false,
            spec: ast::AddrSpec {
                not: false,
                items,
                or_block: false
            }
        }),
        gen_port_spec().prop_map(Opt::SrcPort),
        gen_port_spec().prop_map(Opt::DstPort),
        prop::sample::select(vec![6u8, 17, 1]).prop_map(|n| Opt::Proto(ast::Proto::Number(n))),
        (0u16..3).prop_map(Opt::Fib),
        small_ranges(4).prop_map(Opt::Tagged),
        small_ranges(4).prop_map(Opt::Tagged),
        (any::<bool>(), any::<bool>()).prop_map(|(a, b)| {
            let m = |on: bool| ast::MacAddr {
                addr: [0, 0, 0, 0, 0, u8::from(on)],
                mask: if on { [0xff; 6] } else { [0; 6] },
            };
            Opt::Mac {
                dst: m(a),
                src: m(b),
            }
        }),
        small_ranges(4).prop_map(Opt::MacType),
        Just(Opt::Layer2),
        prop::sample::select(vec![1u8, 2, 3]).prop_map(Opt::Diverted),
    ]
}

fn gen_option() -> impl Strategy<Value = ast::OptionItem> {
    let item = |(not, opt)| ast::OptionItem {
        not,
        opt,
        span: Default::default(),
    };
    // An or-block member must be one test (or an or of tests): no negated
    // port lists or address lists, which are several tests that all hold.
    let member = (prop::bool::weighted(0.2), gen_plain_option()).prop_map(move |(not, opt)| {
        let mut opt = opt;
        let single = match &mut opt {
            ast::Opt::SrcPort(spec) | ast::Opt::DstPort(spec) => {
                spec.not = false;
                false
            }
            ast::Opt::DstIp { .. } => false,
            _ => true,
        };
        item((not && single, opt))
    });
    let opt = prop_oneof![
        8 => gen_plain_option(),
        1 => prop::collection::vec(member, 2..4).prop_map(ast::Opt::Or),
    ];
    (prop::bool::weighted(0.2), opt).prop_map(move |(not, opt)| {
        let not = not && !matches!(opt, ast::Opt::Or(_));
        item((not, opt))
    })
}

fn gen_state_name() -> impl Strategy<Value = ast::StateName> {
    prop_oneof![2 => Just(None), 1 => Just(Some("s".to_owned()))]
}

/// keep-state, record-state, limit, set-limit, or none (most rules).
fn gen_state_option() -> impl Strategy<Value = Option<ast::OptionItem>> {
    use ast::Opt;
    let opt = prop_oneof![
        6 => Just(None),
        2 => gen_state_name().prop_map(|n| Some(Opt::KeepState(n))),
        1 => gen_state_name().prop_map(|n| Some(Opt::RecordState(n))),
        1 => (1u8..16, 1u32..3, gen_state_name(), any::<bool>())
            .prop_map(|(mask, count, name, probe)| Some(Opt::Limit { mask, count, name, probe })),
    ];
    opt.prop_map(|o| {
        o.map(|opt| ast::OptionItem {
            not: false,
            opt,
            span: Default::default(),
        })
    })
}

fn gen_action() -> impl Strategy<Value = ast::Action> {
    use ast::{Action as A, Arg};
    let arg = prop_oneof![Just(Arg::Number(1)), Just(Arg::Number(2))];
    prop_oneof![
        3 => Just(A::Allow),
        3 => Just(A::Deny),
        1 => Just(A::Reject),
        1 => Just(A::Unreach6(1)),
        1 => Just(A::Abort),
        3 => Just(A::Count),
        2 => (1u16..=60).prop_map(|n| A::Skipto(n * 10)),
        1 => Just(A::SkiptoTablearg),
        2 => (1u16..=60).prop_map(|n| A::Call(n * 10)),
        2 => Just(A::Return),
        1 => gen_state_name().prop_map(A::CheckState),
        1 => Just(A::CheckState(Some("any".into()))),
        1 => arg.clone().prop_map(A::Pipe),
        1 => arg.clone().prop_map(A::Netgraph),
        1 => Just(A::Divert(ast::DivertPort::Port(ast::Port::Number(8668)))),
        1 => Just(A::Tee(ast::DivertPort::Port(ast::Port::Number(8000)))),
        1 => Just(A::Nat(ast::NatArg::Number(1))),
        1 => Just(A::Fwd(ast::FwdTarget { addr: Some("192.0.2.1".parse().unwrap()), port: None })),
        1 => (0u32..3).prop_map(|n| A::SetFib(Arg::Number(n))),
        1 => Just(A::SetFib(Arg::Tablearg)),
        2 => (0u32..64).prop_map(|c| A::SetDscp(Arg::Number(c))),
        1 => Just(A::SetDscp(Arg::Tablearg)),
        1 => Just(A::Reass),
        1 => (500u16..1500).prop_map(A::TcpSetMss),
    ]
}

fn gen_head() -> impl Strategy<Value = ast::RuleHead> {
    (
        0u8..3,
        prop::option::weighted(
            0.15,
            prop::sample::select(vec![1u32 << 31, 1 << 30, 3 << 30]),
        ),
        prop::option::weighted(
            0.35,
            prop_oneof![
                (1u16..4).prop_map(ast::TagOp::Tag),
                (1u16..4).prop_map(ast::TagOp::Untag)
            ],
        ),
    )
        .prop_map(|(set, prob, tag)| ast::RuleHead {
            set,
            prob: prob.map(ast::Prob),
            altq: None,
            tag,
        })
}

fn gen_rule() -> impl Strategy<Value = ast::Rule> {
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
        (1u16..60, gen_head(), gen_action()),
        protos,
        gen_addr_spec(),
        gen_ports(),
        gen_addr_spec(),
        gen_ports(),
        prop::collection::vec(gen_option(), 0..3),
        gen_state_option(),
        prop::bool::weighted(0.1),
    )
        .prop_map(
            |((n, head, action), proto, src, sp, dst, dp, mut options, state, defer)| {
                let number = n * 10;
                let check = matches!(action, ast::Action::CheckState(_));
                if !check {
                    options.extend(state);
                    if defer {
                        options.push(ast::OptionItem {
                            not: false,
                            opt: ast::Opt::DeferAction,
                            span: Default::default(),
                        });
                    }
                }
                // Jumps must go forward; ports need tcp/udp; tablearg
                // needs a table test.
                let tablearg = matches!(
                    action,
                    ast::Action::SkiptoTablearg
                        | ast::Action::SetFib(ast::Arg::Tablearg)
                        | ast::Action::SetDscp(ast::Arg::Tablearg)
                );
                if tablearg {
                    options.push(ast::OptionItem {
                        not: false,
                        opt: ast::Opt::Lookup(ast::LookupKey::DstPort, "n".into()),
                        span: Default::default(),
                    });
                }
                let action = match action {
                    ast::Action::Skipto(t) | ast::Action::Call(t) if t <= number => {
                        ast::Action::Count
                    }
                    a => a,
                };
                let port_ok = proto.iter().all(|p| {
                    matches!(p, ast::Proto::Number(17))
                        || matches!(p, ast::Proto::Name(n, _) if n == "tcp")
                });
                let body = if check {
                    ast::Body::match_all()
                } else {
                    ast::Body {
                        proto,
                        src,
                        src_ports: if port_ok { sp } else { None },
                        dst,
                        dst_ports: if port_ok { dp } else { None },
                        options,
                    }
                };
                ast::Rule {
                    number,
                    head,
                    action,
                    log: None,
                    body,
                    comment: None,
                    span: Default::default(),
                }
            },
        )
}

fn gen_packet() -> impl Strategy<Value = Packet> {
    (
        (
            0..ADDRS.len(),
            0..ADDRS.len(),
            prop::sample::select(vec![1u8, 6, 17, 47]),
        ),
        (0u16..100, 0u16..100, any::<u8>(), 0u8..16, any::<bool>()),
        (0u8..=255, 0u8..4, 0u8..=255, 20u16..120, 0u8..12),
        (
            prop::sample::select(vec![Direction::In, Direction::Out]),
            0u16..4,
        ),
        (
            0u16..10,
            0u32..4,
            0u32..4,
            0u16..10,
            0u16..10,
            0u8..16,
            400u16..1600,
        ),
        (0u32..4, 0u8..8, any::<bool>(), 0u8..2, 0u8..2, 0u16..6),
    )
        .prop_map(
            |(
                (s, d, proto),
                (sp, dp, flags, icmp, later),
                (ext, opts, tos, len, ttl),
                (direction, iface),
                (ip_id, seq, ack, win, data, tcp_opts, mss),
                (flow_label, frag_bits, has_mac, mac_dst, mac_src, ether_type),
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
                let tcp_l4 = l4 && proto == 6;
                let frag_bits = frag_bits & (frag::MF | frag::DF | frag::RF);
                Packet {
                    src: addr_to_u128(src),
                    dst: addr_to_u128(dst),
                    l3: L3::Ip,
                    ip_version: if v6 { 6 } else { 4 },
                    proto,
                    src_port: if l4 { sp } else { 0 },
                    dst_port: if l4 { dp } else { 0 },
                    has_ports: l4,
                    tcp_flags: if tcp_l4 { flags } else { 0 },
                    tcp_opts: if tcp_l4 { tcp_opts } else { 0 },
                    tcp_seq: if tcp_l4 { seq } else { 0 },
                    tcp_ack: if tcp_l4 { ack } else { 0 },
                    tcp_win: if tcp_l4 { win } else { 0 },
                    tcp_data_len: if tcp_l4 { data } else { 0 },
                    tcp_mss: if tcp_l4 && tcp_opts & tcpopt::MSS != 0 {
                        mss
                    } else {
                        0
                    },
                    icmp_type: icmp,
                    has_icmp: !later && (proto == 1 || proto == 58),
                    ext6: if v6 { ext } else { 0 },
                    ip_len: len,
                    ip_id: if v6 { 0 } else { ip_id },
                    flow_label: if v6 { flow_label } else { 0 },
                    ttl,
                    tos,
                    frag: if later { frag::LATER } else { 0 } | if v6 { 0 } else { frag_bits },
                    ip_options: if v6 { 0 } else { opts },
                    mac_dst: [0, 0, 0, 0, 0, mac_dst],
                    mac_src: [0, 0, 0, 0, 0, mac_src],
                    ether_type,
                    has_mac,
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
        (one_pass, layer2, fib, seed) in (any::<bool>(), prop::bool::weighted(0.3), 0u16..3, any::<u64>()),
        disabled_sets in 0u32..4,
    ) {
        let span = Default::default();
        let settings = vec![
            ast::Setting { name: "dyn_max".into(), value: dyn_max, span },
            ast::Setting { name: "one_pass".into(), value: u32::from(one_pass), span },
            ast::Setting { name: "net.link.ether.ipfw".into(), value: u32::from(layer2), span },
        ];
        let tables = weir_rules::parse(TABLES).unwrap().tables;
        let rs = ast::Ruleset { rules, settings, tables: tables.clone(), disabled_sets: 0 };
        let names = Names::default();
        let opts = CompileOptions { disabled_sets, ..CompileOptions::default() };
        let prog = compile(&rs, &names, &opts).expect("generated rules compile");
        let mut sorted: Vec<&ast::Rule> = rs
            .rules
            .iter()
            .filter(|r| disabled_sets >> r.head.set & 1 == 0)
            .collect();
        sorted.sort_by_key(|r| r.number);
        let mut name_order = vec!["default".to_owned()];
        for r in &sorted {
            let n = state_name(r);
            let names_one = state_option(r).is_some()
                || matches!(&r.action, ast::Action::CheckState(Some(n)) if n != "any");
            if names_one && !name_order.contains(&n) {
                name_order.push(n);
            }
        }
        let mut ref_tables: Vec<RefTable> = Vec::new();
        for t in &tables {
            if let ast::TableOp::Add { key, value, .. } = &t.op {
                match ref_tables.iter_mut().find(|r| r.name == t.table) {
                    Some(r) => r.entries.push((key.clone(), value.number(ast::ValueField::Tag))),
                    None => ref_tables.push(RefTable { name: t.table.clone(), entries: vec![(key.clone(), value.number(ast::ValueField::Tag))] }),
                }
            }
        }
        let mut reference = Ref {
            rules: sorted,
            names: names.clone(),
            me: vec!["10.0.0.2".parse().unwrap(), "2001:db8::1".parse().unwrap()],
            iface_names: vec!["eth0", "eth1", "wan0"],
            tables: ref_tables,
            states: Vec::new(),
            name_order,
            dyn_max: dyn_max as usize,
            now: 0,
            one_pass,
            layer2,
            fib,
            seed,
            packet_no: 0,
        };
        // Both dispatchers, each with both classifiers and the linear walk.
        let mut engines: Vec<Engine> = [DispatchKind::Match, DispatchKind::Table]
            .into_iter()
            .flat_map(|d| [(d, WalkKind::Bits), (d, WalkKind::Linear), (d, WalkKind::Trie)])
            .map(|(d, walk)| {
                let me = reference
                    .me
                    .iter()
                    .map(|a| (addr_to_u128(*a), if a.is_ipv4() { 4 } else { 6 }))
                    .collect();
                let mut e = Engine::builder(prog.clone())
                    .dispatch(d)
                    .walk(walk)
                    .me(me)
                    .fib(fib)
                    .seed(seed)
                    .build();
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
                prop_assert_eq!(d.rule, Some(ri), "{:?} {:?} on {:?}", e.dispatch(), e.walk_kind(), p);
                prop_assert_eq!(d.verdict == Verdict::Pass, pass);
            }
        }
        for e in &engines {
            let counts: Vec<u64> = e.counters().iter().map(|c| c.packets).collect();
            prop_assert_eq!(&counts, &ref_counts);
        }
    }
}
