//! `SparseTensor`: an ALTO tensor built from a file, COO arrays or a `scipy.sparse` matrix;
//! `read_tns` and `load`.

use crate::arrays;
use crate::{detached, pool, py_err, thread_count};
use alto::dispatch::{DispatchOptions, KernelChoice, DECODE_ENV, ISA_ENV};
use alto::format::{fiber_reuse, AnyAlto, BuildOptions, BuildTimes};
use alto::memory::{MemoryLimit, MemoryPlan};
use alto::mttkrp::{choose_sync, mttkrp, MttkrpOptions, SyncChoice, Workspace};
use alto::{AltoError, CooTensor, Matrix};
use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyArray2};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// `(indices, values)` of `to_coo`.
type CooArrays<'py> = (Bound<'py, PyArray2<i64>>, Bound<'py, numpy::PyArray1<f64>>);

/// Where a tensor came from, for `info()`.
#[derive(Clone, Debug, Default)]
struct Origin {
    /// The file, when read from one.
    file: Option<String>,
    parse_seconds: Option<f64>,
    file_bytes: u64,
    build: Option<BuildTimes>,
}

/// A sparse tensor in the ALTO format: nonzeros linearized into one compact index, sorted,
/// and cut into balanced segments (one per thread at construction).
///
/// Build one with `alto.read_tns`, `alto.load`, `alto.gen` or `SparseTensor.from_coo`.
/// Duplicate coordinates are summed. The tensor is immutable.
#[pyclass(module = "alto", name = "SparseTensor", frozen)]
pub struct SparseTensor {
    pub(crate) t: AnyAlto,
    origin: Origin,
}

/// The `.tns` / `.alto` kind of `path`, by extension, as the command decides it.
pub(crate) fn is_alto_file(path: &Path) -> PyResult<bool> {
    match path.extension().and_then(|e| e.to_str()) {
        Some("tns") => Ok(false),
        Some("alto") => Ok(true),
        _ => Err(PyValueError::new_err(format!(
            "{}: unknown file type (expected .tns or .alto)",
            path.display()
        ))),
    }
}

/// `ALTO_ISA` / `ALTO_DECODE`, as the command reads them: the library itself reads no
/// environment variable.
pub(crate) fn dispatch_env() -> PyResult<DispatchOptions> {
    let var = |name: &str| std::env::var(name).ok();
    DispatchOptions::from_values(var(ISA_ENV).as_deref(), var(DECODE_ENV).as_deref())
        .map_err(py_err)
}

/// MTTKRP options from the `sync` and `kernel` keywords (and the environment), checked for
/// `rank` on this CPU.
pub(crate) fn mttkrp_options(sync: &str, kernel: &str, rank: usize) -> PyResult<MttkrpOptions> {
    let sync = sync_choice(sync)?;
    let dispatch = dispatch_env()?;
    let choice = KernelChoice::parse(kernel).map_err(kernel_err)?;
    let kernel = dispatch.kernel(choice);
    kernel.resolve(rank.max(1)).map_err(kernel_err)?;
    Ok(MttkrpOptions {
        sync,
        kernel,
        decode: dispatch.decode,
        ..Default::default()
    })
}

/// The `sync` keyword (`auto`, `pull`, `atomic`, `flagged`, ...), its error naming it.
pub(crate) fn sync_choice(sync: &str) -> PyResult<SyncChoice> {
    sync.parse()
        .map_err(|e: String| PyValueError::new_err(format!("sync: {e}")))
}

/// A library error about the `kernel` keyword as the `ValueError` naming it.
pub(crate) fn kernel_err(e: AltoError) -> PyErr {
    match e {
        AltoError::InvalidArgument(m) => PyValueError::new_err(format!("kernel: {m}")),
        other => py_err(other),
    }
}

