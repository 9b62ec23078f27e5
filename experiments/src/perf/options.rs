//! The suite's command-line options ([`PerfOpts`]) and the settings resolved from them
//! ([`Settings`]): every list checked, defaults filled in, `ALTO_ISA` read once.

use super::shapes::{self, ShapeSpec};
use alto::dispatch::KernelChoice;
use alto_kernels::Isa;
use anyhow::{anyhow, bail, Result};
use clap::Args;
use std::path::PathBuf;

/// Ranks of the grid.
pub const DEFAULT_RANKS: [usize; 8] = [8, 10, 16, 20, 32, 50, 64, 100];
/// Ranks of `--quick`.
pub const QUICK_RANKS: [usize; 3] = [8, 10, 16];

/// Options of `perf-suite`.
#[derive(Args, Clone, Debug, Default)]
pub struct PerfOpts {
    /// Timed repetitions per measurement (median, min and max over them); in `--compare`
    /// mode, runs of each binary per case. Default 5 (3 with `--quick`).
    #[arg(long)]
    pub reps: Option<usize>,

    /// Shapes, comma separated: skewed-3d, uniform-4d, nell-2, darpa, skewed-3d-8m (default:
    /// all).
    #[arg(long, value_delimiter = ',')]
    pub shapes: Vec<String>,

    /// Ranks, comma separated (default 8,10,16,20,32,50,64,100; 8,10,16 with `--quick`).
    #[arg(long, value_delimiter = ',')]
    pub ranks: Vec<usize>,

    /// Thread counts, comma separated; `all` is the number of available CPUs (default 1,all).
    #[arg(long, value_delimiter = ',')]
    pub threads: Vec<String>,

    /// Also time these ISAs' kernels (scalar, pulp, avx2, avx512); those this CPU lacks are
    /// skipped with a note. `auto` (the default kernel, or `$ALTO_ISA`) always runs.
    #[arg(long, value_delimiter = ',')]
    pub isa: Vec<String>,

    /// Output directory (default: reports/perf/<host>).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// Tiny shapes and few ranks: a smoke test of seconds.
    #[arg(long)]
    pub quick: bool,

    /// Host label of the default output directory (default: host name and CPU).
    #[arg(long)]
    pub host: Option<String>,

    /// Roofline ceilings from this `probe.json` (or `machine.json`) of the `roofline` tool
    /// instead of `reports/roofline/<host>/` or a short probe run here.
    #[arg(long, value_name = "FILE")]
    pub machine: Option<PathBuf>,

    /// No progress bar (log lines only).
    #[arg(long)]
    pub no_progress: bool,

    /// Comparison mode: this `alto` binary is the old side.
    #[arg(long, value_name = "OLD_ALTO")]
    pub compare: Option<PathBuf>,

    /// Comparison mode: the new side (default: this workspace's target/release/alto).
    #[arg(long, value_name = "NEW_ALTO", requires = "compare")]
    pub new: Option<PathBuf>,

    /// Comparison mode: where the `.tns` files and the JSON documents go (default: a
    /// temporary directory, removed afterwards).
    #[arg(long, value_name = "DIR", requires = "compare")]
    pub work: Option<PathBuf>,

    /// Comparison mode: timed calls per mode inside each `alto mttkrp` run (`--iters`).
    #[arg(long, default_value_t = 10, requires = "compare")]
    pub iters: usize,
}

/// A kernel to time: `auto` or an ISA's kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelSel {
    /// `auto`, `scalar`, `pulp`, `avx2`, `avx512`.
    pub label: &'static str,
    pub choice: KernelChoice,
}

/// Everything a run works with.
#[derive(Clone, Debug)]
pub struct Settings {
    pub reps: usize,
    pub shapes: Vec<ShapeSpec>,
    pub ranks: Vec<usize>,
    /// Ascending, deduplicated.
    pub threads: Vec<usize>,
    /// `auto` first, then the requested ISAs this CPU has.
    pub kernels: Vec<KernelSel>,
    /// Requested ISAs this CPU lacks, with the reason.
    pub skipped_isas: Vec<String>,
    /// The ISA `auto` means here (`$ALTO_ISA` or the best).
    pub auto_isa: Isa,
    pub alto_isa_env: Option<String>,
    pub out: PathBuf,
    pub host: String,
    pub quick: bool,
    pub machine: Option<PathBuf>,
    pub no_progress: bool,
    pub compare: Option<PathBuf>,
    pub new: PathBuf,
    pub work: Option<PathBuf>,
    pub iters: usize,
}

impl Settings {
    pub fn resolve(o: PerfOpts) -> Result<Settings> {
        let reps = o.reps.unwrap_or(if o.quick { 3 } else { 5 });
        if reps == 0 {
            bail!("--reps must be at least 1");
        }
        if o.iters == 0 {
            bail!("--iters must be at least 1");
        }
        let shapes = shapes::select(&o.shapes, o.quick)?;
        let mut ranks = if o.ranks.is_empty() {
            if o.quick {
                QUICK_RANKS.to_vec()
            } else {
                DEFAULT_RANKS.to_vec()
            }
        } else {
            o.ranks.clone()
        };
        if ranks.contains(&0) {
            bail!("--ranks: a rank must be at least 1");
        }
        ranks.sort_unstable();
        ranks.dedup();
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let threads = parse_threads(&o.threads, cpus)?;
        let alto_isa_env = std::env::var(alto::dispatch::ISA_ENV)
            .ok()
            .filter(|s| !s.is_empty());
        let auto_isa =
            alto::dispatch::DispatchOptions::from_values(alto_isa_env.as_deref(), None)?.isa();
        let (kernels, skipped_isas) = kernel_list(&o.isa, auto_isa)?;
        let host = match &o.host {
            Some(h) => crate::config::sanitize(h),
            None => host_label(),
        };
        let out = match &o.out {
            Some(p) => p.clone(),
            None => crate::config::default_reports_dir()
                .join("perf")
                .join(&host),
        };
        let new = match &o.new {
            Some(p) => p.clone(),
            None => workspace_alto(),
        };
        Ok(Settings {
            reps,
            shapes,
            ranks,
            threads,
            kernels,
            skipped_isas,
            auto_isa,
            alto_isa_env,
            out,
            host,
            quick: o.quick,
            machine: o.machine,
            no_progress: o.no_progress,
            compare: o.compare,
            new,
            work: o.work,
            iters: o.iters,
        })
    }

