//! What a scrape shows: the engine's counters and a source's own, copied
//! from the packet thread ([`Snapshot::update`]) and rendered in the
//! Prometheus text exposition format, version 0.0.4 ([`Snapshot::render`]).
//!
//! The rendering is written here, not taken from a crate: the official
//! `prometheus-client` encodes OpenMetrics 1.0 (`# EOF`, its own media
//! type), not 0.0.4, and both it and the `prometheus` crate keep live
//! metrics in a registry, where weir has a copied snapshot to print. The
//! 80 lines below are checked by `promtool check metrics` and by a real
//! Prometheus scrape (tests/metrics_server.rs).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use weir_engine::{Engine, Stats};
use weir_wire::Malformed;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
}

/// One metric a source adds beside the engine's, e.g. kernel queue drops.
/// `labels` is the rendered label set without braces (`""` for none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    pub name: &'static str,
    pub help: &'static str,
    pub kind: Kind,
    pub labels: &'static str,
    pub value: u64,
}

/// A rule's counters as published.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RuleSample {
    pub number: u16,
    pub action: &'static str,
    pub packets: u64,
    pub bytes: u64,
}

/// Everything a scrape shows, copied from the packet thread.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub rules: Vec<RuleSample>,
    pub stats: Stats,
    pub extra: Vec<Sample>,
}

impl Snapshot {
    /// Copies the engine's counters in (reusing the vectors' memory).
    pub fn update(&mut self, engine: &Engine, extra: &[Sample]) {
        self.rules.clear();
        self.rules.extend(
            engine
                .program()
                .rules
                .iter()
                .zip(engine.counters())
                .map(|(r, c)| RuleSample {
                    number: r.number,
                    action: r.action.word(),
                    packets: c.packets,
                    bytes: c.bytes,
                }),
        );
        self.stats.clone_from(engine.stats());
        self.extra.clear();
        self.extra.extend_from_slice(extra);
    }

    /// Adds another packet thread's snapshot (workers running one program):
    /// rule counters by position, statistics, and samples of the same name
    /// and labels summed (counts of states, drops and the like add up).
    pub fn add(&mut self, o: &Snapshot) {
        if self.rules.len() == o.rules.len() {
            for (a, b) in self.rules.iter_mut().zip(&o.rules) {
                a.packets += b.packets;
                a.bytes += b.bytes;
            }
        } else if self.rules.is_empty() {
            self.rules.clone_from(&o.rules);
        }
        self.stats.add(&o.stats);
        for b in &o.extra {
            match self
                .extra
                .iter_mut()
                .find(|a| (a.name, a.labels) == (b.name, b.labels))
            {
                Some(a) => a.value += b.value,
                None => self.extra.push(*b),
            }
        }
    }

