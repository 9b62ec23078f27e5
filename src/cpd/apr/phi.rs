//! Phi on an ALTO tensor: for target mode n, with `Pi(x, r) = prod_{m != n} A_m(i_m, r)`,
//! `Phi(i_n, :) = sum over nonzeros x of v / max(B(i_n, :) . Pi(x, :), eps) * Pi(x, :)`.
//! It is an MTTKRP whose value is divided by the model's value at the nonzero, so it runs on
//! the MTTKRP's segments with the same conflict resolution (pull-based staging for high fiber
//! reuse, atomics or flag-guided atomics otherwise: [`crate::mttkrp::resolve_sync`]).
//!
//! Three kernels ([`PhiKind`]), named `phi_{sync}_{kernel}`:
//! - `fused` (portable, one pass): per nonzero, decode, form `Pi(x, :)`, the model value, the
//!   weight, and add the weighted row into Phi;
//! - `cached` (portable, one pass): the same over a per-nonzero cache of `Pi` (`nnz x R`
//!   doubles), filled once per mode by [`PhiEngine::prepare`] and read by every inner
//!   iteration (Pi does not change while mode n is updated);
//! - an MTTKRP kernel name (`phi_pull_avx512_r16`, any tier: scalar, pulp, avx2, avx512; two
//!   passes): the weights `v / max(model, eps)` per nonzero (portable pass), then the ALTO
//!   MTTKRP kernel of that name on the weights in place of the values
//!   ([`crate::mttkrp::mttkrp_values`]): the explicit SIMD tiers at the price of forming Pi
//!   twice.
//!
//! [`super::loglik`] uses the same per-nonzero model pass.

use crate::dispatch::KernelChoice;
use crate::error::{AltoError, Result};
use crate::format::alto::{AltoTensor, AnyAlto};
use crate::matrix::Matrix;
use crate::mttkrp::driver::cached_default_decode;
use crate::mttkrp::pull::pull_rows;
use crate::mttkrp::{
    check_factors, mttkrp_values, resolve_sync, ConflictResolution, MttkrpOptions, SyncChoice,
    Workspace,
};
use crate::with_alto;
use alto_kernels::{
    as_atomic, AnyDecoder, AnyRows, AtomicRows, Decode, DecodeKind, FlaggedRows, HwBits, RowSink,
    SegmentSink,
};
use rayon::prelude::*;

/// Nonzeros per task of the per-nonzero passes (weights, Pi cache, log-likelihood).
pub(super) const CHUNK: usize = 1 << 14;

/// Which Phi kernel runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PhiKind {
    /// [`choose_phi_kind`] for the tensor and rank.
    #[default]
    Auto,
    /// One portable pass forming Pi per nonzero.
    Fused,
    /// One portable pass over a per-nonzero Pi cache filled once per mode.
    Cached,
    /// The weights pass, then this ALTO MTTKRP kernel on the weights.
    Mttkrp(KernelChoice),
}

impl PhiKind {
    /// Parses `auto` (the default, [`choose_phi_kind`]), `fused`, `cached`, or an MTTKRP kernel
    /// choice (`avx512`, `scalar_r16`, ...), each optionally prefixed as printed in reports:
    /// `phi_`, then a strategy (`pull_`, `atomic_`, `flagged_`; the strategy comes from the
    /// sync option, so the prefix is accepted and ignored, as for MTTKRP kernel names).
    pub fn parse(s: &str) -> Result<Self> {
        let bare = s.strip_prefix("phi_").unwrap_or(s);
        let bare = ["pull_", "atomic_", "flagged_"]
            .iter()
            .find_map(|p| bare.strip_prefix(p))
            .unwrap_or(bare);
        match bare {
            "auto" => Ok(PhiKind::Auto),
            "fused" => Ok(PhiKind::Fused),
            "cached" => Ok(PhiKind::Cached),
            other => KernelChoice::parse(other)
                .map(PhiKind::Mttkrp)
                .map_err(|e| {
                    AltoError::InvalidArgument(format!(
                        "unknown Phi kernel `{s}` (auto, fused, cached, or an MTTKRP kernel: {e})"
                    ))
                }),
        }
    }
}

