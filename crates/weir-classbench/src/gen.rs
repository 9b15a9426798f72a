//! Seeded ClassBench-like filter sets and header traces.
//!
//! Modelled on the shape of ClassBench's seed files for `acl1`, `fw1` and
//! `ipc1` (prefix-length pairs, port-range classes per protocol, protocol
//! mix), not on their exact numbers:
//!
//! - Prefix lengths come as (source, destination) pairs drawn from a
//!   per-kind table (acl: mostly host and /24 destinations; fw: many
//!   wildcards; ipc: both sides moderately specific), with a little jitter.
//! - Addresses nest: a new prefix often extends one drawn before (so rules
//!   share supernets), sometimes repeats one exactly, else starts under
//!   one of a few "site" /8s.
//! - Ports, for tcp/udp, come as (source, destination) class pairs:
//!   WC `0 : 65535`, HI `1024 : 65535`, LO `0 : 1023`, EM one port (well
//!   known ones weighted), AR an arbitrary range (often reused, so ranges
//!   overlap and nest). Other protocols, and the wildcard protocol, have
//!   WC ports, as real rule sets write `ip` rules without ports.
//! - Rules are ordered roughly most specific first (with noise), as rule
//!   writers do, so broad rules do not shadow the rest.
//!
//! The trace draws most headers from a uniformly chosen filter's box (so
//! every depth is hit; port ends are favoured), repeats recent headers for
//! locality, and adds random headers. As `trace_generator` writes it, a
//! header drawn from a filter ends with that filter's 0-based index (its
//! first match is at or before that filter); a random header, drawn from
//! none, has the five fields alone.
//!
//! One ChaCha8 stream per output (`weir_gen::Rng`), only `u32` sampling,
//! so a seed gives the same bytes on every platform.

use crate::parse::{Filter, Header, Prefix};
use weir_gen::Rng;
use weir_wire::proto;

/// Which ClassBench seed the set resembles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Access control lists (router ACLs).
    Acl,
    /// Firewall rule sets.
    Fw,
    /// IP chains.
    Ipc,
}

