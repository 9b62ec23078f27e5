//! AVX-512F kernels: `zmm` vectors of 8 doubles, `vfmadd` into the output row, opmask tails
//! (`_mm512_maskz_loadu_pd` / `_mm512_mask_storeu_pd`). Entry points enable BMI2 too, so the
//! `pext` decoder inlines.

use super::vector::{dyn_body, OrderPolicy, SimdF64};
use super::{KernelError, RankSpec, SegmentInput};
use crate::decode::{Decode, HwBits};
use crate::isa::Avx512;
use crate::sink::RowSink;
use core::arch::x86_64::*;

impl SimdF64 for Avx512 {
    const LANES: usize = 8;
    type V = __m512d;

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

/// Defines one `#[target_feature]` entry point per rank variant. They are `#[inline(never)]` so
/// each kernel is one symbol named like the kernel (the disassembly test finds them by name).
macro_rules! entry_points {
    ($($name:ident => fixed::<$nv:literal, $blocks:literal>;)*) => {$(
        #[target_feature(enable = "avx512f,avx2,fma,bmi1,bmi2,popcnt")]
        #[inline(never)]
        pub(crate) fn $name<I: HwBits, D: Decode<I>, S: RowSink, O: OrderPolicy>(
            tok: Avx512,
            input: &SegmentInput<'_, I>,
            dec: &D,
            sink: &mut S,
        ) -> Result<(), KernelError> {
            O::fixed::<Avx512, I, D, S, $nv, $blocks>(tok, input, dec, sink)
        }
    )*};
}

entry_points! {
    avx512_r8 => fixed::<1, 1>;
    avx512_r16 => fixed::<2, 1>;
    avx512_r32 => fixed::<4, 1>;
    avx512_r64 => fixed::<8, 1>;
}

/// The runtime-rank kernel.
#[target_feature(enable = "avx512f,avx2,fma,bmi1,bmi2,popcnt")]
#[inline(never)]
pub(crate) fn avx512_rdyn<I: HwBits, D: Decode<I>, S: RowSink>(
    tok: Avx512,
    input: &SegmentInput<'_, I>,
    dec: &D,
    sink: &mut S,
) -> Result<(), KernelError> {
    dyn_body::<Avx512, I, D, S>(tok, input, dec, sink)
}

/// Runs the rank variant `spec` (checked against the input's rank by `run_segment`).
pub(super) fn run<I: HwBits, D: Decode<I>, S: RowSink, O: OrderPolicy>(
    tok: Avx512,
    spec: RankSpec,
    dec: &D,
    input: &SegmentInput<'_, I>,
    sink: &mut S,
) -> Result<(), KernelError> {
    // SAFETY: `tok` proves the CPU has every feature the entry points enable.
    unsafe {
        match spec {
            RankSpec::Fixed(8) => avx512_r8::<I, D, S, O>(tok, input, dec, sink),
            RankSpec::Fixed(16) => avx512_r16::<I, D, S, O>(tok, input, dec, sink),
            RankSpec::Fixed(32) => avx512_r32::<I, D, S, O>(tok, input, dec, sink),
            RankSpec::Fixed(64) => avx512_r64::<I, D, S, O>(tok, input, dec, sink),
            RankSpec::Fixed(_) | RankSpec::Dynamic => avx512_rdyn(tok, input, dec, sink),
        }
    }
}