    pub fn max_threads(&self) -> usize {
        *self.threads.last().expect("at least one thread count")
    }
}

/// `1,all` style lists: numbers, or `all` for every available CPU.
pub fn parse_threads(list: &[String], cpus: usize) -> Result<Vec<usize>> {
    let items: Vec<String> = if list.is_empty() {
        vec!["1".into(), "all".into()]
    } else {
        list.to_vec()
    };
    let mut v = Vec::with_capacity(items.len());
    for s in &items {
        let t = match s.trim() {
            "all" => cpus,
            x => x
                .parse::<usize>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| anyhow!("--threads: `{x}` is not a positive number or `all`"))?,
        };
        v.push(t);
    }
    v.sort_unstable();
    v.dedup();
    Ok(v)
}

/// `auto` plus each requested ISA this CPU has; the others come back as notes.
fn kernel_list(isas: &[String], auto_isa: Isa) -> Result<(Vec<KernelSel>, Vec<String>)> {
    let mut kernels = vec![KernelSel {
        label: "auto",
        choice: KernelChoice::Isa(auto_isa),
    }];
    let mut skipped = Vec::new();
    for name in isas {
        let name = name.trim();
        if name == "auto" {
            continue;
        }
        let isa = Isa::from_name(name).ok_or_else(|| {
            let known: Vec<&str> = Isa::ALL.iter().map(|i| i.name()).collect();
            anyhow!("--isa: unknown ISA `{name}` (known: {})", known.join(", "))
        })?;
        if !isa.available() {
            skipped.push(format!("{name}: not available on this CPU, skipped"));
            continue;
        }
        if kernels.iter().all(|k| k.label != isa.name()) {
            kernels.push(KernelSel {
                label: isa.name(),
                choice: KernelChoice::Isa(isa),
            });
        }
    }
    Ok((kernels, skipped))
}

/// `target/release/alto` of this workspace.
pub fn workspace_alto() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let root = root
        .parent()
        .map_or_else(|| PathBuf::from("."), PathBuf::from);
    root.join("target").join("release").join("alto")
}

/// `<host name>-<short CPU label>`, e.g. `vm-amd-epyc`: two machines with the same host name
/// (virtual machines often share one) do not overwrite each other's reports.
pub fn host_label() -> String {
    let host = crate::config::host_name();
    let cpu = cpu_label(&alto::harness::topology::CpuModel::detect().name);
    if cpu.is_empty() {
        host
    } else {
        format!("{host}-{cpu}")
    }
}

/// A short lowercase label of a CPU model name: trademarks, "Processor", "CPU", core counts
/// and the frequency dropped, at most three words (`Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz`
/// -> `intel-xeon-gold`).
pub fn cpu_label(model: &str) -> String {
    let lower = model.to_lowercase();
    let cleaned = lower
        .replace("(r)", " ")
        .replace("(tm)", " ")
        .split('@')
        .next()
        .unwrap_or("")
        .to_string();
    let words: Vec<String> = cleaned
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '-')
        .filter(|w| !w.is_empty())
        .filter(|w| !matches!(*w, "processor" | "cpu" | "with" | "radeon" | "graphics"))
        .filter(|w| !w.ends_with("-core"))
        .take(3)
        .map(String::from)
        .collect();
    if words.is_empty() {
        String::new()
    } else {
        crate::config::sanitize(&words.join("-"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_lists_and_labels() {
        assert_eq!(parse_threads(&[], 2).unwrap(), vec![1, 2]);
        assert_eq!(parse_threads(&[], 1).unwrap(), vec![1]);
        let l = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            parse_threads(&l(&["4", "all", "1"]), 8).unwrap(),
            vec![1, 4, 8]
        );
        assert!(parse_threads(&l(&["0"]), 2).is_err());
        assert!(parse_threads(&l(&["two"]), 2).is_err());
        assert_eq!(cpu_label("AMD EPYC"), "amd-epyc");
        assert_eq!(cpu_label("Intel(R) Xeon(R) Processor"), "intel-xeon");
        assert_eq!(
            cpu_label("Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz"),
            "intel-xeon-gold"
        );
        assert_eq!(
            cpu_label("AMD EPYC 7763 64-Core Processor"),
            "amd-epyc-7763"
        );
        assert_eq!(cpu_label("(R)"), "");
        let (k, _) = kernel_list(&l(&["scalar", "auto", "scalar"]), Isa::Scalar).unwrap();
        assert_eq!(k.len(), 2, "auto, then scalar once");
        let (k, skipped) = kernel_list(&l(&["avx512"]), Isa::Scalar).unwrap();
        assert_eq!(k.len() + skipped.len(), 2);
        assert!(kernel_list(&l(&["sse9"]), Isa::Scalar).is_err());
    }
}
