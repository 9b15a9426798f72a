//! Parses ipfw rule files into a [`Ruleset`].
//!
//! One rule per line: `[ipfw [-q]] [add] [NUMBER] ACTION [log [logamount N]] BODY`.
//! Two other kinds of line fill tables and set state tunables:
//! `[ipfw] table NAME add PREFIX [VALUE]` and
//! `[sysctl] net.inet.ip.fw.dyn_ack_lifetime=300`.
//! Every line is parsed even after an error, so a file's errors come out
//! together; any error means no ruleset at all.

use crate::ast::*;
use crate::diag::Diagnostic;
use crate::lex::{lex_line, Tok, Token};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Rule numbers run 1..=65534; 65535 is the implicit default rule.
pub const MAX_RULE_NUMBER: u16 = 65534;
/// ipfw's `net.inet.ip.fw.autoinc_step` default.
pub const AUTOINC_STEP: u16 = 100;

type PResult<T> = Result<T, Diagnostic>;

/// Parses a whole rule file.
pub fn parse(source: &str) -> Result<Ruleset, Vec<Diagnostic>> {
    let mut rs = Ruleset::default();
    let mut errors = Vec::new();
    let mut last_number: u16 = 0;
    for (i, text) in source.lines().enumerate() {
        let line_no = u32::try_from(i + 1).unwrap_or(u32::MAX);
        let line = lex_line(text, line_no);
        if line.tokens.is_empty() {
            continue;
        }
        let mut p = Parser::new(&line.tokens, line_no, text);
        let result = match p.line_kind() {
            LineKind::Table => p.table_entry().map(|e| rs.table_entries.push(e)),
            LineKind::Setting => p.setting().map(|s| rs.settings.push(s)),
            LineKind::Rule => p.rule(last_number).map(|mut rule| {
                rule.comment = line.comment.filter(|c| !c.is_empty()).map(str::to_owned);
                last_number = last_number.max(rule.number);
                rs.rules.push(rule);
            }),
        };
        if let Err(e) = result {
            errors.push(e);
        }
    }
    if errors.is_empty() {
        Ok(rs)
    } else {
        Err(errors)
    }
}

enum LineKind {
    Rule,
    Table,
    Setting,
}

/// The sysctl prefix of ipfw's tunables.
const SYSCTL_PREFIX: &str = "net.inet.ip.fw.";

/// Parses a single rule (no number needed; numbered 100 if none given).
pub fn parse_rule(text: &str) -> Result<Rule, Diagnostic> {
    let line = lex_line(text, 1);
    let mut rule = Parser::new(&line.tokens, 1, text).rule(0)?;
    rule.comment = line.comment.filter(|c| !c.is_empty()).map(str::to_owned);
    Ok(rule)
}

struct Parser<'t, 'a> {
    toks: &'t [Token<'a>],
    pos: usize,
    /// Where "end of rule" errors point: just past the last character.
    eol: Span,
}

const OPTION_WORDS: &[&str] = &[
    "in",
    "out",
    "via",
    "recv",
    "xmit",
    "established",
    "setup",
    "tcpflags",
    "icmptypes",
    "frag",
    "ipoptions",
    "iplen",
    "ipttl",
    "iptos",
    "ipversion",
    "keep-state",
    "record-state",
    "limit",
    "icmp6types",
    "ext6hdr",
    "lookup",
];

