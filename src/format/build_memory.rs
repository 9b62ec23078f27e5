//! What building an ALTO tensor allocates, estimated before it runs, and the check against the
//! memory this process may use: a build that cannot fit fails with a typed error up front.

use super::flags::{dense_row_table, DENSE_ROWS_PER_NONZERO};
use super::layout::IndexWidth;
use crate::error::{AltoError, Result};
use crate::memory::{MemoryLimit, MemoryPlan};

/// Peak bytes the builder allocates for `nnz` nonzeros: the encoded keys and one buffer of
/// sorted pairs (the radix sort scatters into it; the comparison sort sorts its encoded pairs
/// in place) alive beside the final index and value arrays (the input COO is already
/// resident).
pub fn estimate_build_bytes(nnz: usize, width: IndexWidth) -> u64 {
    let pair = match width {
        IndexWidth::U32 | IndexWidth::U64 => 16u64,
        IndexWidth::U128 => 32,
    };
    (nnz as u64).saturating_mul(pair + 2 * width.bytes() as u64 + 8)
}

/// Peak bytes of the shared-row scratch of one flagged mode (see `shared_rows`): the table
/// and the segments' bitmaps, or the segments' row lists.
pub fn estimate_flag_scratch_bytes(dim: u64, nnz: u64, partitions: u64) -> u64 {
    if dense_row_table(dim, nnz, DENSE_ROWS_PER_NONZERO) {
        // u8 counts + (interval / 64 + 1) words per segment, each interval at most `dim`.
        dim.saturating_add(partitions.saturating_mul(dim / 8 + 8))
    } else {
        nnz.saturating_mul(16) // the rows before and after the parallel sort
    }
}

/// Everything building allocates beyond the input: pairs and final arrays, the largest mode's
/// flag scratch.
pub fn build_memory_plan(
    nnz: usize,
    dims: &[u64],
    width: IndexWidth,
    partitions: usize,
) -> MemoryPlan {
    let flags = dims
        .iter()
        .map(|&d| estimate_flag_scratch_bytes(d, nnz as u64, partitions as u64))
        .max()
        .unwrap_or(0);
    let mut plan = MemoryPlan::new();
    plan.add(
        format!("building {nnz} nonzeros"),
        estimate_build_bytes(nnz, width),
    )
    .add("boundary-flag scratch", flags);
    plan
}

/// Memory this process may use: the cgroup allowance or `MemAvailable`, the smaller.
pub fn available_memory() -> Option<u64> {
    MemoryLimit::detect().map(|l| l.bytes)
}

/// The memory rule: an error saying how much is needed and how much there is.
pub fn check_memory_against(needed: u64, available: u64) -> Result<()> {
    if needed > available {
        return Err(AltoError::OutOfMemory {
            needed,
            available,
            needed_gib: needed as f64 / (1u64 << 30) as f64,
            available_gib: available as f64 / (1u64 << 30) as f64,
        });
    }
    Ok(())
}
