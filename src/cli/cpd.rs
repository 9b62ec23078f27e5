//! `alto cpd`: CP-ALS (default) with the fit and the MTTKRP / rest split of every iteration, or
//! with `--model apr` CP-APR ([`super::apr`]); writes `lambda.npy` and `factor{n}.npy` with
//! `--out`.

use super::choices::{
    parse_cpd_kernel, parse_row_kernel, CpdKernel, ModelArg, PadArg, SyncArg, CPD_KERNEL_HELP,
    ROW_KERNEL_HELP,
};
use super::{load, print_out, LoadArgs, Outcome, PoolArgs};
use alto::cpd::model::write_fit_trajectory;
use alto::cpd::{cp_als, CpModel, CpdOptions, DEFAULT_MAX_ITERS, DEFAULT_TOL};
use alto::dispatch::KernelChoice;
use alto::harness::pool::{PinPolicy, PinReport};
use alto::mttkrp::{MttkrpOptions, SyncChoice};
use alto::AltoError;
use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use serde::Serialize;
use std::fmt::Write;
use std::path::PathBuf;
use std::time::Instant;

#[derive(Args, Debug)]
pub struct CpdArgs {
    /// A `.tns` or `.alto` file.
    pub file: PathBuf,
    #[command(flatten)]
    pub load: LoadArgs,
    /// Number of components R (1 <= R <= min(nnz, min over modes of the product of the other
    /// modes' dims)).
    #[arg(long)]
    pub rank: usize,
    /// The model: `als` (least squares, CP-ALS) or `apr` (Poisson, CP-APR: for counts).
    #[arg(long, value_enum, default_value_t = ModelArg::Als)]
    pub model: ModelArg,
    /// Iteration cap (outer iterations for apr); default 50 for als, 1000 for apr.
    #[arg(long)]
    pub iters: Option<usize>,
    /// als: stop when |fit - previous fit| < tol (default 1e-5); apr: when every mode's KKT
    /// violation is below tol before its first update (default 1e-4). >= 0; 0 runs to the cap.
    #[arg(long, allow_negative_numbers = true)]
    pub tol: Option<f64>,
    /// apr: inner (multiplicative-update) iterations per mode at most [default: 10].
    #[arg(long)]
    pub inner: Option<usize>,
    /// apr: offset added to inadmissible zeros [default: 0.01].
    #[arg(long, allow_negative_numbers = true)]
    pub kappa: Option<f64>,
    /// apr: entries below this count as zeros for kappa [default: 1e-10].
    #[arg(long, allow_negative_numbers = true)]
    pub kappa_tol: Option<f64>,
    /// apr: floor of the model value a count is divided by [default: 1e-10].
    #[arg(long, allow_negative_numbers = true)]
    pub epsilon: Option<f64>,
    /// apr: start from DIR/factor<n>.npy (nonnegative, I_n x R) instead of random factors.
    #[arg(long, value_name = "DIR")]
    pub init: Option<PathBuf>,
    /// Seed of the random initial factors.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    // --threads (the tensor is cut into as many segments) and --pin.
    #[command(flatten)]
    pub pool: PoolArgs,
    /// MTTKRP conflict resolution.
    #[arg(long, value_enum, default_value_t = SyncArg::Auto)]
    pub sync: SyncArg,
    #[arg(long, default_value = "auto", value_parser = parse_cpd_kernel, help = CPD_KERNEL_HELP)]
    pub kernel: CpdKernel,
    #[arg(long, default_value = "auto", value_parser = parse_row_kernel, help = ROW_KERNEL_HELP)]
    pub row_kernel: String,
    /// Rows padded to whole vectors for ranks that are not (see `alto mttkrp --pad`).
    #[arg(long, value_enum, default_value_t = PadArg::Auto)]
    pub pad: PadArg,
    /// Write DIR/lambda.npy (R) and DIR/factor<n>.npy (I_n x R).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print one JSON document instead of the table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct ModeRun {
    mode: usize,
    fiber_reuse: u64,
    name: String,
    strategy: String,
    kernel: String,
    decode: &'static str,
}

