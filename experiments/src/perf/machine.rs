//! The machine the suite runs on: CPU, cores, ISAs, the nominal clock (for cycle estimates)
//! and the roofline ceilings (peak GFLOP/s per vector width and DRAM bandwidth per thread
//! count), read from the `roofline` tool's `probe.json` when one exists for this CPU, else
//! measured by a short probe here with `alto_kernels::probe`'s loops.

use super::options::Settings;
use crate::measure::Progress;
use alto::harness::topology::{CpuModel, Topology};
use alto_kernels::Isa;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Ceilings at one thread count.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Ceilings {
    pub threads: usize,
    /// (`scalar` | `avx2` | `avx512`, GFLOP/s).
    pub peaks: Vec<(String, f64)>,
    /// DRAM triad bandwidth, GB/s.
    pub dram_gbs: f64,
}

/// The roofline ceilings and where they come from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bounds {
    pub ceilings: Vec<Ceilings>,
    /// E.g. `measured here by a short probe` or `reports/roofline/vm/probe.json`.
    pub source: String,
}

/// What the suite knows about this machine.
#[derive(Clone, Debug, Serialize)]
pub struct Machine {
    pub cpu_model: String,
    pub cpu_flags: Vec<String>,
    pub cores: usize,
    pub hardware_threads: usize,
    /// ISAs of ALTO's kernels this CPU runs.
    pub isas: Vec<String>,
    pub nominal_ghz: f64,
    /// Where `nominal_ghz` comes from.
    pub ghz_source: String,
    pub bounds: Bounds,
}

impl Machine {
    pub fn detect(s: &Settings, progress: &Progress) -> Result<Machine> {
        let cpu = CpuModel::detect();
        let stamp = alto::harness::record::MeasurementRecord::new("perf-suite");
        let hardware_threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let topo = Topology::detect().ok();
        let (nominal_ghz, ghz_source) = nominal_ghz(&cpu.name);
        let bounds = match roofline_file(s, &cpu.name) {
            Some(path) => read_bounds(&path)?,
            None => {
                progress.log("no roofline probe for this CPU: running a short probe");
                let l3 = topo
                    .as_ref()
                    .and_then(|t| t.data_cache_bytes(3))
                    .unwrap_or(32 << 20);
                super::probe::probe(&s.threads, l3, s.quick)?
            }
        };
        Ok(Machine {
            cpu_model: cpu.name.clone(),
            cpu_flags: stamp.cpu_flags,
            cores: topo.as_ref().map_or(hardware_threads, |t| t.cores),
            hardware_threads,
            isas: Isa::ALL
                .iter()
                .filter(|i| i.available())
                .map(|i| i.name().to_string())
                .collect(),
            nominal_ghz,
            ghz_source,
            bounds,
        })
    }
}

impl Bounds {
    /// The ceilings measured at `threads`, or at the nearest count below (else above) scaled
    /// linearly by the thread ratio, bandwidth capped at the largest measured.
    pub fn at(&self, threads: usize) -> Option<Ceilings> {
        let exact = self.ceilings.iter().find(|c| c.threads == threads);
        if let Some(c) = exact {
            return Some(c.clone());
        }
        let below = self
            .ceilings
            .iter()
            .filter(|c| c.threads < threads)
            .max_by_key(|c| c.threads);
        let base = below.or_else(|| self.ceilings.iter().min_by_key(|c| c.threads))?;
        let f = threads as f64 / base.threads as f64;
        let max_bw = self.ceilings.iter().map(|c| c.dram_gbs).fold(0.0, f64::max);
        Some(Ceilings {
            threads,
            peaks: base.peaks.iter().map(|(n, g)| (n.clone(), g * f)).collect(),
            dram_gbs: (base.dram_gbs * f).min(max_bw.max(base.dram_gbs)),
        })
    }

    /// The roofline lower bound on the time of `flops` and `bytes` with kernels of `isa` at
    /// `threads`: `max(flops / peak, bytes / DRAM bandwidth)` in seconds, and which roof binds.
    pub fn bound(
        &self,
        flops: f64,
        bytes: f64,
        isa: &str,
        threads: usize,
    ) -> Option<(f64, &'static str)> {
        let c = self.at(threads)?;
        // `pulp` dispatches to the widest vectors the CPU has.
        let want: &[&str] = match isa {
            "scalar" => &["scalar"],
            "avx2" => &["avx2", "scalar"],
            _ => &["avx512", "avx2", "scalar"],
        };
        let peak = want
            .iter()
            .find_map(|w| c.peaks.iter().find(|(n, _)| n == w).map(|p| p.1))?;
        let compute = flops / (peak * 1e9);
        let memory = bytes / (c.dram_gbs * 1e9);
        Some(if compute >= memory {
            (compute, "compute")
        } else {
            (memory, "memory")
        })
    }
}

