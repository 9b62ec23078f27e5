//! The MTTKRP algorithm, written once over a tiny vector trait ([`SimdF64`]) that each tier
//! implements on its capability token (so holding the `self` of a method proves the CPU runs
//! its instructions): AVX2 and AVX-512, the one-lane scalar tier, and the `pulp` tier (on a
//! wrapper of whichever `pulp::Simd` architecture `pulp` dispatches to). One skeleton
//! (`nonzero_loop`: chunks, bounds, row location, sink) serves all four tiers and both fixed
//! and runtime ranks, with the column work ([`super::columns`]: a fixed rank, register tiles
//! for any rank, or the runtime-rank pieces) as the varying part.
//! The bodies are `#[inline(always)]`; the ISA modules wrap them in `#[target_feature]` entry
//! points (`isa_kernels!`), `pulp` in its own `WithSimd` dispatch, where the intrinsics and
//! BMI2 `pext` inline.
//!
//! Per nonzero: decode the other modes into row pointers (one bounds test per mode, folded into
//! a single branch), form `acc = v * U_a(i_a, :) * ...` over all but the last other mode in
//! registers, then `out = fma(acc, U_last(i_last, :), out)` into a plain output row, or
//! `acc * U_last` handed to [`RowSink::add`] when the update must be atomic.

use super::columns::{Columns, DynColumns, FixedColumns, TiledColumns, VecColumns};
use super::{first_out_of_range, Bounds, FixedModes, KernelError, Locate, Others, SegmentInput};
use crate::decode::{Decode, HwBits, ModeDecode, MAX_ORDER};
use crate::sink::{RowSink, RowWindow};

/// Nonzeros whose coordinates are validated together (see [`Bounds`]) before the inner loop
/// runs over them without bounds checks; small enough that the chunk's indices stay in L1.
const CHUNK: usize = 512;

/// One ISA's f64 vector operations, implemented on its capability token.
pub(crate) trait SimdF64: Copy {
    /// Doubles per vector.
    const LANES: usize;
    /// The register type.
    type V: Copy;
    /// The same ISA on vectors of half the lanes (one lane: itself): the tiled kernels' tails
    /// run on it instead of masked loads and stores (see [`super::columns`]).
    type Half: SimdF64;

