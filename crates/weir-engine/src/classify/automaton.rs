//! One automaton: a deterministic walk over a group of rules' key
//! intervals, read a few bits at a time (`trie.rs` says how the
//! classifier uses them).
//!
//! A state is "the rules this packet can still match, and what each
//! still requires of the field being read". States are built by subset
//! construction from the root and shared when equal (memoised), so the
//! automaton is a DAG. A state's list is cut after its first rule that
//! surely ends the walk (a terminal action, every instruction indexed,
//! nothing left to require, no jump over it): the priority pruning that
//! keeps states few and leaves short.
//!
//! A state with at most `LEAF_ITEMS` rule intervals left, or nothing left
//! to read, is a leaf: its rules, in order, are the packet's candidates
//! (the evaluator checks them). Levels where every rule admits every
//! byte are skipped (a node names its level). A node lists up to
//! `LINEAR_SEGMENTS` segments' starts, counted against the value read, or
//! holds a bitmap of them, ranked in constant time: no branch on the
//! value.

use super::family::{FamilyRules, FIELDS, PROTO};
use hashbrown::HashTable;

/// A node reference: an offset into `nodes`, or a leaf (this bit). A leaf
/// holds its rule list inline: one rule index (`SINGLE`), or an offset
/// into `pool` where the list's length and then its rules are. `STOP`:
/// the list's last rule ends every walk that reaches this leaf.
pub const LEAF: u32 = 1 << 31;
pub const STOP: u32 = 1 << 30;
pub const SINGLE: u32 = 1 << 29;
pub const INDEX: u32 = SINGLE - 1;
/// `pool[0]` is 0: the empty list.
pub const EMPTY: u32 = LEAF;
/// A node reference names what the node reads and how it is laid out, so
/// that a node has no header word and the SIMD walks gather none (one
/// gather of six a step fewer): the node's offset in pairs of words
/// (nodes start at even words) in bits 0–21, its level's place in
/// `Store::levels` in bits 22–26, and its segment count n in bits 27–30
/// where it is listed (0 for a bitmap).
pub const OFFSET: u32 = (1 << 22) - 1;
pub const LEVEL_AT: u32 = 22;
pub const KIND_AT: u32 = 27;
/// The levels a store's references can name (`Store::levels`).
pub const MAX_LEVELS: usize = 32;
/// The node words a store's references reach (32 MiB).
const MAX_NODE_WORDS: usize = ((OFFSET as usize) + 1) << 1;

/// Where the node `node` (a reference, not a leaf) starts in `nodes`.
#[inline(always)]
pub fn node_at(node: u32) -> usize {
    ((node & OFFSET) as usize) << 1
}

/// Where a bitmap node keeps its word of bits `w` and the running counts
/// of `w`'s pair of words: three words a pair, the even word of bits,
/// the pair's counts (16 bits each, the even word's low), the odd word.
/// Whichever word a step reads, the two words from w + w / 2 are it and
/// its counts, in either order: the SIMD walks read both in one 64-bit
/// gather element, and they are most often in one cache line (kept
/// apart, the counts were an eighth of the walks' simulated misses at
/// 100k rules; BENCHMARKS.md, "Four gathers a step"). Levels read 8–16
/// bits: a node has 8 to 2,048 words of bits, whole pairs.
#[inline(always)]
pub fn bitmap_words(w: usize) -> (usize, usize) {
    (w / 2 * 3 + (w % 2) * 2, w / 2 * 3 + 1)
}

/// A bitmap node's words of bits and counts, `words` words of bits: its
/// children follow them, where a next pair's bits would be.
#[inline(always)]
pub fn bitmap_head(words: usize) -> usize {
    bitmap_words(words).0
}

/// Up to this many segments, a node is listed: the n - 1 segment starts
/// after the first (16 bits each, two to a word: one or two words), then
/// its n children (no header word: the reference says what the node
/// reads). The starts at or below a packet's value give its child: a
/// step of the SIMD walks reads both words in one round of gathers, as
/// it reads a bitmap's word and counts, then the child. Beyond, a bitmap
/// of the starts and its running counts give the rank in constant time,
/// then the children. (Up to fifteen segments were listed, every third
/// start in a summary read before the word of its block: a third round
/// of gathers and a fifth gather a step, for a classifier 3.5–9%
/// smaller; BENCHMARKS.md, "Four gathers a step".)
pub const LINEAR_SEGMENTS: usize = 5;
/// A state with at most this many rule intervals left is a leaf: the
/// evaluator checks the rule it names. Reading on until that rule is
/// surely matched would let the classifier decide every such packet
/// alone, but deepens the walks and grows the automata by half or more
/// (no faster at 10k rules; at 100k, builds 15–42% longer). Leaves of two
/// intervals leave more packets to try two rules and fewer to be decided
/// alone: 0–7% slower at 10k, 4–16% at 100k (BENCHMARKS.md, "Leaves of
/// one rule").
const LEAF_ITEMS: usize = 1;
/// Most interval combinations a rule is expanded into; beyond, its
/// widest-listed field is replaced by its hull (a superset: the rule is
/// then only a candidate, never cuts a list).
const MAX_EXPANSIONS: usize = 16;

/// Every automaton of a classifier: node words, and the rule lists of
/// leaves (and of whatever else lists rules: `pool[at]` is a list's
/// length, its rules follow).
pub struct Store {
    pub nodes: Vec<u32>,
    pub pool: Vec<u32>,
    /// The levels nodes read, each as its field (bits 0–2), shift (3–9)
    /// and width (10–14): a reference names its node's by its place
    /// here. Every level of either family fits (25 at most: a field's
    /// byte at each of its shifts, the addresses' 16-bit roots, the
    /// ports' 9-bit tops).
    pub levels: Vec<u32>,
}

impl Default for Store {
    fn default() -> Store {
        Store {
            nodes: Vec::new(),
            pool: vec![0],
            levels: Vec::new(),
        }
    }
}

impl Store {
    /// Words held.
    pub fn words(&self) -> usize {
        self.nodes.len() + self.pool.len()
    }

    /// Appends a rule list; returns its offset.
    pub fn push_list(&mut self, rules: &[u32]) -> u32 {
        let at = self.pool.len() as u32;
        self.pool.push(rules.len() as u32);
        self.pool.extend_from_slice(rules);
        at
    }

    /// The rules of the list at `at`.
    #[inline(always)]
    pub fn list(&self, at: u32) -> &[u32] {
        let at = at as usize;
        &self.pool[at + 1..][..self.pool[at] as usize]
    }

