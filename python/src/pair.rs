//! The `(weights, factors)` pair both fitted models are (`CPResult` of `cp_als`, `APRResult` of
//! `cp_apr`): the NumPy arrays, and the unpacking, indexing and iteration that let TensorLy
//! take either as a CP tensor. Each result class holds a [`CpPair`] and forwards its Python
//! methods here.

use crate::arrays::matrix_to_numpy;
use alto::Matrix;
use numpy::{IntoPyArray, PyArray1, PyArray2};
use pyo3::exceptions::PyIndexError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

/// A CP model's weights `(R,)` and factors `(I_n, R)` as float64 NumPy arrays (the library's
/// buffers, not copied), with the dims of the tensor it models.
pub(crate) struct CpPair {
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

    pub(crate) fn weights(&self, py: Python<'_>) -> Py<PyArray1<f64>> {
        self.weights.clone_ref(py)
    }

    pub(crate) fn factors<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, self.factors.iter().map(|f| f.clone_ref(py)))
    }

    pub(crate) fn rank(&self, py: Python<'_>) -> usize {
        self.weights.bind(py).len().unwrap_or(0)
    }

    pub(crate) fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.shape)
    }

    /// `(3, 4, 5)` for a repr.
    pub(crate) fn shape_text(&self) -> String {
        let dims: Vec<String> = self.shape.iter().map(|d| d.to_string()).collect();
        format!("({})", dims.join(", "))
    }

    /// The same model as a `tensorly.cp_tensor.CPTensor` (needs tensorly).
    pub(crate) fn to_tensorly<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let pair = (self.weights(py), self.factors(py)?);
        py.import("tensorly.cp_tensor")?
            .getattr("CPTensor")?
            .call1((pair,))
    }

    /// `pair[index]`: 0 (or -2) the weights, 1 (or -1) the factors; `class` names the result
    /// class in the error.
    pub(crate) fn get(&self, py: Python<'_>, index: isize, class: &str) -> PyResult<Py<PyAny>> {
        match index {
            0 | -2 => Ok(self.weights(py).into_any()),
            1 | -1 => Ok(self.factors(py)?.into_any().unbind()),
            _ => Err(PyIndexError::new_err(format!(
                "{class} index {index} out of range: 0 is the weights, 1 the factors"
            ))),
        }
    }

    /// An iterator over `(weights, factors)`, so that `weights, factors = result` unpacks.
    pub(crate) fn iter<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
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
