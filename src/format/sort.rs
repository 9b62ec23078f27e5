//! Sorting (index, value) pairs along the ALTO line: a parallel LSD radix sort over the `B`
//! index bits, 8 bits a pass, skipping passes where every key has the same digit. Sorting
//! dominates format construction; the comparison sort is kept for the construction benchmark.

use alto_kernels::AltoIndex;
use rayon::prelude::*;

const DIGIT_BITS: u32 = 8;
const BUCKETS: usize = 1 << DIGIT_BITS;
/// Below this many pairs a sequential sort is faster than setting up parallel passes.
const PARALLEL_MIN: usize = 1 << 16;

/// A raw pointer that may cross threads: each thread writes a disjoint set of slots.
#[derive(Clone, Copy)]
struct SharedOut<T>(*mut T);
// SAFETY: used only to write disjoint slots from different threads (see the scatter below).
unsafe impl<T: Send> Send for SharedOut<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for SharedOut<T> {}

/// Sorts `pairs` by index, considering only the low `key_bits` bits (higher bits must be zero).
/// Stable. Runs on the current rayon pool.
pub fn radix_sort_pairs<I: AltoIndex>(pairs: &mut Vec<(I, f64)>, key_bits: u32) {
    let n = pairs.len();
    if n < PARALLEL_MIN {
        pairs.sort_by_key(|p| p.0);
        return;
    }
    let chunks = (rayon::current_num_threads() * 4).max(1);
    let chunk_len = n.div_ceil(chunks);
    let mut other: Vec<(I, f64)> = Vec::with_capacity(n);
    other.par_extend((0..n).into_par_iter().map(|_| (I::ZERO, 0.0)));
    let (mut src, mut dst) = (std::mem::take(pairs), other);
    let mask = (BUCKETS - 1) as u32;
    let mut shift = 0;
    while shift < key_bits {
        let hists: Vec<[usize; BUCKETS]> = src
            .par_chunks(chunk_len)
            .map(|c| {
                let mut h = [0usize; BUCKETS];
                for p in c {
                    h[p.0.digit(shift, mask)] += 1;
                }
                h
            })
            .collect();
        let mut totals = [0usize; BUCKETS];
        for h in &hists {
            for (t, x) in totals.iter_mut().zip(h) {
                *t += x;
            }
        }
        if totals.contains(&n) {
            shift += DIGIT_BITS; // every key has the same digit: nothing moves
            continue;
        }
        // offsets[c][d]: where chunk c's first key with digit d goes.
        let mut offsets = vec![[0usize; BUCKETS]; hists.len()];
        let mut running = 0;
        for d in 0..BUCKETS {
            for (c, h) in hists.iter().enumerate() {
                offsets[c][d] = running;
                running += h[d];
            }
        }
        let out = SharedOut(dst.as_mut_ptr());
        src.par_chunks(chunk_len)
            .zip(offsets.par_iter_mut())
            .for_each(|(c, off)| {
                let out = out;
                for &p in c {
                    let d = p.0.digit(shift, mask);
                    // SAFETY: `off[d]` walks the range reserved for (this chunk, digit d), which no
                    // other chunk or digit shares, and the ranges tile 0..n (= dst.len()).
                    unsafe { out.0.add(off[d]).write(p) };
                    off[d] += 1;
                }
            });
        std::mem::swap(&mut src, &mut dst);
        shift += DIGIT_BITS;
    }
    *pairs = src;
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
