//! Every ALTO MTTKRP variant against the naive COO oracle, across orders 2-6, the rank grid,
//! all modes, all three index widths, 1-4 threads (more threads than nonzeros included), every
//! strategy, both decoders, and tensors with duplicate coordinates.

use crate::common;

use alto::dispatch::KernelChoice;
use alto::format::{AnyAlto, BuildOptions, IndexWidth};
use alto::harness::pool::build_pool;
use alto::mttkrp::{
    compare_with_oracle, mttkrp, mttkrp_oracle, ConflictResolution, MttkrpOptions, SyncChoice,
    Workspace,
};
use alto::{CooTensor, Matrix};
use alto_kernels::{Bmi2, DecodeKind, Isa, KernelId, RankSpec};
use rand::{Rng, SeedableRng};

const RANKS: [usize; 8] = [1, 7, 8, 9, 16, 17, 33, 64];

/// Dims whose total bit count lands in the requested width, with factors small enough to test.
fn dims_for(order: usize, width: IndexWidth, rng: &mut impl Rng) -> Option<Vec<u64>> {
    let target_bits: u32 = match width {
        IndexWidth::U32 => 4 * order as u32,
        IndexWidth::U64 => 33,
        IndexWidth::U128 => 65,
    };
    let base = target_bits / order as u32;
    let extra = target_bits % order as u32;
    let bits: Vec<u32> = (0..order as u32)
        .map(|m| base + u32::from(m < extra))
        .collect();
    if bits.iter().any(|&b| b > 17) {
        return None; // factor matrices would be too large for a unit test
    }
    let dims: Vec<u64> = bits
        .iter()
        .map(|&b| (1u64 << (b - 1)) + 1 + rng.random_range(0..(1u64 << (b - 1)) - 1))
        .collect();
    let layout = alto::format::Layout::new(&dims).ok()?;
    (layout.width() == width).then_some(dims)
}

/// `auto` plus one explicit kernel, cycling with `turn` through every available ISA x {runtime
/// rank, rank-specialized}: the kernels crate checks each kernel against its oracle on every
/// sink, so here a rotation covers every kernel on every axis at a fraction of the runs.
fn kernels_for(rank: usize, turn: usize) -> Vec<KernelChoice> {
    let mut all = Vec::new();
    for isa in Isa::ALL.into_iter().filter(|i| i.available()) {
        all.push(KernelId {
            isa,
            rank: RankSpec::Dynamic,
        });
        if let RankSpec::Fixed(_) = RankSpec::best_for(rank) {
            all.push(KernelId::best(isa, rank));
        }
    }
    vec![
        KernelChoice::Auto,
        KernelChoice::Named(all[turn % all.len()]),
    ]
}

fn decoders() -> Vec<DecodeKind> {
    let mut v = vec![DecodeKind::Runs];
    if Bmi2::try_new().is_some() {
        v.push(DecodeKind::Pext);
    } else {
        eprintln!("skipping the pext decoder: this CPU has no BMI2");
    }
    v
}

