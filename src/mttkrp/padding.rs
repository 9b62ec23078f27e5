//! Rows padded to whole vectors: a rank that is not a multiple of a cache line's eight doubles
//! runs on copies of the factors (and an output) whose rows are widened with zero columns.
//!
//! Why: at such a rank most rows start inside a cache line, so the kernels' full-width loads
//! and stores split lines, and the kernel that runs is the tiled one (runtime row width, a tail
//! in narrower vectors) rather than a fixed-rank one. Measured on the skewed 3-D benchmark
//! tensor (2M nonzeros, all modes, 1 thread, Sapphire Rapids VM, AVX-512): rank 10 took 18.3 ms
//! with the tiled kernel and 13.5 padded to 16, where rank 16 takes 13.2; rank 50 61.7 and
//! 42.9; rank 20 25.0 and 20.8 (rank 24: 20.6); ranks 1 to 4 about 12 where rank 8 takes 8.3.
//! The extra columns are zero and each column is computed independently, in the same order, so
//! the first `rank` columns of the result are exactly the unpadded ones.
//!
//! The copies cost `O(rows x padded rank)` per call against the kernel's
//! `O(nonzeros x rank)`, so padding is chosen only where the nonzeros outnumber the copied rows
//! by [`PAD_NONZEROS_PER_ROW`] ([`pays_to_pad`]), and never for the atomic strategy, whose
//! per-column atomic adds would grow with the padding.

use super::strategy::ConflictResolution;
use crate::matrix::Matrix;
use rayon::prelude::*;

/// Doubles per 64-byte cache line: padded rows are a whole number of lines.
pub const LINE_DOUBLES: usize = 8;

/// Padding pays when the call has at least this many nonzeros per row it copies (factor rows
/// in, output rows out). A copied row costs a streaming read and write of the padded width; a
/// nonzero saves part of a split access per row it touches. Chosen conservatively: the skewed
/// 3-D benchmark tensor has about 440 nonzeros per copied row.
pub const PAD_NONZEROS_PER_ROW: u64 = 16;

/// The padded width of a row of `rank` doubles: `rank` rounded up to a multiple of `line`
/// doubles (a cache line, and an AVX-512 vector), so rows start on line boundaries and the
/// kernel that runs is the one for a whole number of vectors (1 -> 8, 10 -> 16, 20 -> 24,
/// 50 -> 56). Small ranks pad too: measured on the skewed 3-D tensor, ranks 1 to 4 with the
/// tiled kernel took 11.8 to 12.7 ms for all modes where rank 8 takes 8.3. `None` when `rank` is
/// already a multiple of `line`.
pub fn padded_rank(rank: usize, line: usize) -> Option<usize> {
    let line = line.max(1);
    let padded = rank.div_ceil(line) * line;
    (padded != rank).then_some(padded)
}

/// Whether padding a call pays: not for atomics (every column is an atomic add), and only
/// with at least `min_nonzeros_per_row` nonzeros per copied row.
pub fn pays_to_pad(
    sync: ConflictResolution,
    nnz: u64,
    copied_rows: u64,
    min_nonzeros_per_row: u64,
) -> bool {
    sync != ConflictResolution::Atomic && nnz >= copied_rows.saturating_mul(min_nonzeros_per_row)
}

/// The widest rows calls at `rank` may run at on a tensor of `nnz` nonzeros and `rows` factor
/// rows in all: the padded width where padding can pay for some strategy, else `rank`. Sizes
/// the workspace and the memory plans.
pub fn widest_rows(rank: usize, nnz: u64, rows: u64) -> usize {
    match padded_rank(rank, LINE_DOUBLES) {
        Some(w) if pays_to_pad(ConflictResolution::Pull, nnz, rows, PAD_NONZEROS_PER_ROW) => w,
        _ => rank,
    }
}

/// Rows per parallel copy task.
const COPY_ROWS: usize = 4096;