impl<'t, 'a> Parser<'t, 'a> {
    fn new(toks: &'t [Token<'a>], line: u32, text: &str) -> Self {
        let col = text.trim_end().chars().count() as u32 + 1;
        Parser {
            toks,
            pos: 0,
            eol: Span { line, col, len: 1 },
        }
    }

    fn peek(&self) -> Option<&Token<'a>> {
        self.toks.get(self.pos)
    }

    fn peek_word(&self) -> Option<&'a str> {
        match self.peek()?.tok {
            Tok::Word(w) => Some(w),
            _ => None,
        }
    }

    fn peek_word_at(&self, ahead: usize) -> Option<&'a str> {
        match self.toks.get(self.pos + ahead)?.tok {
            Tok::Word(w) => Some(w),
            _ => None,
        }
    }

    fn at_end(&self) -> bool {
        self.pos >= self.toks.len()
    }

    fn next(&mut self, expected: &str) -> PResult<Token<'a>> {
        let tok = self.toks.get(self.pos).copied().ok_or_else(|| {
            Diagnostic::new(
                self.eol,
                format!("unexpected end of rule, expected {expected}"),
            )
        })?;
        self.pos += 1;
        Ok(tok)
    }

    fn word(&mut self, expected: &str) -> PResult<(&'a str, Span)> {
        let tok = self.next(expected)?;
        match tok.tok {
            Tok::Word(w) => Ok((w, tok.span)),
            _ => Err(Diagnostic::new(
                tok.span,
                format!("expected {expected}, found '{}'", tok.text()),
            )),
        }
    }

    fn eat_word(&mut self, w: &str) -> bool {
        if self.peek_word() == Some(w) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn eat(&mut self, tok: Tok) -> bool {
        if self.peek().map(|t| t.tok) == Some(tok) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect_word(&mut self, w: &str) -> PResult<Span> {
        let (got, span) = self.word(&format!("'{w}'"))?;
        if got == w {
            Ok(span)
        } else {
            Err(Diagnostic::new(
                span,
                format!("expected '{w}', found '{got}'"),
            ))
        }
    }

    fn number<T: TryFrom<u64>>(&mut self, what: &str, max: u64) -> PResult<(T, Span)> {
        let (w, span) = self.word(what)?;
        let n = parse_u64(w).filter(|&n| n <= max).ok_or_else(|| {
            Diagnostic::new(span, format!("expected {what} (0..{max}), found '{w}'"))
        })?;
        let n =
            T::try_from(n).map_err(|_| Diagnostic::new(span, format!("{what} out of range")))?;
        Ok((n, span))
    }

    /// Which kind of line this is; consumes a leading `ipfw [-q]` of a
    /// table line.
    fn line_kind(&mut self) -> LineKind {
        let skip_ipfw = usize::from(self.peek_word() == Some("ipfw"));
        let flags = (skip_ipfw..self.toks.len())
            .take_while(|&k| self.peek_word_at(k).is_some_and(|w| w.starts_with('-')))
            .count();
        let first = self.peek_word_at(skip_ipfw + flags);
        if first == Some("table") {
            self.pos += skip_ipfw + flags + 1;
            return LineKind::Table;
        }
        match self.peek_word() {
            Some("sysctl") => LineKind::Setting,
            Some(w) if w.starts_with(SYSCTL_PREFIX) => LineKind::Setting,
            _ => LineKind::Rule,
        }
    }

    /// After `table`: `NAME add PREFIX [VALUE]`.
    fn table_entry(&mut self) -> PResult<TableEntry> {
        let (table, span) = self.word("a table name")?;
        if !is_name(table) {
            return Err(Diagnostic::new(span, format!("bad table name '{table}'")));
        }
        self.expect_word("add")?;
        let (w, aspan) = self.word("a prefix (ADDR or ADDR/LEN)")?;
        let (addr, len) = match parse_addr(w) {
            Some(Addr::Prefix(a, l)) => (a, l),
            _ => {
                return Err(Diagnostic::new(
                    aspan,
                    format!("expected a prefix (ADDR or ADDR/LEN), found '{w}'"),
                ))
            }
        };
        let value = if self.at_end() {
            0
        } else {
            self.number::<u32>("a table value", u64::from(u32::MAX))?.0
        };
        self.end_of_line()?;
        Ok(TableEntry {
            table: table.to_owned(),
            addr,
            len,
            value,
            span: aspan,
        })
    }

    /// `[sysctl] net.inet.ip.fw.NAME=VALUE` (spaces around `=` allowed).
    fn setting(&mut self) -> PResult<Setting> {
        self.eat_word("sysctl");
        let (w, span) = self.word("a setting (net.inet.ip.fw.NAME=VALUE)")?;
        let (key, mut value) = match w.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (w, None),
        };
        let name = key.strip_prefix(SYSCTL_PREFIX).unwrap_or(key);
        if !STATE_SETTINGS.iter().any(|(n, _)| *n == name) {
            let known: Vec<_> = STATE_SETTINGS.iter().map(|(n, _)| *n).collect();
            return Err(Diagnostic::new(
                span,
                format!("unknown setting '{key}' (known: {})", known.join(", ")),
            ));
        }
        let mut vspan = span;
        if value.is_none() || value == Some("") {
            if value.is_none() {
                let tok = self.next("'='")?;
                if tok.text() != "=" {
                    return Err(Diagnostic::new(tok.span, "expected '='"));
                }
            }
            let (v, s) = self.word("a value")?;
            value = Some(v);
            vspan = s;
        }
        let v = value.unwrap_or_default();
        let value = parse_u64(v)
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| Diagnostic::new(vspan, format!("expected a number, found '{v}'")))?;
        if name == "dyn_max" && value == 0 {
            return Err(Diagnostic::new(vspan, "dyn_max must be at least 1"));
        }
        self.end_of_line()?;
        Ok(Setting {
            name: name.to_owned(),
            value,
            span,
        })
    }

    fn end_of_line(&self) -> PResult<()> {
        match self.peek() {
            Some(tok) => Err(Diagnostic::new(
                tok.span,
                format!("unexpected '{}'", tok.text()),
            )),
            None => Ok(()),
        }
    }

    fn rule(&mut self, last_number: u16) -> PResult<Rule> {
        let start = self.peek().map(|t| t.span).unwrap_or(self.eol);
        if self.eat_word("ipfw") {
            while self.peek_word().is_some_and(|w| w.starts_with('-')) {
                self.pos += 1;
            }
        }
        self.eat_word("add");
        let number = if self
            .peek_word()
            .is_some_and(|w| w.bytes().all(|b| b.is_ascii_digit()))
        {
            let (n, span) = self.number::<u16>("rule number", u64::from(MAX_RULE_NUMBER))?;
            if n == 0 {
                return Err(Diagnostic::new(span, "rule number must be 1..65534"));
            }
            n
        } else {
            last_number
                .checked_add(AUTOINC_STEP)
                .filter(|&n| n <= MAX_RULE_NUMBER)
                .ok_or_else(|| {
                    Diagnostic::new(
                        start,
                        "automatic rule number would pass 65534; number this rule",
                    )
                })?
        };
        let action = self.action(number)?;
        let log = self.log()?;
        let body = if self.at_end() && matches!(action, Action::CheckState | Action::Return) {
            Body::match_all()
        } else {
            self.body()?
        };
        if let Some(tok) = self.peek() {
            return Err(Diagnostic::new(
                tok.span,
                format!("unexpected '{}' after the rule's options", tok.text()),
            ));
        }
        Ok(Rule {
            number,
            action,
            log,
            body,
            comment: None,
            span: start,
        })
    }

    fn action(&mut self, number: u16) -> PResult<Action> {
        let (w, span) = self.word("an action (allow, deny, count, skipto, …)")?;
        let action = match w {
            "allow" | "accept" | "pass" | "permit" => Action::Allow,
            "deny" | "drop" => Action::Deny,
            "reject" => Action::Reject,
            "reset" => Action::Reset,
            "count" => Action::Count,
            "return" => Action::Return,
            "check-state" => Action::CheckState,
            "unreach" => {
                let (code, span) = self.word("an unreach code")?;
                Action::Unreach(unreach_code(code).ok_or_else(|| {
                    Diagnostic::new(span, format!("unknown unreach code '{code}'"))
                })?)
            }
            "skipto" if self.eat_word("tablearg") => Action::SkiptoTablearg,
            "skipto" | "call" => {
                let (target, tspan) = self.number::<u16>("a rule number", 65535)?;
                if target <= number {
                    return Err(Diagnostic::new(
                        tspan,
                        format!("{w} {target} must jump forward, past this rule's number {number}"),
                    ));
                }
                if w == "skipto" {
                    Action::Skipto(target)
                } else {
                    Action::Call(target)
                }
            }
            _ => {
                return Err(Diagnostic::new(span, format!("unknown action '{w}'")));
            }
        };
        Ok(action)
    }

    fn log(&mut self) -> PResult<Option<Log>> {
        if !self.eat_word("log") {
            return Ok(None);
        }
        let amount = if self.eat_word("logamount") {
            Some(self.number::<u32>("a log amount", u64::from(u32::MAX))?.0)
        } else {
            None
        };
        Ok(Some(Log { amount }))
    }

    fn body(&mut self) -> PResult<Body> {
        let proto = self.protos()?;
        self.expect_word("from")?;
        let src = self.addr_spec()?;
        let src_ports = if self.at_end() || self.peek_word() == Some("to") {
            None
        } else {
            Some(self.port_spec()?)
        };
        self.expect_word("to")?;
        let dst = self.addr_spec()?;
        let dst_ports = if self.at_end() || self.option_follows() {
            None
        } else {
            Some(self.port_spec()?)
        };
        let mut options = Vec::new();
        while !self.at_end() {
            options.push(self.option()?);
        }
        Ok(Body {
            proto,
            src,
            src_ports,
            dst,
            dst_ports,
            options,
        })
    }

    fn option_follows(&self) -> bool {
        let is_opt = |w: Option<&str>| w.is_some_and(|w| OPTION_WORDS.contains(&w));
        match self.peek_word() {
            Some("not") => is_opt(self.peek_word_at(1)),
            w => is_opt(w),
        }
    }

    fn protos(&mut self) -> PResult<Vec<Proto>> {
        if self.eat(Tok::LBrace) {
            let mut protos = vec![self.proto()?];
            while self.eat_word("or") {
                protos.push(self.proto()?);
            }
            self.close_brace()?;
            Ok(protos)
        } else {
            Ok(vec![self.proto()?])
        }
    }

    fn close_brace(&mut self) -> PResult<()> {
        let tok = self.next("'}'")?;
        if tok.tok == Tok::RBrace {
            Ok(())
        } else {
            Err(Diagnostic::new(
                tok.span,
                format!("expected 'or' or '}}', found '{}'", tok.text()),
            ))
        }
    }

    fn proto(&mut self) -> PResult<Proto> {
        let (w, span) = self.word("a protocol (ip, tcp, udp, icmp, a name or a number)")?;
        Ok(match w {
            "ip" | "all" => Proto::Any,
            "ip4" | "ipv4" => Proto::Ip4,
            "ip6" | "ipv6" => Proto::Ip6,
            _ if w.bytes().all(|b| b.is_ascii_digit()) => Proto::Number(
                parse_u64(w)
                    .and_then(|n| u8::try_from(n).ok())
                    .ok_or_else(|| {
                        Diagnostic::new(span, format!("protocol number {w} is over 255"))
                    })?,
            ),
            _ if is_name(w) && w != "from" => Proto::Name(w.to_owned(), span),
            _ => {
                return Err(Diagnostic::new(
                    span,
                    format!("expected a protocol, found '{w}'"),
                ))
            }
        })
    }

    fn addr_spec(&mut self) -> PResult<AddrSpec> {
        let not = self.eat_word("not");
        if self.eat(Tok::LBrace) {
            let mut items = vec![self.addr()?];
            while self.eat_word("or") {
                items.push(self.addr()?);
            }
            self.close_brace()?;
            return Ok(AddrSpec {
                not,
                items,
                or_block: true,
            });
        }
        let mut items = vec![self.addr()?];
        while self.eat(Tok::Comma) {
            items.push(self.addr()?);
        }
        Ok(AddrSpec {
            not,
            items,
            or_block: false,
        })
    }

    fn addr(&mut self) -> PResult<Addr> {
        let (w, span) = self.word("an address (any, me, ADDR[/LEN], ADDR:MASK, table(NAME))")?;
        match w {
            "any" => return Ok(Addr::Any),
            "me" => return Ok(Addr::Me),
            "me6" => return Ok(Addr::Me6),
            _ => {}
        }
        if let Some(inner) = w.strip_prefix("table(").and_then(|r| r.strip_suffix(')')) {
            let (name, value) = match inner.split_once(',') {
                Some((n, v)) => (n, Some(v)),
                None => (inner, None),
            };
            if !is_name(name) {
                return Err(Diagnostic::new(span, format!("bad table name '{name}'")));
            }
            let value = match value {
                Some(v) => Some(
                    parse_u64(v)
                        .and_then(|n| u32::try_from(n).ok())
                        .ok_or_else(|| Diagnostic::new(span, format!("bad table value '{v}'")))?,
                ),
                None => None,
            };
            return Ok(Addr::Table(name.to_owned(), value, span));
        }
        parse_addr(w).ok_or_else(|| {
            Diagnostic::new(
                span,
                format!("expected an address (any, me, ADDR[/LEN], ADDR:MASK, table(NAME)), found '{w}'"),
            )
        })
    }

    fn port_spec(&mut self) -> PResult<PortSpec> {
        let not = self.eat_word("not");
        let mut items = vec![self.port_range()?];
        while self.eat(Tok::Comma) {
            items.push(self.port_range()?);
        }
        Ok(PortSpec { not, items })
    }

    /// `N`, `N-M`, `NAME`, `NAME-NAME`; a `-` inside a service name is
    /// written `\-` as in ipfw (`ftp\-data`).
    fn port_range(&mut self) -> PResult<PortRange> {
        let (w, span) = self.word("a port, range or service name")?;
        let split = find_unescaped_dash(w);
        let (lo_text, hi_text) = match split {
            Some(i) => (&w[..i], Some(&w[i + 1..])),
            None => (w, None),
        };
        let lo_span = Span {
            len: lo_text.chars().count() as u32,
            ..span
        };
        let lo = port(lo_text, lo_span)?;
        let hi = match hi_text {
            Some(h) => {
                let hi_span = Span {
                    col: span.col + lo_span.len + 1,
                    len: h.chars().count() as u32,
                    ..span
                };
                Some(port(h, hi_span)?)
            }
            None => None,
        };
        if let (Port::Number(a), Some(Port::Number(b))) = (&lo, &hi) {
            if a > b {
                return Err(Diagnostic::new(
                    span,
                    format!("port range {a}-{b} is backwards"),
                ));
            }
        }
        Ok(PortRange { lo, hi })
    }

    fn option(&mut self) -> PResult<OptionItem> {
        let not = self.eat_word("not");
        let (w, span) = self.word("an option")?;
        let opt = match w {
            "in" => Opt::In,
            "out" => Opt::Out,
            "via" | "recv" | "xmit" => {
                let (name, nspan) = self.word("an interface name")?;
                if !is_ifname(name) {
                    return Err(Diagnostic::new(
                        nspan,
                        format!("bad interface name '{name}'"),
                    ));
                }
                let name = name.to_owned();
                match w {
                    "via" => Opt::Via(name),
                    "recv" => Opt::Recv(name),
                    _ => Opt::Xmit(name),
                }
            }
            "established" => Opt::Established,
            "setup" => Opt::Setup,
            "frag" => Opt::Frag,
            "keep-state" => Opt::KeepState,
            "record-state" => Opt::RecordState,
            "limit" => self.limit()?,
            "icmp6types" => Opt::Icmp6Types(self.icmp6_types()?),
            "ext6hdr" => Opt::Ext6Hdr(self.name_bits("extension header", EXT6_NAMES)?),
            "lookup" => {
                let (k, kspan) = self.word("src-ip, dst-ip, src-port or dst-port")?;
                let key = LookupKey::NAMES
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|&(_, key)| key)
                    .ok_or_else(|| {
                        Diagnostic::new(
                            kspan,
                            format!("lookup key must be src-ip, dst-ip, src-port or dst-port, found '{k}'"),
                        )
                    })?;
                let (name, nspan) = self.word("a table name")?;
                if !is_name(name) {
                    return Err(Diagnostic::new(nspan, format!("bad table name '{name}'")));
                }
                Opt::Lookup(key, name.to_owned())
            }
            "tcpflags" => Opt::TcpFlags(self.flag_list("TCP flag", TCP_FLAG_NAMES)?),
            "ipoptions" => Opt::IpOptions(self.flag_list("IP option", IP_OPTION_NAMES)?),
            "iptos" => Opt::IpTos(self.flag_list("TOS flag", IP_TOS_NAMES)?),
            "icmptypes" => Opt::IcmpTypes(self.icmp_types()?),
            "iplen" => Opt::IpLen(self.ranges("an IP length", 65535)?),
            "ipttl" => Opt::IpTtl(self.ranges("a TTL", 255)?),
            "ipversion" => {
                let (v, vspan) = self.number::<u8>("an IP version", 6)?;
                if v != 4 && v != 6 {
                    return Err(Diagnostic::new(vspan, "ipversion must be 4 or 6"));
                }
                Opt::IpVersion(v)
            }
            _ => {
                let hint = if w.bytes().all(|b| b.is_ascii_digit()) {
                    " (ports go right after the address)"
                } else {
                    ""
                };
                return Err(Diagnostic::new(span, format!("unknown option '{w}'{hint}")));
            }
        };
        Ok(OptionItem { not, opt, span })
    }

    /// A comma list of names, each optionally prefixed with `!`.
    fn flag_list(&mut self, what: &str, names: &[(&str, u8)]) -> PResult<FlagSpec> {
        let mut spec = FlagSpec::default();
        loop {
            let (w, span) = self.word(&format!("a {what}"))?;
            let (negated, name) = match w.strip_prefix('!') {
                Some(rest) => (true, rest),
                None => (false, w),
            };
            let bit = names
                .iter()
                .find(|(n, _)| *n == name)
                .map(|&(_, b)| b)
                .ok_or_else(|| {
                    let known: Vec<_> = names.iter().map(|(n, _)| *n).collect();
                    Diagnostic::new(
                        span,
                        format!("unknown {what} '{name}' (known: {})", known.join(", ")),
                    )
                })?;
            if negated {
                spec.clear |= bit;
            } else {
                spec.set |= bit;
            }
            if !self.eat(Tok::Comma) {
                return Ok(spec);
            }
        }
    }

    /// `limit {src-addr|src-port|dst-addr|dst-port}... N`.
    fn limit(&mut self) -> PResult<Opt> {
        let mut mask = 0u8;
        while let Some(bit) = self
            .peek_word()
            .and_then(|w| LIMIT_NAMES.iter().find(|(n, _)| *n == w))
            .map(|&(_, b)| b)
        {
            mask |= bit;
            self.pos += 1;
        }
        if mask == 0 {
            let span = self.peek().map_or(self.eol, |t| t.span);
            return Err(Diagnostic::new(
                span,
                "limit needs src-addr, src-port, dst-addr or dst-port",
            ));
        }
        let (count, span) = self.number::<u32>("a state limit", u64::from(u32::MAX))?;
        if count == 0 {
            return Err(Diagnostic::new(span, "limit must be at least 1"));
        }
        Ok(Opt::Limit { mask, count })
    }

    /// A comma list of names from `names`, OR-ed.
    fn name_bits(&mut self, what: &str, names: &[(&str, u8)]) -> PResult<u8> {
        let mut bits = 0;
        loop {
            let (w, span) = self.word(&format!("an {what}"))?;
            bits |= names
                .iter()
                .find(|(n, _)| *n == w)
                .map(|&(_, b)| b)
                .ok_or_else(|| {
                    let known: Vec<_> = names.iter().map(|(n, _)| *n).collect();
                    Diagnostic::new(
                        span,
                        format!("unknown {what} '{w}' (known: {})", known.join(", ")),
                    )
                })?;
            if !self.eat(Tok::Comma) {
                return Ok(bits);
            }
        }
    }

    fn icmp6_types(&mut self) -> PResult<[u64; 4]> {
        let mut bits = [0u64; 4];
        loop {
            let (w, span) = self.word("an ICMPv6 type")?;
            let t = parse_u64(w).filter(|&t| t <= 255).ok_or_else(|| {
                Diagnostic::new(span, format!("ICMPv6 type '{w}' is not a number 0..255"))
            })? as usize;
            bits[t / 64] |= 1 << (t % 64);
            if !self.eat(Tok::Comma) {
                return Ok(bits);
            }
        }
    }

    fn icmp_types(&mut self) -> PResult<u32> {
        let mut bits = 0u32;
        loop {
            let (w, span) = self.word("an ICMP type")?;
            let t = ICMP_TYPE_NAMES
                .iter()
                .find(|(n, _)| *n == w)
                .map(|&(_, t)| u64::from(t))
                .or_else(|| parse_u64(w))
                .filter(|&t| t <= 31)
                .ok_or_else(|| {
                    Diagnostic::new(
                        span,
                        format!("ICMP type '{w}' is not a number 0..31 or a known name"),
                    )
                })?;
            bits |= 1 << t;
            if !self.eat(Tok::Comma) {
                return Ok(bits);
            }
        }
    }

    fn ranges(&mut self, what: &str, max: u64) -> PResult<Ranges> {
        let mut out = Vec::new();
        loop {
            let (w, span) = self.word(what)?;
            let bad = || {
                Diagnostic::new(
                    span,
                    format!("expected {what} or range (0..{max}), found '{w}'"),
                )
            };
            let (lo, hi) = match w.split_once('-') {
                Some((a, b)) => (parse_u64(a).ok_or_else(bad)?, parse_u64(b).ok_or_else(bad)?),
                None => {
                    let n = parse_u64(w).ok_or_else(bad)?;
                    (n, n)
                }
            };
            if lo > hi || hi > max {
                return Err(bad());
            }
            out.push((lo as u16, hi as u16));
            if !self.eat(Tok::Comma) {
                return Ok(out);
            }
        }
    }
}

