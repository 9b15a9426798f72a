//! FreeBSD ppp's packet filters (`set filter in|out|dial|alive …`), read
//! as ppp reads them and translated into the same ipfw rule tree the rest
//! of weir compiles.
//!
//! The semantics are ppp's own (usr.sbin/ppp `filter.c` `filter_Parse`,
//! `ncpaddr.c` `ncprange_aton`, `defs.c` `GetIpAddr`, `ip.c`
//! `FilterCheck`, `systems.c` `ReadSystem`), as of FreeBSD 11–14:
//!
//! - A set holds rules 0..=39. A line sets, replaces (`N …`) or removes
//!   (`N clear`) one rule; a negative number clears the whole set. The
//!   file's final state is what counts. Numbers are C's (`010` is 8,
//!   `0x10` is 16).
//! - A set whose rule 0 is unset permits every packet, whatever rules 1..39
//!   say (FilterCheck's first test). Otherwise rules run in number order,
//!   first match wins, and a packet no rule takes is denied (the implicit
//!   deny).
//! - `permit`, `deny`, or a rule number: jump forward to that rule.
//! - `!` inverts the whole rule: its action is taken when it does not match.
//! - A protocol name (`/etc/protocols`, or `all`) may come first; anything
//!   else starts a `src dst` pair: `any`, an address as `inet_aton` reads
//!   it (`0`, `10/8` = 0.0.0.10/8, `127.1` = 127.0.0.1), an IPv6 address,
//!   a host name (resolved once, at load), or MYADDR, HISADDR, MYADDR6,
//!   HISADDR6, DNS0, DNS1 (bound by flags; ppp ignores a width on them).
//!   Width 0 and the all-zeros address mean any.
//! - `tcp`/`udp` (and `ipencap`/`ipv6`, whose ports ppp reads as 0):
//!   `src|dst lt|eq|gt PORT`; `tcp` also `estab` (ACK set), `syn` (SYN
//!   set), `finrst` (FIN or RST set). `icmp`/`ipv6-icmp`: `src eq TYPE`;
//!   any other three words after icmp are ignored by ppp (so are they here,
//!   with a note).
//! - `timeout S` only changes ppp's idle timer: kept, printed, no verdict.
//! - A later IPv4 fragment never reaches the rules: the in and out sets
//!   permit it, dial and alive deny it.
//! - For IPv6 ppp compares the first Next Header with the rule's protocol:
//!   a packet with extension headers matches no rule naming an upper-layer
//!   protocol. Rules naming an extension header (`ipv6-route`,
//!   `ipv6-frag`, `ipv6-opts`, `ah`) cannot follow that for IPv6 packets
//!   (weir reads the protocol after the extension headers): their
//!   translation says so in a note.
//!
//! Files come in two forms ([`conf`]): a filter file (`set filter` lines
//! as typed at the ppp prompt) and a ppp.conf, read section by section
//! (`default`, then the label asked for, following `load`).
//!
//! [`translate`] turns one set into an ipfw [`Ruleset`]: ppp rule `n`
//! becomes weir rule `(n + 1) * 100` (see [`rule_number`]), an inverted
//! rule a `skipto` over its action at `+ 50`, forward jumps `skipto`, the
//! fragment test rule 1, the implicit deny rule 4100.

mod addr;
pub mod conf;
pub mod hosts;
mod line;
mod print;
mod translate;
mod words;

pub use conf::{conf_labels, detect, parse, parse_conf, parse_conf_source, parse_source, Format};
pub use print::print;
pub use translate::{translate, Bindings, Translation};

use crate::ast::{Port, Span};
use crate::diag::Diagnostic;
use std::net::IpAddr;

/// ppp's MAXFILTERS: rules 0..=39 in each set.
pub const MAX_FILTERS: u8 = 40;
/// The weir rule that handles later IPv4 fragments.
pub const FRAGMENT_RULE: u16 = 1;
/// The weir rule standing for ppp's implicit deny.
pub const IMPLICIT_DENY_RULE: u16 = (MAX_FILTERS as u16 + 1) * 100;
/// An inverted rule's action sits this far after its test.
pub const INVERT_OFFSET: u16 = 50;

