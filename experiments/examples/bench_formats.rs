//! Quick per-format MTTKRP timing on one stand-in, in nanoseconds per nonzero per mode (no
//! caching, no figures): a tool for looking at one kernel while changing it.
//!
//! `cargo run --release -p alto-experiments --example bench_formats -- darpa 500000 2 [CSF]`
//! (tensor, nonzeros, threads, optionally one format). `BENCH_REPS` sets the repetitions (20).

use alto::harness::pool::build_pool;
use alto::mttkrp::{mttkrp, MttkrpOptions, Workspace};
use alto::{AnyAlto, BuildOptions, Matrix};
use alto_experiments::formats::{canonical_coo, Baseline, BaselineKind, BaselineOptions, CooSync};
use anyhow::{anyhow, Context, Result};
use std::time::Instant;

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let name = args.next().unwrap_or_else(|| "darpa".into());
    let nnz: u64 = args.next().map_or(Ok(500_000), |s| s.parse())?;
    let threads: usize = args.next().map_or(Ok(1), |s| s.parse())?;
    let only = args.next();
    let reps: usize = std::env::var("BENCH_REPS").map_or(Ok(20), |s| s.parse())?;
    let p = alto::gen::find_preset(&name).ok_or_else(|| anyhow!("no preset `{name}`"))?;
    let dims = alto_experiments::tensors::standin_dims(
        p,
        nnz,
        alto_experiments::tensors::MAX_STANDIN_DENSITY,
    );
    let raw = alto::gen::hierarchical(&dims, nnz, p.cv_fibers_per_slice, p.cv_nnz_per_fiber, 1)?;
    let coo = canonical_coo(&raw)?;
    let pool = build_pool(threads)?;
    let rank = 16;
    let factors: Vec<Matrix> = coo
        .dims()
        .iter()
        .enumerate()
        .map(|(m, &d)| Matrix::random(d as usize, rank, m as u64))
        .collect();
    println!(
        "{name}: dims {:?}, {} nonzeros, {threads} threads",
        coo.dims(),
        coo.nnz()
    );
    let per_nnz = |secs: f64| secs / reps as f64 / coo.nnz() as f64 * 1e9;
    for kind in BaselineKind::ALL {
        if only.as_deref().is_some_and(|o| o != kind.name()) {
            continue;
        }
        let (f, build) = Baseline::build(kind, &coo, &pool).context("build")?;
        let syncs: &[CooSync] = if kind == BaselineKind::Coo {
            &CooSync::ALL
        } else {
            &[CooSync::Atomic]
        };
        for &coo_sync in syncs {
            let opts = BaselineOptions {
                coo_sync,
                ..Default::default()
            };
            let mut line = format!("{:>12} build {build:.3} s:", kind.name());
            for mode in 0..coo.order() {
                let mut y = Matrix::zeros(coo.dims()[mode] as usize, rank);
                let ran = f.mttkrp(&factors, mode, &mut y, &opts, &pool)?;
                let t = Instant::now();
                for _ in 0..reps {
                    f.mttkrp(&factors, mode, &mut y, &opts, &pool)?;
                }
                line += &format!(" {:.1} ns ({ran})", per_nnz(t.elapsed().as_secs_f64()));
            }
            println!("{line}");
        }
    }
    if only.as_deref().is_some_and(|o| o != "ALTO") {
        return Ok(());
    }
    let (a, times) = pool.install(|| {
        AnyAlto::build(
            &coo,
            &BuildOptions {
                partitions: threads,
                ..Default::default()
            },
        )
    })?;
    let mut ws = Workspace::new(&a, rank);
    let mut line = format!("{:>12} build {:.3} s:", "ALTO", times.total);
    for mode in 0..coo.order() {
        let mut y = Matrix::zeros(coo.dims()[mode] as usize, rank);
        let o = MttkrpOptions::default();
        let run = mttkrp(&a, &factors, mode, &mut y, &o, &mut ws, &pool)?;
        let t = Instant::now();
        for _ in 0..reps {
            mttkrp(&a, &factors, mode, &mut y, &o, &mut ws, &pool)?;
        }
        line += &format!(
            " {:.1} ns ({})",
            per_nnz(t.elapsed().as_secs_f64()),
            run.name
        );
    }
    println!("{line}\n  ALTO build steps: {times:?}");
    Ok(())
}
