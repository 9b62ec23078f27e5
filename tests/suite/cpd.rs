//! CP-ALS: planted low-rank tensors are recovered, the fit never decreases, the factors match a
//! plain dense CP-ALS (explicit Khatri-Rao products, no ALTO) from the same initial factors,
//! singular systems take the pseudo-inverse, bad options are clear errors, the real tensors run,
//! and `alto cpd` works end to end.

use crate::common;

use alto::cpd::rows::{RowIsa, RowKernel};
use alto::cpd::{cp_als, cp_als_from, initial_factors, CpModel, CpdOptions, SolveKind};
use alto::format::{AnyAlto, BuildOptions};
use alto::harness::pool::build_pool;
use alto::mttkrp::{ConflictResolution, MttkrpOptions, SyncChoice};
use alto::{AltoError, CooTensor, Matrix};
use common::alto;
use nalgebra::DMatrix;
use rand::SeedableRng;

fn build(coo: &CooTensor, threads: usize) -> AnyAlto {
    let opts = BuildOptions {
        partitions: threads,
        ..Default::default()
    };
    AnyAlto::build(coo, &opts).unwrap().0
}

fn run(coo: &CooTensor, threads: usize, opts: &CpdOptions, init: Option<Vec<Matrix>>) -> CpModel {
    let t = build(coo, threads);
    let pool = build_pool(threads).unwrap();
    match init {
        Some(init) => cp_als_from(&t, init, opts, &pool).unwrap(),
        None => cp_als(&t, opts, &pool).unwrap(),
    }
}

/// Rounding of the fit: `normX^2 + ||model||^2 - 2 <X, model>` cancels to about
/// `eps * normX^2` when the fit nears 1, so the fit itself is known to about `sqrt(eps)`.
const FIT_ROUNDING: f64 = 1e-7;

/// Fits never go down by more than rounding.
fn assert_monotone(m: &CpModel, what: &str) {
    let fits = m.fits();
    for w in fits.windows(2) {
        assert!(
            w[1] >= w[0] - FIT_ROUNDING,
            "{what}: fit went down: {fits:?}"
        );
    }
    for f in &fits {
        assert!(f.is_finite() && *f <= 1.0 + 1e-12, "{what}: {fits:?}");
    }
}

#[test]
fn planted_low_rank_tensors_are_recovered() {
    for (dims, rank, nnz, seed) in [
        (vec![40u64, 30, 20], 3usize, 3000u64, 1u64),
        (vec![25, 20, 15, 10], 4, 6000, 2),
        (vec![200, 150, 100], 8, 20_000, 3),
    ] {
        let (coo, _) = alto::gen::lowrank(&dims, rank, nnz, seed).unwrap();
        for threads in [1, 2] {
            let opts = CpdOptions {
                max_iters: 300,
                tol: 1e-10,
                seed: 7,
                ..CpdOptions::new(rank)
            };
            let m = run(&coo, threads, &opts, None);
            let what = format!("{dims:?} rank {rank}, {threads} threads");
            assert!(m.final_fit() >= 0.999, "{what}: fit {:?}", m.fits());
            assert_monotone(&m, &what);
            // The model reproduces the tensor's values.
            let norm = m.norm_x_sq.sqrt();
            let err: f64 = (0..coo.nnz())
                .map(|k| (m.entry(&coo.coord(k)) - coo.values()[k]).powi(2))
                .sum::<f64>()
                .sqrt();
            assert!(err <= 2e-3 * norm, "{what}: error {err} of {norm}");
        }
    }
}

/// A plain dense CP-ALS: the dense tensor, explicit Khatri-Rao products, normal equations
/// `K^T K` formed from K, a dense LU solve, the same normalization rule, and the fit from the
/// dense residual.
struct DenseCp {
    dims: Vec<usize>,
    x: Vec<f64>,
}

impl DenseCp {
    fn new(coo: &CooTensor) -> Self {
        let dims: Vec<usize> = coo.dims().iter().map(|&d| d as usize).collect();
        let mut x = vec![0.0; dims.iter().product()];
        for k in 0..coo.nnz() {
            x[Self::linear(&dims, &coo.coord(k))] += coo.values()[k];
        }
        DenseCp { dims, x }
    }

    /// Mode 0 fastest.
    fn linear(dims: &[usize], c: &[u64]) -> usize {
        c.iter()
            .zip(dims)
            .rev()
            .fold(0, |acc, (&i, &d)| acc * d + i as usize)
    }

    fn coord(&self, mut lin: usize) -> Vec<u64> {
        self.dims
            .iter()
            .map(|&d| {
                let i = lin % d;
                lin /= d;
                i as u64
            })
            .collect()
    }

