//! Prints rules in canonical ipfw form; `parse(print(r)) == r`.
//!
//! `Display for Rule` gives the text after the number, as `ipfw show` prints
//! it after the counters; [`print_ruleset`] gives a whole file.

use crate::ast::*;
use crate::parse::{IP_OPTION_NAMES, IP_TOS_NAMES, TCP_FLAG_NAMES, UNREACH_CODES};
use std::fmt::{self, Display, Formatter, Write};

/// A whole ruleset, one `NUMBER TEXT` line per rule.
pub fn print_ruleset(rs: &Ruleset) -> String {
    let mut out = String::new();
    for s in &rs.settings {
        let _ = writeln!(out, "net.inet.ip.fw.{}={}", s.name, s.value);
    }
    for e in &rs.table_entries {
        let _ = writeln!(
            out,
            "table {} add {}/{} {}",
            e.table, e.addr, e.len, e.value
        );
    }
    for r in &rs.rules {
        let _ = writeln!(out, "{} {}", r.number, r);
    }
    out
}

impl Display for Rule {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.action)?;
        if let Some(log) = self.log {
            f.write_str(" log")?;
            if let Some(n) = log.amount {
                write!(f, " logamount {n}")?;
            }
        }
        let bodyless = matches!(self.action, Action::CheckState | Action::Return)
            && self.body == Body::match_all();
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
        match *self {
            Action::Allow => f.write_str("allow"),
            Action::Deny => f.write_str("deny"),
            Action::Reject => f.write_str("reject"),
            Action::Reset => f.write_str("reset"),
            Action::Count => f.write_str("count"),
            Action::Return => f.write_str("return"),
            Action::CheckState => f.write_str("check-state"),
            Action::Skipto(n) => write!(f, "skipto {n}"),
            Action::SkiptoTablearg => f.write_str("skipto tablearg"),
            Action::Call(n) => write!(f, "call {n}"),
            Action::Unreach(code) => match UNREACH_CODES.iter().find(|(_, c)| *c == code) {
                Some((name, _)) => write!(f, "unreach {name}"),
                None => write!(f, "unreach {code}"),
            },
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
        }
    }
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
        match &self.opt {
            Opt::In => f.write_str("in"),
            Opt::Out => f.write_str("out"),
            Opt::Via(i) => write!(f, "via {i}"),
            Opt::Recv(i) => write!(f, "recv {i}"),
            Opt::Xmit(i) => write!(f, "xmit {i}"),
            Opt::Established => f.write_str("established"),
            Opt::Setup => f.write_str("setup"),
            Opt::Frag => f.write_str("frag"),
            Opt::KeepState => f.write_str("keep-state"),
            Opt::RecordState => f.write_str("record-state"),
            Opt::Limit { mask, count } => {
                f.write_str("limit")?;
                for (name, bit) in LIMIT_NAMES {
                    if mask & bit != 0 {
                        write!(f, " {name}")?;
                    }
                }
                write!(f, " {count}")
            }
            Opt::Icmp6Types(bits) => {
                let types: Vec<usize> = (0..256)
                    .filter(|t| bits[t / 64] & (1 << (t % 64)) != 0)
                    .collect();
                write_joined(f, "icmp6types ", ",", "", &types)
            }
            Opt::Ext6Hdr(bits) => {
                let names: Vec<&str> = EXT6_NAMES
                    .iter()
                    .filter(|(_, b)| bits & b != 0)
                    .map(|(n, _)| *n)
                    .collect();
                write_joined(f, "ext6hdr ", ",", "", &names)
            }
            Opt::Lookup(key, table) => write!(f, "lookup {} {table}", key.word()),
            Opt::TcpFlags(s) => write_flags(f, "tcpflags", *s, TCP_FLAG_NAMES),
            Opt::IpOptions(s) => write_flags(f, "ipoptions", *s, IP_OPTION_NAMES),
            Opt::IpTos(s) => write_flags(f, "iptos", *s, IP_TOS_NAMES),
            Opt::IcmpTypes(bits) => {
                let types: Vec<u32> = (0..32).filter(|t| bits & (1 << t) != 0).collect();
                write_joined(f, "icmptypes ", ",", "", &types)
            }
            Opt::IpLen(r) => write_ranges(f, "iplen", r),
            Opt::IpTtl(r) => write_ranges(f, "ipttl", r),
            Opt::IpVersion(v) => write!(f, "ipversion {v}"),
        }
    }
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

fn write_flags(f: &mut Formatter<'_>, kw: &str, s: FlagSpec, names: &[(&str, u8)]) -> fmt::Result {
    let words: Vec<String> = names
        .iter()
        .filter(|(_, b)| s.set & b != 0)
        .map(|(n, _)| n.to_string())
        .chain(
            names
                .iter()
                .filter(|(_, b)| s.clear & b != 0)
                .map(|(n, _)| format!("!{n}")),
        )
        .collect();
    write_joined(f, &format!("{kw} "), ",", "", &words)
}

fn write_ranges(f: &mut Formatter<'_>, kw: &str, ranges: &Ranges) -> fmt::Result {
    write!(f, "{kw} {}", range_list(ranges))
}

/// `40-60,1500`: inclusive ranges as rules write them.
pub fn range_list(ranges: &[(u16, u16)]) -> String {
    let words: Vec<String> = ranges
        .iter()
        .map(|&(lo, hi)| {
            if lo == hi {
                lo.to_string()
            } else {
                format!("{lo}-{hi}")
            }
        })
        .collect();
    words.join(",")
}
