//! The per-nonzero MTTKRP work on one segment of an ALTO tensor:
//! for each nonzero `x`, decode its coordinates, form `v * hadamard_{m != n} U_m(i_m, :)` and add
//! it to the target row `i_n` through a [`RowSink`].
//!
//! Four tiers, never mixed (the naive oracle lives in the tests), all sharing one per-nonzero
//! skeleton: the generic body of [`vector`] over its small `SimdF64` vector trait,
//! instantiated once per tier:
//! - [`Isa::Scalar`]: portable Rust: `SimdF64` with one lane on the
//!   [`Scalar`](crate::isa::Scalar) token (`scalar`);
//! - [`Isa::Pulp`]: `SimdF64` on a wrapper of `pulp::Simd`, run on `pulp`'s AVX-512 (V4) or
//!   AVX2 (V3), else through the scalar tier: the portable-SIMD comparison point (`pulp_simd`);
//! - [`Isa::Avx2`], [`Isa::Avx512`]: explicit `std::arch` kernels: `SimdF64` on each ISA's
//!   token, FMA into the output row, masked tails.
//!
//! Layout: `names` (kernel names and parsing), `decoder` (decoder choice), `error`, `locate`
//! (row location and chunk bounds), `vector` (the one per-nonzero skeleton and the
//! `isa_kernels!` entry-point macro), `columns` (its column work: fixed ranks, tiles, runtime
//! ranks), one file per tier,
//! and [`run_segment`] here.
//!
//! Every kernel is specialized for ranks 8, 16, 32 and 64 (const generics: the rank loop is fully
//! unrolled in registers), has a tiled variant for any rank (`_tiled`: register tiles of 8, 4,
//! 2 and 1 vectors, each const-generic, and a tail in narrower vectors; see `columns`) and the
//! runtime-rank fallback (`_rdyn`). Thin `#[target_feature]` entry points
//! (`#[inline(never)]`, named like the kernel: `avx512_r16`, `avx2_tiled`) wrap the
//! `#[inline(always)]` bodies, so the BMI2 `pext` decoder and the intrinsics inline into one loop;
//! the `pulp` tier's entry points are `pulp`'s own (`Arch::dispatch`), around the same bodies.
//! [`run_segment`] checks the inputs and dispatches once per segment.
//!
//! What is a compile-time choice, and what is not (each copy of the loop costs build time;
//! docs/building.md has the measurements): the ISA, the decoder, the rank variant and, for the
//! explicit tiers' `pext` kernels on 32- and 64-bit words, the order (3, 4 or 5) are type or
//! const parameters of the loop. The index width is one too, but the kernels are instantiated
//! here, once per width ([`KernelIndex`]), never in a caller's crate. The sink is chosen at run
//! time ([`AnyRows`]: the loop tests one flag mask per nonzero, set per segment), and so is
//! software prefetch (one test per nonzero, in the loops that keep the order a run-time value).

mod avx2;
mod avx512;
mod columns;
mod decoder;
mod error;
mod locate;
mod names;
mod pulp_simd;
mod scalar;
mod vector;

pub use decoder::{default_decode_kind, AnyDecoder, DecodeKind};
pub use error::KernelError;
pub(crate) use locate::{first_out_of_range, Bounds, FixedModes, Locate, Others};
pub use names::{Isa, KernelId, RankSpec, SPECIALIZED_RANKS};

use crate::decode::{HwBits, MAX_ORDER};
use crate::isa::{Avx2Fma, Avx512};
use crate::sink::{AnyRows, SegmentSink};
use vector::{AnyOrder, ByOrder, OrderPolicy};

/// Default software-prefetch distance, in nonzeros (0 = off). Chosen by measurement on the
/// benchmark tensors (see the `kernels` benchmark's prefetch ladder): factor rows of these
/// tensors stay in L2, where the hardware prefetcher and out-of-order execution hide latency.
pub const DEFAULT_PREFETCH: usize = 0;

/// The inputs of one segment's MTTKRP: plain slices, checked by [`run_segment`].
#[derive(Clone, Copy)]
pub struct SegmentInput<'a, I> {
    /// Linearized indices of the segment's nonzeros (flag bits above the masks are allowed).
    pub idx: &'a [I],
    /// Values, same length as `idx`.
    pub vals: &'a [f64],
    /// Row-major factor matrices, one per mode, each `I_m x rank` (the target's is not read).
    /// A coordinate at or beyond a factor's row count is reported as
    /// [`KernelError::CoordOutOfRange`].
    pub factors: &'a [&'a [f64]],
    /// The target mode `n`.
    pub target: usize,
    /// Number of columns of every factor and of the output.
    pub rank: usize,
    /// The helper-flag bit of the target mode (zero when the mode has none).
    pub boundary_mask: I,
    /// Software prefetch of the factor rows of the nonzero this many positions ahead
    /// (0 = off; [`DEFAULT_PREFETCH`] is the measured default). Every tier honours it.
    pub prefetch: usize,
}

