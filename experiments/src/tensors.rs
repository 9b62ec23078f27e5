//! The tensor set: stand-ins for the paper's 15 tensors (SPEC section 9) from the skewed
//! hierarchical generator, plus every `.tns` file of `--data DIR`. Every tensor is brought to
//! the canonical input the formats are built from: duplicates summed, lexicographic order
//! ([`crate::formats::canonical_coo`]).

use crate::config::Ctx;
use crate::formats::canonical_coo;
use alto::format::layout::Layout;
use alto::gen::{hierarchical, Preset, PRESETS};
use alto::CooTensor;
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Stand-in nonzeros at `--scale 1` for the smallest paper tensor (lbnl, 1.7 M nonzeros).
pub const BASE_NNZ: f64 = 1_000_000.0;
/// Stand-in sizes grow as `(paper nonzeros / 1.7 M)^SIZE_EXPONENT`: the 2,760x spread of the
/// paper's sizes is compressed (to about 19x at 0.37) so the set fits the time budget while keeping the order by size.
/// At `--scale 1`: 1.0 M (lbnl) to 18.8 M (reddit) nonzeros, 86 M in all.
pub const SIZE_EXPONENT: f64 = 0.37;

/// Default of `--max-density`: the densest a stand-in may be, unless the paper's tensor is
/// denser.
pub const MAX_STANDIN_DENSITY: f64 = 1e-3;

/// The stand-in's dims at `nnz` nonzeros. Short modes (at most [`alto::gen::SHORT_MODE_MAX`])
/// keep their length. Long modes are scaled by a common factor `g`: the nonzero ratio (as
/// [`alto::gen::standin_dims`] does, which keeps each mode's reuse) unless that makes the
/// tensor denser than `max(paper density, max_density)`, in which case `g` grows until it
/// does not. Scaling every long mode by the nonzero ratio multiplies the density by
/// `ratio^(1 - long modes)`: at the ratios used here a tensor with three long modes (nell-2)
/// would come out fully dense, and so not sparse at all. The cap keeps the stand-ins sparse at
/// the price of lower (still paper-class) reuse on those tensors.
pub fn standin_dims(p: &Preset, nnz: u64, max_density: f64) -> Vec<u64> {
    let short = |d: u64| d <= alto::gen::SHORT_MODE_MAX;
    let dims_at = |g: f64| -> Vec<u64> {
        p.dims
            .iter()
            .map(|&d| {
                if short(d) {
                    d
                } else {
                    ((d as f64 * g).round() as u64).clamp(2, d)
                }
            })
            .collect()
    };
    let cells = |d: &[u64]| d.iter().map(|&x| x as f64).product::<f64>();
    let cap = (p.nnz as f64 / cells(p.dims)).max(max_density);
    let ratio = (nnz as f64 / p.nnz as f64).min(1.0);
    let fits = |g: f64| nnz as f64 / cells(&dims_at(g)) <= cap;
    if fits(ratio) {
        return dims_at(ratio);
    }
    // The density falls as g grows: bisect for the smallest g that fits.
    let (mut lo, mut hi) = (ratio, 1.0);
    if !fits(hi) {
        return dims_at(hi);
    }
    for _ in 0..60 {
        let mid = (lo + hi) / 2.0;
        if fits(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    dims_at(hi)
}

/// Nonzeros of `p`'s stand-in at `scale`.
pub fn standin_nnz(p: &Preset, scale: f64) -> u64 {
    let smallest = PRESETS.iter().map(|q| q.nnz).min().expect("15 presets") as f64;
    let n = scale * BASE_NNZ * (p.nnz as f64 / smallest).powf(SIZE_EXPONENT);
    n.round().max(16.0) as u64
}

/// Where a tensor comes from.
#[derive(Clone, Debug)]
pub enum Source {
    Standin {
        preset: &'static Preset,
        nnz: u64,
        seed: u64,
        max_density: f64,
    },
    File(PathBuf),
}

/// One input of the figures.
#[derive(Clone, Debug)]
pub struct TensorSpec {
    /// Short name (`nips`, or the file stem).
    pub name: String,
    /// Axis label (`nips`, or `kinships (real)`).
    pub label: String,
    pub source: Source,
    /// Identifies the exact input in the cache: name, size and seed, or the file's size.
    pub key: String,
}

/// The paper's reuse classes of figures 7 and 10.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, PartialOrd, Ord)]
pub enum Category {
    /// High reuse of output fibers (ALTO's pull-based staging on every mode).
    High,
    /// Limited or medium reuse on some mode.
    Limited,
}

impl Category {
    pub fn label(self) -> &'static str {
        match self {
            Category::High => "HIGH REUSE",
            Category::Limited => "LIMITED / MEDIUM REUSE",
        }
    }
}

/// The paper's classification of its tensors (figure 7): lbnl, darpa, fb-m, flickr, delicious
/// and nell-1 have limited or medium reuse, the others high.
pub fn paper_category(name: &str) -> Option<Category> {
    const LIMITED: [&str; 6] = ["lbnl", "darpa", "fb-m", "flickr", "delicious", "nell-1"];
    let p = alto::gen::find_preset(name)?;
    Some(if LIMITED.contains(&p.name) {
        Category::Limited
    } else {
        Category::High
    })
}

/// Tensors whose least reused mode has at most this many nonzeros per row are "limited /
/// medium reuse". Applied to the paper's real dims it reproduces the paper's classes (the
/// limited ones have 1.2 to 8, the high ones 157 or more).
pub const LIMITED_REUSE_MAX: u64 = 16;

/// What the figures need to know about a tensor (cached with its measurements).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TensorInfo {
    pub name: String,
    pub label: String,
    pub real: bool,
    pub dims: Vec<u64>,
    /// Nonzeros after summing duplicates.
    pub nnz: u64,
    /// Duplicates the canonical form merged.
    pub duplicates: u64,
    pub order: usize,
    pub index_bits: u32,
    /// `min over modes of nnz / dim`.
    pub min_reuse: u64,
    pub category: Category,
    /// The paper tensor's nonzeros, for stand-ins.
    pub paper_nnz: Option<u64>,
}

