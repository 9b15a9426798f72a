//! The automata walked in AVX-512 lanes, as rte_acl walks its tries: four
//! vectors of 16 walks step together, each lane a (packet, automaton)
//! pair, and a lane whose walk reached a leaf takes the next walk at once,
//! so lanes are not left idle while the deepest walk of a vector finishes.
//! The last few walks finish in the caller's scalar rounds.
//!
//! Each step is the scalar [`Store::step`](super::automaton::Store::step)
//! done with gathers: what the node reads and its kind come from its
//! reference (`automaton::OFFSET` says how; a permute over the store's
//! levels, no gather), then the key's four bytes the level reads, then
//! two words side by side, in one gather of 64-bit elements (two
//! instructions of eight): the listed node's starts, or the bitmap's word
//! and running counts; then the child. Three rounds deep, each gather
//! issued for every vector before the next that waits on it. Both kinds
//! are worked in every step under masks, in the same gathers: no branch
//! on a node's kind or on the key. `tests::lanes_end_where_scalar_rounds_end`
//! (in `trie.rs`) checks that every walk ends in the scalar walk's leaf.
//!
//! Here too, the bit sets' AND in vectors (`and_first`, for `rfc.rs`).
//!
//! The only `unsafe` in the engine: the gathers, the scatter of the last
//! few walks, the masked loads and stores, and the stores of ended walks
//! take raw pointers. Every index is clamped to its slice before it is
//! used, so whatever the store holds, no access leaves the slices given.
//! Callers reach the walk only through [`Avx512::detect`].

#![allow(unsafe_code)]

use super::automaton::{
    Store, EMPTY, INDEX, KIND_AT, LEAF, LEVEL_AT, MAX_LEVELS, OFFSET, SINGLE, STOP,
};
use super::lanes::{Queue, Tail, SCALAR_TAIL};
use core::arch::x86_64::*;

/// Proof that this CPU has what [`walk`] uses (AVX-512F, VPOPCNTDQ and
/// BMI2): made only by [`Avx512::detect`].
#[derive(Clone, Copy, Debug)]
pub struct Avx512(());

impl Avx512 {
    pub fn detect() -> Option<Avx512> {
        let ok = is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512vpopcntdq")
            && is_x86_feature_detected!("bmi2");
        ok.then_some(Avx512(()))
    }

    /// Walks the queued walks (`Queue` says how); where each ends (a
    /// leaf, or for the last few walks a node to go on from: returned) is
    /// written to its place in `at`.
    #[inline]
    pub fn walk(self, store: &Store, keys: &[u64], at: &mut [u32], queue: &Queue) -> Tail {
        // SAFETY: an `Avx512` exists only where `detect` found the features.
        unsafe { walk(&store.nodes, &store.levels, keys, at, queue) }
    }

    /// Each batch slot's least first rule and least stop over its head
    /// leaves (`heads` says how).
    #[inline]
    pub fn heads(self, at: &[u32], m: usize, walks: &[u8], pool: &[u32], out: &mut [(u32, u32)]) {
        // SAFETY: an `Avx512` exists only where `detect` found the features.
        unsafe { heads(at, m, walks, pool, out) }
    }

    /// The AND of `sets` written to `out` (each set at least as long),
    /// and the first rule in it: the bit sets' candidates (`rfc.rs`).
    #[inline]
    pub fn and_first(self, sets: [&[u64]; 4], out: &mut [u64]) -> Option<usize> {
        // SAFETY: an `Avx512` exists only where `detect` found the features.
        unsafe { and_first(sets, out) }
    }
}

