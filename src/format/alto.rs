//! The ALTO tensor: linearized, sorted, duplicate-merged nonzeros cut into balanced segments
//! that remember their per-mode coordinate intervals (SPEC sections 2-5).

pub use super::build_memory::{
    available_memory, build_memory_plan, check_memory_against, estimate_build_bytes,
    estimate_flag_scratch_bytes,
};
pub use super::flags::{dense_row_table, DENSE_ROWS_PER_NONZERO};
use super::intervals::widen_intervals;
use super::layout::{IndexWidth, Layout};
use super::sort::{comparison_sort_pairs, radix_sort_merged, PairSource};
pub(crate) use super::stored::StoredParts;
use crate::coo::CooTensor;
use crate::error::{AltoError, Result};
use crate::memory::MemoryLimit;
use alto_kernels::{AnyDecoder, Bmi2Body, DecodeKind, HwBits, PextDecoder};
use rayon::prelude::*;
use std::time::Instant;

/// The reference's MIN_FIBER_REUSE: above this many nonzeros per output fiber, pull-based
/// staging pays for itself ("worst-case staging cost is 4 memory operations").
pub const DEFAULT_MIN_FIBER_REUSE: u64 = 4;

/// Average fiber reuse of a mode: nonzeros per output row, `nnz / dim` (integer division, as
/// in the reference).
pub fn fiber_reuse(nnz: u64, dim: u64) -> u64 {
    nnz / dim.max(1)
}

/// How nonzeros are sorted along the line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortAlgorithm {
    /// Parallel LSD radix sort over the index bits (the default).
    Radix,
    /// Parallel comparison sort (the reference's choice; kept for the benchmark).
    Comparison,
}

/// Options for building an ALTO tensor.
#[derive(Clone, Debug)]
pub struct BuildOptions {
    /// Number of line segments (usually the thread count). At least 1.
    pub partitions: usize,
    /// Fiber-reuse threshold: modes at or below it are "limited reuse" and get helper flags
    /// first when spare index bits are scarce.
    pub min_fiber_reuse: u64,
    pub sort: SortAlgorithm,
    /// Encode with BMI2 `pdep` when available (the software path gives identical results).
    pub use_bmi2: bool,
    /// Refuse to build when the estimate exceeds the memory limit.
    pub check_memory: bool,
    /// The memory limit in bytes (`None`: the detected one, see [`crate::memory`]).
    pub max_memory: Option<u64>,
}

impl Default for BuildOptions {
    fn default() -> Self {
        BuildOptions {
            partitions: 1,
            min_fiber_reuse: DEFAULT_MIN_FIBER_REUSE,
            sort: SortAlgorithm::Radix,
            use_bmi2: true,
            check_memory: true,
            max_memory: None,
        }
    }
}

/// Seconds spent in each construction step.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct BuildTimes {
    /// Linearizing coordinates: the keys (radix sort) or the (index, value) pairs (comparison
    /// sort).
    pub encode: f64,
    pub sort: f64,
    /// Summing duplicate indices. With the radix sort this happens as each bucket is finished
    /// and is counted in `sort` (`merge` is 0).
    pub merge: f64,
    pub partition: f64,
    pub flags: f64,
    pub total: f64,
}

/// An ALTO tensor with index word `I` (`u32`, `u64` or `u128`).
#[derive(Clone, Debug, PartialEq)]
pub struct AltoTensor<I> {
    pub(crate) layout: Layout,
    pub(crate) masks: Vec<I>,
    pub(crate) idx: Vec<I>,
    pub(crate) vals: Vec<f64>,
    /// Segment boundaries: segment p is `bounds[p]..bounds[p + 1]`.
    pub(crate) bounds: Vec<usize>,
    /// Closed coordinate interval `[start, stop]` of segment p in mode m at `p * order + m`;
    /// empty segments hold `(1, 0)`.
    pub(crate) intervals: Vec<(u64, u64)>,
    /// Bit position of each mode's boundary flag, if it has one.
    pub(crate) flag_bits: Vec<Option<u32>>,
    pub(crate) duplicates_merged: u64,
    pub(crate) min_fiber_reuse: u64,
}

