//! Writes the random ruleset of the classifier's tests and benches
//! (`benches/common/rulegen.rs`, `random`): N rules from random prefixes
//! to random prefixes, mostly random port ranges, seeded; the set no
//! automaton budget holds whole.
//! `cargo run --release -p weir-engine --example random_rules -- N [SEED] > random.rules`

#[path = "../benches/common/rulegen.rs"]
mod rulegen;

use std::io::Write;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).and_then(|s| s.parse().ok()).expect("N rules");
    let seed: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1);
    let rs = rulegen::random(n, seed, false);
    std::io::stdout()
        .write_all(rs.text.as_bytes())
        .expect("write the rules");
}
