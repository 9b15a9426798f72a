//! The CDF of measured times as a small SVG: panels stacked top to bottom,
//! one line per set of samples, the y axis at the fractions the reports
//! quote (p20, p50, p99).
//!
//! Written by hand rather than with `plotters`: that crate (SVG backend
//! only) is four crates and ~27k lines to build for what is here a page
//! of code, and its axes would still need our own tick labels.

use crate::quantile::quantile;
use std::fmt::Write as _;

const W: f64 = 720.0;
const PANEL_H: f64 = 320.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 150.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 50.0;
const COLORS: [&str; 8] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];
/// Points per line at most (the curve is thinned evenly by rank; both ends
/// are always drawn).
const MAX_POINTS: usize = 1000;
/// The fractions marked on the y axis, and on a curve when asked.
const FRACTIONS: [f64; 5] = [0.0, 0.2, 0.5, 0.99, 1.0];
const MARKS: [(f64, &str); 3] = [(0.2, "p20"), (0.5, "p50"), (0.99, "p99")];

/// How the time axis is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// Whole decades around the data, ticks at 1, 2 and 5 of each: for
    /// times that span orders of magnitude.
    Log,
    /// From 0 to a round value at or above 1.2 × the largest p99, so one
    /// outlier does not flatten every line.
    Linear,
}

/// One set of samples, thinned to what the plot draws.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    /// The legend's text (empty: no legend entry).
    pub label: String,
    /// Samples summarised.
    pub n: usize,
    /// (ns, fraction of samples at or below), by rank.
    points: Vec<(f64, f64)>,
    /// (fraction, ns) at each of [`MARKS`], nearest-rank.
    marks: Vec<(f64, f64)>,
}

impl Line {
    /// A line from ascending samples; `ns` turns one into nanoseconds.
    pub fn new<T: Copy>(label: impl Into<String>, sorted: &[T], ns: impl Fn(T) -> f64) -> Line {
        let n = sorted.len();
        let step = n.div_ceil(MAX_POINTS).max(1);
        let ranks = (0..n).step_by(step).chain((n > 0).then(|| n - 1));
        let mut points: Vec<(f64, f64)> = ranks
            .map(|i| (ns(sorted[i]), (i + 1) as f64 / n as f64))
            .collect();
        points.dedup();
        let marks = MARKS
            .iter()
            .filter_map(|&(q, _)| quantile(sorted, q).map(|v| (q, ns(v))))
            .collect();
        Line {
            label: label.into(),
            n,
            points,
            marks,
        }
    }

    fn p99(&self) -> Option<f64> {
        self.marks.iter().find(|m| m.0 == 0.99).map(|m| m.1)
    }
}

/// One chart: a title, an axis and its lines.
#[derive(Clone, Debug)]
pub struct Panel {
    pub title: String,
    /// Under the time axis (the unit is on each tick).
    pub x_label: String,
    pub scale: Scale,
    pub lines: Vec<Line>,
    /// Dot and label each line at p20, p50 and p99.
    pub marks: bool,
}

