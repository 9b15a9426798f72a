//! One rule's body: protocol, addresses, ports and options, into
//! instructions.
//!
//! Each part compiles to a run of instructions that, appended, means the
//! part; an or-block joins its members' runs with `F_OR`.

use crate::program::*;
use weir_rules::{self as ast, Diagnostic, Names, Span, TableKind};
use weir_wire::{proto, v4_mapped};

pub(super) struct RuleCompiler<'a> {
    prog: &'a mut Program,
    names: &'a Names,
    rule: &'a ast::Rule,
    no_me: bool,
    /// Where this rule's instructions start.
    start: usize,
    /// What the rule does to the state table, under which name, and
    /// whether its action waits for the state (`defer-action`).
    pub state_op: StateOp,
    pub state_name: ast::StateName,
    pub defer: bool,
}

type Insns = Vec<Insn>;
type CResult<T> = Result<T, Diagnostic>;

impl<'a> RuleCompiler<'a> {
    pub fn new(prog: &'a mut Program, names: &'a Names, rule: &'a ast::Rule, no_me: bool) -> Self {
        RuleCompiler {
            start: prog.insns.len(),
            prog,
            names,
            rule,
            no_me,
            state_op: StateOp::None,
            state_name: None,
            defer: false,
        }
    }

    fn err(&self, span: Span, msg: impl Into<String>) -> Diagnostic {
        let span = if span.line == 0 { self.rule.span } else { span };
        Diagnostic::new(span, msg)
    }

    pub fn body(&mut self) -> CResult<()> {
        let body = &self.rule.body;
        let (protos, port_capable) = self.protos(&body.proto)?;
        self.emit(protos);
        let src = self.addrs(&body.src, Side::Src, false)?;
        self.emit(src);
        if let Some(spec) = &body.src_ports {
            let ports = self.ports(spec, Side::Src, Some(port_capable), false)?;
            self.emit(ports);
        }
        let dst = self.addrs(&body.dst, Side::Dst, false)?;
        self.emit(dst);
        if let Some(spec) = &body.dst_ports {
            let ports = self.ports(spec, Side::Dst, Some(port_capable), false)?;
            self.emit(ports);
        }
        for item in &body.options {
            let insns = self.option(item)?;
            self.emit(insns);
        }
        Ok(())
    }

    fn emit(&mut self, insns: Insns) {
        self.prog.insns.extend(insns);
    }

    /// A group of alternatives: an or-block, or with `not` every member
    /// negated and all required (De Morgan), as ipfw does.
    fn group(mut insns: Insns, not: bool) -> Insns {
        let n = insns.len();
        for (i, ins) in insns.iter_mut().enumerate() {
            if not {
                ins.flags ^= F_NOT;
            } else if i + 1 < n {
                ins.flags |= F_OR;
            }
        }
        insns
    }

    /// The protocol alternatives, and whether every one carries ports.
    fn protos(&mut self, protos: &[ast::Proto]) -> CResult<(Insns, bool)> {
        if protos.contains(&ast::Proto::Any) {
            return Ok((Vec::new(), false));
        }
        let mut insns = Vec::new();
        let mut port_capable = true;
        for p in protos {
            let ins = self.proto(p)?.expect("not ip");
            port_capable &= ins.op == Op::Proto && proto::WITH_PORTS.contains(&(ins.arg as u8));
            insns.push(ins);
        }
        Ok((Self::group(insns, false), port_capable))
    }

    /// One protocol's test (None for `ip`/`all`).
    fn proto(&self, p: &ast::Proto) -> CResult<Option<Insn>> {
        Ok(Some(match p {
            ast::Proto::Any => return Ok(None),
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
        }))
    }

