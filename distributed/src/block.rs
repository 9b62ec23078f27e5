//! One rank's share of the tensor: its segment of the global line, turned into a small ALTO
//! tensor over its *window* (each mode's coordinates shifted by the interval start, so the
//! local tensor's dims are the interval lengths) on which the library's threaded MTTKRP runs.
//! The partial MTTKRP rows it produces are exactly the rows of its interval, and it reads only
//! the factor rows of its intervals.

use crate::codec::KeyCodec;
use crate::error::Result;
use crate::plan::{ExchangePlan, Interval};
use alto::format::BuildOptions;
use alto::mttkrp::{mttkrp, MttkrpOptions, MttkrpRun, Workspace};
use alto::{AnyAlto, CooTensor, Matrix};
use std::ops::Range;

/// A rank's nonzeros as an ALTO tensor over its window.
pub struct LocalBlock {
    /// Per mode, the closed global coordinate interval of the segment.
    pub intervals: Vec<Interval>,
    /// `None` for an empty segment.
    pub tensor: Option<AnyAlto>,
}

impl LocalBlock {
    /// From the segment's keys (global layout, sorted) and values, cut into `partitions`
    /// shared-memory segments for the threads.
    pub fn from_segment(
        codec: &KeyCodec,
        keys: &[u128],
        vals: &[f64],
        partitions: usize,
    ) -> Result<Self> {
        let order = codec.order();
        if keys.is_empty() {
            return Ok(LocalBlock {
                intervals: vec![None; order],
                tensor: None,
            });
        }
        let mut inds: Vec<Vec<u64>> = (0..order)
            .map(|m| keys.iter().map(|&k| codec.coord(k, m)).collect())
            .collect();
        let mut intervals = Vec::with_capacity(order);
        for col in inds.iter_mut() {
            let lo = *col.iter().min().expect("nonempty");
            let hi = *col.iter().max().expect("nonempty");
            col.iter_mut().for_each(|c| *c -= lo);
            intervals.push(Some((lo, hi)));
        }
        let dims = intervals
            .iter()
            .map(|iv| iv.map_or(1, |(lo, hi)| hi - lo + 1))
            .collect();
        let coo = CooTensor::new(dims, inds, vals.to_vec())?;
        let opts = BuildOptions {
            partitions: partitions.max(1),
            ..Default::default()
        };
        let (tensor, _) = AnyAlto::build(&coo, &opts)?;
        Ok(LocalBlock {
            intervals,
            tensor: Some(tensor),
        })
    }

    pub fn nnz(&self) -> usize {
        self.tensor.as_ref().map_or(0, |t| t.nnz())
    }

    /// The half-open global rows of this block's window in `mode`.
    pub fn window(&self, mode: usize) -> Range<u64> {
        match self.intervals[mode] {
            Some((lo, hi)) => lo..hi + 1,
            None => 0..0,
        }
    }

    /// Bytes of the local tensor's index and value arrays.
    pub fn storage_bytes(&self) -> u64 {
        self.tensor.as_ref().map_or(0, |t| t.storage_bytes())
    }

    /// Rows `window(mode)` of a full factor matrix.
    pub fn window_of(&self, full: &Matrix, mode: usize) -> Matrix {
        let w = self.window(mode);
        let r = full.cols();
        let data = full.as_slice()[w.start as usize * r..w.end as usize * r].to_vec();
        Matrix::from_vec((w.end - w.start) as usize, r, data).expect("sized to the window")
    }

    /// The partial MTTKRP of `mode` over this block's nonzeros, from the window factors, into
    /// `out` (`window(mode)` rows x R). `None` for an empty block (`out` is then 0 rows).
    pub fn partial_mttkrp(
        &self,
        windows: &[Matrix],
        mode: usize,
        out: &mut Matrix,
        opts: &MttkrpOptions,
        ws: &mut Workspace,
        pool: &rayon::ThreadPool,
    ) -> Result<Option<MttkrpRun>> {
        match &self.tensor {
            Some(t) => Ok(Some(mttkrp(t, windows, mode, out, opts, ws, pool)?)),
            None => Ok(None),
        }
    }
}

/// Element counts and displacements (in f64s) of the partial rows sent to each rank: the
/// send ranges tile the window in rank order, so the send buffer is the partial output itself.
pub fn reduce_send_layout(plan: &ExchangePlan, rank: usize) -> (Vec<u64>, Vec<u64>) {
    let counts = plan
        .send
        .iter()
        .map(|r| (r.end - r.start) * rank as u64)
        .collect();
    let displs = plan
        .send
        .iter()
        .map(|r| r.start.saturating_sub(plan.window.start) * rank as u64)
        .collect();
    (counts, displs)
}

/// Element counts of the partial rows received from each rank (laid out by source rank).
pub fn reduce_recv_counts(plan: &ExchangePlan, rank: usize) -> Vec<u64> {
    plan.recv
        .iter()
        .map(|r| (r.end - r.start) * rank as u64)
        .collect()
}

/// Sums the received partial rows (concatenated by source rank, as [`reduce_recv_counts`]
/// lays them out) into the owned rows `owned` (`plan.owned` rows x R, overwritten), adding
/// the sources in rank order so every run sums in the same order.
pub fn sum_into_owned(plan: &ExchangePlan, received: &[f64], owned: &mut [f64], rank: usize) {
    owned.fill(0.0);
    let mut at = 0usize;
    for r in &plan.recv {
        let len = (r.end - r.start) as usize * rank;
        if len == 0 {
            continue;
        }
        let dst = (r.start - plan.owned.start) as usize * rank;
        for (o, &x) in owned[dst..dst + len]
            .iter_mut()
            .zip(&received[at..at + len])
        {
            *o += x;
        }
        at += len;
    }
}

/// Packs the owned rows each rank's window needs (the reduce plan reversed): returns the
/// buffer and the per-destination element counts.
pub fn pack_owned_for_windows(
    plan: &ExchangePlan,
    owned: &[f64],
    rank: usize,
) -> (Vec<f64>, Vec<u64>) {
    let mut buf = Vec::new();
    let mut counts = Vec::with_capacity(plan.recv.len());
    for r in &plan.recv {
        let a = (r.start.saturating_sub(plan.owned.start)) as usize * rank;
        let len = (r.end - r.start) as usize * rank;
        buf.extend_from_slice(&owned[a..a + len]);
        counts.push(len as u64);
    }
    (buf, counts)
}
