//! Communication volume models, in bytes of f64 rows (8 R bytes a row), per mode:
//!
//! - [`interval_exchange_bytes`]: ours, measured from real intervals and owned blocks (what
//!   the exchange plans put on the wire, one direction);
//! - [`allreduce_bytes`]: every rank contributing a whole `I_n x R` matrix to a ring
//!   allreduce, `2 (P - 1) I_n R 8` bytes in all (the volume-optimal allreduce);
//! - [`alto_grid`] and [`grid_exchange_bytes`]: the model for uniform nonzeros, in which
//!   cutting the line into `P = 2^k` segments fixes the key's top k bits, `k_n` of which are
//!   mode n's: the segments then form a `2^{k_1} x ... x 2^{k_N}` grid, each row of mode n is
//!   shared by `P / 2^{k_n}` ranks and summing it moves `(P / p_n - 1) I_n R 8` bytes;
//! - [`splatt_grid`]: SPLATT's medium-grained decomposition (Smith & Karypis, IPDPS 2016), a
//!   `p_1 x ... x p_N` grid from P's prime factors, largest first, each given to the mode with
//!   the most rows per layer; its per-mode reduce volume is the same grid formula.

use crate::plan::{owned_bounds, ExchangePlan, Interval};
use alto::format::Layout;

/// Bytes one direction of the interval exchange puts on the wire in one mode (all ranks).
pub fn interval_exchange_bytes(intervals: &[Interval], dim: u64, rank: usize) -> u64 {
    let bounds = owned_bounds(intervals, dim);
    (0..intervals.len())
        .map(|p| ExchangePlan::new(p, intervals, &bounds).rows_sent())
        .sum::<u64>()
        * rank as u64
        * 8
}

/// Bytes of a ring allreduce of a whole `dim x rank` matrix over `parts` ranks (all ranks).
pub fn allreduce_bytes(dim: u64, rank: usize, parts: usize) -> u64 {
    2 * (parts as u64).saturating_sub(1) * dim * rank as u64 * 8
}

/// Bytes of summing rows over a grid with `p_n` layers in mode n (one direction, all ranks):
/// each of the `dim` rows is held by `parts / p_n` ranks.
pub fn grid_exchange_bytes(dim: u64, layers: u64, parts: u64, rank: usize) -> u64 {
    (parts / layers.max(1)).saturating_sub(1) * dim * rank as u64 * 8
}

/// The grid ALTO's cut induces for `parts = 2^k` segments under uniform nonzeros: the layers
/// per mode, `2^{k_n}` with `k_n` the mode's share of the key's top k bits.
pub fn alto_grid(layout: &Layout, parts: u64) -> Vec<u64> {
    let k = parts.max(1).ilog2();
    let b = layout.total_bits();
    let top = if k == 0 {
        0u128
    } else {
        let ones = if k.min(b) == 128 {
            u128::MAX
        } else {
            (1u128 << k.min(b)) - 1
        };
        ones << (b - k.min(b))
    };
    layout
        .masks()
        .iter()
        .map(|&m| 1u64 << (m & top).count_ones())
        .collect()
}

/// SPLATT's medium-grained grid for `parts` ranks on `dims`.
pub fn splatt_grid(dims: &[u64], parts: u64) -> Vec<u64> {
    let mut factors = Vec::new();
    let mut n = parts.max(1);
    let mut f = 2;
    while n > 1 {
        while n.is_multiple_of(f) {
            factors.push(f);
            n /= f;
        }
        f += 1;
    }
    factors.sort_unstable_by(|a, b| b.cmp(a));
    let mut grid = vec![1u64; dims.len()];
    for f in factors {
        let m = (0..dims.len())
            .max_by(|&a, &b| {
                (dims[a] as f64 / grid[a] as f64).total_cmp(&(dims[b] as f64 / grid[b] as f64))
            })
            .expect("order >= 2");
        grid[m] *= f;
    }
    grid
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alto_grid_gives_the_top_bits_to_the_longest_mode() {
        // 2000 x 1500 x 1000: the top bits 31, 30, 29, 28, 27 belong to modes 1, 0, 1, 0, 2
        // (SPEC's masks m0 = 0x52492492, m1 = 0xa4924924, m2 = 0x09249249: mode 2 has 10
        // bits, so the top level holds modes 0 and 1 only).
        let layout = Layout::new(&[2000, 1500, 1000]).unwrap();
        assert_eq!(alto_grid(&layout, 1), [1, 1, 1]);
        assert_eq!(alto_grid(&layout, 2), [1, 2, 1]);
        assert_eq!(alto_grid(&layout, 4), [2, 2, 1]);
        assert_eq!(alto_grid(&layout, 8), [2, 4, 1]);
        assert_eq!(alto_grid(&layout, 32), [4, 4, 2]);
        for p in [1u64, 2, 4, 64, 1024] {
            assert_eq!(alto_grid(&layout, p).iter().product::<u64>(), p);
        }
    }

    #[test]
    fn splatt_grid_uses_every_prime_factor() {
        assert_eq!(splatt_grid(&[100, 10, 10], 4), [4, 1, 1]);
        assert_eq!(splatt_grid(&[100, 100, 10], 6).iter().product::<u64>(), 6);
        assert_eq!(splatt_grid(&[5, 5], 1), [1, 1]);
    }

    #[test]
    fn volumes_vanish_on_one_rank_and_grow_with_sharing() {
        assert_eq!(allreduce_bytes(10, 4, 1), 0);
        assert_eq!(allreduce_bytes(10, 4, 3), 2 * 2 * 10 * 4 * 8);
        assert_eq!(grid_exchange_bytes(10, 4, 4, 2), 0);
        assert_eq!(grid_exchange_bytes(10, 1, 4, 2), 3 * 10 * 2 * 8);
        let disjoint = [Some((0, 4)), Some((5, 9))];
        assert_eq!(interval_exchange_bytes(&disjoint, 10, 3), 0);
        let shared = [Some((0, 9)), Some((0, 9))];
        assert_eq!(interval_exchange_bytes(&shared, 10, 3), 10 * 3 * 8);
    }
}
