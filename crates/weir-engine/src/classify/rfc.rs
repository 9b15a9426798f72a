//! Recursive flow classification (Gupta and McKeown, "Packet
//! Classification on Multiple Fields", SIGCOMM 1999) of IPv4 packets, in
//! front of the bitsets (`bits.rs`) for small rulesets.
//!
//! The header is cut into chunks: each address's high and low 16 bits,
//! each port (17 bits: 65536 is "no ports"), the protocol and the class
//! bits. A table per chunk gives the value's equivalence class (the
//! values that admit the same rules), and tables per pair of classes
//! combine them, phase by phase, into two classes per packet: one for its
//! addresses, one for its ports, protocol and class bits (each left as two
//! when their combining table would not fit). The AND of their bitsets is
//! its candidates (in AVX-512 vectors where the CPU has them). A lookup is about fourteen table reads and an AND,
//! where the bitsets' searches branch on the data; and where the first
//! candidate decides alone, the AND of each set's mask of nonzero words
//! and a word or two of each set, not the whole sets. (Combining the last
//! two classes in a table too would save the AND, but that table grows as
//! their product: tens of millions of cells at 1,000 rules.)
//!
//! The classifier alone decides when the first candidate is a plain
//! `allow` or `deny` whose every test the chunks index exactly: the
//! evaluator would match it without fail.

use super::bits::CLASS_BITS;
use super::family::jumped_over;
use super::fields::{normalize, Constraints, Set, NO_PORTS};
use super::lanes::{Simd, WideAnd};
use crate::program::{Program, Rule, Verdict};
use std::collections::HashMap;
use weir_wire::Packet;

/// Most cells of one combining table, and of all of them: past either,
/// there is no recursive classification (the bitsets alone serve).
const MAX_CELLS: usize = 1 << 20;
const MAX_TOTAL_CELLS: usize = 4 << 20;

/// A chunk's or a pair's classes: per class, its rules' bitset (in
/// `sets`, one after another).
#[derive(Default)]
struct Classes {
    sets: Vec<u64>,
    index: HashMap<Box<[u64]>, u16, ahash::RandomState>,
}

impl Classes {
    /// The class of `set`; None past 65,536 classes.
    fn intern(&mut self, set: &[u64]) -> Option<u16> {
        if let Some(&c) = self.index.get(set) {
            return Some(c);
        }
        let c = u16::try_from(self.index.len()).ok()?;
        self.index.insert(set.into(), c);
        self.sets.extend_from_slice(set);
        Some(c)
    }
}

/// A 16-bit half of an address's chunk, and a port's (65,536 is "no
/// ports"): per value, its class.
type AddressChunk = [u16; 1 << 16];
type PortChunk = [u16; NO_PORTS as usize + 1];

/// A combining table: the class of each pair (row, column).
struct Pairs {
    cols: usize,
    ids: Vec<u16>,
}

impl Pairs {
    #[inline(always)]
    fn get(&self, a: u16, b: u16) -> u16 {
        self.ids[usize::from(a) * self.cols + usize::from(b)]
    }
}

/// A packet's source, destination, ports and kind classes: what the
/// recursive tables' first two phases found ([`Rfc::classes`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Found([u16; 4]);

pub struct Rfc {
    words: usize,
    /// The chunks' tables, each as long as its values go, so that indexing
    /// them needs no bounds check: eight checks a packet were 8% of
    /// ipc-1000's decision instructions (`valgrind --tool=callgrind`).
    src_hi: Box<AddressChunk>,
    src_lo: Box<AddressChunk>,
    dst_hi: Box<AddressChunk>,
    dst_lo: Box<AddressChunk>,
    sport: Box<PortChunk>,
    dport: Box<PortChunk>,
    proto: Box<[u16; 256]>,
    class: Box<[u16; 1 << CLASS_BITS]>,
    src: Pairs,
    dst: Pairs,
    ports: Pairs,
    kind: Pairs,
    /// The addresses' classes and the rest's, each combined when the
    /// combination fits, else left as two for the AND.
    addrs: Last,
    rest: Last,
    /// Both sides' classes combined, when that table fits too.
    top: Option<Top>,
    /// Per rule: its verdict when a packet it is a candidate of surely
    /// matches it and stops there.
    decides: Vec<Option<Verdict>>,
    /// The whole sets' AND in vectors, where the CPU has them.
    wide: Option<WideAnd>,
    /// Whether the class bits' chunk has more than one class.
    reads_class: bool,
}

