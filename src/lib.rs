//! # alto
//!
//! Sparse tensors in the ALTO format (Helal et al., ICS 2021): each nonzero's coordinate is
//! linearized into one compact integer by an adaptive, mode-length-aware bit interleaving, the
//! nonzeros are sorted along that line and cut into balanced segments, and MTTKRP runs on every
//! mode from that single copy with adaptive conflict resolution.
//!
//! Modules, in the order data flows:
//! - [`tns`], [`gen`]: tensors in (FROSTT files, synthetic generators) as [`coo::CooTensor`];
//! - [`format`]: the ALTO layout, sort, partitions and helper flags; [`binfile`] stores it;
//! - [`mttkrp`]: the naive oracle, the strategy heuristic, the parallel driver;
//! - [`dispatch`]: kernel and decoder selection (kernels live in `alto-kernels`);
//! - [`cpd`]: CP-ALS decomposition on top of the MTTKRP driver;
//! - [`matrix`]: dense factors and their `.npy` files;
//! - [`topology`], [`pool`], [`affinity`]: the machine and the pinned worker pool;
//! - [`counters`], [`model`]: perf-event counts of a region and the analytic traffic model;
//! - [`record`]: the measurement record written beside every result;
//! - [`baselines`]: the formats of the paper's comparison (COO, CSF, HiCOO) with the same
//!   parallel MTTKRP interface, for the experiments.

pub mod affinity;
pub mod baselines;
pub mod binfile;
pub mod coo;
pub mod counters;
pub mod cpd;
pub mod dispatch;
pub mod error;
pub mod format;
pub mod gen;
pub mod matrix;
pub mod model;
pub mod mttkrp;
pub mod pool;
pub mod record;
pub mod tns;
pub mod topology;

pub use coo::CooTensor;
pub use cpd::{cp_als, CpModel, CpdOptions};
pub use error::{AltoError, Result};
pub use format::{AltoTensor, AnyAlto, BuildOptions};
pub use matrix::Matrix;
