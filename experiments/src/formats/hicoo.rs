//! The HiCOO baseline (Li, Sun and Vuduc, SC'18; ParTI): nonzeros grouped into blocks of
//! `2^sb` per mode (the paper uses `sb = 7`), each block storing its block coordinates once
//! (32-bit) and its nonzeros' offsets inside the block (8-bit per mode). Blocks are grouped
//! into superblocks of `2^sk` per mode (ParTI's "kernels", `sk` = 10 or 14 in the paper), the
//! unit of parallel work. Nonzeros are ordered by superblock (lexicographic), then Z-Morton
//! inside the superblock, which keeps each block contiguous.
//!
//! Parallel MTTKRP for mode `n` ([`HicooSync`]):
//! - `Scheduled`: superblocks with the same mode-`n` superblock coordinate ("superblock row")
//!   write the same `2^sk` output rows, so each row's superblocks run on one thread and
//!   different rows in parallel: no conflicts, no atomics (ParTI's scheduled kernel, without
//!   its lock-step iterations). Few or unbalanced rows limit parallelism.
//! - `Privatized`: superblocks handed out dynamically, each thread adding into its own copy of
//!   the output, summed afterwards (ParTI's "reduce" kernel).
//!
//! [`choose_hicoo_sync`] picks between them per mode, as ParTI does.

use super::coo::{PlainSink, Sink};
use super::rows::{self, with_rank};
use super::sort::{decoder, sorted_pairs, with_key, KeySpec};
use super::{check_memory, privatized_bytes, BaselineIsa, MttkrpCall, MttkrpFormat};
use alto::coo::MAX_ORDER;
use alto::format::alto::available_memory;
use alto::{AltoError, CooTensor, Matrix, Result};
use alto_kernels::baselines::{BaselineKernel, Vectorize};
use alto_kernels::HwBits;
use rayon::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// The parallel schedule of one MTTKRP.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HicooSync {
    /// Superblock rows of the target mode in parallel, conflict free.
    Scheduled,
    /// Superblocks in parallel into thread-private output copies.
    Privatized,
}

impl HicooSync {
    pub fn name(self) -> &'static str {
        match self {
            HicooSync::Scheduled => "scheduled",
            HicooSync::Privatized => "privatized",
        }
    }
}

/// `Auto` ([`choose_hicoo_sync`]) or a forced schedule.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum HicooSyncChoice {
    #[default]
    Auto,
    Force(HicooSync),
}

/// The heuristic: privatize when the target mode has fewer non-empty superblock rows than
/// `threads` (ParTI's rule) or when its heaviest row holds more than `imbalance` times a
/// thread's fair share of the nonzeros, provided the private copies fit in `memory_budget`
/// bytes; otherwise the conflict-free row schedule. One thread always runs `Scheduled`.
pub fn choose_hicoo_sync(
    nonempty_rows: usize,
    heaviest_row_nnz: u64,
    nnz: u64,
    threads: usize,
    imbalance: f64,
    private_bytes: u64,
    memory_budget: u64,
) -> HicooSync {
    if threads <= 1 || private_bytes > memory_budget {
        return HicooSync::Scheduled;
    }
    let fair = nnz as f64 / threads as f64;
    if nonempty_rows < threads || heaviest_row_nnz as f64 > imbalance * fair {
        HicooSync::Privatized
    } else {
        HicooSync::Scheduled
    }
}

/// The imbalance factor [`HicooFormat::run`](MttkrpFormat::run) passes to [`choose_hicoo_sync`].
pub const HICOO_IMBALANCE: f64 = 2.0;

/// A HiCOO tensor.
#[derive(Clone, Debug)]
pub struct HicooFormat {
    dims: Vec<u64>,
    block_bits: u32,
    superblock_bits: u32,
    /// Nonzeros of block `b` are `bptr[b]..bptr[b + 1]`.
    bptr: Vec<u64>,
    /// Block coordinates (`i >> block_bits`), per mode.
    binds: Vec<Vec<u32>>,
    /// Offsets inside the block (`i & (2^block_bits - 1)`), per mode.
    einds: Vec<Vec<u8>>,
    vals: Vec<f64>,
    /// Blocks of superblock `k` are `kptr[k]..kptr[k + 1]`.
    kptr: Vec<u64>,
    /// Per mode: superblock row `r` (`i >> superblock_bits`) holds superblocks
    /// `sched_ids[m][sched_ptr[m][r]..sched_ptr[m][r + 1]]`.
    sched_ptr: Vec<Vec<u64>>,
    sched_ids: Vec<Vec<u32>>,
    /// Per mode: nonzeros of the heaviest superblock row, and the number of non-empty rows.
    heaviest_row: Vec<u64>,
    nonempty_rows: Vec<usize>,
}

