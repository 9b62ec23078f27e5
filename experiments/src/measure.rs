//! Building formats and timing MTTKRP, with every result checked against the oracle and every
//! measurement cached on disk as soon as it is taken, so an interrupted run resumes where it
//! stopped.
//!
//! The unit of work (and of caching) is one [`Variant`] of one tensor at one thread count:
//! build it (timed), record its storage, and, when a figure needs times, run MTTKRP on every
//! mode: one warm-up call (checked against the oracle), then at least `--reps` timed calls and
//! at least `--min-seconds` of them; min, median and max are kept.

use crate::config::Ctx;
use crate::tensors::{self, TensorInfo, TensorSpec};
use alto::baselines::{Baseline, BaselineIsa, BaselineKind, BaselineOptions, CooSync};
use alto::dispatch::{best_isa, KernelChoice};
use alto::format::{AnyAlto, BuildOptions};
use alto::harness::pool::build_pinned_pool;
use alto::mttkrp::{mttkrp, mttkrp_oracle, MttkrpOptions, Workspace};
use alto::{AltoError, CooTensor, Matrix};
use alto_kernels::{KernelId, RankSpec};
use anyhow::{Context, Result};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Bump when the meaning of cached entries changes.
const CACHE_VERSION: u32 = 2;

/// One thing that is built and timed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Variant {
    CooAtomic,
    CooPrivatized,
    HicooSb10,
    HicooSb14,
    Csf,
    CsfTile,
    /// ALTO with the default options (automatic strategy and kernel).
    Alto,
    /// ALTO with the best ISA's kernel specialized for the rank (figure 10).
    AltoRankFixed,
    /// ALTO with the best ISA's kernel for any rank (figure 10).
    AltoRankDynamic,
}

impl Variant {
    pub const ALL: [Variant; 9] = [
        Variant::CooAtomic,
        Variant::CooPrivatized,
        Variant::HicooSb10,
        Variant::HicooSb14,
        Variant::Csf,
        Variant::CsfTile,
        Variant::Alto,
        Variant::AltoRankFixed,
        Variant::AltoRankDynamic,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Variant::CooAtomic => "COO-atomic",
            Variant::CooPrivatized => "COO-privatized",
            Variant::HicooSb10 => "HiCOO-SB10",
            Variant::HicooSb14 => "HiCOO-SB14",
            Variant::Csf => "CSF",
            Variant::CsfTile => "CSF-tile",
            Variant::Alto => "ALTO",
            Variant::AltoRankFixed => "ALTO-rank-specialized",
            Variant::AltoRankDynamic => "ALTO-rank-generic",
        }
    }

    /// What has to be built to run it (variants with the same build share one).
    fn build(self) -> Build {
        match self {
            Variant::CooAtomic | Variant::CooPrivatized => Build::Baseline(BaselineKind::Coo),
            Variant::HicooSb10 => Build::Baseline(BaselineKind::HicooSb10),
            Variant::HicooSb14 => Build::Baseline(BaselineKind::HicooSb14),
            Variant::Csf => Build::Baseline(BaselineKind::Csf),
            Variant::CsfTile => Build::Baseline(BaselineKind::CsfTile),
            Variant::Alto | Variant::AltoRankFixed | Variant::AltoRankDynamic => Build::Alto,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Build {
    Baseline(BaselineKind),
    Alto,
}

/// A measurement a figure needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Need {
    pub variant: Variant,
    pub threads: usize,
    /// MTTKRP times on every mode (otherwise build time and storage only).
    pub timed: bool,
}

/// How a measurement ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Ok,
    /// The format cannot represent this tensor (order, index width, rank).
    Unsupported,
    /// Building would exceed the available memory.
    OutOfMemory,
    /// A result differed from the oracle or a call failed (a bug: reported, never hidden).
    Failed,
}

impl Status {
    /// Short text for figures.
    pub fn short(&self) -> &'static str {
        match self {
            Status::Ok => "",
            Status::Unsupported => "no support",
            Status::OutOfMemory => "out of memory",
            Status::Failed => "FAILED",
        }
    }
}

