//! Decode cost of typical frames: `cargo bench -p weir-wire --bench decode`.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use weir_wire::{decode, decode_with, Fields, LinkType};

/// Ethernet / IPv4 / TCP SYN, 54 bytes.
const ETH_V4_TCP: [u8; 54] = [
    0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0x08, 0x00, // eth
    0x45, 0x00, 0x00, 0x28, 0x12, 0x34, 0x40, 0x00, 0x40, 0x06, 0x00, 0x00, // ip
    10, 0, 0, 1, 10, 0, 0, 2, //
    0x04, 0xd2, 0x00, 0x16, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02, 0xff, 0xff, 0, 0, 0, 0, // tcp
];

/// Ethernet / 802.1Q / IPv6 / UDP (DNS), 70 bytes + 8 payload.
const VLAN_V6_UDP: [u8; 74] = [
    0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0x81, 0x00, // eth
    0x00, 0x64, 0x86, 0xdd, // vlan 100
    0x60, 0x00, 0x00, 0x00, 0x00, 0x10, 0x11, 0x40, // ipv6, payload 16, udp
    0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, //
    0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, //
    0xc3, 0x50, 0x00, 0x35, 0x00, 0x10, 0x00, 0x00, // udp
    1, 2, 3, 4, 5, 6, 7, 8,
];

fn bench_decode(c: &mut Criterion) {
    let mut group = c.benchmark_group("decode");
    group.throughput(Throughput::Elements(1));
    group.bench_function("ethernet-ipv4-tcp", |b| {
        b.iter(|| decode(LinkType::ETHERNET, black_box(&ETH_V4_TCP), 60))
    });
    group.bench_function("vlan-ipv6-udp", |b| {
        b.iter(|| decode(LinkType::ETHERNET, black_box(&VLAN_V6_UDP), 74))
    });
    // The same frames with only the always-decoded fields, as for a
    // ruleset that reads no optional field (most do not).
    group.bench_function("ethernet-ipv4-tcp/none", |b| {
        b.iter(|| decode_with(LinkType::ETHERNET, black_box(&ETH_V4_TCP), 60, Fields::NONE))
    });
    group.bench_function("vlan-ipv6-udp/none", |b| {
        b.iter(|| {
            decode_with(
                LinkType::ETHERNET,
                black_box(&VLAN_V6_UDP),
                74,
                Fields::NONE,
            )
        })
    });
    group.finish();
}

criterion_group!(benches, bench_decode);
criterion_main!(benches);
