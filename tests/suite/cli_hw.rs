//! The `alto` binary's topology, pinning, counters and record output.

use crate::common;
use std::path::Path;

use common::alto;

fn ok(args: &[&str]) -> String {
    let out = alto(args);
    assert!(
        out.status.success(),
        "alto {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A small order-3 tensor with some repeated rows.
fn small_tns(dir: &Path) -> String {
    let mut text = String::new();
    for i in 0..400u64 {
        let (a, b, c) = (i % 13 + 1, i * 7 % 17 + 1, i * 11 % 19 + 1);
        text.push_str(&format!("{a} {b} {c} {}.5\n", i % 5));
    }
    let p = dir.join("small.tns");
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn topo_json_describes_the_machine_and_placements() {
    let v: serde_json::Value = serde_json::from_str(&ok(&["topo", "--json"])).unwrap();
    let t = &v["topology"];
    assert!(t["packages"].as_u64().unwrap() >= 1);
    assert!(t["numa_nodes"].as_u64().unwrap() >= 1);
    let cores = t["cores"].as_u64().unwrap();
    let pus = t["pus"].as_array().unwrap();
    assert!(cores >= 1 && pus.len() as u64 >= cores);
    assert!(pus[0]["os_index"].is_u64() && pus[0]["core"].is_u64());
    let caches = t["caches"].as_array().unwrap();
    assert!(caches
        .iter()
        .any(|c| c["level"] == 1 && c["size_bytes"].as_u64().unwrap() > 0));
    let threads = v["threads"].as_u64().unwrap() as usize;
    for policy in ["compact", "scatter", "cores"] {
        assert_eq!(
            v["placements"][policy].as_array().unwrap().len(),
            threads,
            "{policy}"
        );
    }
    assert!(!v["allowed_cpus"].as_array().unwrap().is_empty());
    let text = ok(&["topo", "--threads", "3"]);
    assert!(
        text.contains("packages") && text.contains("compact"),
        "{text}"
    );
}

#[test]
fn unknown_pin_policy_exits_2_and_names_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let f = small_tns(dir.path());
    for args in [
        vec!["mttkrp", f.as_str(), "--pin", "bogus"],
        vec!["info", f.as_str(), "--pin", "bogus"],
    ] {
        let out = alto(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--pin") && err.contains("bogus"), "{err}");
    }
}

#[test]
fn every_computing_command_takes_threads_and_pin() {
    let dir = tempfile::tempdir().unwrap();
    let f = small_tns(dir.path());
    let alto_file = dir.path().join("small.alto");
    let alto_file = alto_file.to_str().unwrap();
    ok(&["info", &f, "--threads", "2", "--pin", "compact"]);
    ok(&[
        "convert",
        &f,
        alto_file,
        "--threads",
        "2",
        "--pin",
        "scatter",
    ]);
    ok(&["info", alto_file, "--pin", "cores"]);
    let gen_out = dir.path().join("gen.alto");
    ok(&[
        "gen",
        "uniform",
        "--dims",
        "20,30,40",
        "--nnz",
        "500",
        "--threads",
        "2",
        "--pin",
        "compact",
        "-o",
        gen_out.to_str().unwrap(),
    ]);
    let text = ok(&[
        "mttkrp",
        alto_file,
        "--threads",
        "2",
        "--pin",
        "compact",
        "--iters",
        "1",
    ]);
    assert!(text.contains("pinned compact"), "{text}");
}

#[test]
fn mttkrp_counters_and_records() {
    let dir = tempfile::tempdir().unwrap();
    let f = small_tns(dir.path());
    let csv = dir.path().join("records.csv");
    let out_dir = dir.path().join("out");
    let json = ok(&[
        "mttkrp",
        &f,
        "--counters",
        "--json",
        "--pin",
        "compact",
        "--threads",
        "2",
        "--iters",
        "3",
        "--record",
        csv.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["pin"]["policy"], "compact");
    assert_eq!(v["pin"]["workers"].as_array().unwrap().len(), 2);
    let modes = v["modes"].as_array().unwrap();
    assert_eq!(modes.len(), 3);
    for m in modes {
        let c = &m["counters"];
        assert_eq!(c["calls"], 3);
        assert!(c["wall_s"].as_f64().unwrap() > 0.0);
        let tc = &c["events"]["task-clock"];
        assert_eq!(tc["status"], "value", "{tc}");
        assert!(tc["raw"].as_u64().unwrap() > 0, "{tc}");
        for name in ["cycles", "instructions", "page-faults", "context-switches"] {
            let e = &c["events"][name];
            match e["status"].as_str() {
                Some("value") => assert!(e["scaled"].is_number()),
                Some("unavailable") => assert!(!e["reason"].as_str().unwrap().is_empty()),
                other => panic!("{name}: status {other:?}"),
            }
        }
        for q in ["flops", "gflops", "bytes", "intensity"] {
            let src = c["derived"][q]["source"].as_str().unwrap();
            assert!(src == "counters" || src == "model", "{q}: {src}");
        }
    }
    let records = v["records"].as_array().unwrap();
    assert_eq!(records.len(), 3);
    let r = &records[0];
    for field in [
        "program",
        "git_commit",
        "date",
        "cpu_model",
        "cpu_flags",
        "isa",
        "kernel",
        "threads",
        "pin",
        "rank",
        "tensor",
        "shape",
        "repetitions",
        "min_s",
        "median_s",
        "max_s",
        "git_dirty",
    ] {
        assert!(!r[field].is_null(), "record lacks {field}");
    }
    assert_eq!(r["tensor"], "small");
    assert_eq!(r["repetitions"], 3);
    assert_eq!(r["pin"], "compact");
    assert!(r["date"].as_str().unwrap().ends_with('Z'));
    let rows = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(rows.lines().count(), 4, "{rows}");
    assert!(rows.starts_with("program,"));
    assert!(out_dir.join("mttkrp0.meta.json").is_file());

    // The text form says plainly what is missing and still shows the software events.
    let text = ok(&[
        "mttkrp",
        &f,
        "--counters",
        "--threads",
        "2",
        "--iters",
        "2",
        "--mode",
        "1",
    ]);
    assert!(text.contains("counters, mode 1"), "{text}");
    assert!(
        text.contains("task-clock") && text.contains("context-switches"),
        "{text}"
    );
    let cycles = &v["modes"][0]["counters"]["events"]["cycles"];
    if cycles["status"] == "unavailable" {
        assert!(text.contains("hardware counters unavailable: "), "{text}");
        assert!(text.contains("(model"), "{text}");
    }
}
