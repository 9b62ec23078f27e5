//! The analytic traffic model of MTTKRP (SPEC section 11): what a roofline uses when the
//! hardware counters for flops and DRAM bytes are unavailable. Every number here is a model,
//! and reports label it so.
//!
//! Per nonzero, order N, rank R, index width w bytes, 8-byte values:
//! - flops = N * R ((N-1) * R multiplies building the row, R adds into the output);
//! - bytes, best case (factor rows stay in cache): w + 8 (the index and the value);
//! - bytes, worst case (no reuse): best + 8R(N-1) (input rows) + 16R (read and write the
//!   output row).
//!
//! Per call, the best case adds the compulsory traffic (each input factor read once, the
//! output written once) and pull-based staging adds about 2 x 8R bytes per staged row (written
//! into the staging buffer, read back by the pull).

use crate::format::AnyAlto;
use crate::mttkrp::exclusive_intervals;
use serde::Serialize;

/// Modelled flops and bytes (of one nonzero, one call, or several calls).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Traffic {
    pub flops: f64,
    pub bytes_best: f64,
    pub bytes_worst: f64,
}

impl Traffic {
    /// Operational intensity (flop/byte) when factor rows stay in cache.
    pub fn intensity_best(&self) -> f64 {
        self.flops / self.bytes_best
    }
    /// Operational intensity (flop/byte) with no reuse at all.
    pub fn intensity_worst(&self) -> f64 {
        self.flops / self.bytes_worst
    }
    /// The traffic of `k` repetitions.
    pub fn times(&self, k: f64) -> Traffic {
        Traffic {
            flops: self.flops * k,
            bytes_best: self.bytes_best * k,
            bytes_worst: self.bytes_worst * k,
        }
    }
}

/// Per-nonzero MTTKRP traffic for `order` modes, `rank` and an index of `index_bytes` bytes.
/// SPEC's example: order 3, rank 16, 8-byte index gives 3.0 (best) and 0.091 (worst) flop/byte.
pub fn mttkrp_nnz_traffic(order: usize, rank: usize, index_bytes: usize) -> Traffic {
    let (n, r, w) = (order as f64, rank as f64, index_bytes as f64);
    let best = w + 8.0;
    Traffic {
        flops: n * r,
        bytes_best: best,
        bytes_worst: best + 8.0 * r * (n - 1.0) + 16.0 * r,
    }
}

/// What one MTTKRP call touches, for [`mttkrp_call_traffic`].
#[derive(Clone, Copy, Debug)]
pub struct CallShape<'a> {
    pub dims: &'a [u64],
    pub mode: usize,
    pub nnz: u64,
    pub rank: usize,
    pub index_bytes: usize,
    /// Rows accumulated in pull-based staging buffers during the call (0 for atomics).
    pub staged_rows: u64,
}

impl<'a> CallShape<'a> {
    /// The shape of an MTTKRP of `mode` on `t`; `pull`: the call uses pull-based staging.
    pub fn of(t: &'a AnyAlto, mode: usize, rank: usize, pull: bool) -> CallShape<'a> {
        CallShape {
            dims: t.dims(),
            mode,
            nnz: t.nnz() as u64,
            rank,
            index_bytes: t.width().bytes(),
            staged_rows: if pull { pull_staged_rows(t, mode) } else { 0 },
        }
    }
}

/// Rows the pull-based strategy stages for `mode`: the interval rows of every segment whose
/// interval another segment shares (exclusive segments write the output directly).
pub fn pull_staged_rows(t: &AnyAlto, mode: usize) -> u64 {
    let intervals: Vec<Option<(u64, u64)>> = (0..t.num_partitions())
        .map(|p| t.interval(p, mode))
        .collect();
    intervals
        .iter()
        .zip(exclusive_intervals(&intervals))
        .filter(|(_, exclusive)| !exclusive)
        .filter_map(|(iv, _)| iv.map(|(lo, hi)| hi - lo + 1))
        .sum()
}

/// Traffic of one MTTKRP call: `nnz` times the per-nonzero model, plus in the best case the
/// compulsory traffic (8R bytes per row of every input factor, 8R per output row), plus
/// 2 x 8R bytes per staged row in both cases.
pub fn mttkrp_call_traffic(c: &CallShape<'_>) -> Traffic {
    let per = mttkrp_nnz_traffic(c.dims.len(), c.rank, c.index_bytes);
    let row = 8.0 * c.rank as f64;
    let input_rows: u64 = c
        .dims
        .iter()
        .enumerate()
        .filter(|&(m, _)| m != c.mode)
        .map(|(_, &d)| d)
        .sum();
    let compulsory = row * (input_rows + c.dims[c.mode]) as f64;
    let staging = 2.0 * row * c.staged_rows as f64;
    let nnz = c.nnz as f64;
    Traffic {
        flops: per.flops * nnz,
        bytes_best: per.bytes_best * nnz + compulsory + staging,
        bytes_worst: per.bytes_worst * nnz + staging,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_example_order3_rank16_u64() {
        let t = mttkrp_nnz_traffic(3, 16, 8);
        assert_eq!(t.flops, 48.0);
        assert_eq!(t.bytes_best, 16.0);
        assert_eq!(t.bytes_worst, 16.0 + 256.0 + 256.0);
        assert_eq!(t.intensity_best(), 3.0);
        assert!(
            (t.intensity_worst() - 0.091).abs() < 5e-4,
            "{}",
            t.intensity_worst()
        );
    }

    #[test]
    fn staged_rows_follow_shared_intervals() {
        use crate::{BuildOptions, CooTensor};
        // Mode 0 has 2 rows, each shared by both segments; mode 1's rows are all distinct.
        let coo = CooTensor::new(
            vec![2, 4],
            vec![vec![0, 1, 0, 1], vec![0, 1, 2, 3]],
            vec![1.0; 4],
        )
        .unwrap();
        let one = AnyAlto::build(&coo, &BuildOptions::default()).unwrap().0;
        assert_eq!(pull_staged_rows(&one, 0), 0, "one segment is exclusive");
        let opts = BuildOptions {
            partitions: 2,
            ..Default::default()
        };
        let two = AnyAlto::build(&coo, &opts).unwrap().0;
        let want: u64 = (0..2)
            .filter_map(|p| two.interval(p, 0))
            .map(|(lo, hi)| hi - lo + 1)
            .sum();
        let shared = two.interval(0, 0).unwrap().1 >= two.interval(1, 0).unwrap().0;
        assert_eq!(pull_staged_rows(&two, 0), if shared { want } else { 0 });
        let shape = CallShape::of(&two, 0, 8, true);
        assert_eq!((shape.nnz, shape.index_bytes), (4, 4));
        assert_eq!(shape.staged_rows, pull_staged_rows(&two, 0));
        assert_eq!(CallShape::of(&two, 0, 8, false).staged_rows, 0);
    }

    #[test]
    fn call_adds_compulsory_and_staging() {
        let dims = [10u64, 20, 30];
        let c = CallShape {
            dims: &dims,
            mode: 1,
            nnz: 100,
            rank: 4,
            index_bytes: 4,
            staged_rows: 5,
        };
        let t = mttkrp_call_traffic(&c);
        assert_eq!(t.flops, 100.0 * 12.0);
        // best: 100 * 12 + 32 * (10 + 30 + 20) + 2 * 32 * 5
        assert_eq!(t.bytes_best, 1200.0 + 1920.0 + 320.0);
        // worst: 100 * (12 + 64 + 64) + 320
        assert_eq!(t.bytes_worst, 14000.0 + 320.0);
        assert_eq!(t.times(2.0).flops, 2400.0);
    }
}
