//! The lines of a ruleset script that are not rules: table commands,
//! tunables, and ipfw's housekeeping commands.
//!
//! What changes the ruleset is applied as it is read, in file order:
//! `flush` and `delete` remove rules added before them, `set move|swap`
//! moves them between sets, `set disable|enable` switches sets, table
//! commands are kept in order for the compiler. Commands that change
//! nothing a replay decides (`pipe 1 config …`, `nat 1 config …`, `zero`,
//! `show`, `table T list`) are accepted and ignored.

use super::rule_list::RuleList;
use super::{
    dscp_code, is_ifname, is_table_name, parse_addr, parse_number, parse_u64, proto_of, PResult,
    Parser, AUTOINC_STEP,
};
use crate::ast::*;
use crate::diag::Diagnostic;
use crate::lex::Tok;
use crate::names::Names;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The sysctl prefix of ipfw's tunables.
const SYSCTL_PREFIX: &str = "net.inet.ip.fw.";

/// Words after `pipe|queue|sched|nat N` (or after the command) that make a
/// configuration command rather than a rule.
const CONFIG_WORDS: &[&str] = &[
    "config", "delete", "show", "list", "flush", "create", "destroy", "stats",
];

pub(crate) struct Script<'n> {
    /// Everything but the rules, which `rules` holds until `finish`.
    rs: Ruleset,
    rules: RuleList,
    last_number: u16,
    step: u16,
    /// Tables' kinds as created (or guessed by ipfw's auto-create) so far.
    kinds: HashMap<String, TableKind>,
    /// Tables' value types (`valtype`), where not legacy.
    value_types: HashMap<String, ValueTypes>,
    names: &'n Names,
}

