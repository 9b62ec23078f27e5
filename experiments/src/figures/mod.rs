//! The figures: what each needs measured, and how it is drawn from the measurements.

pub mod fig06;
pub mod fig07;
pub mod fig08;
pub mod fig10;
pub mod fig11;
pub mod fig12;
pub mod gap;

use crate::config::Ctx;
use crate::measure::{Need, TensorData, Variant};
use crate::plot::{self, Cell};
use crate::record::Record;
use crate::tensors::{Category, TensorSpec};
use alto_kernels::Isa;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// A figure of the paper.
pub trait Figure: Sync {
    /// `fig06`, ...
    fn id(&self) -> &'static str;
    /// The measurements this figure needs on `spec`.
    fn needs(&self, spec: &TensorSpec, ctx: &Ctx) -> Vec<Need>;
    /// Draws the figure from the measured tensors and writes its files.
    fn render(&self, data: &[TensorData], ctx: &Ctx) -> Result<Headline>;
}

/// Every figure, in paper order.
pub fn all() -> Vec<Box<dyn Figure>> {
    vec![
        Box::new(fig06::Fig06),
        Box::new(fig07::Fig07),
        Box::new(fig08::Fig08),
        Box::new(fig10::Fig10),
        Box::new(fig11::Fig11),
        Box::new(fig12::Fig12),
    ]
}

/// The series of the comparison figures, in legend order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    Coo,
    HicooSb10,
    HicooSb14,
    Csf,
    CsfTile,
    Alto,
}

impl Format {
    pub const ALL: [Format; 6] = [
        Format::Coo,
        Format::HicooSb10,
        Format::HicooSb14,
        Format::Csf,
        Format::CsfTile,
        Format::Alto,
    ];
    /// The formats of figures 11 and 12 (COO is the reference, not built).
    pub const BUILT: [Format; 5] = [
        Format::HicooSb10,
        Format::HicooSb14,
        Format::Csf,
        Format::CsfTile,
        Format::Alto,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Format::Coo => "COO",
            Format::HicooSb10 => "HiCOO-SB10",
            Format::HicooSb14 => "HiCOO-SB14",
            Format::Csf => "CSF",
            Format::CsfTile => "CSF-tile",
            Format::Alto => "ALTO",
        }
    }

    /// The measured variants behind the series (COO: the better of atomics and privatization).
    pub fn variants(self) -> &'static [Variant] {
        match self {
            Format::Coo => &[Variant::CooAtomic, Variant::CooPrivatized],
            Format::HicooSb10 => &[Variant::HicooSb10],
            Format::HicooSb14 => &[Variant::HicooSb14],
            Format::Csf => &[Variant::Csf],
            Format::CsfTile => &[Variant::CsfTile],
            Format::Alto => &[Variant::Alto],
        }
    }

    pub fn mode_specific(self) -> bool {
        matches!(self, Format::Csf | Format::CsfTile)
    }

    /// Whether the paper's implementation of the format ran tensors of this order.
    pub fn paper_supports(self, order: usize) -> bool {
        !matches!(self, Format::HicooSb10 | Format::HicooSb14) || (3..=4).contains(&order)
    }

    pub fn series(self) -> plot::Series {
        plot::Series {
            name: self.name().to_string(),
            color: plot::format_color(self.name()),
        }
    }
}

/// Needs for `formats` at `threads` and ALTO ISA `isa` (baselines at the matching ISA). On one
/// thread COO's two variants are the same code (the only private copy is the output itself),
/// so only one is measured.
pub fn needs_for(formats: &[Format], threads: usize, timed: bool, isa: Isa) -> Vec<Need> {
    formats
        .iter()
        .flat_map(|f| f.variants().iter())
        .filter(|&&v| !(threads == 1 && v == Variant::CooAtomic))
        .map(|&variant| Need {
            variant,
            threads,
            timed,
            isa,
        })
        .collect()
}

/// Why a value is missing, as figures print it.
pub type Missing = String;

/// MTTKRP time of `mode` (`None`: all modes, the sum of per-mode medians) at the run's ISA.
/// COO takes the better of its two variants per mode.
pub fn time_of(
    td: &TensorData,
    f: Format,
    threads: usize,
    mode: Option<usize>,
) -> Result<f64, Missing> {
    time_at(td, f, threads, mode, td.isa)
}

