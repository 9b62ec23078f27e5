//! `alto-experiments`: regenerates the figures of the ALTO paper's evaluation (Helal et al.,
//! ICS 2021) on this machine: 6 (speedup and compression against the best other formats),
//! 7 (parallel speedup over sequential ALTO), 8 (time per mode), 10 (rank specialization),
//! 11 (storage relative to COO) and 12 (construction time).
//!
//! Flow: [`tensors`] lists the inputs (stand-ins for the paper's 15 tensors from
//! [`alto::gen::preset`], plus every `.tns` file of `--data DIR`); each figure says what it
//! needs per tensor ([`figures::Figure::needs`]); [`measure`] builds the formats (ALTO, and the
//! baselines of [`formats`]) and times
//! MTTKRP, checking every result against the oracle and caching each measurement under
//! `reports/.cache` so an interrupted run resumes where it stopped; the figures then render
//! ([`plot`]) and write `reports/<figure>/<host>/{<figure>.png, <figure>.csv, record.json}`;
//! [`summary`] writes `reports/SUMMARY.md`.
//!
//! [`perf`] is the performance suite (`perf-suite`): MTTKRP and construction timings per
//! shape, rank, mode and kernel, or two `alto` binaries compared in one run.

pub mod config;
pub mod figures;
pub mod formats;
pub mod measure;
pub mod perf;
pub mod plot;
pub mod record;
pub mod run;
pub mod summary;
pub mod tensors;

pub use config::Opts;
pub use run::run_figures;
