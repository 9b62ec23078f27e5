//! The COO baseline: 64-bit coordinates (one array per mode) and values, in input order.
//! Parallel MTTKRP over contiguous nonzero chunks, resolving conflicts either with atomic adds on
//! the shared output or with one private output copy per thread summed afterwards (ParTI's two
//! OpenMP COO kernels; the paper reports the better).

use super::rows::{self, with_rank};
use super::{check_memory, privatized_bytes, BaselineIsa, MttkrpCall, MttkrpFormat};
use alto::{CooTensor, Matrix, Result};
use alto_kernels::as_atomic;
use alto_kernels::baselines::{BaselineKernel, Vectorize};
use alto_kernels::sink::atomic_add_f64;
use rayon::prelude::*;
use std::time::Instant;

/// How concurrent updates of one output row are resolved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CooSync {
    /// Atomic adds on the shared output (compare-and-swap on the f64 bits).
    #[default]
    Atomic,
    /// Each thread accumulates a static share of the nonzeros into its own copy of the output;
    /// the copies are then summed in parallel.
    Privatized,
}

impl CooSync {
    pub const ALL: [CooSync; 2] = [CooSync::Atomic, CooSync::Privatized];
    pub fn name(self) -> &'static str {
        match self {
            CooSync::Atomic => "atomic",
            CooSync::Privatized => "privatized",
        }
    }
}

/// A COO tensor as the baseline keeps it.
#[derive(Clone, Debug)]
pub struct CooFormat {
    coo: CooTensor,
}

/// Nonzeros per parallel task of the atomic kernel.
const CHUNK: usize = 4096;

impl CooFormat {
    pub fn nnz(&self) -> usize {
        self.coo.nnz()
    }
    pub fn tensor(&self) -> &CooTensor {
        &self.coo
    }
}

impl MttkrpFormat for CooFormat {
    type Params = ();

    /// Copies the coordinates and values (the construction time is that copy).
    fn build(coo: &CooTensor, _: &()) -> Result<(Self, f64)> {
        let t = Instant::now();
        let copy = CooTensor::new(
            coo.dims().to_vec(),
            (0..coo.order())
                .map(|m| coo.mode_indices(m).par_iter().copied().collect())
                .collect(),
            coo.values().par_iter().copied().collect(),
        )?;
        Ok((CooFormat { coo: copy }, t.elapsed().as_secs_f64()))
    }

    fn dims(&self) -> &[u64] {
        self.coo.dims()
    }

    /// `nnz * (N * 8 + 8)`: 64-bit indices and values (the paper's eq. 2).
    fn storage_bytes(&self) -> u64 {
        self.coo.nnz() as u64 * (self.coo.order() as u64 * 8 + 8)
    }

    /// Runs `opts.coo_sync` and returns its name (on one thread always `privatized`: the
    /// thread's only copy is the output itself).
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
        let isa = opts.isa;
        let threads = pool.current_num_threads();
        let sync = if threads == 1 {
            CooSync::Privatized // one thread: its "private copy" is the output itself
        } else {
            opts.coo_sync
        };
        if sync == CooSync::Privatized {
            check_memory(privatized_bytes(threads, self.dims()[mode], rank))?;
        }
        let inds: Vec<&[u64]> = (0..self.coo.order())
            .map(|m| self.coo.mode_indices(m))
            .collect();
        let fac: Vec<&[f64]> = factors.iter().map(|u| u.as_slice()).collect();
        let job = Job {
            inds: &inds,
            vals: self.coo.values(),
            factors: &fac,
            mode,
            rank,
        };
        let nnz = self.nnz();
        pool.install(|| match sync {
            CooSync::Atomic => {
                out.as_mut_slice().par_iter_mut().for_each(|x| *x = 0.0);
                let cells = as_atomic(out.as_mut_slice());
                (0..nnz.div_ceil(CHUNK)).into_par_iter().for_each(|c| {
                    let range = c * CHUNK..((c + 1) * CHUNK).min(nnz);
                    job.run(isa, range, &mut AtomicSink { cells });
                });
            }
            CooSync::Privatized => {
                let share = nnz.div_ceil(threads).max(1);
                let len = out.as_slice().len();
                let mut bufs: Vec<Vec<f64>> = (1..threads).map(|_| Vec::new()).collect();
                let (first, rest) = (out.as_mut_slice(), &mut bufs);
                rayon::scope(|s| {
                    for (t, buf) in rest.iter_mut().enumerate() {
                        let job = &job;
                        s.spawn(move |_| {
                            *buf = vec![0.0; len];
                            let range = ((t + 1) * share).min(nnz)..((t + 2) * share).min(nnz);
                            job.run(isa, range, &mut PlainSink { data: buf });
                        });
                    }
                    first.fill(0.0);
                    job.run(isa, 0..share.min(nnz), &mut PlainSink { data: first });
                });
                rows::reduce_private(out.as_mut_slice(), &bufs);
            }
        });
        Ok(sync.name())
    }
}

