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
//! - [`matrix`]: dense factors and their `.npy` files;
//! - [`baselines`]: the formats of the paper's comparison (COO, CSF, HiCOO) with the same
//!   parallel MTTKRP interface, for the experiments.

pub mod baselines;
pub mod binfile;
pub mod coo;
pub mod dispatch;
pub mod error;
pub mod format;
pub mod gen;
pub mod matrix;
pub mod mttkrp;
pub mod pool;
pub mod tns;

pub use coo::CooTensor;
pub use error::{AltoError, Result};
pub use format::{AltoTensor, AnyAlto, BuildOptions};
pub use matrix::Matrix;
