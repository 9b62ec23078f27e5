//! Boundary flags (SPEC section 5): which spare index bits flag which modes, which rows are
//! shared between segments, and the check that a stored tensor's flags are exactly those. The
//! flagged MTTKRP writes unflagged rows without atomics, so exact flags are a soundness
//! invariant, not a hint.

use super::alto::{fiber_reuse, with_decoder_isa, AltoTensor};
use alto_kernels::{AnyDecoder, HwBits};
use rayon::prelude::*;

impl<I: HwBits> AltoTensor<I> {
    /// Assigns spare bits above `B` as boundary flags, limited-reuse modes first (lowest reuse
    /// first), then the others while bits remain, and sets each nonzero's flags.
    pub(super) fn set_flags(&mut self, decoder: &AnyDecoder<I>) {
        let b = self.layout.total_bits();
        let value_mask = I::from_u128(if b == 128 {
            u128::MAX
        } else {
            (1u128 << b) - 1
        });
        self.idx.par_iter_mut().for_each(|x| *x = x.and(value_mask));
        let order = self.order();
        let nnz = self.nnz() as u64;
        let mut modes: Vec<usize> = (0..order).collect();
        let reuse = |m: usize| fiber_reuse(nnz, self.layout.dims()[m]);
        let threshold = self.min_fiber_reuse;
        modes.sort_by_key(|&m| (reuse(m) > threshold, reuse(m)));
        let spare = self.layout.spare_bits();
        self.flag_bits = vec![None; order];
        for (k, &m) in modes.iter().enumerate().take(spare as usize) {
            self.flag_bits[m] = Some(b + k as u32);
        }
        for mode in 0..order {
            let Some(bit) = self.flag_bits[mode] else {
                continue;
            };
            let shared = self.shared_rows(decoder, mode);
            let flag = I::from_u128(1u128 << bit);
            self.idx.par_chunks_mut(1 << 14).for_each(|chunk| {
                with_decoder_isa(decoder, || set_flag(chunk, decoder, mode, &shared, flag))
            });
        }
    }

    /// The rows of `mode` touched by more than one segment. Scratch stays O(nnz) whatever the
    /// dim: a row-indexed table where the dim is within [`DENSE_ROWS_PER_NONZERO`] of the
    /// nonzero count, else the sorted list of shared rows.
    fn shared_rows(&self, decoder: &AnyDecoder<I>, mode: usize) -> SharedRows {
        let dim = self.layout.dims()[mode];
        if dense_row_table(dim, self.nnz() as u64, DENSE_ROWS_PER_NONZERO) {
            SharedRows::Dense(self.shared_rows_dense(decoder, mode, dim as usize))
        } else {
            SharedRows::Sparse(self.shared_rows_sparse(decoder, mode))
        }
    }

    /// Each segment marks the rows it touches in a bitmap over its own interval (in parallel);
    /// a row is shared when two or more bitmaps mark it.
    fn shared_rows_dense(&self, decoder: &AnyDecoder<I>, mode: usize, dim: usize) -> Vec<bool> {
        let touched: Vec<Option<(u64, Vec<u64>)>> = (0..self.num_partitions())
            .into_par_iter()
            .map(|p| {
                let (lo, hi) = self.interval(p, mode)?;
                let mut bits = vec![0u64; ((hi - lo) / 64 + 1) as usize];
                let segment = &self.idx[self.partition_range(p)];
                with_decoder_isa(decoder, || mark_rows(&mut bits, segment, decoder, mode, lo));
                Some((lo, bits))
            })
            .collect();
        let mut count = vec![0u8; dim];
        for (lo, bits) in touched.iter().flatten() {
            for (w, &word) in bits.iter().enumerate() {
                let mut word = word;
                while word != 0 {
                    let row = *lo as usize + w * 64 + word.trailing_zeros() as usize;
                    count[row] = count[row].saturating_add(1);
                    word &= word - 1;
                }
            }
        }
        count.into_iter().map(|c| c > 1).collect()
    }

    /// Each segment's distinct rows (sorted, in parallel), then the rows that occur in two or
    /// more of those lists.
    fn shared_rows_sparse(&self, decoder: &AnyDecoder<I>, mode: usize) -> Vec<u64> {
        let mut all: Vec<u64> = (0..self.num_partitions())
            .into_par_iter()
            .flat_map_iter(|p| {
                let mut rows: Vec<u64> = self.idx[self.partition_range(p)]
                    .iter()
                    .map(|&x| decoder.coord(x, mode))
                    .collect();
                rows.sort_unstable();
                rows.dedup();
                rows
            })
            .collect();
        all.par_sort_unstable();
        let mut shared: Vec<u64> = all
            .windows(2)
            .filter(|w| w[0] == w[1])
            .map(|w| w[0])
            .collect();
        shared.dedup();
        shared
    }

