//! Where a nonzero's contribution row goes: the three conflict-resolution targets of the
//! parallel MTTKRP (SPEC section 5).
//!
//! - [`PlainRows`]: rows owned by one segment (a pull-based staging buffer, or the output itself
//!   when no other segment touches the range): plain adds.
//! - [`AtomicRows`]: the shared output, every add atomic (compare-and-swap on the f64 bits).
//! - [`FlaggedRows`]: the shared output; atomic only for boundary nonzeros, whose output row is
//!   touched by more than one segment, plain adds for internal ones.
//!
//! The compiled MTTKRP kernels take [`AnyRows`], one of the three chosen at run time (a
//! [`SegmentSink`] turns each into it), so each kernel is built once per index width rather
//! than once per sink type.

use core::marker::PhantomData;
use core::sync::atomic::{AtomicU64, Ordering};

/// A destination for contribution rows.
pub trait RowSink {
    /// Adds `contrib` to columns `col0 .. col0 + contrib.len()` of output row `row`.
    /// `boundary` is the nonzero's helper flag (only [`FlaggedRows`] reads it).
    fn add(&mut self, row: u64, col0: usize, contrib: &[f64], boundary: bool);

    /// The row as a plain mutable slice when this update needs no atomics (SIMD kernels add
    /// into it directly); `None` means the caller must use [`RowSink::add`].
    fn plain_row(&mut self, row: u64, boundary: bool) -> Option<&mut [f64]>;

    /// The rows a kernel may update with plain loads and stores, for the nonzeros that
    /// [`RowSink::is_plain`] accepts, for as long as it holds the sink mutably. The explicit SIMD
    /// kernels take it once per segment and compute row addresses themselves (the rank is a
    /// compile-time constant there). Default: no rows.
    #[inline]
    fn window(&mut self) -> RowWindow {
        RowWindow::EMPTY
    }

    /// Whether a nonzero with helper flag `boundary` may be updated through
    /// [`RowSink::window`] (else through [`RowSink::add`]). Default: never.
    #[inline(always)]
    fn is_plain(&self, boundary: bool) -> bool {
        let _ = boundary;
        false
    }
}

/// Rows `first .. first + rows` of a row-major matrix of `rank` columns, writable with plain
/// stores by the kernel that holds the sink which returned it (see [`RowSink::window`]).
#[derive(Clone, Copy, Debug)]
pub struct RowWindow {
    ptr: *mut f64,
    first: u64,
    rows: u64,
    rank: usize,
}

impl RowWindow {
    /// No rows.
    pub const EMPTY: RowWindow = RowWindow {
        ptr: core::ptr::null_mut(),
        first: 0,
        rows: 0,
        rank: 0,
    };

    /// # Safety
    /// `ptr` must be valid for reads and writes of `rows * rank` doubles (row `first` first)
    /// while the sink that returns this window stays mutably borrowed, including across that
    /// sink's [`RowSink::add`] calls; and no other thread may access a row that a nonzero
    /// accepted by the sink's [`RowSink::is_plain`] targets during that time.
    #[inline]
    pub unsafe fn new(ptr: *mut f64, first: u64, rows: u64, rank: usize) -> Self {
        RowWindow {
            ptr,
            first,
            rows,
            rank,
        }
    }

    #[inline]
    pub fn rank(&self) -> usize {
        self.rank
    }

    #[inline]
    pub fn rows(&self) -> u64 {
        self.rows
    }

    #[inline]
    pub fn first(&self) -> u64 {
        self.first
    }

    /// The address row `row` would have (`rank` columns), computed with wrapping arithmetic:
    /// only meaningful, and only dereferenceable, when the window holds `row`. The kernels use
    /// it after checking a whole chunk of rows at once.
    #[inline(always)]
    pub fn row_ptr_unchecked(&self, row: u64, rank: usize) -> *mut f64 {
        self.ptr
            .wrapping_sub(self.first as usize * rank)
            .wrapping_add(row as usize * rank)
    }

    /// The start of row `row`, when the window holds it; `rank` must be the window's rank.
    #[inline(always)]
    pub fn row_ptr(&self, row: u64, rank: usize) -> Option<*mut f64> {
        debug_assert_eq!(rank, self.rank);
        let i = row.wrapping_sub(self.first);
        (i < self.rows).then(|| self.ptr.wrapping_add(i as usize * rank))
    }
}

