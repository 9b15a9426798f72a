//! Prints rules in canonical ipfw form; `parse(print(r)) == r`.
//!
//! `Display for Rule` gives the text after the number, as `ipfw show` prints
//! it after the counters; [`print_ruleset`] gives a whole file.

use crate::ast::*;
use crate::parse::{IP_OPTION_NAMES, IP_TOS_NAMES, TCP_FLAG_NAMES, UNREACH6_CODES, UNREACH_CODES};
use std::fmt::{self, Display, Formatter, Write};

/// A whole ruleset: settings, disabled sets, table commands, then one
/// `NUMBER TEXT` line per rule.
pub fn print_ruleset(rs: &Ruleset) -> String {
    let mut out = String::new();
    for s in &rs.settings {
        if s.name.contains('.') {
            let _ = writeln!(out, "{}={}", s.name, s.value);
        } else {
            let _ = writeln!(out, "net.inet.ip.fw.{}={}", s.name, s.value);
        }
    }
    if rs.disabled_sets != 0 {
        let sets: Vec<u32> = (0..32).filter(|s| rs.disabled_sets >> s & 1 == 1).collect();
        let _ = writeln!(out, "ipfw set disable {}", join(&sets, " "));
    }
    for t in &rs.tables {
        let _ = writeln!(out, "{t}");
    }
    for r in &rs.rules {
        let _ = writeln!(out, "{} {}", r.number, r);
    }
    out
}

impl Display for TableCmd {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let quiet = matches!(self.op, TableOp::Add { update: true, .. });
        if quiet {
            f.write_str("ipfw -q ")?;
        }
        write!(f, "table {} ", self.table)?;
        match &self.op {
            TableOp::Create(kind, types) => {
                f.write_str("create type ")?;
                match kind {
                    TableKind::Addr => f.write_str("addr"),
                    TableKind::Iface => f.write_str("iface"),
                    TableKind::Number => f.write_str("number"),
                    TableKind::Flow(mask) => {
                        let fields: Vec<&str> = FLOW_FIELDS
                            .iter()
                            .filter(|(_, b)| mask & b != 0)
                            .map(|(n, _)| *n)
                            .collect();
                        write!(f, "flow:{}", fields.join(","))
                    }
                }?;
                if !types.is_legacy() {
                    let names: Vec<&str> = types.fields().map(ValueField::name).collect();
                    write!(f, " valtype {}", names.join(","))?;
                }
                Ok(())
            }
            TableOp::Add { key, value, .. } => write!(f, "add {key} {value}"),
            TableOp::Delete(key) => write!(f, "delete {key}"),
            TableOp::Flush => f.write_str("flush"),
            TableOp::Destroy => f.write_str("destroy"),
            TableOp::Swap(other) => write!(f, "swap {other}"),
        }
    }
}

impl Display for TableValue {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let TableValue::Typed(v) = self else {
            return write!(f, "{}", self.number(ValueField::Tag));
        };
        for (k, field) in v.types.fields().enumerate() {
            if k > 0 {
                f.write_str(",")?;
            }
            match field {
                ValueField::Nh4 => write!(f, "{}", std::net::Ipv4Addr::from(v.number(field)))?,
                ValueField::Nh6 => write!(f, "{}", std::net::Ipv6Addr::from(v.nh6))?,
                _ => write!(f, "{}", v.number(field))?,
            }
        }
        Ok(())
    }
}

impl Display for TableKey {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            TableKey::Prefix(a, l) => write!(f, "{a}/{l}"),
            TableKey::Iface(n) => f.write_str(n),
            TableKey::Number(n) => write!(f, "{n}"),
            TableKey::Flow(k) => {
                let mut parts: Vec<String> = Vec::new();
                parts.extend(k.src.map(|a| a.to_string()));
                parts.extend(k.proto.as_ref().map(|p| p.to_string()));
                parts.extend(k.src_port.as_ref().map(|p| p.to_string()));
                parts.extend(k.dst.map(|a| a.to_string()));
                parts.extend(k.dst_port.as_ref().map(|p| p.to_string()));
                f.write_str(&parts.join(","))
            }
        }
    }
}

