//! FROSTT `.tns` text files (SPEC section 10): one nonzero a line, N 1-based indices then a
//! value; empty lines and lines starting with `#` are skipped.
//!
//! The reader streams the file in large blocks and parses bytes directly (no per-line
//! allocation); every malformed line is a typed error naming the file and line.

use crate::coo::{CooTensor, MAX_ORDER};
use crate::error::{AltoError, Result, TnsLineError};
use crate::format::layout::bits_for_dim;
use std::io::{BufWriter, Read, Write};
use std::path::Path;

const BLOCK: usize = 8 << 20;

/// Reads a `.tns` file. `dims`: declared dimensions (indices above them are errors); when
/// `None`, each dim is the largest index seen in its mode.
pub fn read_tns(path: &Path, dims: Option<&[u64]>) -> Result<CooTensor> {
    let file = std::fs::File::open(path).map_err(|e| AltoError::io(path, e))?;
    read_tns_from(file, path, dims)
}

/// Reads `.tns` text from any reader; `path` names the source in errors.
pub fn read_tns_from(
    mut reader: impl Read,
    path: &Path,
    dims: Option<&[u64]>,
) -> Result<CooTensor> {
    let mut parser = LineParser::new(path, dims)?;
    let mut buf = vec![0u8; BLOCK];
    let mut filled = 0usize;
    loop {
        let n = read_some(&mut reader, &mut buf[filled..]).map_err(|e| AltoError::io(path, e))?;
        let eof = n == 0;
        filled += n;
        // Parse every complete line; keep the partial last line for the next block.
        let complete = if eof {
            filled
        } else {
            match memchr::memrchr(b'\n', &buf[..filled]) {
                Some(p) => p + 1,
                None if filled == buf.len() => {
                    // A single line longer than the block: grow the buffer.
                    buf.resize(buf.len() * 2, 0);
                    continue;
                }
                None => continue,
            }
        };
        let mut start = 0;
        while start < complete {
            let end = memchr::memchr(b'\n', &buf[start..complete]).map_or(complete, |p| start + p);
            parser.line(&buf[start..end])?;
            start = end + 1;
        }
        if eof {
            break;
        }
        buf.copy_within(complete..filled, 0);
        filled -= complete;
    }
    parser.finish()
}