/// Per batch slot `i`, the least first rule and the least stop of its
/// leaves `at[i * m..][..walks[i]]` (what `Store::first_and_stop` gives
/// each, `u32::MAX` for none), written to `out[i]`: the leaves of 16 / m
/// slots a vector (lane k: slot k / m, automaton k % m; one slot of up
/// to 16 leaves where m is larger), each slot's least found by log2(m)
/// permutes, and gathers only for a vector with a list leaf. The scalar
/// loop took a branch and about twenty instructions a leaf; one slot a
/// vector with two reductions, 1.04-1.09x the time of several at 1k-10k
/// rules (BENCHMARKS.md, "Several slots' head leaves in one vector").
#[target_feature(enable = "avx512f")]
fn heads(at: &[u32], m: usize, walks: &[u8], pool: &[u32], out: &mut [(u32, u32)]) {
    let none = _mm512_set1_epi32(-1);
    let bit = |b: u32| _mm512_set1_epi32(b as i32);
    let last_pool = _mm512_set1_epi32((pool.len().max(1) - 1).min(i32::MAX as usize) as i32);
    let clamp = |x: __m512i| _mm512_min_epu32(x, last_pool);
    let m = m.max(1);
    let per = (16 / m).max(1);
    // The lanes that hold leaves.
    let width = (per * m).min(16);
    // Each lane's slot and automaton (16 past `width`), counted up
    // (divisions by m for every batch were a quarter of this function's
    // time at 1k rules), and its partner d lanes on in its slot (itself
    // past the slot).
    let (mut slot_of, mut automaton_of) = ([per as u32 - 1; 16], [16u32; 16]);
    let (mut slot, mut automaton) = (0, 0);
    for k in 0..width {
        (slot_of[k], automaton_of[k]) = (slot, automaton);
        automaton += 1;
        if automaton == m as u32 {
            (slot, automaton) = (slot + 1, 0);
        }
    }
    let partners = [1, 2, 4, 8].map(|d| {
        let lanes: [u32; 16] = core::array::from_fn(|k| {
            if automaton_of[k] as usize + d < m && k + d < width {
                (k + d) as u32
            } else {
                k as u32
            }
        });
        load(&lanes)
    });
    let (slot_of, automaton_of) = (load(&slot_of), load(&automaton_of));
    // log2(m) halvings, m rounded up to a power of two.
    let steps = m.min(16).next_power_of_two().trailing_zeros() as usize;
    let n = walks.len().min(out.len());
    let mut i = 0;
    while i < n {
        let slots = per.min(n - i);
        // Each slot's count of walks: sixteen bytes from slot i (copied
        // only near the end, where fewer are left: a call to `memcpy`
        // for every vector cost more than the vectors saved).
        let counts = match walks.get(i..i + 16) {
            // SAFETY: sixteen bytes read from a slice of sixteen.
            Some(next) => unsafe { _mm_loadu_si128(next.as_ptr().cast()) },
            None => {
                let mut counts = [0u8; 16];
                counts[..slots].copy_from_slice(&walks[i..i + slots]);
                // SAFETY: sixteen bytes read from an array of sixteen.
                unsafe { _mm_loadu_si128(counts.as_ptr().cast()) }
            }
        };
        let counts = _mm512_permutexvar_epi32(slot_of, _mm512_cvtepu8_epi32(counts));
        let words = (slots * m).min(width).min(at.len().saturating_sub(i * m));
        let lanes =
            _mm512_cmplt_epu32_mask(automaton_of, counts) & (0xffff_u32 >> (16 - words)) as u16;
        // SAFETY: the masked load reads the words of `at` from i * m
        // below its length only.
        let v = unsafe { _mm512_maskz_loadu_epi32(lanes, at.as_ptr().wrapping_add(i * m).cast()) };
        let single = _mm512_mask_test_epi32_mask(lanes, v, bit(SINGLE));
        let stops = _mm512_mask_test_epi32_mask(lanes, v, bit(STOP));
        let list = lanes & !single & _mm512_mask_cmpneq_epi32_mask(lanes, v, bit(EMPTY));
        let index = _mm512_and_si512(v, bit(INDEX));
        let mut first = _mm512_mask_mov_epi32(none, single, index);
        let mut last = first;
        if list != 0 {
            // A list's length, then its rules (`Store::list`); an empty
            // list has neither.
            let len = gather(none, list, clamp(index), pool);
            let list = _mm512_mask_cmpneq_epi32_mask(list, len, _mm512_setzero_si512());
            let at_first = _mm512_add_epi32(index, _mm512_set1_epi32(1));
            first = gather(first, list, clamp(at_first), pool);
            last = gather(last, list, clamp(_mm512_add_epi32(index, len)), pool);
        }
        let mut stop = _mm512_mask_mov_epi32(none, stops, last);
        for &partner in &partners[..steps] {
            first = _mm512_min_epu32(first, _mm512_permutexvar_epi32(partner, first));
            stop = _mm512_min_epu32(stop, _mm512_permutexvar_epi32(partner, stop));
        }
        let (mut firsts, mut stops) = ([0u32; 16], [0u32; 16]);
        // SAFETY: sixteen words written to arrays of sixteen.
        unsafe {
            _mm512_storeu_epi32(firsts.as_mut_ptr().cast(), first);
            _mm512_storeu_epi32(stops.as_mut_ptr().cast(), stop);
        }
        for (j, out) in out[i..i + slots].iter_mut().enumerate() {
            *out = (firsts[j * m], stops[j * m]);
        }
        i += slots;
    }
}

