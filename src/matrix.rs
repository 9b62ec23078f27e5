//! Dense row-major matrices (factors and MTTKRP outputs), 64-byte aligned for the kernels,
//! read from and written to NumPy `.npy` files (shape `rows x cols`) by [`crate::io::npy`].

use crate::error::{AltoError, Result};
use crate::io::npy;
use alto_kernels::AlignedBuf;
use rand::{Rng, SeedableRng};
use std::path::Path;

/// A dense `rows x cols` matrix of f64, row-major.
#[derive(Clone, Debug, PartialEq)]
pub struct Matrix {
    rows: usize,
    cols: usize,
    /// 64-byte aligned, so rows of rank 8k never straddle cache lines in the kernels.
    data: AlignedBuf,
}

impl Matrix {
    pub fn zeros(rows: usize, cols: usize) -> Self {
        Matrix {
            rows,
            cols,
            data: AlignedBuf::zeros(rows * cols),
        }
    }

    pub fn from_vec(rows: usize, cols: usize, data: Vec<f64>) -> Result<Self> {
        if data.len() != rows * cols {
            return Err(AltoError::InvalidArgument(format!(
                "{} values do not make a {rows} x {cols} matrix",
                data.len()
            )));
        }
        Ok(Matrix {
            rows,
            cols,
            data: data.into(),
        })
    }

    /// Entries uniform in [0, 1), deterministic for `seed`.
    pub fn random(rows: usize, cols: usize, seed: u64) -> Self {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
        let data = (0..rows * cols).map(|_| rng.random::<f64>()).collect();
        Matrix { rows, cols, data }
    }

    pub fn rows(&self) -> usize {
        self.rows
    }
    pub fn cols(&self) -> usize {
        self.cols
    }
    pub fn as_slice(&self) -> &[f64] {
        &self.data
    }
    pub fn as_mut_slice(&mut self) -> &mut [f64] {
        &mut self.data
    }
    pub fn row(&self, i: usize) -> &[f64] {
        &self.data[i * self.cols..(i + 1) * self.cols]
    }
    pub fn row_mut(&mut self, i: usize) -> &mut [f64] {
        &mut self.data[i * self.cols..(i + 1) * self.cols]
    }
    pub fn get(&self, i: usize, j: usize) -> f64 {
        self.data[i * self.cols + j]
    }
    pub fn set(&mut self, i: usize, j: usize, x: f64) {
        self.data[i * self.cols + j] = x;
    }
    pub fn into_vec(self) -> Vec<f64> {
        self.data.to_vec()
    }

    /// Largest entrywise |a - b| relative to `scale`, or infinity on a shape mismatch.
    pub fn max_abs_diff(&self, other: &Matrix) -> f64 {
        if (self.rows, self.cols) != (other.rows, other.cols) {
            return f64::INFINITY;
        }
        self.data
            .iter()
            .zip(&other.data)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max)
    }

    /// Writes the matrix as a `.npy` file (f64, C order), through [`crate::io::npy`].
    pub fn write_npy(&self, path: &Path) -> Result<()> {
        npy::write_f64(path, &[self.rows as u64, self.cols as u64], &self.data)
    }

    /// Reads a 2-D f64 `.npy` file in C order (a 1-D array reads as one column).
    pub fn read_npy(path: &Path) -> Result<Matrix> {
        let (rows, cols, data) = npy::read_f64_2d(path)?;
        Ok(Matrix {
            rows,
            cols,
            data: data.into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use npyz::WriterBuilder;

    #[test]
    fn npy_round_trip_and_errors() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.npy");
        let m = Matrix::random(5, 3, 1);
        m.write_npy(&p).unwrap();
        assert_eq!(Matrix::read_npy(&p).unwrap(), m);
        std::fs::write(&p, b"\x93NUMPY garbage").unwrap();
        let e = Matrix::read_npy(&p).unwrap_err().to_string();
        assert!(e.contains("m.npy"), "{e}");
        let mut bytes = Vec::new();
        {
            let mut w = npyz::WriteOptions::<i32>::new()
                .default_dtype()
                .shape(&[2, 2])
                .writer(&mut bytes)
                .begin_nd()
                .unwrap();
            w.extend([1, 2, 3, 4]).unwrap();
            w.finish().unwrap();
        }
        std::fs::write(&p, &bytes).unwrap();
        assert!(Matrix::read_npy(&p)
            .unwrap_err()
            .to_string()
            .contains("float64"));
    }
}
