//! The `pulp` tier: the generic body of [`super::vector`] over [`SimdF64`] implemented for any
//! `pulp::Simd` type, run on `pulp`'s V4 (AVX-512, 8 lanes) or V3 (AVX2 + FMA + BMI2, 4 lanes),
//! and on a CPU with neither through the scalar tier (see [`run`]). It is the portable comparison point for the hand-written
//! kernels: the same skeleton, with `pulp` picking the instructions; its only `unsafe` is the
//! raw-pointer loads and stores of the [`SimdF64`] impl. Both V3 and V4 enable BMI2, so the
//! `pext` decoder inlines here too. The multiply-add is `mul_add_e_f64s`: fused on V3 and V4,
//! `a * b + c` (unfused) on pulp's scalar fallback.

use super::columns::RankColumns;
use super::scalar::FusedLane;
use super::vector::{dyn_body, OrderPolicy, SimdF64};
use super::{KernelError, RankSpec, SegmentInput};
use crate::decode::{Decode, HwBits};
use crate::sink::RowSink;
use core::marker::PhantomData;
use pulp::x86::{V3, V4};
use pulp::{Simd, WithSimd};

/// A `pulp` architecture as a [`SimdF64`]: holding a `pulp::Simd` value proves its features.
#[derive(Clone, Copy)]
pub(crate) struct PulpSimd<S>(S);

impl<S: Simd> SimdF64 for PulpSimd<S> {
    const LANES: usize = core::mem::size_of::<S::f64s>() / core::mem::size_of::<f64>();
    type V = S::f64s;
    /// Tails go straight to one fused lane: `pulp` has no generic narrower vector.
    type Half = FusedLane;

    #[inline(always)]
    fn half(self) -> FusedLane {
        FusedLane
    }

    #[inline(always)]
    fn splat(self, x: f64) -> S::f64s {
        self.0.splat_f64s(x)
    }
    #[inline(always)]
    fn mul(self, a: S::f64s, b: S::f64s) -> S::f64s {
        self.0.mul_f64s(a, b)
    }
    /// Fused where the ISA has FMA (V3, V4); `a * b + c` on pulp's scalar fallback.
    #[inline(always)]
    fn fmadd(self, a: S::f64s, b: S::f64s, c: S::f64s) -> S::f64s {
        self.0.mul_add_e_f64s(a, b, c)
    }
    #[inline(always)]
    unsafe fn load(self, p: *const f64) -> S::f64s {
        // SAFETY: `S::f64s` is `LANES` doubles (`Pod`: every bit pattern is a value), and the
        // caller guarantees `p` is valid for reading `LANES` doubles; `read_unaligned` needs
        // no alignment.
        unsafe { p.cast::<S::f64s>().read_unaligned() }
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f64, v: S::f64s) {
        // SAFETY: `S::f64s` is `LANES` doubles and the caller guarantees `p` is valid for
        // writing `LANES` doubles; `write_unaligned` needs no alignment.
        unsafe { p.cast::<S::f64s>().write_unaligned(v) }
    }
    #[inline(always)]
    unsafe fn load_part(self, p: *const f64, n: usize) -> S::f64s {
        // SAFETY: the caller guarantees `p` is valid for reading `n` doubles (initialized
        // factor or output values), and nothing writes them while this slice lives.
        let part = unsafe { core::slice::from_raw_parts(p, n) };
        self.0.partial_load_f64s(part)
    }
    #[inline(always)]
    unsafe fn store_part(self, p: *mut f64, n: usize, v: S::f64s) {
        // SAFETY: the caller guarantees `p` is valid for writing `n` doubles with no other
        // access to them meanwhile.
        let part = unsafe { core::slice::from_raw_parts_mut(p, n) };
        self.0.partial_store_f64s(part, v)
    }
}

/// One segment as a `pulp` operation: the rank variant, the order policy `O`, the inputs.
struct Segment<'s, 'a, I, D, S, O> {
    spec: RankSpec,
    input: &'s SegmentInput<'a, I>,
    dec: &'s D,
    sink: &'s mut S,
    order: PhantomData<O>,
}

impl<I, D, S, O> WithSimd for Segment<'_, '_, I, D, S, O>
where
    I: HwBits,
    D: Decode<I>,
    S: RowSink,
    O: OrderPolicy,
{
    type Output = Result<(), KernelError>;

    /// The fixed ranks as [`RankColumns`] (blocks of at most 8 vectors in registers, as the
    /// explicit tiers, laid out by `V`'s lane count at compile time); any other rank through
    /// the tiled or the runtime-rank body.
    #[inline(always)]
    fn with_simd<V: Simd>(self, simd: V) -> Self::Output {
        let Segment {
            spec,
            input,
            dec,
            sink,
            ..
        } = self;
        let t = PulpSimd(simd);
        match spec {
            RankSpec::Fixed(8) => O::run(t, input, dec, sink, RankColumns::<8>),
            RankSpec::Fixed(16) => O::run(t, input, dec, sink, RankColumns::<16>),
            RankSpec::Fixed(32) => O::run(t, input, dec, sink, RankColumns::<32>),
            RankSpec::Fixed(64) => O::run(t, input, dec, sink, RankColumns::<64>),
            RankSpec::Tiled => O::tiled::<PulpSimd<V>, I, D, S>(t, input, dec, sink),
            RankSpec::Fixed(_) | RankSpec::Dynamic => {
                dyn_body::<PulpSimd<V>, I, D, S>(t, input, dec, sink)
            }
        }
    }
}

/// Runs the rank variant `spec` (checked against the input's rank by `run_segment`) on the best
/// `pulp` architecture of this CPU, V4 (AVX-512) or V3 (AVX2 + FMA + BMI2), with order policy
/// `O`; `None` on a CPU with neither. There `pulp` would run its scalar architecture, whose
/// unfused `a * b + c` on one lane is the scalar tier's arithmetic, so the caller runs that
/// tier instead: one copy of the scalar loops in the build, not two.
pub(super) fn run<I, D, S, O>(
    spec: RankSpec,
    dec: &D,
    input: &SegmentInput<'_, I>,
    sink: &mut S,
) -> Option<Result<(), KernelError>>
where
    I: HwBits,
    D: Decode<I>,
    S: RowSink,
    O: OrderPolicy,
{
    let segment = Segment::<_, _, _, O> {
        spec,
        input,
        dec,
        sink,
        order: PhantomData,
    };
    if let Some(v4) = V4::try_new() {
        Some(Simd::vectorize(v4, segment))
    } else {
        V3::try_new().map(|v3| Simd::vectorize(v3, segment))
    }
}