    /// The token of the half-width vectors (the same proof: a narrower register of the ISA).
    fn half(self) -> Self::Half;

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
pub(crate) unsafe fn product<T: SimdF64, const P: usize>(
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

/// The per-nonzero loop with column work `cols` (a fixed rank, tiles, or pieces), the order
/// taken from the input.
#[inline(always)]
pub(crate) fn body<T, I, D, S, C>(
    simd: T,
    input: &SegmentInput<'_, I>,
    dec: &D,
    sink: &mut S,
    cols: C,
) -> Result<(), KernelError>
where
    T: SimdF64,
    I: HwBits,
    D: Decode<I>,
    S: RowSink,
    C: Columns<T>,
{
    debug_assert_eq!(cols.rank(), input.rank, "run_segment checks the rank");
    let others = Others::new(input, dec, cols.rank());
    let plan = SinkPlan::new(input, sink, cols.rank())?;
    // One loop with and without software prefetch: its test is a branch that goes the same
    // way for the whole segment, beside a mode loop whose trip count is a run-time value.
    if plan.all_plain() {
        nonzero_loop::<T, I, D, S, _, _, true, { route::ALL_PLAIN }>(
            simd, input, dec, sink, &others, cols, &plan,
        )
    } else {
        nonzero_loop::<T, I, D, S, _, _, true, { route::ANY }>(
            simd, input, dec, sink, &others, cols, &plan,
        )
    }
}

/// [`body`] with the number `N >= 1` of non-target modes fixed (order `N + 1`), which unrolls
/// the decode and product loops and keeps the decoders in registers; these loops have no
/// prefetch test. With software prefetch it runs [`body`]: prefetch is off by default and pays
/// only where factor rows come from memory, whose wait dwarfs the mode loop's overhead, so an
/// order-unrolled copy of every prefetching loop would cost build time for nothing.
#[inline(always)]
pub(crate) fn body_of_order<T, I, D, S, C, const N: usize>(
    simd: T,
    input: &SegmentInput<'_, I>,
    dec: &D,
    sink: &mut S,
    cols: C,
) -> Result<(), KernelError>
where
    T: SimdF64,
    I: HwBits,
    D: Decode<I>,
    S: RowSink,
    C: Columns<T>,
{
    if input.prefetch > 0 {
        return body(simd, input, dec, sink, cols);
    }
    let plan = SinkPlan::new(input, sink, cols.rank())?;
    if plan.all_plain() {
        unrolled::<T, I, D, S, C, N, { route::ALL_PLAIN }>(simd, input, dec, sink, cols, &plan)
    } else if plan.has_window {
        unrolled::<T, I, D, S, C, N, { route::BY_FLAG }>(simd, input, dec, sink, cols, &plan)
    } else {
        // Atomic: every row a compare-and-swap loop, which dwarfs the mode loop's overhead.
        body(simd, input, dec, sink, cols)
    }
}

/// Any rank in pieces with a masked tail, for every order: the runtime-rank fallback.
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
    body(simd, input, dec, sink, DynColumns::new::<T>(input.rank))
}

/// How a segment's nonzeros reach its sink, decided once per segment: through the sink's
/// window (plain stores) for all of them (plain rows: no flag to test), for the unflagged ones
/// (flag-guided), or for none (atomic: every row through [`RowSink::add`]).
#[derive(Clone, Copy)]
struct SinkPlan<I> {
    window: RowWindow,
    /// Whether any nonzero may use the window.
    has_window: bool,
    /// The flag that sends a nonzero to [`RowSink::add`] (zero: none does).
    flag: I,
}

impl<I: HwBits> SinkPlan<I> {
    #[inline(always)]
    fn new<S: RowSink>(
        input: &SegmentInput<'_, I>,
        sink: &mut S,
        rank: usize,
    ) -> Result<Self, KernelError> {
        let window = window_of(sink, rank)?;
        let (plain_unflagged, plain_flagged) = (sink.is_plain(false), sink.is_plain(true));
        debug_assert!(
            plain_unflagged || !plain_flagged,
            "a sink plain only for flagged rows"
        );
        Ok(SinkPlan {
            window,
            has_window: window.rows() > 0 && plain_unflagged,
            flag: if plain_flagged {
                I::ZERO
            } else {
                input.boundary_mask
            },
        })
    }

