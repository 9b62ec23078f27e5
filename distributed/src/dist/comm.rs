//! The collectives the distribution needs, over `MPI_COMM_WORLD`, and the rule that keeps a
//! failure on one rank from hanging the others: every fallible phase ends in [`Comm::agree`],
//! an allreduce of a failure flag, after which every rank leaves the same way.

use crate::error::{DistError, Result};
use mpi::collective::SystemOperation;
use mpi::datatype::{Equivalence, Partition, PartitionMut};
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

pub struct Comm {
    world: SimpleCommunicator,
    rank: usize,
    size: usize,
}

/// An MPI count (`int`) from a length.
fn count(n: u64) -> Result<i32> {
    i32::try_from(n).map_err(|_| DistError::CountOverflow(n))
}

/// Exclusive prefix sums of `counts` as MPI displacements.
fn displacements(counts: &[i32]) -> Result<Vec<i32>> {
    let mut at = 0u64;
    counts
        .iter()
        .map(|&c| {
            let d = count(at);
            at += c as u64;
            d
        })
        .collect()
}

impl Comm {
    pub fn new(world: SimpleCommunicator) -> Self {
        let rank = world.rank() as usize;
        let size = world.size() as usize;
        Comm { world, rank, size }
    }
    pub fn rank(&self) -> usize {
        self.rank
    }
    pub fn size(&self) -> usize {
        self.size
    }

    /// Every rank learns whether any rank's `local` failed. The failing rank keeps its error;
    /// the others get [`DistError::OtherRank`] naming the lowest failing rank.
    pub fn agree<T>(&self, local: Result<T>) -> Result<T> {
        let mine = if local.is_err() { self.rank } else { self.size } as u64;
        let mut first = 0u64;
        self.world
            .all_reduce_into(&mine, &mut first, SystemOperation::min());
        match local {
            Err(e) => Err(e),
            Ok(_) if first < self.size as u64 => Err(DistError::OtherRank(first as usize)),
            Ok(v) => Ok(v),
        }
    }

    pub fn sum_f64(&self, x: &mut [f64]) {
        let send = x.to_vec();
        self.world
            .all_reduce_into(&send[..], x, SystemOperation::sum());
    }
    pub fn max_f64(&self, x: &mut [f64]) {
        let send = x.to_vec();
        self.world
            .all_reduce_into(&send[..], x, SystemOperation::max());
    }
    pub fn sum_u64(&self, x: &mut [u64]) {
        let send = x.to_vec();
        self.world
            .all_reduce_into(&send[..], x, SystemOperation::sum());
    }
    pub fn max_u64(&self, x: &mut [u64]) {
        let send = x.to_vec();
        self.world
            .all_reduce_into(&send[..], x, SystemOperation::max());
    }
    pub fn min_u64(&self, x: &mut [u64]) {
        let send = x.to_vec();
        self.world
            .all_reduce_into(&send[..], x, SystemOperation::min());
    }

    /// The sum of `x` over the ranks below this one (0 on rank 0).
    pub fn exclusive_sum_u64(&self, x: u64) -> u64 {
        let all = self.all_gather_u64(&[x]);
        all[..self.rank].iter().sum()
    }

    /// Every rank's `x` (all the same length), concatenated in rank order.
    pub fn all_gather_u64(&self, x: &[u64]) -> Vec<u64> {
        let mut out = vec![0u64; x.len() * self.size];
        self.world.all_gather_into(x, &mut out[..]);
        out
    }

    /// Every rank's `x` (any length), concatenated in rank order.
    pub fn all_gather_varcount<T: Equivalence + Copy + Default>(&self, x: &[T]) -> Result<Vec<T>> {
        let counts: Vec<i32> = self
            .all_gather_u64(&[x.len() as u64])
            .into_iter()
            .map(count)
            .collect::<Result<_>>()?;
        let displs = displacements(&counts)?;
        let total: usize = counts.iter().map(|&c| c as usize).sum();
        let mut out = vec![T::default(); total];
        let mut part = PartitionMut::new(&mut out[..], &counts[..], &displs[..]);
        self.world.all_gather_varcount_into(x, &mut part);
        Ok(out)
    }

