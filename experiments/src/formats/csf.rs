//! The CSF baseline (Smith and Karypis): compressed sparse fiber trees, one per mode with that
//! mode at the root (SPLATT's "all" allocation, the mode-specific format of the paper's oracle),
//! the other modes below it by increasing length, as SPLATT orders them.
//!
//! Level `l` of a tree holds the distinct coordinate prefixes `(i_perm[0], ..., i_perm[l])`
//! (the "fibers"); the leaves are the nonzeros. MTTKRP for the root mode walks each root slice
//! depth first, multiplying factor rows on the way up (SPLATT's root kernel), and runs in
//! parallel over root slices: each slice writes only its own output row, so there are no
//! conflicts and no synchronization. Slices are handed out in chunks of about equal nonzero
//! counts, but a heavy slice is never split (the format's load-imbalance limit).
//!
//! Tiling (SPLATT's dense tiling): the non-root modes of every tree are cut into `t` equal
//! coordinate ranges each (`t` = threads, fewer if the tile count would exceed
//! [`MAX_TILES`]) and each tile is its own subtree. Tiles run one after another, each in
//! parallel over its slices, so the factor rows a tile reads stay in a bounded range.

use super::rows::{self, with_rank};
use super::sort::{decoder, encode, with_key, KeySpec};
use super::{BaselineIsa, MttkrpCall, MttkrpFormat};
use alto::{AltoError, CooTensor, Matrix, Result};
use alto_kernels::baselines::{BaselineKernel, Vectorize};
use alto_kernels::HwBits;
use rayon::prelude::*;
use std::time::Instant;

/// Upper bound on the number of tiles of one tiled tree.
pub const MAX_TILES: usize = 1 << 16;

/// One tree, rooted at `perm[0]`.
#[derive(Clone, Debug)]
pub struct CsfTree {
    /// The mode at each level, root first.
    perm: Vec<usize>,
    /// For levels `0..N-1`: the children of node `f` of level `l` are nodes
    /// `fptr[l][f]..fptr[l][f + 1]` of level `l + 1`.
    fptr: Vec<Vec<u64>>,
    /// For every level: each node's coordinate in that level's mode (level `N-1`: nonzeros).
    fids: Vec<Vec<u64>>,
    /// One value per leaf.
    vals: Vec<f64>,
    /// Root nodes of tile `t` are `tile_ptr[t]..tile_ptr[t + 1]` (one tile when untiled).
    tile_ptr: Vec<u64>,
    /// Tiles per non-root mode (1 when untiled).
    tile_dim: usize,
}

impl CsfTree {
    pub fn perm(&self) -> &[usize] {
        &self.perm
    }
    pub fn tiles(&self) -> usize {
        self.tile_ptr.len() - 1
    }
    pub fn tile_dim(&self) -> usize {
        self.tile_dim
    }
    /// Nodes at each level (the last level's are the nonzeros).
    pub fn level_sizes(&self) -> Vec<usize> {
        self.fids.iter().map(Vec::len).collect()
    }
    pub fn storage_bytes(&self) -> u64 {
        let words: usize = self.fptr.iter().map(Vec::len).sum::<usize>()
            + self.fids.iter().map(Vec::len).sum::<usize>()
            + self.tile_ptr.len()
            + self.perm.len();
        (words * 8 + self.vals.len() * 8) as u64
    }

    /// The first leaf under root node `s`.
    fn first_leaf(&self, s: usize) -> usize {
        let mut f = s;
        for ptr in &self.fptr {
            f = ptr[f] as usize; // `s` may be one past the last slice: ptr has one more entry
        }
        f
    }
}

/// CSF with one tree per mode, optionally tiled.
#[derive(Clone, Debug)]
pub struct CsfFormat {
    dims: Vec<u64>,
    trees: Vec<CsfTree>,
}

impl CsfFormat {
    pub fn trees(&self) -> &[CsfTree] {
        &self.trees
    }
    pub fn tiled(&self) -> bool {
        self.trees.iter().any(|t| t.tile_dim > 1)
    }
}

impl MttkrpFormat for CsfFormat {
    /// `Some(t)` tiles the non-root modes `t` ways (CSF-tile).
    type Params = Option<usize>;

