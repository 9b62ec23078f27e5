//! Parallel MTTKRP on an ALTO tensor: segments run in parallel on a caller-owned rayon pool,
//! conflicts resolved by pull-based staging, atomics or flag-guided atomics.
//!
//! [`mttkrp_profiled`] also reports where the call's time went ([`PhaseTimes`]); the plain
//! entry points run the same code with the timing compiled out.

use super::oracle::check_factors;
use super::padding::{
    copy_columns, padded_rank, pays_to_pad, reshape, widest_rows, LINE_DOUBLES,
    PAD_NONZEROS_PER_ROW,
};
pub use super::phases::PhaseTimes;
use super::phases::{Clock, NoClock, Phase, Recorder};
use super::pull::{pull, staged_rows_len};
use super::strategy::{resolve_sync, ConflictResolution, SyncChoice};
use super::zeroing::{max_coord, private_rows, shared_row_ranges, LazyZero, LAZY_ZERO_CHUNK};
use crate::dispatch::{default_decode, KernelChoice};
use crate::error::{AltoError, Result};
use crate::format::alto::{AltoTensor, AnyAlto};
use crate::matrix::Matrix;
use crate::with_alto;
use alto_kernels::Isa;
use alto_kernels::{
    as_atomic, run_segment, AlignedBuf, AnyDecoder, AtomicRows, DecodeKind, FlaggedRows, HwBits,
    KernelError, KernelId, KernelIndex, SegmentInput, SegmentSink, DEFAULT_PREFETCH,
};
use rayon::prelude::*;
use std::ops::Range;
use std::sync::atomic::AtomicU64;
use std::time::Instant;

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
    /// Nonzeros per chunk of the atomic strategies' lazy zeroing (see [`super::zeroing`]);
    /// `Some(0)` zeroes the whole output before the segments run; `None`:
    /// [`LAZY_ZERO_CHUNK`].
    pub lazy_zero: Option<usize>,
    /// Rows padded to whole vectors (see [`super::padding`]): `None` decides by
    /// [`padded_rank`] and [`pays_to_pad`] for an automatic or ISA kernel choice (a named
    /// kernel runs at the caller's rank); `Some(true)` pads whenever the rank needs it;
    /// `Some(false)` never.
    pub pad: Option<bool>,
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
    /// The row width the kernel ran at, when the rows were padded (the kernel's rank).
    pub padded_rank: Option<usize>,
    /// `{sync}_{kernel}`, e.g. `pull_scalar_r16`, with `_padded` when the rows were.
    pub name: String,
}

fn ser_display<S: serde::Serializer>(k: &KernelId, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.collect_str(k)
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
    pub(super) staging: AlignedBuf,
    /// Padded copies of the factors, by mode (the target's stays `None`), and of the output;
    /// allocated by the first padded call.
    padded_factors: Vec<Option<Matrix>>,
    padded_out: Option<Matrix>,
}