/// Sixteen words as a vector (as `avx2::load` loads eight).
#[inline]
#[target_feature(enable = "avx512f")]
fn load(words: &[u32; 16]) -> __m512i {
    // SAFETY: sixteen words read from an array of sixteen.
    unsafe { _mm512_loadu_epi32(words.as_ptr().cast()) }
}

/// Eight words a vector; the last vector's missing words masked off.
#[target_feature(enable = "avx512f")]
fn and_first([a, b, c, d]: [&[u64]; 4], out: &mut [u64]) -> Option<usize> {
    let n = [a, b, c, d].iter().fold(out.len(), |n, s| n.min(s.len()));
    let mut first = None;
    for i in (0..n).step_by(8) {
        let words = (0xffu32 >> 8usize.saturating_sub(n - i)) as u8;
        // SAFETY: the masked loads and store touch words `i..n` only,
        // inside every slice.
        let and = unsafe {
            let load = |s: &[u64]| _mm512_maskz_loadu_epi64(words, s.as_ptr().add(i).cast());
            let and = _mm512_and_si512(
                _mm512_and_si512(load(a), load(b)),
                _mm512_and_si512(load(c), load(d)),
            );
            _mm512_mask_storeu_epi64(out.as_mut_ptr().add(i).cast(), words, and);
            and
        };
        let nonzero = _mm512_test_epi64_mask(and, and);
        if nonzero != 0 && first.is_none() {
            let k = i + nonzero.trailing_zeros() as usize;
            first = Some(k * 64 + out[k].trailing_zeros() as usize);
        }
    }
    first
}