/// The two sides' classes combined: per final class, its bitset (cut
/// after the first rule that ends every walk reaching it) and first
/// candidate.
struct Top {
    pairs: Pairs,
    sets: Vec<u64>,
    first: Vec<u32>,
}

impl Top {
    fn of(
        prog: &Program,
        decides: &[Option<Verdict>],
        addrs: &Last,
        rest: &Last,
        words: usize,
        cells: &mut usize,
    ) -> Option<Top> {
        let (Last::Combined(_, a), Last::Combined(_, b)) = (addrs, rest) else {
            return None;
        };
        let (a, b) = (&a.bits, &b.bits);
        let jumped = jumped_over(prog);
        let mut ends = Ends {
            mask: vec![0; words],
            last: decides.len() - 1,
        };
        for r in (0..decides.len()).filter(|&r| decides[r].is_some() && !jumped[r]) {
            ends.mask[r / 64] |= 1 << (r % 64);
        }
        let (pairs, classes) = pairs(a, b, words, cells, Some(&ends))?;
        let first = classes
            .sets
            .chunks_exact(words)
            .map(|set| super::next_candidate(set, 0) as u32)
            .collect();
        Some(Top {
            pairs,
            sets: classes.sets,
            first,
        })
    }
}

/// The last phase of one side: its two classes combined (their pair's
/// class and bitsets), or the two classes' own bitsets.
enum Last {
    Combined(Pairs, Sets),
    Apart(Sets, Sets),
}

impl Last {
    fn of(a: Vec<u64>, b: Vec<u64>, words: usize, cells: &mut usize) -> Last {
        match pairs(&a, &b, words, cells, None) {
            Some((p, c)) => Last::Combined(p, Sets::of(c.sets, words)),
            None => Last::Apart(Sets::of(a, words), Sets::of(b, words)),
        }
    }

    /// The bitsets of classes `a` and `b`: one, or two to AND.
    #[inline(always)]
    fn sets(&self, a: u16, b: u16, w: usize) -> (ClassSet<'_>, Option<ClassSet<'_>>) {
        match self {
            Last::Combined(p, sets) => (sets.at(p.get(a, b), w), None),
            Last::Apart(x, y) => (x.at(a, w), Some(y.at(b, w))),
        }
    }

    fn memory(&self) -> usize {
        match self {
            Last::Combined(p, sets) => p.ids.len() * 2 + sets.memory(),
            Last::Apart(x, y) => x.memory() + y.memory(),
        }
    }
}

/// A last phase's classes' bitsets, and per class which of its words hold
/// a rule: a packet's first candidate is in the first word its sets share,
/// found from these small masks without reading whole sets (at 1,000 rules
/// the sets are 16 words, four cache lines a packet, and the masks stay in
/// cache where the sets do not).
struct Sets {
    bits: Vec<u64>,
    /// Empty past [`MASKED_WORDS`] words a set: every word then counts
    /// as holding a rule, and `first_shared` tries them in order.
    nonzero: Vec<u16>,
}

/// Sets of up to this many words get their masks (the bitsets serve up
/// to 1,024 rules: 16 words).
const MASKED_WORDS: usize = 16;

/// One class's bitset and mask of nonzero words.
#[derive(Clone, Copy)]
struct ClassSet<'a> {
    bits: &'a [u64],
    nonzero: u16,
}