    /// `MPI_Alltoallv`: `send[send_displs[q]..][..send_counts[q]]` goes to rank q; what comes
    /// back is laid out by source rank, `recv_counts[p]` from rank p.
    pub fn all_to_all_v<T: Equivalence + Copy + Default>(
        &self,
        send: &[T],
        send_counts: &[u64],
        send_displs: &[u64],
        recv_counts: &[u64],
    ) -> Result<Vec<T>> {
        // Every rank checks its counts and makes room before any enters the collective, and
        // all learn whether all could: a rank that returned early would hang the others.
        let prepared = (|| {
            let sc: Vec<i32> = send_counts
                .iter()
                .map(|&c| count(c))
                .collect::<Result<_>>()?;
            let sd: Vec<i32> = send_displs
                .iter()
                .map(|&c| count(c))
                .collect::<Result<_>>()?;
            let rc: Vec<i32> = recv_counts
                .iter()
                .map(|&c| count(c))
                .collect::<Result<_>>()?;
            let rd = displacements(&rc)?;
            let total: u64 = recv_counts.iter().sum();
            let mut out = Vec::new();
            out.try_reserve_exact(total as usize).map_err(|_| {
                DistError::OutOfMemory(format!("receiving {total} elements in an all-to-all"))
            })?;
            out.resize(total as usize, T::default());
            Ok((sc, sd, rc, rd, out))
        })();
        let (sc, sd, rc, rd, mut out) = self.agree(prepared)?;
        let part = Partition::new(send, &sc[..], &sd[..]);
        let mut rpart = PartitionMut::new(&mut out[..], &rc[..], &rd[..]);
        self.world.all_to_all_varcount_into(&part, &mut rpart);
        Ok(out)
    }

    /// [`Self::all_to_all_v`] with the pieces packed back to back in rank order.
    pub fn all_to_all_packed<T: Equivalence + Copy + Default>(
        &self,
        send: &[T],
        send_counts: &[u64],
        recv_counts: &[u64],
    ) -> Result<Vec<T>> {
        let displs: Vec<u64> = send_counts
            .iter()
            .scan(0u64, |at, &c| {
                let d = *at;
                *at += c;
                Some(d)
            })
            .collect();
        self.all_to_all_v(send, send_counts, &displs, recv_counts)
    }

    /// How many elements each rank will send this one, from how many this one sends each.
    pub fn exchange_counts(&self, send_counts: &[u64]) -> Vec<u64> {
        let mut recv = vec![0u64; self.size];
        self.world.all_to_all_into(send_counts, &mut recv[..]);
        recv
    }

    /// Every rank's `x` concatenated in rank order, on rank 0 only (`None` elsewhere).
    pub fn gather_to_root(&self, x: &[f64]) -> Result<Option<Vec<f64>>> {
        let counts: Vec<i32> = self
            .all_gather_u64(&[x.len() as u64])
            .into_iter()
            .map(count)
            .collect::<Result<_>>()?;
        let root = self.world.process_at_rank(0);
        if self.rank == 0 {
            let displs = displacements(&counts)?;
            let total: usize = counts.iter().map(|&c| c as usize).sum();
            let mut out = vec![0.0; total];
            let mut part = PartitionMut::new(&mut out[..], &counts[..], &displs[..]);
            root.gather_varcount_into_root(x, &mut part);
            Ok(Some(out))
        } else {
            root.gather_varcount_into(x);
            Ok(None)
        }
    }

    /// Ends every rank at once; for a failure that cannot be agreed on (never on a normal
    /// error path, which goes through [`Self::agree`]).
    pub fn abort(&self, code: i32) -> ! {
        self.world.abort(code)
    }
}
