//! The `(weights, factors)` pair both fitted models are (`CPResult` of `cp_als`, `APRResult` of
//! `cp_apr`): the base class `CPTensorResult` of both, with the NumPy arrays and the
//! unpacking, indexing and iteration that let TensorLy take either as a CP tensor.

use crate::arrays::matrix_to_numpy;
use alto::Matrix;
use numpy::{IntoPyArray, PyArray1, PyArray2};
use pyo3::exceptions::PyIndexError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

/// A fitted CP model, the pair `(weights, factors)`: `weights, factors = result` unpacks it,
/// `result[0]` and `result[1]` index it, and TensorLy functions that take a CP tensor
/// (`tensorly.cp_to_tensor(result)`, `tensorly.cp_tensor.CPTensor(result)`) accept it as it is.
///
/// The base class of `CPResult` and `APRResult`, which add how the fit went (and say how the
/// factors' columns are normalized); not made directly.
#[pyclass(module = "alto", name = "CPTensorResult", subclass, frozen)]
pub struct CpPair {
    weights: Py<PyArray1<f64>>,
    factors: Vec<Py<PyArray2<f64>>>,
    shape: Vec<u64>,
}

impl CpPair {
    /// Hands `lambda` and `factors` to NumPy.
    pub(crate) fn new(
        py: Python<'_>,
        lambda: Vec<f64>,
        factors: Vec<Matrix>,
        shape: &[u64],
    ) -> PyResult<Self> {
        Ok(CpPair {
            weights: lambda.into_pyarray(py).unbind(),
            factors: factors
                .into_iter()
                .map(|f| matrix_to_numpy(py, f).map(Bound::unbind))
                .collect::<PyResult<_>>()?,
            shape: shape.to_vec(),
        })
    }

    /// `(3, 4, 5)` for a repr.
    pub(crate) fn shape_text(&self) -> String {
        let dims: Vec<String> = self.shape.iter().map(|d| d.to_string()).collect();
        format!("({})", dims.join(", "))
    }
}

#[pymethods]
impl CpPair {
    /// The component weights lambda, float64 `(R,)`.
    #[getter]
    pub(crate) fn weights(&self, py: Python<'_>) -> Py<PyArray1<f64>> {
        self.weights.clone_ref(py)
    }

    /// The factor matrices, float64 `(I_n, R)` each (normalized as the class says).
    #[getter]
    fn factors<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, self.factors.iter().map(|f| f.clone_ref(py)))
    }

    /// The rank R.
    #[getter]
    pub(crate) fn rank(&self, py: Python<'_>) -> usize {
        self.weights.bind(py).len().unwrap_or(0)
    }

    /// The dims of the decomposed tensor.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.shape)
    }

    /// The same model as a `tensorly.cp_tensor.CPTensor` (needs tensorly).
    fn to_tensorly<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let pair = (self.weights(py), self.factors(py)?);
        py.import("tensorly.cp_tensor")?
            .getattr("CPTensor")?
            .call1((pair,))
    }

    fn __len__(&self) -> usize {
        2
    }

    /// `pair[index]`: 0 (or -2) the weights, 1 (or -1) the factors; the error names the
    /// class of `slf` (`CPResult`, `APRResult`).
    fn __getitem__(slf: &Bound<'_, Self>, index: isize) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let pair = slf.get();
        match index {
            0 | -2 => Ok(pair.weights(py).into_any()),
            1 | -1 => Ok(pair.factors(py)?.into_any().unbind()),
            _ => Err(PyIndexError::new_err(format!(
                "{} index {index} out of range: 0 is the weights, 1 the factors",
                slf.get_type().name()?
            ))),
        }
    }

    /// An iterator over `(weights, factors)`, so that `weights, factors = result` unpacks.
    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let pair = PyTuple::new(
            py,
            [
                self.weights(py).into_any(),
                self.factors(py)?.into_any().unbind(),
            ],
        )?;
        Ok(pair.try_iter()?.into_any())
    }
}
