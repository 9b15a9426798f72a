//! The batched decision on the random ruleset of the classifier's benches
//! (`benches/common/rulegen.rs`, `random`, seed 1) over its trace (seed 2),
//! for instruction counts, which stay put on a noisy machine where times
//! do not:
//!
//! `valgrind --tool=callgrind --toggle-collect='*decide_all*' \
//!   target/release/examples/random_decide 100000 2000`
//!
//! Prints the classifier's parts, candidates a packet, where the deciding
//! rules sit, the best of five passes' ns a packet and a checksum of the
//! deciding rules (equal checksums: equal decisions); with `linear`, also
//! the linear walk's best of three on the first 2,000 packets, its
//! checksum there and the ratio (times on one machine, in one run).
//! `cargo run --release -p weir-engine --example random_decide -- N [PACKETS] [linear] [acl|fw|ipc]`
//! (the last: a ClassBench kind's set, `rulegen::ruleset`, instead).

#[path = "../benches/common/rulegen.rs"]
mod rulegen;

use std::time::Instant;
use weir_engine::{load, CompileOptions, Decision, Engine, WalkKind};
use weir_rules::Names;
use weir_wire::Packet;

const PASSES: usize = 5;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).and_then(|s| s.parse().ok()).expect("N rules");
    let count: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(2_000);
    let kind = rulegen::Kind::ALL
        .into_iter()
        .find(|k| args.iter().skip(3).any(|a| a == k.name()));
    let rs = match kind {
        Some(kind) => rulegen::ruleset(kind, n, 1, false),
        None => rulegen::random(n, 1, false),
    };
    let trace = rulegen::trace(&rs, count, 2);
    let prog = load(&rs.text, &Names::default(), &CompileOptions::default())
        .expect("generated rules compile");
    let start = Instant::now();
    let mut e = Engine::new(prog.clone());
    let build = start.elapsed();
    let cands: usize = trace.iter().map(|p| e.candidate_count(p)).sum();
    println!(
        "built in {:.0} ms: {:?}, {:.1} MiB, {:.1} candidates/packet",
        build.as_secs_f64() * 1e3,
        e.classifier_parts(),
        e.classifier_memory() as f64 / (1 << 20) as f64,
        cands as f64 / trace.len() as f64
    );
    let mut out = Vec::with_capacity(64);
    let mut best = f64::MAX;
    let mut rules = Vec::new();
    for _ in 0..PASSES {
        let start = Instant::now();
        rules = decide_all(&mut e, &trace, &mut out);
        best = best.min(start.elapsed().as_nanos() as f64 / trace.len() as f64);
    }
    if args.iter().skip(3).any(|a| a == "linear") {
        let few = &trace[..trace.len().min(2_000)];
        let mut linear = Engine::builder(prog).walk(WalkKind::Linear).build();
        let mut slow = f64::MAX;
        let mut slow_rules = Vec::new();
        for _ in 0..3 {
            let start = Instant::now();
            slow_rules = decide_all(&mut linear, few, &mut out);
            slow = slow.min(start.elapsed().as_nanos() as f64 / few.len() as f64);
        }
        let mut fast = f64::MAX;
        for _ in 0..PASSES {
            let start = Instant::now();
            let fast_rules = decide_all(&mut e, few, &mut out);
            fast = fast.min(start.elapsed().as_nanos() as f64 / few.len() as f64);
            assert_eq!(fast_rules, slow_rules, "the linear walk decides the same");
        }
        println!(
            "first {} packets: linear {slow:.0} ns/packet, classifier {fast:.0} ns/packet: {:.1}x",
            few.len(),
            slow / fast
        );
    }
    rules.sort_unstable();
    let pct = |q: usize| rules[(rules.len() - 1) * q / 100];
    let sum = rules
        .iter()
        .fold(0u64, |s, &r| s.wrapping_mul(31) ^ r as u64);
    println!(
        "deciding rule: median {}, 90th {}, 99th {}; best {best:.0} ns/packet; checksum {sum}",
        pct(50),
        pct(90),
        pct(99)
    );
}

/// Every packet's deciding rule, in batches of 64 as the pipeline decides.
#[inline(never)]
fn decide_all(e: &mut Engine, trace: &[Packet], out: &mut Vec<Decision>) -> Vec<usize> {
    let mut rules = Vec::with_capacity(trace.len());
    for chunk in trace.chunks(64) {
        e.decide_batch(chunk, out);
        rules.extend(out.iter().map(|d| d.rule.unwrap_or(usize::MAX)));
    }
    rules
}
