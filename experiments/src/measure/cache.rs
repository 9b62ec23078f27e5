//! The cache: one JSON [`Entry`] per (tensor, rank, variant, thread count) under
//! `reports/.cache`, written atomically as soon as it is measured, and read back when it still
//! satisfies a need (same cache version, rank and instruction sets; timed when times are needed).

use super::{isas_now, Engine, Need, Variant};
use crate::tensors::TensorSpec;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Bump when the meaning of cached entries changes.
pub const CACHE_VERSION: u32 = 2;

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

impl Entry {
    pub(super) fn failed(
        variant: Variant,
        threads: usize,
        rank: usize,
        status: Status,
        why: String,
        isas: String,
    ) -> Self {
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
            isas,
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

    fn satisfies(&self, need: &Need, rank: usize, isas: &str) -> bool {
        self.version == CACHE_VERSION
            && self.rank == rank
            && (self.timed || !need.timed)
            && self.isas == isas
    }
}

impl Engine<'_> {
    pub(super) fn tensor_dir(&self, spec: &TensorSpec) -> PathBuf {
        self.ctx.cache_dir().join(&spec.key)
    }

    pub(super) fn entry_path(&self, spec: &TensorSpec, v: Variant, threads: usize) -> PathBuf {
        self.tensor_dir(spec)
            .join(format!("r{}", self.ctx.opts.rank))
            .join(format!("{}-t{threads}.json", v.name()))
    }

    /// Cached entries that satisfy `needs`, and the needs still to measure.
    pub(super) fn cached(
        &self,
        spec: &TensorSpec,
        needs: &[Need],
    ) -> (BTreeMap<(Variant, usize), Entry>, Vec<Need>) {
        let isas = isas_now(self.ctx);
        let mut have = BTreeMap::new();
        let mut todo = Vec::new();
        for n in needs {
            let e: Option<Entry> = if self.ctx.opts.fresh {
                None
            } else {
                read_json(&self.entry_path(spec, n.variant, n.threads))
            };
            match e {
                Some(e) if e.satisfies(n, self.ctx.opts.rank, &isas) => {
                    have.insert((n.variant, n.threads), e);
                }
                _ => todo.push(*n),
            }
        }
        (have, todo)
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
