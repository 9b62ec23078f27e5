//! End-to-end MTTKRP timing on the two stand-in tensors of the performance target: all modes,
//! rank 16, median over repetitions after a warm-up, at the requested thread counts, for each
//! kernel (`auto`, an ISA, or a full kernel name). Every kernel's result is compared with the
//! scalar kernel's before it is timed, so a wrong kernel cannot post a time.
//!
//! ```sh
//! cargo run --release --example mttkrp_perf -- [--threads 1,2] [--reps 15] [--rank 16] \
//!     [--kernels scalar,pulp,avx2,avx512] [--tensor all|3d|4d] [--prefetch N] [--sync auto]
//! ```

use alto::dispatch::KernelChoice;
use alto::format::{AnyAlto, BuildOptions};
use alto::harness::pool::build_pool;
use alto::mttkrp::{mttkrp, mttkrp_flops, MttkrpOptions, SyncChoice, Workspace};
use alto::{CooTensor, Matrix};
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, LogNormal};
use std::time::Instant;

type Rng64 = rand_pcg::Pcg64Mcg;

/// Log-normal weights with coefficient of variation `cv`.
fn lognormal(n: usize, cv: f64, rng: &mut Rng64) -> Vec<f64> {
    let sigma = (1.0 + cv * cv).ln().sqrt();
    let d = LogNormal::new(0.0, sigma).expect("finite sigma");
    (0..n).map(|_| d.sample(rng)).collect()
}

fn cumulative(w: &[f64]) -> Vec<f64> {
    let mut acc = 0.0;
    w.iter()
        .map(|x| {
            acc += x;
            acc
        })
        .collect()
}

fn draw(cum: &[f64], rng: &mut Rng64) -> u64 {
    let x = rng.random::<f64>() * cum[cum.len() - 1];
    cum.partition_point(|&c| c <= x).min(cum.len() - 1) as u64
}

/// Skewed hierarchical tensor: slices get log-normal fiber counts, fibers log-normal nonzero
/// counts, the other modes' ids log-normal popularities over randomly placed hot ids.
fn skewed(dims: &[u64], nnz: usize, seed: u64) -> CooTensor {
    let mut rng = Rng64::seed_from_u64(seed);
    let pop: Vec<Vec<f64>> = dims
        .iter()
        .map(|&d| cumulative(&lognormal(d as usize, 1.0, &mut rng)))
        .collect();
    let fibers = ((dims[0] * dims[1]) as usize / 2).min(nnz);
    let per_fiber = lognormal(fibers, 1.0, &mut rng);
    let scale = nnz as f64 / per_fiber.iter().sum::<f64>();
    let mut inds: Vec<Vec<u64>> = vec![Vec::with_capacity(nnz + 64); dims.len()];
    let mut vals = Vec::with_capacity(nnz + 64);
    for w in per_fiber {
        let x = w * scale;
        let count = x.floor() as u64 + u64::from(rng.random::<f64>() < x - x.floor());
        let (s, f) = (draw(&pop[0], &mut rng), draw(&pop[1], &mut rng));
        for _ in 0..count {
            inds[0].push(s);
            inds[1].push(f);
            for (m, ind) in inds.iter_mut().enumerate().skip(2) {
                ind.push(draw(&pop[m], &mut rng));
            }
            vals.push(rng.random_range(0.0..1.0));
        }
    }
    CooTensor::new(dims.to_vec(), inds, vals).expect("valid by construction")
}

fn uniform(dims: &[u64], nnz: usize, seed: u64) -> CooTensor {
    let mut rng = Rng64::seed_from_u64(seed);
    let inds = dims
        .iter()
        .map(|&d| (0..nnz).map(|_| rng.random_range(0..d)).collect())
        .collect();
    let vals = (0..nnz).map(|_| rng.random_range(0.0..1.0)).collect();
    CooTensor::new(dims.to_vec(), inds, vals).expect("valid by construction")
}

struct Args {
    threads: Vec<usize>,
    reps: usize,
    rank: usize,
    kernels: Vec<String>,
    tensor: String,
    sync: SyncChoice,
}

fn parse_args() -> anyhow::Result<Args> {
    let mut a = Args {
        threads: vec![1, 2],
        reps: 15,
        rank: 16,
        kernels: vec![
            "scalar".into(),
            "pulp".into(),
            "avx2".into(),
            "avx512".into(),
        ],
        tensor: "all".into(),
        sync: SyncChoice::Auto,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut val = || {
            it.next()
                .ok_or_else(|| anyhow::anyhow!("{flag} needs a value"))
        };
        match flag.as_str() {
            "--threads" => {
                a.threads = val()?
                    .split(',')
                    .map(|s| s.parse())
                    .collect::<Result<_, _>>()?
            }
            "--reps" => a.reps = val()?.parse()?,
            "--rank" => a.rank = val()?.parse()?,
            "--kernels" => a.kernels = val()?.split(',').map(String::from).collect(),
            "--tensor" => a.tensor = val()?,
            "--sync" => a.sync = val()?.parse().map_err(anyhow::Error::msg)?,
            other => anyhow::bail!("unknown flag {other}"),
        }
    }
    Ok(a)
}

