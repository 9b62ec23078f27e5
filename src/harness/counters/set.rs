//! [`CounterSet`]: counters opened inside every worker of a pool (and system-wide on the
//! uncore PMUs), enabled around a region, and read back as a [`CounterReport`].

use super::events::{default_events, EventGroup, EventSource, EventSpec, Scope};
use super::report::{CounterReport, EventReading, Events, Reading};
use super::sys::{self, Sample};
use crate::harness::topology::CpuModel;
use std::time::Instant;

/// Open counters over a pool's workers, ready to measure regions.
pub struct CounterSet {
    specs: Vec<EventSpec>,
    slots: Vec<Slot>,
    threads: usize,
    paranoid: Option<i32>,
}

enum Slot {
    Open {
        counters: Vec<sys::Handle>,
        note: Option<String>,
    },
    Unavailable(String),
}

/// A counter opened in a worker (with a note on how), or why it could not be.
type Opened = std::result::Result<(sys::Handle, Option<String>), String>;

impl CounterSet {
    /// Opens [`default_events`] for this CPU on every worker of `pool`.
    pub fn open_default(pool: &rayon::ThreadPool) -> CounterSet {
        CounterSet::open(pool, default_events(&CpuModel::detect()))
    }

    /// Opens `specs` on every worker of `pool` (per-thread events) and on the uncore PMUs
    /// (system-wide events). Failures become `unavailable` readings.
    pub fn open(pool: &rayon::ThreadPool, specs: Vec<EventSpec>) -> CounterSet {
        let threads = pool.current_num_threads();
        let ctx = sys::Context::detect();
        let per_thread = specs.iter().filter(|s| s.scope() == Scope::Threads).count();
        sys::ensure_fd_limit(threads * per_thread + 64);
        // Each worker opens its own counters: they follow that thread only.
        let opened: Vec<Vec<Option<Opened>>> = pool.broadcast(|_| {
            specs
                .iter()
                .map(|s| match &s.source {
                    EventSource::Hardware(_) | EventSource::Software(_) | EventSource::Raw(_) => {
                        Some(sys::open_thread(s, &ctx))
                    }
                    _ => None,
                })
                .collect()
        });
        let mut per_event: Vec<Vec<_>> = specs.iter().map(|_| Vec::new()).collect();
        for worker in opened {
            for (i, r) in worker.into_iter().enumerate() {
                if let Some(r) = r {
                    per_event[i].push(r);
                }
            }
        }
        let slots = specs
            .iter()
            .zip(per_event)
            .map(|(spec, results)| match &spec.source {
                EventSource::Missing(why) => Slot::Unavailable(why.clone()),
                EventSource::Uncore { pmus, event } => {
                    match sys::open_uncore(pmus, event, &spec.name, &ctx) {
                        Ok(counters) => Slot::Open {
                            counters,
                            note: None,
                        },
                        Err(e) => Slot::Unavailable(e),
                    }
                }
                _ => {
                    let mut counters = Vec::with_capacity(results.len());
                    let mut note = None;
                    for r in results {
                        match r {
                            Ok((c, n)) => {
                                counters.push(c);
                                note = note.or(n);
                            }
                            // One reason per event, even if every worker failed.
                            Err(e) => return Slot::Unavailable(e),
                        }
                    }
                    Slot::Open { counters, note }
                }
            })
            .collect();
        CounterSet {
            specs,
            slots,
            threads,
            paranoid: ctx.paranoid,
        }
    }

    pub fn specs(&self) -> &[EventSpec] {
        &self.specs
    }

    /// Whether any event of `group` could be opened.
    pub fn any_open(&self, group: EventGroup) -> bool {
        self.specs
            .iter()
            .zip(&self.slots)
            .any(|(s, slot)| s.group == group && matches!(slot, Slot::Open { .. }))
    }

