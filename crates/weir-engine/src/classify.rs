//! A classifier that gives each packet the rules that can match it.
//!
//! The bit-vector scheme (Lakshman and Stiliadis, 1998): for each header
//! field (source and destination address, source and destination port,
//! protocol) the field's range is cut into elementary intervals at every
//! rule boundary, and each interval keeps a bitset of the rules whose
//! constraint on that field admits it. A packet looks up its interval in
//! each field (binary search) and ANDs the bitsets: what is left, in rule
//! order, are its candidates. The evaluator then walks only those, so
//! first match, `count`, `log`, `skipto` and `call` behave exactly as in
//! the linear walk: a rule the packet cannot match is never a candidate
//! and every rule it can match is.
//!
//! A rule's constraint on a field comes from its plain instructions (not in
//! an or-block), negated or not; everything else (`me`, or-blocks, options)
//! is left to the evaluator. The default rule is a candidate of every
//! packet, which ends every walk.

use crate::program::{Insn, Op, Program, F_NOT, F_OR};
use weir_wire::Packet;

/// Port key for packets without ports (later fragments, ICMP, …).
const NO_PORTS: u32 = 1 << 16;
/// The IPv4-mapped block `::ffff:0:0/96`, where IPv4 packets' addresses live.
const MAPPED_LO: u128 = 0xffff_u128 << 32;
const MAPPED_HI: u128 = MAPPED_LO | 0xffff_ffff;

/// Don't build past this many bitset words in all (64 MiB): beyond it the
/// engine walks linearly (a scheme with aggregated bitsets is issue 6).
const MAX_WORDS: usize = 8 << 20;

/// Inclusive intervals over one field.
type Set<T> = Vec<(T, T)>;

/// One field: sorted interval starts, and per interval the rules' bitset.
struct Field<T> {
    starts: Vec<T>,
    bits: Vec<u64>,
}

pub struct Classifier {
    words: usize,
    /// Addresses, per family: IPv4 packets search the u32 fields (the
    /// mapped block, rebased), IPv6 packets the u128 ones.
    src4: Field4,
    dst4: Field4,
    src6: Field<u128>,
    dst6: Field<u128>,
    sport: PortField,
    dport: PortField,
    /// Per protocol number, the rules whose header admits it.
    proto: Vec<u64>,
}

impl Classifier {
    /// Builds the classifier, or None when it would be too large.
    pub fn build(prog: &Program) -> Option<Classifier> {
        let n = prog.rules.len();
        let words = n.div_ceil(64);
        let mut src: Vec<Option<Set<u128>>> = Vec::with_capacity(n);
        let mut dst = Vec::with_capacity(n);
        let mut sport: Vec<Option<Set<u32>>> = Vec::with_capacity(n);
        let mut dport = Vec::with_capacity(n);
        for rule in &prog.rules {
            let c = Constraints::of(prog, prog.rule_insns(rule));
            src.push(c.src);
            dst.push(c.dst);
            sport.push(c.sport);
            dport.push(c.dport);
        }
        let mut proto = vec![0u64; 256 * words];
        for (r, rule) in prog.rules.iter().enumerate() {
            for p in 0..256usize {
                if rule.proto.is_none_or(|want| usize::from(want) == p) {
                    proto[p * words + r / 64] |= 1 << (r % 64);
                }
            }
        }
        let budget =
            |sets: &[Option<Set<u128>>]| sets.iter().flatten().map(|s| 2 * s.len()).sum::<usize>();
        let estimate = (budget(&src) + budget(&dst) + 4 * n + 2) * words;
        if estimate > MAX_WORDS {
            return None;
        }
        Some(Classifier {
            words,
            src4: Field4::build(&family4(&src), words),
            dst4: Field4::build(&family4(&dst), words),
            src6: Field::build(&src, words, u128::MAX),
            dst6: Field::build(&dst, words, u128::MAX),
            sport: PortField::build(&sport, words),
            dport: PortField::build(&dport, words),
            proto,
        })
    }

    /// Bitset words per packet.
    pub fn words(&self) -> usize {
        self.words
    }

