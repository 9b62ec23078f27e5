//! `alto mttkrp`: one warm-up then K timed calls per mode; `--check` against the oracle;
//! `--counters` counts events over exactly the timed calls of each mode.

use super::choices::{parse_kernel, parse_mode, DecodeArg, ModeArg, PadArg, SyncArg, KERNEL_HELP};
use super::{load, print_out, LoadArgs, Outcome, PoolArgs};
use alto::dispatch::KernelChoice;
use alto::harness::counters::{CounterReport, CounterSet, Derived};
use alto::harness::model::{mttkrp_call_traffic, CallShape};
use alto::harness::pool::PinReport;
use alto::harness::record::MeasurementRecord;
use alto::mttkrp::{
    compare_with_oracle, mttkrp, mttkrp_flops, mttkrp_oracle, ConflictResolution, MttkrpOptions,
    SyncChoice, Workspace,
};
use alto::Matrix;
use anyhow::{bail, Context, Result};
use clap::Args;
use serde::Serialize;
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Args, Debug)]
pub struct MttkrpArgs {
    /// A `.tns` or `.alto` file.
    pub file: PathBuf,
    #[command(flatten)]
    pub load: LoadArgs,
    /// Target mode (0-based) or `all`.
    #[arg(long, default_value = "all", value_name = "all|N", value_parser = parse_mode)]
    pub mode: ModeArg,
    #[arg(long, default_value_t = 16)]
    pub rank: usize,
    // --threads (the tensor is cut into as many segments) and --pin.
    #[command(flatten)]
    pub pool: PoolArgs,
    /// Timed calls per mode (after one warm-up call).
    #[arg(long, default_value_t = 10)]
    pub iters: usize,
    /// Conflict resolution.
    #[arg(long, value_enum, default_value_t = SyncArg::Auto)]
    pub sync: SyncArg,
    #[arg(long, default_value = "auto", value_parser = parse_kernel, help = KERNEL_HELP)]
    pub kernel: KernelChoice,
    /// De-linearization of the ALTO index.
    #[arg(long, value_enum, default_value_t = DecodeArg::Auto)]
    pub decode: DecodeArg,
    /// Software-prefetch distance in nonzeros (0 = off); default: the kernels' measured one.
    #[arg(long, value_name = "NNZ")]
    pub prefetch: Option<usize>,
    /// Atomic strategies: nonzeros per chunk of the lazy zeroing of each segment's own rows (0
    /// = zero the whole output first); default: the measured one.
    #[arg(long, value_name = "NNZ")]
    pub lazy_zero: Option<usize>,
    /// Rows padded to whole vectors for ranks that are not (copies of the factors and output).
    #[arg(long, value_enum, default_value_t = PadArg::Auto)]
    pub pad: PadArg,
    /// Seed of the random factor matrices.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Read factors from DIR/factor<n>.npy instead of generating them.
    #[arg(long)]
    pub load_factors: Option<PathBuf>,
    /// Write the factors used to DIR/factor<n>.npy.
    #[arg(long)]
    pub save_factors: Option<PathBuf>,
    /// Write each mode's result to DIR/mttkrp<n>.npy.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Compare every computed mode with the naive oracle; exit 1 on a mismatch.
    #[arg(long)]
    pub check: bool,
    /// Count hardware and software events over each mode's timed calls (perf_event), with
    /// derived GFLOP/s, IPC, bytes and operational intensity (modelled where counters are
    /// unavailable).
    #[arg(long)]
    pub counters: bool,
    /// Write one measurement record per mode: `.csv` appends rows, anything else is a JSON
    /// array. (`--out DIR` also writes each result's record beside it.)
    #[arg(long)]
    pub record: Option<PathBuf>,
    /// Print one JSON document instead of the table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct ModeResult {
    mode: usize,
    fiber_reuse: u64,
    strategy: String,
    kernel: String,
    name: String,
    decode: &'static str,
    min_s: f64,
    median_s: f64,
    max_s: f64,
    gflops: f64,
    check: Option<CheckResult>,
    /// With `--counters`: events over the timed calls, and derived metrics.
    #[serde(skip_serializing_if = "Option::is_none")]
    counters: Option<ModeCounters>,
}

#[derive(Serialize)]
struct ModeCounters {
    /// Timed calls the region covered.
    calls: usize,
    #[serde(flatten)]
    report: CounterReport,
    derived: Derived,
}

#[derive(Serialize)]
struct CheckResult {
    passed: bool,
    /// Worst |diff| / tolerance over the entries (<= 1 passes).
    error_ratio: f64,
}

#[derive(Serialize)]
struct Report {
    file: String,
    order: usize,
    dims: Vec<u64>,
    nnz: usize,
    index_width: &'static str,
    total_bits: u32,
    rank: usize,
    threads: usize,
    pin: PinReport,
    iters: usize,
    build_seconds: Option<alto::format::BuildTimes>,
    workspace_bytes: usize,
    modes: Vec<ModeResult>,
    total_median_s: f64,
    check_passed: Option<bool>,
    /// One measurement record per mode.
    records: Vec<MeasurementRecord>,
}

