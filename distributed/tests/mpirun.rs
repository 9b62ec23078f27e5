//! The `alto-mpi` binary under `mpirun` on 2, 3 and 4 ranks (oversubscribed), against the
//! single-process library: MTTKRP on every mode to 1e-12 relative, the CP-ALS trajectory to
//! 1e-10, and errors that end every rank with a message instead of a hang.
#![cfg(feature = "mpi")]

use alto::cpd::{cp_als, initial_factors, CpdOptions};
use alto::format::BuildOptions;
use alto::mttkrp::{mttkrp, Workspace};
use alto::{AnyAlto, Matrix};
use std::path::{Path, PathBuf};
use std::process::Output;

const RANKS: [usize; 3] = [2, 3, 4];

fn mpirun(np: usize, args: &[&str]) -> Output {
    std::process::Command::new("mpirun")
        .args([
            "--oversubscribe",
            "--allow-run-as-root",
            "-np",
            &np.to_string(),
        ])
        .arg(env!("CARGO_BIN_EXE_alto-mpi"))
        .args(args)
        .args(["--threads", "1"])
        .output()
        .expect("run mpirun (Debian: openmpi-bin)")
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn real_tensors() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/real");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        eprintln!("skipping: ../shared/data/real is absent");
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "tns"))
        .collect();
    files.sort();
    files
}

fn pool() -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap()
}

fn load(path: &Path) -> AnyAlto {
    let coo = alto::io::tns::read_tns(path, None).unwrap();
    let opts = BuildOptions {
        partitions: 2,
        ..Default::default()
    };
    AnyAlto::build(&coo, &opts).unwrap().0
}

/// Distributed MTTKRP of every mode equals the library's, to 1e-12 relative.
fn check_mttkrp(path: &Path, rank: usize) {
    let t = load(path);
    let factors = initial_factors(t.dims(), rank, 3);
    let pool = pool();
    let mut ws = Workspace::new(&t, rank);
    let want: Vec<Matrix> = (0..t.order())
        .map(|mode| {
            let mut y = Matrix::zeros(t.dims()[mode] as usize, rank);
            mttkrp(
                &t,
                &factors,
                mode,
                &mut y,
                &Default::default(),
                &mut ws,
                &pool,
            )
            .unwrap();
            y
        })
        .collect();
    for np in RANKS {
        let out = tempfile::tempdir().unwrap();
        let o = mpirun(
            np,
            &[
                "mttkrp",
                path.to_str().unwrap(),
                "--rank",
                &rank.to_string(),
                "--seed",
                "3",
                "--out",
                out.path().to_str().unwrap(),
            ],
        );
        assert!(o.status.success(), "{}: {}", path.display(), text(&o));
        for (mode, w) in want.iter().enumerate() {
            let got = Matrix::read_npy(&out.path().join(format!("mttkrp{mode}.npy"))).unwrap();
            assert_eq!((got.rows(), got.cols()), (w.rows(), w.cols()));
            let scale = w.as_slice().iter().fold(1e-300f64, |a, x| a.max(x.abs()));
            let err = got.max_abs_diff(w) / scale;
            assert!(err <= 1e-12, "{} P={np} mode {mode}: {err}", path.display());
        }
    }
}

#[test]
fn mttkrp_matches_single_process_on_real_tensors() {
    for path in real_tensors() {
        check_mttkrp(&path, 5);
    }
}

fn write_tns(dir: &Path, name: &str, coo: &alto::CooTensor) -> PathBuf {
    let path = dir.join(name);
    alto::io::tns::write_tns(&path, coo).unwrap();
    path
}

#[test]
fn mttkrp_matches_on_a_70_bit_index_and_on_fewer_nonzeros_than_twice_the_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let wide = alto::gen::uniform(&[16384; 5], 600, 11).unwrap();
    let layout = alto::format::Layout::new(wide.dims()).unwrap();
    assert_eq!(layout.total_bits(), 70);
    check_mttkrp(&write_tns(dir.path(), "wide.tns", &wide), 4);
    // 5 nonzeros: under 2 x P for P = 3 and 4, so some ranks hold none.
    let tiny = alto::gen::uniform(&[4, 6, 3], 5, 12).unwrap();
    assert!(tiny.nnz() < 2 * 3);
    check_mttkrp(&write_tns(dir.path(), "tiny.tns", &tiny), 3);
}

