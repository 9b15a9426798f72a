//! Least squares, for the calibration model.

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
