//! The CDF plot: a golden document for fixed samples, and the geometry
//! checked on its own (every curve inside its frame, rising left to
//! right, marks where the nearest-rank quantiles put them).
//!
//! `UPDATE_GOLDENS=1 cargo test -p weir-stats --test cdf` rewrites the
//! golden file after a deliberate change; review the diff.

use weir_stats::cdf::{svg, Line, Panel, Scale};
use weir_stats::quantile;

fn panels() -> Vec<Panel> {
    // Deterministic, skewed samples: a body around 20 µs and a tail.
    let mut small: Vec<u64> = (0..5000u64).map(|i| 18_000 + (i * 7919) % 4000).collect();
    small.extend((0..50u64).map(|i| 60_000 + i * 1000));
    small.sort_unstable();
    let large: Vec<u64> = small.iter().map(|v| v + 9_000).collect();
    let ns: Vec<f32> = (1..=3000).map(|i| 10.0 + (i % 97) as f32 * 1.5).collect();
    let mut ns = ns;
    ns.sort_by(f32::total_cmp);
    vec![
        Panel {
            title: "CDF of round trip <µs> & more".into(),
            x_label: "round trip".into(),
            scale: Scale::Linear,
            lines: vec![
                Line::new("32 B", &small, |v| v as f64),
                Line::new("1400 B", &large, |v| v as f64),
            ],
            marks: false,
        },
        Panel {
            title: "empty panels are left out".into(),
            x_label: String::new(),
            scale: Scale::Linear,
            lines: vec![Line::new("none", &[] as &[u64], |v| v as f64)],
            marks: false,
        },
        Panel {
            title: "CDF of ns per packet".into(),
            x_label: "ns per packet (log scale)".into(),
            scale: Scale::Log,
            lines: vec![Line::new("", &ns, f64::from)],
            marks: true,
        },
    ]
}

#[test]
fn matches_the_golden_document() {
    let doc = svg(&panels());
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/cdf.svg");
    if std::env::var_os("UPDATE_GOLDENS").is_some() {
        std::fs::write(path, &doc).unwrap();
    }
    let want = std::fs::read_to_string(path).expect("golden file");
    assert_eq!(doc, want, "run with UPDATE_GOLDENS=1 and review the diff");
}

fn attr(tag: &str, name: &str) -> f64 {
    let start = tag.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
    let end = start + tag[start..].find('"').unwrap();
    tag[start..end].parse().unwrap()
}

#[test]
fn curves_rise_inside_their_frames() {
    let doc = svg(&panels());
    assert!(doc.starts_with("<svg") && doc.ends_with("</svg>\n"));
    assert!(!doc.contains("empty panels"));
    assert!(doc.contains("CDF of round trip &lt;µs&gt; &amp; more"));
    assert_eq!(doc.matches("<polyline").count(), 3);
    assert!(doc.contains("32 B (n 5050)") && doc.contains("1400 B (n 5050)"));
    let frames: Vec<&str> = doc.lines().filter(|l| l.starts_with("<rect x=")).collect();
    assert_eq!(frames.len(), 2);
    let polylines = doc.lines().filter(|l| l.starts_with("<polyline"));
    for (k, line) in polylines.enumerate() {
        let frame = frames[usize::from(k == 2)];
        let (x0, y0) = (attr(frame, "x"), attr(frame, "y"));
        let (x1, y1) = (x0 + attr(frame, "width"), y0 + attr(frame, "height"));
        let pts = line
            .split("points=\"")
            .nth(1)
            .unwrap()
            .trim_end_matches("\"/>");
        let mut last = (f64::MIN, f64::MAX);
        for p in pts.split(' ') {
            let (x, y) = p.split_once(',').unwrap();
            let (x, y): (f64, f64) = (x.parse().unwrap(), y.parse().unwrap());
            assert!(
                (x0..=x1).contains(&x) && (y0..=y1).contains(&y),
                "{p} outside"
            );
            assert!(x >= last.0 && y <= last.1, "{p} after {last:?}: not rising");
            last = (x, y);
        }
    }
}

#[test]
fn marks_name_the_nearest_rank_quantiles() {
    let doc = svg(&panels());
    let mut ns: Vec<f32> = (1..=3000).map(|i| 10.0 + (i % 97) as f32 * 1.5).collect();
    ns.sort_by(f32::total_cmp);
    for (q, name) in [(0.2, "p20"), (0.5, "p50"), (0.99, "p99")] {
        let v = quantile(&ns, q).unwrap();
        let text = format!(">{name} {v:.0} ns<");
        assert!(doc.contains(&text), "{text} missing");
    }
}
