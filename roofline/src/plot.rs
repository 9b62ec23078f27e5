//! Drawing a roofline (log-log, flop/byte vs GFLOP/s) as PNG with plotters. Text is rendered
//! from the DejaVu Sans font embedded in the binary (no system font libraries).

use crate::layout::{dodge_markers, place_labels, Rect};
use crate::profile::MachineProfile;
use plotters::element::{Drawable, PointCollection};
use plotters::prelude::*;
use plotters::style::FontStyle;
use plotters_backend::{BackendCoord, DrawingErrorKind};
use std::path::Path;
use std::sync::Once;

const FONT: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");
pub const WIDTH: u32 = 1400;
pub const HEIGHT: u32 = 900;

/// One measured (or modelled) case on the plot.
#[derive(Clone, Debug)]
pub struct PlotPoint {
    pub label: String,
    pub oi: f64,
    /// Worst-case operational intensity, drawn as a line to the point (model only).
    pub oi_worst: Option<f64>,
    pub gflops: f64,
    /// Not measured: the case sits at its model bound (a stated profile's case).
    pub at_model_bound: bool,
    /// Pull-based accumulation (circle) or atomics (triangle).
    pub pull: bool,
    /// A 128-bit index (hollow marker) rather than 64 bits or fewer (filled).
    pub wide_index: bool,
}

fn register_font() -> Result<(), String> {
    static ONCE: Once = Once::new();
    let mut result = Ok(());
    ONCE.call_once(|| {
        result = plotters::style::register_font("sans-serif", FontStyle::Normal, FONT)
            .map_err(|_| "the embedded DejaVu Sans font is invalid".to_string());
    });
    result
}

fn fmt_value(v: f64, unit: &str) -> String {
    let (x, prefix) = if v >= 1000.0 {
        (v / 1000.0, "T")
    } else {
        (v, "G")
    };
    if x >= 100.0 {
        format!("{x:.0} {prefix}{unit}")
    } else if x >= 10.0 {
        format!("{x:.1} {prefix}{unit}")
    } else {
        format!("{x:.2} {prefix}{unit}")
    }
}

/// Where the points went, in pixels: what the tests check for overlaps.
#[derive(Clone, Debug, Default)]
pub struct PlotLayout {
    /// Each point's true position and its marker's (spread apart when they crowd).
    pub true_centres: Vec<(i32, i32)>,
    pub markers: Vec<Rect>,
    /// Each point's label box (`None`: no free spot; the legend still names it).
    pub labels: Vec<Option<Rect>>,
    pub legend: Option<Rect>,
}

/// Half-width of a point marker in pixels, and the least gap between two markers.
pub const MARKER_RADIUS: i32 = 9;
pub const MARKER_GAP: i32 = 4;
const LABEL_FONT: u32 = 15;

/// Draws `profile`'s ceilings and `points` into a PNG at `path`; returns where the points and
/// labels went.
pub fn draw_roofline(
    path: &Path,
    title: &str,
    profile: &MachineProfile,
    points: &[PlotPoint],
) -> Result<PlotLayout, String> {
    register_font()?;
    // Drawn into memory and encoded with `png`: plotters' own encoder would bring the whole
    // `image` crate into the main job's build for one file format (docs/building.md).
    let mut pixels = vec![0u8; WIDTH as usize * HEIGHT as usize * 3];
    let layout = {
        let root = BitMapBackend::with_buffer(&mut pixels, (WIDTH, HEIGHT)).into_drawing_area();
        let layout = draw_on(&root, title, profile, points)?;
        root.present()
            .map_err(|e| format!("{}: {e}", path.display()))?;
        layout
    };
    write_png(path, &pixels).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(layout)
}

/// Encodes `WIDTH x HEIGHT` RGB pixels as a PNG at `path`.
fn write_png(path: &Path, rgb: &[u8]) -> Result<(), String> {
    let file = std::fs::File::create(path).map_err(|e| format!("cannot create: {e}"))?;
    let mut enc = png::Encoder::new(std::io::BufWriter::new(file), WIDTH, HEIGHT);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    let mut writer = enc.write_header().map_err(|e| e.to_string())?;
    writer.write_image_data(rgb).map_err(|e| e.to_string())?;
    writer.finish().map_err(|e| e.to_string())
}

