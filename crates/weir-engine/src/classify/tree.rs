//! The decision-tree classifier, for large rulesets.
//!
//! EffiCuts-style (Vamanan, Voskuilen and Vijaykumar, 2010): rules are
//! partitioned by which of their fields are small (a /4 or longer
//! address, a port range of fewer than 8192 ports, one protocol), so that
//! rules of one shape share a tree and wildcards do not crowd specific
//! rules. A node cuts one field into 2^b equal, aligned parts (a child is
//! `(key >> shift) & mask`: no search), the cut leaving the smallest
//! largest child within a copy budget; a leaf holds at most `BINTH` rule
//! indices in rule order (more only when no cut separates them or the
//! tree's budget of rule copies is spent). Consecutive children with the
//! same rules share one subtree.
//!
//! A packet walks one tree per partition of its address family and merges
//! the leaves' lists in rule order. Priority pruning keeps the lists
//! short: a rule that ends the walk for every packet in a node's box (a
//! terminal action, every instruction indexed, its sets covering the box,
//! and no jump passing over it) cuts off every later rule of that node,
//! and the merged list is cut at the earliest such rule over all trees.
//! Every rule the packet can match before the walk stops is kept, so the
//! walk over the list is exactly the linear walk.

use super::fields::{family4, in_mapped, Constraints, Set, MAPPED_HI, MAPPED_LO, NO_PORTS};
use crate::program::{class, terminal_verdict, Program, RuleAction};
use weir_wire::Packet;

const FIELDS: usize = 5;
const PROTO: usize = 4;
/// Key bits per field: source, destination, source port, destination port
/// (65536 = no ports), protocol. IPv6 addresses use their top 64 bits:
/// their sets are widened to whole /64s, which only adds candidates.
const BITS4: [u32; FIELDS] = [32, 32, 17, 17, 8];
const BITS6: [u32; FIELDS] = [64, 64, 17, 17, 8];
const MAX4: [u64; FIELDS] = [
    u32::MAX as u64,
    u32::MAX as u64,
    NO_PORTS as u64,
    NO_PORTS as u64,
    255,
];
const MAX6: [u64; FIELDS] = [u64::MAX, u64::MAX, NO_PORTS as u64, NO_PORTS as u64, 255];

/// A leaf holds at most this many rules unless no cut separates them.
const BINTH: usize = 8;
/// A cut takes at most this many bits of a field (256 children).
const MAX_CUT_BITS: u32 = 8;
/// A cut may copy a node's rules into its children up to this factor.
const SPFAC: usize = 4;
const MAX_DEPTH: usize = 12;
/// A partition with fewer rules is merged into one that cuts fewer fields.
const MIN_PARTITION: usize = 32;
/// Most trees per family: each costs a walk per packet.
const MAX_TREES: usize = 12;
/// Build limits: entries held (rule indices, children, nodes) and rule
/// visits while choosing cuts. Past either, no classifier (linear walk).
const MAX_ENTRIES: usize = 40 << 20;
const MAX_WORK: u64 = 1 << 30;
/// Rule copies one tree may make while cutting, per rule it holds (plus
/// `TREE_SLACK`): past it, nodes stay leaves. Wildcards in the fields a
/// tree cuts are copied into every child, and this bounds how often.
const COPIES_PER_RULE: usize = 32;
const TREE_SLACK: usize = 1 << 14;

/// A node reference: a cut's index, or a leaf's index with this bit.
const LEAF: u32 = 1 << 31;
/// Leaf 0 is empty.
const EMPTY: u32 = LEAF;
const NO_STOP: u32 = u32::MAX;

#[derive(Clone, Copy)]
struct Cut {
    field: u8,
    shift: u8,
    mask: u16,
    /// Index of the first child in `kids`.
    kids: u32,
}

#[derive(Clone, Copy)]
struct Leaf {
    start: u32,
    len: u32,
    /// The rule at which every walk through this leaf's box ends (the
    /// last one listed), or `NO_STOP`.
    stop: u32,
}

