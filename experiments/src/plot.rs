//! Grouped bar charts in the style of the paper's figures: tensors on the x axis, one colour
//! per format, a shared legend on top, optional sections ("HIGH REUSE", ...), log or linear
//! y axis, and a text marker where a format has no bar ("no support", "out of memory").
//!
//! PNG through plotters' bitmap backend; text is rendered by `ab_glyph` from DejaVu Sans
//! embedded in the binary (`assets/fonts/DejaVuSans.ttf` at the repository root), so no system font library is involved.

use anyhow::{anyhow, Result};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::FontTransform;
use std::path::Path;
use std::sync::Once;

/// DejaVu Sans 2.37 (Debian `fonts-dejavu-core`); licence in `assets/fonts/DejaVu-LICENSE.txt`.
static FONT: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");
pub(crate) const FAMILY: &str = "sans-serif";

pub(crate) fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if plotters::style::register_font(FAMILY, FontStyle::Normal, FONT).is_err() {
            panic!("the embedded DejaVu Sans font does not parse");
        }
    });
}

/// One bar series (a format).
#[derive(Clone, Debug)]
pub struct Series {
    pub name: String,
    pub color: RGBColor,
}

/// The colour of each format, the same in every figure.
pub fn format_color(name: &str) -> RGBColor {
    match name {
        "COO" => RGBColor(120, 120, 120),
        "HiCOO-SB10" => RGBColor(240, 160, 60),
        "HiCOO-SB14" => RGBColor(200, 90, 40),
        "CSF" => RGBColor(90, 160, 90),
        "CSF-tile" => RGBColor(40, 100, 60),
        "ALTO" => RGBColor(40, 70, 170),
        "Best mode-agnostic" => RGBColor(240, 160, 60),
        "Best mode-specific" => RGBColor(90, 160, 90),
        _ => RGBColor(40, 70, 170),
    }
}

/// A bar, or why there is none.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    Value(f64),
    /// No bar; the text is written in its place.
    Missing(String),
    /// No bar and no text.
    Empty,
}

/// One chart of a figure.
#[derive(Clone, Debug)]
pub struct Panel {
    pub title: String,
    pub y_label: String,
    pub log_y: bool,
    /// Labels of the bar groups (x axis).
    pub groups: Vec<String>,
    /// `cells[group][series]`.
    pub cells: Vec<Vec<Cell>>,
    /// Sections: (first group, label), in order; each runs to the next one's first group.
    pub sections: Vec<(usize, String)>,
    /// A dashed horizontal line (e.g. at 1 for ratios).
    pub reference: Option<f64>,
    /// Write each bar's value above it.
    pub value_labels: bool,
}

/// A whole figure: a title, the legend, panels stacked vertically, notes at the bottom.
#[derive(Clone, Debug)]
pub struct Figure {
    pub title: String,
    pub series: Vec<Series>,
    pub panels: Vec<Panel>,
    pub notes: Vec<String>,
}

const PANEL_H: u32 = 420;
const TITLE_H: u32 = 44;
const LEGEND_ROW_H: u32 = 28;
const NOTE_H: u32 = 20;
const LABEL_FONT: f64 = 14.0;

