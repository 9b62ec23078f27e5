//! Micro-kernels that measure the ceilings: FMA peaks per vector width and load/copy/triad
//! bandwidth per level of the memory hierarchy.

pub mod bandwidth;
pub mod flops;
