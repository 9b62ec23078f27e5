//! The formats ALTO is compared with in the paper's evaluation (section 5), implemented here with
//! the same care as the ALTO kernels (rank-specialized row loops, AVX2 and AVX-512 entry points,
//! the same caller-owned rayon pool) so that the comparison measures the formats, not the effort:
//!
//! - [`coo`]: plain coordinates; parallel MTTKRP with atomic adds or with thread-private output
//!   copies ([`CooSync`]); the paper reports the better of the two.
//! - [`csf`]: compressed sparse fibers, one tree per mode rooted at that mode (SPLATT's "all"
//!   allocation, the mode-specific oracle): parallel over root slices without conflicts;
//!   optionally tiled (SPLATT's dense tiling of the non-root modes).
//! - [`hicoo`]: hierarchical COO with blocks of 2^7 per mode and superblocks of 2^10 or 2^14
//!   (ParTI's "kernels"), parallel over superblock rows of the target mode without conflicts,
//!   or over superblocks with thread-private outputs where rows are too few or too unbalanced.
//!
//! Every format implements [`MttkrpFormat`]: built from a [`CooTensor`] with its construction
//! time, it reports its storage in bytes and runs `mttkrp(factors, mode, out, opts, pool)` for
//! any mode, the shape checks done once in the trait's provided method. All are tested against
//! [`alto::mttkrp::mttkrp_oracle`] in `tests/suite/baselines_oracle.rs`. They use only `alto`'s public
//! API; their `#[target_feature]` entry points are in [`alto_kernels::baselines`], reached with
//! a [`BaselineIsa`] (which holds the CPU's capability token).
//!
//! Supported orders: all three support every order the library does (2 to
//! [`alto::coo::MAX_ORDER`]); the paper's HiCOO implementation supported only 3-D and 4-D
//! tensors ([`BaselineKind::paper_supports`] says which combinations the paper could run).
//! Indices are 64-bit (as in the paper) except HiCOO's, which are its own compressed widths
//! (32-bit block and 8-bit element indices). HiCOO needs block coordinates below 2^32, i.e.
//! dims below 2^39. Sort keys pack the coordinates into at most 128 bits, the same limit ALTO has.

pub mod coo;
pub mod csf;
pub mod hicoo;
mod rows;
mod sort;

pub use alto_kernels::baselines::BaselineIsa;
pub use coo::{CooFormat, CooSync};
pub use csf::{CsfFormat, CsfTree};
pub use hicoo::{choose_hicoo_sync, HicooFormat, HicooSync, HicooSyncChoice};

use alto::coo::CooTensor;
use alto::format::alto::available_memory;
use alto::{AltoError, Matrix, Result};

/// Environment variable that forces the baselines' instruction set (`portable`, `avx2` or
/// `avx512`); the binaries read it once at the top ([`crate::config::Opts`]), the formats never
/// do.
pub const BASELINE_ISA_ENV: &str = "ALTO_BASELINE_ISA";

/// Run-time choices of the baseline kernels; the defaults are the best ISA of this CPU, COO
/// with atomics and the automatic HiCOO schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BaselineOptions {
    /// The instruction set (holding its token, so it is known to run here).
    pub isa: BaselineIsa,
    /// COO conflict resolution.
    pub coo_sync: CooSync,
    /// HiCOO schedule.
    pub hicoo_sync: HicooSyncChoice,
}

impl Default for BaselineOptions {
    fn default() -> Self {
        BaselineOptions {
            isa: BaselineIsa::best(),
            coo_sync: CooSync::default(),
            hicoo_sync: HicooSyncChoice::default(),
        }
    }
}

/// One checked MTTKRP call, as every format's kernel receives it.
pub struct MttkrpCall<'a> {
    pub factors: &'a [Matrix],
    pub mode: usize,
    pub rank: usize,
    pub opts: &'a BaselineOptions,
}

/// A sparse tensor format that computes MTTKRP: what the experiments build, measure and time.
pub trait MttkrpFormat: Sized {
    /// The build parameters besides the tensor (block sizes, tiling).
    type Params;

    /// Builds the format from `coo` on the current rayon pool, returning it and its
    /// construction time in seconds.
    fn build(coo: &CooTensor, params: &Self::Params) -> Result<(Self, f64)>;

    fn dims(&self) -> &[u64];

    /// Bytes of every array the format keeps (indices, pointers, values, schedules).
    fn storage_bytes(&self) -> u64;

