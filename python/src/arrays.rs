//! NumPy arrays in and out.
//!
//! In: anything `numpy.asarray` takes. Float64 arrays are read in place (borrowed, any
//! layout); other integer or floating dtypes are converted once by NumPy first. Other dtypes
//! (complex, bool, strings, objects) are a `TypeError`. What is read is written once into the
//! library's own buffers: coordinates into the COO arrays the ALTO encoding is built from,
//! factors into the 64-byte aligned rows the kernels read.
//!
//! Out: the library's matrices become NumPy arrays without a copy (the array's base is the
//! Rust buffer, freed when the array is).

use alto::Matrix;
use numpy::ndarray::{Array2, ArrayViewD, Dimension};
use numpy::{IntoPyArray, PyArray2, PyArrayDyn, PyArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// `numpy.asarray(obj)` and its dtype's kind (`f`, `i`, `u`, `b`, `c`, ...).
fn asarray<'py>(obj: &Bound<'py, PyAny>) -> PyResult<(Bound<'py, PyAny>, String)> {
    let py = obj.py();
    let arr = py.import("numpy")?.call_method1("asarray", (obj,))?;
    let kind: String = arr.getattr("dtype")?.getattr("kind")?.extract()?;
    Ok((arr, kind))
}

/// `obj` as a float64 array: borrowed when it is one, else converted once from an integer or
/// floating dtype. `what` names the argument in errors.
fn float_array<'py>(obj: &Bound<'py, PyAny>, what: &str) -> PyResult<Bound<'py, PyArrayDyn<f64>>> {
    let (arr, kind) = asarray(obj)?;
    if !matches!(kind.as_str(), "f" | "i" | "u") {
        let dtype = arr.getattr("dtype")?.str()?.to_string();
        return Err(PyTypeError::new_err(format!(
            "{what} must be a real (float or integer) array, got dtype {dtype}"
        )));
    }
    let arr = match arr.cast_into::<PyArrayDyn<f64>>() {
        Ok(a) => a,
        Err(e) => astype_in_place(&e.into_inner(), "float64")?.cast_into::<PyArrayDyn<f64>>()?,
    };
    Ok(arr)
}

/// A 2-D real array as a library matrix (one copy into aligned rows).
pub(crate) fn matrix(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Matrix> {
    let arr = float_array(obj, what)?;
    let ro = arr.readonly();
    let view = ro.as_array();
    let &[rows, cols] = view.shape() else {
        return Err(PyValueError::new_err(format!(
            "{what} must be 2-D (rows x rank), got shape {:?}",
            view.shape()
        )));
    };
    let mut m = Matrix::zeros(rows, cols);
    match view.as_slice() {
        Some(s) => m.as_mut_slice().copy_from_slice(s),
        None => m
            .as_mut_slice()
            .iter_mut()
            .zip(view.iter())
            .for_each(|(d, &s)| *d = s),
    }
    Ok(m)
}

/// A 1-D real array of finite values.
pub(crate) fn values(obj: &Bound<'_, PyAny>) -> PyResult<Vec<f64>> {
    let arr = float_array(obj, "values")?;
    let ro = arr.readonly();
    let view = ro.as_array();
    if view.ndim() != 1 {
        return Err(PyValueError::new_err(format!(
            "values must be 1-D (one per nonzero), got shape {:?}",
            view.shape()
        )));
    }
    if let Some((k, v)) = view.iter().enumerate().find(|(_, v)| !v.is_finite()) {
        return Err(PyValueError::new_err(format!(
            "values[{k}] is {v}: values must be finite"
        )));
    }
    Ok(view.iter().copied().collect())
}

/// `arr.astype(dtype, copy=False)`: the array itself when it already has that dtype.
fn astype_in_place<'py>(arr: &Bound<'py, PyAny>, dtype: &str) -> PyResult<Bound<'py, PyAny>> {
    let kwargs = PyDict::new(arr.py());
    kwargs.set_item("copy", false)?;
    arr.call_method("astype", (dtype,), Some(&kwargs))
}

