//! `cp_als` and its result, `CPResult`: a `(weights, factors)` pair that TensorLy takes as a
//! CP tensor, with the fit history and the time of every iteration. Also what `cp_apr`
//! shares with it: the seed, the initial factors, and the interruptible run.

use crate::pair::CpPair;
use crate::tensor::{check_plan, factor_list, mttkrp_options, SparseTensor};
use crate::{detached, panic_err, pool, py_err, thread_count};
use alto::cpd::{cp_als_observed, initial_factors, validate, CpModel, CpdOptions, IterStats};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

/// How often the waiting thread looks for Ctrl-C (and prints progress) while a fit runs.
const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// A fitted CP model: `X ~ sum_r weights[r] * outer(factors[0][:, r], ..., factors[N-1][:, r])`,
/// the factors' columns normalized into the weights.
///
/// It is the pair `(weights, factors)` (a `CPTensorResult`): `weights, factors = result`
/// unpacks it, `result[0]` and `result[1]` index it, and TensorLy functions that take a CP
/// tensor (`tensorly.cp_to_tensor(result)`, `tensorly.cp_tensor.CPTensor(result)`) accept it
/// as it is. It also carries how the fit went: `fit_history`, `iteration_times`, `mttkrp_times`,
/// `n_iter`, `converged` and `history` (the `iterations[]` of `alto cpd --json`).
#[pyclass(module = "alto", name = "CPResult", extends = CpPair, frozen)]
pub struct CpResult {
    history: Vec<IterStats>,
    converged: bool,
    norm_x: f64,
}

#[pymethods]
impl CpResult {
    /// `1 - ||X - model|| / ||X||` after each iteration.
    #[getter]
    fn fit_history(&self) -> Vec<f64> {
        self.history.iter().map(|s| s.fit).collect()
    }

    /// The fit after the last iteration.
    #[getter]
    fn fit(&self) -> f64 {
        self.history.last().map_or(f64::NAN, |s| s.fit)
    }

    /// Wall seconds of each iteration.
    #[getter]
    fn iteration_times(&self) -> Vec<f64> {
        self.history.iter().map(|s| s.seconds).collect()
    }

    /// Of which in the MTTKRPs, per iteration.
    #[getter]
    fn mttkrp_times(&self) -> Vec<f64> {
        self.history.iter().map(|s| s.mttkrp_seconds).collect()
    }

    /// Iterations run.
    #[getter]
    fn n_iter(&self) -> usize {
        self.history.len()
    }

    /// True when the run stopped on `|delta fit| < tol` rather than at `n_iter_max`.
    #[getter]
    fn converged(&self) -> bool {
        self.converged
    }

    /// `||X||`, the Frobenius norm of the tensor (duplicates summed).
    #[getter]
    fn norm_x(&self) -> f64 {
        self.norm_x
    }

    /// One dict per iteration, as `iterations[]` of `alto cpd --json`: `iter`, `fit`,
    /// `delta_fit` (None on the first), `seconds`, `mttkrp_seconds`, `rest_seconds`,
    /// `pinv_solves`.
    #[getter]
    fn history<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        for s in &self.history {
            let d = PyDict::new(py);
            d.set_item("iter", s.iter)?;
            d.set_item("fit", s.fit)?;
            d.set_item("delta_fit", s.delta_fit)?;
            d.set_item("seconds", s.seconds)?;
            d.set_item("mttkrp_seconds", s.mttkrp_seconds)?;
            d.set_item("rest_seconds", s.rest_seconds)?;
            d.set_item("pinv_solves", s.pinv_solves)?;
            list.append(d)?;
        }
        Ok(list)
    }

    fn __repr__(slf: &Bound<'_, Self>) -> String {
        let (me, pair) = (slf.get(), slf.as_super().get());
        format!(
            "CPResult(rank={}, shape={}, n_iter={}, fit={:.6}, converged={})",
            pair.rank(slf.py()),
            pair.shape_text(),
            me.n_iter(),
            me.fit(),
            if me.converged { "True" } else { "False" }
        )
    }
}

/// Initial factors, and the weights when `init` was a `(weights, factors)` pair.
pub(crate) struct Initial<'py> {
    pub(crate) weights: Option<Bound<'py, PyAny>>,
    pub(crate) factors: Vec<alto::Matrix>,
}