impl<I: HwBits> AltoTensor<I> {
    /// Linearizes, sorts, merges duplicates, partitions and sets helper flags.
    pub fn build(coo: &CooTensor, opts: &BuildOptions) -> Result<(Self, BuildTimes)> {
        let t0 = Instant::now();
        let layout = Layout::new(coo.dims())?;
        if I::BITS < layout.total_bits() {
            return Err(AltoError::InvalidArgument(format!(
                "{} bits do not fit a {} index",
                layout.total_bits(),
                I::NAME
            )));
        }
        if opts.partitions == 0 {
            return Err(AltoError::InvalidArgument(
                "at least one partition is needed".into(),
            ));
        }
        if opts.check_memory {
            build_memory_plan(coo.nnz(), layout.dims(), layout.width(), opts.partitions)
                .check(MemoryLimit::resolve(opts.max_memory), "use fewer nonzeros")?;
        }
        let masks: Vec<I> = layout.masks().iter().map(|&m| I::from_u128(m)).collect();
        let mut times = BuildTimes::default();

        let source = EncodedCoo::new(coo, &masks, opts.use_bmi2);
        let t = Instant::now();
        let (idx, vals, duplicates_merged) = match opts.sort {
            // The keys are encoded once (the sort's two passes then read 4 or 8 bytes a nonzero
            // instead of every coordinate column, and deposit nothing), and duplicates are
            // merged as each bucket is finished (`merge` stays 0).
            SortAlgorithm::Radix => {
                let keys = source.keys();
                times.encode = t.elapsed().as_secs_f64();
                let t = Instant::now();
                let pairs = KeyedValues {
                    keys: &keys,
                    vals: coo.values(),
                };
                let sorted = radix_sort_merged(&pairs, layout.total_bits());
                times.sort = t.elapsed().as_secs_f64();
                (sorted.idx, sorted.vals, sorted.duplicates_merged)
            }
            SortAlgorithm::Comparison => {
                let mut pairs = source.collect();
                times.encode = t.elapsed().as_secs_f64();
                comparison_sort_pairs(&mut pairs);
                times.sort = t.elapsed().as_secs_f64() - times.encode;
                let t = Instant::now();
                let merged = merge_duplicates(pairs);
                times.merge = t.elapsed().as_secs_f64();
                merged
            }
        };

        let mut tensor = AltoTensor {
            masks,
            idx,
            vals,
            bounds: Vec::new(),
            intervals: Vec::new(),
            flag_bits: vec![None; layout.order()],
            duplicates_merged,
            min_fiber_reuse: opts.min_fiber_reuse,
            layout,
        };
        let (tp, tf) = tensor.repartition_timed(opts.partitions)?;
        times.partition = tp;
        times.flags = tf;
        times.total = t0.elapsed().as_secs_f64();
        Ok((tensor, times))
    }

    /// Cuts the line into `partitions` equal segments and recomputes intervals and flags.
    pub fn repartition(&mut self, partitions: usize) -> Result<()> {
        self.repartition_timed(partitions).map(|_| ())
    }

    fn repartition_timed(&mut self, partitions: usize) -> Result<(f64, f64)> {
        if partitions == 0 {
            return Err(AltoError::InvalidArgument(
                "at least one partition is needed".into(),
            ));
        }
        let t = Instant::now();
        let m = self.idx.len();
        let seg = m.div_ceil(partitions).max(1);
        self.bounds = (0..=partitions).map(|p| (p * seg).min(m)).collect();
        let decoder = self.fast_decoder();
        self.intervals = self.segment_intervals(&decoder);
        let partition_s = t.elapsed().as_secs_f64();
        let t = Instant::now();
        self.set_flags(&decoder);
        Ok((partition_s, t.elapsed().as_secs_f64()))
    }