impl TensorInfo {
    pub fn of(spec: &TensorSpec, coo: &CooTensor, raw_nnz: usize) -> Result<Self> {
        let layout = Layout::new(coo.dims())?;
        let nnz = coo.nnz() as u64;
        let min_reuse = coo
            .dims()
            .iter()
            .map(|&d| alto::format::fiber_reuse(nnz, d))
            .min()
            .unwrap_or(0);
        let (real, paper_nnz, category) = match &spec.source {
            Source::Standin { preset, .. } => (
                false,
                Some(preset.nnz),
                paper_category(preset.name).expect("a preset"),
            ),
            Source::File(_) => (
                true,
                None,
                if min_reuse <= LIMITED_REUSE_MAX {
                    Category::Limited
                } else {
                    Category::High
                },
            ),
        };
        Ok(TensorInfo {
            name: spec.name.clone(),
            label: spec.label.clone(),
            real,
            dims: coo.dims().to_vec(),
            nnz,
            duplicates: raw_nnz as u64 - nnz,
            order: coo.order(),
            index_bits: layout.total_bits(),
            min_reuse,
            category,
            paper_nnz,
        })
    }
}

/// The tensors of this run: stand-ins (unless `--no-standins`) then `--data` files, filtered
/// by `--tensors`.
pub fn tensor_set(ctx: &Ctx) -> Result<Vec<TensorSpec>> {
    let o = &ctx.opts;
    let mut v = Vec::new();
    if !o.no_standins {
        for p in PRESETS.iter() {
            let nnz = standin_nnz(p, o.scale);
            v.push(TensorSpec {
                name: p.name.to_string(),
                label: p.name.to_string(),
                source: Source::Standin {
                    preset: p,
                    nnz,
                    seed: o.seed,
                    max_density: o.max_density,
                },
                key: format!("{}-n{nnz}-s{}-d{:e}", p.name, o.seed, o.max_density),
            });
        }
    }
    if let Some(dir) = &o.data {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .with_context(|| format!("--data: cannot read {}", dir.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "tns"))
            .collect();
        files.sort();
        if files.is_empty() {
            bail!("--data: no .tns files in {}", dir.display());
        }
        for f in files {
            let stem = f
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "tensor".into());
            let size = std::fs::metadata(&f).map(|m| m.len()).unwrap_or(0);
            v.push(TensorSpec {
                label: format!("{stem} (real)"),
                key: format!("file-{stem}-{size}"),
                name: stem,
                source: Source::File(f),
            });
        }
    }
    if !o.tensors.is_empty() {
        let norm = |s: &str| s.to_ascii_lowercase().replace(['-', '_'], "");
        let wanted: Vec<String> = o.tensors.iter().map(|s| norm(s)).collect();
        for w in &wanted {
            if !v.iter().any(|t| norm(&t.name) == *w) {
                bail!("--tensors: no tensor named `{w}` in this run");
            }
        }
        v.retain(|t| wanted.contains(&norm(&t.name)));
    }
    if v.is_empty() {
        bail!("no tensors to run (use --data DIR or drop --no-standins)");
    }
    Ok(v)
}

