//! The syntax tree of an ipfw ruleset, as written (names not yet resolved).

use std::net::IpAddr;

/// Where something was written: 1-based line and column, length in chars.
///
/// Spans are locations, not meaning: two nodes that differ only in where
/// they were written compare equal, so `parse(print(r)) == r` holds.
#[derive(Clone, Copy, Debug, Default)]
pub struct Span {
    pub line: u32,
    pub col: u32,
    pub len: u32,
}

impl PartialEq for Span {
    fn eq(&self, _: &Span) -> bool {
        true
    }
}
impl Eq for Span {}

/// A whole rule file, rules in file order.
///
/// Housekeeping lines of a ruleset script are applied as they are read:
/// `ipfw -f flush` drops the rules before it, `ipfw delete N` rule N,
/// `ipfw set move|swap` changes rules' sets. What remains is here.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ruleset {
    pub rules: Vec<Rule>,
    /// `table NAME create|add|delete|flush|destroy|swap …` lines, in file
    /// order (applied in that order on top of `--table` files).
    pub tables: Vec<TableCmd>,
    /// `net.inet.ip.fw.NAME=VALUE` lines (state tunables, `one_pass`, …).
    pub settings: Vec<Setting>,
    /// Sets disabled by `ipfw set disable N` (bit N).
    pub disabled_sets: u32,
}

/// One `table NAME …` command of a ruleset script.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableCmd {
    /// The table, or `all` for `flush` and `destroy`.
    pub table: String,
    pub op: TableOp,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TableOp {
    /// `create [type addr|iface|number|flow[:FIELDS]] [valtype …] …`.
    Create(TableKind, ValueTypes),
    /// `add KEY [VALUE]`; `update` (from `ipfw -q`) replaces an entry that
    /// exists instead of failing, as ipfw's quiet mode does.
    Add {
        key: TableKey,
        value: TableValue,
        update: bool,
    },
    /// `delete KEY`.
    Delete(TableKey),
    Flush,
    Destroy,
    /// `swap OTHER`: the two tables exchange their contents.
    Swap(String),
}

/// What a table's keys are (ipfw's `type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TableKind {
    /// IPv4 and IPv6 prefixes.
    Addr,
    /// Interface names.
    Iface,
    /// 32-bit numbers (ports, DSCP values).
    Number,
    /// Flows: the fields of [`FLOW_FIELDS`] in this mask, in that order.
    Flow(u8),
}

/// The fields of an ipfw table value (FreeBSD 11 and later), in the order
/// a `valtype` list and an entry's value give them (`IPFW_VTYPE_*` bit
/// order, sys/netinet/ip_fw.h): the name `valtype` uses for each.
pub const VALUE_FIELDS: &[&str] = &[
    "tag", "pipe", "divert", "skipto", "netgraph", "fib", "nat", "ipv4", "dscp", "limit", "ipv6",
];

/// One field of a table value: what `tablearg` reads for an action
/// (ip_fw2.c's `TARG(arg, field)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ValueField {
    Tag,
    Pipe,
    Divert,
    Skipto,
    Netgraph,
    Fib,
    Nat,
    /// `ipv4`: an IPv4 next hop, for `fwd tablearg`.
    Nh4,
    Dscp,
    Limit,
    /// `ipv6`: an IPv6 next hop, for `fwd tablearg` of IPv6 packets.
    Nh6,
}

impl ValueField {
    pub const ALL: [ValueField; 11] = [
        ValueField::Tag,
        ValueField::Pipe,
        ValueField::Divert,
        ValueField::Skipto,
        ValueField::Netgraph,
        ValueField::Fib,
        ValueField::Nat,
        ValueField::Nh4,
        ValueField::Dscp,
        ValueField::Limit,
        ValueField::Nh6,
    ];

    pub fn name(self) -> &'static str {
        VALUE_FIELDS[self as usize]
    }

    pub fn bit(self) -> u16 {
        1 << self as u16
    }
}

/// A table's `valtype`: a bit per [`ValueField`]. Empty is ipfw's legacy
/// value, one number that stands for every field.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ValueTypes(pub u16);

impl ValueTypes {
    pub const LEGACY: ValueTypes = ValueTypes(0);

    pub fn is_legacy(self) -> bool {
        self.0 == 0
    }

    pub fn has(self, f: ValueField) -> bool {
        self.0 & f.bit() != 0
    }

