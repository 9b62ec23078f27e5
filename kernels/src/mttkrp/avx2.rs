//! AVX2 + FMA kernels: `ymm` vectors of 4 doubles, `vfmadd` into the output row, masked tails
//! with `vmaskmovpd`. Entry points enable BMI2 too, so the `pext` decoder inlines.

use super::scalar::FusedLane;
use super::vector::{isa_kernels, SimdF64};
use crate::isa::Avx2Fma;
use core::arch::x86_64::*;

impl SimdF64 for Avx2Fma {
    const LANES: usize = 4;
    type V = __m256d;
    type Half = Xmm;

    #[inline(always)]
    fn half(self) -> Xmm {
        Xmm(self)
    }

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

/// The `xmm` half of the AVX2 + FMA vectors (2 doubles, `vfmadd` on 128 bits): the tiled
/// kernels' tails of AVX2 and AVX-512 run on it. Built only from an [`Avx2Fma`] token.
#[derive(Clone, Copy)]
pub(crate) struct Xmm(Avx2Fma);

impl SimdF64 for Xmm {
    const LANES: usize = 2;
    type V = __m128d;
    type Half = FusedLane;

    #[inline(always)]
    fn half(self) -> FusedLane {
        FusedLane
    }
    #[inline(always)]
    fn splat(self, x: f64) -> __m128d {
        // SAFETY: the token proves SSE2 (part of AVX).
        unsafe { _mm_set1_pd(x) }
    }
    #[inline(always)]
    fn mul(self, a: __m128d, b: __m128d) -> __m128d {
        // SAFETY: the token proves SSE2.
        unsafe { _mm_mul_pd(a, b) }
    }
    #[inline(always)]
    fn fmadd(self, a: __m128d, b: __m128d, c: __m128d) -> __m128d {
        // SAFETY: the token proves FMA.
        unsafe { _mm_fmadd_pd(a, b, c) }
    }
    #[inline(always)]
    unsafe fn load(self, p: *const f64) -> __m128d {
        // SAFETY: the token proves SSE2; the caller guarantees 2 readable doubles.
        unsafe { _mm_loadu_pd(p) }
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f64, v: __m128d) {
        // SAFETY: the token proves SSE2; the caller guarantees 2 writable doubles.
        unsafe { _mm_storeu_pd(p, v) }
    }
    #[inline(always)]
    unsafe fn load_part(self, p: *const f64, _n: usize) -> __m128d {
        // SAFETY: `0 < n < 2`, so one double, which the caller guarantees readable; the upper
        // lane is zero.
        unsafe { _mm_load_sd(p) }
    }
    #[inline(always)]
    unsafe fn store_part(self, p: *mut f64, _n: usize, v: __m128d) {
        // SAFETY: `0 < n < 2`: one double, which the caller guarantees writable.
        unsafe { _mm_store_sd(p, v) }
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
    tiled: avx2_tiled,
    dynamic: avx2_rdyn,
}
