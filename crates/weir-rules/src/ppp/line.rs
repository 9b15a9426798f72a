//! One `set filter SET N …` command, read as filter.c's `filter_Parse`
//! reads it (with `ParseUdpOrTcp`, `ParseIcmp`, `ParseGeneric`).

use super::addr::{c_integer, endpoint, family_is_v6, is_set};
use super::words::Word;
use super::{Filter, FilterSet, PortOp, PortTest, Protocol, Verb, MAX_FILTERS};
use crate::ast::{Port, Span};
use crate::diag::Diagnostic;
use crate::names::Names;
use weir_wire::proto;

/// What a `set filter` line does to its set.
#[derive(Debug)]
pub(super) enum Command {
    Set(FilterSet, Box<Filter>),
    Clear(FilterSet, u8),
    ClearAll(FilterSet),
}

type PResult<T> = Result<T, Diagnostic>;

/// Whether the words start `set filter` as ppp's command table finds it:
/// `set` or `setup`, then any prefix of `filter`, in any case.
pub(super) fn is_set_filter(words: &[Word]) -> bool {
    match words {
        [set, filter, ..] => is_set_filter_text(&set.text, &filter.text),
        _ => false,
    }
}

pub(super) fn is_set_filter_text(set: &str, filter: &str) -> bool {
    let filter = filter.to_ascii_lowercase();
    (set.eq_ignore_ascii_case("set") || set.eq_ignore_ascii_case("setup"))
        && !filter.is_empty()
        && "filter".starts_with(&filter)
}

/// Reads a `set filter` line (`words` starts with `set filter`; `end` is
/// just past its last character). Things ppp accepts but reads otherwise
/// than they look go to `notes`.
pub(super) fn set_filter(
    words: &[Word],
    end: Span,
    names: &Names,
    notes: &mut Vec<Diagnostic>,
) -> PResult<Command> {
    let mut p = LineParser {
        words,
        pos: 2,
        end,
        names,
        notes,
    };
    p.command()
}

struct LineParser<'w> {
    words: &'w [Word],
    pos: usize,
    end: Span,
    names: &'w Names,
    notes: &'w mut Vec<Diagnostic>,
}

