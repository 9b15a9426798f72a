//! The trie classifier, for large rulesets.
//!
//! In the manner of DPDK's rte_acl: per address family, the rules go into
//! automata that read the header key (protocol, addresses, ports) a few
//! bits at a time (`automaton.rs`). Wildcards in different fields
//! multiply states (the classic DFA blow-up), so the rules are grouped by
//! which addresses are specific (`family::address_groups`), each group
//! its own automaton reading its most specific fields first, and a group
//! past its build limits is split into its specific and its wild half
//! (`family::split`), as rte_acl splits its tries.
//!
//! What no automaton may hold (past the automata a packet can afford, or
//! the build's [`Budget`]) is not walked rule by rule: it goes, in blocks
//! of rules, into per-field bitsets (`bitgroup.rs`), whose size is known
//! before they are built; only rules past the memory budget are left for
//! every packet to try. So a ruleset the automata cannot hold whole still
//! walks only the candidates of what could be indexed.
//!
//! A packet walks every automaton of its family, all in step (several
//! packets at once with `walk_batch`: in AVX-512 or AVX2 lanes where the
//! CPU has them, `lanes.rs`), looks up the bit blocks, and the
//! evaluator merges the lists in rule order (`TrieWalk`), cut at the
//! earliest rule that surely ends the walk. When the packet surely
//! matches its first candidate (that rule, or an IPv4 rule whose every
//! test is a box of key intervals the key is inside) and the rule only
//! allows or denies, the classifier alone decides (`TrieWalk::decided`):
//! no rule is read. A large family is built in
//! tiers (`TIER_FROM`): the walk above covers its head, and a later tier
//! is walked and merged for one packet when its evaluation gets past the
//! tiers before.

use super::automaton::{self, Limits, Store, EMPTY, INDEX, LEAF, SINGLE};
use super::bitgroup::{BitGroup, BIT_GROUP_RULES};
use super::family::{
    address_groups, jumped_over, key, needs_state, split, FamilyRules, Grouping, FIELDS,
};
use super::fields::in_mapped;
use super::lanes::{Lanes, Queue, Simd, Tail};
use crate::eval::Walk;
use crate::program::{class, Program, Rule, Verdict};
use weir_wire::Packet;

/// Most packets walked together by [`TrieClassifier::walk_batch`]: as
/// many as the walk in lanes takes, so that its last walks, which leave
/// lanes idle (a third of fw-1000's lane steps at 128), are a small part
/// of a batch's. 512 took 0.90–0.92 of 128's time on ClassBench fw-1000
/// and 0.93–0.94 on acl-10000 on a Zen 5 (BENCHMARKS.md, "Batches of
/// 512"); on a Zen 4, 256 had measured the same as 128.
pub const BATCH: usize = 512;
/// Packets walked together in scalar rounds (more did not help).
const SCALAR_BATCH: usize = 16;
/// Fewest packets of a batch whose walks `Simd::Auto` gives the lanes.
/// One or two packets' walks leave most lanes idle: packets decided one
/// by one took 0.78–0.82 of the AVX-512 walk's time in the scalar rounds
/// at 10k and 100k rules (BENCHMARKS.md, "Packets decided one by one").
const LANES_FROM: usize = 3;
/// Most automata per family (each costs a walk per packet; at most 16,
/// a vector of leaves in `walk_batch`).
const MAX_AUTOMATA: usize = 12;
const _: () = assert!(MAX_AUTOMATA <= 16);
/// A family of more rules than this that the automata cannot hold whole
/// is built in tiers of rules in rule order, each its own automata (at
/// most `TIERS`' second figure, the last `MAX_AUTOMATA`) and bit blocks:
/// every packet walks the first, the head, and a later tier only when
/// its evaluation gets past the tiers before (`TrieWalk`). Most packets
/// of such a ruleset end early in it (a random 100k-rule set's trace:
/// three in four before rule 8,192, nine in ten before 16,384), so they
/// walk a few small automata instead of a dozen large ones.
const TIER_FROM: usize = 32 << 10;
/// Where each tier but the last ends (family rules), and its automata:
/// each tier twice the one before, so a packet decided at rule r walks
/// about log2(r / 8192) + 1 tiers. (Tiers ending at 8k and 24k only:
/// 4% more instructions on random-100k, 12 MiB less memory.)
const TIERS: [(u32, usize); 3] = [(8 << 10, 4), (24 << 10, 6), (56 << 10, 8)];
/// Build limits of one automaton: item visits and words per rule of its
/// group, at least the floor and at most the cap. Past them the group is
/// split (or put in bit blocks): a group that blows up is given up on in
/// time proportional to its size.
const WORK_PER_RULE: u64 = 1024;
const FLOOR_WORK: u64 = 256 << 10;
const MAX_WORK: u64 = 8 << 20;
const WORDS_PER_RULE: usize = 512;
const FLOOR_WORDS: usize = 64 << 10;
const MAX_WORDS: usize = 8 << 20;
/// Past this many rules, a group's work cap shrinks as 1/size. The
/// automata hold such a group only when its rules share few address
/// ranges, and then cheaply (at most 66 visits a rule in the ClassBench
/// 100k sets); one that does not fit grows without bound, and each of its
/// visits up to the cap is lost (two such attempts cost 340 ms of those
/// sets' 0.7–1.1 s builds). BENCHMARKS.md, "Giving up sooner".
const BIG_GROUP_RULES: u64 = 20 << 10;
/// What a group of up to `BIG_GROUP_RULES` rules may spend in a family's
/// one-tier build (past `TIER_FROM` rules, tried whole first): the
/// specific half of ipc-100000's largest address group splits into two
/// groups of 19.3k rules that take 9.6M and 11M visits; at `MAX_WORK`
/// both failed and split again, four automata where two hold them, and
/// every packet walked the two more (BENCHMARKS.md, "Two automata where
/// four were"). Tiered builds keep `MAX_WORK`: on random-100k, whose
/// one-tier build fails, the larger cap in its tiers built no more
/// automata and cost 0.8 s of lost visits.
const WHOLE_MAX_WORK: u64 = 12 << 20;
/// What the second half of a split group (`split`) may spend a rule in a
/// family's one-tier build, once the first half is built, where it has
/// more than `ROOMY_FROM_RULES` rules: built whole, it saves every packet
/// a walk that its halves would cost. ipc- and acl-100000's wild halves
/// of 38.6k and 37.6k rules take 39M and 24M visits whole (their
/// quarters 21M and 11M), and their walks 0.90 and 0.80 of the time
/// (BENCHMARKS.md, "Long keys remembered under one child of the root");
/// fw-100000's of 16.1k rules 17M (its quarters 9.5M, after a failed
/// 7.6M), and its walks 0.89–0.91 (BENCHMARKS.md, "fw-100000's wild half
/// whole"). Where the first half is not built, the whole build will
/// likely fail (a random 100k-rule set's wild half takes 31M visits,
/// then its specific half splits past `MAX_AUTOMATA`): the second keeps
/// its cap.
const HALF_WORK_PER_RULE: u64 = 1536;
const HALF_MAX_WORK: u64 = 64 << 20;
/// Halves from which the room applies: where `WHOLE_MAX_WORK` cuts
/// `WORK_PER_RULE`. Smaller halves already have their rules' share; the
/// random 100k-rule set's halves (up to 5.4k rules), given the room,
/// only failed later (its build 1.38 → 1.55 s, the same automata).
const ROOMY_FROM_RULES: u64 = WHOLE_MAX_WORK / WORK_PER_RULE;

/// A group the build is to try: an address group, or half of a split one.
enum Piece {
    Group,
    FirstHalf,
    /// The half tried after its sibling; true once the sibling is built.
    SecondHalf(bool),
}

/// A failed group of at most this many rules goes into bit blocks, not
/// into two more automata.
const SPLIT_FROM_RULES: usize = 256;
/// Rulesets of up to this many rules are built both ways (`Grouping`)
/// and the cheaper build kept (`TrieClassifier::build_with`); larger ones
/// group by both addresses only: at 100k rules the destination's groups
/// passed the automata's limits (fw- and ipc-like sets fell to tiers,
/// builds 1.1–1.6 s).
const CHOOSE_GROUPING_UP_TO: usize = TIER_FROM;
/// Family rules whose keys `sample_steps` walks, at most.
const COST_SAMPLE: usize = 4096;
const NO_STOP: u32 = u32::MAX;
/// A merged list in the scratch candidates, not in the store's pool.
const CAND: u32 = 1 << 31;
/// `Scratch::family`: the packet walks every rule.
const LINEAR: u8 = u8::MAX;

/// What building the classifier may spend, whatever the rules: bounded
/// time and memory. Rules that do not fit are still indexed more coarsely,
/// or, past the memory, tried by every packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// Bytes the classifier may hold: automata, their lists, bit blocks.
    pub bytes: usize,
    /// Rule intervals visited over every automaton built or tried (the
    /// build's time: about 60–100 ns each).
    pub work: u64,
}

impl Default for Budget {
    fn default() -> Budget {
        Budget {
            bytes: 96 << 20,
            work: 128 << 20,
        }
    }
}

/// What the trie classifier's rules went into (counted over both address
/// families: a rule for either is counted twice).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Parts {
    /// Automata built.
    pub automata: usize,
    /// Automata every packet walks: a family past `TIER_FROM` rules walks
    /// the rest only for packets its first rules do not decide.
    pub head_automata: usize,
    /// Bit blocks of up to 1,024 rules.
    pub blocks: usize,
    /// Rules every packet tries (past the memory budget).
    pub unindexed: usize,
    /// The rules were grouped by their destinations alone (two groups a
    /// family), not by both addresses (four): that build's walks took
    /// fewer steps.
    pub by_destination: bool,
}