fn load_factors(dir: &Path, dims: &[u64], rank: usize) -> Result<Vec<Matrix>> {
    dims.iter()
        .enumerate()
        .map(|(n, &d)| {
            let path = dir.join(format!("factor{n}.npy"));
            let m = Matrix::read_npy(&path)?;
            if m.rows() as u64 != d || m.cols() != rank {
                bail!(
                    "{}: factor is {} x {}, expected {d} x {rank}",
                    path.display(),
                    m.rows(),
                    m.cols()
                );
            }
            Ok(m)
        })
        .collect()
}

pub fn run(a: MttkrpArgs) -> Result<Outcome> {
    if a.rank == 0 {
        bail!("--rank must be at least 1");
    }
    if a.iters == 0 {
        bail!("--iters must be at least 1");
    }
    let sync = SyncChoice::from(a.sync);
    let dispatch = super::dispatch_env()?;
    let kernel = dispatch.kernel(a.kernel);
    kernel.resolve(a.rank).context("--kernel")?;
    let decode = a.decode.kind()?.or(dispatch.decode);
    let threads = a.pool.threads()?;
    let (pool, pin) = a.pool.build()?;
    let loaded = load(&a.file, &a.load, threads, &pool)?;
    let t = &loaded.alto;
    alto::memory::mttkrp_plan(t, a.rank).check(a.load.memory.limit(), "lower --rank")?;
    let modes: Vec<usize> = if let ModeArg::One(m) = a.mode {
        if m >= t.order() {
            bail!(
                "--mode {m}: the tensor has modes 0..{} (0-based)",
                t.order() - 1
            );
        }
        vec![m]
    } else {
        (0..t.order()).collect()
    };
    let rank = a.rank;
    let factors: Vec<Matrix> = match &a.load_factors {
        Some(dir) => load_factors(dir, t.dims(), rank)?,
        None => t
            .dims()
            .iter()
            .enumerate()
            .map(|(n, &d)| Matrix::random(d as usize, rank, a.seed.wrapping_add(n as u64)))
            .collect(),
    };
    if let Some(dir) = &a.save_factors {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        for (n, f) in factors.iter().enumerate() {
            f.write_npy(&dir.join(format!("factor{n}.npy")))?;
        }
    }
    if let Some(dir) = &a.out {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let coo_for_check = if a.check {
        Some(match &loaded.coo {
            Some(c) => c.clone(),
            None => t.to_coo(),
        })
    } else {
        None
    };
    let opts = MttkrpOptions {
        sync,
        kernel,
        decode,
        prefetch: a.prefetch,
        lazy_zero: a.lazy_zero,
        pad: a.pad.choice(),
        ..Default::default()
    };
    let mut ws = Workspace::new(t, rank);
    let mut counter_set = a.counters.then(|| CounterSet::open_default(&pool));
    let tensor_name = a.file.file_stem().map_or_else(
        || a.file.display().to_string(),
        |s| s.to_string_lossy().into_owned(),
    );
    let mut results = Vec::new();
    let mut records = Vec::new();
    let mut all_passed = true;
    for &mode in &modes {
        let mut out = Matrix::zeros(t.dims()[mode] as usize, rank);
        let run = mttkrp(t, &factors, mode, &mut out, &opts, &mut ws, &pool)?; // warm-up
                                                                               // The calls are made from inside the pool, as CP-ALS makes them: entering the pool
                                                                               // from outside wakes its workers and the caller once per call (about 0.1-0.3 ms on a
                                                                               // 2-vCPU VM), a cost of how a benchmark calls, not of MTTKRP.
        let mut timed = || -> Result<Vec<f64>> {
            pool.install(|| {
                let mut times = Vec::with_capacity(a.iters);
                for _ in 0..a.iters {
                    let start = Instant::now();
                    mttkrp(t, &factors, mode, &mut out, &opts, &mut ws, &pool)?;
                    times.push(start.elapsed().as_secs_f64());
                }
                Ok(times)
            })
        };
        // The counters cover exactly the timed calls.
        let (times, counts) = match counter_set.as_mut() {
            Some(set) => {
                let (times, report) = set.measure(&mut timed);
                (times?, Some(report))
            }
            None => (timed()?, None),
        };
        let counters = counts.map(|report| {
            let shape = CallShape::of(t, mode, rank, run.sync == ConflictResolution::Pull);
            let model = mttkrp_call_traffic(&shape).times(a.iters as f64);
            ModeCounters {
                calls: a.iters,
                derived: report.derive(Some(&model)),
                report,
            }
        });
        let mut record = MeasurementRecord::new("alto mttkrp");
        record.isa = run.kernel.isa.name().to_string();
        record.kernel = run.name.clone();
        record.threads = threads;
        record.pin = pin.policy.to_string();
        record.pin_backend = pin.backend.to_string();
        record.rank = rank;
        record.tensor = tensor_name.clone();
        record.shape = t.dims().to_vec();
        record.nnz = t.nnz() as u64;
        record.mode = Some(mode);
        record.set_samples(&times);
        let (min, median, max) = (record.min_s, record.median_s, record.max_s);
        let check = coo_for_check.as_ref().map(|coo| -> Result<CheckResult> {
            let want = mttkrp_oracle(coo, &factors, mode)?;
            let err = compare_with_oracle(coo, &factors, mode, &out, &want);
            Ok(CheckResult {
                passed: err <= 1.0,
                error_ratio: err,
            })
        });
        let check = check.transpose()?;
        if let Some(c) = &check {
            all_passed &= c.passed;
        }
        if let Some(dir) = &a.out {
            let path = dir.join(format!("mttkrp{mode}.npy"));
            out.write_npy(&path)?;
            record.write_beside(&path)?;
        }
        records.push(record);
        results.push(ModeResult {
            mode,
            fiber_reuse: t.fiber_reuse(mode),
            strategy: run.sync.to_string(),
            kernel: run.kernel.to_string(),
            name: run.name.clone(),
            decode: run.decode,
            min_s: min,
            median_s: median,
            max_s: max,
            gflops: mttkrp_flops(t.order(), rank, t.nnz()) / median / 1e9,
            check,
            counters,
        });
    }
    let report = Report {
        file: a.file.display().to_string(),
        order: t.order(),
        dims: t.dims().to_vec(),
        nnz: t.nnz(),
        index_width: t.width().name(),
        total_bits: t.layout().total_bits(),
        rank,
        threads,
        pin,
        iters: a.iters,
        build_seconds: loaded.build,
        workspace_bytes: ws.bytes(),
        total_median_s: results.iter().map(|r| r.median_s).sum(),
        check_passed: a.check.then_some(all_passed),
        modes: results,
        records,
    };
    if let Some(path) = &a.record {
        if path.extension().is_some_and(|e| e == "csv") {
            MeasurementRecord::append_csv(path, &report.records)?;
        } else {
            alto::harness::record::write_json(path, &report.records)?;
        }
    }
    if a.json {
        print_out(&(serde_json::to_string_pretty(&report)? + "\n"))?;
    } else {
        print_out(&render(&report))?;
    }
    if !all_passed {
        eprintln!("error: MTTKRP result differs from the oracle (see the check column)");
        return Ok(Outcome::CheckFailed);
    }
    Ok(Outcome::Success)
}

fn render(r: &Report) -> String {
    let mut s = String::new();
    let dims: Vec<String> = r.dims.iter().map(|d| d.to_string()).collect();
    let _ = writeln!(
        s,
        "{}: {} nonzeros, dims {}, {}-bit index in {}; rank {}, {} threads, {} timed iterations",
        r.file,
        r.nnz,
        dims.join(" x "),
        r.total_bits,
        r.index_width,
        r.rank,
        r.threads,
        r.iters
    );
    if let Some(b) = &r.build_seconds {
        let _ = writeln!(s, "build {:.3} s (sort {:.3} s)", b.total, b.sort);
    }
    if r.pin.policy != alto::harness::pool::PinPolicy::None {
        let _ = writeln!(
            s,
            "pinned {} through {} (worker:cpus) {}",
            r.pin.policy,
            r.pin.backend,
            r.pin.summary()
        );
    }
    let _ = writeln!(
        s,
        "\nmode  reuse      kernel                decode  min ms     median ms  GFLOP/s  check"
    );
    for m in &r.modes {
        let check = match &m.check {
            None => "-".to_string(),
            Some(c) if c.passed => format!("ok ({:.2})", c.error_ratio),
            Some(c) => format!("FAILED ({:.3e})", c.error_ratio),
        };
        let _ = writeln!(
            s,
            "{:<5} {:<10} {:<21} {:<7} {:<10.3} {:<10.3} {:<8.2} {}",
            m.mode,
            m.fiber_reuse,
            m.name,
            m.decode,
            m.min_s * 1e3,
            m.median_s * 1e3,
            m.gflops,
            check
        );
    }
    let _ = writeln!(
        s,
        "all modes: {:.3} ms (sum of medians)",
        r.total_median_s * 1e3
    );
    for m in &r.modes {
        let Some(c) = &m.counters else { continue };
        let _ = writeln!(
            s,
            "\ncounters, mode {} ({} timed calls, {} workers, {:.3} ms):",
            m.mode,
            c.calls,
            c.report.threads,
            c.report.wall_s * 1e3
        );
        s.push_str(&c.report.render(&c.derived, "  "));
    }
    s
}
