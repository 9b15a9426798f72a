//! Percentiles, median and interquartile range, least squares.

use serde::Serialize;

/// Nearest-rank percentile (`q` in 0..=100) of sorted data.
pub fn percentile<T: Copy>(sorted: &[T], q: f64) -> Option<T> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (q / 100.0 * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// Median and spread of repeated estimates.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq)]
pub struct Spread {
    pub median: f64,
    /// 25th and 75th percentiles.
    pub q1: f64,
    pub q3: f64,
    pub iqr: f64,
    pub n: usize,
}

/// Median and IQR of `xs` (linear interpolation between order statistics).
pub fn spread(xs: &[f64]) -> Spread {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return Spread::default();
    }
    let at = |q: f64| {
        let pos = q * (v.len() - 1) as f64;
        let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
        v[lo] + (v[hi] - v[lo]) * (pos - lo as f64)
    };
    let (q1, q3) = (at(0.25), at(0.75));
    Spread {
        median: at(0.5),
        q1,
        q3,
        iqr: q3 - q1,
        n: v.len(),
    }
}

/// Least squares: the coefficients `b` minimising Σ(y − x·b)², where each
/// row of `x` holds the regressors (put a 1 first for an intercept).
/// None when the normal equations are singular.
pub fn least_squares(x: &[Vec<f64>], y: &[f64]) -> Option<Vec<f64>> {
    let n = x.first()?.len();
    // Normal equations XᵀX b = Xᵀy, solved by Gaussian elimination with
    // partial pivoting on the augmented n×(n+1) matrix.
    let mut a = vec![vec![0.0; n + 1]; n];
    for (row, &yi) in x.iter().zip(y) {
        for i in 0..n {
            for j in 0..n {
                a[i][j] += row[i] * row[j];
            }
            a[i][n] += row[i] * yi;
        }
    }
    for col in 0..n {
        let pivot = (col..n).max_by(|&r, &s| a[r][col].abs().total_cmp(&a[s][col].abs()))?;
        if a[pivot][col].abs() < 1e-12 {
            return None;
        }
        a.swap(col, pivot);
        for r in 0..n {
            if r != col {
                let f = a[r][col] / a[col][col];
                let pivot_row = a[col].clone();
                for (v, p) in a[r].iter_mut().zip(&pivot_row) {
                    *v -= f * p;
                }
            }
        }
    }
    Some((0..n).map(|i| a[i][n] / a[i][i]).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_nearest_rank() {
        let v: Vec<u32> = (1..=100).collect();
        assert_eq!(percentile(&v, 20.0), Some(20));
        assert_eq!(percentile(&v, 50.0), Some(50));
        assert_eq!(percentile(&v, 99.0), Some(99));
        assert_eq!(percentile(&v, 100.0), Some(100));
        assert_eq!(percentile(&v, 0.0), Some(1));
        assert_eq!(percentile::<u32>(&[], 50.0), None);
    }

    #[test]
    fn spread_of_known_data() {
        let s = spread(&[5.0, 1.0, 3.0, 2.0, 4.0]);
        assert_eq!(s.median, 3.0);
        assert_eq!((s.q1, s.q3, s.iqr), (2.0, 4.0, 2.0));
    }

    #[test]
    fn fits_the_ipfw_model_exactly() {
        // ns = a + k·(h + m·c) with a = 7, h = 3, c = 1.5.
        let (mut x, mut y) = (vec![], vec![]);
        for k in [1.0, 2.0, 8.0, 32.0] {
            for m in [1.0, 2.0, 4.0] {
                x.push(vec![1.0, k, k * m]);
                y.push(7.0 + k * (3.0 + m * 1.5));
            }
        }
        let b = least_squares(&x, &y).unwrap();
        for (got, want) in b.iter().zip([7.0, 3.0, 1.5]) {
            assert!((got - want).abs() < 1e-9, "{b:?}");
        }
    }

    #[test]
    fn singular_is_none() {
        let x = vec![vec![1.0, 2.0], vec![1.0, 2.0]];
        assert_eq!(least_squares(&x, &[1.0, 1.0]), None);
    }
}
