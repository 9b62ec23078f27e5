//! Row location and chunk bounds, shared by every tier's per-nonzero loop: [`Others`] and
//! [`FixedModes`] decode a nonzero's other modes into factor-row pointers, [`Bounds`] validates
//! a chunk of indices at once, and the cold error paths name the first bad coordinate.

use super::{KernelError, SegmentInput};
use crate::decode::{Decode, HwBits, ModeDecode, MAX_ORDER};
use crate::sink::RowWindow;

/// The modes other than the target, with their one-mode decoders, factor slices and row
/// counts, gathered once per segment so the per-nonzero loop has no `m == target` test and
/// keeps the decoders (for `pext`: the masks) in registers.
pub(crate) struct Others<'a, M> {
    pub n: usize,
    pub dec: [M; MAX_ORDER],
    pub factor: [&'a [f64]; MAX_ORDER],
    /// Rows of each factor (`len / rank`): a coordinate below it has a whole row in the slice.
    pub rows: [u64; MAX_ORDER],
}

impl<'a, M: Copy> Others<'a, M> {
    /// Gathers the non-target modes of `input`; `order >= 2`, `target < order` and `rank >= 1`
    /// were checked by [`run_segment`].
    #[inline(always)]
    pub fn new<'d, I: HwBits, D>(input: &SegmentInput<'a, I>, dec: &'d D, rank: usize) -> Self
    where
        D: Decode<I, Mode<'d> = M>,
    {
        let target = dec.mode(input.target);
        let mut o = Others {
            n: 0,
            dec: [target; MAX_ORDER],
            factor: [&[]; MAX_ORDER],
            rows: [0; MAX_ORDER],
        };
        for (m, &f) in input.factors.iter().enumerate().take(MAX_ORDER) {
            if m != input.target {
                o.dec[o.n] = dec.mode(m);
                o.factor[o.n] = f;
                o.rows[o.n] = (f.len() / rank) as u64;
                o.n += 1;
            }
        }
        o
    }

    /// The number of other modes: `N` when the kernel is specialized for it (`N > 0`).
    #[inline(always)]
    pub fn count<const N: usize>(&self) -> usize {
        if N == 0 {
            self.n.min(MAX_ORDER)
        } else {
            debug_assert_eq!(N, self.n);
            N
        }
    }

    /// Decodes the other modes' coordinates of `x` into row pointers (`ptrs[j]` is the start of
    /// row `i_m` of the `j`-th other factor). Checks nothing: a pointer may only be read when
    /// [`Bounds::check`] accepted `x`.
    #[inline(always)]
    pub fn locate<I: HwBits, const N: usize>(
        &self,
        x: I,
        rank: usize,
        ptrs: &mut [*const f64; MAX_ORDER],
    ) where
        M: ModeDecode<I>,
    {
        let n = self.count::<N>();
        // Indexed, not zipped: in the hot loop of the wide kernels the iterator adapters are not
        // always inlined (the disassembly test checks).
        #[allow(clippy::needless_range_loop)]
        for j in 0..n {
            let c = self.dec[j].coord(x);
            ptrs[j] = self.factor[j]
                .as_ptr()
                .wrapping_add((c as usize).wrapping_mul(rank));
        }
    }

    /// Prefetches the other modes' factor rows of `x` into L1 (coordinates out of range are
    /// skipped; a prefetch never faults).
    #[inline(always)]
    pub fn prefetch<I: HwBits, const N: usize>(&self, x: I, rank: usize)
    where
        M: ModeDecode<I>,
    {
        for j in 0..self.count::<N>() {
            let c = self.dec[j].coord(x);
            if c < self.rows[j] {
                let row = &self.factor[j][c as usize * rank..(c as usize + 1) * rank];
                prefetch_slice(row);
            }
        }
    }
}

/// Row lookup for the other modes of a nonzero: [`Others`] for any order, [`FixedModes`] for a
/// compile-time order (its decoders, row counts and bases then live in registers).
pub(crate) trait Locate<I> {
    /// The number of other modes.
    fn count(&self) -> usize;
    /// [`Others::locate`] (unchecked).
    fn locate(&self, x: I, rank: usize, ptrs: &mut [*const f64; MAX_ORDER]);
    /// [`Others::prefetch`].
    fn prefetch(&self, x: I, rank: usize);
}

