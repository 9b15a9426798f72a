//! `weir check --stats`: what the classifier costs and saves on a ruleset.

use std::fmt::Write;
use std::path::Path;
use std::time::Instant;
use weir_engine::{Engine, Parts, Program};
use weir_gen::{GenConfig, Generator};
use weir_wire::{decode, Direction, LinkType, L3};

/// Packets of the generated trace the candidate count is averaged over.
const PACKETS: u64 = 10_000;

/// What `--stats` measured.
#[derive(serde::Serialize)]
struct Stats {
    rules: String,
    /// Rules, the implicit default rule not counted.
    rule_count: usize,
    micro_instructions: usize,
    walk: String,
    /// The tries' parts (absent for other walks).
    #[serde(skip_serializing_if = "Option::is_none")]
    parts: Option<Parts>,
    build_ms: f64,
    classifier_bytes: usize,
    /// Average candidates per IP packet of the generated trace.
    candidates_per_packet: f64,
    ip_packets: u64,
    generated: u64,
}

/// The report: one line per figure, or one JSON object.
pub fn report(path: &Path, program: Program, json: bool) -> String {
    let stats = measure(path, program);
    if json {
        let mut text = serde_json::to_string(&stats).unwrap_or_default();
        text.push('\n');
        return text;
    }
    render(&stats)
}

fn measure(path: &Path, program: Program) -> Stats {
    let (n, insns) = (program.rules.len() - 1, program.insns.len());
    let start = Instant::now();
    let mut engine = Engine::new(program);
    let build = start.elapsed();
    let mut generator = Generator::new(GenConfig {
        seed: 7,
        count: PACKETS,
        ..GenConfig::default()
    });
    let (mut packets, mut candidates) = (0u64, 0u64);
    while let Some(f) = generator.next_frame() {
        let mut p = decode(LinkType::ETHERNET, f.data, f.data.len() as u32);
        p.direction = Direction::In;
        // Frames that are not IP (or malformed) never walk the rules.
        if p.l3 == L3::Ip {
            candidates += engine.candidate_count(&p) as u64;
            packets += 1;
        }
    }
    Stats {
        rules: path.display().to_string(),
        rule_count: n,
        micro_instructions: insns,
        walk: format!("{:?}", engine.walk_kind()).to_lowercase(),
        parts: engine.classifier_parts(),
        build_ms: build.as_secs_f64() * 1e3,
        classifier_bytes: engine.classifier_memory(),
        candidates_per_packet: candidates as f64 / packets.max(1) as f64,
        ip_packets: packets,
        generated: PACKETS,
    }
}

fn render(s: &Stats) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}: {} rules, {} micro-instructions",
        s.rules, s.rule_count, s.micro_instructions
    );
    let _ = writeln!(out, "walk:        {}", s.walk);
    if let Some(parts) = s.parts {
        // What a ruleset too large for its automata cost: bit blocks are
        // slower to look up, unindexed rules are tried by every packet.
        let _ = writeln!(
            out,
            "parts:       {} automata, {} bit blocks, {} rules every packet tries (summed over IPv4 and IPv6)",
            parts.automata, parts.blocks, parts.unindexed
        );
        let groups = match parts.by_destination {
            true => "by destination (up to two automata a family before any split)",
            false => "by both addresses (up to four automata a family before any split)",
        };
        let _ = writeln!(out, "groups:      {groups}");
        if parts.head_automata < parts.automata {
            // Past 32k rules: the first 8,192 rules' automata, then later
            // tiers' for the packets those do not decide.
            let _ = writeln!(
                out,
                "tiers:       {} automata every packet walks, {} only past the first 8192 rules",
                parts.head_automata,
                parts.automata - parts.head_automata
            );
        }
    }
    let _ = writeln!(out, "build time:  {:.1} ms", s.build_ms);
    let _ = writeln!(
        out,
        "memory:      {} KiB",
        s.classifier_bytes.div_ceil(1024)
    );
    let _ = writeln!(
        out,
        "candidates:  {:.1} rules per packet on average (of {}), over the {} IP packets of {} generated (seed 7)",
        s.candidates_per_packet,
        s.rule_count + 1,
        s.ip_packets,
        s.generated
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(parts: Parts) -> Stats {
        Stats {
            rules: "big.rules".into(),
            rule_count: 100_000,
            micro_instructions: 400_000,
            walk: "trie".into(),
            parts: Some(parts),
            build_ms: 1.0,
            classifier_bytes: 1 << 20,
            candidates_per_packet: 2.0,
            ip_packets: 10,
            generated: 10,
        }
    }

    /// A tiered classifier says how many automata every packet walks; a
    /// one-tier classifier prints no tiers line.
    #[test]
    fn tiers_line_only_for_two_tiers() {
        let two = Parts {
            automata: 15,
            head_automata: 4,
            blocks: 6,
            unindexed: 0,
            by_destination: false,
        };
        let out = render(&stats(two));
        assert!(
            out.contains("tiers:       4 automata every packet walks, 11 only past"),
            "{out}"
        );
        let one = Parts {
            head_automata: 15,
            ..two
        };
        assert!(!render(&stats(one)).contains("tiers:"));
    }

    /// The groups line says which grouping the build kept.
    #[test]
    fn groups_line_names_the_grouping() {
        let parts = Parts {
            automata: 3,
            head_automata: 3,
            ..Parts::default()
        };
        let by = |by_destination| {
            render(&stats(Parts {
                by_destination,
                ..parts
            }))
        };
        assert!(
            by(true).contains("groups:      by destination"),
            "{}",
            by(true)
        );
        assert!(
            by(false).contains("groups:      by both addresses"),
            "{}",
            by(false)
        );
    }
}
