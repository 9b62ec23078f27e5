//! # alto
//!
//! Sparse tensors in the ALTO format (Helal et al., ICS 2021): each nonzero's coordinate is
//! linearized into one compact integer by an adaptive, mode-length-aware bit interleaving, the
//! nonzeros are sorted along that line and cut into balanced segments, and MTTKRP runs on every
//! mode from that single copy with adaptive conflict resolution.
//!
//! Modules, in the order data flows:
//! - [`io`] ([`io::tns`], [`io::binfile`], [`io::npy`]), [`gen`]: tensors and matrices in and
//!   out (FROSTT files, the binary `.alto` file, NumPy files, synthetic generators);
//! - [`format`]: the ALTO layout, sort, partitions and helper flags;
//! - [`mttkrp`]: the naive oracle, the strategy heuristic, the parallel driver;
//! - [`dispatch`]: kernel and decoder selection (kernels live in `alto-kernels`);
//! - [`cpd`]: CP-ALS decomposition on top of the MTTKRP driver;
//! - [`matrix`]: dense factors (read and written as `.npy` through [`io::npy`]);
//! - [`memory`]: peak-memory plans checked before allocating;
//! - [`harness`] (feature `harness`): topology, pinned pools, perf-event counters, the
//!   traffic model and measurement records, for the experiments and the command.
//!
//! The formats of the paper's comparison (COO, CSF, HiCOO) live in `alto-experiments`.

pub mod coo;
pub mod cpd;
pub mod dispatch;
pub mod error;
pub mod format;
pub mod gen;
#[cfg(feature = "harness")]
pub mod harness;
pub mod io;
pub mod matrix;
pub mod memory;
pub mod mttkrp;

pub use coo::CooTensor;
pub use cpd::{cp_als, CpModel, CpdOptions};
pub use error::{AltoError, Result};
pub use format::{AltoTensor, AnyAlto, BuildOptions};
pub use matrix::Matrix;
