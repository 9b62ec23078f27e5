//! `--points FILE`: measurement records written by `alto mttkrp --record` (CSV rows or a JSON
//! array) or its `--json` report (records with per-mode counters), measured on any machine,
//! placed on a stated profile: GFLOP/s measured (the algorithm's flops over the median time),
//! operational intensity counted where the report carries counters, else modelled.
//!
//! Errors name the file and the line (CSV: the row's line; JSON: where the parser stopped).

use crate::cases::{region_intensity, CaseResult, Measurement};
use crate::counters::CounterDocument;
use crate::profile::MachineProfile;
use alto::format::{IndexWidth, Layout};
use alto::harness::model::{mttkrp_call_traffic, CallShape};
use alto::mttkrp::mttkrp_flops;
use serde::Deserialize;
use std::path::Path;

/// What is wrong with a points file.
#[derive(Debug, thiserror::Error)]
pub enum PointsError {
    #[error("{path}: cannot read: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}:{line}: {reason}")]
    Invalid {
        path: String,
        line: u64,
        reason: String,
    },
    #[error("{path}: {reason}")]
    Empty { path: String, reason: String },
    /// A record that reads but cannot be placed; `at` is its file and line (or record number).
    #[error("{at}: {reason}")]
    Record { at: String, reason: String },
}

/// One record's fields the placement needs, checked.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(try_from = "RawRecord")]
pub struct PointRecord {
    pub program: String,
    pub cpu_model: String,
    pub isa: String,
    pub kernel: String,
    pub threads: usize,
    pub rank: usize,
    pub tensor: String,
    pub shape: Vec<u64>,
    pub nnz: u64,
    /// 0-based.
    pub mode: usize,
    pub repetitions: usize,
    pub min_s: f64,
    pub median_s: f64,
    pub max_s: f64,
}

/// A measurement record as written (JSON field names; the CSV has the same columns, the
/// shape as text `AxBxC`, and more columns, which are ignored).
#[derive(Deserialize)]
struct RawRecord<Shape = Vec<u64>> {
    program: String,
    #[serde(default)]
    cpu_model: String,
    #[serde(default)]
    isa: String,
    kernel: String,
    threads: usize,
    rank: usize,
    tensor: String,
    shape: Shape,
    nnz: u64,
    mode: Option<usize>,
    #[serde(default)]
    repetitions: usize,
    #[serde(default = "nan")]
    min_s: f64,
    median_s: f64,
    #[serde(default = "nan")]
    max_s: f64,
}

impl TryFrom<RawRecord> for PointRecord {
    type Error = String;
    fn try_from(r: RawRecord) -> Result<Self, String> {
        if r.shape.len() < 2 || r.shape.contains(&0) {
            return Err(format!(
                "shape {:?}: needs at least 2 modes, none empty",
                r.shape
            ));
        }
        let mode = r
            .mode
            .ok_or("the record names no mode (one per mode: `alto mttkrp --record`)")?;
        if mode >= r.shape.len() {
            return Err(format!(
                "mode {mode} out of range (order {})",
                r.shape.len()
            ));
        }
        if r.rank == 0 || r.nnz == 0 || r.threads == 0 {
            return Err("rank, nnz and threads must be at least 1".into());
        }
        if !(r.median_s.is_finite() && r.median_s > 0.0) {
            return Err(format!("median_s {} is not a positive time", r.median_s));
        }
        if r.kernel.is_empty() {
            return Err("no kernel named".into());
        }
        Ok(PointRecord {
            program: r.program,
            cpu_model: r.cpu_model,
            isa: r.isa,
            kernel: r.kernel,
            threads: r.threads,
            rank: r.rank,
            tensor: r.tensor,
            shape: r.shape,
            nnz: r.nnz,
            mode,
            repetitions: r.repetitions,
            min_s: r.min_s,
            median_s: r.median_s,
            max_s: r.max_s,
        })
    }
}

fn nan() -> f64 {
    f64::NAN
}

/// A record with where it came from and the counters measured with it, if any.
#[derive(Clone, Debug)]
pub struct LocatedRecord {
    /// `file:line` (CSV) or `file: record k` (JSON).
    pub at: String,
    pub record: PointRecord,
    pub counters: Option<CounterDocument>,
    /// Timed calls the counters covered.
    pub counted_calls: Option<usize>,
}