impl<'w> LineParser<'w> {
    fn peek(&self) -> Option<&'w Word> {
        self.words.get(self.pos)
    }

    fn left(&self) -> usize {
        self.words.len().saturating_sub(self.pos)
    }

    fn next(&mut self, expected: &str) -> PResult<&'w Word> {
        let w = self.words.get(self.pos).ok_or_else(|| {
            Diagnostic::new(
                self.end,
                format!("unexpected end of line, expected {expected}"),
            )
        })?;
        self.pos += 1;
        Ok(w)
    }

    fn eat(&mut self, text: &str) -> bool {
        if self.peek().is_some_and(|w| w.text == text) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// ppp stops reading the line here: what follows is ignored, noted.
    fn ignore_rest(&mut self, why: &str) {
        if let Some(w) = self.peek() {
            self.notes.push(Diagnostic::new(
                w.span,
                format!("ppp ignores '{}' {why}", w.text),
            ));
        }
    }

    fn command(&mut self) -> PResult<Command> {
        let start = self.words[0].span;
        let w = self.next("a filter set (in, out, dial, alive)")?;
        let set = FilterSet::from_word(&w.text).ok_or_else(|| {
            Diagnostic::new(
                w.span,
                format!("unknown filter set '{}' (in, out, dial or alive)", w.text),
            )
        })?;
        let w = self.next("a rule number 0..39")?;
        let number = match w.text.strip_prefix('-') {
            // strtol: a negative number clears the set; -0 is rule 0.
            Some(digits) => match c_integer(digits).ok_or_else(|| bad_number(w))? {
                0 => 0,
                _ => {
                    self.ignore_rest("after a negative rule number (it clears the set)");
                    return Ok(Command::ClearAll(set));
                }
            },
            None => rule_no(w)?,
        };
        let w = self.next("an action (permit, deny, clear or a rule number)")?;
        let action = match w.text.as_str() {
            "permit" => Verb::Permit,
            "deny" => Verb::Deny,
            "clear" => {
                self.ignore_rest("after clear");
                return Ok(Command::Clear(set, number));
            }
            t => match c_integer(t) {
                Some(target) if target < u64::from(MAX_FILTERS) => {
                    if target <= u64::from(number) {
                        return Err(Diagnostic::new(
                            w.span,
                            format!("rule {number} can only jump forward, past {number}"),
                        ));
                    }
                    Verb::Goto(target as u8)
                }
                Some(_) => return Err(out_of_range(w)),
                None => {
                    return Err(Diagnostic::new(
                        w.span,
                        format!("unknown action '{t}' (permit, deny, clear or a rule number)"),
                    ))
                }
            },
        };
        let mut f = Filter {
            number,
            action,
            invert: self.eat("!"),
            addrs: None,
            proto: None,
            timeout: None,
            src_port: None,
            dst_port: None,
            icmp_type: None,
            estab: false,
            syn: false,
            finrst: false,
            span: start,
        };
        if let Some(w) = self
            .peek()
            .filter(|w| w.text.starts_with('!') && w.text.len() > 1)
        {
            return Err(Diagnostic::new(
                w.span,
                format!(
                    "'!' is a word of its own and inverts the whole rule: write '! {}'",
                    &w.text[1..]
                ),
            ));
        }
        let Some(first) = self.peek() else {
            return Ok(Command::Set(set, Box::new(f)));
        };
        if let Some(p) = self.protocol(first) {
            self.pos += 1;
            f.proto = Some(p);
        } else {
            self.addresses(&mut f)?;
        }
        if self.left() >= 2 && self.peek().is_some_and(|w| w.text == "timeout") {
            self.pos += 1;
            let w = self.next("a timeout in seconds")?;
            let t = w
                .text
                .parse::<u32>()
                .ok()
                .filter(|_| w.text.bytes().all(|b| b.is_ascii_digit()))
                .ok_or_else(|| {
                    Diagnostic::new(
                        w.span,
                        format!(
                            "expected a timeout in seconds (decimal), found '{}'",
                            w.text
                        ),
                    )
                })?;
            f.timeout = Some(t);
        }
        match f.proto.as_ref().map_or(0, |p| p.number) {
            proto::TCP | proto::UDP | proto::IPIP | proto::IPV6 => self.ports(&mut f)?,
            proto::ICMP | proto::ICMPV6 => self.icmp(&mut f)?,
            _ => self.generic(&f)?,
        }
        Ok(Command::Set(set, Box::new(f)))
    }

    /// A protocol word: `all`, or a name `/etc/protocols` knows (exactly,
    /// or in lower case); `ip` is protocol 0 as ppp's table has it.
    fn protocol(&self, w: &Word) -> Option<Protocol> {
        let lookup = |t: &str| match t {
            "all" | "ip" => Some(0),
            _ => self.names.protocol(t),
        };
        let (name, number) = match lookup(&w.text) {
            Some(n) => (w.text.clone(), n),
            None => {
                let lower = w.text.to_ascii_lowercase();
                let n = lookup(&lower)?;
                (lower, n)
            }
        };
        Some(Protocol {
            name,
            number,
            span: w.span,
        })
    }

    /// `src dst [proto]`: ppp reads addresses only in pairs.
    fn addresses(&mut self, f: &mut Filter) -> PResult<()> {
        let w = &self.words[self.pos];
        if matches!(
            w.text.as_str(),
            "timeout" | "src" | "dst" | "estab" | "syn" | "finrst"
        ) {
            return Err(Diagnostic::new(
                w.span,
                format!(
                    "'{}' comes after a protocol (write 'all' for any protocol, or tcp, udp, …)",
                    w.text
                ),
            ));
        }
        if self.left() < 2 {
            let w = self.words[self.pos].clone();
            return Err(Diagnostic::new(
                w.span,
                format!(
                    "expected a protocol, or a source and destination address (ppp reads addresses in pairs), found '{}'{}",
                    w.text,
                    number_hint(&w.text, self.names)
                ),
            ));
        }
        let src = endpoint(&self.words[self.pos], self.notes)?;
        let dst_word = &self.words[self.pos + 1];
        let dst = endpoint(dst_word, self.notes)?;
        self.pos += 2;
        if let (true, Some(a), Some(b)) = (is_set(&src), family_is_v6(&src), family_is_v6(&dst)) {
            if a != b {
                return Err(Diagnostic::new(
                    dst_word.span,
                    "src and dst address families differ",
                ));
            }
        }
        f.addrs = Some((src, dst));
        if let Some(w) = self.peek() {
            let p = self.protocol(w).ok_or_else(|| {
                let hint = if w.text == "timeout" {
                    " (timeout comes after a protocol: write 'all timeout S' for any protocol)"
                        .to_owned()
                } else {
                    number_hint(&w.text, self.names)
                };
                Diagnostic::new(
                    w.span,
                    format!(
                        "expected a protocol after the address pair, found '{}'{hint}",
                        w.text
                    ),
                )
            })?;
            self.pos += 1;
            f.proto = Some(p);
        }
        Ok(())
    }

    /// `ParseUdpOrTcp`: `[src OP PORT] [dst OP PORT]`, then for tcp any of
    /// `estab`, `syn`, `finrst`.
    fn ports(&mut self, f: &mut Filter) -> PResult<()> {
        for side in ["src", "dst"] {
            if self.left() < 3 || self.peek().is_none_or(|w| w.text != side) {
                continue;
            }
            self.pos += 1;
            let w = self.next("lt, eq or gt")?;
            let op = match w.text.to_ascii_lowercase().as_str() {
                "lt" => PortOp::Lt,
                "eq" => PortOp::Eq,
                "gt" => PortOp::Gt,
                _ => {
                    return Err(Diagnostic::new(
                        w.span,
                        format!("expected lt, eq or gt, found '{}'", w.text),
                    ))
                }
            };
            let port = self.port()?;
            let test = Some(PortTest { op, port });
            if side == "src" {
                f.src_port = test;
            } else {
                f.dst_port = test;
            }
        }
        if f.proto.as_ref().is_some_and(|p| p.number == proto::TCP) {
            while let Some(w) = self.peek() {
                let flag = match w.text.as_str() {
                    "estab" => &mut f.estab,
                    "syn" => &mut f.syn,
                    "finrst" => &mut f.finrst,
                    _ => break,
                };
                *flag = true;
                self.pos += 1;
            }
        }
        match self.peek() {
            None => Ok(()),
            Some(w) => {
                let hint = match w.text.as_str() {
                    "estab" | "syn" | "finrst" => format!(" ({} only follows tcp)", w.text),
                    "src" | "dst" => " (ppp's order: [proto] [timeout S] [src OP P] [dst OP P] [estab] [syn] [finrst])".to_owned(),
                    "timeout" => " (timeout comes right after the protocol)".to_owned(),
                    _ => String::new(),
                };
                Err(Diagnostic::new(
                    w.span,
                    format!("unexpected '{}'{hint}", w.text),
                ))
            }
        }
    }

    /// `ParsePort`: a service name, else a C number 1..=65535.
    fn port(&mut self) -> PResult<Port> {
        let w = self.next("a port")?;
        if self.names.service(&w.text).is_some_and(|p| p > 0) {
            return Ok(Port::Name(w.text.clone(), w.span));
        }
        match c_integer(&w.text) {
            Some(n @ 1..=65535) => Ok(Port::Number(n as u16)),
            Some(_) => Err(Diagnostic::new(
                w.span,
                format!("expected a port 1..65535, found '{}'", w.text),
            )),
            None if w.text.starts_with(|c: char| c.is_ascii_digit()) => Err(bad_number(w)),
            None => Err(Diagnostic::new(
                w.span,
                format!("unknown service '{}'", w.text),
            )),
        }
    }

    /// `ParseIcmp`: nothing, or three words of which only `src eq TYPE`
    /// means anything to ppp.
    fn icmp(&mut self, f: &mut Filter) -> PResult<()> {
        match self.left() {
            0 => Ok(()),
            3 => {
                let [a, b, t] = [0, 1, 2].map(|i| &self.words[self.pos + i]);
                if a.text == "src" && b.text == "eq" {
                    let ty = c_integer(&t.text).filter(|&n| n <= 65535).ok_or_else(|| {
                        Diagnostic::new(
                            t.span,
                            format!("expected an ICMP type, found '{}'", t.text),
                        )
                    })?;
                    f.icmp_type = Some(ty as u16);
                } else {
                    self.notes.push(Diagnostic::new(
                        a.span,
                        format!(
                            "ppp reads only 'src eq TYPE' after {} and ignores '{} {} {}': this rule takes every ICMP type",
                            f.proto.as_ref().map_or("icmp", |p| p.name.as_str()),
                            a.text,
                            b.text,
                            t.text
                        ),
                    ));
                }
                self.pos += 3;
                Ok(())
            }
            _ => {
                let w = &self.words[self.pos];
                Err(Diagnostic::new(
                    w.span,
                    format!(
                        "bad icmp syntax at '{}': ppp takes nothing or 'src eq TYPE' after icmp",
                        w.text
                    ),
                ))
            }
        }
    }

    /// `ParseGeneric`: nothing may follow another protocol.
    fn generic(&self, f: &Filter) -> PResult<()> {
        match self.peek() {
            None => Ok(()),
            Some(w) => {
                let proto = f.proto.as_ref().map_or("all", |p| p.name.as_str());
                let hint = match w.text.as_str() {
                    "src" | "dst" => " (port tests only follow tcp or udp, and 'src eq TYPE' icmp)",
                    "estab" | "syn" | "finrst" => " (TCP flags only follow tcp)",
                    _ => "",
                };
                Err(Diagnostic::new(
                    w.span,
                    format!(
                        "unexpected '{}': ppp takes nothing after {proto}{hint}",
                        w.text
                    ),
                ))
            }
        }
    }
}

