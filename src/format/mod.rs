//! The ALTO format: bit layout (`layout`), sorting (`sort`), the built tensor with its
//! partitions (`alto`) and their coordinate intervals (`intervals`), what building allocates
//! (`build_memory`), its boundary flags (`flags`), and tensors from stored parts (`stored`).

pub mod alto;
mod build_memory;
mod flags;
mod intervals;
pub mod layout;
pub mod sort;
mod stored;

pub use alto::{
    estimate_build_bytes, fiber_reuse, AltoTensor, AnyAlto, BuildOptions, BuildTimes,
    SortAlgorithm, DEFAULT_MIN_FIBER_REUSE,
};
pub use layout::{bits_for_dim, IndexWidth, Layout};
