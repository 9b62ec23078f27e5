//! The naive sequential COO MTTKRP: the reference every kernel is tested against. It is kept
//! deliberately plain (no blocking, no SIMD, no parallelism) and must never be optimized.

use crate::coo::CooTensor;
use crate::error::{AltoError, Result};
use crate::matrix::Matrix;

/// `Y(i_n, :) += v * prod_{m != n} U_m(i_m, :)` over all nonzeros, in file order.
pub fn mttkrp_oracle(coo: &CooTensor, factors: &[Matrix], mode: usize) -> Result<Matrix> {
    let rank = check_factors(coo.dims(), factors, mode)?;
    let mut y = Matrix::zeros(coo.dims()[mode] as usize, rank);
    for k in 0..coo.nnz() {
        let v = coo.values()[k];
        let i_n = coo.mode_indices(mode)[k] as usize;
        for r in 0..rank {
            let mut prod = v;
            for (m, u) in factors.iter().enumerate() {
                if m != mode {
                    prod *= u.get(coo.mode_indices(m)[k] as usize, r);
                }
            }
            y.set(i_n, r, y.get(i_n, r) + prod);
        }
    }
    Ok(y)
}

/// Checks one factor per mode with `dims[m]` rows and a common column count (the rank, >= 1),
/// returning the rank.
pub fn check_factors(dims: &[u64], factors: &[Matrix], mode: usize) -> Result<usize> {
    if mode >= dims.len() {
        return Err(AltoError::InvalidArgument(format!(
            "mode {mode} does not exist in an order-{} tensor (modes are 0-based)",
            dims.len()
        )));
    }
    if factors.len() != dims.len() {
        return Err(AltoError::InvalidArgument(format!(
            "{} factor matrices for an order-{} tensor",
            factors.len(),
            dims.len()
        )));
    }
    let rank = factors[0].cols();
    if rank == 0 {
        return Err(AltoError::InvalidArgument("rank must be at least 1".into()));
    }
    for (m, (u, &d)) in factors.iter().zip(dims).enumerate() {
        if u.rows() as u64 != d || u.cols() != rank {
            return Err(AltoError::InvalidArgument(format!(
                "factor {m} is {} x {}, expected {d} x {rank}",
                u.rows(),
                u.cols()
            )));
        }
    }
    Ok(rank)
}

/// Tolerance for comparing an MTTKRP result with the oracle: summation order differs, so the
/// error grows with the number of terms accumulated into an entry and with their magnitude.
/// Returns the allowed |got - want| for each entry given the entry's sum of |terms| bound.
pub fn mttkrp_tolerance(abs_sum: f64, terms: usize) -> f64 {
    let eps = f64::EPSILON;
    4.0 * eps * (terms.max(1) as f64) * abs_sum + 1e-300
}

/// Compares `got` with the oracle result for the same input, scaling the tolerance to the
/// accumulation: each entry may differ by a few ulps per accumulated term of its absolute sum.
/// Returns the worst ratio |diff| / tolerance (<= 1 passes).
pub fn compare_with_oracle(
    coo: &CooTensor,
    factors: &[Matrix],
    mode: usize,
    got: &Matrix,
    want: &Matrix,
) -> f64 {
    // |Y| computed with |v| and |U| bounds every partial sum, whatever the order.
    let abs_factors: Vec<Matrix> = factors
        .iter()
        .map(|u| {
            Matrix::from_vec(
                u.rows(),
                u.cols(),
                u.as_slice().iter().map(|x| x.abs()).collect(),
            )
            .expect("same shape")
        })
        .collect();
    let abs_coo = CooTensor::new(
        coo.dims().to_vec(),
        (0..coo.order())
            .map(|m| coo.mode_indices(m).to_vec())
            .collect(),
        coo.values().iter().map(|v| v.abs()).collect(),
    )
    .expect("same tensor");
    let bound = match mttkrp_oracle(&abs_coo, &abs_factors, mode) {
        Ok(b) => b,
        Err(_) => return f64::INFINITY,
    };
    let mut per_row = vec![0usize; coo.dims()[mode] as usize];
    for &i in coo.mode_indices(mode) {
        per_row[i as usize] += 1;
    }
    if (got.rows(), got.cols()) != (want.rows(), want.cols()) {
        return f64::INFINITY;
    }
    let mut worst = 0.0f64;
    for (i, &terms) in per_row.iter().enumerate() {
        for r in 0..want.cols() {
            let tol = mttkrp_tolerance(bound.get(i, r), terms + coo.order());
            let diff = (got.get(i, r) - want.get(i, r)).abs();
            if diff.is_nan() {
                return f64::INFINITY;
            }
            worst = worst.max(diff / tol);
        }
    }
    worst
}
