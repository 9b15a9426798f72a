//! What dynamic states cost: 1M generated packets (seed 7) through a
//! one-rule stateless ruleset and the same rule with `keep-state` behind a
//! `check-state`, so every packet looks its flow up and new flows insert.
//!
//! `cargo bench -p weir-engine --bench state`

mod common;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use weir_engine::{load, CompileOptions, Engine};
use weir_rules::Names;

const PACKETS: u64 = 1_000_000;

fn engine(rules: &str) -> Engine {
    let prog =
        load(rules, &Names::default(), &CompileOptions::default()).expect("ruleset compiles");
    Engine::new(prog)
}

fn bench(c: &mut Criterion) {
    let packets = common::packets(PACKETS);
    let mut group = c.benchmark_group("state_1M_packets");
    group.throughput(Throughput::Elements(PACKETS));
    group.sample_size(10);
    for (name, text) in [
        ("stateless", "100 allow ip from any to any\n"),
        (
            "keep-state",
            "50 check-state\n100 allow ip from any to any keep-state\n",
        ),
    ] {
        group.bench_function(name, |b| {
            b.iter_batched_ref(
                || engine(text),
                |e| {
                    // One packet per microsecond: nothing expires mid-run.
                    for (k, p) in packets.iter().enumerate() {
                        e.set_time(k as u64 * 1000);
                        criterion::black_box(e.decide(p));
                    }
                },
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
