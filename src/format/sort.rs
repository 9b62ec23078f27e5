//! Sorting (index, value) pairs along the ALTO line: a parallel radix sort over the `B` index
//! bits. Sorting dominates format construction; the comparison sort is kept for the
//! construction benchmark.
//!
//! The shape follows where the time goes when the pairs do not fit in cache: one histogram
//! read and one scatter touch the whole array. The scatter is on the top 8-12 bits, chosen so
//! the average bucket fits in L1 and few bits remain below; buckets then finish in parallel
//! while cache resident, against a per-worker scratch buffer that stays hot: balanced-digit
//! LSD passes when at most 24 bits remain, one more MSD digit (then insertion sort) when more
//! do. (Advising the scatter's fresh destination onto transparent huge pages was measured and
//! left out: 5% faster on the median, with occasional 20-60 ms stalls in kernel compaction.)
//!
//! The input is a [`PairSource`], read twice in order: the format builder passes one that
//! encodes coordinates as it goes, so the unsorted pairs are never stored (one fresh buffer
//! and one pass fewer); [`radix_sort_pairs`] sorts a stored vector the same way.

use alto_kernels::AltoIndex;
use rayon::prelude::*;
use std::ops::Range;

/// Below this many pairs a sequential sort is faster than setting up parallel passes.
const PARALLEL_MIN: usize = 1 << 16;
/// The top digit gets enough bits (within [`TOP_BITS_MIN`]..=[`TOP_BITS_MAX`]) that the average
/// bucket holds at most this many pairs (32 KiB of 16-byte pairs: L1 with its scratch), and
/// that at most [`LSD_MAX_BITS`] remain below it where the cap allows.
const BUCKET_TARGET: usize = 2048;
const TOP_BITS_MIN: u32 = 8;
/// More buckets than this and the scatter's write frontier no longer fits in L2.
const TOP_BITS_MAX: u32 = 12;
/// Digit width of the in-cache passes.
const DIGIT_BITS: u32 = 8;
/// Buckets up to this many pairs are finished with LSD passes (256 KiB of 16-byte pairs, so
/// they run in L2); larger ones get another MSD split first.
const LSD_MAX_LEN: usize = 1 << 14;
/// LSD passes are used while at most this many key bits remain (three passes); with more
/// bits left, one MSD digit leaves sub-buckets small enough for insertion sort.
const LSD_MAX_BITS: u32 = 24;
/// Runs this short are insertion sorted.
const INSERTION_MAX: usize = 48;

/// A raw pointer that may cross threads: each thread writes a disjoint set of slots.
#[derive(Clone, Copy)]
struct SharedOut<T>(*mut T);
// SAFETY: used only to write disjoint slots from different threads (see the scatter below).
unsafe impl<T: Send> Send for SharedOut<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for SharedOut<T> {}

impl<T> SharedOut<T> {
    /// A method (not field access) so closures capture the whole `Sync` wrapper.
    fn ptr(self) -> *mut T {
        self.0
    }
}

/// Bits of the out-of-cache top digit for `n` keys of `key_bits` bits: the fewest in
/// `min_bits..=max_bits` that bring the average bucket to `target_bucket` pairs or fewer and
/// leave at most `rest_bits` below the digit where `max_bits` can (so buckets finish with LSD
/// passes rather than another MSD level), never more than the key has.
pub fn top_digit_bits(
    n: usize,
    key_bits: u32,
    target_bucket: usize,
    rest_bits: u32,
    min_bits: u32,
    max_bits: u32,
) -> u32 {
    // Growing the digit for `rest_bits` only pays when it gets there within `max_bits`.
    let rest_reachable = key_bits <= max_bits + rest_bits;
    let mut bits = min_bits;
    while bits < max_bits
        && ((n >> bits) > target_bucket || (rest_reachable && key_bits > bits + rest_bits))
    {
        bits += 1;
    }
    bits.min(key_bits)
}

