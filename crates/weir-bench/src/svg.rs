//! A small hand-written SVG: the CDF of per-packet cost, log-scaled x.

use std::fmt::Write;

/// Draws the CDF of `sorted_ns` (ascending), marking p20, p50 and p99.
pub fn cdf(sorted_ns: &[f32], title: &str) -> String {
    let (w, h) = (720.0, 420.0);
    let (left, right, top, bottom) = (70.0, 20.0, 40.0, 50.0);
    let (pw, ph) = (w - left - right, h - top - bottom);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="{w}" height="{h}" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="22" text-anchor="middle" font-size="14">{}</text>"#,
        w / 2.0,
        escape(title)
    );
    if sorted_ns.is_empty() {
        s.push_str("</svg>\n");
        return s;
    }
    let lo = f64::from(sorted_ns[0]).max(0.1);
    let hi = f64::from(sorted_ns[sorted_ns.len() - 1]).max(lo * 10.0);
    let (l0, l1) = (lo.log10().floor(), hi.log10().ceil());
    let x = |ns: f64| left + (ns.max(lo).log10() - l0) / (l1 - l0) * pw;
    let y = |f: f64| top + (1.0 - f) * ph;
    // Grid and axes.
    for d in (l0 as i32)..=(l1 as i32) {
        for m in [1.0, 2.0, 5.0] {
            let v = m * 10f64.powi(d);
            if v.log10() > l1 + 1e-9 {
                continue;
            }
            let xv = x(v);
            let _ = writeln!(
                s,
                r##"<line x1="{xv:.1}" y1="{top}" x2="{xv:.1}" y2="{}" stroke="#ddd"/><text x="{xv:.1}" y="{}" text-anchor="middle">{}</text>"##,
                top + ph,
                top + ph + 16.0,
                fmt_ns(v)
            );
        }
    }
    for i in 0..=4 {
        let f = f64::from(i) / 4.0;
        let yv = y(f);
        let _ = writeln!(
            s,
            r##"<line x1="{left}" y1="{yv:.1}" x2="{}" y2="{yv:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">{f:.2}</text>"##,
            left + pw,
            left - 6.0,
            yv + 4.0
        );
    }
    let _ = writeln!(
        s,
        r#"<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="black"/>"#
    );
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">ns per packet (log scale)</text>"#,
        left + pw / 2.0,
        h - 10.0
    );
    let _ = writeln!(
        s,
        r#"<text transform="translate(16 {}) rotate(-90)" text-anchor="middle">fraction of packets</text>"#,
        top + ph / 2.0
    );
    // The curve: at most ~2000 points, always including both ends.
    let n = sorted_ns.len();
    let step = (n / 2000).max(1);
    let mut pts = String::new();
    for i in (0..n).step_by(step).chain([n - 1]) {
        let _ = write!(
            pts,
            "{:.1},{:.1} ",
            x(f64::from(sorted_ns[i])),
            y((i + 1) as f64 / n as f64)
        );
    }
    let _ = writeln!(
        s,
        r##"<polyline points="{}" fill="none" stroke="#1f5fa8" stroke-width="2"/>"##,
        pts.trim_end()
    );
    for (q, label) in [(0.20, "p20"), (0.50, "p50"), (0.99, "p99")] {
        let i = ((q * n as f64).ceil() as usize).clamp(1, n) - 1;
        let v = f64::from(sorted_ns[i]);
        let (xv, yv) = (x(v), y(q));
        let _ = writeln!(
            s,
            r##"<circle cx="{xv:.1}" cy="{yv:.1}" r="3" fill="#c0392b"/><text x="{:.1}" y="{:.1}">{label} {}</text>"##,
            xv + 6.0,
            yv + 14.0,
            fmt_ns(v)
        );
    }
    s.push_str("</svg>\n");
    s
}

fn fmt_ns(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.0} ms", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.0} µs", v / 1e3)
    } else if v >= 1.0 {
        format!("{v:.0} ns")
    } else {
        format!("{v:.1} ns")
    }
}

fn escape(t: &str) -> String {
    t.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    #[test]
    fn draws_a_curve_and_marks() {
        let v: Vec<f32> = (1..=1000).map(|i| i as f32).collect();
        let s = super::cdf(&v, "t <1>");
        assert!(s.starts_with("<svg") && s.trim_end().ends_with("</svg>"));
        assert!(s.contains("<polyline") && s.contains("p99"));
        assert!(s.contains("t &lt;1&gt;"));
        assert!(super::cdf(&[], "empty").contains("</svg>"));
    }
}
