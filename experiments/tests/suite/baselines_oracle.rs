//! Every baseline format (COO with atomics and privatized, CSF and CSF-tile, HiCOO with both
//! schedules at the paper's block sizes and at tiny ones that make many blocks) against the
//! naive COO oracle: orders 2-6, the rank grid, all modes, 1-4 threads, every available ISA,
//! tensors with duplicate coordinates, and tensors with fewer nonzeros than threads.

use alto::format::{AnyAlto, BuildOptions};
use alto::harness::pool::build_pool;
use alto::mttkrp::{compare_with_oracle, mttkrp_oracle};
use alto::{CooTensor, Matrix};
use alto_experiments::formats::{
    canonical_coo, Baseline, BaselineIsa, BaselineKind, BaselineOptions, CooSync, CsfFormat,
    HicooFormat, HicooSync, HicooSyncChoice, MttkrpFormat,
};
use rand::{Rng, SeedableRng};

const RANKS: [usize; 8] = [1, 7, 8, 9, 16, 17, 33, 64];

fn heavy() -> bool {
    cfg!(feature = "heavy-tests") || std::env::var_os("ALTO_HEAVY_TESTS").is_some()
}

/// Random nonzeros: half on a few hot coordinates per mode (so threads and blocks conflict),
/// half uniform, and about 10% exact duplicates of earlier nonzeros.
fn random_tensor(dims: &[u64], nnz: usize, rng: &mut impl Rng) -> CooTensor {
    let mut inds: Vec<Vec<u64>> = vec![Vec::with_capacity(nnz); dims.len()];
    let mut vals = Vec::with_capacity(nnz);
    for k in 0..nnz {
        if k > 0 && rng.random_bool(0.1) {
            let j = rng.random_range(0..k);
            for ind in inds.iter_mut() {
                let x = ind[j];
                ind.push(x);
            }
        } else {
            for (m, ind) in inds.iter_mut().enumerate() {
                let x = if rng.random_bool(0.5) {
                    rng.random_range(0..dims[m].min(5))
                } else {
                    rng.random_range(0..dims[m])
                };
                ind.push(x);
            }
        }
        vals.push(rng.random_range(-1.0..1.0));
    }
    CooTensor::new(dims.to_vec(), inds, vals).unwrap()
}

/// Dims mixing short modes, modes of a few blocks, and modes spanning several 2^10
/// superblocks, so every HiCOO and CSF-tile path has work.
fn dims_for(order: usize) -> Vec<u64> {
    let pool = [3000u64, 7, 300, 1500, 40, 2];
    pool[..order].to_vec()
}

/// A built format and how to run it.
struct Variant {
    name: String,
    format: Baseline,
    opts: BaselineOptions,
}

fn isas() -> Vec<BaselineIsa> {
    let v = BaselineIsa::available();
    if v.len() < BaselineIsa::NAMES.len() {
        let names: Vec<&str> = v.iter().map(|i| i.name()).collect();
        eprintln!("skipping baseline ISAs this CPU lacks (only {names:?} run)");
    }
    v
}