/// Where the radix sort reads its input: in order, a chunk at a time, twice (once to count
/// digits, once to scatter), so a source may compute its pairs on the fly (the format builder
/// encodes coordinates) rather than store them.
pub trait PairSource<I>: Sync {
    /// Number of pairs.
    fn len(&self) -> usize;
    /// True when there are no pairs.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Calls `f` on each pair of `range`, in order.
    fn for_each_in(&self, range: Range<usize>, f: impl FnMut((I, f64)));
}

impl<I: AltoIndex> PairSource<I> for [(I, f64)] {
    fn len(&self) -> usize {
        <[(I, f64)]>::len(self)
    }
    #[inline(always)]
    fn for_each_in(&self, range: Range<usize>, mut f: impl FnMut((I, f64))) {
        for &p in &self[range] {
            f(p);
        }
    }
}

/// Sorts `pairs` by index, considering only the low `key_bits` bits (higher bits must be zero).
/// Stable. Runs on the current rayon pool.
pub fn radix_sort_pairs<I: AltoIndex>(pairs: &mut Vec<(I, f64)>, key_bits: u32) {
    if pairs.len() < PARALLEL_MIN || key_bits <= DIGIT_BITS {
        sort_in_cache(pairs, &mut Vec::new(), key_bits);
        return;
    }
    *pairs = radix_sort_from(pairs.as_slice(), key_bits);
}

/// The pairs of `source`, sorted stably by index on the low `key_bits` bits (higher bits must be
/// zero). Runs on the current rayon pool.
pub fn radix_sort_from<I: AltoIndex, S: PairSource<I> + ?Sized>(
    source: &S,
    key_bits: u32,
) -> Vec<(I, f64)> {
    let n = source.len();
    if n < PARALLEL_MIN || key_bits <= DIGIT_BITS {
        let mut pairs = Vec::with_capacity(n);
        source.for_each_in(0..n, |p| pairs.push(p));
        sort_in_cache(&mut pairs, &mut Vec::new(), key_bits);
        return pairs;
    }
    let Scattered {
        mut pairs,
        bucket_start,
        top_shift,
    } = scatter_top_digit(source, key_bits);
    // Finish every bucket in cache, in parallel, each worker reusing its own scratch.
    split_by_starts(&mut pairs, &bucket_start)
        .into_par_iter()
        .with_min_len(16)
        .for_each_init(Vec::new, |scratch, bucket| {
            sort_in_cache(bucket, scratch, top_shift)
        });
    pairs
}

/// The pairs of `source` sorted by index (low `key_bits` bits, higher bits zero) with the
/// values of equal indices summed (left to right, in input order), as separate index and value
/// arrays, and how many pairs were merged away. Runs on the current rayon pool.
///
/// The radix sort's buckets hold disjoint key ranges, so duplicates never straddle two: each
/// bucket, sorted in cache, is merged and written straight to the output at its own offset,
/// which saves the separate merge's two passes over the sorted pairs. Where duplicates leave
/// gaps between buckets, one compaction pass closes them.
pub fn radix_sort_merged<I: AltoIndex, S: PairSource<I> + ?Sized>(
    source: &S,
    key_bits: u32,
) -> SortedMerged<I> {
    let n = source.len();
    let mut idx: Vec<I> = Vec::with_capacity(n);
    let mut vals: Vec<f64> = Vec::with_capacity(n);
    let (idx_out, val_out) = (
        &mut idx.spare_capacity_mut()[..n],
        &mut vals.spare_capacity_mut()[..n],
    );
    let (starts, emitted): (Vec<usize>, Vec<usize>) = if n < PARALLEL_MIN || key_bits <= DIGIT_BITS
    {
        let mut pairs = Vec::with_capacity(n);
        source.for_each_in(0..n, |p| pairs.push(p));
        sort_in_cache(&mut pairs, &mut Vec::new(), key_bits);
        (vec![0], vec![merge_into(&pairs, idx_out, val_out)])
    } else {
        let Scattered {
            mut pairs,
            bucket_start,
            top_shift,
        } = scatter_top_digit(source, key_bits);
        let buckets = split_by_starts(&mut pairs, &bucket_start);
        let idx_parts = split_by_starts(idx_out, &bucket_start);
        let val_parts = split_by_starts(val_out, &bucket_start);
        let emitted = buckets
            .into_par_iter()
            .zip(idx_parts)
            .zip(val_parts)
            .with_min_len(16)
            .map_init(Vec::new, |scratch, ((bucket, idx_part), val_part)| {
                sort_in_cache(bucket, scratch, top_shift);
                merge_into(bucket, idx_part, val_part)
            })
            .collect();
        (bucket_start[..bucket_start.len() - 1].to_vec(), emitted)
    };
    // Close the gaps merged duplicates left (left to right: every move goes down).
    let mut total = 0;
    for (&start, &len) in starts.iter().zip(&emitted) {
        if start != total {
            idx_out.copy_within(start..start + len, total);
            val_out.copy_within(start..start + len, total);
        }
        total += len;
    }
    // SAFETY: each part wrote its first `emitted` slots (what `merge_into` returns), and the
    // compaction moved those written runs, in order, to `0..total`.
    unsafe {
        idx.set_len(total);
        vals.set_len(total);
    }
    SortedMerged {
        idx,
        vals,
        duplicates_merged: (n - total) as u64,
    }
}

