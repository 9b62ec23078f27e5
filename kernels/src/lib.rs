//! `alto-kernels`: the hot per-nonzero work of the ALTO sparse tensor format.
//!
//! - [`aligned`]: 64-byte aligned f64 buffers for factors and outputs;
//! - [`index`]: the linearized index word (`u32`/`u64`/`u128`) and portable bit deposit/extract;
//! - [`decode`]: de-linearization, BMI2 `pext` or shift-and-mask over mask bit runs;
//! - [`sink`]: conflict-resolution targets (plain, atomic, flag-guided);
//! - [`baselines`]: the `#[target_feature]` entry points of the evaluation baselines;
//! - [`isa`]: capability tokens (holding one proves the CPU has the instructions);
//! - [`rows`]: the CP-ALS row kernels (solve, Gram, scale), portable and AVX2+FMA;
//! - [`probe`]: the roofline probe's peak-FMA and bandwidth loops;
//! - [`mttkrp`]: the segment kernels (scalar, `pulp`, AVX2, AVX-512), their named variants and
//!   their dispatch.
//!
//! Everything takes plain slices; the `alto` crate owns tensors, threads and strategy choice.

pub mod aligned;
pub mod baselines;
pub mod decode;
pub mod index;
pub mod isa;
pub mod mttkrp;
#[cfg(target_arch = "x86_64")]
pub mod probe;
pub mod rows;
pub mod sink;

pub use aligned::AlignedBuf;
pub use decode::{
    Bmi2, Decode, HwBits, ModeDecode, PextDecoder, PextMode, RunsDecoder, RunsMode, MAX_ORDER,
};
pub use index::AltoIndex;
pub use isa::{Avx2Fma, Avx512, Bmi2Body, CpuIdentity, Fma, Scalar};
pub use mttkrp::{
    default_decode_kind, run_segment, AnyDecoder, DecodeKind, Isa, KernelError, KernelId,
    KernelIndex, RankSpec, SegmentInput, DEFAULT_PREFETCH, SPECIALIZED_RANKS,
};
pub use sink::{
    as_atomic, AnyRows, AtomicRows, FlaggedRows, PlainRows, RowSink, RowWindow, SegmentSink,
};
