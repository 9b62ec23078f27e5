//! End to end: every figure on two tiny stand-ins and one real-format file, into a temporary
//! reports directory; then a second run that must come entirely from the cache.

use alto_experiments::{run_figures, Opts};
use clap::Parser;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    opts: Opts,
}

const FIGURES: [&str; 6] = ["fig06", "fig07", "fig08", "fig10", "fig11", "fig12"];

fn opts(reports: &std::path::Path, data: &std::path::Path) -> Opts {
    Cli::parse_from([
        "test",
        "--scale",
        "0.002",
        "--tensors",
        "nips,darpa,tiny",
        "--data",
        data.to_str().unwrap(),
        "--threads",
        "1,2",
        "--reps",
        "1",
        "--min-seconds",
        "0",
        "--reports",
        reports.to_str().unwrap(),
        "--host",
        "testhost",
        "--no-progress",
    ])
    .opts
}

#[test]
fn all_figures_render_and_resume_from_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    // A 5-D tensor: HiCOO runs it, the figures note the paper's HiCOO could not.
    std::fs::write(
        data.join("tiny.tns"),
        "1 1 1 1 1 1.0\n2 3 1 2 1 2.0\n3 1 2 2 2 0.5\n1 2 3 1 2 1.5\n",
    )
    .unwrap();
    let reports = dir.path().join("reports");
    run_figures(&FIGURES, opts(&reports, &data)).unwrap();
    let stamps_first = stamps(&reports);
    assert!(!stamps_first.is_empty());
    for f in FIGURES {
        let d = reports.join(f).join("testhost");
        for name in [format!("{f}.png"), format!("{f}.csv"), "record.json".into()] {
            let p = d.join(&name);
            assert!(p.metadata().map(|m| m.len() > 0).unwrap_or(false), "{p:?}");
        }
    }
    let summary = std::fs::read_to_string(reports.join("SUMMARY.md")).unwrap();
    assert!(summary.contains("8x") && summary.contains("4.3x") && summary.contains("1.3x"));
    let csv = std::fs::read_to_string(reports.join("fig11/testhost/fig11.csv")).unwrap();
    assert!(csv.contains("tiny") && csv.contains("ALTO"), "{csv}");
    assert!(!csv.contains("FAILED"), "{csv}");
    // Figure 11's explanation splits CSF's bytes on the paper's tensors (nips here) from the
    // measured footprints, whether or not the claim holds at this scale.
    let headline = std::fs::read_to_string(reports.join("fig11/testhost/headline.json")).unwrap();
    let headline: serde_json::Value = serde_json::from_str(&headline).unwrap();
    let evidence = headline["gap"]["evidence"].as_array().unwrap();
    assert!(
        evidence.iter().any(|e| e
            .as_str()
            .is_some_and(|e| e.contains("nips (4 trees)") && e.contains("leaves 64"))),
        "{evidence:?}"
    );
    // Every cached entry is there; a second run measures nothing new.
    let cache = reports.join(".cache/testhost");
    let count = |p: &std::path::Path| walk(p).len();
    let before = count(&cache);
    let mtimes: Vec<_> = walk(&cache)
        .into_iter()
        .map(|p| std::fs::metadata(&p).unwrap().modified().unwrap())
        .collect();
    run_figures(&FIGURES, opts(&reports, &data)).unwrap();
    assert_eq!(count(&cache), before);
    let again: Vec<_> = walk(&cache)
        .into_iter()
        .map(|p| std::fs::metadata(&p).unwrap().modified().unwrap())
        .collect();
    assert_eq!(mtimes, again, "a cached run rewrote measurements");
    // The records report each measurement's own stamp, not the second run's.
    assert_eq!(stamps(&reports), stamps_first);
    // Another `--reps` changes the numbers: measured again, beside the first entries.
    let mut more_reps = opts(&reports, &data);
    more_reps.reps = 2;
    run_figures(&["fig10"], more_reps).unwrap();
    assert!(count(&cache) > before);
}

/// (variant, tensor, threads, isa, measured date) of every row of fig06's record.
fn stamps(reports: &std::path::Path) -> Vec<String> {
    let rec = record(reports, "fig06");
    rec["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            format!(
                "{} {} {} {} {}",
                m["variant"], m["tensor"], m["threads"], m["isa"], m["measured"]["date_utc"]
            )
        })
        .collect()
}

fn record(reports: &std::path::Path, figure: &str) -> serde_json::Value {
    let path = reports.join(figure).join("testhost").join("record.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn alto_isa_reaches_every_alto_variant_and_the_baselines_match_it() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let reports = dir.path().join("reports");
    let mut o = opts(&reports, &data);
    o.tensors = vec!["nips".into()];
    o.data = None;
    o.alto_isa = Some("scalar".into());
    run_figures(&["fig06", "fig10"], o).unwrap();
    let rows = |figure: &str| record(&reports, figure)["measurements"].clone();
    let mut alto_rows = 0;
    for figure in ["fig06", "fig10"] {
        assert_eq!(record(&reports, figure)["alto_isa"], "scalar");
        for m in rows(figure).as_array().unwrap() {
            let variant = m["variant"].as_str().unwrap();
            let isa = m["isa"].as_str().unwrap();
            // Fig. 6 also runs every format at the CPU's vector ISAs; at the run's ISA, ALTO's
            // kernels are scalar and the baselines portable.
            if ["scalar", "portable"].contains(&isa) {
                let want = if variant.starts_with("ALTO") {
                    "scalar"
                } else {
                    "portable"
                };
                assert_eq!(isa, want, "{m}");
            }
            if variant.starts_with("ALTO") && isa == "scalar" {
                alto_rows += 1;
                for ran in m["ran"].as_array().unwrap() {
                    assert!(ran.as_str().unwrap().contains("scalar"), "{m}");
                }
            }
        }
    }
    // ALTO, its rank-specialized and its any-rank kernel all ran scalar.
    assert_eq!(alto_rows, 3);
}

fn walk(p: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut v = Vec::new();
    if let Ok(rd) = std::fs::read_dir(p) {
        for e in rd.flatten() {
            let path = e.path();
            if path.is_dir() {
                v.extend(walk(&path));
            } else {
                v.push(path);
            }
        }
    }
    v.sort();
    v
}
