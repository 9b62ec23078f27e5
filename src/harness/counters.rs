//! Hardware and software event counts of a region, summed over every worker of a pool, through
//! Linux `perf_event_open` (the `perf-event2` crate).
//!
//! [`CounterSet::open`] opens one counter per event inside every pool worker (a broadcast, so
//! each counter follows exactly one worker thread) plus system-wide uncore counters where the
//! kernel exposes them; [`CounterSet::measure`] enables them around a closure and reports each
//! event's change over it: a value scaled for multiplexing (`raw * enabled / running`, per
//! counter, then summed), or `unavailable` with the reason. Nothing here fails or panics
//! because of a missing PMU, a permission or an unknown event: those become reasons.
//!
//! Event sets ([`default_events`]):
//! - hardware (portable perf events, user space only): cycles, instructions, cache-references,
//!   cache-misses, branch-misses;
//! - flops (raw vendor events, SPEC section 11): Intel `FP_ARITH_INST_RETIRED` (0xC7; umasks
//!   0x01, 0x04, 0x10, 0x40 weighted 1, 2, 4, 8 doubles), AMD Zen 3 and later
//!   `RETIRED_SSE_AVX_FLOPS` (0x03, all umasks; counts flops of every precision directly);
//! - DRAM (system-wide): the uncore memory controllers' `cas_count_read` / `cas_count_write`
//!   (64 bytes each) where the kernel exposes `uncore_imc_*` PMUs;
//! - software (kernel counting on where permitted): task-clock, page-faults, context-switches.
//!
//! [`CounterReport::derive`] turns them into IPC, flops, GFLOP/s, bytes and operational
//! intensity, falling back to the analytic model of [`crate::harness::model`] (labelled as a model).

use crate::harness::model::Traffic;
use crate::harness::topology::CpuModel;
use serde::ser::SerializeMap;
use serde::Serialize;
use std::fmt::Write;
use std::path::Path;
use std::time::Instant;

/// Where an event belongs in reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EventGroup {
    Hardware,
    Flops,
    Dram,
    Software,
}

impl EventGroup {
    fn label(self) -> &'static str {
        match self {
            EventGroup::Hardware => "hardware counters",
            EventGroup::Flops => "flop counters",
            EventGroup::Dram => "DRAM counters",
            EventGroup::Software => "software counters",
        }
    }
}

/// Whose activity an event counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// Each pool worker's own, summed.
    Threads,
    /// The whole machine (uncore): other processes' traffic included.
    System,
}

/// Portable hardware events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HwEvent {
    Cycles,
    Instructions,
    CacheReferences,
    CacheMisses,
    BranchMisses,
}

/// Kernel software events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SwEvent {
    TaskClock,
    PageFaults,
    ContextSwitches,
}

/// How an event is opened.
#[derive(Clone, Debug, PartialEq)]
pub enum EventSource {
    Hardware(HwEvent),
    Software(SwEvent),
    /// A raw event of the core PMU: `event | umask << 8`.
    Raw(u64),
    /// A named event of sysfs PMUs (`/sys/bus/event_source/devices/<pmu>/events/<event>`),
    /// counted system-wide on each PMU's `cpumask` CPUs and summed over the PMUs.
    Uncore {
        pmus: Vec<String>,
        event: String,
    },
    /// Not available on this machine, and why.
    Missing(String),
}

/// One event to count.
#[derive(Clone, Debug, PartialEq)]
pub struct EventSpec {
    /// A perf-style name: `cycles`, `fp_arith_inst_retired.scalar_double`, `task-clock`.
    pub name: String,
    pub group: EventGroup,
    /// What one count is worth to derived metrics: flops per count (flop events), bytes per
    /// count (DRAM events); 1 otherwise.
    pub weight: f64,
    pub source: EventSource,
}

impl EventSpec {
    fn new(name: &str, group: EventGroup, weight: f64, source: EventSource) -> Self {
        EventSpec {
            name: name.to_string(),
            group,
            weight,
            source,
        }
    }

