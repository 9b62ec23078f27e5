//! CP-ALS (SPEC section 7): a rank-R CP model `X ~ sum_r lambda_r u_r^(0) o ... o u_r^(N-1)`
//! fitted by alternating least squares over an ALTO tensor.
//!
//! Per iteration, for each mode n in order:
//! 1. `Y = MTTKRP(n)` with the current factors (the ALTO driver, [`crate::mttkrp::mttkrp`]);
//! 2. `V = hadamard over m != n of G_m`, with the Gram matrices `G_m = U_m^T U_m`;
//! 3. `U_n = Y V^-1`, with `V^-1` formed from the Cholesky factor of V (then one dense
//!    `R x R` product per row; [`rows`] says why), or, when V is not numerically positive
//!    definite ([`NOT_PD_RTOL`]), `Y V^+` with the pseudo-inverse from the symmetric
//!    eigendecomposition (eigenvalues with `|l| <= R * eps * max |l|` dropped: the
//!    minimum-norm least-squares solution, like the reference's `GELSY` fallback);
//! 4. columns normalized into lambda: 2-norm on the first iteration, `max(1, max_i |u_ir|)`
//!    afterwards;
//! 5. `G_n` updated.
//!
//! After the last mode, `fit = 1 - sqrt(normX^2 + ||model||^2 - 2 <X, model>) / normX`, with
//! `<X, model> = sum_r lambda_r sum_i U_{N-1}(i, r) Y(i, r)` from the last mode's MTTKRP output
//! and `||model||^2 = lambda^T (hadamard over m of G_m) lambda`. The loop stops when
//! `|fit - previous fit| < tol` (never on the first iteration) or at the iteration cap.
//!
//! Everything runs on the caller's rayon pool. The non-MTTKRP work is two fused parallel passes
//! over the rows of `U_n` (solve + column norms + raw Gram; then column scaling + the fit's
//! inner product), each over a fixed number of row blocks with per-block partial sums reduced
//! in block order. Buffers (the MTTKRP output, its workspace, the partials, the R x R systems)
//! are allocated once per run.

pub mod rows;

use crate::error::{AltoError, Result};
use crate::format::AnyAlto;
use crate::matrix::Matrix;
use crate::mttkrp::{mttkrp, MttkrpOptions, MttkrpRun, Workspace};
use nalgebra::DMatrix;
use npyz::WriterBuilder;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;
use rows::RowKernel;
use std::io::Write;
use std::path::Path;
use std::time::Instant;

/// Default stopping tolerance on |delta fit| (the reference's).
pub const DEFAULT_TOL: f64 = 1e-5;
/// Default iteration cap.
pub const DEFAULT_MAX_ITERS: usize = 50;
/// V counts as not positive definite when Cholesky fails or a pivot `L_jj^2` is at most
/// `NOT_PD_RTOL * R * max_j V_jj`: singular to within rounding (rounding alone leaves pivots of
/// a few `R * eps * max V_jj`, so a bare `> 0` test lets singular systems through) or so
/// ill-conditioned (about 1e11 and beyond) that the eigen-based pseudo-inverse is the safer
/// solve. Either way the pseudo-inverse path takes over.
pub const NOT_PD_RTOL: f64 = 1e-12;
/// Row blocks per thread in the parallel passes (load balance vs. partials to reduce).
const BLOCKS_PER_THREAD: usize = 4;
/// Fewest rows worth a block of their own.
const MIN_BLOCK_ROWS: usize = 64;
/// Bytes the per-block partial sums (`R^2 + R` each) may take; caps the block count at very
/// large ranks (at R = 16 it never binds).
const PARTIALS_BUDGET: usize = 64 << 20;

/// What to fit and how.
#[derive(Clone, Copy, Debug)]
pub struct CpdOptions {
    /// Number of components R, `1 <= R <= ` [`max_sensible_rank`].
    pub rank: usize,
    /// Iteration cap (at least 1).
    pub max_iters: usize,
    /// Stop when `|fit - previous fit| < tol` (`tol >= 0`; 0 runs to the cap).
    pub tol: f64,
    /// Seed of the random initial factors ([`initial_factors`]).
    pub seed: u64,
    /// Strategy, kernel and decoder of every MTTKRP (default: the heuristics and the best kernel).
    pub mttkrp: MttkrpOptions,
    /// Kernel of the solve / Gram / scaling passes; `None`: [`RowKernel::best`] for the rank.
    pub row_kernel: Option<RowKernel>,
}

impl CpdOptions {
    /// Rank `rank` with the defaults: [`DEFAULT_MAX_ITERS`], [`DEFAULT_TOL`], seed 0.
    pub fn new(rank: usize) -> Self {
        CpdOptions {
            rank,
            max_iters: DEFAULT_MAX_ITERS,
            tol: DEFAULT_TOL,
            seed: 0,
            mttkrp: MttkrpOptions::default(),
            row_kernel: None,
        }
    }
}

/// How the R x R system of one mode was solved.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SolveKind {
    Cholesky,
    /// V was not numerically positive definite: minimum-norm solve through the pseudo-inverse.
    Pinv,
}

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
        write_vector_npy(&dir.join("lambda.npy"), &self.lambda)?;
        for (n, u) in self.factors.iter().enumerate() {
            u.write_npy(&dir.join(format!("factor{n}.npy")))?;
        }
        Ok(())
    }
}