/// [`time_of`] at ALTO ISA `isa` (the baselines at the matching one).
pub fn time_at(
    td: &TensorData,
    f: Format,
    threads: usize,
    mode: Option<usize>,
    isa: Isa,
) -> Result<f64, Missing> {
    let mut reasons = Vec::new();
    let modes: Vec<usize> = match mode {
        Some(m) => vec![m],
        None => (0..td.info.order).collect(),
    };
    let mut total = 0.0;
    for m in modes {
        let mut best: Option<f64> = None;
        for &v in f.variants() {
            match td.get_at(v, threads, isa) {
                Some(e) if e.ok() => {
                    if let Some(t) = e.mode_s(m) {
                        best = Some(best.map_or(t, |b: f64| b.min(t)));
                    }
                }
                Some(e) => reasons.push(e.status.short().to_string()),
                None => reasons.push("not run".to_string()),
            }
        }
        match best {
            Some(t) => total += t,
            None => return Err(reasons.first().cloned().unwrap_or_else(|| "not run".into())),
        }
    }
    Ok(total)
}

/// The all-modes MTTKRP time of `f` at the fastest of `isas`, with that ISA's name (the
/// format "at its best").
pub fn best_time(
    td: &TensorData,
    f: Format,
    threads: usize,
    isas: &[Isa],
) -> Result<(f64, &'static str), Missing> {
    let mut found: Option<(f64, &'static str)> = None;
    let mut why = "not run".to_string();
    for &isa in isas {
        match time_at(td, f, threads, None, isa) {
            Ok(t) if found.is_none_or(|(b, _)| t < b) => found = Some((t, isa.name())),
            Ok(_) => {}
            Err(w) => why = w,
        }
    }
    found.ok_or(why)
}

/// Storage in bytes (the build of any of the format's variants).
pub fn storage_of(td: &TensorData, f: Format, threads: usize) -> Result<u64, Missing> {
    entry_value(td, f, threads, |e| e.storage_bytes.map(|b| b as f64)).map(|b| b as u64)
}

/// Construction time in seconds.
pub fn build_of(td: &TensorData, f: Format, threads: usize) -> Result<f64, Missing> {
    entry_value(td, f, threads, |e| e.build_s)
}

fn entry_value(
    td: &TensorData,
    f: Format,
    threads: usize,
    get: impl Fn(&crate::measure::Entry) -> Option<f64>,
) -> Result<f64, Missing> {
    let mut reason = "not run".to_string();
    for &v in f.variants() {
        if let Some(e) = td.get(v, threads) {
            match get(e) {
                Some(x) if e.ok() || e.build_s.is_some() => return Ok(x),
                _ => reason = e.status.short().to_string(),
            }
        }
    }
    Err(reason)
}

/// A value as a bar, or its reason as a marker.
pub fn cell(v: Result<f64, Missing>) -> Cell {
    match v {
        Ok(x) if x.is_finite() && x > 0.0 => Cell::Value(x),
        Ok(_) => Cell::Missing("zero".into()),
        Err(why) => Cell::Missing(why),
    }
}

/// Geometric mean of the positive finite values (`None` when there are none).
pub fn geomean(xs: &[f64]) -> Option<f64> {
    let v: Vec<f64> = xs
        .iter()
        .copied()
        .filter(|x| x.is_finite() && *x > 0.0)
        .collect();
    (!v.is_empty()).then(|| (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp())
}

/// Tensors sorted by nonzeros (the paper's x axis order).
pub fn by_size(data: &[TensorData]) -> Vec<&TensorData> {
    let mut v: Vec<&TensorData> = data.iter().collect();
    v.sort_by_key(|t| (t.info.nnz, t.info.name.clone()));
    v
}

/// Tensors by category (high reuse first), then by size, with the section starts.
pub fn by_category(data: &[TensorData]) -> (Vec<&TensorData>, Vec<(usize, String)>) {
    let mut v: Vec<&TensorData> = data.iter().collect();
    v.sort_by_key(|t| (t.info.category, t.info.nnz, t.info.name.clone()));
    let mut sections = Vec::new();
    for (k, t) in v.iter().enumerate() {
        if k == 0 || v[k - 1].info.category != t.info.category {
            sections.push((k, t.info.category.label().to_string()));
        }
    }
    (v, sections)
}

/// The category of a tensor (for CSV columns).
pub fn category_name(c: Category) -> &'static str {
    match c {
        Category::High => "high",
        Category::Limited => "limited/medium",
    }
}

/// One claim of the paper beside this run's number.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Claim {
    /// The paper's statement.
    pub claim: String,
    /// The paper's number, as text.
    pub paper: String,
    /// This run's number, as text.
    pub measured: String,
    /// Whether this run supports the claim (`None`: not comparable).
    pub holds: Option<bool>,
    pub detail: String,
}

/// Why a figure's numbers may differ from the paper's: measured facts, and the experiments
/// that would show whether the difference closes.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Gap {
    /// One measured fact per entry.
    pub evidence: Vec<String>,
    /// Commands (or setups) that would test the explanation.
    pub experiments: Vec<String>,
}

