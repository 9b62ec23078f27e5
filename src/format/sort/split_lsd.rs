//! Finishing one top-digit bucket of the merging sort straight from and back into the split
//! index / value arrays: the first LSD pass reads the bucket where the scatter left it, the last
//! writes it sorted to its output slots, and equal indices are merged in place after. Against
//! gathering the bucket into pairs, sorting those and merging them back, this saves two of the
//! five passes over the bucket.

use super::{counts_to_slots, scatter_pass, LSD_DIGIT_BITS, LSD_MAX_BITS};
use alto_kernels::AltoIndex;

/// Sorts the bucket at `idx[from..from + len]` / `vals[from..from + len]` stably on key bits
/// `0..key_bits` (at most [`LSD_MAX_BITS`]) and writes it to the front of `idx` / `vals` with
/// equal indices summed left to right; returns how many entries it wrote. The slots before
/// `from` are free. `a` and `b` are scratch, grown as needed.
pub(super) fn sort_bucket_merged<I: AltoIndex>(
    idx: &mut [I],
    vals: &mut [f64],
    from: usize,
    len: usize,
    key_bits: u32,
    a: &mut Vec<(I, f64)>,
    b: &mut Vec<(I, f64)>,
) -> usize {
    const MAX_PASSES: usize = (LSD_MAX_BITS / LSD_DIGIT_BITS) as usize;
    assert!(
        key_bits <= LSD_MAX_BITS,
        "{key_bits} bits need more than {MAX_PASSES} passes"
    );
    let passes = key_bits.div_ceil(LSD_DIGIT_BITS).max(1);
    // As many count tables as passes, so a bucket clears no table it does not use.
    if passes <= 2 {
        sort_bucket_with::<I, 2>(idx, vals, from, len, key_bits, passes, a, b)
    } else {
        sort_bucket_with::<I, MAX_PASSES>(idx, vals, from, len, key_bits, passes, a, b)
    }
}

/// [`sort_bucket_merged`] in `passes` (at most `MAX_PASSES`) digits of equal width.
#[allow(clippy::too_many_arguments)]
fn sort_bucket_with<I: AltoIndex, const MAX_PASSES: usize>(
    idx: &mut [I],
    vals: &mut [f64],
    from: usize,
    len: usize,
    key_bits: u32,
    passes: u32,
    a: &mut Vec<(I, f64)>,
    b: &mut Vec<(I, f64)>,
) -> usize {
    const RADIX: usize = 1 << LSD_DIGIT_BITS;
    assert!(from + len <= idx.len() && from + len <= vals.len());
    assert!(len <= u32::MAX as usize, "counts are 32-bit");
    let width = key_bits.div_ceil(passes);
    assert!(passes as usize <= MAX_PASSES && 1usize << width <= RADIX);
    let mask = (1u32 << width) - 1;
    let bucket = from..from + len;
    // All digit histograms in one read of the indices.
    let mut hists = [[0u32; RADIX]; MAX_PASSES];
    for &x in &idx[bucket.clone()] {
        for (k, h) in hists.iter_mut().take(passes as usize).enumerate() {
            h[x.digit(k as u32 * width, mask)] += 1;
        }
    }
    // Only the passes where the keys differ move anything.
    let moving: Vec<usize> = (0..passes as usize)
        .filter(|&k| !hists[k][..1 << width].contains(&(len as u32)))
        .collect();
    if moving.is_empty() {
        // Already in order: merge it down to the front.
        return merge_down(idx, vals, bucket);
    }
    for &k in &moving {
        counts_to_slots(&mut hists[k][..1 << width]);
    }
    a.resize(len, (I::ZERO, 0.0));
    b.resize(len, (I::ZERO, 0.0));
    let (mut src, mut dst) = (&mut a[..len], &mut b[..len]);
    // First moving pass: from the split arrays into pairs.
    {
        let k = moving[0];
        let (h, shift) = (&mut hists[k], k as u32 * width);
        for (&x, &v) in idx[bucket.clone()].iter().zip(&vals[bucket]) {
            let slot = &mut h[x.digit(shift, mask)];
            // SAFETY: the slots come from this bucket's own digit counts, so each lands in
            // 0..len = src.len().
            unsafe { *src.get_unchecked_mut(*slot as usize) = (x, v) };
            *slot += 1;
        }
    }
    if moving.len() == 1 {
        // One pass only: its pairs merge into the output directly.
        return merge_pairs(src, idx, vals);
    }
    // Middle passes ping-pong between the pair buffers.
    for &k in &moving[1..moving.len() - 1] {
        // SAFETY: `hists[k]` holds the first slots of this pass's digit counts over the
        // bucket, which `src` holds reordered, and `dst` is as long as `src`.
        unsafe { scatter_pass(src, dst, &mut hists[k], k as u32 * width, mask) };
        std::mem::swap(&mut src, &mut dst);
    }
    // Last pass: into the output slots (`from` is read already, the slots before it free).
    let k = moving[moving.len() - 1];
    let (h, shift) = (&mut hists[k], k as u32 * width);
    let (out_idx, out_vals) = (&mut idx[..len], &mut vals[..len]);
    for &(x, v) in src.iter() {
        let slot = &mut h[x.digit(shift, mask)];
        let s = *slot as usize;
        // SAFETY: as in the first pass: every slot is below len, the length of both outputs.
        unsafe {
            *out_idx.get_unchecked_mut(s) = x;
            *out_vals.get_unchecked_mut(s) = v;
        }
        *slot += 1;
    }
    merge_down(idx, vals, 0..len)
}

/// Writes sorted `pairs` to the front of `idx` / `vals` with equal indices summed (left to
/// right); returns how many entries it wrote.
pub(super) fn merge_pairs<I: AltoIndex>(
    pairs: &[(I, f64)],
    idx: &mut [I],
    vals: &mut [f64],
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
        idx[out] = x;
        vals[out] = v;
        out += 1;
    }
    out
}

/// Moves the sorted entries of `range` to the front of `idx` / `vals` with equal indices
/// summed (left to right); returns how many entries it wrote. Every write goes at or below the
/// entry it comes from, so nothing unread is overwritten.
fn merge_down<I: AltoIndex>(
    idx: &mut [I],
    vals: &mut [f64],
    range: std::ops::Range<usize>,
) -> usize {
    let (from, end) = (range.start, range.end);
    // The common case, no duplicates, is one compare a pair and a block move.
    let first_dup = idx[from..end].windows(2).position(|w| w[0] == w[1]);
    let Some(first_dup) = first_dup else {
        if from > 0 {
            idx.copy_within(from..end, 0);
            vals.copy_within(from..end, 0);
        }
        return end - from;
    };
    let clean_end = from + first_dup;
    if from > 0 {
        idx.copy_within(from..clean_end, 0);
        vals.copy_within(from..clean_end, 0);
    }
    let mut out = first_dup;
    let mut i = clean_end;
    while i < end {
        let (x, mut v) = (idx[i], vals[i]);
        i += 1;
        while i < end && idx[i] == x {
            v += vals[i];
            i += 1;
        }
        idx[out] = x;
        vals[out] = v;
        out += 1;
    }
    out
}
