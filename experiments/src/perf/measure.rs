//! The in-process measurements: construction per (shape, threads) and MTTKRP per (shape,
//! threads, rank, mode, kernel), every kernel's result checked against the scalar kernel's
//! before it is timed, so a wrong kernel cannot post a time.

use super::machine::Machine;
use super::options::Settings;
pub use super::rows::{dims_str, row_line, BuildRow, PerfRow};
use super::shapes::ShapeSpec;
use crate::measure::Progress;
use alto::dispatch::KernelChoice;
use alto::format::{AnyAlto, BuildOptions, BuildTimes};
use alto::harness::counters::{CounterSet, EventGroup, EventSource, EventSpec, HwEvent, CYCLES};
use alto::harness::model::{mttkrp_call_traffic, CallShape};
use alto::harness::pool::build_pool;
use alto::harness::record::min_median_max;
use alto::mttkrp::{
    mttkrp, mttkrp_flops, mttkrp_profiled, ConflictResolution, MttkrpOptions, PhaseTimes, Workspace,
};
use alto::Matrix;
use alto_kernels::Isa;
use anyhow::Result;
use std::time::Instant;

/// Everything measured.
#[derive(Clone, Debug, Default)]
pub struct Results {
    pub rows: Vec<PerfRow>,
    pub builds: Vec<BuildRow>,
    /// How cycles were obtained (the same for every row).
    pub cycles_note: String,
    pub seconds: f64,
}

/// Profiled calls per measurement for the phase breakdown (after the timed ones).
pub const PHASE_REPS: usize = 3;

/// A pool and the tensor built for it.
struct Built {
    threads: usize,
    pool: rayon::ThreadPool,
    tensor: AnyAlto,
    cycles: Option<CounterSet>,
}

pub fn run(s: &Settings, machine: &Machine, progress: &Progress) -> Result<Results> {
    let start = Instant::now();
    let total: u64 = s
        .shapes
        .iter()
        .map(|sh| (sh.order() * s.ranks.len() * s.threads.len() * s.kernels.len()) as u64)
        .sum();
    let bar = progress.bar(
        total,
        "{prefix:>12} [{bar:30}] {pos}/{len} {msg} ({elapsed}, eta {eta})",
    );
    for note in &s.skipped_isas {
        progress.log(&format!("--isa {note}"));
    }
    let mut res = Results::default();
    for spec in &s.shapes {
        bar.set_prefix(spec.name);
        bar.set_message("generating");
        let coo = spec.generate()?;
        let mut built = Vec::new();
        for &t in &s.threads {
            bar.set_message(format!("building t={t}"));
            let (b, row) = build(spec, &coo, t, s.reps)?;
            progress.log(&format!(
                "{} t={t}: built in {:.1} ms (sort {:.1}, merge {:.1}, partition {:.1}, flags \
                 {:.1}; median of {}), {} nonzeros",
                spec.name,
                row.total_ms,
                row.sort_ms,
                row.merge_ms,
                row.partition_ms,
                row.flags_ms,
                s.reps,
                row.nnz
            ));
            res.builds.push(row);
            built.push(b);
        }
        drop(coo);
        if res.cycles_note.is_empty() {
            res.cycles_note = cycles_note(&built[0], machine);
        }
        for &rank in &s.ranks {
            measure_rank(
                s,
                machine,
                spec,
                &mut built,
                rank,
                progress,
                &bar,
                &mut res.rows,
            )?;
        }
    }
    bar.finish_and_clear();
    res.seconds = start.elapsed().as_secs_f64();
    Ok(res)
}

