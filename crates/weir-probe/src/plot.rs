//! A small hand-written SVG: one panel per metric, one CDF line per probe
//! size. The x axis stops at 1.2 × the largest p99, so one outlier does not
//! flatten every line.

use crate::client::{ClientRun, Sample};
use crate::stats::percentile;
use std::fmt::Write as _;

const W: f64 = 720.0;
const PANEL_H: f64 = 300.0;
const LEFT: f64 = 60.0;
const RIGHT: f64 = 150.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 50.0;
const COLORS: [&str; 8] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];
/// Points per line at most (the CDF is downsampled evenly by rank).
const MAX_POINTS: usize = 400;

type Pick = fn(&Sample) -> Option<u64>;
/// A panel: its title, and per probe size the sorted samples.
type Panel<'a> = (&'a str, Vec<(usize, Vec<u64>)>);

/// The distributions of a client run as an SVG document.
pub fn svg(run: &ClientRun, sizes: &[usize]) -> String {
    let metrics: [(&str, Pick); 4] = [
        ("server stack time (kernel rx → process), µs", |s| {
            s.server_stack_ns
        }),
        ("round trip, µs", |s| s.rtt_ns),
        ("engine time per packet, µs", |s| s.engine_ns),
        ("client rx stack time, µs", |s| s.client_rx_stack_ns),
    ];
    let panels: Vec<Panel> = metrics
        .iter()
        .map(|(title, pick)| {
            let lines = sizes
                .iter()
                .map(|&size| {
                    let mut v: Vec<u64> = run
                        .samples
                        .iter()
                        .filter(|s| s.size as usize == size)
                        .filter_map(pick)
                        .collect();
                    v.sort_unstable();
                    (size, v)
                })
                .filter(|(_, v)| !v.is_empty())
                .collect::<Vec<_>>();
            (*title, lines)
        })
        .filter(|(_, lines)| !lines.is_empty())
        .collect();
    let h = PANEL_H * panels.len().max(1) as f64;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" viewBox="0 0 {W} {h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="{W}" height="{h}" fill="white"/>"#);
    for (k, (title, lines)) in panels.iter().enumerate() {
        panel(&mut s, k as f64 * PANEL_H, title, lines);
    }
    s.push_str("</svg>\n");
    s
}

fn panel(s: &mut String, y0: f64, title: &str, lines: &[(usize, Vec<u64>)]) {
    let pw = W - LEFT - RIGHT;
    let ph = PANEL_H - TOP - BOTTOM;
    let x_max_ns = lines
        .iter()
        .filter_map(|(_, v)| percentile(v, 99.0))
        .max()
        .unwrap_or(1)
        .max(1) as f64
        * 1.2;
    let x_max = nice(x_max_ns / 1000.0);
    let px = |us: f64| LEFT + (us / x_max).min(1.0) * pw;
    let py = |q: f64| y0 + TOP + (1.0 - q) * ph;
    let _ = writeln!(
        s,
        r#"<text x="{LEFT}" y="{}" font-weight="bold">CDF of {}</text>"#,
        y0 + TOP - 12.0,
        esc(title)
    );
    let _ = writeln!(
        s,
        r##"<rect x="{LEFT}" y="{}" width="{pw}" height="{ph}" fill="none" stroke="#444"/>"##,
        y0 + TOP
    );
    for k in 0..=5 {
        let us = x_max * k as f64 / 5.0;
        let x = px(us);
        let _ = writeln!(
            s,
            r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="#ddd"/><text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            py(0.0),
            py(1.0),
            py(0.0) + 16.0,
            fmt_us(us)
        );
    }
    for q in [0.0, 0.2, 0.5, 0.99, 1.0] {
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
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">µs</text>"#,
        LEFT + pw / 2.0,
        py(0.0) + 34.0
    );
    for (k, (size, v)) in lines.iter().enumerate() {
        let color = COLORS[k % COLORS.len()];
        let n = v.len();
        let step = n.div_ceil(MAX_POINTS).max(1);
        let mut pts = String::new();
        let mut i = 0;
        while i < n {
            let q = (i + 1) as f64 / n as f64;
            let _ = write!(pts, "{:.1},{:.1} ", px(v[i] as f64 / 1000.0), py(q));
            i = if i + 1 < n { (i + step).min(n - 1) } else { n };
        }
        let _ = writeln!(
            s,
            r#"<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{}"/>"#,
            pts.trim_end()
        );
        let ly = y0 + TOP + 14.0 + k as f64 * 18.0;
        let lx = LEFT + pw + 14.0;
        let _ = writeln!(
            s,
            r#"<line x1="{lx}" y1="{ly}" x2="{}" y2="{ly}" stroke="{color}" stroke-width="3"/><text x="{}" y="{}">{size} B (n {n})</text>"#,
            lx + 20.0,
            lx + 26.0,
            ly + 4.0
        );
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

fn fmt_us(us: f64) -> String {
    if us >= 10.0 || us == 0.0 {
        format!("{us:.0}")
    } else {
        format!("{us:.2}")
    }
}

fn esc(t: &str) -> String {
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
    }

    #[test]
    fn one_line_per_size_per_metric() {
        let samples: Vec<Sample> = (0..1000u32)
            .map(|i| Sample {
                seq: i,
                size: if i % 2 == 0 { 32 } else { 1400 },
                echoed: true,
                rtt_ns: Some(40_000 + u64::from(i)),
                server_stack_ns: Some(8_000 + u64::from(i)),
                ..Sample::default()
            })
            .collect();
        let run = ClientRun {
            samples,
            ..ClientRun::default()
        };
        let doc = svg(&run, &[32, 1400]);
        assert!(doc.starts_with("<svg") && doc.trim_end().ends_with("</svg>"));
        assert_eq!(doc.matches("<polyline").count(), 4);
        assert!(doc.contains("1400 B (n 500)"));
        assert!(!doc.contains("engine"));
    }
}