/// Copies `src` into `dst` (same rows, `dst.cols() >= src.cols()`), the extra columns zero.
pub(crate) fn copy_padded(src: &Matrix, dst: &mut Matrix) {
    let (r, rp) = (src.cols(), dst.cols());
    debug_assert!(dst.rows() == src.rows() && rp >= r);
    dst.as_mut_slice()
        .par_chunks_mut(COPY_ROWS * rp)
        .zip(src.as_slice().par_chunks(COPY_ROWS * r))
        .for_each(|(d, s)| {
            for (drow, srow) in d.chunks_exact_mut(rp).zip(s.chunks_exact(r)) {
                drow[..r].copy_from_slice(srow);
                drow[r..].fill(0.0);
            }
        });
}

/// Copies the first `dst.cols()` columns of `src` into `dst` (same rows).
pub(crate) fn copy_unpadded(src: &Matrix, dst: &mut Matrix) {
    let (r, rp) = (dst.cols(), src.cols());
    debug_assert!(dst.rows() == src.rows() && rp >= r);
    dst.as_mut_slice()
        .par_chunks_mut(COPY_ROWS * r)
        .zip(src.as_slice().par_chunks(COPY_ROWS * rp))
        .for_each(|(d, s)| {
            for (drow, srow) in d.chunks_exact_mut(r).zip(s.chunks_exact(rp)) {
                drow.copy_from_slice(&srow[..r]);
            }
        });
}

/// `m` reshaped to `rows x cols` (contents unspecified), reusing its allocation when it
/// already has that shape.
pub(crate) fn reshape(m: &mut Option<Matrix>, rows: usize, cols: usize) -> &mut Matrix {
    if m.as_ref()
        .is_none_or(|x| x.rows() != rows || x.cols() != cols)
    {
        *m = Some(Matrix::zeros(rows, cols));
    }
    m.as_mut().expect("just set")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padded_ranks_fill_whole_vectors() {
        let got: Vec<(usize, Option<usize>)> =
            [1, 2, 3, 4, 5, 7, 8, 9, 10, 16, 17, 20, 50, 64, 100]
                .iter()
                .map(|&r| (r, padded_rank(r, LINE_DOUBLES)))
                .collect();
        assert_eq!(
            got,
            [
                (1, Some(8)),
                (2, Some(8)),
                (3, Some(8)),
                (4, Some(8)),
                (5, Some(8)),
                (7, Some(8)),
                (8, None),
                (9, Some(16)),
                (10, Some(16)),
                (16, None),
                (17, Some(24)),
                (20, Some(24)),
                (50, Some(56)),
                (64, None),
                (100, Some(104)),
            ]
        );
        // A narrower line (AVX2-sized) pads less.
        assert_eq!(padded_rank(10, 4), Some(12));
        assert_eq!(padded_rank(0, 8), None);
    }

    #[test]
    fn padding_pays_only_with_enough_nonzeros_and_no_atomics() {
        use ConflictResolution::*;
        assert!(pays_to_pad(Pull, 1600, 100, 16));
        assert!(!pays_to_pad(Pull, 1599, 100, 16));
        assert!(pays_to_pad(Flagged, 1600, 100, 16));
        assert!(!pays_to_pad(Atomic, 1 << 40, 1, 16));
        assert!(!pays_to_pad(Pull, u64::MAX / 2, u64::MAX / 8, 16)); // saturates, never wraps
    }

    #[test]
    fn copies_round_trip_with_zero_padding() {
        let a = Matrix::random(5000, 10, 3);
        let mut p = Matrix::random(5000, 16, 4); // stale contents must be overwritten
        copy_padded(&a, &mut p);
        for i in [0, 4095, 4096, 4999] {
            assert_eq!(&p.row(i)[..10], a.row(i));
            assert!(p.row(i)[10..].iter().all(|&x| x == 0.0));
        }
        let mut back = Matrix::zeros(5000, 10);
        copy_unpadded(&p, &mut back);
        assert_eq!(back, a);
    }
}
