//! Evaluation cost per rule, and the log path.
//!
//! `cargo bench -p weir-engine --bench rules`:
//! - `per_rule/k`: 100k generated packets (seed 7) through k rules that
//!   every IP packet fails at its one instruction (a source address no
//!   generated host uses), then the default rule; the slope over k is the
//!   cost of one rule header plus one address test. Criterion's
//!   throughput is packets/s; divide the time difference by k.
//! - `log/*`: the same packets through one matching rule, without `log`,
//!   with `log` writing ipfw text lines through the logger's buffer into
//!   `io::sink()` (formatting paid on every packet, no system call), and
//!   with `log logamount 1` (the limit reached: the per-packet cost of a
//!   log rule that no longer writes).
//!
//! State lookups have their own bench (`--bench state`), table lookups
//! theirs in weir-table (`cargo bench -p weir-table --bench lookup`).

mod common;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use weir_engine::{load, CompileOptions, Engine, LogFormat, Logger, WalkKind};
use weir_rules::Names;
use weir_wire::Packet;

const PACKETS: u64 = 100_000;

fn engine(rules: &str, log: bool) -> Engine {
    let names = Names::default();
    let prog = load(rules, &names, &CompileOptions::default()).expect("ruleset compiles");
    // The per-rule slope is the linear walk's (the classifier would prune
    // these rules, which no packet can match).
    let mut e = Engine::builder(prog).walk(WalkKind::Linear).build();
    if log {
        let logger = Logger::new(
            Box::new(std::io::sink()),
            LogFormat::Text,
            &names,
            &e.program().rules,
        );
        e.set_logger(logger);
    }
    e
}

/// k rules, each failing every packet at its one address test.
fn failing_rules(k: usize) -> String {
    (0..k)
        .map(|i| {
            format!(
                "{} count ip from 203.0.{}.{} to any\n",
                100 + i,
                i / 250,
                1 + i % 250
            )
        })
        .collect()
}

fn run_all(e: &mut Engine, packets: &[Packet]) {
    for p in packets {
        criterion::black_box(e.decide(p));
    }
}

fn per_rule(c: &mut Criterion) {
    let packets = common::packets(PACKETS);
    let mut group = c.benchmark_group("per_rule");
    group.throughput(Throughput::Elements(PACKETS));
    group.sample_size(10);
    for k in [1usize, 8, 32, 128] {
        let rules = failing_rules(k);
        group.bench_function(format!("k={k}"), |b| {
            b.iter_batched_ref(
                || engine(&rules, false),
                |e| run_all(e, &packets),
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

fn log_path(c: &mut Criterion) {
    let packets = common::packets(PACKETS);
    let mut group = c.benchmark_group("log");
    group.throughput(Throughput::Elements(PACKETS));
    group.sample_size(10);
    for (name, rules, log) in [
        ("no-log", "100 allow ip from any to any\n", false),
        (
            "log-every-packet",
            "100 allow log ip from any to any\n",
            true,
        ),
        (
            "log-limit-reached",
            "100 allow log logamount 1 ip from any to any\n",
            true,
        ),
    ] {
        group.bench_function(name, |b| {
            b.iter_batched_ref(
                || engine(rules, log),
                |e| run_all(e, &packets),
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, per_rule, log_path);
criterion_main!(benches);
