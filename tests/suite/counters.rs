//! Counters over a pool: software events always count a busy region; hardware events either
//! give values or say why they are unavailable (never an error or a panic).

use alto::harness::counters::{
    default_events, CounterSet, EventGroup, EventSource, Reading, Scope, TASK_CLOCK,
};
use alto::harness::pool::{build_pinned_pool, PinPolicy};
use alto::harness::topology::CpuModel;
use std::time::{Duration, Instant};

/// Keeps every worker busy for about `ms` of wall time.
fn spin_all(pool: &rayon::ThreadPool, ms: u64) -> u64 {
    pool.broadcast(|_| {
        let start = Instant::now();
        let mut x = 0u64;
        while start.elapsed() < Duration::from_millis(ms) {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        x
    })
    .into_iter()
    .fold(0, u64::wrapping_add)
}

#[test]
fn software_events_count_a_busy_region_and_hardware_ones_say_why_not() {
    let (pool, _) = build_pinned_pool(2, PinPolicy::Compact).unwrap();
    let mut set = CounterSet::open_default(&pool);
    let (_, report) = set.measure(|| spin_all(&pool, 60));
    assert_eq!(report.threads, 2);
    assert!(report.wall_s >= 0.055, "{}", report.wall_s);
    let tc = report
        .event(TASK_CLOCK)
        .expect("task-clock is in the default set");
    match &tc.reading {
        Reading::Value {
            raw,
            scaled,
            enabled_ns,
            ..
        } => {
            assert!(*raw > 0 && *scaled > 0.0 && *enabled_ns > 0, "{tc:?}");
            // CPU time of 2 workers cannot exceed 2 x the wall time (plus slack).
            assert!(
                *scaled <= 2.0 * report.wall_s * 1e9 * 1.1 + 5e6,
                "{tc:?} {}",
                report.wall_s
            );
            // ... and a busy region uses a good share of at least one CPU, even on a shared machine.
            assert!(
                *scaled >= 0.2 * report.wall_s * 1e9,
                "{tc:?} {}",
                report.wall_s
            );
        }
        Reading::Unavailable { reason } => panic!("task-clock unavailable: {reason}"),
    }
    for name in ["page-faults", "context-switches"] {
        let e = report.event(name).unwrap();
        assert!(e.scaled().is_some(), "{name}: {:?}", e.reading);
    }
    for e in &report.events.0 {
        match &e.reading {
            Reading::Value { .. } => {}
            Reading::Unavailable { reason } => {
                assert!(
                    !reason.is_empty(),
                    "{} unavailable without a reason",
                    e.name
                );
                assert_ne!(e.group, EventGroup::Software, "{}: {reason}", e.name);
            }
        }
    }
    // Derived metrics exist in every case; without flop counters they are labelled a model.
    let d = report.derive(None);
    if set.any_open(EventGroup::Flops) {
        assert!(matches!(
            d.flops,
            alto::harness::counters::Quantity::Counters { .. }
        ));
    } else {
        assert_eq!(d.flops, alto::harness::counters::Quantity::Unavailable);
    }
    // Measuring again reports only the new region.
    let (_, idle) = set.measure(|| std::thread::sleep(Duration::from_millis(5)));
    let busy = report.event(TASK_CLOCK).unwrap().scaled().unwrap();
    let quiet = idle.event(TASK_CLOCK).unwrap().scaled().unwrap();
    assert!(quiet < busy / 4.0, "idle {quiet} vs busy {busy}");
}

#[test]
fn cycles_give_a_value_or_a_plain_reason() {
    let pool = alto::harness::pool::build_pool(1).unwrap();
    let mut set = CounterSet::open_default(&pool);
    let (_, report) = set.measure(|| spin_all(&pool, 10));
    let cycles = report.event("cycles").unwrap();
    match &cycles.reading {
        Reading::Value { raw, .. } => assert!(*raw > 0),
        Reading::Unavailable { reason } => {
            // ENOENT (no PMU), EACCES/EPERM (with the paranoid level), or an unknown event.
            assert!(
                reason.contains("ENOENT")
                    || reason.contains("not permitted")
                    || reason.contains("unknown on this CPU")
                    || reason.contains("EOPNOTSUPP"),
                "{reason}"
            );
            if reason.contains("not permitted") {
                assert!(reason.contains("perf_event_paranoid"), "{reason}");
            }
            if CpuModel::detect().in_vm() && reason.contains("ENOENT") {
                assert!(reason.contains("no PMU in this VM"), "{reason}");
            }
        }
    }
    // JSON: every event keyed by name with a status.
    let json = serde_json::to_value(&report).unwrap();
    for e in &report.events.0 {
        let status = &json["events"][&e.name]["status"];
        assert!(
            status == "value" || status == "unavailable",
            "{}: {status}",
            e.name
        );
    }
}

#[test]
fn an_event_unknown_here_is_reported_with_its_reason() {
    let pool = alto::harness::pool::build_pool(1).unwrap();
    let mut specs = default_events(&CpuModel::detect());
    specs.retain(|s| s.group == EventGroup::Software);
    specs.push(alto::harness::counters::EventSpec {
        name: "made-up".into(),
        group: EventGroup::Flops,
        weight: 1.0,
        source: EventSource::Missing("unknown on this CPU: test".into()),
    });
    let mut set = CounterSet::open(&pool, specs);
    let (v, report) = set.measure(|| 5);
    assert_eq!(v, 5);
    let e = report.event("made-up").unwrap();
    assert_eq!(e.reason(), Some("unknown on this CPU: test"));
    assert_eq!(e.scope, Scope::Threads);
}
