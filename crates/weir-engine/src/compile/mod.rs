//! Compiles a parsed ruleset into a [`Program`].
//!
//! All the expensive choices happen here, once: names resolve to numbers,
//! address lists become one instruction over a pool of masked networks,
//! jump targets become rule indices, and the result is verified.

use crate::program::*;
use weir_rules::{self as ast, Diagnostic, Names, Span};
use weir_wire::v4_mapped;

/// Choices that change what a ruleset means.
#[derive(Clone, Debug, Default)]
pub struct CompileOptions {
    /// The default rule 65535 allows instead of denying.
    pub default_allow: bool,
    /// Lookup tables loaded from files (`--table NAME=FILE`); the ruleset's
    /// `table NAME add` lines add to them.
    pub tables: Vec<(String, weir_table::Builder)>,
}

/// Compiles every rule; any error means no program.
pub fn compile(
    rs: &ast::Ruleset,
    names: &Names,
    opts: &CompileOptions,
) -> Result<Program, Vec<Diagnostic>> {
    let mut prog = Program::default();
    let mut errors = Vec::new();
    let mut builders: std::collections::BTreeMap<String, weir_table::Builder> =
        opts.tables.iter().cloned().collect();
    for e in &rs.table_entries {
        let prefix = match e.addr {
            std::net::IpAddr::V4(a) => weir_table::Prefix::v4(u32::from(a), e.len),
            std::net::IpAddr::V6(a) => weir_table::Prefix::v6(u128::from(a), e.len),
        };
        let added = match prefix {
            Some(prefix) => builders
                .entry(e.table.clone())
                .or_default()
                .add(prefix, e.value)
                .map_err(|err| err.to_string()),
            None => Err("prefix length out of range".to_owned()),
        };
        if let Err(msg) = added {
            errors.push(Diagnostic::new(e.span, format!("table {}: {msg}", e.table)));
        }
    }
    prog.table_names = builders.keys().cloned().collect();
    for setting in &rs.settings {
        if !prog.state_config.set(&setting.name, setting.value) {
            errors.push(Diagnostic::new(
                setting.span,
                format!("unknown setting '{}'", setting.name),
            ));
        }
    }
    // ipfw keeps rules sorted by number, equal numbers in the order added.
    let mut order: Vec<&ast::Rule> = rs.rules.iter().collect();
    order.sort_by_key(|r| r.number);
    for rule in order {
        let start = prog.insns.len() as u32;
        let mut c = RuleCompiler {
            prog: &mut prog,
            names,
            rule,
            state_op: StateOp::None,
        };
        match c.body().and_then(|()| c.check_tablearg()) {
            Ok(()) => {
                let state_op = c.state_op;
                let check_state = rule.action == RuleAction::CheckState;
                if check_state {
                    // Without a state it never matches; with one it fires
                    // before its instructions run (below).
                    prog.insns.push(Insn::new(Op::Never, 0));
                }
                let (proto, mut class_mask, mut class_bits) =
                    hoist_header(&mut prog.insns, start as usize);
                // A probe rule's header requires "no state": a packet of a
                // known flow fails it whatever else the rule says, and the
                // evaluator's header-failure path fires the state.
                let probe =
                    check_state || matches!(state_op, StateOp::Keep | StateOp::Limit { .. });
                if probe {
                    class_mask |= class::STATE;
                    class_bits &= !class::STATE;
                }
                prog.rules.push(Rule {
                    number: rule.number,
                    action: rule.action,
                    log_limit: rule.log.map(|l| l.amount.unwrap_or(u32::MAX)),
                    start,
                    end: prog.insns.len() as u32,
                    jump: 0,
                    proto,
                    class_mask,
                    class_bits,
                    skip_proto: 0,
                    skip_class: 0,
                    probe,
                    state_op,
                    text: rule.to_string(),
                    line: rule.span.line,
                })
            }
            Err(e) => {
                prog.insns.truncate(start as usize);
                errors.push(e);
            }
        }
    }
    for (name, builder) in &builders {
        match builder.build() {
            Ok(t) => prog.tables.push(std::sync::Arc::new(t)),
            Err(e) => errors.push(Diagnostic::new(
                Span::default(),
                format!("table {name}: {e}"),
            )),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let end = prog.insns.len() as u32;
    let (action, text) = if opts.default_allow {
        (RuleAction::Allow, "allow ip from any to any")
    } else {
        (RuleAction::Deny, "deny ip from any to any")
    };
    prog.rules.push(Rule {
        number: DEFAULT_RULE,
        action,
        log_limit: None,
        start: end,
        end,
        jump: 0,
        proto: None,
        class_mask: 0,
        class_bits: 0,
        skip_proto: 0,
        skip_class: 0,
        probe: false,
        state_op: StateOp::None,
        text: text.to_owned(),
        line: 0,
    });
    resolve_jumps(&mut prog.rules);
    skip_steps(&mut prog.rules);
    prog.verify()
        .map_err(|msg| vec![Diagnostic::new(Span::default(), msg)])?;
    Ok(prog)
}

/// `skipto N` / `call N` continue at the first rule numbered N or more.
fn resolve_jumps(rules: &mut [Rule]) {
    for i in 0..rules.len() {
        if let RuleAction::Skipto(n) | RuleAction::Call(n) = rules[i].action {
            rules[i].jump = rules.partition_point(|r| r.number < n) as u32;
        }
    }
}

/// Moves tests that need no operand out of a rule's instructions into its
/// header: a plain `proto`, and one-bit facts (direction, version, `frag`,
/// `established`, `setup`, `ipoptions`) as class bits, negated or not.
/// Or-block members stay instructions. Returns (proto, class mask, bits).
fn hoist_header(insns: &mut Vec<Insn>, start: usize) -> (Option<u8>, u32, u32) {
    let (mut proto, mut mask, mut bits) = (None, 0u32, 0u32);
    let mut k = start;
    while k < insns.len() {
        let ins = insns[k];
        let in_or_block = ins.flags & F_OR != 0 || (k > start && insns[k - 1].flags & F_OR != 0);
        let not = ins.flags & F_NOT != 0;
        let hoisted = !in_or_block
            && match (ins.op, class_test(&ins)) {
                (Op::Proto, _) if !not && proto.is_none() => {
                    proto = Some(ins.arg as u8);
                    true
                }
                (_, Some((m, b))) if mask & m == 0 && (!not || m.count_ones() == 1) => {
                    mask |= m;
                    bits |= if not { m & !b } else { b };
                    true
                }
                _ => false,
            };
        if hoisted {
            insns.remove(k);
        } else {
            k += 1;
        }
    }
    (proto, mask, bits)
}

/// The class bits an instruction tests: (mask, required bits), if it is one.
fn class_test(ins: &Insn) -> Option<(u32, u32)> {
    let bit = |b: u32| Some((b, b));
    match ins.op {
        Op::In => bit(class::IN),
        Op::Out => bit(class::OUT),
        Op::Frag => bit(class::LATER_FRAG),
        Op::Established => bit(class::ESTABLISHED),
        Op::Setup => bit(class::SETUP),
        Op::IpVersion if ins.arg == 4 => bit(class::V4),
        Op::IpVersion if ins.arg == 6 => bit(class::V6),
        Op::IpOptions => {
            let (set, clear) = (ins.arg & 0xff, (ins.arg >> 8) & 0xff);
            // IPv4 only, so the version bit is part of the test.
            (set & clear == 0 && set | clear != 0).then(|| {
                let shift = class::IPOPT_SHIFT;
                ((set | clear) << shift | class::V4, set << shift | class::V4)
            })
        }
        _ => None,
    }
}

/// Computes pf-style skip steps, from the end backwards.
fn skip_steps(rules: &mut [Rule]) {
    for i in (0..rules.len().saturating_sub(1)).rev() {
        let next = &rules[i + 1];
        // A probe rule fires for a packet with a state whatever its
        // protocol, so no protocol skip may jump over one.
        let same_proto = next.proto == rules[i].proto && !next.probe;
        let same_class =
            (next.class_mask, next.class_bits) == (rules[i].class_mask, rules[i].class_bits);
        let (np, nc) = (next.skip_proto, next.skip_class);
        rules[i].skip_proto = if same_proto { np } else { i as u32 + 1 };
        rules[i].skip_class = if same_class { nc } else { i as u32 + 1 };
    }
}

const PORT_PROTOCOLS: [u8; 3] = [6, 17, 132];

struct RuleCompiler<'a> {
    prog: &'a mut Program,
    names: &'a Names,
    rule: &'a ast::Rule,
    state_op: StateOp,
}

impl RuleCompiler<'_> {
    fn err(&self, span: Span, msg: impl Into<String>) -> Diagnostic {
        let span = if span.line == 0 { self.rule.span } else { span };
        Diagnostic::new(span, msg)
    }

    fn body(&mut self) -> Result<(), Diagnostic> {
        let body = &self.rule.body;
        let port_capable = self.protos(&body.proto)?;
        self.addrs(&body.src, Side::Src)?;
        self.ports(&body.src_ports, Side::Src, port_capable)?;
        self.addrs(&body.dst, Side::Dst)?;
        self.ports(&body.dst_ports, Side::Dst, port_capable)?;
        for item in &body.options {
            self.option(item)?;
        }
        Ok(())
    }

    /// Emits a group of alternatives: an or-block, or with `not` every
    /// member negated and all required (De Morgan), as ipfw does.
    fn group(&mut self, mut insns: Vec<Insn>, not: bool) {
        let n = insns.len();
        for (i, ins) in insns.iter_mut().enumerate() {
            if not {
                ins.flags |= F_NOT;
            } else if i + 1 < n {
                ins.flags |= F_OR;
            }
        }
        self.prog.insns.extend(insns);
    }

    /// Returns whether every protocol alternative carries ports.
    fn protos(&mut self, protos: &[ast::Proto]) -> Result<bool, Diagnostic> {
        if protos.contains(&ast::Proto::Any) {
            return Ok(false);
        }
        let mut insns = Vec::new();
        let mut port_capable = true;
        for p in protos {
            let ins = match p {
                ast::Proto::Any => unreachable!("handled above"),
                ast::Proto::Ip4 => Insn::new(Op::IpVersion, 4),
                ast::Proto::Ip6 => Insn::new(Op::IpVersion, 6),
                ast::Proto::Number(n) => Insn::new(Op::Proto, u32::from(*n)),
                ast::Proto::Name(name, span) => {
                    let n = self
                        .names
                        .protocol(name)
                        .ok_or_else(|| self.err(*span, format!("unknown protocol '{name}'")))?;
                    Insn::new(Op::Proto, u32::from(n))
                }
            };
            port_capable &= ins.op == Op::Proto && PORT_PROTOCOLS.contains(&(ins.arg as u8));
            insns.push(ins);
        }
        self.group(insns, false);
        Ok(port_capable)
    }

    fn addrs(&mut self, spec: &ast::AddrSpec, side: Side) -> Result<(), Diagnostic> {
        if spec.items.contains(&ast::Addr::Any) {
            if spec.not {
                self.prog.insns.push(Insn::new(Op::Never, 0));
            }
            return Ok(());
        }
        let first_net = self.prog.nets.len();
        let mut insns = Vec::new();
        for item in &spec.items {
            match item {
                ast::Addr::Any => unreachable!("handled above"),
                ast::Addr::Me => insns.push(Insn::new(side.op(Op::SrcMe, Op::DstMe), 4)),
                ast::Addr::Me6 => insns.push(Insn::new(side.op(Op::SrcMe, Op::DstMe), 6)),
                ast::Addr::Prefix(addr, len) => self.prog.nets.push(prefix_net(*addr, *len)),
                ast::Addr::Masked(addr, mask) => self.prog.nets.push(masked_net(*addr, *mask)),
                ast::Addr::Table(name, value, span) => {
                    let op = side.op(Op::SrcTable, Op::DstTable);
                    insns.push(self.table_insn(op, name, *value, *span)?);
                }
            }
        }
        let count = self.prog.nets.len() - first_net;
        let single = (count == 1).then(|| prefix4_insn(&self.prog.nets[first_net], side));
        if let Some(Some(ins)) = single {
            self.prog.nets.truncate(first_net);
            insns.insert(0, ins);
        } else if count > 0 {
            let len = u16::try_from(count)
                .map_err(|_| self.err(Span::default(), "too many addresses in one list"))?;
            insns.insert(
                0,
                Insn {
                    op: side.op(Op::SrcNet, Op::DstNet),
                    flags: 0,
                    len,
                    arg: first_net as u32,
                },
            );
        }
        self.group(insns, spec.not);
        Ok(())
    }

    fn ports(
        &mut self,
        spec: &Option<ast::PortSpec>,
        side: Side,
        port_capable: bool,
    ) -> Result<(), Diagnostic> {
        let Some(spec) = spec else { return Ok(()) };
        if !port_capable {
            return Err(self.err(
                self.rule.span,
                "ports need the protocol to be tcp, udp or sctp (or a block of them)",
            ));
        }
        let mut ranges = Vec::with_capacity(spec.items.len());
        for item in &spec.items {
            let lo = self.port(&item.lo)?;
            let hi = match &item.hi {
                Some(h) => self.port(h)?,
                None => lo,
            };
            if lo > hi {
                return Err(self.err(self.rule.span, format!("port range {lo}-{hi} is backwards")));
            }
            ranges.push((lo, hi));
        }
        let ins = match ranges.as_slice() {
            [(lo, hi)] => Insn::new(
                side.op(Op::SrcPortRange, Op::DstPortRange),
                u32::from(*lo) | u32::from(*hi) << 16,
            ),
            _ => self.range_insn(side.op(Op::SrcPort, Op::DstPort), ranges)?,
        };
        if spec.not {
            self.prog.insns.push(Insn::new(Op::HasPorts, 0));
        }
        self.group(vec![ins], spec.not);
        Ok(())
    }

    fn port(&self, p: &ast::Port) -> Result<u16, Diagnostic> {
        match p {
            ast::Port::Number(n) => Ok(*n),
            ast::Port::Name(name, span) => self
                .names
                .service(name)
                .ok_or_else(|| self.err(*span, format!("unknown service '{name}'"))),
        }
    }

    fn range_insn(&mut self, op: Op, ranges: Vec<(u16, u16)>) -> Result<Insn, Diagnostic> {
        let len = u16::try_from(ranges.len())
            .map_err(|_| self.err(Span::default(), "too many ranges in one list"))?;
        let arg = self.prog.ranges.len() as u32;
        self.prog.ranges.extend(ranges);
        Ok(Insn {
            op,
            flags: 0,
            len,
            arg,
        })
    }

    fn iface(&mut self, op: Op, name: &str, span: Span) -> Result<Insn, Diagnostic> {
        let idx = match self.prog.iface_patterns.iter().position(|p| p == name) {
            Some(i) => i,
            None => {
                if self.prog.iface_patterns.len() >= MAX_IFACE_PATTERNS {
                    return Err(
                        self.err(span, "more than 64 distinct interface names in one ruleset")
                    );
                }
                self.prog.iface_patterns.push(name.to_owned());
                self.prog.iface_patterns.len() - 1
            }
        };
        Ok(Insn::new(op, idx as u32))
    }

    /// A table test; the table must be defined (file or `table` lines).
    fn table_insn(
        &mut self,
        op: Op,
        name: &str,
        value: Option<u32>,
        span: Span,
    ) -> Result<Insn, Diagnostic> {
        let table = self
            .prog
            .table_names
            .iter()
            .position(|n| n == name)
            .ok_or_else(|| {
                self.err(
                    span,
                    format!(
                        "no such table '{name}' (fill it with `table {name} add PREFIX` lines or --table {name}=FILE)"
                    ),
                )
            })?;
        self.prog.table_refs.push(TableRef {
            table: table as u32,
            value,
        });
        Ok(Insn::new(op, (self.prog.table_refs.len() - 1) as u32))
    }

    /// `skipto tablearg` takes its target from a table test in the rule.
    fn check_tablearg(&self) -> Result<(), Diagnostic> {
        let has_table = self
            .rule
            .body
            .src
            .items
            .iter()
            .chain(&self.rule.body.dst.items)
            .any(|a| matches!(a, ast::Addr::Table(..)))
            || self.rule.body.options.iter().any(|o| {
                matches!(
                    o.opt,
                    ast::Opt::Lookup(ast::LookupKey::SrcIp | ast::LookupKey::DstIp, _)
                )
            });
        if self.rule.action == RuleAction::SkiptoTablearg && !has_table {
            return Err(self.err(
                self.rule.span,
                "skipto tablearg needs a table(NAME) or lookup in the same rule",
            ));
        }
        Ok(())
    }

    /// `keep-state`, `record-state`, `limit`: at most one per rule.
    fn state(&mut self, item: &ast::OptionItem, op: StateOp) -> Result<(), Diagnostic> {
        if item.not {
            return Err(self.err(item.span, "a state option cannot be negated"));
        }
        if self.state_op != StateOp::None {
            return Err(self.err(
                item.span,
                "one rule may have only one of keep-state, record-state and limit",
            ));
        }
        if self.rule.action == RuleAction::CheckState {
            return Err(self.err(item.span, "check-state cannot make states"));
        }
        self.state_op = op;
        Ok(())
    }

    fn option(&mut self, item: &ast::OptionItem) -> Result<(), Diagnostic> {
        let flags = |s: ast::FlagSpec| u32::from(s.set) | u32::from(s.clear) << 8;
        let mut ins = match &item.opt {
            ast::Opt::In => Insn::new(Op::In, 0),
            ast::Opt::Out => Insn::new(Op::Out, 0),
            ast::Opt::Via(n) => self.iface(Op::Via, n, item.span)?,
            ast::Opt::Recv(n) => self.iface(Op::Recv, n, item.span)?,
            ast::Opt::Xmit(n) => self.iface(Op::Xmit, n, item.span)?,
            ast::Opt::Established => Insn::new(Op::Established, 0),
            ast::Opt::Setup => Insn::new(Op::Setup, 0),
            ast::Opt::Frag => Insn::new(Op::Frag, 0),
            ast::Opt::TcpFlags(s) => Insn::new(Op::TcpFlags, flags(*s)),
            ast::Opt::IpOptions(s) => Insn::new(Op::IpOptions, flags(*s)),
            ast::Opt::IpTos(s) => Insn::new(Op::IpTos, flags(*s)),
            ast::Opt::IcmpTypes(bits) => Insn::new(Op::IcmpTypes, *bits),
            ast::Opt::IpVersion(v) => Insn::new(Op::IpVersion, u32::from(*v)),
            ast::Opt::IpLen(r) => self.range_insn(Op::IpLen, r.clone())?,
            ast::Opt::IpTtl(r) => self.range_insn(Op::IpTtl, r.clone())?,
            ast::Opt::Icmp6Types(bits) => {
                self.prog.icmp6_types.push(*bits);
                Insn::new(Op::Icmp6Types, (self.prog.icmp6_types.len() - 1) as u32)
            }
            ast::Opt::Ext6Hdr(bits) => Insn::new(Op::Ext6Hdr, u32::from(*bits)),
            ast::Opt::Lookup(key, table) => match key {
                ast::LookupKey::SrcIp => self.table_insn(Op::SrcTable, table, None, item.span)?,
                ast::LookupKey::DstIp => self.table_insn(Op::DstTable, table, None, item.span)?,
                ast::LookupKey::SrcPort | ast::LookupKey::DstPort => {
                    return Err(self.err(
                        item.span,
                        "lookup src-port/dst-port: port tables are not supported; use a port list",
                    ));
                }
            },
            ast::Opt::KeepState => return self.state(item, StateOp::Keep),
            ast::Opt::RecordState => return self.state(item, StateOp::Record),
            &ast::Opt::Limit { mask, count } => {
                return self.state(item, StateOp::Limit { mask, count })
            }
        };
        if item.not {
            ins.flags |= F_NOT;
        }
        self.prog.insns.push(ins);
        Ok(())
    }
}

