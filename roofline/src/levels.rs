//! Which measured bandwidths become roofs. A level is drawn only where the probe could tell it
//! from the next slower one: a VM may report a last-level cache far larger than the share its
//! core really gets (this project's VM reports 480 MiB), and a working set sized from that
//! report runs at DRAM speed. Drawing it as an "L3" roof would be a wrong roof.
//!
//! Two decisions, both pure functions with their thresholds in [`SeparationRule`]:
//! - [`pick_l3`]: the L3 working set is swept from just above L2 up to this thread's share of
//!   the reported L3 ([`l3_sweep_sizes`]); the roof is the fastest size that is clearly below
//!   L2 and clearly above DRAM, or none with the reason.
//! - [`resolve_roofs`]: every cache level must be clearly faster than the next slower roof;
//!   the others are listed as unresolved, with their value and why, and not drawn.

use crate::profile::{BandwidthCeiling, UnresolvedLevel};
use serde::Serialize;

/// Thresholds of the roof decisions.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SeparationRule {
    /// A level is a roof only when it is at least this factor faster than the next slower
    /// roof; an L3 sweep point must also be this factor slower than L2.
    pub min_ratio: f64,
    /// The L3 sweep starts at this multiple of L2, a working set a streaming sweep cannot keep
    /// in L2.
    pub l2_multiple: u64,
    /// At most this many sweep sizes (each double the last).
    pub max_steps: usize,
}

/// 1.2: on real hardware neighbouring levels differ by 1.5x (L3 to DRAM, one core) to 10x;
/// a smaller gap is within the run-to-run noise of a shared machine.
pub const DEFAULT_RULE: SeparationRule = SeparationRule {
    min_ratio: 1.2,
    l2_multiple: 2,
    max_steps: 8,
};

/// Per-thread L3 working sets to sweep: from `l2_multiple` x L2, doubling, up to the thread's
/// share of the reported L3 (`l3 / threads`: the threads running at once split it). Empty when
/// the share is not above the start (nothing lies between L2 and the share).
pub fn l3_sweep_sizes(l2: u64, l3: u64, threads: usize, rule: &SeparationRule) -> Vec<u64> {
    let share = l3 / threads.max(1) as u64;
    let mut sizes = Vec::new();
    let mut size = l2.saturating_mul(rule.l2_multiple).max(1);
    while size <= share && sizes.len() < rule.max_steps {
        sizes.push(size);
        size = size.saturating_mul(2);
    }
    sizes
}

/// One L3 sweep measurement.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SweepPoint {
    pub bytes_per_thread: u64,
    pub gbytes_per_s: f64,
}

/// What the sweep found.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum L3Pick {
    /// An L3 roof: the fastest separated point, and the largest separated size (a lower bound
    /// of the L3 share this thread really gets).
    Roof {
        bytes_per_thread: u64,
        gbytes_per_s: f64,
        largest_separated_bytes: u64,
    },
    /// No size ran clearly between L2 and DRAM.
    NotSeparable {
        best_gbytes_per_s: Option<f64>,
        reason: String,
    },
}

fn mib(bytes: u64) -> String {
    let m = bytes as f64 / (1u64 << 20) as f64;
    if m >= 10.0 {
        format!("{m:.0} MiB")
    } else {
        format!("{m:.1} MiB")
    }
}

