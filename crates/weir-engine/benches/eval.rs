//! Engine throughput on packets already decoded and held in memory.
//!
//! `cargo bench -p weir-engine --bench eval`: 1M generated packets (seed 7)
//! through rules/realistic-100.rules, both dispatch strategies; criterion
//! reports packets/s. A one-rule ruleset gives the floor (rule header +
//! default rule) for comparison in the same run.

mod common;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use weir_engine::{load, CompileOptions, DispatchKind, Engine};
use weir_rules::Names;

/// The user-facing example ruleset at the repository root, read when the
/// bench starts (benches run from a checkout; nothing is embedded).
fn realistic() -> String {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../rules/realistic-100.rules"
    );
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

const PACKETS: u64 = 1_000_000;

fn engine(rules: &str, dispatch: DispatchKind) -> Engine {
    let prog =
        load(rules, &Names::default(), &CompileOptions::default()).expect("ruleset compiles");
    Engine::builder(prog).dispatch(dispatch).build()
}

fn bench(c: &mut Criterion) {
    let packets = common::packets(PACKETS);
    // The realistic ruleset logs its final deny; logging is measured elsewhere.
    let rules = realistic().replace("deny log logamount 100", "deny");
    let mut group = c.benchmark_group("engine_1M_packets");
    group.throughput(Throughput::Elements(PACKETS));
    group.sample_size(10);
    for (name, text) in [
        ("realistic-100", rules.as_str()),
        ("one-rule", "100 allow tcp from any to any 80\n"),
    ] {
        for (dname, d) in [
            ("match", DispatchKind::Match),
            ("table", DispatchKind::Table),
        ] {
            group.bench_function(format!("{name}/{dname}"), |b| {
                b.iter_batched_ref(
                    || engine(text, d),
                    |e| {
                        for p in &packets {
                            criterion::black_box(e.decide(p));
                        }
                    },
                    BatchSize::LargeInput,
                )
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