/// Runs `kernel` over one segment. Checks ISA availability, rank, order and shapes, then
/// dispatches to the monomorphized entry point (one `match` per segment, not per nonzero).
///
/// The kernels are compiled once, in this crate, per index width and for the run-time sink
/// [`AnyRows`]: this generic wrapper only lends the sink as one ([`SegmentSink::as_any`]), so
/// a caller's crate builds none of them again.
#[inline]
pub fn run_segment<I: KernelIndex, S: SegmentSink>(
    kernel: KernelId,
    decoder: &AnyDecoder<I>,
    input: &SegmentInput<'_, I>,
    sink: &mut S,
) -> Result<(), KernelError> {
    I::run_compiled(kernel, decoder, input, &mut sink.as_any())
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for u32 {}
    impl Sealed for u64 {}
    impl Sealed for u128 {}
}

/// The index words with compiled kernels: `u32`, `u64` and `u128`.
pub trait KernelIndex: HwBits + sealed::Sealed {
    /// [`run_segment`] for this index width: a non-generic function of this crate, so its
    /// kernels are instantiated here, once.
    #[doc(hidden)]
    fn run_compiled(
        kernel: KernelId,
        decoder: &AnyDecoder<Self>,
        input: &SegmentInput<'_, Self>,
        sink: &mut AnyRows<'_>,
    ) -> Result<(), KernelError>;
}

macro_rules! kernel_index {
    ($($t:ty => $pext_order:ty),* $(,)?) => {$(
        impl KernelIndex for $t {
            #[inline(never)]
            fn run_compiled(
                kernel: KernelId,
                decoder: &AnyDecoder<$t>,
                input: &SegmentInput<'_, $t>,
                sink: &mut AnyRows<'_>,
            ) -> Result<(), KernelError> {
                run_checked::<$t, $pext_order>(kernel, decoder, input, sink)
            }
        }
    )*};
}
// The explicit tiers unroll the order of the `pext` kernels for 32- and 64-bit words. A
// 128-bit word (over 64 index bits: rare, and two `pext` per mode) keeps the order a run-time
// value, which spares the build two thirds of its copies.
kernel_index!(u32 => ByOrder, u64 => ByOrder, u128 => AnyOrder);

/// [`run_segment`]'s checks and dispatch, for the one sink type the kernels are built for;
/// `PextOrder`: whether the explicit tiers' `pext` kernels unroll the order.
fn run_checked<I: HwBits, PextOrder: OrderPolicy>(
    kernel: KernelId,
    decoder: &AnyDecoder<I>,
    input: &SegmentInput<'_, I>,
    sink: &mut AnyRows<'_>,
) -> Result<(), KernelError> {
    if !kernel.rank.supports(input.rank) {
        return Err(KernelError::RankMismatch {
            kernel,
            rank: input.rank,
        });
    }
    let order = decoder.order();
    if order > MAX_ORDER {
        return Err(KernelError::OrderTooLarge(order));
    }
    if order < 2 {
        return Err(KernelError::OrderTooSmall(order));
    }
    if input.idx.len() != input.vals.len() {
        return Err(KernelError::LengthMismatch {
            idx: input.idx.len(),
            vals: input.vals.len(),
        });
    }
    if input.factors.len() != order {
        return Err(KernelError::FactorCount {
            factors: input.factors.len(),
            order,
        });
    }
    if input.target >= order {
        return Err(KernelError::TargetOutOfRange {
            target: input.target,
            order,
        });
    }
    let spec = kernel.rank;
    let unavailable = KernelError::IsaUnavailable(kernel.isa);
    match (kernel.isa, decoder) {
        (Isa::Scalar, AnyDecoder::Pext(d)) => scalar::run_pext(spec, d, input, sink),
        (Isa::Scalar, AnyDecoder::Runs(d)) => scalar::run_runs(spec, d, input, sink),
        // The pulp tier is the portable comparison point, not the fast path: one body for every
        // order keeps its three architectures (V4, V3, scalar) from tripling the build, as the
        // order-specialized bodies would.
        (Isa::Pulp, AnyDecoder::Pext(d)) => {
            match pulp_simd::run::<_, _, _, AnyOrder>(spec, d, input, sink) {
                Some(done) => done,
                None => scalar::run_pext(spec, d, input, sink),
            }
        }
        (Isa::Pulp, AnyDecoder::Runs(d)) => {
            match pulp_simd::run::<_, _, _, AnyOrder>(spec, d, input, sink) {
                Some(done) => done,
                None => scalar::run_runs(spec, d, input, sink),
            }
        }
        (Isa::Avx2, AnyDecoder::Pext(d)) => avx2::run::<_, _, _, PextOrder>(
            Avx2Fma::try_new().ok_or(unavailable)?,
            spec,
            d,
            input,
            sink,
        ),
        (Isa::Avx2, AnyDecoder::Runs(d)) => avx2::run::<_, _, _, AnyOrder>(
            Avx2Fma::try_new().ok_or(unavailable)?,
            spec,
            d,
            input,
            sink,
        ),
        (Isa::Avx512, AnyDecoder::Pext(d)) => avx512::run::<_, _, _, PextOrder>(
            Avx512::try_new().ok_or(unavailable)?,
            spec,
            d,
            input,
            sink,
        ),
        (Isa::Avx512, AnyDecoder::Runs(d)) => avx512::run::<_, _, _, AnyOrder>(
            Avx512::try_new().ok_or(unavailable)?,
            spec,
            d,
            input,
            sink,
        ),
    }
}
