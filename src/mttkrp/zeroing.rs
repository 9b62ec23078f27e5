//! Who zeroes which output rows, and when.
//!
//! The atomic strategies add into the output itself, which must be zero first. Zeroing it all
//! before the segments run costs a full pass over the output: for a low-reuse mode that is a
//! DRAM-sized matrix (darpa's third mode: 1.67 M rows) written once by the zeroing and then
//! read and written again, row by row, by the kernel. Instead, the rows that one segment alone
//! touches ([`private_rows`]) are zeroed by that segment, a chunk of nonzeros ahead of where its
//! kernel writes ([`LazyZero`]): the zeroed rows are still in cache when the kernel adds into
//! them. This pays where a mode's coordinate grows along the ALTO line (the longest mode owns
//! the line's top bits); where it does not, the first chunk's largest row is near the end of the
//! segment's interval and the segment zeroes its rows at once, as the up-front pass would.
//! Rows no segment owns alone are zeroed up front ([`shared_row_ranges`]).

use alto_kernels::{AnyDecoder, HwBits};

/// Nonzeros per lazily zeroed chunk: rows of a chunk of a low-reuse mode should fit in L2 with
/// the factor rows it reads (4096 nonzeros of darpa's third mode at rank 16: about 3 500 rows,
/// 450 KB).
pub const LAZY_ZERO_CHUNK: usize = 4096;

/// For each segment's interval, the rows of it that no other segment's interval touches, as one
/// contiguous range (`None` when there is none, or when the rows it owns alone are not
/// contiguous: then they are left to the up-front pass). Never overlaps another segment's
/// interval, nor another returned range.
pub fn private_rows(intervals: &[Option<(u64, u64)>]) -> Vec<Option<(u64, u64)>> {
    intervals
        .iter()
        .enumerate()
        .map(|(p, iv)| {
            let (mut a, mut b) = (*iv)?;
            // Trim the ends against intervals that cover them, repeating while a trim exposes
            // another covered end (intervals arrive in any order).
            loop {
                let mut trimmed = false;
                for (q, other) in intervals.iter().enumerate() {
                    let Some((lo, hi)) = *other else { continue };
                    if q == p || hi < a || lo > b {
                        continue;
                    }
                    if lo <= a {
                        if hi >= b {
                            return None;
                        }
                        a = hi + 1;
                        trimmed = true;
                    } else if hi >= b {
                        b = lo - 1;
                        trimmed = true;
                    }
                }
                if !trimmed {
                    break;
                }
            }
            // An interval strictly inside splits what is left: not one range.
            let split = intervals
                .iter()
                .enumerate()
                .any(|(q, other)| q != p && other.is_some_and(|(lo, hi)| lo <= b && hi >= a));
            (!split).then_some((a, b))
        })
        .collect()
}

/// The row ranges of `0..rows` outside every range of `private` (which must not overlap), in
/// ascending order: what must be zeroed before any segment runs.
pub fn shared_row_ranges(private: &[Option<(u64, u64)>], rows: u64) -> Vec<(u64, u64)> {
    let mut owned: Vec<(u64, u64)> = private.iter().flatten().copied().collect();
    owned.sort_unstable();
    let mut gaps = Vec::new();
    let mut next = 0u64;
    for (a, b) in owned {
        if a > next {
            gaps.push((next, a - 1));
        }
        next = next.max(b + 1);
    }
    if next < rows {
        gaps.push((next, rows - 1));
    }
    gaps
}

/// The largest `mode` coordinate among `idx`: the decode of the largest `x & mask` (extracting
/// a mode's bits keeps their order), one vectorizable pass. `idx` must not be empty.
#[inline]
pub fn max_coord<I: HwBits>(idx: &[I], mask: I, decoder: &AnyDecoder<I>, mode: usize) -> u64 {
    let max = idx.iter().fold(I::ZERO, |m, &x| m.max(x.and(mask)));
    decoder.coord(max, mode)
}