/// Times of one mode.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ModeTime {
    pub mode: usize,
    pub reps: usize,
    pub min_s: f64,
    pub median_s: f64,
    pub max_s: f64,
    /// What ran (ALTO: `pull_scalar_r16`; HiCOO: `scheduled`/`privatized`; COO: the sync).
    pub ran: String,
}

/// One cached measurement.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Entry {
    pub version: u32,
    pub variant: Variant,
    pub threads: usize,
    pub rank: usize,
    pub status: Status,
    pub reason: Option<String>,
    pub build_s: Option<f64>,
    pub storage_bytes: Option<u64>,
    /// Empty when only the build was measured.
    pub modes: Vec<ModeTime>,
    /// Largest relative difference from the oracle over every checked entry.
    pub max_rel_err: Option<f64>,
    pub timed: bool,
    /// The instruction sets the kernels ran with (`alto` / `baseline`): a cached entry measured
    /// with others is measured again.
    pub isas: String,
}

/// ALTO's default ISA in this process: `ALTO_ISA` when set (read here, at the binary level: the
/// library takes it as an explicit option), else the best the CPU has.
pub fn alto_isa() -> alto::Result<alto_kernels::Isa> {
    use alto::dispatch::{DispatchOptions, ISA_ENV};
    let forced = std::env::var(ISA_ENV).ok();
    Ok(DispatchOptions::from_values(forced.as_deref(), None)?.isa())
}

/// `alto=<isa> baseline=<isa>` of this process.
pub fn isas_now() -> String {
    let a = alto_isa().map_or_else(|e| e.to_string(), |i| i.name().into());
    let b = experiment_baseline_isa().map_or_else(|e| e.to_string(), |i| i.name().into());
    format!("alto={a} baseline={b}")
}

impl Entry {
    fn failed(variant: Variant, threads: usize, rank: usize, status: Status, why: String) -> Self {
        Entry {
            version: CACHE_VERSION,
            variant,
            threads,
            rank,
            status,
            reason: Some(why),
            build_s: None,
            storage_bytes: None,
            modes: Vec::new(),
            max_rel_err: None,
            timed: true,
            isas: isas_now(),
        }
    }

    pub fn ok(&self) -> bool {
        self.status == Status::Ok
    }

    /// Sum over modes of the median time (one "iteration": MTTKRP on every mode).
    pub fn total_s(&self) -> Option<f64> {
        (self.ok() && self.timed && !self.modes.is_empty())
            .then(|| self.modes.iter().map(|m| m.median_s).sum())
    }

    pub fn mode_s(&self, mode: usize) -> Option<f64> {
        if !self.ok() {
            return None;
        }
        self.modes
            .iter()
            .find(|m| m.mode == mode)
            .map(|m| m.median_s)
    }

    fn satisfies(&self, need: &Need, rank: usize) -> bool {
        self.version == CACHE_VERSION
            && self.rank == rank
            && (self.timed || !need.timed)
            && self.isas == isas_now()
    }
}

/// Everything measured on one tensor.
#[derive(Clone, Debug)]
pub struct TensorData {
    pub info: TensorInfo,
    pub entries: BTreeMap<(Variant, usize), Entry>,
}

impl TensorData {
    pub fn get(&self, v: Variant, threads: usize) -> Option<&Entry> {
        self.entries.get(&(v, threads))
    }
}

/// Progress bars (hidden with `--no-progress` or when stderr is not a terminal; log lines are
/// printed either way).
pub struct Progress {
    multi: MultiProgress,
    visible: bool,
}

impl Progress {
    pub fn new(enabled: bool) -> Self {
        let multi = MultiProgress::new();
        let visible = enabled && console_is_tty();
        if !visible {
            multi.set_draw_target(ProgressDrawTarget::hidden());
        }
        Progress { multi, visible }
    }