    /// A list leaf's rules.
    #[inline(always)]
    pub fn leaf_list(&self, leaf: u32) -> &[u32] {
        self.list(leaf & INDEX)
    }

    /// A leaf's first rule and the rule at which every walk through it
    /// ends (a stop leaf's last rule), each `u32::MAX` for none. A leaf of
    /// one rule or none (nearly all of them) takes no branch on which it
    /// is: the two kinds fall in unpredictable order.
    #[inline(always)]
    pub fn first_and_stop(&self, leaf: u32) -> (u32, u32) {
        let (single, stops) = (leaf & SINGLE != 0, leaf & STOP != 0);
        let none = u32::MAX;
        let (first, last) = if single | (leaf == EMPTY) {
            let first = if single { leaf & INDEX } else { none };
            (first, first)
        } else {
            let list = self.leaf_list(leaf);
            let at = |r: Option<&u32>| r.copied().unwrap_or(none);
            (at(list.first()), at(list.last()))
        };
        (first, if stops { last } else { none })
    }

    /// A leaf's first rule after `rule` (`u32::MAX` for none).
    #[inline(always)]
    pub fn first_after(&self, leaf: u32, rule: u32) -> u32 {
        let single = [leaf & INDEX];
        let rules = match leaf {
            EMPTY => &[],
            l if l & SINGLE != 0 => &single[..],
            l => self.leaf_list(l),
        };
        rules
            .iter()
            .copied()
            .find(|&r| r > rule)
            .unwrap_or(u32::MAX)
    }

    /// Appends a node reading `level`: its segments start at `starts`
    /// (ascending, from 0) and lead to `refs`. Returns its reference, or
    /// None past what references can name (`OFFSET`, `MAX_LEVELS`).
    fn push_node(&mut self, level: Level, starts: &[u32], refs: &[u32]) -> Option<u32> {
        let n = refs.len();
        debug_assert!(n == starts.len() && n >= 2 && level.bits <= 16);
        let reads = level.reads();
        let code = match self.levels.iter().position(|&l| l == reads) {
            Some(code) => code,
            None if self.levels.len() < MAX_LEVELS => {
                self.levels.push(reads);
                self.levels.len() - 1
            }
            None => return None,
        };
        // Nodes start at even words: a reference counts pairs of words.
        if self.nodes.len() % 2 == 1 {
            self.nodes.push(0);
        }
        let at = self.nodes.len();
        if at >= MAX_NODE_WORDS {
            return None;
        }
        let kind = if n <= LINEAR_SEGMENTS { n as u32 } else { 0 };
        let node = (at >> 1) as u32 | (code as u32) << LEVEL_AT | kind << KIND_AT;
        let nodes = &mut self.nodes;
        if n <= LINEAR_SEGMENTS {
            // The starts after the first (`listed`), then the children.
            let starts = &starts[1..];
            let start = |i: usize| starts.get(i).map_or(u32::from(u16::MAX), |&s| s);
            let pair = |lo: usize, hi: usize| start(lo) | start(hi) << 16;
            nodes.extend((0..starts.len()).step_by(2).map(|i| pair(i, i + 1)));
        } else {
            // A bit per value where a segment starts, and per pair of
            // words of bits, how many are set before each (16 bits each),
            // the pair's counts beside them (`bitmap_words`).
            let words = (1usize << level.bits) / 32;
            nodes.resize(at + bitmap_head(words), 0);
            for &c in starts {
                nodes[at + bitmap_words(c as usize / 32).0] |= 1 << (c % 32);
            }
            let mut total = 0;
            for w in 0..words {
                let (bits, counts) = bitmap_words(w);
                nodes[at + counts] |= total << (16 * (w % 2));
                total += nodes[at + bits].count_ones();
            }
        }
        nodes.extend_from_slice(refs);
        Some(node)
    }

    /// One step from node `at`: the node or leaf the key's value at the
    /// node's level leads to.
    #[inline(always)]
    pub fn step(&self, at: u32, key: &[u64; FIELDS]) -> u32 {
        let node = &self.nodes[node_at(at)..];
        let reads = self.levels[(at >> LEVEL_AT) as usize % MAX_LEVELS];
        let (field, shift, bits) = (reads & 7, reads >> 3 & 0x7f, reads >> 10 & 0x1f);
        let v = (key[field as usize] >> shift) as u32 & ((1 << bits) - 1);
        let n = (at >> KIND_AT & 0xf) as usize;
        if n != 0 {
            // The starts at or below v: a count without a branch on v.
            // A padding half (u16::MAX) counts only when v is u16::MAX:
            // it is taken off then.
            let starts = n - 1;
            let words = &node[..starts.div_ceil(2)];
            let at_most = |half: u32| usize::from(half <= v);
            let count: usize = words
                .iter()
                .map(|&w| at_most(w & 0xffff) + at_most(w >> 16))
                .sum();
            let pads = 2 * words.len() - starts;
            node[words.len() + count - pads * usize::from(v == 0xffff)]
        } else {
            // Rank of v's segment start in the bitmap: the set bits up to
            // v, then the children.
            let words = (1usize << bits) / 32;
            let w = v as usize / 32;
            let (bits_at, counts_at) = bitmap_words(w);
            let before = node[counts_at] >> (16 * (w & 1)) & 0xffff;
            let upto = node[bits_at] & (u32::MAX >> (31 - v % 32));
            // The first segment starts at 0: the rank is at least 1.
            node[bitmap_head(words) + (before + upto.count_ones()) as usize - 1]
        }
    }

    /// Forgets everything written since `mark` (a failed build).
    pub fn reset(&mut self, (nodes, pool): (usize, usize)) {
        self.nodes.truncate(nodes);
        self.pool.truncate(pool);
    }

    /// Returns the memory past what is held to the allocator (after a
    /// family's one-tier build is given up: its store is as large as a
    /// whole build's).
    pub fn shrink(&mut self) {
        self.nodes.shrink_to_fit();
        self.pool.shrink_to_fit();
    }

    pub fn mark(&self) -> (usize, usize) {
        (self.nodes.len(), self.pool.len())
    }
}

/// What one automaton's build may spend.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Item visits (the build's time).
    pub work: u64,
    /// Words this automaton may add.
    pub words: usize,
    /// Words the whole store may reach.
    pub store_words: usize,
}