/// Sorted, duplicate-free indices and their summed values ([`radix_sort_merged`]).
#[derive(Debug, PartialEq)]
pub struct SortedMerged<I> {
    pub idx: Vec<I>,
    pub vals: Vec<f64>,
    /// Input pairs merged into an earlier pair of the same index.
    pub duplicates_merged: u64,
}

/// Writes sorted `pairs` to the front of `idx` / `vals` with equal indices summed (left to
/// right); returns how many entries it wrote.
fn merge_into<I: AltoIndex>(
    pairs: &[(I, f64)],
    idx: &mut [std::mem::MaybeUninit<I>],
    vals: &mut [std::mem::MaybeUninit<f64>],
) -> usize {
    assert!(idx.len() >= pairs.len() && vals.len() >= pairs.len());
    let mut out = 0;
    let mut i = 0;
    while i < pairs.len() {
        let (x, mut v) = pairs[i];
        i += 1;
        while i < pairs.len() && pairs[i].0 == x {
            v += pairs[i].1;
            i += 1;
        }
        idx[out].write(x);
        vals[out].write(v);
        out += 1;
    }
    out
}

/// `data` cut at `starts` (ascending offsets, the first 0, the last `data.len()`): one slice
/// per consecutive pair of offsets.
fn split_by_starts<'a, T>(mut data: &'a mut [T], starts: &[usize]) -> Vec<&'a mut [T]> {
    let mut parts = Vec::with_capacity(starts.len().saturating_sub(1));
    for w in starts.windows(2) {
        let (part, rest) = std::mem::take(&mut data).split_at_mut(w[1] - w[0]);
        data = rest;
        parts.push(part);
    }
    parts
}

/// The pairs after the out-of-cache pass: scattered by their top digit (stably), bucket `d` at
/// `pairs[bucket_start[d]..bucket_start[d + 1]]`, each still to sort on its low `top_shift`
/// bits.
struct Scattered<I> {
    pairs: Vec<(I, f64)>,
    bucket_start: Vec<usize>,
    top_shift: u32,
}

