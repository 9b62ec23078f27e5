//! Row kernels of the CP-ALS update: the per-block work of the two parallel passes over the
//! rows of a factor, and of the Gram matrix.
//!
//! - [`RowKernel::solve_block`]: `u = y W` for each row, with `W` the inverse of the
//!   (symmetric) system `V` from its Cholesky factor, or its pseudo-inverse; then `g += u u^T`
//!   and the column max-abs, in sub-blocks of [`SUB_ROWS`] rows so the rows are still in L1;
//! - [`RowKernel::gram_block`]: `g += u u^T`;
//! - [`RowKernel::scale_block`]: `u *= scale` columnwise, optionally `acc += u .* y`.
//!
//! Why `u = y W` rather than two triangular solves per row: a row's substitution is a serial
//! chain of dependent steps (latency-bound), and solving four rows at once transposed needs
//! more vector registers than AVX2 has at R = 16. Measured on Zen 3 while choosing (R = 16,
//! AVX2+FMA, L1-resident rows): the 4-row transposed substitution took about 70 ns per row, the
//! dense product about 13. Forming `W = V^-1 = L^-T L^-1` once per mode costs `O(R^3)`; its
//! forward error is of the same order, `cond(V) * eps`, as the substitution's (and systems with
//! `cond(V)` beyond about 1e11 take the pseudo-inverse path anyway).
//!
//! Each body is written once, generic over the multiply-add (`Plain` or `Fused`) and over
//! the rank: a const `R` for the specialized ranks (fully unrolled, two rows per step share the
//! loads of `W`) and a runtime rank otherwise. The ISA entry points are thin
//! `#[target_feature]` wrappers; a [`RowKernel`] of the AVX2 ISA holds the
//! [`Avx2Fma`](crate::isa::Avx2Fma) token, which proves the CPU has the features.
//! Kernels are named `{isa}_{rank}` (`avx2fma_r16`, `portable_rdyn`), like the MTTKRP kernels.

/// Calls `$fixed::<M, R>` or `$dyn::<M>` through the entry point of the kernel's ISA.
macro_rules! dispatch {
    ($k:expr, $fixed:ident, $dyn:ident, ($($arg:expr),*)) => {{
        let k = $k;
        match k.target {
            Target::Portable => match (k.specialized, k.rank) {
                (true, 8) => portable::$fixed::<8>($($arg),*),
                (true, 16) => portable::$fixed::<16>($($arg),*),
                (true, 32) => portable::$fixed::<32>($($arg),*),
                (true, 64) => portable::$fixed::<64>($($arg),*),
                (_, r) => portable::$dyn(r, $($arg),*),
            },
            #[cfg(target_arch = "x86_64")]
            Target::Avx2Fma(_proof) => {
                // SAFETY: `_proof`, an `Avx2Fma` token, can only be built on a CPU with AVX2
                // and FMA, the features these entry points enable.
                unsafe {
                    match (k.specialized, k.rank) {
                        (true, 8) => avx2fma::$fixed::<8>($($arg),*),
                        (true, 16) => avx2fma::$fixed::<16>($($arg),*),
                        (true, 32) => avx2fma::$fixed::<32>($($arg),*),
                        (true, 64) => avx2fma::$fixed::<64>($($arg),*),
                        (_, r) => avx2fma::$dyn(r, $($arg),*),
                    }
                }
            }
            #[cfg(not(target_arch = "x86_64"))]
            Target::Avx2Fma(_) => unreachable!("the AVX2 token exists on x86-64 only"),
        }
    }};
}

use crate::isa::Avx2Fma;
/// Ranks with a fully unrolled variant: the MTTKRP kernels' set.
pub use crate::mttkrp::SPECIALIZED_RANKS;

/// Rows per sub-block of the solve: solved, then added to the Gram while in L1.
pub const SUB_ROWS: usize = 32;

/// The instruction set of a row kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowIsa {
    /// Portable Rust: separate multiply and add, the baseline target.
    Portable,
    /// AVX2 with fused multiply-add (x86-64).
    Avx2Fma,
}

