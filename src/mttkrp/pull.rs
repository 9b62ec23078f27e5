//! The pull strategy: segments whose mode interval overlaps no other segment's write the
//! output directly; the others accumulate into private staging rows (the [`Workspace`]'s), then
//! each block of output rows pulls the staged rows that cover it. Output rows no exclusive
//! segment writes are zeroed by the segment tasks, in the same parallel region.

use super::driver::Workspace;
use super::phases::{Clock, NoClock, Phase};
use super::strategy::exclusive_intervals;
use super::zeroing::shared_row_ranges;
use crate::error::Result;
use crate::format::alto::AltoTensor;
use crate::matrix::Matrix;
use alto_kernels::{AlignedBuf, HwBits, KernelError, PlainRows};
use rayon::prelude::*;

/// Doubles in a 4 KiB page: the unit of the staging layout below.
const PAGE_DOUBLES: usize = 4096 / 8;

/// Doubles of one segment's staging block for rows `lo..=hi`: the rows rounded up to whole
/// 4 KiB pages, plus one page of gap, so every block starts 64-byte aligned (the buffer's
/// alignment) and no page holds rows of two segments. Within one page, a core's L2 streamer
/// prefetches the lines another core is adding into and takes them out of its modified state:
/// measured with blocks rounded to cache lines only, uniform-4d's mode 3 (20 rows, both
/// segments staged) took 1.89 ms at 2 threads; with this layout 1.49 ms (`perf-suite
/// --compare`, 9 runs each). At most two pages per segment more.
pub(super) fn staged_rows_len(lo: u64, hi: u64, rank: usize) -> usize {
    // Saturating: an impossible size must stay impossible (the memory plan refuses it), not
    // wrap into a small buffer.
    usize::try_from(hi - lo + 1)
        .unwrap_or(usize::MAX)
        .saturating_mul(rank)
        .saturating_add(2 * PAGE_DOUBLES - 1)
        / PAGE_DOUBLES
        * PAGE_DOUBLES
}

