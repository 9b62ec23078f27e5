//! Operational intensity from hardware counters, where the machine has them.
//!
//! Flops are the algorithm's (`N x R` per nonzero and call, known exactly); bytes are measured:
//! - `counters:imc`: DRAM bytes from the uncore memory controllers' CAS counts (64 bytes each,
//!   system-wide: other processes' traffic is included);
//! - `counters:llc-misses` (Intel only, where no uncore PMU is exposed): last-level-cache misses
//!   x 64 bytes, the perf `cache-misses` event (LONGEST_LAT_CACHE.MISS: demand reads, RFOs and
//!   hardware prefetches that miss L3; write-backs are not counted, so it is a lower bound of
//!   DRAM traffic). `cache-references` x 64 gives the L3 traffic the same way.
//!
//! Without either (a VM without a PMU), [`measured_intensity`] says why, and the roofline keeps
//! the SPEC section 11 model. The input is the JSON form of the `alto` crate's counter report
//! (what `alto mttkrp --counters --json` prints per mode), so a recording from another machine
//! and this process's own counters go through the same code.

use alto::harness::counters::CounterReport;
use serde::Deserialize;
use std::collections::BTreeMap;

/// One event of a counter report, as its JSON has it.
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct EventEntry {
    /// `hardware`, `flops`, `dram` or `software`.
    pub group: String,
    /// Bytes (DRAM events) or flops per count.
    pub weight: f64,
    /// `value` or `unavailable`.
    pub status: String,
    #[serde(default)]
    pub scaled: Option<f64>,
    #[serde(default)]
    pub reason: Option<String>,
}

/// A counter report: events by name, over `wall_s` seconds of timed calls.
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct CounterDocument {
    pub wall_s: f64,
    pub events: BTreeMap<String, EventEntry>,
}

impl CounterDocument {
    /// This process's own report, through its JSON form (the path a recording takes).
    pub fn from_report(report: &CounterReport) -> Result<Self, serde_json::Error> {
        serde_json::from_value(serde_json::to_value(report)?)
    }

    fn value(&self, name: &str) -> Option<f64> {
        self.events
            .get(name)
            .filter(|e| e.status == "value")
            .and_then(|e| e.scaled)
    }

    fn reason(&self, name: &str) -> Option<&str> {
        self.events.get(name).and_then(|e| e.reason.as_deref())
    }
}

/// Bytes per cache line, what one LLC miss or reference moves.
pub const LINE_BYTES: f64 = 64.0;

/// Operational intensity from counted bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct MeasuredIntensity {
    /// `counters:imc` or `counters:llc-misses`.
    pub source: &'static str,
    pub dram_bytes: f64,
    /// flops / DRAM bytes.
    pub oi: f64,
    /// flops / L3 bytes (`cache-references` x 64, Intel), when counted.
    pub oi_l3: Option<f64>,
}

/// The intensity of `flops` (the algorithm's, over the region the counters covered) against
/// the counted bytes; `Err` says why there are none. `intel`: `cache-misses` means LLC misses
/// (on other vendors the generic event maps elsewhere, so it is not used).
pub fn measured_intensity(
    doc: &CounterDocument,
    flops: f64,
    intel: bool,
) -> Result<MeasuredIntensity, String> {
    let dram: Vec<&EventEntry> = doc.events.values().filter(|e| e.group == "dram").collect();
    let imc_bytes = (!dram.is_empty())
        .then(|| {
            dram.iter()
                .map(|e| {
                    e.scaled
                        .filter(|_| e.status == "value")
                        .map(|v| v * e.weight)
                })
                .sum::<Option<f64>>()
        })
        .flatten();
    let l3_bytes = intel
        .then(|| doc.value("cache-references"))
        .flatten()
        .map(|refs| refs * LINE_BYTES);
    let oi_l3 = l3_bytes.filter(|&b| b > 0.0).map(|b| flops / b);
    if let Some(bytes) = imc_bytes.filter(|&b| b > 0.0) {
        return Ok(MeasuredIntensity {
            source: "counters:imc",
            dram_bytes: bytes,
            oi: flops / bytes,
            oi_l3,
        });
    }
    if let Some(misses) = intel.then(|| doc.value("cache-misses")).flatten() {
        if misses > 0.0 {
            let bytes = misses * LINE_BYTES;
            return Ok(MeasuredIntensity {
                source: "counters:llc-misses",
                dram_bytes: bytes,
                oi: flops / bytes,
                oi_l3,
            });
        }
    }
    let dram_why = dram
        .iter()
        .find_map(|e| e.reason.clone())
        .unwrap_or_else(|| "no DRAM event counted".into());
    let llc_why = if intel {
        doc.reason("cache-misses")
            .unwrap_or("cache-misses counted nothing")
            .to_string()
    } else {
        "cache-misses is an LLC event on Intel only".into()
    };
    Err(format!(
        "no counted DRAM traffic: uncore IMC: {dram_why}; LLC misses: {llc_why}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(group: &str, weight: f64, value: Option<f64>) -> EventEntry {
        EventEntry {
            group: group.into(),
            weight,
            status: if value.is_some() {
                "value"
            } else {
                "unavailable"
            }
            .into(),
            scaled: value,
            reason: value.is_none().then(|| "no PMU in this VM".to_string()),
        }
    }

    fn doc(events: &[(&str, EventEntry)]) -> CounterDocument {
        CounterDocument {
            wall_s: 1.0,
            events: events
                .iter()
                .map(|(n, e)| (n.to_string(), e.clone()))
                .collect(),
        }
    }

    #[test]
    fn imc_first_then_llc_misses_then_the_reason() {
        let both = doc(&[
            ("dram.cas_count_read", entry("dram", 64.0, Some(300.0))),
            ("dram.cas_count_write", entry("dram", 64.0, Some(100.0))),
            ("cache-misses", entry("hardware", 1.0, Some(50.0))),
            ("cache-references", entry("hardware", 1.0, Some(1000.0))),
        ]);
        let m = measured_intensity(&both, 25600.0, true).unwrap();
        assert_eq!(m.source, "counters:imc");
        assert_eq!(m.dram_bytes, 400.0 * 64.0);
        assert_eq!(m.oi, 1.0);
        assert_eq!(m.oi_l3, Some(25600.0 / 64000.0));

        let llc = doc(&[
            ("dram.cas_count", entry("dram", 64.0, None)),
            ("cache-misses", entry("hardware", 1.0, Some(50.0))),
        ]);
        let m = measured_intensity(&llc, 6400.0, true).unwrap();
        assert_eq!(
            (m.source, m.oi, m.oi_l3),
            ("counters:llc-misses", 2.0, None)
        );
        // Not Intel: the generic cache-misses event is not an LLC count.
        let e = measured_intensity(&llc, 6400.0, false).unwrap_err();
        assert!(e.contains("Intel only"), "{e}");

        let none = doc(&[
            ("dram.cas_count", entry("dram", 64.0, None)),
            ("cache-misses", entry("hardware", 1.0, None)),
        ]);
        let e = measured_intensity(&none, 1.0, true).unwrap_err();
        assert!(e.contains("uncore IMC: no PMU in this VM"), "{e}");
        assert!(e.contains("LLC misses: no PMU in this VM"), "{e}");
    }
}
