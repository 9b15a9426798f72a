//! The header space: which packet fields the analysis models, as BDD
//! variables, and the sets of packets that can exist.
//!
//! A point of the space is one decoded IP packet as the engine sees it
//! (`weir_wire::Packet`): version, protocol, later-fragment and
//! more-fragments bits, direction, interface, addresses, ports, TCP flags,
//! ICMP type. IPv4 and IPv6 addresses are separate fields: a packet's
//! other family's address, and fields it does not carry (ports of a
//! packet without them, flags of a non-TCP packet), are free variables
//! no rule tests, so the sets stay small; a witness takes them as 0.
//! Interfaces are classes: the names the ruleset's patterns match, plus
//! "any other name" and "no name", one representative name each.
//!
//! The variable order puts the most decisive bits first: family and
//! protocol, then addresses from the high bit down, then ports.

use crate::bdd::{Bdd, Set, FALSE, TRUE};
use weir_engine::iface_matches;
use weir_wire::proto;

/// A field: `bits` variables from `at`, most significant first.
#[derive(Clone, Copy, Debug)]
pub struct Field {
    pub at: u16,
    pub bits: u16,
    /// Variables between one bit and the next (2 where two fields'
    /// bits alternate).
    pub stride: u16,
}

pub const V6: Field = Field {
    at: 0,
    bits: 1,
    stride: 1,
};
pub const PROTO: Field = Field {
    at: 1,
    bits: 8,
    stride: 1,
};
pub const LATER: Field = Field {
    at: 9,
    bits: 1,
    stride: 1,
};
pub const MF: Field = Field {
    at: 10,
    bits: 1,
    stride: 1,
};
/// 0 in, 1 out.
pub const OUT: Field = Field {
    at: 11,
    bits: 1,
    stride: 1,
};
pub const IFACE: Field = Field {
    at: 12,
    bits: 10,
    stride: 1,
};
pub const SRC4: Field = Field {
    at: 54,
    bits: 32,
    stride: 1,
};
pub const DST4: Field = Field {
    at: 22,
    bits: 32,
    stride: 1,
};
pub const SRC6: Field = Field {
    at: 214,
    bits: 128,
    stride: 1,
};
pub const DST6: Field = Field {
    at: 86,
    bits: 128,
    stride: 1,
};
pub const SPORT: Field = Field {
    at: 342,
    bits: 16,
    stride: 1,
};
pub const DPORT: Field = Field {
    at: 358,
    bits: 16,
    stride: 1,
};
pub const FLAGS: Field = Field {
    at: 374,
    bits: 8,
    stride: 1,
};
pub const ICMP_TYPE: Field = Field {
    at: 382,
    bits: 8,
    stride: 1,
};
const VARS: u16 = 390;

/// What an IPv6 packet's protocol can never be once the decoder walked
/// its extension headers (unless it is a later fragment).
const V6_EXT: [u8; 5] = [
    proto::HOPOPT,
    proto::IPV6_ROUTE,
    proto::IPV6_FRAG,
    proto::AH,
    proto::IPV6_OPTS,
];

/// Which address of a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Src,
    Dst,
}

/// Most decision-diagram nodes one analysis makes (about 28 bytes each
/// with the tables that find them): the bound on its memory.
pub const MAX_NODES: usize = 1 << 25;

/// Most interface classes (names the ruleset tells apart).
const MAX_IFACES: usize = 1 << 10;

/// The space, its node table, and the sets every rule is built from.
pub struct Space {
    pub bdd: Bdd,
    /// One name per interface class (`None`: a capture that names none).
    pub ifaces: Vec<Option<String>>,
    /// Every packet that can exist.
    pub universe: Set,
    pub v4: Set,
    pub v6: Set,
    pub later: Set,
    pub has_ports: Set,
    pub tcp_header: Set,
    pub has_icmp: Set,
    pub dir_in: Set,
    pub dir_out: Set,
}