impl<I: HwBits, M: ModeDecode<I>> Locate<I> for Others<'_, M> {
    #[inline(always)]
    fn count(&self) -> usize {
        self.count::<0>()
    }
    #[inline(always)]
    fn locate(&self, x: I, rank: usize, ptrs: &mut [*const f64; MAX_ORDER]) {
        Others::locate::<I, 0>(self, x, rank, ptrs)
    }
    #[inline(always)]
    fn prefetch(&self, x: I, rank: usize) {
        Others::prefetch::<I, 0>(self, x, rank)
    }
}

/// The first `K` other modes of an [`Others`] (which must have exactly `K`), by value.
#[derive(Clone, Copy)]
pub(crate) struct FixedModes<'a, M, const K: usize> {
    dec: [M; K],
    factor: [&'a [f64]; K],
    rows: [u64; K],
}

impl<'a, M: Copy, const K: usize> FixedModes<'a, M, K> {
    #[inline(always)]
    pub fn new(o: &Others<'a, M>) -> Self {
        debug_assert_eq!(o.n, K);
        FixedModes {
            dec: core::array::from_fn(|j| o.dec[j]),
            factor: core::array::from_fn(|j| o.factor[j]),
            rows: core::array::from_fn(|j| o.rows[j]),
        }
    }
}

impl<I: HwBits, M: ModeDecode<I>, const K: usize> Locate<I> for FixedModes<'_, M, K> {
    #[inline(always)]
    fn count(&self) -> usize {
        K
    }
    #[inline(always)]
    // Indexed on purpose: the iterator form compiles to four more instructions per nonzero
    // (measured with callgrind on the segment benchmark).
    #[allow(clippy::needless_range_loop)]
    fn locate(&self, x: I, rank: usize, ptrs: &mut [*const f64; MAX_ORDER]) {
        for j in 0..K {
            let c = self.dec[j].coord(x);
            ptrs[j] = self.factor[j]
                .as_ptr()
                .wrapping_add((c as usize).wrapping_mul(rank));
        }
    }
    #[inline(always)]
    fn prefetch(&self, x: I, rank: usize) {
        for j in 0..K {
            let c = self.dec[j].coord(x);
            if c < self.rows[j] {
                prefetch_slice(&self.factor[j][c as usize * rank..(c as usize + 1) * rank]);
            }
        }
    }
}

/// Checks chunks of indices against the factors' row counts without decoding: a coordinate
/// `c = pext(x, mask)` is below `rows` exactly when `x & mask <= pdep(rows - 1, mask)`, because
/// `pext` keeps the order of the masked bits. That is an AND and a compare per mode, which the
/// compiler vectorizes (unlike `pext`), so the explicit kernels validate a chunk up front and
/// then run their inner loop without per-nonzero bounds checks.
pub(crate) struct Bounds<I> {
    n: usize,
    mask: [I; MAX_ORDER],
    /// The masked form of the largest valid coordinate.
    max: [I; MAX_ORDER],
    /// Some factor has no rows: every nonzero is out of range.
    empty: bool,
    /// The target mode's mask and the masked forms of the window's first and last rows, when
    /// targets are checked against a window (`None`: not checked).
    target: Option<(I, I, I)>,
}

/// The masked form of the largest coordinate at most `top` that `mask` can hold.
fn masked_max<I: HwBits>(top: u64, mask: I) -> I {
    let bits = mask.to_u128().count_ones();
    if bits >= 64 || top >= (1u64 << bits) - 1 {
        mask // every coordinate the mask can hold
    } else {
        I::pdep_soft(top, mask)
    }
}