/// Builds the automaton of family rules `group` (ascending) into `out`:
/// its root, or None past `limits` (then the caller resets `out`). Also
/// returns the work spent, success or not.
pub fn build(
    rules: &FamilyRules,
    group: &[u32],
    out: &mut Store,
    limits: Limits,
    spare: &mut Spare,
) -> (Option<u32>, u64) {
    let Some(mut b) = Builder::new(rules, group, out, limits, spare) else {
        return (None, 0);
    };
    let built = b.run();
    b.give_back(spare);
    built
}

/// The builds' working vectors, handed from one automaton's build to the
/// next: the pages of the largest are faulted in once, not once per
/// automaton (page faults and the allocator were 15% of a 100k-rule
/// build). Dropped when the classifier is built.
#[derive(Default)]
pub struct Spare {
    /// The items of the states being built, each a range, pushed as the
    /// walk goes down and cut back as it returns: no list of its own per
    /// state.
    stack: Vec<Item>,
    /// Built states whose keys are short, or the root's: over the whole
    /// automaton.
    memo: Memos,
    /// Built states whose keys are long (`LONG_KEY`): over the root's
    /// child being built only.
    local: Memos,
    /// Per item of the state being split: its first and last segment.
    spans: Vec<(u32, u32)>,
    /// The states being built's segment starts, children's item ranges
    /// and children, each pushed as the walk goes down and cut back as it
    /// returns, like `stack`: no vectors of their own per state.
    cuts: Vec<u32>,
    ranges: Vec<(usize, usize)>,
    kids: Vec<u32>,
}

impl Spare {
    /// Empties every vector, keeping its memory.
    fn clear(&mut self) {
        self.stack.clear();
        self.memo.clear();
        self.local.clear();
        self.spans.clear();
        self.cuts.clear();
        self.ranges.clear();
        self.kids.clear();
    }

    /// The memo a key of this length class lives in: the local one for
    /// a long key (`LONG_KEY`), else the whole automaton's.
    fn memos(&mut self, long: bool) -> &mut Memos {
        match long {
            true => &mut self.local,
            false => &mut self.memo,
        }
    }
}

#[cfg(test)]
impl Spare {
    /// Long keys (`LONG_KEY`) held in the whole-automaton memo, and
    /// whether the local memo held any since it was made.
    pub fn long_keys(&self) -> (usize, bool) {
        let kept = self
            .memo
            .table
            .iter()
            .filter(|m| m.len as usize >= LONG_KEY);
        (kept.count(), self.local.table.capacity() > 0)
    }
}

/// One level: which key field, and which bits of it (`(key >> shift) & mask`).
#[derive(Clone, Copy, Debug)]
struct Level {
    field: u8,
    /// The field's bits under this level's (read by the levels after it).
    shift: u8,
    /// Bits read at this level.
    bits: u8,
}

impl Level {
    /// As `Store::levels` holds it.
    fn reads(self) -> u32 {
        u32::from(self.field) | u32::from(self.shift) << 3 | u32::from(self.bits) << 10
    }

    /// The values this level reads.
    fn width(self) -> u64 {
        1 << self.bits
    }
}

/// A rule's interval on each field, one combination of its sets.
struct Expansion {
    /// Family rule id.
    rule: u32,
    iv: [(u64, u64); FIELDS],
    /// Bit per level: every later level admits every value; and
    /// `DEFINITIVE`.
    after: u64,
}

/// `Expansion::after`: the rule ends every walk when the packet is inside
/// its intervals.
const DEFINITIVE: u64 = 1 << 63;

/// A rule still possible in a state: its expansion, and the interval it
/// still requires of the field being read, relative to the state's box.
/// Packed to 20 bytes (from 24): the stack of items is the build's
/// largest vector (room for 2.75 million items at ipc-100000).
#[derive(Clone, Copy)]
#[repr(C, packed(4))]
struct Item {
    e: u32,
    lo: u64,
    hi: u64,
}

/// How items go down from one level to the next.
struct Down<'a> {
    /// Bits of the level's field under the level's.
    below: u32,
    /// The next level's field, if this level reads its field's last bits.
    next_field: Option<usize>,
    exps: &'a [Expansion],
}

impl<'a> Down<'a> {
    fn at(l: usize, levels: &[Level], exps: &'a [Expansion]) -> Down<'a> {
        let below = u32::from(levels[l].shift);
        let next = levels.get(l + 1).filter(|_| below == 0);
        Down {
            below,
            next_field: next.map(|n| usize::from(n.field)),
            exps,
        }
    }

    /// Item `it` after reading value `v`: what it requires of the values
    /// under `v`, or of the next field (whatever `v`).
    fn item(&self, it: &Item, v: u32) -> Item {
        if let Some(f) = self.next_field {
            let (lo, hi) = self.exps[it.e as usize].iv[f];
            return Item { e: it.e, lo, hi };
        }
        let box_lo = u64::from(v) << self.below;
        Item {
            e: it.e,
            lo: it.lo.max(box_lo) - box_lo,
            hi: it.hi.min(box_lo | low_mask(self.below)) - box_lo,
        }
    }
}

/// States already built, found by their keys: each its items encoded
/// once in `items` (`encode_items`).
#[derive(Default)]
struct Memos {
    table: HashTable<Memo>,
    items: Vec<u8>,
}

impl Memos {
    fn clear(&mut self) {
        self.table.clear();
        self.items.clear();
    }