/// Bytes of the factor matrices beyond which [`choose_phi_kind`] caches Pi: about where the
/// factor rows a nonzero reads stop hitting in cache. Measured on the benchmark stand-ins at
/// rank 16 (2M nonzeros, one thread): nell-2 (factors 0.2 MB) Phi per outer iteration 0.80 s
/// fused vs 1.05 s cached; darpa (factors 214 MB, one long mode) 3.39 s fused vs 2.31 s cached.
pub const CACHE_PI_ABOVE_BYTES: u64 = 32 << 20;
/// The largest Pi cache (`nnz x R` doubles) [`choose_phi_kind`] allocates.
pub const MAX_PI_CACHE_BYTES: u64 = 4 << 30;

/// The `auto` rule: [`PhiKind::Cached`] when the factors (`sum_n I_n x R` doubles) exceed
/// `cache_above` bytes and the Pi cache (`nnz x R` doubles) fits in `max_cache`, else
/// [`PhiKind::Fused`] (recomputing Pi from cache-resident factor rows is cheaper than reading
/// `8 R` bytes per nonzero).
pub fn choose_phi_kind(
    dims: &[u64],
    nnz: usize,
    rank: usize,
    cache_above: u64,
    max_cache: u64,
) -> PhiKind {
    let rows = dims.iter().fold(0u64, |s, &d| s.saturating_add(d));
    let factor_bytes = rows.saturating_mul(rank as u64 * 8);
    let cache_bytes = (nnz as u64).saturating_mul(rank as u64 * 8);
    if factor_bytes > cache_above && cache_bytes <= max_cache {
        PhiKind::Cached
    } else {
        PhiKind::Fused
    }
}

/// What Phi runs: the kernel, its conflict resolution and decoder.
#[derive(Clone, Copy, Debug, Default)]
pub struct PhiOptions {
    pub kind: PhiKind,
    pub sync: SyncChoice,
    /// `None`: the CPU rule.
    pub decode: Option<DecodeKind>,
    /// Fiber-reuse threshold of the heuristic; `None`: the tensor's.
    pub min_fiber_reuse: Option<u64>,
}

/// What one Phi call ran.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PhiRun {
    pub sync: ConflictResolution,
    /// `phi_{sync}_{kernel}`, e.g. `phi_pull_fused`, `phi_atomic_avx512_r16`.
    pub name: String,
}

/// Phi's state for one tensor and rank: the MTTKRP workspace, the weights, the Pi cache.
pub struct PhiEngine<'t> {
    t: &'t AnyAlto,
    rank: usize,
    opts: PhiOptions,
    ws: Workspace,
    /// Per-nonzero weights (the `Mttkrp` kind).
    weights: Vec<f64>,
    /// `nnz x rank` Pi of `pi_mode` (the `Cached` kind).
    pi: Vec<f64>,
    pi_mode: Option<usize>,
}

impl<'t> PhiEngine<'t> {
    /// Checks the kernel against the rank and this CPU; resolves [`PhiKind::Auto`].
    pub fn new(t: &'t AnyAlto, rank: usize, mut opts: PhiOptions) -> Result<Self> {
        if let PhiKind::Mttkrp(k) = opts.kind {
            k.resolve(rank)?;
        }
        if opts.kind == PhiKind::Auto {
            opts.kind = choose_phi_kind(
                t.dims(),
                t.nnz(),
                rank,
                CACHE_PI_ABOVE_BYTES,
                MAX_PI_CACHE_BYTES,
            );
        }
        Ok(PhiEngine {
            t,
            rank,
            opts,
            ws: Workspace::new(t, rank),
            weights: Vec::new(),
            pi: Vec::new(),
            pi_mode: None,
        })
    }

