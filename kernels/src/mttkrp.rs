//! The per-nonzero MTTKRP work on one segment of an ALTO tensor:
//! for each nonzero `x`, decode its coordinates, form `v * hadamard_{m != n} U_m(i_m, :)` and add
//! it to the target row `i_n` through a [`RowSink`].
//!
//! One generic body, [`segment_body`], is instantiated per (decoder, rank specialization); thin
//! entry points add `#[target_feature]` so the BMI2 `pext` inlines into the loop. Kernel variants
//! are named by [`KernelId`] and run through [`run_segment`].

use crate::decode::{Bmi2, Decode, HwBits, PextDecoder, RunsDecoder, MAX_ORDER};
use crate::sink::RowSink;
use core::fmt;

/// The inputs of one segment's MTTKRP: plain slices, validated by the caller.
#[derive(Clone, Copy)]
pub struct SegmentInput<'a, I> {
    /// Linearized indices of the segment's nonzeros (flag bits above the masks are allowed).
    pub idx: &'a [I],
    /// Values, same length as `idx`.
    pub vals: &'a [f64],
    /// Row-major factor matrices, one per mode, each `I_m x rank` (the target's is not read).
    pub factors: &'a [&'a [f64]],
    /// The target mode `n`.
    pub target: usize,
    /// Number of columns of every factor and of the output.
    pub rank: usize,
    /// The helper-flag bit of the target mode (zero when the mode has none).
    pub boundary_mask: I,
}

/// Rank specializations: the rank loop is fully unrolled for these ranks.
pub const SPECIALIZED_RANKS: [usize; 4] = [8, 16, 32, 64];

/// How the rank loop is compiled: for one fixed rank, or for any rank in chunks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RankSpec {
    /// Fully unrolled for exactly this rank (one of [`SPECIALIZED_RANKS`]).
    Fixed(usize),
    /// Any rank, processed in chunks of 16 columns.
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

/// The instruction set a rank loop is written for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Isa {
    /// Portable Rust; the compiler may auto-vectorize for the baseline target only.
    Scalar,
}

impl Isa {
    pub const ALL: [Isa; 1] = [Isa::Scalar];

    pub fn name(self) -> &'static str {
        match self {
            Isa::Scalar => "scalar",
        }
    }

    /// Whether the running CPU can execute this ISA's kernels.
    pub fn available(self) -> bool {
        match self {
            Isa::Scalar => true,
        }
    }

    pub fn from_name(s: &str) -> Option<Isa> {
        Isa::ALL.into_iter().find(|isa| isa.name() == s)
    }
}

/// One kernel variant: ISA x rank specialization. Its name (`scalar_r16`, `scalar_rdyn`) is the
/// same string in the registry, on the command line, in CSV columns and in plot legends; the
/// MTTKRP driver prefixes the conflict-resolution strategy (`pull_scalar_r16`).
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
    /// Parses `scalar_r16` / `scalar_rdyn`.
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

/// Errors a kernel call can report before touching memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KernelError {
    /// The kernel's ISA is not available on this CPU.
    IsaUnavailable(Isa),
    /// The kernel is specialized for another rank.
    RankMismatch { kernel: KernelId, rank: usize },
    /// Too many modes for the stack coordinate buffer.
    OrderTooLarge(usize),
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
        }
    }
}

impl std::error::Error for KernelError {}

/// Runs `kernel` over one segment. Checks ISA availability, rank and order, then dispatches to
/// the monomorphized entry point (one `match` per segment, not per nonzero).
pub fn run_segment<I: HwBits, S: RowSink>(
    kernel: KernelId,
    decoder: &AnyDecoder<I>,
    input: &SegmentInput<'_, I>,
    sink: &mut S,
) -> Result<(), KernelError> {
    if !kernel.isa.available() {
        return Err(KernelError::IsaUnavailable(kernel.isa));
    }
    if !kernel.rank.supports(input.rank) {
        return Err(KernelError::RankMismatch {
            kernel,
            rank: input.rank,
        });
    }
    if decoder.order() > MAX_ORDER {
        return Err(KernelError::OrderTooLarge(decoder.order()));
    }
    assert_eq!(
        input.idx.len(),
        input.vals.len(),
        "indices and values differ in length"
    );
    assert_eq!(input.factors.len(), decoder.order(), "one factor per mode");
    match (kernel.isa, decoder) {
        (Isa::Scalar, AnyDecoder::Pext(d)) => scalar::run_pext(kernel.rank, d, input, sink),
        (Isa::Scalar, AnyDecoder::Runs(d)) => scalar::run_runs(kernel.rank, d, input, sink),
    }
    Ok(())
}