impl Kind {
    pub const ALL: [Kind; 3] = [Kind::Acl, Kind::Fw, Kind::Ipc];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Acl => "acl",
            Kind::Fw => "fw",
            Kind::Ipc => "ipc",
        }
    }

    fn profile(self) -> &'static Profile {
        match self {
            Kind::Acl => &ACL,
            Kind::Fw => &FW,
            Kind::Ipc => &IPC,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PortClass {
    Wc,
    Hi,
    Lo,
    Em,
    Ar,
}
use PortClass::*;

struct Profile {
    /// (source length, destination length), weight.
    lengths: &'static [((u8, u8), u32)],
    /// (protocol, mask), weight.
    protocols: &'static [((u8, u8), u32)],
    /// (source class, destination class) for tcp/udp, weight.
    ports: &'static [((PortClass, PortClass), u32)],
    /// Percent of prefixes whose length is moved by 1..=3.
    jitter: u32,
}

static ACL: Profile = Profile {
    lengths: &[
        ((32, 32), 26),
        ((24, 32), 16),
        ((32, 24), 8),
        ((0, 32), 14),
        ((32, 0), 4),
        ((24, 24), 8),
        ((16, 32), 6),
        ((0, 24), 6),
        ((28, 32), 4),
        ((30, 32), 3),
        ((16, 16), 2),
        ((8, 32), 2),
        ((0, 0), 1),
    ],
    protocols: &[
        ((proto::TCP, 0xff), 62),
        ((proto::UDP, 0xff), 22),
        ((proto::ICMP, 0xff), 6),
        ((0, 0), 8),
        ((proto::GRE, 0xff), 1),
        ((proto::ESP, 0xff), 1),
    ],
    ports: &[
        ((Wc, Em), 52),
        ((Wc, Wc), 14),
        ((Wc, Ar), 10),
        ((Wc, Hi), 8),
        ((Hi, Em), 5),
        ((Em, Wc), 4),
        ((Lo, Em), 2),
        ((Wc, Lo), 2),
        ((Ar, Wc), 2),
        ((Hi, Hi), 1),
    ],
    jitter: 15,
};

static FW: Profile = Profile {
    lengths: &[
        ((0, 32), 20),
        ((32, 0), 12),
        ((0, 0), 6),
        ((24, 32), 10),
        ((32, 32), 8),
        ((0, 24), 10),
        ((24, 0), 8),
        ((16, 32), 6),
        ((32, 16), 4),
        ((8, 32), 4),
        ((16, 0), 6),
        ((0, 16), 6),
    ],
    protocols: &[
        ((proto::TCP, 0xff), 48),
        ((proto::UDP, 0xff), 28),
        ((0, 0), 18),
        ((proto::ICMP, 0xff), 5),
        ((proto::ESP, 0xff), 1),
    ],
    ports: &[
        ((Wc, Wc), 22),
        ((Wc, Em), 26),
        ((Wc, Ar), 15),
        ((Wc, Hi), 10),
        ((Hi, Em), 6),
        ((Ar, Ar), 5),
        ((Hi, Hi), 5),
        ((Em, Em), 3),
        ((Ar, Wc), 5),
        ((Lo, Wc), 3),
    ],
    jitter: 20,
};

static IPC: Profile = Profile {
    lengths: &[
        ((32, 32), 16),
        ((24, 24), 12),
        ((16, 24), 8),
        ((24, 16), 8),
        ((0, 32), 10),
        ((32, 0), 10),
        ((0, 0), 3),
        ((16, 16), 10),
        ((8, 24), 5),
        ((24, 32), 10),
        ((32, 24), 8),
    ],
    protocols: &[
        ((proto::TCP, 0xff), 42),
        ((proto::UDP, 0xff), 26),
        ((0, 0), 27),
        ((proto::ICMP, 0xff), 4),
        ((proto::GRE, 0xff), 1),
    ],
    ports: &[
        ((Wc, Wc), 34),
        ((Wc, Em), 30),
        ((Em, Wc), 10),
        ((Wc, Ar), 8),
        ((Hi, Hi), 5),
        ((Wc, Hi), 5),
        ((Ar, Em), 3),
        ((Lo, Lo), 2),
        ((Em, Em), 3),
    ],
    jitter: 25,
};

/// Well-known ports for EM, weighted; the rest of EM is a random port.
const WELL_KNOWN: &[(u16, u32)] = &[
    (80, 20),
    (443, 15),
    (53, 10),
    (25, 5),
    (22, 5),
    (21, 3),
    (23, 2),
    (110, 2),
    (143, 2),
    (123, 3),
    (161, 2),
    (389, 2),
    (445, 3),
    (1433, 2),
    (3306, 2),
    (3389, 2),
    (8080, 4),
];

/// Prefixes drawn so far on one side, for nesting and repeats. Bounded:
/// past the cap a random entry is replaced.
struct Pool {
    prefixes: Vec<Prefix>,
    sites: [u8; 12],
}

const POOL_CAP: usize = 4096;

impl Pool {
    fn new(rng: &mut Rng) -> Pool {
        let mut sites = [0u8; 12];
        for s in &mut sites {
            *s = rng.range(1, 223) as u8;
        }
        Pool {
            prefixes: Vec::new(),
            sites,
        }
    }

    fn draw(&mut self, rng: &mut Rng, len: u8) -> Prefix {
        if len == 0 {
            return Prefix { addr: 0, len: 0 };
        }
        let p = self.pick(rng, len);
        if self.prefixes.len() < POOL_CAP {
            self.prefixes.push(p);
        } else {
            let i = rng.index(POOL_CAP);
            self.prefixes[i] = p;
        }
        p
    }

    fn pick(&mut self, rng: &mut Rng, len: u8) -> Prefix {
        let fresh = |rng: &mut Rng, base: Prefix| {
            let random = rng.next_u32();
            let host = !base.mask();
            let p = Prefix {
                addr: base.network() | (random & host),
                len,
            };
            Prefix {
                addr: p.network(),
                len,
            }
        };
        if !self.prefixes.is_empty() {
            let roll = rng.below(100);
            // Repeat an earlier prefix of this length (same host or subnet).
            if roll < 25 {
                for _ in 0..4 {
                    let q = self.prefixes[rng.index(self.prefixes.len())];
                    if q.len == len {
                        return q;
                    }
                }
            }
            // Nest under an earlier, shorter prefix.
            if roll < 75 {
                for _ in 0..6 {
                    let q = self.prefixes[rng.index(self.prefixes.len())];
                    if q.len < len {
                        return fresh(rng, q);
                    }
                }
            }
        }
        let site = self.sites[rng.index(self.sites.len())];
        fresh(
            rng,
            Prefix {
                addr: u32::from(site) << 24,
                len: 8.min(len),
            },
        )
    }
}

fn jittered(rng: &mut Rng, len: u8, pct: u32) -> u8 {
    if len == 0 || !rng.percent(pct) {
        return len;
    }
    let d = rng.range(1, 3) as u8;
    if rng.percent(50) {
        len.saturating_sub(d).max(1)
    } else {
        (len + d).min(32)
    }
}

struct Ports {
    ranges: Vec<(u16, u16)>,
}

impl Ports {
    fn draw(&mut self, rng: &mut Rng, class: PortClass) -> (u16, u16) {
        match class {
            Wc => (0, u16::MAX),
            Hi => (1024, u16::MAX),
            Lo => (0, 1023),
            Em => {
                let p = if rng.percent(75) {
                    rng.weighted(WELL_KNOWN)
                } else {
                    rng.range(1024, 65535) as u16
                };
                (p, p)
            }
            Ar => {
                if !self.ranges.is_empty() && rng.percent(40) {
                    return self.ranges[rng.index(self.ranges.len())];
                }
                let width = match rng.below(3) {
                    0 => rng.range(1, 15),
                    1 => rng.range(16, 1023),
                    _ => rng.range(1024, 30000),
                };
                let lo = rng.below(65536 - width);
                let r = (lo as u16, (lo + width) as u16);
                if self.ranges.len() < 256 {
                    self.ranges.push(r);
                }
                r
            }
        }
    }
}

fn class_weight(c: PortClass) -> u32 {
    match c {
        Wc => 0,
        Hi | Lo => 4,
        Ar => 8,
        Em => 16,
    }
}

/// `n` filters like ClassBench's `kind` seed, reproducible from `seed`.
pub fn filters(kind: Kind, n: usize, seed: u64) -> Vec<Filter> {
    let prof = kind.profile();
    let mut rng = Rng::new(seed);
    let mut src_pool = Pool::new(&mut rng);
    let mut dst_pool = Pool::new(&mut rng);
    let mut ports = Ports { ranges: Vec::new() };
    let mut scored: Vec<(u32, Filter)> = Vec::with_capacity(n);
    for _ in 0..n {
        let (sl, dl) = rng.weighted(prof.lengths);
        let (sl, dl) = (
            jittered(&mut rng, sl, prof.jitter),
            jittered(&mut rng, dl, prof.jitter),
        );
        let src = src_pool.draw(&mut rng, sl);
        let dst = dst_pool.draw(&mut rng, dl);
        let (proto, proto_mask) = rng.weighted(prof.protocols);
        let (sc, dc) = if proto_mask == 0xff && (proto == proto::TCP || proto == proto::UDP) {
            rng.weighted(prof.ports)
        } else {
            (Wc, Wc)
        };
        let f = Filter {
            src,
            dst,
            sport: ports.draw(&mut rng, sc),
            dport: ports.draw(&mut rng, dc),
            proto,
            proto_mask,
            flags: None,
        };
        let specificity = u32::from(src.len)
            + u32::from(dst.len)
            + class_weight(sc)
            + class_weight(dc)
            + if proto_mask == 0xff { 8 } else { 0 };
        // Noise so that order is only roughly by specificity.
        scored.push((specificity + rng.below(24), f));
    }
    scored.sort_by_key(|s| std::cmp::Reverse(s.0));
    scored.into_iter().map(|(_, f)| f).collect()
}

/// Percent of headers drawn from a filter's box, repeated, or random.
const FROM_FILTER: u32 = 75;
const REPEAT: u32 = 15;

/// The trace's seed, derived from the set's, so one seed names both.
pub fn trace_seed(seed: u64) -> u64 {
    seed ^ 0x7472_6163_6521_2121
}

/// `n` headers for `filters`, reproducible from `seed`.
pub fn trace(filters: &[Filter], n: usize, seed: u64) -> Vec<Header> {
    let mut rng = Rng::new(seed);
    let mut out: Vec<Header> = Vec::with_capacity(n);
    for _ in 0..n {
        let roll = rng.below(100);
        let h = if roll < REPEAT && !out.is_empty() {
            let back = rng.index(out.len().min(32)) + 1;
            out[out.len() - back]
        } else if roll < REPEAT + FROM_FILTER && !filters.is_empty() {
            let i = rng.index(filters.len());
            in_box(&mut rng, &filters[i], i as u32)
        } else {
            random_header(&mut rng, filters)
        };
        out.push(h);
    }
    out
}

fn in_box(rng: &mut Rng, f: &Filter, index: u32) -> Header {
    let addr = |rng: &mut Rng, p: Prefix| p.network() | (rng.next_u32() & !p.mask());
    let port = |rng: &mut Rng, (lo, hi): (u16, u16)| match rng.below(10) {
        0 => lo,
        1 => hi,
        _ => rng.range(u32::from(lo), u32::from(hi)) as u16,
    };
    let proto = if f.proto_mask == 0 {
        any_protocol(rng)
    } else {
        f.proto | (rng.below(256) as u8 & !f.proto_mask)
    };
    Header {
        src: addr(rng, f.src),
        dst: addr(rng, f.dst),
        sport: port(rng, f.sport),
        dport: port(rng, f.dport),
        proto,
        flags: None,
        filter: Some(index),
    }
}

/// A header's protocol where the filter allows any: mostly tcp and udp.
fn any_protocol(rng: &mut Rng) -> u8 {
    let other = rng.below(256) as u8;
    rng.weighted(&[(6u8, 50), (17, 30), (1, 10), (other, 10)])
}

/// A header that belongs to no filter in particular; half of them start
/// from a filter's addresses so they are near misses rather than noise.
fn random_header(rng: &mut Rng, filters: &[Filter]) -> Header {
    let (mut src, mut dst) = (rng.next_u32(), rng.next_u32());
    if !filters.is_empty() && rng.percent(50) {
        let f = filters[rng.index(filters.len())];
        src = f.src.network() | (src & !f.src.mask());
        dst = f.dst.network() | (dst & !f.dst.mask());
    }
    Header {
        src,
        dst,
        sport: rng.below(65536) as u16,
        dport: rng.below(65536) as u16,
        proto: any_protocol(rng),
        flags: None,
        filter: None,
    }
}

/// The whole set in ClassBench's filter format, one per line.
pub fn write_filters(filters: &[Filter]) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(filters.len() * 64);
    for f in filters {
        let _ = writeln!(s, "{f}");
    }
    s
}

