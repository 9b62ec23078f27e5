//! Rank loops shared by the baseline kernels. `R` is the rank when the loop is specialized (8,
//! 16, 32 or 64, the ranks the ALTO kernels specialize too) and 0 for any rank; with `R > 0`
//! the trip count is a compile-time constant and the loop is unrolled and vectorized.

/// The loop length: `R`, or the run-time rank when `R == 0`.
#[inline(always)]
pub(crate) fn len<const R: usize>(rank: usize) -> usize {
    if R == 0 {
        rank
    } else {
        R
    }
}

/// `dst += src`.
#[inline(always)]
pub(crate) fn add_assign<const R: usize>(dst: &mut [f64], src: &[f64], rank: usize) {
    let n = len::<R>(rank);
    for (d, &x) in dst[..n].iter_mut().zip(&src[..n]) {
        *d += x;
    }
}

/// `dst += a * b` (entrywise).
#[inline(always)]
pub(crate) fn add_product<const R: usize>(dst: &mut [f64], a: &[f64], b: &[f64], rank: usize) {
    let n = len::<R>(rank);
    for ((d, &x), &y) in dst[..n].iter_mut().zip(&a[..n]).zip(&b[..n]) {
        *d += x * y;
    }
}

/// Zeroes the first `rank` entries.
#[inline(always)]
pub(crate) fn zero<const R: usize>(dst: &mut [f64], rank: usize) {
    dst[..len::<R>(rank)].fill(0.0);
}

/// Runs `$body` with `$R` bound to a `const usize`: the rank when it is specialized, else 0;
/// and `$C` to the column chunk the kernels keep in registers: the rank when specialized (one
/// chunk per row), else 16.
macro_rules! with_rank {
    ($rank:expr, $R:ident, $C:ident => $body:expr) => {
        match $rank {
            8 => {
                const $R: usize = 8;
                const $C: usize = 8;
                $body
            }
            16 => {
                const $R: usize = 16;
                const $C: usize = 16;
                $body
            }
            32 => {
                const $R: usize = 32;
                const $C: usize = 32;
                $body
            }
            64 => {
                const $R: usize = 64;
                const $C: usize = 64;
                $body
            }
            _ => {
                const $R: usize = 0;
                const $C: usize = 16;
                $body
            }
        }
    };
}
pub(crate) use with_rank;

/// Sums `bufs` (thread-private copies of a `rows x rank` output) into `out`, in parallel over
/// row blocks on the current pool.
pub(crate) fn reduce_private(out: &mut [f64], bufs: &[Vec<f64>]) {
    use rayon::prelude::*;
    const BLOCK: usize = 1 << 12;
    out.par_chunks_mut(BLOCK).enumerate().for_each(|(b, dst)| {
        let (start, n) = (b * BLOCK, dst.len());
        for buf in bufs {
            for (d, &s) in dst.iter_mut().zip(&buf[start..start + n]) {
                *d += s;
            }
        }
    });
}
