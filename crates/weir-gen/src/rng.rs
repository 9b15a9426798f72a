//! The one random source: ChaCha8, whose output is fixed by its seed on every
//! platform and in every version of `rand_chacha`.
//!
//! Only `u32` ranges are sampled (never `usize` or floats), so nothing depends
//! on the pointer width or float rounding.

use rand::{Rng as _, RngExt as _, SeedableRng as _};
use rand_chacha::ChaCha8Rng;

pub struct Rng(ChaCha8Rng);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(ChaCha8Rng::seed_from_u64(seed))
    }

    /// Uniform in `0..n` (`n > 0`).
    #[inline]
    pub fn below(&mut self, n: u32) -> u32 {
        self.0.random_range(0..n)
    }

    /// Uniform in `lo..=hi`.
    #[inline]
    pub fn range(&mut self, lo: u32, hi: u32) -> u32 {
        self.0.random_range(lo..=hi)
    }

    #[inline]
    pub fn percent(&mut self, p: u32) -> bool {
        self.below(100) < p
    }

    #[inline]
    pub fn per_mille(&mut self, p: u32) -> bool {
        self.below(1000) < p
    }

    #[inline]
    pub fn next_u32(&mut self) -> u32 {
        self.0.next_u32()
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in `0..len` (`0 < len ≤ u32::MAX`).
    #[inline]
    pub fn index(&mut self, len: usize) -> usize {
        self.below(len as u32) as usize
    }

    #[inline]
    pub fn u16(&mut self) -> u16 {
        self.0.next_u32() as u16
    }

    /// One item drawn with probability proportional to its weight.
    pub fn weighted<T: Copy>(&mut self, items: &[(T, u32)]) -> T {
        let total: u32 = items.iter().map(|&(_, w)| w).sum();
        let mut x = self.below(total);
        for &(item, w) in items {
            if x < w {
                return item;
            }
            x -= w;
        }
        unreachable!("weights sum to total")
    }
}