    /// The kernel that runs (`Auto` resolved).
    pub fn kind(&self) -> PhiKind {
        self.opts.kind
    }

    fn decode(&self) -> DecodeKind {
        self.opts.decode.unwrap_or_else(cached_default_decode)
    }

    /// Call before a series of [`PhiEngine::phi`] calls on `mode` whenever the other modes'
    /// factors changed: fills the Pi cache of the `Cached` kind (a no-op for the others).
    pub fn prepare(
        &mut self,
        factors: &[Matrix],
        mode: usize,
        pool: &rayon::ThreadPool,
    ) -> Result<()> {
        check_factors(self.t.dims(), factors, mode)?;
        if self.opts.kind != PhiKind::Cached {
            return Ok(());
        }
        self.pi_mode = None;
        let len = self.t.nnz() * self.rank;
        if self.pi.len() != len {
            self.pi = vec![0.0; len];
        }
        let (rank, decode) = (self.rank, self.decode());
        let pi = &mut self.pi;
        pool.install(|| with_alto!(self.t, x => fill_pi(x, decode, factors, mode, rank, pi)));
        self.pi_mode = Some(mode);
        Ok(())
    }

    /// Phi of `mode` for `b` (`I_n x R`, in place of `factors[mode]`, which is not read), into
    /// `out` (overwritten), on `pool`.
    #[allow(clippy::too_many_arguments)]
    pub fn phi(
        &mut self,
        factors: &[Matrix],
        b: &Matrix,
        mode: usize,
        eps: f64,
        out: &mut Matrix,
        pool: &rayon::ThreadPool,
    ) -> Result<PhiRun> {
        let t = self.t;
        let rank = check_factors(t.dims(), factors, mode)?;
        let rows = t.dims()[mode] as usize;
        if rank != self.rank {
            return Err(AltoError::InvalidArgument(format!(
                "factors of rank {rank} for a Phi of rank {}",
                self.rank
            )));
        }
        for (what, m) in [("B", b), ("the output", &*out)] {
            if m.rows() != rows || m.cols() != rank {
                return Err(AltoError::InvalidArgument(format!(
                    "{what} is {} x {}, expected {rows} x {rank}",
                    m.rows(),
                    m.cols()
                )));
            }
        }
        let threshold = self.opts.min_fiber_reuse.unwrap_or(t.min_fiber_reuse());
        let sync = resolve_sync(
            self.opts.sync,
            t.fiber_reuse(mode),
            threshold,
            t.flag_bit(mode).is_some(),
        );
        let decode = self.decode();
        let pass = Pass {
            factors,
            b: b.as_slice(),
            mode,
            rank,
            eps,
        };
        match self.opts.kind {
            PhiKind::Mttkrp(kernel) => {
                if self.weights.len() != t.nnz() {
                    self.weights = vec![0.0; t.nnz()];
                }
                let w = &mut self.weights;
                pool.install(|| with_alto!(t, x => fill_weights(x, decode, &pass, w)));
                let opts = MttkrpOptions {
                    sync: SyncChoice::Force(sync),
                    kernel,
                    decode: Some(decode),
                    min_fiber_reuse: Some(threshold),
                    ..Default::default()
                };
                let run = mttkrp_values(
                    t,
                    &self.weights,
                    factors,
                    mode,
                    out,
                    &opts,
                    &mut self.ws,
                    pool,
                )?;
                Ok(PhiRun {
                    sync: run.sync,
                    name: format!("phi_{}", run.name),
                })
            }
            kind => {
                let cached = kind == PhiKind::Cached;
                if cached && self.pi_mode != Some(mode) {
                    return Err(AltoError::InvalidArgument(format!(
                        "the Pi cache holds mode {:?}, not {mode}: call prepare first",
                        self.pi_mode
                    )));
                }
                let pi = cached.then_some(&self.pi[..]);
                let ws = &mut self.ws;
                pool.install(|| with_alto!(t, x => one_pass(x, decode, &pass, pi, sync, out, ws)))?;
                let kernel = if cached { "cached" } else { "fused" };
                Ok(PhiRun {
                    sync,
                    name: format!("phi_{sync}_{kernel}"),
                })
            }
        }
    }
}

