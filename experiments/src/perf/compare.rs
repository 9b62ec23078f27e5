//! Old-vs-new comparison: both `alto` binaries measured in one run on the same `.tns` files.
//!
//! Each shape is written once as `.tns`; then, for each (shape, rank, threads, kernel), the
//! two binaries run `alto mttkrp FILE --rank R --threads T --iters N --json` alternately
//! (old, new, old, new, ...) `--reps` times each, every document written to its own file and
//! parsed only after the runs (never a parser in the pipe while a run is timed). Per mode, all
//! modes and construction (total and phases) the table gives the median of the runs' medians,
//! their min and max, and old / new (above 1: new is faster).

pub use super::alto_json::{parse_mttkrp_json, BuildSeconds, ModeJson, MttkrpJson, RecordJson};
use super::options::Settings;
use super::report::{commit_line, write_csv};
use crate::measure::Progress;
use alto::harness::record::{min_median_max, rfc3339_utc};
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub const COMPARE_CSV: &str = "compare.csv";
pub const COMPARE_MD: &str = "compare.md";

/// One line of the comparison. Times in ms.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompareRow {
    pub shape: String,
    pub threads: usize,
    pub rank: usize,
    /// `auto` or the ISA passed as `--kernel`.
    pub kernel_choice: String,
    /// `mode 0`, ..., `all modes`, `build total`, `build sort`, ...
    pub what: String,
    pub runs: usize,
    pub old_median_ms: f64,
    pub old_min_ms: f64,
    pub old_max_ms: f64,
    pub new_median_ms: f64,
    pub new_min_ms: f64,
    pub new_max_ms: f64,
    /// old / new: above 1, the new binary is faster.
    pub ratio: f64,
    pub old_kernel: String,
    pub new_kernel: String,
}

/// One case's documents, old and new.
pub struct Case {
    pub shape: String,
    pub threads: usize,
    pub rank: usize,
    pub kernel_choice: String,
    pub old: Vec<MttkrpJson>,
    pub new: Vec<MttkrpJson>,
}

