//! `roofline`: measure this machine, run the paper's Fig. 9 cases on stand-in tensors, and draw
//! this machine's roofline and the paper's Cascade Lake one.
//!
//! `cargo run --release --bin roofline` with no arguments does everything with defaults sized to
//! finish within about 5 minutes on 2 cores.

use alto::harness::record::MeasurementRecord;
use alto_roofline::cases::{model_cases, paper_cases, run_case, CaseResult, CaseSource, CaseSpec};
use alto_roofline::machine::{probe, CacheSizes, ProbeResults};
use alto_roofline::plot::draw_roofline;
use alto_roofline::points::{place_records, read_points};
use alto_roofline::profile::MachineProfile;
use alto_roofline::report::{ceilings_csv, points_csv, write};
use anyhow::{bail, Context, Result};
use clap::Parser;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Parser, Debug)]
#[command(
    name = "roofline",
    about = "This machine's roofline with the paper's MTTKRP cases, and the paper's Cascade Lake roofline"
)]
struct Args {
    /// Multiplies the stand-in tensors' default nonzero counts.
    #[arg(long, default_value_t = 1.0)]
    scale: f64,
    /// Nonzeros of every stand-in (overrides --scale).
    #[arg(long)]
    nnz: Option<u64>,
    /// Add a tensor file (`.tns`) as a case; repeatable, paired with --mode.
    #[arg(long)]
    tensor: Vec<PathBuf>,
    /// 0-based target mode of each --tensor.
    #[arg(long)]
    mode: Vec<usize>,
    #[arg(long, default_value_t = 16)]
    rank: usize,
    /// Timed MTTKRP calls per case (after one warm-up).
    #[arg(long, default_value_t = 10)]
    reps: usize,
    /// Threads for the all-threads measurements (default: all available CPUs).
    #[arg(long)]
    threads: Option<usize>,
    /// A machine profile (JSON) to draw with the paper's cases; default: the committed
    /// Cascade Lake 8280 profile.
    #[arg(long)]
    profile: Option<PathBuf>,
    /// Thread pinning: none, compact, scatter or cores.
    #[arg(long, default_value = "compact")]
    pin: String,
    /// Measurement records of `alto mttkrp` (`--record` CSV or JSON, or its `--json` report
    /// with `--counters`), measured on any machine: place them on the profile (`--profile`, by
    /// default the Cascade Lake 8280) instead of probing this machine.
    #[arg(long, value_name = "FILE")]
    points: Option<PathBuf>,
    /// Output folder.
    #[arg(long, default_value = "reports/roofline")]
    out: PathBuf,
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
        })
        .unwrap_or_else(|| "localhost".into())
}

/// Data-cache sizes from the topology (hwloc, or sysfs without it), with conservative
/// defaults for levels it does not report.
fn cache_sizes(topo: Option<&alto::harness::topology::Topology>) -> CacheSizes {
    let level = |l: u32, default: u64| topo.and_then(|t| t.data_cache_bytes(l)).unwrap_or(default);
    CacheSizes {
        l1: level(1, 32 << 10),
        l2: level(2, 1 << 20),
        l3: level(3, 16 << 20),
    }
}

/// A measurement record for one measured case.
fn case_record(
    p: &CaseResult,
    pin: &alto::harness::pool::PinReport,
    reps: usize,
) -> MeasurementRecord {
    let mut r = MeasurementRecord::new("roofline");
    r.isa = p.isa.clone();
    r.kernel = p.kernel.clone();
    r.threads = p.threads;
    r.pin = pin.policy.to_string();
    r.pin_backend = pin.backend.to_string();
    r.rank = p.rank;
    r.tensor = p.tensor.clone();
    r.shape = p.dims.clone();
    r.nnz = p.nnz;
    r.mode = Some(p.mode);
    r.repetitions = reps;
    r.min_s = p.min_s;
    r.median_s = p.median_s;
    r.max_s = p.max_s;
    r
}