    pub fn scope(&self) -> Scope {
        match self.source {
            EventSource::Uncore { .. } => Scope::System,
            _ => Scope::Threads,
        }
    }
}

/// Event names.
pub const CYCLES: &str = "cycles";
pub const INSTRUCTIONS: &str = "instructions";
pub const TASK_CLOCK: &str = "task-clock";

const PMU_ROOT: &str = "/sys/bus/event_source/devices";

const HW_EVENTS: [(&str, HwEvent); 5] = [
    (CYCLES, HwEvent::Cycles),
    (INSTRUCTIONS, HwEvent::Instructions),
    ("cache-references", HwEvent::CacheReferences),
    ("cache-misses", HwEvent::CacheMisses),
    ("branch-misses", HwEvent::BranchMisses),
];

const SW_EVENTS: [(&str, SwEvent); 3] = [
    (TASK_CLOCK, SwEvent::TaskClock),
    ("page-faults", SwEvent::PageFaults),
    ("context-switches", SwEvent::ContextSwitches),
];

/// The default event set for `cpu`, with uncore PMUs looked up under
/// `/sys/bus/event_source/devices`.
pub fn default_events(cpu: &CpuModel) -> Vec<EventSpec> {
    default_events_at(cpu, Path::new(PMU_ROOT))
}

/// [`default_events`] with the PMU directory given (for tests).
pub fn default_events_at(cpu: &CpuModel, pmu_root: &Path) -> Vec<EventSpec> {
    use EventGroup::*;
    let mut v: Vec<EventSpec> = HW_EVENTS
        .iter()
        .map(|&(name, e)| EventSpec::new(name, Hardware, 1.0, EventSource::Hardware(e)))
        .collect();
    // Double-precision flops.
    if cpu.is_intel() {
        for (suffix, umask, weight) in [
            ("scalar_double", 0x01u64, 1.0),
            ("128b_packed_double", 0x04, 2.0),
            ("256b_packed_double", 0x10, 4.0),
            ("512b_packed_double", 0x40, 8.0),
        ] {
            v.push(EventSpec::new(
                &format!("fp_arith_inst_retired.{suffix}"),
                Flops,
                weight,
                EventSource::Raw(0xC7 | umask << 8),
            ));
        }
    } else if cpu.is_amd() && cpu.family >= 0x19 {
        v.push(EventSpec::new(
            "fp_ret_sse_avx_ops.all",
            Flops,
            1.0,
            EventSource::Raw(0x03 | 0xFF << 8),
        ));
    } else {
        v.push(EventSpec::new(
            "flops",
            Flops,
            1.0,
            EventSource::Missing(format!(
                "unknown on this CPU: no flop event known for {} family {:#x}",
                if cpu.vendor.is_empty() {
                    "an unidentified vendor"
                } else {
                    &cpu.vendor
                },
                cpu.family
            )),
        ));
    }
    // DRAM traffic through uncore memory controllers.
    let imcs = uncore_pmus_with(
        pmu_root,
        "uncore_imc",
        &["cas_count_read", "cas_count_write"],
    );
    if !imcs.is_empty() {
        for event in ["cas_count_read", "cas_count_write"] {
            v.push(EventSpec::new(
                &format!("dram.{event}"),
                Dram,
                64.0,
                EventSource::Uncore {
                    pmus: imcs.clone(),
                    event: event.to_string(),
                },
            ));
        }
    } else {
        let why = if cpu.is_amd() {
            "unknown on this CPU: AMD DRAM traffic needs data-fabric events (likwid's zen3 MEM \
             group), which are not implemented"
                .to_string()
        } else {
            format!(
                "the kernel exposes no uncore memory-controller PMU (no uncore_imc_* with \
                 cas_count_read/write in {})",
                pmu_root.display()
            )
        };
        v.push(EventSpec::new(
            "dram.cas_count",
            Dram,
            64.0,
            EventSource::Missing(why),
        ));
    }
    v.extend(
        SW_EVENTS
            .iter()
            .map(|&(name, e)| EventSpec::new(name, Software, 1.0, EventSource::Software(e))),
    );
    v
}