impl<'n> Script<'n> {
    pub fn new(names: &'n Names) -> Script<'n> {
        Script {
            rs: Ruleset::default(),
            rules: RuleList::default(),
            last_number: 0,
            step: AUTOINC_STEP,
            kinds: HashMap::new(),
            value_types: HashMap::new(),
            names,
        }
    }

    pub fn finish(self) -> Ruleset {
        Ruleset {
            rules: self.rules.into_rules(),
            ..self.rs
        }
    }

    /// `// text` alone on a line: ipfw's comment "action", a count rule.
    pub fn comment_rule(&mut self, comment: &str, span: Span) -> PResult<()> {
        let number = super::auto_number(self.last_number, self.step);
        self.push_rule(Rule {
            number,
            head: RuleHead::default(),
            action: Action::Count,
            log: None,
            body: Body::match_all(),
            comment: Some(comment.to_owned()),
            span,
        });
        Ok(())
    }

    fn push_rule(&mut self, rule: Rule) {
        self.last_number = self.last_number.max(rule.number);
        self.rules.push(rule);
    }

    /// One non-empty line.
    pub fn line(&mut self, p: &mut Parser, comment: Option<&str>) -> PResult<()> {
        let quiet = p.skip_ipfw_prefix();
        let Some(first) = p.peek_word() else {
            return Err(Diagnostic::new(p.here(), "expected a command or a rule"));
        };
        if first == "sysctl" || first.starts_with("net.") {
            return self.setting(p);
        }
        let use_set = if first == "set" && p.peek_word_at(1).is_some_and(is_number) {
            p.pos += 1;
            let (s, span) = p.number::<u8>("a set number", u64::from(RESERVED_SET))?;
            Some((s, span))
        } else {
            None
        };
        let command = p.peek_word().unwrap_or_default();
        let config = |k: usize| p.peek_word_at(k).is_some_and(|w| CONFIG_WORDS.contains(&w));
        let ignored = match command {
            "zero" | "resetlog" | "show" | "list" | "internal" => true,
            "pipe" | "queue" | "sched" | "nat" => config(1) || config(2),
            "nat64lsn" | "nat64stl" | "nat64clat" | "nptv6" => config(2),
            _ => false,
        };
        if ignored {
            p.pos = p.toks.len();
            return Ok(());
        }
        if use_set.is_some() && !matches!(command, "flush" | "delete" | "table") {
            return Err(Diagnostic::new(
                p.here(),
                "expected flush, delete or table after 'set N'",
            ));
        }
        match command {
            "table" => {
                p.pos += 1;
                self.table(p, quiet)
            }
            "flush" => {
                p.pos += 1;
                p.end_of_line()?;
                self.flush(use_set.map(|(s, _)| s));
                Ok(())
            }
            "delete" => {
                p.pos += 1;
                self.delete(p, use_set.map(|(s, _)| s))
            }
            "set" => {
                p.pos += 1;
                self.set_command(p)
            }
            "enable" | "disable" => {
                p.pos += 1;
                self.switch(p, command == "enable")
            }
            _ => {
                p.eat_word("add");
                let mut rule = p.rule(self.last_number, self.step)?;
                rule.comment = comment.filter(|c| !c.is_empty()).map(str::to_owned);
                self.push_rule(rule);
                Ok(())
            }
        }
    }

    /// `flush`: every rule but set 31's, or one set's rules.
    fn flush(&mut self, set: Option<u8>) {
        self.rules.flush(set);
        self.renumber_from_rest();
    }

    /// ipfw numbers a new rule after the highest rule there is now.
    fn renumber_from_rest(&mut self) {
        self.last_number = self.rules.max_number();
    }

    /// `delete [set] N[-M] ...`.
    fn delete(&mut self, p: &mut Parser, use_set: Option<u8>) -> PResult<()> {
        let whole_sets = p.eat_word("set");
        if p.at_end() {
            return Err(Diagnostic::new(p.here(), "delete needs rule numbers"));
        }
        while !p.at_end() {
            let (w, span) = p.word("a rule number or range")?;
            let bad = || Diagnostic::new(span, format!("bad rule number or range '{w}'"));
            let (lo, hi) = match w.split_once('-') {
                Some((a, b)) => (parse_u64(a).ok_or_else(bad)?, parse_u64(b).ok_or_else(bad)?),
                None => {
                    let n = parse_u64(w).ok_or_else(bad)?;
                    (n, n)
                }
            };
            if lo > hi {
                // ipfw's kernel refuses it too (EINVAL from the range check).
                return Err(Diagnostic::new(
                    span,
                    format!("rule range '{w}' is backwards"),
                ));
            }
            if whole_sets {
                if hi > u64::from(RESERVED_SET) || lo != hi {
                    return Err(bad());
                }
                self.rules.delete_set(lo as u8);
            } else if let Ok(lo) = u16::try_from(lo) {
                let hi = u16::try_from(hi).unwrap_or(u16::MAX);
                self.rules.delete_numbers(lo, hi, use_set);
            }
        }
        self.renumber_from_rest();
        Ok(())
    }

    /// `set disable N… [enable M…]`, `set enable …`, `set move [rule] X to
    /// Y`, `set swap X Y`, `set show`.
    fn set_command(&mut self, p: &mut Parser) -> PResult<()> {
        let (w, span) = p.word("a set command (disable, enable, move, swap, show)")?;
        let set_number = |p: &mut Parser| p.number::<u8>("a set number", u64::from(RESERVED_SET));
        match w {
            "show" => {
                p.pos = p.toks.len();
                Ok(())
            }
            "enable" | "disable" => {
                let mut disable = w == "disable";
                while !p.at_end() {
                    if p.eat_word("enable") {
                        disable = false;
                        continue;
                    }
                    if p.eat_word("disable") {
                        disable = true;
                        continue;
                    }
                    let (s, sspan) = set_number(p)?;
                    if disable {
                        if s == RESERVED_SET {
                            return Err(Diagnostic::new(sspan, "set 31 cannot be disabled"));
                        }
                        self.rs.disabled_sets |= 1 << s;
                    } else {
                        self.rs.disabled_sets &= !(1 << s);
                    }
                }
                Ok(())
            }
            "swap" => {
                let (a, _) = set_number(p)?;
                let (b, _) = set_number(p)?;
                p.end_of_line()?;
                self.rules.swap_sets(a, b);
                Ok(())
            }
            "move" => {
                let one_rule = p.eat_word("rule");
                let (from, fspan) = p.number::<u16>("a set or rule number", 65535)?;
                p.expect_word("to")?;
                let (to, _) = set_number(p)?;
                p.end_of_line()?;
                if !one_rule && from > u16::from(RESERVED_SET) {
                    return Err(Diagnostic::new(fspan, "sets are 0..31"));
                }
                if one_rule {
                    self.rules.move_rule(from, to);
                } else {
                    self.rules.move_set(from as u8, to);
                }
                Ok(())
            }
            _ => Err(Diagnostic::new(
                span,
                format!("unknown set command '{w}' (disable, enable, move, swap, show)"),
            )),
        }
    }

    /// `enable|disable one_pass|firewall|verbose|debug|dyn_keepalive|altq`.
    fn switch(&mut self, p: &mut Parser, on: bool) -> PResult<()> {
        let (w, span) = p.word("what to enable or disable")?;
        p.end_of_line()?;
        match w {
            "one_pass" => {
                self.rs.settings.push(Setting {
                    name: "one_pass".into(),
                    value: u32::from(on),
                    span,
                });
                Ok(())
            }
            "firewall" if !on => Err(Diagnostic::new(
                span,
                "'disable firewall' turns ipfw off, and replay would pass every packet; remove the line",
            )),
            "firewall" | "verbose" | "debug" | "dyn_keepalive" | "altq" => Ok(()),
            _ => Err(Diagnostic::new(
                span,
                format!("unknown switch '{w}' (one_pass, firewall, verbose, debug, dyn_keepalive, altq)"),
            )),
        }
    }

    /// `[sysctl] NAME=VALUE` (spaces around `=` allowed).
    fn setting(&mut self, p: &mut Parser) -> PResult<()> {
        p.eat_word("sysctl");
        let (w, span) = p.word("a setting (net.inet.ip.fw.NAME=VALUE)")?;
        let (key, mut value) = match w.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (w, None),
        };
        let name = key.strip_prefix(SYSCTL_PREFIX).unwrap_or(key);
        let known = STATE_SETTINGS
            .iter()
            .chain(OTHER_SETTINGS)
            .any(|(n, _)| *n == name);
        let ignored = IGNORED_SETTINGS.contains(&name);
        if !known && !ignored {
            let all: Vec<_> = STATE_SETTINGS
                .iter()
                .chain(OTHER_SETTINGS)
                .map(|(n, _)| *n)
                .collect();
            return Err(Diagnostic::new(
                span,
                format!("unknown setting '{key}' (known: {})", all.join(", ")),
            ));
        }
        let mut vspan = span;
        if value.is_none() || value == Some("") {
            if value.is_none() {
                let tok = p.next("'='")?;
                if tok.text() != "=" {
                    return Err(Diagnostic::new(tok.span, "expected '='"));
                }
            }
            let (v, s) = p.word("a value")?;
            value = Some(v);
            vspan = s;
        }
        let v = value.unwrap_or_default();
        let value = parse_u64(v)
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| Diagnostic::new(vspan, format!("expected a number, found '{v}'")))?;
        p.end_of_line()?;
        match name {
            _ if setting_error(name, value).is_some() => {
                let why = setting_error(name, value).unwrap_or_default();
                return Err(Diagnostic::new(vspan, why));
            }
            "one_pass" | "default_to_accept" | "net.link.ether.ipfw" if value > 1 => {
                return Err(Diagnostic::new(vspan, format!("{name} is 0 or 1")))
            }
            "autoinc_step" => {
                // ipfw bounds the step to 1..1000.
                self.step = value.clamp(1, 1000) as u16;
                return Ok(());
            }
            _ if ignored => return Ok(()),
            _ => {}
        }
        self.rs.settings.push(Setting {
            name: name.to_owned(),
            value,
            span,
        });
        Ok(())
    }

    /// After `table`: `NAME|all COMMAND …`.
    fn table(&mut self, p: &mut Parser, quiet: bool) -> PResult<()> {
        let (name, span) = p.word("a table name")?;
        if name != "all" && !is_table_name(name) {
            return Err(Diagnostic::new(span, format!("bad table name '{name}'")));
        }
        let (cmd, cspan) = p.word("a table command (create, add, delete, flush, …)")?;
        let all_ok = matches!(cmd, "flush" | "destroy" | "list" | "info" | "detail");
        if name == "all" && !all_ok {
            return Err(Diagnostic::new(
                cspan,
                format!("'table all {cmd}' needs a table name"),
            ));
        }
        let push = |s: &mut Self, op: TableOp, span: Span| {
            s.rs.tables.push(TableCmd {
                table: name.to_owned(),
                op,
                span,
            })
        };
        match cmd {
            "create" => {
                let (kind, types) = self.create_options(p)?;
                if self.kinds.insert(name.to_owned(), kind).is_some() {
                    return Err(Diagnostic::new(
                        span,
                        format!("table {name} already exists"),
                    ));
                }
                if !types.is_legacy() {
                    self.value_types.insert(name.to_owned(), types);
                }
                push(self, TableOp::Create(kind, types), span);
            }
            "add" | "atomic" => {
                if cmd == "atomic" {
                    p.expect_word("add")?;
                }
                if p.at_end() {
                    return Err(Diagnostic::new(p.here(), "table add needs a key"));
                }
                let types = self.value_types.get(name).copied().unwrap_or_default();
                while !p.at_end() {
                    let kspan = p.here();
                    let key = self.table_key(p, name)?;
                    let value = if types.is_legacy() {
                        TableValue::Legacy(if p.at_end() { 0 } else { table_value(p)? })
                    } else if p.at_end() {
                        // No value: every field 0, as for a legacy table.
                        TableValue::Typed(Box::new(TypedValue {
                            types,
                            ..TypedValue::default()
                        }))
                    } else {
                        TableValue::Typed(Box::new(typed_value(p, types)?))
                    };
                    push(
                        self,
                        TableOp::Add {
                            key,
                            value,
                            update: quiet,
                        },
                        kspan,
                    );
                }
            }
            "delete" => {
                if !self.kinds.contains_key(name) {
                    // ipfw refuses to delete from a table nobody created or
                    // filled; a table from --table is an address table.
                    self.kinds.insert(name.to_owned(), TableKind::Addr);
                }
                if p.at_end() {
                    return Err(Diagnostic::new(p.here(), "table delete needs a key"));
                }
                while !p.at_end() {
                    let kspan = p.here();
                    let key = self.table_key(p, name)?;
                    push(self, TableOp::Delete(key), kspan);
                }
            }
            "flush" => {
                p.end_of_line()?;
                push(self, TableOp::Flush, span);
            }
            "destroy" => {
                p.end_of_line()?;
                if name == "all" {
                    self.kinds.clear();
                    self.value_types.clear();
                } else {
                    self.kinds.remove(name);
                    self.value_types.remove(name);
                }
                push(self, TableOp::Destroy, span);
            }
            "swap" => {
                let (other, ospan) = p.word("the table to swap with")?;
                if !is_table_name(other) {
                    return Err(Diagnostic::new(ospan, format!("bad table name '{other}'")));
                }
                p.end_of_line()?;
                let (a, b) = (
                    self.kinds.get(name).copied(),
                    self.kinds.get(other).copied(),
                );
                if a.is_some() && b.is_some() && a != b {
                    return Err(Diagnostic::new(
                        ospan,
                        format!("tables {name} and {other} have different types"),
                    ));
                }
                match (a, b) {
                    (Some(a), _) => self.kinds.insert(other.to_owned(), a),
                    (None, Some(b)) => self.kinds.insert(name.to_owned(), b),
                    _ => None,
                };
                let (va, vb) = (
                    self.value_types.remove(name),
                    self.value_types.remove(other),
                );
                self.value_types.extend(va.map(|t| (other.to_owned(), t)));
                self.value_types.extend(vb.map(|t| (name.to_owned(), t)));
                push(self, TableOp::Swap(other.to_owned()), span);
            }
            "list" | "info" | "detail" | "lookup" | "lock" | "unlock" | "modify" => {
                p.pos = p.toks.len();
            }
            _ => {
                return Err(Diagnostic::new(
                    cspan,
                    format!(
                    "unknown table command '{cmd}' (create, add, delete, flush, destroy, swap, …)"
                ),
                ))
            }
        }
        Ok(())
    }

    /// `create` options; returns the table's kind (addr by default) and
    /// value types (legacy by default).
    fn create_options(&mut self, p: &mut Parser) -> PResult<(TableKind, ValueTypes)> {
        let mut kind = TableKind::Addr;
        let mut types = ValueTypes::LEGACY;
        while !p.at_end() {
            let (w, span) = p.word("a table option")?;
            match w {
                "type" => {
                    let (t, tspan) = p.word("a table type (addr, iface, number, flow)")?;
                    let (t, fields) = match t.split_once(':') {
                        Some((t, f)) => (t, Some(f)),
                        None => (t, None),
                    };
                    kind = match (t, fields) {
                        ("addr", None) | ("cidr", None) => TableKind::Addr,
                        ("iface", None) => TableKind::Iface,
                        ("number", None) => TableKind::Number,
                        ("flow", Some(f)) => TableKind::Flow(flow_fields(p, f, tspan)?),
                        ("flow", None) => return Err(Diagnostic::new(
                            tspan,
                            "a flow table needs its fields: type flow:src-ip,proto,dst-ip,dst-port",
                        )),
                        _ => {
                            return Err(Diagnostic::new(
                                tspan,
                                format!("unknown table type '{t}' (addr, iface, number, flow)"),
                            ))
                        }
                    };
                }
                "valtype" => types = value_types(p)?,
                "algo" | "limit" => {
                    // Lookup algorithms and size limits change no verdict
                    // here; the words are read and kept out.
                    p.word(&format!("an argument for {w}"))?;
                    while p.eat(Tok::Comma) {
                        p.word(&format!("an argument for {w}"))?;
                    }
                }
                "locked" | "missing" | "or-flush" => {}
                _ => {
                    return Err(Diagnostic::new(
                        span,
                        format!("unknown table option '{w}' (type, valtype, algo, limit, locked)"),
                    ))
                }
            }
        }
        Ok((kind, types))
    }

    /// One key of table `name`, read as its kind says (ipfw guesses the
    /// kind of a table nobody created from its first key).
    fn table_key(&mut self, p: &mut Parser, name: &str) -> PResult<TableKey> {
        let (w, span) = p.word("a table key")?;
        let kind = match self.kinds.get(name) {
            Some(k) => *k,
            None => {
                let guessed = guess_kind(w).ok_or_else(|| {
                    Diagnostic::new(
                        span,
                        format!("cannot tell what kind of key '{w}' is; create the table first (table {name} create type …)"),
                    )
                })?;
                self.kinds.insert(name.to_owned(), guessed);
                guessed
            }
        };
        let bad = |what: &str| {
            Diagnostic::new(
                span,
                format!("table {name} holds {what}, and '{w}' is not one"),
            )
        };
        Ok(match kind {
            TableKind::Addr => match parse_addr(w) {
                Some(Addr::Prefix(a, l)) => TableKey::Prefix(a, l),
                _ => return Err(bad("addresses (ADDR or ADDR/LEN)")),
            },
            TableKind::Number => TableKey::Number(
                parse_u64(w)
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(|| bad("numbers"))?,
            ),
            TableKind::Iface if is_ifname(w) => TableKey::Iface(w.to_owned()),
            TableKind::Iface => return Err(bad("interface names")),
            TableKind::Flow(mask) => TableKey::Flow(self.flow_key(p, w, span, mask)?),
        })
    }

    /// The fields of a flow key, comma-separated, as the mask names them.
    fn flow_key(&self, p: &mut Parser, first: &str, span: Span, mask: u8) -> PResult<FlowKey> {
        let mut key = FlowKey::default();
        let mut word = Some((first, span));
        for &(field, bit) in FLOW_FIELDS {
            if mask & bit == 0 {
                continue;
            }
            let (w, wspan) = match word.take() {
                Some(x) => x,
                None => {
                    if !p.eat(Tok::Comma) {
                        return Err(Diagnostic::new(
                            p.here(),
                            format!("flow key misses its {field}"),
                        ));
                    }
                    p.word(&format!("the flow key's {field}"))?
                }
            };
            let bad = || Diagnostic::new(wspan, format!("bad {field} '{w}' in the flow key"));
            match field {
                "src-ip" | "dst-ip" => {
                    let a: IpAddr = w.parse().map_err(|_| bad())?;
                    if field == "src-ip" {
                        key.src = Some(a);
                    } else {
                        key.dst = Some(a);
                    }
                }
                "proto" => key.proto = Some(proto_of(w, wspan)?),
                _ => {
                    let w = w.replace("\\-", "-");
                    let w = w.as_str();
                    let port = if w.bytes().all(|b| b.is_ascii_digit()) {
                        Port::Number(
                            parse_u64(w)
                                .and_then(|n| u16::try_from(n).ok())
                                .ok_or_else(bad)?,
                        )
                    } else if self.names.service(w).is_some() {
                        Port::Name(w.to_owned(), wspan)
                    } else {
                        return Err(Diagnostic::new(wspan, format!("unknown service '{w}'")));
                    };
                    if field == "src-port" {
                        key.src_port = Some(port);
                    } else {
                        key.dst_port = Some(port);
                    }
                }
            }
        }
        let (src_v4, dst_v4) = (key.src.map(|a| a.is_ipv4()), key.dst.map(|a| a.is_ipv4()));
        if src_v4.is_some() && dst_v4.is_some() && src_v4 != dst_v4 {
            return Err(Diagnostic::new(
                span,
                "a flow key's addresses must be of one family",
            ));
        }
        Ok(key)
    }
}