    /// Fills `out` (len `words()`) with the packet's candidate rules.
    #[inline]
    pub fn candidates(&self, p: &Packet, out: &mut [u64]) {
        let w = self.words;
        // An IPv6 address inside the IPv4-mapped block would look like an
        // IPv4 one to the address fields: rare and odd, so walk everything.
        let odd = p.ip_version == 6 && (in_mapped(p.src) || in_mapped(p.dst));
        if odd {
            out.fill(!0);
            return;
        }
        let (sport, dport) = if p.has_ports {
            (u32::from(p.src_port), u32::from(p.dst_port))
        } else {
            (NO_PORTS, NO_PORTS)
        };
        let (a, b) = if p.ip_version == 4 {
            (
                self.src4.lookup(p.src as u32, w),
                self.dst4.lookup(p.dst as u32, w),
            )
        } else {
            (self.src6.lookup(p.src, w), self.dst6.lookup(p.dst, w))
        };
        let c = self.sport.lookup(sport, w);
        let d = self.dport.lookup(dport, w);
        let e = &self.proto[usize::from(p.proto) * w..][..w];
        // Zipped iterators: no bounds check per word.
        let fields = a.iter().zip(b).zip(c).zip(d).zip(e);
        for (o, ((((a, b), c), d), e)) in out.iter_mut().zip(fields) {
            *o = a & b & c & d & e;
        }
    }

    /// Memory held, in bytes.
    pub fn memory(&self) -> usize {
        let f6 = |f: &Field<u128>| f.starts.len() * 16 + f.bits.len() * 8;
        self.src4.memory()
            + self.dst4.memory()
            + f6(&self.src6)
            + f6(&self.dst6)
            + self.sport.memory()
            + self.dport.memory()
            + self.proto.len() * 8
    }
}

/// The first candidate at or after rule `i`. The default rule, last, is
/// always a candidate, so this stays in range.
#[inline]
pub fn next_candidate(bits: &[u64], i: usize) -> usize {
    let mut k = i / 64;
    let mut word = bits[k] & (!0u64 << (i % 64));
    while word == 0 {
        k += 1;
        word = bits[k];
    }
    k * 64 + word.trailing_zeros() as usize
}

/// Each rule's address set restricted to the IPv4-mapped block, rebased
/// to plain IPv4 addresses.
fn family4(sets: &[Option<Set<u128>>]) -> Vec<Option<Set<u32>>> {
    sets.iter()
        .map(|set| {
            set.as_ref().map(|intervals| {
                intervals
                    .iter()
                    .filter(|&&(lo, hi)| hi >= MAPPED_LO && lo <= MAPPED_HI)
                    .map(|&(lo, hi)| {
                        (
                            (lo.max(MAPPED_LO) - MAPPED_LO) as u32,
                            (hi.min(MAPPED_HI) - MAPPED_LO) as u32,
                        )
                    })
                    .collect()
            })
        })
        .collect()
}

fn in_mapped(a: u128) -> bool {
    (MAPPED_LO..=MAPPED_HI).contains(&a)
}

impl<T: Step> Field<T> {
    /// `sets[r]` is rule r's admitted intervals (None: no constraint);
    /// `max` is the field's largest value.
    fn build(sets: &[Option<Set<T>>], words: usize, max: T) -> Field<T> {
        let mut starts = vec![T::ZERO];
        for (lo, hi) in sets.iter().flatten().flatten() {
            starts.push(*lo);
            if *hi < max {
                starts.push(hi.succ());
            }
        }
        starts.sort_unstable();
        starts.dedup();
        let mut bits = vec![0u64; starts.len() * words];
        for (r, set) in sets.iter().enumerate() {
            let (word, bit) = (r / 64, 1u64 << (r % 64));
            match set {
                None => (0..starts.len()).for_each(|e| bits[e * words + word] |= bit),
                Some(intervals) => {
                    for (lo, hi) in intervals {
                        let first = starts.partition_point(|s| s < lo);
                        let end = starts.partition_point(|s| s <= hi);
                        (first..end).for_each(|e| bits[e * words + word] |= bit);
                    }
                }
            }
        }
        Field { starts, bits }
    }

    /// The bitset of the interval holding `v`: the last start ≤ v, found
    /// by a branch-free binary search (the comparisons are unpredictable,
    /// so a conditional move beats a branch).
    #[inline(always)]
    fn lookup(&self, v: T, words: usize) -> &[u64] {
        let base = last_at_most(&self.starts, 0, self.starts.len(), v);
        // starts[0] is ZERO, so `base` is the interval of `v`.
        &self.bits[base * words..][..words]
    }
}

