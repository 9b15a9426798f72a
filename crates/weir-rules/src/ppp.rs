//! FreeBSD ppp's packet filters (`set filter in|out|dial|alive …`), read
//! and translated into the same ipfw rule tree the rest of weir compiles.
//!
//! The semantics are ppp's own (usr.sbin/ppp `filter.c`, `ip.c`
//! `FilterCheck`), as of FreeBSD 11–14:
//!
//! - A set holds rules 0..=39. A line sets, replaces (`N …`) or removes
//!   (`N clear`) one rule; a negative number clears the whole set. The
//!   file's final state is what counts.
//! - A set whose rule 0 is unset permits every packet, whatever rules 1..39
//!   say (FilterCheck's first test). Otherwise rules run in number order,
//!   first match wins, and a packet no rule takes is denied (the implicit
//!   deny).
//! - `permit`, `deny`, or a rule number: jump forward to that rule.
//! - `!` inverts the whole rule: its action is taken when it does not match.
//! - `src dst` come as a pair; `any`, `ADDR`, `ADDR/W`, or the symbolic
//!   MYADDR, HISADDR, DNS0, DNS1 (bound by flags). Width 0 and the
//!   all-zeros address mean any.
//! - `tcp`/`udp`: `src|dst lt|eq|gt PORT`; `tcp` also `estab` (ACK set),
//!   `syn` (SYN set), `finrst` (FIN or RST set). `icmp`: `src eq TYPE`.
//! - `timeout S` only changes ppp's idle timer: kept, printed, no verdict.
//! - A later IPv4 fragment never reaches the rules: the in and out sets
//!   permit it, dial and alive deny it.
//!
//! [`translate`] turns one set into an ipfw [`Ruleset`]: ppp rule `n`
//! becomes weir rule `(n + 1) * 100` (see [`rule_number`]), an inverted
//! rule a `skipto` over its action at `+ 50`, forward jumps `skipto`, the
//! fragment test rule 1, the implicit deny rule 4100.

use crate::ast::*;
use crate::diag::Diagnostic;
use crate::names::Names;
use std::fmt::{self, Display, Formatter};
use std::net::{IpAddr, Ipv4Addr};

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
    Dns0,
    Dns1,
}

impl Symbol {
    pub fn word(self) -> &'static str {
        match self {
            Symbol::MyAddr => "MYADDR",
            Symbol::HisAddr => "HISADDR",
            Symbol::Dns0 => "DNS0",
            Symbol::Dns1 => "DNS1",
        }
    }

    /// The weir flag that binds it.
    pub fn flag(self) -> &'static str {
        match self {
            Symbol::MyAddr => "--myaddr",
            Symbol::HisAddr => "--hisaddr",
            Symbol::Dns0 => "--dns0",
            Symbol::Dns1 => "--dns1",
        }
    }

    fn from_word(w: &str) -> Option<Symbol> {
        [Symbol::MyAddr, Symbol::HisAddr, Symbol::Dns0, Symbol::Dns1]
            .into_iter()
            .find(|s| s.word().eq_ignore_ascii_case(w))
    }
}

/// One side of the address pair.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    Any,
    /// ADDR/WIDTH; ADDR alone is /32 (/128).
    Net(IpAddr, u8),
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
}

/// `src|dst OP PORT`; for icmp, `src eq TYPE`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortTest {
    pub op: PortOp,
    pub port: Port,
}

/// What the protocol word allows after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ProtoKind {
    Ports { tcp: bool },
    Icmp,
    Other,
}

fn proto_kind(name: &str) -> ProtoKind {
    match name {
        "tcp" => ProtoKind::Ports { tcp: true },
        "udp" => ProtoKind::Ports { tcp: false },
        "icmp" | "ipv6-icmp" | "icmp6" => ProtoKind::Icmp,
        _ => ProtoKind::Other,
    }
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
    /// A protocol name as written (`tcp`, `gre`, `all`); None: any.
    pub proto: Option<(String, Span)>,
    /// `timeout S`: ppp's idle timer for packets this rule permits.
    pub timeout: Option<u32>,
    pub src_port: Option<PortTest>,
    pub dst_port: Option<PortTest>,
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

    pub fn is_empty(&self, set: FilterSet) -> bool {
        self.rules(set).next().is_none()
    }
}

/// True when the first command of `text` is `set …`: a ppp filter file,
/// not ipfw rules (which never start with `set`).
pub fn looks_like_ppp(text: &str) -> bool {
    text.lines()
        .map(|l| words(l, 1))
        .find(|w| !w.is_empty())
        .is_some_and(|w| w[0].0.eq_ignore_ascii_case("set"))
}