    /// The node or leaf of the state at level `l` whose key, hashed to
    /// `hash`, was just written at `items[at..]`; if found, the key is
    /// cut off again.
    fn find(&mut self, hash: u64, l: usize, at: usize) -> Option<u32> {
        let (known, key) = self.items.split_at(at);
        let same = |m: &Memo| {
            usize::from(m.level) == l
                && m.len as usize == key.len()
                && known[m.start as usize..][..key.len()] == key[..]
        };
        let found = self.table.find(hash, same).map(|m| m.node);
        if found.is_some() {
            self.items.truncate(at);
        }
        found
    }
}

/// A key of at least this many bytes is remembered only while the
/// root's child it was built under is being built: such a state (of
/// hundreds of items) is found again, if at all, under the same child.
/// In ipc-100000's largest automaton, 19,726 of the 19,769 finds of keys
/// of 2–4 KB were; across the automaton those keys held 79 of the memo's
/// 92 MB, at most 373 KB under any one child (BENCHMARKS.md, "Long keys
/// remembered under one child of the root").
const LONG_KEY: usize = 1024;

/// A state already built: its level and items (`Memos::items[start..][..len]`,
/// as `encode` writes them) and the node or leaf made of it.
struct Memo {
    hash: u64,
    level: u8,
    start: u32,
    len: u32,
    node: u32,
}

struct Builder<'a> {
    rules: &'a FamilyRules,
    out: &'a mut Store,
    limits: Limits,
    levels: Vec<Level>,
    /// Per level: bits of its field not yet read before it.
    rem: Vec<u32>,
    exps: Vec<Expansion>,
    /// Each expansion's `after`, apart: read for every item visited.
    after: Vec<u64>,
    /// The working vectors, handed on from the build before.
    v: Spare,
    hasher: ahash::RandomState,
    /// A bit per segment start of the level being split (all clear
    /// between splits): the starts in order, from a scan of the words.
    marks: Vec<u64>,
    /// Per segment start of the level being split, its segment's index
    /// (stale elsewhere). Every item's first value and the value past its
    /// last are starts, so an item's segments are two loads (a rank by
    /// popcount was 12% of a 100k-rule build: the build's code is not
    /// compiled for POPCNT).
    segment_at: Vec<u32>,
    /// A leaf's rules, as it is made.
    leaf_rules: Vec<u32>,
    words: usize,
    work: u64,
    /// The splits being built down to the state being built, the first
    /// `TRACKED_SPLITS` of them: the build's progress (`off_course`).
    path: Vec<Progress>,
    /// How many states are being built, nested: 1 inside the root's.
    depth: u32,
    /// The share of the whole build the next tracked split's state is.
    child_weight: f64,
    /// The work of the tracked splits' own items, which the progress
    /// does not count.
    tracked_work: u64,
}

/// How far the build of one split state has come.
struct Progress {
    /// The share of the whole build this state is (its parent's, times
    /// its items' share of the parent's items).
    weight: f64,
    /// Its children's items, summed over its segments, and those of the
    /// children built.
    items: f64,
    done: f64,
}

/// The splits whose progress `off_course` reads: the root alone may split
/// a few ways only (a protocol read first), leaving the work in one child.
const TRACKED_SPLITS: usize = 3;

impl<'a> Builder<'a> {
    fn new(
        rules: &'a FamilyRules,
        group: &[u32],
        out: &'a mut Store,
        limits: Limits,
        spare: &mut Spare,
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
        let levels = levels_in(&order, &rules.bits);
        // Per level, its field's bits not yet read before it.
        let rem = levels.iter().map(|l| u32::from(l.shift + l.bits)).collect();
        debug_assert!(levels.len() < 64);
        let mut exps = Vec::new();
        for &r in group {
            expand(rules, r, &levels, &mut exps)?;
        }
        let widest = 1usize << levels.iter().map(|l| l.bits).max().unwrap_or(0);
        let words = widest / 64 + 1;
        Some(Builder {
            rules,
            out,
            limits,
            levels,
            rem,
            after: exps.iter().map(|x| x.after).collect(),
            exps,
            v: {
                spare.clear();
                std::mem::take(spare)
            },
            hasher: ahash::RandomState::new(),
            marks: vec![0; words],
            segment_at: vec![0; widest],
            leaf_rules: Vec::new(),
            words: 0,
            work: 0,
            path: Vec::with_capacity(TRACKED_SPLITS),
            depth: 0,
            child_weight: 1.0,
            tracked_work: 0,
        })
    }

    /// The automaton's root.
    fn run(&mut self) -> (Option<u32>, u64) {
        let first = self.levels[0].field as usize;
        let exps = &self.exps;
        self.v.stack.extend((0..exps.len() as u32).map(|e| {
            let (lo, hi) = exps[e as usize].iv[first];
            Item { e, lo, hi }
        }));
        let root = self.state(0, 0, self.v.stack.len());
        (root, self.work)
    }

    /// Hands the working vectors on to the next build.
    fn give_back(self, spare: &mut Spare) {
        *spare = self.v;
    }

    /// Whether item `it` at level `l` admits every key from here on.
    fn done(&self, l: usize, it: &Item) -> bool {
        if l >= self.levels.len() {
            return true;
        }
        it.lo == 0 && it.hi == low_mask(self.rem[l]) && self.after[it.e as usize] >> l & 1 != 0
    }

    /// The items `stack[start..][..len]` at level `l`, in one pass: how
    /// many are left when the first that `ends` is the last, whether those
    /// are all `done`, and whether they all admit every value of `l`
    /// (`lo` 0 and `hi` full, as `done` requires).
    fn scan(&self, l: usize, start: usize, len: usize) -> (usize, bool, bool) {
        let past = l >= self.levels.len();
        let full = self.rem.get(l).map_or(0, |&r| low_mask(r));
        let (mut all_done, mut all_whole) = (true, true);
        for (k, it) in self.v.stack[start..][..len].iter().enumerate() {
            let after = self.after[it.e as usize];
            let whole = it.lo == 0 && it.hi == full;
            let done = past || whole && after >> l & 1 != 0;
            all_done &= done;
            all_whole &= whole;
            if done && after & DEFINITIVE != 0 {
                return (k + 1, all_done, all_whole);
            }
        }
        (len, all_done, all_whole)
    }

    /// Whether item `it` at level `l` ends every walk that gets here.
    fn ends(&self, l: usize, it: &Item) -> bool {
        self.after[it.e as usize] & DEFINITIVE != 0 && self.done(l, it)
    }

    /// The node (or leaf) for the state of items `stack[start..][..len]`
    /// before reading level `l`. Leaves the stacks as it found them.
    fn state(&mut self, l: usize, start: usize, len: usize) -> Option<u32> {
        let bases = (
            self.v.stack.len(),
            self.v.cuts.len(),
            self.v.ranges.len(),
            self.v.kids.len(),
        );
        self.depth += 1;
        let made = self.state_on(l, start, len);
        self.depth -= 1;
        self.v.stack.truncate(bases.0);
        self.v.cuts.truncate(bases.1);
        self.v.ranges.truncate(bases.2);
        self.v.kids.truncate(bases.3);
        made
    }

