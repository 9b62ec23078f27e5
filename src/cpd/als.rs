//! The ALS loop: [`cp_als`] and [`cp_als_from`] check their inputs, then one [`Als`] state
//! runs the iterations (MTTKRP, solve, normalize, Gram, fit) on the caller's pool.
//! [`cp_als_observed`] also shows each iteration to an observer, which may stop the run
//! (progress output, Ctrl-C in the Python bindings).

use super::initial_factors;
use super::model::{fit_from_norms, CpModel, IterStats};
use super::options::{validate, CpdOptions};
use super::rows::RowKernel;
use super::solve::{NormalSolver, SolveKind};
use crate::error::{AltoError, Result};
use crate::format::AnyAlto;
use crate::matrix::Matrix;
use crate::mttkrp::{mttkrp, Workspace};
use rayon::prelude::*;
use std::ops::ControlFlow;
use std::time::Instant;

/// Row blocks per thread in the parallel passes (load balance vs. partials to reduce).
const BLOCKS_PER_THREAD: usize = 4;
/// Fewest rows worth a block of their own.
const MIN_BLOCK_ROWS: usize = 64;
/// Bytes the per-block partial sums (`R^2 + R` each) may take; caps the block count at very
/// large ranks (at R = 16 it never binds).
const PARTIALS_BUDGET: usize = 64 << 20;

/// CP-ALS from [`initial_factors`]`(dims, rank, seed)`, on `pool`.
pub fn cp_als(t: &AnyAlto, opts: &CpdOptions, pool: &rayon::ThreadPool) -> Result<CpModel> {
    validate(t.dims(), t.nnz(), opts)?;
    let init = initial_factors(t.dims(), opts.rank, opts.seed);
    cp_als_from(t, init, opts, pool)
}

/// CP-ALS from the given initial factors (one `I_n x rank` matrix per mode; the first mode's
/// is only a placeholder, as mode 0 is solved first), on `pool`.
pub fn cp_als_from(
    t: &AnyAlto,
    init: Vec<Matrix>,
    opts: &CpdOptions,
    pool: &rayon::ThreadPool,
) -> Result<CpModel> {
    cp_als_observed(t, init, opts, pool, &mut |_| ControlFlow::Continue(()))
}

/// What [`cp_als_observed`] calls after every iteration, on a worker of the pool, with that
/// iteration's stats; `Break` stops the run there.
pub type IterObserver<'o> = dyn FnMut(&IterStats) -> ControlFlow<()> + Send + 'o;

/// [`cp_als_from`] that calls `observer` after every iteration. When the observer returns
/// `ControlFlow::Break(())` the run stops and returns the model as it stands after that
/// iteration, with `converged` false (unless that iteration also met the tolerance).
pub fn cp_als_observed(
    t: &AnyAlto,
    init: Vec<Matrix>,
    opts: &CpdOptions,
    pool: &rayon::ThreadPool,
    observer: &mut IterObserver<'_>,
) -> Result<CpModel> {
    validate(t.dims(), t.nnz(), opts)?;
    if init.len() != t.order() {
        return Err(AltoError::CpdOption {
            option: "init",
            reason: format!(
                "{} initial factors for an order-{} tensor",
                init.len(),
                t.order()
            ),
        });
    }
    for (n, (u, &d)) in init.iter().zip(t.dims()).enumerate() {
        if u.rows() as u64 != d || u.cols() != opts.rank {
            return Err(AltoError::CpdOption {
                option: "init",
                reason: format!(
                    "factor {n} is {} x {}, expected {d} x {}",
                    u.rows(),
                    u.cols(),
                    opts.rank
                ),
            });
        }
        if u.as_slice().iter().any(|x| !x.is_finite()) {
            return Err(AltoError::CpdOption {
                option: "init",
                reason: format!("factor {n} holds a non-finite value"),
            });
        }
    }
    pool.install(|| Als::new(t, init, opts, pool).run(observer))
}

/// Rows per block so that `rows` splits into at most `max_blocks` blocks of at least
/// [`MIN_BLOCK_ROWS`] rows (one block when there are fewer).
fn block_rows(rows: usize, max_blocks: usize) -> usize {
    let blocks = rows.div_ceil(MIN_BLOCK_ROWS).clamp(1, max_blocks.max(1));
    rows.div_ceil(blocks).max(1)
}