/// Formats an axis value compactly (`0.01`, `1`, `250`, `1e5`, `2e-4`).
pub fn fmt_tick(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let a = v.abs();
    if (1e-3..1e5).contains(&a) {
        let s = format!("{v:.3}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        s.to_string()
    } else {
        let e = a.log10().floor() as i32;
        let m = v / 10f64.powi(e);
        if (m - m.round()).abs() < 1e-6 {
            format!("{}e{e}", m.round() as i64)
        } else {
            format!("{m:.1}e{e}")
        }
    }
}

/// Formats a bar value for a label (`2.3x`-style callers add their own unit).
pub fn fmt_value(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// Rendered width of `s` in pixels at `size` (the font must be registered).
fn text_width(s: &str, size: f64) -> u32 {
    (FAMILY, size).into_font().box_size(s).map_or_else(
        |_| (s.chars().count() as f64 * size * 0.62).ceil() as u32,
        |b| b.0,
    )
}

/// Renders `fig` to a PNG at `path`.
pub fn render(fig: &Figure, path: &Path) -> Result<()> {
    register_font();
    let max_groups = fig.panels.iter().map(|p| p.groups.len()).max().unwrap_or(1);
    let nseries = fig.series.len().max(1);
    let group_px = (nseries as u32 * 13 + 18).max(44);
    let width = (150 + max_groups as u32 * group_px).clamp(900, 3600);
    // Legend rows: items laid out left to right.
    let legend_items: Vec<u32> = fig
        .series
        .iter()
        .map(|s| 30 + text_width(&s.name, 15.0))
        .collect();
    let mut rows = 1u32;
    let mut x = 0u32;
    for w in &legend_items {
        if x + w > width - 80 {
            rows += 1;
            x = 0;
        }
        x += w;
    }
    let label_h = fig
        .panels
        .iter()
        .flat_map(|p| p.groups.iter())
        .map(|g| text_width(g, LABEL_FONT))
        .max()
        .unwrap_or(40)
        + 16;
    let panel_h = PANEL_H + label_h;
    let height = TITLE_H
        + rows * LEGEND_ROW_H
        + 8
        + fig.panels.len() as u32 * panel_h
        + fig.notes.len() as u32 * NOTE_H
        + 12;
    let mut pixels = vec![0u8; width as usize * height as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut pixels, (width, height)).into_drawing_area();
        draw_figure(
            fig,
            &root,
            width,
            height,
            rows,
            &legend_items,
            label_h,
            panel_h,
        )?;
        root.present().map_err(err)?;
    }
    write_png(path, &pixels, width, height)
}

/// Encodes RGB pixels as a PNG: indexed colour when the image has at most 256 colours (bar
/// charts usually do), best compression; figures stay small enough to commit.
pub(crate) fn write_png(path: &Path, rgb: &[u8], width: u32, height: u32) -> Result<()> {
    use std::collections::HashMap;
    let file = std::fs::File::create(path)
        .map_err(|e| anyhow!("cannot create {}: {e}", path.display()))?;
    let mut enc = png::Encoder::new(std::io::BufWriter::new(file), width, height);
    enc.set_compression(png::Compression::Best);
    enc.set_adaptive_filter(png::AdaptiveFilterType::Adaptive);
    let mut palette: HashMap<[u8; 3], u8> = HashMap::new();
    let mut indexed = Vec::with_capacity(rgb.len() / 3);
    for px in rgb.chunks_exact(3) {
        let key = [px[0], px[1], px[2]];
        let next = palette.len();
        let idx = *palette.entry(key).or_insert(next.min(255) as u8);
        if palette.len() > 256 {
            break;
        }
        indexed.push(idx);
    }
    let data: Vec<u8> = if palette.len() <= 256 {
        let mut table = vec![0u8; palette.len() * 3];
        for (c, &i) in &palette {
            table[i as usize * 3..i as usize * 3 + 3].copy_from_slice(c);
        }
        enc.set_color(png::ColorType::Indexed);
        enc.set_depth(png::BitDepth::Eight);
        enc.set_palette(table);
        enc.set_filter(png::FilterType::NoFilter);
        enc.set_adaptive_filter(png::AdaptiveFilterType::NonAdaptive);
        indexed
    } else {
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        rgb.to_vec()
    };
    let mut w = enc.write_header().map_err(err)?;
    w.write_image_data(&data).map_err(err)?;
    w.finish().map_err(err)?;
    Ok(())
}

/// Draws the whole figure on `root`.
#[allow(clippy::too_many_arguments)]
fn draw_figure(
    fig: &Figure,
    root: &DrawingArea<BitMapBackend<'_>, Shift>,
    width: u32,
    height: u32,
    rows: u32,
    legend_items: &[u32],
    label_h: u32,
    panel_h: u32,
) -> Result<()> {
    root.fill(&WHITE).map_err(err)?;
    let title_style = TextStyle::from((FAMILY, 22).into_font())
        .color(&BLACK)
        .pos(Pos::new(HPos::Center, VPos::Top));
    root.draw(&Text::new(
        fig.title.clone(),
        ((width / 2) as i32, 10),
        title_style,
    ))
    .map_err(err)?;
    // Legend.
    let legend_style = TextStyle::from((FAMILY, 15).into_font())
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    let total_first_row: u32 = legend_items.iter().sum::<u32>().min(width - 80);
    let mut lx = ((width - total_first_row) / 2) as i32;
    let mut ly = (TITLE_H + LEGEND_ROW_H / 2) as i32;
    for (s, w) in fig.series.iter().zip(legend_items) {
        if lx as u32 + w > width - 40 {
            lx = 40;
            ly += LEGEND_ROW_H as i32;
        }
        root.draw(&Rectangle::new(
            [(lx, ly - 8), (lx + 18, ly + 8)],
            s.color.filled(),
        ))
        .map_err(err)?;
        root.draw(&Text::new(
            s.name.clone(),
            (lx + 24, ly),
            legend_style.clone(),
        ))
        .map_err(err)?;
        lx += *w as i32;
    }
    let top = TITLE_H + rows * LEGEND_ROW_H + 8;
    let (_, body) = root.split_vertically(top);
    let mut area = body;
    for panel in &fig.panels {
        let (this, rest) = area.split_vertically(panel_h);
        draw_panel(root, &this, panel, &fig.series, label_h)?;
        area = rest;
    }
    let note_style = TextStyle::from((FAMILY, 13).into_font())
        .color(&RGBColor(60, 60, 60))
        .pos(Pos::new(HPos::Left, VPos::Top));
    for (k, note) in fig.notes.iter().enumerate() {
        let y = height - 10 - (fig.notes.len() - k) as u32 * NOTE_H;
        root.draw(&Text::new(
            note.clone(),
            (20, y as i32 + 4),
            note_style.clone(),
        ))
        .map_err(err)?;
    }
    root.present().map_err(err)?;
    Ok(())
}

pub(crate) fn err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow!("plotting: {e:?}")
}