pub const TCP_FLAG_NAMES: &[(&str, u8)] = &[
    ("fin", 0x01),
    ("syn", 0x02),
    ("rst", 0x04),
    ("psh", 0x08),
    ("ack", 0x10),
    ("urg", 0x20),
    ("ece", 0x40),
    ("cwr", 0x80),
];

pub const IP_OPTION_NAMES: &[(&str, u8)] = &[("ssrr", 1), ("lsrr", 2), ("rr", 4), ("ts", 8)];

/// RFC 791/1349 TOS bits, as ipfw names them; `congestion` is ECN CE.
pub const IP_TOS_NAMES: &[(&str, u8)] = &[
    ("lowdelay", 0x10),
    ("throughput", 0x08),
    ("reliability", 0x04),
    ("mincost", 0x02),
    ("congestion", 0x01),
];

pub const ICMP_TYPE_NAMES: &[(&str, u8)] = &[
    ("echo-reply", 0),
    ("unreach", 3),
    ("source-quench", 4),
    ("redirect", 5),
    ("echo", 8),
    ("router-advert", 9),
    ("router-solicit", 10),
    ("time-exceeded", 11),
    ("param-problem", 12),
    ("timestamp", 13),
    ("timestamp-reply", 14),
];

/// ipfw's unreach code names (ipfw(8), `unreach code`).
pub const UNREACH_CODES: &[(&str, u8)] = &[
    ("net", 0),
    ("host", 1),
    ("protocol", 2),
    ("port", 3),
    ("needfrag", 4),
    ("srcfail", 5),
    ("net-unknown", 6),
    ("host-unknown", 7),
    ("isolated", 8),
    ("net-prohib", 9),
    ("host-prohib", 10),
    ("tosnet", 11),
    ("toshost", 12),
    ("filter-prohib", 13),
    ("host-precedence", 14),
    ("precedence-cutoff", 15),
];