/// The panels as one SVG document (panels without samples are left out).
pub fn svg(panels: &[Panel]) -> String {
    let shown: Vec<&Panel> = panels
        .iter()
        .filter(|p| p.lines.iter().any(|l| l.n > 0))
        .collect();
    let h = PANEL_H * shown.len().max(1) as f64;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" viewBox="0 0 {W} {h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="{W}" height="{h}" fill="white"/>"#);
    for (k, p) in shown.iter().enumerate() {
        panel(&mut s, k as f64 * PANEL_H, p);
    }
    s.push_str("</svg>\n");
    s
}

/// Where values land on the time axis, and its ticks.
struct Axis {
    scale: Scale,
    lo: f64,
    hi: f64,
}

impl Axis {
    fn fit(scale: Scale, lines: &[&Line]) -> Axis {
        let values = || lines.iter().flat_map(|l| l.points.iter().map(|p| p.0));
        match scale {
            Scale::Log => {
                let min = values().fold(f64::INFINITY, f64::min).max(0.1);
                let max = values().fold(0.0, f64::max).max(min * 10.0);
                Axis {
                    scale,
                    lo: min.log10().floor(),
                    hi: max.log10().ceil(),
                }
            }
            Scale::Linear => {
                let p99 = lines.iter().filter_map(|l| l.p99()).fold(0.0, f64::max);
                Axis {
                    scale,
                    lo: 0.0,
                    hi: nice(p99.max(1.0) * 1.2),
                }
            }
        }
    }

    /// The fraction of the axis' width at which `ns` lies (clamped).
    fn at(&self, ns: f64) -> f64 {
        let f = match self.scale {
            Scale::Log => (ns.max(10f64.powf(self.lo)).log10() - self.lo) / (self.hi - self.lo),
            Scale::Linear => ns / self.hi,
        };
        f.clamp(0.0, 1.0)
    }

    fn ticks(&self) -> Vec<f64> {
        match self.scale {
            Scale::Log => (self.lo as i32..=self.hi as i32)
                .flat_map(|d| [1.0, 2.0, 5.0].map(|m| m * 10f64.powi(d)))
                .filter(|v| v.log10() <= self.hi + 1e-9)
                .collect(),
            Scale::Linear => (0..=5).map(|k| self.hi * f64::from(k) / 5.0).collect(),
        }
    }
}

fn panel(s: &mut String, y0: f64, p: &Panel) {
    let lines: Vec<&Line> = p.lines.iter().filter(|l| l.n > 0).collect();
    let axis = Axis::fit(p.scale, &lines);
    let (pw, ph) = (W - LEFT - RIGHT, PANEL_H - TOP - BOTTOM);
    let px = |ns: f64| LEFT + axis.at(ns) * pw;
    let py = |q: f64| y0 + TOP + (1.0 - q) * ph;
    let _ = writeln!(
        s,
        r#"<text x="{LEFT}" y="{}" font-weight="bold">{}</text>"#,
        y0 + TOP - 12.0,
        escape(&p.title)
    );
    for v in axis.ticks() {
        let x = px(v);
        let _ = writeln!(
            s,
            r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="#ddd"/><text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            py(0.0),
            py(1.0),
            py(0.0) + 16.0,
            fmt_ns(v)
        );
    }
    for q in FRACTIONS {
        let y = py(q);
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#eee"/><text x="{:.1}" y="{:.1}" text-anchor="end">{q}</text>"##,
            LEFT + pw,
            LEFT - 6.0,
            y + 4.0
        );
    }
    let _ = writeln!(
        s,
        r##"<rect x="{LEFT}" y="{:.1}" width="{pw}" height="{ph}" fill="none" stroke="#444"/>"##,
        py(1.0)
    );
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        LEFT + pw / 2.0,
        py(0.0) + 36.0,
        escape(&p.x_label)
    );
    let _ = writeln!(
        s,
        r#"<text transform="translate(16 {:.1}) rotate(-90)" text-anchor="middle">fraction of samples</text>"#,
        y0 + TOP + ph / 2.0
    );
    for (k, line) in lines.iter().enumerate() {
        let color = COLORS[k % COLORS.len()];
        let mut pts = String::new();
        for &(v, q) in &line.points {
            let _ = write!(pts, "{:.1},{:.1} ", px(v), py(q));
        }
        let _ = writeln!(
            s,
            r#"<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{}"/>"#,
            pts.trim_end()
        );
        if p.marks {
            for (&(q, v), (_, name)) in line.marks.iter().zip(MARKS) {
                let (x, y) = (px(v), py(q));
                let _ = writeln!(
                    s,
                    r#"<circle cx="{x:.1}" cy="{y:.1}" r="3" fill="{color}"/><text x="{:.1}" y="{:.1}">{name} {}</text>"#,
                    x + 6.0,
                    y + 14.0,
                    fmt_ns(v)
                );
            }
        }
        if !line.label.is_empty() {
            let (lx, ly) = (LEFT + pw + 14.0, y0 + TOP + 14.0 + k as f64 * 18.0);
            let _ = writeln!(
                s,
                r#"<line x1="{lx}" y1="{ly}" x2="{}" y2="{ly}" stroke="{color}" stroke-width="3"/><text x="{}" y="{}">{} (n {})</text>"#,
                lx + 20.0,
                lx + 26.0,
                ly + 4.0,
                escape(&line.label),
                line.n
            );
        }
    }
}