/// PMUs named `<prefix>*` under `root` that define every event in `events`, sorted.
fn uncore_pmus_with(root: &Path, prefix: &str, events: &[&str]) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut v: Vec<String> = entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(prefix))
        .filter(|n| {
            events
                .iter()
                .all(|ev| root.join(n).join("events").join(ev).is_file())
        })
        .collect();
    v.sort();
    v
}

/// `/proc/sys/kernel/perf_event_paranoid`.
pub fn perf_event_paranoid() -> Option<i32> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()?
        .trim()
        .parse()
        .ok()
}

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

/// (count, enabled ns, running ns) of one counter.
type Sample = (u64, u64, u64);

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

#[cfg(target_os = "linux")]
mod sys {
    use super::{EventSource, EventSpec, HwEvent, Sample, SwEvent};
    use crate::harness::topology::CpuModel;
    use perf_event::events::{Dynamic, Hardware, Raw, Software};
    use perf_event::Builder;
    use std::io;

    pub type Handle = perf_event::Counter;

    /// What error messages need to know.
    pub struct Context {
        pub paranoid: Option<i32>,
        pub in_vm: bool,
    }

    impl Context {
        pub fn detect() -> Context {
            Context {
                paranoid: super::perf_event_paranoid(),
                in_vm: CpuModel::detect().in_vm(),
            }
        }
    }

