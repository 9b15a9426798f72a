//! The byte-trie classifier, for large rulesets.
//!
//! In the manner of DPDK's rte_acl: the header key (protocol, addresses,
//! ports) is read a byte at a time, and each byte moves the packet through
//! a deterministic automaton whose state is "the rules this packet can
//! still match, and what each still requires of the field being read".
//! States are built by subset construction from the root and shared when
//! equal (memoised), so the automaton is a DAG. A state's list is cut
//! after its first rule that surely ends the walk (a terminal action, every
//! instruction indexed, nothing left to require, no jump over it): the
//! priority pruning that keeps states few and leaves short.
//!
//! A state with at most `LEAF_ITEMS` rule intervals left, or nothing left
//! to read, is a leaf: its rules, in order, are the packet's candidates
//! (the evaluator checks them). Levels where every rule admits every
//! byte are skipped (a node names its level). A node lists up to
//! `LINEAR_SEGMENTS` segment starts, counted against the byte, or holds a
//! bitmap of them, ranked in constant time: no search, no branch on the
//! byte's value.
//!
//! Wildcards in different fields multiply states (the classic DFA
//! blow-up). So the rules are grouped by which addresses are specific
//! (`family::address_groups`), each group its own automaton reading its
//! most specific fields first, and a group past the build limits is
//! split into its specific and its wild half (`family::split`), as
//! rte_acl splits its tries. A packet walks every automaton, all in step
//! (several packets at once with `walk_batch`), and merges the leaves in
//! rule order, cut at the earliest rule that surely ends the walk.

use super::family::{
    address_groups, jumped_over, key, needs_state, split, FamilyRules, FIELDS, PROTO,
};
use super::fields::{in_mapped, Constraints};
use crate::eval::Walk;
use crate::program::{class, Program};
use std::cell::Cell;
use std::collections::HashMap;
use weir_wire::Packet;

/// A node reference: an offset into `nodes`, or a leaf (this bit). A leaf
/// holds its rule list inline: one rule index (`SINGLE`), or an offset
/// into `pool` where the list's length and then its rules are. `STOP`:
/// the list's last rule ends every walk that reaches this leaf.
const LEAF: u32 = 1 << 31;
const STOP: u32 = 1 << 30;
const SINGLE: u32 = 1 << 29;
const INDEX: u32 = SINGLE - 1;
/// `pool[0]` is 0: the empty list.
const EMPTY: u32 = LEAF;
const NO_STOP: u32 = u32::MAX;
/// A node's header word: the level it reads (field in bits 0–2, shift in
/// 3–9, width in 10–14) and its segment count (from bit 15). Up to this
/// many segments, the node lists the segment starts and a packet counts
/// those at or below its value; beyond, a bitmap of the starts and its
/// running counts give the rank in constant time.
const LINEAR_SEGMENTS: usize = 16;
/// Build limits per automaton: node words, and item visits while building.
/// Past either, the group is split (or, at the smallest, the engine walks
/// linearly).
const MAX_WORDS: usize = 8 << 20;
const MAX_WORK: u64 = 8 << 20;
/// Limits on the whole classifier, whatever the rules: node and list words
/// held (64 MiB), and item visits over every attempt (seconds, not minutes:
/// the 100k-rule sets of BENCHMARKS.md take 27–45 M).
const MAX_TOTAL_WORDS: usize = 16 << 20;
const MAX_TOTAL_WORK: u64 = 128 << 20;
/// Most automata per family (each costs a walk per packet).
const MAX_GROUPS: usize = 12;
/// A state with at most this many rule intervals left is a leaf: the
/// evaluator checks the rules it lists (reading on to separate the last
/// few would cost more nodes than it saves).
const LEAF_ITEMS: usize = 2;
/// Most interval combinations a rule is expanded into; beyond, its
/// widest-listed field is replaced by its hull (a superset: the rule is
/// then only a candidate, never cuts a list).
const MAX_EXPANSIONS: usize = 16;

