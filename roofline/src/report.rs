//! CSV files beside every PNG: one row per point, one row per ceiling.

use crate::cases::CaseResult;
use crate::profile::MachineProfile;
use std::fmt::Write as _;
use std::path::Path;

fn quote(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

pub const POINT_COLUMNS: &str = "case,tensor,dims,nnz,mode,rank,isa,kernel,accumulation,index_bits,index_width,threads,median_s,measured_gflops,oi,oi_worst,oi_source,oi_l3,model_bound_gflops,percent_of_bound,oi_note";
pub const CEILING_COLUMNS: &str = "kind,name,value,unit,basis";

/// One row of the points CSV: measured values and model values in columns named for what they
/// are (a modelled case leaves `measured_gflops` and `percent_of_bound` empty).
#[derive(serde::Serialize)]
struct PointRow<'a> {
    case: &'a str,
    tensor: &'a str,
    dims: String,
    nnz: u64,
    mode: usize,
    rank: usize,
    isa: &'a str,
    kernel: &'a str,
    accumulation: &'a str,
    index_bits: u32,
    index_width: &'a str,
    threads: usize,
    median_s: Option<f64>,
    measured_gflops: Option<f64>,
    oi: f64,
    oi_worst: f64,
    oi_source: &'a str,
    oi_l3: Option<f64>,
    model_bound_gflops: f64,
    percent_of_bound: Option<f64>,
    oi_note: &'a str,
}

pub fn points_csv(points: &[CaseResult]) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    for p in points {
        let dims: Vec<String> = p.dims.iter().map(|d| d.to_string()).collect();
        // Writing into memory cannot fail on I/O; a serialization error would be a bug here.
        let _ = w.serialize(PointRow {
            case: &p.case,
            tensor: &p.tensor,
            dims: dims.join("x"),
            nnz: p.nnz,
            mode: p.mode,
            rank: p.rank,
            isa: &p.isa,
            kernel: &p.kernel,
            accumulation: &p.accumulation,
            index_bits: p.index_bits,
            index_width: &p.index_width,
            threads: p.threads,
            median_s: p.median_s.is_finite().then_some(p.median_s),
            measured_gflops: p.measured_gflops,
            oi: p.oi,
            oi_worst: p.oi_worst,
            oi_source: &p.oi_source,
            oi_l3: p.oi_l3,
            model_bound_gflops: p.model_bound_gflops,
            percent_of_bound: p.percent_of_bound,
            oi_note: &p.oi_note,
        });
    }
    let bytes = w.into_inner().unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    if text.is_empty() {
        format!("{POINT_COLUMNS}\n")
    } else {
        text
    }
}

pub fn ceilings_csv(profile: &MachineProfile) -> String {
    let mut s = String::from(CEILING_COLUMNS);
    s.push('\n');
    for p in &profile.peaks {
        let _ = writeln!(
            s,
            "peak,{},{},GFLOP/s,{}",
            quote(&p.name),
            p.gflops,
            quote(&p.basis)
        );
    }
    for b in &profile.bandwidths {
        let _ = writeln!(
            s,
            "bandwidth,{},{},GB/s,{}",
            quote(&b.name),
            b.gbytes_per_s,
            quote(&b.basis)
        );
    }
    s
}

pub fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    std::fs::write(path, text).map_err(|e| anyhow::anyhow!("{}: cannot write: {e}", path.display()))
}
