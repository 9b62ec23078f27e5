//! The measurement record written beside every figure: `record.json` (the machine, the run's
//! parameters, the code version and every number the figure was drawn from) and
//! `measurements.csv` (one [`alto::harness::record::MeasurementRecord`] row per format, tensor, thread
//! count and mode, the same columns every `alto` command writes). Every measurement carries its
//! own stamp (date, commit, dirty flag, ISA, pinning and its backend, `--reps`,
//! `--min-seconds`), taken when it was measured: a cached entry is never restamped with the
//! rendering run's.

use crate::config::Ctx;
use crate::measure::{Entry, Stamp, TensorData};
use alto::harness::record::MeasurementRecord;
use serde::Serialize;
use std::path::Path;

/// One measurement (a format variant on a tensor at a thread count); times in seconds, rounded
/// to 5 significant digits. Per-mode arrays are indexed by mode.
#[derive(Clone, Debug, Serialize)]
pub struct RecordRow {
    pub tensor: String,
    pub shape: Vec<u64>,
    pub nnz: u64,
    pub variant: String,
    pub threads: usize,
    /// The ISA the variant's kernels ran with.
    pub isa: String,
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
    /// When and with what it was measured.
    pub measured: Stamp,
}

fn sig5(x: f64) -> f64 {
    format!("{x:.4e}").parse().unwrap_or(x)
}

#[derive(Clone, Debug, Serialize)]
pub struct Record {
    pub figure: String,
    pub host: String,
    /// `alto-experiments <figure>`.
    pub program: String,
    pub alto_version: String,
    /// The commit of the binary that rendered the figure (each measurement has its own).
    pub git_commit: String,
    /// When the figure was rendered (RFC 3339, UTC); `measured_from_utc` to `measured_to_utc`
    /// span the measurements' own dates.
    pub date_utc: String,
    pub measured_from_utc: Option<String>,
    pub measured_to_utc: Option<String>,
    pub cpu_model: String,
    /// The kernel-relevant CPU flags this machine has ([`alto::harness::record::KERNEL_FLAGS`]).
    pub cpu_flags: Vec<String>,
    pub hardware_threads: usize,
    pub threads: Vec<usize>,
    /// Worker placement (`--pin`) of this run and the backend that applies it here (each
    /// measurement has its own).
    pub pin: String,
    pub pin_backend: String,
    pub rank: usize,
    pub reps_min: usize,
    pub min_seconds: f64,
    pub statistic: &'static str,
    pub scale: f64,
    pub seed: u64,
    pub alto_isa: String,
    pub baseline_isa: String,
    pub measurements: Vec<RecordRow>,
}

impl Record {
    pub fn new(ctx: &Ctx, figure: &str) -> Self {
        let stamp = MeasurementRecord::new(&format!("alto-experiments {figure}"));
        Record {
            figure: figure.to_string(),
            host: ctx.host.clone(),
            program: stamp.program,
            alto_version: stamp.alto_version,
            git_commit: stamp.git_commit,
            date_utc: stamp.date,
            measured_from_utc: None,
            measured_to_utc: None,
            cpu_model: stamp.cpu_model,
            cpu_flags: stamp.cpu_flags,
            hardware_threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            threads: ctx.threads.clone(),
            pin: ctx.pin.name().to_string(),
            pin_backend: ctx.pin_backend(),
            rank: ctx.opts.rank,
            reps_min: ctx.opts.reps,
            min_seconds: ctx.opts.min_seconds,
            statistic: "median of the timed repetitions after one warm-up call",
            scale: ctx.opts.scale,
            seed: ctx.opts.seed,
            alto_isa: ctx.alto_isa.name().to_string(),
            baseline_isa: ctx.baseline_isa.name().to_string(),
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
        let date = &e.stamp.date_utc;
        if self.measured_from_utc.as_ref().is_none_or(|d| date < d) {
            self.measured_from_utc = Some(date.clone());
        }
        if self.measured_to_utc.as_ref().is_none_or(|d| date > d) {
            self.measured_to_utc = Some(date.clone());
        }
        self.measurements.push(RecordRow {
            tensor: tensor.info.name.clone(),
            shape: tensor.info.dims.clone(),
            nnz: tensor.info.nnz,
            variant: e.variant.name().to_string(),
            threads: e.threads,
            isa: e.isa.clone(),
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
            measured: e.stamp.clone(),
        });
    }

    /// One library measurement record per (row, mode) that was timed. The kernel column is
    /// `<format variant>/<what ran>`; the ISA, date, commit and pinning are the measurement's.
    pub fn measurement_records(&self) -> Vec<MeasurementRecord> {
        let mut out = Vec::new();
        for row in &self.measurements {
            for (mode, ran) in row.ran.iter().enumerate() {
                let mut r = MeasurementRecord::new(&self.program);
                r.alto_version.clone_from(&self.alto_version);
                r.git_commit.clone_from(&row.measured.git_commit);
                r.git_dirty.clone_from(&row.measured.git_dirty);
                r.date.clone_from(&row.measured.date_utc);
                r.isa.clone_from(&row.isa);
                r.kernel = format!("{}/{ran}", row.variant);
                r.threads = row.threads;
                r.pin.clone_from(&row.measured.pin);
                r.pin_backend.clone_from(&row.measured.pin_backend);
                r.rank = self.rank;
                r.tensor.clone_from(&row.tensor);
                r.shape.clone_from(&row.shape);
                r.nnz = row.nnz;
                r.mode = Some(mode);
                r.repetitions = row.reps[mode];
                r.min_s = row.min_s[mode];
                r.median_s = row.median_s[mode];
                r.max_s = row.max_s[mode];
                out.push(r);
            }
        }
        out
    }

    /// Writes compact JSON to `path` (records are committed with small-scale reports) and the
    /// per-mode rows as `measurements.csv` beside it.
    pub fn write(&self, path: &Path) -> anyhow::Result<()> {
        let text = serde_json::to_string(self)?;
        std::fs::write(path, text + "\n")
            .map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))?;
        let csv = path.with_file_name("measurements.csv");
        // Rewritten, not appended: the CSV always matches the JSON beside it.
        if csv.exists() {
            std::fs::remove_file(&csv)
                .map_err(|e| anyhow::anyhow!("replacing {}: {e}", csv.display()))?;
        }
        MeasurementRecord::append_csv(&csv, &self.measurement_records())?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding() {
        assert_eq!(sig5(0.000123456789), 0.00012346);
        assert_eq!(sig5(12345.678), 12346.0);
    }
}
