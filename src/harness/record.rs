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

    /// Column names of the CSV form ([`append_csv`](Self::append_csv)), in order.
    pub const CSV_HEADER: &'static str = "program,alto_version,git_commit,date,cpu_model,\
        cpu_flags,isa,kernel,threads,pin,pin_backend,rank,tensor,shape,nnz,mode,repetitions,\
        min_s,median_s,max_s,git_dirty";

    /// The flat CSV form: flags space-separated, shape as `AxBxC`, an absent mode empty, times
    /// in scientific notation.
    fn csv_row(&self) -> CsvRow<'_> {
        let shape: Vec<String> = self.shape.iter().map(|d| d.to_string()).collect();
        CsvRow {
            program: &self.program,
            alto_version: &self.alto_version,
            git_commit: &self.git_commit,
            date: &self.date,
            cpu_model: &self.cpu_model,
            cpu_flags: self.cpu_flags.join(" "),
            isa: &self.isa,
            kernel: &self.kernel,
            threads: self.threads,
            pin: &self.pin,
            pin_backend: &self.pin_backend,
            rank: self.rank,
            tensor: &self.tensor,
            shape: shape.join("x"),
            nnz: self.nnz,
            mode: self.mode,
            repetitions: self.repetitions,
            min_s: format!("{:e}", self.min_s),
            median_s: format!("{:e}", self.median_s),
            max_s: format!("{:e}", self.max_s),
            git_dirty: &self.git_dirty,
        }
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
        let f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(io)?;
        let empty = f.metadata().map_err(io)?.len() == 0;
        if empty && records.is_empty() {
            // A new file with no rows still names its columns (serde writes them only with a
            // first row).
            let mut f = f;
            return writeln!(f, "{}", Self::CSV_HEADER).map_err(io);
        }
        let mut w = csv::WriterBuilder::new().has_headers(empty).from_writer(f);
        for r in records {
            w.serialize(r.csv_row()).map_err(|e| csv_error(path, e))?;
        }
        w.flush().map_err(io)
    }
}

/// One CSV row of a [`MeasurementRecord`]: the field order is the column order.
#[derive(Serialize)]
struct CsvRow<'a> {
    program: &'a str,
    alto_version: &'a str,
    git_commit: &'a str,
    date: &'a str,
    cpu_model: &'a str,
    cpu_flags: String,
    isa: &'a str,
    kernel: &'a str,
    threads: usize,
    pin: &'a str,
    pin_backend: &'a str,
    rank: usize,
    tensor: &'a str,
    shape: String,
    nnz: u64,
    mode: Option<usize>,
    repetitions: usize,
    min_s: String,
    median_s: String,
    max_s: String,
    git_dirty: &'a str,
}

fn csv_error(path: &Path, e: csv::Error) -> AltoError {
    match e.into_kind() {
        csv::ErrorKind::Io(e) => AltoError::io(path, e),
        other => AltoError::InvalidArgument(format!("{}: writing CSV: {other:?}", path.display())),
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

/// `2026-12-02T17:29:23Z`: RFC 3339, UTC, seconds precision (times before 1970 print as the
/// epoch).
pub fn rfc3339_utc(t: SystemTime) -> String {
    let ts = jiff::Timestamp::try_from(t.max(UNIX_EPOCH)).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    jiff::Timestamp::from_second(ts.as_second())
        .unwrap_or(jiff::Timestamp::UNIX_EPOCH)
        .to_string()
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
    fn csv_rows_quote_what_needs_it_under_the_header() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("runs.csv");
        let mut r = MeasurementRecord::new("alto mttkrp");
        r.tensor = "a,b \"c\"".into();
        r.shape = vec![3, 4];
        r.set_samples(&[0.5, 0.25]);
        MeasurementRecord::append_csv(&p, std::slice::from_ref(&r)).unwrap();
        MeasurementRecord::append_csv(&p, &[r]).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert_eq!(lines[0], MeasurementRecord::CSV_HEADER);
        assert!(lines[1].contains(",\"a,b \"\"c\"\"\",3x4,"), "{}", lines[1]);
        assert!(lines[1].contains(",2,2.5e-1,5e-1,5e-1,"), "{}", lines[1]);
        assert_eq!(lines[1], lines[2]);
        // No rows: a new file gets the header alone, an existing one is left as it is.
        let q = dir.path().join("none.csv");
        MeasurementRecord::append_csv(&q, &[]).unwrap();
        MeasurementRecord::append_csv(&q, &[]).unwrap();
        let text = std::fs::read_to_string(&q).unwrap();
        assert_eq!(text, format!("{}\n", MeasurementRecord::CSV_HEADER));
        MeasurementRecord::append_csv(&p, &[]).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap().lines().count(), 3);
    }
}
