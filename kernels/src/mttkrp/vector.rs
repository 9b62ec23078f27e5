//! The MTTKRP algorithm, written once over a tiny vector trait ([`SimdF64`]) that each tier
//! implements on its capability token (so holding the `self` of a method proves the CPU runs
//! its instructions): AVX2 and AVX-512, the one-lane scalar tier, and the `pulp` tier (on a
//! wrapper of whichever `pulp::Simd` architecture `pulp` dispatches to). One skeleton
//! (`segment_loop`: chunks, bounds, row location, sink) serves all four tiers and both fixed
//! and runtime ranks, with the column work (`FixedColumns`, `DynColumns`) as the varying part.
//! The bodies are `#[inline(always)]`; the ISA modules wrap them in `#[target_feature]` entry
//! points (`isa_kernels!`), `pulp` in its own `WithSimd` dispatch, where the intrinsics and
//! BMI2 `pext` inline.
//!
//! Per nonzero: decode the other modes into row pointers (one bounds test per mode, folded into
//! a single branch), form `acc = v * U_a(i_a, :) * ...` over all but the last other mode in
//! registers, then `out = fma(acc, U_last(i_last, :), out)` into a plain output row, or
//! `acc * U_last` handed to [`RowSink::add`] when the update must be atomic.

use super::{first_out_of_range, Bounds, FixedModes, KernelError, Locate, Others, SegmentInput};
use crate::decode::{Decode, HwBits, ModeDecode, MAX_ORDER};
use crate::sink::{RowSink, RowWindow};

/// Largest fixed rank: the atomic path stages one row of this many values on the stack.
const MAX_FIXED_RANK: usize = 64;

/// Vectors per column piece in the runtime-rank body.
const DYN_PIECE: usize = 4;

/// Nonzeros whose coordinates are validated together (see [`Bounds`]) before the inner loop
/// runs over them without bounds checks; small enough that the chunk's indices stay in L1.
const CHUNK: usize = 512;

/// One ISA's f64 vector operations, implemented on its capability token.
pub(crate) trait SimdF64: Copy {
    /// Doubles per vector.
    const LANES: usize;
    /// The register type.
    type V: Copy;

    fn splat(self, x: f64) -> Self::V;
    fn mul(self, a: Self::V, b: Self::V) -> Self::V;
    /// `a * b + c`, fused.
    fn fmadd(self, a: Self::V, b: Self::V, c: Self::V) -> Self::V;

    /// # Safety
    /// `p` must be valid for reading `LANES` doubles (no alignment needed).
    unsafe fn load(self, p: *const f64) -> Self::V;
    /// # Safety
    /// `p` must be valid for writing `LANES` doubles (no alignment needed).
    unsafe fn store(self, p: *mut f64, v: Self::V);
    /// Loads lanes `0..n` (masked: lanes `n..` read as zero and are not accessed).
    /// # Safety
    /// `0 < n < LANES` and `p` valid for reading `n` doubles.
    unsafe fn load_part(self, p: *const f64, n: usize) -> Self::V;
    /// Stores lanes `0..n` (masked: memory past `n` is not accessed).
    /// # Safety
    /// `0 < n < LANES` and `p` valid for writing `n` doubles.
    unsafe fn store_part(self, p: *mut f64, n: usize, v: Self::V);
}

