//! Rule options: everything after the destination (or, in ipfw's "just
//! options" form, after the action).
//!
//! A word that is an option keyword is an option; keywords whose meaning a
//! capture cannot decide are refused by name, saying why.

use super::{
    dscp_code, is_ifname, is_table_name, parse_number, parse_u64, proto_of, table_ref, PResult,
    Parser, ICMP_TYPE_NAMES, IP_OPTION_NAMES, IP_TOS_NAMES, TCP_FLAG_NAMES,
};
use crate::ast::*;
use crate::diag::Diagnostic;
use crate::lex::Tok;

/// Every word that starts an option, as ipfw's `rule_options` table lists
/// them (FreeBSD 14 sbin/ipfw/ipfw2.c), refused ones included.
pub const OPTION_KEYWORDS: &[&str] = &[
    "tagged",
    "uid",
    "gid",
    "jail",
    "in",
    "limit",
    "set-limit",
    "keep-state",
    "record-state",
    "bridged",
    "layer2",
    "out",
    "diverted",
    "diverted-loopback",
    "diverted-output",
    "xmit",
    "recv",
    "via",
    "fragment",
    "frag",
    "fib",
    "ipoptions",
    "ipopts",
    "iplen",
    "ipid",
    "ipprecedence",
    "dscp",
    "iptos",
    "ipttl",
    "ipversion",
    "ipver",
    "estab",
    "established",
    "setup",
    "sockarg",
    "tcpdatalen",
    "tcpflags",
    "tcpflgs",
    "tcpmss",
    "tcpoptions",
    "tcpopts",
    "tcpseq",
    "tcpack",
    "tcpwin",
    "icmptype",
    "icmptypes",
    "dst-ip",
    "src-ip",
    "dst-port",
    "src-port",
    "proto",
    "MAC",
    "mac",
    "mac-type",
    "verrevpath",
    "versrcreach",
    "antispoof",
    "ipsec",
    "icmp6type",
    "icmp6types",
    "ext6hdr",
    "flow-id",
    "ipv6",
    "ip6",
    "ipv4",
    "ip4",
    "dst-ipv6",
    "dst-ip6",
    "src-ipv6",
    "src-ip6",
    "lookup",
    "flow",
    "defer-action",
    "defer-immediate-action",
];

/// Options a capture cannot decide, and why.
pub const REFUSED_OPTIONS: &[(&str, &str)] = &[
    (
        "uid",
        "needs the owner of a local socket, which a capture does not carry",
    ),
    (
        "gid",
        "needs the group of a local socket's owner, which a capture does not carry",
    ),
    (
        "jail",
        "needs the jail of a local socket, which a capture does not carry",
    ),
    (
        "sockarg",
        "needs the user cookie of a local socket, which a capture does not carry",
    ),
    (
        "verrevpath",
        "needs the host's routing table, which a capture does not carry",
    ),
    (
        "versrcreach",
        "needs the host's routing table, which a capture does not carry",
    ),
    (
        "antispoof",
        "needs the host's routing table and interface addresses, which a capture does not carry",
    ),
    (
        "ipsec",
        "needs to know whether IPsec processed the packet, which a capture does not carry",
    ),
];

pub fn is_option_keyword(w: &str) -> bool {
    OPTION_KEYWORDS.contains(&w)
}

