//! Sorting (index, value) pairs along the ALTO line: a parallel radix sort over the `B` index
//! bits. Sorting dominates format construction; the comparison sort is kept for the
//! construction benchmark.
//!
//! The shape follows where the time goes when the pairs do not fit in cache: one histogram
//! read and one scatter touch the whole array. The scatter is on the top 8-12 bits, chosen so
//! the average bucket is small and few bits remain below, then narrowed while more than
//! [`SCATTER_BUCKETS_MAX`] buckets are occupied (each is a write stream); buckets then finish in
//! parallel while cache resident, against a per-worker scratch buffer that stays hot: LSD passes
//! of up to 12-bit digits when at most 36 bits remain (two passes up to 24 bits, which the top
//! digit aims for), one more MSD digit (then LSD or insertion sort) when more do. (Advising the
//! scatter's fresh destination onto transparent huge pages was measured and left out: 5% faster
//! on the median, with occasional 20-60 ms stalls in kernel compaction.)
//!
//! The input is a [`PairSource`], read twice in order (once to count top digits, once to
//! scatter): the format builder passes its encoded keys beside the tensor's values, so the
//! unsorted pairs are never stored as pairs; [`radix_sort_pairs`] sorts a stored vector the same
//! way.

use crate::memory::populate_spare_capacity;
use alto_kernels::AltoIndex;
use rayon::prelude::*;
use split_lsd::merge_pairs;
use std::ops::Range;

mod scatter;
mod split_lsd;
mod top_digit;

use scatter::{scatter_top_digit, PairSink, SharedOut, SplitSink};
pub use top_digit::{narrow_top_digit, top_digit_bits};