impl Sets {
    fn of(bits: Vec<u64>, words: usize) -> Sets {
        let nonzero = match words <= MASKED_WORDS {
            true => bits
                .chunks_exact(words)
                .map(|set| {
                    (0..words)
                        .filter(|&k| set[k] != 0)
                        .fold(0, |m, k| m | 1 << k)
                })
                .collect(),
            false => Vec::new(),
        };
        Sets { bits, nonzero }
    }

    #[inline(always)]
    fn at(&self, c: u16, w: usize) -> ClassSet<'_> {
        let c = usize::from(c);
        ClassSet {
            bits: &self.bits[c * w..][..w],
            nonzero: self.nonzero.get(c).copied().unwrap_or(!0),
        }
    }

    fn memory(&self) -> usize {
        self.bits.len() * 8 + self.nonzero.len() * 2
    }
}

impl Rfc {
    /// The tables for `prog`'s rules whose per-rule sets are `src`, `dst`
    /// (IPv4, rebased), `sport`, `dport`, and whose class tests each
    /// packet-class value passes as `class_table` says (`bits.rs`); None
    /// when a combining table would pass the limits.
    pub fn build(
        prog: &Program,
        constraints: &[Constraints],
        src: &[Option<Set<u32>>],
        dst: &[Option<Set<u32>>],
        class_table: &[u64],
    ) -> Option<Rfc> {
        let words = prog.rules.len().div_ceil(64);
        let decides: Vec<Option<Verdict>> = prog
            .rules
            .iter()
            .zip(constraints)
            .zip(src.iter().zip(dst))
            .map(|((rule, c), (s, d))| decides(rule, c, s, d))
            .collect();
        // Per rule, its intervals in a chunk: the high or low 16 bits of
        // an address (a superset unless within one /16 or /16-aligned).
        let hi = |s: &Option<Set<u32>>| -> Set<u32> {
            match s {
                None => vec![(0, 0xffff)],
                Some(s) => s.iter().map(|&(a, b)| (a >> 16, b >> 16)).collect(),
            }
        };
        let lo = |s: &Option<Set<u32>>| -> Set<u32> {
            match s {
                None => vec![(0, 0xffff)],
                Some(s) => s
                    .iter()
                    .map(|&(a, b)| match a >> 16 == b >> 16 {
                        true => (a & 0xffff, b & 0xffff),
                        false => (0, 0xffff),
                    })
                    .collect(),
            }
        };
        let per_rule = |sets: &[Option<Set<u32>>], f: fn(&Option<Set<u32>>) -> Set<u32>| {
            sets.iter().map(f).collect::<Vec<_>>()
        };
        let port = |s: &Option<Set<u32>>| s.clone().unwrap_or(vec![(0, NO_PORTS)]);
        let sport: Vec<_> = constraints.iter().map(|c| port(&c.sport)).collect();
        let dport: Vec<_> = constraints.iter().map(|c| port(&c.dport)).collect();
        let protos: Vec<Set<u32>> = prog
            .rules
            .iter()
            .map(|r| match r.proto {
                Some(p) => vec![(u32::from(p), u32::from(p))],
                None => vec![(0, 255)],
            })
            .collect();
        let (src_hi, c_sh) = chunk(words, &per_rule(src, hi))?;
        let (src_lo, c_sl) = chunk(words, &per_rule(src, lo))?;
        let (dst_hi, c_dh) = chunk(words, &per_rule(dst, hi))?;
        let (dst_lo, c_dl) = chunk(words, &per_rule(dst, lo))?;
        let (sport, c_sp) = chunk(words, &sport)?;
        let (dport, c_dp) = chunk(words, &dport)?;
        let (proto, c_pr) = chunk(words, &protos)?;
        let (class, c_cl) = class_chunk(class_table, words)?;
        let reads_class = c_cl.sets.len() > words;
        let mut cells = 0;
        let (src, c_s) = pairs(&c_sh.sets, &c_sl.sets, words, &mut cells, None)?;
        let (dst, c_d) = pairs(&c_dh.sets, &c_dl.sets, words, &mut cells, None)?;
        let (ports, c_p) = pairs(&c_sp.sets, &c_dp.sets, words, &mut cells, None)?;
        let (kind, c_k) = pairs(&c_pr.sets, &c_cl.sets, words, &mut cells, None)?;
        let addrs = Last::of(c_s.sets, c_d.sets, words, &mut cells);
        let rest = Last::of(c_p.sets, c_k.sets, words, &mut cells);
        let top = Top::of(prog, &decides, &addrs, &rest, words, &mut cells);
        Some(Rfc {
            words,
            src_hi,
            src_lo,
            dst_hi,
            dst_lo,
            sport,
            dport,
            proto,
            class,
            src,
            dst,
            ports,
            kind,
            addrs,
            rest,
            top,
            decides,
            wide: WideAnd::pick(Simd::Auto),
            reads_class,
        })
    }