/// The y range: decades around the data for log axes, zero to the max for linear ones.
fn y_range(panel: &Panel) -> (f64, f64) {
    let vals: Vec<f64> = panel
        .cells
        .iter()
        .flatten()
        .filter_map(|c| match c {
            Cell::Value(v) if v.is_finite() && (*v > 0.0 || !panel.log_y) => Some(*v),
            _ => None,
        })
        .chain(panel.reference)
        .collect();
    if panel.log_y {
        let lo = vals.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = vals.iter().copied().fold(0.0, f64::max);
        if !lo.is_finite() || hi <= 0.0 {
            return (0.1, 10.0);
        }
        let mut lo = 10f64.powf((lo * 0.8).log10().floor());
        let mut hi = 10f64.powf((hi * 1.6).log10().ceil());
        if hi / lo < 100.0 {
            lo /= 10.0;
            if hi / lo < 100.0 {
                hi *= 10.0;
            }
        }
        // Just outside the decades, so rounding cannot drop their tick labels.
        (lo * 0.999, hi * 1.001)
    } else {
        let hi = vals.iter().copied().fold(0.0, f64::max);
        let hi = if hi > 0.0 { hi * 1.18 } else { 1.0 };
        (0.0, hi)
    }
}

fn draw_panel(
    root: &DrawingArea<BitMapBackend<'_>, Shift>,
    area: &DrawingArea<BitMapBackend<'_>, Shift>,
    panel: &Panel,
    series: &[Series],
    label_h: u32,
) -> Result<()> {
    let n = panel.groups.len().max(1);
    let (lo, hi) = y_range(panel);
    let title_style = TextStyle::from((FAMILY, 17).into_font()).color(&BLACK);
    let mut builder = ChartBuilder::on(area);
    builder
        .margin_left(12)
        .margin_right(20)
        .margin_top(8)
        .caption(panel.title.clone(), title_style)
        .x_label_area_size(label_h)
        .y_label_area_size(80);
    let x_range = 0f64..n as f64;
    // The same steps on a log or a linear y axis (different coordinate types).
    macro_rules! finish {
        ($chart:expr) => {{
            let mut chart = $chart;
            chart
                .configure_mesh()
                .disable_x_mesh()
                .x_labels(0)
                .y_desc(panel.y_label.clone())
                .y_label_formatter(&|v| fmt_tick(*v))
                .axis_desc_style((FAMILY, 15))
                .label_style((FAMILY, 13))
                .light_line_style(RGBColor(235, 235, 235))
                .bold_line_style(RGBColor(210, 210, 210))
                .draw()
                .map_err(err)?;
            let (xr, yr) = chart.plotting_area().get_pixel_range();
            let log = panel.log_y;
            // Data to pixel coordinates of the whole image (the plotting area's pixel range
            // with the axes' mapping), for text drawn on the root area.
            let to_px = move |x: f64, y: f64| -> (i32, i32) {
                let fx = x / n as f64;
                let fy = if log {
                    (y.max(lo).ln() - lo.ln()) / (hi.ln() - lo.ln())
                } else {
                    (y - lo) / (hi - lo)
                };
                let px = xr.start as f64 + fx * (xr.end - xr.start - 1) as f64;
                let py = (yr.end - 1) as f64 - fy * (yr.end - yr.start - 1) as f64;
                (px.round() as i32, py.round() as i32)
            };
            draw_sections(root, &to_px, panel, lo, hi)?;
            chart.draw_series(bars(panel, series, lo)).map_err(err)?;
            if let Some(r) = panel.reference {
                chart
                    .draw_series(DashedLineSeries::new(
                        vec![(0.0, r), (n as f64, r)],
                        6,
                        4,
                        BLACK.stroke_width(1),
                    ))
                    .map_err(err)?;
            }
            draw_labels(root, &to_px, panel, series, lo)?;
        }};
    }
    if panel.log_y {
        finish!(builder
            .build_cartesian_2d(x_range, (lo..hi).log_scale())
            .map_err(err)?);
    } else {
        finish!(builder.build_cartesian_2d(x_range, lo..hi).map_err(err)?);
    }
    Ok(())
}