/// The histogram and scatter passes over `source` (at least [`PARALLEL_MIN`] pairs, more than
/// [`DIGIT_BITS`] key bits).
fn scatter_top_digit<I: AltoIndex, S: PairSource<I> + ?Sized>(
    source: &S,
    key_bits: u32,
) -> Scattered<I> {
    let n = source.len();
    let top_bits = top_digit_bits(
        n,
        key_bits,
        BUCKET_TARGET,
        LSD_MAX_BITS,
        TOP_BITS_MIN,
        TOP_BITS_MAX,
    );
    let top_shift = key_bits - top_bits;
    let buckets = 1usize << top_bits;
    let mask = (buckets - 1) as u32;
    let chunk_len = n.div_ceil(rayon::current_num_threads().max(1));
    let chunks: Vec<Range<usize>> = (0..n)
        .step_by(chunk_len)
        .map(|a| a..(a + chunk_len).min(n))
        .collect();

    // Per-chunk histograms of the top digit, then each (chunk, digit) gets its output range.
    let hists: Vec<Vec<usize>> = chunks
        .par_iter()
        .map(|c| {
            let mut h = vec![0usize; buckets];
            source.for_each_in(c.clone(), |p| h[p.0.digit(top_shift, mask)] += 1);
            h
        })
        .collect();
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

    let mut out: Vec<(I, f64)> = Vec::with_capacity(n);
    let dst = SharedOut(out.as_mut_ptr());
    chunks
        .par_iter()
        .zip(offsets.par_iter_mut())
        .zip(&ends)
        .for_each(|((c, off), end)| {
            source.for_each_in(c.clone(), |p| {
                let d = p.0.digit(top_shift, mask);
                assert!(off[d] < end[d], "the source changed between its two passes");
                // SAFETY: `off[d]` walks the range reserved for (this chunk, digit d) and stays
                // below its end (checked above, in case a source yields different pairs the
                // second time); no other chunk or digit shares the range, and the ranges tile
                // 0..n, inside `out`'s capacity.
                unsafe { dst.ptr().add(off[d]).write(p) };
                off[d] += 1;
            });
        });
    assert!(offsets == ends, "the source changed between its two passes");
    // SAFETY: every (chunk, digit) range was written slot by slot from its start to its end
    // (checked just above), and the ranges tile 0..n.
    unsafe { out.set_len(n) };
    Scattered {
        pairs: out,
        bucket_start,
        top_shift,
    }
}

/// Stable sort of `data` on key bits `0..key_bits`, growing `scratch` as needed; the result
/// ends in `data`.
fn sort_in_cache<I: AltoIndex>(data: &mut [(I, f64)], scratch: &mut Vec<(I, f64)>, key_bits: u32) {
    if data.len() <= INSERTION_MAX {
        insertion_sort(data);
        return;
    }
    if scratch.len() < data.len() {
        scratch.resize(data.len(), (I::ZERO, 0.0));
    }
    let tmp = &mut scratch[..data.len()];
    sort_with_scratch(data, tmp, key_bits);
}

/// Stable sort of `data` on key bits `0..key_bits` using `tmp` (same length) as scratch; the
/// result ends in `data`. MSD splits while a bucket is larger than L2 or has many bits left,
/// then LSD passes.
fn sort_with_scratch<I: AltoIndex>(data: &mut [(I, f64)], tmp: &mut [(I, f64)], key_bits: u32) {
    let n = data.len();
    assert_eq!(n, tmp.len(), "scratch must match the data");
    if n <= INSERTION_MAX {
        insertion_sort(data);
        return;
    }
    if key_bits == 0 {
        return;
    }
    if (n <= LSD_MAX_LEN && key_bits <= LSD_MAX_BITS) || key_bits <= DIGIT_BITS {
        lsd_passes(data, tmp, key_bits);
        return;
    }
    let shift = key_bits - DIGIT_BITS;
    let mask = (1u32 << DIGIT_BITS) - 1;
    let mut h = [0usize; 1 << DIGIT_BITS];
    for p in data.iter() {
        h[p.0.digit(shift, mask)] += 1;
    }
    if h.contains(&n) {
        // One digit for every key: nothing moves at this level.
        sort_with_scratch(data, tmp, shift);
        return;
    }
    let mut off = [0usize; 1 << DIGIT_BITS];
    let mut running = 0;
    for (o, &c) in off.iter_mut().zip(&h) {
        *o = running;
        running += c;
    }
    for &p in data.iter() {
        let d = p.0.digit(shift, mask);
        // SAFETY: `off[d]` stays below the end of digit d's range: `h` counted exactly the keys
        // of `data` per digit and the ranges tile 0..n = tmp.len() (the hot loop; no checks).
        unsafe { *tmp.get_unchecked_mut(off[d]) = p };
        off[d] += 1;
    }
    // Each sub-bucket now sits in `tmp`: sort it there (with its `data` range as scratch) and
    // copy it home while it is still in cache.
    let mut start = 0;
    for &len in &h {
        if len > 0 {
            let (src, dst) = (&mut tmp[start..start + len], &mut data[start..start + len]);
            sort_with_scratch(src, dst, shift);
            dst.copy_from_slice(src);
        }
        start += len;
    }
}

