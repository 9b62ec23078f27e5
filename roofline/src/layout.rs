//! Where markers and their labels go on a plot, in pixels, so that every case stays visible:
//! cases at the same value (the paper's nips mode 4 with and without rank specialization sit at
//! one model bound) are spread sideways around it, and labels are placed where they cover no
//! other label and no marker.

/// A pixel rectangle, `x0 <= x1`, `y0 <= y1` (y grows downwards).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rect {
    pub x0: i32,
    pub y0: i32,
    pub x1: i32,
    pub y1: i32,
}

impl Rect {
    /// The square of half-width `r` around `c`.
    pub fn around(c: (i32, i32), r: i32) -> Rect {
        Rect {
            x0: c.0 - r,
            y0: c.1 - r,
            x1: c.0 + r,
            y1: c.1 + r,
        }
    }

    /// Whether the two share any pixel.
    pub fn intersects(&self, o: &Rect) -> bool {
        self.x0 <= o.x1 && o.x0 <= self.x1 && self.y0 <= o.y1 && o.y0 <= self.y1
    }

    pub fn inside(&self, area: &Rect) -> bool {
        self.x0 >= area.x0 && self.x1 <= area.x1 && self.y0 >= area.y0 && self.y1 <= area.y1
    }
}

/// Marker centres moved apart so that no two markers of half-width `radius` come closer than
/// `gap` pixels: each group of crowded markers is spread sideways, in input order, around its
/// mean x (their y stays). Repeats until nothing is crowded (a spread group that then crowds
/// another is spread again with it).
pub fn dodge_markers(centres: &[(i32, i32)], radius: i32, gap: i32) -> Vec<(i32, i32)> {
    let step = 2 * radius + gap;
    let crowded =
        |a: (i32, i32), b: (i32, i32)| (a.0 - b.0).abs() < step && (a.1 - b.1).abs() < step;
    let mut pos = centres.to_vec();
    for _ in 0..=centres.len() {
        // Groups: connected components of the "crowded" relation.
        let mut group: Vec<usize> = (0..pos.len()).collect();
        let find = |g: &Vec<usize>, mut i: usize| {
            while g[i] != i {
                i = g[i];
            }
            i
        };
        let mut any = false;
        for i in 0..pos.len() {
            for j in i + 1..pos.len() {
                if crowded(pos[i], pos[j]) {
                    any = true;
                    let (a, b) = (find(&group, i), find(&group, j));
                    group[a.max(b)] = a.min(b);
                }
            }
        }
        if !any {
            break;
        }
        for root in 0..pos.len() {
            let members: Vec<usize> = (0..pos.len())
                .filter(|&i| find(&group, i) == root)
                .collect();
            if members.len() < 2 {
                continue;
            }
            let mean_x =
                members.iter().map(|&i| centres[i].0 as i64).sum::<i64>() / members.len() as i64;
            let half = (members.len() as i64 - 1) * step as i64;
            for (k, &i) in members.iter().enumerate() {
                pos[i].0 = (mean_x - half / 2 + k as i64 * step as i64) as i32;
            }
        }
    }
    pos
}

