//! The R x R normal equations of one mode, `U_n V = Y`: Cholesky when V is numerically
//! positive definite ([`NOT_PD_RTOL`]), else the minimum-norm pseudo-inverse from the
//! symmetric eigendecomposition.

use crate::error::{AltoError, Result};
use nalgebra::DMatrix;

/// V counts as not positive definite when Cholesky fails or a pivot `L_jj^2` is at most
/// `NOT_PD_RTOL * R * max_j V_jj`: singular to within rounding (rounding alone leaves pivots of
/// a few `R * eps * max V_jj`, so a bare `> 0` test lets singular systems through) or so
/// ill-conditioned (about 1e11 and beyond) that the eigen-based pseudo-inverse is the safer
/// solve. Either way the pseudo-inverse path takes over.
pub const NOT_PD_RTOL: f64 = 1e-12;

/// How the R x R system of one mode was solved.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SolveKind {
    Cholesky,
    /// V was not numerically positive definite: minimum-norm solve through the pseudo-inverse.
    Pinv,
}

/// The R x R normal-equation solver of one mode: `W = V^-1` from the Cholesky factor, or the
/// pseudo-inverse `V^+`, row-major, for the row kernels' `u = y W`. Buffers are reused across
/// calls (the Cholesky path allocates nothing).
pub struct NormalSolver {
    pub(super) rank: usize,
    /// Handed to nalgebra's Cholesky and taken back.
    mat: DMatrix<f64>,
    /// Set to the identity and solved in place: `V^-1`, column-major (symmetric).
    inv: DMatrix<f64>,
    /// `W`, row-major.
    pub(super) w: Vec<f64>,
    pub(super) kind: SolveKind,
}

impl NormalSolver {
    pub fn new(rank: usize) -> Self {
        NormalSolver {
            rank,
            mat: DMatrix::zeros(rank, rank),
            inv: DMatrix::zeros(rank, rank),
            w: vec![0.0; rank * rank],
            kind: SolveKind::Cholesky,
        }
    }

    /// Factors the symmetric `v` (row-major R x R) into [`Self::w`].
    pub fn factor(&mut self, v: &[f64], mode: usize) -> Result<SolveKind> {
        let r = self.rank;
        if v.iter().any(|x| !x.is_finite()) {
            return Err(AltoError::CpdNumerical(format!(
                "mode {mode}: the Hadamard product of the Gram matrices holds non-finite values \
                 (the factors diverged)"
            )));
        }
        let mut m = std::mem::replace(&mut self.mat, DMatrix::zeros(0, 0));
        if m.nrows() != r {
            m = DMatrix::zeros(r, r);
        }
        m.as_mut_slice().copy_from_slice(v); // symmetric: row- and column-major agree
        let max_diag = (0..r).map(|j| v[j * r + j]).fold(0.0f64, f64::max);
        let floor = NOT_PD_RTOL * r as f64 * max_diag;
        if let Some(ch) = nalgebra::linalg::Cholesky::new(m) {
            let l = ch.l_dirty();
            let pd = max_diag > 0.0 && (0..r).all(|j| l[(j, j)] * l[(j, j)] > floor);
            if pd {
                self.inv.fill_with_identity();
                ch.solve_mut(&mut self.inv);
                let inv = self.inv.as_slice(); // column-major; row-major W is its transpose
                for i in 0..r {
                    for j in 0..r {
                        self.w[i * r + j] = inv[i * r + j];
                    }
                }
                self.mat = ch.unpack_dirty();
                self.kind = SolveKind::Cholesky;
                return Ok(self.kind);
            }
            self.mat = ch.unpack_dirty();
        }
        // Not (numerically) positive definite: minimum-norm solve through the pseudo-inverse,
        // from the symmetric eigendecomposition V = Q diag(l) Q^T (for a symmetric matrix the
        // singular values are |l|): V^+ = sum over |l_k| > R eps max|l| of q_k q_k^T / l_k.
        let vm = DMatrix::from_row_slice(r, r, v);
        let eig = nalgebra::linalg::SymmetricEigen::try_new(vm, f64::EPSILON, 1000 * r.max(10))
            .ok_or_else(|| {
                AltoError::CpdNumerical(format!(
                    "mode {mode}: the eigendecomposition of the {r} x {r} system did not converge"
                ))
            })?;
        let lmax = eig.eigenvalues.iter().fold(0.0f64, |m, l| m.max(l.abs()));
        let cut = r as f64 * f64::EPSILON * lmax;
        self.w.fill(0.0);
        for (k, &l) in eig.eigenvalues.iter().enumerate() {
            if l.abs() <= cut {
                continue;
            }
            let q = eig.eigenvectors.column(k);
            for i in 0..r {
                let qi = q[i] / l;
                for j in 0..r {
                    self.w[i * r + j] += qi * q[j];
                }
            }
        }
        self.kind = SolveKind::Pinv;
        Ok(self.kind)
    }

