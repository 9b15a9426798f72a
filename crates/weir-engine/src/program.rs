//! A compiled ruleset: rules as programs of micro-instructions.
//!
//! As in ipfw, a rule is a short run of instructions `(opcode, flags,
//! length, argument)` that must all match (or-blocks aside), followed by
//! its action. Instructions are small `Copy` values in one flat array;
//! operands too big for 32 bits (addresses, port lists) live in pools that
//! the instruction indexes. [`Program::verify`] checks every invariant the
//! evaluator relies on, so the hot loop carries only `debug_assert!`s.

use serde::Serialize;

/// Micro-instruction opcodes. `repr(u8)` so a dispatch table can index by it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[repr(u8)]
pub enum Op {
    /// Never matches (e.g. `check-state` with no state table entries).
    Never = 0,
    /// `proto == arg`.
    Proto,
    /// `ip_version == arg` (`ip4`, `ip6`, `ipversion`).
    IpVersion,
    /// Source address in `nets[arg .. arg+len]`.
    SrcNet,
    DstNet,
    /// Source address is one of this host's (`--me`); arg = 4 or 6.
    SrcMe,
    DstMe,
    /// Source port in `ranges[arg .. arg+len]`; needs a port-carrying header.
    SrcPort,
    DstPort,
    /// Direction is in / out.
    In,
    Out,
    /// Interface matches pattern number `arg` (any direction / in / out).
    Via,
    Recv,
    Xmit,
    /// TCP with ACK or RST.
    Established,
    /// TCP with SYN and without ACK.
    Setup,
    /// TCP flags: low byte must be set, next byte must be clear.
    TcpFlags,
    /// ICMP type in the bitmap `arg`.
    IcmpTypes,
    /// A later fragment (offset != 0).
    Frag,
    /// IPv4 options: low byte must be present, next byte absent.
    IpOptions,
    /// TOS bits: low byte must be set, next byte clear.
    IpTos,
    /// IP length in `ranges[arg .. arg+len]`.
    IpLen,
    /// TTL in `ranges[arg .. arg+len]`.
    IpTtl,
    /// The packet carries ports: guards a negated port list, since a later
    /// fragment never matches a rule with ports, `not` or not (ipfw(8)).
    HasPorts,
    /// Specialised forms of the common cases, operands inline (no pool):
    /// one IPv4 prefix, `arg` = network, `len` = prefix length.
    SrcPrefix4,
    DstPrefix4,
    /// One port range, `arg` = lo | hi << 16.
    SrcPortRange,
    DstPortRange,
    /// ICMPv6 type in the 256-bit map `icmp6_types[arg]`.
    Icmp6Types,
    /// IPv6 with any of the extension headers in `arg` (weir_wire's `ext6`).
    Ext6Hdr,
    /// Source (destination) address in the table `table_refs[arg]` names,
    /// with its value if that reference asks for one.
    SrcTable,
    DstTable,
}

impl Op {
    pub const COUNT: usize = Op::DstTable as usize + 1;

    pub fn name(self) -> &'static str {
        match self {
            Op::Never => "never",
            Op::Proto => "proto",
            Op::IpVersion => "ipversion",
            Op::SrcNet => "src-net",
            Op::DstNet => "dst-net",
            Op::SrcMe => "src-me",
            Op::DstMe => "dst-me",
            Op::SrcPort => "src-port",
            Op::DstPort => "dst-port",
            Op::In => "in",
            Op::Out => "out",
            Op::Via => "via",
            Op::Recv => "recv",
            Op::Xmit => "xmit",
            Op::Established => "established",
            Op::Setup => "setup",
            Op::TcpFlags => "tcpflags",
            Op::IcmpTypes => "icmptypes",
            Op::Frag => "frag",
            Op::IpOptions => "ipoptions",
            Op::IpTos => "iptos",
            Op::IpLen => "iplen",
            Op::IpTtl => "ipttl",
            Op::HasPorts => "has-ports",
            Op::SrcPrefix4 => "src-prefix4",
            Op::DstPrefix4 => "dst-prefix4",
            Op::SrcPortRange => "src-port-range",
            Op::DstPortRange => "dst-port-range",
            Op::Icmp6Types => "icmp6types",
            Op::Ext6Hdr => "ext6hdr",
            Op::SrcTable => "src-table",
            Op::DstTable => "dst-table",
        }
    }
}

