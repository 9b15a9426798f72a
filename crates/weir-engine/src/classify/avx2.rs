//! The automata walked in AVX2 lanes: the walk of `avx512.rs` for CPUs
//! with AVX2 only (rte_acl's `avx2` search is the peer there). Groups of
//! eight walks step together, each lane a (packet, automaton) pair; a lane
//! whose walk reached a leaf takes the next walk before the next step.
//! The last few walks finish in the caller's scalar rounds.
//!
//! As there, a node's level and kind come from its reference: the level
//! from the store's up to 32 by four eight-word permutes and two blends,
//! 0.95–0.96 of the time of gathering a header word with `--simd avx2`
//! on a Zen 5 (BENCHMARKS.md, "Ended walks compressed, and no header
//! gather").
//!
//! AVX2 has no expanding load, scatter or per-lane popcount, so each
//! group keeps its lanes' walk ids, key bases and nodes in plain arrays:
//! a step loads them, does the node step with gathers (the same sequence
//! as [`Store::step`](super::automaton::Store::step), both node kinds
//! under masks, each gather issued for all four groups before the next
//! that waits on it), and stores the nodes back; refills and finished walks
//! are a short scalar loop over the lanes that changed. `tests::
//! lanes_end_where_scalar_rounds_end` (in `trie.rs`) checks every walk
//! ends in the scalar walk's leaf.
//!
//! The gathers take raw pointers; every index is clamped to its slice
//! before it is used, so whatever the store holds, no access leaves the
//! slices given. Callers reach the walk only through [`Avx2::detect`].

#![allow(unsafe_code)]

use super::automaton::{Store, KIND_AT, LEVEL_AT, MAX_LEVELS, OFFSET};
use super::lanes::{Queue, Tail, SCALAR_TAIL};
use core::arch::x86_64::*;

/// Proof that this CPU has AVX2: made only by [`Avx2::detect`].
#[derive(Clone, Copy, Debug)]
pub struct Avx2(());

impl Avx2 {
    pub fn detect() -> Option<Avx2> {
        is_x86_feature_detected!("avx2").then_some(Avx2(()))
    }

    /// Walks the queued walks (`Queue` says how); where each ends (a
    /// leaf, or for the last few walks a node to go on from: returned) is
    /// written to its place in `at`.
    #[inline]
    pub fn walk(self, store: &Store, keys: &[u64], at: &mut [u32], queue: &Queue) -> Tail {
        // SAFETY: an `Avx2` exists only where `detect` found the feature.
        unsafe { walk(&store.nodes, &store.levels, keys, at, queue) }
    }
}

