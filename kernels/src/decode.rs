//! De-linearization: recovering mode coordinates from an ALTO index.
//!
//! Two decoders give identical results:
//! - [`PextDecoder`]: one BMI2 `pext` per mode (two for 128-bit indices). Only constructible
//!   with a [`Bmi2`] capability token, so holding one proves the CPU has BMI2.
//! - [`RunsDecoder`]: shift-and-mask per run of consecutive mask bits; portable, and the right
//!   choice where `pext` is microcoded (AMD Zen 1/2 take ~250 cycles per `pext`).

use crate::index::{bit_runs, AltoIndex, BitRun};
pub use crate::isa::Bmi2;

/// The most modes a kernel handles (coordinates are decoded into a stack array of this size).
pub const MAX_ORDER: usize = 64;

/// Index words that BMI2 can decode; `lo_bits` is the popcount of the low 64-bit half of the
/// mask (used only by `u128`, which splits into two `pext`).
pub trait HwBits: AltoIndex {
    /// # Safety
    /// The CPU must support BMI2 (guaranteed by holding a [`Bmi2`] token).
    unsafe fn pext_hw(self, mask: Self, lo_bits: u32) -> u64;
    /// # Safety
    /// The CPU must support BMI2.
    unsafe fn pdep_hw(value: u64, mask: Self, lo_bits: u32) -> Self;
}

#[cfg(target_arch = "x86_64")]
mod hw {
    use super::HwBits;
    use core::arch::x86_64::{_pdep_u32, _pdep_u64, _pext_u32, _pext_u64};

    impl HwBits for u32 {
        #[inline(always)]
        unsafe fn pext_hw(self, mask: Self, _lo_bits: u32) -> u64 {
            // SAFETY: the caller guarantees BMI2.
            unsafe { _pext_u32(self, mask) as u64 }
        }
        #[inline(always)]
        unsafe fn pdep_hw(value: u64, mask: Self, _lo_bits: u32) -> Self {
            // SAFETY: the caller guarantees BMI2.
            unsafe { _pdep_u32(value as u32, mask) }
        }
    }
    impl HwBits for u64 {
        #[inline(always)]
        unsafe fn pext_hw(self, mask: Self, _lo_bits: u32) -> u64 {
            // SAFETY: the caller guarantees BMI2.
            unsafe { _pext_u64(self, mask) }
        }
        #[inline(always)]
        unsafe fn pdep_hw(value: u64, mask: Self, _lo_bits: u32) -> Self {
            // SAFETY: the caller guarantees BMI2.
            unsafe { _pdep_u64(value, mask) }
        }
    }
    impl HwBits for u128 {
        #[inline(always)]
        unsafe fn pext_hw(self, mask: Self, lo_bits: u32) -> u64 {
            let (lo, hi) = (self as u64, (self >> 64) as u64);
            let (mlo, mhi) = (mask as u64, (mask >> 64) as u64);
            // SAFETY: the caller guarantees BMI2.
            let (xl, xh) = unsafe { (_pext_u64(lo, mlo), _pext_u64(hi, mhi)) };
            // A coordinate has at most 64 bits, so the shifted high part cannot overflow
            // unless it is zero; `checked_shl` keeps lo_bits == 64 well defined.
            xl | xh.checked_shl(lo_bits).unwrap_or(0)
        }
        #[inline(always)]
        unsafe fn pdep_hw(value: u64, mask: Self, lo_bits: u32) -> Self {
            let (mlo, mhi) = (mask as u64, (mask >> 64) as u64);
            let hi_src = value.checked_shr(lo_bits).unwrap_or(0);
            // SAFETY: the caller guarantees BMI2.
            let (dl, dh) = unsafe { (_pdep_u64(value, mlo), _pdep_u64(hi_src, mhi)) };
            (dl as u128) | ((dh as u128) << 64)
        }
    }
}

/// Decodes every mode's coordinate from an index word.
pub trait Decode<I: AltoIndex>: Sync {
    /// One mode's decoder: a small `Copy` value the kernels keep in registers for a segment.
    type Mode<'a>: ModeDecode<I>
    where
        Self: 'a;
    /// Number of modes.
    fn order(&self) -> usize;
    /// The coordinate of `mode` stored in `idx`.
    fn coord(&self, idx: I, mode: usize) -> u64;
    /// The decoder of one mode (`mode < order()`).
    fn mode(&self, mode: usize) -> Self::Mode<'_>;
    /// The mask of one mode (`mode < order()`): the index bits that hold its coordinate.
    fn mask(&self, mode: usize) -> I;
    /// Name used in kernel names and reports (`pext`, `runs`).
    fn name(&self) -> &'static str;
}

/// Decodes one mode's coordinate.
pub trait ModeDecode<I>: Copy {
    fn coord(self, idx: I) -> u64;
}

/// One mode of a [`PextDecoder`]: its mask, the popcount of the mask's low 64 bits (for
/// `u128`), and the BMI2 token that makes `pext` sound.
#[derive(Clone, Copy, Debug)]
pub struct PextMode<I> {
    mask: I,
    lo_bits: u32,
    _token: Bmi2,
}

impl<I: HwBits> ModeDecode<I> for PextMode<I> {
    #[inline(always)]
    fn coord(self, idx: I) -> u64 {
        // SAFETY: `_token` proves BMI2 is present.
        unsafe { idx.pext_hw(self.mask, self.lo_bits) }
    }
}

/// One mode of a [`RunsDecoder`]: its bit runs as (source shift, destination shift, field).
#[derive(Clone, Copy, Debug)]
pub struct RunsMode<'a, I> {
    runs: &'a [(u32, u32, I)],
}