impl RowIsa {
    pub fn name(self) -> &'static str {
        match self {
            RowIsa::Portable => "portable",
            RowIsa::Avx2Fma => "avx2fma",
        }
    }
    pub fn available(self) -> bool {
        match self {
            RowIsa::Portable => true,
            RowIsa::Avx2Fma => Avx2Fma::try_new().is_some(),
        }
    }
}

/// The ISA of a kernel with its proof: the AVX2 variant holds the token.
#[derive(Clone, Copy, Debug)]
enum Target {
    Portable,
    Avx2Fma(Avx2Fma),
}

impl Target {
    fn isa(self) -> RowIsa {
        match self {
            Target::Portable => RowIsa::Portable,
            Target::Avx2Fma(_) => RowIsa::Avx2Fma,
        }
    }
}

/// One row kernel: an ISA and a rank (specialized when it is one of [`SPECIALIZED_RANKS`]).
#[derive(Clone, Copy, Debug)]
pub struct RowKernel {
    target: Target,
    rank: usize,
    specialized: bool,
}

impl PartialEq for RowKernel {
    fn eq(&self, other: &Self) -> bool {
        (self.isa(), self.rank, self.specialized) == (other.isa(), other.rank, other.specialized)
    }
}

impl Eq for RowKernel {}

impl RowKernel {
    /// The best kernel this CPU runs for `rank`.
    pub fn best(rank: usize) -> Self {
        let isa = if RowIsa::Avx2Fma.available() {
            RowIsa::Avx2Fma
        } else {
            RowIsa::Portable
        };
        RowKernel::new(isa, rank, true).expect("the chosen ISA is available")
    }

    /// A kernel by parts; `specialize: false` forces the runtime-rank body. `None` when the ISA
    /// is not available here.
    pub fn new(isa: RowIsa, rank: usize, specialize: bool) -> Option<Self> {
        let target = match isa {
            RowIsa::Portable => Target::Portable,
            RowIsa::Avx2Fma => Target::Avx2Fma(Avx2Fma::try_new()?),
        };
        Some(RowKernel {
            target,
            rank,
            specialized: specialize && SPECIALIZED_RANKS.contains(&rank),
        })
    }

    /// A kernel named on the command line for `rank`: `auto` (the best, `None`), an ISA
    /// (`portable`, `avx2fma`: its best variant) or a full name (`portable_r16`,
    /// `avx2fma_rdyn`).
    pub fn parse(s: &str, rank: usize) -> Result<Option<Self>, String> {
        if s == "auto" {
            return Ok(None);
        }
        let (isa_name, variant) = match s.rsplit_once('_') {
            Some((i, v)) if v.starts_with('r') => (i, Some(v)),
            _ => (s, None),
        };
        let isa = match isa_name {
            "portable" => RowIsa::Portable,
            "avx2fma" => RowIsa::Avx2Fma,
            _ => {
                return Err(format!(
                    "unknown row kernel `{s}` (auto, portable, avx2fma, or {{isa}}_r{{R}} / \
                     {{isa}}_rdyn)"
                ))
            }
        };
        let specialize = match variant {
            None => true,
            Some("rdyn") => false,
            Some(v) if v == format!("r{rank}") && SPECIALIZED_RANKS.contains(&rank) => true,
            Some(v) => {
                return Err(format!(
                    "row kernel `{s}` does not exist for rank {rank} (specialized ranks: \
                     {SPECIALIZED_RANKS:?}; `{isa_name}_rdyn` runs any rank, not {v})"
                ))
            }
        };
        RowKernel::new(isa, rank, specialize)
            .map(Some)
            .ok_or_else(|| {
                format!(
                    "row kernel `{s}` needs {}, which this CPU lacks",
                    isa.name()
                )
            })
    }

    pub fn isa(&self) -> RowIsa {
        self.target.isa()
    }
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// `{isa}_r{R}` or `{isa}_rdyn`.
    pub fn name(&self) -> String {
        if self.specialized {
            format!("{}_r{}", self.isa().name(), self.rank)
        } else {
            format!("{}_rdyn", self.isa().name())
        }
    }