/// `obj` as a view of non-negative 0-based indices, handed to `f` as u64: integer dtypes only
/// (floats are refused, not truncated); int64 and uint64 arrays are read in place.
fn with_indices<R>(
    obj: &Bound<'_, PyAny>,
    what: &str,
    f: impl FnOnce(ArrayViewD<'_, u64>) -> PyResult<R>,
) -> PyResult<R> {
    let (arr, kind) = asarray(obj)?;
    match kind.as_str() {
        "u" => {
            let arr = astype_in_place(&arr, "uint64")?.cast_into::<PyArrayDyn<u64>>()?;
            let ro = arr.readonly();
            f(ro.as_array())
        }
        "i" => {
            let arr = astype_in_place(&arr, "int64")?.cast_into::<PyArrayDyn<i64>>()?;
            let ro = arr.readonly();
            let view = ro.as_array();
            if let Some((pos, v)) = view.indexed_iter().find(|(_, &v)| v < 0) {
                return Err(PyValueError::new_err(format!(
                    "{what}{:?} is {v}: indices are 0-based and must be >= 0",
                    pos.slice()
                )));
            }
            // SAFETY: i64 and u64 have the same size and alignment, the view stays borrowed
            // from `ro` for the call, and every entry is >= 0 (checked above), so each u64
            // read is the index itself.
            let unsigned = unsafe { view.raw_view().cast::<u64>().deref_into_view() };
            f(unsigned)
        }
        _ => {
            let dtype = arr.getattr("dtype")?.str()?.to_string();
            Err(PyTypeError::new_err(format!(
                "{what} must be an integer array, got dtype {dtype}"
            )))
        }
    }
}

/// The per-mode index vectors of an `(nnz, N)` or `(N, nnz)` integer array (read as
/// `(nnz, N)` when both fit, i.e. when nnz == N).
pub(crate) fn coordinates(obj: &Bound<'_, PyAny>, order: usize) -> PyResult<Vec<Vec<u64>>> {
    with_indices(obj, "indices", |view| {
        let shape = view.shape().to_vec();
        let view = view
            .into_dimensionality::<numpy::ndarray::Ix2>()
            .map_err(|_| bad_coordinates(&shape, order))?;
        if shape[1] == order {
            Ok((0..order).map(|m| view.column(m).to_vec()).collect())
        } else if shape[0] == order {
            Ok((0..order).map(|m| view.row(m).to_vec()).collect())
        } else {
            Err(bad_coordinates(&shape, order))
        }
    })
}

fn bad_coordinates(shape: &[usize], order: usize) -> PyErr {
    PyValueError::new_err(format!(
        "indices must have shape (nnz, {order}) or ({order}, nnz) for a tensor of order \
         {order} (len(shape)), got {shape:?}"
    ))
}

/// A 1-D integer array of 0-based indices (a `scipy.sparse` row or column array).
pub(crate) fn index_vector(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<u64>> {
    with_indices(obj, what, |view| {
        if view.ndim() != 1 {
            return Err(PyValueError::new_err(format!(
                "{what} must be 1-D, got shape {:?}",
                view.shape()
            )));
        }
        Ok(view.iter().copied().collect())
    })
}

/// Owns a matrix whose buffer a NumPy array uses as its data.
#[pyclass(module = "alto")]
struct MatrixBuffer(Matrix);

/// `m` as a NumPy array, without a copy: the array's base object owns the buffer.
pub(crate) fn matrix_to_numpy(py: Python<'_>, m: Matrix) -> PyResult<Bound<'_, PyArray2<f64>>> {
    let (rows, cols) = (m.rows(), m.cols());
    let owner = Bound::new(py, MatrixBuffer(m))?;
    let mut guard = owner.borrow_mut();
    let view = numpy::ndarray::ArrayViewMut2::from_shape((rows, cols), guard.0.as_mut_slice())
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    // SAFETY: the view points into the heap buffer of the matrix `owner` holds. The array
    // keeps `owner` alive as its base object, nothing in Rust touches the matrix again, and the
    // buffer never moves (moving the matrix would not move its heap allocation), so the
    // array's data stays valid and unaliased for as long as the array lives.
    let array = unsafe { PyArray2::borrow_from_array(&view, owner.clone().into_any()) };
    drop(guard);
    Ok(array)
}

/// An owned `rows x cols` array of i64 as NumPy (moved, not copied).
pub(crate) fn i64_matrix(py: Python<'_>, a: Array2<i64>) -> Bound<'_, PyArray2<i64>> {
    a.into_pyarray(py)
}