pub struct TreeClassifier {
    cuts: Vec<Cut>,
    kids: Vec<u32>,
    leaves: Vec<Leaf>,
    pool: Vec<u32>,
    roots4: Vec<u32>,
    roots6: Vec<u32>,
    /// Rules that are candidates of every packet of a known flow
    /// (`class::STATE`): the state probes, and rules that need a state.
    state: Vec<u32>,
    max_candidates: usize,
}

impl TreeClassifier {
    /// Builds the trees, or None past the build limits.
    pub fn build(prog: &Program) -> Option<TreeClassifier> {
        let constraints: Vec<Constraints> = prog
            .rules
            .iter()
            .map(|r| Constraints::of(prog, prog.rule_insns(r)))
            .collect();
        let jumped = jumped_over(prog);
        let mut t = TreeClassifier {
            cuts: Vec::new(),
            kids: Vec::new(),
            leaves: vec![Leaf {
                start: 0,
                len: 0,
                stop: NO_STOP,
            }],
            pool: Vec::new(),
            roots4: Vec::new(),
            roots6: Vec::new(),
            state: (0..prog.rules.len() as u32)
                .filter(|&r| needs_state(prog, r as usize) || prog.rules[r as usize].probe)
                .collect(),
            max_candidates: 0,
        };
        let mut work = 0u64;
        let mut most = [0usize; 2];
        for (v6, most) in [false, true].into_iter().zip(&mut most) {
            let rules = FamilyRules::new(prog, &constraints, &jumped, v6);
            for part in rules.partitions() {
                let mut b = Builder {
                    rules: &rules,
                    out: &mut t,
                    work: &mut work,
                    cut_fields: (1 << FIELDS) - 1,
                    most: 0,
                    budget: part.rules.len() * COPIES_PER_RULE + TREE_SLACK,
                };
                let root = b.node(part.rules, rules.bits.map(|bits| (0, bits)), 0)?;
                *most += b.most;
                if v6 { &mut t.roots6 } else { &mut t.roots4 }.push(root);
            }
        }
        t.max_candidates = most[0].max(most[1]) + t.state.len();
        Some(t)
    }

    /// The most candidates one packet can have (the buffer's capacity).
    pub fn max_candidates(&self) -> usize {
        self.max_candidates
    }

    /// Fills `out` with the candidate rules of packet `p` of class `class`
    /// (`ops::packet_class`, plus `class::STATE` when the caller found its
    /// flow's state), in rule order. False when the packet must walk every
    /// rule instead (an IPv6 address inside the IPv4-mapped block). `out`
    /// must have `max_candidates()` of capacity: it never grows.
    #[inline]
    pub fn candidates(&self, p: &Packet, class: u32, out: &mut Vec<u32>) -> bool {
        let (roots, key) = if p.ip_version == 4 {
            (
                &self.roots4,
                key(p, p.src as u32 as u64, p.dst as u32 as u64),
            )
        } else if p.ip_version == 6 && !in_mapped(p.src) && !in_mapped(p.dst) {
            (
                &self.roots6,
                key(p, (p.src >> 64) as u64, (p.dst >> 64) as u64),
            )
        } else {
            return false;
        };
        // Walk the trees in step, a level each per round: their loads are
        // independent, so their cache misses overlap.
        let mut at = [EMPTY; MAX_TREES];
        let at = &mut at[..roots.len()];
        at.copy_from_slice(roots);
        loop {
            let mut inner = false;
            for n in at.iter_mut().filter(|n| **n & LEAF == 0) {
                let c = self.cuts[*n as usize];
                let child = (key[c.field as usize] >> c.shift) as usize & c.mask as usize;
                *n = self.kids[c.kids as usize + child];
                inner |= *n & LEAF == 0;
            }
            if !inner {
                break;
            }
        }
        let mut leaves = [0u32; MAX_TREES];
        let mut stop = NO_STOP;
        for (slot, &n) in leaves.iter_mut().zip(at.iter()) {
            *slot = n & !LEAF;
            stop = stop.min(self.leaves[*slot as usize].stop);
        }
        let state = class & class::STATE != 0;
        if state {
            // A state's action may be anything: no rule may be cut off.
            stop = NO_STOP;
        }
        out.clear();
        let mut lists = 0;
        for &l in &leaves[..roots.len()] {
            let leaf = self.leaves[l as usize];
            let rules = &self.pool[leaf.start as usize..][..leaf.len as usize];
            let before = out.len();
            out.extend(rules.iter().take_while(|&&r| r <= stop));
            lists += usize::from(out.len() > before);
        }
        if state {
            out.extend_from_slice(&self.state);
            lists += 1;
        }
        if lists > 1 {
            out.sort_unstable();
            if state {
                out.dedup();
            }
        }
        debug_assert!(out.len() <= self.max_candidates);
        true
    }

