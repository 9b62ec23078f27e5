//! What a measurement reports: each event's reading (a multiplexing-scaled value or the
//! reason it is unavailable), and the metrics derived from them (IPC, flops, GFLOP/s, bytes,
//! operational intensity), falling back to the traffic model where counters are missing.

use super::events::{EventGroup, Scope, CYCLES, INSTRUCTIONS, TASK_CLOCK};
use crate::harness::model::Traffic;
use serde::ser::SerializeMap;
use serde::Serialize;
use std::fmt::Write;

/// One event's change over a region.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Reading {
    Value {
        /// Sum of the counts.
        raw: u64,
        /// Sum over counters of `count * enabled / running` (equal to `raw` without
        /// multiplexing).
        scaled: f64,
        /// Sum over counters of the time enabled (for per-thread events: while the thread ran).
        enabled_ns: u64,
        /// Sum over counters of the time actually counting.
        running_ns: u64,
    },
    Unavailable {
        reason: String,
    },
}

/// One event in a [`CounterReport`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EventReading {
    #[serde(skip)]
    pub name: String,
    pub group: EventGroup,
    pub scope: Scope,
    /// What one count is worth to derived metrics (flops or bytes per count).
    pub weight: f64,
    #[serde(flatten)]
    pub reading: Reading,
    /// A caveat: counted in user space only, not scheduled on some workers, ...
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl EventReading {
    /// The scaled value, when available.
    pub fn scaled(&self) -> Option<f64> {
        match self.reading {
            Reading::Value { scaled, .. } => Some(scaled),
            Reading::Unavailable { .. } => None,
        }
    }
    pub fn reason(&self) -> Option<&str> {
        match &self.reading {
            Reading::Value { .. } => None,
            Reading::Unavailable { reason } => Some(reason),
        }
    }
}

/// The events of a report, serialized as a JSON object keyed by event name (in set order).
#[derive(Clone, Debug, PartialEq)]
pub struct Events(pub Vec<EventReading>);

impl Serialize for Events {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for e in &self.0 {
            m.serialize_entry(&e.name, e)?;
        }
        m.end()
    }
}

/// Every event's change over one measured region.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CounterReport {
    /// Wall time of the region.
    pub wall_s: f64,
    /// Pool workers the per-thread events were summed over.
    pub threads: usize,
    pub perf_event_paranoid: Option<i32>,
    pub events: Events,
}

/// A derived quantity: measured, modelled (best/worst case), or neither.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(tag = "source", rename_all = "snake_case")]
pub enum Quantity {
    Counters { value: f64 },
    Model { best: f64, worst: f64 },
    Unavailable,
}

impl Quantity {
    fn render(&self, digits: usize, unit: &str) -> String {
        match *self {
            Quantity::Counters { value } => format!("{value:.digits$}{unit} (counters)"),
            Quantity::Model { best, worst } if best == worst => {
                format!("{best:.digits$}{unit} (model)")
            }
            Quantity::Model { best, worst } => format!(
                "model {best:.digits$}{unit} (best case) to {worst:.digits$}{unit} (worst case)"
            ),
            Quantity::Unavailable => "unavailable".into(),
        }
    }
}

/// Metrics derived from a report (and the analytic model where counters are missing).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Derived {
    /// instructions / cycles; `None` where either is unavailable.
    pub ipc: Option<f64>,
    pub flops: Quantity,
    /// flops / wall time.
    pub gflops: Quantity,
    pub bytes: Quantity,
    /// flops / bytes (flop/byte): `counters` only when both are measured.
    pub intensity: Quantity,
}

impl CounterReport {
    pub fn event(&self, name: &str) -> Option<&EventReading> {
        self.events.0.iter().find(|e| e.name == name)
    }

    /// Weighted sum of a group's scaled values, if every event of the group is available.
    fn group_total(&self, group: EventGroup) -> Option<f64> {
        let mut total = 0.0;
        let mut any = false;
        for e in self.events.0.iter().filter(|e| e.group == group) {
            total += e.scaled()? * e.weight;
            any = true;
        }
        any.then_some(total)
    }

