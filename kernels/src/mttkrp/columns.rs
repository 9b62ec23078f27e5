//! The column work of one nonzero, the part of the per-nonzero skeleton that varies with the
//! rank: `out += v * prod(heads) * last` over the `rank` columns of a row. Three layouts:
//!
//! - [`FixedColumns`]: a rank fixed at compile time (`BLOCKS` x `NV` vectors, fully unrolled);
//! - [`VecColumns`]: a rank of up to [`TILE`] whole vectors fixed at compile time, plus a tail
//!   of fewer columns than a vector done with the ISA's own narrower vectors (a `zmm` kernel's
//!   tail in `ymm`, `xmm` and one-lane pieces): the tiled kernels up to 71 (AVX-512) or 35
//!   (AVX2) columns;
//! - [`TiledColumns`]: any rank, as register tiles of 8, 4, 2 and 1 vectors (each a
//!   const-generic body) and the same narrow tail: the tiled kernels beyond;
//! - [`DynColumns`]: any rank, pieces of four vectors and one opmask / `vmaskmovpd` tail: the
//!   runtime-rank fallback, kept as the tested reference point of the tiles.
//!
//! Why the tiled tail avoids masked memory operations: a masked store does not forward to the
//! next load of the same address (neither Intel nor AMD forward from `vmaskmovpd` /
//! `vmovupd{k}` stores), and consecutive nonzeros often add into the same output row, so a
//! masked tail turns every such pair into a wait for the store to retire. Narrow plain stores
//! forward. The staged path (atomic sinks) stores whole registers into a stack buffer, for the
//! same reason.

use super::vector::{product, SimdF64};
use crate::sink::RowSink;
use core::mem::MaybeUninit;

/// Largest fixed rank: the atomic path stages one row of this many values on the stack.
const MAX_FIXED_RANK: usize = 64;

/// Vectors per column piece in the runtime-rank body.
const DYN_PIECE: usize = 4;

/// Vectors of the widest register tile: eight accumulators, which leave registers for the
/// factor-row loads on both AVX2 (16 `ymm`) and AVX-512 (32 `zmm`).
pub(crate) const TILE: usize = 8;

/// The column work of one nonzero.
pub(crate) trait Columns<T: SimdF64>: Copy {
    /// The number of columns.
    fn rank(&self) -> usize;

    /// Adds the contribution into the plain row `out`.
    ///
    /// # Safety
    /// Every pointer in `heads`, and `last`, must be valid for reading `rank` doubles; `out`
    /// for reading and writing `rank` doubles, with no other access to them meanwhile.
    unsafe fn fma_into(
        &self,
        simd: T,
        v: f64,
        heads: &[*const f64],
        last: *const f64,
        out: *mut f64,
    );

    /// Forms the contribution in a stack buffer and hands it to [`RowSink::add`].
    ///
    /// # Safety
    /// Every pointer in `heads`, and `last`, must be valid for reading `rank` doubles.
    #[allow(clippy::too_many_arguments)]
    unsafe fn add_staged<S: RowSink>(
        &self,
        simd: T,
        v: f64,
        heads: &[*const f64],
        last: *const f64,
        sink: &mut S,
        target: u64,
        boundary: bool,
    );
}

/// `out[off ..] += v * prod(heads) * last` over `NV` whole vectors at column `off`.
///
/// # Safety
/// Every row pointer must be valid for reading `off + NV * LANES` doubles, `out` for reading
/// and writing them, with no other access meanwhile.
#[inline(always)]
unsafe fn tile_fma<T: SimdF64, const NV: usize>(
    simd: T,
    v: f64,
    heads: &[*const f64],
    last: *const f64,
    out: *mut f64,
    off: usize,
) {
    // SAFETY: the caller guarantees the rows hold `off + NV * LANES` doubles.
    let acc = unsafe { product::<T, NV>(simd, v, heads, off) };
    for (c, a) in acc.into_iter().enumerate() {
        let o = off + c * T::LANES;
        // SAFETY: `o + LANES <= off + NV * LANES`, within `last` and `out` (caller).
        unsafe {
            let y = simd.fmadd(a, simd.load(last.add(o)), simd.load(out.add(o)));
            simd.store(out.add(o), y);
        }
    }
}

