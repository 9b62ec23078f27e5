//! The linearized index type: `u32`, `u64` or `u128`, chosen at run time as the narrowest that
//! holds the tensor's `B` bits. Everything above it is generic over [`AltoIndex`], so the three
//! widths share one implementation.

use core::fmt::Debug;
use core::hash::Hash;

/// A linearized ALTO index word.
///
/// The software bit-deposit/extract here are the portable reference; the BMI2 versions live in
/// [`crate::bmi2`] and must agree with these on every input.
pub trait AltoIndex:
    Copy + Send + Sync + Ord + Eq + Hash + Default + Debug + 'static + private::Sealed
{
    /// Width of the word in bits.
    const BITS: u32;
    /// Name used in reports and CLI output (`u32`, `u64`, `u128`).
    const NAME: &'static str;
    /// All-zero word.
    const ZERO: Self;

    /// Truncating conversion from `u128` (callers guarantee the value fits).
    fn from_u128(x: u128) -> Self;
    /// Widening conversion to `u128`.
    fn to_u128(self) -> u128;
    /// `self & other`.
    fn and(self, other: Self) -> Self;
    /// `self | other`.
    fn or(self, other: Self) -> Self;
    /// True when `self & mask != 0`.
    fn intersects(self, mask: Self) -> bool;
    /// Number of bits of `self` (used as a radix-sort key): `(self >> shift) & 0xff..`.
    fn digit(self, shift: u32, digit_mask: u32) -> usize;
    /// `self >> n` in the word's own width (`n < BITS`).
    fn shr(self, n: u32) -> Self;
    /// The low 64 bits.
    fn low_u64(self) -> u64;

    /// Portable parallel bit extract: gathers the bits of `self` selected by `mask` into the low
    /// bits of the result, in order.
    #[inline]
    fn pext_soft(self, mask: Self) -> u64 {
        pext_soft_u128(self.to_u128(), mask.to_u128()) as u64
    }

    /// Portable parallel bit deposit: scatters the low bits of `value` to the positions of the
    /// set bits of `mask`, in order.
    #[inline]
    fn pdep_soft(value: u64, mask: Self) -> Self {
        Self::from_u128(pdep_soft_u128(value as u128, mask.to_u128()))
    }
}

mod private {
    pub trait Sealed {}
    impl Sealed for u32 {}
    impl Sealed for u64 {}
    impl Sealed for u128 {}
}

macro_rules! impl_alto_index {
    ($t:ty, $name:literal) => {
        impl AltoIndex for $t {
            const BITS: u32 = <$t>::BITS;
            const NAME: &'static str = $name;
            const ZERO: Self = 0;
            #[inline(always)]
            fn from_u128(x: u128) -> Self {
                x as $t
            }
            #[inline(always)]
            fn to_u128(self) -> u128 {
                self as u128
            }
            #[inline(always)]
            fn and(self, other: Self) -> Self {
                self & other
            }
            #[inline(always)]
            fn or(self, other: Self) -> Self {
                self | other
            }
            #[inline(always)]
            fn intersects(self, mask: Self) -> bool {
                self & mask != 0
            }
            #[inline(always)]
            fn digit(self, shift: u32, digit_mask: u32) -> usize {
                ((self >> shift) as u32 & digit_mask) as usize
            }
            #[inline(always)]
            fn shr(self, n: u32) -> Self {
                self >> n
            }
            #[inline(always)]
            fn low_u64(self) -> u64 {
                self as u64
            }
        }
    };
}
impl_alto_index!(u32, "u32");
impl_alto_index!(u64, "u64");
impl_alto_index!(u128, "u128");

/// Bit-by-bit extract over the set bits of `mask` (the naive definition of pext).
pub fn pext_soft_u128(x: u128, mut mask: u128) -> u128 {
    let mut out = 0u128;
    let mut k = 0u32;
    while mask != 0 {
        let low = mask & mask.wrapping_neg();
        if x & low != 0 {
            out |= 1u128 << k;
        }
        k += 1;
        mask &= mask - 1;
    }
    out
}

/// Bit-by-bit deposit over the set bits of `mask` (the naive definition of pdep).
pub fn pdep_soft_u128(x: u128, mut mask: u128) -> u128 {
    let mut out = 0u128;
    let mut k = 0u32;
    while mask != 0 {
        let low = mask & mask.wrapping_neg();
        if k < 128 && (x >> k) & 1 != 0 {
            out |= low;
        }
        k += 1;
        mask &= mask - 1;
    }
    out
}

/// One maximal run of consecutive set bits of a mode mask: `len` bits starting at bit `src`
/// of the index go to bit `dst` of the coordinate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BitRun {
    pub src: u32,
    pub dst: u32,
    pub len: u32,
}

/// Splits a mask into its runs of consecutive set bits, lowest first. The shift-and-mask
/// software decoder walks these: one shift, mask and or per run.
pub fn bit_runs(mask: u128) -> Vec<BitRun> {
    let mut runs = Vec::new();
    let mut m = mask;
    let mut dst = 0u32;
    while m != 0 {
        let src = m.trailing_zeros();
        let len = (!(m >> src)).trailing_zeros();
        runs.push(BitRun { src, dst, len });
        dst += len;
        if src + len >= 128 {
            break;
        }
        m &= !(((1u128 << len) - 1) << src);
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn runs_of_interleaved_and_contiguous_masks() {
        assert_eq!(
            bit_runs(0b1011_0110),
            vec![
                BitRun {
                    src: 1,
                    dst: 0,
                    len: 2
                },
                BitRun {
                    src: 4,
                    dst: 2,
                    len: 2
                },
                BitRun {
                    src: 7,
                    dst: 4,
                    len: 1
                }
            ]
        );
        assert_eq!(
            bit_runs(u128::MAX),
            vec![BitRun {
                src: 0,
                dst: 0,
                len: 128
            }]
        );
        assert!(bit_runs(0).is_empty());
    }

    proptest! {
        #[test]
        fn pext_inverts_pdep(x: u64, mask: u128) {
            let bits = mask.count_ones().min(64);
            let x = if bits == 64 { x } else { x & ((1u64 << bits) - 1) };
            let dep = pdep_soft_u128(x as u128, mask);
            prop_assert_eq!(dep & !mask, 0);
            prop_assert_eq!(pext_soft_u128(dep, mask) as u64, x);
        }
    }
}