impl Display for Rule {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if self.head.set != 0 {
            write!(f, "set {} ", self.head.set)?;
        }
        if let Some(p) = self.head.prob {
            write!(f, "prob {} ", p.as_f64())?;
        }
        write!(f, "{}", self.action)?;
        if let Some(log) = self.log {
            f.write_str(" log")?;
            if let Some(n) = log.amount {
                write!(f, " logamount {n}")?;
            }
        }
        if let Some(q) = &self.head.altq {
            write!(f, " altq {q}")?;
        }
        match self.head.tag {
            Some(TagOp::Tag(n)) => write!(f, " tag {n}")?,
            Some(TagOp::Untag(n)) => write!(f, " untag {n}")?,
            None => {}
        }
        let bodyless = self.action.bodyless() && self.body == Body::match_all();
        if !bodyless {
            write!(f, " {}", self.body)?;
        }
        if let Some(c) = &self.comment {
            write!(f, " // {c}")?;
        }
        Ok(())
    }
}

impl Display for Action {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let named = |f: &mut Formatter<'_>, kw: &str, names: &[(&str, u8)], code: u8| match names
            .iter()
            .find(|(_, c)| *c == code)
        {
            Some((name, _)) => write!(f, "{kw} {name}"),
            None => write!(f, "{kw} {code}"),
        };
        match self {
            Action::Unreach(code) => named(f, "unreach", UNREACH_CODES, *code),
            Action::Unreach6(code) => named(f, "unreach6", UNREACH6_CODES, *code),
            Action::Skipto(n) => write!(f, "skipto {n}"),
            Action::SkiptoTablearg => f.write_str("skipto tablearg"),
            Action::Call(n) => write!(f, "call {n}"),
            Action::CheckState(None) => f.write_str("check-state"),
            Action::CheckState(Some(name)) => write!(f, "check-state :{name}"),
            Action::Pipe(a) | Action::Queue(a) | Action::Netgraph(a) | Action::Ngtee(a) => {
                write!(f, "{} {a}", self.word())
            }
            Action::SetFib(a) => write!(f, "setfib {a}"),
            Action::SetDscp(Arg::Number(c)) => {
                match DSCP_NAMES.iter().find(|(_, v)| u32::from(*v) == *c) {
                    Some((name, _)) => write!(f, "setdscp {name}"),
                    None => write!(f, "setdscp {c}"),
                }
            }
            Action::SetDscp(Arg::Tablearg) => f.write_str("setdscp tablearg"),
            Action::Divert(p) | Action::Tee(p) => match p {
                DivertPort::Port(port) => write!(f, "{} {port}", self.word()),
                DivertPort::Tablearg => write!(f, "{} tablearg", self.word()),
            },
            Action::Nat(NatArg::Number(n)) => write!(f, "nat {n}"),
            Action::Nat(NatArg::Global) => f.write_str("nat global"),
            Action::Nat(NatArg::Tablearg) => f.write_str("nat tablearg"),
            Action::Fwd(t) => {
                f.write_str("fwd ")?;
                match (t.addr, t.port) {
                    (Some(std::net::IpAddr::V6(a)), Some(p)) => write!(f, "[{a}]:{p}"),
                    (Some(a), Some(p)) => write!(f, "{a},{p}"),
                    (Some(a), None) => write!(f, "{a}"),
                    (None, Some(p)) => write!(f, "tablearg,{p}"),
                    (None, None) => f.write_str("tablearg"),
                }
            }
            Action::TcpSetMss(n) => write!(f, "tcp-setmss {n}"),
            _ => f.write_str(self.word()),
        }
    }
}

impl Display for Arg {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Arg::Number(n) => write!(f, "{n}"),
            Arg::Tablearg => f.write_str("tablearg"),
        }
    }
}