/// Packets walked together by [`TrieClassifier::walk_batch`].
pub const BATCH: usize = 16;

/// Where one packet's walks ended: a leaf per automaton.
#[derive(Clone, Copy)]
pub struct Leaves {
    /// Automata walked; `LINEAR.n` when the packet walks every rule.
    n: u8,
    at: [u32; MAX_GROUPS],
    /// A `SINGLE` leaf's rule (a list of one for `TrieWalk`).
    single: [u32; MAX_GROUPS],
}

impl Leaves {
    pub const LINEAR: Leaves = Leaves {
        n: u8::MAX,
        at: [EMPTY; MAX_GROUPS],
        single: [0; MAX_GROUPS],
    };
}

/// One packet's candidates: the leaves' lists (and the state probes),
/// merged as the evaluator asks, never sorted or copied. Each list keeps
/// a cursor, so the walk's forward moves cost a step per list.
pub struct TrieWalk<'a> {
    lists: [&'a [u32]; MAX_GROUPS + 1],
    n: usize,
    /// Per list, the index of its first rule not yet passed (a list may
    /// hold every rule of the ruleset).
    cursors: Cell<[u32; MAX_GROUPS + 1]>,
    /// No candidate after this rule: it ends every walk that gets there.
    stop: u32,
    /// The default rule's index, the answer once the lists are spent.
    last: usize,
}

impl TrieWalk<'_> {
    /// The first candidate at or after rule `i`, if any.
    #[inline(always)]
    fn first_at(&self, i: usize) -> Option<u32> {
        let mut cursors = self.cursors.get();
        let mut best = u32::MAX;
        for (list, c) in self.lists[..self.n].iter().zip(&mut cursors) {
            let mut k = *c as usize;
            if k > 0 && list[k - 1] as usize >= i {
                // Back (a `return` after a `call`).
                k = list.partition_point(|&r| (r as usize) < i);
            }
            while list.get(k).is_some_and(|&r| (r as usize) < i) {
                k += 1;
            }
            *c = k as u32;
            if let Some(&r) = list.get(k) {
                best = best.min(r);
            }
        }
        self.cursors.set(cursors);
        (best != NO_STOP && best <= self.stop).then_some(best)
    }
}

impl Walk for TrieWalk<'_> {
    #[inline(always)]
    fn next(&self, i: usize) -> usize {
        self.first_at(i).map_or(self.last, |r| r as usize)
    }
}

/// One level: which key field, and which bits of it (`(key >> shift) & mask`).
#[derive(Clone, Copy, Debug)]
struct Level {
    field: u8,
    shift: u8,
    /// Bits read at this level.
    bits: u8,
}

pub struct TrieClassifier {
    nodes: Vec<u32>,
    pool: Vec<u32>,
    /// Per family, each automaton's root (a node or a leaf).
    roots4: Vec<u32>,
    roots6: Vec<u32>,
    /// Candidates of every packet of a known flow (`class::STATE`).
    state: Vec<u32>,
    /// Item visits spent building, every attempt (for `MAX_TOTAL_WORK`).
    work: u64,
}

impl TrieClassifier {
    pub fn build(prog: &Program) -> Option<TrieClassifier> {
        let constraints: Vec<Constraints> = prog
            .rules
            .iter()
            .map(|r| Constraints::of(prog, prog.rule_insns(r)))
            .collect();
        let jumped = jumped_over(prog);
        let mut d = TrieClassifier {
            nodes: Vec::new(),
            pool: vec![0],
            roots4: Vec::new(),
            roots6: Vec::new(),
            state: (0..prog.rules.len())
                .filter(|&r| needs_state(prog, r) || prog.rules[r].probe)
                .map(|r| r as u32)
                .collect(),
            work: 0,
        };
        for v6 in [false, true] {
            let rules = FamilyRules::new(prog, &constraints, &jumped, v6);
            *if v6 { &mut d.roots6 } else { &mut d.roots4 } = d.build_family(&rules)?;
        }
        Some(d)
    }

