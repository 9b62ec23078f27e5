//! The per-nonzero MTTKRP work on one segment of an ALTO tensor:
//! for each nonzero `x`, decode its coordinates, form `v * hadamard_{m != n} U_m(i_m, :)` and add
//! it to the target row `i_n` through a [`RowSink`].
//!
//! Three tiers, never mixed (the naive oracle lives in the tests):
//! - [`Isa::Scalar`]: portable Rust, one generic body (`scalar::segment_body`);
//! - [`Isa::Pulp`]: the same algorithm written once over `pulp::Simd` and dispatched by `pulp` to
//!   AVX-512 (V4), AVX2 (V3) or scalar: the portable-SIMD comparison point;
//! - [`Isa::Avx2`], [`Isa::Avx512`]: explicit `std::arch` kernels, one generic body over a tiny
//!   vector trait ([`vector`]) instantiated per ISA, FMA into the output row, masked tails.
//!
//! Every kernel is specialized for ranks 8, 16, 32 and 64 (const generics: the rank loop is fully
//! unrolled in registers) and has a runtime-rank variant. Thin `#[target_feature]` entry points
//! (`#[inline(never)]`, named like the kernel: `avx512_r16`, `avx2_rdyn`) wrap the
//! `#[inline(always)]` bodies, so the BMI2 `pext` decoder and the intrinsics inline into one loop.
//! [`run_segment`] checks the inputs and dispatches once per segment.

mod avx2;
mod avx512;
mod pulp_simd;
mod scalar;
mod vector;

use crate::decode::{Bmi2, Decode, HwBits, ModeDecode, PextDecoder, RunsDecoder, MAX_ORDER};
use crate::isa::{Avx2Fma, Avx512};
use crate::sink::{RowSink, RowWindow};
use core::fmt;
use std::sync::OnceLock;
use vector::{AnyOrder, ByOrder};

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
    /// (0 = off; [`DEFAULT_PREFETCH`] is the measured default). The scalar tier ignores it.
    pub prefetch: usize,
}

/// Rank specializations: the rank loop is fully unrolled for these ranks.
pub const SPECIALIZED_RANKS: [usize; 4] = [8, 16, 32, 64];

/// How the rank loop is compiled: for one fixed rank, or for any rank in chunks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RankSpec {
    /// Fully unrolled for exactly this rank (one of [`SPECIALIZED_RANKS`]).
    Fixed(usize),
    /// Any rank, processed in chunks of vectors with a masked tail.
    Dynamic,
}

impl RankSpec {
    /// The specialization for `rank` when one exists, else the dynamic loop.
    pub fn best_for(rank: usize) -> Self {
        if SPECIALIZED_RANKS.contains(&rank) {
            RankSpec::Fixed(rank)
        } else {
            RankSpec::Dynamic
        }
    }

    /// True when this kernel computes rank `rank` correctly.
    pub fn supports(self, rank: usize) -> bool {
        match self {
            RankSpec::Fixed(r) => r == rank,
            RankSpec::Dynamic => rank >= 1,
        }
    }
}

impl fmt::Display for RankSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RankSpec::Fixed(r) => write!(f, "r{r}"),
            RankSpec::Dynamic => write!(f, "rdyn"),
        }
    }
}

/// The instruction set a rank loop is written for, ordered worst to best.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Isa {
    /// Portable Rust; the compiler may auto-vectorize for the baseline target only.
    Scalar,
    /// The `pulp` crate's portable SIMD, dispatched at run time to AVX-512, AVX2+FMA or scalar.
    Pulp,
    /// Explicit AVX2 + FMA (`ymm`, 4 doubles), masked tails; needs the [`Avx2Fma`] token.
    Avx2,
    /// Explicit AVX-512F (`zmm`, 8 doubles), opmask tails; needs the [`Avx512`] token.
    Avx512,
}

impl Isa {
    /// Every ISA, worst first (so the last available one is the best).
    pub const ALL: [Isa; 4] = [Isa::Scalar, Isa::Pulp, Isa::Avx2, Isa::Avx512];

