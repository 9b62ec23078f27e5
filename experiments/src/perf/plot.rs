//! The suite's two PNGs, in the house style of [`crate::plot`] (embedded DejaVu Sans, white
//! background, light grid): time vs. rank per ISA at one thread, and speedup vs. threads at
//! two ranks, one panel per shape.

use super::measure::PerfRow;
use super::report::all_modes_ms;
use crate::plot::{err, register_font, write_png, FAMILY};
use anyhow::Result;
use plotters::prelude::*;
use std::path::Path;

const PANEL_W: u32 = 560;
const PANEL_H: u32 = 400;
const TITLE_H: u32 = 50;
const COLS: usize = 3;

/// One line of a panel.
pub struct Line {
    pub label: String,
    pub color: RGBColor,
    pub points: Vec<(f64, f64)>,
    pub dashed: bool,
}

/// One chart.
pub struct LinePanel {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub lines: Vec<Line>,
}

/// The colour of a kernel ISA (or rank line), the same in every chart.
pub fn isa_color(name: &str) -> RGBColor {
    match name {
        "auto" => RGBColor(40, 70, 170),
        "scalar" => RGBColor(120, 120, 120),
        "pulp" => RGBColor(240, 160, 60),
        "avx2" => RGBColor(90, 160, 90),
        "avx512" => RGBColor(200, 60, 60),
        _ => RGBColor(150, 80, 160),
    }
}

/// Shapes in first-seen order.
fn shapes(rows: &[PerfRow]) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for r in rows {
        if !v.contains(&r.shape) {
            v.push(r.shape.clone());
        }
    }
    v
}