    /// An address list: `not` (of the list, flipped by `negate`) negates
    /// every member and requires them all. The plain members' prefixes
    /// share one net list; a member negated inside an or-block (`{ a or
    /// not b }`) is an instruction of its own, negated.
    fn addrs(&mut self, spec: &ast::AddrSpec, side: Side, negate: bool) -> CResult<Insns> {
        let not = spec.not ^ negate;
        if spec.items.contains(&ast::Addr::Any) {
            return Ok(if not {
                vec![Insn::new(Op::Never, 0)]
            } else {
                Vec::new()
            });
        }
        let first_net = self.prog.nets.len();
        let mut insns = Vec::new();
        for item in spec
            .items
            .iter()
            .filter(|a| !matches!(a, ast::Addr::Not(_)))
        {
            if let Some(ins) = self.addr_insn(item, side)? {
                insns.push(ins);
            }
        }
        let count = self.prog.nets.len() - first_net;
        if count > 0 {
            insns.insert(0, self.net_insn(first_net, side)?);
        }
        for item in &spec.items {
            if let ast::Addr::Not(inner) = item {
                let before = self.prog.nets.len();
                let mut ins = match self.addr_insn(inner, side)? {
                    Some(ins) => ins,
                    None if self.prog.nets.len() > before => self.net_insn(before, side)?,
                    None => {
                        insns.push(Insn::new(Op::Never, 0)); // `not any`
                        continue;
                    }
                };
                ins.flags ^= F_NOT;
                insns.push(ins);
            }
        }
        Ok(Self::group(insns, not))
    }

    /// The test for one address; None when it is a prefix, which joins
    /// the net list (or is `any`).
    fn addr_insn(&mut self, item: &ast::Addr, side: Side) -> CResult<Option<Insn>> {
        Ok(Some(match item {
            ast::Addr::Any => return Ok(None),
            ast::Addr::Me | ast::Addr::Me6 => {
                if self.no_me {
                    return Err(self.err(
                        self.rule.span,
                        format!(
                            "rule {} uses '{item}', which needs this host's addresses: give --me ADDR,…",
                            self.rule.number
                        ),
                    ));
                }
                let family = if *item == ast::Addr::Me6 { 6 } else { 0 };
                Insn::new(side.op(Op::SrcMe, Op::DstMe), family)
            }
            ast::Addr::Prefix(addr, len) => {
                self.prog.nets.push(prefix_net(*addr, *len));
                return Ok(None);
            }
            ast::Addr::Masked(addr, mask) => {
                self.prog.nets.push(masked_net(*addr, *mask));
                return Ok(None);
            }
            ast::Addr::Table(name, value, span) => {
                let op = side.op(Op::SrcTable, Op::DstTable);
                self.table_insn(op, name, *value, *span, TableKind::Addr)?
            }
            ast::Addr::Set { base, len, members } => {
                self.prog.addr_sets.push(AddrSet {
                    base: u32::from(*base),
                    size: 1 << (32 - u32::from(*len)),
                    members: *members,
                });
                let arg = (self.prog.addr_sets.len() - 1) as u32;
                Insn::new(side.op(Op::SrcSet, Op::DstSet), arg)
            }
            ast::Addr::Not(_) => {
                return Err(self.err(self.rule.span, "'not' inside 'not' in an address block"))
            }
        }))
    }

    /// The test for the nets from `first` to the end of the pool: one
    /// IPv4 prefix inline, or a list.
    fn net_insn(&mut self, first: usize, side: Side) -> CResult<Insn> {
        let count = self.prog.nets.len() - first;
        if count == 1 {
            if let Some(ins) = prefix4_insn(&self.prog.nets[first], side) {
                self.prog.nets.truncate(first);
                return Ok(ins);
            }
        }
        let len = u16::try_from(count)
            .map_err(|_| self.err(Span::default(), "too many addresses in one list"))?;
        Ok(Insn {
            op: side.op(Op::SrcNet, Op::DstNet),
            flags: 0,
            len,
            arg: first as u32,
        })
    }

