//! `weir demo`: the bundled ruleset over a generated trace, in memory.

use crate::cli::DemoArgs;
use crate::outputs;
use crate::Failure;
use std::time::Instant;
use weir_engine::{Engine, LogFormat, Logger};
use weir_gen::{GenConfig, Generator};
use weir_pipeline::report::{self, Report, Summary};
use weir_rules::Names;
use weir_wire::{decode, Direction, LinkType};

/// The bundled ruleset (crates/weir/rules/demo.rules in the repository).
pub const DEMO_RULES: &str = include_str!("../rules/demo.rules");

pub fn demo(args: &DemoArgs) -> Result<(), Failure> {
    let names = Names::system();
    let source = weir_rules::Source::new(DEMO_RULES.as_bytes());
    let program = weir_load::compile_ipfw(
        "crates/weir/rules/demo.rules",
        &source,
        &names,
        &Default::default(),
    )?;
    let mut engine = Engine::builder(program)
        .dispatch(args.dispatch.into())
        .build();
    // Log lines are collected and shown after the table, not interleaved.
    let log_lines = SharedBuf::default();
    engine.set_logger(Logger::new(
        Box::new(log_lines.clone()),
        LogFormat::Text,
        &names,
        &engine.program().rules,
    ));
    engine.set_interfaces(&[Some("eth0")]);
    let mut generator = Generator::new(GenConfig {
        seed: args.seed,
        count: args.count,
        ..GenConfig::default()
    });
    let start = Instant::now();
    while let Some(f) = generator.next_frame() {
        let mut p = decode(LinkType::ETHERNET, f.data, f.data.len() as u32);
        p.direction = Direction::In;
        engine.decide(&p);
    }
    let elapsed = start.elapsed();
    if let Some(l) = engine.logger_mut() {
        let _ = l.flush();
    }
    let summary = Summary::of(&engine);
    if args.json {
        return outputs::print(&Report::of(&engine, &summary).to_line());
    }
    let mut text = format!(
        "weir demo: crates/weir/rules/demo.rules over {} generated packets (seed {}), dispatch {:?}\n\n",
        args.count, args.seed, engine.dispatch()
    );
    text += &report::counters_table(&engine);
    text += &format!("\n{}\n", summary.line());
    text += &format!(
        "generated, decoded and decided in {:.1} ms (trace generation dominates this time)\n",
        elapsed.as_secs_f64() * 1e3
    );
    let unmatched = report::unmatched(&engine);
    if !unmatched.is_empty() {
        text += &format!("\nrules that matched nothing:\n{unmatched}\n");
    }
    let log_text = log_lines.take();
    if !log_text.is_empty() {
        text += &format!("log lines (rules with `log`, limited by logamount):\n{log_text}\n");
    }
    text += "next: weir gen -n 100000 -o trace.pcap && weir run crates/weir/rules/demo.rules -r trace.pcap --counters\n";
    outputs::print(&text)
}

/// A `Write` target the demo can read back after the run.
#[derive(Clone, Default)]
struct SharedBuf(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl SharedBuf {
    fn take(&self) -> String {
        let bytes = std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()));
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

impl std::io::Write for SharedBuf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
