//! `cp_apr` and its result, `APRResult`: the library's CP-APR (`alto::cpd::apr`, the fit of
//! `alto cpd --model apr`) for count tensors, returning the `(weights, factors)` pair TensorLy
//! takes as a CP tensor, with the log-likelihood, KKT violation and time of every iteration.

use crate::cpd::{count_arg, initial, run_interruptibly, seed_of};
use crate::pair::CpPair;
use crate::tensor::{check_plan, dispatch_env, kernel_err, sync_choice, SparseTensor};
use crate::{pool, py_err, thread_count};
use alto::cpd::apr::{
    check_counts, cp_apr_observed, validate, AprIterStats, AprModel, AprOptions, PhiKind,
    PhiOptions, DEFAULT_APR_MAX_ITERS, DEFAULT_APR_TOL, DEFAULT_EPSILON, DEFAULT_INNER_ITERS,
    DEFAULT_KAPPA, DEFAULT_KAPPA_TOL,
};
use alto::cpd::initial_factors;
use alto::{AltoError, Matrix};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

// The keyword defaults of `cp_apr` are literals (so that `help()` shows them); they are the
// library's (`AprOptions::new`, the command's), or this does not compile.
const _: () = assert!(DEFAULT_APR_MAX_ITERS == 1000);
const _: () = assert!(DEFAULT_INNER_ITERS == 10);
const _: () = assert!(DEFAULT_APR_TOL == 1e-4);
const _: () = assert!(DEFAULT_KAPPA == 0.01);
const _: () = assert!(DEFAULT_KAPPA_TOL == 1e-10);
const _: () = assert!(DEFAULT_EPSILON == 1e-10);

/// A fitted Poisson CP model: `X ~ sum_r weights[r] * outer(factors[0][:, r], ...,
/// factors[N-1][:, r])`, every column of every factor summing to 1.
///
/// It is the pair `(weights, factors)` (a `CPTensorResult`, as `CPResult`): `weights, factors = result` unpacks it,
/// `result[0]` and `result[1]` index it, and TensorLy functions that take a CP tensor accept it
/// as it is. It also carries how the fit went: `loglik_history`, `kkt_history`,
/// `inner_iters`, `iteration_times`, `phi_times`, `n_iter`, `converged`, `phi_kernels` and
/// `history` (the `iterations[]` of `alto cpd --model apr --json`).
#[pyclass(module = "alto", name = "APRResult", extends = CpPair, frozen)]
pub struct AprResult {
    history: Vec<AprIterStats>,
    converged: bool,
    phi: Vec<String>,
}

#[pymethods]
impl AprResult {
    /// The Poisson log-likelihood `sum_x v log m(x) - sum_r weights[r]` (up to the constant
    /// `-sum log(v!)`) after each outer iteration; it never decreases.
    #[getter]
    fn loglik_history(&self) -> Vec<f64> {
        self.history.iter().map(|s| s.loglik).collect()
    }

    /// The log-likelihood after the last iteration.
    #[getter]
    fn loglik(&self) -> f64 {
        self.history.last().map_or(f64::NAN, |s| s.loglik)
    }

    /// The largest, over modes, KKT violation `max |min(B, 1 - Phi)|` of each iteration.
    #[getter]
    fn kkt_history(&self) -> Vec<f64> {
        self.history.iter().map(|s| s.kkt).collect()
    }

    /// Inner iterations (Phi evaluations over all modes) of each outer iteration.
    #[getter]
    fn inner_iters(&self) -> Vec<usize> {
        self.history.iter().map(|s| s.inner_iters).collect()
    }

    /// Wall seconds of each outer iteration.
    #[getter]
    fn iteration_times(&self) -> Vec<f64> {
        self.history.iter().map(|s| s.seconds).collect()
    }

    /// Of which in Phi, per iteration.
    #[getter]
    fn phi_times(&self) -> Vec<f64> {
        self.history.iter().map(|s| s.phi_seconds).collect()
    }

    /// Outer iterations run.
    #[getter]
    fn n_iter(&self) -> usize {
        self.history.len()
    }

    /// True when every mode met the KKT tolerance `tol` before its first update in the last
    /// iteration, rather than the run stopping at `n_iter_max`.
    #[getter]
    fn converged(&self) -> bool {
        self.converged
    }

    /// The Phi kernel of each mode, as `phi` of `alto cpd --model apr --json`
    /// (`phi_pull_fused`, `phi_atomic_cached`, ...).
    #[getter]
    fn phi_kernels(&self) -> Vec<String> {
        self.phi.clone()
    }

