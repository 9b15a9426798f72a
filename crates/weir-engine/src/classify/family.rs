//! What the trie classifier indexes, per address family: each rule's
//! sets as key intervals, whether it surely ends a walk, and how the
//! rules are grouped (one automaton per group).

use super::fields::{family4, Constraints, Set, MAPPED_HI, MAPPED_LO, NO_PORTS};
use crate::program::{class, Act, Program, StateOp};
use weir_wire::Packet;

pub const FIELDS: usize = 5;
pub const PROTO: usize = 4;
/// Key bits per field: source, destination, source port, destination port
/// (65536 = no ports), protocol. IPv6 addresses use their top 64 bits:
/// their sets are widened to whole /64s, which only adds candidates.
pub(crate) const BITS4: [u32; FIELDS] = [32, 32, 17, 17, 8];
pub(crate) const BITS6: [u32; FIELDS] = [64, 64, 17, 17, 8];
const MAX4: [u64; FIELDS] = [
    u32::MAX as u64,
    u32::MAX as u64,
    NO_PORTS as u64,
    NO_PORTS as u64,
    255,
];
const MAX6: [u64; FIELDS] = [u64::MAX, u64::MAX, NO_PORTS as u64, NO_PORTS as u64, 255];

#[inline(always)]
pub fn key(p: &Packet, src: u64, dst: u64) -> [u64; FIELDS] {
    let (sport, dport) = if p.has_ports {
        (u64::from(p.src_port), u64::from(p.dst_port))
    } else {
        (u64::from(NO_PORTS), u64::from(NO_PORTS))
    };
    [src, dst, sport, dport, u64::from(p.proto)]
}

/// The rule needs a dynamic state in its header: no other packet matches it.
pub fn needs_state(prog: &Program, r: usize) -> bool {
    let rule = &prog.rules[r];
    rule.class_mask & rule.class_bits & class::STATE != 0
}

/// Per rule: some earlier `skipto` or `call` lands after it, so a walk can
/// get past it without trying it. A state fires at a probe rule and runs
/// the action of the rule that made it, so that rule's jump, or the walk
/// going on after it, also starts from the first probe rule.
pub fn jumped_over(prog: &Program) -> Vec<bool> {
    let n = prog.rules.len();
    let first_probe = prog.rules.iter().position(|r| r.probe).unwrap_or(n);
    // +1 where a jumped-over run starts, -1 after it ends.
    let mut edges = vec![0i64; n + 1];
    for (i, r) in prog.rules.iter().enumerate() {
        let makes_state = r.state_op != StateOp::None;
        let (from, target) = match r.act {
            Act::Skipto | Act::Call => (i, (r.jump as usize).min(n)),
            // A table value may send the walk anywhere further on.
            Act::SkiptoTablearg => (i, n),
            // A fired state's walk ends here, or goes on after this rule.
            _ if !makes_state || r.act.verdict().is_some() => continue,
            _ => (i, i + 1),
        };
        let from = if makes_state {
            from.min(first_probe)
        } else {
            from
        };
        if target > from + 1 {
            edges[from + 1] += 1;
            edges[target] -= 1;
        }
    }
    let mut depth = 0;
    edges[..n]
        .iter()
        .map(|e| {
            depth += e;
            depth > 0
        })
        .collect()
}

/// The rules that packets of one address family can match, with their
/// sets as key intervals.
pub struct FamilyRules {
    pub bits: [u32; FIELDS],
    pub max: [u64; FIELDS],
    /// Program rule index, per family rule.
    pub index: Vec<u32>,
    /// Per family rule and field: its intervals, `ivs[start..start + len]`.
    spans: Vec<[(u32, u32); FIELDS]>,
    ivs: Vec<(u64, u64)>,
    /// The rule ends every walk that reaches it with a packet inside its sets.
    pub definitive: Vec<bool>,
}