fn variants(coo: &CooTensor, pool: &rayon::ThreadPool) -> Vec<Variant> {
    let mut v = Vec::new();
    let with = |isa, coo_sync, hicoo_sync| BaselineOptions {
        isa,
        coo_sync,
        hicoo_sync,
    };
    for isa in isas() {
        for kind in BaselineKind::ALL {
            let (format, secs) = Baseline::build(kind, coo, pool).unwrap();
            assert!(secs >= 0.0);
            match kind {
                BaselineKind::Coo => {
                    for sync in CooSync::ALL {
                        v.push(Variant {
                            name: format!("COO-{}-{}", sync.name(), isa.name()),
                            format: format.clone(),
                            opts: with(isa, sync, HicooSyncChoice::Auto),
                        });
                    }
                }
                BaselineKind::HicooSb10 | BaselineKind::HicooSb14 => {
                    for sync in [
                        HicooSyncChoice::Auto,
                        HicooSyncChoice::Force(HicooSync::Scheduled),
                        HicooSyncChoice::Force(HicooSync::Privatized),
                    ] {
                        v.push(Variant {
                            name: format!("{kind}-{sync:?}-{}", isa.name()),
                            format: format.clone(),
                            opts: with(isa, CooSync::Atomic, sync),
                        });
                    }
                }
                _ => v.push(Variant {
                    name: format!("{kind}-{}", isa.name()),
                    format,
                    opts: with(isa, CooSync::Atomic, HicooSyncChoice::Auto),
                }),
            }
        }
        // Tiny blocks and superblocks: many of each even in a small tensor.
        for (bb, sk) in [(1, 1), (2, 3), (3, 5)] {
            let (h, _) = pool.install(|| HicooFormat::build(coo, &(bb, sk))).unwrap();
            for sync in [HicooSync::Scheduled, HicooSync::Privatized] {
                v.push(Variant {
                    name: format!("HiCOO-b{bb}-sb{sk}-{sync:?}-{}", isa.name()),
                    format: Baseline::Hicoo(h.clone()),
                    opts: with(isa, CooSync::Atomic, HicooSyncChoice::Force(sync)),
                });
            }
        }
        // Many tiles per mode.
        let (csf, _) = pool.install(|| CsfFormat::build(coo, &Some(5))).unwrap();
        v.push(Variant {
            name: format!("CSF-tile5-{}", isa.name()),
            format: Baseline::Csf(csf),
            opts: with(isa, CooSync::Atomic, HicooSyncChoice::Auto),
        });
    }
    v
}

fn check_tensor(coo: &CooTensor, threads: &[usize], ranks: &[usize]) -> usize {
    let mut runs = 0;
    for &t in threads {
        let pool = build_pool(t).unwrap();
        let vars = variants(coo, &pool);
        for &rank in ranks {
            let factors: Vec<Matrix> = coo
                .dims()
                .iter()
                .enumerate()
                .map(|(m, &d)| Matrix::random(d as usize, rank, 10 + m as u64))
                .collect();
            for mode in 0..coo.order() {
                let want = mttkrp_oracle(coo, &factors, mode).unwrap();
                for var in &vars {
                    let mut got = Matrix::zeros(coo.dims()[mode] as usize, rank);
                    got.as_mut_slice().fill(f64::NAN); // every format must overwrite it
                    var.format
                        .mttkrp(&factors, mode, &mut got, &var.opts, &pool)
                        .unwrap();
                    let err = compare_with_oracle(coo, &factors, mode, &got, &want);
                    assert!(
                        err <= 1.0,
                        "{} mismatch: order {} dims {:?} nnz {} rank {rank} mode {mode} \
                         threads {t} (error ratio {err})",
                        var.name,
                        coo.order(),
                        coo.dims(),
                        coo.nnz()
                    );
                    runs += 1;
                }
            }
        }
    }
    runs
}

#[test]
fn every_baseline_matches_the_oracle() {
    let mut rng = rand_pcg::Pcg64::seed_from_u64(2021);
    let mut runs = 0;
    for order in 2..=6 {
        let dims = dims_for(order);
        let nnz = if heavy() {
            4000
        } else {
            rng.random_range(150..300)
        };
        let coo = random_tensor(&dims, nnz, &mut rng);
        let ranks: Vec<usize> = if heavy() || order <= 3 {
            RANKS.to_vec()
        } else {
            // Every rank path (1, unspecialized, each specialized width) at lower cost.
            vec![1, 9, 16, 33, 64]
        };
        runs += check_tensor(&coo, &[1, 2, 3, 4], &ranks);
    }
    eprintln!("{runs} baseline MTTKRP runs matched the oracle");
}

#[test]
fn fewer_nonzeros_than_threads() {
    let mut rng = rand_pcg::Pcg64::seed_from_u64(5);
    for nnz in [1usize, 2, 3] {
        let coo = random_tensor(&[3, 200, 5], nnz, &mut rng);
        check_tensor(&coo, &[4], &[1, 8, 17]);
    }
}