    /// One automaton per address group (`address_groups`); a group past
    /// the build limits is split in two by wildness (`split`) and tried
    /// again, up to `MAX_GROUPS` automata. Returns their roots; None when
    /// the rules do not fit.
    fn build_family(&mut self, rules: &FamilyRules) -> Option<Vec<u32>> {
        let mut todo = address_groups(rules);
        let mut built = Vec::new();
        while let Some(group) = todo.pop() {
            let mark = self.mark();
            match Builder::new(rules, &group, self).and_then(|b| b.run()) {
                Some(root) => built.push(root),
                None if built.len() + todo.len() + 2 <= MAX_GROUPS && group.len() > 1 => {
                    self.reset(mark);
                    todo.extend(split(rules, group));
                }
                None => return None,
            }
        }
        Some(built)
    }

    fn mark(&self) -> (usize, usize) {
        (self.nodes.len(), self.pool.len())
    }

    fn reset(&mut self, (n, p): (usize, usize)) {
        self.nodes.truncate(n);
        self.pool.truncate(p);
    }

    /// Fills `out` with packet `p`'s candidate rules in rule order; false
    /// when the packet must walk every rule (an IPv6 address inside the
    /// IPv4-mapped block). For statistics and tests: the packet path
    /// merges the lists in place (`merge`).
    #[inline]
    pub fn candidates(&self, p: &Packet, class: u32, out: &mut Vec<u32>) -> bool {
        self.collect(&self.leaves(p), class, out)
    }

    /// Where packet `p`'s walks end.
    #[inline]
    pub fn leaves(&self, p: &Packet) -> Leaves {
        let mut leaves = [Leaves::LINEAR];
        self.walk_batch(std::slice::from_ref(p), &mut leaves);
        leaves[0]
    }

    /// Walks every automaton for each packet of `ps` (at most [`BATCH`]),
    /// all in step, a level each per round: the walks' loads are
    /// independent, so their cache misses overlap (what rte_acl gets
    /// from SIMD lanes). `out[i]` gets packet i's leaves.
    #[inline]
    pub fn walk_batch(&self, ps: &[Packet], out: &mut [Leaves]) {
        debug_assert!(ps.len() <= BATCH && out.len() >= ps.len());
        let mut keys = [[0u64; FIELDS]; BATCH];
        let mut roots: [&[u32]; BATCH] = [&[]; BATCH];
        for (i, p) in ps.iter().enumerate() {
            (roots[i], keys[i]) = if p.ip_version == 4 {
                (
                    &self.roots4[..],
                    key(p, p.src as u32 as u64, p.dst as u32 as u64),
                )
            } else if p.ip_version == 6 && !in_mapped(p.src) && !in_mapped(p.dst) {
                (
                    &self.roots6[..],
                    key(p, (p.src >> 64) as u64, (p.dst >> 64) as u64),
                )
            } else {
                out[i] = Leaves::LINEAR;
                continue;
            };
            out[i].n = roots[i].len() as u8;
            out[i].at[..roots[i].len()].copy_from_slice(roots[i]);
        }
        loop {
            let mut inner = false;
            for i in 0..ps.len() {
                for a in &mut out[i].at[..roots[i].len()] {
                    if *a & LEAF == 0 {
                        *a = self.step(*a, &keys[i]);
                        inner |= *a & LEAF == 0;
                    }
                }
            }
            if !inner {
                break;
            }
        }
        for l in &mut out[..ps.len()] {
            for k in 0..usize::from(l.n).min(MAX_GROUPS) {
                l.single[k] = l.at[k] & INDEX;
            }
        }
    }