    pub fn bar(&self, len: u64, template: &str) -> ProgressBar {
        let pb = self.multi.add(ProgressBar::new(len));
        pb.set_style(
            ProgressStyle::with_template(template)
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        pb
    }

    pub fn log(&self, line: &str) {
        if self.visible {
            let _ = self.multi.println(line);
        } else {
            eprintln!("{line}");
        }
    }
}

fn console_is_tty() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal()
}

/// Runs (or loads) the measurements.
pub struct Engine<'a> {
    pub ctx: &'a Ctx,
    pub progress: &'a Progress,
}

impl Engine<'_> {
    fn tensor_dir(&self, spec: &TensorSpec) -> PathBuf {
        self.ctx.cache_dir().join(&spec.key)
    }

    fn entry_path(&self, spec: &TensorSpec, v: Variant, threads: usize) -> PathBuf {
        self.tensor_dir(spec)
            .join(format!("r{}", self.ctx.opts.rank))
            .join(format!("{}-t{threads}.json", v.name()))
    }

    /// Cached entries that satisfy `needs`, and the needs still to measure.
    fn cached(
        &self,
        spec: &TensorSpec,
        needs: &[Need],
    ) -> (BTreeMap<(Variant, usize), Entry>, Vec<Need>) {
        let mut have = BTreeMap::new();
        let mut todo = Vec::new();
        for n in needs {
            let e: Option<Entry> = if self.ctx.opts.fresh {
                None
            } else {
                read_json(&self.entry_path(spec, n.variant, n.threads))
            };
            match e {
                Some(e) if e.satisfies(n, self.ctx.opts.rank) => {
                    have.insert((n.variant, n.threads), e);
                }
                _ => todo.push(*n),
            }
        }
        (have, todo)
    }

    /// Measures what is missing of `needs` on `spec` and returns all of it.
    pub fn ensure(&self, spec: &TensorSpec, needs: &[Need]) -> Result<TensorData> {
        let mut needs = needs.to_vec();
        needs.sort();
        needs.dedup_by(|a, b| {
            // Keep one need per (variant, threads), timed if either is.
            if a.variant == b.variant && a.threads == b.threads {
                b.timed |= a.timed;
                true
            } else {
                false
            }
        });
        let info_path = self.tensor_dir(spec).join("info.json");
        let (mut entries, todo) = self.cached(spec, &needs);
        let cached_info: Option<TensorInfo> = read_json(&info_path);
        if todo.is_empty() {
            if let Some(info) = cached_info {
                return Ok(TensorData { info, entries });
            }
        }
        let t_load = Instant::now();
        let (coo, raw_nnz) = tensors::load(spec)?;
        let info = TensorInfo::of(spec, &coo, raw_nnz)?;
        write_json(&info_path, &info)?;
        self.progress.log(&format!(
            "{}: {} nonzeros, dims {:?}, {} bits ({:.1} s to load)",
            spec.label,
            info.nnz,
            info.dims,
            info.index_bits,
            t_load.elapsed().as_secs_f64()
        ));
        if todo.is_empty() {
            return Ok(TensorData { info, entries });
        }
        let mut run = TensorRun::new(self, spec, &coo);
        // Group by thread count, then by build, so each build serves all its variants.
        let mut threads: Vec<usize> = todo.iter().map(|n| n.threads).collect();
        threads.sort_unstable();
        threads.dedup();
        let total_steps: u64 = todo
            .iter()
            .map(|n| if n.timed { 1 + coo.order() as u64 } else { 1 })
            .sum();
        let bar = self.progress.bar(
            total_steps,
            "  {prefix:>12} [{bar:30}] {pos}/{len} {msg} ({elapsed})",
        );
        bar.set_prefix(spec.name.clone());
        for &t in &threads {
            let (pool, placement) = build_pinned_pool(t, self.ctx.pin)?;
            if let Some(w) = placement.warning() {
                self.progress.log(&format!("warning: {w}"));
            }
            let mut builds: Vec<Build> = todo
                .iter()
                .filter(|n| n.threads == t)
                .map(|n| n.variant.build())
                .collect();
            builds.sort();
            builds.dedup();
            for b in builds {
                let group: Vec<Need> = todo
                    .iter()
                    .filter(|n| n.threads == t && n.variant.build() == b)
                    .copied()
                    .collect();
                let done = run.measure_build(b, &group, &pool, &bar)?;
                for e in done {
                    write_json(&self.entry_path(spec, e.variant, e.threads), &e)?;
                    if e.status == Status::Failed {
                        self.progress.log(&format!(
                            "WARNING {}: {} at {} threads failed: {}",
                            spec.name,
                            e.variant.name(),
                            e.threads,
                            e.reason.as_deref().unwrap_or("")
                        ));
                    }
                    entries.insert((e.variant, e.threads), e);
                }
            }
        }
        bar.finish_and_clear();
        Ok(TensorData { info, entries })
    }
}

