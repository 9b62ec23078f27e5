//! MTTKRP: the naive oracle, the conflict-resolution heuristic, and the parallel ALTO driver.

pub mod driver;
pub mod oracle;
pub mod padding;
pub mod phases;
pub mod pull;
pub mod strategy;
pub mod zeroing;

pub use driver::{
    mttkrp, mttkrp_alto, mttkrp_alto_profiled, mttkrp_profiled, mttkrp_values, plan, staging_len,
    MttkrpOptions, MttkrpRun, Workspace,
};
pub use oracle::{check_factors, compare_with_oracle, mttkrp_oracle};
pub use phases::PhaseTimes;
pub use strategy::{
    choose_sync, exclusive_intervals, resolve_sync, ConflictResolution, SyncChoice,
};

/// Flops of one MTTKRP in the roofline convention (SPEC section 1): `N * R` per nonzero.
pub fn mttkrp_flops(order: usize, rank: usize, nnz: usize) -> f64 {
    (order * rank) as f64 * nnz as f64
}