/// Stable LSD radix sort of `data` on key bits `0..key_bits` (at most [`LSD_MAX_BITS`] or one
/// digit), in passes of equal width, `tmp` (same length) the ping-pong buffer; the result
/// ends in `data`.
fn lsd_passes<I: AltoIndex>(data: &mut [(I, f64)], tmp: &mut [(I, f64)], key_bits: u32) {
    assert_eq!(data.len(), tmp.len(), "scratch must match the data");
    const MAX_PASSES: usize = (LSD_MAX_BITS / DIGIT_BITS) as usize;
    let passes = key_bits.div_ceil(DIGIT_BITS).clamp(1, MAX_PASSES as u32);
    let width = key_bits.div_ceil(passes);
    let mask = (1u32 << width) - 1;
    // All digit histograms in one read.
    let mut hists = [[0usize; 1 << DIGIT_BITS]; MAX_PASSES];
    for p in data.iter() {
        for (k, h) in hists.iter_mut().take(passes as usize).enumerate() {
            h[p.0.digit(k as u32 * width, mask)] += 1;
        }
    }
    let n = data.len();
    let (mut src, mut dst) = (data, tmp);
    let mut in_tmp = false;
    for (k, h) in hists.iter().take(passes as usize).enumerate() {
        if h.contains(&n) {
            continue; // every key has the same digit here: nothing moves
        }
        let mut off = [0usize; 1 << DIGIT_BITS];
        let mut running = 0;
        for (o, &c) in off.iter_mut().zip(h) {
            *o = running;
            running += c;
        }
        let shift = k as u32 * width;
        for &p in src.iter() {
            let d = p.0.digit(shift, mask);
            // SAFETY: as in `sort_with_scratch`: the offsets come from this data's own digit
            // counts, so each lands in 0..n = dst.len().
            unsafe { *dst.get_unchecked_mut(off[d]) = p };
            off[d] += 1;
        }
        std::mem::swap(&mut src, &mut dst);
        in_tmp = !in_tmp;
    }
    if in_tmp {
        // The sorted data is in the scratch half: copy it home.
        dst.copy_from_slice(src);
    }
}

/// Stable insertion sort by index, for short runs.
fn insertion_sort<I: AltoIndex>(data: &mut [(I, f64)]) {
    for i in 1..data.len() {
        let x = data[i];
        let mut j = i;
        while j > 0 && data[j - 1].0 > x.0 {
            data[j] = data[j - 1];
            j -= 1;
        }
        data[j] = x;
    }
}