/// State while measuring one tensor: its factors and the oracle results, computed lazily.
struct TensorRun<'a> {
    engine: &'a Engine<'a>,
    coo: &'a CooTensor,
    factors: Vec<Matrix>,
    oracle: Vec<Option<Matrix>>,
}

impl<'a> TensorRun<'a> {
    fn new(engine: &'a Engine<'a>, _spec: &TensorSpec, coo: &'a CooTensor) -> Self {
        let rank = engine.ctx.opts.rank;
        let factors = coo
            .dims()
            .iter()
            .enumerate()
            .map(|(m, &d)| Matrix::random(d as usize, rank, engine.ctx.opts.seed * 1000 + m as u64))
            .collect();
        TensorRun {
            engine,
            coo,
            factors,
            oracle: vec![None; coo.order()],
        }
    }

    fn oracle(&mut self, mode: usize) -> Result<&Matrix> {
        if self.oracle[mode].is_none() {
            self.oracle[mode] = Some(mttkrp_oracle(self.coo, &self.factors, mode)?);
        }
        Ok(self.oracle[mode].as_ref().expect("just computed"))
    }

    /// Builds `b` once at the pool's thread count and measures every need of `group` on it.
    fn measure_build(
        &mut self,
        b: Build,
        group: &[Need],
        pool: &rayon::ThreadPool,
        bar: &ProgressBar,
    ) -> Result<Vec<Entry>> {
        let threads = pool.current_num_threads();
        let rank = self.engine.ctx.opts.rank;
        bar.set_message(format!("building {} t={threads}", build_name(b)));
        let built = match b {
            Build::Baseline(kind) => {
                Baseline::build(kind, self.coo, pool).map(|(f, s)| (Built::Baseline(f), s))
            }
            Build::Alto => pool
                .install(|| {
                    AnyAlto::build(
                        self.coo,
                        &BuildOptions {
                            partitions: threads,
                            ..Default::default()
                        },
                    )
                })
                .map(|(a, times)| (Built::Alto(a), times.total)),
        };
        bar.inc(group.len() as u64);
        let (format, build_s) = match built {
            Ok(x) => x,
            Err(e) => {
                let status = classify(&e);
                return Ok(group
                    .iter()
                    .map(|n| Entry::failed(n.variant, threads, rank, status.clone(), e.to_string()))
                    .collect());
            }
        };
        let storage = format.storage_bytes();
        let mut out = Vec::new();
        for n in group {
            let mut e = Entry {
                version: CACHE_VERSION,
                variant: n.variant,
                threads,
                rank,
                status: Status::Ok,
                reason: None,
                build_s: Some(build_s),
                storage_bytes: Some(storage),
                modes: Vec::new(),
                max_rel_err: None,
                timed: n.timed,
                isas: isas_now(),
            };
            if n.timed {
                if let Err((status, why)) = self.time_variant(&format, n.variant, pool, bar, &mut e)
                {
                    e.status = status;
                    e.reason = Some(why);
                    e.modes.clear();
                }
            }
            out.push(e);
        }
        Ok(out)
    }

