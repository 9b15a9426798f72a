//! The automata walked in AVX2 lanes: the walk of `avx512.rs` for CPUs
//! with AVX2 only (rte_acl's `avx2` search is the peer there). Groups of
//! eight walks step together, each lane a (packet, automaton) pair; a lane
//! whose walk reached a leaf takes the next walk before the next step.
//! The last few walks finish in the caller's scalar rounds.
//!
//! AVX2 has no expanding load, scatter or per-lane popcount, so each
//! group keeps its lanes' walk ids, key bases and nodes in plain arrays:
//! a step loads them, does the node step with gathers (the same sequence
//! as [`Store::step`](super::automaton::Store::step), both node kinds
//! under masks), and stores the nodes back; refills and finished walks
//! are a short scalar loop over the lanes that changed. `tests::
//! lanes_end_where_scalar_rounds_end` (in `trie.rs`) checks every walk
//! ends in the scalar walk's leaf.
//!
//! The gathers take raw pointers; every index is clamped to its slice
//! before it is used, so whatever the store holds, no access leaves the
//! slices given. Callers reach the walk only through [`Avx2::detect`].

#![allow(unsafe_code)]

use super::automaton::LINEAR_SEGMENTS;
use super::lanes::Queue;
use core::arch::x86_64::*;

/// Proof that this CPU has AVX2: made only by [`Avx2::detect`].
#[derive(Clone, Copy, Debug)]
pub struct Avx2(());

impl Avx2 {
    pub fn detect() -> Option<Avx2> {
        is_x86_feature_detected!("avx2").then_some(Avx2(()))
    }

    /// Walks the queued walks (`Queue` says how); where each ends (a
    /// leaf, or for the last few walks a node to go on from) is written
    /// to its place in `at`.
    #[inline]
    pub fn walk(self, nodes: &[u32], keys: &[u64], at: &mut [u32], queue: &Queue) {
        // SAFETY: an `Avx2` exists only where `detect` found the feature.
        unsafe { walk(nodes, keys, at, queue) }
    }
}

/// Lanes of one vector.
const LANES: usize = 8;
/// Groups stepped together: one group's gathers wait on memory while the
/// others' issue. Four holds 32 walks in flight, as AVX-512's two groups
/// of 16 do; not tuned further (BENCHMARKS.md, "SIMD walks").
const GROUPS: usize = 4;
/// Walks left to the scalar rounds once no more are queued: a lane's step
/// costs a whole vector's gathers.
const SCALAR_TAIL: u32 = 4;

/// One vector of walks, kept in arrays between steps.
#[derive(Clone, Copy, Default)]
struct Group {
    cur: [u32; LANES],
    base: [u32; LANES],
    id: [u32; LANES],
    /// Lanes holding a walk (bit per lane).
    live: u32,
}

#[target_feature(enable = "avx2")]
fn walk(nodes: &[u32], keys: &[u64], at: &mut [u32], queue: &Queue) {
    let total = queue.len();
    let (ids, bases, starts) = (queue.ids(), queue.bases(), queue.starts());
    if total == 0 || nodes.is_empty() || keys.is_empty() || at.is_empty() {
        return;
    }
    let clamp = |s: usize| _mm256_set1_epi32((s - 1).min(i32::MAX as usize) as i32);
    // The last byte at which four bytes of the keys can be read.
    let last_key_byte = clamp(keys.len() * 8 - 3);
    let last_node = clamp(nodes.len());
    let mut g = [Group::default(); GROUPS];
    let mut next = 0;
    loop {
        // Free lanes take the next walks, in queue order.
        let mut live = 0;
        for l in &mut g {
            let mut free = !l.live & ((1 << LANES) - 1);
            while free != 0 && next < total {
                let lane = free.trailing_zeros() as usize;
                free &= free - 1;
                let id = ids[next];
                l.id[lane] = id;
                l.base[lane] = bases[next];
                l.cur[lane] = starts[next];
                l.live |= 1 << lane;
                next += 1;
            }
            live += l.live.count_ones();
        }
        if next == total && live <= SCALAR_TAIL {
            for l in &g {
                put_back(l, l.live, at);
            }
            return;
        }
        // The groups' steps are independent, so their gathers may overlap.
        for l in &mut g {
            if l.live != 0 {
                l.cur = step(nodes, keys, l, last_node, last_key_byte);
            }
        }
        for l in &mut g {
            // A leaf's LEAF bit is each lane's sign bit.
            let cur = load(&l.cur);
            let done = _mm256_movemask_ps(_mm256_castsi256_ps(cur)) as u32 & l.live;
            if done != 0 {
                put_back(l, done, at);
                l.live &= !done;
            }
        }
    }
}