    /// The text exposition format (version 0.0.4).
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(4096);
        // Rules that share a number and action (ipfw allows it) are one
        // series: a label set may appear only once.
        let mut by_rule: BTreeMap<(u16, &str), (u64, u64)> = BTreeMap::new();
        for r in &self.rules {
            let e = by_rule.entry((r.number, r.action)).or_default();
            e.0 += r.packets;
            e.1 += r.bytes;
        }
        header(
            &mut out,
            "weir_rule_packets_total",
            "Packets each rule matched.",
            Kind::Counter,
        );
        for ((n, a), (p, _)) in &by_rule {
            let _ = writeln!(
                out,
                "weir_rule_packets_total{{rule=\"{n}\",action=\"{a}\"}} {p}"
            );
        }
        header(
            &mut out,
            "weir_rule_bytes_total",
            "Bytes (IP length) each rule matched.",
            Kind::Counter,
        );
        for ((n, a), (_, b)) in &by_rule {
            let _ = writeln!(
                out,
                "weir_rule_bytes_total{{rule=\"{n}\",action=\"{a}\"}} {b}"
            );
        }
        let s = &self.stats;
        header(
            &mut out,
            "weir_packets_total",
            "Packets decided, by verdict.",
            Kind::Counter,
        );
        let _ = writeln!(out, "weir_packets_total{{verdict=\"pass\"}} {}", s.passed);
        let _ = writeln!(out, "weir_packets_total{{verdict=\"drop\"}} {}", s.dropped);
        header(
            &mut out,
            "weir_non_ip_packets_total",
            "Frames that were not IP.",
            Kind::Counter,
        );
        let _ = writeln!(out, "weir_non_ip_packets_total {}", s.non_ip);
        header(
            &mut out,
            "weir_malformed_packets_total",
            "Packets that claimed IP but could not be decoded, by reason.",
            Kind::Counter,
        );
        for m in Malformed::ALL {
            let _ = writeln!(
                out,
                "weir_malformed_packets_total{{reason=\"{}\"}} {}",
                m.name(),
                s.malformed[m as usize]
            );
        }
        let mut last = "";
        for e in &self.extra {
            if e.name != last {
                header(&mut out, e.name, e.help, e.kind);
                last = e.name;
            }
            if e.labels.is_empty() {
                let _ = writeln!(out, "{} {}", e.name, e.value);
            } else {
                let _ = writeln!(out, "{}{{{}}} {}", e.name, e.labels, e.value);
            }
        }
        out
    }
}

fn header(out: &mut String, name: &str, help: &str, kind: Kind) {
    let kind = match kind {
        Kind::Counter => "counter",
        Kind::Gauge => "gauge",
    };
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_packets::{engine, ipv4_udp};

    #[test]
    fn renders_rules_verdicts_and_extras() {
        let mut e = engine("300 deny udp from any to any 53\n300 deny udp from any to any 54\n400 allow ip from any to any\n");
        for port in [53, 54, 80] {
            let p = ipv4_udp(port);
            e.decide(&weir_wire::decode(weir_wire::LinkType::RAW, &p, 28));
        }
        e.decide(&weir_wire::decode(weir_wire::LinkType::RAW, &[0x45, 0], 2));
        let mut s = Snapshot::default();
        let extra = [Sample {
            name: "weir_queue_dropped_total",
            help: "Dropped by the kernel.",
            kind: Kind::Counter,
            labels: "queue=\"0\"",
            value: 7,
        }];
        s.update(&e, &extra);
        let text = s.render();
        let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(
            lines[..6],
            [
                "weir_rule_packets_total{rule=\"300\",action=\"deny\"} 2",
                "weir_rule_packets_total{rule=\"400\",action=\"allow\"} 1",
                "weir_rule_packets_total{rule=\"65535\",action=\"deny\"} 0",
                "weir_rule_bytes_total{rule=\"300\",action=\"deny\"} 56",
                "weir_rule_bytes_total{rule=\"400\",action=\"allow\"} 28",
                "weir_rule_bytes_total{rule=\"65535\",action=\"deny\"} 0",
            ]
        );
        assert!(lines.contains(&"weir_packets_total{verdict=\"pass\"} 1"));
        assert!(lines.contains(&"weir_packets_total{verdict=\"drop\"} 3"));
        let malformed: u64 = lines
            .iter()
            .filter(|l| l.starts_with("weir_malformed_packets_total{"))
            .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
            .sum();
        assert_eq!(malformed, 1);
        assert!(text.ends_with(
            "# TYPE weir_queue_dropped_total counter\nweir_queue_dropped_total{queue=\"0\"} 7\n"
        ));
        // Every metric has exactly one TYPE line, before its samples.
        for name in lines.iter().map(|l| l.split(['{', ' ']).next().unwrap()) {
            let ty = format!("# TYPE {name} ");
            assert_eq!(text.matches(&ty).count(), 1, "{name}");
            assert!(text.find(&ty).unwrap() < text.find(&format!("\n{name}")).unwrap());
        }
    }
}
