//! CP-APR: every Phi kernel matches the naive oracle (orders, ranks, modes, index widths,
//! strategies, thread counts); the log-likelihood pass matches its oracle; a planted Poisson
//! model is recovered (factor match score >= 0.95) with a log-likelihood that never
//! decreases; the real count tensors converge to a log-likelihood at least that of CP-ALS
//! factors made nonnegative; a NumPy reference gives the same log-likelihood trajectory from
//! the same initial factors; `alto cpd --model apr` works end to end and refuses negative
//! counts naming the file and line.

use crate::common;

use alto::cpd::apr::{
    cp_apr, cp_apr_observed, factor_match_score, log_likelihood, loglik_oracle, phi_oracle,
    AprModel, AprOptions, PhiEngine, PhiKind, PhiOptions,
};
use alto::cpd::{cp_als, CpdOptions};
use alto::dispatch::KernelChoice;
use alto::format::{AnyAlto, BuildOptions, IndexWidth};
use alto::harness::pool::build_pool;
use alto::mttkrp::{ConflictResolution, SyncChoice};
use alto::{AltoError, CooTensor, Matrix};
use alto_kernels::{Isa, KernelId, RankSpec};
use common::{alto, stderr};
use rand::SeedableRng;
use std::ops::ControlFlow;

fn build(coo: &CooTensor, threads: usize, min_fiber_reuse: u64) -> AnyAlto {
    let opts = BuildOptions {
        partitions: threads,
        min_fiber_reuse,
        ..Default::default()
    };
    AnyAlto::build(coo, &opts).unwrap().0
}

/// Clustered coordinates (segments share rows), duplicates, nonnegative values.
fn counts_tensor(dims: &[u64], nnz: usize, seed: u64) -> CooTensor {
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
    let c = common::clustered_tensor(dims, nnz, &mut rng);
    let inds = (0..c.order()).map(|m| c.mode_indices(m).to_vec()).collect();
    let vals = c.values().iter().map(|v| (v * 4.0).abs().round()).collect();
    CooTensor::new(dims.to_vec(), inds, vals).unwrap()
}

/// The Phi kernels to test: fused, cached, and the MTTKRP kernels of every tier this
/// CPU runs (a tier it lacks is skipped with a message).
fn kinds() -> Vec<PhiKind> {
    let mut v = vec![PhiKind::Fused, PhiKind::Cached];
    for isa in [Isa::Scalar, Isa::Pulp, Isa::Avx2, Isa::Avx512] {
        if !isa.available() {
            eprintln!(
                "skipping Phi on the {} kernels: not on this CPU",
                isa.name()
            );
            continue;
        }
        v.push(PhiKind::Mttkrp(KernelChoice::Isa(isa)));
        v.push(PhiKind::Mttkrp(KernelChoice::Named(KernelId {
            isa,
            rank: RankSpec::Dynamic,
        })));
    }
    v
}

