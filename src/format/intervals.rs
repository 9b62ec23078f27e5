//! Each segment's per-mode coordinate interval, from one read of its nonzeros.

use alto_kernels::{AnyDecoder, HwBits};

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
/// per mode beyond that.
fn masked_extremes<I: HwBits>(segment: &[I], masks: &[I]) -> Vec<(I, I)> {
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
#[inline]
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