    /// The kernel, called by [`MttkrpFormat::mttkrp`] after the shape checks: overwrites `out`
    /// and returns the name of what ran.
    fn run(
        &self,
        call: &MttkrpCall<'_>,
        out: &mut Matrix,
        pool: &rayon::ThreadPool,
    ) -> Result<&'static str>;

    /// MTTKRP of `mode` into `out` (overwritten) on `pool`; returns the name of what ran (COO's
    /// and HiCOO's conflict resolution, `csf` or `csf-tile`).
    fn mttkrp(
        &self,
        factors: &[Matrix],
        mode: usize,
        out: &mut Matrix,
        opts: &BaselineOptions,
        pool: &rayon::ThreadPool,
    ) -> Result<&'static str> {
        let rank = check_call(self.dims(), factors, mode, out)?;
        let call = MttkrpCall {
            factors,
            mode,
            rank,
            opts,
        };
        self.run(&call, out, pool)
    }
}

/// The formats of the paper's comparison, by the names its figures use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BaselineKind {
    Coo,
    HicooSb10,
    HicooSb14,
    Csf,
    CsfTile,
}

impl BaselineKind {
    pub const ALL: [BaselineKind; 5] = [
        BaselineKind::Coo,
        BaselineKind::HicooSb10,
        BaselineKind::HicooSb14,
        BaselineKind::Csf,
        BaselineKind::CsfTile,
    ];

    /// The legend name (`COO`, `HiCOO-SB10`, `HiCOO-SB14`, `CSF`, `CSF-tile`).
    pub fn name(self) -> &'static str {
        match self {
            BaselineKind::Coo => "COO",
            BaselineKind::HicooSb10 => "HiCOO-SB10",
            BaselineKind::HicooSb14 => "HiCOO-SB14",
            BaselineKind::Csf => "CSF",
            BaselineKind::CsfTile => "CSF-tile",
        }
    }

    pub fn from_name(s: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(s))
    }

    /// CSF keeps one tensor copy per mode; the others are a single mode-agnostic copy.
    pub fn mode_specific(self) -> bool {
        matches!(self, BaselineKind::Csf | BaselineKind::CsfTile)
    }

    /// Whether the implementation the paper measured (ParTI's HiCOO, SPLATT's CSF) handles a
    /// tensor of this order: ParTI's HiCOO supported only 3-D and 4-D tensors.
    pub fn paper_supports(self, order: usize) -> bool {
        match self {
            BaselineKind::HicooSb10 | BaselineKind::HicooSb14 => (3..=4).contains(&order),
            _ => true,
        }
    }

    /// Superblock bits of the HiCOO variants.
    pub fn superblock_bits(self) -> Option<u32> {
        match self {
            BaselineKind::HicooSb10 => Some(10),
            BaselineKind::HicooSb14 => Some(14),
            _ => None,
        }
    }
}

impl std::fmt::Display for BaselineKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Block bits of HiCOO (blocks of 2^7 per mode, as in the paper).
pub const HICOO_BLOCK_BITS: u32 = 7;

/// A built baseline format.
#[derive(Clone, Debug)]
pub enum Baseline {
    Coo(CooFormat),
    Csf(CsfFormat),
    Hicoo(HicooFormat),
}

impl Baseline {
    /// Builds `kind` from `coo` on `pool` (CSF-tile tiles for the pool's thread count), returning
    /// the format and its construction time in seconds. Refuses with
    /// [`AltoError::OutOfMemory`] when [`estimate_build_bytes`] exceeds the available memory.
    pub fn build(
        kind: BaselineKind,
        coo: &CooTensor,
        pool: &rayon::ThreadPool,
    ) -> Result<(Baseline, f64)> {
        let threads = pool.current_num_threads();
        check_memory(estimate_build_bytes(kind, coo, threads))?;
        pool.install(|| match kind {
            BaselineKind::Coo => CooFormat::build(coo, &()).map(|(f, s)| (Baseline::Coo(f), s)),
            BaselineKind::Csf => CsfFormat::build(coo, &None).map(|(f, s)| (Baseline::Csf(f), s)),
            BaselineKind::CsfTile => {
                CsfFormat::build(coo, &Some(threads)).map(|(f, s)| (Baseline::Csf(f), s))
            }
            BaselineKind::HicooSb10 | BaselineKind::HicooSb14 => {
                let superblock_bits = kind.superblock_bits().expect("a HiCOO kind");
                HicooFormat::build(coo, &(HICOO_BLOCK_BITS, superblock_bits))
                    .map(|(f, s)| (Baseline::Hicoo(f), s))
            }
        })
    }