/// Below this many pairs a sequential sort is faster than setting up parallel passes.
const PARALLEL_MIN: usize = 1 << 16;
/// The top digit gets enough bits (within [`TOP_BITS_MIN`]..=[`TOP_BITS_MAX`]) that the average
/// bucket holds at most this many pairs (32 KiB of 16-byte pairs: L1 with its scratch), and
/// that at most [`TOP_REST_BITS`] remain below it where the cap allows.
const BUCKET_TARGET: usize = 2048;
const TOP_BITS_MIN: u32 = 8;
/// More buckets than this and the scatter's write frontier no longer fits in L2.
const TOP_BITS_MAX: u32 = 12;
/// Digit width of the MSD splits (the in-cache split of a bucket too large or wide for LSD).
const DIGIT_BITS: u32 = 8;
/// Buckets up to this many pairs are finished with LSD passes (256 KiB of 16-byte pairs, so
/// they run in L2); larger ones get another MSD split first.
const LSD_MAX_LEN: usize = 1 << 14;
/// Widest LSD digit: 4096 32-bit counts (16 KiB) per pass. Two passes finish the 23-24 bits
/// that the narrowed scatter leaves (where 11-bit digits took three), and three finish darpa's
/// 35 (repeated builds, sort phase medians at 1 thread, with the narrowing: skewed 3-D 23.0 ->
/// 19.2 ms, darpa 40.7 -> 37.8; nell-2 and uniform 4-D within noise).
const LSD_DIGIT_BITS: u32 = 12;
/// Buckets up to [`LSD_MAX_LEN`] with at most this many key bits left get LSD passes (three of
/// up to [`LSD_DIGIT_BITS`]: 64-bit keys of long modes, such as darpa's 35 bits below an 8-bit
/// top digit); with more left, one MSD digit first.
const LSD_MAX_BITS: u32 = 3 * LSD_DIGIT_BITS;
/// The top digit grows (up to [`TOP_BITS_MAX`]) to leave at most this many bits: two LSD passes.
const TOP_REST_BITS: u32 = 2 * LSD_DIGIT_BITS;
/// Runs this short are insertion sorted.
const INSERTION_MAX: usize = 48;
/// The scatter narrows its digit while more top-digit buckets than this are occupied and the
/// buckets still finish with LSD passes: each occupied bucket is a write stream in every output
/// array, and their lines and pages fall out of L1 and its TLB as they multiply (a scatter of 2M
/// random 32-bit keys and their values: 2.4 ns a pair into 256 buckets, 3.9 into 512, 7.4 into
/// 1024). Repeated builds, sort phase medians at 1 thread, against 512: darpa 38.7 -> 24.4 ms
/// (205 buckets instead of 817), the other shapes within noise.
const SCATTER_BUCKETS_MAX: usize = 256;

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
    let mut pairs: Vec<(I, f64)> = Vec::with_capacity(n);
    populate_spare_capacity(&mut pairs);
    let sink = PairSink {
        pairs: SharedOut(pairs.as_mut_ptr()),
        len: n,
    };
    let (bucket_start, top_shift) = scatter_top_digit(source, key_bits, &sink);
    // SAFETY: the scatter wrote every slot of 0..n (it checks that each (chunk, digit) range
    // was filled exactly before it returns).
    unsafe { pairs.set_len(n) };
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
/// bucket, sorted in cache, is merged and written straight to the output just after the
/// previous bucket of its worker's group, which saves the separate merge's two passes over the
/// sorted pairs. Where duplicates leave gaps between the groups, one compaction pass closes
/// them (there is one group at one thread).
pub fn radix_sort_merged<I: AltoIndex, S: PairSource<I> + ?Sized>(
    source: &S,
    key_bits: u32,
) -> SortedMerged<I> {
    let n = source.len();
    let mut idx: Vec<I> = Vec::with_capacity(n);
    let mut vals: Vec<f64> = Vec::with_capacity(n);
    let (starts, emitted): (Vec<usize>, Vec<usize>) = if n < PARALLEL_MIN || key_bits <= DIGIT_BITS
    {
        let mut pairs = Vec::with_capacity(n);
        source.for_each_in(0..n, |p| pairs.push(p));
        sort_in_cache(&mut pairs, &mut Vec::new(), key_bits);
        idx.resize(n, I::ZERO);
        vals.resize(n, 0.0);
        let emitted = merge_pairs(&pairs, &mut idx, &mut vals);
        (vec![0], vec![emitted])
    } else {
        // The scatter writes indices and values straight into the output arrays (12 or 16
        // bytes a pair where a pair array takes 16 or 32, and no second fresh buffer to fault
        // in); each bucket is then sorted while cache resident, its first LSD pass reading it
        // from there into a per-worker scratch and its last writing it back over its own slots
        // (`split_lsd`), and merged in place. (Buckets for insertion or MSD sorts are gathered
        // into the scratch, sorted there and merged back.)
        rayon::join(
            || populate_spare_capacity(&mut idx),
            || populate_spare_capacity(&mut vals),
        );
        let sink = SplitSink {
            idx: SharedOut(idx.as_mut_ptr()),
            vals: SharedOut(vals.as_mut_ptr()),
            len: n,
        };
        let (bucket_start, top_shift) = scatter_top_digit(source, key_bits, &sink);
        // SAFETY: the scatter wrote every slot of 0..n of both arrays (it checks that each
        // (chunk, digit) range was filled exactly before it returns).
        unsafe {
            idx.set_len(n);
            vals.set_len(n);
        }
        // One group of consecutive buckets per worker, of about equal pairs; each group
        // finishes its buckets in order, merging each to just after the last, so merged
        // duplicates leave one gap per group, not one per bucket.
        let groups = bucket_groups(&bucket_start, rayon::current_num_threads());
        let group_start: Vec<usize> = groups.iter().map(|&b| bucket_start[b]).collect();
        let idx_parts = split_by_starts(&mut idx, &group_start);
        let val_parts = split_by_starts(&mut vals, &group_start);
        let emitted = idx_parts
            .into_par_iter()
            .zip(val_parts)
            .zip(groups.par_windows(2))
            .map(|((idx_part, val_part), g)| {
                let (mut pairs, mut tmp) = (Vec::new(), Vec::new());
                let base = bucket_start[g[0]];
                let mut out = 0;
                for b in g[0]..g[1] {
                    let bucket = bucket_start[b] - base..bucket_start[b + 1] - base;
                    if bucket.len() > INSERTION_MAX
                        && bucket.len() <= LSD_MAX_LEN
                        && (1..=LSD_MAX_BITS).contains(&top_shift)
                    {
                        // Straight from the split arrays and back (`out` is at most the
                        // bucket's start: the slots between are free).
                        out += split_lsd::sort_bucket_merged(
                            &mut idx_part[out..],
                            &mut val_part[out..],
                            bucket.start - out,
                            bucket.len(),
                            top_shift,
                            &mut pairs,
                            &mut tmp,
                        );
                        continue;
                    }
                    pairs.clear();
                    pairs.extend(
                        idx_part[bucket.clone()]
                            .iter()
                            .copied()
                            .zip(val_part[bucket].iter().copied()),
                    );
                    tmp.resize(pairs.len(), (I::ZERO, 0.0));
                    let sorted = sort_either(&mut pairs, &mut tmp, top_shift);
                    // The bucket is in `pairs` now, and `out` is at most its start: merging
                    // over its own slots and the gap before them overwrites nothing unread.
                    out += merge_pairs(sorted, &mut idx_part[out..], &mut val_part[out..]);
                }
                out
            })
            .collect();
        (group_start[..group_start.len() - 1].to_vec(), emitted)
    };
    // Close the gaps merged duplicates left (left to right: every move goes down).
    let mut total = 0;
    for (&start, &len) in starts.iter().zip(&emitted) {
        if start != total {
            rayon::join(
                || move_down(&mut idx, start, total, len),
                || move_down(&mut vals, start, total, len),
            );
        }
        total += len;
    }
    idx.truncate(total);
    vals.truncate(total);
    SortedMerged {
        idx,
        vals,
        duplicates_merged: (n - total) as u64,
    }
}