    /// Memory held, in bytes.
    pub fn memory(&self) -> usize {
        self.cuts.len() * size_of::<Cut>()
            + self.kids.len() * 4
            + self.leaves.len() * size_of::<Leaf>()
            + (self.pool.len() + self.roots4.len() + self.roots6.len() + self.state.len()) * 4
    }
}

#[inline(always)]
fn key(p: &Packet, src: u64, dst: u64) -> [u64; FIELDS] {
    let (sport, dport) = if p.has_ports {
        (u64::from(p.src_port), u64::from(p.dst_port))
    } else {
        (u64::from(NO_PORTS), u64::from(NO_PORTS))
    };
    [src, dst, sport, dport, u64::from(p.proto)]
}

/// The rule needs a dynamic state in its header: no other packet matches it.
fn needs_state(prog: &Program, r: usize) -> bool {
    let rule = &prog.rules[r];
    rule.class_mask & rule.class_bits & class::STATE != 0
}

/// Per rule: some earlier `skipto` or `call` lands after it, so a walk can
/// get past it without trying it.
fn jumped_over(prog: &Program) -> Vec<bool> {
    let mut furthest = 0usize;
    prog.rules
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let over = furthest > i;
            if matches!(r.action, RuleAction::Skipto(_) | RuleAction::Call(_)) {
                furthest = furthest.max(r.jump as usize);
            }
            over
        })
        .collect()
}

/// The rules that packets of one address family can match, with their
/// sets as key intervals.
struct FamilyRules {
    bits: [u32; FIELDS],
    max: [u64; FIELDS],
    /// Program rule index, per family rule.
    index: Vec<u32>,
    /// Per family rule and field: its intervals, `ivs[start..start + len]`.
    spans: Vec<[(u32, u32); FIELDS]>,
    ivs: Vec<(u64, u64)>,
    /// The rule ends every walk that reaches it with a packet inside its sets.
    definitive: Vec<bool>,
}

/// A partition: rules (family rule ids, in order) and the fields its tree cuts.
struct Partition {
    fields: u8,
    rules: Vec<u32>,
}

impl FamilyRules {
    fn new(prog: &Program, constraints: &[Constraints], jumped: &[bool], v6: bool) -> FamilyRules {
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
        for (r, (rule, c)) in prog.rules.iter().zip(constraints).enumerate() {
            let version_ok = rule.class_mask & version == 0 || rule.class_bits & version != 0;
            let other_ok = rule.class_mask & other == 0 || rule.class_bits & other == 0;
            if !version_ok || !other_ok || needs_state(prog, r) {
                continue;
            }
            let addr = |s: &Option<Set<u128>>| -> Set<u64> {
                match s {
                    None => vec![(0, max[0])],
                    Some(s) if v6 => widen64(s),
                    Some(s) => family4(s)
                        .iter()
                        .map(|&(a, b)| (u64::from(a), u64::from(b)))
                        .collect(),
                }
            };
            let port = |s: &Option<Set<u32>>| -> Set<u64> {
                match s {
                    None => vec![(0, u64::from(NO_PORTS))],
                    Some(s) => s
                        .iter()
                        .map(|&(a, b)| (u64::from(a), u64::from(b)))
                        .collect(),
                }
            };
            let proto = match rule.proto {
                Some(p) => vec![(u64::from(p), u64::from(p))],
                None => vec![(0, 255)],
            };
            let sets = [
                addr(&c.src),
                addr(&c.dst),
                port(&c.sport),
                port(&c.dport),
                proto,
            ];
            if sets.iter().any(Vec::is_empty) {
                continue; // no packet of this family matches it
            }
            let spans = sets.map(|s| {
                let span = (f.ivs.len() as u32, s.len() as u32);
                f.ivs.extend(s);
                span
            });
            f.index.push(r as u32);
            f.spans.push(spans);
            // IPv6 sets were widened: only an unconstrained address is exact.
            let exact_addrs = !v6 || (c.src.is_none() && c.dst.is_none());
            f.definitive.push(
                terminal_verdict(rule.action).is_some()
                    && !rule.probe
                    && c.exact
                    && exact_addrs
                    && rule.class_mask & !(class::V4 | class::V6) == 0
                    && !jumped[r],
            );
        }
        f
    }