    /// IPC, flops, GFLOP/s, bytes and intensity from the counters, else from `model` (the
    /// modelled traffic of the whole region).
    pub fn derive(&self, model: Option<&Traffic>) -> Derived {
        let ipc = match (
            self.event(INSTRUCTIONS).and_then(|e| e.scaled()),
            self.event(CYCLES).and_then(|e| e.scaled()),
        ) {
            (Some(i), Some(c)) if c > 0.0 => Some(i / c),
            _ => None,
        };
        let flops = match (self.group_total(EventGroup::Flops), model) {
            (Some(f), _) => Quantity::Counters { value: f },
            (None, Some(m)) => Quantity::Model {
                best: m.flops,
                worst: m.flops,
            },
            (None, None) => Quantity::Unavailable,
        };
        let bytes = match (self.group_total(EventGroup::Dram), model) {
            (Some(b), _) => Quantity::Counters { value: b },
            (None, Some(m)) => Quantity::Model {
                best: m.bytes_best,
                worst: m.bytes_worst,
            },
            (None, None) => Quantity::Unavailable,
        };
        let per_s = |q: Quantity| match q {
            _ if self.wall_s <= 0.0 => Quantity::Unavailable,
            Quantity::Counters { value } => Quantity::Counters {
                value: value / self.wall_s / 1e9,
            },
            Quantity::Model { best, worst } => Quantity::Model {
                best: best / self.wall_s / 1e9,
                worst: worst / self.wall_s / 1e9,
            },
            Quantity::Unavailable => Quantity::Unavailable,
        };
        let intensity = match (flops, bytes) {
            (Quantity::Counters { value: f }, Quantity::Counters { value: b }) if b > 0.0 => {
                Quantity::Counters { value: f / b }
            }
            (
                Quantity::Counters { value: f } | Quantity::Model { best: f, .. },
                Quantity::Model { best, worst },
            ) => Quantity::Model {
                best: f / best,
                worst: f / worst,
            },
            (Quantity::Model { best: f, .. }, Quantity::Counters { value: b }) if b > 0.0 => {
                Quantity::Model {
                    best: f / b,
                    worst: f / b,
                }
            }
            _ => Quantity::Unavailable,
        };
        Derived {
            ipc,
            flops,
            gflops: per_s(flops),
            bytes,
            intensity,
        }
    }