/// `buf[..NV * LANES] = v * prod(heads) * last` over `NV` whole vectors at column `off`.
///
/// # Safety
/// Every row pointer must be valid for reading `off + NV * LANES` doubles; `buf` for writing
/// `NV * LANES` doubles.
#[inline(always)]
unsafe fn tile_stage<T: SimdF64, const NV: usize>(
    simd: T,
    v: f64,
    heads: &[*const f64],
    last: *const f64,
    buf: *mut f64,
    off: usize,
) {
    // SAFETY: as the caller guarantees.
    let acc = unsafe { product::<T, NV>(simd, v, heads, off) };
    for (c, a) in acc.into_iter().enumerate() {
        let o = c * T::LANES;
        // SAFETY: `o + LANES <= NV * LANES`, within `buf`; `off + o + LANES` within `last`.
        unsafe { simd.store(buf.add(o), simd.mul(a, simd.load(last.add(off + o)))) };
    }
}

/// A compile-time rank: `BLOCKS` blocks of `NV` vectors, each block's accumulators in
/// registers, fully unrolled.
#[derive(Clone, Copy)]
pub(crate) struct FixedColumns<const NV: usize, const BLOCKS: usize>;

impl<T: SimdF64, const NV: usize, const BLOCKS: usize> Columns<T> for FixedColumns<NV, BLOCKS> {
    #[inline(always)]
    fn rank(&self) -> usize {
        NV * T::LANES * BLOCKS
    }

    #[inline(always)]
    unsafe fn fma_into(
        &self,
        simd: T,
        v: f64,
        heads: &[*const f64],
        last: *const f64,
        out: *mut f64,
    ) {
        for b in 0..BLOCKS {
            // SAFETY: `(b + 1) * NV * LANES <= rank`, which the caller's rows hold.
            unsafe { tile_fma::<T, NV>(simd, v, heads, last, out, b * NV * T::LANES) };
        }
    }

    #[inline(always)]
    unsafe fn add_staged<S: RowSink>(
        &self,
        simd: T,
        v: f64,
        heads: &[*const f64],
        last: *const f64,
        sink: &mut S,
        target: u64,
        boundary: bool,
    ) {
        let block = NV * T::LANES;
        let rank = block * BLOCKS;
        const { assert!(NV * T::LANES * BLOCKS <= MAX_FIXED_RANK) };
        let mut row = [0.0f64; MAX_FIXED_RANK];
        let r = row.as_mut_ptr();
        for b in 0..BLOCKS {
            // SAFETY: as in `fma_into`; `row` holds `rank <= MAX_FIXED_RANK` doubles.
            unsafe { tile_stage::<T, NV>(simd, v, heads, last, r.add(b * block), b * block) };
        }
        sink.add(target, 0, &row[..rank], boundary);
    }
}

/// A rank `R` fixed at compile time for whatever lane count `T` has: blocks of
/// `min(TILE, R / LANES)` vectors, each block's accumulators in registers, fully unrolled (the
/// vector counts are constants once `T` is known). [`FixedColumns`] for a tier whose lane
/// count is a type parameter (`pulp`): one instantiation per rank, where spelling the layout
/// as `<NV, BLOCKS>` needs one per rank and possible lane count.
#[derive(Clone, Copy)]
pub(crate) struct RankColumns<const R: usize>;

impl<const R: usize> RankColumns<R> {
    /// Vectors per block at `lanes` doubles per vector.
    const fn block_vectors(lanes: usize) -> usize {
        let v = R / lanes;
        if v < TILE {
            v
        } else {
            TILE
        }
    }

    /// Checks the layout for `T` (at compile time) and gives (vectors per block, blocks).
    #[inline(always)]
    fn layout<T: SimdF64>() -> (usize, usize) {
        const {
            let nv = Self::block_vectors(T::LANES);
            assert!(nv > 0 && R.is_multiple_of(nv * T::LANES) && R <= MAX_FIXED_RANK);
        };
        let nv = Self::block_vectors(T::LANES);
        (nv, R / (nv * T::LANES))
    }
}

/// [`product`] over the first `n <= TILE` vectors of a tile: with `n` a constant of the caller
/// the loops unroll and the unused accumulators vanish.
///
/// # Safety
/// Every pointer in `rows` must be valid for reading `off + n * LANES` doubles.
#[inline(always)]
unsafe fn product_upto<T: SimdF64>(
    simd: T,
    v: f64,
    rows: &[*const f64],
    off: usize,
    n: usize,
) -> [T::V; TILE] {
    let mut acc = [simd.splat(v); TILE];
    for &row in rows {
        for (c, a) in acc.iter_mut().enumerate().take(n) {
            // SAFETY: `c < n`: the caller guarantees the row holds `off + n * LANES` doubles.
            *a = simd.mul(*a, unsafe { simd.load(row.add(off + c * T::LANES)) });
        }
    }
    acc
}