    /// Returns the first candidate of IPv4 packet `p` of class bits `class`,
    /// and its verdict when it decides alone; fills `out` with all its
    /// candidates (the state probes left out), unless the first decides
    /// and `decision` says that is all the caller wants.
    #[inline(always)]
    pub fn lookup(
        &self,
        p: &Packet,
        class: u32,
        decision: bool,
        out: &mut [u64],
    ) -> (usize, Option<Verdict>) {
        self.finish(self.classes(p, class), decision, out)
    }

    /// The first two phases of [`lookup`](Self::lookup): packet `p`'s
    /// source, destination, ports and kind classes. A batch looks these
    /// up for all its packets first, so their loads overlap.
    #[inline(always)]
    pub fn classes(&self, p: &Packet, class: u32) -> Found {
        let (s, d) = (p.src as u32, p.dst as u32);
        let (sp, dp) = if p.has_ports {
            (usize::from(p.src_port), usize::from(p.dst_port))
        } else {
            (NO_PORTS as usize, NO_PORTS as usize)
        };
        let src = self.src.get(
            self.src_hi[(s >> 16) as usize],
            self.src_lo[(s & 0xffff) as usize],
        );
        let dst = self.dst.get(
            self.dst_hi[(d >> 16) as usize],
            self.dst_lo[(d & 0xffff) as usize],
        );
        let ports = self.ports.get(self.sport[sp], self.dport[dp]);
        let k = class as usize & ((1 << CLASS_BITS) - 1);
        let kind = self
            .kind
            .get(self.proto[usize::from(p.proto)], self.class[k]);
        Found([src, dst, ports, kind])
    }

    /// The rest of [`lookup`](Self::lookup), from a packet's classes.
    #[inline(always)]
    pub fn finish(
        &self,
        Found([src, dst, ports, kind]): Found,
        decision: bool,
        out: &mut [u64],
    ) -> (usize, Option<Verdict>) {
        let w = self.words;
        if let (Some(top), Last::Combined(pa, _), Last::Combined(pb, _)) =
            (&self.top, &self.addrs, &self.rest)
        {
            let f = usize::from(top.pairs.get(pa.get(src, dst), pb.get(ports, kind)));
            let first = top.first[f] as usize;
            let decided = self.decides[first];
            if decided.is_none() || !decision {
                out.copy_from_slice(&top.sets[f * w..][..w]);
            }
            return (first, decided);
        }
        let (a, a2) = self.addrs.sets(src, dst, w);
        let (b, b2) = self.rest.sets(ports, kind, w);
        if decision {
            if let Some(first) = first_shared(a, b, a2, b2) {
                if let Some(v) = self.decides[first] {
                    return (first, Some(v));
                }
            }
        }
        let first = match self.wide {
            // In vectors, a set missing is `a` or `b` again: fw-1000's
            // three sets of 16 words, which nine packets in ten AND whole,
            // 6–13% faster than in the compiler's loop (BENCHMARKS.md,
            // "The bit sets ANDed in vectors").
            Some(wide) => {
                let sets = [a.bits, b.bits, a2.unwrap_or(a).bits, b2.unwrap_or(b).bits];
                wide.and_first(sets, out)
            }
            None => {
                for ((o, a), b) in out.iter_mut().zip(a.bits).zip(b.bits) {
                    *o = a & b;
                }
                for more in [a2, b2].into_iter().flatten() {
                    out.iter_mut().zip(more.bits).for_each(|(o, m)| *o &= m);
                }
                None
            }
        };
        // The default rule, last, is in every set.
        let first = first.unwrap_or_else(|| super::next_candidate(out, 0));
        (first, self.decides[first])
    }