#[derive(Clone, Copy)]
enum Side {
    Src,
    Dst,
}

impl Side {
    fn op(self, src: Op, dst: Op) -> Op {
        match self {
            Side::Src => src,
            Side::Dst => dst,
        }
    }
}

/// The inline form of one contiguous IPv4 prefix, when the net is one.
fn prefix4_insn(net: &Net, side: Side) -> Option<Insn> {
    let m = net.mask as u32;
    let contiguous = m.leading_ones() + m.trailing_zeros() == 32;
    (net.version == 4 && contiguous).then(|| Insn {
        op: side.op(Op::SrcPrefix4, Op::DstPrefix4),
        flags: 0,
        len: m.leading_ones() as u16,
        arg: net.value as u32,
    })
}

/// All-ones over the 96 bits that make an address IPv4-mapped.
const V4_MAPPED_MASK: u128 = !0u128 << 32;

fn prefix_net(addr: std::net::IpAddr, len: u8) -> Net {
    match addr {
        std::net::IpAddr::V4(a) => {
            let m = if len == 0 {
                0
            } else {
                u32::MAX << (32 - u32::from(len))
            };
            Net {
                value: v4_mapped(u32::from(a) & m),
                mask: V4_MAPPED_MASK | u128::from(m),
                version: 4,
            }
        }
        std::net::IpAddr::V6(a) => {
            let m = if len == 0 {
                0
            } else {
                u128::MAX << (128 - u32::from(len))
            };
            Net {
                value: u128::from(a) & m,
                mask: m,
                version: 6,
            }
        }
    }
}

fn masked_net(addr: std::net::IpAddr, mask: std::net::IpAddr) -> Net {
    match (addr, mask) {
        (std::net::IpAddr::V4(a), std::net::IpAddr::V4(m)) => {
            let m = u32::from(m);
            Net {
                value: v4_mapped(u32::from(a) & m),
                mask: V4_MAPPED_MASK | u128::from(m),
                version: 4,
            }
        }
        // The parser only makes IPv4 masks; treat anything else as exact.
        _ => prefix_net(addr, if addr.is_ipv4() { 32 } else { 128 }),
    }
}