    /// The fields, in value order.
    pub fn fields(self) -> impl Iterator<Item = ValueField> {
        ValueField::ALL.into_iter().filter(move |f| self.has(*f))
    }
}

/// A table entry's value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TableValue {
    /// A number (or an IPv4 address, read as one), 0 when omitted: every
    /// field is this number, as ipfw's `set_legacy_value` makes it.
    Legacy(u32),
    /// The fields the table's `valtype` lists, comma-separated.
    Typed(Box<TypedValue>),
}

/// A typed table value: the fields its types name, the others 0 (as a
/// kernel `struct table_value` zeroed before it is filled).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TypedValue {
    pub types: ValueTypes,
    /// Every field but `ipv6`, by [`ValueField`] index; `ipv4` as its
    /// 32-bit number.
    pub numbers: [u32; 10],
    /// `ipv6`, as its 128-bit number.
    pub nh6: u128,
}

impl TypedValue {
    /// A field as a number (`ipv6`: its low 32 bits never are; use `nh6`).
    pub fn number(&self, f: ValueField) -> u32 {
        self.numbers.get(f as usize).copied().unwrap_or(0)
    }
}

impl TableValue {
    /// The field `tablearg` reads for an action (a legacy value is the
    /// same number in every field).
    pub fn number(&self, f: ValueField) -> u32 {
        match self {
            TableValue::Legacy(v) => *v,
            TableValue::Typed(t) => t.number(f),
        }
    }
}

/// The fields a flow table's keys hold, in key order, as ipfw names them.
pub const FLOW_FIELDS: &[(&str, u8)] = &[
    ("src-ip", 1),
    ("proto", 2),
    ("src-port", 4),
    ("dst-ip", 8),
    ("dst-port", 16),
];

/// A table key, as its table's kind reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TableKey {
    Prefix(IpAddr, u8),
    Iface(String),
    Number(u32),
    Flow(FlowKey),
}

/// A flow table key: the fields its table's mask names, others None.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FlowKey {
    pub src: Option<IpAddr>,
    pub proto: Option<Proto>,
    pub src_port: Option<Port>,
    pub dst: Option<IpAddr>,
    pub dst_port: Option<Port>,
}

/// A tunable, as FreeBSD's sysctl names it (`dyn_max`, `one_pass`, …).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Setting {
    pub name: String,
    pub value: u32,
    pub span: Span,
}

/// The tunables a ruleset may set (ipfw's `net.inet.ip.fw.*` sysctls for
/// dynamic rules), with FreeBSD's defaults: lifetimes in seconds.
pub const STATE_SETTINGS: &[(&str, u32)] = &[
    ("dyn_max", 65536),
    ("dyn_syn_lifetime", 20),
    ("dyn_ack_lifetime", 300),
    ("dyn_fin_lifetime", 1),
    ("dyn_rst_lifetime", 1),
    ("dyn_udp_lifetime", 10),
    ("dyn_short_lifetime", 5),
];

/// The most states `dyn_max` may allow: 2^20. The state table's whole
/// memory is then at most 416 MiB (README, "Stateful rules").
pub const DYN_MAX_CAP: u32 = 1 << 20;

/// Why `value` is refused for tunable `name` (a name from
/// [`STATE_SETTINGS`]), if it is.
pub fn setting_error(name: &str, value: u32) -> Option<String> {
    match name {
        "dyn_max" if value == 0 => Some("dyn_max must be at least 1".into()),
        "dyn_max" if value > DYN_MAX_CAP => Some(format!(
            "dyn_max {value} is over the cap of {DYN_MAX_CAP} states (at most 416 MiB of state table)"
        )),
        _ => None,
    }
}

/// The other tunables a ruleset may set, with FreeBSD's defaults:
/// `one_pass` (a packet back from dummynet, netgraph, NAT or a divert
/// socket is accepted, 1, or goes on at the next rule, 0),
/// `default_to_accept` (rule 65535 allows), and `net.link.ether.ipfw`
/// (Ethernet frames also pass the ruleset at layer 2).
pub const OTHER_SETTINGS: &[(&str, u32)] = &[
    ("one_pass", 1),
    ("default_to_accept", 0),
    ("net.link.ether.ipfw", 0),
];

