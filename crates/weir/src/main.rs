//! weir: the command-line front end. Thin glue over the library crates.

mod bench;
mod capture;
mod check_stats;
mod classbench;
mod cli;
mod counting;
mod demo;
mod explain;
mod gen;
mod inline;
mod ppp;
mod probe;
mod replay;
mod report;
mod setup;

use clap::Parser;
use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Why a command failed, which decides the exit code.
#[derive(Debug)]
pub enum Failure {
    /// Bad flags or unreadable ruleset file: exit 2.
    Usage(String),
    /// Ruleset errors, already rendered with carets: exit 2.
    Rules(String),
    /// Corrupt capture, I/O error: exit 1.
    Runtime(String),
    /// The reader of our output went away: quiet exit 0, as ripgrep does.
    BrokenPipe,
}

impl Failure {
    pub fn from_io(what: &str, e: std::io::Error) -> Failure {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            Failure::BrokenPipe
        } else {
            Failure::Runtime(format!("{what}: {e}"))
        }
    }
}

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    let result = match &cli.command {
        cli::Command::Demo(a) => demo::demo(a),
        cli::Command::Check(a) => check(a),
        cli::Command::Run(a) => replay::run(a),
        cli::Command::Explain(a) => explain::explain(a),
        cli::Command::Gen(a) => gen::gen(a),
        cli::Command::Bench(a) => bench::bench(a),
        cli::Command::Calibrate(a) => bench::calibrate(a),
        cli::Command::Probe(a) => probe::probe(a),
        cli::Command::Import(a) => classbench::import(a),
        cli::Command::Classbench(a) => classbench::classbench(a),
        cli::Command::GenRules(a) => classbench::gen_rules(a),
        cli::Command::Capture(a) => capture::capture(a),
        cli::Command::Sockbench(a) => capture::sockbench(a),
        cli::Command::Inline(a) => inline::run(a),
    };
    match result {
        Ok(()) | Err(Failure::BrokenPipe) => ExitCode::SUCCESS,
        Err(Failure::Usage(msg)) => {
            eprintln!("weir: {msg}");
            ExitCode::from(2)
        }
        Err(Failure::Rules(msg)) => {
            eprintln!("{msg}");
            ExitCode::from(2)
        }
        Err(Failure::Runtime(msg)) => {
            eprintln!("weir: {msg}");
            ExitCode::from(1)
        }
    }
}

fn check(args: &cli::CheckArgs) -> Result<(), Failure> {
    let names = weir_rules::Names::system();
    let opts = weir_engine::CompileOptions {
        tables: setup::load_tables(&args.tables)?,
        ..Default::default()
    };
    for (label, program) in ppp::programs_to_check(&args.rules, &args.ppp, &names, &opts)? {
        check_one(args, &label, program)?;
    }
    Ok(())
}

fn check_one(
    args: &cli::CheckArgs,
    label: &str,
    program: weir_engine::Program,
) -> Result<(), Failure> {
    if args.print {
        if label != args.rules.display().to_string() {
            // A ppp file's sets, one after another.
            println!("# {label}");
        } else if let Ok(rs) = weir_rules::parse_with(
            &setup::read_text(&args.rules)?,
            &weir_rules::Names::system(),
        ) {
            // Settings and `table ... add` lines first, as written.
            let header = weir_rules::Ruleset {
                rules: Vec::new(),
                ..rs
            };
            print!("{}", weir_rules::print_ruleset(&header));
        }
        let (default, rules) = program
            .rules
            .split_last()
            .expect("a program ends with rule 65535");
        for r in rules {
            println!("{:05} {}", r.number, r.text);
        }
        // The default rule is implicit: a comment, so the output reads back.
        println!("# {:05} {} (implicit)", default.number, default.text);
    } else if args.stats {
        check_stats::print(&args.rules, program);
    } else {
        let (n, insns) = (program.rules.len() - 1, program.insns.len());
        let engine = weir_engine::Engine::new(program);
        let walk = if engine.classified() {
            format!(
                "classifier {} KiB",
                engine.classifier_memory().div_ceil(1024)
            )
        } else {
            "linear walk".to_owned()
        };
        eprintln!("{label}: {n} rules, {insns} micro-instructions, {walk}, ok");
    }
    Ok(())
}

/// A progress bar for long replays, only on a terminal and only after a
/// second has passed (short runs stay quiet).
pub struct Progress {
    bar: Option<indicatif::ProgressBar>,
    enabled: bool,
    total: u64,
    start: Instant,
}

impl Progress {
    pub fn for_input(path: &Path) -> Progress {
        let total = if path.as_os_str() == "-" {
            0
        } else {
            std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
        };
        Progress::new(total)
    }

    pub fn new(total: u64) -> Progress {
        Progress {
            bar: None,
            enabled: std::io::stderr().is_terminal(),
            total,
            start: Instant::now(),
        }
    }

    pub fn update(&mut self, pos: u64) {
        if !self.enabled || self.start.elapsed() < Duration::from_secs(1) {
            return;
        }
        let total = self.total;
        let bar = self.bar.get_or_insert_with(|| {
            let bar = indicatif::ProgressBar::new(total);
            let style = if total > 0 {
                "{elapsed_precise} [{bar:40}] {bytes}/{total_bytes} ({bytes_per_sec})"
            } else {
                "{elapsed_precise} {bytes} ({bytes_per_sec})"
            };
            if let Ok(s) = indicatif::ProgressStyle::with_template(style) {
                bar.set_style(s.progress_chars("=> "));
            }
            bar
        });
        bar.set_position(pos);
    }

    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}