/// Generates or reads the tensor and brings it to canonical form; returns it with the raw
/// nonzero count (before merging duplicates).
pub fn load(spec: &TensorSpec) -> Result<(CooTensor, usize)> {
    let raw = match &spec.source {
        Source::Standin {
            preset: p,
            nnz,
            seed,
            max_density,
        } => hierarchical(
            &standin_dims(p, *nnz, *max_density),
            *nnz,
            p.cv_fibers_per_slice,
            p.cv_nnz_per_fiber,
            *seed,
        )
        .with_context(|| format!("generating the {} stand-in", spec.name))?,
        Source::File(path) => alto::io::tns::read_tns(path, None)
            .with_context(|| format!("reading {}", path.display()))?,
    };
    let n = raw.nnz();
    Ok((canonical_coo(&raw)?, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_keep_the_paper_order() {
        let n: Vec<u64> = PRESETS.iter().map(|p| standin_nnz(p, 1.0)).collect();
        assert!(n.windows(2).all(|w| w[0] <= w[1]), "{n:?}");
        assert_eq!(n[0], BASE_NNZ as u64);
        assert_eq!(standin_nnz(&PRESETS[0], 0.5), BASE_NNZ as u64 / 2);
    }

    #[test]
    fn standins_stay_sparse_and_keep_short_modes() {
        for p in PRESETS.iter() {
            for scale in [0.05, 1.0] {
                let nnz = standin_nnz(p, scale);
                let d = standin_dims(p, nnz, MAX_STANDIN_DENSITY);
                let cells: f64 = d.iter().map(|&x| x as f64).product();
                let paper: f64 = p.nnz as f64 / p.dims.iter().map(|&x| x as f64).product::<f64>();
                assert!(
                    nnz as f64 / cells <= paper.max(MAX_STANDIN_DENSITY) * 1.01
                        || d.iter().zip(p.dims).all(|(a, b)| a == b),
                    "{} at {scale}: {d:?}",
                    p.name
                );
                for (m, (&a, &b)) in d.iter().zip(p.dims).enumerate() {
                    assert!(a <= b, "{} mode {m}", p.name);
                    if b <= alto::gen::SHORT_MODE_MAX {
                        assert_eq!(a, b, "{} short mode {m} kept", p.name);
                    }
                }
            }
        }
    }

    #[test]
    fn categories_follow_the_paper() {
        assert_eq!(paper_category("nips"), Some(Category::High));
        assert_eq!(paper_category("darpa"), Some(Category::Limited));
        assert_eq!(paper_category("deli"), None);
        assert_eq!(paper_category("delicious"), Some(Category::Limited));
        // The reuse rule on the paper's real dims gives the same classes.
        for p in PRESETS.iter() {
            let reuse = p.dims.iter().map(|&d| p.nnz / d).min().unwrap();
            let rule = if reuse <= LIMITED_REUSE_MAX {
                Category::Limited
            } else {
                Category::High
            };
            assert_eq!(Some(rule), paper_category(p.name), "{}", p.name);
        }
    }
}