    /// Every segment's per-mode coordinate interval (segment `p`, mode `m` at `p * order + m`;
    /// `(1, 0)` for an empty segment), computed from the nonzeros, in parallel.
    pub(super) fn segment_intervals(&self, decoder: &AnyDecoder<I>) -> Vec<(u64, u64)> {
        let order = self.order();
        let per_segment: Vec<Vec<(u64, u64)>> = (0..self.num_partitions())
            .into_par_iter()
            .map(|p| {
                let mut iv = vec![(1u64, 0u64); order];
                let segment = &self.idx[self.partition_range(p)];
                widen_intervals(&mut iv, segment, &self.masks, decoder);
                iv
            })
            .collect();
        per_segment.concat()
    }

    /// The decoder the CPU rule prefers (BMI2 `pext` where it is native and fast).
    pub fn fast_decoder(&self) -> AnyDecoder<I> {
        self.decoder(alto_kernels::default_decode_kind(
            alto_kernels::CpuIdentity::detect(),
        ))
    }

    /// A decoder for this tensor's masks; `Pext` falls back to `Runs` without BMI2.
    pub fn decoder(&self, kind: DecodeKind) -> AnyDecoder<I> {
        AnyDecoder::new(kind, &self.masks)
            .or_else(|| AnyDecoder::new(DecodeKind::Runs, &self.masks))
            .expect("the runs decoder is always available")
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }
    pub fn order(&self) -> usize {
        self.layout.order()
    }
    pub fn dims(&self) -> &[u64] {
        self.layout.dims()
    }
    pub fn nnz(&self) -> usize {
        self.vals.len()
    }
    pub fn masks(&self) -> &[I] {
        &self.masks
    }
    /// Linearized indices (with helper flags in the bits above `B`).
    pub fn indices(&self) -> &[I] {
        &self.idx
    }
    pub fn values(&self) -> &[f64] {
        &self.vals
    }
    pub fn num_partitions(&self) -> usize {
        self.bounds.len() - 1
    }
    /// Nonzero range of segment `p`.
    pub fn partition_range(&self, p: usize) -> std::ops::Range<usize> {
        self.bounds[p]..self.bounds[p + 1]
    }
    /// Closed interval of segment `p` in `mode`, `None` for an empty segment.
    pub fn interval(&self, p: usize, mode: usize) -> Option<(u64, u64)> {
        let (lo, hi) = self.intervals[p * self.order() + mode];
        (lo <= hi).then_some((lo, hi))
    }
    pub fn flag_bit(&self, mode: usize) -> Option<u32> {
        self.flag_bits[mode]
    }
    pub fn duplicates_merged(&self) -> u64 {
        self.duplicates_merged
    }
    pub fn min_fiber_reuse(&self) -> u64 {
        self.min_fiber_reuse
    }
    pub fn fiber_reuse(&self, mode: usize) -> u64 {
        fiber_reuse(self.nnz() as u64, self.dims()[mode])
    }
    /// Bytes of index and value arrays (metadata is negligible).
    pub fn storage_bytes(&self) -> u64 {
        self.nnz() as u64 * (std::mem::size_of::<I>() as u64 + 8)
    }

    /// Back to coordinates (0-based), in ALTO order, without flags.
    pub fn to_coo(&self) -> CooTensor {
        let dec = self.fast_decoder();
        let inds = (0..self.order())
            .map(|m| self.idx.par_iter().map(|&x| dec.coord(x, m)).collect())
            .collect();
        CooTensor::new(self.dims().to_vec(), inds, self.vals.clone())
            .expect("an ALTO tensor decodes to valid coordinates")
    }
}

/// Runs `body` compiled with BMI2 enabled when `decoder` decodes with `pext` (so its `pext`s
/// inline whatever the loop's size, see [`Bmi2Body`]); plainly otherwise.
#[inline(always)]
pub(super) fn run_decoding<I: HwBits, B: Bmi2Body>(decoder: &AnyDecoder<I>, body: B) -> B::Output {
    match decoder {
        AnyDecoder::Pext(d) => d.token().run_body(body),
        AnyDecoder::Runs(_) => body.call(),
    }
}