#[derive(Serialize)]
struct Report {
    file: String,
    order: usize,
    dims: Vec<u64>,
    nnz: usize,
    rank: usize,
    threads: usize,
    pin: PinReport,
    max_iters: usize,
    tol: f64,
    seed: u64,
    load_seconds: f64,
    norm_x: f64,
    mttkrp: Vec<ModeRun>,
    row_kernel: String,
    iterations: Vec<alto::cpd::IterStats>,
    iters_run: usize,
    converged: bool,
    final_fit: f64,
    total_seconds: f64,
    mttkrp_seconds: f64,
    rest_seconds: f64,
    seconds_per_iter: f64,
    mttkrp_seconds_per_iter: f64,
    rest_seconds_per_iter: f64,
    median_seconds_per_iter: f64,
    pinv_solves: usize,
    out_dir: Option<String>,
}

/// Maps a library option name to its flag (the options CP-ALS and CP-APR share).
pub(super) fn flag(option: &str) -> &str {
    match option {
        "max_iters" => "--iters",
        "rank" => "--rank",
        "tol" => "--tol",
        other => other,
    }
}

pub fn run(a: CpdArgs) -> Result<Outcome> {
    if a.model == ModelArg::Apr {
        return super::apr::run(a);
    }
    let apr_only = [
        ("--inner", a.inner.is_some()),
        ("--kappa", a.kappa.is_some()),
        ("--kappa-tol", a.kappa_tol.is_some()),
        ("--epsilon", a.epsilon.is_some()),
        ("--init", a.init.is_some()),
    ];
    if let Some((name, _)) = apr_only.iter().find(|(_, set)| *set) {
        bail!("{name} applies to --model apr only");
    }
    let kernel = match a.kernel {
        CpdKernel::Mttkrp(k) => k,
        CpdKernel::Phi(_) => bail!("--kernel: Phi kernels apply to --model apr only"),
    };
    let iters = a.iters.unwrap_or(DEFAULT_MAX_ITERS);
    let tol = a.tol.unwrap_or(DEFAULT_TOL);
    // Options that need no tensor are checked before loading it.
    if a.rank == 0 {
        bail!("--rank must be at least 1");
    }
    if iters == 0 {
        bail!("--iters must be at least 1");
    }
    if !(tol >= 0.0 && tol.is_finite()) {
        bail!("--tol must be a finite number >= 0, got {tol}");
    }
    let sync = SyncChoice::from(a.sync);
    let dispatch = super::dispatch_env()?;
    let kernel: KernelChoice = dispatch.kernel(kernel);
    kernel.resolve(a.rank).context("--kernel")?;
    let row_kernel = alto::cpd::rows::RowKernel::parse(&a.row_kernel, a.rank)
        .map_err(|e| anyhow!("--row-kernel: {e}"))?;
    let threads = a.pool.threads()?;
    let (pool, pin) = a.pool.build()?;
    let start = Instant::now();
    let loaded = load(&a.file, &a.load, threads, &pool)?;
    let load_seconds = start.elapsed().as_secs_f64();
    let t = &loaded.alto;
    alto::memory::cp_als_plan(t, a.rank).check(a.load.memory.limit(), "lower --rank")?;
    let opts = CpdOptions {
        rank: a.rank,
        max_iters: iters,
        tol,
        seed: a.seed,
        mttkrp: MttkrpOptions {
            sync,
            kernel,
            decode: dispatch.decode,
            pad: a.pad.choice(),
            ..Default::default()
        },
        row_kernel,
    };
    if let Some(dir) = &a.out {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let model = match cp_als(t, &opts, &pool) {
        Ok(m) => m,
        Err(AltoError::CpdOption { option, reason }) => bail!("{}: {reason}", flag(option)),
        Err(e) => return Err(e.into()),
    };
    if let Some(dir) = &a.out {
        model.write_npy(dir)?;
    }
    let report = report(&a, (iters, tol), t, threads, pin, load_seconds, &model);
    if a.json {
        print_out(&(serde_json::to_string_pretty(&report)? + "\n"))?;
    } else {
        print_out(&render(&report))?;
    }
    Ok(Outcome::Success)
}

fn report(
    a: &CpdArgs,
    (max_iters, tol): (usize, f64),
    t: &alto::AnyAlto,
    threads: usize,
    pin: PinReport,
    load_seconds: f64,
    model: &CpModel,
) -> Report {
    let h = &model.history;
    let k = h.len().max(1) as f64;
    let total: f64 = h.iter().map(|s| s.seconds).sum();
    let mttkrp: f64 = h.iter().map(|s| s.mttkrp_seconds).sum();
    let rest: f64 = h.iter().map(|s| s.rest_seconds).sum();
    let mut secs: Vec<f64> = h.iter().map(|s| s.seconds).collect();
    secs.sort_by(f64::total_cmp);
    Report {
        file: a.file.display().to_string(),
        order: t.order(),
        dims: t.dims().to_vec(),
        nnz: t.nnz(),
        rank: a.rank,
        threads,
        pin,
        max_iters,
        tol,
        seed: a.seed,
        load_seconds,
        norm_x: model.norm_x_sq.sqrt(),
        mttkrp: model
            .mttkrp_runs
            .iter()
            .enumerate()
            .map(|(mode, r)| ModeRun {
                mode,
                fiber_reuse: t.fiber_reuse(mode),
                name: r.name.clone(),
                strategy: r.sync.to_string(),
                kernel: r.kernel.to_string(),
                decode: r.decode,
            })
            .collect(),
        row_kernel: model.row_kernel.clone(),
        iterations: h.clone(),
        iters_run: h.len(),
        converged: model.converged,
        final_fit: model.final_fit(),
        total_seconds: total,
        mttkrp_seconds: mttkrp,
        rest_seconds: rest,
        seconds_per_iter: total / k,
        mttkrp_seconds_per_iter: mttkrp / k,
        rest_seconds_per_iter: rest / k,
        median_seconds_per_iter: secs.get(secs.len() / 2).copied().unwrap_or(0.0),
        pinv_solves: h.iter().map(|s| s.pinv_solves).sum(),
        out_dir: a.out.as_ref().map(|d| d.display().to_string()),
    }
}

fn render(r: &Report) -> String {
    let mut s = String::new();
    let dims: Vec<String> = r.dims.iter().map(|d| d.to_string()).collect();
    let _ = writeln!(
        s,
        "{}: {} nonzeros, dims {}; CP-ALS rank {}, {} threads, at most {} iterations, tol {:e}, \
         seed {}",
        r.file,
        r.nnz,
        dims.join(" x "),
        r.rank,
        r.threads,
        r.max_iters,
        r.tol,
        r.seed
    );
    if r.pin.policy != PinPolicy::None {
        let _ = writeln!(
            s,
            "pinned {} through {} (worker:cpus) {}",
            r.pin.policy,
            r.pin.backend,
            r.pin.summary()
        );
    }
    let kernels: Vec<String> = r
        .mttkrp
        .iter()
        .map(|m| format!("{}:{}", m.mode, m.name))
        .collect();
    let _ = writeln!(
        s,
        "load {:.3} s; MTTKRP per mode {}; solve/Gram kernel {}",
        r.load_seconds,
        kernels.join(" "),
        r.row_kernel
    );
    write_fit_trajectory(&mut s, &r.iterations, r.converged);
    let _ = writeln!(
        s,
        "per iteration (mean): {:.3} ms = MTTKRP {:.3} ms + rest {:.3} ms; median {:.3} ms",
        r.seconds_per_iter * 1e3,
        r.mttkrp_seconds_per_iter * 1e3,
        r.rest_seconds_per_iter * 1e3,
        r.median_seconds_per_iter * 1e3
    );
    write_outputs_line(&mut s, r.out_dir.as_deref(), r.order);
    s
}

/// The closing line of a report that wrote its model with `--out` (CP-ALS and CP-APR alike).
pub(super) fn write_outputs_line(s: &mut String, out_dir: Option<&str>, order: usize) {
    if let Some(dir) = out_dir {
        let _ = writeln!(
            s,
            "wrote {dir}/lambda.npy and {dir}/factor{{0..{}}}.npy",
            order - 1
        );
    }
}