fn sorted_unique<T: Ord + Copy>(it: impl Iterator<Item = T>) -> Vec<T> {
    let mut v: Vec<T> = it.collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// Time (all modes, sum of medians) vs. rank, one line per ISA, at the fewest threads run.
pub fn time_vs_rank(rows: &[PerfRow], path: &Path) -> Result<()> {
    let threads = rows.iter().map(|r| r.threads).min().unwrap_or(1);
    let mut isas: Vec<String> = Vec::new();
    for r in rows {
        if !isas.contains(&r.isa) {
            isas.push(r.isa.clone());
        }
    }
    let ranks = sorted_unique(rows.iter().map(|r| r.rank));
    let panels = shapes(rows)
        .into_iter()
        .map(|sh| LinePanel {
            lines: isas
                .iter()
                .map(|isa| Line {
                    label: isa.clone(),
                    color: isa_color(isa),
                    points: ranks
                        .iter()
                        .filter_map(|&r| {
                            all_modes_ms(rows, &sh, threads, r, isa).map(|ms| (r as f64, ms))
                        })
                        .collect(),
                    dashed: false,
                })
                .collect(),
            title: sh,
            x_label: "rank".into(),
            y_label: "time, all modes [ms]".into(),
        })
        .collect::<Vec<_>>();
    let title = format!(
        "MTTKRP time vs. rank per ISA ({threads} thread{})",
        plural(threads)
    );
    render(&title, &panels, path)
}

/// Speedup over the fewest threads vs. threads, kernel `auto`, at rank 16 and one other rank
/// (64 if run, else the largest other), with the ideal line.
pub fn speedup(rows: &[PerfRow], ranks: &[usize], path: &Path) -> Result<()> {
    let threads = sorted_unique(rows.iter().map(|r| r.threads));
    let base = threads.first().copied().unwrap_or(1);
    let first = if ranks.contains(&16) {
        16
    } else {
        ranks.first().copied().unwrap_or(16)
    };
    let other = if ranks.contains(&64) && first != 64 {
        Some(64)
    } else {
        ranks.iter().rev().copied().find(|&r| r != first)
    };
    let chosen: Vec<usize> = std::iter::once(first).chain(other).collect();
    let colors = [RGBColor(40, 70, 170), RGBColor(240, 160, 60)];
    let max_t = threads.last().copied().unwrap_or(1) as f64;
    let panels = shapes(rows)
        .into_iter()
        .map(|sh| {
            let mut lines: Vec<Line> = chosen
                .iter()
                .zip(colors)
                .map(|(&rank, color)| {
                    let t0 = all_modes_ms(rows, &sh, base, rank, "auto");
                    Line {
                        label: format!("rank {rank}"),
                        color,
                        points: threads
                            .iter()
                            .filter_map(|&t| {
                                let ms = all_modes_ms(rows, &sh, t, rank, "auto")?;
                                Some((t as f64, t0? / ms * base as f64))
                            })
                            .collect(),
                        dashed: false,
                    }
                })
                .collect();
            lines.push(Line {
                label: "ideal".into(),
                color: RGBColor(0, 0, 0),
                points: vec![(1.0, 1.0), (max_t, max_t)],
                dashed: true,
            });
            LinePanel {
                title: sh,
                x_label: "threads".into(),
                y_label: format!("speedup over {base} thread{}", plural(base)),
                lines,
            }
        })
        .collect::<Vec<_>>();
    render(
        "MTTKRP speedup vs. threads (all modes, kernel auto)",
        &panels,
        path,
    )
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// Renders panels in a grid of up to three columns under a title.
pub fn render(title: &str, panels: &[LinePanel], path: &Path) -> Result<()> {
    register_font();
    let cols = panels.len().clamp(1, COLS);
    let rows = panels.len().div_ceil(cols).max(1);
    let (w, h) = (cols as u32 * PANEL_W, TITLE_H + rows as u32 * PANEL_H);
    let mut pixels = vec![0u8; w as usize * h as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut pixels, (w, h)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let (top, body) = root.split_vertically(TITLE_H);
        top.titled(title, (FAMILY, 22)).map_err(err)?;
        let areas = body.split_evenly((rows, cols));
        for (panel, area) in panels.iter().zip(areas.iter()) {
            draw_panel(panel, area)?;
        }
        root.present().map_err(err)?;
    }
    write_png(path, &pixels, w, h)
}

fn draw_panel(
    p: &LinePanel,
    area: &DrawingArea<BitMapBackend<'_>, plotters::coord::Shift>,
) -> Result<()> {
    let pts = || p.lines.iter().flat_map(|l| l.points.iter());
    let x_max = pts().map(|q| q.0).fold(1.0, f64::max) * 1.05;
    let x_min = pts()
        .map(|q| q.0)
        .fold(f64::INFINITY, f64::min)
        .min(x_max / 1.05);
    let x_min = if x_min.is_finite() {
        (x_min * 0.9).min(x_min - 0.5).max(0.0)
    } else {
        0.0
    };
    let y_max = pts()
        .map(|q| q.1)
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let y_max = if y_max > 0.0 { y_max * 1.15 } else { 1.0 };
    let mut chart = ChartBuilder::on(area)
        .margin(12)
        .caption(p.title.clone(), (FAMILY, 17))
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(x_min..x_max, 0.0..y_max)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc(p.x_label.clone())
        .y_desc(p.y_label.clone())
        .x_label_formatter(&|v| crate::plot::fmt_tick(*v))
        .y_label_formatter(&|v| crate::plot::fmt_tick(*v))
        .axis_desc_style((FAMILY, 14))
        .label_style((FAMILY, 12))
        .light_line_style(RGBColor(235, 235, 235))
        .bold_line_style(RGBColor(210, 210, 210))
        .draw()
        .map_err(err)?;
    for l in &p.lines {
        let color = l.color;
        let style = color.stroke_width(2);
        if l.dashed {
            chart
                .draw_series(DashedLineSeries::new(l.points.clone(), 6, 4, style))
                .map_err(err)?
                .label(l.label.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color));
        } else {
            chart
                .draw_series(LineSeries::new(l.points.clone(), style))
                .map_err(err)?
                .label(l.label.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
                });
            chart
                .draw_series(l.points.iter().map(|&q| Circle::new(q, 3, color.filled())))
                .map_err(err)?;
        }
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(200, 200, 200))
        .label_font((FAMILY, 13))
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_line_panels() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("l.png");
        let panel = |t: &str| LinePanel {
            title: t.into(),
            x_label: "rank".into(),
            y_label: "ms".into(),
            lines: vec![
                Line {
                    label: "auto".into(),
                    color: isa_color("auto"),
                    points: vec![(8.0, 1.0), (16.0, 1.5), (100.0, 9.0)],
                    dashed: false,
                },
                Line {
                    label: "ideal".into(),
                    color: RGBColor(0, 0, 0),
                    points: vec![(8.0, 0.5), (100.0, 6.0)],
                    dashed: true,
                },
            ],
        };
        render(
            "test",
            &[panel("a"), panel("b"), panel("c"), panel("d")],
            &p,
        )
        .unwrap();
        let bytes = std::fs::read(&p).unwrap();
        assert_eq!(&bytes[1..4], b"PNG");
        // No data at all still renders (an empty panel).
        render("empty", &[], &p).unwrap();
    }
}