/// Column normalization of one iteration.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Norm {
    Two,
    MaxAbs,
}

/// The state of one CP-ALS run.
struct Als<'a> {
    t: &'a AnyAlto,
    opts: &'a CpdOptions,
    pool: &'a rayon::ThreadPool,
    rank: usize,
    dims: Vec<usize>,
    factors: Vec<Matrix>,
    /// `G_m`, row-major R x R each.
    grams: Vec<Vec<f64>>,
    lambda: Vec<f64>,
    /// The MTTKRP output, reshaped per mode inside a capacity of `max I_n x R`.
    y: Matrix,
    ws: Workspace,
    solver: NormalSolver,
    /// Hadamard product V of the current mode.
    v: Vec<f64>,
    /// Per-block partial sums: `R * R` Gram then `R` column norms.
    partials: Vec<f64>,
    /// Column max-abs, then column scales `1 / lambda_r` (R).
    scale: Vec<f64>,
    /// Per-column inner products of the fit (R).
    acc: Vec<f64>,
    max_blocks: usize,
    kernel: RowKernel,
}

impl<'a> Als<'a> {
    fn new(
        t: &'a AnyAlto,
        factors: Vec<Matrix>,
        opts: &'a CpdOptions,
        pool: &'a rayon::ThreadPool,
    ) -> Self {
        let rank = opts.rank;
        let dims: Vec<usize> = t.dims().iter().map(|&d| d as usize).collect();
        let max_rows = dims.iter().copied().max().unwrap_or(0);
        let per_block = 8 * (rank * rank + rank);
        let max_blocks = (BLOCKS_PER_THREAD * pool.current_num_threads().max(1))
            .min((PARTIALS_BUDGET / per_block).max(1));
        Als {
            t,
            opts,
            pool,
            rank,
            grams: vec![vec![0.0; rank * rank]; dims.len()],
            lambda: vec![1.0; rank],
            y: Matrix::from_vec(0, rank, Vec::with_capacity(max_rows * rank)).expect("empty"),
            ws: Workspace::new(t, rank),
            solver: NormalSolver::new(rank),
            v: vec![0.0; rank * rank],
            partials: vec![0.0; max_blocks * (rank * rank + rank)],
            scale: vec![0.0; rank],
            acc: vec![0.0; rank],
            max_blocks,
            kernel: opts.row_kernel.unwrap_or_else(|| RowKernel::best(rank)),
            dims,
            factors,
        }
    }

    /// Reshapes the MTTKRP buffer to `rows x R` inside its capacity (no reallocation). Growing
    /// fills the new tail in parallel (the MTTKRP zeroes it again; safe Rust cannot skip it, and
    /// a serial fill would cost a long mode's whole output size on one thread).
    fn shape_y(&mut self, rows: usize) {
        if self.y.rows() == rows {
            return;
        }
        let mut data = std::mem::replace(&mut self.y, Matrix::zeros(0, 0)).into_vec();
        let len = rows * self.rank;
        if len > data.len() {
            let extra = len - data.len();
            data.par_extend(rayon::iter::repeat_n(0.0, extra));
        } else {
            data.truncate(len);
        }
        self.y = Matrix::from_vec(rows, self.rank, data).expect("sized to rows x rank");
    }

    /// `G_n = U_n^T U_n` from scratch (initial Grams), blocked over rows in parallel.
    fn gram(&mut self, n: usize) {
        let r = self.rank;
        let rows = self.dims[n];
        let br = block_rows(rows, self.max_blocks);
        let stride = r * r + r;
        let used = rows.div_ceil(br).max(1);
        let kernel = self.kernel;
        self.factors[n]
            .as_slice()
            .par_chunks(br * r)
            .zip(self.partials.par_chunks_mut(stride))
            .for_each(|(u, part)| {
                let g = &mut part[..r * r];
                g.fill(0.0);
                kernel.gram_block(u, g);
            });
        let g = &mut self.grams[n];
        g.fill(0.0);
        if rows == 0 {
            return;
        }
        for part in self.partials.chunks(stride).take(used) {
            for (a, &b) in g.iter_mut().zip(&part[..r * r]) {
                *a += b;
            }
        }
    }