    /// Times every mode of `v` on `format`, filling `e.modes` and `e.max_rel_err`.
    fn time_variant(
        &mut self,
        format: &Built,
        v: Variant,
        pool: &rayon::ThreadPool,
        bar: &ProgressBar,
        e: &mut Entry,
    ) -> std::result::Result<(), (Status, String)> {
        let opts = &self.engine.ctx.opts;
        let rank = opts.rank;
        let threads = pool.current_num_threads();
        let order = self.coo.order();
        let alto_opts = match v {
            Variant::AltoRankFixed => match RankSpec::best_for(rank) {
                RankSpec::Fixed(r) => Some(MttkrpOptions {
                    kernel: KernelChoice::Named(KernelId {
                        isa: best_isa(),
                        rank: RankSpec::Fixed(r),
                    }),
                    ..Default::default()
                }),
                RankSpec::Dynamic => {
                    return Err((
                        Status::Unsupported,
                        format!("no kernel is specialized for rank {rank}"),
                    ))
                }
            },
            Variant::AltoRankDynamic => Some(MttkrpOptions {
                kernel: KernelChoice::Named(KernelId {
                    isa: best_isa(),
                    rank: RankSpec::Dynamic,
                }),
                ..Default::default()
            }),
            _ => Some(MttkrpOptions::default()),
        };
        let base_opts = BaselineOptions {
            isa: Some(experiment_baseline_isa().map_err(|e| (Status::Unsupported, e.to_string()))?),
            coo_sync: if v == Variant::CooPrivatized {
                CooSync::Privatized
            } else {
                CooSync::Atomic
            },
            ..Default::default()
        };
        let mut ws = match format {
            Built::Alto(a) => Some(Workspace::new(a, rank)),
            Built::Baseline(_) => None,
        };
        let mut max_err = 0.0f64;
        for mode in 0..order {
            bar.set_message(format!("{} t={threads} mode {}", v.name(), mode + 1));
            let rows = self.coo.dims()[mode] as usize;
            let mut y = Matrix::zeros(rows, rank);
            self.oracle(mode)
                .map_err(|err| (Status::Failed, format!("oracle: {err}")))?;
            let mut call = |y: &mut Matrix| -> alto::Result<String> {
                match format {
                    Built::Alto(a) => {
                        let o = alto_opts.as_ref().expect("set for ALTO variants");
                        let ws = ws.as_mut().expect("ALTO workspace");
                        mttkrp(a, &self.factors, mode, y, o, ws, pool).map(|r| r.name)
                    }
                    Built::Baseline(f) => f
                        .mttkrp_with(&self.factors, mode, y, &base_opts, pool)
                        .map(str::to_string),
                }
            };
            // Warm-up, checked against the oracle.
            let ran = call(&mut y).map_err(|err| (classify(&err), err.to_string()))?;
            let want = self.oracle[mode]
                .as_ref()
                .expect("computed before the closure");
            let err = max_relative_error(&y, want);
            max_err = max_err.max(err);
            if err.is_nan() || err > 1e-9 {
                return Err((
                    Status::Failed,
                    format!("mode {mode}: result differs from the oracle (relative error {err:e})"),
                ));
            }
            let mut times = Vec::new();
            let mut spent = 0.0;
            let cap = (opts.reps * 50).max(200);
            while times.len() < opts.reps || (spent < opts.min_seconds && times.len() < cap) {
                let t = Instant::now();
                call(&mut y).map_err(|err| (Status::Failed, err.to_string()))?;
                let s = t.elapsed().as_secs_f64();
                spent += s;
                times.push(s);
            }
            times.sort_by(f64::total_cmp);
            e.modes.push(ModeTime {
                mode,
                reps: times.len(),
                min_s: times[0],
                median_s: median(&times),
                max_s: times[times.len() - 1],
                ran,
            });
            bar.inc(1);
        }
        e.max_rel_err = Some(max_err);
        Ok(())
    }
}

enum Built {
    Baseline(Baseline),
    Alto(AnyAlto),
}

