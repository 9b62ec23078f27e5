//! The global ALTO linearization on `u128` keys, with a shift-and-mask codec built from the
//! masks' runs of consecutive bits (SPEC section 2's software path), so every rank encodes and
//! decodes with the same layout without BMI2 and without the library's width dispatch.

use alto::format::Layout;

/// One run of consecutive mask bits: `len` bits at key bit `key_shift` hold the coordinate's
/// bits from `coord_shift`.
#[derive(Clone, Copy, Debug)]
struct Run {
    key_shift: u32,
    coord_shift: u32,
    mask: u128,
}

/// Encodes coordinates into global keys and back.
#[derive(Clone, Debug)]
pub struct KeyCodec {
    runs: Vec<Vec<Run>>,
}

impl KeyCodec {
    pub fn new(layout: &Layout) -> Self {
        let runs = layout.masks().iter().map(|&m| runs_of(m)).collect();
        KeyCodec { runs }
    }

    pub fn order(&self) -> usize {
        self.runs.len()
    }

    /// The key of a coordinate (each entry below its mode's dim).
    pub fn encode(&self, coord: impl Iterator<Item = u64>) -> u128 {
        coord.zip(&self.runs).fold(0u128, |key, (c, runs)| {
            runs.iter().fold(key, |k, r| {
                k | (((c as u128) >> r.coord_shift) & r.mask) << r.key_shift
            })
        })
    }

    /// Mode `mode`'s coordinate of `key`.
    pub fn coord(&self, key: u128, mode: usize) -> u64 {
        self.runs[mode].iter().fold(0u128, |c, r| {
            c | ((key >> r.key_shift) & r.mask) << r.coord_shift
        }) as u64
    }
}

fn runs_of(mut mask: u128) -> Vec<Run> {
    let mut runs = Vec::new();
    let mut coord_shift = 0;
    while mask != 0 {
        let key_shift = mask.trailing_zeros();
        let len = (mask >> key_shift).trailing_ones();
        let bits = if len == 128 {
            u128::MAX
        } else {
            (1u128 << len) - 1
        };
        runs.push(Run {
            key_shift,
            coord_shift,
            mask: bits,
        });
        coord_shift += len;
        mask &= !(bits << key_shift);
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;
    use alto_kernels::index::{pdep_soft_u128, pext_soft_u128};

    #[test]
    fn agrees_with_the_bitwise_definition() {
        for dims in [
            vec![2000u64, 1500, 1000],
            vec![500, 400, 3000, 20],
            vec![1 << 35, 1 << 35, 3],
            vec![1, 7, 1],
        ] {
            let layout = Layout::new(&dims).unwrap();
            let codec = KeyCodec::new(&layout);
            for seed in 0..200u64 {
                let coord: Vec<u64> = dims
                    .iter()
                    .enumerate()
                    .map(|(m, &d)| (seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> m) % d)
                    .collect();
                let key = codec.encode(coord.iter().copied());
                let want = coord
                    .iter()
                    .zip(layout.masks())
                    .fold(0u128, |k, (&c, &m)| k | pdep_soft_u128(c as u128, m));
                assert_eq!(key, want);
                for (m, &c) in coord.iter().enumerate() {
                    assert_eq!(codec.coord(key, m), c);
                    assert_eq!(pext_soft_u128(key, layout.masks()[m]) as u64, c);
                }
            }
        }
    }
}
