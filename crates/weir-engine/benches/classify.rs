//! The classifier on large generated rulesets.
//!
//! `cargo bench -p weir-engine --bench classify`: `weir_classbench::gen`
//! rulesets (`common/rulegen.rs`, seed 1: what `weir gen-rules --seed 1`
//! writes, imported) of 1k, 10k and 100k rules of each kind (acl, fw, ipc),
//! with its trace of headers drawn from the rules (seed 2),
//! through the default walk (bitsets up to 1024 rules, tries above) and,
//! at 1k and 10k rules, the linear walk. Criterion reports packets/s; the
//! build time, classifier memory and average candidate count are printed
//! first. `WEIR_BENCH_FILTER=acl-10k` builds only the sets whose name
//! contains it (criterion's own filter still builds them all).

mod common;

use common::rulegen::{self, Kind};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use std::time::Instant;
use weir_engine::{load, CompileOptions, Engine, WalkKind};
use weir_rules::Names;
use weir_wire::Packet;

const PACKETS: usize = 100_000;
/// The linear walk is slow at 10k rules: fewer packets (same trace prefix).
const LINEAR_PACKETS: usize = 5_000;

fn bench(c: &mut Criterion) {
    let only = std::env::var("WEIR_BENCH_FILTER").unwrap_or_default();
    let mut group = c.benchmark_group("classify");
    group.sample_size(10);
    for n in [1_000usize, 10_000, 100_000] {
        for kind in Kind::ALL {
            let name = format!("{}-{}k", kind.name(), n / 1000);
            if !name.contains(&only) {
                continue;
            }
            let rs = rulegen::ruleset(kind, n, 1, false);
            let trace = rulegen::trace(&rs, PACKETS, 2);
            let prog = load(&rs.text, &Names::default(), &CompileOptions::default())
                .expect("generated rules compile");
            let start = Instant::now();
            let mut e = Engine::new(prog.clone());
            let build = start.elapsed();
            let cands: usize = trace.iter().map(|p| e.candidate_count(p)).sum();
            eprintln!(
                "{name}: {:?} built in {:.1} ms, {:.1} MiB, {:.1} candidates/packet",
                e.walk_kind(),
                build.as_secs_f64() * 1e3,
                e.classifier_memory() as f64 / (1 << 20) as f64,
                cands as f64 / trace.len() as f64
            );
            let mut walks = vec![("classified", e, &trace[..])];
            if n <= 10_000 {
                let linear = Engine::builder(prog).walk(WalkKind::Linear).build();
                walks.push(("linear", linear, &trace[..LINEAR_PACKETS]));
            }
            for (walk, engine, packets) in walks {
                group.throughput(Throughput::Elements(packets.len() as u64));
                let mut engine = Some(engine);
                group.bench_function(format!("{name}/{walk}"), |b| {
                    b.iter_batched_ref(
                        || (),
                        |_| run(engine.as_mut().expect("engine"), packets),
                        BatchSize::SmallInput,
                    )
                });
            }
        }
    }
    group.finish();
}

fn run(e: &mut Engine, packets: &[Packet]) {
    for p in packets {
        criterion::black_box(e.decide(p));
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