/// Rows `first_row ..` of a row-major matrix of `rank` columns, owned exclusively.
///
/// The rows are held as one raw pointer taken once from the unique borrow, and every access
/// (`add`, `plain_row`, the kernels' [`RowWindow`]) derives from that same pointer: no `&mut`
/// to the whole buffer is created while a window may be live, so under Stacked and Tree
/// Borrows a window stays valid across the sink's own `add` calls (a reborrow of the slice
/// would invalidate it).
pub struct PlainRows<'a> {
    ptr: *mut f64,
    len: usize,
    first_row: u64,
    rank: usize,
    /// Whole rows in the buffer.
    rows: u64,
    _data: PhantomData<&'a mut [f64]>,
}

impl<'a> PlainRows<'a> {
    pub fn new(data: &'a mut [f64], first_row: u64, rank: usize) -> Self {
        let rows = data.len().checked_div(rank).unwrap_or(0) as u64;
        PlainRows {
            ptr: data.as_mut_ptr(),
            len: data.len(),
            first_row,
            rank,
            rows,
            _data: PhantomData,
        }
    }

    /// The same rows for a shorter borrow (what [`SegmentSink::as_any`] hands the kernels).
    #[inline]
    pub fn reborrow(&mut self) -> PlainRows<'_> {
        PlainRows {
            ptr: self.ptr,
            len: self.len,
            first_row: self.first_row,
            rank: self.rank,
            rows: self.rows,
            _data: PhantomData,
        }
    }

    /// Panics like slice indexing when `row` is not one of these rows.
    #[cold]
    #[inline(never)]
    fn row_out_of_range(&self, row: u64) -> ! {
        panic!(
            "row {row} is outside rows {}..{}",
            self.first_row,
            self.first_row + self.rows
        )
    }

    /// Elements `start .. start + n`, panicking like slice indexing when out of bounds.
    #[inline(always)]
    fn span(&mut self, start: usize, n: usize) -> &mut [f64] {
        match start.checked_add(n) {
            Some(end) if end <= self.len => {}
            _ => span_out_of_range(start, n, self.len),
        }
        // SAFETY: `ptr` is valid for `len` elements, borrowed uniquely for `'a`; `start + n <=
        // len`; the slice lives no longer than `&mut self`, so no other access overlaps it.
        unsafe { core::slice::from_raw_parts_mut(self.ptr.add(start), n) }
    }
}

#[cold]
#[inline(never)]
fn span_out_of_range(start: usize, n: usize, len: usize) -> ! {
    panic!("elements {start}..{start}+{n} are outside a buffer of {len}")
}

// SAFETY: `PlainRows` is a unique borrow of `[f64]` held as a raw pointer: like `&mut [f64]`
// it may move to another thread, and `&PlainRows` reaches no element (every access takes
// `&mut self`).
unsafe impl Send for PlainRows<'_> {}
// SAFETY: as above: a shared `&PlainRows` gives no access to the elements.
unsafe impl Sync for PlainRows<'_> {}

impl RowSink for PlainRows<'_> {
    #[inline(always)]
    fn add(&mut self, row: u64, col0: usize, contrib: &[f64], _boundary: bool) {
        let Some(i) = row.checked_sub(self.first_row) else {
            self.row_out_of_range(row)
        };
        let start = (i as usize).saturating_mul(self.rank).saturating_add(col0);
        let dst = self.span(start, contrib.len());
        // Indexed, not zipped: the wide kernels inline this into their loop, and the zip
        // adapter is not always inlined there (the disassembly test checks).
        for k in 0..dst.len() {
            dst[k] += contrib[k];
        }
    }

    #[inline(always)]
    fn plain_row(&mut self, row: u64, _boundary: bool) -> Option<&mut [f64]> {
        // One comparison instead of slice indexing's two: the kernels call this per nonzero.
        let i = row.wrapping_sub(self.first_row);
        if i >= self.rows {
            self.row_out_of_range(row);
        }
        let start = i as usize * self.rank;
        // SAFETY: `i < rows = len / rank`, so `start + rank <= len`; `ptr` is valid for `len`
        // elements, borrowed uniquely, and the slice lives no longer than `&mut self`.
        Some(unsafe { core::slice::from_raw_parts_mut(self.ptr.add(start), self.rank) })
    }

    #[inline]
    fn window(&mut self) -> RowWindow {
        // SAFETY: `ptr` is valid for `rows * rank <= len` elements, borrowed uniquely for the
        // sink's lifetime; `add` and `plain_row` derive their slices from this same pointer
        // (never from a fresh borrow of the whole buffer), so the window stays usable across
        // them, and no other thread can reach the buffer.
        unsafe { RowWindow::new(self.ptr, self.first_row, self.rows, self.rank) }
    }

    #[inline(always)]
    fn is_plain(&self, _boundary: bool) -> bool {
        true
    }
}