/// Slot of series `s` in group `g`: (left, right) in data x.
fn slot(g: usize, s: usize, nseries: usize) -> (f64, f64) {
    let pad = 0.12;
    let w = (1.0 - 2.0 * pad) / nseries.max(1) as f64;
    let x0 = g as f64 + pad + s as f64 * w;
    (x0, x0 + w)
}

fn bars<'a>(
    panel: &'a Panel,
    series: &'a [Series],
    base: f64,
) -> impl Iterator<Item = Rectangle<(f64, f64)>> + 'a {
    let ns = series.len();
    panel.cells.iter().enumerate().flat_map(move |(g, row)| {
        row.iter().enumerate().filter_map(move |(s, c)| match c {
            Cell::Value(v) if v.is_finite() && *v > base => {
                let (x0, x1) = slot(g, s, ns);
                Some(Rectangle::new(
                    [(x0, base), (x1, *v)],
                    series[s].color.filled(),
                ))
            }
            _ => None,
        })
    })
}

/// Section separators and labels (drawn before the bars, so bars stay on top).
fn draw_sections(
    root: &DrawingArea<BitMapBackend<'_>, Shift>,
    to_px: &dyn Fn(f64, f64) -> (i32, i32),
    panel: &Panel,
    lo: f64,
    hi: f64,
) -> Result<()> {
    let n = panel.groups.len();
    let style = TextStyle::from((FAMILY, 14).into_font())
        .color(&RGBColor(70, 70, 70))
        .pos(Pos::new(HPos::Center, VPos::Top));
    for (k, (start, label)) in panel.sections.iter().enumerate() {
        let end = panel.sections.get(k + 1).map_or(n, |s| s.0);
        if *start > 0 {
            let (x, y0) = to_px(*start as f64, lo);
            let (_, y1) = to_px(*start as f64, hi);
            root.draw(&PathElement::new(
                vec![(x, y0), (x, y1)],
                RGBColor(80, 80, 80).stroke_width(2),
            ))
            .map_err(err)?;
        }
        let (x, y) = to_px((*start + end) as f64 / 2.0, hi);
        root.draw(&Text::new(label.clone(), (x, y + 4), style.clone()))
            .map_err(err)?;
    }
    Ok(())
}