/// Invert this instruction's result.
pub const F_NOT: u8 = 1;
/// This instruction and the next form an or-block: ipfw's `F_OR`. All
/// members of a block but the last carry it.
pub const F_OR: u8 = 2;

/// One micro-instruction: 8 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Insn {
    pub op: Op,
    pub flags: u8,
    /// Number of pool entries for list operands.
    pub len: u16,
    pub arg: u32,
}

impl Insn {
    pub fn new(op: Op, arg: u32) -> Insn {
        Insn {
            op,
            flags: 0,
            len: 0,
            arg,
        }
    }
}

/// A network: `addr & mask == value`, in the packet's `u128` address form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Net {
    pub value: u128,
    pub mask: u128,
    /// 4 or 6: an IPv4 network never matches an IPv6 packet, even a mapped one.
    pub version: u8,
}

/// What a matching rule does: the parsed action, jump targets resolved
/// separately (`Rule::jump`).
pub use weir_rules::Action as RuleAction;

/// Pass or drop, for actions that end the walk; None for the others.
pub fn terminal_verdict(action: RuleAction) -> Option<Verdict> {
    match action {
        RuleAction::Allow => Some(Verdict::Pass),
        RuleAction::Deny | RuleAction::Reject | RuleAction::Unreach(_) | RuleAction::Reset => {
            Some(Verdict::Drop)
        }
        _ => None,
    }
}

/// The fate of a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    Drop,
}

/// One compiled rule.
#[derive(Clone, Debug)]
pub struct Rule {
    pub number: u16,
    pub action: RuleAction,
    /// `log`: Some(limit) with `u32::MAX` for no `logamount`.
    pub log_limit: Option<u32>,
    /// This rule's instructions: `insns[start..end]`.
    pub start: u32,
    pub end: u32,
    /// Target index of `skipto`/`call`: the first rule numbered ≥ the target.
    pub jump: u32,
    /// Header checks hoisted out of the instructions (pf-style): the
    /// protocol the rule requires, if any, and the packet-class bits
    /// ([`class`]) it requires: `class & class_mask == class_bits`.
    pub proto: Option<u8>,
    pub class_mask: u32,
    pub class_bits: u32,
    /// pf's skip steps: the next rule whose protocol (class) requirement
    /// differs. A packet that fails this rule's header check fails every
    /// rule before that one in the same way, so the walk jumps there.
    pub skip_proto: u32,
    pub skip_class: u32,
    /// `check-state`, `keep-state`, `limit`: the rule probes the dynamic
    /// state table when the walk reaches it. A packet of a known flow
    /// (class bit [`class::STATE`]) takes its state's action at the first
    /// probe rule it reaches, whatever the rule's own conditions say, so
    /// for such packets every probe rule must stay a candidate.
    pub probe: bool,
    /// The state this rule makes when it matches.
    pub state_op: StateOp,
    /// Canonical text (as `ipfw show` prints after the counters).
    pub text: String,
    /// Where the rule was written, for messages (0 for the default rule).
    pub line: u32,
}

/// One `table(NAME[,VALUE])`: which table, and the value an entry must
/// have to match (any if None).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableRef {
    pub table: u32,
    pub value: Option<u32>,
}

/// What a matching rule does to the dynamic state table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub enum StateOp {
    #[default]
    None,
    /// `keep-state`.
    Keep,
    /// `record-state`.
    Record,
    /// `limit MASK N`: keep-state, at most `count` states per masked flow.
    Limit { mask: u8, count: u32 },
}

/// Packet-class bits: one-bit facts about a packet, computed once per
/// packet, that rule headers test with one AND and compare.
pub mod class {
    pub const IN: u32 = 1 << 0;
    pub const OUT: u32 = 1 << 1;
    pub const V4: u32 = 1 << 2;
    pub const V6: u32 = 1 << 3;
    /// A later fragment (`frag`).
    pub const LATER_FRAG: u32 = 1 << 4;
    /// TCP with ACK or RST (`established`).
    pub const ESTABLISHED: u32 = 1 << 5;
    /// TCP with SYN and without ACK (`setup`).
    pub const SETUP: u32 = 1 << 6;
    /// IPv4 options (`ipoptions`): the option bits shifted by this much.
    pub const IPOPT_SHIFT: u32 = 8;
    /// A dynamic state of this packet's flow exists. No packet has it yet
    /// (there is no state table), so a `check-state` rule, which requires
    /// it in its header, is skipped like any other header mismatch.
    pub const STATE: u32 = 1 << 12;