    /// The row-major `W` of the last [`Self::factor`]: a row of `U_n` is `y W` (public for
    /// the distributed CP-ALS of `alto-mpi`, which solves only the rows a rank owns).
    pub fn w(&self) -> &[f64] {
        &self.w
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpd::rows::{self, RowKernel};
    use crate::matrix::Matrix;

    fn solver_for(v: &[f64], r: usize) -> NormalSolver {
        let mut s = NormalSolver::new(r);
        s.factor(v, 0).unwrap();
        s
    }

    /// `u = y V^-1` for one row through the portable runtime-rank kernel.
    fn solve_one(s: &NormalSolver, y: &[f64], u: &mut [f64]) {
        let r = s.rank;
        let k = RowKernel::new(rows::RowIsa::Portable, r, false).unwrap();
        k.solve_block(&s.w, y, u, &mut vec![0.0; r * r], None);
    }

    #[test]
    fn cholesky_solve_matches_the_system() {
        // V = A^T A + I for a fixed A, y arbitrary: check V u = y.
        let r = 5;
        let a = Matrix::random(7, r, 3);
        let mut v = vec![0.0; r * r];
        RowKernel::best(r).gram_block(a.as_slice(), &mut v);
        for j in 0..r {
            v[j * r + j] += 1.0;
        }
        let s = solver_for(&v, r);
        assert_eq!(s.kind, SolveKind::Cholesky);
        let y = [0.3, -1.0, 2.0, 0.5, 4.0];
        let mut u = [0.0; 5];
        solve_one(&s, &y, &mut u);
        for i in 0..r {
            let vu: f64 = (0..r).map(|j| v[i * r + j] * u[j]).sum();
            assert!((vu - y[i]).abs() < 1e-12, "{vu} vs {}", y[i]);
        }
    }

    #[test]
    fn singular_systems_take_the_pseudo_inverse() {
        // Rank-1 V = w w^T: the minimum-norm solution of V u = y for y in range(V) is
        // u = w (w.y) / |w|^4.
        let r = 3;
        let w = [1.0, 2.0, 2.0];
        let v: Vec<f64> = (0..r * r).map(|k| w[k / r] * w[k % r]).collect();
        let s = solver_for(&v, r);
        assert_eq!(s.kind, SolveKind::Pinv);
        let y = [3.0, 6.0, 6.0]; // = 3 w
        let mut u = [0.0; 3];
        solve_one(&s, &y, &mut u);
        let wy: f64 = w.iter().zip(&y).map(|(a, b)| a * b).sum();
        for i in 0..r {
            assert!((u[i] - w[i] * wy / 81.0).abs() < 1e-12, "{u:?}");
        }
        // Zero and indefinite matrices too.
        assert_eq!(solver_for(&[0.0; 4], 2).kind, SolveKind::Pinv);
        assert_eq!(solver_for(&[1.0, 2.0, 2.0, 1.0], 2).kind, SolveKind::Pinv);
        let mut s = NormalSolver::new(2);
        assert!(s.factor(&[f64::NAN, 0.0, 0.0, 1.0], 1).is_err());
        // And back to Cholesky with the same buffers.
        s.factor(&[2.0, 0.0, 0.0, 1.0], 0).unwrap();
        assert_eq!(s.kind, SolveKind::Cholesky);
    }

    #[test]
    fn pseudo_inverse_meets_the_penrose_conditions() {
        // V = A^T A with A k x r, k < r: singular PSD; P must satisfy V P V = V, P V P = P.
        for (r, k, seed) in [(3, 1, 1), (4, 2, 2), (8, 5, 3), (16, 9, 4), (16, 15, 5)] {
            let a = Matrix::random(k, r, seed);
            let mut v = vec![0.0; r * r];
            RowKernel::new(rows::RowIsa::Portable, r, false)
                .unwrap()
                .gram_block(a.as_slice(), &mut v);
            let s = solver_for(&v, r);
            assert_eq!(s.kind, SolveKind::Pinv, "r {r} k {k}");
            let mul = |x: &[f64], y: &[f64]| -> Vec<f64> {
                (0..r * r)
                    .map(|ij| (0..r).map(|l| x[ij / r * r + l] * y[l * r + ij % r]).sum())
                    .collect()
            };
            let vpv = mul(&mul(&v, &s.w), &v);
            let pvp = mul(&mul(&s.w, &v), &s.w);
            let vmax = v.iter().fold(0.0f64, |m, x| m.max(x.abs()));
            let pmax = s.w.iter().fold(0.0f64, |m, x| m.max(x.abs()));
            for ij in 0..r * r {
                assert!((vpv[ij] - v[ij]).abs() < 1e-9 * vmax, "VPV r {r} k {k}");
                assert!((pvp[ij] - s.w[ij]).abs() < 1e-9 * pmax, "PVP r {r} k {k}");
            }
        }
    }
}
