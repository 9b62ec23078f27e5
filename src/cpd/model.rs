//! What a CP-ALS run produces: the fitted [`CpModel`] with its per-iteration [`IterStats`],
//! its `.npy` files, and the seeded [`initial_factors`] a run starts from.

use crate::error::Result;
use crate::io::npy;
use crate::matrix::Matrix;
use crate::mttkrp::MttkrpRun;
use rand::{Rng, SeedableRng};
use std::path::Path;

/// One iteration's outcome and cost.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct IterStats {
    /// 0-based.
    pub iter: usize,
    pub fit: f64,
    /// `fit - previous fit`; `None` on the first iteration.
    pub delta_fit: Option<f64>,
    /// Wall time of the whole iteration.
    pub seconds: f64,
    /// Of which in the N MTTKRP calls.
    pub mttkrp_seconds: f64,
    /// The rest: Hadamard products, solves, normalization, Grams, fit.
    pub rest_seconds: f64,
    /// Modes whose system fell back to the pseudo-inverse.
    pub pinv_solves: usize,
}

impl IterStats {
    /// An iteration's record from its fit, the previous fit and its timings.
    pub fn timed(
        iter: usize,
        fit: f64,
        prev_fit: Option<f64>,
        seconds: f64,
        mttkrp_seconds: f64,
        pinv_solves: usize,
    ) -> IterStats {
        IterStats {
            iter,
            fit,
            delta_fit: prev_fit.map(|p| fit - p),
            seconds,
            mttkrp_seconds,
            rest_seconds: (seconds - mttkrp_seconds).max(0.0),
            pinv_solves,
        }
    }
}

/// The CP fit `1 - ||X - M|| / ||X||` from `||X||^2`, `||M||^2` and `<X, M>` (the residual
/// clamped at 0 against rounding); a non-finite fit is an error naming the iteration.
pub fn fit_from_norms(iter: usize, norm_x_sq: f64, model_sq: f64, inner: f64) -> Result<f64> {
    let residual_sq = norm_x_sq + model_sq - 2.0 * inner;
    let fit = 1.0 - residual_sq.max(0.0).sqrt() / norm_x_sq.sqrt();
    if fit.is_finite() {
        Ok(fit)
    } else {
        Err(crate::error::AltoError::CpdNumerical(format!(
            "iteration {iter}: the fit is {fit} (the factors diverged)"
        )))
    }
}

/// The fit trajectory as `alto cpd` prints it: a header, one line per iteration, and the
/// final fit with why the run stopped. Shared by every front end that runs CP-ALS, so
/// their outputs compare line for line.
pub fn write_fit_trajectory(out: &mut String, history: &[IterStats], converged: bool) {
    use std::fmt::Write;
    let _ = writeln!(
        out,
        "\niter  fit           delta fit     total ms   MTTKRP ms  rest ms"
    );
    for it in history {
        let delta = it
            .delta_fit
            .map_or_else(|| "-".to_string(), |d| format!("{d:+.3e}"));
        let pinv = if it.pinv_solves > 0 {
            format!("  ({} pseudo-inverse solves)", it.pinv_solves)
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "{:<5} {:<13.10} {:<13} {:<10.3} {:<10.3} {:<8.3}{}",
            it.iter + 1,
            it.fit,
            delta,
            it.seconds * 1e3,
            it.mttkrp_seconds * 1e3,
            it.rest_seconds * 1e3,
            pinv
        );
    }
    let why = if converged {
        "|delta fit| < tol"
    } else {
        "iteration cap"
    };
    let final_fit = history.last().map_or(f64::NAN, |h| h.fit);
    let _ = writeln!(
        out,
        "\nfinal fit {:.10} after {} iterations ({why})",
        final_fit,
        history.len()
    );
}

/// A fitted CP model and how the fit went.
#[derive(Clone, Debug)]
pub struct CpModel {
    /// Component weights (R).
    pub lambda: Vec<f64>,
    /// `I_n x R` factors with normalized columns.
    pub factors: Vec<Matrix>,
    /// One entry per iteration run; the fit history is `history[k].fit`.
    pub history: Vec<IterStats>,
    /// True when the run stopped on `|delta fit| < tol` rather than at the cap.
    pub converged: bool,
    /// `normX^2`: sum of squared values of the (duplicate-merged) tensor.
    pub norm_x_sq: f64,
    /// What the MTTKRP of each mode ran (strategy, kernel, decoder).
    pub mttkrp_runs: Vec<MttkrpRun>,
    /// The row kernel of the non-MTTKRP passes ([`RowKernel::name`]).
    pub row_kernel: String,
}

impl CpModel {
    pub fn rank(&self) -> usize {
        self.lambda.len()
    }
    /// The fit after each iteration.
    pub fn fits(&self) -> Vec<f64> {
        self.history.iter().map(|s| s.fit).collect()
    }
    /// The fit after the last iteration.
    pub fn final_fit(&self) -> f64 {
        self.history.last().map_or(f64::NAN, |s| s.fit)
    }
    /// The model's value at a (0-based) coordinate: `sum_r lambda_r prod_n U_n(i_n, r)`.
    pub fn entry(&self, coord: &[u64]) -> f64 {
        (0..self.rank())
            .map(|r| {
                self.factors
                    .iter()
                    .zip(coord)
                    .fold(self.lambda[r], |p, (u, &i)| p * u.get(i as usize, r))
            })
            .sum()
    }
    /// Writes `dir/lambda.npy` (1-D, R) and `dir/factor<n>.npy` (`I_n x R`), f64, C order.
    pub fn write_npy(&self, dir: &Path) -> Result<()> {
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

/// The seeded initial factors: entries uniform in [0, 1), drawn from one PCG stream seeded
/// with `seed`, mode 0 first, each factor row-major. Independent of the thread count.
pub fn initial_factors(dims: &[u64], rank: usize, seed: u64) -> Vec<Matrix> {
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
    dims.iter()
        .map(|&d| {
            let data = (0..d as usize * rank)
                .map(|_| rng.random::<f64>())
                .collect();
            Matrix::from_vec(d as usize, rank, data).expect("sized to d x rank")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initial_factors_are_seeded() {
        let a = initial_factors(&[3, 4], 2, 7);
        assert_eq!(a, initial_factors(&[3, 4], 2, 7));
        assert_ne!(a, initial_factors(&[3, 4], 2, 8));
        assert_eq!((a[1].rows(), a[1].cols()), (4, 2));
        assert!(a
            .iter()
            .all(|m| m.as_slice().iter().all(|&x| (0.0..1.0).contains(&x))));
    }
}
