//! `weir check --stats`: what the classifier costs and saves on a ruleset.

use std::fmt::Write;
use std::path::Path;
use std::time::Instant;
use weir_engine::{Engine, Program};
use weir_gen::{GenConfig, Generator};
use weir_wire::{decode, Direction, LinkType, L3};

/// Packets of the generated trace the candidate count is averaged over.
const PACKETS: u64 = 10_000;

/// The report, one line per figure.
pub fn report(path: &Path, program: Program) -> String {
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
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}: {n} rules, {insns} micro-instructions",
        path.display()
    );
    let _ = writeln!(
        out,
        "walk:        {}",
        format!("{:?}", engine.walk_kind()).to_lowercase()
    );
    if let Some(parts) = engine.classifier_parts() {
        // What a ruleset too large for its automata cost: bit blocks are
        // slower to look up, unindexed rules are tried by every packet.
        let _ = writeln!(
            out,
            "parts:       {} automata, {} bit blocks, {} rules every packet tries (summed over IPv4 and IPv6)",
            parts.automata, parts.blocks, parts.unindexed
        );
    }
    let _ = writeln!(out, "build time:  {:.1} ms", build.as_secs_f64() * 1e3);
    let _ = writeln!(
        out,
        "memory:      {} KiB",
        engine.classifier_memory().div_ceil(1024)
    );
    let _ = writeln!(
        out,
        "candidates:  {:.1} rules per packet on average (of {}), over the {packets} IP packets of {PACKETS} generated (seed 7)",
        candidates as f64 / packets.max(1) as f64,
        n + 1
    );
    out
}
