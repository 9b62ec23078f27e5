//! Construction timing on a real tensor: reads a `.tns` once, then builds the ALTO format
//! `--reps` times in one pool and prints the median of each phase, so a profiler sees the build
//! alone (reading the text file dominates a single `alto` run).
//!
//! ```sh
//! cargo run --release --example build_perf -- FILE.tns [--threads 1] [--reps 9]
//! ```

use alto::format::{AnyAlto, BuildOptions, BuildTimes};
use alto::harness::pool::build_pool;
use alto::io::tns::read_tns;
use anyhow::{bail, Context};

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let (mut file, mut threads, mut reps) = (None, 1usize, 9usize);
    while let Some(a) = args.next() {
        let mut val = || args.next().with_context(|| format!("{a} needs a value"));
        match a.as_str() {
            "--threads" => threads = val()?.parse().context("--threads")?,
            "--reps" => reps = val()?.parse().context("--reps")?,
            f if !f.starts_with("--") && file.is_none() => file = Some(f.to_string()),
            other => bail!("unknown option `{other}` (FILE, --threads, --reps)"),
        }
    }
    let Some(file) = file else {
        bail!("usage: build_perf FILE.tns [--threads N] [--reps N]")
    };
    if reps == 0 {
        bail!("--reps must be at least 1");
    }
    let coo = read_tns(file.as_ref(), None).with_context(|| format!("reading {file}"))?;
    let pool = build_pool(threads)?;
    let opts = BuildOptions {
        partitions: threads,
        ..BuildOptions::default()
    };
    let mut runs: Vec<BuildTimes> = Vec::with_capacity(reps);
    for _ in 0..reps {
        let (t, times) = pool.install(|| AnyAlto::build(&coo, &opts))?;
        std::hint::black_box(&t);
        drop(t);
        runs.push(times);
    }
    let median = |f: fn(&BuildTimes) -> f64| {
        let mut v: Vec<f64> = runs.iter().map(f).collect();
        v.sort_by(f64::total_cmp);
        (v[v.len() / 2] * 1e3, v[0] * 1e3, v[v.len() - 1] * 1e3)
    };
    println!(
        "{file}: {} nonzeros, {threads} threads, {reps} builds; ms median [min-max]",
        coo.nnz()
    );
    for (name, f) in [
        (
            "encode",
            (|t: &BuildTimes| t.encode) as fn(&BuildTimes) -> f64,
        ),
        ("sort", |t| t.sort),
        ("merge", |t| t.merge),
        ("partition", |t| t.partition),
        ("flags", |t| t.flags),
        ("total", |t| t.total),
    ] {
        let (m, lo, hi) = median(f);
        println!("  {name:<10} {m:8.2} [{lo:.2}-{hi:.2}]");
    }
    Ok(())
}