/// Builds `coo` at `threads` (segments = threads) `reps` times.
fn build(
    spec: &ShapeSpec,
    coo: &alto::CooTensor,
    threads: usize,
    reps: usize,
) -> Result<(Built, BuildRow)> {
    let pool = build_pool(threads)?;
    let opts = BuildOptions {
        partitions: threads,
        ..Default::default()
    };
    let mut times: Vec<BuildTimes> = Vec::with_capacity(reps);
    let mut last = None;
    for _ in 0..reps {
        drop(last.take()); // free the previous build first
        let (t, bt) = pool.install(|| AnyAlto::build(coo, &opts))?;
        times.push(bt);
        last = Some(t);
    }
    let tensor = last.expect("reps >= 1");
    let med = |f: fn(&BuildTimes) -> f64| {
        let v: Vec<f64> = times.iter().map(f).collect();
        min_median_max(&v)
    };
    let (tmin, tmed, tmax) = med(|b| b.total);
    let row = BuildRow {
        shape: spec.name.to_string(),
        dims: dims_str(tensor.dims()),
        nnz_generated: coo.nnz() as u64,
        nnz: tensor.nnz() as u64,
        threads,
        reps,
        encode_ms: med(|b| b.encode).1 * 1e3,
        sort_ms: med(|b| b.sort).1 * 1e3,
        merge_ms: med(|b| b.merge).1 * 1e3,
        partition_ms: med(|b| b.partition).1 * 1e3,
        flags_ms: med(|b| b.flags).1 * 1e3,
        total_ms: tmed * 1e3,
        total_min_ms: tmin * 1e3,
        total_max_ms: tmax * 1e3,
    };
    let cycles = open_cycles(&pool);
    Ok((
        Built {
            threads,
            pool,
            tensor,
            cycles,
        },
        row,
    ))
}

fn cycles_spec() -> EventSpec {
    EventSpec {
        name: CYCLES.into(),
        group: EventGroup::Hardware,
        weight: 1.0,
        source: EventSource::Hardware(HwEvent::Cycles),
    }
}

/// A per-worker cycle counter on `pool`, if perf events work here.
fn open_cycles(pool: &rayon::ThreadPool) -> Option<CounterSet> {
    let set = CounterSet::open(pool, vec![cycles_spec()]);
    set.any_open(EventGroup::Hardware).then_some(set)
}

/// How cycles are obtained, for the output.
fn cycles_note(b: &Built, machine: &Machine) -> String {
    if b.cycles.is_some() {
        return "measured: perf `cycles` summed over the workers, over the timed calls".into();
    }
    let mut set = CounterSet::open(&b.pool, vec![cycles_spec()]);
    let ((), report) = set.measure(|| ());
    let why = report
        .event(CYCLES)
        .and_then(|e| e.reason())
        .unwrap_or("unavailable")
        .to_string();
    format!(
        "estimated: median time x {:.3} GHz nominal clock ({}) x threads (perf `cycles`: {why})",
        machine.nominal_ghz, machine.ghz_source
    )
}

