//! Probing this machine: FMA peaks per vector width and load/copy/triad bandwidth per memory
//! level, at 1 thread and at all threads, turned into a [`MachineProfile`].

use crate::levels::{
    l3_sweep_sizes, pick_l3, resolve_roofs, L3Pick, SeparationRule, SweepPoint, DEFAULT_RULE,
};
use crate::probe::bandwidth::{calibrate_sweeps, measure, BwKernel};
use crate::probe::flops::{run_fma, PeakIsa};
use crate::profile::{BandwidthCeiling, MachineProfile, PeakCeiling, UnresolvedLevel};
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

    /// Bytes of working set per thread: half of a private level; DRAM: 8x L3 (at least 512
    /// MiB) split among the threads. L3 has no single size: it is swept between L2 and the
    /// thread's share (see [`crate::levels`]); here, the first size of that sweep.
    pub fn working_set_per_thread(self, caches: &CacheSizes, threads: usize) -> u64 {
        let t = threads.max(1) as u64;
        match self {
            Level::L1 => caches.l1 / 2,
            Level::L2 => caches.l2 / 2,
            Level::L3 => caches.l2 * DEFAULT_RULE.l2_multiple,
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

/// The L3 sweep at one thread count (load kernel) and what it decided.
#[derive(Clone, Debug, Serialize)]
pub struct L3Sweep {
    pub threads: usize,
    pub points: Vec<SweepPoint>,
    pub pick: L3Pick,
}

/// Everything the probe measured.
#[derive(Clone, Debug, Serialize)]
pub struct ProbeResults {
    pub caches: CacheSizes,
    pub rule: SeparationRule,
    pub peaks: Vec<PeakResult>,
    /// Every level and kernel; L3 only at the size its sweep picked (none when not separable).
    pub bandwidths: Vec<BandwidthResult>,
    pub l3_sweeps: Vec<L3Sweep>,
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
    let rule = DEFAULT_RULE;
    let mut bandwidths = Vec::new();
    let mut run = |level: Level, kernel: BwKernel, pool: &rayon::ThreadPool, bytes: u64| {
        let threads = pool.current_num_threads();
        progress(&format!(
            "bandwidth {} {} x{threads} ({} KiB per thread)",
            level.name(),
            kernel.name(),
            bytes >> 10
        ));
        let elements = (bytes as usize / kernel.bytes_per_element()).max(512);
        let target = if level == Level::Dram { 0.15 } else { 0.04 };
        let sweeps = calibrate_sweeps(kernel, elements, target);
        let reps = if level == Level::Dram { 3 } else { 5 };
        BandwidthResult {
            level,
            kernel,
            threads,
            bytes_per_thread: (elements * kernel.bytes_per_element()) as u64,
            gbytes_per_s: measure(pool, kernel, elements, sweeps, reps) / 1e9,
        }
    };
    // L1, L2 and DRAM first: the L3 decision compares with both.
    for level in [Level::L1, Level::L2, Level::Dram] {
        for kernel in BwKernel::ALL {
            for pool in [single, all] {
                let bytes = level.working_set_per_thread(&caches, pool.current_num_threads());
                bandwidths.push(run(level, kernel, pool, bytes));
            }
        }
    }
    let mut l3_sweeps = Vec::new();
    for pool in [single, all] {
        let threads = pool.current_num_threads();
        let at = |level: Level, kernel: BwKernel| {
            bandwidths
                .iter()
                .find(|b| b.level == level && b.kernel == kernel && b.threads == threads)
                .map_or(0.0, |b| b.gbytes_per_s)
        };
        let l2 = at(Level::L2, BwKernel::Load);
        let dram = BwKernel::ALL
            .iter()
            .map(|&k| at(Level::Dram, k))
            .fold(0.0, f64::max);
        let points: Vec<SweepPoint> = l3_sweep_sizes(caches.l2, caches.l3, threads, &rule)
            .into_iter()
            .map(|bytes| {
                let r = run(Level::L3, BwKernel::Load, pool, bytes);
                SweepPoint {
                    bytes_per_thread: r.bytes_per_thread,
                    gbytes_per_s: r.gbytes_per_s,
                }
            })
            .collect();
        let pick = pick_l3(&points, l2, dram, caches.l3, &rule);
        if let L3Pick::Roof {
            bytes_per_thread, ..
        } = pick
        {
            for kernel in BwKernel::ALL {
                bandwidths.push(run(Level::L3, kernel, pool, bytes_per_thread));
            }
        }
        l3_sweeps.push(L3Sweep {
            threads,
            points,
            pick,
        });
    }
    bandwidths.sort_by_key(|b| (Level::ALL.iter().position(|&l| l == b.level), b.threads));
    ProbeResults {
        caches,
        rule,
        peaks,
        bandwidths,
        l3_sweeps,
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
        let measured: Vec<BandwidthCeiling> = Level::ALL
            .iter()
            .filter_map(|&level| {
                let kernel = if level == Level::Dram {
                    BwKernel::Triad
                } else {
                    BwKernel::Load
                };
                let r = self
                    .bandwidths
                    .iter()
                    .find(|b| b.level == level && b.kernel == kernel && b.threads == threads)?;
                Some(BandwidthCeiling {
                    name: level.name().to_string(),
                    gbytes_per_s: r.gbytes_per_s,
                    basis: format!(
                        "measured: {} kernel, {} threads, {} KiB per thread; write-allocate \
                         traffic not counted",
                        kernel.name(),
                        threads,
                        r.bytes_per_thread / 1024
                    ),
                })
            })
            .collect();
        let (bandwidths, mut unresolved) = resolve_roofs(measured, &self.rule);
        // An L3 sweep without a separated size left no L3 measurement: say why.
        for sweep in self.l3_sweeps.iter().filter(|s| s.threads == threads) {
            if let L3Pick::NotSeparable {
                best_gbytes_per_s,
                reason,
            } = &sweep.pick
            {
                unresolved.insert(
                    0,
                    UnresolvedLevel {
                        name: Level::L3.name().into(),
                        measured_gbytes_per_s: *best_gbytes_per_s,
                        reason: reason.clone(),
                    },
                );
            }
        }
        let mut notes = vec![
            "Bandwidths count only the bytes the kernel names (load 8, copy 16, triad 24 per element); write-allocate traffic is not counted.".to_string(),
            format!(
                "A cache level is drawn only when it measured at least {}x the next slower roof; L3 working sets are swept from {}x L2 to this thread's share of the reported L3 (probe.json: l3_sweeps). `unresolved` lists the levels not drawn and why.",
                self.rule.min_ratio, self.rule.l2_multiple
            ),
        ];
        for u in &unresolved {
            notes.push(format!("No {} roof: {}", u.name, u.reason));
        }
        MachineProfile {
            name: name.to_string(),
            kind: "measured".into(),
            threads,
            peaks,
            bandwidths,
            notes,
            cases: Vec::new(),
            unresolved,
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

    fn result(level: Level, kernel: BwKernel, gbs: f64) -> BandwidthResult {
        BandwidthResult {
            level,
            kernel,
            threads: 2,
            bytes_per_thread: 1 << 20,
            gbytes_per_s: gbs,
        }
    }

    #[test]
    fn an_inseparable_l3_is_listed_not_drawn() {
        let caches = CacheSizes {
            l1: 48 << 10,
            l2: 2 << 20,
            l3: 480 << 20,
        };
        let sweep = vec![SweepPoint {
            bytes_per_thread: 4 << 20,
            gbytes_per_s: 29.5,
        }];
        let pick = pick_l3(&sweep, 184.1, 32.1, caches.l3, &DEFAULT_RULE);
        let probe = ProbeResults {
            caches,
            rule: DEFAULT_RULE,
            peaks: vec![PeakResult {
                isa: "avx2",
                threads: 2,
                gflops: 127.8,
            }],
            bandwidths: vec![
                result(Level::L1, BwKernel::Load, 328.8),
                result(Level::L2, BwKernel::Load, 184.1),
                result(Level::Dram, BwKernel::Load, 32.1),
                result(Level::Dram, BwKernel::Triad, 29.7),
            ],
            l3_sweeps: vec![L3Sweep {
                threads: 2,
                points: sweep,
                pick,
            }],
            seconds: 0.0,
        };
        let m = probe.profile("vm", 2);
        let roofs: Vec<&str> = m.bandwidths.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(roofs, ["L1", "L2", "DRAM"]);
        assert_eq!(m.unresolved.len(), 1);
        assert_eq!(m.unresolved[0].name, "L3");
        assert_eq!(m.unresolved[0].measured_gbytes_per_s, Some(29.5));
        assert!(
            m.notes.iter().any(|n| n.starts_with("No L3 roof")),
            "{:?}",
            m.notes
        );
        // machine.json carries the list, and a profile with it reads back.
        let json = serde_json::to_string(&m).unwrap();
        assert_eq!(MachineProfile::parse(&json).unwrap(), m);
    }
}