    /// Builds one tree per mode. The construction time covers every tree's sort and build.
    fn build(coo: &CooTensor, tiles: &Option<usize>) -> Result<(Self, f64)> {
        let t0 = Instant::now();
        if *tiles == Some(0) {
            return Err(AltoError::InvalidArgument(
                "CSF tiling needs at least one tile per mode".into(),
            ));
        }
        let order = coo.order();
        let tile_dim = tiles.map_or(1, |t| tile_dim_for(order, t));
        let trees = (0..order)
            .map(|root| {
                let perm = mode_order(coo.dims(), root);
                let spec = KeySpec::lexicographic(coo.dims(), &perm)?;
                Ok(with_key!(spec.width(), K => build_tree::<K>(coo, perm, &spec, tile_dim)))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok((
            CsfFormat {
                dims: coo.dims().to_vec(),
                trees,
            },
            t0.elapsed().as_secs_f64(),
        ))
    }

    fn dims(&self) -> &[u64] {
        &self.dims
    }

    /// All trees' pointers, coordinates and values (64-bit words).
    fn storage_bytes(&self) -> u64 {
        self.trees.iter().map(CsfTree::storage_bytes).sum()
    }

    /// MTTKRP on the tree rooted at the call's mode; returns `csf` or `csf-tile`.
    fn run(
        &self,
        call: &MttkrpCall<'_>,
        out: &mut Matrix,
        pool: &rayon::ThreadPool,
    ) -> Result<&'static str> {
        let (rank, isa) = (call.rank, call.opts.isa);
        let tree = &self.trees[call.mode];
        let by_level: Vec<&[f64]> = tree
            .perm
            .iter()
            .map(|&m| call.factors[m].as_slice())
            .collect();
        let threads = pool.current_num_threads();
        pool.install(|| {
            out.as_mut_slice().par_iter_mut().for_each(|x| *x = 0.0);
            for t in 0..tree.tiles() {
                run_tile(tree, t, &by_level, rank, threads, isa, out.as_mut_slice());
            }
        });
        Ok(if self.tiled() { "csf-tile" } else { "csf" })
    }
}

/// SPLATT's mode order for the tree rooted at `root`: the root, then the other modes by
/// increasing length (ties in mode order).
pub fn mode_order(dims: &[u64], root: usize) -> Vec<usize> {
    let mut rest: Vec<usize> = (0..dims.len()).filter(|&m| m != root).collect();
    rest.sort_by_key(|&m| dims[m]);
    let mut perm = vec![root];
    perm.extend(rest);
    perm
}

/// Tiles per non-root mode: `threads`, reduced until the tile count fits [`MAX_TILES`].
pub fn tile_dim_for(order: usize, threads: usize) -> usize {
    let mut t = threads.max(1);
    while t > 1 && (t as f64).powi(order as i32 - 1) > MAX_TILES as f64 {
        t -= 1;
    }
    t
}

fn build_tree<K: HwBits>(
    coo: &CooTensor,
    perm: Vec<usize>,
    spec: &KeySpec,
    tile_dim: usize,
) -> CsfTree {
    let order = coo.order();
    let masks = spec.masks_as::<K>();
    let keys = encode(coo, &masks);
    let dims = coo.dims();
    // Sort by (tile, key): the tile id is mixed-radix over the non-root levels' coordinate
    // ranges, so the tiles' nonzeros come out contiguous and in tile order.
    let tile_of = |k: usize| -> u32 {
        let mut t = 0u64;
        for &m in &perm[1..] {
            let c = coo.mode_indices(m)[k];
            t = t * tile_dim as u64 + c * tile_dim as u64 / dims[m];
        }
        t as u32
    };
    let mut entries: Vec<(u32, K, f64)> = keys
        .into_par_iter()
        .enumerate()
        .map(|(k, key)| {
            let t = if tile_dim > 1 { tile_of(k) } else { 0 };
            (t, key, coo.values()[k])
        })
        .collect();
    entries.par_sort_unstable_by_key(|e| (e.0, e.1));

    let dec = decoder(&masks);
    let ntiles = tile_dim.pow(order as u32 - 1);
    let mut fptr: Vec<Vec<u64>> = vec![Vec::new(); order - 1];
    let mut fids: Vec<Vec<u64>> = vec![Vec::new(); order];
    fids[order - 1].reserve(entries.len());
    let mut vals = Vec::with_capacity(entries.len());
    let mut tile_ptr = vec![0u64];
    let mut prev: Option<(u32, Vec<u64>)> = None;
    let mut coords = vec![0u64; order];
    for &(tile, key, v) in &entries {
        for (l, &m) in perm.iter().enumerate() {
            coords[l] = dec.coord(key, m);
        }
        // The first level whose prefix differs from the previous nonzero's.
        let first_new = match &prev {
            Some((pt, pc)) if *pt == tile => (0..order - 1)
                .find(|&l| pc[l] != coords[l])
                .unwrap_or(order - 1),
            _ => 0,
        };
        if prev.as_ref().is_none_or(|(pt, _)| *pt != tile) {
            while tile_ptr.len() <= tile as usize {
                tile_ptr.push(fids[0].len() as u64);
            }
        }
        for l in first_new..order - 1 {
            fptr[l].push(fids[l + 1].len() as u64);
            fids[l].push(coords[l]);
        }
        fids[order - 1].push(coords[order - 1]);
        vals.push(v);
        match &mut prev {
            Some((pt, pc)) => {
                *pt = tile;
                pc.copy_from_slice(&coords);
            }
            None => prev = Some((tile, coords.clone())),
        }
    }
    while tile_ptr.len() <= ntiles {
        tile_ptr.push(fids[0].len() as u64);
    }
    for l in 0..order - 1 {
        fptr[l].push(fids[l + 1].len() as u64);
    }
    CsfTree {
        perm,
        fptr,
        fids,
        vals,
        tile_ptr,
        tile_dim,
    }
}

/// One tile, in parallel over chunks of its root slices (each chunk owns the output rows of
/// its slices: root coordinates are distinct and ascending inside a tile).
fn run_tile(
    tree: &CsfTree,
    tile: usize,
    by_level: &[&[f64]],
    rank: usize,
    threads: usize,
    isa: BaselineIsa,
    out: &mut [f64],
) {
    let (lo, hi) = (
        tree.tile_ptr[tile] as usize,
        tree.tile_ptr[tile + 1] as usize,
    );
    if lo == hi {
        return;
    }
    // Chunks of consecutive slices with about `target` nonzeros each (at most 256 slices).
    let tile_nnz = tree.first_leaf(hi) - tree.first_leaf(lo);
    let target = (tile_nnz / (threads * 16)).max(256);
    let mut bounds = vec![lo];
    let mut start_leaf = tree.first_leaf(lo);
    for s in lo + 1..hi {
        let leaf = tree.first_leaf(s);
        if leaf - start_leaf >= target || s - bounds[bounds.len() - 1] >= 256 {
            bounds.push(s);
            start_leaf = leaf;
        }
    }
    bounds.push(hi);
    // Carve the output rows of each chunk.
    let roots = &tree.fids[0];
    let mut tasks: Vec<(usize, usize, u64, &mut [f64])> = Vec::with_capacity(bounds.len() - 1);
    let mut rest: &mut [f64] = out;
    let mut consumed = 0u64;
    for w in bounds.windows(2) {
        let (a, b) = (w[0], w[1]);
        let (first_row, last_row) = (roots[a], roots[b - 1]);
        let skip = (first_row - consumed) as usize * rank;
        let len = (last_row - first_row + 1) as usize * rank;
        let (_, r) = std::mem::take(&mut rest).split_at_mut(skip);
        let (rows_, r) = r.split_at_mut(len);
        rest = r;
        consumed = last_row + 1;
        tasks.push((a, b, first_row, rows_));
    }
    tasks.par_iter_mut().for_each(|(a, b, first_row, rows_)| {
        with_rank!(rank, R, C => isa.dispatch(Slices::<R, C> {
            tree,
            by_level,
            rank,
            range: *a..*b,
            first_row: *first_row,
            out: rows_,
        }))
    });
}

/// [`slices`] as a kernel body for [`BaselineIsa::dispatch`].
struct Slices<'a, const R: usize, const C: usize> {
    tree: &'a CsfTree,
    by_level: &'a [&'a [f64]],
    rank: usize,
    range: std::ops::Range<usize>,
    first_row: u64,
    out: &'a mut [f64],
}

