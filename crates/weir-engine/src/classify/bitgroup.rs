//! A block of rules indexed by per-field bitsets over the tries' key: what
//! the trie classifier builds for rules whose automaton would not fit.
//!
//! Its cost is known before it is built (intervals × rules per field,
//! [`BitGroup::bytes`]) and grows with the square of its size, so blocks
//! hold at most [`BIT_GROUP_RULES`] rules: a packet pays a short search
//! (`Indexed`) and an AND of a few words per field and block, never a
//! walk of the block's rules.

use super::bits::{last_at_most, Field};
use super::family::{FamilyRules, FIELDS};

/// Most rules in one block.
pub const BIT_GROUP_RULES: usize = 1024;
/// Key bits each field's index reads: 1,024 buckets a field, about two
/// interval starts each in a full block of 1,024 random rules.
const INDEX_BITS: u32 = 10;

pub struct BitGroup {
    /// Program rule index per bit, ascending.
    members: Vec<u32>,
    words: usize,
    fields: [Indexed; FIELDS],
}

/// A field's intervals with an index over the key's top bits: the
/// interval of `v` is among the starts of `v`'s bucket, or just before
/// them, so a lookup compares `v` with a bucket's few starts instead of
/// binary-searching all of them (eleven dependent rounds at 2,000 starts,
/// which were a fifth of a random 100k-rule set's instructions).
struct Indexed {
    field: Field<u64>,
    shift: u32,
    /// `top[t]`: the index of the first start ≥ `t << shift` (one more
    /// entry than buckets).
    top: Vec<u32>,
}

impl Indexed {
    fn new(field: Field<u64>, bits: u32) -> Indexed {
        let shift = bits.saturating_sub(INDEX_BITS);
        let buckets = 1usize << (bits - shift);
        let top = (0..=buckets)
            .map(|t| {
                let from = (t as u128) << shift;
                field.starts.partition_point(|&s| u128::from(s) < from) as u32
            })
            .collect();
        Indexed { field, shift, top }
    }

    /// Bytes the index adds for a field of `bits` key bits.
    fn index_bytes(bits: u32) -> usize {
        ((1usize << bits.min(INDEX_BITS)) + 1) * 4
    }

    /// The bitset of `v`'s interval.
    #[inline(always)]
    fn lookup(&self, v: u64, words: usize) -> &[u64] {
        let t = (v >> self.shift) as usize;
        let (lo, hi) = (self.top[t] as usize, self.top[t + 1] as usize);
        // starts[0] is 0, so a bucket with no start ≤ v has one before it.
        let at = last_at_most(&self.field.starts, lo, hi, v);
        &self.field.bits[at * words..][..words]
    }
}

impl BitGroup {
    /// Bytes the block of family rules `group` would hold, before building
    /// it: at most two interval starts per rule interval, plus one, and
    /// the fields' indexes.
    pub fn bytes(rules: &FamilyRules, group: &[u32]) -> usize {
        let words = group.len().div_ceil(64);
        let starts: usize = (0..FIELDS)
            .map(|f| {
                1 + group
                    .iter()
                    .map(|&r| 2 * rules.set(r, f).len())
                    .sum::<usize>()
            })
            .sum();
        let index: usize = rules.bits.iter().map(|&b| Indexed::index_bytes(b)).sum();
        starts * (8 + words * 8) + group.len() * 4 + index
    }

    /// The block of family rules `group` (ascending, at most
    /// [`BIT_GROUP_RULES`]).
    pub fn build(rules: &FamilyRules, group: &[u32]) -> BitGroup {
        debug_assert!(group.len() <= BIT_GROUP_RULES && group.is_sorted());
        let words = group.len().div_ceil(64);
        let fields = std::array::from_fn(|f| {
            let sets: Vec<Option<Vec<(u64, u64)>>> = group
                .iter()
                .map(|&r| Some(rules.set(r, f).to_vec()))
                .collect();
            let field = Field::build(&sets, words, rules.max[f]);
            Indexed::new(field, rules.bits[f])
        });
        BitGroup {
            members: group.iter().map(|&r| rules.index[r as usize]).collect(),
            words,
            fields,
        }
    }

    /// The block's first rule (program index): a walk that has stopped
    /// before it needs nothing from the block.
    pub fn first(&self) -> u32 {
        self.members.first().copied().unwrap_or(u32::MAX)
    }

    /// Most candidates one packet can get from this block.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Appends the block's candidates for `key` to `out`, in rule order.
    #[inline]
    pub fn candidates(&self, key: &[u64; FIELDS], out: &mut Vec<u32>) {
        let w = self.words;
        let [a, b, c, d, e] = &self.fields;
        let (a, b, c) = (
            a.lookup(key[0], w),
            b.lookup(key[1], w),
            c.lookup(key[2], w),
        );
        let (d, e) = (d.lookup(key[3], w), e.lookup(key[4], w));
        let words = a.iter().zip(b).zip(c).zip(d).zip(e);
        for (k, ((((a, b), c), d), e)) in words.enumerate() {
            // All five, branch-free: skipping the ports where the
            // addresses leave a word empty saved 0.4% of the instructions
            // on random-100k and cost 13% of its time (mispredictions).
            let mut word = a & b & c & d & e;
            while word != 0 {
                out.push(self.members[k * 64 + word.trailing_zeros() as usize]);
                word &= word - 1;
            }
        }
    }

    pub fn memory(&self) -> usize {
        let field =
            |f: &Indexed| f.field.starts.len() * 8 + f.field.bits.len() * 8 + f.top.len() * 4;
        self.fields.iter().map(field).sum::<usize>() + self.members.len() * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bucket search finds the interval the whole binary search
    /// finds, for every value near a start, a bucket edge or the ends.
    #[test]
    fn indexed_lookup_agrees_with_the_whole_search() {
        let mut seed = 7u64;
        let mut draw = move || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            seed >> 20
        };
        for (bits, sets) in [(32u32, 300usize), (17, 200), (8, 40), (32, 1), (17, 0)] {
            let max = (1u64 << bits) - 1;
            let intervals: Vec<Option<Vec<(u64, u64)>>> = (0..sets)
                .map(|i| {
                    let lo = draw() & max;
                    // Some intervals cluster in one bucket, some run to the end.
                    let hi = match i % 3 {
                        0 => lo.saturating_add(draw() % 5).min(max),
                        1 => max,
                        _ => lo.saturating_add(draw() & max).min(max),
                    };
                    Some(vec![(lo, hi)])
                })
                .collect();
            let words = sets.div_ceil(64).max(1);
            let whole = Field::build(&intervals, words, max);
            let indexed = Indexed::new(Field::build(&intervals, words, max), bits);
            let mut probes: Vec<u64> = vec![0, 1, max, max - 1];
            for &s in &whole.starts {
                probes.extend([s, s.saturating_sub(1), (s + 1).min(max)]);
            }
            for t in 0..(1u64 << bits.min(INDEX_BITS)) {
                let edge = t << bits.saturating_sub(INDEX_BITS);
                probes.extend([edge, edge.saturating_sub(1)]);
            }
            probes.extend((0..500).map(|_| draw() & max));
            for v in probes {
                assert_eq!(
                    indexed.lookup(v, words),
                    whole.lookup(v, words),
                    "{bits} bits, {sets} sets, value {v:#x}"
                );
            }
        }
    }
}
