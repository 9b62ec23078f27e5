//! What a CP-APR run produces ([`AprModel`], one [`AprIterStats`] per outer iteration) and
//! the factor match score used to compare a fitted model with a planted one.

use super::phi::PhiRun;
use crate::error::Result;
use crate::io::npy;
use crate::matrix::Matrix;

/// One outer iteration's outcome and cost.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct AprIterStats {
    /// 0-based.
    pub iter: usize,
    /// Poisson log-likelihood after the iteration (up to the constant `-sum log(v!)`).
    pub loglik: f64,
    /// The largest, over modes, KKT violation `max |min(B, 1 - Phi)|` at the mode's last check.
    pub kkt: f64,
    /// Inner iterations (Phi evaluations) over all modes.
    pub inner_iters: usize,
    /// Entries raised by kappa as inadmissible zeros.
    pub inadmissible: usize,
    /// Wall time of the whole iteration.
    pub seconds: f64,
    /// Of which in Phi (and the Pi cache of the `cached` kernel).
    pub phi_seconds: f64,
    /// The rest: kappa, KKT checks, updates, normalization, log-likelihood.
    pub rest_seconds: f64,
}

/// A fitted Poisson CP model: `m(x) = sum_r lambda_r prod_n A_n(i_n, r)`, each column of each
/// factor summing to 1.
#[derive(Clone, Debug)]
pub struct AprModel {
    pub lambda: Vec<f64>,
    pub factors: Vec<Matrix>,
    pub history: Vec<AprIterStats>,
    /// True when every mode met the KKT tolerance before its first update in the last
    /// iteration (rather than stopping at the cap or by the observer).
    pub converged: bool,
    /// What Phi ran for each mode (first iteration).
    pub phi_runs: Vec<PhiRun>,
}

impl AprModel {
    pub fn rank(&self) -> usize {
        self.lambda.len()
    }
    /// The log-likelihood after each outer iteration.
    pub fn logliks(&self) -> Vec<f64> {
        self.history.iter().map(|s| s.loglik).collect()
    }
    pub fn final_loglik(&self) -> f64 {
        self.history.last().map_or(f64::NAN, |s| s.loglik)
    }
    /// Writes `dir/lambda.npy` (1-D, R) and `dir/factor<n>.npy` (`I_n x R`), f64, C order.
    pub fn write_npy(&self, dir: &std::path::Path) -> Result<()> {
        npy::write_f64(
            &dir.join("lambda.npy"),
            &[self.lambda.len() as u64],
            &self.lambda,
        )?;
        for (n, u) in self.factors.iter().enumerate() {
            u.write_npy(&dir.join(format!("factor{n}.npy")))?;
        }
        Ok(())
    }
}

/// The factor match score of two CP models of the same shape (weights ignored): components
/// are paired greedily by the largest congruence `prod_n |cos(a_n(:, r), b_n(:, s))|`, and the
/// score is the mean congruence of the pairs (1: the same components up to scaling and order).
/// Models of different ranks pair `min(R_a, R_b)` components and divide by the larger rank.
pub fn factor_match_score(a: &[Matrix], b: &[Matrix]) -> f64 {
    assert_eq!(a.len(), b.len(), "models of one order");
    let (ra, rb) = (a[0].cols(), b[0].cols());
    let col = |m: &Matrix, r: usize| -> Vec<f64> { (0..m.rows()).map(|i| m.get(i, r)).collect() };
    let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    let mut cong = vec![vec![1.0f64; rb]; ra];
    for (ma, mb) in a.iter().zip(b) {
        assert_eq!(ma.rows(), mb.rows(), "factors of one shape");
        for (r, row) in cong.iter_mut().enumerate() {
            let u = col(ma, r);
            for (s, c) in row.iter_mut().enumerate() {
                let v = col(mb, s);
                let d = norm(&u) * norm(&v);
                let dot: f64 = u.iter().zip(&v).map(|(x, y)| x * y).sum();
                *c *= if d > 0.0 { (dot / d).abs() } else { 0.0 };
            }
        }
    }
    let mut used_a = vec![false; ra];
    let mut used_b = vec![false; rb];
    let mut total = 0.0;
    for _ in 0..ra.min(rb) {
        let mut best = (f64::NEG_INFINITY, 0, 0);
        for r in (0..ra).filter(|&r| !used_a[r]) {
            for s in (0..rb).filter(|&s| !used_b[s]) {
                if cong[r][s] > best.0 {
                    best = (cong[r][s], r, s);
                }
            }
        }
        used_a[best.1] = true;
        used_b[best.2] = true;
        total += best.0;
    }
    total / ra.max(rb) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn match_score_ignores_order_and_scale() {
        let a = vec![Matrix::random(6, 3, 1), Matrix::random(5, 3, 2)];
        // Columns permuted (2, 0, 1) and scaled.
        let perm = |m: &Matrix, k: f64| {
            let mut p = Matrix::zeros(m.rows(), 3);
            for i in 0..m.rows() {
                for (dst, src) in [(0, 2), (1, 0), (2, 1)] {
                    p.set(i, dst, k * m.get(i, src));
                }
            }
            p
        };
        let b = vec![perm(&a[0], 3.0), perm(&a[1], 0.5)];
        assert!((factor_match_score(&a, &b) - 1.0).abs() < 1e-12);
        let c = vec![Matrix::random(6, 3, 8), Matrix::random(5, 3, 9)];
        assert!(factor_match_score(&a, &c) < 0.99);
    }
}
