//! Figure 11: storage of every format relative to COO (64-bit indices and values). Paper: ALTO
//! always needs less than COO; CSF (one tree per mode) needs 2.5x-4.5x more than ALTO; HiCOO
//! can exceed COO on hypersparse tensors.

use super::*;
use crate::plot::{Figure as Plot, Panel};

pub struct Fig11;

impl Figure for Fig11 {
    fn id(&self) -> &'static str {
        "fig11"
    }

    fn needs(&self, _spec: &TensorSpec, ctx: &Ctx) -> Vec<Need> {
        let mut v = needs_for(&Format::BUILT, ctx.max_threads(), false);
        v.extend(needs_for(&[Format::Coo], ctx.max_threads(), false));
        v
    }

    fn render(&self, data: &[TensorData], ctx: &Ctx) -> Result<Headline> {
        let t = ctx.max_threads();
        let tensors = by_size(data);
        let mut csv = Csv::new(&[
            "tensor",
            "nnz",
            "order",
            "format",
            "storage_bytes",
            "coo_storage_bytes",
            "ratio_vs_coo",
            "status",
        ]);
        let mut record = Record::new(ctx, self.id());
        let mut cells = Vec::new();
        let mut alto_ratios = Vec::new();
        let mut worst: Option<(String, f64)> = None;
        for td in &tensors {
            for f in Format::ALL {
                if let Some(e) = f.variants().first().and_then(|&v| td.get(v, t)) {
                    record.add(td, e);
                }
            }
            let coo = storage_of(td, Format::Coo, t).map(|b| b as f64);
            let mut row = Vec::new();
            for f in Format::BUILT {
                let s = storage_of(td, f, t).map(|b| b as f64);
                let r = match (&s, &coo) {
                    (Ok(s), Ok(c)) => Ok(s / c),
                    (Err(w), _) | (_, Err(w)) => Err(w.clone()),
                };
                if f == Format::Alto {
                    if let Ok(x) = r {
                        alto_ratios.push(x);
                        if worst.as_ref().is_none_or(|w| x > w.1) {
                            worst = Some((td.info.name.clone(), x));
                        }
                    }
                }
                csv.push(vec![
                    td.info.name.clone(),
                    td.info.nnz.to_string(),
                    td.info.order.to_string(),
                    f.name().into(),
                    num(s),
                    num(coo.clone()),
                    num(r.clone()),
                    status(&r),
                ]);
                row.push(cell(r));
            }
            cells.push(row);
        }
        let mut notes = vec![
            "COO: 64-bit index per mode + 64-bit value per nonzero. CSF: one tree per mode, \
             64-bit pointers and ids. HiCOO: 32-bit block and 8-bit element indices plus \
             pointers and schedules. ALTO: one u32/u64/u128 index + value."
                .to_string(),
        ];
        notes.extend(hicoo_support_note(&tensors));
        notes.push(input_note(ctx, &tensors));
        let fig = Plot {
            title: "Fig. 11: tensor storage relative to COO".into(),
            series: Format::BUILT.iter().map(|f| f.series()).collect(),
            panels: vec![Panel {
                title: format!(
                    "ALTO / COO: geomean {:.2}, largest {}",
                    geomean(&alto_ratios).unwrap_or(f64::NAN),
                    worst
                        .as_ref()
                        .map_or("n/a".into(), |(n, x)| format!("{x:.2} ({n})"))
                ),
                y_label: "Storage (vs. COO)".into(),
                log_y: false,
                groups: tensors.iter().map(|t| t.info.label.clone()).collect(),
                cells,
                sections: Vec::new(),
                reference: Some(1.0),
                value_labels: false,
            }],
            notes,
        };
        let headline = Headline {
            figure: self.id().into(),
            tensors: tensors.len(),
            claims: vec![Claim {
                claim: "ALTO storage is never above COO's".into(),
                paper: "always below COO".into(),
                measured: worst.as_ref().map_or("n/a".into(), |(n, x)| {
                    format!("largest ALTO/COO = {x:.3} ({n})")
                }),
                holds: worst.as_ref().map(|w| w.1 <= 1.0),
                detail: format!("{} tensors", alto_ratios.len()),
            }],
        };
        emit(ctx, self.id(), &fig, &csv, &record, &headline)?;
        Ok(headline)
    }
}
