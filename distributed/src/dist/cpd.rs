//! Distributed CP-ALS, the loop of `alto::cpd::als` with the rows split by owner: each rank
//! solves the rows it owns, Gram matrices and column norms are allreduced (R x R and R), the
//! fit's inner product is allreduced, and the updated rows go back to the windows that read
//! them. From the same initial factors it follows the single-process trajectory to rounding.

use super::mttkrp::DistMttkrp;
use crate::error::{DistError, Result};
use alto::cpd::model::fit_from_norms;
use alto::cpd::{initial_factors, validate, CpdOptions, IterStats, NormalSolver, SolveKind};
use alto::mttkrp::MttkrpRun;
use alto::{AltoError, Matrix};
use std::time::Instant;

/// What a distributed run fitted, and what it communicated.
pub struct DistModel {
    pub lambda: Vec<f64>,
    /// The owned rows of each factor (row-major, `owned(n)` rows x R).
    pub owned: Vec<Vec<f64>>,
    pub history: Vec<IterStats>,
    pub converged: bool,
    pub norm_x_sq: f64,
    pub runs: Vec<Option<MttkrpRun>>,
    /// Bytes this rank sent per mode in one iteration: summing partial rows, then sending
    /// updated rows back to the windows.
    pub bytes_per_mode: Vec<(u64, u64)>,
    /// Bytes this rank sent per iteration in R x R / R allreduces (Grams, norms, fit).
    pub small_allreduce_bytes: u64,
}

/// `U^T U` of row-major rows, added into `g`.
fn add_gram(rows: &[f64], r: usize, g: &mut [f64]) {
    for u in rows.chunks_exact(r) {
        for i in 0..r {
            for j in 0..r {
                g[i * r + j] += u[i] * u[j];
            }
        }
    }
}

/// CP-ALS of `opts` from [`initial_factors`]`(dims, rank, seed)`, over every rank.
pub fn dist_cp_als(engine: &mut DistMttkrp<'_>, opts: &CpdOptions) -> Result<DistModel> {
    let comm = engine.comm;
    let t = engine.t;
    let r = opts.rank;
    let order = t.dims.len();
    validate(&t.dims, t.nnz.min(usize::MAX as u64) as usize, opts)
        .map_err(DistError::collective)?;
    let norm_x_sq = t.norm_sq;
    if !(norm_x_sq > 0.0 && norm_x_sq.is_finite()) {
        return Err(DistError::collective(AltoError::InvalidArgument(format!(
            "the tensor's squared norm is {norm_x_sq}: CP-ALS needs a nonzero, finite norm"
        ))));
    }
    // The same initial factors as `alto cpd` (drawn whole, then cut to windows and owned
    // rows: the one moment a rank holds whole factor matrices).
    let (mut windows, mut owned) = {
        let init = initial_factors(&t.dims, r, opts.seed);
        let owned: Vec<Vec<f64>> = (0..order)
            .map(|n| {
                let o = engine.owned(n);
                init[n].as_slice()[o.start as usize * r..o.end as usize * r].to_vec()
            })
            .collect();
        (engine.windows_of(&init), owned)
    };
    let mut grams = vec![vec![0.0; r * r]; order];
    for (g, u) in grams.iter_mut().zip(&owned) {
        add_gram(u, r, g);
        comm.sum_f64(g);
    }
    let mut solver = NormalSolver::new(r);
    let mut lambda = vec![1.0; r];
    let mut history = Vec::new();
    let mut runs = vec![None; order];
    let mut bytes_per_mode = vec![(0, 0); order];
    let small_allreduce_bytes = (order * (r * r + r) + r) as u64 * 8;
    let mut converged = false;
    let mut prev: Option<f64> = None;
    for iter in 0..opts.max_iters {
        let start = Instant::now();
        let mut mttkrp_s = 0.0;
        let mut pinv_solves = 0;
        let mut inner = 0.0;
        for n in 0..order {
            let t0 = Instant::now();
            let (y, ran, sent) = engine.run(&windows, n)?;
            mttkrp_s += t0.elapsed().as_secs_f64();
            if iter == 0 {
                runs[n] = ran;
            }
            let mut v = vec![1.0; r * r];
            for (_, g) in grams.iter().enumerate().filter(|&(m, _)| m != n) {
                v.iter_mut().zip(g).for_each(|(a, b)| *a *= b);
            }
            let kind = solver.factor(&v, n).map_err(DistError::collective)?;
            pinv_solves += usize::from(kind == SolveKind::Pinv);
            let w = solver.w();
            let u = &mut owned[n];
            let mut g = vec![0.0; r * r];
            let mut colmax = vec![0.0f64; r];
            for (urow, yrow) in u.chunks_exact_mut(r).zip(y.chunks_exact(r)) {
                for j in 0..r {
                    urow[j] = (0..r).map(|k| yrow[k] * w[k * r + j]).sum();
                    colmax[j] = colmax[j].max(urow[j].abs());
                }
            }
            add_gram(u, r, &mut g);
            comm.sum_f64(&mut g);
            comm.max_f64(&mut colmax);
            let mut scale = vec![0.0; r];
            for j in 0..r {
                let l = if iter == 0 {
                    g[j * r + j].max(0.0).sqrt()
                } else {
                    colmax[j].max(1.0)
                };
                lambda[j] = l;
                scale[j] = if l > 0.0 { 1.0 / l } else { 1.0 };
            }
            for i in 0..r {
                for j in 0..r {
                    g[i * r + j] *= scale[i] * scale[j];
                }
            }
            grams[n] = g;
            for urow in u.chunks_exact_mut(r) {
                urow.iter_mut().zip(&scale).for_each(|(x, s)| *x *= s);
            }
            if n + 1 == order {
                let mut acc = vec![0.0; r];
                for (urow, yrow) in u.chunks_exact(r).zip(y.chunks_exact(r)) {
                    for j in 0..r {
                        acc[j] += urow[j] * yrow[j];
                    }
                }
                comm.sum_f64(&mut acc);
                inner = acc.iter().zip(&lambda).map(|(a, l)| a * l).sum();
            }
            let (window, back) = engine.to_window(&owned[n], n)?;
            windows[n] = window;
            bytes_per_mode[n] = (sent, back);
        }
        let mut model_sq = 0.0;
        for i in 0..r {
            for j in 0..r {
                model_sq += grams
                    .iter()
                    .fold(lambda[i] * lambda[j], |p, g| p * g[i * r + j]);
            }
        }
        let fit =
            fit_from_norms(iter, norm_x_sq, model_sq, inner).map_err(DistError::collective)?;
        let seconds = start.elapsed().as_secs_f64();
        let stats = IterStats::timed(iter, fit, prev, seconds, mttkrp_s, pinv_solves);
        let delta_fit = stats.delta_fit;
        history.push(stats);
        if delta_fit.is_some_and(|d| d.abs() < opts.tol) {
            converged = true;
            break;
        }
        prev = Some(fit);
    }
    Ok(DistModel {
        lambda,
        owned,
        history,
        converged,
        norm_x_sq,
        runs,
        bytes_per_mode,
        small_allreduce_bytes,
    })
}

/// The full factors on rank 0 (`None` elsewhere), from every rank's owned rows.
pub fn gather_factors(engine: &DistMttkrp<'_>, model: &DistModel) -> Result<Option<Vec<Matrix>>> {
    let mut out = Vec::new();
    for (n, u) in model.owned.iter().enumerate() {
        if let Some(m) = engine.gather(u, n)? {
            out.push(m);
        }
    }
    Ok((engine.comm.rank() == 0).then_some(out))
}