    /// For each row of `y` (row-major, `R` columns): `u = y W` (`W` row-major R x R); then
    /// `g += u u^T` over the block's rows and, with `colmax`,
    /// `colmax[j] = max(colmax[j], |u_j|)`.
    pub fn solve_block(
        &self,
        w: &[f64],
        y: &[f64],
        u: &mut [f64],
        g: &mut [f64],
        colmax: Option<&mut [f64]>,
    ) {
        let r = self.rank;
        assert!(
            y.len() == u.len() && y.len().is_multiple_of(r) && g.len() >= r * r && w.len() >= r * r
        );
        assert!(colmax.as_ref().is_none_or(|c| c.len() == r));
        dispatch!(self, solve_fixed, solve_dyn, (w, y, u, g, colmax))
    }

    /// `g += u u^T` over the rows of `u`.
    pub fn gram_block(&self, u: &[f64], g: &mut [f64]) {
        let r = self.rank;
        assert!(u.len().is_multiple_of(r) && g.len() >= r * r);
        dispatch!(self, gram_fixed, gram_dyn, (u, g))
    }

    /// `u[:, j] *= scale[j]`; with `acc`, `acc[j] += sum_i u[i, j] * y[i, j]` (after scaling).
    pub fn scale_block(&self, scale: &[f64], u: &mut [f64], y: &[f64], acc: Option<&mut [f64]>) {
        let r = self.rank;
        assert!(scale.len() == r && u.len().is_multiple_of(r));
        assert!(
            acc.is_none() || (y.len() == u.len() && acc.as_ref().is_some_and(|a| a.len() == r))
        );
        dispatch!(self, scale_fixed, scale_dyn, (scale, u, y, acc))
    }
}

/// The multiply-add of a body: `a * b + c`.
trait MulAdd {
    fn mul_add(a: f64, b: f64, c: f64) -> f64;
}

/// Two roundings; what the baseline target computes fast.
struct Plain;
impl MulAdd for Plain {
    #[inline(always)]
    fn mul_add(a: f64, b: f64, c: f64) -> f64 {
        a * b + c
    }
}

/// One rounding; only used inside `fma` entry points, where it is one instruction.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
struct Fused;
impl MulAdd for Fused {
    #[inline(always)]
    fn mul_add(a: f64, b: f64, c: f64) -> f64 {
        a.mul_add(b, c)
    }
}

