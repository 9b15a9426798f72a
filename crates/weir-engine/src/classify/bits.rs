//! The bit-vector classifier, for small rulesets (up to
//! [`BITS_UP_TO_RULES`](super::BITS_UP_TO_RULES) rules).
//!
//! The bit-vector scheme (Lakshman and Stiliadis, 1998): for each header
//! field (source and destination address, source and destination port,
//! protocol, and the packet's class bits that rule headers test) the
//! field's range is cut into elementary intervals at every rule boundary,
//! and each interval keeps a bitset of the rules whose constraint on that
//! field admits it. A packet looks up its interval in each field (binary
//! search) and ANDs the bitsets: what is left, in rule order, are its
//! candidates. Memory grows as rules × intervals and the AND as rules / 64
//! per packet, which is why large rulesets use the tries (`trie.rs`).

use super::fields::{family4, in_mapped, Constraints, Set, Step, NO_PORTS};
use super::lanes::Simd;
use super::rfc::{Found, Rfc};
use crate::program::{class, Program, Verdict};
use std::collections::HashMap;
use weir_wire::Packet;

/// Don't build past this many bitset words in all (64 MiB): beyond it the
/// engine walks linearly.
const MAX_WORDS: usize = 8 << 20;

/// One field: sorted interval starts, and per interval the rules' bitset.
pub(super) struct Field<T> {
    pub starts: Vec<T>,
    pub bits: Vec<u64>,
}

pub struct BitClassifier {
    words: usize,
    /// IPv4 packets' classes in recursive tables, when they fit.
    rfc: Option<Rfc>,
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
    /// Per packet-class value (`ops::packet_class`, 13 bits), the rules
    /// whose header class test it passes.
    class: Vec<u64>,
    /// The rules that probe the state table: candidates of every packet
    /// of a known flow (`class::STATE`), whatever their other fields say.
    probes: Vec<u64>,
}

/// Packet-class values span this many bits (`class::STATE` is last).
pub(super) const CLASS_BITS: u32 = class::STATE.trailing_zeros() + 1;

/// Per packet-class value, the bitset (`words` each) of the rules whose
/// header class test (`class & mask == bits`) it passes. Rules share a
/// few tests, so each test is tried once per value, not each rule.
fn class_table(prog: &Program, words: usize) -> Vec<u64> {
    let mut tests: HashMap<(u32, u32), Vec<usize>> = HashMap::new();
    for (r, rule) in prog.rules.iter().enumerate() {
        tests
            .entry((rule.class_mask, rule.class_bits))
            .or_default()
            .push(r);
    }
    let mut table = vec![0u64; (1 << CLASS_BITS) * words];
    for (c, bits) in table.chunks_exact_mut(words).enumerate() {
        for (&(mask, want), rules) in &tests {
            if c as u32 & mask == want {
                rules.iter().for_each(|&r| bits[r / 64] |= 1 << (r % 64));
            }
        }
    }
    table
}

