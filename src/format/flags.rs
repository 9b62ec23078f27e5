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
            if shared.is_empty() {
                continue; // no row to flag (one segment, or segments apart in this mode)
            }
            let flag = I::from_u128(1u128 << bit);
            self.idx.par_chunks_mut(1 << 14).for_each(|chunk| {
                with_decoder_isa(decoder, || set_flag(chunk, decoder, mode, &shared, flag))
            });
        }
    }

    /// The rows of `mode` touched by more than one segment. Scratch stays O(nnz) whatever the
    /// dim: a row-indexed table where the dim is within [`DENSE_ROWS_PER_NONZERO`] of the
    /// nonzero count, else the sorted list of shared rows.
    ///
    /// Only rows inside two or more segments' intervals can be shared ([`overlap_bounds`]):
    /// with one segment, or segments whose intervals in this mode are apart, there is nothing
    /// to look for, and elsewhere only that window's rows are counted.
    fn shared_rows(&self, decoder: &AnyDecoder<I>, mode: usize) -> SharedRows {
        let intervals: Vec<Option<(u64, u64)>> = (0..self.num_partitions())
            .map(|p| self.interval(p, mode))
            .collect();
        let Some(window) = overlap_bounds(&intervals) else {
            return SharedRows::None;
        };
        if dense_row_table(
            window.1 - window.0 + 1,
            self.nnz() as u64,
            DENSE_ROWS_PER_NONZERO,
        ) {
            SharedRows::Dense {
                first: window.0,
                table: self.shared_rows_dense(decoder, mode, window),
            }
        } else {
            SharedRows::Sparse(self.shared_rows_sparse(decoder, mode))
        }
    }

    /// Each segment marks the rows it touches in a bitmap over its own interval (in parallel);
    /// a row is shared when two or more bitmaps mark it.
    /// Only rows of `window` (which holds every row that can be shared) are marked and counted;
    /// the table is indexed by row minus `window.0`.
    fn shared_rows_dense(
        &self,
        decoder: &AnyDecoder<I>,
        mode: usize,
        window: (u64, u64),
    ) -> Vec<bool> {
        let touched: Vec<Option<(u64, Vec<u64>)>> = (0..self.num_partitions())
            .into_par_iter()
            .map(|p| {
                let (lo, hi) = self.interval(p, mode)?;
                let (lo, hi) = (lo.max(window.0), hi.min(window.1));
                if lo > hi {
                    return None;
                }
                let mut bits = vec![0u64; ((hi - lo) / 64 + 1) as usize];
                let segment = &self.idx[self.partition_range(p)];
                with_decoder_isa(decoder, || {
                    mark_rows(&mut bits, segment, decoder, mode, (lo, hi))
                });
                Some((lo, bits))
            })
            .collect();
        let mut count = vec![0u8; (window.1 - window.0 + 1) as usize];
        for (lo, bits) in touched.iter().flatten() {
            for (w, &word) in bits.iter().enumerate() {
                let mut word = word;
                while word != 0 {
                    let row = (*lo - window.0) as usize + w * 64 + word.trailing_zeros() as usize;
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

/// The smallest row range holding every row that lies in two or more of `intervals` (`None`:
/// no two intervals overlap, so no row can be shared).
pub fn overlap_bounds(intervals: &[Option<(u64, u64)>]) -> Option<(u64, u64)> {
    let mut sorted: Vec<(u64, u64)> = intervals.iter().flatten().copied().collect();
    sorted.sort_unstable();
    let mut reach: Option<u64> = None; // the largest end so far
    let mut bounds: Option<(u64, u64)> = None;
    for (lo, hi) in sorted {
        if let Some(r) = reach.filter(|&r| r >= lo) {
            let overlap = (lo, hi.min(r));
            bounds = Some(bounds.map_or(overlap, |(a, b)| (a.min(overlap.0), b.max(overlap.1))));
        }
        reach = Some(reach.map_or(hi, |r| r.max(hi)));
    }
    bounds
}

/// Rows of one mode touched by more than one segment.
enum SharedRows {
    /// No row can be shared.
    None,
    /// Indexed by row minus `first`; rows outside the table are not shared.
    Dense { first: u64, table: Vec<bool> },
    /// The shared rows, sorted.
    Sparse(Vec<u64>),
}

impl SharedRows {
    fn is_empty(&self) -> bool {
        match self {
            SharedRows::None => true,
            SharedRows::Dense { table, .. } => !table.contains(&true),
            SharedRows::Sparse(rows) => rows.is_empty(),
        }
    }

    #[inline(always)]
    fn contains(&self, row: u64) -> bool {
        match self {
            SharedRows::None => false,
            SharedRows::Dense { first, table } => row
                .checked_sub(*first)
                .and_then(|i| table.get(i as usize))
                .is_some_and(|&s| s),
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

/// Marks in `bits` (one bit per row from `lo`) the `mode` rows in `lo..=hi` that `segment`
/// touches.
#[inline(always)]
fn mark_rows<I: HwBits>(
    bits: &mut [u64],
    segment: &[I],
    decoder: &AnyDecoder<I>,
    mode: usize,
    (lo, hi): (u64, u64),
) {
    for &x in segment {
        let r = decoder.coord(x, mode).wrapping_sub(lo);
        if r <= hi - lo {
            bits[(r / 64) as usize] |= 1 << (r % 64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bounds hold every row covered twice, and nothing when no two intervals meet.
    #[test]
    fn overlap_bounds_hold_every_row_covered_twice() {
        assert_eq!(overlap_bounds(&[Some((0, 9))]), None);
        assert_eq!(overlap_bounds(&[Some((0, 9)), None, Some((10, 19))]), None);
        assert_eq!(
            overlap_bounds(&[Some((0, 12)), Some((10, 19))]),
            Some((10, 12))
        );
        assert_eq!(
            overlap_bounds(&[Some((20, 30)), Some((0, 12)), Some((10, 21))]),
            Some((10, 21))
        );
        assert_eq!(overlap_bounds(&[Some((0, 29)), Some((5, 7))]), Some((5, 7)));
        assert_eq!(overlap_bounds(&[Some((3, 3)), Some((3, 3))]), Some((3, 3)));
        // Against a count per row.
        let ivs = [
            Some((4, 9)),
            Some((0, 2)),
            Some((8, 15)),
            Some((15, 20)),
            None,
        ];
        let covered_twice: Vec<u64> = (0..25)
            .filter(|&r| {
                ivs.iter()
                    .flatten()
                    .filter(|(a, b)| *a <= r && r <= *b)
                    .count()
                    > 1
            })
            .collect();
        assert_eq!(
            overlap_bounds(&ivs),
            Some((covered_twice[0], *covered_twice.last().unwrap()))
        );
    }
}
