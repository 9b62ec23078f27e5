//! The multiplicative-update loop of CP-APR (Chi and Kolda 2012, Tensor Toolbox's `'mu'`).

use super::loglik::log_likelihood;
use super::model::{AprIterStats, AprModel};
use super::options::{check_counts, validate, AprOptions};
use super::phi::PhiEngine;
use crate::cpd::initial_factors;
use crate::error::{AltoError, Result};
use crate::format::AnyAlto;
use crate::matrix::Matrix;
use rayon::prelude::*;
use std::ops::ControlFlow;
use std::time::Instant;

/// Rows per task of the row passes (kappa, KKT, update, normalization).
const ROWS_PER_TASK: usize = 4096;

/// What [`cp_apr_observed`] calls after every outer iteration; `Break` stops the run there.
pub type AprObserver<'o> = dyn FnMut(&AprIterStats) -> ControlFlow<()> + Send + 'o;

/// CP-APR from [`initial_factors`]`(dims, rank, seed)` (uniform in [0, 1)), on `pool`.
pub fn cp_apr(t: &AnyAlto, opts: &AprOptions, pool: &rayon::ThreadPool) -> Result<AprModel> {
    validate(t.dims(), t.nnz(), opts)?;
    let init = initial_factors(t.dims(), opts.rank, opts.seed);
    cp_apr_observed(t, init, opts, pool, &mut |_| ControlFlow::Continue(()))
}

/// CP-APR from the given nonnegative initial factors (one `I_n x rank` matrix per mode; each
/// column is normalized to sum 1, its sum moving into lambda), calling `observer` after every
/// outer iteration.
pub fn cp_apr_observed(
    t: &AnyAlto,
    init: Vec<Matrix>,
    opts: &AprOptions,
    pool: &rayon::ThreadPool,
    observer: &mut AprObserver<'_>,
) -> Result<AprModel> {
    validate(t.dims(), t.nnz(), opts)?;
    check_counts(t.values())?;
    let bad = |reason: String| AltoError::AprOption {
        option: "init",
        reason,
    };
    if init.len() != t.order() {
        return Err(bad(format!(
            "{} initial factors for an order-{} tensor",
            init.len(),
            t.order()
        )));
    }
    for (n, (u, &d)) in init.iter().zip(t.dims()).enumerate() {
        if u.rows() as u64 != d || u.cols() != opts.rank {
            return Err(bad(format!(
                "factor {n} is {} x {}, expected {d} x {}",
                u.rows(),
                u.cols(),
                opts.rank
            )));
        }
        if u.as_slice().iter().any(|x| !(x.is_finite() && *x >= 0.0)) {
            return Err(bad(format!(
                "factor {n} holds a negative or non-finite value"
            )));
        }
    }
    let mut lambda = vec![1.0; opts.rank];
    let mut factors = init;
    for (n, u) in factors.iter_mut().enumerate() {
        let sums = column_sums(u);
        if let Some(r) = sums.iter().position(|&s| s <= 0.0) {
            return Err(bad(format!("column {r} of factor {n} is zero")));
        }
        scale_columns(u, &sums.iter().map(|s| 1.0 / s).collect::<Vec<_>>());
        for (l, s) in lambda.iter_mut().zip(&sums) {
            *l *= s;
        }
    }
    pool.install(|| run(t, factors, lambda, opts, pool, observer))
}

fn column_sums(u: &Matrix) -> Vec<f64> {
    let r = u.cols();
    let mut s = vec![0.0; r];
    for row in u.as_slice().chunks_exact(r.max(1)) {
        for (a, x) in s.iter_mut().zip(row) {
            *a += x;
        }
    }
    s
}

fn scale_columns(u: &mut Matrix, scale: &[f64]) {
    let r = u.cols();
    u.as_mut_slice()
        .par_chunks_mut(ROWS_PER_TASK * r.max(1))
        .for_each(|rows| {
            for row in rows.chunks_exact_mut(r) {
                for (x, s) in row.iter_mut().zip(scale) {
                    *x *= s;
                }
            }
        });
}

/// `max |min(B, 1 - Phi)|` over all entries.
fn kkt_violation(b: &Matrix, phi: &Matrix) -> f64 {
    b.as_slice()
        .par_chunks(ROWS_PER_TASK * b.cols())
        .zip(phi.as_slice().par_chunks(ROWS_PER_TASK * b.cols()))
        .map(|(b, p)| {
            b.iter()
                .zip(p)
                .fold(0.0f64, |m, (&x, &y)| m.max(x.min(1.0 - y).abs()))
        })
        .reduce(|| 0.0, f64::max)
}