/// Generates the entry points of one ISA for every body.
macro_rules! entry_points {
    ($(#[$attr:meta])* $m:ty) => {
        $(#[$attr])*
        pub(super) fn solve_fixed<const R: usize>(
            w: &[f64],
            y: &[f64],
            u: &mut [f64],
            g: &mut [f64],
            colmax: Option<&mut [f64]>,
        ) {
            super::solve_fixed_body::<$m, R>(w, y, u, g, colmax)
        }
        $(#[$attr])*
        pub(super) fn solve_dyn(
            r: usize,
            w: &[f64],
            y: &[f64],
            u: &mut [f64],
            g: &mut [f64],
            colmax: Option<&mut [f64]>,
        ) {
            super::solve_dyn_body::<$m>(r, w, y, u, g, colmax)
        }
        $(#[$attr])*
        pub(super) fn gram_fixed<const R: usize>(u: &[f64], g: &mut [f64]) {
            super::gram_fixed_body::<$m, R>(u, g)
        }
        $(#[$attr])*
        pub(super) fn gram_dyn(r: usize, u: &[f64], g: &mut [f64]) {
            super::gram_dyn_body::<$m>(r, u, g)
        }
        $(#[$attr])*
        pub(super) fn scale_fixed<const R: usize>(
            scale: &[f64],
            u: &mut [f64],
            y: &[f64],
            acc: Option<&mut [f64]>,
        ) {
            super::scale_fixed_body::<$m, R>(scale, u, y, acc)
        }
        $(#[$attr])*
        pub(super) fn scale_dyn(
            r: usize,
            scale: &[f64],
            u: &mut [f64],
            y: &[f64],
            acc: Option<&mut [f64]>,
        ) {
            super::scale_dyn_body::<$m>(r, scale, u, y, acc)
        }
    };
}

mod portable {
    use super::Plain;
    entry_points!(Plain);
}

// Thin entry points: `avx2,fma` lets the generic bodies below vectorize with 256-bit registers
// and fuse their multiply-adds; the bodies stay `#[inline(always)]` and ISA-agnostic.
#[cfg(target_arch = "x86_64")]
mod avx2fma {
    use super::Fused;
    entry_points!(
        #[target_feature(enable = "avx2,fma")]
        Fused
    );
}

#[inline(always)]
fn row<const R: usize>(s: &[f64], i: usize) -> &[f64; R] {
    s[i * R..(i + 1) * R].try_into().expect("a row of R values")
}

#[inline(always)]
fn row_mut<const R: usize>(s: &mut [f64], i: usize) -> &mut [f64; R] {
    (&mut s[i * R..(i + 1) * R])
        .try_into()
        .expect("a row of R values")
}

/// Rows of `g` in one register tile of the Gram.
const TILE_I: usize = 4;
/// Columns of `g` in one register tile (two AVX2 vectors).
const TILE_J: usize = 8;

/// Is entry (i, j) of the Gram computed by a tile? Tiles cover the upper triangle in
/// `TILE_I x TILE_J` blocks; the others are mirrored.
#[inline(always)]
fn tiled(i: usize, j: usize) -> bool {
    j / TILE_J * TILE_J + TILE_J > i / TILE_I * TILE_I
}

/// `g += sum over rows of u u^T` (R a multiple of [`TILE_J`]): each `TILE_I x TILE_J` tile of
/// the upper triangle accumulates in registers over all rows (one vector load and
/// [`TILE_I`] broadcasts per row for `TILE_I * TILE_J` multiply-adds), then lands in `g`
/// and, where the mirror is not a tile of its own, in its mirror. Both triangles get the same
/// sums in the same order, so `g` stays exactly symmetric.
#[inline(always)]
fn gram_fixed_body<M: MulAdd, const R: usize>(u: &[f64], g: &mut [f64]) {
    const { assert!(R.is_multiple_of(TILE_J) && TILE_J.is_multiple_of(TILE_I)) };
    let g = &mut g[..R * R];
    for ib in (0..R).step_by(TILE_I) {
        for jb in (0..R).step_by(TILE_J) {
            if !tiled(ib, jb) {
                continue;
            }
            let mut acc = [[0.0f64; TILE_J]; TILE_I];
            for ur in u.chunks_exact(R) {
                let ur = row::<R>(ur, 0);
                for (a, i) in acc.iter_mut().zip(ib..) {
                    let s = ur[i];
                    for (x, j) in a.iter_mut().zip(jb..) {
                        *x = M::mul_add(s, ur[j], *x);
                    }
                }
            }
            for (a, i) in acc.iter().zip(ib..) {
                for (&x, j) in a.iter().zip(jb..) {
                    g[i * R + j] += x;
                    if !tiled(j, i) {
                        g[j * R + i] += x;
                    }
                }
            }
        }
    }
}

/// `u = y W` for one row.
#[inline(always)]
fn matvec_fixed<M: MulAdd, const R: usize>(w: &[f64], y: &[f64; R]) -> [f64; R] {
    let mut a = [0.0f64; R];
    for (k, &yk) in y.iter().enumerate() {
        let wk = row::<R>(w, k);
        for j in 0..R {
            a[j] = M::mul_add(yk, wk[j], a[j]);
        }
    }
    a
}

#[inline(always)]
fn solve_fixed_body<M: MulAdd, const R: usize>(
    w: &[f64],
    y: &[f64],
    u: &mut [f64],
    g: &mut [f64],
    mut colmax: Option<&mut [f64]>,
) {
    let w = &w[..R * R];
    for (ys, us) in y.chunks(SUB_ROWS * R).zip(u.chunks_mut(SUB_ROWS * R)) {
        // Two rows per step share each load of a W row.
        let mut pairs_y = ys.chunks_exact(2 * R);
        let mut pairs_u = us.chunks_exact_mut(2 * R);
        for (y2, u2) in (&mut pairs_y).zip(&mut pairs_u) {
            let y0 = row::<R>(y2, 0);
            let y1 = row::<R>(y2, 1);
            let mut a0 = [0.0f64; R];
            let mut a1 = [0.0f64; R];
            for k in 0..R {
                let wk = row::<R>(w, k);
                for j in 0..R {
                    a0[j] = M::mul_add(y0[k], wk[j], a0[j]);
                    a1[j] = M::mul_add(y1[k], wk[j], a1[j]);
                }
            }
            *row_mut::<R>(u2, 0) = a0;
            *row_mut::<R>(u2, 1) = a1;
        }
        for (y1, u1) in pairs_y
            .remainder()
            .chunks_exact(R)
            .zip(pairs_u.into_remainder().chunks_exact_mut(R))
        {
            *row_mut::<R>(u1, 0) = matvec_fixed::<M, R>(w, row::<R>(y1, 0));
        }
        // The sub-block is still in L1: Gram and column max now.
        gram_fixed_body::<M, R>(us, g);
        if let Some(cm) = colmax.as_deref_mut() {
            let cm = row_mut::<R>(cm, 0);
            for ur in us.chunks_exact(R) {
                let ur = row::<R>(ur, 0);
                for j in 0..R {
                    cm[j] = cm[j].max(ur[j].abs());
                }
            }
        }
    }
}

#[inline(always)]
fn scale_fixed_body<M: MulAdd, const R: usize>(
    scale: &[f64],
    u: &mut [f64],
    y: &[f64],
    acc: Option<&mut [f64]>,
) {
    let s = row::<R>(scale, 0);
    match acc {
        None => {
            for ur in u.chunks_exact_mut(R) {
                let ur = row_mut::<R>(ur, 0);
                for j in 0..R {
                    ur[j] *= s[j];
                }
            }
        }
        Some(acc) => {
            let mut a = [0.0f64; R];
            for (ur, yr) in u.chunks_exact_mut(R).zip(y.chunks_exact(R)) {
                let ur = row_mut::<R>(ur, 0);
                let yr = row::<R>(yr, 0);
                for j in 0..R {
                    let x = ur[j] * s[j];
                    ur[j] = x;
                    a[j] = M::mul_add(x, yr[j], a[j]);
                }
            }
            for (t, v) in acc.iter_mut().zip(a) {
                *t += v;
            }
        }
    }
}

#[inline(always)]
fn gram_dyn_body<M: MulAdd>(r: usize, u: &[f64], g: &mut [f64]) {
    for ur in u.chunks_exact(r) {
        for (i, &s) in ur.iter().enumerate() {
            for (gij, &uj) in g[i * r..(i + 1) * r].iter_mut().zip(ur) {
                *gij = M::mul_add(s, uj, *gij);
            }
        }
    }
}

#[inline(always)]
fn solve_dyn_body<M: MulAdd>(
    r: usize,
    w: &[f64],
    y: &[f64],
    u: &mut [f64],
    g: &mut [f64],
    mut colmax: Option<&mut [f64]>,
) {
    for (ys, us) in y.chunks(SUB_ROWS * r).zip(u.chunks_mut(SUB_ROWS * r)) {
        for (yr, ur) in ys.chunks_exact(r).zip(us.chunks_exact_mut(r)) {
            ur.fill(0.0);
            for (k, &yk) in yr.iter().enumerate() {
                for (x, &wkj) in ur.iter_mut().zip(&w[k * r..(k + 1) * r]) {
                    *x = M::mul_add(yk, wkj, *x);
                }
            }
        }
        gram_dyn_body::<M>(r, us, g);
        if let Some(cm) = colmax.as_deref_mut() {
            for ur in us.chunks_exact(r) {
                for (m, &x) in cm.iter_mut().zip(ur) {
                    *m = m.max(x.abs());
                }
            }
        }
    }
}

#[inline(always)]
fn scale_dyn_body<M: MulAdd>(
    r: usize,
    scale: &[f64],
    u: &mut [f64],
    y: &[f64],
    acc: Option<&mut [f64]>,
) {
    match acc {
        None => {
            for ur in u.chunks_exact_mut(r) {
                for (x, &s) in ur.iter_mut().zip(scale) {
                    *x *= s;
                }
            }
        }
        Some(acc) => {
            for (ur, yr) in u.chunks_exact_mut(r).zip(y.chunks_exact(r)) {
                for ((x, &s), (a, &yv)) in ur.iter_mut().zip(scale).zip(acc.iter_mut().zip(yr)) {
                    *x *= s;
                    *a = M::mul_add(*x, yv, *a);
                }
            }
        }
    }
}
