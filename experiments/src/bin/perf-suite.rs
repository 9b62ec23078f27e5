//! `perf-suite`: MTTKRP and construction performance on the benchmark shapes of issue 15, or
//! (`--compare OLD --new NEW`) two `alto` binaries side by side. See `alto_experiments::perf`.

use clap::Parser;

#[derive(Parser)]
#[command(
    name = "perf-suite",
    about = "MTTKRP and construction timings on fixed-seed benchmark shapes (CSV, PNG, README \
             under reports/perf/<host>/), or with --compare two alto binaries side by side"
)]
struct Cli {
    #[command(flatten)]
    opts: alto_experiments::perf::PerfOpts,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let out = alto_experiments::perf::run(cli.opts)?;
    eprintln!("output: {}", out.display());
    Ok(())
}