    /// Lines for people: one per group whose events are all unavailable (e.g. "hardware
    /// counters unavailable: no PMU in this VM (ENOENT opening cycles)"), then every available
    /// event, then the derived metrics. Each line starts with `indent`.
    pub fn render(&self, derived: &Derived, indent: &str) -> String {
        let mut s = String::new();
        for group in [
            EventGroup::Hardware,
            EventGroup::Flops,
            EventGroup::Dram,
            EventGroup::Software,
        ] {
            let events: Vec<&EventReading> =
                self.events.0.iter().filter(|e| e.group == group).collect();
            if events.is_empty() {
                continue;
            }
            if events.iter().all(|e| e.reason().is_some()) {
                let _ = writeln!(
                    s,
                    "{indent}{} unavailable: {}",
                    group.label(),
                    events[0].reason().unwrap_or_default()
                );
                continue;
            }
            for e in events {
                let _ = match &e.reading {
                    Reading::Unavailable { reason } => {
                        writeln!(s, "{indent}{:<38} unavailable: {reason}", e.name)
                    }
                    Reading::Value {
                        scaled,
                        enabled_ns,
                        running_ns,
                        ..
                    } => {
                        let value = if e.name == TASK_CLOCK {
                            let cpus = if self.wall_s > 0.0 {
                                scaled / 1e9 / self.wall_s
                            } else {
                                0.0
                            };
                            format!("{:.3} ms ({cpus:.2} CPUs busy)", scaled / 1e6)
                        } else {
                            format!("{scaled:.0}")
                        };
                        let mux = if running_ns < enabled_ns && *enabled_ns > 0 {
                            format!(
                                " (scaled: counted {:.0}% of the time)",
                                100.0 * *running_ns as f64 / *enabled_ns as f64
                            )
                        } else {
                            String::new()
                        };
                        let note = e
                            .note
                            .as_deref()
                            .map_or(String::new(), |n| format!(" [{n}]"));
                        writeln!(s, "{indent}{:<38} {value}{mux}{note}", e.name)
                    }
                };
            }
        }
        if let Some(ipc) = derived.ipc {
            let _ = writeln!(s, "{indent}{:<38} {ipc:.2}", "IPC");
        }
        let gflops = match derived.gflops {
            Quantity::Model { best, .. } => format!("{best:.2} (model flops over measured time)"),
            q => q.render(2, ""),
        };
        let _ = writeln!(s, "{indent}{:<38} {gflops}", "GFLOP/s");
        let bytes_mb = |q: Quantity| match q {
            Quantity::Counters { value } => Quantity::Counters { value: value / 1e6 },
            Quantity::Model { best, worst } => Quantity::Model {
                best: best / 1e6,
                worst: worst / 1e6,
            },
            Quantity::Unavailable => Quantity::Unavailable,
        };
        let _ = writeln!(
            s,
            "{indent}{:<38} {}",
            "bytes moved",
            bytes_mb(derived.bytes).render(2, " MB")
        );
        let _ = writeln!(
            s,
            "{indent}{:<38} {}",
            "operational intensity",
            derived.intensity.render(3, " flop/B")
        );
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(name: &str, group: EventGroup, weight: f64, value: Option<f64>) -> EventReading {
        EventReading {
            name: name.into(),
            group,
            scope: Scope::Threads,
            weight,
            reading: match value {
                Some(v) => Reading::Value {
                    raw: v as u64,
                    scaled: v,
                    enabled_ns: 1,
                    running_ns: 1,
                },
                None => Reading::Unavailable {
                    reason: "no PMU in this VM (ENOENT opening cycles)".into(),
                },
            },
            note: None,
        }
    }

    #[test]
    fn derived_metrics_prefer_counters_then_the_model() {
        let model = Traffic {
            flops: 2e9,
            bytes_best: 1e9,
            bytes_worst: 4e9,
        };
        let measured = CounterReport {
            wall_s: 2.0,
            threads: 1,
            perf_event_paranoid: None,
            events: Events(vec![
                reading(CYCLES, EventGroup::Hardware, 1.0, Some(100.0)),
                reading(INSTRUCTIONS, EventGroup::Hardware, 1.0, Some(150.0)),
                reading("fp.a", EventGroup::Flops, 1.0, Some(1e9)),
                reading("fp.b", EventGroup::Flops, 8.0, Some(1e9)),
                reading("dram.r", EventGroup::Dram, 64.0, Some(1e7)),
                reading("dram.w", EventGroup::Dram, 64.0, Some(1e7)),
            ]),
        };
        let d = measured.derive(Some(&model));
        assert_eq!(d.ipc, Some(1.5));
        assert_eq!(d.flops, Quantity::Counters { value: 9e9 });
        assert_eq!(d.gflops, Quantity::Counters { value: 4.5 });
        assert_eq!(d.bytes, Quantity::Counters { value: 1.28e9 });
        assert_eq!(
            d.intensity,
            Quantity::Counters {
                value: 9e9 / 1.28e9
            }
        );

        let none = CounterReport {
            wall_s: 2.0,
            threads: 1,
            perf_event_paranoid: None,
            events: Events(vec![
                reading(CYCLES, EventGroup::Hardware, 1.0, None),
                reading("fp", EventGroup::Flops, 1.0, None),
                reading("dram", EventGroup::Dram, 64.0, None),
                reading(TASK_CLOCK, EventGroup::Software, 1.0, Some(4e9)),
            ]),
        };
        let d = none.derive(Some(&model));
        assert_eq!(d.ipc, None);
        assert_eq!(
            d.flops,
            Quantity::Model {
                best: 2e9,
                worst: 2e9
            }
        );
        assert_eq!(
            d.gflops,
            Quantity::Model {
                best: 1.0,
                worst: 1.0
            }
        );
        assert_eq!(
            d.intensity,
            Quantity::Model {
                best: 2.0,
                worst: 0.5
            }
        );
        assert_eq!(none.derive(None).bytes, Quantity::Unavailable);
        let text = none.render(&d, "  ");
        assert!(
            text.contains("hardware counters unavailable: no PMU in this VM"),
            "{text}"
        );
        assert!(text.contains("task-clock"), "{text}");
        assert!(text.contains("2.00 CPUs busy"), "{text}");
        assert!(text.contains("model"), "{text}");
        // JSON: events keyed by name, each with a status.
        let json = serde_json::to_value(&none).unwrap();
        assert_eq!(json["events"]["cycles"]["status"], "unavailable");
        assert_eq!(json["events"]["task-clock"]["status"], "value");
        assert_eq!(json["events"]["task-clock"]["scaled"], 4e9);
        let dj = serde_json::to_value(d).unwrap();
        assert_eq!(dj["intensity"]["source"], "model");
        assert_eq!(dj["intensity"]["worst"], 0.5);
    }
}