    /// Whether the address classes are ANDed apart (their combining table
    /// would not fit): then a lookup ANDs three or four sets, and most of
    /// fw-like sets' packets AND them whole.
    pub fn addresses_apart(&self) -> bool {
        matches!(self.addrs, Last::Apart(..))
    }

    /// Whether the packet's class bits pick its classes: false when every
    /// class value is in one class (no rule tests them apart).
    pub fn reads_class(&self) -> bool {
        self.reads_class
    }

    /// ANDs the whole sets in AVX-512 vectors where `simd` asks for them
    /// (or `Auto`), else in the scalar loop: the same candidates.
    pub fn use_simd(&mut self, simd: Simd) {
        self.wide = WideAnd::pick(simd);
    }

    pub fn simd(&self) -> Simd {
        self.wide.map_or(Simd::Off, |_| Simd::Avx512)
    }

    pub fn memory(&self) -> usize {
        let pairs = [&self.src, &self.dst, &self.ports, &self.kind];
        let top = self.top.as_ref().map_or(0, |t| {
            t.pairs.ids.len() * 2 + t.sets.len() * 8 + t.first.len() * 4
        });
        let chunks = size_of::<[AddressChunk; 4]>() + size_of::<[PortChunk; 2]>();
        top + chunks
            + (self.proto.len() + self.class.len()) * 2
            + pairs.iter().map(|p| p.ids.len() * 2).sum::<usize>()
            + self.addrs.memory()
            + self.rest.memory()
            + self.decides.len()
    }
}

/// Words of the sets [`first_shared`] reads before it leaves them to the
/// whole AND: where the masks hold little (fw-like sets, their addresses'
/// classes ANDed apart, at 1,000 rules eight words a packet on average),
/// the words read one by one cost more than the AND (four was slower).
const TRIES: usize = 2;

/// The first rule in every one of the sets, reading only the words their
/// masks say they all hold a rule in (the default rule, last, is in every
/// set); None when it is not in the first [`TRIES`] of them. `a2` and `b2`
/// are a side's second set, where its classes were not combined. Each set
/// is read once: reading a side's one set again in place of a missing
/// second was 5% of ipc-1000's instructions (`valgrind --tool=callgrind`).
#[inline(always)]
fn first_shared(
    a: ClassSet,
    b: ClassSet,
    a2: Option<ClassSet>,
    b2: Option<ClassSet>,
) -> Option<usize> {
    match (a2, b2) {
        (None, None) => first_of([a, b]),
        (a2, b2) => first_of([a, b, a2.unwrap_or(a), b2.unwrap_or(b)]),
    }
}

/// [`first_shared`] over `N` sets.
#[inline(always)]
fn first_of<const N: usize>(sets: [ClassSet; N]) -> Option<usize> {
    let mut words = sets.iter().fold(!0, |m, s| m & s.nonzero);
    for _ in 0..TRIES {
        let k = words.trailing_zeros() as usize;
        let mut shared = !0;
        for s in &sets {
            shared &= s.bits.get(k)?;
        }
        if shared != 0 {
            return Some(k * 64 + shared.trailing_zeros() as usize);
        }
        words &= words - 1;
    }
    None
}