    /// Words for a header requirement, for `weir explain`.
    pub fn describe(mask: u32, bits: u32) -> Vec<String> {
        const NAMES: [(u32, &str); 12] = [
            (IN, "in"),
            (OUT, "out"),
            (V4, "ipversion 4"),
            (V6, "ipversion 6"),
            (LATER_FRAG, "frag"),
            (ESTABLISHED, "established"),
            (SETUP, "setup"),
            (1 << IPOPT_SHIFT, "ipoptions ssrr"),
            (2 << IPOPT_SHIFT, "ipoptions lsrr"),
            (4 << IPOPT_SHIFT, "ipoptions rr"),
            (8 << IPOPT_SHIFT, "ipoptions ts"),
            (STATE, "a dynamic state"),
        ];
        NAMES
            .iter()
            .filter(|(b, _)| mask & b != 0)
            .map(|(b, name)| {
                if bits & b != 0 {
                    name.to_string()
                } else {
                    format!("not {name}")
                }
            })
            .collect()
    }
}

/// Number of the implicit last rule.
pub const DEFAULT_RULE: u16 = 65535;

/// A whole compiled ruleset. Rules are sorted by number (stable); the last
/// is always the default rule 65535, which matches everything.
#[derive(Clone, Debug, Default)]
pub struct Program {
    pub rules: Vec<Rule>,
    pub insns: Vec<Insn>,
    pub nets: Vec<Net>,
    pub ranges: Vec<(u16, u16)>,
    /// Interface name patterns (`via eth*`), indexed by `Via`/`Recv`/`Xmit` args.
    pub iface_patterns: Vec<String>,
    /// ICMPv6 type bitmaps, indexed by `Icmp6Types` args.
    pub icmp6_types: Vec<[u64; 4]>,
    /// Lookup tables by id, and their names (`table(NAME)`).
    pub tables: Vec<std::sync::Arc<weir_table::Table>>,
    pub table_names: Vec<String>,
    /// `table(NAME[,VALUE])` references, indexed by `SrcTable`/`DstTable`.
    pub table_refs: Vec<TableRef>,
    /// Dynamic-state tunables: defaults, then the ruleset's settings.
    pub state_config: crate::state::StateConfig,
}

/// Most interface patterns one ruleset may use (a bit each in a `u64`).
pub const MAX_IFACE_PATTERNS: usize = 64;
/// Depth of the `call` stack, as ipfw's `IP_FW_CALLSTACK_SIZE`.
pub const CALL_STACK_DEPTH: usize = 16;

impl Program {
    /// Whether any rule makes or probes dynamic states (the engine then
    /// keeps a state table and looks each packet's flow up in it).
    pub fn has_state(&self) -> bool {
        self.rules
            .iter()
            .any(|r| r.probe || r.state_op != StateOp::None)
    }

    /// The value `tablearg` stands for in rule `ri`: that of the first of
    /// its table tests the packet passes (None if none does).
    pub fn tablearg(&self, ri: usize, p: &weir_wire::Packet) -> Option<u32> {
        self.rule_insns(&self.rules[ri]).iter().find_map(|ins| {
            let addr = match ins.op {
                Op::SrcTable => p.src,
                Op::DstTable => p.dst,
                _ => return None,
            };
            self.table_value(ins, addr, p.ip_version)
        })
    }

    /// The value of `addr` in the table of a table instruction, if the
    /// address is in it (and has the value the reference asks for).
    #[inline]
    pub fn table_value(&self, ins: &Insn, addr: u128, version: u8) -> Option<u32> {
        let r = self.table_refs[ins.arg as usize];
        let v = self.tables[r.table as usize].lookup_ip(addr, version)?;
        r.value.is_none_or(|want| want == v).then_some(v)
    }

