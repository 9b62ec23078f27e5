//! The experiments crate's integration tests, one module an area, in one test binary (the
//! library and `alto` are linked once for all of them: docs/building.md).

mod baselines_oracle;
mod perf_suite;
mod pipeline;