    /// The walk over the candidates of a packet of class `class` whose
    /// automata ended at `leaves` (None: it must walk every rule).
    #[inline]
    pub fn merge<'a>(
        &'a self,
        leaves: &'a Leaves,
        class: u32,
        default_rule: usize,
    ) -> Option<TrieWalk<'a>> {
        if leaves.n == Leaves::LINEAR.n {
            return None;
        }
        let at = &leaves.at[..leaves.n as usize];
        let mut w = TrieWalk {
            lists: [&[]; MAX_GROUPS + 1],
            n: at.len(),
            cursors: Cell::new([0; MAX_GROUPS + 1]),
            stop: NO_STOP,
            last: default_rule,
        };
        for (k, l) in at.iter().enumerate() {
            w.lists[k] = if l & SINGLE != 0 {
                std::slice::from_ref(&leaves.single[k])
            } else {
                self.list(*l)
            };
        }
        if class & class::STATE != 0 {
            // A state's action may be anything: then no list is cut.
            w.lists[w.n] = &self.state;
            w.n += 1;
        } else {
            w.stop = at.iter().map(|&l| self.stop(l)).min().unwrap_or(NO_STOP);
        }
        Some(w)
    }

    /// The candidates of a packet of class `class` that reached `leaves`,
    /// into `out` in rule order; false when it must walk every rule.
    pub fn collect(&self, leaves: &Leaves, class: u32, out: &mut Vec<u32>) -> bool {
        let Some(w) = self.merge(leaves, class, usize::MAX) else {
            return false;
        };
        out.clear();
        let mut i = 0;
        while let Some(r) = w.first_at(i) {
            out.push(r);
            i = r as usize + 1;
        }
        true
    }

    /// A list leaf's rules.
    #[inline(always)]
    fn list(&self, leaf: u32) -> &[u32] {
        let at = (leaf & INDEX) as usize;
        &self.pool[at + 1..][..self.pool[at] as usize]
    }

    /// The rule at which every walk through this leaf ends, if any.
    #[inline(always)]
    fn stop(&self, leaf: u32) -> u32 {
        match (leaf & STOP != 0, leaf & SINGLE != 0) {
            (false, _) => NO_STOP,
            (true, true) => leaf & INDEX,
            (true, false) => self.list(leaf).last().copied().unwrap_or(NO_STOP),
        }
    }

    /// One step of automaton `a` from node `at`.
    #[inline(always)]
    fn step(&self, at: u32, key: &[u64; FIELDS]) -> u32 {
        let node = &self.nodes[at as usize..];
        let head = node[0];
        let (field, shift, bits) = (head & 7, head >> 3 & 0x7f, head >> 10 & 0x1f);
        let v = (key[field as usize] >> shift) as u32 & ((1 << bits) - 1);
        let n = (head >> 15) as usize;
        if n <= LINEAR_SEGMENTS {
            // Segment starts padded to a multiple of 4 (with u32::MAX),
            // counted four at a time, then the n children.
            let padded = (n - 1).next_multiple_of(4);
            let starts = &node[1..1 + padded];
            let idx: usize = starts
                .chunks_exact(4)
                .map(|c| c.iter().map(|&s| usize::from(v >= s)).sum::<usize>())
                .sum();
            node[1 + padded + idx]
        } else {
            // Rank of v's segment start in the bitmap: the set bits up to
            // v, then the children.
            let words = (1usize << bits) / 32;
            let w = v as usize / 32;
            let before = node[1 + words + w / 2] >> (16 * (w & 1)) & 0xffff;
            let upto = node[1 + w] & (u32::MAX >> (31 - v % 32));
            node[words + words / 2 + (before + upto.count_ones()) as usize]
        }
    }

    pub fn memory(&self) -> usize {
        (self.nodes.len() + self.pool.len() + self.state.len()) * 4
            + (self.roots4.len() + self.roots6.len()) * 4
    }
}

