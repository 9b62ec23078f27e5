//! Boundary flags against per-row counts of the segments touching each row.

use super::*;

use crate::coo::CooTensor;
use crate::format::alto::BuildOptions;
use std::collections::{BTreeSet, HashMap};

/// `nnz` coordinates drawn below `dims` (a fixed LCG, so the cases are reproducible).
fn lcg_coo(dims: &[u64], nnz: usize, seed: u64) -> CooTensor {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut next = |bound: u64| {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) % bound
    };
    let inds = dims
        .iter()
        .map(|&d| (0..nnz).map(|_| next(d)).collect())
        .collect();
    let vals = (0..nnz).map(|k| k as f64 + 1.0).collect();
    CooTensor::new(dims.to_vec(), inds, vals).unwrap()
}

/// Which kinds of rule `t`'s flagged modes got, and whether any segment marked its rows a
/// byte per row and any a bit per row (the choice `mark_touched_rows` makes).
fn kinds(t: &AltoTensor<u64>) -> BTreeSet<&'static str> {
    let decoder = t.fast_decoder();
    let mut seen = BTreeSet::new();
    for rule in t.flag_rules(&decoder) {
        seen.insert(match rule.shared {
            SharedRows::None => "none",
            SharedRows::Interval { .. } => "interval",
            SharedRows::Dense { .. } => "table",
            SharedRows::Sparse(_) => "list",
        });
        for p in 0..t.num_partitions() {
            if let Some((lo, hi)) = t.interval(p, rule.mode) {
                let bytes = hi - lo < t.partition_range(p).len() as u64;
                seen.insert(if bytes { "bytes" } else { "bits" });
            }
        }
    }
    seen
}

/// Every kind of rule, and both kinds of row marks, set exactly the flags a per-row count
/// of the segments touching it calls for (and the stored-tensor check accepts them).
#[test]
fn every_rule_kind_flags_exactly_the_shared_rows() {
    let cases: [(&[u64], usize, usize); 5] = [
        (&[40, 50, 60], 3000, 2),          // every row shared: intervals, byte marks
        (&[5000, 3000, 2000], 3000, 7),    // a few rows shared: tables, bit marks
        (&[1 << 26, 1 << 26, 4], 3000, 7), // windows too long for a table: lists
        (&[300, 200, 100], 20000, 1),      // one segment: nothing shared
        (&[7, 1 << 20, 3], 5000, 3),       // mixed
    ];
    let mut seen = BTreeSet::new();
    for (k, &(dims, nnz, parts)) in cases.iter().enumerate() {
        let coo = lcg_coo(dims, nnz, k as u64);
        let opts = BuildOptions {
            partitions: parts,
            ..Default::default()
        };
        let (t, _) = AltoTensor::<u64>::build(&coo, &opts).unwrap();
        seen.extend(kinds(&t));
        let decoder = t.fast_decoder();
        for m in 0..t.order() {
            let bit = t
                .flag_bit(m)
                .expect("every case leaves a spare bit per mode");
            let mut owners: HashMap<u64, BTreeSet<usize>> = HashMap::new();
            for p in 0..t.num_partitions() {
                for &x in &t.indices()[t.partition_range(p)] {
                    owners.entry(decoder.coord(x, m)).or_default().insert(p);
                }
            }
            for &x in t.indices() {
                let shared = owners[&decoder.coord(x, m)].len() > 1;
                assert_eq!(x >> bit & 1 == 1, shared, "case {k} mode {m}");
            }
        }
        assert_eq!(t.check_derived_state(), Ok(()), "case {k}");
    }
    let all = ["none", "interval", "table", "list", "bytes", "bits"];
    for kind in all {
        assert!(
            seen.contains(kind),
            "no case made a `{kind}` rule: {seen:?}"
        );
    }
}

/// The bounds hold every row covered twice, and nothing when no two intervals meet.
#[test]
fn overlap_bounds_hold_every_row_covered_twice() {
    assert_eq!(overlap_bounds(&[Some((0, 9))]), None);
    assert_eq!(overlap_bounds(&[Some((0, 9)), None, Some((10, 19))]), None);
    assert_eq!(
        overlap_bounds(&[Some((0, 12)), Some((10, 19))]),
        Some((10, 12))
    );
    assert_eq!(
        overlap_bounds(&[Some((20, 30)), Some((0, 12)), Some((10, 21))]),
        Some((10, 21))
    );
    assert_eq!(overlap_bounds(&[Some((0, 29)), Some((5, 7))]), Some((5, 7)));
    assert_eq!(overlap_bounds(&[Some((3, 3)), Some((3, 3))]), Some((3, 3)));
    // Against a count per row.
    let ivs = [
        Some((4, 9)),
        Some((0, 2)),
        Some((8, 15)),
        Some((15, 20)),
        None,
    ];
    let covered_twice: Vec<u64> = (0..25)
        .filter(|&r| {
            ivs.iter()
                .flatten()
                .filter(|(a, b)| *a <= r && r <= *b)
                .count()
                > 1
        })
        .collect();
    assert_eq!(
        overlap_bounds(&ivs),
        Some((covered_twice[0], *covered_twice.last().unwrap()))
    );
}