/// C++ reference medians (ms) at 1 and 2 threads, all modes, rank 16.
fn reference_ms(name: &str, threads: usize) -> Option<f64> {
    match (name, threads) {
        ("3d", 1) => Some(24.0),
        ("3d", 2) => Some(16.0),
        ("4d", 1) => Some(23.0),
        ("4d", 2) => Some(15.0),
        _ => None,
    }
}

fn main() -> anyhow::Result<()> {
    let args = parse_args()?;
    let mut tensors = Vec::new();
    if args.tensor == "all" || args.tensor == "3d" {
        tensors.push(("3d", skewed(&[2000, 1500, 1000], 2_000_000, 1)));
    }
    if args.tensor == "all" || args.tensor == "4d" {
        tensors.push(("4d", uniform(&[500, 400, 3000, 20], 1_000_000, 2)));
    }
    let rank = args.rank;
    for (name, coo) in &tensors {
        let factors: Vec<Matrix> = coo
            .dims()
            .iter()
            .enumerate()
            .map(|(m, &d)| Matrix::random(d as usize, rank, 10 + m as u64))
            .collect();
        for &threads in &args.threads {
            let pool = build_pool(threads)?;
            let opts = BuildOptions {
                partitions: threads,
                ..Default::default()
            };
            let (alto, _) = pool.install(|| AnyAlto::build(coo, &opts))?;
            let mut ws = Workspace::new(&alto, rank);
            let mut outs: Vec<Matrix> = coo
                .dims()
                .iter()
                .map(|&d| Matrix::zeros(d as usize, rank))
                .collect();
            let flops: f64 = (0..coo.order())
                .map(|_| mttkrp_flops(coo.order(), rank, alto.nnz()))
                .sum();
            // The scalar kernel's result is the check for every other kernel.
            let scalar = MttkrpOptions {
                kernel: KernelChoice::parse("scalar")?,
                sync: args.sync,
                ..Default::default()
            };
            let mut want = Vec::new();
            for (mode, out) in outs.iter_mut().enumerate() {
                mttkrp(&alto, &factors, mode, out, &scalar, &mut ws, &pool)?;
                want.push(out.clone());
            }
            println!(
                "# {name}: dims {:?}, nnz {}, width {}, threads {threads}, rank {rank}",
                coo.dims(),
                alto.nnz(),
                alto.width().name()
            );
            for kname in &args.kernels {
                let kernel =
                    match KernelChoice::parse(kname).and_then(|k| k.resolve(rank).map(|_| k)) {
                        Ok(k) => k,
                        Err(e) => {
                            println!("{kname:>16}: skipped ({e})");
                            continue;
                        }
                    };
                let opts = MttkrpOptions {
                    kernel,
                    sync: args.sync,
                    ..Default::default()
                };
                let mut names = Vec::new();
                for (mode, out) in outs.iter_mut().enumerate() {
                    let run = mttkrp(&alto, &factors, mode, out, &opts, &mut ws, &pool)?;
                    names.push(run.name);
                    let scale = want[mode]
                        .as_slice()
                        .iter()
                        .fold(0.0f64, |a, x| a.max(x.abs()));
                    let diff = out.max_abs_diff(&want[mode]);
                    anyhow::ensure!(
                        diff <= 1e-10 * scale.max(1.0),
                        "{kname} mode {mode}: differs from scalar by {diff}"
                    );
                }
                let mut times = Vec::with_capacity(args.reps);
                for rep in 0..args.reps + 2 {
                    let t = Instant::now();
                    for (mode, out) in outs.iter_mut().enumerate() {
                        mttkrp(&alto, &factors, mode, out, &opts, &mut ws, &pool)?;
                    }
                    if rep >= 2 {
                        times.push(t.elapsed().as_secs_f64());
                    }
                }
                times.sort_by(f64::total_cmp);
                let med = times[times.len() / 2];
                let ms = med * 1e3;
                let speedup = reference_ms(name, threads)
                    .filter(|_| rank == 16)
                    .map(|r| format!("  {:.2}x vs C++ {r} ms", r / ms))
                    .unwrap_or_default();
                println!(
                    "{kname:>16}: {ms:8.2} ms  {:6.2} GFLOP/s  [{}]{speedup}",
                    flops / med * 1e-9,
                    names.join(" ")
                );
            }
        }
    }
    Ok(())
}