/// Draws the roofline into `root` (`WIDTH x HEIGHT`); returns where the points and labels went.
fn draw_on(
    root: &DrawingArea<BitMapBackend<'_>, plotters::coord::Shift>,
    title: &str,
    profile: &MachineProfile,
    points: &[PlotPoint],
) -> Result<PlotLayout, String> {
    let top = profile.top_peak();
    let fastest_bw = profile
        .bandwidths
        .iter()
        .map(|b| b.gbytes_per_s)
        .fold(0.0, f64::max);
    let slowest_bw = profile.dram().gbytes_per_s;
    let min_oi = points
        .iter()
        .flat_map(|p| [Some(p.oi), p.oi_worst])
        .flatten()
        .fold(f64::INFINITY, f64::min);
    let x_lo = (min_oi / 2.0).clamp(1e-4, 0.01);
    let x_hi = (top / slowest_bw * 8.0).max(100.0);
    let min_y = points
        .iter()
        .map(|p| p.gflops)
        .fold(f64::INFINITY, f64::min);
    let y_lo = (min_y / 3.0)
        .min(fastest_bw * x_lo)
        .min(top / 100.0)
        .max(1e-3);
    let y_hi = top * 4.0;

    root.fill(&WHITE).map_err(|e| e.to_string())?;
    // Levels measured but not drawn: said under the title, one line each.
    let notes: Vec<String> = profile
        .unresolved
        .iter()
        .map(|u| {
            let value = u
                .measured_gbytes_per_s
                .map_or(String::new(), |v| format!(" (measured {})", fmt_value(v, "B/s")));
            format!(
                "no {} roof drawn{value}: the probe could not separate it from the next level on this machine (machine.json: unresolved)",
                u.name
            )
        })
        .collect();
    for (k, note) in notes.iter().enumerate() {
        root.draw(&Text::new(
            note.clone(),
            (110, 52 + 22 * k as i32),
            ("sans-serif", 16).into_font().color(&RGBColor(180, 0, 0)),
        ))
        .map_err(|e| e.to_string())?;
    }
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 26))
        .margin(20)
        .margin_top(20 + 22 * notes.len() as i32)
        .margin_bottom(40) // room for the marker key under the axis title
        .x_label_area_size(60)
        .y_label_area_size(90)
        .build_cartesian_2d((x_lo..x_hi).log_scale(), (y_lo..y_hi).log_scale())
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc("operational intensity (flop/byte)")
        .y_desc("performance (GFLOP/s)")
        .label_style(("sans-serif", 18))
        .axis_desc_style(("sans-serif", 20))
        .light_line_style(RGBColor(235, 235, 235))
        .x_label_formatter(&|x| format!("{x}"))
        .y_label_formatter(&|y| format!("{y}"))
        .draw()
        .map_err(|e| e.to_string())?;

    // Bandwidth roofs up to the top peak, each labelled with its value at its left end.
    let roof_colors = [
        RGBColor(31, 119, 180),
        RGBColor(44, 160, 44),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(127, 127, 127),
    ];
    let _ = y_lo;
    let mut bws: Vec<_> = profile.bandwidths.iter().collect();
    bws.sort_by(|a, b| b.gbytes_per_s.total_cmp(&a.gbytes_per_s));
    for (k, bw) in bws.iter().enumerate() {
        let color = roof_colors[k % roof_colors.len()];
        let ridge = top / bw.gbytes_per_s;
        let start = (x_lo, bw.gbytes_per_s * x_lo);
        // Roofs are named in the legend: inline labels collide when two roofs nearly coincide.
        chart
            .draw_series(LineSeries::new(
                [start, (ridge, top)],
                color.stroke_width(2),
            ))
            .map_err(|e| e.to_string())?
            .label(format!(
                "{} roof {}",
                bw.name,
                fmt_value(bw.gbytes_per_s, "B/s")
            ))
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], color.stroke_width(2)));
    }
    // Compute roofs: horizontal from where the fastest bandwidth meets them.
    let mut peaks: Vec<_> = profile.peaks.iter().collect();
    peaks.sort_by(|a, b| b.gflops.total_cmp(&a.gflops));
    let mut label_x = x_hi / 12.0;
    for (k, pk) in peaks.iter().enumerate() {
        let from = (pk.gflops / fastest_bw).max(x_lo);
        // Labels sit right of every ridge, above their line; a peak too close to the one
        // above it moves its label left so the two do not collide.
        if k > 0 && peaks[k - 1].gflops / pk.gflops < 1.35 {
            label_x /= 6.0;
        }
        chart
            .draw_series(LineSeries::new(
                [(from, pk.gflops), (x_hi, pk.gflops)],
                BLACK.stroke_width(2),
            ))
            .map_err(|e| e.to_string())?;
        chart
            .draw_series(std::iter::once(Text::new(
                format!("{} {}", pk.name, fmt_value(pk.gflops, "FLOP/s")),
                (label_x, pk.gflops * 1.32),
                ("sans-serif", 17).into_font(),
            )))
            .map_err(|e| e.to_string())?;
    }

    // Points: circle = pull, triangle = atomic; filled = <= 64-bit index, hollow = 128-bit.
    // Markers are drawn in pixels: crowded ones are spread sideways around their value (a
    // thin line joins each to its true position), and each gets a label that covers nothing.
    let point_colors = [
        RGBColor(214, 39, 40),
        RGBColor(255, 127, 14),
        RGBColor(23, 190, 207),
        RGBColor(188, 189, 34),
        RGBColor(227, 119, 194),
        RGBColor(31, 119, 180),
        RGBColor(44, 160, 44),
        RGBColor(148, 103, 189),
    ];
    let true_centres: Vec<(i32, i32)> = points
        .iter()
        .map(|p| chart.backend_coord(&(p.oi, p.gflops)))
        .collect();
    let centres = dodge_markers(&true_centres, MARKER_RADIUS, MARKER_GAP);
    let label_font = ("sans-serif", LABEL_FONT).into_font();
    let texts: Vec<String> = points
        .iter()
        .map(|p| {
            if p.at_model_bound {
                format!("{} (model bound)", p.label)
            } else {
                p.label.clone()
            }
        })
        .collect();
    let sizes: Vec<(i32, i32)> = texts
        .iter()
        .map(|t| {
            root.estimate_text_size(t, &TextStyle::from(label_font.clone()))
                .map(|(w, h)| (w as i32, h as i32))
                .map_err(|e| e.to_string())
        })
        .collect::<Result<_, _>>()?;
    let (xr, yr) = chart.plotting_area().get_pixel_range();
    let area = Rect {
        x0: xr.start,
        y0: yr.start,
        x1: xr.end,
        y1: yr.end,
    };
    // The roof legend sits in the lower right corner: about 24 px per roof, 300 px wide.
    let legend = Rect {
        x0: area.x1 - 310,
        y0: area.y1 - 10 - 24 * profile.bandwidths.len() as i32 - 10,
        x1: area.x1,
        y1: area.y1,
    };
    let labels = place_labels(&centres, MARKER_RADIUS, &sizes, area, &[legend]);
    for (k, p) in points.iter().enumerate() {
        let color = point_colors[k % point_colors.len()];
        if let Some(w) = p.oi_worst {
            chart
                .draw_series(LineSeries::new(
                    [(w, p.gflops), (p.oi, p.gflops)],
                    color.mix(0.5).stroke_width(1),
                ))
                .map_err(|e| e.to_string())?;
        }
        let style = if p.wide_index {
            color.stroke_width(3)
        } else {
            color.filled()
        };
        if centres[k] != true_centres[k] {
            root.draw(&PathElement::new(
                [true_centres[k], centres[k]],
                BLACK.stroke_width(1),
            ))
            .map_err(|e| e.to_string())?;
            root.draw(&Circle::new(true_centres[k], 2, BLACK.filled()))
                .map_err(|e| e.to_string())?;
        }
        root.draw(&marker_px(
            centres[k],
            p.pull,
            p.wide_index,
            style,
            MARKER_RADIUS,
        ))
        .map_err(|e| e.to_string())?;
        if let Some(l) = labels[k] {
            root.draw(&Text::new(
                texts[k].clone(),
                (l.x0, l.y0),
                label_font.clone().color(&color),
            ))
            .map_err(|e| e.to_string())?;
        }
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .label_font(("sans-serif", 16))
        .draw()
        .map_err(|e| e.to_string())?;
    let mut key = String::from("circle: pull-based accumulation   triangle: atomic accumulation   filled: <= 64-bit index   hollow: 128-bit index");
    if centres != true_centres {
        key.push_str("   (black dot: a spread marker's true value)");
    }
    root.draw(&Text::new(
        key,
        (110, (HEIGHT - 22) as i32),
        ("sans-serif", 15).into_font(),
    ))
    .map_err(|e| e.to_string())?;
    Ok(PlotLayout {
        markers: centres
            .iter()
            .map(|&c| Rect::around(c, MARKER_RADIUS))
            .collect(),
        true_centres,
        labels,
        legend: Some(legend),
    })
}