/// Moves `data[from..from + len]` down to `to` (`to <= from`), in parallel blocks where it is
/// long: each block first keeps its first `from - to` items aside and shifts the rest within
/// itself, then every block's kept items go to the slots just below it, which its lower
/// neighbour's shift (or the gap, for the first) has freed.
fn move_down<T: Copy + Send + Sync>(data: &mut [T], from: usize, to: usize, len: usize) {
    assert!(
        to <= from && from + len <= data.len(),
        "a move down inside the data"
    );
    let shift = from - to;
    // One thread: one block as long as the move, which takes the plain path.
    let block = len
        .div_ceil(rayon::current_num_threads())
        .max(MOVE_BLOCK_MIN);
    if shift == 0 || len <= block || shift > block / 8 {
        data.copy_within(from..from + len, to);
        return;
    }
    let kept: Vec<Vec<T>> = data[from..from + len]
        .par_chunks_mut(block)
        .map(|b| {
            let head = b[..shift.min(b.len())].to_vec();
            b.copy_within(shift.min(b.len()).., 0);
            head
        })
        .collect();
    data[to..to + len]
        .par_chunks_mut(block)
        .zip(kept)
        .for_each(|(b, head)| b[..head.len()].copy_from_slice(&head));
}

/// Below this many items per thread a move down runs on one thread.
const MOVE_BLOCK_MIN: usize = 1 << 15;

/// Bucket indices cutting the buckets (`bucket_start`: ascending pair offsets, the last the
/// total) into `groups` runs of consecutive buckets with about equal pairs: `groups + 1`
/// ascending indices, the first 0 and the last the bucket count.
fn bucket_groups(bucket_start: &[usize], groups: usize) -> Vec<usize> {
    let buckets = bucket_start.len() - 1;
    let n = bucket_start[buckets];
    let groups = groups.max(1);
    let mut cuts = vec![0];
    for g in 1..groups {
        let target = n * g / groups;
        let b = bucket_start.partition_point(|&s| s < target).min(buckets);
        cuts.push(b.max(*cuts.last().expect("starts with 0")));
    }
    cuts.push(buckets);
    cuts
}

/// Sorted, duplicate-free indices and their summed values ([`radix_sort_merged`]).
#[derive(Debug, PartialEq)]
pub struct SortedMerged<I> {
    pub idx: Vec<I>,
    pub vals: Vec<f64>,
    /// Input pairs merged into an earlier pair of the same index.
    pub duplicates_merged: u64,
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
    if sort_with_scratch(data, tmp, key_bits) {
        data.copy_from_slice(tmp);
    }
}

/// Stable sort of `data` on key bits `0..key_bits` with `tmp` (same length) as scratch;
/// returns the sorted pairs, in whichever of the two they ended (a caller that only reads them
/// saves the copy home).
fn sort_either<'a, I: AltoIndex>(
    data: &'a mut [(I, f64)],
    tmp: &'a mut [(I, f64)],
    key_bits: u32,
) -> &'a [(I, f64)] {
    if sort_with_scratch(data, tmp, key_bits) {
        tmp
    } else {
        data
    }
}

