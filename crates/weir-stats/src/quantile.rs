//! Nearest-rank quantiles.
//!
//! The `q` quantile (0 ≤ q ≤ 1) of `n` sorted samples is the sample of
//! rank ⌈q·n⌉ (1-based; rank 1 for q = 0): the smallest sample with at
//! least a fraction `q` of the samples at or below it. It is always a
//! sample that was measured (never a value between two), works the same
//! for integer ticks and floats, and for an even count the median is the
//! lower of the middle two.

use serde::Serialize;

/// The name reports give the definition.
pub const METHOD: &str = "nearest-rank";

/// The nearest-rank `q` quantile (`q` in 0..=1; outside it, the minimum
/// or maximum) of ascending `sorted`. None when there are no samples.
pub fn quantile<T: Copy>(sorted: &[T], q: f64) -> Option<T> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    // NaN and q ≤ 0 cast to rank 0, q ≥ 1 saturates: both clamped below.
    let rank = (q * n as f64).ceil() as usize;
    sorted.get(rank.clamp(1, n) - 1).copied()
}

/// The nearest-rank median of ascending `sorted`.
pub fn median<T: Copy>(sorted: &[T]) -> Option<T> {
    quantile(sorted, 0.5)
}

/// `xs` ascending, with NaN and infinities left out: what [`quantile`]
/// needs from float samples collected in any order.
pub fn sorted(xs: impl IntoIterator<Item = f64>) -> Vec<f64> {
    let mut v: Vec<f64> = xs.into_iter().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    v
}

/// Median and spread of repeated estimates (nearest-rank quartiles).
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq)]
pub struct Spread {
    pub median: f64,
    /// 25th and 75th percentiles.
    pub q1: f64,
    pub q3: f64,
    pub iqr: f64,
    /// Finite samples summarised.
    pub n: usize,
}

impl Spread {
    /// The spread of `xs` (any order; non-finite values left out). All
    /// zero when no sample is finite.
    pub fn of(xs: &[f64]) -> Spread {
        let v = sorted(xs.iter().copied());
        let at = |q| quantile(&v, q).unwrap_or(0.0);
        let (q1, q3) = (at(0.25), at(0.75));
        Spread {
            median: at(0.5),
            q1,
            q3,
            iqr: q3 - q1,
            n: v.len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn hundred_samples() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(quantile(&v, 0.2), Some(20));
        assert_eq!(quantile(&v, 0.5), Some(50));
        assert_eq!(quantile(&v, 0.99), Some(99));
        assert_eq!(quantile(&v, 1.0), Some(100));
        assert_eq!(quantile(&v, 0.0), Some(1));
        // Just past a rank moves to the next sample.
        assert_eq!(quantile(&v, 0.201), Some(21));
    }

    #[test]
    fn few_samples() {
        assert_eq!(median(&[1.0, 2.0, 3.0, 4.0]), Some(2.0), "lower middle");
        assert_eq!(median(&[1, 2, 3]), Some(2));
        assert_eq!(quantile(&[7], 0.99), Some(7));
        assert_eq!(quantile::<u32>(&[], 0.5), None);
        assert_eq!(median::<f64>(&[]), None);
    }

    #[test]
    fn out_of_range_q_clamps() {
        let v = [3, 5, 9];
        assert_eq!(quantile(&v, -1.0), Some(3));
        assert_eq!(quantile(&v, 7.0), Some(9));
        assert_eq!(quantile(&v, f64::NAN), Some(3));
        assert_eq!(quantile(&v, f64::INFINITY), Some(9));
    }

    #[test]
    fn spread_of_known_data() {
        let s = Spread::of(&[5.0, 1.0, 3.0, 2.0, 4.0, f64::NAN]);
        assert_eq!((s.median, s.q1, s.q3, s.iqr, s.n), (3.0, 2.0, 4.0, 2.0, 5));
        let even = Spread::of(&[4.0, 1.0, 3.0, 2.0]);
        assert_eq!((even.median, even.q1, even.q3), (2.0, 1.0, 3.0));
        assert_eq!(Spread::of(&[f64::INFINITY]), Spread::default());
    }

    #[test]
    fn sorted_drops_non_finite() {
        assert_eq!(
            sorted([2.0, f64::NAN, -1.0, f64::NEG_INFINITY, 0.5]),
            vec![-1.0, 0.5, 2.0]
        );
    }

    proptest! {
        /// Against the definition, by brute force: the smallest sample
        /// with at least q·n samples at or below it.
        #[test]
        fn is_the_smallest_sample_covering_q(
            mut v in prop::collection::vec(0u32..50, 1..200),
            q in 0.0f64..=1.0,
        ) {
            v.sort_unstable();
            let n = v.len() as f64;
            let want = v
                .iter()
                .copied()
                .find(|&x| v.iter().filter(|&&y| y <= x).count() as f64 >= q * n)
                .unwrap();
            prop_assert_eq!(quantile(&v, q), Some(want));
        }

        #[test]
        fn monotone_in_q(mut v in prop::collection::vec(any::<i64>(), 1..100),
                         a in 0.0f64..=1.0, b in 0.0f64..=1.0) {
            v.sort_unstable();
            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
            prop_assert!(quantile(&v, lo) <= quantile(&v, hi));
        }
    }
}
