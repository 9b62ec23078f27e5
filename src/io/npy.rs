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
    // npyz multiplies the header's shape without overflow checks: check it first.
    check_shape(&bytes).map_err(bad)?;
    let npy = npyz::NpyFile::new(&bytes[..]).map_err(|e| bad(format!("not a .npy file: {e}")))?;
    let shape = npy.shape().to_vec();
    let (rows, cols) = match shape[..] {
        [r, c] => (r, c),
        [r] => (r, 1),
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
    // The shape must fit the bytes present before anything is sized by it.
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
    let data: Vec<f64> = npy
        .into_vec()
        .map_err(|e| bad(format!("cannot read data: {e}")))?;
    if data.len() != rows * cols {
        return Err(bad(format!("{} values for shape {shape:?}", data.len())));
    }
    Ok((rows, cols, data))
}

/// Reads the `shape` tuple of a `.npy` header (any version) and checks that its element count
/// fits the file's bytes (at least one byte per element, whatever the dtype), with checked
/// arithmetic. Other header errors are left to the full parser.
fn check_shape(bytes: &[u8]) -> std::result::Result<(), String> {
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
    if count > data {
        return Err(format!(
            "shape {} needs more data than the file's {} bytes",
            &rest[open..=close],
            bytes.len()
        ));
    }
    Ok(())
}
