//! The performance suite: CSV round trips, the parsing of a recorded `alto mttkrp --json`
//! document, the `--quick` suite end to end, the comparison mode with stand-in binaries, and
//! clear errors for bad options. No timing thresholds: only shapes of the output are checked.

use alto_experiments::perf::compare::{
    case_rows, parse_mttkrp_json, Case, CompareRow, COMPARE_CSV, COMPARE_MD,
};
use alto_experiments::perf::measure::{BuildRow, PerfRow};
use alto_experiments::perf::report::{read_csv, write_csv, BUILD_CSV, PERF_CSV};
use alto_experiments::perf::{run, PerfOpts, Settings};
use clap::Parser;
use std::path::{Path, PathBuf};

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    opts: PerfOpts,
}

fn opts(args: &[&str]) -> PerfOpts {
    Cli::try_parse_from(std::iter::once("perf-suite").chain(args.iter().copied()))
        .unwrap()
        .opts
}

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/alto_mttkrp.json")
}

fn perf_row(shape: &str, threads: usize, rank: usize, mode: usize) -> PerfRow {
    PerfRow {
        shape: shape.into(),
        dims: "2x3x4".into(),
        nnz: 10,
        index_width: "u32".into(),
        threads,
        rank,
        mode,
        isa: "auto".into(),
        kernel: "pull_avx2_r16".into(),
        status: "ok".into(),
        reps: 5,
        median_ms: 1.25,
        min_ms: 1.0,
        max_ms: 2.5,
        gflops: 3.5,
        cycles_per_nnz: 17.25,
        cycles_source: "estimated".into(),
        model_bytes_per_nnz: 12.0,
        model_bytes_per_nnz_worst: 400.0,
        roofline_bound_ms: 0.5,
        roofline_pct: 40.0,
        roofline_roof: "memory".into(),
        zero_output_ms: 0.125,
        zero_staging_ms: 0.0,
        kernel_ms: 1.0,
        pull_ms: 0.0625,
        fork_join_ms: 0.03125,
        other_ms: 0.015625,
    }
}

#[test]
fn csv_rows_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let rows = vec![perf_row("a, \"quoted\"", 1, 16, 0), perf_row("b", 2, 10, 3)];
    let p = dir.path().join("perf.csv");
    write_csv(&p, &rows).unwrap();
    assert_eq!(read_csv::<PerfRow>(&p).unwrap(), rows);
    let builds = vec![BuildRow {
        shape: "s".into(),
        dims: "5x6".into(),
        nnz_generated: 30,
        nnz: 29,
        threads: 2,
        reps: 3,
        encode_ms: 0.0,
        sort_ms: 1.5,
        merge_ms: 0.25,
        partition_ms: 0.5,
        flags_ms: 0.75,
        total_ms: 3.0,
        total_min_ms: 2.5,
        total_max_ms: 4.0,
    }];
    let p = dir.path().join("build.csv");
    write_csv(&p, &builds).unwrap();
    assert_eq!(read_csv::<BuildRow>(&p).unwrap(), builds);
    // The header names the columns.
    let text = std::fs::read_to_string(&p).unwrap();
    assert!(
        text.starts_with("shape,dims,nnz_generated,nnz,threads,"),
        "{text}"
    );
}