    fn set(&self, r: u32, field: usize) -> &[(u64, u64)] {
        let (start, len) = self.spans[r as usize][field];
        &self.ivs[start as usize..][..len as usize]
    }

    /// Which fields of rule `r` are small enough to cut: the bit per field.
    fn small_fields(&self, r: u32) -> u8 {
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

    /// Rules grouped by their small fields; small groups merged into the
    /// nearest group that cuts a subset of their fields.
    fn partitions(&self) -> Vec<Partition> {
        let mut groups: Vec<Partition> = Vec::new();
        for r in 0..self.index.len() as u32 {
            let fields = self.small_fields(r);
            match groups.iter_mut().find(|g| g.fields == fields) {
                Some(g) => g.rules.push(r),
                None => groups.push(Partition {
                    fields,
                    rules: vec![r],
                }),
            }
        }
        loop {
            let smallest = (0..groups.len())
                .filter(|&g| groups[g].fields != 0)
                .min_by_key(|&g| groups[g].rules.len());
            let Some(g) = smallest else { break };
            if groups[g].rules.len() >= MIN_PARTITION && groups.len() <= MAX_TREES {
                break;
            }
            let small = groups.swap_remove(g);
            // The group cutting the most of these fields (and no other).
            let into = (0..groups.len())
                .filter(|&h| groups[h].fields & !small.fields == 0)
                .max_by_key(|&h| (groups[h].fields.count_ones(), groups[h].rules.len()));
            let into = match into {
                Some(h) => h,
                None => {
                    groups.push(Partition {
                        fields: 0,
                        rules: Vec::new(),
                    });
                    groups.len() - 1
                }
            };
            let mut merged = std::mem::take(&mut groups[into].rules);
            merged.extend(small.rules);
            merged.sort_unstable();
            groups[into].rules = merged;
        }
        groups
    }

    /// Rule `r`'s sets hold every key in the box.
    fn covers(&self, r: u32, bx: &[(u64, u32); FIELDS]) -> bool {
        (0..FIELDS).all(|f| {
            let (lo, hi) = region(bx[f], self.max[f]);
            self.set(r, f).iter().any(|&(a, b)| a <= lo && hi <= b)
        })
    }
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

/// A box side: `(lo, free)`; its keys are lo ..= lo + 2^free − 1,
/// clipped to the field's largest key.
fn region((lo, free): (u64, u32), max: u64) -> (u64, u64) {
    (lo, (lo | low_mask(free)).min(max))
}

/// Lowest `bits` bits set (0 ≤ bits ≤ 64).
fn low_mask(bits: u32) -> u64 {
    u64::MAX.checked_shr(64 - bits).unwrap_or(0)
}

struct Builder<'a> {
    rules: &'a FamilyRules,
    out: &'a mut TreeClassifier,
    work: &'a mut u64,
    cut_fields: u8,
    /// The longest leaf list made.
    most: usize,
    /// Rule copies this tree may still make.
    budget: usize,
}

impl Builder<'_> {
    /// Builds the subtree of `rules` (family rule ids in order) inside the
    /// box (per field: `(base, free low bits)`). None past the limits.
    fn node(&mut self, mut rules: Vec<u32>, bx: [(u64, u32); FIELDS], depth: usize) -> Option<u32> {
        let stop = rules
            .iter()
            .position(|&r| self.rules.definitive[r as usize] && self.rules.covers(r, &bx));
        if let Some(k) = stop {
            rules.truncate(k + 1);
        }
        let cut = if rules.len() > BINTH && depth < MAX_DEPTH {
            self.choose_cut(&rules, &bx)
        } else {
            None
        };
        let Some((field, b)) =
            cut.filter(|&(.., copies)| copies <= self.budget)
                .map(|(field, b, copies)| {
                    self.budget -= copies;
                    (field, b)
                })
        else {
            return self.leaf(&rules, stop.is_some());
        };
        let (lo, free) = bx[field];
        let shift = free - b;
        let n = 1usize << b;
        let mut children: Vec<Vec<u32>> = vec![Vec::new(); n];
        for &r in &rules {
            self.child_runs(r, field, bx[field], shift, |first, last| {
                children[first..=last].iter_mut().for_each(|c| c.push(r))
            });
        }
        drop(rules);
        let entries = self.out.kids.len() + self.out.pool.len() + self.out.cuts.len();
        if entries + n > MAX_ENTRIES {
            return None;
        }
        let at = self.out.cuts.len();
        let kids = self.out.kids.len();
        self.out.cuts.push(Cut {
            field: field as u8,
            shift: shift as u8,
            mask: (n - 1) as u16,
            kids: kids as u32,
        });
        self.out.kids.resize(kids + n, EMPTY);
        // Neighbours with the same rules share a subtree.
        let same: Vec<bool> = (0..n)
            .map(|c| c > 0 && children[c] == children[c - 1])
            .collect();
        for c in 0..n {
            let node = if same[c] {
                self.out.kids[kids + c - 1]
            } else if children[c].is_empty() {
                EMPTY
            } else {
                let mut child = bx;
                child[field] = (lo | (c as u64) << shift, shift);
                self.node(std::mem::take(&mut children[c]), child, depth + 1)?
            };
            self.out.kids[kids + c] = node;
        }
        Some(at as u32)
    }