/// The generic body: `CHUNK` columns at a time; with `rank == CHUNK` a compile-time constant
/// (the specialized entry points) the column loop is fully unrolled.
#[inline(always)]
pub fn segment_body<I, D, S, const CHUNK: usize>(
    input: &SegmentInput<'_, I>,
    rank: usize,
    decoder: &D,
    sink: &mut S,
) where
    I: HwBits,
    D: Decode<I>,
    S: RowSink,
{
    let order = decoder.order();
    let target = input.target;
    let mut coords = [0u64; MAX_ORDER];
    for (&x, &v) in input.idx.iter().zip(input.vals) {
        for (m, c) in coords[..order].iter_mut().enumerate() {
            *c = decoder.coord(x, m);
        }
        let boundary = x.intersects(input.boundary_mask);
        let mut col0 = 0;
        while col0 < rank {
            let width = CHUNK.min(rank - col0);
            let mut row = [v; CHUNK];
            for m in 0..order {
                if m == target {
                    continue;
                }
                let start = coords[m] as usize * rank + col0;
                let factor_row = &input.factors[m][start..start + width];
                for (acc, &u) in row[..width].iter_mut().zip(factor_row) {
                    *acc *= u;
                }
            }
            sink.add(coords[target], col0, &row[..width], boundary);
            col0 += CHUNK;
        }
    }
}

/// Instantiates the body for every rank specialization under one decoder.
macro_rules! rank_dispatch {
    ($spec:expr, $input:expr, $dec:expr, $sink:expr) => {
        match $spec {
            RankSpec::Fixed(8) => segment_body::<_, _, _, 8>($input, 8, $dec, $sink),
            RankSpec::Fixed(16) => segment_body::<_, _, _, 16>($input, 16, $dec, $sink),
            RankSpec::Fixed(32) => segment_body::<_, _, _, 32>($input, 32, $dec, $sink),
            RankSpec::Fixed(64) => segment_body::<_, _, _, 64>($input, 64, $dec, $sink),
            RankSpec::Fixed(_) | RankSpec::Dynamic => {
                segment_body::<_, _, _, 16>($input, $input.rank, $dec, $sink)
            }
        }
    };
}

/// The portable tier: no ISA-specific code beyond BMI2 for decoding.
mod scalar {
    use super::*;

    pub fn run_runs<I: HwBits, S: RowSink>(
        spec: RankSpec,
        dec: &RunsDecoder<I>,
        input: &SegmentInput<'_, I>,
        sink: &mut S,
    ) {
        rank_dispatch!(spec, input, dec, sink)
    }

    pub fn run_pext<I: HwBits, S: RowSink>(
        spec: RankSpec,
        dec: &PextDecoder<I>,
        input: &SegmentInput<'_, I>,
        sink: &mut S,
    ) {
        // SAFETY: a PextDecoder can only be built with a Bmi2 token, so the CPU has BMI2.
        unsafe { run_pext_bmi2(spec, dec, input, sink) }
    }

    // Thin entry point: `bmi2` lets `pext` inline into the loop; the body stays generic.
    #[target_feature(enable = "bmi2,popcnt")]
    fn run_pext_bmi2<I: HwBits, S: RowSink>(
        spec: RankSpec,
        dec: &PextDecoder<I>,
        input: &SegmentInput<'_, I>,
        sink: &mut S,
    ) {
        rank_dispatch!(spec, input, dec, sink)
    }
}