#[test]
fn parses_a_recorded_alto_mttkrp_json() {
    let text = std::fs::read_to_string(fixture()).unwrap();
    let doc = parse_mttkrp_json(&text).unwrap();
    assert_eq!((doc.rank, doc.threads, doc.modes.len()), (8, 2, 3));
    assert_eq!(doc.modes[0].name, "pull_avx2_r8");
    let b = doc.build_seconds.unwrap();
    assert!(b.total > 0.0 && b.sort > 0.0);
    let sum: f64 = doc.modes.iter().map(|m| m.median_s).sum();
    assert!((doc.total_median_s - sum).abs() < 1e-12);
    assert_eq!(doc.records[0].git_commit.len(), 40);
    // Old and new the same document: every ratio is 1.
    let case = Case {
        shape: "s".into(),
        threads: 2,
        rank: 8,
        kernel_choice: "auto".into(),
        old: vec![doc.clone(), doc.clone(), doc.clone()],
        new: vec![doc.clone(), doc.clone(), doc],
    };
    let rows = case_rows(&case);
    let whats: Vec<&str> = rows.iter().map(|r| r.what.as_str()).collect();
    assert_eq!(
        &whats[..5],
        ["mode 0", "mode 1", "mode 2", "all modes", "build total"]
    );
    assert!(
        rows.iter().all(|r| r.ratio == 1.0 && r.runs == 3),
        "{rows:?}"
    );
    assert_eq!(rows[0].old_kernel, "pull_avx2_r8");
    assert!(parse_mttkrp_json("{}").is_err());
    assert!(parse_mttkrp_json("[1, 2]").is_err());
}

#[test]
fn quick_suite_writes_csv_png_and_readme() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = opts(&[
        "--quick",
        "--shapes",
        "skewed-3d,darpa",
        "--ranks",
        "8,10",
        "--threads",
        "1,2",
        "--reps",
        "1",
        "--isa",
        "scalar,avx512",
        "--out",
        out.to_str().unwrap(),
        "--no-progress",
    ]);
    assert_eq!(run(o).unwrap(), out);
    for f in [
        PERF_CSV,
        BUILD_CSV,
        "time_vs_rank.png",
        "speedup.png",
        "README.md",
        "machine.json",
    ] {
        let p = out.join(f);
        assert!(p.metadata().map(|m| m.len() > 0).unwrap_or(false), "{p:?}");
    }
    let rows: Vec<PerfRow> = read_csv(&out.join(PERF_CSV)).unwrap();
    let kernels = if alto_kernels::Isa::Avx512.available() {
        3
    } else {
        2
    };
    // (3 + 3 modes) x 2 ranks x 2 thread counts x kernels.
    assert_eq!(rows.len(), 6 * 2 * 2 * kernels);
    for r in &rows {
        assert_eq!(r.status, "ok", "{r:?}");
        assert!(r.median_ms > 0.0 && r.min_ms <= r.median_ms && r.median_ms <= r.max_ms);
        assert!(r.model_bytes_per_nnz > 0.0 && r.cycles_per_nnz > 0.0);
        assert!(!r.kernel.is_empty() && !r.cycles_source.is_empty());
        let phases = [r.zero_output_ms, r.zero_staging_ms, r.kernel_ms, r.pull_ms];
        assert!(phases.iter().all(|&p| p >= 0.0), "{r:?}");
    }
    assert!(rows
        .iter()
        .any(|r| r.isa == "scalar" && r.kernel.contains("scalar")));
    let builds: Vec<BuildRow> = read_csv(&out.join(BUILD_CSV)).unwrap();
    assert_eq!(builds.len(), 4);
    let readme = std::fs::read_to_string(out.join("README.md")).unwrap();
    for needle in [
        "Commit:",
        "Machine:",
        "Settings:",
        "Cycles per nonzero:",
        "alto gen darpa",
    ] {
        assert!(readme.contains(needle), "{needle} missing:\n{readme}");
    }
    let png = std::fs::read(out.join("speedup.png")).unwrap();
    assert_eq!(&png[1..4], b"PNG");
}