    /// One dict per outer iteration, as `iterations[]` of `alto cpd --model apr --json`:
    /// `iter`, `loglik`, `kkt`, `inner_iters`, `inadmissible` (entries raised by kappa),
    /// `seconds`, `phi_seconds`, `rest_seconds`.
    #[getter]
    fn history<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        for s in &self.history {
            let d = PyDict::new(py);
            d.set_item("iter", s.iter)?;
            d.set_item("loglik", s.loglik)?;
            d.set_item("kkt", s.kkt)?;
            d.set_item("inner_iters", s.inner_iters)?;
            d.set_item("inadmissible", s.inadmissible)?;
            d.set_item("seconds", s.seconds)?;
            d.set_item("phi_seconds", s.phi_seconds)?;
            d.set_item("rest_seconds", s.rest_seconds)?;
            list.append(d)?;
        }
        Ok(list)
    }

    fn __repr__(slf: &Bound<'_, Self>) -> String {
        let (me, pair) = (slf.get(), slf.as_super().get());
        format!(
            "APRResult(rank={}, shape={}, n_iter={}, loglik={:.10e}, converged={})",
            pair.rank(slf.py()),
            pair.shape_text(),
            me.n_iter(),
            me.loglik(),
            if me.converged { "True" } else { "False" }
        )
    }
}

/// CP-APR: a nonnegative CP model of a count tensor fitted by maximizing the Poisson
/// log-likelihood (minimizing the KL divergence) with the multiplicative updates of Chi and
/// Kolda (2012), as Tensor Toolbox's `cp_apr` (`'mu'`) and `alto cpd --model apr`.
///
/// Fits `rank` components for at most `n_iter_max` outer iterations of at most `inner`
/// multiplicative updates per mode; converged when every mode's KKT violation
/// `max |min(B, 1 - Phi)|` is below `tol` before its first update. `kappa`: added to
/// inadmissible zeros (entries below `kappa_tol` whose Phi exceeds 1); `epsilon`: floor of the
/// model value a count is divided by. The defaults are Tensor Toolbox's, as the command's.
/// `init`: None or `"random"` (uniform [0, 1) factors drawn from `random_state`, an int seed;
/// None draws one), a list of nonnegative `(I_n, rank)` arrays, or `(weights, factors)` (a
/// TensorLy CPTensor, a CPResult or an APRResult: a warm start from that very model, the
/// weights folded into the first factor). Each initial column is normalized to sum 1, its sum
/// moving into the weights. `threads`: worker threads (default: all CPUs). `verbose`: print
/// the log-likelihood of every iteration. `sync` and `kernel`: the Phi kernel's conflict
/// resolution (as `SparseTensor.mttkrp`) and kernel: `"auto"`, `"fused"`, `"cached"` (Pi cached
/// per nonzero, `nnz x rank` doubles) or an MTTKRP kernel name (`"avx512"`, `"scalar_r16"`, ...),
/// as `alto cpd --model apr --kernel`.
///
/// Returns an `APRResult`, the `(weights, factors)` pair with the log-likelihood, the KKT
/// violation and the times of every iteration. Runs with the GIL released; Ctrl-C stops it
/// after the current iteration and raises `KeyboardInterrupt`. Raises `ValueError` for a
/// negative value in the tensor (CP-APR fits counts), a rank outside `1 <= rank <= min(nnz,
/// min over n of prod_{m != n} I_m)`, `n_iter_max < 1`, `inner < 1`, a negative or non-finite
/// `tol`, `kappa` or `kappa_tol`, `epsilon <= 0`, a bad `kernel` or `init`; `MemoryError` when
/// the fit's memory plan does not fit.
#[pyfunction]
#[pyo3(signature = (
    tensor, rank, *, n_iter_max=1000, inner=10, tol=1e-4, kappa=0.01, kappa_tol=1e-10,
    epsilon=1e-10, init=None, random_state=None, threads=None, verbose=false, sync="auto",
    kernel="auto"
))]
#[allow(clippy::too_many_arguments)]
pub fn cp_apr<'py>(
    py: Python<'py>,
    tensor: &SparseTensor,
    rank: i64,
    n_iter_max: i64,
    inner: i64,
    tol: f64,
    kappa: f64,
    kappa_tol: f64,
    epsilon: f64,
    init: Option<&Bound<'_, PyAny>>,
    random_state: Option<i64>,
    threads: Option<i64>,
    verbose: bool,
    sync: &str,
    kernel: &str,
) -> PyResult<Bound<'py, AprResult>> {
    let t = &tensor.t;
    let rank = count_arg("rank", rank)?;
    let max_iters = count_arg("n_iter_max", n_iter_max)?;
    let inner_iters = count_arg("inner", inner)?;
    let seed = seed_of(random_state)?;
    let mut opts = AprOptions {
        max_iters,
        inner_iters,
        tol,
        kappa,
        kappa_tol,
        epsilon,
        seed,
        ..AprOptions::new(rank)
    };
    validate(t.dims(), t.nnz(), &opts).map_err(py_err)?;
    opts.phi = phi_options(sync, kernel, rank)?;
    check_counts(t.values()).map_err(|e| match e {
        AltoError::NegativeValue { index, value } => PyValueError::new_err(format!(
            "cp_apr fits nonnegative counts, but the tensor holds the negative value {value} \
             (nonzero {index} of to_coo())"
        )),
        other => py_err(other),
    })?;
    let threads = thread_count(threads)?;
    let pool = pool(threads)?;
    check_plan(
        alto::memory::cp_apr_plan(t, rank, opts.phi.kind),
        "lower the rank",
    )?;
    let init = match init {
        Some(i) => {
            let given = initial(i, tensor, rank, seed)?;
            let mut factors = given.factors;
            if let Some(w) = given.weights {
                fold_weights(&w, rank, &mut factors)?;
            }
            factors
        }
        None => initial_factors(t.dims(), rank, seed),
    };
    let line = verbose.then_some(iteration_line as fn(&AprIterStats) -> String);
    let model = run_interruptibly(py, line, |observer| {
        cp_apr_observed(t, init, &opts, &pool, observer)
    })?;
    let AprModel {
        lambda,
        factors,
        history,
        converged,
        phi_runs,
    } = model;
    let pair = CpPair::new(py, lambda, factors, t.dims())?;
    let result = AprResult {
        history,
        converged,
        phi: phi_runs.into_iter().map(|r| r.name).collect(),
    };
    Bound::new(py, (result, pair))
}

