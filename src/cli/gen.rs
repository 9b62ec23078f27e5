//! `alto gen`: synthetic tensors, deterministic for a seed.

use super::{file_kind, FileKind, MemoryArgs, Outcome, PoolArgs};
use alto::format::{AnyAlto, BuildOptions};
use alto::gen::{find_preset, PRESETS};
use anyhow::{bail, Context, Result};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct GenArgs {
    /// A paper tensor (`nips`, `uber`, `chicago`, `vast`, `darpa`, `enron`, `nell-2`, `fb-m`,
    /// `flickr`, `delicious`, `nell-1`, `amazon`, `patents`, `reddit`, `lbnl`), `uniform`,
    /// `skewed` (hierarchical log-normal over `--dims`) or `lowrank`.
    pub kind: String,
    /// Number of nonzeros (approximate for presets and lowrank).
    #[arg(long)]
    pub nnz: u64,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Dims, comma-separated (uniform, skewed and lowrank).
    #[arg(long, value_delimiter = ',')]
    pub dims: Option<Vec<u64>>,
    /// skewed: coefficient of variation of fibers per slice (log-normal).
    #[arg(long, default_value_t = 1.0)]
    pub cv_slices: f64,
    /// skewed: coefficient of variation of nonzeros per fiber (log-normal).
    #[arg(long, default_value_t = 1.0)]
    pub cv_fibers: f64,
    /// Rank of a lowrank tensor.
    #[arg(long)]
    pub rank: Option<usize>,
    /// Presets: keep the paper tensor's true dims (and so its index width) instead of scaling
    /// long modes by the nonzero ratio.
    #[arg(long)]
    pub keep_dims: bool,
    /// lowrank: draw Poisson counts with this mean per planted entry from the planted model
    /// (count data for `alto cpd --model apr`) instead of writing the model's values.
    #[arg(long, value_name = "MEAN")]
    pub poisson: Option<f64>,
    /// lowrank: also write the planted factors as DIR/factor<n>.npy.
    #[arg(long)]
    pub save_factors: Option<PathBuf>,
    /// Output `.tns` or `.alto`.
    #[arg(short, long)]
    pub output: PathBuf,
    #[command(flatten)]
    pub memory: MemoryArgs,
    // --threads (also the segment count of an `.alto` output) and --pin.
    #[command(flatten)]
    pub pool: PoolArgs,
}

/// The dims a generator will use, and whether it keeps per-row weights (the skewed ones).
fn planned_dims(a: &GenArgs) -> Option<(Vec<u64>, bool)> {
    match a.kind.as_str() {
        "uniform" | "lowrank" => a.dims.clone().map(|d| (d, false)),
        "skewed" => a.dims.clone().map(|d| (d, true)),
        name => find_preset(name).map(|p| (alto::gen::standin_dims(p, a.nnz, a.keep_dims), true)),
    }
}

pub fn run(a: GenArgs) -> Result<Outcome> {
    let out_kind = file_kind(&a.output)?;
    alto::gen::check_cv("--cv-slices", a.cv_slices)?;
    alto::gen::check_cv("--cv-fibers", a.cv_fibers)?;
    if let Some((dims, weights)) = planned_dims(&a) {
        let mut plan = alto::gen::memory_plan(&dims, a.nnz, weights);
        if let (Some(rank), "lowrank") = (a.rank, a.kind.as_str()) {
            let rows = dims.iter().fold(0u64, |s, &d| s.saturating_add(d));
            let entries = rows.saturating_mul(rank as u64);
            plan.add("planted factors", alto::memory::bytes_for(entries, 8));
        }
        if matches!(out_kind, FileKind::Alto) {
            let width = alto::format::Layout::new(&dims)?.width();
            let threads = a.pool.threads()?;
            plan.extend(alto::format::alto::build_memory_plan(
                a.nnz as usize,
                &dims,
                width,
                threads,
            ));
        }
        plan.check(a.memory.limit(), "lower --nnz or --dims")?;
    }
    if a.poisson.is_some() && a.kind != "lowrank" {
        bail!("--poisson applies to lowrank only");
    }
    let coo = match a.kind.as_str() {
        "uniform" => {
            let dims = a.dims.as_deref().context("uniform needs --dims")?;
            alto::gen::uniform(dims, a.nnz, a.seed)?
        }
        "skewed" => {
            let dims = a.dims.as_deref().context("skewed needs --dims")?;
            alto::gen::hierarchical(dims, a.nnz, a.cv_slices, a.cv_fibers, a.seed)?
        }
        "lowrank" => {
            let dims = a.dims.as_deref().context("lowrank needs --dims")?;
            let rank = a.rank.context("lowrank needs --rank")?;
            let (coo, factors) = match a.poisson {
                Some(mean) => alto::gen::lowrank_poisson(dims, rank, a.nnz, mean, a.seed)?,
                None => alto::gen::lowrank(dims, rank, a.nnz, a.seed)?,
            };
            if let Some(dir) = &a.save_factors {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("creating {}", dir.display()))?;
                for (n, f) in factors.iter().enumerate() {
                    f.write_npy(&dir.join(format!("factor{n}.npy")))?;
                }
            }
            coo
        }
        name => {
            let Some(p) = find_preset(name) else {
                let names: Vec<&str> = PRESETS.iter().map(|p| p.name).collect();
                bail!(
                    "unknown generator `{name}` (uniform, skewed, lowrank, or a preset: {})",
                    names.join(", ")
                );
            };
            if a.dims.is_some() || a.rank.is_some() {
                bail!("--dims and --rank apply to uniform/lowrank, not to the preset `{name}`");
            }
            alto::gen::preset(p, a.nnz, a.seed, a.keep_dims)?
        }
    };
    match out_kind {
        FileKind::Tns => alto::io::tns::write_tns(&a.output, &coo)?,
        FileKind::Alto => {
            let threads = a.pool.threads()?;
            let (pool, _) = a.pool.build()?;
            let opts = BuildOptions {
                partitions: threads,
                max_memory: a.memory.max_memory,
                ..Default::default()
            };
            let (t, _) = pool.install(|| AnyAlto::build(&coo, &opts))?;
            alto::io::binfile::write_alto(&a.output, &t)?;
        }
    }
    let dims: Vec<String> = coo.dims().iter().map(|d| d.to_string()).collect();
    eprintln!(
        "wrote {}: {}, {} nonzeros (before merging duplicates)",
        a.output.display(),
        dims.join(" x "),
        coo.nnz()
    );
    Ok(Outcome::Success)
}
