//! Figure 6: ALTO against an oracle that picks, per tensor, the best mode-agnostic format (COO,
//! HiCOO-SB10, HiCOO-SB14) and the best mode-specific one (CSF, CSF-tile, one copy per mode):
//! MTTKRP speedup (all modes) and compression, both relative to COO, at the largest thread
//! count. Paper: 8x geometric-mean speedup over the best mode-agnostic format, 4.3x
//! geometric-mean compression over the best mode-specific one.
//!
//! The bars and the claims compare ALTO and the baselines at the same ISA (the run's: ALTO's
//! `$ALTO_ISA` or best, the baselines' matching one). Every format is also measured with the
//! CPU's other vector ISAs, and the speedup of each format at its own best ISA is reported
//! beside it, so a vector-width advantage can neither hide nor inflate the comparison.

use super::*;
use crate::plot::{Figure as Plot, Panel, Series};

pub struct Fig06;

const AGNOSTIC: [Format; 3] = [Format::Coo, Format::HicooSb10, Format::HicooSb14];
const SPECIFIC: [Format; 2] = [Format::Csf, Format::CsfTile];

/// The best of `formats` by `value` (smallest), with its name.
fn best(
    formats: &[Format],
    value: impl Fn(Format) -> Result<f64, Missing>,
) -> Result<(Format, f64), Missing> {
    let mut found: Option<(Format, f64)> = None;
    let mut why = "not run".to_string();
    for &f in formats {
        match value(f) {
            Ok(v) if found.is_none_or(|(_, b)| v < b) => found = Some((f, v)),
            Ok(_) => {}
            Err(w) => why = w,
        }
    }
    found.ok_or(why)
}

/// The run's ISA first, then the CPU's other vector ISAs.
fn all_isas(ctx: &Ctx) -> Vec<Isa> {
    std::iter::once(ctx.alto_isa)
        .chain(ctx.other_isas.iter().copied())
        .collect()
}

