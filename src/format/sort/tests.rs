//! The sorts against a stable sort and a naive merge, across widths, sizes, paths and threads.

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
    // Two balanced 12-bit LSD passes: a 10-bit top digit, narrowed to 8 (256 occupied
    // buckets), leaves 24 bits.
    let lsd: Vec<u128> = (0..2_000_000)
        .map(|_| rng.random::<u32>() as u128)
        .collect();
    check::<u32>(lsd, 32, 2);
    // 43-bit keys (the darpa shape's 64-bit keys): 300k pairs get 8 bits on top and 35 left,
    // three 12-bit LSD passes over small buckets; 2M pairs get 10 on top, narrowed to 8, and
    // the same three passes over buckets of about 8k pairs.
    let wide_lsd: Vec<u128> = (0..300_000)
        .map(|_| rng.random::<u64>() as u128 >> 21)
        .collect();
    check::<u64>(wide_lsd, 43, 2);
    let three_pass: Vec<u128> = (0..2_000_000)
        .map(|_| rng.random::<u64>() as u128 >> 21)
        .collect();
    check::<u64>(three_pass, 43, 2);
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
    // The same through the merging sort, which scatters into its output arrays.
    let drifting = Computed {
        n: 300_000,
        drift: true,
        calls: 0.into(),
    };
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        pool.install(|| radix_sort_merged(&drifting, 40))
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
    // Two 11-bit passes (22 bits) out of reach under a 12-bit cap: the bucket target decides
    // (the uniform 4-D shape).
    assert_eq!(top_digit_bits(1_000_000, 35, 2048, 22, 8, 12), 9);
    assert_eq!(top_digit_bits(2_000_000, 32, 2048, 22, 8, 12), 10);
}

#[test]
fn the_top_digit_narrows_while_too_many_buckets_are_occupied_and_buckets_still_fit() {
    let narrow =
        |hist: &[usize], bits, key_bits| narrow_top_digit(hist, bits, key_bits, 256, 8, 16384, 36);
    // 1024 occupied buckets: down to 256.
    assert_eq!(narrow(&[1; 1024], 10, 32), 8);
    // Three of every four digits occupied (dims short of a power of two): 768, 384, 192.
    let three_of_four: Vec<usize> = (0..1024).map(|d| usize::from(d % 4 != 3)).collect();
    assert_eq!(narrow(&three_of_four, 10, 32), 8);
    // 45-bit keys: 9 bits on top leave 36 for LSD passes, 8 would leave 37.
    assert_eq!(narrow(&[1; 1024], 10, 45), 9);
    // Buckets that would outgrow the LSD size stop the narrowing.
    assert_eq!(narrow(&[10_000; 1024], 10, 32), 10);
    // Few occupied digits: nothing to narrow.
    let sparse: Vec<usize> = (0..1024).map(|d| usize::from(d < 200)).collect();
    assert_eq!(narrow(&sparse, 10, 32), 10);
    // Never below the minimum digit.
    assert_eq!(narrow(&[1; 256], 8, 32), 8);
    assert_eq!(narrow_top_digit(&[1; 512], 9, 32, 1, 8, 16384, 36), 8);
}

/// Groups cut the buckets into runs of about equal pairs, in order, empty ones allowed.
#[test]
fn bucket_groups_balance_pairs() {
    // Five buckets of 10, 0, 30, 20, 40 pairs.
    let starts = [0, 10, 10, 40, 60, 100];
    assert_eq!(bucket_groups(&starts, 1), vec![0, 5]);
    assert_eq!(bucket_groups(&starts, 2), vec![0, 4, 5]);
    // Each cut is the first bucket starting at or after its share (25, 50, 75 pairs).
    assert_eq!(bucket_groups(&starts, 4), vec![0, 3, 4, 5, 5]);
    // More groups than buckets: the extra ones are empty.
    assert_eq!(bucket_groups(&[0, 7, 9], 4), vec![0, 1, 1, 1, 2]);
}

/// A bucket finished from and into the split arrays equals a stable sort and merge of it,
/// whether no pass, one, two or three passes move it, with duplicates or none, and with free
/// slots before it or none.
#[test]
fn split_bucket_sort_merges_like_a_stable_sort() {
    let mut rng = rand_pcg::Pcg64::seed_from_u64(21);
    let (mut a, mut b) = (Vec::new(), Vec::new());
    // (key bits, how many distinct keys: 0 for fresh random keys)
    for (bits, distinct) in [
        (12u32, 0usize),
        (24, 0),
        (24, 50),
        (36, 0),
        (36, 300),
        (20, 1),
    ] {
        for from in [0usize, 1, 700] {
            let len = 3000;
            let pool: Vec<u64> = (0..distinct.max(1))
                .map(|_| rng.random::<u64>() & ((1u64 << bits) - 1))
                .collect();
            let keys: Vec<u64> = (0..len)
                .map(|_| match distinct {
                    0 => rng.random::<u64>() & ((1u64 << bits) - 1),
                    d => pool[rng.random_range(0..d)],
                })
                .collect();
            let vals: Vec<f64> = (0..len)
                .map(|k| 1.0 / (1.0 + k as f64) + 1e16 * (k % 3) as f64)
                .collect();
            let mut want: Vec<(u64, f64)> =
                keys.iter().copied().zip(vals.iter().copied()).collect();
            want.sort_by_key(|p| p.0);
            let mut merged: Vec<(u64, f64)> = Vec::new();
            for (x, v) in want {
                match merged.last_mut() {
                    Some(last) if last.0 == x => last.1 += v,
                    _ => merged.push((x, v)),
                }
            }
            let mut idx = vec![u64::MAX; from];
            idx.extend(&keys);
            let mut vs = vec![f64::NAN; from];
            vs.extend(&vals);
            let wrote =
                split_lsd::sort_bucket_merged(&mut idx, &mut vs, from, len, bits, &mut a, &mut b);
            let got: Vec<(u64, f64)> = idx[..wrote]
                .iter()
                .copied()
                .zip(vs[..wrote].iter().copied())
                .collect();
            assert!(
                got == merged,
                "{bits} bits, {distinct} distinct, from {from}"
            );
        }
    }
}

#[test]
fn a_parallel_move_down_matches_copy_within() {
    for threads in [1, 2, 3] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        // Blocks of 32768 with a short last one (shorter than the shift), shifts within a
        // block, one too large for the blocked move, no shift, and a move too short to split.
        for (len, shift) in [
            (65_636, 1_000),
            (65_636, 0),
            (200_000, 4_095),
            (200_000, 30_000),
            (100, 7),
        ] {
            let to = 13;
            let from = to + shift;
            let data: Vec<u64> = (0..(from + len + 5) as u64)
                .map(|k| k.wrapping_mul(0x9e37_79b9_7f4a_7c15))
                .collect();
            let mut want = data.clone();
            want.copy_within(from..from + len, to);
            let mut got = data.clone();
            pool.install(|| move_down(&mut got, from, to, len));
            assert!(
                got[..to + len] == want[..to + len] && got[from + len..] == data[from + len..],
                "{threads} threads, len {len}, shift {shift}"
            );
        }
    }
}