/// The verdict of `rule` for a packet inside every chunk it admits, when
/// the chunks hold its tests exactly (every instruction a set, each
/// address set one interval that the high and low chunks cut without
/// widening; protocol and class bits have chunks of their own) and its
/// action is a plain `allow` or `deny`: then the evaluator would match it
/// and stop.
fn decides(
    rule: &Rule,
    c: &Constraints,
    src: &Option<Set<u32>>,
    dst: &Option<Set<u32>>,
) -> Option<Verdict> {
    let one_box = |s: &Option<Set<u32>>| match s.as_deref() {
        None => true,
        Some([(a, b)]) => a >> 16 == b >> 16 || (a & 0xffff == 0 && b & 0xffff == 0xffff),
        Some(_) => false,
    };
    if !(c.exact && one_box(src) && one_box(dst)) {
        return None;
    }
    rule.plain_verdict()
}

/// A chunk of `N` values: per value, the class of the rules whose
/// intervals (`ranges[r]`, inclusive, within the chunk) hold it.
fn chunk<const N: usize>(
    words: usize,
    ranges: &[Vec<(u32, u32)>],
) -> Option<(Box<[u16; N]>, Classes)> {
    // Every rule's intervals as edges: (value, rule, starts).
    let mut edges: Vec<(u32, u32, bool)> = Vec::new();
    for (r, set) in ranges.iter().enumerate() {
        for &(a, b) in &normalize(set.clone()) {
            edges.push((a, r as u32, true));
            if (b as usize) + 1 < N {
                edges.push((b + 1, r as u32, false));
            }
        }
    }
    // Ends before starts at one value: adjacent intervals stay in.
    edges.sort_unstable();
    let mut classes = Classes::default();
    // Made on the heap: an array of N on the stack first would be 128 KiB.
    let mut table: Box<[u16; N]> = vec![0u16; N].into_boxed_slice().try_into().ok()?;
    let mut bits = vec![0u64; words];
    let (mut start, mut k) = (0, 0);
    loop {
        while let Some(&(_, r, starts)) = edges.get(k).filter(|e| e.0 as usize == start) {
            let (w, bit) = (r as usize / 64, 1u64 << (r % 64));
            bits[w] = if starts {
                bits[w] | bit
            } else {
                bits[w] & !bit
            };
            k += 1;
        }
        let end = edges.get(k).map_or(N, |e| e.0 as usize);
        table[start..end].fill(classes.intern(&bits)?);
        if end == N {
            return Some((table, classes));
        }
        start = end;
    }
}

/// The class-bits chunk: per value, the class of its rules' bitset in
/// `table` (the bitsets' own class table, `words` a value).
fn class_chunk<const N: usize>(table: &[u64], words: usize) -> Option<(Box<[u16; N]>, Classes)> {
    let mut classes = Classes::default();
    let ids = table
        .chunks_exact(words)
        .map(|bits| classes.intern(bits))
        .collect::<Option<Vec<u16>>>()?;
    Some((ids.into_boxed_slice().try_into().ok()?, classes))
}

/// The combining table of two phases' classes (their bitsets, `words`
/// each); None past the cell limits. With `ends` (per rule: a walk that
/// reaches it ends there), each set is cut after its first such rule,
/// keeping the default rule: what follows is never walked, and the sets
/// that differ only there are one class.
fn pairs(
    a: &[u64],
    b: &[u64],
    words: usize,
    cells: &mut usize,
    ends: Option<&Ends>,
) -> Option<(Pairs, Classes)> {
    let (rows, cols) = (a.len() / words, b.len() / words);
    let size = rows.checked_mul(cols)?;
    *cells += size;
    if size > MAX_CELLS || *cells > MAX_TOTAL_CELLS {
        return None;
    }
    let mut out = Classes::default();
    let mut ids = Vec::with_capacity(size);
    let mut bits = vec![0u64; words];
    for x in a.chunks_exact(words) {
        for y in b.chunks_exact(words) {
            for ((o, x), y) in bits.iter_mut().zip(x).zip(y) {
                *o = x & y;
            }
            if let Some(ends) = ends {
                cut_after_end(&mut bits, ends);
            }
            ids.push(out.intern(&bits)?);
        }
    }
    Some((Pairs { cols, ids }, out))
}

