//! A compiled ruleset: rules as programs of micro-instructions.
//!
//! As in ipfw, a rule is a short run of instructions `(opcode, flags,
//! length, argument)` that must all match (or-blocks aside), followed by
//! its action. Instructions are small `Copy` values in one flat array;
//! operands too big for 32 bits (addresses, port lists) live in pools that
//! the instruction indexes. [`Program::verify`] checks every invariant the
//! evaluator relies on, so the hot loop carries only `debug_assert!`s.

use serde::Serialize;

pub use crate::opcodes::Op;

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

/// An Ethernet address test: both addresses under their masks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MacMatch {
    pub dst: [u8; 6],
    pub dst_mask: [u8; 6],
    pub src: [u8; 6],
    pub src_mask: [u8; 6],
}

/// An IPv4 address set (`10.1.2.0/24{5,10,20-25}`): host `base + k` is in
/// it when bit k of `members` is set, for k < `size`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddrSet {
    pub base: u32,
    pub size: u32,
    pub members: [u64; 4],
}

/// The parsed action, as written (for rule text and `explain`).
pub use weir_rules::Action as RuleAction;

/// What the evaluator does when a rule's action runs: the action reduced
/// to its effect on the walk, arguments resolved. The six that can leave
/// a rule unmatched (`call`, `return`, `divert`, `tee`, `fwd`, `reass`)
/// come last, so that [`Act::may_skip`] is one compare.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Act {
    /// `allow`: pass.
    Accept,
    /// `deny`, `reject`, `unreach`, `reset`, `abort` and their IPv6 forms.
    Deny,
    Count,
    Skipto,
    SkiptoTablearg,
    CheckState,
    /// `pipe`, `queue`, `netgraph`: the packet comes back from the
    /// subsystem accepted (`one_pass`) or at the next rule.
    HandOff,
    /// `nat`: as a hand-off for IPv4; NAT denies any other packet.
    Nat,
    /// `setfib`, `setdscp` (a value or the table value), `tcp-setmss`:
    /// change what later rules see, and go on.
    SetFib(u16),
    SetFibTablearg,
    SetDscp(u8),
    SetDscpTablearg,
    TcpSetMss(u16),
    /// `ngtee`: a copy goes to netgraph; the packet goes on. Unlike `tee`,
    /// it works in the layer-2 pass too (ip_fw2.c O_NGTEE has no
    /// IPFW_ARGS_ETHER test).
    Ngtee,
    Call,
    Return,
    /// `divert`: as a hand-off; coming back it is a diverted packet.
    Divert,
    /// `tee`: a copy goes to a divert socket; the packet goes on.
    Tee,
    /// `fwd`: pass, towards the rule's next hop.
    Fwd,
    /// `reass`: an IPv4 fragment goes to reassembly; others go on.
    Reass,
}

impl Act {
    /// The effect of a parsed action.
    pub fn of(action: &RuleAction) -> Act {
        match action {
            RuleAction::Allow => Act::Accept,
            RuleAction::Deny
            | RuleAction::Reject
            | RuleAction::Unreach(_)
            | RuleAction::Reset
            | RuleAction::Abort
            | RuleAction::Unreach6(_)
            | RuleAction::Reset6
            | RuleAction::Abort6 => Act::Deny,
            RuleAction::Count => Act::Count,
            RuleAction::Skipto(_) => Act::Skipto,
            RuleAction::SkiptoTablearg => Act::SkiptoTablearg,
            RuleAction::Call(_) => Act::Call,
            RuleAction::Return => Act::Return,
            RuleAction::CheckState(_) => Act::CheckState,
            RuleAction::Pipe(_) | RuleAction::Queue(_) | RuleAction::Netgraph(_) => Act::HandOff,
            RuleAction::Divert(_) => Act::Divert,
            RuleAction::Nat(_) => Act::Nat,
            RuleAction::Tee(_) => Act::Tee,
            RuleAction::Ngtee(_) => Act::Ngtee,
            RuleAction::Fwd(_) => Act::Fwd,
            RuleAction::SetFib(weir_rules::Arg::Number(n)) => Act::SetFib(*n as u16),
            RuleAction::SetFib(weir_rules::Arg::Tablearg) => Act::SetFibTablearg,
            RuleAction::SetDscp(weir_rules::Arg::Number(n)) => Act::SetDscp(*n as u8 & 0x3f),
            RuleAction::SetDscp(weir_rules::Arg::Tablearg) => Act::SetDscpTablearg,
            RuleAction::TcpSetMss(n) => Act::TcpSetMss(*n),
            RuleAction::Reass => Act::Reass,
        }
    }