    fn state_on(&mut self, mut l: usize, mut start: usize, mut len: usize) -> Option<u32> {
        loop {
            let (ends_at, all_done, all_whole) = self.scan(l, start, len);
            len = ends_at;
            if len == 0 {
                return Some(EMPTY);
            }
            if len <= LEAF_ITEMS || all_done {
                return self.leaf(l, start, len);
            }
            self.work += len as u64;
            if self.work > self.limits.work {
                return None;
            }
            if !all_whole {
                break;
            }
            // Every item admits every value here: skip the level.
            (start, len) = self.skip_level(l, start, len);
            l += 1;
        }
        // The state's key, encoded at the end of the memo's items (a
        // long one then moved to the local memo's, but the root's): cut
        // off again when the state is found, else kept as its entry's.
        let mut at = self.v.memo.items.len();
        let mut items = std::mem::take(&mut self.v.memo.items);
        self.encode(l, start, len, &mut items);
        self.v.memo.items = items;
        let hash = self.hasher.hash_one((l, &self.v.memo.items[at..]));
        let long = self.v.memo.items.len() - at >= LONG_KEY && self.depth > 1;
        if long {
            let (memo, local) = (&mut self.v.memo, &mut self.v.local);
            let moved = local.items.len();
            local.items.extend_from_slice(&memo.items[at..]);
            memo.items.truncate(at);
            at = moved;
        }
        let memos = self.v.memos(long);
        if let Some(node) = memos.find(hash, l, at) {
            return Some(node);
        }
        let key = (long, at, memos.items.len() - at);
        if memos.items.len() > u32::MAX as usize {
            return None; // past what a `Memo` can point at: over budget
        }
        // Split only a state not found (80% of the lookups in a 100k-rule
        // build find theirs).
        let cuts = self.segments(l, start, len);
        let (cuts_at, segments) = cuts;
        let ranges_at = self.children(l, start, len, cuts);
        let kids_at = self.v.kids.len();
        let tracked = self.path.len() < TRACKED_SPLITS;
        if tracked {
            let ranges = &self.v.ranges[ranges_at..][..segments];
            let items = ranges.iter().map(|r| r.1).sum::<usize>() as f64;
            self.path.push(Progress {
                weight: self.child_weight,
                items,
                done: 0.0,
            });
            self.tracked_work += len as u64;
        }
        for k in 0..segments {
            if self.depth == 1 {
                // Under the root's next child, no long key of this one's
                // states is looked up again (`LONG_KEY`).
                self.v.local.clear();
            }
            let (child_start, child_len) = self.v.ranges[ranges_at + k];
            if tracked {
                let split = self.path.last().expect("pushed");
                self.child_weight = split.weight * child_len as f64 / split.items;
            }
            let kid = if child_len == 0 {
                EMPTY
            } else {
                self.state(l + 1, child_start, child_len)?
            };
            self.v.kids.push(kid);
            if tracked {
                self.path.last_mut().expect("pushed").done += child_len as f64;
                if self.off_course() {
                    return None;
                }
            }
        }
        if tracked {
            self.path.pop();
        }
        // Neighbouring segments with one child are one segment: compacted
        // in place, the segment starts in `cuts`, their children in `kids`.
        let mut n = 0;
        for k in 0..segments {
            let kid = self.v.kids[kids_at + k];
            if n == 0 || self.v.kids[kids_at + n - 1] != kid {
                self.v.cuts[cuts_at + n] = self.v.cuts[cuts_at + k];
                self.v.kids[kids_at + n] = kid;
                n += 1;
            }
        }
        let starts = &self.v.cuts[cuts_at..][..n];
        let refs = &self.v.kids[kids_at..][..n];
        if n == 1 {
            let only = refs[0];
            self.remember(hash, l, key, only);
            return Some(only);
        }
        let at = self.out.nodes.len();
        let node = self.out.push_node(self.levels[l], starts, refs)?;
        self.words += self.out.nodes.len() - at;
        if self.words > self.limits.words || self.out.words() > self.limits.store_words {
            return None;
        }
        self.remember(hash, l, key, node);
        Some(node)
    }

    /// Whether the build is on course to pass its work limit. The work
    /// grows about as the share of the items done at the first splits (a
    /// child's share is its part of its parent's): in ClassBench's
    /// 100k-rule sets, from a 32nd of the root's items on, the work over
    /// the root's share projected the final work of the groups that fit
    /// within 7% near their limit
    /// (further off, above it), and that of the groups that fail at
    /// 1.35–9.6 times the limit. The splits' own items, spent before any
    /// child, are left out (in a 3,000-rule set, most of the first 64th's
    /// work). Without it a build that fails runs to its limit: three
    /// fifths of fw-100000's work, a third of acl's. The projection may
    /// pass the limit by a margin that shrinks as it firms up: 4.5 times
    /// at a 64th, twice at a 16th, 1.19 times at half.
    fn off_course(&self) -> bool {
        let share: f64 = self.path.iter().map(|p| p.weight * p.done / p.items).sum();
        let below = |w: u64| w.saturating_sub(self.tracked_work) as f64;
        let (work, limit) = (below(self.work), below(self.limits.work));
        // work > limit * share^0.75, without `powf` (called after every
        // tracked child, it was 1.4% of a 100k-rule build).
        let ratio = work / limit;
        share >= 1.0 / 64.0 && ratio * ratio * ratio * ratio > share * share * share
    }

    /// Records that the state at level `l` whose key is
    /// `items[at..][..len]` of the local memo (`long`) or the other is
    /// `node`.
    fn remember(&mut self, hash: u64, l: usize, (long, at, len): (bool, usize, usize), node: u32) {
        let entry = Memo {
            hash,
            level: l as u8,
            start: at as u32,
            len: len as u32,
            node,
        };
        self.v
            .memos(long)
            .table
            .insert_unique(hash, entry, |m| m.hash);
    }

    /// Appends the items `stack[start..][..len]` at level `l` to `out`,
    /// as `encode_items` writes them.
    fn encode(&self, l: usize, start: usize, len: usize, out: &mut Vec<u8>) {
        encode_items(&self.v.stack[start..][..len], self.rem[l], out);
    }

