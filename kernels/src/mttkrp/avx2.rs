//! AVX2 + FMA kernels: `ymm` vectors of 4 doubles, `vfmadd` into the output row, masked tails
//! with `vmaskmovpd`. Entry points enable BMI2 too, so the `pext` decoder inlines.

use super::vector::{isa_kernels, SimdF64};
use crate::isa::Avx2Fma;
use core::arch::x86_64::*;

impl SimdF64 for Avx2Fma {
    const LANES: usize = 4;
    type V = __m256d;

    #[inline(always)]
    fn splat(self, x: f64) -> __m256d {
        // SAFETY: the token proves AVX.
        unsafe { _mm256_set1_pd(x) }
    }
    #[inline(always)]
    fn mul(self, a: __m256d, b: __m256d) -> __m256d {
        // SAFETY: the token proves AVX.
        unsafe { _mm256_mul_pd(a, b) }
    }
    #[inline(always)]
    fn fmadd(self, a: __m256d, b: __m256d, c: __m256d) -> __m256d {
        // SAFETY: the token proves FMA.
        unsafe { _mm256_fmadd_pd(a, b, c) }
    }
    #[inline(always)]
    unsafe fn load(self, p: *const f64) -> __m256d {
        // SAFETY: the token proves AVX; the caller guarantees 4 readable doubles.
        unsafe { _mm256_loadu_pd(p) }
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f64, v: __m256d) {
        // SAFETY: the token proves AVX; the caller guarantees 4 writable doubles.
        unsafe { _mm256_storeu_pd(p, v) }
    }
    #[inline(always)]
    unsafe fn load_part(self, p: *const f64, n: usize) -> __m256d {
        // SAFETY: the token proves AVX2; masked-off lanes are not accessed (no fault), and the
        // caller guarantees the `n` enabled lanes are readable.
        unsafe { _mm256_maskload_pd(p, lanes_below(self, n)) }
    }
    #[inline(always)]
    unsafe fn store_part(self, p: *mut f64, n: usize, v: __m256d) {
        // SAFETY: as for `load_part`, for writes.
        unsafe { _mm256_maskstore_pd(p, lanes_below(self, n), v) }
    }
}

/// A lane mask with lanes `0..n` set (sign bit of each 64-bit lane). Takes the token: a safe
/// function may run AVX2 instructions only with the proof in hand.
#[inline(always)]
fn lanes_below(_avx2: Avx2Fma, n: usize) -> __m256i {
    // SAFETY: holding an `Avx2Fma` token proves the CPU has AVX2 (`vpcmpgtq`, broadcasts).
    unsafe { _mm256_cmpgt_epi64(_mm256_set1_epi64x(n as i64), _mm256_setr_epi64x(0, 1, 2, 3)) }
}

isa_kernels! {
    token: Avx2Fma,
    features: "avx2,fma,bmi1,bmi2,popcnt",
    fixed: {
        avx2_r8 => 8 = <2, 1>,
        avx2_r16 => 16 = <4, 1>,
        avx2_r32 => 32 = <8, 1>,
        avx2_r64 => 64 = <8, 2>,
    }
    dynamic: avx2_rdyn,
}