fn write_vector_npy(path: &Path, v: &[f64]) -> Result<()> {
    let io = |e| AltoError::io(path, e);
    let file = std::fs::File::create(path).map_err(io)?;
    let mut buf = std::io::BufWriter::new(file);
    let mut w = npyz::WriteOptions::<f64>::new()
        .default_dtype()
        .shape(&[v.len() as u64])
        .writer(&mut buf)
        .begin_nd()
        .map_err(io)?;
    w.extend(v.iter().copied()).map_err(io)?;
    w.finish().map_err(io)?;
    buf.flush().map_err(io)
}

/// The largest rank accepted for a tensor: `min(nnz, min over n of prod_{m != n} I_m)`.
///
/// Beyond `nnz`, one rank-one term per nonzero already fits the tensor exactly; beyond
/// `prod_{m != n} I_m`, the Khatri-Rao product behind mode n's system has more columns than
/// rows, so every `V` of that mode is singular and ALS only ever takes the pseudo-inverse path.
pub fn max_sensible_rank(dims: &[u64], nnz: usize) -> u64 {
    let others = (0..dims.len())
        .map(|n| {
            dims.iter()
                .enumerate()
                .filter(|&(m, _)| m != n)
                .fold(1u64, |p, (_, &d)| p.saturating_mul(d))
        })
        .min()
        .unwrap_or(1);
    others.min(nnz as u64)
}

/// Checks `opts` against a tensor's dims and nonzero count.
pub fn validate(dims: &[u64], nnz: usize, opts: &CpdOptions) -> Result<()> {
    let bad = |option, reason: String| Err(AltoError::CpdOption { option, reason });
    if opts.rank == 0 {
        return bad("rank", "must be at least 1".into());
    }
    let max = max_sensible_rank(dims, nnz);
    if opts.rank as u64 > max {
        let dims: Vec<String> = dims.iter().map(|d| d.to_string()).collect();
        return bad(
            "rank",
            format!(
                "{} is larger than makes sense for this {} tensor with {nnz} nonzeros: \
                 at most {max} (the smaller of the nonzero count and, over modes, the product \
                 of the other modes' dims)",
                opts.rank,
                dims.join(" x ")
            ),
        );
    }
    if let Some(k) = opts.row_kernel {
        if k.rank() != opts.rank {
            return bad(
                "row_kernel",
                format!(
                    "kernel {} is for rank {}, not {}",
                    k.name(),
                    k.rank(),
                    opts.rank
                ),
            );
        }
    }
    if opts.max_iters == 0 {
        return bad("max_iters", "must be at least 1".into());
    }
    if !(opts.tol >= 0.0 && opts.tol.is_finite()) {
        return bad(
            "tol",
            format!("must be a finite number >= 0, got {}", opts.tol),
        );
    }
    Ok(())
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
    pool.install(|| Als::new(t, init, opts, pool).run())
}

/// The R x R normal-equation solver of one mode: `W = V^-1` from the Cholesky factor, or the
/// pseudo-inverse `V^+`, row-major, for the row kernels' `u = y W`. Buffers are reused across
/// calls (the Cholesky path allocates nothing).
struct NormalSolver {
    rank: usize,
    /// Handed to nalgebra's Cholesky and taken back.
    mat: DMatrix<f64>,
    /// Set to the identity and solved in place: `V^-1`, column-major (symmetric).
    inv: DMatrix<f64>,
    /// `W`, row-major.
    w: Vec<f64>,
    kind: SolveKind,
}

impl NormalSolver {
    fn new(rank: usize) -> Self {
        NormalSolver {
            rank,
            mat: DMatrix::zeros(rank, rank),
            inv: DMatrix::zeros(rank, rank),
            w: vec![0.0; rank * rank],
            kind: SolveKind::Cholesky,
        }
    }

    /// Factors the symmetric `v` (row-major R x R) into [`Self::w`].
    fn factor(&mut self, v: &[f64], mode: usize) -> Result<SolveKind> {
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

    fn run(mut self) -> Result<CpModel> {
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
            let residual_sq = norm_x_sq + self.model_norm_sq() - 2.0 * inner;
            let fit = 1.0 - residual_sq.max(0.0).sqrt() / norm_x_sq.sqrt();
            if !fit.is_finite() {
                return Err(AltoError::CpdNumerical(format!(
                    "iteration {iter}: the fit is {fit} (the factors diverged)"
                )));
            }
            let seconds = start.elapsed().as_secs_f64();
            let delta_fit = prev.map(|p| fit - p);
            history.push(IterStats {
                iter,
                fit,
                delta_fit,
                seconds,
                mttkrp_seconds: mttkrp_s,
                rest_seconds: (seconds - mttkrp_s).max(0.0),
                pinv_solves,
            });
            if delta_fit.is_some_and(|d| d.abs() < self.opts.tol) {
                converged = true;
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

    #[test]
    fn rank_rule_and_options() {
        assert_eq!(max_sensible_rank(&[10, 20, 30], 1_000_000), 200);
        assert_eq!(max_sensible_rank(&[1000, 1000, 1000], 50), 50);
        assert_eq!(max_sensible_rank(&[4, 9], 36), 4);
        let dims = [10, 20, 30];
        let ok = CpdOptions::new(5);
        assert!(validate(&dims, 100, &ok).is_ok());
        let err = |o: CpdOptions| match validate(&dims, 100, &o) {
            Err(AltoError::CpdOption { option, .. }) => option,
            other => panic!("{other:?}"),
        };
        assert_eq!(err(CpdOptions::new(0)), "rank");
        assert_eq!(err(CpdOptions::new(101)), "rank");
        assert_eq!(err(CpdOptions { tol: -1e-3, ..ok }), "tol");
        assert_eq!(
            err(CpdOptions {
                tol: f64::NAN,
                ..ok
            }),
            "tol"
        );
        assert_eq!(err(CpdOptions { max_iters: 0, ..ok }), "max_iters");
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