/// The inputs every per-nonzero pass of one Phi call shares.
pub(super) struct Pass<'a> {
    pub(super) factors: &'a [Matrix],
    pub(super) b: &'a [f64],
    pub(super) mode: usize,
    pub(super) rank: usize,
    pub(super) eps: f64,
}

/// Runs `f` with the tensor's decoder of `kind` as a concrete [`Decode`] type.
macro_rules! with_decoder {
    ($t:expr, $kind:expr, $d:ident => $body:expr) => {
        match $t.decoder($kind) {
            AnyDecoder::Pext($d) => $body,
            AnyDecoder::Runs($d) => $body,
        }
    };
}
pub(super) use with_decoder;

/// `row = prod_{m != mode} A_m(i_m, :)` for index `x`.
#[inline(always)]
pub(super) fn pi_row<I: HwBits, D: Decode<I>>(
    x: I,
    dec: &D,
    factors: &[&[f64]],
    mode: usize,
    row: &mut [f64],
) {
    let rank = row.len();
    row.fill(1.0);
    for (m, a) in factors.iter().enumerate() {
        if m != mode {
            let j = dec.coord(x, m) as usize;
            for (x, y) in row.iter_mut().zip(&a[j * rank..(j + 1) * rank]) {
                *x *= y;
            }
        }
    }
}

/// `a . b` in [`DOT_LANES`] independent partial sums (a single running sum is a chain of
/// dependent adds, which measured as most of a Phi pass at rank 16), then the lanes in a
/// fixed tree.
#[inline(always)]
pub(super) fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut acc = [0.0; DOT_LANES];
    let (a8, b8) = (a.chunks_exact(DOT_LANES), b.chunks_exact(DOT_LANES));
    let tail: f64 = a8
        .remainder()
        .iter()
        .zip(b8.remainder())
        .fold(0.0, |s, (x, y)| s + x * y);
    for (x, y) in a8.zip(b8) {
        for k in 0..DOT_LANES {
            acc[k] += x[k] * y[k];
        }
    }
    let half = [
        acc[0] + acc[4],
        acc[1] + acc[5],
        acc[2] + acc[6],
        acc[3] + acc[7],
    ];
    (half[0] + half[2]) + (half[1] + half[3]) + tail
}

/// Independent partial sums of [`dot`] (one AVX-512 vector, two AVX2 vectors).
const DOT_LANES: usize = 8;

/// The Pi cache of `mode`: row k is `Pi` of nonzero k.
fn fill_pi<I: HwBits>(
    t: &AltoTensor<I>,
    decode: DecodeKind,
    factors: &[Matrix],
    mode: usize,
    rank: usize,
    pi: &mut [f64],
) {
    let f: Vec<&[f64]> = factors.iter().map(|u| u.as_slice()).collect();
    with_decoder!(t, decode, dec => {
        t.indices()
            .par_chunks(CHUNK)
            .zip(pi.par_chunks_mut(CHUNK * rank))
            .for_each(|(xs, rows)| {
                for (&x, row) in xs.iter().zip(rows.chunks_exact_mut(rank)) {
                    pi_row(x, &dec, &f, mode, row);
                }
            })
    })
}