/// ipfw's `guess_key_type`: an address, a number, or an interface name.
fn guess_kind(w: &str) -> Option<TableKind> {
    if matches!(parse_addr(w), Some(Addr::Prefix(..))) {
        Some(TableKind::Addr)
    } else if w.bytes().all(|b| b.is_ascii_digit()) {
        Some(TableKind::Number)
    } else if !w.contains('.') && is_ifname(w) {
        Some(TableKind::Iface)
    } else {
        None
    }
}

/// `type flow:FIELD,FIELD…`; the first field is in the type word, the rest
/// come as separate tokens after commas.
fn flow_fields(p: &mut Parser, first: &str, span: Span) -> PResult<u8> {
    let mut mask = 0u8;
    let mut word = Some((first, span));
    loop {
        let (w, wspan) = match word.take() {
            Some(x) => x,
            None => p.word("a flow field")?,
        };
        let bit = FLOW_FIELDS
            .iter()
            .find(|(n, _)| *n == w)
            .map(|&(_, b)| b)
            .ok_or_else(|| {
                Diagnostic::new(
                    wspan,
                    format!("unknown flow field '{w}' (src-ip, proto, src-port, dst-ip, dst-port)"),
                )
            })?;
        mask |= bit;
        if !p.eat(Tok::Comma) {
            return Ok(mask);
        }
    }
}