fn rule_no(w: &Word) -> PResult<u8> {
    let n = c_integer(&w.text).ok_or_else(|| bad_number(w))?;
    u8::try_from(n)
        .ok()
        .filter(|&n| n < MAX_FILTERS)
        .ok_or_else(|| out_of_range(w))
}

fn out_of_range(w: &Word) -> Diagnostic {
    Diagnostic::new(
        w.span,
        format!(
            "rule number {} is out of range: a ppp set holds at most 40 rules, 0..39",
            w.text
        ),
    )
}

/// A word that should be a number and is not all of one: ppp's `strtol`
/// would take its leading digits and drop the rest; weir refuses it.
fn bad_number(w: &Word) -> Diagnostic {
    let digits: String = w
        .text
        .trim_start_matches('-')
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    let hint = if digits.is_empty() || digits == w.text {
        String::new()
    } else {
        format!(" (ppp would read its leading {digits} and drop the rest)")
    };
    Diagnostic::new(
        w.span,
        format!("expected a number, found '{}'{hint}", w.text),
    )
}

/// For a number where a protocol belongs: ppp looks protocols up by name.
fn number_hint(text: &str, names: &Names) -> String {
    match text.parse::<u8>().ok().map(|n| (n, names.protocol_name(n))) {
        Some((n, Some(name))) => format!(
            " (ppp looks protocols up by name, as /etc/protocols has them: write {name} for {n})"
        ),
        Some(_) => " (ppp looks protocols up by name, as /etc/protocols has them)".to_owned(),
        None => String::new(),
    }
}
