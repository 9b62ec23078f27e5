//! Coordinate (COO) tensors: the interchange form between files, generators, the oracle and the
//! ALTO builder. Indices are 0-based and stored mode-major (one `Vec` per mode).

use crate::error::{AltoError, Result};

/// The largest order supported (the kernels decode coordinates into a stack array).
pub const MAX_ORDER: usize = alto_kernels::MAX_ORDER;

/// A sparse tensor in coordinate form. Duplicate coordinates are allowed here; the ALTO builder
/// merges them.
#[derive(Clone, Debug, PartialEq)]
pub struct CooTensor {
    dims: Vec<u64>,
    inds: Vec<Vec<u64>>,
    vals: Vec<f64>,
}

impl CooTensor {
    /// Checks shapes, order, dims and that every index is below its dim.
    pub fn new(dims: Vec<u64>, inds: Vec<Vec<u64>>, vals: Vec<f64>) -> Result<Self> {
        let order = dims.len();
        if !(2..=MAX_ORDER).contains(&order) {
            return Err(AltoError::UnsupportedOrder {
                order,
                max: MAX_ORDER,
            });
        }
        if inds.len() != order {
            return Err(AltoError::InvalidArgument(format!(
                "{} index arrays for {order} modes",
                inds.len()
            )));
        }
        for (mode, (&dim, ind)) in dims.iter().zip(&inds).enumerate() {
            if dim == 0 {
                return Err(AltoError::BadDim { mode, dim });
            }
            if ind.len() != vals.len() {
                return Err(AltoError::InvalidArgument(format!(
                    "mode {mode} has {} indices but there are {} values",
                    ind.len(),
                    vals.len()
                )));
            }
            if let Some(&bad) = ind.iter().find(|&&i| i >= dim) {
                return Err(AltoError::InvalidArgument(format!(
                    "mode {mode} index {bad} (0-based) is outside dimension {dim}"
                )));
            }
        }
        Ok(CooTensor { dims, inds, vals })
    }

    pub fn order(&self) -> usize {
        self.dims.len()
    }
    pub fn nnz(&self) -> usize {
        self.vals.len()
    }
    pub fn dims(&self) -> &[u64] {
        &self.dims
    }
    /// 0-based indices of `mode`, one per nonzero.
    pub fn mode_indices(&self, mode: usize) -> &[u64] {
        &self.inds[mode]
    }
    pub fn values(&self) -> &[f64] {
        &self.vals
    }
    /// The coordinate of nonzero `k`.
    pub fn coord(&self, k: usize) -> Vec<u64> {
        self.inds.iter().map(|ind| ind[k]).collect()
    }
    /// Squared Frobenius norm (duplicates counted as separate entries, i.e. before merging).
    pub fn norm_sq(&self) -> f64 {
        self.vals.iter().map(|v| v * v).sum()
    }
    pub fn into_parts(self) -> (Vec<u64>, Vec<Vec<u64>>, Vec<f64>) {
        (self.dims, self.inds, self.vals)
    }
}