    /// A leaf of `rules`; `stops`: the last one ends every walk in the box.
    fn leaf(&mut self, rules: &[u32], stops: bool) -> Option<u32> {
        if rules.is_empty() {
            return Some(EMPTY);
        }
        if self.out.pool.len() + rules.len() > MAX_ENTRIES {
            return None;
        }
        let last = *rules.last()?;
        let index = |r: u32| self.rules.index[r as usize];
        let stop = if stops { index(last) } else { NO_STOP };
        let start = self.out.pool.len() as u32;
        self.out.pool.extend(rules.iter().map(|&r| index(r)));
        self.out.leaves.push(Leaf {
            start,
            len: rules.len() as u32,
            stop,
        });
        self.most = self.most.max(rules.len());
        Some(LEAF | (self.out.leaves.len() - 1) as u32)
    }

    /// Calls `visit(first, last)` for each run of children (of the cut at
    /// `shift` in this field's box side) that rule `r`'s set reaches, each
    /// child once.
    fn child_runs(
        &self,
        r: u32,
        field: usize,
        side: (u64, u32),
        shift: u32,
        mut visit: impl FnMut(usize, usize),
    ) {
        let (lo, hi) = region(side, self.rules.max[field]);
        let mut next = 0usize;
        for &(a, b) in self.rules.set(r, field) {
            let (a, b) = (a.max(lo), b.min(hi));
            if a > b {
                continue;
            }
            let (first, last) = (((a - lo) >> shift) as usize, ((b - lo) >> shift) as usize);
            if first.max(next) <= last {
                visit(first.max(next), last);
            }
            next = last + 1;
        }
    }