/// The pull strategy for any per-segment row producer (`run(p, sink)` adds segment `p`'s rows
/// into `sink`): CP-APR's portable Phi kernels use it. Call it inside `pool.install`.
pub(crate) fn pull_rows<I: HwBits>(
    t: &AltoTensor<I>,
    mode: usize,
    rank: usize,
    out: &mut Matrix,
    ws: &mut Workspace,
    run: &(dyn Fn(usize, &mut PlainRows<'_>) -> std::result::Result<(), KernelError> + Sync),
) -> Result<()> {
    pull(t, mode, rank, out, ws, run, &NoClock)
}

/// One task of the pull strategy's segment region: a segment and the rows it writes (its
/// staging rows, or its own output rows when it is exclusive), plus output rows to zero.
struct PullTask<'a> {
    segment: usize,
    first_row: u64,
    rows: &'a mut [f64],
    staged: bool,
    /// Output rows no exclusive segment writes, zeroed by this task before its kernel.
    zero: Vec<&'a mut [f64]>,
}

impl<'a> PullTask<'a> {
    fn new(segment: usize, first_row: u64, rows: &'a mut [f64], staged: bool) -> Self {
        PullTask {
            segment,
            first_row,
            rows,
            staged,
            zero: Vec::new(),
        }
    }
}

/// Pull-based staging: segments whose mode interval overlaps no other segment's write the
/// output directly; the others accumulate into private staging rows, then each output row
/// pulls the staged rows that cover it.
pub(super) fn pull<I: HwBits, C: Clock>(
    t: &AltoTensor<I>,
    mode: usize,
    rank: usize,
    out: &mut Matrix,
    ws: &mut Workspace,
    run: &(dyn Fn(usize, &mut PlainRows<'_>) -> std::result::Result<(), alto_kernels::KernelError>
          + Sync),
    clock: &C,
) -> Result<()> {
    let parts = t.num_partitions();
    let intervals: Vec<Option<(u64, u64)>> = (0..parts).map(|p| t.interval(p, mode)).collect();
    let exclusive = exclusive_intervals(&intervals);
    let staged_len: usize = (0..parts)
        .filter(|&p| !exclusive[p])
        .filter_map(|p| intervals[p])
        .map(|(lo, hi)| staged_rows_len(lo, hi, rank))
        .sum();
    if ws.staging.len() < staged_len {
        // Only when the workspace was sized for another tensor or rank.
        ws.staging = AlignedBuf::zeros(staged_len);
    }

    // Carve disjoint row blocks: staging slices for shared segments, output slices (in
    // ascending row order) for exclusive ones.
    let mut staged: Vec<(usize, u64, u64, &mut [f64])> = Vec::new(); // (segment, lo, hi, rows)
    let mut staging_rest: &mut [f64] = &mut ws.staging[..staged_len];
    for p in 0..parts {
        if let (Some((lo, hi)), false) = (intervals[p], exclusive[p]) {
            let (buf, rest) =
                std::mem::take(&mut staging_rest).split_at_mut(staged_rows_len(lo, hi, rank));
            staging_rest = rest;
            // The rows proper; the padding to the next cache line stays unused.
            let buf = &mut buf[..(hi - lo + 1) as usize * rank];
            staged.push((p, lo, hi, buf));
        }
    }
    let mut direct_order: Vec<usize> = (0..parts).filter(|&p| exclusive[p]).collect();
    direct_order.sort_by_key(|&p| intervals[p].map(|iv| iv.0));
    // The output rows no exclusive segment writes: zeroed by their own tasks in the same
    // parallel region (the pull, which adds into them, comes after it).
    let direct_rows: Vec<Option<(u64, u64)>> = direct_order.iter().map(|&p| intervals[p]).collect();
    let unowned = shared_row_ranges(&direct_rows, out.rows() as u64);
    let mut tasks: Vec<PullTask<'_>> = Vec::with_capacity(parts);
    let mut zero_chunks: Vec<&mut [f64]> = Vec::new();
    let mut out_rest: &mut [f64] = out.as_mut_slice();
    let mut consumed_rows = 0u64;
    let mut owned = direct_order
        .iter()
        .map(|&p| {
            (
                intervals[p].expect("exclusive segments are non-empty"),
                Some(p),
            )
        })
        .chain(unowned.iter().map(|&rows| (rows, None)))
        .collect::<Vec<_>>();
    owned.sort_unstable_by_key(|&((lo, _), _)| lo);
    for ((lo, hi), segment) in owned {
        let skip = (lo - consumed_rows) as usize * rank;
        let len = (hi - lo + 1) as usize * rank;
        let (_, rest) = std::mem::take(&mut out_rest).split_at_mut(skip);
        let (rows, rest) = rest.split_at_mut(len);
        out_rest = rest;
        consumed_rows = hi + 1;
        match segment {
            Some(p) => tasks.push(PullTask::new(p, lo, rows, false)),
            None => zero_chunks.extend(rows.chunks_mut(1 << 14)),
        }
    }
    let has_staged = !staged.is_empty();
    tasks.extend(
        staged
            .iter_mut()
            .map(|(p, lo, _, buf)| PullTask::new(*p, *lo, buf, true)),
    );
    // The rows no exclusive segment writes are shared out among the segment tasks, round
    // robin, and zeroed before their kernels: one task per segment keeps the region balanced
    // (separate zeroing tasks, being short, ended up beside two segments queued on one thread).
    if tasks.is_empty() {
        zero_chunks.iter_mut().for_each(|c| c.fill(0.0));
    } else {
        let n = tasks.len();
        for (k, c) in zero_chunks.into_iter().enumerate() {
            tasks[k % n].zero.push(c);
        }
    }

    let region = clock.now();
    // One task per split: the segments are few and large, and two left in one leaf of
    // rayon's splitting would run one after the other on one thread.
    let done = tasks.into_par_iter().with_max_len(1).try_for_each(|task| {
        let t0 = clock.now();
        task.zero.into_iter().for_each(|c| c.fill(0.0));
        clock.busy(Phase::ZeroOutput, t0);
        let t0 = clock.now();
        task.rows.fill(0.0);
        let phase = if task.staged {
            Phase::ZeroStaging
        } else {
            Phase::ZeroOutput
        };
        clock.busy(phase, t0);
        let t0 = clock.now();
        let r = run(
            task.segment,
            &mut PlainRows::new(task.rows, task.first_row, rank),
        );
        clock.busy(Phase::Kernel, t0);
        r
    });
    clock.end_region(region);
    done?;
    if !has_staged {
        return Ok(());
    }

    // Pull: each output block sums the staged rows that overlap it.
    let staged_bufs: Vec<(u64, u64, &[f64])> = staged
        .iter()
        .map(|(_, lo, hi, buf)| (*lo, *hi, &**buf))
        .collect();
    let block_rows = 256usize;
    let region = clock.now();
    out.as_mut_slice()
        .par_chunks_mut(block_rows * rank)
        .enumerate()
        .for_each(|(b, block)| {
            let t0 = clock.now();
            let first = (b * block_rows) as u64;
            let last = first + (block.len() / rank) as u64 - 1;
            for &(lo, hi, buf) in &staged_bufs {
                let (a, z) = (lo.max(first), hi.min(last));
                if a > z {
                    continue;
                }
                let src = &buf[(a - lo) as usize * rank..(z - lo + 1) as usize * rank];
                let dst = &mut block[(a - first) as usize * rank..(z - first + 1) as usize * rank];
                for (d, s) in dst.iter_mut().zip(src) {
                    *d += *s;
                }
            }
            clock.busy(Phase::Pull, t0);
        });
    clock.end_region(region);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocks keep the rows, stay whole cache lines, and leave at least a page between one
    /// segment's last row and the next segment's first, so no page holds both.
    #[test]
    fn staging_blocks_leave_a_page_between_segments() {
        for rank in [1, 7, 8, 16, 33, 64, 100] {
            for rows in [1u64, 2, 20, 31, 32, 33, 64, 1000] {
                let len = staged_rows_len(5, 5 + rows - 1, rank);
                let used = rows as usize * rank;
                assert_eq!(len % 8, 0, "rank {rank}, {rows} rows: {len}");
                assert!(
                    len >= used + PAGE_DOUBLES,
                    "rank {rank}, {rows} rows: {len}"
                );
                assert!(
                    len <= used + 2 * PAGE_DOUBLES,
                    "rank {rank}, {rows} rows: {len}"
                );
            }
        }
        assert_eq!(
            staged_rows_len(0, u64::MAX - 1, 16),
            usize::MAX / PAGE_DOUBLES * PAGE_DOUBLES
        );
    }
}
