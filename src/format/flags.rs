//! Boundary flags (SPEC section 5): which spare index bits flag which modes, which rows are
//! shared between segments, and the check that a stored tensor's flags are exactly those. The
//! flagged MTTKRP writes unflagged rows without atomics, so exact flags are a soundness
//! invariant, not a hint.
//!
//! Building flags reads the index array twice whatever the order: one pass per segment marks
//! the rows it touches in every flagged mode at once, and one pass sets every mode's flag on
//! each nonzero (a mode whose shared rows are a whole interval is tested on its masked bits,
//! without decoding).

use super::alto::{fiber_reuse, run_decoding, AltoTensor};
use alto_kernels::{AnyDecoder, Bmi2Body, Decode, HwBits, ModeDecode};
use rayon::prelude::*;

/// Nonzeros per parallel task of the flag passes.
const FLAG_CHUNK: usize = 1 << 14;

impl<I: HwBits> AltoTensor<I> {
    /// Assigns spare bits above `B` as boundary flags, limited-reuse modes first (lowest reuse
    /// first), then the others while bits remain, and sets each nonzero's flags.
    pub(super) fn set_flags(&mut self, decoder: &AnyDecoder<I>) {
        let had_flags = self.flag_bits.iter().any(Option::is_some);
        let b = self.layout.total_bits();
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
        let mut rules = self.flag_rules(decoder);
        rules.retain(|r| !matches!(r.shared, SharedRows::None));
        if rules.is_empty() && !had_flags {
            return; // the sort leaves the bits above `B` clear: nothing to set or clear
        }
        let value_mask = I::from_u128(if b == 128 {
            u128::MAX
        } else {
            (1u128 << b) - 1
        });
        self.idx.par_chunks_mut(FLAG_CHUNK).for_each(|chunk| {
            let body = SetFlags {
                chunk,
                value_mask,
                rules: &rules,
                decoder,
            };
            run_decoding(decoder, body)
        });
    }

    /// One rule per flagged mode: its flag and the rows it goes on (the rows of that mode
    /// touched by more than one segment). Scratch stays O(nnz) whatever the dims: a row-indexed
    /// table where a mode's dim is within [`DENSE_ROWS_PER_NONZERO`] of the nonzero count, else
    /// the sorted list of shared rows.
    ///
    /// Only rows inside two or more segments' intervals can be shared ([`overlap_bounds`]):
    /// with one segment, or segments whose intervals in a mode are apart, there is nothing to
    /// look for, and elsewhere only that window's rows are counted. Every table mode is marked
    /// in the same pass over each segment.
    fn flag_rules(&self, decoder: &AnyDecoder<I>) -> Vec<FlagRule<I>> {
        let mut rules = Vec::new();
        let mut dense: Vec<(usize, (u64, u64))> = Vec::new(); // (rule, window)
        for (mode, bit) in self.flag_bits.iter().enumerate() {
            let Some(bit) = *bit else { continue };
            let intervals: Vec<Option<(u64, u64)>> = (0..self.num_partitions())
                .map(|p| self.interval(p, mode))
                .collect();
            let window = overlap_bounds(&intervals);
            let shared = match window {
                None => SharedRows::None,
                Some(w)
                    if dense_row_table(
                        w.1 - w.0 + 1,
                        self.nnz() as u64,
                        DENSE_ROWS_PER_NONZERO,
                    ) =>
                {
                    dense.push((rules.len(), w));
                    SharedRows::None // filled in below
                }
                Some(_) => SharedRows::Sparse(self.shared_rows_sparse(decoder, mode)),
            };
            rules.push(FlagRule {
                mode,
                mask: self.masks[mode],
                flag: I::from_u128(1u128 << bit),
                shared,
            });
        }
        if dense.is_empty() {
            return rules;
        }
        let marks = self.mark_touched_rows(decoder, &dense, &rules);
        for (k, &(r, window)) in dense.iter().enumerate() {
            let mut count = vec![0u8; (window.1 - window.0 + 1) as usize];
            for segment_marks in &marks {
                let Some(m) = &segment_marks[k] else { continue };
                let base = (m.lo - window.0) as usize;
                match &m.touched {
                    Touched::Bytes(bytes) => {
                        for (c, &t) in count[base..].iter_mut().zip(bytes) {
                            *c = c.saturating_add(t);
                        }
                    }
                    Touched::Bits(bits) => {
                        for (w, &word) in bits.iter().enumerate() {
                            let mut word = word;
                            while word != 0 {
                                let row = base + w * 64 + word.trailing_zeros() as usize;
                                count[row] = count[row].saturating_add(1);
                                word &= word - 1;
                            }
                        }
                    }
                }
            }
            rules[r].shared = SharedRows::from_counts(window.0, &count, rules[r].mask);
        }
        rules
    }