impl Figure for Fig06 {
    fn id(&self) -> &'static str {
        "fig06"
    }

    fn needs(&self, _spec: &TensorSpec, ctx: &Ctx) -> Vec<Need> {
        all_isas(ctx)
            .into_iter()
            .flat_map(|isa| needs_for(&Format::ALL, ctx.max_threads(), true, isa))
            .collect()
    }

    fn render(&self, data: &[TensorData], ctx: &Ctx) -> Result<Headline> {
        let t = ctx.max_threads();
        let tensors = by_size(data);
        let isas = all_isas(ctx);
        let mut csv = Csv::new(&[
            "tensor",
            "nnz",
            "order",
            "threads",
            "best_agnostic",
            "best_agnostic_time_s",
            "best_specific",
            "best_specific_time_s",
            "alto_time_s",
            "coo_time_s",
            "speedup_alto_vs_best_agnostic",
            "speedup_alto_vs_best_specific",
            "best_agnostic_storage_format",
            "best_agnostic_storage_bytes",
            "best_specific_storage_format",
            "best_specific_storage_bytes",
            "alto_storage_bytes",
            "coo_storage_bytes",
            "compression_alto_vs_best_agnostic",
            "compression_alto_vs_best_specific",
            "alto_best_isa",
            "alto_best_isa_time_s",
            "best_agnostic_at_best_isa",
            "best_agnostic_at_best_isa_time_s",
            "best_specific_at_best_isa",
            "best_specific_at_best_isa_time_s",
            "speedup_each_at_best_isa_vs_best_agnostic",
            "speedup_each_at_best_isa_vs_best_specific",
        ]);
        let (mut at_best_agn, mut at_best_spec) = (Vec::new(), Vec::new());
        let mut record = Record::new(ctx, self.id());
        let (mut speed_cells, mut comp_cells) = (Vec::new(), Vec::new());
        let mut groups = Vec::new();
        let mut csf_wins: Vec<String> = Vec::new();
        let (mut sp_agn, mut sp_spec, mut cr_agn, mut cr_spec) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        // Per tensor: best mode-agnostic, best mode-specific, ALTO (relative to COO).
        type Bars = Vec<[Option<f64>; 3]>;
        let (mut bars_sp, mut bars_cr): (Bars, Bars) = (Vec::new(), Vec::new());
        for td in &tensors {
            for f in Format::ALL {
                for &v in f.variants() {
                    for &isa in &isas {
                        if let Some(e) = td.get_at(v, t, isa) {
                            record.add(td, e);
                        }
                    }
                }
            }
            // Each format at its own best ISA.
            let at_best = |f| best_time(td, f, t, &isas);
            let best_of = |fs: &[Format]| best(fs, |f| at_best(f).map(|x| x.0));
            let alto_best = at_best(Format::Alto);
            let (agn_best, spec_best) = (best_of(&AGNOSTIC), best_of(&SPECIFIC));
            let over = |r: &Result<(Format, f64), Missing>| match (r, &alto_best) {
                (Ok((_, b)), Ok((a, _))) => Ok(b / a),
                (Err(w), _) | (_, Err(w)) => Err(w.clone()),
            };
            let (sb_agn, sb_spec) = (over(&agn_best), over(&spec_best));
            if let Ok(x) = sb_agn {
                at_best_agn.push(x);
            }
            if let Ok(x) = sb_spec {
                at_best_spec.push(x);
            }
            let best_cells = |r: &Result<(Format, f64), Missing>| match r {
                Ok((f, x)) => {
                    let isa = at_best(*f).map_or("", |b| b.1);
                    [format!("{} ({isa})", f.name()), num(Ok(*x))]
                }
                Err(w) => [w.clone(), String::new()],
            };
            let mut extra = vec![
                alto_best
                    .as_ref()
                    .map_or_else(|w| w.clone(), |b| b.1.to_string()),
                num(alto_best.as_ref().map(|b| b.0).map_err(|w| w.clone())),
            ];
            extra.extend(best_cells(&agn_best));
            extra.extend(best_cells(&spec_best));
            extra.extend([num(sb_agn), num(sb_spec)]);
            let time = |f| time_of(td, f, t, None);
            let store = |f| storage_of(td, f, t).map(|b| b as f64);
            let coo_t = time(Format::Coo);
            let coo_s = store(Format::Coo);
            let agn = best(&AGNOSTIC, time);
            let spec = best(&SPECIFIC, time);
            let alto = time(Format::Alto);
            let agn_s = best(&AGNOSTIC, store);
            let spec_s = best(&SPECIFIC, store);
            let alto_s = store(Format::Alto);
            let ratio = |a: &Result<f64, Missing>, b: &Result<f64, Missing>| match (a, b) {
                (Ok(a), Ok(b)) => Ok(a / b),
                (Err(w), _) | (_, Err(w)) => Err(w.clone()),
            };
            let pick = |r: &Result<(Format, f64), Missing>| r.clone().map(|x| x.1);
            let s_agn = ratio(&pick(&agn), &alto);
            let s_spec = ratio(&pick(&spec), &alto);
            let c_agn = ratio(&pick(&agn_s), &alto_s);
            let c_spec = ratio(&pick(&spec_s), &alto_s);
            if let Ok(x) = &s_spec {
                if *x < 1.0 {
                    csf_wins.push(td.info.name.clone());
                }
            }
            for (v, acc) in [
                (&s_agn, &mut sp_agn),
                (&s_spec, &mut sp_spec),
                (&c_agn, &mut cr_agn),
                (&c_spec, &mut cr_spec),
            ] {
                if let Ok(x) = v {
                    acc.push(*x);
                }
            }
            // Bars relative to COO (higher is better).
            let vs_coo = |r: Result<f64, Missing>, coo: &Result<f64, Missing>| ratio(coo, &r);
            let sp = [
                vs_coo(pick(&agn), &coo_t),
                vs_coo(pick(&spec), &coo_t),
                vs_coo(alto.clone(), &coo_t),
            ];
            let cr = [
                vs_coo(pick(&agn_s), &coo_s),
                vs_coo(pick(&spec_s), &coo_s),
                vs_coo(alto_s.clone(), &coo_s),
            ];
            bars_sp.push(sp.clone().map(|r| r.ok()));
            bars_cr.push(cr.clone().map(|r| r.ok()));
            speed_cells.push(sp.into_iter().map(cell).collect::<Vec<_>>());
            comp_cells.push(cr.into_iter().map(cell).collect::<Vec<_>>());
            groups.push(td.info.label.clone());
            let name = |r: &Result<(Format, f64), Missing>| {
                r.as_ref()
                    .map_or_else(|w| w.clone(), |x| x.0.name().to_string())
            };
            csv.push(
                vec![
                    td.info.name.clone(),
                    td.info.nnz.to_string(),
                    td.info.order.to_string(),
                    t.to_string(),
                    name(&agn),
                    num(pick(&agn)),
                    name(&spec),
                    num(pick(&spec)),
                    num(alto.clone()),
                    num(coo_t.clone()),
                    num(s_agn),
                    num(s_spec),
                    name(&agn_s),
                    num(pick(&agn_s)),
                    name(&spec_s),
                    num(pick(&spec_s)),
                    num(alto_s.clone()),
                    num(coo_s.clone()),
                    num(c_agn),
                    num(c_spec),
                ]
                .into_iter()
                .chain(extra)
                .collect(),
            );
        }
        let (g_best_agn, g_best_spec) = (geomean(&at_best_agn), geomean(&at_best_spec));
        let isa_pair = format!(
            "ALTO {}, baselines {}",
            ctx.alto_isa.name(),
            ctx.baseline_isa.name()
        );
        let other_names: Vec<&str> = isas.iter().map(|i| i.name()).collect();
        // Geometric means of the bars.
        let gm = |bars: &[[Option<f64>; 3]], k: usize| {
            geomean(&bars.iter().filter_map(|b| b[k]).collect::<Vec<_>>())
        };
        groups.push("GMEAN".into());
        speed_cells.push(
            (0..3)
                .map(|k| gm(&bars_sp, k).map_or(Cell::Empty, Cell::Value))
                .collect(),
        );
        comp_cells.push(
            (0..3)
                .map(|k| gm(&bars_cr, k).map_or(Cell::Empty, Cell::Value))
                .collect(),
        );
        let (g_sp_agn, g_sp_spec, g_cr_agn, g_cr_spec) = (
            geomean(&sp_agn),
            geomean(&sp_spec),
            geomean(&cr_agn),
            geomean(&cr_spec),
        );
        let isa_gap = format!(
            "Vector width: ALTO over the best mode-agnostic format is {} with both at the same \
             ISA ({isa_pair}) and {} with each format at its best of {}; over the best \
             mode-specific format, {} and {}.",
            times(g_sp_agn),
            times(g_best_agn),
            other_names.join("/"),
            times(g_sp_spec),
            times(g_best_spec)
        );
        let series = vec![
            Series {
                name: "Best mode-agnostic".into(),
                color: plot::format_color("Best mode-agnostic"),
            },
            Series {
                name: "Best mode-specific (tensor copy/mode)".into(),
                color: plot::format_color("Best mode-specific"),
            },
            Format::Alto.series(),
        ];
        let sections = vec![(0, String::new()), (groups.len() - 1, String::new())];
        let fig = Plot {
            title: format!(
                "Fig. 6: ALTO vs. the best other formats (MTTKRP, all modes, {t} threads)"
            ),
            series,
            panels: vec![
                Panel {
                    title: format!(
                        "Speedup vs. COO. ALTO over best mode-agnostic: {} geomean; over best \
                         mode-specific: {}",
                        times(g_sp_agn),
                        times(g_sp_spec)
                    ),
                    y_label: "Speedup (vs. COO)".into(),
                    log_y: true,
                    groups: groups.clone(),
                    cells: speed_cells,
                    sections: sections.clone(),
                    reference: Some(1.0),
                    value_labels: false,
                },
                Panel {
                    title: format!(
                        "Compression vs. COO. ALTO over best mode-agnostic: {} geomean; over \
                         best mode-specific: {}",
                        times(g_cr_agn),
                        times(g_cr_spec)
                    ),
                    y_label: "Compression ratio (vs. COO)".into(),
                    log_y: true,
                    groups,
                    cells: comp_cells,
                    sections,
                    reference: Some(1.0),
                    value_labels: false,
                },
            ],
            notes: vec![
                "Oracle: per tensor, the fastest (top) or smallest (bottom) format of each \
                 class; COO is the better of atomics and thread-private outputs, per mode."
                    .into(),
                format!(
                    "Bars at the same ISA ({isa_pair}). Each format at its best of {}: ALTO over \
                     best mode-agnostic {}, over best mode-specific {} (geomean).",
                    other_names.join("/"),
                    times(g_best_agn),
                    times(g_best_spec)
                ),
                input_note(ctx, &tensors),
            ],
        };
        let headline = Headline {
            figure: self.id().into(),
            tensors: tensors.len(),
            gap: gap::fig06(data, ctx, &isa_gap),
            claims: vec![
                Claim {
                    claim: format!(
                        "MTTKRP speedup of ALTO over the best mode-agnostic format (geometric \
                         mean, all modes), same ISA ({isa_pair})"
                    ),
                    paper: "8x".into(),
                    measured: times(g_sp_agn),
                    holds: g_sp_agn.map(|x| x >= 8.0),
                    detail: format!(
                        "over {} tensors at {t} threads; ALTO faster than the best \
                         mode-agnostic format on {} of them",
                        sp_agn.len(),
                        sp_agn.iter().filter(|&&x| x > 1.0).count()
                    ),
                },
                Claim {
                    claim: format!(
                        "The same speedup with each format at its own best ISA (of {})",
                        other_names.join(", ")
                    ),
                    paper: "8x".into(),
                    measured: times(g_best_agn),
                    holds: g_best_agn.map(|x| x >= 8.0),
                    detail: format!(
                        "over {} tensors at {t} threads; over the best mode-specific format at \
                         its best ISA: {}",
                        at_best_agn.len(),
                        times(g_best_spec)
                    ),
                },
                Claim {
                    claim: "Compression of ALTO over the best mode-specific format \
                            (geometric mean, full footprints)"
                        .into(),
                    paper: "4.3x".into(),
                    measured: times(g_cr_spec),
                    holds: g_cr_spec.map(|x| x >= 4.3),
                    detail: format!("over {} tensors", cr_spec.len()),
                },
                Claim {
                    claim: format!(
                        "ALTO outperforms the best mode-specific format (geometric mean \
                         speedup > 1), same ISA ({isa_pair})"
                    ),
                    paper: "> 1x (CSF slightly faster only on nips, amazon, nell-1)".into(),
                    measured: times(g_sp_spec),
                    holds: g_sp_spec.map(|x| x > 1.0),
                    detail: format!(
                        "CSF/CSF-tile faster than ALTO on: {}",
                        if csf_wins.is_empty() {
                            "none".to_string()
                        } else {
                            csf_wins.join(", ")
                        }
                    ),
                },
            ],
        };
        emit(ctx, self.id(), &fig, &csv, &record, &headline)?;
        Ok(headline)
    }
}