impl Built {
    fn storage_bytes(&self) -> u64 {
        match self {
            Built::Baseline(b) => b.storage_bytes(),
            Built::Alto(a) => a.storage_bytes(),
        }
    }
}

fn build_name(b: Build) -> &'static str {
    match b {
        Build::Baseline(k) => k.name(),
        Build::Alto => "ALTO",
    }
}

/// The baselines' instruction set in the experiments: vector code only when ALTO's kernels are
/// vectorized too (its default ISA is not `scalar`), so neither side gets wider vectors than
/// the other; `ALTO_BASELINE_ISA` overrides.
pub fn experiment_baseline_isa() -> alto::Result<BaselineIsa> {
    if std::env::var_os(alto::baselines::BASELINE_ISA_ENV).is_some() {
        return alto::baselines::default_baseline_isa();
    }
    let alto_isa = alto_isa()?;
    Ok(if alto_isa.name() == "scalar" {
        BaselineIsa::Portable
    } else {
        BaselineIsa::best()
    })
}

/// Maps a library error to how the figures report it.
pub fn classify(e: &AltoError) -> Status {
    match e {
        AltoError::OutOfMemory { .. } => Status::OutOfMemory,
        AltoError::UnsupportedOrder { .. }
        | AltoError::TooManyBits { .. }
        | AltoError::InvalidArgument(_) => Status::Unsupported,
        _ => Status::Failed,
    }
}

/// Largest `|got - want| / max(|want|, tiny)` over all entries (inputs are non-negative, so
/// there is no cancellation and every entry is accurate to a few ulps per term).
pub fn max_relative_error(got: &Matrix, want: &Matrix) -> f64 {
    if (got.rows(), got.cols()) != (want.rows(), want.cols()) {
        return f64::INFINITY;
    }
    let scale = want
        .as_slice()
        .iter()
        .fold(0.0f64, |a, &x| a.max(x.abs()))
        .max(f64::MIN_POSITIVE);
    got.as_slice()
        .iter()
        .zip(want.as_slice())
        .map(|(&g, &w)| {
            let d = (g - w).abs();
            if d.is_nan() {
                f64::NAN
            } else {
                d / w.abs().max(scale * 1e-6)
            }
        })
        .fold(0.0, |a: f64, x| {
            if x.is_nan() || a.is_nan() {
                f64::NAN
            } else {
                a.max(x)
            }
        })
}

pub fn median(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        0.5 * (sorted[n / 2 - 1] + sorted[n / 2])
    }
}

/// Reads a JSON file, `None` when missing or unreadable (a stale or partial cache entry is
/// measured again).
pub fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Option<T> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}

/// Writes JSON atomically (temporary file, then rename), so an interruption never leaves a
/// partial entry.
pub fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let tmp = path.with_extension("json.tmp");
    let text = serde_json::to_string_pretty(value)?;
    std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_errors() {
        assert_eq!(median(&[1.0, 2.0, 10.0]), 2.0);
        assert_eq!(median(&[1.0, 2.0, 3.0, 10.0]), 2.5);
        let a = Matrix::from_vec(1, 3, vec![1.0, 2.0, 0.0]).unwrap();
        let b = Matrix::from_vec(1, 3, vec![1.0, 2.0 + 2e-12, 0.0]).unwrap();
        assert!(max_relative_error(&b, &a) < 1e-11);
        let c = Matrix::from_vec(1, 3, vec![1.0, f64::NAN, 0.0]).unwrap();
        assert!(max_relative_error(&c, &a).is_nan());
        assert_eq!(
            classify(&AltoError::UnsupportedOrder { order: 9, max: 8 }),
            Status::Unsupported
        );
    }

    #[test]
    fn json_round_trip_is_atomic() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a/b.json");
        write_json(&p, &vec![1, 2]).unwrap();
        assert_eq!(read_json::<Vec<i32>>(&p), Some(vec![1, 2]));
        assert!(!p.with_extension("json.tmp").exists());
        std::fs::write(&p, "{ partial").unwrap();
        assert_eq!(read_json::<Vec<i32>>(&p), None);
    }
}