    /// Index of the first rule numbered `number` or more.
    pub fn first_rule_at(&self, number: u32) -> usize {
        self.rules
            .partition_point(|r| u32::from(r.number) < number)
            .min(self.default_index())
    }

    pub fn rule_insns(&self, rule: &Rule) -> &[Insn] {
        &self.insns[rule.start as usize..rule.end as usize]
    }

    /// Index of the default rule.
    pub fn default_index(&self) -> usize {
        self.rules.len() - 1
    }

    /// Checks what the evaluator trusts; the compiler calls it on every
    /// program it makes, and tests call it on hand-made ones.
    pub fn verify(&self) -> Result<(), String> {
        let last = self.rules.last().ok_or("no rules")?;
        if last.number != DEFAULT_RULE
            || last.start != last.end
            || terminal_verdict(last.action).is_none()
        {
            return Err("the last rule must be a matching-everything default rule 65535".into());
        }
        for (i, r) in self.rules.iter().enumerate() {
            if r.start > r.end || r.end as usize > self.insns.len() {
                return Err(format!(
                    "rule {}: instruction range out of bounds",
                    r.number
                ));
            }
            if i > 0 && self.rules[i - 1].number > r.number {
                return Err(format!("rule {}: rules out of order", r.number));
            }
            if matches!(r.action, RuleAction::Skipto(_) | RuleAction::Call(_))
                && (r.jump as usize <= i || r.jump as usize >= self.rules.len())
            {
                return Err(format!(
                    "rule {}: jump must go forward and stay in range",
                    r.number
                ));
            }
            let skips_ok = |skip: u32| skip as usize > i && (skip as usize) < self.rules.len();
            if (r.proto.is_some() && !skips_ok(r.skip_proto))
                || (r.class_mask != 0 && !skips_ok(r.skip_class))
            {
                return Err(format!(
                    "rule {}: skip step must go forward and stay in range",
                    r.number
                ));
            }
            let insns = self.rule_insns(r);
            if insns.last().is_some_and(|ins| ins.flags & F_OR != 0) {
                return Err(format!("rule {}: or-block left open", r.number));
            }
            for ins in insns {
                if matches!(ins.op, Op::SrcPrefix4 | Op::DstPrefix4) && ins.len > 32 {
                    return Err(format!("rule {}: prefix length over 32", r.number));
                }
                let (pool, max) = match ins.op {
                    Op::SrcNet | Op::DstNet => (true, self.nets.len()),
                    Op::SrcPort | Op::DstPort | Op::IpLen | Op::IpTtl => (true, self.ranges.len()),
                    Op::SrcTable | Op::DstTable
                        if self
                            .table_refs
                            .get(ins.arg as usize)
                            .is_none_or(|t| t.table as usize >= self.tables.len()) =>
                    {
                        return Err(format!("rule {}: bad table operand", r.number));
                    }
                    Op::Icmp6Types if ins.arg as usize >= self.icmp6_types.len() => {
                        return Err(format!("rule {}: bad icmp6types operand", r.number));
                    }
                    Op::Via | Op::Recv | Op::Xmit => {
                        if ins.arg as usize >= self.iface_patterns.len() {
                            return Err(format!("rule {}: bad interface pattern", r.number));
                        }
                        (false, 0)
                    }
                    _ => (false, 0),
                };
                if pool && (ins.len == 0 || ins.arg as usize + ins.len as usize > max) {
                    return Err(format!(
                        "rule {}: {} operand out of range",
                        r.number,
                        ins.op.name()
                    ));
                }
            }
        }
        if self.iface_patterns.len() > MAX_IFACE_PATTERNS {
            return Err("too many interface patterns".into());
        }
        Ok(())
    }
}

impl Net {
    /// `10.0.0.0/8`, `10.0.0.0:255.0.255.0`, `2001:db8::/32`.
    pub fn describe(&self) -> String {
        if self.version == 4 {
            let (a, m) = (
                std::net::Ipv4Addr::from(self.value as u32),
                self.mask as u32,
            );
            if m.leading_ones() + m.trailing_zeros() == 32 {
                format!("{a}/{}", m.leading_ones())
            } else {
                format!("{a}:{}", std::net::Ipv4Addr::from(m))
            }
        } else {
            format!(
                "{}/{}",
                std::net::Ipv6Addr::from(self.value),
                self.mask.leading_ones()
            )
        }
    }
}

