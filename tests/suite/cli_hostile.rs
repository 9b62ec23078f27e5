//! Regression tests for the bad inputs that once crashed, aborted or hung the command: each now
//! ends in exit code 2 with a message naming the file, the option or the sizes, within seconds.

use std::path::Path;
use std::process::{Command, Output};

fn alto(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_alto"))
        .args(args)
        .output()
        .expect("run alto")
}

/// Exit code 2, no panic message, and stderr containing every one of `needles`.
fn assert_refused(o: &Output, needles: &[&str]) -> String {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "stderr: {err}");
    assert!(!err.contains("panicked"), "{err}");
    for n in needles {
        assert!(err.contains(n), "missing `{n}` in: {err}");
    }
    err
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn a_huge_tns_index_is_refused_by_the_memory_plan() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "huge.tns", "1099511627776 1 1 1.0\n1 2 2 2.0\n");
    let o = alto(&["mttkrp", &f, "--iters", "1", "--threads", "1"]);
    assert_refused(
        &o,
        &[
            "not enough memory",
            "factor matrices",
            "--rank",
            "--max-memory",
        ],
    );
}

#[test]
fn a_huge_rank_is_refused_by_the_memory_plan() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "t.tns", "1 1 1 1.0\n2 2 2 2.0\n3 1 2 0.5\n");
    // --dims makes 3000 factor rows: x rank 10^8 that is 2.4 TB, more than any machine here.
    for cmd in ["mttkrp", "cpd"] {
        let o = alto(&[
            cmd,
            &f,
            "--rank",
            "100000000",
            "--iters",
            "1",
            "--dims",
            "1000,1000,1000",
        ]);
        assert_refused(&o, &["not enough memory", "rank 100000000"]);
    }
}

#[test]
fn an_explicit_memory_limit_is_honoured_and_parsed() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "t.tns", "1 1 1 1.0\n2 2 2 2.0\n3 1 2 0.5\n");
    let o = alto(&[
        "mttkrp",
        &f,
        "--rank",
        "4096",
        "--max-memory",
        "64K",
        "--iters",
        "1",
    ]);
    assert_refused(&o, &["not enough memory", "the --max-memory limit"]);
    let o = alto(&["mttkrp", &f, "--max-memory", "lots"]);
    assert_refused(&o, &["--max-memory"]);
    let o = alto(&[
        "mttkrp",
        &f,
        "--max-memory",
        "1G",
        "--iters",
        "1",
        "--check",
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn too_many_threads_are_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "t.tns", "1 1 1 1.0\n2 2 2 2.0\n");
    for cmd in ["mttkrp", "cpd", "info"] {
        let start = std::time::Instant::now();
        let mut args = vec![cmd, &f, "--threads", "100000"];
        if cmd != "info" {
            args.extend(["--rank", "2"]);
        }
        let o = alto(&args);
        assert_refused(&o, &["--threads 100000", "per available CPU"]);
        assert!(
            start.elapsed().as_secs() < 30,
            "{cmd} took {:?}",
            start.elapsed()
        );
    }
}

#[test]
fn generator_options_that_are_not_finite_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("g.tns");
    let out = out.to_str().unwrap();
    for (opt, v) in [
        ("--cv-slices", "nan"),
        ("--cv-slices", "inf"),
        ("--cv-slices", "1e200"),
        ("--cv-fibers", "-1"),
    ] {
        let opt_value = format!("{opt}={v}");
        let o = alto(&[
            "gen", "skewed", "--dims", "20,20,20", "--nnz", "100", &opt_value, "-o", out,
        ]);
        assert_refused(&o, &[opt]);
    }
    let o = alto(&[
        "gen",
        "uniform",
        "--dims",
        "1099511627776,1099511627776,1099511627776",
        "--nnz",
        "1000000000000",
        "-o",
        out,
    ]);
    assert_refused(&o, &["not enough memory", "--nnz"]);
}

#[test]
fn a_tampered_alto_file_with_cleared_flags_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let tns = dir.path().join("s.tns");
    let alto_path = dir.path().join("s.alto");
    let (tns, alto_path) = (tns.to_str().unwrap(), alto_path.to_str().unwrap());
    let o = alto(&[
        "gen", "skewed", "--dims", "40,30,20", "--nnz", "3000", "--seed", "3", "-o", tns,
    ]);
    assert_eq!(o.status.code(), Some(0));
    let o = alto(&["convert", tns, alto_path, "--partitions", "2"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let mut bytes = std::fs::read(alto_path).unwrap();
    // Header: magic 8, version, width, order, reserved (u32 each), dims (3 x u64), masks
    // (3 x u128), nnz, partitions, duplicates, reuse (u64 each), flag bits (3 x i32).
    let order = 3;
    let counts = 24 + 8 * order + 16 * order;
    let nnz = u64::from_le_bytes(bytes[counts..counts + 8].try_into().unwrap()) as usize;
    let parts = u64::from_le_bytes(bytes[counts + 8..counts + 16].try_into().unwrap()) as usize;
    let flags_at = counts + 32;
    let width = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize / 8;
    let idx_at = flags_at + 4 * order + 8 * (parts + 1) + 16 * parts * order;
    let mut cleared = false;
    for m in 0..order {
        let bit = i32::from_le_bytes(
            bytes[flags_at + 4 * m..flags_at + 4 * m + 4]
                .try_into()
                .unwrap(),
        );
        if bit < 0 {
            continue;
        }
        for k in 0..nnz {
            let b = idx_at + k * width + bit as usize / 8;
            cleared |= bytes[b] & (1 << (bit % 8)) != 0;
            bytes[b] &= !(1 << (bit % 8));
        }
    }
    assert!(cleared, "no flag was set: the test would prove nothing");
    let n = bytes.len() - 4;
    let crc = crc32fast::hash(&bytes[..n]);
    bytes[n..].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(alto_path, &bytes).unwrap();
    let o = alto(&[
        "mttkrp",
        alto_path,
        "--threads",
        "2",
        "--sync",
        "flagged",
        "--iters",
        "1",
    ]);
    assert_refused(&o, &["s.alto", "boundary flags"]);
}