/// The loop (inside the pool); `factors` have unit column sums, `lambda` the weights.
fn run(
    t: &AnyAlto,
    mut factors: Vec<Matrix>,
    mut lambda: Vec<f64>,
    opts: &AprOptions,
    pool: &rayon::ThreadPool,
    observer: &mut AprObserver<'_>,
) -> Result<AprModel> {
    let rank = opts.rank;
    let order = t.order();
    let mut engine = PhiEngine::new(t, rank, opts.phi)?;
    let mut phis: Vec<Matrix> = t
        .dims()
        .iter()
        .map(|&d| Matrix::zeros(d as usize, rank))
        .collect();
    let mut history = Vec::new();
    let mut phi_runs = Vec::with_capacity(order);
    let mut converged = false;
    for iter in 0..opts.max_iters {
        let start = Instant::now();
        let mut phi_s = 0.0;
        let mut inner_total = 0;
        let mut kkt_max = 0.0f64;
        let mut inadmissible = 0;
        let mut all_first = true;
        for n in 0..order {
            // Inadmissible zeros: entries stuck at zero although Phi > 1 says they should grow.
            if iter > 0 && opts.kappa > 0.0 {
                let (kappa, ktol) = (opts.kappa, opts.kappa_tol);
                inadmissible += factors[n]
                    .as_mut_slice()
                    .par_chunks_mut(ROWS_PER_TASK * rank)
                    .zip(phis[n].as_slice().par_chunks(ROWS_PER_TASK * rank))
                    .map(|(a, p)| {
                        let mut k = 0;
                        for (x, &y) in a.iter_mut().zip(p) {
                            if *x < ktol && y > 1.0 {
                                *x += kappa;
                                k += 1;
                            }
                        }
                        k
                    })
                    .sum::<usize>();
            }
            // B = A_n diag(lambda), held in factors[n] (Phi does not read the target factor).
            scale_columns(&mut factors[n], &lambda);
            let t0 = Instant::now();
            engine.prepare(&factors, n, pool)?;
            phi_s += t0.elapsed().as_secs_f64();
            let mut kkt = 0.0;
            for inner in 0..opts.inner_iters {
                inner_total += 1;
                let t0 = Instant::now();
                let run = engine.phi(&factors, &factors[n], n, opts.epsilon, &mut phis[n], pool)?;
                phi_s += t0.elapsed().as_secs_f64();
                if iter == 0 && inner == 0 {
                    phi_runs.push(run);
                }
                kkt = kkt_violation(&factors[n], &phis[n]);
                if kkt < opts.tol {
                    break;
                }
                all_first = false;
                let r = rank;
                factors[n]
                    .as_mut_slice()
                    .par_chunks_mut(ROWS_PER_TASK * r)
                    .zip(phis[n].as_slice().par_chunks(ROWS_PER_TASK * r))
                    .for_each(|(b, p)| {
                        for (x, y) in b.iter_mut().zip(p) {
                            *x *= y;
                        }
                    });
            }
            kkt_max = kkt_max.max(kkt);
            // lambda = column sums of B; A_n = B with unit column sums (a zero column stays).
            let sums = column_sums(&factors[n]);
            let inv: Vec<f64> = sums
                .iter()
                .map(|&s| if s > 0.0 { 1.0 / s } else { 1.0 })
                .collect();
            scale_columns(&mut factors[n], &inv);
            lambda = sums;
        }
        let loglik = log_likelihood(t, &lambda, &factors, opts.phi.decode, pool)?;
        if loglik.is_nan() {
            return Err(AltoError::CpdNumerical(format!(
                "CP-APR iteration {iter}: the log-likelihood is NaN"
            )));
        }
        let seconds = start.elapsed().as_secs_f64();
        let stats = AprIterStats {
            iter,
            loglik,
            kkt: kkt_max,
            inner_iters: inner_total,
            inadmissible,
            seconds,
            phi_seconds: phi_s,
            rest_seconds: (seconds - phi_s).max(0.0),
        };
        let stop = observer(&stats).is_break();
        history.push(stats);
        if all_first {
            converged = true;
            break;
        }
        if stop {
            break;
        }
    }
    Ok(AprModel {
        lambda,
        factors,
        history,
        converged,
        phi_runs,
    })
}