impl Workspace {
    /// Staging for calls at `rank`, at the padded width where padding may be chosen.
    pub fn new(t: &AnyAlto, rank: usize) -> Self {
        with_alto!(t, x => Self::for_tensor(x, rank))
    }
    pub fn for_tensor<I: HwBits>(t: &AltoTensor<I>, rank: usize) -> Self {
        let rows = t.dims().iter().fold(0u64, |a, &d| a.saturating_add(d));
        let width = widest_rows(rank, t.nnz() as u64, rows);
        Workspace {
            staging: AlignedBuf::zeros(staging_len(t, width)),
            ..Default::default()
        }
    }
    /// Bytes held: staging and padded copies.
    pub fn bytes(&self) -> usize {
        let padded: usize = self
            .padded_factors
            .iter()
            .chain(std::iter::once(&self.padded_out))
            .flatten()
            .map(|m| m.as_slice().len())
            .sum();
        (self.staging.len() + padded) * 8
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

/// [`mttkrp`] that also reports, when `times` is given, where the call's time went (zeroing,
/// staging, kernels, pull reduction, fork/join; see [`PhaseTimes`]). `times` is overwritten.
/// With `None` it is [`mttkrp`].
#[allow(clippy::too_many_arguments)]
pub fn mttkrp_profiled(
    t: &AnyAlto,
    factors: &[Matrix],
    mode: usize,
    out: &mut Matrix,
    opts: &MttkrpOptions,
    ws: &mut Workspace,
    pool: &rayon::ThreadPool,
    times: Option<&mut PhaseTimes>,
) -> Result<MttkrpRun> {
    with_alto!(t, x => mttkrp_alto_profiled(x, factors, mode, out, opts, ws, pool, times))
}

/// [`default_decode`], detected once per process: it reads `cpuid`, which traps to the
/// hypervisor in a virtual machine (about 40 us per call measured on a 2-core EPYC VM, a
/// per-call cost `mttkrp_profiled` showed as `other`).
pub(crate) fn cached_default_decode() -> DecodeKind {
    static DECODE: std::sync::OnceLock<DecodeKind> = std::sync::OnceLock::new();
    *DECODE.get_or_init(default_decode)
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
    let mut kernel = opts.kernel.resolve(rank)?;
    let padded = padded_rank(rank, LINE_DOUBLES).filter(|_| match opts.pad {
        Some(pad) => pad,
        None => {
            let chosen = matches!(opts.kernel, KernelChoice::Auto | KernelChoice::Isa(_));
            let copied_rows: u64 = t.dims().iter().sum();
            chosen
                && kernel.isa != Isa::Scalar
                && pays_to_pad(sync, t.nnz() as u64, copied_rows, PAD_NONZEROS_PER_ROW)
        }
    });
    if let Some(width) = padded {
        kernel = opts.kernel.resolve(width)?;
    }
    let decode = match opts.decode {
        Some(d) => d,
        None => cached_default_decode(),
    };
    let decode_kind = t.decoder(decode).kind(); // Pext falls back to Runs without BMI2
    Ok(MttkrpRun {
        sync,
        kernel,
        decode: decode_kind.name(),
        decode_kind,
        padded_rank: padded,
        name: match padded {
            Some(_) => format!("{sync}_{kernel}_padded"),
            None => format!("{sync}_{kernel}"),
        },
    })
}

/// The generic driver behind [`mttkrp`].
pub fn mttkrp_alto<I: KernelIndex>(
    t: &AltoTensor<I>,
    factors: &[Matrix],
    mode: usize,
    out: &mut Matrix,
    opts: &MttkrpOptions,
    ws: &mut Workspace,
    pool: &rayon::ThreadPool,
) -> Result<MttkrpRun> {
    mttkrp_alto_profiled(t, factors, mode, out, opts, ws, pool, None)
}

/// [`mttkrp`] with `values` in place of the tensor's values (one per nonzero, in the tensor's
/// order): the same indices, strategies and kernels on a reweighted tensor. CP-APR's Phi is
/// this product with the weights `v / model(x)` ([`crate::cpd::apr::phi`]).
#[allow(clippy::too_many_arguments)]
pub fn mttkrp_values(
    t: &AnyAlto,
    values: &[f64],
    factors: &[Matrix],
    mode: usize,
    out: &mut Matrix,
    opts: &MttkrpOptions,
    ws: &mut Workspace,
    pool: &rayon::ThreadPool,
) -> Result<MttkrpRun> {
    with_alto!(t, x => drive(x, values, factors, mode, out, opts, ws, pool, &NoClock))
}

/// The generic driver behind [`mttkrp_profiled`].
#[allow(clippy::too_many_arguments)]
pub fn mttkrp_alto_profiled<I: KernelIndex>(
    t: &AltoTensor<I>,
    factors: &[Matrix],
    mode: usize,
    out: &mut Matrix,
    opts: &MttkrpOptions,
    ws: &mut Workspace,
    pool: &rayon::ThreadPool,
    times: Option<&mut PhaseTimes>,
) -> Result<MttkrpRun> {
    let Some(times) = times else {
        return drive(t, t.values(), factors, mode, out, opts, ws, pool, &NoClock);
    };
    let start = Instant::now();
    let rec = Recorder::new(pool.current_num_threads());
    let run = drive(t, t.values(), factors, mode, out, opts, ws, pool, &rec)?;
    *times = PhaseTimes {
        total: start.elapsed().as_secs_f64(),
        ..rec.totals()
    };
    Ok(run)
}

/// The driver over the values `vals` (the tensor's, or weights in their place), reporting each
/// parallel region's work to `clock`.
#[allow(clippy::too_many_arguments)]
fn drive<I: KernelIndex, C: Clock>(
    t: &AltoTensor<I>,
    vals: &[f64],
    factors: &[Matrix],
    mode: usize,
    out: &mut Matrix,
    opts: &MttkrpOptions,
    ws: &mut Workspace,
    pool: &rayon::ThreadPool,
    clock: &C,
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
    if vals.len() != t.nnz() {
        return Err(AltoError::InvalidArgument(format!(
            "{} values for a tensor with {} nonzeros",
            vals.len(),
            t.nnz()
        )));
    }
    let run = plan(t, mode, rank, opts)?;
    let Some(width) = run.padded_rank else {
        let slices: Vec<&[f64]> = factors.iter().map(|u| u.as_slice()).collect();
        drive_rows(
            t, vals, &run, &slices, mode, rank, out, opts, ws, pool, clock,
        )?;
        return Ok(run);
    };
    // Padded rows: the kernels run on zero-padded copies (see `super::padding`). The copies
    // are outside the profiled regions (`PhaseTimes::other`).
    let mut copies = std::mem::take(&mut ws.padded_factors);
    copies.resize_with(factors.len(), || None);
    let mut padded_out = ws.padded_out.take();
    pool.install(|| {
        for (m, u) in factors.iter().enumerate().filter(|&(m, _)| m != mode) {
            copy_columns(u, reshape(&mut copies[m], u.rows(), width));
        }
    });
    let pout = reshape(&mut padded_out, out.rows(), width);
    let done = {
        // The target's factor is never read by the kernels.
        let slices: Vec<&[f64]> = copies
            .iter()
            .enumerate()
            .map(|(m, c)| match c {
                Some(c) if m != mode => c.as_slice(),
                _ => &[],
            })
            .collect();
        drive_rows(
            t, vals, &run, &slices, mode, width, pout, opts, ws, pool, clock,
        )
    };
    if done.is_ok() {
        pool.install(|| copy_columns(pout, out));
    }
    ws.padded_factors = copies;
    ws.padded_out = padded_out;
    done?;
    Ok(run)
}

/// The driver's work at row width `rank` (the caller's or the padded one), on factor rows
/// `factors` (the target's is not read) and values `vals` into `out`.
#[allow(clippy::too_many_arguments)]
fn drive_rows<I: KernelIndex, C: Clock>(
    t: &AltoTensor<I>,
    vals: &[f64],
    run: &MttkrpRun,
    factors: &[&[f64]],
    mode: usize,
    rank: usize,
    out: &mut Matrix,
    opts: &MttkrpOptions,
    ws: &mut Workspace,
    pool: &rayon::ThreadPool,
    clock: &C,
) -> Result<()> {
    let decoder = t.decoder(run.decode_kind);
    let boundary_mask = match (run.sync, t.flag_bit(mode)) {
        (ConflictResolution::Flagged, Some(bit)) => I::from_u128(1u128 << bit),
        _ => I::ZERO,
    };
    let prefetch = opts.prefetch.unwrap_or(DEFAULT_PREFETCH);
    let runner = SegmentRunner {
        t,
        vals,
        kernel: run.kernel,
        decoder: &decoder,
        factors,
        mode,
        rank,
        boundary_mask,
        prefetch,
    };
    let lazy_chunk = opts.lazy_zero.unwrap_or(LAZY_ZERO_CHUNK);
    let mut body = || -> Result<()> {
        match run.sync {
            ConflictResolution::Pull => pull(
                t,
                mode,
                rank,
                out,
                ws,
                &|p, sink| runner.run(t.partition_range(p), sink),
                clock,
            ),
            sync => shared_output(&runner, out, sync, lazy_chunk, clock),
        }
    };
    // Entering and leaving the pool (waking its workers, handing the result back) is fork/join
    // overhead too.
    let entered = clock.now();
    let (done, left) = pool.install(|| {
        clock.overhead(entered);
        let r = body();
        (r, clock.now())
    });
    clock.overhead(left);
    done
}

/// What every segment task of one call shares: the kernel and its inputs.
struct SegmentRunner<'a, I: KernelIndex> {
    t: &'a AltoTensor<I>,
    /// One value per nonzero of `t` (its own, or weights).
    vals: &'a [f64],
    kernel: KernelId,
    decoder: &'a AnyDecoder<I>,
    factors: &'a [&'a [f64]],
    mode: usize,
    rank: usize,
    boundary_mask: I,
    prefetch: usize,
}