#[test]
fn phi_kernels_match_the_oracle() {
    // (dims, nnz, expected index width): 2 to 5 modes, u32 / u64 / u128 indices.
    let cases: [(&[u64], usize, IndexWidth); 5] = [
        (&[30, 40], 400, IndexWidth::U32),
        (&[25, 18, 12], 700, IndexWidth::U32),
        (&[4096, 4096, 8192], 600, IndexWidth::U64),
        (&[9, 7, 11, 5], 500, IndexWidth::U32),
        (&[8192, 8192, 8192, 8192, 8192], 500, IndexWidth::U128),
    ];
    let eps = 1e-10;
    for (c, &(dims, nnz, width)) in cases.iter().enumerate() {
        let coo = counts_tensor(dims, nnz, 10 + c as u64);
        for rank in [1usize, 3, 8, 16] {
            let factors: Vec<Matrix> = dims
                .iter()
                .enumerate()
                .map(|(m, &d)| Matrix::random(d as usize, rank, 100 + m as u64))
                .collect();
            for threads in [1usize, 2, 3] {
                let pool = build_pool(threads).unwrap();
                // Threshold 0: every mode pulls under `auto`; forced strategies cover the rest.
                let t = build(&coo, threads, 0);
                assert_eq!(t.width(), width, "{dims:?}");
                for mode in 0..dims.len() {
                    let b = Matrix::random(dims[mode] as usize, rank, 7 + mode as u64);
                    let want = phi_oracle(&coo, &factors, &b, mode, eps).unwrap();
                    let scale = want.as_slice().iter().fold(1.0f64, |a, x| a.max(x.abs()));
                    for kind in kinds() {
                        for sync in ConflictResolution::ALL {
                            let opts = PhiOptions {
                                kind,
                                sync: SyncChoice::Force(sync),
                                ..Default::default()
                            };
                            let mut engine = PhiEngine::new(&t, rank, opts).unwrap();
                            engine.prepare(&factors, mode, &pool).unwrap();
                            let mut got = Matrix::zeros(dims[mode] as usize, rank);
                            got.as_mut_slice().fill(f64::NAN);
                            let run = engine
                                .phi(&factors, &b, mode, eps, &mut got, &pool)
                                .unwrap();
                            let diff = got.max_abs_diff(&want);
                            assert!(
                                diff <= 1e-12 * scale,
                                "{} on {dims:?} rank {rank} mode {mode} {threads} threads: \
                                 {diff} (scale {scale})",
                                run.name
                            );
                            assert!(run.name.starts_with("phi_"), "{}", run.name);
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn cached_phi_needs_its_mode_prepared() {
    let coo = counts_tensor(&[10, 12, 14], 200, 3);
    let t = build(&coo, 2, 4);
    let pool = build_pool(2).unwrap();
    let f: Vec<Matrix> = [10, 12, 14].map(|d| Matrix::random(d, 2, d as u64)).into();
    let opts = PhiOptions {
        kind: PhiKind::Cached,
        ..Default::default()
    };
    let mut engine = PhiEngine::new(&t, 2, opts).unwrap();
    let mut out = Matrix::zeros(12, 2);
    let e = engine.phi(&f, &f[1], 1, 1e-10, &mut out, &pool);
    assert!(matches!(e, Err(AltoError::InvalidArgument(_))), "{e:?}");
    engine.prepare(&f, 0, &pool).unwrap();
    assert!(engine.phi(&f, &f[1], 1, 1e-10, &mut out, &pool).is_err());
    engine.prepare(&f, 1, &pool).unwrap();
    assert!(engine.phi(&f, &f[1], 1, 1e-10, &mut out, &pool).is_ok());
}

#[test]
fn log_likelihood_matches_its_oracle() {
    for (dims, threads) in [(&[20u64, 15, 9][..], 1usize), (&[9, 7, 11, 5], 3)] {
        let coo = counts_tensor(dims, 600, 5);
        let t = build(&coo, threads, 4);
        let pool = build_pool(threads).unwrap();
        let f: Vec<Matrix> = dims
            .iter()
            .map(|&d| Matrix::random(d as usize, 4, d))
            .collect();
        let lambda = [0.5, 2.0, 3.0, 1.5];
        let got = log_likelihood(&t, &lambda, &f, None, &pool).unwrap();
        // The oracle sums in file order over the unmerged nonzeros: compare on the merged ones.
        let want = loglik_oracle(&t.to_coo(), &lambda, &f).unwrap();
        assert!((got - want).abs() <= 1e-10 * want.abs(), "{got} vs {want}");
    }
}

fn assert_loglik_never_decreases(m: &AprModel, what: &str) {
    let ll = m.logliks();
    for w in ll.windows(2) {
        assert!(
            w[1] >= w[0] - 1e-10 * w[0].abs(),
            "{what}: the log-likelihood went down: {ll:?}"
        );
    }
}

#[test]
fn planted_poisson_model_is_recovered() {
    for (dims, rank, nnz, mean, seed) in [
        (vec![40u64, 30, 20], 3usize, 3000u64, 20.0, 1u64),
        (vec![25, 20, 15, 10], 4, 6000, 10.0, 2),
    ] {
        let (coo, planted) = alto::gen::lowrank_poisson(&dims, rank, nnz, mean, seed).unwrap();
        let t = build(&coo, 2, 4);
        let pool = build_pool(2).unwrap();
        // The best of a few random starts by log-likelihood, as in practice.
        let best = (0..3)
            .map(|s| {
                let opts = AprOptions {
                    seed: s,
                    max_iters: 300,
                    ..AprOptions::new(rank)
                };
                cp_apr(&t, &opts, &pool).unwrap()
            })
            .max_by(|a, b| a.final_loglik().total_cmp(&b.final_loglik()))
            .unwrap();
        let what = format!("{dims:?} rank {rank}");
        assert_loglik_never_decreases(&best, &what);
        let fms = factor_match_score(&best.factors, &planted);
        eprintln!(
            "{what}: factor match score {fms:.4}, log-likelihood {:.6e} after {} iterations",
            best.final_loglik(),
            best.history.len()
        );
        assert!(fms >= 0.95, "{what}: factor match score {fms}");
        for a in &best.factors {
            assert!(a.as_slice().iter().all(|&x| x >= 0.0), "{what}");
            for r in 0..rank {
                let s: f64 = (0..a.rows()).map(|i| a.get(i, r)).sum();
                assert!(
                    (s - 1.0).abs() < 1e-12 || s == 0.0,
                    "{what}: column sum {s}"
                );
            }
        }
    }
}

#[test]
fn observer_sees_every_iteration_and_can_stop() {
    let (coo, _) = alto::gen::lowrank_poisson(&[20, 15, 10], 2, 800, 5.0, 3).unwrap();
    let t = build(&coo, 2, 4);
    let pool = build_pool(2).unwrap();
    let opts = AprOptions {
        tol: 0.0,
        max_iters: 6,
        ..AprOptions::new(2)
    };
    let init = || alto::cpd::initial_factors(t.dims(), 2, 1);
    let mut seen = Vec::new();
    let m = cp_apr_observed(&t, init(), &opts, &pool, &mut |s| {
        seen.push(s.iter);
        if s.iter == 2 {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })
    .unwrap();
    assert_eq!(seen, [0, 1, 2]);
    assert!(!m.converged);
    let full =
        cp_apr_observed(&t, init(), &opts, &pool, &mut |_| ControlFlow::Continue(())).unwrap();
    assert_eq!(full.history.len(), 6);
    assert!(full.history.iter().all(|s| s.inner_iters == 3 * 10));
    for (a, b) in m.logliks().iter().zip(full.logliks()) {
        assert!((a - b).abs() <= 1e-12 * b.abs(), "{a} vs {b}");
    }
}

#[test]
fn bad_inputs_are_typed_errors() {
    let coo = CooTensor::new(vec![3, 3], vec![vec![0, 1], vec![1, 2]], vec![2.0, -1.0]).unwrap();
    let t = build(&coo, 1, 4);
    let pool = build_pool(1).unwrap();
    match cp_apr(&t, &AprOptions::new(1), &pool) {
        Err(AltoError::NegativeValue { value, .. }) => assert_eq!(value, -1.0),
        other => panic!("{other:?}"),
    }
    let coo = CooTensor::new(vec![3, 3], vec![vec![0, 1], vec![1, 2]], vec![2.0, 1.0]).unwrap();
    let t = build(&coo, 1, 4);
    let neg = vec![
        Matrix::zeros(3, 1),
        Matrix::from_vec(3, 1, vec![1.0, -1.0, 1.0]).unwrap(),
    ];
    match cp_apr_observed(&t, neg, &AprOptions::new(1), &pool, &mut |_| {
        ControlFlow::Continue(())
    }) {
        Err(AltoError::AprOption { option: "init", .. }) => {}
        other => panic!("{other:?}"),
    }
    match cp_apr(&t, &AprOptions::new(5), &pool) {
        Err(AltoError::AprOption { option: "rank", .. }) => {}
        other => panic!("{other:?}"),
    }
}

/// The Poisson log-likelihood of CP-ALS factors made nonnegative (absolute values), each model
/// value floored at `floor` (CP-ALS leaves rows of rarely seen ids at about 1e-290, where the
/// product underflows to 0 and the plain log-likelihood is -inf).
fn nonnegative_als_loglik(coo: &CooTensor, lambda: &[f64], factors: &[Matrix], floor: f64) -> f64 {
    let rank = lambda.len();
    let mut f = 0.0;
    for k in 0..coo.nnz() {
        let m: f64 = (0..rank)
            .map(|r| {
                factors.iter().enumerate().fold(lambda[r], |p, (n, u)| {
                    p * u.get(coo.mode_indices(n)[k] as usize, r).abs()
                })
            })
            .sum();
        f += coo.values()[k] * m.max(floor).ln();
    }
    for (r, &l) in lambda.iter().enumerate() {
        f -= factors.iter().fold(l, |p, u| {
            p * (0..u.rows()).map(|i| u.get(i, r).abs()).sum::<f64>()
        });
    }
    f
}

/// CP-APR on a real count tensor: the log-likelihood never decreases, the run converges within
/// `max_iters` when `converge` (else runs to the cap), and it ends at a log-likelihood at least
/// that of CP-ALS factors made nonnegative.
fn real_count_tensor(name: &str, max_iters: usize, converge: bool) {
    let Some(dir) = common::real_dir() else {
        eprintln!("skipping: ../shared/data/real is absent");
        return;
    };
    let coo = alto::io::tns::read_tns(&dir.join(name), None).unwrap();
    let t = build(&coo, 2, 4);
    let pool = build_pool(2).unwrap();
    let rank = 5;
    let opts = AprOptions {
        max_iters,
        ..AprOptions::new(rank)
    };
    let apr = cp_apr(&t, &opts, &pool).unwrap();
    assert_loglik_never_decreases(&apr, name);
    if converge {
        assert!(apr.converged, "{name}: {:?}", apr.logliks());
    } else {
        assert_eq!(apr.history.len(), max_iters, "{name}");
    }
    let als = cp_als(&t, &CpdOptions::new(rank), &pool).unwrap();
    let merged = t.to_coo();
    let als_ll = nonnegative_als_loglik(&merged, &als.lambda, &als.factors, 1e-10);
    let apr_ll = apr.final_loglik();
    // The same evaluation of the APR model (no floor needed) agrees with the library's.
    let check = nonnegative_als_loglik(&merged, &apr.lambda, &apr.factors, 0.0);
    assert!(
        (check - apr_ll).abs() <= 1e-9 * apr_ll.abs(),
        "{check} vs {apr_ll}"
    );
    eprintln!(
        "{name}: CP-APR log-likelihood {apr_ll:.6e} after {} iterations (converged: {}); \
         CP-ALS factors made nonnegative, model floored at 1e-10: {als_ll:.6e}",
        apr.history.len(),
        apr.converged
    );
    assert!(apr_ll >= als_ll, "{name}: APR {apr_ll} < ALS {als_ll}");
}

fn heavy() -> bool {
    cfg!(feature = "heavy-tests") || std::env::var_os("ALTO_HEAVY_TESTS").is_some()
}

#[test]
fn openflights_converges_and_beats_nonnegative_als() {
    // About 130 outer iterations at rank 5 (a few seconds on 2 threads).
    real_count_tensor("openflights-routes.tns", 1000, true);
}

#[test]
fn nycflights_beats_nonnegative_als() {
    // It converges after about 80 outer iterations (about 13 s on 2 threads): heavy only.
    if heavy() {
        real_count_tensor("nycflights13-4d.tns", 1000, true);
    } else {
        real_count_tensor("nycflights13-4d.tns", 15, false);
    }
}

/// A Python with NumPy: `$ALTO_PYTHON`, the README's test venv, or `python3`.
fn python_with_numpy() -> Option<String> {
    let venv = concat!(env!("CARGO_MANIFEST_DIR"), "/target/venv/bin/python");
    let candidates = [
        std::env::var("ALTO_PYTHON").ok(),
        Some(venv.into()),
        Some("python3".into()),
    ];
    candidates.into_iter().flatten().find(|p| {
        std::process::Command::new(p)
            .args(["-c", "import numpy"])
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// `alto cpd --model apr --init DIR` and `tests/apr_reference.py` (NumPy, the same algorithm
/// written plainly) give the same log-likelihood after every outer iteration.
#[test]
fn numpy_reference_gives_the_same_trajectory() {
    let Some(python) = python_with_numpy() else {
        eprintln!("skipping: no Python with NumPy (set ALTO_PYTHON)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let dims = [30u64, 25, 20];
    let (coo, _) = alto::gen::lowrank_poisson(&dims, 3, 2500, 8.0, 7).unwrap();
    let tns = dir.path().join("counts.tns");
    alto::io::tns::write_tns(&tns, &coo).unwrap();
    let init = dir.path().join("init");
    std::fs::create_dir_all(&init).unwrap();
    for (n, &d) in dims.iter().enumerate() {
        Matrix::random(d as usize, 3, 40 + n as u64)
            .write_npy(&init.join(format!("factor{n}.npy")))
            .unwrap();
    }
    let o = alto(&[
        "cpd",
        tns.to_str().unwrap(),
        "--model",
        "apr",
        "--dims",
        "30,25,20",
        "--rank",
        "3",
        "--iters",
        "30",
        "--init",
        init.to_str().unwrap(),
        "--threads",
        "2",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ours: Vec<f64> = v["iterations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["loglik"].as_f64().unwrap())
        .collect();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/apr_reference.py");
    let py = std::process::Command::new(&python)
        .args([
            script,
            tns.to_str().unwrap(),
            init.to_str().unwrap(),
            "30",
            "10",
            "1e-4",
            "0.01",
            "1e-10",
            "1e-10",
        ])
        .output()
        .unwrap();
    assert!(py.status.success(), "{}", stderr(&py));
    let theirs: Vec<f64> = serde_json::from_slice(&py.stdout).unwrap();
    assert_eq!(ours.len(), theirs.len(), "{ours:?}\n{theirs:?}");
    for (k, (a, b)) in ours.iter().zip(&theirs).enumerate() {
        assert!(
            (a - b).abs() <= 1e-8 * b.abs(),
            "iteration {k}: {a} vs NumPy {b}"
        );
    }
}

#[test]
fn cli_fits_counts_and_refuses_negative_values() {
    let dir = tempfile::tempdir().unwrap();
    let tns = dir.path().join("counts.tns");
    let tns_s = tns.to_str().unwrap();
    let factors = dir.path().join("planted");
    let g = alto(&[
        "gen",
        "lowrank",
        "--poisson",
        "10",
        "--dims",
        "30,20,10",
        "--rank",
        "2",
        "--nnz",
        "1500",
        "--seed",
        "3",
        "--save-factors",
        factors.to_str().unwrap(),
        "-o",
        tns_s,
    ]);
    assert!(g.status.success(), "{}", stderr(&g));
    let out = dir.path().join("model");
    for kernel in ["auto", "phi_cached", "phi_pull_scalar_rdyn", "scalar"] {
        let o = alto(&[
            "cpd",
            tns_s,
            "--model",
            "apr",
            "--dims",
            "30,20,10",
            "--rank",
            "2",
            "--iters",
            "50",
            "--kernel",
            kernel,
            "--threads",
            "2",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{kernel}: {}", stderr(&o));
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(text.contains("log-likelihood"), "{text}");
    }
    let lambda = Matrix::read_npy(&out.join("factor2.npy")).unwrap();
    assert_eq!((lambda.rows(), lambda.cols()), (10, 2));
    assert!(out.join("lambda.npy").exists());

    // A negative count: refused, naming the file and line (comments and blank lines count).
    let bad = dir.path().join("bad.tns");
    std::fs::write(&bad, "# counts\n1 1 2\n\n2 2 -3\n").unwrap();
    let o = alto(&[
        "cpd",
        bad.to_str().unwrap(),
        "--model",
        "apr",
        "--rank",
        "1",
    ]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(e.contains("bad.tns:4") && e.contains("negative"), "{e}");
    // Non-integer values: a warning, and the fit runs.
    let frac = dir.path().join("frac.tns");
    std::fs::write(&frac, "1 1 2\n2 2 1.5\n1 2 1\n").unwrap();
    let o = alto(&[
        "cpd",
        frac.to_str().unwrap(),
        "--model",
        "apr",
        "--rank",
        "1",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("line 2"), "{}", stderr(&o));
    // The memory plan names what CP-APR would allocate (here a 1.8 MiB Pi cache).
    let o = alto(&[
        "cpd",
        tns_s,
        "--model",
        "apr",
        "--rank",
        "150",
        "--kernel",
        "phi_cached",
        "--max-memory",
        "1M",
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("Pi cache"), "{}", stderr(&o));
    // CP-APR options are refused for CP-ALS, Phi kernels too.
    for extra in [&["--inner", "3"][..], &["--kernel", "phi_fused"]] {
        let mut args = vec!["cpd", tns_s, "--rank", "2"];
        args.extend_from_slice(extra);
        let o = alto(&args);
        assert!(!o.status.success(), "{extra:?}");
        assert!(stderr(&o).contains("apr"), "{}", stderr(&o));
    }
}