/// One tier of a family: where its automata and blocks end in the
/// family's, and its first rule (program index).
struct Tier {
    roots: usize,
    blocks: usize,
    first: u32,
}

/// One address family's parts.
#[derive(Default)]
struct Family {
    /// Each automaton's root (a node or a leaf): the head tier's first.
    roots: Vec<u32>,
    /// Rules in per-field bitsets: the head tier's first.
    blocks: Vec<BitGroup>,
    /// The tiers, in rule order (one when the automata hold every rule).
    tiers: Vec<Tier>,
    /// Rules nothing indexes: candidates of every packet (a pool list).
    rest: u32,
    /// Per program rule, IPv4 only: the key intervals that are its every
    /// test, if they are one box (`SureBox`). Empty for IPv6, whose sets
    /// are widened, and where no rule has a box.
    boxes: Vec<SureBox>,
    /// The head leaves alone decide a packet whose candidate comes before
    /// this rule (the next tier's first; `NO_STOP` for one tier): 0 where
    /// a head bit block or an unindexed rule may come first.
    alone_below: u32,
}

/// The interval per key field that an IPv4 rule requires, when those are
/// its every test: a packet whose key is inside surely matches it. A
/// rule with none (tests the key does not hold, a field of several
/// intervals, a jump over it) has an empty box.
#[derive(Clone, Copy)]
struct SureBox {
    lo: [u32; FIELDS],
    hi: [u32; FIELDS],
}

impl SureBox {
    const EMPTY: SureBox = SureBox {
        lo: [u32::MAX; FIELDS],
        hi: [0; FIELDS],
    };

    /// Family rule `r`'s box, if its key intervals are its every test.
    fn of(rules: &FamilyRules, r: u32) -> SureBox {
        let mut b = SureBox::EMPTY;
        if !rules.definitive[r as usize] {
            return b;
        }
        for f in 0..FIELDS {
            match rules.set(r, f) {
                &[(lo, hi)] if hi <= u64::from(u32::MAX) => {
                    (b.lo[f], b.hi[f]) = (lo as u32, hi as u32)
                }
                _ => return SureBox::EMPTY,
            }
        }
        b
    }

    fn is_empty(&self) -> bool {
        self.lo[0] > self.hi[0]
    }

    /// Every field tested, without branching on any (`all` with `&&` was
    /// a call and a branch a field, the key's fields unpredictable): a
    /// field is outside when `k - lo` or `hi - k` is negative, so the OR
    /// of them all is negative. (Boxes are IPv4's, whose key fields are
    /// below 2^33: no difference overflows.)
    #[inline(always)]
    fn holds(&self, key: &[u64; FIELDS]) -> bool {
        debug_assert!(key.iter().all(|&k| k < 1 << 33), "an IPv4 key");
        let mut outside = 0i64;
        for ((&k, &lo), &hi) in key.iter().zip(&self.lo).zip(&self.hi) {
            let k = k as i64;
            outside |= k.wrapping_sub(i64::from(lo)) | i64::from(hi).wrapping_sub(k);
        }
        outside >= 0
    }
}

impl Family {
    /// The head tier's automata and blocks: what every packet walks.
    fn head(&self) -> (usize, usize) {
        self.tiers.first().map_or((0, 0), |t| (t.roots, t.blocks))
    }

    /// Whether some head automaton's root is a leaf: a walk in lanes
    /// writes only the other roots' places.
    fn head_leaf_root(&self) -> bool {
        self.roots[..self.head().0]
            .iter()
            .any(|&root| root & LEAF != 0)
    }
}

pub struct TrieClassifier {
    store: Store,
    /// IPv4, then IPv6.
    families: [Family; 2],
    /// Candidates of every packet of a known flow (`class::STATE`): a
    /// pool list.
    state: u32,
    /// Per rule: its verdict when, matched, it decides alone (a plain
    /// `allow` or `deny`; [`TrieWalk::decided`]). A byte a rule, so the
    /// packets the classifier decides read no rule.
    decides: Box<[Option<Verdict>]>,
    /// The walk in SIMD lanes, where the CPU has one.
    lanes: Option<Lanes>,
    /// Fewest packets of a batch whose walks go to the lanes: 1 where a
    /// walk was asked for by name, else [`LANES_FROM`].
    lanes_from: usize,
    /// The CPU has POPCNT, for the scalar rounds (x86-64 only).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    popcnt: bool,
    /// How the build grouped the rules (`build_with` says why).
    grouping: Grouping,
}

/// One engine's working space for the walks and merges (sized once, at
/// build: nothing grows per packet).
pub struct Scratch {
    /// Per batch slot: the packet's family (0: IPv4, 1: IPv6, or LINEAR)
    /// and key.
    family: [u8; BATCH],
    keys: [[u64; FIELDS]; BATCH],
    /// Per batch slot, per automaton: where its walk ended.
    at: Vec<u32>,
    /// Per batch slot: its head leaves' least first rule and least stop
    /// (`NO_STOP` for none), read once after the walks for the engine's
    /// rule prefetch and for `leaves_decide`.
    heads: [(u32, u32); BATCH],
    /// The walks left after the roots, for the walk in lanes.
    queue: Queue,
    automata: usize,
    /// One packet's lists: (offset, length) into the pool, or into `cand`
    /// with the `CAND` bit.
    lists: Vec<(u32, u32)>,
    cursors: Vec<u32>,
    /// One packet's candidates from single-rule leaves and bit blocks.
    cand: Vec<u32>,
}

/// One packet's candidates: the automata's leaf lists, the bit blocks'
/// and the unindexed rules (and the state probes), merged as the
/// evaluator asks, never sorted or copied. Each list keeps a cursor, so
/// the walk's forward moves cost a step per list. A tiered family's later
/// tiers are walked and merged only when the evaluator gets to them.
pub struct TrieWalk<'a> {
    store: &'a Store,
    family: &'a Family,
    key: &'a [u64; FIELDS],
    /// The packet's automata's leaves (a later tier's once walked).
    at: &'a mut [u32],
    cand: &'a mut Vec<u32>,
    lists: &'a mut Vec<(u32, u32)>,
    cursors: &'a mut Vec<u32>,
    decides: &'a [Option<Verdict>],
    /// No candidate after this rule: it ends every walk that gets there.
    stop: u32,
    /// The packet has a state: every probe is a candidate, and no leaf
    /// may cut the walk.
    state: bool,
    /// The next tier to walk and merge, if the walk gets to its rules.
    tier: usize,
    /// The default rule's index, the answer once the lists are spent.
    last: usize,
}

impl TrieWalk<'_> {
    /// The packet's first candidate and its verdict when the classifier
    /// alone decides it: the packet surely matches its first candidate
    /// (the rule a leaf says it does, its stop; or an IPv4 rule whose
    /// every test is one key interval a field, the packet's key inside
    /// them), it has no state, and matched, the rule does nothing but
    /// allow or deny. The evaluator would try that rule first, match it
    /// and stop; this reads no rule to say so.
    #[inline]
    pub fn decided(&mut self) -> Option<(usize, Verdict)> {
        if self.state {
            return None;
        }
        let first = self.first_at(0)?;
        let verdict = sure_verdict(self.decides, self.family, first, self.stop, self.key)?;
        Some((first as usize, verdict))
    }

    /// The first candidate at or after rule `i`, if any.
    #[inline(always)]
    fn first_at(&mut self, i: usize) -> Option<u32> {
        loop {
            let best = self.scan(i);
            // A tier's rules come after the tiers' before it: only a walk
            // past those needs them (and only if none of theirs ends it).
            match self.family.tiers.get(self.tier) {
                Some(t) if best >= t.first && self.stop >= t.first => self.add_tier(),
                _ => return (best != NO_STOP && best <= self.stop).then_some(best),
            }
        }
    }

    /// The least candidate at or after rule `i` over the lists merged so
    /// far, or `NO_STOP`; moves each list's cursor there.
    #[inline(always)]
    fn scan(&mut self, i: usize) -> u32 {
        let mut best = NO_STOP;
        for (&(at, len), c) in self.lists.iter().zip(self.cursors.iter_mut()) {
            let list = if at & CAND != 0 {
                &self.cand[(at & !CAND) as usize..][..len as usize]
            } else {
                &self.store.pool[at as usize..][..len as usize]
            };
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
        best
    }

    /// Walks the next tier's automata for this packet (in step, a level
    /// each per round) and merges their leaves and the tier's blocks.
    #[cold]
    fn add_tier(&mut self) {
        let f = self.family;
        let (before, t) = (&f.tiers[self.tier - 1], &f.tiers[self.tier]);
        self.tier += 1;
        let leaves = &mut self.at[before.roots..t.roots];
        leaves.copy_from_slice(&f.roots[before.roots..t.roots]);
        while step_round(self.store, leaves, self.key) {}
        if !self.state {
            self.stop = self.stop.min(least_stop(self.store, leaves));
        }
        let (cand, lists) = (&mut *self.cand, &mut *self.lists);
        add_leaves(leaves, self.store, cand, lists);
        let blocks = &f.blocks[before.blocks..t.blocks];
        add_blocks(blocks, self.key, self.stop, cand, lists);
        self.cursors.resize(lists.len(), 0);
    }
}

impl Walk for TrieWalk<'_> {
    #[inline(always)]
    fn next(&mut self, i: usize) -> usize {
        self.first_at(i).map_or(self.last, |r| r as usize)
    }
}