/// A marker of half-width `size` pixels: circle for pull, triangle (hollow for a 128-bit
/// index) for atomics.
fn marker_px<DB: DrawingBackend>(
    coord: (i32, i32),
    pull: bool,
    hollow: bool,
    style: ShapeStyle,
    size: i32,
) -> DynElement<'static, DB, (i32, i32)> {
    if pull {
        Circle::new(coord, size as u32 - 1, style).into_dyn()
    } else if hollow {
        HollowTriangle { coord, size, style }.into_dyn()
    } else {
        TriangleMarker::new(coord, size as u32, style).into_dyn()
    }
}

/// A triangle outline of `size` pixels around a point: plotters' triangle marker is always
/// filled, so the hollow (128-bit index) one is drawn as a closed path.
struct HollowTriangle<C> {
    coord: C,
    size: i32,
    style: ShapeStyle,
}

impl<'a, C: 'a> PointCollection<'a, C> for &'a HollowTriangle<C> {
    type Point = &'a C;
    type IntoIter = std::iter::Once<&'a C>;
    fn point_iter(self) -> Self::IntoIter {
        std::iter::once(&self.coord)
    }
}

impl<C, DB: DrawingBackend> Drawable<DB> for HollowTriangle<C> {
    fn draw<I: Iterator<Item = BackendCoord>>(
        &self,
        mut points: I,
        backend: &mut DB,
        _: (u32, u32),
    ) -> Result<(), DrawingErrorKind<DB::ErrorType>> {
        if let Some((x, y)) = points.next() {
            let (h, w) = (self.size, self.size * 87 / 100);
            let outline = [(0, -h), (w, h / 2), (-w, h / 2), (0, -h)];
            backend.draw_path(outline.map(|(dx, dy)| (x + dx, y + dy)), &self.style)?;
        }
        Ok(())
    }
}