    /// Whether the action may leave its rule unmatched: `divert`, `tee`
    /// and `fwd` in the layer-2 pass, `reass` of IPv6, a `call` or
    /// `return` that cannot be done (ipfw's kernel).
    #[inline(always)]
    pub fn may_skip(self) -> bool {
        matches!(
            self,
            Act::Divert | Act::Tee | Act::Fwd | Act::Reass | Act::Call | Act::Return
        )
    }

    /// The verdict when the action surely ends the walk; None otherwise
    /// (hand-offs depend on `one_pass`, NAT on the packet).
    pub fn verdict(self) -> Option<Verdict> {
        match self {
            Act::Accept | Act::Fwd => Some(Verdict::Pass),
            Act::Deny => Some(Verdict::Drop),
            _ => None,
        }
    }
}

/// A rule's `tag`/`untag`: tag bits to set and to clear (bit k stands for
/// `Program::tag_values[k]`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TagChange {
    pub set: u64,
    pub clear: u64,
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
// C layout, each rule at a cache line's start, with what the evaluator
// reads of every rule it tries first: those fields share one line (Rust's
// own layout put them at bytes 144-160 of 184), the line the engine
// prefetches for a batch's packets (BENCHMARKS.md, "One cache line a rule
// tried").
#[repr(C, align(64))]
pub struct Rule {
    /// Header checks hoisted out of the instructions (pf-style): the
    /// packet-class bits ([`class`]) the rule requires,
    /// `class & class_mask == class_bits`, and the protocol it requires,
    /// if any (`proto`).
    pub class_mask: u32,
    pub class_bits: u32,
    /// pf's skip steps: the next rule whose protocol (class) requirement
    /// differs. A packet that fails this rule's header check fails every
    /// rule before that one in the same way, so the walk jumps there.
    pub skip_proto: u32,
    pub skip_class: u32,
    /// This rule's instructions: `insns[start..end]`.
    pub start: u32,
    pub end: u32,
    /// `prob P`: matches only when a draw is below this (P × 2^32).
    pub prob: Option<u32>,
    pub proto: Option<u8>,
    /// `check-state`, `keep-state`, `limit`: the rule probes the dynamic
    /// state table when the walk reaches it. A packet of a known flow
    /// (class bit [`class::STATE`]) takes its state's action at the first
    /// probe rule it reaches, whatever the rule's own conditions say, so
    /// for such packets every probe rule must stay a candidate.
    pub probe: bool,
    /// The common actions' short way (see [`Quick`]); set by
    /// [`Rule::settle`].
    pub quick: Quick,
    /// What the evaluator does with it.
    pub act: Act,
    /// The state name this rule probes or makes (index into
    /// `Program::state_names`; [`ANY_STATE`] for `check-state :any`).
    pub state_name: u8,
    /// `defer-action`: matched directly, it makes its state and the walk
    /// goes on; the action runs for the state's later packets.
    pub defer: bool,
    /// The state this rule makes when it matches.
    pub state_op: StateOp,
    /// Target index of `skipto`/`call`: the first rule numbered ≥ the target.
    pub jump: u32,
    /// `log`: Some(limit) with `u32::MAX` for no `logamount`.
    pub log_limit: Option<u32>,
    /// `tag N`, `untag N`: done when the action runs.
    pub tag: TagChange,
    pub number: u16,
    /// The rule's set (0..=31).
    pub set: u8,
    pub action: RuleAction,
    /// Canonical text (as `ipfw show` prints after the counters).
    pub text: String,
    /// The action that decides, as verdict files and logs show it
    /// (`allow`, `pipe 1`, `nat 1`, `fwd 10.0.0.1`), made once.
    pub action_text: String,
    /// Where the rule was written, for messages (0 for the default rule).
    pub line: u32,
}