impl Program {
    /// One instruction in words, for `weir explain`.
    pub fn describe(&self, ins: &Insn) -> String {
        let not = if ins.flags & F_NOT != 0 { "not " } else { "" };
        let range = || ins.arg as usize..ins.arg as usize + ins.len as usize;
        let ranges = || weir_rules::range_list(&self.ranges[range()]);
        let nets = || {
            self.nets[range()]
                .iter()
                .map(Net::describe)
                .collect::<Vec<_>>()
                .join(",")
        };
        let bits = |what: &str| {
            format!(
                "{what} set 0x{:02x} clear 0x{:02x}",
                ins.arg & 0xff,
                ins.arg >> 8
            )
        };
        let iface = || {
            self.iface_patterns
                .get(ins.arg as usize)
                .cloned()
                .unwrap_or_default()
        };
        let text = match ins.op {
            Op::Never => "never".to_owned(),
            Op::Proto => format!("proto {}", ins.arg),
            Op::IpVersion => format!("ipversion {}", ins.arg),
            Op::SrcNet => format!("src {}", nets()),
            Op::DstNet => format!("dst {}", nets()),
            Op::SrcMe => format!("src me (IPv{})", ins.arg),
            Op::DstMe => format!("dst me (IPv{})", ins.arg),
            Op::SrcPort => format!("src-port {}", ranges()),
            Op::DstPort => format!("dst-port {}", ranges()),
            Op::In => "in".to_owned(),
            Op::Out => "out".to_owned(),
            Op::Via => format!("via {}", iface()),
            Op::Recv => format!("recv {}", iface()),
            Op::Xmit => format!("xmit {}", iface()),
            Op::Established => "established".to_owned(),
            Op::Setup => "setup".to_owned(),
            Op::TcpFlags => bits("tcpflags"),
            Op::IcmpTypes => {
                let types: Vec<String> = (0..32)
                    .filter(|t| ins.arg >> t & 1 == 1)
                    .map(|t| t.to_string())
                    .collect();
                format!("icmptypes {}", types.join(","))
            }
            Op::Icmp6Types => {
                let map = self
                    .icmp6_types
                    .get(ins.arg as usize)
                    .copied()
                    .unwrap_or_default();
                let types: Vec<String> = (0..256usize)
                    .filter(|t| map[t / 64] >> (t % 64) & 1 == 1)
                    .map(|t| t.to_string())
                    .collect();
                format!("icmp6types {}", types.join(","))
            }
            Op::Ext6Hdr => format!("ext6hdr 0x{:02x}", ins.arg),
            Op::SrcTable | Op::DstTable => {
                let side = if ins.op == Op::SrcTable { "src" } else { "dst" };
                match self.table_refs.get(ins.arg as usize) {
                    Some(t) => {
                        let name = &self.table_names[t.table as usize];
                        match t.value {
                            Some(v) => format!("{side} table({name},{v})"),
                            None => format!("{side} table({name})"),
                        }
                    }
                    None => format!("{side} table(?)"),
                }
            }
            Op::Frag => "frag".to_owned(),
            Op::IpOptions => bits("ipoptions"),
            Op::IpTos => bits("iptos"),
            Op::IpLen => format!("iplen {}", ranges()),
            Op::IpTtl => format!("ipttl {}", ranges()),
            Op::HasPorts => "has ports".to_owned(),
            Op::SrcPrefix4 | Op::DstPrefix4 => {
                let side = if ins.op == Op::SrcPrefix4 {
                    "src"
                } else {
                    "dst"
                };
                format!("{side} {}/{}", std::net::Ipv4Addr::from(ins.arg), ins.len)
            }
            Op::SrcPortRange | Op::DstPortRange => {
                let side = if ins.op == Op::SrcPortRange {
                    "src-port"
                } else {
                    "dst-port"
                };
                let (lo, hi) = (ins.arg & 0xffff, ins.arg >> 16);
                if lo == hi {
                    format!("{side} {lo}")
                } else {
                    format!("{side} {lo}-{hi}")
                }
            }
        };
        let or = if ins.flags & F_OR != 0 { " or" } else { "" };
        format!("{not}{text}{or}")
    }
}