    /// The cut (field, bits) that leaves the smallest largest child within
    /// the copy budget, if one separates the rules at all.
    /// Returns (field, bits, rule copies).
    fn choose_cut(
        &mut self,
        rules: &[u32],
        bx: &[(u64, u32); FIELDS],
    ) -> Option<(usize, u32, usize)> {
        let n = rules.len();
        let max_bits = (usize::BITS - n.leading_zeros()).min(MAX_CUT_BITS);
        let mut best: Option<(usize, usize, usize, u32)> = None; // (largest, total, field, bits)
        let mut zoom: Option<(u32, usize)> = None; // (bits, field)
                                                   // Rules per child as a difference array: a run costs two updates.
        let mut counts = vec![0isize; (1 << max_bits) + 1];
        for (field, &(lo, free)) in bx.iter().enumerate() {
            if self.cut_fields & 1 << field == 0 || free == 0 {
                continue;
            }
            for b in 1..=max_bits.min(free) {
                *self.work += n as u64;
                if *self.work > MAX_WORK {
                    self.budget = 0; // too slow: no more cuts anywhere
                    return None;
                }
                let shift = free - b;
                let counts = &mut counts[..(1 << b) + 1];
                counts.fill(0);
                let mut total = 0;
                for &r in rules {
                    self.child_runs(r, field, (lo, free), shift, |first, last| {
                        counts[first] += 1;
                        counts[last + 1] -= 1;
                        total += last + 1 - first;
                    });
                }
                if total > SPFAC * n + (1 << b) {
                    break;
                }
                let mut running = 0;
                let largest = counts
                    .iter()
                    .map(|d| {
                        running += d;
                        running as usize
                    })
                    .max()
                    .unwrap_or(0);
                if best.is_none_or(|(l, t, _, _)| (largest, total) < (l, t)) {
                    best = Some((largest, total, field, b));
                }
                if total == n && largest == n {
                    // Every rule in one child: a zoom into the block the
                    // rules share, which frees later cuts to separate them.
                    zoom = zoom.max(Some((b, field)));
                }
            }
        }
        best.filter(|&(largest, ..)| largest < n)
            .map(|(_, total, field, b)| (field, b, total))
            .or(zoom.map(|(b, field)| (field, b, n)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use weir_wire::v4_mapped;

    fn program(text: &str) -> Program {
        crate::load(text, &weir_rules::Names::default(), &Default::default())
            .expect("rules compile")
    }

    /// A packet of a known flow (`class::STATE`) has every state probe as
    /// a candidate, whatever the probe's other fields. For other packets a
    /// `check-state` may be a candidate (its `never` instruction fails it).
    #[test]
    fn state_packets_get_every_probe() {
        let mut text = String::new();
        for i in 0..40 {
            text += &format!("{} allow tcp from 10.0.{i}.0/24 to any 80\n", 10 + i * 10);
        }
        text += "5 check-state\n";
        text += "205 check-state\n";
        let prog = program(&text);
        let probes: Vec<u32> = (0..prog.rules.len() as u32)
            .filter(|&r| prog.rules[r as usize].probe)
            .collect();
        assert_eq!(probes.len(), 2);
        let t = TreeClassifier::build(&prog).expect("builds");
        let p = Packet {
            src: v4_mapped(0x0a00_0305),
            dst: v4_mapped(0xc000_0201),
            l3: weir_wire::L3::Ip,
            ip_version: 4,
            proto: 6,
            src_port: 1234,
            dst_port: 80,
            has_ports: true,
            ..Packet::default()
        };
        let mut out = Vec::with_capacity(t.max_candidates());
        let class = crate::packet_class(&p);
        assert!(t.candidates(&p, class, &mut out));
        let others: Vec<u32> = out
            .iter()
            .copied()
            .filter(|r| !probes.contains(r))
            .collect();
        // 10.0.3.0/24 port 80 is rule 40 (index 4, after check-state 5),
        // then the default rule (the tree never cut the port field, so
        // rule 40 does not cover its leaf and cannot cut the list).
        assert_eq!(others, vec![4, prog.default_index() as u32]);
        assert!(t.candidates(&p, class | class::STATE, &mut out));
        assert!(probes.iter().all(|r| out.contains(r)), "{out:?}");
        assert!(
            out.contains(&4) && out.windows(2).all(|w| w[0] < w[1]),
            "{out:?}"
        );
        assert_eq!(*out.last().unwrap() as usize, prog.default_index());
    }
}
