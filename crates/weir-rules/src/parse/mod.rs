//! Parses ipfw rule files into a [`Ruleset`].
//!
//! One command per line, as `ipfw` reads a ruleset script:
//! - rules: `[ipfw [-q]] [add] [NUMBER] [set S] [prob P] ACTION [log …]
//!   [altq Q] [tag|untag N] BODY` (`mod.rs`, options in `options.rs`);
//! - table commands, tunables and housekeeping lines (`script.rs`):
//!   `table NAME add PREFIX [VALUE]`, `net.inet.ip.fw.one_pass=0`,
//!   `ipfw -q -f flush`, `ipfw set disable 3`, `ipfw pipe 1 config …`.
//!
//! Every line is parsed even after an error, so a file's errors come out
//! together; any error means no ruleset at all. Service names are checked
//! against [`Names`] here, so that a word after the destination is a port
//! only if it really is one.

mod options;
mod rule_list;
mod script;

use crate::ast::*;
use crate::diag::{Diagnostic, Errors};
use crate::lex::{lex_line, Tok, Token};
use crate::names::Names;
use crate::source::Source;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

pub use options::{is_option_keyword, OPTION_KEYWORDS, REFUSED_OPTIONS};

/// Rule numbers run 1..=65534; 65535 is the implicit default rule.
pub const MAX_RULE_NUMBER: u16 = 65534;
/// ipfw's `net.inet.ip.fw.autoinc_step` default.
pub const AUTOINC_STEP: u16 = 100;

type PResult<T> = Result<T, Diagnostic>;

/// Parses a whole rule file; service names from the built-in table.
pub fn parse(source: &str) -> Result<Ruleset, Vec<Diagnostic>> {
    parse_with(source, &Names::default())
}

/// Parses a whole rule file, knowing these service names.
pub fn parse_with(source: &str, names: &Names) -> Result<Ruleset, Vec<Diagnostic>> {
    parse_source(&Source::new(source.as_bytes()), names)
}

/// Parses a rule file read as bytes ([`Source`]): a non-UTF-8 byte in a
/// rule is an error at its place, one in a comment is not.
pub fn parse_source(source: &Source, names: &Names) -> Result<Ruleset, Vec<Diagnostic>> {
    let mut script = script::Script::new(names);
    let mut errors = Errors::default();
    for (line_no, text) in source.lines() {
        let line = lex_line(text, line_no);
        let Some(last) = line.tokens.last() else {
            if let Some(c) = line.comment.filter(|c| !c.is_empty()) {
                // `// text` alone: ipfw's comment action, a count rule.
                let p = Parser::new(&line.tokens, line_no, text, names);
                if let Err(e) = script.comment_rule(c, p.eol) {
                    errors.push(e);
                }
            }
            continue;
        };
        if let Err(e) = source.check_code(line_no, last.span) {
            errors.push(e);
            continue;
        }
        let mut p = Parser::new(&line.tokens, line_no, text, names);
        p.commented = line.comment.is_some();
        if let Err(e) = script.line(&mut p, line.comment) {
            errors.push(e);
        }
    }
    errors.finish(script.finish())
}

/// The number ipfw gives a rule added without one: `step` past the
/// highest rule so far, or that same number once the next step would
/// reach the default rule (the kernel's `commit_rules`).
pub(crate) fn auto_number(highest: u16, step: u16) -> u16 {
    if u32::from(highest) + u32::from(step) < 65535 {
        highest + step
    } else {
        highest.max(1)
    }
}

/// Parses a single rule (no number needed; numbered 100 if none given).
pub fn parse_rule(text: &str) -> Result<Rule, Diagnostic> {
    let names = Names::default();
    let line = lex_line(text, 1);
    let mut p = Parser::new(&line.tokens, 1, text, &names);
    p.commented = line.comment.is_some();
    p.skip_ipfw_prefix();
    p.eat_word("add");
    let mut rule = p.rule(0, AUTOINC_STEP)?;
    rule.comment = line.comment.filter(|c| !c.is_empty()).map(str::to_owned);
    Ok(rule)
}