    /// Checks what a stored tensor claims beside its nonzeros against the nonzeros themselves:
    /// every interval is exactly its segment's coordinate range, flag bits are distinct spare
    /// bits, and each nonzero's flag is set exactly when its row is shared between segments.
    /// The flagged MTTKRP writes unflagged rows without atomics, so a wrong flag would be a
    /// data race: after this check a loaded tensor is as trustworthy as a built one.
    ///
    /// Call only after checking that every coordinate is inside its dim.
    pub(crate) fn check_derived_state(&self) -> std::result::Result<(), String> {
        let order = self.order();
        let parts = self.num_partitions();
        if self.intervals.len() != parts * order {
            return Err("interval table has the wrong size".into());
        }
        let decoder = self.fast_decoder();
        let recomputed = self.segment_intervals(&decoder);
        if let Some(k) = (0..recomputed.len()).find(|&k| recomputed[k] != self.intervals[k]) {
            return Err(format!(
                "segment {} intervals are not its nonzeros' coordinate ranges",
                k / order
            ));
        }
        let b = self.layout.total_bits();
        let mut used = 0u128;
        for (mode, bit) in self.flag_bits.iter().enumerate() {
            let Some(bit) = *bit else { continue };
            if bit < b || bit >= I::BITS || used & (1u128 << bit) != 0 {
                return Err(format!(
                    "mode {mode} flag bit {bit} is not a free spare bit (coordinates use bits \
                     0..{b}, the index has {})",
                    I::BITS
                ));
            }
            used |= 1u128 << bit;
        }
        for (mode, bit) in self.flag_bits.iter().enumerate() {
            let Some(bit) = *bit else { continue };
            let shared = self.shared_rows(&decoder, mode);
            let flag = I::from_u128(1u128 << bit);
            let wrong = self.idx.par_chunks(1 << 14).any(|chunk| {
                chunk
                    .iter()
                    .any(|&x| x.intersects(flag) != shared.contains(decoder.coord(x, mode)))
            });
            if wrong {
                return Err(format!(
                    "mode {mode} boundary flags do not match the rows shared between segments"
                ));
            }
        }
        Ok(())
    }
}

/// A row-indexed table pays where the dim is at most this many times the nonzero count (its
/// bytes are then a small multiple of the index array's); sparser modes list shared rows.
pub const DENSE_ROWS_PER_NONZERO: u64 = 8;

/// Whether the shared-row scratch of a mode of `dim` rows is a row-indexed table (true) or a
/// sorted list (false): a table while `dim <= rows_per_nonzero * nnz + 4096`.
pub fn dense_row_table(dim: u64, nnz: u64, rows_per_nonzero: u64) -> bool {
    dim <= rows_per_nonzero.saturating_mul(nnz).saturating_add(4096)
}

/// Rows of one mode touched by more than one segment.
enum SharedRows {
    /// Indexed by row.
    Dense(Vec<bool>),
    /// The shared rows, sorted.
    Sparse(Vec<u64>),
}

impl SharedRows {
    #[inline(always)]
    fn contains(&self, row: u64) -> bool {
        match self {
            SharedRows::Dense(t) => t[row as usize],
            SharedRows::Sparse(rows) => rows.binary_search(&row).is_ok(),
        }
    }
}

/// Sets `flag` on the nonzeros of `chunk` whose `mode` row is `shared`.
#[inline(always)]
fn set_flag<I: HwBits>(
    chunk: &mut [I],
    decoder: &AnyDecoder<I>,
    mode: usize,
    shared: &SharedRows,
    flag: I,
) {
    for x in chunk {
        if shared.contains(decoder.coord(*x, mode)) {
            *x = x.or(flag);
        }
    }
}

/// Marks in `bits` (one bit per row from `lo`) the `mode` rows that `segment` touches.
#[inline(always)]
fn mark_rows<I: HwBits>(
    bits: &mut [u64],
    segment: &[I],
    decoder: &AnyDecoder<I>,
    mode: usize,
    lo: u64,
) {
    for &x in segment {
        let r = decoder.coord(x, mode) - lo;
        bits[(r / 64) as usize] |= 1 << (r % 64);
    }
}