/// A mode of an `alto mttkrp --json` report: its counters, with `--counters`.
#[derive(Deserialize)]
struct ReportMode {
    mode: usize,
    #[serde(default)]
    counters: Option<ModeCounters>,
}

#[derive(Deserialize)]
struct ModeCounters {
    calls: usize,
    #[serde(flatten)]
    doc: CounterDocument,
}

#[derive(Deserialize)]
struct Report {
    records: Vec<PointRecord>,
    #[serde(default)]
    modes: Vec<ReportMode>,
}

impl RawRecord<String> {
    /// The record with its `AxBxC` shape parsed.
    fn parse_shape(self) -> Result<RawRecord, String> {
        let shape = self
            .shape
            .split('x')
            .map(|d| d.trim().parse::<u64>())
            .collect::<Result<Vec<u64>, _>>()
            .map_err(|_| format!("shape `{}` is not AxBxC", self.shape))?;
        Ok(RawRecord {
            program: self.program,
            cpu_model: self.cpu_model,
            isa: self.isa,
            kernel: self.kernel,
            threads: self.threads,
            rank: self.rank,
            tensor: self.tensor,
            shape,
            nnz: self.nnz,
            mode: self.mode,
            repetitions: self.repetitions,
            min_s: self.min_s,
            median_s: self.median_s,
            max_s: self.max_s,
        })
    }
}

fn invalid(path: &Path, line: u64, reason: impl Into<String>) -> PointsError {
    PointsError::Invalid {
        path: path.display().to_string(),
        line,
        reason: reason.into(),
    }
}

fn read_csv(path: &Path, text: &str) -> Result<Vec<LocatedRecord>, PointsError> {
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let headers = reader
        .headers()
        .map_err(|e| invalid(path, 1, e.to_string()))?
        .clone();
    let mut out = Vec::new();
    for row in reader.records() {
        let row = row.map_err(|e| {
            let line = e.position().map_or(0, |p| p.line());
            invalid(path, line, e.to_string())
        })?;
        let line = row.position().map_or(0, |p| p.line());
        let r: RawRecord<String> = row
            .deserialize(Some(&headers))
            .map_err(|e| invalid(path, line, e.to_string()))?;
        let record = r
            .parse_shape()
            .and_then(PointRecord::try_from)
            .map_err(|e| invalid(path, line, e))?;
        out.push(LocatedRecord {
            at: format!("{}:{line}", path.display()),
            record,
            counters: None,
            counted_calls: None,
        });
    }
    Ok(out)
}

fn json_error(path: &Path, e: serde_json::Error) -> PointsError {
    let text = e.to_string();
    let message = text
        .rfind(" at line ")
        .map_or(text.as_str(), |i| &text[..i]);
    invalid(
        path,
        e.line() as u64,
        format!("column {}: {message}", e.column()),
    )
}

fn read_json(path: &Path, text: &str) -> Result<Vec<LocatedRecord>, PointsError> {
    let shape: serde_json::Value = serde_json::from_str(text).map_err(|e| json_error(path, e))?;
    let located = |k: usize, record: PointRecord| LocatedRecord {
        at: format!("{}: record {}", path.display(), k + 1),
        record,
        counters: None,
        counted_calls: None,
    };
    match shape {
        serde_json::Value::Array(_) => {
            let v: Vec<PointRecord> =
                serde_json::from_str(text).map_err(|e| json_error(path, e))?;
            Ok(v.into_iter()
                .enumerate()
                .map(|(k, r)| located(k, r))
                .collect())
        }
        serde_json::Value::Object(ref o) if o.contains_key("records") => {
            let report: Report = serde_json::from_str(text).map_err(|e| json_error(path, e))?;
            let mut modes = report.modes;
            Ok(report
                .records
                .into_iter()
                .enumerate()
                .map(|(k, record)| {
                    let counters = modes
                        .iter_mut()
                        .find(|m| m.mode == record.mode)
                        .and_then(|m| m.counters.take());
                    LocatedRecord {
                        counted_calls: counters.as_ref().map(|c| c.calls),
                        counters: counters.map(|c| c.doc),
                        ..located(k, record)
                    }
                })
                .collect())
        }
        serde_json::Value::Object(_) => {
            let r: PointRecord = serde_json::from_str(text).map_err(|e| json_error(path, e))?;
            Ok(vec![located(0, r)])
        }
        _ => Err(invalid(
            path,
            1,
            "not a measurement record, a list of them, or an `alto mttkrp --json` report",
        )),
    }
}

