//! Command-line options shared by every figure binary, and the run context derived from them.

use crate::formats::{BaselineIsa, BASELINE_ISA_ENV};
use alto::harness::pool::PinPolicy;
use alto_kernels::Isa;
use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use std::path::PathBuf;

/// Options of every figure binary (`fig06 ... fig12`, `all-figures`).
#[derive(Args, Clone, Debug)]
pub struct Opts {
    /// Multiplies the default stand-in sizes (nonzero counts). 1.0 is sized so that
    /// `all-figures` takes about 30 minutes on 2 cores.
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,

    /// Also run every `.tns` file in this directory (e.g. `../shared/data/real`).
    #[arg(long, value_name = "DIR")]
    pub data: Option<PathBuf>,

    /// Leave out the synthetic stand-ins (only `--data` tensors).
    #[arg(long)]
    pub no_standins: bool,

    /// Only these tensors (names, comma separated; e.g. `nips,darpa`).
    #[arg(long, value_delimiter = ',')]
    pub tensors: Vec<String>,

    /// Thread counts (comma separated). Default: every count from 1 to the number of hardware
    /// threads (powers of two and the maximum above 8).
    #[arg(long, value_delimiter = ',')]
    pub threads: Vec<usize>,

    /// Worker placement: none, compact, scatter or cores (the paper pins compactly).
    #[arg(long, default_value = "compact")]
    pub pin: String,

    /// Decomposition rank (the paper uses 16).
    #[arg(long, default_value_t = 16)]
    pub rank: usize,

    /// Timed repetitions per MTTKRP (after one warm-up call); more are run until
    /// `--min-seconds` have been timed.
    #[arg(long, default_value_t = 5)]
    pub reps: usize,

    /// Minimum total timed seconds per (format, mode, thread count).
    #[arg(long, default_value_t = 0.1)]
    pub min_seconds: f64,

    /// Densest a stand-in may be (unless the paper's tensor is denser): long modes are scaled
    /// by the nonzero ratio, but grown where that would exceed this density.
    #[arg(long, default_value_t = crate::tensors::MAX_STANDIN_DENSITY)]
    pub max_density: f64,

    /// Seed of the stand-in generator and the factor matrices.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// Output root (default: `reports/` in the repository).
    #[arg(long, value_name = "DIR")]
    pub reports: Option<PathBuf>,

    /// Host name used in output paths (default: this machine's).
    #[arg(long)]
    pub host: Option<String>,

    /// Ignore cached measurements and measure again.
    #[arg(long)]
    pub fresh: bool,

    /// No progress bars (log lines only).
    #[arg(long)]
    pub no_progress: bool,

    /// The baselines' instruction set: `portable`, `avx2` or `avx512`. Default:
    /// `$ALTO_BASELINE_ISA` (the binaries read it at start-up), else the one matching ALTO's
    /// (`$ALTO_ISA`, else the best this CPU has), so both sides get the same vector width.
    #[arg(long, value_name = "ISA")]
    pub baseline_isa: Option<String>,

    /// ALTO's instruction set (`scalar`, `pulp`, `avx2`, `avx512`), for every ALTO variant:
    /// the default one, the rank-specialized and the any-rank kernel. Not a command-line
    /// option: the binaries fill it from `$ALTO_ISA` ([`Opts::with_env`]); unset, the best this
    /// CPU has.
    #[arg(skip)]
    pub alto_isa: Option<String>,
}

impl Opts {
    /// Fills what the command line left unset from the environment (`ALTO_BASELINE_ISA`,
    /// `ALTO_ISA`): called once, at the top of each binary, so nothing below reads the
    /// environment.
    pub fn with_env(mut self) -> Self {
        let var = |name: &str| std::env::var(name).ok().filter(|s| !s.is_empty());
        if self.baseline_isa.is_none() {
            self.baseline_isa = var(BASELINE_ISA_ENV);
        }
        if self.alto_isa.is_none() {
            self.alto_isa = var(alto::dispatch::ISA_ENV);
        }
        self
    }
}

/// What a run works with, resolved once from [`Opts`].
#[derive(Clone, Debug)]
pub struct Ctx {
    pub opts: Opts,
    pub host: String,
    pub reports: PathBuf,
    /// Thread counts, ascending; the last is the one the single-count figures use.
    pub threads: Vec<usize>,
    /// Worker placement of every pool (`--pin`).
    pub pin: PinPolicy,
    /// ALTO's instruction set in every ALTO variant (`$ALTO_ISA`, else the best available).
    pub alto_isa: Isa,
    /// The baselines' instruction set (`--baseline-isa`), checked against this CPU; by default
    /// the one matching [`Ctx::alto_isa`].
    pub baseline_isa: BaselineIsa,
    /// The other vector instruction sets this CPU has (figure 6 also measures every format
    /// with each, to show each format at its best besides both at the same ISA).
    pub other_isas: Vec<Isa>,
}

