//! The measurement record written beside every figure (`record.json`): the machine, the run's
//! parameters, the code version and every number the figure was drawn from.
//!
//! This is a stand-in for the library's `alto::record`, which another change adds; the fields
//! are the ones it will carry (CPU model, threads, rank, tensor, repetitions, min / median /
//! max, git commit, date), so swapping it in changes only this module.

use crate::config::Ctx;
use crate::measure::{Entry, TensorData};
use serde::Serialize;
use std::path::Path;

/// One measurement (a format variant on a tensor at a thread count); times in seconds, rounded
/// to 5 significant digits. Per-mode arrays are indexed by mode.
#[derive(Clone, Debug, Serialize)]
pub struct RecordRow {
    pub tensor: String,
    pub variant: String,
    pub threads: usize,
    pub status: String,
    pub build_s: Option<f64>,
    pub storage_bytes: Option<u64>,
    pub reps: Vec<usize>,
    pub min_s: Vec<f64>,
    pub median_s: Vec<f64>,
    pub max_s: Vec<f64>,
    /// What ran on each mode (kernel and strategy names).
    pub ran: Vec<String>,
    /// All modes: the sums of the per-mode min, median and max.
    pub all_modes_min_s: Option<f64>,
    pub all_modes_median_s: Option<f64>,
    pub all_modes_max_s: Option<f64>,
}

fn sig5(x: f64) -> f64 {
    format!("{x:.4e}").parse().unwrap_or(x)
}

#[derive(Clone, Debug, Serialize)]
pub struct Record {
    pub figure: String,
    pub host: String,
    pub cpu_model: String,
    pub hardware_threads: usize,
    pub threads: Vec<usize>,
    pub rank: usize,
    pub reps_min: usize,
    pub min_seconds: f64,
    pub statistic: &'static str,
    pub scale: f64,
    pub seed: u64,
    pub alto_isa: String,
    pub baseline_isa: String,
    pub git_commit: String,
    pub date_utc: String,
    pub source: &'static str,
    pub measurements: Vec<RecordRow>,
}

impl Record {
    pub fn new(ctx: &Ctx, figure: &str) -> Self {
        Record {
            figure: figure.to_string(),
            host: ctx.host.clone(),
            cpu_model: cpu_model(),
            hardware_threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            threads: ctx.threads.clone(),
            rank: ctx.opts.rank,
            reps_min: ctx.opts.reps,
            min_seconds: ctx.opts.min_seconds,
            statistic: "median of the timed repetitions after one warm-up call",
            scale: ctx.opts.scale,
            seed: ctx.opts.seed,
            alto_isa: alto::dispatch::default_isa()
                .map(|i| i.name().to_string())
                .unwrap_or_else(|e| e.to_string()),
            baseline_isa: crate::measure::experiment_baseline_isa()
                .map(|i| i.name().to_string())
                .unwrap_or_else(|e| e.to_string()),
            git_commit: git_commit(),
            date_utc: now_utc(),
            source: "alto-experiments (stand-in for alto::record)",
            measurements: Vec::new(),
        }
    }

    /// Adds an entry.
    pub fn add(&mut self, tensor: &TensorData, e: &Entry) {
        let col = |f: fn(&crate::measure::ModeTime) -> f64| -> Vec<f64> {
            e.modes.iter().map(|m| sig5(f(m))).collect()
        };
        let sum = |f: fn(&crate::measure::ModeTime) -> f64| -> Option<f64> {
            (!e.modes.is_empty()).then(|| sig5(e.modes.iter().map(f).sum()))
        };
        self.measurements.push(RecordRow {
            tensor: tensor.info.name.clone(),
            variant: e.variant.name().to_string(),
            threads: e.threads,
            status: format!("{:?}", e.status).to_lowercase(),
            build_s: e.build_s.map(sig5),
            storage_bytes: e.storage_bytes,
            reps: e.modes.iter().map(|m| m.reps).collect(),
            min_s: col(|m| m.min_s),
            median_s: col(|m| m.median_s),
            max_s: col(|m| m.max_s),
            ran: e.modes.iter().map(|m| m.ran.clone()).collect(),
            all_modes_min_s: sum(|m| m.min_s),
            all_modes_median_s: sum(|m| m.median_s),
            all_modes_max_s: sum(|m| m.max_s),
        });
    }

    /// Writes compact JSON (records are committed with small-scale reports).
    pub fn write(&self, path: &Path) -> anyhow::Result<()> {
        let text = serde_json::to_string(self)?;
        std::fs::write(path, text + "\n")
            .map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))
    }
}

/// `model name` from `/proc/cpuinfo`.
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

/// `git rev-parse HEAD` of the repository, with `-dirty` when tracked files outside `reports/`
/// have changes.
pub fn git_commit() -> String {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let run = |args: &[&str]| {
        std::process::Command::new("git")
            .arg("-C")
            .arg(&root)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    match run(&["rev-parse", "HEAD"]) {
        Some(h) => {
            // Generated reports do not make the code dirty.
            let dirty = run(&[
                "status",
                "--porcelain",
                "--untracked-files=no",
                "--",
                ".",
                ":!reports",
            ])
            .is_some_and(|s| !s.is_empty());
            if dirty {
                format!("{h}-dirty")
            } else {
                h
            }
        }
        None => "unknown".into(),
    }
}

/// The current time as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn now_utc() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    utc_string(secs)
}

/// Formats Unix seconds as UTC (days to civil date after Howard Hinnant's algorithm).
pub fn utc_string(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding() {
        assert_eq!(sig5(0.000123456789), 0.00012346);
        assert_eq!(sig5(12345.678), 12346.0);
    }

    #[test]
    fn dates() {
        assert_eq!(utc_string(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc_string(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc_string(1_700_000_000), "2023-11-14T22:13:20Z");
    }
}
