//! The `alto` command end to end: real tensors with `--check`, generators, conversions, JSON
//! output, and clear errors with exit code 2 for bad input.

use crate::common;

use common::{alto, stderr};

#[test]
fn real_tensors_pass_the_oracle_check() {
    let Some(files) = common::real_tensors() else {
        return;
    };
    assert!(!files.is_empty());
    for f in files {
        for (threads, sync) in [
            ("1", "auto"),
            ("2", "auto"),
            ("2", "atomic"),
            ("3", "flagged"),
            ("2", "pull"),
        ] {
            let o = alto(&[
                "mttkrp",
                f.to_str().unwrap(),
                "--check",
                "--iters",
                "1",
                "--rank",
                "9",
                "--threads",
                threads,
                "--sync",
                sync,
                "--json",
            ]);
            assert!(o.status.success(), "{}: {}", f.display(), stderr(&o));
            let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
            assert_eq!(v["check_passed"], true);
            assert_eq!(
                v["modes"].as_array().unwrap().len(),
                v["order"].as_u64().unwrap() as usize
            );
        }
    }
}

#[test]
fn gen_convert_info_and_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).to_str().unwrap().to_string();
    for kind in ["nips", "darpa", "uber"] {
        let o = alto(&[
            "gen",
            kind,
            "--nnz",
            "3000",
            "--seed",
            "2",
            "-o",
            &p("g.tns"),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let o = alto(&[
            "mttkrp",
            &p("g.tns"),
            "--check",
            "--iters",
            "1",
            "--threads",
            "2",
        ]);
        assert!(o.status.success(), "{kind}: {}", stderr(&o));
    }
    // amazon with its true dims needs a 128-bit index.
    let o = alto(&[
        "gen",
        "amazon",
        "--nnz",
        "2000",
        "--keep-dims",
        "-o",
        &p("a.tns"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = alto(&["info", &p("a.tns"), "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["index_width"], "u128");
    assert_eq!(v["total_bits"], 65);
    // tns -> alto -> tns keeps the tensor; mttkrp reads the binary file too.
    let o = alto(&[
        "gen",
        "lowrank",
        "--dims",
        "30,40,50",
        "--rank",
        "3",
        "--nnz",
        "2000",
        "-o",
        &p("l.tns"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        alto(&["convert", &p("l.tns"), &p("l.alto"), "--partitions", "3"])
            .status
            .success()
    );
    assert!(alto(&["convert", &p("l.alto"), &p("l2.tns")])
        .status
        .success());
    let a: serde_json::Value =
        serde_json::from_slice(&alto(&["info", &p("l.tns"), "--json"]).stdout).unwrap();
    let b: serde_json::Value =
        serde_json::from_slice(&alto(&["info", &p("l2.tns"), "--json"]).stdout).unwrap();
    assert_eq!(a["nnz"], b["nnz"]);
    assert_eq!(a["modes"], b["modes"]);
    let o = alto(&[
        "mttkrp",
        &p("l.alto"),
        "--check",
        "--iters",
        "2",
        "--mode",
        "1",
        "--rank",
        "4",
        "--save-factors",
        &p("f"),
        "--out",
        &p("o"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(dir.path().join("f/factor2.npy").is_file());
    assert!(dir.path().join("o/mttkrp1.npy").is_file());
    let o = alto(&[
        "mttkrp",
        &p("l.alto"),
        "--iters",
        "1",
        "--rank",
        "4",
        "--load-factors",
        &p("f"),
        "--check",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    // Loading factors of the wrong rank is an input error naming the file.
    let o = alto(&[
        "mttkrp",
        &p("l.alto"),
        "--iters",
        "1",
        "--rank",
        "5",
        "--load-factors",
        &p("f"),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("factor0.npy"), "{}", stderr(&o));
    // Table output names the kernel.
    let o = alto(&["info", &p("l.tns")]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("mask"));
}

#[test]
fn bad_input_is_a_clear_error_with_exit_code_2() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.tns");
    std::fs::write(&bad, "1 2 3 1.0\n1 2 x 1.0\n").unwrap();
    let o = alto(&["info", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("bad.tns:2") && e.contains("mode 3"), "{e}");
    assert!(!e.contains("panicked"), "{e}");

    std::fs::write(&bad, "1 2 3 1.0\n").unwrap();
    let cases: &[&[&str]] = &[
        &["mttkrp", bad.to_str().unwrap(), "--rank", "0"],
        &["mttkrp", bad.to_str().unwrap(), "--sync", "locks"],
        &["mttkrp", bad.to_str().unwrap(), "--kernel", "sse9_r16"],
        &[
            "mttkrp",
            bad.to_str().unwrap(),
            "--kernel",
            "scalar_r16",
            "--rank",
            "8",
        ],
        &["mttkrp", bad.to_str().unwrap(), "--mode", "7"],
        &["mttkrp", bad.to_str().unwrap(), "--threads", "0"],
        &["mttkrp", bad.to_str().unwrap(), "--decode", "magic"],
        &["info", bad.to_str().unwrap(), "--dims", "1,1,1"],
        &["info", "/nonexistent/file.tns"],
        &["info", bad.to_str().unwrap(), "--frobnicate"],
        &["gen", "nope", "--nnz", "5", "-o", "x.tns"],
        &["gen", "uniform", "--nnz", "5", "-o", "x.txt"],
    ];
    for args in cases {
        let o = alto(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(!e.is_empty() && !e.contains("panicked"), "{args:?}: {e}");
    }
    let o = alto(&["mttkrp", bad.to_str().unwrap(), "--sync", "locks"]);
    assert!(stderr(&o).contains("--sync"), "{}", stderr(&o));

    // A corrupted binary file is an error, not garbage.
    let alto_file = dir.path().join("t.alto");
    assert!(alto(&[
        "gen",
        "uniform",
        "--dims",
        "9,9,9",
        "--nnz",
        "50",
        "-o",
        alto_file.to_str().unwrap()
    ])
    .status
    .success());
    let mut bytes = std::fs::read(&alto_file).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    std::fs::write(&alto_file, &bytes).unwrap();
    let o = alto(&["info", alto_file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("t.alto"), "{}", stderr(&o));
}