/// Splits a line into words with spans; `#` at the start of a word begins
/// a comment, as in ppp.conf.
fn words(text: &str, line: u32) -> Vec<(&str, Span)> {
    let mut out = Vec::new();
    let mut start = None;
    let mut col = 0u32;
    let mut start_col = 0u32;
    for (i, c) in text.char_indices() {
        col += 1;
        match (start, c.is_whitespace()) {
            (None, true) => {}
            (None, false) if c == '#' => break,
            (None, false) => {
                start = Some(i);
                start_col = col;
            }
            (Some(s), true) => {
                out.push((&text[s..i], span(line, start_col, &text[s..i])));
                start = None;
            }
            (Some(_), false) => {}
        }
    }
    if let Some(s) = start {
        out.push((&text[s..], span(line, start_col, &text[s..])));
    }
    out
}

fn span(line: u32, col: u32, w: &str) -> Span {
    Span {
        line,
        col,
        len: w.chars().count() as u32,
    }
}

type PResult<T> = Result<T, Diagnostic>;

/// Parses a ppp filter file. Only `set filter` lines, blank lines and `#`
/// comments are allowed: any other ppp command, or a ppp.conf label, is an
/// error, so rules from several labels are never merged by accident.
pub fn parse(source: &str) -> Result<PppFilters, Vec<Diagnostic>> {
    let mut filters = PppFilters::default();
    let mut errors = Vec::new();
    for (i, text) in source.lines().enumerate() {
        let line = u32::try_from(i + 1).unwrap_or(u32::MAX);
        let words = words(text, line);
        if words.is_empty() {
            continue;
        }
        let eol = Span {
            line,
            col: text.trim_end().chars().count() as u32 + 1,
            len: 1,
        };
        let mut p = LineParser {
            words: &words,
            pos: 0,
            eol,
        };
        if let Err(e) = p.line(&mut filters) {
            errors.push(e);
        }
    }
    if errors.is_empty() {
        Ok(filters)
    } else {
        Err(errors)
    }
}

struct LineParser<'w, 'a> {
    words: &'w [(&'a str, Span)],
    pos: usize,
    eol: Span,
}

