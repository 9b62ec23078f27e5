//! The fields of an `alto mttkrp --json` document that the comparison reads; unknown fields
//! are ignored, so a newer or older binary's document parses as long as these stay.

use anyhow::{bail, Context, Result};
use serde::Deserialize;

/// The fields of `alto mttkrp --json` the comparison reads.
#[derive(Clone, Debug, Deserialize)]
pub struct MttkrpJson {
    pub nnz: u64,
    pub rank: usize,
    pub threads: usize,
    pub build_seconds: Option<BuildSeconds>,
    pub modes: Vec<ModeJson>,
    pub total_median_s: f64,
    #[serde(default)]
    pub records: Vec<RecordJson>,
}

#[derive(Clone, Copy, Debug, Default, Deserialize)]
#[serde(default)]
pub struct BuildSeconds {
    pub encode: f64,
    pub sort: f64,
    pub merge: f64,
    pub partition: f64,
    pub flags: f64,
    pub total: f64,
}

#[derive(Clone, Debug, Deserialize)]
pub struct ModeJson {
    pub mode: usize,
    /// The kernel id (`avx2_r16`) and the full name with the strategy (`pull_avx2_r16`).
    pub kernel: String,
    #[serde(default)]
    pub name: String,
    pub median_s: f64,
}

/// The build stamp of the binary that wrote the document.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct RecordJson {
    pub git_commit: String,
    pub git_dirty: String,
    pub cpu_model: String,
}

/// Parses one `alto mttkrp --json` document.
pub fn parse_mttkrp_json(text: &str) -> Result<MttkrpJson> {
    let doc: MttkrpJson =
        serde_json::from_str(text).context("not an `alto mttkrp --json` document")?;
    if doc.modes.is_empty() {
        bail!("an `alto mttkrp --json` document without modes");
    }
    Ok(doc)
}
