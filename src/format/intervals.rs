//! Each segment's per-mode coordinate interval, from one read of its nonzeros.

use alto_kernels::{AnyDecoder, Avx2Fma, HwBits};

/// Widens the per-mode closed intervals `iv` (empty while `lo > hi`) to cover `segment`.
///
/// Extracting a mode's coordinate keeps the order of its masked bits (`pext` packs them without
/// reordering), so the smallest and largest coordinates are those of the smallest and largest
/// `x & mask`: one min/max pass, then two decodes per mode, instead of a decode per nonzero
/// and mode.
#[inline(always)]
pub(super) fn widen_intervals<I: HwBits>(
    iv: &mut [(u64, u64)],
    segment: &[I],
    masks: &[I],
    decoder: &AnyDecoder<I>,
) {
    if segment.is_empty() {
        return;
    }
    for (mode, ((lo, hi), (min, max))) in iv
        .iter_mut()
        .zip(masked_extremes(segment, masks))
        .enumerate()
    {
        let (a, b) = (decoder.coord(min, mode), decoder.coord(max, mode));
        if *lo > *hi {
            (*lo, *hi) = (a, b);
        } else {
            *lo = (*lo).min(a);
            *hi = (*hi).max(b);
        }
    }
}

/// The smallest and largest `x & masks[m]` over the non-empty `segment`, per mode, in one read
/// of the segment for up to eight modes (their running extremes stay in registers); one pass
/// per mode beyond that. Compiled with AVX2 where the CPU has it, which vectorizes the min/max
/// (warm builds at 1 thread, skewed 3-D, 2M nonzeros: the partition pass 1.40 -> 0.29-0.43 ms;
/// at 2 threads 1.12 -> 0.25, nell-2 0.77 -> 0.15).
fn masked_extremes<I: HwBits>(segment: &[I], masks: &[I]) -> Vec<(I, I)> {
    match Avx2Fma::try_new() {
        Some(avx2) => avx2.run(|| masked_extremes_any(segment, masks)),
        None => masked_extremes_any(segment, masks),
    }
}

/// [`masked_extremes`], inlined into whichever ISA wrapper calls it.
#[inline(always)]
fn masked_extremes_any<I: HwBits>(segment: &[I], masks: &[I]) -> Vec<(I, I)> {
    match masks.len() {
        1 => masked_extremes_of::<I, 1>(segment, masks),
        2 => masked_extremes_of::<I, 2>(segment, masks),
        3 => masked_extremes_of::<I, 3>(segment, masks),
        4 => masked_extremes_of::<I, 4>(segment, masks),
        5 => masked_extremes_of::<I, 5>(segment, masks),
        6 => masked_extremes_of::<I, 6>(segment, masks),
        7 => masked_extremes_of::<I, 7>(segment, masks),
        8 => masked_extremes_of::<I, 8>(segment, masks),
        _ => masks
            .iter()
            .flat_map(|m| masked_extremes_of::<I, 1>(segment, std::slice::from_ref(m)))
            .collect(),
    }
}

/// [`masked_extremes`] for exactly `N` masks.
#[inline(always)]
fn masked_extremes_of<I: HwBits, const N: usize>(segment: &[I], masks: &[I]) -> Vec<(I, I)> {
    let masks: [I; N] = std::array::from_fn(|m| masks[m]);
    let mut min = masks.map(|mask| segment[0].and(mask));
    let mut max = min;
    for &x in segment {
        for m in 0..N {
            let bits = x.and(masks[m]);
            min[m] = min[m].min(bits);
            max[m] = max[m].max(bits);
        }
    }
    min.into_iter().zip(max).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Masks of `order` modes interleaving `bits` index bits round-robin.
    fn round_robin_masks(order: usize, bits: u32) -> Vec<u128> {
        (0..order)
            .map(|m| {
                (0..bits)
                    .filter(|b| *b as usize % order == m)
                    .map(|b| 1u128 << b)
                    .sum()
            })
            .collect()
    }

    fn check<I: HwBits>(order: usize, bits: u32) {
        let masks: Vec<I> = round_robin_masks(order, bits)
            .into_iter()
            .map(I::from_u128)
            .collect();
        let mut state = 0x2545_f491_4f6c_dd1d_u128 ^ bits as u128;
        let segment: Vec<I> = (0..1000)
            .map(|_| {
                state = state
                    .wrapping_mul(0x5851_f42d_4c95_7f2d)
                    .wrapping_add(0x1405_7b7e);
                I::from_u128((state >> 7) & ((1u128 << bits) - 1))
            })
            .collect();
        let want: Vec<(I, I)> = masks
            .iter()
            .map(|&m| {
                let masked = segment.iter().map(|x| x.and(m).to_u128());
                let (lo, hi) = (masked.clone().min().unwrap(), masked.max().unwrap());
                (I::from_u128(lo), I::from_u128(hi))
            })
            .collect();
        // Every path: the plain one, the AVX2 one where the CPU has it, and the dispatch.
        assert!(
            masked_extremes_any(&segment, &masks) == want,
            "plain, {order} modes"
        );
        if let Some(avx2) = Avx2Fma::try_new() {
            let got = avx2.run(|| masked_extremes_any(&segment, &masks));
            assert!(got == want, "AVX2, {order} modes");
        }
        assert!(masked_extremes(&segment, &masks) == want, "{order} modes");
    }

    #[test]
    fn masked_extremes_match_a_plain_min_and_max_on_every_path() {
        for order in [1, 2, 3, 4, 8, 9] {
            check::<u32>(order, 32);
            check::<u64>(order, 61);
            check::<u128>(order, 100);
        }
    }
}
