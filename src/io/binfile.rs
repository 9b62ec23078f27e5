//! The binary file of a built ALTO tensor (`.alto`), so repeated runs skip parsing and sorting.
//!
//! Layout, little-endian: magic `ALTOTNS\0`, version (u32), index width in bits (u32), order
//! (u32), reserved (u32); dims (u64 each); masks (u128 each); nnz, partitions, duplicates merged,
//! fiber-reuse threshold (u64 each); flag bit per mode (i32, -1 = none); segment bounds
//! (partitions + 1 u64); intervals (partitions x order pairs of u64); indices (width/8 bytes
//! each); values (f64 each); CRC-32 of all preceding bytes (u32). A truncated or corrupted file
//! is an error, never garbage: the size and checksum are checked before anything is parsed, and
//! every structural invariant after, including
//! the boundary flags (`AltoTensor::from_stored`): the CRC is no guard against a crafted file.

use crate::coo::MAX_ORDER;
use crate::error::{AltoError, Result};
use crate::format::alto::{AltoTensor, AnyAlto, StoredParts};
use crate::format::Layout;
use crate::with_alto;
use alto_kernels::HwBits;
use std::io::Write;
use std::path::Path;

const MAGIC: &[u8; 8] = b"ALTOTNS\0";
const VERSION: u32 = 1;

struct CrcWriter<W: Write> {
    inner: W,
    crc: crc32fast::Hasher,
}

impl<W: Write> Write for CrcWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.crc.update(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Writes `t` to `path`.
pub fn write_alto(path: &Path, t: &AnyAlto) -> Result<()> {
    let io = |e| AltoError::io(path, e);
    let file = std::fs::File::create(path).map_err(io)?;
    let mut w = CrcWriter {
        inner: std::io::BufWriter::with_capacity(1 << 20, file),
        crc: crc32fast::Hasher::new(),
    };
    with_alto!(t, x => write_body(&mut w, x)).map_err(io)?;
    let crc = w.crc.clone().finalize();
    w.inner.write_all(&crc.to_le_bytes()).map_err(io)?;
    w.inner.flush().map_err(io)
}

fn write_body<I: HwBits, W: Write>(w: &mut W, t: &AltoTensor<I>) -> std::io::Result<()> {
    w.write_all(MAGIC)?;
    for x in [VERSION, I::BITS, t.order() as u32, 0] {
        w.write_all(&x.to_le_bytes())?;
    }
    for &d in t.dims() {
        w.write_all(&d.to_le_bytes())?;
    }
    for m in t.masks() {
        w.write_all(&m.to_u128().to_le_bytes())?;
    }
    let parts = t.num_partitions() as u64;
    for x in [
        t.nnz() as u64,
        parts,
        t.duplicates_merged,
        t.min_fiber_reuse,
    ] {
        w.write_all(&x.to_le_bytes())?;
    }
    for f in &t.flag_bits {
        w.write_all(&f.map_or(-1i32, |b| b as i32).to_le_bytes())?;
    }
    for &b in &t.bounds {
        w.write_all(&(b as u64).to_le_bytes())?;
    }
    for &(lo, hi) in &t.intervals {
        w.write_all(&lo.to_le_bytes())?;
        w.write_all(&hi.to_le_bytes())?;
    }
    let bytes = (I::BITS / 8) as usize;
    let mut buf = Vec::with_capacity(1 << 16);
    for chunk in t.idx.chunks(4096) {
        buf.clear();
        for x in chunk {
            buf.extend_from_slice(&x.to_u128().to_le_bytes()[..bytes]);
        }
        w.write_all(&buf)?;
    }
    for chunk in t.vals.chunks(4096) {
        buf.clear();
        for v in chunk {
            buf.extend_from_slice(&v.to_le_bytes());
        }
        w.write_all(&buf)?;
    }
    Ok(())
}

/// A bounds-checked cursor over the file bytes.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> std::result::Result<&'a [u8], String> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or("truncated")?;
        let s = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn u32(&mut self) -> std::result::Result<u32, String> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }
    fn i32(&mut self) -> std::result::Result<i32, String> {
        Ok(i32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }
    fn u64(&mut self) -> std::result::Result<u64, String> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }
    fn u128(&mut self) -> std::result::Result<u128, String> {
        Ok(u128::from_le_bytes(
            self.take(16)?.try_into().expect("16 bytes"),
        ))
    }
    /// Checks that `count` items of `size` bytes remain before allocating for them.
    fn expect_room(&self, count: u64, size: u64) -> std::result::Result<usize, String> {
        let need = count.checked_mul(size).ok_or("size overflow")?;
        if need > (self.bytes.len() - self.pos) as u64 {
            return Err("truncated (declared sizes exceed the file)".into());
        }
        Ok(count as usize)
    }
}

/// Reads an ALTO binary file.
pub fn read_alto(path: &Path) -> Result<AnyAlto> {
    let bytes = std::fs::read(path).map_err(|e| AltoError::io(path, e))?;
    parse_alto(&bytes).map_err(|reason| AltoError::BadBinary {
        path: path.to_path_buf(),
        reason,
    })
}