    /// The values at level `l` where some item's requirement changes:
    /// segment starts, ascending, from 0. Leaves them marked for
    /// `children`.
    /// Returns where they are in `cuts`, and how many.
    fn segments(&mut self, l: usize, start: usize, len: usize) -> (usize, usize) {
        let (below, width) = (u32::from(self.levels[l].shift), self.levels[l].width());
        // `width` itself is marked in the word past the level's (levels
        // are 8 bits or more), so no mark needs a test.
        let marks = &mut self.marks[..=width as usize / 64];
        let mut mark = |c: u64| marks[(c / 64) as usize] |= 1 << (c % 64);
        mark(0);
        for it in &self.v.stack[start..][..len] {
            let (first, last) = (it.lo >> below, it.hi >> below);
            // A value the item holds for in part starts a segment of its
            // own: `first + 1` after a partial first value, `last` before a
            // partial last one (else each marks `first` or `last + 1` again).
            let partial_first = it.lo & low_mask(below) != 0;
            let partial_last = it.hi & low_mask(below) != low_mask(below);
            mark(first);
            mark(first + u64::from(partial_first));
            mark(last + u64::from(!partial_last));
            mark(last + 1);
        }
        let at = self.v.cuts.len();
        let cuts = &mut self.v.cuts;
        let words = width.div_ceil(64) as usize;
        for (w, &word) in self.marks[..words].iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                let c = w as u32 * 64 + bits.trailing_zeros();
                self.segment_at[c as usize] = (cuts.len() - at) as u32;
                cuts.push(c);
                bits &= bits - 1;
            }
        }
        (at, cuts.len() - at)
    }

    /// The items after level `l`, which each admits whole (its one
    /// segment): pushed on the stack; returns their (start, len).
    fn skip_level(&mut self, l: usize, start: usize, len: usize) -> (usize, usize) {
        let down = Down::at(l, &self.levels, &self.exps);
        let at = self.v.stack.len();
        for i in start..start + len {
            let child = down.item(&self.v.stack[i], 0);
            self.v.stack.push(child);
        }
        (at, len)
    }

    /// Per segment (`cuts` from `segments`), the items after reading a
    /// value in it at level `l`, in order: pushed on the stack, their
    /// (start, len) ranges pushed on `ranges`; returns where those start.
    fn children(
        &mut self,
        l: usize,
        start: usize,
        len: usize,
        (cuts_at, segments): (usize, usize),
    ) -> usize {
        let down = Down::at(l, &self.levels, &self.exps);
        let below = down.below;
        let width = self.levels[l].width();
        let segment_at = &self.segment_at;
        // The segments of an item's first and last values: the first is a
        // start, and so is the value past the last (or it is past them all).
        let span = |it: &Item| {
            let (first, past) = (it.lo >> below, (it.hi >> below) + 1);
            let last = if past < width {
                segment_at[past as usize] as usize - 1
            } else {
                segments - 1
            };
            (segment_at[first as usize] as usize, last)
        };
        // Count each segment's items, then place them: `ranges` holds
        // (start, count), then (start, placed so far).
        let v = &mut self.v;
        let ranges_at = v.ranges.len();
        v.ranges.resize(ranges_at + segments, (0, 0));
        let ranges = &mut v.ranges[ranges_at..];
        v.spans.clear();
        for it in &v.stack[start..][..len] {
            let (first, last) = span(it);
            ranges[first..=last].iter_mut().for_each(|r| r.1 += 1);
            v.spans.push((first as u32, last as u32));
        }
        let base = v.stack.len();
        let mut at = 0;
        for r in ranges.iter_mut() {
            (r.0, at) = (at, at + r.1);
            r.1 = 0;
        }
        let filler = Item { e: 0, lo: 0, hi: 0 };
        v.stack.resize(base + at, filler);
        let (items, placed) = v.stack.split_at_mut(base);
        let cuts = &v.cuts[cuts_at..][..segments];
        for (it, &(first, last)) in items[start..][..len].iter().zip(&v.spans) {
            let (first, last) = (first as usize, last as usize);
            let mut place = |s: usize, child: Item| {
                let (at, n) = &mut ranges[s];
                placed[*at + *n] = child;
                *n += 1;
            };
            if down.next_field.is_some() {
                // The same in every segment.
                let child = down.item(it, 0);
                (first..=last).for_each(|s| place(s, child));
            } else {
                for (s, &c) in (first..=last).zip(&cuts[first..=last]) {
                    place(s, down.item(it, c));
                }
            }
        }
        for r in ranges.iter_mut() {
            r.0 += base;
        }
        self.marks[..=width as usize / 64].fill(0);
        ranges_at
    }

    fn leaf(&mut self, l: usize, start: usize, len: usize) -> Option<u32> {
        let items = &self.v.stack[start..][..len];
        let last = items.last()?;
        let stops = self.ends(l, last);
        let rules = &mut self.leaf_rules;
        rules.clear();
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
        self.words += rules.len() + 1;
        if self.words > self.limits.words
            || self.out.words() + rules.len() > self.limits.store_words
        {
            return None;
        }
        Some(LEAF | stop | self.out.push_list(rules))
    }
}

/// The levels of an automaton reading the fields in `order`, each of
/// `bits[f]` bits: the root reads 16 bits of an address (one step fewer
/// for every packet; a 65,536-bit bitmap at most once per automaton),
/// every other level a byte, the odd bits first (a 17-bit port is read
/// 9 + 8).
fn levels_in(order: &[usize], bits: &[u32; FIELDS]) -> Vec<Level> {
    let mut levels = Vec::new();
    for &f in order {
        let mut left = bits[f];
        while left > 0 {
            let take = if levels.is_empty() && f != PROTO && left >= 32 {
                16
            } else if left.is_multiple_of(8) {
                8
            } else {
                left % 8 + 8
            }
            .min(left);
            left -= take;
            // The walk in AVX2 lanes reads a level's bits from the four
            // bytes at its first byte (`avx2.rs`).
            debug_assert!(
                left.is_multiple_of(8) && (8..=16).contains(&take),
                "level {take} bits at {left}"
            );
            levels.push(Level {
                field: f as u8,
                shift: left as u8,
                bits: take as u8,
            });
        }
    }
    levels
}

