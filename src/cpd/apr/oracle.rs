//! The naive sequential COO Phi and log-likelihood: what the ALTO Phi kernels are tested
//! against. Deliberately plain (no caching, no blocking, no parallelism); never optimize it.

use crate::coo::CooTensor;
use crate::error::{AltoError, Result};
use crate::matrix::Matrix;
use crate::mttkrp::check_factors;

/// `Phi(i_n, :) = sum over nonzeros x with coordinate i_n of
/// v / max(sum_r B(i_n, r) Pi(x, r), eps) * Pi(x, :)`, with
/// `Pi(x, r) = prod_{m != n} A_m(i_m, r)` (`factors[mode]` is not read; `b` takes its place).
pub fn phi_oracle(
    coo: &CooTensor,
    factors: &[Matrix],
    b: &Matrix,
    mode: usize,
    eps: f64,
) -> Result<Matrix> {
    let rank = check_factors(coo.dims(), factors, mode)?;
    if b.rows() as u64 != coo.dims()[mode] || b.cols() != rank {
        return Err(AltoError::InvalidArgument(format!(
            "B is {} x {}, expected {} x {rank}",
            b.rows(),
            b.cols(),
            coo.dims()[mode]
        )));
    }
    let mut phi = Matrix::zeros(b.rows(), rank);
    let mut pi = vec![0.0; rank];
    for k in 0..coo.nnz() {
        let i_n = coo.mode_indices(mode)[k] as usize;
        for (r, p) in pi.iter_mut().enumerate() {
            *p = 1.0;
            for (m, a) in factors.iter().enumerate() {
                if m != mode {
                    *p *= a.get(coo.mode_indices(m)[k] as usize, r);
                }
            }
        }
        let mut model = 0.0;
        for (r, p) in pi.iter().enumerate() {
            model += b.get(i_n, r) * p;
        }
        let w = coo.values()[k] / model.max(eps);
        for (r, p) in pi.iter().enumerate() {
            phi.set(i_n, r, phi.get(i_n, r) + w * p);
        }
    }
    Ok(phi)
}

/// The Poisson log-likelihood of a model `(lambda, factors)` (any column scaling), up to the
/// constant `-sum log(v!)`: `sum over nonzeros of v log(m(x)) - sum over all entries of m`,
/// with `m(x) = sum_r lambda_r prod_n A_n(i_n, r)`; the second sum is
/// `sum_r lambda_r prod_n sum_i A_n(i, r)`. Zero values contribute nothing to the first sum.
pub fn loglik_oracle(coo: &CooTensor, lambda: &[f64], factors: &[Matrix]) -> Result<f64> {
    let rank = check_factors(coo.dims(), factors, 0)?;
    if lambda.len() != rank {
        return Err(AltoError::InvalidArgument(format!(
            "{} weights for rank {rank}",
            lambda.len()
        )));
    }
    let mut f = 0.0;
    for k in 0..coo.nnz() {
        let v = coo.values()[k];
        if v == 0.0 {
            continue;
        }
        let mut model = 0.0;
        for (r, &l) in lambda.iter().enumerate() {
            let mut p = l;
            for (m, a) in factors.iter().enumerate() {
                p *= a.get(coo.mode_indices(m)[k] as usize, r);
            }
            model += p;
        }
        f += v * model.ln();
    }
    for (r, &l) in lambda.iter().enumerate() {
        let mut p = l;
        for a in factors {
            let mut s = 0.0;
            for i in 0..a.rows() {
                s += a.get(i, r);
            }
            p *= s;
        }
        f -= p;
    }
    Ok(f)
}
