//! Sort keys for the baselines: a nonzero's coordinates packed into one integer by a bit
//! permutation (mode `m`'s coordinate bits go to the set bits of `masks[m]`, lowest first), so
//! that the orders the formats need (lexicographic for CSF, superblock-then-Morton for HiCOO)
//! are one integer comparison, sorted by rayon's parallel sort. Keys use the narrowest of
//! u32/u64/u128 ([`KeyWidth`]), as ALTO's index does.

use alto::{AltoError, CooTensor, Result};
use alto_kernels::{AnyDecoder, Bmi2, DecodeKind, HwBits, PextDecoder};
use rayon::prelude::*;

/// Runs `$body` with `$K` aliased to the key word of `$width` (a [`KeyWidth`]).
macro_rules! with_key {
    ($width:expr, $K:ident => $body:expr) => {
        match $width {
            $crate::formats::sort::KeyWidth::U32 => {
                type $K = u32;
                $body
            }
            $crate::formats::sort::KeyWidth::U64 => {
                type $K = u64;
                $body
            }
            $crate::formats::sort::KeyWidth::U128 => {
                type $K = u128;
                $body
            }
        }
    };
}
pub(crate) use with_key;

/// Bits a coordinate below `dim` needs (0 for a dim of 1).
pub(crate) fn bits_for_dim(dim: u64) -> u32 {
    if dim <= 1 {
        0
    } else {
        64 - (dim - 1).leading_zeros()
    }
}

/// The narrowest key word that holds a key of some number of bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum KeyWidth {
    U32,
    U64,
    U128,
}

impl KeyWidth {
    /// The width for `bits` key bits; more than 128 is [`AltoError::TooManyBits`].
    pub fn for_bits(bits: u32) -> Result<Self> {
        match bits {
            0..=32 => Ok(KeyWidth::U32),
            33..=64 => Ok(KeyWidth::U64),
            65..=128 => Ok(KeyWidth::U128),
            _ => Err(AltoError::TooManyBits { bits }),
        }
    }
}

/// Where each mode's coordinate bits go in the key.
#[derive(Clone, Debug)]
pub(crate) struct KeySpec {
    pub masks: Vec<u128>,
    pub total_bits: u32,
}

impl KeySpec {
    /// Lexicographic order over the modes in `perm` (perm[0] slowest): concatenated fields,
    /// each `bits_for_dim` wide.
    pub fn lexicographic(dims: &[u64], perm: &[usize]) -> Result<Self> {
        let bits: Vec<u32> = dims.iter().map(|&d| bits_for_dim(d)).collect();
        let total_bits: u32 = bits.iter().sum();
        KeyWidth::for_bits(total_bits)?;
        let mut masks = vec![0u128; dims.len()];
        let mut next = 0u32;
        for &m in perm.iter().rev() {
            if bits[m] > 0 {
                masks[m] = ((1u128 << bits[m]) - 1) << next;
            }
            next += bits[m];
        }
        Ok(KeySpec { masks, total_bits })
    }

    /// HiCOO order: superblock coordinates (each coordinate's bits from `sk` up) concatenated
    /// lexicographically (mode 0 slowest) above a Z-Morton interleave of the low `sk` bits of
    /// every mode. Inside a superblock the block bits (`sb..sk`) sit above all element bits
    /// (`0..sb`), so each block's nonzeros are contiguous and blocks follow Z-Morton order.
    pub fn hicoo(dims: &[u64], sk: u32) -> Result<Self> {
        let bits: Vec<u32> = dims.iter().map(|&d| bits_for_dim(d)).collect();
        let total_bits: u32 = bits.iter().sum();
        KeyWidth::for_bits(total_bits)?;
        let order = dims.len();
        let mut masks = vec![0u128; order];
        let mut next = 0u32;
        for level in 0..sk {
            for m in (0..order).rev() {
                if bits[m].min(sk) > level {
                    masks[m] |= 1u128 << next;
                    next += 1;
                }
            }
        }
        for m in (0..order).rev() {
            let high = bits[m].saturating_sub(sk);
            if high > 0 {
                masks[m] |= ((1u128 << high) - 1) << next;
                next += high;
            }
        }
        debug_assert_eq!(next, total_bits);
        Ok(KeySpec { masks, total_bits })
    }

    pub fn width(&self) -> KeyWidth {
        KeyWidth::for_bits(self.total_bits).expect("checked when built")
    }