/// The printed fits of `alto-mpi cpd` (the `alto cpd` table).
fn printed_fits(stdout: &str) -> Vec<f64> {
    stdout
        .lines()
        .skip_while(|l| !l.starts_with("iter  fit"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .map(|l| l.split_whitespace().nth(1).unwrap().parse().unwrap())
        .collect()
}

#[test]
fn cp_als_follows_the_single_process_trajectory() {
    let Some(path) = real_tensors()
        .into_iter()
        .find(|p| p.ends_with("kinships.tns"))
    else {
        return;
    };
    let t = load(&path);
    let opts = CpdOptions {
        max_iters: 8,
        tol: 0.0,
        seed: 9,
        ..CpdOptions::new(4)
    };
    let model = cp_als(&t, &opts, &pool()).unwrap();
    for np in RANKS {
        let out = tempfile::tempdir().unwrap();
        let o = mpirun(
            np,
            &[
                "cpd",
                path.to_str().unwrap(),
                "--rank",
                "4",
                "--seed",
                "9",
                "--iters",
                "8",
                "--tol",
                "0",
                "--out",
                out.path().to_str().unwrap(),
            ],
        );
        assert!(o.status.success(), "{}", text(&o));
        let fits = printed_fits(&String::from_utf8_lossy(&o.stdout));
        assert_eq!(fits.len(), model.history.len(), "{}", text(&o));
        for (a, b) in fits.iter().zip(model.fits()) {
            assert!((a - b).abs() <= 1e-10, "P={np}: fit {a} vs {b}");
        }
        let lambda = read_1d(&out.path().join("lambda.npy"));
        assert_eq!(lambda.len(), model.lambda.len());
        for (a, b) in lambda.iter().zip(&model.lambda) {
            assert!(
                (a - b).abs() <= 1e-8 * b.abs().max(1.0),
                "P={np}: lambda {a} vs {b}"
            );
        }
        for (n, u) in model.factors.iter().enumerate() {
            let got = Matrix::read_npy(&out.path().join(format!("factor{n}.npy"))).unwrap();
            assert!(got.max_abs_diff(u) <= 1e-8, "P={np}: factor {n}");
        }
    }
}

fn read_1d(path: &Path) -> Vec<f64> {
    let bytes = std::fs::read(path).unwrap();
    let npy = npyz::NpyFile::new(&bytes[..]).unwrap();
    npy.into_vec::<f64>().unwrap()
}

#[test]
fn a_rank_that_cannot_read_ends_every_rank_with_the_message() {
    for np in [2, 3] {
        let o = mpirun(np, &["mttkrp", "/nonexistent/x.tns", "--rank", "2"]);
        assert!(!o.status.success(), "{}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("/nonexistent/x.tns: cannot read"),
            "{}",
            text(&o)
        );
    }
}

#[test]
fn a_bad_line_in_a_later_share_names_its_file_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut body = String::new();
    for i in 1..=40 {
        body.push_str(&format!("{} {} 1 1.5\n", i, 41 - i));
    }
    body.push_str("3 x 1 2.0\n"); // line 41, in the last rank's share
    let path = dir.path().join("bad.tns");
    std::fs::write(&path, body).unwrap();
    let o = mpirun(3, &["mttkrp", path.to_str().unwrap(), "--rank", "2"]);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("bad.tns:41:"),
        "{}",
        text(&o)
    );
}

#[test]
fn a_rank_over_its_memory_limit_ends_every_rank_with_the_message() {
    let Some(path) = real_tensors().into_iter().next() else {
        return;
    };
    let o = mpirun(
        2,
        &[
            "mttkrp",
            path.to_str().unwrap(),
            "--rank",
            "2",
            "--max-memory",
            "1000",
        ],
    );
    assert!(!o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("out of memory"),
        "{}",
        text(&o)
    );
}
