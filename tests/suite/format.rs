//! The ALTO format's invariants: encode/decode round trip on every nonzero (BMI2 and software
//! paths), sorted order, duplicate merging, balanced partitions with exact intervals, exact
//! helper flags, and the radix sort against the comparison sort.

use crate::common;

use alto::format::{AltoTensor, AnyAlto, BuildOptions, IndexWidth, SortAlgorithm};
use alto::CooTensor;
use alto_kernels::{Bmi2, DecodeKind, HwBits};
use rand::SeedableRng;
use std::collections::HashMap;

fn random_coo(dims: &[u64], nnz: usize, seed: u64) -> CooTensor {
    let mut rng = rand_pcg::Pcg64::seed_from_u64(seed);
    common::uniform_tensor(dims, nnz, 64, -1.0..1.0, &mut rng)
}

/// Sums values per coordinate: the tensor as a map, independent of order and duplicates.
fn as_map(coo: &CooTensor) -> HashMap<Vec<u64>, f64> {
    let mut m = HashMap::new();
    for k in 0..coo.nnz() {
        *m.entry(coo.coord(k)).or_insert(0.0) += coo.values()[k];
    }
    m
}

fn check_invariants<I: HwBits>(coo: &CooTensor, t: &AltoTensor<I>, parts: usize) {
    // Round trip: decoding every nonzero with both decoders gives the same coordinates, and the
    // tensor (as a coordinate -> summed value map) is unchanged.
    let runs = t.decoder(DecodeKind::Runs);
    if Bmi2::try_new().is_some() {
        let pext = t.decoder(DecodeKind::Pext);
        assert_eq!(pext.kind(), DecodeKind::Pext);
        for &x in t.indices() {
            for m in 0..t.order() {
                assert_eq!(pext.coord(x, m), runs.coord(x, m));
            }
        }
    }
    let back = as_map(&t.to_coo());
    let want = as_map(coo);
    assert_eq!(back.len(), want.len());
    for (c, v) in &want {
        assert!(
            (back[c] - v).abs() <= 1e-12 * (1.0 + v.abs()),
            "value at {c:?}"
        );
    }
    assert_eq!(t.nnz() as u64 + t.duplicates_merged(), coo.nnz() as u64);
    // Re-encoding the decoded coordinates gives the index without flags.
    let b = t.layout().total_bits();
    let value_mask = if b == 128 {
        u128::MAX
    } else {
        (1u128 << b) - 1
    };
    for &x in t.indices().iter().take(2000) {
        let mut re = 0u128;
        for (m, &mask) in t.layout().masks().iter().enumerate() {
            re |= alto_kernels::index::pdep_soft_u128(runs.coord(x, m) as u128, mask);
        }
        assert_eq!(re, x.to_u128() & value_mask);
    }
    // Strictly increasing along the line (duplicates merged).
    assert!(t
        .indices()
        .windows(2)
        .all(|w| w[0].to_u128() & value_mask < w[1].to_u128() & value_mask));
    // Balanced partitions: sizes differ by at most ceil(M/L), cover everything once.
    assert_eq!(t.num_partitions(), parts);
    let seg = t.nnz().div_ceil(parts);
    let mut covered = 0;
    for p in 0..parts {
        let r = t.partition_range(p);
        assert_eq!(r.start, covered);
        assert!(r.len() <= seg);
        covered = r.end;
        for m in 0..t.order() {
            let coords: Vec<u64> = t.indices()[r.clone()]
                .iter()
                .map(|&x| runs.coord(x, m))
                .collect();
            match t.interval(p, m) {
                None => assert!(coords.is_empty()),
                Some((lo, hi)) => {
                    assert_eq!(lo, *coords.iter().min().unwrap());
                    assert_eq!(hi, *coords.iter().max().unwrap());
                }
            }
        }
    }
    assert_eq!(covered, t.nnz());
    // Helper flags: set exactly on nonzeros whose row is touched by more than one segment.
    for m in 0..t.order() {
        let Some(bit) = t.flag_bit(m) else { continue };
        assert!(bit >= b && bit < I::BITS);
        let mut owners: HashMap<u64, std::collections::BTreeSet<usize>> = HashMap::new();
        for p in 0..parts {
            for &x in &t.indices()[t.partition_range(p)] {
                owners.entry(runs.coord(x, m)).or_default().insert(p);
            }
        }
        for &x in t.indices() {
            let shared = owners[&runs.coord(x, m)].len() > 1;
            assert_eq!(x.to_u128() >> bit & 1 == 1, shared, "mode {m} flag");
        }
    }
}