/// Atomically adds `x` to the f64 stored in `cell`.
#[inline(always)]
pub fn atomic_add_f64(cell: &AtomicU64, x: f64) {
    let mut old = cell.load(Ordering::Relaxed);
    loop {
        let new = (f64::from_bits(old) + x).to_bits();
        match cell.compare_exchange_weak(old, new, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return,
            Err(seen) => old = seen,
        }
    }
}

/// Views a uniquely borrowed f64 slice as atomics, so several threads can add into it.
pub fn as_atomic(data: &mut [f64]) -> &[AtomicU64] {
    // SAFETY: AtomicU64 has the size and alignment of u64 (and so of f64) on the targets we
    // build for (checked below at compile time); the unique borrow guarantees that during the
    // returned lifetime every access goes through the atomics.
    const _: () = assert!(
        core::mem::align_of::<AtomicU64>() == core::mem::align_of::<f64>()
            && core::mem::size_of::<AtomicU64>() == core::mem::size_of::<f64>()
    );
    unsafe { core::slice::from_raw_parts(data.as_mut_ptr() as *const AtomicU64, data.len()) }
}

/// The whole output matrix, shared by all segments, every update atomic.
#[derive(Clone, Copy)]
pub struct AtomicRows<'a> {
    data: &'a [AtomicU64],
    rank: usize,
}

impl<'a> AtomicRows<'a> {
    pub fn new(data: &'a [AtomicU64], rank: usize) -> Self {
        AtomicRows { data, rank }
    }
}

impl RowSink for AtomicRows<'_> {
    #[inline(always)]
    fn add(&mut self, row: u64, col0: usize, contrib: &[f64], _boundary: bool) {
        let start = row as usize * self.rank + col0;
        let cells = &self.data[start..start + contrib.len()];
        // Indexed: see `PlainRows::add`.
        for k in 0..cells.len() {
            atomic_add_f64(&cells[k], contrib[k]);
        }
    }

    #[inline(always)]
    fn plain_row(&mut self, _row: u64, _boundary: bool) -> Option<&mut [f64]> {
        None
    }
}

/// The shared output where each nonzero's helper flag says whether its row is also touched by
/// another segment (boundary: atomic) or by this segment alone (internal: plain adds).
pub struct FlaggedRows<'a> {
    data: &'a [AtomicU64],
    rank: usize,
}

impl<'a> FlaggedRows<'a> {
    /// A segment's view of the shared output.
    ///
    /// # Safety
    /// Each segment running at the same time must get its own `FlaggedRows`, and the flags of
    /// the nonzeros it is run on must be exact: a nonzero without its boundary flag has an output
    /// row that no other concurrently running segment updates. Unflagged rows are written with
    /// plain (non-atomic) stores, so a wrong flag would be a data race.
    pub unsafe fn new(data: &'a [AtomicU64], rank: usize) -> Self {
        FlaggedRows { data, rank }
    }

    /// The same view for a shorter borrow: `&mut self` keeps it the segment's only one.
    #[inline]
    pub fn reborrow(&mut self) -> FlaggedRows<'_> {
        FlaggedRows {
            data: self.data,
            rank: self.rank,
        }
    }
}