/// Label boxes of `sizes` (width, height) for markers at `markers`: right of the marker, else
/// shifted up or down, else left of it; each the first candidate inside `area` that covers no
/// marker, nothing in `avoid` (a legend) and no label placed before it. `None` where no
/// candidate is free.
pub fn place_labels(
    markers: &[(i32, i32)],
    radius: i32,
    sizes: &[(i32, i32)],
    area: Rect,
    avoid: &[Rect],
) -> Vec<Option<Rect>> {
    let mut marker_boxes: Vec<Rect> = markers.iter().map(|&c| Rect::around(c, radius)).collect();
    marker_boxes.extend_from_slice(avoid);
    let mut placed: Vec<Rect> = Vec::new();
    let mut out = Vec::with_capacity(markers.len());
    for (&(x, y), &(w, h)) in markers.iter().zip(sizes) {
        let pad = radius + 4;
        let candidates = (0..12).flat_map(|k: i32| {
            // 0, +1, -1, +2, -2, ... label heights away from the marker's row.
            let shift = if k % 2 == 0 { k / 2 } else { -(k + 1) / 2 } * (h + 3);
            let top = y - h / 2 + shift;
            [
                Rect {
                    x0: x + pad,
                    y0: top,
                    x1: x + pad + w,
                    y1: top + h,
                },
                Rect {
                    x0: x - pad - w,
                    y0: top,
                    x1: x - pad,
                    y1: top + h,
                },
            ]
        });
        let free = candidates.into_iter().find(|c| {
            c.inside(&area)
                && !marker_boxes.iter().any(|m| m.intersects(c))
                && !placed.iter().any(|p| p.intersects(c))
        });
        if let Some(r) = free {
            placed.push(r);
        }
        out.push(free);
    }
    out
}

/// True when no two of `rects` overlap: what [`dodge_markers`] and the label placement
/// promise, and what the tests check of every plot.
pub fn no_two_intersect(rects: &[Rect]) -> bool {
    rects
        .iter()
        .enumerate()
        .all(|(i, a)| rects[i + 1..].iter().all(|b| !a.intersects(b)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coincident_markers_are_spread_around_their_value() {
        let r = 8;
        // Two pairs at the same spot (the Cascade Lake plot's nips and darpa cases) and one apart.
        let centres = [(500, 300), (500, 300), (200, 600), (200, 600), (900, 100)];
        let moved = dodge_markers(&centres, r, 4);
        let boxes: Vec<Rect> = moved.iter().map(|&c| Rect::around(c, r)).collect();
        assert!(no_two_intersect(&boxes), "{moved:?}");
        // Spread sideways around the common value; the lone marker stays.
        assert_eq!(moved[0].0 + moved[1].0, 1000);
        assert_eq!((moved[0].1, moved[1].1), (300, 300));
        assert_eq!(moved[4], (900, 100));
        // A chain: spreading one pair crowds a third marker, which joins the group.
        let chain = [(100, 100), (100, 100), (118, 100)];
        let moved = dodge_markers(&chain, r, 4);
        let boxes: Vec<Rect> = moved.iter().map(|&c| Rect::around(c, r)).collect();
        assert!(no_two_intersect(&boxes), "{moved:?}");
    }

    #[test]
    fn labels_cover_no_marker_and_no_other_label() {
        let r = 8;
        let markers = dodge_markers(&[(500, 300), (500, 300), (510, 305), (800, 300)], r, 4);
        let sizes = [(180, 18), (240, 18), (120, 18), (100, 18)];
        let area = Rect {
            x0: 0,
            y0: 0,
            x1: 1400,
            y1: 900,
        };
        let labels = place_labels(&markers, r, &sizes, area, &[]);
        let labels: Vec<Rect> = labels
            .into_iter()
            .map(|l| l.expect("a free spot"))
            .collect();
        assert!(no_two_intersect(&labels), "{labels:?}");
        for l in &labels {
            assert!(markers.iter().all(|&m| !Rect::around(m, r).intersects(l)));
            assert!(l.inside(&area));
        }
        // No room at all: no label rather than an overlapping one.
        let tiny = Rect {
            x0: 490,
            y0: 290,
            x1: 520,
            y1: 310,
        };
        assert!(place_labels(&markers[..1], r, &sizes[..1], tiny, &[])[0].is_none());
        // A box to avoid (the legend) is avoided.
        let legend = Rect {
            x0: 0,
            y0: 0,
            x1: 1400,
            y1: 296,
        };
        let l = place_labels(&markers[..1], r, &sizes[..1], area, &[legend])[0].unwrap();
        assert!(!l.intersects(&legend), "{l:?}");
    }
}