/// ipfw tunables a ruleset may set that change nothing replay decides
/// (logging, the firewall switch, limits on things replay does not keep).
pub const IGNORED_SETTINGS: &[&str] = &[
    "enable",
    "verbose",
    "verbose_limit",
    "debug",
    "dyn_keepalive",
    "dyn_buckets",
    "static_count",
    "dyn_count",
    "tables_max",
    "tables_sets",
    "deny_unknown_exthdrs",
    "permit_single_frag6",
    "autoinc_step",
    "net.inet6.ip6.fw.enable",
    "net.inet6.ip6.fw.deny_unknown_exthdrs",
    "net.link.bridge.ipfw_arp",
];

/// The set ipfw keeps for rules `flush` leaves alone.
pub const RESERVED_SET: u8 = 31;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    /// The rule number (after ipfw's auto-numbering, 1..=65534).
    pub number: u16,
    /// `set N`, `prob P`, `altq Q`, `tag N`: what the rule says besides
    /// its action, log and body.
    pub head: RuleHead,
    pub action: Action,
    pub log: Option<Log>,
    pub body: Body,
    /// Text after `//`, kept and printed like ipfw does.
    pub comment: Option<String>,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Log {
    /// `logamount N`: at most N log lines from this rule (None: unlimited).
    pub amount: Option<u32>,
}

/// The parts of a rule around its action (ipfw's rule format:
/// `[N] [set S] [prob P] ACTION [log …] [altq Q] [tag|untag T] BODY`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RuleHead {
    /// `set S`, 0..=31 (`--disable-set S` and `ipfw set disable S` turn
    /// a set off).
    pub set: u8,
    /// `prob P`: the rule matches with probability P.
    pub prob: Option<Prob>,
    /// `altq QUEUE`: an ALTQ queue; it changes no verdict.
    pub altq: Option<String>,
    /// `tag N` / `untag N`: done to the packet when the rule's action runs.
    pub tag: Option<TagOp>,
}

/// A match probability: the rule matches when a uniform 32-bit draw is
/// below this value, so P = value / 2^32 (0 < P < 1; `prob 1` is no prob).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Prob(pub u32);

impl Prob {
    /// The probability as written back: the shortest decimal that reads
    /// back to the same value.
    pub fn as_f64(self) -> f64 {
        f64::from(self.0) / 4_294_967_296.0
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TagOp {
    Tag(u16),
    Untag(u16),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    Allow,
    Deny,
    /// `reject`: deny and send ICMP host unreachable (ipfw's meaning).
    Reject,
    /// `unreach CODE`: deny and send ICMP unreachable with this code.
    Unreach(u8),
    /// `reset`: deny and send a TCP RST.
    Reset,
    /// `abort`: deny and send an SCTP ABORT.
    Abort,
    /// `unreach6 CODE`, `reset6`, `abort6`: the IPv6 forms.
    Unreach6(u8),
    Reset6,
    Abort6,
    Count,
    Skipto(u16),
    /// `skipto tablearg`: to the value of the rule's table lookup.
    SkiptoTablearg,
    Call(u16),
    Return,
    /// `check-state [:NAME|:any]` (None: the default state name).
    CheckState(Option<String>),
    /// Hand-off actions: the packet goes to dummynet, a divert socket,
    /// netgraph or NAT, and comes back accepted (`one_pass` 1) or to the
    /// next rule (`one_pass` 0).
    Pipe(Arg),
    Queue(Arg),
    Divert(DivertPort),
    Netgraph(Arg),
    Nat(NatArg),
    /// `tee`, `ngtee`: a copy goes out, the packet goes on at the next rule.
    Tee(DivertPort),
    Ngtee(Arg),
    /// `fwd ADDR[,PORT]`: pass, towards this next hop.
    Fwd(FwdTarget),
    /// `setfib N`, `setdscp CODE`: change what later rules see, go on.
    SetFib(Arg),
    SetDscp(Arg),
    /// `reass`: hand IPv4 fragments to reassembly.
    Reass,
    /// `tcp-setmss N`: lower the MSS option of TCP SYNs to N, go on.
    TcpSetMss(u16),
}

/// A number, or `tablearg` (the value of the rule's table lookup).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arg {
    Number(u32),
    Tablearg,
}

/// `divert PORT`, `tee PORT`: a number, a `divert` service name (`natd`),
/// or `tablearg`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DivertPort {
    Port(Port),
    Tablearg,
}

/// `nat N`, `nat global`, `nat tablearg`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NatArg {
    Number(u32),
    Global,
    Tablearg,
}

/// `fwd ADDR[,PORT]` or `fwd tablearg[,PORT]` (address None).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FwdTarget {
    pub addr: Option<IpAddr>,
    pub port: Option<u16>,
}