    fn sample_all(&mut self) -> Vec<Option<Vec<Sample>>> {
        self.slots
            .iter_mut()
            .map(|slot| match slot {
                Slot::Open { counters, .. } => counters
                    .iter_mut()
                    .map(sys::read)
                    .collect::<std::io::Result<Vec<_>>>()
                    .ok(),
                Slot::Unavailable(_) => None,
            })
            .collect()
    }

    fn set_enabled(&mut self, on: bool) {
        for slot in &mut self.slots {
            if let Slot::Open { counters, .. } = slot {
                for c in counters {
                    // A failed enable shows as zero enabled time, which reads as unavailable.
                    let _ = if on { sys::enable(c) } else { sys::disable(c) };
                }
            }
        }
    }

    /// Runs `f` with every counter enabled and reports each event's change over it.
    pub fn measure<R>(&mut self, f: impl FnOnce() -> R) -> (R, CounterReport) {
        let before = self.sample_all();
        self.set_enabled(true);
        let start = Instant::now();
        let r = f();
        let wall_s = start.elapsed().as_secs_f64();
        self.set_enabled(false);
        let after = self.sample_all();
        let events = self
            .specs
            .iter()
            .zip(&self.slots)
            .zip(before.into_iter().zip(after))
            .map(|((spec, slot), (b, a))| {
                let (reading, note) = match (slot, b, a) {
                    (Slot::Unavailable(why), _, _) => (
                        Reading::Unavailable {
                            reason: why.clone(),
                        },
                        None,
                    ),
                    (Slot::Open { note, .. }, Some(b), Some(a)) => {
                        let (reading, idle) = delta(&b, &a);
                        let note = match (note.clone(), idle) {
                            (n, 0) => n,
                            (n, k) => Some(
                                n.into_iter()
                                    .chain([format!(
                                        "not scheduled on the PMU on {k} of {} counters",
                                        b.len()
                                    )])
                                    .collect::<Vec<_>>()
                                    .join("; "),
                            ),
                        };
                        (reading, note)
                    }
                    (Slot::Open { .. }, _, _) => (
                        Reading::Unavailable {
                            reason: "reading the counter failed".into(),
                        },
                        None,
                    ),
                };
                EventReading {
                    name: spec.name.clone(),
                    group: spec.group,
                    scope: spec.scope(),
                    weight: spec.weight,
                    reading,
                    note,
                }
            })
            .collect();
        let report = CounterReport {
            wall_s,
            threads: self.threads,
            perf_event_paranoid: self.paranoid,
            events: Events(events),
        };
        (r, report)
    }
}

/// Sums the per-counter changes, each scaled for multiplexing; also returns how many counters
/// were enabled but never ran.
fn delta(before: &[Sample], after: &[Sample]) -> (Reading, usize) {
    let (mut raw, mut scaled, mut en, mut run, mut idle) = (0u64, 0.0, 0u64, 0u64, 0usize);
    for (&(c0, e0, r0), &(c1, e1, r1)) in before.iter().zip(after) {
        let (dc, de, dr) = (
            c1.saturating_sub(c0),
            e1.saturating_sub(e0),
            r1.saturating_sub(r0),
        );
        raw += dc;
        en += de;
        run += dr;
        if dr > 0 {
            scaled += dc as f64 * de as f64 / dr as f64;
        } else if de > 0 {
            idle += 1;
        }
    }
    (
        Reading::Value {
            raw,
            scaled,
            enabled_ns: en,
            running_ns: run,
        },
        idle,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_scale_for_multiplexing() {
        // Counter 1 ran half the time: its 100 counts scale to 200.
        let (r, idle) = delta(&[(0, 0, 0), (10, 10, 10)], &[(100, 100, 50), (20, 20, 20)]);
        assert_eq!(idle, 0);
        assert_eq!(
            r,
            Reading::Value {
                raw: 110,
                scaled: 210.0,
                enabled_ns: 110,
                running_ns: 60
            }
        );
        let (_, idle) = delta(&[(0, 0, 0)], &[(0, 10, 0)]);
        assert_eq!(idle, 1);
    }
}
