//! CP-APR: a rank-R nonnegative CP model of a count tensor fitted by maximizing the Poisson
//! log-likelihood (minimizing the KL divergence) with the multiplicative updates of Chi and
//! Kolda, "On tensors, sparsity, and nonnegative factorizations" (2012), as Tensor Toolbox's
//! `cp_apr` (`'mu'`) does.
//!
//! Model `m(x) = sum_r lambda_r prod_n A_n(i_n, r)`, every column of every `A_n` summing to 1.
//! Per outer iteration, for each mode n in order:
//! 1. after the first iteration, inadmissible zeros (`A_n(i, r) < kappa_tol` while the last
//!    `Phi_n(i, r) > 1`) are raised by `kappa`;
//! 2. `B = A_n diag(lambda)`;
//! 3. up to `inner_iters` times: `Phi = phi(B)` ([`phi`]: `(X ./ max(B Pi^T, eps)) Pi` on the
//!    ALTO tensor), the KKT violation `max |min(B, 1 - Phi)|`; stop when it is below `tol`,
//!    else `B = B .* Phi`;
//! 4. `lambda` = column sums of B, `A_n` = B with unit column sums.
//!
//! The run has converged when every mode met the tolerance before its first update. The
//! log-likelihood `sum v log m(x) - sum_r lambda_r` (up to the constant `-sum log(v!)`) is
//! reported after every outer iteration; the updates never decrease it.
//!
//! Inside: [`options`] (defaults and checks), [`phi`] (the ALTO kernels), [`loglik`] (the
//! log-likelihood pass), [`oracle`] (the naive Phi and log-likelihood they are tested
//! against), [`mu`] (the loop), [`model`] (the result and the factor match score).

pub mod loglik;
pub mod model;
pub mod mu;
pub mod options;
pub mod oracle;
pub mod phi;

pub use loglik::log_likelihood;
pub use model::{factor_match_score, AprIterStats, AprModel};
pub use mu::{cp_apr, cp_apr_observed, AprObserver};
pub use options::{
    check_counts, validate, AprOptions, DEFAULT_APR_MAX_ITERS, DEFAULT_APR_TOL, DEFAULT_EPSILON,
    DEFAULT_INNER_ITERS, DEFAULT_KAPPA, DEFAULT_KAPPA_TOL,
};
pub use oracle::{loglik_oracle, phi_oracle};
pub use phi::{
    choose_phi_kind, PhiEngine, PhiKind, PhiOptions, PhiRun, CACHE_PI_ABOVE_BYTES,
    MAX_PI_CACHE_BYTES,
};