impl<T: SimdF64, const R: usize> Columns<T> for RankColumns<R> {
    #[inline(always)]
    fn rank(&self) -> usize {
        R
    }

    #[inline(always)]
    unsafe fn fma_into(
        &self,
        simd: T,
        v: f64,
        heads: &[*const f64],
        last: *const f64,
        out: *mut f64,
    ) {
        let (nv, blocks) = Self::layout::<T>();
        for b in 0..blocks {
            let off = b * nv * T::LANES;
            // SAFETY: `off + nv * LANES <= R`, which the caller's rows hold.
            let acc = unsafe { product_upto(simd, v, heads, off, nv) };
            for (c, a) in acc.into_iter().enumerate().take(nv) {
                let o = off + c * T::LANES;
                // SAFETY: `o + LANES <= R`, within `last` and `out` (caller).
                unsafe {
                    let y = simd.fmadd(a, simd.load(last.add(o)), simd.load(out.add(o)));
                    simd.store(out.add(o), y);
                }
            }
        }
    }

    #[inline(always)]
    unsafe fn add_staged<S: RowSink>(
        &self,
        simd: T,
        v: f64,
        heads: &[*const f64],
        last: *const f64,
        sink: &mut S,
        target: u64,
        boundary: bool,
    ) {
        let (nv, blocks) = Self::layout::<T>();
        let mut row = [0.0f64; MAX_FIXED_RANK];
        let r = row.as_mut_ptr();
        for b in 0..blocks {
            let off = b * nv * T::LANES;
            // SAFETY: as in `fma_into`; `row` holds `R <= MAX_FIXED_RANK` doubles.
            let acc = unsafe { product_upto(simd, v, heads, off, nv) };
            for (c, a) in acc.into_iter().enumerate().take(nv) {
                let o = off + c * T::LANES;
                // SAFETY: `o + LANES <= R`, within `last` (caller) and `row`.
                unsafe { simd.store(r.add(o), simd.mul(a, simd.load(last.add(o)))) };
            }
        }
        sink.add(target, 0, &row[..R], boundary);
    }
}

/// A rank of `NV` whole vectors and `part < LANES` more columns (`NV <= TILE`): one register
/// tile fixed at compile time, and the tail in the ISA's narrower vectors. The tiled kernels'
/// body for every rank up to `TILE * LANES + LANES - 1` (71 on AVX-512, 35 on AVX2): only the
/// tail length is a runtime value, so the loop keeps the fixed kernels' shape.
#[derive(Clone, Copy)]
pub(crate) struct VecColumns<const NV: usize> {
    part: usize,
}

impl<const NV: usize> VecColumns<NV> {
    /// `rank` must be `NV * LANES + part` with `part < LANES`.
    #[inline(always)]
    pub(crate) fn new<T: SimdF64>(rank: usize) -> Self {
        debug_assert_eq!(rank / T::LANES, NV);
        VecColumns {
            part: rank % T::LANES,
        }
    }
}

impl<T: SimdF64, const NV: usize> Columns<T> for VecColumns<NV> {
    #[inline(always)]
    fn rank(&self) -> usize {
        NV * T::LANES + self.part
    }

    // SAFETY (both methods): the tile covers columns `0 .. NV * LANES`, the tail the `part`
    // after it: `rank` columns in all, which the caller's rows hold.
    #[inline(always)]
    unsafe fn fma_into(
        &self,
        simd: T,
        v: f64,
        heads: &[*const f64],
        last: *const f64,
        out: *mut f64,
    ) {
        if NV > 0 {
            unsafe { tile_fma::<T, NV>(simd, v, heads, last, out, 0) };
        }
        if self.part != 0 {
            let mut step = FmaStep {
                v,
                heads,
                last,
                out,
                col: NV * T::LANES,
            };
            unsafe { for_narrow(simd, self.part, &mut step) };
        }
    }