    /// Runs `iters` iterations from `init`; returns (lambda, factors, fits).
    fn run(&self, init: &[Matrix], iters: usize) -> (Vec<f64>, Vec<DMatrix<f64>>, Vec<f64>) {
        let order = self.dims.len();
        let rank = init[0].cols();
        let mut u: Vec<DMatrix<f64>> = init
            .iter()
            .map(|m| DMatrix::from_row_slice(m.rows(), m.cols(), m.as_slice()))
            .collect();
        let mut lambda = vec![1.0; rank];
        let mut fits = Vec::new();
        let norm_x = self.x.iter().map(|v| v * v).sum::<f64>().sqrt();
        for it in 0..iters {
            for n in 0..order {
                // Unfolding X_(n) (I_n x J) and Khatri-Rao K (J x R) over the other modes, J
                // enumerating their coordinates in one fixed order.
                let others: Vec<usize> = (0..order).filter(|&m| m != n).collect();
                let j_len: usize = others.iter().map(|&m| self.dims[m]).product();
                let mut xn = DMatrix::<f64>::zeros(self.dims[n], j_len);
                let mut k = DMatrix::<f64>::from_element(j_len, rank, 1.0);
                for lin in 0..self.x.len() {
                    let c = self.coord(lin);
                    let mut j = 0;
                    for &m in others.iter().rev() {
                        j = j * self.dims[m] + c[m] as usize;
                    }
                    xn[(c[n] as usize, j)] = self.x[lin];
                    if c[n] == 0 {
                        for r in 0..rank {
                            k[(j, r)] = others.iter().map(|&m| u[m][(c[m] as usize, r)]).product();
                        }
                    }
                }
                let y = &xn * &k;
                let v = k.transpose() * &k;
                let lu = v.lu();
                let mut un = DMatrix::<f64>::zeros(self.dims[n], rank);
                for i in 0..self.dims[n] {
                    let sol = lu.solve(&y.row(i).transpose()).expect("nonsingular");
                    un.row_mut(i).copy_from(&sol.transpose());
                }
                for (r, lr) in lambda.iter_mut().enumerate() {
                    let col = un.column(r);
                    let l = if it == 0 {
                        col.norm()
                    } else {
                        col.iter().fold(0.0f64, |m, x| m.max(x.abs())).max(1.0)
                    };
                    *lr = l;
                    un.column_mut(r).scale_mut(1.0 / l);
                }
                u[n] = un;
            }
            let mut res = 0.0;
            for lin in 0..self.x.len() {
                let c = self.coord(lin);
                let model: f64 = (0..rank)
                    .map(|r| (0..order).fold(lambda[r], |p, m| p * u[m][(c[m] as usize, r)]))
                    .sum();
                res += (self.x[lin] - model).powi(2);
            }
            fits.push(1.0 - res.sqrt() / norm_x);
        }
        (lambda, u, fits)
    }
}

/// Random small tensor with duplicates and mixed-sign values.
fn small_tensor(dims: &[u64], nnz: usize, seed: u64) -> CooTensor {
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
    common::uniform_tensor(dims, nnz, u64::MAX, -1.0..2.0, &mut rng)
}

#[test]
fn factors_match_a_dense_cp_als_from_the_same_start() {
    let cases: [(&[u64], usize, usize); 4] = [
        (&[7, 6, 5], 60, 3),
        (&[5, 4, 3, 6], 90, 4),
        (&[9, 8], 30, 2),
        (&[6, 5, 4], 80, 8), // a specialized rank
    ];
    let iters = 6;
    for (case, &(dims, nnz, rank)) in cases.iter().enumerate() {
        let coo = small_tensor(dims, nnz, 10 + case as u64);
        let init = initial_factors(dims, rank, 3);
        let (lambda, want, want_fits) = DenseCp::new(&coo).run(&init, iters);
        let kernels = [
            None,
            RowKernel::new(RowIsa::Portable, rank, true),
            RowKernel::new(RowIsa::Portable, rank, false),
        ];
        for threads in [1, 2, 3] {
            for (ki, &row_kernel) in kernels.iter().enumerate() {
                let opts = CpdOptions {
                    max_iters: iters,
                    tol: 0.0,
                    row_kernel,
                    ..CpdOptions::new(rank)
                };
                let m = run(&coo, threads, &opts, Some(init.clone()));
                let what = format!("{dims:?} rank {rank}, {threads} threads, kernel {ki}");
                assert_eq!(m.history.len(), iters, "{what}");
                for (a, b) in m.lambda.iter().zip(&lambda) {
                    assert!((a - b).abs() <= 1e-8 * b.abs().max(1.0), "{what}: lambda");
                }
                for (n, (got, want)) in m.factors.iter().zip(&want).enumerate() {
                    for i in 0..got.rows() {
                        for r in 0..rank {
                            let (g, w) = (got.get(i, r), want[(i, r)]);
                            assert!((g - w).abs() <= 1e-8, "{what}: factor {n} ({i}, {r})");
                        }
                    }
                }
                for (a, b) in m.fits().iter().zip(&want_fits) {
                    assert!((a - b).abs() <= 1e-9, "{what}: fit {a} vs {b}");
                }
                assert_monotone(&m, &what);
            }
        }
    }
}