/// The nominal clock in GHz and its source: the `@ x.xxGHz` of the model name, cpufreq's base
/// or maximum frequency, or `cpu MHz` of `/proc/cpuinfo` (the current clock of a CPU that
/// reports no other).
pub fn nominal_ghz(model: &str) -> (f64, String) {
    if let Some(g) = model
        .split('@')
        .nth(1)
        .and_then(|s| s.trim().strip_suffix("GHz"))
        .and_then(|s| s.trim().parse::<f64>().ok())
    {
        return (g, "the CPU model name".into());
    }
    let khz = |f: &str| -> Option<f64> {
        let p = Path::new("/sys/devices/system/cpu/cpu0/cpufreq").join(f);
        std::fs::read_to_string(p).ok()?.trim().parse::<f64>().ok()
    };
    if let Some(k) = khz("base_frequency") {
        return (k / 1e6, "cpufreq base_frequency".into());
    }
    if let Some(k) = khz("cpuinfo_max_freq") {
        return (k / 1e6, "cpufreq cpuinfo_max_freq".into());
    }
    let mhz = std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|s| {
        s.lines()
            .find(|l| l.starts_with("cpu MHz"))
            .and_then(|l| l.split(':').nth(1))
            .and_then(|v| v.trim().parse::<f64>().ok())
    });
    match mhz {
        Some(m) if m > 0.0 => (m / 1e3, "`cpu MHz` of /proc/cpuinfo".into()),
        _ => (3.0, "assumed (no frequency reported)".into()),
    }
}

/// `--machine FILE`, else `reports/roofline/<host>/probe.json` when the `machine.json` beside
/// it names this CPU (host names of virtual machines repeat across CPUs).
fn roofline_file(s: &Settings, cpu: &str) -> Option<PathBuf> {
    if let Some(p) = &s.machine {
        return Some(p.clone());
    }
    let dir = crate::config::default_reports_dir()
        .join("roofline")
        .join(crate::config::host_name());
    let probe = dir.join("probe.json");
    let machine: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("machine.json")).ok()?).ok()?;
    let name = machine.get("name")?.as_str()?;
    (!cpu.is_empty() && name.starts_with(cpu) && probe.exists()).then_some(probe)
}

