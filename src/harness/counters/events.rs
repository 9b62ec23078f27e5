//! The events a [`super::CounterSet`] can count: their groups, scopes and sources, and the
//! default set for a CPU (portable hardware events, the vendor's raw flop events, uncore DRAM
//! events where the kernel exposes them, and software events).

use crate::harness::topology::CpuModel;
use serde::Serialize;
use std::path::Path;

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
    pub(super) fn label(self) -> &'static str {
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

pub(super) const PMU_ROOT: &str = "/sys/bus/event_source/devices";

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
}