/// Rule `first`'s verdict when the packet surely matches it and, matched,
/// it only allows or denies ([`sure`]): the classifier decides alone.
#[inline(always)]
fn sure_verdict(
    decides: &[Option<Verdict>],
    f: &Family,
    first: u32,
    stop: u32,
    key: &[u64; FIELDS],
) -> Option<Verdict> {
    match sure(decides, f, first, stop, key) {
        Sure::Decides(verdict) => Some(verdict),
        _ => None,
    }
}

/// Candidates [`TrieClassifier::leaves_decide`] tries in rule order: a
/// candidate whose box the key is outside of surely does not match, and
/// the next may decide. At acl-100000 the first candidate misses for one
/// packet in five, which the evaluator then tried after merging every
/// leaf's list; with a second try, one in twenty is left to it. Four
/// tries were 0.87–0.94 of one at 100k and 0.93–0.98 at 10k; eight, no
/// better than four (BENCHMARKS.md, "Past a candidate the key misses").
const SURE_TRIES: usize = 4;

/// What a candidate rule surely does for a packet, from its box.
enum Sure {
    /// It matches and decides.
    Decides(Verdict),
    /// It does not match: the key is outside its box.
    Misses,
    /// The evaluator must try it.
    Unsure,
}

/// What rule `r` surely does for a packet whose key is `key`: it matches
/// when it is the walk's `stop` (the rule that ends every walk of its
/// leaves) or the key is inside its box, and misses when the key is
/// outside (a box is the rule's every test).
#[inline(always)]
fn sure(decides: &[Option<Verdict>], f: &Family, r: u32, stop: u32, key: &[u64; FIELDS]) -> Sure {
    let verdict = decides[r as usize];
    // The walk's stop needs no box: not read (a miss where it is cold).
    if let Some(v) = verdict.filter(|_| r == stop) {
        return Sure::Decides(v);
    }
    let sure_box = f.boxes.get(r as usize).filter(|b| !b.is_empty());
    let inside = sure_box.map(|b| b.holds(key));
    match (verdict, inside) {
        (Some(v), Some(true)) => Sure::Decides(v),
        (_, Some(false)) => Sure::Misses,
        _ => Sure::Unsure,
    }
}

/// What a packet's head leaves alone say ([`TrieClassifier::leaves_decide`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Alone {
    /// Its first candidate surely matches and decides: this rule, this
    /// verdict.
    Decides(usize, Verdict),
    /// Its first candidate does not decide alone: the evaluator tries it.
    Evaluate,
    /// The leaves cannot tell (a state, bit blocks, unindexed rules or a
    /// later tier): the merged walk's [`TrieWalk::decided`] can.
    Ask,
}

/// Steps each of one key's walks `at` not yet at a leaf one level; true
/// while some are still inside their automata.
#[inline(always)]
fn step_round(store: &Store, at: &mut [u32], key: &[u64; FIELDS]) -> bool {
    let mut inner = false;
    for a in at.iter_mut().filter(|a| **a & LEAF == 0) {
        *a = store.step(*a, key);
        inner |= *a & LEAF == 0;
    }
    inner
}

/// Steps the walks `(id, base)` (`at[id]`, the key at `keys[base / FIELDS]`)
/// a level each per round until every one is at a leaf: the few walks the
/// lanes leave.
#[inline(always)]
fn finish_rounds(store: &Store, tail: &Tail, at: &mut [u32], keys: &[[u64; FIELDS]]) {
    let mut inner = true;
    while inner {
        inner = false;
        for &(id, base) in tail.walks() {
            let a = &mut at[id as usize];
            if *a & LEAF == 0 {
                *a = store.step(*a, &keys[base as usize / FIELDS]);
                inner |= *a & LEAF == 0;
            }
        }
    }
}

/// The least rule any of `leaves` surely ends the walk at (`NO_STOP`
/// for none).
#[inline(always)]
fn least_stop(store: &Store, leaves: &[u32]) -> u32 {
    least_first_and_stop(store, leaves).1
}

/// The least first rule and the least stop over `leaves` (each `NO_STOP`
/// for none): what [`Avx512::heads`](super::avx512::Avx512::heads) finds
/// in vectors.
#[inline(always)]
fn least_first_and_stop(store: &Store, leaves: &[u32]) -> (u32, u32) {
    leaves
        .iter()
        .map(|&l| store.first_and_stop(l))
        .fold((NO_STOP, NO_STOP), |(f, s), (lf, ls)| {
            (f.min(lf), s.min(ls))
        })
}

/// Adds the lists of the leaves `leaves` (the single-rule leaves as one
/// list) to `lists`.
#[inline(always)]
fn add_leaves(leaves: &[u32], store: &Store, cand: &mut Vec<u32>, lists: &mut Vec<(u32, u32)>) {
    let start = cand.len();
    for &l in leaves {
        if l & SINGLE != 0 {
            cand.push(l & INDEX);
        } else if l != EMPTY {
            let list = l & INDEX;
            lists.push((list + 1, store.pool[list as usize]));
        }
    }
    if cand.len() > start {
        cand[start..].sort_unstable();
        lists.push((CAND | start as u32, (cand.len() - start) as u32));
    }
}

/// Adds each block's candidates for `key` as a list. A block whose rules
/// all come after `stop` cannot decide the packet: no searches for it.
#[inline(always)]
fn add_blocks(
    blocks: &[BitGroup],
    key: &[u64; FIELDS],
    stop: u32,
    cand: &mut Vec<u32>,
    lists: &mut Vec<(u32, u32)>,
) {
    for b in blocks.iter().filter(|b| b.first() <= stop) {
        let start = cand.len();
        b.candidates(key, cand);
        if cand.len() > start {
            lists.push((CAND | start as u32, (cand.len() - start) as u32));
        }
    }
}

/// The work one attempt at an automaton for a group of `g` rules may
/// spend (`WORK_PER_RULE`, `BIG_GROUP_RULES`), in a one-tier build of the
/// whole family (`whole`, `WHOLE_MAX_WORK`) or not; `roomy`: the group
/// is the second half of a split one whose first is built
/// (`HALF_WORK_PER_RULE`).
fn group_work(g: usize, whole: bool, roomy: bool) -> u64 {
    let g = g as u64;
    if whole && roomy && g > ROOMY_FROM_RULES {
        return HALF_WORK_PER_RULE.saturating_mul(g).min(HALF_MAX_WORK);
    }
    let cap = match whole && g <= BIG_GROUP_RULES {
        true => WHOLE_MAX_WORK,
        false => MAX_WORK * BIG_GROUP_RULES / g.max(BIG_GROUP_RULES),
    };
    WORK_PER_RULE
        .saturating_mul(g)
        .clamp(FLOOR_WORK, cap.max(FLOOR_WORK))
}

fn has_popcnt() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::arch::is_x86_feature_detected!("popcnt");
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Work and bytes spent so far, and the automata builds' working
/// vectors, handed from one build to the next.
#[derive(Default)]
struct Spent {
    work: u64,
    blocks: usize,
    spare: automaton::Spare,
}

impl TrieClassifier {
    #[cfg(test)]
    pub fn build(prog: &Program) -> TrieClassifier {
        TrieClassifier::build_with(prog, Budget::default())
    }

    /// The classifier of `prog` within `budget`. A ruleset of up to
    /// `CHOOSE_GROUPING_UP_TO` rules whose automata hold it whole is
    /// built again, its rules grouped by the destination alone
    /// (`Grouping`), within what the first build left of the budget, and
    /// the build whose walks take fewer steps kept: on fw-1000 the two
    /// groups' two walks took 0.85 of the four's steps, on acl-10000 0.94,
    /// where on fw- and ipc-10000 the four took 0.80 and 0.84 of the two's
    /// (BENCHMARKS.md, "Two groups or four"). A ruleset that overflows four
    /// groups' automata is not tried in two larger ones.
    pub fn build_with(prog: &Program, budget: Budget) -> TrieClassifier {
        let jumped = jumped_over(prog);
        let families = [false, true].map(|v6| FamilyRules::new(prog, &jumped, v6));
        let (mut d, work) =
            TrieClassifier::build_grouped(prog, &families, budget, Grouping::Addresses);
        let parts = d.parts();
        if prog.rules.len() <= CHOOSE_GROUPING_UP_TO && parts.blocks + parts.unindexed == 0 {
            let left = Budget {
                bytes: budget.bytes.saturating_sub(d.memory()),
                work: budget.work.saturating_sub(work),
            };
            let (other, _) =
                TrieClassifier::build_grouped(prog, &families, left, Grouping::Destination);
            if other.cheaper_than(&d, &families) {
                d = other;
            }
        }
        let v4 = &families[0];
        let mut boxes = vec![SureBox::EMPTY; prog.rules.len()];
        for (r, &rule) in v4.index.iter().enumerate() {
            boxes[rule as usize] = SureBox::of(v4, r as u32);
        }
        if !boxes.iter().all(SureBox::is_empty) {
            d.families[0].boxes = boxes;
        }
        d
    }

    /// The automata and blocks of both families, their rules grouped by
    /// `grouping` (without the boxes), and the work spent.
    fn build_grouped(
        prog: &Program,
        families: &[FamilyRules; 2],
        budget: Budget,
        grouping: Grouping,
    ) -> (TrieClassifier, u64) {
        let mut store = Store::default();
        let state: Vec<u32> = (0..prog.rules.len())
            .filter(|&r| needs_state(prog, r) || prog.rules[r].probe)
            .map(|r| r as u32)
            .collect();
        let state = store.push_list(&state);
        let mut d = TrieClassifier {
            store,
            families: Default::default(),
            state,
            decides: prog.rules.iter().map(Rule::plain_verdict).collect(),
            lanes: Lanes::pick(Simd::Auto),
            lanes_from: LANES_FROM,
            popcnt: has_popcnt(),
            grouping,
        };
        // The builds' working vectors go when this returns, before the
        // boxes are made (not at their peak: 40 bytes a rule).
        let mut spent = Spent::default();
        for (f, rules) in families.iter().enumerate() {
            d.families[f] = d.build_family(rules, budget, grouping, &mut spent);
        }
        (d, spent.work)
    }

