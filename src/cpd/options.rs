//! What a CP-ALS run is asked for ([`CpdOptions`]) and the checks on it: the rank rule
//! ([`max_sensible_rank`]) and [`validate`].

use super::rows::RowKernel;
use crate::error::{AltoError, Result};
use crate::mttkrp::MttkrpOptions;

/// Default stopping tolerance on |delta fit| (the reference's).
pub const DEFAULT_TOL: f64 = 1e-5;
/// Default iteration cap.
pub const DEFAULT_MAX_ITERS: usize = 50;

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