#[test]
fn canonical_input_gives_the_same_results() {
    let mut rng = rand_pcg::Pcg64::seed_from_u64(8);
    let coo = random_tensor(&[50, 1300, 9, 20], 500, &mut rng);
    let canon = canonical_coo(&coo).unwrap();
    assert!(canon.nnz() < coo.nnz(), "the tensor has duplicates");
    for m in 0..coo.order() {
        let f: Vec<Matrix> = coo
            .dims()
            .iter()
            .map(|&d| Matrix::random(d as usize, 5, 3))
            .collect();
        let a = mttkrp_oracle(&coo, &f, m).unwrap();
        let b = mttkrp_oracle(&canon, &f, m).unwrap();
        assert!(compare_with_oracle(&coo, &f, m, &b, &a) <= 1.0);
    }
    check_tensor(&canon, &[2], &[16]);
}

#[test]
fn storage_accounting() {
    let mut rng = rand_pcg::Pcg64::seed_from_u64(3);
    let coo = canonical_coo(&random_tensor(&[3000, 300, 1500, 40], 2000, &mut rng)).unwrap();
    let pool = build_pool(2).unwrap();
    let size = |k| Baseline::build(k, &coo, &pool).unwrap().0.storage_bytes();
    let nnz = coo.nnz() as u64;
    assert_eq!(size(BaselineKind::Coo), nnz * (4 * 8 + 8));
    // CSF keeps four trees, each at least its leaves' ids and values and at most a full path
    // of pointers and ids per nonzero.
    let csf = size(BaselineKind::Csf);
    assert!(
        csf >= 4 * nnz * 16 && csf <= 4 * nnz * (4 * 16 + 8) + 64,
        "{csf}"
    );
    assert!(size(BaselineKind::CsfTile) >= csf);
    // HiCOO: at least one byte per mode and a value per nonzero, and one block per nonzero at
    // worst.
    let h = size(BaselineKind::HicooSb10);
    assert!(
        h >= nnz * (4 + 8) && h <= nnz * (4 + 8 + 8 + 16 + 8) + 4096,
        "{h}"
    );
    // ALTO's full footprint (with its partition bounds and intervals) on this 4-D tensor: a
    // 64-bit index (12 + 9 + 11 + 6 = 38 bits) and a value per nonzero, plus metadata, is half
    // of COO's 40 bytes per nonzero and some.
    let (alto, _) = AnyAlto::build(
        &coo,
        &BuildOptions {
            partitions: 2,
            ..Default::default()
        },
    )
    .unwrap();
    let full = alto_experiments::measure::timing::alto_footprint_bytes(&alto);
    assert!(full > alto.storage_bytes());
    assert!(full > nnz * 16 && full < nnz * 16 + 512, "{full}");
}

#[test]
fn hicoo_structure() {
    let mut rng = rand_pcg::Pcg64::seed_from_u64(4);
    let coo = random_tensor(&[3000, 7, 300], 400, &mut rng);
    let (h, _) = HicooFormat::build(&coo, &(7, 10)).unwrap();
    assert_eq!(h.nnz(), coo.nnz());
    assert!(h.blocks() >= 1 && h.blocks() <= coo.nnz());
    assert!(h.superblocks() >= 3, "mode 0 spans three 2^10 superblocks");
    assert!(h.superblocks() <= h.blocks());
    assert!(
        HicooFormat::build(&coo, &(9, 10)).is_err(),
        "offsets are bytes"
    );
    assert!(HicooFormat::build(&coo, &(7, 6)).is_err());
}

#[test]
fn errors_are_typed() {
    let mut rng = rand_pcg::Pcg64::seed_from_u64(6);
    let coo = random_tensor(&[10, 20, 30], 50, &mut rng);
    let pool = build_pool(2).unwrap();
    let (f, _) = Baseline::build(BaselineKind::Csf, &coo, &pool).unwrap();
    let factors: Vec<Matrix> = coo
        .dims()
        .iter()
        .map(|&d| Matrix::random(d as usize, 4, 1))
        .collect();
    let opts = BaselineOptions::default();
    let mut wrong = Matrix::zeros(11, 4);
    assert!(f.mttkrp(&factors, 0, &mut wrong, &opts, &pool).is_err());
    let mut out = Matrix::zeros(10, 4);
    assert!(f.mttkrp(&factors, 3, &mut out, &opts, &pool).is_err());
    assert!(f.mttkrp(&factors[..2], 0, &mut out, &opts, &pool).is_err());
}