    #[inline(always)]
    unsafe fn add_staged<S: RowSink>(
        &self,
        simd: T,
        v: f64,
        heads: &[*const f64],
        last: *const f64,
        sink: &mut S,
        target: u64,
        boundary: bool,
    ) {
        const { assert!(T::LANES <= 8) };
        // Uninitialized: zeroing it would be a `memset` per nonzero; every column read below
        // is written first.
        let mut buf = [MaybeUninit::<f64>::uninit(); (TILE + 1) * 8];
        let b = buf.as_mut_ptr().cast::<f64>();
        if NV > 0 {
            unsafe { tile_stage::<T, NV>(simd, v, heads, last, b, 0) };
        }
        if self.part != 0 {
            let mut step = StageStep {
                v,
                heads,
                last,
                buf: unsafe { b.add(NV * T::LANES) },
                col: NV * T::LANES,
            };
            unsafe { for_narrow(simd, self.part, &mut step) };
        }
        let rank = <Self as Columns<T>>::rank(self);
        // SAFETY: the tile wrote columns `0 .. NV * LANES` of `buf` and the tail the `part`
        // after them: `rank <= (TILE + 1) * 8` initialized doubles.
        let row = unsafe { core::slice::from_raw_parts(b, rank) };
        sink.add(target, 0, row, boundary);
    }
}

/// Any rank as register tiles: `full` tiles of [`TILE`] vectors, then tiles of 4, 2 and 1
/// vectors for the bits of `rest` (`rest < TILE`), then `part < LANES` columns in the ISA's
/// narrower vectors ([`SimdF64::Half`]: 4, 2 and 1 lanes for AVX-512). Every tile is a
/// const-generic body with its accumulators in registers; the per-nonzero branches test values
/// fixed for the whole segment, so they predict perfectly.
#[derive(Clone, Copy)]
pub(crate) struct TiledColumns {
    rank: usize,
    full: usize,
    rest: usize,
    part: usize,
}

impl TiledColumns {
    #[inline(always)]
    pub(crate) fn new<T: SimdF64>(rank: usize) -> Self {
        let vectors = rank / T::LANES;
        TiledColumns {
            rank,
            full: vectors / TILE,
            rest: vectors % TILE,
            part: rank % T::LANES,
        }
    }
}

/// One step of a tail: the work on the columns one narrower vector covers.
trait NarrowStep {
    /// # Safety
    /// As for the [`Columns`] method that runs the step, for columns `at .. at + U::LANES` of
    /// the tail.
    unsafe fn step<U: SimdF64>(&mut self, tok: U, at: usize);
}

/// Runs `op` over `part < LANES` tail columns with the narrower vectors of `T`: `T::Half`, its
/// half and its half's half, each taking its width of columns while enough remain (AVX-512:
/// 4, 2, 1 lanes; AVX2: 2, 1). The last level has one lane, so every column is covered.
///
/// # Safety
/// As for `op`'s steps, over the columns `0 .. part` of the tail.
#[inline(always)]
unsafe fn for_narrow<T: SimdF64, O: NarrowStep>(simd: T, part: usize, op: &mut O) {
    const { assert!(<<<T::Half as SimdF64>::Half as SimdF64>::Half as SimdF64>::LANES == 1) };
    let h1 = simd.half();
    let h2 = h1.half();
    let h3 = h2.half();
    let mut left = part;
    let mut at = 0;
    // SAFETY: each level covers columns below `part`, as the caller allows.
    unsafe {
        narrow_level(h1, T::LANES, &mut left, &mut at, op);
        narrow_level(h2, <T::Half as SimdF64>::LANES, &mut left, &mut at, op);
        narrow_level(
            h3,
            <<T::Half as SimdF64>::Half as SimdF64>::LANES,
            &mut left,
            &mut at,
            op,
        );
    }
    debug_assert_eq!(left, 0, "the narrow ladder ends at one lane");
}

/// One level of [`for_narrow`]: skipped when `U` is no narrower than the level above.
///
/// # Safety
/// As for [`for_narrow`].
#[inline(always)]
unsafe fn narrow_level<U: SimdF64, O: NarrowStep>(
    tok: U,
    wider: usize,
    left: &mut usize,
    at: &mut usize,
    op: &mut O,
) {
    if U::LANES < wider {
        // A true halving takes its width at most once (a branch, not a loop); a wider jump
        // (`pulp` goes straight to one lane) loops.
        let once = 2 * U::LANES == wider;
        while *left >= U::LANES {
            // SAFETY: columns `at .. at + LANES` lie below `part` (the caller's bound).
            unsafe { op.step(tok, *at) };
            *left -= U::LANES;
            *at += U::LANES;
            if once {
                break;
            }
        }
    }
}