/// A segment's private rows `first..=last`, zeroed in row order just ahead of the kernel.
#[derive(Debug)]
pub struct LazyZero {
    /// The first row not zeroed yet.
    next: u64,
    last: u64,
}

impl LazyZero {
    pub fn new((first, last): (u64, u64)) -> Self {
        LazyZero { next: first, last }
    }

    /// The rows to zero before a chunk whose largest row is `chunk_max` runs (rows beyond
    /// the private range are someone else's, or zeroed up front).
    pub fn before_chunk(&mut self, chunk_max: u64) -> Option<(u64, u64)> {
        if self.next > self.last || chunk_max < self.next {
            return None;
        }
        let end = chunk_max.min(self.last);
        let rows = (self.next, end);
        self.next = end + 1;
        Some(rows)
    }

    /// The private rows no chunk reached: zeroed after the segment's last chunk.
    pub fn rest(self) -> Option<(u64, u64)> {
        (self.next <= self.last).then_some((self.next, self.last))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every returned range lies in its interval and meets no other interval; disjoint
    /// intervals keep their whole range; the shared ranges are exactly the rest.
    #[test]
    fn private_rows_never_meet_another_interval() {
        let cases: Vec<Vec<Option<(u64, u64)>>> = vec![
            vec![Some((0, 9)), Some((10, 19)), Some((20, 29))],
            vec![Some((0, 12)), Some((10, 19)), Some((18, 29))],
            vec![Some((0, 29)), Some((5, 7))],
            vec![Some((5, 7)), Some((0, 29))],
            vec![None, Some((3, 3)), Some((3, 9)), None],
            vec![
                Some((10, 20)),
                Some((0, 12)),
                Some((18, 30)),
                Some((14, 15)),
            ],
            vec![Some((0, 5)), Some((0, 5))],
        ];
        for ivs in cases {
            let private = private_rows(&ivs);
            for (p, r) in private.iter().enumerate() {
                let Some((a, b)) = *r else { continue };
                let (lo, hi) = ivs[p].unwrap();
                assert!(lo <= a && a <= b && b <= hi, "{ivs:?} -> {private:?}");
                for (q, other) in ivs.iter().enumerate() {
                    if let (true, Some((l, h))) = (q != p, other) {
                        assert!(*h < a || *l > b, "{ivs:?} -> {private:?}");
                    }
                }
            }
            let rows = 31;
            let shared = shared_row_ranges(&private, rows);
            let mut covered = vec![0u32; rows as usize];
            for &(a, b) in private.iter().flatten().chain(&shared) {
                (a..=b).for_each(|r| covered[r as usize] += 1);
            }
            assert!(covered.iter().all(|&c| c == 1), "{ivs:?}: {covered:?}");
        }
        assert_eq!(
            private_rows(&[Some((0, 9)), Some((10, 19))]),
            vec![Some((0, 9)), Some((10, 19))]
        );
        assert_eq!(
            private_rows(&[Some((0, 12)), Some((10, 19)), Some((18, 29))]),
            vec![Some((0, 9)), Some((13, 17)), Some((20, 29))]
        );
        assert_eq!(private_rows(&[Some((0, 29)), Some((5, 7))])[0], None);
    }

    #[test]
    fn lazy_zero_reaches_every_private_row_once_in_order() {
        let mut z = LazyZero::new((10, 30));
        assert_eq!(z.before_chunk(5), None);
        assert_eq!(z.before_chunk(12), Some((10, 12)));
        assert_eq!(z.before_chunk(11), None);
        assert_eq!(z.before_chunk(20), Some((13, 20)));
        assert_eq!(z.rest(), Some((21, 30)));
        let mut z = LazyZero::new((10, 30));
        assert_eq!(z.before_chunk(99), Some((10, 30)));
        assert_eq!(z.before_chunk(100), None);
        assert_eq!(z.rest(), None);
    }
}