/// A rule whose action is `allow`, `deny` or `count` with no `log`, `tag`
/// or `untag` needs nothing of the action but its verdict: the evaluator
/// takes it without looking further. Every other rule is `Slow`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quick {
    Accept,
    Deny,
    Count,
    Slow,
}

impl Rule {
    /// Sets [`Rule::quick`] from the rule's action, log and tag.
    pub fn settle(&mut self) {
        let plain = self.log_limit.is_none() && self.tag == TagChange::default();
        self.quick = match self.act {
            Act::Accept if plain => Quick::Accept,
            Act::Deny if plain => Quick::Deny,
            Act::Count if plain => Quick::Count,
            _ => Quick::Slow,
        };
    }

    /// The verdict when, matched, the rule does nothing else: a plain
    /// `allow` or `deny`, no state to make or probe, no probability. A
    /// classifier that knows the packet matches such a rule (and no rule
    /// before it) may decide the packet without the evaluator.
    pub fn plain_verdict(&self) -> Option<Verdict> {
        let plain =
            self.state_op == StateOp::None && self.prob.is_none() && !self.probe && !self.defer;
        match self.quick {
            Quick::Accept if plain => Some(Verdict::Pass),
            Quick::Deny if plain => Some(Verdict::Drop),
            _ => None,
        }
    }
}