fn check_tensor(coo: &CooTensor, threads: &[usize], ranks: &[usize], rng: &mut impl Rng) -> usize {
    let mut runs = 0;
    let mut turn = rng.random_range(0..64usize);
    for &t in threads {
        let pool = build_pool(t).unwrap();
        // Partitions = threads, and sometimes many more than nonzeros.
        let parts = if rng.random_bool(0.25) {
            coo.nnz() + 3
        } else {
            t
        };
        let (alto, _) = pool
            .install(|| {
                AnyAlto::build(
                    coo,
                    &BuildOptions {
                        partitions: parts,
                        ..Default::default()
                    },
                )
            })
            .unwrap();
        for &rank in ranks {
            let factors: Vec<Matrix> = coo
                .dims()
                .iter()
                .enumerate()
                .map(|(m, &d)| Matrix::random(d as usize, rank, m as u64))
                .collect();
            let mut ws = Workspace::new(&alto, rank);
            for mode in 0..coo.order() {
                let want = mttkrp_oracle(coo, &factors, mode).unwrap();
                for sync in [
                    SyncChoice::Auto,
                    SyncChoice::Force(ConflictResolution::Pull),
                    SyncChoice::Force(ConflictResolution::Atomic),
                    SyncChoice::Force(ConflictResolution::Flagged),
                ] {
                    for decode in decoders() {
                        turn += 1;
                        for kernel in kernels_for(rank, turn) {
                            let opts = MttkrpOptions {
                                sync,
                                kernel,
                                decode: Some(decode),
                                min_fiber_reuse: None,
                                prefetch: Some((turn % 3) * 4),
                                // Lazy zeroing of atomic outputs: default chunk, off, tiny.
                                lazy_zero: [None, Some(0), Some(5)][(turn / 3) % 3],
                                // Padded rows: forced, by the heuristic, never.
                                pad: [Some(true), None, Some(false)][(turn / 9) % 3],
                            };
                            let mut got = Matrix::zeros(coo.dims()[mode] as usize, rank);
                            got.as_mut_slice().fill(f64::NAN); // the driver must zero it
                            let run =
                                mttkrp(&alto, &factors, mode, &mut got, &opts, &mut ws, &pool)
                                    .unwrap();
                            let err = compare_with_oracle(coo, &factors, mode, &got, &want);
                            assert!(
                                err <= 1.0,
                                "{} mismatch: order {} dims {:?} nnz {} rank {rank} mode {mode} threads {t} parts {parts} width {:?} decode {:?} (error ratio {err})",
                                run.name, coo.order(), coo.dims(), coo.nnz(), alto.width(), decode
                            );
                            runs += 1;
                        }
                    }
                }
            }
        }
    }
    runs
}

#[test]
fn all_variants_match_the_oracle() {
    let mut rng = rand_pcg::Pcg64::seed_from_u64(2021);
    let heavy = cfg!(feature = "heavy-tests") || std::env::var_os("ALTO_HEAVY_TESTS").is_some();
    let mut runs = 0;
    for order in 2..=6 {
        for width in [IndexWidth::U32, IndexWidth::U64, IndexWidth::U128] {
            let Some(dims) = dims_for(order, width, &mut rng) else {
                eprintln!(
                    "order {order} {width:?}: no dims with small factors; covered by other orders"
                );
                continue;
            };
            let nnz = if heavy {
                3000
            } else {
                rng.random_range(40..400)
            };
            let coo = common::clustered_tensor(&dims, nnz, &mut rng);
            let largest_dim = *dims.iter().max().unwrap();
            let ranks: Vec<usize> = if heavy || largest_dim < 5000 {
                RANKS.to_vec()
            } else {
                vec![1, 8, 9] // keep the dense factors of long modes small
            };
            runs += check_tensor(&coo, &[1, 2, 3, 4], &ranks, &mut rng);
        }
    }
    eprintln!("{runs} MTTKRP runs matched the oracle");
}

#[test]
fn more_threads_than_nonzeros_and_tiny_tensors() {
    let mut rng = rand_pcg::Pcg64::seed_from_u64(5);
    for nnz in [1usize, 2, 3] {
        let coo = common::clustered_tensor(&[3, 4, 5], nnz, &mut rng);
        check_tensor(&coo, &[4], &[1, 8, 17], &mut rng);
    }
}

