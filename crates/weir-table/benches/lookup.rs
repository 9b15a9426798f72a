//! Load and lookup cost of 1M-prefix tables, against the naive peer (one
//! hash map per prefix length, probed longest first) in the same run:
//! `cargo bench -p weir-table --bench lookup`.
//!
//! IPv4: 1M distinct prefixes with a BGP-like length mix (about 60% /24,
//! 30% /16–/23, the rest /8–/15 and /25–/32). IPv6: 1M distinct prefixes in
//! 2000::/3, mostly /32–/48. Lookups run over 4,096 addresses per
//! iteration, either uniformly random or inside a random table prefix.
//! The memory of each structure is printed once.

use std::hint::black_box;
use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use weir_table::naive::PerLengthHash;
use weir_table::{parse_table_file, Builder, Entry, Prefix, Table};

const PREFIXES: usize = 1_000_000;
const BATCH: usize = 4096;

/// splitmix64: a fixed-seed generator, so every run builds the same tables.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn u128(&mut self) -> u128 {
        ((self.next() as u128) << 64) | self.next() as u128
    }
}

fn v4_len(rng: &mut Rng) -> u8 {
    match rng.below(100) {
        0..=59 => 24,
        60..=74 => 22 + rng.below(2) as u8,
        75..=89 => 16 + rng.below(6) as u8,
        90..=96 => 8 + rng.below(8) as u8,
        _ => 25 + rng.below(8) as u8,
    }
}

fn v6_len(rng: &mut Rng) -> u8 {
    match rng.below(100) {
        0..=44 => 48,
        45..=54 => 32,
        55..=84 => 33 + rng.below(15) as u8,
        85..=94 => 49 + rng.below(16) as u8,
        _ => 65 + rng.below(64) as u8,
    }
}

/// `n` distinct prefixes; values 0..=999.
fn entries(rng: &mut Rng, n: usize, v4: bool) -> Vec<Entry> {
    let mut builder = Builder::new();
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let prefix = if v4 {
            // 1.0.0.0 – 223.255.255.255, the unicast space BGP carries.
            let addr = 0x0100_0000 + rng.below(0xdf00_0000) as u32;
            Prefix::v4(addr, v4_len(rng)).unwrap()
        } else {
            let addr = (0x2000_u128 << 112) | (rng.u128() >> 3);
            Prefix::v6(addr, v6_len(rng)).unwrap()
        };
        let value = rng.below(1000) as u32;
        if builder.add(prefix, value).is_ok() {
            out.push(Entry { prefix, value });
        }
    }
    out
}

/// Addresses inside random table prefixes.
fn hits(rng: &mut Rng, entries: &[Entry]) -> Vec<u128> {
    (0..BATCH)
        .map(
            |_| match entries[rng.below(entries.len() as u64) as usize].prefix {
                Prefix::V4 { addr, len } => {
                    (addr | (rng.next() as u32 & u32::MAX.checked_shr(len.into()).unwrap_or(0)))
                        as u128
                }
                Prefix::V6 { addr, len } => {
                    addr | (rng.u128() & u128::MAX.checked_shr(len.into()).unwrap_or(0))
                }
            },
        )
        .collect()
}

fn build(entries: &[Entry]) -> Table {
    let mut b = Builder::new();
    for e in entries {
        b.add_entry(*e).unwrap();
    }
    b.build().unwrap()
}

fn text(entries: &[Entry]) -> String {
    entries.iter().map(|e| format!("{e}\n")).collect()
}

fn bench_family(c: &mut Criterion, v4: bool) {
    let family = if v4 { "ipv4" } else { "ipv6" };
    let mut rng = Rng(if v4 { 4 } else { 6 });
    let entries = entries(&mut rng, PREFIXES, v4);
    let t0 = Instant::now();
    let table = build(&entries);
    let built = t0.elapsed();
    let naive = PerLengthHash::new(&entries);
    let (r4, r6) = table.range_counts();
    eprintln!(
        "{family}: {} prefixes, table {:.1} MiB ({} ranges), built in {:.2} s",
        table.len(),
        table.memory_bytes() as f64 / (1 << 20) as f64,
        r4 + r6,
        built.as_secs_f64()
    );

    let random: Vec<u128> = (0..BATCH)
        .map(|_| {
            if v4 {
                rng.next() as u32 as u128
            } else {
                (0x2000_u128 << 112) | (rng.u128() >> 3)
            }
        })
        .collect();
    let hits = hits(&mut rng, &entries);
    for (what, addrs) in [("random", &random), ("hit", &hits)] {
        // Same answers from both, before timing either.
        for &a in addrs.iter() {
            let (t, n) = if v4 {
                (table.lookup_v4(a as u32), naive.lookup_v4(a as u32))
            } else {
                (table.lookup_v6(a), naive.lookup_v6(a))
            };
            assert_eq!(t, n);
        }
        let mut group = c.benchmark_group(format!("lookup-{family}-{what}"));
        group.throughput(Throughput::Elements(BATCH as u64));
        if v4 {
            let addrs: Vec<u32> = addrs.iter().map(|&a| a as u32).collect();
            group.bench_function("table", |b| {
                b.iter(|| {
                    addrs
                        .iter()
                        .map(|&a| table.lookup_v4(black_box(a)).unwrap_or(0) as u64)
                        .sum::<u64>()
                })
            });
            group.bench_function("naive", |b| {
                b.iter(|| {
                    addrs
                        .iter()
                        .map(|&a| naive.lookup_v4(black_box(a)).unwrap_or(0) as u64)
                        .sum::<u64>()
                })
            });
        } else {
            group.bench_function("table", |b| {
                b.iter(|| {
                    addrs
                        .iter()
                        .map(|&a| table.lookup_v6(black_box(a)).unwrap_or(0) as u64)
                        .sum::<u64>()
                })
            });
            group.bench_function("naive", |b| {
                b.iter(|| {
                    addrs
                        .iter()
                        .map(|&a| naive.lookup_v6(black_box(a)).unwrap_or(0) as u64)
                        .sum::<u64>()
                })
            });
        }
        group.finish();
    }

    let file = text(&entries);
    let mut group = c.benchmark_group(format!("load-{family}-1M"));
    group.sample_size(10);
    group.bench_function("parse-and-build", |b| {
        b.iter(|| {
            parse_table_file("bench", black_box(&file))
                .unwrap()
                .build()
                .unwrap()
                .len()
        })
    });
    group.bench_function("build", |b| b.iter(|| build(black_box(&entries)).len()));
    group.bench_function("naive-build", |b| {
        b.iter(|| PerLengthHash::new(black_box(&entries)))
    });
    group.finish();
}

fn bench_tables(c: &mut Criterion) {
    bench_family(c, true);
    bench_family(c, false);
}

criterion_group!(benches, bench_tables);
criterion_main!(benches);