impl Parser<'_, '_, '_> {
    /// Options up to the end of the line.
    pub(super) fn options(&mut self) -> PResult<Vec<OptionItem>> {
        let mut options = Vec::new();
        while !self.at_end() {
            options.push(self.option_or_block()?);
        }
        Ok(options)
    }

    /// One option, or an or-block of options.
    fn option_or_block(&mut self) -> PResult<OptionItem> {
        let span = self.here();
        let Some(open) = self.eat_open() else {
            return self.option();
        };
        let mut members = vec![self.block_member()?];
        while self.eat_or() {
            members.push(self.block_member()?);
        }
        self.close(open)?;
        Ok(OptionItem {
            not: false,
            opt: Opt::Or(members),
            span,
        })
    }

    fn block_member(&mut self) -> PResult<OptionItem> {
        if matches!(self.peek_tok(), Some(Tok::LBrace | Tok::LParen)) {
            return Err(Diagnostic::new(self.here(), "or-blocks cannot nest"));
        }
        let item = self.option()?;
        if matches!(
            item.opt,
            Opt::KeepState(_) | Opt::RecordState(_) | Opt::Limit { .. } | Opt::DeferAction
        ) {
            return Err(Diagnostic::new(
                item.span,
                "state options cannot be part of an or-block",
            ));
        }
        Ok(item)
    }

    /// `[not|!] KEYWORD ARGS`.
    fn option(&mut self) -> PResult<OptionItem> {
        let mut not = self.eat_not();
        let tok = self.next("an option")?;
        let Tok::Word(mut w) = tok.tok else {
            return Err(Diagnostic::new(
                tok.span,
                format!("expected an option, found '{}'", tok.text()),
            ));
        };
        let mut span = tok.span;
        if let Some(rest) = w.strip_prefix('!').filter(|r| !r.is_empty()) {
            if not {
                return Err(Diagnostic::new(span, "double 'not'"));
            }
            not = true;
            w = rest;
            span.col += 1;
            span.len -= 1;
        }
        if matches!(w, "not" | "!") {
            return Err(Diagnostic::new(span, "double 'not'"));
        }
        if let Some((_, why)) = REFUSED_OPTIONS.iter().find(|(k, _)| *k == w) {
            return Err(Diagnostic::new(span, format!("'{w}' {why}")));
        }
        let opt = self.option_body(w, span)?;
        Ok(OptionItem { not, opt, span })
    }

    fn option_body(&mut self, w: &str, span: Span) -> PResult<Opt> {
        Ok(match w {
            "in" => Opt::In,
            "out" => Opt::Out,
            "via" | "recv" | "xmit" => self.iface_option(w)?,
            "established" | "estab" => Opt::Established,
            "setup" => Opt::Setup,
            "frag" | "fragment" => self.frag()?,
            "fib" => Opt::Fib(self.number::<u16>("a FIB number", 0x7fff)?.0),
            "keep-state" => Opt::KeepState(self.state_name(false)?),
            "record-state" => Opt::RecordState(self.state_name(false)?),
            "limit" | "set-limit" => self.limit(w == "limit")?,
            "defer-action" | "defer-immediate-action" => Opt::DeferAction,
            "icmp6types" | "icmp6type" => Opt::Icmp6Types(self.icmp6_types()?),
            "ext6hdr" => Opt::Ext6Hdr(self.name_bits("extension header", EXT6_NAMES)?),
            "flow-id" => Opt::FlowId(self.flow_ids()?),
            "lookup" => self.lookup()?,
            "flow" => {
                let (t, tspan) = self.word("table(NAME)")?;
                let inner = t
                    .strip_prefix("table(")
                    .and_then(|r| r.strip_suffix(')'))
                    .ok_or_else(|| Diagnostic::new(tspan, "flow needs table(NAME)"))?;
                let (name, value) = table_ref(inner, tspan)?;
                Opt::FlowTable(name, value)
            }
            "tcpflags" | "tcpflgs" => Opt::TcpFlags(self.flag_list("TCP flag", TCP_FLAG_NAMES)?),
            "tcpoptions" | "tcpopts" => {
                Opt::TcpOptions(self.flag_list("TCP option", TCP_OPTION_NAMES)?)
            }
            "ipoptions" | "ipopts" => Opt::IpOptions(self.flag_list("IP option", IP_OPTION_NAMES)?),
            "iptos" => Opt::IpTos(self.flag_list("TOS flag", IP_TOS_NAMES)?),
            "icmptypes" | "icmptype" => Opt::IcmpTypes(self.icmp_types()?),
            "iplen" => Opt::IpLen(self.ranges("an IP length", 65535)?),
            "ipttl" => Opt::IpTtl(self.ranges("a TTL", 255)?),
            "ipid" => Opt::IpId(self.ranges("an IP id", 65535)?),
            "tcpdatalen" => Opt::TcpDataLen(self.ranges("a TCP data length", 65535)?),
            "tcpwin" => Opt::TcpWin(self.ranges("a TCP window", 65535)?),
            "tcpmss" => Opt::TcpMss(self.ranges("a TCP MSS", 65535)?),
            "tagged" => {
                if self.peek_word() == Some("tablearg") {
                    return Err(Diagnostic::new(
                        self.here(),
                        "'tagged tablearg' is not supported in replay; give the tag numbers",
                    ));
                }
                Opt::Tagged(self.ranges("a tag", 65534)?)
            }
            "ipprecedence" => Opt::IpPrecedence(self.number::<u8>("a precedence", 7)?.0),
            "dscp" => Opt::Dscp(self.dscp_list()?),
            "tcpseq" | "tcpack" => {
                let (n, _) = self.number::<u32>("a 32-bit number", u64::from(u32::MAX))?;
                if w == "tcpseq" {
                    Opt::TcpSeq(n)
                } else {
                    Opt::TcpAck(n)
                }
            }
            "ipversion" | "ipver" => {
                let (v, vspan) = self.number::<u8>("an IP version", 6)?;
                if v != 4 && v != 6 {
                    return Err(Diagnostic::new(vspan, "ipversion must be 4 or 6"));
                }
                Opt::IpVersion(v)
            }
            "ip4" | "ipv4" => Opt::IpVersion(4),
            "ip6" | "ipv6" => Opt::IpVersion(6),
            "src-ip" | "dst-ip" | "src-ip6" | "src-ipv6" | "dst-ip6" | "dst-ipv6" => {
                let spec = self.option_addrs()?;
                let v6 = w.ends_with('6');
                if w.starts_with("src") {
                    Opt::SrcIp { v6, spec }
                } else {
                    Opt::DstIp { v6, spec }
                }
            }
            "src-port" => Opt::SrcPort(self.port_spec(false)?),
            "dst-port" => Opt::DstPort(self.port_spec(false)?),
            "proto" => {
                let (p, pspan) = self.word("a protocol")?;
                Opt::Proto(proto_of(p, pspan)?)
            }
            "mac" | "MAC" => {
                let dst = self.mac_addr()?;
                let src = self.mac_addr()?;
                Opt::Mac { dst, src }
            }
            "mac-type" => Opt::MacType(self.ether_types()?),
            "layer2" | "bridged" => Opt::Layer2,
            "diverted" => Opt::Diverted(3),
            "diverted-loopback" => Opt::Diverted(1),
            "diverted-output" => Opt::Diverted(2),
            _ => {
                let hint = if w.bytes().all(|b| b.is_ascii_digit()) {
                    " (ports go right after the address)"
                } else {
                    ""
                };
                return Err(Diagnostic::new(span, format!("unknown option '{w}'{hint}")));
            }
        })
    }

    /// `via|recv|xmit NAME|PATTERN|table(NAME)|any`.
    fn iface_option(&mut self, w: &str) -> PResult<Opt> {
        let (name, nspan) = self.word("an interface name")?;
        let dir = match w {
            "via" => IfaceDir::Via,
            "recv" => IfaceDir::Recv,
            _ => IfaceDir::Xmit,
        };
        if let Some(inner) = name
            .strip_prefix("table(")
            .and_then(|r| r.strip_suffix(')'))
        {
            let (table, value) = table_ref(inner, nspan)?;
            if value.is_some() {
                return Err(Diagnostic::new(
                    nspan,
                    "an interface table takes no value here: table(NAME)",
                ));
            }
            return Ok(Opt::ViaTable(dir, table));
        }
        if name.parse::<std::net::Ipv4Addr>().is_ok() {
            return Err(Diagnostic::new(
                nspan,
                format!(
                    "'{w} {name}' names an interface by its address, which a capture does not carry; name the interface"
                ),
            ));
        }
        if !is_ifname(name) {
            return Err(Diagnostic::new(
                nspan,
                format!("bad interface name '{name}'"),
            ));
        }
        let name = name.to_owned();
        Ok(match dir {
            IfaceDir::Via => Opt::Via(name),
            IfaceDir::Recv => Opt::Recv(name),
            IfaceDir::Xmit => Opt::Xmit(name),
        })
    }

    /// `frag` alone (a later fragment), or `frag FLAGS` with ipfw's
    /// `rf`, `df`, `mf`, `offset`, each maybe `!`.
    fn frag(&mut self) -> PResult<Opt> {
        let flag_word = |w: &str| {
            w.split(',').all(|f| {
                let f = f.strip_prefix('!').unwrap_or(f);
                FRAG_NAMES.iter().any(|(n, _)| *n == f)
            })
        };
        if !self.peek_word().is_some_and(flag_word) {
            return Ok(Opt::Frag);
        }
        let spec = self.flag_list("fragment flag", FRAG_NAMES)?;
        Ok(
            if spec
                == (FlagSpec {
                    set: 0x01,
                    clear: 0,
                })
            {
                Opt::Frag
            } else {
                Opt::FragFlags(spec)
            },
        )
    }

    /// An address list in an option (`src-ip`, `dst-ip6`, …): no `not`
    /// of its own (the option's `not` negates it).
    fn option_addrs(&mut self) -> PResult<AddrSpec> {
        if matches!(self.peek_word(), Some("not" | "!")) {
            return Err(Diagnostic::new(
                self.here(),
                "write 'not' before the option keyword",
            ));
        }
        self.addr_spec()
    }

    /// A comma list of names, each optionally prefixed with `!`.
    pub(super) fn flag_list(&mut self, what: &str, names: &[(&str, u8)]) -> PResult<FlagSpec> {
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

    /// `limit|set-limit {all|src-addr|src-port|dst-addr|dst-port}... N [:NAME]`.
    fn limit(&mut self, probe: bool) -> PResult<Opt> {
        let mut mask = 0u8;
        while let Some(bit) = self
            .peek_word()
            .and_then(|w| LIMIT_NAMES.iter().find(|(n, _)| *n == w))
            .map(|&(_, b)| b)
        {
            mask |= bit;
            self.pos += 1;
            self.eat(Tok::Comma);
        }
        if mask == 0 {
            return Err(Diagnostic::new(
                self.here(),
                "limit needs src-addr, src-port, dst-addr, dst-port or all",
            ));
        }
        let (count, span) = self.number::<u32>("a state limit", 65534)?;
        if count == 0 {
            return Err(Diagnostic::new(span, "limit must be at least 1"));
        }
        let name = self.state_name(false)?;
        Ok(Opt::Limit {
            mask,
            count,
            name,
            probe,
        })
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
            let t = parse_number(w).filter(|&t| t <= 255).ok_or_else(|| {
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
                .or_else(|| parse_number(w))
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

    /// `N`, `N-M`, comma-separated (numbers decimal or `0x` hex).
    pub(super) fn ranges(&mut self, what: &str, max: u64) -> PResult<Ranges> {
        self.range_list(what, max, parse_number)
    }

    fn range_list(
        &mut self,
        what: &str,
        max: u64,
        value: impl Fn(&str) -> Option<u64>,
    ) -> PResult<Ranges> {
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
                Some((a, b)) => (value(a).ok_or_else(bad)?, value(b).ok_or_else(bad)?),
                None => {
                    let n = value(w).ok_or_else(bad)?;
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

    /// `mac-type` values: ipfw's Ethernet type names or numbers.
    fn ether_types(&mut self) -> PResult<Ranges> {
        self.range_list("an Ethernet type", 65535, |w| {
            ETHER_TYPE_NAMES
                .iter()
                .find(|(n, _)| *n == w)
                .map(|&(_, t)| u64::from(t))
                .or_else(|| parse_number(w))
        })
    }

    fn dscp_list(&mut self) -> PResult<u64> {
        let mut bits = 0u64;
        loop {
            let (w, span) = self.word("a DSCP code")?;
            let c = dscp_code(w).ok_or_else(|| {
                Diagnostic::new(span, format!("unknown DSCP code '{w}' (a name or 0..63)"))
            })?;
            bits |= 1 << c;
            if !self.eat(Tok::Comma) {
                return Ok(bits);
            }
        }
    }

    fn flow_ids(&mut self) -> PResult<Vec<u32>> {
        let mut ids = Vec::new();
        loop {
            let (w, span) = self.word("an IPv6 flow label")?;
            let id = parse_number(w).filter(|&n| n <= 0xfffff).ok_or_else(|| {
                Diagnostic::new(span, format!("flow label '{w}' is not a number 0..0xfffff"))
            })?;
            ids.push(id as u32);
            if !self.eat(Tok::Comma) {
                return Ok(ids);
            }
        }
    }

    /// `lookup KEY NAME`.
    fn lookup(&mut self) -> PResult<Opt> {
        let (k, kspan) = self.word("a lookup key")?;
        let key = LookupKey::NAMES
            .iter()
            .find(|(n, _)| *n == k)
            .map(|&(_, key)| key)
            .ok_or_else(|| {
                let known: Vec<_> = LookupKey::NAMES.iter().map(|(n, _)| *n).collect();
                Diagnostic::new(
                    kspan,
                    format!(
                        "lookup key must be one of {}, found '{k}'",
                        known.join(", ")
                    ),
                )
            })?;
        match key {
            LookupKey::Uid => return Err(Diagnostic::new(
                kspan,
                "'lookup uid' needs the owner of a local socket, which a capture does not carry",
            )),
            LookupKey::Jail => return Err(Diagnostic::new(
                kspan,
                "'lookup jail' needs the jail of a local socket, which a capture does not carry",
            )),
            _ => {}
        }
        let (name, nspan) = self.word("a table name")?;
        if !is_table_name(name) {
            return Err(Diagnostic::new(nspan, format!("bad table name '{name}'")));
        }
        Ok(Opt::Lookup(key, name.to_owned()))
    }

    /// `any`, `ADDR`, `ADDR/LEN` or `ADDR&MASK` (ipfw's MAC forms).
    fn mac_addr(&mut self) -> PResult<MacAddr> {
        let (w, span) = self.word("a MAC address (or any)")?;
        if w == "any" {
            return Ok(MacAddr::default());
        }
        let bad = || Diagnostic::new(span, format!("bad MAC address '{w}'"));
        let (a, rest) = match w.find(['/', '&']) {
            Some(i) => (&w[..i], Some((&w[i..i + 1], &w[i + 1..]))),
            None => (w, None),
        };
        let addr = mac_bytes(a).ok_or_else(bad)?;
        let mask = match rest {
            None => [0xff; 6],
            Some(("/", len)) => {
                let len = parse_u64(len).filter(|&l| l <= 48).ok_or_else(bad)? as u32;
                let bits = if len == 0 { 0 } else { u64::MAX << (64 - len) };
                let b = (bits >> 16).to_be_bytes();
                [b[2], b[3], b[4], b[5], b[6], b[7]]
            }
            Some((_, m)) => mac_bytes(m).ok_or_else(bad)?,
        };
        let mut addr = addr;
        for (a, m) in addr.iter_mut().zip(mask) {
            *a &= m;
        }
        Ok(MacAddr { addr, mask })
    }
}

/// `aa:bb:cc:dd:ee:ff` (one or two hex digits a part, as ether_aton).
fn mac_bytes(w: &str) -> Option<[u8; 6]> {
    let mut out = [0u8; 6];
    let mut parts = w.split(':');
    for b in &mut out {
        let p = parts.next()?;
        if p.is_empty() || p.len() > 2 {
            return None;
        }
        *b = u8::from_str_radix(p, 16).ok()?;
    }
    parts.next().is_none().then_some(out)
}
