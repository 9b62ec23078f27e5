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

/// Peak bytes of the shared-row scratch of one flagged mode (see `flag_rules`): the counts, the
/// table and the segments' bitmaps, or the segments' row lists.
pub fn estimate_flag_scratch_bytes(dim: u64, nnz: u64, partitions: u64) -> u64 {
    if dense_row_table(dim, nnz, DENSE_ROWS_PER_NONZERO) {
        // u8 counts and a bool table + (interval / 64 + 1) words per segment, each interval
        // at most `dim`, or a byte per row where the interval is shorter than the segment (at
        // most one per nonzero over all segments).
        dim.saturating_mul(2)
            .saturating_add(partitions.saturating_mul(dim / 8 + 8))
            .saturating_add(nnz)
    } else {
        nnz.saturating_mul(16) // the rows before and after the parallel sort
    }
}

/// Everything building allocates beyond the input: pairs and final arrays, and the flag
/// scratch (every table mode's, plus the largest list mode's).
pub fn build_memory_plan(
    nnz: usize,
    dims: &[u64],
    width: IndexWidth,
    partitions: usize,
) -> MemoryPlan {
    // Every table mode's scratch is alive at once (one marking pass serves them all); the
    // list modes run one after another.
    let scratch = |&d: &u64| estimate_flag_scratch_bytes(d, nnz as u64, partitions as u64);
    let is_table = |d: &&u64| dense_row_table(**d, nnz as u64, DENSE_ROWS_PER_NONZERO);
    let tables: u64 = dims.iter().filter(is_table).map(scratch).sum();
    let largest_list = dims.iter().filter(|d| !is_table(d)).map(scratch).max();
    let flags = tables.saturating_add(largest_list.unwrap_or(0));
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