impl MttkrpFormat for HicooFormat {
    /// `(block_bits, superblock_bits)`: blocks of `2^block_bits` and superblocks of
    /// `2^superblock_bits` per mode (`block_bits <= 8`: element offsets are bytes;
    /// `block_bits <= superblock_bits`).
    type Params = (u32, u32);

    fn build(coo: &CooTensor, &(block_bits, superblock_bits): &(u32, u32)) -> Result<(Self, f64)> {
        let t0 = Instant::now();
        if block_bits == 0 || block_bits > 8 || superblock_bits < block_bits || superblock_bits > 31
        {
            return Err(AltoError::InvalidArgument(format!(
                "HiCOO needs 1 <= block bits ({block_bits}) <= 8 and block bits <= superblock \
                 bits ({superblock_bits}) <= 31"
            )));
        }
        if let Some((m, &d)) = coo
            .dims()
            .iter()
            .enumerate()
            .find(|(_, &d)| (d - 1) >> block_bits > u32::MAX as u64)
        {
            return Err(AltoError::InvalidArgument(format!(
                "HiCOO: mode {m} (dim {d}) has block coordinates beyond 32 bits"
            )));
        }
        let spec = KeySpec::hicoo(coo.dims(), superblock_bits)?;
        let mut f =
            with_key!(spec.width(), K => build_with::<K>(coo, &spec, block_bits, superblock_bits));
        f.build_schedule();
        Ok((f, t0.elapsed().as_secs_f64()))
    }

    fn dims(&self) -> &[u64] {
        &self.dims
    }

    /// Every array: block pointers and coordinates, element offsets, values, superblock
    /// pointers and the per-mode schedules.
    fn storage_bytes(&self) -> u64 {
        let b = |n: usize, w: usize| (n * w) as u64;
        b(self.bptr.len(), 8)
            + self.binds.iter().map(|v| b(v.len(), 4)).sum::<u64>()
            + self.einds.iter().map(|v| b(v.len(), 1)).sum::<u64>()
            + b(self.vals.len(), 8)
            + b(self.kptr.len(), 8)
            + self.sched_ptr.iter().map(|v| b(v.len(), 8)).sum::<u64>()
            + self.sched_ids.iter().map(|v| b(v.len(), 4)).sum::<u64>()
            + b(self.heaviest_row.len() + self.nonempty_rows.len(), 8)
    }

    /// Runs the schedule `opts.hicoo_sync` picks and returns its name.
    fn run(
        &self,
        call: &MttkrpCall<'_>,
        out: &mut Matrix,
        pool: &rayon::ThreadPool,
    ) -> Result<&'static str> {
        let MttkrpCall {
            factors,
            mode,
            rank,
            opts,
        } = *call;
        let threads = pool.current_num_threads();
        let sync = match opts.hicoo_sync {
            HicooSyncChoice::Auto => self.auto_sync(mode, threads, rank),
            HicooSyncChoice::Force(s) => s,
        };
        if sync == HicooSync::Privatized {
            check_memory(privatized_bytes(threads, self.dims[mode], rank))?;
        }
        let fac: Vec<&[f64]> = factors.iter().map(|u| u.as_slice()).collect();
        let job = Job {
            f: self,
            factors: &fac,
            mode,
            rank,
            isa: opts.isa,
        };
        pool.install(|| match sync {
            HicooSync::Scheduled => {
                let rows_per = (1usize << self.superblock_bits) * rank;
                let ptr = &self.sched_ptr[mode];
                let ids = &self.sched_ids[mode];
                out.as_mut_slice()
                    .par_chunks_mut(rows_per)
                    .enumerate()
                    .for_each(|(r, chunk)| {
                        chunk.fill(0.0);
                        let first_row = (r as u64) << self.superblock_bits;
                        for &k in &ids[ptr[r] as usize..ptr[r + 1] as usize] {
                            job.superblock(k as usize, first_row, chunk);
                        }
                    });
            }
            HicooSync::Privatized => {
                let len = out.as_slice().len();
                let next = AtomicUsize::new(0);
                let nk = self.superblocks();
                let mut bufs: Vec<Vec<f64>> = (1..threads).map(|_| Vec::new()).collect();
                {
                    let slots: Vec<Mutex<&mut [f64]>> = std::iter::once(out.as_mut_slice())
                        .chain(bufs.iter_mut().map(|b| {
                            *b = vec![0.0; len];
                            b.as_mut_slice()
                        }))
                        .map(Mutex::new)
                        .collect();
                    slots[0].lock().expect("not poisoned").fill(0.0);
                    rayon::broadcast(|ctx| {
                        let mut buf = slots[ctx.index()].lock().expect("not poisoned");
                        loop {
                            let k = next.fetch_add(1, Ordering::Relaxed);
                            if k >= nk {
                                break;
                            }
                            job.superblock(k, 0, &mut buf);
                        }
                    });
                }
                rows::reduce_private(out.as_mut_slice(), &bufs);
            }
        });
        Ok(sync.name())
    }
}

