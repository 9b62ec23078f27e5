//! The machine probe's kernels (used by `alto-roofline`): peak FMA chains per vector width and
//! the bandwidth loops. They live here because every `#[target_feature]` function of the
//! workspace does: each public function takes the capability token of the instructions it runs.
//!
//! The peak kernels iterate `acc = acc * FMA_A + FMA_B` on enough independent accumulators to
//! cover the FMA latency of every current x86 core (latency 4-5 cycles, 2 pipes: 8-10 in
//! flight), so throughput, not latency, limits them; they return the accumulators' sum so a
//! test can check that the FMAs really ran.

use crate::isa::{Avx2Fma, Avx512, Fma};

/// Multiplier and addend of the recurrence: `acc` converges to B / (1 - A) = 1 without
/// overflow.
pub const FMA_A: f64 = 0.999_999;
pub const FMA_B: f64 = 1e-6;

/// Accumulator chains of the scalar and AVX2 peak kernels.
pub const NARROW_CHAINS: usize = 12;
/// Accumulator chains of the AVX-512 peak kernel (32 zmm registers).
pub const AVX512_CHAINS: usize = 16;

/// Start value of accumulator `k`: away from the fixed point, and from a value the compiler
/// cannot see (or the whole loop folds to a constant).
pub fn chain_start(k: usize) -> f64 {
    std::hint::black_box(0.5) + k as f64 * 1e-3
}

/// Scalar (`vfmadd...sd`) peak: [`NARROW_CHAINS`] chains of `iters` FMAs.
pub fn fma_peak_scalar(_proof: Fma, iters: u64) -> f64 {
    // SAFETY: the `Fma` token proves the CPU has FMA.
    unsafe { fma_chains_scalar(iters) }
}

/// 256-bit peak: [`NARROW_CHAINS`] chains of `iters` FMAs on 4 doubles.
pub fn fma_peak_avx2(_proof: Avx2Fma, iters: u64) -> f64 {
    // SAFETY: the `Avx2Fma` token proves AVX2 and FMA.
    unsafe { fma_chains_avx2(iters) }
}

/// 512-bit peak: [`AVX512_CHAINS`] chains of `iters` FMAs on 8 doubles.
pub fn fma_peak_avx512(_proof: Avx512, iters: u64) -> f64 {
    // SAFETY: the `Avx512` token proves AVX-512F.
    unsafe { fma_chains_avx512(iters) }
}

#[inline(never)]
#[target_feature(enable = "fma")]
fn fma_chains_scalar(iters: u64) -> f64 {
    use core::arch::x86_64::*;
    let a = _mm_set_sd(FMA_A);
    let b = _mm_set_sd(FMA_B);
    let mut acc: [__m128d; NARROW_CHAINS] = core::array::from_fn(|k| _mm_set_sd(chain_start(k)));
    for _ in 0..iters {
        for x in acc.iter_mut() {
            *x = _mm_fmadd_sd(*x, a, b);
        }
    }
    acc.iter().map(|x| _mm_cvtsd_f64(*x)).sum()
}

#[inline(never)]
#[target_feature(enable = "avx2,fma")]
fn fma_chains_avx2(iters: u64) -> f64 {
    use core::arch::x86_64::*;
    let a = _mm256_set1_pd(FMA_A);
    let b = _mm256_set1_pd(FMA_B);
    let mut acc: [__m256d; NARROW_CHAINS] =
        core::array::from_fn(|k| _mm256_set1_pd(chain_start(k)));
    for _ in 0..iters {
        for x in acc.iter_mut() {
            *x = _mm256_fmadd_pd(*x, a, b);
        }
    }
    let mut lanes = [0.0f64; 4];
    let mut total = 0.0;
    for x in acc {
        // SAFETY: `lanes` holds exactly 4 doubles, the width of one ymm store.
        unsafe { _mm256_storeu_pd(lanes.as_mut_ptr(), x) };
        total += lanes.iter().sum::<f64>();
    }
    total
}

#[inline(never)]
#[target_feature(enable = "avx512f")]
fn fma_chains_avx512(iters: u64) -> f64 {
    use core::arch::x86_64::*;
    let a = _mm512_set1_pd(FMA_A);
    let b = _mm512_set1_pd(FMA_B);
    let mut acc: [__m512d; AVX512_CHAINS] =
        core::array::from_fn(|k| _mm512_set1_pd(chain_start(k)));
    for _ in 0..iters {
        for x in acc.iter_mut() {
            *x = _mm512_fmadd_pd(*x, a, b);
        }
    }
    acc.iter().map(|x| _mm512_reduce_add_pd(*x)).sum()
}

/// Sum of `x` with 4 independent ymm accumulators (a read-bandwidth loop).
pub fn sum_avx2(_proof: Avx2Fma, x: &[f64]) -> f64 {
    // SAFETY: the `Avx2Fma` token proves AVX2.
    unsafe { sum_avx2_body(x) }
}

#[target_feature(enable = "avx2")]
fn sum_avx2_body(x: &[f64]) -> f64 {
    use core::arch::x86_64::*;
    let mut acc = [_mm256_setzero_pd(); 4];
    let chunks = x.chunks_exact(16);
    let tail: f64 = chunks.remainder().iter().sum();
    for c in chunks {
        for (k, a) in acc.iter_mut().enumerate() {
            // SAFETY: `c` has 16 elements, so `c[4k..4k+4]` is in bounds for k < 4.
            *a = _mm256_add_pd(*a, unsafe { _mm256_loadu_pd(c.as_ptr().add(4 * k)) });
        }
    }
    let mut lanes = [0.0f64; 4];
    let sum = _mm256_add_pd(_mm256_add_pd(acc[0], acc[1]), _mm256_add_pd(acc[2], acc[3]));
    // SAFETY: `lanes` holds 4 doubles.
    unsafe { _mm256_storeu_pd(lanes.as_mut_ptr(), sum) };
    lanes.iter().sum::<f64>() + tail
}

/// `a = b + s * c`, compiled for AVX2 + FMA (the compiler vectorizes the plain loop).
pub fn triad_avx2(_proof: Avx2Fma, a: &mut [f64], b: &[f64], c: &[f64], s: f64) {
    // SAFETY: the `Avx2Fma` token proves AVX2 and FMA.
    unsafe { triad_avx2_body(a, b, c, s) }
}

#[target_feature(enable = "avx2,fma")]
fn triad_avx2_body(a: &mut [f64], b: &[f64], c: &[f64], s: f64) {
    triad_portable(a, b, c, s)
}

/// `a = b + s * c` for the baseline target.
#[inline(always)]
pub fn triad_portable(a: &mut [f64], b: &[f64], c: &[f64], s: f64) {
    for ((x, &y), &z) in a.iter_mut().zip(b).zip(c) {
        *x = y + s * z;
    }
}
