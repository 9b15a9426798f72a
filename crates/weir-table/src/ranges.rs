//! The lookup structure: a sorted list of disjoint address ranges, each with
//! the result of the longest prefix that covers it, plus a direct index on
//! the address's high bits that narrows each search to a few ranges.
//!
//! n nested-or-disjoint prefixes cut the address space into at most 2n + 1
//! ranges (each prefix starts one and, where it ends, resumes its parent),
//! so memory is linear in the table, whatever the prefix lengths; the index
//! has about one bucket per range (at most 2^20). A lookup reads one index
//! bucket, binary-searches the range starts inside it (a handful of
//! comparisons, usually in one or two cache lines), then reads one result.
//! This was chosen over a stride trie because its memory cannot blow up on
//! long IPv6 prefixes, and measured (BENCHMARKS.md) at tens of ns for 1M
//! prefixes in both families.

use std::mem::size_of;

/// An address in one family's space: `u32` for IPv4, `u128` for IPv6.
pub(crate) trait Key: Copy + Ord + Default + std::fmt::Debug {
    const BITS: u32;
    fn from_u128(v: u128) -> Self;
    fn to_u128(self) -> u128;
    /// `(self - base) >> shift` for `self >= base`, as a bucket number.
    fn bucket(self, base: Self, shift: u32) -> u128;
}

impl Key for u32 {
    const BITS: u32 = 32;
    fn from_u128(v: u128) -> Self {
        v as u32
    }
    fn to_u128(self) -> u128 {
        self as u128
    }
    #[inline(always)]
    fn bucket(self, base: Self, shift: u32) -> u128 {
        (self.wrapping_sub(base) >> shift) as u128
    }
}

impl Key for u128 {
    const BITS: u32 = 128;
    fn from_u128(v: u128) -> Self {
        v
    }
    fn to_u128(self) -> u128 {
        self
    }
    #[inline(always)]
    fn bucket(self, base: Self, shift: u32) -> u128 {
        self.wrapping_sub(base) >> shift
    }
}

/// Most index buckets: 2^20 (4 MiB of `u32`).
const MAX_INDEX_BITS: u32 = 20;

/// Result code of a range: 0 = no prefix covers it, r > 0 = `values[r - 1]`.
pub(crate) type ResultCode = u32;

#[derive(Clone, Debug)]
pub(crate) struct Ranges<K> {
    /// Start of each range, ascending; `starts[0] == 0` and the last range
    /// runs to the top of the space.
    starts: Vec<K>,
    /// Result code of each range.
    results: Vec<ResultCode>,
    /// `index[j]`: the range that contains the first address of bucket j.
    /// One extra entry at the end (the last range) closes the last bucket.
    index: Vec<u32>,
    /// Bucket of address a: 0 if a < base, else min((a - base) >> shift, last).
    base: K,
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
        ranges * (size_of::<K>() + size_of::<ResultCode>())
            + ((1usize << MAX_INDEX_BITS) + 1).min(ranges + 1) * size_of::<u32>() * 2
    }

    /// Builds from prefixes sorted by (start, len) ascending, nested or
    /// disjoint (prefixes always are), without duplicates.
    pub(crate) fn build(spans: &[Span]) -> Ranges<K> {
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
        let bucket = if addr < self.base {
            0
        } else {
            addr.bucket(self.base, self.shift).min(self.last_bucket) as usize
        };
        let (Some(&lo), Some(&hi)) = (self.index.get(bucket), self.index.get(bucket + 1)) else {
            return 0; // unreachable: the index covers every bucket
        };
        let Some(window) = self.starts.get(lo as usize..=hi as usize) else {
            return 0; // unreachable: index entries are range numbers
        };
        // Largest i with window[i] <= addr; window[0] <= addr holds.
        let mut at = 0usize;
        let mut n = window.len();
        while n > 1 {
            let half = n / 2;
            if window[at + half] <= addr {
                at += half;
            }
            n -= half;
        }
        self.results.get(lo as usize + at).copied().unwrap_or(0)
    }

    /// Heap bytes held.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.starts.capacity() * size_of::<K>()
            + self.results.capacity() * size_of::<ResultCode>()
            + self.index.capacity() * size_of::<u32>()
    }

    pub(crate) fn range_count(&self) -> usize {
        self.starts.len()
    }
}

fn low_mask(bits: u32) -> u128 {
    u128::MAX.checked_shr(128 - bits).unwrap_or(0)
}

/// Collects ranges in ascending order, merging neighbours with the same
/// result and letting a later range at the same start replace an earlier,
/// empty one.
struct RangeWriter<K> {
    starts: Vec<K>,
    results: Vec<ResultCode>,
}

impl<K: Key> Default for RangeWriter<K> {
    fn default() -> Self {
        RangeWriter {
            starts: vec![K::default()],
            results: vec![0],
        }
    }
}

impl<K: Key> RangeWriter<K> {
    fn push(&mut self, start: u128, code: ResultCode) {
        let start = K::from_u128(start);
        let last = self.starts.len() - 1;
        if self.starts[last] == start {
            // The earlier range is empty: the new one replaces it.
            self.results[last] = code;
            if last > 0 && self.results[last - 1] == code {
                self.starts.pop();
                self.results.pop();
            }
        } else if self.results[last] != code {
            self.starts.push(start);
            self.results.push(code);
        }
    }

    fn finish(mut self) -> Ranges<K> {
        self.starts.shrink_to_fit();
        self.results.shrink_to_fit();
        let starts = self.starts;
        // Index the span from the first boundary above 0 to the last one.
        let base = starts.get(1).copied().unwrap_or_default();
        let top = starts.last().copied().unwrap_or_default();
        let span = top.to_u128() - base.to_u128();
        let span_bits = 128 - span.leading_zeros();
        let want_bits = (usize::BITS - starts.len().leading_zeros()).min(MAX_INDEX_BITS);
        let shift = span_bits.saturating_sub(want_bits);
        let last_bucket = span >> shift;
        let buckets = last_bucket as usize + 1;
        let mut index = Vec::with_capacity(buckets + 1);
        let mut range = 0usize;
        for j in 0..buckets {
            let first = if j == 0 {
                0
            } else {
                base.to_u128() + ((j as u128) << shift)
            };
            while range + 1 < starts.len() && starts[range + 1].to_u128() <= first {
                range += 1;
            }
            index.push(range as u32);
        }
        index.push((starts.len() - 1) as u32);
        Ranges {
            starts,
            results: self.results,
            index,
            base,
            shift,
            last_bucket,
        }
    }
}