impl Ctx {
    pub fn new(opts: Opts) -> Result<Self> {
        if !(opts.scale > 0.0 && opts.scale.is_finite()) {
            bail!("--scale must be a positive number, got {}", opts.scale);
        }
        if !(opts.max_density > 0.0 && opts.max_density <= 1.0) {
            bail!("--max-density must be in (0, 1], got {}", opts.max_density);
        }
        if opts.rank == 0 {
            bail!("--rank must be at least 1");
        }
        if opts.reps == 0 {
            bail!("--reps must be at least 1");
        }
        let hw = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mut threads = if opts.threads.is_empty() {
            default_threads(hw)
        } else {
            opts.threads.clone()
        };
        if threads.contains(&0) {
            bail!("--threads: thread counts must be at least 1");
        }
        threads.sort_unstable();
        threads.dedup();
        let pin: PinPolicy = opts.pin.parse()?;
        let host = match &opts.host {
            Some(h) => sanitize(h),
            None => host_name(),
        };
        let reports = match &opts.reports {
            Some(p) => p.clone(),
            None => default_reports_dir(),
        };
        std::fs::create_dir_all(&reports)
            .with_context(|| format!("cannot create {}", reports.display()))?;
        let alto_isa =
            alto::dispatch::DispatchOptions::from_values(opts.alto_isa.as_deref(), None)?.isa();
        let baseline_isa = match &opts.baseline_isa {
            Some(name) => BaselineIsa::from_name(name)
                .map_err(|e| anyhow!("--baseline-isa / {BASELINE_ISA_ENV}: {e}"))?,
            None => matching_baseline_isa(alto_isa),
        };
        let other_isas = [Isa::Avx2, Isa::Avx512]
            .into_iter()
            .filter(|&i| i != alto_isa && i.available())
            .collect();
        Ok(Ctx {
            opts,
            host,
            reports,
            threads,
            pin,
            alto_isa,
            baseline_isa,
            other_isas,
        })
    }

    /// The baselines' instruction set in a measurement at ALTO ISA `isa`: the run's
    /// (`--baseline-isa`) at the run's ALTO ISA, else the matching one.
    pub fn baseline_isa_at(&self, isa: Isa) -> BaselineIsa {
        if isa == self.alto_isa {
            self.baseline_isa
        } else {
            matching_baseline_isa(isa)
        }
    }

    /// The backend `--pin` binds workers with here (`none` when nothing is pinned).
    pub fn pin_backend(&self) -> String {
        if self.pin == PinPolicy::None {
            return "none".into();
        }
        match alto::harness::topology::Topology::detect() {
            Ok(topo) => alto::harness::pool::BindBackend::default_for(&topo)
                .name()
                .into(),
            Err(e) => format!("unknown ({e})"),
        }
    }

    pub fn max_threads(&self) -> usize {
        *self.threads.last().expect("at least one thread count")
    }

    /// `reports/<figure>/<host>`.
    pub fn figure_dir(&self, figure: &str) -> PathBuf {
        self.reports.join(figure).join(&self.host)
    }

    /// `reports/.cache/<host>/<code>/<settings>`: measurements are reused only by the same code
    /// ([`crate::measure::cache::code_key`]) with the same settings ([`Ctx::settings_key`]).
    pub fn cache_dir(&self) -> PathBuf {
        self.reports
            .join(".cache")
            .join(&self.host)
            .join(crate::measure::cache::code_key())
            .join(self.settings_key())
    }

    /// The run settings that change a measured number, as a path component:
    /// `r16-pin_compact-reps5-min0.1`.
    pub fn settings_key(&self) -> String {
        sanitize(&format!(
            "r{}-pin_{}-reps{}-min{}",
            self.opts.rank,
            self.pin.name(),
            self.opts.reps,
            self.opts.min_seconds
        ))
    }
}

/// The baselines' instruction set with the vector width of ALTO's `alto_isa`: `avx512` and
/// `avx2` map to the same, `scalar` to `portable`; `pulp` (which dispatches itself to the
/// widest the CPU has) to the widest baseline ISA. An ISA this CPU lacks maps to `portable`
/// (the caller checked ALTO's ISA already).
pub fn matching_baseline_isa(alto_isa: Isa) -> BaselineIsa {
    let named = |name: &str| BaselineIsa::from_name(name).unwrap_or(BaselineIsa::Portable);
    match alto_isa {
        Isa::Scalar => BaselineIsa::Portable,
        Isa::Pulp => BaselineIsa::best(),
        Isa::Avx2 => named("avx2"),
        Isa::Avx512 => named("avx512"),
    }
}

/// Every count up to 8; above, powers of two and the maximum.
pub fn default_threads(hw: usize) -> Vec<usize> {
    if hw <= 8 {
        return (1..=hw).collect();
    }
    let mut v: Vec<usize> = std::iter::successors(Some(1usize), |&t| Some(t * 2))
        .take_while(|&t| t < hw)
        .collect();
    v.push(hw);
    v
}

/// The repository's `reports/` (this crate sits one level below the workspace root).
pub fn default_reports_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("reports"), |root| root.join("reports"))
}

/// This machine's host name, made safe for a path component.
pub fn host_name() -> String {
    let raw = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "unknown-host".into());
    sanitize(raw.trim())
}

/// `s` made safe for a path component (anything but `[A-Za-z0-9._-]` becomes `_`).
pub fn sanitize(s: &str) -> String {
    let t: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if t.is_empty() || t.starts_with('.') {
        format!("host{t}")
    } else {
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_lists() {
        assert_eq!(default_threads(1), vec![1]);
        assert_eq!(default_threads(2), vec![1, 2]);
        assert_eq!(default_threads(112), vec![1, 2, 4, 8, 16, 32, 64, 112]);
        assert_eq!(sanitize("a b/c"), "a_b_c");
        assert_eq!(sanitize(".."), "host..");
    }

    #[test]
    fn baselines_get_alto_s_vector_width() {
        assert_eq!(matching_baseline_isa(Isa::Scalar).name(), "portable");
        for isa in [Isa::Avx2, Isa::Avx512] {
            if isa.available() {
                assert_eq!(matching_baseline_isa(isa).name(), isa.name());
            } else {
                eprintln!("skipping {}: this CPU lacks it", isa.name());
            }
        }
        assert_eq!(matching_baseline_isa(Isa::Pulp), BaselineIsa::best());
    }
}