#[target_feature(enable = "avx512f,avx512vpopcntdq,bmi2")]
fn walk(nodes: &[u32], levels: &[u32], keys: &[u64], at: &mut [u32], queue: &Queue) -> Tail {
    let total = queue.len();
    let (ids, bases, starts) = (queue.ids(), queue.bases(), queue.starts());
    let mut tail = Tail::default();
    if total == 0 || nodes.len() < 2 || keys.is_empty() || at.is_empty() {
        return tail;
    }
    let last = |s: usize| _mm512_set1_epi32((s - 1).min(i32::MAX as usize) as i32);
    // The last byte at which four bytes of the keys can be read.
    let last_key_byte = last(keys.len() * 8 - 3);
    let last_at = last(at.len());
    // The last word at which one word, and two, of the nodes can be read.
    let node_ends = [last(nodes.len()), last(nodes.len() - 1)];
    let zero = _mm512_setzero_si512();
    // The store's levels (at most 32), in two vectors: a reference's code
    // picks its node's with one permute.
    let levels = {
        let n = levels.len().min(MAX_LEVELS) as u32;
        let words = |from: u32| _bzhi_u32(u32::MAX, n.saturating_sub(from).min(16)) as u16;
        // SAFETY: each masked load reads the words of `levels` below `n`.
        unsafe {
            [
                _mm512_maskz_loadu_epi32(words(0), levels.as_ptr().cast()),
                _mm512_maskz_loadu_epi32(words(16), levels.as_ptr().wrapping_add(16).cast()),
            ]
        }
    };
    let mut g = [Lanes {
        id: zero,
        base: zero,
        cur: zero,
        live: 0,
    }; GROUPS];
    let mut next = 0;
    let mut ended = Ended::default();
    loop {
        // Free lanes take the next walks, in queue order.
        for l in &mut g {
            let free = !l.live;
            let take = (free.count_ones() as usize).min(total - next);
            if take > 0 {
                let fill = _pdep_u32((1 << take) - 1, u32::from(free)) as u16;
                l.id = expand(l.id, fill, &ids[next..next + take]);
                l.base = expand(l.base, fill, &bases[next..next + take]);
                l.cur = expand(l.cur, fill, &starts[next..next + take]);
                next += take;
                l.live |= fill;
            }
        }
        let live: u32 = g.iter().map(|l| l.live.count_ones()).sum();
        if next == total && live as usize <= SCALAR_TAIL {
            ended.write(at);
            // The last few walks, left to the scalar steps.
            for l in &g {
                let to = _mm512_min_epu32(l.id, last_at);
                let (mut id, mut base) = ([0u32; 16], [0u32; 16]);
                // SAFETY: every index is clamped below `at.len()`; the
                // stores write sixteen words into arrays of sixteen.
                unsafe {
                    _mm512_mask_i32scatter_epi32::<4>(at.as_mut_ptr().cast(), l.live, to, l.cur);
                    _mm512_storeu_epi32(id.as_mut_ptr().cast(), l.id);
                    _mm512_storeu_epi32(base.as_mut_ptr().cast(), l.base);
                }
                tail.push_lanes(u32::from(l.live), &id, &base);
            }
            return tail;
        }
        step(nodes, levels, keys, &mut g, node_ends, last_key_byte);
        for l in &mut g {
            let done = _mm512_mask_test_epi32_mask(l.live, l.cur, _mm512_set1_epi32(LEAF as i32));
            ended.push(done, l.id, l.cur);
            l.live &= !done;
        }
        if ended.len > ENDED - 16 * GROUPS {
            ended.write(at);
        }
    }
}

/// Walks ended but not yet written to `at`: each step's ended lanes are
/// compressed into these arrays, and written out in a scalar loop every
/// few steps. A masked scatter a group and step took 1.02–1.04× the time
/// at 1k–10k rules on a Zen 5 (BENCHMARKS.md, "Ended walks compressed,
/// and no header gather").
const ENDED: usize = 256;

struct Ended {
    ids: [u32; ENDED],
    leaves: [u32; ENDED],
    len: usize,
}

impl Default for Ended {
    fn default() -> Ended {
        Ended {
            ids: [0; ENDED],
            leaves: [0; ENDED],
            len: 0,
        }
    }
}

impl Ended {
    /// Lanes `done` of a group: their places in `at` and their leaves.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn push(&mut self, done: u16, id: __m512i, leaf: __m512i) {
        // Sixteen words are stored whatever `done` holds: room for them.
        let len = self.len.min(ENDED - 16);
        // SAFETY: both stores write the sixteen words from `len`, inside
        // the arrays (`len <= ENDED - 16`).
        unsafe {
            let ids = self.ids.as_mut_ptr().add(len).cast();
            _mm512_storeu_epi32(ids, _mm512_maskz_compress_epi32(done, id));
            let leaves = self.leaves.as_mut_ptr().add(len).cast();
            _mm512_storeu_epi32(leaves, _mm512_maskz_compress_epi32(done, leaf));
        }
        self.len = len + done.count_ones() as usize;
    }

    /// Writes each held leaf to its place in `at`, and empties.
    fn write(&mut self, at: &mut [u32]) {
        let len = self.len;
        for (&id, &leaf) in self.ids[..len].iter().zip(&self.leaves[..len]) {
            if let Some(slot) = at.get_mut(id as usize) {
                *slot = leaf;
            }
        }
        self.len = 0;
    }
}

