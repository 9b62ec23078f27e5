//! The SPEC section 11 analytic traffic model of one MTTKRP, applied to a concrete tensor and
//! mode: used when hardware counters are unavailable (and always labelled `model`).

/// The shape facts the model needs.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelInput {
    pub dims: Vec<u64>,
    pub nnz: u64,
    pub mode: usize,
    pub rank: usize,
    /// Index word bytes (4, 8 or 16).
    pub index_bytes: usize,
    /// Pull-based staging (adds a write and a read of each staged row).
    pub pull: bool,
    /// Output rows staged by the pull strategy (0 when it writes directly).
    pub staged_rows: u64,
}

/// Flops and bytes of one MTTKRP under the model.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct ModelTraffic {
    pub flops: f64,
    /// Factor rows stay in cache: the nonzeros stream once, factors and output move once.
    pub bytes_best: f64,
    /// No reuse: every nonzero also reads N-1 factor rows and reads and writes its output row.
    pub bytes_worst: f64,
}

impl ModelTraffic {
    pub fn oi_best(&self) -> f64 {
        self.flops / self.bytes_best
    }
    pub fn oi_worst(&self) -> f64 {
        self.flops / self.bytes_worst
    }
}

/// Per nonzero: flops `N*R`; bytes best `w + 8`, worst adds `8R(N-1) + 16R` (SPEC section 11).
pub fn per_nonzero_oi(order: usize, rank: usize, index_bytes: usize) -> (f64, f64) {
    let flops = (order * rank) as f64;
    let best = (index_bytes + 8) as f64;
    let worst = best + (8 * rank * (order - 1) + 16 * rank) as f64;
    (flops / best, flops / worst)
}

/// The model for one tensor and mode, with compulsory factor and output traffic.
pub fn mttkrp_traffic(m: &ModelInput) -> ModelTraffic {
    let order = m.dims.len();
    let r = m.rank as f64;
    let nnz = m.nnz as f64;
    let flops = (order * m.rank) as f64 * nnz;
    let stream = nnz * (m.index_bytes + 8) as f64;
    let factors: f64 = m
        .dims
        .iter()
        .enumerate()
        .filter(|&(k, _)| k != m.mode)
        .map(|(_, &d)| d as f64)
        .sum();
    let out_rows = m.dims[m.mode] as f64;
    let staging = if m.pull {
        2.0 * 8.0 * r * m.staged_rows as f64
    } else {
        0.0
    };
    let compulsory = 8.0 * r * factors + 8.0 * r * out_rows + staging;
    let worst_extra = nnz * (8.0 * r * (order - 1) as f64 + 16.0 * r);
    ModelTraffic {
        flops,
        bytes_best: stream + compulsory,
        bytes_worst: stream + compulsory + worst_extra,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_example() {
        // N = 3, R = 16, 64-bit index: 3.0 best / 0.091 worst flop/byte.
        let (best, worst) = per_nonzero_oi(3, 16, 8);
        assert!((best - 3.0).abs() < 1e-12);
        assert!((worst - 0.0909).abs() < 1e-3, "{worst}");
    }

    #[test]
    fn compulsory_traffic_lowers_the_best_case() {
        let m = ModelInput {
            dims: vec![100, 100, 100],
            nnz: 1_000_000,
            mode: 0,
            rank: 16,
            index_bytes: 8,
            pull: false,
            staged_rows: 0,
        };
        let t = mttkrp_traffic(&m);
        assert!(t.oi_best() < 3.0 && t.oi_best() > 2.9);
        assert!(t.oi_worst() < 0.0910);
        let staged = mttkrp_traffic(&ModelInput {
            pull: true,
            staged_rows: 100,
            ..m
        });
        assert!(staged.bytes_best > t.bytes_best);
    }
}