/// Builds the ALTO form of `coo` with one segment per thread, the GIL released.
fn build(
    py: Python<'_>,
    coo: &CooTensor,
    threads: usize,
    origin: Origin,
) -> PyResult<SparseTensor> {
    let pool = pool(threads)?;
    let opts = BuildOptions {
        partitions: threads,
        ..Default::default()
    };
    let (t, times) =
        detached(py, || pool.install(|| AnyAlto::build(coo, &opts)))?.map_err(py_err)?;
    Ok(SparseTensor {
        t,
        origin: Origin {
            build: Some(times),
            ..origin
        },
    })
}

/// Wraps a generated or parsed COO tensor (the generators' and `gen`'s entry).
pub(crate) fn from_coo_tensor(
    py: Python<'_>,
    coo: &CooTensor,
    threads: usize,
) -> PyResult<SparseTensor> {
    build(py, coo, threads, Origin::default())
}

/// The dims of a `shape` argument (each at least 1).
fn dims_of(shape: &[i64]) -> PyResult<Vec<u64>> {
    shape
        .iter()
        .enumerate()
        .map(|(mode, &d)| {
            u64::try_from(d).ok().filter(|&d| d >= 1).ok_or_else(|| {
                PyValueError::new_err(format!(
                    "dimension {d} of mode {mode} is invalid (must be at least 1)"
                ))
            })
        })
        .collect()
}

#[pymethods]
impl SparseTensor {
    /// Builds a tensor from coordinates and values.
    ///
    /// `indices`: an integer array of 0-based coordinates, shape `(nnz, N)` or `(N, nnz)`
    /// (read as `(nnz, N)` when nnz == N). `values`: `nnz` finite real values. `shape`: the
    /// `N` dims. A `scipy.sparse` matrix (any format; converted with `.tocoo()`) may be passed
    /// alone as `indices` for an order-2 tensor. Duplicates are summed.
    ///
    /// Arrays are read in place when they are float64 (values) or int64/uint64 (indices), in
    /// any layout; other integer and floating dtypes are converted once by NumPy first. The
    /// coordinates are then encoded into the ALTO index (the tensor never points into the
    /// arrays). `threads`: the number of segments and of threads building them (default: all
    /// CPUs).
    ///
    /// Raises `TypeError` for a non-integer index array or non-real values and `ValueError`
    /// for a wrong shape, a negative or out-of-range index, a non-finite value, no nonzeros,
    /// or an order outside 2..=MAX_ORDER.
    #[staticmethod]
    #[pyo3(signature = (indices, values=None, shape=None, *, threads=None))]
    fn from_coo(
        py: Python<'_>,
        indices: &Bound<'_, PyAny>,
        values: Option<&Bound<'_, PyAny>>,
        shape: Option<Vec<i64>>,
        threads: Option<i64>,
    ) -> PyResult<Self> {
        let threads = thread_count(threads)?;
        let coo = if indices.hasattr("tocoo")? && !indices.hasattr("__array_interface__")? {
            if values.is_some() || shape.is_some() {
                return Err(PyValueError::new_err(
                    "a scipy.sparse matrix carries its own values and shape: pass it alone",
                ));
            }
            let m = indices.call_method0("tocoo")?;
            let shape: Vec<i64> = m.getattr("shape")?.extract()?;
            let dims = dims_of(&shape)?;
            let rows = arrays::index_vector(&m.getattr("row")?, "row")?;
            let cols = arrays::index_vector(&m.getattr("col")?, "col")?;
            let vals = arrays::values(&m.getattr("data")?)?;
            new_coo(dims, vec![rows, cols], vals)?
        } else {
            let (Some(values), Some(shape)) = (values, shape) else {
                return Err(PyValueError::new_err(
                    "from_coo needs indices, values and shape (or a scipy.sparse matrix alone)",
                ));
            };
            let dims = dims_of(&shape)?;
            if !(2..=alto::coo::MAX_ORDER).contains(&dims.len()) {
                return Err(py_err(AltoError::UnsupportedOrder {
                    order: dims.len(),
                    max: alto::coo::MAX_ORDER,
                }));
            }
            let inds = arrays::coordinates(indices, dims.len())?;
            let vals = arrays::values(values)?;
            new_coo(dims, inds, vals)?
        };
        build(py, &coo, threads, Origin::default())
    }