/// Reads a points file: `.csv` as the record's CSV, anything else as JSON.
pub fn read_points(path: &Path) -> Result<Vec<LocatedRecord>, PointsError> {
    let text = std::fs::read_to_string(path).map_err(|source| PointsError::Io {
        path: path.display().to_string(),
        source,
    })?;
    let is_csv = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"));
    let records = if is_csv {
        read_csv(path, &text)?
    } else {
        read_json(path, &text)?
    };
    if records.is_empty() {
        return Err(PointsError::Empty {
            path: path.display().to_string(),
            reason: "no records".into(),
        });
    }
    Ok(records)
}

/// Places records on `profile`: measured GFLOP/s, counted or modelled intensity, the profile's
/// DRAM bound. Also returns warnings (a record measured at another thread count than the
/// profile's roofs).
pub fn place_records(
    profile: &MachineProfile,
    records: &[LocatedRecord],
) -> Result<(Vec<CaseResult>, Vec<String>), PointsError> {
    let mut warnings = Vec::new();
    let mut out = Vec::new();
    for l in records {
        let r = &l.record;
        let bits = Layout::new(&r.shape)
            .map(|layout| layout.total_bits())
            .map_err(|e| PointsError::Record {
                at: l.at.clone(),
                reason: e.to_string(),
            })?;
        let width = IndexWidth::for_bits(bits).map_err(|e| PointsError::Record {
            at: l.at.clone(),
            reason: e.to_string(),
        })?;
        let accumulation = r.kernel.split('_').next().unwrap_or("");
        let accumulation = match accumulation {
            "pull" | "atomic" | "flagged" => accumulation,
            _ => "unknown",
        };
        // A record does not say how many rows the run staged: the model's best case without
        // staging (an upper bound of its intensity).
        let traffic = mttkrp_call_traffic(&CallShape {
            dims: &r.shape,
            mode: r.mode,
            nnz: r.nnz,
            rank: r.rank,
            index_bytes: width.bytes(),
            staged_rows: 0,
        });
        let flops = mttkrp_flops(r.shape.len(), r.rank, r.nnz as usize);
        let calls = l.counted_calls.unwrap_or(r.repetitions.max(1)) as f64;
        let mut intensity = region_intensity(
            l.counters.as_ref(),
            flops * calls,
            r.cpu_model.contains("Intel"),
            traffic.intensity_best(),
        );
        if intensity.1 == "model" {
            intensity.3 = format!("{}; model best case without staging", intensity.3);
        }
        let mut case = format!("{} mode {}", r.tensor, r.mode + 1);
        if r.kernel.ends_with("rdyn") {
            case.push_str(" (no rank spec.)");
        }
        if r.threads != profile.threads {
            case.push_str(&format!(", {} threads", r.threads));
            warnings.push(format!(
                "{}: measured with {} threads; the profile's roofs are for {}",
                l.at, r.threads, profile.threads
            ));
        }
        out.push(CaseResult {
            case,
            tensor: r.tensor.clone(),
            dims: r.shape.clone(),
            nnz: r.nnz,
            mode: r.mode,
            rank: r.rank,
            isa: r.isa.clone(),
            kernel: r.kernel.clone(),
            accumulation: accumulation.into(),
            index_bits: bits,
            index_width: width.name().into(),
            threads: r.threads,
            ..CaseResult::measured(
                profile,
                Measurement {
                    min_s: r.min_s,
                    median_s: r.median_s,
                    max_s: r.max_s,
                    flops,
                    intensity,
                    oi_worst: traffic.intensity_worst(),
                },
            )
        });
    }
    Ok((out, warnings))
}
