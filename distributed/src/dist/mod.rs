//! The MPI side (feature `mpi`): [`comm`] wraps the few collectives the distribution needs
//! and the error agreement; [`build`] reads and distributes a `.tns` file by a sample sort;
//! [`mttkrp`] sums partial rows over the interval overlaps; [`cpd`] runs CP-ALS on it.

pub mod build;
pub mod comm;
pub mod cpd;
pub mod mttkrp;

pub use build::{read_distributed, DistTensor};
pub use comm::Comm;
