//! What the classifier made of a ruleset file: build time, memory and
//! parts (automata, bit blocks, unindexed rules), for tuning its budget:
//! `target/release/examples/classify_stats RULES [BYTES WORK]`.

use weir_engine::{load, Budget, CompileOptions, Engine};
use weir_rules::Names;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let text = std::fs::read_to_string(&args[1]).expect("ruleset file");
    let mut budget = Budget::default();
    if let (Some(bytes), Some(work)) = (args.get(2), args.get(3)) {
        budget.bytes = bytes.parse().expect("bytes");
        budget.work = work.parse().expect("work");
    }
    let prog = load(&text, &Names::default(), &CompileOptions::default()).expect("rules compile");
    let start = std::time::Instant::now();
    let e = Engine::builder(prog).budget(budget).build();
    println!(
        "{:?}: built in {:.1} ms, {:.1} MiB, {:?}",
        e.walk_kind(),
        start.elapsed().as_secs_f64() * 1e3,
        e.classifier_memory() as f64 / f64::from(1 << 20),
        e.classifier_parts()
    );
}