/// Writes lanes `which` of `l` back to their places in `at`.
fn put_back(l: &Group, mut which: u32, at: &mut [u32]) {
    while which != 0 {
        let lane = which.trailing_zeros() as usize;
        which &= which - 1;
        if let Some(a) = at.get_mut(l.id[lane] as usize) {
            *a = l.cur[lane];
        }
    }
}

/// One step of the walks live in `l`; returns their next nodes (lanes not
/// live keep theirs).
#[target_feature(enable = "avx2")]
fn step(
    nodes: &[u32],
    keys: &[u64],
    l: &Group,
    last_node: __m256i,
    last_key_byte: __m256i,
) -> [u32; LANES] {
    let zero = _mm256_setzero_si256();
    let one = _mm256_set1_epi32(1);
    let lane_bits = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    let live = _mm256_cmpeq_epi32(
        _mm256_and_si256(_mm256_set1_epi32(l.live as i32), lane_bits),
        lane_bits,
    );
    let cur = load(&l.cur);
    let base = load(&l.base);
    let head = gather(zero, live, _mm256_min_epu32(cur, last_node), nodes);
    let field = _mm256_and_si256(head, _mm256_set1_epi32(7));
    let shift = _mm256_and_si256(_mm256_srli_epi32::<3>(head), _mm256_set1_epi32(0x7f));
    let bits = _mm256_and_si256(_mm256_srli_epi32::<10>(head), _mm256_set1_epi32(0x1f));
    let n = _mm256_srli_epi32::<15>(head);

    // The key field's bits this level reads: four bytes from the level's
    // first byte (levels read at most 16 bits, from a byte boundary), in
    // one gather.
    let byte = _mm256_add_epi32(
        _mm256_slli_epi32::<3>(_mm256_add_epi32(base, field)),
        _mm256_srli_epi32::<3>(shift),
    );
    let word = gather_bytes(live, _mm256_min_epu32(byte, last_key_byte), keys);
    let wide = _mm256_srlv_epi32(word, _mm256_and_si256(shift, _mm256_set1_epi32(7)));
    let v = _mm256_and_si256(wide, _mm256_sub_epi32(_mm256_sllv_epi32(one, bits), one));

    // Listed nodes (`LINEAR_SEGMENTS` says how they are laid out): the
    // summary's starts at or below v give its block, the block's word
    // where in it. Bitmap lanes read their running counts and word of
    // bits in the summary's gathers: a step costs six gathers whatever
    // kinds its lanes hold.
    let linear = _mm256_and_si256(
        live,
        _mm256_cmpgt_epi32(_mm256_set1_epi32(LINEAR_SEGMENTS as i32 + 1), n),
    );
    let bitmap = _mm256_andnot_si256(linear, live);
    let starts = _mm256_sub_epi32(n, one);
    let first = _mm256_add_epi32(cur, one);
    let words = _mm256_srli_epi32::<5>(_mm256_sllv_epi32(one, bits));
    let w = _mm256_srli_epi32::<5>(v);
    let counts_at = _mm256_add_epi32(_mm256_add_epi32(first, words), _mm256_srli_epi32::<1>(w));
    let word_at = _mm256_add_epi32(first, w);
    // Starts and v are below 2^16: signed compares are right.
    let more_than = |k: i32| _mm256_cmpgt_epi32(starts, _mm256_set1_epi32(k));
    let at_most_v = |x: __m256i| _mm256_andnot_si256(_mm256_cmpgt_epi32(x, v), live);
    let read = |lanes: __m256i, listed_at: __m256i, other_at: __m256i| {
        let at = _mm256_blendv_epi8(listed_at, other_at, bitmap);
        let lanes = _mm256_or_si256(lanes, bitmap);
        gather(zero, lanes, _mm256_min_epu32(at, last_node), nodes)
    };
    let summary = _mm256_and_si256(linear, more_than(2));
    let counts = read(summary, first, counts_at);
    let second_at = _mm256_add_epi32(first, one);
    let word = read(_mm256_and_si256(linear, more_than(8)), second_at, word_at);
    let lo = |x: __m256i| _mm256_and_si256(x, _mm256_set1_epi32(0xffff));
    let hi = |x: __m256i| _mm256_srli_epi32::<16>(x);
    let mut block = zero;
    for (k, start) in [lo(counts), hi(counts), lo(word), hi(word)]
        .into_iter()
        .enumerate()
    {
        let below = _mm256_and_si256(
            _mm256_and_si256(linear, more_than(3 * k as i32 + 2)),
            at_most_v(start),
        );
        block = _mm256_sub_epi32(block, below);
    }
    let passed = _mm256_add_epi32(block, _mm256_slli_epi32::<1>(block));
    let summary_words = _mm256_and_si256(summary, _mm256_set1_epi32(2));
    let blocks_at = _mm256_add_epi32(first, summary_words);
    let in_block = _mm256_and_si256(linear, _mm256_cmpgt_epi32(starts, passed));
    let at = _mm256_min_epu32(_mm256_add_epi32(blocks_at, block), last_node);
    let pair = gather(zero, in_block, at, nodes);
    // The block's starts at or below v (masks are -1: subtracted).
    let has_second = _mm256_cmpgt_epi32(starts, _mm256_add_epi32(passed, one));
    let pos = _mm256_sub_epi32(passed, _mm256_and_si256(in_block, at_most_v(lo(pair))));
    let second = _mm256_and_si256(in_block, has_second);
    let pos = _mm256_sub_epi32(pos, _mm256_and_si256(second, at_most_v(hi(pair))));
    // The blocks' words, ⌈starts / 3⌉ (× 11 >> 5 divides by 3 up to 17).
    let rounded = _mm256_add_epi32(starts, _mm256_set1_epi32(2));
    let block_words = _mm256_srli_epi32::<5>(_mm256_mullo_epi32(rounded, _mm256_set1_epi32(11)));
    let children = _mm256_add_epi32(blocks_at, block_words);
    let listed_child = _mm256_add_epi32(children, pos);

    // Bitmap nodes: the set bits up to v, from the word's running count.
    let half_shift = _mm256_slli_epi32::<4>(_mm256_and_si256(w, one));
    let before = _mm256_and_si256(
        _mm256_srlv_epi32(counts, half_shift),
        _mm256_set1_epi32(0xffff),
    );
    let low = _mm256_sub_epi32(
        _mm256_set1_epi32(31),
        _mm256_and_si256(v, _mm256_set1_epi32(31)),
    );
    let upto = _mm256_and_si256(word, _mm256_srlv_epi32(_mm256_set1_epi32(-1), low));
    let rank = _mm256_add_epi32(before, popcount(upto));
    let children = _mm256_add_epi32(cur, _mm256_add_epi32(words, _mm256_srli_epi32::<1>(words)));
    let bitmap_child = _mm256_add_epi32(children, rank);

    let child = _mm256_blendv_epi8(bitmap_child, listed_child, linear);
    let next = gather(cur, live, _mm256_min_epu32(child, last_node), nodes);
    let mut out = [0u32; LANES];
    // SAFETY: `out` holds exactly one vector.
    unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast(), next) };
    out
}