    pub fn masks_as<K: HwBits>(&self) -> Vec<K> {
        self.masks.iter().map(|&m| K::from_u128(m)).collect()
    }
}

/// Every nonzero's key, in input order (BMI2 `pdep` when the CPU has it).
pub(crate) fn encode<K: HwBits>(coo: &CooTensor, masks: &[K]) -> Vec<K> {
    let order = coo.order();
    let hw = Bmi2::try_new().map(|t| PextDecoder::new(t, masks));
    (0..coo.nnz())
        .into_par_iter()
        .with_min_len(4096)
        .map(|k| {
            let mut x = K::ZERO;
            for (m, &mask) in masks.iter().enumerate().take(order) {
                let c = coo.mode_indices(m)[k];
                x = x.or(match &hw {
                    Some(d) => d.deposit(c, m),
                    None => K::pdep_soft(c, mask),
                });
            }
            x
        })
        .collect()
}

/// A decoder for keys of `masks` (BMI2 `pext` when available).
pub(crate) fn decoder<K: HwBits>(masks: &[K]) -> AnyDecoder<K> {
    AnyDecoder::new(DecodeKind::Pext, masks)
        .or_else(|| AnyDecoder::new(DecodeKind::Runs, masks))
        .expect("the runs decoder is always available")
}

/// `(key, value)` pairs sorted by key.
pub(crate) fn sorted_pairs<K: HwBits>(coo: &CooTensor, masks: &[K]) -> Vec<(K, f64)> {
    let keys = encode(coo, masks);
    let mut pairs: Vec<(K, f64)> = keys
        .into_par_iter()
        .zip(coo.values().par_iter().copied())
        .collect();
    pairs.par_sort_unstable_by_key(|p| p.0);
    pairs
}

/// Duplicates summed, lexicographic order (mode 0 slowest).
pub(crate) fn canonical(coo: &CooTensor) -> Result<CooTensor> {
    let perm: Vec<usize> = (0..coo.order()).collect();
    let spec = KeySpec::lexicographic(coo.dims(), &perm)?;
    with_key!(spec.width(), K => canonical_with::<K>(coo, &spec))
}

fn canonical_with<K: HwBits>(coo: &CooTensor, spec: &KeySpec) -> Result<CooTensor> {
    let masks = spec.masks_as::<K>();
    let pairs = sorted_pairs(coo, &masks);
    let mut keys: Vec<K> = Vec::with_capacity(pairs.len());
    let mut vals: Vec<f64> = Vec::with_capacity(pairs.len());
    for (k, v) in pairs {
        if keys.last() == Some(&k) {
            *vals.last_mut().expect("same length") += v;
        } else {
            keys.push(k);
            vals.push(v);
        }
    }
    let dec = decoder(&masks);
    let inds = (0..coo.order())
        .map(|m| keys.par_iter().map(|&k| dec.coord(k, m)).collect())
        .collect();
    CooTensor::new(coo.dims().to_vec(), inds, vals)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexicographic_masks_are_fields() {
        let s = KeySpec::lexicographic(&[4, 8, 2], &[1, 0, 2]).unwrap();
        // mode 2: 1 bit at 0; mode 0: 2 bits at 1..3; mode 1: 3 bits at 3..6.
        assert_eq!(s.masks, vec![0b000110, 0b111000, 0b000001]);
    }

    #[test]
    fn hicoo_masks_put_superblocks_above_morton() {
        // sk = 2: low 2 bits of each mode interleaved (mode 1 below mode 0), then the high
        // fields, mode 1 below mode 0.
        let s = KeySpec::hicoo(&[16, 8], 2).unwrap();
        assert_eq!(s.masks[1], 0b001_0101);
        assert_eq!(s.masks[0], 0b110_1010);
        assert_eq!(s.total_bits, 7);
        let all = s.masks.iter().fold(0u128, |a, m| a | m);
        assert_eq!(all, (1 << 7) - 1);
    }

    #[test]
    fn canonical_sorts_and_merges() {
        let coo = CooTensor::new(
            vec![3, 4],
            vec![vec![2, 0, 2, 1], vec![1, 3, 1, 0]],
            vec![1.0, 2.0, 3.0, 4.0],
        )
        .unwrap();
        let c = canonical(&coo).unwrap();
        assert_eq!(c.mode_indices(0), &[0, 1, 2]);
        assert_eq!(c.mode_indices(1), &[3, 0, 1]);
        assert_eq!(c.values(), &[2.0, 4.0, 4.0]);
    }
}