/// The parallel comparison sort the radix sort is measured against.
pub fn comparison_sort_pairs<I: AltoIndex>(pairs: &mut [(I, f64)]) {
    pairs.par_sort_unstable_by_key(|p| p.0);
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn check<I: AltoIndex>(keys: Vec<u128>, bits: u32, threads: usize) {
        let pairs: Vec<(I, f64)> = keys
            .iter()
            .enumerate()
            .map(|(k, &x)| (I::from_u128(x), k as f64))
            .collect();
        let mut want = pairs.clone();
        want.sort_by_key(|p| p.0); // stable: equal keys keep input order
        let mut got = pairs;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| radix_sort_pairs(&mut got, bits));
        assert_eq!(got, want);
    }

    #[test]
    fn sorts_like_a_stable_sort_at_every_width() {
        let mut rng = rand_pcg::Pcg64::seed_from_u64(7);
        for (bits, threads) in [(9u32, 1), (32, 2), (35, 3), (64, 2), (77, 2), (128, 4)] {
            let n = 70_000;
            let keys: Vec<u128> = (0..n)
                .map(|_| {
                    let x: u128 = rng.random();
                    let x = if bits == 128 {
                        x
                    } else {
                        x & ((1u128 << bits) - 1)
                    };
                    if rng.random_bool(0.3) {
                        x & 0xff00
                    } else {
                        x
                    } // many duplicates
                })
                .collect();
            match bits {
                0..=32 => check::<u32>(keys, bits, threads),
                33..=64 => check::<u64>(keys, bits, threads),
                _ => check::<u128>(keys, bits, threads),
            }
        }
        check::<u64>(vec![5; 100_000], 40, 2);
        check::<u32>(vec![3, 1, 2], 2, 1);
        check::<u32>(vec![], 2, 1);
    }

    #[test]
    fn every_path_of_the_bucket_sort_agrees_with_a_stable_sort() {
        let mut rng = rand_pcg::Pcg64::seed_from_u64(11);
        // Skewed: 80% of the keys share their top 12 bits, so one top bucket is far larger than
        // L2 and is split again in cache before its LSD passes or insertion sorts.
        let skewed: Vec<u128> = (0..400_000)
            .map(|_| {
                let low = rng.random::<u64>() as u128 & ((1 << 28) - 1);
                let top = if rng.random_bool(0.8) {
                    0xabc
                } else {
                    rng.random_range(0..1 << 12)
                };
                (top << 28) | low
            })
            .collect();
        check::<u64>(skewed, 40, 2);
        // Keys of one digit at parallel sizes; sequential sizes with many bits (MSD, insertion).
        let narrow: Vec<u128> = (0..100_000).map(|_| rng.random_range(0..256)).collect();
        check::<u32>(narrow, 8, 2);
        let wide: Vec<u128> = (0..20_000)
            .map(|_| rng.random::<u64>() as u128 >> 4)
            .collect();
        check::<u64>(wide, 60, 1);
        // Runs of equal keys inside the insertion-sorted runs (stability there).
        let pool: Vec<u128> = (0..3_000)
            .map(|_| rng.random::<u64>() as u128 >> 4)
            .collect();
        let repeated: Vec<u128> = (0..20_000)
            .map(|_| pool[rng.random_range(0..pool.len())])
            .collect();
        check::<u64>(repeated.clone(), 60, 1);
        check::<u64>(repeated.repeat(5), 60, 2);
        // Three balanced LSD passes (21 bits left under an 11-bit top digit).
        let lsd: Vec<u128> = (0..2_000_000)
            .map(|_| rng.random::<u32>() as u128)
            .collect();
        check::<u32>(lsd, 32, 2);
    }

    /// The fused sort-and-merge equals a stable sort followed by a left-to-right merge, with
    /// and without duplicates, on both paths (sequential sizes and the parallel buckets).
    #[test]
    fn sorted_merged_equals_stable_sort_then_merge() {
        fn want<I: AltoIndex>(pairs: &[(I, f64)]) -> SortedMerged<I> {
            let mut sorted = pairs.to_vec();
            sorted.sort_by_key(|p| p.0);
            let (mut idx, mut vals) = (Vec::<I>::new(), Vec::<f64>::new());
            for &(x, v) in &sorted {
                if idx.last() == Some(&x) {
                    *vals.last_mut().unwrap() += v;
                } else {
                    idx.push(x);
                    vals.push(v);
                }
            }
            let duplicates_merged = (pairs.len() - idx.len()) as u64;
            SortedMerged {
                idx,
                vals,
                duplicates_merged,
            }
        }
        let mut rng = rand_pcg::Pcg64::seed_from_u64(5);
        for (n, bits, dup, threads) in [
            (0usize, 20u32, 0.0, 1),
            (1_000, 20, 0.5, 1),
            (200_000, 30, 0.0, 2),
            (200_000, 30, 0.4, 2),
            (300_000, 40, 0.2, 3),
            (100_000, 12, 0.0, 2),
        ] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let mut keys: Vec<u64> = Vec::with_capacity(n);
            for k in 0..n {
                let fresh = rng.random::<u64>() & ((1u64 << bits) - 1);
                keys.push(if k > 0 && rng.random_bool(dup) {
                    keys[rng.random_range(0..k)]
                } else {
                    fresh
                });
            }
            // Values whose sum depends on the order they are added in.
            let pairs: Vec<(u64, f64)> = keys
                .iter()
                .enumerate()
                .map(|(k, &x)| (x, 1.0 / (1.0 + k as f64) + 1e16 * (k % 3) as f64))
                .collect();
            let got = pool.install(|| radix_sort_merged(pairs.as_slice(), bits));
            let expected = want(&pairs);
            assert_eq!(
                got.duplicates_merged, expected.duplicates_merged,
                "n {n} dup {dup}"
            );
            assert!(
                got == expected,
                "n {n}, {bits} bits, dup {dup}, {threads} threads"
            );
            let pairs32: Vec<(u32, f64)> = pairs
                .iter()
                .map(|&(x, v)| ((x & 0xffff_ffff) as u32, v))
                .collect();
            let got = pool.install(|| radix_sort_merged(pairs32.as_slice(), bits.min(32)));
            assert!(got == want(&pairs32), "u32: n {n}, dup {dup}");
        }
    }

    /// Pairs computed on the fly; `drift` makes the second pass differ from the first.
    struct Computed {
        n: usize,
        drift: bool,
        calls: std::sync::atomic::AtomicUsize,
    }

    impl PairSource<u64> for Computed {
        fn len(&self) -> usize {
            self.n
        }
        fn for_each_in(&self, range: Range<usize>, mut f: impl FnMut((u64, f64))) {
            let call = self
                .calls
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let shift = if self.drift && call > 0 { 7 } else { 0 };
            for k in range {
                let key = (k as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (24 + shift);
                f((key, k as f64));
            }
        }
    }

    #[test]
    fn a_computed_source_sorts_like_its_collected_pairs_and_drift_is_caught() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        for n in [1_000, 300_000] {
            let source = Computed {
                n,
                drift: false,
                calls: 0.into(),
            };
            let mut want = Vec::new();
            source.for_each_in(0..n, |p| want.push(p));
            want.sort_by_key(|p| p.0);
            assert_eq!(pool.install(|| radix_sort_from(&source, 40)), want);
        }
        // A source that yields other pairs the second time must stop the sort, not corrupt it.
        let drifting = Computed {
            n: 300_000,
            drift: true,
            calls: 0.into(),
        };
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            pool.install(|| radix_sort_from(&drifting, 40))
        }));
        assert!(result.is_err());
    }

    #[test]
    fn the_top_digit_grows_until_buckets_fit_and_few_bits_remain() {
        assert_eq!(top_digit_bits(2_000_000, 32, 2048, 24, 8, 12), 10);
        assert_eq!(top_digit_bits(70_000, 32, 2048, 24, 8, 12), 8);
        assert_eq!(top_digit_bits(1 << 40, 64, 2048, 24, 8, 12), 12);
        assert_eq!(top_digit_bits(2_000_000, 9, 2048, 24, 8, 12), 9);
        assert_eq!(top_digit_bits(2_000_000, 32, 4096, 24, 8, 12), 9);
        // 35-bit keys: 11 bits on top leave 24 for three LSD passes.
        assert_eq!(top_digit_bits(1_000_000, 35, 2048, 24, 8, 12), 11);
        assert_eq!(top_digit_bits(1_000_000, 36, 2048, 24, 8, 12), 12);
        assert_eq!(top_digit_bits(1_000_000, 51, 2048, 24, 8, 12), 9);
    }
}
