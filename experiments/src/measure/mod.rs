//! Building formats and timing MTTKRP, with every result checked against the oracle and every
//! measurement cached on disk as soon as it is taken, so an interrupted run resumes where it
//! stopped.
//!
//! The unit of work (and of caching) is one [`Variant`] of one tensor at one thread count and
//! one ISA (ALTO's; the baselines run the matching one): build it (timed), record its full
//! storage footprint, and, when a figure needs times, run MTTKRP on every mode: one warm-up
//! call (checked against the oracle), then at least `--reps` timed calls and at least
//! `--min-seconds` of them; min, median and max are kept.
//!
//! - [`cache`]: the cached [`Entry`] of one measurement and its JSON files;
//! - [`timing`]: building a format and timing its MTTKRP on every mode;
//! - [`stats`]: the relative error against the oracle (medians are
//!   [`alto::harness::record::min_median_max`]);
//! - [`progress`]: progress bars and log lines.

pub mod cache;
pub mod progress;
pub mod stats;
pub mod timing;

pub use cache::{read_json, write_json, Entry, ModeTime, Stamp, Status};
pub use progress::Progress;
pub use stats::max_relative_error;
pub use timing::classify;

use crate::config::Ctx;
use crate::formats::BaselineKind;
use crate::tensors::{self, TensorInfo, TensorSpec};
use alto::harness::pool::build_pinned_pool;
use alto_kernels::Isa;
use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Instant;
use timing::TensorRun;

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
    /// ALTO with the run ISA's kernel specialized for the rank (figure 10).
    AltoRankFixed,
    /// ALTO with the run ISA's kernel for any rank (figure 10).
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
    pub(crate) fn build(self) -> Build {
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

/// A format to build: one of the baselines, or ALTO.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Build {
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
    /// ALTO's ISA in this measurement; the baselines run the matching one
    /// ([`Ctx::baseline_isa_at`]).
    pub isa: Isa,
}

/// What identifies a measurement of one tensor: variant, thread count, ISA.
pub type EntryKey = (Variant, usize, Isa);

impl Need {
    pub fn key(&self) -> EntryKey {
        (self.variant, self.threads, self.isa)
    }

    /// The name of the ISA this need's variant runs with in `ctx`.
    pub fn isa_run(&self, ctx: &Ctx) -> &'static str {
        match self.variant.build() {
            Build::Alto => self.isa.name(),
            Build::Baseline(_) => ctx.baseline_isa_at(self.isa).name(),
        }
    }
}

/// Everything measured on one tensor.
#[derive(Clone, Debug)]
pub struct TensorData {
    pub info: TensorInfo,
    /// The run's ALTO ISA ([`Ctx::alto_isa`]): the one [`TensorData::get`] answers for.
    pub isa: Isa,
    pub entries: BTreeMap<EntryKey, Entry>,
}

impl TensorData {
    /// The measurement at the run's ISA.
    pub fn get(&self, v: Variant, threads: usize) -> Option<&Entry> {
        self.get_at(v, threads, self.isa)
    }

    /// The measurement at ALTO ISA `isa` (baselines at the matching one).
    pub fn get_at(&self, v: Variant, threads: usize, isa: Isa) -> Option<&Entry> {
        self.entries.get(&(v, threads, isa))
    }
}

/// Runs (or loads) the measurements.
pub struct Engine<'a> {
    pub ctx: &'a Ctx,
    pub progress: &'a Progress,
}

impl Engine<'_> {
    /// Measures what is missing of `needs` on `spec` and returns all of it.
    pub fn ensure(&self, spec: &TensorSpec, needs: &[Need]) -> Result<TensorData> {
        let mut needs = needs.to_vec();
        needs.sort();
        needs.dedup_by(|a, b| {
            // Keep one need per (variant, threads, ISA), timed if either is.
            if a.key() == b.key() {
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
                return Ok(TensorData {
                    info,
                    isa: self.ctx.alto_isa,
                    entries,
                });
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
            return Ok(TensorData {
                info,
                isa: self.ctx.alto_isa,
                entries,
            });
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
                for (n, e) in group.iter().zip(done) {
                    write_json(&self.entry_path(spec, n), &e)?;
                    if e.status == Status::Failed {
                        self.progress.log(&format!(
                            "WARNING {}: {} at {} threads failed: {}",
                            spec.name,
                            e.variant.name(),
                            e.threads,
                            e.reason.as_deref().unwrap_or("")
                        ));
                    }
                    entries.insert(n.key(), e);
                }
            }
        }
        bar.finish_and_clear();
        Ok(TensorData {
            info,
            isa: self.ctx.alto_isa,
            entries,
        })
    }
}