#[test]
fn strategies_resolve_as_documented() {
    // A flat 3-D tensor with a long, low-reuse mode 2 (nnz / dim <= 4) and short modes.
    let mut rng = rand_pcg::Pcg64::seed_from_u64(9);
    let coo = common::clustered_tensor(&[4, 6, 5000], 2000, &mut rng);
    let pool = build_pool(2).unwrap();
    let (alto, _) = pool
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
    let factors: Vec<Matrix> = coo
        .dims()
        .iter()
        .map(|&d| Matrix::random(d as usize, 4, 1))
        .collect();
    let mut ws = Workspace::new(&alto, 4);
    let mut out = Matrix::zeros(5000, 4);
    let run = mttkrp(
        &alto,
        &factors,
        2,
        &mut out,
        &MttkrpOptions::default(),
        &mut ws,
        &pool,
    )
    .unwrap();
    assert_eq!(alto.width(), IndexWidth::U32);
    assert!(
        alto.flag_bit(2).is_some(),
        "a u32 index with 17 bits has spare flag bits"
    );
    assert_eq!(run.sync, ConflictResolution::Flagged);
    let mut out0 = Matrix::zeros(4, 4);
    let run0 = mttkrp(
        &alto,
        &factors,
        0,
        &mut out0,
        &MttkrpOptions::default(),
        &mut ws,
        &pool,
    )
    .unwrap();
    assert_eq!(run0.sync, ConflictResolution::Pull);
    // Raising the threshold above mode 0's reuse forces the atomic-side branch there too.
    let opts = MttkrpOptions {
        min_fiber_reuse: Some(10_000),
        ..Default::default()
    };
    let run0 = mttkrp(&alto, &factors, 0, &mut out0, &opts, &mut ws, &pool).unwrap();
    assert_eq!(run0.sync, ConflictResolution::Flagged);
}

#[test]
fn padded_rows_give_exactly_the_unpadded_result() {
    // Enough nonzeros per factor row that the heuristic pads too (`pays_to_pad`).
    let mut rng = rand_pcg::Pcg64::seed_from_u64(21);
    let coo = common::clustered_tensor(&[30, 20, 40], 4000, &mut rng);
    for threads in [1, 2] {
        let pool = build_pool(threads).unwrap();
        let (alto, _) = pool
            .install(|| AnyAlto::build(&coo, &BuildOptions::default()))
            .unwrap();
        for rank in [1, 3, 10, 20, 50] {
            let factors: Vec<Matrix> = coo
                .dims()
                .iter()
                .enumerate()
                .map(|(m, &d)| Matrix::random(d as usize, rank, m as u64 + 5))
                .collect();
            let mut ws = Workspace::new(&alto, rank);
            for mode in 0..3 {
                for sync in [
                    SyncChoice::Auto,
                    SyncChoice::Force(ConflictResolution::Pull),
                    SyncChoice::Force(ConflictResolution::Flagged),
                    SyncChoice::Force(ConflictResolution::Atomic),
                ] {
                    let rows = coo.dims()[mode] as usize;
                    let mut results = Vec::new();
                    for pad in [Some(false), None, Some(true)] {
                        let opts = MttkrpOptions {
                            sync,
                            pad,
                            ..Default::default()
                        };
                        let mut out = Matrix::zeros(rows, rank);
                        out.as_mut_slice().fill(f64::NAN);
                        let run =
                            mttkrp(&alto, &factors, mode, &mut out, &opts, &mut ws, &pool).unwrap();
                        results.push((run, out));
                    }
                    let (plain, auto, forced) = (&results[0], &results[1], &results[2]);
                    assert_eq!(plain.0.padded_rank, None);
                    let width = rank.div_ceil(8) * 8;
                    assert_eq!(forced.0.padded_rank, Some(width), "{}", forced.0.name);
                    assert!(forced.0.name.ends_with("_padded"), "{}", forced.0.name);
                    // Auto pads, with a SIMD kernel, except for atomics.
                    let atomic = plain.0.sync == ConflictResolution::Atomic;
                    let simd = alto::dispatch::best_isa() != Isa::Scalar;
                    assert_eq!(
                        auto.0.padded_rank.is_some(),
                        simd && !atomic,
                        "{}",
                        auto.0.name
                    );
                    // Atomic adds land in whatever order threads interleave: bit for bit only
                    // without them.
                    if threads == 1 || plain.0.sync == ConflictResolution::Pull {
                        assert_eq!(plain.1, forced.1, "rank {rank} mode {mode} {sync:?}");
                        assert_eq!(plain.1, auto.1, "rank {rank} mode {mode} {sync:?}");
                    }
                    let want = mttkrp_oracle(&coo, &factors, mode).unwrap();
                    let err = compare_with_oracle(&coo, &factors, mode, &forced.1, &want);
                    assert!(err <= 1.0, "rank {rank} mode {mode} {sync:?}: {err}");
                }
            }
        }
    }
}