/// `v * prod_j rows[j][off .. off + P * LANES]` in `P` registers.
///
/// # Safety
/// Every pointer in `rows` must be valid for reading `off + P * LANES` doubles.
#[inline(always)]
unsafe fn product<T: SimdF64, const P: usize>(
    simd: T,
    v: f64,
    rows: &[*const f64],
    off: usize,
) -> [T::V; P] {
    let mut acc = [simd.splat(v); P];
    for &row in rows {
        for (c, a) in acc.iter_mut().enumerate() {
            // SAFETY: the caller guarantees the row holds `off + P * LANES` doubles.
            *a = simd.mul(*a, unsafe { simd.load(row.add(off + c * T::LANES)) });
        }
    }
    acc
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

/// The window of `sink` for rank `rank`: an error when it holds rows of another width.
#[inline(always)]
fn window_of<S: RowSink>(sink: &mut S, rank: usize) -> Result<RowWindow, KernelError> {
    let window = sink.window();
    if window.rows() > 0 && window.rank() != rank {
        return Err(KernelError::SinkRank {
            sink: window.rank(),
            rank,
        });
    }
    Ok(window)
}

/// Rank fixed at compile time: `BLOCKS` blocks of `NV` vectors (`rank = BLOCKS * NV * LANES`),
/// each block's accumulators live in registers for the whole nonzero; the column loop is
/// fully unrolled. `N > 0` also fixes the number of non-target modes (order `N + 1`), which
/// unrolls the decode and product loops and keeps the decoders in registers; `N = 0` takes the
/// order from the input.
#[inline(always)]
pub(crate) fn fixed_body<T, I, D, S, const NV: usize, const BLOCKS: usize, const N: usize>(
    simd: T,
    input: &SegmentInput<'_, I>,
    dec: &D,
    sink: &mut S,
) -> Result<(), KernelError>
where
    T: SimdF64,
    I: HwBits,
    D: Decode<I>,
    S: RowSink,
{
    let cols = FixedColumns::<NV, BLOCKS>;
    let rank = <FixedColumns<NV, BLOCKS> as Columns<T>>::rank(&cols);
    debug_assert_eq!(rank, input.rank, "run_segment checks the rank");
    let others = Others::new(input, dec, rank);
    // Prefetching (for factors beyond L2) is a separate loop so the common case carries no
    // prefetch test; both keep the order specialization when there is one.
    let prefetch = input.prefetch > 0;
    if N == 0 {
        if prefetch {
            segment_loop::<T, I, D, S, _, _, true>(simd, input, dec, sink, &others, cols)
        } else {
            segment_loop::<T, I, D, S, _, _, false>(simd, input, dec, sink, &others, cols)
        }
    } else {
        let modes = FixedModes::<_, N>::new(&others);
        if prefetch {
            segment_loop::<T, I, D, S, _, _, true>(simd, input, dec, sink, &modes, cols)
        } else {
            segment_loop::<T, I, D, S, _, _, false>(simd, input, dec, sink, &modes, cols)
        }
    }
}

/// Any rank: pieces of [`DYN_PIECE`] vectors, then single vectors, then one masked partial
/// vector for the last `rank % LANES` columns.
#[inline(always)]
pub(crate) fn dyn_body<T, I, D, S>(
    simd: T,
    input: &SegmentInput<'_, I>,
    dec: &D,
    sink: &mut S,
) -> Result<(), KernelError>
where
    T: SimdF64,
    I: HwBits,
    D: Decode<I>,
    S: RowSink,
{
    let cols = DynColumns::new::<T>(input.rank);
    let others = Others::new(input, dec, input.rank);
    if input.prefetch > 0 {
        segment_loop::<T, I, D, S, _, _, true>(simd, input, dec, sink, &others, cols)
    } else {
        segment_loop::<T, I, D, S, _, _, false>(simd, input, dec, sink, &others, cols)
    }
}

/// The one per-nonzero skeleton of every tier built on [`SimdF64`]: chunks of [`CHUNK`]
/// nonzeros validated at once by [`Bounds`], then per nonzero the row lookup through the
/// locator `L` (any order, or one fixed at compile time), and the column work `C` (a fixed
/// rank unrolled in registers, or any rank in pieces) into the sink's window when the row is
/// plain for this nonzero, else staged and handed to [`RowSink::add`]. `PF`: with software
/// prefetch (a separate loop, so the common case carries no prefetch test or registers).
#[inline(always)]
fn segment_loop<T, I, D, S, L, C, const PF: bool>(
    simd: T,
    input: &SegmentInput<'_, I>,
    dec: &D,
    sink: &mut S,
    others: &L,
    cols: C,
) -> Result<(), KernelError>
where
    T: SimdF64,
    I: HwBits,
    D: Decode<I>,
    S: RowSink,
    L: Locate<I>,
    C: Columns<T>,
{
    let rank = cols.rank();
    let last = others.count() - 1; // order >= 2 (checked by run_segment)
    let target_dec = dec.mode(input.target);
    let window = window_of(sink, rank)?;
    let has_window = window.rows() > 0;
    let bounds = Bounds::new(input, dec, rank, &window);
    let dist = input.prefetch;
    let mut ptrs = [core::ptr::null::<f64>(); MAX_ORDER];
    let chunks = input.idx.chunks(CHUNK).zip(input.vals.chunks(CHUNK));
    for (c, (xs, vs)) in chunks.enumerate() {
        if !bounds.check(xs) {
            return Err(first_out_of_range(input, dec, xs, &window));
        }
        for (k, (&x, &v)) in xs.iter().zip(vs).enumerate() {
            if PF {
                if let Some(&ahead) = input.idx.get(c * CHUNK + k + dist) {
                    others.prefetch(ahead, rank);
                }
            }
            // Unchecked: `bounds` accepted every nonzero of the chunk.
            others.locate(x, rank, &mut ptrs);
            let target = target_dec.coord(x);
            let boundary = x.intersects(input.boundary_mask);
            let (heads, tail) = ptrs.split_at(last);
            let plast = tail[0];
            if has_window && sink.is_plain(boundary) {
                // `bounds` accepted the chunk: `target` is a row of the window.
                let out = window.row_ptr_unchecked(target, rank);
                // SAFETY: `bounds` accepted the chunk, so every row pointer starts `rank`
                // doubles of its factor and `out` starts the window's row `target`, `rank`
                // doubles that are plain for this nonzero (the sink said so) and that no other
                // reference reaches while the sink is borrowed here.
                unsafe { cols.fma_into(simd, v, heads, plast, out) };
            } else {
                // SAFETY: as above, for the factor rows.
                unsafe { cols.add_staged(simd, v, heads, plast, sink, target, boundary) };
            }
        }
    }
    Ok(())
}

/// The column work of one nonzero, the part of [`segment_loop`] that varies with the rank:
/// `out += v * prod(heads) * last` over the `rank` columns.
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
        let block = NV * T::LANES;
        for b in 0..BLOCKS {
            // SAFETY: `b * block + NV * LANES <= rank`, which the caller's rows hold.
            let acc = unsafe { product::<T, NV>(simd, v, heads, b * block) };
            for (c, a) in acc.into_iter().enumerate() {
                let off = b * block + c * T::LANES;
                // SAFETY: `off + LANES <= rank`: within `last` and `out`, as the caller
                // guarantees.
                unsafe {
                    let y = simd.fmadd(a, simd.load(last.add(off)), simd.load(out.add(off)));
                    simd.store(out.add(off), y);
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
        let block = NV * T::LANES;
        let rank = block * BLOCKS;
        // A runtime check, not a `const` assertion: the `pulp` tier picks `NV` and `BLOCKS` by
        // the lane count at run time, so layouts too wide for some `T` are instantiated (never
        // run) too. The operands are constants: the check folds away where it holds.
        assert!(
            rank <= MAX_FIXED_RANK,
            "fixed rank {rank} over {MAX_FIXED_RANK}"
        );
        let mut row = [0.0f64; MAX_FIXED_RANK];
        let r = row.as_mut_ptr();
        for b in 0..BLOCKS {
            // SAFETY: as in `fma_into`.
            let acc = unsafe { product::<T, NV>(simd, v, heads, b * block) };
            for (c, a) in acc.into_iter().enumerate() {
                let off = b * block + c * T::LANES;
                // SAFETY: `off + LANES <= rank <= MAX_FIXED_RANK`, within `row` and `last`.
                unsafe { simd.store(r.add(off), simd.mul(a, simd.load(last.add(off)))) };
            }
        }
        sink.add(target, 0, &row[..rank], boundary);
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
    fn new<T: SimdF64>(rank: usize) -> Self {
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
        let piece = DYN_PIECE * T::LANES;
        let mut col = 0;
        while col < self.pieces_end {
            let acc = unsafe { product::<T, DYN_PIECE>(simd, v, heads, col) };
            for (c, a) in acc.into_iter().enumerate() {
                let off = col + c * T::LANES;
                unsafe {
                    let y = simd.fmadd(a, simd.load(last.add(off)), simd.load(out.add(off)));
                    simd.store(out.add(off), y);
                }
            }
            col += piece;
        }
        while col < self.vectors_end {
            let [a] = unsafe { product::<T, 1>(simd, v, heads, col) };
            unsafe {
                let y = simd.fmadd(a, simd.load(last.add(col)), simd.load(out.add(col)));
                simd.store(out.add(col), y);
            }
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
            let acc = unsafe { product::<T, DYN_PIECE>(simd, v, heads, col) };
            for (c, a) in acc.into_iter().enumerate() {
                let off = c * T::LANES;
                unsafe { simd.store(b.add(off), simd.mul(a, simd.load(last.add(col + off)))) };
            }
            sink.add(target, col, &buf[..piece], boundary);
            col += piece;
        }
        while col < self.vectors_end {
            // SAFETY: as above.
            let [a] = unsafe { product::<T, 1>(simd, v, heads, col) };
            unsafe { simd.store(b, simd.mul(a, simd.load(last.add(col)))) };
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

/// Whether a kernel is also specialized for the order: [`ByOrder`] for the BMI2 decoder (its
/// per-mode decode is one instruction, so unrolling the mode loops pays), [`AnyOrder`] for the
/// bit-run decoder (whose decode cost dwarfs the loop overhead; fewer instantiations).
pub(crate) trait OrderPolicy {
    fn fixed<T, I, D, S, const NV: usize, const BLOCKS: usize>(
        simd: T,
        input: &SegmentInput<'_, I>,
        dec: &D,
        sink: &mut S,
    ) -> Result<(), KernelError>
    where
        T: SimdF64,
        I: HwBits,
        D: Decode<I>,
        S: RowSink;
}

/// Orders 3, 4 and 5 get their own unrolled loops; other orders the runtime-order loops.
pub(crate) struct ByOrder;
/// One body for every order.
pub(crate) struct AnyOrder;

impl OrderPolicy for ByOrder {
    #[inline(always)]
    fn fixed<T, I, D, S, const NV: usize, const BLOCKS: usize>(
        simd: T,
        input: &SegmentInput<'_, I>,
        dec: &D,
        sink: &mut S,
    ) -> Result<(), KernelError>
    where
        T: SimdF64,
        I: HwBits,
        D: Decode<I>,
        S: RowSink,
    {
        match input.factors.len() {
            3 => fixed_body::<T, I, D, S, NV, BLOCKS, 2>(simd, input, dec, sink),
            4 => fixed_body::<T, I, D, S, NV, BLOCKS, 3>(simd, input, dec, sink),
            5 => fixed_body::<T, I, D, S, NV, BLOCKS, 4>(simd, input, dec, sink),
            _ => fixed_body::<T, I, D, S, NV, BLOCKS, 0>(simd, input, dec, sink),
        }
    }
}

impl OrderPolicy for AnyOrder {
    #[inline(always)]
    fn fixed<T, I, D, S, const NV: usize, const BLOCKS: usize>(
        simd: T,
        input: &SegmentInput<'_, I>,
        dec: &D,
        sink: &mut S,
    ) -> Result<(), KernelError>
    where
        T: SimdF64,
        I: HwBits,
        D: Decode<I>,
        S: RowSink,
    {
        fixed_body::<T, I, D, S, NV, BLOCKS, 0>(simd, input, dec, sink)
    }
}

/// Defines the kernels of one explicit ISA from its token type, its target features and the
/// names of its entry points (one per rank variant, named like the kernel: `avx2_r16`): each
/// a `#[target_feature]`, `#[inline(never)]` wrapper (one symbol per kernel, which the
/// disassembly test finds by name) around the `#[inline(always)]` generic bodies; and the
/// module's `run`, which picks the entry point for a [`RankSpec`](super::RankSpec).
macro_rules! isa_kernels {
    (
        token: $tok:ty,
        features: $features:literal,
        fixed: { $($name:ident => $rank:literal = <$nv:literal, $blocks:literal>,)* }
        dynamic: $dyn_name:ident $(,)?
    ) => {
        $(
            #[target_feature(enable = $features)]
            #[inline(never)]
            pub(crate) fn $name<I, D, S, O>(
                tok: $tok,
                input: &$crate::mttkrp::SegmentInput<'_, I>,
                dec: &D,
                sink: &mut S,
            ) -> Result<(), $crate::mttkrp::KernelError>
            where
                I: $crate::decode::HwBits,
                D: $crate::decode::Decode<I>,
                S: $crate::sink::RowSink,
                O: $crate::mttkrp::vector::OrderPolicy,
            {
                O::fixed::<$tok, I, D, S, $nv, $blocks>(tok, input, dec, sink)
            }
        )*

        /// The runtime-rank kernel.
        #[target_feature(enable = $features)]
        #[inline(never)]
        pub(crate) fn $dyn_name<I, D, S>(
            tok: $tok,
            input: &$crate::mttkrp::SegmentInput<'_, I>,
            dec: &D,
            sink: &mut S,
        ) -> Result<(), $crate::mttkrp::KernelError>
        where
            I: $crate::decode::HwBits,
            D: $crate::decode::Decode<I>,
            S: $crate::sink::RowSink,
        {
            $crate::mttkrp::vector::dyn_body::<$tok, I, D, S>(tok, input, dec, sink)
        }

        /// Runs the rank variant `spec` (checked against the input's rank by `run_segment`).
        pub(super) fn run<I, D, S, O>(
            tok: $tok,
            spec: $crate::mttkrp::RankSpec,
            dec: &D,
            input: &$crate::mttkrp::SegmentInput<'_, I>,
            sink: &mut S,
        ) -> Result<(), $crate::mttkrp::KernelError>
        where
            I: $crate::decode::HwBits,
            D: $crate::decode::Decode<I>,
            S: $crate::sink::RowSink,
            O: $crate::mttkrp::vector::OrderPolicy,
        {
            use $crate::mttkrp::RankSpec;
            // SAFETY: `tok` proves the CPU has every feature the entry points enable.
            unsafe {
                match spec {
                    $(RankSpec::Fixed($rank) => $name::<I, D, S, O>(tok, input, dec, sink),)*
                    RankSpec::Fixed(_) | RankSpec::Dynamic => $dyn_name(tok, input, dec, sink),
                }
            }
        }
    };
}
pub(crate) use isa_kernels;
