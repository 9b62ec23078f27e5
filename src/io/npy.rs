//! NumPy `.npy` files of f64 in C order: how dense factors, MTTKRP outputs and CP weights are
//! written so results can be checked from Python, and how factors are read back.

use crate::error::{AltoError, Result};
use npyz::WriterBuilder;
use std::io::Write;
use std::path::Path;

/// Writes `data` as a `.npy` array of f64 with `shape` (C order; `data.len()` must be the
/// product of `shape`, which npyz checks).
pub fn write_f64(path: &Path, shape: &[u64], data: &[f64]) -> Result<()> {
    let io = |e| AltoError::io(path, e);
    let file = std::fs::File::create(path).map_err(io)?;
    let mut buf = std::io::BufWriter::new(file);
    let mut w = npyz::WriteOptions::<f64>::new()
        .default_dtype()
        .shape(shape)
        .writer(&mut buf)
        .begin_nd()
        .map_err(io)?;
    w.extend(data.iter().copied()).map_err(io)?;
    w.finish().map_err(io)?;
    buf.flush().map_err(io)
}

/// Reads a 2-D f64 `.npy` file in C order as `(rows, cols, values)`; a 1-D array reads as one
/// column.
pub fn read_f64_2d(path: &Path) -> Result<(usize, usize, Vec<f64>)> {
    let bytes = std::fs::read(path).map_err(|e| AltoError::io(path, e))?;
    let bad = |reason: String| AltoError::BadNpy {
        path: path.to_path_buf(),
        reason,
    };
    let npy = npyz::NpyFile::new(&bytes[..]).map_err(|e| bad(format!("not a .npy file: {e}")))?;
    let shape = npy.shape().to_vec();
    let (rows, cols) = match shape[..] {
        [r, c] => (r as usize, c as usize),
        [r] => (r as usize, 1),
        _ => return Err(bad(format!("expected a 2-D array, found shape {shape:?}"))),
    };
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
    Ok((rows, cols, data))
}