fn unreach_code(w: &str) -> Option<u8> {
    UNREACH_CODES
        .iter()
        .find(|(n, _)| *n == w)
        .map(|&(_, c)| c)
        .or_else(|| parse_u64(w).and_then(|n| u8::try_from(n).ok()))
}

fn port(text: &str, span: Span) -> PResult<Port> {
    if text.is_empty() {
        return Err(Diagnostic::new(span, "empty port"));
    }
    if text.bytes().all(|b| b.is_ascii_digit()) {
        return parse_u64(text)
            .and_then(|n| u16::try_from(n).ok())
            .map(Port::Number)
            .ok_or_else(|| Diagnostic::new(span, format!("port {text} is out of range")));
    }
    let name = text.replace("\\-", "-");
    if is_name(&name) {
        Ok(Port::Name(name, span))
    } else {
        Err(Diagnostic::new(
            span,
            format!("expected a port or service name, found '{text}'"),
        ))
    }
}

fn find_unescaped_dash(w: &str) -> Option<usize> {
    let bytes = w.as_bytes();
    (1..bytes.len()).find(|&i| bytes[i] == b'-' && bytes[i - 1] != b'\\')
}

fn parse_u64(w: &str) -> Option<u64> {
    if w.is_empty() || w.len() > 19 || !w.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    w.parse().ok()
}