/// Stable sort of `data` on key bits `0..key_bits` using `tmp` (same length) as scratch; true
/// when the result ended in `tmp`, false when in `data`. MSD splits while a bucket is larger
/// than L2 or has many bits left, then LSD passes.
fn sort_with_scratch<I: AltoIndex>(
    data: &mut [(I, f64)],
    tmp: &mut [(I, f64)],
    key_bits: u32,
) -> bool {
    let n = data.len();
    assert_eq!(n, tmp.len(), "scratch must match the data");
    if n <= INSERTION_MAX {
        insertion_sort(data);
        return false;
    }
    if key_bits == 0 {
        return false;
    }
    if (n <= LSD_MAX_LEN && key_bits <= LSD_MAX_BITS) || key_bits <= DIGIT_BITS {
        return lsd_passes(data, tmp, key_bits);
    }
    let shift = key_bits - DIGIT_BITS;
    let mask = (1u32 << DIGIT_BITS) - 1;
    let mut h = [0usize; 1 << DIGIT_BITS];
    for p in data.iter() {
        h[p.0.digit(shift, mask)] += 1;
    }
    if h.contains(&n) {
        // One digit for every key: nothing moves at this level.
        return sort_with_scratch(data, tmp, shift);
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
    // bring it home, if it did not end there, while it is still in cache.
    let mut start = 0;
    for &len in &h {
        if len > 0 {
            let (src, dst) = (&mut tmp[start..start + len], &mut data[start..start + len]);
            if !sort_with_scratch(src, dst, shift) {
                dst.copy_from_slice(src);
            }
        }
        start += len;
    }
    false
}

/// Stable LSD radix sort of `data` on key bits `0..key_bits` (at most [`LSD_MAX_BITS`]), in
/// the fewest passes of equal width up to [`LSD_DIGIT_BITS`], `tmp` (same length) the ping-pong
/// buffer; true when the result ended in `tmp` (an odd number of passes moved it).
fn lsd_passes<I: AltoIndex>(data: &mut [(I, f64)], tmp: &mut [(I, f64)], key_bits: u32) -> bool {
    const MAX_PASSES: usize = (LSD_MAX_BITS / LSD_DIGIT_BITS) as usize;
    let passes = key_bits.div_ceil(LSD_DIGIT_BITS).max(1);
    // As many count tables as passes, so a bucket clears no table it does not use (each call
    // clears its tables on the stack).
    if key_bits <= DIGIT_BITS {
        lsd_passes_of::<I, { 1 << DIGIT_BITS }, 1>(data, tmp, key_bits, passes)
    } else if passes <= 2 {
        lsd_passes_of::<I, { 1 << LSD_DIGIT_BITS }, 2>(data, tmp, key_bits, passes)
    } else {
        lsd_passes_of::<I, { 1 << LSD_DIGIT_BITS }, MAX_PASSES>(data, tmp, key_bits, passes)
    }
}

/// [`lsd_passes`] in `passes` (at most `MAX_PASSES`) passes of digits below `RADIX`.
fn lsd_passes_of<I: AltoIndex, const RADIX: usize, const MAX_PASSES: usize>(
    data: &mut [(I, f64)],
    tmp: &mut [(I, f64)],
    key_bits: u32,
    passes: u32,
) -> bool {
    assert_eq!(data.len(), tmp.len(), "scratch must match the data");
    assert!(data.len() <= u32::MAX as usize, "counts are 32-bit");
    let width = key_bits.div_ceil(passes);
    assert!(
        passes as usize <= MAX_PASSES && 1usize << width <= RADIX,
        "{key_bits} bits do not fit {passes} passes of radix {RADIX}"
    );
    let mask = (1u32 << width) - 1;
    // All digit histograms in one read.
    let mut hists = [[0u32; RADIX]; MAX_PASSES];
    for p in data.iter() {
        for (k, h) in hists.iter_mut().take(passes as usize).enumerate() {
            h[p.0.digit(k as u32 * width, mask)] += 1;
        }
    }
    let n = data.len();
    let (mut src, mut dst) = (data, tmp);
    let mut in_tmp = false;
    for (k, h) in hists.iter_mut().take(passes as usize).enumerate() {
        let h = &mut h[..1 << width];
        if h.contains(&(n as u32)) {
            continue; // every key has the same digit here: nothing moves
        }
        counts_to_slots(h);
        // SAFETY: `h` holds the first slots of this pass's digit counts over `src`, and
        // `dst` is as long as `src`.
        unsafe { scatter_pass(src, dst, h, k as u32 * width, mask) };
        std::mem::swap(&mut src, &mut dst);
        in_tmp = !in_tmp;
    }
    in_tmp
}

/// The counts become each digit's first slot, in place (an exclusive prefix sum).
fn counts_to_slots(counts: &mut [u32]) {
    let mut running = 0;
    for c in counts.iter_mut() {
        let count = *c;
        *c = running;
        running += count;
    }
}

/// One stable LSD pass: each pair of `src`, in order, to the next slot of its digit (at
/// `shift`, under `mask`) in `dst`.
///
/// # Safety
/// `slots` holds the first slots ([`counts_to_slots`]) of the digit counts of `src` itself,
/// and `dst` is at least as long as `src`: then every slot written is below `src.len()`.
#[inline(always)]
unsafe fn scatter_pass<I: AltoIndex>(
    src: &[(I, f64)],
    dst: &mut [(I, f64)],
    slots: &mut [u32],
    shift: u32,
    mask: u32,
) {
    for &p in src {
        let slot = &mut slots[p.0.digit(shift, mask)];
        // SAFETY: the caller's slots come from `src`'s own digit counts, so each lands in
        // 0..src.len(), within `dst`.
        unsafe { *dst.get_unchecked_mut(*slot as usize) = p };
        *slot += 1;
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
mod tests;
