//! Adaptive conflict resolution (SPEC section 5): the choice between pull-based staging,
//! atomics and flag-guided atomics is a named pure function with its threshold as a parameter,
//! so experiments can force every branch.

use std::fmt;
use std::str::FromStr;

/// How concurrent updates of the same output row by different segments are resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ConflictResolution {
    /// Each segment accumulates into a private staging buffer over its interval; a parallel
    /// pull-based reduction sums the buffers into the output.
    Pull,
    /// Every update is an atomic add on the shared output.
    Atomic,
    /// Atomic adds only for boundary nonzeros (helper flag set), plain adds otherwise.
    Flagged,
}

impl ConflictResolution {
    pub const ALL: [ConflictResolution; 3] = [
        ConflictResolution::Pull,
        ConflictResolution::Atomic,
        ConflictResolution::Flagged,
    ];
    pub fn name(self) -> &'static str {
        match self {
            ConflictResolution::Pull => "pull",
            ConflictResolution::Atomic => "atomic",
            ConflictResolution::Flagged => "flagged",
        }
    }
}

impl fmt::Display for ConflictResolution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `auto` (the heuristic) or a forced strategy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SyncChoice {
    #[default]
    Auto,
    Force(ConflictResolution),
}

impl FromStr for SyncChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(SyncChoice::Auto),
            "pull" => Ok(SyncChoice::Force(ConflictResolution::Pull)),
            "atomic" => Ok(SyncChoice::Force(ConflictResolution::Atomic)),
            "flagged" => Ok(SyncChoice::Force(ConflictResolution::Flagged)),
            other => Err(format!(
                "unknown sync strategy `{other}` (expected auto, pull, atomic or flagged)"
            )),
        }
    }
}

/// The heuristic: pull-based staging when the mode's fiber reuse exceeds `min_fiber_reuse`;
/// otherwise flag-guided atomics when the mode has a helper-flag bit, else plain atomics.
pub fn choose_sync(
    fiber_reuse: u64,
    min_fiber_reuse: u64,
    has_flag_bit: bool,
) -> ConflictResolution {
    if fiber_reuse > min_fiber_reuse {
        ConflictResolution::Pull
    } else if has_flag_bit {
        ConflictResolution::Flagged
    } else {
        ConflictResolution::Atomic
    }
}

/// Resolves a choice for one mode: a forced `Flagged` on a mode without a flag bit runs as
/// `Atomic` (with no spare bit, every update must be atomic).
pub fn resolve_sync(
    choice: SyncChoice,
    fiber_reuse: u64,
    min_fiber_reuse: u64,
    has_flag_bit: bool,
) -> ConflictResolution {
    match choice {
        SyncChoice::Auto => choose_sync(fiber_reuse, min_fiber_reuse, has_flag_bit),
        SyncChoice::Force(ConflictResolution::Flagged) if !has_flag_bit => {
            ConflictResolution::Atomic
        }
        SyncChoice::Force(s) => s,
    }
}

/// For each segment's closed interval (None = empty segment): true when no other segment's
/// interval overlaps it, so the segment may write the output rows directly without staging.
pub fn exclusive_intervals(intervals: &[Option<(u64, u64)>]) -> Vec<bool> {
    let mut order: Vec<(u64, u64, usize)> = intervals
        .iter()
        .enumerate()
        .filter_map(|(p, iv)| iv.map(|(lo, hi)| (lo, hi, p)))
        .collect();
    order.sort_unstable();
    let mut exclusive = vec![false; intervals.len()];
    // Sorted by start: an interval is exclusive when it starts after every earlier one ends
    // and ends before the next one starts.
    let mut reach_before: Option<u64> = None;
    for (k, &(lo, hi, p)) in order.iter().enumerate() {
        let prev_overlaps = reach_before.is_some_and(|r| r >= lo);
        let next_overlaps = order
            .get(k + 1)
            .is_some_and(|&(next_lo, _, _)| next_lo <= hi);
        exclusive[p] = !prev_overlaps && !next_overlaps;
        reach_before = Some(reach_before.map_or(hi, |r| r.max(hi)));
    }
    exclusive
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_branch_of_the_heuristic() {
        assert_eq!(choose_sync(5, 4, false), ConflictResolution::Pull);
        assert_eq!(choose_sync(4, 4, true), ConflictResolution::Flagged);
        assert_eq!(choose_sync(4, 4, false), ConflictResolution::Atomic);
        assert_eq!(choose_sync(100, 1000, false), ConflictResolution::Atomic);
        assert_eq!(
            resolve_sync(SyncChoice::Force(ConflictResolution::Flagged), 0, 4, false),
            ConflictResolution::Atomic
        );
        assert_eq!(
            resolve_sync(SyncChoice::Force(ConflictResolution::Pull), 0, 4, false),
            ConflictResolution::Pull
        );
        assert_eq!(
            "flagged".parse::<SyncChoice>().unwrap(),
            SyncChoice::Force(ConflictResolution::Flagged)
        );
        assert!("locks".parse::<SyncChoice>().is_err());
    }

    #[test]
    fn exclusivity() {
        let iv = [
            Some((0, 3)),
            Some((4, 9)),
            None,
            Some((9, 12)),
            Some((20, 20)),
        ];
        assert_eq!(
            exclusive_intervals(&iv),
            vec![true, false, false, false, true]
        );
        // Containment: (0, 100) overlaps (5, 6) even though (5, 6) comes later.
        let iv = [Some((0, 100)), Some((5, 6)), Some((50, 60))];
        assert_eq!(exclusive_intervals(&iv), vec![false, false, false]);
    }
}