/// The weir rule number of ppp rule `n`.
pub fn rule_number(n: u8) -> u16 {
    (u16::from(n) + 1) * 100
}

/// What a weir rule of a translated set stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The later-fragment test (or, in a set without rule 0, permit-all).
    Fragment,
    /// ppp rule N.
    Rule(u8),
    /// No rule took the packet.
    ImplicitDeny,
}

/// The ppp meaning of weir rule `number` in a translated set.
pub fn role_of(number: u16) -> Role {
    match number {
        IMPLICIT_DENY_RULE.. => Role::ImplicitDeny,
        100.. => Role::Rule((number / 100 - 1) as u8),
        _ => Role::Fragment,
    }
}

/// ppp's four filter sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FilterSet {
    /// Packets arriving from the link: pass or drop.
    In,
    /// Packets leaving through the link: pass or drop.
    Out,
    /// Whether a packet brings the link up (permit: dial).
    Dial,
    /// Whether a packet keeps the link up (permit: reset the idle timer).
    Alive,
}

impl FilterSet {
    pub const ALL: [FilterSet; 4] = [
        FilterSet::In,
        FilterSet::Out,
        FilterSet::Dial,
        FilterSet::Alive,
    ];

    /// The word in `set filter WORD`.
    pub fn word(self) -> &'static str {
        match self {
            FilterSet::In => "in",
            FilterSet::Out => "out",
            FilterSet::Dial => "dial",
            FilterSet::Alive => "alive",
        }
    }

    /// ppp's name for the set in log lines (`INbound rule = …`).
    pub fn log_name(self) -> &'static str {
        match self {
            FilterSet::In => "IN",
            FilterSet::Out => "OUT",
            FilterSet::Dial => "DIAL",
            FilterSet::Alive => "ALIVE",
        }
    }

    /// The set named `w`, exactly as ppp's `filter_Set` compares it.
    pub fn from_word(w: &str) -> Option<FilterSet> {
        FilterSet::ALL.into_iter().find(|s| s.word() == w)
    }

    /// ppp's `fragok`: in and out permit later fragments, dial and alive
    /// deny them.
    pub fn fragments_ok(self) -> bool {
        matches!(self, FilterSet::In | FilterSet::Out)
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// A rule's action.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verb {
    Permit,
    Deny,
    /// Continue at this (later) rule number.
    Goto(u8),
}

/// ppp's symbolic addresses, bound when the link comes up (here: by flags).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Symbol {
    MyAddr,
    HisAddr,
    MyAddr6,
    HisAddr6,
    Dns0,
    Dns1,
}

impl Symbol {
    pub const ALL: [Symbol; 6] = [
        Symbol::MyAddr,
        Symbol::HisAddr,
        Symbol::MyAddr6,
        Symbol::HisAddr6,
        Symbol::Dns0,
        Symbol::Dns1,
    ];

    pub fn word(self) -> &'static str {
        match self {
            Symbol::MyAddr => "MYADDR",
            Symbol::HisAddr => "HISADDR",
            Symbol::MyAddr6 => "MYADDR6",
            Symbol::HisAddr6 => "HISADDR6",
            Symbol::Dns0 => "DNS0",
            Symbol::Dns1 => "DNS1",
        }
    }

    /// The weir flag that binds it.
    pub fn flag(self) -> &'static str {
        match self {
            Symbol::MyAddr => "--myaddr",
            Symbol::HisAddr => "--hisaddr",
            Symbol::MyAddr6 => "--myaddr6",
            Symbol::HisAddr6 => "--hisaddr6",
            Symbol::Dns0 => "--dns0",
            Symbol::Dns1 => "--dns1",
        }
    }

    pub fn is_ipv6(self) -> bool {
        matches!(self, Symbol::MyAddr6 | Symbol::HisAddr6)
    }
}

