//! The machine harness (feature `harness`, on by default): everything an experiment needs beside
//! the algorithm, and nothing a library user of MTTKRP or CP-ALS needs.
//!
//! - [`topology`]: packages, NUMA nodes, cores, PUs and caches (hwloc with feature `hwloc`,
//!   else `/sys`), and the pinning policies;
//! - [`affinity`], [`pool`]: CPU sets and the pinned rayon worker pool;
//! - [`counters`]: perf-event counts of a region, degrading honestly where there is no PMU;
//! - [`model`]: the analytic traffic model (SPEC section 11) the counters fall back to;
//! - [`record`]: the measurement record written beside every result.

pub mod affinity;
pub mod counters;
pub mod model;
pub mod pool;
pub mod record;
pub mod topology;
