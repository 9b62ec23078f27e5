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
//!
//! CP-APR (the Poisson model, for count data) lives in [`apr`].
//!
//! Inside: [`options`] (what to fit, and its checks), [`model`] (the fitted model, its files,
//! the initial factors), [`solve`] (the R x R systems), [`als`] (the loop), and [`rows`] (the
//! row kernels of the non-MTTKRP passes).

pub mod als;
pub mod apr;
pub mod model;
pub mod options;
pub mod rows;
pub mod solve;

pub use als::{cp_als, cp_als_from, cp_als_observed, IterObserver};
pub use model::{initial_factors, CpModel, IterStats};
pub use options::{max_sensible_rank, validate, CpdOptions, DEFAULT_MAX_ITERS, DEFAULT_TOL};
pub use solve::{NormalSolver, SolveKind, NOT_PD_RTOL};