    pub fn name(self) -> &'static str {
        match self {
            Isa::Scalar => "scalar",
            Isa::Pulp => "pulp",
            Isa::Avx2 => "avx2",
            Isa::Avx512 => "avx512",
        }
    }

    /// Whether the running CPU can execute this ISA's kernels (detected once per process).
    pub fn available(self) -> bool {
        static AVAILABLE: OnceLock<[bool; 4]> = OnceLock::new();
        let avail = AVAILABLE.get_or_init(|| {
            [
                true,
                true,
                Avx2Fma::try_new().is_some(),
                Avx512::try_new().is_some(),
            ]
        });
        avail[self as usize]
    }

    pub fn from_name(s: &str) -> Option<Isa> {
        Isa::ALL.into_iter().find(|isa| isa.name() == s)
    }
}

/// One kernel variant: ISA x rank specialization. Its name (`avx512_r16`, `avx2_rdyn`,
/// `pulp_r16`, `scalar_rdyn`) is the same string in the registry, on the command line, in CSV
/// columns and in plot legends; the MTTKRP driver prefixes the conflict-resolution strategy
/// (`pull_avx512_r16`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KernelId {
    pub isa: Isa,
    pub rank: RankSpec,
}

impl fmt::Display for KernelId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}_{}", self.isa.name(), self.rank)
    }
}

impl KernelId {
    /// Parses `avx512_r16` / `scalar_rdyn`.
    pub fn parse(name: &str) -> Option<KernelId> {
        let (isa, rank) = name.rsplit_once('_')?;
        let isa = Isa::from_name(isa)?;
        let rank = match rank {
            "rdyn" => RankSpec::Dynamic,
            r => {
                let r: usize = r.strip_prefix('r')?.parse().ok()?;
                if !SPECIALIZED_RANKS.contains(&r) {
                    return None;
                }
                RankSpec::Fixed(r)
            }
        };
        Some(KernelId { isa, rank })
    }

    /// Every kernel variant, available on this CPU or not.
    pub fn all() -> Vec<KernelId> {
        let mut v = Vec::new();
        for isa in Isa::ALL {
            for r in SPECIALIZED_RANKS {
                v.push(KernelId {
                    isa,
                    rank: RankSpec::Fixed(r),
                });
            }
            v.push(KernelId {
                isa,
                rank: RankSpec::Dynamic,
            });
        }
        v
    }

    /// The best kernel for `rank` on `isa`.
    pub fn best(isa: Isa, rank: usize) -> KernelId {
        KernelId {
            isa,
            rank: RankSpec::best_for(rank),
        }
    }
}

/// A decoder chosen at run time.
#[derive(Clone, Debug)]
pub enum AnyDecoder<I> {
    Pext(PextDecoder<I>),
    Runs(RunsDecoder<I>),
}

/// Which de-linearization to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DecodeKind {
    /// BMI2 `pext`.
    Pext,
    /// Shift-and-mask over bit runs.
    Runs,
}

impl DecodeKind {
    pub fn name(self) -> &'static str {
        match self {
            DecodeKind::Pext => "pext",
            DecodeKind::Runs => "runs",
        }
    }
}

/// CPU identity used by [`default_decode_kind`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuIdentity {
    pub amd: bool,
    /// Display family (base family + extended family).
    pub family: u32,
    pub has_bmi2: bool,
}