impl Space {
    /// The space for rulesets whose interface patterns are `patterns`.
    pub fn new<'a>(patterns: impl IntoIterator<Item = &'a str>) -> Space {
        let ifaces = iface_classes(&patterns.into_iter().collect::<Vec<_>>());
        let mut bdd = Bdd::with_limit(VARS, MAX_NODES);
        let v6 = bdd.var(V6.at, true);
        let v4 = bdd.var(V6.at, false);
        let later = bdd.var(LATER.at, true);
        let dir_out = bdd.var(OUT.at, true);
        let dir_in = bdd.var(OUT.at, false);
        let mut s = Space {
            bdd,
            ifaces,
            universe: TRUE,
            v4,
            v6,
            later,
            has_ports: FALSE,
            tcp_header: FALSE,
            has_icmp: FALSE,
            dir_in,
            dir_out,
        };
        let first = s.bdd.not(later);
        let port_protos = proto::WITH_PORTS.map(|p| s.eq(PROTO, u128::from(p)));
        let carries_ports = s.bdd.any(port_protos);
        s.has_ports = s.bdd.and(carries_ports, first);
        let tcp = s.eq(PROTO, u128::from(proto::TCP));
        s.tcp_header = s.bdd.and(tcp, first);
        let icmp4 = s.eq(PROTO, u128::from(proto::ICMP));
        let icmp4 = s.bdd.and(icmp4, v4);
        let icmp6 = s.eq(PROTO, u128::from(proto::ICMPV6));
        let icmp6 = s.bdd.and(icmp6, v6);
        let icmp = s.bdd.or(icmp4, icmp6);
        s.has_icmp = s.bdd.and(icmp, first);
        s.universe = s.make_universe();
        s
    }

    /// Interface classes that exist, and IPv6 protocols the decoder can
    /// leave (it walks past extension headers).
    fn make_universe(&mut self) -> Set {
        let last = (self.ifaces.len() - 1) as u128;
        let u = self.range(IFACE, 0, last);
        let ext = V6_EXT.map(|p| self.eq(PROTO, u128::from(p)));
        let ext = self.bdd.any(ext);
        let v6_first = self.bdd.minus(self.v6, self.later);
        let bad = self.bdd.and(v6_first, ext);
        self.bdd.minus(u, bad)
    }

    /// `a → b`.
    pub fn implies(&mut self, a: Set, b: Set) -> Set {
        let na = self.bdd.not(a);
        self.bdd.or(na, b)
    }

    fn var(f: Field, bit_from_msb: u16) -> u16 {
        f.at + bit_from_msb * f.stride
    }

    /// Packets whose `field` equals `value` in the bits of `mask`.
    pub fn masked(&mut self, f: Field, value: u128, mask: u128) -> Set {
        let mut s = TRUE;
        for k in (0..f.bits).rev() {
            let bit = f.bits - 1 - k; // bit number from the least significant
            if mask >> bit & 1 == 1 {
                let v = Self::var(f, k);
                s = if value >> bit & 1 == 1 {
                    self.bdd.node(v, FALSE, s)
                } else {
                    self.bdd.node(v, s, FALSE)
                };
            }
        }
        s
    }

    /// Packets of IP `version` whose `side` address is `value` in the
    /// bits of `mask` (both as `weir_wire` holds addresses: IPv4 mapped).
    pub fn addr(&mut self, side: Side, version: u8, value: u128, mask: u128) -> Set {
        let (f, family, value, mask) = match (version, side) {
            (4, Side::Src) => (SRC4, self.v4, value as u32 as u128, mask as u32 as u128),
            (4, Side::Dst) => (DST4, self.v4, value as u32 as u128, mask as u32 as u128),
            (_, Side::Src) => (SRC6, self.v6, value, mask),
            (_, Side::Dst) => (DST6, self.v6, value, mask),
        };
        if value & !mask != 0 {
            return FALSE;
        }
        let m = self.masked(f, value, mask);
        self.bdd.and(m, family)
    }

    pub fn eq(&mut self, f: Field, value: u128) -> Set {
        if f.bits < 128 && value >> f.bits != 0 {
            return FALSE;
        }
        self.masked(f, value, !0)
    }

    /// Packets with `lo <= field <= hi` (fields up to 64 bits).
    pub fn range(&mut self, f: Field, lo: u128, hi: u128) -> Set {
        if lo > hi {
            return FALSE;
        }
        let (mut ge, mut le) = (TRUE, TRUE);
        for k in (0..f.bits).rev() {
            let bit = f.bits - 1 - k;
            let v = Self::var(f, k);
            ge = if lo >> bit & 1 == 1 {
                self.bdd.node(v, FALSE, ge)
            } else {
                self.bdd.node(v, ge, TRUE)
            };
            le = if hi >> bit & 1 == 1 {
                self.bdd.node(v, TRUE, le)
            } else {
                self.bdd.node(v, le, FALSE)
            };
        }
        self.bdd.and(ge, le)
    }

    /// Packets whose `field` has every bit of `set` and none of `clear`.
    pub fn flags(&mut self, f: Field, set: u128, clear: u128) -> Set {
        if set & clear != 0 {
            return FALSE;
        }
        self.masked(f, set, set | clear)
    }

    /// Interface classes whose name matches `pattern`.
    pub fn iface(&mut self, pattern: &str) -> Set {
        let hits: Vec<u128> = (0..self.ifaces.len())
            .filter(|&k| {
                self.ifaces[k]
                    .as_deref()
                    .is_some_and(|n| iface_matches(pattern, n))
            })
            .map(|k| k as u128)
            .collect();
        let sets: Vec<Set> = hits.into_iter().map(|k| self.eq(IFACE, k)).collect();
        self.bdd.any(sets)
    }

    /// Reads a field out of a picked assignment.
    pub fn read(bits: &[bool], f: Field) -> u128 {
        (0..f.bits).fold(0u128, |v, k| {
            v << 1 | u128::from(bits[usize::from(Self::var(f, k))])
        })
    }
}