#[allow(clippy::too_many_arguments)]
fn measure_rank(
    s: &Settings,
    machine: &Machine,
    spec: &ShapeSpec,
    built: &mut [Built],
    rank: usize,
    progress: &Progress,
    bar: &indicatif::ProgressBar,
    rows: &mut Vec<PerfRow>,
) -> Result<()> {
    let dims = built[0].tensor.dims().to_vec();
    let factors: Vec<Matrix> = dims
        .iter()
        .enumerate()
        .map(|(m, &d)| Matrix::random(d as usize, rank, 10 + m as u64))
        .collect();
    let mut workspaces: Vec<Workspace> = built
        .iter()
        .map(|b| Workspace::new(&b.tensor, rank))
        .collect();
    let scalar = MttkrpOptions {
        kernel: KernelChoice::Isa(Isa::Scalar),
        ..Default::default()
    };
    for (mode, &rows_of_mode) in dims.iter().enumerate() {
        let rows_of_mode = rows_of_mode as usize;
        bar.set_message(format!("rank {rank} mode {mode}"));
        // The reference: the scalar kernel at the most threads (the fastest way to get it).
        let last = built.len() - 1;
        let mut want = Matrix::zeros(rows_of_mode, rank);
        let b = &built[last];
        mttkrp(
            &b.tensor,
            &factors,
            mode,
            &mut want,
            &scalar,
            &mut workspaces[last],
            &b.pool,
        )?;
        let scale = want.as_slice().iter().fold(1.0f64, |a, x| a.max(x.abs()));
        for (b, ws) in built.iter_mut().zip(workspaces.iter_mut()) {
            for sel in &s.kernels {
                let opts = MttkrpOptions {
                    kernel: sel.choice,
                    ..Default::default()
                };
                let t = &b.tensor;
                let mut row =
                    PerfRow::blank(spec.name, t.dims(), t.nnz(), t.width().name(), b.threads);
                (row.rank, row.mode, row.isa) = (rank, mode, sel.label.to_string());
                if let Err(e) = sel.choice.resolve(rank) {
                    row.status = format!("skipped: {e}");
                    rows.push(row);
                    bar.inc(1);
                    continue;
                }
                let mut out = Matrix::zeros(rows_of_mode, rank);
                let run = mttkrp(&b.tensor, &factors, mode, &mut out, &opts, ws, &b.pool)?;
                row.kernel = run.name.clone();
                let diff = out.max_abs_diff(&want);
                if diff.is_nan() || diff > 1e-10 * scale {
                    row.status = format!("FAILED: differs from the scalar kernel by {diff:e}");
                    progress.log(&format!(
                        "{} t={} r={rank} m={mode} {}: {}",
                        spec.name, b.threads, run.name, row.status
                    ));
                    rows.push(row);
                    bar.inc(1);
                    continue;
                }
                // Calls made from inside the pool, as CP-ALS makes them (see `alto mttkrp`).
                let pool = &b.pool;
                let mut timed = || -> Result<Vec<f64>> {
                    pool.install(|| {
                        let mut v = Vec::with_capacity(s.reps);
                        for _ in 0..s.reps {
                            let t0 = Instant::now();
                            mttkrp(&b.tensor, &factors, mode, &mut out, &opts, ws, pool)?;
                            v.push(t0.elapsed().as_secs_f64());
                        }
                        Ok(v)
                    })
                };
                let (times, cycles) = match b.cycles.as_mut() {
                    Some(set) => {
                        let (t, report) = set.measure(&mut timed);
                        (t?, report.event(CYCLES).and_then(|e| e.scaled()))
                    }
                    None => (timed()?, None),
                };
                let phases = b.pool.install(|| -> Result<Vec<PhaseTimes>> {
                    let mut phases = Vec::with_capacity(PHASE_REPS);
                    for _ in 0..PHASE_REPS {
                        let mut p = PhaseTimes::default();
                        let o = &mut out;
                        mttkrp_profiled(
                            &b.tensor,
                            &factors,
                            mode,
                            o,
                            &opts,
                            ws,
                            &b.pool,
                            Some(&mut p),
                        )?;
                        phases.push(p);
                    }
                    Ok(phases)
                })?;
                fill_row(&mut row, machine, b, &run, &times, cycles, &phases);
                progress.log(&row_line(&row));
                rows.push(row);
                bar.inc(1);
            }
        }
    }
    Ok(())
}

fn fill_row(
    row: &mut PerfRow,
    machine: &Machine,
    b: &Built,
    run: &alto::mttkrp::MttkrpRun,
    times: &[f64],
    cycles: Option<f64>,
    phases: &[PhaseTimes],
) {
    let t = &b.tensor;
    let nnz = t.nnz().max(1) as f64;
    let (min, med, max) = min_median_max(times);
    row.reps = times.len();
    (row.min_ms, row.median_ms, row.max_ms) = (min * 1e3, med * 1e3, max * 1e3);
    let flops = mttkrp_flops(t.order(), row.rank, t.nnz());
    row.gflops = flops / med / 1e9;
    (row.cycles_per_nnz, row.cycles_source) = match cycles {
        Some(c) => (c / times.len() as f64 / nnz, "measured".into()),
        None => (
            med * machine.nominal_ghz * 1e9 * b.threads as f64 / nnz,
            "estimated".into(),
        ),
    };
    let pull = run.sync == ConflictResolution::Pull;
    let traffic = mttkrp_call_traffic(&CallShape::of(t, row.mode, row.rank, pull));
    row.model_bytes_per_nnz = traffic.bytes_best / nnz;
    row.model_bytes_per_nnz_worst = traffic.bytes_worst / nnz;
    let isa = run.kernel.isa.name();
    if let Some((bound, roof)) = machine
        .bounds
        .bound(flops, traffic.bytes_best, isa, b.threads)
    {
        row.roofline_bound_ms = bound * 1e3;
        row.roofline_pct = bound / med * 100.0;
        row.roofline_roof = roof.into();
    }
    let phase_med = |f: fn(&PhaseTimes) -> f64| {
        let v: Vec<f64> = phases.iter().map(f).collect();
        min_median_max(&v).1 * 1e3
    };
    row.zero_output_ms = phase_med(|p| p.zero_output);
    row.zero_staging_ms = phase_med(|p| p.zero_staging);
    row.kernel_ms = phase_med(|p| p.kernel);
    row.pull_ms = phase_med(|p| p.pull);
    row.fork_join_ms = phase_med(|p| p.fork_join);
    row.other_ms = phase_med(|p| p.other());
}