/// Family rule `r` as expansions (one interval per field each), with the
/// fields in which every value is admitted.
fn expand(rules: &FamilyRules, r: u32, levels: &[Level], out: &mut Vec<Expansion>) -> Option<()> {
    // A field's set, or the one interval that stands for it (`single`).
    let mut single: [Option<(u64, u64)>; FIELDS] = [None; FIELDS];
    let mut lens: [usize; FIELDS] = std::array::from_fn(|f| rules.set(r, f).len());
    let mut exact = true;
    while lens.iter().product::<usize>() > MAX_EXPANSIONS {
        let widest = (0..FIELDS).max_by_key(|&f| lens[f])?;
        let set = rules.set(r, widest);
        single[widest] = Some((set.first()?.0, set.last()?.1));
        lens[widest] = 1;
        exact = false;
    }
    let mut full = [false; FIELDS];
    for f in 0..FIELDS {
        let set = single[f]
            .as_ref()
            .map_or(rules.set(r, f), std::slice::from_ref);
        let whole = (0, low_mask(rules.bits[f]));
        full[f] = set == [(0, rules.max[f])] || set == [whole];
        // Unconstrained fields span the whole key range, so they read as full.
        if full[f] {
            single[f] = Some(whole);
        }
    }
    let sets: [&[(u64, u64)]; FIELDS] = std::array::from_fn(|f| {
        single[f]
            .as_ref()
            .map_or(rules.set(r, f), std::slice::from_ref)
    });
    let full_after = (0..levels.len())
        .filter(|&l| {
            let f = levels[l].field as usize;
            levels[l + 1..]
                .iter()
                .all(|n| n.field as usize == f || full[n.field as usize])
        })
        .fold(0u64, |m, l| m | 1 << l);
    let definitive = if rules.definitive[r as usize] && exact {
        DEFINITIVE
    } else {
        0
    };
    if sets.iter().any(|s| s.is_empty()) {
        return Some(());
    }
    // Every combination of one interval per field, the last field
    // counting fastest.
    let mut at = [0usize; FIELDS];
    loop {
        out.push(Expansion {
            rule: r,
            iv: std::array::from_fn(|f| sets[f][at[f]]),
            after: full_after | definitive,
        });
        let mut f = FIELDS;
        loop {
            if f == 0 {
                return Some(());
            }
            f -= 1;
            at[f] += 1;
            if at[f] < sets[f].len() {
                break;
            }
            at[f] = 0;
        }
    }
}

/// Appends `items`, read with `rem` bits of their field left, to `out`
/// in few bytes: the memo holds every state built, so its size is the
/// build's peak memory. Per item, its expansion as the step from the one
/// before (`wrapping_sub`: any order decodes) in a varint, with a bit for
/// `lo` 0 and one for `hi` the field's last value; then each bound that
/// is not, in as many bytes as `rem` needs. Three words an item before,
/// the memo was ipc-100000's largest vector (42 against 27 MB).
fn encode_items(items: &[Item], rem: u32, out: &mut Vec<u8>) {
    // Each part of an item appended as one 8-byte word and cut back to
    // its bytes: fixed-size copies, no `memcpy` call an item. (Gathered
    // in an array on the stack and copied out whole, each item waited on
    // the copy's wide load of the array's narrower stores: 22% of
    // `Builder::state`'s samples at ipc-100000. Written into room zeroed
    // first by `resize`: 2% more instructions in fw-100000's build.)
    let full = low_mask(rem);
    let bytes = rem.div_ceil(8) as usize;
    out.reserve(21 * items.len()); // a 5-byte varint and two 8-byte bounds
    let mut put = |v: u64, len: usize| {
        out.extend_from_slice(&v.to_le_bytes());
        out.truncate(out.len() - 8 + len);
    };
    let mut prev = 0u32;
    for it in items {
        let (from_zero, to_full) = (it.lo == 0, it.hi == full);
        let step = u64::from(it.e.wrapping_sub(prev));
        let flags = u64::from(from_zero) << 1 | u64::from(to_full);
        let (word, n) = varint(step << 2 | flags);
        put(word, n);
        if !from_zero {
            put(it.lo, bytes);
        }
        if !to_full {
            put(it.hi, bytes);
        }
        prev = it.e;
    }
}

/// `v` (below 2^35) as a LEB128 varint: seven bits a byte, low first,
/// the top bit set on every byte but the last; its bytes in a word, low
/// first, and how many (at most 5). Not a crate's writer, which pushes
/// a byte at a time: the word goes out in one store (`encode_items`).
fn varint(mut v: u64) -> (u64, usize) {
    debug_assert!(v < 1 << 35);
    let (mut word, mut n) = (0, 0);
    while v >= 0x80 {
        word |= (v & 0x7f | 0x80) << (8 * n);
        v >>= 7;
        n += 1;
    }
    (word | v << (8 * n), n + 1)
}