/// A rule's interval on each field, one combination of its sets.
struct Expansion {
    /// Family rule id.
    rule: u32,
    iv: [(u64, u64); FIELDS],
    /// Ends every walk when the packet is inside `iv`.
    definitive: bool,
    /// Per level: every later level admits every value.
    full_after: Vec<bool>,
}

/// A rule still possible in a state: its expansion, and the interval it
/// still requires of the field being read, relative to the state's box.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct Item {
    e: u32,
    lo: u64,
    hi: u64,
}

struct Builder<'a> {
    rules: &'a FamilyRules,
    out: &'a mut TrieClassifier,
    levels: Vec<Level>,
    /// Per level: bits of its field not yet read before it.
    rem: Vec<u32>,
    exps: Vec<Expansion>,
    memo: HashMap<(u8, Vec<Item>), u32, ahash::RandomState>,
    words: usize,
    work: u64,
}

impl<'a> Builder<'a> {
    fn new(
        rules: &'a FamilyRules,
        group: &[u32],
        out: &'a mut TrieClassifier,
    ) -> Option<Builder<'a>> {
        // The fields most rules of the group are specific in first,
        // protocol first among equals (it is one byte).
        let mut specific = [0usize; FIELDS];
        for &r in group {
            let small = rules.small_fields(r);
            (0..FIELDS).for_each(|f| specific[f] += usize::from(small & 1 << f != 0));
        }
        let mut order: Vec<usize> = (0..FIELDS).collect();
        order.sort_by_key(|&f| (std::cmp::Reverse(specific[f]), f != PROTO, f));
        let mut levels = Vec::new();
        let mut rem = Vec::new();
        for &f in &order {
            let mut left = rules.bits[f];
            while left > 0 {
                // The root reads 16 bits of an address (one step fewer for
                // every packet; a 65,536-bit bitmap at most once per
                // automaton). Else a byte, the odd bits first: a 17-bit
                // port is read 9 + 8.
                let take = if levels.is_empty() && f != PROTO && left >= 32 {
                    16
                } else if left.is_multiple_of(8) {
                    8
                } else {
                    left % 8 + 8
                }
                .min(left);
                rem.push(left);
                left -= take;
                levels.push(Level {
                    field: f as u8,
                    shift: left as u8,
                    bits: take as u8,
                });
            }
        }
        let mut exps = Vec::new();
        for &r in group {
            expand(rules, r, &levels, &mut exps)?;
        }
        Some(Builder {
            rules,
            out,
            levels,
            rem,
            exps,
            memo: HashMap::default(),
            words: 0,
            work: 0,
        })
    }

    /// The automaton's root.
    fn run(mut self) -> Option<u32> {
        let first = self.levels[0].field as usize;
        let items: Vec<Item> = (0..self.exps.len() as u32)
            .map(|e| {
                let (lo, hi) = self.exps[e as usize].iv[first];
                Item { e, lo, hi }
            })
            .collect();
        let root = self.state(0, items)?;
        Some(root)
    }

    /// Whether item `it` at level `l` admits every key from here on.
    fn done(&self, l: usize, it: &Item) -> bool {
        if l >= self.levels.len() {
            return true;
        }
        let x = &self.exps[it.e as usize];
        it.lo == 0 && it.hi == low_mask(self.rem[l]) && x.full_after[l]
    }

    /// The node (or leaf) for the state `items` before reading level `l`.
    fn state(&mut self, mut l: usize, mut items: Vec<Item>) -> Option<u32> {
        let cuts = loop {
            if let Some(k) = items
                .iter()
                .position(|it| self.exps[it.e as usize].definitive && self.done(l, it))
            {
                items.truncate(k + 1);
            }
            if items.is_empty() {
                return Some(EMPTY);
            }
            if items.len() <= LEAF_ITEMS || items.iter().all(|it| self.done(l, it)) {
                return self.leaf(l, &items);
            }
            self.work += items.len() as u64;
            self.out.work += items.len() as u64;
            if self.work > MAX_WORK || self.out.work > MAX_TOTAL_WORK {
                return None;
            }
            let cuts = self.segments(l, &items);
            if cuts.len() > 1 {
                break cuts;
            }
            // Every item admits every value here: skip the level.
            items = self.children(l, &items, &cuts).swap_remove(0);
            l += 1;
        };
        let key = (l as u8, items);
        if let Some(&n) = self.memo.get(&key) {
            return Some(n);
        }
        let (_, items) = &key;
        let mut kids = Vec::with_capacity(cuts.len());
        for child in self.children(l, items, &cuts) {
            kids.push(if child.is_empty() {
                EMPTY
            } else {
                self.state(l + 1, child)?
            });
        }
        // Neighbouring segments with one child are one segment.
        let (mut starts, mut refs) = (Vec::new(), Vec::new());
        for (&c, &k) in cuts.iter().zip(&kids) {
            if refs.last() != Some(&k) {
                starts.push(c);
                refs.push(k);
            }
        }
        let n = refs.len();
        if n == 1 {
            self.memo.insert(key, refs[0]);
            return Some(refs[0]);
        }
        let at = self.out.nodes.len();
        let level = self.levels[l];
        self.out.nodes.push(
            u32::from(level.field)
                | u32::from(level.shift) << 3
                | u32::from(level.bits) << 10
                | (n as u32) << 15,
        );
        if n <= LINEAR_SEGMENTS {
            self.out.nodes.extend_from_slice(&starts[1..]);
            let padded = (n - 1).next_multiple_of(4);
            self.out.nodes.resize(at + 1 + padded, u32::MAX);
        } else {
            // A bit per value where a segment starts, and per word of
            // bits, how many are set before it.
            let words = (1usize << self.levels[l].bits) / 32;
            let mut bits = vec![0u32; words];
            for &c in &starts {
                bits[c as usize / 32] |= 1 << (c % 32);
            }
            let mut before = Vec::with_capacity(words);
            let mut total = 0;
            for w in &bits {
                before.push(total);
                total += w.count_ones();
            }
            self.out.nodes.extend_from_slice(&bits);
            let packed = before
                .chunks(2)
                .map(|c| c[0] | c.get(1).map_or(0, |&s| s << 16));
            self.out.nodes.extend(packed);
        }
        self.out.nodes.extend_from_slice(&refs);
        self.words += self.out.nodes.len() - at;
        if self.words > MAX_WORDS || self.out.nodes.len() + self.out.pool.len() > MAX_TOTAL_WORDS {
            return None;
        }
        self.memo.insert(key, at as u32);
        Some(at as u32)
    }

    /// The values at level `l` where some item's requirement changes:
    /// segment starts, sorted, from 0.
    fn segments(&self, l: usize, items: &[Item]) -> Vec<u32> {
        let below = self.rem[l] - u32::from(self.levels[l].bits);
        let width = 1u64 << self.levels[l].bits;
        let mut cuts = vec![0u32];
        for it in items {
            let (first, last) = (it.lo >> below, it.hi >> below);
            cuts.push(first as u32);
            if it.lo & low_mask(below) != 0 {
                cuts.push(first as u32 + 1);
            }
            if it.hi & low_mask(below) != low_mask(below) {
                cuts.push(last as u32);
            }
            cuts.push(last as u32 + 1);
        }
        cuts.retain(|&c| u64::from(c) < width);
        cuts.sort_unstable();
        cuts.dedup();
        cuts
    }

    /// Per segment (`cuts` from `segments`), the items after reading a
    /// value in it at level `l`, in order.
    fn children(&self, l: usize, items: &[Item], cuts: &[u32]) -> Vec<Vec<Item>> {
        let below = self.rem[l] - u32::from(self.levels[l].bits);
        let next_field = self.levels.get(l + 1).map(|n| n.field as usize);
        let mut out = vec![Vec::new(); cuts.len()];
        for it in items {
            let segment = |v: u64| cuts.partition_point(|&c| u64::from(c) <= v) - 1;
            let first = segment(it.lo >> below);
            let last = segment(it.hi >> below);
            for (s, child) in out.iter_mut().enumerate().take(last + 1).skip(first) {
                let v = u64::from(cuts[s]);
                let (box_lo, box_hi) = (v << below, v << below | low_mask(below));
                if it.lo > box_hi || it.hi < box_lo {
                    continue;
                }
                child.push(match next_field {
                    // The field is read to its end: the next one starts.
                    Some(f) if below == 0 => {
                        let (lo, hi) = self.exps[it.e as usize].iv[f];
                        Item { e: it.e, lo, hi }
                    }
                    _ => Item {
                        e: it.e,
                        lo: it.lo.max(box_lo) - box_lo,
                        hi: it.hi.min(box_hi) - box_lo,
                    },
                });
            }
        }
        out
    }

    fn leaf(&mut self, l: usize, items: &[Item]) -> Option<u32> {
        let last = items.last()?;
        let stops = self.exps[last.e as usize].definitive && self.done(l, last);
        let mut rules: Vec<u32> = Vec::with_capacity(items.len());
        for it in items {
            let r = self.rules.index[self.exps[it.e as usize].rule as usize];
            if !rules.contains(&r) {
                rules.push(r);
            }
        }
        let stop = if stops { STOP } else { 0 };
        if let [one] = rules[..] {
            return Some(LEAF | stop | SINGLE | one);
        }
        let at = self.out.pool.len();
        if self.out.nodes.len() + at + rules.len() > MAX_TOTAL_WORDS {
            return None;
        }
        self.out.pool.push(rules.len() as u32);
        self.out.pool.extend_from_slice(&rules);
        Some(LEAF | stop | at as u32)
    }
}

