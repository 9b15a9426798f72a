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
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ruleset {
    pub rules: Vec<Rule>,
    /// `table NAME add PREFIX [VALUE]` lines, in file order.
    pub table_entries: Vec<TableEntry>,
    /// `net.inet.ip.fw.NAME=VALUE` lines (dynamic-state tunables).
    pub settings: Vec<Setting>,
}

/// `table NAME add PREFIX [VALUE]`: one prefix of a lookup table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableEntry {
    pub table: String,
    pub addr: IpAddr,
    pub len: u8,
    pub value: u32,
    pub span: Span,
}

/// A dynamic-state tunable, as FreeBSD's sysctl names it (`dyn_max`, …).
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

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    /// The rule number (after ipfw's auto-numbering, 1..=65534).
    pub number: u16,
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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Allow,
    Deny,
    /// `reject`: deny and send ICMP host unreachable (ipfw's meaning).
    Reject,
    /// `unreach CODE`: deny and send ICMP unreachable with this code.
    Unreach(u8),
    /// `reset`: deny and send a TCP RST.
    Reset,
    Count,
    Skipto(u16),
    /// `skipto tablearg`: to the value of the rule's table lookup.
    SkiptoTablearg,
    Call(u16),
    Return,
    CheckState,
}

impl Action {
    /// The action's keyword, as in rule text and verdict files.
    pub fn word(self) -> &'static str {
        match self {
            Action::Allow => "allow",
            Action::Deny => "deny",
            Action::Reject => "reject",
            Action::Unreach(_) => "unreach",
            Action::Reset => "reset",
            Action::Count => "count",
            Action::Skipto(_) | Action::SkiptoTablearg => "skipto",
            Action::Call(_) => "call",
            Action::Return => "return",
            Action::CheckState => "check-state",
        }
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

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Opt {
    In,
    Out,
    Via(String),
    Recv(String),
    Xmit(String),
    Established,
    Setup,
    TcpFlags(FlagSpec),
    /// ICMP types 0..=31 as a bitmap, as ipfw keeps them.
    IcmpTypes(u32),
    Frag,
    IpOptions(FlagSpec),
    IpLen(Ranges),
    IpTtl(Ranges),
    IpTos(FlagSpec),
    IpVersion(u8),
    /// Create a dynamic state and probe for one (`check-state` implied).
    KeepState,
    /// Create a dynamic state without probing.
    RecordState,
    /// `limit MASK... N`: as keep-state, at most N states per masked flow.
    Limit {
        mask: u8,
        count: u32,
    },
    /// ICMPv6 types 0..=255 as a bitmap.
    Icmp6Types([u64; 4]),
    /// `ext6hdr LIST`: any of these IPv6 extension headers (weir_wire's
    /// `ext6` bits).
    Ext6Hdr(u8),
    /// `lookup {src-ip|dst-ip|src-port|dst-port} NAME`.
    Lookup(LookupKey, String),
}

/// `limit` mask words: which fields of the flow count together.
pub const LIMIT_NAMES: &[(&str, u8)] = &[
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
];

/// What a `lookup` option looks up in its table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LookupKey {
    SrcIp,
    DstIp,
    SrcPort,
    DstPort,
}

impl LookupKey {
    pub const NAMES: &[(&'static str, LookupKey)] = &[
        ("src-ip", LookupKey::SrcIp),
        ("dst-ip", LookupKey::DstIp),
        ("src-port", LookupKey::SrcPort),
        ("dst-port", LookupKey::DstPort),
    ];

    pub fn word(self) -> &'static str {
        LookupKey::NAMES
            .iter()
            .find(|(_, k)| *k == self)
            .map_or("", |(n, _)| n)
    }
}