impl<I: AltoIndex> ModeDecode<I> for RunsMode<'_, I> {
    #[inline(always)]
    fn coord(self, idx: I) -> u64 {
        let mut c = 0u64;
        for &(src, dst, field) in self.runs {
            // Shifts in the word's own width: no 128-bit arithmetic for u32/u64 indices.
            c |= idx.shr(src).and(field).low_u64() << dst;
        }
        c
    }
}

/// BMI2 decoder: `pext` with each mode's mask.
#[derive(Clone, Debug)]
pub struct PextDecoder<I> {
    masks: Vec<I>,
    lo_bits: Vec<u32>,
    _token: Bmi2,
}

impl<I: HwBits> PextDecoder<I> {
    /// The BMI2 proof this decoder was built with (for [`Bmi2::run`] around loops using it).
    pub fn token(&self) -> Bmi2 {
        self._token
    }

    pub fn new(_token: Bmi2, masks: &[I]) -> Self {
        let lo_bits = masks
            .iter()
            .map(|m| (m.to_u128() as u64).count_ones())
            .collect();
        PextDecoder {
            masks: masks.to_vec(),
            lo_bits,
            _token,
        }
    }

    /// Encodes one coordinate with `pdep` (used by the format builder).
    #[inline(always)]
    pub fn deposit(&self, coord: u64, mode: usize) -> I {
        // SAFETY: `_token` proves BMI2 is present.
        unsafe { I::pdep_hw(coord, self.masks[mode], self.lo_bits[mode]) }
    }
}

impl<I: HwBits> Decode<I> for PextDecoder<I> {
    type Mode<'a> = PextMode<I>;
    #[inline(always)]
    fn order(&self) -> usize {
        self.masks.len()
    }
    #[inline(always)]
    fn coord(&self, idx: I, mode: usize) -> u64 {
        self.mode(mode).coord(idx)
    }
    #[inline(always)]
    fn mode(&self, mode: usize) -> PextMode<I> {
        PextMode {
            mask: self.masks[mode],
            lo_bits: self.lo_bits[mode],
            _token: self._token,
        }
    }
    #[inline(always)]
    fn mask(&self, mode: usize) -> I {
        self.masks[mode]
    }
    fn name(&self) -> &'static str {
        "pext"
    }
}

/// Portable decoder: per mode, shift-and-mask over the runs of consecutive mask bits.
#[derive(Clone, Debug)]
pub struct RunsDecoder<I> {
    /// Runs of all modes, flattened; mode `m` owns `runs[starts[m]..starts[m + 1]]`.
    runs: Vec<(u32, u32, I)>,
    starts: Vec<usize>,
    masks: Vec<I>,
}

impl<I: AltoIndex> RunsDecoder<I> {
    pub fn new(masks: &[I]) -> Self {
        let mut runs = Vec::new();
        let mut starts = vec![0];
        for m in masks {
            for BitRun { src, dst, len } in bit_runs(m.to_u128()) {
                let field = if len >= 128 {
                    u128::MAX
                } else {
                    (1u128 << len) - 1
                };
                runs.push((src, dst, I::from_u128(field)));
            }
            starts.push(runs.len());
        }
        RunsDecoder {
            runs,
            starts,
            masks: masks.to_vec(),
        }
    }
}

impl<I: AltoIndex> Decode<I> for RunsDecoder<I> {
    type Mode<'a> = RunsMode<'a, I>;
    #[inline(always)]
    fn order(&self) -> usize {
        self.starts.len() - 1
    }
    #[inline(always)]
    fn coord(&self, idx: I, mode: usize) -> u64 {
        self.mode(mode).coord(idx)
    }
    #[inline(always)]
    fn mode(&self, mode: usize) -> RunsMode<'_, I> {
        RunsMode {
            runs: &self.runs[self.starts[mode]..self.starts[mode + 1]],
        }
    }
    #[inline(always)]
    fn mask(&self, mode: usize) -> I {
        self.masks[mode]
    }
    fn name(&self) -> &'static str {
        "runs"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn check_all<I: HwBits>(masks: &[I], idx: I) {
        let runs = RunsDecoder::new(masks);
        for (m, &mask) in masks.iter().enumerate() {
            let want = idx.pext_soft(mask);
            assert_eq!(runs.coord(idx, m), want, "runs decoder, mode {m}");
            if let Some(tok) = Bmi2::try_new() {
                let hw = PextDecoder::new(tok, masks);
                assert_eq!(hw.coord(idx, m), want, "pext decoder, mode {m}");
                let dep = hw.deposit(want, m);
                assert_eq!(dep, I::pdep_soft(want, mask), "pdep, mode {m}");
            }
        }
    }

    fn split_masks(seed: u128, width: u32, order: usize) -> Vec<u128> {
        // Assign every bit below `width` to a pseudo-random mode (64 bits at most per mode).
        let mut masks = vec![0u128; order];
        let mut s = seed | 1;
        for bit in 0..width {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let m = (s % order as u128) as usize;
            if masks[m].count_ones() < 64 {
                masks[m] |= 1u128 << bit;
            }
        }
        masks
    }

    proptest! {
        #[test]
        fn decoders_agree_u32(seed: u128, idx: u32, order in 2usize..6) {
            let masks: Vec<u32> = split_masks(seed, 32, order).iter().map(|&m| m as u32).collect();
            check_all(&masks, idx);
        }
        #[test]
        fn decoders_agree_u64(seed: u128, idx: u64, order in 2usize..6) {
            let masks: Vec<u64> = split_masks(seed, 64, order).iter().map(|&m| m as u64).collect();
            check_all(&masks, idx);
        }
        #[test]
        fn decoders_agree_u128(seed: u128, idx: u128, order in 2usize..7) {
            let masks = split_masks(seed, 128, order);
            check_all(&masks, idx);
        }
    }
}