#[test]
fn every_mttkrp_strategy_gives_the_same_model() {
    let coo = small_tensor(&[30, 20, 25], 2000, 5);
    let rank = 5;
    let base = CpdOptions {
        max_iters: 5,
        tol: 0.0,
        ..CpdOptions::new(rank)
    };
    let reference = run(&coo, 1, &base, None);
    for sync in ConflictResolution::ALL {
        let opts = CpdOptions {
            mttkrp: MttkrpOptions {
                sync: SyncChoice::Force(sync),
                ..Default::default()
            },
            ..base
        };
        let m = run(&coo, 3, &opts, None);
        for (a, b) in m.factors.iter().zip(&reference.factors) {
            assert!(a.max_abs_diff(b) < 1e-9, "{sync}");
        }
        assert!(m
            .mttkrp_runs
            .iter()
            .all(|r| r.sync == sync || sync == ConflictResolution::Flagged));
    }
}

#[test]
fn singular_systems_fall_back_to_the_pseudo_inverse() {
    // Two equal columns in every initial factor make every V singular; the minimum-norm
    // solution keeps them equal, and the fit still never decreases.
    let (coo, _) = alto::gen::lowrank(&[20, 15, 10], 2, 800, 4).unwrap();
    let dims = coo.dims().to_vec();
    let mut init = initial_factors(&dims, 3, 1);
    for u in init.iter_mut() {
        for i in 0..u.rows() {
            let x = u.get(i, 0);
            u.set(i, 1, x);
        }
    }
    let opts = CpdOptions {
        max_iters: 10,
        tol: 0.0,
        ..CpdOptions::new(3)
    };
    let m = run(&coo, 2, &opts, Some(init));
    assert!(
        m.history.iter().all(|s| s.pinv_solves == 3),
        "{:?}",
        m.history
    );
    assert_monotone(&m, "pinv");
    for u in &m.factors {
        for i in 0..u.rows() {
            assert!((u.get(i, 0) - u.get(i, 1)).abs() < 1e-9);
            assert!(u.row(i).iter().all(|x| x.is_finite()));
        }
    }
    assert_eq!(SolveKind::Pinv, SolveKind::Pinv); // the variant is public for reports
}

#[test]
fn bad_options_are_clear_errors() {
    let coo = small_tensor(&[6, 5, 4], 50, 1);
    let t = build(&coo, 1);
    let pool = build_pool(1).unwrap();
    let option_of = |opts: CpdOptions| match cp_als(&t, &opts, &pool) {
        Err(AltoError::CpdOption { option, reason }) => {
            assert!(!reason.is_empty());
            option
        }
        other => panic!("expected an option error, got {other:?}"),
    };
    let ok = CpdOptions::new(3);
    assert_eq!(option_of(CpdOptions::new(0)), "rank");
    // rank > min over modes of the product of the other dims (4 * 5 = 20) or > nnz.
    assert_eq!(option_of(CpdOptions::new(21)), "rank");
    assert!(cp_als(&t, &CpdOptions::new(20), &pool).is_ok());
    assert_eq!(option_of(CpdOptions { tol: -1e-6, ..ok }), "tol");
    assert_eq!(option_of(CpdOptions { max_iters: 0, ..ok }), "max_iters");
    let wrong_kernel = RowKernel::new(RowIsa::Portable, 4, true);
    assert_eq!(
        option_of(CpdOptions {
            row_kernel: wrong_kernel,
            ..ok
        }),
        "row_kernel"
    );
    let bad_init = vec![Matrix::zeros(6, 3), Matrix::zeros(5, 3)];
    match cp_als_from(&t, bad_init, &ok, &pool) {
        Err(AltoError::CpdOption { option: "init", .. }) => {}
        other => panic!("{other:?}"),
    }
    // An all-zero tensor has no fit.
    let zero = CooTensor::new(vec![3, 3], vec![vec![0, 1], vec![1, 2]], vec![0.0, 0.0]).unwrap();
    let e = cp_als(&build(&zero, 1), &CpdOptions::new(1), &pool).unwrap_err();
    assert!(e.to_string().contains("norm"), "{e}");
}