/// Ranks with a specialization of the portable passes (`R` a constant: the rank loops unroll
/// and their slices carry no bounds checks; measured about 1.2x at rank 16 over the runtime
/// rank); others run with `R = 0`, the runtime rank.
macro_rules! by_rank {
    ($rank:expr, $f:ident::<$($g:ty),*>($($arg:expr),*)) => {
        match $rank {
            8 => $f::<$($g,)* 8>($($arg),*),
            16 => $f::<$($g,)* 16>($($arg),*),
            32 => $f::<$($g,)* 32>($($arg),*),
            64 => $f::<$($g,)* 64>($($arg),*),
            _ => $f::<$($g,)* 0>($($arg),*),
        }
    };
}

/// `w[k] = v_k / max(B(i_n, :) . Pi(x_k, :), eps)` for every nonzero.
fn fill_weights<I: HwBits>(t: &AltoTensor<I>, decode: DecodeKind, p: &Pass<'_>, w: &mut [f64]) {
    by_rank!(p.rank, fill_weights_r::<I>(t, decode, p, w))
}

/// [`fill_weights`] for rank `R` (0: the runtime rank).
fn fill_weights_r<I: HwBits, const R: usize>(
    t: &AltoTensor<I>,
    decode: DecodeKind,
    p: &Pass<'_>,
    w: &mut [f64],
) {
    let f: Vec<&[f64]> = p.factors.iter().map(|u| u.as_slice()).collect();
    let rank = if R == 0 { p.rank } else { R };
    let (mode, eps) = (p.mode, p.eps);
    with_decoder!(t, decode, dec => {
        t.indices()
            .par_chunks(CHUNK)
            .zip(t.values().par_chunks(CHUNK))
            .zip(w.par_chunks_mut(CHUNK))
            .for_each(|((xs, vs), ws)| {
                let mut buf = vec![0.0; rank];
                let row = &mut buf[..rank];
                for ((&x, &v), w) in xs.iter().zip(vs).zip(ws) {
                    pi_row(x, &dec, &f, mode, row);
                    let i = dec.coord(x, mode) as usize;
                    let model = dot(&p.b[i * rank..(i + 1) * rank], row);
                    *w = v / model.max(eps);
                }
            })
    })
}

/// The one-pass kernels over nonzeros `range` of `t` into `sink`: Pi from the factors
/// (`pi` is `None`) or from the cache, then the weighted row.
#[allow(clippy::too_many_arguments)]
fn segment<I: HwBits, D: Decode<I>>(
    t: &AltoTensor<I>,
    range: std::ops::Range<usize>,
    dec: &D,
    f: &[&[f64]],
    p: &Pass<'_>,
    pi: Option<&[f64]>,
    boundary_mask: I,
    sink: &mut AnyRows<'_>,
) {
    by_rank!(
        p.rank,
        segment_r::<I, D>(t, range, dec, f, p, pi, boundary_mask, sink)
    )
}

/// [`segment`] for rank `R` (0: the runtime rank).
#[allow(clippy::too_many_arguments)]
fn segment_r<I: HwBits, D: Decode<I>, const R: usize>(
    t: &AltoTensor<I>,
    range: std::ops::Range<usize>,
    dec: &D,
    f: &[&[f64]],
    p: &Pass<'_>,
    pi: Option<&[f64]>,
    boundary_mask: I,
    sink: &mut AnyRows<'_>,
) {
    let rank = if R == 0 { p.rank } else { R };
    let (mode, eps) = (p.mode, p.eps);
    let mut buf = vec![0.0; rank];
    let row = &mut buf[..rank];
    let xs = &t.indices()[range.clone()];
    let vs = &t.values()[range.clone()];
    for (k, (&x, &v)) in xs.iter().zip(vs).enumerate() {
        match pi {
            Some(pi) => {
                let at = (range.start + k) * rank;
                row.copy_from_slice(&pi[at..at + rank]);
            }
            None => pi_row(x, dec, f, mode, row),
        }
        let i = dec.coord(x, mode);
        let brow = &p.b[i as usize * rank..(i as usize + 1) * rank];
        let w = v / dot(brow, row).max(eps);
        for r in row.iter_mut() {
            *r *= w;
        }
        sink.add(i, 0, row, x.intersects(boundary_mask));
    }
}