/// The initial factors from `init`: `"random"` (uniform [0, 1), from `seed`), a
/// `(weights, factors)` pair (a TensorLy CPTensor or a result of this module included) or a
/// list of factors, checked against the tensor's order (each factor's shape is the library's
/// to check).
pub(crate) fn initial<'py>(
    init: &Bound<'py, PyAny>,
    t: &SparseTensor,
    rank: usize,
    seed: u64,
) -> PyResult<Initial<'py>> {
    let order = t.t.order();
    if init.cast::<PyString>().is_ok() {
        return match init.extract::<String>()?.as_str() {
            "random" => Ok(Initial {
                weights: None,
                factors: initial_factors(t.t.dims(), rank, seed),
            }),
            other => Err(PyValueError::new_err(format!(
                "init: unknown initialization `{other}` (\"random\", or (weights, factors) \
                 such as a CPTensor, or a list of factors)"
            ))),
        };
    }
    let (weights, factors) = if init.hasattr("factors")? {
        let weights = match init.getattr("weights") {
            Ok(w) if !w.is_none() => Some(w),
            _ => None,
        };
        (weights, init.getattr("factors")?)
    } else {
        let items: Vec<Bound<'py, PyAny>> = init.try_iter()?.collect::<PyResult<_>>()?;
        // (weights, factors): the second item is a list or tuple of matrices, not a matrix.
        match items.as_slice() {
            [first, second]
                if second.cast::<PyList>().is_ok() || second.cast::<PyTuple>().is_ok() =>
            {
                let weights = (!first.is_none()).then(|| first.clone());
                (weights, second.clone())
            }
            _ => (None, init.clone()),
        }
    };
    let factors = factor_list(&factors, order).map_err(|e| {
        // The same exception type, its message prefixed with the argument.
        let py = init.py();
        let msg = e.value(py).to_string();
        PyErr::from_type(e.get_type(py), format!("init: {msg}"))
    })?;
    Ok(Initial { weights, factors })
}

/// The seed of `random_state`: the int itself (at least 0), or a fresh one for None.
pub(crate) fn seed_of(random_state: Option<i64>) -> PyResult<u64> {
    match random_state {
        Some(s) => u64::try_from(s).map_err(|_| {
            PyValueError::new_err(format!("random_state must be >= 0 or None, got {s}"))
        }),
        None => Ok(fresh_seed()),
    }
}

/// A count argument as a `usize`, or `ValueError` naming it (zero passes: the library's
/// options check refuses it with its own message).
pub(crate) fn count_arg(name: &str, v: i64) -> PyResult<usize> {
    usize::try_from(v)
        .map_err(|_| PyValueError::new_err(format!("{name}: must be at least 1, got {v}")))
}

/// CP decomposition by alternating least squares (as `tensorly.decomposition.parafac` with
/// `init="random"`, on the sparse tensor directly).
///
/// Fits `rank` components for at most `n_iter_max` iterations, stopping when the fit changes
/// by less than `tol` between two iterations (`tol=0` runs to the cap). `init`: `"random"`
/// (uniform [0, 1) factors drawn from `random_state`, an int seed; None draws one) or initial
/// factors: `(weights, factors)` (a TensorLy CPTensor or a CPResult) or a list of `(I_n, rank)`
/// arrays (copied once; the first mode's is not read, as it is solved first). `threads`: worker
/// threads (default: all CPUs). `verbose`: print the fit and time of every iteration.
/// `sync` and `kernel`: the MTTKRP choices, as `SparseTensor.mttkrp`.
///
/// Returns a `CPResult`, the `(weights, factors)` pair with the fit history and per-iteration
/// times. Runs with the GIL released; Ctrl-C stops it after the current iteration and raises
/// `KeyboardInterrupt`. Raises `ValueError` for a rank outside `1 <= rank <= min(nnz, min over
/// n of prod_{m != n} I_m)`, `n_iter_max < 1`, a negative or non-finite `tol` or bad `init`.
#[pyfunction]
#[pyo3(signature = (
    tensor, rank, *, n_iter_max=50, tol=1e-5, init=None, random_state=None, threads=None,
    verbose=false, sync="auto", kernel="auto"
))]
#[allow(clippy::too_many_arguments)]
pub fn cp_als<'py>(
    py: Python<'py>,
    tensor: &SparseTensor,
    rank: i64,
    n_iter_max: i64,
    tol: f64,
    init: Option<&Bound<'_, PyAny>>,
    random_state: Option<i64>,
    threads: Option<i64>,
    verbose: bool,
    sync: &str,
    kernel: &str,
) -> PyResult<Bound<'py, CpResult>> {
    let t = &tensor.t;
    let rank = count_arg("rank", rank)?;
    let max_iters = count_arg("n_iter_max", n_iter_max)?;
    let seed = seed_of(random_state)?;
    let mut opts = CpdOptions {
        max_iters,
        tol,
        seed,
        ..CpdOptions::new(rank)
    };
    validate(t.dims(), t.nnz(), &opts).map_err(py_err)?;
    opts.mttkrp = mttkrp_options(sync, kernel, rank)?;
    let threads = thread_count(threads)?;
    let pool = pool(threads)?;
    check_plan(alto::memory::cp_als_plan(t, rank), "lower the rank")?;
    // The first mode is solved first: its factor, and so the weights, are not read.
    let init = match init {
        Some(i) => initial(i, tensor, rank, seed)?.factors,
        None => initial_factors(t.dims(), rank, seed),
    };
    let line = verbose.then_some(iteration_line as fn(&IterStats) -> String);
    let model = run_interruptibly(py, line, |observer| {
        cp_als_observed(&tensor.t, init, &opts, &pool, observer)
    })?;
    let CpModel {
        lambda,
        factors,
        history,
        converged,
        norm_x_sq,
        ..
    } = model;
    let pair = CpPair::new(py, lambda, factors, t.dims())?;
    let result = CpResult {
        history,
        converged,
        norm_x: norm_x_sq.sqrt(),
    };
    Bound::new(py, (result, pair))
}