#[test]
fn real_tensors_run() {
    let Some(files) = common::real_tensors() else {
        return;
    };
    assert!(!files.is_empty());
    for f in files {
        let coo = alto::io::tns::read_tns(&f, None).unwrap();
        let opts = CpdOptions {
            max_iters: 4,
            tol: 0.0,
            ..CpdOptions::new(10)
        };
        let m = run(&coo, 2, &opts, None);
        let what = f.display().to_string();
        assert_eq!(m.history.len(), 4, "{what}");
        assert_monotone(&m, &what);
        assert!(
            m.final_fit() >= 0.0 && m.final_fit() < 1.0,
            "{what}: {:?}",
            m.fits()
        );
        assert!(
            m.lambda.iter().all(|l| l.is_finite() && *l >= 0.0),
            "{what}"
        );
    }
}

#[test]
fn cli_fits_a_planted_tensor_and_writes_npy() {
    let dir = tempfile::tempdir().unwrap();
    let tns = dir.path().join("lr.tns");
    let tns = tns.to_str().unwrap();
    let g = alto(&[
        "gen", "lowrank", "--dims", "50,40,30", "--rank", "4", "--nnz", "4000", "--seed", "2",
        "-o", tns,
    ]);
    assert!(g.status.success(), "{}", String::from_utf8_lossy(&g.stderr));
    let out = dir.path().join("model");
    let o = alto(&[
        "cpd",
        tns,
        "--dims",
        "50,40,30",
        "--rank",
        "4",
        "--iters",
        "200",
        "--tol",
        "1e-9",
        "--seed",
        "1",
        "--threads",
        "2",
        "--pin",
        "compact",
        "--out",
        out.to_str().unwrap(),
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["final_fit"].as_f64().unwrap() >= 0.999, "{v}");
    assert_eq!(v["rank"], 4);
    assert_eq!(v["threads"], 2);
    assert_eq!(v["pin"]["policy"], "compact");
    assert_eq!(v["pin"]["threads"], 2);
    let iters = v["iterations"].as_array().unwrap();
    assert_eq!(iters.len() as u64, v["iters_run"].as_u64().unwrap());
    assert!(iters[0]["delta_fit"].is_null());
    for it in iters {
        for key in ["fit", "seconds", "mttkrp_seconds", "rest_seconds"] {
            assert!(it[key].is_number(), "{key}");
        }
    }
    assert_eq!(v["mttkrp"].as_array().unwrap().len(), 3);
    let lambda = Matrix::read_npy(&out.join("lambda.npy")).unwrap();
    assert_eq!((lambda.rows(), lambda.cols()), (4, 1));
    for (n, d) in [50, 40, 30].into_iter().enumerate() {
        let f = Matrix::read_npy(&out.join(format!("factor{n}.npy"))).unwrap();
        assert_eq!((f.rows(), f.cols()), (d, 4));
    }
    // The table form names the split and the pinning.
    let o = alto(&[
        "cpd",
        tns,
        "--rank",
        "4",
        "--iters",
        "3",
        "--threads",
        "2",
        "--pin",
        "scatter",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("MTTKRP") && text.contains("rest"), "{text}");
    assert!(text.contains("pinned scatter"), "{text}");
}

#[test]
fn cli_rejects_bad_options_with_exit_code_2() {
    let dir = tempfile::tempdir().unwrap();
    let tns = dir.path().join("t.tns");
    std::fs::write(&tns, "1 1 1 1.0\n2 3 1 2.0\n3 2 2 0.5\n").unwrap();
    let tns = tns.to_str().unwrap();
    for (args, flag) in [
        (vec!["--rank", "0"], "--rank"),
        (vec!["--rank", "4"], "--rank"), // only 3 nonzeros
        (vec!["--rank", "2", "--tol", "-1"], "--tol"),
        (vec!["--rank", "2", "--iters", "0"], "--iters"),
        (vec!["--rank", "2", "--pin", "sideways"], "--pin"),
        (vec!["--rank", "2", "--threads", "0"], "--threads"),
        (vec!["--rank", "2", "--row-kernel", "sse9"], "--row-kernel"),
    ] {
        let mut all = vec!["cpd", tns];
        all.extend(&args);
        let o = alto(&all);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(flag), "{args:?}: {err}");
    }
}