/// Lowest `bits` bits set (0 ≤ bits ≤ 64).
fn low_mask(bits: u32) -> u64 {
    u64::MAX.checked_shr(64 - bits).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::lanes::{Lanes, Queue, Simd};

    proptest::proptest! {
        /// The memo finds a state by its encoding: two lists of items
        /// encode alike exactly when they are alike (bounds drawn near
        /// 0 and the field's last value, where the flags stand in for them).
        #[test]
        fn item_encodings_are_equal_exactly_when_the_items_are(
            rem in proptest::sample::select(vec![1u32, 7, 8, 9, 16, 24, 32, 33, 48, 63, 64]),
            a in proptest::collection::vec((0u32..4, 0u64..4, 0u64..4), 0..5),
            // `b` is `a` with one number changed (or none): lists alike
            // but for one bound are where an encoding would slip.
            edit in (0usize..5, 0usize..3, 0u64..4),
            high in proptest::bool::ANY,
        ) {
            // Bounds 0 to 3 from the bottom, or from the top when `high`.
            let full = low_mask(rem);
            let bound = |x: u64| (if high { full.wrapping_sub(x) } else { x }) & full;
            let items = |v: &[(u32, u64, u64)]| -> Vec<(u32, u64, u64)> {
                v.iter().map(|&(e, lo, hi)| (e, bound(lo), bound(hi))).collect()
            };
            let mut b = a.clone();
            let (at, part, value) = edit;
            if let Some(it) = b.get_mut(at) {
                match part {
                    0 => it.0 = value as u32,
                    1 => it.1 = value,
                    _ => it.2 = value,
                }
            }
            let (a, b) = (items(&a), items(&b));
            let encode = |v: &[(u32, u64, u64)]| {
                let items: Vec<Item> = v.iter().map(|&(e, lo, hi)| Item { e, lo, hi }).collect();
                let mut out = vec![7];
                encode_items(&items, rem, &mut out);
                out
            };
            proptest::prop_assert_eq!(encode(&a) == encode(&b), a == b);
        }
    }

    /// A node's reference names its offset and level while they fit; past
    /// either, the node is refused (and the build fails as over budget).
    #[test]
    fn references_name_what_fits() {
        let level = |bits: u8| Level {
            field: 0,
            shift: 0,
            bits,
        };
        let (starts, refs) = ([0, 9], [LEAF | 1, LEAF | 2]);
        let mut store = Store::default();
        let mut code = |bits| {
            store
                .push_node(level(bits), &starts, &refs)
                .map(|r| r >> LEVEL_AT & 31)
        };
        for bits in 1..=16 {
            assert_eq!(
                code(bits),
                Some(u32::from(bits) - 1),
                "a new level, the next code"
            );
        }
        assert_eq!(code(3), Some(2), "a level seen before keeps its code");
        let mut store = Store::default();
        store
            .levels
            .extend((0..MAX_LEVELS as u32).map(|i| 0x7fff - i));
        assert_eq!(store.push_node(level(8), &starts, &refs), None);

        // The last offset a reference reaches, then one past it.
        let mut store = Store::default();
        store.nodes.resize(MAX_NODE_WORDS - 3, 0);
        let node = store.push_node(level(8), &starts, &refs).expect("fits");
        assert_eq!(node_at(node), MAX_NODE_WORDS - 2);
        assert_eq!(node >> KIND_AT, 2);
        assert_eq!(store.step(node, &[10, 0, 0, 0, 0]), LEAF | 2);
        assert_eq!(store.push_node(level(8), &starts, &refs), None);
    }

    /// Whatever order an automaton reads the fields in, the levels of
    /// both families fit one store's table (`MAX_LEVELS`).
    #[test]
    fn every_level_either_family_reads_fits_the_table() {
        use crate::classify::family::{BITS4, BITS6};
        // Every order of the fields: the sequences of FIELDS digits below
        // FIELDS that hold each once.
        let orders: Vec<Vec<usize>> = (0..FIELDS.pow(FIELDS as u32))
            .map(|n| {
                (0..FIELDS)
                    .map(|d| n / FIELDS.pow(d as u32) % FIELDS)
                    .collect()
            })
            .filter(|o: &Vec<usize>| (0..FIELDS).all(|f| o.contains(&f)))
            .collect();
        assert_eq!(orders.len(), 120);
        let mut seen: Vec<u32> = Vec::new();
        for bits in [BITS4, BITS6] {
            for order in &orders {
                for level in levels_in(order, &bits) {
                    if !seen.contains(&level.reads()) {
                        seen.push(level.reads());
                    }
                }
            }
        }
        assert_eq!(seen.len(), 25, "levels of both families");
        assert!(seen.len() <= MAX_LEVELS);
    }

    /// The SIMD walks read a bitmap's word `w` and its counts as the two
    /// words from w + w / 2: each word's place, and its pair's counts,
    /// are those two, every place within the node's head once.
    #[test]
    fn a_bitmap_word_and_its_counts_are_the_two_words_from_w_and_a_half() {
        for words in [8, 16, 2048] {
            let mut places = Vec::new();
            for w in 0..words {
                let (bits, counts) = bitmap_words(w);
                let pair = [w + w / 2, w + w / 2 + 1];
                assert!(
                    bits != counts && pair.contains(&bits) && pair.contains(&counts),
                    "{w}"
                );
                places.extend([bits, counts]);
            }
            places.sort_unstable();
            places.dedup();
            assert_eq!(places, (0..bitmap_head(words)).collect::<Vec<_>>());
        }
    }

    /// Every node, listed or bitmap, at every level width the builder
    /// makes, leads each value to its segment: in the scalar step and in
    /// every SIMD walk this CPU has. Values at and around each start, and
    /// the top value, where a listed node's padding would count.
    #[test]
    fn every_node_leads_each_value_to_its_segment() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut draw = move |below: u32| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % u64::from(below)) as u32
        };
        let mut walked = 0;
        for bits in [8u8, 9, 16] {
            let top = 1u32 << bits;
            for n in 2..=24 {
                for round in 0..4 {
                    let mut starts = vec![0];
                    if round % 2 == 1 {
                        starts.push(top - 1);
                    }
                    while starts.len() < n {
                        let s = draw(top);
                        if !starts.contains(&s) {
                            starts.push(s);
                        }
                    }
                    starts.sort_unstable();
                    let refs: Vec<u32> = (0..n as u32).map(|k| LEAF | k).collect();
                    let mut store = Store::default();
                    // Levels before it: its code at each of the SIMD
                    // walks' table vectors (AVX2's four of eight, AVX-512's
                    // two of sixteen).
                    let before = [0, 9, 20, 27][usize::from(bits % 4)];
                    store.levels.extend((0..before).map(|i| 0x7fff - i));
                    let level = Level {
                        field: 1,
                        shift: 8,
                        bits,
                    };
                    let first = store.push_node(level, &starts, &refs).expect("fits");
                    // Another node after it: a read past the first's end
                    // finds words of another.
                    let other: Vec<u32> = refs.iter().map(|r| r + 100).collect();
                    store.push_node(level, &starts, &other).expect("fits");
                    let mut values = vec![0, top - 1];
                    for &s in &starts {
                        values.extend([s.saturating_sub(1), s, (s + 1).min(top - 1)]);
                    }
                    let segment = |v: u32| starts.iter().filter(|&&s| s <= v).count() as u32 - 1;
                    // The level's bits amid others of the field.
                    let keys: Vec<[u64; FIELDS]> = values
                        .iter()
                        .map(|&v| {
                            let above = u64::from(draw(u32::MAX)) << (8 + bits);
                            [7, above | u64::from(v) << 8 | 0xa5, 9, 9, 6]
                        })
                        .collect();
                    for (key, &v) in keys.iter().zip(&values) {
                        let at = store.step(first, key);
                        assert_eq!(at, LEAF | segment(v), "{bits} bits, {starts:?}, value {v}");
                    }
                    for simd in Simd::here() {
                        let lanes = Lanes::pick(simd).expect("runs here");
                        let mut queue = Queue::with_capacity(values.len());
                        queue.refill(|ids, bases, starts| {
                            for (i, ((id, base), start)) in
                                ids.iter_mut().zip(bases).zip(starts).enumerate()
                            {
                                (*id, *base, *start) = (i as u32, (i * FIELDS) as u32, first);
                            }
                            values.len()
                        });
                        let mut at = vec![first; values.len()];
                        lanes.walk(&store, keys.as_flattened(), &mut at, &queue);
                        for (&a, &v) in at.iter().zip(&values) {
                            // The last few walks are left to the scalar
                            // rounds: still at the node.
                            if a != first {
                                assert_eq!(a, LEAF | segment(v), "{simd:?}: {starts:?}, value {v}");
                                walked += 1;
                            }
                        }
                    }
                }
            }
        }
        if !Simd::here().is_empty() {
            assert!(walked > 10_000, "{walked} SIMD walks checked");
        }
    }
}