impl Action {
    /// The action's keyword, as in rule text.
    pub fn word(&self) -> &'static str {
        match self {
            Action::Allow => "allow",
            Action::Deny => "deny",
            Action::Reject => "reject",
            Action::Unreach(_) => "unreach",
            Action::Reset => "reset",
            Action::Abort => "abort",
            Action::Unreach6(_) => "unreach6",
            Action::Reset6 => "reset6",
            Action::Abort6 => "abort6",
            Action::Count => "count",
            Action::Skipto(_) | Action::SkiptoTablearg => "skipto",
            Action::Call(_) => "call",
            Action::Return => "return",
            Action::CheckState(_) => "check-state",
            Action::Pipe(_) => "pipe",
            Action::Queue(_) => "queue",
            Action::Divert(_) => "divert",
            Action::Netgraph(_) => "netgraph",
            Action::Nat(_) => "nat",
            Action::Tee(_) => "tee",
            Action::Ngtee(_) => "ngtee",
            Action::Fwd(_) => "fwd",
            Action::SetFib(_) => "setfib",
            Action::SetDscp(_) => "setdscp",
            Action::Reass => "reass",
            Action::TcpSetMss(_) => "tcp-setmss",
        }
    }

    /// Whether the action's argument is `tablearg` (`fwd tablearg` has
    /// no address of its own).
    pub fn takes_tablearg(&self) -> bool {
        match self {
            Action::SkiptoTablearg => true,
            Action::Pipe(a)
            | Action::Queue(a)
            | Action::Netgraph(a)
            | Action::Ngtee(a)
            | Action::SetFib(a)
            | Action::SetDscp(a) => *a == Arg::Tablearg,
            Action::Divert(p) | Action::Tee(p) => *p == DivertPort::Tablearg,
            Action::Nat(n) => *n == NatArg::Tablearg,
            Action::Fwd(t) => t.addr.is_none(),
            _ => false,
        }
    }

    /// Whether the action takes no body of its own (`check-state`, and
    /// `return` without one, print bare).
    pub fn bodyless(&self) -> bool {
        matches!(self, Action::CheckState(_) | Action::Return)
    }
}

/// `PROTO from SRC [PORTS] to DST [PORTS] OPTIONS...`
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Body {
    /// Alternatives; `[Any]` for `ip`/`all`.
    pub proto: Vec<Proto>,
    pub src: AddrSpec,
    pub src_ports: Option<PortSpec>,
    pub dst: AddrSpec,
    pub dst_ports: Option<PortSpec>,
    pub options: Vec<OptionItem>,
}