impl CpuIdentity {
    pub fn detect() -> CpuIdentity {
        #[cfg(target_arch = "x86_64")]
        {
            use core::arch::x86_64::__cpuid;
            // cpuid leaves 0 and 1 exist on every x86-64 CPU (the intrinsic is safe here).
            let (l0, l1) = (__cpuid(0), __cpuid(1));
            let amd = (l0.ebx, l0.edx, l0.ecx) == (0x6874_7541, 0x6974_6e65, 0x444d_4163);
            let base = (l1.eax >> 8) & 0xf;
            let ext = (l1.eax >> 20) & 0xff;
            let family = if base == 0xf { base + ext } else { base };
            CpuIdentity {
                amd,
                family,
                has_bmi2: Bmi2::try_new().is_some(),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        CpuIdentity {
            amd: false,
            family: 0,
            has_bmi2: false,
        }
    }
}

/// The default decoder rule: BMI2 `pext` where the CPU has it natively fast; the bit-run
/// decoder otherwise. AMD before Zen 3 (family 0x17: Zen 1, Zen+, Zen 2, and older) runs
/// `pext` in microcode (hundreds of cycles), so those take the software path.
pub fn default_decode_kind(cpu: CpuIdentity) -> DecodeKind {
    let slow_pext = cpu.amd && cpu.family <= 0x17;
    if cpu.has_bmi2 && !slow_pext {
        DecodeKind::Pext
    } else {
        DecodeKind::Runs
    }
}

impl<I: HwBits> AnyDecoder<I> {
    /// Builds the decoder of `kind`; `None` when `Pext` is asked for on a CPU without BMI2.
    pub fn new(kind: DecodeKind, masks: &[I]) -> Option<Self> {
        match kind {
            DecodeKind::Pext => Some(AnyDecoder::Pext(PextDecoder::new(Bmi2::try_new()?, masks))),
            DecodeKind::Runs => Some(AnyDecoder::Runs(RunsDecoder::new(masks))),
        }
    }

    pub fn kind(&self) -> DecodeKind {
        match self {
            AnyDecoder::Pext(_) => DecodeKind::Pext,
            AnyDecoder::Runs(_) => DecodeKind::Runs,
        }
    }

    pub fn order(&self) -> usize {
        match self {
            AnyDecoder::Pext(d) => d.order(),
            AnyDecoder::Runs(d) => d.order(),
        }
    }

    pub fn coord(&self, idx: I, mode: usize) -> u64 {
        match self {
            AnyDecoder::Pext(d) => d.coord(idx, mode),
            AnyDecoder::Runs(d) => d.coord(idx, mode),
        }
    }
}

/// Errors a kernel call reports. All but [`KernelError::CoordOutOfRange`] are found before any
/// memory is touched; that one stops the segment where it was found (the sink then holds the
/// contributions of the nonzeros before it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KernelError {
    /// The kernel's ISA is not available on this CPU.
    IsaUnavailable(Isa),
    /// The kernel is specialized for another rank (or the rank is 0).
    RankMismatch { kernel: KernelId, rank: usize },
    /// Too many modes for the stack coordinate buffer.
    OrderTooLarge(usize),
    /// Fewer than two modes: MTTKRP needs a target and at least one other mode.
    OrderTooSmall(usize),
    /// `idx` and `vals` differ in length.
    LengthMismatch { idx: usize, vals: usize },
    /// Not one factor per mode.
    FactorCount { factors: usize, order: usize },
    /// The target mode does not exist.
    TargetOutOfRange { target: usize, order: usize },
    /// A decoded coordinate is not a row of its factor matrix.
    CoordOutOfRange {
        mode: usize,
        coord: u64,
        rows: usize,
    },
    /// The sink's rows have another width than the rank.
    SinkRank { sink: usize, rank: usize },
    /// A target coordinate is not one of the sink's rows `first .. first + rows`.
    RowOutOfRange { row: u64, first: u64, rows: u64 },
}

impl fmt::Display for KernelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KernelError::IsaUnavailable(isa) => {
                write!(f, "kernel ISA {} is not available on this CPU", isa.name())
            }
            KernelError::RankMismatch { kernel, rank } => {
                write!(f, "kernel {kernel} cannot compute rank {rank}")
            }
            KernelError::OrderTooLarge(n) => {
                write!(f, "order {n} exceeds the kernels' maximum of {MAX_ORDER}")
            }
            KernelError::OrderTooSmall(n) => write!(f, "order {n} is below the minimum of 2"),
            KernelError::LengthMismatch { idx, vals } => {
                write!(f, "{idx} indices but {vals} values")
            }
            KernelError::FactorCount { factors, order } => {
                write!(f, "{factors} factor matrices for {order} modes")
            }
            KernelError::TargetOutOfRange { target, order } => {
                write!(
                    f,
                    "target mode {target} does not exist in an order-{order} tensor"
                )
            }
            KernelError::CoordOutOfRange { mode, coord, rows } => {
                write!(
                    f,
                    "mode {mode} coordinate {coord} is outside its factor's {rows} rows"
                )
            }
            KernelError::RowOutOfRange { row, first, rows } => {
                write!(
                    f,
                    "target row {row} is outside the output rows {first}..{}",
                    first + rows
                )
            }
            KernelError::SinkRank { sink, rank } => {
                write!(
                    f,
                    "the output rows have {sink} columns, but the rank is {rank}"
                )
            }
        }
    }
}

