//! The lookup structure: a sorted list of disjoint address ranges, each with
//! the result of the longest prefix that covers it, plus a direct index on
//! the address's high bits.
//!
//! n nested-or-disjoint prefixes cut the address space into at most 2n + 1
//! ranges (each prefix starts one and, where it ends, resumes its parent),
//! so the range list is linear in the table whatever the prefix lengths.
//! The index has 8–16 buckets per range, at most 2^24, over the span from
//! the first boundary to the last. A bucket that lies in one range holds
//! its result: one memory read answers most lookups (for IPv4 with 1M
//! prefixes a bucket is a /24). Any other bucket gives its ranges' first
//! slot and count; a short run is counted (independent loads, whose misses
//! overlap), a long one binary-searched.
//!
//! Why not a stride trie (DIR-24-8, poptrie): for IPv4 one would likely do
//! as well (not built here to compare), but an uncompressed trie's memory
//! grows with prefix length, and IPv6 tables of long random prefixes would
//! blow up. This one structure serves both families with memory bounded by
//! the entry count (`bytes_for`). Measured in BENCHMARKS.md.

use std::mem::size_of;

/// An address in one family's space: `u32` for IPv4, [`Wide`] for IPv6.
pub(crate) trait Key: Copy + Ord + Default + std::fmt::Debug {
    const BITS: u32;
    fn from_u128(v: u128) -> Self;
    fn to_u128(self) -> u128;
}

impl Key for u32 {
    const BITS: u32 = 32;
    #[inline(always)]
    fn from_u128(v: u128) -> Self {
        v as u32
    }
    #[inline(always)]
    fn to_u128(self) -> u128 {
        self as u128
    }
}

/// An IPv6 address as two `u64` halves: alignment 8 instead of `u128`'s
/// 16, so a range slot takes 24 bytes instead of 32.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct Wide {
    hi: u64,
    lo: u64,
}

impl Ord for Wide {
    #[inline(always)]
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.to_u128().cmp(&other.to_u128())
    }
}

impl PartialOrd for Wide {
    #[inline(always)]
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Key for Wide {
    const BITS: u32 = 128;
    #[inline(always)]
    fn from_u128(v: u128) -> Self {
        Wide {
            hi: (v >> 64) as u64,
            lo: v as u64,
        }
    }
    #[inline(always)]
    fn to_u128(self) -> u128 {
        ((self.hi as u128) << 64) | self.lo as u128
    }
}

/// Most index buckets: 2^24 (64 MiB of `u32`), reached from about 2M
/// ranges on; an IPv4 bucket is then a /24, the length most routes have.
const MAX_INDEX_BITS: u32 = 24;

/// Result code of a range: 0 = no prefix covers it, r > 0 = `values[r - 1]`.
pub(crate) type ResultCode = u32;

/// An index entry with this bit set holds the bucket's result code itself:
/// the whole bucket lies in one range, so there is nothing to search.
const WHOLE: u32 = 1 << 31;
/// Bits of a bucket's first range number; so at most 2^27 ranges.
const FIRST_BITS: u32 = 27;
const FIRST_MASK: u32 = (1 << FIRST_BITS) - 1;
/// The count field's value meaning "more than `MAX_COUNT`".
const LARGE: u32 = 15;
const MAX_COUNT: usize = LARGE as usize;
/// Most prefixes per family: 2n + 1 ranges must fit in `FIRST_BITS`.
pub(crate) const MAX_PREFIXES: usize = (1 << (FIRST_BITS - 1)) - 1;

/// One range: where it starts, and its result. Start and result share a
/// cache line, so the search's last read also gives the answer.
#[derive(Clone, Copy, Debug, Default)]
struct Slot<K> {
    start: K,
    code: ResultCode,
}

#[derive(Clone, Debug)]
pub(crate) struct Ranges<K> {
    /// The ranges by ascending start; `slots[0].start == 0` and the last
    /// range runs to the top of the space.
    slots: Vec<Slot<K>>,
    /// Per bucket: `WHOLE | code` when one range covers the bucket, else
    /// `first | (count - 1) << FIRST_BITS`: the bucket's ranges are
    /// `slots[first..][..count]`. A count above `MAX_COUNT` is stored as
    /// `LARGE`, and the search then covers `slots[first..][..max_window]`:
    /// the ranges after the bucket's all start above any of its addresses,
    /// so searching past its end changes nothing.
    index: Vec<u32>,
    /// The largest number of ranges in one bucket.
    max_window: usize,
    /// Bucket of address a: 0 if a < base, else min((a - base) >> shift, last).
    base: u128,
    shift: u32,
    last_bucket: u128,
}

/// A prefix in one family's space, as the builder hands it over: sorted by
/// (start, length), no duplicates.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Span {
    pub start: u128,
    pub len: u8,
    pub code: ResultCode,
}

impl<K: Key> Ranges<K> {
    /// Upper bound of the bytes `build` needs for `n` prefixes; checked
    /// against the cap before anything is allocated.
    pub(crate) fn bytes_for(n: usize) -> usize {
        let ranges = 2 * n + 1;
        let buckets = (1usize << MAX_INDEX_BITS).min(16 * ranges) + 1;
        ranges * size_of::<Slot<K>>() + buckets * size_of::<u32>()
    }

