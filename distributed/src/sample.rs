//! The pure steps of the distributed sample sort on the linearized index: regular samples of
//! each rank's sorted keys, splitters from all ranks' samples, buckets, duplicate merging.
//! Equal keys always land in the same bucket, so duplicates meet on one rank.

/// `count` evenly spaced keys of the sorted `keys` (none when `keys` is empty).
pub fn regular_samples(keys: &[u128], count: usize) -> Vec<u128> {
    if keys.is_empty() {
        return Vec::new();
    }
    (1..=count)
        .map(|i| keys[(i * keys.len() / (count + 1)).min(keys.len() - 1)])
        .collect()
}

/// `parts - 1` splitters from the gathered samples: bucket q holds the keys `k` with
/// `splitter[q - 1] < k <= splitter[q]`. With no samples every key goes to bucket 0.
pub fn choose_splitters(mut samples: Vec<u128>, parts: usize) -> Vec<u128> {
    if samples.is_empty() {
        return vec![u128::MAX; parts.saturating_sub(1)];
    }
    samples.sort_unstable();
    (1..parts)
        .map(|q| samples[(q * samples.len() / parts).min(samples.len() - 1)])
        .collect()
}

/// How many of the sorted `keys` fall into each bucket of `splitters`.
pub fn bucket_counts(keys: &[u128], splitters: &[u128]) -> Vec<usize> {
    let mut counts = Vec::with_capacity(splitters.len() + 1);
    let mut start = 0;
    for &s in splitters {
        let end = start + keys[start..].partition_point(|&k| k <= s);
        counts.push(end - start);
        start = end;
    }
    counts.push(keys.len() - start);
    counts
}

/// Sorts `(keys, vals)` by key and sums the values of equal keys; returns how many nonzeros
/// were merged away.
pub fn sort_and_merge(keys: &mut Vec<u128>, vals: &mut Vec<f64>) -> u64 {
    let mut pairs: Vec<(u128, f64)> = keys.iter().copied().zip(vals.iter().copied()).collect();
    // Stable, so merged duplicates sum in arrival order: the result does not depend on the
    // sort's internals.
    pairs.sort_by_key(|p| p.0);
    let before = pairs.len();
    keys.clear();
    vals.clear();
    for (k, v) in pairs {
        if keys.last() == Some(&k) {
            *vals.last_mut().expect("one value per key") += v;
        } else {
            keys.push(k);
            vals.push(v);
        }
    }
    (before - keys.len()) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_split_at_splitters_and_keep_equal_keys_together() {
        let keys = [1u128, 3, 3, 3, 7, 9, 12];
        assert_eq!(bucket_counts(&keys, &[3, 9]), [4, 2, 1]);
        assert_eq!(bucket_counts(&keys, &[0, 100]), [0, 7, 0]);
        assert_eq!(bucket_counts(&[], &[5]), [0, 0]);
    }

    #[test]
    fn samples_and_splitters_are_drawn_from_the_keys() {
        let keys: Vec<u128> = (0..100).map(|x| x * 2).collect();
        let s = regular_samples(&keys, 3);
        assert_eq!(s, [50, 100, 150]);
        assert!(regular_samples(&[], 3).is_empty());
        let sp = choose_splitters(vec![9, 1, 5, 3, 7, 11], 3);
        assert_eq!(sp, [5, 9]);
        assert_eq!(choose_splitters(vec![], 3), [u128::MAX, u128::MAX]);
        let counts = bucket_counts(&keys, &sp);
        assert_eq!(counts.iter().sum::<usize>(), keys.len());
    }

    #[test]
    fn merging_sums_duplicates() {
        let mut k = vec![5u128, 1, 5, 2, 1];
        let mut v = vec![1.0, 2.0, 3.0, 4.0, 5.0];
        let merged = sort_and_merge(&mut k, &mut v);
        assert_eq!(k, [1, 2, 5]);
        assert_eq!(v, [7.0, 4.0, 4.0]);
        assert_eq!(merged, 2);
    }
}