/// The `fused` and `cached` kernels with conflict resolution `sync` (inside the pool).
fn one_pass<I: HwBits>(
    t: &AltoTensor<I>,
    decode: DecodeKind,
    p: &Pass<'_>,
    pi: Option<&[f64]>,
    sync: ConflictResolution,
    out: &mut Matrix,
    ws: &mut Workspace,
) -> Result<()> {
    let f: Vec<&[f64]> = p.factors.iter().map(|u| u.as_slice()).collect();
    let (mode, rank) = (p.mode, p.rank);
    with_decoder!(t, decode, dec => {
        match sync {
            // Every sink as an `AnyRows`: one copy of the kernel per index width, decoder and
            // rank, not three (its only per-variant step is the add, beside the division).
            ConflictResolution::Pull => pull_rows(t, mode, rank, out, ws, &|s, sink| {
                let range = t.partition_range(s);
                segment(t, range, &dec, &f, p, pi, I::ZERO, &mut sink.as_any());
                Ok(())
            }),
            sync => {
                out.as_mut_slice()
                    .par_chunks_mut(1 << 14)
                    .for_each(|c| c.fill(0.0));
                let cells = as_atomic(out.as_mut_slice());
                let flag = match (sync, t.flag_bit(mode)) {
                    (ConflictResolution::Flagged, Some(bit)) => Some(I::from_u128(1u128 << bit)),
                    _ => None,
                };
                (0..t.num_partitions())
                    .into_par_iter()
                    .with_max_len(1)
                    .for_each(|s| {
                        let range = t.partition_range(s);
                        match flag {
                            Some(mask) => {
                                // SAFETY: each segment gets its own sink, and the helper flags
                                // are exact for the tensor's current segments (an `AltoTensor`
                                // sets or checks them whenever it is built, repartitioned or
                                // read), as the MTTKRP driver relies on too.
                                let mut sink = unsafe { FlaggedRows::new(cells, rank) };
                                segment(t, range, &dec, &f, p, pi, mask, &mut sink.as_any());
                            }
                            None => {
                                let mut sink = AtomicRows::new(cells, rank);
                                segment(t, range, &dec, &f, p, pi, I::ZERO, &mut sink.as_any());
                            }
                        }
                    });
                Ok(())
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_parse() {
        assert_eq!(PhiKind::parse("auto").unwrap(), PhiKind::Auto);
        assert_eq!(PhiKind::parse("phi_auto").unwrap(), PhiKind::Auto);
        assert_eq!(PhiKind::parse("phi_pull_cached").unwrap(), PhiKind::Cached);
        assert_eq!(PhiKind::parse("atomic_fused").unwrap(), PhiKind::Fused);
        assert_eq!(
            PhiKind::parse("phi_pull_scalar_rdyn").unwrap(),
            PhiKind::Mttkrp(KernelChoice::parse("scalar_rdyn").unwrap())
        );
        assert!(PhiKind::parse("phi_nonsense").is_err());
    }

    #[test]
    fn auto_caches_pi_only_for_large_factors_and_a_cache_that_fits() {
        let (above, max) = (1000, 10_000);
        // Factors 8 * 4 * (10 + 10) = 640 bytes: recompute.
        assert_eq!(
            choose_phi_kind(&[10, 10], 100, 4, above, max),
            PhiKind::Fused
        );
        // Factors 8 * 4 * 40 = 1280 bytes, cache 8 * 4 * 100 = 3200: cache.
        assert_eq!(
            choose_phi_kind(&[20, 20], 100, 4, above, max),
            PhiKind::Cached
        );
        // The cache would take 8 * 4 * 1000 = 32000 bytes: recompute.
        assert_eq!(
            choose_phi_kind(&[20, 20], 1000, 4, above, max),
            PhiKind::Fused
        );
    }
}