/// Family rule `r` as expansions (one interval per field each), with the
/// fields in which every value is admitted.
fn expand(rules: &FamilyRules, r: u32, levels: &[Level], out: &mut Vec<Expansion>) -> Option<()> {
    let mut sets: Vec<Vec<(u64, u64)>> = (0..FIELDS).map(|f| rules.set(r, f).to_vec()).collect();
    let mut exact = true;
    while sets.iter().map(Vec::len).product::<usize>() > MAX_EXPANSIONS {
        let widest = (0..FIELDS).max_by_key(|&f| sets[f].len())?;
        let hull = (sets[widest][0].0, sets[widest].last()?.1);
        sets[widest] = vec![hull];
        exact = false;
    }
    let full: Vec<bool> = (0..FIELDS)
        .map(|f| sets[f] == [(0, rules.max[f])] || sets[f] == [(0, low_mask(rules.bits[f]))])
        .collect();
    // Unconstrained fields span the whole key range, so they read as full.
    for (f, s) in sets.iter_mut().enumerate() {
        if full[f] {
            *s = vec![(0, low_mask(rules.bits[f]))];
        }
    }
    let full_after: Vec<bool> = (0..levels.len())
        .map(|l| {
            let f = levels[l].field as usize;
            levels[l + 1..]
                .iter()
                .all(|n| n.field as usize == f || full[n.field as usize])
        })
        .collect();
    let definitive = rules.definitive[r as usize] && exact;
    let mut combos = vec![[(0u64, 0u64); FIELDS]];
    for (f, s) in sets.iter().enumerate() {
        combos = combos
            .iter()
            .flat_map(|c| {
                s.iter().map(move |&iv| {
                    let mut c = *c;
                    c[f] = iv;
                    c
                })
            })
            .collect();
    }
    out.extend(combos.into_iter().map(|iv| Expansion {
        rule: r,
        iv,
        definitive,
        full_after: full_after.clone(),
    }));
    Some(())
}