impl<const R: usize, const C: usize> BaselineKernel for Slices<'_, R, C> {
    type Output = ();
    #[inline(always)]
    fn run<I: Vectorize>(self, isa: I) {
        let Slices {
            tree,
            by_level,
            rank,
            range,
            first_row,
            out,
        } = self;
        slices::<R, C, I>(isa, tree, by_level, rank, range, first_row, out)
    }
}

/// SPLATT's root kernel over root slices `range`; `out` holds rows `first_row..`. `isa`: the
/// instruction set the caller runs with, which the recursion re-enters.
#[inline(always)]
fn slices<const R: usize, const C: usize, I: Vectorize>(
    isa: I,
    tree: &CsfTree,
    by_level: &[&[f64]],
    rank: usize,
    range: std::ops::Range<usize>,
    first_row: u64,
    out: &mut [f64],
) {
    let order = tree.perm.len();
    // Scratch: one accumulator row per level.
    let mut scratch = vec![0.0f64; order * rank];
    for s in range {
        let (acc, rest) = scratch.split_at_mut(rank);
        rows::zero::<R>(acc, rank);
        node_sum::<R, C, I>(isa, tree, by_level, rank, 0, s, acc, rest);
        let row = (tree.fids[0][s] - first_row) as usize * rank;
        rows::add_assign::<R>(&mut out[row..], acc, rank);
    }
}