impl Body {
    /// `ip from any to any`: matches every packet.
    pub fn match_all() -> Body {
        Body {
            proto: vec![Proto::Any],
            src: AddrSpec::any(),
            src_ports: None,
            dst: AddrSpec::any(),
            dst_ports: None,
            options: Vec::new(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Proto {
    /// `ip` or `all`.
    Any,
    /// `ip4`/`ipv4`: any IPv4 packet.
    Ip4,
    /// `ip6`/`ipv6`: any IPv6 packet.
    Ip6,
    Number(u8),
    /// A name resolved when the ruleset is compiled (`tcp`, `gre`, …).
    Name(String, Span),
}

/// `[not] any | me | ADDR/LEN | ADDR:MASK | table(NAME) | a,b,c | { a or b }`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AddrSpec {
    pub not: bool,
    /// Alternatives; written as a comma list or an or-block.
    pub items: Vec<Addr>,
    /// Whether it was written as `{ a or b }` (printing keeps the form).
    pub or_block: bool,
}

impl AddrSpec {
    pub fn any() -> AddrSpec {
        AddrSpec {
            not: false,
            items: vec![Addr::Any],
            or_block: false,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Addr {
    Any,
    /// Any address of this host (`--me`).
    Me,
    /// Any IPv6 address of this host.
    Me6,
    /// ADDR/LEN; ADDR alone is /32 or /128.
    Prefix(IpAddr, u8),
    /// ADDR:MASK (IPv4 only, as in ipfw).
    Masked(IpAddr, IpAddr),
    /// `table(NAME)`, or `table(NAME,VALUE)` to match only entries with
    /// that value: looked up at run time.
    Table(String, Option<u32>, Span),
    /// `10.1.2.0/24{5,10,20-25}`: hosts of a /24../31 IPv4 network (bit k
    /// of `members` is host `base + k`).
    Set {
        base: std::net::Ipv4Addr,
        len: u8,
        members: [u64; 4],
    },
    /// `not ADDR` as one member of an or-block (`{ a or not b }`, ipfw(8)
    /// RULE BODY); never nested, never in a comma list.
    Not(Box<Addr>),
}

/// `[not] N | N-M | NAME [, ...]`
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortSpec {
    pub not: bool,
    pub items: Vec<PortRange>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortRange {
    pub lo: Port,
    /// None for a single port.
    pub hi: Option<Port>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Port {
    Number(u16),
    /// A service name resolved when the ruleset is compiled.
    Name(String, Span),
}

/// An option, possibly negated with `not`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OptionItem {
    pub not: bool,
    pub opt: Opt,
    pub span: Span,
}

/// Set bits must be set, clear bits must be clear (`tcpflags syn,!ack`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlagSpec {
    pub set: u8,
    pub clear: u8,
}

/// Inclusive ranges of a numeric field (`iplen 40-60,1500`).
pub type Ranges = Vec<(u16, u16)>;

/// A state name: None for ipfw's `default`; `check-state` also takes `any`.
pub type StateName = Option<String>;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Opt {
    In,
    Out,
    Via(String),
    Recv(String),
    Xmit(String),
    /// `via table(NAME)` and friends: an interface table.
    ViaTable(IfaceDir, String),
    Established,
    Setup,
    TcpFlags(FlagSpec),
    /// ICMP types 0..=31 as a bitmap, as ipfw keeps them.
    IcmpTypes(u32),
    /// `frag`: a later fragment (offset not 0).
    Frag,
    /// `frag mf,!df,rf,offset`: the IPv4 fragment flags (bits of
    /// [`FRAG_NAMES`]).
    FragFlags(FlagSpec),
    IpOptions(FlagSpec),
    IpLen(Ranges),
    IpTtl(Ranges),
    IpId(Ranges),
    IpTos(FlagSpec),
    /// `ipprecedence N`, 0..=7: the top three TOS bits.
    IpPrecedence(u8),
    /// `dscp LIST`: DSCP code points as a 64-bit map.
    Dscp(u64),
    IpVersion(u8),
    TcpDataLen(Ranges),
    TcpOptions(FlagSpec),
    TcpSeq(u32),
    TcpAck(u32),
    TcpWin(Ranges),
    TcpMss(Ranges),
    /// Create a dynamic state and probe for one (`check-state` implied).
    KeepState(StateName),
    /// Create a dynamic state without probing.
    RecordState(StateName),
    /// `limit MASK... N` (probes) / `set-limit MASK... N` (does not): as
    /// keep-state, at most N states per masked flow.
    Limit {
        mask: u8,
        count: u32,
        name: StateName,
        probe: bool,
    },
    /// `defer-action`: a matching packet makes its state but the action
    /// waits for the state's next packets.
    DeferAction,
    /// ICMPv6 types 0..=255 as a bitmap.
    Icmp6Types([u64; 4]),
    /// `ext6hdr LIST`: any of these IPv6 extension headers (weir_wire's
    /// `ext6` bits).
    Ext6Hdr(u8),
    /// `flow-id LIST`: IPv6 flow labels.
    FlowId(Vec<u32>),
    /// `lookup KEY NAME`.
    Lookup(LookupKey, String),
    /// `flow table(NAME[,VALUE])`: the packet's flow in a flow table.
    FlowTable(String, Option<u32>),
    /// `src-ip LIST`, `dst-ip LIST`, `src-ip6 LIST`, `dst-ip6 LIST`
    /// (`v6` says which keyword; the lists mean the same).
    SrcIp {
        v6: bool,
        spec: AddrSpec,
    },
    DstIp {
        v6: bool,
        spec: AddrSpec,
    },
    SrcPort(PortSpec),
    DstPort(PortSpec),
    Proto(Proto),
    /// `fib N`: the packet's routing table (`--fib`, `setfib`).
    Fib(u16),
    /// `tagged LIST`: tags from `tag` actions earlier in the walk.
    Tagged(Ranges),
    /// `mac DST SRC`: Ethernet addresses (layer-2 pass only).
    Mac {
        dst: MacAddr,
        src: MacAddr,
    },
    /// `mac-type LIST`: Ethernet types (layer-2 pass only).
    MacType(Ranges),
    /// `layer2`: the layer-2 pass.
    Layer2,
    /// `diverted` (3), `diverted-loopback` (1), `diverted-output` (2):
    /// the packet came back from a divert socket, into input or output.
    Diverted(u8),
    /// `{ a or b … }` / `( a or b … )` among the options.
    Or(Vec<OptionItem>),
}

/// Which interface an interface table test looks at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IfaceDir {
    Via,
    Recv,
    Xmit,
}

/// An Ethernet address test: `any`, `ADDR`, `ADDR/LEN`, `ADDR&MASK`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MacAddr {
    pub addr: [u8; 6],
    pub mask: [u8; 6],
}

/// ipfw's `frag` flag names: IP_RF, IP_DF, IP_MF shifted into a byte, and
/// `offset` for a non-zero fragment offset.
pub const FRAG_NAMES: &[(&str, u8)] = &[("rf", 0x80), ("df", 0x40), ("mf", 0x20), ("offset", 0x01)];

/// ipfw's `tcpoptions` names.
pub const TCP_OPTION_NAMES: &[(&str, u8)] = &[
    ("mss", 0x01),
    ("maxseg", 0x01),
    ("window", 0x02),
    ("sack", 0x04),
    ("ts", 0x08),
    ("timestamp", 0x08),
    ("cc", 0x10),
];

/// DSCP names, as ipfw's `f_ipdscp`.
pub const DSCP_NAMES: &[(&str, u8)] = &[
    ("af11", 10),
    ("af12", 12),
    ("af13", 14),
    ("af21", 18),
    ("af22", 20),
    ("af23", 22),
    ("af31", 26),
    ("af32", 28),
    ("af33", 30),
    ("af41", 34),
    ("af42", 36),
    ("af43", 38),
    ("be", 0),
    ("ef", 46),
    ("cs0", 0),
    ("cs1", 8),
    ("cs2", 16),
    ("cs3", 24),
    ("cs4", 32),
    ("cs5", 40),
    ("cs6", 48),
    ("cs7", 56),
];

/// Ethernet type names, as ipfw's `ether_types`.
pub const ETHER_TYPE_NAMES: &[(&str, u16)] = &[
    ("ip", 0x0800),
    ("ipv4", 0x0800),
    ("ipv6", 0x86dd),
    ("arp", 0x0806),
    ("rarp", 0x8035),
    ("vlan", 0x8100),
    ("loop", 0x9000),
    ("trail", 0x1000),
    ("at", 0x809b),
    ("atalk", 0x809b),
    ("aarp", 0x80f3),
    ("pppoe_disc", 0x8863),
    ("pppoe_sess", 0x8864),
    ("ipx_8022", 0x00e0),
    ("ipx_8023", 0x0000),
    ("ipx_ii", 0x8137),
    ("ipx_snap", 0x8137),
    ("ipx", 0x8137),
    ("ns", 0x0600),
];

/// `limit` mask words: which fields of the flow count together.
pub const LIMIT_NAMES: &[(&str, u8)] = &[
    ("all", 15),
    ("src-addr", 1),
    ("src-port", 2),
    ("dst-addr", 4),
    ("dst-port", 8),
];

/// `ext6hdr` names and their weir_wire `ext6` bits.
pub const EXT6_NAMES: &[(&str, u8)] = &[
    ("hopopt", 1),
    ("route", 2),
    ("frag", 4),
    ("dstopt", 8),
    ("ah", 16),
    ("esp", 32),
    ("rthdr0", 64),
    ("rthdr2", 128),
];

/// What a `lookup` option looks up in its table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LookupKey {
    SrcIp,
    DstIp,
    SrcPort,
    DstPort,
    Dscp,
    /// The owner and jail of a local socket: refused when compiled.
    Uid,
    Jail,
}

impl LookupKey {
    pub const NAMES: &[(&'static str, LookupKey)] = &[
        ("src-ip", LookupKey::SrcIp),
        ("dst-ip", LookupKey::DstIp),
        ("src-port", LookupKey::SrcPort),
        ("dst-port", LookupKey::DstPort),
        ("dscp", LookupKey::Dscp),
        ("uid", LookupKey::Uid),
        ("jail", LookupKey::Jail),
    ];

    pub fn word(self) -> &'static str {
        LookupKey::NAMES
            .iter()
            .find(|(_, k)| *k == self)
            .map_or("", |(n, _)| n)
    }
}