#[test]
fn invariants_for_every_width_and_partitioning() {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    let cases: Vec<(Vec<u64>, IndexWidth)> = vec![
        (vec![40, 50, 60], IndexWidth::U32),
        (vec![2000, 1500, 1000], IndexWidth::U32),
        (vec![500, 400, 3000, 20], IndexWidth::U64),
        (vec![1 << 30, 1 << 30, 1 << 10], IndexWidth::U128),
        (vec![3, 1, 5, 1, 7, 2], IndexWidth::U32),
    ];
    for (k, (dims, width)) in cases.into_iter().enumerate() {
        let coo = random_coo(&dims, 3000, k as u64);
        for parts in [1, 2, 7, 5000] {
            let opts = BuildOptions {
                partitions: parts,
                ..Default::default()
            };
            let (t, _) = pool.install(|| AnyAlto::build(&coo, &opts)).unwrap();
            assert_eq!(t.width(), width, "dims {dims:?}");
            match &t {
                AnyAlto::U32(x) => check_invariants(&coo, x, parts),
                AnyAlto::U64(x) => check_invariants(&coo, x, parts),
                AnyAlto::U128(x) => check_invariants(&coo, x, parts),
            }
        }
    }
}

#[test]
fn software_encoding_and_comparison_sort_build_the_same_tensor() {
    let coo = random_coo(&[700, 800, 900], 100_000, 3);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    let radix = BuildOptions {
        partitions: 3,
        ..Default::default()
    };
    let other = BuildOptions {
        partitions: 3,
        sort: SortAlgorithm::Comparison,
        use_bmi2: false,
        ..Default::default()
    };
    let (a, _) = pool.install(|| AnyAlto::build(&coo, &radix)).unwrap();
    let (b, _) = pool.install(|| AnyAlto::build(&coo, &other)).unwrap();
    // Duplicate coordinates are summed in a different order by an unstable sort, so compare
    // indices exactly and values to rounding.
    match (&a, &b) {
        (AnyAlto::U32(x), AnyAlto::U32(y)) => {
            assert_eq!(x.indices(), y.indices());
            for (u, v) in x.values().iter().zip(y.values()) {
                assert!((u - v).abs() <= 1e-12);
            }
        }
        _ => panic!("expected u32 indices"),
    }
}

#[test]
fn repartition_matches_a_fresh_build() {
    let coo = random_coo(&[100, 200, 300], 5000, 9);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    let (mut a, _) = pool
        .install(|| {
            AnyAlto::build(
                &coo,
                &BuildOptions {
                    partitions: 2,
                    ..Default::default()
                },
            )
        })
        .unwrap();
    let (b, _) = pool
        .install(|| {
            AnyAlto::build(
                &coo,
                &BuildOptions {
                    partitions: 6,
                    ..Default::default()
                },
            )
        })
        .unwrap();
    pool.install(|| a.repartition(6)).unwrap();
    assert_eq!(a, b);
}

#[test]
fn memory_estimate_refuses_impossible_builds() {
    let e = alto::format::alto::check_memory_against(1 << 40, 1 << 30)
        .unwrap_err()
        .to_string();
    assert!(e.contains("needs about 1099511627776 bytes"), "{e}");
    assert!(e.contains("1073741824 bytes"), "{e}");
    assert!(alto::format::alto::check_memory_against(10, 20).is_ok());
    assert_eq!(
        alto::format::estimate_build_bytes(1000, IndexWidth::U64),
        // Sorted (key, position) pairs, the encoded keys, the final indices and values.
        1000 * (16 + 8 + 8 + 8)
    );
}
