//! # alto-mpi
//!
//! Distributed MTTKRP and CP-ALS on the ALTO format over MPI (issue 19). The sorted,
//! linearized nonzeros are cut into P equal line segments, one per MPI rank, exactly as the
//! shared-memory partitions; each rank runs the library's threaded MTTKRP on its segment and
//! partial rows are summed only where the segments' intervals overlap.
//!
//! The pure logic compiles without MPI and is tested by plain `cargo test`:
//! - [`plan`]: segment bounds, owned row blocks, per-mode exchange plans;
//! - [`codec`]: the global linearization on `u128` keys;
//! - [`sample`]: the sample sort's splitters and buckets;
//! - [`block`]: one rank's segment as a windowed ALTO tensor, and the exchange buffers;
//! - [`volume`]: measured and modelled communication volumes (ours, whole-matrix allreduce,
//!   SPLATT's medium-grained grid).
//!
//! With the `mpi` feature, [`dist`] runs it on MPI (construction by sample sort, MTTKRP,
//! CP-ALS) and the `alto-mpi` binary drives it.

pub mod block;
pub mod codec;
pub mod error;
pub mod plan;
pub mod sample;
pub mod volume;

#[cfg(feature = "mpi")]
pub mod dist;

#[cfg(test)]
mod simulated;

pub use error::{DistError, Result};
