//! The measurement record: one struct, written as JSON or CSV beside every result (timings,
//! tables, plots), saying what was measured, on what, and how.
//!
//! ```no_run
//! use alto::harness::record::MeasurementRecord;
//! let mut r = MeasurementRecord::new("alto mttkrp");
//! r.tensor = "nell-2".into();
//! r.set_samples(&[0.012, 0.011, 0.013]);
//! r.write_beside(std::path::Path::new("reports/fig9.png")).unwrap(); // reports/fig9.meta.json
//! ```

use crate::error::{AltoError, Result};
use crate::harness::topology::CpuModel;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// The git commit this binary was built from (`unknown` outside a git checkout).
pub const GIT_COMMIT: &str = env!("ALTO_GIT_COMMIT");

/// Whether tracked files differed from [`GIT_COMMIT`] when this binary was built: `true`,
/// `false`, or `unknown` outside a git checkout (untracked files do not count).
pub const GIT_DIRTY: &str = env!("ALTO_GIT_DIRTY");

/// CPU flags kernel selection looks at; a record lists those the CPU has.
pub const KERNEL_FLAGS: [&str; 11] = [
    "avx",
    "avx2",
    "fma",
    "bmi1",
    "bmi2",
    "avx512f",
    "avx512dq",
    "avx512cd",
    "avx512bw",
    "avx512vl",
    "avx512ifma",
];

/// What was measured, on what machine and how.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MeasurementRecord {
    /// The binary and subcommand, e.g. `alto mttkrp`.
    pub program: String,
    pub alto_version: String,
    pub git_commit: String,
    /// RFC 3339, UTC.
    pub date: String,
    pub cpu_model: String,
    /// The [`KERNEL_FLAGS`] this CPU has.
    pub cpu_flags: Vec<String>,
    /// The ISA and kernel that ran (e.g. `avx512`, `pull_avx512_r16`).
    pub isa: String,
    pub kernel: String,
    pub threads: usize,
    /// Pinning policy and the backend that applied it.
    pub pin: String,
    pub pin_backend: String,
    pub rank: usize,
    /// Tensor name (file stem or generator) and dims.
    pub tensor: String,
    pub shape: Vec<u64>,
    pub nnz: u64,
    /// The mode measured, if one.
    pub mode: Option<usize>,
    pub repetitions: usize,
    pub min_s: f64,
    pub median_s: f64,
    pub max_s: f64,
    /// [`GIT_DIRTY`] of the build; the last CSV column, so CSVs written before it still read
    /// (and empty in JSON records written before it).
    #[serde(default)]
    pub git_dirty: String,
}

impl MeasurementRecord {
    /// A record stamped with this machine, build and time; the measurement fields are empty.
    pub fn new(program: &str) -> MeasurementRecord {
        let cpu = CpuModel::detect();
        MeasurementRecord {
            program: program.to_string(),
            alto_version: env!("CARGO_PKG_VERSION").to_string(),
            git_commit: GIT_COMMIT.to_string(),
            date: rfc3339_utc(SystemTime::now()),
            cpu_model: cpu.name.clone(),
            cpu_flags: KERNEL_FLAGS
                .iter()
                .filter(|f| cpu.has_flag(f))
                .map(|f| f.to_string())
                .collect(),
            isa: String::new(),
            kernel: String::new(),
            threads: 0,
            pin: "none".into(),
            pin_backend: "none".into(),
            rank: 0,
            tensor: String::new(),
            shape: Vec::new(),
            nnz: 0,
            mode: None,
            repetitions: 0,
            min_s: 0.0,
            median_s: 0.0,
            max_s: 0.0,
            git_dirty: GIT_DIRTY.to_string(),
        }
    }

    /// Sets repetitions, min, median and max from the timed samples (seconds). The median of an
    /// even count is the upper middle sample (a time that was measured).
    pub fn set_samples(&mut self, samples: &[f64]) {
        let (min, median, max) = min_median_max(samples);
        self.repetitions = samples.len();
        self.min_s = min;
        self.median_s = median;
        self.max_s = max;
    }