    /// For each segment, in parallel, the rows it touches in each `dense` mode's window (over
    /// its interval within the window, or `None` when they do not meet), all modes marked in
    /// one read of the segment. A range no longer than the segment is marked a byte per row
    /// (nonzeros then often repeat rows, and setting bits of the same few words would chain
    /// every store behind the last); a longer one a bit per row.
    fn mark_touched_rows(
        &self,
        decoder: &AnyDecoder<I>,
        dense: &[(usize, (u64, u64))],
        rules: &[FlagRule<I>],
    ) -> Vec<Vec<Option<RowMarks>>> {
        (0..self.num_partitions())
            .into_par_iter()
            .map(|p| {
                let segment = &self.idx[self.partition_range(p)];
                let mut marks: Vec<Option<RowMarks>> = dense
                    .iter()
                    .map(|&(r, window)| {
                        let mode = rules[r].mode;
                        let (lo, hi) = self.interval(p, mode)?;
                        let (lo, hi) = (lo.max(window.0), hi.min(window.1));
                        let span = hi.checked_sub(lo)?;
                        let touched = if span < segment.len() as u64 {
                            Touched::Bytes(vec![0u8; span as usize + 1])
                        } else {
                            Touched::Bits(vec![0u64; (span / 64 + 1) as usize])
                        };
                        Some(RowMarks {
                            mode,
                            lo,
                            span,
                            touched,
                        })
                    })
                    .collect();
                let body = MarkRows {
                    marks: marks.iter_mut().flatten().collect(),
                    segment,
                    decoder,
                };
                run_decoding(decoder, body);
                marks
            })
            .collect()
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
        let rules = self.flag_rules(&decoder);
        for rule in &rules {
            let wrong = self.idx.par_chunks(FLAG_CHUNK).any(|chunk| {
                let body = FlagsDiffer {
                    chunk,
                    rule,
                    decoder: &decoder,
                };
                run_decoding(&decoder, body)
            });
            if wrong {
                return Err(format!(
                    "mode {} boundary flags do not match the rows shared between segments",
                    rule.mode
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

/// One flagged mode: its flag bit (as an index word) goes on the nonzeros whose row is in
/// `shared`.
struct FlagRule<I> {
    mode: usize,
    /// The mode's coordinate bits.
    mask: I,
    flag: I,
    shared: SharedRows<I>,
}

/// Rows of one mode touched by more than one segment.
enum SharedRows<I> {
    /// No row is shared.
    None,
    /// Every row of one interval, and no other: tested on the nonzero's masked bits (`lo` and
    /// `hi` are the interval's ends deposited into the mode's mask), whose order is the rows'
    /// order, so nothing is decoded.
    Interval { lo: I, hi: I },
    /// Indexed by row minus `first`; rows outside the table are not shared.
    Dense { first: u64, table: Vec<bool> },
    /// The shared rows, sorted.
    Sparse(Vec<u64>),
}

impl<I: HwBits> SharedRows<I> {
    /// The rows from `first` whose `count` (segments touching them) is two or more, in the
    /// cheapest form to test.
    fn from_counts(first: u64, count: &[u8], mask: I) -> Self {
        let Some(a) = count.iter().position(|&c| c > 1) else {
            return SharedRows::None;
        };
        let b = count.iter().rposition(|&c| c > 1).unwrap_or(a);
        let run = &count[a..=b];
        if run.iter().all(|&c| c > 1) {
            let (lo, hi) = (first + a as u64, first + b as u64);
            return SharedRows::Interval {
                lo: I::pdep_soft(lo, mask),
                hi: I::pdep_soft(hi, mask),
            };
        }
        SharedRows::Dense {
            first: first + a as u64,
            table: run.iter().map(|&c| c > 1).collect(),
        }
    }
}

impl<I: HwBits> FlagRule<I> {
    /// Calls `on(x, shared)` for each item of `xs` in order, `shared` telling whether the row of
    /// this rule's mode in the item's index (`index(&x)`) is shared. The one row test that both
    /// setting flags and checking stored ones use: the rule's kind is matched once, then one
    /// tight loop runs (inlined into the caller's BMI2 body, so `pext` inlines too).
    #[inline(always)]
    fn test_each<X>(
        &self,
        decoder: &AnyDecoder<I>,
        xs: impl Iterator<Item = X>,
        index: impl Fn(&X) -> I,
        mut on: impl FnMut(X, bool),
    ) {
        match &self.shared {
            SharedRows::None => xs.for_each(|x| on(x, false)),
            SharedRows::Interval { lo, hi } => {
                let (lo, hi, mask) = (*lo, *hi, self.mask);
                for x in xs {
                    let bits = index(&x).and(mask);
                    on(x, lo <= bits && bits <= hi);
                }
            }
            SharedRows::Dense { first, table } => match decoder {
                AnyDecoder::Pext(d) => {
                    test_in_table(xs, d.mode(self.mode), *first, table, index, on)
                }
                AnyDecoder::Runs(d) => {
                    test_in_table(xs, d.mode(self.mode), *first, table, index, on)
                }
            },
            SharedRows::Sparse(rows) => {
                for x in xs {
                    let row = decoder.coord(index(&x), self.mode);
                    on(x, rows.binary_search(&row).is_ok());
                }
            }
        }
    }
}

/// [`FlagRule::test_each`] for a row table (indexed by row minus `first`; rows outside it are
/// not shared), the row decoded by `rows`.
#[inline(always)]
fn test_in_table<I: HwBits, M: ModeDecode<I>, X>(
    xs: impl Iterator<Item = X>,
    rows: M,
    first: u64,
    table: &[bool],
    index: impl Fn(&X) -> I,
    mut on: impl FnMut(X, bool),
) {
    for x in xs {
        // A row below `first` wraps to a huge offset; `try_from` keeps one beyond `usize` (a
        // 32-bit target) from truncating into the table.
        let r = rows.coord(index(&x)).wrapping_sub(first);
        let shared = usize::try_from(r).ok().and_then(|i| table.get(i));
        on(x, shared.is_some_and(|&s| s));
    }
}

/// One segment's touched rows of one mode: entry `r - lo` for each row `r` in `lo..=lo + span`.
struct RowMarks {
    mode: usize,
    lo: u64,
    span: u64,
    touched: Touched,
}

/// Which rows of a range are touched.
enum Touched {
    /// 1 for a touched row.
    Bytes(Vec<u8>),
    /// A set bit for a touched row.
    Bits(Vec<u64>),
}

/// Sets the flags of `rules` on each nonzero of `chunk`, clearing any other bit above
/// `value_mask`: one tight pass over the (cache-resident) chunk per rule.
struct SetFlags<'a, I> {
    chunk: &'a mut [I],
    value_mask: I,
    rules: &'a [FlagRule<I>],
    decoder: &'a AnyDecoder<I>,
}

impl<I: HwBits> Bmi2Body for SetFlags<'_, I> {
    type Output = ();
    #[inline(always)]
    fn call(self) {
        for x in self.chunk.iter_mut() {
            *x = x.and(self.value_mask);
        }
        for rule in self.rules {
            let flag = rule.flag;
            rule.test_each(
                self.decoder,
                self.chunk.iter_mut(),
                |x| **x,
                |x, shared| {
                    if shared {
                        *x = x.or(flag);
                    }
                },
            );
        }
    }
}

/// Whether any nonzero of `chunk` carries `rule`'s flag where its row is not shared, or lacks it
/// where it is.
struct FlagsDiffer<'a, I> {
    chunk: &'a [I],
    rule: &'a FlagRule<I>,
    decoder: &'a AnyDecoder<I>,
}

impl<I: HwBits> Bmi2Body for FlagsDiffer<'_, I> {
    type Output = bool;
    #[inline(always)]
    fn call(self) -> bool {
        let flag = self.rule.flag;
        let mut differ = false;
        self.rule.test_each(
            self.decoder,
            self.chunk.iter(),
            |x| **x,
            |x, shared| {
                differ |= (x.and(flag) != I::ZERO) != shared;
            },
        );
        differ
    }
}

/// Marks in each of `marks` the rows of its mode in its range that `segment` touches: block by
/// block (so a block read once from memory serves every mode), one tight loop per mode.
struct MarkRows<'a, 'm, I> {
    marks: Vec<&'m mut RowMarks>,
    segment: &'a [I],
    decoder: &'a AnyDecoder<I>,
}

impl<I: HwBits> Bmi2Body for MarkRows<'_, '_, I> {
    type Output = ();
    #[inline(always)]
    fn call(mut self) {
        for block in self.segment.chunks(FLAG_CHUNK) {
            for m in self.marks.iter_mut() {
                let (lo, span, mode) = (m.lo, m.span, m.mode);
                match self.decoder {
                    AnyDecoder::Pext(d) => {
                        mark_touched(&mut m.touched, block, d.mode(mode), lo, span)
                    }
                    AnyDecoder::Runs(d) => {
                        mark_touched(&mut m.touched, block, d.mode(mode), lo, span)
                    }
                }
            }
        }
    }
}

/// Marks in `touched` each row `r` in `lo..=lo + span` of the nonzeros of `block` (decoded by
/// `rows`), at entry `r - lo`.
#[inline(always)]
fn mark_touched<I: HwBits, M: ModeDecode<I>>(
    touched: &mut Touched,
    block: &[I],
    rows: M,
    lo: u64,
    span: u64,
) {
    match touched {
        Touched::Bytes(bytes) => each_row_in(block, rows, lo, span, |r| bytes[r as usize] = 1),
        Touched::Bits(bits) => each_row_in(block, rows, lo, span, |r| {
            bits[(r / 64) as usize] |= 1 << (r % 64)
        }),
    }
}

/// Calls `f` with `r - lo` for each nonzero of `block` whose row `r` (decoded by `rows`) is in
/// `lo..=lo + span`.
#[inline(always)]
fn each_row_in<I: HwBits, M: ModeDecode<I>>(
    block: &[I],
    rows: M,
    lo: u64,
    span: u64,
    mut f: impl FnMut(u64),
) {
    for &x in block {
        let r = rows.coord(x).wrapping_sub(lo);
        if r <= span {
            f(r);
        }
    }
}

#[cfg(test)]
mod tests;
