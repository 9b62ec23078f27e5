//! Sorting (index, value) pairs along the ALTO line: a parallel LSD radix sort over the `B`
//! index bits, 8 bits a pass, skipping passes where every key has the same digit. Sorting
//! dominates format construction; the comparison sort is kept for the construction benchmark.

use alto_kernels::AltoIndex;
use rayon::prelude::*;

const DIGIT_BITS: u32 = 8;
const BUCKETS: usize = 1 << DIGIT_BITS;
/// Below this many pairs a sequential sort is faster than setting up parallel passes.
const PARALLEL_MIN: usize = 1 << 16;
/// Buckets up to this many pairs are finished with LSD passes (256 KiB of 16-byte pairs, so
/// the passes run in L2); larger ones get another MSD split first.
const LSD_MAX: usize = 1 << 14;

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

/// Sorts `pairs` by index, considering only the low `key_bits` bits (higher bits must be zero).
/// Stable. Runs on the current rayon pool.
///
/// One parallel MSD pass on the top 8 key bits splits the data into 256 buckets; each bucket is
/// then finished independently, buckets in parallel: split again on the next 8 bits while it
/// is larger than L2 ([`LSD_MAX`]), then LSD passes on the remaining bits in cache.
pub fn radix_sort_pairs<I: AltoIndex>(pairs: &mut Vec<(I, f64)>, key_bits: u32) {
    let n = pairs.len();
    if n < PARALLEL_MIN || key_bits <= DIGIT_BITS {
        pairs.sort_by_key(|p| p.0);
        return;
    }
    let top_shift = key_bits - DIGIT_BITS;
    let mask = (BUCKETS - 1) as u32;
    let chunk_len = n.div_ceil(rayon::current_num_threads().max(1));
    let mut out: Vec<(I, f64)> = Vec::with_capacity(n);
    out.par_extend(
        (0..n)
            .into_par_iter()
            .with_min_len(1 << 16)
            .map(|_| (I::ZERO, 0.0)),
    );

    // MSD pass: per-chunk histograms, then a stable parallel scatter.
    let hists: Vec<[usize; BUCKETS]> = pairs
        .par_chunks(chunk_len)
        .map(|c| {
            let mut h = [0usize; BUCKETS];
            for p in c {
                h[p.0.digit(top_shift, mask)] += 1;
            }
            h
        })
        .collect();
    let mut offsets = vec![[0usize; BUCKETS]; hists.len()];
    let mut bucket_start = [0usize; BUCKETS + 1];
    let mut running = 0;
    for d in 0..BUCKETS {
        bucket_start[d] = running;
        for (c, h) in hists.iter().enumerate() {
            offsets[c][d] = running;
            running += h[d];
        }
    }
    bucket_start[BUCKETS] = n;
    let dst = SharedOut(out.as_mut_ptr());
    pairs
        .par_chunks(chunk_len)
        .zip(offsets.par_iter_mut())
        .for_each(|(c, off)| {
            for &p in c {
                let d = p.0.digit(top_shift, mask);
                // SAFETY: `off[d]` walks the range reserved for (this chunk, digit d), which no
                // other chunk or digit shares, and the ranges tile 0..n (= out.len()).
                unsafe { dst.ptr().add(off[d]).write(p) };
                off[d] += 1;
            }
        });

    // Finish every bucket with LSD passes on the low bits, `pairs` serving as scratch.
    let mut buckets_out: Vec<&mut [(I, f64)]> = Vec::with_capacity(BUCKETS);
    let mut buckets_tmp: Vec<&mut [(I, f64)]> = Vec::with_capacity(BUCKETS);
    let (mut rest_out, mut rest_tmp) = (&mut out[..], &mut pairs[..]);
    for d in 0..BUCKETS {
        let len = bucket_start[d + 1] - bucket_start[d];
        let (a, r) = std::mem::take(&mut rest_out).split_at_mut(len);
        let (b, t) = std::mem::take(&mut rest_tmp).split_at_mut(len);
        (rest_out, rest_tmp) = (r, t);
        buckets_out.push(a);
        buckets_tmp.push(b);
    }
    buckets_out
        .into_par_iter()
        .zip(buckets_tmp.into_par_iter())
        .for_each(|(data, tmp)| sort_bucket(data, tmp, top_shift));
    *pairs = out;
}

/// Stable sort of `data` on key bits `0..key_bits` using `tmp` (same length) as scratch; the
/// result ends in `data`. MSD splits until a bucket fits in cache, then LSD.
fn sort_bucket<I: AltoIndex>(data: &mut [(I, f64)], tmp: &mut [(I, f64)], key_bits: u32) {
    let n = data.len();
    if n <= LSD_MAX || key_bits <= DIGIT_BITS {
        lsd_in_place(data, tmp, key_bits);
        return;
    }
    let shift = key_bits - DIGIT_BITS;
    let mask = (BUCKETS - 1) as u32;
    let mut h = [0usize; BUCKETS];
    for p in data.iter() {
        h[p.0.digit(shift, mask)] += 1;
    }
    if h.contains(&n) {
        // One digit for every key: nothing moves at this level.
        sort_bucket(data, tmp, shift);
        return;
    }
    let mut off = [0usize; BUCKETS];
    let mut running = 0;
    for d in 0..BUCKETS {
        off[d] = running;
        running += h[d];
    }
    for &p in data.iter() {
        let d = p.0.digit(shift, mask);
        tmp[off[d]] = p;
        off[d] += 1;
    }
    // Each sub-bucket now sits in `tmp`: sort it there (with its `data` range as scratch) and
    // copy it home while it is still in cache.
    let mut start = 0;
    for &len in &h {
        if len > 0 {
            let (src, dst) = (&mut tmp[start..start + len], &mut data[start..start + len]);
            sort_bucket(src, dst, shift);
            dst.copy_from_slice(src);
        }
        start += len;
    }
}

/// Stable LSD radix sort of `data` on key bits `0..key_bits`, using `tmp` (same length) as the
/// ping-pong buffer; the result ends in `data`.
fn lsd_in_place<I: AltoIndex>(data: &mut [(I, f64)], tmp: &mut [(I, f64)], key_bits: u32) {
    if data.len() <= 64 {
        data.sort_by_key(|p| p.0);
        return;
    }
    let mask = (BUCKETS - 1) as u32;
    let passes = key_bits.div_ceil(DIGIT_BITS) as usize;
    // All digit histograms in one read.
    let mut hists = vec![[0usize; BUCKETS]; passes];
    for p in data.iter() {
        for (k, h) in hists.iter_mut().enumerate() {
            h[p.0.digit(k as u32 * DIGIT_BITS, mask)] += 1;
        }
    }
    let (mut src, mut dst) = (data, tmp);
    let mut in_tmp = false;
    for (k, h) in hists.iter().enumerate() {
        if h.contains(&src.len()) {
            continue; // every key has the same digit here: nothing moves
        }
        let mut off = [0usize; BUCKETS];
        let mut running = 0;
        for d in 0..BUCKETS {
            off[d] = running;
            running += h[d];
        }
        let shift = k as u32 * DIGIT_BITS;
        for &p in src.iter() {
            let d = p.0.digit(shift, mask);
            dst[off[d]] = p;
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
}
