//! `alto cpd --model apr`: CP-APR with the log-likelihood, KKT violation, inner iterations and
//! the Phi / rest split of every outer iteration (a progress line on stderr on long runs);
//! writes `lambda.npy` and `factor{n}.npy` with `--out`.

use super::choices::CpdKernel;
use super::cpd::CpdArgs;
use super::{load, print_out, Outcome};
use alto::cpd::apr::{
    cp_apr_observed, AprIterStats, AprModel, AprOptions, PhiKind, PhiOptions,
    DEFAULT_APR_MAX_ITERS, DEFAULT_APR_TOL, DEFAULT_EPSILON, DEFAULT_INNER_ITERS, DEFAULT_KAPPA,
    DEFAULT_KAPPA_TOL,
};
use alto::dispatch::KernelChoice;
use alto::harness::pool::{PinPolicy, PinReport};
use alto::matrix::Matrix;
use alto::mttkrp::SyncChoice;
use alto::AltoError;
use anyhow::{bail, Context, Result};
use serde::Serialize;
use std::fmt::Write;
use std::ops::ControlFlow;
use std::path::Path;
use std::time::{Duration, Instant};

/// Runs longer than this get a progress line on stderr, at most once per this interval.
const PROGRESS_EVERY: Duration = Duration::from_secs(2);

#[derive(Serialize)]
struct Report {
    file: String,
    model: &'static str,
    order: usize,
    dims: Vec<u64>,
    nnz: usize,
    rank: usize,
    threads: usize,
    pin: PinReport,
    max_iters: usize,
    inner_iters: usize,
    tol: f64,
    kappa: f64,
    kappa_tol: f64,
    epsilon: f64,
    seed: u64,
    init: Option<String>,
    load_seconds: f64,
    non_integer_values: usize,
    phi: Vec<String>,
    iterations: Vec<AprIterStats>,
    iters_run: usize,
    converged: bool,
    final_loglik: f64,
    total_seconds: f64,
    phi_seconds: f64,
    rest_seconds: f64,
    seconds_per_iter: f64,
    phi_seconds_per_iter: f64,
    rest_seconds_per_iter: f64,
    out_dir: Option<String>,
}

/// Maps a library option name to its flag: CP-APR's own, then those shared with CP-ALS.
fn flag(option: &str) -> &str {
    match option {
        "inner_iters" => "--inner",
        "kappa_tol" => "--kappa-tol",
        "kappa" => "--kappa",
        "epsilon" => "--epsilon",
        "init" => "--init",
        other => super::cpd::flag(other),
    }
}

