//! `alto topo`: the machine's topology and where each pinning policy places workers.

use super::{print_out, thread_count, Outcome};
use alto::harness::affinity::{current_affinity, format_cpu_list};
use alto::harness::pool::{assignment, PinPolicy};
use alto::harness::topology::{CpuModel, Topology};
use anyhow::{Context, Result};
use clap::Args;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;

#[derive(Args, Debug)]
pub struct TopoArgs {
    /// Workers to place in the placement table (default: every allowed CPU).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Print one JSON document instead of the summary.
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct CpuSummary {
    vendor: String,
    name: String,
    family: u32,
    model: u32,
    in_vm: bool,
}

#[derive(Serialize)]
struct TopoReport {
    cpu: CpuSummary,
    /// The whole machine.
    topology: Topology,
    /// The CPUs this process may use (its affinity mask).
    allowed_cpus: Vec<usize>,
    /// Binding backend `--pin` uses here.
    pin_backend: &'static str,
    threads: usize,
    /// Per policy, each worker's CPU set on the allowed CPUs.
    placements: BTreeMap<&'static str, Vec<Vec<usize>>>,
}

pub fn run(a: TopoArgs) -> Result<Outcome> {
    let topo = Topology::detect()?;
    let allowed = current_affinity().context("reading this process's CPU affinity")?;
    let usable = topo.restrict_to(&allowed)?;
    let threads = match a.threads {
        Some(t) => thread_count(Some(t))?,
        None => usable.pus.len(),
    };
    let placements = PinPolicy::ALL
        .into_iter()
        .filter(|&p| p != PinPolicy::None)
        .map(|p| {
            let sets = assignment(&usable, p, threads)
                .into_iter()
                .map(Option::unwrap_or_default)
                .collect();
            (p.name(), sets)
        })
        .collect();
    let cpu = CpuModel::detect();
    let report = TopoReport {
        cpu: CpuSummary {
            in_vm: cpu.in_vm(),
            vendor: cpu.vendor,
            name: cpu.name,
            family: cpu.family,
            model: cpu.model,
        },
        pin_backend: alto::harness::pool::BindBackend::default_for(&usable).name(),
        topology: topo,
        allowed_cpus: allowed,
        threads,
        placements,
    };
    if a.json {
        print_out(&(serde_json::to_string_pretty(&report)? + "\n"))?;
    } else {
        print_out(&render(&report))?;
    }
    Ok(Outcome::Success)
}

fn render(r: &TopoReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "cpu         {}{}",
        r.cpu.name,
        if r.cpu.in_vm {
            " (under a hypervisor)"
        } else {
            ""
        }
    );
    s.push_str(&r.topology.render());
    let _ = writeln!(
        s,
        "\nallowed cpus {} (pinning through {})",
        format_cpu_list(&r.allowed_cpus),
        r.pin_backend
    );
    let _ = writeln!(s, "placement of {} workers (worker:cpus)", r.threads);
    for (policy, sets) in &r.placements {
        let cells: Vec<String> = sets
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{i}:{}", format_cpu_list(c)))
            .collect();
        let _ = writeln!(s, "  {policy:<8} {}", cells.join(" "));
    }
    s
}
