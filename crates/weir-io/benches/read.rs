//! Reading a synthetic 100k-packet pcap from memory, and copying it through
//! the mirror writer: the file-to-file replay path without the engine.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use weir_io::{CaptureReader, CaptureWriter, PcapWriter};
use weir_wire::LinkType;

/// 100k packets with a realistic size mix (many small, some full-size),
/// from a fixed LCG so runs are comparable.
fn synthetic_pcap(packets: u32) -> Vec<u8> {
    let mut w = PcapWriter::new(Vec::new(), LinkType(1), 262_144, false).unwrap();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let frame = vec![0x5a; 1514];
    for i in 0..packets {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        let len = match seed >> 62 {
            0 | 1 => 60 + (seed >> 40) as usize % 40,
            2 => 100 + (seed >> 40) as usize % 500,
            _ => 1514,
        };
        let ts = 1_700_000_000_000_000_000 + u64::from(i) * 10_000;
        w.write_frame(ts, len as u32, &frame[..len]).unwrap();
    }
    w.into_inner().unwrap()
}

fn bench_read(c: &mut Criterion) {
    let file = synthetic_pcap(100_000);
    let mut g = c.benchmark_group("pcap_100k");
    g.throughput(Throughput::Bytes(file.len() as u64));
    g.bench_function("read", |b| {
        b.iter(|| {
            let mut r = CaptureReader::new(black_box(&file[..])).unwrap();
            let mut bytes = 0usize;
            while let Some(f) = r.next_frame().unwrap() {
                bytes += f.data.len();
            }
            bytes
        })
    });
    let mut out = Vec::with_capacity(file.len());
    g.bench_function("read_mirror_write", |b| {
        b.iter(|| {
            out.clear();
            let mut r = CaptureReader::new(black_box(&file[..])).unwrap();
            let mut w = CaptureWriter::mirror(&mut out, r.format(), r.interfaces()).unwrap();
            while let Some((f, ifaces)) = r.next_with_interfaces().unwrap() {
                w.write(&f, ifaces, None).unwrap();
            }
            w.flush().unwrap();
        })
    });
    g.finish();
}

criterion_group!(benches, bench_read);
criterion_main!(benches);
