//! Machine profiles: a machine's compute and bandwidth ceilings with the basis of each value,
//! either measured by the probe (`machine.json`) or stated (the paper's Cascade Lake profile).

use serde::{Deserialize, Serialize};
use std::path::Path;

/// A horizontal roof: peak double-precision GFLOP/s.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PeakCeiling {
    pub name: String,
    pub gflops: f64,
    pub basis: String,
}

/// A slanted roof: bandwidth in GB/s (10^9 bytes per second).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BandwidthCeiling {
    pub name: String,
    pub gbytes_per_s: f64,
    pub basis: String,
}

/// A level the probe measured but could not separate from the next slower one: listed with
/// its value and why, and drawn as no roof.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UnresolvedLevel {
    pub name: String,
    pub measured_gbytes_per_s: Option<f64>,
    pub reason: String,
}

/// A case the profile places on its roofline (for a stated profile: model values).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProfileCase {
    /// Paper tensor name (a generator preset).
    pub tensor: String,
    /// 0-based target mode.
    pub mode: usize,
    pub rank: usize,
    /// Whether the kernel is rank-specialized.
    pub rank_specialized: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MachineProfile {
    pub name: String,
    /// `measured` (by this tool) or `stated` (values with their basis, not measurements).
    pub kind: String,
    pub threads: usize,
    pub peaks: Vec<PeakCeiling>,
    pub bandwidths: Vec<BandwidthCeiling>,
    #[serde(default)]
    pub notes: Vec<String>,
    #[serde(default)]
    pub cases: Vec<ProfileCase>,
    /// Levels measured but not drawn (see [`crate::levels`]).
    #[serde(default)]
    pub unresolved: Vec<UnresolvedLevel>,
}

/// What is wrong with a profile file.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("{path}: cannot read: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: not a machine profile: {reason}")]
    Invalid { path: String, reason: String },
}

impl MachineProfile {
    /// Reads and validates a profile (positive finite ceilings, at least one of each kind).
    pub fn load(path: &Path) -> Result<Self, ProfileError> {
        let text = std::fs::read_to_string(path).map_err(|source| ProfileError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse(&text).map_err(|reason| ProfileError::Invalid {
            path: path.display().to_string(),
            reason,
        })
    }

    pub fn parse(text: &str) -> Result<Self, String> {
        let p: MachineProfile = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if p.peaks.is_empty() || p.bandwidths.is_empty() {
            return Err("needs at least one peak and one bandwidth ceiling".into());
        }
        for c in &p.peaks {
            if !(c.gflops.is_finite() && c.gflops > 0.0) {
                return Err(format!(
                    "peak `{}` must be a positive number of GFLOP/s",
                    c.name
                ));
            }
        }
        for c in &p.bandwidths {
            if !(c.gbytes_per_s.is_finite() && c.gbytes_per_s > 0.0) {
                return Err(format!(
                    "bandwidth `{}` must be a positive number of GB/s",
                    c.name
                ));
            }
        }
        if p.threads == 0 {
            return Err("threads must be at least 1".into());
        }
        Ok(p)
    }

    /// The highest compute roof.
    pub fn top_peak(&self) -> f64 {
        self.peaks.iter().map(|p| p.gflops).fold(0.0, f64::max)
    }

    /// Attainable GFLOP/s at `oi` flop/byte under bandwidth ceiling `bw` and the top peak.
    pub fn bound(&self, bw: &BandwidthCeiling, oi: f64) -> f64 {
        (bw.gbytes_per_s * oi).min(self.top_peak())
    }

    /// The DRAM ceiling (the last bandwidth listed, by convention the slowest).
    pub fn dram(&self) -> &BandwidthCeiling {
        self.bandwidths
            .iter()
            .min_by(|a, b| a.gbytes_per_s.total_cmp(&b.gbytes_per_s))
            .expect("validated non-empty")
    }

    /// Ridge point (flop/byte) of a bandwidth ceiling against the top peak.
    pub fn ridge(&self, bw: &BandwidthCeiling) -> f64 {
        self.top_peak() / bw.gbytes_per_s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_committed_cascade_lake_profile_is_valid() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("profiles/cascadelake-8280.json");
        let p = MachineProfile::load(&path).unwrap();
        assert_eq!(p.kind, "stated");
        assert!((p.top_peak() - 3225.6).abs() < 1e-9);
        // SPEC section 11: ridge points at about 15.4 (DRAM) and 0.25 (L1) flop/byte.
        assert!((p.ridge(p.dram()) - 15.36).abs() < 0.05);
        let l1 = p.bandwidths.iter().find(|b| b.name == "L1").unwrap();
        assert!((p.ridge(l1) - 0.25).abs() < 0.01);
        assert_eq!(p.cases.len(), 6);
    }

    #[test]
    fn bad_profiles_are_clear_errors() {
        assert!(MachineProfile::parse("{").is_err());
        let no_bw = r#"{"name":"x","kind":"stated","threads":1,"peaks":[{"name":"p","gflops":1,"basis":""}],"bandwidths":[]}"#;
        assert!(MachineProfile::parse(no_bw)
            .unwrap_err()
            .contains("at least one"));
        let neg = r#"{"name":"x","kind":"stated","threads":1,"peaks":[{"name":"p","gflops":-1,"basis":""}],"bandwidths":[{"name":"D","gbytes_per_s":1,"basis":""}]}"#;
        assert!(MachineProfile::parse(neg).unwrap_err().contains("positive"));
        let e = MachineProfile::load(Path::new("/nonexistent/p.json"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("/nonexistent/p.json"));
    }
}