    /// Whether this build is the cheaper to walk: it leaves no more rules
    /// outside the automata (in bit blocks or unindexed) than `other`, and
    /// its head automata take fewer steps over keys drawn from the rules.
    fn cheaper_than(&self, other: &TrieClassifier, families: &[FamilyRules; 2]) -> bool {
        let outside = |c: &TrieClassifier| {
            let parts = c.parts();
            (parts.blocks, parts.unindexed)
        };
        outside(self) <= outside(other)
            && self.sample_steps(families) < other.sample_steps(families)
    }

    /// The steps the head automata take over keys drawn from the rules:
    /// for up to `COST_SAMPLE` family rules, evenly spaced, the midpoint
    /// of each field's first interval. A ruleset's traffic mostly matches
    /// its rules (ClassBench's traces are drawn from them), so a build's
    /// steps here follow its steps a packet.
    fn sample_steps(&self, families: &[FamilyRules; 2]) -> u64 {
        let mut steps = 0;
        for (f, rules) in self.families.iter().zip(families) {
            let n = rules.index.len();
            let (head, _) = f.head();
            for r in (0..n).step_by(n.div_ceil(COST_SAMPLE).max(1)) {
                let key: [u64; FIELDS] = std::array::from_fn(|field| {
                    let (lo, hi) = rules.set(r as u32, field)[0];
                    lo + (hi - lo) / 2
                });
                for &root in &f.roots[..head] {
                    let mut at = root;
                    while at & LEAF == 0 {
                        at = self.store.step(at, &key);
                        steps += 1;
                    }
                }
            }
        }
        steps
    }

    /// The family's automata and blocks, in one tier; built again in
    /// tiers (`TIER_FROM`) when it has more than `TIER_FROM` rules and the
    /// automata could not hold them whole. Such a set's packets walk a
    /// dozen automata and search bit blocks; the head spares that to the
    /// packets its rules decide. A set the automata hold whole stays in
    /// one tier: a tail walked one packet at a time cost the ClassBench
    /// 100k sets, whose packets mostly end late, 12–18% of their time.
    fn build_family(
        &mut self,
        rules: &FamilyRules,
        budget: Budget,
        grouping: Grouping,
        spent: &mut Spent,
    ) -> Family {
        let n = rules.index.len() as u32;
        let (mark, before) = (self.store.mark(), (spent.work, spent.blocks));
        // Past `TIER_FROM` rules, the one-tier build gives up at the first
        // group the automata cannot hold.
        let whole = n as usize > TIER_FROM;
        if let Some(f) = self.build_tiers(rules, &[], whole, (budget, grouping), spent) {
            return f;
        }
        // The given-up build's memory goes back: the store's, and the
        // working vectors its largest automaton grew.
        self.store.reset(mark);
        self.store.shrink();
        spent.spare = automaton::Spare::default();
        (spent.work, spent.blocks) = before;
        let ends: Vec<(u32, usize)> = TIERS.into_iter().filter(|&(end, _)| end < n).collect();
        let f = self.build_tiers(rules, &ends, false, (budget, grouping), spent);
        f.expect("a build that may use bit blocks")
    }

    /// The family's rules in tiers: each of `ends` ends one (with its
    /// most automata), the last holds the rest; None if `whole` and the
    /// automata cannot hold every rule.
    fn build_tiers(
        &mut self,
        rules: &FamilyRules,
        ends: &[(u32, usize)],
        whole: bool,
        plan: (Budget, Grouping),
        spent: &mut Spent,
    ) -> Option<Family> {
        let n = rules.index.len() as u32;
        let mut f = Family::default();
        let mut rest = Vec::new();
        let mut start = 0;
        for &(end, most) in ends.iter().chain([&(n, MAX_AUTOMATA)]) {
            let first = rules.index.get(start as usize).copied().unwrap_or(NO_STOP);
            let parts = (&mut f, &mut rest);
            if !self.build_tier(rules, start..end, most, whole, plan, spent, parts) {
                return None;
            }
            let (roots, blocks) = (f.roots.len(), f.blocks.len());
            f.tiers.push(Tier {
                roots,
                blocks,
                first,
            });
            start = end;
        }
        rest.sort_unstable();
        f.rest = self.store.push_list(&rest);
        let (_, head_blocks) = f.head();
        f.alone_below = match f.tiers.get(1) {
            _ if head_blocks > 0 || !rest.is_empty() => 0,
            Some(next) => next.first,
            None => NO_STOP,
        };
        Some(f)
    }

    /// One automaton per address group of the family rules `members`
    /// (`address_groups`); a group past its limits is split in two by
    /// wildness (`split`) and tried again, up to `most` automata. What
    /// still does not fit goes into bit blocks, in rule order, and past
    /// the budget's memory, into `rest`, the rules every packet tries;
    /// with `whole`, the build gives up there instead (false).
    #[allow(clippy::too_many_arguments)]
    fn build_tier(
        &mut self,
        rules: &FamilyRules,
        members: std::ops::Range<u32>,
        most: usize,
        whole: bool,
        (budget, grouping): (Budget, Grouping),
        spent: &mut Spent,
        (f, rest): (&mut Family, &mut Vec<u32>),
    ) -> bool {
        let first = f.roots.len();
        let groups = address_groups(rules, members, grouping);
        let mut todo: Vec<_> = groups.into_iter().map(|g| (g, Piece::Group)).collect();
        while let Some((group, piece)) = todo.pop() {
            let built = f.roots.len() - first;
            if built < most && spent.work < budget.work {
                let g = group.len();
                let limits = Limits {
                    work: group_work(g, whole, matches!(piece, Piece::SecondHalf(true)))
                        .min(budget.work - spent.work),
                    words: (WORDS_PER_RULE * g).clamp(FLOOR_WORDS, MAX_WORDS),
                    store_words: budget.bytes.saturating_sub(spent.blocks) / 4,
                };
                let mark = self.store.mark();
                let (root, work) =
                    automaton::build(rules, &group, &mut self.store, limits, &mut spent.spare);
                spent.work += work;
                if let Some(root) = root {
                    f.roots.push(root);
                    if let (Piece::FirstHalf, Some((_, Piece::SecondHalf(built)))) =
                        (piece, todo.last_mut())
                    {
                        *built = true;
                    }
                    continue;
                }
                self.store.reset(mark);
                if built + todo.len() + 2 <= most && g > SPLIT_FROM_RULES {
                    // The specific half first: the cheaper where both
                    // fit (ipc-100000: 2.7M visits, the wild 39M).
                    let [specific, wild] = split(rules, group);
                    todo.extend([
                        (wild, Piece::SecondHalf(false)),
                        (specific, Piece::FirstHalf),
                    ]);
                    continue;
                }
            }
            if whole {
                return false;
            }
            for block in group.chunks(BIT_GROUP_RULES) {
                let bytes = BitGroup::bytes(rules, block);
                if self.store.words() * 4 + spent.blocks + bytes <= budget.bytes {
                    spent.blocks += bytes;
                    f.blocks.push(BitGroup::build(rules, block));
                } else {
                    rest.extend(block.iter().map(|&r| rules.index[r as usize]));
                }
            }
        }
        true
    }

    /// The SIMD walk a batch's walks step in (`Off`: scalar rounds; then
    /// small tries are not worth walking in batches).
    pub fn simd(&self) -> Simd {
        self.lanes.map_or(Simd::Off, Lanes::simd)
    }

    /// Steps the automata in the lanes `simd` asks for, or in scalar
    /// rounds where this CPU lacks them (the same leaves either way).
    /// `Auto` leaves batches of fewer than [`LANES_FROM`] packets to the
    /// scalar rounds; a walk asked for by name takes every batch.
    pub fn use_simd(&mut self, simd: Simd) {
        self.lanes = Lanes::pick(simd);
        self.lanes_from = if simd == Simd::Auto { LANES_FROM } else { 1 };
    }

    /// Packets to give [`walk_batch`](Self::walk_batch) at once.
    pub fn batch(&self) -> usize {
        if self.lanes.is_some() {
            BATCH
        } else {
            SCALAR_BATCH
        }
    }

    /// Working space for an engine's walks.
    pub fn scratch(&self) -> Scratch {
        let automata = self
            .families
            .iter()
            .map(|f| f.roots.len())
            .max()
            .unwrap_or(0);
        let blocks = |f: &Family| f.blocks.iter().map(BitGroup::len).sum::<usize>();
        let cand = self.families.iter().map(blocks).max().unwrap_or(0) + automata;
        let lists = self
            .families
            .iter()
            .map(|f| f.blocks.len())
            .max()
            .unwrap_or(0)
            + automata
            + 3;
        Scratch {
            family: [LINEAR; BATCH],
            keys: [[0; FIELDS]; BATCH],
            at: vec![EMPTY; BATCH * automata],
            heads: [(NO_STOP, NO_STOP); BATCH],
            queue: Queue::with_capacity(BATCH * automata),
            automata,
            lists: Vec::with_capacity(lists),
            cursors: Vec::with_capacity(lists),
            cand: Vec::with_capacity(cand),
        }
    }