    /// The dims, as a tuple.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.t.dims())
    }

    /// The order N (number of modes).
    #[getter]
    fn ndim(&self) -> usize {
        self.t.order()
    }

    /// Stored nonzeros (after summing duplicates).
    #[getter]
    fn nnz(&self) -> usize {
        self.t.nnz()
    }

    /// Segments of the linearized nonzeros (threads at construction).
    #[getter]
    fn partitions(&self) -> usize {
        self.t.num_partitions()
    }

    fn __repr__(&self) -> String {
        let dims: Vec<String> = self.t.dims().iter().map(|d| d.to_string()).collect();
        format!(
            "SparseTensor(shape=({}{}), nnz={}, index={})",
            dims.join(", "),
            if dims.len() == 1 { "," } else { "" },
            self.t.nnz(),
            self.t.width().name()
        )
    }

    /// What the format makes of the tensor: the fields of `alto info --json` as a dict
    /// (`file`, `order`, `dims`, `nnz`, `duplicates_merged`, `total_bits`, `index_width`,
    /// `partitions`, `min_fiber_reuse`, `modes` (per mode: `mode`, `dim`, `bits`, `mask`,
    /// `fiber_reuse`, `strategy`, `flag_bit`), `alto_bytes`, `coo_bytes`, `compression_vs_coo`,
    /// `parse_seconds`, `parse_mb_per_s`, `build_seconds`). `file` is None for a tensor built
    /// from arrays; the timings are None where nothing was parsed or built.
    fn info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let t = &self.t;
        let layout = t.layout();
        let hex_digits = (layout.width().bits() / 4) as usize;
        let modes = PyList::empty(py);
        for m in 0..t.order() {
            let reuse = fiber_reuse(t.nnz() as u64, t.dims()[m]);
            let d = PyDict::new(py);
            d.set_item("mode", m)?;
            d.set_item("dim", t.dims()[m])?;
            d.set_item("bits", layout.bits()[m])?;
            d.set_item(
                "mask",
                format!("0x{:0w$x}", layout.masks()[m], w = hex_digits),
            )?;
            d.set_item("fiber_reuse", reuse)?;
            let strategy = choose_sync(reuse, t.min_fiber_reuse(), t.flag_bit(m).is_some());
            d.set_item("strategy", strategy.to_string())?;
            d.set_item("flag_bit", t.flag_bit(m))?;
            modes.append(d)?;
        }
        // COO with 64-bit indices, as the paper compares (eq. 2).
        let coo_bytes = t.nnz() as u64 * (t.order() as u64 * 8 + 8);
        let o = &self.origin;
        let d = PyDict::new(py);
        d.set_item("file", o.file.clone())?;
        d.set_item("order", t.order())?;
        d.set_item("dims", t.dims().to_vec())?;
        d.set_item("nnz", t.nnz())?;
        d.set_item("duplicates_merged", t.duplicates_merged())?;
        d.set_item("total_bits", layout.total_bits())?;
        d.set_item("index_width", layout.width().name())?;
        d.set_item("partitions", t.num_partitions())?;
        d.set_item("min_fiber_reuse", t.min_fiber_reuse())?;
        d.set_item("modes", modes)?;
        d.set_item("alto_bytes", t.storage_bytes())?;
        d.set_item("coo_bytes", coo_bytes)?;
        d.set_item(
            "compression_vs_coo",
            coo_bytes as f64 / t.storage_bytes() as f64,
        )?;
        d.set_item("parse_seconds", o.parse_seconds)?;
        d.set_item(
            "parse_mb_per_s",
            o.parse_seconds.map(|s| o.file_bytes as f64 / 1e6 / s),
        )?;
        let build = match &o.build {
            Some(b) => {
                let bd = PyDict::new(py);
                bd.set_item("encode", b.encode)?;
                bd.set_item("sort", b.sort)?;
                bd.set_item("merge", b.merge)?;
                bd.set_item("partition", b.partition)?;
                bd.set_item("flags", b.flags)?;
                bd.set_item("total", b.total)?;
                Some(bd)
            }
            None => None,
        };
        d.set_item("build_seconds", build)?;
        Ok(d)
    }

    /// Writes the tensor: `.alto` (the binary ALTO file, checksummed) or `.tns` (FROSTT text,
    /// 1-based), by extension. Raises `OSError` when the file cannot be written.
    pub(crate) fn save(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        let alto = is_alto_file(&path)?;
        detached(py, || {
            if alto {
                alto::io::binfile::write_alto(&path, &self.t)
            } else {
                alto::io::tns::write_tns(&path, &self.t.to_coo())
            }
        })?
        .map_err(py_err)
    }

    /// The nonzeros as `(indices, values)`: int64 `(nnz, N)` 0-based coordinates and float64
    /// values, in the ALTO order (sorted along the linearized index), duplicates summed.
    fn to_coo<'py>(&self, py: Python<'py>) -> PyResult<CooArrays<'py>> {
        if let Some(d) = self.t.dims().iter().find(|&&d| i64::try_from(d).is_err()) {
            return Err(PyValueError::new_err(format!(
                "dimension {d} does not fit int64 coordinates"
            )));
        }
        let (rows, vals) = detached(py, || {
            let coo = self.t.to_coo();
            let (n, order) = (coo.nnz(), coo.order());
            let mut rows = Array2::<i64>::zeros((n, order));
            for m in 0..order {
                for (dst, &i) in rows.column_mut(m).iter_mut().zip(coo.mode_indices(m)) {
                    // Below its dim, which fits i64 (checked above).
                    *dst = i as i64;
                }
            }
            let (_, _, vals) = coo.into_parts();
            (rows, vals)
        })?;
        Ok((arrays::i64_matrix(py, rows), vals.into_pyarray(py)))
    }

    /// MTTKRP of `mode`: `Y = X_(mode) (khatri-rao of the other factors)`, a float64
    /// `(I_mode, R)` array, as `tensorly.tenalg.unfolding_dot_khatri_rao(X, (None, factors),
    /// mode)`.
    ///
    /// `factors`: one `(I_n, R)` real array per mode (the mode's own is not read but must have
    /// that shape). They are copied once into the aligned rows the kernels read (float64 is
    /// read in place for that copy; other real dtypes are converted first). The result is a
    /// new array that owns the library's buffer (no copy). `mode`: 0-based. `threads`: worker
    /// threads (default: all CPUs; the tensor keeps the segments it was built with).
    /// `sync`: `auto`, `pull`, `atomic` or `flagged`; `kernel`: `auto`, an ISA (`scalar`,
    /// `pulp`, `avx2`, `avx512`) or a kernel name such as `avx2_r16`, as `alto mttkrp --kernel`.
    /// Runs with the GIL released.
    #[pyo3(signature = (factors, mode, *, threads=None, sync="auto", kernel="auto"))]
    fn mttkrp<'py>(
        &self,
        py: Python<'py>,
        factors: &Bound<'py, PyAny>,
        mode: i64,
        threads: Option<i64>,
        sync: &str,
        kernel: &str,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let t = &self.t;
        let order = t.order();
        let mode = usize::try_from(mode)
            .ok()
            .filter(|&m| m < order)
            .ok_or_else(|| {
                PyValueError::new_err(format!(
                    "mode {mode} does not exist in an order-{order} tensor (modes are 0-based)"
                ))
            })?;
        let factors = factor_list(factors, order)?;
        let rank = factors[0].cols();
        if rank == 0 {
            return Err(PyValueError::new_err("rank must be at least 1"));
        }
        let opts = mttkrp_options(sync, kernel, rank)?;
        let threads = thread_count(threads)?;
        let pool = pool(threads)?;
        check_plan(alto::memory::mttkrp_plan(t, rank), "lower the rank")?;
        let out = detached(py, || {
            let mut out = Matrix::zeros(t.dims()[mode] as usize, rank);
            let mut ws = Workspace::new(t, rank);
            mttkrp(t, &factors, mode, &mut out, &opts, &mut ws, &pool).map(|_| out)
        })?
        .map_err(py_err)?;
        arrays::matrix_to_numpy(py, out)
    }
}

