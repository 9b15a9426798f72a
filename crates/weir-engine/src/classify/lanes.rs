//! Which vector walk a trie's automata step in: AVX-512 (`avx512.rs`) or
//! AVX2 (`avx2.rs`), chosen once when the engine is built, or none (the
//! scalar rounds in `trie.rs`). Every walk ends in the same leaf. And
//! whether the bit sets are ANDed in AVX-512 vectors (`WideAnd`).
//!
//! `Auto` takes AVX-512 where the CPU has it, else AVX2, else the scalar
//! rounds. With its four groups' gathers interleaved the AVX2 walk took
//! 0.67–0.69 of the scalar rounds' time at 10k rules and 0.61–0.73 at
//! 100k on a Zen 4; on a Zen 3, before the interleave, it was within
//! that machine's noise of them (BENCHMARKS.md, "The AVX2 walk's groups interleaved").

use super::automaton::Store;
#[cfg(target_arch = "x86_64")]
use super::{avx2::Avx2, avx512::Avx512};

/// The walk in SIMD lanes an engine asks for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Simd {
    /// AVX-512 where this CPU has it, else AVX2, else the scalar rounds.
    #[default]
    Auto,
    /// Scalar rounds only.
    Off,
    /// Eight walks a vector (AVX2).
    Avx2,
    /// Sixteen walks a vector (AVX-512 F with VPOPCNTDQ).
    Avx512,
}

impl Simd {
    pub const ALL: [Simd; 4] = [Simd::Auto, Simd::Off, Simd::Avx2, Simd::Avx512];

    pub fn name(self) -> &'static str {
        match self {
            Simd::Auto => "auto",
            Simd::Off => "off",
            Simd::Avx2 => "avx2",
            Simd::Avx512 => "avx512",
        }
    }

    /// Whether this CPU runs it (`Auto` and `Off` run everywhere).
    pub fn runs_here(self) -> bool {
        match self {
            Simd::Auto | Simd::Off => true,
            vector => Lanes::pick(vector).is_some(),
        }
    }

    /// The vector walks this CPU runs, widest first.
    pub fn here() -> Vec<Simd> {
        [Simd::Avx512, Simd::Avx2]
            .into_iter()
            .filter(|s| s.runs_here())
            .collect()
    }
}

/// A vector walk this CPU has (the proof of its features inside).
#[derive(Clone, Copy, Debug)]
pub enum Lanes {
    #[cfg(target_arch = "x86_64")]
    Avx512(Avx512),
    #[cfg(target_arch = "x86_64")]
    Avx2(Avx2),
}

impl Lanes {
    /// The walk `simd` names, if this CPU has it.
    pub fn pick(simd: Simd) -> Option<Lanes> {
        #[cfg(target_arch = "x86_64")]
        {
            let wide = Avx512::detect();
            let narrow = Avx2::detect();
            let has = [wide.map(|_| Simd::Avx512), narrow.map(|_| Simd::Avx2)];
            match resolve(simd, has.into_iter().flatten())? {
                Simd::Avx512 => wide.map(Lanes::Avx512),
                _ => narrow.map(Lanes::Avx2),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = simd;
            None
        }
    }

    pub fn simd(self) -> Simd {
        match self {
            #[cfg(target_arch = "x86_64")]
            Lanes::Avx512(_) => Simd::Avx512,
            #[cfg(target_arch = "x86_64")]
            Lanes::Avx2(_) => Simd::Avx2,
        }
    }

    /// Walks the queued walks; where each ends is written to its place in
    /// `at` (a leaf, or for the last few a node for the scalar steps to go
    /// on from: those are returned).
    #[inline]
    pub fn walk(self, store: &Store, keys: &[u64], at: &mut [u32], queue: &Queue) -> Tail {
        match self {
            #[cfg(target_arch = "x86_64")]
            Lanes::Avx512(l) => l.walk(store, keys, at, queue),
            #[cfg(target_arch = "x86_64")]
            Lanes::Avx2(l) => l.walk(store, keys, at, queue),
        }
    }
}

/// The bit sets' whole AND in AVX-512 vectors (`rfc.rs`), where the
/// CPU has them. AVX2's, in four-word vectors, was no faster than the
/// compiler's loop (BENCHMARKS.md, "The bit sets ANDed in vectors").
#[derive(Clone, Copy, Debug)]
pub struct WideAnd(#[cfg(target_arch = "x86_64")] Avx512);

impl WideAnd {
    /// The AVX-512 AND, if `simd` asks for it (or `Auto`) and this CPU has it.
    pub fn pick(simd: Simd) -> Option<WideAnd> {
        match Lanes::pick(simd)? {
            #[cfg(target_arch = "x86_64")]
            Lanes::Avx512(wide) => Some(WideAnd(wide)),
            #[allow(unreachable_patterns)]
            _ => None,
        }
    }

    /// The AND of `sets` written to `out` (each set at least as long), and
    /// the first bit set in it: what the scalar AND and
    /// [`next_candidate`](super::bits::next_candidate) give.
    #[inline]
    pub fn and_first(self, sets: [&[u64]; 4], out: &mut [u64]) -> Option<usize> {
        #[cfg(target_arch = "x86_64")]
        return self.0.and_first(sets, out);
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (sets, out);
            None
        }
    }
}

/// The vector walk `simd` asks for among those a CPU has (`has`, widest
/// first): `Auto` takes the widest; `Off`, or a walk the CPU lacks, none.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
fn resolve(simd: Simd, mut has: impl Iterator<Item = Simd>) -> Option<Simd> {
    match simd {
        Simd::Off => None,
        Simd::Auto => has.next(),
        vector => has.find(|&h| h == vector),
    }
}

/// Walks the lanes leave to the scalar steps once no more are queued: one
/// lane's step costs a whole vector's gathers.
pub const SCALAR_TAIL: usize = 4;

/// The walks a vector walk left short of a leaf (at most [`SCALAR_TAIL`]):
/// each walk's place in `at` and its key's base, as queued. Handed back,
/// so the scalar steps need not look for them in the whole queue (a scan
/// that was half of their time at 10k rules).
#[derive(Clone, Copy, Debug, Default)]
pub struct Tail {
    walks: [(u32, u32); SCALAR_TAIL],
    len: usize,
}

impl Tail {
    /// Adds a walk; the vector walks stop at [`SCALAR_TAIL`] live walks,
    /// so no more are ever added.
    #[inline]
    pub fn push(&mut self, id: u32, base: u32) {
        assert!(self.len < SCALAR_TAIL, "more than SCALAR_TAIL walks left");
        self.walks[self.len] = (id, base);
        self.len += 1;
    }