/// Names standing for every class of interface the patterns tell apart:
/// a name few patterns match, "no name" (which no pattern matches), each
/// exact name, each wildcard's prefix with a few endings. Equal classes keep the
/// first name.
fn iface_classes(patterns: &[&str]) -> Vec<Option<String>> {
    let mut names: Vec<Option<String>> = vec![Some("other0".into()), None];
    for p in patterns {
        match p.strip_suffix('*') {
            Some(prefix) => {
                for end in ["", "0", "~"] {
                    names.push(Some(format!("{prefix}{end}")));
                }
            }
            None => names.push(Some(p.to_string())),
        }
    }
    let class = |name: &Option<String>| -> Vec<bool> {
        patterns
            .iter()
            .map(|p| name.as_deref().is_some_and(|n| iface_matches(p, n)))
            .collect()
    };
    let mut seen = Vec::new();
    let mut out = Vec::new();
    for n in names {
        if n.as_deref() == Some("") {
            continue;
        }
        let c = class(&n);
        if !seen.contains(&c) && out.len() < MAX_IFACES {
            seen.push(c);
            out.push(n);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_and_prefixes_count_right() {
        let mut s = Space::new([]);
        let r = s.range(DPORT, 20, 29);
        let whole = 2f64.powi(i32::from(VARS - DPORT.bits));
        assert_eq!(s.bdd.count(r), 10.0 * whole);
        let p = s.addr(
            Side::Src,
            4,
            weir_wire::v4_mapped(0x0a00_0000),
            !0u128 << 24,
        );
        assert_eq!(s.bdd.count(p), 2f64.powi(i32::from(VARS) - 1 - 8));
        let f = s.flags(FLAGS, 0x02, 0x10);
        assert_eq!(s.bdd.count(f), 2f64.powi(i32::from(VARS) - 2));
    }

    #[test]
    fn interface_classes_separate_what_patterns_separate() {
        let c = iface_classes(&["em0", "em*", "lo0"]);
        let names: Vec<_> = c.iter().map(|n| n.as_deref()).collect();
        assert_eq!(
            names,
            [Some("other0"), Some("em0"), Some("em"), Some("lo0")]
        );
    }
}