/// Parses the bytes of an ALTO binary file; the error says what is wrong.
pub fn parse_alto(bytes: &[u8]) -> std::result::Result<AnyAlto, String> {
    if bytes.len() < MAGIC.len() + 4 || &bytes[..MAGIC.len()] != MAGIC {
        return Err("bad magic".into());
    }
    let (body, crc) = bytes.split_at(bytes.len() - 4);
    let stored = u32::from_le_bytes(crc.try_into().expect("4 bytes"));
    if crc32fast::hash(body) != stored {
        return Err("checksum mismatch (truncated or corrupted)".into());
    }
    let mut c = Cursor {
        bytes: body,
        pos: MAGIC.len(),
    };
    let version = c.u32()?;
    if version != VERSION {
        return Err(format!(
            "unsupported version {version} (expected {VERSION})"
        ));
    }
    let width = c.u32()?;
    let order = c.u32()? as usize;
    let _reserved = c.u32()?;
    if !(2..=MAX_ORDER).contains(&order) {
        return Err(format!("order {order} out of range"));
    }
    match width {
        32 => parse_tensor::<u32>(&mut c, order).map(AnyAlto::U32),
        64 => parse_tensor::<u64>(&mut c, order).map(AnyAlto::U64),
        128 => parse_tensor::<u128>(&mut c, order).map(AnyAlto::U128),
        w => Err(format!("unsupported index width {w}")),
    }
}

fn parse_tensor<I: HwBits>(
    c: &mut Cursor<'_>,
    order: usize,
) -> std::result::Result<AltoTensor<I>, String> {
    let dims = (0..order)
        .map(|_| c.u64())
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let layout = Layout::new(&dims).map_err(|e| e.to_string())?;
    if layout.width().bits() != I::BITS {
        return Err(format!(
            "index width {} does not match the dims' {} bits",
            I::BITS,
            layout.total_bits()
        ));
    }
    let masks = (0..order)
        .map(|_| c.u128())
        .collect::<std::result::Result<Vec<_>, _>>()?;
    if masks != layout.masks() {
        return Err("masks do not match the dims".into());
    }
    let nnz = c.u64()?;
    let parts = c.u64()?;
    let duplicates_merged = c.u64()?;
    let min_fiber_reuse = c.u64()?;
    if parts == 0 {
        return Err("zero partitions".into());
    }
    let mut flag_bits = Vec::with_capacity(order);
    for _ in 0..order {
        flag_bits.push(match c.i32()? {
            -1 => None,
            b if b >= 0 && (b as u32) >= layout.total_bits() && (b as u32) < I::BITS => {
                Some(b as u32)
            }
            b => return Err(format!("flag bit {b} out of range")),
        });
    }
    // Every count is checked against the bytes left before anything is allocated for it.
    let bound_count = parts.checked_add(1).ok_or("partition count overflows")?;
    let nb = c.expect_room(bound_count, 8)?;
    let bounds = (0..nb)
        .map(|_| {
            let b = c.u64()?;
            usize::try_from(b).map_err(|_| format!("segment bound {b} overflows"))
        })
        .collect::<std::result::Result<Vec<_>, _>>()?;
    if bounds.last().map(|&b| b as u64) != Some(nnz) {
        return Err("segment bounds are inconsistent".into());
    }
    let interval_count = parts
        .checked_mul(order as u64)
        .ok_or("partition count overflows")?;
    let ni = c.expect_room(interval_count, 16)?;
    let intervals = (0..ni)
        .map(|_| Ok((c.u64()?, c.u64()?)))
        .collect::<std::result::Result<Vec<_>, String>>()?;
    let bytes = (I::BITS / 8) as usize;
    let n = c.expect_room(nnz, bytes as u64 + 8)?;
    let raw = c.take(n * bytes)?;
    let idx: Vec<I> = raw
        .chunks_exact(bytes)
        .map(|b| {
            let mut w = [0u8; 16];
            w[..bytes].copy_from_slice(b);
            I::from_u128(u128::from_le_bytes(w))
        })
        .collect();
    let vals: Vec<f64> = c
        .take(n * 8)?
        .chunks_exact(8)
        .map(|b| f64::from_le_bytes(b.try_into().expect("8 bytes")))
        .collect();
    if c.pos != c.bytes.len() {
        return Err("trailing bytes after the values".into());
    }
    AltoTensor::from_stored(StoredParts {
        layout,
        masks: masks.iter().map(|&m| I::from_u128(m)).collect(),
        idx,
        vals,
        bounds,
        intervals,
        flag_bits,
        duplicates_merged,
        min_fiber_reuse,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::BuildOptions;

    fn sample(dims: &[u64]) -> AnyAlto {
        let coo = crate::gen::uniform(dims, 500, 3).unwrap();
        AnyAlto::build(
            &coo,
            &BuildOptions {
                partitions: 3,
                ..Default::default()
            },
        )
        .unwrap()
        .0
    }

    #[test]
    fn round_trips_every_width() {
        let dir = tempfile::tempdir().unwrap();
        for dims in [
            vec![30, 40, 50],
            vec![1 << 20, 1 << 20, 1 << 10],
            vec![1 << 22, 1 << 22, 1 << 22],
        ] {
            let t = sample(&dims);
            let p = dir.path().join("t.alto");
            write_alto(&p, &t).unwrap();
            assert_eq!(read_alto(&p).unwrap(), t);
        }
    }

    #[test]
    fn truncation_and_corruption_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.alto");
        write_alto(&p, &sample(&[30, 40, 50])).unwrap();
        let good = std::fs::read(&p).unwrap();
        for cut in [0, 5, 12, 40, good.len() / 2, good.len() - 1] {
            assert!(parse_alto(&good[..cut]).is_err(), "truncated at {cut}");
        }
        for pos in (0..good.len()).step_by(97) {
            let mut bad = good.clone();
            bad[pos] ^= 0x10;
            assert!(parse_alto(&bad).is_err(), "flipped byte {pos}");
        }
        std::fs::write(&p, &good[..good.len() - 3]).unwrap();
        let e = read_alto(&p).unwrap_err().to_string();
        assert!(e.contains("t.alto"), "{e}");
    }
}
