//! Probing this machine: FMA peaks per vector width and load/copy/triad bandwidth per memory
//! level, at 1 thread and at all threads, turned into a [`MachineProfile`].

use crate::probe::bandwidth::{calibrate_sweeps, measure, BwKernel};
use crate::probe::flops::{run_fma, PeakIsa};
use crate::profile::{BandwidthCeiling, MachineProfile, PeakCeiling};
use serde::Serialize;
use std::time::Instant;

/// Data-cache sizes in bytes (per core for L1/L2, shared for L3), as the topology reports.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct CacheSizes {
    pub l1: u64,
    pub l2: u64,
    pub l3: u64,
}

/// A memory level a bandwidth kernel is sized for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Level {
    L1,
    L2,
    L3,
    Dram,
}

impl Level {
    pub const ALL: [Level; 4] = [Level::L1, Level::L2, Level::L3, Level::Dram];
    pub fn name(self) -> &'static str {
        match self {
            Level::L1 => "L1",
            Level::L2 => "L2",
            Level::L3 => "L3",
            Level::Dram => "DRAM",
        }
    }

    /// Bytes of working set per thread: half of a private level; half of the shared L3 split
    /// among the threads (but at least 4x L2 so it misses L2); DRAM: 8x L3 (at least 512 MiB)
    /// split among the threads.
    pub fn working_set_per_thread(self, caches: &CacheSizes, threads: usize) -> u64 {
        let t = threads.max(1) as u64;
        match self {
            Level::L1 => caches.l1 / 2,
            Level::L2 => caches.l2 / 2,
            Level::L3 => (caches.l3 / 2 / t).max(caches.l2 * 4),
            Level::Dram => (caches.l3 * 8).max(512 << 20) / t,
        }
    }
}

/// One bandwidth measurement.
#[derive(Clone, Debug, Serialize)]
pub struct BandwidthResult {
    pub level: Level,
    pub kernel: BwKernel,
    pub threads: usize,
    pub bytes_per_thread: u64,
    pub gbytes_per_s: f64,
}

/// One peak measurement.
#[derive(Clone, Debug, Serialize)]
pub struct PeakResult {
    pub isa: &'static str,
    pub threads: usize,
    pub gflops: f64,
}

/// Everything the probe measured.
#[derive(Clone, Debug, Serialize)]
pub struct ProbeResults {
    pub caches: CacheSizes,
    pub peaks: Vec<PeakResult>,
    pub bandwidths: Vec<BandwidthResult>,
    pub seconds: f64,
}

/// Peak GFLOP/s of `isa` on every thread of `pool` (best of `reps`).
fn peak(pool: &rayon::ThreadPool, isa: PeakIsa, reps: usize) -> Option<f64> {
    run_fma(isa, 1000)?;
    // About 50 ms per run at ~3 GHz and 2 FMA pipes.
    let iters = (50e-3 * 3e9 * 2.0 / isa.accumulators() as f64) as u64;
    let threads = pool.current_num_threads();
    let barrier = std::sync::Barrier::new(threads);
    let mut best = 0.0f64;
    for _ in 0..reps {
        let times: Vec<f64> = pool.broadcast(|_| {
            barrier.wait();
            let start = Instant::now();
            std::hint::black_box(run_fma(isa, iters));
            start.elapsed().as_secs_f64()
        });
        let slowest = times.iter().copied().fold(0.0, f64::max);
        best = best.max(isa.flops(iters) * threads as f64 / slowest / 1e9);
    }
    Some(best)
}