/// One side of the address pair.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    Any,
    /// ADDR/WIDTH, the address as ppp stores it (`10/8` is 0.0.0.10/8);
    /// width 0 for the all-zeros address, which means any.
    Net(IpAddr, u8),
    /// A host name and width (32 when none was given), resolved to its
    /// first IPv4 address when the rules are loaded.
    Host(String, u8, Span),
    Symbol(Symbol, Span),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortOp {
    Lt,
    Eq,
    Gt,
}

impl PortOp {
    fn word(self) -> &'static str {
        match self {
            PortOp::Lt => "lt",
            PortOp::Eq => "eq",
            PortOp::Gt => "gt",
        }
    }

    /// Whether `port` passes `op limit`, as ppp's `PortMatch`.
    pub fn holds(self, port: u16, limit: u16) -> bool {
        match self {
            PortOp::Lt => port < limit,
            PortOp::Eq => port == limit,
            PortOp::Gt => port > limit,
        }
    }
}

/// `src|dst OP PORT`: the port as written (a number or a service name,
/// checked when read).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortTest {
    pub op: PortOp,
    pub port: Port,
}

/// The protocol word of a rule, and its number (0, `all` or `ip`, is any).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Protocol {
    pub name: String,
    pub number: u8,
    pub span: Span,
}

/// One `set filter SET N …` rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Filter {
    pub number: u8,
    pub action: Verb,
    /// `!`: take the action when the rule does not match.
    pub invert: bool,
    /// `src dst`, or None for any/any.
    pub addrs: Option<(Endpoint, Endpoint)>,
    /// The protocol word; None: any.
    pub proto: Option<Protocol>,
    /// `timeout S`: ppp's idle timer for packets this rule permits.
    pub timeout: Option<u32>,
    pub src_port: Option<PortTest>,
    pub dst_port: Option<PortTest>,
    /// icmp/ipv6-icmp `src eq TYPE`.
    pub icmp_type: Option<u16>,
    pub estab: bool,
    pub syn: bool,
    pub finrst: bool,
    pub span: Span,
}

/// A whole ppp filter file: the final rules of each set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PppFilters {
    sets: [Vec<Option<Filter>>; 4],
}

impl Default for PppFilters {
    fn default() -> PppFilters {
        let empty = || vec![None; usize::from(MAX_FILTERS)];
        PppFilters {
            sets: [empty(), empty(), empty(), empty()],
        }
    }
}

impl PppFilters {
    /// The defined rules of one set, in number order.
    pub fn rules(&self, set: FilterSet) -> impl Iterator<Item = &Filter> {
        self.sets[set.index()].iter().flatten()
    }

    /// Sets (or replaces) a rule.
    pub fn insert(&mut self, set: FilterSet, f: Filter) {
        let n = usize::from(f.number);
        self.sets[set.index()][n] = Some(f);
    }

    /// Removes one rule (`N clear`).
    pub fn clear(&mut self, set: FilterSet, number: u8) {
        self.sets[set.index()][usize::from(number)] = None;
    }

    /// Removes every rule of a set (a negative rule number).
    pub fn clear_all(&mut self, set: FilterSet) {
        self.sets[set.index()].iter_mut().for_each(|r| *r = None);
    }

    pub fn is_empty(&self, set: FilterSet) -> bool {
        self.rules(set).next().is_none()
    }

    /// Every host name the rules of `set` (all sets: None) use, once each.
    pub fn host_names(&self, set: Option<FilterSet>) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for s in FilterSet::ALL
            .into_iter()
            .filter(|s| set.is_none_or(|x| x == *s))
        {
            for f in self.rules(s) {
                for e in f.addrs.iter().flat_map(|(a, b)| [a, b]) {
                    if let Endpoint::Host(name, ..) = e {
                        if !out.contains(&name.as_str()) {
                            out.push(name);
                        }
                    }
                }
            }
        }
        out
    }
}

/// What reading a file gave: the filters, and notes where ppp reads a rule
/// differently from what it seems to say (not errors: ppp accepts them).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Loaded {
    pub filters: PppFilters,
    pub notes: Vec<Diagnostic>,
}
