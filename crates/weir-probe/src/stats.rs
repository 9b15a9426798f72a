//! Percentiles of nanosecond samples, reported in microseconds.

use serde::Serialize;

/// p20, p50 and p99 of a set of samples, in µs, and how many there were.
/// NetDyn quoted medians; p20 shows the floor, p99 the tail.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Summary {
    pub n: usize,
    pub p20: f64,
    pub p50: f64,
    pub p99: f64,
}

/// The nearest-rank percentile `q` (0..=100) of sorted samples.
pub fn percentile(sorted: &[u64], q: f64) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((q / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted.get(rank.clamp(1, sorted.len()) - 1).copied()
}

/// Summarises nanosecond samples (sorts them in place). None if empty.
pub fn summarize(ns: &mut [u64]) -> Option<Summary> {
    ns.sort_unstable();
    let us = |q| percentile(ns, q).map_or(0.0, |v| v as f64 / 1000.0);
    (!ns.is_empty()).then(|| Summary {
        n: ns.len(),
        p20: us(20.0),
        p50: us(50.0),
        p99: us(99.0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 20.0), Some(20));
        assert_eq!(percentile(&v, 50.0), Some(50));
        assert_eq!(percentile(&v, 99.0), Some(99));
        assert_eq!(percentile(&v, 0.0), Some(1));
        assert_eq!(percentile(&[7], 99.0), Some(7));
        assert_eq!(percentile(&[], 50.0), None);
    }

    #[test]
    fn summary_in_microseconds() {
        let mut v = vec![3000, 1000, 2000, 4000, 5000];
        let s = summarize(&mut v).unwrap();
        assert_eq!((s.n, s.p20, s.p50, s.p99), (5, 1.0, 3.0, 5.0));
        assert!(summarize(&mut []).is_none());
    }
}