/// The tail step of [`Columns::fma_into`].
struct FmaStep<'h> {
    v: f64,
    heads: &'h [*const f64],
    last: *const f64,
    out: *mut f64,
    col: usize,
}

impl NarrowStep for FmaStep<'_> {
    #[inline(always)]
    unsafe fn step<U: SimdF64>(&mut self, tok: U, at: usize) {
        // SAFETY: as the caller of `for_narrow` guarantees for these columns.
        unsafe { tile_fma::<U, 1>(tok, self.v, self.heads, self.last, self.out, self.col + at) };
    }
}

/// The tail step of [`Columns::add_staged`]: into `buf[at ..]`.
struct StageStep<'h> {
    v: f64,
    heads: &'h [*const f64],
    last: *const f64,
    buf: *mut f64,
    col: usize,
}

impl NarrowStep for StageStep<'_> {
    #[inline(always)]
    unsafe fn step<U: SimdF64>(&mut self, tok: U, at: usize) {
        // SAFETY: as the caller of `for_narrow` guarantees; `buf` holds the tail.
        unsafe {
            tile_stage::<U, 1>(
                tok,
                self.v,
                self.heads,
                self.last,
                self.buf.add(at),
                self.col + at,
            )
        };
    }
}

impl<T: SimdF64> Columns<T> for TiledColumns {
    #[inline(always)]
    fn rank(&self) -> usize {
        self.rank
    }

    // SAFETY (every block below): the tiles and the tail cover columns `0..rank` once, in
    // order, and never beyond `rank`, which the caller's rows hold.
    #[inline(always)]
    unsafe fn fma_into(
        &self,
        simd: T,
        v: f64,
        heads: &[*const f64],
        last: *const f64,
        out: *mut f64,
    ) {
        let mut col = 0;
        for _ in 0..self.full {
            unsafe { tile_fma::<T, TILE>(simd, v, heads, last, out, col) };
            col += TILE * T::LANES;
        }
        if self.rest & 4 != 0 {
            unsafe { tile_fma::<T, 4>(simd, v, heads, last, out, col) };
            col += 4 * T::LANES;
        }
        if self.rest & 2 != 0 {
            unsafe { tile_fma::<T, 2>(simd, v, heads, last, out, col) };
            col += 2 * T::LANES;
        }
        if self.rest & 1 != 0 {
            unsafe { tile_fma::<T, 1>(simd, v, heads, last, out, col) };
            col += T::LANES;
        }
        if self.part != 0 {
            let mut step = FmaStep {
                v,
                heads,
                last,
                out,
                col,
            };
            unsafe { for_narrow(simd, self.part, &mut step) };
        }
    }

    #[inline(always)]
    unsafe fn add_staged<S: RowSink>(
        &self,
        simd: T,
        v: f64,
        heads: &[*const f64],
        last: *const f64,
        sink: &mut S,
        target: u64,
        boundary: bool,
    ) {
        const { assert!(T::LANES <= 8) };
        // Uninitialized (no `memset` per nonzero): each `sink.add` below reads only the
        // columns the tiles just wrote.
        let mut buf = [MaybeUninit::<f64>::uninit(); TILE * 8];
        let b = buf.as_mut_ptr().cast::<f64>();
        let mut col = 0;
        for _ in 0..self.full {
            unsafe { tile_stage::<T, TILE>(simd, v, heads, last, b, col) };
            // SAFETY: the tile wrote `TILE * LANES <= TILE * 8` doubles of `buf`.
            let row = unsafe { core::slice::from_raw_parts(b, TILE * T::LANES) };
            sink.add(target, col, row, boundary);
            col += TILE * T::LANES;
        }
        let rest = self.rest * T::LANES;
        if rest != 0 {
            let mut at = 0;
            if self.rest & 4 != 0 {
                unsafe { tile_stage::<T, 4>(simd, v, heads, last, b, col) };
                at += 4 * T::LANES;
            }
            if self.rest & 2 != 0 {
                unsafe { tile_stage::<T, 2>(simd, v, heads, last, b.add(at), col + at) };
                at += 2 * T::LANES;
            }
            if self.rest & 1 != 0 {
                unsafe { tile_stage::<T, 1>(simd, v, heads, last, b.add(at), col + at) };
            }
            // SAFETY: the 4-, 2- and 1-vector tiles wrote `rest` doubles of `buf`, in order.
            let row = unsafe { core::slice::from_raw_parts(b, rest) };
            sink.add(target, col, row, boundary);
            col += rest;
        }
        if self.part != 0 {
            let mut step = StageStep {
                v,
                heads,
                last,
                buf: b,
                col,
            };
            unsafe { for_narrow(simd, self.part, &mut step) };
            // SAFETY: the narrow steps wrote the `part < LANES` doubles of the tail.
            let row = unsafe { core::slice::from_raw_parts(b, self.part) };
            sink.add(target, col, row, boundary);
        }
    }
}

