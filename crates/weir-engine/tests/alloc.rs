//! Deciding packets does not allocate, on the tiered trie classifier too:
//! a later tier's automata are walked and merged into the engine's
//! scratch, sized when the engine was built (`counting_alloc`, shared with
//! weir-gen's test: this test binary's allocator counts).

#[path = "../../weir-gen/tests/counting_alloc/mod.rs"]
mod counting_alloc;
#[path = "../benches/common/rulegen.rs"]
mod rulegen;

use counting_alloc::{allocations, counting};
use weir_engine::{load, CompileOptions, Engine, WalkKind};
use weir_rules::Names;

/// 40,000 random rules (tiered: the automata cannot hold them whole), a
/// trace that reaches every tier: no allocation deciding it, one packet
/// at a time or in batches.
#[test]
fn deciding_does_not_allocate() {
    let rs = rulegen::random(40_000, 5, false);
    let trace = rulegen::trace(&rs, 3000, 6);
    let prog = load(&rs.text, &Names::default(), &CompileOptions::default()).expect("rules");
    let mut e = Engine::builder(prog).walk(WalkKind::Trie).build();
    let parts = e.classifier_parts().expect("a trie");
    assert!(parts.head_automata < parts.automata, "{parts:?}");
    let mut out = Vec::with_capacity(64);
    let late = trace
        .iter()
        .filter(|p| e.decide(p).rule.is_some_and(|r| r > 24_576))
        .count();
    assert!(late > 30, "{late} packets decided past the second tier");
    counting(true);
    for p in &trace {
        std::hint::black_box(e.decide(p));
    }
    for chunk in trace.chunks(64) {
        e.decide_batch(chunk, &mut out);
    }
    counting(false);
    assert_eq!(allocations(), 0, "allocations while deciding");
}