/// An executable shell script standing in for an `alto` binary.
#[cfg(unix)]
fn fake_alto(dir: &Path, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join(name);
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

#[cfg(unix)]
#[test]
fn compare_mode_interleaves_two_binaries_and_tables_them() {
    let dir = tempfile::tempdir().unwrap();
    let fx = fixture();
    // Each side logs its calls, then prints the recorded document.
    let log = dir.path().join("calls.log");
    let body = |side: &str| {
        format!(
            "echo \"{side} $*\" >> '{}'\ncat '{}'",
            log.display(),
            fx.display()
        )
    };
    let old = fake_alto(dir.path(), "old-alto", &body("old"));
    let new = fake_alto(dir.path(), "new-alto", &body("new"));
    let out = dir.path().join("out");
    let work = dir.path().join("work");
    let o = opts(&[
        "--compare",
        old.to_str().unwrap(),
        "--new",
        new.to_str().unwrap(),
        "--work",
        work.to_str().unwrap(),
        "--quick",
        "--shapes",
        "skewed-3d",
        "--ranks",
        "8",
        "--threads",
        "1,2",
        "--reps",
        "2",
        "--iters",
        "3",
        "--out",
        out.to_str().unwrap(),
        "--no-progress",
    ]);
    run(o).unwrap();
    let calls = std::fs::read_to_string(&log).unwrap();
    let sides: Vec<&str> = calls.lines().map(|l| &l[..3]).collect();
    assert_eq!(
        sides,
        ["old", "new", "old", "new", "old", "new", "old", "new"]
    );
    assert!(calls.contains("mttkrp ") && calls.contains("--rank 8 --threads 2 --iters 3 --json"));
    assert!(work.join("skewed-3d-n20000-s1.tns").exists());
    let rows: Vec<CompareRow> = read_csv(&out.join(COMPARE_CSV)).unwrap();
    assert!(rows.iter().all(|r| r.ratio == 1.0 && r.runs == 2));
    assert!(rows
        .iter()
        .any(|r| r.what == "build sort" && r.threads == 2));
    let md = std::fs::read_to_string(out.join(COMPARE_MD)).unwrap();
    assert!(
        md.contains("| skewed-3d | 1 | 8 | auto | all modes |"),
        "{md}"
    );
    assert!(md.contains("1.00x") && md.contains("64e1070"), "{md}");

    // A failing binary: its stderr is in the error.
    let bad = fake_alto(
        dir.path(),
        "bad-alto",
        "echo 'error: no such tensor' >&2\nexit 2",
    );
    let o = opts(&[
        "--compare",
        bad.to_str().unwrap(),
        "--new",
        new.to_str().unwrap(),
        "--quick",
        "--shapes",
        "skewed-3d",
        "--ranks",
        "8",
        "--threads",
        "1",
        "--reps",
        "1",
        "--out",
        out.to_str().unwrap(),
        "--no-progress",
    ]);
    let e = format!("{:#}", run(o).unwrap_err());
    assert!(e.contains("error: no such tensor"), "{e}");
}

#[test]
fn bad_options_give_clear_errors() {
    let resolve = |args: &[&str]| Settings::resolve(opts(args)).unwrap_err().to_string();
    assert!(resolve(&["--reps", "0"]).contains("--reps must be at least 1"));
    assert!(resolve(&["--ranks", "8,0"]).contains("--ranks"));
    assert!(resolve(&["--threads", "two"]).contains("`two` is not a positive number or `all`"));
    assert!(resolve(&["--threads", "0"]).contains("--threads"));
    assert!(resolve(&["--isa", "sse9"]).contains("unknown ISA `sse9`"));
    assert!(resolve(&["--shapes", "cube"]).contains("unknown shape `cube`"));
    // Comparison-only options need --compare.
    assert!(Cli::try_parse_from(["perf-suite", "--new", "x"]).is_err());
    assert!(Cli::try_parse_from(["perf-suite", "--ranks", "ten"]).is_err());
    // A missing binary is named.
    let dir = tempfile::tempdir().unwrap();
    let o = opts(&[
        "--compare",
        "/nonexistent/alto",
        "--out",
        dir.path().to_str().unwrap(),
        "--no-progress",
    ]);
    let e = run(o).unwrap_err().to_string();
    assert!(
        e.contains("--compare: /nonexistent/alto is not a file"),
        "{e}"
    );
    // The binary exits non-zero with the message on stderr.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_perf-suite"))
        .args(["--isa", "sse9", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown ISA `sse9`"), "{err}");
}