    /// `V = hadamard over m != n of G_m`.
    fn hadamard(&mut self, n: usize) {
        self.v.fill(1.0);
        for (m, g) in self.grams.iter().enumerate() {
            if m != n {
                for (a, &b) in self.v.iter_mut().zip(g) {
                    *a *= b;
                }
            }
        }
    }

    /// Updates mode n from `self.y`: solve, normalize into lambda, Gram. Returns how the system
    /// was solved and, on request, `sum_i U_n(i, r) Y(i, r)` per column (after normalization).
    fn update(&mut self, n: usize, norm: Norm, want_inner: bool) -> Result<(SolveKind, f64)> {
        let r = self.rank;
        let rows = self.dims[n];
        self.hadamard(n);
        let kind = self.solver.factor(&self.v, n)?;

        // Pass 1: solve each row, accumulate the raw Gram and the column max-abs.
        let br = block_rows(rows, self.max_blocks);
        let stride = r * r + r;
        let used = rows.div_ceil(br).max(1);
        let w = &self.solver.w[..];
        let kernel = self.kernel;
        self.factors[n]
            .as_mut_slice()
            .par_chunks_mut(br * r)
            .zip(self.y.as_slice().par_chunks(br * r))
            .zip(self.partials.par_chunks_mut(stride))
            .for_each(|((u, y), part)| {
                part.fill(0.0);
                let (g, colmax) = part.split_at_mut(r * r);
                let colmax = (norm == Norm::MaxAbs).then_some(colmax);
                kernel.solve_block(w, y, u, g, colmax);
            });
        let colmax = &mut self.scale;
        colmax.fill(0.0);
        let g = &mut self.grams[n];
        g.fill(0.0);
        if rows > 0 {
            for part in self.partials.chunks(stride).take(used) {
                for (a, &b) in g.iter_mut().zip(&part[..r * r]) {
                    *a += b;
                }
                for (a, &b) in colmax.iter_mut().zip(&part[r * r..]) {
                    *a = f64::max(*a, b);
                }
            }
        }

        // lambda and the column scales; the Gram of the scaled columns is D G D.
        let scale = colmax;
        for j in 0..r {
            let l = match norm {
                Norm::Two => g[j * r + j].max(0.0).sqrt(),
                Norm::MaxAbs => scale[j].max(1.0),
            };
            self.lambda[j] = l;
            scale[j] = if l > 0.0 { 1.0 / l } else { 1.0 };
        }
        for i in 0..r {
            for j in 0..r {
                g[i * r + j] *= scale[i] * scale[j];
            }
        }

        // Pass 2: scale the columns; for the last mode, the fit's inner product.
        let scale_ref = &self.scale;
        self.factors[n]
            .as_mut_slice()
            .par_chunks_mut(br * r)
            .zip(self.y.as_slice().par_chunks(br * r))
            .zip(self.partials.par_chunks_mut(stride))
            .for_each(|((u, y), part)| {
                let acc = &mut part[..r];
                acc.fill(0.0);
                kernel.scale_block(scale_ref, u, y, want_inner.then_some(acc));
            });
        let mut inner = 0.0;
        if want_inner && rows > 0 {
            let acc = &mut self.acc;
            acc.fill(0.0);
            for part in self.partials.chunks(stride).take(used) {
                for (a, &b) in acc.iter_mut().zip(&part[..r]) {
                    *a += b;
                }
            }
            inner = acc.iter().zip(&self.lambda).map(|(a, l)| a * l).sum();
        }
        Ok((kind, inner))
    }

    /// `||model||^2 = sum_{r,s} lambda_r lambda_s prod_m G_m(r, s)`.
    fn model_norm_sq(&self) -> f64 {
        let r = self.rank;
        let mut total = 0.0;
        for i in 0..r {
            for j in 0..r {
                let p = self
                    .grams
                    .iter()
                    .fold(self.lambda[i] * self.lambda[j], |p, g| p * g[i * r + j]);
                total += p;
            }
        }
        total
    }

