//! Figure 7: parallel MTTKRP speedup (all modes) of every format over sequential ALTO (one
//! thread, one partition), per tensor, high-reuse tensors first; one panel per thread count.
//! Paper (56 cores): ALTO 47x geometric mean on high-reuse tensors (over 80% efficiency) and
//! 16x on limited/medium-reuse ones (bandwidth bound).

use super::*;
use crate::plot::{Figure as Plot, Panel};

pub struct Fig07;

impl Figure for Fig07 {
    fn id(&self) -> &'static str {
        "fig07"
    }

    fn needs(&self, _spec: &TensorSpec, ctx: &Ctx) -> Vec<Need> {
        let mut v: Vec<Need> = ctx
            .threads
            .iter()
            .flat_map(|&t| needs_for(&Format::ALL, t, true, ctx.alto_isa))
            .collect();
        v.extend(needs_for(&[Format::Alto], 1, true, ctx.alto_isa)); // the sequential reference
        v
    }

    fn render(&self, data: &[TensorData], ctx: &Ctx) -> Result<Headline> {
        let (tensors, sections) = by_category(data);
        let mut csv = Csv::new(&[
            "tensor",
            "category",
            "nnz",
            "threads",
            "format",
            "time_s",
            "sequential_alto_time_s",
            "speedup",
            "status",
        ]);
        let mut record = Record::new(ctx, self.id());
        let mut threads = ctx.threads.clone();
        if !threads.contains(&1) {
            threads.insert(0, 1);
        }
        for td in &tensors {
            for &t in &threads {
                for f in Format::ALL {
                    for &v in f.variants() {
                        if let Some(e) = td.get(v, t) {
                            record.add(td, e);
                        }
                    }
                }
            }
        }
        let mut panels = Vec::new();
        let mut claims = Vec::new();
        for &t in &ctx.threads {
            let mut cells = Vec::new();
            let mut alto_high = Vec::new();
            let mut alto_limited = Vec::new();
            for td in &tensors {
                let seq = time_of(td, Format::Alto, 1, None);
                let mut row = Vec::new();
                for f in Format::ALL {
                    let par = time_of(td, f, t, None);
                    let sp = match (&seq, &par) {
                        (Ok(s), Ok(p)) => Ok(s / p),
                        (Err(w), _) | (_, Err(w)) => Err(w.clone()),
                    };
                    if f == Format::Alto {
                        if let Ok(x) = sp {
                            match td.info.category {
                                Category::High => alto_high.push(x),
                                Category::Limited => alto_limited.push(x),
                            }
                        }
                    }
                    csv.push(vec![
                        td.info.name.clone(),
                        category_name(td.info.category).into(),
                        td.info.nnz.to_string(),
                        t.to_string(),
                        f.name().into(),
                        num(par.clone()),
                        num(seq.clone()),
                        num(sp.clone()),
                        status(&sp),
                    ]);
                    row.push(cell(sp));
                }
                cells.push(row);
            }
            let (gh, gl) = (geomean(&alto_high), geomean(&alto_limited));
            panels.push(Panel {
                title: format!(
                    "{t} thread{}: ALTO geomean speedup {} (high reuse), {} (limited/medium)",
                    if t == 1 { "" } else { "s" },
                    times(gh),
                    times(gl)
                ),
                y_label: "Speedup (vs. ALTO sequential)".into(),
                log_y: true,
                groups: tensors.iter().map(|t| t.info.label.clone()).collect(),
                cells,
                sections: sections.clone(),
                reference: Some(1.0),
                value_labels: false,
            });
            if t == ctx.max_threads() {
                let eff = |g: Option<f64>| g.map(|x| x / t as f64);
                claims.push(Claim {
                    claim: "ALTO parallel efficiency on high-reuse tensors (speedup over \
                            sequential ALTO / cores)"
                        .into(),
                    paper: "47x on 56 cores = 84%".into(),
                    measured: format!(
                        "{} on {t} threads = {}",
                        times(gh),
                        eff(gh).map_or("n/a".into(), |e| format!("{:.0}%", e * 100.0))
                    ),
                    holds: eff(gh).map(|e| e >= 0.8),
                    detail: format!("{} high-reuse tensors", alto_high.len()),
                });
                claims.push(Claim {
                    claim: "ALTO parallel speedup on limited/medium-reuse tensors \
                            (bandwidth bound)"
                        .into(),
                    paper: "16x on 56 cores = 29% (76% of the bandwidth limit)".into(),
                    measured: format!(
                        "{} on {t} threads = {}",
                        times(gl),
                        eff(gl).map_or("n/a".into(), |e| format!("{:.0}%", e * 100.0))
                    ),
                    holds: None,
                    detail: format!(
                        "{} limited/medium-reuse tensors; the bandwidth limit of this \
                         machine is not measured here",
                        alto_limited.len()
                    ),
                });
            }
        }
        let mut notes = vec![
            "Speedup = time of sequential ALTO (1 thread, 1 partition) / time of the format \
             at the panel's thread count; MTTKRP on all modes."
                .to_string(),
        ];
        notes.extend(hicoo_support_note(&tensors));
        notes.push(input_note(ctx, &tensors));
        let fig = Plot {
            title: "Fig. 7: parallel MTTKRP speedup over sequential ALTO".into(),
            series: Format::ALL.iter().map(|f| f.series()).collect(),
            panels,
            notes,
        };
        let headline = Headline {
            figure: self.id().into(),
            tensors: tensors.len(),
            gap: Gap::default(),
            claims,
        };
        emit(ctx, self.id(), &fig, &csv, &record, &headline)?;
        Ok(headline)
    }
}