    pub fn dims(&self) -> &[u64] {
        match self {
            Baseline::Coo(f) => f.dims(),
            Baseline::Csf(f) => f.dims(),
            Baseline::Hicoo(f) => f.dims(),
        }
    }

    /// Bytes of every array the format keeps (indices, pointers, values, schedules).
    pub fn storage_bytes(&self) -> u64 {
        match self {
            Baseline::Coo(f) => f.storage_bytes(),
            Baseline::Csf(f) => f.storage_bytes(),
            Baseline::Hicoo(f) => f.storage_bytes(),
        }
    }

    /// MTTKRP of `mode` into `out` (overwritten) on `pool`; returns the name of what ran.
    pub fn mttkrp(
        &self,
        factors: &[Matrix],
        mode: usize,
        out: &mut Matrix,
        opts: &BaselineOptions,
        pool: &rayon::ThreadPool,
    ) -> Result<&'static str> {
        match self {
            Baseline::Coo(f) => f.mttkrp(factors, mode, out, opts, pool),
            Baseline::Csf(f) => f.mttkrp(factors, mode, out, opts, pool),
            Baseline::Hicoo(f) => f.mttkrp(factors, mode, out, opts, pool),
        }
    }
}

/// Peak bytes that building `kind` from `coo` allocates (the input is already resident).
pub fn estimate_build_bytes(kind: BaselineKind, coo: &CooTensor, threads: usize) -> u64 {
    let nnz = coo.nnz() as u64;
    let order = coo.order() as u64;
    // Sorting: (key, value) pairs, twice (the parallel sort's buffer), keys up to 16 bytes.
    let sort = 2 * nnz * 32;
    match kind {
        BaselineKind::Coo => nnz * (order * 8 + 8),
        // One tree at a time is sorted; all trees are kept: at most N * (N + 1) words per
        // nonzero plus the values.
        BaselineKind::Csf => sort + order * nnz * (order * 16 + 8),
        BaselineKind::CsfTile => {
            let tiles = (csf::tile_dim_for(coo.order(), threads) as u64).pow(order as u32 - 1);
            sort + order * nnz * (order * 16 + 8) + order * tiles * 8
        }
        BaselineKind::HicooSb10 | BaselineKind::HicooSb14 => sort + nnz * (order * 13 + 24),
    }
}

/// Bytes of the thread-private output copies of a privatized MTTKRP.
pub fn privatized_bytes(threads: usize, rows: u64, rank: usize) -> u64 {
    threads.saturating_sub(1) as u64 * rows * rank as u64 * 8
}

pub(crate) fn check_memory(needed: u64) -> Result<()> {
    match available_memory() {
        Some(available) => alto::format::alto::check_memory_against(needed, available),
        None => Ok(()),
    }
}

/// Checks factors and output shape, returning the rank.
fn check_call(dims: &[u64], factors: &[Matrix], mode: usize, out: &Matrix) -> Result<usize> {
    let rank = alto::mttkrp::check_factors(dims, factors, mode)?;
    if out.rows() as u64 != dims[mode] || out.cols() != rank {
        return Err(AltoError::InvalidArgument(format!(
            "output is {} x {}, expected {} x {rank}",
            out.rows(),
            out.cols(),
            dims[mode]
        )));
    }
    Ok(rank)
}

/// The same tensor with duplicate coordinates summed and nonzeros in lexicographic order (mode
/// 0 slowest), as FROSTT files are stored: the common input every format is built from in the
/// experiments, so none of them profits from another's ordering or duplicate handling.
pub fn canonical_coo(coo: &CooTensor) -> Result<CooTensor> {
    sort::canonical(coo)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimates_do_not_overflow_and_names_round_trip() {
        let dims = vec![3u64; 12];
        let inds = vec![vec![0u64, 1, 2]; 12];
        let coo = CooTensor::new(dims, inds, vec![1.0, 2.0, 3.0]).unwrap();
        for kind in BaselineKind::ALL {
            let b = estimate_build_bytes(kind, &coo, 112);
            assert!(b > 0 && b < 1 << 40, "{kind}: {b}");
            assert_eq!(BaselineKind::from_name(kind.name()), Some(kind));
        }
        assert!(!BaselineKind::HicooSb10.paper_supports(5));
        assert!(BaselineKind::Csf.mode_specific() && !BaselineKind::Coo.mode_specific());
    }
}