/// The whole trace in ClassBench's trace format, one header per line.
pub fn write_trace(headers: &[Header]) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(headers.len() * 40);
    for h in headers {
        let _ = writeln!(s, "{h}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::{parse_filters, parse_trace};
    use crate::reference::{first_match, Fields};

    #[test]
    fn same_seed_same_set_other_seed_other_set() {
        for kind in Kind::ALL {
            assert_eq!(filters(kind, 300, 5), filters(kind, 300, 5));
            assert_ne!(filters(kind, 300, 5), filters(kind, 300, 6));
            let f = filters(kind, 300, 5);
            assert_eq!(trace(&f, 500, 9), trace(&f, 500, 9));
        }
    }

    #[test]
    fn written_sets_parse_back() {
        let f = filters(Kind::Fw, 500, 1);
        assert_eq!(parse_filters(&write_filters(&f)).unwrap(), f);
        let t = trace(&f, 500, 2);
        assert_eq!(parse_trace(&write_trace(&t)).unwrap(), t);
    }

    /// Every header drawn from a filter lies in it, so its first match is
    /// that filter or an earlier one; and the trace reaches deep rules.
    #[test]
    fn headers_hit_their_filters_at_all_depths() {
        for kind in Kind::ALL {
            let f = filters(kind, 1000, 11);
            let t = trace(&f, 5000, 12);
            let mut deepest = 0;
            let mut exact = 0;
            for h in &t {
                let m = first_match(&f, h, Fields::FiveTuple);
                if let Some(i) = h.filter {
                    assert!(f[i as usize].matches(h));
                    assert!(
                        m >= 1 && m <= i + 1,
                        "{kind:?}: first match {m} after {}",
                        i + 1
                    );
                    exact += u32::from(m == i + 1);
                }
                deepest = deepest.max(m);
            }
            // Random headers carry no index.
            assert!(t.iter().any(|h| h.filter.is_none()));
            assert!(deepest > 900, "{kind:?}: deepest match {deepest}");
            // Most headers are answered by the filter they came from.
            assert!(exact > 2000, "{kind:?}: {exact} exact");
        }
    }

    #[test]
    fn the_mix_has_wildcards_nesting_and_ranges() {
        for kind in Kind::ALL {
            let f = filters(kind, 2000, 3);
            let any_src = f.iter().filter(|x| x.src.len == 0).count();
            let ranges = f
                .iter()
                .filter(|x| x.dport.0 != x.dport.1 && x.dport != (0, 65535))
                .count();
            let any_proto = f.iter().filter(|x| x.proto_mask == 0).count();
            let nested = f
                .iter()
                .filter(|x| {
                    x.dst.len > 0
                        && f.iter().any(|y| {
                            y.dst.len > 0 && y.dst.len < x.dst.len && y.dst.contains(x.dst.addr)
                        })
                })
                .count();
            assert!(any_src > 20, "{kind:?} any_src {any_src}");
            assert!(ranges > 50, "{kind:?} ranges {ranges}");
            assert!(any_proto > 50, "{kind:?} any_proto {any_proto}");
            assert!(nested > 200, "{kind:?} nested {nested}");
        }
    }
}
