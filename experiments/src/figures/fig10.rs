//! Figure 10: speedup of ALTO with the kernel specialized for the rank (rank 16: the rank loop
//! fully unrolled) over the same kernel for any rank, MTTKRP on all modes at the largest
//! thread count, best ISA. Paper: 1.3x geometric mean, over 2x on small high-reuse tensors.

use super::*;
use crate::plot::{Figure as Plot, Panel, Series};

pub struct Fig10;

impl Figure for Fig10 {
    fn id(&self) -> &'static str {
        "fig10"
    }

    fn needs(&self, _spec: &TensorSpec, ctx: &Ctx) -> Vec<Need> {
        [Variant::AltoRankFixed, Variant::AltoRankDynamic]
            .into_iter()
            .map(|variant| Need {
                variant,
                threads: ctx.max_threads(),
                timed: true,
                isa: ctx.alto_isa,
            })
            .collect()
    }

    fn render(&self, data: &[TensorData], ctx: &Ctx) -> Result<Headline> {
        let t = ctx.max_threads();
        let (tensors, mut sections) = by_category(data);
        let mut csv = Csv::new(&[
            "tensor",
            "category",
            "nnz",
            "threads",
            "rank_specialized_time_s",
            "rank_generic_time_s",
            "speedup",
            "kernels",
            "status",
        ]);
        let mut record = Record::new(ctx, self.id());
        let mut cells = Vec::new();
        let mut all = Vec::new();
        let mut groups = Vec::new();
        let total = |td: &TensorData, v: Variant| -> Result<f64, Missing> {
            match td.get(v, t) {
                Some(e) => e.total_s().ok_or_else(|| e.status.short().to_string()),
                None => Err("not run".into()),
            }
        };
        for td in &tensors {
            let mut kernels = Vec::new();
            for v in [Variant::AltoRankFixed, Variant::AltoRankDynamic] {
                if let Some(e) = td.get(v, t) {
                    record.add(td, e);
                    if let Some(m) = e.modes.first() {
                        kernels.push(m.ran.clone());
                    }
                }
            }
            let fixed = total(td, Variant::AltoRankFixed);
            let generic = total(td, Variant::AltoRankDynamic);
            let sp = match (&fixed, &generic) {
                (Ok(f), Ok(g)) => Ok(g / f),
                (Err(w), _) | (_, Err(w)) => Err(w.clone()),
            };
            if let Ok(x) = sp {
                all.push(x);
            }
            csv.push(vec![
                td.info.name.clone(),
                category_name(td.info.category).into(),
                td.info.nnz.to_string(),
                t.to_string(),
                num(fixed),
                num(generic),
                num(sp.clone()),
                kernels.join(" vs "),
                status(&sp),
            ]);
            groups.push(td.info.label.clone());
            cells.push(vec![cell(sp)]);
        }
        let g = geomean(&all);
        sections.push((groups.len(), String::new()));
        groups.push("GMEAN".into());
        cells.push(vec![g.map_or(Cell::Empty, Cell::Value)]);
        let isa = alto::dispatch::best_isa().name();
        let fig = Plot {
            title: format!(
                "Fig. 10: ALTO rank specialization (rank {}, {isa} kernels, {t} threads)",
                ctx.opts.rank
            ),
            series: vec![Series {
                name: "ALTO (rank specialized)".into(),
                color: plot::format_color("ALTO"),
            }],
            panels: vec![Panel {
                title: format!("Geometric-mean speedup {}", times(g)),
                y_label: "Speedup (vs. ALTO for any rank)".into(),
                log_y: false,
                groups,
                cells,
                sections,
                reference: Some(1.0),
                value_labels: true,
            }],
            notes: vec![
                format!(
                    "Specialized: kernel {isa}_r{r} (rank loop unrolled at compile time); \
                     generic: {isa}_rdyn (any rank, 16-column chunks); same strategy \
                     heuristic and decoder.",
                    r = ctx.opts.rank
                ),
                input_note(ctx, &tensors),
            ],
        };
        let headline = Headline {
            figure: self.id().into(),
            tensors: tensors.len(),
            gap: Gap::default(),
            claims: vec![Claim {
                claim: "Speedup from rank specialization (geometric mean)".into(),
                paper: "1.3x".into(),
                measured: times(g),
                holds: g.map(|x| x >= 1.3),
                detail: format!(
                    "{} tensors; above 2x on {}",
                    all.len(),
                    all.iter().filter(|&&x| x > 2.0).count()
                ),
            }],
        };
        emit(ctx, self.id(), &fig, &csv, &record, &headline)?;
        Ok(headline)
    }
}