impl BitClassifier {
    /// Builds the classifier, or None when it would be too large.
    pub fn build(prog: &Program) -> Option<BitClassifier> {
        let n = prog.rules.len();
        let words = n.div_ceil(64);
        let constraints: Vec<Constraints> = prog
            .rules
            .iter()
            .map(|rule| Constraints::of(prog, prog.rule_insns(rule)))
            .collect();
        let src: Vec<Option<Set<u128>>> = constraints.iter().map(|c| c.src.clone()).collect();
        let dst: Vec<Option<Set<u128>>> = constraints.iter().map(|c| c.dst.clone()).collect();
        let sport: Vec<Option<Set<u32>>> = constraints.iter().map(|c| c.sport.clone()).collect();
        let dport: Vec<Option<Set<u32>>> = constraints.iter().map(|c| c.dport.clone()).collect();
        let class_table = class_table(prog, words);
        let mut probes = vec![0u64; words];
        for (r, rule) in prog.rules.iter().enumerate() {
            if rule.probe {
                probes[r / 64] |= 1 << (r % 64);
            }
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
        let (src4, dst4) = (v4(&src), v4(&dst));
        Some(BitClassifier {
            words,
            rfc: Rfc::build(prog, &constraints, &src4, &dst4, &class_table),
            src4: Field4::build(&src4, words),
            dst4: Field4::build(&dst4, words),
            src6: Field::build(&src, words, u128::MAX),
            dst6: Field::build(&dst, words, u128::MAX),
            sport: PortField::build(&sport, words),
            dport: PortField::build(&dport, words),
            proto,
            class: class_table,
            probes,
        })
    }

    /// Bitset words per packet.
    pub fn words(&self) -> usize {
        self.words
    }

    /// Fills `out` (len `words()`) with the candidates of packet `p` of
    /// class `class`, as `candidates` does; returns the first and its
    /// verdict when that candidate decides alone (IPv4 packets without a
    /// state, in the recursive tables; else None).
    #[inline(always)]
    pub fn lookup(&self, p: &Packet, class: u32, out: &mut [u64]) -> Option<(usize, Verdict)> {
        match &self.rfc {
            Some(rfc) if p.ip_version == 4 => {
                let known_flow = class & class::STATE != 0;
                let (first, decided) = rfc.lookup(p, class, !known_flow, out);
                if !known_flow {
                    return decided.map(|v| (first, v));
                }
                self.add_probes(out);
                None
            }
            _ => {
                self.candidates(p, class, out);
                None
            }
        }
    }

    /// The recursive tables' first phases for each IPv4 packet of
    /// `packets`, into its place in `found`, looked up ahead of their
    /// decisions by a batch, so that the batch's loads overlap
    /// ([`lookup_found`](Self::lookup_found) goes on from them; a packet
    /// of a known flow, whose class has the state bit, is looked up again
    /// with it); None where `lookup` takes another way. Where no rule
    /// tells class values apart (ClassBench's sets) the packets' classes
    /// are not worked out: their fields are another of the record's lines
    /// to read (BENCHMARKS.md, "no packet class where no rule reads it").
    /// The tables and that choice are looked at once a batch, not once a
    /// packet.
    #[inline(always)]
    pub fn classes(&self, packets: &[Packet], found: &mut [Option<Found>]) {
        let pairs = found.iter_mut().zip(packets);
        match &self.rfc {
            None => pairs.for_each(|(f, _)| *f = None),
            Some(rfc) if rfc.reads_class() => pairs.for_each(|(f, p)| {
                *f = (p.ip_version == 4).then(|| rfc.classes(p, crate::packet_class(p)));
            }),
            Some(rfc) => pairs.for_each(|(f, p)| {
                *f = (p.ip_version == 4).then(|| rfc.classes(p, 0));
            }),
        }
    }

    /// Per packet of a batch whose [`classes`](Self::classes) were found,
    /// its first candidate and verdict where that candidate decides alone
    /// (`bits`: scratch, `words()` long).
    #[inline(always)]
    pub fn decide_alone(
        &self,
        found: &[Option<Found>],
        bits: &mut [u64],
        out: &mut [Option<(u32, Verdict)>],
    ) {
        let Some(rfc) = &self.rfc else {
            out.iter_mut().for_each(|o| *o = None);
            return;
        };
        for (o, f) in out.iter_mut().zip(found) {
            *o = f.and_then(|f| match rfc.finish(f, true, bits) {
                (first, Some(verdict)) => Some((first as u32, verdict)),
                _ => None,
            });
        }
    }

    /// [`lookup`](Self::lookup) for a packet whose [`classes`](Self::classes)
    /// were found.
    #[inline(always)]
    pub fn lookup_found(&self, found: Found, out: &mut [u64]) -> Option<(usize, Verdict)> {
        let (first, decided) = self.rfc.as_ref()?.finish(found, true, out);
        decided.map(|v| (first, v))
    }

    /// Whether IPv4 lookups AND their address classes' sets apart
    /// ([`Rfc::addresses_apart`]).
    pub fn ands_addresses_apart(&self) -> bool {
        self.rfc.as_ref().is_some_and(Rfc::addresses_apart)
    }

    /// ANDs the recursive tables' sets in the vectors `simd` asks for.
    pub fn use_simd(&mut self, simd: Simd) {
        if let Some(rfc) = &mut self.rfc {
            rfc.use_simd(simd);
        }
    }

    /// The vectors the recursive tables' sets are ANDed in (`Off`: the
    /// scalar loop, or no tables).
    pub fn simd(&self) -> Simd {
        self.rfc.as_ref().map_or(Simd::Off, Rfc::simd)
    }

    /// The recursive tables IPv4 packets use, if any.
    #[cfg(test)]
    pub fn rfc(&self) -> Option<&Rfc> {
        self.rfc.as_ref()
    }

    /// Makes every state probe a candidate (a packet of a known flow).
    #[inline]
    pub fn add_probes(&self, out: &mut [u64]) {
        out.iter_mut().zip(&self.probes).for_each(|(o, p)| *o |= p);
    }

    /// Fills `out` (len `words()`) with the candidate rules of packet `p`
    /// of class `class` (`ops::packet_class`, plus `class::STATE` when the
    /// caller found its flow's state).
    #[inline]
    pub fn candidates(&self, p: &Packet, class: u32, out: &mut [u64]) {
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
        let k = class as usize & ((1 << CLASS_BITS) - 1);
        let f = &self.class[k * w..][..w];
        // Zipped iterators: no bounds check per word.
        let fields = a.iter().zip(b).zip(c).zip(d).zip(e).zip(f);
        for (o, (((((a, b), c), d), e), f)) in out.iter_mut().zip(fields) {
            *o = a & b & c & d & e & f;
        }
        if class & class::STATE != 0 {
            self.add_probes(out);
        }
    }

    /// Memory held, in bytes.
    pub fn memory(&self) -> usize {
        let f6 = |f: &Field<u128>| f.starts.len() * 16 + f.bits.len() * 8;
        self.rfc.as_ref().map_or(0, Rfc::memory)
            + self.src4.memory()
            + self.dst4.memory()
            + f6(&self.src6)
            + f6(&self.dst6)
            + self.sport.memory()
            + self.dport.memory()
            + self.proto.len() * 8
            + (self.class.len() + self.probes.len()) * 8
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

/// Each rule's address set for IPv4 packets.
fn v4(sets: &[Option<Set<u128>>]) -> Vec<Option<Set<u32>>> {
    sets.iter().map(|s| s.as_ref().map(family4)).collect()
}

impl<T: Step> Field<T> {
    /// `sets[r]` is rule r's admitted intervals (None: no constraint);
    /// `max` is the field's largest value.
    pub fn build(sets: &[Option<Set<T>>], words: usize, max: T) -> Field<T> {
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
    pub fn lookup(&self, v: T, words: usize) -> &[u64] {
        let base = last_at_most(&self.starts, 0, self.starts.len(), v);
        // starts[0] is ZERO, so `base` is the interval of `v`.
        &self.bits[base * words..][..words]
    }
}

/// Index of the last of `starts[lo..hi]` that is ≤ v, or `lo - 1` when
/// none is (callers guarantee `starts[lo - 1] ≤ v` then). Branch-free.
#[inline(always)]
pub(super) fn last_at_most<T: Copy + Ord>(starts: &[T], lo: usize, hi: usize, v: T) -> usize {
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

/// An IPv4 address field with direct tables in three strides (16, 8 and
/// 8 bits, as DIR-24-8 routing tables do): the /16 of `v` gives the range
/// of interval starts inside it; a /16 with many starts has a table per
/// /24, and a /24 with many starts a table per address. Every lookup ends
/// in at most `SPARSE` comparisons, whatever the ruleset's shape (a run of
/// per-host rules puts dozens of starts in one /24).
struct Field4 {
    field: Field<u32>,
    /// Per /16: the index of its first start (65537 entries).
    top: Vec<u32>,
    /// Per /16: 1 + its index in `mid`, or 0 when sparse.
    dense16: Vec<u32>,
    /// Per dense /16: the index of the first start of each /24 (257 entries).
    mid: Vec<[u32; 257]>,
    /// Per dense /16, per /24: 1 + its index in `low`, or 0 when sparse.
    dense24: Vec<[u32; 256]>,
    /// Per dense /24: the interval of each address.
    low: Vec<[u32; 256]>,
}

/// Blocks with at most this many starts are searched, not tabled.
const SPARSE: u32 = 4;

impl Field4 {
    fn build(sets: &[Option<Set<u32>>], words: usize) -> Field4 {
        let field = Field::build(sets, words, u32::MAX);
        let starts = &field.starts;
        // Index of the first start ≥ a (u64, so the end of the space fits).
        let first_at = |a: u64| starts.partition_point(|&s| u64::from(s) < a) as u32;
        let top: Vec<u32> = (0..=1u64 << 16).map(|h| first_at(h << 16)).collect();
        let (mut dense16, mut mid, mut dense24, mut low) =
            (vec![0u32; 1 << 16], Vec::new(), Vec::new(), Vec::new());
        for h in 0..1usize << 16 {
            if top[h + 1] - top[h] <= SPARSE {
                continue;
            }
            let base = (h as u64) << 16;
            // `+`, not `|`: for b = 256 the sum carries into the next /16.
            let m: [u32; 257] = std::array::from_fn(|b| first_at(base + ((b as u64) << 8)));
            let d: [u32; 256] = std::array::from_fn(|b| {
                if m[b + 1] - m[b] <= SPARSE {
                    return 0;
                }
                let block = base + ((b as u64) << 8);
                low.push(std::array::from_fn(|x| first_at(block + x as u64 + 1) - 1));
                low.len() as u32
            });
            mid.push(m);
            dense24.push(d);
            dense16[h] = mid.len() as u32;
        }
        Field4 {
            field,
            top,
            dense16,
            mid,
            dense24,
            low,
        }
    }

    #[inline(always)]
    fn lookup(&self, v: u32, words: usize) -> &[u64] {
        let h = (v >> 16) as usize;
        let (mut lo, mut hi) = (self.top[h], self.top[h + 1]);
        let e = if hi - lo <= SPARSE {
            last_at_most(&self.field.starts, lo as usize, hi as usize, v)
        } else {
            let d = self.dense16[h] as usize - 1;
            let b = (v >> 8 & 0xff) as usize;
            (lo, hi) = (self.mid[d][b], self.mid[d][b + 1]);
            match self.dense24[d][b] {
                0 => last_at_most(&self.field.starts, lo as usize, hi as usize, v),
                l => self.low[l as usize - 1][(v & 0xff) as usize] as usize,
            }
        };
        &self.field.bits[e * words..][..words]
    }

    fn memory(&self) -> usize {
        self.field.starts.len() * 4
            + self.field.bits.len() * 8
            + (self.top.len() + self.dense16.len()) * 4
            + self.mid.len() * 257 * 4
            + (self.dense24.len() + self.low.len()) * 256 * 4
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

#[cfg(test)]
mod tests {
    use super::*;

    use crate::classify::xorshift as rng;

    /// The three-stride tables must find the same interval as a plain
    /// binary search, in sparse blocks, dense /16s and dense /24s alike.
    #[test]
    fn ipv4_tables_agree_with_binary_search() {
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        let mut dense_seen = false;
        for round in 0..40 {
            // Rules clustered in a few /24s (dense) plus scattered prefixes.
            let sets: Vec<Option<Set<u32>>> = (0..60)
                .map(|r| {
                    if r % 7 == 0 {
                        return None;
                    }
                    let base = [0x0a01_0000u32, 0xc000_0200, 0xc633_6400][r % 3];
                    let a = if rng(&mut s).is_multiple_of(4) {
                        rng(&mut s) as u32
                    } else {
                        base | (rng(&mut s) as u32 % (256 << (round % 3 * 4)))
                    };
                    let len = [32u32, 32, 30, 24, 16, 8][(rng(&mut s) % 6) as usize];
                    let mask = u32::MAX << (32 - len);
                    Some(vec![(a & mask, a | !mask)])
                })
                .collect();
            let f4 = Field4::build(&sets, 1);
            for _ in 0..5000 {
                let v = match rng(&mut s) % 3 {
                    0 => rng(&mut s) as u32,
                    1 => 0xc000_0200 | (rng(&mut s) as u32 & 0x3ff),
                    _ => 0x0a01_0000 | (rng(&mut s) as u32 & 0xffff),
                };
                let want = f4.field.lookup(v, 1).as_ptr();
                assert_eq!(
                    f4.lookup(v, 1).as_ptr(),
                    want,
                    "round {round}, address {v:#010x}"
                );
            }
            dense_seen |= !f4.low.is_empty() && !f4.mid.is_empty();
        }
        assert!(dense_seen, "dense /16 and /24 tables were exercised");
    }
}