/// Where contribution rows go: `add(offset, contrib)` adds `contrib` to the output entries
/// `offset..offset + contrib.len()` (row-major, so `offset = row * rank + first column`).
pub(crate) trait Sink {
    fn add(&mut self, offset: usize, contrib: &[f64]);
}

/// Atomic adds on a shared output.
pub(crate) struct AtomicSink<'a> {
    pub cells: &'a [std::sync::atomic::AtomicU64],
}

impl Sink for AtomicSink<'_> {
    #[inline(always)]
    fn add(&mut self, offset: usize, contrib: &[f64]) {
        let dst = &self.cells[offset..offset + contrib.len()];
        for (cell, &x) in dst.iter().zip(contrib) {
            atomic_add_f64(cell, x);
        }
    }
}

/// Plain adds on an output (or a private copy of it) owned by the caller.
pub(crate) struct PlainSink<'a> {
    pub data: &'a mut [f64],
}

impl Sink for PlainSink<'_> {
    #[inline(always)]
    fn add(&mut self, offset: usize, contrib: &[f64]) {
        let dst = &mut self.data[offset..offset + contrib.len()];
        for (d, &x) in dst.iter_mut().zip(contrib) {
            *d += x;
        }
    }
}

/// One MTTKRP's read-only inputs.
struct Job<'a> {
    inds: &'a [&'a [u64]],
    vals: &'a [f64],
    factors: &'a [&'a [f64]],
    mode: usize,
    rank: usize,
}

impl Job<'_> {
    /// Adds each nonzero's contribution row in `range` to `sink`.
    fn run<S: Sink>(&self, isa: BaselineIsa, range: std::ops::Range<usize>, sink: &mut S) {
        with_rank!(self.rank, R, C => isa.dispatch(Chunk::<R, C, S> { job: self, range, sink }))
    }
}

/// [`chunk`] as a kernel body for [`BaselineIsa::dispatch`].
struct Chunk<'a, 'j, const R: usize, const C: usize, S> {
    job: &'a Job<'j>,
    range: std::ops::Range<usize>,
    sink: &'a mut S,
}

impl<const R: usize, const C: usize, S: Sink> BaselineKernel for Chunk<'_, '_, R, C, S> {
    type Output = ();
    #[inline(always)]
    fn run<I: Vectorize>(self, _isa: I) {
        chunk::<R, C, S>(self.job, self.range, self.sink)
    }
}

/// The kernel, `C` columns at a time in a register-resident row (one chunk when the rank is
/// specialized), as ALTO's kernel does.
#[inline(always)]
fn chunk<const R: usize, const C: usize, S: Sink>(
    job: &Job<'_>,
    range: std::ops::Range<usize>,
    sink: &mut S,
) {
    let rank = rows::len::<R>(job.rank);
    let first = if job.mode == 0 { 1 } else { 0 };
    for k in range {
        let v = job.vals[k];
        let target = job.inds[job.mode][k] as usize * rank;
        let mut c0 = 0;
        while c0 < rank {
            let w = C.min(rank - c0);
            let mut row = [0.0f64; C];
            let i = job.inds[first][k] as usize;
            let u = &job.factors[first][i * rank + c0..][..w];
            for (r, &x) in row[..w].iter_mut().zip(u) {
                *r = v * x;
            }
            for m in first + 1..job.inds.len() {
                if m == job.mode {
                    continue;
                }
                let i = job.inds[m][k] as usize;
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