    /// Fills `out` with packet `p`'s candidate rules in rule order; false
    /// when the packet must walk every rule (an IPv6 address inside the
    /// IPv4-mapped block). For statistics and tests (allocates): the
    /// packet path merges the lists in place.
    pub fn candidates(&self, p: &Packet, class: u32, out: &mut Vec<u32>) -> bool {
        let mut s = self.scratch();
        self.walk_batch(std::slice::from_ref(p), &mut s);
        let Some(mut w) = self.merge(0, &mut s, class, usize::MAX) else {
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

    /// The earliest rule the head automata's leaves name for the packet in
    /// `s`'s slot `slot` (walked by `walk_batch`): where its evaluation
    /// most likely starts, so the engine can fetch that rule early.
    #[inline]
    pub fn first_leaf_rule(&self, slot: usize, s: &Scratch) -> Option<u32> {
        let (first, _) = *s.heads.get(slot)?;
        (first != NO_STOP).then_some(first)
    }

    /// What [`TrieWalk::decided`] would answer for the packet in `s`'s
    /// slot `slot`, found from its head leaves alone, without merging
    /// candidate lists: only where nothing but the leaves can come first
    /// (no state, no bit block or unindexed rule in the head, the first
    /// candidate before the next tier's rules); else `Ask`. Where the
    /// first candidate surely misses (the key is outside its box), the
    /// next one the leaves name is tried, up to [`SURE_TRIES`]: the
    /// evaluator would pass over the one that misses.
    #[inline(always)]
    pub fn leaves_decide(&self, slot: usize, s: &Scratch, class: u32) -> Alone {
        let family = s
            .family
            .get(slot)
            .and_then(|&f| self.families.get(usize::from(f)));
        let Some(f) = family.filter(|_| class & class::STATE == 0) else {
            return Alone::Ask;
        };
        let (first, stop) = s.heads[slot];
        // `NO_STOP` (no candidate) is never below.
        if first >= f.alone_below {
            return Alone::Ask;
        }
        match sure(&self.decides, f, first, stop, &s.keys[slot]) {
            Sure::Decides(verdict) => Alone::Decides(first as usize, verdict),
            Sure::Misses => self.past_misses(slot, s, f, first),
            Sure::Unsure => Alone::Evaluate,
        }
    }

    /// `leaves_decide` past a first candidate the key misses: the next
    /// ones the head leaves name, up to [`SURE_TRIES`] in all. Apart, so
    /// that the first try, which decides nine packets in ten, is a few
    /// instructions inlined in the engine's loop.
    #[inline(never)]
    fn past_misses(&self, slot: usize, s: &Scratch, f: &Family, mut first: u32) -> Alone {
        let (_, stop) = s.heads[slot];
        let key = &s.keys[slot];
        let (head, _) = f.head();
        let leaves = &s.at[slot * s.automata..][..head];
        for _ in 1..SURE_TRIES {
            first = leaves
                .iter()
                .map(|&l| self.store.first_after(l, first))
                .min()
                .unwrap_or(NO_STOP);
            if first >= f.alone_below {
                return Alone::Ask;
            }
            match sure(&self.decides, f, first, stop, key) {
                Sure::Decides(verdict) => return Alone::Decides(first as usize, verdict),
                Sure::Misses => {}
                Sure::Unsure => return Alone::Evaluate,
            }
        }
        Alone::Evaluate
    }

    /// Whether rule `rule`, matched, only allows or denies: a packet whose
    /// first candidate it is may be decided without reading it.
    #[inline]
    pub fn may_decide(&self, rule: u32) -> bool {
        self.decides.get(rule as usize).is_some_and(Option::is_some)
    }

    /// Asks for IPv4 rule `rule`'s box, which [`TrieWalk::decided`] reads
    /// when the rule is the packet's first candidate.
    #[inline]
    pub fn prefetch_box(&self, rule: u32) {
        // A box may straddle two cache lines.
        crate::prefetch::prefetch_ends(self.families[0].boxes.get(rule as usize));
    }

    /// Walks every automaton for each packet of `ps` (at most [`BATCH`]),
    /// in SIMD lanes where the engine has them (the few walks they leave
    /// finished in scalar steps), else in scalar rounds. Packet i's walks
    /// end in `s`'s slot i, with its head leaves' least first rule and
    /// stop (read once here for `first_leaf_rule` and `leaves_decide`).
    #[inline]
    pub fn walk_batch(&self, ps: &[Packet], s: &mut Scratch) {
        let walks = self.walk_heads(ps, s);
        // A slot walked `walks[slot]` head automata (none when it walks
        // every rule, `LINEAR`). In AVX-512, a vector of its leaves (at
        // most 16: the head's automata are at most `MAX_AUTOMATA`):
        // 0.93–0.97 of the scalar loop's time at 10k rules (BENCHMARKS.md,
        // "On an Intel Xeon").
        let walks = &walks[..ps.len()];
        #[cfg(target_arch = "x86_64")]
        if let Some(Lanes::Avx512(wide)) = self.lanes {
            let pool = &self.store.pool;
            wide.heads(&s.at, s.automata, walks, pool, &mut s.heads);
            return;
        }
        for (slot, &n) in walks.iter().enumerate() {
            let leaves = &s.at[slot * s.automata..][..usize::from(n)];
            s.heads[slot] = least_first_and_stop(&self.store, leaves);
        }
    }

    /// The walks of `walk_batch`: each packet's head automata, to their
    /// leaves.
    #[inline]
    fn walk_heads(&self, ps: &[Packet], s: &mut Scratch) -> [u8; BATCH] {
        debug_assert!(ps.len() <= BATCH);
        let m = s.automata;
        // Per slot: its family's automata.
        let mut walks = [0u8; BATCH];
        let lanes = self.lanes.filter(|_| ps.len() >= self.lanes_from);
        // The walks start from the roots in place, but the lanes take
        // theirs from the queue and write where they end: only a leaf root
        // need be copied for them (the copy, a `memmove` call a packet, was
        // 2.5% of the time at 10k rules). Per family, once a batch.
        let copy_roots = self
            .families
            .each_ref()
            .map(|f| lanes.is_none() || f.head_leaf_root());
        for (i, p) in ps.iter().enumerate() {
            let (family, k) = if p.ip_version == 4 {
                (0, key(p, p.src as u32 as u64, p.dst as u32 as u64))
            } else if p.ip_version == 6 && !in_mapped(p.src) && !in_mapped(p.dst) {
                (1, key(p, (p.src >> 64) as u64, (p.dst >> 64) as u64))
            } else {
                s.family[i] = LINEAR;
                continue;
            };
            (s.family[i], s.keys[i]) = (family, k);
            // The head tier's automata (later tiers are walked when needed).
            let f = &self.families[usize::from(family)];
            let (head, _) = f.head();
            walks[i] = head as u8;
            if copy_roots[usize::from(family)] {
                s.at[i * m..][..head].copy_from_slice(&f.roots[..head]);
            }
        }
        let mut tail = None;
        if let Some(lanes) = lanes {
            let family = &s.family;
            s.queue.refill(|ids, bases, starts| {
                let mut k = 0;
                for (i, &n) in walks.iter().enumerate().take(ps.len()) {
                    let Some(f) = self.families.get(usize::from(family[i])) else {
                        continue; // LINEAR
                    };
                    let first = i * m;
                    for (j, &start) in f.roots[..usize::from(n)].iter().enumerate() {
                        if start & LEAF == 0 {
                            let id = (first + j) as u32;
                            (ids[k], bases[k], starts[k]) = (id, (i * FIELDS) as u32, start);
                            k += 1;
                        }
                    }
                }
                k
            });
            let keys = s.keys.as_flattened();
            tail = Some(lanes.walk(&self.store, keys, &mut s.at, &s.queue));
        }
        #[cfg(target_arch = "x86_64")]
        if self.popcnt {
            // SAFETY: `popcnt` is only set where the CPU has POPCNT.
            #[allow(unsafe_code)]
            unsafe {
                self.scalar_steps_popcnt(&walks[..ps.len()], tail.as_ref(), s)
            };
            return walks;
        }
        self.scalar_steps(&walks[..ps.len()], tail.as_ref(), s);
        walks
    }

    /// The scalar steps of a batch: the few walks the lanes leave
    /// (`tail`), or where no lanes walked, every walk, in rounds.
    #[inline(always)]
    fn scalar_steps(&self, walks: &[u8], tail: Option<&Tail>, s: &mut Scratch) {
        match tail {
            Some(tail) => finish_rounds(&self.store, tail, &mut s.at, &s.keys),
            None => self.rounds(walks, s),
        }
    }

    /// The scalar steps with the POPCNT instruction for the bitmap nodes'
    /// ranks (x86-64's baseline has none, and Rust's fallback is a dozen
    /// instructions).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "popcnt")]
    fn scalar_steps_popcnt(&self, walks: &[u8], tail: Option<&Tail>, s: &mut Scratch) {
        self.scalar_steps(walks, tail, s);
    }

    /// Steps the walks not yet at a leaf (slot i has `walks[i]`), a level
    /// each per round, until every one is: the walks of a round are
    /// independent, so their cache misses overlap (what rte_acl gets from
    /// SIMD lanes).
    #[inline(always)]
    fn rounds(&self, walks: &[u8], s: &mut Scratch) {
        let m = s.automata;
        loop {
            let mut inner = false;
            for (i, &n) in walks.iter().enumerate() {
                inner |= step_round(
                    &self.store,
                    &mut s.at[i * m..][..usize::from(n)],
                    &s.keys[i],
                );
            }
            if !inner {
                break;
            }
        }
    }

    /// The walk over the candidates of the packet in `s`'s slot `slot`
    /// (walked by `walk_batch`), of class `class`; None when it must walk
    /// every rule.
    #[inline]
    pub fn merge<'a>(
        &'a self,
        slot: usize,
        s: &'a mut Scratch,
        class: u32,
        default_rule: usize,
    ) -> Option<TrieWalk<'a>> {
        let family = s.family[slot];
        if family == LINEAR {
            return None;
        }
        let f = &self.families[usize::from(family)];
        let state = class & class::STATE != 0;
        // The head leaves' least stop, kept by `walk_batch`.
        let stop = if state { NO_STOP } else { s.heads[slot].1 };
        let Scratch {
            keys,
            at,
            automata,
            lists,
            cursors,
            cand,
            ..
        } = s;
        lists.clear();
        cand.clear();
        let key = &keys[slot];
        let at = &mut at[slot * *automata..][..f.roots.len()];
        let (head, head_blocks) = f.head();
        add_leaves(&at[..head], &self.store, cand, lists);
        add_blocks(&f.blocks[..head_blocks], key, stop, cand, lists);
        for extra in [Some(f.rest), state.then_some(self.state)]
            .into_iter()
            .flatten()
        {
            let len = self.store.pool[extra as usize];
            if len > 0 {
                lists.push((extra + 1, len));
            }
        }
        cursors.clear();
        cursors.resize(lists.len(), 0);
        Some(TrieWalk {
            store: &self.store,
            family: f,
            key,
            at,
            cand,
            lists,
            cursors,
            decides: &self.decides,
            stop,
            state,
            tier: 1,
            last: default_rule,
        })
    }