    /// Builds from prefixes sorted by (start, len) ascending, nested or
    /// disjoint (prefixes always are), without duplicates.
    pub(crate) fn build(spans: impl IntoIterator<Item = Span>) -> Ranges<K> {
        let mut out = RangeWriter::<K>::default();
        // Enclosing prefixes of the current position: (end, code), innermost last.
        let mut open: Vec<(u128, ResultCode)> = Vec::with_capacity(K::BITS as usize + 1);
        let host_bits = |len: u8| K::BITS - u32::from(len);
        for s in spans {
            let end = s.start | low_mask(host_bits(s.len));
            // Close every open prefix that ends before this one starts.
            while let Some(&(open_end, _)) = open.last() {
                if open_end >= s.start {
                    break;
                }
                open.pop();
                // open_end < s.start, so open_end + 1 cannot overflow.
                let resumed = open.last().map_or(0, |&(_, c)| c);
                out.push(open_end + 1, resumed);
            }
            out.push(s.start, s.code);
            open.push((end, s.code));
        }
        while let Some((open_end, _)) = open.pop() {
            let resumed = open.last().map_or(0, |&(_, c)| c);
            if open_end < low_mask(K::BITS) {
                out.push(open_end + 1, resumed);
            }
        }
        out.finish()
    }

    /// The result code of the range that contains `addr`.
    #[inline(always)]
    pub(crate) fn find(&self, addr: K) -> ResultCode {
        let wide = addr.to_u128();
        let bucket = if wide < self.base {
            0
        } else {
            ((wide - self.base) >> self.shift).min(self.last_bucket) as usize
        };
        let Some(&entry) = self.index.get(bucket) else {
            return 0; // unreachable: the index covers every bucket
        };
        if entry & WHOLE != 0 {
            return entry & !WHOLE;
        }
        let first = (entry & FIRST_MASK) as usize;
        let count = match entry >> FIRST_BITS {
            LARGE => self.max_window,
            c => c as usize + 1,
        };
        let end = (first + count).min(self.slots.len());
        let Some(window) = self.slots.get(first..end) else {
            return 0; // unreachable: index entries are checked when built
        };
        // Largest i with window[i].start <= addr; window[0].start <= addr holds.
        if count <= MAX_COUNT {
            // A short window is counted, not searched: its loads do not
            // depend on each other, so their cache misses overlap.
            let below = window.iter().filter(|s| s.start <= addr).count();
            return window.get(below.wrapping_sub(1)).map_or(0, |s| s.code);
        }
        let mut at = 0usize;
        let mut n = window.len();
        while n > 1 {
            let half = n / 2;
            if window[at + half].start <= addr {
                at += half;
            }
            n -= half;
        }
        window[at].code
    }

    /// Heap bytes held.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.slots.capacity() * size_of::<Slot<K>>() + self.index.capacity() * size_of::<u32>()
    }

    pub(crate) fn range_count(&self) -> usize {
        self.slots.len()
    }
}

fn low_mask(bits: u32) -> u128 {
    u128::MAX.checked_shr(128 - bits).unwrap_or(0)
}

/// Collects ranges in ascending order, merging neighbours with the same
/// result and letting a later range at the same start replace an earlier,
/// empty one.
struct RangeWriter<K> {
    slots: Vec<Slot<K>>,
}

impl<K: Key> Default for RangeWriter<K> {
    fn default() -> Self {
        RangeWriter {
            slots: vec![Slot::default()],
        }
    }
}

impl<K: Key> RangeWriter<K> {
    fn push(&mut self, start: u128, code: ResultCode) {
        let start = K::from_u128(start);
        let slots = &mut self.slots;
        let last = slots.len() - 1;
        if slots[last].start == start {
            // The earlier range is empty: the new one replaces it.
            slots[last].code = code;
            if last > 0 && slots[last - 1].code == code {
                slots.pop();
            }
        } else if slots[last].code != code {
            slots.push(Slot { start, code });
        }
    }

    fn finish(mut self) -> Ranges<K> {
        self.slots.shrink_to_fit();
        let slots = self.slots;
        // Index the span from the first boundary above 0 to the last one.
        let start_of = |i: usize| slots[i].start.to_u128();
        let top = start_of(slots.len() - 1);
        let base = if slots.len() > 1 { start_of(1) } else { 0 };
        let span_bits = 128 - (top - base).leading_zeros();
        // About eight to sixteen buckets per range: most buckets then lie
        // in one range and need no search.
        let want_bits = (usize::BITS - slots.len().leading_zeros() + 3).min(MAX_INDEX_BITS);
        let shift = span_bits.saturating_sub(want_bits);
        // Buckets aligned on prefix boundaries of length (bits - shift).
        let base = base & !low_mask(shift);
        let last_bucket = (top - base) >> shift;
        let buckets = last_bucket as usize + 1;
        let mut index = Vec::with_capacity(buckets);
        let mut max_window = 1;
        // first[j]: the range containing bucket j's first address.
        let mut range = 0usize;
        let mut first_of = |j: usize| {
            let addr = if j == 0 {
                0
            } else {
                base + ((j as u128) << shift)
            };
            while range + 1 < slots.len() && start_of(range + 1) <= addr {
                range += 1;
            }
            range
        };
        let mut first = first_of(0);
        for j in 0..buckets {
            // The bucket's last range is the one containing the next
            // bucket's first address (a boundary exactly there starts the
            // next bucket, so it is not this bucket's).
            let next = if j + 1 < buckets {
                first_of(j + 1)
            } else {
                slots.len() - 1
            };
            let last = if j + 1 < buckets && start_of(next) == base + (((j + 1) as u128) << shift) {
                next - 1
            } else {
                next
            };
            let count = last - first + 1;
            max_window = max_window.max(count);
            index.push(if count == 1 {
                WHOLE | slots[first].code
            } else {
                first as u32 | ((count.min(MAX_COUNT + 1) - 1) as u32) << FIRST_BITS
            });
            first = next;
        }
        Ranges {
            slots,
            index,
            max_window,
            base,
            shift,
            last_bucket,
        }
    }
}
