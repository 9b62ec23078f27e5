//! A tensor from stored parts (the `.alto` file), checked before it exists: nothing a file
//! claims is trusted, since anyone can recompute its CRC.

use super::alto::AltoTensor;
use super::layout::Layout;
use alto_kernels::HwBits;

/// The parts of a stored tensor, before [`AltoTensor::from_stored`] checks them.
pub(crate) struct StoredParts<I> {
    pub layout: Layout,
    pub masks: Vec<I>,
    pub idx: Vec<I>,
    pub vals: Vec<f64>,
    pub bounds: Vec<usize>,
    pub intervals: Vec<(u64, u64)>,
    pub flag_bits: Vec<Option<u32>>,
    pub duplicates_merged: u64,
    pub min_fiber_reuse: u64,
}

impl<I: HwBits> AltoTensor<I> {
    /// A tensor from stored parts (a `.alto` file), checked as thoroughly as [`Self::build`]
    /// establishes them: masks of the layout, segment bounds from 0 to nnz, coordinates inside
    /// the dims, strictly increasing indices, no stray bits, exact intervals and exact boundary
    /// flags ([`Self::check_derived_state`]). The error says what is wrong.
    pub(crate) fn from_stored(parts: StoredParts<I>) -> std::result::Result<Self, String> {
        let order = parts.layout.order();
        if parts.masks.len() != order
            || parts.flag_bits.len() != order
            || parts
                .masks
                .iter()
                .zip(parts.layout.masks())
                .any(|(m, &l)| m.to_u128() != l)
        {
            return Err("masks do not match the dims".into());
        }
        if parts.idx.len() != parts.vals.len() {
            return Err("index and value counts differ".into());
        }
        let b = &parts.bounds;
        if b.len() < 2
            || b[0] != 0
            || b[b.len() - 1] != parts.idx.len()
            || b.windows(2).any(|w| w[0] > w[1])
        {
            return Err("segment bounds are inconsistent".into());
        }
        if parts.vals.iter().any(|v| !v.is_finite()) {
            return Err("non-finite value".into());
        }
        let candidate = AltoTensor {
            layout: parts.layout,
            masks: parts.masks,
            idx: parts.idx,
            vals: parts.vals,
            bounds: parts.bounds,
            intervals: parts.intervals,
            flag_bits: parts.flag_bits,
            duplicates_merged: parts.duplicates_merged,
            min_fiber_reuse: parts.min_fiber_reuse,
        };
        candidate.check_coordinates()?;
        candidate.check_derived_state()?;
        Ok(candidate)
    }

    /// Coordinates inside the dims, indices strictly increasing along the line, and no bit set
    /// outside the layout and the flag bits.
    fn check_coordinates(&self) -> std::result::Result<(), String> {
        let dec = self.fast_decoder();
        let b = self.layout.total_bits();
        let value_mask = if b == 128 {
            u128::MAX
        } else {
            (1u128 << b) - 1
        };
        let flag_mask = self
            .flag_bits
            .iter()
            .flatten()
            .filter(|&&bit| bit < 128)
            .fold(0u128, |a, &bit| a | 1u128 << bit);
        let mut prev: Option<u128> = None;
        for &x in &self.idx {
            let key = x.to_u128() & value_mask;
            if prev.is_some_and(|q| q >= key) {
                return Err("indices are not strictly increasing".into());
            }
            prev = Some(key);
            if x.to_u128() & !value_mask & !flag_mask != 0 {
                return Err("index has bits set outside the layout and flags".into());
            }
            for (m, &dim) in self.dims().iter().enumerate() {
                let coord = dec.coord(x, m);
                if coord >= dim {
                    return Err(format!("mode {m} coordinate {coord} outside dim {dim}"));
                }
            }
        }
        Ok(())
    }
}
