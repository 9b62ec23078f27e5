//! Distributed MTTKRP: each rank's partial rows (its window, from the threaded library
//! kernels) are summed at the rows' owners by one `MPI_Alltoallv` over the interval overlaps;
//! the reverse exchange brings owners' rows back to the windows that read them.

use super::build::DistTensor;
use super::comm::Comm;
use crate::block::{
    pack_owned_for_windows, reduce_recv_counts, reduce_send_layout, sum_into_owned,
};
use crate::error::Result;
use crate::plan::{owned_bounds, ExchangePlan, Interval};
use alto::mttkrp::{MttkrpOptions, MttkrpRun, Workspace};
use alto::Matrix;

/// Every rank's interval in every mode (`result[mode][rank]`).
pub fn all_intervals(comm: &Comm, t: &DistTensor) -> Vec<Vec<Interval>> {
    let order = t.dims.len();
    let mine: Vec<u64> = t
        .block
        .intervals
        .iter()
        .flat_map(|iv| match iv {
            Some((lo, hi)) => [1, *lo, *hi],
            None => [0, 0, 0],
        })
        .collect();
    let all = comm.all_gather_u64(&mine);
    (0..order)
        .map(|m| {
            (0..comm.size())
                .map(|p| {
                    let w = &all[(p * order + m) * 3..][..3];
                    (w[0] == 1).then_some((w[1], w[2]))
                })
                .collect()
        })
        .collect()
}

/// The MTTKRP machinery of one rank: its exchange plan per mode and the library workspace.
pub struct DistMttkrp<'a> {
    pub comm: &'a Comm,
    pub t: &'a DistTensor,
    pub rank: usize,
    pub plans: Vec<ExchangePlan>,
    pub intervals: Vec<Vec<Interval>>,
    pub opts: MttkrpOptions,
    ws: Option<Workspace>,
    pool: &'a rayon::ThreadPool,
    partial: Matrix,
}

impl<'a> DistMttkrp<'a> {
    pub fn new(
        comm: &'a Comm,
        t: &'a DistTensor,
        rank: usize,
        opts: MttkrpOptions,
        pool: &'a rayon::ThreadPool,
    ) -> Self {
        let intervals = all_intervals(comm, t);
        let plans = intervals
            .iter()
            .zip(&t.dims)
            .map(|(iv, &dim)| ExchangePlan::new(comm.rank(), iv, &owned_bounds(iv, dim)))
            .collect();
        let ws = t.block.tensor.as_ref().map(|x| Workspace::new(x, rank));
        DistMttkrp {
            comm,
            t,
            rank,
            plans,
            intervals,
            opts,
            ws,
            pool,
            partial: Matrix::zeros(0, rank),
        }
    }

    /// Rows of `mode` this rank owns.
    pub fn owned(&self, mode: usize) -> std::ops::Range<u64> {
        self.plans[mode].owned.clone()
    }

    /// The window factors of this rank from full factor matrices.
    pub fn windows_of(&self, full: &[Matrix]) -> Vec<Matrix> {
        full.iter()
            .enumerate()
            .map(|(m, u)| self.t.block.window_of(u, m))
            .collect()
    }

    /// The owned rows of `mode`'s MTTKRP (`owned(mode)` rows x R, row-major) from the window
    /// factors; also what ran locally and the bytes this rank sent.
    pub fn run(
        &mut self,
        windows: &[Matrix],
        mode: usize,
    ) -> Result<(Vec<f64>, Option<MttkrpRun>, u64)> {
        let plan = &self.plans[mode];
        let rows = (plan.window.end - plan.window.start) as usize;
        if self.partial.rows() != rows {
            self.partial = Matrix::zeros(rows, self.rank);
        }
        let local = match &mut self.ws {
            Some(ws) => self.t.block.partial_mttkrp(
                windows,
                mode,
                &mut self.partial,
                &self.opts,
                ws,
                self.pool,
            ),
            None => Ok(None),
        };
        let ran = self.comm.agree(local)?;
        let (counts, displs) = reduce_send_layout(plan, self.rank);
        let recv_counts = reduce_recv_counts(plan, self.rank);
        let received = self.comm.agree(self.comm.all_to_all_v(
            self.partial.as_slice(),
            &counts,
            &displs,
            &recv_counts,
        ))?;
        let mut owned = vec![0.0; (plan.owned.end - plan.owned.start) as usize * self.rank];
        sum_into_owned(plan, &received, &mut owned, self.rank);
        Ok((owned, ran, plan.rows_sent() * self.rank as u64 * 8))
    }

    /// The window rows of `mode` from every owner's `owned` rows (the reverse exchange);
    /// also the bytes this rank sent.
    pub fn to_window(&self, owned: &[f64], mode: usize) -> Result<(Matrix, u64)> {
        let plan = &self.plans[mode];
        let (buf, counts) = pack_owned_for_windows(plan, owned, self.rank);
        let (recv, _) = reduce_send_layout(plan, self.rank);
        let data = self
            .comm
            .agree(self.comm.all_to_all_packed(&buf, &counts, &recv))?;
        let rows = (plan.window.end - plan.window.start) as usize;
        let w = Matrix::from_vec(rows, self.rank, data)?;
        Ok((w, plan.rows_received() * self.rank as u64 * 8))
    }

    /// The full matrix on rank 0 from every rank's owned rows (`None` elsewhere).
    pub fn gather(&self, owned: &[f64], mode: usize) -> Result<Option<Matrix>> {
        let full = self.comm.gather_to_root(owned)?;
        Ok(match full {
            Some(data) => Some(Matrix::from_vec(
                self.t.dims[mode] as usize,
                self.rank,
                data,
            )?),
            None => None,
        })
    }
}