/// The L3 roof from a sweep, given L2's and DRAM's bandwidths at the same thread count (DRAM:
/// the fastest DRAM kernel, so a point must beat every DRAM measurement).
pub fn pick_l3(
    sweep: &[SweepPoint],
    l2_gbs: f64,
    dram_gbs: f64,
    l3_reported: u64,
    rule: &SeparationRule,
) -> L3Pick {
    let best = sweep
        .iter()
        .map(|p| p.gbytes_per_s)
        .fold(None, |a: Option<f64>, b| Some(a.map_or(b, |a| a.max(b))));
    let (Some(first), Some(last)) = (sweep.first(), sweep.last()) else {
        return L3Pick::NotSeparable {
            best_gbytes_per_s: None,
            reason: format!(
                "the reported L3 ({}) leaves no per-thread working set between {}x L2 and this \
                 thread's share",
                mib(l3_reported),
                rule.l2_multiple
            ),
        };
    };
    let separated: Vec<&SweepPoint> = sweep
        .iter()
        .filter(|p| {
            p.gbytes_per_s >= rule.min_ratio * dram_gbs && p.gbytes_per_s * rule.min_ratio <= l2_gbs
        })
        .collect();
    let fastest = separated
        .iter()
        .max_by(|a, b| a.gbytes_per_s.total_cmp(&b.gbytes_per_s));
    match fastest {
        Some(p) => L3Pick::Roof {
            bytes_per_thread: p.bytes_per_thread,
            gbytes_per_s: p.gbytes_per_s,
            largest_separated_bytes: separated
                .iter()
                .map(|p| p.bytes_per_thread)
                .max()
                .unwrap_or(p.bytes_per_thread),
        },
        None => L3Pick::NotSeparable {
            best_gbytes_per_s: best,
            reason: format!(
                "no working set from {} to {} per thread ran between {r}x below L2 ({l2_gbs:.1} \
                 GB/s) and {r}x above DRAM ({dram_gbs:.1} GB/s); best {:.1} GB/s. The reported \
                 L3 ({}) is not this core's to use (a VM reports its host's cache)",
                mib(first.bytes_per_thread),
                mib(last.bytes_per_thread),
                best.unwrap_or(f64::NAN),
                mib(l3_reported),
                r = rule.min_ratio,
            ),
        },
    }
}

