//! Command-line definitions and the shared tensor loading of every subcommand.

mod apr;
mod choices;
mod cpd;
mod gen;
mod info;
mod mttkrp;
mod topo;

use alto::format::{AnyAlto, BuildOptions, BuildTimes, SortAlgorithm};
use alto::harness::pool::{PinPolicy, PinReport};
use alto::memory::{MemoryLimit, MemoryPlan};
use alto::CooTensor;
use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Parser, Debug)]
#[command(
    name = "alto",
    version,
    about = "ALTO sparse tensors: inspect, convert, generate, MTTKRP, CP-ALS; the machine's topology"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Order, dims, bits, masks, fiber reuse and strategy per mode, storage.
    Info(info::InfoArgs),
    /// Convert between `.tns` text and the `.alto` binary file (by extension).
    Convert(ConvertArgs),
    /// Generate a synthetic tensor: a paper preset, `uniform` or `lowrank`.
    Gen(gen::GenArgs),
    /// Time MTTKRP on every (or one) mode; `--check` compares with the oracle.
    Mttkrp(mttkrp::MttkrpArgs),
    /// The machine: packages, NUMA nodes, cores, PUs, caches, and where each `--pin` policy
    /// places workers.
    Topo(topo::TopoArgs),
    /// CP-ALS decomposition: fit and MTTKRP / rest time per iteration; `--out` writes
    /// lambda.npy and factor<n>.npy.
    Cpd(cpd::CpdArgs),
}

pub enum Outcome {
    Success,
    CheckFailed,
}