impl<I: KernelIndex> SegmentRunner<'_, I> {
    /// The kernel over the nonzeros `range` (a segment or a chunk of one), into `sink`.
    fn run<S: SegmentSink>(
        &self,
        range: Range<usize>,
        sink: &mut S,
    ) -> std::result::Result<(), KernelError> {
        let input = SegmentInput {
            idx: &self.t.indices()[range.clone()],
            vals: &self.vals[range],
            factors: self.factors,
            target: self.mode,
            rank: self.rank,
            boundary_mask: self.boundary_mask,
            prefetch: self.prefetch,
        };
        run_segment(self.kernel, self.decoder, &input, sink)
    }
}

/// The atomic strategies (`sync` is `Atomic` or `Flagged`): every segment adds into the shared
/// output through its own sink. The rows a segment alone touches are zeroed by that segment,
/// chunk by chunk just ahead of its kernel ([`super::zeroing`]), when `lazy_chunk` is not 0;
/// every other row is zeroed before the segments start.
fn shared_output<I: KernelIndex, C: Clock>(
    runner: &SegmentRunner<'_, I>,
    out: &mut Matrix,
    sync: ConflictResolution,
    lazy_chunk: usize,
    clock: &C,
) -> Result<()> {
    let (t, mode, rank) = (runner.t, runner.mode, runner.rank);
    let parts = t.num_partitions();
    let private: Vec<Option<(u64, u64)>> = if lazy_chunk == 0 {
        vec![None; parts]
    } else {
        let intervals: Vec<Option<(u64, u64)>> = (0..parts).map(|p| t.interval(p, mode)).collect();
        private_rows(&intervals)
    };
    let shared = shared_row_ranges(&private, out.rows() as u64);
    if !shared.is_empty() {
        // Carve the shared rows out of the output and zero them in parallel.
        let mut blocks: Vec<&mut [f64]> = Vec::new();
        let (mut rest, mut consumed) = (out.as_mut_slice(), 0u64);
        for &(a, b) in &shared {
            let (_, r) = std::mem::take(&mut rest).split_at_mut((a - consumed) as usize * rank);
            let (rows, r) = r.split_at_mut((b - a + 1) as usize * rank);
            blocks.extend(rows.chunks_mut(1 << 14));
            (rest, consumed) = (r, b + 1);
        }
        let region = clock.now();
        blocks.into_par_iter().for_each(|c| {
            let t0 = clock.now();
            c.fill(0.0);
            clock.busy(Phase::ZeroOutput, t0);
        });
        clock.end_region(region);
    }
    let cells = as_atomic(out.as_mut_slice());
    let region = clock.now();
    let done = (0..parts)
        .into_par_iter()
        .with_max_len(1)
        .try_for_each(|p| {
            let lazy = private[p].map(LazyZero::new);
            match sync {
                ConflictResolution::Flagged => {
                    // SAFETY: this segment gets its own sink, and the flags are exact for these
                    // segments: an `AltoTensor` is made only by `build` / `repartition`, which set
                    // them from the current bounds, or by `from_stored`, which recomputes and
                    // compares them (a `.alto` file cannot smuggle in a cleared flag).
                    let mut sink = unsafe { FlaggedRows::new(cells, rank) };
                    run_zeroing_ahead(runner, p, lazy, lazy_chunk, cells, &mut sink, clock)
                }
                _ => {
                    let mut sink = AtomicRows::new(cells, rank);
                    run_zeroing_ahead(runner, p, lazy, lazy_chunk, cells, &mut sink, clock)
                }
            }
        });
    clock.end_region(region);
    done?;
    Ok(())
}