/// The 1-based line of the `k`-th (0-based) data line of a `.tns` file (blank lines and `#`
/// comments skipped, as the reader does).
fn data_line(path: &Path, k: usize) -> Option<u64> {
    let text = std::fs::read(path).ok()?;
    let mut seen = 0usize;
    for (no, line) in text.split(|&b| b == b'\n').enumerate() {
        let first = line
            .split(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\x0b' | b'\x0c'))
            .find(|t| !t.is_empty());
        match first {
            None => continue,
            Some(t) if t[0] == b'#' => continue,
            Some(_) => {}
        }
        if seen == k {
            return Some(no as u64 + 1);
        }
        seen += 1;
    }
    None
}

/// Refuses negative values (the library's [`alto::cpd::apr::check_counts`], the error naming
/// the file and line) and counts the non-integer ones.
fn check_counts(path: &Path, values: &[f64], text: bool) -> Result<usize> {
    if let Err(AltoError::NegativeValue { index: k, value: v }) =
        alto::cpd::apr::check_counts(values)
    {
        match (text, data_line(path, k)) {
            (true, Some(line)) => bail!(
                "{}:{line}: value {v} is negative; CP-APR (--model apr) fits nonnegative counts",
                path.display()
            ),
            _ => bail!(
                "{}: nonzero {k} holds the negative value {v}; CP-APR (--model apr) fits \
                 nonnegative counts",
                path.display()
            ),
        }
    }
    let fractional: Vec<usize> = values
        .iter()
        .enumerate()
        .filter(|(_, v)| v.fract() != 0.0)
        .map(|(k, _)| k)
        .collect();
    if let Some(&k) = fractional.first() {
        let at = match (text, data_line(path, k)) {
            (true, Some(line)) => format!("line {line}"),
            _ => format!("nonzero {k}"),
        };
        eprintln!(
            "warning: {}: {} values are not integers (the first at {at}: {}); CP-APR fits them \
             as if they were counts",
            path.display(),
            fractional.len(),
            values[k]
        );
    }
    Ok(fractional.len())
}

fn read_init(dir: &Path, dims: &[u64], rank: usize) -> Result<Vec<Matrix>> {
    let mut init = Vec::with_capacity(dims.len());
    for (n, &d) in dims.iter().enumerate() {
        let p = dir.join(format!("factor{n}.npy"));
        let m = Matrix::read_npy(&p).with_context(|| format!("--init: {}", p.display()))?;
        if m.rows() as u64 != d || m.cols() != rank {
            bail!(
                "--init: {} is {} x {}, expected {d} x {rank}",
                p.display(),
                m.rows(),
                m.cols()
            );
        }
        init.push(m);
    }
    Ok(init)
}

pub fn run(a: CpdArgs) -> Result<Outcome> {
    let opts_base = AprOptions::new(a.rank);
    let iters = a.iters.unwrap_or(DEFAULT_APR_MAX_ITERS);
    let tol = a.tol.unwrap_or(DEFAULT_APR_TOL);
    let inner = a.inner.unwrap_or(DEFAULT_INNER_ITERS);
    let kappa = a.kappa.unwrap_or(DEFAULT_KAPPA);
    let kappa_tol = a.kappa_tol.unwrap_or(DEFAULT_KAPPA_TOL);
    let epsilon = a.epsilon.unwrap_or(DEFAULT_EPSILON);
    if a.row_kernel != "auto" {
        bail!("--row-kernel applies to --model als only");
    }
    let dispatch = super::dispatch_env()?;
    let kind = match a.kernel {
        CpdKernel::Phi(k) => k,
        CpdKernel::Mttkrp(KernelChoice::Auto) => PhiKind::default(),
        CpdKernel::Mttkrp(k) => PhiKind::Mttkrp(dispatch.kernel(k)),
    };
    if let PhiKind::Mttkrp(k) = kind {
        k.resolve(a.rank).context("--kernel")?;
    }
    let opts = AprOptions {
        max_iters: iters,
        inner_iters: inner,
        tol,
        kappa,
        kappa_tol,
        epsilon,
        seed: a.seed,
        phi: PhiOptions {
            kind,
            sync: SyncChoice::from(a.sync),
            decode: dispatch.decode,
            min_fiber_reuse: None,
        },
        ..opts_base
    };
    // Options that need no tensor are checked before loading it (against a tensor large
    // enough for any rank; the rank's upper bound is checked once the tensor is loaded).
    let huge = [u64::MAX, u64::MAX];
    if let Err(AltoError::AprOption { option, reason }) =
        alto::cpd::apr::validate(&huge, usize::MAX, &opts)
    {
        bail!("{}: {reason}", flag(option));
    }
    let threads = a.pool.threads()?;
    let (pool, pin) = a.pool.build()?;
    let start = Instant::now();
    let loaded = load(&a.file, &a.load, threads, &pool)?;
    let load_seconds = start.elapsed().as_secs_f64();
    let t = &loaded.alto;
    let non_integer = match &loaded.coo {
        Some(coo) => check_counts(&a.file, coo.values(), true)?,
        None => check_counts(&a.file, t.values(), false)?,
    };
    alto::memory::cp_apr_plan(t, a.rank, kind).check(a.load.memory.limit(), "lower --rank")?;
    let init = match &a.init {
        Some(dir) => read_init(dir, t.dims(), a.rank)?,
        None => alto::cpd::initial_factors(t.dims(), a.rank, a.seed),
    };
    if let Some(dir) = &a.out {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let begun = Instant::now();
    let mut last_line = begun;
    let mut observer = |s: &AprIterStats| {
        let now = Instant::now();
        if now - begun >= PROGRESS_EVERY && now - last_line >= PROGRESS_EVERY {
            last_line = now;
            eprintln!(
                "iteration {}: log-likelihood {:.10e}, KKT violation {:.3e}, {} inner, {:.1} s",
                s.iter + 1,
                s.loglik,
                s.kkt,
                s.inner_iters,
                (now - begun).as_secs_f64()
            );
        }
        ControlFlow::Continue(())
    };
    let model = match cp_apr_observed(t, init, &opts, &pool, &mut observer) {
        Ok(m) => m,
        Err(AltoError::AprOption { option, reason }) => bail!("{}: {reason}", flag(option)),
        Err(e) => return Err(e.into()),
    };
    if let Some(dir) = &a.out {
        model.write_npy(dir)?;
    }
    let report = report(
        &a,
        &opts,
        t,
        (threads, pin),
        load_seconds,
        non_integer,
        &model,
    );
    if a.json {
        print_out(&(serde_json::to_string_pretty(&report)? + "\n"))?;
    } else {
        print_out(&render(&report))?;
    }
    Ok(Outcome::Success)
}

fn report(
    a: &CpdArgs,
    o: &AprOptions,
    t: &alto::AnyAlto,
    (threads, pin): (usize, PinReport),
    load_seconds: f64,
    non_integer_values: usize,
    model: &AprModel,
) -> Report {
    let h = &model.history;
    let k = h.len().max(1) as f64;
    let total: f64 = h.iter().map(|s| s.seconds).sum();
    let phi: f64 = h.iter().map(|s| s.phi_seconds).sum();
    let rest: f64 = h.iter().map(|s| s.rest_seconds).sum();
    Report {
        file: a.file.display().to_string(),
        model: "apr",
        order: t.order(),
        dims: t.dims().to_vec(),
        nnz: t.nnz(),
        rank: a.rank,
        threads,
        pin,
        max_iters: o.max_iters,
        inner_iters: o.inner_iters,
        tol: o.tol,
        kappa: o.kappa,
        kappa_tol: o.kappa_tol,
        epsilon: o.epsilon,
        seed: a.seed,
        init: a.init.as_ref().map(|d| d.display().to_string()),
        load_seconds,
        non_integer_values,
        phi: model.phi_runs.iter().map(|r| r.name.clone()).collect(),
        iterations: h.clone(),
        iters_run: h.len(),
        converged: model.converged,
        final_loglik: model.final_loglik(),
        total_seconds: total,
        phi_seconds: phi,
        rest_seconds: rest,
        seconds_per_iter: total / k,
        phi_seconds_per_iter: phi / k,
        rest_seconds_per_iter: rest / k,
        out_dir: a.out.as_ref().map(|d| d.display().to_string()),
    }
}

fn render(r: &Report) -> String {
    let mut s = String::new();
    let dims: Vec<String> = r.dims.iter().map(|d| d.to_string()).collect();
    let _ = writeln!(
        s,
        "{}: {} nonzeros, dims {}; CP-APR rank {}, {} threads, at most {} outer x {} inner \
         iterations, tol {:e}, kappa {:e}, kappa-tol {:e}, epsilon {:e}, seed {}",
        r.file,
        r.nnz,
        dims.join(" x "),
        r.rank,
        r.threads,
        r.max_iters,
        r.inner_iters,
        r.tol,
        r.kappa,
        r.kappa_tol,
        r.epsilon,
        r.seed
    );
    if r.pin.policy != PinPolicy::None {
        let _ = writeln!(
            s,
            "pinned {} through {} (worker:cpus) {}",
            r.pin.policy,
            r.pin.backend,
            r.pin.summary()
        );
    }
    let phis: Vec<String> = r
        .phi
        .iter()
        .enumerate()
        .map(|(m, n)| format!("{m}:{n}"))
        .collect();
    let _ = writeln!(
        s,
        "load {:.3} s; Phi per mode {}",
        r.load_seconds,
        phis.join(" ")
    );
    let _ = writeln!(
        s,
        "\niter  log-likelihood        KKT viol.   inner  total ms   Phi ms     rest ms"
    );
    for it in &r.iterations {
        let _ = writeln!(
            s,
            "{:<5} {:<21.14e} {:<11.3e} {:<6} {:<10.3} {:<10.3} {:<8.3}",
            it.iter + 1,
            it.loglik,
            it.kkt,
            it.inner_iters,
            it.seconds * 1e3,
            it.phi_seconds * 1e3,
            it.rest_seconds * 1e3
        );
    }
    let why = if r.converged {
        "KKT violation < tol in every mode"
    } else {
        "iteration cap"
    };
    let _ = writeln!(
        s,
        "\nfinal log-likelihood {:.14e} after {} iterations ({why})",
        r.final_loglik, r.iters_run
    );
    let _ = writeln!(
        s,
        "per iteration (mean): {:.3} ms = Phi {:.3} ms + rest {:.3} ms",
        r.seconds_per_iter * 1e3,
        r.phi_seconds_per_iter * 1e3,
        r.rest_seconds_per_iter * 1e3
    );
    super::cpd::write_outputs_line(&mut s, r.out_dir.as_deref(), r.order);
    s
}
