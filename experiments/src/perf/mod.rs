//! `perf-suite`: the performance suite of issue 15, one command.
//!
//! In-process mode (the default) generates the benchmark shapes with fixed seeds through the
//! library's own generators ([`shapes`]), builds each at every requested thread count (timing
//! construction by phase), and times MTTKRP on every mode for every rank and kernel, each
//! result first checked against the scalar kernel's ([`measure`]). Every timed row carries
//! cycles per nonzero, model bytes per nonzero, the fraction of the roofline bound
//! ([`machine`]) and the driver's phase breakdown. Output: CSV, PNG and a README under
//! `reports/perf/<host>/` ([`report`], [`plot`]).
//!
//! Comparison mode (`--compare OLD --new NEW`, [`compare`]) writes each shape once as `.tns`
//! and runs two `alto` binaries on it alternately, parsing their `mttkrp --json` documents
//! afterwards, for a before/after table from one run.

pub mod alto_json;
pub mod compare;
pub mod machine;
pub mod measure;
pub mod options;
pub mod plot;
pub mod probe;
pub mod report;
pub mod rows;
pub mod shapes;

pub use options::{PerfOpts, Settings};

use crate::measure::Progress;
use anyhow::Result;
use std::path::PathBuf;

/// Runs the suite (or the comparison, with `--compare`); returns the output directory.
pub fn run(opts: PerfOpts) -> Result<PathBuf> {
    let settings = Settings::resolve(opts)?;
    let progress = Progress::new(!settings.no_progress);
    std::fs::create_dir_all(&settings.out)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", settings.out.display()))?;
    if settings.compare.is_some() {
        compare::run(&settings, &progress)?;
    } else {
        let machine = machine::Machine::detect(&settings, &progress)?;
        let results = measure::run(&settings, &machine, &progress)?;
        report::write(&settings, &machine, &results, &progress)?;
        let failed = results.rows.iter().filter(|r| r.status != "ok").count();
        if failed > 0 {
            anyhow::bail!(
                "{failed} kernel result(s) differed from the scalar kernel's and were not timed \
                 (see the status column of {})",
                settings.out.join(report::PERF_CSV).display()
            );
        }
    }
    Ok(settings.out)
}