/// The Phi kernel from the `sync` and `kernel` keywords (and `ALTO_ISA` / `ALTO_DECODE`), as
/// `alto cpd --model apr` decides it: `auto`, `fused`, `cached` or an MTTKRP kernel, checked
/// for `rank` on this CPU.
fn phi_options(sync: &str, kernel: &str, rank: usize) -> PyResult<PhiOptions> {
    let sync = sync_choice(sync)?;
    let dispatch = dispatch_env()?;
    let kind = match PhiKind::parse(kernel).map_err(kernel_err)? {
        PhiKind::Mttkrp(k) => {
            let k = dispatch.kernel(k);
            k.resolve(rank).map_err(kernel_err)?;
            PhiKind::Mttkrp(k)
        }
        other => other,
    };
    Ok(PhiOptions {
        kind,
        sync,
        decode: dispatch.decode,
        min_fiber_reuse: None,
    })
}

/// Multiplies column r of the first factor by `weights[r]`, so that the initial model is the
/// given `(weights, factors)` one (CP-APR reads every factor and the weights).
fn fold_weights(weights: &Bound<'_, PyAny>, rank: usize, factors: &mut [Matrix]) -> PyResult<()> {
    let bad = || PyValueError::new_err("init: the weights must be a 1-D array of numbers");
    let arr = weights
        .py()
        .import("numpy")?
        .call_method1("asarray", (weights, "float64"))
        .map_err(|_| bad())?;
    if arr.getattr("ndim")?.extract::<usize>()? != 1 {
        return Err(bad());
    }
    let w: Vec<f64> = arr.call_method0("tolist")?.extract()?;
    if w.len() != rank {
        return Err(PyValueError::new_err(format!(
            "init: {} weights for rank {rank}",
            w.len()
        )));
    }
    if let Some(x) = w.iter().find(|x| !(x.is_finite() && **x >= 0.0)) {
        return Err(PyValueError::new_err(format!(
            "init: the weights must be finite and nonnegative, got {x}"
        )));
    }
    // The library checks every factor's shape; a first factor of another width is left to it.
    if let Some(first) = factors.first_mut().filter(|f| f.cols() == rank) {
        for row in first.as_mut_slice().chunks_exact_mut(rank) {
            for (x, s) in row.iter_mut().zip(&w) {
                *x *= s;
            }
        }
    }
    Ok(())
}

/// One CP-APR iteration for `verbose`, as the command's progress line.
fn iteration_line(s: &AprIterStats) -> String {
    format!(
        "iteration {:>3}: log-likelihood {:.10e}  KKT violation {:.3e}  {} inner  {:.3} ms \
         (Phi {:.3} ms)",
        s.iter + 1,
        s.loglik,
        s.kkt,
        s.inner_iters,
        s.seconds * 1e3,
        s.phi_seconds * 1e3
    )
}
