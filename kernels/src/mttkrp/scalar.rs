//! The portable tier: the generic body of [`super::vector`] with one-lane "vectors" (plain
//! `f64`, no ISA-specific code beyond BMI2 for decoding), as memchr and matrixmultiply fold
//! their scalar fallback into the generic algorithm. The multiply-add is unfused (two
//! roundings, what the baseline target computes); the compiler may auto-vectorize the unrolled
//! column loops for the baseline target only.

use super::vector::{AnyOrder, OrderPolicy, SimdF64};
use super::{KernelError, RankSpec, SegmentInput};
use crate::decode::{Decode, HwBits, PextDecoder, RunsDecoder};
use crate::isa::{Bmi2, Scalar};
use crate::sink::RowSink;

impl SimdF64 for Scalar {
    const LANES: usize = 1;
    type V = f64;
    type Half = Scalar;

    #[inline(always)]
    fn half(self) -> Scalar {
        self
    }

    #[inline(always)]
    fn splat(self, x: f64) -> f64 {
        x
    }
    #[inline(always)]
    fn mul(self, a: f64, b: f64) -> f64 {
        a * b
    }
    /// Unfused on purpose: the portable tier computes `a * b` then adds, as it always has.
    #[inline(always)]
    fn fmadd(self, a: f64, b: f64, c: f64) -> f64 {
        a * b + c
    }
    #[inline(always)]
    unsafe fn load(self, p: *const f64) -> f64 {
        // SAFETY: the caller guarantees `p` is readable (unaligned reads are allowed).
        unsafe { p.read_unaligned() }
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f64, v: f64) {
        // SAFETY: the caller guarantees `p` is writable.
        unsafe { p.write_unaligned(v) }
    }
    /// With one lane there is no partial vector (`0 < n < 1` is empty): reads nothing.
    #[inline(always)]
    unsafe fn load_part(self, _p: *const f64, _n: usize) -> f64 {
        0.0
    }
    /// With one lane there is no partial vector: writes nothing.
    #[inline(always)]
    unsafe fn store_part(self, _p: *mut f64, _n: usize, _v: f64) {}
}

/// One fused lane: the last rung of the explicit tiers' narrow tails (`ymm` -> `xmm` -> this)
/// and the `pulp` tier's tail. `f64::mul_add` is one `vfmadd231sd` inside an FMA-enabled
/// entry point; outside one (pulp's scalar fallback, which has no tail) it is a correct,
/// slower library call. Plain `f64` operations: no token needed.
#[derive(Clone, Copy)]
pub(crate) struct FusedLane;

impl SimdF64 for FusedLane {
    const LANES: usize = 1;
    type V = f64;
    type Half = FusedLane;

    #[inline(always)]
    fn half(self) -> FusedLane {
        self
    }
    #[inline(always)]
    fn splat(self, x: f64) -> f64 {
        x
    }
    #[inline(always)]
    fn mul(self, a: f64, b: f64) -> f64 {
        a * b
    }
    #[inline(always)]
    fn fmadd(self, a: f64, b: f64, c: f64) -> f64 {
        a.mul_add(b, c)
    }
    #[inline(always)]
    unsafe fn load(self, p: *const f64) -> f64 {
        // SAFETY: the caller guarantees `p` is readable (unaligned reads are allowed).
        unsafe { p.read_unaligned() }
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f64, v: f64) {
        // SAFETY: the caller guarantees `p` is writable.
        unsafe { p.write_unaligned(v) }
    }
    /// With one lane there is no partial vector: reads nothing.
    #[inline(always)]
    unsafe fn load_part(self, _p: *const f64, _n: usize) -> f64 {
        0.0
    }
    /// With one lane there is no partial vector: writes nothing.
    #[inline(always)]
    unsafe fn store_part(self, _p: *mut f64, _n: usize, _v: f64) {}
}

/// Runs the rank variant `spec` through the generic bodies with the one-lane token: the fixed
/// ranks as blocks of 8 columns, fully unrolled; any rank as tiles of 8, 4, 2 and 1 columns;
/// the runtime-rank fallback in pieces.
#[inline(always)]
fn rank_dispatch<I: HwBits, D: Decode<I>, S: RowSink>(
    spec: RankSpec,
    input: &SegmentInput<'_, I>,
    dec: &D,
    sink: &mut S,
) -> Result<(), KernelError> {
    let tok = Scalar::new();
    match spec {
        RankSpec::Fixed(8) => AnyOrder::fixed::<Scalar, I, D, S, 8, 1>(tok, input, dec, sink),
        RankSpec::Fixed(16) => AnyOrder::fixed::<Scalar, I, D, S, 8, 2>(tok, input, dec, sink),
        RankSpec::Fixed(32) => AnyOrder::fixed::<Scalar, I, D, S, 8, 4>(tok, input, dec, sink),
        RankSpec::Fixed(64) => AnyOrder::fixed::<Scalar, I, D, S, 8, 8>(tok, input, dec, sink),
        RankSpec::Tiled => AnyOrder::tiled::<Scalar, I, D, S>(tok, input, dec, sink),
        RankSpec::Fixed(_) | RankSpec::Dynamic => {
            super::vector::dyn_body::<Scalar, I, D, S>(tok, input, dec, sink)
        }
    }
}

pub(super) fn run_runs<I: HwBits, S: RowSink>(
    spec: RankSpec,
    dec: &RunsDecoder<I>,
    input: &SegmentInput<'_, I>,
    sink: &mut S,
) -> Result<(), KernelError> {
    rank_dispatch(spec, input, dec, sink)
}

pub(super) fn run_pext<I: HwBits, S: RowSink>(
    spec: RankSpec,
    dec: &PextDecoder<I>,
    input: &SegmentInput<'_, I>,
    sink: &mut S,
) -> Result<(), KernelError> {
    // SAFETY: the decoder's token proves the CPU has BMI2 and POPCNT, the entry's features.
    unsafe { scalar_pext_bmi2(dec.token(), spec, dec, input, sink) }
}

// Thin entry point: `bmi2` lets `pext` inline into the loop; the body stays generic.
#[target_feature(enable = "bmi2,popcnt")]
fn scalar_pext_bmi2<I: HwBits, S: RowSink>(
    _bmi2: Bmi2,
    spec: RankSpec,
    dec: &PextDecoder<I>,
    input: &SegmentInput<'_, I>,
    sink: &mut S,
) -> Result<(), KernelError> {
    rank_dispatch(spec, input, dec, sink)
}
