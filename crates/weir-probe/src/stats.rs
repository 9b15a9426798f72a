//! Percentiles of nanosecond samples, reported in microseconds.

use serde::Serialize;
use weir_stats::quantile;

/// p20, p50 and p99 of a set of samples, in µs, and how many there were.
/// NetDyn quoted medians; p20 shows the floor, p99 the tail.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Summary {
    pub n: usize,
    pub p20: f64,
    pub p50: f64,
    pub p99: f64,
}

/// Summarises nanosecond samples (sorts them in place). None if empty.
pub fn summarize(ns: &mut [u64]) -> Option<Summary> {
    ns.sort_unstable();
    let us = |q| quantile(ns, q).map_or(0.0, |v| v as f64 / 1000.0);
    (!ns.is_empty()).then(|| Summary {
        n: ns.len(),
        p20: us(0.2),
        p50: us(0.5),
        p99: us(0.99),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_in_microseconds() {
        let mut v = vec![3000, 1000, 2000, 4000, 5000];
        let s = summarize(&mut v).unwrap();
        assert_eq!((s.n, s.p20, s.p50, s.p99), (5, 1.0, 3.0, 5.0));
        assert!(summarize(&mut []).is_none());
    }
}
