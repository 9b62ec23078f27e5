//! The cache: one JSON [`Entry`] per measurement under
//! `reports/.cache/<host>/<code>/<settings>/<tensor>/<variant>-t<threads>-<isa>.json`, written
//! atomically as soon as it is measured, and read back only when everything that changes a
//! number is the same: the code ([`code_key`]: commit, and the executable itself when the work
//! tree had uncommitted changes), the settings ([`Ctx::settings_key`]: rank, pinning, `--reps`,
//! `--min-seconds`), the tensor (its key holds the generator's size, seed and density, or the
//! file's name and size), the variant (kernel), the thread count and the ISA. An entry keeps
//! its own stamp (date, commit, pinning backend), which the records report as it is.

use super::{Engine, EntryKey, Need, Variant};
use crate::config::Ctx;
use crate::tensors::TensorSpec;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Bump when the meaning of cached entries changes.
pub const CACHE_VERSION: u32 = 3;

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
    /// The instruction set the variant's kernels ran with (ALTO's for ALTO variants, the
    /// baselines' for the others).
    pub isa: String,
    /// The ALTO ISA of the measurement this entry belongs to (its cache key; equal to `isa`
    /// for ALTO variants, and for the baselines unless `--baseline-isa` chose another).
    pub isa_key: String,
    /// When and with what this entry was measured (the records report these, not the
    /// rendering run's).
    pub stamp: Stamp,
}

/// What a measurement was taken with, kept in its entry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stamp {
    /// RFC 3339, UTC.
    pub date_utc: String,
    pub git_commit: String,
    /// `true`, `false` or `unknown` ([`alto::harness::record::GIT_DIRTY`]).
    pub git_dirty: String,
    /// [`code_key`] of the binary that measured it.
    pub code: String,
    pub pin: String,
    pub pin_backend: String,
    pub reps_min: usize,
    pub min_seconds: f64,
}

impl Stamp {
    /// This run's stamp, dated now.
    pub fn now(ctx: &Ctx, pin_backend: &str) -> Self {
        Stamp {
            date_utc: alto::harness::record::rfc3339_utc(std::time::SystemTime::now()),
            git_commit: alto::harness::record::GIT_COMMIT.to_string(),
            git_dirty: alto::harness::record::GIT_DIRTY.to_string(),
            code: code_key().to_string(),
            pin: ctx.pin.name().to_string(),
            pin_backend: pin_backend.to_string(),
            reps_min: ctx.opts.reps,
            min_seconds: ctx.opts.min_seconds,
        }
    }
}

/// The code that measures: the commit, and, when the build or the work tree now has
/// uncommitted changes to tracked files (or either is unknown), `-dirty-` and a hash of this
/// executable, so an entry is reused only by the very binary that measured it. Computed once.
pub fn code_key() -> &'static str {
    use alto::harness::record::{GIT_COMMIT, GIT_DIRTY};
    static KEY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    KEY.get_or_init(|| {
        if GIT_DIRTY == "false" && work_tree_clean() == Some(true) {
            return GIT_COMMIT.to_string();
        }
        let exe = std::env::current_exe().and_then(std::fs::read).map_or_else(
            |e| format!("unreadable-{}", e.kind()),
            |b| format!("{:016x}", fnv1a(&b)),
        );
        format!("{GIT_COMMIT}-dirty-{exe}")
    })
}

/// Whether the source tree this binary was built from has no uncommitted changes to tracked
/// files now, outside `reports/` as in the library's build script (`None`: no git, or not a
/// checkout). The build's own flag can be stale: build scripts rerun when the index moves, not
/// on every edit. Without the exclusion a figure that rewrote `reports/` would make every
/// later run of the same binary miss the cache.
fn work_tree_clean() -> Option<bool> {
    let out = std::process::Command::new("git")
        .args([
            "status",
            "--porcelain",
            "--untracked-files=no",
            "--",
            ":(top)",
            ":(top,exclude)reports",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    Some(out.stdout.is_empty())
}

/// 64-bit FNV-1a: a stable hash (the standard library's may change between releases).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

impl Entry {
    pub(super) fn failed(
        need: &Need,
        rank: usize,
        status: Status,
        why: String,
        isa: String,
        stamp: Stamp,
    ) -> Self {
        Entry {
            version: CACHE_VERSION,
            variant: need.variant,
            threads: need.threads,
            rank,
            status,
            reason: Some(why),
            build_s: None,
            storage_bytes: None,
            modes: Vec::new(),
            max_rel_err: None,
            timed: true,
            isa,
            isa_key: need.isa.name().to_string(),
            stamp,
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

    /// Whether this entry answers `need` in a run with `ctx`'s settings (the path holds them
    /// too; checked again so a moved file cannot pass for another measurement).
    fn satisfies(&self, need: &Need, ctx: &Ctx) -> bool {
        self.version == CACHE_VERSION
            && self.variant == need.variant
            && self.threads == need.threads
            && self.rank == ctx.opts.rank
            && (self.timed || !need.timed)
            && self.isa_key == need.isa.name()
            && self.isa == need.isa_run(ctx)
            && self.stamp.code == code_key()
            && self.stamp.pin == ctx.pin.name()
            && self.stamp.reps_min == ctx.opts.reps
            && self.stamp.min_seconds == ctx.opts.min_seconds
    }
}

impl Engine<'_> {
    pub(super) fn tensor_dir(&self, spec: &TensorSpec) -> PathBuf {
        self.ctx.cache_dir().join(&spec.key)
    }

    pub(super) fn entry_path(&self, spec: &TensorSpec, need: &Need) -> PathBuf {
        self.tensor_dir(spec).join(format!(
            "{}-t{}-{}.json",
            need.variant.name(),
            need.threads,
            need.isa.name()
        ))
    }

    /// Cached entries that satisfy `needs`, and the needs still to measure.
    pub(super) fn cached(
        &self,
        spec: &TensorSpec,
        needs: &[Need],
    ) -> (BTreeMap<EntryKey, Entry>, Vec<Need>) {
        let mut have = BTreeMap::new();
        let mut todo = Vec::new();
        for n in needs {
            let e: Option<Entry> = if self.ctx.opts.fresh {
                None
            } else {
                read_json(&self.entry_path(spec, n))
            };
            match e {
                Some(e) if e.satisfies(n, self.ctx) => {
                    have.insert(n.key(), e);
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

    #[test]
    fn fnv1a_matches_its_reference_values() {
        // Published FNV-1a 64 test vectors.
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert!(code_key().starts_with(alto::harness::record::GIT_COMMIT));
    }
}