pub(crate) struct Parser<'t, 'a, 'n> {
    toks: &'t [Token<'a>],
    pos: usize,
    /// Where "end of rule" errors point: just past the last character.
    eol: Span,
    names: &'n Names,
    /// A `// comment` ends the line: ipfw's comment action, so a rule may
    /// stop before its action (`100 // text` counts everything).
    commented: bool,
}

impl<'t, 'a, 'n> Parser<'t, 'a, 'n> {
    fn new(toks: &'t [Token<'a>], line: u32, text: &str, names: &'n Names) -> Self {
        let col = text.trim_end().chars().count() as u32 + 1;
        Parser {
            toks,
            pos: 0,
            eol: Span { line, col, len: 1 },
            names,
            commented: false,
        }
    }

    fn peek(&self) -> Option<&Token<'a>> {
        self.toks.get(self.pos)
    }

    fn peek_tok(&self) -> Option<Tok<'a>> {
        self.peek().map(|t| t.tok)
    }

    fn peek_word(&self) -> Option<&'a str> {
        self.peek_word_at(0)
    }

    fn peek_word_at(&self, ahead: usize) -> Option<&'a str> {
        match self.toks.get(self.pos + ahead)?.tok {
            Tok::Word(w) => Some(w),
            _ => None,
        }
    }

    /// Where the next token is, or the end of the line.
    fn here(&self) -> Span {
        self.peek().map_or(self.eol, |t| t.span)
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
        if self.peek_tok() == Some(tok) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// `{` or `(`: the start of an or-block.
    fn eat_open(&mut self) -> Option<Tok<'a>> {
        match self.peek_tok() {
            Some(t @ (Tok::LBrace | Tok::LParen)) => {
                self.pos += 1;
                Some(t)
            }
            _ => None,
        }
    }

    /// `or` or `|` between or-block members.
    fn eat_or(&mut self) -> bool {
        self.eat_word("or") || self.eat_word("|")
    }

    /// `not` or a lone `!`.
    fn eat_not(&mut self) -> bool {
        self.eat_word("not") || self.eat_word("!")
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
        let n = parse_number(w).filter(|&n| n <= max).ok_or_else(|| {
            Diagnostic::new(span, format!("expected {what} (0..{max}), found '{w}'"))
        })?;
        let n =
            T::try_from(n).map_err(|_| Diagnostic::new(span, format!("{what} out of range")))?;
        Ok((n, span))
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

    /// Skips `ipfw` (or `/sbin/ipfw`) and its flags; returns whether `-q`
    /// was among them.
    fn skip_ipfw_prefix(&mut self) -> bool {
        let is_ipfw = self
            .peek_word()
            .is_some_and(|w| w == "ipfw" || w.ends_with("/ipfw"));
        if !is_ipfw {
            return false;
        }
        self.pos += 1;
        let mut quiet = false;
        while let Some(w) = self
            .peek_word()
            .filter(|w| w.starts_with('-') && w.len() > 1)
        {
            quiet |= w.contains('q');
            self.pos += 1;
        }
        quiet
    }

    /// `[NUMBER] [set S] [prob P] ACTION [log …] [altq Q] [tag|untag N]
    /// BODY`, after any `add`. Unnumbered rules get [`auto_number`].
    fn rule(&mut self, last_number: u16, step: u16) -> PResult<Rule> {
        let start = self.here();
        let number = if self
            .peek_word()
            .is_some_and(|w| w.bytes().all(|b| b.is_ascii_digit()))
        {
            let (w, span) = self.word("rule number")?;
            parse_u64(w)
                .filter(|n| (1..=u64::from(MAX_RULE_NUMBER)).contains(n))
                .map(|n| n as u16)
                .ok_or_else(|| {
                    Diagnostic::new(
                        span,
                        format!("rule number must be 1..{MAX_RULE_NUMBER}, found '{w}'"),
                    )
                })?
        } else {
            auto_number(last_number, step)
        };
        let mut head = RuleHead::default();
        if self.eat_word("set") {
            head.set = self
                .number::<u8>("a set number", u64::from(RESERVED_SET))?
                .0;
        }
        if self.eat_word("prob") {
            head.prob = self.prob()?;
        }
        if self.at_end() && self.commented {
            // `[N] // text`: ipfw's comment action, a rule that counts.
            return Ok(Rule {
                number,
                head,
                action: Action::Count,
                log: None,
                body: Body::match_all(),
                comment: None,
                span: start,
            });
        }
        let action = self.action(number)?;
        let log = self.modifiers(&mut head)?;
        let body = if self.at_end() && action.bodyless() {
            Body::match_all()
        } else if matches!(action, Action::CheckState(_)) {
            return Err(Diagnostic::new(
                self.here(),
                "check-state takes only a state name (:NAME) and a comment",
            ));
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
            head,
            action,
            log,
            body,
            comment: None,
            span: start,
        })
    }

    /// `prob P`, 0 < P <= 1 (1 is no prob at all).
    fn prob(&mut self) -> PResult<Option<Prob>> {
        let (w, span) = self.word("a match probability")?;
        let p: f64 = w
            .parse()
            .ok()
            .filter(|p: &f64| {
                *p > 0.0 && *p <= 1.0 && w.bytes().all(|b| b.is_ascii_digit() || b == b'.')
            })
            .ok_or_else(|| {
                Diagnostic::new(
                    span,
                    format!("illegal match probability '{w}' (0 < P <= 1)"),
                )
            })?;
        if p >= 1.0 {
            return Ok(None);
        }
        let scaled = (p * 4_294_967_296.0).round();
        if scaled < 1.0 {
            return Err(Diagnostic::new(
                span,
                format!("match probability '{w}' is too small"),
            ));
        }
        Ok(Some(Prob(scaled.min(f64::from(u32::MAX)) as u32)))
    }

    fn action(&mut self, number: u16) -> PResult<Action> {
        let (w, span) = self.word("an action (allow, deny, count, skipto, …)")?;
        let action = match w {
            "allow" | "accept" | "pass" | "permit" => Action::Allow,
            "deny" | "drop" => Action::Deny,
            "reject" => Action::Reject,
            "reset" => Action::Reset,
            "reset6" => Action::Reset6,
            "abort" => Action::Abort,
            "abort6" => Action::Abort6,
            "count" => Action::Count,
            "return" => Action::Return,
            "reass" => Action::Reass,
            "check-state" => Action::CheckState(self.state_name(true)?),
            "unreach" => {
                let (code, span) = self.word("an unreach code")?;
                Action::Unreach(code_of(UNREACH_CODES, code).ok_or_else(|| {
                    Diagnostic::new(span, format!("unknown unreach code '{code}'"))
                })?)
            }
            "unreach6" => {
                let (code, span) = self.word("an unreach6 code")?;
                Action::Unreach6(code_of(UNREACH6_CODES, code).ok_or_else(|| {
                    Diagnostic::new(span, format!("unknown unreach6 code '{code}'"))
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
            "pipe" => Action::Pipe(self.arg(w, 65534)?),
            "queue" => Action::Queue(self.arg(w, 65534)?),
            "netgraph" => Action::Netgraph(self.arg(w, 65534)?),
            "ngtee" => Action::Ngtee(self.arg(w, 65534)?),
            "divert" => Action::Divert(self.divert_port(w)?),
            "tee" => Action::Tee(self.divert_port(w)?),
            "nat" if self.eat_word("global") => Action::Nat(NatArg::Global),
            "nat" => Action::Nat(match self.arg(w, 65534)? {
                Arg::Number(n) => NatArg::Number(n),
                Arg::Tablearg => NatArg::Tablearg,
            }),
            "fwd" | "forward" => Action::Fwd(self.fwd_target()?),
            "setfib" => Action::SetFib(self.arg(w, 0x7fff)?),
            "setdscp" => Action::SetDscp(self.dscp_arg()?),
            "tcp-setmss" => {
                let (mss, mspan) = self.number::<u16>("an MSS", 65535)?;
                if mss == 0 {
                    return Err(Diagnostic::new(
                        mspan,
                        "tcp-setmss needs an MSS of 1..65535",
                    ));
                }
                Action::TcpSetMss(mss)
            }
            "eaction" | "nat64lsn" | "nat64stl" | "nat64clat" | "nptv6" => {
                return Err(Diagnostic::new(
                    span,
                    format!(
                        "'{w}' hands the packet to an external action module, whose verdict a capture cannot decide"
                    ),
                ));
            }
            _ => {
                return Err(Diagnostic::new(span, format!("unknown action '{w}'")));
            }
        };
        Ok(action)
    }

    /// `N` (1..=max) or `tablearg`, after a hand-off action.
    fn arg(&mut self, action: &str, max: u64) -> PResult<Arg> {
        if self.eat_word("tablearg") {
            return Ok(Arg::Tablearg);
        }
        let (n, span) = self.number::<u32>(&format!("a number or tablearg after {action}"), max)?;
        if n == 0 && action != "setfib" {
            return Err(Diagnostic::new(span, format!("{action} needs 1..{max}")));
        }
        Ok(Arg::Number(n))
    }

    /// A divert port: a number, a `divert` service name, or `tablearg`.
    fn divert_port(&mut self, action: &str) -> PResult<DivertPort> {
        if self.eat_word("tablearg") {
            return Ok(DivertPort::Tablearg);
        }
        let (w, span) = self.word(&format!("a divert port after {action}"))?;
        if w.bytes().all(|b| b.is_ascii_digit()) {
            return match parse_u64(w).and_then(|n| u16::try_from(n).ok()) {
                Some(n) if n > 0 => Ok(DivertPort::Port(Port::Number(n))),
                _ => Err(Diagnostic::new(
                    span,
                    format!("illegal divert/tee port '{w}'"),
                )),
            };
        }
        if divert_service(w, self.names).is_some() {
            Ok(DivertPort::Port(Port::Name(w.to_owned(), span)))
        } else {
            Err(Diagnostic::new(
                span,
                format!("illegal divert/tee port '{w}'"),
            ))
        }
    }

    /// `ADDR`, `ADDR,PORT`, `ADDR:PORT` (IPv4), `[V6]:PORT`, `tablearg`.
    fn fwd_target(&mut self) -> PResult<FwdTarget> {
        let (w, span) = self.word("a forward address")?;
        let bad = || Diagnostic::new(span, format!("bad forward address '{w}'"));
        let (host, mut port) = if let Some(rest) = w.strip_prefix('[') {
            let (h, p) = rest.split_once(']').ok_or_else(bad)?;
            (h, p.strip_prefix(':').filter(|p| !p.is_empty()))
        } else if w.matches(':').count() == 1 {
            let (h, p) = w.split_once(':').ok_or_else(bad)?;
            (h, Some(p))
        } else {
            (w, None)
        };
        // `ADDR,PORT`: the comma splits it into two words.
        let mut pspan = span;
        if port.is_none() && self.eat(Tok::Comma) {
            let (p, s) = self.word("a forwarding port")?;
            port = Some(p);
            pspan = s;
        }
        let port = match port {
            Some(p) => Some(
                parse_u64(p)
                    .and_then(|n| u16::try_from(n).ok())
                    .or_else(|| self.names.service(p))
                    .ok_or_else(|| {
                        Diagnostic::new(pspan, format!("illegal forwarding port '{p}'"))
                    })?,
            ),
            None => None,
        };
        let addr = if host == "tablearg" {
            None
        } else {
            Some(host.parse::<IpAddr>().map_err(|_| bad())?)
        };
        Ok(FwdTarget { addr, port })
    }

    /// A DSCP code: a name (`af11`, `ef`, …), 0..63, or `tablearg`.
    fn dscp_arg(&mut self) -> PResult<Arg> {
        if self.eat_word("tablearg") {
            return Ok(Arg::Tablearg);
        }
        let (w, span) = self.word("a DSCP code")?;
        dscp_code(w)
            .map(|c| Arg::Number(u32::from(c)))
            .ok_or_else(|| Diagnostic::new(span, format!("unknown DSCP code '{w}'")))
    }

    /// `:NAME` after check-state / keep-state / limit; None for the
    /// default name. `any` only where `check` says so.
    fn state_name(&mut self, check: bool) -> PResult<StateName> {
        let Some(w) = self.peek_word().filter(|w| w.starts_with(':')) else {
            return Ok(None);
        };
        let span = self.here();
        self.pos += 1;
        let name = &w[1..];
        if !is_name(name) {
            return Err(Diagnostic::new(span, format!("invalid state name '{w}'")));
        }
        if name == "any" && !check {
            return Err(Diagnostic::new(span, ":any is for check-state only"));
        }
        Ok((name != "default").then(|| name.to_owned()))
    }

    /// `log [logamount N]`, `altq QUEUE`, `tag N`, `untag N`, in any order.
    fn modifiers(&mut self, head: &mut RuleHead) -> PResult<Option<Log>> {
        let mut log = None;
        loop {
            let span = self.here();
            match self.peek_word() {
                Some("log") if log.is_none() => {
                    self.pos += 1;
                    let amount = if self.eat_word("logamount") {
                        Some(self.number::<u32>("a log amount", u64::from(u32::MAX))?.0)
                    } else {
                        None
                    };
                    log = Some(Log { amount });
                }
                Some("altq") if head.altq.is_none() => {
                    self.pos += 1;
                    let (q, qspan) = self.word("an ALTQ queue name")?;
                    if !is_name(q) {
                        return Err(Diagnostic::new(qspan, format!("bad queue name '{q}'")));
                    }
                    head.altq = Some(q.to_owned());
                }
                Some(w @ ("tag" | "untag")) if head.tag.is_none() => {
                    self.pos += 1;
                    if self.peek_word() == Some("tablearg") {
                        return Err(Diagnostic::new(
                            self.here(),
                            format!(
                                "'{w} tablearg' is not supported in replay; give the tag number"
                            ),
                        ));
                    }
                    let (n, nspan) = self.number::<u16>("a tag (1..65534)", 65534)?;
                    if n == 0 {
                        return Err(Diagnostic::new(nspan, "tags are 1..65534"));
                    }
                    head.tag = Some(if w == "tag" {
                        TagOp::Tag(n)
                    } else {
                        TagOp::Untag(n)
                    });
                }
                Some(w @ ("log" | "altq" | "tag" | "untag")) => {
                    return Err(Diagnostic::new(span, format!("'{w}' given twice")));
                }
                _ => return Ok(log),
            }
        }
    }

    fn body(&mut self) -> PResult<Body> {
        if self.options_start_here(true) {
            // ipfw's "just options" form: `allow src-ip 10.0.0.1`.
            let mut body = Body::match_all();
            body.options = self.options()?;
            return Ok(body);
        }
        let proto = self.protos()?;
        self.expect_word("from")?;
        let src = self.addr_spec()?;
        let src_ports = match self.peek_word() {
            None | Some("to") => None,
            Some(w) if is_option_keyword(w) => {
                return Err(Diagnostic::new(
                    self.here(),
                    format!("expected 'to', found '{w}' (options go after the destination)"),
                ))
            }
            Some(_) => Some(self.port_spec(false)?),
        };
        self.expect_word("to")?;
        let dst = self.addr_spec()?;
        let dst_ports = if self.at_end() || self.options_start_here(false) {
            None
        } else {
            Some(self.port_spec(true)?)
        };
        let options = self.options()?;
        Ok(Body {
            proto,
            src,
            src_ports,
            dst,
            dst_ports,
            options,
        })
    }

    /// Whether the next tokens begin the options: an option keyword, maybe
    /// behind `not`/`!` or an or-block brace. Where a protocol may come
    /// (`at_proto`), `ip4`/`ip6` are the protocol, not the option.
    fn options_start_here(&self, at_proto: bool) -> bool {
        let mut k = 0;
        loop {
            match self.toks.get(self.pos + k).map(|t| t.tok) {
                Some(Tok::Word("not" | "!")) | Some(Tok::LBrace | Tok::LParen) => k += 1,
                Some(Tok::Word(w)) => {
                    let w = w.strip_prefix('!').unwrap_or(w);
                    return is_option_keyword(w) && !(at_proto && is_protocol_keyword(w));
                }
                _ => return false,
            }
        }
    }

    fn protos(&mut self) -> PResult<Vec<Proto>> {
        if let Some(open) = self.eat_open() {
            let mut protos = vec![self.proto()?];
            while self.eat_or() {
                protos.push(self.proto()?);
            }
            self.close(open)?;
            Ok(protos)
        } else {
            Ok(vec![self.proto()?])
        }
    }

    /// The `}` or `)` that closes an or-block opened by `open`.
    fn close(&mut self, open: Tok) -> PResult<()> {
        let want = if open == Tok::LParen {
            Tok::RParen
        } else {
            Tok::RBrace
        };
        let tok = self.next(if want == Tok::RParen { "')'" } else { "'}'" })?;
        if tok.tok == want {
            Ok(())
        } else {
            let close = if want == Tok::RParen { ")" } else { "}" };
            Err(Diagnostic::new(
                tok.span,
                format!("expected 'or' or '{close}', found '{}'", tok.text()),
            ))
        }
    }

    fn proto(&mut self) -> PResult<Proto> {
        let (w, span) = self.word("a protocol (ip, tcp, udp, icmp, a name or a number)")?;
        proto_of(w, span)
    }

    fn addr_spec(&mut self) -> PResult<AddrSpec> {
        let not = self.eat_not();
        if let Some(open) = self.eat_open() {
            let mut items = vec![self.or_block_addr()?];
            while self.eat_or() {
                items.push(self.or_block_addr()?);
            }
            self.close(open)?;
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
        if items.len() > 1 && items.iter().any(|a| matches!(a, Addr::Set { .. })) {
            return Err(Diagnostic::new(
                self.here(),
                "an address set cannot be in a list",
            ));
        }
        Ok(AddrSpec {
            not,
            items,
            or_block: false,
        })
    }

    /// A member of an address or-block, which may be negated on its own.
    fn or_block_addr(&mut self) -> PResult<Addr> {
        let not = self.eat_not();
        let addr = self.addr()?;
        Ok(if not { Addr::Not(Box::new(addr)) } else { addr })
    }

    fn addr(&mut self) -> PResult<Addr> {
        let tok = self.next("an address")?;
        let (w, span) = match tok.tok {
            Tok::Word(w) => (w, tok.span),
            _ => {
                return Err(Diagnostic::new(
                    tok.span,
                    format!(
                    "expected an address (any, me, ADDR[/LEN], ADDR:MASK, table(NAME)), found '{}'",
                    tok.text()
                ),
                ))
            }
        };
        match w {
            "any" => return Ok(Addr::Any),
            "me" => return Ok(Addr::Me),
            "me6" => return Ok(Addr::Me6),
            _ => {}
        }
        if let Some(inner) = w.strip_prefix("table(").and_then(|r| r.strip_suffix(')')) {
            let (name, value) = table_ref(inner, span)?;
            return Ok(Addr::Table(name, value, span));
        }
        // `a.b.c.d/24{5,10-20}`: a `{` right after the address opens a set.
        let adjacent = self
            .peek()
            .is_some_and(|t| t.tok == Tok::LBrace && t.span.col == span.col + span.len);
        if adjacent {
            return self.addr_set(w, span);
        }
        parse_addr(w).ok_or_else(|| {
            Diagnostic::new(
                span,
                format!("expected an address (any, me, ADDR[/LEN], ADDR:MASK, table(NAME)), found '{w}'"),
            )
        })
    }

    /// The `{…}` of an address set after its base `w` (no mask: /24).
    fn addr_set(&mut self, w: &str, span: Span) -> PResult<Addr> {
        let (a, len) = match w.split_once('/') {
            Some((a, l)) => (a, parse_u64(l)),
            None => (w, Some(24)),
        };
        let base: Ipv4Addr = a.parse().map_err(|_| {
            Diagnostic::new(
                span,
                format!("an address set needs an IPv4 base, found '{w}'"),
            )
        })?;
        let len = len.filter(|l| (24..=31).contains(l)).ok_or_else(|| {
            Diagnostic::new(span, format!("invalid address set mask in '{w}' (24..31)"))
        })? as u8;
        let mask = u32::MAX << (32 - u32::from(len));
        let base = Ipv4Addr::from(u32::from(base) & mask);
        let size = 1u32 << (32 - u32::from(len));
        let low = u32::from(base) & 0xff;
        self.pos += 1; // the `{`
        let mut members = [0u64; 4];
        loop {
            let (m, mspan) = self.word("a host number of the set")?;
            let (lo, hi) = match m.split_once('-') {
                Some((a, b)) => (parse_u64(a), parse_u64(b)),
                None => (parse_u64(m), parse_u64(m)),
            };
            let (Some(lo), Some(hi)) = (lo, hi) else {
                return Err(Diagnostic::new(mspan, format!("bad set member '{m}'")));
            };
            let range = u64::from(low)..u64::from(low + size);
            if lo > hi || !range.contains(&lo) || !range.contains(&hi) {
                return Err(Diagnostic::new(
                    mspan,
                    format!("set member '{m}' out of range [{}-{}]", low, low + size - 1),
                ));
            }
            for k in lo - u64::from(low)..=hi - u64::from(low) {
                members[(k / 64) as usize] |= 1 << (k % 64);
            }
            if self.eat(Tok::RBrace) {
                return Ok(Addr::Set { base, len, members });
            }
            if !self.eat(Tok::Comma) {
                return Err(Diagnostic::new(
                    self.here(),
                    "expected ',' or '}' in the address set",
                ));
            }
        }
    }

    /// `[not] N | N-M | NAME [, ...]`. After the destination an unknown
    /// first word is an unknown option rather than an unknown service.
    fn port_spec(&mut self, after_dst: bool) -> PResult<PortSpec> {
        let not = self.eat_not();
        let mut items = vec![self.port_range(after_dst && !not)?];
        while self.eat(Tok::Comma) {
            items.push(self.port_range(false)?);
        }
        Ok(PortSpec { not, items })
    }

    /// `N`, `N-M`, `NAME`, `NAME-NAME`; a `-` inside a service name is
    /// written `\-` as in ipfw (`ftp\-data`).
    fn port_range(&mut self, maybe_option: bool) -> PResult<PortRange> {
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
        let lo = self.port(lo_text, lo_span).map_err(|e| {
            if maybe_option && hi_text.is_none() && !w.bytes().all(|b| b.is_ascii_digit()) {
                Diagnostic::new(span, format!("unknown option '{w}'"))
            } else {
                e
            }
        })?;
        let hi = match hi_text {
            Some(h) => {
                let hi_span = Span {
                    col: span.col + lo_span.len + 1,
                    len: h.chars().count() as u32,
                    ..span
                };
                Some(self.port(h, hi_span)?)
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

    fn port(&self, text: &str, span: Span) -> PResult<Port> {
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
        if !is_name(&name) {
            return Err(Diagnostic::new(
                span,
                format!("expected a port or service name, found '{text}'"),
            ));
        }
        if self.names.service(&name).is_none() {
            return Err(Diagnostic::new(span, format!("unknown service '{name}'")));
        }
        Ok(Port::Name(name, span))
    }
}

/// A protocol word in the body's protocol position.
fn proto_of(w: &str, span: Span) -> PResult<Proto> {
    Ok(match w {
        "ip" | "all" => Proto::Any,
        "ip4" | "ipv4" => Proto::Ip4,
        "ip6" | "ipv6" => Proto::Ip6,
        _ if w.bytes().all(|b| b.is_ascii_digit()) => Proto::Number(
            parse_u64(w)
                .and_then(|n| u8::try_from(n).ok())
                .ok_or_else(|| Diagnostic::new(span, format!("protocol number {w} is over 255")))?,
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

/// Words that are protocols in the body's protocol position even though
/// ipfw also knows them as options.
fn is_protocol_keyword(w: &str) -> bool {
    matches!(w, "ip4" | "ipv4" | "ip6" | "ipv6")
}

/// `NAME` or `NAME,VALUE` inside `table(…)`.
fn table_ref(inner: &str, span: Span) -> PResult<(String, Option<u32>)> {
    let (name, value) = match inner.split_once(',') {
        Some((n, v)) => (n, Some(v)),
        None => (inner, None),
    };
    if !is_table_name(name) {
        return Err(Diagnostic::new(span, format!("bad table name '{name}'")));
    }
    let value = match value {
        Some(v) => Some(
            parse_number(v)
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| Diagnostic::new(span, format!("bad table value '{v}'")))?,
        ),
        None => None,
    };
    Ok((name.to_owned(), value))
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

/// RFC 791/1349 TOS bits, as ipfw names them; `congestion` is ECN CE and
/// `ecntransport` ECT(0).
/// A name's bits are printed when all of them are there, in this order, so
/// `congestion` (both ECN bits) comes before `mincost`.
pub const IP_TOS_NAMES: &[(&str, u8)] = &[
    ("lowdelay", 0x10),
    ("throughput", 0x08),
    ("reliability", 0x04),
    ("congestion", 0x03),
    ("mincost", 0x02),
    ("ecntransport", 0x02),
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

/// ipfw's unreach6 code names (ICMPv6 destination unreachable codes).
pub const UNREACH6_CODES: &[(&str, u8)] = &[
    ("no-route", 0),
    ("admin-prohib", 1),
    ("address", 3),
    ("port", 4),
];

/// Services of the `divert` pseudo-protocol in FreeBSD's /etc/services.
pub const DIVERT_SERVICES: &[(&str, u16)] = &[("natd", 8668)];

/// The port a divert service name stands for (`natd` is 8668).
pub fn divert_service(name: &str, names: &Names) -> Option<u16> {
    DIVERT_SERVICES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|&(_, port)| port)
        .or_else(|| names.service(name))
}

fn code_of(names: &[(&str, u8)], w: &str) -> Option<u8> {
    names
        .iter()
        .find(|(n, _)| *n == w)
        .map(|&(_, c)| c)
        .or_else(|| parse_number(w).and_then(|n| u8::try_from(n).ok()))
}

/// A DSCP name or a number 0..63.
pub(crate) fn dscp_code(w: &str) -> Option<u8> {
    DSCP_NAMES
        .iter()
        .find(|(n, _)| *n == w)
        .map(|&(_, c)| c)
        .or_else(|| parse_u64(w).filter(|&n| n <= 63).map(|n| n as u8))
}

fn find_unescaped_dash(w: &str) -> Option<usize> {
    let bytes = w.as_bytes();
    (1..bytes.len()).find(|&i| bytes[i] == b'-' && bytes[i - 1] != b'\\')
}

/// A decimal number.
pub(crate) fn parse_u64(w: &str) -> Option<u64> {
    if w.is_empty() || w.len() > 19 || !w.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    w.parse().ok()
}

/// A decimal or `0x` hexadecimal number, as ipfw's `strtoul(…, 0)` reads
/// most numeric arguments.
pub(crate) fn parse_number(w: &str) -> Option<u64> {
    match w.strip_prefix("0x").or_else(|| w.strip_prefix("0X")) {
        Some(hex) if !hex.is_empty() && hex.len() <= 16 => u64::from_str_radix(hex, 16).ok(),
        Some(_) => None,
        None => parse_u64(w),
    }
}

pub(crate) fn is_name(w: &str) -> bool {
    !w.is_empty()
        && w.len() <= 64
        && w.bytes().next().is_some_and(|b| b.is_ascii_alphabetic())
        && w.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// Table names as ipfw allows them: letters, digits, `-`, `_`, `.`, up to
/// 63 characters, numbers included (`table 13 add …`).
pub(crate) fn is_table_name(w: &str) -> bool {
    !w.is_empty()
        && w.len() <= 63
        && w != "all"
        && w.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

fn is_ifname(w: &str) -> bool {
    !w.is_empty()
        && w.len() <= 32
        && w.bytes().next().is_some_and(|b| !b.is_ascii_digit())
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