    fn errno_name(e: i32) -> &'static str {
        match e {
            libc::ENOENT => "ENOENT",
            libc::EACCES => "EACCES",
            libc::EPERM => "EPERM",
            libc::ENODEV => "ENODEV",
            libc::EOPNOTSUPP => "EOPNOTSUPP",
            libc::EINVAL => "EINVAL",
            libc::ENOSYS => "ENOSYS",
            libc::EMFILE => "EMFILE",
            libc::EBUSY => "EBUSY",
            _ => "error",
        }
    }

    /// Why opening `event` failed, in words.
    pub fn reason(err: &io::Error, event: &str, ctx: &Context) -> String {
        let Some(code) = err.raw_os_error() else {
            return format!("{err} (opening {event})");
        };
        let name = errno_name(code);
        match code {
            libc::ENOENT if ctx.in_vm => format!("no PMU in this VM ({name} opening {event})"),
            libc::ENOENT => format!("no PMU support for this event ({name} opening {event})"),
            libc::EACCES | libc::EPERM => format!(
                "not permitted ({name} opening {event}; perf_event_paranoid = {})",
                ctx.paranoid
                    .map_or_else(|| "unknown".to_string(), |p| p.to_string())
            ),
            libc::ENODEV | libc::EOPNOTSUPP | libc::EINVAL => {
                format!("unknown on this CPU ({name} opening {event})")
            }
            libc::ENOSYS => format!("perf_event_open is not available ({name} opening {event})"),
            libc::EMFILE => {
                format!("too many open files ({name} opening {event}): raise ulimit -n")
            }
            _ => format!("{err} ({name} opening {event})"),
        }
    }

    fn denied(e: &io::Error) -> bool {
        matches!(e.raw_os_error(), Some(libc::EACCES) | Some(libc::EPERM))
    }

    /// Opens `spec` on the calling thread; the note says when it fell back to user space only.
    pub fn open_thread(
        spec: &EventSpec,
        ctx: &Context,
    ) -> std::result::Result<(Handle, Option<String>), String> {
        let mut b = match &spec.source {
            EventSource::Hardware(h) => Builder::new(match h {
                HwEvent::Cycles => Hardware::CPU_CYCLES,
                HwEvent::Instructions => Hardware::INSTRUCTIONS,
                HwEvent::CacheReferences => Hardware::CACHE_REFERENCES,
                HwEvent::CacheMisses => Hardware::CACHE_MISSES,
                HwEvent::BranchMisses => Hardware::BRANCH_MISSES,
            }),
            EventSource::Raw(config) => Builder::new(Raw::new(*config)),
            EventSource::Software(s) => Builder::new(match s {
                SwEvent::TaskClock => Software::TASK_CLOCK,
                SwEvent::PageFaults => Software::PAGE_FAULTS,
                SwEvent::ContextSwitches => Software::CONTEXT_SWITCHES,
            }),
            _ => return Err(format!("{} is not a per-thread event", spec.name)),
        };
        // Builder's defaults: this thread, any CPU, disabled, user space only, with the
        // enabled/running times read back.
        if let EventSource::Software(_) = spec.source {
            b.include_kernel();
            match b.build() {
                Ok(c) => return Ok((c, None)),
                Err(e) if denied(&e) => {
                    b.exclude_kernel(true);
                    return b
                        .build()
                        .map(|c| {
                            let note = format!(
                                "user space only: kernel counting not permitted \
                                 (perf_event_paranoid = {})",
                                ctx.paranoid
                                    .map_or_else(|| "unknown".to_string(), |p| p.to_string())
                            );
                            (c, Some(note))
                        })
                        .map_err(|e| reason(&e, &spec.name, ctx));
                }
                Err(e) => return Err(reason(&e, &spec.name, ctx)),
            }
        }
        b.build()
            .map(|c| (c, None))
            .map_err(|e| reason(&e, &spec.name, ctx))
    }

    /// Opens `event` of every PMU in `pmus` on each CPU of its `cpumask`, system-wide.
    pub fn open_uncore(
        pmus: &[String],
        event: &str,
        name: &str,
        ctx: &Context,
    ) -> std::result::Result<Vec<Handle>, String> {
        let mut counters = Vec::new();
        for pmu in pmus {
            let mut builder = Dynamic::builder(pmu).map_err(|e| format!("{pmu}: {e}"))?;
            builder
                .event(event)
                .map_err(|e| format!("{pmu}/{event}: {e}"))?;
            let dynamic = builder.build().map_err(|e| format!("{pmu}/{event}: {e}"))?;
            let mask = std::fs::read_to_string(format!("{}/{pmu}/cpumask", super::PMU_ROOT))
                .ok()
                .and_then(|s| crate::harness::affinity::parse_cpu_list(&s))
                .filter(|v| !v.is_empty())
                .unwrap_or_else(|| vec![0]);
            for cpu in mask {
                let c = Builder::new(dynamic)
                    .any_pid()
                    .one_cpu(cpu)
                    .exclude_kernel(false)
                    .exclude_hv(false)
                    .build()
                    .map_err(|e| reason(&e, &format!("{name} ({pmu})"), ctx))?;
                counters.push(c);
            }
        }
        Ok(counters)
    }

    pub fn read(c: &mut Handle) -> io::Result<Sample> {
        let r = c.read_count_and_time()?;
        Ok((r.count, r.time_enabled, r.time_running))
    }

    pub fn enable(c: &mut Handle) -> io::Result<()> {
        c.enable()
    }

    pub fn disable(c: &mut Handle) -> io::Result<()> {
        c.disable()
    }

    /// Raises the soft open-file limit towards `needed` (within the hard limit): every worker
    /// holds one descriptor per event.
    pub fn ensure_fd_limit(needed: usize) {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes one `rlimit` into `lim`.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
            return;
        }
        // Leave room for the descriptors the process already holds (assumed within half the
        // current limit).
        let needed = needed as libc::rlim_t + lim.rlim_cur / 2;
        if lim.rlim_cur >= needed {
            return;
        }
        lim.rlim_cur = needed.min(lim.rlim_max);
        // SAFETY: setrlimit reads one `rlimit`; failing leaves the limit as it was.
        unsafe {
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod sys {
    use super::{EventSpec, Sample};
    use std::io;

    pub enum Handle {}

    pub struct Context {
        pub paranoid: Option<i32>,
    }

    impl Context {
        pub fn detect() -> Context {
            Context { paranoid: None }
        }
    }

    const WHY: &str = "perf_event counters are implemented for Linux only";

    pub fn open_thread(
        _spec: &EventSpec,
        _ctx: &Context,
    ) -> std::result::Result<(Handle, Option<String>), String> {
        Err(WHY.into())
    }

    pub fn open_uncore(
        _pmus: &[String],
        _event: &str,
        _name: &str,
        _ctx: &Context,
    ) -> std::result::Result<Vec<Handle>, String> {
        Err(WHY.into())
    }

    pub fn read(c: &mut Handle) -> io::Result<Sample> {
        match *c {}
    }

    pub fn enable(c: &mut Handle) -> io::Result<()> {
        match *c {}
    }

    pub fn disable(c: &mut Handle) -> io::Result<()> {
        match *c {}
    }

    pub fn ensure_fd_limit(_needed: usize) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu(vendor: &str, family: u32) -> CpuModel {
        CpuModel {
            vendor: vendor.into(),
            family,
            ..Default::default()
        }
    }

    #[test]
    fn event_sets_follow_the_vendor() {
        let empty = tempfile::tempdir().unwrap();
        let intel = default_events_at(&cpu("GenuineIntel", 6), empty.path());
        let flops: Vec<&EventSpec> = intel
            .iter()
            .filter(|e| e.group == EventGroup::Flops)
            .collect();
        assert_eq!(flops.len(), 4);
        assert_eq!(flops[0].source, EventSource::Raw(0x01C7));
        assert_eq!(flops[3].source, EventSource::Raw(0x40C7));
        assert_eq!(
            flops.iter().map(|e| e.weight).collect::<Vec<_>>(),
            vec![1.0, 2.0, 4.0, 8.0]
        );
        let amd = default_events_at(&cpu("AuthenticAMD", 0x19), empty.path());
        let f: Vec<&EventSpec> = amd
            .iter()
            .filter(|e| e.group == EventGroup::Flops)
            .collect();
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].source, EventSource::Raw(0xFF03));
        let other = default_events_at(&cpu("", 0), empty.path());
        assert!(other
            .iter()
            .any(|e| e.group == EventGroup::Flops && matches!(e.source, EventSource::Missing(_))));
        // No uncore PMU: DRAM is missing with a reason; software and hardware are always listed.
        for set in [&intel, &amd, &other] {
            assert!(set.iter().any(
                |e| e.group == EventGroup::Dram && matches!(e.source, EventSource::Missing(_))
            ));
            assert_eq!(
                set.iter()
                    .filter(|e| e.group == EventGroup::Software)
                    .count(),
                3
            );
            assert_eq!(
                set.iter()
                    .filter(|e| e.group == EventGroup::Hardware)
                    .count(),
                5
            );
        }
    }

    #[test]
    fn uncore_imc_is_found_in_sysfs() {
        let root = tempfile::tempdir().unwrap();
        for pmu in ["uncore_imc_0", "uncore_imc_1", "uncore_cha_0"] {
            let ev = root.path().join(pmu).join("events");
            std::fs::create_dir_all(&ev).unwrap();
            if pmu.starts_with("uncore_imc") {
                std::fs::write(ev.join("cas_count_read"), "event=0x04,umask=0x03\n").unwrap();
                std::fs::write(ev.join("cas_count_write"), "event=0x04,umask=0x0c\n").unwrap();
            }
        }
        let set = default_events_at(&cpu("GenuineIntel", 6), root.path());
        let dram: Vec<&EventSpec> = set.iter().filter(|e| e.group == EventGroup::Dram).collect();
        assert_eq!(dram.len(), 2);
        assert_eq!(dram[0].scope(), Scope::System);
        assert_eq!(dram[0].weight, 64.0);
        assert_eq!(
            dram[0].source,
            EventSource::Uncore {
                pmus: vec!["uncore_imc_0".into(), "uncore_imc_1".into()],
                event: "cas_count_read".into()
            }
        );
    }

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
