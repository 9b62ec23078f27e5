//! Dense row-major matrices (factors and MTTKRP outputs) and their NumPy `.npy` files
//! (f64, C order, shape `rows x cols`), so results can be checked from Python.

use crate::error::{AltoError, Result};
use alto_kernels::AlignedBuf;
use npyz::WriterBuilder;
use rand::{Rng, SeedableRng};
use std::io::Write;
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

    /// Writes the matrix as a `.npy` file (f64, C order).
    pub fn write_npy(&self, path: &Path) -> Result<()> {
        let io = |e| AltoError::io(path, e);
        let file = std::fs::File::create(path).map_err(io)?;
        let mut buf = std::io::BufWriter::new(file);
        let mut w = npyz::WriteOptions::<f64>::new()
            .default_dtype()
            .shape(&[self.rows as u64, self.cols as u64])
            .writer(&mut buf)
            .begin_nd()
            .map_err(io)?;
        w.extend(self.data.iter().copied()).map_err(io)?;
        w.finish().map_err(io)?;
        buf.flush().map_err(io)
    }

    /// Reads a 2-D f64 `.npy` file in C order (a 1-D array reads as one column).
    pub fn read_npy(path: &Path) -> Result<Matrix> {
        let bytes = std::fs::read(path).map_err(|e| AltoError::io(path, e))?;
        let bad = |reason: String| AltoError::BadNpy {
            path: path.to_path_buf(),
            reason,
        };
        // npyz multiplies the header's shape without overflow checks: check it first.
        check_npy_shape(&bytes).map_err(bad)?;
        let npy =
            npyz::NpyFile::new(&bytes[..]).map_err(|e| bad(format!("not a .npy file: {e}")))?;
        let shape = npy.shape().to_vec();
        let (rows, cols) = match shape[..] {
            [r, c] => (r, c),
            [r] => (r, 1),
            _ => return Err(bad(format!("expected a 2-D array, found shape {shape:?}"))),
        };
        // The shape is checked against the bytes present before anything is sized by it: a
        // tampered header must not wrap `rows * cols` or ask the allocator for 2^80 bytes.
        let fits = rows
            .checked_mul(cols)
            .and_then(|n| n.checked_mul(8))
            .is_some_and(|b| b <= bytes.len() as u64);
        if !fits {
            return Err(bad(format!(
                "shape {shape:?} needs more data than the file's {} bytes",
                bytes.len()
            )));
        }
        let (rows, cols) = (rows as usize, cols as usize);
        if npy.order() != npyz::Order::C && rows > 1 && cols > 1 {
            return Err(bad(
                "expected C (row-major) order, found Fortran order".into()
            ));
        }
        let dtype = npy.dtype();
        let ok = matches!(&dtype, npyz::DType::Plain(ts) if ts.type_char() == npyz::TypeChar::Float && ts.size_field() == 8);
        if !ok {
            return Err(bad(format!(
                "expected float64 data, found {}",
                dtype.descr()
            )));
        }
        let data: Vec<f64> = npy
            .into_vec()
            .map_err(|e| bad(format!("cannot read data: {e}")))?;
        if data.len() != rows * cols {
            return Err(bad(format!("{} values for shape {shape:?}", data.len())));
        }
        Ok(Matrix {
            rows,
            cols,
            data: data.into(),
        })
    }
}

/// Reads the `shape` tuple of a `.npy` header (any version) and checks that its element count
/// fits the file's bytes as f64 data, with checked arithmetic. Other header errors are left to
/// the full parser.
fn check_npy_shape(bytes: &[u8]) -> std::result::Result<(), String> {
    let (len_at, len_bytes) = match bytes.get(6) {
        Some(1) => (8, 2),
        Some(_) => (8, 4),
        None => return Err("not a .npy file: too short".into()),
    };
    let header_len = match bytes.get(len_at..len_at + len_bytes) {
        Some(b) if len_bytes == 2 => u16::from_le_bytes([b[0], b[1]]) as usize,
        Some(b) => u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize,
        None => return Err("not a .npy file: truncated header".into()),
    };
    let start = len_at + len_bytes;
    let header = bytes
        .get(start..start.saturating_add(header_len))
        .ok_or("not a .npy file: truncated header")?;
    let text = String::from_utf8_lossy(header);
    let Some(at) = text.find("'shape'") else {
        return Ok(()); // no shape: the full parser reports it
    };
    let rest = &text[at..];
    let (Some(open), Some(close)) = (rest.find('('), rest.find(')')) else {
        return Ok(());
    };
    if close < open {
        return Ok(());
    }
    let mut count: u64 = 1;
    for dim in rest[open + 1..close]
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
    {
        let d: u64 = dim
            .parse()
            .map_err(|_| format!("bad shape entry `{dim}`"))?;
        count = count
            .checked_mul(d)
            .ok_or_else(|| format!("shape {} overflows", &rest[open..=close]))?;
    }
    let data = bytes.len().saturating_sub(start + header_len) as u64;
    if count.checked_mul(8).is_none_or(|need| need > data) {
        return Err(format!(
            "shape {} needs more data than the file's {} bytes",
            &rest[open..=close],
            bytes.len()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
