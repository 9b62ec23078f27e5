//! Figure 8: MTTKRP time of every mode for nips, darpa, nell-2 and amazon, every format, at
//! the largest thread count. Paper: ALTO's time is consistent across modes (darpa mode 3,
//! with limited reuse, is its slowest); the other formats vary widely across modes.

use super::*;
use crate::plot::{Figure as Plot, Panel};

pub struct Fig08;

/// The tensors of the figure, in its order.
pub const TENSORS: [&str; 4] = ["nips", "darpa", "nell-2", "amazon"];

fn selected(name: &str) -> bool {
    TENSORS.contains(&name)
}

impl Figure for Fig08 {
    fn id(&self) -> &'static str {
        "fig08"
    }

    fn needs(&self, spec: &TensorSpec, ctx: &Ctx) -> Vec<Need> {
        let standin = matches!(spec.source, crate::tensors::Source::Standin { .. });
        if standin && selected(&spec.name) {
            needs_for(&Format::ALL, ctx.max_threads(), true, ctx.alto_isa)
        } else {
            Vec::new()
        }
    }

    fn render(&self, data: &[TensorData], ctx: &Ctx) -> Result<Headline> {
        let t = ctx.max_threads();
        let mut tensors: Vec<&TensorData> = data
            .iter()
            .filter(|d| !d.info.real && selected(&d.info.name))
            .collect();
        tensors.sort_by_key(|d| TENSORS.iter().position(|&n| n == d.info.name));
        let mut csv = Csv::new(&["tensor", "mode", "threads", "format", "time_s", "status"]);
        let mut record = Record::new(ctx, self.id());
        let mut groups = Vec::new();
        let mut cells = Vec::new();
        let mut sections = Vec::new();
        // Spread: slowest mode / fastest mode, per format, over the tensors.
        let mut spread: Vec<Vec<f64>> = vec![Vec::new(); Format::ALL.len()];
        for td in &tensors {
            for f in Format::ALL {
                for &v in f.variants() {
                    if let Some(e) = td.get(v, t) {
                        record.add(td, e);
                    }
                }
            }
            sections.push((groups.len(), td.info.name.to_uppercase()));
            let mut per_format: Vec<Vec<f64>> = vec![Vec::new(); Format::ALL.len()];
            for mode in 0..td.info.order {
                groups.push(format!("{} mode {}", td.info.name, mode + 1));
                let mut row = Vec::new();
                for (k, f) in Format::ALL.iter().enumerate() {
                    let v = time_of(td, *f, t, Some(mode));
                    if let Ok(x) = v {
                        per_format[k].push(x);
                    }
                    csv.push(vec![
                        td.info.name.clone(),
                        (mode + 1).to_string(),
                        t.to_string(),
                        f.name().into(),
                        num(v.clone()),
                        status(&v),
                    ]);
                    row.push(cell(v));
                }
                cells.push(row);
            }
            for (k, xs) in per_format.iter().enumerate() {
                if xs.len() == td.info.order {
                    let hi = xs.iter().copied().fold(0.0, f64::max);
                    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
                    spread[k].push(hi / lo);
                }
            }
        }
        let spreads: Vec<(Format, Option<f64>)> = Format::ALL
            .iter()
            .zip(&spread)
            .map(|(f, s)| (*f, geomean(s)))
            .collect();
        let alto_spread = spreads.last().and_then(|s| s.1);
        let others_worst = spreads[..spreads.len() - 1]
            .iter()
            .filter_map(|s| s.1)
            .fold(None, |a: Option<f64>, x| Some(a.map_or(x, |a| a.max(x))));
        let mut notes = vec![format!(
            "Slowest / fastest mode (geomean over the tensors): {}",
            spreads
                .iter()
                .map(|(f, s)| format!("{} {}", f.name(), times(*s)))
                .collect::<Vec<_>>()
                .join(", ")
        )];
        if tensors.is_empty() {
            notes.push("None of nips, darpa, nell-2, amazon is in this run.".into());
        }
        notes.push(input_note(ctx, &tensors));
        let fig = Plot {
            title: format!("Fig. 8: MTTKRP time per mode ({t} threads)"),
            series: Format::ALL.iter().map(|f| f.series()).collect(),
            panels: vec![Panel {
                title: String::new(),
                y_label: "Time per MTTKRP [s]".into(),
                log_y: true,
                groups,
                cells,
                sections,
                reference: None,
                value_labels: false,
            }],
            notes,
        };
        let headline = Headline {
            figure: self.id().into(),
            tensors: tensors.len(),
            gap: Gap::default(),
            claims: vec![Claim {
                claim: "ALTO's MTTKRP time is consistent across modes, unlike the other \
                        formats (slowest / fastest mode, geometric mean)"
                    .into(),
                paper: "qualitative (log-scale spread of the others)".into(),
                measured: format!(
                    "ALTO {}, most variable other format {}",
                    times(alto_spread),
                    times(others_worst)
                ),
                holds: match (alto_spread, others_worst) {
                    (Some(a), Some(o)) => Some(a <= o),
                    _ => None,
                },
                detail: format!("{} tensors", tensors.len()),
            }],
        };
        emit(ctx, self.id(), &fig, &csv, &record, &headline)?;
        Ok(headline)
    }
}
