//! The short in-process probe of the roofline ceilings, with `alto_kernels::probe`'s loops
//! (the ones the `roofline` tool runs): FMA-chain peaks per vector width and a DRAM triad.

use super::machine::{Bounds, Ceilings};
use alto::harness::pool::build_pool;
use alto_kernels::probe::{self as kp, AVX512_CHAINS, NARROW_CHAINS};
use alto_kernels::{Avx2Fma, Avx512, Fma};
use anyhow::Result;
use std::time::Instant;

/// A short probe at each thread count: FMA-chain peaks of every vector width this CPU has
/// and a DRAM triad over `max(4 x L3, 256 MiB)` (`--quick`: 24 MiB, which may sit in cache:
/// the bound is then optimistic, and labelled so).
pub fn probe(threads: &[usize], l3: u64, quick: bool) -> Result<Bounds> {
    let start = Instant::now();
    let bytes = if quick {
        24u64 << 20
    } else {
        (4 * l3).max(256 << 20)
    };
    let mut ceilings = Vec::new();
    for &t in threads {
        let pool = build_pool(t)?;
        let target = if quick { 0.004 } else { 0.03 };
        let mut peaks = Vec::new();
        for isa in ["scalar", "avx2", "avx512"] {
            if let Some(g) = fma_peak(&pool, isa, target) {
                peaks.push((isa.to_string(), g));
            }
        }
        let dram_gbs = triad_bandwidth(&pool, bytes, if quick { 0.01 } else { 0.15 });
        ceilings.push(Ceilings {
            threads: t,
            peaks,
            dram_gbs,
        });
    }
    let mib = bytes >> 20;
    Ok(Bounds {
        ceilings,
        source: format!(
            "measured here by a short probe ({:.1} s: FMA chains; triad over {mib} MiB{})",
            start.elapsed().as_secs_f64(),
            if quick {
                ", may be cache-resident: optimistic"
            } else {
                ""
            }
        ),
    })
}

/// GFLOP/s of every pool worker running `isa`'s FMA chains for about `target_s` (best of 3);
/// `None` when the CPU lacks the ISA.
fn fma_peak(pool: &rayon::ThreadPool, isa: &str, target_s: f64) -> Option<f64> {
    let (chains, lanes) = match isa {
        "scalar" => (NARROW_CHAINS, 1),
        "avx2" => (NARROW_CHAINS, 4),
        _ => (AVX512_CHAINS, 8),
    };
    let run = |iters: u64| -> Option<f64> {
        Some(match isa {
            "scalar" => kp::fma_peak_scalar(Fma::try_new()?, iters),
            "avx2" => kp::fma_peak_avx2(Avx2Fma::try_new()?, iters),
            _ => kp::fma_peak_avx512(Avx512::try_new()?, iters),
        })
    };
    run(100)?;
    // About `target_s` at 3 GHz and 2 FMA pipes.
    let iters = ((target_s * 6e9) / chains as f64).max(1000.0) as u64;
    let threads = pool.current_num_threads();
    let barrier = std::sync::Barrier::new(threads);
    let mut best = 0.0f64;
    for _ in 0..3 {
        let times: Vec<f64> = pool.broadcast(|_| {
            barrier.wait();
            let t = Instant::now();
            std::hint::black_box(run(iters));
            t.elapsed().as_secs_f64()
        });
        let slowest = times.iter().copied().fold(f64::MIN_POSITIVE, f64::max);
        let flops = iters as f64 * (chains * lanes * 2) as f64 * threads as f64;
        best = best.max(flops / slowest / 1e9);
    }
    Some(best)
}

/// GB/s of `a = b + s * c` over `bytes` in all (split among the workers), 24 bytes counted per
/// element (no write-allocate, as STREAM), best of 2 runs of about `target_s`.
fn triad_bandwidth(pool: &rayon::ThreadPool, bytes: u64, target_s: f64) -> f64 {
    let threads = pool.current_num_threads();
    let n = ((bytes / 24) as usize / threads).max(1024);
    let barrier = std::sync::Barrier::new(threads);
    let triad = |a: &mut [f64], b: &[f64], c: &[f64]| match Avx2Fma::try_new() {
        Some(t) => kp::triad_avx2(t, a, b, c, 0.5),
        None => kp::triad_portable(a, b, c, 0.5),
    };
    let per_thread: Vec<f64> = pool.broadcast(|_| {
        // First touch on the worker that sweeps the arrays.
        let mut a = vec![0.0f64; n];
        let b: Vec<f64> = (0..n).map(|i| (i % 5) as f64).collect();
        let c: Vec<f64> = (0..n).map(|i| (i % 3) as f64).collect();
        let t = Instant::now();
        triad(&mut a, &b, &c);
        let sweeps = ((target_s / t.elapsed().as_secs_f64().max(1e-6)) as usize).clamp(1, 1000);
        let mut best = f64::INFINITY;
        for _ in 0..2 {
            barrier.wait();
            let t = Instant::now();
            for _ in 0..sweeps {
                triad(&mut a, &b, &c);
            }
            best = best.min(t.elapsed().as_secs_f64() / sweeps as f64);
        }
        std::hint::black_box(a[n / 2]);
        best
    });
    let slowest = per_thread.iter().copied().fold(f64::MIN_POSITIVE, f64::max);
    (threads * n * 24) as f64 / slowest / 1e9
}