/// A seed for `random_state=None`: different on every call, as NumPy's fresh entropy.
fn fresh_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.finish()
}

/// What a fit calls after every iteration (`Break`: stop after it).
pub(crate) type Observer<'o, S> = dyn FnMut(&S) -> ControlFlow<()> + Send + 'o;

/// Runs `fit` (CP-ALS or CP-APR, given an observer of its iteration stats `S`) on a thread of
/// its own while this (the caller's) thread, GIL released, waits: every [`SIGNAL_POLL`] it
/// takes the GIL to look for signals (Python runs its Ctrl-C handler on the main thread only,
/// so the check cannot happen on a pool worker) and prints, through `line`, the iterations
/// that finished (`None`: not verbose). A pending `KeyboardInterrupt` (or another signal
/// handler's exception) asks the run to stop after its current iteration and is raised then.
pub(crate) fn run_interruptibly<S, M>(
    py: Python<'_>,
    line: Option<fn(&S) -> String>,
    fit: impl FnOnce(&mut Observer<'_, S>) -> alto::Result<M> + Send,
) -> PyResult<M>
where
    S: Clone + Send,
    M: Send,
{
    let stop_flag = AtomicBool::new(false);
    let stop = &stop_flag;
    let (tx, rx) = mpsc::channel::<S>();
    let mut pending: Option<PyErr> = None;
    let pending_ref = &mut pending;
    let result = detached(py, move || {
        std::thread::scope(|s| {
            let worker = s.spawn(move || {
                let mut observer = |st: &S| {
                    // The receiver lives until this thread is joined.
                    let _ = tx.send(st.clone());
                    if stop.load(Ordering::Relaxed) {
                        ControlFlow::Break(())
                    } else {
                        ControlFlow::Continue(())
                    }
                };
                let r = fit(&mut observer);
                drop(tx);
                r
            });
            loop {
                let done = match rx.recv_timeout(SIGNAL_POLL) {
                    Ok(st) => {
                        if let Some(line) = line {
                            print_line(line(&st), pending_ref);
                        }
                        false
                    }
                    Err(mpsc::RecvTimeoutError::Timeout) => false,
                    Err(mpsc::RecvTimeoutError::Disconnected) => true,
                };
                if pending_ref.is_none() {
                    if let Err(e) = Python::attach(|py| py.check_signals()) {
                        *pending_ref = Some(e);
                        stop.store(true, Ordering::Relaxed);
                    }
                }
                if done {
                    break;
                }
            }
            worker.join()
        })
    })?;
    if let Some(e) = pending {
        return Err(e);
    }
    match result {
        Ok(r) => r.map_err(py_err),
        Err(payload) => Err(panic_err(payload)),
    }
}

/// One CP-ALS iteration for `verbose`.
fn iteration_line(st: &IterStats) -> String {
    let delta = st
        .delta_fit
        .map_or_else(|| "-".to_string(), |d| format!("{d:+.3e}"));
    format!(
        "iteration {:>3}: fit {:.10}  delta {:>10}  {:.3} ms (MTTKRP {:.3} ms)",
        st.iter + 1,
        st.fit,
        delta,
        st.seconds * 1e3,
        st.mttkrp_seconds * 1e3
    )
}

/// Prints one line through Python's `print` (so notebooks show it); a failure to print is
/// kept to be raised after the run.
fn print_line(line: String, pending: &mut Option<PyErr>) {
    let printed = Python::attach(|py| -> PyResult<()> {
        py.import("builtins")?.getattr("print")?.call1((line,))?;
        Ok(())
    });
    if let Err(e) = printed {
        pending.get_or_insert(e);
    }
}