/// A COO tensor from checked parts; no nonzeros is an error, as for a file.
fn new_coo(dims: Vec<u64>, inds: Vec<Vec<u64>>, vals: Vec<f64>) -> PyResult<CooTensor> {
    if vals.is_empty() {
        return Err(PyValueError::new_err("the tensor has no nonzeros"));
    }
    CooTensor::new(dims, inds, vals).map_err(py_err)
}

/// One matrix per mode from a sequence of arrays.
pub(crate) fn factor_list(factors: &Bound<'_, PyAny>, order: usize) -> PyResult<Vec<Matrix>> {
    let items: Vec<Bound<'_, PyAny>> = factors
        .try_iter()
        .map_err(|_| PyValueError::new_err("factors must be a sequence of 2-D arrays"))?
        .collect::<PyResult<_>>()?;
    if items.len() != order {
        return Err(PyValueError::new_err(format!(
            "{} factor matrices for an order-{order} tensor",
            items.len()
        )));
    }
    items
        .iter()
        .enumerate()
        .map(|(n, f)| arrays::matrix(f, &format!("factors[{n}]")))
        .collect()
}

/// Refuses a plan that does not fit in what this process may use (`MemoryError`).
pub(crate) fn check_plan(plan: MemoryPlan, hint: &str) -> PyResult<()> {
    plan.check(MemoryLimit::resolve(None), hint).map_err(py_err)
}