impl Display for Body {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if let [p] = self.proto.as_slice() {
            write!(f, "{p}")?;
        } else {
            write_joined(f, "{ ", " or ", " }", &self.proto)?;
        }
        write!(f, " from {}", self.src)?;
        if let Some(p) = &self.src_ports {
            write!(f, " {p}")?;
        }
        write!(f, " to {}", self.dst)?;
        if let Some(p) = &self.dst_ports {
            write!(f, " {p}")?;
        }
        for o in &self.options {
            write!(f, " {o}")?;
        }
        Ok(())
    }
}

impl Display for Proto {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Proto::Any => f.write_str("ip"),
            Proto::Ip4 => f.write_str("ip4"),
            Proto::Ip6 => f.write_str("ip6"),
            Proto::Number(n) => write!(f, "{n}"),
            Proto::Name(n, _) => f.write_str(n),
        }
    }
}

impl Display for AddrSpec {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if self.not {
            f.write_str("not ")?;
        }
        if self.or_block {
            write_joined(f, "{ ", " or ", " }", &self.items)
        } else {
            write_joined(f, "", ",", "", &self.items)
        }
    }
}

impl Display for Addr {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Addr::Any => f.write_str("any"),
            Addr::Me => f.write_str("me"),
            Addr::Me6 => f.write_str("me6"),
            Addr::Prefix(a, len) => {
                let full = if a.is_ipv4() { 32 } else { 128 };
                if *len == full {
                    write!(f, "{a}")
                } else {
                    write!(f, "{a}/{len}")
                }
            }
            Addr::Masked(a, m) => write!(f, "{a}:{m}"),
            Addr::Table(n, None, _) => write!(f, "table({n})"),
            Addr::Table(n, Some(v), _) => write!(f, "table({n},{v})"),
            Addr::Set { base, len, members } => {
                let low = u32::from(*base) & 0xff;
                let hosts: Vec<(u32, u32)> = runs(members, 1 << (32 - u32::from(*len)))
                    .into_iter()
                    .map(|(a, b)| (a + low, b + low))
                    .collect();
                write!(f, "{base}/{len}{{{}}}", range_words(&hosts).join(","))
            }
            Addr::Not(a) => write!(f, "not {a}"),
        }
    }
}

/// Runs of set bits among the first `n` bits: (first, last) each.
fn runs(bits: &[u64; 4], n: u32) -> Vec<(u32, u32)> {
    let set = |k: u32| bits[(k / 64) as usize] >> (k % 64) & 1 == 1;
    let mut out = Vec::new();
    let mut k = 0;
    while k < n {
        if set(k) {
            let start = k;
            while k + 1 < n && set(k + 1) {
                k += 1;
            }
            out.push((start, k));
        }
        k += 1;
    }
    out
}

fn range_words(ranges: &[(u32, u32)]) -> Vec<String> {
    ranges
        .iter()
        .map(|&(lo, hi)| {
            if lo == hi {
                lo.to_string()
            } else {
                format!("{lo}-{hi}")
            }
        })
        .collect()
}

impl Display for PortSpec {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if self.not {
            f.write_str("not ")?;
        }
        write_joined(f, "", ",", "", &self.items)
    }
}

impl Display for PortRange {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.lo)?;
        if let Some(hi) = &self.hi {
            write!(f, "-{hi}")?;
        }
        Ok(())
    }
}

impl Display for Port {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Port::Number(n) => write!(f, "{n}"),
            Port::Name(n, _) => f.write_str(&n.replace('-', "\\-")),
        }
    }
}

impl Display for OptionItem {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if self.not {
            f.write_str("not ")?;
        }
        write!(f, "{}", self.opt)
    }
}