/// Segment `p` into `sink`; with `lazy` (the segment's private rows), chunk by chunk, each
/// chunk's not yet zeroed private rows zeroed just before it runs, the rest after the last.
fn run_zeroing_ahead<I: KernelIndex, S: SegmentSink, C: Clock>(
    runner: &SegmentRunner<'_, I>,
    p: usize,
    lazy: Option<LazyZero>,
    lazy_chunk: usize,
    cells: &[AtomicU64],
    sink: &mut S,
    clock: &C,
) -> Result<()> {
    let range = runner.t.partition_range(p);
    let Some(mut lazy) = lazy else {
        let t0 = clock.now();
        let r = runner.run(range, sink);
        clock.busy(Phase::Kernel, t0);
        return Ok(r?);
    };
    let rank = runner.rank;
    let zero_rows = |(a, b): (u64, u64)| {
        let start = a as usize * rank;
        let len = (b - a + 1) as usize * rank;
        assert!(
            start + len <= cells.len(),
            "private rows lie inside the output"
        );
        // SAFETY: rows `a..=b` are private to segment `p`, which only this task runs (no other
        // segment's interval touches them, so no other thread reads or writes these cells
        // while the segments run), and they lie inside `cells` (checked above).
        unsafe { std::ptr::write_bytes(cells.as_ptr().add(start) as *mut f64, 0, len) };
    };
    let mask = runner.t.masks()[runner.mode];
    for start in range.clone().step_by(lazy_chunk) {
        // Finding the chunk's largest row is part of lazy zeroing's cost: timed with it (it
        // reads the chunk's indices first, so it also takes their cache misses).
        let t0 = clock.now();
        let chunk = start..(start + lazy_chunk).min(range.end);
        let chunk_max = max_coord(
            &runner.t.indices()[chunk.clone()],
            mask,
            runner.decoder,
            runner.mode,
        );
        if let Some(rows) = lazy.before_chunk(chunk_max) {
            zero_rows(rows);
        }
        clock.busy(Phase::ZeroOutput, t0);
        let t0 = clock.now();
        let r = runner.run(chunk, sink);
        clock.busy(Phase::Kernel, t0);
        r?;
    }
    if let Some(rows) = lazy.rest() {
        let t0 = clock.now();
        zero_rows(rows);
        clock.busy(Phase::ZeroOutput, t0);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::BuildOptions;
    use crate::mttkrp::SyncChoice;

    /// Profiled calls compute what plain calls do, for every strategy and thread count, and
    /// their phases are non-negative and fit in the call's measured wall time.
    #[test]
    fn profiled_calls_match_and_their_phases_fit_the_wall_time() {
        let coo = crate::gen::hierarchical(&[300, 200, 50], 20_000, 1.0, 1.0, 3).unwrap();
        let rank = 9;
        let factors: Vec<Matrix> = coo
            .dims()
            .iter()
            .enumerate()
            .map(|(m, &d)| Matrix::random(d as usize, rank, 7 + m as u64))
            .collect();
        for threads in [1, 2, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            // Every mode below the reuse threshold: every mode gets a flag bit.
            let opts = BuildOptions {
                partitions: threads,
                min_fiber_reuse: u64::MAX,
                ..Default::default()
            };
            let (t, _) = pool.install(|| AnyAlto::build(&coo, &opts)).unwrap();
            let mut ws = Workspace::new(&t, rank);
            // Lazy zeroing off, in tiny chunks and at the default, for every strategy (the pull
            // strategy ignores it).
            let cases = [
                ConflictResolution::Pull,
                ConflictResolution::Atomic,
                ConflictResolution::Flagged,
            ]
            .into_iter()
            .flat_map(|sync| [None, Some(0), Some(5)].map(move |lazy| (sync, lazy)));
            for (sync, lazy_zero) in cases {
                let opts = MttkrpOptions {
                    sync: SyncChoice::Force(sync),
                    lazy_zero,
                    ..Default::default()
                };
                for mode in 0..t.order() {
                    let rows = t.dims()[mode] as usize;
                    let mut plain = Matrix::zeros(rows, rank);
                    let want =
                        mttkrp(&t, &factors, mode, &mut plain, &opts, &mut ws, &pool).unwrap();
                    let mut got = Matrix::zeros(rows, rank);
                    // Garbage in the output must be zeroed by the profiled call too.
                    got.as_mut_slice().fill(f64::NAN);
                    let mut times = PhaseTimes::default();
                    let start = Instant::now();
                    let run = mttkrp_profiled(
                        &t,
                        &factors,
                        mode,
                        &mut got,
                        &opts,
                        &mut ws,
                        &pool,
                        Some(&mut times),
                    )
                    .unwrap();
                    let wall = start.elapsed().as_secs_f64();
                    assert_eq!(run, want);
                    let scale = plain.as_slice().iter().fold(1.0f64, |a, x| a.max(x.abs()));
                    let diff = got.max_abs_diff(&plain);
                    assert!(diff <= 1e-12 * scale, "{sync} mode {mode}: {diff}");
                    let ctx = format!(
                        "{sync}, lazy {lazy_zero:?}, mode {mode}, {threads} threads: {times:?}"
                    );
                    assert!(times.values().iter().all(|&v| v >= 0.0), "{ctx}");
                    assert!(times.total <= wall, "{ctx}, wall {wall}");
                    // Microseconds of rounding in the per-worker sums at most.
                    assert!(times.phases_sum() <= wall + 1e-4, "{ctx}, wall {wall}");
                    assert!(times.kernel > 0.0, "{ctx}");
                    if run.sync != ConflictResolution::Pull {
                        assert_eq!((times.zero_staging, times.pull), (0.0, 0.0), "{ctx}");
                    }
                    // `None` is the plain call.
                    let mut again = Matrix::zeros(rows, rank);
                    mttkrp_profiled(&t, &factors, mode, &mut again, &opts, &mut ws, &pool, None)
                        .unwrap();
                    assert!(again.max_abs_diff(&plain) <= 1e-12 * scale);
                }
            }
        }
    }
}
