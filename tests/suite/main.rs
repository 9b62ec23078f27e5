//! The `alto` crate's integration tests, one module an area. They are one test binary, so the
//! library and its dependencies are linked once for all of them (docs/building.md); libtest
//! runs them on as many threads as there are cores, as it ran each of the former binaries.

mod common;

#[cfg(feature = "harness")]
mod apr;
#[cfg(feature = "cli")]
mod cli;
#[cfg(feature = "cli")]
mod cli_hostile;
#[cfg(feature = "cli")]
mod cli_hw;
#[cfg(feature = "harness")]
mod counters;
#[cfg(feature = "harness")]
mod cpd;
mod format;
mod hostile_input;
#[cfg(feature = "harness")]
mod mttkrp_oracle;
#[cfg(feature = "harness")]
mod pinning;
