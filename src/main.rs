//! The `alto` command: inspect, convert and generate sparse tensors, run MTTKRP and CP-ALS.
//!
//! Exit codes: 0 success, 1 a `--check` failed, 2 usage or input error.

mod cli;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    match cli::run(args) {
        Ok(cli::Outcome::Success) => ExitCode::SUCCESS,
        Ok(cli::Outcome::CheckFailed) => ExitCode::from(1),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