/// Ceilings from a roofline `probe.json` (peaks and bandwidths at several thread counts) or
/// `machine.json` (one thread count).
pub fn read_bounds(path: &Path) -> Result<Bounds> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    let bad = || {
        anyhow::anyhow!(
            "{}: not a roofline probe.json or machine.json",
            path.display()
        )
    };
    let mut ceilings: Vec<Ceilings> = Vec::new();
    if let Some(peaks) = v.get("peaks").and_then(|p| p.as_array()) {
        let bws = v
            .get("bandwidths")
            .and_then(|b| b.as_array())
            .ok_or_else(bad)?;
        let profile_threads = v.get("threads").and_then(|t| t.as_u64());
        for p in peaks {
            let threads = p
                .get("threads")
                .and_then(|t| t.as_u64())
                .or(profile_threads)
                .ok_or_else(bad)? as usize;
            let isa = match (p.get("isa"), p.get("name")) {
                (Some(i), _) => i.as_str().unwrap_or("").to_string(),
                (None, Some(n)) => n
                    .as_str()
                    .unwrap_or("")
                    .trim_end_matches(" peak")
                    .to_string(),
                _ => return Err(bad()),
            };
            let g = p.get("gflops").and_then(|g| g.as_f64()).ok_or_else(bad)?;
            let entry = match ceilings.iter_mut().position(|c| c.threads == threads) {
                Some(k) => &mut ceilings[k],
                None => {
                    ceilings.push(Ceilings {
                        threads,
                        peaks: Vec::new(),
                        dram_gbs: 0.0,
                    });
                    ceilings.last_mut().expect("just pushed")
                }
            };
            entry.peaks.push((isa, g));
        }
        for b in bws {
            let field = |k: &str| b.get(k).and_then(|x| x.as_str()).unwrap_or("");
            // probe.json: level `Dram`, kernel `triad`; machine.json: the ceiling named DRAM.
            let is_dram = (field("level").eq_ignore_ascii_case("dram")
                && field("kernel") == "triad")
                || field("name") == "DRAM";
            if !is_dram {
                continue;
            }
            let threads = b
                .get("threads")
                .and_then(|t| t.as_u64())
                .or(profile_threads)
                .ok_or_else(bad)? as usize;
            let g = b
                .get("gbytes_per_s")
                .and_then(|g| g.as_f64())
                .ok_or_else(bad)?;
            if let Some(c) = ceilings.iter_mut().find(|c| c.threads == threads) {
                c.dram_gbs = g;
            }
        }
    }
    ceilings.retain(|c| c.dram_gbs > 0.0 && !c.peaks.is_empty());
    if ceilings.is_empty() {
        return Err(bad());
    }
    ceilings.sort_by_key(|c| c.threads);
    Ok(Bounds {
        ceilings,
        source: format!("read from {}", path.display()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_scale_and_pick_the_binding_roof() {
        let b = Bounds {
            ceilings: vec![Ceilings {
                threads: 1,
                peaks: vec![("scalar".into(), 10.0), ("avx2".into(), 40.0)],
                dram_gbs: 20.0,
            }],
            source: "test".into(),
        };
        let two = b.at(2).unwrap();
        assert_eq!(two.peaks[1].1, 80.0);
        assert_eq!(
            two.dram_gbs, 20.0,
            "capped at the largest measured bandwidth"
        );
        // 1 GFLOP and 1 GB at 1 thread: 25 ms of avx2 compute, 50 ms of DRAM.
        let (s, roof) = b.bound(1e9, 1e9, "avx2", 1).unwrap();
        assert_eq!((s, roof), (0.05, "memory"));
        let (s, roof) = b.bound(1e9, 1e8, "scalar", 1).unwrap();
        assert_eq!((s, roof), (0.1, "compute"));
        // avx512 falls back to the widest peak measured.
        assert_eq!(b.bound(4e9, 0.0, "avx512", 1).unwrap().0, 0.1);
        assert_eq!(
            nominal_ghz("Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz").0,
            2.5
        );
    }

    #[test]
    fn reads_roofline_probe_and_machine_files() {
        let dir = tempfile::tempdir().unwrap();
        let probe = dir.path().join("probe.json");
        std::fs::write(
            &probe,
            r#"{"caches":{"l1":1,"l2":2,"l3":3},"seconds":1.0,
            "peaks":[{"isa":"scalar","threads":1,"gflops":15.0},{"isa":"avx2","threads":1,"gflops":60.0},
                     {"isa":"scalar","threads":2,"gflops":30.0}],
            "bandwidths":[{"level":"L1","kernel":"load","threads":1,"bytes_per_thread":1,"gbytes_per_s":300.0},
                          {"level":"Dram","kernel":"triad","threads":1,"bytes_per_thread":1,"gbytes_per_s":15.0},
                          {"level":"Dram","kernel":"triad","threads":2,"bytes_per_thread":1,"gbytes_per_s":29.0}]}"#,
        )
        .unwrap();
        let b = read_bounds(&probe).unwrap();
        assert_eq!(b.ceilings.len(), 2);
        assert_eq!(b.ceilings[0].dram_gbs, 15.0);
        assert_eq!(b.ceilings[0].peaks.len(), 2);
        let machine = dir.path().join("machine.json");
        std::fs::write(
            &machine,
            r#"{"name":"X (vm, 2 threads)","kind":"measured","threads":2,
            "peaks":[{"name":"avx2 peak","gflops":120.0,"basis":""}],
            "bandwidths":[{"name":"L1","gbytes_per_s":300.0,"basis":""},{"name":"DRAM","gbytes_per_s":29.0,"basis":""}]}"#,
        )
        .unwrap();
        let m = read_bounds(&machine).unwrap();
        assert_eq!(m.ceilings[0].threads, 2);
        assert_eq!(m.ceilings[0].peaks, vec![("avx2".to_string(), 120.0)]);
        assert_eq!(m.ceilings[0].dram_gbs, 29.0);
        std::fs::write(&machine, "{}").unwrap();
        assert!(read_bounds(&machine).is_err());
    }
}
