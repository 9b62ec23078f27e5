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

pub const POINT_COLUMNS: &str = "case,tensor,dims,nnz,mode,rank,kernel,accumulation,index_bits,index_width,threads,median_s,gflops,oi,oi_worst,oi_source,bound_gflops,percent_of_bound";
pub const CEILING_COLUMNS: &str = "kind,name,value,unit,basis";

pub fn points_csv(points: &[CaseResult]) -> String {
    let mut s = String::from(POINT_COLUMNS);
    s.push('\n');
    for p in points {
        let dims: Vec<String> = p.dims.iter().map(|d| d.to_string()).collect();
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            quote(&p.case),
            quote(&p.tensor),
            dims.join("x"),
            p.nnz,
            p.mode,
            p.rank,
            p.kernel,
            p.accumulation,
            p.index_bits,
            p.index_width,
            p.threads,
            p.median_s,
            p.gflops,
            p.oi,
            p.oi_worst,
            p.oi_source,
            p.bound_gflops,
            p.percent_of_bound
        );
    }
    s
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