/// `check-state :any`: fires for a state of any name.
pub const ANY_STATE: u8 = u8::MAX;
/// Most distinct state names one ruleset may use.
pub const MAX_STATE_NAMES: usize = 8;
/// Most distinct tag numbers one ruleset may use (a bit each in a `u64`).
pub const MAX_TAGS: usize = 64;

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
    /// `limit MASK N` (probes) / `set-limit MASK N` (does not):
    /// keep-state, at most `count` states per masked flow.
    Limit { mask: u8, count: u32, probe: bool },
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
    /// A dynamic state of this packet's flow exists: the engine looks the
    /// flow up in its state table once, before the walk. A probe rule
    /// (`check-state`, `keep-state`, …) requires its absence in its header,
    /// so a packet with a state takes the header-failure path, which
    /// fires the state.
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
    /// 64-bit maps (`dscp` code points, `tagged` tag bits), by `arg`.
    pub bitmaps: Vec<u64>,
    /// Ethernet address tests, by `MacAddr` args.
    pub macs: Vec<MacMatch>,
    /// IPv6 flow labels, `FlowId` pools.
    pub flow_ids: Vec<u32>,
    /// IPv4 address sets, by `SrcSet`/`DstSet` args.
    pub addr_sets: Vec<AddrSet>,
    /// Lookup tables by id, and their names (`table(NAME)`).
    pub tables: Vec<std::sync::Arc<crate::tables::Table>>,
    pub table_names: Vec<String>,
    /// Each table's value types and typed values (`tables[i]`'s in
    /// `table_values[i]`).
    pub table_values: Vec<std::sync::Arc<crate::tables::Values>>,
    /// `table(NAME[,VALUE])` references, indexed by the table opcodes.
    pub table_refs: Vec<TableRef>,
    /// The tag number each tag bit stands for.
    pub tag_values: Vec<u16>,
    /// State names, index 0 the default (`default`).
    pub state_names: Vec<String>,
    /// Dynamic-state tunables: defaults, then the ruleset's settings.
    pub state_config: crate::state::StateConfig,
    /// `net.inet.ip.fw.one_pass`: a packet back from a hand-off is
    /// accepted (true, FreeBSD's default) or goes on at the next rule.
    pub one_pass: bool,
    /// `net.link.ether.ipfw`: Ethernet frames also pass the ruleset at
    /// layer 2, before the IP pass.
    pub layer2: bool,
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

    /// The packet fields beyond the always-decoded ones that deciding
    /// reads (see [`weir_wire::Fields`]): its instructions' (the opcode
    /// table says which), the MSS option for `tcp-setmss`, and the
    /// Ethernet header when frames pass the rules at layer 2 as well.
    pub fn reads(&self) -> weir_wire::Fields {
        use weir_wire::Fields;
        let mut fields = self
            .insns
            .iter()
            .fold(Fields::NONE, |f, ins| f | ins.op.reads());
        if self
            .rules
            .iter()
            .any(|r| matches!(r.act, Act::TcpSetMss(_)))
        {
            fields |= Fields::TCP_OPTIONS;
        }
        if self.layer2 {
            fields |= Fields::MAC;
        }
        fields
    }

    /// What `tablearg` stands for in rule `ri`, as the action reading
    /// `field` sees it: the table test the packet passes and the value it
    /// found there (None if none does).
    pub fn tablearg(
        &self,
        ri: usize,
        p: &weir_wire::Packet,
        env: &crate::ops::Env,
        ctx: &crate::ops::Ctx,
        field: weir_rules::ValueField,
    ) -> Option<u32> {
        let (ins, stored) = self.tablearg_hit(ri, p, env, ctx)?;
        Some(self.value_field(ins, stored, field))
    }

    /// `fwd tablearg`'s next hop: the value's `ipv4` field for an IPv4
    /// packet, its `ipv6` field for an IPv6 one (ip_fw2.c, O_FORWARD_IP).
    pub fn tablearg_next_hop(
        &self,
        ri: usize,
        p: &weir_wire::Packet,
        env: &crate::ops::Env,
        ctx: &crate::ops::Ctx,
    ) -> Option<std::net::IpAddr> {
        let (ins, stored) = self.tablearg_hit(ri, p, env, ctx)?;
        Some(if p.ip_version == 6 {
            let nh6 = self.values_of(ins).map_or(0, |v| v.nh6(stored));
            std::net::Ipv6Addr::from(nh6).into()
        } else {
            std::net::Ipv4Addr::from(self.value_field(ins, stored, weir_rules::ValueField::Nh4))
                .into()
        })
    }

    /// The last of rule `ri`'s table tests that looked the packet up and
    /// found it, and what its entry stores: ipfw's kernel sets `tablearg`
    /// at each lookup that finds the packet, in instruction order, and
    /// skips the rest of an or-block once one member matched (ip_fw2.c,
    /// `skip_or`).
    fn tablearg_hit(
        &self,
        ri: usize,
        p: &weir_wire::Packet,
        env: &crate::ops::Env,
        ctx: &crate::ops::Ctx,
    ) -> Option<(&Insn, u32)> {
        use crate::ops::Dispatch;
        let mut hit = None;
        let mut skip_or = false;
        for ins in self.rule_insns(&self.rules[ri]) {
            if skip_or {
                skip_or = ins.flags & F_OR != 0;
                continue;
            }
            if let Some(stored) = crate::ops::table_lookup(ins, p, self, env, ctx) {
                hit = Some((ins, stored));
            }
            if ins.flags & F_OR != 0 {
                let m = crate::ops::MatchDispatch::matches(ins, p, self, env, ctx);
                skip_or = m ^ (ins.flags & F_NOT != 0);
            }
        }
        hit
    }

    /// The values of the table an instruction's reference names.
    #[inline]
    fn values_of(&self, ins: &Insn) -> Option<&crate::tables::Values> {
        self.table_values
            .get(self.table_refs[ins.arg as usize].table as usize)
            .map(|v| &**v)
    }

    /// Field `f` of what an entry of the instruction's table stores.
    #[inline]
    fn value_field(&self, ins: &Insn, stored: u32, f: weir_rules::ValueField) -> u32 {
        self.values_of(ins).map_or(stored, |v| v.field(stored, f))
    }

    /// A table reference's answer for a looked-up entry: what the entry
    /// stores, if the reference wants any value or this one (a typed
    /// value's `tag`, as ip_fw2.c compares `table(NAME,VALUE)`).
    #[inline]
    pub fn table_answer(&self, ins: &Insn, found: Option<u32>) -> Option<u32> {
        let v = found?;
        self.table_refs[ins.arg as usize]
            .value
            .is_none_or(|want| want == self.value_field(ins, v, weir_rules::ValueField::Tag))
            .then_some(v)
    }

    /// The table an instruction's reference names.
    #[inline]
    pub fn table_of(&self, ins: &Insn) -> &crate::tables::Table {
        &self.tables[self.table_refs[ins.arg as usize].table as usize]
    }

    /// Makes the implicit rule 65535 allow (or deny) every packet.
    pub fn set_default_allow(&mut self, allow: bool) {
        let action = if allow {
            RuleAction::Allow
        } else {
            RuleAction::Deny
        };
        if let Some(r) = self.rules.last_mut() {
            r.act = Act::of(&action);
            r.settle();
            r.text = format!("{action} ip from any to any");
            r.action_text = action.to_string();
            r.action = action;
        }
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
            || !matches!(last.act, Act::Accept | Act::Deny)
            || last.prob.is_some()
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
            if matches!(r.act, Act::Skipto | Act::Call)
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
            if r.state_name != ANY_STATE
                && usize::from(r.state_name) >= self.state_names.len().max(1)
            {
                return Err(format!("rule {}: bad state name", r.number));
            }
            let tags = self.tag_values.len();
            if tags < MAX_TAGS && (r.tag.set | r.tag.clear) >> tags != 0 {
                return Err(format!("rule {}: bad tag bits", r.number));
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
                    Op::SrcPort
                    | Op::DstPort
                    | Op::IpLen
                    | Op::IpTtl
                    | Op::IpId
                    | Op::TcpDataLen
                    | Op::TcpWin
                    | Op::TcpMss
                    | Op::MacType => (true, self.ranges.len()),
                    Op::FlowId => (true, self.flow_ids.len()),
                    Op::SrcTable
                    | Op::DstTable
                    | Op::SrcPortTable
                    | Op::DstPortTable
                    | Op::DscpTable
                    | Op::FlowTable
                    | Op::IfaceTable => {
                        if !self.table_ok(ins) {
                            return Err(format!("rule {}: bad table operand", r.number));
                        }
                        (false, 0)
                    }
                    Op::Dscp | Op::Tagged if ins.arg as usize >= self.bitmaps.len() => {
                        return Err(format!("rule {}: bad bitmap operand", r.number));
                    }
                    Op::MacAddr if ins.arg as usize >= self.macs.len() => {
                        return Err(format!("rule {}: bad mac operand", r.number));
                    }
                    Op::SrcSet | Op::DstSet if ins.arg as usize >= self.addr_sets.len() => {
                        return Err(format!("rule {}: bad address set operand", r.number));
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
        if self.tag_values.len() > MAX_TAGS || self.state_names.len() > MAX_STATE_NAMES {
            return Err("too many tags or state names".into());
        }
        if self.addr_sets.iter().any(|s| s.size > 256 || s.size == 0) {
            return Err("bad address set".into());
        }
        Ok(())
    }

    /// A table instruction names a reference to a table of the right kind.
    fn table_ok(&self, ins: &Insn) -> bool {
        use weir_rules::TableKind;
        let Some(t) = self
            .table_refs
            .get(ins.arg as usize)
            .and_then(|r| self.tables.get(r.table as usize))
        else {
            return false;
        };
        match ins.op {
            Op::SrcTable | Op::DstTable => t.kind() == TableKind::Addr,
            Op::SrcPortTable | Op::DstPortTable | Op::DscpTable => t.kind() == TableKind::Number,
            Op::FlowTable => matches!(t.kind(), TableKind::Flow(_)),
            Op::IfaceTable => t.kind() == TableKind::Iface && ins.len <= 2,
            _ => false,
        }
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
            Op::SrcTable
            | Op::DstTable
            | Op::SrcPortTable
            | Op::DstPortTable
            | Op::DscpTable
            | Op::FlowTable
            | Op::IfaceTable => {
                let side = match ins.op {
                    Op::SrcTable => "src",
                    Op::DstTable => "dst",
                    Op::SrcPortTable => "src-port",
                    Op::DstPortTable => "dst-port",
                    Op::DscpTable => "dscp",
                    Op::FlowTable => "flow",
                    _ => ["via", "recv", "xmit"][usize::from(ins.len.min(2))],
                };
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
            Op::IpId | Op::TcpDataLen | Op::TcpWin | Op::TcpMss | Op::MacType => {
                format!("{} {}", ins.op.name(), ranges())
            }
            Op::TcpSeq | Op::TcpAck | Op::Fib => format!("{} {}", ins.op.name(), ins.arg),
            Op::TcpOpts => bits("tcpoptions"),
            Op::FragFlags => bits("frag"),
            Op::IpPrecedence => format!("ipprecedence {}", ins.arg >> 5),
            Op::Dscp | Op::Tagged => format!(
                "{} 0x{:016x}",
                ins.op.name(),
                self.bitmaps
                    .get(ins.arg as usize)
                    .copied()
                    .unwrap_or_default()
            ),
            Op::MacAddr => {
                let m = self.macs.get(ins.arg as usize).copied().unwrap_or_default();
                let hex = |b: [u8; 6]| {
                    b.iter()
                        .map(|x| format!("{x:02x}"))
                        .collect::<Vec<_>>()
                        .join(":")
                };
                format!(
                    "mac {}&{} {}&{}",
                    hex(m.dst),
                    hex(m.dst_mask),
                    hex(m.src),
                    hex(m.src_mask)
                )
            }
            Op::Layer2 => "layer2".to_owned(),
            Op::Diverted => format!("diverted 0x{:x}", ins.arg),
            Op::FlowId => {
                let ids = &self.flow_ids[range()];
                let ids: Vec<String> = ids.iter().map(u32::to_string).collect();
                format!("flow-id {}", ids.join(","))
            }
            Op::SrcSet | Op::DstSet => {
                let side = if ins.op == Op::SrcSet { "src" } else { "dst" };
                let s = self.addr_sets.get(ins.arg as usize);
                match s {
                    Some(s) => format!(
                        "{side} set {}/{} of {}",
                        std::net::Ipv4Addr::from(s.base),
                        32 - s.size.trailing_zeros(),
                        s.members.iter().map(|w| w.count_ones()).sum::<u32>()
                    ),
                    None => format!("{side} set ?"),
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{align_of, offset_of, size_of};

    /// What the evaluator reads of every rule it tries (the header checks,
    /// skip steps, instructions' range, `prob`, the quick action, the
    /// state fields) lies in the rule's first cache line.
    #[test]
    fn a_tried_rule_is_one_cache_line() {
        assert_eq!(align_of::<Rule>(), 64);
        macro_rules! end {
            ($($field:ident: $ty:ty),*) => {
                [$((stringify!($field), offset_of!(Rule, $field) + size_of::<$ty>())),*]
            };
        }
        let ends = end!(
            class_mask: u32, class_bits: u32, skip_proto: u32, skip_class: u32,
            start: u32, end: u32, prob: Option<u32>, proto: Option<u8>, probe: bool,
            quick: Quick, act: Act, state_name: u8, defer: bool, state_op: StateOp
        );
        for (field, end) in ends {
            assert!(end <= 64, "`{field}` ends at byte {end}");
        }
    }
}