impl RowSink for FlaggedRows<'_> {
    #[inline(always)]
    fn add(&mut self, row: u64, col0: usize, contrib: &[f64], boundary: bool) {
        if boundary {
            AtomicRows::new(self.data, self.rank).add(row, col0, contrib, true);
        } else if let Some(dst) = self.plain_row(row, false) {
            let dst = &mut dst[col0..col0 + contrib.len()];
            // Indexed: see `PlainRows::add`.
            for k in 0..dst.len() {
                dst[k] += contrib[k];
            }
        }
    }

    #[inline(always)]
    fn plain_row(&mut self, row: u64, boundary: bool) -> Option<&mut [f64]> {
        if boundary {
            return None;
        }
        let start = row as usize * self.rank;
        let cells = &self.data[start..start + self.rank];
        // SAFETY: an internal (unflagged) row is updated only by the segment that owns this
        // sink, and a segment runs on one thread, so no other access to these cells can
        // happen concurrently; `&mut self` keeps the returned slice unique within the segment.
        // AtomicU64 permits non-atomic access through `as_ptr` when there is no data race.
        Some(unsafe { core::slice::from_raw_parts_mut(cells.as_ptr() as *mut f64, self.rank) })
    }

    #[inline]
    fn window(&mut self) -> RowWindow {
        let rows = self.data.len().checked_div(self.rank).unwrap_or(0) as u64;
        // SAFETY: the cells live as long as the sink's borrow; internal (unflagged) rows are
        // updated only by the segment that owns this sink (the contract of `new`), and
        // `is_plain` admits only those; boundary rows keep going through atomics in `add`.
        // The pointer comes from a shared borrow of atomics (interior mutability): a raw
        // pointer with shared read-write permission, which neither `add`'s atomic accesses nor
        // `plain_row`'s slices (derived from the same shared borrow) invalidate.
        unsafe { RowWindow::new(self.data.as_ptr() as *mut f64, 0, rows, self.rank) }
    }

    #[inline(always)]
    fn is_plain(&self, boundary: bool) -> bool {
        !boundary
    }
}

/// One of the three sinks, chosen at run time: the sink type of the compiled kernels.
///
/// The per-nonzero loop reads the window once per segment and the helper flag per nonzero
/// (see [`RowSink::is_plain`]); only the staged adds (atomic or boundary rows) match on the
/// variant, next to a compare-and-swap that costs far more.
pub enum AnyRows<'a> {
    Plain(PlainRows<'a>),
    Atomic(AtomicRows<'a>),
    Flagged(FlaggedRows<'a>),
}

impl RowSink for AnyRows<'_> {
    #[inline(always)]
    fn add(&mut self, row: u64, col0: usize, contrib: &[f64], boundary: bool) {
        match self {
            AnyRows::Plain(s) => s.add(row, col0, contrib, boundary),
            AnyRows::Atomic(s) => s.add(row, col0, contrib, boundary),
            AnyRows::Flagged(s) => s.add(row, col0, contrib, boundary),
        }
    }

    #[inline(always)]
    fn plain_row(&mut self, row: u64, boundary: bool) -> Option<&mut [f64]> {
        match self {
            AnyRows::Plain(s) => s.plain_row(row, boundary),
            AnyRows::Atomic(s) => s.plain_row(row, boundary),
            AnyRows::Flagged(s) => s.plain_row(row, boundary),
        }
    }

    #[inline]
    fn window(&mut self) -> RowWindow {
        match self {
            AnyRows::Plain(s) => s.window(),
            AnyRows::Atomic(s) => s.window(),
            AnyRows::Flagged(s) => s.window(),
        }
    }

    #[inline(always)]
    fn is_plain(&self, boundary: bool) -> bool {
        match self {
            AnyRows::Plain(s) => s.is_plain(boundary),
            AnyRows::Atomic(s) => s.is_plain(boundary),
            AnyRows::Flagged(s) => s.is_plain(boundary),
        }
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::PlainRows<'_> {}
    impl Sealed for super::AtomicRows<'_> {}
    impl Sealed for super::FlaggedRows<'_> {}
    impl Sealed for super::AnyRows<'_> {}
}

/// The sinks [`run_segment`](crate::run_segment) accepts: each lends itself as an [`AnyRows`]
/// for the call.
pub trait SegmentSink: RowSink + sealed::Sealed {
    /// This sink as an [`AnyRows`], borrowed for the call.
    fn as_any(&mut self) -> AnyRows<'_>;
}

impl SegmentSink for PlainRows<'_> {
    #[inline]
    fn as_any(&mut self) -> AnyRows<'_> {
        AnyRows::Plain(self.reborrow())
    }
}

impl SegmentSink for AtomicRows<'_> {
    #[inline]
    fn as_any(&mut self) -> AnyRows<'_> {
        AnyRows::Atomic(*self)
    }
}

impl SegmentSink for FlaggedRows<'_> {
    #[inline]
    fn as_any(&mut self) -> AnyRows<'_> {
        AnyRows::Flagged(self.reborrow())
    }
}

impl SegmentSink for AnyRows<'_> {
    #[inline]
    fn as_any(&mut self) -> AnyRows<'_> {
        match self {
            AnyRows::Plain(s) => AnyRows::Plain(s.reborrow()),
            AnyRows::Atomic(s) => AnyRows::Atomic(*s),
            AnyRows::Flagged(s) => AnyRows::Flagged(s.reborrow()),
        }
    }
}