    /// A port list. In the body, `port_capable` says whether the rule's
    /// protocols carry ports (they must); options pass None.
    fn ports(
        &mut self,
        spec: &ast::PortSpec,
        side: Side,
        port_capable: Option<bool>,
        negate: bool,
    ) -> CResult<Insns> {
        if port_capable == Some(false) {
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
        // A later fragment never matches a rule with ports, `not` or not.
        let not = spec.not ^ negate;
        let mut insns = if not {
            vec![Insn::new(Op::HasPorts, 0)]
        } else {
            Vec::new()
        };
        insns.extend(Self::group(vec![ins], not));
        Ok(insns)
    }

    fn port(&self, p: &ast::Port) -> CResult<u16> {
        match p {
            ast::Port::Number(n) => Ok(*n),
            ast::Port::Name(name, span) => self
                .names
                .service(name)
                .ok_or_else(|| self.err(*span, format!("unknown service '{name}'"))),
        }
    }

    fn range_insn(&mut self, op: Op, ranges: Vec<(u16, u16)>) -> CResult<Insn> {
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

    fn iface(&mut self, op: Op, name: &str, span: Span) -> CResult<Insn> {
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

    /// A table test; the table must exist (files or `table` lines) and be
    /// of the kind the test reads.
    fn table_insn(
        &mut self,
        op: Op,
        name: &str,
        value: Option<u32>,
        span: Span,
        kind: TableKind,
    ) -> CResult<Insn> {
        // Sorted (tables are built from a BTreeMap): a search, not a scan.
        let table = self
            .prog
            .table_names
            .binary_search_by(|n| n.as_str().cmp(name))
            .map_err(|_| {
                self.err(
                    span,
                    format!(
                        "no such table '{name}' (fill it with `table {name} add …` lines or --table {name}=FILE)"
                    ),
                )
            })?;
        let have = self.prog.tables[table].kind();
        let fits = match kind {
            TableKind::Flow(_) => matches!(have, TableKind::Flow(_)),
            k => have == k,
        };
        if !fits {
            return Err(self.err(
                span,
                format!(
                    "table '{name}' holds {}, not {}",
                    crate::tables::kind_words(have),
                    crate::tables::kind_words(kind)
                ),
            ));
        }
        self.prog.table_refs.push(TableRef {
            table: table as u32,
            value,
        });
        Ok(Insn::new(op, (self.prog.table_refs.len() - 1) as u32))
    }

    /// `tablearg` in an action takes its value from a table test in the
    /// rule.
    pub fn check_tablearg(&self) -> CResult<()> {
        let uses = self.rule.action.takes_tablearg();
        let has_table = self.prog.insns[self.start..].iter().any(|i| {
            matches!(
                i.op,
                Op::SrcTable
                    | Op::DstTable
                    | Op::SrcPortTable
                    | Op::DstPortTable
                    | Op::DscpTable
                    | Op::FlowTable
                    | Op::IfaceTable
            )
        });
        if uses && !has_table {
            return Err(self.err(
                self.rule.span,
                format!(
                    "{} tablearg needs a table(NAME), lookup or flow table in the same rule",
                    self.rule.action.word()
                ),
            ));
        }
        Ok(())
    }

    /// `keep-state`, `record-state`, `limit`, `set-limit`: at most one.
    fn state(
        &mut self,
        item: &ast::OptionItem,
        op: StateOp,
        name: &ast::StateName,
    ) -> CResult<Insns> {
        if item.not {
            return Err(self.err(item.span, "a state option cannot be negated"));
        }
        if self.state_op != StateOp::None {
            return Err(self.err(
                item.span,
                "one rule may have only one of keep-state, record-state, limit and set-limit",
            ));
        }
        self.state_op = op;
        self.state_name = name.clone();
        Ok(Vec::new())
    }

    fn option(&mut self, item: &ast::OptionItem) -> CResult<Insns> {
        let flags = |s: ast::FlagSpec| u32::from(s.set) | u32::from(s.clear) << 8;
        let one = |op: Op, arg: u32| vec![Insn::new(op, arg)];
        let insns = match &item.opt {
            ast::Opt::In => one(Op::In, 0),
            ast::Opt::Out => one(Op::Out, 0),
            // `via any` is no test at all in ipfw.
            ast::Opt::Via(n) | ast::Opt::Recv(n) | ast::Opt::Xmit(n) if n == "any" => {
                return Ok(if item.not {
                    one(Op::Never, 0)
                } else {
                    Vec::new()
                })
            }
            ast::Opt::Via(n) => vec![self.iface(Op::Via, n, item.span)?],
            ast::Opt::Recv(n) => vec![self.iface(Op::Recv, n, item.span)?],
            ast::Opt::Xmit(n) => vec![self.iface(Op::Xmit, n, item.span)?],
            ast::Opt::ViaTable(dir, t) => {
                let mut ins =
                    self.table_insn(Op::IfaceTable, t, None, item.span, TableKind::Iface)?;
                ins.len = *dir as u16;
                vec![ins]
            }
            ast::Opt::Established => one(Op::Established, 0),
            ast::Opt::Setup => one(Op::Setup, 0),
            ast::Opt::Frag => one(Op::Frag, 0),
            ast::Opt::FragFlags(s) => one(Op::FragFlags, flags(*s)),
            ast::Opt::TcpFlags(s) => one(Op::TcpFlags, flags(*s)),
            ast::Opt::TcpOptions(s) => one(Op::TcpOpts, flags(*s)),
            ast::Opt::IpOptions(s) => one(Op::IpOptions, flags(*s)),
            ast::Opt::IpTos(s) => one(Op::IpTos, flags(*s)),
            ast::Opt::IcmpTypes(bits) => one(Op::IcmpTypes, *bits),
            ast::Opt::IpVersion(v) => one(Op::IpVersion, u32::from(*v)),
            ast::Opt::IpLen(r) => vec![self.range_insn(Op::IpLen, r.clone())?],
            ast::Opt::IpTtl(r) => vec![self.range_insn(Op::IpTtl, r.clone())?],
            ast::Opt::IpId(r) => vec![self.range_insn(Op::IpId, r.clone())?],
            ast::Opt::TcpDataLen(r) => vec![self.range_insn(Op::TcpDataLen, r.clone())?],
            ast::Opt::TcpWin(r) => vec![self.range_insn(Op::TcpWin, r.clone())?],
            ast::Opt::TcpMss(r) => vec![self.range_insn(Op::TcpMss, r.clone())?],
            ast::Opt::MacType(r) => vec![self.range_insn(Op::MacType, r.clone())?],
            ast::Opt::TcpSeq(n) => one(Op::TcpSeq, *n),
            ast::Opt::TcpAck(n) => one(Op::TcpAck, *n),
            ast::Opt::IpPrecedence(p) => one(Op::IpPrecedence, u32::from(*p) << 5),
            ast::Opt::Dscp(bits) => {
                self.prog.bitmaps.push(*bits);
                one(Op::Dscp, (self.prog.bitmaps.len() - 1) as u32)
            }
            ast::Opt::Tagged(ranges) => {
                let mask = self
                    .prog
                    .tag_values
                    .iter()
                    .enumerate()
                    .filter(|(_, t)| ranges.iter().any(|&(lo, hi)| lo <= **t && **t <= hi))
                    .fold(0u64, |m, (k, _)| m | 1 << k);
                self.prog.bitmaps.push(mask);
                one(Op::Tagged, (self.prog.bitmaps.len() - 1) as u32)
            }
            ast::Opt::Fib(n) => one(Op::Fib, u32::from(*n)),
            ast::Opt::Mac { dst, src } => {
                self.prog.macs.push(MacMatch {
                    dst: dst.addr,
                    dst_mask: dst.mask,
                    src: src.addr,
                    src_mask: src.mask,
                });
                one(Op::MacAddr, (self.prog.macs.len() - 1) as u32)
            }
            ast::Opt::Layer2 => one(Op::Layer2, 0),
            ast::Opt::Diverted(bits) => one(Op::Diverted, u32::from(*bits)),
            ast::Opt::FlowId(ids) => {
                let arg = self.prog.flow_ids.len() as u32;
                let len = u16::try_from(ids.len())
                    .map_err(|_| self.err(item.span, "too many flow labels in one list"))?;
                self.prog.flow_ids.extend(ids);
                vec![Insn {
                    op: Op::FlowId,
                    flags: 0,
                    len,
                    arg,
                }]
            }
            ast::Opt::Icmp6Types(bits) => {
                self.prog.icmp6_types.push(*bits);
                one(Op::Icmp6Types, (self.prog.icmp6_types.len() - 1) as u32)
            }
            ast::Opt::Ext6Hdr(bits) => one(Op::Ext6Hdr, u32::from(*bits)),
            ast::Opt::Lookup(key, table) => {
                let (op, kind) = match key {
                    ast::LookupKey::SrcIp => (Op::SrcTable, TableKind::Addr),
                    ast::LookupKey::DstIp => (Op::DstTable, TableKind::Addr),
                    ast::LookupKey::SrcPort => (Op::SrcPortTable, TableKind::Number),
                    ast::LookupKey::DstPort => (Op::DstPortTable, TableKind::Number),
                    ast::LookupKey::Dscp => (Op::DscpTable, TableKind::Number),
                    ast::LookupKey::Uid | ast::LookupKey::Jail => {
                        return Err(self.err(
                            item.span,
                            format!(
                                "'lookup {}' needs a local socket, which a capture does not carry",
                                key.word()
                            ),
                        ))
                    }
                };
                vec![self.table_insn(op, table, None, item.span, kind)?]
            }
            ast::Opt::FlowTable(t, value) => {
                vec![self.table_insn(Op::FlowTable, t, *value, item.span, TableKind::Flow(0))?]
            }
            ast::Opt::SrcIp { spec, .. } => return self.addrs(spec, Side::Src, item.not),
            ast::Opt::DstIp { spec, .. } => return self.addrs(spec, Side::Dst, item.not),
            ast::Opt::SrcPort(spec) => return self.ports(spec, Side::Src, None, item.not),
            ast::Opt::DstPort(spec) => return self.ports(spec, Side::Dst, None, item.not),
            ast::Opt::Proto(p) => match self.proto(p)? {
                Some(ins) => vec![ins],
                None if item.not => one(Op::Never, 0),
                None => Vec::new(),
            },
            ast::Opt::KeepState(name) => return self.state(item, StateOp::Keep, name),
            ast::Opt::RecordState(name) => return self.state(item, StateOp::Record, name),
            ast::Opt::Limit {
                mask,
                count,
                name,
                probe,
            } => {
                let op = StateOp::Limit {
                    mask: *mask,
                    count: *count,
                    probe: *probe,
                };
                return self.state(item, op, name);
            }
            ast::Opt::DeferAction => {
                self.defer = true;
                return Ok(Vec::new());
            }
            ast::Opt::Or(members) => return self.or_block(members, item.span),
        };
        Ok(Self::group(insns, item.not))
    }

    /// `{ a or b … }`: each member must be one test, or an or-group of
    /// tests (an address list); they are joined with `F_OR`.
    fn or_block(&mut self, members: &[ast::OptionItem], span: Span) -> CResult<Insns> {
        let mut out: Insns = Vec::new();
        for m in members {
            let insns = self.option(m)?;
            if insns.is_empty() {
                // A member that always matches makes the block always match.
                return Ok(Vec::new());
            }
            let disjunction = insns
                .iter()
                .take(insns.len() - 1)
                .all(|i| i.flags & F_OR != 0);
            if !disjunction {
                return Err(self.err(
                    m.span,
                    format!("'{m}' is several tests that must all hold; it cannot be one member of an or-block"),
                ));
            }
            if let Some(last) = out.last_mut() {
                last.flags |= F_OR;
            }
            out.extend(insns);
        }
        if out.is_empty() {
            return Err(self.err(span, "empty or-block"));
        }
        Ok(out)
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