/// Index of the last of `starts[lo..hi]` that is ≤ v, or `lo - 1` when
/// none is (callers guarantee `starts[lo - 1] ≤ v` then). Branch-free.
#[inline(always)]
fn last_at_most<T: Copy + Ord>(starts: &[T], lo: usize, hi: usize, v: T) -> usize {
    let (mut base, mut size) = (lo, hi - lo);
    if size == 0 || starts[lo] > v {
        return lo.wrapping_sub(1);
    }
    while size > 1 {
        let half = size / 2;
        let mid = base + half;
        base = std::hint::select_unpredictable(starts[mid] <= v, mid, base);
        size -= half;
    }
    base
}

/// An IPv4 address field with a table over the top 16 bits: the block of
/// `v >> 16` holds starts `[top[h], top[h+1])`, usually none or a few, so
/// a lookup is one table load and a search of a handful.
struct Field4 {
    field: Field<u32>,
    top: Vec<u32>,
}

impl Field4 {
    fn build(sets: &[Option<Set<u32>>], words: usize) -> Field4 {
        let field = Field::build(sets, words, u32::MAX);
        let top = (0..=1u64 << 16)
            .map(|h| field.starts.partition_point(|&s| u64::from(s) < h << 16) as u32)
            .collect();
        Field4 { field, top }
    }

    #[inline(always)]
    fn lookup(&self, v: u32, words: usize) -> &[u64] {
        let h = (v >> 16) as usize;
        let (lo, hi) = (self.top[h] as usize, self.top[h + 1] as usize);
        // Block 0 starts with starts[0] == 0, so lo - 1 is never taken there.
        let e = last_at_most(&self.field.starts, lo, hi, v);
        &self.field.bits[e * words..][..words]
    }

    fn memory(&self) -> usize {
        self.field.starts.len() * 4 + self.field.bits.len() * 8 + self.top.len() * 4
    }
}

/// A port field as a direct table: port (or NO_PORTS) → interval.
struct PortField {
    field: Field<u32>,
    slot: Vec<u32>,
}

impl PortField {
    fn build(sets: &[Option<Set<u32>>], words: usize) -> PortField {
        let field = Field::build(sets, words, NO_PORTS);
        let slot = (0..=NO_PORTS)
            .map(|v| (field.starts.partition_point(|&s| s <= v) - 1) as u32)
            .collect();
        PortField { field, slot }
    }

    #[inline(always)]
    fn lookup(&self, v: u32, words: usize) -> &[u64] {
        let e = self.slot[v as usize] as usize;
        &self.field.bits[e * words..][..words]
    }

    fn memory(&self) -> usize {
        self.field.starts.len() * 4 + self.field.bits.len() * 8 + self.slot.len() * 4
    }
}

/// The few integer operations the fields need.
trait Step: Copy + Ord {
    const ZERO: Self;
    /// Callers never step past the field's range.
    fn succ(self) -> Self;
    fn pred(self) -> Self;
}
impl Step for u128 {
    const ZERO: u128 = 0;
    fn succ(self) -> u128 {
        self + 1
    }
    fn pred(self) -> u128 {
        self - 1
    }
}
impl Step for u32 {
    const ZERO: u32 = 0;
    fn succ(self) -> u32 {
        self + 1
    }
    fn pred(self) -> u32 {
        self - 1
    }
}

/// What a rule's plain instructions require of each field.
#[derive(Default)]
struct Constraints {
    src: Option<Set<u128>>,
    dst: Option<Set<u128>>,
    sport: Option<Set<u32>>,
    dport: Option<Set<u32>>,
}

impl Constraints {
    fn of(prog: &Program, insns: &[Insn]) -> Constraints {
        let mut c = Constraints::default();
        for (k, ins) in insns.iter().enumerate() {
            let in_or_block = ins.flags & F_OR != 0 || (k > 0 && insns[k - 1].flags & F_OR != 0);
            if in_or_block {
                continue;
            }
            let not = ins.flags & F_NOT != 0;
            match ins.op {
                Op::SrcPrefix4 | Op::SrcNet => {
                    if let Some(set) = addr_set(prog, ins) {
                        narrow(&mut c.src, set, not, u128::MAX);
                    }
                }
                Op::DstPrefix4 | Op::DstNet => {
                    if let Some(set) = addr_set(prog, ins) {
                        narrow(&mut c.dst, set, not, u128::MAX);
                    }
                }
                Op::SrcPort | Op::SrcPortRange => {
                    narrow(&mut c.sport, port_set(prog, ins), not, NO_PORTS)
                }
                Op::DstPort | Op::DstPortRange => {
                    narrow(&mut c.dport, port_set(prog, ins), not, NO_PORTS)
                }
                Op::HasPorts => {
                    narrow(&mut c.sport, vec![(0, NO_PORTS - 1)], not, NO_PORTS);
                    narrow(&mut c.dport, vec![(0, NO_PORTS - 1)], not, NO_PORTS);
                }
                _ => {}
            }
        }
        c
    }
}