impl<'a> LineParser<'_, 'a> {
    fn peek(&self) -> Option<&'a str> {
        self.words.get(self.pos).map(|w| w.0)
    }

    fn peek_span(&self) -> Span {
        self.words.get(self.pos).map_or(self.eol, |w| w.1)
    }

    fn next(&mut self, expected: &str) -> PResult<(&'a str, Span)> {
        let w = self.words.get(self.pos).copied().ok_or_else(|| {
            Diagnostic::new(
                self.eol,
                format!("unexpected end of line, expected {expected}"),
            )
        })?;
        self.pos += 1;
        Ok(w)
    }

    fn eat(&mut self, w: &str) -> bool {
        if self.peek() == Some(w) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn line(&mut self, filters: &mut PppFilters) -> PResult<()> {
        let (w, s) = self.next("set filter")?;
        let line_start = s;
        let is_filter = w.eq_ignore_ascii_case("set")
            && self
                .peek()
                .is_some_and(|w| w.eq_ignore_ascii_case("filter"));
        if !is_filter {
            let what = if w.ends_with(':') && self.words.len() == 1 {
                "a ppp.conf label"
            } else {
                "a ppp command other than 'set filter'"
            };
            return Err(Diagnostic::new(
                s,
                format!(
                    "{what}: a ppp filter file holds only 'set filter in|out|dial|alive N …' lines \
                     (take them from one label, e.g. with grep 'set filter')"
                ),
            ));
        }
        self.pos += 1;
        let (w, s) = self.next("a filter set (in, out, dial, alive)")?;
        let set = FilterSet::from_word(w).ok_or_else(|| {
            Diagnostic::new(
                s,
                format!("unknown filter set '{w}' (in, out, dial or alive)"),
            )
        })?;
        let (w, s) = self.next("a rule number 0..39")?;
        if let Some(digits) = w.strip_prefix('-') {
            // ppp: a negative rule number clears the whole set.
            c_integer(digits).ok_or_else(|| bad_number(w, s))?;
            self.end()?;
            filters.sets[set.index()].iter_mut().for_each(|r| *r = None);
            return Ok(());
        }
        let number = rule_no(w, s)?;
        if self.eat("clear") {
            self.end()?;
            filters.sets[set.index()][usize::from(number)] = None;
            return Ok(());
        }
        let f = self.filter(number, line_start)?;
        filters.insert(set, f);
        Ok(())
    }

    fn end(&self) -> PResult<()> {
        match self.words.get(self.pos) {
            None => Ok(()),
            Some((w, s)) => Err(Diagnostic::new(*s, format!("unexpected '{w}'"))),
        }
    }

    fn filter(&mut self, number: u8, start: Span) -> PResult<Filter> {
        let (w, s) = self.next("an action (permit, deny, clear or a rule number)")?;
        let action = match w {
            "permit" => Verb::Permit,
            "deny" => Verb::Deny,
            _ if w.bytes().next().is_some_and(|b| b.is_ascii_digit()) => {
                let target = rule_no(w, s)?;
                if target <= number {
                    return Err(Diagnostic::new(
                        s,
                        format!("rule {number} can only jump forward, past {number}"),
                    ));
                }
                Verb::Goto(target)
            }
            _ => {
                return Err(Diagnostic::new(
                    s,
                    format!("unknown action '{w}' (permit, deny, clear or a rule number)"),
                ))
            }
        };
        let invert = self.eat("!");
        if let Some(w) = self.peek().filter(|w| w.starts_with('!')) {
            return Err(Diagnostic::new(
                self.peek_span(),
                format!(
                    "'!' is a word of its own and inverts the whole rule: write '! {}'",
                    &w[1..]
                ),
            ));
        }
        let mut f = Filter {
            number,
            action,
            invert,
            addrs: None,
            proto: None,
            timeout: None,
            src_port: None,
            dst_port: None,
            estab: false,
            syn: false,
            finrst: false,
            span: start,
        };
        let Some(w) = self.peek() else {
            return Ok(f);
        };
        if endpoint(w, self.peek_span())?.is_some() {
            let (src, _) = self.next("an address")?;
            let src = endpoint(src, self.words[self.pos - 1].1)?.unwrap_or(Endpoint::Any);
            let (dst_w, dst_s) =
                self.next("a destination address (ppp takes src and dst as a pair)")?;
            let dst = endpoint(dst_w, dst_s)?.ok_or_else(|| {
                Diagnostic::new(
                    dst_s,
                    format!("expected a destination address (any, ADDR[/W], MYADDR, …), found '{dst_w}'"),
                )
            })?;
            if let (Some(a), Some(b)) = (family(&src), family(&dst)) {
                if a != b {
                    return Err(Diagnostic::new(
                        dst_s,
                        "src and dst address families differ",
                    ));
                }
            }
            f.addrs = Some((src, dst));
        }
        if let Some((w, s)) = self.words.get(self.pos).copied() {
            if w == "timeout" {
                return Err(Diagnostic::new(
                    s,
                    "timeout comes after a protocol (write 'all timeout S' for any protocol)",
                ));
            }
            if !is_proto_name(w) {
                return Err(Diagnostic::new(
                    s,
                    format!("expected a protocol name (tcp, udp, icmp, all, …), found '{w}'"),
                ));
            }
            self.pos += 1;
            let name = match w.to_ascii_lowercase() {
                l if matches!(l.as_str(), "tcp" | "udp" | "icmp") => l,
                _ => w.to_owned(),
            };
            f.proto = Some((name, s));
        }
        if self.eat("timeout") {
            let (w, s) = self.next("a timeout in seconds")?;
            let t = c_integer(w)
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| bad_number(w, s))?;
            f.timeout = Some(t);
        }
        let kind = f
            .proto
            .as_ref()
            .map_or(ProtoKind::Other, |(n, _)| proto_kind(n));
        self.options(&mut f, kind)?;
        Ok(f)
    }

    fn options(&mut self, f: &mut Filter, kind: ProtoKind) -> PResult<()> {
        for side in ["src", "dst"] {
            if self.peek() != Some(side) {
                continue;
            }
            let s = self.peek_span();
            if kind == ProtoKind::Other {
                return Err(Diagnostic::new(
                    s,
                    "port tests only follow tcp or udp (and 'src eq TYPE' icmp)",
                ));
            }
            self.pos += 1;
            let (w, os) = self.next("lt, eq or gt")?;
            let op = match w.to_ascii_lowercase().as_str() {
                "lt" => PortOp::Lt,
                "eq" => PortOp::Eq,
                "gt" => PortOp::Gt,
                _ => {
                    return Err(Diagnostic::new(
                        os,
                        format!("expected lt, eq or gt, found '{w}'"),
                    ))
                }
            };
            let (w, ps) = self.next("a port")?;
            let test = if kind == ProtoKind::Icmp {
                if side != "src" || op != PortOp::Eq {
                    return Err(Diagnostic::new(s, "icmp takes only 'src eq TYPE'"));
                }
                let t = c_integer(w)
                    .and_then(|n| u16::try_from(n).ok())
                    .filter(|&n| n <= 255)
                    .ok_or_else(|| {
                        Diagnostic::new(ps, format!("expected an ICMP type 0..255, found '{w}'"))
                    })?;
                PortTest {
                    op,
                    port: Port::Number(t),
                }
            } else {
                PortTest {
                    op,
                    port: port(w, ps)?,
                }
            };
            if side == "src" {
                f.src_port = Some(test);
            } else {
                f.dst_port = Some(test);
            }
        }
        while let Some((w, s)) = self.words.get(self.pos).copied() {
            let flag = match w {
                "estab" => &mut f.estab,
                "syn" => &mut f.syn,
                "finrst" => &mut f.finrst,
                _ => {
                    return Err(Diagnostic::new(
                        s,
                        format!("unexpected '{w}'{}", order_hint(w)),
                    ))
                }
            };
            if kind != (ProtoKind::Ports { tcp: true }) {
                return Err(Diagnostic::new(s, format!("{w} only follows tcp")));
            }
            *flag = true;
            self.pos += 1;
        }
        Ok(())
    }
}