fn print_table(title: &str, points: &[CaseResult]) {
    println!("\n{title}");
    println!(
        "{:<34} {:<24} {:>9} {:>9} {:>10} {:>9}  index",
        "case", "kernel", "GFLOP/s", "OI", "bound", "% bound"
    );
    for p in points {
        let measured = p
            .measured_gflops
            .map_or("-".to_string(), |g| format!("{g:.2}"));
        let percent = p
            .percent_of_bound
            .map_or("-".to_string(), |v| format!("{v:.0}%"));
        println!(
            "{:<34} {:<24} {:>9} {:>9.3} {:>10.2} {:>9}  {} bits ({})  OI: {}",
            p.case,
            p.kernel,
            measured,
            p.oi,
            p.model_bound_gflops,
            percent,
            p.index_bits,
            p.index_width,
            p.oi_source
        );
    }
    // Say where the intensity came from, and why not from counters.
    let mut notes: Vec<String> = points
        .iter()
        .map(|p| format!("OI {}: {}", p.oi_source, p.oi_note))
        .collect();
    notes.dedup();
    for n in notes {
        println!("  {n}");
    }
}

/// `--points`: records from another machine placed on the stated profile.
fn run_points(a: &Args, stated_path: &Path, stated: &MachineProfile, file: &Path) -> Result<()> {
    let records = read_points(file)?;
    let (placed, warnings) = place_records(stated, &records)?;
    for w in &warnings {
        eprintln!("warning: {w}");
    }
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    let stem = |p: &Path| {
        p.file_stem()
            .map_or("points".into(), |s| s.to_string_lossy().into_owned())
    };
    let name = format!("{}_{}", stem(stated_path), stem(file));
    let png = a.out.join(format!("{name}.png"));
    let plot_points: Vec<_> = placed.iter().map(CaseResult::plot_point).collect();
    draw_roofline(
        &png,
        &format!(
            "Stated profile: {} with measured points ({})",
            stated.name,
            file.file_name()
                .map_or(String::new(), |f| f.to_string_lossy().into_owned())
        ),
        stated,
        &plot_points,
    )
    .map_err(anyhow::Error::msg)?;
    write(
        &a.out.join(format!("{name}_points.csv")),
        &points_csv(&placed),
    )?;
    print_table(
        &format!(
            "{} records from {} on {}",
            placed.len(),
            file.display(),
            stated.name
        ),
        &placed,
    );
    println!("\nwrote {} (+ {name}_points.csv)", png.display());
    Ok(())
}

fn main() -> std::process::ExitCode {
    match run(Args::parse()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::from(2)
        }
    }
}