impl HicooFormat {
    pub fn order(&self) -> usize {
        self.dims.len()
    }
    pub fn nnz(&self) -> usize {
        self.vals.len()
    }
    pub fn blocks(&self) -> usize {
        self.bptr.len() - 1
    }
    pub fn superblocks(&self) -> usize {
        self.kptr.len() - 1
    }
    pub fn block_bits(&self) -> u32 {
        self.block_bits
    }
    pub fn superblock_bits(&self) -> u32 {
        self.superblock_bits
    }

    /// The schedule [`choose_hicoo_sync`] picks for `mode` at `threads` and `rank`.
    pub fn auto_sync(&self, mode: usize, threads: usize, rank: usize) -> HicooSync {
        let budget = available_memory().map_or(u64::MAX, |a| a / 4);
        choose_hicoo_sync(
            self.nonempty_rows[mode],
            self.heaviest_row[mode],
            self.nnz() as u64,
            threads,
            HICOO_IMBALANCE,
            privatized_bytes(threads, self.dims[mode], rank),
            budget,
        )
    }

    /// Groups superblocks by their row in each mode (counting sort).
    fn build_schedule(&mut self) {
        let order = self.order();
        let shift = self.superblock_bits - self.block_bits;
        let nk = self.superblocks();
        self.sched_ptr = Vec::with_capacity(order);
        self.sched_ids = Vec::with_capacity(order);
        self.heaviest_row = Vec::with_capacity(order);
        self.nonempty_rows = Vec::with_capacity(order);
        for m in 0..order {
            let rows = ((self.dims[m] - 1) >> self.superblock_bits) as usize + 1;
            let row_of = |k: usize| (self.binds[m][self.kptr[k] as usize] >> shift) as usize;
            let mut counts = vec![0u64; rows + 1];
            let mut row_nnz = vec![0u64; rows];
            for k in 0..nk {
                let r = row_of(k);
                counts[r + 1] += 1;
                let (b0, b1) = (self.kptr[k] as usize, self.kptr[k + 1] as usize);
                row_nnz[r] += self.bptr[b1] - self.bptr[b0];
            }
            for r in 0..rows {
                counts[r + 1] += counts[r];
            }
            let mut fill = counts.clone();
            let mut ids = vec![0u32; nk];
            for k in 0..nk {
                let r = row_of(k);
                ids[fill[r] as usize] = k as u32;
                fill[r] += 1;
            }
            self.heaviest_row
                .push(row_nnz.iter().copied().max().unwrap_or(0));
            self.nonempty_rows
                .push(row_nnz.iter().filter(|&&c| c > 0).count());
            self.sched_ptr.push(counts);
            self.sched_ids.push(ids);
        }
    }
}