/// The rules a walk ends at, as a bitset, and the default rule.
struct Ends {
    mask: Vec<u64>,
    last: usize,
}

/// Clears every rule after the first that ends a walk, but the last (the
/// default rule). A word at a time: this runs for every cell of the
/// largest table (a bit at a time it was most of a 100-rule build).
fn cut_after_end(bits: &mut [u64], ends: &Ends) {
    let first = bits.iter().zip(&ends.mask).map(|(b, e)| b & e);
    let Some((w, hit)) = first.enumerate().find(|&(_, m)| m != 0) else {
        return;
    };
    let r = w * 64 + hit.trailing_zeros() as usize;
    bits[w] &= u64::MAX >> (63 - r % 64);
    bits[w + 1..].fill(0);
    bits[ends.last / 64] |= 1 << (ends.last % 64);
}

#[cfg(test)]
mod tests {
    use super::{first_shared, Last, Sets, MASKED_WORDS};
    use crate::classify::BitClassifier;
    use crate::{load, packet_class, Engine, WalkKind};
    use weir_gen::{GenConfig, Generator};
    use weir_wire::{decode, Direction, LinkType, Packet};

    fn trace(n: u64) -> Vec<Packet> {
        let mut g = Generator::new(GenConfig {
            seed: 11,
            count: n,
            ..GenConfig::default()
        });
        let mut out = Vec::new();
        while let Some(f) = g.next_frame() {
            let mut p = decode(LinkType::ETHERNET, f.data, f.data.len() as u32);
            p.direction = [Direction::In, Direction::Out][out.len() % 2];
            out.push(p);
        }
        out
    }

    /// The repository's 100-rule rulesets over generated traffic: the
    /// recursive tables are built to a final class, decide most IPv4
    /// packets alone, and every decision and counter equals the linear
    /// walk's.
    #[test]
    fn the_repository_rulesets_decide_as_the_linear_walk() {
        let packets = trace(50_000);
        for file in ["realistic-100.rules", "blocklist-100.rules"] {
            let path = format!("{}/../../rules/{file}", env!("CARGO_MANIFEST_DIR"));
            let text = std::fs::read_to_string(&path).expect("ruleset");
            let prog = load(&text, &Default::default(), &Default::default()).expect("compiles");
            let c = BitClassifier::build(&prog).expect("bitsets");
            let mut linear = Engine::builder(prog.clone()).walk(WalkKind::Linear).build();
            let mut bits = Engine::builder(prog).walk(WalkKind::Bits).build();
            let rfc = c.rfc().expect("recursive tables");
            assert!(rfc.top.is_some(), "{file}: both sides combined");
            assert!(rfc.reads_class(), "{file}: tests setup, established");
            let v4: Vec<&Packet> = packets.iter().filter(|p| p.ip_version == 4).collect();
            let mut words = vec![0; c.words()];
            let decided = v4
                .iter()
                .filter(|p| c.lookup(p, packet_class(p), &mut words).is_some())
                .count();
            assert!(decided * 2 > v4.len(), "{file}: {decided} decided alone");
            for (k, p) in packets.iter().enumerate() {
                assert_eq!(
                    bits.decide(p),
                    linear.decide(p),
                    "{file}, packet {k}: {p:?}"
                );
            }
            assert!(bits.counters() == linear.counters(), "{file}: counters");
        }
    }

