//! What a CP-APR run is asked for ([`AprOptions`]), its defaults, [`validate`] and
//! [`check_counts`] (the tensor's values).
//!
//! The defaults are Tensor Toolbox's `cp_apr` (multiplicative-update algorithm, `'mu'`):
//! `maxiters` 1000, `maxinneriters` 10, `tol` 1e-4 (on the KKT violation), `kappa` 0.01,
//! `kappatol` 1e-10, `epsilon` 1e-10.

use super::phi::PhiOptions;
use crate::error::{AltoError, Result};

/// Default cap on outer iterations (Tensor Toolbox `maxiters`).
pub const DEFAULT_APR_MAX_ITERS: usize = 1000;
/// Default cap on inner iterations per mode (`maxinneriters`).
pub const DEFAULT_INNER_ITERS: usize = 10;
/// Default tolerance on the KKT violation (`tol`).
pub const DEFAULT_APR_TOL: f64 = 1e-4;
/// Default offset for inadmissible zeros (`kappa`).
pub const DEFAULT_KAPPA: f64 = 0.01;
/// Default threshold below which an entry counts as a zero (`kappatol`).
pub const DEFAULT_KAPPA_TOL: f64 = 1e-10;
/// Default floor of the model value in `X ./ (B Pi^T)` (`epsilon`).
pub const DEFAULT_EPSILON: f64 = 1e-10;

/// What to fit and how.
#[derive(Clone, Copy, Debug)]
pub struct AprOptions {
    /// Number of components R (at least 1).
    pub rank: usize,
    /// Outer-iteration cap (at least 1).
    pub max_iters: usize,
    /// Inner (multiplicative-update) iterations per mode at most (at least 1).
    pub inner_iters: usize,
    /// Converged when every mode's KKT violation `max |min(B, 1 - Phi)|` is below `tol`
    /// before its first update.
    pub tol: f64,
    /// Added to inadmissible zeros: entries below `kappa_tol` whose Phi exceeds 1.
    pub kappa: f64,
    pub kappa_tol: f64,
    /// Floor of the model value a count is divided by.
    pub epsilon: f64,
    /// Seed of the random initial factors ([`crate::cpd::initial_factors`]).
    pub seed: u64,
    /// Which Phi kernel runs and its conflict resolution.
    pub phi: PhiOptions,
}

impl AprOptions {
    /// Rank `rank` with Tensor Toolbox's defaults and seed 0.
    pub fn new(rank: usize) -> Self {
        AprOptions {
            rank,
            max_iters: DEFAULT_APR_MAX_ITERS,
            inner_iters: DEFAULT_INNER_ITERS,
            tol: DEFAULT_APR_TOL,
            kappa: DEFAULT_KAPPA,
            kappa_tol: DEFAULT_KAPPA_TOL,
            epsilon: DEFAULT_EPSILON,
            seed: 0,
            phi: PhiOptions::default(),
        }
    }
}

/// Checks `opts` (the rank against the tensor's dims and nonzero count as for CP-ALS).
pub fn validate(dims: &[u64], nnz: usize, opts: &AprOptions) -> Result<()> {
    let bad = |option, reason: String| Err(AltoError::AprOption { option, reason });
    if opts.rank == 0 {
        return bad("rank", "must be at least 1".into());
    }
    let max = crate::cpd::max_sensible_rank(dims, nnz);
    if opts.rank as u64 > max {
        return bad(
            "rank",
            format!(
                "{} is larger than makes sense for this tensor with {nnz} nonzeros: at most \
                 {max} (the smaller of the nonzero count and, over modes, the product of the \
                 other modes' dims)",
                opts.rank
            ),
        );
    }
    if opts.max_iters == 0 {
        return bad("max_iters", "must be at least 1".into());
    }
    if opts.inner_iters == 0 {
        return bad("inner_iters", "must be at least 1".into());
    }
    let nonneg = |option, x: f64| {
        if x >= 0.0 && x.is_finite() {
            Ok(())
        } else {
            bad(option, format!("must be a finite number >= 0, got {x}"))
        }
    };
    nonneg("tol", opts.tol)?;
    nonneg("kappa", opts.kappa)?;
    nonneg("kappa_tol", opts.kappa_tol)?;
    if !(opts.epsilon > 0.0 && opts.epsilon.is_finite()) {
        return bad(
            "epsilon",
            format!("must be a finite number > 0, got {}", opts.epsilon),
        );
    }
    Ok(())
}

/// Refuses a negative value, as CP-APR fits nonnegative counts: [`AltoError::NegativeValue`]
/// names the first one by its position in `values` (the tensor's order for
/// [`AnyAlto::values`](crate::AnyAlto::values)). Non-integer values pass: they are fitted as if
/// they were counts.
pub fn check_counts(values: &[f64]) -> Result<()> {
    match values.iter().position(|&v| v < 0.0) {
        Some(index) => Err(AltoError::NegativeValue {
            index,
            value: values[index],
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_refuse_the_first_negative_value() {
        assert!(check_counts(&[0.0, 1.5, 3.0]).is_ok());
        assert!(check_counts(&[]).is_ok());
        match check_counts(&[1.0, -0.5, 2.0, -3.0]) {
            Err(AltoError::NegativeValue { index, value }) => {
                assert_eq!((index, value), (1, -0.5));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn options_are_checked() {
        let dims = [10, 20, 30];
        let ok = AprOptions::new(5);
        assert!(validate(&dims, 100, &ok).is_ok());
        let err = |o: AprOptions| match validate(&dims, 100, &o) {
            Err(AltoError::AprOption { option, .. }) => option,
            other => panic!("{other:?}"),
        };
        assert_eq!(err(AprOptions::new(0)), "rank");
        assert_eq!(err(AprOptions::new(101)), "rank");
        assert_eq!(err(AprOptions { max_iters: 0, ..ok }), "max_iters");
        assert_eq!(
            err(AprOptions {
                inner_iters: 0,
                ..ok
            }),
            "inner_iters"
        );
        assert_eq!(err(AprOptions { tol: -1.0, ..ok }), "tol");
        assert_eq!(
            err(AprOptions {
                kappa: f64::NAN,
                ..ok
            }),
            "kappa"
        );
        assert_eq!(
            err(AprOptions {
                kappa_tol: -1.0,
                ..ok
            }),
            "kappa_tol"
        );
        assert_eq!(err(AprOptions { epsilon: 0.0, ..ok }), "epsilon");
    }
}