impl<I: HwBits> Bounds<I> {
    /// The bounds of the non-target modes of `input` (`rank >= 1`, checked by `run_segment`),
    /// and with `window` (when it has rows) of the target rows too.
    pub fn new<D: Decode<I>>(
        input: &SegmentInput<'_, I>,
        dec: &D,
        rank: usize,
        window: &RowWindow,
    ) -> Self {
        let mut b = Bounds {
            n: 0,
            mask: [I::ZERO; MAX_ORDER],
            max: [I::ZERO; MAX_ORDER],
            empty: false,
            target: None,
        };
        for (m, f) in input.factors.iter().enumerate().take(MAX_ORDER) {
            if m == input.target {
                continue;
            }
            let mask = dec.mask(m);
            b.mask[b.n] = mask;
            match ((f.len() / rank) as u64).checked_sub(1) {
                None => b.empty = true,
                Some(top) => b.max[b.n] = masked_max(top, mask),
            }
            b.n += 1;
        }
        if window.rows() > 0 {
            let mask = dec.mask(input.target);
            let bits = mask.to_u128().count_ones();
            let cap = if bits >= 64 {
                u64::MAX
            } else {
                (1u64 << bits) - 1
            };
            if window.first() > cap {
                b.empty = true; // no coordinate the mask can hold is a row of the window
            } else {
                let last = window.first().saturating_add(window.rows() - 1);
                let lo = I::pdep_soft(window.first(), mask);
                b.target = Some((mask, lo, masked_max(last, mask)));
            }
        }
        b
    }

    /// True when every non-target coordinate of every index in `xs` is a row of its factor and,
    /// with a window, every target coordinate is a row of the window.
    #[inline(always)]
    pub fn check(&self, xs: &[I]) -> bool {
        if self.empty {
            return xs.is_empty();
        }
        let mut bad = false;
        // Indexed, not zipped: the adapter is not always inlined into the wide kernels.
        for j in 0..self.n.min(MAX_ORDER) {
            let (mask, max) = (self.mask[j], self.max[j]);
            // Plain, non-short-circuiting loops, so they vectorize (and inline).
            for &x in xs {
                bad |= x.and(mask) > max;
            }
        }
        if let Some((mask, lo, hi)) = self.target {
            for &x in xs {
                let t = x.and(mask);
                bad |= (t < lo) | (t > hi);
            }
        }
        !bad
    }
}

/// The error for nonzero `x` of `input` when a factor row lookup failed.
#[cold]
#[inline(never)]
pub(crate) fn out_of_range<I: HwBits, D: Decode<I>>(
    input: &SegmentInput<'_, I>,
    dec: &D,
    x: I,
) -> KernelError {
    for (mode, f) in input.factors.iter().enumerate() {
        let coord = dec.coord(x, mode);
        let rows = f.len() / input.rank.max(1);
        if mode != input.target && coord >= rows as u64 {
            return KernelError::CoordOutOfRange { mode, coord, rows };
        }
    }
    unreachable!("out_of_range is called only after a failed row lookup")
}

/// The error for the first nonzero of `xs` with a coordinate outside its factor or, for the
/// target, outside `window`.
#[cold]
#[inline(never)]
pub(crate) fn first_out_of_range<I: HwBits, D: Decode<I>>(
    input: &SegmentInput<'_, I>,
    dec: &D,
    xs: &[I],
    window: &RowWindow,
) -> KernelError {
    for &x in xs {
        let bad = input.factors.iter().enumerate().any(|(m, f)| {
            m != input.target && dec.coord(x, m) >= (f.len() / input.rank.max(1)) as u64
        });
        if bad {
            return out_of_range(input, dec, x);
        }
        let row = dec.coord(x, input.target);
        if window.rows() > 0 && row.wrapping_sub(window.first()) >= window.rows() {
            return KernelError::RowOutOfRange {
                row,
                first: window.first(),
                rows: window.rows(),
            };
        }
    }
    unreachable!("first_out_of_range is called only for a chunk that failed its bounds check")
}

/// Prefetches every cache line of `row` (a hint: never faults, never changes results).
#[inline(always)]
pub(crate) fn prefetch_slice(row: &[f64]) {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let mut off = 0;
        while off < row.len() {
            // SAFETY: `off` is in bounds; SSE is part of the x86-64 baseline.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(row.as_ptr().add(off) as *const i8) };
            off += 8;
        }
        if let Some(last) = row.last() {
            // SAFETY: a reference to an element is a valid address.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(last as *const f64 as *const i8) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = row;
}