    fn run(mut self, observer: &mut IterObserver<'_>) -> Result<CpModel> {
        let norm_x_sq: f64 = self.t.values().par_iter().map(|v| v * v).sum();
        if !(norm_x_sq > 0.0 && norm_x_sq.is_finite()) {
            return Err(AltoError::InvalidArgument(format!(
                "the tensor's squared norm is {norm_x_sq}: CP-ALS needs a nonzero, finite norm"
            )));
        }
        let order = self.dims.len();
        for n in 0..order {
            self.gram(n);
        }
        let mut history: Vec<IterStats> = Vec::with_capacity(self.opts.max_iters);
        let mut runs = Vec::with_capacity(order);
        let mut converged = false;
        let mut prev: Option<f64> = None;
        for iter in 0..self.opts.max_iters {
            let start = Instant::now();
            let mut mttkrp_s = 0.0;
            let mut pinv_solves = 0;
            let mut inner = 0.0;
            let norm = if iter == 0 { Norm::Two } else { Norm::MaxAbs };
            for n in 0..order {
                self.shape_y(self.dims[n]);
                let t0 = Instant::now();
                let run = mttkrp(
                    self.t,
                    &self.factors,
                    n,
                    &mut self.y,
                    &self.opts.mttkrp,
                    &mut self.ws,
                    self.pool,
                )?;
                mttkrp_s += t0.elapsed().as_secs_f64();
                if iter == 0 {
                    runs.push(run);
                }
                let last = n + 1 == order;
                let (kind, ip) = self.update(n, norm, last)?;
                pinv_solves += usize::from(kind == SolveKind::Pinv);
                if last {
                    inner = ip;
                }
            }
            let fit = fit_from_norms(iter, norm_x_sq, self.model_norm_sq(), inner)?;
            let seconds = start.elapsed().as_secs_f64();
            let stats = IterStats::timed(iter, fit, prev, seconds, mttkrp_s, pinv_solves);
            let delta_fit = stats.delta_fit;
            let stop = observer(&stats).is_break();
            history.push(stats);
            if delta_fit.is_some_and(|d| d.abs() < self.opts.tol) {
                converged = true;
                break;
            }
            if stop {
                break;
            }
            prev = Some(fit);
        }
        Ok(CpModel {
            lambda: self.lambda,
            factors: self.factors,
            history,
            converged,
            norm_x_sq,
            mttkrp_runs: runs,
            row_kernel: self.kernel.name(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observer_sees_every_iteration_and_can_stop() {
        let coo = crate::gen::uniform(&[6, 7, 8], 200, 3).unwrap();
        let opts = crate::format::BuildOptions {
            partitions: 2,
            ..Default::default()
        };
        let (t, _) = AnyAlto::build(&coo, &opts).unwrap();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let cpd = CpdOptions {
            tol: 0.0,
            max_iters: 10,
            ..CpdOptions::new(3)
        };
        let init = || super::super::initial_factors(t.dims(), 3, 1);
        let mut seen = Vec::new();
        let model = cp_als_observed(&t, init(), &cpd, &pool, &mut |s| {
            seen.push(s.iter);
            if s.iter == 2 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .unwrap();
        assert_eq!(seen, [0, 1, 2]);
        assert_eq!(model.history.len(), 3);
        assert!(!model.converged);
        let full = cp_als_from(&t, init(), &cpd, &pool).unwrap();
        assert_eq!(full.history.len(), 10);
        // The same iterations (to rounding: parallel sums may associate differently).
        for (a, b) in model.fits().iter().zip(&full.fits()[..3]) {
            assert!((a - b).abs() <= 1e-12 * b.abs().max(1.0), "{a} vs {b}");
        }
    }

    #[test]
    fn blocks_cover_every_row() {
        for rows in [0, 1, 63, 64, 65, 1000, 4097] {
            for max_blocks in [1, 4, 8] {
                let br = block_rows(rows, max_blocks);
                assert!(br >= 1);
                assert!(rows.div_ceil(br) <= max_blocks, "{rows} {max_blocks} {br}");
            }
        }
    }
}