    /// Every nonzero adds into the window.
    #[inline(always)]
    fn all_plain(&self) -> bool {
        self.has_window && self.flag == I::ZERO
    }
}

/// How a loop sends nonzeros to the sink (the `ROUTE` parameter of [`nonzero_loop`]): a
/// compile-time choice, so each loop tests only what its sinks need.
mod route {
    /// Every nonzero into the window (`SinkPlan::all_plain`: pull staging, the usual strategy).
    pub const ALL_PLAIN: u8 = 0;
    /// Into the window unless flagged; the window exists (flag-guided sinks).
    pub const BY_FLAG: u8 = 1;
    /// Into the window when there is one and the nonzero is not flagged (any sink).
    pub const ANY: u8 = 2;
}

/// The one per-nonzero skeleton of every tier built on [`SimdF64`]: chunks of [`CHUNK`]
/// nonzeros validated at once by [`Bounds`], then per nonzero the row lookup through the
/// locator `L` (any order, or one fixed at compile time), and the column work `C` (a fixed
/// rank unrolled in registers, or any rank in pieces) into the sink's window when the row is
/// plain for this nonzero, else staged and handed to [`RowSink::add`].
///
/// `ROUTE` ([`route`]): whether every nonzero adds into the window (`plan.all_plain()`, pull
/// staging, the usual strategy: the loop has no staged path), or the flag is tested per
/// nonzero (with or without the window's presence, which the caller may know). The staged
/// path in the same loop costs the plain one its registers: with it, the AVX2 rank-16 loop
/// kept the index and value pointers on the stack and ran 11-16% slower (nell-2 and the skewed
/// 3-D stand-in at 1 thread; docs/building.md). The caller checks that `plan` allows the
/// route (`debug_assert`ed here). `PF`: whether the loop may prefetch
/// (then it does when `input.prefetch > 0`); the order-unrolled loops do not, so they carry no
/// prefetch test or registers.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn nonzero_loop<T, I, D, S, L, C, const PF: bool, const ROUTE: u8>(
    simd: T,
    input: &SegmentInput<'_, I>,
    dec: &D,
    sink: &mut S,
    others: &L,
    cols: C,
    plan: &SinkPlan<I>,
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
    let SinkPlan {
        window,
        has_window,
        flag,
    } = *plan;
    debug_assert!(match ROUTE {
        route::ALL_PLAIN => plan.all_plain(),
        route::BY_FLAG => has_window,
        _ => true,
    });
    // Row 0 of the window, so a row's address is one multiply-add from a loop invariant.
    let row0 = window.row_ptr_unchecked(0, rank);
    let bounds = Bounds::new(input, dec, rank, &window);
    let dist = input.prefetch;
    let mut ptrs = [core::ptr::null::<f64>(); MAX_ORDER];
    // Chunks by index, not by `chunks().zip().enumerate()`: in the test profile the adapters
    // are not always inlined into the loop (the disassembly test checks).
    let n = input.idx.len().min(input.vals.len());
    let mut start = 0;
    while start < n {
        let end = n.min(start + CHUNK);
        let (xs, vs) = (&input.idx[start..end], &input.vals[start..end]);
        if !bounds.check(xs) {
            return Err(first_out_of_range(input, dec, xs, &window));
        }
        for k in 0..xs.len() {
            let (x, v) = (xs[k], vs[k]);
            if PF && dist > 0 {
                if let Some(&ahead) = input.idx.get(start + k + dist) {
                    others.prefetch(ahead, rank);
                }
            }
            // Unchecked: `bounds` accepted every nonzero of the chunk.
            others.locate(x, rank, &mut ptrs);
            let target = target_dec.coord(x);
            let (heads, tail) = ptrs.split_at(last);
            let plast = tail[0];
            let boundary = ROUTE != route::ALL_PLAIN && x.intersects(flag);
            let plain = match ROUTE {
                route::ALL_PLAIN => true,
                route::BY_FLAG => !boundary,
                _ => has_window && !boundary,
            };
            if plain {
                // `bounds` accepted the chunk: `target` is a row of the window.
                let out = row0.wrapping_add(target as usize * rank);
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
        start = end;
    }
    Ok(())
}

/// Whether a kernel is also specialized for the order: [`ByOrder`] for the BMI2 decoder on
/// 32- and 64-bit words (its per-mode decode is one instruction, so unrolling the mode loops
/// pays), [`AnyOrder`] for the bit-run decoder and 128-bit words (whose decode cost dwarfs the
/// loop overhead; fewer instantiations).
pub(crate) trait OrderPolicy {
    /// Whether this policy unrolls orders 3 to 5 (so the tiled kernels add their
    /// compile-time tiles too).
    const UNROLLS_ORDER: bool;

    /// Runs the per-nonzero loop with column work `cols`.
    fn run<T, I, D, S, C>(
        simd: T,
        input: &SegmentInput<'_, I>,
        dec: &D,
        sink: &mut S,
        cols: C,
    ) -> Result<(), KernelError>
    where
        T: SimdF64,
        I: HwBits,
        D: Decode<I>,
        S: RowSink,
        C: Columns<T>;

    /// A compile-time rank of `BLOCKS` blocks of `NV` vectors.
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
        Self::run(simd, input, dec, sink, FixedColumns::<NV, BLOCKS>)
    }

    /// Any rank as register tiles with a narrow-vector tail.
    #[inline(always)]
    fn tiled<T, I, D, S>(
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
        Self::run(simd, input, dec, sink, TiledColumns::new::<T>(input.rank))
    }
}

/// The tiled kernels' body for any rank: one compile-time tile of `rank / LANES` vectors
/// ([`VecColumns`], up to 8 vectors) plus the narrow tail, else tiles in a loop
/// ([`TiledColumns`]). The compile-time tiles are instantiated only where they pay and the
/// build can afford nine of them: with the order unrolled (`O = ByOrder`, the BMI2 decoder) for
/// orders 3 and 4, without software prefetch, into a sink plain for every nonzero; every other
/// case runs the looped tiles, which compute the same thing.
#[inline(always)]
pub(crate) fn tiled_kernel<T, I, D, S, O>(
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
    O: OrderPolicy,
{
    let rank = input.rank;
    let nv = rank / T::LANES;
    // The unrolled tiles only for a sink plain for every nonzero (pull staging): the
    // flag-guided and atomic strategies run the looped tiles, one loop copy per order.
    let plan = SinkPlan::new(input, sink, rank)?;
    if O::UNROLLS_ORDER && input.prefetch == 0 && nv <= 8 && plan.all_plain() {
        macro_rules! by_vectors {
            ($n:literal) => {
                match nv {
                    0 => unrolled::<T, I, D, S, _, $n, { route::ALL_PLAIN }>(
                        simd,
                        input,
                        dec,
                        sink,
                        VecColumns::<0>::new::<T>(rank),
                        &plan,
                    ),
                    1 => unrolled::<T, I, D, S, _, $n, { route::ALL_PLAIN }>(
                        simd,
                        input,
                        dec,
                        sink,
                        VecColumns::<1>::new::<T>(rank),
                        &plan,
                    ),
                    2 => unrolled::<T, I, D, S, _, $n, { route::ALL_PLAIN }>(
                        simd,
                        input,
                        dec,
                        sink,
                        VecColumns::<2>::new::<T>(rank),
                        &plan,
                    ),
                    3 => unrolled::<T, I, D, S, _, $n, { route::ALL_PLAIN }>(
                        simd,
                        input,
                        dec,
                        sink,
                        VecColumns::<3>::new::<T>(rank),
                        &plan,
                    ),
                    4 => unrolled::<T, I, D, S, _, $n, { route::ALL_PLAIN }>(
                        simd,
                        input,
                        dec,
                        sink,
                        VecColumns::<4>::new::<T>(rank),
                        &plan,
                    ),
                    5 => unrolled::<T, I, D, S, _, $n, { route::ALL_PLAIN }>(
                        simd,
                        input,
                        dec,
                        sink,
                        VecColumns::<5>::new::<T>(rank),
                        &plan,
                    ),
                    6 => unrolled::<T, I, D, S, _, $n, { route::ALL_PLAIN }>(
                        simd,
                        input,
                        dec,
                        sink,
                        VecColumns::<6>::new::<T>(rank),
                        &plan,
                    ),
                    7 => unrolled::<T, I, D, S, _, $n, { route::ALL_PLAIN }>(
                        simd,
                        input,
                        dec,
                        sink,
                        VecColumns::<7>::new::<T>(rank),
                        &plan,
                    ),
                    _ => unrolled::<T, I, D, S, _, $n, { route::ALL_PLAIN }>(
                        simd,
                        input,
                        dec,
                        sink,
                        VecColumns::<8>::new::<T>(rank),
                        &plan,
                    ),
                }
            };
        }
        match input.factors.len() {
            3 => return by_vectors!(2),
            4 => return by_vectors!(3),
            _ => {}
        }
    }
    O::tiled(simd, input, dec, sink)
}

/// The loop for a fixed number `N >= 1` of other modes, without software prefetch;
/// `ROUTE` as for [`nonzero_loop`].
#[inline(always)]
fn unrolled<T, I, D, S, C, const N: usize, const ROUTE: u8>(
    simd: T,
    input: &SegmentInput<'_, I>,
    dec: &D,
    sink: &mut S,
    cols: C,
    plan: &SinkPlan<I>,
) -> Result<(), KernelError>
where
    T: SimdF64,
    I: HwBits,
    D: Decode<I>,
    S: RowSink,
    C: Columns<T>,
{
    debug_assert!(N >= 1 && input.prefetch == 0);
    debug_assert_eq!(cols.rank(), input.rank, "run_segment checks the rank");
    let others = Others::new(input, dec, cols.rank());
    let modes = FixedModes::<_, N>::new(&others);
    nonzero_loop::<T, I, D, S, _, _, false, ROUTE>(simd, input, dec, sink, &modes, cols, plan)
}

/// Orders 3, 4 and 5 get their own unrolled loops; other orders the runtime-order loops.
pub(crate) struct ByOrder;
/// One body for every order.
pub(crate) struct AnyOrder;

impl OrderPolicy for ByOrder {
    const UNROLLS_ORDER: bool = true;

    #[inline(always)]
    fn run<T, I, D, S, C>(
        simd: T,
        input: &SegmentInput<'_, I>,
        dec: &D,
        sink: &mut S,
        cols: C,
    ) -> Result<(), KernelError>
    where
        T: SimdF64,
        I: HwBits,
        D: Decode<I>,
        S: RowSink,
        C: Columns<T>,
    {
        match input.factors.len() {
            3 => body_of_order::<T, I, D, S, C, 2>(simd, input, dec, sink, cols),
            4 => body_of_order::<T, I, D, S, C, 3>(simd, input, dec, sink, cols),
            5 => body_of_order::<T, I, D, S, C, 4>(simd, input, dec, sink, cols),
            _ => body(simd, input, dec, sink, cols),
        }
    }
}

impl OrderPolicy for AnyOrder {
    const UNROLLS_ORDER: bool = false;

    #[inline(always)]
    fn run<T, I, D, S, C>(
        simd: T,
        input: &SegmentInput<'_, I>,
        dec: &D,
        sink: &mut S,
        cols: C,
    ) -> Result<(), KernelError>
    where
        T: SimdF64,
        I: HwBits,
        D: Decode<I>,
        S: RowSink,
        C: Columns<T>,
    {
        body(simd, input, dec, sink, cols)
    }
}

/// Defines the kernels of one explicit ISA from its token type, its target features and the
/// names of its entry points (one per rank variant, named like the kernel: `avx2_r16`,
/// `avx2_tiled`, `avx2_rdyn`): each
/// a `#[target_feature]`, `#[inline(never)]` wrapper (one symbol per kernel, which the
/// disassembly test finds by name) around the `#[inline(always)]` generic bodies; and the
/// module's `run`, which picks the entry point for a [`RankSpec`](super::RankSpec).
macro_rules! isa_kernels {
    (
        token: $tok:ty,
        features: $features:literal,
        fixed: { $($name:ident => $rank:literal = <$nv:literal, $blocks:literal>,)* }
        tiled: $tiled_name:ident,
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

        /// Any rank, as register tiles with a narrow-vector tail.
        #[target_feature(enable = $features)]
        #[inline(never)]
        pub(crate) fn $tiled_name<I, D, S, O>(
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
            $crate::mttkrp::vector::tiled_kernel::<$tok, I, D, S, O>(tok, input, dec, sink)
        }

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
                    RankSpec::Tiled => $tiled_name::<I, D, S, O>(tok, input, dec, sink),
                    RankSpec::Fixed(_) | RankSpec::Dynamic => $dyn_name(tok, input, dec, sink),
                }
            }
        }
    };
}
pub(crate) use isa_kernels;