/// Each 32-bit lane's set bits: a nibble table, then the bytes summed.
#[inline]
#[target_feature(enable = "avx2")]
fn popcount(x: __m256i) -> __m256i {
    let table = _mm256_setr_epi8(
        0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, //
        0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4,
    );
    let nibble = _mm256_set1_epi8(0x0f);
    let lo = _mm256_shuffle_epi8(table, _mm256_and_si256(x, nibble));
    let hi = _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16::<4>(x), nibble));
    let bytes = _mm256_add_epi8(lo, hi);
    let pairs = _mm256_maddubs_epi16(bytes, _mm256_set1_epi8(1));
    _mm256_madd_epi16(pairs, _mm256_set1_epi16(1))
}

/// Lanes `lanes`: the four bytes of `keys` from byte `idx` (already
/// clamped to the last four), little-endian.
#[inline]
#[target_feature(enable = "avx2")]
fn gather_bytes(lanes: __m256i, idx: __m256i, keys: &[u64]) -> __m256i {
    // SAFETY: callers clamp every index so that its four bytes lie in `keys`.
    unsafe {
        _mm256_mask_i32gather_epi32::<1>(_mm256_setzero_si256(), keys.as_ptr().cast(), idx, lanes)
    }
}

/// `src` with lanes `lanes` (all bits set) replaced by `words[idx]` (idx
/// already clamped).
#[inline]
#[target_feature(enable = "avx2")]
fn gather(src: __m256i, lanes: __m256i, idx: __m256i, words: &[u32]) -> __m256i {
    // SAFETY: callers clamp every index below `words.len()`.
    unsafe { _mm256_mask_i32gather_epi32::<4>(src, words.as_ptr().cast(), idx, lanes) }
}

#[inline]
#[target_feature(enable = "avx2")]
fn load(a: &[u32; LANES]) -> __m256i {
    // SAFETY: `a` holds exactly one vector.
    unsafe { _mm256_loadu_si256(a.as_ptr().cast()) }
}