fn order_hint(w: &str) -> &'static str {
    match w {
        "src" | "dst" => {
            " (ppp's order: [proto] [timeout S] [src OP P] [dst OP P] [estab] [syn] [finrst])"
        }
        "timeout" => " (timeout comes right after the protocol)",
        _ => "",
    }
}

fn rule_no(w: &str, s: Span) -> PResult<u8> {
    let n = c_integer(w).ok_or_else(|| bad_number(w, s))?;
    u8::try_from(n)
        .ok()
        .filter(|&n| n < MAX_FILTERS)
        .ok_or_else(|| {
            Diagnostic::new(
                s,
                format!("rule number {n} is out of range: a ppp set holds at most 40 rules, 0..39"),
            )
        })
}

fn bad_number(w: &str, s: Span) -> Diagnostic {
    let hint = if w.len() > 1 && w.starts_with('0') && !w.starts_with("0x") {
        " (ppp reads a leading 0 as octal; write the number without it)"
    } else {
        ""
    };
    Diagnostic::new(s, format!("expected a number, found '{w}'{hint}"))
}

/// A number as ppp's strtol(…, 0) reads it, decimal or 0x hex; a leading 0
/// (octal to ppp) is refused rather than read differently.
fn c_integer(w: &str) -> Option<u64> {
    let (digits, radix) = match w.strip_prefix("0x").or_else(|| w.strip_prefix("0X")) {
        Some(h) => (h, 16),
        None if w.len() > 1 && w.starts_with('0') => return None,
        None => (w, 10),
    };
    if digits.is_empty() || digits.len() > 16 || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

fn is_proto_name(w: &str) -> bool {
    !w.is_empty()
        && w.len() <= 64
        && w.bytes().next().is_some_and(|b| b.is_ascii_alphabetic())
        && w.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && !matches!(w, "timeout" | "src" | "dst" | "estab" | "syn" | "finrst")
}

/// Some(true) for IPv4, Some(false) for IPv6, None where ppp keeps no
/// family (any, width 0, the all-zeros address; symbols are IPv4).
fn family(e: &Endpoint) -> Option<bool> {
    match e {
        Endpoint::Net(a, w) if *w > 0 && !a.is_unspecified() => Some(a.is_ipv4()),
        Endpoint::Symbol(..) => Some(true),
        _ => None,
    }
}

/// An address word, or None when `w` is not one (so it may be a protocol).
fn endpoint(w: &str, s: Span) -> PResult<Option<Endpoint>> {
    if w.eq_ignore_ascii_case("any") {
        return Ok(Some(Endpoint::Any));
    }
    let (a, width) = match w.split_once('/') {
        Some((a, width)) => (a, Some(width)),
        None => (w, None),
    };
    if let Some(sym) = Symbol::from_word(a) {
        if width.is_some() {
            return Err(Diagnostic::new(
                s,
                format!(
                    "ppp ignores a width on {0} (it always means the one address): write {0}",
                    sym.word()
                ),
            ));
        }
        return Ok(Some(Endpoint::Symbol(sym, s)));
    }
    if a.eq_ignore_ascii_case("MYADDR6") || a.eq_ignore_ascii_case("HISADDR6") {
        return Err(Diagnostic::new(
            s,
            format!("{a} is not supported yet (IPv4 symbols only)"),
        ));
    }
    let addr: IpAddr = match a.parse() {
        Ok(addr) => addr,
        Err(_) if width.is_some() || a.contains(['.', ':']) => {
            return Err(Diagnostic::new(
                s,
                format!("bad address '{a}' (numeric IPv4 or IPv6 only)"),
            ));
        }
        Err(_) => return Ok(None),
    };
    let max = if addr.is_ipv4() { 32 } else { 128 };
    let width = match width {
        None => max,
        Some(wd) => c_integer(wd)
            .filter(|&n| n <= u64::from(max))
            .ok_or_else(|| Diagnostic::new(s, format!("bad mask width '{wd}' (0..{max})")))?
            as u8,
    };
    Ok(Some(Endpoint::Net(addr, width)))
}

fn port(w: &str, s: Span) -> PResult<Port> {
    let bad = || {
        Diagnostic::new(
            s,
            format!("expected a port 1..65535 or a service name, found '{w}'"),
        )
    };
    if w.bytes().next().is_some_and(|b| b.is_ascii_digit()) {
        // ppp refuses port 0 (ParsePort returns 0 for errors).
        let n = c_integer(w)
            .and_then(|n| u16::try_from(n).ok())
            .filter(|&n| n > 0);
        return n.map(Port::Number).ok_or_else(bad);
    }
    if is_proto_name(w) {
        Ok(Port::Name(w.to_owned(), s))
    } else {
        Err(bad())
    }
}

// ---- printing -----------------------------------------------------------

impl Display for Endpoint {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Any => f.write_str("any"),
            Endpoint::Net(a, w) if *w == if a.is_ipv4() { 32 } else { 128 } => write!(f, "{a}"),
            Endpoint::Net(a, w) => write!(f, "{a}/{w}"),
            Endpoint::Symbol(s, _) => f.write_str(s.word()),
        }
    }
}

