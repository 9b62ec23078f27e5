//! Kernel names and their parsing: the ISA tiers ([`Isa`]), the rank specializations
//! ([`RankSpec`], [`SPECIALIZED_RANKS`]) and one variant's name ([`KernelId`]), the same string
//! in the registry, on the command line, in CSV columns and in plot legends.

use crate::isa::{Avx2Fma, Avx512, Scalar};
use core::fmt;

/// Rank specializations: the rank loop is fully unrolled for these ranks.
pub const SPECIALIZED_RANKS: [usize; 4] = [8, 16, 32, 64];

/// How the rank loop is compiled: for one fixed rank, as register tiles for any rank, or for
/// any rank in pieces (the fallback).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RankSpec {
    /// Fully unrolled for exactly this rank (one of [`SPECIALIZED_RANKS`]).
    Fixed(usize),
    /// Any rank as const-generic register tiles of 8, 4, 2 and 1 vectors and a tail in the
    /// ISA's narrower vectors (`_tiled`): the kernel for every rank without a specialization.
    Tiled,
    /// Any rank in pieces of four vectors with a masked tail (`_rdyn`): the runtime-rank
    /// fallback, kept callable and tested as the reference point of the tiles.
    Dynamic,
}

impl RankSpec {
    /// The specialization for `rank` when one exists, else the tiles.
    pub fn best_for(rank: usize) -> Self {
        if SPECIALIZED_RANKS.contains(&rank) {
            RankSpec::Fixed(rank)
        } else {
            RankSpec::Tiled
        }
    }

    /// True when this kernel computes rank `rank` correctly.
    pub fn supports(self, rank: usize) -> bool {
        match self {
            RankSpec::Fixed(r) => r == rank,
            RankSpec::Tiled | RankSpec::Dynamic => rank >= 1,
        }
    }
}

impl fmt::Display for RankSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RankSpec::Fixed(r) => write!(f, "r{r}"),
            RankSpec::Tiled => write!(f, "tiled"),
            RankSpec::Dynamic => write!(f, "rdyn"),
        }
    }
}

/// The instruction set a rank loop is written for, ordered worst to best.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Isa {
    /// Portable Rust; the compiler may auto-vectorize for the baseline target only.
    Scalar,
    /// The `pulp` crate's portable SIMD, dispatched at run time to AVX-512 or AVX2+FMA (else the
    /// scalar tier's loop, the same arithmetic as `pulp`'s scalar fallback).
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

    /// Whether the running CPU can execute this ISA's kernels: whether its token can be built
    /// (`pulp` runs everywhere: without AVX2 + FMA, through the scalar tier).
    pub fn available(self) -> bool {
        match self {
            Isa::Scalar | Isa::Pulp => Scalar::try_new().is_some(),
            Isa::Avx2 => Avx2Fma::try_new().is_some(),
            Isa::Avx512 => Avx512::try_new().is_some(),
        }
    }

    pub fn from_name(s: &str) -> Option<Isa> {
        Isa::ALL.into_iter().find(|isa| isa.name() == s)
    }
}

/// One kernel variant: ISA x rank specialization. Its name (`avx512_r16`, `avx2_tiled`,
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
    /// Parses `avx512_r16` / `avx2_tiled` / `scalar_rdyn`.
    pub fn parse(name: &str) -> Option<KernelId> {
        let (isa, rank) = name.rsplit_once('_')?;
        let isa = Isa::from_name(isa)?;
        let rank = match rank {
            "rdyn" => RankSpec::Dynamic,
            "tiled" => RankSpec::Tiled,
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
            for rank in [RankSpec::Tiled, RankSpec::Dynamic] {
                v.push(KernelId { isa, rank });
            }
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