    /// Adds the walks of a vector's lanes `live` (bit per lane), whose
    /// places and key bases are `ids` and `bases`, lane by lane.
    #[inline]
    pub fn push_lanes(&mut self, mut live: u32, ids: &[u32], bases: &[u32]) {
        while live != 0 {
            let lane = live.trailing_zeros() as usize;
            live &= live - 1;
            self.push(ids[lane], bases[lane]);
        }
    }

    /// The walks: (place in `at`, key base).
    pub fn walks(&self) -> &[(u32, u32)] {
        &self.walks[..self.len]
    }
}

/// The walks queued for the lanes, in order: walk `q` starts at node
/// `starts[q]`, reads the key whose fields are `keys[bases[q]..]`, and
/// ends in `at[ids[q]]`. No id is queued twice. The start is queued (not
/// read back from `at`), so a lane takes its walk with loads of
/// consecutive words, not a gather. The buffers are sized once; a refill
/// writes them through plain slices (pushing to three `Vec`s kept their
/// lengths in memory: a tenth of `walk_batch`'s time).
pub struct Queue {
    ids: Box<[u32]>,
    bases: Box<[u32]>,
    starts: Box<[u32]>,
    len: usize,
}

impl Queue {
    /// A queue of at most `n` walks.
    pub fn with_capacity(n: usize) -> Queue {
        let v = || vec![0; n].into_boxed_slice();
        Queue {
            ids: v(),
            bases: v(),
            starts: v(),
            len: 0,
        }
    }

    /// Queues anew: `fill` writes walks `0..k` into the buffers (ids,
    /// bases, starts; each as long as the capacity) and returns `k`.
    #[inline(always)]
    pub fn refill(&mut self, fill: impl FnOnce(&mut [u32], &mut [u32], &mut [u32]) -> usize) {
        let k = fill(&mut self.ids, &mut self.bases, &mut self.starts);
        self.len = k.min(self.ids.len());
    }

    pub fn ids(&self) -> &[u32] {
        &self.ids[..self.len]
    }

    pub fn bases(&self) -> &[u32] {
        &self.bases[..self.len]
    }

    pub fn starts(&self) -> &[u32] {
        &self.starts[..self.len]
    }

    /// Walks queued.
    pub fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_takes_the_widest_walk_a_cpu_runs() {
        use Simd::*;
        let both = || [Avx512, Avx2].into_iter();
        assert_eq!(resolve(Auto, both()), Some(Avx512));
        assert_eq!(resolve(Auto, [Avx2].into_iter()), Some(Avx2));
        assert_eq!(resolve(Auto, [].into_iter()), None);
        assert_eq!(resolve(Off, both()), None);
        assert_eq!(resolve(Avx2, both()), Some(Avx2));
        assert_eq!(resolve(Avx512, [Avx2].into_iter()), None);
        // And on this CPU.
        let auto = Lanes::pick(Auto).map(Lanes::simd);
        assert_eq!(auto, Simd::here().first().copied());
    }

    /// The AVX-512 AND writes the scalar AND and finds its first bit, for
    /// sets of every length (the last vector part-full) and density.
    #[test]
    fn the_wide_and_is_the_scalar_and() {
        let Some(wide) = WideAnd::pick(Simd::Avx512) else {
            eprintln!("no AVX-512 here: the wide AND is not tested");
            return;
        };
        assert!(WideAnd::pick(Simd::Off).is_none() && WideAnd::pick(Simd::Avx2).is_none());
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut rng = move || crate::classify::xorshift(&mut state);
        for words in 1..=33 {
            for density in [1, 3, 64] {
                for _ in 0..50 {
                    // A few extra words past `words`, never to be read.
                    let mut sets: Vec<Vec<u64>> = (0..4)
                        .map(|_| (0..words + 3).map(|_| rng() | rng()).collect())
                        .collect();
                    for w in sets.iter_mut().flat_map(|s| &mut s[..words]) {
                        if rng() % density != 0 {
                            *w = 0;
                        }
                    }
                    let want: Vec<u64> = (0..words)
                        .map(|k| sets.iter().fold(!0, |m, s| m & s[k]))
                        .collect();
                    let first = (0..words * 64).find(|&r| want[r / 64] >> (r % 64) & 1 == 1);
                    let mut out = vec![!0; words];
                    let got = wide.and_first([&sets[0], &sets[1], &sets[2], &sets[3]], &mut out);
                    assert_eq!((got, &out), (first, &want), "{words} words");
                }
            }
        }
    }
}