/// Lowest `bits` bits set (0 ≤ bits ≤ 64).
fn low_mask(bits: u32) -> u64 {
    u64::MAX.checked_shr(64 - bits).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use weir_wire::v4_mapped;

    fn program(text: &str) -> Program {
        crate::load(text, &weir_rules::Names::default(), &Default::default())
            .expect("rules compile")
    }

    fn packet(src: u32, dst: u32, proto: u8, dst_port: u16) -> Packet {
        Packet {
            src: v4_mapped(src),
            dst: v4_mapped(dst),
            l3: weir_wire::L3::Ip,
            ip_version: 4,
            proto,
            src_port: 1234,
            dst_port,
            has_ports: true,
            ..Packet::default()
        }
    }

    /// An ACL packet's candidates are its addresses' one rule and the
    /// later, wider rules: no other rule of the 200. (A leaf is made once
    /// one rule is left, before its last fields are read, so that rule may
    /// still fail, and it cannot cut the other groups' lists.)
    #[test]
    fn acl_candidates_are_few() {
        let mut text = String::new();
        for i in 0..200 {
            text += &format!("allow tcp from 10.0.{i}.0/24 to 192.0.2.{} 80\n", i % 50);
        }
        text += "deny tcp from 10.0.0.0/8 to any\n";
        let prog = program(&text);
        let t = TrieClassifier::build(&prog).expect("builds");
        let mut out = Vec::new();
        let p = packet(0x0a00_0705, 0xc000_0207, 6, 80);
        assert!(t.candidates(&p, crate::packet_class(&p), &mut out));
        // 10.0.7.5 → 192.0.2.7:80 is rule index 7.
        assert_eq!(out[0], 7, "{out:?}");
        assert!(out[1..].iter().all(|&r| r >= 200), "{out:?}");
        // Another port: only the /8 deny (index 200) can match.
        let p = packet(0x0a00_0705, 0xc000_0207, 6, 443);
        assert!(t.candidates(&p, crate::packet_class(&p), &mut out));
        assert!(out.contains(&200), "{out:?}");
        assert!(out.iter().all(|&r| r == 7 || r >= 200), "{out:?}");
        // UDP: none of the tcp allows (each group reads its protocol early).
        let p = packet(0x0a00_0705, 0xc000_0207, 17, 80);
        assert!(t.candidates(&p, crate::packet_class(&p), &mut out));
        assert!(out.iter().all(|&r| r >= 200), "{out:?}");
    }

    /// A packet of a known flow (`class::STATE`) has every state probe as
    /// a candidate, whatever the probe's other fields; in rule order.
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
        let t = TrieClassifier::build(&prog).expect("builds");
        let p = packet(0x0a00_0305, 0xc000_0201, 6, 80);
        let mut out = Vec::new();
        let class = crate::packet_class(&p);
        assert!(t.candidates(&p, class, &mut out));
        let others: Vec<u32> = out
            .iter()
            .copied()
            .filter(|r| !probes.contains(r))
            .collect();
        // 10.0.3.0/24 port 80 is rule 40 (index 4, after check-state 5),
        // then the default rule.
        assert_eq!(others, vec![4, prog.default_index() as u32]);
        assert!(t.candidates(&p, class | class::STATE, &mut out));
        assert!(probes.iter().all(|r| out.contains(r)), "{out:?}");
        assert!(
            out.contains(&4) && out.windows(2).all(|w| w[0] < w[1]),
            "{out:?}"
        );
    }

    /// IPv6 packets inside the IPv4-mapped block walk every rule.
    #[test]
    fn mapped_ipv6_walks_linearly() {
        let prog = program("allow ip from 10.0.0.0/8 to any\n");
        let t = TrieClassifier::build(&prog).expect("builds");
        let mut p = packet(0x0a00_0001, 0x0a00_0002, 6, 80);
        p.ip_version = 6;
        let mut out = Vec::new();
        assert!(!t.candidates(&p, crate::packet_class(&p), &mut out));
    }
}