/// Lane groups stepped together (rte_acl's x32 walks two vectors): while
/// one group's gathers wait on memory, the others' are in flight. With
/// each gather issued for every group in turn (`step`), four were 5% faster
/// than two at 10k rules and 10–20% at 100k; six and eight, slower
/// (BENCHMARKS.md, "Four groups' gathers in flight").
const GROUPS: usize = 4;

/// One vector of walks: each lane's place in `at`, key base and node.
#[derive(Clone, Copy)]
struct Lanes {
    id: __m512i,
    base: __m512i,
    cur: __m512i,
    live: u16,
}

/// `[f(0), f(1), …]` over the groups, as `array::from_fn` would, but
/// written out in the caller: a closure called from a function without
/// the caller's target features would not be inlined.
macro_rules! each {
    (|$k:ident| $e:expr) => {{
        let mut out = [_mm512_setzero_si512(); GROUPS];
        for $k in 0..GROUPS {
            out[$k] = $e;
        }
        out
    }};
}

/// One step of every group's live walks. Each gather is issued for every
/// group before the next one that waits on it (the groups' key bytes,
/// then their summaries, …): one group's loads are in flight while
/// another's wait.
#[target_feature(enable = "avx512f,avx512vpopcntdq")]
#[allow(clippy::needless_range_loop)] // `k` indexes every stage's arrays
fn step(
    nodes: &[u32],
    levels: [__m512i; 2],
    keys: &[u64],
    g: &mut [Lanes; GROUPS],
    [last_node, last_pair]: [__m512i; 2],
    last_key_byte: __m512i,
) {
    let zero = _mm512_setzero_si512();
    let one = _mm512_set1_epi32(1);
    let mut live = [0u16; GROUPS];
    for k in 0..GROUPS {
        live[k] = g[k].live;
    }
    let lanes = |k: usize| live[k];
    // What the node reads and how many segments it lists, from its
    // reference (`OFFSET` says how): nodes have no header. Gathering a
    // header word took 1.06–1.08× the time at 1k–10k rules on a Zen 5
    // (BENCHMARKS.md, "Ended walks compressed, and no header gather").
    let node = each!(|k| _mm512_slli_epi32::<1>(_mm512_and_si512(
        g[k].cur,
        _mm512_set1_epi32(OFFSET as i32)
    )));
    let head = each!(|k| _mm512_permutex2var_epi32(
        levels[0],
        _mm512_srli_epi32::<LEVEL_AT>(g[k].cur),
        levels[1]
    ));
    let bits =
        each!(|k| _mm512_and_si512(_mm512_srli_epi32::<10>(head[k]), _mm512_set1_epi32(0x1f)));
    let shift =
        each!(|k| _mm512_and_si512(_mm512_srli_epi32::<3>(head[k]), _mm512_set1_epi32(0x7f)));

    // The key field's bits this level reads: four bytes from the level's
    // first byte (levels read at most 16 bits, from a byte boundary), in
    // one gather.
    let mut v = [zero; GROUPS];
    for k in 0..GROUPS {
        let field = _mm512_and_si512(head[k], _mm512_set1_epi32(7));
        let byte = _mm512_add_epi32(
            _mm512_slli_epi32::<3>(_mm512_add_epi32(g[k].base, field)),
            _mm512_srli_epi32::<3>(shift[k]),
        );
        v[k] = gather_bytes(lanes(k), _mm512_min_epu32(byte, last_key_byte), keys);
    }
    for k in 0..GROUPS {
        let wide = _mm512_srlv_epi32(v[k], _mm512_and_si512(shift[k], _mm512_set1_epi32(7)));
        v[k] = _mm512_and_si512(wide, _mm512_sub_epi32(_mm512_sllv_epi32(one, bits[k]), one));
    }

    // Listed nodes (`LINEAR_SEGMENTS` says how they are laid out): their
    // one or two words of starts; bitmap nodes, their running counts and
    // word of bits, side by side (`bitmap_words`): each lane reads the two
    // words its node needs in one 64-bit element, so a step costs the same
    // gathers whatever its lanes hold. Two gathers of 32-bit words read
    // sixteen elements more a step: 1.08× the time on fw-1000 and
    // ipc-10000, 1.10× at 100k rules on a Zen 4 (BENCHMARKS.md, "Two words
    // in one gather element").
    let n = each!(|k| _mm512_and_si512(
        _mm512_srli_epi32::<KIND_AT>(g[k].cur),
        _mm512_set1_epi32(0xf)
    ));
    let starts = each!(|k| _mm512_sub_epi32(n[k], one));
    let words = each!(|k| _mm512_srli_epi32::<5>(_mm512_sllv_epi32(one, bits[k])));
    let w = each!(|k| _mm512_srli_epi32::<5>(v[k]));
    let more_than = |k: usize, n: i32| _mm512_cmpgt_epu32_mask(starts[k], _mm512_set1_epi32(n));
    let mut linear = [0u16; GROUPS];
    let mut pairs = [[zero; 2]; GROUPS];
    for k in 0..GROUPS {
        let listed = _mm512_test_epi32_mask(n[k], n[k]);
        linear[k] = lanes(k) & listed;
        // A bitmap's word and counts are the two words from w + w / 2
        // (`bitmap_words`). A listed node's starts are its first two
        // words (with one word of starts, the second is its first child:
        // `more_than` leaves it out).
        let bitmap_at = _mm512_add_epi32(
            node[k],
            _mm512_add_epi32(w[k], _mm512_srli_epi32::<1>(w[k])),
        );
        let at = _mm512_min_epu32(
            _mm512_mask_blend_epi32(linear[k], bitmap_at, node[k]),
            last_pair,
        );
        pairs[k] = gather_pairs(lanes(k), at, nodes);
    }
    let (mut counts, mut word) = ([zero; GROUPS], [zero; GROUPS]);
    for k in 0..GROUPS {
        let [q0, q1] = pairs[k];
        let first = _mm512_permutex2var_epi32(
            q0,
            _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0),
            q1,
        );
        let second = _mm512_permutex2var_epi32(
            q0,
            _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1),
            q1,
        );
        // Even w: (bits, counts); odd: (counts, bits); listed: (starts, starts).
        let swap = !linear[k] & !_mm512_test_epi32_mask(w[k], one);
        counts[k] = _mm512_mask_blend_epi32(swap, first, second);
        word[k] = _mm512_mask_blend_epi32(swap, second, first);
    }
    let lo = |x: __m512i| _mm512_and_si512(x, _mm512_set1_epi32(0xffff));
    let hi = |x: __m512i| _mm512_srli_epi32::<16>(x);
    for k in 0..GROUPS {
        // Listed nodes: the starts at or below v, then the children
        // after the ⌈starts / 2⌉ words.
        let mut pos = zero;
        for (i, start) in [lo(counts[k]), hi(counts[k]), lo(word[k]), hi(word[k])]
            .into_iter()
            .enumerate()
        {
            let below = linear[k] & more_than(k, i as i32) & _mm512_cmple_epu32_mask(start, v[k]);
            pos = _mm512_mask_add_epi32(pos, below, pos, one);
        }
        let start_words = _mm512_srli_epi32::<1>(_mm512_add_epi32(starts[k], one));
        let listed_child = _mm512_add_epi32(_mm512_add_epi32(node[k], start_words), pos);

        // Bitmap nodes: the set bits up to v, from the word's running count.
        let half_shift = _mm512_slli_epi32::<4>(_mm512_and_si512(w[k], one));
        let before = _mm512_and_si512(
            _mm512_srlv_epi32(counts[k], half_shift),
            _mm512_set1_epi32(0xffff),
        );
        let low = _mm512_sub_epi32(
            _mm512_set1_epi32(31),
            _mm512_and_si512(v[k], _mm512_set1_epi32(31)),
        );
        let upto = _mm512_and_si512(word[k], _mm512_srlv_epi32(_mm512_set1_epi32(-1), low));
        let rank = _mm512_add_epi32(before, _mm512_popcnt_epi32(upto));
        // The first segment starts at 0: the rank is at least 1. The
        // children follow the bits and counts (`bitmap_head`).
        let children = _mm512_add_epi32(
            node[k],
            _mm512_add_epi32(words[k], _mm512_srli_epi32::<1>(words[k])),
        );
        let bitmap_child = _mm512_sub_epi32(_mm512_add_epi32(children, rank), one);
        let child = _mm512_mask_blend_epi32(linear[k], bitmap_child, listed_child);
        g[k].cur = gather(
            g[k].cur,
            lanes(k),
            _mm512_min_epu32(child, last_node),
            nodes,
        );
    }
}

