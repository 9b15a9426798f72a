//! The classifier on large generated rulesets.
//!
//! `cargo bench -p weir-engine --bench classify`: `weir_classbench::gen`
//! rulesets (`common/rulegen.rs`, seed 1: what `weir gen-rules --seed 1`
//! writes, imported) of 1k, 10k and 100k rules of each kind (acl, fw, ipc),
//! and random sets of 10k and 100k rules (`rulegen::random`, seed 1: more
//! than the automata can hold at 100k), each with its trace of headers
//! drawn from the rules (seed 2), through the default walk (bitsets up to
//! 1024 rules, tries above) one packet at a time, the tries also in
//! batches of 64 (`decide_batch`, as the pipeline decides, in each SIMD
//! walk the CPU has and in scalar rounds) and, at 1k and 10k rules and on the random
//! 100k set, the linear walk. Criterion reports packets/s; the
//! build time, classifier memory and average candidate count are printed
//! first. `WEIR_BENCH_FILTER=acl-10k` builds only the sets whose name
//! contains it (criterion's own filter still builds them all).

mod common;

use common::rulegen::{self, Kind};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use std::time::Instant;
use weir_engine::{load, CompileOptions, Engine, Simd, WalkKind};
use weir_rules::Names;
use weir_wire::Packet;

const PACKETS: usize = 100_000;
/// The linear walk is slow at 10k rules: fewer packets (same trace prefix).
const LINEAR_PACKETS: usize = 5_000;

fn bench(c: &mut Criterion) {
    let only = std::env::var("WEIR_BENCH_FILTER").unwrap_or_default();
    let mut group = c.benchmark_group("classify");
    group.sample_size(10);
    // (name, kind or None for the random set, rules)
    let mut sets: Vec<(String, Option<Kind>, usize)> = Vec::new();
    for n in [1_000usize, 10_000, 100_000] {
        for kind in Kind::ALL {
            sets.push((format!("{}-{}k", kind.name(), n / 1000), Some(kind), n));
        }
    }
    for n in [10_000usize, 100_000] {
        sets.push((format!("random-{}k", n / 1000), None, n));
    }
    for (name, kind, n) in sets {
        if !name.contains(&only) {
            continue;
        }
        let rs = match kind {
            Some(kind) => rulegen::ruleset(kind, n, 1, false),
            None => rulegen::random(n, 1, false),
        };
        let trace = rulegen::trace(&rs, PACKETS, 2);
        let prog = load(&rs.text, &Names::default(), &CompileOptions::default())
            .expect("generated rules compile");
        let start = Instant::now();
        let mut e = Engine::new(prog.clone());
        let build = start.elapsed();
        let cands: usize = trace.iter().map(|p| e.candidate_count(p)).sum();
        eprintln!(
            "{name}: {:?} built in {:.1} ms, {:.1} MiB, {:?}, {:.1} candidates/packet",
            e.walk_kind(),
            build.as_secs_f64() * 1e3,
            e.classifier_memory() as f64 / (1 << 20) as f64,
            e.classifier_parts(),
            cands as f64 / trace.len() as f64
        );
        let batched = |simd: Simd| {
            let b = Engine::builder(prog.clone()).simd(simd).interleave_always();
            b.build()
        };
        let trie = matches!(e.walk_kind(), WalkKind::Trie);
        let mut walks = vec![(Run::OneByOne, "classified".to_string(), e, &trace[..])];
        // The tries decide a capture's packets in batches (`decide_batch`,
        // as the pipeline gives them): in each SIMD walk this CPU has, and
        // in scalar rounds.
        if trie {
            for simd in Simd::here().into_iter().chain([Simd::Off]) {
                let walk = format!("batched-{}", simd.name());
                walks.push((Run::Batched, walk, batched(simd), &trace[..]));
            }
        }
        // The linear walk is slow on large sets: fewer packets (the same
        // trace's prefix), none past 10k rules but on the random set.
        let linear = match (n, kind) {
            (..=10_000, _) => LINEAR_PACKETS,
            (_, None) => LINEAR_PACKETS / 10,
            _ => 0,
        };
        if linear > 0 {
            let e = Engine::builder(prog).walk(WalkKind::Linear).build();
            walks.push((Run::OneByOne, "linear".to_string(), e, &trace[..linear]));
        }
        for (how, walk, engine, packets) in walks {
            group.throughput(Throughput::Elements(packets.len() as u64));
            let mut engine = Some(engine);
            group.bench_function(format!("{name}/{walk}"), |b| {
                b.iter_batched_ref(
                    || (),
                    |_| run(engine.as_mut().expect("engine"), packets, how),
                    BatchSize::SmallInput,
                )
            });
        }
    }
    group.finish();
}

#[derive(Clone, Copy)]
enum Run {
    OneByOne,
    Batched,
}

fn run(e: &mut Engine, packets: &[Packet], how: Run) {
    match how {
        Run::OneByOne => {
            for p in packets {
                criterion::black_box(e.decide(p));
            }
        }
        Run::Batched => {
            let mut out = Vec::with_capacity(64);
            for chunk in packets.chunks(64) {
                e.decide_batch(chunk, &mut out);
                criterion::black_box(&out);
            }
        }
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
