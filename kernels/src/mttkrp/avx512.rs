//! AVX-512F kernels: `zmm` vectors of 8 doubles, `vfmadd` into the output row, opmask tails
//! (`_mm512_maskz_loadu_pd` / `_mm512_mask_storeu_pd`). Entry points enable BMI2 too, so the
//! `pext` decoder inlines.

use super::vector::{isa_kernels, SimdF64};
use crate::isa::{Avx2Fma, Avx512};
use core::arch::x86_64::*;

impl SimdF64 for Avx512 {
    const LANES: usize = 8;
    type V = __m512d;
    type Half = Avx2Fma;

    #[inline(always)]
    fn half(self) -> Avx2Fma {
        self.avx2()
    }

    #[inline(always)]
    fn splat(self, x: f64) -> __m512d {
        // SAFETY: the token proves AVX-512F.
        unsafe { _mm512_set1_pd(x) }
    }
    #[inline(always)]
    fn mul(self, a: __m512d, b: __m512d) -> __m512d {
        // SAFETY: the token proves AVX-512F.
        unsafe { _mm512_mul_pd(a, b) }
    }
    #[inline(always)]
    fn fmadd(self, a: __m512d, b: __m512d, c: __m512d) -> __m512d {
        // SAFETY: the token proves AVX-512F (which includes the 512-bit FMA).
        unsafe { _mm512_fmadd_pd(a, b, c) }
    }
    #[inline(always)]
    unsafe fn load(self, p: *const f64) -> __m512d {
        // SAFETY: the token proves AVX-512F; the caller guarantees 8 readable doubles.
        unsafe { _mm512_loadu_pd(p) }
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f64, v: __m512d) {
        // SAFETY: the token proves AVX-512F; the caller guarantees 8 writable doubles.
        unsafe { _mm512_storeu_pd(p, v) }
    }
    #[inline(always)]
    unsafe fn load_part(self, p: *const f64, n: usize) -> __m512d {
        // SAFETY: the token proves AVX-512F; masked-off lanes are not accessed (no fault), and
        // the caller guarantees the `n` enabled lanes are readable.
        unsafe { _mm512_maskz_loadu_pd(lanes_below(n), p) }
    }
    #[inline(always)]
    unsafe fn store_part(self, p: *mut f64, n: usize, v: __m512d) {
        // SAFETY: as for `load_part`, for writes.
        unsafe { _mm512_mask_storeu_pd(p, lanes_below(n), v) }
    }
}

/// The opmask with lanes `0..n` set (`n < 8`).
#[inline(always)]
fn lanes_below(n: usize) -> __mmask8 {
    ((1u32 << n) - 1) as __mmask8
}

isa_kernels! {
    token: Avx512,
    features: "avx512f,avx2,fma,bmi1,bmi2,popcnt",
    fixed: {
        avx512_r8 => 8 = <1, 1>,
        avx512_r16 => 16 = <2, 1>,
        avx512_r32 => 32 = <4, 1>,
        avx512_r64 => 64 = <8, 1>,
    }
    tiled: avx512_tiled,
    dynamic: avx512_rdyn,
}
