//! Parallel MTTKRP on an ALTO tensor: segments run in parallel on a caller-owned rayon pool,
//! conflicts resolved by pull-based staging, atomics or flag-guided atomics.

use super::oracle::check_factors;
use super::strategy::{exclusive_intervals, resolve_sync, ConflictResolution, SyncChoice};
use crate::dispatch::{default_decode, KernelChoice};
use crate::error::{AltoError, Result};
use crate::format::alto::{AltoTensor, AnyAlto};
use crate::matrix::Matrix;
use crate::with_alto;
use alto_kernels::{
    as_atomic, run_segment, AlignedBuf, AtomicRows, DecodeKind, FlaggedRows, HwBits, KernelId,
    PlainRows, SegmentInput, DEFAULT_PREFETCH,
};
use rayon::prelude::*;

/// What to run; every field can force a branch the heuristics would not take.
#[derive(Clone, Copy, Debug, Default)]
pub struct MttkrpOptions {
    pub sync: SyncChoice,
    pub kernel: KernelChoice,
    /// `None`: the CPU rule ([`crate::dispatch::default_decode`]).
    pub decode: Option<DecodeKind>,
    /// Fiber-reuse threshold of the heuristic; `None`: the tensor's build threshold.
    pub min_fiber_reuse: Option<u64>,
    /// Software-prefetch distance in nonzeros (0 = off); `None`: the kernels' measured
    /// default, [`alto_kernels::DEFAULT_PREFETCH`].
    pub prefetch: Option<usize>,
}

/// What ran.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct MttkrpRun {
    pub sync: ConflictResolution,
    #[serde(serialize_with = "ser_display")]
    pub kernel: KernelId,
    /// The decoder's name (`pext` or `runs`).
    pub decode: &'static str,
    #[serde(skip)]
    pub decode_kind: DecodeKind,
    /// `{sync}_{kernel}`, e.g. `pull_scalar_r16`.
    pub name: String,
}

fn ser_display<S: serde::Serializer>(k: &KernelId, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.collect_str(k)
}

/// Doubles of one segment's staging rows `lo..=hi`, rounded up to whole cache lines so every
/// segment's buffer starts 64-byte aligned.
fn staged_rows_len(lo: u64, hi: u64, rank: usize) -> usize {
    // Saturating: an impossible size must stay impossible (the memory plan refuses it), not
    // wrap into a small buffer.
    usize::try_from(hi - lo + 1)
        .unwrap_or(usize::MAX)
        .saturating_mul(rank)
        .saturating_add(7)
        / 8
        * 8
}

/// Staging floats needed for `rank`: the largest, over modes, sum of the segments' interval
/// lengths times the rank (each rounded up to whole cache lines).
pub fn staging_len<I: HwBits>(t: &AltoTensor<I>, rank: usize) -> usize {
    (0..t.order())
        .map(|m| {
            (0..t.num_partitions())
                .filter_map(|p| t.interval(p, m))
                .map(|(lo, hi)| staged_rows_len(lo, hi, rank))
                .fold(0usize, usize::saturating_add)
        })
        .max()
        .unwrap_or(0)
}

/// Scratch for the pull-based strategy, sized by [`staging_len`] once per (tensor, rank,
/// partitioning) and reused by every call.
#[derive(Debug, Default)]
pub struct Workspace {
    /// 64-byte aligned, like the factors and outputs.
    staging: AlignedBuf,
}

impl Workspace {
    pub fn new(t: &AnyAlto, rank: usize) -> Self {
        let len = with_alto!(t, x => staging_len(x, rank));
        Workspace {
            staging: AlignedBuf::zeros(len),
        }
    }
    pub fn for_tensor<I: HwBits>(t: &AltoTensor<I>, rank: usize) -> Self {
        Workspace {
            staging: AlignedBuf::zeros(staging_len(t, rank)),
        }
    }
    pub fn bytes(&self) -> usize {
        self.staging.len() * 8
    }
}

/// MTTKRP of `mode` into `out` (zeroed here), on `pool`.
pub fn mttkrp(
    t: &AnyAlto,
    factors: &[Matrix],
    mode: usize,
    out: &mut Matrix,
    opts: &MttkrpOptions,
    ws: &mut Workspace,
    pool: &rayon::ThreadPool,
) -> Result<MttkrpRun> {
    with_alto!(t, x => mttkrp_alto(x, factors, mode, out, opts, ws, pool))
}

/// The plan for one call: which strategy and kernel run, checked before any work.
pub fn plan<I: HwBits>(
    t: &AltoTensor<I>,
    mode: usize,
    rank: usize,
    opts: &MttkrpOptions,
) -> Result<MttkrpRun> {
    let threshold = opts.min_fiber_reuse.unwrap_or(t.min_fiber_reuse());
    let sync = resolve_sync(
        opts.sync,
        t.fiber_reuse(mode),
        threshold,
        t.flag_bit(mode).is_some(),
    );
    let kernel = opts.kernel.resolve(rank)?;
    let decode = match opts.decode {
        Some(d) => d,
        None => default_decode(),
    };
    let decode_kind = t.decoder(decode).kind(); // Pext falls back to Runs without BMI2
    Ok(MttkrpRun {
        sync,
        kernel,
        decode: decode_kind.name(),
        decode_kind,
        name: format!("{sync}_{kernel}"),
    })
}