/// The tensor's nonzeros as (index, value) pairs, linearized on demand: a [`PairSource`] the
/// radix sort reads twice without the pairs ever being stored unsorted.
struct EncodedCoo<'a, I: HwBits> {
    columns: Vec<&'a [u64]>,
    vals: &'a [f64],
    masks: &'a [I],
    pdep: Option<PextDecoder<I>>,
}

impl<'a, I: HwBits> EncodedCoo<'a, I> {
    fn new(coo: &'a CooTensor, masks: &'a [I], use_bmi2: bool) -> Self {
        let pdep = alto_kernels::Bmi2::try_new()
            .filter(|_| use_bmi2)
            .map(|t| PextDecoder::new(t, masks));
        let columns = (0..masks.len()).map(|m| coo.mode_indices(m)).collect();
        EncodedCoo {
            columns,
            vals: coo.values(),
            masks,
            pdep,
        }
    }

    /// The linearized indices alone, in nonzero order.
    fn keys(&self) -> Vec<I> {
        self.collect_mapped(|p| p.0)
    }

    /// All pairs, in nonzero order (for the comparison sort).
    fn collect(&self) -> Vec<(I, f64)> {
        self.collect_mapped(|p| p)
    }

    /// `f` of every pair, in nonzero order, encoded in parallel chunks.
    fn collect_mapped<T: Send>(&self, f: impl Fn((I, f64)) -> T + Sync) -> Vec<T> {
        const CHUNK: usize = 1 << 14;
        let n = self.vals.len();
        let mut items: Vec<T> = Vec::with_capacity(n);
        crate::memory::populate_spare_capacity(&mut items);
        items.spare_capacity_mut()[..n]
            .par_chunks_mut(CHUNK)
            .enumerate()
            .for_each(|(c, out)| {
                let mut slots = out.iter_mut();
                let start = c * CHUNK;
                self.for_each_in(start..start + slots.len(), |p| {
                    slots.next().expect("one slot per pair").write(f(p));
                });
                assert!(slots.next().is_none(), "one pair per slot");
            });
        // SAFETY: the chunks tile 0..n and each wrote every one of its slots (checked above).
        unsafe { items.set_len(n) };
        items
    }
}

/// Encoded keys beside their values: what the radix sort reads.
struct KeyedValues<'a, I> {
    keys: &'a [I],
    vals: &'a [f64],
}

impl<I: HwBits> PairSource<I> for KeyedValues<'_, I> {
    fn len(&self) -> usize {
        self.keys.len().min(self.vals.len())
    }
    #[inline(always)]
    fn for_each_in(&self, range: std::ops::Range<usize>, mut f: impl FnMut((I, f64))) {
        let (keys, vals) = (&self.keys[range.clone()], &self.vals[range]);
        for k in 0..keys.len() {
            f((keys[k], vals[k]));
        }
    }
}

impl<I: HwBits> PairSource<I> for EncodedCoo<'_, I> {
    fn len(&self) -> usize {
        self.vals.len()
    }
    #[inline(always)]
    fn for_each_in(&self, range: std::ops::Range<usize>, f: impl FnMut((I, f64))) {
        match &self.pdep {
            Some(d) => d
                .token()
                .run(|| encode_each(&self.columns, self.vals, range, |c, m| d.deposit(c, m), f)),
            None => encode_each(
                &self.columns,
                self.vals,
                range,
                |c, m| I::pdep_soft(c, self.masks[m]),
                f,
            ),
        }
    }
}

/// Calls `f` with `(index, value)` for the nonzeros in `range`; `columns` hold every mode's
/// coordinates. Inlined into the BMI2 wrapper so `deposit`'s `pdep` inlines too.
#[inline(always)]
fn encode_each<I: HwBits>(
    columns: &[&[u64]],
    vals: &[f64],
    range: std::ops::Range<usize>,
    deposit: impl Fn(u64, usize) -> I,
    mut f: impl FnMut((I, f64)),
) {
    for k in range {
        let mut x = I::ZERO;
        for (m, col) in columns.iter().enumerate() {
            x = x.or(deposit(col[k], m));
        }
        f((x, vals[k]));
    }
}

