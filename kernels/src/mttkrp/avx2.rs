//! AVX2 + FMA kernels: `ymm` vectors of 4 doubles, `vfmadd` into the output row, masked tails
//! with `vmaskmovpd`. Entry points enable BMI2 too, so the `pext` decoder inlines.

use super::vector::{dyn_body, OrderPolicy, SimdF64};
use super::{KernelError, RankSpec, SegmentInput};
use crate::decode::{Decode, HwBits};
use crate::isa::Avx2Fma;
use crate::sink::RowSink;
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
        unsafe { _mm256_maskload_pd(p, lanes_below(n)) }
    }
    #[inline(always)]
    unsafe fn store_part(self, p: *mut f64, n: usize, v: __m256d) {
        // SAFETY: as for `load_part`, for writes.
        unsafe { _mm256_maskstore_pd(p, lanes_below(n), v) }
    }
}

/// A lane mask with lanes `0..n` set (sign bit of each 64-bit lane).
#[inline(always)]
fn lanes_below(n: usize) -> __m256i {
    // SAFETY: only reached from the token's methods, so AVX2 is present.
    unsafe { _mm256_cmpgt_epi64(_mm256_set1_epi64x(n as i64), _mm256_setr_epi64x(0, 1, 2, 3)) }
}

/// Defines one `#[target_feature]` entry point per rank variant. They are `#[inline(never)]` so
/// each kernel is one symbol named like the kernel (the disassembly test finds them by name).
macro_rules! entry_points {
    ($($name:ident => fixed::<$nv:literal, $blocks:literal>;)*) => {$(
        #[target_feature(enable = "avx2,fma,bmi1,bmi2,popcnt")]
        #[inline(never)]
        pub(crate) fn $name<I: HwBits, D: Decode<I>, S: RowSink, O: OrderPolicy>(
            tok: Avx2Fma,
            input: &SegmentInput<'_, I>,
            dec: &D,
            sink: &mut S,
        ) -> Result<(), KernelError> {
            O::fixed::<Avx2Fma, I, D, S, $nv, $blocks>(tok, input, dec, sink)
        }
    )*};
}

entry_points! {
    avx2_r8 => fixed::<2, 1>;
    avx2_r16 => fixed::<4, 1>;
    avx2_r32 => fixed::<8, 1>;
    avx2_r64 => fixed::<8, 2>;
}

/// The runtime-rank kernel.
#[target_feature(enable = "avx2,fma,bmi1,bmi2,popcnt")]
#[inline(never)]
pub(crate) fn avx2_rdyn<I: HwBits, D: Decode<I>, S: RowSink>(
    tok: Avx2Fma,
    input: &SegmentInput<'_, I>,
    dec: &D,
    sink: &mut S,
) -> Result<(), KernelError> {
    dyn_body::<Avx2Fma, I, D, S>(tok, input, dec, sink)
}

/// Runs the rank variant `spec` (checked against the input's rank by `run_segment`).
pub(super) fn run<I: HwBits, D: Decode<I>, S: RowSink, O: OrderPolicy>(
    tok: Avx2Fma,
    spec: RankSpec,
    dec: &D,
    input: &SegmentInput<'_, I>,
    sink: &mut S,
) -> Result<(), KernelError> {
    // SAFETY: `tok` proves the CPU has every feature the entry points enable.
    unsafe {
        match spec {
            RankSpec::Fixed(8) => avx2_r8::<I, D, S, O>(tok, input, dec, sink),
            RankSpec::Fixed(16) => avx2_r16::<I, D, S, O>(tok, input, dec, sink),
            RankSpec::Fixed(32) => avx2_r32::<I, D, S, O>(tok, input, dec, sink),
            RankSpec::Fixed(64) => avx2_r64::<I, D, S, O>(tok, input, dec, sink),
            RankSpec::Fixed(_) | RankSpec::Dynamic => avx2_rdyn(tok, input, dec, sink),
        }
    }
}