impl Display for Opt {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let state_name = |f: &mut Formatter<'_>, name: &StateName| match name {
            Some(n) => write!(f, " :{n}"),
            None => Ok(()),
        };
        match self {
            Opt::In => f.write_str("in"),
            Opt::Out => f.write_str("out"),
            Opt::Via(i) => write!(f, "via {i}"),
            Opt::Recv(i) => write!(f, "recv {i}"),
            Opt::Xmit(i) => write!(f, "xmit {i}"),
            Opt::ViaTable(dir, t) => {
                let kw = match dir {
                    IfaceDir::Via => "via",
                    IfaceDir::Recv => "recv",
                    IfaceDir::Xmit => "xmit",
                };
                write!(f, "{kw} table({t})")
            }
            Opt::Established => f.write_str("established"),
            Opt::Setup => f.write_str("setup"),
            Opt::Frag => f.write_str("frag"),
            Opt::FragFlags(s) => write_flags(f, "frag", *s, FRAG_NAMES),
            Opt::KeepState(name) => {
                f.write_str("keep-state")?;
                state_name(f, name)
            }
            Opt::RecordState(name) => {
                f.write_str("record-state")?;
                state_name(f, name)
            }
            Opt::Limit {
                mask,
                count,
                name,
                probe,
            } => {
                f.write_str(if *probe { "limit" } else { "set-limit" })?;
                for (word, bit) in LIMIT_NAMES.iter().filter(|(w, _)| *w != "all") {
                    if mask & bit != 0 {
                        write!(f, " {word}")?;
                    }
                }
                write!(f, " {count}")?;
                state_name(f, name)
            }
            Opt::DeferAction => f.write_str("defer-action"),
            Opt::Icmp6Types(bits) => {
                let types: Vec<usize> = (0..256)
                    .filter(|t| bits[t / 64] & (1 << (t % 64)) != 0)
                    .collect();
                write!(f, "icmp6types {}", join(&types, ","))
            }
            Opt::Ext6Hdr(bits) => write!(f, "ext6hdr {}", names_of(*bits, EXT6_NAMES)),
            Opt::FlowId(ids) => write!(f, "flow-id {}", join(ids, ",")),
            Opt::Lookup(key, table) => write!(f, "lookup {} {table}", key.word()),
            Opt::FlowTable(t, None) => write!(f, "flow table({t})"),
            Opt::FlowTable(t, Some(v)) => write!(f, "flow table({t},{v})"),
            Opt::TcpFlags(s) => write_flags(f, "tcpflags", *s, TCP_FLAG_NAMES),
            Opt::TcpOptions(s) => write_flags(f, "tcpoptions", *s, TCP_OPTION_NAMES),
            Opt::IpOptions(s) => write_flags(f, "ipoptions", *s, IP_OPTION_NAMES),
            Opt::IpTos(s) => write_flags(f, "iptos", *s, IP_TOS_NAMES),
            Opt::IcmpTypes(bits) => {
                let types: Vec<u32> = (0..32).filter(|t| bits & (1 << t) != 0).collect();
                write!(f, "icmptypes {}", join(&types, ","))
            }
            Opt::IpLen(r) => write!(f, "iplen {}", range_list(r)),
            Opt::IpTtl(r) => write!(f, "ipttl {}", range_list(r)),
            Opt::IpId(r) => write!(f, "ipid {}", range_list(r)),
            Opt::TcpDataLen(r) => write!(f, "tcpdatalen {}", range_list(r)),
            Opt::TcpWin(r) => write!(f, "tcpwin {}", range_list(r)),
            Opt::TcpMss(r) => write!(f, "tcpmss {}", range_list(r)),
            Opt::Tagged(r) => write!(f, "tagged {}", range_list(r)),
            Opt::MacType(r) => {
                let words: Vec<String> = r
                    .iter()
                    .map(|&(lo, hi)| {
                        if lo == hi {
                            format!("0x{lo:04x}")
                        } else {
                            format!("0x{lo:04x}-0x{hi:04x}")
                        }
                    })
                    .collect();
                write!(f, "mac-type {}", words.join(","))
            }
            Opt::IpPrecedence(p) => write!(f, "ipprecedence {p}"),
            Opt::Dscp(bits) => {
                let codes: Vec<String> = (0..64u8)
                    .filter(|c| bits >> c & 1 == 1)
                    .map(|c| match DSCP_NAMES.iter().find(|(_, v)| *v == c) {
                        Some((n, _)) => (*n).to_owned(),
                        None => c.to_string(),
                    })
                    .collect();
                write!(f, "dscp {}", codes.join(","))
            }
            Opt::TcpSeq(n) => write!(f, "tcpseq {n}"),
            Opt::TcpAck(n) => write!(f, "tcpack {n}"),
            Opt::IpVersion(v) => write!(f, "ipversion {v}"),
            Opt::SrcIp { v6, spec } => write!(f, "src-ip{} {spec}", if *v6 { "6" } else { "" }),
            Opt::DstIp { v6, spec } => write!(f, "dst-ip{} {spec}", if *v6 { "6" } else { "" }),
            Opt::SrcPort(p) => write!(f, "src-port {p}"),
            Opt::DstPort(p) => write!(f, "dst-port {p}"),
            Opt::Proto(p) => write!(f, "proto {p}"),
            Opt::Fib(n) => write!(f, "fib {n}"),
            Opt::Mac { dst, src } => write!(f, "mac {dst} {src}"),
            Opt::Layer2 => f.write_str("layer2"),
            Opt::Diverted(3) => f.write_str("diverted"),
            Opt::Diverted(1) => f.write_str("diverted-loopback"),
            Opt::Diverted(_) => f.write_str("diverted-output"),
            Opt::Or(items) => write_joined(f, "{ ", " or ", " }", items),
        }
    }
}