/// Adds to `acc` the sum, over the children `c` of node `f` of level `l`, of the child's
/// value: a leaf's is `val * U(leaf id)`, an inner node's is `U(id) * (sum of its children)`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn node_sum<const R: usize, const C: usize, I: Vectorize>(
    isa: I,
    tree: &CsfTree,
    by_level: &[&[f64]],
    rank: usize,
    l: usize,
    f: usize,
    acc: &mut [f64],
    scratch: &mut [f64],
) {
    let order = tree.perm.len();
    let (lo, hi) = (tree.fptr[l][f] as usize, tree.fptr[l][f + 1] as usize);
    let u = by_level[l + 1];
    let ids = &tree.fids[l + 1];
    if l + 2 == order {
        // The leaves: accumulate `C` columns at a time in registers.
        let rank = rows::len::<R>(rank);
        let mut c0 = 0;
        while c0 < rank {
            let w = C.min(rank - c0);
            let mut sum = [0.0f64; C];
            for (&i, &v) in ids[lo..hi].iter().zip(&tree.vals[lo..hi]) {
                let row = &u[i as usize * rank + c0..][..w];
                for (a, &x) in sum[..w].iter_mut().zip(row) {
                    *a += v * x;
                }
            }
            for (a, &x) in acc[c0..c0 + w].iter_mut().zip(&sum[..w]) {
                *a += x;
            }
            c0 += C;
        }
    } else {
        let (tmp, rest) = scratch.split_at_mut(rank);
        for (c, &i) in (lo..hi).zip(&ids[lo..hi]) {
            rows::zero::<R>(tmp, rank);
            // Recursion cannot be inlined: re-enter an entry point compiled for the same ISA.
            isa.vectorize(NodeStep::<R, C> {
                tree,
                by_level,
                rank,
                l: l + 1,
                f: c,
                acc: tmp,
                scratch: rest,
            });
            rows::add_product::<R>(acc, tmp, &u[i as usize * rank..], rank);
        }
    }
}

/// One [`node_sum`] step as a kernel body, for the recursion.
struct NodeStep<'a, const R: usize, const C: usize> {
    tree: &'a CsfTree,
    by_level: &'a [&'a [f64]],
    rank: usize,
    l: usize,
    f: usize,
    acc: &'a mut [f64],
    scratch: &'a mut [f64],
}

impl<const R: usize, const C: usize> BaselineKernel for NodeStep<'_, R, C> {
    type Output = ();
    #[inline(always)]
    fn run<I: Vectorize>(self, isa: I) {
        let NodeStep {
            tree,
            by_level,
            rank,
            l,
            f,
            acc,
            scratch,
        } = self;
        node_sum::<R, C, I>(isa, tree, by_level, rank, l, f, acc, scratch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splatt_mode_order_and_tiles() {
        assert_eq!(mode_order(&[50, 10, 30, 10], 2), vec![2, 1, 3, 0]);
        assert_eq!(tile_dim_for(3, 4), 4);
        assert_eq!(tile_dim_for(5, 56), 16); // 16^4 = 65536 tiles
        assert_eq!(tile_dim_for(2, 1), 1);
    }

    #[test]
    fn tree_levels_compress_prefixes() {
        // (0,0,0) (0,0,1) (0,1,0) (2,1,1): root 0 has fibers (0,0) and (0,1); root 2 has (2,1).
        let coo = CooTensor::new(
            vec![3, 2, 2],
            vec![vec![0, 0, 0, 2], vec![0, 0, 1, 1], vec![0, 1, 0, 1]],
            vec![1.0, 2.0, 3.0, 4.0],
        )
        .unwrap();
        let (f, _) = CsfFormat::build(&coo, &None).unwrap();
        let t = &f.trees()[0];
        assert_eq!(t.perm(), &[0, 1, 2]);
        assert_eq!(t.level_sizes(), vec![2, 3, 4]);
        assert_eq!(t.tiles(), 1);
        // 2 fptr arrays of 3 + 4 entries, 2 + 3 + 4 ids, 4 values, 2 tile pointers, and the
        // 3-entry level order.
        assert_eq!(t.storage_bytes(), (3 + 4 + 9 + 4 + 2 + 3) * 8);
    }
}
