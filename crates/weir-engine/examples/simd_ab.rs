//! The SIMD walks against each other in one process, on a ClassBench
//! filter set and trace (`weir gen-rules --trace`): one engine per walk
//! (each this CPU runs, and `off`), timed passes of `decide_batch`
//! alternating between them, so that every walk sees the same machine
//! and the load of a shared host moves them all alike. Prints each walk's
//! median and best ns a packet, and checks that all give the same answers.
//! With `one`, packets are decided one by one (`decide`, as `weir bench`
//! does), where `auto` leaves a packet's walks to the scalar rounds and a
//! walk named walks it in lanes.
//!
//! `target/release/examples/simd_ab RULES TRACE [PASSES] [one]`

use std::time::Instant;
use weir_classbench::to_weir::Compiled;
use weir_classbench::{parse_filters, parse_trace};
use weir_engine::{Engine, Simd};
use weir_rules::Names;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let read = |i: usize| std::fs::read_to_string(&args[i]).expect("readable file");
    let filters = parse_filters(&read(1)).expect("a ClassBench filter set");
    let headers = parse_trace(&read(2)).expect("a ClassBench trace");
    let passes: usize = args.get(3).map_or(21, |p| p.parse().expect("passes"));
    let compiled = Compiled::with_fields(&filters, Default::default()).expect("filters");
    let program = weir_engine::compile(&compiled.ruleset, &Names::default(), &Default::default())
        .expect("filters compile");
    let packets: Vec<_> = headers.iter().map(|h| compiled.packet(h)).collect();
    let one_by_one = args.get(4).is_some_and(|a| a == "one");
    let walks: Vec<Simd> = [Simd::Auto]
        .into_iter()
        .chain(Simd::here())
        .chain([Simd::Off])
        .collect();
    let mut engines: Vec<Engine> = walks
        .iter()
        .map(|&s| Engine::builder(program.clone()).simd(s).build())
        .collect();
    let mut times = vec![Vec::new(); walks.len()];
    let mut answers = vec![Vec::new(); walks.len()];
    let mut out = Vec::with_capacity(256);
    for pass in 0..passes {
        for (w, e) in engines.iter_mut().enumerate() {
            let start = Instant::now();
            for chunk in packets.chunks(256) {
                if one_by_one {
                    out.clear();
                    out.extend(chunk.iter().map(|p| e.decide(std::hint::black_box(p))));
                } else {
                    e.decide_batch(std::hint::black_box(chunk), &mut out);
                }
                if pass == 0 {
                    answers[w].extend(out.iter().map(|d| d.rule));
                }
            }
            times[w].push(start.elapsed().as_nanos() as f64 / packets.len() as f64);
        }
    }
    for (w, simd) in walks.iter().enumerate() {
        assert!(answers[w] == answers[0], "{simd:?} answers differ");
        let t = &mut times[w];
        t.sort_by(f64::total_cmp);
        println!(
            "{:7} median {:7.1} ns  best {:7.1} ns",
            simd.name(),
            t[t.len() / 2],
            t[0]
        );
    }
}
