//! `import alto`: ALTO sparse tensors, MTTKRP, CP-ALS and CP-APR for NumPy and TensorLy users.
//!
//! The module is a thin layer over the `alto` library:
//! - [`tensor`]: `SparseTensor` (from `.tns`, `.alto`, COO arrays or a `scipy.sparse` matrix),
//!   its `info()`, `save()`, `to_coo()` and `mttkrp()`;
//! - [`cpd`]: `cp_als` and the `CPResult` it returns, a `(weights, factors)` pair TensorLy
//!   takes as a CP tensor; the seed, initial factors and interruptible run both fits share;
//! - [`apr`]: `cp_apr` (CP-APR, the Poisson model of count tensors: `alto::cpd::apr`) and the
//!   `APRResult` it returns, the same pair with the log-likelihood history;
//! - [`pair`]: the `(weights, factors)` pair protocol of both results;
//! - [`gen`]: `gen`, the synthetic tensors of `alto gen`;
//! - [`arrays`]: NumPy arrays in and out (borrowed where the layout allows);
//! - here: the error mapping, the thread pools and the GIL-free call wrapper.
//!
//! Every computation runs with the GIL released, on a rayon pool of the requested size (never
//! rayon's global pool), and a panic never crosses into Python: it becomes a `RuntimeError`.

mod apr;
mod arrays;
mod cpd;
mod gen;
mod pair;
mod tensor;

use alto::AltoError;
use pyo3::exceptions::{
    PyFileNotFoundError, PyFloatingPointError, PyIsADirectoryError, PyMemoryError, PyOSError,
    PyPermissionError, PyRuntimeError, PyValueError,
};
use pyo3::prelude::*;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};

/// Workers allowed per available CPU, as the command's `--threads` rule
/// (`alto::harness::pool::MAX_THREADS_PER_CPU`; the harness is not built into this module).
const MAX_THREADS_PER_CPU: usize = 4;

/// A library error as the Python exception a NumPy user expects, with the library's message:
/// `OSError` (and its subclasses) when a file cannot be read or written, `MemoryError` when
/// the memory plan does not fit, `FloatingPointError` when CP-ALS or CP-APR diverges,
/// `ValueError` for everything the caller passed or a file held (shapes, ranks, indices,
/// values, options, malformed files, whose messages name the file and line).
pub(crate) fn py_err(e: AltoError) -> PyErr {
    let msg = e.to_string();
    match &e {
        AltoError::Io { source, .. } => match source.kind() {
            std::io::ErrorKind::NotFound => PyFileNotFoundError::new_err(msg),
            std::io::ErrorKind::PermissionDenied => PyPermissionError::new_err(msg),
            std::io::ErrorKind::IsADirectory => PyIsADirectoryError::new_err(msg),
            _ => PyOSError::new_err(msg),
        },
        AltoError::OutOfMemory { .. } | AltoError::MemoryLimit { .. } => {
            PyMemoryError::new_err(msg)
        }
        AltoError::CpdNumerical(_) => PyFloatingPointError::new_err(msg),
        // The command says `--rank: ...`; here the option is a keyword argument.
        AltoError::CpdOption { option, reason } => {
            let name = match *option {
                "max_iters" => "n_iter_max",
                other => other,
            };
            PyValueError::new_err(format!("{name}: {reason}"))
        }
        AltoError::AprOption { option, reason } => {
            let name = match *option {
                "max_iters" => "n_iter_max",
                "inner_iters" => "inner",
                other => other,
            };
            PyValueError::new_err(format!("{name}: {reason}"))
        }
        _ => PyValueError::new_err(msg),
    }
}

/// `threads`, else every available CPU; at least 1 and at most [`MAX_THREADS_PER_CPU`] per
/// available CPU (more only adds contention), as the command's `--threads`.
pub(crate) fn thread_count(threads: Option<i64>) -> PyResult<usize> {
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let Some(t) = threads else {
        return Ok(cpus);
    };
    let max = cpus.saturating_mul(MAX_THREADS_PER_CPU);
    if t < 1 {
        return Err(PyValueError::new_err(format!(
            "threads must be at least 1, got {t}"
        )));
    }
    match usize::try_from(t) {
        Ok(t) if t <= max => Ok(t),
        _ => Err(PyValueError::new_err(format!(
            "threads={t} exceeds {max} ({MAX_THREADS_PER_CPU} per available CPU, {cpus} CPUs)"
        ))),
    }
}

/// Pools built so far, one per thread count, kept for the life of the process (a pool's
/// workers start once, not on every call).
static POOLS: Mutex<Vec<(usize, Arc<rayon::ThreadPool>)>> = Mutex::new(Vec::new());

/// The pool of `threads` workers (see [`thread_count`]).
pub(crate) fn pool(threads: usize) -> PyResult<Arc<rayon::ThreadPool>> {
    // A poisoned lock only means another call panicked while holding it; the list is intact.
    let mut pools = POOLS.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, p)) = pools.iter().find(|(t, _)| *t == threads) {
        return Ok(Arc::clone(p));
    }
    let p = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("alto-worker-{i}"))
        .build()
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start {threads} threads: {e}")))?;
    let p = Arc::new(p);
    pools.push((threads, Arc::clone(&p)));
    Ok(p)
}

/// Runs `f` with the GIL released. A panic inside (a library bug) becomes a `RuntimeError`
/// instead of unwinding into the interpreter.
pub(crate) fn detached<T: Send>(py: Python<'_>, f: impl FnOnce() -> T + Send) -> PyResult<T> {
    py.detach(|| std::panic::catch_unwind(AssertUnwindSafe(f)))
        .map_err(panic_err)
}

/// A caught panic's payload as a `RuntimeError`.
pub(crate) fn panic_err(payload: Box<dyn std::any::Any + Send>) -> PyErr {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    PyRuntimeError::new_err(format!("alto: internal error ({what}); please report it"))
}

/// ALTO sparse tensors (Helal et al., ICS 2021): MTTKRP, CP-ALS and CP-APR on one compact,
/// linearized copy of a sparse tensor, with the GIL released.
#[pymodule]
#[pyo3(name = "alto")]
fn alto_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<tensor::SparseTensor>()?;
    m.add_class::<pair::CpPair>()?;
    m.add_class::<cpd::CpResult>()?;
    m.add_class::<apr::AprResult>()?;
    m.add_function(wrap_pyfunction!(tensor::read_tns, m)?)?;
    m.add_function(wrap_pyfunction!(tensor::load, m)?)?;
    m.add_function(wrap_pyfunction!(cpd::cp_als, m)?)?;
    m.add_function(wrap_pyfunction!(apr::cp_apr, m)?)?;
    m.add_function(wrap_pyfunction!(gen::gen, m)?)?;
    Ok(())
}