fn run(a: Args) -> Result<()> {
    if a.tensor.len() != a.mode.len() {
        bail!(
            "give one --mode per --tensor ({} tensors, {} modes)",
            a.tensor.len(),
            a.mode.len()
        );
    }
    if !(a.scale.is_finite() && a.scale > 0.0) {
        bail!("--scale must be a positive number");
    }
    if a.rank == 0 {
        bail!("--rank must be at least 1");
    }
    let stated_path = a.profile.clone().unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("profiles/cascadelake-8280.json")
    });
    let stated = MachineProfile::load(&stated_path)?;
    if let Some(file) = &a.points {
        return run_points(&a, &stated_path, &stated, file);
    }
    let threads = match a.threads {
        Some(0) => bail!("--threads must be at least 1"),
        Some(t) => t,
        None => std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
    };
    let host = host_name();
    let dir = a.out.join(&host);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let started = Instant::now();
    let mut progress =
        |what: &str| eprintln!("[{:>6.1} s] {what}", started.elapsed().as_secs_f64());

    // 1. Probe.
    let policy: alto::harness::pool::PinPolicy = a.pin.parse()?;
    let (single, _) = alto::harness::pool::build_pinned_pool(1, policy)?;
    let (all, pin) = alto::harness::pool::build_pinned_pool(threads, policy)?;
    if let Some(w) = pin.warning() {
        eprintln!("warning: {w}");
    }
    let topo = match alto::harness::topology::Topology::detect() {
        Ok(t) => Some(t),
        Err(e) => {
            eprintln!("warning: no topology ({e}); assuming typical cache sizes");
            None
        }
    };
    let caches = cache_sizes(topo.as_ref());
    progress(&format!(
        "probing ({threads} threads; caches L1 {} KiB, L2 {} KiB, L3 {} KiB)",
        caches.l1 >> 10,
        caches.l2 >> 10,
        caches.l3 >> 10
    ));
    let probe_results: ProbeResults = probe(&single, &all, caches, &mut progress);
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let machine = probe_results.profile(&format!("{cpu} ({host}, {threads} threads)"), threads);
    write(
        &dir.join("machine.json"),
        &serde_json::to_string_pretty(&machine)?,
    )?;
    write(
        &dir.join("probe.json"),
        &serde_json::to_string_pretty(&probe_results)?,
    )?;

    // 2. Cases.
    let mut specs: Vec<CaseSpec> = paper_cases(a.scale, a.nnz, a.rank);
    for (t, &m) in a.tensor.iter().zip(&a.mode) {
        let name = t
            .file_stem()
            .map_or("tensor".into(), |s| s.to_string_lossy().into_owned());
        specs.push(CaseSpec {
            label: format!("{name} mode {}", m + 1),
            source: CaseSource::File(t.clone()),
            mode: m,
            rank: a.rank,
            rank_specialized: true,
        });
    }
    // `ALTO_ISA` / `ALTO_DECODE` are read here; the library takes them as options.
    let var = |name: &str| std::env::var(name).ok();
    let dispatch = alto::dispatch::DispatchOptions::from_values(
        var(alto::dispatch::ISA_ENV).as_deref(),
        var(alto::dispatch::DECODE_ENV).as_deref(),
    )?;
    let mut points = Vec::new();
    for spec in &specs {
        progress(&format!("case {}", spec.label));
        points.push(run_case(spec, &all, a.reps, &machine, &dispatch)?);
    }

    // 3. Draw this machine and the stated profile.
    let png = dir.join("roofline.png");
    let plot_points: Vec<_> = points.iter().map(CaseResult::plot_point).collect();
    let oi_title = if points.iter().all(|p| p.oi_source == "model") {
        "OI: model, no counted DRAM traffic".to_string()
    } else {
        "OI: counted".to_string()
    };
    draw_roofline(
        &png,
        &format!("Roofline: {} ({oi_title})", machine.name),
        &machine,
        &plot_points,
    )
    .map_err(anyhow::Error::msg)?;
    write(&dir.join("roofline_points.csv"), &points_csv(&points))?;
    write(&dir.join("roofline_ceilings.csv"), &ceilings_csv(&machine))?;
    // The measurement record: one per case, and a summary beside the PNG.
    let records: Vec<MeasurementRecord> = points
        .iter()
        .map(|p| case_record(p, &pin, a.reps))
        .collect();
    let records_csv = dir.join("roofline_records.csv");
    let _ = std::fs::remove_file(&records_csv);
    MeasurementRecord::append_csv(&records_csv, &records)?;
    let mut summary = MeasurementRecord::new("roofline");
    // Every case ran at this ISA: `ALTO_ISA` when set, else the best (see `case_kernel`).
    summary.isa = dispatch.isa().name().to_string();
    summary.threads = threads;
    summary.pin = pin.policy.to_string();
    summary.pin_backend = pin.backend.to_string();
    summary.rank = a.rank;
    summary.tensor = "paper Fig. 9 cases (see roofline_points.csv)".into();
    summary.repetitions = a.reps;
    summary.write_beside(&png)?;

    let stem = stated_path
        .file_stem()
        .map_or("profile".into(), |s| s.to_string_lossy().into_owned());
    let stated_points = model_cases(&stated)?;
    let stated_png = a.out.join(format!("{stem}.png"));
    let plot_points: Vec<_> = stated_points.iter().map(CaseResult::plot_point).collect();
    draw_roofline(
        &stated_png,
        &format!("Roofline, stated profile: {}", stated.name),
        &stated,
        &plot_points,
    )
    .map_err(anyhow::Error::msg)?;
    write(
        &a.out.join(format!("{stem}_points.csv")),
        &points_csv(&stated_points),
    )?;
    write(
        &a.out.join(format!("{stem}_ceilings.csv")),
        &ceilings_csv(&stated),
    )?;

    // 4. Summary.
    println!("\nceilings of this machine ({threads} threads):");
    for p in &machine.peaks {
        println!("  {:<14} {:>10.1} GFLOP/s", p.name, p.gflops);
    }
    for b in &machine.bandwidths {
        println!("  {:<14} {:>10.1} GB/s", b.name, b.gbytes_per_s);
    }
    print_table(
        &format!("this machine, {threads} threads (bound: DRAM roof at the model OI)"),
        &points,
    );
    print_table(
        "the paper's machine (stated profile; no measurements: each case at its model bound)",
        &stated_points,
    );
    println!(
        "\nwrote {} (+ machine.json, probe.json, roofline_points.csv, roofline_ceilings.csv)",
        png.display()
    );
    println!(
        "wrote {} (+ {stem}_points.csv, {stem}_ceilings.csv)",
        stated_png.display()
    );
    println!("total {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}
