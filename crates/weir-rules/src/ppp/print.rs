//! The canonical form of ppp filters: `parse(print(f)) == f`.

use super::{Endpoint, Filter, FilterSet, PppFilters, Verb};
use crate::ast::Port;
use std::fmt::{self, Display, Formatter};

impl Display for Endpoint {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Any => f.write_str("any"),
            Endpoint::Net(a, w) if *w == if a.is_ipv4() { 32 } else { 128 } => write!(f, "{a}"),
            Endpoint::Net(a, w) => write!(f, "{a}/{w}"),
            Endpoint::Host(name, 32, _) => f.write_str(name),
            Endpoint::Host(name, w, _) => write!(f, "{name}/{w}"),
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
    /// The rule as it follows `set filter SET`, in the order ppp reads it.
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.number, self.action)?;
        if self.invert {
            f.write_str(" !")?;
        }
        if let Some((s, d)) = &self.addrs {
            write!(f, " {s} {d}")?;
        }
        if let Some(p) = &self.proto {
            write!(f, " {}", p.name)?;
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
        if let Some(t) = self.icmp_type {
            write!(f, " src eq {t}")?;
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

/// The whole file in canonical form, a filter file whatever was read.
pub fn print(filters: &PppFilters) -> String {
    let mut out = String::new();
    for set in FilterSet::ALL {
        for r in filters.rules(set) {
            out.push_str(&format!("set filter {} {r}\n", set.word()));
        }
    }
    out
}