/// Lanes `lanes`: the four bytes of `keys` from byte `idx` (already
/// clamped to the last four), little-endian.
#[inline]
#[target_feature(enable = "avx512f")]
fn gather_bytes(lanes: u16, idx: __m512i, keys: &[u64]) -> __m512i {
    // SAFETY: callers clamp every index so that its four bytes lie in `keys`.
    unsafe {
        _mm512_mask_i32gather_epi32::<1>(_mm512_setzero_si512(), lanes, idx, keys.as_ptr().cast())
    }
}

/// Lanes `lanes`: the two words of `words` from `idx` (already clamped
/// below the last word), as two vectors of eight word pairs.
#[inline]
#[target_feature(enable = "avx512f")]
fn gather_pairs(lanes: u16, idx: __m512i, words: &[u32]) -> [__m512i; 2] {
    let zero = _mm512_setzero_si512();
    // SAFETY: callers clamp every index so that its two words lie in `words`.
    unsafe {
        [
            _mm512_mask_i32gather_epi64::<4>(
                zero,
                lanes as u8,
                _mm512_castsi512_si256(idx),
                words.as_ptr().cast(),
            ),
            _mm512_mask_i32gather_epi64::<4>(
                zero,
                (lanes >> 8) as u8,
                _mm512_extracti64x4_epi64::<1>(idx),
                words.as_ptr().cast(),
            ),
        ]
    }
}