    pub fn memory(&self) -> usize {
        let blocks = |f: &Family| f.blocks.iter().map(BitGroup::memory).sum::<usize>();
        self.store.words() * 4
            + self.decides.len()
            + self
                .families
                .iter()
                .map(|f| f.roots.len() * 4 + blocks(f) + f.boxes.len() * size_of::<SureBox>())
                .sum::<usize>()
    }

    /// What the rules went into, over both families.
    pub fn parts(&self) -> Parts {
        let sum = |part: fn(&Family, &Store) -> usize| {
            self.families.iter().map(|f| part(f, &self.store)).sum()
        };
        Parts {
            automata: sum(|f, _| f.roots.len()),
            head_automata: sum(|f, _| f.head().0),
            blocks: sum(|f, _| f.blocks.len()),
            unindexed: sum(|f, s| s.list(f.rest).len()),
            by_destination: self.grouping == Grouping::Destination,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::lanes::SCALAR_TAIL;
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

    /// A splitmix64 stream from `seed`.
    fn splitmix(mut seed: u64) -> impl FnMut() -> u64 {
        move || {
            seed = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = seed;
            z = (z ^ z >> 30).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ z >> 27).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ z >> 31
        }
    }

    /// One rule's drawn prefixes (8–32 bits) and port range.
    struct Drawn {
        src: String,
        dst: String,
        lo: u64,
        hi: u64,
    }

    /// `n` rules, rule i written by `rule` from drawn prefixes and ports;
    /// with each rule's two addresses and first port, to draw packets near
    /// them.
    fn drawn_rules(
        n: usize,
        draw: &mut impl FnMut() -> u64,
        rule: impl Fn(usize, Drawn) -> String,
    ) -> (String, Vec<(u32, u32, u16)>) {
        let mut text = String::new();
        let mut prefixes = Vec::new();
        for i in 0..n {
            let (a, b) = (draw() as u32, draw() as u32);
            let (la, lb) = (8 + draw() % 25, 8 + draw() % 25);
            let lo = draw() % 60000;
            let hi = lo + draw() % 2000;
            prefixes.push((a, b, lo as u16));
            let prefix = |addr: u32, len| format!("{}/{len}", std::net::Ipv4Addr::from(addr));
            let (src, dst) = (prefix(a, la), prefix(b, lb));
            text += &rule(i, Drawn { src, dst, lo, hi });
        }
        (text, prefixes)
    }

    /// The rule the engine prefetches for a walked packet is its first
    /// candidate where the automata hold every rule (the head leaves'
    /// least first rule comes at or before any rule that ends the walk).
    #[test]
    fn the_prefetched_rule_is_the_first_candidate() {
        let mut text = String::new();
        for i in 0..300 {
            let port = 1000 + i % 7;
            let (a, b) = (i / 256, i % 256);
            text += &format!(
                "allow tcp from 10.{a}.{b}.0/24 to 192.0.2.{} {port}\n",
                i % 50
            );
            text += &format!("count udp from any to 10.{}.0.0/16\n", i % 40);
        }
        text += "deny tcp from 10.0.0.0/8 to any\n";
        let prog = program(&text);
        let t = TrieClassifier::build(&prog);
        let parts = t.parts();
        assert_eq!((parts.blocks, parts.unindexed), (0, 0), "{parts:?}");
        let mut s = t.scratch();
        let (mut out, mut found) = (Vec::new(), 0);
        for i in 0..2000u32 {
            let proto = if i % 3 == 0 { 17 } else { 6 };
            let src = 0x0a00_0000 | (i * 7919) & 0x1ffff;
            let dst = [0xc000_0200 | (i % 60), 0x0a00_0000 | (i % 50) << 16][i as usize % 2];
            let p = packet(src, dst, proto, (1000 + i % 9) as u16);
            t.walk_batch(std::slice::from_ref(&p), &mut s);
            let first = t.first_leaf_rule(0, &s);
            assert!(t.candidates(&p, crate::packet_class(&p), &mut out));
            if let Some(r) = first {
                assert_eq!(out.first(), Some(&r), "{out:?}");
                found += 1;
            }
        }
        assert!(found > 1000, "a first rule for {found} of 2000 packets");
    }

    /// The classifier alone decides a packet whose first candidate is the
    /// rule its leaf says it surely matches, when that rule only allows or
    /// denies: not when it logs or makes a state, nor when an earlier
    /// rule may match.
    #[test]
    fn a_plain_rule_the_leaf_surely_matches_decides_alone() {
        let prog = program(
            "count tcp from 10.0.0.0/8 to any 80\n\
             deny log tcp from 10.1.0.0/16 to any 22\n\
             deny tcp from 10.0.0.0/8 to any 23,27\n\
             allow tcp from 10.9.0.0/16 to any 25 record-state\n\
             deny tcp from 10.0.0.0/8 to any 26 setup\n\
             allow ip from any to any\n",
        );
        let t = TrieClassifier::build(&prog);
        let mut s = t.scratch();
        let mut decided = |p: Packet| {
            t.walk_batch(std::slice::from_ref(&p), &mut s);
            let class = crate::packet_class(&p);
            let mut walk = t.merge(0, &mut s, class, prog.default_index())?;
            walk.decided()
        };
        let (net10, other) = (0x0a02_0304, 0xc000_0201);
        // Two intervals of ports: no box, the leaf's stop says it.
        assert_eq!(
            decided(packet(net10, other, 6, 23)),
            Some((2, Verdict::Drop))
        );
        assert_eq!(
            decided(packet(other, net10, 17, 53)),
            Some((5, Verdict::Pass))
        );
        // `log`: the evaluator must run the rule's action.
        assert_eq!(decided(packet(0x0a01_0203, other, 6, 22)), None);
        // A `count` rule first: it may match, and the walk goes on.
        assert_eq!(decided(packet(net10, other, 6, 80)), None);
        // `record-state`: the state must be made.
        assert_eq!(decided(packet(0x0a09_0001, other, 6, 25)), None);
        // `setup` is no key field: the rule is tried, not surely matched.
        assert_eq!(decided(packet(net10, other, 6, 26)), None);
        // Which rules the batch need not fetch for a packet decided alone
        // (`may_decide`): the plain allows and denies, whatever they test,
        // and the default rule; past the last rule, none.
        let plain: Vec<bool> = (0..8).map(|r| t.may_decide(r)).collect();
        let want = [false, false, true, false, true, true, true, false];
        assert_eq!(plain, want);
    }

    /// Without a rule for every packet, an automaton of one rule is a
    /// leaf at its root: its rule is every packet's first candidate, and
    /// decides alone only for the packets inside its one interval a field.
    #[test]
    fn a_first_candidate_decides_alone_inside_its_box() {
        let decided = |rules: &str, p: Packet| {
            let prog = program(rules);
            let t = TrieClassifier::build(&prog);
            let mut s = t.scratch();
            t.walk_batch(std::slice::from_ref(&p), &mut s);
            let class = crate::packet_class(&p);
            let mut walk = t.merge(0, &mut s, class, prog.default_index())?;
            walk.decided()
        };
        let one = "deny tcp from 10.1.2.3 to 10.4.5.6 80\n";
        let (a, b) = (0x0a01_0203, 0x0a04_0506);
        assert_eq!(decided(one, packet(a, b, 6, 80)), Some((0, Verdict::Drop)));
        // Outside its box (the port, the protocol, an address): the
        // evaluator tries it.
        assert_eq!(decided(one, packet(a, b, 6, 81)), None);
        assert_eq!(decided(one, packet(a, b, 17, 80)), None);
        assert_eq!(decided(one, packet(a, b + 1, 6, 80)), None);
        // Two intervals of ports are no box; one is.
        let holds = |rules: &str, p: Packet| {
            let t = TrieClassifier::build(&program(rules));
            let mut s = t.scratch();
            t.walk_batch(std::slice::from_ref(&p), &mut s);
            let sure = t.families[0].boxes.first();
            sure.is_some_and(|b| b.holds(&s.keys[0]))
        };
        let udp53 = packet(a, b, 17, 53);
        assert!(!holds("allow udp from 10.0.0.0/8 to any 53,55\n", udp53));
        assert!(holds("allow udp from 10.0.0.0/8 to any 53-55\n", udp53));
    }

    /// Whatever the leaves alone say (`leaves_decide`), the merged walk
    /// says the same, or, where its first candidate surely misses (the key
    /// outside its box) and a later one decides, the linear walk does;
    /// and they decide some packets, and not others.
    #[test]
    fn the_leaves_decide_as_the_merged_walk_does() {
        let mut draw = splitmix(0x0123_4567_89ab_cdef);
        let (text, prefixes) = drawn_rules(2000, &mut draw, |i, d| {
            let (src, dst, lo, hi) = (d.src, d.dst, d.lo, d.hi);
            match i % 5 {
                0 => format!("deny tcp from {src} to {dst} {lo}-{hi}\n"),
                1 => format!("allow udp from any to {dst} {lo},{hi}\n"),
                2 => format!("count ip from {src} to any\n"),
                3 => format!("deny tcp from {src} to any {lo} setup\n"),
                _ => format!("allow ip from {src} to {dst} keep-state\n"),
            }
        });
        let prog = program(&text);
        let t = TrieClassifier::build(&prog);
        let mut s = t.scratch();
        let linear = crate::Engine::builder(prog.clone())
            .walk(crate::WalkKind::Linear)
            .build();
        let packets: Vec<Packet> = (0..2000)
            .map(|n| {
                // Half of them to the rule's first port.
                let (a, b, lo) = prefixes[(draw() % 2000) as usize];
                let port = if n % 2 == 0 { lo } else { draw() as u16 };
                let (a, b) = (a ^ (draw() as u32 & 0xff), b ^ (draw() as u32 & 0xff));
                packet(a, b, [6, 17, 1][n % 3], port)
            })
            .collect();
        let (mut decides, mut past_misses, mut evaluate) = (0, 0, 0);
        for batch in packets.chunks(BATCH) {
            t.walk_batch(batch, &mut s);
            for (slot, p) in batch.iter().enumerate() {
                let class = crate::packet_class(p);
                let alone = t.leaves_decide(slot, &s, class);
                let merged = t.merge(slot, &mut s, class, prog.default_index());
                let merged = merged.and_then(|mut w| w.decided());
                match alone {
                    Alone::Decides(rule, verdict) if merged.is_none() => {
                        // A fresh engine: no state its rules keep yet.
                        let d = linear.replica().decide(p);
                        assert_eq!((d.rule, d.verdict), (Some(rule), verdict), "{p:?}");
                        past_misses += 1;
                    }
                    Alone::Decides(rule, verdict) => {
                        assert_eq!(merged, Some((rule, verdict)), "{p:?}");
                        decides += 1;
                    }
                    Alone::Evaluate => {
                        assert_eq!(merged, None, "{p:?}");
                        evaluate += 1;
                    }
                    Alone::Ask => {}
                }
            }
        }
        assert!(
            decides > 50 && past_misses > 10 && evaluate > 50,
            "{decides} decided, {past_misses} past a miss, {evaluate} not"
        );
    }

    /// A ruleset of up to `CHOOSE_GROUPING_UP_TO` rules keeps the build
    /// whose head automata take fewer steps over the rules' keys: the
    /// destination's groups on ClassBench's fw-1000 and acl-10000, both
    /// addresses' on fw- and ipc-10000 (as their traces' steps and times
    /// say: BENCHMARKS.md, "Two groups or four"). Larger rulesets, and
    /// those four groups' automata do not hold, group by both addresses
    /// without trying.
    #[test]
    fn the_build_keeps_the_grouping_whose_walks_take_fewer_steps() {
        use crate::classify::classbench_program;
        use weir_classbench::gen::Kind;
        let cases = [
            (Kind::Fw, 1000, Grouping::Destination),
            (Kind::Acl, 10_000, Grouping::Destination),
            (Kind::Fw, 10_000, Grouping::Addresses),
            (Kind::Ipc, 10_000, Grouping::Addresses),
        ];
        for (kind, n, kept) in cases {
            let prog = classbench_program(kind, n);
            let jumped = jumped_over(&prog);
            let families = [false, true].map(|v6| FamilyRules::new(&prog, &jumped, v6));
            let build = |g| TrieClassifier::build_grouped(&prog, &families, Budget::default(), g).0;
            let (four, two) = (build(Grouping::Addresses), build(Grouping::Destination));
            let steps = |c: &TrieClassifier| c.sample_steps(&families);
            let name = format!("{}-{n}", kind.name());
            assert_eq!(
                steps(&two) < steps(&four),
                kept == Grouping::Destination,
                "{name}: {} steps by destination, {} by both addresses",
                steps(&two),
                steps(&four)
            );
            let kept_build = if kept == Grouping::Destination {
                &two
            } else {
                &four
            };
            assert!(two.parts().automata < four.parts().automata, "{name}");
            let built = TrieClassifier::build_with(&prog, Budget::default());
            assert_eq!(built.parts(), kept_build.parts(), "{name}");
            assert_eq!(steps(&built), steps(kept_build), "{name}");
        }
        // Past the bound, or where four groups' automata do not hold the
        // rules (here, given too little work), one build, by both
        // addresses.
        let prog = classbench_program(Kind::Fw, CHOOSE_GROUPING_UP_TO + 1);
        let parts = TrieClassifier::build_with(&prog, Budget::default()).parts();
        assert!(!parts.by_destination, "{parts:?}");
        let prog = classbench_program(Kind::Fw, 1000);
        let short = Budget {
            work: 5_000,
            ..Budget::default()
        };
        let parts = TrieClassifier::build_with(&prog, short).parts();
        assert!(parts.blocks > 0 && !parts.by_destination, "{parts:?}");
    }

    /// A big group's attempt may spend less the bigger it is; up to
    /// `BIG_GROUP_RULES`, `MAX_WORK`, or in a one-tier build more, and a
    /// big second half whose first is built more again.
    #[test]
    fn big_groups_give_up_sooner() {
        for whole in [false, true] {
            assert_eq!(group_work(10, whole, false), FLOOR_WORK);
            assert_eq!(group_work(4096, whole, false), WORK_PER_RULE * 4096);
            let sizes = [25_000, 40_000, 77_217, 500_000];
            for pair in sizes.windows(2) {
                assert!(group_work(pair[1], whole, false) < group_work(pair[0], whole, false));
            }
            assert_eq!(
                group_work(2 * BIG_GROUP_RULES as usize, whole, false),
                MAX_WORK / 2
            );
            assert_eq!(group_work(usize::MAX >> 8, whole, false), FLOOR_WORK);
        }
        assert_eq!(group_work(BIG_GROUP_RULES as usize, false, false), MAX_WORK);
        // A one-tier build's groups up to the limit may spend more: the
        // 19.3k-rule groups of ipc-100000 take up to 11M visits.
        assert_eq!(group_work(19_305, true, false), WHOLE_MAX_WORK);
        assert!(group_work(19_305, true, false) > 11 << 20);
        assert_eq!(group_work(19_305, false, true), MAX_WORK);
        // A second half past `ROOMY_FROM_RULES` whose first half is built
        // may spend its rules' share, in a one-tier build only: the wild
        // halves of ipc-100000 (38,609 rules) and fw-100000 (16,131) take
        // 39M and 17M visits.
        for (g, visits) in [(38_609, 39 << 20), (16_131, 17 << 20)] {
            let roomy = group_work(g, true, true);
            assert_eq!(roomy, HALF_WORK_PER_RULE * g as u64);
            assert!(roomy > visits && roomy <= HALF_MAX_WORK);
            assert!(group_work(g, true, false) < visits);
            assert_eq!(group_work(g, false, true), group_work(g, false, false));
        }
        // Smaller halves keep the cap they have (the random 100k-rule
        // set's, given the room, only failed later).
        let small = ROOMY_FROM_RULES as usize;
        assert_eq!(
            group_work(small, true, true),
            group_work(small, true, false)
        );
        assert!(group_work(small + 1, true, true) > group_work(small + 1, true, false));
        assert_eq!(group_work(usize::MAX >> 8, true, true), HALF_MAX_WORK);
    }

    /// `n` drawn IPv4 deny rules (seed 7) as one group of family rules.
    fn drawn_denies(n: usize) -> (FamilyRules, Vec<u32>) {
        let mut draw = splitmix(7);
        let (text, _) = drawn_rules(n, &mut draw, |_, d| {
            format!("deny tcp from {} to {} {}-{}\n", d.src, d.dst, d.lo, d.hi)
        });
        let prog = program(&text);
        let rules = FamilyRules::new(&prog, &jumped_over(&prog), false);
        let group = (0..rules.index.len() as u32).collect();
        (rules, group)
    }

    /// Long keys are remembered under one child of the root only: the
    /// whole-automaton memo keeps none but the root's. (That the
    /// automata still lead every key where the linear walk does is the
    /// differential tests' to say, up to 20k rules.)
    #[test]
    fn long_memo_keys_live_under_one_child_of_the_root() {
        let (rules, group) = drawn_denies(3000);
        let mut spare = automaton::Spare::default();
        let limits = Limits {
            work: u64::MAX,
            words: usize::MAX,
            store_words: usize::MAX,
        };
        let mut store = Store::default();
        let (root, _) = automaton::build(&rules, &group, &mut store, limits, &mut spare);
        assert!(root.is_some());
        let (kept, local_used) = spare.long_keys();
        assert!(
            local_used,
            "no state had a long key: the test proves nothing"
        );
        assert!(
            kept <= 1,
            "{kept} long keys kept past their child of the root"
        );
    }

    /// A build on course to pass its work limit gives up early, a small
    /// share of the limit spent; with room to spare the group is built.
    #[test]
    fn a_build_on_course_past_its_limit_gives_up_early() {
        let (rules, group) = drawn_denies(3000);
        let mut spare = automaton::Spare::default();
        let mut build = |work: u64| {
            let limits = Limits {
                work,
                words: usize::MAX,
                store_words: usize::MAX,
            };
            automaton::build(&rules, &group, &mut Store::default(), limits, &mut spare)
        };
        let (root, needed) = build(u64::MAX);
        assert!(root.is_some());
        // Without the projection a failing build spends its whole limit.
        let (root, spent) = build(needed / 4);
        assert!(root.is_none());
        assert!(
            spent < needed / 8,
            "{spent} of {} spent, {needed} needed",
            needed / 4
        );
        for room in [11, 15, 20] {
            let (root, _) = build(needed * room / 10);
            assert!(root.is_some(), "{needed} needed, {room}/10 of it given");
        }
    }

    /// An automaton built with the working vectors an earlier build handed
    /// on (its memo of another group's states among them) is the one a
    /// fresh build makes.
    #[test]
    fn handed_on_vectors_build_the_same_automata() {
        let mut text = String::new();
        for i in 0..600u32 {
            let (a, b, port) = (i.wrapping_mul(2_654_435_761), i.wrapping_mul(40_503), i * 7);
            let (a, b) = (std::net::Ipv4Addr::from(a), std::net::Ipv4Addr::from(b));
            text += &match i % 3 {
                0 => format!("allow tcp from {a}/24 to {b}/16 {port}\n"),
                1 => format!("deny udp from any to {b}/20 {port}-{}\n", port + 9),
                _ => format!("count ip from {a}/12 to any\n"),
            };
        }
        let prog = program(&text);
        let jumped = jumped_over(&prog);
        let rules = FamilyRules::new(&prog, &jumped, false);
        let groups = address_groups(&rules, 0..rules.index.len() as u32, Grouping::Addresses);
        assert!(groups.len() >= 2, "{} groups", groups.len());
        let limits = Limits {
            work: u64::MAX,
            words: usize::MAX,
            store_words: usize::MAX,
        };
        let mut spare = automaton::Spare::default();
        for group in groups.iter().chain(&groups) {
            let (mut handed_on, mut fresh) = (Store::default(), Store::default());
            let (root, _) = automaton::build(&rules, group, &mut handed_on, limits, &mut spare);
            let own = &mut automaton::Spare::default();
            let (fresh_root, _) = automaton::build(&rules, group, &mut fresh, limits, own);
            assert!(root.is_some());
            assert_eq!(root, fresh_root);
            assert_eq!(handed_on.nodes, fresh.nodes);
            assert_eq!(handed_on.pool, fresh.pool);
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
        let t = TrieClassifier::build(&prog);
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
        let t = TrieClassifier::build(&prog);
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

    /// Each slot's least first rule and stop over its head leaves, from
    /// the AVX-512 vectors, are the scalar loop's: drawn leaves of every
    /// kind (one rule, a list, none; stopping or not), 0–12 a slot.
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn heads_in_vectors_are_the_scalar_heads() {
        use super::super::automaton::STOP;
        let Some(wide) = super::super::avx512::Avx512::detect() else {
            eprintln!("no AVX-512 on this CPU: nothing to compare");
            return;
        };
        let mut draw = splitmix(7);
        let mut store = Store::default();
        let lists: Vec<u32> = (0..50)
            .map(|_| {
                let mut rules: Vec<u32> = (0..1 + draw() % 6)
                    .map(|_| (draw() % 5000) as u32)
                    .collect();
                rules.sort_unstable();
                store.push_list(&rules)
            })
            .collect();
        // Several slots a vector (up to eight automata), one slot a vector
        // (up to 16), one slot's head of a longer row (later tiers' automata
        // after it); whole batches and partial ones.
        let rows = (1..=MAX_AUTOMATA + 8).flat_map(|m| [(m, BATCH), (m, BATCH - 3), (m, 5)]);
        for (m, len) in rows {
            let mut at = vec![0; BATCH * m];
            let head = m.min(MAX_AUTOMATA) as u64;
            let walks: Vec<u8> = (0..len).map(|_| (draw() % (head + 1)) as u8).collect();
            for leaf in &mut at {
                let stop = if draw().is_multiple_of(3) { STOP } else { 0 };
                *leaf = match draw() % 4 {
                    0 => EMPTY | stop,
                    1 => LEAF | lists[(draw() % 50) as usize] | stop,
                    _ => LEAF | SINGLE | (draw() % 5000) as u32 | stop,
                };
            }
            let mut heads = [(0, 0); BATCH];
            wide.heads(&at, m, &walks, &store.pool, &mut heads);
            for (slot, &n) in walks.iter().enumerate() {
                let leaves = &at[slot * m..][..usize::from(n)];
                let scalar = least_first_and_stop(&store, leaves);
                assert_eq!(
                    heads[slot], scalar,
                    "{m} automata, slot {slot}: {leaves:x?}"
                );
            }
        }
    }

    /// Each walk in SIMD lanes this CPU has ends every walk in the same
    /// leaf as the scalar rounds: IPv4 and IPv6, listed and bitmap nodes,
    /// batches of every size up to [`BATCH`]; and so does the scalar tail
    /// the lanes leave, whatever its length. (A CPU without AVX2 has only
    /// the scalar walk; the test then says so and checks nothing.)
    #[test]
    fn lanes_end_where_scalar_rounds_end() {
        let mut draw = splitmix(0x9e37_79b9_7f4a_7c15);
        let (text, prefixes) = drawn_rules(3000, &mut draw, |i, d| {
            let (src, dst, lo, hi) = (d.src, d.dst, d.lo, d.hi);
            match i % 4 {
                0 => format!("allow tcp from {src} to {dst} {lo}-{hi}\n"),
                1 => format!("deny udp from any to {dst} {lo}\n"),
                2 => format!("count ip from {src} to any\n"),
                _ => format!("allow tcp from 2001:db8:{:x}::/48 to any {lo}\n", i),
            }
        });
        let prog = program(&text);
        let mut t = TrieClassifier::build(&prog);
        let mut s = t.scratch();
        let m = s.automata;
        let mut packets = Vec::new();
        for n in 0..400 {
            let (a, b, _) = prefixes[(draw() % 3000) as usize];
            let mut p = packet(
                a ^ (draw() as u32 & 0xff),
                b ^ (draw() as u32 & 0xffff),
                6,
                0,
            );
            p.dst_port = (draw() % 65536) as u16;
            p.proto = [6, 17, 1][n % 3];
            if n % 5 == 0 {
                p.ip_version = 6;
                p.src = 0x2001_0db8_u128 << 96 | u128::from(draw() % 3000) << 80 | u128::from(a);
            }
            packets.push(p);
        }
        let vectors = Simd::here();
        if vectors.is_empty() {
            eprintln!("no SIMD walk on this CPU: nothing to compare");
        }
        for simd in vectors {
            let (mut most_queued, mut lists, mut stops) = (0, 0, 0);
            // Batches that fill one vector group or several.
            let sizes = [BATCH, 7, 23, 61].map(|n| packets.chunks(n));
            for (k, batch) in sizes.into_iter().flatten().enumerate() {
                t.use_simd(simd);
                assert_eq!(t.simd(), simd);
                t.walk_batch(batch, &mut s);
                let ended = s.at[..batch.len() * m].to_vec();
                // The scalar tail alone, given every queued walk back at
                // its root (far more than the lanes leave), ends them
                // where the lanes did.
                most_queued = most_queued.max(s.queue.len());
                for &id in s.queue.ids() {
                    let (slot, j) = (id as usize / m, id as usize % m);
                    s.at[id as usize] = t.families[usize::from(s.family[slot])].roots[j];
                }
                let queued: Vec<(u32, u32)> = s
                    .queue
                    .ids()
                    .iter()
                    .copied()
                    .zip(s.queue.bases().iter().copied())
                    .collect();
                for walks in queued.chunks(SCALAR_TAIL) {
                    let mut tail = Tail::default();
                    walks.iter().for_each(|&(id, base)| tail.push(id, base));
                    finish_rounds(&t.store, &tail, &mut s.at, &s.keys);
                }
                assert_eq!(ended, s.at[..batch.len() * m], "tail, batch {k}");
                // The heads found from them (in AVX-512, vectors), too.
                t.walk_batch(batch, &mut s);
                let heads = s.heads[..batch.len()].to_vec();
                t.use_simd(Simd::Off);
                t.walk_batch(batch, &mut s);
                assert_eq!(ended, s.at[..batch.len() * m], "{simd:?}, batch {k}");
                assert_eq!(heads, s.heads[..batch.len()], "{simd:?}, batch {k}");
                lists += (0..batch.len())
                    .filter(|&slot| {
                        let f = t.families.get(usize::from(s.family[slot]));
                        let leaves = &s.at[slot * m..][..f.map_or(0, |f| f.head().0)];
                        leaves.iter().any(|&l| l & SINGLE == 0 && l != EMPTY)
                    })
                    .count();
                stops += heads.iter().filter(|h| h.1 != NO_STOP).count();
            }
            assert!(most_queued > 32, "{most_queued} walks queued at most");
            assert!(
                lists > 20 && stops > 50,
                "{lists} packets with list leaves, {stops} stops"
            );
        }
    }

    /// IPv6 packets inside the IPv4-mapped block walk every rule.
    #[test]
    fn mapped_ipv6_walks_linearly() {
        let prog = program("allow ip from 10.0.0.0/8 to any\n");
        let t = TrieClassifier::build(&prog);
        let mut p = packet(0x0a00_0001, 0x0a00_0002, 6, 80);
        p.ip_version = 6;
        let mut out = Vec::new();
        assert!(!t.candidates(&p, crate::packet_class(&p), &mut out));
    }
}