/// Sums runs of equal indices (sorted input), returning separate index/value arrays and the
/// number of entries merged away. Parallel over chunks: a run crossing a chunk boundary is
/// summed by the chunk where it starts.
fn merge_duplicates<I: HwBits>(pairs: Vec<(I, f64)>) -> (Vec<I>, Vec<f64>, u64) {
    const CHUNK: usize = 1 << 16;
    let n = pairs.len();
    let chunk_end = |c: usize| ((c + 1) * CHUNK).min(n);
    // Each chunk emits the runs that start in it (their heads: entries whose index differs
    // from the one before), so its output offset counts the heads of earlier chunks.
    let heads: Vec<usize> = (0..n.div_ceil(CHUNK))
        .into_par_iter()
        .map(|c| {
            let changes = pairs[(c * CHUNK).max(1) - 1..chunk_end(c)]
                .windows(2)
                .filter(|w| w[0].0 != w[1].0)
                .count();
            changes + usize::from(c == 0)
        })
        .collect();
    let total: usize = heads.iter().sum();
    let mut idx: Vec<I> = Vec::with_capacity(total);
    let mut vals: Vec<f64> = Vec::with_capacity(total);
    let mut outputs = Vec::with_capacity(heads.len());
    let (mut idx_rest, mut val_rest) = (
        &mut idx.spare_capacity_mut()[..total],
        &mut vals.spare_capacity_mut()[..total],
    );
    for &h in &heads {
        let (a, r) = std::mem::take(&mut idx_rest).split_at_mut(h);
        let (b, t) = std::mem::take(&mut val_rest).split_at_mut(h);
        (idx_rest, val_rest) = (r, t);
        outputs.push((a, b));
    }
    outputs
        .into_par_iter()
        .enumerate()
        .for_each(|(c, (idx_out, val_out))| {
            let (start, end) = (c * CHUNK, chunk_end(c));
            let mut i = start;
            if c > 0 {
                // Skip the tail of a run the previous chunk emits.
                while i < end && pairs[i].0 == pairs[start - 1].0 {
                    i += 1;
                }
            }
            let mut slots = idx_out.iter_mut().zip(val_out.iter_mut());
            while i < end {
                let (x, mut v) = pairs[i];
                i += 1;
                while i < n && pairs[i].0 == x {
                    v += pairs[i].1; // left to right, as a sequential merge sums
                    i += 1;
                }
                let (xs, vs) = slots.next().expect("one slot per head");
                xs.write(x);
                vs.write(v);
            }
            assert!(slots.next().is_none(), "one entry per head");
        });
    // SAFETY: chunk c wrote exactly `heads[c]` entries (one per head in its range) into its
    // slices, which tile 0..total of both buffers.
    unsafe {
        idx.set_len(total);
        vals.set_len(total);
    }
    (idx, vals, (n - total) as u64)
}

/// An ALTO tensor whose index width was chosen at run time.
#[derive(Clone, Debug, PartialEq)]
pub enum AnyAlto {
    U32(AltoTensor<u32>),
    U64(AltoTensor<u64>),
    U128(AltoTensor<u128>),
}

/// Runs a generic expression on whichever width an [`AnyAlto`] holds.
#[macro_export]
macro_rules! with_alto {
    ($any:expr, $t:ident => $body:expr) => {
        match $any {
            $crate::format::alto::AnyAlto::U32($t) => $body,
            $crate::format::alto::AnyAlto::U64($t) => $body,
            $crate::format::alto::AnyAlto::U128($t) => $body,
        }
    };
}

impl AnyAlto {
    /// Builds with the narrowest index word that holds the tensor's bits.
    pub fn build(coo: &CooTensor, opts: &BuildOptions) -> Result<(Self, BuildTimes)> {
        Ok(match Layout::new(coo.dims())?.width() {
            IndexWidth::U32 => {
                let (t, times) = AltoTensor::<u32>::build(coo, opts)?;
                (AnyAlto::U32(t), times)
            }
            IndexWidth::U64 => {
                let (t, times) = AltoTensor::<u64>::build(coo, opts)?;
                (AnyAlto::U64(t), times)
            }
            IndexWidth::U128 => {
                let (t, times) = AltoTensor::<u128>::build(coo, opts)?;
                (AnyAlto::U128(t), times)
            }
        })
    }

