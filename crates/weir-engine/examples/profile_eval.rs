//! Replays generated packets through a ruleset many times, for profilers:
//! `valgrind --tool=callgrind target/release/examples/profile_eval RULES [N] [ROUNDS] [table] [linear]`.

use weir_engine::{load, CompileOptions, CostCounter, DispatchKind, Engine, WalkKind};
use weir_gen::{GenConfig, Generator};
use weir_rules::Names;
use weir_wire::{decode, Direction, LinkType};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let rules = std::fs::read_to_string(&args[1]).expect("ruleset file");
    let n: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let rounds: u32 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(10);
    let mut g = Generator::new(GenConfig {
        seed: 7,
        count: n,
        ..GenConfig::default()
    });
    let mut packets = Vec::new();
    while let Some(f) = g.next_frame() {
        let mut p = decode(LinkType::ETHERNET, f.data, f.data.len() as u32);
        p.direction = Direction::In;
        packets.push(p);
    }
    let prog =
        load(&rules, &Names::default(), &CompileOptions::default()).expect("ruleset compiles");
    let mut b = Engine::builder(prog);
    // Optional 4th and 5th arguments: `table` dispatch, `linear` walk.
    for flag in args.iter().skip(4) {
        b = match flag.as_str() {
            "table" => b.dispatch(DispatchKind::Table),
            "linear" => b.walk(WalkKind::Linear),
            other => panic!("unknown flag {other}"),
        }
    }
    let mut e = b.build();
    let start = std::time::Instant::now();
    for _ in 0..rounds {
        for p in &packets {
            std::hint::black_box(e.decide(p));
        }
    }
    let ns = start.elapsed().as_nanos() as f64 / (n as f64 * rounds as f64);
    let mut cost = CostCounter::default();
    for p in &packets {
        e.decide_observed(p, &mut cost);
    }
    eprintln!(
        "{ns:.1} ns/packet, {:.1} Mpps; per packet {:.1} rules and {:.1} instructions tried",
        1e3 / ns,
        cost.rules as f64 / n as f64,
        cost.insns as f64 / n as f64
    );
}