    /// ClassBench-like sets of 1,000 rules get recursive tables, with the
    /// address classes combined where their table fits (acl, ipc) and
    /// ANDed apart where it does not (fw), and the two sides ANDed; their
    /// rules test no class bit, so any class value finds a packet's
    /// classes. The classifier differential tests (tests/classifier.rs)
    /// walk them against the linear walk.
    #[test]
    fn a_thousand_rules_combined_or_apart() {
        use weir_classbench::gen::Kind;
        let packets = trace(2_000);
        let v4 = packets.iter().filter(|p| p.ip_version == 4);
        let mut kinds = Vec::new();
        for kind in Kind::ALL {
            let prog = crate::classify::classbench_program(kind, 1000);
            let c = BitClassifier::build(&prog).expect("bitsets");
            let rfc = c.rfc().expect("recursive tables");
            assert!(
                rfc.top.is_none(),
                "{}: the final table is too large",
                kind.name()
            );
            kinds.push(matches!(rfc.addrs, Last::Combined(..)));
            assert!(!rfc.reads_class(), "{}", kind.name());
            for p in v4.clone() {
                assert_eq!(rfc.classes(p, 0), rfc.classes(p, packet_class(p)));
            }
        }
        assert_eq!(
            kinds,
            [true, false, true],
            "acl, fw, ipc addresses combined"
        );
    }

    /// `first_shared` against the whole AND: where it answers, the first
    /// rule of the AND, masked sets or not; masked sets where every class
    /// holds its rules in a word or two are answered; the default rule
    /// (last) is in every set.
    #[test]
    fn the_first_shared_rule_is_the_first_of_the_and() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut rng = move || crate::classify::xorshift(&mut state);
        // 20 words: past the masks, tried in order.
        for words in [1, 2, 7, 16, 20] {
            let last = words * 64 - 1;
            for density in [1, 4, 16, 64] {
                // Per class a bitset: each word holds rules with odds
                // 1/density, sparse or dense alike; the default rule in all.
                let mut bits = vec![0u64; 40 * words];
                for (k, w) in bits.iter_mut().enumerate() {
                    if rng() % density == 0 {
                        *w = rng() & rng();
                    }
                    if k % words == words - 1 {
                        *w |= 1 << (last % 64);
                    }
                }
                let sets = Sets::of(bits.clone(), words);
                let mut answered = 0;
                for _ in 0..400 {
                    let pick: Vec<u16> = (0..4).map(|_| (rng() % 40) as u16).collect();
                    let whole: Vec<u64> = (0..words)
                        .map(|k| {
                            pick.iter()
                                .fold(!0, |m, &c| m & bits[usize::from(c) * words + k])
                        })
                        .collect();
                    let want = crate::classify::next_candidate(&whole, 0);
                    let at = |c: u16| sets.at(c, words);
                    let two = first_shared(at(pick[0]), at(pick[1]), None, None);
                    let four = first_shared(
                        at(pick[0]),
                        at(pick[1]),
                        Some(at(pick[2])),
                        Some(at(pick[3])),
                    );
                    let want_two = crate::classify::next_candidate(
                        &(0..words)
                            .map(|k| {
                                bits[usize::from(pick[0]) * words + k]
                                    & bits[usize::from(pick[1]) * words + k]
                            })
                            .collect::<Vec<_>>(),
                        0,
                    );
                    assert!(
                        two.is_none_or(|r| r == want_two),
                        "{words} words: {two:?} {want_two}"
                    );
                    assert!(
                        four.is_none_or(|r| r == want),
                        "{words} words: {four:?} {want}"
                    );
                    answered += usize::from(four.is_some());
                }
                if density >= 16 && words <= MASKED_WORDS {
                    assert!(
                        answered > 360,
                        "{words} words, 1/{density}: {answered} of 400"
                    );
                }
            }
        }
    }
}