pub fn run(cli: Cli) -> Result<Outcome> {
    match cli.command {
        Command::Info(a) => info::run(a),
        Command::Convert(a) => convert(a),
        Command::Gen(a) => gen::run(a),
        Command::Mttkrp(a) => mttkrp::run(a),
        Command::Topo(a) => topo::run(a),
        Command::Cpd(a) => cpd::run(a),
    }
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum SortArg {
    Radix,
    Comparison,
}

/// How a tensor file is read and built; shared by every command that loads one.
#[derive(Args, Debug, Clone)]
pub struct LoadArgs {
    /// Declared dims (comma-separated); default: the per-mode maxima of a `.tns` file.
    #[arg(long, value_delimiter = ',')]
    pub dims: Option<Vec<u64>>,
    /// Sort used to build the format.
    #[arg(long, value_enum, default_value_t = SortArg::Radix)]
    pub sort: SortArg,
    /// Fiber-reuse threshold of the conflict-resolution heuristic.
    #[arg(long, default_value_t = alto::format::DEFAULT_MIN_FIBER_REUSE)]
    pub min_fiber_reuse: u64,
    #[command(flatten)]
    pub memory: MemoryArgs,
}

/// `--max-memory`, shared by every command that allocates in proportion to its input.
#[derive(Args, Debug, Clone, Default)]
pub struct MemoryArgs {
    /// Memory this command may use, e.g. 512M or 8G (default: the cgroup limit less current
    /// use, else MemAvailable). Each command adds up what it will allocate and refuses, naming
    /// the sizes, before allocating more than this.
    #[arg(long, value_name = "SIZE", value_parser = alto::memory::parse_byte_size)]
    pub max_memory: Option<u64>,
}

impl MemoryArgs {
    /// The limit plans are checked against.
    pub fn limit(&self) -> Option<MemoryLimit> {
        MemoryLimit::resolve(self.max_memory)
    }
}

/// A loaded tensor and what loading cost.
pub struct Loaded {
    pub alto: AnyAlto,
    /// The parsed COO form, when the input was text.
    pub coo: Option<CooTensor>,
    pub parse_s: Option<f64>,
    pub file_bytes: u64,
    pub build: Option<BuildTimes>,
}

pub enum FileKind {
    Tns,
    Alto,
}

pub fn file_kind(path: &Path) -> Result<FileKind> {
    match path.extension().and_then(|e| e.to_str()) {
        Some("tns") => Ok(FileKind::Tns),
        Some("alto") => Ok(FileKind::Alto),
        _ => bail!(
            "{}: unknown file type (expected .tns or .alto)",
            path.display()
        ),
    }
}

/// Reads a `.tns` (parse + build with `partitions` segments) or `.alto` file (repartitioned
/// to `partitions` when it differs), on `pool`.
pub fn load(
    path: &Path,
    args: &LoadArgs,
    partitions: usize,
    pool: &rayon::ThreadPool,
) -> Result<Loaded> {
    let file_bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    match file_kind(path)? {
        FileKind::Tns => {
            let t = Instant::now();
            let coo = alto::io::tns::read_tns(path, args.dims.as_deref())?;
            let parse_s = t.elapsed().as_secs_f64();
            let opts = BuildOptions {
                partitions,
                max_memory: args.memory.max_memory,
                min_fiber_reuse: args.min_fiber_reuse,
                sort: match args.sort {
                    SortArg::Radix => SortAlgorithm::Radix,
                    SortArg::Comparison => SortAlgorithm::Comparison,
                },
                ..Default::default()
            };
            let (alto, build) = pool.install(|| AnyAlto::build(&coo, &opts))?;
            Ok(Loaded {
                alto,
                coo: Some(coo),
                parse_s: Some(parse_s),
                file_bytes,
                build: Some(build),
            })
        }
        FileKind::Alto => {
            if args.dims.is_some() {
                bail!(
                    "--dims applies to .tns input only; {} stores its dims",
                    path.display()
                );
            }
            // The file's bytes and the arrays parsed from them.
            let mut plan = MemoryPlan::new();
            plan.add(
                format!("reading {}", path.display()),
                file_bytes.saturating_mul(2),
            );
            plan.check(args.memory.limit(), "use a smaller file")?;
            let mut alto = alto::io::binfile::read_alto(path)?;
            if alto.num_partitions() != partitions {
                pool.install(|| alto.repartition(partitions))?;
            }
            Ok(Loaded {
                alto,
                coo: None,
                parse_s: None,
                file_bytes,
                build: None,
            })
        }
    }
}

/// The thread count: `--threads`, else every available CPU. More than
/// [`alto::harness::pool::MAX_THREADS_PER_CPU`] workers per available CPU is refused: it only
/// adds contention (100000 threads once drove the load average to 400 without finishing).
pub fn thread_count(threads: Option<usize>) -> Result<usize> {
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    match threads {
        Some(t) => Ok(alto::harness::pool::check_thread_count(
            t,
            cpus,
            alto::harness::pool::MAX_THREADS_PER_CPU,
        )?),
        None => Ok(cpus),
    }
}

/// `--threads` and `--pin`, shared by every command that computes.
#[derive(Args, Debug, Clone)]
pub struct PoolArgs {
    /// Worker threads (default: every available CPU); also the number of segments a tensor is
    /// built with, unless the command has `--partitions`.
    #[arg(long)]
    pub threads: Option<usize>,
    /// Pin workers: none, compact (fill a core's hardware threads, then the next core),
    /// scatter (spread over packages and NUMA nodes first) or cores (one worker per physical
    /// core).
    #[arg(long, value_name = "POLICY", default_value = "none", value_parser = parse_pin)]
    pub pin: PinPolicy,
}

fn parse_pin(s: &str) -> std::result::Result<PinPolicy, String> {
    PinPolicy::from_name(s)
        .ok_or_else(|| format!("unknown pinning policy `{s}` (none, compact, scatter or cores)"))
}

impl PoolArgs {
    /// `--threads`, else every available CPU.
    pub fn threads(&self) -> Result<usize> {
        thread_count(self.threads)
    }

    /// The pool for `--threads` / `--pin`, every worker started and bound.
    pub fn build(&self) -> Result<(rayon::ThreadPool, PinReport)> {
        build_pool(self.threads()?, self.pin)
    }
}

/// A pool of `threads` workers pinned by `pin`; a binding problem is printed once, as a warning.
pub fn build_pool(threads: usize, pin: PinPolicy) -> Result<(rayon::ThreadPool, PinReport)> {
    let (pool, report) = alto::harness::pool::build_pinned_pool(threads, pin)?;
    if let Some(w) = report.warning() {
        eprintln!("warning: {w}");
    }
    Ok((pool, report))
}

#[derive(Args, Debug)]
pub struct ConvertArgs {
    /// Input `.tns` or `.alto`.
    pub input: PathBuf,
    /// Output `.tns` or `.alto`.
    pub output: PathBuf,
    #[command(flatten)]
    pub load: LoadArgs,
    /// Segments stored in the `.alto` file (default: available CPUs).
    #[arg(long)]
    pub partitions: Option<usize>,
    // --threads (default: the smaller of the partition count and the available CPUs), --pin.
    #[command(flatten)]
    pub pool: PoolArgs,
}

fn convert(a: ConvertArgs) -> Result<Outcome> {
    let parts = thread_count(a.partitions)?;
    let threads = match a.pool.threads {
        Some(t) => thread_count(Some(t))?,
        None => parts.min(thread_count(None)?),
    };
    let (pool, _) = build_pool(threads, a.pool.pin)?;
    let out_kind = file_kind(&a.output)?;
    let loaded = load(&a.input, &a.load, parts, &pool)?;
    match out_kind {
        FileKind::Alto => alto::io::binfile::write_alto(&a.output, &loaded.alto)?,
        FileKind::Tns => {
            let coo = match loaded.coo {
                Some(c) => c,
                None => loaded.alto.to_coo(),
            };
            alto::io::tns::write_tns(&a.output, &coo)?;
        }
    }
    eprintln!(
        "wrote {} ({} nonzeros, {} duplicates merged)",
        a.output.display(),
        loaded.alto.nnz(),
        loaded.alto.duplicates_merged()
    );
    Ok(Outcome::Success)
}

/// Writes `text` to stdout, or fails with the reason (a closed pipe is not a panic).
pub fn print_out(text: &str) -> Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .context("writing to stdout")?;
    out.flush().context("writing to stdout")
}

/// `ALTO_ISA` / `ALTO_DECODE` as kernel-selection options: the binary reads the environment,
/// the library takes the values explicitly.
pub(crate) fn dispatch_env() -> Result<alto::dispatch::DispatchOptions> {
    use alto::dispatch::{DispatchOptions, DECODE_ENV, ISA_ENV};
    let var = |name: &str| std::env::var(name).ok();
    Ok(DispatchOptions::from_values(
        var(ISA_ENV).as_deref(),
        var(DECODE_ENV).as_deref(),
    )?)
}