/// `valtype FIELD,…` (ipfw(8) LOOKUP TABLES; `legacy` is one number).
fn value_types(p: &mut Parser) -> PResult<ValueTypes> {
    let mut types = ValueTypes::LEGACY;
    loop {
        let (w, span) = p.word("a value type (skipto, pipe, fib, nat, dscp, tag, divert, netgraph, limit, ipv4, ipv6, legacy)")?;
        match ValueField::ALL.iter().find(|f| f.name() == w) {
            Some(f) => types.0 |= f.bit(),
            None if w == "legacy" => {}
            None => {
                return Err(Diagnostic::new(
                    span,
                    format!(
                        "unknown value type '{w}' (known: {}, legacy)",
                        VALUE_FIELDS.join(", ")
                    ),
                ))
            }
        }
        if !p.eat(Tok::Comma) {
            return Ok(types);
        }
    }
}

/// A typed value: one comma-separated part per field of `types`, in
/// field order, as ipfw's `tentry_fill_value` reads them (sbin/ipfw/tables.c).
fn typed_value(p: &mut Parser, types: ValueTypes) -> PResult<TypedValue> {
    let wrong_count = |p: &Parser| {
        let wanted: Vec<&str> = types.fields().map(ValueField::name).collect();
        let msg = format!(
            "this table's values have {} fields: {}",
            wanted.len(),
            wanted.join(",")
        );
        Diagnostic::new(p.here(), msg)
    };
    let mut v = TypedValue {
        types,
        ..TypedValue::default()
    };
    for (k, field) in types.fields().enumerate() {
        if k > 0 && !p.eat(Tok::Comma) {
            return Err(wrong_count(p));
        }
        let (w, span) = p.word(&format!("a value for '{}'", field.name()))?;
        let bad = || Diagnostic::new(span, format!("bad {} value '{w}'", field.name()));
        match field {
            ValueField::Nh4 => {
                v.numbers[field as usize] = u32::from(w.parse::<Ipv4Addr>().map_err(|_| bad())?);
            }
            ValueField::Nh6 => v.nh6 = u128::from(w.parse::<Ipv6Addr>().map_err(|_| bad())?),
            ValueField::Dscp => {
                v.numbers[field as usize] = u32::from(dscp_code(w).ok_or_else(bad)?)
            }
            _ => {
                v.numbers[field as usize] = parse_u64(w)
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(bad)?;
            }
        }
    }
    if p.peek().is_some_and(|t| t.tok == Tok::Comma) {
        return Err(wrong_count(p));
    }
    Ok(v)
}

/// A table value: a number (decimal or `0x` hex) or an IPv4 address, as
/// ipfw's legacy values read.
fn table_value(p: &mut Parser) -> PResult<u32> {
    let (v, span) = p.word("a table value")?;
    if let Some(n) = parse_number(v).and_then(|n| u32::try_from(n).ok()) {
        return Ok(n);
    }
    if let Ok(a) = v.parse::<Ipv4Addr>() {
        return Ok(u32::from(a));
    }
    Err(Diagnostic::new(
        span,
        format!("bad table value '{v}' (a number 0..4294967295 or an IPv4 address)"),
    ))
}

fn is_number(w: &str) -> bool {
    !w.is_empty() && w.bytes().all(|b| b.is_ascii_digit())
}