fn read_some(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    loop {
        match r.read(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

struct LineParser<'p> {
    path: &'p Path,
    declared: Option<Vec<u64>>,
    line_no: u64,
    order: usize,
    maxima: Vec<u64>,
    inds: Vec<Vec<u64>>,
    vals: Vec<f64>,
}

impl<'p> LineParser<'p> {
    fn new(path: &'p Path, dims: Option<&[u64]>) -> Result<Self> {
        if let Some(d) = dims {
            if let Some((mode, &dim)) = d.iter().enumerate().find(|(_, &x)| x == 0) {
                return Err(AltoError::BadDim { mode, dim });
            }
        }
        Ok(LineParser {
            path,
            declared: dims.map(|d| d.to_vec()),
            line_no: 0,
            order: 0,
            maxima: Vec::new(),
            inds: Vec::new(),
            vals: Vec::new(),
        })
    }

    fn err(&self, error: TnsLineError) -> AltoError {
        AltoError::TnsLine {
            path: self.path.to_path_buf(),
            line: self.line_no,
            error,
        }
    }

    fn line(&mut self, line: &[u8]) -> Result<()> {
        self.line_no += 1;
        let mut tokens = line
            .split(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\x0b' | b'\x0c'))
            .filter(|t| !t.is_empty());
        let Some(first) = tokens.clone().next() else {
            return Ok(()); // blank line
        };
        if first[0] == b'#' {
            return Ok(());
        }
        if self.order == 0 {
            self.start(tokens.clone().count())?;
        }
        let order = self.order;
        if self.vals.len() == self.vals.capacity() {
            // Growth as a typed error, not an allocator abort, for a file larger than memory.
            let more = self.vals.len().max(1024);
            crate::memory::try_reserve(&mut self.vals, more, "the parsed values")?;
            for inds in &mut self.inds {
                crate::memory::try_reserve(inds, more, "the parsed indices")?;
            }
        }
        let mut found = 0usize;
        for mode in 0..order {
            let Some(tok) = tokens.next() else {
                found = mode;
                break;
            };
            let idx = parse_index(tok).ok_or_else(|| {
                self.err(TnsLineError::BadIndex {
                    mode: mode + 1,
                    token: String::from_utf8_lossy(tok).into_owned(),
                })
            })?;
            if idx == 0 {
                return Err(self.err(TnsLineError::ZeroIndex { mode: mode + 1 }));
            }
            if let Some(d) = &self.declared {
                if idx > d[mode] {
                    return Err(self.err(TnsLineError::IndexAboveDim {
                        mode: mode + 1,
                        index: idx,
                        dim: d[mode],
                    }));
                }
            }
            self.maxima[mode] = self.maxima[mode].max(idx);
            self.inds[mode].push(idx - 1);
            found = mode + 1;
        }
        let value_tok = tokens.next();
        let extra = tokens.count();
        if found < order || value_tok.is_none() || extra > 0 {
            // Undo this line's partial pushes so the arrays stay consistent (the error is fatal
            // anyway, but keep the invariant simple).
            let total = found + usize::from(value_tok.is_some()) + extra;
            return Err(self.err(TnsLineError::TokenCount {
                expected: order + 1,
                order,
                found: total,
            }));
        }
        let tok = value_tok.unwrap_or_default();
        let value = parse_value(tok).ok_or_else(|| {
            self.err(TnsLineError::BadValue {
                token: String::from_utf8_lossy(tok).into_owned(),
            })
        })?;
        if !value.is_finite() {
            return Err(self.err(TnsLineError::NonFiniteValue {
                token: String::from_utf8_lossy(tok).into_owned(),
            }));
        }
        self.vals.push(value);
        Ok(())
    }

    fn start(&mut self, tokens: usize) -> Result<()> {
        if tokens < 3 {
            return Err(self.err(TnsLineError::OrderTooSmall { found: tokens }));
        }
        let order = tokens - 1;
        if order > MAX_ORDER {
            return Err(AltoError::UnsupportedOrder {
                order,
                max: MAX_ORDER,
            });
        }
        if let Some(d) = &self.declared {
            if d.len() != order {
                return Err(AltoError::DimsOrderMismatch {
                    path: self.path.to_path_buf(),
                    declared: d.len(),
                    found: order,
                });
            }
        }
        self.order = order;
        self.maxima = vec![0; order];
        self.inds = vec![Vec::new(); order];
        Ok(())
    }

    fn finish(self) -> Result<CooTensor> {
        if self.vals.is_empty() {
            return Err(AltoError::EmptyTensor {
                path: self.path.to_path_buf(),
            });
        }
        let dims = self.declared.unwrap_or(self.maxima);
        let bits: u32 = dims.iter().map(|&d| bits_for_dim(d)).sum();
        if bits > 128 {
            return Err(AltoError::FileTooManyBits {
                path: self.path.to_path_buf(),
                bits,
            });
        }
        CooTensor::new(dims, self.inds, self.vals)
    }
}

/// Parses an unsigned decimal integer; `None` on any other byte, empty input or overflow.
#[inline]
fn parse_index(tok: &[u8]) -> Option<u64> {
    if tok.is_empty() || tok.len() > 20 {
        return None;
    }
    let mut x: u64 = 0;
    for &b in tok {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        x = x.checked_mul(10)?.checked_add(d as u64)?;
    }
    Some(x)
}

#[inline]
fn parse_value(tok: &[u8]) -> Option<f64> {
    // Integers are the common case in FROSTT files (counts); skip the float parser for them.
    if tok.len() <= 15 && tok.iter().all(u8::is_ascii_digit) {
        return parse_index(tok).map(|x| x as f64);
    }
    match fast_float2::parse_partial::<f64, _>(tok) {
        Ok((v, used)) if used == tok.len() => Some(v),
        _ => None,
    }
}

/// Writes a tensor as `.tns` (1-based indices, shortest round-trip float formatting).
pub fn write_tns(path: &Path, t: &CooTensor) -> Result<()> {
    let file = std::fs::File::create(path).map_err(|e| AltoError::io(path, e))?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    write_tns_to(&mut w, t).map_err(|e| AltoError::io(path, e))?;
    w.flush().map_err(|e| AltoError::io(path, e))
}

pub fn write_tns_to(w: &mut impl Write, t: &CooTensor) -> std::io::Result<()> {
    let mut line = String::with_capacity(128);
    for k in 0..t.nnz() {
        line.clear();
        for m in 0..t.order() {
            use std::fmt::Write as _;
            let _ = write!(line, "{} ", t.mode_indices(m)[k] + 1);
        }
        use std::fmt::Write as _;
        let _ = writeln!(line, "{}", t.values()[k]);
        w.write_all(line.as_bytes())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse(text: &str, dims: Option<&[u64]>) -> Result<CooTensor> {
        read_tns_from(text.as_bytes(), Path::new("t.tns"), dims)
    }

    fn line_err(text: &str) -> (u64, TnsLineError) {
        match parse(text, None) {
            Err(AltoError::TnsLine { line, error, .. }) => (line, error),
            other => panic!("expected a line error, got {other:?}"),
        }
    }

    #[test]
    fn reads_comments_blank_lines_and_dims() {
        let t = parse("# header\n\n1 2 3 1.5\n  \n2 1 1 -2e-3\r\n# x\n", None).unwrap();
        assert_eq!(t.dims(), &[2, 2, 3]);
        assert_eq!(t.nnz(), 2);
        assert_eq!(t.mode_indices(2), &[2, 0]);
        assert_eq!(t.values(), &[1.5, -2e-3]);
        let t = parse("1 2 3 1\n", Some(&[5, 5, 5])).unwrap();
        assert_eq!(t.dims(), &[5, 5, 5]);
    }

    #[test]
    fn no_trailing_newline_and_tabs() {
        let t = parse("1\t1 4\n3 3\t0.25", None).unwrap();
        assert_eq!(t.dims(), &[3, 3]);
        assert_eq!(t.values(), &[4.0, 0.25]);
    }

    #[test]
    fn malformed_lines_name_the_line() {
        assert!(matches!(
            line_err("1 1 1\n1 1\n"),
            (2, TnsLineError::TokenCount { found: 2, .. })
        ));
        assert!(matches!(
            line_err("1 1 1\n1 1 1 1\n"),
            (2, TnsLineError::TokenCount { found: 4, .. })
        ));
        assert!(matches!(
            line_err("1 x 1\n"),
            (1, TnsLineError::BadIndex { mode: 2, .. })
        ));
        assert!(matches!(
            line_err("1 1 1\n0 1 1\n"),
            (2, TnsLineError::ZeroIndex { mode: 1 })
        ));
        assert!(matches!(
            line_err("1 -3 1\n"),
            (1, TnsLineError::BadIndex { mode: 2, .. })
        ));
        assert!(matches!(
            line_err("1 1 abc\n"),
            (1, TnsLineError::BadValue { .. })
        ));
        assert!(matches!(
            line_err("1 1 nan\n"),
            (1, TnsLineError::NonFiniteValue { .. })
        ));
        assert!(matches!(
            line_err("1 1 inf\n"),
            (1, TnsLineError::NonFiniteValue { .. })
        ));
        assert!(matches!(
            line_err("1 1e999\n1 2\n"),
            (1, TnsLineError::OrderTooSmall { .. })
        ));
        assert!(matches!(
            line_err("# c\n1 2\n"),
            (2, TnsLineError::OrderTooSmall { found: 2 })
        ));
        assert!(matches!(
            line_err("1 99999999999999999999999 1\n"),
            (1, TnsLineError::BadIndex { mode: 2, .. })
        ));
        match parse("1 1 1\n3 1 1\n", Some(&[2, 2])) {
            Err(AltoError::TnsLine {
                line: 2,
                error:
                    TnsLineError::IndexAboveDim {
                        mode: 1,
                        index: 3,
                        dim: 2,
                    },
                ..
            }) => {}
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn whole_file_errors() {
        assert!(matches!(
            parse("", None),
            Err(AltoError::EmptyTensor { .. })
        ));
        assert!(matches!(
            parse("# only\n\n", None),
            Err(AltoError::EmptyTensor { .. })
        ));
        assert!(matches!(
            parse("1 1 1\n", Some(&[2, 2, 2])),
            Err(AltoError::DimsOrderMismatch { .. })
        ));
        assert!(matches!(
            parse("1 1 1\n", Some(&[2, 0])),
            Err(AltoError::BadDim { .. })
        ));
        // 3 modes of 2^60 need 180 bits.
        let big = format!("{0} {0} {0} 1\n", 1u64 << 60);
        assert!(matches!(
            parse(&big, None),
            Err(AltoError::FileTooManyBits { bits: 180, .. })
        ));
        let e = read_tns(Path::new("/nonexistent/x.tns"), None).unwrap_err();
        assert!(e.to_string().contains("/nonexistent/x.tns"));
    }

    #[test]
    fn write_then_read_round_trips() {
        let t = CooTensor::new(
            vec![3, 4, 2],
            vec![vec![0, 2, 1], vec![3, 0, 1], vec![1, 1, 0]],
            vec![0.1, -1e300, 7.0],
        )
        .unwrap();
        let mut out = Vec::new();
        write_tns_to(&mut out, &t).unwrap();
        let back = read_tns_from(&out[..], Path::new("x"), Some(t.dims())).unwrap();
        assert_eq!(back, t);
    }

    #[test]
    fn lines_longer_than_a_block() {
        let mut text = String::from("1 1 1\n");
        text.push_str(&" ".repeat(BLOCK + 10));
        text.push_str("2 2 2\n");
        let t = parse(&text, None).unwrap();
        assert_eq!(t.nnz(), 2);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            let _ = read_tns_from(&bytes[..], Path::new("fuzz.tns"), None);
        }
        #[test]
        fn random_token_soup_never_panics(
            toks in proptest::collection::vec(
                prop_oneof!["[0-9]{1,3}", "-?[0-9]\\.[0-9]e[+-]?[0-9]{1,3}", "#", "\n", " ", "x", "0", "nan"],
                0..60)
        ) {
            let text: String = toks.concat();
            let _ = read_tns_from(text.as_bytes(), Path::new("fuzz.tns"), None);
        }
    }
}