/// Lanes of one vector.
const LANES: usize = 8;
/// Groups stepped together, each gather issued for every group in turn
/// (`step`): 32 walks in flight. Six and eight groups were 5–9% slower
/// at 10k rules (BENCHMARKS.md, "The AVX2 walk's groups interleaved").
const GROUPS: usize = 4;

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
fn walk(nodes: &[u32], levels: &[u32], keys: &[u64], at: &mut [u32], queue: &Queue) -> Tail {
    let total = queue.len();
    let (ids, bases, starts) = (queue.ids(), queue.bases(), queue.starts());
    let mut tail = Tail::default();
    if total == 0 || nodes.len() < 2 || keys.is_empty() || at.is_empty() {
        return tail;
    }
    let clamp = |s: usize| _mm256_set1_epi32((s - 1).min(i32::MAX as usize) as i32);
    // The last byte at which four bytes of the keys can be read.
    let last_key_byte = clamp(keys.len() * 8 - 3);
    // The last word at which one word, and two, of the nodes can be read.
    let node_ends = [clamp(nodes.len()), clamp(nodes.len() - 1)];
    // The store's levels (at most 32), in four vectors of eight.
    let mut table = [0u32; MAX_LEVELS];
    let n = levels.len().min(MAX_LEVELS);
    table[..n].copy_from_slice(&levels[..n]);
    let levels: [__m256i; 4] =
        std::array::from_fn(|i| load(table[i * 8..][..8].try_into().expect("eight")));
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
        if next == total && live as usize <= SCALAR_TAIL {
            // The last few walks, left to the scalar steps.
            for l in &g {
                put_back(l, l.live, at);
                tail.push_lanes(l.live, &l.id, &l.base);
            }
            return tail;
        }
        step(nodes, levels, keys, &mut g, node_ends, last_key_byte);
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

/// `[f(0), f(1), …]` over the groups, written out in the caller (as in
/// `avx512.rs`: a closure called from `array::from_fn` would lose the
/// target feature and not be inlined).
macro_rules! each {
    (|$k:ident| $e:expr) => {{
        let mut out = [_mm256_setzero_si256(); GROUPS];
        for $k in 0..GROUPS {
            out[$k] = $e;
        }
        out
    }};
}

/// One step of every group's live walks; lanes not live keep their node.
/// Each gather is issued for every group before the next one that waits
/// on it (the groups' key bytes, then their summaries, …), so that one
/// group's loads are in flight while another's wait.
#[target_feature(enable = "avx2")]
#[allow(clippy::needless_range_loop)] // `k` indexes every stage's arrays
fn step(
    nodes: &[u32],
    levels: [__m256i; 4],
    keys: &[u64],
    g: &mut [Group; GROUPS],
    [last_node, last_pair]: [__m256i; 2],
    last_key_byte: __m256i,
) {
    let zero = _mm256_setzero_si256();
    let one = _mm256_set1_epi32(1);
    let lane_bits = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    let live = each!(|k| {
        let bits = _mm256_and_si256(_mm256_set1_epi32(g[k].live as i32), lane_bits);
        _mm256_cmpeq_epi32(bits, lane_bits)
    });
    // Each walk's node reference, and where its node starts (`node_at`).
    let refs = each!(|k| load(&g[k].cur));
    let node = each!(|k| _mm256_slli_epi32::<1>(_mm256_and_si256(
        refs[k],
        _mm256_set1_epi32(OFFSET as i32)
    )));
    let head = each!(|k| level(levels, _mm256_srli_epi32::<{ LEVEL_AT as i32 }>(refs[k])));
    let shift =
        each!(|k| _mm256_and_si256(_mm256_srli_epi32::<3>(head[k]), _mm256_set1_epi32(0x7f)));
    let bits =
        each!(|k| _mm256_and_si256(_mm256_srli_epi32::<10>(head[k]), _mm256_set1_epi32(0x1f)));

    // The key field's bits this level reads: four bytes from the level's
    // first byte (levels read at most 16 bits, from a byte boundary), in
    // one gather.
    let mut v = each!(|k| {
        let field = _mm256_and_si256(head[k], _mm256_set1_epi32(7));
        let byte = _mm256_add_epi32(
            _mm256_slli_epi32::<3>(_mm256_add_epi32(load(&g[k].base), field)),
            _mm256_srli_epi32::<3>(shift[k]),
        );
        gather_bytes(live[k], _mm256_min_epu32(byte, last_key_byte), keys)
    });
    for k in 0..GROUPS {
        let wide = _mm256_srlv_epi32(v[k], _mm256_and_si256(shift[k], _mm256_set1_epi32(7)));
        v[k] = _mm256_and_si256(wide, _mm256_sub_epi32(_mm256_sllv_epi32(one, bits[k]), one));
    }

    // Listed nodes (`LINEAR_SEGMENTS` says how they are laid out): their
    // one or two words of starts; bitmap lanes, their running counts and
    // word of bits, side by side (`bitmap_words`): each lane reads its two
    // words in one 64-bit element, so a step costs the same gathers
    // whatever kinds its lanes hold. Two gathers of 32-bit words took
    // 1.02–1.05× the time on a Zen 4 (`--simd avx2`; BENCHMARKS.md, "Two
    // words in one gather element").
    let n = each!(|k| _mm256_and_si256(
        _mm256_srli_epi32::<{ KIND_AT as i32 }>(refs[k]),
        _mm256_set1_epi32(0xf)
    ));
    let linear = each!(|k| _mm256_andnot_si256(_mm256_cmpeq_epi32(n[k], zero), live[k]));
    let bitmap = each!(|k| _mm256_andnot_si256(linear[k], live[k]));
    let starts = each!(|k| _mm256_sub_epi32(n[k], one));
    let words = each!(|k| _mm256_srli_epi32::<5>(_mm256_sllv_epi32(one, bits[k])));
    let w = each!(|k| _mm256_srli_epi32::<5>(v[k]));
    // Starts and v are below 2^16: signed compares are right.
    let more_than = |k: usize, m: i32| _mm256_cmpgt_epi32(starts[k], _mm256_set1_epi32(m));
    let at_most_v =
        |k: usize, x: __m256i| _mm256_andnot_si256(_mm256_cmpgt_epi32(x, v[k]), live[k]);
    // A bitmap's word and counts are the two words from w + w / 2
    // (`bitmap_words`). A listed node's starts are its first two words
    // (with one word of starts, the second is its first child: `more_than`
    // leaves it out).
    let mut pairs = [[zero; 2]; GROUPS];
    for k in 0..GROUPS {
        let bitmap_at = _mm256_add_epi32(
            node[k],
            _mm256_add_epi32(w[k], _mm256_srli_epi32::<1>(w[k])),
        );
        let at = _mm256_blendv_epi8(node[k], bitmap_at, bitmap[k]);
        pairs[k] = gather_pairs(live[k], _mm256_min_epu32(at, last_pair), nodes);
    }
    let (mut counts, mut word) = ([zero; GROUPS], [zero; GROUPS]);
    for k in 0..GROUPS {
        // Each lane's first and second word, out of the four pairs of
        // each half.
        let [q0, q1] = pairs[k];
        let split = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
        let (p0, p1) = (
            _mm256_permutevar8x32_epi32(q0, split),
            _mm256_permutevar8x32_epi32(q1, split),
        );
        let first = _mm256_permute2x128_si256::<0x20>(p0, p1);
        let second = _mm256_permute2x128_si256::<0x31>(p0, p1);
        // Even w: (bits, counts); odd: (counts, bits); listed: (starts, starts).
        let odd = _mm256_cmpeq_epi32(_mm256_and_si256(w[k], one), one);
        let swap = _mm256_andnot_si256(odd, bitmap[k]);
        counts[k] = _mm256_blendv_epi8(first, second, swap);
        word[k] = _mm256_blendv_epi8(second, first, swap);
    }
    let lo = |x: __m256i| _mm256_and_si256(x, _mm256_set1_epi32(0xffff));
    let hi = |x: __m256i| _mm256_srli_epi32::<16>(x);
    for k in 0..GROUPS {
        // Listed nodes: the starts at or below v (masks are -1:
        // subtracted), then the children after the ⌈starts / 2⌉ words.
        let mut pos = zero;
        for (i, start) in [lo(counts[k]), hi(counts[k]), lo(word[k]), hi(word[k])]
            .into_iter()
            .enumerate()
        {
            let below = _mm256_and_si256(
                _mm256_and_si256(linear[k], more_than(k, i as i32)),
                at_most_v(k, start),
            );
            pos = _mm256_sub_epi32(pos, below);
        }
        let start_words = _mm256_srli_epi32::<1>(_mm256_add_epi32(starts[k], one));
        let listed_child = _mm256_add_epi32(_mm256_add_epi32(node[k], start_words), pos);

        // Bitmap nodes: the set bits up to v, from the word's running count.
        let half_shift = _mm256_slli_epi32::<4>(_mm256_and_si256(w[k], one));
        let before = _mm256_and_si256(
            _mm256_srlv_epi32(counts[k], half_shift),
            _mm256_set1_epi32(0xffff),
        );
        let low = _mm256_sub_epi32(
            _mm256_set1_epi32(31),
            _mm256_and_si256(v[k], _mm256_set1_epi32(31)),
        );
        let upto = _mm256_and_si256(word[k], _mm256_srlv_epi32(_mm256_set1_epi32(-1), low));
        let rank = _mm256_add_epi32(before, popcount(upto));
        // The children follow the bits and counts (`bitmap_head`).
        let children = _mm256_add_epi32(
            node[k],
            _mm256_add_epi32(words[k], _mm256_srli_epi32::<1>(words[k])),
        );
        // The first segment starts at 0: the rank is at least 1.
        let bitmap_child = _mm256_sub_epi32(_mm256_add_epi32(children, rank), one);

        let child = _mm256_blendv_epi8(bitmap_child, listed_child, linear[k]);
        let next = gather(refs[k], live[k], _mm256_min_epu32(child, last_node), nodes);
        // SAFETY: `cur` holds exactly one vector.
        unsafe { _mm256_storeu_si256(g[k].cur.as_mut_ptr().cast(), next) };
    }
}

/// Each lane's entry `code & 31` of the 32 words in `levels`: the
/// eight-word permutes of each vector, then two blends on the code's
/// bits 3 and 4.
#[inline]
#[target_feature(enable = "avx2")]
fn level(levels: [__m256i; 4], code: __m256i) -> __m256i {
    let [a, b, c, d] = levels.map(|l| _mm256_castsi256_ps(_mm256_permutevar8x32_epi32(l, code)));
    // The blend takes each lane's top bit: bit 3 or 4 moved up there.
    let bit3 = _mm256_castsi256_ps(_mm256_slli_epi32::<28>(code));
    let bit4 = _mm256_castsi256_ps(_mm256_slli_epi32::<27>(code));
    let low = _mm256_blendv_ps(a, b, bit3);
    let high = _mm256_blendv_ps(c, d, bit3);
    _mm256_castps_si256(_mm256_blendv_ps(low, high, bit4))
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

/// Lanes `lanes` (all bits set): the two words of `words` from `idx`
/// (already clamped below the last word), as two vectors of four pairs.
#[inline]
#[target_feature(enable = "avx2")]
fn gather_pairs(lanes: __m256i, idx: __m256i, words: &[u32]) -> [__m256i; 2] {
    // Four lanes' indices and mask (widened to 64 bits) a gather.
    let four = |idx: __m128i, lanes: __m128i| {
        let mask = _mm256_cvtepi32_epi64(lanes);
        // SAFETY: callers clamp every index so that its two words lie in `words`.
        unsafe {
            _mm256_mask_i32gather_epi64::<4>(
                _mm256_setzero_si256(),
                words.as_ptr().cast(),
                idx,
                mask,
            )
        }
    };
    let (low, high) = (_mm256_castsi256_si128, _mm256_extracti128_si256::<1>);
    [four(low(idx), low(lanes)), four(high(idx), high(lanes))]
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