    pub fn width(&self) -> IndexWidth {
        match self {
            AnyAlto::U32(_) => IndexWidth::U32,
            AnyAlto::U64(_) => IndexWidth::U64,
            AnyAlto::U128(_) => IndexWidth::U128,
        }
    }
    pub fn layout(&self) -> &Layout {
        with_alto!(self, t => t.layout())
    }
    pub fn order(&self) -> usize {
        self.layout().order()
    }
    pub fn dims(&self) -> &[u64] {
        self.layout().dims()
    }
    pub fn nnz(&self) -> usize {
        with_alto!(self, t => t.nnz())
    }
    pub fn num_partitions(&self) -> usize {
        with_alto!(self, t => t.num_partitions())
    }
    pub fn repartition(&mut self, partitions: usize) -> Result<()> {
        with_alto!(self, t => t.repartition(partitions))
    }
    pub fn duplicates_merged(&self) -> u64 {
        with_alto!(self, t => t.duplicates_merged())
    }
    pub fn fiber_reuse(&self, mode: usize) -> u64 {
        with_alto!(self, t => t.fiber_reuse(mode))
    }
    pub fn flag_bit(&self, mode: usize) -> Option<u32> {
        with_alto!(self, t => t.flag_bit(mode))
    }
    pub fn min_fiber_reuse(&self) -> u64 {
        with_alto!(self, t => t.min_fiber_reuse())
    }
    pub fn storage_bytes(&self) -> u64 {
        with_alto!(self, t => t.storage_bytes())
    }
    pub fn values(&self) -> &[f64] {
        with_alto!(self, t => t.values())
    }
    pub fn to_coo(&self) -> CooTensor {
        with_alto!(self, t => t.to_coo())
    }
    pub fn interval(&self, p: usize, mode: usize) -> Option<(u64, u64)> {
        with_alto!(self, t => t.interval(p, mode))
    }
    pub fn partition_range(&self, p: usize) -> std::ops::Range<usize> {
        with_alto!(self, t => t.partition_range(p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sequential merge the parallel one must reproduce, bit for bit.
    fn merge_naive(pairs: &[(u32, f64)]) -> (Vec<u32>, Vec<f64>) {
        let (mut idx, mut vals): (Vec<u32>, Vec<f64>) = (Vec::new(), Vec::new());
        for &(x, v) in pairs {
            if idx.last() == Some(&x) {
                *vals.last_mut().unwrap() += v;
            } else {
                idx.push(x);
                vals.push(v);
            }
        }
        (idx, vals)
    }

    #[test]
    fn parallel_merge_sums_runs_across_chunk_boundaries() {
        // Runs of 1..=200_000 equal keys, so some span one or several 64Ki chunks.
        let mut pairs = Vec::new();
        let mut key = 0u32;
        for len in [1usize, 3, 70_000, 1, 200_000, 2, 65_536, 1, 1, 9] {
            pairs.extend((0..len).map(|k| (key, 0.1 * k as f64 + 1.0 / (1 + key) as f64)));
            key += 1 + (len % 3) as u32;
        }
        let (want_idx, want_vals) = merge_naive(&pairs);
        for threads in [1, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let (idx, vals, merged) = pool.install(|| merge_duplicates(pairs.clone()));
            assert_eq!(idx, want_idx);
            assert_eq!(vals, want_vals);
            assert_eq!(merged as usize, pairs.len() - want_idx.len());
        }
        let distinct: Vec<(u32, f64)> = (0..200_000).map(|k| (k, k as f64)).collect();
        let (idx, vals, merged) = merge_duplicates(distinct.clone());
        assert_eq!((idx.len(), vals[199_999], merged), (200_000, 199_999.0, 0));
        assert_eq!(merge_duplicates::<u32>(Vec::new()), (vec![], vec![], 0));
    }
}