/// The generic driver behind [`mttkrp`].
pub fn mttkrp_alto<I: HwBits>(
    t: &AltoTensor<I>,
    factors: &[Matrix],
    mode: usize,
    out: &mut Matrix,
    opts: &MttkrpOptions,
    ws: &mut Workspace,
    pool: &rayon::ThreadPool,
) -> Result<MttkrpRun> {
    let rank = check_factors(t.dims(), factors, mode)?;
    if out.rows() as u64 != t.dims()[mode] || out.cols() != rank {
        return Err(AltoError::InvalidArgument(format!(
            "output is {} x {}, expected {} x {rank}",
            out.rows(),
            out.cols(),
            t.dims()[mode]
        )));
    }
    let run = plan(t, mode, rank, opts)?;
    let decoder = t.decoder(run.decode_kind);
    let factor_slices: Vec<&[f64]> = factors.iter().map(|u| u.as_slice()).collect();
    let boundary_mask = match (run.sync, t.flag_bit(mode)) {
        (ConflictResolution::Flagged, Some(bit)) => I::from_u128(1u128 << bit),
        _ => I::ZERO,
    };
    let prefetch = opts.prefetch.unwrap_or(DEFAULT_PREFETCH);
    let input_of = |p: usize| {
        let range = t.partition_range(p);
        SegmentInput {
            idx: &t.indices()[range.clone()],
            vals: &t.values()[range],
            factors: &factor_slices,
            target: mode,
            rank,
            boundary_mask,
            prefetch,
        }
    };
    let kernel = run.kernel;
    let parts = t.num_partitions();
    pool.install(|| -> Result<()> {
        out.as_mut_slice()
            .par_chunks_mut(1 << 14)
            .for_each(|c| c.fill(0.0));
        match run.sync {
            ConflictResolution::Pull => pull(t, mode, rank, out, ws, &|p, sink| {
                run_segment(kernel, &decoder, &input_of(p), sink)
            }),
            ConflictResolution::Atomic => {
                let cells = as_atomic(out.as_mut_slice());
                (0..parts).into_par_iter().try_for_each(|p| {
                    run_segment(
                        kernel,
                        &decoder,
                        &input_of(p),
                        &mut AtomicRows::new(cells, rank),
                    )
                })?;
                Ok(())
            }
            ConflictResolution::Flagged => {
                let cells = as_atomic(out.as_mut_slice());
                (0..parts).into_par_iter().try_for_each(|p| {
                    // SAFETY: each segment gets its own sink, and the flags are exact for these
                    // segments: an `AltoTensor` is made only by `build` / `repartition`, which set
                    // them from the current bounds, or by `from_stored`, which recomputes and
                    // compares them (a `.alto` file cannot smuggle in a cleared flag).
                    let mut sink = unsafe { FlaggedRows::new(cells, rank) };
                    run_segment(kernel, &decoder, &input_of(p), &mut sink)
                })?;
                Ok(())
            }
        }
    })?;
    Ok(run)
}

/// Pull-based staging: segments whose mode interval overlaps no other segment's write the
/// output directly; the others accumulate into private staging rows, then each output row
/// pulls the staged rows that cover it.
fn pull<I: HwBits>(
    t: &AltoTensor<I>,
    mode: usize,
    rank: usize,
    out: &mut Matrix,
    ws: &mut Workspace,
    run: &(dyn Fn(usize, &mut PlainRows<'_>) -> std::result::Result<(), alto_kernels::KernelError>
          + Sync),
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
    let mut direct: Vec<(usize, u64, u64, &mut [f64])> = Vec::with_capacity(direct_order.len());
    let mut out_rest: &mut [f64] = out.as_mut_slice();
    let mut consumed_rows = 0u64;
    for p in direct_order {
        let (lo, hi) = intervals[p].expect("exclusive segments are non-empty");
        let skip = (lo - consumed_rows) as usize * rank;
        let len = (hi - lo + 1) as usize * rank;
        let (_, rest) = std::mem::take(&mut out_rest).split_at_mut(skip);
        let (rows, rest) = rest.split_at_mut(len);
        out_rest = rest;
        consumed_rows = hi + 1;
        direct.push((p, lo, hi, rows));
    }

    // Reborrow both kinds as one item type so they run in one parallel loop.
    let staged_tasks = staged
        .par_iter_mut()
        .map(|(p, lo, _, buf)| (*p, *lo, &mut **buf, true));
    let direct_tasks = direct
        .par_iter_mut()
        .map(|(p, lo, _, buf)| (*p, *lo, &mut **buf, false));
    staged_tasks
        .chain(direct_tasks)
        .try_for_each(|(p, lo, buf, needs_zero)| {
            if needs_zero {
                buf.fill(0.0); // the output itself was zeroed by the caller
            }
            run(p, &mut PlainRows::new(buf, lo, rank))
        })?;
    drop(direct);
    if staged.is_empty() {
        return Ok(());
    }

    // Pull: each output block sums the staged rows that overlap it.
    let staged_bufs: Vec<(u64, u64, &[f64])> = staged
        .iter()
        .map(|(_, lo, hi, buf)| (*lo, *hi, &**buf))
        .collect();
    let block_rows = 256usize;
    out.as_mut_slice()
        .par_chunks_mut(block_rows * rank)
        .enumerate()
        .for_each(|(b, block)| {
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
        });
    Ok(())
}