impl Display for Verb {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Verb::Permit => f.write_str("permit"),
            Verb::Deny => f.write_str("deny"),
            Verb::Goto(n) => write!(f, "{n}"),
        }
    }
}

impl Display for Filter {
    /// The rule as ppp writes it after `set filter SET`.
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.number, self.action)?;
        if self.invert {
            f.write_str(" !")?;
        }
        if let Some((s, d)) = &self.addrs {
            write!(f, " {s} {d}")?;
        }
        if let Some((p, _)) = &self.proto {
            write!(f, " {p}")?;
        }
        if let Some(t) = self.timeout {
            write!(f, " timeout {t}")?;
        }
        for (side, t) in [("src", &self.src_port), ("dst", &self.dst_port)] {
            if let Some(t) = t {
                // ppp writes service names as they are (no ipfw `\-`).
                match &t.port {
                    Port::Number(n) => write!(f, " {side} {} {n}", t.op.word())?,
                    Port::Name(name, _) => write!(f, " {side} {} {name}", t.op.word())?,
                }
            }
        }
        for (on, w) in [
            (self.estab, "estab"),
            (self.syn, "syn"),
            (self.finrst, "finrst"),
        ] {
            if on {
                write!(f, " {w}")?;
            }
        }
        Ok(())
    }
}

/// The whole file in canonical form: `parse(print(f)) == f`.
pub fn print(filters: &PppFilters) -> String {
    let mut out = String::new();
    for set in FilterSet::ALL {
        for r in filters.rules(set) {
            out.push_str(&format!("set filter {} {r}\n", set.word()));
        }
    }
    out
}

// ---- translation to ipfw ------------------------------------------------

/// Addresses for the symbolic names, given on the command line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bindings {
    pub myaddr: Option<Ipv4Addr>,
    pub hisaddr: Option<Ipv4Addr>,
    pub dns0: Option<Ipv4Addr>,
    pub dns1: Option<Ipv4Addr>,
}

