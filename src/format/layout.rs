//! The ALTO bit layout (SPEC section 2): bits per mode, the interleaved masks, and the index
//! width chosen at run time.

use crate::error::{AltoError, Result};

/// `ceil(log2(dim))`: bits needed for 0-based coordinates below `dim` (0 for `dim <= 1`).
pub fn bits_for_dim(dim: u64) -> u32 {
    if dim <= 1 {
        0
    } else {
        64 - (dim - 1).leading_zeros()
    }
}

/// The narrowest index word that holds the linearized index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IndexWidth {
    U32,
    U64,
    U128,
}

impl IndexWidth {
    /// The narrowest width holding `bits` bits, or an error above 128.
    pub fn for_bits(bits: u32) -> Result<Self> {
        match bits {
            0..=32 => Ok(IndexWidth::U32),
            33..=64 => Ok(IndexWidth::U64),
            65..=128 => Ok(IndexWidth::U128),
            _ => Err(AltoError::TooManyBits { bits }),
        }
    }
    pub fn bits(self) -> u32 {
        match self {
            IndexWidth::U32 => 32,
            IndexWidth::U64 => 64,
            IndexWidth::U128 => 128,
        }
    }
    pub fn bytes(self) -> usize {
        self.bits() as usize / 8
    }
    pub fn name(self) -> &'static str {
        match self {
            IndexWidth::U32 => "u32",
            IndexWidth::U64 => "u64",
            IndexWidth::U128 => "u128",
        }
    }
}

/// Bits per mode and their masks in the linearized index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    dims: Vec<u64>,
    bits: Vec<u32>,
    masks: Vec<u128>,
    total_bits: u32,
}

impl Layout {
    /// Builds the adaptive interleaving: for level `l` upward, visit modes by ascending bit
    /// count (ties in mode order) and give the next bit to each mode that still has bits left.
    pub fn new(dims: &[u64]) -> Result<Self> {
        if let Some((mode, &dim)) = dims.iter().enumerate().find(|(_, &d)| d == 0) {
            return Err(AltoError::BadDim { mode, dim });
        }
        let bits: Vec<u32> = dims.iter().map(|&d| bits_for_dim(d)).collect();
        let total_bits: u32 = bits.iter().sum();
        if total_bits > 128 {
            return Err(AltoError::TooManyBits { bits: total_bits });
        }
        let mut by_length: Vec<usize> = (0..dims.len()).collect();
        by_length.sort_by_key(|&m| bits[m]); // stable: ties keep mode order
        let mut masks = vec![0u128; dims.len()];
        let mut next = 0u32;
        let levels = bits.iter().copied().max().unwrap_or(0);
        for level in 0..levels {
            for &m in &by_length {
                if bits[m] > level {
                    masks[m] |= 1u128 << next;
                    next += 1;
                }
            }
        }
        debug_assert_eq!(next, total_bits);
        Ok(Layout {
            dims: dims.to_vec(),
            bits,
            masks,
            total_bits,
        })
    }

    pub fn order(&self) -> usize {
        self.dims.len()
    }
    pub fn dims(&self) -> &[u64] {
        &self.dims
    }
    pub fn bits(&self) -> &[u32] {
        &self.bits
    }
    pub fn masks(&self) -> &[u128] {
        &self.masks
    }
    pub fn total_bits(&self) -> u32 {
        self.total_bits
    }
    pub fn width(&self) -> IndexWidth {
        IndexWidth::for_bits(self.total_bits).expect("checked in new")
    }
    /// Bits of the index word above `B`, free for helper flags.
    pub fn spare_bits(&self) -> u32 {
        self.width().bits() - self.total_bits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_example_3d() {
        let l = Layout::new(&[2000, 1500, 1000]).unwrap();
        assert_eq!(l.bits(), &[11, 11, 10]);
        assert_eq!(l.total_bits(), 32);
        assert_eq!(l.masks(), &[0x52492492, 0xa4924924, 0x09249249]);
        assert_eq!(l.width(), IndexWidth::U32);
        assert_eq!(l.spare_bits(), 0);
    }

    #[test]
    fn spec_example_4d() {
        let l = Layout::new(&[500, 400, 3000, 20]).unwrap();
        assert_eq!(l.bits(), &[9, 9, 12, 5]);
        assert_eq!(l.total_bits(), 35);
        assert_eq!(l.masks(), &[0x024922222, 0x049244444, 0x792488888, 0x11111]);
        assert_eq!(l.width(), IndexWidth::U64);
        assert_eq!(l.spare_bits(), 29);
    }

    #[test]
    fn bits_and_widths() {
        assert_eq!(bits_for_dim(1), 0);
        assert_eq!(bits_for_dim(2), 1);
        assert_eq!(bits_for_dim(3), 2);
        assert_eq!(bits_for_dim(1024), 10);
        assert_eq!(bits_for_dim(1025), 11);
        assert_eq!(bits_for_dim(u64::MAX), 64);
        assert_eq!(IndexWidth::for_bits(33).unwrap(), IndexWidth::U64);
        assert_eq!(IndexWidth::for_bits(65).unwrap(), IndexWidth::U128);
        assert!(IndexWidth::for_bits(129).is_err());
        assert!(Layout::new(&[u64::MAX, u64::MAX, 2]).is_err());
        let l = Layout::new(&[1, 7, 1]).unwrap();
        assert_eq!(l.masks(), &[0, 0b111, 0]);
    }

    #[test]
    fn masks_partition_the_low_bits() {
        let l = Layout::new(&[4_821_207, 1_774_269, 1_805_187]).unwrap();
        assert_eq!(l.total_bits(), 65);
        let union = l.masks().iter().fold(0u128, |a, m| {
            assert_eq!(a & m, 0);
            a | m
        });
        assert_eq!(union, (1u128 << 65) - 1);
        // The most significant bits belong to the longest mode.
        assert_ne!(l.masks()[0] & (1u128 << 64), 0);
    }
}
