//! The distributions of a client run as SVG: one panel per metric, one CDF
//! line per probe size, on a linear axis (`weir_stats::cdf` draws them).

use crate::client::{ClientRun, Sample};
use weir_stats::cdf::{self, Line, Panel, Scale};

type Pick = fn(&Sample) -> Option<u64>;

/// The distributions of a client run as an SVG document.
pub fn svg(run: &ClientRun, sizes: &[usize]) -> String {
    let metrics: [(&str, Pick); 4] = [
        ("server stack time (kernel rx → process)", |s| {
            s.server_stack_ns
        }),
        ("round trip", |s| s.rtt_ns),
        ("engine time per packet", |s| s.engine_ns),
        ("client rx stack time", |s| s.client_rx_stack_ns),
    ];
    let panels: Vec<Panel> = metrics
        .iter()
        .map(|(title, pick)| Panel {
            title: format!("CDF of {title}"),
            x_label: (*title).to_owned(),
            scale: Scale::Linear,
            lines: sizes
                .iter()
                .map(|&size| {
                    let mut v: Vec<u64> = run
                        .samples
                        .iter()
                        .filter(|s| s.size as usize == size)
                        .filter_map(pick)
                        .collect();
                    v.sort_unstable();
                    Line::new(format!("{size} B"), &v, |ns| ns as f64)
                })
                .collect(),
            marks: false,
        })
        .collect();
    cdf::svg(&panels)
}

#[cfg(test)]
mod tests {
    use super::*;

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