/// Any rank: pieces of [`DYN_PIECE`] vectors up to `pieces_end`, single vectors up to
/// `vectors_end`, then a masked partial vector of `part` columns.
#[derive(Clone, Copy)]
pub(crate) struct DynColumns {
    rank: usize,
    pieces_end: usize,
    vectors_end: usize,
    part: usize,
}

impl DynColumns {
    #[inline(always)]
    pub(crate) fn new<T: SimdF64>(rank: usize) -> Self {
        let piece = DYN_PIECE * T::LANES;
        let vectors_end = rank - rank % T::LANES;
        DynColumns {
            rank,
            pieces_end: rank - rank % piece,
            vectors_end,
            part: rank - vectors_end,
        }
    }
}

/// [`product`] for a partial vector of `n < LANES` columns (masked loads).
///
/// # Safety
/// Every pointer in `rows` must be valid for reading `off + n` doubles; `0 < n < LANES`.
#[inline(always)]
unsafe fn product_part<T: SimdF64>(
    simd: T,
    v: f64,
    rows: &[*const f64],
    off: usize,
    n: usize,
) -> T::V {
    let mut acc = simd.splat(v);
    for &row in rows {
        // SAFETY: as the caller guarantees.
        acc = simd.mul(acc, unsafe { simd.load_part(row.add(off), n) });
    }
    acc
}

impl<T: SimdF64> Columns<T> for DynColumns {
    #[inline(always)]
    fn rank(&self) -> usize {
        self.rank
    }

    // SAFETY (every block below): the column ranges stay below `rank`, which the caller's
    // rows hold; `part < LANES` columns are accessed with masked operations.
    #[inline(always)]
    unsafe fn fma_into(
        &self,
        simd: T,
        v: f64,
        heads: &[*const f64],
        last: *const f64,
        out: *mut f64,
    ) {
        let mut col = 0;
        while col < self.pieces_end {
            unsafe { tile_fma::<T, DYN_PIECE>(simd, v, heads, last, out, col) };
            col += DYN_PIECE * T::LANES;
        }
        while col < self.vectors_end {
            unsafe { tile_fma::<T, 1>(simd, v, heads, last, out, col) };
            col += T::LANES;
        }
        let part = self.part;
        if part > 0 {
            unsafe {
                let a = product_part(simd, v, heads, col, part);
                let l = simd.load_part(last.add(col), part);
                let y = simd.fmadd(a, l, simd.load_part(out.add(col), part));
                simd.store_part(out.add(col), part, y);
            }
        }
    }

    #[inline(always)]
    unsafe fn add_staged<S: RowSink>(
        &self,
        simd: T,
        v: f64,
        heads: &[*const f64],
        last: *const f64,
        sink: &mut S,
        target: u64,
        boundary: bool,
    ) {
        const { assert!(T::LANES <= 8) };
        let piece = DYN_PIECE * T::LANES;
        let mut buf = [0.0f64; DYN_PIECE * 8];
        let b = buf.as_mut_ptr();
        let mut col = 0;
        while col < self.pieces_end {
            // SAFETY: as in `fma_into`; `buf` holds `DYN_PIECE * LANES` doubles.
            unsafe { tile_stage::<T, DYN_PIECE>(simd, v, heads, last, b, col) };
            sink.add(target, col, &buf[..piece], boundary);
            col += piece;
        }
        while col < self.vectors_end {
            // SAFETY: as above.
            unsafe { tile_stage::<T, 1>(simd, v, heads, last, b, col) };
            sink.add(target, col, &buf[..T::LANES], boundary);
            col += T::LANES;
        }
        let part = self.part;
        if part > 0 {
            // SAFETY: as above, masked to `part` columns.
            unsafe {
                let a = product_part(simd, v, heads, col, part);
                simd.store_part(b, part, simd.mul(a, simd.load_part(last.add(col), part)));
            }
            sink.add(target, col, &buf[..part], boundary);
        }
    }
}
