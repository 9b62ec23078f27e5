//! The rows the suite records: [`PerfRow`] (one timed MTTKRP) and [`BuildRow`] (one
//! construction), the CSV columns of `perf.csv` and `build.csv`, and the printed line of a row.

use serde::{Deserialize, Serialize};

/// One timed MTTKRP: a (shape, threads, rank, mode, kernel) of the suite. Times in ms.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PerfRow {
    pub shape: String,
    /// `AxBxC`.
    pub dims: String,
    /// Nonzeros after duplicates merged.
    pub nnz: u64,
    pub index_width: String,
    pub threads: usize,
    pub rank: usize,
    pub mode: usize,
    /// The kernel asked for: `auto` or an ISA.
    pub isa: String,
    /// What ran (`MttkrpRun.name`, e.g. `pull_avx2_r16`).
    pub kernel: String,
    /// `ok`, or why there is no time (`FAILED: ...`, `skipped: ...`).
    pub status: String,
    pub reps: usize,
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    pub gflops: f64,
    /// Core cycles per nonzero (summed over the workers).
    pub cycles_per_nnz: f64,
    /// `measured` (perf cycles) or `estimated` (time x nominal clock x threads).
    pub cycles_source: String,
    /// The traffic model's bytes per nonzero: best case (factor rows cached) and worst.
    pub model_bytes_per_nnz: f64,
    pub model_bytes_per_nnz_worst: f64,
    /// Roofline lower bound on the time (best-case bytes) and the median's distance to it.
    pub roofline_bound_ms: f64,
    pub roofline_pct: f64,
    /// `compute` or `memory`.
    pub roofline_roof: String,
    /// Phase breakdown (medians over the profiled calls), ms.
    pub zero_output_ms: f64,
    pub zero_staging_ms: f64,
    pub kernel_ms: f64,
    pub pull_ms: f64,
    pub fork_join_ms: f64,
    pub other_ms: f64,
}

/// Construction of one shape at one thread count: medians over the reps, ms.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BuildRow {
    pub shape: String,
    pub dims: String,
    /// Nonzeros generated, and after duplicates merged.
    pub nnz_generated: u64,
    pub nnz: u64,
    pub threads: usize,
    pub reps: usize,
    pub encode_ms: f64,
    pub sort_ms: f64,
    pub merge_ms: f64,
    pub partition_ms: f64,
    pub flags_ms: f64,
    pub total_ms: f64,
    pub total_min_ms: f64,
    pub total_max_ms: f64,
}

impl PerfRow {
    /// A row of `shape` with no measurement yet (rank, mode and kernel unset, numbers NaN).
    pub fn blank(
        shape: &str,
        dims: &[u64],
        nnz: usize,
        index_width: &str,
        threads: usize,
    ) -> PerfRow {
        PerfRow {
            shape: shape.to_string(),
            dims: dims_str(dims),
            nnz: nnz as u64,
            index_width: index_width.to_string(),
            threads,
            rank: 0,
            mode: 0,
            isa: String::new(),
            kernel: String::new(),
            status: "ok".into(),
            reps: 0,
            median_ms: f64::NAN,
            min_ms: f64::NAN,
            max_ms: f64::NAN,
            gflops: f64::NAN,
            cycles_per_nnz: f64::NAN,
            cycles_source: String::new(),
            model_bytes_per_nnz: f64::NAN,
            model_bytes_per_nnz_worst: f64::NAN,
            roofline_bound_ms: f64::NAN,
            roofline_pct: f64::NAN,
            roofline_roof: String::new(),
            zero_output_ms: f64::NAN,
            zero_staging_ms: f64::NAN,
            kernel_ms: f64::NAN,
            pull_ms: f64::NAN,
            fork_join_ms: f64::NAN,
            other_ms: f64::NAN,
        }
    }
}

/// The printed line of a row.
pub fn row_line(r: &PerfRow) -> String {
    let cyc_mark = if r.cycles_source == "measured" {
        ""
    } else {
        "~"
    };
    format!(
        "{:<12} t={:<2} r={:<3} m={} {:<6} {:<22} {:>9.3} ms [{:.3}-{:.3}] {cyc_mark}{:>6.1} cyc/nnz \
         {:>5.1} B/nnz {:>5.1}% roof ({}) | zero {:.3} stage {:.3} kern {:.3} pull {:.3} fj {:.3} other {:.3}",
        r.shape,
        r.threads,
        r.rank,
        r.mode,
        r.isa,
        r.kernel,
        r.median_ms,
        r.min_ms,
        r.max_ms,
        r.cycles_per_nnz,
        r.model_bytes_per_nnz,
        r.roofline_pct,
        r.roofline_roof,
        r.zero_output_ms,
        r.zero_staging_ms,
        r.kernel_ms,
        r.pull_ms,
        r.fork_join_ms,
        r.other_ms
    )
}

pub fn dims_str(d: &[u64]) -> String {
    d.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join("x")
}