/// The rows of one case: each mode, all modes, then construction.
pub fn case_rows(c: &Case) -> Vec<CompareRow> {
    type Get = Box<dyn Fn(&MttkrpJson) -> Option<f64>>;
    let mut items: Vec<(String, Get, bool)> = Vec::new();
    let modes = c.old.first().map_or(0, |d| d.modes.len());
    for k in 0..modes {
        items.push((
            format!("mode {}", c.old[0].modes[k].mode),
            Box::new(move |d: &MttkrpJson| d.modes.get(k).map(|m| m.median_s)),
            true,
        ));
    }
    items.push((
        "all modes".into(),
        Box::new(|d| Some(d.total_median_s)),
        false,
    ));
    type Phase = (&'static str, fn(&BuildSeconds) -> f64);
    let phases: [Phase; 6] = [
        ("total", |b| b.total),
        ("encode", |b| b.encode),
        ("sort", |b| b.sort),
        ("merge", |b| b.merge),
        ("partition", |b| b.partition),
        ("flags", |b| b.flags),
    ];
    for (name, f) in phases {
        items.push((
            format!("build {name}"),
            Box::new(move |d| d.build_seconds.as_ref().map(f)),
            false,
        ));
    }
    let mut rows = Vec::new();
    for (k, (what, get, is_mode)) in items.into_iter().enumerate() {
        let col = |docs: &[MttkrpJson]| -> Option<(f64, f64, f64)> {
            let v: Option<Vec<f64>> = docs.iter().map(&get).collect();
            v.filter(|v| !v.is_empty()).map(|v| min_median_max(&v))
        };
        let (Some(o), Some(n)) = (col(&c.old), col(&c.new)) else {
            continue;
        };
        if o.1 == 0.0 && n.1 == 0.0 {
            continue; // a phase neither side has (`encode` happens inside the radix sort)
        }
        let kernel = |docs: &[MttkrpJson]| {
            if is_mode {
                docs.first()
                    .and_then(|d| d.modes.get(k))
                    .map_or(String::new(), |m| {
                        if m.name.is_empty() {
                            m.kernel.clone()
                        } else {
                            m.name.clone()
                        }
                    })
            } else {
                String::new()
            }
        };
        rows.push(CompareRow {
            shape: c.shape.clone(),
            threads: c.threads,
            rank: c.rank,
            kernel_choice: c.kernel_choice.clone(),
            what,
            runs: c.old.len().min(c.new.len()),
            old_median_ms: o.1 * 1e3,
            old_min_ms: o.0 * 1e3,
            old_max_ms: o.2 * 1e3,
            new_median_ms: n.1 * 1e3,
            new_min_ms: n.0 * 1e3,
            new_max_ms: n.2 * 1e3,
            ratio: if n.1 > 0.0 { o.1 / n.1 } else { f64::NAN },
            old_kernel: kernel(&c.old),
            new_kernel: kernel(&c.new),
        });
    }
    rows
}

/// Runs the comparison into `s.out`.
pub fn run(s: &Settings, progress: &Progress) -> Result<()> {
    let old = s.compare.clone().expect("compare mode");
    for (flag, p) in [("--compare", &old), ("--new", &s.new)] {
        if !p.is_file() {
            bail!(
                "{flag}: {} is not a file (build the new side with `cargo build --release`, or \
                 name the binaries explicitly)",
                p.display()
            );
        }
    }
    // Absolute paths in the report (and for the runs, whatever the working directory).
    let old = std::fs::canonicalize(&old).unwrap_or(old);
    let new = std::fs::canonicalize(&s.new).unwrap_or_else(|_| s.new.clone());
    let (work, temporary) = match &s.work {
        Some(w) => (w.clone(), false),
        None => (
            std::env::temp_dir().join(format!("alto-perf-compare-{}", std::process::id())),
            true,
        ),
    };
    let json_dir = work.join("json");
    std::fs::create_dir_all(&json_dir)
        .with_context(|| format!("creating {}", json_dir.display()))?;
    let result = compare_in(s, &old, &new, &work, &json_dir, progress);
    if temporary {
        let _ = std::fs::remove_dir_all(&work);
    }
    result
}

fn compare_in(
    s: &Settings,
    old: &Path,
    new: &Path,
    work: &Path,
    json_dir: &Path,
    progress: &Progress,
) -> Result<()> {
    let kernels: Vec<&str> = s.kernels.iter().map(|k| k.label).collect();
    let per_shape = s.ranks.len() * s.threads.len() * kernels.len() * s.reps * 2;
    let bar = progress.bar(
        (s.shapes.len() * per_shape) as u64,
        "{prefix:>12} [{bar:30}] {pos}/{len} {msg} ({elapsed}, eta {eta})",
    );
    let mut rows = Vec::new();
    let mut stamps: (Option<RecordJson>, Option<RecordJson>) = (None, None);
    for spec in &s.shapes {
        bar.set_prefix(spec.name);
        let tns = work.join(format!("{}-n{}-s{}.tns", spec.name, spec.nnz, spec.seed));
        if !tns.exists() {
            bar.set_message("writing .tns");
            let tmp = tns.with_extension("tns.partial");
            alto::io::tns::write_tns(&tmp, &spec.generate()?)?;
            std::fs::rename(&tmp, &tns).with_context(|| format!("writing {}", tns.display()))?;
        }
        for &rank in &s.ranks {
            for &threads in &s.threads {
                for &kernel in &kernels {
                    bar.set_message(format!("rank {rank} t={threads} {kernel}"));
                    let stem = format!("{}-r{rank}-t{threads}-{kernel}", spec.name);
                    let mut files: [Vec<PathBuf>; 2] = [Vec::new(), Vec::new()];
                    for rep in 0..s.reps {
                        for (side, bin) in [(0, old), (1, new)] {
                            let label = ["old", "new"][side];
                            let out = json_dir.join(format!("{stem}-{label}-{rep}.json"));
                            run_alto(bin, &tns, rank, threads, kernel, s.iters, &out)?;
                            files[side].push(out);
                            bar.inc(1);
                        }
                    }
                    let parse = |fs: &[PathBuf]| -> Result<Vec<MttkrpJson>> {
                        fs.iter()
                            .map(|f| {
                                let text = std::fs::read_to_string(f)
                                    .with_context(|| format!("reading {}", f.display()))?;
                                parse_mttkrp_json(&text).with_context(|| f.display().to_string())
                            })
                            .collect()
                    };
                    let case = Case {
                        shape: spec.name.to_string(),
                        threads,
                        rank,
                        kernel_choice: kernel.to_string(),
                        old: parse(&files[0])?,
                        new: parse(&files[1])?,
                    };
                    stamps.0 = stamps.0.or_else(|| case.old[0].records.first().cloned());
                    stamps.1 = stamps.1.or_else(|| case.new[0].records.first().cloned());
                    let case_rows = case_rows(&case);
                    if let Some(all) = case_rows.iter().find(|r| r.what == "all modes") {
                        progress.log(&format!(
                            "{stem}: all modes old {:.3} ms, new {:.3} ms, old/new {:.2}",
                            all.old_median_ms, all.new_median_ms, all.ratio
                        ));
                    }
                    rows.extend(case_rows);
                }
            }
        }
    }
    bar.finish_and_clear();
    write_csv(&s.out.join(COMPARE_CSV), &rows)?;
    let md = markdown(s, old, new, &stamps, &rows);
    let path = s.out.join(COMPARE_MD);
    std::fs::write(&path, md).with_context(|| format!("writing {}", path.display()))?;
    progress.log(&format!(
        "wrote {} and {}",
        s.out.join(COMPARE_CSV).display(),
        path.display()
    ));
    Ok(())
}

/// One `alto mttkrp` run, its stdout into `out` (stderr beside it); an error with the tail of
/// stderr when it fails.
fn run_alto(
    bin: &Path,
    tns: &Path,
    rank: usize,
    threads: usize,
    kernel: &str,
    iters: usize,
    out: &Path,
) -> Result<()> {
    let stdout =
        std::fs::File::create(out).with_context(|| format!("creating {}", out.display()))?;
    let err_path = out.with_extension("stderr");
    let stderr = std::fs::File::create(&err_path)
        .with_context(|| format!("creating {}", err_path.display()))?;
    let mut cmd = Command::new(bin);
    cmd.arg("mttkrp")
        .arg(tns)
        .args(["--rank", &rank.to_string()])
        .args(["--threads", &threads.to_string()])
        .args(["--iters", &iters.to_string()])
        .arg("--json");
    if kernel != "auto" {
        cmd.args(["--kernel", kernel]);
    }
    let status = cmd
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .status()
        .with_context(|| format!("running {}", bin.display()))?;
    if !status.success() {
        let err = std::fs::read_to_string(&err_path).unwrap_or_default();
        let tail: Vec<&str> = err.lines().rev().take(5).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        bail!(
            "{} mttkrp {} --rank {rank} --threads {threads} failed ({status}): {}",
            bin.display(),
            tns.display(),
            tail.join(" / ")
        );
    }
    Ok(())
}

fn stamp_line(r: &Option<RecordJson>) -> String {
    r.as_ref().map_or("unknown".into(), |r| {
        let dirty = if r.git_dirty == "true" {
            " + uncommitted changes"
        } else {
            ""
        };
        format!("{}{dirty}", r.git_commit)
    })
}

/// The comparison as a markdown document.
pub fn markdown(
    s: &Settings,
    old: &Path,
    new: &Path,
    stamps: &(Option<RecordJson>, Option<RecordJson>),
    rows: &[CompareRow],
) -> String {
    let mut t = String::new();
    let _ = writeln!(t, "# Old vs. new `alto mttkrp`, one interleaved run\n");
    let _ = writeln!(t, "- Date: {}", rfc3339_utc(std::time::SystemTime::now()));
    let _ = writeln!(
        t,
        "- Old: `{}`, commit {}",
        old.display(),
        stamp_line(&stamps.0)
    );
    let _ = writeln!(
        t,
        "- New: `{}`, commit {}",
        new.display(),
        stamp_line(&stamps.1)
    );
    let cpu = stamps.1.as_ref().map_or("?", |r| r.cpu_model.as_str());
    let _ = writeln!(t, "- Machine: {cpu}; suite built from {}", commit_line());
    let _ = writeln!(
        t,
        "- Per case: {} runs of each binary, alternating old, new, old, new...; each run is \
         `alto mttkrp FILE --rank R --threads T --iters {} --json` (one warm-up, then {} timed \
         calls per mode; its median per mode). Below: median of the runs' medians [min, max \
         over runs], in ms; old / new above 1 means the new binary is faster.{}",
        s.reps,
        s.iters,
        s.iters,
        s.alto_isa_env
            .as_ref()
            .map_or(String::new(), |v| format!(" Both ran with ALTO_ISA={v}."))
    );
    let _ = writeln!(t, "\nShapes:\n");
    for sh in &s.shapes {
        let _ = writeln!(t, "- `{}`: `{}`", sh.name, sh.gen_command());
    }
    let _ = writeln!(
        t,
        "\n| shape | threads | rank | kernel | what | old ms | new ms | old / new | kernel old -> new |"
    );
    let _ = writeln!(t, "|---|---|---|---|---|---|---|---|---|");
    for r in rows {
        let kernels = if r.old_kernel.is_empty() {
            String::new()
        } else {
            format!("{} -> {}", r.old_kernel, r.new_kernel)
        };
        let _ = writeln!(
            t,
            "| {} | {} | {} | {} | {} | {:.3} [{:.3}, {:.3}] | {:.3} [{:.3}, {:.3}] | {:.2}x | {} |",
            r.shape,
            r.threads,
            r.rank,
            r.kernel_choice,
            r.what,
            r.old_median_ms,
            r.old_min_ms,
            r.old_max_ms,
            r.new_median_ms,
            r.new_min_ms,
            r.new_max_ms,
            r.ratio,
            kernels
        );
    }
    t
}
