//! A block of rules indexed by per-field bitsets over the tries' key: what
//! the trie classifier builds for rules whose automaton would not fit.
//!
//! Its cost is known before it is built (intervals × rules per field,
//! [`BitGroup::bytes`]) and grows with the square of its size, so blocks
//! hold at most [`BIT_GROUP_RULES`] rules: a packet pays a binary search
//! and an AND of a few words per field and block, never a walk of the
//! block's rules.

use super::bits::Field;
use super::family::{FamilyRules, FIELDS};

/// Most rules in one block.
pub const BIT_GROUP_RULES: usize = 1024;

pub struct BitGroup {
    /// Program rule index per bit, ascending.
    members: Vec<u32>,
    words: usize,
    fields: [Field<u64>; FIELDS],
}

impl BitGroup {
    /// Bytes the block of family rules `group` would hold, before building
    /// it: at most two interval starts per rule interval, plus one.
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
        starts * (8 + words * 8) + group.len() * 4
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
            Field::build(&sets, words, rules.max[f])
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
            let mut word = a & b & c & d & e;
            while word != 0 {
                out.push(self.members[k * 64 + word.trailing_zeros() as usize]);
                word &= word - 1;
            }
        }
    }

    pub fn memory(&self) -> usize {
        let field = |f: &Field<u64>| f.starts.len() * 8 + f.bits.len() * 8;
        self.fields.iter().map(field).sum::<usize>() + self.members.len() * 4
    }
}
