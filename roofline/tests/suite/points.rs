//! `--points`: records from `alto mttkrp` placed on the stated Cascade Lake profile, with the
//! intensity counted where the report carries counters. The fixtures: `vm_*` were recorded on
//! this project's VM (no PMU); `constructed_*` are that recording with round counter values
//! written in (see their `fixture_note`), so the counter path runs where no PMU is.

use alto_roofline::points::{place_records, read_points};
use alto_roofline::profile::MachineProfile;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn cascade_lake() -> MachineProfile {
    MachineProfile::load(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("profiles/cascadelake-8280.json"),
    )
    .unwrap()
}

/// 3 timed calls x order 4 x rank 16 x 15388 nonzeros.
const REGION_FLOPS: f64 = 3.0 * 4.0 * 16.0 * 15388.0;

#[test]
fn without_a_pmu_the_model_is_used_and_the_reason_given() {
    let records = read_points(&fixture("vm_no_pmu_report.json")).unwrap();
    assert_eq!(records.len(), 1);
    let (placed, warnings) = place_records(&cascade_lake(), &records).unwrap();
    let p = &placed[0];
    assert_eq!(p.oi_source, "model");
    assert!(p.oi_note.contains("no PMU in this VM"), "{}", p.oi_note);
    assert!(
        p.oi_note.contains("no uncore memory-controller PMU"),
        "{}",
        p.oi_note
    );
    // Measured: the algorithm's flops over the recorded median.
    let median = records[0].record.median_s;
    let want = 4.0 * 16.0 * 15388.0 / median / 1e9;
    assert!((p.measured_gflops.unwrap() - want).abs() < 1e-9 * want);
    assert_eq!(p.case, "nips mode 4, 2 threads");
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].contains("2 threads") && warnings[0].contains("112"));
}

#[test]
fn uncore_imc_counts_give_the_intensity() {
    let records = read_points(&fixture("constructed_imc_report.json")).unwrap();
    assert_eq!(records[0].counted_calls, Some(3));
    let (placed, _) = place_records(&cascade_lake(), &records).unwrap();
    let p = &placed[0];
    assert_eq!(p.oi_source, "counters:imc");
    assert!((p.oi - REGION_FLOPS / (36000.0 * 64.0)).abs() < 1e-12);
    assert!((p.oi_l3.unwrap() - REGION_FLOPS / (90000.0 * 64.0)).abs() < 1e-12);
    assert!((p.model_bound_gflops - 210.0 * p.oi).abs() < 1e-9);
    let pct = 100.0 * p.measured_gflops.unwrap() / p.model_bound_gflops;
    assert!((p.percent_of_bound.unwrap() - pct).abs() < 1e-9);
}

#[test]
fn llc_misses_stand_in_without_an_uncore_pmu() {
    let records = read_points(&fixture("constructed_llc_report.json")).unwrap();
    let (placed, _) = place_records(&cascade_lake(), &records).unwrap();
    assert_eq!(placed[0].oi_source, "counters:llc-misses");
    assert!((placed[0].oi - REGION_FLOPS / (25000.0 * 64.0)).abs() < 1e-12);
}

#[test]
fn record_csv_and_json_read_alike() {
    let csv = read_points(&fixture("vm_records.csv")).unwrap();
    assert_eq!(csv.len(), 2);
    assert!(csv[0].at.ends_with("vm_records.csv:2"), "{}", csv[0].at);
    assert_eq!(csv[0].record.shape, vec![16, 18, 91, 17]);
    let (placed, _) = place_records(&cascade_lake(), &csv).unwrap();
    assert_eq!(placed[1].case, "nips mode 4 (no rank spec.), 2 threads");
    assert_eq!(placed[0].accumulation, "pull");
    assert_eq!(placed[0].index_width, "u32");
    let json = read_points(&fixture("vm_records.json")).unwrap();
    assert_eq!(json.len(), 1);
    assert_eq!(json[0].record.kernel, "pull_avx512_r16");
}

#[test]
fn bad_files_name_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read_to_string(fixture("vm_records.csv")).unwrap();
    let mut lines: Vec<String> = good.lines().map(String::from).collect();
    lines[2] = lines[2].replace("16x18x91x17", "16xAx91x17");
    let bad_csv = dir.path().join("bad.csv");
    std::fs::write(&bad_csv, lines.join("\n")).unwrap();
    let e = read_points(&bad_csv).unwrap_err().to_string();
    assert!(e.contains("bad.csv:3:") && e.contains("16xAx91x17"), "{e}");

    let json = std::fs::read_to_string(fixture("vm_records.json")).unwrap();
    let bad_json = dir.path().join("bad.json");
    std::fs::write(&bad_json, json.replace("\"mode\": 3", "\"mode\": 9")).unwrap();
    let e = read_points(&bad_json).unwrap_err().to_string();
    assert!(
        e.contains("bad.json:") && e.contains("mode 9 out of range"),
        "{e}"
    );
    let line: u64 = e.split(':').nth(1).unwrap().trim().parse().unwrap();
    assert!(line > 1, "{e}");

    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, "[\n{\"program\": \n").unwrap();
    let e = read_points(&broken).unwrap_err().to_string();
    assert!(e.contains("broken.json:3:"), "{e}");

    let e = read_points(Path::new("/nonexistent/rec.json"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("/nonexistent/rec.json"), "{e}");
}
