//! The ALTO format: bit layout, sorting, and the built tensor with its partitions and flags.

pub mod alto;
pub mod layout;
pub mod sort;

pub use alto::{
    estimate_build_bytes, fiber_reuse, AltoTensor, AnyAlto, BuildOptions, BuildTimes,
    SortAlgorithm, DEFAULT_MIN_FIBER_REUSE,
};
pub use layout::{bits_for_dim, IndexWidth, Layout};