/// What a figure contributes to `SUMMARY.md`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Headline {
    pub figure: String,
    pub tensors: usize,
    pub claims: Vec<Claim>,
    /// Measured facts that explain where this run departs from the paper, and the runs that
    /// would test them (empty where the figure records none).
    #[serde(default)]
    pub gap: Gap,
}

/// Writes `<figure>.png`, `<figure>.csv`, `record.json` and `headline.json`.
pub fn emit(
    ctx: &Ctx,
    id: &str,
    fig: &plot::Figure,
    csv: &Csv,
    record: &Record,
    headline: &Headline,
) -> Result<PathBuf> {
    let dir = ctx.figure_dir(id);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let png = dir.join(format!("{id}.png"));
    plot::render(fig, &png)?;
    csv.write(&dir.join(format!("{id}.csv")))?;
    record.write(&dir.join("record.json"))?;
    crate::measure::write_json(&dir.join("headline.json"), headline)?;
    Ok(png)
}

/// A CSV table.
#[derive(Clone, Debug, Default)]
pub struct Csv {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Csv {
    pub fn new(header: &[&str]) -> Self {
        Csv {
            header: header.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    pub fn push(&mut self, row: Vec<String>) {
        debug_assert_eq!(row.len(), self.header.len());
        self.rows.push(row);
    }

    /// Writes the header and the rows; the `csv` crate quotes cells that need it (RFC 4180).
    pub fn write(&self, path: &std::path::Path) -> Result<()> {
        let mut w = csv::WriterBuilder::new()
            .terminator(csv::Terminator::Any(b'\n'))
            .from_path(path)
            .with_context(|| format!("writing {}", path.display()))?;
        for row in std::iter::once(&self.header).chain(&self.rows) {
            w.write_record(row)
                .with_context(|| format!("writing {}", path.display()))?;
        }
        w.flush()
            .with_context(|| format!("writing {}", path.display()))
    }
}

/// A number for a CSV cell (empty when missing).
pub fn num(v: Result<f64, Missing>) -> String {
    match v {
        Ok(x) => format!("{x:.6e}"),
        Err(_) => String::new(),
    }
}

/// The reason for a CSV status cell.
pub fn status(v: &Result<f64, Missing>) -> String {
    match v {
        Ok(_) => "ok".into(),
        Err(why) => why.clone(),
    }
}

/// `"3.2x"`.
pub fn times(x: Option<f64>) -> String {
    x.map_or_else(|| "n/a".into(), |v| format!("{v:.2}x"))
}

/// Note for figures showing HiCOO: which bars the paper could not have.
pub fn hicoo_support_note(data: &[&TensorData]) -> Option<String> {
    let five: Vec<&str> = data
        .iter()
        .filter(|t| !Format::HicooSb10.paper_supports(t.info.order))
        .map(|t| t.info.name.as_str())
        .collect();
    (!five.is_empty()).then(|| {
        format!(
            "HiCOO on {} (order outside 3-4): the paper's HiCOO had no support; this \
             implementation supports every order.",
            five.join(", ")
        )
    })
}

/// Note describing the inputs.
pub fn input_note(ctx: &Ctx, data: &[&TensorData]) -> String {
    let standins = data.iter().filter(|t| !t.info.real).count();
    let real = data.len() - standins;
    let mut s = format!(
        "Inputs: {standins} synthetic stand-in(s) of the paper's tensors at --scale {} ({}-{} \
         nonzeros)",
        ctx.opts.scale,
        data.iter()
            .filter(|t| !t.info.real)
            .map(|t| t.info.nnz)
            .min()
            .unwrap_or(0),
        data.iter()
            .filter(|t| !t.info.real)
            .map(|t| t.info.nnz)
            .max()
            .unwrap_or(0),
    );
    if real > 0 {
        s.push_str(&format!(", {real} real tensor(s) marked (real)"));
    }
    s.push_str(&format!("; rank {}; host {}.", ctx.opts.rank, ctx.host));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geomeans() {
        assert!((geomean(&[2.0, 8.0]).unwrap() - 4.0).abs() < 1e-12);
        assert_eq!(geomean(&[]), None);
        assert!((geomean(&[4.0, f64::NAN, 0.0]).unwrap() - 4.0).abs() < 1e-12);
    }

    #[test]
    fn csv_quotes() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = Csv::new(&["a", "b"]);
        c.push(vec!["x,y".into(), "1".into()]);
        c.push(vec!["say \"hi\"".into(), "".into()]);
        let p = dir.path().join("t.csv");
        c.write(&p).unwrap();
        assert_eq!(
            std::fs::read_to_string(p).unwrap(),
            "a,b\n\"x,y\",1\n\"say \"\"hi\"\"\",\n"
        );
    }
}