/// The addresses an address instruction admits (before NOT), exactly for
/// every packet whose address is outside the mapped block unless IPv4;
/// None when a mask is not a prefix (then the field is left unconstrained,
/// negated or not).
fn addr_set(prog: &Program, ins: &Insn) -> Option<Set<u128>> {
    let mut set = Vec::new();
    if matches!(ins.op, Op::SrcPrefix4 | Op::DstPrefix4) {
        let mask = u32::MAX.checked_shl(32 - u32::from(ins.len)).unwrap_or(0);
        set.push((
            MAPPED_LO | u128::from(ins.arg & mask),
            MAPPED_LO | u128::from(ins.arg | !mask),
        ));
    } else {
        let nets = &prog.nets[ins.arg as usize..ins.arg as usize + ins.len as usize];
        for net in nets {
            // Only prefixes become intervals; an odd mask means no constraint.
            if net.mask.leading_ones() + net.mask.trailing_zeros() != 128 {
                return None;
            }
            let (lo, hi) = (net.value, net.value | !net.mask);
            if net.version == 4 {
                set.push((lo, hi));
            } else {
                // An IPv6 net never matches an IPv4 packet: cut out the mapped block.
                if lo < MAPPED_LO {
                    set.push((lo, hi.min(MAPPED_LO - 1)));
                }
                if hi > MAPPED_HI {
                    set.push((lo.max(MAPPED_HI + 1), hi));
                }
            }
        }
    }
    Some(normalize(set))
}

fn port_set(prog: &Program, ins: &Insn) -> Set<u32> {
    let ranges: Vec<(u32, u32)> = if matches!(ins.op, Op::SrcPortRange | Op::DstPortRange) {
        vec![(ins.arg & 0xffff, ins.arg >> 16)]
    } else {
        prog.ranges[ins.arg as usize..ins.arg as usize + ins.len as usize]
            .iter()
            .map(|&(lo, hi)| (u32::from(lo), u32::from(hi)))
            .collect()
    };
    normalize(ranges)
}

/// Intersects the constraint with `set` (or its complement within 0..=max).
fn narrow<T: Step>(slot: &mut Option<Set<T>>, set: Set<T>, not: bool, max: T) {
    let set = if not { complement(&set, max) } else { set };
    *slot = Some(match slot.take() {
        None => set,
        Some(old) => intersect(&old, &set),
    });
}

/// Sorted, overlaps merged.
fn normalize<T: Step>(mut set: Set<T>) -> Set<T> {
    set.sort_unstable();
    let mut out: Set<T> = Vec::with_capacity(set.len());
    for (lo, hi) in set {
        match out.last_mut() {
            Some(last) if lo <= last.1 => last.1 = last.1.max(hi),
            _ => out.push((lo, hi)),
        }
    }
    out
}

/// Everything in 0..=max that `set` (sorted, disjoint) leaves out.
fn complement<T: Step>(set: &Set<T>, max: T) -> Set<T> {
    let mut out = Vec::new();
    let mut next = Some(T::ZERO);
    for &(lo, hi) in set {
        if let Some(n) = next.filter(|&n| n < lo) {
            out.push((n, lo.pred()));
        }
        next = (hi < max).then(|| hi.succ());
    }
    if let Some(n) = next {
        out.push((n, max));
    }
    out
}

fn intersect<T: Copy + Ord>(a: &Set<T>, b: &Set<T>) -> Set<T> {
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < a.len() && j < b.len() {
        let lo = a[i].0.max(b[j].0);
        let hi = a[i].1.min(b[j].1);
        if lo <= hi {
            out.push((lo, hi));
        }
        if a[i].1 < b[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}