/// `src` with lanes `lanes` replaced by `words[idx]` (idx already clamped).
#[inline]
#[target_feature(enable = "avx512f")]
fn gather(src: __m512i, lanes: u16, idx: __m512i, words: &[u32]) -> __m512i {
    // SAFETY: callers clamp every index below `words.len()`.
    unsafe { _mm512_mask_i32gather_epi32::<4>(src, lanes, idx, words.as_ptr().cast()) }
}

/// `src` with lanes `lanes` (as many as `words` holds) replaced by
/// `words`, in order.
#[inline]
#[target_feature(enable = "avx512f,bmi2")]
fn expand(src: __m512i, lanes: u16, words: &[u32]) -> __m512i {
    // At most as many lanes as there are words: the lowest ones.
    let n = words.len().min(16) as u32;
    let lanes = _pdep_u32(_bzhi_u32(u32::MAX, n), u32::from(lanes)) as u16;
    // A masked load, then the expand in registers: the expand from memory
    // took 1.01–1.02× the time on a Zen 5 (BENCHMARKS.md, "Ended walks
    // compressed, and no header gather").
    // SAFETY: the masked load reads the first n words of `words` only.
    let first =
        unsafe { _mm512_maskz_loadu_epi32(_bzhi_u32(u32::MAX, n) as u16, words.as_ptr().cast()) };
    _mm512_mask_expand_epi32(src, lanes, first)
}