/// Runs every probe at 1 thread (`single`) and all threads (`all`), reporting progress.
pub fn probe(
    single: &rayon::ThreadPool,
    all: &rayon::ThreadPool,
    caches: CacheSizes,
    progress: &mut dyn FnMut(&str),
) -> ProbeResults {
    let start = Instant::now();
    let mut peaks = Vec::new();
    for isa in [PeakIsa::Scalar, PeakIsa::Avx2, PeakIsa::Avx512] {
        for pool in [single, all] {
            progress(&format!(
                "peak {} x{}",
                isa.name(),
                pool.current_num_threads()
            ));
            if let Some(g) = peak(pool, isa, 3) {
                peaks.push(PeakResult {
                    isa: isa.name(),
                    threads: pool.current_num_threads(),
                    gflops: g,
                });
            }
        }
    }
    let mut bandwidths = Vec::new();
    for level in Level::ALL {
        for kernel in BwKernel::ALL {
            for pool in [single, all] {
                let threads = pool.current_num_threads();
                progress(&format!(
                    "bandwidth {} {} x{threads}",
                    level.name(),
                    kernel.name()
                ));
                let bytes = level.working_set_per_thread(&caches, threads);
                let elements = (bytes as usize / kernel.bytes_per_element()).max(512);
                let target = if level == Level::Dram { 0.15 } else { 0.04 };
                let sweeps = calibrate_sweeps(kernel, elements, target);
                let reps = if level == Level::Dram { 3 } else { 5 };
                let bw = measure(pool, kernel, elements, sweeps, reps);
                bandwidths.push(BandwidthResult {
                    level,
                    kernel,
                    threads,
                    bytes_per_thread: (elements * kernel.bytes_per_element()) as u64,
                    gbytes_per_s: bw / 1e9,
                });
            }
        }
    }
    ProbeResults {
        caches,
        peaks,
        bandwidths,
        seconds: start.elapsed().as_secs_f64(),
    }
}

impl ProbeResults {
    /// The measured ceilings at `threads`: each ISA's peak; caches from the load kernel
    /// (likwid-bench's choice), DRAM from triad (STREAM's).
    pub fn profile(&self, name: &str, threads: usize) -> MachineProfile {
        let peaks = self
            .peaks
            .iter()
            .filter(|p| p.threads == threads)
            .map(|p| PeakCeiling {
                name: format!("{} peak", p.isa),
                gflops: p.gflops,
                basis: format!("measured: FMA chains, {} threads", p.threads),
            })
            .collect();
        let bandwidths = Level::ALL
            .iter()
            .filter_map(|&level| {
                let kernel = if level == Level::Dram { BwKernel::Triad } else { BwKernel::Load };
                let r = self.bandwidths.iter().find(|b| b.level == level && b.kernel == kernel && b.threads == threads)?;
                Some(BandwidthCeiling {
                    name: level.name().to_string(),
                    gbytes_per_s: r.gbytes_per_s,
                    basis: format!(
                        "measured: {} kernel, {} threads, {} KiB per thread; write-allocate traffic not counted",
                        kernel.name(),
                        threads,
                        r.bytes_per_thread / 1024
                    ),
                })
            })
            .collect();
        MachineProfile {
            name: name.to_string(),
            kind: "measured".into(),
            threads,
            peaks,
            bandwidths,
            notes: vec![
                "Bandwidths count only the bytes the kernel names (load 8, copy 16, triad 24 per element); write-allocate traffic is not counted.".into(),
            ],
            cases: Vec::new(),
        }
    }

    /// The best value of a kernel at a level for `threads`.
    pub fn bandwidth(&self, level: Level, kernel: BwKernel, threads: usize) -> Option<f64> {
        self.bandwidths
            .iter()
            .find(|b| b.level == level && b.kernel == kernel && b.threads == threads)
            .map(|b| b.gbytes_per_s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn working_sets_step_through_the_hierarchy() {
        let c = CacheSizes {
            l1: 32 << 10,
            l2: 512 << 10,
            l3: 32 << 20,
        };
        let sizes: Vec<u64> = Level::ALL
            .iter()
            .map(|l| l.working_set_per_thread(&c, 2))
            .collect();
        assert!(sizes.windows(2).all(|w| w[0] < w[1]), "{sizes:?}");
        assert!(sizes[0] <= c.l1 && sizes[1] <= c.l2 && sizes[1] > c.l1);
        assert!(sizes[2] * 2 <= c.l3 && sizes[2] > c.l2);
        assert!(sizes[3] * 2 > c.l3);
    }
}