impl FamilyRules {
    /// The rules IPv4 (or with `v6`, IPv6) packets can match, as key
    /// intervals. Each rule's constraints are made and dropped in turn,
    /// not held for every rule: a 100k-rule set's million small vectors,
    /// all allocated before any was freed, took glibc's malloc 150–250 ms
    /// of a 1.1 s build on a Zen 3 (freeing them 50 ms); one rule's,
    /// reused at once, stay in its per-thread cache.
    pub fn new(prog: &Program, jumped: &[bool], v6: bool) -> FamilyRules {
        let (bits, max) = if v6 { (BITS6, MAX6) } else { (BITS4, MAX4) };
        let (version, other) = if v6 {
            (class::V6, class::V4)
        } else {
            (class::V4, class::V6)
        };
        let mut f = FamilyRules {
            bits,
            max,
            index: Vec::new(),
            spans: Vec::new(),
            ivs: Vec::new(),
            definitive: Vec::new(),
        };
        for (r, rule) in prog.rules.iter().enumerate() {
            let version_ok = rule.class_mask & version == 0 || rule.class_bits & version != 0;
            let other_ok = rule.class_mask & other == 0 || rule.class_bits & other == 0;
            if !version_ok || !other_ok || needs_state(prog, r) {
                continue;
            }
            let c = Constraints::of(prog, prog.rule_insns(rule));
            let ivs_at = f.ivs.len();
            // Each field's intervals go straight into `ivs`.
            let addr = |ivs: &mut Vec<(u64, u64)>, s: &Option<Set<u128>>| match s {
                None => push_set(ivs, [(0, max[0])]),
                Some(s) if v6 => push_set(ivs, widen64(s)),
                Some(s) => push_set(ivs, family4(s).iter().map(|&(a, b)| (a.into(), b.into()))),
            };
            let port = |ivs: &mut Vec<(u64, u64)>, s: &Option<Set<u32>>| match s {
                None => push_set(ivs, [(0, u64::from(NO_PORTS))]),
                Some(s) => push_set(ivs, s.iter().map(|&(a, b)| (a.into(), b.into()))),
            };
            let proto = rule.proto.map_or((0, 255), |p| (p.into(), p.into()));
            let spans = [
                addr(&mut f.ivs, &c.src),
                addr(&mut f.ivs, &c.dst),
                port(&mut f.ivs, &c.sport),
                port(&mut f.ivs, &c.dport),
                push_set(&mut f.ivs, [proto]),
            ];
            // An empty set: no packet of this family matches the rule.
            if spans.iter().any(|&(_, len)| len == 0) {
                f.ivs.truncate(ivs_at);
                continue;
            }
            f.index.push(r as u32);
            f.spans.push(spans);
            // IPv6 sets were widened: only an unconstrained address is exact.
            let exact_addrs = !v6 || (c.src.is_none() && c.dst.is_none());
            f.definitive.push(
                rule.act.verdict().is_some()
                    && rule.prob.is_none()
                    && !rule.defer
                    && !rule.probe
                    && c.exact
                    && exact_addrs
                    && rule.class_mask & !(class::V4 | class::V6) == 0
                    && !jumped[r],
            );
        }
        f
    }

    pub fn set(&self, r: u32, field: usize) -> &[(u64, u64)] {
        let (start, len) = self.spans[r as usize][field];
        &self.ivs[start as usize..][..len as usize]
    }

    /// Which fields of rule `r` are small enough to cut: the bit per field.
    pub fn small_fields(&self, r: u32) -> u8 {
        (0..FIELDS)
            .filter(|&f| {
                let s = self.set(r, f);
                let width = s[s.len() - 1].1 - s[0].0;
                match f {
                    PROTO => width == 0,
                    2 | 3 => width < 8192,
                    _ => width < 1u64 << (self.bits[f] - 4),
                }
            })
            .fold(0, |m, f| m | 1 << f)
    }
}

/// Appends `set` to `ivs`: its (start, len) there.
fn push_set(ivs: &mut Vec<(u64, u64)>, set: impl IntoIterator<Item = (u64, u64)>) -> (u32, u32) {
    let at = ivs.len();
    ivs.extend(set);
    (at as u32, (ivs.len() - at) as u32)
}

/// IPv6 intervals as intervals of their top 64 bits (a superset), less
/// the IPv4-mapped block (IPv6 packets there walk every rule).
fn widen64(s: &Set<u128>) -> Set<u64> {
    let mut out: Set<u64> = Vec::with_capacity(s.len());
    let outside = s.iter().flat_map(|&(a, b)| {
        let below = (a < MAPPED_LO).then(|| (a, b.min(MAPPED_LO - 1)));
        let above = (b > MAPPED_HI).then(|| (a.max(MAPPED_HI + 1), b));
        below.into_iter().chain(above)
    });
    for (a, b) in outside {
        let (a, b) = ((a >> 64) as u64, (b >> 64) as u64);
        match out.last_mut() {
            Some(last) if a <= last.1.saturating_add(1) => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// How a build groups a tier's rules before any split (`address_groups`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grouping {
    /// By which of the two addresses are specific: up to four groups.
    Addresses,
    /// By whether the destination is specific: up to two groups, so two
    /// walks a packet where four were, when the sources' wildcards do not
    /// multiply the states.
    Destination,
}

/// The family rules `members` in groups by which addresses are specific
/// (`grouping` says which): a group's automaton reads its specific
/// addresses first, and wildcards of one group do not multiply the other
/// groups' states.
pub fn address_groups(
    rules: &FamilyRules,
    members: std::ops::Range<u32>,
    grouping: Grouping,
) -> Vec<Vec<u32>> {
    // `small_fields`' bits: the source's, then the destination's.
    let addresses = match grouping {
        Grouping::Addresses => 0b11,
        Grouping::Destination => 0b10,
    };
    let mut groups = vec![Vec::new(); 4];
    for r in members {
        groups[usize::from(rules.small_fields(r) & addresses)].push(r);
    }
    groups.retain(|g| !g.is_empty());
    groups
}

/// A group too large to build, as two: its more specific half and its
/// wilder half (by the key bits its sets leave free), each in rule order.
/// Wildcards multiply states; apart, each half's automaton stays small.
pub fn split(rules: &FamilyRules, group: Vec<u32>) -> [Vec<u32>; 2] {
    let free_bits = |r: u32| -> u32 {
        (0..FIELDS)
            .map(|f| {
                let s = rules.set(r, f);
                64 - (s[s.len() - 1].1 - s[0].0).leading_zeros()
            })
            .sum()
    };
    let mut by_wildness = group;
    by_wildness.sort_by_cached_key(|&r| (free_bits(r), r));
    let mut wild = by_wildness.split_off(by_wildness.len() / 2);
    by_wildness.sort_unstable();
    wild.sort_unstable();
    [by_wildness, wild]
}
