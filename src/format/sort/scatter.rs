//! The radix sort's out-of-cache pass: each worker's chunk of the input counted by top digit,
//! then every pair scattered to its digit's bucket, stably, into a sink of pairs or of split
//! index / value arrays.

use super::{
    narrow_top_digit, top_digit_bits, PairSource, BUCKET_TARGET, LSD_MAX_BITS, LSD_MAX_LEN,
    SCATTER_BUCKETS_MAX, TOP_BITS_MAX, TOP_BITS_MIN, TOP_REST_BITS,
};
use alto_kernels::AltoIndex;
use rayon::prelude::*;
use std::ops::Range;

/// A raw pointer that may cross threads: each thread writes a disjoint set of slots.
#[derive(Clone, Copy)]
pub(super) struct SharedOut<T>(pub(super) *mut T);
// SAFETY: used only to write disjoint slots from different threads (see the scatter below).
unsafe impl<T: Send> Send for SharedOut<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for SharedOut<T> {}

impl<T> SharedOut<T> {
    /// A method (not field access) so closures capture the whole `Sync` wrapper.
    pub(super) fn ptr(&self) -> *mut T {
        self.0
    }
}

/// Where the out-of-cache scatter writes its pairs: `len` slots, each written once, from any
/// thread.
pub(super) trait ScatterSink<I>: Sync {
    /// Writes `pair` to slot `pos`.
    ///
    /// # Safety
    /// `pos < len`, and no other write to `pos` happens concurrently.
    unsafe fn write(&self, pos: usize, pair: (I, f64));
}

/// One array of pairs.
pub(super) struct PairSink<I> {
    pub(super) pairs: SharedOut<(I, f64)>,
    pub(super) len: usize,
}

impl<I: Send> ScatterSink<I> for PairSink<I> {
    #[inline(always)]
    unsafe fn write(&self, pos: usize, pair: (I, f64)) {
        debug_assert!(pos < self.len);
        // SAFETY: the caller keeps `pos` below `len`, the allocation's capacity, and owns it.
        unsafe { self.pairs.ptr().add(pos).write(pair) }
    }
}

/// Separate index and value arrays (the builder's final ones).
pub(super) struct SplitSink<I> {
    pub(super) idx: SharedOut<I>,
    pub(super) vals: SharedOut<f64>,
    pub(super) len: usize,
}

impl<I: Send> ScatterSink<I> for SplitSink<I> {
    #[inline(always)]
    unsafe fn write(&self, pos: usize, (x, v): (I, f64)) {
        debug_assert!(pos < self.len);
        // SAFETY: the caller keeps `pos` below `len`, both allocations' capacity, and owns it.
        unsafe {
            self.idx.ptr().add(pos).write(x);
            self.vals.ptr().add(pos).write(v);
        }
    }
}

/// The histogram and scatter passes over `source` (at least
/// [`PARALLEL_MIN`](super::PARALLEL_MIN) pairs, more than [`DIGIT_BITS`](super::DIGIT_BITS) key
/// bits) into `sink`, which must have room for `source.len()` pairs: the pairs land scattered by
/// their top digit (stably), bucket `d` at `bucket_start[d]..bucket_start[d + 1]`, each still to
/// sort on its low `top_shift` bits. Returns `(bucket_start, top_shift)`; every slot has been
/// written when it returns, and a source that yields other pairs the second time panics rather
/// than leave a slot unwritten or write one twice.
pub(super) fn scatter_top_digit<I: AltoIndex, S: PairSource<I> + ?Sized, K: ScatterSink<I>>(
    source: &S,
    key_bits: u32,
    sink: &K,
) -> (Vec<usize>, u32) {
    let n = source.len();
    let fine_bits = top_digit_bits(
        n,
        key_bits,
        BUCKET_TARGET,
        TOP_REST_BITS,
        TOP_BITS_MIN,
        TOP_BITS_MAX,
    );
    let chunk_len = n.div_ceil(rayon::current_num_threads().max(1)).max(1);
    let chunks: Vec<Range<usize>> = (0..n)
        .step_by(chunk_len)
        .map(|a| a..(a + chunk_len).min(n))
        .collect();

    // Per-chunk histograms of the top digit, then each (chunk, digit) gets its output range.
    let (fine_shift, fine_mask) = (key_bits - fine_bits, (1u32 << fine_bits) - 1);
    let mut hists: Vec<Vec<usize>> = chunks
        .par_iter()
        .map(|c| {
            let mut h = vec![0usize; 1 << fine_bits];
            source.for_each_in(c.clone(), |p| h[p.0.digit(fine_shift, fine_mask)] += 1);
            h
        })
        .collect();
    // Fewer, larger buckets where too many would be occupied (the counts merge pairwise).
    let total: Vec<usize> = (0..1 << fine_bits)
        .map(|d| hists.iter().map(|h| h[d]).sum())
        .collect();
    let top_bits = narrow_top_digit(
        &total,
        fine_bits,
        key_bits,
        SCATTER_BUCKETS_MAX,
        TOP_BITS_MIN,
        LSD_MAX_LEN,
        LSD_MAX_BITS,
    );
    let top_shift = key_bits - top_bits;
    let group = 1usize << (fine_bits - top_bits);
    if group > 1 {
        for h in &mut hists {
            *h = h.chunks(group).map(|g| g.iter().sum()).collect();
        }
    }
    let buckets = 1usize << top_bits;
    let mask = (buckets - 1) as u32;
    let mut offsets = vec![vec![0usize; buckets]; hists.len()];
    let mut bucket_start = vec![0usize; buckets + 1];
    let mut running = 0;
    for d in 0..buckets {
        bucket_start[d] = running;
        for (c, h) in hists.iter().enumerate() {
            offsets[c][d] = running;
            running += h[d];
        }
    }
    bucket_start[buckets] = n;
    assert_eq!(
        running, n,
        "the source yielded a different number of pairs than its len"
    );
    // Where each (chunk, digit) range ends: the scatter must stop exactly there.
    let ends: Vec<Vec<usize>> = offsets
        .iter()
        .zip(&hists)
        .map(|(o, h)| o.iter().zip(h).map(|(a, b)| a + b).collect())
        .collect();

    chunks
        .par_iter()
        .zip(offsets.par_iter_mut())
        .zip(&ends)
        .for_each(|((c, off), end)| {
            // Plain slices, so the hot loop keeps their addresses in registers. (Software
            // write-combining, eight pairs per digit gathered before a burst, measured 15%
            // slower here at 1 thread.)
            let (off, end) = (off.as_mut_slice(), end.as_slice());
            source.for_each_in(c.clone(), |p| {
                let d = p.0.digit(top_shift, mask);
                let pos = off[d];
                assert!(pos < end[d], "the source changed between its two passes");
                // SAFETY: `pos` walks the range reserved for (this chunk, digit d) and stays
                // below its end (checked above, in case a source yields different pairs the
                // second time); no other chunk or digit shares the range, and the ranges tile
                // 0..n, the sink's room.
                unsafe { sink.write(pos, p) };
                off[d] = pos + 1;
            });
        });
    assert!(offsets == ends, "the source changed between its two passes");
    (bucket_start, top_shift)
}