/// `levels` fastest first, the last one DRAM (always a roof). Walking up from DRAM, a level is
/// a roof when it is at least `min_ratio` x the last roof below it; the rest are unresolved.
pub fn resolve_roofs(
    levels: Vec<BandwidthCeiling>,
    rule: &SeparationRule,
) -> (Vec<BandwidthCeiling>, Vec<UnresolvedLevel>) {
    let mut roofs: Vec<BandwidthCeiling> = Vec::new();
    let mut unresolved = Vec::new();
    for level in levels.into_iter().rev() {
        match roofs.last() {
            Some(slower) if level.gbytes_per_s < rule.min_ratio * slower.gbytes_per_s => {
                unresolved.push(UnresolvedLevel {
                    reason: format!(
                        "measured {:.1} GB/s, not {}x above the {} roof ({:.1} GB/s): the probe \
                         cannot tell {} from {}",
                        level.gbytes_per_s,
                        rule.min_ratio,
                        slower.name,
                        slower.gbytes_per_s,
                        level.name,
                        slower.name
                    ),
                    measured_gbytes_per_s: Some(level.gbytes_per_s),
                    name: level.name,
                });
            }
            _ => roofs.push(level),
        }
    }
    roofs.reverse();
    unresolved.reverse();
    (roofs, unresolved)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn ceiling(name: &str, gbs: f64) -> BandwidthCeiling {
        BandwidthCeiling {
            name: name.into(),
            gbytes_per_s: gbs,
            basis: String::new(),
        }
    }

    fn point(mib: u64, gbs: f64) -> SweepPoint {
        SweepPoint {
            bytes_per_thread: mib * MIB,
            gbytes_per_s: gbs,
        }
    }

    #[test]
    fn sweep_sizes_lie_between_l2_and_the_share() {
        // This VM: 2 MiB L2, 480 MiB reported L3, 2 threads: 4 .. 128 MiB.
        let s = l3_sweep_sizes(2 * MIB, 480 * MIB, 2, &DEFAULT_RULE);
        assert_eq!(
            s,
            vec![4 * MIB, 8 * MIB, 16 * MIB, 32 * MIB, 64 * MIB, 128 * MIB]
        );
        // A share below 2x L2 (56 threads on 105 MiB with 2 MiB L2): nothing to sweep.
        assert!(l3_sweep_sizes(2 * MIB, 105 * MIB, 56, &DEFAULT_RULE).is_empty());
        // The step limit holds.
        let capped = SeparationRule {
            max_steps: 2,
            ..DEFAULT_RULE
        };
        assert_eq!(l3_sweep_sizes(MIB, 1 << 40, 1, &capped).len(), 2);
    }

    #[test]
    fn l3_at_dram_speed_is_not_a_roof() {
        // This VM's numbers: L3-sized sets ran at DRAM speed (29.5 vs 32.1 GB/s).
        let sweep = [point(4, 31.0), point(8, 30.2), point(128, 29.5)];
        match pick_l3(&sweep, 184.1, 32.1, 480 * MIB, &DEFAULT_RULE) {
            L3Pick::NotSeparable {
                best_gbytes_per_s,
                reason,
            } => {
                assert_eq!(best_gbytes_per_s, Some(31.0));
                assert!(reason.contains("480 MiB"), "{reason}");
                assert!(reason.contains("4.0 MiB to 128 MiB"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        // Nothing swept: not separable, saying why.
        assert!(matches!(
            pick_l3(&[], 184.1, 32.1, 480 * MIB, &DEFAULT_RULE),
            L3Pick::NotSeparable {
                best_gbytes_per_s: None,
                ..
            }
        ));
    }

    #[test]
    fn l3_roof_is_the_fastest_separated_point() {
        // 4 MiB still partly in L2 (too close to it), 8-16 MiB in L3, 64 MiB at DRAM speed.
        let sweep = [
            point(4, 170.0),
            point(8, 90.0),
            point(16, 80.0),
            point(64, 33.0),
        ];
        assert_eq!(
            pick_l3(&sweep, 184.0, 32.0, 480 * MIB, &DEFAULT_RULE),
            L3Pick::Roof {
                bytes_per_thread: 8 * MIB,
                gbytes_per_s: 90.0,
                largest_separated_bytes: 16 * MIB
            }
        );
        // A stricter ratio rejects what a looser one accepts.
        let strict = SeparationRule {
            min_ratio: 3.0,
            ..DEFAULT_RULE
        };
        assert!(matches!(
            pick_l3(&sweep, 184.0, 32.0, 480 * MIB, &strict),
            L3Pick::NotSeparable { .. }
        ));
    }

    #[test]
    fn roofs_must_clear_the_roof_below() {
        // L3 below DRAM (the case) is unresolved; L2 is compared with DRAM instead.
        let (roofs, unresolved) = resolve_roofs(
            vec![
                ceiling("L1", 328.8),
                ceiling("L2", 184.1),
                ceiling("L3", 28.5),
                ceiling("DRAM", 29.9),
            ],
            &DEFAULT_RULE,
        );
        let names: Vec<&str> = roofs.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["L1", "L2", "DRAM"]);
        assert_eq!(unresolved.len(), 1);
        assert_eq!(unresolved[0].name, "L3");
        assert_eq!(unresolved[0].measured_gbytes_per_s, Some(28.5));
        assert!(
            unresolved[0].reason.contains("DRAM"),
            "{}",
            unresolved[0].reason
        );
        // Slightly above but within the ratio is unresolved too; a clear gap is a roof.
        let (roofs, unresolved) = resolve_roofs(
            vec![ceiling("L3", 33.0), ceiling("DRAM", 30.0)],
            &DEFAULT_RULE,
        );
        assert_eq!((roofs.len(), unresolved.len()), (1, 1));
        let (roofs, _) = resolve_roofs(
            vec![ceiling("L3", 37.0), ceiling("DRAM", 30.0)],
            &DEFAULT_RULE,
        );
        assert_eq!(roofs.len(), 2);
    }
}