/// A round axis maximum at or above `v`: 1, 2 or 5 times a power of ten.
fn nice(v: f64) -> f64 {
    if v <= 0.0 || !v.is_finite() {
        return 1.0;
    }
    let p = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|&c| c >= v)
        .unwrap_or(10.0 * p)
}

/// A time for a tick or a mark, in the unit that keeps it short.
fn fmt_ns(v: f64) -> String {
    let (x, unit) = if v >= 1e6 {
        (v / 1e6, "ms")
    } else if v >= 1e3 {
        (v / 1e3, "µs")
    } else {
        (v, "ns")
    };
    if x == 0.0 || x >= 10.0 || x.fract() == 0.0 {
        format!("{x:.0} {unit}")
    } else {
        format!("{x:.1} {unit}")
    }
}

fn escape(t: &str) -> String {
    t.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_maxima() {
        assert_eq!(nice(3.2), 5.0);
        assert_eq!(nice(12.0), 20.0);
        assert_eq!(nice(0.0), 1.0);
        assert_eq!(nice(100.0), 100.0);
        assert_eq!(nice(f64::NAN), 1.0);
    }

    #[test]
    fn tick_labels() {
        assert_eq!(fmt_ns(0.0), "0 ns");
        assert_eq!(fmt_ns(0.5), "0.5 ns");
        assert_eq!(fmt_ns(20.0), "20 ns");
        assert_eq!(fmt_ns(2_500.0), "2.5 µs");
        assert_eq!(fmt_ns(48_000.0), "48 µs");
        assert_eq!(fmt_ns(1e6), "1 ms");
    }

    #[test]
    fn thinned_lines_keep_both_ends_and_nearest_rank_marks() {
        let v: Vec<u64> = (1..=10_007).collect();
        let line = Line::new("x", &v, |t| t as f64);
        assert!(line.points.len() <= MAX_POINTS + 1);
        assert_eq!(line.points.first(), Some(&(1.0, 1.0 / 10_007.0)));
        assert_eq!(line.points.last(), Some(&(10_007.0, 1.0)));
        let want: Vec<(f64, f64)> = MARKS
            .iter()
            .map(|&(q, _)| (q, quantile(&v, q).unwrap() as f64))
            .collect();
        assert_eq!(line.marks, want);
        assert_eq!(Line::new("e", &[] as &[u64], |t| t as f64).points, vec![]);
    }

    #[test]
    fn linear_axis_stops_above_the_largest_p99() {
        let a: Vec<u64> = (1..=100).map(|i| i * 1000).collect();
        let mut b = a.clone();
        b.push(10_000_000); // one outlier: beyond p99, clipped
        let lines = [
            Line::new("a", &a, |t| t as f64),
            Line::new("b", &b, |t| t as f64),
        ];
        let axis = Axis::fit(Scale::Linear, &lines.iter().collect::<Vec<_>>());
        assert_eq!(axis.hi, 200_000.0, "nice(1.2 × 100 µs)");
        assert_eq!(axis.at(10_000_000.0), 1.0);
    }

    #[test]
    fn log_axis_spans_whole_decades() {
        let v = [3.0, 40.0, 700.0];
        let line = Line::new("", &v, |t| t);
        let axis = Axis::fit(Scale::Log, &[&line]);
        assert_eq!((axis.lo, axis.hi), (0.0, 3.0));
        assert_eq!(axis.ticks().first(), Some(&1.0));
        assert_eq!(axis.ticks().last(), Some(&1000.0));
        assert!((axis.at(10.0) - 1.0 / 3.0).abs() < 1e-12);
    }
}
