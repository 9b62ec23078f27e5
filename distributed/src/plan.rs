//! Who holds which nonzeros and who owns which factor rows: the pure arithmetic of the
//! distribution, shared by the MPI driver and the single-process simulation in the tests.
//!
//! - [`segment_bounds`]: the sorted line cut into P equal segments, exactly as the
//!   shared-memory partitions (SPEC section 4: segment p is `[p ceil(M/P), (p+1) ceil(M/P))`).
//! - [`rebalance_counts`]: after the sample sort, how many of a rank's nonzeros go to each
//!   segment.
//! - [`owned_bounds`]: per mode, a contiguous block of rows per rank, placed inside the ranks'
//!   intervals so that rows no other rank touches never travel.
//! - [`ExchangePlan`]: per mode, the row ranges a rank sends and receives when partial MTTKRP
//!   rows are summed at their owners (and, reversed, when owners send updated factor rows).

use std::ops::Range;

/// A segment's closed coordinate interval `[lo, hi]` in one mode; `None` for no nonzeros.
pub type Interval = Option<(u64, u64)>;

/// Bounds of `parts` equal segments of a line of `total` nonzeros: segment p is
/// `bounds[p]..bounds[p + 1]` (the last ones may be empty when `total < parts`).
pub fn segment_bounds(total: u64, parts: usize) -> Vec<u64> {
    let seg = total.div_ceil(parts.max(1) as u64).max(1);
    (0..=parts as u64).map(|p| (p * seg).min(total)).collect()
}

/// How many of the nonzeros at global line positions `start..start + count` fall into each
/// segment of `bounds`.
pub fn rebalance_counts(start: u64, count: u64, bounds: &[u64]) -> Vec<u64> {
    let end = start + count;
    bounds
        .windows(2)
        .map(|w| end.min(w[1]).saturating_sub(start.max(w[0])))
        .collect()
}

/// The rows `[lo, hi]` as a half-open range.
fn rows_of(iv: Interval) -> Range<u64> {
    match iv {
        Some((lo, hi)) => lo..hi + 1,
        None => 0..0,
    }
}

/// The intersection of two half-open ranges (empty ranges start at 0).
fn overlap(a: &Range<u64>, b: &Range<u64>) -> Range<u64> {
    let lo = a.start.max(b.start);
    let hi = a.end.min(b.end);
    if lo < hi {
        lo..hi
    } else {
        0..0
    }
}

/// The row blocks each rank owns in a mode of `dim` rows, from the ranks' intervals in that
/// mode: rank p owns `bounds[p]..bounds[p + 1]`; the blocks tile `0..dim` in rank order.
///
/// Between two consecutive ranks with nonzeros, a and b, the boundary lies in the gap between
/// a's interval end and b's interval start when they are disjoint (then neither sends the
/// other anything), or inside their overlap; within that window it is the point nearest the
/// balanced split (b's share of `dim` among the ranks with nonzeros). Ranks without nonzeros
/// own nothing.
pub fn owned_bounds(intervals: &[Interval], dim: u64) -> Vec<u64> {
    let busy: Vec<usize> = (0..intervals.len())
        .filter(|&p| intervals[p].is_some())
        .collect();
    let mut bounds = vec![0u64; intervals.len() + 1];
    let mut cuts = vec![dim; busy.len() + 1];
    cuts[0] = 0;
    for k in 1..busy.len() {
        let a_end = rows_of(intervals[busy[k - 1]]).end;
        let b_start = rows_of(intervals[busy[k]]).start;
        let (lo, hi) = (a_end.min(b_start), a_end.max(b_start));
        let target = (dim as u128 * k as u128 / busy.len() as u128) as u64;
        cuts[k] = target.clamp(lo, hi).max(cuts[k - 1]).min(dim);
    }
    // Rank p's block starts at the cut of the first busy rank at or after p.
    let mut k = 0;
    for (p, b) in bounds.iter_mut().enumerate().take(intervals.len()) {
        *b = cuts[k];
        if busy.get(k) == Some(&p) {
            k += 1;
        }
    }
    // Ranks after the last busy one start at `dim`; the last busy one ends there.
    for b in bounds.iter_mut().skip(busy.last().map_or(1, |&l| l + 1)) {
        *b = dim;
    }
    bounds[intervals.len()] = dim;
    bounds
}

/// The row ranges one rank exchanges in one mode. Summing partial rows: the rank sends
/// `send[q]` (rows of its interval that q owns) and receives `recv[q]` (rows of q's interval
/// that it owns). Sending updated factor rows is the same plan reversed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExchangePlan {
    pub me: usize,
    /// This rank's interval as a half-open row range.
    pub window: Range<u64>,
    /// The rows this rank owns.
    pub owned: Range<u64>,
    pub send: Vec<Range<u64>>,
    pub recv: Vec<Range<u64>>,
}