impl Display for MacAddr {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if self.mask == [0; 6] {
            return f.write_str("any");
        }
        let hex = |b: &[u8; 6]| {
            b.iter()
                .map(|x| format!("{x:02x}"))
                .collect::<Vec<_>>()
                .join(":")
        };
        write!(f, "{}", hex(&self.addr))?;
        let bits = u64::from_be_bytes([
            0,
            0,
            self.mask[0],
            self.mask[1],
            self.mask[2],
            self.mask[3],
            self.mask[4],
            self.mask[5],
        ]);
        let ones = (bits << 16).leading_ones();
        if bits.count_ones() == ones && ones == 48 {
            Ok(())
        } else if bits.count_ones() == ones {
            write!(f, "/{ones}")
        } else {
            write!(f, "&{}", hex(&self.mask))
        }
    }
}

fn names_of(bits: u8, names: &[(&str, u8)]) -> String {
    let words: Vec<&str> = names
        .iter()
        .filter(|(_, b)| bits & b != 0)
        .map(|(n, _)| *n)
        .collect();
    words.join(",")
}

fn join<T: Display>(items: &[T], sep: &str) -> String {
    items
        .iter()
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(sep)
}

fn write_joined<T: Display>(
    f: &mut Formatter<'_>,
    open: &str,
    sep: &str,
    close: &str,
    items: &[T],
) -> fmt::Result {
    f.write_str(open)?;
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(sep)?;
        }
        write!(f, "{item}")?;
    }
    f.write_str(close)
}

/// Set names then `!`names; a name is printed when all its bits are there
/// (and they are then used up), so names of several bits go first.
fn write_flags(f: &mut Formatter<'_>, kw: &str, s: FlagSpec, names: &[(&str, u8)]) -> fmt::Result {
    let pick = |mut bits: u8, neg: &str| {
        let mut out = Vec::new();
        for (n, b) in names {
            if *b != 0 && bits & b == *b {
                out.push(format!("{neg}{n}"));
                bits &= !b;
            }
        }
        out
    };
    let mut words = pick(s.set, "");
    words.extend(pick(s.clear, "!"));
    write!(f, "{kw} {}", words.join(","))
}

/// `40-60,1500`: inclusive ranges as rules write them.
pub fn range_list(ranges: &[(u16, u16)]) -> String {
    let r: Vec<(u32, u32)> = ranges
        .iter()
        .map(|&(a, b)| (u32::from(a), u32::from(b)))
        .collect();
    range_words(&r).join(",")
}
