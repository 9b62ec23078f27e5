//! The Poisson log-likelihood of a CP model on an ALTO tensor, with the per-nonzero model
//! pass of the Phi kernels ([`super::phi`]).

use super::phi::{dot, pi_row, with_decoder, Pass, CHUNK};
use crate::error::{AltoError, Result};
use crate::format::alto::{AltoTensor, AnyAlto};
use crate::matrix::Matrix;
use crate::mttkrp::check_factors;
use crate::mttkrp::driver::cached_default_decode;
use crate::with_alto;
use alto_kernels::{AnyDecoder, Decode, DecodeKind, HwBits};
use rayon::prelude::*;

/// The Poisson log-likelihood of `(lambda, factors)` on `t` (up to `-sum log(v!)`):
/// `sum v log(m(x)) - sum_r lambda_r prod_n sum_i A_n(i, r)`, with the per-nonzero sums in a
/// fixed order (per chunk, then the chunks in order), so the value does not depend on the
/// thread count.
pub fn log_likelihood(
    t: &AnyAlto,
    lambda: &[f64],
    factors: &[Matrix],
    decode: Option<DecodeKind>,
    pool: &rayon::ThreadPool,
) -> Result<f64> {
    let rank = check_factors(t.dims(), factors, 0)?;
    if lambda.len() != rank {
        return Err(AltoError::InvalidArgument(format!(
            "{} weights for rank {rank}",
            lambda.len()
        )));
    }
    // B = A_0 diag(lambda): the model value is then B(i_0, :) . Pi(x, :).
    let mut b = factors[0].clone();
    for row in b.as_mut_slice().chunks_exact_mut(rank) {
        for (x, l) in row.iter_mut().zip(lambda) {
            *x *= l;
        }
    }
    let pass = Pass {
        factors,
        b: b.as_slice(),
        mode: 0,
        rank,
        eps: 0.0,
    };
    let decode = decode.unwrap_or_else(cached_default_decode);
    let first = pool.install(|| with_alto!(t, x => sum_v_log_model(x, decode, &pass)));
    let mut total = 0.0;
    for (r, &l) in lambda.iter().enumerate() {
        let mut p = l;
        for a in factors {
            p *= a.as_slice().iter().skip(r).step_by(rank).sum::<f64>();
        }
        total += p;
    }
    Ok(first - total)
}

/// `sum over nonzeros of v log(B(i_0, :) . Pi(x, :))` (zero values contribute nothing).
fn sum_v_log_model<I: HwBits>(t: &AltoTensor<I>, decode: DecodeKind, p: &Pass<'_>) -> f64 {
    let f: Vec<&[f64]> = p.factors.iter().map(|u| u.as_slice()).collect();
    let (mode, rank) = (p.mode, p.rank);
    let parts: Vec<f64> = with_decoder!(t, decode, dec => {
        t.indices()
            .par_chunks(CHUNK)
            .zip(t.values().par_chunks(CHUNK))
            .map(|(xs, vs)| {
                let mut row = vec![0.0; rank];
                let mut s = 0.0;
                for (&x, &v) in xs.iter().zip(vs) {
                    if v == 0.0 {
                        continue;
                    }
                    pi_row(x, &dec, &f, mode, &mut row);
                    let i = dec.coord(x, mode) as usize;
                    s += v * dot(&p.b[i * rank..(i + 1) * rank], &row).ln();
                }
                s
            })
            .collect()
    });
    parts.iter().sum()
}