    /// Column names of [`csv_row`](Self::csv_row).
    pub const CSV_HEADER: &'static str = "program,alto_version,git_commit,date,cpu_model,\
        cpu_flags,isa,kernel,threads,pin,pin_backend,rank,tensor,shape,nnz,mode,repetitions,\
        min_s,median_s,max_s,git_dirty";

    /// One CSV line (no newline): flags space-separated, shape as `AxBxC`, an absent mode empty.
    pub fn csv_row(&self) -> String {
        let shape: Vec<String> = self.shape.iter().map(|d| d.to_string()).collect();
        [
            csv_field(&self.program),
            csv_field(&self.alto_version),
            csv_field(&self.git_commit),
            csv_field(&self.date),
            csv_field(&self.cpu_model),
            csv_field(&self.cpu_flags.join(" ")),
            csv_field(&self.isa),
            csv_field(&self.kernel),
            self.threads.to_string(),
            csv_field(&self.pin),
            csv_field(&self.pin_backend),
            self.rank.to_string(),
            csv_field(&self.tensor),
            shape.join("x"),
            self.nnz.to_string(),
            self.mode.map_or(String::new(), |m| m.to_string()),
            self.repetitions.to_string(),
            format!("{:e}", self.min_s),
            format!("{:e}", self.median_s),
            format!("{:e}", self.max_s),
            csv_field(&self.git_dirty),
        ]
        .join(",")
    }

    /// `result` with its extension replaced by `meta.json` (`fig9.png` -> `fig9.meta.json`).
    pub fn sidecar_path(result: &Path) -> PathBuf {
        result.with_extension("meta.json")
    }

    /// Writes this record as pretty JSON beside `result`; returns the path written.
    pub fn write_beside(&self, result: &Path) -> Result<PathBuf> {
        let path = Self::sidecar_path(result);
        write_json(&path, self)?;
        Ok(path)
    }

    /// Appends records to a CSV file, writing the header first when the file is new or empty.
    pub fn append_csv(path: &Path, records: &[MeasurementRecord]) -> Result<()> {
        let io = |e| AltoError::io(path, e);
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(io)?;
        let empty = f.metadata().map_err(io)?.len() == 0;
        let mut text = String::new();
        if empty {
            text.push_str(Self::CSV_HEADER);
            text.push('\n');
        }
        for r in records {
            text.push_str(&r.csv_row());
            text.push('\n');
        }
        f.write_all(text.as_bytes()).map_err(io)
    }
}

/// Writes any serializable value as pretty JSON (with a final newline).
pub fn write_json<T: Serialize + ?Sized>(path: &Path, value: &T) -> Result<()> {
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| AltoError::InvalidArgument(format!("serializing a record: {e}")))?;
    std::fs::write(path, text + "\n").map_err(|e| AltoError::io(path, e))
}

/// (min, median, max) of samples; the median of an even count is the upper middle one. All 0
/// for no samples.
pub fn min_median_max(samples: &[f64]) -> (f64, f64, f64) {
    if samples.is_empty() {
        return (0.0, 0.0, 0.0);
    }
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    (v[0], v[v.len() / 2], v[v.len() - 1])
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// `2026-12-02T17:29:23Z` (seconds precision; times before 1970 print as the epoch).
pub fn rfc3339_utc(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian (year, month, day) (H. Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn dates_are_rfc3339_utc() {
        assert_eq!(rfc3339_utc(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let t = UNIX_EPOCH + Duration::from_secs(951_782_400); // leap day 2000
        assert_eq!(rfc3339_utc(t), "2000-02-29T00:00:00Z");
        let t = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(rfc3339_utc(t), "2023-11-14T22:13:20Z");
        let t = UNIX_EPOCH + Duration::from_secs(4_107_542_399);
        assert_eq!(rfc3339_utc(t), "2100-02-28T23:59:59Z");
    }

    #[test]
    fn samples_summarize() {
        assert_eq!(min_median_max(&[3.0, 1.0, 2.0]), (1.0, 2.0, 3.0));
        assert_eq!(min_median_max(&[4.0, 1.0, 2.0, 3.0]), (1.0, 3.0, 4.0));
        assert_eq!(min_median_max(&[]), (0.0, 0.0, 0.0));
    }

    #[test]
    fn csv_quotes_what_needs_it() {
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("plain"), "plain");
    }
}