impl std::error::Error for KernelError {}

/// Runs `kernel` over one segment. Checks ISA availability, rank, order and shapes, then
/// dispatches to the monomorphized entry point (one `match` per segment, not per nonzero).
pub fn run_segment<I: HwBits, S: RowSink>(
    kernel: KernelId,
    decoder: &AnyDecoder<I>,
    input: &SegmentInput<'_, I>,
    sink: &mut S,
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
        (Isa::Pulp, AnyDecoder::Pext(d)) => pulp_simd::run(spec, d, input, sink),
        (Isa::Pulp, AnyDecoder::Runs(d)) => pulp_simd::run(spec, d, input, sink),
        (Isa::Avx2, AnyDecoder::Pext(d)) => avx2::run::<_, _, _, ByOrder>(
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
        (Isa::Avx512, AnyDecoder::Pext(d)) => avx512::run::<_, _, _, ByOrder>(
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

/// The modes other than the target, with their one-mode decoders, factor slices and row
/// counts, gathered once per segment so the per-nonzero loop has no `m == target` test and
/// keeps the decoders (for `pext`: the masks) in registers.
pub(crate) struct Others<'a, M> {
    pub n: usize,
    pub dec: [M; MAX_ORDER],
    pub factor: [&'a [f64]; MAX_ORDER],
    /// Rows of each factor (`len / rank`): a coordinate below it has a whole row in the slice.
    pub rows: [u64; MAX_ORDER],
    /// The target mode's decoder.
    pub target: M,
}

impl<'a, M: Copy> Others<'a, M> {
    /// Gathers the non-target modes of `input`; `order >= 2`, `target < order` and `rank >= 1`
    /// were checked by [`run_segment`].
    #[inline(always)]
    pub fn new<'d, I: HwBits, D>(input: &SegmentInput<'a, I>, dec: &'d D, rank: usize) -> Self
    where
        D: Decode<I, Mode<'d> = M>,
    {
        let target = dec.mode(input.target);
        let mut o = Others {
            n: 0,
            dec: [target; MAX_ORDER],
            factor: [&[]; MAX_ORDER],
            rows: [0; MAX_ORDER],
            target,
        };
        for (m, &f) in input.factors.iter().enumerate().take(MAX_ORDER) {
            if m != input.target {
                o.dec[o.n] = dec.mode(m);
                o.factor[o.n] = f;
                o.rows[o.n] = (f.len() / rank) as u64;
                o.n += 1;
            }
        }
        o
    }

    /// The number of other modes: `N` when the kernel is specialized for it (`N > 0`).
    #[inline(always)]
    pub fn count<const N: usize>(&self) -> usize {
        if N == 0 {
            self.n.min(MAX_ORDER)
        } else {
            debug_assert_eq!(N, self.n);
            N
        }
    }

    /// Decodes the other modes' coordinates of `x` into row pointers (`ptrs[j]` is the start of
    /// row `i_m` of the `j`-th other factor). Checks nothing: a pointer may only be read when
    /// [`Bounds::check`] accepted `x`.
    #[inline(always)]
    pub fn locate<I: HwBits, const N: usize>(
        &self,
        x: I,
        rank: usize,
        ptrs: &mut [*const f64; MAX_ORDER],
    ) where
        M: ModeDecode<I>,
    {
        let n = self.count::<N>();
        let modes = self.dec[..n].iter().zip(&self.factor[..n]);
        for (p, (d, f)) in ptrs[..n].iter_mut().zip(modes) {
            let c = d.coord(x);
            *p = f.as_ptr().wrapping_add((c as usize).wrapping_mul(rank));
        }
    }

    /// Prefetches the other modes' factor rows of `x` into L1 (coordinates out of range are
    /// skipped; a prefetch never faults).
    #[inline(always)]
    pub fn prefetch<I: HwBits, const N: usize>(&self, x: I, rank: usize)
    where
        M: ModeDecode<I>,
    {
        for j in 0..self.count::<N>() {
            let c = self.dec[j].coord(x);
            if c < self.rows[j] {
                let row = &self.factor[j][c as usize * rank..(c as usize + 1) * rank];
                prefetch_slice(row);
            }
        }
    }
}

/// Row lookup for the other modes of a nonzero: [`Others`] for any order, [`FixedModes`] for a
/// compile-time order (its decoders, row counts and bases then live in registers).
pub(crate) trait Locate<I> {
    /// The number of other modes.
    fn count(&self) -> usize;
    /// [`Others::locate`] (unchecked).
    fn locate(&self, x: I, rank: usize, ptrs: &mut [*const f64; MAX_ORDER]);
    /// [`Others::prefetch`].
    fn prefetch(&self, x: I, rank: usize);
}

impl<I: HwBits, M: ModeDecode<I>> Locate<I> for Others<'_, M> {
    #[inline(always)]
    fn count(&self) -> usize {
        self.count::<0>()
    }
    #[inline(always)]
    fn locate(&self, x: I, rank: usize, ptrs: &mut [*const f64; MAX_ORDER]) {
        Others::locate::<I, 0>(self, x, rank, ptrs)
    }
    #[inline(always)]
    fn prefetch(&self, x: I, rank: usize) {
        Others::prefetch::<I, 0>(self, x, rank)
    }
}

/// The first `K` other modes of an [`Others`] (which must have exactly `K`), by value.
#[derive(Clone, Copy)]
pub(crate) struct FixedModes<'a, M, const K: usize> {
    dec: [M; K],
    factor: [&'a [f64]; K],
    rows: [u64; K],
}

impl<'a, M: Copy, const K: usize> FixedModes<'a, M, K> {
    #[inline(always)]
    pub fn new(o: &Others<'a, M>) -> Self {
        debug_assert_eq!(o.n, K);
        FixedModes {
            dec: core::array::from_fn(|j| o.dec[j]),
            factor: core::array::from_fn(|j| o.factor[j]),
            rows: core::array::from_fn(|j| o.rows[j]),
        }
    }
}

impl<I: HwBits, M: ModeDecode<I>, const K: usize> Locate<I> for FixedModes<'_, M, K> {
    #[inline(always)]
    fn count(&self) -> usize {
        K
    }
    #[inline(always)]
    // Indexed on purpose: the iterator form compiles to four more instructions per nonzero
    // (measured with callgrind on the segment benchmark).
    #[allow(clippy::needless_range_loop)]
    fn locate(&self, x: I, rank: usize, ptrs: &mut [*const f64; MAX_ORDER]) {
        for j in 0..K {
            let c = self.dec[j].coord(x);
            ptrs[j] = self.factor[j]
                .as_ptr()
                .wrapping_add((c as usize).wrapping_mul(rank));
        }
    }
    #[inline(always)]
    fn prefetch(&self, x: I, rank: usize) {
        for j in 0..K {
            let c = self.dec[j].coord(x);
            if c < self.rows[j] {
                prefetch_slice(&self.factor[j][c as usize * rank..(c as usize + 1) * rank]);
            }
        }
    }
}

/// Checks chunks of indices against the factors' row counts without decoding: a coordinate
/// `c = pext(x, mask)` is below `rows` exactly when `x & mask <= pdep(rows - 1, mask)`, because
/// `pext` keeps the order of the masked bits. That is an AND and a compare per mode, which the
/// compiler vectorizes (unlike `pext`), so the explicit kernels validate a chunk up front and
/// then run their inner loop without per-nonzero bounds checks.
pub(crate) struct Bounds<I> {
    n: usize,
    mask: [I; MAX_ORDER],
    /// The masked form of the largest valid coordinate.
    max: [I; MAX_ORDER],
    /// Some factor has no rows: every nonzero is out of range.
    empty: bool,
    /// The target mode's mask and the masked forms of the window's first and last rows, when
    /// targets are checked against a window (`None`: not checked).
    target: Option<(I, I, I)>,
}

/// The masked form of the largest coordinate at most `top` that `mask` can hold.
fn masked_max<I: HwBits>(top: u64, mask: I) -> I {
    let bits = mask.to_u128().count_ones();
    if bits >= 64 || top >= (1u64 << bits) - 1 {
        mask // every coordinate the mask can hold
    } else {
        I::pdep_soft(top, mask)
    }
}

impl<I: HwBits> Bounds<I> {
    /// The bounds of the non-target modes of `input` (`rank >= 1`, checked by `run_segment`),
    /// and with `window` (when it has rows) of the target rows too.
    pub fn new<D: Decode<I>>(
        input: &SegmentInput<'_, I>,
        dec: &D,
        rank: usize,
        window: &RowWindow,
    ) -> Self {
        let mut b = Bounds {
            n: 0,
            mask: [I::ZERO; MAX_ORDER],
            max: [I::ZERO; MAX_ORDER],
            empty: false,
            target: None,
        };
        for (m, f) in input.factors.iter().enumerate().take(MAX_ORDER) {
            if m == input.target {
                continue;
            }
            let mask = dec.mask(m);
            b.mask[b.n] = mask;
            match ((f.len() / rank) as u64).checked_sub(1) {
                None => b.empty = true,
                Some(top) => b.max[b.n] = masked_max(top, mask),
            }
            b.n += 1;
        }
        if window.rows() > 0 {
            let mask = dec.mask(input.target);
            let bits = mask.to_u128().count_ones();
            let cap = if bits >= 64 {
                u64::MAX
            } else {
                (1u64 << bits) - 1
            };
            if window.first() > cap {
                b.empty = true; // no coordinate the mask can hold is a row of the window
            } else {
                let last = window.first().saturating_add(window.rows() - 1);
                let lo = I::pdep_soft(window.first(), mask);
                b.target = Some((mask, lo, masked_max(last, mask)));
            }
        }
        b
    }

    /// True when every non-target coordinate of every index in `xs` is a row of its factor and,
    /// with a window, every target coordinate is a row of the window.
    #[inline(always)]
    pub fn check(&self, xs: &[I]) -> bool {
        if self.empty {
            return xs.is_empty();
        }
        let mut bad = false;
        for (&mask, &max) in self.mask[..self.n.min(MAX_ORDER)].iter().zip(&self.max) {
            // Plain, non-short-circuiting loops, so they vectorize (and inline).
            for &x in xs {
                bad |= x.and(mask) > max;
            }
        }
        if let Some((mask, lo, hi)) = self.target {
            for &x in xs {
                let t = x.and(mask);
                bad |= (t < lo) | (t > hi);
            }
        }
        !bad
    }
}

/// The error for nonzero `x` of `input` when a factor row lookup failed.
#[cold]
#[inline(never)]
pub(crate) fn out_of_range<I: HwBits, D: Decode<I>>(
    input: &SegmentInput<'_, I>,
    dec: &D,
    x: I,
) -> KernelError {
    for (mode, f) in input.factors.iter().enumerate() {
        let coord = dec.coord(x, mode);
        let rows = f.len() / input.rank.max(1);
        if mode != input.target && coord >= rows as u64 {
            return KernelError::CoordOutOfRange { mode, coord, rows };
        }
    }
    unreachable!("out_of_range is called only after a failed row lookup")
}

/// The error for the first nonzero of `xs` with a coordinate outside its factor or, for the
/// target, outside `window`.
#[cold]
#[inline(never)]
pub(crate) fn first_out_of_range<I: HwBits, D: Decode<I>>(
    input: &SegmentInput<'_, I>,
    dec: &D,
    xs: &[I],
    window: &RowWindow,
) -> KernelError {
    for &x in xs {
        let bad = input.factors.iter().enumerate().any(|(m, f)| {
            m != input.target && dec.coord(x, m) >= (f.len() / input.rank.max(1)) as u64
        });
        if bad {
            return out_of_range(input, dec, x);
        }
        let row = dec.coord(x, input.target);
        if window.rows() > 0 && row.wrapping_sub(window.first()) >= window.rows() {
            return KernelError::RowOutOfRange {
                row,
                first: window.first(),
                rows: window.rows(),
            };
        }
    }
    unreachable!("first_out_of_range is called only for a chunk that failed its bounds check")
}

/// Prefetches every cache line of `row` (a hint: never faults, never changes results).
#[inline(always)]
pub(crate) fn prefetch_slice(row: &[f64]) {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let mut off = 0;
        while off < row.len() {
            // SAFETY: `off` is in bounds; SSE is part of the x86-64 baseline.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(row.as_ptr().add(off) as *const i8) };
            off += 8;
        }
        if let Some(last) = row.last() {
            // SAFETY: a reference to an element is a valid address.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(last as *const f64 as *const i8) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = row;
}