/// Group labels under the axis (rotated), missing-bar markers and value labels.
fn draw_labels(
    root: &DrawingArea<BitMapBackend<'_>, Shift>,
    to_px: &dyn Fn(f64, f64) -> (i32, i32),
    panel: &Panel,
    series: &[Series],
    lo: f64,
) -> Result<()> {
    let group_style = TextStyle::from((FAMILY, LABEL_FONT).into_font())
        .color(&BLACK)
        .transform(FontTransform::Rotate270)
        .pos(Pos::new(HPos::Right, VPos::Center));
    let missing_style = TextStyle::from((FAMILY, 11).into_font())
        .color(&RGBColor(150, 20, 20))
        .transform(FontTransform::Rotate270)
        .pos(Pos::new(HPos::Left, VPos::Center));
    let value_style = TextStyle::from((FAMILY, 12).into_font())
        .color(&BLACK)
        .pos(Pos::new(HPos::Center, VPos::Bottom));
    let ns = series.len();
    for (g, name) in panel.groups.iter().enumerate() {
        let (x, y) = to_px(g as f64 + 0.5, lo);
        root.draw(&Text::new(name.clone(), (x, y + 8), group_style.clone()))
            .map_err(err)?;
        for (s, cell) in panel.cells[g].iter().enumerate() {
            let (x0, x1) = slot(g, s, ns);
            match cell {
                Cell::Missing(text) => {
                    let (px, py) = to_px((x0 + x1) / 2.0, lo);
                    root.draw(&Text::new(
                        text.clone(),
                        (px, py - 4),
                        missing_style.clone(),
                    ))
                    .map_err(err)?;
                }
                Cell::Value(v) if panel.value_labels && v.is_finite() => {
                    let (px, py) = to_px((x0 + x1) / 2.0, *v);
                    root.draw(&Text::new(fmt_value(*v), (px, py - 3), value_style.clone()))
                        .map_err(err)?;
                }
                _ => {}
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_compact() {
        assert_eq!(fmt_tick(1.0), "1");
        assert_eq!(fmt_tick(0.01), "0.01");
        assert_eq!(fmt_tick(250.0), "250");
        assert_eq!(fmt_tick(1e5), "1e5");
        assert_eq!(fmt_tick(1e-4), "1e-4");
        assert_eq!(fmt_tick(0.0), "0");
    }

    #[test]
    fn renders_a_png_with_missing_bars() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.png");
        let fig = Figure {
            title: "Test".into(),
            series: vec![
                Series {
                    name: "COO".into(),
                    color: format_color("COO"),
                },
                Series {
                    name: "ALTO".into(),
                    color: format_color("ALTO"),
                },
            ],
            panels: vec![Panel {
                title: "panel".into(),
                y_label: "Time [s]".into(),
                log_y: true,
                groups: vec!["a".into(), "bb".into()],
                cells: vec![
                    vec![Cell::Value(0.5), Cell::Value(0.01)],
                    vec![Cell::Missing("no support".into()), Cell::Value(2.0)],
                ],
                sections: vec![(0, "HIGH".into()), (1, "LOW".into())],
                reference: Some(1.0),
                value_labels: true,
            }],
            notes: vec!["a note".into()],
        };
        render(&fig, &p).unwrap();
        let bytes = std::fs::read(&p).unwrap();
        assert_eq!(&bytes[1..4], b"PNG");
    }
}