fn build_with<K: HwBits>(
    coo: &CooTensor,
    spec: &KeySpec,
    block_bits: u32,
    superblock_bits: u32,
) -> HicooFormat {
    let order = coo.order();
    let masks = spec.masks_as::<K>();
    let pairs = sorted_pairs(coo, &masks);
    let dec = decoder(&masks);
    let nnz = pairs.len();
    // Decode every nonzero's coordinates in parallel, mode by mode.
    let coords: Vec<Vec<u64>> = (0..order)
        .map(|m| pairs.par_iter().map(|&(k, _)| dec.coord(k, m)).collect())
        .collect();
    let emask = (1u64 << block_bits) - 1;
    let einds: Vec<Vec<u8>> = coords
        .iter()
        .map(|c| c.par_iter().map(|&i| (i & emask) as u8).collect())
        .collect();
    let vals: Vec<f64> = pairs.par_iter().map(|p| p.1).collect();
    drop(pairs);
    // Block and superblock starts, found in parallel (collect keeps the order).
    let differs = |k: usize, bits: u32| {
        k == 0 || (0..order).any(|m| coords[m][k] >> bits != coords[m][k - 1] >> bits)
    };
    let block_starts: Vec<usize> = (0..nnz)
        .into_par_iter()
        .filter(|&k| differs(k, block_bits))
        .collect();
    let mut kptr: Vec<u64> = (0..block_starts.len())
        .into_par_iter()
        .filter(|&b| differs(block_starts[b], superblock_bits))
        .map(|b| b as u64)
        .collect();
    kptr.push(block_starts.len() as u64);
    let binds: Vec<Vec<u32>> = coords
        .iter()
        .map(|c| {
            block_starts
                .par_iter()
                .map(|&k| (c[k] >> block_bits) as u32)
                .collect()
        })
        .collect();
    let mut bptr: Vec<u64> = block_starts.into_iter().map(|k| k as u64).collect();
    bptr.push(nnz as u64);
    HicooFormat {
        dims: coo.dims().to_vec(),
        block_bits,
        superblock_bits,
        bptr,
        binds,
        einds,
        vals,
        kptr,
        sched_ptr: Vec::new(),
        sched_ids: Vec::new(),
        heaviest_row: Vec::new(),
        nonempty_rows: Vec::new(),
    }
}

/// One MTTKRP's inputs.
struct Job<'a> {
    f: &'a HicooFormat,
    factors: &'a [&'a [f64]],
    mode: usize,
    rank: usize,
    isa: BaselineIsa,
}

impl Job<'_> {
    /// Adds superblock `k`'s contributions to `out`, which holds output rows `first_row..`.
    fn superblock(&self, k: usize, first_row: u64, out: &mut [f64]) {
        with_rank!(self.rank, R, C => self.isa.dispatch(Superblock::<R, C> {
            job: self,
            k,
            first_row,
            out,
        }))
    }
}

/// [`superblock`] as a kernel body for [`BaselineIsa::dispatch`].
struct Superblock<'a, 'j, const R: usize, const C: usize> {
    job: &'a Job<'j>,
    k: usize,
    first_row: u64,
    out: &'a mut [f64],
}

impl<const R: usize, const C: usize> BaselineKernel for Superblock<'_, '_, R, C> {
    type Output = ();
    #[inline(always)]
    fn run<I: Vectorize>(self, _isa: I) {
        superblock::<R, C>(self.job, self.k, self.first_row, self.out)
    }
}

/// ParTI's "matrix tiling" kernel: per block, the factor rows and the output are offset to the
/// block's corner once, and each nonzero adds its 8-bit offsets; the contribution row is built
/// `C` columns at a time in registers.
#[inline(always)]
fn superblock<const R: usize, const C: usize>(
    job: &Job<'_>,
    k: usize,
    first_row: u64,
    out: &mut [f64],
) {
    let f = job.f;
    let rank = rows::len::<R>(job.rank);
    let mode = job.mode;
    let order = f.order();
    let mut corners = [0usize; MAX_ORDER];
    let first = if mode == 0 { 1 } else { 0 };
    let mut sink = PlainSink { data: out };
    for b in f.kptr[k] as usize..f.kptr[k + 1] as usize {
        for (m, c) in corners[..order].iter_mut().enumerate() {
            *c = (f.binds[m][b] as usize) << f.block_bits;
        }
        let out_corner = corners[mode] - first_row as usize;
        for e in f.bptr[b] as usize..f.bptr[b + 1] as usize {
            let v = f.vals[e];
            let target = (out_corner + f.einds[mode][e] as usize) * rank;
            let mut c0 = 0;
            while c0 < rank {
                let w = C.min(rank - c0);
                let mut row = [0.0f64; C];
                let i = corners[first] + f.einds[first][e] as usize;
                let u = &job.factors[first][i * rank + c0..][..w];
                for (r, &x) in row[..w].iter_mut().zip(u) {
                    *r = v * x;
                }
                for (m, &corner) in corners[..order].iter().enumerate().skip(first + 1) {
                    if m == mode {
                        continue;
                    }
                    let i = corner + f.einds[m][e] as usize;
                    let u = &job.factors[m][i * rank + c0..][..w];
                    for (r, &x) in row[..w].iter_mut().zip(u) {
                        *r *= x;
                    }
                }
                sink.add(target + c0, &row[..w]);
                c0 += C;
            }
        }
    }
}