impl Bindings {
    fn get(&self, s: Symbol) -> Option<Ipv4Addr> {
        match s {
            Symbol::MyAddr => self.myaddr,
            Symbol::HisAddr => self.hisaddr,
            Symbol::Dns0 => self.dns0,
            Symbol::Dns1 => self.dns1,
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

/// Translates one set into ipfw rules that weir compiles to the same
/// decisions ppp makes. Names resolve here (protocols, services), and the
/// symbolic addresses from `bind`; every error carries its span.
pub fn translate(
    filters: &PppFilters,
    set: FilterSet,
    bind: &Bindings,
    names: &Names,
) -> Result<Translation, Vec<Diagnostic>> {
    let slots = &filters.sets[set.index()];
    let mut notes = Vec::new();
    let mut rules = Vec::new();
    let mut errors = Vec::new();
    let Some(first) = slots[0].as_ref() else {
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
    frag_body.options.push(OptionItem {
        not: false,
        opt: Opt::Frag,
        span: first.span,
    });
    rules.push(simple_rule(
        FRAGMENT_RULE,
        frag_action,
        frag_log,
        frag_body,
        "later IPv4 fragments",
    ));
    for f in slots.iter().flatten() {
        match translate_rule(f, set, bind, names) {
            Ok(mut r) => rules.append(&mut r),
            Err(e) => errors.push(e),
        }
    }
    let deny = Some(Log { amount: None });
    rules.push(simple_rule(
        IMPLICIT_DENY_RULE,
        Action::Deny,
        deny,
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
    let body = body(f, bind, names)?;
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

fn body(f: &Filter, bind: &Bindings, names: &Names) -> PResult<Body> {
    let mut b = Body::match_all();
    let mut proto_num = None;
    if let Some((name, s)) = &f.proto {
        let n = match name.as_str() {
            "all" | "ip" => 0,
            _ => names
                .protocol(name)
                .ok_or_else(|| Diagnostic::new(*s, format!("unknown protocol '{name}'")))?,
        };
        if n != 0 {
            b.proto = vec![match names.protocol_name(n) {
                Some(canonical) => Proto::Name(canonical.to_owned(), *s),
                None => Proto::Number(n),
            }];
            proto_num = Some(n);
        }
    }
    if let Some((src, dst)) = &f.addrs {
        b.src = addr_spec(src, bind)?;
        b.dst = addr_spec(dst, bind)?;
    }
    match proto_kind(f.proto.as_ref().map_or("", |p| p.0.as_str())) {
        ProtoKind::Icmp => {
            if let Some(t) = &f.src_port {
                let Port::Number(ty) = t.port else {
                    return Err(Diagnostic::new(f.span, "an ICMP type is a number"));
                };
                if proto_num != Some(1) || ty > 31 {
                    let span = f.proto.as_ref().map_or(f.span, |p| p.1);
                    return Err(Diagnostic::new(
                        span,
                        "weir's icmptypes tests ICMPv4 types 0..31 only; this ICMP type test cannot be translated",
                    ));
                }
                b.options.push(opt(Opt::IcmpTypes(1 << ty), f.span));
            }
        }
        _ => {
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
    }
    let set = (if f.estab { 0x10 } else { 0 }) | (if f.syn { 0x02 } else { 0 });
    if set != 0 {
        b.options
            .push(opt(Opt::TcpFlags(FlagSpec { set, clear: 0 }), f.span));
    }
    if f.finrst {
        // FIN or RST: not (FIN clear and RST clear).
        b.options.push(OptionItem {
            not: true,
            opt: Opt::TcpFlags(FlagSpec {
                set: 0,
                clear: 0x01 | 0x04,
            }),
            span: f.span,
        });
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

fn addr_spec(e: &Endpoint, bind: &Bindings) -> PResult<AddrSpec> {
    let addr = match e {
        Endpoint::Any => Addr::Any,
        // ppp: the all-zeros address and width 0 both mean any.
        Endpoint::Net(a, w) if *w == 0 || a.is_unspecified() => Addr::Any,
        Endpoint::Net(a, w) => Addr::Prefix(*a, *w),
        Endpoint::Symbol(s, span) => {
            let a = bind.get(*s).ok_or_else(|| {
                Diagnostic::new(
                    *span,
                    format!("{} used but {} not given", s.word(), s.flag()),
                )
            })?;
            Addr::Prefix(IpAddr::V4(a), 32)
        }
    };
    Ok(AddrSpec {
        not: false,
        items: vec![addr],
        or_block: false,
    })
}

fn port_spec(t: &PortTest, names: &Names) -> PResult<PortSpec> {
    let p = match &t.port {
        Port::Number(n) => *n,
        Port::Name(name, s) => names
            .service(name)
            .filter(|&p| p > 0)
            .ok_or_else(|| Diagnostic::new(*s, format!("unknown service '{name}'")))?,
    };
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