/// Reads a FROSTT `.tns` file (1-based coordinates and a value per line; `#` comments) and
/// builds its ALTO form.
///
/// `dims`: declared dims (default: the per-mode maxima). `threads`: segments and threads
/// (default: all CPUs). Raises `OSError` (`FileNotFoundError`, ...) when the file cannot be
/// read and `ValueError` naming the file and line for malformed content.
#[pyfunction]
#[pyo3(signature = (path, *, dims=None, threads=None))]
pub fn read_tns(
    py: Python<'_>,
    path: PathBuf,
    dims: Option<Vec<i64>>,
    threads: Option<i64>,
) -> PyResult<SparseTensor> {
    let threads = thread_count(threads)?;
    let dims = dims.map(|d| dims_of(&d)).transpose()?;
    let file_bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let start = Instant::now();
    let coo = detached(py, || alto::io::tns::read_tns(&path, dims.as_deref()))?.map_err(py_err)?;
    let origin = Origin {
        file: Some(path.display().to_string()),
        parse_seconds: Some(start.elapsed().as_secs_f64()),
        file_bytes,
        build: None,
    };
    build(py, &coo, threads, origin)
}

/// Reads a binary `.alto` file (written by `save` or `alto convert`), checked as strictly as
/// a fresh build, and cuts it into `threads` segments (default: all CPUs) when it holds
/// another number. Raises `OSError` when the file cannot be read and `ValueError` when it is
/// not a valid ALTO file.
#[pyfunction]
#[pyo3(signature = (path, *, threads=None))]
pub fn load(py: Python<'_>, path: PathBuf, threads: Option<i64>) -> PyResult<SparseTensor> {
    let threads = thread_count(threads)?;
    let file_bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    // The file's bytes and the arrays parsed from them.
    let mut plan = MemoryPlan::new();
    plan.add(
        format!("reading {}", path.display()),
        file_bytes.saturating_mul(2),
    );
    check_plan(plan, "use a smaller file")?;
    let pool = pool(threads)?;
    let t = detached(py, || {
        let mut t = alto::io::binfile::read_alto(&path)?;
        if t.num_partitions() != threads {
            pool.install(|| t.repartition(threads))?;
        }
        Ok::<_, AltoError>(t)
    })?
    .map_err(py_err)?;
    Ok(SparseTensor {
        t,
        origin: Origin {
            file: Some(path.display().to_string()),
            file_bytes,
            ..Origin::default()
        },
    })
}
