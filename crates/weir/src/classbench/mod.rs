//! ClassBench commands: `weir import classbench`, `weir classbench`,
//! `weir gen-rules`. The formats and the mapping live in `weir-classbench`;
//! this is glue: read, compile, time the decide loop (`weir-bench`), report
//! (`weir_classbench::report`).

mod args;

use crate::outputs::{self, Output};
use crate::setup::read_text;
use crate::Failure;
pub use args::{ClassbenchArgs, GenRulesArgs, ImportArgs, ImportFormat};
use std::path::Path;
use std::time::Instant;
use weir_bench::bench::timed_passes;
use weir_classbench::gen;
use weir_classbench::report::{self, ExpectedCheck, Report};
use weir_classbench::to_weir::{import_text, Compiled};
use weir_classbench::{parse_filters, parse_trace, Filter, Header};
use weir_engine::Engine;
use weir_io::output::Endpoint;
use weir_rules::Names;

fn read_filters(path: &Path) -> Result<Vec<Filter>, Failure> {
    let text = read_text(path)?;
    parse_filters(&text).map_err(|e| Failure::Rules(format!("{}:{e}", path.display())))
}

fn read_trace(path: &Path) -> Result<Vec<Header>, Failure> {
    let text = read_text(path)?;
    parse_trace(&text).map_err(|e| Failure::Rules(format!("{}:{e}", path.display())))
}

pub fn import(args: &ImportArgs) -> Result<(), Failure> {
    match &args.format {
        ImportFormat::Classbench { file } => {
            let filters = read_filters(file)?;
            outputs::print(&import_text(&filters, &file.display().to_string()))
        }
    }
}

pub fn gen_rules(args: &GenRulesArgs) -> Result<(), Failure> {
    let mut outs = vec![Endpoint::new("-o", &args.output)];
    outs.extend(args.trace.as_deref().map(|p| Endpoint::new("--trace", p)));
    outputs::refuse_clashes(&[], &outs)?;
    let filters = gen::filters(args.like.into(), args.count as usize, args.seed);
    let set = outputs::written(&args.output, &gen::write_filters(&filters))?;
    let trace = match &args.trace {
        Some(path) => {
            let seed = gen::trace_seed(args.seed);
            let headers = gen::trace(&filters, args.trace_n as usize, seed);
            Some(outputs::written(path, &gen::write_trace(&headers))?)
        }
        None => None,
    };
    // Both files appear, or neither.
    set.commit()?;
    Ok(trace.map_or(Ok(()), Output::commit)?)
}

pub fn classbench(args: &ClassbenchArgs) -> Result<(), Failure> {
    let (rules, trace) = (&args.rules, &args.trace);
    let ins = [
        Endpoint::new("the filter set", rules),
        Endpoint::new("the trace", trace),
    ];
    outputs::refuse_clashes(&ins, &outputs::given(&[("--verdicts", &args.verdicts)]))?;
    let filters = read_filters(rules)?;
    let headers = read_trace(trace)?;
    let fields = report::fields_for(&headers, args.match_flags)
        .map_err(|e| Failure::Rules(format!("{}:{e}", trace.display())))?;

    let build = Instant::now();
    let mut compiled = Compiled::with_fields(&filters, fields)
        .map_err(|e| Failure::Runtime(format!("{}: {e}", rules.display())))?;
    let filter_count = filters.len();
    // Neither the filters nor the rules' syntax tree is needed past the
    // compile: not held through the classifier's build (at 100k filters,
    // about 50 MB of the command's peak).
    drop(filters);
    let ruleset = std::mem::take(&mut compiled.ruleset);
    let program =
        weir_engine::compile(&ruleset, &Names::default(), &Default::default()).map_err(|d| {
            let first = d.first().map_or_else(String::new, |d| d.message.clone());
            let rules = rules.display();
            Failure::Runtime(format!("{rules}: the filters did not compile: {first}"))
        })?;
    drop(ruleset);
    let mut engine = Engine::builder(program)
        .linear(args.linear)
        .simd(args.simd)
        .build();
    let build_ms = build.elapsed().as_secs_f64() * 1e3;

    let packets: Vec<_> = headers.iter().map(|h| compiled.packet(h)).collect();
    // Untimed first pass: the answers.
    let answers: Vec<u32> = packets
        .iter()
        .map(|p| compiled.filter_number(engine.decide(p).rule))
        .collect();
    let per_packet = timed_passes(&mut engine, &packets, args.iter);
    let median = weir_stats::median(&per_packet).unwrap_or(0.0);
    if let Some(path) = &args.verdicts {
        outputs::written(path, &report::verdicts_text(&answers))?.commit()?;
    }
    let report = Report {
        rules: rules.display().to_string(),
        trace: trace.display().to_string(),
        filters: filter_count,
        headers: headers.len(),
        fields: fields.name(),
        encoding: compiled.encoding.name(),
        classified: engine.classified(),
        simd: engine.simd().name(),
        build_ms,
        classifier_bytes: engine.classifier_memory(),
        iterations: args.iter,
        ns_per_packet: median,
        packets_per_second: if median > 0.0 { 1e9 / median } else { 0.0 },
        min_ns_per_packet: per_packet[0],
        max_ns_per_packet: per_packet[per_packet.len() - 1],
        // Every pass decides the same packets: the mean of the passes'
        // ns/packet is their total time over their total packets.
        mean_ns_per_packet: per_packet.iter().sum::<f64>() / per_packet.len() as f64,
        matched: answers.iter().filter(|&&a| a != 0).count() as u64,
        expected: ExpectedCheck::of(&headers, &answers, filter_count),
    };
    outputs::print(&report.render(args.json)?)
}