impl ExchangePlan {
    /// The plan of rank `me`, from every rank's interval in the mode and the owned blocks.
    pub fn new(me: usize, intervals: &[Interval], bounds: &[u64]) -> Self {
        let owned_of = |q: usize| bounds[q]..bounds[q + 1];
        let window = rows_of(intervals[me]);
        let owned = owned_of(me);
        let send = (0..intervals.len())
            .map(|q| overlap(&window, &owned_of(q)))
            .collect();
        let recv = (0..intervals.len())
            .map(|q| overlap(&rows_of(intervals[q]), &owned))
            .collect();
        ExchangePlan {
            me,
            window,
            owned,
            send,
            recv,
        }
    }

    /// Rows this rank puts on the wire (its own block excluded) in one direction.
    pub fn rows_sent(&self) -> u64 {
        self.send
            .iter()
            .enumerate()
            .filter(|&(q, _)| q != self.me)
            .map(|(_, r)| r.end - r.start)
            .sum()
    }

    /// Rows this rank takes off the wire in one direction.
    pub fn rows_received(&self) -> u64 {
        self.recv
            .iter()
            .enumerate()
            .filter(|&(q, _)| q != self.me)
            .map(|(_, r)| r.end - r.start)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_match_the_shared_memory_cut() {
        assert_eq!(segment_bounds(10, 3), [0, 4, 8, 10]);
        assert_eq!(segment_bounds(3, 4), [0, 1, 2, 3, 3]);
        assert_eq!(segment_bounds(0, 2), [0, 0, 0]);
    }

    #[test]
    fn rebalance_sends_each_position_to_its_segment() {
        let b = segment_bounds(10, 3); // 0 4 8 10
        assert_eq!(rebalance_counts(0, 3, &b), [3, 0, 0]);
        assert_eq!(rebalance_counts(3, 6, &b), [1, 4, 1]);
        assert_eq!(rebalance_counts(9, 1, &b), [0, 0, 1]);
        assert_eq!(rebalance_counts(5, 0, &b), [0, 0, 0]);
    }

    #[test]
    fn owned_blocks_tile_the_mode_and_avoid_traffic_between_disjoint_intervals() {
        let iv = [Some((0, 9)), Some((12, 30)), None, Some((25, 39))];
        let b = owned_bounds(&iv, 40);
        assert_eq!(b.len(), 5);
        assert_eq!((b[0], b[4]), (0, 40));
        assert!(b.windows(2).all(|w| w[0] <= w[1]));
        // Disjoint 0..10 and 12..31: the cut lies in 10..=12.
        assert!((10..=12).contains(&b[1]));
        // The empty rank owns nothing.
        assert_eq!(b[2], b[3]);
        // Overlapping 12..31 and 25..40: the cut lies in 25..=31.
        assert!((25..=31).contains(&b[3]));
        let plan0 = ExchangePlan::new(0, &iv, &b);
        assert_eq!(plan0.rows_sent(), 0);
        let plans: Vec<_> = (0..4).map(|p| ExchangePlan::new(p, &iv, &b)).collect();
        let sent: u64 = plans.iter().map(|p| p.rows_sent()).sum();
        let received: u64 = plans.iter().map(|p| p.rows_received()).sum();
        assert_eq!(sent, received);
        // Only the overlap 25..31 of ranks 1 and 3 travels.
        assert_eq!(sent, 6);
    }

    #[test]
    fn send_ranges_cover_the_window_in_order() {
        let iv = [Some((3, 50)), Some((0, 60)), Some((40, 99))];
        let b = owned_bounds(&iv, 100);
        for me in 0..3 {
            let plan = ExchangePlan::new(me, &iv, &b);
            let mut at = plan.window.start;
            for r in plan.send.iter().filter(|r| !r.is_empty()) {
                assert_eq!(r.start, at);
                at = r.end;
            }
            assert_eq!(at, plan.window.end);
            // What q sends me is what I receive from q.
            for q in 0..3 {
                assert_eq!(ExchangePlan::new(q, &iv, &b).send[me], plan.recv[q]);
            }
        }
    }

    #[test]
    fn all_empty_ranks_own_nothing_but_the_tiling_still_closes() {
        assert_eq!(owned_bounds(&[None, None], 7), [0, 7, 7]);
        assert_eq!(owned_bounds(&[None, Some((2, 3)), None], 7), [0, 0, 7, 7]);
    }
}