fn is_name(w: &str) -> bool {
    !w.is_empty()
        && w.len() <= 64
        && w.bytes().next().is_some_and(|b| b.is_ascii_alphabetic())
        && w.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

fn is_ifname(w: &str) -> bool {
    !w.is_empty()
        && w.len() <= 32
        && w.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'*' | b'@'))
}

/// `a.b.c.d`, `a.b.c.d/len`, `a.b.c.d:mask`, `v6addr`, `v6addr/len`.
pub fn parse_addr(w: &str) -> Option<Addr> {
    if let Some((a, m)) = w.split_once(':').filter(|(a, _)| a.contains('.')) {
        let a: Ipv4Addr = a.parse().ok()?;
        let m: Ipv4Addr = m.parse().ok()?;
        return Some(Addr::Masked(IpAddr::V4(a), IpAddr::V4(m)));
    }
    let (a, len) = match w.split_once('/') {
        Some((a, l)) => (a, Some(l)),
        None => (w, None),
    };
    let addr: IpAddr = if a.contains(':') {
        IpAddr::V6(a.parse::<Ipv6Addr>().ok()?)
    } else {
        IpAddr::V4(a.parse::<Ipv4Addr>().ok()?)
    };
    let max = if addr.is_ipv4() { 32 } else { 128 };
    let len = match len {
        Some(l) => parse_u64(l).filter(|&l| l <= max)? as u8,
        None => max as u8,
    };
    Some(Addr::Prefix(addr, len))
}
